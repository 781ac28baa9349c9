//! The fleet database (SPEC W8): one SQLite file in Mimesis's data dir that remembers
//! what was learnt, so a restart shows the roster at once and resumes reading each
//! transcript where it stopped instead of reading it again.
//!
//! It holds: every session's facts, reading position and last row; the work-chain
//! links; the processes Mimesis supervises (PID, start time, command line) so a later
//! run can recognise them; the settings; and the archive of corrupted sessions.
//!
//! The database is a cache of the transcripts, never the truth: a file that is corrupt,
//! from a newer Mimesis, or locked is reported, moved aside (or replaced by an in-memory
//! one) and rebuilt from the transcripts. Nothing here is fatal to the engine.
//!
//! Layer: above `mimesis-core`; the engine reaches it only through
//! [`mimesis_core::persist::SessionArchive`], the supervision through
//! [`mimesis_core::supervision::ledger::ProcessLedger`] ([`ledger`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use mimesis_core::chain::{Link, LinkReason};
use mimesis_core::clock::{Clock, SystemClock, Timestamp};
use mimesis_core::facts::SessionFacts;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::{ArchiveError, Batch, PersistedSession, SessionArchive, TailState};
use mimesis_core::settings::Settings;
use mimesis_core::supervision::interrupted::{Interrupted, InterruptedBy};
use mimesis_core::supervision::ledger::{CorruptedSession, Owner, ProcessLedger, ProcessRecord};

pub mod ledger;

/// The database's file name in the data dir.
pub const FILE_NAME: &str = "fleet.db";

/// Schema migrations, in order; `PRAGMA user_version` counts those applied.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        project_id TEXT NOT NULL,
        path TEXT NOT NULL,
        tail TEXT NOT NULL,
        facts TEXT NOT NULL,
        dedup BLOB NOT NULL,
        row TEXT,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE chain_links (
        successor TEXT PRIMARY KEY,
        predecessor TEXT NOT NULL UNIQUE,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE TABLE supervised_processes (
        pid INTEGER NOT NULL,
        start_ticks INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        command_line TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        PRIMARY KEY (pid, start_ticks)
    );
    CREATE TABLE settings (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        document TEXT NOT NULL
    );
    CREATE TABLE corrupted_sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        transcript_path TEXT,
        archive_path TEXT,
        reason TEXT NOT NULL,
        archived_at INTEGER NOT NULL
    );",
    // 2: supervised processes as the supervision's ledger records them (SPEC P11): under
    // the Mimesis process that owns them, with boot id and the whole argv, so a later
    // start can tell its own orphans from a process that merely looks the same. The
    // first table was never written to, so it is replaced rather than converted.
    "DROP TABLE supervised_processes;
    CREATE TABLE supervised_processes (
        owner_boot_id TEXT NOT NULL,
        owner_pid INTEGER NOT NULL,
        owner_start_ticks INTEGER NOT NULL,
        boot_id TEXT NOT NULL,
        pid INTEGER NOT NULL,
        start_ticks INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        cwd TEXT NOT NULL,
        command_line TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        PRIMARY KEY (boot_id, pid, start_ticks)
    );
    CREATE INDEX supervised_processes_by_owner
        ON supervised_processes (owner_boot_id, owner_pid, owner_start_ticks);
    ALTER TABLE corrupted_sessions ADD COLUMN replaced_by TEXT;
    ALTER TABLE corrupted_sessions ADD COLUMN cwd TEXT;",
    // 3: supervised sessions a quit or a crash of Mimesis interrupted (issue 37), offered
    // for resume until resumed or dismissed.
    "CREATE TABLE interrupted_sessions (
        session_id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        cause TEXT NOT NULL,
        at INTEGER NOT NULL
    );",
];

/// How long a statement waits for another process's write (the app and a CLI may share
/// the file).
const BUSY_TIMEOUT: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("fleet database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("fleet database holds a bad value: {0}")]
    Decode(String),
}

