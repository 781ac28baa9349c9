use super::*;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn record(pid: u32, session: &str) -> ProcessRecord {
    ProcessRecord {
        session_id: sid(session),
        cwd: "/p".into(),
        pid,
        start_ticks: 99,
        cmdline: vec!["claude".into(), "--resume".into(), session.into()],
        boot_id: "boot".into(),
        started_at: T0,
    }
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
    // A session as the watch layer persists it, built from the core's types.
    let location = TranscriptLocation::of(&root, &file).unwrap();
    let mut facts = SessionFacts::default();
    for line in std::fs::read(&file).unwrap().split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        facts.apply_line(line, &mut String::new());
    }
    let tail = {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&file).unwrap();
        TailState { offset: meta.len(), dev: meta.dev(), ino: meta.ino(), skipping: false, mtime_ms: Some(1) }
    };
    {
        let db = Db::open(&path, T0);
        assert_eq!(db.health(), DbHealth::Ok);
        let batch = Batch {
            sessions: vec![PersistedSession {
                location: location.clone(),
                tail,
                facts: facts.clone(),
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
        let owner = Owner { pid: 7, start_ticks: 8, boot_id: "boot".into() };
        ProcessLedger::save(&db, &owner, &[record(4242, "abc")]).unwrap();
        db.archive_corrupted(&CorruptedSession {
            session_id: sid("abc"),
            replaced_by: sid("def"),
            cwd: "/p".into(),
            transcript_path: file.to_string_lossy().into_owned(),
            archived_at: T0,
            reason: "resume failed".into(),
        })
        .unwrap();
    }
    let db = Db::open(&path, T0);
    let loaded = db.load_sessions(std::slice::from_ref(&root)).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].location, location);
    assert_eq!(loaded[0].tail, tail, "read on from where it stopped");
    assert_eq!(loaded[0].facts.goal(), Some("hi"));
    assert!(db.load_sessions(&[d.path().join("other")]).unwrap().is_empty(), "other roots' rows are not loaded");
    assert_eq!(db.load_links().unwrap().len(), 1);
    assert_eq!(db.settings().limits.max_live_sessions, 7);
    let owners = ProcessLedger::load(&db).unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].1, [record(4242, "abc")]);
    let stats = db.stats();
    assert_eq!(
        (stats.sessions, stats.chain_links, stats.supervised_processes, stats.schema_version),
        (1, 1, 1, MIGRATIONS.len() as u32)
    );
    db.forget(&owners[0].0).unwrap();
    assert!(ProcessLedger::load(&db).unwrap().is_empty());
    let archived = db.corrupted_sessions().unwrap();
    assert_eq!((archived[0].reason.as_str(), archived[0].replaced_by.as_str()), ("resume failed", "def"));
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

#[test]
fn owners_replace_only_their_own_records_from_separate_connections() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    // The app and a `mimesis run`: two processes, two connections to one file.
    let app = Db::open_shared(&path).unwrap();
    let run = Db::open_shared(&path).unwrap();
    let a = Owner { pid: 1, start_ticks: 10, boot_id: "boot".into() };
    let b = Owner { pid: 2, start_ticks: 20, boot_id: "boot".into() };
    let threads: Vec<_> = [(app, a.clone(), 100u32), (run, b.clone(), 200u32)]
        .into_iter()
        .map(|(db, owner, base)| {
            std::thread::spawn(move || {
                for i in 0..50 {
                    let records: Vec<ProcessRecord> = (0..=i % 3).map(|k| record(base + k, "s")).collect();
                    ProcessLedger::save(&db, &owner, &records).unwrap();
                }
                db
            })
        })
        .collect();
    let dbs: Vec<Db> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let all = ProcessLedger::load(&dbs[0]).unwrap();
    assert_eq!(all.len(), 2, "{all:?}");
    let of = |o: &Owner| all.iter().find(|(x, _)| x == o).unwrap().1.iter().map(|r| r.pid).collect::<Vec<_>>();
    assert_eq!(of(&a), [100, 101], "the last save of 49 % 3 = 1");
    assert_eq!(of(&b), [200, 201]);
    dbs[1].forget(&b).unwrap();
    assert_eq!(ProcessLedger::load(&dbs[0]).unwrap().len(), 1, "only b's rows went");
}

#[test]
fn open_shared_never_moves_a_bad_file_aside() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    std::fs::write(&path, b"garbage, not a database ".repeat(200)).unwrap();
    assert!(Db::open_shared(&path).is_err());
    assert!(std::fs::read(&path).unwrap().starts_with(b"garbage"), "left for its owner to rebuild");
}

