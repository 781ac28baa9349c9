//! The cost cache (`<data_dir>/cost-cache.bin`): each transcript file's [`FileUsage`]
//! kept from one report to the next, keyed by the file's path, size, modification time
//! (ns), device and inode. A report stats every file, takes the entries of the files that
//! did not change, reads on from where it stopped in a file that only grew (the 4 KiB
//! before that point unchanged), reads the others whole, and writes the cache back (a
//! temporary file renamed over it) only when something changed. Entries of files not
//! seen this time are dropped. A cache that cannot be read or does not check is ignored
//! and rewritten: the report is then the files', exactly as without a cache. Deleting
//! the file is safe. Days are not cached (only instants): the time zone is applied when
//! the report is made.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use mimesis_core::spend::cache::{self as codec, Entry, FileKey, TAIL_CHECK, Writer};
use mimesis_core::spend::{FileUsage, Ledger};

use super::{Reading, UsageFile, WAITING, discover, read_on};

/// The cache's name in the data folder.
pub const FILE: &str = "cost-cache.bin";

/// A cache larger than this is not read (2,000 sessions make about 10 MB).
const MAX_CACHE: u64 = 1 << 30;

/// What to do with one file.
enum Plan<'a> {
    /// Unchanged: its entry as is.
    Keep(&'a Entry<'a>),
    /// Grown: read on from the end of its entry, if the bytes before that are the same.
    Grown(&'a Entry<'a>),
    /// New or changed (or not a regular file): read it.
    Read,
}

/// The key of a regular file as it is now (its `read_to` and `tail_hash` not yet known).
fn key_now(path: &Path) -> Option<FileKey> {
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    Some(FileKey {
        size: m.len(),
        mtime_ns: m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()),
        dev: m.dev(),
        ino: m.ino(),
        read_to: 0,
        tail_hash: 0,
    })
}

/// The checksum of the (at most [`TAIL_CHECK`]) bytes before `read_to`.
fn tail_hash(file: &std::fs::File, read_to: u64) -> std::io::Result<u64> {
    let n = read_to.min(TAIL_CHECK);
    let mut buf = vec![0; n as usize];
    file.read_exact_at(&mut buf, read_to - n)?;
    Ok(codec::checksum(&buf))
}

/// Reads one file (on from its old entry when it only grew), with its key.
fn read_one(
    f: &UsageFile,
    order: u32,
    how: Reading,
    now: FileKey,
    grown: Option<&Entry>,
) -> std::io::Result<(FileUsage, FileKey)> {
    let open = || mimesis_os::files::open_regular(&f.path, mimesis_os::files::Links::Follow);
    let mut start = None;
    if let Some(e) = grown {
        let same_start = tail_hash(&open()?, e.key.read_to).is_ok_and(|h| h == e.key.tail_hash);
        if same_start {
            start =
                codec::decode_body(e.body, f.session.clone(), f.project_dir.clone(), order).map(|u| (u, e.key.read_to));
        }
    }
    let (mut usage, from) = start.unwrap_or_else(|| {
        let mut u = FileUsage::new(f.session.clone(), f.project_dir.clone());
        u.order = order;
        (u, 0)
    });
    let read_to = read_on(&f.path, &mut usage, from, how)?;
    let key = FileKey { read_to, tail_hash: tail_hash(&open()?, read_to)?, ..now };
    Ok((usage, key))
}

