//! A scenario's restarts seen from the world: the process is killed (`host/restart.rs`
//! says what survives), its peers see their connections end and come back with their
//! tokens, the checkers follow the restored process afresh, and at the end every game
//! that was running at a kill must have finished when the scenario asks for it
//! (`restart_games_finish`).

use std::collections::BTreeMap;

use wizard_core::Time;
use wizard_core::vocabulary::rng::Seed;
use wizard_core::vocabulary::wire::{self, LobbyStatus, ServerMessage};

use crate::actors::ctx::Ctx;
use crate::model::dist::secs_to_us;
use crate::model::net::Ev;
use crate::runs::driver::Sim;

/// The code of the lobby a `state` shows, its status and its game's id.
fn lobby_game(text: &str) -> Option<(String, LobbyStatus, Option<String>)> {
    let Ok(ServerMessage::State {
        lobby: Some(lobby),
        game,
        ..
    }) = wire::decode_server(text)
    else {
        return None;
    };
    Some((lobby.code, lobby.status, game.map(|g| g.id)))
}

impl Sim {
    /// Schedules the scenario's kills and restarts.
    pub(crate) fn schedule_restarts(&mut self) {
        if self.scenario.restarts.is_empty() {
            return;
        }
        self.host.keep_journal();
        for (index, r) in self.scenario.restarts.iter().enumerate() {
            let at = Time(secs_to_us(r.at_s));
            self.q.push(at, Ev::Crash { index });
            let back = at.plus_us(secs_to_us(r.down_s.max(0.0)).max(1));
            self.q.push(back, Ev::ComeBack { index });
        }
    }

    /// The process is killed at `now`.
    pub(crate) fn crash(&mut self, now: Time) {
        if self.host.down || self.host.finished_at.is_some() {
            return;
        }
        let killed = self.host.kill(&mut self.q, &self.net, now);
        self.report.cover("restart");
        if killed.lost_pass.is_some() {
            self.report.cover("restart_pass_lost");
        }
        self.killed_counters.push(killed.counters);
        self.prev_counters = Default::default();
        let floor = self.net.next_conn();
        for c in &mut self.clients {
            // A move applied in the pass the kill cut short never happened.
            if let (Some((_, at)), Some(lost)) = (c.accepted, killed.lost_pass)
                && at >= lost
            {
                c.accepted = None;
            }
            if c.gone {
                continue;
            }
            c.restart_floor = Some(floor);
            c.resume = None;
            if let Some((code, LobbyStatus::Playing, Some(game))) =
                c.last_state.as_deref().and_then(lobby_game)
            {
                self.restart_games.insert(code, game);
            }
        }
        self.check.restarted();
        self.report.ai_illegal.clear();
        if self.ai_embedded
            && let Some(ai) = &mut self.ai
        {
            ai.process_killed();
        }
    }

    /// The process starts again on its store.
    pub(crate) fn come_back(&mut self, now: Time, index: usize) {
        if !self.host.down {
            return;
        }
        let seed = Seed::from_u64(self.seed ^ (0xC0FF_EE00 + index as u64));
        if let Err(why) = self.host.come_back(&mut self.q, now, seed) {
            self.report
                .violation(now, format!("the restart could not restore: {why}"));
            return;
        }
        self.check.games.expiry.restored(now);
        for aside in self.host.server.set_aside() {
            self.report.violation(
                now,
                format!(
                    "the restart set lobby {} aside: {}",
                    aside.code, aside.reason
                ),
            );
        }
        if self.ai_embedded
            && let Some(ai) = &mut self.ai
        {
            let mut cx = Ctx {
                q: &mut self.q,
                net: &mut self.net,
                report: &mut self.report,
                tables: &mut self.tables,
            };
            ai.connect(&mut cx, now);
        }
    }

    /// At the end: the games running at a kill, and which of them finished (a client's
    /// last view shows the game finished, or its lobby in a later game).
    pub(crate) fn judge_restarted_games(&mut self, now: Time) {
        if self.restart_games.is_empty() {
            return;
        }
        let mut last: BTreeMap<String, Vec<(LobbyStatus, Option<String>)>> = BTreeMap::new();
        for c in &self.clients {
            if let Some((code, status, game)) = c.last_state.as_deref().and_then(lobby_game) {
                last.entry(code).or_default().push((status, game));
            }
        }
        let mut finished = 0u64;
        for (code, game) in &self.restart_games {
            let done = last.get(code).is_some_and(|views| {
                views.iter().any(|(status, g)| {
                    *status != LobbyStatus::Playing || g.as_ref().is_some_and(|g| g != game)
                })
            });
            if done {
                finished += 1;
            } else if self.scenario.restart_games_finish {
                self.report.violation(
                    now,
                    format!("lobby {code}: game {game}, running at a restart, did not finish"),
                );
            }
        }
        let r = &mut self.report;
        r.counters
            .insert("restart_games".into(), self.restart_games.len() as u64);
        r.counters.insert("restart_games_finished".into(), finished);
        if finished > 0 {
            r.cover("restart_game_finished");
        }
    }
}
