//! Issue 34 §1: the store does no I/O. Driven through a disk held in memory (no file, no
//! folder), a transcript's lines go in and the store's events and next deadline come out.

use std::sync::{Arc, Mutex};

use super::*;
use crate::tail::TailStats;

/// Transcripts in memory: what each path holds, as lines.
#[derive(Clone, Default)]
struct MemDisk {
    files: Arc<Mutex<HashMap<PathBuf, Vec<String>>>>,
    /// Lines read so far, per session.
    read: HashMap<SessionId, usize>,
}

impl MemDisk {
    fn append(&self, path: &Path, line: &Value) {
        self.files.lock().unwrap().entry(path.to_owned()).or_default().push(line.to_string());
    }
}

impl Disk for MemDisk {
    fn exists(&self, path: &Path) -> bool {
        self.files.lock().unwrap().contains_key(path)
    }

    fn adopt(&mut self, _: &SessionId, tail: crate::tail::FileTail) -> TailInfo {
        TailInfo::of(&tail)
    }

    fn read(
        &mut self,
        id: &SessionId,
        path: &Path,
        facts: &mut SessionFacts,
        tail: &mut TailInfo,
    ) -> std::io::Result<ReadOutcome> {
        let files = self.files.lock().unwrap();
        let Some(lines) = files.get(path) else { return Ok(ReadOutcome::Missing) };
        let done = self.read.entry(id.clone()).or_default();
        let mut scratch = String::new();
        for l in &lines[*done..] {
            facts.apply_line_with(&crate::parse::SonicJson, l.as_bytes(), &mut scratch);
        }
        *done = lines.len();
        let n = lines.len() as u64;
        *tail = TailInfo { has_lines: n > 0, stats: TailStats { lines: n, ..TailStats::default() }, ..*tail };
        Ok(ReadOutcome::Appended)
    }

    fn forget(&mut self, id: &SessionId) {
        self.read.remove(id);
    }

    fn repo_root(&self, _: &Path) -> Option<String> {
        None
    }

    fn approval(&self, _: &Path, _: Option<&Path>, _: &str, _: &str, _: Option<&str>) -> status::Approval {
        status::Approval::Needed
    }
}

#[test]
fn the_store_runs_on_a_disk_in_memory() {
    let disk = MemDisk::default();
    let root = PathBuf::from("/nowhere/.claude");
    let path = root.join(format!("projects/-p/{SID}.jsonl"));
    let loc = TranscriptLocation::of(&root, &path).unwrap();
    let mut store = Store::with_disk(Timeouts::default(), Box::new(disk.clone()));
    store.end_bulk(now(0));
    assert!(store.file_changed(loc.clone(), now(0)).is_empty(), "no file: no session");

    disk.append(&path, &prompt("go", 0));
    disk.append(&path, &tool_use("t1", 1));
    let ev = store.file_changed(loc.clone(), now(2)).events;
    let [StoreEvent::Discovered { session }] = ev.as_slice() else { panic!("{ev:?}") };
    assert_eq!((session.status, session.goal.as_deref()), (Status::Working, Some("go")));
    // The approval timeout, 5 s after the tool_use, as an instant of the monotonic clock.
    let later = Now { wall: at(2), mono: Mono::from_millis(10_000) };
    assert_eq!(store.next_deadline(later), Some(Mono::from_millis(14_000)));
    let ev = store.tick(now(6)).events;
    let [StoreEvent::Updated { changes, .. }] = ev.as_slice() else { panic!("{ev:?}") };
    assert_eq!(json_of(changes)["status"], json!("waiting_for_approval"));

    disk.files.lock().unwrap().remove(&path);
    assert!(!store.path_removed(&path).is_empty(), "gone from the disk: removed");
    assert!(store.is_empty());
}
