//! The supervision policy of one session: a pure state machine. Each call takes an
//! [`Input`] and `now` and returns the [`Effect`]s to carry out (spawn, write, signal,
//! emit an event, measure). It never touches a process, a file or a clock; the driver
//! (`super::actor`) feeds it and executes what it says, and tests drive it with instants.
//!
//! The rules, by SPEC id:
//! - P2 input is queued while no process can take it and delivered in order once the
//!   agent shows its prompt again.
//! - P4 a crash pattern while a turn runs (or a permission dialog shows) only marks the
//!   session `pendingCrashRecovery`; recovery waits for a safe idle — a finished turn, a
//!   rejected dialog, or a quiet spell of `idleTimeout` — and is graceful (`/exit`, then
//!   `--resume`). While idle it recovers at once, forced (Ctrl-C, SIGTERM, SIGKILL).
//!   Detections are debounced 30 s after a successful recovery, 5 s after a failed one;
//!   a pending recovery is retried on every tick once the failure debounce has passed.
//!   Only claude-like agents are recovered; others are monitored.
//! - P5 an abnormal exit is resumed after 2 s, at most 2 attempts; success says so,
//!   failure switches to one-shot mode; more than 2 consecutive crashes mark the session
//!   unhealthy and stop automatic recovery.
//! - P6 the idle timer starts when a turn completes, is reset by any input or output, and
//!   never suspends a busy session or one at a permission dialog.
//! - P8 the duration limit is checked on its interval: a warning at 90 %, at 100 % a grace
//!   for an in-flight turn, then interrupt and terminate.
//! - P9 / P10 RSS over the limit (or a full disk) flags `restart_pending`; the restart
//!   waits for the turn (grace; at 2x the limit at once), then resumes; a resume that is
//!   refused (corrupted session, EC-007) starts a fresh session.
//! - P13 the process is checked on an interval; a dead one goes through the crash path.
//! - One process per session: a spawn is only ever emitted when no process exists, and
//!   every process-related input carries the generation of the spawn it is about, so a
//!   late message about an old process can never act on a new one.

use std::collections::VecDeque;
use std::time::Duration;

use super::baseline::{MemoryBaseline, Verdict};
use super::budget::{Scope, SessionBudget};
use super::event::{EventKind, ReadyStatus, SupervisionEvent, wording};
use super::limit_clock::{DurationLimit, DurationVerdict, RestartLimit};
use super::limits::{Limits, SuspendMode};
use super::readiness::Readiness;
use super::view::{Mode, RestartHold, Supervision, SupervisionState, TerminatedReason};
use crate::clock::{Mono, Now, Timestamp};
use crate::ids::SessionId;
use crate::status::{HookSignal, HookState, RegistryState, Status};

pub use super::activity::Activity;

/// What the output monitor saw on the terminal screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScreenSignal {
    /// The screen's activity changed (level).
    Activity(Activity),
    /// A new "✻ Baked for 3s" line: a turn finished (edge).
    TurnDone,
    /// A crash pattern appeared (edge).
    Crash,
    /// The harness is gone and a bare shell prompt is left (edge).
    HarnessDead,
    /// `No conversation found with session ID: …` (edge).
    ResumeRejected,
}

/// How a process is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// `--session-id <id>`.
    Fresh,
    /// `--resume <id>`.
    Resume,
    /// `-p --resume <id> <prompt>` (one-shot mode).
    OneShot { prompt: String },
}

/// Signals sent to the session's process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sig {
    Term,
    Kill,
    Stop,
    Cont,
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Start the agent. Answer with [`Input::Spawned`] or [`Input::SpawnFailed`].
    Spawn {
        generation: u64,
        session_id: SessionId,
        launch: Launch,
    },
    /// Bytes to the PTY.
    Write(Vec<u8>),
    /// Type a line into the TUI: the text, then Enter once the TUI has taken the text (a
    /// TUI takes text and Enter arriving in one read as a paste, and would not submit it).
    TypeLine(Vec<u8>),
    /// Show bytes to attached terminals without sending them to the agent (one-shot echo).
    Echo(Vec<u8>),
    Signal(Sig),
    Emit(SupervisionEvent),
    /// Measure the process tree's RSS; answer with [`Input::Rss`].
    MeasureRss,
    /// Check the process is alive; answer with [`Input::Health`].
    CheckHealth,
    /// Remove the shell snapshots the killed process left behind (P9).
    DeleteShellSnapshots,
    /// Record the session as corrupted (EC-007) before starting a fresh one.
    ArchiveCorrupted {
        session_id: SessionId,
    },
    /// The session now goes by another id (EC-007 fresh start).
    Renamed {
        from: SessionId,
        to: SessionId,
    },
    /// Nothing more will happen: deleted, or stopped for shutdown.
    Finished,
}

/// Something that happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Spawned {
        generation: u64,
        pid: u32,
    },
    SpawnFailed {
        generation: u64,
        error: String,
    },
    /// The process is gone. `code` is its exit code, 128 + the signal when killed.
    /// `last_line` is the last non-empty screen line, for the error message.
    Exited {
        generation: u64,
        code: i32,
        last_line: Option<String>,
    },
    /// Output arrived.
    Output {
        generation: u64,
    },
    Screen {
        generation: u64,
        signal: ScreenSignal,
    },
    /// What the agent's own records say of it (the registry, hooks, transcript).
    Agent(AgentReport),
    /// RSS of the process tree, after [`Effect::MeasureRss`].
    Rss {
        generation: u64,
        bytes: u64,
    },
    /// After [`Effect::CheckHealth`].
    Health {
        generation: u64,
        alive: bool,
    },
    /// The config root's disk is full (P10): restart like for memory.
    DiskFull,
    /// The fleet is over its live-session cap and chose this session (P7).
    Suspend,
    Stop,
    Resume,
    Restart,
    Delete,
    /// Mimesis quits (P12): stop quietly, resumable.
    Shutdown,
    /// The supervisor was told to stop by a signal (named): stop, and say so.
    Signalled(String),
    /// The limits changed (the settings view): future checks use the new ones.
    Limits(Box<Limits>),
    /// Re-evaluate timers.
    Tick,
    /// Issue 36: what the session has spent so far (US dollars, its transcript's cost).
    Spend(f64),
    /// This session's own budget (`--budget-usd`, or raised by the user); `None`: the
    /// settings' `budgetUsd`.
    Budget(Option<f64>),
    /// The fleet's daily budget is reached (its spend and limit), or no longer.
    FleetBudget(Option<(f64, f64)>),
}

/// What the agent's own records say of it, for supervision (the wiring reads them from the
/// engine's roster), most exact first. The screen comes after all of these: a TUI redesign
/// must not break supervision.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AgentReport {
    /// The session's live registry entry (`sessions/<pid>.json`): the PID that wrote it and
    /// what it says. Only an entry of the supervised process itself counts.
    pub registry: Option<(u32, RegistryState)>,
    /// The newest hook event for the session.
    pub hook: Option<HookSignal>,
    /// When the newest transcript record was written (its own timestamp).
    pub last_record: Option<Timestamp>,
    /// The roster's status: all of the above plus time-based inference; the fallback.
    pub status: Status,
}

impl AgentReport {
    /// A report with only the roster's status.
    pub fn status(status: Status) -> AgentReport {
        AgentReport { status, ..AgentReport::default() }
    }
}

/// What happened to a piece of user input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Written,
    /// Kept until the session is back (P2).
    Queued,
    /// No process will ever take it unless the user resumes the session.
    Refused,
}

/// Keys that only interrupt or quit the agent: Ctrl-C and Ctrl-D.
fn only_interrupts(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, 0x03 | 0x04))
}

