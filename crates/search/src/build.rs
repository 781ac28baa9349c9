//! Bringing the index up to date: each transcript is read from where the index stopped
//! (a file that shrank is read again from its start), on worker threads, and written in
//! transactions of about a second each from this one.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, UNIX_EPOCH};

use mimesis_core::layout::TranscriptLocation;
use mimesis_core::search::extract::{Doc, Extractor};
use rusqlite::{ErrorCode, OptionalExtension, params};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::words::Words;
use crate::{Index, IndexError, LONG, MAX_TERM_BYTES, STUB_CHARS, id_base};

/// The most text of one document that is indexed (a huge tool result or written file is
/// searched in its first megabyte).
const MAX_DOC_BYTES: usize = 1 << 20;
/// Text a worker gathers before handing it over (bounds memory on huge transcripts).
const CHUNK_BYTES: usize = 4 << 20;
/// How long one write transaction runs at most (others wait for the lock meanwhile).
const COMMIT_EVERY: Duration = Duration::from_millis(800);
/// An update that reads at least this much, and at least a quarter of what the index has
/// read before, does not collect its words as it goes: `terms` is filled from FTS5's own
/// list of words once it is done (`Index::sweep_terms_if_stale`: about 0.6 s for the 253 MB
/// index of a 1 GB corpus, where collecting its words one by one took about 4 s of CPU).
pub(crate) const BULK_BYTES: u64 = 32 << 20;

/// What one update did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Updated {
    /// Transcripts read (in part or whole).
    pub files: usize,
    /// Documents added.
    pub docs: usize,
    /// Transcripts that are gone, and their documents with them.
    pub removed: usize,
}

struct Stored {
    id: i64,
    indexed: u64,
    seen_len: u64,
    seen_mtime: i64,
}

struct Work<'a> {
    loc: &'a TranscriptLocation,
    from: u64,
    reset: bool,
    len: u64,
    mtime: i64,
}

struct Row {
    offset: u64,
    len: u64,
    part: usize,
    at_ms: i64,
    doc: Doc,
}

struct Chunk {
    work: usize,
    from: u64,
    end: u64,
    last: bool,
    rows: Vec<Row>,
    /// Words of these rows this worker had not met before (for `terms`).
    terms: Vec<Arc<str>>,
}

fn mtime_ms(md: &std::fs::Metadata) -> i64 {
    md.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_millis() as i64)
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_DOC_BYTES {
        let mut end = MAX_DOC_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Reads one transcript from `w.from`, handing its documents over in chunks. Only whole
/// lines are read: a line still being written is read on a later update.
fn read(work: usize, w: &Work<'_>, mut words: Option<&mut Words>, tx: &mpsc::SyncSender<Chunk>) -> std::io::Result<()> {
    let mut f = std::fs::File::open(&w.loc.path)?;
    f.seek(SeekFrom::Start(w.from))?;
    let mut r = BufReader::with_capacity(256 << 10, f);
    let mut x = Extractor::new();
    let mut buf = Vec::new();
    let (mut offset, mut chunk_from, mut bytes) = (w.from, w.from, 0usize);
    let mut rows = Vec::new();
    let mut terms = Vec::new();
    let mut last_at = w.mtime;
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        for (part, doc) in x.line(&buf).into_iter().enumerate() {
            let at_ms = doc.at.map_or(last_at, |t| t.millis());
            last_at = at_ms;
            bytes += doc.text.len();
            let doc = Doc { text: cut(doc.text), ..doc };
            if let Some(words) = words.as_deref_mut() {
                words.new_terms(&doc.text, &mut terms);
            }
            rows.push(Row { offset, len: n as u64, part, at_ms, doc });
        }
        offset += n as u64;
        if bytes >= CHUNK_BYTES {
            let (rows, terms) = (std::mem::take(&mut rows), std::mem::take(&mut terms));
            if tx.send(Chunk { work, from: chunk_from, end: offset, last: false, rows, terms }).is_err() {
                return Ok(());
            }
            (chunk_from, bytes) = (offset, 0);
        }
    }
    let _ = tx.send(Chunk { work, from: chunk_from, end: offset, last: true, rows, terms });
    Ok(())
}

/// A path reversed, so "every path ending in this" is a range of an index.
pub(crate) fn reversed(path: &str) -> String {
    path.chars().rev().collect()
}