/// The state of the database, for `doctor` and the logs.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum DbHealth {
    Ok,
    /// The file could not be used and was moved aside; a new one is being filled.
    Rebuilt {
        reason: String,
        moved_to: Option<PathBuf>,
    },
    /// No file could be used: this run keeps its data in memory only.
    InMemory {
        reason: String,
    },
    /// Seen from outside (`doctor`): the file cannot be read; the next start rebuilds it.
    Broken {
        reason: String,
    },
    /// Seen from outside: there is no database file yet.
    Missing,
    /// Seen from outside: the file reads well but cannot be written (its mode, an
    /// immutable flag, a read-only filesystem): nothing Mimesis learns is kept.
    ReadOnly {
        reason: String,
    },
}

impl std::fmt::Display for DbHealth {
    /// In plain words, for `doctor`'s text and the logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbHealth::Ok => f.write_str("ok"),
            DbHealth::Rebuilt { reason, moved_to: Some(p) } => {
                write!(f, "rebuilt ({reason}); the old file was moved to {}", p.display())
            }
            DbHealth::Rebuilt { reason, moved_to: None } => write!(f, "rebuilt ({reason})"),
            DbHealth::InMemory { reason } => write!(f, "kept in memory only, nothing is saved ({reason})"),
            DbHealth::Broken { reason } => {
                write!(f, "cannot be used ({reason}); the next start of Mimesis rebuilds it")
            }
            DbHealth::Missing => f.write_str("not created yet (the first start of Mimesis creates it)"),
            DbHealth::ReadOnly { reason } => {
                write!(f, "cannot be written ({reason}); nothing Mimesis learns is kept until it can be")
            }
        }
    }
}

/// Counts for `doctor`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DbStats {
    pub path: Option<PathBuf>,
    pub health: DbHealth,
    pub size_bytes: u64,
    pub sessions: u64,
    pub chain_links: u64,
    pub supervised_processes: u64,
    pub schema_version: u32,
}

/// The fleet database. Shared between threads (`Arc<Db>`); each call takes the lock for
/// one statement or transaction.
pub struct Db {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    health: Mutex<DbHealth>,
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

fn prepare(conn: &Connection) -> Result<(), DbError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(conn)
}

/// Frees the pages SQLite keeps cached on `conn`. The engine reads every session once at
/// start and then writes a few rows at a time, reading nothing back: the cache (up to 2 MB
/// per connection; a 2,000-session database is 8 MB) only held memory. Pages a later
/// statement needs come back from the system's file cache.
fn release_cache(conn: &Connection) {
    let _ = conn.execute_batch("PRAGMA shrink_memory");
}

