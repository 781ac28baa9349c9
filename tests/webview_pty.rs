//! Supervised PTY sessions through the real webview (issue 3): the built desktop app with
//! the stand-in agent (`MIMESIS_AGENT`), driven through WebDriver. From the UI: "New
//! session" → folder → Start opens the terminal; keystrokes reach the agent and its output
//! shows in xterm (`target/e2e/pty-terminal.png`); the roster gains the session as `source: pty`; a short duration limit
//! (`MAX_SESSION_DURATION_SECONDS`) shows the seeds' warning banner, then the "Session
//! ended" dialog with "Start New Session" and "Resume"; "Start New Session" runs a fresh
//! agent, and when the app quits with it running, no stand-in process is left (P12). A screenshot is saved to `target/e2e/pty.png`.
//!
//! Also a benchmark, not run by default: PTY → webview terminal throughput with the UI's
//! responsiveness sampled during the flood (`pty_throughput_bench`, see its doc).
//!
//! Run: `cargo build -p mimesis-desktop -p mimesis-standin`, then
//! `cargo test -p mimesis-tests --test e2e webview_pty::` (under Xvfb when there is no display).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fantoccini::key::Key;
use mimesis_core::supervision::flow::HIGH_WATER;
use mimesis_tests::supervised::standin;
use mimesis_tests::webdriver::{AppFolders as Fixture, DesktopApp, axe_violations, processes_in, workspace_root};
use serde_json::Value;

fn fixture() -> Result<Fixture> {
    Fixture::new("mimesis-webview-pty-")
}

fn env(fx: &Fixture, agent: &Path, limits: &[(&'static str, &str)]) -> Vec<(&'static str, OsString)> {
    let mut env: Vec<(&'static str, OsString)> = vec![
        ("MIMESIS_DATA_DIR", fx.data.clone().into_os_string()),
        ("CLAUDE_CONFIG_DIR", fx.config.clone().into_os_string()),
        ("MIMESIS_AGENT", agent.as_os_str().to_owned()),
    ];
    env.extend(limits.iter().map(|(k, v)| (*k, OsString::from(v))));
    env
}

fn args(fx: &Fixture) -> Vec<String> {
    vec!["--config-dir".into(), fx.config.to_string_lossy().into_owned()]
}

/// A process's environment as it started.
fn environ(pid: u32) -> Vec<(String, String)> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter_map(|kv| String::from_utf8_lossy(kv).split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}

/// What the app sets for its toolkit (src-tauri/src/toolkit.rs) reaches WebKit's processes,
/// and not the agent: it starts with the environment the user gave Mimesis.
fn toolkit_env_stays_with_the_app(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    const SET_FOR_THE_TOOLKIT: [&str; 5] = [
        "LD_PRELOAD",
        "WEBKIT_DISABLE_COMPOSITING_MODE",
        "WEBKIT_DISABLE_DMABUF_RENDERER",
        "GDK_GL",
        "WEBKIT_WEB_RENDER_DEVICE_FILE",
    ];
    let agents = processes_in(&fx.project);
    ensure!(!agents.is_empty(), "the agent runs in {}", fx.project.display());
    for (pid, cmd) in &agents {
        for (k, v) in environ(*pid) {
            let ours = SET_FOR_THE_TOOLKIT.contains(&k.as_str()) && std::env::var_os(&k).is_none();
            ensure!(!ours, "the agent ({cmd}) has {k}={v}, which the app set for its toolkit");
        }
    }
    // Built where WebKit links the speech voice, the app links it too, and WebKit's web
    // process preloads it, then the trim library when it is beside the app (after what the
    // user preloads).
    let processes = app.app_processes();
    let app_pid = *processes.first().context("the app's process")?;
    let maps = std::fs::read_to_string(format!("/proc/{app_pid}/maps")).unwrap_or_default();
    let trim = std::fs::read_link(format!("/proc/{app_pid}/exe"))?.with_file_name("libmimesis_webkit_trim.so");
    let mut ours = Vec::new();
    if maps.contains("libflite_cmu_time_awb") {
        ours.push("libflite_cmu_time_awb.so.1".to_owned());
    }
    if trim.is_file() {
        ours.push(trim.to_string_lossy().into_owned());
    }
    if !ours.is_empty() {
        let web = processes.iter().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.starts_with("WebKitWebProces"))
        });
        let web = *web.context("WebKit's web process among the app's")?;
        let preload = environ(web).into_iter().find(|(k, _)| k == "LD_PRELOAD").map(|(_, v)| v);
        let user = std::env::var("LD_PRELOAD").ok().filter(|u| !u.is_empty());
        let want = user.into_iter().chain(ours).collect::<Vec<_>>().join(" ");
        ensure!(
            preload.as_deref() == Some(want.as_str()),
            "WebKit's web process preloads {want:?}: LD_PRELOAD={preload:?}"
        );
    }
    Ok(())
}

