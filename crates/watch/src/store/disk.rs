//! What the store asks of the disk. The store does no I/O: the watch layer answers
//! ([`crate::disk::Files`]: the transcripts' tails, `stat`, settings files, git), and
//! reads files for the index ([`IndexedFile`]'s constructors are there too).

use std::path::Path;

use mimesis_core::clock::Timestamp;
use mimesis_core::facts::SessionFacts;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::TailState;
use mimesis_core::status::Approval;

use crate::tail::{FileTail, ReadOutcome, TailStats};

/// Where the reading of a session's transcript stands: what the store needs of it for the
/// session's row and for the fleet database.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TailInfo {
    /// The reading position to store (none before the file was read at all).
    pub state: Option<TailState>,
    /// The file has a complete line.
    pub has_lines: bool,
    /// The file's modification time at the last read.
    pub mtime: Option<Timestamp>,
    pub stats: TailStats,
}

impl TailInfo {
    pub fn of(tail: &FileTail) -> TailInfo {
        TailInfo {
            state: tail.state(),
            has_lines: tail.has_lines(),
            mtime: tail.mtime.map(Timestamp::from_system_time),
            stats: tail.stats,
        }
    }
}

/// The questions the store asks of files, answered outside it.
pub trait Disk: Send {
    /// Does `path` exist now?
    fn exists(&self, path: &Path) -> bool;
    /// Takes over the reading position of an indexed file of session `id`.
    fn adopt(&mut self, id: &SessionId, tail: FileTail) -> TailInfo;
    /// Reads what was appended to the transcript of `id` at `path` into `facts` (reset
    /// first when the file was replaced or shrank), and says where the reading stands.
    fn read(
        &mut self,
        id: &SessionId,
        path: &Path,
        facts: &mut SessionFacts,
        tail: &mut TailInfo,
    ) -> std::io::Result<ReadOutcome>;
    /// The session `id` is gone: its reading position too.
    fn forget(&mut self, id: &SessionId);
    /// The git repository root of `cwd`, if any.
    fn repo_root(&self, cwd: &Path) -> Option<String>;
    /// What the settings files (of `root`, of `cwd`, managed) say of a call of `tool` on
    /// `target` in permission mode `mode`.
    fn approval(&self, root: &Path, cwd: Option<&Path>, tool: &str, target: &str, mode: Option<&str>) -> Approval;
}

/// A transcript read by the indexer, ready to be adopted by the store.
pub struct IndexedFile {
    pub location: TranscriptLocation,
    pub tail: FileTail,
    pub facts: SessionFacts,
    /// Only both ends were read ([`crate::scan::peek`]): the facts are a first guess and
    /// the tail is no reading position. The store waits for the full read.
    pub partial: bool,
    /// The facts are a guess from the file's ends ([`crate::scan::peek`]), not a stored
    /// full read: its row is provisional.
    pub peeked: bool,
    /// The file is exactly as the fleet database holds it ([`IndexedFile::unchanged`]): the
    /// store neither opens it again nor writes it back. (Its folder is watched before the
    /// `stat`, and changes wait for the end of the index: a later write is read on then.)
    pub as_stored: bool,
}
