//! The desktop shell of issue 4, end to end through the real webview (WebDriver), on a
//! fixture config dir and a temporary data dir:
//!
//! 1. With session A selected, a `/clear` succession (a new transcript B born of `/clear` in
//!    the same folder, written live, with the hook events Claude Code would record) moves the
//!    selection to B without a click; the roster shows one row for the chain, the
//!    "show superseded" toggle reveals A, and B's timeline reads across the boundary.
//! 2. The settings view loads the stored settings; a value only the engine refuses shows the
//!    engine's field error and saves nothing; a good value is saved. Installing the hooks
//!    from the UI writes the fixture's settings.json (keeping the foreign hook), uninstalling
//!    restores it. The window's size is kept across runs.
//! 3. On a private session bus with a real notification server (dunst): a session that ends
//!    its turn raises one desktop notification (its text escaped), the tray lists the sessions
//!    that need the user (untrusted text cleaned), clicking the notification opens the
//!    session, and a second launch on the same data dir leaves at once while one on another
//!    data dir runs (and quits cleanly on SIGTERM).
//!
//! Screenshots go to `target/e2e/`. Run: `cargo build -p mimesis-desktop -p mimesis-cli &&
//! cargo test -p mimesis-tests --test e2e webview_chains::`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_core::hook_event::TerminalContext;
use mimesis_core::{Clock, SystemClock, Timestamp};
use mimesis_hooks as hooks;
use mimesis_tests::supervised::{hook_output, permission_hook};
use mimesis_tests::webdriver::{DesktopApp, SessionOptions, app_binary, with_descendants, workspace_root};
use serde_json::{Value, json};

/// One app at a time: each is a full WebKit process tree, and the machine has two cores.
/// (Under cargo-nextest, a process per test, the test group `one-app` does it:
/// .config/nextest.toml.)
static ONE_APP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const WAIT: Duration = Duration::from_secs(20);

fn ago(secs: i64) -> Timestamp {
    Timestamp::from_millis(SystemClock.now().millis() - secs * 1000)
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A config root with one project folder for a real working folder, and a data dir.
struct Fixture {
    dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    cwd: PathBuf,
}

impl Fixture {
    fn new() -> Result<Fixture> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let cwd = base.join("work/proj");
        std::fs::create_dir_all(cwd.join(".claude"))?;
        let config = base.join("claude");
        std::fs::create_dir_all(config.join("projects"))?;
        let data = base.join("data");
        std::fs::create_dir_all(&data)?;
        Ok(Fixture { dir, config, data, cwd })
    }

    fn project_of(&self, cwd: &str) -> PathBuf {
        self.config.join("projects").join(cwd.replace('/', "-"))
    }

    fn cwd_str(&self) -> String {
        self.cwd.to_string_lossy().into_owned()
    }

    fn append_in(&self, cwd: &str, id: &str, records: &[Value]) -> Result<()> {
        let project = self.project_of(cwd);
        std::fs::create_dir_all(&project)?;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(project.join(format!("{id}.jsonl")))?;
        for r in records {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }

    fn append(&self, id: &str, records: &[Value]) -> Result<()> {
        self.append_in(&self.cwd_str(), id, records)
    }

    fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("MIMESIS_DATA_DIR", self.data.clone().into_os_string()),
            ("CLAUDE_CONFIG_DIR", self.config.clone().into_os_string()),
            ("XDG_CONFIG_HOME", self.xdg_config().into_os_string()),
        ]
    }

    /// The app's `$XDG_CONFIG_HOME` (its autostart entry goes there).
    fn xdg_config(&self) -> PathBuf {
        self.config.with_file_name("xdg-config")
    }

    fn args(&self) -> Vec<String> {
        vec!["--config-dir".into(), self.config.to_string_lossy().into_owned()]
    }

    /// Records a hook event as `mimesis hook` would, from `claude` process `pid`.
    fn hook(&self, payload: Value, at: Timestamp, pid: u32) -> Result<()> {
        let terminal =
            TerminalContext { claude_pid: Some(pid), claude_start: Some(1000 + u64::from(pid)), ..Default::default() };
        hooks::record(&self.data, payload.to_string().as_bytes(), at, terminal)?;
        Ok(())
    }
}

fn record(kind: &str, cwd: &str, at: Timestamp, extra: Value) -> Value {
    let mut v = json!({"type": kind, "uuid": uuid(), "timestamp": at.to_iso(), "cwd": cwd, "gitBranch": "main",
                       "version": "2.1.197"});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn prompt(cwd: &str, text: &str, at: Timestamp) -> Value {
    record("user", cwd, at, json!({"message": {"role": "user", "content": text}}))
}

fn reply(cwd: &str, text: &str, at: Timestamp) -> Value {
    record(
        "assistant",
        cwd,
        at,
        json!({"requestId": format!("req_{}", uuid()), "message": {
            "id": format!("msg_{}", uuid()), "model": "claude-opus-4-8", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 3, "output_tokens": 5}}}),
    )
}

