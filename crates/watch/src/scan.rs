//! Finding transcripts under the config roots and indexing them in parallel (the cold
//! start of SPEC W2).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use mimesis_core::facts::SessionFacts;
use mimesis_core::layout::{self as roots, TranscriptLocation};
use mimesis_core::persist::PersistedSession;

use crate::store::IndexedFile;
use crate::tail::FileTail;

/// How much of each end of a transcript a peek reads.
const PEEK_HEAD: usize = 32 * 1024;
const PEEK_TAIL: usize = 32 * 1024;
/// A tail window with no complete record is widened up to this.
const PEEK_TAIL_MAX: usize = 1024 * 1024;

/// Every session transcript under `root` (`projects/<project>/<id>.jsonl`). Unreadable
/// folders are logged and skipped.
pub fn discover(root: &Path) -> Vec<TranscriptLocation> {
    let mut out = Vec::new();
    let projects = roots::projects_dir(root);
    let rd = match std::fs::read_dir(&projects) {
        Ok(rd) => rd,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %projects.display(), error = %e, "cannot list projects");
            }
            return out;
        }
    };
    for project in rd.filter_map(Result::ok) {
        if project.file_type().is_ok_and(|t| t.is_dir()) {
            discover_project(root, &project.path(), &mut out);
        }
    }
    out
}

/// The session transcripts directly inside one project folder.
pub fn discover_project(root: &Path, dir: &Path, out: &mut Vec<TranscriptLocation>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            tracing::warn!(path = %dir.display(), error = %e, "cannot list project folder");
            return;
        }
    };
    for f in rd.filter_map(Result::ok) {
        if f.file_type().is_ok_and(|t| t.is_file())
            && let Some(loc) = TranscriptLocation::of(root, &f.path())
        {
            out.push(loc);
        }
    }
}

/// Reads every transcript of every root, in parallel, biggest first so the threads
/// finish together.
pub fn index(roots: &[PathBuf]) -> Vec<IndexedFile> {
    index_locations(biggest_first(roots))
}

/// Every transcript of every root, biggest first.
fn biggest_first(roots: &[PathBuf]) -> Vec<TranscriptLocation> {
    let mut locations: Vec<(u64, TranscriptLocation)> = roots
        .iter()
        .flat_map(|r| discover(r))
        .map(|l| (std::fs::metadata(&l.path).map(|m| m.len()).unwrap_or(0), l))
        .collect();
    locations.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    locations.into_iter().map(|(_, l)| l).collect()
}

/// Read files go to [`index_each`]'s sink in batches of this many (one wake-up of the sink
/// per batch, not per file), at most [`BATCHES_WAITING`] batches waiting.
const BATCH: usize = 8;
const BATCHES_WAITING: usize = 2;

/// Like [`index`], but each file goes to `sink` on the calling thread soon after it is
/// read, while the others are still being read: memory holds what the sink keeps plus a
/// few dozen read files, whatever the number of transcripts, and the sink's work overlaps
/// the reading. The order is the order the reads finish in.
pub fn index_each(roots: &[PathBuf], sink: impl FnMut(IndexedFile)) {
    index_each_in(roots, None, sink)
}

/// Like [`index_each`], with the reads on the threads of `pool` (else rayon's global pool).
pub fn index_each_in(roots: &[PathBuf], pool: Option<&rayon::ThreadPool>, mut sink: impl FnMut(IndexedFile)) {
    let locations = biggest_first(roots);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<IndexedFile>>(BATCHES_WAITING);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let read = move || {
                locations.into_par_iter().for_each_init(
                    || Batcher { files: Vec::with_capacity(BATCH), tx: tx.clone() },
                    |batch, loc| {
                        if let Some(f) = read_logged(loc) {
                            batch.files.push(f);
                            if batch.files.len() == BATCH {
                                batch.send();
                            }
                        }
                    },
                )
            };
            match pool {
                Some(pool) => pool.install(read),
                None => read(),
            }
        });
        for files in rx {
            files.into_iter().for_each(&mut sink);
        }
    });
}

