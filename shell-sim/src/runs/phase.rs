//! The run's phases: the per-second timeline (and arrivals running out of patience),
//! healing at the end of the fault phase (attacks, AI faults, stalls and background
//! work stop; scripted full-speed players slow to human pace; a prober asks for a new
//! lobby), and the final checks.

use wizard_core::Time;
use wizard_core::machine::overload::level::SampleClass;
use wizard_core::vocabulary::ids::ConnId;
use wizard_core::vocabulary::ids::LobbyId;
use wizard_core::vocabulary::load::LoadLevel;
use wizard_core::vocabulary::stats::{Counters, Counts, Tally};
use wizard_core::vocabulary::wire::{CloseCode, ErrorCode, LobbyStatus};

use crate::actors::client::Role;
use crate::actors::ctx::Ctx;
use crate::model::dist::{Dist, secs_to_us};
use crate::model::net::Ev;
use crate::runs::driver::Sim;
use crate::runs::report::{Report, Second};
use crate::runs::scenario::{Pace, Retry};

/// Whether an abuser's connection started `lobby`'s game.
fn started_by_abuser(
    check: &crate::checks::checker::Checker,
    net: &crate::model::net::Net,
    lobby: LobbyId,
) -> bool {
    check
        .started_by
        .get(&lobby)
        .and_then(|c| net.owner.get(c))
        .is_some_and(|o| matches!(o, crate::model::net::Owner::Attacker(_)))
}

fn delta(now: u64, before: u64) -> u64 {
    now.saturating_sub(before)
}

impl Sim {
    /// A timeline second ends.
    pub fn tick(&mut self, now: Time) {
        let server = &self.host.server;
        let c = server.counters().clone();
        let p = &self.prev_counters;
        let g = server.gauges();
        let second = Second {
            t_s: now.0 / 1_000_000,
            level: server.level().name(),
            lag_max_ms: g.last_sample.lag_us_max as f64 / 1e3,
            lag_p99_ms: g.last_sample.lag_us_p99 as f64 / 1e3,
            cpu: g.last_sample.cpu_share,
            throttled: g.last_sample.throttled_share,
            active_games: g.active_games,
            moves: delta(c.moves.total(), p.moves.total()),
            busy: delta(c.errors.get(ErrorCode::Busy), p.errors.get(ErrorCode::Busy)),
            rate_limited: delta(
                c.errors.get(ErrorCode::RateLimited),
                p.errors.get(ErrorCode::RateLimited),
            ),
            conn_refused: delta(c.connections_refused.total(), p.connections_refused.total()),
            closed_1008: delta(
                c.closes.get(CloseCode::MessageFlood),
                p.closes.get(CloseCode::MessageFlood),
            ),
            closed_1013: delta(
                c.closes.get(CloseCode::ConnectionLimit),
                p.closes.get(CloseCode::ConnectionLimit),
            ),
            lobbies_created: delta(c.lobbies_created, p.lobbies_created),
            connections: g.connections,
            ai_fallbacks: delta(c.fallbacks.total(), p.fallbacks.total()),
            breaker: g.breaker,
        };
        self.report.timeline.push(second);
        self.prev_counters = c;
        self.lose_patience(now);
        for (at, what) in self.host.door_violations.drain(..) {
            self.report.violation(at, what);
        }
        for (conn, o) in self.host.outboxes.iter() {
            if !o.within_caps() {
                self.report
                    .violation(now, format!("outbox of conn {conn} over its caps"));
            }
        }
        if let Some(ai) = &self.ai {
            let (n, cap) = ai.in_progress();
            if n > cap {
                self.report
                    .violation(now, format!("AI admission holds {n} > {cap}"));
            }
        }
    }

    /// An open-loop arrival whose game has not started `patience_s` after it arrived
    /// walks away, also when it was waiting silently: the shipped client sends nothing
    /// while `accepting_games` is false, so no refusal comes to end its wait.
    fn lose_patience(&mut self, now: Time) {
        let mut cx = Ctx {
            q: &mut self.q,
            net: &mut self.net,
            report: &mut self.report,
            tables: &mut self.tables,
        };
        for c in &mut self.clients {
            let waiting = c.role == Role::Solo
                && !c.done
                && !c.gone
                && !c.in_game
                && c.inflight.is_none()
                && c.lobby
                    .as_ref()
                    .is_none_or(|l| l.status == LobbyStatus::Waiting);
            if waiting && c.patience_us.is_some_and(|p| now.since_us(c.born) > p) {
                c.done = true;
                c.leave(&mut cx, now);
            }
        }
    }

