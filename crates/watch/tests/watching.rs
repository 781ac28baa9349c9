//! SPEC W2/W3/W7/W9 with the real `notify` watcher on real files: a writer thread appends
//! while the engine follows; truncation, replacement, deletion, malformed and giant lines,
//! invalid UTF-8, the live registry, and timeouts on a manual clock.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mimesis_core::{Clock, ManualClock, Status, StoreEvent, SystemClock, Timestamp};
use mimesis_watch::engine::IndexPriority;
use mimesis_watch::{Engine, EngineConfig};
use serde_json::{Value, json};
use tokio::sync::broadcast;

const WAIT: Duration = Duration::from_secs(10);

struct Root {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

fn root() -> Root {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".claude");
    let project = root.join("projects/-work-proj");
    std::fs::create_dir_all(&project).unwrap();
    Root { _dir: dir, root, project }
}

fn now_iso() -> String {
    SystemClock.now().to_iso()
}

fn prompt(text: &str) -> Value {
    json!({"type": "user", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": now_iso(), "cwd": "/work/proj",
           "message": {"role": "user", "content": text}})
}

fn reply(n: usize) -> Value {
    json!({"type": "assistant", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": now_iso(),
           "requestId": format!("req_{n}"),
           "message": {"id": format!("msg_{n}"), "model": "claude-opus-4-8", "stop_reason": "end_turn",
                       "content": [{"type": "text", "text": format!("reply {n}")}],
                       "usage": {"input_tokens": 1, "output_tokens": 1}}})
}

fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap();
    b.push(b'\n');
    b
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

async fn start(roots: Vec<PathBuf>) -> Engine {
    if std::env::var_os("MIMESIS_TEST_LOG").is_some() {
        let _ = tracing_subscriber::fmt().with_env_filter("mimesis_engine=trace").with_test_writer().try_init();
    }
    let engine = Engine::start(EngineConfig { roots, poll_interval: Duration::from_millis(200), ..Default::default() });
    engine.ready().await;
    engine
}