/// One rayon job's read files on their way to the sink; what is left goes when the job
/// ends.
struct Batcher {
    files: Vec<IndexedFile>,
    tx: std::sync::mpsc::SyncSender<Vec<IndexedFile>>,
}

impl Batcher {
    fn send(&mut self) {
        let files = std::mem::replace(&mut self.files, Vec::with_capacity(BATCH));
        // (A sink that is gone panicked: the scope reports it.)
        let _ = self.tx.send(files);
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        if !self.files.is_empty() {
            self.send();
        }
    }
}

fn read_logged(loc: TranscriptLocation) -> Option<IndexedFile> {
    let path = loc.path.clone();
    match IndexedFile::read(loc) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read transcript");
            None
        }
    }
}

/// Like [`index`], but a file the fleet database knows is read on from where the last
/// run stopped (only what was appended since); the others are read in full. The files in
/// `done` are left out (found unchanged, they are ready already: [`split_unchanged`]).
pub fn index_resuming(
    roots: &[PathBuf],
    persisted: Vec<PersistedSession>,
    done: &HashSet<PathBuf>,
) -> Vec<IndexedFile> {
    let mut known: HashMap<PathBuf, PersistedSession> =
        persisted.into_iter().map(|p| (p.location.path.clone(), p)).collect();
    let work: Vec<(TranscriptLocation, Option<PersistedSession>)> = roots
        .iter()
        .flat_map(|r| discover(r))
        .filter(|l| !done.contains(&l.path))
        .map(|l| {
            let p = known.remove(&l.path).filter(|p| p.location.session_id == l.session_id);
            (l, p)
        })
        .collect();
    work.into_par_iter()
        .filter_map(|(loc, p)| {
            let path = loc.path.clone();
            let result = match p {
                Some(p) => IndexedFile::resume(p),
                None => IndexedFile::read(loc),
            };
            match result {
                Ok(f) => Some(f),
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(path = %path.display(), error = %e, "cannot read transcript");
                    }
                    None
                }
            }
        })
        .collect()
}

/// A previous run's sessions, split into those whose file has not changed since (ready
/// as they are: [`IndexedFile::unchanged`]) and those to read on. One `stat` per file.
pub fn split_unchanged(persisted: Vec<PersistedSession>) -> (Vec<IndexedFile>, Vec<PersistedSession>) {
    let mut ready = Vec::with_capacity(persisted.len());
    let mut rest = Vec::new();
    for p in persisted {
        match IndexedFile::unchanged(p) {
            Ok(f) => ready.push(f),
            Err(p) => rest.push(*p),
        }
    }
    (ready, rest)
}

/// Reads the given transcripts in parallel. Files that vanish meanwhile are skipped.
pub fn index_locations(locations: Vec<TranscriptLocation>) -> Vec<IndexedFile> {
    locations.into_par_iter().filter_map(read_logged).collect()
}

/// Every transcript of every root, read only at both ends: enough for a first roster
/// (cwd, goal, status, pending tool, last activity, model) in a fraction of the time of
/// a full read. Usage and compaction counts are partial until the full index replaces it.
pub fn peek(roots: &[PathBuf]) -> Vec<IndexedFile> {
    let locations: Vec<TranscriptLocation> = roots.iter().flat_map(|r| discover(r)).collect();
    locations.into_par_iter().filter_map(|loc| peek_file(loc).ok()).collect()
}

