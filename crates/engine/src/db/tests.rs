use super::*;
use crate::tail::FileTail;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

#[test]
fn sessions_links_settings_and_processes_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("data").join(FILE_NAME);
    let root = d.path().join(".claude");
    let file = root.join("projects/-p/abc.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "{\"type\":\"user\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"message\":{\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let indexed = crate::store::IndexedFile::read(TranscriptLocation::of(&root, &file).unwrap()).unwrap();
    {
        let db = Db::open(&path, T0);
        assert_eq!(db.health(), DbHealth::Ok);
        let batch = Batch {
            sessions: vec![PersistedSession {
                location: indexed.location.clone(),
                tail: indexed.tail.state().unwrap(),
                facts: indexed.facts.clone(),
                dedup: None,
                row: None,
            }],
            removed: vec![],
            links: vec![Link { predecessor: sid("x"), successor: sid("abc"), reason: LinkReason::Clear, at: T0 }],
        };
        db.save(&batch, T0).unwrap();
        let mut s = Settings::default();
        s.limits.max_live_sessions = 7;
        db.save_settings(&s).unwrap();
        let p = SupervisedProcess {
            pid: 4242,
            start_ticks: 99,
            session_id: sid("abc"),
            command_line: "claude --resume abc".into(),
            started_at: T0,
        };
        db.record_supervised(&p).unwrap();
        db.archive_corrupted(&CorruptedSession {
            session_id: sid("abc"),
            transcript_path: Some(file.clone()),
            archive_path: None,
            reason: "resume failed".into(),
            archived_at: T0,
        })
        .unwrap();
    }
    let db = Db::open(&path, T0);
    let loaded = db.load_sessions(std::slice::from_ref(&root)).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].location, indexed.location);
    assert_eq!(loaded[0].facts.goal(), Some("hi"));
    assert!(db.load_sessions(&[d.path().join("other")]).unwrap().is_empty(), "other roots' rows are not loaded");
    assert_eq!(db.load_links().unwrap().len(), 1);
    assert_eq!(db.settings().limits.max_live_sessions, 7);
    assert_eq!(db.supervised_processes().unwrap()[0].command_line, "claude --resume abc");
    db.remove_supervised(4242, 99).unwrap();
    assert!(db.supervised_processes().unwrap().is_empty());
    assert_eq!(db.corrupted_sessions().unwrap()[0].reason, "resume failed");
    let stats = db.stats();
    assert_eq!((stats.sessions, stats.chain_links, stats.schema_version), (1, 1, MIGRATIONS.len() as u32));
    // Resuming reads nothing that was read before.
    let resumed = crate::store::IndexedFile::resume(loaded.into_iter().next().unwrap()).unwrap();
    assert_eq!(resumed.tail.stats.bytes_read, 0);
    assert_eq!(resumed.facts.goal(), Some("hi"));
    let _ = FileTail::new("unused");
}

#[test]
fn a_corrupt_file_is_moved_aside_and_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    std::fs::write(&path, b"this is not a database, just garbage bytes that fill a page ".repeat(200)).unwrap();
    let db = Db::open(&path, T0);
    let DbHealth::Rebuilt { moved_to: Some(moved), .. } = db.health() else { panic!("{:?}", db.health()) };
    assert!(moved.exists());
    assert!(db.load_sessions(&[]).unwrap().is_empty());
    db.save_settings(&Settings::default()).unwrap();
    assert_eq!(Db::inspect(&path).health, DbHealth::Ok);
}

#[test]
fn a_newer_schema_is_not_written_over() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    {
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let db = Db::open(&path, T0);
    assert!(matches!(db.health(), DbHealth::Rebuilt { .. }));
    assert_eq!(db.stats().schema_version, MIGRATIONS.len() as u32);
}

#[test]
fn inspect_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    assert_eq!(Db::inspect(&path).health, DbHealth::Missing);
    assert!(!path.exists());
    std::fs::write(&path, b"garbage").unwrap();
    assert!(matches!(Db::inspect(&path).health, DbHealth::Broken { .. }));
    assert_eq!(std::fs::read(&path).unwrap(), b"garbage");
}

#[test]
fn a_locked_file_is_reported_and_replaced_by_memory_never_fatal() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    drop(Db::open(&path, T0));
    // Another process holds the file exclusively.
    let other = Connection::open(&path).unwrap();
    other.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;").unwrap();
    let db = Db::open(&path, T0);
    assert!(matches!(db.health(), DbHealth::InMemory { ref reason } if reason.contains("locked")), "{:?}", db.health());
    // It works all the same, for this run.
    db.save_settings(&Settings::default()).unwrap();
    assert_eq!(db.settings(), Settings::default());
    drop(other);
    assert!(path.exists(), "the locked file was left alone");
}
