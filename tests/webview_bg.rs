//! Claude Code's background sessions through the real webview (issue 33 §1): the built
//! desktop app with the real Claude Code 2.1.332 (`MIMESIS_AGENT`) against the scripted
//! mock API, driven through WebDriver. From the UI: "New session" → "In the background"
//! with a prompt starts it under Claude Code's own service (`claude --bg`); its row has its
//! kind and job; its pane attaches in the embedded terminal through `claude attach` (the
//! session's own screen; measured to its first frame); the Timeline mode detaches and the
//! session goes on; Stop, Respawn and Remove act through Claude Code's verbs. When the app
//! quits no attach client of ours is left; the service is ended through its own verb by
//! [`Background`]'s drop.
//!
//! Run: `npm run build` in ui/, `cargo build -p mimesis-desktop`, then
//! `cargo test -p mimesis-tests --test webview_bg` (under Xvfb when there is no display).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_tests::bg::Background;
use mimesis_tests::claude::{CLAUDE_CODE_NEWEST, ClaudeHome, ensure_claude_version};
use mimesis_tests::mock_api::{MockApi, Reply};
use mimesis_tests::webdriver::{DesktopApp, workspace_root};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(60);

/// `claude attach` clients of this home still running (ours: none may outlive the app).
fn attach_clients(bg: &Background) -> Vec<(u32, String)> {
    bg.processes().into_iter().filter(|(_, cmd)| cmd.contains(" attach ")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_session_from_the_window() -> Result<()> {
    let claude = ensure_claude_version(CLAUDE_CODE_NEWEST)?;
    let api = MockApi::start()?;
    let home = ClaudeHome::for_version(&api.base_url(), CLAUDE_CODE_NEWEST)?;
    let data = tempfile::tempdir()?;
    let bg = Background::new(&home, &claude);
    // The app runs in the home's environment (Claude Code's offline isolation), with the
    // 2.1.332 CLI as its agent.
    let mut env: Vec<(&str, OsString)> =
        home.env().into_iter().map(|(k, v)| (&*Box::leak(k.into_boxed_str()), OsString::from(v))).collect();
    env.push(("MIMESIS_AGENT", claude.clone().into_os_string()));
    env.push(("MIMESIS_DATA_DIR", data.path().as_os_str().to_owned()));
    // The app says which verbs it ran and how each ended (its stderr is the test's: shown
    // with a failure).
    env.push(("MIMESIS_LOG", "warn,mimesis_desktop::background=debug".into()));
    let args = vec!["--config-dir".to_owned(), home.config_dir().to_string_lossy().into_owned()];
    api.push(Reply::text("Hello from the background.").with_delay(Duration::from_millis(300)));
    let app = DesktopApp::launch(&args, &env).await?;
    let result = flow(&app, &home, &bg).await;
    // What the page and the service showed, taken while the app is there: closing it ends
    // its process group, a `claude` verb it is still running with it.
    let result = match result {
        Ok(()) => Ok(()),
        Err(e) => Err(e.context(format!("{}\n{}", page_state(&app).await, bg.diagnostics()))),
    };
    let shot = workspace_root().join("target/e2e/background.png");
    let shot_result = if result.is_err() { app.failure_screenshot(&shot).await } else { Ok(()) };
    app.close().await?;
    let left = attach_clients(&bg);
    bg.shutdown()?;
    result?;
    shot_result?;
    ensure!(left.is_empty(), "attach clients outlived the app: {left:?}");
    Ok(())
}

/// The background pane's actions and the row's job tag as the page has them (for a failure).
async fn page_state(app: &DesktopApp) -> String {
    let script = "const q = s => document.querySelector(s); \
        const b = s => { const e = q(s); return e ? (e.disabled ? 'disabled' : 'enabled') : 'absent'; }; \
        const tag = q('[data-testid=roster-row][data-kind=background] [data-testid=job-tag]'); \
        const d = q('[role=dialog], [role=alertdialog]'); \
        return JSON.stringify({said: q('[data-testid=bg-said]')?.textContent ?? null, \
          stop: b('[data-testid=bg-stop]'), respawn: b('[data-testid=bg-respawn]'), \
          remove: b('[data-testid=bg-remove]'), jobTag: tag ? tag.outerHTML.slice(0, 400) : null, \
          mode: q('[data-testid^=bg-pane-][aria-checked=true]')?.dataset.testid ?? null, \
          terminal: !!q('[data-testid=background-view] .term'), \
          dialog: d ? d.outerHTML.slice(0, 400) : null});";
    match app.js(script).await {
        Ok(v) => format!("=== the page ===\n{}", v.as_str().unwrap_or_default()),
        Err(e) => format!("=== the page ===\n(not read: {e:#})"),
    }
}

/// Waits until the action button `css` can be pressed: a click on a disabled button does
/// nothing (the pane's actions are disabled while one runs, Stop while the session is not
/// live), and the test would then wait for an effect never asked for.
async fn wait_enabled(app: &DesktopApp, css: &str) -> Result<()> {
    let enabled = format!("{css}:not([disabled])");
    app.wait_for(&format!("{css} enabled"), T, || async { Ok(app.count(&enabled).await? == 1) }).await.map(drop)
}

/// Presses the pane's action `css` until the page took the click: the actions are disabled
/// while one runs, and its answer replaces the said-line. A click read at the button's place
/// while the pane was still being laid out landed beside it once (the button enabled, no
/// verb run, the app's log without it), and the test waited for a stop never asked for;
/// `click_until` clicks again only a button still there and enabled, as a person would.
async fn press(app: &DesktopApp, css: &str) -> Result<()> {
    wait_enabled(app, css).await?;
    let before = said(app).await?;
    let disabled = format!("{css}[disabled]");
    app.click_until(css, "taken", || async { Ok(app.count(&disabled).await? == 1 || said(app).await? != before) }).await
}

/// The pane's said-line, if it shows one.
async fn said(app: &DesktopApp) -> Result<Option<String>> {
    let v = app.js("return document.querySelector('[data-testid=bg-said]')?.textContent ?? null;").await?;
    Ok(v.as_str().map(str::to_owned))
}

async fn flow(app: &DesktopApp, home: &ClaudeHome, bg: &Background) -> Result<()> {
    // 1. New session → folder → In the background → prompt → Start.
    app.wait_for("the window", Duration::from_secs(30), || async {
        Ok(app.count("[data-testid=new-session-button]").await? == 1)
    })
    .await?;
    app.click("[data-testid=new-session-button]").await?;
    let input = app.find("[data-testid=new-session-cwd]").await?;
    input.clear().await?;
    input.send_keys(&home.project_dir().to_string_lossy()).await?;
    app.click("[data-testid=new-session-background]").await?;
    app.find("[data-testid=new-session-prompt]").await?.send_keys("say hello").await?;
    app.wait_for("Start offered", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=new-session-start]:not([disabled])").await? == 1)
    })
    .await?;
    let t0 = Instant::now();
    app.click("[data-testid=new-session-start]").await?;

    // 2. Its pane attaches in the embedded terminal: the session's own screen.
    app.wait_for("the background session's pane", T, || async {
        Ok(app.count("[data-testid=background-view]").await? == 1)
    })
    .await?;
    let id = app
        .js("return document.querySelector('[data-testid=background-view]').dataset.sessionId;")
        .await?
        .as_str()
        .context("the pane names no session")?
        .to_owned();
    let job = id[..8].to_owned();
    ensure!(bg.agent(&job, false)?.is_some(), "claude agents lists {job}");
    let first = app
        .wait_for("the session's screen through attach", T, || async {
            Ok(app.terminal_text().await?.contains("say hello"))
        })
        .await?;
    eprintln!(
        "[latency] 2.1.332 background in the window: Start → the session's screen in the embedded terminal in {} ms ({} ms after the pane)",
        t0.elapsed().as_millis(),
        first.as_millis()
    );
    ensure!(attach_clients(bg).len() == 1, "one attach client: {:?}", attach_clients(bg));
    app.wait_for("the reply on the attached screen", T, || async {
        Ok(app.terminal_text().await?.contains("Hello from the background."))
    })
    .await?;
    app.screenshot(&workspace_root().join("target/e2e/background-attached.png")).await?;

    // 3. Its row: kind background, its job's tag.
    let row = format!("[data-testid=roster-row][data-session-id='{id}']");
    app.wait_for("the row with its job", T, || async {
        Ok(app.count(&format!("{row}[data-kind=background] [data-testid=job-tag][data-job-state=done]")).await? == 1)
    })
    .await?;

    // 4. The timeline mode detaches: the client leaves, the session goes on. Pressed until
    // the page took the click (the mode chosen, the terminal gone): under nextest the click
    // was once lost, the attach client then waited for in vain (the page's state unknown).
    app.click_until("[data-testid=bg-pane-timeline]", "the timeline mode", || async {
        Ok(app.count("[data-testid=bg-pane-timeline][aria-checked=true]").await? == 1
            && app.count("[data-testid=background-view] .term").await? == 0)
    })
    .await?;
    app.wait_for("the attach client gone", T, || async { Ok(attach_clients(bg).is_empty()) }).await?;
    ensure!(bg.worker(&job).is_some(), "detached, the session goes on");

    // 5. Stop, Respawn, Remove, through Claude Code's verbs.
    press(app, "[data-testid=bg-stop]").await?;
    app.wait_for("stopped", T, || async {
        Ok(app.text_of("[data-testid=bg-said]").await? == format!("stopped {job}")
            && app.count(&format!("{row} [data-testid=job-tag].stopped")).await? == 1)
    })
    .await?;
    // (`claude stop` may answer before its worker has gone.)
    app.wait_for("stopped: no worker", T, || async { Ok(bg.worker(&job).is_none()) }).await?;
    press(app, "[data-testid=bg-respawn]").await?;
    app.wait_for("respawned and live", T, || async {
        Ok(app.text_of("[data-testid=bg-said]").await? == format!("restarted {job}")
            && app.count(&format!("{row} [data-testid=job-tag]:not(.stopped)")).await? == 1)
    })
    .await?;
    app.wait_for("respawned: a worker", T, || async { Ok(bg.worker(&job).is_some()) }).await?;
    wait_enabled(app, "[data-testid=bg-remove]").await?;
    app.click_until("[data-testid=bg-remove]", "asking to confirm", || async {
        Ok(app.count("[data-testid=bg-remove-confirm]").await? == 1)
    })
    .await?;
    app.click("[data-testid=bg-remove-confirm]").await?;
    app.wait_for("removed: no job on the row", T, || async {
        Ok(app.count(&format!("{row} [data-testid=job-tag]")).await? == 0)
    })
    .await?;
    app.wait_for("the job's folder gone", T, || async { Ok(bg.job_state(&job).is_none()) }).await?;
    let listed: Vec<Value> = bg.agents(true)?;
    ensure!(!listed.iter().any(|a| a["id"] == json!(job)), "claude agents --all no longer lists it: {listed:?}");
    Ok(())
}
