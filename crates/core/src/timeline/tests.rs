use super::*;
use serde_json::json;

fn build(records: &[Value]) -> Vec<TimelineItem> {
    let mut b = TimelineBuilder::new();
    let mut changed = Vec::new();
    for r in records {
        b.push_line(serde_json::to_string(r).unwrap().as_bytes(), &mut changed);
    }
    b.into_items()
}

fn rec(kind: &str, uuid: &str, extra: Value) -> Value {
    let mut v = json!({"type": kind, "uuid": uuid, "timestamp": "2026-11-01T10:00:00.000Z"});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

#[test]
fn pairs_tool_calls_with_results_out_of_order() {
    let items = build(&[
        rec("user", "u1", json!({"message": {"content": "run both"}})),
        rec(
            "assistant",
            "a1",
            json!({"message": {"model": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
        ),
        rec(
            "assistant",
            "a2",
            json!({"message": {"model": "m", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/x"}}]}}),
        ),
        rec(
            "user",
            "r2",
            json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "file body"}]}]}}),
        ),
        rec(
            "user",
            "r1",
            json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true}]}}),
        ),
    ]);
    assert_eq!(items.len(), 3);
    let TimelineItem::ToolCall { tool, result: Some(r), .. } = &items[1] else { panic!("{:?}", items[1]) };
    assert_eq!(tool, "Bash");
    assert!(r.is_error);
    assert_eq!(r.content, "boom");
    let TimelineItem::ToolCall { result: Some(r), .. } = &items[2] else { panic!() };
    assert_eq!(r.content, "file body");
}

#[test]
fn every_kind_and_its_json_shape() {
    let items = build(&[
        rec("user", "u1", json!({"message": {"content": "hello"}})),
        rec(
            "assistant",
            "a1",
            json!({"message": {"model": "claude-x", "content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "redacted_thinking", "data": "…"}, {"type": "text", "text": "hi"}]}}),
        ),
        rec("system", "s1", json!({"subtype": "turn_duration", "durationMs": 12_300})),
        rec(
            "system",
            "s2",
            json!({"subtype": "compact_boundary", "compactMetadata": {"trigger": "manual", "preTokens": 5000}}),
        ),
        rec("user", "u2", json!({"isCompactSummary": true, "message": {"content": "the summary"}})),
        rec(
            "system",
            "s3",
            json!({"subtype": "api_error", "error": {"status": 529, "error": {"message": "Overloaded"}}}),
        ),
        rec(
            "assistant",
            "a2",
            json!({"isApiErrorMessage": true, "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 500"}]}}),
        ),
        rec(
            "user",
            "u3",
            json!({"message": {"content": "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args>keep tests</command-args>"}}),
        ),
        rec("user", "u4", json!({"message": {"content": "<local-command-stdout>Compacted</local-command-stdout>"}})),
        rec("user", "u5", json!({"isMeta": true, "message": {"content": "Caveat: …"}})),
        rec("attachment", "x1", json!({"attachment": {"type": "hook_success"}})),
        json!({"type": "file-history-snapshot", "messageId": "m"}),
    ]);
    let kinds: Vec<&str> = items.iter().map(TimelineItem::kind).collect();
    assert_eq!(
        kinds,
        [
            "prompt",
            "thinking",
            "thinking",
            "assistant_text",
            "system",
            "compaction",
            "api_error",
            "api_error",
            "system",
            "system"
        ]
    );
    let v = serde_json::to_value(&items[5]).unwrap();
    assert_eq!(v["kind"], "compaction");
    assert_eq!(v["summary"], "the summary");
    assert_eq!(v["preTokens"], 5000);
    assert_eq!(serde_json::to_value(&items[4]).unwrap()["text"], "Turn took 12.3 s");
    assert_eq!(serde_json::to_value(&items[6]).unwrap()["status"], 529);
    assert_eq!(serde_json::to_value(&items[8]).unwrap()["text"], "/compact keep tests");
    assert_eq!(serde_json::to_value(&items[2]).unwrap()["redacted"], true);
    let uuids: Vec<&str> = items.iter().map(TimelineItem::uuid).collect();
    assert_eq!(&uuids[1..4], ["a1", "a1#2", "a1#3"], "one record, several blocks: unique ids");
}

#[test]
fn replayed_records_appear_once_and_sidechains_not_at_all() {
    let r = rec("user", "u1", json!({"message": {"content": "hello"}}));
    let side =
        rec("assistant", "sc", json!({"isSidechain": true, "message": {"content": [{"type": "text", "text": "sub"}]}}));
    assert_eq!(build(&[r.clone(), side, r]).len(), 1);
}

#[test]
fn hostile_text_stays_text() {
    let evil = "<img src=x onerror=alert(1)><script>alert(2)</script>";
    let items = build(&[rec("user", "u1", json!({"message": {"content": evil}}))]);
    let TimelineItem::Prompt { text, .. } = &items[0] else { panic!() };
    assert_eq!(text, evil);
}

#[test]
fn shortened_cuts_long_strings_on_char_boundaries() {
    let item = TimelineItem::ToolCall {
        uuid: "u".into(),
        timestamp: None,
        tool_use_id: "t".into(),
        tool: "Write".into(),
        input: json!({"content": "é".repeat(100), "file_path": "/a"}),
        result: Some(ToolResult { content: "x".repeat(50), is_error: false, timestamp: None }),
    };
    let (short, cut) = item.shortened(21);
    assert!(cut);
    let v = serde_json::to_value(&short).unwrap();
    assert_eq!(v["input"]["content"].as_str().unwrap().chars().count(), 11);
    assert_eq!(v["input"]["file_path"], "/a");
    assert_eq!(item.shortened(1000), (item.clone(), false));
}