fn migrate(conn: &Connection) -> Result<(), DbError> {
    let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version as usize > MIGRATIONS.len() {
        return Err(DbError::Decode(format!(
            "schema version {version} is newer than this Mimesis knows ({})",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as u32)?;
        tx.commit()?;
    }
    Ok(())
}

fn open_file(path: &Path) -> Result<Connection, DbError> {
    // Created 0600 before SQLite opens it (SQLite would make it 0644 less the umask), so its
    // -wal, -shm and -journal, which SQLite makes with the database's mode, are 0600 too;
    // one an older Mimesis made readable by others is tightened.
    if let Err(e) = mimesis_os::private::sqlite_file(path) {
        tracing::debug!(path = %path.display(), error = %e, "cannot ready the database file; SQLite says why");
    }
    let conn = Connection::open(path)?;
    prepare(&conn)?;
    Ok(conn)
}

fn memory() -> Connection {
    let conn = Connection::open_in_memory().expect("SQLite can always open an in-memory database");
    migrate(&conn).expect("the schema applies to an empty database");
    conn
}

/// Moves a database file (and its WAL) aside; returns where it went.
fn move_aside(path: &Path, now: Timestamp) -> Option<PathBuf> {
    let stamp: String = now.to_iso().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let to = path.with_file_name(format!("{}.broken-{stamp}", path.file_name()?.to_string_lossy()));
    let moved = std::fs::rename(path, &to).is_ok();
    if moved {
        let _ = mimesis_os::private::tighten(&to);
    }
    for ext in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(ext);
        let _ = std::fs::remove_file(PathBuf::from(side));
    }
    moved.then_some(to)
}

impl Db {
    /// Opens (creating, migrating) the database at `path`. Never fails: a file that
    /// cannot be used is moved aside and a new one made; when even that fails, or the
    /// file is locked by another process, an in-memory database stands in. The outcome
    /// is in [`Db::health`].
    pub fn open(path: &Path, now: Timestamp) -> Db {
        match open_file(path) {
            Ok(conn) => Db::with(conn, Some(path), DbHealth::Ok),
            Err(DbError::Sqlite(e)) if is_busy(&e) => {
                tracing::warn!(path = %path.display(), error = %e, "the fleet database is locked; keeping this run's data in memory");
                Db::with(memory(), None, DbHealth::InMemory { reason: format!("{} is locked: {e}", path.display()) })
            }
            Err(e) => Db::rebuilt(path, &e.to_string(), now),
        }
    }

    fn rebuilt(path: &Path, reason: &str, now: Timestamp) -> Db {
        tracing::warn!(path = %path.display(), reason, "the fleet database cannot be used; rebuilding it from the transcripts");
        let moved_to = move_aside(path, now);
        let _ = std::fs::remove_file(path);
        match open_file(path) {
            Ok(conn) => Db::with(conn, Some(path), DbHealth::Rebuilt { reason: reason.to_owned(), moved_to }),
            Err(e) => Db::with(
                memory(),
                None,
                DbHealth::InMemory { reason: format!("{reason}; a new file could not be made either: {e}") },
            ),
        }
    }

    /// Opens an existing file read-only, changing nothing (for `doctor` and `ls`).
    pub fn open_read_only(path: &Path) -> Result<Db, DbError> {
        use rusqlite::OpenFlags;
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        // An older schema still has the sessions, links and settings (the next writer
        // migrates it); a newer one may mean anything.
        if version == 0 || version as usize > MIGRATIONS.len() {
            return Err(DbError::Decode(format!("schema version {version}, expected {}", MIGRATIONS.len())));
        }
        Ok(Db::with(conn, Some(path), DbHealth::Ok))
    }

    /// Opens (creating, migrating) the file at `path` for a second user of it, such as
    /// the supervision's ledger, without ever moving it aside or standing in with memory:
    /// a file that cannot be used is an error here, and the engine that owns the file
    /// rebuilds it.
    pub fn open_shared(path: &Path) -> Result<Db, DbError> {
        Ok(Db::with(open_file(path)?, Some(path), DbHealth::Ok))
    }

    /// Stats of the file at `path` without opening it for writing.
    pub fn inspect(path: &Path) -> DbStats {
        if !path.exists() {
            return DbStats {
                path: Some(path.to_owned()),
                health: DbHealth::Missing,
                size_bytes: 0,
                sessions: 0,
                chain_links: 0,
                supervised_processes: 0,
                schema_version: 0,
            };
        }
        match Db::open_read_only(path) {
            Ok(db) => {
                let mut stats = db.stats();
                if let Some(problem) = db.quick_check() {
                    stats.health = DbHealth::Broken { reason: problem };
                } else if let Some(reason) = unwritable(path) {
                    stats.health = DbHealth::ReadOnly { reason };
                }
                stats
            }
            Err(e) => DbStats {
                path: Some(path.to_owned()),
                health: DbHealth::Broken { reason: e.to_string() },
                size_bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
                sessions: 0,
                chain_links: 0,
                supervised_processes: 0,
                schema_version: 0,
            },
        }
    }

    /// SQLite's quick integrity check: `None` when the pages are sound, else what is wrong
    /// (its first finding).
    fn quick_check(&self) -> Option<String> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let found: Result<Vec<String>, rusqlite::Error> = conn
            .prepare("PRAGMA quick_check(5)")
            .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect());
        match found {
            Ok(rows) if rows.len() == 1 && rows[0] == "ok" => None,
            Ok(rows) => Some(format!("corrupt: {}", rows.first().map_or("no answer", String::as_str))),
            Err(e) => Some(format!("corrupt: {e}")),
        }
    }

    /// A database that lives in memory only (tests, or no data dir).
    pub fn in_memory() -> Db {
        Db::with(memory(), None, DbHealth::Ok)
    }

    fn with(conn: Connection, path: Option<&Path>, health: DbHealth) -> Db {
        Db { conn: Mutex::new(conn), path: path.map(Path::to_owned), health: Mutex::new(health) }
    }

    /// Throws the file away and starts an empty one (it turned out corrupt while in use).
    pub fn rebuild(&self, reason: &str, now: Timestamp) {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let Some(path) = &self.path else {
            *conn = memory();
            return;
        };
        tracing::warn!(path = %path.display(), reason, "the fleet database is corrupt; rebuilding it from the transcripts");
        *conn = memory(); // closes the file before it is moved
        let moved_to = move_aside(path, now);
        let _ = std::fs::remove_file(path);
        let health = match open_file(path) {
            Ok(c) => {
                *conn = c;
                DbHealth::Rebuilt { reason: reason.to_owned(), moved_to }
            }
            Err(e) => DbHealth::InMemory { reason: format!("{reason}; a new file could not be made either: {e}") },
        };
        *self.health.lock().unwrap_or_else(|e| e.into_inner()) = health;
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn health(&self) -> DbHealth {
        self.health.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ------------------------------------------------------------ sessions and chains

    /// Every persisted session under one of `roots`. Rows that cannot be decoded are
    /// skipped (their files are simply read again).
    pub fn load_sessions(&self, roots: &[PathBuf]) -> Result<Vec<PersistedSession>, DbError> {
        let conn = self.conn();
        // The stored row is for other readers; the engine derives its own from the facts.
        let mut stmt = conn.prepare("SELECT session_id, root, project_id, path, tail, facts, dedup FROM sessions")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Vec<u8>>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, root, project_id, path, tail, facts, dedup) = row?;
            let root = PathBuf::from(root);
            if !roots.contains(&root) {
                continue;
            }
            let decoded = (|| -> Option<PersistedSession> {
                let session_id = SessionId::parse(&id).ok()?;
                let tail: TailState = serde_json::from_str(&tail).ok()?;
                let facts: SessionFacts = serde_json::from_str(&facts).ok()?;
                let location = TranscriptLocation { root, project_id, session_id, path: PathBuf::from(path) };
                Some(PersistedSession { location, tail, facts, dedup: Some(dedup), row: None })
            })();
            match decoded {
                Some(p) => out.push(p),
                None => {
                    tracing::warn!(session = id, "a fleet database row could not be decoded; its file is read again")
                }
            }
        }
        drop(stmt);
        release_cache(&conn);
        Ok(out)
    }

    pub fn load_links(&self) -> Result<Vec<Link>, DbError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT predecessor, successor, reason, at FROM chain_links")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (p, s, reason, at) = row?;
            if let (Ok(predecessor), Ok(successor), Some(reason)) =
                (SessionId::parse(&p), SessionId::parse(&s), LinkReason::parse(&reason))
            {
                out.push(Link { predecessor, successor, reason, at: Timestamp::from_millis(at) });
            }
        }
        Ok(out)
    }

    /// The last roster row stored for a session (what other readers show of it: its
    /// title, its chain's name), if there is one that decodes.
    pub fn stored_row(&self, id: &SessionId) -> Result<Option<mimesis_core::session::TrackedSession>, DbError> {
        let conn = self.conn();
        let row: Option<Option<String>> =
            conn.query_row("SELECT row FROM sessions WHERE session_id = ?1", [id.as_str()], |r| r.get(0)).optional()?;
        Ok(row.flatten().and_then(|r| serde_json::from_str(&r).ok()))
    }

    /// Writes a batch in one transaction.
    pub fn save(&self, batch: &Batch, now: Timestamp) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO sessions (session_id, root, project_id, path, tail, facts, dedup, row, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for s in &batch.sessions {
                let facts = serde_json::to_string(&s.facts).map_err(|e| DbError::Decode(e.to_string()))?;
                let tail = serde_json::to_string(&s.tail).map_err(|e| DbError::Decode(e.to_string()))?;
                let row = s.row.as_ref().and_then(|r| serde_json::to_string(r).ok());
                put.execute(params![
                    s.location.session_id.as_str(),
                    s.location.root.to_string_lossy(),
                    s.location.project_id,
                    s.location.path.to_string_lossy(),
                    tail,
                    facts,
                    s.dedup.clone().unwrap_or_else(|| s.facts.dedup_bytes()),
                    row,
                    now.millis()
                ])?;
            }
            let mut del = tx.prepare_cached("DELETE FROM sessions WHERE session_id = ?1")?;
            for id in &batch.removed {
                del.execute([id.as_str()])?;
            }
            let mut link = tx.prepare_cached(
                "INSERT OR IGNORE INTO chain_links (predecessor, successor, reason, at) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for l in &batch.links {
                link.execute(params![l.predecessor.as_str(), l.successor.as_str(), l.reason.as_str(), l.at.millis()])?;
            }
        }
        tx.commit()?;
        release_cache(&conn);
        Ok(())
    }

    // ------------------------------------------------------------ settings

    /// The stored settings, or the defaults when none are stored (or they no longer
    /// validate: a value that was valid once may be out of a newer range).
    pub fn settings(&self) -> Settings {
        let doc: Option<String> = self
            .conn()
            .query_row("SELECT document FROM settings WHERE id = 1", [], |r| r.get(0))
            .optional()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read the settings; using the defaults");
                None
            });
        let Some(doc) = doc else { return Settings::default() };
        match serde_json::from_str::<serde_json::Value>(&doc).map(|v| Settings::from_json(&v)) {
            Ok(Ok(s)) => s,
            other => {
                tracing::warn!(?other, "the stored settings are not valid; using the defaults");
                Settings::default()
            }
        }
    }

    /// Stores settings (validated by the caller).
    pub fn save_settings(&self, s: &Settings) -> Result<(), DbError> {
        let doc = serde_json::to_string(s).map_err(|e| DbError::Decode(e.to_string()))?;
        self.conn().execute("INSERT OR REPLACE INTO settings (id, document) VALUES (1, ?1)", [doc])?;
        Ok(())
    }

    // ------------------------------------------------------------ corrupted sessions

    /// The sessions archived as corrupted (EC-007), oldest first.
    pub fn corrupted_sessions(&self) -> Result<Vec<CorruptedSession>, DbError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT session_id, replaced_by, cwd, transcript_path, reason, archived_at
             FROM corrupted_sessions ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, replaced_by, cwd, transcript_path, reason, at) = row?;
            if let (Ok(session_id), Some(Ok(replaced_by))) =
                (SessionId::parse(&id), replaced_by.as_deref().map(SessionId::parse))
            {
                out.push(CorruptedSession {
                    session_id,
                    replaced_by,
                    cwd: cwd.unwrap_or_default(),
                    transcript_path: transcript_path.unwrap_or_default(),
                    archived_at: Timestamp::from_millis(at),
                    reason,
                });
            }
        }
        Ok(out)
    }

    // ------------------------------------------------------------ supervised processes

    fn save_processes(&self, owner: &Owner, records: &[ProcessRecord]) -> Result<(), DbError> {
        let mut conn = self.conn();
        // IMMEDIATE: take the write lock up front (waiting up to the busy timeout) rather
        // than fail on upgrading a read lock while another process writes.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(
            "DELETE FROM supervised_processes
             WHERE owner_boot_id = ?1 AND owner_pid = ?2 AND owner_start_ticks = ?3",
            params![owner.boot_id, owner.pid, owner.start_ticks as i64],
        )?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO supervised_processes (owner_boot_id, owner_pid, owner_start_ticks,
                    boot_id, pid, start_ticks, session_id, cwd, command_line, started_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for r in records {
                let argv = serde_json::to_string(&r.cmdline).map_err(|e| DbError::Decode(e.to_string()))?;
                put.execute(params![
                    owner.boot_id,
                    owner.pid,
                    owner.start_ticks as i64,
                    r.boot_id,
                    r.pid,
                    r.start_ticks as i64,
                    r.session_id.as_str(),
                    r.cwd,
                    argv,
                    r.started_at.millis()
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn load_processes(&self) -> Result<Vec<(Owner, Vec<ProcessRecord>)>, DbError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT owner_boot_id, owner_pid, owner_start_ticks, boot_id, pid, start_ticks, session_id, cwd,
                    command_line, started_at
             FROM supervised_processes
             ORDER BY owner_boot_id, owner_pid, owner_start_ticks, started_at",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                Owner { boot_id: r.get(0)?, pid: r.get(1)?, start_ticks: r.get::<_, i64>(2)? as u64 },
                r.get::<_, String>(3)?,
                r.get::<_, u32>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, String>(8)?,
                r.get::<_, i64>(9)?,
            ))
        })?;
        let mut out: Vec<(Owner, Vec<ProcessRecord>)> = Vec::new();
        for row in rows {
            let (owner, boot_id, pid, start_ticks, id, cwd, argv, at) = row?;
            // A row that cannot be read names no process Mimesis could verify: skip it
            // (it goes with its owner's other rows once the owner is cleaned up).
            let (Ok(session_id), Ok(cmdline)) = (SessionId::parse(&id), serde_json::from_str::<Vec<String>>(&argv))
            else {
                tracing::warn!(pid, "an unreadable supervised-process row; it is not acted on");
                continue;
            };
            let record = ProcessRecord {
                session_id,
                cwd,
                pid,
                start_ticks: start_ticks as u64,
                cmdline,
                boot_id,
                started_at: Timestamp::from_millis(at),
            };
            match out.last_mut() {
                Some((o, records)) if *o == owner => records.push(record),
                _ => out.push((owner, vec![record])),
            }
        }
        Ok(out)
    }

    fn forget_owner(&self, owner: &Owner) -> Result<(), DbError> {
        self.conn().execute(
            "DELETE FROM supervised_processes
             WHERE owner_boot_id = ?1 AND owner_pid = ?2 AND owner_start_ticks = ?3",
            params![owner.boot_id, owner.pid, owner.start_ticks as i64],
        )?;
        Ok(())
    }

    fn archive(&self, c: &CorruptedSession) -> Result<(), DbError> {
        self.conn().execute(
            "INSERT INTO corrupted_sessions (session_id, replaced_by, cwd, transcript_path, reason, archived_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                c.session_id.as_str(),
                c.replaced_by.as_str(),
                c.cwd,
                c.transcript_path,
                c.reason,
                c.archived_at.millis()
            ],
        )?;
        Ok(())
    }

    // ------------------------------------------------------------ interrupted sessions

    fn put_interrupted(&self, entries: &[Interrupted]) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO interrupted_sessions (session_id, cwd, cause, at) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for i in entries {
                put.execute(params![i.session_id.as_str(), i.cwd, i.by.as_str(), i.at.millis()])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The sessions recorded as interrupted, oldest first.
    pub fn interrupted_sessions(&self) -> Result<Vec<Interrupted>, DbError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT session_id, cwd, cause, at FROM interrupted_sessions ORDER BY at, session_id")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, cwd, cause, at) = row?;
            let (Ok(session_id), Some(by)) = (SessionId::parse(&id), InterruptedBy::parse(&cause)) else {
                tracing::warn!(session = id, "an unreadable interrupted-session row; it is not offered");
                continue;
            };
            out.push(Interrupted { session_id, cwd, at: Timestamp::from_millis(at), by });
        }
        Ok(out)
    }

    fn drop_interrupted(&self, ids: &[SessionId]) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for id in ids {
            tx.execute("DELETE FROM interrupted_sessions WHERE session_id = ?1", params![id.as_str()])?;
        }
        tx.commit()?;
        Ok(())
    }

    // ------------------------------------------------------------ health

    pub fn stats(&self) -> DbStats {
        let conn = self.conn();
        let count = |table: &str| -> u64 {
            conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).unwrap_or(0) as u64
        };
        let size_bytes = self.path.as_ref().and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
        DbStats {
            path: self.path.clone(),
            health: self.health(),
            size_bytes,
            sessions: count("sessions"),
            chain_links: count("chain_links"),
            supervised_processes: count("supervised_processes"),
            schema_version: conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap_or(0),
        }
    }

    /// Folds the write-ahead log into the file (on shutdown, so the file alone is whole).
    pub fn checkpoint(&self) {
        let _ = self.conn().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
    }
}

