//! Supervised sessions end to end (SPEC P1–P13): the real supervisor, real PTYs, and the
//! stand-in agent for the faults the real CLI cannot show on demand (stack-overflow
//! crash, kill -9, memory balloon, corrupted resume). Where a test depends on when a
//! policy timer fires (duration, idle, retry delay, debounce), the supervisor runs on a
//! manual clock the test moves; the processes and PTYs stay real, and wall-clock limits
//! are only generous hang guards. The rules themselves are unit-tested in the engine.
//!
//! Needs `cargo build -p mimesis-standin -p mimesis-cli` (done by `cargo test --workspace`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_core::clock::ManualClock;
use mimesis_core::dialog::Answer;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::ledger::ProcessLedger;
use mimesis_core::supervision::{AgentCommand, EventKind, Limits, ReadyStatus, SupervisionState, TerminatedReason};
use mimesis_core::{SessionId, Source, TrackedSession};
use mimesis_fleetdb::{Db, FILE_NAME};
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::supervised::{ProcGuard, Supervised, mimesis, quick_limits, standin};
use mimesis_watch::Engine;

const T: Duration = Duration::from_secs(20);

/// The fault suite with an agent that draws no Claude Code TUI.
/// A temporary home: the dir, the Claude config dir and a project folder (both created)
/// and Mimesis's data dir, side by side under the dir's canonical path.
fn temp_home(dir: tempfile::TempDir) -> Result<(tempfile::TempDir, PathBuf, PathBuf, PathBuf)> {
    let base = dir.path().canonicalize()?;
    let (root, data, cwd) = (base.join(".claude"), base.join("data"), base.join("project"));
    std::fs::create_dir_all(&root)?;
    std::fs::create_dir_all(&cwd)?;
    Ok((dir, root, data, cwd))
}

#[path = "faults.rs"]
mod faults;

/// Longer than every timer of the policy but the idle timeout and the duration limit.
const LONG_TURN: Duration = Duration::from_secs(9 * 60);