async fn none_left(dir: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_in(dir);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("processes of ours outlived Mimesis: {left:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The session's duration limit in `pty_session_from_the_ui_with_duration_limit`: steps 1-3
/// run in it (7-9 s of it here at a load of 4-6 on 2 cores next to the flood test, 12.4 s at
/// a load of 11; it was 16 s, then 24, which steps 1-3 overran once at a load of 7-11 under
/// cargo-nextest, the limit's dialog then covering the pane).
const LIMIT_SECS: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_session_from_the_ui_with_duration_limit() -> Result<()> {
    let fx = fixture()?;
    let agent = standin()?;
    // Warned halfway through a LIMIT_SECS session, checked every second; the in-flight turn
    // may finish for 2 s; the agent gets 1 s between SIGTERM and SIGKILL.
    let limit = LIMIT_SECS.to_string();
    let limits = [
        ("MAX_SESSION_DURATION_SECONDS", limit.as_str()),
        ("DURATION_WARN_PERCENT", "50"),
        ("DURATION_CHECK_INTERVAL_SECONDS", "1"),
        ("TURN_GRACE_SECONDS", "2"),
        ("KILL_AFTER_SECONDS", "1"),
    ];
    let app = DesktopApp::launch(&args(&fx), &env(&fx, &agent, &limits)).await?;
    let result = session_flow(&app, &fx).await;
    let shot = workspace_root().join("target/e2e/pty.png");
    let shot_result = if result.is_err() { app.failure_screenshot(&shot).await } else { Ok(()) };
    app.close().await?;
    // P12: quitting stops every supervised process.
    let left = none_left(&fx.project).await;
    result?;
    shot_result?;
    left?;
    Ok(())
}

async fn session_flow(app: &DesktopApp, fx: &Fixture) -> Result<()> {
    // 1. New session → folder → Start: the agent runs in the embedded terminal, started at
    //    the size of the terminal that shows it (its first screen does not wrap).
    let id = app.start_session(&fx.project).await?;
    let started = Instant::now();
    app.wait_for("the agent's prompt in the terminal", Duration::from_secs(15), || async {
        Ok(app.terminal_text().await?.contains("? for shortcuts"))
    })
    .await?;
    // The width decides whether its lines wrap: exact. (The rows are estimated, then the
    // terminal's own size follows at once.)
    let cols = app.js("return document.querySelector('[data-testid=terminal]').terminalSize().cols;").await?;
    let at = format!("started at {cols}×");
    let text = app.terminal_text().await?;
    ensure!(text.contains(&at), "the agent started as wide as its terminal ({at}…): {text}");
    toolkit_env_stays_with_the_app(app, fx)?;
    // The terminal view passes axe-core, contrast included (issue 37: every view).
    let found = axe_violations(app, "terminal").await?;
    ensure!(found.is_empty(), "accessibility violations:\n{}", found.join("\n"));

    // 2. Keystrokes reach the agent; its answer shows in xterm.
    type_line(app, "hello from webdriver").await?;
    let took = app
        .wait_for("the agent's reply in the terminal", Duration::from_secs(10), || async {
            Ok(app.terminal_text().await?.contains("Echo: hello from webdriver"))
        })
        .await?;
    eprintln!("enter → reply on screen: {took:?}");
    app.screenshot(&workspace_root().join("target/e2e/pty-terminal.png")).await?;

    // 3. The roster shows it as a supervised PTY session.
    let row = format!("[data-testid=roster-row][data-session-id='{id}']");
    app.wait_for("the roster row of the PTY session", Duration::from_secs(10), || async {
        Ok(app.count(&format!("{row}[data-source=pty][data-supervised=true]")).await? == 1)
    })
    .await?;

    // 3b. Its permission dialog, answered from the window: "Approve once" chooses the
    // dialog's "Yes" by its label, in the agent's own terminal (issue 12).
    type_line(app, "ask").await?;
    app.wait_for("the approval bar of the supervised session", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=approval-bar] [data-testid=approve-once]").await? == 1)
    })
    .await?;
    app.click("[data-testid=approve-once]").await?;
    app.wait_for("the approved tool's result in the terminal", Duration::from_secs(10), || async {
        Ok(app.terminal_text().await?.contains("Done: said hi."))
    })
    .await?;
    app.wait_for("the approval bar gone", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=approval-bar]").await? == 0)
    })
    .await?;
    // A question (AskUserQuestion): its options as read from the screen, one clicked.
    type_line(app, "question").await?;
    let sqlite = "[data-testid=dialog-option][data-label=SQLite]";
    app.wait_for("the question's options over the timeline", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=dialog-option]").await? == 3 && app.count(sqlite).await? == 1)
    })
    .await?;
    app.click(sqlite).await?;
    app.wait_for("the answer in the terminal", Duration::from_secs(10), || async {
        Ok(app.terminal_text().await?.contains("You chose SQLite."))
    })
    .await?;
    // A turn that ends with a question: shown over the timeline, answered in the reply box.
    type_line(app, "which branch?").await?;
    app.wait_for("the question the turn ended with", Duration::from_secs(10), || async {
        Ok(app
            .js("return document.querySelector('[data-testid=asked]')?.textContent ?? '';")
            .await?
            .as_str()
            .is_some_and(|t| t.contains("Echo: which branch?")))
    })
    .await?;
    app.find("[data-testid=reply]").await?.send_keys("main please").await?;
    app.click("[data-testid=send-reply]").await?;
    app.wait_for("the reply reached the agent", Duration::from_secs(10), || async {
        Ok(app.terminal_text().await?.contains("Echo: main please"))
    })
    .await?;
    // The answers given from the window are in the session's timeline, marked so.
    app.click("[data-testid=pane-split]").await?;
    app.wait_for("the answers in the timeline", Duration::from_secs(10), || async {
        Ok(app.count("[data-testid=answer-item][data-via=window]").await? == 2)
    })
    .await?;
    let texts = app
        .js("return [...document.querySelectorAll('[data-testid=answer-item]')].map(e => e.textContent).join('|');")
        .await?;
    ensure!(texts.as_str().is_some_and(|t| t.contains("Chose “SQLite” from the window")), "{texts}");
    app.click("[data-testid=pane-terminal]").await?;

    // 4. The duration limit: the seeds' warning, then the dialog. (Steps 1-3 must fit in it.)
    eprintln!("steps 1-3 took {:?} of the session's {LIMIT_SECS} s", started.elapsed());
    let banner = "[data-testid=banner][data-kind=session_warning]";
    app.wait_for("the duration warning banner", Duration::from_secs(60), || async {
        Ok(app.count(banner).await? == 1)
    })
    .await?;
    let warning = app.text_of(banner).await?;
    ensure!(
        warning.contains("Session will end in") && warning.contains("Save your work."),
        "warning banner: {warning:?}"
    );
    app.wait_for("the session-ended dialog", Duration::from_secs(60), || async {
        Ok(app.count("[data-testid=terminated-dialog]").await? == 1)
    })
    .await?;
    let dialog = app.text_of("[data-testid=terminated-dialog]").await?;
    ensure!(dialog.contains(&format!("Session ended ({LIMIT_SECS}-second limit reached).")), "dialog: {dialog:?}");
    ensure!(app.text_of("[data-testid=terminated-new]").await?.trim() == "Start New Session");
    ensure!(app.text_of("[data-testid=terminated-resume]").await?.trim() == "Resume");
    app.screenshot(&workspace_root().join("target/e2e/pty.png")).await?;
    app.wait_for("the roster row to show the session terminated", Duration::from_secs(10), || async {
        let state = app
            .js(&format!(
                "const r = document.querySelector(\"{row} [data-testid=supervision-badge]\"); \
                 return r ? (r.dataset.state || r.textContent) : null;"
            ))
            .await?;
        Ok(state.as_str().is_some_and(|s| s.contains("terminated")))
    })
    .await?;
    // (Its process may still be on its way out: SIGTERM, then SIGKILL a second later.)
    app.wait_for("the limit to end the agent", Duration::from_secs(10), || async {
        Ok(processes_in(&fx.project).is_empty())
    })
    .await
    .with_context(|| format!("left: {:?}", processes_in(&fx.project)))?;

    // 5. "Start New Session" runs a fresh agent in the same folder; it is still running
    // when the app quits, so the quit must stop it.
    app.click("[data-testid=terminated-new]").await?;
    app.wait_for("a new session's terminal", Duration::from_secs(15), || async {
        let v = app
            .js("const t = document.querySelector('[data-testid=terminal][data-attached=true]'); \
                 return t ? t.dataset.sessionId : null;")
            .await?;
        Ok(v.as_str().is_some_and(|s| s != id))
    })
    .await?;
    app.wait_for("the new agent's prompt", Duration::from_secs(15), || async {
        Ok(app.terminal_text().await?.contains("? for shortcuts"))
    })
    .await?;
    ensure!(!processes_in(&fx.project).is_empty(), "the new agent runs");
    Ok(())
}

