//! Supervised sessions for tests: the real [`Supervisor`] over real PTYs, running the
//! stand-in agent (or the real CLI), in an isolated config root and data dir, with every
//! supervision event recorded.
//!
//! The binaries are not built here: `cargo build -p mimesis-standin -p mimesis-cli` first
//! (`cargo test --workspace` builds them).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::{AgentCommand, Limits, SupervisionEvent, SupervisionState};
use mimesis_core::{ManualClock, SessionId, Timestamp};
use mimesis_watch::Engine;
use mimesis_wiring::{Follow, Mimesis, Options, SuperviseOptions, Supervisor};

/// `target/<profile>/<name>`, next to the test binary's `deps/` folder.
pub fn built_binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().and_then(Path::parent).context("the test binary has no target dir")?;
    let p = dir.join(name);
    if !p.is_file() {
        bail!("{} is not built: run `cargo build -p mimesis-standin -p mimesis-cli` first", p.display());
    }
    Ok(p)
}

/// The stand-in agent.
pub fn standin() -> Result<PathBuf> {
    built_binary("mimesis-standin-agent")
}

/// The `mimesis` CLI.
/// `mimesis hook` as Claude Code runs it at a permission dialog of `session` for `tool`
/// (stdout piped), with the data dir `data`.
pub fn permission_hook(
    data: &Path,
    session: &str,
    tool: &str,
    input: serde_json::Value,
) -> Result<std::process::Child> {
    use std::io::Write;
    let payload = serde_json::json!({"session_id": session, "hook_event_name": "PermissionRequest",
        "cwd": "/home/dev/src/webview-fixture", "tool_name": tool, "tool_input": input});
    let mut child = std::process::Command::new(mimesis()?)
        .arg("hook")
        .env("MIMESIS_DATA_DIR", data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    child.stdin.take().context("stdin")?.write_all(payload.to_string().as_bytes())?;
    Ok(child)
}

/// What a hook printed for Claude Code once it ended.
pub async fn hook_output(child: std::process::Child) -> Result<serde_json::Value> {
    let out =
        tokio::time::timeout(Duration::from_secs(20), tokio::task::spawn_blocking(move || child.wait_with_output()))
            .await
            .context("the hook never returned")???;
    anyhow::ensure!(out.status.success(), "the hook failed: {out:?}");
    serde_json::from_slice(&out.stdout).with_context(|| format!("{:?}", String::from_utf8_lossy(&out.stdout)))
}

pub fn mimesis() -> Result<PathBuf> {
    built_binary("mimesis")
}

/// Short limits for tests; everything else as in the spec.
pub fn quick_limits() -> Limits {
    Limits { kill_after: Duration::from_secs(2), recovery_retry_delay: Duration::from_millis(300), ..Limits::default() }
}

/// A supervisor in a temporary home, started through the wiring both faces use
/// ([`Mimesis::start`]), recording its events.
pub struct Supervised {
    pub dir: tempfile::TempDir,
    pub config_root: PathBuf,
    pub data_dir: PathBuf,
    pub cwd: PathBuf,
    pub mimesis: Mimesis,
    pub sup: Supervisor,
    /// The engine, when the test follows the whole roster (else it follows only the
    /// supervised sessions, as `mimesis run` does).
    pub engine: Option<Engine>,
    events: Arc<Mutex<Vec<Arc<SupervisionEvent>>>>,
}

impl Supervised {
    /// The stand-in agent with `limits`.
    pub async fn standin(limits: Limits) -> Result<Supervised> {
        Self::start(AgentCommand::new(standin()?), limits, false, |_| {}).await
    }

    /// The stand-in agent with `limits`, on a clock that only moves when the test says:
    /// [`Supervised::advance`]. Processes and PTYs are real; only the policy's timers wait.
    pub async fn standin_on_manual_clock(limits: Limits) -> Result<(Supervised, Arc<ManualClock>)> {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000)));
        let c = clock.clone();
        let s = Self::start(AgentCommand::new(standin()?), limits, false, move |opts| opts.clock = c).await?;
        Ok((s, clock))
    }

    /// A line Mimesis typed for the session (a queued prompt) gets its Enter once the
    /// agent's input row shows it and the injected clock has moved on by the pause after
    /// the text: waits for the row (or for the stand-in to have taken the line already: an
    /// Enter the user typed after the session was back went at once), then moves the clock.
    pub async fn enter_typed(&self, clock: &ManualClock, id: &SessionId, text: &str) -> Result<()> {
        let (typed, taken) = (format!("❯ {text}"), format!("> {text}"));
        self.wait_screen(id, &format!("{typed:?} or {taken:?} on screen"), Duration::from_secs(20), |rows| {
            rows.iter().any(|r| r.contains(&typed) || r.contains(&taken))
        })
        .await?;
        self.advance(clock, mimesis_core::supervision::keys::ENTER_PAUSE).await;
        Ok(())
    }

    /// Moves a manual clock and lets every timer see it (waits until the sessions took
    /// the tick).
    pub async fn advance(&self, clock: &ManualClock, by: Duration) {
        clock.advance(by);
        self.sup.tick().await;
        // `tick` returns once the fleet took it; a session takes its tick in order with
        // any command, so a round-trip to each one proves it was handled.
        for (id, _) in self.sup.sessions() {
            let _ = self.sup.screen(&id).await;
        }
    }

    /// Any agent; `roster`: the engine follows every session (the app) rather than only
    /// the supervised ones (`mimesis run`); `tweak` may change the options before the start.
    pub async fn start(
        agent: AgentCommand,
        limits: Limits,
        roster: bool,
        tweak: impl FnOnce(&mut Options),
    ) -> Result<Supervised> {
        let dir = tempfile::Builder::new().prefix("mimesis-sup-").tempdir()?;
        let base = dir.path().canonicalize()?;
        let config_root = base.join(".claude");
        let data_dir = base.join("data");
        let cwd = base.join("project");
        std::fs::create_dir_all(&config_root)?;
        std::fs::create_dir_all(&cwd)?;
        Self::start_in(dir, config_root, data_dir, cwd, agent, Some(limits), roster, tweak).await
    }

    /// `limits`: fixed for the test (`None`: the stored settings', as in the app).
    #[allow(clippy::too_many_arguments)]
    pub async fn start_in(
        dir: tempfile::TempDir,
        config_root: PathBuf,
        data_dir: PathBuf,
        cwd: PathBuf,
        agent: AgentCommand,
        limits: Option<Limits>,
        roster: bool,
        tweak: impl FnOnce(&mut Options),
    ) -> Result<Supervised> {
        // The ledger is the fleet database in `data_dir`, as in the app and `mimesis run`.
        let mut supervise = SuperviseOptions::new(config_root.clone());
        supervise.agent = Some(agent);
        supervise.limits = limits;
        supervise.config_root_env = true;
        // Test binaries run many tests in one process: adopting every orphan of the
        // process would reach other tests' children.
        supervise.subreaper = false;
        supervise.size = Some((100, 30));
        let mut opts = Options::watching(vec![config_root.clone()], data_dir.clone());
        opts.follow = if roster { Follow::Everything } else { Follow::SupervisedOnly };
        opts.poll_interval = Duration::from_millis(200);
        opts.supervise = Some(supervise);
        tweak(&mut opts);
        let mimesis = Mimesis::start(opts).await;
        let sup = mimesis.supervisor().await.context("the supervisor started")?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut rx = sup.subscribe();
        let sink = events.clone();
        tokio::spawn(async move {
            while let Ok(ev) = rx.recv().await {
                sink.lock().unwrap().push(ev);
            }
        });
        let engine = roster.then(|| mimesis.engine().clone());
        Ok(Supervised { dir, config_root, data_dir, cwd, mimesis, sup, engine, events })
    }

    /// Stops every session and the engine (what the app does on quit).
    pub async fn shutdown(&self) {
        self.mimesis.shutdown().await;
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Arc<SupervisionEvent>> {
        self.events.lock().unwrap().clone()
    }

    /// The `type`s of the events so far, for one session (any id it went by).
    pub fn types(&self) -> Vec<&'static str> {
        self.events().iter().map(|e| e.type_name()).collect()
    }

    pub fn count(&self, ty: &str) -> usize {
        self.events().iter().filter(|e| e.type_name() == ty).count()
    }

    /// Waits until `n` events of type `ty` have been seen; returns the last.
    pub async fn wait_event_n(&self, ty: &str, n: usize, timeout: Duration) -> Result<Arc<SupervisionEvent>> {
        let deadline = Instant::now() + timeout;
        loop {
            let found: Vec<_> = self.events().into_iter().filter(|e| e.type_name() == ty).collect();
            if found.len() >= n {
                return Ok(found[n - 1].clone());
            }
            if Instant::now() >= deadline {
                let mut detail = String::new();
                for (id, sup) in self.sup.sessions() {
                    let screen = self.sup.screen(&id).await.unwrap_or_default();
                    let proc_status = sup
                        .pid
                        .and_then(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
                        .map(|st| {
                            st.lines()
                                .filter(|l| l.starts_with("State") || l.starts_with("VmRSS"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .unwrap_or_default();
                    detail.push_str(&format!("\n{id}: {sup:?} [{proc_status}]\n{}", screen.join("\n")));
                }
                bail!("timed out after {timeout:?} waiting for {n}× {ty}; events: {:?}{detail}", self.types());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wait_event(&self, ty: &str, timeout: Duration) -> Result<Arc<SupervisionEvent>> {
        self.wait_event_n(ty, 1, timeout).await
    }

    /// Waits until the session's screen satisfies `pred`.
    pub async fn wait_screen(
        &self,
        id: &SessionId,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[String]) -> bool,
    ) -> Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            let rows = self.sup.screen(id).await.unwrap_or_default();
            if pred(&rows) {
                return Ok(rows);
            }
            if Instant::now() >= deadline {
                bail!("timed out after {timeout:?} waiting for {what}; events {:?}\n{}", self.types(), rows.join("\n"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `pred` has held on the session's screen for `settle` without a break (a
    /// dialog that ignores keys for a moment after it appears).
    pub async fn wait_settled(
        &self,
        id: &SessionId,
        what: &str,
        settle: Duration,
        timeout: Duration,
        pred: impl Fn(&[String]) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut since: Option<Instant> = None;
        loop {
            let rows = self.sup.screen(id).await.unwrap_or_default();
            if pred(&rows) {
                if since.get_or_insert_with(Instant::now).elapsed() >= settle {
                    return Ok(());
                }
            } else {
                since = None;
            }
            if Instant::now() >= deadline {
                bail!("{what} was never on screen for {settle:?} within {timeout:?}\n{}", rows.join("\n"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wait_text(&self, id: &SessionId, text: &str, timeout: Duration) -> Result<Vec<String>> {
        self.wait_screen(id, &format!("{text:?} on screen"), timeout, |rows| rows.iter().any(|r| r.contains(text)))
            .await
    }

    /// Waits until the stand-in (or the CLI) shows its idle prompt.
    pub async fn wait_prompt(&self, id: &SessionId, timeout: Duration) -> Result<Vec<String>> {
        self.wait_screen(id, "the idle prompt", timeout, |rows| {
            // The idle footer: "? for shortcuts", or a mode's line (2.1.330's "⏵⏵ auto mode
            // on (shift+tab to cycle)", plan mode's "⏸ plan mode on (shift+tab to cycle)").
            let footer = |r: &String| r.contains("? for shortcuts") || r.contains("(shift+tab to cycle)");
            rows.iter().any(footer) && !rows.iter().any(|r| r.contains("esc to interrupt"))
        })
        .await
    }

    pub async fn wait_state(&self, id: &SessionId, state: SupervisionState, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.sup.supervision(id).map(|s| s.state);
            if s == Some(state) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("timed out waiting for state {state:?} (now {s:?}); events {:?}", self.types());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the session's supervision satisfies `pred`: what the supervisor decides
    /// follows the agent's registry, screen and transcript on its own schedule.
    pub async fn wait_sup(
        &self,
        id: &SessionId,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&mimesis_core::supervision::Supervision) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let sup = self.sup.supervision(id);
            if sup.as_ref().is_some_and(&pred) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("timed out waiting for {what}: {sup:?}; events {:?}", self.types());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Types a line: the text, a pause, Enter (as a person would).
    pub async fn type_line(&self, id: &SessionId, text: &str) -> Result<bool> {
        let queued = self.sup.input(id, text.as_bytes()).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let q2 = self.sup.input(id, b"\r").await?;
        Ok(queued || q2)
    }

    /// The transcript path of session `id` started in this cwd.
    pub fn transcript(&self, id: &SessionId) -> PathBuf {
        TranscriptLocation::expected(&self.config_root, &self.cwd, id).path
    }

    /// The user prompts recorded in a transcript, in order.
    pub fn prompts(&self, id: &SessionId) -> Vec<String> {
        let text = std::fs::read_to_string(self.transcript(id)).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["type"] == "user")
            .filter_map(|v| v.pointer("/message/content").and_then(|c| c.as_str()).map(str::to_owned))
            .collect()
    }
}

/// Kills processes a test started indirectly (through a `mimesis run` it SIGKILLed, say)
/// when the test ends, passed or failed: each watched process and every member of its
/// session, but only while each is still the process that was watched (same start time).
#[derive(Default)]
pub struct ProcGuard {
    /// (PID, start ticks) of session leaders.
    leaders: Vec<(u32, u64)>,
}

impl ProcGuard {
    pub fn new() -> ProcGuard {
        ProcGuard::default()
    }

    /// Watches `pid` and its session (members that started no earlier than it).
    pub fn watch(&mut self, pid: u32) {
        if let Some(t) = mimesis_os::procs::start_ticks(pid) {
            self.leaders.push((pid, t));
        }
    }
}

impl Drop for ProcGuard {
    fn drop(&mut self) {
        use mimesis_os::procs;
        let stats = procs::all();
        for &(leader, t0) in &self.leaders {
            for s in stats.iter().filter(|s| s.state != 'Z') {
                let same_leader = s.pid == leader && s.start_ticks == t0;
                let member = s.session == leader && s.pid != leader && s.start_ticks >= t0;
                // The leader's PID still reserved means the session is still its own.
                let leader_ok = stats.iter().all(|l| l.pid != leader || l.start_ticks == t0);
                if same_leader || (member && leader_ok) {
                    procs::signal(s.pid, libc::SIGKILL);
                }
            }
        }
    }
}