/// Each file's metadata (None: gone), read folder by folder from the folder's listing
/// (`fstatat` from the open folder: no walk of the whole path per file, which was most of a
/// search's time with thousands of transcripts); a link, or a name the listing lacks, is
/// looked up by its path. The folders are shared among up to four threads: with the index
/// up to date these looks are most of what a search costs (2,000 transcripts in 60
/// folders: about half of a 20 ms search on one core).
fn metadata_of(files: &[TranscriptLocation]) -> Vec<Option<std::fs::Metadata>> {
    let mut by_dir: FxHashMap<&Path, FxHashMap<&std::ffi::OsStr, usize>> = FxHashMap::default();
    for (i, loc) in files.iter().enumerate() {
        if let (Some(dir), Some(name)) = (loc.path.parent(), loc.path.file_name()) {
            by_dir.entry(dir).or_default().insert(name, i);
        }
    }
    let dirs: Vec<_> = by_dir.into_iter().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4).min(dirs.len().div_ceil(8)).max(1);
    type Folder<'a> = (&'a Path, FxHashMap<&'a std::ffi::OsStr, usize>);
    let look = |part: &[&Folder]| {
        let mut found = Vec::new();
        for (dir, names) in part {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(&i) = names.get(name.as_os_str()) else { continue };
                if e.file_type().is_ok_and(|t| t.is_file())
                    && let Ok(md) = e.metadata()
                {
                    found.push((i, md));
                }
            }
        }
        found
    };
    let found: Vec<(usize, std::fs::Metadata)> = if threads == 1 {
        look(&dirs.iter().collect::<Vec<_>>())
    } else {
        // Folders dealt round-robin so each thread gets big and small ones alike.
        let parts: Vec<Vec<_>> = (0..threads).map(|t| dirs.iter().skip(t).step_by(threads).collect()).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = parts.iter().skip(1).map(|p| s.spawn(|| look(p))).collect();
            let mut all = look(&parts[0]);
            for h in handles {
                // A thread that panicked looked at nothing: its files are looked up below.
                all.extend(h.join().unwrap_or_default());
            }
            all
        })
    };
    let mut out: Vec<Option<std::fs::Metadata>> = vec![None; files.len()];
    for (i, md) in found {
        out[i] = Some(md);
    }
    for (slot, loc) in out.iter_mut().zip(files) {
        if slot.is_none() {
            *slot = std::fs::metadata(&loc.path).ok();
        }
    }
    out
}

