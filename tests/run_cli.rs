//! The `mimesis run` contract through the real binary (issue 3): flags, the
//! `--events-json` lines, exit codes, a terminal and a pipe on stdin.
//!
//! Needs `cargo build -p mimesis-standin -p mimesis-cli` (done by `cargo test --workspace`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::supervised::{mimesis, standin};
use serde_json::Value;

const T: Duration = Duration::from_secs(20);

struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    cwd: PathBuf,
    events: PathBuf,
}

impl Home {
    fn new() -> Result<Home> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let h = Home {
            root: base.join(".claude"),
            data: base.join("data"),
            cwd: base.join("project"),
            events: base.join("events.jsonl"),
            _dir: dir,
        };
        std::fs::create_dir_all(&h.root)?;
        std::fs::create_dir_all(&h.cwd)?;
        Ok(h)
    }

    fn command(&self) -> Result<Command> {
        let mut c = Command::new(mimesis()?);
        c.env("CLAUDE_CONFIG_DIR", &self.root).env("MIMESIS_DATA_DIR", &self.data).current_dir(&self.cwd);
        Ok(c)
    }

    /// `mimesis run` with a pipe on stdin, the stand-in agent, and an events file.
    fn spawn(&self, extra: &[&str]) -> Result<Run> {
        let mut c = self.command()?;
        c.arg("run").arg("--agent").arg(standin()?).arg("--events-json").arg(&self.events).args(extra);
        Ok(Run(c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?))
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
            .collect()
    }

    fn types(&self) -> Vec<String> {
        self.events().iter().map(|e| e["type"].as_str().unwrap_or("?").to_owned()).collect()
    }

    fn wait_type(&self, ty: &str) -> Result<Value> {
        let deadline = Instant::now() + T;
        loop {
            if let Some(e) = self.events().into_iter().find(|e| e["type"] == ty) {
                return Ok(e);
            }
            if Instant::now() > deadline {
                bail!("no {ty} event; events: {:?}", self.types());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A `mimesis run` that is killed if the test ends before it exited (a failed check must
/// not leave it and its agent running: without a terminal, stdin's end does not stop it).
/// Killing it closes the agent's terminal, which ends the agent.
struct Run(Child);

impl std::ops::Deref for Run {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Run {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn wait(child: &mut Child) -> Result<(i32, String)> {
    let deadline = Instant::now() + T;
    loop {
        if let Some(status) = child.try_wait()? {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                std::io::Read::read_to_string(&mut e, &mut err)?;
            }
            return Ok((status.code().unwrap_or(-1), err));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("mimesis run did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn type_line(child: &mut Child, line: &str) -> Result<()> {
    let stdin = child.stdin.as_mut().context("stdin")?;
    stdin.write_all(line.as_bytes())?;
    stdin.flush()?;
    std::thread::sleep(Duration::from_millis(150));
    stdin.write_all(b"\r")?;
    stdin.flush()?;
    Ok(())
}

fn common_fields(e: &Value, id: &str) -> Result<()> {
    ensure!(e["sessionId"] == id, "{e}");
    let at = e["at"].as_str().context("at")?;
    ensure!(at.len() == 24 && at.ends_with('Z'), "ISO-8601 with milliseconds: {at}");
    Ok(())
}

#[test]
fn usage_errors_exit_2_with_the_reason() -> Result<()> {
    let h = Home::new()?;
    for (args, needle) in [
        (vec!["--max-duration", "banana"], "not a duration"),
        (vec!["--idle-timeout", "5s"], "--idle-timeout: must be between 60 and 7200 seconds (1–120 min)"),
        (vec!["--resume", "../etc"], "not a valid session id"),
        (vec!["--crash-pattern", "(unclosed"], "--crash-pattern: is not a valid regular expression"),
        (vec!["--no-such-flag"], "unexpected argument"),
    ] {
        let out = h.command()?.arg("run").args(&args).stdin(Stdio::null()).output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.code() == Some(2), "{args:?}: {:?} {err}", out.status);
        ensure!(err.contains(needle), "{args:?}: {err}");
    }
    Ok(())
}

#[test]
fn a_missing_agent_fails_with_a_sentence() -> Result<()> {
    let h = Home::new()?;
    let out = h.command()?.args(["run", "--agent", "/nonexistent/claude"]).stdin(Stdio::null()).output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.code() == Some(1), "{:?}", out.status);
    ensure!(err.contains("cannot find the agent program") && err.contains("/nonexistent/claude"), "{err}");
    Ok(())
}

#[test]
fn the_duration_limit_writes_warning_and_termination_and_exits_0() -> Result<()> {
    let h = Home::new()?;
    // The warning is due at 90 % (4.5 s): a check stalled past 5 s on a loaded machine would
    // skip it, so the window is half a second wide.
    let mut child =
        h.spawn(&["--max-duration", "5s", "--duration-check", "100ms", "--grace", "1s", "--kill-after", "1s"])?;
    let (code, err) = wait(&mut child)?;
    ensure!(code == 0, "exit {code}: {err}");
    let ev = h.events();
    let types = h.types();
    ensure!(types == ["session_started", "session_warning", "session_terminated"], "{types:?}");
    let id = ev[0]["sessionId"].as_str().context("id")?.to_owned();
    for e in &ev {
        common_fields(e, &id)?;
    }
    let w = &ev[1];
    ensure!(w["reason"] == "duration" && w["remainingSeconds"].as_u64().is_some_and(|s| s <= 1), "{w}");
    ensure!(w["message"].as_str().is_some_and(|m| m.ends_with("Save your work.")), "{w}");
    let t = &ev[2];
    ensure!(t["reason"] == "duration_limit" && t["resumeSessionId"] == id.as_str(), "{t}");
    ensure!(t["message"] == "Session ended (5-second limit reached).", "{t}");
    ensure!(err.contains("Session ended (5-second limit reached)."), "the sentence on the terminal: {err}");
    Ok(())
}

#[test]
fn the_agents_final_exit_code_is_the_exit_code() -> Result<()> {
    let h = Home::new()?;
    let mut c = h.command()?;
    c.args(["run", "--agent", "sh", "--events-json"]).arg(&h.events).args(["--", "-c", "exit 3"]);
    let mut child = Run(c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?);
    let (code, err) = wait(&mut child)?;
    ensure!(code == 3, "exit {code}: {err}");
    ensure!(h.types() == ["session_started", "error", "session_exited"], "{:?}", h.types());
    let ev = h.events();
    ensure!(ev[1]["exitCode"] == 3 && ev[2]["exitCode"] == 3, "{ev:?}");
    Ok(())
}

#[test]
fn stdin_without_a_terminal_is_typed_and_a_crash_is_recovered() -> Result<()> {
    let h = Home::new()?;
    let mut child = h.spawn(&[])?;
    let started = h.wait_type("session_started")?;
    let id = started["sessionId"].as_str().context("id")?.to_owned();
    type_line(&mut child, "hello from a pipe")?;
    let transcript =
        h.root.join("projects").join(mimesis_engine::roots::project_dir_name(&h.cwd)).join(format!("{id}.jsonl"));
    wait_file(&transcript, "hello from a pipe")?;
    wait_file(&transcript, "turn_duration")?;
    type_line(&mut child, "crash")?;
    let c = h.wait_type("crash_detected")?;
    ensure!(c["deferred"] == false, "{c}");
    let r = h.wait_type("session_recovered")?;
    ensure!(r["message"] == "Session recovered automatically.", "{r}");
    common_fields(&r, &id)?;
    std::thread::sleep(Duration::from_millis(500));
    type_line(&mut child, "/exit")?;
    let (code, err) = wait(&mut child)?;
    ensure!(code == 0, "exit {code}: {err}");
    let last = h.events().pop().context("events")?;
    ensure!(last["type"] == "session_exited" && last["exitCode"] == 0, "{last}");
    Ok(())
}

#[test]
fn resuming_an_unknown_session_fails_like_the_cli() -> Result<()> {
    let h = Home::new()?;
    let mut child = h.spawn(&["--resume", "0b5e8a0e-0000-4000-8000-00000000dead"])?;
    let (code, _) = wait(&mut child)?;
    ensure!(code == 1, "exit {code}");
    let err = h.wait_type("error")?;
    ensure!(err["message"] == "No conversation found with session ID: 0b5e8a0e-0000-4000-8000-00000000dead", "{err}");
    Ok(())
}

fn wait_file(path: &Path, needle: &str) -> Result<()> {
    let deadline = Instant::now() + T;
    while !std::fs::read_to_string(path).unwrap_or_default().contains(needle) {
        ensure!(Instant::now() < deadline, "{needle:?} never appeared in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[test]
fn in_a_terminal_keys_go_through_raw_and_resizes_are_forwarded() -> Result<()> {
    let h = Home::new()?;
    let mut pty = Pty::spawn(
        PtyCommand::new(mimesis()?)
            .args(["run", "--agent"])
            .arg(standin()?)
            .inherit_env()
            .env("CLAUDE_CONFIG_DIR", &h.root)
            .env("MIMESIS_DATA_DIR", &h.data)
            .env("TERM", "xterm-256color")
            .cwd(&h.cwd)
            .size(90, 25),
    )?;
    pty.wait_for_text("? for shortcuts", T)?;
    let rule_width =
        |s: &mimesis_tests::pty::Screen| s.rows.iter().find(|r| r.starts_with('─')).map(|r| r.chars().count());
    ensure!(rule_width(&pty.screen()) == Some(90), "the agent got the terminal's size");
    pty.resize(70, 25)?;
    pty.send("x")?; // any redraw after the resize
    pty.wait_for("a redraw at the new width", T, |s| rule_width(s) == Some(70))?;
    pty.send("\x7fhello")?;
    std::thread::sleep(Duration::from_millis(150));
    pty.send("\r")?;
    pty.wait_for_text("Echo: hello", T)?;
    pty.send("/exit")?;
    std::thread::sleep(Duration::from_millis(150));
    pty.send("\r")?;
    let status = pty.wait_exit(T)?;
    ensure!(status.exit_code() == 0, "{status:?}");
    Ok(())
}
