//! The PostgreSQL store's history reads, off the core task: a finished game's body by
//! its id, and a profile's recent games, over every shard's rows on a connection of
//! the reader's own.

use postgres::Client;
use tracing::warn;

use super::super::history::{self, Query, Reader};
use super::OWNER_CHECK_TIMEOUT;
use super::connection::{connect, detail};

/// A reader of the finished games in the store at `url` (`shown`: without its
/// password, for logs), on a connection of its own made at its first request and made
/// again once lost.
pub(super) fn reader(url: String, shown: String) -> Reader {
    let mut client: Option<Client> = None;
    Reader::with(move |query| {
        if client
            .as_mut()
            .is_none_or(|c| c.is_valid(OWNER_CHECK_TIMEOUT).is_err())
        {
            client = connect(&url, None)
                .inspect_err(|e| warn!(store = %shown, error = %e, "History reader cannot connect"))
                .ok();
        }
        let c = client.as_mut()?;
        answer_pg(c, query)
            .inspect_err(|e| warn!(store = %shown, error = %detail(e), "History read failed"))
            .ok()
            .flatten()
    })
}

/// A history read, of every shard's games (a game may be asked of any shard): a game's
/// body by its id (the whole id compared), or a profile's recent games (its lines,
/// newest first).
fn answer_pg(client: &mut Client, query: &Query) -> Result<Option<String>, postgres::Error> {
    match query {
        Query::Game(id) => {
            let row_id = history::row_id_of(id);
            let rows = client.query(
                "SELECT body FROM wizard_records WHERE kind = 'game' AND session = $1",
                &[&row_id],
            )?;
            Ok(rows
                .iter()
                .filter_map(|r| r.try_get::<_, &str>(0).ok())
                .find(|body| history::game_id_of(body).as_deref() == Some(id.as_str()))
                .and_then(history::replay))
        }
        Query::Recent(profile) => {
            let needle = format!(
                "%\"profile_id\":\"{}\"%",
                profile.replace(['%', '_', '\\'], "")
            );
            let rows = client.query(
                "SELECT body FROM wizard_records WHERE kind = 'game' AND body LIKE $1
                 ORDER BY game_no DESC LIMIT $2",
                &[&needle, &(history::RECENT_GAMES_MAX as i64)],
            )?;
            let lines: Vec<String> = rows
                .iter()
                .filter_map(|r| r.try_get::<_, &str>(0).ok())
                .filter_map(|body| history::seat_line(body, profile))
                .collect();
            Ok(Some(format!("[{}]", lines.join(","))))
        }
    }
}
