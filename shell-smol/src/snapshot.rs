//! What `/health`, `/ready` and `/metrics` answer from: figures the core task copies
//! out of the [`Server`] after every batch, so that these routes never wait in the core
//! task's inbox behind game work.
//!
//! Publishing is O(1) per batch when nothing changed (two comparisons); when something
//! did, the counters are cloned (a few small maps) and the `/health` body is encoded
//! again only if a gauge changed. Readers take the current [`Snapshot`] (an `Arc`
//! clone under a mutex held for nanoseconds) and encode from it; `/metrics` renders
//! into the one Prometheus registry under its own mutex, which only scrapes contend for.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use wizard_core::Server;
use wizard_core::shell::readiness::{NotReady, readiness};
use wizard_core::vocabulary::stats::{Counters, Gauges};
use wizard_core::vocabulary::wire::encode_health;

use crate::metrics::{CoreHistograms, Metrics, ShellStats};

/// The core's figures after one batch.
#[derive(Debug)]
pub struct Snapshot {
    /// The `/health` body.
    pub health_json: Arc<str>,
    pub gauges: Gauges,
    pub counters: Counters,
    pub ready: Result<(), NotReady>,
}

impl Snapshot {
    /// The figures of `server` now.
    pub fn of(server: &Server) -> Snapshot {
        let gauges = server.gauges();
        Snapshot {
            health_json: encode_health(&server.health()).into(),
            ready: readiness(&gauges),
            gauges,
            counters: server.counters().clone(),
        }
    }
}

/// The cell the core task publishes into and the HTTP side reads.
#[derive(Debug)]
pub struct Published {
    current: Mutex<Arc<Snapshot>>,
    metrics: Mutex<Metrics>,
    /// Why the store does not acknowledge commits now (`/ready` says `store`), and
    /// whether it does not (read without the lock on every pass).
    store_unavailable: Mutex<Option<String>>,
    store_down: AtomicBool,
    /// The `/profiles/<id>` bodies, one per profile (at most `PROFILES_MAX`), and the
    /// `/leaderboard` body: rebuilt from the core's changes after a batch that changed
    /// a profile, read by the HTTP side without waiting for game work.
    profiles: Mutex<ProfilePages>,
}

/// What `/profiles/<id>` and `/leaderboard` answer.
#[derive(Debug, Default)]
struct ProfilePages {
    by_id: BTreeMap<String, Arc<str>>,
    leaderboard: Arc<str>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Both cells are replaced or rendered in one step: a poisoned lock is still sound.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Published {
    /// A cell holding `server`'s figures (the server is ready to serve at once), and
    /// the registry that `/metrics` renders, with the core task's histograms `core`.
    pub fn new(server: &Server, core: &CoreHistograms) -> Published {
        Published {
            current: Mutex::new(Arc::new(Snapshot::of(server))),
            metrics: Mutex::new(Metrics::new(core)),
            store_unavailable: Mutex::new(None),
            store_down: AtomicBool::new(false),
            profiles: Mutex::new(ProfilePages {
                by_id: BTreeMap::new(),
                leaderboard: server.leaderboard_json().into(),
            }),
        }
    }

    /// Brings the profile pages up to date with the profiles `server` changed since the
    /// last call (nothing to do, and no lock taken, when none did).
    pub fn publish_profiles(&self, server: &mut Server) {
        let changed = server.take_profile_changes();
        if changed.is_empty() {
            return;
        }
        let bodies: Vec<(String, Option<Arc<str>>)> = changed
            .into_iter()
            .map(|id| {
                let body = server.profile_json(&id).map(Arc::from);
                (id, body)
            })
            .collect();
        let leaderboard: Arc<str> = server.leaderboard_json().into();
        let mut pages = lock(&self.profiles);
        for (id, body) in bodies {
            match body {
                Some(body) => pages.by_id.insert(id, body),
                None => pages.by_id.remove(&id),
            };
        }
        pages.leaderboard = leaderboard;
    }

    /// The `/profiles/<id>` body, if there is such a profile.
    pub fn profile(&self, id: &str) -> Option<Arc<str>> {
        lock(&self.profiles).by_id.get(id).cloned()
    }

    /// The `/leaderboard` body.
    pub fn leaderboard(&self) -> Arc<str> {
        Arc::clone(&lock(&self.profiles).leaderboard)
    }

    /// Publishes why the store does not acknowledge commits now (`None`: it does).
    pub fn set_store_unavailable(&self, why: Option<&str>) {
        if why.is_none() && !self.store_down.load(Ordering::Relaxed) {
            return;
        }
        let mut current = lock(&self.store_unavailable);
        if current.as_deref() != why {
            *current = why.map(str::to_owned);
            self.store_down.store(why.is_some(), Ordering::Relaxed);
        }
    }

    /// Why the store does not acknowledge commits now, if it does not.
    pub fn store_unavailable(&self) -> Option<String> {
        if !self.store_down.load(Ordering::Relaxed) {
            return None;
        }
        lock(&self.store_unavailable).clone()
    }

    /// The latest snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        Arc::clone(&lock(&self.current))
    }

    /// Publishes `server`'s figures if they differ from the latest ones.
    pub fn publish(&self, server: &Server) {
        let last = self.load();
        let gauges = server.gauges();
        let counters = server.counters();
        let gauges_same = gauges == last.gauges;
        if gauges_same && *counters == last.counters {
            return;
        }
        let health_json = if gauges_same {
            Arc::clone(&last.health_json)
        } else {
            encode_health(&server.health()).into()
        };
        let next = Snapshot {
            health_json,
            ready: readiness(&gauges),
            gauges,
            counters: counters.clone(),
        };
        *lock(&self.current) = Arc::new(next);
    }

    /// The `/metrics` body from the latest snapshot and the shell's live counters.
    pub fn render_metrics(&self, shell: &ShellStats, tcp_open: usize) -> String {
        let snapshot = self.load();
        let store_unavailable = self.store_down.load(Ordering::Relaxed);
        lock(&self.metrics).render(
            &snapshot.counters,
            &snapshot.gauges,
            shell,
            tcp_open,
            store_unavailable,
        )
    }
}
