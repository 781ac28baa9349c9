//! The search index (issue 35): every transcript's text in SQLite FTS5, in the data dir,
//! kept up to date by reading only what was appended since the last look, and the
//! queries over it. What a search is and what it finds (the query language, snippets,
//! the documents of a record) is pure and lives in `mimesis_core::search`.
//!
//! Why FTS5: it is already in the build (rusqlite's bundled SQLite has it), it is an
//! inverted index made for exactly this (words, phrases, prefixes, NOT), it keeps the
//! index in one file beside the fleet database with SQLite's transactions (a crash
//! mid-build leaves the last commit, not a broken index), and several processes (the
//! app, each `mimesis search`) can read and extend it at once under SQLite's locks.
//!
//! The index keeps no text: it is contentless (`content=''`), and a hit's snippet is cut
//! from the transcript's own line, found again by its byte offset. Each document has its
//! text in the column of its kind (a `--kind` is a column filter) and its session's project
//! folder in `project` (a `--project` is a phrase in that column). Each document's rowid
//! is its time (`millis << 10` plus a few bits to keep them apart), so "most recent
//! first" is FTS5 walking its posting lists backwards and stopping at the limit. Every
//! word indexed is also kept in `terms`, so a prefix (`refact*`) is queried as the words
//! it stands for: FTS5 reads a prefix's every document before its first hit, its words
//! lazily, newest first, like any word.

mod build;
mod find;
mod fold;
mod words;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension};

pub use build::Updated;

/// The index's file in the data dir.
pub const FILE_NAME: &str = "search.db";
/// Bumped when the schema or what is indexed changes: an index of another version is
/// built anew.
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        project TEXT NOT NULL,
        indexed INTEGER NOT NULL,
        seen_len INTEGER NOT NULL,
        seen_mtime INTEGER NOT NULL
    );
    CREATE TABLE docs (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        len INTEGER NOT NULL,
        part INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        uuid TEXT NOT NULL,
        tool_use_id TEXT
    );
    CREATE INDEX docs_call ON docs (tool_use_id) WHERE kind = 2;
    CREATE TABLE touched (rpath TEXT NOT NULL, doc INTEGER NOT NULL, op INTEGER NOT NULL,
        PRIMARY KEY (rpath, doc)) WITHOUT ROWID;
    -- Every word of the text indexed, lower case (a prefix query is read as its words; a
    -- long word as its stub, `term_of`).
    CREATE TABLE terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE VIRTUAL TABLE fts USING fts5(prompt, reply, tool_call, tool_result, thinking, project,
        content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');
    -- Fewer, bigger segments while building: less merging (16 MB of terms in memory at most).
    INSERT INTO fts (fts, rank) VALUES ('hashsize', 16777216);
    INSERT INTO fts (fts, rank) VALUES ('automerge', 8);
";

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the search index {} cannot be opened: {source}", path.display())]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("the search index failed: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The request itself is wrong (a sentence for the user).
    #[error("{0}")]
    Request(String),
}

impl IndexError {
    /// The index's file is damaged (not a database, or corrupt): it should be built anew.
    pub fn is_damage(&self) -> bool {
        let sql = match self {
            IndexError::Open { source, .. } | IndexError::Sql(source) => source,
            IndexError::Request(_) => return false,
        };
        matches!(sql.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase))
    }
}

/// The search index of one data dir.
pub struct Index {
    conn: Connection,
    path: PathBuf,
    /// What a bulk update reads at least (`build::BULK_BYTES`; tests lower it).
    bulk_bytes: u64,
}

/// What the doctor says about the index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    pub exists: bool,
    pub files: u64,
    pub docs: u64,
    pub bytes: u64,
    /// Why it was last built from nothing ("first build", or what was wrong with the one
    /// before), and when (RFC 3339).
    pub built: Option<(String, String)>,
    /// It cannot be read (it will be built anew by the next search).
    pub problem: Option<String>,
}

fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

impl Index {
    /// Opens the index of `data_dir`, creating it when there is none and building it anew
    /// when it is damaged or of another version (`now` is recorded with why).
    pub fn open(data_dir: &Path, now: &str) -> Result<Index, IndexError> {
        let path = data_dir.join(FILE_NAME);
        match Self::try_open(&path, now) {
            Ok(ix) => Ok(ix),
            Err(Reopen::Damaged(why)) => Self::rebuild(data_dir, &why, now),
            Err(Reopen::Failed(e)) => Err(e),
        }
    }

    /// Throws the index away and starts a new one, recording why.
    pub fn rebuild(data_dir: &Path, why: &str, now: &str) -> Result<Index, IndexError> {
        let path = data_dir.join(FILE_NAME);
        tracing::warn!(path = %path.display(), why, "building the search index anew");
        remove_files(&path);
        let ix = Self::try_open(&path, now).map_err(|e| match e {
            Reopen::Failed(e) => e,
            Reopen::Damaged(why) => IndexError::Request(format!("the new search index is unusable: {why}")),
        })?;
        ix.set_meta("built_reason", why)?;
        Ok(ix)
    }

