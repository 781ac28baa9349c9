//! What crosses between the engine and the fleet database (SPEC W8), as plain data: a
//! session's facts with its reading position, the chain links, and the seam
//! ([`SessionArchive`]) the engine persists through. The database itself is
//! `mimesis-fleetdb`; the engine (`mimesis-watch`) never names it.

use crate::chain::Link;
use crate::facts::SessionFacts;
use crate::ids::SessionId;
use crate::layout::TranscriptLocation;
use crate::session::TrackedSession;

/// Where a tail stopped, to resume it in another run (the fleet database keeps this):
/// the offset just past the last complete line and the file's identity.
#[derive(serde::Serialize, serde::Deserialize, Copy, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TailState {
    pub offset: u64,
    pub dev: u64,
    pub ino: u64,
    /// An oversized line was being skipped at `offset`.
    pub skipping: bool,
    pub mtime_ms: Option<i64>,
}

/// One session as persisted: enough to show its row and to read on from where it stopped.
#[derive(Clone, Debug)]
pub struct PersistedSession {
    pub location: TranscriptLocation,
    pub tail: TailState,
    /// Facts without their dedup sets while `dedup` holds them still encoded (a load
    /// decodes them only for the files it reads on).
    pub facts: SessionFacts,
    pub dedup: Option<Vec<u8>>,
    /// The last row published (stored for other readers; not loaded back).
    pub row: Option<TrackedSession>,
}

/// What the engine writes in one transaction.
#[derive(Default, Debug)]
pub struct Batch {
    pub sessions: Vec<PersistedSession>,
    pub removed: Vec<SessionId>,
    pub links: Vec<Link>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.removed.is_empty() && self.links.is_empty()
    }
}

/// Where the engine keeps what it learnt between runs. Called from blocking threads;
/// never fatal: an implementation that cannot do its job logs it and carries on.
pub trait SessionArchive: Send + Sync {
    /// What was kept for sessions under `roots`, and every chain link. An error means the
    /// archive is unusable: the engine then asks for [`SessionArchive::rebuild`] and
    /// reads every transcript from scratch.
    fn load(&self, roots: &[std::path::PathBuf]) -> Result<(Vec<PersistedSession>, Vec<Link>), ArchiveError>;
    /// Starts again empty, saying why.
    fn rebuild(&self, reason: &str);
    /// Writes one batch (in one transaction where the archive has them).
    fn save(&self, batch: &Batch) -> Result<(), ArchiveError>;
    /// Makes what was saved durable (called at shutdown).
    fn checkpoint(&self);
}

/// Why an archive could not load or save: the implementation's own error (SQLite's, for
/// the roster database), whose sentence is the Display.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ArchiveError(pub Box<dyn std::error::Error + Send + Sync>);