#[test]
fn a_first_schema_file_is_migrated_and_read_only_opens_still_read_it() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        c.execute("INSERT INTO settings (id, document) VALUES (1, '{\"limits\": {\"maxLiveSessions\": 4}}')", [])
            .unwrap();
    }
    let ro = Db::open_read_only(&path).unwrap();
    assert_eq!(ro.settings().limits.max_live_sessions, 4, "an older schema still gives its settings");
    drop(ro);
    let db = Db::open_shared(&path).unwrap();
    assert_eq!(db.stats().schema_version, MIGRATIONS.len() as u32);
    ProcessLedger::save(&db, &Owner { pid: 1, start_ticks: 1, boot_id: "b".into() }, &[record(5, "s")]).unwrap();
    assert_eq!(ProcessLedger::load(&db).unwrap()[0].1[0].cmdline, ["claude", "--resume", "s"]);
}

/// Bytes SQLite holds in its page cache for `db`'s connection.
fn cache_used(db: &Db) -> i32 {
    let conn = db.conn();
    let (mut cur, mut high) = (0, 0);
    // SAFETY: the handle is a live connection, held locked for the call.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_status(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
            &mut cur,
            &mut high,
            0,
        )
    };
    assert_eq!(rc, rusqlite::ffi::SQLITE_OK);
    cur
}

#[test]
fn loading_and_saving_leave_no_page_cache_behind() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    let root = d.path().join(".claude");
    let sessions: Vec<PersistedSession> = (0..2000)
        .map(|i| {
            let id = format!("{i:08x}-0000-4000-8000-000000000000");
            let mut facts = SessionFacts::default();
            facts.goal = Some(format!("{i} {}", "a goal of some length ".repeat(40)));
            PersistedSession {
                location: TranscriptLocation {
                    root: root.clone(),
                    project_id: "-p".into(),
                    session_id: sid(&id),
                    path: root.join(format!("projects/-p/{id}.jsonl")),
                },
                tail: TailState { offset: 0, dev: 1, ino: i, skipping: false, mtime_ms: None },
                facts,
                dedup: None,
                row: None,
            }
        })
        .collect();
    let db = Db::open(&path, T0);
    db.save(&Batch { sessions, removed: vec![], links: vec![] }, T0).unwrap();
    assert!(cache_used(&db) < 256 * 1024, "after a save: {} bytes cached", cache_used(&db));
    drop(db);

    let db = Db::open(&path, T0);
    assert_eq!(db.load_sessions(std::slice::from_ref(&root)).unwrap().len(), 2000);
    assert!(cache_used(&db) < 256 * 1024, "after the load: {} bytes cached", cache_used(&db));
}

#[test]
fn interrupted_sessions_outlive_the_process_that_recorded_them_until_cleared() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(FILE_NAME);
    let mark = |s: &str, at: i64, by| Interrupted {
        session_id: sid(s),
        cwd: format!("/{s}"),
        at: Timestamp::from_millis(at),
        by,
    };
    {
        let db = Db::open_shared(&path).unwrap();
        db.mark_interrupted(&[mark("b", 2, InterruptedBy::Quit), mark("a", 1, InterruptedBy::Crash)]).unwrap();
        // A later quit marks one again: one row, the newer mark.
        db.mark_interrupted(&[mark("b", 3, InterruptedBy::Signal)]).unwrap();
    }
    // Another process opens the file (the next start of Mimesis).
    let db = Db::open_shared(&path).unwrap();
    assert_eq!(
        ProcessLedger::interrupted(&db).unwrap(),
        [mark("a", 1, InterruptedBy::Crash), mark("b", 3, InterruptedBy::Signal)]
    );
    db.clear_interrupted(&[sid("a"), sid("unknown")]).unwrap();
    assert_eq!(ProcessLedger::interrupted(&db).unwrap(), [mark("b", 3, InterruptedBy::Signal)]);
    // The file ledger (the database could not be used) keeps them the same way.
    let files = ledger::FileLedger::new(d.path().join("files"));
    files.mark_interrupted(&[mark("a", 1, InterruptedBy::Quit)]).unwrap();
    files.mark_interrupted(&[mark("a", 4, InterruptedBy::Crash), mark("c", 5, InterruptedBy::Quit)]).unwrap();
    assert_eq!(files.interrupted().unwrap(), [mark("a", 4, InterruptedBy::Crash), mark("c", 5, InterruptedBy::Quit)]);
    files.clear_interrupted(&[sid("a"), sid("c")]).unwrap();
    assert!(files.interrupted().unwrap().is_empty());
    assert!(!d.path().join("files/interrupted.json").exists(), "nothing left, no file");
}
