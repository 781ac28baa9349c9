//! Claude Code's own background service (2.1.332, docs/claude-code-observed.md "The
//! background service"), driven for real in an isolated home: `claude --bg PROMPT`
//! dispatches a session to a per-user service (`claude daemon run`, started on demand),
//! `claude agents --json` lists the sessions, `claude attach|logs|stop|respawn|rm <id>`
//! act on one, `claude daemon stop --any` ends the service and its sessions.
//!
//! [`Background`] runs those verbs for one [`ClaudeHome`] and reads the files the service
//! writes (`daemon.status.json`, `daemon/roster.json`, `jobs/<id>/state.json` and
//! `timeline.jsonl`, the sessions' `sessions/<pid>.json`). Dropping it stops the service
//! through Claude Code's own verb and waits until no process of the home is left: nothing
//! of the service is ever killed behind its back, and nothing outlives the test. Declare it
//! after the [`ClaudeHome`] (and the mock API), so it is dropped first.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::claude::{CLAUDE_CODE_NEWEST, ClaudeHome, ensure_claude_version};
use crate::mock_api::MockApi;
use crate::pty::{Pty, PtyCommand};

/// How long the service may take to end every process of the home after `claude daemon
/// stop --any` (observed: 0.6 s with one session; its PTY hosts linger up to ~13 s with
/// eight).
pub const SHUTDOWN: Duration = Duration::from_secs(30);
/// How often the waits re-read the files.
const POLL: Duration = Duration::from_millis(20);

/// What a verb printed and how it exited.
#[derive(Debug, Clone)]
pub struct Verb {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Verb {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// The background service of one isolated home.
pub struct Background {
    claude: PathBuf,
    config_dir: PathBuf,
    project_dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Background {
    /// For the CLI `claude` (2.1.332 or later) in `home`. Starts nothing: the first
    /// [`Background::dispatch`] or [`Background::attach`] starts the service.
    pub fn new(home: &ClaudeHome, claude: &Path) -> Background {
        Background {
            claude: claude.to_path_buf(),
            config_dir: home.config_dir().to_path_buf(),
            project_dir: home.project_dir().to_path_buf(),
            env: home.env(),
        }
    }

    /// `claude <args>` with the home's environment, in its project folder.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.claude);
        cmd.args(args).env_clear().envs(self.env.iter().cloned()).current_dir(&self.project_dir);
        cmd.stdin(std::process::Stdio::null());
        cmd
    }

