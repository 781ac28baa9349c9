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
//!
//! The rules live in parts, one per concern, each a small machine with its own state and
//! tests, composed here: `process` (the process and how it is stopped), `observed`
//! (what the session is doing), `input` (the queue, one-shot lines), `crash`
//! (P4, P5), `restart` (P9, P10, R2), `duration` (P8), `idle` (P6, P7) and
//! `health` (P13, when a process is up). `SessionPolicy` routes each input to its parts
//! and gathers their effects.

mod budgets;
mod crash;
mod duration;
mod health;
mod idle;
mod input;
mod messages;
mod observed;
mod process;
mod restart;

use self::crash::CrashPart;
use self::duration::DurationPart;
use self::health::HealthPart;
use self::idle::IdlePart;
use self::input::InputQueue;
use self::observed::{Observed, from_registry, from_status};
use self::process::{Proc, Purpose, RestartReason, StopHow, StopWhy, SuspendCause};
use self::restart::RestartPart;
use super::budget::SessionBudget;
use super::event::{EventKind, ReadyStatus, SupervisionEvent, wording};
use super::limits::Limits;
use super::view::{Mode, Supervision, SupervisionState, TerminatedReason};
use crate::clock::{Mono, Now, Timestamp};
use crate::ids::SessionId;
use crate::status::HookState;

pub use self::health::READY_FALLBACK;
pub use self::messages::{AgentReport, Delivery, Effect, Input, Launch, ScreenSignal, Sig};
pub use self::process::{EXIT_SETTLE, INTERRUPT_GRACE, StopSignal};

pub use super::activity::Activity;

/// More than this many crashes in a row: unhealthy (seed 003 §4).
pub const MAX_CONSECUTIVE_CRASHES: u32 = 2;
/// After the n-th automatic memory or disk restart within the start-limit window, the
/// next waits `RESTART_BACKOFF × 2^(n-1)`, at most [`RESTART_BACKOFF_MAX`].
pub use crate::supervision::limit_clock::{RESTART_BACKOFF, RESTART_BACKOFF_MAX};

/// Whether the agent can be resumed and recovered (`claude` and work-alikes), or is only
/// monitored (P4: other providers are never restarted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    ClaudeLike,
    MonitoredOnly,
}

