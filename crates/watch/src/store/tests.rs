use super::*;
use mimesis_core::registry::parse_entry;
use mimesis_core::status::Status;
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;

mod at_prompt;
mod grace;
mod no_io;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const SID: &str = "11111111-2222-4333-8444-555555555555";

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".claude");
        std::fs::create_dir_all(root.join("projects/-p")).unwrap();
        Fixture { _dir: dir, root }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.root.join(format!("projects/-p/{id}.jsonl"))
    }

    fn loc(&self, id: &str) -> TranscriptLocation {
        TranscriptLocation::of(&self.root, &self.path(id)).unwrap()
    }

    fn append(&self, id: &str, records: &[Value]) {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(self.path(id)).unwrap();
        for r in records {
            writeln!(f, "{}", serde_json::to_string(r).unwrap()).unwrap();
        }
    }
}

fn at(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

/// The engine's time `secs` into a test: the wall clock at [`at`], and the monotonic clock
/// as far from its origin (the two move together unless a test steps the wall clock).
fn now(secs: u64) -> Now {
    Now { wall: at(secs), mono: Mono::from_millis(secs * 1000) }
}

fn prompt(text: &str, secs: u64) -> Value {
    json!({"type": "user", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at(secs).to_iso(),
           "cwd": "/nonexistent/p", "message": {"role": "user", "content": text}})
}

fn tool_use(id: &str, secs: u64) -> Value {
    json!({"type": "assistant", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": at(secs).to_iso(),
           "message": {"id": format!("msg_{id}"), "model": "claude-opus-4-8", "stop_reason": "tool_use",
           "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "rm -rf build"}}],
           "usage": {"input_tokens": 1, "output_tokens": 2}}})
}

fn status_of(s: &Store) -> Status {
    s.get(&SessionId::parse(SID).unwrap()).unwrap().status
}

#[test]
fn discovers_then_updates_only_what_changed_then_removes() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("fix it", 0)]);
    let mut store = Store::new(Timeouts::default());
    let ev = store.file_changed(fx.loc(SID), now(1)).events;
    let [StoreEvent::Discovered { session }] = ev.as_slice() else { panic!("{ev:?}") };
    assert_eq!(session.goal.as_deref(), Some("fix it"));
    assert_eq!(session.status, Status::Working);
    assert_eq!(session.project_id, "-p");

    // Nothing new: no event.
    assert!(store.file_changed(fx.loc(SID), now(2)).is_empty());

    fx.append(SID, &[tool_use("t1", 3)]);
    let ev = store.file_changed(fx.loc(SID), now(3)).events;
    let [StoreEvent::Updated { changes, .. }] = ev.as_slice() else { panic!("{ev:?}") };
    let changes = json_of(changes);
    let mut keys: Vec<&str> = changes.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["cost", "hasPendingToolUse", "lastActivityAt", "model", "pendingTool", "usage"]);
    assert_eq!(changes["pendingTool"], json!({"tool": "Bash", "target": "rm -rf build"}));

    std::fs::remove_file(fx.path(SID)).unwrap();
    let ev = store.file_changed(fx.loc(SID), now(4)).events;
    assert_eq!(ev, vec![StoreEvent::Removed { session_id: SessionId::parse(SID).unwrap() }]);
    assert!(store.is_empty());
}

#[test]
fn timeouts_fire_through_deadlines() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0), tool_use("t1", 1)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(2));
    assert_eq!(status_of(&store), Status::Working);
    // On the monotonic clock: 4 s after `now` (at 2 s on the wall clock, 1,000 ms mono).
    let later = Now { wall: at(2), mono: Mono::from_millis(1_000) };
    assert_eq!(store.next_deadline(later), Some(Mono::from_millis(5_000)), "approval timeout 5 s after the tool_use");
    assert!(store.tick(now(5)).is_empty());
    let ev = store.tick(now(6)).events;
    assert_eq!(ev.len(), 1);
    assert_eq!(status_of(&store), Status::WaitingForApproval);
    store.tick(now(601));
    assert_eq!(status_of(&store), Status::Idle);
    assert_eq!(store.next_deadline(later), None);
}

