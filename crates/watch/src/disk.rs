//! The store's I/O, in the watch layer: transcripts read on from their tails (and read
//! whole by the indexer, [`IndexedFile`]), `stat`s, settings files and git, answering what
//! the store asks ([`Disk`]). The store itself does none.

use std::cell::RefCell;
use std::path::Path;

// Keyed by our own session ids: a fast hasher (ids are validated).
use rustc_hash::FxHashMap as HashMap;

use mimesis_core::facts::SessionFacts;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::PersistedSession;
use mimesis_core::status::{Approval, Timeouts};
use mimesis_core::transcript;

use crate::permission_files::SettingsCache;
use crate::store::{Disk, IndexedFile, Store, TailInfo};
use crate::tail::{FileTail, LineSink, ReadOutcome};

impl IndexedFile {
    /// Reads a transcript from the start.
    pub fn read(location: TranscriptLocation) -> std::io::Result<IndexedFile> {
        let mut tail = FileTail::new(&location.path);
        let mut sink = FactsSink { facts: SessionFacts::default(), scratch: String::new() };
        tail.read_whole_into(&mut sink)?;
        sink.facts.shrink_to_fit();
        Ok(IndexedFile { location, tail, facts: sink.facts, partial: false, peeked: false, as_stored: false })
    }

    /// A previous run's session as it stands, when its file has not changed since: the same
    /// file (device and inode), exactly as long as the stored reading position. One `stat`,
    /// no read. Any other session is given back, to be read on ([`IndexedFile::resume`]).
    pub fn unchanged(mut p: PersistedSession) -> Result<IndexedFile, Box<PersistedSession>> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&p.location.path) else { return Err(Box::new(p)) };
        let same = meta.is_file() && (meta.dev(), meta.ino(), meta.len()) == (p.tail.dev, p.tail.ino, p.tail.offset);
        if !same {
            return Err(Box::new(p));
        }
        if let Some(d) = &p.dedup
            && p.facts.restore_dedup(d).is_none()
        {
            return Err(Box::new(p));
        }
        let mut tail = FileTail::resume(&p.location.path, p.tail);
        tail.mtime = meta.modified().ok();
        Ok(IndexedFile { location: p.location, tail, facts: p.facts, partial: false, peeked: false, as_stored: true })
    }

    /// Reads on from where a previous run stopped (the fleet database): only what was
    /// appended since, or the whole file again if it was replaced or shrank.
    pub fn resume(p: PersistedSession) -> std::io::Result<IndexedFile> {
        let location = p.location;
        let mut facts = p.facts;
        if let Some(d) = &p.dedup
            && facts.restore_dedup(d).is_none()
        {
            // Without its dedup sets the usage could count twice: read it all again.
            return IndexedFile::read(location);
        }
        let mut tail = FileTail::resume(&location.path, p.tail);
        let mut sink = FactsSink { facts, scratch: String::new() };
        match tail.read_into(&mut sink)? {
            ReadOutcome::Missing => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
            _ => {
                sink.facts.shrink_to_fit();
                Ok(IndexedFile { location, tail, facts: sink.facts, partial: false, peeked: false, as_stored: false })
            }
        }
    }
}

struct FactsSink {
    facts: SessionFacts,
    scratch: String,
}

impl LineSink for FactsSink {
    fn line(&mut self, line: &[u8]) {
        self.facts.apply_line_with(&crate::parse::SonicJson, line, &mut self.scratch);
    }
    fn reset(&mut self) {
        self.facts = SessionFacts::default();
    }
    fn mapped_line(&mut self, line: &[u8], copy: &mut Vec<u8>) {
        if transcript::is_blank(line) {
            return;
        }
        copy.clear();
        match transcript::skippable(line) {
            // A copy of an API request or of the system prompt (most of the bytes): only an
            // attachment's time is read, from its end (the whole record if its end has none).
            Some(kind @ transcript::Skipped::Request) => self.facts.apply_skipped(kind, &[]),
            Some(kind @ transcript::Skipped::Attachment) => {
                copy.extend_from_slice(&line[line.len().saturating_sub(SKIPPED_END)..]);
                if transcript::trailing_timestamp(copy).is_none() {
                    copy.clear();
                    copy.extend_from_slice(line);
                }
                self.facts.apply_skipped(kind, copy);
            }
            None => {
                copy.extend_from_slice(line);
                self.line(copy);
            }
        }
    }
}

/// How much of the end of a skipped record is copied to find its time.
const SKIPPED_END: usize = 4096;

/// The real disk: each session's tail, the settings files (parsed, re-read when a file's
/// stamp changes) and git.
pub struct Files {
    tails: HashMap<SessionId, FileTail>,
    settings: RefCell<SettingsCache>,
}

