//! The same scenarios against every pinned Claude Code version (SPEC X6; the oldest
//! supported, 2.1.197, 2.1.330 and the newest, 2.1.332; `MIMESIS_CLAUDE_VERSIONS` replaces
//! the list, which is how `scripts/compat <version>` checks a new release, and how one
//! version is run alone: `MIMESIS_CLAUDE_VERSIONS=2.1.332 cargo test -p mimesis-tests
//! --test e2e versions::`): the real CLI in a
//! PTY against the mock API, and Mimesis's engine watching its config dir. Each scenario
//! asserts what the user would see in the roster while the CLI is held in a state, and
//! prints how long after the live registry the engine reported each status.
//!
//! Versions differ on screen (dialogs, footers, auto mode by default since 2.1.330); what
//! Mimesis must report is the same for all of them.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use mimesis_tests::claude::versions;
use mimesis_tests::engine_watch::{EngineWatch, State};
use mimesis_tests::files::FileEvent;
use mimesis_tests::mock_api::{Reply, RequestKind, Usage};
use mimesis_tests::scenario::Scenario;
use serde_json::{Value, json};

/// How long the engine may take to notice a change (inotify is immediate; this is a
/// ceiling for a loaded CI machine, never a wait).
const NOTICE: Duration = Duration::from_secs(10);

/// One version's run: the scenario and the engine watching it.
struct Run {
    s: Scenario,
    engine: EngineWatch,
    version: String,
    scenario: &'static str,
}

impl Run {
    fn start(version: &str, scenario: &'static str, args: &[&str]) -> Result<Run> {
        Run::start_hooked(version, scenario, args, None)
    }

    /// With Mimesis's hooks installed (`mimesis hooks install`) recording into `data_dir`,
    /// which the engine reads.
    fn start_hooked(version: &str, scenario: &'static str, args: &[&str], data_dir: Option<&Path>) -> Result<Run> {
        let mut s = Scenario::with_version(version)?;
        s.args = args.iter().map(|a| a.to_string()).collect();
        if let Some(data) = data_dir {
            let out = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
                .args(["hooks", "install"])
                .env("CLAUDE_CONFIG_DIR", s.home.config_dir())
                .env("MIMESIS_DATA_DIR", data)
                .output()?;
            ensure!(out.status.success(), "hooks install: {}", String::from_utf8_lossy(&out.stderr));
        }
        let engine = EngineWatch::start_with(s.home.config_dir(), data_dir)?;
        s.start()?;
        Ok(Run { s, engine, version: version.to_owned(), scenario })
    }

    fn newer(&self) -> bool {
        self.version.as_str() >= "2.1.330"
    }

    /// The session the CLI's registry entry names now.
    fn session(&self) -> Result<String> {
        let pid = self.s.pid()?;
        let files = self.s.files();
        let reg = files.session_for_pid(pid).context("the registry entry")?;
        Ok(reg.get("sessionId").and_then(Value::as_str).context("sessionId")?.to_owned())
    }

    fn wait(&self, what: &str, cond: impl FnMut(&State) -> bool) -> Result<()> {
        self.engine.wait_for(what, NOTICE, cond)
    }

    fn status_is(&self, id: &str, status: &'static str) -> Result<()> {
        self.wait(&format!("{id} {status}"), |st| st.field(id, "status").and_then(Value::as_str) == Some(status))
    }

    /// When the engine first reported `status` for `id` after `since`, against the registry
    /// change (to `registry`: `busy`, `idle`, `waiting`) that led to it: the last such entry
    /// before the report (positive: the roster followed the registry), else the first after
    /// it (negative: the roster knew first, from the transcript or a hook).
    fn latency(&self, since: Instant, id: &str, registry: &str, status: &str) -> Option<f64> {
        let reported = self.engine.with(|st| {
            st.status_changes.iter().find(|(at, sid, s)| *at >= since && sid == id && s == status).map(|c| c.0)
        })?;
        let changes: Vec<Instant> = self
            .s
            .recorder()
            .events()
            .into_iter()
            .filter_map(|e| match e.event {
                FileEvent::Session { value, .. }
                    if e.at >= since
                        && value.get("sessionId").and_then(Value::as_str) == Some(id)
                        && value.get("status").and_then(Value::as_str) == Some(registry) =>
                {
                    Some(e.at)
                }
                _ => None,
            })
            .collect();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        match changes.iter().rev().find(|at| **at <= reported) {
            Some(at) => Some(ms(reported - *at)),
            None => changes.first().map(|at| -ms(*at - reported)),
        }
    }

    fn report(&self, step: &str, since: Instant, id: &str, registry: &str, status: &str) {
        match self.latency(since, id, registry, status) {
            Some(ms) => eprintln!(
                "[latency] {} {}: {step}: registry {registry} → roster {status} in {ms:.0} ms",
                self.version, self.scenario
            ),
            None => eprintln!("[latency] {} {}: {step}: not measured", self.version, self.scenario),
        }
    }

    fn fail(&self, e: anyhow::Error) -> anyhow::Error {
        let history = self.engine.with(|st| format!("{:?}", st.statuses));
        e.context(format!(
            "Claude Code {} ({})\nengine statuses: {history}\n{}",
            self.version,
            self.scenario,
            self.s.diagnostics()
        ))
    }
}

