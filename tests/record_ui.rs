//! Makes the UI's recordings (ui/tests/recordings/*.jsonl): the desktop app built with the
//! recorder (`--features record`, src-tauri/src/record.rs) is driven through WebDriver the
//! way the UI's tests then drive the replay (ui/src/lib/replay.ts), and what its page sent
//! and received is kept, with the fixture's folders read as a home folder.
//!
//! Not tests: each is `#[ignore]` and run by `scripts/record-ui`, which builds that app.
//! - `demo`: no Claude Code folder (the empty state), the demo started, stopped and started
//!   again; the page reloaded (load 2): every session's timeline, Settings, Resources, and
//!   New session with a folder that does not exist.
//! - `pty`: the stand-in agent (`MIMESIS_AGENT`) with a 30-second limit: New session with a
//!   missing folder then the project's, a turn, a permission approved from the window,
//!   Resources, its timeline, the warning and the end, Resume, the end
//!   again, Start New Session, a crash the supervisor recovers from, and Delete.
//! - `faults`: the stand-in agent: a crash while working (recovered after the turn), the
//!   memory limit (a restart with --resume), crashes in a row until unhealthy, and Retry.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use fantoccini::Locator;
use fantoccini::key::Key;
use mimesis_tests::supervised::standin;
use mimesis_tests::webdriver::{DesktopApp, app_binary, workspace_root};

/// The fixture's base folder reads as this home folder in a recording.
const HOME: &str = "/home/user";

struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    raw: PathBuf,
}

