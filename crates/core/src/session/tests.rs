use super::*;

fn row() -> TrackedSession {
    serde_json::from_value(serde_json::json!({
        "sessionId": "s1", "projectId": "-p", "cwd": "/p", "repoRoot": null, "branch": "main", "goal": "fix it",
        "summary": null, "title": null, "status": "working", "hasPendingToolUse": false, "pendingTool": null,
        "lastActivityAt": "2026-11-01T00:00:00.000Z", "createdAt": null, "model": "claude-opus-4-8",
        "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 3, "cacheReadInputTokens": 4},
        "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null, "supersededAt": null,
        "workChainId": "s1", "workChainName": null, "chainLength": 1, "source": "watcher", "supervision": null,
        "live": true, "pid": 7, "transcriptPath": "/r/projects/-p/s1.jsonl", "permissionMode": null,
        "malformedLines": 0, "statusFile": null, "name": null, "subagents": 0,
        "cost": {"estimatedUsd": null, "unknownModels": [], "pricesAsOf": "2026-11-20", "billed": null}
    }))
    .unwrap()
}

/// What `updated` events carried before the patch was typed: the changed fields of the
/// rows as JSON values, in a sorted map.
fn old_changes(new: &TrackedSession, old: &TrackedSession) -> serde_json::Map<String, serde_json::Value> {
    let (serde_json::Value::Object(n), serde_json::Value::Object(o)) =
        (serde_json::to_value(new).unwrap(), serde_json::to_value(old).unwrap())
    else {
        unreachable!()
    };
    n.into_iter().filter(|(k, v)| o.get(k) != Some(v)).collect()
}

#[test]
fn a_patch_carries_exactly_what_changed_and_applies_back() {
    let before = row();
    let mut after = before.clone();
    after.status = Status::WaitingForApproval;
    after.pending_tool = Some(PendingTool { tool: "Bash".into(), target: "ls".into() });
    after.branch = None;
    after.usage.output_tokens = 9;
    let patch = after.diff(&before);
    assert_eq!(patch.fields(), ["branch", "status", "pendingTool", "usage"]);
    assert_eq!(patch.branch, Some(None), "a field that became null is present as null");
    let mut applied = before.clone();
    applied.apply(patch.clone());
    assert_eq!(applied, after);
    assert!(after.diff(&after).is_empty());
}

#[test]
fn a_patch_is_written_byte_for_byte_as_before() {
    let before = row();
    let mut after = before.clone();
    after.status = Status::Idle;
    after.pending_tool = Some(PendingTool { tool: "Bash".into(), target: "ls".into() });
    after.goal = None;
    after.usage.input_tokens = 100;
    let ev = StoreEvent::Updated { session_id: after.session_id.clone(), changes: Box::new(after.diff(&before)) };
    let old = serde_json::json!({"type": "updated", "sessionId": "s1", "changes": old_changes(&after, &before)});
    let typed = serde_json::to_string(&ev).unwrap();
    assert_eq!(
        typed,
        r#"{"type":"updated","sessionId":"s1","changes":{"goal":null,"pendingTool":{"target":"ls","tool":"Bash"},"status":"idle","usage":{"cacheCreationInputTokens":3,"cacheReadInputTokens":4,"inputTokens":100,"outputTokens":2}}}"#
    );
    assert_eq!(serde_json::from_str::<serde_json::Value>(&typed).unwrap(), old);
    let back: StoreEvent = serde_json::from_str(&typed).unwrap();
    assert_eq!(back, ev, "a patch read back is the same patch (nulls included)");
}
