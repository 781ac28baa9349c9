//! SPEC W8 with a real SQLite file: a second start shows the roster from the fleet
//! database and reads only what was appended meanwhile (counted in bytes); a corrupt
//! database is moved aside and rebuilt from the transcripts; settings are validated and
//! kept.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::{Clock, SystemClock};
use mimesis_fleetdb::{DbHealth, FILE_NAME};
use mimesis_wiring::{Mimesis, Options};
use serde_json::json;

const SESSIONS: usize = 40;

fn write_corpus(project: &Path) -> u64 {
    let mut total = 0;
    for i in 0..SESSIONS {
        let path = project.join(format!("0000000{i:02}-0000-4000-8000-000000000000.jsonl"));
        let mut f = std::fs::File::create(&path).unwrap();
        let t = SystemClock.now().to_iso();
        let mut lines = vec![json!({"type": "user", "uuid": format!("u{i}"), "timestamp": t, "cwd": "/work/p",
                                    "message": {"role": "user", "content": format!("goal {i}")}})];
        for n in 0..20 {
            lines.push(json!({"type": "assistant", "uuid": format!("a{i}-{n}"), "timestamp": t, "requestId": format!("r{i}-{n}"),
                "message": {"id": format!("m{i}-{n}"), "model": "claude-opus-4-8", "stop_reason": null,
                            "content": [{"type": "text", "text": "x".repeat(200)}], "usage": {"input_tokens": 1, "output_tokens": 2}}}));
        }
        for l in lines {
            let s = format!("{l}\n");
            total += s.len() as u64;
            f.write_all(s.as_bytes()).unwrap();
        }
    }
    total
}

async fn start(root: &Path, data: &Path) -> Mimesis {
    let mut opts = Options::watching(vec![root.to_owned()], data.to_owned());
    opts.poll_interval = Duration::from_millis(100);
    Mimesis::start(opts).await
}