fn turn_done(cwd: &str, at: Timestamp) -> Value {
    record("system", cwd, at, json!({"subtype": "turn_duration", "durationMs": 900}))
}

/// What `/clear` writes first into the new session's file (2.1.x).
fn clear_command(cwd: &str, at: Timestamp) -> Value {
    record(
        "system",
        cwd,
        at,
        json!({"subtype": "local_command",
        "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"}),
    )
}

/// A finished one-turn conversation.
fn conversation(cwd: &str, goal: &str, at: Timestamp) -> Vec<Value> {
    vec![
        prompt(cwd, goal, at),
        reply(cwd, "Done.", at.plus(Duration::from_secs(1))),
        turn_done(cwd, at.plus(Duration::from_secs(2))),
    ]
}

fn row(id: &str) -> String {
    format!("[data-testid=roster-row][data-session-id='{id}']")
}

fn timeline(id: &str) -> String {
    format!("[data-testid=timeline][data-session-id='{id}']")
}

async fn wait_css(app: &DesktopApp, what: &str, css: &str, n: usize) -> Result<()> {
    app.wait_for(what, WAIT, || async { Ok(app.count(css).await? == n) }).await.map(drop)
}

async fn screenshot(app: &DesktopApp, name: &str) -> Result<()> {
    let shot = workspace_root().join("target/e2e").join(name);
    app.screenshot(&shot).await?;
    Ok(())
}

// ---------------------------------------------------------------- 1. /clear succession

const A: &str = "aaaaaaaa-1111-4000-8000-00000000000a";
const B: &str = "bbbbbbbb-1111-4000-8000-00000000000b";
const C: &str = "cccccccc-1111-4000-8000-00000000000c";
const D: &str = "dddddddd-1111-4000-8000-00000000000d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_succession_moves_the_selection_and_shows_one_row_per_chain() -> Result<()> {
    let _one = ONE_APP.lock().await;
    let fx = Fixture::new()?;
    let cwd = fx.cwd_str();
    // A: the active session of the folder; C: an older one there; D: another folder.
    fx.append(C, &conversation(&cwd, "Old spike on the lexer", ago(7200)))?;
    fx.append(A, &conversation(&cwd, "Rewrite the parser", ago(90)))?;
    fx.append_in("/home/dev/other", D, &conversation("/home/dev/other", "Unrelated docs work", ago(300)))?;
    let app = DesktopApp::launch_in_session(&fx.args(), &fx.env(), SessionOptions::default()).await?;
    let result = clear_succession(&app, &fx).await;
    let shot = screenshot(&app, "webview-chain.png").await;
    app.close().await?;
    result?;
    shot
}

