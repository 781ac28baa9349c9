//! The ledger of supervised processes in Mimesis's data dir (P11, P12): the fleet
//! database ([`DbLedger`], SPEC W8), shared by every Mimesis process that runs at once (the
//! app and any number of `mimesis run`), each owning its own rows. When the database
//! cannot be opened (corrupt, locked, from a newer Mimesis: its owner rebuilds it),
//! [`FileLedger`] keeps one small JSON file per owner in the data dir instead; the
//! database ledger also writes there when a save fails, and reads those files back, so the
//! orphans of a run that used them are still cleaned. [`open`] picks one.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mimesis_core::ids::SessionId;
use mimesis_core::supervision::interrupted::Interrupted;
use mimesis_core::supervision::ledger::{CorruptedSession, Owner, ProcessLedger, ProcessRecord, merge};
use serde::{Deserialize, Serialize};

use crate::Db;

/// One JSON file per owner: `<dir>/supervised/<pid>-<start ticks>.json`.
pub struct FileLedger {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct OwnerFile {
    owner: Owner,
    processes: Vec<ProcessRecord>,
}

impl FileLedger {
    /// A ledger under `data_dir` (Mimesis's data dir).
    pub fn new(data_dir: impl Into<PathBuf>) -> FileLedger {
        FileLedger { dir: data_dir.into() }
    }

    fn owners_dir(&self) -> PathBuf {
        self.dir.join("supervised")
    }

    fn owner_path(&self, owner: &Owner) -> PathBuf {
        self.owners_dir().join(format!("{}-{}.json", owner.pid, owner.start_ticks))
    }

    fn interrupted_path(&self) -> PathBuf {
        self.dir.join("interrupted.json")
    }

    fn write_interrupted(&self, all: &[Interrupted]) -> io::Result<()> {
        if all.is_empty() {
            return match std::fs::remove_file(self.interrupted_path()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        mimesis_os::private::create_dir_all(&self.dir)?;
        mimesis_os::private::write_atomic(&self.interrupted_path(), &serde_json::to_vec(all)?)
    }
}

impl ProcessLedger for FileLedger {
    fn save(&self, owner: &Owner, records: &[ProcessRecord]) -> io::Result<()> {
        mimesis_os::private::own_dir(&self.owners_dir())?;
        let body = serde_json::to_vec(&OwnerFile { owner: owner.clone(), processes: records.to_vec() })?;
        // Atomic: a reader (a starting Mimesis) never sees half a file.
        mimesis_os::private::write_atomic(&self.owner_path(owner), &body)
    }

    fn load(&self) -> io::Result<Vec<(Owner, Vec<ProcessRecord>)>> {
        let rd = match std::fs::read_dir(self.owners_dir()) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in rd.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match mimesis_os::files::read_bounded(&path, 1 << 20)
                .map(|b| mimesis_core::json::from_slice::<OwnerFile>(b.as_slice()))
            {
                Ok(Ok(f)) => out.push((f.owner, f.processes)),
                Ok(Err(e)) => tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable ledger file"),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot read a ledger file"),
            }
        }
        Ok(out)
    }