/// A process that shows nothing recognisable this long after its spawn is taken to be up.
pub const READY_FALLBACK: Duration = Duration::from_secs(30);
/// How long an interrupted turn has to wind down (write its interruption) before SIGTERM.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(1);
/// `/exit` is typed only once the agent's output has been quiet this long: Claude Code
/// writes a turn to its transcript a moment (~0.2 s) after the screen shows it, and an
/// `/exit` typed in between loses the turn (the resume then finds less, or nothing: EC-007).
pub const EXIT_SETTLE: Duration = Duration::from_secs(2);
/// More than this many crashes in a row: unhealthy (seed 003 §4).
pub const MAX_CONSECUTIVE_CRASHES: u32 = 2;
/// After the n-th automatic memory or disk restart within the start-limit window, the
/// next waits `RESTART_BACKOFF × 2^(n-1)`, at most [`RESTART_BACKOFF_MAX`].
pub use crate::supervision::limit_clock::{RESTART_BACKOFF, RESTART_BACKOFF_MAX};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RestartReason {
    Memory,
    Disk,
    User,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SuspendCause {
    Idle,
    Cap,
    Budget(Scope),
}

/// Why a process is being stopped, and so what happens once it is gone.
#[derive(Clone, Debug, PartialEq)]
enum StopWhy {
    Recover,
    Restart(RestartReason),
    Suspend(SuspendCause),
    Duration { incomplete: bool },
    User,
    Shutdown,
    Signal(String),
    Delete,
}

impl StopWhy {
    /// A later, weightier reason replaces an earlier one (a delete during a suspension).
    fn weight(&self) -> u8 {
        match self {
            StopWhy::Recover | StopWhy::Restart(_) | StopWhy::Suspend(_) => 0,
            StopWhy::Duration { .. } => 1,
            StopWhy::User => 2,
            StopWhy::Shutdown | StopWhy::Signal(_) => 3,
            StopWhy::Delete => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StopHow {
    /// `/exit` once the output settled ([`EXIT_SETTLE`]), then SIGTERM after `killAfter`,
    /// then SIGKILL.
    Graceful,
    /// Esc (the TUI's interrupt), SIGTERM a moment later, then SIGKILL (EC-003).
    Interrupt,
    /// Ctrl-C and SIGTERM at once, SIGKILL after `killAfter`.
    Forced,
    /// SIGTERM, SIGKILL after `killAfter`.
    Term,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// A graceful stop waits for the output to settle before `/exit` (see [`EXIT_SETTLE`]).
    Settling,
    ExitTyped,
    Termed,
    Killed,
}

/// What a spawn is for: decides what is announced when it comes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    Initial,
    Recovery,
    Restart(RestartReason),
    /// EC-007: a fresh session replacing a corrupted one.
    Fresh,
    ResumeSuspended,
    ResumeByUser,
    OneShot,
}

#[derive(Clone, Debug, PartialEq)]
enum Proc {
    None,
    Starting {
        generation: u64,
        pid: Option<u32>,
        since: Mono,
        launch: Launch,
        purpose: Purpose,
    },
    Live {
        generation: u64,
        pid: u32,
        since: Mono,
        purpose: Purpose,
        /// Started with `--resume`: a refusal can still show up (EC-007).
        resumed: bool,
    },
    Stopping {
        generation: u64,
        pid: Option<u32>,
        since: Mono,
        why: StopWhy,
        stage: Stage,
        next_at: Option<Mono>,
    },
}

impl Proc {
    fn generation(&self) -> Option<u64> {
        match self {
            Proc::None => None,
            Proc::Starting { generation, .. } | Proc::Live { generation, .. } | Proc::Stopping { generation, .. } => {
                Some(*generation)
            }
        }
    }
}

/// Resume attempts after a crash (P5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Retry {
    /// When the next attempt starts (None while one runs).
    at: Option<Mono>,
    /// Attempts that failed so far.
    failed: u32,
}

/// Whether the agent can be resumed and recovered (`claude` and work-alikes), or is only
/// monitored (P4: other providers are never restarted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    ClaudeLike,
    MonitoredOnly,
}

/// The policy of one supervised session.
pub struct SessionPolicy {
    id: SessionId,
    limits: Limits,
    kind: AgentKind,
    fresh_id: Box<dyn FnMut() -> SessionId + Send>,
    state: SupervisionState,
    mode: Mode,
    terminated_reason: Option<TerminatedReason>,
    proc: Proc,
    generation: u64,
    /// SIGSTOPped (suspend mode `stop`).
    frozen: bool,
    /// What the live registry entry of the current process says (the most exact).
    registry: Activity,
    screen: Activity,
    transcript: Activity,
    /// A turn started (working or a dialog) and has not finished.
    turn_open: bool,
    /// When the session was created: shown (wall) and counted from (monotonic).
    created_wall: Timestamp,
    created_at: Mono,
    /// When the current process started (wall), for display.
    process_wall: Option<Timestamp>,
    next_duration_check: Mono,
    /// The duration limit's warning and end (when it was last checked: a warning/limit
    /// instant at or before that was already acted on, or found moot).
    duration: DurationLimit,
    duration_grace_until: Option<Mono>,
    next_rss_check: Mono,
    rss_warned: bool,
    restart_reason: Option<RestartReason>,
    restart_grace_until: Option<Mono>,
    /// The automatic restarts (memory, disk, crash recovery) of the start-limit window.
    restarts: RestartLimit,
    /// Automatic memory and disk restarts are stopped, and why.
    hold: Option<RestartHold>,
    /// One memory restart, then hold while the agent is over the limit at rest.
    baseline: MemoryBaseline,
    /// Whether the agent's screen or registry says when it is up (else its quiet output).
    readiness: Readiness,
    next_health_check: Mono,
    idle_deadline: Option<Mono>,
    last_used: Mono,
    last_output: Mono,
    suspended_at: Option<Mono>,
    queue: VecDeque<Vec<u8>>,
    /// One-shot mode: the line being typed.
    line: Vec<u8>,
    recovery_count: u32,
    restart_count: u32,
    consecutive_crashes: u32,
    pending_crash: bool,
    /// "Retry" came while a one-shot answer was still running: done when it ends.
    retry_after_one_shot: bool,
    /// The last recovery attempt: when, and whether it succeeded (debounce).
    last_recovery: Option<(Mono, bool)>,
    retry: Option<Retry>,
    resume_rejected: bool,
    /// What went to a resumed process before it showed a turn: it may yet refuse the
    /// resume and exit, taking that text with it; then it is queued again for the new
    /// session (`None` once the process worked, or for other processes).
    unconfirmed: Option<Vec<Vec<u8>>>,
    last_exit_code: Option<i32>,
    out: Vec<Effect>,
    now: Mono,
    wall: Timestamp,
    /// Issue 36 (policy/budgets.rs): the session's budget and the fleet's.
    budget: SessionBudget,
    /// Why it is suspended, while it is.
    suspended_for: Option<SuspendCause>,
}

impl SessionPolicy {
    /// A new supervised session, launched fresh (`--session-id id`) or resuming `id`.
    /// `fresh_id` makes the id of a replacement session (EC-007).
    pub fn new(
        id: SessionId,
        limits: Limits,
        kind: AgentKind,
        resume: bool,
        at: Now,
        fresh_id: Box<dyn FnMut() -> SessionId + Send>,
    ) -> (SessionPolicy, Vec<Effect>) {
        let now = at.mono;
        let mut p = SessionPolicy {
            id,
            kind,
            fresh_id,
            state: SupervisionState::Running,
            mode: Mode::Persistent,
            terminated_reason: None,
            proc: Proc::None,
            generation: 0,
            frozen: false,
            registry: Activity::Unknown,
            screen: Activity::Unknown,
            transcript: Activity::Unknown,
            turn_open: false,
            created_wall: at.wall,
            created_at: now,
            process_wall: None,
            next_duration_check: now.plus(limits.duration_check),
            duration: DurationLimit::new(now),
            duration_grace_until: None,
            next_rss_check: now.plus(limits.rss_check),
            rss_warned: false,
            restart_reason: None,
            restart_grace_until: None,
            restarts: RestartLimit::default(),
            hold: None,
            baseline: MemoryBaseline::default(),
            readiness: Readiness::default(),
            next_health_check: now.plus(limits.health_check),
            idle_deadline: None,
            last_used: now,
            last_output: now,
            suspended_at: None,
            queue: VecDeque::new(),
            line: Vec::new(),
            recovery_count: 0,
            restart_count: 0,
            consecutive_crashes: 0,
            pending_crash: false,
            retry_after_one_shot: false,
            last_recovery: None,
            retry: None,
            resume_rejected: false,
            unconfirmed: None,
            last_exit_code: None,
            out: Vec::new(),
            now,
            wall: at.wall,
            budget: SessionBudget::default(),
            suspended_for: None,
            limits,
        };
        p.budget.set_default(p.limits.budget_usd.map(|u| u.0));
        let launch = if resume { Launch::Resume } else { Launch::Fresh };
        p.spawn(launch, Purpose::Initial);
        let effects = std::mem::take(&mut p.out);
        (p, effects)
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    pub fn state(&self) -> SupervisionState {
        self.state
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The PID of the current process, if one runs.
    pub fn pid(&self) -> Option<u32> {
        match &self.proc {
            Proc::Starting { pid, .. } | Proc::Stopping { pid, .. } => *pid,
            Proc::Live { pid, .. } => Some(*pid),
            Proc::None => None,
        }
    }

    /// The generation of the current process (its spawn), if one exists.
    pub fn generation(&self) -> Option<u64> {
        self.proc.generation()
    }

    /// Has a process (or is about to): counts against the live-session cap (P7).
    pub fn is_live(&self) -> bool {
        !matches!(self.proc, Proc::None | Proc::Stopping { .. }) && !self.frozen
    }

    /// The process showed it is up (not starting, stopping or frozen).
    pub fn is_up(&self) -> bool {
        matches!(self.proc, Proc::Live { .. }) && !self.frozen
    }

    /// Could be suspended right now without losing anything (P6, P7).
    pub fn suspendable(&self) -> bool {
        self.kind == AgentKind::ClaudeLike
            && self.mode == Mode::Persistent
            && matches!(self.state, SupervisionState::Running)
            && matches!(self.proc, Proc::Live { .. })
            && !self.frozen
            && self.activity() == Activity::Idle
            && self.queue.is_empty()
            && !self.pending_crash
    }

    /// When the user last typed (or the session was created): the LRU key (P7).
    pub fn last_used(&self) -> Mono {
        self.last_used
    }

    pub fn activity(&self) -> Activity {
        [self.registry, self.screen, self.transcript].into_iter().find(|a| *a != Activity::Unknown).unwrap_or_default()
    }

    /// The `supervision` object of the session's roster row (docs/ipc.md): its state,
    /// with deadlines shown in wall-clock time as of the last input.
    pub fn supervision(&self, agent: &str, cwd: &str) -> Supervision {
        let at = Now { wall: self.wall, mono: self.now };
        Supervision {
            state: self.state,
            mode: self.mode,
            agent: agent.to_owned(),
            cwd: cwd.to_owned(),
            pid: self.pid(),
            process_started_at: self.process_wall.filter(|_| !matches!(self.proc, Proc::None)),
            created_at: self.created_wall,
            recovery_count: self.recovery_count,
            restart_count: self.restart_count,
            consecutive_crashes: self.consecutive_crashes,
            pending_crash_recovery: self.pending_crash,
            awaiting_permission: self.activity() == Activity::Permission,
            idle_deadline: self.idle_deadline.map(|d| at.wall_at(d)),
            duration_deadline: (self.state != SupervisionState::Terminated)
                .then(|| at.wall_at(self.created_at.plus(self.limits.max_duration))),
            queued_inputs: self.queue.len(),
            last_exit_code: self.last_exit_code,
            terminated_reason: self.terminated_reason,
            restarts_held: self.hold,
            budget_usd: self.budget.limit(),
            spent_usd: Some(self.budget.spent()).filter(|s| *s > 0.0),
            suspended_reason: self.suspended_reason(),
        }
    }

    /// The earliest instant at which [`Input::Tick`] has something to do.
    pub fn next_deadline(&self) -> Option<Mono> {
        if self.state == SupervisionState::Terminated && matches!(self.proc, Proc::None) {
            return None;
        }
        let mut t: Vec<Option<Mono>> = vec![self.duration_grace_until, self.restart_grace_until, self.idle_deadline];
        if self.state != SupervisionState::Terminated {
            t.push(Some(self.next_duration_check));
            t.push(self.duration_due());
        }
        match &self.proc {
            Proc::Stopping { next_at, .. } => t.push(*next_at),
            Proc::Starting { since, pid: Some(_), .. } => {
                t.push(Some(since.plus(READY_FALLBACK)));
                t.push(self.readiness.quiet_deadline(*since, self.last_output));
                t.push(Some(self.next_health_check));
            }
            Proc::Live { .. } if !self.frozen => {
                t.push(Some(self.next_rss_check));
                t.push(Some(self.next_health_check));
            }
            _ => {}
        }
        if let Some(Retry { at: Some(at), .. }) = self.retry {
            t.push(Some(at));
        }
        if self.pending_crash {
            t.push(Some(self.last_output.plus(self.limits.idle_timeout)));
            if let Some((at, false)) = self.last_recovery {
                t.push(Some(at.plus(self.limits.crash_debounce_failure)));
            }
        }
        t.into_iter().flatten().min()
    }

    /// Applies one input.
    pub fn handle(&mut self, input: Input, at: Now) -> Vec<Effect> {
        let now = at.mono;
        self.now = now;
        self.wall = at.wall;
        match input {
            Input::Spawned { generation, pid } => self.spawned(generation, pid),
            Input::SpawnFailed { generation, error } => self.spawn_failed(generation, error),
            Input::Exited { generation, code, last_line } => self.exited(generation, code, last_line),
            Input::Output { generation } => {
                if self.current(generation) {
                    self.last_output = now;
                    self.touch_idle();
                }
            }
            Input::Screen { generation, signal } => {
                if self.current(generation) {
                    self.screen_signal(signal);
                }
            }
            Input::Agent(report) => self.agent_report(report),
            Input::Rss { generation, bytes } => {
                if self.current(generation) {
                    self.rss(bytes);
                }
            }
            Input::Health { generation, alive } => {
                if self.current(generation) && !alive && !matches!(self.proc, Proc::Stopping { .. }) {
                    tracing::warn!(session = %self.id, "health check: the agent process is gone");
                    self.exited(generation, 1, None);
                }
            }
            Input::DiskFull => self.flag_restart(RestartReason::Disk, None),
            Input::Suspend => self.try_suspend(SuspendCause::Cap),
            Input::Stop => self.stop(StopWhy::User),
            Input::Delete => self.stop(StopWhy::Delete),
            Input::Shutdown => self.stop(StopWhy::Shutdown),
            Input::Signalled(name) => self.stop(StopWhy::Signal(name)),
            Input::Resume => self.user_resume(false),
            Input::Restart => self.user_restart(),
            Input::Limits(limits) => self.new_limits(*limits),
            Input::Tick => self.tick(),
            Input::Spend(usd) => self.spend(usd),
            Input::Budget(usd) => self.own_budget(usd),
            Input::FleetBudget(reached) => self.budget.set_fleet(reached),
        }
        self.suspend_if_over_budget();
        std::mem::take(&mut self.out)
    }

    /// User input (keystrokes or a paste). Returns what became of it, and the effects.
    pub fn input(&mut self, bytes: Vec<u8>, at: Now) -> (Delivery, Vec<Effect>) {
        let now = at.mono;
        self.now = now;
        self.wall = at.wall;
        self.last_used = now;
        let delivery = self.deliver_or_queue(bytes);
        (delivery, std::mem::take(&mut self.out))
    }

    // ------------------------------------------------------------------ helpers

    fn current(&self, generation: u64) -> bool {
        self.proc.generation() == Some(generation)
    }

    fn emit(&mut self, kind: EventKind) {
        let ev = SupervisionEvent { kind, session_id: self.id.clone(), at: self.wall };
        self.out.push(Effect::Emit(ev));
    }

    fn claude_like(&self) -> bool {
        self.kind == AgentKind::ClaudeLike
    }

    fn spawn(&mut self, launch: Launch, purpose: Purpose) {
        debug_assert!(matches!(self.proc, Proc::None), "one process per session");
        if !matches!(self.proc, Proc::None) {
            tracing::error!(session = %self.id, "refusing a second process for one session");
            return;
        }
        self.generation += 1;
        self.registry = Activity::Unknown;
        self.screen = Activity::Unknown;
        self.turn_open = false;
        self.resume_rejected = false;
        self.unconfirmed = None;
        let launch = if self.kind == AgentKind::MonitoredOnly { Launch::Fresh } else { launch };
        self.proc =
            Proc::Starting { generation: self.generation, pid: None, since: self.now, launch: launch.clone(), purpose };
        self.process_wall = Some(self.wall);
        self.next_health_check = self.now.plus(self.limits.health_check);
        self.next_rss_check = self.now.plus(self.limits.rss_check);
        self.out.push(Effect::Spawn { generation: self.generation, session_id: self.id.clone(), launch });
    }

    fn spawned(&mut self, generation: u64, new_pid: u32) {
        match &mut self.proc {
            Proc::Starting { generation: g, pid, purpose, .. } if *g == generation => {
                *pid = Some(new_pid);
                if *purpose == Purpose::Initial {
                    self.emit(EventKind::SessionStarted {});
                }
            }
            // Asked to stop before the spawn came back: stop it now.
            Proc::Stopping { generation: g, pid, stage, next_at, .. } if *g == generation => {
                *pid = Some(new_pid);
                *stage = Stage::Termed;
                *next_at = Some(self.now.plus(self.limits.kill_after));
                self.out.push(Effect::Signal(Sig::Term));
            }
            _ => {}
        }
    }

    fn spawn_failed(&mut self, generation: u64, error: String) {
        if !self.current(generation) {
            return;
        }
        tracing::warn!(session = %self.id, %error, "could not start the agent");
        let proc = std::mem::replace(&mut self.proc, Proc::None);
        match proc {
            Proc::Stopping { why, .. } => self.after_stop(why),
            Proc::Starting { purpose: Purpose::Initial, .. } => {
                self.emit(EventKind::Error { exit_code: 127, message: error });
                self.terminate(TerminatedReason::FailedToStart);
            }
            Proc::Starting { purpose: Purpose::OneShot, .. } => {
                self.emit(EventKind::Error { exit_code: 127, message: error });
                self.next_one_shot();
            }
            _ => self.attempt_failed(),
        }
    }

    fn terminate(&mut self, reason: TerminatedReason) {
        self.state = SupervisionState::Terminated;
        self.terminated_reason = Some(reason);
        self.cancel_timers();
        self.queue.clear();
        self.pending_crash = false;
    }

    fn cancel_timers(&mut self) {
        self.idle_deadline = None;
        self.duration_grace_until = None;
        self.restart_grace_until = None;
        self.retry = None;
    }

    fn touch_idle(&mut self) {
        if self.idle_deadline.is_some() {
            self.idle_deadline = Some(self.now.plus(self.limits.idle_timeout));
        }
    }

    fn idle_eligible(&self) -> bool {
        self.claude_like()
            && self.mode == Mode::Persistent
            && self.state == SupervisionState::Running
            && matches!(self.proc, Proc::Live { .. })
    }

    // ------------------------------------------------------------------ input

    fn deliver_or_queue(&mut self, bytes: Vec<u8>) -> Delivery {
        if bytes.is_empty() {
            return Delivery::Written;
        }
        if self.mode == Mode::OneShot && matches!(self.state, SupervisionState::Running) {
            return self.one_shot_keys(bytes);
        }
        match self.state {
            SupervisionState::Terminated => return Delivery::Refused,
            SupervisionState::Unhealthy if !matches!(self.proc, Proc::Live { .. }) => return Delivery::Refused,
            // Ctrl-C (or Ctrl-D) at a suspended session interrupts nothing: it does not wake
            // the agent to be handed keys that quit it (an exit then taken for a crash).
            SupervisionState::Suspended if only_interrupts(&bytes) => return Delivery::Written,
            SupervisionState::Suspended => {
                self.queue.push_back(bytes);
                if (matches!(self.proc, Proc::None) || self.frozen) && !self.budget_holds() {
                    self.resume_from_suspension();
                }
                return if self.frozen_resumed_now() { Delivery::Written } else { Delivery::Queued };
            }
            _ => {}
        }
        let takes_input = match &self.proc {
            Proc::Live { .. } => !self.frozen,
            // The first launch behaves like a terminal: type-ahead goes to the agent.
            Proc::Starting { purpose: Purpose::Initial, pid: Some(_), .. } => true,
            _ => false,
        };
        if takes_input && self.queue.is_empty() {
            self.touch_idle();
            if let Some(sent) = &mut self.unconfirmed {
                sent.push(bytes.clone());
            }
            self.out.push(Effect::Write(bytes));
            Delivery::Written
        } else {
            self.queue.push_back(bytes);
            Delivery::Queued
        }
    }

    /// After a SIGCONT resume the queue was flushed at once.
    fn frozen_resumed_now(&self) -> bool {
        self.queue.is_empty() && matches!(self.proc, Proc::Live { .. })
    }

    /// Delivers what was kept, the way it was typed: each Enter (outside a bracketed paste)
    /// follows its line only once the TUI has taken the text.
    fn flush_queue(&mut self) {
        let all: Vec<u8> = self.queue.drain(..).flatten().collect();
        if let Some(sent) = &mut self.unconfirmed
            && !all.is_empty()
        {
            sent.push(all.clone());
        }
        for (text, enter) in typed_lines(&all) {
            self.out.push(if enter { Effect::TypeLine(text) } else { Effect::Write(text) });
        }
    }

    /// One-shot mode: keys build a line locally; Enter runs it as its own process.
    fn one_shot_keys(&mut self, bytes: Vec<u8>) -> Delivery {
        let mut echo = Vec::new();
        for b in bytes {
            match b {
                b'\r' | b'\n' => {
                    echo.extend_from_slice(b"\r\n");
                    let prompt = String::from_utf8_lossy(&self.line).trim().to_owned();
                    self.line.clear();
                    if !prompt.is_empty() {
                        self.queue.push_back(prompt.into_bytes());
                    }
                }
                // Backspace: rub out the last character, if any.
                0x7f | 0x08 => echo.extend_from_slice(if self.line.pop().is_some() { b"\x08 \x08" } else { b"" }),
                0x03 => self.line.clear(),
                b if b >= 0x20 || b == b'\t' => {
                    self.line.push(b);
                    echo.push(b);
                }
                _ => {}
            }
        }
        if !echo.is_empty() {
            self.out.push(Effect::Echo(echo));
        }
        if matches!(self.proc, Proc::None) {
            self.next_one_shot();
        }
        Delivery::Queued
    }

    fn next_one_shot(&mut self) {
        if std::mem::take(&mut self.retry_after_one_shot) {
            // The persistent session comes back first; what was typed waits for it.
            return self.user_resume(true);
        }
        if let Some(prompt) = self.queue.pop_front() {
            let prompt = String::from_utf8_lossy(&prompt).into_owned();
            self.spawn(Launch::OneShot { prompt }, Purpose::OneShot);
        }
    }

    // ------------------------------------------------------------------ screen and activity

    fn screen_signal(&mut self, signal: ScreenSignal) {
        match signal {
            ScreenSignal::Activity(a) => {
                let before = self.activity();
                self.screen = a;
                self.readiness.screen(a);
                // Only the process's own screen proves it is up: the transcript may still be
                // the previous process's (or a refused resume's) words.
                if a != Activity::Unknown && matches!(self.proc, Proc::Starting { pid: Some(_), .. }) {
                    self.ready();
                }
                self.activity_changed(before);
            }
            ScreenSignal::TurnDone => {
                if self.turn_open && !self.activity().busy() {
                    self.turn_done();
                }
            }
            ScreenSignal::Crash => self.crash_seen(),
            ScreenSignal::HarnessDead => self.harness_dead(),
            ScreenSignal::ResumeRejected => self.resume_rejected = true,
        }
    }

    fn agent_report(&mut self, report: AgentReport) {
        let before = self.activity();
        let pid = self.pid();
        // Only the supervised process's own entry: a previous process's may linger after a
        // SIGKILL, and after /clear the process goes on under another session id.
        self.registry = match report.registry {
            Some((p, state)) if Some(p) == pid => match state {
                RegistryState::Busy => Activity::Working,
                RegistryState::Idle => Activity::Idle,
                // A dialog or a question: the user is needed; nothing may be restarted under it.
                RegistryState::WaitingForApproval
                | RegistryState::WaitingForInput
                | RegistryState::WaitingForDialog => Activity::Permission,
                RegistryState::Unknown => Activity::Unknown,
            },
            _ => Activity::Unknown,
        };
        if self.registry != Activity::Unknown {
            self.readiness.registry();
        }
        self.transcript = match report.status {
            Status::Working => Activity::Working,
            Status::WaitingForApproval => Activity::Permission,
            Status::WaitingForInput | Status::Idle => Activity::Idle,
        };
        // The process is up as soon as anything of its own shows it: its registry entry, a
        // transcript record or a hook written after it was started. Not only its screen,
        // and not after a fallback of 30 s.
        if matches!(self.proc, Proc::Starting { pid: Some(_), .. }) {
            let since = self.process_wall;
            let after_spawn = |t: Timestamp| since.is_some_and(|s| t > s);
            let own_registry = matches!(report.registry, Some((p, _)) if Some(p) == pid);
            let own_record = report.last_record.is_some_and(after_spawn);
            let own_hook = report.hook.is_some_and(|h| h.state != HookState::Ended && after_spawn(h.at));
            if own_registry || own_record || own_hook {
                self.ready();
            }
        }
        self.activity_changed(before);
    }

    fn activity_changed(&mut self, before: Activity) {
        let now = self.activity();
        if now == Activity::Unknown || now == before {
            return;
        }
        if now.busy() {
            self.turn_open = true;
            self.unconfirmed = None;
            self.baseline.turn_started();
            self.readiness.turn(self.screen, self.registry);
            self.idle_deadline = None;
        } else if before.busy() {
            // A finished turn, or a dialog answered "no": a safe idle either way.
            self.turn_done();
        } else {
            self.maybe_flush_crash();
        }
    }

    fn turn_done(&mut self) {
        self.turn_open = false;
        if self.state == SupervisionState::Running && !self.pending_crash && self.restart_reason.is_none() {
            self.consecutive_crashes = 0;
        }
        if self.idle_eligible() {
            self.idle_deadline = Some(self.now.plus(self.limits.idle_timeout));
        }
        if self.duration_grace_until.is_some() {
            self.end_for_duration(false);
        } else if self.restart_reason.is_some() && self.state == SupervisionState::RestartPending {
            self.restart_now();
        } else {
            self.maybe_flush_crash();
        }
    }

    /// The process showed it is up: announce what it came up for, deliver the queue.
    fn ready(&mut self) {
        let Proc::Starting { generation, pid: Some(pid), since, purpose, ref launch } = self.proc else { return };
        let resumed = *launch == Launch::Resume;
        self.proc = Proc::Live { generation, pid, since, purpose, resumed };
        if resumed {
            self.unconfirmed = Some(Vec::new());
        }
        self.retry = None;
        match purpose {
            Purpose::Initial | Purpose::OneShot => {}
            Purpose::Recovery => {
                self.recovery_count += 1;
                self.last_recovery = Some((self.now, true));
                self.state = SupervisionState::Running;
                self.emit(EventKind::SessionRecovered { message: wording::RECOVERED.into() });
            }
            Purpose::Restart(reason) => {
                if reason != RestartReason::User {
                    self.restart_count += 1;
                }
                self.restart_reason = None;
                self.state = SupervisionState::Running;
                self.emit(EventKind::SessionReady { status: ReadyStatus::Resumed, message: wording::RESTORED.into() });
            }
            Purpose::Fresh => {
                self.restart_reason = None;
                self.state = SupervisionState::Running;
                self.emit(EventKind::SessionReady { status: ReadyStatus::New, message: wording::NOT_RESTORED.into() });
            }
            Purpose::ResumeSuspended => {
                self.state = SupervisionState::Running;
                self.emit(EventKind::ModeChange {
                    mode: "persistent".into(),
                    message: wording::MODE_PERSISTENT.into(),
                });
            }
            Purpose::ResumeByUser => {
                self.state = SupervisionState::Running;
                if self.mode == Mode::OneShot {
                    self.mode = Mode::Persistent;
                    self.emit(EventKind::ModeChange {
                        mode: "persistent".into(),
                        message: wording::MODE_PERSISTENT.into(),
                    });
                }
                self.emit(EventKind::SessionResumed { message: wording::RESUMED_BY_USER.into() });
            }
        }
        if purpose != Purpose::OneShot {
            self.flush_queue();
        }
    }

    // ------------------------------------------------------------------ crashes (P4, P5)

    fn debounced(&self) -> bool {
        match self.last_recovery {
            Some((at, ok)) => {
                let window = if ok { self.limits.crash_debounce_success } else { self.limits.crash_debounce_failure };
                self.now.since(at) < window
            }
            None => false,
        }
    }

    fn crash_seen(&mut self) {
        if !self.claude_like() {
            tracing::warn!(session = %self.id, "crash pattern on screen; this agent is monitored only, not recovered");
            return;
        }
        if !matches!(self.proc, Proc::Live { .. }) || self.debounced() || self.pending_crash {
            return; // a second chunk of the same dump, or a process already going away
        }
        if matches!(self.state, SupervisionState::Unhealthy | SupervisionState::Recovering) {
            return;
        }
        if self.activity().busy() {
            tracing::info!(session = %self.id, "crash pattern while working: recovery deferred until idle");
            self.pending_crash = true;
            self.emit(EventKind::CrashDetected { deferred: true });
        } else {
            tracing::warn!(session = %self.id, "crash pattern while idle: recovering now");
            self.emit(EventKind::CrashDetected { deferred: false });
            self.recover(StopHow::Forced);
        }
    }

    fn harness_dead(&mut self) {
        if !self.claude_like() || !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        if matches!(self.state, SupervisionState::Unhealthy | SupervisionState::Recovering) {
            return;
        }
        tracing::warn!(session = %self.id, "the harness died (bare shell prompt): forced recovery");
        self.pending_crash = false;
        self.emit(EventKind::CrashDetected { deferred: false });
        self.recover(StopHow::Forced);
    }

    /// A pending crash recovery runs once the session is safely idle: not working, not
    /// at a permission dialog, and not within the failure debounce.
    fn maybe_flush_crash(&mut self) {
        if !self.pending_crash || !matches!(self.proc, Proc::Live { .. }) || self.debounced() {
            return;
        }
        let quiet = self.now.since(self.last_output) >= self.limits.idle_timeout;
        match self.activity() {
            Activity::Permission => {}
            Activity::Idle => self.recover(StopHow::Graceful),
            // A harness that stopped drawing may be dead: after a quiet spell, force it.
            Activity::Working | Activity::Unknown if quiet => self.recover(StopHow::Forced),
            _ => {}
        }
    }

    /// Counts a crash; recovers unless that makes it one too many.
    fn recover(&mut self, how: StopHow) {
        self.pending_crash = false;
        self.consecutive_crashes += 1;
        if self.consecutive_crashes > MAX_CONSECUTIVE_CRASHES {
            self.mark_unhealthy();
            return;
        }
        if !self.start_allowed() {
            return self.mark_unhealthy_for_rate();
        }
        self.state = SupervisionState::Recovering;
        self.begin_stop(StopWhy::Recover, how);
    }

    // ------------------------------------------------------------------ start limit (R2)

    /// Automatic restarts within the window, after forgetting older ones.
    fn recent_restarts(&mut self) -> usize {
        self.restarts.recent(self.now, &self.limits)
    }

    /// Takes one automatic restart from the start limit; false when the limit is reached.
    fn start_allowed(&mut self) -> bool {
        self.restarts.take(self.now, &self.limits)
    }

    /// When the next automatic memory/disk restart may begin (back-off).
    fn backoff_until(&mut self) -> Option<Mono> {
        self.restarts.backoff_until(self.now, &self.limits)
    }

    /// Stops automatic memory and disk restarts; the session keeps running. Said once.
    fn hold_restarts(&mut self, hold: RestartHold, rss: Option<u64>) {
        self.restart_reason = None;
        self.restart_grace_until = None;
        if self.state == SupervisionState::RestartPending {
            self.state = SupervisionState::Running;
        }
        if self.hold == Some(hold) {
            return;
        }
        self.hold = Some(hold);
        let message = match hold {
            RestartHold::MemoryBaseline => {
                wording::memory_below_baseline(self.limits.max_rss_mb, rss.unwrap_or(0) / (1024 * 1024))
            }
            RestartHold::RateLimit => wording::restart_limit(self.recent_restarts(), self.limits.restart_limit_window),
        };
        let reason = match hold {
            RestartHold::MemoryBaseline => "memory_baseline",
            RestartHold::RateLimit => "restart_limit",
        };
        tracing::info!(session = %self.id, ?hold, "automatic restarts stopped");
        self.emit(EventKind::SessionWarning { reason: reason.into(), remaining_seconds: None, message });
    }

    /// Lifts a hold: the user acted, or the limits changed.
    fn release_hold(&mut self) {
        self.hold = None;
        self.baseline.reset();
        self.rss_warned = false;
    }

    fn mark_unhealthy_for_rate(&mut self) {
        self.state = SupervisionState::Unhealthy;
        self.retry = None;
        self.idle_deadline = None;
        let message = wording::unhealthy_rate(self.recent_restarts(), self.limits.restart_limit_window);
        self.emit(EventKind::SessionUnhealthy { message });
    }

    fn mark_unhealthy(&mut self) {
        self.state = SupervisionState::Unhealthy;
        self.retry = None;
        self.idle_deadline = None;
        self.emit(EventKind::SessionUnhealthy { message: wording::unhealthy(self.consecutive_crashes) });
    }

    fn exited(&mut self, generation: u64, code: i32, last_line: Option<String>) {
        if !self.current(generation) {
            return;
        }
        self.last_exit_code = Some(code);
        self.idle_deadline = None;
        self.registry = Activity::Unknown;
        self.screen = Activity::Unknown;
        self.transcript = Activity::Unknown;
        let proc = std::mem::replace(&mut self.proc, Proc::None);
        self.frozen = false;
        match proc {
            Proc::None => {}
            Proc::Stopping { why, .. } => self.after_stop(why),
            Proc::Starting { launch, purpose, .. } => {
                if purpose == Purpose::OneShot {
                    if code != 0 {
                        self.emit(EventKind::Error {
                            exit_code: code,
                            message: wording::abnormal_exit(code, last_line.as_deref()),
                        });
                    }
                    return self.next_one_shot();
                }
                if self.resume_rejected && launch == Launch::Resume {
                    return self.resume_refused(purpose);
                }
                match purpose {
                    Purpose::Initial => {
                        if code != 0 {
                            self.emit(EventKind::Error {
                                exit_code: code,
                                message: wording::abnormal_exit(code, last_line.as_deref()),
                            });
                        }
                        self.emit(EventKind::SessionExited { exit_code: code });
                        self.terminate(if code == 0 {
                            TerminatedReason::Exited
                        } else {
                            TerminatedReason::FailedToStart
                        });
                    }
                    _ if code == 0 => self.clean_exit(),
                    _ => {
                        tracing::warn!(session = %self.id, code, ?last_line, "a resume attempt failed");
                        self.attempt_failed();
                    }
                }
            }
            Proc::Live { purpose, resumed, .. } => {
                if purpose == Purpose::OneShot {
                    return self.exited_one_shot(code, last_line);
                }
                if resumed && self.resume_rejected && code != 0 {
                    // Came up (the fallback timer, a screen read) before it refused the resume.
                    return self.resume_refused(purpose);
                }
                if code == 0 {
                    return self.clean_exit();
                }
                self.emit(EventKind::Error {
                    exit_code: code,
                    message: wording::abnormal_exit(code, last_line.as_deref()),
                });
                if !self.claude_like() {
                    self.emit(EventKind::SessionExited { exit_code: code });
                    return self.terminate(TerminatedReason::Exited);
                }
                if self.state == SupervisionState::Unhealthy {
                    return; // no more automatic recovery
                }
                // The abnormal exit is the crash: a pending screen crash is the same one.
                self.pending_crash = false;
                self.consecutive_crashes += 1;
                if self.consecutive_crashes > MAX_CONSECUTIVE_CRASHES {
                    return self.mark_unhealthy();
                }
                if !self.start_allowed() {
                    return self.mark_unhealthy_for_rate();
                }
                if self.limits.recovery_retries == 0 {
                    return self.give_up();
                }
                self.state = SupervisionState::Recovering;
                self.retry = Some(Retry { at: Some(self.now.plus(self.limits.recovery_retry_delay)), failed: 0 });
            }
        }
    }

    fn exited_one_shot(&mut self, code: i32, last_line: Option<String>) {
        if code != 0 {
            self.emit(EventKind::Error {
                exit_code: code,
                message: wording::abnormal_exit(code, last_line.as_deref()),
            });
        }
        self.next_one_shot();
    }

    /// The agent quit by itself (`/exit`): the session ends here.
    fn clean_exit(&mut self) {
        self.emit(EventKind::SessionExited { exit_code: 0 });
        self.terminate(TerminatedReason::Exited);
    }

    /// `--resume` said "No conversation found": EC-007, unless the user asked for that id.
    fn resume_refused(&mut self, purpose: Purpose) {
        if purpose == Purpose::Initial {
            self.emit(EventKind::Error {
                exit_code: self.last_exit_code.unwrap_or(1),
                message: format!("No conversation found with session ID: {}", self.id),
            });
            self.emit(EventKind::SessionExited { exit_code: self.last_exit_code.unwrap_or(1) });
            return self.terminate(TerminatedReason::FailedToStart);
        }
        tracing::warn!(session = %self.id, "resume refused: archiving the session as corrupted and starting fresh");
        let old = self.id.clone();
        self.out.push(Effect::ArchiveCorrupted { session_id: old.clone() });
        let new = (self.fresh_id)();
        self.id = new.clone();
        self.out.push(Effect::Renamed { from: old, to: new });
        self.retry = None;
        self.state = SupervisionState::Recovering;
        // What it was given went with it: the new session gets it.
        for b in self.unconfirmed.take().unwrap_or_default().into_iter().rev() {
            self.queue.push_front(b);
        }
        self.spawn(Launch::Fresh, Purpose::Fresh);
    }

    /// A resume attempt died before it came up: retry after the delay, or give up and
    /// switch to one-shot mode (P5).
    fn attempt_failed(&mut self) {
        self.last_recovery = Some((self.now, false));
        let failed = self.retry.map_or(0, |r| r.failed) + 1;
        if failed < self.limits.recovery_retries {
            self.state = SupervisionState::Recovering;
            self.retry = Some(Retry { at: Some(self.now.plus(self.limits.recovery_retry_delay)), failed });
            return;
        }
        self.give_up();
    }

    /// No more automatic resumes: each message becomes its own process (P5).
    fn give_up(&mut self) {
        self.retry = None;
        self.restart_reason = None;
        self.state = SupervisionState::Running;
        self.mode = Mode::OneShot;
        self.emit(EventKind::RecoveryFailed { message: wording::recovery_failed(&self.id) });
        self.emit(EventKind::ModeChange { mode: "one_shot".into(), message: wording::MODE_ONE_SHOT.into() });
        // Keys typed meanwhile become one-shot lines.
        let queued: Vec<Vec<u8>> = self.queue.drain(..).collect();
        for b in queued {
            self.one_shot_keys(b);
        }
    }

    // ------------------------------------------------------------------ stopping

    fn begin_stop(&mut self, why: StopWhy, how: StopHow) {
        self.idle_deadline = None;
        // A stop after a pending Retry (the user's Stop, a limit) is the later word.
        self.retry_after_one_shot = false;
        let (generation, pid, since) = match &mut self.proc {
            Proc::None => return self.after_stop(why),
            Proc::Stopping { why: current, .. } => {
                if why.weight() > current.weight() {
                    *current = why;
                }
                return;
            }
            Proc::Starting { generation, pid, since, .. } => (*generation, *pid, *since),
            Proc::Live { generation, pid, since, .. } => (*generation, Some(*pid), *since),
        };
        if self.frozen {
            // A stopped process would hold SIGTERM until continued.
            self.out.push(Effect::Signal(Sig::Cont));
            self.frozen = false;
        }
        let settled = self.last_output.plus(EXIT_SETTLE);
        let stage = match (how, pid) {
            // Not spawned yet: the signal goes out when it is (see `spawned`).
            (_, None) => Stage::Termed,
            (StopHow::Graceful, _) if settled > self.now => Stage::Settling,
            (StopHow::Graceful, _) => {
                self.out.push(Effect::TypeLine("/exit".into()));
                Stage::ExitTyped
            }
            (StopHow::Interrupt, _) => {
                self.out.push(Effect::Write(vec![0x1b]));
                Stage::ExitTyped
            }
            (StopHow::Forced, _) => {
                self.out.push(Effect::Write(vec![0x03]));
                self.out.push(Effect::Signal(Sig::Term));
                Stage::Termed
            }
            (StopHow::Term, _) => {
                self.out.push(Effect::Signal(Sig::Term));
                Stage::Termed
            }
        };
        let next_at = Some(match (stage, how) {
            (Stage::Settling, _) => settled,
            (_, StopHow::Interrupt) => self.now.plus(self.limits.kill_after.min(INTERRUPT_GRACE)),
            _ => self.now.plus(self.limits.kill_after),
        });
        self.proc = Proc::Stopping { generation, pid, since, why, stage, next_at };
    }

    /// The process is gone after a stop we asked for.
    fn after_stop(&mut self, why: StopWhy) {
        match why {
            StopWhy::Recover => {
                self.state = SupervisionState::Recovering;
                self.spawn(Launch::Resume, Purpose::Recovery);
            }
            StopWhy::Restart(reason) => {
                if reason != RestartReason::User {
                    self.out.push(Effect::DeleteShellSnapshots);
                }
                self.state = SupervisionState::Recovering;
                self.spawn(Launch::Resume, Purpose::Restart(reason));
            }
            StopWhy::Suspend(cause) => {
                self.state = SupervisionState::Suspended;
                self.suspended_at = Some(self.now);
                self.announce_suspended(cause);
                if !self.queue.is_empty() && !self.budget_holds() {
                    // A message arrived while it was stopping: come straight back.
                    self.resume_from_suspension();
                }
            }
            StopWhy::Duration { incomplete } => {
                self.terminate(TerminatedReason::DurationLimit);
                let message = if incomplete {
                    wording::DURATION_ENDED_INCOMPLETE.to_owned()
                } else {
                    wording::duration_ended(self.limits.max_duration)
                };
                self.emit(EventKind::SessionTerminated {
                    reason: "duration_limit".into(),
                    message,
                    resume_session_id: self.id.clone(),
                });
            }
            StopWhy::User => {
                self.terminate(TerminatedReason::User);
                self.emit(EventKind::SessionTerminated {
                    reason: "user".into(),
                    message: wording::STOPPED_BY_USER.into(),
                    resume_session_id: self.id.clone(),
                });
            }
            StopWhy::Shutdown => {
                self.terminate(TerminatedReason::Shutdown);
                self.out.push(Effect::Finished);
            }
            StopWhy::Signal(name) => {
                // The last word of a `mimesis run` that was told to stop.
                self.terminate(TerminatedReason::Signal);
                self.emit(EventKind::SessionTerminated {
                    reason: "signal".into(),
                    message: wording::signalled(&name, &self.id),
                    resume_session_id: self.id.clone(),
                });
                self.out.push(Effect::Finished);
            }
            StopWhy::Delete => {
                self.terminate(TerminatedReason::Deleted);
                self.out.push(Effect::Finished);
            }
        }
    }

    fn suspended_message(&self, cause: SuspendCause) -> String {
        match cause {
            SuspendCause::Idle => wording::suspended_idle(self.limits.idle_timeout),
            SuspendCause::Cap => wording::suspended_cap(self.limits.max_live_sessions),
            SuspendCause::Budget(_) => self.budget_suspended_message(),
        }
    }

    /// Seed 003 §2.2: the client hears of the mode change before the process is stopped.
    fn announce_mode_suspended(&mut self, cause: SuspendCause) {
        let message = self.suspended_message(cause);
        self.emit(EventKind::ModeChange { mode: "suspended".into(), message });
    }

    /// The process is stopped (or frozen).
    fn announce_suspended(&mut self, cause: SuspendCause) {
        let message = self.suspended_message(cause);
        let reason = view_reason(cause).as_str().to_owned();
        self.emit(EventKind::SessionSuspended { message, reason });
    }

    fn stop(&mut self, why: StopWhy) {
        self.cancel_timers();
        self.pending_crash = false;
        self.queue.clear();
        self.line.clear();
        self.begin_stop(why, StopHow::Term);
    }

    // ------------------------------------------------------------------ suspension (P6, P7)

    fn try_suspend(&mut self, cause: SuspendCause) {
        if !self.suspendable() {
            return;
        }
        self.idle_deadline = None;
        self.suspended_for = Some(cause);
        self.announce_mode_suspended(cause);
        match self.limits.suspend_mode {
            SuspendMode::Stop => {
                self.out.push(Effect::Signal(Sig::Stop));
                self.frozen = true;
                self.state = SupervisionState::Suspended;
                self.suspended_at = Some(self.now);
                self.announce_suspended(cause);
            }
            SuspendMode::Terminate => {
                self.state = SupervisionState::Suspended;
                self.begin_stop(StopWhy::Suspend(cause), StopHow::Term);
            }
        }
    }

    fn resume_from_suspension(&mut self) {
        let idle = self.now.since(self.suspended_at.unwrap_or(self.now));
        self.emit(EventKind::SessionResumed { message: wording::resuming(idle) });
        self.suspended_at = None;
        self.suspended_for = None;
        if self.frozen {
            self.out.push(Effect::Signal(Sig::Cont));
            self.frozen = false;
            self.state = SupervisionState::Running;
            self.emit(EventKind::ModeChange { mode: "persistent".into(), message: wording::MODE_PERSISTENT.into() });
            self.flush_queue();
        } else if matches!(self.proc, Proc::None) {
            self.state = SupervisionState::Recovering;
            self.spawn(Launch::Resume, Purpose::ResumeSuspended);
        }
    }

    fn user_resume(&mut self, restart: bool) {
        self.release_hold();
        if !self.claude_like() && !matches!(self.proc, Proc::None) {
            return;
        }
        match self.state {
            SupervisionState::Suspended => {
                if self.frozen || matches!(self.proc, Proc::None) {
                    self.resume_from_suspension();
                }
                return;
            }
            SupervisionState::Terminated => {
                if self.terminated_reason == Some(TerminatedReason::Deleted) {
                    return;
                }
                if self.terminated_reason == Some(TerminatedReason::DurationLimit) {
                    // A new run: the limit counts again from now.
                    self.created_at = self.now;
                    self.created_wall = self.wall;
                    self.next_duration_check = self.now.plus(self.limits.duration_check);
                    self.duration.warned = false;
                }
            }
            _ => {}
        }
        if !matches!(self.proc, Proc::None) {
            return;
        }
        self.terminated_reason = None;
        self.consecutive_crashes = 0;
        self.retry = None;
        self.pending_crash = false;
        self.state = SupervisionState::Recovering;
        let purpose = if restart { Purpose::Restart(RestartReason::User) } else { Purpose::ResumeByUser };
        if restart {
            self.mode = Mode::Persistent;
        }
        self.spawn(Launch::Resume, purpose);
    }

    fn user_restart(&mut self) {
        if !self.claude_like() {
            return;
        }
        self.release_hold();
        match &self.proc {
            Proc::Live { purpose, .. } if *purpose != Purpose::OneShot => {
                self.consecutive_crashes = 0;
                self.pending_crash = false;
                self.state = SupervisionState::Recovering;
                let how = if self.activity() == Activity::Idle { StopHow::Graceful } else { StopHow::Term };
                self.begin_stop(StopWhy::Restart(RestartReason::User), how);
            }
            Proc::None => self.user_resume(true),
            // A one-shot answer is finishing (its reply can show before its process ends):
            // the retry is not dropped, it follows.
            Proc::Live { purpose: Purpose::OneShot, .. } | Proc::Starting { purpose: Purpose::OneShot, .. } => {
                self.retry_after_one_shot = true;
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------ limits (P8, P9, P10)

    fn end_for_duration(&mut self, incomplete: bool) {
        self.duration_grace_until = None;
        if matches!(self.proc, Proc::None) {
            return self.after_stop(StopWhy::Duration { incomplete });
        }
        self.queue.clear();
        // EC-003: interrupt the turn (Esc in the TUI), then terminate.
        let how = if incomplete { StopHow::Interrupt } else { StopHow::Term };
        self.begin_stop(StopWhy::Duration { incomplete }, how);
    }

    /// The warning's and the limit's own instants, so the check interval never delays
    /// them (a 2 s limit with the default 60 s check still ends at 2 s): the next of them
    /// that the duration check has not seen yet.
    fn duration_due(&self) -> Option<Mono> {
        self.duration.due(self.created_at, &self.limits)
    }

    fn duration_check(&mut self) {
        if self.state == SupervisionState::Terminated || self.duration_grace_until.is_some() {
            self.duration.checked_at = self.now;
            return;
        }
        if matches!(self.proc, Proc::Stopping { why: StopWhy::Duration { .. }, .. }) {
            self.duration.checked_at = self.now;
            return;
        }
        let verdict = self.duration.check(self.created_at, self.now, &self.limits);
        if verdict == DurationVerdict::Reached {
            let busy = matches!(self.proc, Proc::Live { .. }) && self.activity().busy() && !self.frozen;
            if busy && !self.limits.turn_grace.is_zero() {
                tracing::info!(session = %self.id, "duration limit reached mid-turn: waiting for the turn to finish");
                self.duration_grace_until = Some(self.now.plus(self.limits.turn_grace));
            } else {
                self.end_for_duration(busy);
            }
        } else if let DurationVerdict::Warn(remaining) = verdict {
            self.emit(EventKind::SessionWarning {
                reason: "duration".into(),
                remaining_seconds: Some(remaining.as_secs()),
                message: wording::duration_warning(remaining),
            });
        }
    }

    fn rss(&mut self, bytes: u64) {
        if !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        let max = self.limits.max_rss_bytes();
        if bytes <= max {
            return;
        }
        if self.claude_like() {
            match self.baseline.over_limit(bytes) {
                // Over the limit again right after a memory restart, before any work: the
                // limit is below what the agent needs at rest, and restarting cannot help.
                Verdict::Hold { rss } => return self.hold_restarts(RestartHold::MemoryBaseline, Some(rss)),
                Verdict::Held => return,
                Verdict::Grew if self.hold == Some(RestartHold::MemoryBaseline) => {
                    // Grown past what it needs at rest: a restart can free that again.
                    self.hold = None;
                }
                Verdict::Grew => {}
                Verdict::Restart => {}
            }
        }
        if !self.claude_like() {
            if !self.rss_warned {
                self.rss_warned = true;
                self.emit(EventKind::SessionWarning {
                    reason: "memory".into(),
                    remaining_seconds: None,
                    message: format!(
                        "The agent uses {} MB, over the {} MB limit. It cannot be resumed, so it is not restarted.",
                        bytes / (1024 * 1024),
                        self.limits.max_rss_mb
                    ),
                });
            }
            return;
        }
        if self.hold.is_none() {
            tracing::info!(
                session = %self.id,
                "RSS={}MB exceeds threshold={}MB. Flagged for restart.",
                bytes / (1024 * 1024),
                self.limits.max_rss_mb
            );
        }
        self.flag_restart(RestartReason::Memory, Some(bytes > max.saturating_mul(2)));
    }

    /// P9/P10: flag for restart; restart now unless a turn runs (then after it, or after
    /// the grace, or at once when `force`).
    fn flag_restart(&mut self, reason: RestartReason, force: Option<bool>) {
        if !self.claude_like() || !matches!(self.proc, Proc::Live { .. }) {
            return;
        }
        if !matches!(self.state, SupervisionState::Running | SupervisionState::RestartPending)
            || self.mode == Mode::OneShot
            || self.hold.is_some()
        {
            return;
        }
        if self.restart_reason.is_none() && self.recent_restarts() >= self.limits.restart_limit_burst as usize {
            return self.hold_restarts(RestartHold::RateLimit, None);
        }
        if self.restart_reason.is_none() {
            self.restart_reason = Some(reason);
            self.state = SupervisionState::RestartPending;
        }
        let force = force.unwrap_or(false);
        if force || !self.activity().busy() || self.limits.turn_grace.is_zero() {
            self.restart_now();
        } else if self.restart_grace_until.is_none() {
            self.restart_grace_until = Some(self.now.plus(self.limits.turn_grace));
        }
    }

    fn restart_now(&mut self) {
        let Some(reason) = self.restart_reason else { return };
        if reason != RestartReason::User {
            // Back-off between consecutive automatic restarts: wait, still pending.
            if let Some(at) = self.backoff_until() {
                self.restart_grace_until = Some(self.restart_grace_until.map_or(at, |g| g.max(at)));
                return;
            }
            if !self.start_allowed() {
                return self.hold_restarts(RestartHold::RateLimit, None);
            }
            if reason == RestartReason::Memory {
                self.baseline.restarting();
            }
        }
        self.restart_grace_until = None;
        let (tag, message) = match reason {
            RestartReason::Memory => ("memory_limit", wording::RESTARTING),
            RestartReason::Disk => ("disk_limit", wording::DISK_RESTARTING),
            RestartReason::User => ("user", wording::RESTARTING),
        };
        self.emit(EventKind::SessionRestarting { reason: tag.into(), message: message.into() });
        self.begin_stop(StopWhy::Restart(reason), StopHow::Term);
    }

    /// New limits apply to what is still ahead: a running idle timer keeps its start and
    /// takes the new length; the duration limit and the warning are checked again at once
    /// (a shorter limit already passed ends the session now, with the usual grace); the
    /// periodic checks come no later than one new interval from now.
    fn new_limits(&mut self, new: Limits) {
        let budget = new.budget_usd.map(|u| u.0);
        let old = std::mem::replace(&mut self.limits, new);
        let crossed = self.budget.set_default(budget);
        self.budget_crossed(crossed);
        let now = self.now;
        let l = &self.limits;
        if let Some(deadline) = self.idle_deadline {
            let started = Mono::from_millis(deadline.millis().saturating_sub(old.idle_timeout.as_millis() as u64));
            self.idle_deadline = Some(started.plus(l.idle_timeout));
        }
        if old.max_duration != l.max_duration || old.duration_warn_percent != l.duration_warn_percent {
            let elapsed = now.since(self.created_at);
            if elapsed.as_millis() * 100 < l.max_duration.as_millis() * u128::from(l.duration_warn_percent) {
                self.duration.warned = false; // the warning is ahead again
            }
            if elapsed < l.max_duration {
                self.duration_grace_until = None; // no longer over the limit
            }
            self.next_duration_check = now;
        }
        let sooner = |at: Mono, every: Duration| at.min(now.plus(every));
        self.next_duration_check = sooner(self.next_duration_check, l.duration_check);
        self.next_rss_check = sooner(self.next_rss_check, l.rss_check);
        self.next_health_check = sooner(self.next_health_check, l.health_check);
        let turn_grace = l.turn_grace;
        if let Some(at) = self.duration_grace_until {
            self.duration_grace_until = Some(at.min(now.plus(turn_grace)));
        }
        if let Some(at) = self.restart_grace_until {
            self.restart_grace_until = Some(at.min(now.plus(turn_grace)));
        }
        if old.max_rss_mb != self.limits.max_rss_mb
            || old.restart_limit_burst != self.limits.restart_limit_burst
            || old.restart_limit_window != self.limits.restart_limit_window
        {
            self.release_hold();
            self.next_rss_check = now; // measure against the new limit now
        }
        self.tick();
    }

    // ------------------------------------------------------------------ timers

    fn tick(&mut self) {
        let now = self.now;
        // Escalate a stop that is taking too long.
        if let Proc::Stopping { stage, next_at, pid, .. } = &mut self.proc
            && pid.is_some()
            && next_at.is_some_and(|t| t <= now)
        {
            match stage {
                Stage::Settling => {
                    *stage = Stage::ExitTyped;
                    *next_at = Some(now.plus(self.limits.kill_after));
                    self.out.push(Effect::TypeLine("/exit".into()));
                }
                Stage::ExitTyped => {
                    *stage = Stage::Termed;
                    *next_at = Some(now.plus(self.limits.kill_after));
                    self.out.push(Effect::Signal(Sig::Term));
                }
                Stage::Termed => {
                    *stage = Stage::Killed;
                    *next_at = None;
                    self.out.push(Effect::Signal(Sig::Kill));
                }
                Stage::Killed => *next_at = None,
            }
        }
        if let Some(Retry { at: Some(at), failed }) = self.retry
            && at <= now
            && matches!(self.proc, Proc::None)
        {
            self.retry = Some(Retry { at: None, failed });
            self.state = SupervisionState::Recovering;
            self.spawn(Launch::Resume, Purpose::Recovery);
        }
        if let Proc::Starting { since, pid: Some(_), .. } = self.proc
            && (now.since(since) >= READY_FALLBACK
                || self.readiness.quiet_deadline(since, self.last_output).is_some_and(|t| t <= now))
        {
            self.ready();
        }
        let due = self.state != SupervisionState::Terminated && self.duration_due().is_some_and(|t| t <= now);
        if self.next_duration_check <= now || due {
            while self.next_duration_check <= now {
                self.next_duration_check =
                    self.next_duration_check.plus(self.limits.duration_check.max(Duration::from_millis(1)));
            }
            self.duration_check();
        }
        if self.duration_grace_until.is_some_and(|t| t <= now) {
            tracing::info!(session = %self.id, "the turn did not finish within the grace period: interrupting");
            self.end_for_duration(true);
        }
        let live = matches!(self.proc, Proc::Live { .. }) && !self.frozen;
        if self.next_rss_check <= now {
            self.next_rss_check = now.plus(self.limits.rss_check);
            if live {
                self.out.push(Effect::MeasureRss);
            }
        }
        if self.restart_grace_until.is_some_and(|t| t <= now) {
            self.restart_now();
        }
        if self.next_health_check <= now {
            self.next_health_check = now.plus(self.limits.health_check);
            if matches!(self.proc, Proc::Live { .. } | Proc::Starting { pid: Some(_), .. }) {
                self.out.push(Effect::CheckHealth);
            }
        }
        if self.idle_deadline.is_some_and(|t| t <= now) {
            self.idle_deadline = None;
            if self.activity() == Activity::Idle {
                self.try_suspend(SuspendCause::Idle);
            }
        }
        self.maybe_flush_crash();
    }
}

/// Splits typed bytes into lines: (text, ended by Enter). An Enter inside a bracketed
/// paste (`ESC [200~ … ESC [201~`) is part of the paste, not a submission.
fn typed_lines(bytes: &[u8]) -> Vec<(Vec<u8>, bool)> {
    const PASTE_START: &[u8] = b"\x1b[200~";
    const PASTE_END: &[u8] = b"\x1b[201~";
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut pasting = false;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(PASTE_START) || rest.starts_with(PASTE_END) {
            pasting = rest.starts_with(PASTE_START);
            line.extend_from_slice(&rest[..PASTE_START.len()]);
            i += PASTE_START.len();
            continue;
        }
        if bytes[i] == b'\r' && !pasting {
            out.push((std::mem::take(&mut line), true));
        } else {
            line.push(bytes[i]);
        }
        i += 1;
    }
    if !line.is_empty() {
        out.push((line, false));
    }
    out
}

mod budgets;
use budgets::view_reason;

#[cfg(test)]
mod tests;