async fn clear_succession(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    let cwd = fx.cwd_str();
    wait_css(app, "three roster rows", "[data-testid=roster-row]", 3).await?;
    app.open_row(&row(A)).await?;
    app.wait_for("A's timeline", WAIT, || async {
        Ok(app.count(&format!("{} [data-testid=timeline-item]", timeline(A))).await? >= 2)
    })
    .await?;

    // `/clear` in A's terminal (claude pid 4100): the hooks record SessionEnd for A and
    // SessionStart for B, and Claude Code starts B's transcript.
    let base = json!({"cwd": cwd, "transcript_path": ""});
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    fx.hook(with(json!({"session_id": A, "hook_event_name": "UserPromptSubmit"})), ago(80), 4100)?;
    fx.hook(with(json!({"session_id": A, "hook_event_name": "SessionEnd", "reason": "clear"})), ago(2), 4100)?;
    fx.hook(with(json!({"session_id": B, "hook_event_name": "SessionStart", "source": "clear"})), ago(2), 4100)?;
    fx.append(B, &[clear_command(&cwd, ago(2)), prompt(&cwd, "Start over: a Pratt parser", ago(1))])?;

    // The selection follows the chain to B by itself.
    let took = app
        .wait_for("the selection to move to B", WAIT, || async {
            Ok(app.count(&timeline(B)).await? == 1
                && app
                    .js(&format!("return document.querySelector(\"{}\")?.getAttribute('aria-selected');", row(B)))
                    .await?
                    == json!("true"))
        })
        .await?;
    eprintln!("/clear written → selection on B: {took:?}");
    ensure!(app.count(&timeline(A)).await? == 0, "A's timeline is still shown");
    // One row for the chain: A (superseded) is hidden; C and D are untouched.
    wait_css(app, "A's row hidden", &row(A), 0).await?;
    ensure!(app.count(&row(B)).await? == 1 && app.count(&row(C)).await? == 1 && app.count(&row(D)).await? == 1);
    ensure!(app.count("[data-testid=roster-row]").await? == 3, "one row per chain");
    if let Err(e) =
        wait_css(app, "B's row to show its chain", &format!("{} [data-testid=chain-length]", row(B)), 1).await
    {
        let snap = app
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 window.__TAURI_INTERNALS__.invoke('roster_snapshot').then(s => done(s.sessions.map(x => [x.sessionId, x.chainLength, x.workChainId, x.superseded])), e => done(String(e)));",
                vec![],
            )
            .await?;
        eprintln!("engine snapshot (id, chainLength, workChainId, superseded): {snap}");
        return Err(e);
    }
    // B's timeline reads across the chain: A's turn, the boundary, B's prompt.
    app.wait_for("the chain's timeline with its boundary", WAIT, || async {
        Ok(app.count(&format!("{} [data-testid=timeline-item][data-kind=segment]", timeline(B))).await? == 1)
    })
    .await?;
    let text = app.js(&format!("return document.querySelector(\"{}\").textContent;", timeline(B))).await?;
    let text = text.as_str().unwrap_or("");
    ensure!(
        text.contains("Rewrite the parser") && text.contains("Start over: a Pratt parser"),
        "timeline: {text:.600}"
    );

    // The toggle reveals the superseded row.
    app.click("[data-testid=show-superseded]").await?;
    wait_css(app, "A's row shown again", &row(A), 1).await?;
    let classes = app.js(&format!("return document.querySelector(\"{}\").className;", row(A))).await?;
    ensure!(classes.as_str().unwrap_or("").contains("superseded"), "A's row is marked superseded: {classes}");
    ensure!(app.count("[data-testid=roster-row]").await? == 4);
    app.click("[data-testid=show-superseded]").await?;
    wait_css(app, "A's row hidden again", &row(A), 0).await?;

    // B ends its turn: a notification is due, and there is no notification server on this
    // bus. Nothing fails; the app goes on.
    fx.append(B, &[reply(&cwd, "Here is the plan.", ago(0)), turn_done(&cwd, ago(0))])?;
    app.wait_for("B waiting for input", WAIT, || async {
        Ok(app.js(&format!("return document.querySelector(\"{}\")?.dataset.status;", row(B))).await?
            == json!("waiting_for_input"))
    })
    .await?;
    // A barrier: a later change to B shows, so the app went on after the notification.
    fx.append(B, &[prompt(&cwd, "Go on.", ago(0))])?;
    app.wait_for("B working again after the notification", WAIT, || async {
        Ok(app.js(&format!("return document.querySelector(\"{}\")?.dataset.status;", row(B))).await?
            == json!("working"))
    })
    .await
    .context("the app stopped answering after a notification with no server")?;
    Ok(())
}

// ------------------------------------------------------- 2. settings, hooks, window place

const FOREIGN_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {"allow": ["Bash(cargo test:*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo foreign-hook"}]}]
  }
}
"#;

