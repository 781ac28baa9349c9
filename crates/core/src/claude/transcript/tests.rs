use super::*;

fn parse(s: &str) -> Record<'_> {
    serde_json::from_str(s).unwrap()
}

#[test]
fn reads_an_assistant_tool_use() {
    let r = parse(
        r#"{"type":"assistant","uuid":"u1","timestamp":"2026-11-01T00:00:00.000Z","requestId":"req_1",
        "message":{"id":"msg_1","model":"claude-opus-4-8","stop_reason":"tool_use",
        "usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":7},
        "content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test","description":"run"}}]}}"#,
    );
    assert_eq!(r.kind(), "assistant");
    let m = r.message.0.unwrap();
    assert_eq!(m.usage.0.unwrap().output_tokens, Tokens::Count(5));
    let Content::Blocks(b) = m.content else { panic!() };
    assert_eq!(b[0].name.get(), Some("Bash"));
    assert_eq!(b[0].input.0.as_ref().unwrap().target(), Some("cargo test"));
}

#[test]
fn a_question_or_a_plan_is_the_target() {
    let r = parse(
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"AskUserQuestion",
        "input":{"questions":[{"question":"Which database?","header":"DB","options":[{"label":"Postgres"}],
        "multiSelect":false},{"question":"Second?"}]}}]}}"#,
    );
    let Content::Blocks(b) = r.message.0.unwrap().content else { panic!() };
    assert_eq!(b[0].input.0.as_ref().unwrap().target(), Some("Which database?"));
    let r = parse(
        r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"ExitPlanMode",
        "input":{"plan":"\n# Plan: add a cache\n\n1. Measure\n2. Cache"}}]}}"##,
    );
    let Content::Blocks(b) = r.message.0.unwrap().content else { panic!() };
    assert_eq!(b[0].input.0.as_ref().unwrap().target(), Some("Plan: add a cache"));
    let r = parse(r#"{"type":"assistant","message":{"content":[{"type":"tool_use","input":{"questions":"oops"}}]}}"#);
    let Content::Blocks(b) = r.message.0.unwrap().content else { panic!() };
    assert_eq!(b[0].input.0.as_ref().unwrap().target(), None);
}

#[test]
fn wrong_types_read_as_absent_not_as_errors() {
    let r = parse(
        r#"{"type":"user","uuid":7,"isMeta":"yes","timestamp":{"a":[1,2]},"message":"oops",
        "toolUseResult":{"stdout":"big"},"cwd":null}"#,
    );
    assert_eq!(r.kind(), "user");
    assert_eq!(r.uuid.get(), None);
    assert!(!r.is_meta.0);
    assert_eq!(r.timestamp.get(), None);
    assert!(r.message.0.is_none());
    assert!(r.tool_use_result.get().is_none());
}

#[test]
fn unknown_types_and_fields_are_ignored() {
    let r = parse(r#"{"type":"brand-new-thing","future":{"deep":[{"x":1}]},"uuid":"u"}"#);
    assert_eq!(r.kind(), "brand-new-thing");
    let r = parse(r#"{"type":"user","message":{"content":[{"type":"hologram","data":[1,2,3]},"str",3]}}"#);
    let Content::Blocks(b) = r.message.0.unwrap().content else { panic!() };
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].kind.get(), Some("hologram"));
}