/// Claude Code `version` with Mimesis's hooks installed for a fresh data dir and — with
/// `face` — a running face (`mimesis watch`) that answers its permission requests; `body`
/// gets the run and the data dir. A failure comes with the run's diagnostics.
fn with_hooked(
    version: &str,
    name: &'static str,
    args: &[&str],
    face: bool,
    body: impl FnOnce(&mut Run, &Path) -> Result<()>,
) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut run = Run::start_hooked(version, name, args, Some(data.path()))?;
    let result = (|| {
        let _face = if face { Some(Face::start(run.s.home.config_dir(), data.path())?) } else { None };
        body(&mut run, data.path())
    })();
    result.map_err(|e| run.fail(e))
}

/// Runs `scenario` for every version; all are tried, failures reported together.
fn each_version(name: &'static str, scenario: impl Fn(&str) -> Result<()>) -> Result<()> {
    let mut failed = Vec::new();
    for v in versions() {
        if let Err(e) = scenario(&v) {
            failed.push(format!("{v}: {e:#}"));
        }
    }
    ensure!(failed.is_empty(), "{name} failed for:\n{}", failed.join("\n\n"));
    Ok(())
}

fn with_run(version: &str, name: &'static str, args: &[&str], body: impl FnOnce(&mut Run) -> Result<()>) -> Result<()> {
    let mut run = Run::start(version, name, args)?;
    match body(&mut run) {
        Ok(()) => Ok(()),
        Err(e) => Err(run.fail(e)),
    }
}

#[test]
fn a_prompt_and_its_reply() -> Result<()> {
    each_version("a prompt and its reply", |v| {
        with_run(v, "prompt and reply", &[], |r| {
            // At its prompt, before any: a row already (issue 33), with no transcript yet.
            let id = r.session()?;
            r.wait("the session at its prompt", |st| {
                st.field(&id, "live") == Some(&json!(true))
                    && st.field(&id, "status") == Some(&json!("idle"))
                    && st.field(&id, "goal") == Some(&Value::Null)
            })?;
            r.s.api.push(Reply::text("Hello back.").with_delay(Duration::from_millis(600)));
            let t0 = Instant::now();
            r.s.type_line("say hello")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Hello back."))?;
            ensure!(r.session()? == id, "the same session");
            r.status_is(&id, "waiting_for_input")?;
            r.wait("working, then waiting for input", |st| {
                st.statuses.get(&id).is_some_and(|h| h.iter().any(|s| s == "working"))
                    && st.field(&id, "goal") == Some(&json!("say hello"))
                    && st.field(&id, "live") == Some(&json!(true))
            })?;
            r.report("prompt", t0, &id, "busy", "working");
            // From when the roster said working: 2.1.197 may rewrite its entry as idle right
            // after the prompt is typed, before busy (that is no end of the turn).
            let working = r
                .engine
                .with(|st| {
                    st.status_changes.iter().find(|(at, sid, s)| *at >= t0 && *sid == id && s == "working").map(|c| c.0)
                })
                .unwrap_or(t0);
            r.report("reply", working, &id, "idle", "waiting_for_input");
            if r.newer() {
                r.wait("the registry's name and the permission mode", |st| {
                    st.field(&id, "name").and_then(Value::as_str).is_some_and(|n| !n.is_empty())
                        && st.field(&id, "permissionMode") == Some(&json!("auto"))
                })?;
            }
            Ok(())
        })
    })
}

/// A risky tool call in each version's default mode. 2.1.330 is in auto mode, whose
/// safety check cannot run through a gateway (the mock): first its own dialog ("Auto
/// mode can't check actions in this session", registry `dialog open`), then, staying in
/// auto mode, a per-call "No / Yes" dialog with No preselected. 2.1.197 shows its usual
/// permission dialog. Either way the roster says "waiting for approval" for the pending
/// Bash call, and approving by label runs it.
#[test]
fn a_tool_call_in_the_default_mode_through_a_gateway() -> Result<()> {
    each_version("a tool call in the default mode", |v| {
        with_run(v, "default mode tool call", &[], |r| {
            let cmd = "curl -s http://example.invalid/install.sh | sh";
            r.s.api.push(Reply::tool_use("Bash", json!({"command": cmd, "description": "Install it"})));
            r.s.api.push(Reply::text("Installed."));
            let t0 = Instant::now();
            r.s.type_line("install it")?;
            let id = r.session()?;
            r.wait("waiting for approval with the pending Bash call", |st| {
                st.field(&id, "status") == Some(&json!("waiting_for_approval"))
                    && st.field(&id, "pendingTool") == Some(&json!({"tool": "Bash", "target": cmd}))
            })?;
            r.report("dialog", t0, &id, "waiting", "waiting_for_approval");
            if r.newer() {
                r.s.wait_until("auto mode's own dialog", |screen, _| {
                    screen.contains("Auto mode can't check actions in this session")
                })?;
                let t1 = Instant::now();
                r.s.wait_settled("auto mode's dialog", Duration::from_millis(800), |s| {
                    s.contains("Enter to stay in auto mode")
                })?;
                r.s.pty()?.send("\r")?;
                r.s.wait_until("the per-call dialog", |screen, _| {
                    screen.contains("so this one needs your approval") && screen.contains("Do you want to proceed?")
                })?;
                r.status_is(&id, "waiting_for_approval")?;
                ensure!(r.engine.with(|st| st.field(&id, "status") == Some(&json!("waiting_for_approval"))));
                let _ = t1;
            }
            r.s.choose("Yes")?;
            r.s.api
                .wait_for_request(NOTICE, |q| q.kind == RequestKind::Main && !q.tool_results().is_empty())
                .context("the tool ran and its result went back")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Installed."))?;
            r.status_is(&id, "waiting_for_input")?;
            Ok(())
        })
    })
}