/// Every request of every transcript under `roots`, once, through the cache at `cache`
/// (see the module's documentation).
pub fn read(roots: &[PathBuf], how: Reading, cache: &Path) -> Ledger {
    let files = discover(roots);
    let keys: Vec<Option<FileKey>> = files.iter().map(|f| key_now(&f.path)).collect();
    let old_bytes =
        mimesis_os::files::read_regular(cache, MAX_CACHE, mimesis_os::files::Links::Refuse).unwrap_or_default();
    let old = codec::entries(&old_bytes);
    let by_path: HashMap<&[u8], &Entry> = old.iter().flatten().map(|e| (e.path, e)).collect();
    let plans: Vec<Plan> = files
        .iter()
        .zip(&keys)
        .map(|(f, now)| {
            let (Some(now), Some(e)) = (now, by_path.get(f.path.as_os_str().as_bytes())) else { return Plan::Read };
            let k = &e.key;
            if (k.size, k.mtime_ns, k.dev, k.ino) == (now.size, now.mtime_ns, now.dev, now.ino) {
                Plan::Keep(e)
            } else if (k.dev, k.ino) == (now.dev, now.ino) && now.size > k.size && k.read_to <= k.size {
                Plan::Grown(e)
            } else {
                Plan::Read
            }
        })
        .collect();
    // The biggest reads first, so the threads finish together.
    let mut jobs: Vec<(u64, usize)> = plans
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let size = keys[i].map_or(0, |k| k.size);
            match p {
                Plan::Keep(_) => None,
                Plan::Grown(e) => Some((size.saturating_sub(e.key.read_to), i)),
                Plan::Read => Some((size, i)),
            }
        })
        .collect();
    jobs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let kept = plans.iter().filter(|p| matches!(p, Plan::Keep(_))).count();
    let mut out = Writer::default();
    let mut changed = old.as_ref().is_none_or(|o| o.len() != kept);
    let mut ledger = Ledger::default();
    let (tx, rx) = std::sync::mpsc::sync_channel(WAITING);
    std::thread::scope(|scope| {
        let (files, keys, plans) = (&files, &keys, &plans);
        scope.spawn(move || {
            jobs.into_par_iter().for_each_with(tx, |tx, (_, i)| {
                let grown = match plans[i] {
                    Plan::Grown(e) => Some(e),
                    _ => None,
                };
                let read = match keys[i] {
                    Some(now) => read_one(&files[i], i as u32, how, now, grown).map(|(u, k)| (u, Some(k))),
                    // Not a regular file (or gone): read as without a cache, not kept.
                    None => super::read_file(&files[i], i as u32, how).map(|u| (u, None)),
                };
                // (A fold that is gone panicked: the scope reports it.)
                let _ = tx.send((i, read));
            });
        });
        for (i, plan) in plans.iter().enumerate() {
            let Plan::Keep(e) = plan else { continue };
            let f = &files[i];
            match codec::decode_body(e.body, f.session.clone(), f.project_dir.clone(), i as u32) {
                Some(u) => {
                    out.push_encoded(e.path, &e.key, e.body);
                    ledger.add(u);
                }
                None => {
                    changed = true;
                    match keys[i].map(|now| read_one(f, i as u32, how, now, None)) {
                        Some(Ok((u, k))) => {
                            out.push(f.path.as_os_str().as_bytes(), &k, &u);
                            ledger.add(u);
                        }
                        _ => ledger.unreadable(format!("{}: it changed while it was read", f.path.display())),
                    }
                }
            }
        }
        for (i, read) in rx {
            match read {
                Ok((u, key)) => {
                    if let Some(k) = key {
                        changed = true;
                        out.push(files[i].path.as_os_str().as_bytes(), &k, &u);
                    }
                    ledger.add(u);
                }
                Err(e) => ledger.unreadable(format!("{}: {e}", files[i].path.display())),
            }
        }
    });
    drop(by_path);
    drop(old);
    drop(old_bytes);
    if changed {
        write(cache, out.finish());
    }
    ledger
}