/// Moves the manual clock on a second at a time until an event of type `ty` was seen.
async fn advance_until(s: &Supervised, clock: &ManualClock, ty: &str) -> Result<()> {
    let deadline = std::time::Instant::now() + T;
    while s.count(ty) == 0 {
        ensure!(std::time::Instant::now() < deadline, "no {ty}: {:?}", s.types());
        s.advance(clock, Duration::from_secs(1)).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Waits until `path` exists (or, `exists` false, is gone).
async fn wait_path(path: &std::path::Path, exists: bool) -> Result<()> {
    let deadline = std::time::Instant::now() + T;
    while path.exists() != exists {
        ensure!(
            std::time::Instant::now() < deadline,
            "{} never {}",
            path.display(),
            if exists { "appeared" } else { "went" }
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s[s.rfind(')').map_or(0, |i| i + 1)..].split_whitespace().next() != Some("Z"))
        .unwrap_or(false)
}

async fn started(s: &Supervised) -> Result<SessionId> {
    let id = s.sup.create(&s.cwd, None).await?;
    s.wait_prompt(&id, T).await?;
    Ok(id)
}

/// A whole turn of the stand-in: typed, answered (`Echo: …` in the transcript), and the
/// prompt back (a screen read before the turn began would show a prompt too).
async fn turn(s: &Supervised, id: &SessionId, text: &str) -> Result<()> {
    s.type_line(id, text).await?;
    let reply = format!("Echo: {text}");
    let deadline = std::time::Instant::now() + T;
    while !std::fs::read_to_string(s.transcript(id)).unwrap_or_default().contains(&reply) {
        ensure!(std::time::Instant::now() < deadline, "the turn {text:?} never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.wait_screen(id, "the reply and the prompt", T, |rows| {
        rows.iter().any(|r| r.contains(&reply)) && rows.iter().any(|r| r.contains("? for shortcuts"))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_session_is_in_the_roster_as_pty_before_its_transcript_exists() -> Result<()> {
    let (dir, root, data, cwd) = temp_home(tempfile::tempdir()?)?;
    let agent = AgentCommand::new(standin()?);
    let s = Supervised::start_in(dir, root.clone(), data, cwd, agent, Some(quick_limits()), true, |_| {}).await?;
    let engine = s.engine.clone().context("the roster")?;
    engine.ready().await;
    let id = started(&s).await?;
    let transcript = TranscriptLocation::expected(&root, &s.cwd, &id).path;
    ensure!(!transcript.exists(), "the CLI writes the transcript at the first prompt");
    let row = wait_row(&engine, &id, |r| r.supervision.as_ref().is_some_and(|s| s.pid.is_some())).await?;
    ensure!(row.source == Source::Pty, "{row:?}");
    ensure!(row.transcript_path == transcript.to_string_lossy(), "{}", row.transcript_path);
    ensure!(row.supervision.as_ref().unwrap().state == SupervisionState::Running);
    // Full I/O: typing reaches the agent, whose transcript then fills the same row.
    turn(&s, &id, "hello there").await?;
    wait_row(&engine, &id, |r| r.goal.as_deref() == Some("hello there") && r.source == Source::Pty).await?;
    // The scrollback survives detaching: a new client sees what was drawn.
    let a = s.sup.attach(&id, true).await?;
    ensure!(String::from_utf8_lossy(&a.scrollback).contains("Echo: hello there"));
    s.sup.detach(&id, true);
    s.sup.delete(&id)?;
    wait_row(&engine, &id, |r| r.source == Source::Watcher && r.supervision.is_none()).await?;
    s.shutdown().await;
    Ok(())
}

/// A session whose program cannot be started at all (no such agent) leaves nothing: an error
/// that says why, and no row in the roster. Its first state had put a Terminated row there,
/// whose every button then answered "no supervised session".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_agent_is_missing_leaves_no_row() -> Result<()> {
    let (dir, root, data, cwd) = temp_home(tempfile::tempdir()?)?;
    let agent = AgentCommand::new(PathBuf::from("/nonexistent/claude"));
    let s = Supervised::start_in(dir, root, data, cwd, agent, Some(quick_limits()), true, |_| {}).await?;
    let engine = s.engine.clone().context("the roster")?;
    engine.ready().await;
    let err = s.sup.create(&s.cwd, None).await.err().context("a missing agent started")?;
    ensure!(err.to_string().contains("cannot find the agent program"), "{err}");
    // (The engine takes the supervisor's changes and a snapshot's question in one queue.)
    let rows = engine.snapshot().await?.sessions;
    ensure!(rows.iter().all(|r| r.source != Source::Pty && r.supervision.is_none()), "{rows:?}");
    s.shutdown().await;
    Ok(())
}

/// A session started from the window starts at the size of the terminal that shows it (its
/// first screen is drawn for it), clamped to sane bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_starts_at_the_size_it_is_given() -> Result<()> {
    let (dir, root, data, cwd) = temp_home(tempfile::tempdir()?)?;
    let script = dir.path().join("size.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"size: $(stty size)\"\nexec sleep 60\n")?;
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let s = Supervised::start_in(dir, root, data, cwd, AgentCommand::new(script), Some(quick_limits()), false, |_| {})
        .await?;
    let id = s.sup.create_sized(&s.cwd, None, Some((97, 31))).await?;
    s.wait_text(&id, "size: 31 97", T).await?;
    let tiny = s.sup.create_sized(&s.cwd, None, Some((3, 1))).await?;
    s.wait_text(&tiny, "size: 5 20", T).await?;
    s.shutdown().await;
    Ok(())
}

async fn wait_row(engine: &Engine, id: &SessionId, pred: impl Fn(&TrackedSession) -> bool) -> Result<TrackedSession> {
    let deadline = std::time::Instant::now() + T;
    loop {
        let snap = engine.snapshot().await?;
        if let Some(r) = snap.sessions.iter().find(|r| &r.session_id == id)
            && pred(r)
        {
            return Ok(r.clone());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "roster row never matched: {:?}",
            snap.sessions.iter().find(|r| &r.session_id == id)
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_working_is_recovered_only_after_the_turn_ends() -> Result<()> {
    let (s, clock) = Supervised::standin_on_manual_clock(quick_limits()).await?;
    let id = started(&s).await?;
    // A turn that only ends when told (`finish`), with a crash dump once the supervisor saw
    // it start (it hears the agent's registry on its own schedule).
    turn(&s, &id, "hello").await?;
    s.wait_sup(&id, "the idle timer after a turn", T, |s| s.idle_deadline.is_some()).await?;
    s.type_line(&id, "work 3600").await?;
    s.wait_sup(&id, "the turn seen", T, |s| s.idle_deadline.is_none()).await?;
    s.type_line(&id, "dump").await?;
    let ev = s.wait_event("crash_detected", T).await?;
    ensure!(matches!(ev.kind, EventKind::CrashDetected { deferred: true }), "{ev:?}");
    let before = s.sup.supervision(&id).context("supervised")?;
    ensure!(before.pending_crash_recovery && before.state == SupervisionState::Running, "{before:?}");
    // However long the turn takes (every timer of the policy sees the time pass and has
    // been handled when `advance` returns), the working agent is not interrupted.
    s.advance(&clock, LONG_TURN).await;
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.pending_crash_recovery && sup.state == SupervisionState::Running, "{sup:?}");
    ensure!(sup.pid == before.pid && sup.recovery_count == 0, "the working agent was not interrupted: {sup:?}");
    // The turn finishes (its reply is written), then the graceful restart happens.
    s.type_line(&id, "finish").await?;
    advance_until(&s, &clock, "session_recovered").await?;
    let text = std::fs::read_to_string(s.transcript(&id))?;
    ensure!(text.contains("Echo: work 3600"), "the turn completed before the restart");
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.recovery_count == 1 && !sup.pending_crash_recovery, "{sup:?}");
    // Same session, same transcript.
    turn(&s, &id, "after recovery").await?;
    ensure!(s.prompts(&id) == ["hello", "work 3600", "after recovery"], "{:?}", s.prompts(&id));
    s.shutdown().await;
    Ok(())
}

/// Waits until the session's transcript holds `n` tool results with `is_error` = `error`.
async fn wait_tool_results(s: &Supervised, id: &SessionId, error: bool, n: usize) -> Result<()> {
    let deadline = std::time::Instant::now() + T;
    let count = || {
        std::fs::read_to_string(s.transcript(id))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| r["message"]["content"][0]["type"] == "tool_result")
            .filter(|r| r["message"]["content"][0]["is_error"] == error)
            .count()
    };
    while count() < n {
        ensure!(std::time::Instant::now() < deadline, "{n} tool results with is_error={error}: only {}", count());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ensure!(count() == n, "more tool results than answers: {}", count());
    Ok(())
}

/// Issue 12: the dialog of a supervised session is answered from Mimesis by the label of
/// its option, never by position: the numbered dialog (2.1.197) by its digit, the
/// unnumbered one with No marked and deaf for a moment (2.1.330's auto mode) by arrows to
/// "Yes"; the answer reports the option once the dialog is gone, and a clear error when
/// there is nothing to answer. A question's options are read and one is chosen by label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_dialog_is_answered_by_the_label_of_its_option() -> Result<()> {
    let s = Supervised::standin(quick_limits()).await?;
    let id = started(&s).await?;
    s.type_line(&id, "ask").await?;
    s.wait_text(&id, "Do you want to proceed?", T).await?;
    ensure!(s.sup.answer(&id, Answer::Approve).await? == "Yes");
    wait_tool_results(&s, &id, false, 1).await?;

    s.wait_prompt(&id, T).await?;
    s.type_line(&id, "ask-auto").await?;
    s.wait_text(&id, "❯ No", T).await?;
    ensure!(s.sup.answer(&id, Answer::Approve).await? == "Yes", "arrows to Yes, then Enter");
    wait_tool_results(&s, &id, false, 2).await?;

    s.wait_prompt(&id, T).await?;
    s.type_line(&id, "ask").await?;
    s.wait_text(&id, "Do you want to proceed?", T).await?;
    let label = s.sup.answer(&id, Answer::Deny).await?;
    ensure!(label.starts_with("No"), "{label}");
    wait_tool_results(&s, &id, true, 1).await?;
    wait_tool_results(&s, &id, false, 2).await?;

    // A question (AskUserQuestion) is answered by the label of the option the user picked.
    s.wait_prompt(&id, T).await?;
    s.type_line(&id, "question").await?;
    // (Its last option: the question comes first, and a read of the screen between the two
    // would find the question without all its options.)
    s.wait_text(&id, "Type something.", T).await?;
    let d = s.sup.dialog(&id).await?.context("the question on screen")?;
    let labels: Vec<&str> = d.options.iter().map(|o| o.label.as_str()).collect();
    ensure!(d.question == "Which database should the service use?", "{d:?}");
    ensure!(labels == ["Postgres", "SQLite", "Type something."], "{d:?}");
    ensure!(s.sup.answer(&id, Answer::Option("SQLite".into())).await? == "SQLite");
    let deadline = std::time::Instant::now() + T;
    while !std::fs::read_to_string(s.transcript(&id))?.contains("You chose SQLite.") {
        ensure!(std::time::Instant::now() < deadline, "the answer never reached the agent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    s.wait_prompt(&id, T).await?;
    ensure!(s.sup.dialog(&id).await?.is_none(), "no dialog at the prompt");
    let err = s.sup.answer(&id, Answer::Approve).await.expect_err("no dialog to answer").to_string();
    ensure!(err.contains("no dialog is on the session's screen"), "{err}");
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_a_permission_prompt_waits_for_the_answer() -> Result<()> {
    let (s, clock) = Supervised::standin_on_manual_clock(quick_limits()).await?;
    let id = started(&s).await?;
    s.type_line(&id, "ask").await?;
    s.wait_text(&id, "Do you want to proceed?", T).await?;
    // The supervisor saw the dialog (the registry may tell it after the screen does).
    s.wait_sup(&id, "the dialog seen", T, |s| s.awaiting_permission).await?;
    s.sup.input(&id, b"c").await?; // the harness crashes while the dialog shows
    let ev = s.wait_event("crash_detected", T).await?;
    ensure!(matches!(ev.kind, EventKind::CrashDetected { deferred: true }), "{ev:?}");
    let before = s.sup.supervision(&id).context("supervised")?;
    ensure!(before.awaiting_permission, "{before:?}");
    // However long the user takes to answer, the dialog is not taken from them.
    s.advance(&clock, LONG_TURN).await;
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.pid == before.pid && sup.pending_crash_recovery, "never recovered at a permission prompt: {sup:?}");
    s.wait_text(&id, "Do you want to proceed?", T).await?;
    s.sup.input(&id, b"1").await?; // approve: the tool runs, the turn ends
    advance_until(&s, &clock, "session_recovered").await?;
    ensure!(std::fs::read_to_string(s.transcript(&id))?.contains("tool_result"), "the approved tool ran first");
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_idle_is_recovered_at_once_and_a_second_dump_is_debounced() -> Result<()> {
    // The clock stands still: the second dump is surely within the 30 s debounce.
    let (s, _clock) = Supervised::standin_on_manual_clock(quick_limits()).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // The supervisor knows the turn ended (it hears the registry on its own schedule).
    s.wait_sup(&id, "the idle timer after a turn", T, |s| s.idle_deadline.is_some()).await?;
    s.type_line(&id, "crash").await?;
    let ev = s.wait_event("crash_detected", T).await?;
    ensure!(matches!(ev.kind, EventKind::CrashDetected { deferred: false }), "{ev:?}");
    s.wait_event("session_recovered", T).await?;
    s.wait_prompt(&id, T).await?;
    // The same dump again within 30 s of a successful recovery: debounced.
    let before = s.sup.supervision(&id).context("supervised")?;
    s.type_line(&id, "crash").await?;
    // The screen model shows the dump once the actor took it, and it looks for crash dumps
    // in the same step: what it decided is in the supervision now.
    s.wait_text(&id, "Maximum call stack size exceeded", T).await?;
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.pid == before.pid && sup.state == SupervisionState::Running, "debounced: {sup:?} {:?}", s.types());
    ensure!(s.count("crash_detected") == 1, "{:?}", s.types());
    ensure!(s.sup.supervision(&id).unwrap().recovery_count == 1);
    ensure!(s.prompts(&id).first().map(String::as_str) == Some("hello"), "same conversation");
    s.shutdown().await;
    Ok(())
}

/// P4: after a FAILED recovery, crash dumps are ignored for 5 s (not 30 s): the failure's
/// own echo is not a new crash, a dump 5 s later is. Real PTYs and processes; the policy's
/// clock is the test's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_recovery_a_dump_is_debounced_for_five_seconds_only() -> Result<()> {
    let limits = quick_limits();
    let (s, clock) = Supervised::standin_on_manual_clock(limits.clone()).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // Every automatic resume will fail (exit 2 before the prompt shows).
    s.type_line(&id, &format!("fail-resumes {}", limits.recovery_retries)).await?;
    s.wait_text(&id, "resumes will fail", T).await?;
    s.type_line(&id, "crash-die 7").await?;
    s.wait_event("crash_detected", T).await?;
    // Recovery resumes at once, then each retry waits for its delay on the test's clock.
    let deadline = std::time::Instant::now() + T;
    while s.count("recovery_failed") == 0 {
        ensure!(std::time::Instant::now() < deadline, "recovery never failed: {:?}", s.types());
        s.advance(&clock, limits.recovery_retry_delay).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ev = s.wait_event("mode_change", T).await?;
    ensure!(matches!(&ev.kind, EventKind::ModeChange { mode, .. } if mode == "one_shot"), "{ev:?}");
    // "Retry": the resume works now (the failures are used up), at once on the clock.
    s.sup.restart(&id)?;
    let ev = s.wait_event("session_ready", T).await?;
    ensure!(matches!(ev.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }), "{ev:?}");
    s.wait_state(&id, SupervisionState::Running, T).await?;
    s.wait_prompt(&id, T).await?;
    let crashes = s.count("crash_detected");
    let before = s.sup.supervision(&id).context("supervised")?;
    // Within 5 s of the failed attempt (no time passed): ignored. (Crash dumps are looked
    // for in the step that puts them on the screen model: once it shows the dump, what the
    // policy made of it is in the supervision.)
    s.type_line(&id, "crash").await?;
    s.wait_text(&id, "Maximum call stack size exceeded", T).await?;
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.pid == before.pid && sup.state == SupervisionState::Running, "debounced: {sup:?} {:?}", s.types());
    ensure!(s.count("crash_detected") == crashes, "debounced: {:?}", s.types());
    ensure!(s.count("session_recovered") == 0);
    // 5 s on, the same dump is a new crash (the 30 s window is for successes only).
    s.advance(&clock, limits.crash_debounce_failure).await;
    s.type_line(&id, "crash").await?;
    let ev = s.wait_event_n("crash_detected", crashes + 1, T).await?;
    ensure!(matches!(ev.kind, EventKind::CrashDetected { deferred: false }), "{ev:?}");
    s.wait_event("session_recovered", T).await?;
    ensure!(s.prompts(&id).first().map(String::as_str) == Some("hello"), "same conversation");
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_is_resumed_and_input_typed_meanwhile_is_delivered_after() -> Result<()> {
    let (s, clock) = Supervised::standin_on_manual_clock(quick_limits()).await?;
    let id = started(&s).await?;
    turn(&s, &id, "before").await?;
    let pid = s.sup.supervision(&id).and_then(|s| s.pid).context("pid")?;
    // SAFETY: killing the agent we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let err = s.wait_event("error", T).await?;
    ensure!(matches!(err.kind, EventKind::Error { exit_code: 137, .. }), "{err:?}");
    // The retry waits for its delay (the clock stands still): typing now is kept.
    ensure!(s.sup.input(&id, b"after the crash").await?, "kept while recovering");
    ensure!(s.sup.input(&id, b"\r").await?);
    ensure!(s.sup.supervision(&id).is_some_and(|s| s.queued_inputs == 2 && s.pid.is_none()));
    s.advance(&clock, quick_limits().recovery_retry_delay).await;
    let rec = s.wait_event("session_recovered", T).await?;
    ensure!(rec.message() == Some("Session recovered automatically."));
    s.enter_typed(&clock, &id, "after the crash").await?;
    s.wait_screen(&id, "the queued prompt's reply", T, |r| r.iter().any(|l| l.contains("Echo: after the crash")))
        .await?;
    ensure!(s.prompts(&id) == ["before", "after the crash"], "{:?}", s.prompts(&id));
    ensure!(!alive(pid));
    ensure!(s.sup.supervision(&id).unwrap().pid != Some(pid));
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_crashes_in_a_row_mark_the_session_unhealthy() -> Result<()> {
    let s = Supervised::standin(quick_limits()).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    for n in 1..=2 {
        s.type_line(&id, "crash-die 7").await?;
        s.wait_event_n("session_recovered", n, T).await?;
        s.wait_prompt(&id, T).await?;
    }
    s.type_line(&id, "crash-die 7").await?;
    let ev = s.wait_event("session_unhealthy", T).await?;
    ensure!(ev.message().is_some_and(|m| m.contains("3 times in a row")), "{ev:?}");
    let sup = s.sup.supervision(&id).unwrap();
    ensure!(sup.state == SupervisionState::Unhealthy && sup.pid.is_none() && sup.last_exit_code == Some(7), "{sup:?}");
    ensure!(s.sup.input(&id, b"x").await.is_err(), "an unhealthy session takes no input until retried");
    // "Retry" brings it back.
    s.sup.restart(&id)?;
    s.wait_event("session_ready", T).await?;
    s.wait_state(&id, SupervisionState::Running, T).await?;
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_mode_never_takes_the_users_text_for_an_option() -> Result<()> {
    let s = Supervised::standin(Limits { recovery_retries: 0, ..quick_limits() }).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // An abnormal exit with no resume attempts left: one-shot mode (P5).
    s.type_line(&id, "exit 1").await?;
    let ev = s.wait_event("mode_change", T).await?;
    ensure!(matches!(&ev.kind, EventKind::ModeChange { mode, .. } if mode == "one_shot"), "{ev:?}");
    // Text that looks like an option is still the prompt (`claude -p -- <prompt>`).
    s.sup.input(&id, b"--version\r").await?;
    let rows = s.wait_text(&id, "One-shot reply to:", T).await?;
    ensure!(rows.iter().any(|r| r.contains("One-shot reply to: --version")), "{rows:?}");
    ensure!(!rows.iter().any(|r| r.contains("(Claude Code)")), "the CLI printed its version: {rows:?}");
    ensure!(s.prompts(&id) == ["hello", "--version"], "{:?}", s.prompts(&id));
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rss_over_the_limit_restarts_with_resume_and_the_conversation_continues() -> Result<()> {
    let limits = Limits { max_rss_mb: 60, rss_check: Duration::from_millis(200), ..quick_limits() };
    let s = Supervised::standin(limits).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // A stale shell snapshot of this process, and an old one of nobody's.
    let snaps = s.config_root.join("shell-snapshots");
    std::fs::create_dir_all(&snaps)?;
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis();
    let stale = snaps.join(format!("snapshot-bash-{now_ms}-abc.sh"));
    std::fs::write(&stale, "# snapshot")?;
    let old = snaps.join("snapshot-bash-1000000000000-old.sh");
    std::fs::write(&old, "# snapshot")?;
    s.type_line(&id, "grow 100").await?;
    let ev = s.wait_event("session_restarting", T).await?;
    ensure!(matches!(&ev.kind, EventKind::SessionRestarting { reason, .. } if reason == "memory_limit"), "{ev:?}");
    let ready = s.wait_event("session_ready", T).await?;
    ensure!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }), "{ready:?}");
    ensure!(ready.session_id == id);
    s.wait_prompt(&id, T).await?;
    turn(&s, &id, "after restart").await?;
    ensure!(s.prompts(&id) == ["hello", "after restart"], "one file continues: {:?}", s.prompts(&id));
    let sup = s.sup.supervision(&id).unwrap();
    ensure!(sup.restart_count == 1, "{sup:?}");
    // (Deleted by a blocking task of its own, ordered after nothing the test sees.)
    wait_path(&stale, false).await?;
    ensure!(old.exists(), "only snapshots of the dead process's lifetime");
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_session_is_archived_and_a_fresh_one_starts() -> Result<()> {
    let limits = Limits { max_rss_mb: 60, rss_check: Duration::from_millis(200), ..quick_limits() };
    let s = Supervised::standin(limits).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    std::fs::write(s.transcript(&id), "{not json at all\n")?;
    s.type_line(&id, "grow 100").await?;
    let ready = s.wait_event("session_ready", T).await?;
    ensure!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::New, .. }), "{ready:?}");
    ensure!(ready.message() == Some("Previous session could not be restored. Starting a new session."));
    let new = ready.session_id.clone();
    ensure!(new != id);
    ensure!(s.sup.current_id(&id) == new, "the old id leads to the new session");
    // Archived in the fleet database (SPEC W8).
    let db = Db::open_read_only(&s.data_dir.join(FILE_NAME))?;
    let archived = db.corrupted_sessions()?;
    ensure!(archived.len() == 1 && archived[0].session_id == id && archived[0].replaced_by == new, "{archived:?}");
    ensure!(archived[0].transcript_path.ends_with(&format!("{id}.jsonl")), "{archived:?}");
    s.wait_prompt(&new, T).await?;
    turn(&s, &new, "fresh start").await?;
    ensure!(s.prompts(&new) == ["fresh start"]);
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duration_limit_warns_then_ends_the_session_after_the_grace() -> Result<()> {
    let limits = Limits {
        max_duration: Duration::from_secs(100),
        duration_check: Duration::from_secs(10),
        turn_grace: Duration::from_secs(20),
        ..quick_limits()
    };
    let (s, clock) = Supervised::standin_on_manual_clock(limits).await?;
    let id = started(&s).await?;
    turn(&s, &id, "hello").await?;
    s.wait_sup(&id, "the idle timer after a turn", T, |s| s.idle_deadline.is_some()).await?;
    s.type_line(&id, "work 3600").await?;
    // The supervisor saw the turn start: a working session has no idle timer.
    s.wait_sup(&id, "the turn seen", T, |s| s.idle_deadline.is_none()).await?;
    s.advance(&clock, Duration::from_secs(90)).await;
    let w = s.wait_event("session_warning", T).await?;
    let EventKind::SessionWarning { reason, remaining_seconds, message } = &w.kind else { unreachable!() };
    ensure!(reason == "duration" && *remaining_seconds == Some(10), "{w:?}");
    ensure!(message == "Session will end in 10 seconds. Save your work.", "{message}");
    // At the limit, the turn in flight gets its grace: nothing is interrupted yet.
    s.advance(&clock, Duration::from_secs(10)).await;
    s.advance(&clock, Duration::from_secs(19)).await;
    let pid = s.sup.supervision(&id).and_then(|s| s.pid).context("pid")?;
    ensure!(s.count("session_terminated") == 0, "{:?}", s.types());
    ensure!(!std::fs::read_to_string(s.transcript(&id))?.contains("[Request interrupted by user]"));
    // The grace is over: EC-003, the turn is interrupted first…
    s.advance(&clock, Duration::from_secs(1)).await;
    let deadline = std::time::Instant::now() + T;
    while !std::fs::read_to_string(s.transcript(&id))?.contains("[Request interrupted by user]") {
        ensure!(std::time::Instant::now() < deadline, "the turn was never interrupted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ensure!(alive(pid) && s.count("session_terminated") == 0, "…while the process still runs");
    // …then the process is ended.
    s.advance(&clock, Duration::from_secs(1)).await;
    let t = s.wait_event("session_terminated", T).await?;
    let EventKind::SessionTerminated { reason, message, resume_session_id } = &t.kind else { unreachable!() };
    ensure!(reason == "duration_limit" && resume_session_id == &id, "{t:?}");
    ensure!(message == "Session ended. Your last response may be incomplete.", "EC-003: {message}");
    let sup = s.sup.supervision(&id).unwrap();
    ensure!(sup.terminated_reason == Some(TerminatedReason::DurationLimit) && sup.pid.is_none(), "{sup:?}");
    ensure!(!alive(pid));
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_suspended_and_the_next_message_resumes_it() -> Result<()> {
    let (s, clock) = Supervised::standin_on_manual_clock(quick_limits()).await?;
    let id = started(&s).await?;
    turn(&s, &id, "first").await?;
    s.wait_sup(&id, "the idle timer after a turn", T, |s| s.idle_deadline.is_some()).await?;
    let pid = s.sup.supervision(&id).and_then(|s| s.pid).context("pid")?;
    s.advance(&clock, quick_limits().idle_timeout).await;
    let ev = s.wait_event("session_suspended", T).await?;
    ensure!(ev.message().is_some_and(|m| m.starts_with("Session suspended after 10 minutes idle")), "{ev:?}");
    // Seed 003 §2.2: the mode change is announced before the process is stopped.
    let types = s.types();
    let mode = types.iter().position(|t| *t == "mode_change").context("a mode_change")?;
    ensure!(mode < types.iter().position(|t| *t == "session_suspended").unwrap(), "{types:?}");
    ensure!(!alive(pid), "suspension ends the process");
    let sup = s.sup.supervision(&id).unwrap();
    ensure!(sup.state == SupervisionState::Suspended && sup.pid.is_none(), "{sup:?}");
    ensure!(s.sup.input(&id, b"second").await?, "queued while suspended");
    s.sup.input(&id, b"\r").await?;
    let resumed = s.wait_event("session_resumed", T).await?;
    ensure!(resumed.message().is_some_and(|m| m.starts_with("Resuming session")), "{resumed:?}");
    s.enter_typed(&clock, &id, "second").await?;
    s.wait_screen(&id, "the reply", T, |r| r.iter().any(|l| l.contains("Echo: second"))).await?;
    ensure!(s.prompts(&id) == ["first", "second"]);
    s.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fourth_live_session_suspends_the_least_recently_used_idle_one() -> Result<()> {
    let s = Supervised::standin(Limits { max_live_sessions: 3, ..quick_limits() }).await?;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(started(&s).await?);
    }
    // Use them in the order 1, 0, 2: session 1 is the least recently used.
    for i in [1, 0, 2] {
        turn(&s, &ids[i], &format!("work for {i}")).await?;
    }
    let fourth = started(&s).await?;
    let ev = s.wait_event("session_suspended", T).await?;
    ensure!(ev.session_id == ids[1], "the LRU idle session, not {:?}", ev.session_id);
    ensure!(ev.message().is_some_and(|m| m.contains("at most 3 live sessions")), "{ev:?}");
    let live: Vec<_> = s.sup.sessions().into_iter().filter(|(_, sup)| sup.pid.is_some()).map(|(id, _)| id).collect();
    ensure!(live.len() == 3 && live.contains(&fourth) && !live.contains(&ids[1]), "{live:?}");
    let res = s.sup.resources().await;
    ensure!(res.rows.len() == 3, "{:?}", res.rows);
    ensure!(res.rows.iter().all(|r| r.rss_bytes > 0 && r.pid.is_some()), "{:?}", res.rows);
    ensure!(res.metrics.suspensions_total == 1);
    ensure!(res.metrics.prometheus().contains("csp_subprocess_rss_bytes{session_id="));
    s.shutdown().await;
    ensure!(s.sup.sessions().iter().all(|(_, sup)| sup.pid.is_none()) || s.sup.sessions().is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_child_even_one_that_ignores_sigterm() -> Result<()> {
    let s = Supervised::standin(Limits { kill_after: Duration::from_millis(500), ..quick_limits() }).await?;
    let a = started(&s).await?;
    let b = started(&s).await?;
    s.type_line(&b, "hang-hard").await?;
    s.wait_text(&b, "> hang-hard", T).await?;
    let pids: Vec<u32> = [&a, &b].iter().filter_map(|id| s.sup.supervision(id).and_then(|s| s.pid)).collect();
    ensure!(pids.len() == 2);
    // (A hang guard, not a speed test.)
    tokio::time::timeout(Duration::from_secs(60), s.sup.shutdown()).await.context("shutdown hung")?;
    ensure!(pids.iter().all(|&p| !alive(p)), "no child outlives the supervisor");
    Ok(())
}

/// SIGKILL of a `mimesis run`: the agent (which ignores the terminal hang-up) and its
/// grandchild survive; the next start kills both, but not a process with the very same
/// command line that Mimesis did not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_mimesis_is_killed_the_next_start_kills_its_orphans_only() -> Result<()> {
    let (dir, root, data, cwd) = temp_home(tempfile::tempdir()?)?;
    let env = |c: PtyCommand| {
        c.inherit_env()
            .env("CLAUDE_CONFIG_DIR", &root)
            .env("MIMESIS_DATA_DIR", &data)
            .env("TERM", "xterm-256color")
            .cwd(&cwd)
            .size(100, 30)
    };
    let mut run = Pty::spawn(env(PtyCommand::new(mimesis()?).args(["run", "--agent"]).arg(standin()?)))?;
    run.wait_for_text("? for shortcuts", T)?;
    // The agent is about to outlive the `mimesis run` this test kills: whatever happens
    // next, it and its grandchild die with the test.
    // The agent: the ledger in the fleet database names it, under its `mimesis run`.
    // (Written by the run's ledger thread, which may come after the agent's first screen.)
    let db_path = data.join(FILE_NAME);
    let deadline = std::time::Instant::now() + T;
    let recs = loop {
        let recs = ProcessLedger::load(&Db::open_read_only(&db_path)?)?;
        if !recs.is_empty() && !recs[0].1.is_empty() || std::time::Instant::now() > deadline {
            break recs;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    ensure!(recs.len() == 1 && recs[0].0.pid == run.pid(), "one owner, the run: {recs:?}");
    let agent = recs[0].1.first().context("the agent is recorded")?.clone();
    ensure!(!data.join("supervised").exists(), "no fallback files while the database works");
    let mut guard = ProcGuard::new();
    guard.watch(agent.pid);
    for line in ["ignore-hup", "spawn-child"] {
        run.send(line)?;
        std::thread::sleep(Duration::from_millis(100));
        run.send("\r")?;
    }
    let screen = run.wait_for_text("child=", T)?;
    let child: u32 = screen.find_row("child=").context("row")?.1.trim().trim_start_matches("child=").parse()?;
    ensure!(alive(agent.pid) && alive(child));
    // The run publishes its metrics.
    let metrics_dir = mimesis_wiring::metrics::dir(&data);
    let snapshot = metrics_dir.join(format!("{}-{}.json", recs[0].0.pid, recs[0].0.start_ticks));
    // (Written by the run's recorder thread, maybe in its next batch.)
    wait_path(&snapshot, true).await?;
    // An unrelated process with the very same command line, started by someone else.
    let twin = Pty::spawn(env(PtyCommand::new(&agent.cmdline[0]).args(&agent.cmdline[1..])))?;
    twin.wait_for_text("? for shortcuts", T)?;

    // SAFETY: SIGKILL to the `mimesis run` we started.
    unsafe { libc::kill(run.pid() as i32, libc::SIGKILL) };
    run.wait_exit(T)?;
    std::thread::sleep(Duration::from_millis(300));
    ensure!(alive(agent.pid), "the agent ignores SIGHUP and outlived mimesis");
    ensure!(alive(child), "so did its grandchild");
    let records = ProcessLedger::load(&Db::open_read_only(&db_path)?)?;
    ensure!(records.len() == 1 && records[0].1.iter().any(|r| r.pid == agent.pid), "left in the database: {records:?}");
    // A dead supervisor's last numbers are not shown, and its snapshot is cleaned.
    let out = std::process::Command::new(mimesis()?)
        .arg("metrics")
        .env("MIMESIS_DATA_DIR", &data)
        .env("CLAUDE_CONFIG_DIR", &root)
        .output()?;
    let text = String::from_utf8(out.stdout)?;
    ensure!(out.status.success() && !text.contains(agent.session_id.as_str()), "{text}");
    ensure!(!snapshot.exists(), "the stale snapshot is removed");

    let s = Supervised::start_in(
        dir,
        root.clone(),
        data.clone(),
        cwd.clone(),
        AgentCommand::new(standin()?),
        Some(quick_limits()),
        false,
        |_| {},
    )
    .await?;
    let report = s.sup.previous_runs();
    let killed: HashSet<u32> = report.killed.iter().copied().collect();
    ensure!(killed.contains(&agent.pid) && killed.contains(&child), "{report:?}");
    let deadline = std::time::Instant::now() + T;
    while (alive(agent.pid) || alive(child)) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ensure!(!alive(agent.pid) && !alive(child), "the orphans are gone");
    ensure!(alive(twin.pid()), "the same command line, not started by Mimesis, is untouched");
    ensure!(!killed.contains(&twin.pid()));
    let records = ProcessLedger::load(&Db::open_read_only(&db_path)?)?;
    ensure!(records.iter().all(|(o, _)| o.pid != run.pid()), "the dead run's records are forgotten: {records:?}");
    let m = s.sup.metrics();
    ensure!(m.orphans_killed_total >= 2 && m.zombie_processes_cleaned_total >= 2, "counted: {m:?}");
    s.shutdown().await;
    drop(twin);
    drop(guard);
    Ok(())
}

/// The settings view changes the limits while a session runs: the supervisor started
/// for the desktop (stored settings, following `settings_set`) applies them to the
/// running session's future checks. Time is a manual clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_set_reaches_a_running_session_on_the_injected_clock() -> Result<()> {
    use mimesis_core::clock::{Clock, Timestamp};
    let (dir, root, data, cwd) = temp_home(tempfile::Builder::new().prefix("mimesis-settings-").tempdir()?)?;
    let t0 = Timestamp::from_millis(1_800_000_000_000);
    let clock = Arc::new(ManualClock::new(t0));
    // Stored before the start: the supervisor begins with them.
    {
        let db = Db::open(&data.join(FILE_NAME), t0);
        let mut stored = mimesis_core::settings::Settings::default();
        stored.limits.max_live_sessions = 5;
        db.save_settings(&stored)?;
    }
    let c = clock.clone();
    let s =
        Supervised::start_in(dir, root, data, cwd, AgentCommand::new(standin()?), None, true, |o| o.clock = c).await?;
    let mimesis = s.mimesis.clone();
    ensure!(s.sup.limits().max_live_sessions == 5, "stored settings at start");
    ensure!(s.sup.limits().idle_timeout == Duration::from_secs(600));
    let id = started(&s).await?;
    turn(&s, &id, "first").await?;
    // The supervisor sees the turn end on its own schedule: wait for the idle timer.
    let first = Some(t0.plus(Duration::from_secs(600)));
    s.wait_sup(&id, "the idle timer after the turn", T, |x| x.idle_deadline == first).await?;

    // A shorter idle timeout: the running timer is shortened at once.
    let doc = serde_json::json!({"limits": {"maxLiveSessions": 5, "idleTimeoutSecs": 60}});
    ensure!(mimesis.settings_set(&doc).await.errors.is_empty());
    let shorter = Some(t0.plus(Duration::from_secs(60)));
    s.wait_sup(&id, "the shortened idle timer", T, |x| x.idle_deadline == shorter).await?;
    // (`advance` returns once every session handled the tick: a suspension would show.)
    s.advance(&clock, Duration::from_secs(59)).await;
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.state == SupervisionState::Running, "not before the new timeout: {sup:?}");
    ensure!(s.count("session_suspended") == 0, "not before the new timeout");
    clock.advance(Duration::from_secs(1));
    s.sup.tick().await;
    let ev = s.wait_event("session_suspended", T).await?;
    ensure!(ev.message() == Some("Session suspended after 60 seconds idle. Your next message resumes it."), "{ev:?}");

    // A duration limit already passed (60 s have run): the session ends now.
    let doc = serde_json::json!({"limits": {"maxLiveSessions": 5, "idleTimeoutSecs": 60, "maxDurationSecs": 30}});
    ensure!(mimesis.settings_set(&doc).await.errors.is_empty());
    let t = s.wait_event("session_terminated", T).await?;
    ensure!(t.message() == Some("Session ended (30-second limit reached)."), "{t:?}");
    ensure!(clock.now() == t0.plus(Duration::from_secs(60)), "no time passed: applied at once");
    s.shutdown().await;
    Ok(())
}

/// Issue 14: the settings view shows the value in force where the environment or this run's
/// agent overrides the stored one, and where it comes from; the stored value is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_in_effect_name_the_overrides_and_their_source() -> Result<()> {
    let env = mimesis_core::supervision::limits::LimitsEnv::from_pairs([(
        "MAX_SESSION_DURATION_SECONDS".to_owned(),
        "3600".to_owned(),
    )]);
    let s = Supervised::start(AgentCommand::new(standin()?), quick_limits(), false, |o| {
        o.supervise.as_mut().expect("supervised").env = env;
    })
    .await?;
    let e = s.mimesis.settings_in_effect();
    let duration = e.overrides.iter().find(|o| o.field == "limits.maxDurationSecs").context("the duration override")?;
    ensure!(duration.value == serde_json::json!(3600), "{e:?}");
    ensure!(duration.source == "the environment (MAX_SESSION_DURATION_SECONDS)", "{e:?}");
    let agent = e.overrides.iter().find(|o| o.field == "agent.command").context("the agent override")?;
    ensure!(agent.source.contains("MIMESIS_AGENT"), "{e:?}");
    ensure!(s.mimesis.settings().limits.max_duration != Duration::from_secs(3600), "the stored value is kept");
    s.shutdown().await;
    Ok(())
}

/// The fleet database's ledger (mimesis-fleetdb) under the supervisor's cleaning
/// (mimesis-supervise): an older run that recorded its processes in files is cleaned too.
#[test]
fn the_database_ledger_cleans_orphans_an_older_run_recorded_in_files() -> Result<()> {
    use mimesis_core::supervision::fleet;
    use mimesis_core::supervision::ledger::{Owner, ProcessRecord};
    use mimesis_fleetdb::ledger::{FileLedger, open};
    use mimesis_os::procs;
    let d = tempfile::tempdir()?;
    let dead_owner = Owner { pid: 999_998, start_ticks: 3, boot_id: procs::boot_id() };
    let mark = fleet::owner_mark(dead_owner.pid, dead_owner.start_ticks);
    let mut orphan = std::process::Command::new("sleep").arg("300").env(fleet::OWNER_ENV, mark).spawn()?;
    // Right after a spawn, /proc can still show the parent's command line, or none.
    let mine = procs::cmdline(std::process::id()).unwrap_or_default();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let cmdline = loop {
        let c = procs::cmdline(orphan.id()).unwrap_or_default();
        if !c.is_empty() && c != mine {
            break c;
        }
        ensure!(std::time::Instant::now() < deadline, "the child's command line never showed");
        std::thread::sleep(Duration::from_millis(5));
    };
    let record = ProcessRecord {
        session_id: SessionId::parse("s1")?,
        cwd: "/p".into(),
        pid: orphan.id(),
        start_ticks: procs::start_ticks(orphan.id()).unwrap_or(0),
        cmdline,
        boot_id: procs::boot_id(),
        started_at: mimesis_core::clock::Timestamp::from_millis(0),
    };
    FileLedger::new(d.path()).save(&dead_owner, &[record])?;
    let ledger = open(d.path());
    ensure!(d.path().join(FILE_NAME).exists(), "the fleet database holds the ledger");
    ensure!(ledger.load()?.len() == 1, "the file's records are read too");
    let report = mimesis_supervise::cleanup::clean_previous_runs(
        ledger.as_ref(),
        &mimesis_os::owner::me(),
        Duration::from_secs(2),
    )?;
    ensure!(report.killed == [orphan.id()], "{report:?}");
    ensure!(orphan.wait()?.code().is_none(), "killed by a signal");
    ensure!(ledger.load()?.is_empty());
    ensure!(std::fs::read_dir(d.path().join("supervised"))?.count() == 0, "the old file is gone");
    Ok(())
}
