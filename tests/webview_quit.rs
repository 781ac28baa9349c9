//! Quitting with a supervised session running, through the real webview (issue 37 §2): the
//! built desktop app with the stand-in agent (`MIMESIS_AGENT`), driven through WebDriver on
//! a private display and bus, where no tray host runs, so closing the window quits (as
//! src-tauri/src/window.rs says). The window's close button (a `WM_DELETE_WINDOW`, as a
//! window manager sends it) asks first: the dialog says a supervised session runs; Cancel
//! keeps the app and the session (it still answers); "Stop it and quit" ends the agent
//! and the app, leaving no process of ours; the next start offers to resume the session
//! ("Resume the session that was running"), and Resume runs it again.
//!
//! Run: `npm run build` in ui/, `cargo build -p mimesis-desktop -p mimesis-standin`, then
//! `cargo test -p mimesis-tests --test e2e webview_quit::` (under Xvfb when there is no display).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fantoccini::key::Key;
use mimesis_tests::supervised::standin;
use mimesis_tests::webdriver::{AppFolders as Fixture, DesktopApp, SessionOptions, processes_in, workspace_root};

const T: Duration = Duration::from_secs(20);

fn fixture() -> Result<Fixture> {
    Fixture::new("mimesis-webview-quit-")
}

/// The app on a private display and bus (no tray host there: closing the window quits).
async fn launch(fx: &Fixture) -> Result<DesktopApp> {
    let env: Vec<(&str, OsString)> = vec![
        ("MIMESIS_DATA_DIR", fx.data.clone().into_os_string()),
        ("CLAUDE_CONFIG_DIR", fx.config.clone().into_os_string()),
        ("MIMESIS_AGENT", standin()?.into_os_string()),
    ];
    let args = vec!["--config-dir".to_owned(), fx.config.to_string_lossy().into_owned()];
    DesktopApp::launch_in_session(&args, &env, SessionOptions::default()).await
}

/// `pid` runs (not gone, not a zombie waiting for its parent).
fn alive(pid: u32) -> bool {
    mimesis_os::procs::stat(pid).is_some_and(|s| s.state != 'Z')
}

async fn until(what: &str, timeout: Duration, cond: impl Fn() -> bool) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Types `line` into the terminal and waits for the stand-in's echo of it.
async fn say(app: &DesktopApp, line: &str) -> Result<()> {
    let textarea = app.find("[data-testid=terminal] textarea").await?;
    textarea.send_keys(line).await?;
    textarea.send_keys(&char::from(Key::Enter).to_string()).await?;
    let echo = format!("Echo: {line}");
    app.wait_for(&format!("the agent's answer to {line:?}"), T, || async {
        Ok(app.terminal_text().await?.contains(&echo))
    })
    .await
    .map(|_| ())
}

/// Clicks the window's close button (as far as the app can tell) and waits for the dialog.
async fn close_window(app: &DesktopApp) -> Result<()> {
    let session = app.session.as_ref().context("the app runs on a display of its own")?;
    let pid = *app.app_processes().first().context("the app's process")?;
    let asked = mimesis_tests::x11::ask_to_close(session, pid)?;
    ensure!(asked == 1, "one window of the app to close, found {asked}");
    app.wait_for("the quit dialog", T, || async { Ok(app.count("[data-testid=quit-dialog]").await? == 1) }).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_with_a_supervised_session_asks_and_the_next_start_offers_resume() -> Result<()> {
    let fx = fixture()?;
    let app = launch(&fx).await?;
    let first = quit_flow(&app, &fx).await;
    let shot = workspace_root().join("target/e2e/quit.png");
    if first.is_err() && app.app_processes().first().is_some_and(|p| alive(*p)) {
        app.failure_screenshot(&shot).await.ok();
    }
    app.close().await?;
    let id = first?;
    ensure!(processes_in(&fx.project).is_empty(), "agents outlived Mimesis: {:?}", processes_in(&fx.project));

    // The next start offers to resume it; Resume runs it again.
    let app = launch(&fx).await?;
    let second = resume_flow(&app, &fx, &id).await;
    if second.is_err() {
        app.failure_screenshot(&shot).await.ok();
    }
    app.close().await?;
    let left = until("no agent left after the second run", T, || processes_in(&fx.project).is_empty()).await;
    second?;
    left
}

/// Returns the session's id once the app quit.
async fn quit_flow(app: &DesktopApp, fx: &Fixture) -> Result<String> {
    // A supervised session with one whole turn (so it can be resumed).
    let id = app.start_session(&fx.project).await?;
    app.wait_for("the agent's prompt", T, || async { Ok(app.terminal_text().await?.contains("? for shortcuts")) })
        .await?;
    say(app, "hello").await?;
    let agents: Vec<u32> = processes_in(&fx.project).into_iter().map(|(p, _)| p).collect();
    ensure!(!agents.is_empty(), "the agent runs in {}", fx.project.display());
    let app_pid = *app.app_processes().first().context("the app's process")?;

    // The close button asks first, and says what a quit does to the session.
    close_window(app).await?;
    let said = app.text_of("[data-testid=quit-dialog]").await?;
    ensure!(said.contains("A supervised session is running"), "the dialog names the running session: {said}");
    ensure!(said.contains("Stop it and quit") && said.contains("Cancel"), "its choices: {said}");

    // Cancel: the app and the session go on (it still answers).
    app.click("[data-testid=quit-cancel]").await?;
    app.wait_for("the dialog closed", T, || async { Ok(app.count("[data-testid=quit-dialog]").await? == 0) }).await?;
    ensure!(alive(app_pid), "the app runs after Cancel");
    ensure!(agents.iter().all(|p| alive(*p)), "the agent runs after Cancel");
    say(app, "still here").await?;

    // Asked again, "Stop it and quit": the agent and the app end.
    close_window(app).await?;
    // (The app may end before the click's answer comes back.)
    let _ = app.click("[data-testid=quit-stop]").await;
    until("the app to quit", T, || !alive(app_pid)).await?;
    until("the agent to end with the app", T, || agents.iter().all(|p| !alive(*p))).await?;
    until("no process of the app left", T, || app.app_processes().iter().all(|p| !alive(*p))).await?;
    Ok(id)
}

async fn resume_flow(app: &DesktopApp, fx: &Fixture, id: &str) -> Result<()> {
    app.wait_for("the offer to resume", T, || async { Ok(app.count("[data-testid=resume-banner]").await? == 1) })
        .await?;
    let all = app.text_of("[data-testid=resume-all]").await?;
    ensure!(all == "Resume the session that was running", "the banner's button: {all:?}");
    // One session: named in the sentence, one button (no second "Resume <it>").
    let what = app.text_of("[data-testid=resume-what]").await?;
    ensure!(what.starts_with("Mimesis ended while “") && what.ends_with("” was running."), "{what:?}");
    ensure!(app.count("[data-testid=resume-one]").await? == 0, "one button for one session");
    app.click("[data-testid=resume-all]").await?;
    app.wait_for("the offer gone once resumed", T, || async {
        Ok(app.count("[data-testid=resume-banner]").await? == 0)
    })
    .await?;
    until("the agent resuming the session", T, || {
        processes_in(&fx.project).iter().any(|(_, cmd)| cmd.contains("--resume") && cmd.contains(id))
    })
    .await
}
