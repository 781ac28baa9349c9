//! Budgets (issue 36) through the real `mimesis run` and the stand-in agent, whose replies
//! name a priced model: the transcript's spend crosses a tiny budget, the session is warned
//! at 80 %, suspended at its next idle moment with the reason `budget`, and goes on with
//! `--resume` once the budget is raised, nothing lost.
//!
//! Needs `cargo build -p mimesis-standin -p mimesis-cli` (done by `cargo test --workspace`).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_tests::supervised::{mimesis, standin};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);
/// Each stand-in reply: 10 input and 5 output tokens of Opus 4.1 ($15 and $75 a million):
/// $0.000525. A budget of $0.0006 is 87.5 % spent after one reply, spent after two.
const MODEL: &str = "claude-opus-4-1";
const BUDGET: &str = "0.0006";

struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    cwd: PathBuf,
}

/// A `mimesis run` killed if the test ends first.
struct Run(Child, PathBuf);

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl Run {
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.1)
            .unwrap_or_default()
            // Whole lines only: the run may be writing the last one as it is read.
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
            .collect()
    }

    fn wait_for(&self, what: &str, f: impl Fn(&Value) -> bool) -> Result<Value> {
        let deadline = Instant::now() + T;
        loop {
            if let Some(e) = self.events().into_iter().find(|e| f(e)) {
                return Ok(e);
            }
            if Instant::now() > deadline {
                let types: Vec<_> = self.events().iter().map(|e| e["type"].to_string()).collect();
                bail!("no {what}; events: {types:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self.0.stdin.as_mut().context("stdin")?;
        stdin.write_all(bytes)?;
        stdin.flush()?;
        Ok(())
    }

    fn wait_exit(&mut self) -> Result<(i32, String)> {
        let deadline = Instant::now() + T;
        loop {
            if let Some(status) = self.0.try_wait()? {
                let mut err = String::new();
                if let Some(mut e) = self.0.stderr.take() {
                    std::io::Read::read_to_string(&mut e, &mut err)?;
                }
                return Ok((status.code().unwrap_or(-1), err));
            }
            ensure!(Instant::now() < deadline, "mimesis run did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Home {
    fn new() -> Result<Home> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let h = Home { root: base.join(".claude"), data: base.join("data"), cwd: base.join("project"), _dir: dir };
        std::fs::create_dir_all(&h.root)?;
        std::fs::create_dir_all(&h.cwd)?;
        Ok(h)
    }

    fn command(&self) -> Result<Command> {
        let mut c = Command::new(mimesis()?);
        c.env("CLAUDE_CONFIG_DIR", &self.root).env("MIMESIS_DATA_DIR", &self.data).current_dir(&self.cwd);
        Ok(c)
    }

    fn run(&self, events: &str, extra: &[&str]) -> Result<Run> {
        let events = self.data.parent().context("home")?.join(events);
        let mut c = self.command()?;
        c.arg("run").arg("--agent").arg(standin()?).arg("--events-json").arg(&events).args(extra);
        c.env("MIMESIS_STANDIN_MODEL", MODEL);
        Ok(Run(c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?, events))
    }

    /// The session's transcript.
    fn transcript(&self, id: &str) -> String {
        let projects = self.root.join("projects");
        let Ok(dirs) = std::fs::read_dir(projects) else { return String::new() };
        dirs.filter_map(Result::ok)
            .find_map(|d| std::fs::read_to_string(d.path().join(format!("{id}.jsonl"))).ok())
            .unwrap_or_default()
    }
}

fn is_budget_warning(e: &Value) -> bool {
    e["type"] == "session_warning" && e["reason"] == "budget"
}

#[test]
fn a_session_over_its_budget_is_suspended_at_idle_and_goes_on_with_resume() -> Result<()> {
    let h = Home::new()?;
    let mut run = h.run("first.jsonl", &["--budget-usd", BUDGET])?;
    run.type_bytes(b"hello\r")?;
    let warning = run.wait_for("the 80 % warning", is_budget_warning)?;
    ensure!(warning["message"].as_str().is_some_and(|m| m.contains("this session's budget of $0.0006")), "{warning}");
    let id = warning["sessionId"].as_str().context("id")?.to_owned();
    ensure!(!run.events().iter().any(|e| e["type"] == "session_suspended"), "under budget: not suspended");

    run.type_bytes(b"again\r")?;
    let suspended = run.wait_for("the suspension", |e| e["type"] == "session_suspended")?;
    ensure!(suspended["reason"] == "budget", "{suspended}");
    ensure!(suspended["message"].as_str().is_some_and(|m| m.contains("Raise the budget")), "{suspended}");
    let events = run.events();
    ensure!(events.iter().filter(|e| is_budget_warning(e)).count() == 2, "80 % once, then 100 %: {events:?}");
    // Suspended at an idle moment: the second turn was whole in the transcript.
    let transcript = h.transcript(&id);
    ensure!(transcript.matches("\"turn_duration\"").count() == 2, "{transcript}");

    // Ctrl-C alone leaves the suspended session (a message to it is kept, not sent,
    // while the budget holds: core's policy tests).
    run.type_bytes(b"\x03")?;
    let (code, err) = run.wait_exit()?;
    ensure!(code == 0, "exit {code}: {err}");
    ensure!(!run.events().iter().any(|e| e["type"] == "session_resumed"), "{:?}", run.events());

    // Raised: `--resume` goes on with the same conversation.
    let mut run = h.run("second.jsonl", &["--resume", &id, "--budget-usd", "1"])?;
    run.type_bytes(b"third\r")?;
    let deadline = Instant::now() + T;
    while h.transcript(&id).matches("\"turn_duration\"").count() < 3 {
        ensure!(Instant::now() < deadline, "no third turn: {}", h.transcript(&id));
        std::thread::sleep(Duration::from_millis(20));
    }
    let transcript = h.transcript(&id);
    for said in ["hello", "again", "third"] {
        ensure!(transcript.contains(&format!("\"content\":\"{said}\"")), "{said} in {transcript}");
    }
    ensure!(!run.events().iter().any(|e| e["type"] == "session_suspended"), "{:?}", run.events());
    drop(run.0.stdin.take());
    let (code, err) = run.wait_exit()?;
    ensure!(code == 0, "exit {code}: {err}");
    Ok(())
}

#[test]
fn a_bad_budget_is_refused_with_a_sentence() -> Result<()> {
    let h = Home::new()?;
    for (value, needle) in [
        ("-1", "must be more than $0"),
        ("NaN", "must be a number of dollars"),
        ("1e12", "must be at most $1,000,000.00"),
        ("five", "is not a number of dollars"),
    ] {
        let out = h.command()?.args(["run", "--budget-usd", value]).stdin(Stdio::null()).output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.code() == Some(2), "{value}: {:?} {err}", out.status);
        ensure!(err.contains(needle), "{value}: {err}");
    }
    Ok(())
}

/// The fleet's daily budget, in the app's wiring (every session followed): two supervised
/// sessions spend together past it, and each is suspended at its next idle moment with the
/// reason `budget`; the user is told once, of the fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleets_daily_budget_suspends_every_supervised_session() -> Result<()> {
    use mimesis_core::supervision::budget::Usd;
    use mimesis_core::supervision::{AgentCommand, EventKind, Limits};
    use mimesis_tests::supervised::{Supervised, quick_limits};

    let mut agent = AgentCommand::new(standin()?);
    agent.env.push(("MIMESIS_STANDIN_MODEL".into(), MODEL.into()));
    // One reply ($0.000525) is 66 % of it; two are past it.
    let limits = Limits { daily_budget_usd: Some(Usd(0.0008)), ..quick_limits() };
    let s = Supervised::start(agent, limits, true, |_| {}).await?;
    let a = s.sup.create(&s.cwd, None).await?;
    let b = s.sup.create(&s.cwd, None).await?;
    s.type_line(&a, "hello").await?;
    s.type_line(&b, "hi").await?;
    s.wait_event_n("session_suspended", 2, T).await?;
    let events = s.events();
    let suspended: Vec<_> = events.iter().filter(|e| e.type_name() == "session_suspended").collect();
    for e in &suspended {
        let EventKind::SessionSuspended { reason, message } = &e.kind else { unreachable!() };
        ensure!(reason == "budget", "{e:?}");
        ensure!(message.contains("today's budget for all sessions of $0.0008"), "{message}");
    }
    let mut ids: Vec<_> = suspended.iter().map(|e| e.session_id.clone()).collect();
    ids.sort();
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    ensure!(ids == both, "{ids:?}");
    let told: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::SessionWarning { reason, message, .. }
            if reason == "budget" && message.contains("today's budget for all sessions"))
        })
        .collect();
    ensure!(told.len() == 1, "the fleet's budget is said once: {told:?}");
    s.shutdown().await;
    Ok(())
}
