//! The real Claude Code CLI (pinned 2.1.197) in a PTY against the mock API: a permission
//! prompt, approval, `/compact`, `/clear`, a second prompt, `/exit`.
//!
//! This asserts what the CLI itself writes (transcripts and `sessions/<pid>.json`) at every
//! checkpoint; engine assertions can hook into the same steps through
//! [`Scenario::set_observer`]. Run with `-- --nocapture` to see the file timeline.

use std::time::Instant;

use anyhow::{Context, Result, ensure};
use mimesis_tests::claude::{CLAUDE_CODE_VERSION, encode_project_dir};
use mimesis_tests::files::{Transcript, content_blocks, record_type};
use mimesis_tests::mock_api::{MockApi, RequestKind};
use mimesis_tests::scenario::{
    self, Checkpoint, Observation, PROMPT_1, PROMPT_2, REPLY_1, REPLY_2, Scenario, TOOL_COMMAND, TOOL_INTRO,
    pending_tool_uses, registry_field,
};
use serde_json::Value;

fn registry(obs: &Observation, pid: u32) -> Result<&Value> {
    obs.registry(pid).with_context(|| format!("sessions/{pid}.json missing at {:?}", obs.checkpoint))
}

fn transcript(obs: &Observation) -> Result<&Transcript> {
    obs.transcript().with_context(|| format!("no transcript for the current session at {:?}", obs.checkpoint))
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Assistant records of one API message (`message.id`).
fn assistant_records<'a>(t: &'a Transcript, message_id: &str) -> Vec<&'a Value> {
    t.records_of_type("assistant")
        .filter(|r| r.pointer("/message/id").and_then(Value::as_str) == Some(message_id))
        .collect()
}

#[test]
fn real_cli_permission_compact_clear_exit() -> Result<()> {
    let t0 = Instant::now();
    let mut s = Scenario::new()?;
    let result = run(&mut s);
    eprintln!(
        "=== timeline ===\n{}\n=== API requests ===\n{}\nwall time: {:?}",
        s.timeline(),
        s.api.summary(),
        t0.elapsed()
    );
    match result {
        // Step failures already carry the screen, files and requests.
        Err(e) if !e.chain().any(|c| c.to_string().starts_with("scenario step")) => {
            Err(e.context(format!("assertion failed\n{}", s.diagnostics())))
        }
        other => other,
    }
}