struct Fx {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".claude");
    let project = root.join("projects/-work-p");
    std::fs::create_dir_all(&project).unwrap();
    let data = dir.path().join("data");
    Fx { root, project, data, _dir: dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_start_reads_only_what_was_appended() {
    let fx = fx();
    let corpus = write_corpus(&fx.project);

    // Cold: everything is read once.
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    let cold = engine.engine().snapshot().await.unwrap();
    assert_eq!(cold.sessions.len(), SESSIONS);
    assert_eq!(engine.engine().read_stats().await.unwrap().0, corpus);
    engine.shutdown().await;
    assert!(fx.data.join(FILE_NAME).is_file());
    let written_cold = written(&fx.data);

    // While Mimesis is away, one session grows.
    let grown = fx.project.join("000000007-0000-4000-8000-000000000000.jsonl");
    let extra = format!(
        "{}\n",
        json!({"type": "assistant", "uuid": "late", "timestamp": SystemClock.now().to_iso(), "requestId": "late",
               "message": {"id": "late", "model": "claude-opus-4-8", "stop_reason": "end_turn",
                           "content": [{"type": "text", "text": "late"}], "usage": {"input_tokens": 5, "output_tokens": 7}}})
    );
    std::fs::OpenOptions::new().append(true).open(&grown).unwrap().write_all(extra.as_bytes()).unwrap();

    // Warm: the first roster comes from the database, before any transcript is read.
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().first_roster().await;
    let first = engine.engine().snapshot().await.unwrap();
    assert_eq!(first.sessions.len(), SESSIONS);
    assert!(
        engine.engine().read_stats().await.unwrap().0 <= extra.len() as u64,
        "the first roster reads no transcript"
    );
    let goals: Vec<String> = first.sessions.iter().filter_map(|s| s.goal.clone()).collect();
    assert_eq!(goals.len(), SESSIONS);
    // The sessions whose file did not change are complete in it already: only the grown one
    // is still to be read on.
    let progress = *engine.engine().subscribe_progress().borrow();
    assert!(progress.done >= SESSIONS - 1, "{progress:?}");
    let s0 = first.sessions.iter().find(|s| s.session_id.as_str() == "000000000-0000-4000-8000-000000000000").unwrap();
    assert_eq!(s0.usage.output_tokens, 20 * 2);
    engine.engine().ready().await;
    let (bytes, lines) = engine.engine().read_stats().await.unwrap();
    assert_eq!((bytes, lines), (extra.len() as u64, 1), "only the appended line is read");
    let s7 = engine.engine().snapshot().await.unwrap();
    let s7 = s7.sessions.iter().find(|s| s.session_id.as_str() == "000000007-0000-4000-8000-000000000000").unwrap();
    assert_eq!(s7.usage.output_tokens, 20 * 2 + 7, "usage counted once across runs");
    let cold7 = cold.sessions.iter().find(|s| s.session_id == s7.session_id).unwrap();
    assert_eq!(s7.goal, cold7.goal);
    engine.shutdown().await;
    // Only the session that grew was written again: the others are in the database as they are.
    let rewritten: Vec<String> =
        written(&fx.data).into_iter().filter(|(id, at)| written_cold.get(id) != Some(at)).map(|(id, _)| id).collect();
    assert_eq!(rewritten, ["000000007-0000-4000-8000-000000000000"]);
}

/// When each session was last written to the fleet database.
fn written(data: &Path) -> std::collections::BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open(data.join(FILE_NAME)).unwrap();
    let mut stmt = conn.prepare("SELECT session_id, updated_at FROM sessions").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// What changes while Mimesis runs is stored soon after, with no shutdown to flush it (the
/// store's timer is armed by a change, not ticking while nothing changes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_while_running_is_stored_without_a_shutdown() {
    let fx = fx();
    write_corpus(&fx.project);
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    let stored_offset = |id: &str| {
        let db = mimesis_fleetdb::Db::open_read_only(&fx.data.join(FILE_NAME)).ok()?;
        let rows = db.load_sessions(std::slice::from_ref(&fx.root)).ok()?;
        rows.into_iter().find(|p| p.location.session_id.as_str() == id).map(|p| p.tail.offset)
    };
    let id = "000000003-0000-4000-8000-000000000000";
    let path = fx.project.join(format!("{id}.jsonl"));
    let line = format!(
        "{}\n",
        json!({"type": "user", "uuid": "more", "timestamp": SystemClock.now().to_iso(), "cwd": "/work/p",
               "message": {"role": "user", "content": "one more thing"}})
    );
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(line.as_bytes()).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while stored_offset(id) != Some(len) {
        assert!(std::time::Instant::now() < deadline, "stored: {:?}, file: {len}", stored_offset(id));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_database_is_rebuilt_from_the_transcripts() {
    let fx = fx();
    let corpus = write_corpus(&fx.project);
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    engine.shutdown().await;

    // Garbage over the whole file (and no write-ahead log to save it).
    let db = fx.data.join(FILE_NAME);
    let len = std::fs::metadata(&db).unwrap().len() as usize;
    std::fs::write(&db, vec![0x5a; len.max(8192)]).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(fx.data.join(format!("{FILE_NAME}{ext}")));
    }

    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    assert_eq!(engine.engine().snapshot().await.unwrap().sessions.len(), SESSIONS);
    assert_eq!(engine.engine().read_stats().await.unwrap().0, corpus, "everything read again");
    let health = engine.db().unwrap().health();
    assert!(matches!(health, DbHealth::Rebuilt { .. }), "{health:?}");
    let report = engine.doctor().await;
    assert!(matches!(report.database.health, DbHealth::Rebuilt { .. }));
    engine.shutdown().await;

    // And the rebuilt database serves the next start.
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    assert_eq!(engine.engine().read_stats().await.unwrap().0, 0);
    assert_eq!(engine.db().unwrap().health(), DbHealth::Ok);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_are_validated_stored_and_applied() {
    let fx = fx();
    let engine = start(&fx.root, &fx.data).await;
    engine.engine().ready().await;
    let bad =
        engine.settings_set(&json!({"limits": {"idleTimeoutSecs": 5}, "watch": {"staleTimeoutSecs": "soon"}})).await;
    let fields: Vec<&str> = bad.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["watch.staleTimeoutSecs", "limits.idleTimeoutSecs"]);
    assert_eq!(bad.settings, engine.settings(), "nothing saved");
    let mut doc = serde_json::to_value(engine.settings()).unwrap();
    doc["limits"]["maxLiveSessions"] = json!(5);
    doc["notifications"]["waitingForInput"] = json!(false);
    let ok = engine.settings_set(&doc).await;
    assert!(ok.errors.is_empty(), "{:?}", ok.errors);
    engine.shutdown().await;
    let engine = start(&fx.root, &fx.data).await;
    let s = engine.settings();
    assert_eq!((s.limits.max_live_sessions, s.notifications.waiting_for_input), (5, false));
    engine.shutdown().await;
}
