use super::*;
use mimesis_core::hook_event::{parse_spool_line, spool_day};
use mimesis_core::ids::SessionId;
use mimesis_core::status::HookState;

/// Every event in the spool, read with the core's parser only (the watch layer's reader,
/// `mimesis_watch::spool`, is above this crate).
fn read_all(data_dir: &std::path::Path) -> Vec<HookEvent> {
    let mut files: Vec<_> = std::fs::read_dir(spool_dir(data_dir))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| spool_day(p).is_some())
        .collect();
    files.sort();
    let text: Vec<u8> = files.iter().flat_map(|p| std::fs::read(p).unwrap()).collect();
    text.split(|b| *b == b'\n').filter_map(parse_spool_line).collect()
}

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn payload(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn records_one_line_per_event_without_the_noise() {
    let d = tempfile::tempdir().unwrap();
    let p = payload(serde_json::json!({
        "session_id": "3f1c2b9e-0000-4000-8000-000000000001", "hook_event_name": "Stop",
        "cwd": "/p", "transcript_path": "/r/projects/-p/x.jsonl", "stop_hook_active": false,
        "last_assistant_message": "a long answer".repeat(1000)
    }));
    let ctx = TerminalContext {
        claude_pid: Some(42),
        claude_start: Some(7),
        tty: Some("pts/3".into()),
        ..Default::default()
    };
    let ev = record(d.path(), &p, T0, ctx.clone()).unwrap();
    assert_eq!(ev.state(), Some(HookState::TurnDone));
    let all = read_all(d.path());
    assert_eq!(all, vec![ev]);
    let line = std::fs::read_to_string(spool_file(d.path(), T0)).unwrap();
    assert!(line.len() < 500, "the answer is not kept: {line}");
    assert!(!line.contains("a long answer"));
    assert_eq!(all[0].terminal, ctx);
}

#[test]
fn hostile_payloads_record_nothing() {
    let d = tempfile::tempdir().unwrap();
    for bad in [
        &b"not json"[..],
        b"[]",
        br#"{"hook_event_name":"Stop"}"#,
        br#"{"session_id":"../../etc/passwd","hook_event_name":"Stop"}"#,
        br#"{"session_id":42,"hook_event_name":"Stop"}"#,
    ] {
        assert!(record(d.path(), bad, T0, TerminalContext::default()).is_err(), "{}", String::from_utf8_lossy(bad));
    }
    assert!(read_all(d.path()).is_empty());
}

#[test]
fn concurrent_hooks_never_interleave_lines() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_owned();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let p = payload(
                        serde_json::json!({"session_id": format!("s{t}-{i}"), "hook_event_name": "UserPromptSubmit",
                        "cwd": "/p".repeat(50)}),
                    );
                    record(&dir, &p, T0, TerminalContext::default()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let all = read_all(&dir);
    assert_eq!(all.len(), 800);
}

#[test]
fn compaction_writes_the_seed_marker() {
    let d = tempfile::tempdir().unwrap();
    let cwd = d.path().join("proj");
    std::fs::create_dir(&cwd).unwrap();
    let data = d.path().join("data");
    let p = payload(serde_json::json!({"session_id": "abc-1", "hook_event_name": "SessionStart", "source": "compact",
        "cwd": cwd.to_str().unwrap()}));
    record(&data, &p, T0, TerminalContext::default()).unwrap();
    let marker = marker_path(&cwd, &SessionId::parse("abc-1").unwrap());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"newSessionId": "abc-1", "cwd": cwd.to_str().unwrap(), "compactedAt": T0.to_iso()})
    );
    // Nothing else left behind in .claude.
    assert_eq!(std::fs::read_dir(cwd.join(".claude")).unwrap().count(), 1);
}

#[test]
fn a_marker_is_never_written_through_an_unchecked_cwd() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let real = d.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, real.join(".claude")).unwrap();
    for cwd in [
        "relative/dir".to_owned(),
        format!("{}/../real", real.display()),
        d.path().join("missing").display().to_string(),
        real.display().to_string(), // its .claude is a symlink
    ] {
        let p = payload(
            serde_json::json!({"session_id": "abc", "hook_event_name": "SessionStart", "source": "compact", "cwd": cwd}),
        );
        // The event itself is still recorded; only the marker is refused (and logged).
        record(&data, &p, T0, TerminalContext::default()).unwrap();
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(read_all(&data).len(), 4);
    let log = std::fs::read_to_string(log_file(&data)).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
}

#[test]
fn terminal_context_reads_the_parent_process() {
    let ctx = terminal_context(|k| match k {
        "KITTY_WINDOW_ID" => Some("7".into()),
        "TMUX_PANE" => Some("%3\u{7}".into()),
        _ => None,
    });
    assert_eq!(ctx.kitty_window_id.as_deref(), Some("7"));
    assert_eq!(ctx.tmux_pane, None, "control characters are dropped");
    // The test harness's parent is some process with a start time.
    assert!(ctx.claude_pid.is_some() && ctx.claude_start.is_some());
}

#[test]
fn same_terminal_compares_what_both_sides_know() {
    let a =
        TerminalContext { claude_pid: Some(1), claude_start: Some(2), tty: Some("pts/1".into()), ..Default::default() };
    let mut b = a.clone();
    assert_eq!(a.same_terminal(&b), Some(true));
    b.claude_pid = Some(9);
    assert_eq!(a.same_terminal(&b), Some(true), "same tty, new process");
    b.tty = Some("pts/2".into());
    assert_eq!(a.same_terminal(&b), Some(false));
    assert_eq!(TerminalContext::default().same_terminal(&a), None);
}