/// Waits until the session, as the snapshot shows it, satisfies `cond`.
async fn wait_session(engine: &Engine, id: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let snap = engine.snapshot().await.unwrap();
        let s = snap.sessions.iter().find(|s| s.session_id.as_str() == id).map(|s| serde_json::to_value(s).unwrap());
        if let Some(s) = &s
            && cond(s)
        {
            return s.clone();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; session now: {s:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn next_event(
    rx: &mut broadcast::Receiver<Arc<mimesis_watch::Envelope>>,
    pred: impl Fn(&StoreEvent) -> bool,
) -> StoreEvent {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let env = tokio::time::timeout_at(deadline, rx.recv()).await.expect("event in time").expect("event stream");
        if pred(&env.event) {
            return env.event.clone();
        }
    }
}

const ID: &str = "0f0e0d0c-0000-4000-8000-00000000000a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_writer_is_followed_exactly_once_through_torn_writes() {
    let r = root();
    let path = r.project.join(format!("{ID}.jsonl"));
    append(&path, &line(&prompt("count every reply once")));
    let engine = start(vec![r.root.clone()]).await;
    wait_session(&engine, ID, "discovery", |_| true).await;

    // Every record is written in two or three pieces with pauses between them, so the
    // watcher often sees half a line.
    const N: usize = 400;
    let writer = std::thread::spawn(move || {
        for n in 0..N {
            let bytes = line(&reply(n));
            let cut1 = 1 + (n * 7) % (bytes.len() - 2);
            let cut2 = (cut1 + 1 + n % 5).min(bytes.len() - 1);
            for piece in [&bytes[..cut1], &bytes[cut1..cut2], &bytes[cut2..]] {
                append(&path, piece);
                if n % 3 == 0 {
                    std::thread::sleep(Duration::from_micros(300));
                }
            }
        }
    });
    writer.join().unwrap();
    let s = wait_session(&engine, ID, "all 400 replies", |s| s["usage"]["outputTokens"] == N).await;
    assert_eq!(s["usage"]["inputTokens"], N, "each message counted exactly once");
    assert_eq!(s["malformedLines"], 0, "a torn line is held, never counted as malformed");
    assert_eq!(s["status"], "waiting_for_input");
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_replacement_and_deletion() {
    let r = root();
    let path = r.project.join(format!("{ID}.jsonl"));
    append(&path, &[line(&prompt("first goal")), line(&reply(1))].concat());
    let engine = start(vec![r.root.clone()]).await;
    let mut rx = engine.subscribe();
    wait_session(&engine, ID, "first goal", |s| s["goal"] == "first goal").await;

    // Truncated to something shorter: re-read from the start.
    std::fs::write(&path, line(&prompt("after truncation"))).unwrap();
    wait_session(&engine, ID, "the truncated content", |s| {
        s["goal"] == "after truncation" && s["usage"]["outputTokens"] == 0
    })
    .await;

    // Replaced by another file (new inode), even a longer one: re-read.
    let tmp = r.project.join("tmp.partial");
    std::fs::write(&tmp, [line(&prompt("replaced")), line(&reply(1)), line(&reply(2)), line(&reply(3))].concat())
        .unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    wait_session(&engine, ID, "the replaced content", |s| s["goal"] == "replaced" && s["usage"]["outputTokens"] == 3)
        .await;

    std::fs::remove_file(&path).unwrap();
    let ev = next_event(&mut rx, |e| matches!(e, StoreEvent::Removed { .. })).await;
    assert_eq!(ev.session_id().as_str(), ID);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_projects_and_sessions_are_discovered_and_reported_once() {
    let r = root();
    let engine = start(vec![r.root.clone()]).await;
    let mut rx = engine.subscribe();
    // A project folder created after the watch began, with a file written at once.
    let project = r.root.join("projects/-brand-new");
    std::fs::create_dir_all(&project).unwrap();
    append(&project.join(format!("{ID}.jsonl")), &line(&prompt("hello")));
    let ev = next_event(&mut rx, |e| matches!(e, StoreEvent::Discovered { .. })).await;
    let StoreEvent::Discovered { session } = ev else { unreachable!() };
    assert_eq!(session.goal.as_deref(), Some("hello"));
    assert_eq!(session.project_id, "-brand-new");
    // An update carries only what changed.
    append(&project.join(format!("{ID}.jsonl")), &line(&reply(1)));
    let ev = next_event(&mut rx, |e| matches!(e, StoreEvent::Updated { .. })).await;
    let StoreEvent::Updated { changes, .. } = ev else { unreachable!() };
    assert!(changes.usage.is_some() && changes.status.is_some(), "{changes:?}");
    assert!(changes.goal.is_none() && changes.cwd.is_none(), "unchanged fields are not sent: {changes:?}");
    engine.shutdown().await;
}

/// What is written while the first index runs (before `projects/` is watched: that comes
/// with the index's end) is followed all the same: an append and a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_written_during_the_first_index_is_followed() {
    let r = root();
    let first = r.project.join(format!("{ID}.jsonl"));
    append(&first, &line(&prompt("before")));
    for i in 0..200 {
        append(&r.project.join(format!("0f0e0d0c-0000-4000-8000-{i:012}.jsonl")), &line(&prompt("filler")));
    }
    let config =
        EngineConfig { roots: vec![r.root.clone()], poll_interval: Duration::from_millis(200), ..Default::default() };
    let engine = Engine::start(config);
    // While the index runs, or just after it: either way it is seen.
    append(&first, &line(&reply(1)));
    let other = "0f0e0d0c-0000-4000-8000-00000000000b";
    append(&r.project.join(format!("{other}.jsonl")), &line(&prompt("during")));
    engine.ready().await;
    wait_session(&engine, ID, "the reply written during the index", |s| s["usage"]["outputTokens"] == 1).await;
    wait_session(&engine, other, "the session created during the index", |s| s["goal"] == "during").await;
    // And `projects/` is watched from then on.
    append(&first, &line(&reply(2)));
    wait_session(&engine, ID, "a reply after the index", |s| s["usage"]["outputTokens"] == 2).await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_are_counted_and_skipped_never_fatal() {
    let r = root();
    let path = r.project.join(format!("{ID}.jsonl"));
    append(&path, &line(&prompt("robust")));
    let engine = start(vec![r.root.clone()]).await;
    wait_session(&engine, ID, "discovery", |_| true).await;

    append(&path, b"{\"type\": \"user\", this is not json\n");
    // Invalid UTF-8 inside a string: repaired, not fatal, the record still counts.
    let mut bad = serde_json::to_vec(&reply(1)).unwrap();
    let at = bad.windows(7).position(|w| w == b"reply 1").unwrap();
    bad.splice(at..at, [0xff, 0xfe]);
    bad.push(b'\n');
    append(&path, &bad);
    // A 50 MB line, written in 1 MB pieces: skipped without being held.
    let hwm_before = vm_hwm_kb();
    let chunk = vec![b'x'; 1 << 20];
    append(&path, b"{\"type\":\"user\",\"message\":{\"content\":\"");
    for _ in 0..50 {
        append(&path, &chunk);
    }
    append(&path, b"\"}}\n");
    append(&path, &line(&reply(2)));
    let s = wait_session(&engine, ID, "the record after the giant line", |s| s["usage"]["outputTokens"] == 2).await;
    assert_eq!(s["malformedLines"], 2, "one malformed line and one oversized line");
    let grown_mb = (vm_hwm_kb().saturating_sub(hwm_before)) / 1024;
    assert!(grown_mb < 40, "a 50 MB line must not be held in memory (peak grew by {grown_mb} MB)");
    engine.shutdown().await;
}

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_registry_marks_sessions_live_and_waiting() {
    let r = root();
    append(&r.project.join(format!("{ID}.jsonl")), &line(&prompt("live one")));
    let engine = start(vec![r.root.clone()]).await;
    wait_session(&engine, ID, "discovery", |s| s["live"] == false).await;
    // A child of this test plays the running `claude`.
    let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = child.id();
    let sessions = r.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let entry = json!({"pid": pid, "sessionId": ID, "cwd": "/work/proj", "status": "waiting",
                       "waitingFor": "permission prompt", "statusUpdatedAt": SystemClock.now().millis()});
    std::fs::write(sessions.join(format!("{pid}.json")), entry.to_string()).unwrap();
    let s = wait_session(&engine, ID, "live and waiting for approval", |s| {
        s["live"] == true && s["status"] == "waiting_for_approval"
    })
    .await;
    assert_eq!(s["pid"], pid);
    // It exits: its file goes, then its process.
    std::fs::remove_file(sessions.join(format!("{pid}.json"))).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    wait_session(&engine, ID, "ended", |s| s["live"] == false && s["status"] == "idle").await;
    // A registry file of a dead process counts for nothing.
    let dead = json!({"pid": 999_999_999u32, "sessionId": ID, "status": "busy"});
    std::fs::write(sessions.join("999999999.json"), dead.to_string()).unwrap();
    // A barrier: one watcher delivers both changes in order, and the engine reads the
    // registry after each batch, so once this later append shows, the dead entry was read.
    append(&r.project.join(format!("{ID}.jsonl")), &line(&reply(1)));
    let s = wait_session(&engine, ID, "the reply after the dead entry", |s| s["usage"]["outputTokens"] == 1).await;
    assert_eq!(s["live"], false, "a dead process is not live");
    engine.shutdown().await;
}

/// An idle engine polls rarely, but a registered process is polled for as usual: one that
/// dies without removing its registry file (a crash) is seen within a poll or two, even
/// with an idle interval of an hour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_process_that_crashes_is_seen_even_by_an_idle_engine() {
    const POLL: Duration = Duration::from_millis(200);
    let r = root();
    append(&r.project.join(format!("{ID}.jsonl")), &line(&prompt("crashes")));
    let sessions = r.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let engine = Engine::start(EngineConfig {
        roots: vec![r.root.clone()],
        poll_interval: POLL,
        idle_poll_interval: Duration::from_secs(3600),
        ..Default::default()
    });
    engine.ready().await;
    wait_session(&engine, ID, "discovery", |s| s["live"] == false).await;
    // Nothing to poll for: the engine goes idle (its next poll an hour away).
    let polls = wait_polls(&engine, "idle", |p| p.next_in > Duration::from_secs(60)).await;
    // The running `claude`: a child of this test, killed without a word.
    let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = child.id();
    let entry = json!({"pid": pid, "sessionId": ID, "cwd": "/work/proj", "status": "busy"});
    std::fs::write(sessions.join(format!("{pid}.json")), entry.to_string()).unwrap();
    wait_session(&engine, ID, "live", |s| s["live"] == true).await;
    // Polled for again, and still after two polls with nothing else changing.
    wait_polls(&engine, "two more polls", |p| p.done >= polls.done + 2).await;
    let p = engine.polls().await.unwrap();
    assert!(p.next_in <= POLL, "a registered process keeps the quick poll: {p:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sessions.join(format!("{pid}.json")).exists(), "the registry file stays, as after a crash");
    wait_session(&engine, ID, "no longer live", |s| s["live"] == false).await;
    engine.shutdown().await;
}

/// Waits until the engine's polls satisfy `cond`.
async fn wait_polls(
    engine: &Engine,
    what: &str,
    cond: impl Fn(&mimesis_watch::PollState) -> bool,
) -> mimesis_watch::PollState {
    let deadline = Instant::now() + WAIT;
    loop {
        let p = engine.polls().await.unwrap();
        if cond(&p) {
            return p;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {p:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_run_on_the_injected_clock() {
    let r = root();
    let t0 = Timestamp::parse("2026-11-01T10:00:00.000Z").unwrap();
    let rec = json!({"type": "assistant", "uuid": "u1", "timestamp": t0.to_iso(), "message": {"id": "m1", "model": "claude-x",
                     "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make deploy"}}]}});
    append(&r.project.join(format!("{ID}.jsonl")), &line(&rec));
    let clock = Arc::new(ManualClock::new(t0.plus(Duration::from_secs(1))));
    let engine =
        Engine::start(EngineConfig { roots: vec![r.root.clone()], clock: clock.clone(), ..Default::default() });
    engine.ready().await;
    let status = |e: &Engine| {
        let e = e.clone();
        async move { e.snapshot().await.unwrap().sessions[0].status }
    };
    assert_eq!(status(&engine).await, Status::Working);
    clock.advance(Duration::from_secs(4));
    engine.tick().await.unwrap();
    assert_eq!(status(&engine).await, Status::WaitingForApproval, "5 s after the tool_use");
    clock.advance(Duration::from_secs(10 * 60));
    engine.tick().await.unwrap();
    assert_eq!(status(&engine).await, Status::Idle, "10 min without activity");
    engine.shutdown().await;
}

/// A session started a moment ago (supervised, no transcript yet: Claude Code writes it at
/// the first prompt) opens as an empty timeline that is waiting, not as an error, and
/// follows the file from its first byte once it appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_of_a_session_without_a_transcript_yet_waits_then_follows_it() {
    let r = root();
    let engine = start(vec![r.root.clone()]).await;
    let id: mimesis_core::SessionId = "0f0e0d0c-0000-4000-8000-0000000000b1".parse().unwrap();
    let location = mimesis_core::layout::TranscriptLocation::expected(&r.root, Path::new("/work/proj"), &id);
    let path = location.path.clone();
    assert!(!path.exists());
    let sup = mimesis_core::supervision::view::Supervision::starting("claude", "/work/proj", SystemClock.now());
    engine.set_supervision(location, Some(sup));
    wait_session(&engine, id.as_str(), "the supervised row", |s| s["source"] == "pty").await;

    let mut updates = engine.subscribe_timeline();
    let page = engine.open_timeline(&id, 50).await.expect("an empty timeline, not an error");
    assert_eq!((page.total, page.waiting), (0, true));

    append(&path, &line(&prompt("the first prompt")));
    // Updates are numbered: each names the one before it, the first names the page.
    let mut last = page.seq;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let u = tokio::time::timeout_at(deadline, updates.recv()).await.expect("an update in time").unwrap();
        if u.session_id != id {
            continue;
        }
        assert_eq!(u.prev, last, "no update is skipped: {u:?}");
        assert!(u.seq > u.prev);
        last = u.seq;
        if u.total >= 2 {
            break;
        }
        if u.total == 1 {
            append(&path, &line(&prompt("the second prompt")));
        }
    }
    let page = engine.timeline_range(&id, 0, 10).await.unwrap();
    assert!(!page.waiting && page.total >= 2, "{page:?}");
    assert_eq!(page.seq, last, "a page says which update it includes");
}

/// Issue 14 (first launch): the initial index reports how far it has come — the files found,
/// then those read in full, part by part — and ends with every file read and `indexing`
/// false; the rows of a first quick read are marked provisional until their file was read
/// in full, and none is left provisional.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_index_reports_its_progress_and_its_provisional_rows() {
    first_index_progress(IndexPriority::Normal).await;
}

/// The app's first index reads in full on threads of its own at the lowest priority: the
/// same roster, the same progress, every file read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_index_in_the_background_reads_every_file_all_the_same() {
    first_index_progress(IndexPriority::Background).await;
}

