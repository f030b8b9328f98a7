//! The SQLite store's series in `/metrics`: failures by kind, the fold's duration, the
//! bytes not folded yet, the file's size on disk and the free space where it lives,
//! whether commits are acknowledged, and the games a restore set aside. The store's
//! writer keeps the counts ([`StoreCounters`]); sizes are read from the file system
//! at each scrape.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::StoreCounters;
use super::journal;

/// What the store's series are read from: its counts, its file, and what the restore
/// set aside.
#[derive(Debug)]
pub struct StoreSource {
    pub counters: Arc<StoreCounters>,
    /// The store's file (its home: the journal is named after it).
    pub path: PathBuf,
    pub games_set_aside: u64,
}

type KindLabel = [(&'static str, &'static str); 1];

/// The store's series, registered once; zero without a SQLite store.
#[derive(Debug)]
pub struct StoreMetrics {
    failures: Family<KindLabel, Counter>,
    unavailable: Gauge,
    fold_failing: Gauge,
    unfolded_bytes: Gauge,
    bytes: Gauge,
    free_bytes: Gauge,
    games_set_aside: Gauge,
    history_purged: Gauge,
    fold_seconds_registered: bool,
}

/// The failure kinds, each shown from the start.
const KINDS: [&str; 3] = ["commit", "fold", "generation"];

impl StoreMetrics {
    /// Registers the series in `registry` (the `wizard` prefix).
    pub fn register(registry: &mut Registry) -> StoreMetrics {
        let m = StoreMetrics {
            failures: Family::default(),
            unavailable: Gauge::default(),
            fold_failing: Gauge::default(),
            unfolded_bytes: Gauge::default(),
            bytes: Gauge::default(),
            free_bytes: Gauge::default(),
            games_set_aside: Gauge::default(),
            history_purged: Gauge::default(),
            fold_seconds_registered: false,
        };
        registry.register(
            "store_failures",
            "Store failures by kind: a commit the journal could not take (players wait), a fold into SQLite that failed (retried; players go on), a journal generation that could not be made",
            m.failures.clone(),
        );
        for kind in KINDS {
            drop(m.failures.get_or_create(&[("kind", kind)]));
        }
        for (name, help, gauge) in [
            (
                "store_unavailable",
                "1 while the store cannot commit: nothing new is acknowledged and games pause",
                &m.unavailable,
            ),
            (
                "store_fold_failing",
                "1 while the store's writer cannot fold the journal into SQLite (retrying)",
                &m.fold_failing,
            ),
            (
                "store_unfolded_bytes",
                "Journal bytes the store's writer took and has not folded into SQLite yet",
                &m.unfolded_bytes,
            ),
            (
                "store_bytes",
                "Bytes the store takes on disk: the SQLite file, its log and the journal",
                &m.bytes,
            ),
            (
                "store_free_bytes",
                "Bytes free for the server on the file system that holds the store",
                &m.free_bytes,
            ),
            (
                "store_games_set_aside",
                "Games the last restore could not replay and set aside (kept in the store)",
                &m.games_set_aside,
            ),
            (
                "store_history_purged",
                "Finished games the store deleted since the start, older than HISTORY_DAYS",
                &m.history_purged,
            ),
        ] {
            registry.register(name, help, gauge.clone());
        }
        m
    }

    /// Copies the store's figures in (`unavailable`: commits are not acknowledged now);
    /// `root`: the registry whose `wizard` prefix the fold's histogram joins once.
    pub fn update(&mut self, root: &mut Registry, source: Option<&StoreSource>, unavailable: bool) {
        let Some(source) = source else {
            return;
        };
        if !self.fold_seconds_registered {
            root.sub_registry_with_prefix("wizard").register(
                "store_fold_seconds",
                "Time the store's writer took to fold a turn's records into SQLite and sync them",
                source.counters.fold_seconds.clone(),
            );
            self.fold_seconds_registered = true;
        }
        let c = &source.counters;
        for (kind, count) in [
            ("commit", &c.commit_failures),
            ("fold", &c.fold_failures),
            ("generation", &c.generation_failures),
        ] {
            let counter = self.failures.get_or_create(&[("kind", kind)]);
            let value = count.load(Ordering::Relaxed);
            if value > counter.get() {
                counter.inc_by(value - counter.get());
            }
        }
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.unavailable.set(i64::from(unavailable));
        self.fold_failing
            .set(i64::from(c.fold_failing.load(Ordering::Relaxed)));
        self.unfolded_bytes
            .set(as_i64(c.unfolded_bytes.load(Ordering::Relaxed)));
        self.bytes.set(as_i64(bytes_on_disk(&source.path)));
        self.free_bytes.set(as_i64(free_bytes(&source.path)));
        self.games_set_aside.set(as_i64(source.games_set_aside));
        self.history_purged
            .set(as_i64(c.history_purged.load(Ordering::Relaxed)));
    }
}

/// The SQLite file, its log and the journal's generations, in bytes.
fn bytes_on_disk(path: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let journal: u64 = journal::generations(path)
        .map(|g| g.iter().map(|(_, p)| size(p)).sum())
        .unwrap_or(0);
    size(path) + size(Path::new(&wal)) + journal
}

/// Bytes an unprivileged process may still write where the store lives.
fn free_bytes(path: &Path) -> u64 {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    rustix::fs::statvfs(dir).map_or(0, |s| s.f_bavail.saturating_mul(s.f_frsize))
}
