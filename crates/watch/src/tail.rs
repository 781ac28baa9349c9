//! Reading a growing JSONL file incrementally (SPEC W2).
//!
//! A [`FileTail`] remembers how far it has read. Each [`FileTail::read_new`] reads only
//! the bytes appended since, hands every complete line to the caller exactly once, and
//! holds a torn last line until its newline arrives. A file that shrank or was replaced
//! (new inode) is read again from the start, and the caller is told so it can forget
//! what it derived from the old content. A line longer than the cap is skipped without
//! ever being held in memory, and counted.

use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use mimesis_core::persist::TailState;

/// Lines longer than this are skipped (a base64 image paste is a few MB; 50 MB is not a record).
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

const CHUNK: usize = 256 * 1024;

/// A whole-file read of at least this many bytes goes through a memory map
/// ([`FileTail::read_whole_into`]); a smaller file takes one `read(2)` anyway.
const MAP_MIN: u64 = CHUNK as u64;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
}

/// What a read found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// New lines (possibly none) after what was read before.
    Appended,
    /// The file was truncated or replaced: everything derived from it must be forgotten;
    /// the lines handed out in this read start from the beginning of the new content.
    Reset,
    /// The file does not exist (any more).
    Missing,
}

/// Receives what a read finds. `reset` comes before any line of the new content.
pub trait LineSink {
    fn line(&mut self, line: &[u8]);
    /// The file was truncated or replaced: forget everything derived from it so far.
    fn reset(&mut self) {}
    /// A line read through a memory map ([`FileTail::read_whole_into`]): its bytes can
    /// change under the reader, so what is parsed is copied first (into `copy`). By
    /// default the whole line is; a sink that can tell from a line's first bytes that it
    /// needs little of it copies less.
    fn mapped_line(&mut self, line: &[u8], copy: &mut Vec<u8>) {
        copy.clear();
        copy.extend_from_slice(line);
        self.line(copy);
    }
}

/// A sink fed from a memory map: each line to [`LineSink::mapped_line`]. (A torn last line
/// is kept in the tail's own buffer by `feed`, never handed out from the map.)
struct Mapped<'s, S>(&'s mut S, &'s mut Vec<u8>);

impl<S: LineSink> LineSink for Mapped<'_, S> {
    fn line(&mut self, line: &[u8]) {
        self.0.mapped_line(line, self.1)
    }
}

struct FnSink<F>(F);

impl<F: FnMut(&[u8])> LineSink for FnSink<F> {
    fn line(&mut self, line: &[u8]) {
        (self.0)(line)
    }
}

/// Counters for one file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TailStats {
    pub bytes_read: u64,
    pub lines: u64,
    pub oversized_lines: u64,
    pub resets: u64,
}

#[derive(Debug)]
pub struct FileTail {
    path: PathBuf,
    identity: Option<Identity>,
    /// Bytes of the file consumed: complete lines, plus the held partial line.
    offset: u64,
    /// The torn last line, waiting for its newline.
    partial: Vec<u8>,
    /// The current line passed the cap: discard bytes until its newline.
    skipping: bool,
    max_line: usize,
    /// Modification time seen at the last read.
    pub mtime: Option<std::time::SystemTime>,
    pub stats: TailStats,
    /// Resumed at the end of a complete line: the file has one, though none was read here.
    resumed_past_a_line: bool,
}