/// `n` transcripts of a prompt and a reply; one in 100 larger than a peek reads.
fn many_sessions(r: &Root, n: usize) {
    let big = "x".repeat(70_000);
    for i in 0..n {
        let id = format!("{i:08x}-0000-4000-8000-000000000000");
        let mut bytes = line(&prompt("a task"));
        if i % 100 == 0 {
            bytes.extend(line(&prompt(&big)));
        }
        bytes.extend(line(&reply(i)));
        std::fs::write(r.project.join(format!("{id}.jsonl")), bytes).unwrap();
    }
}

async fn first_index_progress(index_priority: IndexPriority) {
    let r = root();
    let n = 1_100; // more than two parts of the index
    many_sessions(&r, n);
    let engine = Engine::start(EngineConfig {
        roots: vec![r.root.clone()],
        poll_interval: Duration::from_millis(200),
        index_priority,
        ..Default::default()
    });
    engine.ready().await;
    let mut progress = engine.subscribe_progress();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = *progress.borrow_and_update();
        seen.push(p);
        assert!(p.done <= p.total || p.total == 0, "{p:?}");
        if !p.indexing {
            break;
        }
        assert!(Instant::now() < deadline, "the index never ended: {seen:?}");
        let _ = tokio::time::timeout(Duration::from_secs(5), progress.changed()).await;
    }
    let last = *seen.last().unwrap();
    assert_eq!((last.done, last.total), (n, n), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].done <= w[1].done), "done only grows: {seen:?}");
    let snap = engine.snapshot().await.unwrap();
    assert!(!snap.progress.indexing && snap.progress.done == n);
    assert_eq!(snap.sessions.len(), n);
    assert!(
        snap.sessions.iter().all(|s| !serde_json::to_value(s)
            .unwrap()
            .as_object()
            .unwrap()
            .contains_key("provisional"))
    );
    engine.shutdown().await;
}