#[test]
fn registry_makes_sessions_live_and_their_end_idle() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0), tool_use("t1", 1)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(1));
    let me = std::process::id();
    let entry = parse_entry(
        format!(r#"{{"pid":{me},"sessionId":"{SID}","status":"waiting","waitingFor":"permission prompt"}}"#).as_bytes(),
        me,
    )
    .unwrap();
    let ev = store.set_registry(&fx.root, vec![entry.clone()], now(1)).events;
    let [StoreEvent::Updated { changes, .. }] = ev.as_slice() else { panic!("{ev:?}") };
    let changes = json_of(changes);
    assert_eq!(changes["status"], "waiting_for_approval", "at once, no 5 s wait");
    assert_eq!(changes["live"], true);
    assert_eq!(changes["pid"], me);
    assert!(store.set_registry(&fx.root, vec![entry], now(2)).is_empty(), "same registry: no event");
    let ev = store.set_registry(&fx.root, vec![], now(3)).events;
    let [StoreEvent::Updated { changes, .. }] = ev.as_slice() else { panic!("{ev:?}") };
    let changes = json_of(changes);
    assert_eq!(changes["live"], false);
    assert_eq!(changes["status"], "idle", "its process ended");
}

/// `/clear` in the same process: the registry entry of that pid now names the new session,
/// so the old one is over even when its transcript still gets a record after that was seen
/// (the engine read the registry before Claude Code's last write to the old file).
#[test]
fn a_session_whose_process_moved_on_to_another_ends_whatever_its_transcript_gets() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(1));
    let me = std::process::id();
    let entry = |sid: &str| {
        parse_entry(format!(r#"{{"pid":{me},"sessionId":"{sid}","status":"idle"}}"#).as_bytes(), me).unwrap()
    };
    store.set_registry(&fx.root, vec![entry(SID)], now(1));
    store.set_registry(&fx.root, vec![entry("99999999-2222-4333-8444-555555555555")], now(3));
    fx.append(SID, &[prompt("a last record", 5)]);
    store.file_changed(fx.loc(SID), now(6));
    let row = store.snapshot().into_iter().find(|s| s.session_id.as_str() == SID).expect("the old row");
    assert!(!row.live);
    assert_eq!(row.status, Status::Idle, "its process runs another session now: over, not working");
}

/// Issue 33: the name the registry gave a session stays on its row once its process is
/// gone, also for the next run, which never saw that registry entry.
#[test]
fn the_registrys_name_outlives_the_process_and_the_run() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(1));
    let me = std::process::id();
    let entry =
        parse_entry(format!(r#"{{"pid":{me},"sessionId":"{SID}","status":"idle","name":"proj-73"}}"#).as_bytes(), me)
            .unwrap();
    store.set_registry(&fx.root, vec![entry], now(1));
    let id = SessionId::parse(SID).unwrap();
    assert_eq!(store.get(&id).unwrap().name.as_deref(), Some("proj-73"));
    store.set_registry(&fx.root, vec![], now(2));
    assert_eq!(store.get(&id).unwrap().name.as_deref(), Some("proj-73"), "after its exit");
    let stored = store.take_batch().sessions.remove(0);

    let mut next = Store::new(Timeouts::default());
    next.adopt(IndexedFile::unchanged(stored).expect("unchanged"), now(3));
    assert_eq!(next.get(&id).unwrap().name.as_deref(), Some("proj-73"), "in the next run");
}

#[test]
fn truncated_file_is_re_read() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("first goal", 0), prompt("more", 1)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(1));
    std::fs::write(fx.path(SID), format!("{}\n", prompt("another goal", 5))).unwrap();
    let ev = store.file_changed(fx.loc(SID), now(5)).events;
    let [StoreEvent::Updated { changes, .. }] = ev.as_slice() else { panic!("{ev:?}") };
    let changes = json_of(changes);
    assert_eq!(changes["goal"], "another goal");
}

#[test]
fn adopting_an_index_reads_on_from_its_offset() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let indexed = IndexedFile::read(fx.loc(SID)).unwrap();
    fx.append(SID, &[tool_use("t1", 1)]); // appended after the index read the file
    let mut store = Store::new(Timeouts::default());
    store.adopt(indexed, now(2));
    let s = store.get(&SessionId::parse(SID).unwrap()).unwrap();
    assert!(s.has_pending_tool_use);
    assert_eq!(s.usage.output_tokens, 2);
    assert_eq!(store.read_stats().1, 2, "each line read once");
}

#[test]
fn sub_agent_files_and_hostile_names_are_not_sessions() {
    let fx = Fixture::new();
    for bad in [
        "projects/-p/agent-abc.jsonl",
        "projects/-p/x/subagents/agent-1.jsonl",
        "projects/-p/a b.jsonl",
        "projects/-p/x.json",
    ] {
        assert!(TranscriptLocation::of(&fx.root, &fx.root.join(bad)).is_none(), "{bad}");
    }
    assert!(TranscriptLocation::of(&fx.root, &fx.path(SID)).is_some());
}