// ---- floods: flow control ----

/// An agent that says `ready`, waits for a line, `cat`s `bytes` of 100-column text lines,
/// prints `marker` on a line of its own, then echoes the next line it reads as `after: …`.
fn flood_agent(fx: &Fixture, bytes: usize, marker: &str) -> Result<PathBuf> {
    flood_script(
        fx,
        bytes,
        "flood-agent",
        &format!(
            "echo ready\nread line\ncat \"$FLOOD\"\necho\necho {marker}\nread line\necho \"after: $line\"\nexec sleep 3600\n"
        ),
    )
}

/// A file of `bytes` of 100-column text lines, and a shell script `name` running `body` with
/// the file's path in `$FLOOD`.
fn flood_script(fx: &Fixture, bytes: usize, name: &str, body: &str) -> Result<PathBuf> {
    let file = fx.data.join("flood.txt");
    let line: Vec<u8> = (0..99).map(|i| b'!' + (i % 90) as u8).chain([b'\n']).collect();
    std::fs::write(&file, line.iter().copied().cycle().take(bytes).collect::<Vec<u8>>())?;
    let script = fx.data.join(name);
    std::fs::write(&script, format!("#!/bin/sh\nFLOOD='{}'\n{body}", file.display()))?;
    std::fs::set_permissions(&script, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))?;
    Ok(script)
}

