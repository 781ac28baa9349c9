//! The supervision fault suite (issue 10's standing guard, issue 11 §3): a stand-in agent
//! that draws no Claude Code TUI at all (`--plain`: plain lines, a `> ` prompt, `[y/n]`)
//! and writes its transcript and live registry entry the way Claude Code does. Nothing on
//! its screen is recognisable, so supervision must read the agent through its registry
//! entry, hooks and transcript. Each fault ends with: no orphan and no zombie, the session
//! resumable, the events in the right order.
//!
//! Time: where a policy timer matters, the supervisor runs on a manual clock the test moves
//! (then the 30 s "nothing recognisable on screen" fallback can never be what brought a
//! process up); processes and PTYs are real.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_core::SessionId;
use mimesis_core::clock::{ManualClock, Timestamp};
use mimesis_core::supervision::ledger::ProcessLedger;
use mimesis_core::supervision::{AgentCommand, EventKind, Limits, ReadyStatus, SupervisionState};
use mimesis_fleetdb::{Db, FILE_NAME};
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::supervised::{ProcGuard, Supervised, mimesis, quick_limits, standin};

const T: Duration = Duration::from_secs(20);

fn plain_agent() -> Result<AgentCommand> {
    let mut a = AgentCommand::new(standin()?);
    a.args.push("--plain".into());
    Ok(a)
}

async fn plain(limits: Limits) -> Result<Supervised> {
    Supervised::start(plain_agent()?, limits, false, |_| {}).await
}

async fn plain_on_manual_clock(limits: Limits, env: &[(&str, &str)]) -> Result<(Supervised, Arc<ManualClock>)> {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000)));
    let c = clock.clone();
    let mut agent = plain_agent()?;
    agent.env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let s = Supervised::start(agent, limits, false, move |o| o.clock = c).await?;
    Ok((s, clock))
}

/// The plain prompt is the last line on screen.
fn at_prompt(rows: &[String]) -> bool {
    rows.iter().rev().find(|r| !r.trim().is_empty()).is_some_and(|r| r.starts_with('>'))
}

