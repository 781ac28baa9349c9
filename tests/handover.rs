//! Quitting Mimesis by handing its supervised sessions to Claude Code's background service
//! (issue 37 §2), for real: the wiring the app uses (`Mimesis::start` with a supervisor),
//! the real 2.1.332 CLI supervised in a PTY against the scripted mock API, and its own
//! service (`claude --bg --resume <id>`). A session in the middle of a turn is handed over
//! only once its turn is over; after the "quit" it runs under the service (its worker in the
//! roster, `claude agents --json` lists it) and the next start of Mimesis shows it as a
//! background row, not as an interrupted session to resume.
//!
//! One test in its own binary: it gives the process the home's environment (Claude Code's
//! verbs inherit it), which no other test shares.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_core::SessionId;
use mimesis_core::job::SessionKind;
use mimesis_core::status::Status;
use mimesis_core::supervision::{AgentCommand, SupervisionState};
use mimesis_tests::bg::Background;
use mimesis_tests::claude::ClaudeHome;
use mimesis_tests::mock_api::{Gate, Reply};
use mimesis_wiring::{Follow, Mimesis, Options, SuperviseOptions};

const T: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(25);

fn options(home: &ClaudeHome, data: &std::path::Path, claude: &std::path::Path) -> Options {
    let mut supervise = SuperviseOptions::new(home.config_dir().to_owned());
    supervise.agent = Some(AgentCommand::new(claude));
    supervise.subreaper = false;
    supervise.size = Some((120, 40));
    let mut opts = Options::watching(vec![home.config_dir().to_owned()], data.to_owned());
    opts.follow = Follow::Everything;
    opts.supervise = Some(supervise);
    opts
}

/// Waits until `cond` holds (polling what the test reads; never a fixed sleep).
async fn until(what: &str, mut cond: impl AsyncFnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + T;
    while !cond().await {
        ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

/// The session's row in the live roster.
async fn row(m: &Mimesis, id: &SessionId) -> Option<mimesis_core::session::TrackedSession> {
    m.engine().snapshot().await.ok()?.sessions.into_iter().find(|r| &r.session_id == id)
}

/// Types a line into the supervised TUI at its prompt, then Enter.
async fn type_line(m: &Mimesis, id: &SessionId, text: &str) -> Result<()> {
    let sup = m.supervisor().await.context("the supervisor")?;
    until("the idle prompt", async || sup.screen(id).await.is_ok_and(|rows| rows.iter().any(|r| r.starts_with('❯'))))
        .await?;
    sup.input(id, text.as_bytes()).await?;
    until("the line in the input row", async || {
        sup.screen(id).await.is_ok_and(|rows| rows.iter().any(|r| r.starts_with('❯') && r.contains(text)))
    })
    .await?;
    sup.input(id, b"\r").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_session_handed_to_claudes_service_is_a_background_row_after_the_next_start() -> Result<()> {
    // SAFETY: the only test of this binary, before any thread of ours reads the environment.
    let (claude, api, home) = unsafe { mimesis_tests::bg::newest_in_process_env()? };
    let data = tempfile::tempdir()?;
    let bg = Background::new(&home, &claude);
    let mimesis = Mimesis::start(options(&home, data.path(), &claude)).await;
    let result = async {
        let sup = mimesis.supervisor().await.context("the supervisor")?;
        ensure!(mimesis.can_hand_over().await, "2.1.332 continues a session with --bg --resume");
        let id = sup.create(home.project_dir(), None).await?;
        api.push(Reply::text("First answer."));
        type_line(&mimesis, &id, "say hello").await?;
        // (Its reply on screen: the row is idle before the turn has begun too, and a line typed
        // during a turn is queued, so the second turn would follow the first unseen.)
        until("the first turn over", async || {
            sup.screen(&id).await.is_ok_and(|rows| rows.iter().any(|r| r.contains("First answer.")))
                && row(&mimesis, &id).await.is_some_and(|r| r.status != Status::Working)
        })
        .await?;
        // A second turn, held at the mock: the hand-over waits for its end.
        let gate = Gate::new();
        api.push(Reply::text("Second answer.").with_gate(&gate));
        type_line(&mimesis, &id, "say more").await?;
        until("the second turn working", async || {
            row(&mimesis, &id).await.is_some_and(|r| r.status == Status::Working)
        })
        .await?;
        let reports = std::sync::Mutex::new(Vec::new());
        let t0 = Instant::now();
        let handing = mimesis.hand_over(|p| reports.lock().unwrap().push(p.clone()));
        let check = async {
            until("the hand-over waiting", async || reports.lock().unwrap().first().is_some_and(|p| p.waiting == 1))
                .await?;
            ensure!(
                sup.supervision(&id).is_some_and(|s| s.state == SupervisionState::Running),
                "working: not stopped before its turn is over"
            );
            gate.open();
            anyhow::Ok(())
        };
        // Handed over at the turn's end, not after the roster's idle timeout (10 min).
        let (done, checked) = tokio::time::timeout(T, async { tokio::join!(handing, check) })
            .await
            .context("the hand-over never ended")?;
        checked?;
        eprintln!("[handover] {:?} in {} ms (turn held until the gate opened)", done, t0.elapsed().as_millis());
        ensure!(done.handed == 1 && done.failed == 0 && done.waiting == 0, "{done:?}");
        let job = &id.as_str()[..8];
        // The service runs it under its own id (its worker in the roster a moment after the
        // job names it).
        bg.wait("its worker, under its own id", T, |b| {
            b.worker(job).is_some_and(|w| w["sessionId"] == serde_json::json!(id.as_str()))
        })?;
        anyhow::Ok(id)
    }
    .await;
    // The quit.
    mimesis.shutdown().await;
    let id = match result {
        Ok(id) => id,
        Err(e) => {
            let e = e.context(bg.diagnostics());
            bg.shutdown()?;
            return Err(e);
        }
    };
    let result = async {
        bg.wait("claude agents listing it as a background session", T, |b| {
            b.agent(&id.as_str()[..8], false).ok().flatten().is_some_and(|a| a["kind"] == "background")
        })?;
        // The next start: a background row, nothing to resume.
        let again = Mimesis::start(options(&home, data.path(), &claude)).await;
        let seen = until("its background row", async || {
            row(&again, &id).await.is_some_and(|r| r.kind == Some(SessionKind::Background) && r.job.is_some())
        })
        .await;
        let offered = match again.supervisor().await {
            Some(sup) => sup.interrupted().await,
            None => Vec::new(),
        };
        again.shutdown().await;
        seen?;
        ensure!(offered.is_empty(), "handed over, not interrupted: {offered:?}");
        anyhow::Ok(())
    }
    .await;
    let result = result.map_err(|e| e.context(bg.diagnostics()));
    bg.shutdown()?;
    result
}
