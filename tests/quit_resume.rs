//! Sessions a quit or a crash of Mimesis interrupted are offered for resume at the next
//! start (issue 37): the real supervisor, real PTYs, the stand-in agent and the fleet
//! database in a real data dir; the crash is a SIGKILL of a real `mimesis run`.
//!
//! Needs `cargo build -p mimesis-standin -p mimesis-cli` (done by `cargo test --workspace`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_core::SessionId;
use mimesis_core::supervision::interrupted::InterruptedBy;
use mimesis_core::supervision::ledger::ProcessLedger;
use mimesis_core::supervision::policy::StopSignal;
use mimesis_core::supervision::{AgentCommand, SupervisionState};
use mimesis_fleetdb::{Db, FILE_NAME};
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::supervised::{ProcGuard, Supervised, mimesis, quick_limits, standin};

const T: Duration = Duration::from_secs(20);

/// A session with one whole turn in its transcript (so `--resume` finds it).
async fn started(s: &Supervised) -> Result<SessionId> {
    let id = s.sup.create(&s.cwd, None).await?;
    s.wait_prompt(&id, T).await?;
    s.type_line(&id, "hello").await?;
    let deadline = std::time::Instant::now() + T;
    while !std::fs::read_to_string(s.transcript(&id)).unwrap_or_default().contains("Echo: hello") {
        ensure!(std::time::Instant::now() < deadline, "the turn never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.wait_prompt(&id, T).await?;
    Ok(id)
}

/// A new supervisor (a new start of Mimesis) over the same data dir.
async fn restart(dir: tempfile::TempDir, root: PathBuf, data: PathBuf, cwd: PathBuf) -> Result<Supervised> {
    Supervised::start_in(dir, root, data, cwd, AgentCommand::new(standin()?), Some(quick_limits()), false, |_| {}).await
}

/// The offer as the window reads it, once the recorder thread has written what it was
/// given (the marks are written in order with everything else it records).
async fn offered(s: &Supervised, n: usize) -> Result<Vec<SessionId>> {
    let deadline = std::time::Instant::now() + T;
    loop {
        let ids: Vec<SessionId> = s.sup.interrupted().await.into_iter().map(|i| i.session_id).collect();
        if ids.len() == n || std::time::Instant::now() > deadline {
            return Ok(ids);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_running_at_quit_is_offered_after_the_next_start_and_resumes() -> Result<()> {
    let s = Supervised::standin(quick_limits()).await?;
    let running = started(&s).await?;
    let stopped = started(&s).await?;
    s.sup.stop(&stopped)?;
    s.wait_state(&stopped, SupervisionState::Terminated, T).await?;
    ensure!(s.sup.interrupted().await.is_empty(), "nothing interrupted while Mimesis runs");
    // Quit (the app's Quit, "Stop them"): every session stops.
    s.shutdown().await;
    let marks = ProcessLedger::interrupted(&Db::open_read_only(&s.data_dir.join(FILE_NAME))?)?;
    ensure!(marks.len() == 1 && marks[0].session_id == running, "only the running one: {marks:?}");
    ensure!(marks[0].by == InterruptedBy::Quit && marks[0].cwd == s.cwd.to_string_lossy(), "{marks:?}");

    let Supervised { dir, config_root, data_dir, cwd, .. } = s;
    let s = restart(dir, config_root, data_dir, cwd).await?;
    ensure!(offered(&s, 1).await? == std::slice::from_ref(&running), "offered for resume, the stopped one not");
    // The window's Resume: the resume path every row's Resume takes (`--resume <id>`).
    let id = s.sup.create(&s.cwd, Some(running.clone())).await?;
    ensure!(id == running);
    s.wait_prompt(&id, T).await?;
    ensure!(offered(&s, 0).await?.is_empty(), "running again: no longer offered");
    let db = Db::open_read_only(&s.data_dir.join(FILE_NAME))?;
    let deadline = std::time::Instant::now() + T;
    while !ProcessLedger::interrupted(&db)?.is_empty() {
        ensure!(std::time::Instant::now() < deadline, "the mark is forgotten once resumed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A quit by signal (a logout, a shutdown) records them too, without asking.
    s.sup.shutdown_signalled(StopSignal::Term).await;
    let marks = ProcessLedger::interrupted(&db)?;
    ensure!(marks.len() == 1 && marks[0].by == InterruptedBy::Signal, "a signal records them too: {marks:?}");
    s.shutdown().await;
    Ok(())
}

/// SIGKILL of a `mimesis run` (a crash of Mimesis, or a reboot): the next start ends its
/// agent, and offers its session for resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_mimesis_is_killed_its_running_session_is_offered_and_resumes() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let base = dir.path().canonicalize()?;
    let (root, data, cwd) = (base.join(".claude"), base.join("data"), base.join("project"));
    std::fs::create_dir_all(&root)?;
    std::fs::create_dir_all(&cwd)?;
    let mut run = Pty::spawn(
        PtyCommand::new(mimesis()?)
            .args(["run", "--agent"])
            .arg(standin()?)
            .inherit_env()
            .env("CLAUDE_CONFIG_DIR", &root)
            .env("MIMESIS_DATA_DIR", &data)
            .env("TERM", "xterm-256color")
            .cwd(&cwd)
            .size(100, 30),
    )?;
    run.wait_for_text("? for shortcuts", T)?;
    run.send("hello")?;
    run.wait_for_text("❯ hello", T)?;
    run.send("\r")?;
    run.wait_for_text("Echo: hello", T)?;
    let db_path = data.join(FILE_NAME);
    let deadline = std::time::Instant::now() + T;
    let agent = loop {
        let recs = ProcessLedger::load(&Db::open_read_only(&db_path)?)?;
        if let Some(r) = recs.first().and_then(|(_, r)| r.first()) {
            break r.clone();
        }
        ensure!(std::time::Instant::now() < deadline, "the run never recorded its agent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut guard = ProcGuard::new();
    guard.watch(agent.pid);
    // SAFETY: SIGKILL to the `mimesis run` this test started.
    unsafe { libc::kill(run.pid() as i32, libc::SIGKILL) };
    run.wait_exit(T)?;

    let s = restart(dir, root, data, cwd).await?;
    let marks = s.sup.interrupted().await;
    ensure!(marks.len() == 1 && marks[0].session_id == agent.session_id, "{marks:?}");
    ensure!(marks[0].by == InterruptedBy::Crash, "{marks:?}");
    let id = s.sup.create(&s.cwd, Some(agent.session_id.clone())).await?;
    s.wait_prompt(&id, T).await?;
    ensure!(offered(&s, 0).await?.is_empty(), "resumed: no longer offered");
    s.shutdown().await;
    drop(guard);
    Ok(())
}

/// The mark is forgotten once the user dismisses the offer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissed_offer_is_forgotten() -> Result<()> {
    let s = Supervised::standin(quick_limits()).await?;
    let id = started(&s).await?;
    s.shutdown().await;
    // `mimesis ls --json` shows the mark on the session's row.
    let out = std::process::Command::new(mimesis()?)
        .args(["ls", "--json"])
        .env("MIMESIS_DATA_DIR", &s.data_dir)
        .env("CLAUDE_CONFIG_DIR", &s.config_root)
        .output()?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)?;
    let row = rows.iter().find(|r| r["sessionId"] == id.as_str()).context("the session's row")?;
    ensure!(row["interrupted"]["by"] == "quit" && row["interrupted"]["sessionId"] == id.as_str(), "{row}");
    ensure!(rows.iter().filter(|r| r.get("interrupted").is_some()).count() == 1, "only that row is marked");
    let Supervised { dir, config_root, data_dir, cwd, .. } = s;
    let s = restart(dir, config_root, data_dir, cwd).await?;
    ensure!(offered(&s, 1).await? == std::slice::from_ref(&id));
    s.sup.dismiss_interrupted(vec![id]);
    ensure!(offered(&s, 0).await?.is_empty(), "dismissed");
    s.shutdown().await;
    let marks = ProcessLedger::interrupted(&Db::open_read_only(&s.data_dir.join(FILE_NAME))?)?;
    ensure!(marks.is_empty(), "nothing ran at this quit: {marks:?}");
    Ok(())
}