#[test]
fn every_file_the_index_read_is_stored_once() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let mut store = Store::new(Timeouts::default());
    // A peek first (same row as the full read), then the full read.
    let peek = crate::scan::peek_file(fx.loc(SID)).unwrap();
    store.adopt(IndexedFile { partial: true, ..peek }, now(1));
    assert!(store.take_batch().sessions.is_empty(), "a peek is not stored");
    store.adopt(IndexedFile::read(fx.loc(SID)).unwrap(), now(1));
    let batch = store.take_batch();
    assert_eq!(batch.sessions.len(), 1);
    assert_eq!(batch.sessions[0].tail.offset, std::fs::metadata(fx.path(SID)).unwrap().len());
    assert!(store.take_batch().is_empty(), "nothing changed since");
}

#[test]
fn a_file_unchanged_since_it_was_stored_is_neither_read_nor_stored_again() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let mut first = Store::new(Timeouts::default());
    first.adopt(IndexedFile::read(fx.loc(SID)).unwrap(), now(1));
    let stored = first.take_batch().sessions.remove(0);

    // The next run: found unchanged by one `stat`, shown at once, nothing to write back.
    let mut store = Store::new(Timeouts::default());
    let file = IndexedFile::unchanged(stored).expect("unchanged");
    assert!(file.as_stored);
    let ev = store.adopt(file, now(2)).events;
    assert!(matches!(ev.as_slice(), [StoreEvent::Discovered { .. }]), "{ev:?}");
    assert_eq!(store.read_stats(), (0, 0), "not read again");
    assert!(!store.has_batch(), "nothing to store: the database holds it as it is");

    // Then it grows: read on from the stored position, and stored.
    fx.append(SID, &[tool_use("t1", 3)]);
    let ev = store.file_changed(fx.loc(SID), now(3)).events;
    assert!(matches!(ev.as_slice(), [StoreEvent::Updated { .. }]), "{ev:?}");
    assert_eq!(store.read_stats().1, 1, "only the new line");
    let batch = store.take_batch();
    assert_eq!(batch.sessions.len(), 1);
    assert_eq!(batch.sessions[0].tail.offset, std::fs::metadata(fx.path(SID)).unwrap().len());
}

fn supervision(pid: Option<u32>) -> Supervision {
    Supervision { pid, process_started_at: Some(T0), ..Supervision::starting("claude", "/p", T0) }
}

#[test]
fn a_supervised_session_has_a_pty_row_before_its_transcript_exists() {
    let f = Fixture::new();
    let mut s = Store::new(Timeouts::default());
    let id = SessionId::parse(SID).unwrap();
    let loc = TranscriptLocation::expected(&f.root, Path::new("/p"), &id);
    assert_eq!(loc.path, f.path(SID), "the CLI's encoding of the cwd");
    let ev = s.set_supervision(loc.clone(), Some(supervision(Some(42))), now(0)).events;
    let StoreEvent::Discovered { session } = &ev[0] else { panic!("{ev:?}") };
    assert_eq!(session.source, Source::Pty);
    assert_eq!(session.cwd.as_deref(), Some("/p"));
    assert_eq!((session.live, session.pid), (true, Some(42)));
    assert_eq!(session.last_activity_at, T0);
    assert_eq!(session.supervision.as_ref().unwrap().pid, Some(42));
    // A change of supervision is an `updated` with only that field.
    let ev = s.set_supervision(loc.clone(), Some(supervision(Some(42))), now(1)).events;
    assert!(ev.is_empty());
    let mut sup = supervision(Some(42));
    sup.queued_inputs = 2;
    let ev = s.set_supervision(loc.clone(), Some(sup), now(1)).events;
    let StoreEvent::Updated { changes, .. } = &ev[0] else { panic!("{ev:?}") };
    let changes = json_of(changes);
    assert_eq!(changes.keys().collect::<Vec<_>>(), ["supervision"]);
    // The first prompt writes the file: the same row fills in.
    f.append(SID, &[prompt("hello", 5)]);
    let changes = s.file_changed(loc.clone(), now(5));
    let ev = changes.events;
    assert!(matches!(&ev[0], StoreEvent::Updated { changes, .. } if changes.goal.is_some()), "{ev:?}");
    // And its supervisor's report comes back with the events, from the same entry point.
    let [(reported, report)] = changes.reports.as_slice() else { panic!("{:?}", changes.reports) };
    assert_eq!((reported, report.last_record), (&id, Some(at(5))));
    assert_eq!(s.get(&id).unwrap().source, Source::Pty);
    // No longer supervised: a plain watched session again.
    let ev = s.set_supervision(loc, None, now(6)).events;
    let StoreEvent::Updated { changes, .. } = &ev[0] else { panic!("{ev:?}") };
    let changes = json_of(changes);
    assert_eq!(changes["source"], "watcher");
    assert_eq!(changes["supervision"], Value::Null);
}