/// Reads the stored settings of a data dir (the app is not running).
fn stored_settings(data: &Path) -> Result<Value> {
    let db = mimesis_fleetdb::Db::open_read_only(&data.join(mimesis_fleetdb::FILE_NAME))?;
    Ok(serde_json::to_value(db.settings())?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_view_hooks_install_and_window_place() -> Result<()> {
    let _one = ONE_APP.lock().await;
    let fx = Fixture::new()?;
    fx.append(A, &conversation(&fx.cwd_str(), "Rewrite the parser", ago(90)))?;
    let settings_json = fx.config.join("settings.json");
    std::fs::write(&settings_json, FOREIGN_SETTINGS)?;
    // Stored settings that differ from the defaults, so the view shows what the engine has.
    {
        let db = mimesis_fleetdb::Db::open(&fx.data.join(mimesis_fleetdb::FILE_NAME), SystemClock.now());
        let mut s = mimesis_core::settings::Settings::default();
        s.watch.approval_timeout_secs = 7;
        db.save_settings(&s)?;
    }

    let app = DesktopApp::launch_in_session(&fx.args(), &fx.env(), SessionOptions::default()).await?;
    let result = settings_and_hooks(&app, &fx, &settings_json).await;
    let shot = screenshot(&app, "webview-settings.png").await;
    app.close().await?;
    result?;
    shot?;
    // Nothing of the refused value was saved; the good one was.
    let stored = stored_settings(&fx.data)?;
    ensure!(
        stored["limits"]["crashPatterns"] == json!([GOOD_PATTERN]),
        "the refused value was stored, or the good one not: {}",
        stored["limits"]
    );
    ensure!(stored["watch"]["approvalTimeoutSecs"] == json!(9), "the good value was not stored: {}", stored["watch"]);

    // The window's size is kept across runs.
    let app = DesktopApp::launch_in_session(&fx.args(), &fx.env(), SessionOptions::default()).await?;
    let result = window_size_kept(&app, &fx.data).await;
    app.close().await?;
    result?;
    let app = DesktopApp::launch_in_session(&fx.args(), &fx.env(), SessionOptions::default()).await?;
    let rect = app.client.get_window_rect().await;
    app.close().await?;
    let (_, _, w, h) = rect?;
    ensure!((w as i64, h as i64) == (1100, 700), "the window came back at {w}×{h}, not 1100×700");
    Ok(())
}

async fn field_value(app: &DesktopApp, field: &str) -> Result<Value> {
    app.js(&format!("return document.querySelector(\"[data-field='{field}']\")?.value ?? null;")).await
}

/// Replaces an input's text by typing, as a user would (each key fires `input`).
async fn type_into(app: &DesktopApp, field: &str, text: &str) -> Result<()> {
    let el = app.find(&format!("input[data-field='{field}']")).await?;
    el.clear().await?;
    el.send_keys(text).await?;
    let now = field_value(app, field).await?;
    ensure!(now == json!(text), "typing {text:?} into {field} left {now}");
    Ok(())
}

/// The stored crash pattern of the defaults, and one the engine accepts.
const DEFAULT_PATTERN: &str = "RangeError: Maximum call stack size exceeded";
const GOOD_PATTERN: &str = "RangeError: Maximum call stack";

/// Replaces a text area's text by typing (one line).
async fn type_into_area(app: &DesktopApp, field: &str, text: &str) -> Result<()> {
    let el = app.find(&format!("textarea[data-field='{field}']")).await?;
    el.clear().await?;
    el.send_keys(text).await?;
    let now = field_value(app, field).await?;
    ensure!(now == json!(text), "typing {text:?} into {field} left {now}");
    Ok(())
}

/// Saves the form and waits for the save bar to say `expect` (its start). Save is clicked
/// once the form knows of the change (the button is on): a click on it while off does
/// nothing, and the bar may already say `expect` from the save before.
async fn save_settings(app: &DesktopApp, expect: &str) -> Result<()> {
    app.wait_for("Save enabled", WAIT, || async {
        Ok(app.count("[data-testid=settings-save][aria-disabled=false]").await? == 1)
    })
    .await?;
    app.click("[data-testid=settings-save]").await?;
    app.wait_for(&format!("the save bar to say {expect:?}"), WAIT, || async {
        Ok(app.text_of(".savebar .state").await?.starts_with(expect))
    })
    .await?;
    Ok(())
}

/// Settings › Desktop › Start at login: off by default; on writes an XDG autostart entry
/// that starts this app hidden, off removes it; a folder that cannot be written is said
/// against the setting and nothing is saved.
async fn start_at_login(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    let check = "input[data-field='desktop.startAtLogin']";
    let checked = app.js(&format!("return document.querySelector(\"{check}\").checked;")).await?;
    ensure!(checked == json!(false), "Start at login is on by default");
    let autostart = fx.xdg_config().join("autostart");
    let entry = autostart.join("mimesis.desktop");
    std::fs::create_dir_all(fx.xdg_config())?;
    std::fs::write(&autostart, "not a folder")?;
    app.click(check).await?;
    save_settings(app, "Nothing saved").await?;
    let err = "[data-testid=field-error][data-field='desktop.startAtLogin']";
    let msg = app.text_of(err).await?;
    ensure!(msg.contains(&*autostart.to_string_lossy()) && msg.ends_with("nothing was saved"), "{msg:?}");
    ensure!(stored_settings(&fx.data)?["desktop"]["startAtLogin"] != json!(true), "saved although refused");

    std::fs::remove_file(&autostart)?;
    save_settings(app, "Saved.").await?;
    let text = std::fs::read_to_string(&entry).context("no autostart entry")?;
    let exe = app_binary()?.canonicalize()?;
    ensure!(
        text.contains(&format!("\nExec={} --hidden\n", exe.display())),
        "the entry does not start this app hidden: {text}"
    );
    ensure!(stored_settings(&fx.data)?["desktop"]["startAtLogin"] == json!(true));

    app.click(check).await?;
    save_settings(app, "Saved.").await?;
    ensure!(!entry.exists(), "the autostart entry is still there after turning it off");
    Ok(())
}

async fn settings_and_hooks(app: &DesktopApp, fx: &Fixture, settings_json: &Path) -> Result<()> {
    wait_css(app, "the roster", "[data-testid=roster-row]", 1).await?;
    app.click("[data-testid=page-settings]").await?;
    app.wait_for("the stored settings in the view", WAIT, || async {
        Ok(field_value(app, "watch.approvalTimeoutSecs").await? == json!("7"))
    })
    .await?;

    // A look-ahead passes the view's own check (JavaScript's RegExp has it) but not the
    // engine's (Rust's `regex` has no look-around): only the engine can refuse it.
    type_into_area(app, "limits.crashPatterns", "Maximum call stack(?= size)").await?;
    save_settings(app, "Nothing saved").await?;
    let err = "[data-testid=field-error][data-field='limits.crashPatterns']";
    wait_css(app, "the engine's field error", err, 1).await?;
    let msg = app.text_of(err).await?;
    ensure!(
        msg.contains("pattern 1 is not a valid regular expression (") && msg.contains("look-around"),
        "not the engine's message: {msg:?}"
    );
    app.js(&format!("document.querySelector(\"{err}\").scrollIntoView({{block: 'center'}}); return 1;")).await?;
    screenshot(app, "webview-settings-error.png").await?;
    // The engine still has the stored value.
    let stored = app
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.__TAURI_INTERNALS__.invoke('settings_get').then(s => done(s), e => done({error: String(e)}));",
            vec![],
        )
        .await?;
    ensure!(stored["limits"]["crashPatterns"] == json!([DEFAULT_PATTERN]), "settings_get after the refusal: {stored}");

    // A good value saves.
    type_into_area(app, "limits.crashPatterns", GOOD_PATTERN).await?;
    type_into(app, "watch.approvalTimeoutSecs", "9").await?;
    save_settings(app, "Saved.").await?;

    start_at_login(app, fx).await?;

    // Hooks: installed from the view into the fixture's settings.json, foreign content kept.
    let status = format!("[data-testid=hook-status][data-root='{}']", fx.config.display());
    wait_css(app, "the hook status of the root", &status, 1).await?;
    ensure!(
        app.js(&format!("return document.querySelector(\"{status}\").dataset.installed;")).await? == json!("false")
    );
    app.click("[data-testid=hooks-install]").await?;
    wait_css(app, "hooks installed", &format!("{status}[data-installed=true]"), 1).await?;
    let installed: Value = serde_json::from_str(&std::fs::read_to_string(settings_json)?)?;
    // The small CLI built next to the app runs the hooks, not the desktop binary.
    let cli = app_binary()?.with_file_name("mimesis");
    ensure!(cli.is_file(), "the CLI is not built at {}: run `cargo build -p mimesis-cli`", cli.display());
    let exe = cli.canonicalize()?;
    let commands: Vec<String> = installed["hooks"]
        .as_object()
        .context("hooks")?
        .values()
        .flat_map(|groups| groups.as_array().cloned().unwrap_or_default())
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect();
    for event in ["SessionStart", "SessionEnd", "Stop", "Notification", "UserPromptSubmit"] {
        ensure!(installed["hooks"].get(event).is_some(), "no {event} hook in {installed:#}");
    }
    ensure!(
        commands.iter().any(|c| c.split(' ').next() == Some(&*exe.to_string_lossy())
            && c.contains(" hook")
            && c.contains(&*fx.data.to_string_lossy())),
        "the hooks do not run the CLI next to the app with the app's data dir: {commands:?}"
    );
    ensure!(commands.iter().any(|c| c == "echo foreign-hook"), "the foreign hook is gone: {commands:?}");
    ensure!(installed["model"] == json!("opus") && installed["permissions"]["allow"][0] == json!("Bash(cargo test:*)"));
    // The installed command really is a hook: it records an event and exits 0 at once.
    let hook_cmd = commands.iter().find(|c| c.contains(" hook")).context("a hook command")?;
    let out = Command::new("sh").args(["-c", hook_cmd]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(
        |mut child| {
            child.stdin.take().map(|mut s| {
                s.write_all(
                    json!({"session_id": A, "hook_event_name": "UserPromptSubmit", "cwd": fx.cwd_str()})
                        .to_string()
                        .as_bytes(),
                )
            });
            child.wait_with_output()
        },
    )?;
    ensure!(out.status.success() && out.stdout.is_empty(), "the hook command failed or printed: {out:?}");
    ensure!(
        mimesis_core::hook_event::spool_dir(&fx.data).read_dir()?.next().is_some(),
        "the hook recorded nothing in the spool"
    );
    app.click("[data-testid=doctor-run]").await?;
    app.wait_for("the doctor report", WAIT, || async {
        Ok(app.text_of("[data-testid=doctor-report]").await?.contains("hooks installed"))
    })
    .await?;
    // In words, not a JSON dump: the report, part by part, is folded away; read from the
    // engine's typed report (generated types), one row per part and per config folder.
    ensure!(app.count("[data-testid=doctor-report] details:not([open])").await? == 1);
    let parts = app.count("[data-testid=doctor-details] dt").await?;
    ensure!(
        parts == 7,
        "the doctor's details have {parts} parts, not Mimesis, a config folder, Claude Code, file watching, database, hook events and supervision"
    );

    app.click("[data-testid=hooks-uninstall]").await?;
    wait_css(app, "hooks uninstalled", &format!("{status}[data-installed=false]"), 1).await?;
    let after: Value = serde_json::from_str(&std::fs::read_to_string(settings_json)?)?;
    let before: Value = serde_json::from_str(FOREIGN_SETTINGS)?;
    ensure!(after == before, "uninstall left {after:#}");
    Ok(())
}

async fn window_size_kept(app: &DesktopApp, data: &std::path::Path) -> Result<()> {
    app.client.set_window_size(1100, 700).await?;
    let (_, _, w, h) = app.client.get_window_rect().await?;
    ensure!((w as i64, h as i64) == (1100, 700), "the window is {w}×{h} after resizing");
    // The place is written shortly after the last move: wait for the file to say so.
    let place = data.join("window.json");
    app.wait_for("the window's place written", WAIT, || async {
        let stored: Option<Value> = std::fs::read(&place).ok().and_then(|b| serde_json::from_slice(&b).ok());
        Ok(stored.is_some_and(|p| p["width"] == 1100 && p["height"] == 700))
    })
    .await?;
    Ok(())
}

// ------------------------------------------- 3. notifications, tray, single instance

const DONE: &str = "eeeeeeee-2222-4000-8000-00000000000e";
const BUSY: &str = "ffffffff-2222-4000-8000-00000000000f";
/// A goal with markup, a direction override and a line break: untrusted text.
const HOSTILE_GOAL: &str = "<b>Fix</b> the & \u{202E}parser\nnow";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_click_tray_and_single_instance() -> Result<()> {
    let _one = ONE_APP.lock().await;
    let fx = Fixture::new()?;
    let cwd = fx.cwd_str();
    fx.append(DONE, &conversation(&cwd, "Write the changelog", ago(60)))?;
    // BUSY is mid-turn: its prompt is there, no reply yet.
    fx.append_in("/home/dev/busy", BUSY, &[prompt("/home/dev/busy", HOSTILE_GOAL, ago(3))])?;
    let probe = fx.dir.path().join("tray.json");
    let mut env = fx.env();
    env.push(("MIMESIS_TRAY_PROBE", probe.clone().into_os_string()));
    let app = DesktopApp::launch_in_session(&fx.args(), &env, SessionOptions { notification_server: true }).await?;
    let result = notification_and_tray(&app, &fx, &probe).await;
    let shot = screenshot(&app, "webview-notification.png").await;
    let result = match result {
        Ok(()) => single_instance(&app, &fx).await,
        Err(e) => Err(e),
    };
    if result.is_err()
        && let Some(s) = &app.session
    {
        eprintln!("dunst log:\n{}", s.notifications_log());
    }
    app.close().await?;
    result?;
    shot
}

fn read_probe(path: &Path) -> Value {
    std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null)
}

async fn notification_and_tray(app: &DesktopApp, fx: &Fixture, probe: &Path) -> Result<()> {
    let session = app.session.clone().context("a desktop session")?;
    wait_css(app, "two roster rows", "[data-testid=roster-row]", 2).await?;
    app.open_row(&row(DONE)).await?;
    wait_css(app, "DONE's timeline", &timeline(DONE), 1).await?;
    // The finished session needs the user; the busy one does not (yet).
    app.wait_for("the tray to list one session", WAIT, || async {
        let p = read_probe(probe);
        Ok(p["count"] == json!(1) && p["entries"][0]["sessionId"] == json!(DONE))
    })
    .await?;
    // (The tray and the window are told apart: the window's count may come a moment later.)
    let toolbar = "return document.querySelector('[data-testid=attention]')?.dataset.count ?? null;";
    let counted =
        app.wait_for("the toolbar to count one", WAIT, || async { Ok(app.js(toolbar).await? == json!("1")) }).await;
    if let Err(e) = counted {
        let shown = app.js(toolbar).await.unwrap_or_default();
        bail!("{e:#} (the toolbar counts {shown}, the tray {})", read_probe(probe));
    }
    ensure!(session.dunstctl(&["count", "displayed"])? == "0", "a notification before any transition");

    // BUSY ends its turn: one notification, the tray and the toolbar count two.
    let busy_cwd = "/home/dev/busy";
    fx.append_in(busy_cwd, BUSY, &[reply(busy_cwd, "Fixed.", ago(0)), turn_done(busy_cwd, ago(0))])?;
    app.wait_for("one desktop notification", WAIT, || async { Ok(session.dunstctl(&["count", "displayed"])? == "1") })
        .await?;
    app.wait_for("the tray to list both", WAIT, || async { Ok(read_probe(probe)["count"] == json!(2)) }).await?;
    let p = read_probe(probe);
    let busy = p["entries"].as_array().into_iter().flatten().find(|e| e["sessionId"] == json!(BUSY)).cloned();
    let label = busy.context("BUSY in the tray menu")?["label"].as_str().unwrap_or_default().to_owned();
    ensure!(label == "<b>Fix</b> the && parser now — waiting for input", "tray label {label:?}");
    ensure!(p["tooltip"] == json!("Mimesis — 2 sessions need you"), "tooltip {}", p["tooltip"]);
    // The count is drawn onto the icon (64×64 RGBA): a red badge at its lower right.
    let icon = std::fs::read(probe.with_extension("rgba"))?;
    ensure!(icon.len() == 64 * 64 * 4, "icon of {} bytes", icon.len());
    let px = |x: usize, y: usize| &icon[(y * 64 + x) * 4..(y * 64 + x) * 4 + 4];
    ensure!(px(35, 48) == [0xd7, 0x26, 0x3d, 0xff], "no red badge: {:?}", px(35, 48));
    ensure!(px(44, 48) == [0xff, 0xff, 0xff, 0xff], "no white digit: {:?}", px(44, 48));
    let e2e = workspace_root().join("target/e2e");
    std::fs::create_dir_all(&e2e)?;
    std::fs::write(e2e.join("tray-icon-2.rgba"), &icon)?;
    app.wait_for("the toolbar count and the window's title", WAIT, || async {
        Ok(app.js("return document.querySelector('[data-testid=attention]').dataset.count;").await? == json!("2")
            && app.js("return document.title;").await? == json!("Mimesis — 2 need you"))
    })
    .await?;
    // (dunst prints what it got into its log as it shows it: waited for, not read at once.)
    app.wait_for("dunst's log of the notification", WAIT, || async {
        Ok(session.notifications_log().contains("Claude is waiting for your input"))
    })
    .await?;
    let log = session.notifications_log();
    ensure!(!log.contains('\u{202E}'), "the direction override reached the notification: {log}");
    // Still one: nothing repeats while the status stays. A barrier: a later record of the
    // open session (its status unchanged) is shown, so the engine went past both.
    let cwd = fx.cwd_str();
    fx.append(DONE, &[reply(&cwd, "Barrier reached.", ago(0)), turn_done(&cwd, ago(0))])?;
    app.wait_for("the barrier in DONE's timeline", WAIT, || async {
        Ok(app
            .js(&format!("return document.querySelector(\"{}\")?.textContent ?? '';", timeline(DONE)))
            .await?
            .as_str()
            .is_some_and(|t| t.contains("Barrier reached.")))
    })
    .await?;
    ensure!(session.dunstctl(&["count", "displayed"])? == "1", "a notification repeated while the status stayed");

    // Clicking it (dunst's default action) opens BUSY in the window.
    session.dunstctl(&["action", "0"])?;
    let took = app
        .wait_for("the notification's session to open", WAIT, || async { Ok(app.count(&timeline(BUSY)).await? == 1) })
        .await?;
    eprintln!("notification click → session open: {took:?}");
    app.wait_for("BUSY's timeline items", WAIT, || async {
        Ok(app.count(&format!("{} [data-testid=timeline-item]", timeline(BUSY))).await? >= 2)
    })
    .await?;
    ensure!(
        app.js(&format!("return document.querySelector(\"{}\")?.getAttribute('aria-selected');", row(BUSY))).await?
            == json!("true")
    );
    approved_from_a_notification(app, fx).await
}

/// Issue 12: a permission request of a session in the user's own terminal is offered on
/// its notification with Approve once and Deny; the click (dunst's context menu) is the
/// decision the hook prints, and BUSY's timeline shows it, marked as answered from a
/// notification.
async fn approved_from_a_notification(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    let session = app.session.clone().context("a desktop session")?;
    app.wait_for("the app's permission socket", WAIT, || async {
        Ok(std::os::unix::net::UnixStream::connect(fx.data.join("approvals.sock")).is_ok())
    })
    .await?;
    // Looking at another session: BUSY's request is notified (the one on screen would not be).
    app.open_row(&row(DONE)).await?;
    wait_css(app, "DONE's timeline", &timeline(DONE), 1).await?;
    let hook = permission_hook(&fx.data, BUSY, "Bash", json!({"command": "make deploy"}))?;
    app.wait_for("the request's notification", WAIT, || async {
        Ok(session.notifications_log().contains("make deploy"))
    })
    .await?;
    let t0 = Instant::now();
    session.choose_action("Approve once")?;
    let out = hook_output(hook).await?;
    eprintln!("notification action → the hook's decision: {:?}", t0.elapsed());
    ensure!(out["hookSpecificOutput"]["decision"] == json!({"behavior": "allow"}), "{out}");
    // Opened afterwards, BUSY's timeline reads the answer back from the answers log.
    app.open_row(&row(BUSY)).await?;
    let answer = format!("{} [data-testid=answer-item][data-via=notification]", timeline(BUSY));
    app.wait_for("the answer in BUSY's timeline", WAIT, || async { Ok(app.count(&answer).await? == 1) }).await?;
    let text = app.js(&format!("return document.querySelector(\"{answer}\").textContent;")).await?;
    ensure!(text.as_str().is_some_and(|t| t.contains("Approved once from a notification")), "{text}");
    Ok(())
}

async fn single_instance(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    let session = app.session.clone().context("a desktop session")?;
    let launch = |data: &Path| {
        Command::new(app_binary()?)
            .args(fx.args())
            .envs(session.env())
            .env("MIMESIS_DATA_DIR", data)
            .env("CLAUDE_CONFIG_DIR", &fx.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start a second instance")
    };
    // Same data dir: hands over to the running app and leaves.
    let mut second = launch(&fx.data)?;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = second.try_wait()? {
            break s;
        }
        if started.elapsed() > WAIT {
            let _ = second.kill();
            bail!("a second instance on the same data dir kept running");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ensure!(status.success(), "the second instance exited with {status}");
    eprintln!("second instance left after {:?}", started.elapsed());
    ensure!(app.count("[data-testid=roster-row]").await? == 2, "the first instance stopped answering");

    // Same data dir with no session bus to hand over on: the data dir's lock says another app
    // runs there, and this one leaves saying so, rather than run a second engine on it.
    let mut no_bus = Command::new(app_binary()?);
    no_bus
        .args(fx.args())
        .envs(session.env())
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env("XDG_RUNTIME_DIR", fx.dir.path())
        .env("MIMESIS_DATA_DIR", &fx.data)
        .env("CLAUDE_CONFIG_DIR", &fx.config)
        .stdin(Stdio::null());
    let out = tokio::time::timeout(WAIT, tokio::task::spawn_blocking(move || no_bus.output()))
        .await
        .context("an instance without a session bus kept running")???;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.code() == Some(1), "without a session bus: {} ({stderr})", out.status);
    ensure!(stderr.contains("Mimesis is already running on"), "{stderr}");
    ensure!(app.count("[data-testid=roster-row]").await? == 2, "the first instance stopped answering");

    // Another data dir is another app: it runs, and SIGTERM quits it cleanly.
    let other = fx.dir.path().join("other-data");
    std::fs::create_dir_all(&other)?;
    let mut third = launch(&other)?;
    // A barrier: the fleet database is opened only by the app that holds its data dir (a
    // second one hands over first), and it quits cleanly on SIGTERM from then on.
    let db = other.join("fleet.db");
    let started = Instant::now();
    while !db.exists() {
        if let Some(status) = third.try_wait()? {
            bail!("an instance on another data dir exited ({status}) instead of running");
        }
        ensure!(started.elapsed() < WAIT, "an instance on another data dir never opened its database");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(third.try_wait()?.is_none(), "an instance on another data dir did not keep running");
    // The app and the processes it started, once its window's page has one (WebKit's): none
    // may outlive it. (Signalled while WebKit's were still starting, they were left behind.)
    let started = Instant::now();
    let family: Vec<(u32, u64, String)> = loop {
        let stats = mimesis_os::procs::all();
        let family: Vec<(u32, u64, String)> = with_descendants(vec![third.id()], &stats)
            .into_iter()
            .filter_map(|pid| stats.iter().find(|s| s.pid == pid).map(|s| (pid, s.start_ticks, s.comm.clone())))
            .collect();
        if family.iter().any(|p| p.2 == "WebKitWebProces") {
            break family;
        }
        ensure!(started.elapsed() < WAIT, "an instance on another data dir started no web process: {family:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // SAFETY: signalling a child we started.
    unsafe {
        libc::kill(third.id() as i32, libc::SIGTERM);
    }
    let started = Instant::now();
    let status = loop {
        if let Some(s) = third.try_wait()? {
            break s;
        }
        if started.elapsed() > WAIT {
            let _ = third.kill();
            bail!("SIGTERM did not end the app");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ensure!(status.success(), "the app exited with {status} on SIGTERM");
    // (Each the same process: its pid and start time, and not a zombie.)
    let alive = |(pid, start, _): &(u32, u64, String)| {
        mimesis_os::procs::stat(*pid).is_some_and(|s| s.start_ticks == *start && s.state != 'Z')
    };
    let started = Instant::now();
    while family.iter().any(alive) {
        if started.elapsed() > WAIT {
            let left: Vec<&String> = family.iter().filter(|p| alive(p)).map(|p| &p.2).collect();
            bail!("processes the app started outlived it by {WAIT:?}: {left:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("the app's {} processes were gone {:?} after it", family.len(), started.elapsed());
    ensure!(other.join(mimesis_fleetdb::FILE_NAME).exists(), "the other instance kept no database");
    Ok(())
}