    fn forget(&self, owner: &Owner) -> io::Result<()> {
        match std::fs::remove_file(self.owner_path(owner)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn archive_corrupted(&self, entry: &CorruptedSession) -> io::Result<()> {
        use std::io::Write;
        mimesis_os::private::create_dir_all(&self.dir)?;
        let mut f = mimesis_os::private::append(&self.dir.join("corrupted.jsonl"))?;
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        f.write_all(&line)
    }

    fn mark_interrupted(&self, entries: &[Interrupted]) -> io::Result<()> {
        let mut all = self.interrupted()?;
        all.retain(|i| !entries.iter().any(|e| e.session_id == i.session_id));
        all.extend_from_slice(entries);
        self.write_interrupted(&all)
    }

    fn interrupted(&self) -> io::Result<Vec<Interrupted>> {
        match mimesis_os::files::read_bounded(&self.interrupted_path(), 1 << 20) {
            Ok(b) => Ok(mimesis_core::json::from_slice(b.as_slice()).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "ignoring an unreadable file of interrupted sessions");
                Vec::new()
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    fn clear_interrupted(&self, ids: &[SessionId]) -> io::Result<()> {
        let mut all = self.interrupted()?;
        let before = all.len();
        all.retain(|i| !ids.contains(&i.session_id));
        if all.len() == before { Ok(()) } else { self.write_interrupted(&all) }
    }
}

/// The fleet database as the ledger, with the owner files as its fallback: a save the
/// database refuses (locked for longer than its busy timeout, a disk error) is written to
/// the owner's file, and loads read both, so a record is never only in memory.
pub struct DbLedger {
    db: Db,
    files: FileLedger,
    /// Owners whose records went to a file because the database refused them.
    spilled: Mutex<HashSet<(u32, u64)>>,
}

impl DbLedger {
    pub fn new(db: Db, data_dir: impl Into<PathBuf>) -> DbLedger {
        DbLedger { db, files: FileLedger::new(data_dir), spilled: Mutex::new(HashSet::new()) }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    fn spilled(&self) -> std::sync::MutexGuard<'_, HashSet<(u32, u64)>> {
        self.spilled.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ProcessLedger for DbLedger {
    fn save(&self, owner: &Owner, records: &[ProcessRecord]) -> io::Result<()> {
        let key = (owner.pid, owner.start_ticks);
        match ProcessLedger::save(&self.db, owner, records) {
            Ok(()) => {
                if self.spilled().remove(&key) {
                    self.files.forget(owner)?;
                }
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the fleet database refused the supervised processes; recording them in a file");
                self.files.save(owner, records)?;
                self.spilled().insert(key);
                Ok(())
            }
        }
    }

    fn load(&self) -> io::Result<Vec<(Owner, Vec<ProcessRecord>)>> {
        let mut all = match ProcessLedger::load(&self.db) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the supervised processes from the fleet database");
                Vec::new()
            }
        };
        // Files: a fallback of this ledger, or an older Mimesis that had no database.
        merge(&mut all, self.files.load()?);
        Ok(all)
    }

    fn forget(&self, owner: &Owner) -> io::Result<()> {
        let db = ProcessLedger::forget(&self.db, owner);
        self.files.forget(owner)?;
        self.spilled().remove(&(owner.pid, owner.start_ticks));
        db
    }

    fn archive_corrupted(&self, entry: &CorruptedSession) -> io::Result<()> {
        ProcessLedger::archive_corrupted(&self.db, entry).or_else(|e| {
            tracing::warn!(error = %e, "the fleet database refused the corrupted-session record; keeping it in a file");
            self.files.archive_corrupted(entry)
        })
    }

    fn mark_interrupted(&self, entries: &[Interrupted]) -> io::Result<()> {
        ProcessLedger::mark_interrupted(&self.db, entries).or_else(|e| {
            tracing::warn!(error = %e, "the fleet database refused the interrupted sessions; keeping them in a file");
            self.files.mark_interrupted(entries)
        })
    }

    /// The database's and the fallback file's, each session once.
    fn interrupted(&self) -> io::Result<Vec<Interrupted>> {
        let mut all = ProcessLedger::interrupted(&self.db).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the interrupted sessions from the fleet database");
            Vec::new()
        });
        for i in self.files.interrupted()? {
            if !all.iter().any(|a| a.session_id == i.session_id) {
                all.push(i);
            }
        }
        Ok(all)
    }

    fn clear_interrupted(&self, ids: &[SessionId]) -> io::Result<()> {
        let db = ProcessLedger::clear_interrupted(&self.db, ids);
        self.files.clear_interrupted(ids)?;
        db
    }
}

/// The ledger for a supervisor whose data dir is `data_dir`: the fleet database there,
/// else (it cannot be opened) the owner files. Never fails.
pub fn open(data_dir: &Path) -> Arc<dyn ProcessLedger> {
    let path = data_dir.join(crate::FILE_NAME);
    match Db::open_shared(&path) {
        Ok(db) => Arc::new(DbLedger::new(db, data_dir)),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e,
                "the fleet database cannot hold the supervised processes; recording them in files");
            Arc::new(FileLedger::new(data_dir))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    use mimesis_core::clock::Timestamp;
    use mimesis_core::ids::SessionId;
    use mimesis_os::owner;
    use mimesis_os::procs;

    fn record(pid: u32) -> ProcessRecord {
        // Right after a spawn, /proc can still show the parent's command line, or none
        // (the exec released the parent before it set up the new arguments).
        let mut cmdline = procs::cmdline(pid).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mine = procs::cmdline(std::process::id()).unwrap_or_default();
        while pid != std::process::id() && (cmdline.is_empty() || cmdline == mine) {
            assert!(Instant::now() < deadline, "the child's command line never showed");
            std::thread::sleep(Duration::from_millis(5));
            cmdline = procs::cmdline(pid).unwrap_or_default();
        }
        ProcessRecord {
            session_id: SessionId::parse("s1").unwrap(),
            cwd: "/p".into(),
            pid,
            start_ticks: procs::start_ticks(pid).unwrap_or(0),
            cmdline,
            boot_id: procs::boot_id(),
            started_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_file_per_owner_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let l = FileLedger::new(d.path());
        assert!(l.load().unwrap().is_empty());
        let me = owner::me();
        l.save(&me, &[record(std::process::id())]).unwrap();
        let all = l.load().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, me);
        assert_eq!(all[0].1[0].pid, std::process::id());
        l.forget(&me).unwrap();
        assert!(l.load().unwrap().is_empty());
        l.forget(&me).unwrap();
    }

    #[test]
    fn a_locked_database_spills_records_to_a_file_until_it_takes_them_again() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(crate::FILE_NAME);
        let ledger = DbLedger::new(crate::Db::open_shared(&path).unwrap(), d.path());
        let me = owner::me();
        let rec = record(std::process::id());
        // Another process holds the write lock for longer than the busy timeout.
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE;").unwrap();
        let t0 = Instant::now();
        ledger.save(&me, std::slice::from_ref(&rec)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2), "waits only the busy timeout: {:?}", t0.elapsed());
        let file = d.path().join("supervised").join(format!("{}-{}.json", me.pid, me.start_ticks));
        assert!(file.exists(), "recorded in the fallback file");
        assert_eq!(FileLedger::new(d.path()).load().unwrap()[0].1, std::slice::from_ref(&rec));
        other.execute_batch("ROLLBACK;").unwrap();
        ledger.save(&me, std::slice::from_ref(&rec)).unwrap();
        assert!(!file.exists(), "back in the database, the file goes");
        assert_eq!(ledger.load().unwrap(), [(me.clone(), vec![rec])]);
        ledger.forget(&me).unwrap();
        assert!(ledger.load().unwrap().is_empty());
    }

    #[test]
    fn an_unusable_database_falls_back_to_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(crate::FILE_NAME), b"not a database at all ".repeat(300)).unwrap();
        let ledger = open(d.path());
        let me = owner::me();
        ledger.save(&me, &[record(std::process::id())]).unwrap();
        assert_eq!(FileLedger::new(d.path()).load().unwrap().len(), 1);
        assert!(std::fs::read(d.path().join(crate::FILE_NAME)).unwrap().starts_with(b"not a database"));
        ledger.forget(&me).unwrap();
    }

    #[test]
    fn corrupted_sessions_are_appended() {
        let d = tempfile::tempdir().unwrap();
        let l = FileLedger::new(d.path());
        let e = CorruptedSession {
            session_id: SessionId::parse("old").unwrap(),
            replaced_by: SessionId::parse("new").unwrap(),
            cwd: "/p".into(),
            transcript_path: "/c/projects/-p/old.jsonl".into(),
            archived_at: Timestamp::from_millis(0),
            reason: "No conversation found".into(),
        };
        l.archive_corrupted(&e).unwrap();
        l.archive_corrupted(&e).unwrap();
        let text = std::fs::read_to_string(d.path().join("corrupted.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains("\"replacedBy\":\"new\""));
    }
}