#[test]
fn an_unsupervised_placeholder_with_no_file_goes_away() {
    let f = Fixture::new();
    let mut s = Store::new(Timeouts::default());
    let id = SessionId::parse(SID).unwrap();
    let loc = TranscriptLocation::expected(&f.root, Path::new("/p"), &id);
    s.set_supervision(loc.clone(), Some(supervision(None)), now(0));
    let ev = s.set_supervision(loc, None, now(1)).events;
    assert!(matches!(&ev[0], StoreEvent::Removed { .. }), "{ev:?}");
    assert!(s.is_empty());
}

/// A patch as the JSON object it is written as.
fn json_of(p: &mimesis_core::session::SessionPatch) -> serde_json::Map<String, Value> {
    match serde_json::to_value(p).unwrap() {
        Value::Object(m) => m,
        other => panic!("{other:?}"),
    }
}

fn hook(event: &str, secs: u64) -> HookEvent {
    mimesis_core::hook_event::parse_payload(
        json!({"session_id": SID, "hook_event_name": event, "cwd": "/nonexistent/p"}).to_string().as_bytes(),
        at(secs),
        TerminalContext::default(),
    )
    .unwrap()
}

/// 2.1.330's hooks: SubagentStart/-Stop count working subagents while the turn runs,
/// PreCompact is work, StopFailure ends the turn with an API error until the next prompt.
#[test]
fn newer_hooks_show_subagents_compaction_and_api_errors() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(0));
    let id = SessionId::parse(SID).unwrap();
    store.hook_event(hook("UserPromptSubmit", 1), now(1));
    store.hook_event(hook("SubagentStart", 2), now(2));
    store.hook_event(hook("SubagentStart", 3), now(3));
    assert_eq!((status_of(&store), store.get(&id).unwrap().subagents), (Status::Working, 2));
    store.hook_event(hook("SubagentStop", 4), now(4));
    assert_eq!(store.get(&id).unwrap().subagents, 1);
    store.hook_event(hook("StopFailure", 5), now(5));
    let row = store.get(&id).unwrap();
    assert_eq!((row.status, row.subagents, row.api_error), (Status::WaitingForInput, 0, true));
    store.hook_event(hook("UserPromptSubmit", 6), now(6));
    store.hook_event(hook("PreCompact", 7), now(7));
    let row = store.get(&id).unwrap();
    assert_eq!((row.status, row.api_error), (Status::Working, false), "compacting is work; the error is past");
    // An older CLI that never sends these is unaffected: nothing above is required.
}

/// Issue 14 (first launch): a row from a peek of a file's ends is provisional and shows no
/// pending tool (a peek cannot tell one answered earlier in the file); the full read makes
/// it final, with its pending tool, in one `updated`.
#[test]
fn a_peeked_row_is_provisional_until_the_full_read() {
    let fx = Fixture::new();
    fx.append(SID, &[prompt("go", 0)]);
    fx.append(SID, &[json!({"type": "assistant", "uuid": "a1", "timestamp": T0.plus(std::time::Duration::from_secs(1)).to_iso(),
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}})]);
    let mut store = Store::new(Timeouts::default());
    let peek = crate::scan::peek_file(fx.loc(SID)).unwrap();
    let ev = store.adopt(IndexedFile { partial: true, peeked: true, ..peek }, now(1)).events;
    let StoreEvent::Discovered { session } = &ev[0] else { panic!("{ev:?}") };
    assert!(session.provisional && session.pending_tool.is_none(), "{session:?}");
    assert_eq!(serde_json::to_value(session.as_ref()).unwrap()["provisional"], json!(true));
    let ev = store.adopt(IndexedFile::read(fx.loc(SID)).unwrap(), now(1)).events;
    let StoreEvent::Updated { changes, .. } = &ev[0] else { panic!("{ev:?}") };
    assert_eq!(changes.provisional, Some(false));
    assert!(changes.pending_tool.as_ref().is_some_and(|p| p.as_ref().is_some_and(|p| p.tool == "Bash")));
    let row = store.snapshot().into_iter().next().unwrap();
    assert!(
        !serde_json::to_value(&row).unwrap().as_object().unwrap().contains_key("provisional"),
        "final rows say nothing"
    );
}

