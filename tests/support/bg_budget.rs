//! One of Claude Code 2.1.332's background sessions over a budget (issue 36), for real: the
//! wiring both faces use ([`crate::bg::app_wiring`]: the engine following every session, a
//! supervisor, the budget follower `wiring/budgets.rs`) with a budget of $0.10, the
//! session's own (`limits.budgetUsd`) or the fleet's of the day (`limits.dailyBudgetUsd`),
//! the real CLI's service against the scripted mock API, whose replies bill a priced model
//! (`claude-opus-4-8`: $5 and $25 a million tokens).
//!
//! One turn of three replies: a Read call that spends 85 % of the budget (the warning,
//! `session_warning` reason `budget`), a second Read call that spends the rest while the
//! turn goes on (the budget is reached: said, nothing stopped), then the closing text;
//! each reply after the first is held by a gate until the test has seen the one before.
//! Once the last gate opens, the turn ends and Mimesis stops the session through Claude
//! Code's own `claude stop` at the turn's end: the closing text is in the transcript when
//! `claude stop` runs (Mimesis's verbs run through a wrapper that keeps the transcript as
//! it was then) and after it (a stop mid-turn loses it), `claude agents --all` lists it
//! stopped, the row is not live, and `claude respawn` resumes the same session with
//! nothing lost. (The service says the job is idle a moment before the worker writes the
//! closing text; under load a stop in that moment killed the worker before it did: CI10.)

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_core::supervision::budget::{Scope, Usd};
use mimesis_core::supervision::limits::Limits;
use mimesis_core::supervision::{EventKind, SupervisionEvent};
use serde_json::{Value, json};

use crate::bg::Background;
use crate::mock_api::{Gate, Reply, RequestKind, Usage};

const T: Duration = Duration::from_secs(90);
/// The session's budget: $0.10.
const BUDGET: f64 = 0.10;
/// Priced in the vendored table ($5 and $25 a million input and output tokens).
const MODEL: &str = "claude-opus-4-8";
/// The closing reply's text.
const DONE: &str = "Budget test: the turn is over.";

/// The next supervision event of the session `sid` that `pick` takes.
async fn next_event(
    rx: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<SupervisionEvent>>,
    seen: &mut Vec<SupervisionEvent>,
    sid: &str,
    what: &str,
    pick: impl Fn(&EventKind) -> bool,
) -> Result<SupervisionEvent> {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .with_context(|| format!("timed out waiting for {what}; seen: {seen:?}"))??;
        if ev.session_id.as_str() != sid {
            continue;
        }
        seen.push((*ev).clone());
        if pick(&ev.kind) {
            return Ok((*ev).clone());
        }
    }
}

fn budget_warning(k: &EventKind) -> Option<&str> {
    match k {
        EventKind::SessionWarning { reason, message, .. } if reason == "budget" => Some(message),
        _ => None,
    }
}

/// The session's transcript (under the config folder's `projects/`).
fn transcript(config: &Path, sid: &str) -> String {
    let Ok(dirs) = std::fs::read_dir(config.join("projects")) else { return String::new() };
    dirs.filter_map(Result::ok)
        .find_map(|d| std::fs::read_to_string(d.path().join(format!("{sid}.jsonl"))).ok())
        .unwrap_or_default()
}

/// A `claude` for Mimesis's verbs that, before `claude stop`, copies the config folder's
/// transcripts to `at_stop`, then runs `claude`.
fn stop_recorder(dir: &Path, claude: &Path, at_stop: &Path) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let quoted = |p: &Path| -> Result<String> {
        let s = p.to_str().context("a path in UTF-8")?;
        ensure!(!s.contains('\''), "a path without quotes: {s}");
        Ok(format!("'{s}'"))
    };
    let (at_stop, claude) = (quoted(at_stop)?, quoted(claude)?);
    let script = dir.join("claude");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = stop ]; then\n  cat \"$CLAUDE_CONFIG_DIR\"/projects/*/*.jsonl > {at_stop}.part\n  \
             mv {at_stop}.part {at_stop}\nfi\nexec {claude} \"$@\"\n"
        ),
    )?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    Ok(script)
}