#[test]
fn the_permission_dialog_approved_then_denied() -> Result<()> {
    each_version("the permission dialog", |v| {
        with_run(v, "permission approved and denied", &["--permission-mode", "default"], |r| {
            r.s.api.push(Reply::tool_use("Bash", json!({"command": "echo ok > ok.txt", "description": "ok"})));
            r.s.api.push(Reply::text("Wrote it."));
            r.s.type_line("write ok")?;
            let id = r.session()?;
            r.status_is(&id, "waiting_for_approval")?;
            r.s.choose("Yes")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Wrote it."))?;
            r.status_is(&id, "waiting_for_input")?;
            ensure!(r.s.home.project_dir().join("ok.txt").exists(), "approved: the command ran");

            r.s.api.push(Reply::tool_use("Bash", json!({"command": "rm -rf build", "description": "clean"})));
            r.s.type_line("clean up")?;
            r.wait("the second call waits for approval", |st| {
                st.field(&id, "status") == Some(&json!("waiting_for_approval"))
                    && st.field(&id, "pendingTool").and_then(|p| p.get("target")) == Some(&json!("rm -rf build"))
            })?;
            r.s.choose("No")?;
            r.wait("denied: nothing pending, not waiting for approval", |st| {
                st.field(&id, "hasPendingToolUse") == Some(&json!(false))
                    && st.field(&id, "status").is_some_and(|s| s != "waiting_for_approval" && s != "working")
            })?;
            Ok(())
        })
    })
}