/// 2.1.330 writes `/compact` after the boundary and the summary it caused, and keeps the
/// colour codes of its output: the timeline shows the command first, then the compaction
/// with its summary, then the output as plain text.
#[test]
fn compact_as_2_1_330_writes_it() {
    let items = build(&[
        rec("user", "u1", json!({"message": {"content": "hello"}})),
        rec(
            "system",
            "b1",
            json!({"subtype": "compact_boundary", "content": "Conversation compacted",
                   "compactMetadata": {"trigger": "manual", "preTokens": 1020}}),
        ),
        rec(
            "user",
            "s1",
            json!({"isCompactSummary": true, "message": {"content":
                "This session is being continued from a previous conversation that ran out of context. Summary: hello."}}),
        ),
        rec(
            "user",
            "c0",
            json!({"isMeta": true, "message": {"content": "<local-command-caveat>x</local-command-caveat>"}}),
        ),
        rec(
            "user",
            "c1",
            json!({"message": {"content": "<command-name>/compact</command-name>\n  <command-message>compact</command-message>\n  <command-args></command-args>"}}),
        ),
        rec(
            "user",
            "o1",
            json!({"message": {"content": "<local-command-stdout>\u{1b}[2mCompacted (ctrl+o to see full summary)\u{1b}[22m</local-command-stdout>"}}),
        ),
    ]);
    let kinds: Vec<String> = items
        .iter()
        .map(|i| match i {
            TimelineItem::System { subtype, text, .. } => format!("{subtype}:{text}"),
            other => other.kind().to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        ["prompt", "command:/compact", "compaction", "command_output:Compacted (ctrl+o to see full summary)"]
    );
    let TimelineItem::Compaction { summary: Some(s), trigger, .. } = &items[2] else { panic!("{items:?}") };
    assert!(s == "hello." && trigger.as_deref() == Some("manual"), "{s:?}");
}

/// Issue 33: `show` gives the summary of a compaction without the wrapper 2.1.332 puts
/// around it for the model (what PostCompact's `compact_summary` holds).
#[test]
fn a_compaction_shows_its_summary_without_the_wrapper() {
    let wrapped = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n<system-reminder>\n<tools-used-before-summary>Bash</tools-used-before-summary>\n</system-reminder>\nSummary: the user asked for a file and it was created.\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or content you generated), read the full transcript at: /home/u/.claude/projects/-p/x.jsonl\nContinue the conversation from where it left off without asking the user any further questions.\n\nThe messages after this summary are the most recent messages from before compaction.";
    for summary in [
        rec("user", "s1", json!({"isCompactSummary": true, "message": {"content": wrapped}})),
        rec("user", "s1", json!({"message": {"content": wrapped}})),
    ] {
        let items = build(&[rec("user", "u1", json!({"message": {"content": "hello"}})), summary]);
        let Some(TimelineItem::Compaction { summary: Some(s), .. }) = items.last() else { panic!("{items:?}") };
        assert_eq!(s, "the user asked for a file and it was created.");
    }
}

#[test]
fn notes_are_placed_among_the_transcripts_items_by_time_and_at_the_end_when_later() {
    use crate::approval::{Answered, Via};
    let note = |id: &str, ms: i64| {
        Answered {
            session_id: crate::SessionId::parse("s").unwrap(),
            at: Timestamp::from_millis(ms),
            id: id.into(),
            tool: Some("Bash".into()),
            target: None,
            behavior: "allow".into(),
            choice: None,
            message: None,
            answers: None,
            via: Via::Window,
        }
        .item()
    };
    let line = |uuid: &str, iso: &str| {
        serde_json::json!({"type": "user", "uuid": uuid, "timestamp": iso, "message": {"content": "hi"}}).to_string()
    };
    let mut b = TimelineBuilder::new();
    let t = |iso: &str| Timestamp::parse(iso).unwrap().millis();
    b.add_notes([note("late", t("2026-11-01T10:00:05.000Z")), note("mid", t("2026-11-01T10:00:01.500Z"))]);
    let mut changed = Vec::new();
    b.push_line(line("a", "2026-11-01T10:00:01.000Z").as_bytes(), &mut changed);
    b.push_line(line("b", "2026-11-01T10:00:02.000Z").as_bytes(), &mut changed);
    b.place_notes(&mut changed);
    let uuids: Vec<&str> = b.items().iter().map(TimelineItem::uuid).collect();
    assert_eq!(uuids, ["a", "answer:mid", "b", "answer:late"]);
    assert_eq!(changed, [0, 1, 2, 3]);
}

#[test]
fn tool_output_loses_its_terminal_escapes_and_inputs_keep_claudes_key_order() {
    let mut b = TimelineBuilder::new();
    let mut changed = Vec::new();
    let call = r#"{"type":"assistant","uuid":"a","timestamp":"2026-11-01T10:00:00.000Z","message":{"content":[{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/p/a.rs","old_string":"a","new_string":"b","replace_all":false}}]}}"#;
    let result = "{\"type\":\"user\",\"uuid\":\"r\",\"timestamp\":\"2026-11-01T10:00:01.000Z\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"\\u001b[2mCompacted\\u001b[22m done\"}]}}";
    b.push_line(call.as_bytes(), &mut changed);
    b.push_line(result.as_bytes(), &mut changed);
    let TimelineItem::ToolCall { input, result, .. } = &b.items()[0] else { panic!("{:?}", b.items()) };
    assert_eq!(result.as_ref().unwrap().content, "Compacted done");
    let keys: Vec<&str> = input.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["file_path", "old_string", "new_string", "replace_all"], "as Claude wrote them");
}