/// Reads the first and last few KB of one transcript into (partial) facts. A file that
/// small is simply read in full.
pub fn peek_file(location: TranscriptLocation) -> std::io::Result<IndexedFile> {
    let mut file = mimesis_os::files::open_regular(&location.path, mimesis_os::files::Links::Follow)?;
    let len = file.metadata()?.len() as usize;
    if len <= PEEK_HEAD + PEEK_TAIL {
        return IndexedFile::read(location);
    }
    let mut facts = SessionFacts::default();
    let mut scratch = String::new();
    let mut apply_complete_lines = |bytes: &[u8], facts: &mut SessionFacts| {
        // Only lines with their newline: a cut line is not a record. (memchr: a byte-by-byte
        // search of both ends of 2,000 files took as long as the rest of the peek.)
        if let Some(end) = memchr::memrchr(b'\n', bytes) {
            let mut rest = &bytes[..=end];
            while let Some(i) = memchr::memchr(b'\n', rest) {
                facts.apply_line_with(&crate::parse::SonicJson, &rest[..i], &mut scratch);
                rest = &rest[i + 1..];
            }
        }
    };
    // One buffer per thread for both ends, reused: two fresh zeroed windows per file were a
    // memset of 128 MB to peek at 2,000 transcripts.
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let read = peek_ends(&mut file, len, &mut buf, &mut |bytes| apply_complete_lines(bytes, &mut facts));
    if buf.capacity() <= PEEK_HEAD.max(PEEK_TAIL) {
        BUF.with(|b| *b.borrow_mut() = buf);
    }
    read?;
    Ok(IndexedFile {
        location,
        tail: FileTail::new(PathBuf::new()),
        facts,
        partial: true,
        peeked: true,
        as_stored: false,
    })
}