/// The scenario above with a budget of `scope`.
///
/// # Safety
/// Sets the process's environment ([`crate::bg::newest_in_process_env`]): call it from the
/// only test of its binary, first thing.
pub async unsafe fn stopped_over_budget(scope: Scope) -> Result<()> {
    // SAFETY: the caller's promise.
    let (claude, api, home) = unsafe { crate::bg::newest_in_process_env()? };
    let verbs = tempfile::tempdir()?;
    let at_stop = verbs.path().join("transcripts-at-stop.jsonl");
    // SAFETY: the caller's promise.
    unsafe { std::env::set_var("MIMESIS_AGENT", stop_recorder(verbs.path(), &claude, &at_stop)?) };
    let data = tempfile::tempdir()?;
    let bg = Background::new(&home, &claude);
    std::fs::write(home.project_dir().join("notes.txt"), "one line of notes\n")?;
    let limits = match scope {
        Scope::Session => Limits { budget_usd: Some(Usd(BUDGET)), ..Limits::default() },
        Scope::Fleet => Limits { daily_budget_usd: Some(Usd(BUDGET)), ..Limits::default() },
    };
    let of = match scope {
        Scope::Session => "this session's budget of $0.10",
        Scope::Fleet => "today's budget for all sessions of $0.10",
    };
    let mimesis = crate::bg::app_wiring(&home, &claude, data.path(), limits).await;
    let sup = mimesis.supervisor().await.context("the supervisor")?;
    let mut rx = sup.subscribe();
    // Each reply after the first waits for the test: the spend grows one step at a time,
    // however late the engine reads the transcript.
    let (second, last) = (Gate::new(), Gate::new());
    let result = async {
        let notes = home.project_dir().join("notes.txt").to_string_lossy().into_owned();
        // 17,000 input tokens: $0.085 (85 %); 4,000 more: $0.105 (105 %), mid-turn.
        api.push(Reply::tool_use("Read", json!({"file_path": notes})).with_usage(Usage::new(17_000, 1)));
        api.push(
            Reply::tool_use("Read", json!({"file_path": notes})).with_usage(Usage::new(4_000, 1)).with_gate(&second),
        );
        api.push(Reply::text(DONE).with_usage(Usage::new(10, 1)).with_gate(&last));
        let t0 = Instant::now();
        let job = bg.dispatch(&["--model", MODEL], "read the notes twice")?;
        let sid = bg.job_state(&job).and_then(|s| s["sessionId"].as_str().map(str::to_owned)).context("its session")?;
        let mut seen: Vec<SupervisionEvent> = Vec::new();

        let ev = next_event(&mut rx, &mut seen, &sid, "the budget's warning", |k| budget_warning(k).is_some()).await?;
        let warned = budget_warning(&ev.kind).unwrap_or_default().to_owned();
        let pct: f64 = warned.rsplit_once('(').and_then(|(_, p)| p.split(' ').next()?.parse().ok()).unwrap_or(0.0);
        // 85 % by the transcript's records; Claude Code's billed figure may add its side calls.
        ensure!(warned.contains(of) && (85.0..100.0).contains(&pct), "{ev:?}");
        eprintln!("[bg] warned {} ms after dispatch: {warned}", t0.elapsed().as_millis());
        second.open();

        let ev = next_event(&mut rx, &mut seen, &sid, "the budget reached", |k| {
            budget_warning(k).is_some_and(|m| !m.ends_with(" %)."))
        })
        .await?;
        let reached = budget_warning(&ev.kind).unwrap_or_default().to_owned();
        ensure!(reached.contains(&format!(" of {of} is spent.")), "{ev:?}");
        eprintln!("[bg] reached {} ms after dispatch, mid-turn: {reached}", t0.elapsed().as_millis());
        // The turn goes on: its last request is held, the worker runs.
        let main = RequestKind::Main;
        let held = api.wait_for_request(T, |r| r.kind == main && r.tool_results().len() == 2)?;
        ensure!(held.model() == Some(MODEL), "the main turn's model: {:?}", held.model());
        // A stop decided with the reached budget would have been started by now; Claude
        // Code's own list, asked after it, still shows the session running.
        let running = bg.agent(&job, false)?;
        ensure!(running.is_some() && bg.worker(&job).is_some(), "not stopped mid-turn: {running:?}");
        ensure!(!transcript(home.config_dir(), &sid).contains(DONE), "the closing text is still held");

        let opened = Instant::now();
        last.open();
        bg.wait("the worker stopped by claude stop", T, |b| b.worker(&job).is_none())?;
        eprintln!(
            "[bg] stopped through claude stop {} ms after the turn's last reply was let go",
            opened.elapsed().as_millis()
        );
        let then = std::fs::read_to_string(&at_stop).context("the transcripts when claude stop ran")?;
        ensure!(then.contains(DONE), "claude stop ran before the closing text was in the transcript: {then}");
        let text = transcript(home.config_dir(), &sid);
        ensure!(text.contains(DONE), "stopped at the turn's end, its closing text written: {text}");
        let listed = bg.agent(&job, true)?.context("claude agents --all lists the stopped session")?;
        ensure!(listed.get("pid").is_none_or(Value::is_null), "stopped: {listed}");
        ensure!(bg.agent(&job, false)?.is_none(), "not among the running sessions");
        let deadline = tokio::time::Instant::now() + T;
        loop {
            let snap = mimesis.engine().snapshot().await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let row = snap.sessions.iter().find(|s| s.session_id.as_str() == sid);
            if row.is_some_and(|r| !r.live) {
                break;
            }
            ensure!(tokio::time::Instant::now() < deadline, "the row is still live: {row:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stops = seen.iter().filter(|e| budget_warning(&e.kind).is_some()).count();
        ensure!(stops == 2, "the warning and the reached budget, each said once: {seen:?}");

        // Nothing lost: Claude Code's own respawn resumes the same session from its transcript.
        let said = bg.run(&["respawn", &job])?;
        ensure!(said.ok() && said.stdout.trim() == format!("restarted {job}"), "respawn: {said:?}");
        bg.wait("the worker resumed by the service", T, |b| {
            b.worker(&job).is_some_and(|w| w["dispatch"]["launch"]["mode"] == json!("resume"))
        })?;
        let worker = bg.worker(&job).context("the worker")?;
        ensure!(worker["dispatch"]["launch"]["sessionId"] == json!(sid), "the same session: {worker}");
        ensure!(transcript(home.config_dir(), &sid).contains(DONE), "the transcript kept");
        eprintln!("[bg] respawned: the same session resumed from its transcript");
        anyhow::Ok(())
    }
    .await;
    second.open();
    last.open();
    mimesis.shutdown().await;
    let result = result.map_err(|e| e.context(format!("{}\n{}", bg.diagnostics(), api.summary())));
    bg.shutdown()?;
    result
}