fn unique_marker() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("FLOOD-DONE-{nanos:x}")
}

/// Types `text` and Enter into the terminal, found afresh (what was shown over it since the
/// last line may have re-rendered it).
async fn type_line(app: &DesktopApp, text: &str) -> Result<()> {
    let textarea = app.find("[data-testid=terminal] textarea").await?;
    if !text.is_empty() {
        textarea.send_keys(text).await?;
    }
    textarea.send_keys(&char::from(Key::Enter).to_string()).await?;
    Ok(())
}

/// The last lines of the terminal contain `needle` (cheap: not the whole buffer).
async fn terminal_tail_has(app: &DesktopApp, needle: &str) -> Result<bool> {
    let v = app
        .js(&format!(
            "const t = document.querySelector('[data-testid=terminal]'); \
             return !!(t && t.terminalText && t.terminalText(60).includes({needle:?}));"
        ))
        .await?;
    Ok(v.as_bool() == Some(true))
}

/// A flood of tens of MB: the page never holds more than the high-water mark of unparsed
/// output, script round trips keep completing during it, and the terminal ends showing the
/// flood's last line and still takes input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_flood_is_flow_controlled() -> Result<()> {
    flood_test(24 * 1024 * 1024 + 24, None, "pty-flood.png").await
}

/// A message of the terminal's channel that never comes (as when Tauri's fetch of it fails,
/// which it only logs) does not stop the terminal: the page notices the gap, attaches again,
/// and shows the end of the output, whole and in order, and input still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_lost_output_message_is_recovered() -> Result<()> {
    // The flood's first message (of 64 KB or more: "ready" and the echo are small), however
    // many the backend needs: live output, a screen, or the scrollback after the flood.
    flood_test(4 * 1024 * 1024 + 24, Some(64 * 1024), "pty-lost.png").await
}

/// The app with an agent that writes `bytes` after its first line of input, through
/// [`flood_flow`] (the channel losing its first message of `lose` bytes or more); a screenshot
/// named `shot` on failure.
async fn flood_test(bytes: usize, lose: Option<u64>, shot: &str) -> Result<()> {
    let fx = fixture()?;
    let marker = unique_marker();
    let script = flood_agent(&fx, bytes, &marker)?;
    let app = DesktopApp::launch(&args(&fx), &env(&fx, &script, &[("KILL_AFTER_SECONDS", "1")])).await?;
    let result = flood_flow(&app, &fx, &marker, bytes, lose).await;
    if result.is_err() {
        let _ = app.failure_screenshot(&workspace_root().join("target/e2e").join(shot)).await;
    }
    app.close().await?;
    let left = none_left(&fx.project).await;
    result?;
    left
}