/// The policy of one supervised session: the parts, and what they share (the process,
/// the state shown, the clock of the input being handled).
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
    seen: Observed,
    /// When the current process started (wall), for display.
    process_wall: Option<Timestamp>,
    duration: DurationPart,
    restart: RestartPart,
    health: HealthPart,
    idle: IdlePart,
    crash: CrashPart,
    input: InputQueue,
    last_used: Mono,
    last_output: Mono,
    /// "Retry" came while a one-shot answer was still running: done when it ends.
    retry_after_one_shot: bool,
    resume_rejected: bool,
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
            seen: Observed::default(),
            process_wall: None,
            duration: DurationPart::new(at, &limits),
            restart: RestartPart::new(now, &limits),
            health: HealthPart::new(now, limits.health_check),
            idle: IdlePart::default(),
            crash: CrashPart::default(),
            input: InputQueue::default(),
            last_used: now,
            last_output: now,
            retry_after_one_shot: false,
            resume_rejected: false,
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
        self.proc.pid()
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
            && self.input.queue.is_empty()
            && !self.crash.pending
    }

    /// When the user last typed (or the session was created): the LRU key (P7).
    pub fn last_used(&self) -> Mono {
        self.last_used
    }

    pub fn activity(&self) -> Activity {
        self.seen.activity()
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
            created_at: self.duration.created_wall,
            recovery_count: self.crash.recovered,
            restart_count: self.restart.count,
            consecutive_crashes: self.crash.consecutive,
            pending_crash_recovery: self.crash.pending,
            awaiting_permission: self.activity() == Activity::Permission,
            idle_deadline: self.idle.deadline.map(|d| at.wall_at(d)),
            duration_deadline: (self.state != SupervisionState::Terminated)
                .then(|| at.wall_at(self.duration.end(&self.limits))),
            queued_inputs: self.input.queue.len(),
            last_exit_code: self.last_exit_code,
            terminated_reason: self.terminated_reason,
            restarts_held: self.restart.hold,
            budget_usd: self.budget.limit(),
            spent_usd: Some(self.budget.spent()).filter(|s| *s > 0.0),
            suspended_reason: self.suspended_reason(),
        }
    }

    /// The earliest instant at which [`Input::Tick`] has something to do: the earliest
    /// that any part asks for.
    pub fn next_deadline(&self) -> Option<Mono> {
        let counting = self.state != SupervisionState::Terminated;
        if !counting && matches!(self.proc, Proc::None) {
            return None;
        }
        let mut t: Vec<Option<Mono>> = vec![self.restart.grace_until, self.idle.deadline];
        t.extend(self.duration.deadlines(&self.limits, counting));
        match &self.proc {
            Proc::Stopping { next_at, .. } => t.push(*next_at),
            Proc::Starting { since, pid: Some(_), .. } => {
                t.extend(self.health.startup_deadlines(*since, self.last_output));
                t.push(Some(self.health.next_check()));
            }
            Proc::Live { .. } if !self.frozen => {
                t.push(Some(self.restart.next_rss_check()));
                t.push(Some(self.health.next_check()));
            }
            _ => {}
        }
        t.extend(self.crash.deadlines(self.last_output, &self.limits));
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
                    self.idle.touch(now, self.limits.idle_timeout);
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
        self.seen.new_process();
        self.resume_rejected = false;
        self.input.unconfirmed = None;
        let launch = if self.kind == AgentKind::MonitoredOnly { Launch::Fresh } else { launch };
        self.proc =
            Proc::Starting { generation: self.generation, pid: None, since: self.now, launch: launch.clone(), purpose };
        self.process_wall = Some(self.wall);
        self.health.spawned(self.now, self.limits.health_check);
        self.restart.spawned(self.now, &self.limits);
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
                *stage = process::Stage::Termed;
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
        self.input.queue.clear();
        self.crash.pending = false;
    }

    fn cancel_timers(&mut self) {
        self.idle.disarm();
        self.duration.grace_until = None;
        self.restart.grace_until = None;
        self.crash.retry = None;
    }

    fn idle_eligible(&self) -> bool {
        self.claude_like()
            && self.mode == Mode::Persistent
            && self.state == SupervisionState::Running
            && matches!(self.proc, Proc::Live { .. })
    }

    fn next_one_shot(&mut self) {
        if std::mem::take(&mut self.retry_after_one_shot) {
            // The persistent session comes back first; what was typed waits for it.
            return self.user_resume(true);
        }
        if let Some(prompt) = self.input.queue.pop_front() {
            let prompt = String::from_utf8_lossy(&prompt).into_owned();
            self.spawn(Launch::OneShot { prompt }, Purpose::OneShot);
        }
    }

    // ------------------------------------------------------------------ screen and activity

    fn screen_signal(&mut self, signal: ScreenSignal) {
        match signal {
            ScreenSignal::Activity(a) => {
                let before = self.activity();
                self.seen.screen = a;
                self.health.readiness.screen(a);
                // Only the process's own screen proves it is up: the transcript may still be
                // the previous process's (or a refused resume's) words.
                if a != Activity::Unknown && matches!(self.proc, Proc::Starting { pid: Some(_), .. }) {
                    self.ready();
                }
                self.activity_changed(before);
            }
            ScreenSignal::TurnDone => {
                if self.seen.turn_open && !self.activity().busy() {
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
        self.seen.registry = match report.registry {
            Some((p, state)) if Some(p) == pid => from_registry(state),
            _ => Activity::Unknown,
        };
        if self.seen.registry != Activity::Unknown {
            self.health.readiness.registry();
        }
        self.seen.transcript = from_status(report.status);
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
            self.seen.turn_open = true;
            self.input.unconfirmed = None;
            self.restart.baseline.turn_started();
            self.health.readiness.turn(self.seen.screen, self.seen.registry);
            self.idle.disarm();
        } else if before.busy() {
            // A finished turn, or a dialog answered "no": a safe idle either way.
            self.turn_done();
        } else {
            self.maybe_flush_crash();
        }
    }

    fn turn_done(&mut self) {
        self.seen.turn_open = false;
        if self.state == SupervisionState::Running && !self.crash.pending && self.restart.reason.is_none() {
            self.crash.consecutive = 0;
        }
        if self.idle_eligible() {
            self.idle.arm(self.now, self.limits.idle_timeout);
        }
        if self.duration.grace_until.is_some() {
            self.end_for_duration(false);
        } else if self.restart.reason.is_some() && self.state == SupervisionState::RestartPending {
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
            self.input.unconfirmed = Some(Vec::new());
        }
        self.crash.retry = None;
        match purpose {
            Purpose::Initial | Purpose::OneShot => {}
            Purpose::Recovery => {
                self.crash.succeeded(self.now);
                self.state = SupervisionState::Running;
                self.emit(EventKind::SessionRecovered { message: wording::RECOVERED.into() });
            }
            Purpose::Restart(reason) => {
                if reason != RestartReason::User {
                    self.restart.count += 1;
                }
                self.restart.reason = None;
                self.state = SupervisionState::Running;
                self.emit(EventKind::SessionReady { status: ReadyStatus::Resumed, message: wording::RESTORED.into() });
            }
            Purpose::Fresh => {
                self.restart.reason = None;
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

    // ------------------------------------------------------------------ exits

    fn exited(&mut self, generation: u64, code: i32, last_line: Option<String>) {
        if !self.current(generation) {
            return;
        }
        self.last_exit_code = Some(code);
        self.idle.disarm();
        self.seen.forget();
        let proc = std::mem::replace(&mut self.proc, Proc::None);
        self.frozen = false;
        match proc {
            Proc::None => {}
            Proc::Stopping { why, .. } => self.after_stop(why),
            Proc::Starting { launch, purpose, .. } => {
                if purpose == Purpose::OneShot {
                    return self.exited_one_shot(code, last_line);
                }
                if self.resume_rejected && launch == Launch::Resume {
                    return self.resume_refused(purpose);
                }
                match purpose {
                    Purpose::Initial => {
                        self.abnormal(code, last_line.as_deref());
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
                self.abnormal(code, last_line.as_deref());
                if !self.claude_like() {
                    self.emit(EventKind::SessionExited { exit_code: code });
                    return self.terminate(TerminatedReason::Exited);
                }
                self.crashed_out();
            }
        }
    }

    /// Says what an exit other than 0 means, with the last line on screen.
    fn abnormal(&mut self, code: i32, last_line: Option<&str>) {
        if code != 0 {
            self.emit(EventKind::Error { exit_code: code, message: wording::abnormal_exit(code, last_line) });
        }
    }

    fn exited_one_shot(&mut self, code: i32, last_line: Option<String>) {
        self.abnormal(code, last_line.as_deref());
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
        self.crash.retry = None;
        self.state = SupervisionState::Recovering;
        // What it was given went with it: the new session gets it.
        self.input.requeue_unconfirmed();
        self.spawn(Launch::Fresh, Purpose::Fresh);
    }

    // ------------------------------------------------------------------ the user

    fn user_resume(&mut self, restart: bool) {
        self.restart.release_hold();
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
                    self.duration.new_run(Now { wall: self.wall, mono: self.now }, &self.limits);
                }
            }
            _ => {}
        }
        if !matches!(self.proc, Proc::None) {
            return;
        }
        self.terminated_reason = None;
        self.crash.forgive();
        self.crash.retry = None;
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
        self.restart.release_hold();
        match &self.proc {
            Proc::Live { purpose, .. } if *purpose != Purpose::OneShot => {
                self.crash.forgive();
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

    // ------------------------------------------------------------------ limits and timers

    /// New limits apply to what is still ahead: a running idle timer keeps its start and
    /// takes the new length; the duration limit and the warning are checked again at once
    /// (a shorter limit already passed ends the session now, with the usual grace); the
    /// periodic checks come no later than one new interval from now.
    fn new_limits(&mut self, new: Limits) {
        let budget = new.budget_usd.map(|u| u.0);
        let old = std::mem::replace(&mut self.limits, new);
        let crossed = self.budget.set_default(budget);
        self.budget_crossed(crossed);
        let (now, l) = (self.now, &self.limits);
        self.idle.retime(old.idle_timeout, l.idle_timeout);
        self.duration.new_limits(&old, l, now);
        self.health.sooner(now, l.health_check);
        self.restart.new_limits(&old, l, now);
        self.tick();
    }

    /// Each part's timers, in order: a stop's escalation, a resume attempt, a process
    /// coming up, the duration limit, memory, a pending restart, health, idle, a pending
    /// crash.
    fn tick(&mut self) {
        let now = self.now;
        if let Some(effect) = self.proc.escalate(now, self.limits.kill_after) {
            self.out.push(effect);
        }
        if matches!(self.proc, Proc::None) && self.crash.retry_due(now) {
            self.state = SupervisionState::Recovering;
            self.spawn(Launch::Resume, Purpose::Recovery);
        }
        if let Proc::Starting { since, pid: Some(_), .. } = self.proc
            && self.health.up_by(since, self.last_output, now)
        {
            self.ready();
        }
        let counting = self.state != SupervisionState::Terminated;
        if self.duration.check_due(now, &self.limits, counting) {
            self.duration_check();
        }
        if self.duration.grace_over(now) {
            tracing::info!(session = %self.id, "the turn did not finish within the grace period: interrupting");
            self.end_for_duration(true);
        }
        let live = matches!(self.proc, Proc::Live { .. }) && !self.frozen;
        if self.restart.rss_due(now, &self.limits) && live {
            self.out.push(Effect::MeasureRss);
        }
        if self.restart.grace_over(now) {
            self.restart_now();
        }
        if self.health.due(now, self.limits.health_check)
            && matches!(self.proc, Proc::Live { .. } | Proc::Starting { pid: Some(_), .. })
        {
            self.out.push(Effect::CheckHealth);
        }
        if self.idle.due(now) && self.activity() == Activity::Idle {
            self.try_suspend(SuspendCause::Idle);
        }
        self.maybe_flush_crash();
    }
}

#[cfg(test)]
mod tests;
