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
use mimesis_engine::supervise::{
    AgentCommand, Limits, SupervisionEvent, SupervisionState, Supervisor, SupervisorConfig,
};
use mimesis_engine::{Engine, SessionId};

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
pub fn mimesis() -> Result<PathBuf> {
    built_binary("mimesis")
}

/// Short limits for tests; everything else as in the spec.
pub fn quick_limits() -> Limits {
    Limits { kill_after: Duration::from_secs(2), recovery_retry_delay: Duration::from_millis(300), ..Limits::default() }
}

/// A supervisor in a temporary home, recording its events.
pub struct Supervised {
    pub dir: tempfile::TempDir,
    pub config_root: PathBuf,
    pub data_dir: PathBuf,
    pub cwd: PathBuf,
    pub sup: Supervisor,
    pub engine: Option<Engine>,
    events: Arc<Mutex<Vec<Arc<SupervisionEvent>>>>,
}

impl Supervised {
    /// The stand-in agent with `limits`.
    pub async fn standin(limits: Limits) -> Result<Supervised> {
        Self::start(AgentCommand::new(standin()?), limits, None, |_| {}).await
    }

    /// Any agent; `tweak` may change the config before the start.
    pub async fn start(
        agent: AgentCommand,
        limits: Limits,
        engine: Option<Engine>,
        tweak: impl FnOnce(&mut SupervisorConfig),
    ) -> Result<Supervised> {
        let dir = tempfile::Builder::new().prefix("mimesis-sup-").tempdir()?;
        let base = dir.path().canonicalize()?;
        let config_root = base.join(".claude");
        let data_dir = base.join("data");
        let cwd = base.join("project");
        std::fs::create_dir_all(&config_root)?;
        std::fs::create_dir_all(&cwd)?;
        Self::start_in(dir, config_root, data_dir, cwd, agent, limits, engine, tweak).await
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn start_in(
        dir: tempfile::TempDir,
        config_root: PathBuf,
        data_dir: PathBuf,
        cwd: PathBuf,
        agent: AgentCommand,
        limits: Limits,
        engine: Option<Engine>,
        tweak: impl FnOnce(&mut SupervisorConfig),
    ) -> Result<Supervised> {
        // The ledger is the fleet database in `data_dir`, as in the app and `mimesis run`.
        let mut config = SupervisorConfig::new(config_root.clone(), data_dir.clone());
        config.agent = agent;
        config.limits = limits;
        config.config_root_env = Some(config_root.clone());
        config.engine = engine.clone();
        // Test binaries run many tests in one process: adopting every orphan of the
        // process would reach other tests' children.
        config.subreaper = false;
        config.size = (100, 30);
        tweak(&mut config);
        let sup = Supervisor::start(config).await;
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut rx = sup.subscribe();
        let sink = events.clone();
        tokio::spawn(async move {
            while let Ok(ev) = rx.recv().await {
                sink.lock().unwrap().push(ev);
            }
        });
        Ok(Supervised { dir, config_root, data_dir, cwd, sup, engine, events })
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

    pub async fn wait_text(&self, id: &SessionId, text: &str, timeout: Duration) -> Result<Vec<String>> {
        self.wait_screen(id, &format!("{text:?} on screen"), timeout, |rows| rows.iter().any(|r| r.contains(text)))
            .await
    }

    /// Waits until the stand-in (or the CLI) shows its idle prompt.
    pub async fn wait_prompt(&self, id: &SessionId, timeout: Duration) -> Result<Vec<String>> {
        self.wait_screen(id, "the idle prompt", timeout, |rows| {
            rows.iter().any(|r| r.contains("? for shortcuts")) && !rows.iter().any(|r| r.contains("esc to interrupt"))
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

    /// Types a line: the text, a pause, Enter (as a person would).
    pub async fn type_line(&self, id: &SessionId, text: &str) -> Result<bool> {
        let queued = self.sup.input(id, text.as_bytes()).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let q2 = self.sup.input(id, b"\r").await?;
        Ok(queued || q2)
    }

    /// The transcript path of session `id` started in this cwd.
    pub fn transcript(&self, id: &SessionId) -> PathBuf {
        mimesis_engine::store::TranscriptLocation::expected(&self.config_root, &self.cwd, id).path
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