/// Issue 14: a supervised session whose process Mimesis ended (terminated by a limit, or
/// suspended) reads as idle, not as waiting for the user's input — also after a restart
/// of the app, when nothing was seen running — and its turn-ended state comes back when it
/// runs again.
#[test]
fn an_ended_supervised_session_is_idle_not_waiting_for_input() {
    use mimesis_core::supervision::view::SupervisionState;
    let fx = Fixture::new();
    let reply = json!({"type": "assistant", "uuid": "r1", "timestamp": at(2).to_iso(),
        "message": {"id": "m1", "model": "claude-opus-4-8", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Done."}], "usage": {"input_tokens": 1, "output_tokens": 2}}});
    fx.append(SID, &[prompt("fix it", 0), reply]);
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(SID), now(3));
    let running = supervision(Some(42));
    // As after a restart of the app: never seen running, its supervision says it ended.
    for state in [SupervisionState::Terminated, SupervisionState::Suspended] {
        let ended = Supervision { state, pid: None, ..running.clone() };
        store.set_supervision(fx.loc(SID), Some(ended), now(4));
        assert_eq!(status_of(&store), Status::Idle, "{state:?}");
    }
    store.set_supervision(fx.loc(SID), Some(running), now(5));
    assert_eq!(status_of(&store), Status::WaitingForInput, "running again, its turn ended: it waits for the user");
}

mod background {
    use super::*;
    use mimesis_core::daemon::Worker;
    use mimesis_core::ids::JobId;
    use mimesis_core::job::{JobState, SessionKind};

    const JOB: &str = "11111111";

    fn state(tempo: &str, detail: &str, needs: Option<&str>) -> JobState {
        JobState {
            state: Some("working".into()),
            detail: Some(detail.into()),
            tempo: Some(tempo.into()),
            needs: needs.map(str::to_owned),
            intent: Some("fix it".into()),
            session_id: Some(SessionId::parse(SID).unwrap()),
            cwd: Some("/p".into()),
            updated_at: Some(at(0)),
            ..Default::default()
        }
    }

    fn worker(attempt: u32) -> Worker {
        Worker {
            job: JobId::parse(JOB).unwrap(),
            pid: 41,
            proc_start: None,
            repl_pid: Some(42),
            repl_proc_start: None,
            session_id: SessionId::parse(SID).unwrap(),
            attempt: Some(attempt),
            cli_version: Some("2.1.332".into()),
            cwd: Some("/p".into()),
            started_at: None,
        }
    }

    fn files(state: Option<JobState>, worker: Option<Worker>) -> BackgroundFiles {
        BackgroundFiles {
            jobs: state.map(|s| (JobId::parse(JOB).unwrap(), s)).into_iter().collect(),
            workers: worker.into_iter().collect(),
        }
    }

    fn row(s: &Store) -> TrackedSession {
        s.get(&SessionId::parse(SID).unwrap()).unwrap().clone()
    }

    /// A 2.1.332 background session's prompt record.
    fn bg_prompt(secs: u64) -> Value {
        let mut p = prompt("fix it", secs);
        p["version"] = json!("2.1.332");
        p["entrypoint"] = json!("cli");
        p["sessionKind"] = json!("bg");
        p
    }

    #[test]
    fn a_dispatched_job_is_a_row_at_once_then_its_transcript_goes_on() {
        let fx = Fixture::new();
        let mut store = Store::new(Timeouts::default());
        let ev = store
            .set_background(&fx.root, files(Some(state("active", "starting…", None)), Some(worker(1))), now(0))
            .events;
        let [StoreEvent::Discovered { session }] = ev.as_slice() else { panic!("{ev:?}") };
        assert_eq!(
            (session.kind, session.status, session.live, session.pid),
            (Some(SessionKind::Background), Status::Working, true, Some(42))
        );
        let job = session.job.clone().unwrap();
        assert_eq!(
            (job.id.as_str(), job.state.as_deref(), job.detail.as_deref()),
            (JOB, Some("working"), Some("starting…"))
        );
        assert_eq!((job.intent.as_deref(), job.attempt, job.needs), (Some("fix it"), Some(1), None));
        assert_eq!(session.transcript_path, fx.path(SID).to_string_lossy());
        assert_eq!(session.cwd.as_deref(), Some("/p"));
        // The same files again: nothing.
        assert!(
            store
                .set_background(&fx.root, files(Some(state("active", "starting…", None)), Some(worker(1))), now(1))
                .is_empty()
        );

        fx.append(SID, &[bg_prompt(2)]);
        let ev = store.file_changed(fx.loc(SID), now(2)).events;
        assert!(matches!(ev.as_slice(), [StoreEvent::Updated { .. }]), "{ev:?}");
        assert_eq!(row(&store).goal.as_deref(), Some("fix it"));

        // A dialog: the job is blocked on an approval.
        let blocked = state("blocked", "Writing", Some("approve Bash: rm -rf build"));
        store.set_background(&fx.root, files(Some(blocked.clone()), Some(worker(1))), now(3));
        let r = row(&store);
        assert_eq!(r.status, Status::WaitingForApproval);
        let job = r.job.unwrap();
        assert_eq!((job.state.as_deref(), job.needs.as_deref()), (Some("blocked"), Some("approve Bash: rm -rf build")));

        // A crash restart: the attempt grows.
        store.set_background(&fx.root, files(Some(blocked.clone()), Some(worker(2))), now(4));
        assert_eq!(row(&store).job.unwrap().attempt, Some(2));

        // Stopped: no worker. Not live, ended; the job and its last attempt stay.
        store.set_background(&fx.root, files(Some(blocked), None), now(5));
        let r = row(&store);
        assert_eq!((r.live, r.pid, r.status), (false, None, Status::Idle));
        assert_eq!(r.job.unwrap().attempt, Some(2));

        // Removed (`claude rm`): no job, still a background session's transcript.
        store.set_background(&fx.root, files(None, None), now(6));
        let r = row(&store);
        assert_eq!((r.kind, r.job), (Some(SessionKind::Background), None));
    }

    #[test]
    fn a_job_that_never_wrote_a_transcript_goes_with_its_worker_and_folder() {
        let fx = Fixture::new();
        let mut store = Store::new(Timeouts::default());
        store.set_background(&fx.root, files(Some(state("active", "starting…", None)), Some(worker(1))), now(0));
        assert!(store.get(&SessionId::parse(SID).unwrap()).is_some());
        let ev = store.set_background(&fx.root, files(None, None), now(1)).events;
        assert!(matches!(ev.as_slice(), [StoreEvent::Removed { .. }]), "{ev:?}");
        assert!(store.get(&SessionId::parse(SID).unwrap()).is_none());
    }

    #[test]
    fn a_job_naming_another_session_or_a_path_outside_the_root_is_not_followed() {
        let fx = Fixture::new();
        let mut store = Store::new(Timeouts::default());
        let mut st = state("active", "x", None);
        st.session_id = Some(SessionId::parse("99999999-2222-4333-8444-555555555555").unwrap());
        assert!(store.set_background(&fx.root, files(Some(st), None), now(0)).is_empty(), "the folder is not its job");
        let mut st = state("active", "x", None);
        st.transcript = Some(format!("/etc/{SID}.jsonl"));
        store.set_background(&fx.root, files(Some(st), Some(worker(1))), now(0));
        assert_eq!(
            row(&store).transcript_path,
            fx.path(SID).to_string_lossy(),
            "the expected path, not the file's word"
        );
    }

    #[test]
    fn the_registry_names_the_kind_of_an_interactive_session() {
        let fx = Fixture::new();
        fx.append(SID, &[prompt("hi", 0)]);
        let mut store = Store::new(Timeouts::default());
        store.file_changed(fx.loc(SID), now(0));
        assert_eq!(row(&store).kind, None, "unknown until something says");
        let me = std::process::id();
        let e = parse_entry(
            format!(r#"{{"pid":{me},"sessionId":"{SID}","kind":"interactive","status":"busy"}}"#).as_bytes(),
            me,
        )
        .unwrap();
        store.set_registry(&fx.root, vec![e], now(1));
        assert_eq!(row(&store).kind, Some(SessionKind::Interactive));
        store.set_registry(&fx.root, vec![], now(2));
        assert_eq!(row(&store).kind, Some(SessionKind::Interactive), "kept once it ended");
    }
}