impl Fixture {
    fn new() -> Result<Fixture> {
        let dir = tempfile::Builder::new().prefix("mimesis-record-").tempdir()?;
        let base = dir.path().canonicalize()?;
        let raw = base.join("recording.jsonl");
        Ok(Fixture { _dir: dir, base, raw })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    fn env(&self, more: &[(&'static str, OsString)]) -> Vec<(&'static str, OsString)> {
        let mut env = vec![
            ("MIMESIS_RECORD", self.raw.clone().into_os_string()),
            ("MIMESIS_DATA_DIR", self.path(".local/share/mimesis").into_os_string()),
            ("CLAUDE_CONFIG_DIR", self.path(".claude").into_os_string()),
        ];
        env.extend(more.iter().cloned());
        env
    }

    fn args(&self) -> Vec<String> {
        vec!["--config-dir".into(), self.path(".claude").to_string_lossy().into_owned()]
    }

    /// Waits until the page's notes reached the file (they go in batches) and `what` is in it.
    async fn written(&self, app: &DesktopApp, what: &str) -> Result<()> {
        app.wait_for(&format!("{what} in the recording"), Duration::from_secs(30), || async {
            Ok(std::fs::read_to_string(&self.raw).unwrap_or_default().contains(what))
        })
        .await
        .map(|_| ())
    }

    /// Waits until all the page noted so far is in the file: it goes in batches, so a read
    /// made now (the Resources page's) is written after everything before it.
    async fn settle(&self, app: &DesktopApp) -> Result<()> {
        let before = recorded_count(self, "\"call\":\"resources\"");
        app.click("[data-testid=page-resources]").await?;
        app.wait_for("the last notes in the recording", Duration::from_secs(30), || async {
            Ok(recorded_count(self, "\"call\":\"resources\"") > before)
        })
        .await?;
        app.click("[data-testid=page-sessions]").await
    }

    /// A failed run's recording stays in the temp folder, to see how far it came.
    fn keep_on_failure(&self, result: &Result<()>, name: &str) {
        if result.is_err() {
            let kept = std::env::temp_dir().join(format!("record-ui-{name}-failed.jsonl"));
            if std::fs::copy(&self.raw, &kept).is_ok() {
                eprintln!("what was recorded: {}", kept.display());
            }
        }
    }

    /// Writes the recording as `ui/tests/recordings/<name>.jsonl`, the fixture's folders and
    /// the programs' paths taken out.
    fn save(&self, name: &str, more: &[(String, &str)]) -> Result<PathBuf> {
        let raw = std::fs::read_to_string(&self.raw)
            .context("nothing was recorded: was the app built with --features record?")?;
        let mut text = trim(&raw)?;
        let mut swaps: Vec<(String, &str)> = more.to_vec();
        let base = self.base.to_string_lossy().into_owned();
        // Claude Code's project folder names are the path with each other character a dash.
        let encoded: String = base.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        swaps.push((base, HOME));
        swaps.push((encoded, "-home-user"));
        if let Some(dir) = app_binary()?.parent() {
            swaps.push((dir.to_string_lossy().into_owned(), "/usr/local/bin"));
        }
        swaps.push((workspace_root().to_string_lossy().into_owned(), "/usr/local/src/mimesis"));
        for (from, to) in &swaps {
            text = text.replace(from.as_str(), to);
        }
        let out = std::env::var_os("MIMESIS_RECORD_OUT")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("ui/tests/recordings"));
        std::fs::create_dir_all(&out)?;
        let file = out.join(format!("{name}.jsonl"));
        std::fs::write(&file, text)?;
        eprintln!("recorded {} ({} lines)", file.display(), std::fs::read_to_string(&file)?.lines().count());
        Ok(file)
    }
}

/// Leaves out what a replay does not use: the terminal's traffic (a fake terminal stands in)
/// and a read repeated with the same answer (the pending-dialog poll).
fn trim(raw: &str) -> Result<String> {
    const TERMINAL: [&str; 5] = ["pty_attach", "pty_input", "pty_resize", "pty_ack", "pty_detach"];
    let mut last: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut out = String::new();
    for line in raw.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        if let Some(call) = v.get("call").and_then(|c| c.as_str()) {
            if TERMINAL.contains(&call) {
                continue;
            }
            let key = format!("{call} {}", v.get("args").unwrap_or(&serde_json::Value::Null));
            let answer = format!(
                "{} {}",
                v.get("ok").unwrap_or(&serde_json::Value::Null),
                v.get("err").unwrap_or(&serde_json::Value::Null)
            );
            if last.get(&key) == Some(&answer) && call == "pty_dialog" {
                continue;
            }
            last.insert(key, answer);
        } else if v.get("load").is_some() {
            last.clear();
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

async fn text(app: &DesktopApp, css: &str) -> Result<String> {
    let v = app.js(&format!("const e = document.querySelector(\"{css}\"); return e ? e.textContent : '';")).await?;
    Ok(v.as_str().unwrap_or_default().to_owned())
}

async fn wait_css(app: &DesktopApp, what: &str, css: &str) -> Result<()> {
    app.wait_for(what, Duration::from_secs(30), || async { Ok(app.count(css).await? > 0) }).await.map(|_| ())
}

async fn wait_text(app: &DesktopApp, what: &str, css: &str, needle: &str) -> Result<()> {
    app.wait_for(what, Duration::from_secs(30), || async { Ok(text(app, css).await?.contains(needle)) })
        .await
        .map(|_| ())
}

/// Clicks the button whose text starts with `label`, once it is enabled.
async fn click_button(app: &DesktopApp, label: &str) -> Result<()> {
    let find = format!(
        "return [...document.querySelectorAll('button')].find(b => b.textContent.trim().startsWith({label:?}) && !b.disabled) ?? null;"
    );
    app.wait_for(&format!("the {label} button"), Duration::from_secs(30), || async {
        Ok(!app.js(&find).await?.is_null())
    })
    .await?;
    app.js(&find.replace("?? null;", "?.click();")).await?;
    Ok(())
}

async fn roster_ids(app: &DesktopApp) -> Result<Vec<String>> {
    let v = app
        .js("return [...document.querySelectorAll('[data-testid=roster-row]')].map(r => r.dataset.sessionId);")
        .await?;
    Ok(serde_json::from_value(v)?)
}

/// Types `value` into the field `css`, replacing what it held.
async fn type_into(app: &DesktopApp, css: &str, value: &str) -> Result<()> {
    let input = app.client.find(Locator::Css(css)).await?;
    input.clear().await?;
    input.send_keys(value).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "makes a recording: run by scripts/record-ui"]
async fn demo() -> Result<()> {
    let fx = Fixture::new()?;
    let app = DesktopApp::launch(&fx.args(), &fx.env(&[])).await?;
    let result = demo_flow(&app, &fx).await;
    app.close().await?;
    fx.keep_on_failure(&result, "demo");
    result?;
    fx.save("demo", &[])?;
    Ok(())
}

async fn demo_flow(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    // Load 1: no sessions, then the demo, stopped and started again.
    wait_css(app, "the empty state", "[data-testid=empty-state]").await?;
    app.click("[data-testid=demo-button]").await?;
    wait_text(app, "the demo's sessions", "footer", "8 sessions").await?;
    click_button(app, "Stop demo").await?;
    wait_css(app, "the empty state again", "[data-testid=empty-state]").await?;
    app.click("[data-testid=demo-button]").await?;
    wait_text(app, "the demo's sessions", "footer", "8 sessions").await?;
    // Its sessions at work for a while: timelines with tools in them.
    app.wait_for("the demo's sessions at work", Duration::from_secs(120), || async {
        Ok(std::fs::read_to_string(&fx.raw).unwrap_or_default().matches("\"type\":\"updated\"").count() >= 30)
    })
    .await?;

    // Load 2: the demo running, seen by a page that starts now.
    app.js("location.reload();").await?;
    app.wait_for("the page loaded again", Duration::from_secs(30), || async {
        Ok(recorded_count(fx, "\"load\"") >= 2)
    })
    .await?;
    wait_css(app, "the roster after the reload", "[data-testid=roster-row]").await?;
    for id in roster_ids(app).await? {
        app.click(&format!("[data-testid=roster-row][data-session-id='{id}']")).await?;
        wait_css(
            app,
            "the session's timeline",
            &format!("[data-testid=timeline][data-session-id='{id}'] [data-testid=timeline-item]"),
        )
        .await?;
    }
    app.click("[data-testid=page-settings]").await?;
    wait_css(app, "the settings", "[data-testid=settings-view] [data-field]").await?;
    app.wait_for("the doctor's report", Duration::from_secs(30), || async {
        let t = text(app, "[data-testid=doctor-report]").await?;
        Ok(!t.is_empty() && !t.contains("Checking…"))
    })
    .await?;
    app.click("[data-testid=page-resources]").await?;
    wait_css(app, "the resources", "[data-testid=resource-view]").await?;
    app.click("[data-testid=page-sessions]").await?;
    wait_css(app, "the roster", "[data-testid=roster-row]").await?;

    app.click("[data-testid=new-session-button]").await?;
    wait_css(app, "the new-session dialog", "[data-testid=new-session-dialog]").await?;
    type_into(app, "[data-testid=new-session-cwd]", "/nope/x").await?;
    wait_css(app, "the folder's problem", "[data-testid=new-session-problem]").await?;
    fx.written(app, "\"/nope/x\"").await?;
    let input = app.client.find(Locator::Css("[data-testid=new-session-cwd]")).await?;
    input.send_keys(&char::from(Key::Escape).to_string()).await?;
    app.wait_for("the dialog closed", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=new-session-dialog]").await? == 0)
    })
    .await?;
    fx.settle(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "makes a recording: run by scripts/record-ui"]
async fn pty() -> Result<()> {
    // Warned halfway through a 30 s session, checked every second; the in-flight turn may
    // finish for 2 s; the agent gets 1 s between SIGTERM and SIGKILL.
    let limits = [
        ("MAX_SESSION_DURATION_SECONDS", "30"),
        ("DURATION_WARN_PERCENT", "50"),
        ("DURATION_CHECK_INTERVAL_SECONDS", "1"),
        ("TURN_GRACE_SECONDS", "2"),
        ("KILL_AFTER_SECONDS", "1"),
    ];
    let run = AgentRun::launch(&limits).await?;
    let result = pty_flow(&run.app, &run.fx, &run.project).await;
    run.finish(result, "pty").await
}

/// A fixture with a project folder, the app launched on it with the stand-in agent and
/// these limits (environment overrides).
struct AgentRun {
    fx: Fixture,
    project: PathBuf,
    agent: PathBuf,
    app: DesktopApp,
}

impl AgentRun {
    async fn launch(limits: &[(&'static str, &str)]) -> Result<AgentRun> {
        let fx = Fixture::new()?;
        let project = fx.path("src/shop");
        std::fs::create_dir_all(fx.path(".claude/projects"))?;
        std::fs::create_dir_all(&project)?;
        let agent = standin()?;
        let env: Vec<(&'static str, OsString)> = limits
            .iter()
            .map(|(k, v)| (*k, OsString::from(v)))
            .chain([("MIMESIS_AGENT", agent.clone().into_os_string())])
            .collect();
        let app = DesktopApp::launch(&fx.args(), &fx.env(&env)).await?;
        Ok(AgentRun { fx, project, agent, app })
    }

    /// Closes the app; keeps the fixture when the flow failed, else saves the recording
    /// (the agent's path written as the real CLI's).
    async fn finish(self, result: Result<()>, name: &str) -> Result<()> {
        self.app.close().await?;
        self.fx.keep_on_failure(&result, name);
        result?;
        self.fx.save(name, &[(self.agent.to_string_lossy().into_owned(), "/usr/local/bin/claude")])?;
        Ok(())
    }
}

async fn type_in_terminal(app: &DesktopApp, line: &str) -> Result<()> {
    let textarea = app.client.find(Locator::Css("[data-testid=terminal] textarea")).await?;
    textarea.send_keys(line).await?;
    textarea.send_keys(&char::from(Key::Enter).to_string()).await?;
    Ok(())
}

async fn open_session(app: &DesktopApp) -> Result<String> {
    let v = app.js("return document.querySelector('[data-testid=session-view]')?.dataset.sessionId ?? null;").await?;
    v.as_str().map(str::to_owned).context("no session is open")
}

async fn badge(app: &DesktopApp, state: &str) -> Result<()> {
    wait_css(
        app,
        &format!("the session {state}"),
        &format!("[data-testid=session-view] [data-testid=supervision-badge][data-state={state}]"),
    )
    .await
}

/// New session › `folder` › Start (a `missing` folder typed first); returns the session.
async fn start_in(app: &DesktopApp, folder: &Path, missing: Option<&str>) -> Result<String> {
    wait_css(app, "the window", "[data-testid=new-session-button]").await?;
    app.click("[data-testid=new-session-button]").await?;
    wait_css(app, "the new-session dialog", "[data-testid=new-session-dialog]").await?;
    if let Some(missing) = missing {
        type_into(app, "[data-testid=new-session-cwd]", missing).await?;
        wait_css(app, "the folder's problem", "[data-testid=new-session-problem]").await?;
    }
    type_into(app, "[data-testid=new-session-cwd]", &folder.to_string_lossy()).await?;
    wait_css(app, "Start enabled", "[data-testid=new-session-start]:not([disabled])").await?;
    app.click("[data-testid=new-session-start]").await?;
    wait_css(app, "the terminal", "[data-testid=terminal][data-attached=true]").await?;
    app.wait_for("the agent's prompt", Duration::from_secs(15), || async {
        Ok(app.terminal_text().await?.contains("? for shortcuts"))
    })
    .await?;
    open_session(app).await
}

/// Types `line` to the agent and waits for its echo.
async fn turn(app: &DesktopApp, line: &str) -> Result<()> {
    type_in_terminal(app, line).await?;
    let echo = format!("Echo: {line}");
    app.wait_for("the agent's reply", Duration::from_secs(15), || async {
        Ok(app.terminal_text().await?.contains(&echo))
    })
    .await
    .map(|_| ())
}

async fn pty_flow(app: &DesktopApp, fx: &Fixture, project: &Path) -> Result<()> {
    // New session: a folder that does not exist is refused before Start; then the project.
    let first = start_in(app, project, Some("/nope/x")).await?;
    turn(app, "add a health check endpoint").await?;
    // A permission dialog, approved from the window.
    type_in_terminal(app, "ask").await?;
    wait_css(app, "the approval bar", "[data-testid=approval-bar] [data-testid=approve-once]").await?;
    app.click("[data-testid=approve-once]").await?;
    app.wait_for("the approved tool's result", Duration::from_secs(10), || async {
        Ok(app.terminal_text().await?.contains("Done: said hi."))
    })
    .await?;
    app.wait_for("the approval bar gone", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=approval-bar]").await? == 0)
    })
    .await?;
    // Resources, with it running; then back to it.
    app.click("[data-testid=page-resources]").await?;
    wait_css(app, "its resources", "[data-testid=resource-view] [data-testid=resource-row]").await?;
    app.click("[data-testid=page-sessions]").await?;
    wait_css(app, "the session again", "[data-testid=session-view]").await?;
    // Its timeline, then the terminal again.
    app.click("[data-testid=pane-timeline]").await?;
    wait_css(app, "the session's timeline", "[data-testid=timeline] [data-testid=timeline-item]").await?;
    app.click("[data-testid=pane-terminal]").await?;
    wait_css(app, "the terminal again", "[data-testid=terminal][data-attached=true]").await?;

    // The duration limit: the warning, the end; Resume runs it again.
    wait_css(app, "the warning", "[data-testid=banner][data-kind=session_warning]").await?;
    wait_css(app, "the session-ended dialog", "[data-testid=terminated-dialog]").await?;
    badge(app, "terminated").await?;
    app.click("[data-testid=terminated-resume]").await?;
    badge(app, "running").await?;
    ensure!(open_session(app).await? == first, "Resume kept the session");

    // The end again; Start New Session starts a fresh one in the same folder.
    wait_css(app, "the session-ended dialog again", "[data-testid=terminated-dialog]").await?;
    app.click("[data-testid=terminated-new]").await?;
    app.wait_for("the new session", Duration::from_secs(15), || async {
        Ok(open_session(app).await.is_ok_and(|id| id != first))
    })
    .await?;
    badge(app, "running").await?;
    app.wait_for("the new agent's prompt", Duration::from_secs(15), || async {
        Ok(app.terminal_text().await?.contains("? for shortcuts"))
    })
    .await?;

    // A turn (its transcript keeps the session after Delete), then a crash the supervisor
    // recovers from by itself.
    turn(app, "now the readiness probe").await?;
    type_in_terminal(app, "crash-die 1").await?;
    fx.written(app, "\"session_recovered\"").await?;
    badge(app, "running").await?;

    // Delete: asked first, then the supervision is gone and the timeline stays.
    app.click("[data-testid=pty-delete]").await?;
    wait_css(app, "the delete dialog", "[data-testid=pty-delete-dialog]").await?;
    // WebKitWebDriver will not click inside the dialog as it fades in: the page's own click.
    wait_css(app, "the confirm button", "[data-testid=pty-delete-confirm]").await?;
    app.js("document.querySelector('[data-testid=pty-delete-confirm]').click();").await?;
    app.wait_for("the plain timeline", Duration::from_secs(15), || async {
        Ok(app.count("[data-testid=session-view]").await? == 0 && app.count("[data-testid=timeline]").await? == 1)
    })
    .await?;
    fx.written(app, "\"pty_delete\"").await?;
    fx.settle(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "makes a recording: run by scripts/record-ui"]
async fn faults() -> Result<()> {
    // Restarted above 60 MB, checked every second.
    let limits = [
        ("MAX_SESSION_RSS_MB", "60"),
        ("RSS_CHECK_INTERVAL_SECONDS", "1"),
        ("TURN_GRACE_SECONDS", "2"),
        ("KILL_AFTER_SECONDS", "1"),
    ];
    let run = AgentRun::launch(&limits).await?;
    let result = faults_flow(&run.app, &run.fx, &run.project).await;
    run.finish(result, "faults").await
}

fn recorded_count(fx: &Fixture, what: &str) -> usize {
    std::fs::read_to_string(&fx.raw).unwrap_or_default().matches(what).count()
}

async fn faults_flow(app: &DesktopApp, fx: &Fixture, project: &Path) -> Result<()> {
    start_in(app, project, None).await?;
    turn(app, "hello").await?;

    // A crash while working: recovery waits for the turn to end.
    type_in_terminal(app, "crash-during-work 3600").await?;
    wait_css(app, "the deferred crash banner", "[data-testid=banner][data-kind=crash_detected]").await?;
    type_in_terminal(app, "finish").await?;
    fx.written(app, "\"session_recovered\"").await?;
    badge(app, "running").await?;

    // Over the memory limit: restarted with --resume.
    type_in_terminal(app, "grow 100").await?;
    fx.written(app, "\"session_ready\"").await?;
    badge(app, "running").await?;

    // Crashes in a row until the supervisor gives up: unhealthy; Retry brings it back.
    for _ in 0..4 {
        let recovered = recorded_count(fx, "\"session_recovered\"");
        type_in_terminal(app, "crash-die 7").await?;
        app.wait_for("a recovery or the end of them", Duration::from_secs(30), || async {
            Ok(recorded_count(fx, "\"session_recovered\"") > recovered
                || recorded_count(fx, "\"session_unhealthy\"") > 0)
        })
        .await?;
        if recorded_count(fx, "\"session_unhealthy\"") > 0 {
            break;
        }
        badge(app, "running").await?;
    }
    wait_css(app, "the unhealthy banner", "[data-testid=banner][data-kind=session_unhealthy]").await?;
    badge(app, "unhealthy").await?;
    click_button(app, "Retry").await?;
    badge(app, "running").await?;
    fx.written(app, "\"session_ready\"").await?;
    fx.settle(app).await
}