impl Index {
    /// What the index holds of each transcript, by path.
    fn stored(&self) -> Result<FxHashMap<String, Stored>, IndexError> {
        let mut stored: FxHashMap<String, Stored> = FxHashMap::default();
        let mut st = self.conn.prepare("SELECT path, id, indexed, seen_len, seen_mtime FROM files")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let s = Stored {
                id: r.get(1)?,
                indexed: r.get::<_, i64>(2)? as u64,
                seen_len: r.get::<_, i64>(3)? as u64,
                seen_mtime: r.get(4)?,
            };
            stored.insert(r.get(0)?, s);
        }
        Ok(stored)
    }

    /// Reads what was appended to `files` since the last update (all of them the first
    /// time), and forgets transcripts that are gone. `progress(done, total)` is called as
    /// transcripts are finished.
    pub fn update(
        &mut self,
        files: &[TranscriptLocation],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Updated, IndexError> {
        // The files are looked at while what the index holds of them is read.
        let (stored, mds) = std::thread::scope(|s| {
            let looked = s.spawn(|| metadata_of(files));
            let stored = self.stored();
            (stored, looked.join().unwrap_or_else(|_| metadata_of(files)))
        });
        let stored = stored?;
        let mut work = Vec::new();
        let mut present = FxHashSet::default();
        for (loc, md) in files.iter().zip(mds) {
            let Some(key) = loc.path.to_str() else { continue };
            present.insert(key);
            let Some(md) = md else { continue };
            let (len, mtime) = (md.len(), mtime_ms(&md));
            let w = |from, reset| Work { loc, from, reset, len, mtime };
            match stored.get(key) {
                Some(s) if s.seen_len == len && s.seen_mtime == mtime => {}
                Some(s) if len >= s.indexed => work.push(w(s.indexed, false)),
                Some(_) => work.push(w(0, true)),
                None => work.push(w(0, false)),
            }
        }
        let gone: Vec<i64> = stored
            .iter()
            .filter(|(p, _)| !present.contains(p.as_str()) && !Path::new(p).exists())
            .map(|(_, s)| s.id)
            .collect();
        let mut out = Updated { removed: gone.len(), ..Updated::default() };
        if !gone.is_empty() {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            let r = gone.iter().try_for_each(|&id| self.forget(id, true));
            self.finish(r)?;
        }
        if work.is_empty() {
            self.sweep_terms_if_stale()?;
            return Ok(out);
        }
        let to_read: u64 = work.iter().map(|w| w.len - w.from).sum();
        let before: u64 = stored.values().map(|s| s.indexed).sum();
        let bulk = to_read >= self.bulk_bytes && to_read >= before / 4;
        work.sort_by_key(|w| std::cmp::Reverse(w.len - w.from));
        let total = work.len();
        progress(0, total);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(2, 5) - 1;
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::sync_channel::<Chunk>(threads * 2);
        std::thread::scope(|s| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (next, work) = (&next, &work);
                s.spawn(move || {
                    let mut words = (!bulk).then(Words::default);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(w) = work.get(i) else { break };
                        if let Err(e) = read(i, w, words.as_mut(), &tx) {
                            tracing::warn!(path = %w.loc.path.display(), error = %e, "cannot read a transcript to index");
                            let failed = Chunk { work: i, from: u64::MAX, end: 0, last: true, rows: Vec::new(), terms: Vec::new() };
                            let _ = tx.send(failed);
                        }
                    }
                });
            }
            drop(tx);
            self.write(&work, rx, bulk, &mut out, progress)
        })?;
        self.sweep_terms_if_stale()?;
        Ok(out)
    }

    /// Fills `terms` from FTS5's own list of the index's words when an update wrote
    /// documents without their words (a bulk update, this one or one that was stopped
    /// midway), in one transaction: what was committed until then is covered. The words
    /// of the `project` column are not the text's.
    fn sweep_terms_if_stale(&self) -> Result<(), IndexError> {
        if !self.terms_stale()? {
            return Ok(());
        }
        self.conn.execute_batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_words USING fts5vocab(main, fts, 'col');
             BEGIN IMMEDIATE",
        )?;
        let r = self
            .conn
            .execute_batch(&format!(
                "INSERT OR IGNORE INTO terms (term)
                   SELECT CASE WHEN length(CAST(term AS BLOB)) > {MAX_TERM_BYTES}
                     THEN substr(term, 1, {STUB_CHARS}) || char({long}) ELSE term END FROM temp.fts_words WHERE col <> 'project';
                 DELETE FROM meta WHERE key = 'terms_stale';",
                long = LONG as u32
            ))
            .map_err(IndexError::from);
        self.finish(r)
    }

    /// Writes the workers' chunks, in transactions of about [`COMMIT_EVERY`].
    fn write(
        &self,
        work: &[Work<'_>],
        rx: mpsc::Receiver<Chunk>,
        bulk: bool,
        out: &mut Updated,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(), IndexError> {
        // Where each transcript stands in the index as this process writes it (None: not
        // looked at yet in this transaction; u64::MAX: left to another process).
        let mut at: Vec<Option<(i64, u64)>> = vec![None; work.len()];
        let mut done = 0;
        let mut began = Instant::now();
        // Each transaction of a bulk update says that `terms` lacks its words (another
        // process's sweep may have come between two of them).
        let stale = || if bulk { self.set_meta("terms_stale", "1").map_err(IndexError::from) } else { Ok(()) };
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut result = stale();
        for chunk in rx {
            if result.is_err() {
                continue; // drain, so the workers end
            }
            result = self.write_chunk(work, &chunk, &mut at, out);
            if chunk.last {
                done += 1;
                if chunk.from != u64::MAX {
                    out.files += 1;
                }
                progress(done, work.len());
            }
            if result.is_ok() && began.elapsed() >= COMMIT_EVERY {
                result =
                    self.conn.execute_batch("COMMIT; BEGIN IMMEDIATE").map_err(IndexError::from).and_then(|()| stale());
                // Another process may write between two transactions: look again.
                at.iter_mut().for_each(|a| *a = None);
                began = Instant::now();
            }
        }
        self.finish(result)
    }

    fn finish(&self, result: Result<(), IndexError>) -> Result<(), IndexError> {
        match result {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn write_chunk(
        &self,
        work: &[Work<'_>],
        chunk: &Chunk,
        at: &mut [Option<(i64, u64)>],
        out: &mut Updated,
    ) -> Result<(), IndexError> {
        if chunk.from == u64::MAX {
            return Ok(());
        }
        let w = &work[chunk.work];
        let path = w.loc.path.to_str().unwrap_or_default();
        if at[chunk.work].is_none() {
            let now: Option<(i64, u64)> = self
                .conn
                .query_row("SELECT id, indexed FROM files WHERE path = ?1", [path], |r| {
                    Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
                })
                .optional()?;
            at[chunk.work] = Some(match now {
                Some((id, _)) if w.reset && chunk.from == 0 => {
                    self.forget(id, false)?;
                    (id, 0)
                }
                // Where it stands; a chunk from elsewhere is left to the process that wrote it.
                Some(n) => n,
                None if chunk.from == 0 => {
                    self.conn.execute(
                        "INSERT INTO files (path, session_id, project, indexed, seen_len, seen_mtime)
                         VALUES (?1, ?2, ?3, 0, 0, 0)",
                        params![path, w.loc.session_id.as_str(), w.loc.project_id],
                    )?;
                    (self.conn.last_insert_rowid(), 0)
                }
                None => (0, u64::MAX),
            });
        }
        let Some((file_id, indexed)) = at[chunk.work] else { return Ok(()) };
        if indexed != chunk.from {
            return Ok(());
        }
        let mut doc_st = self.conn.prepare_cached(
            "INSERT INTO docs (id, file_id, offset, len, part, kind, uuid, tool_use_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        let mut touched =
            self.conn.prepare_cached("INSERT OR IGNORE INTO touched (rpath, doc, op) VALUES (?1, ?2, ?3)")?;
        for row in &chunk.rows {
            let d = &row.doc;
            let mut id = id_base(row.at_ms) + row.part.min(1023) as i64;
            loop {
                let r = doc_st.execute(params![
                    id,
                    file_id,
                    row.offset as i64,
                    row.len as i64,
                    row.part as i64,
                    d.kind.code(),
                    d.uuid,
                    d.tool_use_id
                ]);
                match r {
                    Ok(_) => break,
                    Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => id += 1,
                    Err(e) => return Err(e.into()),
                }
            }
            let mut fts = self.conn.prepare_cached(&format!(
                "INSERT INTO fts (rowid, {}, project) VALUES (?1, ?2, ?3)",
                d.kind.as_str()
            ))?;
            fts.execute(params![id, d.text, w.loc.project_id])?;
            if let Some((op, p)) = &d.file {
                touched.execute(params![reversed(p), id, op.code()])?;
            }
            out.docs += 1;
        }
        let mut term = self.conn.prepare_cached("INSERT OR IGNORE INTO terms (term) VALUES (?1)")?;
        for t in &chunk.terms {
            term.execute([&**t])?;
        }
        self.conn.execute(
            "UPDATE files SET indexed = ?2, seen_len = CASE WHEN ?3 THEN ?4 ELSE seen_len END,
               seen_mtime = CASE WHEN ?3 THEN ?5 ELSE seen_mtime END WHERE id = ?1",
            params![file_id, chunk.end as i64, chunk.last, w.len as i64, w.mtime],
        )?;
        at[chunk.work] = Some((file_id, chunk.end));
        Ok(())
    }

    /// Removes a transcript's documents (and its entry, when `entry`).
    fn forget(&self, file_id: i64, entry: bool) -> Result<(), IndexError> {
        self.conn.execute("DELETE FROM fts WHERE rowid IN (SELECT id FROM docs WHERE file_id = ?1)", [file_id])?;
        self.conn.execute("DELETE FROM touched WHERE doc IN (SELECT id FROM docs WHERE file_id = ?1)", [file_id])?;
        self.conn.execute("DELETE FROM docs WHERE file_id = ?1", [file_id])?;
        if entry {
            self.conn.execute("DELETE FROM files WHERE id = ?1", [file_id])?;
        } else {
            self.conn.execute("UPDATE files SET indexed = 0, seen_len = 0, seen_mtime = 0 WHERE id = ?1", [file_id])?;
        }
        Ok(())
    }
}