#[test]
fn strings_with_escapes_are_owned_others_borrowed() {
    let r = parse(r#"{"type":"user","message":{"content":"line one\nline two"}}"#);
    let Content::Text(t) = r.message.0.unwrap().content else { panic!() };
    assert_eq!(t, "line one\nline two");
    let r = parse(r#"{"type":"user","cwd":"/home/me"}"#);
    assert!(matches!(r.cwd.0, Some(Cow::Borrowed("/home/me"))));
}

#[test]
fn invalid_utf8_is_repaired_not_fatal() {
    let mut line = br#"{"type":"user","message":{"content":"caf"#.to_vec();
    line.extend_from_slice(&[0xff, 0xfe]);
    line.extend_from_slice(br#""}}"#);
    let mut scratch = String::new();
    let r = parse_line(&line, &mut scratch).unwrap();
    let Content::Text(t) = r.message.0.unwrap().content else { panic!() };
    assert!(t.starts_with("caf\u{fffd}"));
}

#[test]
fn malformed_json_is_an_error() {
    let mut s = String::new();
    assert!(parse_line(b"{\"type\":\"user\",", &mut s).is_err());
    assert!(parse_line(b"not json", &mut s).is_err());
}

/// `target` tries the keys in TARGET_KEYS' order: each key wins over all after it.
#[test]
fn the_target_follows_the_key_order() {
    let value = |k: &str| match k {
        "questions" => serde_json::json!([{"question": "q-questions"}]),
        "plan" => serde_json::json!("# q-plan\nmore"),
        _ => serde_json::json!(format!("q-{k}")),
    };
    for (i, key) in TARGET_KEYS.iter().enumerate() {
        let input: serde_json::Map<String, serde_json::Value> =
            TARGET_KEYS[i..].iter().map(|k| (k.to_string(), value(k))).collect();
        let text = serde_json::to_string(&input).unwrap();
        let parsed: ToolInput = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.target(), Some(format!("q-{key}").as_str()), "{key}");
    }
}

/// The cheap skip finds 2.1.330's big records by their first bytes, and nothing else:
/// a lookalike further in, another key first, a torn line or a conversation record is
/// parsed as usual.
#[test]
fn big_records_are_recognised_from_their_first_bytes() {
    let snapshot = format!(
        r#"{{"parentUuid":"p","isSidechain":false,"attachment":{{"type":"prompt_snapshot","systemPrompt":["{}"]}},"type":"attachment","uuid":"u","timestamp":"2026-11-24T02:23:30.649Z"}}"#,
        "x".repeat(70_000)
    );
    assert_eq!(skippable(snapshot.as_bytes()), Some(Skipped::Attachment));
    assert_eq!(trailing_timestamp(snapshot.as_bytes()), Some("2026-11-24T02:23:30.649Z"));
    assert_eq!(skippable(br#"{"type":"api-request-shape","shape":{}}"#), Some(Skipped::Request));
    assert_eq!(skippable(br#"{"type":"api-request","x":1}"#), Some(Skipped::Request));
    assert_eq!(skippable(br#"{"type":"api-request-sha"#), None, "torn: parsed (and counted) as usual");
    for kept in [
        &br#"{"type":"api-requests","x":1}"#[..],
        br#"{"type":"user","message":{"content":"{\"type\":\"api-request-shape\"}"}}"#,
        br#"{"uuid":"u","type":"api-request-shape"}"#,
        br#"{"parentUuid":"p","attachment":{"type":"plan_mode"},"type":"attachment"}"#,
        br#"{"parentUuid":"p","attachment":{"type":"prompt_snapshots"},"type":"attachment"}"#,
        br#"{"type":"attachment","attachment":{"type":"prompt_snapshot"}}"#,
    ] {
        assert_eq!(skippable(kept), None, "{}", String::from_utf8_lossy(kept));
    }
}

/// Read for a cost report, a record keeps what its usage needs and skips the rest unread:
/// the same usage, ids, time and model as a full read, no content.
#[test]
fn a_record_read_for_usage_keeps_its_usage_and_skips_its_content() {
    let line = r#"{"parentUuid":"p","isSidechain":true,"type":"assistant","timestamp":"2026-11-01T00:00:00.000Z",
        "cwd":"/w","sessionId":"s","version":"2.1.330","requestId":"req_1","toolUseResult":{"stdout":"big"},
        "message":{"id":"msg_1","model":"claude-opus-4-8","stop_reason":"tool_use",
        "content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}],
        "usage":{"input_tokens":3,"output_tokens":5,"cache_creation_input_tokens":7,
                 "cache_creation":{"ephemeral_1h_input_tokens":2},"speed":"fast"}}}"#;
    let full = parse(line);
    let light = serde_json::from_str::<UsageRecord>(line).unwrap().0;
    let (a, b) = (full.message_usage().unwrap(), light.message_usage().unwrap());
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_eq!(b.usage.cache_creation.0.unwrap().ephemeral_1h_input_tokens, Tokens::Count(2));
    assert!(b.usage.speed.fast && b.is_sidechain);
    assert_eq!((light.kind(), light.cwd.get()), ("assistant", Some("/w")));
    assert!(matches!(light.message.0.unwrap().content, Content::None), "content is not read");
    assert!(matches!(full.message.0.unwrap().content, Content::Blocks(_)));
    // An agent_progress record's copy of a subagent's message states its usage too.
    let progress = r#"{"type":"progress","data":{"type":"agent_progress","message":{"timestamp":"2026-11-01T00:00:01.000Z",
        "requestId":"req_2","isSidechain":true,"message":{"id":"msg_2","model":"claude-haiku-4-5",
        "usage":{"input_tokens":1,"output_tokens":1}}}}}"#;
    let u = serde_json::from_str::<UsageRecord>(progress).unwrap().0;
    let mu = u.message_usage().unwrap();
    assert_eq!((mu.message_id, mu.request_id, mu.model), (Some("msg_2"), Some("req_2"), Some("claude-haiku-4-5")));
    assert_eq!(mu.timestamp, Some("2026-11-01T00:00:01.000Z"));
    assert!(parse(r#"{"type":"user","message":{"content":"hi"}}"#).message_usage().is_none());
}

#[test]
fn the_timeline_reads_the_same_records_with_more_of_them() {
    let mut scratch = String::new();
    let line = br#"{"type":"system","subtype":"api_error","uuid":"u","error":{"status":529,"error":{"message":null},"message":"outer"},"content":7,"durationMs":12.0}"#;
    let r = parse_timeline_line(line, &mut scratch).unwrap().unwrap();
    assert_eq!((r.kind(), r.subtype(), r.uuid.get()), ("system", "api_error", Some("u")));
    let t = r.timeline_fields();
    let error = t.error.0.as_ref().unwrap();
    assert_eq!(error.status.0, Some(529));
    assert_eq!(error.detail(), None, "a nested message that is there, even null, is the one read");
    assert_eq!(t.content.text(), "7", "content of another shape reads as its JSON");
    assert_eq!(t.duration_ms.0, None, "a float is not a count of milliseconds");
    // JSON that is not an object is neither a record nor malformed.
    assert!(parse_timeline_line(b"[1,2]", &mut scratch).unwrap().is_none());
    assert!(parse_timeline_line(b"{\"type\":", &mut scratch).is_err());
    // The roster's reading of the same line reads none of it.
    let mut scratch = String::new();
    assert!(parse_line(line, &mut scratch).unwrap().timeline.is_none());
}

#[test]
fn the_timeline_keeps_every_element_of_a_content_list() {
    let mut scratch = String::new();
    let line = br#"{"type":"user","message":{"content":[{"type":"text","text":"a"},"bare",3,{"type":"image"},{"type":"tool_reference","tool_name":"Bash"},{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"out"}]}]}}"#;
    let r = parse_timeline_line(line, &mut scratch).unwrap().unwrap();
    let Content::Blocks(b) = &r.message.0.as_ref().unwrap().content else { panic!() };
    let pieces: Vec<Option<String>> = b.iter().map(Block::piece).collect();
    assert_eq!(
        pieces,
        [Some("a".into()), Some("bare".into()), None, Some("[image]".into()), Some("[tool Bash]".into()), None]
    );
    assert_eq!(b[5].content_text(), "out");
    // The roster's reader keeps the objects only.
    let r = parse_line(line, &mut scratch).unwrap();
    let Content::Blocks(b) = &r.message.0.as_ref().unwrap().content else { panic!() };
    assert_eq!(b.len(), 4);
}