fn run(s: &mut Scenario) -> Result<()> {
    // --- start
    let started = s.start()?;
    let pid = s.pid()?;
    {
        let reg = registry(&started, pid)?;
        ensure!(reg.get("pid").and_then(Value::as_u64) == Some(pid as u64), "{reg}");
        ensure!(str_field(reg, "status") == Some("idle"), "{reg}");
        ensure!(str_field(reg, "kind") == Some("interactive"), "{reg}");
        ensure!(str_field(reg, "entrypoint") == Some("cli"), "{reg}");
        ensure!(str_field(reg, "version") == Some(CLAUDE_CODE_VERSION), "{reg}");
        let cwd = s.home.project_dir().to_string_lossy().into_owned();
        ensure!(str_field(reg, "cwd") == Some(cwd.as_str()), "{reg}");
        ensure!(reg.get("startedAt").is_some_and(Value::is_u64), "{reg}");
        ensure!(reg.get("procStart").is_some(), "{reg}");
        ensure!(
            started.files.main_transcripts().next().is_none(),
            "no transcript is written before the first prompt:\n{}",
            started.files
        );
    }
    let first_id = started.session_id.clone().context("session id at start")?;

    // --- prompt -> held request -> permission dialog
    let dialog = s.prompt_with_permission()?;
    let in_flight = s.observation(Checkpoint::InFlight).context("InFlight observation")?.clone();
    {
        ensure!(registry_field(&in_flight.files, pid, "status") == Some("busy"));
        ensure!(in_flight.session_id.as_deref() == Some(first_id.as_str()));
        let t = transcript(&in_flight)?;
        let last = t.last_significant().context("records")?;
        ensure!(
            record_type(last) == "user" && last.pointer("/message/content").and_then(Value::as_str) == Some(PROMPT_1),
            "while the request is in flight the last record is the prompt: {last}"
        );
        ensure!(t.records_of_type("assistant").next().is_none());
    }
    {
        ensure!(dialog.session_id.as_deref() == Some(first_id.as_str()));
        let reg = registry(&dialog, pid)?;
        ensure!(str_field(reg, "status") == Some("waiting"), "{reg}");
        ensure!(str_field(reg, "waitingFor") == Some("permission prompt"), "{reg}");
        for needle in ["Do you want to proceed?", "Bash command", TOOL_COMMAND, "1. Yes", "3. No"] {
            ensure!(dialog.screen.contains(needle), "{needle:?} not on screen\n{}", dialog.screen);
        }
        let t = transcript(&dialog)?;
        let pending = pending_tool_uses(t);
        ensure!(pending.len() == 1, "one pending tool_use expected: {pending:?}");
        ensure!(t.tool_results().is_empty(), "no tool_result while the dialog shows");
        let last = t.last_significant().context("records")?;
        ensure!(
            record_type(last) == "assistant"
                && content_blocks(last).any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")),
            "last significant record is the pending tool_use: {last}"
        );
        let tool_use = t.tool_uses()[0];
        ensure!(str_field(tool_use, "name") == Some("Bash"));
        ensure!(tool_use.pointer("/input/command").and_then(Value::as_str) == Some(TOOL_COMMAND));
        // The prompt record.
        let prompt = t
            .records_of_type("user")
            .find(|r| r.pointer("/message/content").and_then(Value::as_str) == Some(PROMPT_1))
            .context("user prompt record")?;
        ensure!(str_field(prompt, "permissionMode") == Some("default"), "{prompt}");
        ensure!(str_field(prompt, "promptSource") == Some("typed"), "{prompt}");
        // One API message (text + tool_use) = one assistant record per block, same id.
        let msg_id = last.pointer("/message/id").and_then(Value::as_str).context("message.id")?;
        let blocks = assistant_records(t, msg_id);
        ensure!(blocks.len() == 2, "two assistant records for {msg_id}: {blocks:?}");
        ensure!(
            content_blocks(blocks[0]).any(|b| str_field(b, "text") == Some(TOOL_INTRO)),
            "first block is the text: {}",
            blocks[0]
        );
        // 2.1.197 writes a message's block records when the message completes: each
        // repeats the final usage, stop_reason and requestId (count usage once per id).
        for b in &blocks {
            ensure!(b.pointer("/message/usage") == blocks[0].pointer("/message/usage"), "{b}");
            ensure!(b.pointer("/message/stop_reason").and_then(Value::as_str) == Some("tool_use"), "{b}");
            ensure!(str_field(b, "requestId").is_some(), "{b}");
            ensure!(str_field(b, "requestId") == str_field(blocks[0], "requestId"), "{b}");
        }
        // The transcript lives where the encoding rule says.
        let expected_dir = s.home.projects_dir().join(encode_project_dir(s.home.project_dir()));
        ensure!(
            expected_dir.join(format!("{first_id}.jsonl")).is_file(),
            "transcript at {}/{first_id}.jsonl",
            expected_dir.display()
        );
    }

    // --- approve -> tool runs -> end_turn
    let done = s.approve()?;
    {
        let reg = registry(&done, pid)?;
        ensure!(str_field(reg, "status") == Some("idle"), "{reg}");
        ensure!(reg.get("waitingFor").is_none(), "{reg}");
        let t = transcript(&done)?;
        ensure!(pending_tool_uses(t).is_empty());
        let result = t.tool_results()[0];
        ensure!(result.get("is_error").and_then(Value::as_bool) == Some(false), "{result}");
        let final_text = t
            .records_of_type("assistant")
            .find(|r| content_blocks(r).any(|b| str_field(b, "text") == Some(REPLY_1)))
            .context("final text")?;
        ensure!(final_text.pointer("/message/stop_reason").and_then(Value::as_str) == Some("end_turn"), "{final_text}");
        ensure!(t.system_records("turn_duration").count() == 1);
    }

    // --- /compact: same file, compact_boundary + summary
    let compacted = s.compact()?;
    {
        ensure!(compacted.session_id.as_deref() == Some(first_id.as_str()), "/compact keeps the session id");
        ensure!(compacted.files.main_transcripts().count() == 1, "/compact starts no new file");
        let t = transcript(&compacted)?;
        let boundary = t.system_records("compact_boundary").next().context("compact_boundary")?;
        ensure!(boundary.pointer("/compactMetadata/trigger").and_then(Value::as_str) == Some("manual"), "{boundary}");
        ensure!(boundary.get("logicalParentUuid").is_some_and(Value::is_string), "{boundary}");
        let summary = t
            .records_of_type("user")
            .find(|r| r.get("isCompactSummary").and_then(Value::as_bool) == Some(true))
            .context("compact summary")?;
        let text = summary.pointer("/message/content").and_then(Value::as_str).unwrap_or("");
        ensure!(text.contains(MockApi::DEFAULT_SUMMARY), "summary text: {text}");
        ensure!(!s.api.requests_of(&RequestKind::Compact).is_empty());
    }

    // --- /clear: new session id and file, same process
    let cleared = s.clear()?;
    let second_id = cleared.session_id.clone().context("session id after /clear")?;
    {
        ensure!(second_id != first_id, "/clear starts a new session id");
        ensure!(registry(&cleared, pid)?.get("pid").and_then(Value::as_u64) == Some(pid as u64));
        ensure!(cleared.files.main_transcripts().count() == 2, "/clear starts a second file");
        ensure!(cleared.files.transcript_for(&first_id).is_some(), "the old file stays");
        let t = transcript(&cleared)?;
        ensure!(
            t.records.iter().filter_map(|r| str_field(r, "sessionId")).all(|id| id == second_id),
            "every record of the new file carries the new id"
        );
        ensure!(
            t.records_of_type("user").any(|r| r
                .pointer("/message/content")
                .and_then(Value::as_str)
                .is_some_and(|c| c.contains("<command-name>/clear</command-name>"))),
            "the new file starts with the /clear command"
        );
    }

    // --- second prompt in the new session
    let second = s.second_prompt()?;
    {
        ensure!(second.session_id.as_deref() == Some(second_id.as_str()));
        let t = transcript(&second)?;
        ensure!(
            t.records_of_type("user").any(|r| r.pointer("/message/content").and_then(Value::as_str) == Some(PROMPT_2))
        );
        ensure!(scenario::turn_finished(t, REPLY_2));
        let old_before = cleared.files.transcript_for(&first_id).map(|t| t.records.len());
        let old_after = second.files.transcript_for(&first_id).map(|t| t.records.len());
        ensure!(old_before == old_after, "the old file is not written after /clear");
    }

    // --- /exit
    let exited = s.exit()?;
    ensure!(s.exit_code() == Some(0), "exit code {:?}", s.exit_code());
    ensure!(exited.screen.contains("Resume this session with:"), "{}", exited.screen);
    ensure!(exited.screen.contains(&format!("claude --resume {second_id}")), "{}", exited.screen);
    ensure!(exited.files.sessions.is_empty(), "registry emptied on exit");

    // --- the API side
    let main = s.api.requests_of(&RequestKind::Main);
    ensure!(main.len() == 3, "three main requests:\n{}", s.api.summary());
    ensure!(main[1].tool_results().len() == 1, "the 2nd main request carries the tool_result");
    ensure!(s.api.pending_replies() == 0, "all scripted replies consumed");
    ensure!(
        s.api.requests_of(&RequestKind::External).is_empty(),
        "nothing tried to reach the network:\n{}",
        s.api.summary()
    );

    Ok(())
}