/// Waits until the engine has the registry entry of the session's current process: from
/// then on, the supervisor knows the process is up (the report goes straight to it).
async fn wait_registered(s: &Supervised, id: &SessionId) -> Result<u32> {
    let engine = s.mimesis.engine();
    let deadline = Instant::now() + T;
    loop {
        let pid = s.sup.supervision(id).and_then(|x| x.pid);
        let reports = engine.agent_reports().await?;
        if let Some(pid) = pid
            && reports.iter().any(|(i, r)| i == id && r.registry.is_some_and(|(p, _)| p == pid))
        {
            return Ok(pid);
        }
        ensure!(Instant::now() < deadline, "the registry entry of {pid:?} never reached the engine: {reports:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn started(s: &Supervised) -> Result<(SessionId, u32)> {
    let id = s.sup.create(&s.cwd, None).await?;
    s.wait_screen(&id, "the plain prompt", T, at_prompt).await?;
    let pid = wait_registered(s, &id).await?;
    Ok((id, pid))
}

/// A whole turn: typed, answered in the transcript, the prompt back on screen.
async fn turn(s: &Supervised, id: &SessionId, text: &str) -> Result<()> {
    s.type_line(id, text).await?;
    let reply = format!("Echo: {text}");
    let deadline = Instant::now() + T;
    while !std::fs::read_to_string(s.transcript(id)).unwrap_or_default().contains(&reply) {
        ensure!(Instant::now() < deadline, "the turn {text:?} never finished; events {:?}", s.types());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.wait_screen(id, "the reply and the prompt", T, |rows| rows.iter().any(|r| r.contains(&reply)) && at_prompt(rows))
        .await?;
    Ok(())
}

/// `expected` appear in this order among the events (others may come between).
fn in_order(s: &Supervised, expected: &[&str]) -> Result<()> {
    let types = s.types();
    let mut it = types.iter();
    for e in expected {
        ensure!(it.any(|t| t == e), "events not in the order {expected:?}: {types:?}");
    }
    Ok(())
}

/// A process of ours is gone: not running and not a zombie we should have reaped (one
/// left to init after its parent was SIGKILLed is init's to reap).
fn gone(pid: u32) -> bool {
    match mimesis_os::procs::all().into_iter().find(|p| p.pid == pid) {
        None => true,
        Some(p) => p.state == 'Z' && p.ppid != std::process::id(),
    }
}

async fn wait_gone(pids: &[u32]) -> Result<()> {
    let deadline = Instant::now() + T;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| !gone(*p)).collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let rows: Vec<_> = mimesis_os::procs::all().into_iter().filter(|p| left.contains(&p.pid)).collect();
            bail!("left behind (orphan or zombie): {rows:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Moves the manual clock by `step` until `cond` holds (each step lets every timer run).
async fn advance_until(
    s: &Supervised,
    clock: &ManualClock,
    step: Duration,
    what: &str,
    cond: impl Fn(&Supervised) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + T;
    while !cond(s) {
        ensure!(Instant::now() < deadline, "never: {what}; events {:?}", s.types());
        s.advance(clock, step).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_a_crash_while_idle_in_the_first_seconds_is_recovered() -> Result<()> {
    // The clock stands still: nothing but the agent's own records can bring it up.
    let (s, clock) = plain_on_manual_clock(quick_limits(), &[]).await?;
    let (id, first) = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // Dies at once, with no crash text on screen: only its exit says what happened.
    s.type_line(&id, "exit 7").await?;
    let err = s.wait_event("error", T).await?;
    ensure!(matches!(err.kind, EventKind::Error { exit_code: 7, .. }), "{err:?}");
    ensure!(s.count("session_terminated") == 0, "a crash, not a failed start: {:?}", s.types());
    s.advance(&clock, quick_limits().recovery_retry_delay).await;
    s.wait_event("session_recovered", T).await?;
    let second = wait_registered(&s, &id).await?;
    ensure!(second != first);
    turn(&s, &id, "after the crash").await?;
    ensure!(s.prompts(&id) == ["hello", "after the crash"], "one conversation: {:?}", s.prompts(&id));
    in_order(&s, &["session_started", "error", "session_recovered"])?;
    s.shutdown().await;
    wait_gone(&[first, second]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_a_crash_mid_turn_is_recovered_when_the_turn_ends_and_a_kill_mid_turn_at_once() -> Result<()> {
    let s = plain(quick_limits()).await?;
    let (id, first) = started(&s).await?;
    // A crash dump in a turn that only ends when told: recovery waits for the end, which
    // only the registry (and the transcript) can tell here. (The dump comes once the
    // supervisor saw the turn start: it hears the registry on its own schedule.)
    turn(&s, &id, "hello").await?;
    s.wait_sup(&id, "the idle timer after a turn", T, |x| x.idle_deadline.is_some()).await?;
    s.type_line(&id, "work 3600").await?;
    s.wait_sup(&id, "the turn seen", T, |x| x.idle_deadline.is_none()).await?;
    s.type_line(&id, "dump").await?;
    let ev = s.wait_event("crash_detected", T).await?;
    ensure!(matches!(ev.kind, EventKind::CrashDetected { deferred: true }), "{ev:?}");
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(sup.pending_crash_recovery && sup.state == SupervisionState::Running, "{sup:?}");
    ensure!(s.count("session_recovered") == 0, "the working agent is not interrupted");
    s.type_line(&id, "finish").await?;
    s.wait_event("session_recovered", T).await?;
    let text = std::fs::read_to_string(s.transcript(&id))?;
    ensure!(text.contains("Echo: work 3600"), "the turn completed before the restart");
    let second = wait_registered(&s, &id).await?;
    // SIGKILL in the middle of the next turn: recovered at once (after the retry delay).
    s.type_line(&id, "work 3600").await?;
    s.wait_screen(&id, "working", T, |rows| rows.iter().any(|r| r.contains("(working)"))).await?;
    // SAFETY: killing the agent we started.
    unsafe { libc::kill(second as i32, libc::SIGKILL) };
    s.wait_event_n("session_recovered", 2, T).await?;
    let third = wait_registered(&s, &id).await?;
    turn(&s, &id, "after the kill").await?;
    ensure!(
        s.prompts(&id) == ["hello", "work 3600", "work 3600", "after the kill"],
        "one conversation: {:?}",
        s.prompts(&id)
    );
    in_order(&s, &["crash_detected", "session_recovered", "error", "session_recovered"])?;
    s.shutdown().await;
    wait_gone(&[first, second, third]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_a_memory_limit_below_the_agents_baseline_restarts_once_then_holds() -> Result<()> {
    let limits = Limits { max_rss_mb: 60, rss_check: Duration::from_secs(1), ..quick_limits() };
    let (s, clock) = plain_on_manual_clock(limits, &[("MIMESIS_STANDIN_BASELINE_MB", "90")]).await?;
    let (id, first) = started(&s).await?;
    turn(&s, &id, "hello").await?;
    let step = Duration::from_secs(1);
    advance_until(&s, &clock, step, "a memory restart", |s| s.count("session_ready") >= 1).await?;
    let ready = s.wait_event("session_ready", T).await?;
    ensure!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }), "{ready:?}");
    let second = wait_registered(&s, &id).await?;
    // Over the limit again before doing any work: the limit is below what the agent needs
    // at rest. No storm: the restarts stop, the session keeps running, and says why.
    advance_until(&s, &clock, step, "the restarts held", |s| s.count("session_warning") >= 1).await?;
    for _ in 0..20 {
        s.advance(&clock, Duration::from_secs(30)).await;
    }
    // The barrier: a whole turn after those ten minutes, so every check in them was made.
    turn(&s, &id, "still here").await?;
    ensure!(s.count("session_restarting") == 1, "one restart, no storm: {:?}", s.types());
    let sup = s.sup.supervision(&id).context("supervised")?;
    ensure!(
        sup.restarts_held.is_some() && sup.state == SupervisionState::Running && sup.pid == Some(second),
        "{sup:?}"
    );
    let warning = s.events().into_iter().find(|e| e.type_name() == "session_warning").context("warning")?;
    ensure!(warning.message().is_some_and(|m| m.contains("Settings")), "says what to do: {warning:?}");
    in_order(&s, &["session_restarting", "session_ready", "session_warning"])?;
    s.shutdown().await;
    wait_gone(&[first, second]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_a_resume_refused_again_and_again_ends_in_one_shot_mode_and_stays_resumable() -> Result<()> {
    let limits = quick_limits();
    let (s, clock) = plain_on_manual_clock(limits.clone(), &[]).await?;
    let (id, first) = started(&s).await?;
    turn(&s, &id, "hello").await?;
    // Every automatic resume fails: exit 2 before it shows anything.
    s.type_line(&id, &format!("fail-resumes {}", limits.recovery_retries)).await?;
    s.wait_text(&id, "resumes will fail", T).await?;
    s.type_line(&id, "exit 7").await?;
    s.wait_event("error", T).await?;
    advance_until(&s, &clock, limits.recovery_retry_delay, "one-shot mode", |s| s.count("mode_change") >= 1).await?;
    let ev = s.wait_event("mode_change", T).await?;
    ensure!(matches!(&ev.kind, EventKind::ModeChange { mode, .. } if mode == "one_shot"), "{ev:?}");
    // One-shot mode still answers (`-p --resume`).
    s.type_line(&id, "one shot").await?;
    s.wait_text(&id, "One-shot reply to: one shot", T).await?;
    // "Retry" from the user: resumed, the conversation goes on.
    s.sup.restart(&id)?;
    s.wait_event("session_ready", T).await?;
    s.wait_state(&id, SupervisionState::Running, T).await?;
    let second = wait_registered(&s, &id).await?;
    turn(&s, &id, "back").await?;
    let prompts = s.prompts(&id);
    ensure!(
        prompts.first().map(String::as_str) == Some("hello") && prompts.last().map(String::as_str) == Some("back"),
        "{prompts:?}"
    );
    in_order(&s, &["error", "recovery_failed", "mode_change", "session_ready"])?;
    s.shutdown().await;
    wait_gone(&[first, second]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_sigkill_of_the_supervisor_leaves_nothing_and_the_session_resumes() -> Result<()> {
    let (dir, root, data, cwd) = super::temp_home(tempfile::tempdir()?)?;
    let events = data.with_file_name("events.jsonl");
    let cmd = PtyCommand::new(mimesis()?)
        .args(["run", "--agent"])
        .arg(standin()?)
        .arg("--events-json")
        .arg(&events)
        .args(["--", "--plain"])
        .inherit_env()
        .env("CLAUDE_CONFIG_DIR", &root)
        .env("MIMESIS_DATA_DIR", &data)
        .env("TERM", "xterm-256color")
        .cwd(&cwd)
        .size(100, 30);
    let mut run = Pty::spawn(cmd)?;
    run.wait_for_text("stand-in agent", T)?;
    // The ledger is written on its own thread: the agent's screen can come first.
    let deadline = Instant::now() + T;
    let agent = loop {
        let recs = ProcessLedger::load(&Db::open_read_only(&data.join(FILE_NAME))?)?;
        if let Some(agent) = recs.first().and_then(|r| r.1.first()) {
            break agent.clone();
        }
        ensure!(Instant::now() < deadline, "the agent is not recorded after {T:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut guard = ProcGuard::new();
    guard.watch(agent.pid);
    run.send("hello")?;
    std::thread::sleep(Duration::from_millis(100));
    run.send("\r")?;
    run.wait_for_text("Echo: hello", T)?;
    for line in ["ignore-hup", "spawn-child"] {
        run.send(line)?;
        std::thread::sleep(Duration::from_millis(100));
        run.send("\r")?;
    }
    let screen = run.wait_for_text("child=", T)?;
    let child: u32 = screen.find_row("child=").context("row")?.1.trim().trim_start_matches("child=").parse()?;
    // SAFETY: SIGKILL to the `mimesis run` we started.
    unsafe { libc::kill(run.pid() as i32, libc::SIGKILL) };
    run.wait_exit(T)?;
    ensure!(!gone(agent.pid) && !gone(child), "the agent ignores SIGHUP and outlived its supervisor");

    // The next start stops what the dead one left, and the session resumes.
    let s = Supervised::start_in(dir, root, data, cwd, plain_agent()?, Some(quick_limits()), false, |_| {}).await?;
    let killed = &s.sup.previous_runs().killed;
    ensure!(killed.contains(&agent.pid) && killed.contains(&child), "{killed:?}");
    wait_gone(&[agent.pid, child]).await?;
    let id = s.sup.create(&s.cwd, Some(agent.session_id.clone())).await?;
    ensure!(id == agent.session_id);
    s.wait_screen(&id, "the plain prompt", T, at_prompt).await?;
    let pid = wait_registered(&s, &id).await?;
    turn(&s, &id, "after the kill").await?;
    ensure!(s.prompts(&id) == ["hello", "after the kill"], "{:?}", s.prompts(&id));
    // What the killed run wrote ends where it was killed: started, nothing half-written.
    let text = std::fs::read_to_string(&events)?;
    let types: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).map(|v| v["type"].as_str().unwrap_or("").to_owned()))
        .collect::<Result<_, _>>()?;
    ensure!(types.first().map(String::as_str) == Some("session_started"), "{types:?}");
    s.shutdown().await;
    wait_gone(&[pid]).await?;
    drop(guard);
    Ok(())
}
