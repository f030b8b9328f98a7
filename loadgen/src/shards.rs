//! A run against a sharded deployment (`--shard-routes 1`, PROTOCOL.md 6.3): the path a
//! bot connects to for its lobby code or token, and the check that every connection
//! landed on the shard that owns what it carries.
//!
//! Hosts create their lobbies at the run's path (`/ws`: any ready shard); guests join at
//! `/ws/<first character of the code>`, and a bot coming back after its connection
//! ended reconnects at `/ws/<first character of its token>`. A connection is misrouted
//! when the server answers `wrong_shard`, the proxy or the server answers 421, a new
//! session opened at `/ws/<id>` gets a token of another shard, or a host's new lobby
//! has a code of another shard than the host's token.

use std::io::Write as _;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wizard_core::vocabulary::shard::{owner_of, token_owner};

use super::Ctx;

/// How many misroutes are described in the report (all are counted).
pub(super) const MISROUTES_KEPT: usize = 8;
/// How many bots' ways back are kept for `--resume-log` (one line each).
pub(super) const RESUME_EVENTS_MAX: usize = 200_000;

/// The path for a connection about `key` (a lobby code or a session token): the route
/// of the shard that owns it when the run follows shard routes and `key` names one;
/// the run's own path otherwise.
pub(super) fn route(ctx: &Ctx, key: Option<&str>) -> String {
    let path = &ctx.settings.path;
    match key.and_then(owner_of) {
        Some(id) if ctx.settings.shard_routes => format!("{}/{id}", routes_base(path)),
        _ => path.clone(),
    }
}

/// The path shard routes hang from: `/ws` for the run's path `/ws`, `/ws/` or `/ws/A`.
fn routes_base(path: &str) -> &str {
    match (route_shard(path), path.rsplit_once('/')) {
        (Some(_), Some((base, _))) => base,
        _ => path.trim_end_matches('/'),
    }
}

/// The shard a route such as `/ws/A` names (`None` for `/ws`).
fn route_shard(path: &str) -> Option<char> {
    let (_, last) = path.rsplit_once('/')?;
    let mut chars = last.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

/// Counts one misrouted connection, keeping the first few reasons.
pub(super) fn misrouted(ctx: &Ctx, why: String) {
    ctx.stats.borrow_mut().misroute(why);
}

/// A new session's token, welcomed over `path`: on `/ws/<id>` it must be `<id>`'s.
pub(super) fn check_welcome(ctx: &Ctx, path: &str, token: &str) {
    if !ctx.settings.shard_routes {
        return;
    }
    let want = route_shard(path);
    let got = token_owner(token).map(|id| id.as_char());
    if want.is_some() && got != want {
        misrouted(
            ctx,
            format!("a new session at {path} got a token of shard {got:?}"),
        );
    }
}

/// A host's new lobby: its code names the same shard as the host's token; counted per
/// shard.
pub(super) fn check_lobby(ctx: &Ctx, token: Option<&str>, code: &str) {
    if !ctx.settings.shard_routes {
        return;
    }
    let shard = owner_of(code).map_or_else(|| "none".to_owned(), |id| id.to_string());
    *ctx.stats
        .borrow_mut()
        .lobbies_by_shard
        .entry(shard.clone())
        .or_default() += 1;
    let host = token.and_then(token_owner).map(|id| id.to_string());
    if host.as_deref() != Some(shard.as_str()) {
        misrouted(
            ctx,
            format!("lobby of shard {shard} created by a session of shard {host:?}"),
        );
    }
}

/// A host's game finished: counted by its lobby's shard.
pub(super) fn game_finished(ctx: &Ctx, code: &str) {
    if !ctx.settings.shard_routes {
        return;
    }
    let shard = owner_of(code).map_or_else(|| "none".to_owned(), |id| id.to_string());
    *ctx.stats
        .borrow_mut()
        .finished_by_shard
        .entry(shard)
        .or_default() += 1;
}

/// Remembers one bot's way back (its token's shard, when its connection ended and when
/// it was back in its game, as Unix milliseconds) for `--resume-log`.
pub(super) fn resume_event(ctx: &Ctx, token: Option<&str>, broke_at: Instant) {
    if ctx.settings.resume_log.is_none() {
        return;
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let away_ms = broke_at.elapsed().as_millis() as u64;
    let shard = token
        .and_then(token_owner)
        .map_or_else(|| "-".to_owned(), |id| id.to_string());
    let mut st = ctx.stats.borrow_mut();
    if st.resume_events.len() < RESUME_EVENTS_MAX {
        st.resume_events
            .push((shard, now_ms.saturating_sub(away_ms), now_ms));
    }
}

/// Writes the bots' ways back to `--resume-log`: one `SHARD BROKE_UNIX_MS BACK_UNIX_MS`
/// line each.
pub(super) fn write_resume_log(ctx: &Ctx, events: &[(String, u64, u64)]) -> Result<(), String> {
    let Some(path) = &ctx.settings.resume_log else {
        return Ok(());
    };
    let mut out = String::new();
    for (shard, broke, back) in events {
        out.push_str(&format!("{shard} {broke} {back}\n"));
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(out.as_bytes()))
        .map_err(|e| format!("--resume-log {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{route_shard, routes_base};

    #[test]
    fn routes_hang_from_the_runs_path() {
        for (path, base) in [
            ("/ws", "/ws"),
            ("/ws/", "/ws"),
            ("/ws/A", "/ws"),
            ("/x/ws", "/x/ws"),
        ] {
            assert_eq!(routes_base(path), base, "{path}");
        }
    }

    #[test]
    fn a_route_names_its_shard() {
        let cases = [
            ("/ws/A", Some('A')),
            ("/ws", None),
            ("/ws/", None),
            ("/ws/AB", None),
        ];
        for (path, want) in cases {
            assert_eq!(route_shard(path), want, "{path}");
        }
    }
}