    /// The fault phase ends.
    pub fn heal(&mut self, now: Time) {
        self.healed = true;
        let mut cx = Ctx {
            q: &mut self.q,
            net: &mut self.net,
            report: &mut self.report,
            tables: &mut self.tables,
        };
        for a in &mut self.attackers {
            a.stop(&mut cx, now);
        }
        if let Some(ai) = &mut self.ai {
            ai.heal(&mut cx, now);
        }
        for c in &mut self.clients {
            if c.pace == Pace::Full {
                c.pace = Pace::Human;
                c.think = Dist::Lognormal([800.0, 0.4]);
            }
            c.slow_read_bytes_per_s = None;
        }
        // Frames a slow reader still held are read at once now.
        let held: Vec<(ConnId, Vec<crate::host::outbox::Frame>)> = self
            .slow
            .iter_mut()
            .map(|(conn, s)| (*conn, s.frames.drain(..).collect()))
            .collect();
        self.slow.clear();
        for (conn, frames) in held {
            if !frames.is_empty() {
                self.q.push(now, Ev::Deliver { conn, frames });
            }
        }
        self.heal_snapshot = self.check.moves_per_lobby.clone();
        self.heal_snapshot
            .retain(|lobby, _| self.check.running.contains_key(lobby));
        let id = self.clients.len();
        let rng = crate::model::dist::fork(self.seed, 999);
        let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 250, 0, 1));
        let mut prober = crate::actors::client::Client::new(id, Role::Prober, ip, rng, now);
        prober.retry = Retry::Backoff;
        self.clients.push(prober);
        self.q.push(
            now.plus_us(1_000_000),
            Ev::ClientTimer {
                client: id,
                generation: 0,
            },
        );
    }

    /// The final checks and figures.
    pub fn finish(&mut self, now: Time) {
        let counters = self.host.server.counters().clone();
        for (at, what) in self.host.door_violations.drain(..) {
            self.report.violation(at, what);
        }
        self.check.games.sweep(&mut self.report, now, true);
        self.judge_restarted_games(now);
        if self.host.restarts > 0 {
            let c = &mut self.report.counters;
            c.insert("restarts".into(), self.host.restarts);
            c.insert("refused_while_down".into(), self.host.refused_while_down);
        }
        let r = &mut self.report;
        let seen = self.check.games.seen;
        r.counters.insert("views_checked".into(), seen.views);
        r.counters
            .insert("views_decoded_whole".into(), seen.views_whole);
        r.counters.insert("event_lists_checked".into(), seen.lists);
        r.counters.insert("oracle_resyncs".into(), seen.resyncs);
        r.counters
            .insert("chat_lines_checked".into(), seen.chat_lines);
        r.counters
            .insert("progress_wait_ms_max".into(), seen.wait_us / 1000);
        r.counters
            .insert("progress_bound_ms".into(), seen.wait_bound_us / 1000);
        let facts = [
            (seen.hidden_bid_views, "views_hidden_bids"),
            (seen.autoplayed, "autoplayed"),
            (seen.timed_waits, "progress_turn_timer"),
            (seen.resyncs, "oracle_resync"),
            (seen.spectator_views, "views_spectators"),
            (seen.lists_shared, "event_list_shared"),
            (seen.joined_midgame, "view_joined_midgame"),
            (seen.hand_views, "views_hands"),
            (seen.tricks_judged, "oracle_trick_judged"),
            (seen.rounds_scored, "oracle_round_scored"),
            (seen.games_ranked, "oracle_game_ranked"),
            (seen.chat_lines, "chat_checked"),
            (seen.chat_spread, "chat_spread"),
            (seen.many_spectators, "spectators_many"),
        ];
        for (n, fact) in facts {
            if n > 0 {
                r.cover(fact);
            }
        }
        // Every process's counters: the killed ones' and the one running now.
        fn put<E: Tally>(r: &mut Report, prefix: &str, counts: &Counts<E>) {
            for (e, n) in counts.iter().filter(|(_, n)| *n > 0) {
                *r.counters
                    .entry(format!("{prefix}_{}", e.name()))
                    .or_insert(0) += n;
            }
        }
        let processes: Vec<&Counters> = self.killed_counters.iter().chain([&counters]).collect();
        for c in &processes {
            put(r, "error", &c.errors);
            put(r, "close", &c.closes);
            put(r, "moves", &c.moves);
            put(r, "fallback", &c.fallbacks);
            put(r, "conn_refused", &c.connections_refused);
        }
        let sum = |f: fn(&Counters) -> u64| processes.iter().map(|c| f(c)).sum::<u64>();
        r.counters
            .insert("games_started".into(), sum(|c| c.games_started));
        r.counters
            .insert("games_finished".into(), sum(|c| c.games_finished));
        r.counters
            .insert("lobbies_created".into(), sum(|c| c.lobbies_created));
        r.counters
            .insert("breaker_opened".into(), sum(|c| c.breaker_opened));
        r.counters
            .insert("ai_requests".into(), sum(|c| c.ai_requests));
        r.counters
            .insert("inbox_len_max".into(), self.host.inbox_len_max as u64);
        r.counters
            .insert("outbox_overflows".into(), self.host.overflows);
        r.counters
            .insert("outbox_states_replaced".into(), self.host.states_replaced);
        r.counters
            .insert("cpu_usage_us".into(), self.host.cpu.stat_at(now).usage_us);
        r.counters
            .insert("probe_samples".into(), self.host.probe_samples);
        r.counters
            .insert("door_queue_max".into(), self.host.exec.door_len_max as u64);
        if self.host.exec.backlog_refused > 0 {
            r.counters.insert(
                "sockets_backlog_refused".into(),
                self.host.exec.backlog_refused,
            );
            r.cover("listen_backlog_full");
        }
        let shell = [
            (
                self.host.keepalive_timeouts,
                "keepalive_timeouts",
                "keepalive_timeout",
            ),
            (self.host.write_timeouts, "write_timeouts", "write_timeout"),
            (
                self.host.refused_after_exit,
                "refused_after_exit",
                "process_exited",
            ),
        ];
        for (n, counter, fact) in shell {
            if n > 0 {
                r.counters.insert(counter.into(), n);
                r.cover(fact);
            }
        }
        if let Some(t) = self.host.finished_at {
            r.counters.insert("finished_at_ms".into(), t.0 / 1000);
        }
        if self.host.store_commits > 0 {
            r.counters
                .insert("store_commits".into(), self.host.store_commits);
            r.counters
                .insert("store_records".into(), self.host.store_records);
        }
        if self.ai_embedded_decisions > 0 {
            r.counters
                .insert("ai_embedded_decisions".into(), self.ai_embedded_decisions);
            if let Some(ai) = &self.ai {
                // Decisions started by the primary agent (`search`), in per mille.
                let (search, heuristic) = ai.started;
                let share = search * 1000 / (search + heuristic).max(1);
                r.counters
                    .insert("ai_embedded_search_per_mille".into(), share);
            }
            r.cover("ai_embedded");
        }
        if self.host.states_replaced > 0 {
            r.cover("outbox_state_replaced");
        }
        if self.host.overflows > 0 {
            r.cover("outbox_overflow");
        }
        if counters.sessions_evicted > 0 {
            r.counters
                .insert("sessions_evicted".into(), counters.sessions_evicted);
            r.cover("session_evicted");
        }
        if counters.sessions_expired > 0 {
            r.counters
                .insert("sessions_expired".into(), counters.sessions_expired);
            r.cover("session_expired");
        }
        let expiry = &self.check.games.expiry;
        if expiry.walkers() > 0 {
            r.counters.insert("walkers".into(), expiry.walkers() as u64);
            r.counters
                .insert("walkers_expired_seen".into(), expiry.expired_seen);
        }
        if counters.resumed_past_cap > 0 {
            r.counters
                .insert("resumed_past_cap".into(), counters.resumed_past_cap);
            r.cover("resumed_past_cap");
        }
        if self.host.http_503 + self.host.tcp_dropped > 0 {
            r.counters.insert("http_503".into(), self.host.http_503);
            r.counters
                .insert("sockets_closed_at_once".into(), self.host.tcp_dropped);
            r.cover("socket_cap");
        }
        let door = [
            ("sockets_evicted", self.host.tcp_evicted, "socket_evicted"),
            (
                "first_byte_timeouts",
                self.host.first_byte_timeouts,
                "socket_first_byte_timeout",
            ),
            ("frame_floods", self.host.frame_floods, "frame_flood"),
        ];
        for (name, n, fact) in door {
            if n > 0 {
                r.counters.insert(name.into(), n);
                r.cover(fact);
            }
        }
        r.counters
            .insert("honest_sockets_refused".into(), self.host.honest_refused);
        r.counters
            .insert("sockets_open_max".into(), self.host.sockets_open_max as u64);
        if let Some(ai) = &self.ai {
            r.counters
                .insert("ai_degraded_queue".into(), ai.degraded_queue);
            r.counters
                .insert("ai_degraded_slow".into(), ai.degraded_slow);
            if ai.degraded_queue > 0 {
                r.cover("degraded_queue");
            }
            if ai.degraded_slow > 0 {
                r.cover("degraded_slow");
            }
        }
        for c in &self.clients {
            if let (Some((m, at)), Some(_)) = (c.accepted, c.conn)
                && now.since_us(at) > 5_000_000
            {
                r.violation(
                    now,
                    format!("client {}: accepted move {:?} never shown", c.id, m.action),
                );
            }
        }
        // Honest players of a running game only lose connections, so its lobby must not
        // disappear but when its last human seat is given up (`checker.rs` leaves those
        // out); an abuser may walk out of its own game.
        for (at, lobby) in &self.check.deleted_running {
            if !started_by_abuser(&self.check, &self.net, *lobby) {
                r.violation(*at, format!("lobby {lobby} deleted with its game running"));
            }
        }
        if self.scenario.liveness_s <= 0.0 {
            return;
        }
        let heal = self.scenario.duration_s;
        let within = self.scenario.heal_within_s;
        let due = heal + within;
        let normal_due = heal + self.scenario.normal_within_s;
        let level_at_due = r
            .timeline
            .iter()
            .find(|s| s.t_s as f64 >= normal_due)
            .map(|s| s.level);
        // `busy` is the level's answer to work that was admitted: games running at the
        // CPU share it names. After healing, the players refused during the fault may
        // all be admitted when it goes `normal`, and their games alone can hold it there
        // (swarm seed 406: the embedded AI on a tenth of a core). That is the promise
        // kept, not a stuck level, when every hot sample of the last `recover_samples`
        // before the due time is `busy` by CPU share alone: no lag, no throttling.
        let busy_from_games = level_at_due == Some(LoadLevel::Busy.name())
            && self.check.thresholds().is_some_and(|t| {
                let window_us = self.host.server.config().load_sample_interval_us
                    * u64::from(t.recover_samples.max(1));
                let due_us = secs_to_us(normal_due);
                let recent: Vec<_> = self
                    .check
                    .samples
                    .iter()
                    .filter(|(at, ..)| at.0 <= due_us && at.0 + window_us > due_us)
                    .collect();
                let hot = || recent.iter().filter(|(_, c, _)| *c != SampleClass::Normal);
                hot().next().is_some()
                    && hot().all(|(_, c, s)| {
                        *c == SampleClass::Busy
                            && s.cpu_share >= t.cpu_busy_share
                            && s.lag_us_p99 < t.lag_busy_us
                    })
            });
        if busy_from_games {
            r.cover("liveness_busy_from_games");
        } else if level_at_due.is_some_and(|l| l != LoadLevel::Normal.name()) {
            r.violation(
                now,
                format!(
                    "liveness: level {level_at_due:?} {} s after healing",
                    self.scenario.normal_within_s
                ),
            );
        }
        // A full game table (MAX_ACTIVE_GAMES running when the lobby was due) refuses
        // new lobbies by design.
        let cap = self.host.server.config().active_games_max as u64;
        let full = r
            .timeline
            .iter()
            .filter(|s| s.t_s as f64 >= heal && s.t_s as f64 <= due + 1.0)
            .any(|s| s.active_games >= cap);
        match r.prober_success_s {
            Some(t) if t <= due => {}
            _ if full => r.cover("liveness_game_cap_full"),
            other => r.violation(
                now,
                format!("liveness: no new lobby within {within} s (got {other:?})"),
            ),
        }
        let mut stalled = 0;
        for (lobby, moves) in &self.heal_snapshot {
            let after = self.check.moves_per_lobby.get(lobby).copied().unwrap_or(0);
            // A game an abuser started waits for its abuser, who is gone.
            let abuser = started_by_abuser(&self.check, &self.net, *lobby);
            if self.check.running.contains_key(lobby) && after <= *moves && !abuser {
                stalled += 1;
            }
        }
        r.games_stalled = stalled;
        if stalled > 0 {
            r.violation(
                now,
                format!("liveness: {stalled} running games made no move"),
            );
        }
    }
}