/// A page that reads its snapshot while the app's first index (in the background) adopts its
/// parts, and applies every event after that snapshot's `seq`, has the final roster: the
/// snapshot may already hold numbers whose events come later, and applied again they change
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_during_the_first_index_and_the_events_after_it_give_the_final_roster() {
    let r = root();
    let n = 1_100;
    many_sessions(&r, n);
    let engine = Engine::start(EngineConfig {
        roots: vec![r.root.clone()],
        poll_interval: Duration::from_millis(200),
        index_priority: IndexPriority::Background,
        ..Default::default()
    });
    let mut rx = engine.subscribe();
    engine.ready().await;
    let mut progress = engine.subscribe_progress();
    // A snapshot once a part is in, if the index has not ended by then.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = *progress.borrow_and_update();
        if p.done > 0 || !p.indexing {
            break;
        }
        assert!(Instant::now() < deadline, "no part came");
        let _ = tokio::time::timeout(Duration::from_secs(5), progress.changed()).await;
    }
    let during = engine.snapshot().await.unwrap();
    while progress.borrow_and_update().indexing {
        assert!(Instant::now() < deadline, "the index never ended");
        let _ = tokio::time::timeout(Duration::from_secs(5), progress.changed()).await;
    }
    let end = engine.snapshot().await.unwrap();
    let mut rows: std::collections::HashMap<_, _> =
        during.sessions.into_iter().map(|s| (s.session_id.clone(), s)).collect();
    let mut updated = 0;
    loop {
        match rx.try_recv() {
            Ok(e) if e.seq <= during.seq => {}
            Ok(e) => match &e.event {
                StoreEvent::Discovered { session } => {
                    rows.insert(session.session_id.clone(), (**session).clone());
                }
                StoreEvent::Updated { session_id, changes } => {
                    updated += 1;
                    rows.get_mut(session_id).expect("an update of a known row").apply((**changes).clone());
                }
                StoreEvent::Removed { session_id } => {
                    rows.remove(session_id);
                }
            },
            Err(broadcast::error::TryRecvError::Empty) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(end.sessions.len(), n);
    assert!(during.seq == end.seq || updated > 0, "the full reads' numbers were published");
    for s in &end.sessions {
        assert_eq!(rows.get(&s.session_id), Some(s), "the page's row of {}", s.session_id);
    }
    assert_eq!(rows.len(), n);
    engine.shutdown().await;
}

/// A transcript record of Claude Code `version` in its terminal (`entrypoint: cli`): a
/// version that keeps a registry entry for as long as it runs.
fn cli(mut record: Value, version: &str) -> Value {
    record["entrypoint"] = json!("cli");
    record["version"] = json!(version);
    record["sessionId"] = json!(ID);
    record
}

/// The assistant asks the user a question (AskUserQuestion): waiting for input at once.
fn question() -> Value {
    json!({"type": "assistant", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": now_iso(),
           "message": {"id": "msg_q", "model": "claude-opus-5-5", "stop_reason": "tool_use",
                       "content": [{"type": "tool_use", "id": "toolu_q", "name": "AskUserQuestion",
                                    "input": {"questions": [{"question": "Red or blue?", "options": []}]}}],
                       "usage": {"input_tokens": 1, "output_tokens": 1}}})
}

/// Issue 33: where no registry can be read for a session's process, a missing entry says
/// nothing, and the session is read from its transcript. (It used to be idle from its
/// first prompt on: "no entry means no process" for the CLI's interactive sessions.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_readable_registry_a_cli_session_is_read_from_its_transcript() {
    for (case, setup) in [
        // 2.1.330 in a config folder whose `sessions` is not a folder (it cannot register).
        ("sessions is a file", Some(false)),
        // A transcript replayed (or written from a container) into a folder with no registry.
        ("no sessions folder", None),
        // A container's session: its entry names another pid namespace.
        ("another pid namespace", Some(true)),
    ] {
        let r = root();
        match setup {
            Some(false) => std::fs::write(r.root.join("sessions"), b"").unwrap(),
            Some(true) => {
                std::fs::create_dir_all(r.root.join("sessions")).unwrap();
                let entry = json!({"pid": 999_999_999u32, "sessionId": ID, "status": "busy",
                                   "pidDomain": "linux:00000000000000000000000000000000:pid:[1]"});
                std::fs::write(r.root.join("sessions/999999999.json"), entry.to_string()).unwrap();
            }
            None => {}
        }
        let path = r.project.join(format!("{ID}.jsonl"));
        let engine = start(vec![r.root.clone()]).await;
        append(&path, &line(&cli(prompt("first prompt"), "2.1.330")));
        wait_session(&engine, ID, &format!("{case}: working"), |s| s["status"] == "working").await;
        append(&path, &line(&cli(question(), "2.1.330")));
        let s = wait_session(&engine, ID, &format!("{case}: asking"), |s| s["status"] == "waiting_for_input").await;
        assert_eq!(s["live"], false, "{case}: nothing says it is live either");
        engine.shutdown().await;
    }
}