impl FileTail {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::with_max_line(path, DEFAULT_MAX_LINE)
    }

    pub fn with_max_line(path: impl Into<PathBuf>, max_line: usize) -> Self {
        FileTail {
            path: path.into(),
            identity: None,
            offset: 0,
            partial: Vec::new(),
            skipping: false,
            max_line,
            mtime: None,
            stats: TailStats::default(),
            resumed_past_a_line: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A tail that goes on from `state`: the next read starts at its offset, or from the
    /// beginning if the file was replaced or shrank since.
    pub fn resume(path: impl Into<PathBuf>, state: TailState) -> Self {
        let mut t = FileTail::new(path);
        t.identity = Some(Identity { dev: state.dev, ino: state.ino });
        t.offset = state.offset;
        t.skipping = state.skipping;
        t.resumed_past_a_line = state.offset > 0 && !state.skipping;
        t.mtime = state.mtime_ms.and_then(|ms| {
            u64::try_from(ms).ok().map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        });
        t
    }

    /// Where this tail stands, if it has read the file at all. A held partial line is not
    /// included: it is read again on resume.
    pub fn state(&self) -> Option<TailState> {
        let id = self.identity?;
        let offset = if self.skipping { self.offset } else { self.offset - self.partial.len() as u64 };
        Some(TailState {
            offset,
            dev: id.dev,
            ino: id.ino,
            skipping: self.skipping,
            mtime_ms: self.mtime.map(|m| mimesis_core::clock::Timestamp::from_system_time(m).millis()),
        })
    }

    /// Has the file a complete line (read here, or before the position it resumed from)?
    pub fn has_lines(&self) -> bool {
        self.stats.lines > 0 || self.resumed_past_a_line
    }

    /// Bytes consumed so far (including a held partial line).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Is a torn line being held?
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty() || self.skipping
    }

    /// Reads what was appended since the last call, handing each complete line (without
    /// its `\n`) to `on_line`. See [`FileTail::read_into`] to be told of resets.
    pub fn read_new(&mut self, on_line: impl FnMut(&[u8])) -> io::Result<ReadOutcome> {
        self.read_into(&mut FnSink(on_line))
    }

    /// Reads what was appended since the last call into `sink`.
    pub fn read_into(&mut self, sink: &mut impl LineSink) -> io::Result<ReadOutcome> {
        self.read_with(sink, false)
    }

    /// [`FileTail::read_into`] for a tail that has read nothing yet, into a sink that holds
    /// nothing yet: a big file is read through a memory map (no copy of its bytes out of the
    /// page cache: most of a first index's CPU was that copy). Its lines go to
    /// [`LineSink::mapped_line`]. If the file shrinks meanwhile, the sink is reset and the
    /// file read again the usual way.
    pub fn read_whole_into(&mut self, sink: &mut impl LineSink) -> io::Result<ReadOutcome> {
        self.read_with(sink, true)
    }

    fn read_with(&mut self, sink: &mut impl LineSink, map: bool) -> io::Result<ReadOutcome> {
        // Nothing new (every file the store adopts from the index, most changes to a folder):
        // one `stat`, without opening the file (an open costs more, and is an event for
        // every watcher of the folder, ours too).
        if let Ok(meta) = std::fs::metadata(&self.path)
            && meta.is_file()
            && self.identity == Some(Identity { dev: meta.dev(), ino: meta.ino() })
            && meta.len() == self.offset
        {
            self.mtime = meta.modified().ok();
            return Ok(ReadOutcome::Appended);
        }
        // Only a regular file, opened without blocking: a FIFO named like a transcript
        // must never stall the reader.
        let mut file = match mimesis_os::files::open_regular(&self.path, mimesis_os::files::Links::Follow) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ReadOutcome::Missing),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let id = Identity { dev: meta.dev(), ino: meta.ino() };
        let mut outcome = ReadOutcome::Appended;
        let replaced = self.identity.is_some_and(|old| old != id);
        if replaced || meta.len() < self.offset {
            self.offset = 0;
            self.partial.clear();
            self.skipping = false;
            self.stats.resets += 1;
            self.resumed_past_a_line = false;
            outcome = ReadOutcome::Reset;
            sink.reset();
        }
        self.identity = Some(id);
        self.mtime = meta.modified().ok();
        if meta.len() == self.offset {
            return Ok(outcome);
        }
        if map && self.offset == 0 && meta.len() >= MAP_MIN {
            let stats = self.stats;
            let mut copy = Vec::new();
            let len = usize::try_from(meta.len()).map_err(io::Error::other)?;
            let read =
                mimesis_os::mapped::read_mapped(&file, len, |bytes| self.feed(bytes, &mut Mapped(sink, &mut copy)));
            if let Ok(Some(())) = read {
                self.offset = meta.len();
                self.stats.bytes_read += meta.len();
                self.keep_partial_small();
                return Ok(outcome);
            }
            // It shrank while it was read (or could not be mapped): the usual way.
            self.stats = stats;
            self.partial = Vec::new();
            self.skipping = false;
            sink.reset();
        }
        file.seek(SeekFrom::Start(self.offset))?;
        // One read buffer per thread, reused: a fresh zeroed 256 KB per file read cost
        // a memset of 768 MB to index 3,000 sessions.
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
        buf.resize(CHUNK, 0);
        let result = loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            };
            self.offset += n as u64;
            self.stats.bytes_read += n as u64;
            self.feed(&buf[..n], sink);
        };
        BUF.with(|b| *b.borrow_mut() = buf);
        result?;
        self.keep_partial_small();
        Ok(outcome)
    }

    /// A line that crossed a chunk boundary grew the buffer to its length (2.1.330 writes
    /// 40–70 KB records): keep only what a torn last line needs, not that capacity for
    /// every file followed (it was most of the index's peak memory).
    fn keep_partial_small(&mut self) {
        if self.partial.is_empty() {
            self.partial = Vec::new();
        } else {
            self.partial.shrink_to_fit();
        }
    }

    fn feed(&mut self, mut chunk: &[u8], sink: &mut impl LineSink) {
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    let (line, rest) = (&chunk[..i], &chunk[i + 1..]);
                    chunk = rest;
                    if self.skipping {
                        self.skipping = false;
                        continue;
                    }
                    self.stats.lines += 1;
                    if self.partial.is_empty() {
                        if line.len() > self.max_line {
                            self.oversized();
                        } else {
                            sink.line(line);
                        }
                    } else if self.partial.len() + line.len() > self.max_line {
                        self.partial = Vec::new();
                        self.oversized();
                    } else {
                        self.partial.extend_from_slice(line);
                        sink.line(&self.partial);
                        self.partial.clear();
                    }
                }
                None => {
                    if !self.skipping {
                        if self.partial.len() + chunk.len() > self.max_line {
                            self.partial = Vec::new();
                            self.skipping = true;
                            self.stats.lines += 1;
                            self.oversized();
                        } else {
                            self.partial.extend_from_slice(chunk);
                        }
                    }
                    chunk = &[];
                }
            }
        }
    }

    fn oversized(&mut self) {
        self.stats.oversized_lines += 1;
        tracing::warn!(
            path = %self.path.display(),
            max_bytes = self.max_line,
            "skipped a transcript line longer than the cap"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn collect(t: &mut FileTail) -> (ReadOutcome, Vec<String>) {
        let mut v = Vec::new();
        let o = t.read_new(|l| v.push(String::from_utf8_lossy(l).into_owned())).unwrap();
        (o, v)
    }

    fn append(p: &Path, s: &[u8]) {
        std::fs::OpenOptions::new().append(true).create(true).open(p).unwrap().write_all(s).unwrap();
    }

    #[test]
    fn a_long_line_across_chunks_leaves_no_buffer_behind() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let long = "x".repeat(CHUNK * 2 + 17);
        append(&p, format!("{long}\nshort\n").as_bytes());
        let mut t = FileTail::new(&p);
        let (_, lines) = collect(&mut t);
        assert_eq!(lines.len(), 2);
        assert_eq!(t.partial.capacity(), 0, "nothing kept for a file read to a line's end");
        // A torn last line is kept, at its own size.
        append(&p, long.as_bytes());
        assert!(collect(&mut t).1.is_empty());
        assert_eq!(t.partial.len(), long.len());
        assert!(t.partial.capacity() < long.len() + CHUNK, "{}", t.partial.capacity());
    }

    #[test]
    fn reads_each_line_once_and_holds_torn_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        append(&p, b"a\nb\npar");
        let mut t = FileTail::new(&p);
        assert_eq!(collect(&mut t), (ReadOutcome::Appended, vec!["a".into(), "b".into()]));
        assert!(t.has_partial());
        assert_eq!(collect(&mut t).1, Vec::<String>::new());
        append(&p, b"tial\nc\n");
        assert_eq!(collect(&mut t).1, vec!["partial".to_string(), "c".into()]);
        assert!(!t.has_partial());
    }

    #[test]
    fn truncation_and_replacement_reset() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        append(&p, b"one\ntwo\n");
        let mut t = FileTail::new(&p);
        collect(&mut t);
        std::fs::write(&p, b"x\n").unwrap();
        assert_eq!(collect(&mut t), (ReadOutcome::Reset, vec!["x".into()]));
        let tmp = d.path().join("tmp");
        std::fs::write(&tmp, b"new1\nnew2\n").unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert_eq!(collect(&mut t), (ReadOutcome::Reset, vec!["new1".into(), "new2".into()]));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(collect(&mut t).0, ReadOutcome::Missing);
    }

    #[test]
    fn a_resumed_tail_reads_only_what_came_after() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        append(&p, b"a\nb\npar");
        let mut t = FileTail::new(&p);
        collect(&mut t);
        let state = t.state().unwrap();
        assert_eq!(state.offset, 4, "the partial line is read again");
        append(&p, b"tial\n");
        let mut r = FileTail::resume(&p, state);
        assert_eq!(collect(&mut r), (ReadOutcome::Appended, vec!["partial".to_string()]));
        assert_eq!(r.stats.bytes_read, 8);
        // Replaced since: read from the start.
        let tmp = d.path().join("tmp");
        std::fs::write(&tmp, b"new\n").unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        let mut r = FileTail::resume(&p, state);
        assert_eq!(collect(&mut r), (ReadOutcome::Reset, vec!["new".to_string()]));
    }

    #[test]
    fn a_tail_resumed_past_a_line_knows_the_file_has_one_until_it_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        append(&p, b"a\n");
        let mut t = FileTail::new(&p);
        assert!(!t.has_lines());
        collect(&mut t);
        assert!(t.has_lines());
        let state = t.state().unwrap();
        let mut r = FileTail::resume(&p, state);
        assert!(r.has_lines(), "nothing read here, but the file has a line");
        assert!(!FileTail::resume(&p, TailState { offset: 0, ..state }).has_lines());
        assert!(!FileTail::resume(&p, TailState { skipping: true, ..state }).has_lines(), "only a skipped line");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(collect(&mut r).0, ReadOutcome::Reset);
        assert!(!r.has_lines(), "emptied: no line any more");
    }

    #[test]
    fn oversized_lines_are_skipped_without_being_held() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let mut t = FileTail::with_max_line(&p, 10);
        append(&p, b"ok\n");
        append(&p, &[b'x'; 25]);
        assert_eq!(collect(&mut t).1, vec!["ok".to_string()]);
        assert_eq!(t.partial.capacity(), 0, "nothing of the long line is held");
        append(&p, &[b'y'; 25]);
        append(&p, b"\nafter\n");
        assert_eq!(collect(&mut t).1, vec!["after".to_string()]);
        assert_eq!(t.stats.oversized_lines, 1);
        append(&p, &[b'z'; 30]);
        append(&p, b"\n");
        assert_eq!(collect(&mut t).1, Vec::<String>::new());
        assert_eq!(t.stats.oversized_lines, 2);
    }
}