async fn flood_flow(app: &DesktopApp, fx: &Fixture, marker: &str, bytes: usize, lose: Option<u64>) -> Result<()> {
    app.start_session(&fx.project).await?;
    app.wait_for("the agent to be ready", Duration::from_secs(15), || async { terminal_tail_has(app, "ready").await })
        .await?;
    if let Some(over) = lose {
        app.js(&format!("document.querySelector('[data-testid=terminal]').terminalTune({{loseOver: {over}}});"))
            .await?;
    }
    type_line(app, "").await?;
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut samples = 0;
    let mut most_unparsed = 0;
    loop {
        // Each sample is a script round trip: that it completes is the UI staying usable.
        let s = stats(app).await?;
        let unparsed = s["received"].as_u64().unwrap_or(0).saturating_sub(s["parsed"].as_u64().unwrap_or(0));
        most_unparsed = most_unparsed.max(unparsed);
        ensure!(unparsed <= HIGH_WATER, "the page holds {unparsed} unparsed bytes: {s}");
        samples += 1;
        if terminal_tail_has(app, marker).await? {
            break;
        }
        ensure!(Instant::now() < deadline, "the flood's last line never showed: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = stats(app).await?;
    eprintln!("flood: {samples} samples, at most {most_unparsed} bytes unparsed in the page; at the end {s}");
    if lose.is_some() {
        // The lost message may come after the marker showed (a flood's last screen is small;
        // the scrollback after it is not): the page notices the gap once the backend probes.
        app.wait_for("the terminal to attach again after the lost message", Duration::from_secs(20), || async {
            Ok(stats(app).await?["reattached"].as_u64() >= Some(1))
        })
        .await?;
        app.wait_for("the flood's last line after attaching again", Duration::from_secs(10), || async {
            terminal_tail_has(app, marker).await
        })
        .await?;
    }
    // The terminal is in a sane state: input still reaches the agent and its answer shows.
    type_line(app, "still here").await?;
    app.wait_for("the agent's answer after the flood", Duration::from_secs(10), || async {
        terminal_tail_has(app, "after: still here").await
    })
    .await?;
    let text = app
        .js("return document.querySelector('[data-testid=terminal]').terminalText(60);")
        .await?
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // No scrambled output: the rows before the marker are the end of the flood, in order
    // (rows wrap at the terminal's width; line ends give no characters).
    let flood_line: String = (0..99).map(|i| char::from(b'!' + (i % 90) as u8)).collect();
    let expected: String = format!("{flood_line}{flood_line}{}", &flood_line[..bytes % 100]);
    let shown: String = text.lines().take_while(|l| !l.contains(marker)).collect();
    ensure!(shown.ends_with(&expected), "the terminal shows the flood's end whole, in order: {text}");
    Ok(())
}

// ---- benchmark ----

/// Bytes the benchmark's agent writes (env `MIMESIS_BENCH_MB`, default 64).
fn bench_bytes() -> usize {
    std::env::var("MIMESIS_BENCH_MB").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(64) * 1024 * 1024
}

/// The agent of the throughput benchmark: for each line it reads, `cat`s the flood file and
/// prints `marker-<line>` on a line of its own.
fn bench_agent(fx: &Fixture, bytes: usize, marker: &str) -> Result<PathBuf> {
    flood_script(
        fx,
        bytes,
        "bench-agent",
        &format!("echo ready\nwhile read line; do cat \"$FLOOD\"; echo; echo \"{marker}-$line\"; done\n"),
    )
}

/// PTY → webview terminal throughput under flow control. The agent waits for a line, then
/// `cat`s a file of N MB of 100-column text lines (the tty turns each `\n` into `\r\n`) and
/// prints a unique marker line. Reported per flood: (a) PTY → terminal throughput = the bytes
/// the agent wrote / the time from the flood's first byte reaching the page to the marker
/// shown in xterm; (b) the bytes xterm actually parsed (the rest stayed in the session's
/// scrollback, skipped by flow control); (c) the round trip of a trivial script, timed every
/// 50 ms during the flood (the UI stays responsive when those stay short): p50, p95, max;
/// (d) where the page's main thread went: its animation-frame callbacks (xterm's renderer),
/// its timer callbacks (xterm's parsing in write slices), and the rest of the flood's wall
/// time (layout, paint, IPC, idle). Before each flood, the floor under it in the same run
/// (`pty_floor`: `cat` of the same file into a bare PTY), and at the end the medians' ratio.
///
/// `MIMESIS_BENCH_ROUNDS` floods (default 1) after one not counted; with
/// `MIMESIS_BENCH_TUNE_B` set they alternate between A (`MIMESIS_BENCH_TUNE_A`, default none)
/// and B: JavaScript run in the page before each flood with `t` the terminal's element, e.g.
/// `t.terminalTune({options: {scrollback: 1000}, maxWrite: 16384})`. Medians per variant last.
///
/// `MIMESIS_BENCH_MB=64 cargo test -p mimesis-tests --test e2e webview_pty::pty_throughput_bench -- --ignored --nocapture`
/// (for release figures: `cargo build --profile app -p mimesis-desktop` after `npm run build` in
/// ui/, and `MIMESIS_DESKTOP_BIN=target/app/mimesis-desktop`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run with --ignored --nocapture"]
async fn pty_throughput_bench() -> Result<()> {
    let fx = fixture()?;
    let bytes = bench_bytes();
    let marker = unique_marker();
    let script = bench_agent(&fx, bytes, &marker)?;
    let app = DesktopApp::launch(&args(&fx), &env(&fx, &script, &[("KILL_AFTER_SECONDS", "1")])).await?;
    let result = bench(&app, &fx, bytes, &marker).await;
    let _ = app.screenshot(&workspace_root().join("target/e2e/pty-bench.png")).await;
    app.close().await?;
    let left = none_left(&fx.project).await;
    result?;
    left
}

async fn stats(app: &DesktopApp) -> Result<Value> {
    app.js("const t = document.querySelector('[data-testid=terminal]'); return t.terminalStats();").await
}

/// One flood's figures.
struct Flood {
    mbps: f64,
    parsed_pct: f64,
    p50: f64,
    p95: f64,
    /// Milliseconds per second of flood in animation-frame callbacks, in timer callbacks.
    frames: f64,
    timers: f64,
    /// Milliseconds of the web process's CPU per MB that xterm parsed.
    web_per_mb: f64,
    /// Screens drawn per second of flood.
    renders: f64,
    /// Milliseconds from the flood's last byte reaching the page to the marker shown.
    drain: f64,
    /// CPU time of WebKit's web process and of the app during the flood, milliseconds.
    web_cpu: f64,
    app_cpu: f64,
}

/// CPU time (user + system) of each of the app's processes so far, in clock ticks, by name.
fn cpu_ticks(app: &DesktopApp) -> Vec<(String, u64)> {
    app.app_processes()
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(") ")?;
            let name = head.split_once(" (")?.1.to_owned();
            let f: Vec<&str> = rest.split(' ').collect();
            Some((name, f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?))
        })
        .collect()
}

