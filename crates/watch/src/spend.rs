//! Reading every transcript's usage for a cost report (`mimesis cost`): every `.jsonl`
//! under each root's `projects/` (subagents' files included, counted with the session
//! they belong to), read in parallel with the same record parser as the index, into one [`FileUsage`] each; then folded, in path order, into a [`Ledger`]
//! (`mimesis_core::spend`), which counts each API request once.
//!
//! A read holds at most one chunk of each file being read, and the usage records found
//! (about 70 bytes each): not the files.

use std::path::{Path, PathBuf};

pub mod cache;

use rayon::prelude::*;

use mimesis_core::layout;
use mimesis_core::spend::{FileUsage, Ledger};

/// How deep under a project folder transcripts are looked for
/// (`<project>/<session>/subagents/agent-….jsonl` is 3).
const MAX_DEPTH: usize = 4;

/// One transcript file: where it is, the session it counts for, and its project folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageFile {
    pub path: PathBuf,
    pub session: String,
    pub project_dir: String,
}

/// Every transcript file under `roots`, in path order.
pub fn discover(roots: &[PathBuf]) -> Vec<UsageFile> {
    let mut out = Vec::new();
    for root in roots {
        let projects = layout::projects_dir(root);
        let Ok(rd) = std::fs::read_dir(&projects) else { continue };
        for project in rd.filter_map(Result::ok) {
            if !project.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Some(name) = project.file_name().to_str().map(str::to_owned) else { continue };
            walk(&project.path(), &name, None, 1, &mut out);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The `.jsonl` files in `dir`; `session` is the session folder they are under, if any.
/// Symbolic links to folders are not followed (no loops).
fn walk(dir: &Path, project: &str, session: Option<&str>, depth: usize, out: &mut Vec<UsageFile>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.filter_map(Result::ok) {
        let Ok(kind) = e.file_type() else { continue };
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(&e.path(), project, Some(session.unwrap_or(name)), depth + 1, out);
        } else if !kind.is_dir()
            && let Some(stem) = name.strip_suffix(".jsonl")
        {
            let session = session.unwrap_or(stem).to_owned();
            out.push(UsageFile { path: e.path(), session, project_dir: project.to_owned() });
        }
    }
}

/// How files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// `read(2)` a chunk at a time into a buffer (each chunk's lines searched at once, as a
    /// mapped file's are). For a long-lived process.
    Copied,
    /// Mapped into memory ([`mimesis_os::files::Mapped`]): most of a read's time is the
    /// kernel copying bytes that are skipped at once. Only for a short-lived process that
    /// has a file cut short while it is read end it with a sentence
    /// ([`mimesis_os::files::say_on_bus_error`]).
    Mapped,
}

/// Reads one file's usage records; `order` is its place among the files (their paths').
pub fn read_file(f: &UsageFile, order: u32, how: Reading) -> std::io::Result<FileUsage> {
    let mut usage = FileUsage::new(f.session.clone(), f.project_dir.clone());
    usage.order = order;
    read_on(&f.path, &mut usage, 0, how)?;
    Ok(usage)
}

/// Reads the records of `path` from `from` (the start of a line) on into `usage`; returns
/// how far it read: the end of the last complete line.
fn read_on(path: &Path, usage: &mut FileUsage, from: u64, how: Reading) -> std::io::Result<u64> {
    let mut scratch = String::new();
    let parser = crate::parse::SonicJson;
    let read_to = match how {
        Reading::Copied => read_chunks(path, from, &parser, usage, &mut scratch)?,
        Reading::Mapped => match mimesis_os::files::Mapped::open(path)? {
            Some(map) => {
                let bytes = map.bytes();
                let start = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
                usage.add_text(&parser, &bytes[start..], &mut scratch, |upto| map.release_before(start + upto));
                memchr::memrchr(b'\n', &bytes[start..]).map_or(start, |i| start + i + 1) as u64
            }
            None => from,
        },
    };
    usage.models.shrink_to_fit();
    usage.entries.shrink_to_fit();
    Ok(read_to)
}

const CHUNK: usize = 1024 * 1024;

/// Reads a file from `from` on a chunk at a time, each chunk's complete lines at once
/// ([`FileUsage::add_text`]); a line longer than [`mimesis_core::spend::MAX_LINE`] is
/// skipped, a last line without its newline is not read. Returns the end of the last
/// complete line.
fn read_chunks(
    path: &Path,
    from: u64,
    parser: &crate::parse::SonicJson,
    usage: &mut FileUsage,
    scratch: &mut String,
) -> std::io::Result<u64> {
    use std::io::{Read, Seek};
    let mut file = mimesis_os::files::open_regular(path, mimesis_os::files::Links::Follow)?;
    if from > 0 {
        file.seek(std::io::SeekFrom::Start(from))?;
    }
    // The offset in the file of `buf[0]`, and of the end of the last complete line.
    let (mut base, mut read_to) = (from, from);
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buf.resize(CHUNK, 0);
    // `buf[..held]` is the start of a line whose end is still to come.
    let (mut held, mut skipping) = (0, false);
    let result = loop {
        if held == buf.len() {
            if buf.len() >= mimesis_core::spend::MAX_LINE {
                base += held as u64;
                (held, skipping) = (0, true);
            } else {
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = match file.read(&mut buf[held..]) {
            Ok(0) => break Ok(read_to),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        };
        let end = held + n;
        let mut from = 0;
        if skipping {
            match memchr::memchr(b'\n', &buf[..end]) {
                Some(i) => (from, skipping) = (i + 1, false),
                None => {
                    base += end as u64;
                    held = 0;
                    continue;
                }
            }
        }
        let upto = memchr::memrchr(b'\n', &buf[from..end]).map_or(from, |i| from + i + 1);
        if upto > from {
            usage.add_text(parser, &buf[from..upto], scratch, |_| {});
        }
        read_to = base + upto as u64;
        buf.copy_within(upto..end, 0);
        base += upto as u64;
        held = end - upto;
    };
    if buf.len() > CHUNK {
        buf = Vec::new();
    }
    BUF.with(|b| *b.borrow_mut() = buf);
    result
}

/// Read files waiting to be folded, at most (the reading runs ahead of the folding by this
/// much, no more).
const WAITING: usize = 64;

/// Every request of every transcript under `roots`, once. The files are read in parallel
/// (the biggest first, so the threads finish together) and folded on the calling thread
/// as they come: what is held is the requests kept, not the files read.
pub fn read(roots: &[PathBuf], how: Reading) -> Ledger {
    let files = discover(roots);
    let mut order: Vec<(u64, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (std::fs::symlink_metadata(&f.path).map(|m| m.len()).unwrap_or(0), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut ledger = Ledger::default();
    let (tx, rx) = std::sync::mpsc::sync_channel(WAITING);
    std::thread::scope(|scope| {
        let files = &files;
        scope.spawn(move || {
            order.into_par_iter().for_each_with(tx, |tx, (_, i)| {
                // (A fold that is gone panicked: the scope reports it.)
                let _ = tx.send((i, read_file(&files[i], i as u32, how)));
            });
        });
        for (i, read) in rx {
            match read {
                Ok(u) => ledger.add(u),
                Err(e) => ledger.unreadable(format!("{}: {e}", files[i].path.display())),
            }
        }
    });
    ledger
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::pricing::PriceTable;
    use mimesis_core::spend::CostQuery;

    pub(super) fn rec(id: &str, ts: &str, input: u64) -> String {
        serde_json::json!({"type": "assistant", "timestamp": ts, "requestId": id, "version": "2.1.330",
            "message": {"id": id, "model": "claude-haiku-4-5",
                        "usage": {"input_tokens": input, "output_tokens": 1}}})
        .to_string()
            + "\n"
    }

    #[test]
    fn subagents_count_with_their_session_and_copies_once() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("claude");
        let p = root.join("projects/-home-me-p");
        std::fs::create_dir_all(p.join("s1/subagents")).unwrap();
        std::fs::write(
            p.join("s1.jsonl"),
            rec("a", "2026-11-01T10:00:00.000Z", 10) + &rec("b", "2026-11-01T10:00:00.000Z", 20),
        )
        .unwrap();
        // A resumed session's copy of request a, and a subagent's own request.
        std::fs::write(p.join("s2.jsonl"), rec("a", "2026-11-01T10:00:00.000Z", 10)).unwrap();
        std::fs::write(p.join("s1/subagents/agent-x.jsonl"), rec("c", "2026-11-02T10:00:00.000Z", 40)).unwrap();
        // Not transcripts.
        std::fs::write(p.join("notes.txt"), rec("d", "2026-11-02T10:00:00.000Z", 80)).unwrap();
        std::fs::write(root.join("projects/stray.jsonl"), rec("e", "2026-11-02T10:00:00.000Z", 160)).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&p, p.join("s1/loop")).unwrap();

        let files = discover(std::slice::from_ref(&root));
        let sessions: Vec<&str> = files.iter().map(|f| f.session.as_str()).collect();
        assert_eq!(sessions, ["s1", "s1", "s2"]);
        let ledger = read(std::slice::from_ref(&root), Reading::Copied);
        assert_eq!(ledger.requests(), 3);
        assert_eq!(read(&[root], Reading::Mapped).requests(), 3);
        let by_session = CostQuery { by: mimesis_core::spend::GroupBy::Session, ..Default::default() };
        let utc = |t: mimesis_core::Timestamp| chrono_day(t.millis());
        let r = ledger.report(&by_session, PriceTable::vendored(), &utc);
        let rows: Vec<(&str, u64)> = r.rows.iter().map(|r| (r.key.as_str(), r.totals.input_tokens)).collect();
        assert_eq!(rows, [("s1", 70)]);
    }

    pub(super) fn chrono_day(ms: i64) -> chrono::NaiveDate {
        chrono::DateTime::from_timestamp_millis(ms).unwrap().date_naive()
    }

    #[test]
    fn an_unreadable_file_is_said_not_silently_zero() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("claude");
        let p = root.join("projects/-p");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("ok.jsonl"), rec("a", "2026-11-01T10:00:00.000Z", 10)).unwrap();
        let fifo = p.join("fifo.jsonl");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        let ledger = read(&[root], Reading::Mapped);
        let r = ledger.report(&CostQuery::default(), PriceTable::vendored(), &|t| chrono_day(t.millis()));
        assert_eq!(r.total.input_tokens, 10);
        if made {
            assert_eq!(r.skipped.unreadable_files, 1);
            assert!(r.warnings[0].starts_with("1 transcript file could not be read ("), "{:?}", r.warnings);
        }
    }

    #[test]
    fn read_in_chunks_as_mapped_across_chunk_ends_and_long_lines() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("claude");
        let p = root.join("projects/-p");
        std::fs::create_dir_all(&p).unwrap();
        // Records across several chunks, one line three chunks long, and a last line without
        // its newline (being written: not counted yet).
        let mut text = String::new();
        for i in 0..30_000 {
            text.push_str(&rec(&format!("r{i}"), "2026-11-01T10:00:00.000Z", 1));
        }
        let long = serde_json::json!({"type": "user", "message": {"content": "x".repeat(3 * CHUNK)}});
        text.push_str(&(long.to_string() + "\n"));
        text.push_str(&rec("after", "2026-11-01T10:00:00.000Z", 1000));
        text.push_str(rec("partial", "2026-11-01T10:00:00.000Z", 7).trim_end());
        std::fs::write(p.join("s.jsonl"), text).unwrap();
        let total = |how| {
            let r = read(std::slice::from_ref(&root), how);
            r.report(&CostQuery::default(), PriceTable::vendored(), &|t| chrono_day(t.millis())).total.input_tokens
        };
        assert_eq!(total(Reading::Copied), 31_000);
        assert_eq!(total(Reading::Mapped), 31_000);
    }
}