    /// Runs `claude <args>` to its end (no terminal: stdin empty, output captured).
    pub fn run(&self, args: &[&str]) -> Result<Verb> {
        let out = self.command(args).output().with_context(|| format!("run claude {args:?}"))?;
        Ok(Verb {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// `claude --bg <args> <prompt>`: dispatches a session and returns its short id, the
    /// one `claude agents --json` lists as `id` (the first 8 characters of its session id).
    /// It prints `backgrounded · <id>` and the verbs that take it; the first dispatch also
    /// says "Starting background service…" on stderr.
    pub fn dispatch(&self, args: &[&str], prompt: &str) -> Result<String> {
        let mut all = vec!["--bg"];
        all.extend_from_slice(args);
        all.push(prompt);
        let verb = self.run(&all)?;
        ensure!(verb.ok(), "claude --bg failed: {verb:?}");
        parse_backgrounded(&verb.stdout).with_context(|| format!("no id in what claude --bg printed: {verb:?}"))
    }

    /// `claude agents --json` (with `--all`: stopped sessions too), parsed.
    pub fn agents(&self, all: bool) -> Result<Vec<Value>> {
        let args: &[&str] = if all { &["agents", "--json", "--all"] } else { &["agents", "--json"] };
        let verb = self.run(args)?;
        ensure!(verb.ok(), "claude agents --json failed: {verb:?}");
        serde_json::from_str(&verb.stdout).with_context(|| format!("claude agents --json printed {verb:?}"))
    }

    /// The entry `claude agents --json` (`--all`) lists for `id`.
    pub fn agent(&self, id: &str, all: bool) -> Result<Option<Value>> {
        Ok(self.agents(all)?.into_iter().find(|a| a.get("id").and_then(Value::as_str) == Some(id)))
    }

    /// Waits until `claude agents --json` lists `id` in `state`, up to `timeout`, and gives
    /// that entry: its list can say a state a moment after the job's file does, which
    /// Mimesis reads (once, in a cold CI run, `"state": "working"` while the file already said
    /// `tempo: "blocked"`).
    pub fn wait_agent_state(&self, id: &str, state: &Value, timeout: Duration) -> Result<Value> {
        let mut seen = None;
        self.wait(&format!("claude agents --json to list {id} as {state}"), timeout, |b| {
            seen = b.agent(id, false).ok().flatten().filter(|a| a.get("state") == Some(state));
            seen.is_some()
        })?;
        seen.context("listed")
    }

    /// `claude attach <id>` in a terminal of `cols`×`rows` (a PTY of ours): the session's
    /// own screen, keys go to it. [`Background::detach`] leaves it running.
    pub fn attach(&self, id: &str, cols: u16, rows: u16) -> Result<Pty> {
        let cmd = PtyCommand::new(self.claude.as_os_str())
            .args(["attach", id])
            .envs(self.env.iter().cloned())
            .cwd(&self.project_dir)
            .size(cols, rows);
        Pty::spawn(cmd)
    }

    /// Detaches an attached terminal the way a user does, with Ctrl+Z (← would open the
    /// agent view instead); the client exits 0 and the session goes on.
    pub fn detach(pty: &mut Pty, timeout: Duration) -> Result<portable_pty::ExitStatus> {
        pty.send("\x1a")?;
        pty.wait_exit(timeout)
    }

    /// `$CLAUDE_CONFIG_DIR`.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// `jobs/<id>/state.json`, if it is there and whole.
    pub fn job_state(&self, id: &str) -> Option<Value> {
        read_json(&self.config_dir.join("jobs").join(id).join("state.json"))
    }

    /// `jobs/<id>/timeline.jsonl`: one record per state change.
    pub fn job_timeline(&self, id: &str) -> Vec<Value> {
        std::fs::read_to_string(self.config_dir.join("jobs").join(id).join("timeline.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `daemon.status.json` (there while the service runs).
    pub fn daemon_status(&self) -> Option<Value> {
        read_json(&self.config_dir.join("daemon.status.json"))
    }

    /// `daemon/roster.json` (kept after the service ends, with no workers).
    pub fn roster(&self) -> Option<Value> {
        read_json(&self.config_dir.join("daemon").join("roster.json"))
    }

    /// The roster's worker for `id`: the running process of that session.
    pub fn worker(&self, id: &str) -> Option<Value> {
        self.roster()?.get("workers")?.get(id).cloned()
    }

    /// The live registry entries (`sessions/<pid>.json`) naming `jobId: id`, live or not.
    pub fn registry_of_job(&self, id: &str) -> Vec<(u32, Value)> {
        let Ok(rd) = std::fs::read_dir(self.config_dir.join("sessions")) else { return Vec::new() };
        let mut out: Vec<(u32, Value)> = rd
            .filter_map(Result::ok)
            .filter_map(|e| {
                let pid: u32 = e.path().file_stem()?.to_str()?.parse().ok()?;
                (e.path().extension()? == "json").then_some(())?;
                let v = read_json(&e.path())?;
                (v.get("jobId").and_then(Value::as_str) == Some(id)).then_some((pid, v))
            })
            .collect();
        out.sort_by_key(|(pid, _)| *pid);
        out
    }

    /// Polls `cond` every 20 ms until it holds, up to `timeout`.
    pub fn wait(&self, what: &str, timeout: Duration, mut cond: impl FnMut(&Self) -> bool) -> Result<Duration> {
        let t0 = Instant::now();
        loop {
            if cond(self) {
                return Ok(t0.elapsed());
            }
            if t0.elapsed() >= timeout {
                bail!("timed out after {timeout:?} waiting for {what}\n{}", self.diagnostics());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Every process whose environment names this home's config folder (the service, its
    /// PTY hosts, the sessions, an attached client): (pid, command line).
    pub fn processes(&self) -> Vec<(u32, String)> {
        let needle = format!("CLAUDE_CONFIG_DIR={}", self.config_dir.display()).into_bytes();
        let me = std::process::id();
        let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
        let mut out: Vec<(u32, String)> = rd
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me)
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_slice()))
            })
            .map(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                (pid, cmd.chars().take(160).collect())
            })
            .collect();
        out.sort();
        out
    }

    /// Ends the service through Claude Code's own verb, `claude daemon stop --any` (which
    /// stops its sessions too), and waits until no process of the home is left. An error
    /// names what outlived the wait; nothing is killed.
    pub fn shutdown(&self) -> Result<Duration> {
        let t0 = Instant::now();
        if self.daemon_status().is_some() || !self.processes().is_empty() {
            let verb = self.run(&["daemon", "stop", "--any"])?;
            ensure!(verb.ok(), "claude daemon stop --any: {verb:?}");
        }
        loop {
            let left = self.processes();
            if left.is_empty() {
                return Ok(t0.elapsed());
            }
            if t0.elapsed() >= SHUTDOWN {
                bail!(
                    "{} process(es) of the background service outlived `claude daemon stop --any`: {left:?}",
                    left.len()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The service's files and processes, for failure messages.
    pub fn diagnostics(&self) -> String {
        let log = std::fs::read_to_string(self.config_dir.join("daemon.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let jobs: Vec<String> = std::fs::read_dir(self.config_dir.join("jobs"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| {
                let id = e.file_name().to_string_lossy().into_owned();
                format!("{id}: {}", self.job_state(&id).map(|s| s.to_string()).unwrap_or_default())
            })
            .collect();
        format!(
            "=== daemon.status.json ===\n{:?}\n=== roster.json ===\n{:?}\n=== jobs ===\n{}\n=== processes ===\n{:?}\n=== daemon.log (last lines, newest first) ===\n{}\n",
            self.daemon_status(),
            self.roster(),
            jobs.join("\n"),
            self.processes(),
            tail.join("\n")
        )
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("[bg] {e:#}");
        }
    }
}

/// The short id in what `claude --bg` printed (`backgrounded · 3f2a9c1d`).
pub fn parse_backgrounded(stdout: &str) -> Option<String> {
    let rest = stdout.lines().find_map(|l| l.trim().strip_prefix("backgrounded · "))?;
    let id = rest.split_whitespace().next()?;
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric())).then(|| id.to_owned())
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The newest CLI, the scripted mock API and an isolated home for it, for a test alone in
/// its binary: the process takes the home's environment (Claude Code's verbs, which
/// Mimesis runs, inherit it) and the CLI as Mimesis's agent (`MIMESIS_AGENT`).
///
/// # Safety
/// Sets the process's environment: call it before any other thread of the process reads it
/// (the only test of its binary, first thing).
pub unsafe fn newest_in_process_env() -> Result<(PathBuf, MockApi, ClaudeHome)> {
    let claude = ensure_claude_version(CLAUDE_CODE_NEWEST)?;
    let api = MockApi::start()?;
    let home = ClaudeHome::for_version(&api.base_url(), CLAUDE_CODE_NEWEST)?;
    // SAFETY: the caller's promise (no other thread reads the environment yet).
    unsafe {
        for (k, v) in home.env() {
            std::env::set_var(k, v);
        }
        std::env::set_var("MIMESIS_AGENT", &claude);
    }
    Ok((claude, api, home))
}

/// Mimesis's wiring over `home` as the app starts it: the engine following every session
/// (polled every 200 ms), a supervisor whose agent is `claude` and whose limits are
/// `limits`, its data in `data`. Started in-process, with the process's environment
/// ([`newest_in_process_env`]).
pub async fn app_wiring(
    home: &ClaudeHome,
    claude: &Path,
    data: &Path,
    limits: mimesis_core::supervision::limits::Limits,
) -> mimesis_wiring::Mimesis {
    use mimesis_wiring::{Follow, Mimesis, Options, SuperviseOptions};
    let mut supervise = SuperviseOptions::new(home.config_dir().to_owned());
    supervise.agent = Some(mimesis_core::supervision::AgentCommand::new(claude));
    supervise.limits = Some(limits);
    supervise.subreaper = false;
    let mut opts = Options::watching(vec![home.config_dir().to_owned()], data.to_owned());
    opts.follow = Follow::Everything;
    opts.poll_interval = Duration::from_millis(200);
    opts.supervise = Some(supervise);
    Mimesis::start(opts).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_claude_bg_prints() {
        let out = "backgrounded · ab2c7b09\n  claude agents             list sessions\n  claude attach ab2c7b09    open in this terminal\n";
        assert_eq!(parse_backgrounded(out).as_deref(), Some("ab2c7b09"));
        assert_eq!(parse_backgrounded("Starting background service…\n"), None);
        assert_eq!(parse_backgrounded("backgrounded · ../x\n"), None);
    }
}