/// Issue 33: where the registry is read, a session gone from it ended; if its transcript
/// then goes on (it runs where this registry does not see it), it is read from that again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_gone_from_a_readable_registry_ended_until_its_transcript_goes_on() {
    let r = root();
    let sessions = r.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let path = r.project.join(format!("{ID}.jsonl"));
    let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = child.id();
    let entry = json!({"pid": pid, "sessionId": ID, "status": "busy"});
    std::fs::write(sessions.join(format!("{pid}.json")), entry.to_string()).unwrap();
    append(&path, &line(&cli(prompt("go"), "2.1.332")));
    let engine = start(vec![r.root.clone()]).await;
    wait_session(&engine, ID, "live", |s| s["live"] == true && s["status"] == "working").await;
    std::fs::remove_file(sessions.join(format!("{pid}.json"))).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    wait_session(&engine, ID, "ended", |s| s["live"] == false && s["status"] == "idle").await;
    // Written after the end was seen. Timestamps are in milliseconds, and on a fast machine
    // this write can fall in the very millisecond the absence was seen, which the rule
    // counts as before (a CLI writes its last record, then removes its entry): the record
    // says a moment later, as any real one written elsewhere after the end does.
    let mut more = prompt("more, from elsewhere");
    more["timestamp"] = json!(SystemClock.now().plus(Duration::from_millis(50)).to_iso());
    append(&path, &line(&cli(more, "2.1.332")));
    wait_session(&engine, ID, "working again", |s| s["status"] == "working").await;
    engine.shutdown().await;
}

