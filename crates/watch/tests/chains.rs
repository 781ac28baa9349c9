//! SPEC C1–C4, C7, W5 (hook inputs), W6, U5 with the real engine on real files and the
//! real `notify` watcher: chains from the files alone, chains from recorded hook events,
//! hostile markers and status files, the timeline across a chain, notifications.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mimesis_core::attention::NotificationKind;
use mimesis_core::hook_event::{TerminalContext, parse_payload, spool_dir, spool_file};
use mimesis_core::{Clock, ManualClock, SystemClock, TimelineItem, Timestamp};
use mimesis_watch::{Engine, EngineConfig};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

struct Fx {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    /// A real folder used as the sessions' cwd (markers and status files live in it).
    cwd: PathBuf,
    data: PathBuf,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let cwd = base.join("work/proj");
    std::fs::create_dir_all(cwd.join(".claude")).unwrap();
    let root = base.join(".claude");
    let project = root.join("projects").join(cwd.to_string_lossy().replace('/', "-"));
    std::fs::create_dir_all(&project).unwrap();
    let data = base.join("data");
    Fx { _dir: dir, root, project, cwd, data }
}

impl Fx {
    fn cwd_str(&self) -> String {
        self.cwd.to_string_lossy().into_owned()
    }

    fn append(&self, id: &str, records: &[Value]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.project.join(format!("{id}.jsonl")))
            .unwrap();
        for r in records {
            writeln!(f, "{r}").unwrap();
        }
    }

    fn user(&self, text: &str, at: Timestamp) -> Value {
        json!({"type": "user", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(), "cwd": self.cwd_str(),
               "message": {"role": "user", "content": text}})
    }

    fn reply(&self, text: &str, at: Timestamp) -> Value {
        json!({"type": "assistant", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(), "cwd": self.cwd_str(),
               "requestId": uuid::Uuid::new_v4().to_string(),
               "message": {"id": uuid::Uuid::new_v4().to_string(), "model": "claude-opus-4-8", "stop_reason": "end_turn",
                           "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 1, "output_tokens": 1}}})
    }

    fn turn_done(&self, at: Timestamp) -> Value {
        json!({"type": "system", "subtype": "turn_duration", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(),
               "cwd": self.cwd_str(), "durationMs": 10})
    }

    fn boundary(&self, at: Timestamp) -> Value {
        json!({"type": "system", "subtype": "compact_boundary", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(),
               "cwd": self.cwd_str(), "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 150000}})
    }

    fn compact_summary(&self, at: Timestamp) -> Value {
        json!({"type": "user", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(), "cwd": self.cwd_str(),
               "isCompactSummary": true, "message": {"role": "user", "content": "This session is being continued. Summary: parser work."}})
    }

    /// What a `/clear` writes first into the new session's file (2.1.x).
    fn clear_command(&self, at: Timestamp) -> Value {
        json!({"type": "system", "subtype": "local_command", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at.to_iso(),
               "cwd": self.cwd_str(), "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"})
    }

    /// A whole conversation of one turn.
    fn session(&self, id: &str, goal: &str, at: Timestamp) {
        self.append(id, &[self.user(goal, at), self.reply("done", at.plus(secs(1))), self.turn_done(at.plus(secs(2)))]);
    }

    fn hook(&self, payload: Value, at: Timestamp, pid: u32) {
        let terminal =
            TerminalContext { claude_pid: Some(pid), claude_start: Some(1000 + u64::from(pid)), ..Default::default() };
        // As `mimesis hook` appends it (`mimesis_hooks::record`), with the core's parser.
        let ev = parse_payload(payload.to_string().as_bytes(), at, terminal).unwrap();
        let mut line = serde_json::to_vec(&ev).unwrap();
        line.push(b'\n');
        std::fs::create_dir_all(spool_dir(&self.data)).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(spool_file(&self.data, at)).unwrap();
        f.write_all(&line).unwrap();
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ago(n: u64) -> Timestamp {
    Timestamp::from_millis(SystemClock.now().millis() - (n * 1000) as i64)
}

async fn start(fx: &Fx, data: bool) -> Engine {
    let engine = Engine::start(EngineConfig {
        roots: vec![fx.root.clone()],
        poll_interval: Duration::from_millis(100),
        data_dir: data.then(|| fx.data.clone()),
        ..Default::default()
    });
    engine.ready().await;
    engine
}

async fn session(engine: &Engine, id: &str) -> Option<Value> {
    let snap = engine.snapshot().await.unwrap();
    snap.sessions.iter().find(|s| s.session_id.as_str() == id).map(|s| serde_json::to_value(s).unwrap())
}

async fn wait(engine: &Engine, what: &str, cond: impl Fn(&dyn Fn(&str) -> Value) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let snap = engine.snapshot().await.unwrap();
        let rows: Vec<Value> = snap.sessions.iter().map(|s| serde_json::to_value(s).unwrap()).collect();
        let get = |id: &str| rows.iter().find(|r| r["sessionId"] == json!(id)).cloned().unwrap_or(Value::Null);
        if cond(&get) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; sessions: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollover_file_with_a_compact_summary_links_to_its_predecessor() {
    let fx = fx();
    fx.session("aaaa-old", "rewrite the parser", ago(600));
    // More recent, but in another folder.
    fx.append(
        "aaaa-other-folder",
        &[json!({"type": "user", "uuid": "o1", "timestamp": ago(300).to_iso(), "cwd": "/elsewhere",
                                            "message": {"role": "user", "content": "unrelated"}})],
    );
    // Cold index: the rollover is already there.
    fx.append(
        "bbbb-roll",
        &[
            json!({"type": "ai-title", "aiTitle": "Parser rewrite", "sessionId": "bbbb-roll"}),
            fx.compact_summary(ago(290)),
            fx.user("go on", ago(280)),
        ],
    );
    let engine = start(&fx, false).await;
    wait(&engine, "the rollover linked", |s| {
        s("aaaa-old")["supersededBy"] == json!("bbbb-roll")
            && s("bbbb-roll")["workChainId"] == json!("aaaa-old")
            && s("bbbb-roll")["compactionCount"] == json!(1)
            && s("bbbb-roll")["chainLength"] == json!(2)
            && s("bbbb-roll")["workChainName"] == json!("Parser rewrite")
    })
    .await;
    // Live: a second rollover, written while the engine watches, continues the chain.
    fx.append("cccc-roll", &[fx.boundary(ago(5)), fx.compact_summary(ago(5)), fx.user("and more", ago(4))]);
    wait(&engine, "the live rollover linked", |s| {
        s("bbbb-roll")["supersededBy"] == json!("cccc-roll")
            && s("cccc-roll")["workChainId"] == json!("aaaa-old")
            && s("cccc-roll")["compactionCount"] == json!(2)
            && s("aaaa-old")["chainLength"] == json!(3)
    })
    .await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_born_file_links_to_the_session_active_just_before_in_its_folder() {
    let fx = fx();
    fx.session("aaaa-earlier", "old work", ago(900));
    fx.session("aaaa-active", "current work", ago(120));
    let engine = start(&fx, false).await;
    fx.append("bbbb-clear", &[fx.clear_command(ago(3)), fx.user("a fresh start", ago(2))]);
    wait(&engine, "the /clear successor linked", |s| {
        s("aaaa-active")["superseded"] == json!(true)
            && s("aaaa-active")["supersededBy"] == json!("bbbb-clear")
            && s("bbbb-clear")["workChainId"] == json!("aaaa-active")
            && s("aaaa-earlier")["superseded"] == json!(false)
            && s("bbbb-clear")["compactionCount"] == json!(0)
    })
    .await;
    // The timeline of the head reads across the chain with a boundary.
    let page = engine.open_timeline(&"bbbb-clear".parse().unwrap(), 100).await.unwrap();
    let kinds: Vec<&str> = page.items.iter().map(TimelineItem::kind).collect();
    assert_eq!(kinds.first(), Some(&"prompt"), "{kinds:?}");
    let seg = kinds.iter().position(|k| *k == "segment").expect("a boundary");
    let TimelineItem::Segment { session_id, previous_session_id, reason, .. } = &page.items[seg] else {
        unreachable!()
    };
    assert_eq!(
        (session_id.as_str(), previous_session_id.as_str(), reason.as_str()),
        ("bbbb-clear", "aaaa-active", "clear")
    );
    assert!(page.items[..seg].iter().any(|i| matches!(i, TimelineItem::AssistantText { text, .. } if text == "done")));
    assert!(matches!(page.items.last(), Some(TimelineItem::Prompt { text, .. }) if text == "a fresh start"));
    // Live updates of the head arrive at indexes after the prefix.
    let mut updates = engine.subscribe_timeline();
    fx.append("bbbb-clear", &[fx.reply("on it", ago(1))]);
    let u = tokio::time::timeout(WAIT, updates.recv()).await.unwrap().unwrap();
    assert_eq!(u.total, page.total + 1);
    assert_eq!(u.changed[0].index, page.total);
    wait(&engine, "the reply counted", |s| s("bbbb-clear")["usage"]["outputTokens"] != json!(0)).await;
    let now = SystemClock.now();
    let live = engine.snapshot().await.unwrap().sessions;
    engine.shutdown().await;

    // A one-time read (`mimesis ls`) keeps no rows while it reads and derives each at the
    // end: the same rows, in the same order, as the live roster.
    let once =
        mimesis_watch::engine::roster_once(std::slice::from_ref(&fx.root), Default::default(), now, None, Vec::new());
    let ids = |rows: &[mimesis_core::TrackedSession]| rows.iter().map(|r| r.session_id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&once), ids(&live));
    for (o, l) in once.iter().zip(&live) {
        assert_eq!(serde_json::to_value(o).unwrap(), serde_json::to_value(l).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_events_give_exact_statuses_and_link_clear_by_process() {
    let fx = fx();
    fx.session("aaaa-tab1", "tab one", ago(100));
    fx.session("cccc-tab2", "tab two", ago(50));
    let engine = start(&fx, true).await;
    let base = json!({"cwd": fx.cwd_str()});
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    // Tab 1 (pid 10): a prompt, then a permission dialog reported by the Notification hook.
    fx.hook(with(json!({"session_id": "aaaa-tab1", "hook_event_name": "UserPromptSubmit"})), ago(40), 10);
    wait(&engine, "working from UserPromptSubmit", |s| s("aaaa-tab1")["status"] == json!("working")).await;
    let mut notes = engine.subscribe_notifications();
    fx.hook(
        with(json!({"session_id": "aaaa-tab1", "hook_event_name": "Notification", "notification_type": "permission_prompt",
                    "message": "Claude needs your permission"})),
        ago(39),
        10,
    );
    wait(&engine, "waiting for approval from the hook", |s| s("aaaa-tab1")["status"] == json!("waiting_for_approval"))
        .await;
    let n = tokio::time::timeout(WAIT, notes.recv()).await.unwrap().unwrap();
    assert_eq!((n.session_id.as_str(), n.kind), ("aaaa-tab1", NotificationKind::WaitingForApproval));
    // Tab 2 finished its turn a moment ago: it waits for input too.
    let att = engine.attention().await.unwrap();
    assert_eq!(att.session_ids.iter().map(|s| s.as_str()).collect::<Vec<_>>(), ["aaaa-tab1", "cccc-tab2"]);
    fx.hook(with(json!({"session_id": "aaaa-tab1", "hook_event_name": "Stop"})), ago(38), 10);
    wait(&engine, "turn done from Stop", |s| s("aaaa-tab1")["status"] == json!("waiting_for_input")).await;
    // Tab 2 (pid 20) was active more recently. /clear in tab 1: SessionEnd + SessionStart
    // from pid 10 link tab 1 to its successor, never tab 2.
    fx.hook(with(json!({"session_id": "cccc-tab2", "hook_event_name": "UserPromptSubmit"})), ago(30), 20);
    fx.hook(with(json!({"session_id": "aaaa-tab1", "hook_event_name": "SessionEnd", "reason": "clear"})), ago(20), 10);
    fx.hook(with(json!({"session_id": "bbbb-new", "hook_event_name": "SessionStart", "source": "clear"})), ago(20), 10);
    fx.append("bbbb-new", &[fx.clear_command(ago(19))]);
    wait(&engine, "tab 1 superseded by its successor", |s| {
        s("aaaa-tab1")["supersededBy"] == json!("bbbb-new")
            && s("aaaa-tab1")["status"] == json!("idle")
            && s("bbbb-new")["workChainId"] == json!("aaaa-tab1")
            && s("cccc-tab2")["superseded"] == json!(false)
            && s("cccc-tab2")["chainLength"] == json!(1)
    })
    .await;
    // Superseded: out of the attention set.
    let att = engine.attention().await.unwrap();
    assert!(!att.session_ids.iter().any(|s| s.as_str() == "aaaa-tab1"), "{att:?}");
    // Exactly one notification per transition so far (approval; the Stop's input wait).
    let mut kinds = vec![n.kind];
    while let Ok(n) = notes.try_recv() {
        kinds.push(n.kind);
    }
    assert_eq!(kinds, [NotificationKind::WaitingForApproval, NotificationKind::WaitingForInput]);
    engine.shutdown().await;

    // The one-shot roster reads the same hook events.
    let rows = mimesis_watch::engine::roster_once(
        std::slice::from_ref(&fx.root),
        Default::default(),
        SystemClock.now(),
        Some(&fx.data),
        Vec::new(),
    );
    let a = rows.iter().find(|r| r.session_id.as_str() == "aaaa-tab1").unwrap();
    assert_eq!(a.superseded_by.as_ref().map(|s| s.as_str()), Some("bbbb-new"));
}

/// A subscriber whose output the test can read: every "ignored …" reason is logged.
fn capture_logs() -> Arc<Mutex<Vec<u8>>> {
    #[derive(Clone)]
    struct W(Arc<Mutex<Vec<u8>>>);
    impl Write for W {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Arc::new(Mutex::new(Vec::new()));
    let w = W(buf.clone());
    let _ = tracing_subscriber::fmt().with_env_filter("mimesis_watch=warn").with_writer(move || w.clone()).try_init();
    buf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_markers_and_status_files_change_nothing_and_are_logged() {
    let logs = capture_logs();
    let fx = fx();
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    fx.session("aaaa-pred", "the work", ago(60));
    fx.session("cccc-other", "other work", ago(30));
    let dot = fx.cwd.join(".claude");
    let outside = fx.cwd.parent().unwrap().join("outside.md");
    std::fs::write(&outside, "---\nstatus: blocked\n---\n").unwrap();
    // Hostile files, present before the engine starts and written while it runs.
    let hostile: Vec<(&str, Vec<u8>)> = vec![
        ("compacted.a.b.marker", b"{}".to_vec()),
        (
            "compacted.bbbb-succ.marker",
            br#"{"newSessionId":"../../etc/passwd","cwd":"/x","compactedAt":"2026-01-01T00:00:00Z"}"#.to_vec(),
        ),
        (
            "compacted.cccc-other.marker",
            format!(r#"{{"newSessionId":"cccc-other","cwd":"/somewhere/else","compactedAt":"{}"}}"#, ago(1).to_iso())
                .into_bytes(),
        ),
        (
            "compacted.aaaa-pred.marker",
            format!(r#"{{"newSessionId":"cccc-other","cwd":"{}","compactedAt":"{}"}}"#, fx.cwd_str(), ago(1).to_iso())
                .into_bytes(),
        ),
        ("status.aaaa-pred.md", b"---\nstatus: [working\n---\n".to_vec()),
        (
            "status.dddd-huge.md",
            format!("---\nstatus: blocked\nupdated: {}\n---\n{}", ago(1).to_iso(), "x".repeat(100_000)).into_bytes(),
        ),
        ("status.$(reboot).md", b"---\nstatus: working\n---\n".to_vec()),
    ];
    for (name, body) in &hostile[..4] {
        std::fs::write(dot.join(name), body).unwrap();
    }
    std::os::unix::fs::symlink(&outside, dot.join("status.bbbb-succ.md")).unwrap();
    let engine = Engine::start(EngineConfig {
        roots: vec![fx.root.clone()],
        poll_interval: Duration::from_millis(100),
        clock: clock.clone(),
        ..Default::default()
    });
    engine.ready().await;
    // A compaction-born file with no hook and no marker yet: matched only after a grace
    // period on the (manual) clock.
    fx.append("bbbb-succ", &[fx.compact_summary(ago(10))]);
    for (name, body) in &hostile[4..] {
        std::fs::write(dot.join(name), body).unwrap();
    }
    // A good status file, written last, shows everything before it was read.
    let good = format!(
        "---\nstatus: blocked\nupdated: {}\ntask: waiting on review\n---\n## Summary\nNeeds a decision.\n",
        clock.now().to_iso()
    );
    std::fs::write(dot.join("status.cccc-other.md"), &good).unwrap();
    wait(&engine, "the good status file", |s| s("cccc-other")["statusFile"]["task"] == json!("waiting on review"))
        .await;
    let snap = engine.snapshot().await.unwrap();
    for r in &snap.sessions {
        assert!(!r.superseded, "{} superseded by a hostile marker", r.session_id);
        if r.session_id.as_str() != "cccc-other" {
            assert!(r.status_file.is_none(), "{}", r.session_id);
        }
    }
    let c = session(&engine, "cccc-other").await.unwrap();
    assert_eq!(c["status"], json!("waiting_for_input"), "blocked needs the user");
    assert_eq!(c["statusFile"]["status"], json!("blocked"));
    assert_eq!(c["statusFile"]["summary"], json!("Needs a decision."));
    // Trusted for five minutes, then the derived state again.
    clock.advance(Duration::from_secs(301));
    engine.tick().await.unwrap();
    let c = session(&engine, "cccc-other").await.unwrap();
    assert_eq!(c["statusFile"], Value::Null);
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    for reason in [
        "ignored a file with a hostile name",
        "is not a valid session id",
        "names session",
        "lies in",
        "is not a plain value",
        "more than the",
        "cannot open",
    ] {
        assert!(text.contains(reason), "no {reason:?} in the log:\n{text}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "---\nstatus: blocked\n---\n", "never written");
    // A valid marker for the compaction-born session links it.
    let m = format!(r#"{{"newSessionId":"bbbb-succ","cwd":"{}","compactedAt":"{}"}}"#, fx.cwd_str(), ago(10).to_iso());
    std::fs::write(dot.join("compacted.bbbb-succ.marker"), m).unwrap();
    wait(&engine, "the marker's link", |s| {
        s("bbbb-succ")["workChainId"] == json!("cccc-other") || s("bbbb-succ")["workChainId"] == json!("aaaa-pred")
    })
    .await;
    engine.shutdown().await;
}

fn path_exists(p: &Path) -> bool {
    p.exists()
}

#[test]
fn fixtures_are_real_folders() {
    let fx = fx();
    assert!(path_exists(&fx.cwd.join(".claude")) && path_exists(&fx.project));
}