    fn try_open(path: &Path, now: &str) -> Result<Index, Reopen> {
        let failed = |source| Reopen::Failed(IndexError::Open { path: path.to_owned(), source });
        // The history is the user's alone: 0600 like every file of the data dir.
        if let Err(e) = mimesis_os::private::sqlite_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot make the search index private");
        }
        let conn = Connection::open(path).map_err(failed)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(failed)?;
        let damaged = |e: rusqlite::Error| {
            if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)) {
                Reopen::Damaged(format!("the index was damaged ({e})"))
            } else {
                Reopen::Failed(IndexError::Open { path: path.to_owned(), source: e })
            }
        };
        // A bigger page cache than SQLite's 2 MB: documents arrive in time order per
        // transcript, not overall, so a first build touches pages all over the tables.
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;")
            .map_err(damaged)?;
        let ix = Index { conn, path: path.to_owned(), bulk_bytes: build::BULK_BYTES };
        let version: i64 = ix.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(damaged)?;
        if version == 0 {
            ix.conn.execute_batch("BEGIN IMMEDIATE").map_err(damaged)?;
            let made = (|| {
                let version: i64 = ix.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                if version == 0 {
                    ix.conn.execute_batch(SCHEMA)?;
                    ix.conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
                    ix.set_meta("built_at", now)?;
                    ix.set_meta("built_reason", "first build")?;
                }
                ix.conn.execute_batch("COMMIT")
            })();
            if let Err(e) = made {
                let _ = ix.conn.execute_batch("ROLLBACK");
                return Err(damaged(e));
            }
        } else if version != SCHEMA_VERSION {
            return Err(Reopen::Damaged("the index was made by another version of Mimesis".into()));
        }
        ix.conn.query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0)).map_err(damaged)?;
        Ok(ix)
    }

    /// Whether `terms` lacks words of the index (a bulk update wrote documents and has
    /// not filled it yet): a prefix is then read by FTS5 itself.
    pub(crate) fn terms_stale(&self) -> rusqlite::Result<bool> {
        let mut st = self.conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'terms_stale')")?;
        st.query_row([], |r| r.get(0))
    }

    fn set_meta(&self, key: &str, value: &str) -> rusqlite::Result<()> {
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", (key, value))?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the doctor says about the index of `data_dir`, without changing it.
    pub fn status(data_dir: &Path) -> Status {
        let path = data_dir.join(FILE_NAME);
        let Ok(md) = std::fs::metadata(&path) else { return Status::default() };
        let mut st = Status { exists: true, bytes: md.len(), ..Status::default() };
        let read = || -> rusqlite::Result<Counts> {
            let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
            conn.busy_timeout(Duration::from_secs(2))?;
            let files = conn.query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0))? as u64;
            let docs = conn.query_row("SELECT count(*) FROM docs", [], |r| r.get::<_, i64>(0))? as u64;
            let get = |k: &str| -> rusqlite::Result<Option<String>> {
                conn.query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0)).optional()
            };
            let built = get("built_reason")?.zip(get("built_at")?);
            Ok((files, docs, built))
        };
        match read() {
            Ok((files, docs, built)) => {
                st.files = files;
                st.docs = docs;
                st.built = built;
            }
            Err(e) => st.problem = Some(format!("cannot be read ({e}); the next search builds it anew")),
        }
        st
    }
}

/// Transcripts, documents, and why and when the index was built.
type Counts = (u64, u64, Option<(String, String)>);

enum Reopen {
    Damaged(String),
    Failed(IndexError),
}

/// Longer words are kept in `terms` as their stub: the first [`STUB_CHARS`] characters
/// followed by [`LONG`] (hashes, base64: few are searched by a prefix, and a prefix that
/// meets a stub is read by FTS5 itself).
pub(crate) const MAX_TERM_BYTES: usize = 64;
pub(crate) const STUB_CHARS: usize = 32;
pub(crate) const LONG: char = '\u{10FFFF}';

/// What `terms` keeps of a lower-case word: itself, or its stub when longer than
/// [`MAX_TERM_BYTES`].
pub(crate) fn term_of(w: &str) -> std::borrow::Cow<'_, str> {
    if w.len() <= MAX_TERM_BYTES {
        return w.into();
    }
    let end = w.char_indices().nth(STUB_CHARS).map_or(w.len(), |(i, _)| i);
    format!("{}{LONG}", &w[..end]).into()
}

/// A document's rowid: its time in the high bits, so rowid order is time order.
pub(crate) fn id_base(at_ms: i64) -> i64 {
    at_ms.clamp(0, i64::MAX >> 11) << 10
}

/// The time of a document from its rowid.
pub(crate) fn id_time(id: i64) -> i64 {
    id >> 10
}

#[cfg(test)]
mod tests;