impl Files {
    pub fn new() -> Files {
        Files { tails: HashMap::default(), settings: RefCell::new(SettingsCache::new(dirs::home_dir())) }
    }
}

impl Default for Files {
    fn default() -> Self {
        Files::new()
    }
}

impl Disk for Files {
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn adopt(&mut self, id: &SessionId, tail: FileTail) -> TailInfo {
        let info = TailInfo::of(&tail);
        self.tails.insert(id.clone(), tail);
        info
    }

    fn read(
        &mut self,
        id: &SessionId,
        path: &Path,
        facts: &mut SessionFacts,
        info: &mut TailInfo,
    ) -> std::io::Result<ReadOutcome> {
        let tail = self.tails.entry(id.clone()).or_insert_with(|| FileTail::new(path));
        let mut sink = FactsSink { facts: std::mem::take(facts), scratch: String::new() };
        let outcome = tail.read_into(&mut sink);
        *facts = sink.facts;
        *info = TailInfo::of(tail);
        outcome
    }

    fn forget(&mut self, id: &SessionId) {
        self.tails.remove(id);
    }

    fn repo_root(&self, cwd: &Path) -> Option<String> {
        crate::git::repo_root(cwd).map(|p| p.to_string_lossy().into_owned())
    }

    fn approval(&self, root: &Path, cwd: Option<&Path>, tool: &str, target: &str, mode: Option<&str>) -> Approval {
        let mut settings = self.settings.borrow_mut();
        let rules = settings.rules_for(root, cwd);
        let ctx = settings.context(cwd.unwrap_or(Path::new("/")));
        rules.approval(tool, target, mode, &ctx)
    }
}

impl Store {
    /// A store whose files are the real disk's.
    pub fn new(timeouts: Timeouts) -> Self {
        Store::with_disk(timeouts, Box::new(Files::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A big transcript read through the map makes the same facts as read chunk by chunk:
    /// skipped records (an attachment's time near its end, or far from it), usage, a torn
    /// last line.
    #[test]
    fn a_mapped_read_makes_the_same_facts_as_a_chunked_one() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".claude");
        let dir = root.join("projects/-p");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a1b2.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let big = "y".repeat(30_000);
        writeln!(
            f,
            r#"{{"type":"user","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/p","message":{{"content":"the goal"}}}}"#
        )
        .unwrap();
        for i in 0..40 {
            writeln!(
                f,
                r#"{{"type":"api-request-shape","body":"{big}","timestamp":"2026-11-01T10:00:0{}.000Z"}}"#,
                i % 10
            )
            .unwrap();
            // An attachment's time at its end, and one whose time is far from its end.
            writeln!(f, r#"{{"parentUuid":null,"isSidechain":false,"attachment":{{"type":"prompt_snapshot","text":"{big}"}},"timestamp":"2026-11-02T10:{:02}:00.000Z"}}"#, i)
                .unwrap();
            writeln!(f, r#"{{"parentUuid":null,"isSidechain":false,"attachment":{{"type":"skill_listing","text":"x"}},"timestamp":"2026-11-03T10:{:02}:00.000Z","after":"{big}"}}"#, i)
                .unwrap();
            writeln!(f, r#"{{"type":"assistant","timestamp":"2026-11-01T10:01:00.000Z","requestId":"r{i}","message":{{"id":"m{i}","model":"claude-x","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":3,"output_tokens":{i}}}}}}}"#)
                .unwrap();
        }
        write!(f, r#"{{"type":"user","mess"#).unwrap();
        drop(f);
        let loc = TranscriptLocation::of(&root, &path).unwrap();

        let mapped = IndexedFile::read(loc).unwrap();
        let mut tail = FileTail::new(&path);
        let mut sink = FactsSink { facts: SessionFacts::default(), scratch: String::new() };
        tail.read_into(&mut sink).unwrap();
        sink.facts.shrink_to_fit();

        assert!(tail.offset() >= MAP_MIN_FOR_TEST, "big enough to be mapped");
        assert_eq!(serde_json::to_value(&mapped.facts).unwrap(), serde_json::to_value(&sink.facts).unwrap());
        assert_eq!(mapped.facts.usage.output_tokens, (0..40).sum::<u64>());
        assert_eq!(mapped.tail.state(), tail.state());
        assert_eq!(mapped.tail.stats, tail.stats);
        assert!(mapped.tail.has_partial());
        let last = mimesis_core::clock::Timestamp::parse("2026-11-03T10:39:00.000Z");
        assert_eq!(mapped.facts.last_activity, last, "an attachment's time far from its end");
    }

    const MAP_MIN_FOR_TEST: u64 = 256 * 1024;
}
