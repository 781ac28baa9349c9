//! The real `mimesis` binary on a home of its own: a config dir with a project, a data dir,
//! sessions written as one-prompt transcripts, one-shot commands, and `mimesis watch
//! --json` with its events read line by line (hostile_files, approvals).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::supervised::mimesis;

/// How long a command or an awaited event may take.
pub const T: Duration = Duration::from_secs(20);

/// The project every session is written into.
pub const PROJECT: &str = "-work-p";

pub struct Home {
    _dir: tempfile::TempDir,
    /// The config dir (`CLAUDE_CONFIG_DIR`).
    pub root: PathBuf,
    /// The data dir (`MIMESIS_DATA_DIR`).
    pub data: PathBuf,
}

/// The id of session `n`.
pub fn id(n: u32) -> String {
    format!("aaaaaaaa-0000-4000-8000-{n:012}")
}

impl Home {
    pub fn new() -> Result<Home> {
        let dir = tempfile::tempdir()?;
        let base = dir.path().canonicalize()?;
        let h = Home { root: base.join(".claude"), data: base.join("data"), _dir: dir };
        std::fs::create_dir_all(h.project())?;
        Ok(h)
    }

    pub fn project(&self) -> PathBuf {
        self.root.join("projects").join(PROJECT)
    }

    pub fn transcript(&self, n: u32) -> PathBuf {
        self.project().join(format!("{}.jsonl", id(n)))
    }

    /// `mimesis` with this home's config and data dirs.
    pub fn command(&self) -> Result<Command> {
        let mut c = Command::new(mimesis()?);
        c.env("CLAUDE_CONFIG_DIR", &self.root).env("MIMESIS_DATA_DIR", &self.data).env_remove("MIMESIS_LOG");
        Ok(c)
    }

    /// A one-prompt session in `/work/p`.
    pub fn session(&self, n: u32, prompt: &str) -> Result<()> {
        let line = json!({"type": "user", "uuid": format!("u-{n}"), "timestamp": "2026-11-24T00:00:00.000Z",
            "cwd": "/work/p", "sessionId": id(n), "message": {"role": "user", "content": prompt}});
        std::fs::write(self.transcript(n), format!("{line}\n"))?;
        Ok(())
    }

    /// `mimesis <args>` fed `stdin`: its exit code, stdout and stderr.
    pub fn run(&self, args: &[&str], stdin: &[u8]) -> Result<(i32, String, String)> {
        let mut child =
            self.command()?.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        child.stdin.take().context("stdin")?.write_all(stdin)?;
        let out = crate::mimesis::wait_output(child, T)?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        ))
    }
}

/// `mimesis watch --json`, its stdout read line by line and its stderr kept, each on a
/// thread (so that a chatty log never blocks it). Killed when dropped.
pub struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// The events read so far.
    pub seen: Vec<Value>,
}

impl Watch {
    pub fn start(h: &Home) -> Result<Watch> {
        Self::spawn(h.command()?.args(["watch", "--json"]))
    }

    /// Under a limit of `files` open files, soft and hard (`ulimit -n`).
    pub fn start_limited(h: &Home, files: u32) -> Result<Watch> {
        let c = h.command()?;
        let mut sh = Command::new("sh");
        sh.args(["-c", &format!("ulimit -n {files} && exec \"$0\" watch --json")]).arg(c.get_program());
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        Self::spawn(&mut sh)
    }

    fn spawn(c: &mut Command) -> Result<Watch> {
        let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut stderr = child.stderr.take().context("stderr")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Ok(Watch { child, lines, stderr: Some(stderr), seen: Vec::new() })
    }

    /// Waits for an event that `about` holds for; how long it took.
    pub fn wait(&mut self, what: &str, about: impl Fn(&Value) -> bool) -> Result<Duration> {
        let started = Instant::now();
        let deadline = started + T;
        loop {
            if self.seen.iter().any(&about) {
                return Ok(started.elapsed());
            }
            let left = deadline.checked_duration_since(Instant::now()).with_context(|| format!("no event: {what}"))?;
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(serde_json::from_str(&l).with_context(|| format!("not JSON: {l}"))?),
                Err(_) => bail!("no event: {what}; saw {:?}", self.seen),
            }
        }
    }

    /// Waits for an event about session `n` whose goal is `goal`.
    pub fn wait_goal(&mut self, n: u32, goal: &str) -> Result<Duration> {
        self.wait(&format!("session {n} with goal {goal:?}"), |e| {
            (e["session"]["sessionId"] == id(n) && e["session"]["goal"] == goal)
                || (e["sessionId"] == id(n) && e["changes"]["goal"] == goal)
        })
    }

    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: signalling a child we started.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// SIGTERM, then the time until it exited (successfully), and its stderr.
    pub fn terminate(mut self) -> Result<(Duration, String)> {
        let started = Instant::now();
        self.signal(libc::SIGTERM);
        loop {
            if let Some(status) = self.child.try_wait()? {
                let took = started.elapsed();
                ensure!(status.success(), "watch ended with {status}");
                let err = self.stderr.take().map(|t| t.join().unwrap_or_default()).unwrap_or_default();
                return Ok((took, err));
            }
            if started.elapsed() > T {
                let _ = self.child.kill();
                bail!("watch ignored SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
