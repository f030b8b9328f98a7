//! The SQLite store's file on disk: which file is a store (its identity row), who may
//! write it (locks tied to the file itself, whatever path names it), and where its
//! journal lives.
//!
//! - **Identity.** A store holds one row in `store_identity`: the format version, a
//!   random store id, and its home (the resolved path it was made at). A file without
//!   it is not a store: an empty file, one whose tables were dropped, or an unrelated
//!   SQLite file stops start-up (exit 2, naming the file) instead of starting empty. A
//!   new store is made only where no file exists and nothing says a store was there
//!   (a journal generation, or a lock file naming a store id), built under a temporary
//!   name and renamed into place, so that a crash while making it leaves no half-made
//!   store. `STORE_INIT=1` lets the operator make a new store anyway where a store's
//!   traces are left, or in an existing file that holds no tables; a file with tables
//!   of its own is never written into. A store written before the identity existed (its
//!   `records` and `meta` tables, no identity) is adopted: the row is added.
//! - **One writer.** Two locks, both held while the process runs: the lock file beside
//!   the resolved path (`PATH.lock`, as earlier versions take it, so a rolling upgrade
//!   still waits), and an exclusive `flock` on the database file itself, which follows
//!   its inode: a symlink, a hard link or a bind mount reaches the same lock. A process
//!   that finds either taken says at once that it stands by (naming the store and the
//!   holder written in the lock file), and waits.
//! - **One journal.** The journal's generations and the lock file are named after the
//!   store's home when that path still is this very file (a hard link opened under
//!   another name), else after the resolved path it was opened by (the file was moved,
//!   and the home is updated).

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension as _, params};
use rustix::fs::{FlockOperation, flock};
use tracing::{info, warn};

use super::StoreError;
use super::journal;
use super::sqlite::sql;

/// The store's format, recorded in its identity row.
pub const FORMAT_VERSION: i64 = 1;

/// A store file claimed by this process: its locks, held until dropped, and the paths
/// its journal and lock file are named after.
#[derive(Debug)]
pub struct Claim {
    /// The path the journal generations are named after (the store's home).
    pub home: PathBuf,
    /// The store's id (32 hex digits).
    pub store_id: String,
    _lock_file: File,
    _db: File,
}

/// What a file at the store's path is, looked at before it is used.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A store: its identity row and its `records` table.
    Store,
    /// A store of an earlier version: `records` and `meta`, no identity.
    Legacy,
    /// Zero bytes, or a SQLite file with no table at all.
    Empty,
    /// Anything else: tables that are not a store's, or a store's identity without
    /// its records.
    Foreign(String),
}

