//! What a session actor needs from the supervisor that owns it, as a trait: the actor
//! (one session) sits below the supervisor (the fleet) and never names it, so the two
//! do not depend on each other and an actor can be driven by a test host.
//! [`SupervisorConfig`] and [`Roster`] live here because both sides read them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::clock::{Clock, Mono, SystemClock, Timestamp};
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::AgentCommand;
use mimesis_core::supervision::event::SupervisionEvent;
use mimesis_core::supervision::ledger::{ProcessLedger, ProcessRecord};
use mimesis_core::supervision::limits::Limits;
use mimesis_core::supervision::policy::SessionPolicy;
use mimesis_core::supervision::view::Supervision;

use crate::process::{OsTerminals, Terminals};

/// Where each supervised session's supervision is shown: the engine's roster, connected
/// by the wiring. Called synchronously, in order, before the event that a change causes
/// is sent, so a listener that reads the roster on an event sees the state it is about.
pub trait Roster: Send + Sync {
    /// `supervision`: the session's state now, or `None` once it is no longer supervised.
    fn show(&self, location: TranscriptLocation, supervision: Option<Supervision>);
}

/// How the supervisor runs.
#[derive(Clone)]
pub struct SupervisorConfig {
    /// The program new sessions run ([`Supervisor::set_agent`] changes it later).
    pub agent: AgentCommand,
    /// The limits at start ([`Supervisor::set_limits`] changes them later).
    pub limits: Limits,
    pub clock: Arc<dyn Clock>,
    /// The Claude Code config root the agents write to: transcripts, shell snapshots.
    pub config_root: PathBuf,
    /// Set `CLAUDE_CONFIG_DIR` to this for the agents (None: they inherit the environment).
    pub config_root_env: Option<PathBuf>,
    pub ledger: Arc<dyn ProcessLedger>,
    /// Where supervised sessions are shown (the engine's roster), if anywhere.
    pub roster: Option<Arc<dyn Roster>>,
    /// Terminal size of a new session (cols, rows).
    pub size: (u16, u16),
    /// Output kept per session for re-attaching.
    pub scrollback_bytes: usize,
    /// Adopt orphaned grandchildren (PR_SET_CHILD_SUBREAPER) so the orphan scan reaps them.
    pub subreaper: bool,
    /// Kill what earlier, dead Mimesis processes left running (P11) at start.
    pub clean_previous: bool,
    /// Where this supervisor publishes its metrics for `mimesis metrics` (None: nowhere).
    pub metrics_dir: Option<PathBuf>,
    /// The data dir this supervisor's agents are marked with ([`fleet::OWNER_DATA_ENV`]):
    /// when it shuts down, every process that carries its marks is ended, wherever it went
    /// (P12); when it starts (with `clean_previous`), every process that carries the marks
    /// of a gone owner of this data dir (P11). None: neither.
    ///
    /// [`fleet::OWNER_DATA_ENV`]: mimesis_core::supervision::fleet::OWNER_DATA_ENV
    pub data_dir: Option<PathBuf>,
}

impl SupervisorConfig {
    /// The defaults: `claude`, the spec's limits, the system clock, processes recorded in
    /// `ledger`, no roster, metrics published nowhere.
    pub fn new(config_root: PathBuf, ledger: Arc<dyn ProcessLedger>) -> SupervisorConfig {
        SupervisorConfig {
            agent: AgentCommand::new("claude"),
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
            config_root,
            config_root_env: None,
            ledger,
            roster: None,
            size: (120, 40),
            scrollback_bytes: 2 * 1024 * 1024,
            subreaper: true,
            clean_previous: true,
            metrics_dir: None,
            data_dir: None,
        }
    }
}

/// The supervisor as one session's actor sees it.
pub(crate) trait Host: Send + Sync {
    fn config(&self) -> &SupervisorConfig;
    fn clock(&self) -> &dyn Clock;
    /// The program a new process of the session runs.
    fn agent(&self) -> AgentCommand;
    /// The session's state changed: show it (fleet rules, roster).
    fn publish(&self, id: &SessionId, sup: &Supervision, policy: &SessionPolicy, cwd: &Path);
    /// An event of the session, sent after its state was published.
    fn emit(&self, ev: SupervisionEvent);
    /// A measurement of the session's process.
    fn usage(&self, id: &SessionId, rss: u64, cpu_ticks: u64);
    fn process_started(&self, record: ProcessRecord);
    fn process_ended(&self, pid: u32);
    /// When the other supervised sessions' processes started.
    fn other_process_starts(&self, id: &SessionId) -> Vec<Timestamp>;
    /// A fresh start replaced a corrupted session under a new id.
    fn rename(&self, from: &SessionId, to: &SessionId, cwd: &Path);
    /// The actor ended.
    fn finished(&self, id: &SessionId);
    /// Where the session's processes start: real pseudo-terminals unless a test says so.
    fn terminals(&self) -> &dyn Terminals {
        &OsTerminals
    }

    /// The tokio instant at which the clock will read `t` (capped: a manual clock only
    /// moves when told, and `tick` re-evaluates then).
    fn instant_at(&self, t: Mono) -> tokio::time::Instant {
        tokio::time::Instant::now() + t.since(self.clock().mono()).min(Duration::from_secs(3600))
    }
}