#[test]
fn a_question_from_ask_user_question() -> Result<()> {
    each_version("AskUserQuestion", |v| {
        with_run(v, "AskUserQuestion", &[], |r| {
            let question = "Which colour should the button be?";
            r.s.api.push(Reply::tool_use(
                "AskUserQuestion",
                json!({"questions": [{"question": question, "header": "Colour", "multiSelect": false,
                       "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]}]}),
            ));
            r.s.api.push(Reply::text("Blue it is."));
            let t0 = Instant::now();
            r.s.type_line("style the button")?;
            let id = r.session()?;
            r.wait("waiting for input with the question", |st| {
                st.field(&id, "status") == Some(&json!("waiting_for_input"))
                    && st.field(&id, "pendingTool") == Some(&json!({"tool": "AskUserQuestion", "target": question}))
            })?;
            r.report("question", t0, &id, "waiting", "waiting_for_input");
            r.s.choose("Blue")?;
            let req =
                r.s.api
                    .wait_for_request(NOTICE, |q| q.kind == RequestKind::Main && !q.tool_results().is_empty())
                    .context("the answer went back")?;
            ensure!(req.body_text().contains("Blue"), "the answer is Blue");
            // The CLI rewrites its registry entry in place as the answer goes in (2.1.332 was
            // seen half written): its session stays live throughout (issue 33).
            r.s.wait_until("the reply", |screen, _| screen.contains("Blue it is."))?;
            r.status_is(&id, "waiting_for_input")?;
            let flicker = r.engine.with(|st| {
                st.events.iter().any(|e| e["sessionId"] == id.as_str() && e["changes"]["live"] == json!(false))
            });
            ensure!(!flicker, "live:false while the CLI ran");
            Ok(())
        })
    })
}

#[test]
fn plan_mode_asks_to_exit() -> Result<()> {
    each_version("plan mode", |v| {
        with_run(v, "plan mode exit", &["--permission-mode", "plan"], |r| {
            r.s.api.push(Reply::tool_use("ExitPlanMode", json!({"plan": "# Add a cache\n\n1. Measure\n2. Cache"})));
            r.s.type_line("plan a cache")?;
            let id = r.session()?;
            r.s.wait_until("the exit-plan dialog", |screen, _| {
                screen.contains("Exit plan mode?") || screen.contains("Would you like to proceed?")
            })?;
            r.wait("waiting for approval with the plan's first line", |st| {
                st.field(&id, "status") == Some(&json!("waiting_for_approval"))
                    && st.field(&id, "pendingTool") == Some(&json!({"tool": "ExitPlanMode", "target": "Add a cache"}))
                    && st.field(&id, "permissionMode") == Some(&json!("plan"))
            })?;
            Ok(())
        })
    })
}

/// `/exit`, then `--resume` of the same session: the roster shows it ended, then live in
/// its new process; the transcript goes on in the same file.
#[test]
fn exit_then_resume() -> Result<()> {
    each_version("exit and resume", |v| {
        with_run(v, "exit and resume", &[], |r| {
            r.s.api.push(Reply::text("First answer."));
            r.s.type_line("first")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("First answer."))?;
            let id = r.session()?;
            // As a user would: the CLI writes the turn a moment after the screen shows it,
            // and 2.1.197 under load loses a turn that `/exit` overtakes (seen in CI: the
            // file then holds no conversation and `--resume` finds none).
            r.s.wait_until("the turn in the transcript", |_, files| {
                files.transcript_for(&id).is_some_and(|t| t.system_records("turn_duration").next().is_some())
            })?;
            r.s.exit()?;
            r.wait("ended: not live, idle", |st| {
                st.field(&id, "live") == Some(&json!(false)) && st.field(&id, "status") == Some(&json!("idle"))
            })?;
            r.s.restart(vec!["--resume".into(), id.clone()])?;
            ensure!(r.session()? == id, "--resume runs the same session");
            let pid = r.s.pid()?;
            r.wait("live again in the new process", |st| {
                st.field(&id, "live") == Some(&json!(true)) && st.field(&id, "pid") == Some(&json!(pid))
            })?;
            r.s.api.push(Reply::text("Second answer."));
            r.s.type_line("second")?;
            r.wait("the resumed session's own prompt is its summary", |st| {
                st.field(&id, "summary") == Some(&json!("second"))
                    && st.field(&id, "status") == Some(&json!("waiting_for_input"))
            })?;
            ensure!(r.engine.with(|st| st.sessions.len()) == 1, "one session, one transcript");
            Ok(())
        })
    })
}

/// SIGKILL of the CLI: its registry entry stays behind with a dead PID; the roster shows
/// the session ended at once, never "waiting for input" for ten minutes.
#[test]
fn sigkill_of_the_cli() -> Result<()> {
    each_version("SIGKILL", |v| {
        with_run(v, "SIGKILL", &[], |r| {
            r.s.api.push(Reply::text("Answered."));
            r.s.type_line("question")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Answered."))?;
            let id = r.session()?;
            r.status_is(&id, "waiting_for_input")?;
            let pid = r.s.pid()?;
            // SAFETY: SIGKILL to the CLI this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            r.wait("ended after the kill", |st| {
                st.field(&id, "live") == Some(&json!(false)) && st.field(&id, "status") == Some(&json!("idle"))
            })?;
            ensure!(r.s.files().session_for_pid(pid).is_some(), "the registry entry is left behind");
            Ok(())
        })
    })
}

/// Every hook event the spool holds for the data dir: (event, reason or source).
fn spooled(data: &Path) -> Vec<(String, String)> {
    let Ok(rd) = std::fs::read_dir(data.join("hooks")) else { return Vec::new() };
    let mut out = Vec::new();
    for e in rd.filter_map(Result::ok) {
        for l in std::fs::read_to_string(e.path()).unwrap_or_default().lines() {
            let v: Value = serde_json::from_str(l).unwrap_or_default();
            let detail = v.get("reason").or(v.get("source")).and_then(Value::as_str).unwrap_or("");
            out.push((v["event"].as_str().unwrap_or("?").to_owned(), detail.to_owned()));
        }
    }
    out
}

/// Mimesis's hooks, installed with every event it knows (2.1.330's new ones included),
/// are harmless on the older CLI and heard from the newer: the permission dialog through
/// PermissionRequest, the end through SessionEnd.
#[test]
fn hooks_installed_for_every_version() -> Result<()> {
    each_version("hooks", |v| {
        with_hooked(v, "hooks", &["--permission-mode", "default"], false, |r, data| {
            ensure!(
                !r.s.pty()?.screen().text().contains("Settings Error"),
                "the CLI complained about the settings: {}",
                r.s.pty()?.screen().text()
            );
            r.s.api.push(Reply::tool_use("Bash", json!({"command": "echo hooked > h.txt", "description": "h"})));
            r.s.api.push(Reply::text("Hooked."));
            r.s.type_line("write h")?;
            let id = r.session()?;
            r.status_is(&id, "waiting_for_approval")?;
            if r.newer() {
                let deadline = Instant::now() + NOTICE;
                while !spooled(data).iter().any(|(e, _)| e == "PermissionRequest") {
                    ensure!(Instant::now() < deadline, "no PermissionRequest hook: {:?}", spooled(data));
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            r.s.choose("Yes")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Hooked."))?;
            r.status_is(&id, "waiting_for_input")?;
            r.s.exit()?;
            let deadline = Instant::now() + NOTICE;
            while !spooled(data).iter().any(|(e, _)| e == "SessionEnd") {
                ensure!(Instant::now() < deadline, "no SessionEnd hook: {:?}", spooled(data));
                std::thread::sleep(Duration::from_millis(50));
            }
            let events = spooled(data);
            eprintln!("[hooks] {v}: {events:?}");
            for want in ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"] {
                ensure!(events.iter().any(|(e, _)| e == want), "no {want} hook: {events:?}");
            }
            r.wait("ended", |st| st.field(&id, "live") == Some(&json!(false)))?;
            Ok(())
        })
    })
}

/// `/clear`: the old session goes idle once (no idle → working → idle flicker) and the new
/// one appears at its prompt.
#[test]
fn clear_without_flicker() -> Result<()> {
    each_version("/clear", |v| {
        with_run(v, "/clear", &[], |r| {
            r.s.api.push(Reply::text("Before the clear."));
            r.s.type_line("first task")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Before the clear."))?;
            let old = r.session()?;
            r.status_is(&old, "waiting_for_input")?;
            let before = r.engine.with(|st| st.statuses.get(&old).map_or(0, Vec::len));
            r.s.clear()?;
            let new = r.session()?;
            ensure!(new != old, "/clear starts a new session");
            r.wait("the new session in the roster", |st| st.field(&new, "status").is_some())?;
            // A barrier: a prompt in the new session shows, so the old one's changes are in.
            // (Slow enough that the turn is seen working: a reply at once can go from the
            // prompt to waiting for input between two reads.)
            r.s.api.push(Reply::text("After the clear.").with_delay(Duration::from_millis(600)));
            r.s.type_line("second task")?;
            r.wait("the new session's turn", |st| {
                st.statuses.get(&new).is_some_and(|h| h.iter().any(|s| s == "working"))
                    && st.field(&new, "status") == Some(&json!("waiting_for_input"))
            })?;
            let after: Vec<String> = r.engine.with(|st| st.statuses.get(&old).cloned().unwrap_or_default());
            let changes = &after[before.min(after.len())..];
            eprintln!("[clear] {v}: old session after /clear: {changes:?}");
            ensure!(
                !changes.iter().any(|s| s == "working"),
                "the old session flickered through working after /clear: {changes:?}"
            );
            Ok(())
        })
    })
}

/// `/compact`: the roster counts the compaction, the summary is the summary (without the
/// wrapper), the session stays the same one and goes back to its prompt; the timeline shows
/// `/compact` before the compaction and its output without colour codes.
#[test]
fn compact_in_place() -> Result<()> {
    each_version("/compact", |v| {
        with_run(v, "/compact", &[], |r| {
            r.s.api.push(Reply::text("Before compacting."));
            r.s.type_line("a task to compact")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Before compacting."))?;
            r.s.api.push(Reply::text("More to compact."));
            r.s.type_line("and a second step")?;
            r.s.wait_until("the second reply", |screen, _| screen.contains("More to compact."))?;
            let id = r.session()?;
            r.s.api.set_compact_reply(Reply::text("The user asked for a task to compact; it was done."));
            r.s.compact()?;
            ensure!(r.session()? == id, "compaction keeps the session");
            r.wait("one compaction counted, the summary without its wrapper, at the prompt", |st| {
                st.field(&id, "compactionCount") == Some(&json!(1))
                    && st.field(&id, "summary").and_then(Value::as_str).is_some_and(|s| {
                        s.contains("a task to compact") && !s.contains("This session is being continued")
                    })
                    && st.field(&id, "status").is_some_and(|s| s == "waiting_for_input" || s == "idle")
            })?;
            let path = std::fs::read_dir(r.s.home.config_dir().join("projects"))?
                .filter_map(Result::ok)
                .map(|d| d.path().join(format!("{id}.jsonl")))
                .find(|p| p.exists())
                .context("the transcript")?;
            let items = mimesis_wiring::once::read_timeline(&path, None)?;
            let kinds: Vec<String> = items
                .iter()
                .map(|i| {
                    let v = serde_json::to_value(i).unwrap_or_default();
                    format!("{}:{}", v["kind"].as_str().unwrap_or(""), v["text"].as_str().unwrap_or(""))
                })
                .filter(|k| k.starts_with("compaction:") || k.contains("/compact") || k.contains("Compacted"))
                .collect();
            eprintln!("[compact] {v}: {kinds:?}");
            let command = kinds.iter().position(|k| k.contains("/compact"));
            let compaction = kinds.iter().position(|k| k.starts_with("compaction:"));
            ensure!(command.is_some() && compaction.is_some() && command < compaction, "order: {kinds:?}");
            ensure!(!kinds.iter().any(|k| k.contains('\u{1b}')), "colour codes in the timeline: {kinds:?}");
            Ok(())
        })
    })
}

/// Auto-compact: a reply that reports a context over the threshold (990k of a 1M window:
/// the mock's usage figure is enough) makes 2.1.330 compact by itself before the next
/// turn; the roster counts the compaction, keeps the session (same id, same file) and
/// shows the summary without its wrapper. 2.1.197 does not compact on a reported usage
/// alone (it goes on; with `CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000` it stops with "Context
/// limit reached" instead, see docs/claude-code-observed.md): there the roster must show
/// no compaction and the same session going on.
#[test]
fn auto_compact() -> Result<()> {
    each_version("auto-compact", |v| {
        with_run(v, "auto-compact", &[], |r| {
            r.s.api.set_compact_reply(Reply::text("The user asked for a big task; it was done."));
            r.s.api.push(Reply::text("A big reply.").with_usage(Usage::new(990_000, 2_000)));
            r.s.type_line("a big task")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("A big reply."))?;
            let id = r.session()?;
            r.s.api.push(Reply::text("Going on after the compaction."));
            r.s.type_line("go on")?;
            r.s.wait_until("the reply after the compaction", |screen, _| {
                screen.contains("Going on after the compaction.")
            })?;
            ensure!(r.session()? == id, "the same session goes on");
            let compacted = r.s.api.requests().iter().any(|q| q.kind == RequestKind::Compact);
            if !r.newer() {
                ensure!(!compacted, "2.1.197 compacted after all: update the test and the docs");
                return r.wait("no compaction, the session at its prompt", |st| {
                    st.field(&id, "compactionCount") == Some(&json!(0))
                        && st.field(&id, "status").is_some_and(|s| s == "waiting_for_input" || s == "idle")
                });
            }
            ensure!(compacted, "the CLI compacted by itself");
            r.wait("one compaction counted, the summary without its wrapper, at the prompt", |st| {
                st.field(&id, "compactionCount") == Some(&json!(1))
                    && st
                        .field(&id, "summary")
                        .and_then(Value::as_str)
                        .is_some_and(|s| s.contains("big task") && !s.contains("This session is being continued"))
                    && st.field(&id, "status").is_some_and(|s| s == "waiting_for_input" || s == "idle")
            })?;
            let files = r.s.files();
            let t = files.transcript_for(&id).context("the transcript")?;
            let boundary = t.system_records("compact_boundary").next().context("a compact boundary")?;
            ensure!(boundary.pointer("/compactMetadata/trigger") == Some(&json!("auto")), "{boundary}");
            Ok(())
        })
    })
}

/// A running face (`mimesis watch`, a real process) for `config` with `data`: it answers
/// permission requests on the data dir's socket. Killed when dropped.
struct Face(std::process::Child);

impl Face {
    fn start(config: &Path, data: &Path) -> Result<Face> {
        let child = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
            .args(["watch", "--json"])
            .env("CLAUDE_CONFIG_DIR", config)
            .env("MIMESIS_DATA_DIR", data)
            .stdout(std::process::Stdio::null())
            .spawn()?;
        let face = Face(child);
        let deadline = Instant::now() + NOTICE;
        while std::os::unix::net::UnixStream::connect(data.join("approvals.sock")).is_err() {
            ensure!(Instant::now() < deadline, "the face never opened its permission socket");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(face)
    }
}

impl Drop for Face {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `mimesis <args>` with the data dir; its stdout, or its error.
fn mimesis_cli(data: &Path, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
        .args(args)
        .env("MIMESIS_DATA_DIR", data)
        .output()?;
    ensure!(out.status.success(), "mimesis {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The open requests, once `cond` holds for them.
fn wait_pending(data: &Path, what: &str, cond: impl Fn(&[Value]) -> bool) -> Result<Vec<Value>> {
    let deadline = Instant::now() + NOTICE;
    loop {
        let list: Value = serde_json::from_str(&mimesis_cli(data, &["pending", "--json"])?)?;
        let pending = list["pending"].as_array().cloned().unwrap_or_default();
        if cond(&pending) {
            return Ok(pending);
        }
        ensure!(Instant::now() < deadline, "{what}: pending {pending:?}");
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Issue 12, external sessions: the `PermissionRequest` hook (installed by `mimesis hooks
/// install`; both versions run it and take its decision) hands the dialog to the running face; `mimesis approve` lets
/// the call run, `mimesis deny --message` refuses it and Claude gets the message, and a
/// dialog answered in the terminal disappears from Mimesis (its hook is ended).
#[test]
fn a_permission_request_is_answered_from_mimesis() -> Result<()> {
    each_version("answered from mimesis", answered_from_mimesis)
}

fn answered_from_mimesis(v: &str) -> Result<()> {
    with_hooked(v, "answered from mimesis", &["--permission-mode", "default"], true, |r, data| {
        r.s.api.push(Reply::tool_use("Bash", json!({"command": "echo approved > a.txt", "description": "a"})));
        r.s.api.push(Reply::text("Approved it."));
        r.s.type_line("write a")?;
        let id = r.session()?;
        let pending = wait_pending(data, "the request", |p| p.len() == 1)?;
        ensure!(pending[0]["sessionId"] == json!(id), "{pending:?}");
        ensure!(
            pending[0]["tool"] == json!("Bash") && pending[0]["target"] == json!("echo approved > a.txt"),
            "{pending:?}"
        );
        let t0 = Instant::now();
        mimesis_cli(data, &["approve", &id[..8]])?;
        r.s.api
            .wait_for_request(NOTICE, |q| q.kind == RequestKind::Main && !q.tool_results().is_empty())
            .context("approved from Mimesis: the tool ran and its result went back")?;
        eprintln!("[approvals] {v}: approve → the tool's result at the API in {} ms", t0.elapsed().as_millis());
        r.s.wait_until("the reply", |screen, _| screen.contains("Approved it."))?;
        ensure!(r.s.home.project_dir().join("a.txt").exists(), "the command ran");
        ensure!(wait_pending(data, "nothing open", <[Value]>::is_empty)?.is_empty());

        r.s.api.push(Reply::tool_use("Bash", json!({"command": "rm -rf build", "description": "clean"})));
        r.s.api.push(Reply::text("Understood."));
        r.s.type_line("clean up")?;
        let pending = wait_pending(data, "the second request", |p| p.len() == 1)?;
        let rid = pending[0]["id"].as_str().context("id")?.to_owned();
        mimesis_cli(data, &["deny", &rid, "--message", "keep the build folder"])?;
        let q = r.s.api.wait_for_request(NOTICE, |q| {
            q.kind == RequestKind::Main && q.tool_results().iter().any(|t| t["is_error"] == json!(true))
        })?;
        let denied = q.tool_results().into_iter().find(|t| t["is_error"] == json!(true)).context("the denial")?;
        ensure!(denied.to_string().contains("keep the build folder"), "Claude gets the message: {denied}");
        let again = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
            .args(["approve", &rid])
            .env("MIMESIS_DATA_DIR", data)
            .output()?;
        ensure!(!again.status.success(), "a request is answered once");
        ensure!(String::from_utf8_lossy(&again.stderr).contains("no open permission request"), "{again:?}");

        r.s.api.push(Reply::tool_use("Bash", json!({"command": "echo t > t.txt", "description": "t"})));
        r.s.api.push(Reply::text("Wrote t."));
        r.s.wait_until("the denial's reply", |screen, _| screen.contains("Understood."))?;
        r.s.type_line("write t")?;
        wait_pending(data, "the third request", |p| p.len() == 1)?;
        r.s.choose("Yes")?;
        wait_pending(data, "the request gone once answered in the terminal", <[Value]>::is_empty)?;
        r.s.wait_until("the reply", |screen, _| screen.contains("Wrote t."))?;
        Ok(())
    })
}

/// Issue 12, external sessions: AskUserQuestion and plan mode's exit reach Mimesis through
/// the same `PermissionRequest` hook with what the user must read (the questions and their
/// options; the plan where the hook is given it). An answer by the option's label goes
/// back to Claude Code as its own dialog returns it (`updatedInput.answers`) and reaches
/// the model; "keep planning" is a denial whose message Claude reads; approving the plan
/// ends plan mode where Claude Code takes it (2.1.197; 2.1.330 keeps its dialog: the plan
/// is approved in the terminal). Each answer shows in the session's timeline (`show
/// --json`), marked as given from Mimesis.
#[test]
fn questions_and_plans_are_answered_from_mimesis() -> Result<()> {
    each_version("questions and plans", |v| {
        question_answered(v)?;
        plan_answered(v)
    })
}

const PLAN: &str = "# Cache plan\n1. Add SQLite\n2. Wire it in";

/// The items of kind `answer` in `mimesis show --json`.
fn answer_items(r: &Run, data: &Path, id: &str) -> Result<Vec<Value>> {
    let out = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
        .args(["show", id, "--json"])
        .env("MIMESIS_DATA_DIR", data)
        .env("CLAUDE_CONFIG_DIR", r.s.home.config_dir())
        .output()?;
    ensure!(out.status.success(), "show: {}", String::from_utf8_lossy(&out.stderr));
    let show: Value = serde_json::from_slice(&out.stdout)?;
    Ok(show.as_array().context("items")?.iter().filter(|i| i["kind"] == json!("answer")).cloned().collect())
}

fn question_answered(v: &str) -> Result<()> {
    with_hooked(v, "a question", &["--permission-mode", "default"], true, |r, data| {
        let question = json!({"questions": [{
            "question": "Which database should the cache use?",
            "header": "Database",
            "multiSelect": false,
            "options": [
                {"label": "Postgres", "description": "the server we already run"},
                {"label": "SQLite", "description": "a file next to the app"}
            ]
        }]});
        r.s.api.push(Reply::tool_use("AskUserQuestion", question));
        r.s.api.push(Reply::text("SQLite it is."));
        r.s.type_line("pick a database")?;
        let id = r.session()?;
        let pending = wait_pending(data, "the question", |p| p.len() == 1)?;
        let detail = &pending[0]["detail"];
        ensure!(pending[0]["tool"] == json!("AskUserQuestion") && detail["kind"] == json!("questions"), "{pending:?}");
        ensure!(detail["questions"][0]["options"][1]["label"] == json!("SQLite"), "{pending:?}");
        let t0 = Instant::now();
        mimesis_cli(data, &["approve", &id[..8], "--answer", "SQLite"])?;
        let q = r.s.api.wait_for_request(NOTICE, |q| q.kind == RequestKind::Main && !q.tool_results().is_empty())?;
        let answer = q.tool_results().into_iter().next().context("the question's result")?;
        eprintln!("[approvals] {v}: answer → the question's result at the API in {} ms", t0.elapsed().as_millis());
        ensure!(answer.to_string().contains("SQLite") && answer["is_error"] != json!(true), "{answer}");
        r.s.wait_until("the reply", |screen, _| screen.contains("SQLite it is."))?;
        let answers = answer_items(r, data, &id)?;
        ensure!(
            answers.len() == 1
                && answers[0]["text"]
                    == json!("Answered from the command line: Which database should the cache use? → SQLite"),
            "the answer in the timeline: {answers:?}"
        );
        Ok(())
    })
}

fn plan_answered(v: &str) -> Result<()> {
    with_hooked(v, "a plan", &["--permission-mode", "plan"], true, |r, data| {
        r.s.api.push(Reply::tool_use("ExitPlanMode", json!({"plan": PLAN})));
        r.s.api.push(Reply::tool_use("ExitPlanMode", json!({"plan": PLAN})));
        r.s.api.push(Reply::text("Plan approved, starting."));
        r.s.type_line("plan a cache")?;
        let id = r.session()?;
        let pending = wait_pending(data, "the plan", |p| p.len() == 1)?;
        ensure!(pending[0]["tool"] == json!("ExitPlanMode"), "{pending:?}");
        // 2.1.330 keeps the plan in its plan file and hands the hook an empty input.
        let detail = pending[0].get("detail").cloned().unwrap_or_default();
        let oldest = v == mimesis_tests::claude::CLAUDE_CODE_VERSION;
        ensure!(detail == json!({"kind": "plan", "plan": PLAN}) || (detail.is_null() && !oldest), "{pending:?}");
        // Keep planning: a denial whose message Claude reads.
        mimesis_cli(data, &["deny", &id[..8], "--message", "add a rollback step"])?;
        r.s.api.wait_for_request(NOTICE, |q| {
            q.kind == RequestKind::Main
                && q.tool_results().iter().any(|t| t.to_string().contains("add a rollback step"))
        })?;
        let pending = wait_pending(data, "the plan again", |p| p.len() == 1)?;
        if oldest {
            mimesis_cli(data, &["approve", pending[0]["id"].as_str().context("id")?])?;
        } else {
            r.s.choose("Yes")?;
        }
        r.s.wait_until("the reply after the plan", |screen, _| screen.contains("Plan approved, starting."))?;
        let last = r.s.api.requests().last().and_then(|q| q.tool_results().pop()).context("the plan's result")?;
        ensure!(last["is_error"] != json!(true), "the plan was approved: {last}");
        let answers = answer_items(r, data, &id)?;
        let texts: Vec<&Value> = answers.iter().map(|a| &a["text"]).collect();
        let mut expected = vec![json!("Denied from the command line, telling Claude: “add a rollback step”")];
        if oldest {
            expected.push(json!("Approved once from the command line"));
        }
        ensure!(texts.iter().copied().eq(expected.iter()), "the answers in the timeline: {texts:?}");
        Ok(())
    })
}

/// Issue 12: with no Mimesis running to answer, the `PermissionRequest` hook returns at once
/// with no decision (within 100 ms of starting) and Claude Code's own dialog stays in the
/// terminal, where the user answers it.
#[test]
fn with_no_face_the_dialog_stays_in_the_terminal() -> Result<()> {
    each_version("no face", |v| {
        with_hooked(v, "no face", &["--permission-mode", "default"], false, |r, data| {
            r.s.api.push(Reply::tool_use("Bash", json!({"command": "echo t > t.txt", "description": "t"})));
            r.s.api.push(Reply::text("Wrote t."));
            r.s.type_line("write t")?;
            // The hook spools the event first thing; from then on it must be gone at once.
            let spooled = || -> bool {
                std::fs::read_dir(data.join("hooks")).into_iter().flatten().flatten().any(|e| {
                    std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("\"event\":\"PermissionRequest\""))
                })
            };
            let hooks_running = || -> bool {
                let needle = data.to_string_lossy().into_owned();
                std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
                    std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                        let c = String::from_utf8_lossy(&c);
                        c.contains("hook") && c.contains(needle.as_str())
                    })
                })
            };
            let deadline = Instant::now() + NOTICE;
            while !spooled() {
                ensure!(Instant::now() < deadline, "the hook never ran");
                std::thread::sleep(Duration::from_millis(2));
            }
            let t0 = Instant::now();
            while hooks_running() {
                ensure!(t0.elapsed() < Duration::from_millis(100), "the hook still runs 100 ms after it started");
                std::thread::sleep(Duration::from_millis(2));
            }
            eprintln!("[approvals] {v}: no face: the hook gone {} ms after its event", t0.elapsed().as_millis());
            r.s.wait_until("the dialog in the terminal", |screen, _| screen.contains("Do you want to proceed?"))?;
            r.s.choose("Yes")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Wrote t."))?;
            ensure!(r.s.home.project_dir().join("t.txt").exists(), "answered in the terminal, the command ran");
            Ok(())
        })
    })
}

/// Another machine's real session (issue 13): the real CLI's config root served by a real
/// sshd on loopback. `ls --host` over ssh says of the session what `ls` says on the machine
/// itself (status, goal, model, usage, cost, liveness, its registry name and mode), plus
/// its host.
#[test]
fn a_real_cli_session_on_another_machine() -> Result<()> {
    use mimesis_tests::sshd::Sshd;
    if !Sshd::available() {
        eprintln!("skipped: no sshd (scripts/setup.sh installs it)");
        return Ok(());
    }
    each_version("a session over ssh", |v| {
        with_run(v, "a session over ssh", &[], |r| {
            r.s.api.push(Reply::text("Hello from afar."));
            r.s.type_line("say hello from afar")?;
            r.s.wait_until("the reply", |screen, _| screen.contains("Hello from afar."))?;
            let id = r.session()?;
            r.status_is(&id, "waiting_for_input")?;
            let dir = tempfile::tempdir()?;
            let base = dir.path().canonicalize()?;
            let sshd = Sshd::start(&base.join("sshd"))?;
            sshd.add_alias("real", r.s.home.config_dir(), &base.join("remote-data"))?;
            let ls = |extra: &[&str]| -> Result<Vec<Value>> {
                let out = std::process::Command::new(mimesis_tests::supervised::mimesis()?)
                    .args(["ls", "--json"])
                    .args(extra)
                    .env("CLAUDE_CONFIG_DIR", r.s.home.config_dir())
                    .env("MIMESIS_DATA_DIR", base.join("local-data"))
                    .env("MIMESIS_SSH_CONFIG", &sshd.client_config)
                    .stdin(std::process::Stdio::null())
                    .output()?;
                ensure!(out.status.success(), "ls {extra:?}: {}", String::from_utf8_lossy(&out.stderr));
                Ok(serde_json::from_slice::<Vec<Value>>(&out.stdout)?)
            };
            let pick = |rows: &[Value]| rows.iter().find(|s| s["sessionId"] == json!(id)).cloned();
            const KEYS: [&str; 11] = [
                "status",
                "goal",
                "model",
                "usage",
                "cost",
                "live",
                "pid",
                "name",
                "permissionMode",
                "cwd",
                "lastActivityAt",
            ];
            let facts = |row: &Value| KEYS.map(|k| row[k].clone());
            // The registry says idle a moment before the transcript has the reply (its model,
            // its usage): `ls` here and over ssh are compared only while the local row holds
            // still across the remote read, the transcript's writes of the turn's end over.
            let deadline = Instant::now() + Duration::from_secs(30);
            let (here, there) = loop {
                let before = pick(&ls(&[])?).context("the local row")?;
                let there =
                    pick(&ls(&["--no-local", "--host", "real", "--install-helper"])?).context("the remote row")?;
                let here = pick(&ls(&[])?).context("the local row")?;
                if facts(&before) == facts(&here) {
                    break (here, there);
                }
                ensure!(Instant::now() < deadline, "the local row never held still for 30 s: {before} / {here}");
                std::thread::sleep(Duration::from_millis(200));
            };
            ensure!(
                there["host"] == json!("real") && here["host"].is_null(),
                "host: {} / {}",
                here["host"],
                there["host"]
            );
            for key in KEYS {
                ensure!(here[key] == there[key], "{key} differs over ssh: here {} there {}", here[key], there[key]);
            }
            ensure!(there["live"] == json!(true), "the remote row is not live: {there}");
            Ok(())
        })
    })
}