/// The path a store at `path` really lives at: symlinks resolved, the folder made
/// absolute (the file itself may not exist yet).
pub fn resolve(path: &Path) -> Result<PathBuf, StoreError> {
    if let Ok(real) = std::fs::canonicalize(path) {
        return Ok(real);
    }
    let name = path
        .file_name()
        .ok_or_else(|| StoreError(format!("{}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| StoreError(format!("cannot resolve {}: {e}", dir.display())))?;
    Ok(dir.join(name))
}

/// `PATH.lock` beside the store at `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Claims the store at `path` (its folder exists): takes both locks (standing by while
/// another process holds either), makes a new store where none was, checks the file's
/// identity, and returns the claim with an open connection to it. `init`:
/// `STORE_INIT`.
pub fn claim(path: &Path, init: bool) -> Result<(Claim, Connection), StoreError> {
    let real = resolve(path)?;
    let mut lock_file = take_lock_file(&real)?;
    if !real.exists() {
        make_new(&real, &lock_file, init)?;
    }
    let db = take_file_lock(&real)?;
    let empty_bytes = db.metadata().map(|m| m.len() == 0).unwrap_or(false);
    let conn = Connection::open(&real).map_err(sql("cannot open", &real))?;
    let kind = kind_of(&conn, empty_bytes).map_err(sql("cannot read", &real))?;
    let traces = traces(&real, &lock_file)?;
    accept_kind(&conn, &real, kind, init, traces)?;
    let (store_id, home) = identity(&conn).map_err(sql("cannot read", &real))?;
    let home = settle_home(&conn, &real, PathBuf::from(home), &db)?;
    write_holder(&mut lock_file, &store_id);
    // A hard link's own lock file is not the home's: the home's is the one a rolling
    // upgrade of the home path waits on. The inode lock keeps them apart anyway.
    Ok((
        Claim {
            home,
            store_id,
            _lock_file: lock_file,
            _db: db,
        },
        conn,
    ))
}

/// Opens (creating it) the lock file beside `real` and takes its lock, standing by
/// (and saying who holds it) while another process does.
fn take_lock_file(real: &Path) -> Result<File, StoreError> {
    let lock_at = lock_path(real);
    let lock_file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&lock_at)
        .map_err(|e| StoreError(format!("cannot create {}: {e}", lock_at.display())))?;
    take(&lock_file, || {
        let holder = read_holder(&lock_at);
        warn!(
            store = %real.display(),
            holder = %holder,
            "Waiting for the store's lock: standing by, another server ({holder}) holds {}; this one serves it as soon as that one stops. To run a second, independent server instead, give it its own STORE (and BIND)",
            real.display()
        );
    })
    .map_err(|e| StoreError(format!("cannot lock {}: {e}", lock_at.display())))?;
    Ok(lock_file)
}

/// Opens the database file at `real` and takes the lock on its inode, standing by
/// while another process holds it through another path.
fn take_file_lock(real: &Path) -> Result<File, StoreError> {
    let db = OpenOptions::new()
        .read(true)
        .write(true)
        .open(real)
        .map_err(|e| StoreError(format!("cannot open {}: {e}", real.display())))?;
    take(&db, || {
        warn!(
            store = %real.display(),
            "Waiting for the store's lock: standing by, another server holds {} through another path (a link or a mount); this one serves it as soon as that one stops. To run a second, independent server instead, give it its own STORE (and BIND)",
            real.display()
        );
    })
    .map_err(|e| StoreError(format!("cannot lock {}: {e}", real.display())))?;
    Ok(db)
}

/// Takes the file at `real` as a store if it is one: adopts an earlier version's,
/// sets up an empty one under `STORE_INIT` (`init`), refuses anything else (an empty
/// file naming the `traces` of the store that was there).
fn accept_kind(
    conn: &Connection,
    real: &Path,
    kind: Kind,
    init: bool,
    traces: Option<String>,
) -> Result<(), StoreError> {
    match kind {
        Kind::Store => Ok(()),
        Kind::Legacy => {
            write_identity(conn, real).map_err(sql("cannot adopt", real))?;
            info!(store = %real.display(), "Store of an earlier version: identity added");
            Ok(())
        }
        Kind::Empty if init => {
            write_identity(conn, real).map_err(sql("cannot set up", real))?;
            warn!(store = %real.display(), "STORE_INIT=1: a new, empty store in an empty file");
            Ok(())
        }
        Kind::Empty => Err(StoreError(format!(
            "{} is not a store: it is empty{}; restore it from a backup, or start with STORE_INIT=1 to make a new, empty store there",
            real.display(),
            traces.map_or(String::new(), |t| format!(", but {t}"))
        ))),
        Kind::Foreign(what) => Err(StoreError(format!(
            "{} is not a store ({what}); name another file in STORE",
            real.display()
        ))),
    }
}

/// The path the journal is named after: the store's recorded `home` while it still is
/// this very file `db` (a hard link opened under another name), else `real`, which
/// becomes the recorded home (the file was moved).
fn settle_home(
    conn: &Connection,
    real: &Path,
    home: PathBuf,
    db: &File,
) -> Result<PathBuf, StoreError> {
    if home != real && same_file(&home, db) {
        return Ok(home);
    }
    if home != real {
        conn.execute(
            "UPDATE store_identity SET home = ?1",
            params![real.to_string_lossy()],
        )
        .map_err(sql("cannot update", real))?;
    }
    Ok(real.to_path_buf())
}

/// Takes an exclusive `flock` on `file`, calling `standby` once before waiting when
/// another process holds it.
fn take(file: &File, standby: impl FnOnce()) -> std::io::Result<()> {
    if flock(file, FlockOperation::NonBlockingLockExclusive).is_ok() {
        return Ok(());
    }
    standby();
    flock(file, FlockOperation::LockExclusive).map_err(std::io::Error::from)
}

fn same_file(path: &Path, open: &File) -> bool {
    match (std::fs::metadata(path), open.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// What says a store was at `real` though its file is gone or empty: a journal
/// generation, or a lock file that names a store id.
fn traces(real: &Path, lock_file: &File) -> Result<Option<String>, StoreError> {
    let generations = journal::generations(real).map_err(|e| {
        StoreError(format!(
            "cannot list the journal of {}: {e}",
            real.display()
        ))
    })?;
    if let Some((_, first)) = generations.first() {
        return Ok(Some(format!("its journal is there ({})", first.display())));
    }
    let mut text = String::new();
    let mut file = lock_file;
    if file.rewind().is_ok()
        && file.read_to_string(&mut text).is_ok()
        && let Some(id) = text.lines().find_map(|l| l.strip_prefix("store_id="))
    {
        return Ok(Some(format!(
            "its lock file {} names store {id}",
            lock_path(real).display()
        )));
    }
    Ok(None)
}

/// Makes a new store at `real`, where no file exists: built under a temporary name
/// and renamed into place. Refused where a store's traces are left, unless `init`.
fn make_new(real: &Path, lock_file: &File, init: bool) -> Result<(), StoreError> {
    if let Some(t) = traces(real, lock_file)? {
        if !init {
            return Err(StoreError(format!(
                "{} is missing, but {t}: restore the file from a backup, or start with STORE_INIT=1 to make a new, empty store there",
                real.display()
            )));
        }
        warn!(store = %real.display(), traces = %t, "STORE_INIT=1: a new, empty store where one was");
    }
    let mut name = real.as_os_str().to_owned();
    name.push(format!(".new-{}", std::process::id()));
    let temp = PathBuf::from(name);
    let _ = std::fs::remove_file(&temp);
    OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&temp)
        .map_err(|e| StoreError(format!("cannot create {}: {e}", temp.display())))?;
    let built = (|| {
        let conn = Connection::open(&temp)?;
        create_tables(&conn)?;
        write_identity(&conn, real)?;
        conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
        conn.close().map_err(|(_, e)| e)
    })();
    if let Err(e) = built {
        let _ = std::fs::remove_file(&temp);
        return Err(StoreError(format!("cannot create {}: {e}", temp.display())));
    }
    let synced = File::open(&temp).and_then(|f| f.sync_all());
    let renamed = synced.and_then(|()| std::fs::rename(&temp, real));
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&temp);
        return Err(StoreError(format!("cannot create {}: {e}", real.display())));
    }
    if let Some(dir) = real.parent()
        && let Ok(dir) = File::open(dir)
    {
        let _ = dir.sync_all();
    }
    info!(store = %real.display(), "New store made");
    Ok(())
}

/// The store's tables (also on every open: a table a newer build adds).
pub fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    super::history::create_tables(conn)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS records (
             seq INTEGER PRIMARY KEY,
             lobby INTEGER,
             session INTEGER,
             kind TEXT NOT NULL,
             game_no INTEGER,
             body TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS meta (
             key TEXT PRIMARY KEY,
             value INTEGER NOT NULL
         );",
    )
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names = statement.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

fn kind_of(conn: &Connection, empty_bytes: bool) -> rusqlite::Result<Kind> {
    if empty_bytes {
        return Ok(Kind::Empty);
    }
    let tables = tables(conn)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("store_identity") {
        let rows: i64 = conn.query_row("SELECT COUNT(*) FROM store_identity", [], |r| r.get(0))?;
        return Ok(match (rows, has("records")) {
            (1, true) => Kind::Store,
            (1, false) => Kind::Foreign("its records table is missing".into()),
            _ => Kind::Foreign(format!("{rows} identity rows")),
        });
    }
    if tables.is_empty() {
        return Ok(Kind::Empty);
    }
    if has("records") && has("meta") && tables.len() == 2 {
        return Ok(Kind::Legacy);
    }
    Ok(Kind::Foreign(format!(
        "no store identity; its tables: {}",
        tables.join(", ")
    )))
}

fn write_identity(conn: &Connection, home: &Path) -> rusqlite::Result<()> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.to_string().into()))?;
    let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
    create_tables(conn)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS store_identity (
             version INTEGER NOT NULL,
             store_id TEXT NOT NULL,
             home TEXT NOT NULL
         );",
    )?;
    conn.execute(
        "INSERT INTO store_identity (version, store_id, home) VALUES (?1, ?2, ?3)",
        params![FORMAT_VERSION, id, home.to_string_lossy()],
    )?;
    Ok(())
}

fn identity(conn: &Connection) -> rusqlite::Result<(String, String)> {
    let row = conn
        .query_row(
            "SELECT version, store_id, home FROM store_identity",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )
        .optional()?;
    match row {
        Some((version, id, home)) if version <= FORMAT_VERSION => Ok((id, home)),
        Some((version, ..)) => Err(rusqlite::Error::ToSqlConversionFailure(
            format!("store format {version} is newer than this build's {FORMAT_VERSION}").into(),
        )),
        None => Err(rusqlite::Error::QueryReturnedNoRows),
    }
}

/// Who holds the lock file at `path`, as its holder wrote it there.
fn read_holder(path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return "unknown".into();
    };
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).map(str::to_owned))
    };
    match (field("pid="), field("host=")) {
        (Some(pid), Some(host)) => format!("pid {pid} on {host}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => "a server of an earlier version".into(),
    }
}

/// Writes this process as the holder into the lock file it holds.
fn write_holder(file: &mut File, store_id: &str) {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let text = format!(
        "pid={}\nhost={host}\nstore_id={store_id}\n",
        std::process::id()
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(text.as_bytes()));
    if let Err(e) = written {
        warn!(error = %e, "Cannot write the holder into the store's lock file");
    }
}