/// The fleet database as the supervision's ledger (SPEC W8, P11). Several Mimesis
/// processes share it (the app and any `mimesis run`): each replaces only its own rows,
/// in one short write transaction.
impl ProcessLedger for Db {
    fn save(&self, owner: &Owner, records: &[ProcessRecord]) -> std::io::Result<()> {
        self.save_processes(owner, records).map_err(std::io::Error::other)
    }

    fn load(&self) -> std::io::Result<Vec<(Owner, Vec<ProcessRecord>)>> {
        self.load_processes().map_err(std::io::Error::other)
    }

    fn forget(&self, owner: &Owner) -> std::io::Result<()> {
        self.forget_owner(owner).map_err(std::io::Error::other)
    }

    fn archive_corrupted(&self, entry: &CorruptedSession) -> std::io::Result<()> {
        self.archive(entry).map_err(std::io::Error::other)
    }

    fn mark_interrupted(&self, entries: &[Interrupted]) -> std::io::Result<()> {
        self.put_interrupted(entries).map_err(std::io::Error::other)
    }

    fn interrupted(&self) -> std::io::Result<Vec<Interrupted>> {
        self.interrupted_sessions().map_err(std::io::Error::other)
    }

    fn clear_interrupted(&self, ids: &[SessionId]) -> std::io::Result<()> {
        self.drop_interrupted(ids).map_err(std::io::Error::other)
    }
}