/// Issue 33: the CLI rewrites its registry file in place while it runs (after a dialog is
/// answered its status changes), and a read may find it empty, half written or gone for a
/// moment: its session stays live while its process runs (it used to flicker `live:false`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_file_rewritten_in_place_never_makes_its_session_flicker() {
    let r = root();
    let sessions = r.root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let path = r.project.join(format!("{ID}.jsonl"));
    let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = child.id();
    let file = sessions.join(format!("{pid}.json"));
    let entry = |status: &str| json!({"pid": pid, "sessionId": ID, "status": status}).to_string();
    std::fs::write(&file, entry("waiting")).unwrap();
    append(&path, &line(&cli(prompt("go"), "2.1.332")));
    let engine = start(vec![r.root.clone()]).await;
    wait_session(&engine, ID, "live", |s| s["live"] == true).await;
    let mut rx = engine.subscribe();
    for i in 0..20 {
        let status = if i % 2 == 0 { "busy" } else { "waiting" };
        if i % 3 == 0 {
            std::fs::remove_file(&file).unwrap();
        } else {
            std::fs::write(&file, b"").unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(&file, entry(status)).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    // A barrier: the last write, read.
    append(&path, &line(&cli(reply(1), "2.1.332")));
    wait_session(&engine, ID, "the reply", |s| s["usage"]["outputTokens"] == 1).await;
    while let Ok(env) = rx.try_recv() {
        if let StoreEvent::Updated { changes, .. } = &env.event {
            let changes = serde_json::to_value(changes).unwrap();
            assert_ne!(changes["live"], false, "flickered: {changes}");
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    wait_session(&engine, ID, "ended once its process is gone", |s| s["live"] == false).await;
    engine.shutdown().await;
}