/// Writes the cache whole or not at all (a temporary file renamed over it); a failure
/// only costs the next report its speed.
fn write(cache: &Path, bytes: Vec<u8>) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(dir) = cache.parent() else { return };
    let tmp = dir.join(format!(".{FILE}.{}.{n}.tmp", std::process::id()));
    let done = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, &bytes))
        .and_then(|()| std::fs::rename(&tmp, cache));
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        tracing::debug!("the cost cache {} was not written: {e}", cache.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spend::tests::{chrono_day, rec};
    use mimesis_core::pricing::PriceTable;
    use mimesis_core::spend::{CostQuery, CostReport, GroupBy};

    const T: &str = "2026-11-01T10:00:00.000Z";

    struct Corpus {
        _dir: tempfile::TempDir,
        root: PathBuf,
        project: PathBuf,
        cache: PathBuf,
    }

    fn corpus() -> Corpus {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("claude");
        let project = root.join("projects/-home-me-p");
        std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
        std::fs::write(project.join("s1.jsonl"), rec("a", T, 10) + &rec("b", T, 20)).unwrap();
        std::fs::write(project.join("s2.jsonl"), rec("a", T, 10) + &rec("c", "2026-11-02T10:00:00.000Z", 40)).unwrap();
        std::fs::write(project.join("s1/subagents/agent-x.jsonl"), rec("d", T, 80)).unwrap();
        let cache = d.path().join("data").join(FILE);
        Corpus { _dir: d, root, project, cache }
    }

    fn report(l: &Ledger) -> CostReport {
        let q = CostQuery { by: GroupBy::Session, ..Default::default() };
        l.report(&q, PriceTable::vendored(), &|t| chrono_day(t.millis()))
    }

    /// The report through the cache, checked equal to the one without it.
    fn both(c: &Corpus) -> CostReport {
        let cached = report(&read(std::slice::from_ref(&c.root), Reading::Copied, &c.cache));
        let plain = report(&super::super::read(std::slice::from_ref(&c.root), Reading::Copied));
        assert_eq!(serde_json::to_value(&cached).unwrap(), serde_json::to_value(&plain).unwrap());
        cached
    }

    fn cached_paths(c: &Corpus) -> Vec<String> {
        let bytes = std::fs::read(&c.cache).unwrap();
        let mut paths: Vec<String> =
            codec::entries(&bytes).unwrap().iter().map(|e| String::from_utf8_lossy(e.path).into_owned()).collect();
        paths.sort();
        paths
    }

    fn ino(p: &Path) -> u64 {
        std::fs::metadata(p).unwrap().ino()
    }

    #[test]
    fn a_warm_cache_gives_the_cold_report_and_is_not_rewritten() {
        let c = corpus();
        let cold = both(&c);
        assert_eq!(cold.total.input_tokens, 150);
        assert_eq!(cached_paths(&c).len(), 3);
        let written = ino(&c.cache);
        let warm = both(&c);
        assert_eq!(serde_json::to_value(&warm).unwrap(), serde_json::to_value(&cold).unwrap());
        assert_eq!(ino(&c.cache), written, "nothing changed: the cache was rewritten");
    }

    #[test]
    fn only_what_a_file_gained_is_read() {
        let c = corpus();
        let s1 = c.project.join("s1.jsonl");
        // A long line after the first record, so that it is outside the bytes checked.
        let pad = serde_json::json!({"type": "user", "message": {"content": "x".repeat(8192)}}).to_string() + "\n";
        let first = rec("a", T, 10);
        std::fs::write(&s1, first.clone() + &pad + &rec("b", T, 20) + rec("e", T, 1).trim_end()).unwrap();
        assert_eq!(both(&c).total.input_tokens, 150, "a last line without its newline is not counted yet");
        // The record being written ends, another is appended; and (which Claude Code never
        // does) the first record is changed in place: a read of only the new bytes misses it.
        let mut f = std::fs::OpenOptions::new().append(true).open(&s1).unwrap();
        std::io::Write::write_all(&mut f, ("\n".to_owned() + &rec("f", T, 1000)).as_bytes()).unwrap();
        drop(f);
        let changed = first.replace("\"input_tokens\":10", "\"input_tokens\":90");
        assert_eq!(changed.len(), first.len());
        std::fs::OpenOptions::new().write(true).open(&s1).unwrap().write_all_at(changed.as_bytes(), 0).unwrap();
        let r = report(&read(std::slice::from_ref(&c.root), Reading::Copied, &c.cache));
        assert_eq!(r.total.input_tokens, 150 + 1 + 1000);
        // Mapped reads on the same way.
        std::fs::remove_file(&c.cache).unwrap();
        both(&c);
        let mut f = std::fs::OpenOptions::new().append(true).open(&s1).unwrap();
        std::io::Write::write_all(&mut f, rec("g", T, 5).as_bytes()).unwrap();
        let r = report(&read(std::slice::from_ref(&c.root), Reading::Mapped, &c.cache));
        assert_eq!(r.total.input_tokens, 150 + 80 + 1 + 1000 + 5);
    }

    #[test]
    fn a_file_that_grew_but_changed_before_its_end_is_read_whole() {
        let c = corpus();
        both(&c);
        let s2 = c.project.join("s2.jsonl");
        // Rewritten in place, longer, its last record's count changed.
        std::fs::write(&s2, rec("a", T, 10) + &rec("c", "2026-11-02T10:00:00.000Z", 41) + &rec("h", T, 2)).unwrap();
        assert_eq!(both(&c).total.input_tokens, 150 + 1 + 2);
    }

    #[test]
    fn a_replaced_file_of_the_same_size_is_read_again() {
        let c = corpus();
        both(&c);
        let s2 = c.project.join("s2.jsonl");
        let text = std::fs::read_to_string(&s2).unwrap().replace("\"input_tokens\":40", "\"input_tokens\":70");
        let new = c.project.join("s2.new");
        std::fs::write(&new, &text).unwrap();
        let before = std::fs::metadata(&s2).unwrap();
        std::fs::rename(&new, &s2).unwrap();
        let after = std::fs::metadata(&s2).unwrap();
        assert_eq!(before.len(), after.len());
        assert_ne!(before.ino(), after.ino());
        assert_eq!(both(&c).total.input_tokens, 180);
    }

    #[test]
    fn the_entries_of_files_gone_are_dropped() {
        let c = corpus();
        both(&c);
        std::fs::remove_file(c.project.join("s1/subagents/agent-x.jsonl")).unwrap();
        assert_eq!(both(&c).total.input_tokens, 70);
        let paths = cached_paths(&c);
        assert_eq!(paths.len(), 2);
        assert!(paths.iter().all(|p| !p.contains("agent-x")), "{paths:?}");
        // Another set of roots: the first one's files are not kept.
        let other = tempfile::tempdir().unwrap();
        let p = other.path().join("projects/-q");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("s9.jsonl"), rec("z", T, 3)).unwrap();
        let r = report(&read(&[other.path().to_owned()], Reading::Copied, &c.cache));
        assert_eq!(r.total.input_tokens, 3);
        assert_eq!(cached_paths(&c).len(), 1);
    }

    #[test]
    fn a_damaged_or_foreign_cache_is_ignored_and_rewritten() {
        let c = corpus();
        let cold = serde_json::to_value(both(&c)).unwrap();
        let good = std::fs::read(&c.cache).unwrap();
        let good_paths = cached_paths(&c);
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 1;
        let mut other_version = good[..good.len() - 8].to_vec();
        other_version[8..12].copy_from_slice(&(codec::VERSION + 1).to_le_bytes());
        let sum = codec::checksum(&other_version);
        other_version.extend_from_slice(&sum.to_le_bytes());
        for bad in [Vec::new(), b"garbage".to_vec(), good[..good.len() / 2].to_vec(), flipped, other_version] {
            std::fs::write(&c.cache, &bad).unwrap();
            assert_eq!(serde_json::to_value(both(&c)).unwrap(), cold);
            assert_eq!(cached_paths(&c), good_paths, "rewritten");
        }
        // A cache that is not a file, and one that cannot be written: the report is the same.
        std::fs::remove_file(&c.cache).unwrap();
        std::fs::create_dir(&c.cache).unwrap();
        assert_eq!(serde_json::to_value(both(&c)).unwrap(), cold);
    }
}