/// The engine's archive: what it persists goes here, in one transaction per batch.
impl SessionArchive for Db {
    fn load(&self, roots: &[PathBuf]) -> Result<(Vec<PersistedSession>, Vec<Link>), ArchiveError> {
        let sessions = self.load_sessions(roots).map_err(|e| ArchiveError(e.into()))?;
        let links = self.load_links().map_err(|e| ArchiveError(e.into()))?;
        Ok((sessions, links))
    }

    fn rebuild(&self, reason: &str) {
        Db::rebuild(self, reason, SystemClock.now());
    }

    fn save(&self, batch: &Batch) -> Result<(), ArchiveError> {
        Db::save(self, batch, SystemClock.now()).map_err(|e| ArchiveError(e.into()))
    }

    fn checkpoint(&self) {
        Db::checkpoint(self);
    }
}

#[cfg(test)]
mod tests;

/// Why the file at `path` cannot be written, if it cannot: its mode says so (even where
/// root could write anyway, the file says it is not meant to be), or opening it for
/// writing fails (an immutable flag, a read-only filesystem). Nothing is written.
fn unwritable(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o200 == 0 {
        return Some(format!("the file is read-only, mode {mode:04o}; make it writable with chmod u+w"));
    }
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(_) => None,
        Err(e) => Some(format!("opening it for writing fails: {e}")),
    }
}
