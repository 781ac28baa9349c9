//! Issue 33: a running session is a row before its first prompt.

use super::*;

fn running(pid: u32, status: &str) -> RegistryEntry {
    let json = format!(
        r#"{{"pid":{pid},"sessionId":"{SID}","cwd":"/p","status":"{status}","statusUpdatedAt":{}}}"#,
        T0.millis()
    );
    parse_entry(json.as_bytes(), pid).unwrap()
}

#[test]
fn a_running_session_is_a_row_at_its_prompt_before_its_transcript_exists() {
    let f = Fixture::new();
    let mut s = Store::new(Timeouts::default());
    s.end_bulk(now(0));
    let id = SessionId::parse(SID).unwrap();
    // Its SessionStart hook says where its transcript will be; its registry entry that it runs.
    let start = mimesis_core::hook_event::parse_payload(
        json!({"session_id": SID, "hook_event_name": "SessionStart", "source": "startup", "cwd": "/p",
               "transcript_path": f.path(SID)})
        .to_string()
        .as_bytes(),
        at(0),
        TerminalContext::default(),
    )
    .unwrap();
    assert!(s.hook_event(start, now(0)).is_empty(), "a hook alone is no row");
    let me = std::process::id();
    let ev = s.set_registry(&f.root, vec![running(me, "idle")], now(1)).events;
    let [StoreEvent::Discovered { session }] = ev.as_slice() else { panic!("{ev:?}") };
    assert_eq!((session.live, session.pid, session.status), (true, Some(me), Status::Idle));
    assert_eq!(session.goal, None, "no prompt yet");
    assert_eq!(session.transcript_path, f.path(SID).to_string_lossy());
    assert_eq!(session.last_activity_at, T0, "when it last changed, not 1970");
    assert!(!f.path(SID).exists());
    // The first prompt writes the file: the same row fills in.
    f.append(SID, &[prompt("hello", 5)]);
    let ev = s.file_changed(f.loc(SID), now(5)).events;
    assert!(matches!(&ev[0], StoreEvent::Updated { changes, .. } if changes.goal.is_some()), "{ev:?}");
    assert_eq!(s.get(&id).unwrap().goal.as_deref(), Some("hello"));
}

#[test]
fn a_session_that_ends_before_its_first_prompt_leaves_no_row() {
    let f = Fixture::new();
    let mut s = Store::new(Timeouts::default());
    s.end_bulk(now(0));
    let me = std::process::id();
    // No hook: the transcript's place follows from the entry's cwd.
    let ev = s.set_registry(&f.root, vec![running(me, "idle")], now(1)).events;
    let [StoreEvent::Discovered { session }] = ev.as_slice() else { panic!("{ev:?}") };
    assert_eq!(session.transcript_path, f.path(SID).to_string_lossy());
    let ev = s.set_registry(&f.root, vec![], now(2)).events;
    assert_eq!(ev, [StoreEvent::Removed { session_id: SessionId::parse(SID).unwrap() }]);
    assert!(s.is_empty());
}

#[test]
fn during_the_first_index_the_row_waits_and_the_transcript_found_wins() {
    let f = Fixture::new();
    let mut s = Store::new(Timeouts::default());
    let me = std::process::id();
    assert!(s.set_registry(&f.root, vec![running(me, "busy")], now(1)).is_empty(), "the index may hold its file");
    // The session's transcript is elsewhere than its cwd says (resumed from another folder).
    std::fs::create_dir_all(f.root.join("projects/-q")).unwrap();
    let elsewhere = f.root.join(format!("projects/-q/{SID}.jsonl"));
    std::fs::write(&elsewhere, format!("{}\n", prompt("from -q", 0))).unwrap();
    let ev = s.end_bulk(now(2)).events;
    assert!(matches!(&ev[..], [StoreEvent::Discovered { .. }]), "{ev:?}");
    s.adopt(IndexedFile::read(TranscriptLocation::of(&f.root, &elsewhere).unwrap()).unwrap(), now(3));
    let row = s.get(&SessionId::parse(SID).unwrap()).unwrap();
    assert_eq!((row.goal.as_deref(), row.transcript_path.as_str()), (Some("from -q"), &*elsewhere.to_string_lossy()));
}