/// Reads the head of `file` (`len` bytes long) and then its tail into `buf`, handing each
/// window's complete lines to `apply` (the tail's from the first line that starts in it).
fn peek_ends(
    file: &mut std::fs::File,
    len: usize,
    buf: &mut Vec<u8>,
    apply: &mut impl FnMut(&[u8]),
) -> std::io::Result<()> {
    buf.resize(PEEK_HEAD, 0);
    file.read_exact(buf)?;
    apply(buf);
    let mut window = PEEK_TAIL;
    loop {
        let start = len.saturating_sub(window).max(PEEK_HEAD);
        buf.resize(len - start, 0);
        file.seek(SeekFrom::Start(start as u64))?;
        file.read_exact(buf)?;
        let tail = &buf[..];
        // The window starts mid-line: skip to the first line that starts inside it.
        let first = memchr::memchr(b'\n', tail).map(|i| i + 1);
        let has_record = first.is_some_and(|f| memchr::memchr(b'\n', &tail[f..]).is_some());
        if has_record || window >= PEEK_TAIL_MAX || start == PEEK_HEAD {
            if let Some(f) = first {
                apply(&tail[f..]);
            }
            return Ok(());
        }
        window *= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::status::Tail;
    use std::io::Write;

    #[test]
    fn streaming_the_index_hands_over_every_file_once_as_the_collected_index_does() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".claude");
        let n = BATCH * BATCHES_WAITING * 20 + 3;
        for i in 0..n {
            let dir = root.join(format!("projects/-p{}", i % 3));
            std::fs::create_dir_all(&dir).unwrap();
            let rec = serde_json::json!({"type":"user","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/p",
                "message":{"content": format!("goal {i}")}});
            std::fs::write(dir.join(format!("s{i:04}.jsonl")), format!("{rec}\n").repeat(i % 7 + 1)).unwrap();
        }
        let roots = [root];
        let mut streamed = Vec::new();
        index_each(&roots, |f| streamed.push((f.location.session_id.to_string(), f.facts.goal().map(str::to_owned))));
        let mut collected: Vec<_> = index(&roots)
            .into_iter()
            .map(|f| (f.location.session_id.to_string(), f.facts.goal().map(str::to_owned)))
            .collect();
        streamed.sort();
        collected.sort();
        assert_eq!(streamed.len(), n);
        assert_eq!(streamed, collected);
    }

    #[test]
    fn a_peek_reads_the_goal_from_the_head_and_the_state_from_the_tail() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".claude");
        let dir = root.join("projects/-p");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a1b2.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let rec = |v: serde_json::Value| format!("{v}\n");
        write!(f, "{}", rec(serde_json::json!({"type":"user","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/p","message":{"content":"the goal"}}))).unwrap();
        let filler = "x".repeat(2000);
        for i in 0..200 {
            let v = serde_json::json!({"type":"assistant","timestamp":"2026-11-01T10:00:01.000Z","requestId":format!("r{i}"),
                "message":{"id":format!("m{i}"),"model":"claude-x","content":[{"type":"text","text":filler}],"usage":{"output_tokens":1}}});
            write!(f, "{}", rec(v)).unwrap();
        }
        let last = serde_json::json!({"type":"assistant","timestamp":"2026-11-01T10:05:00.000Z","message":{"id":"mz","model":"claude-y",
            "content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cargo test"}}]}});
        write!(f, "{}", rec(last)).unwrap();
        // A torn last line: not a record yet.
        write!(f, "{{\"type\":\"user\",\"mess").unwrap();
        drop(f);

        let loc = TranscriptLocation::of(&root, &path).unwrap();
        let peek = peek_file(loc.clone()).unwrap();
        assert!(peek.partial);
        assert_eq!(peek.facts.goal(), Some("the goal"));
        assert_eq!(peek.facts.tail, Tail::ToolPending);
        assert_eq!(peek.facts.pending_tool().unwrap().target, "cargo test");
        assert_eq!(peek.facts.model.as_deref(), Some("claude-y"));
        assert!(peek.facts.usage.output_tokens < 200, "usage is partial in a peek");
        assert_eq!(peek.facts.malformed, 0, "cut lines at the window edges are not malformed");

        let full = IndexedFile::read(loc).unwrap();
        assert_eq!(full.facts.usage.output_tokens, 200);
        assert_eq!(full.facts.tail, peek.facts.tail);
    }

    /// Peeks on one thread share a buffer: one peek's bytes never show in the next one's,
    /// whatever the order of short and widened windows.
    #[test]
    fn peeks_in_a_row_see_only_their_own_bytes() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join(".claude");
        let dir = root.join("projects/-p");
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, goal: &str, last_len: usize, model: &str| {
            let path = dir.join(name);
            let mut f = std::fs::File::create(&path).unwrap();
            let user = serde_json::json!({"type":"user","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/p","message":{"content":goal}});
            writeln!(f, "{user}").unwrap();
            let filler = "x".repeat(1000);
            for i in 0..100 {
                let v = serde_json::json!({"type":"assistant","timestamp":"2026-11-01T10:00:01.000Z","requestId":format!("r{i}"),
                    "message":{"id":format!("m{i}"),"model":"claude-x","content":[{"type":"text","text":filler}]}});
                writeln!(f, "{v}").unwrap();
            }
            // The last record, longer than the tail's first window when `last_len` is.
            let v = serde_json::json!({"type":"assistant","timestamp":"2026-11-01T10:05:00.000Z","message":{"id":"mz","model":model,
                "content":[{"type":"text","text":"y".repeat(last_len)}]}});
            writeln!(f, "{v}").unwrap();
            TranscriptLocation::of(&root, &path).unwrap()
        };
        let wide = write("a1.jsonl", "the wide one", 3 * PEEK_TAIL, "claude-wide");
        let short = write("b2.jsonl", "the short one", 10, "claude-short");
        let facts = |loc: &TranscriptLocation| {
            let p = peek_file(loc.clone()).unwrap();
            (p.facts.goal().map(str::to_owned), p.facts.model.clone(), p.facts.malformed)
        };
        let alone = [facts(&wide), facts(&short)];
        assert_eq!(alone[0], (Some("the wide one".to_owned()), Some("claude-wide".to_owned()), 0));
        assert_eq!(alone[1], (Some("the short one".to_owned()), Some("claude-short".to_owned()), 0));
        for _ in 0..2 {
            assert_eq!([facts(&short), facts(&wide)], [alone[1].clone(), alone[0].clone()]);
            assert_eq!([facts(&wide), facts(&short)], alone);
        }
    }
}