/// Milliseconds of CPU between two `cpu_ticks` of the processes whose name starts with `name`.
fn cpu_ms(before: &[(String, u64)], after: &[(String, u64)], name: &str) -> f64 {
    let sum = |v: &[(String, u64)]| v.iter().filter(|(n, _)| n.starts_with(name)).map(|(_, t)| *t).sum::<u64>();
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    sum(after).saturating_sub(sum(before)) as f64 * 1000.0 / hz
}

/// Times the page's animation-frame and timer callbacks (once per page).
const BUSY_PROBE: &str = "if (!window.__busy) { const b = window.__busy = {raf: 0, timeout: 0}; \
     const st = window.setTimeout.bind(window); \
     window.setTimeout = (fn, ms, ...a) => typeof fn !== 'function' ? st(fn, ms, ...a) : st((...x) => { \
       const s = performance.now(); try { return fn(...x); } finally { b.timeout += performance.now() - s; } }, ms, ...a); \
     const raf = window.requestAnimationFrame.bind(window); \
     window.requestAnimationFrame = (fn) => raf((ts) => { \
       const s = performance.now(); try { return fn(ts); } finally { b.raf += performance.now() - s; } }); } \
     return true;";

async fn bench(app: &DesktopApp, fx: &Fixture, bytes: usize, marker: &str) -> Result<()> {
    app.start_session(&fx.project).await?;
    app.wait_for("the agent to be ready", Duration::from_secs(15), || async { terminal_tail_has(app, "ready").await })
        .await?;
    let renderer = app
        .js("const gl = document.createElement('canvas').getContext('webgl2'); \
             const info = gl && gl.getExtension('WEBGL_debug_renderer_info'); \
             const name = gl ? String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER)) : 'none'; \
             return document.querySelector('[data-testid=terminal]').dataset.renderer + ' on ' + name;")
        .await?;
    eprintln!("renderer {renderer}");
    app.js(BUSY_PROBE).await?;
    let rounds = std::env::var("MIMESIS_BENCH_ROUNDS").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    let tune_a = std::env::var("MIMESIS_BENCH_TUNE_A").unwrap_or_default();
    let tune_b = std::env::var("MIMESIS_BENCH_TUNE_B").ok();
    let mut figures: [Vec<Flood>; 2] = [Vec::new(), Vec::new()];
    let mut floors: Vec<f64> = Vec::new();
    // A first flood not counted when there are several (the first fills an empty scrollback).
    for round in 0..=rounds {
        if round == 0 && rounds == 1 {
            continue;
        }
        let variant = if tune_b.is_some() { round % 2 } else { 0 };
        let tune = if variant == 1 { tune_b.as_deref().unwrap_or_default() } else { tune_a.as_str() };
        app.js(&format!("const t = document.querySelector('[data-testid=terminal]'); {tune}; return true;")).await?;
        let floor = pty_floor(&fx.data.join("flood.txt"), bytes).await?;
        let f = flood(app, bytes, &format!("{marker}-r{round}"), &format!("r{round}")).await?;
        eprintln!("floor {round}: `cat` of the same file into a bare PTY, read and dropped: {floor:.1} MB/s");
        eprintln!(
            "flood {round} ({}): {:.1} MB/s, parsed {:.1}%, round trip p50 {:.0} ms, p95 {:.0} ms; \
             per second of flood: frames {:.0} ms, timers {:.0} ms, other {:.0} ms; CPU: web {:.0} ms, app {:.0} ms; last byte → marker {:.0} ms; web CPU {:.0} ms per MB parsed; {:.0} screens drawn a second",
            ["A", "B"][variant],
            f.mbps,
            f.parsed_pct,
            f.p50,
            f.p95,
            f.frames,
            f.timers,
            1000.0 - f.frames - f.timers,
            f.web_cpu,
            f.app_cpu,
            f.drain,
            f.web_per_mb,
            f.renders
        );
        if round > 0 {
            figures[variant].push(f);
            floors.push(floor);
        }
    }
    if !floors.is_empty() {
        floors.sort_by(f64::total_cmp);
        let floor = floors[floors.len() / 2];
        eprintln!("the floor (median of {}): {floor:.1} MB/s", floors.len());
        for (name, floods) in ["A", "B"].iter().zip(&figures) {
            let mut v: Vec<f64> = floods.iter().map(|f| f.mbps).collect();
            v.sort_by(f64::total_cmp);
            if let Some(m) = v.get(v.len() / 2) {
                eprintln!("{name}: {m:.1} MB/s = {:.2}x the floor", m / floor);
            }
        }
    }
    for (name, floods) in ["A", "B"].iter().zip(&figures) {
        if floods.is_empty() {
            continue;
        }
        let median = |k: fn(&Flood) -> f64| {
            let mut v: Vec<f64> = floods.iter().map(k).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        eprintln!(
            "median of {} floods ({name}): {:.1} MB/s, parsed {:.1}%, round trip p50 {:.0} ms, p95 {:.0} ms; \
             per second: frames {:.0} ms, timers {:.0} ms; CPU: web {:.0} ms, app {:.0} ms; last byte → marker {:.0} ms; web CPU {:.0} ms per MB parsed; {:.0} screens drawn a second",
            floods.len(),
            median(|f| f.mbps),
            median(|f| f.parsed_pct),
            median(|f| f.p50),
            median(|f| f.p95),
            median(|f| f.frames),
            median(|f| f.timers),
            median(|f| f.web_cpu),
            median(|f| f.app_cpu),
            median(|f| f.drain),
            median(|f| f.web_per_mb),
            median(|f| f.renders),
        );
    }
    Ok(())
}

/// The floor under any PTY → terminal throughput on this machine, measured beside each flood:
/// `cat` of the same file into a bare PTY (the tty's `\n` → `\r\n` as in the session's), its
/// output read as it comes and dropped, in MB/s of the file's bytes (as a flood's figure).
/// What the kernel's PTY and `cat` cost alone: no scrollback, screen model, IPC or terminal.
async fn pty_floor(file: &Path, bytes: usize) -> Result<f64> {
    let file = file.to_owned();
    tokio::task::spawn_blocking(move || -> Result<f64> {
        let pty = portable_pty::native_pty_system()
            .openpty(portable_pty::PtySize { rows: 40, cols: 120, pixel_width: 0, pixel_height: 0 })
            .map_err(|e| anyhow::anyhow!("a PTY: {e}"))?;
        let mut reader = pty.master.try_clone_reader().map_err(|e| anyhow::anyhow!("its reader: {e}"))?;
        let mut cmd = portable_pty::CommandBuilder::new("cat");
        cmd.arg(&file);
        let start = Instant::now();
        let mut child = pty.slave.spawn_command(cmd).map_err(|e| anyhow::anyhow!("cat: {e}"))?;
        drop(pty.slave);
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0usize;
        // The file's bytes and a `\r` before each of its line ends; EOF (or EIO) once cat has
        // gone and everything was read.
        let want = bytes + bytes / 100;
        while got < want {
            match std::io::Read::read(&mut reader, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let _ = child.wait();
        ensure!(got >= want, "the floor's PTY gave {got} of {want} bytes");
        Ok(bytes as f64 / 1e6 / secs)
    })
    .await?
}

/// One flood: types `line`, waits for `marker` on the screen, and samples the UI's round trip.
async fn flood(app: &DesktopApp, bytes: usize, marker: &str, line: &str) -> Result<Flood> {
    // In the page: note when the flood's first byte arrives and when the marker shows.
    let before = stats(app).await?;
    let base_recv = before["received"].as_u64().unwrap_or(0);
    app.js(&format!(
        "const t = document.querySelector('[data-testid=terminal]'); \
         const b = window.__bench = {{start: null, end: null, gaps: [], last: 0, busy: null, recv: 0, recvAt: 0}}; \
         const tick = () => {{ const now = performance.now(); \
           const r = t.terminalStats().received; if (r !== b.recv) {{ b.recv = r; b.recvAt = now; }} \
           if (b.start !== null) b.gaps.push(now - b.last); \
           b.last = now; \
           if (b.start === null && t.terminalStats().received > {base_recv} + 8) {{ b.start = now; b.busy = {{...window.__busy}}; }} \
           if (b.start !== null && t.terminalText(60).includes({marker:?})) {{ \
             b.end = now; b.frames = window.__busy.raf - b.busy.raf; b.timers = window.__busy.timeout - b.busy.timeout; return; }} \
           setTimeout(tick, b.start === null ? 1 : 10); }}; tick(); return true;"
    ))
    .await?;
    let cpu_before = cpu_ticks(app);
    type_line(app, line).await?;
    let wall = Instant::now();
    let mut rtts: Vec<Duration> = Vec::new();
    let mut most_unparsed = 0u64;
    let timeout = Duration::from_secs(600);
    loop {
        let t = Instant::now();
        let v = app
            .js("const s = document.querySelector('[data-testid=terminal]').terminalStats(); \
                 return [window.__bench.end !== null, s.received - s.parsed];")
            .await?;
        rtts.push(t.elapsed());
        most_unparsed = most_unparsed.max(v[1].as_u64().unwrap_or(0));
        if v[0].as_bool() == Some(true) {
            break;
        }
        if wall.elapsed() > timeout {
            let s = stats(app).await?;
            bail!("the flood did not finish in {timeout:?}: {s}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cpu_after = cpu_ticks(app);
    let b = app.js("return window.__bench;").await?;
    let after = stats(app).await?;
    let ms = b["end"].as_f64().unwrap_or(0.0) - b["start"].as_f64().unwrap_or(0.0);
    let secs = ms / 1000.0;
    let mb = bytes as f64 / 1e6;
    let delta = |k: &str| after[k].as_u64().unwrap_or(0) - before[k].as_u64().unwrap_or(0);
    let (received, parsed, messages, writes) = (delta("received"), delta("parsed"), delta("messages"), delta("writes"));
    rtts.sort();
    // The page's main thread: how late a 10 ms timer ran during the flood (its longest stalls).
    let mut gaps: Vec<f64> =
        b["gaps"].as_array().map(|g| g.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    gaps.sort_by(f64::total_cmp);
    let gap = |p: f64| gaps.get(((gaps.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0.0);
    let pct = |p: f64| rtts[((rtts.len() - 1) as f64 * p).round() as usize];
    eprintln!(
        "PTY → terminal (agent's bytes / first byte in the page → marker shown): {mb:.1} MB in {secs:.2} s = {:.1} MB/s\n\
         parsed by xterm: {:.1} MB ({:.1}% of the flood; the rest skipped by flow control), received {:.1} MB in {messages} messages, {writes} xterm writes\n\
         most unparsed in the page: {:.2} MB\n\
         UI round trip during the flood: p50 {:?}, p95 {:?}, max {:?} ({} samples)\n\
         the page's 10 ms timer during the flood: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} ticks)",
        mb / secs,
        parsed as f64 / 1e6,
        parsed as f64 * 100.0 / bytes as f64,
        received as f64 / 1e6,
        most_unparsed as f64 / 1e6,
        pct(0.5),
        pct(0.95),
        rtts[rtts.len() - 1],
        rtts.len(),
        gap(0.5),
        gap(0.95),
        gap(1.0),
        gaps.len(),
    );
    ensure!(most_unparsed <= HIGH_WATER, "the page held {most_unparsed} unparsed bytes");
    let per_sec = |k: &str| b[k].as_f64().unwrap_or(0.0) * 1000.0 / ms.max(1.0);
    Ok(Flood {
        mbps: mb / secs,
        parsed_pct: parsed as f64 * 100.0 / bytes as f64,
        p50: pct(0.5).as_secs_f64() * 1000.0,
        p95: pct(0.95).as_secs_f64() * 1000.0,
        frames: per_sec("frames"),
        timers: per_sec("timers"),
        web_per_mb: cpu_ms(&cpu_before, &cpu_after, "WebKitWebProces") / (parsed as f64 / 1e6).max(0.001),
        renders: delta("renders") as f64 * 1000.0 / ms.max(1.0),
        drain: b["end"].as_f64().unwrap_or(0.0) - b["recvAt"].as_f64().unwrap_or(0.0),
        web_cpu: cpu_ms(&cpu_before, &cpu_after, "WebKitWebProces"),
        app_cpu: cpu_ms(&cpu_before, &cpu_after, "mimesis-desktop"),
    })
}
