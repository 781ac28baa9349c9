//! The [`Supervisor`]: the handle the faces (desktop shell, `mimesis run`) use to create,
//! attach to, type into and control supervised sessions, read their resources and
//! metrics, and follow their events. Behind it run one actor per session
//! (`super::actor`) and one fleet task, which applies the fleet-wide rules: the
//! live-session cap (P7), disk usage (P10), the orphan and zombie scan (P11), and keeps
//! the ledger of processes (so a later start can clean up after a crash of Mimesis) and
//! the published metrics up to date, through a recorder thread so that neither a busy
//! database nor a slow disk ever holds it up.
//!
//! Limits can change while sessions run ([`Supervisor::set_limits`]); the wiring follows
//! the stored settings and calls it, so `settings_set` reaches running sessions at once.
//! The roster learns each session's supervision through [`Roster`], and the transcript's
//! agent's own records (registry, hooks, transcript) come in through
//! [`Supervisor::agent_report`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot};

use mimesis_core::clock::{Clock, Timestamp};
use mimesis_core::dialog::{Answer, Dialog};
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::AgentCommand;
use mimesis_core::supervision::event::{EventKind, SupervisionEvent, wording};
use mimesis_core::supervision::fleet::{self, CapEntry, DiskAction, DiskWatch, OrphanWatch, ScanFacts};
use mimesis_core::supervision::interrupted::{self, Interrupted, InterruptedBy};
use mimesis_core::supervision::keys::AnswerError;
use mimesis_core::supervision::ledger::{Owner, ProcessLedger, ProcessRecord};
use mimesis_core::supervision::limits::Limits;
use mimesis_core::supervision::policy::{AgentReport, Delivery, Input, SessionPolicy, StopSignal};
use mimesis_core::supervision::view::{Metrics, ResourceRow, Resources, Supervision, SupervisionState};
use mimesis_os::procs;

use crate::actor::{Attachment, SessionActor, SessionCmd};
use crate::cleanup::{self, Cleanup};
use crate::host::Host;
pub use crate::host::{Roster, SupervisorConfig};
use crate::metrics;
use crate::process::StartError;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("no supervised session {0}; it may have been deleted")]
    UnknownSession(SessionId),
    #[error("session {0} is {1}; resume it to send input")]
    NotRunning(SessionId, &'static str),
    #[error("{0} is not a folder; choose an existing folder to run the session in")]
    NotAFolder(PathBuf),
    #[error("session {0} is already supervised; attach to it instead")]
    AlreadySupervised(SessionId),
    #[error("{0}")]
    Spawn(StartError),
    #[error("the supervisor has stopped")]
    Stopped,
    #[error("could not answer session {0}: {1}")]
    Answer(SessionId, AnswerError),
}

pub(crate) enum FleetMsg {
    /// A session's supervision changed (the cap, the metrics).
    Changed,
    /// A counter or a measurement changed.
    Metrics,
    LimitsChanged,
    ProcessStarted(ProcessRecord),
    ProcessEnded {
        pid: u32,
    },
    Tick(oneshot::Sender<()>),
    Stop,
}

#[derive(Default)]
struct Counters {
    zombies: AtomicU64,
    orphans: AtomicU64,
    recoveries: AtomicU64,
    suspensions: AtomicU64,
    terminations: AtomicU64,
    restarts: AtomicU64,
}

struct Entry {
    tx: mpsc::UnboundedSender<SessionCmd>,
    supervision: Supervision,
    cap: CapEntry,
    rss: u64,
    /// (CPU ticks, when): for the CPU share between two samples.
    cpu: Option<(u64, Instant)>,
    cpu_percent: f64,
}

/// State shared by the handle, the session actors and the fleet task.
pub(crate) struct Shared {
    pub(crate) config: SupervisorConfig,
    pub(crate) clock: Arc<dyn Clock>,
    /// The limits in force, for new sessions and the fleet rules.
    limits: Mutex<Limits>,
    /// The program new sessions run.
    agent: Mutex<AgentCommand>,
    recorder: Recorder,
    sessions: Mutex<HashMap<SessionId, Entry>>,
    /// Old id → new id after a fresh start replaced a corrupted session (EC-007).
    aliases: Mutex<HashMap<SessionId, SessionId>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    events: broadcast::Sender<Arc<SupervisionEvent>>,
    fleet: mpsc::UnboundedSender<FleetMsg>,
    counters: Counters,
    /// An agent was started since the last sweep at shutdown: something may carry this
    /// process's marks.
    marked: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Host for Shared {
    fn config(&self) -> &SupervisorConfig {
        &self.config
    }

    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    fn agent(&self) -> AgentCommand {
        lock(&self.agent).clone()
    }

    fn emit(&self, ev: SupervisionEvent) {
        let c = &self.counters;
        match &ev.kind {
            EventKind::SessionRecovered { .. } => c.recoveries.fetch_add(1, Ordering::Relaxed),
            EventKind::SessionSuspended { .. } => c.suspensions.fetch_add(1, Ordering::Relaxed),
            EventKind::SessionTerminated { .. } => c.terminations.fetch_add(1, Ordering::Relaxed),
            EventKind::SessionReady { .. } => c.restarts.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        tracing::info!(event = ev.type_name(), session = %ev.session_id, message = ev.message().unwrap_or(""), "supervision");
        let ev = Arc::new(ev);
        if self.config.metrics_dir.is_some() {
            self.recorder.event(ev.clone());
        }
        let _ = self.events.send(ev);
        self.fleet(FleetMsg::Metrics);
    }

    fn publish(&self, id: &SessionId, sup: &Supervision, policy: &SessionPolicy, cwd: &Path) {
        {
            let mut sessions = lock(&self.sessions);
            if let Some(e) = sessions.get_mut(id) {
                e.supervision = sup.clone();
                e.cap = CapEntry {
                    id: id.clone(),
                    live: policy.is_live(),
                    suspendable: policy.suspendable(),
                    last_used: policy.last_used(),
                };
            }
        }
        if let Some(roster) = &self.config.roster {
            roster.show(TranscriptLocation::expected(&self.config.config_root, cwd, id), Some(sup.clone()));
        }
        self.fleet(FleetMsg::Changed);
    }

    fn usage(&self, id: &SessionId, rss: u64, cpu_ticks: u64) {
        let mut sessions = lock(&self.sessions);
        if let Some(e) = sessions.get_mut(id) {
            e.rss = rss;
            let now = Instant::now();
            if let Some((before, at)) = e.cpu {
                let secs = now.duration_since(at).as_secs_f64();
                if secs > 0.0 {
                    e.cpu_percent =
                        cpu_ticks.saturating_sub(before) as f64 / procs::ticks_per_second() as f64 / secs * 100.0;
                }
            }
            e.cpu = Some((cpu_ticks, now));
        }
        drop(sessions);
        self.fleet(FleetMsg::Metrics);
    }

    /// When the other supervised sessions' processes started.
    fn other_process_starts(&self, id: &SessionId) -> Vec<Timestamp> {
        lock(&self.sessions)
            .iter()
            .filter(|(k, _)| *k != id)
            .filter_map(|(_, e)| e.supervision.process_started_at)
            .collect()
    }

    fn rename(&self, from: &SessionId, to: &SessionId, cwd: &Path) {
        {
            let mut sessions = lock(&self.sessions);
            if let Some(mut e) = sessions.remove(from) {
                e.cap.id = to.clone();
                sessions.insert(to.clone(), e);
            }
        }
        lock(&self.aliases).insert(from.clone(), to.clone());
        if let Some(roster) = &self.config.roster {
            roster.show(TranscriptLocation::expected(&self.config.config_root, cwd, from), None);
        }
    }

    fn finished(&self, id: &SessionId) {
        let removed = lock(&self.sessions).remove(id);
        if let (Some(e), Some(roster)) = (removed, &self.config.roster) {
            let loc = TranscriptLocation::expected(&self.config.config_root, Path::new(&e.supervision.cwd), id);
            roster.show(loc, None);
        }
        self.fleet(FleetMsg::Changed);
    }

    fn process_started(&self, record: ProcessRecord) {
        self.marked.store(true, Ordering::Relaxed);
        self.fleet(FleetMsg::ProcessStarted(record));
    }

    fn process_ended(&self, pid: u32) {
        self.fleet(FleetMsg::ProcessEnded { pid });
    }
}

impl Shared {
    pub(crate) fn limits(&self) -> Limits {
        lock(&self.limits).clone()
    }

    fn set_limits(&self, limits: Limits) {
        *lock(&self.limits) = limits.clone();
        let senders: Vec<_> = lock(&self.sessions).values().map(|e| e.tx.clone()).collect();
        for tx in senders {
            let _ = tx.send(SessionCmd::Control(Input::Limits(Box::new(limits.clone()))));
        }
        self.fleet(FleetMsg::LimitsChanged);
    }

    /// P14, from the counters and the last measurements.
    fn metrics(&self) -> Metrics {
        let c = &self.counters;
        let rss_bytes = lock(&self.sessions)
            .iter()
            .filter(|(_, e)| e.supervision.pid.is_some())
            .map(|(k, e)| (k.to_string(), e.rss))
            .collect();
        Metrics {
            rss_bytes,
            zombie_processes_cleaned_total: c.zombies.load(Ordering::Relaxed),
            orphans_killed_total: c.orphans.load(Ordering::Relaxed),
            recoveries_total: c.recoveries.load(Ordering::Relaxed),
            suspensions_total: c.suspensions.load(Ordering::Relaxed),
            terminations_total: c.terminations.load(Ordering::Relaxed),
            restarts_total: c.restarts.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn fleet(&self, msg: FleetMsg) {
        let _ = self.fleet.send(msg);
    }

    fn resolve(&self, id: &SessionId) -> SessionId {
        let aliases = lock(&self.aliases);
        let mut id = id.clone();
        for _ in 0..8 {
            match aliases.get(&id) {
                Some(next) => id = next.clone(),
                None => break,
            }
        }
        id
    }

    /// The session supervised under exactly `id`. A transcript's status is about its own
    /// session: after EC-007 the corrupted one's must not drive the one that replaced it.
    fn transcript_target(&self, id: &SessionId) -> Option<mpsc::UnboundedSender<SessionCmd>> {
        lock(&self.sessions).get(id).map(|e| e.tx.clone())
    }

    fn sender(&self, id: &SessionId) -> Result<mpsc::UnboundedSender<SessionCmd>, SupervisorError> {
        let id = self.resolve(id);
        lock(&self.sessions).get(&id).map(|e| e.tx.clone()).ok_or(SupervisorError::UnknownSession(id))
    }
}

/// The handle to supervised sessions. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<Shared>,
    cleanup: Arc<Cleanup>,
}

impl Supervisor {
    /// Starts the supervisor: cleans up after earlier runs (P11), then runs the fleet
    /// task. Must be called within a tokio runtime.
    pub async fn start(config: SupervisorConfig) -> Supervisor {
        if config.subreaper && !procs::become_subreaper() {
            tracing::warn!("cannot become a child subreaper; orphans of dead agents go to init");
        }
        let me = mimesis_os::owner::me();
        let cleanup = if config.clean_previous {
            let (ledger, kill_after, me) = (config.ledger.clone(), config.limits.kill_after, me.clone());
            let data = config.data_dir.clone();
            let now = config.clock.now();
            let clean = move || {
                let mut c = cleanup::clean_previous_runs(ledger.as_ref(), &me, kill_after).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "could not read the ledger of supervised processes");
                    Cleanup::default()
                });
                // Their sessions were running when their Mimesis died: offered for resume.
                let crashed =
                    interrupted::after_crash(c.resumable.iter().map(|r| (&r.session_id, r.cwd.as_str())), now);
                if !crashed.is_empty()
                    && let Err(e) = ledger.mark_interrupted(&crashed)
                {
                    tracing::warn!(error = %e, "could not record the sessions a crash of Mimesis interrupted");
                }
                // What they left outside their agents' sessions (`setsid`), or never recorded.
                if let Some(data) = data {
                    c.killed.extend(cleanup::end_strays_of_gone_owners(&data, &me, kill_after));
                    c.killed.sort_unstable();
                    c.killed.dedup();
                }
                c
            };
            tokio::task::spawn_blocking(clean).await.unwrap_or_default()
        } else {
            Cleanup::default()
        };
        if let Some(dir) = config.metrics_dir.clone() {
            // Snapshots of supervisors that died without withdrawing them.
            let _ = tokio::task::spawn_blocking(move || metrics::collect(&dir, true)).await;
        }
        let (fleet_tx, fleet_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(4096);
        let counters = Counters::default();
        // What the start-up cleanup killed counts as cleaned up (P14).
        let killed = cleanup.killed.len() as u64;
        counters.orphans.fetch_add(killed, Ordering::Relaxed);
        counters.zombies.fetch_add(killed, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            clock: config.clock.clone(),
            limits: Mutex::new(config.limits.clone()),
            agent: Mutex::new(config.agent.clone()),
            recorder: Recorder::start(config.ledger.clone(), me, config.metrics_dir.clone()),
            config,
            sessions: Mutex::new(HashMap::new()),
            aliases: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
            events,
            fleet: fleet_tx,
            counters,
            marked: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(fleet_task(shared.clone(), fleet_rx));
        Supervisor { shared, cleanup: Arc::new(cleanup) }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.shared.limits()
    }

    /// New limits, from now on: for new sessions, the fleet's rules, and every running
    /// session's future checks (a new idle timeout, duration or memory limit applies at
    /// once; see the policy). Taken as given: validate them first ([`Limits::validate`])
    /// where they come from a person.
    pub fn set_limits(&self, limits: Limits) {
        self.shared.set_limits(limits);
    }

    /// The program new sessions run.
    pub fn agent(&self) -> AgentCommand {
        self.shared.agent()
    }

    /// Another program for sessions created from now on (running ones keep theirs).
    pub fn set_agent(&self, agent: AgentCommand) {
        *lock(&self.shared.agent) = agent;
    }

    /// What the start-up cleanup of earlier runs did.
    pub fn previous_runs(&self) -> &Cleanup {
        &self.cleanup
    }

    /// Starts a supervised session in `cwd`: a new one (Mimesis chooses its id and passes
    /// `--session-id`), or `resume` (`--resume <id>`). Returns its id.
    pub async fn create(&self, cwd: &Path, resume: Option<SessionId>) -> Result<SessionId, SupervisorError> {
        self.create_sized(cwd, resume, None).await
    }

    /// [`Supervisor::create`] with the terminal size the agent starts at (columns, rows; the
    /// configured size when `None`): the size of the terminal that will show it, so its first
    /// screen is drawn for it. Clamped to 20–1000 columns and 5–500 rows.
    pub async fn create_sized(
        &self,
        cwd: &Path,
        resume: Option<SessionId>,
        size: Option<(u16, u16)>,
    ) -> Result<SessionId, SupervisorError> {
        let resuming = resume.is_some();
        self.start_session(cwd, resume.unwrap_or_else(new_session_id), resuming, size).await
    }

    /// A new supervised session under an id chosen by the caller (a UUID, as
    /// `--session-id` requires): a window that starts a session on another machine names
    /// it before its row exists there.
    pub async fn create_new_as(
        &self,
        cwd: &Path,
        id: SessionId,
        size: Option<(u16, u16)>,
    ) -> Result<SessionId, SupervisorError> {
        self.start_session(cwd, id, false, size).await
    }

    async fn start_session(
        &self,
        cwd: &Path,
        id: SessionId,
        resuming: bool,
        size: Option<(u16, u16)>,
    ) -> Result<SessionId, SupervisorError> {
        let cwd = cwd
            .canonicalize()
            .ok()
            .filter(|c| c.is_dir())
            .ok_or_else(|| SupervisorError::NotAFolder(cwd.to_owned()))?;
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut sessions = lock(&self.shared.sessions);
            if sessions.contains_key(&id) {
                return Err(SupervisorError::AlreadySupervised(id));
            }
            let placeholder = Supervision::starting(
                &self.shared.agent().display_name(),
                &cwd.to_string_lossy(),
                self.shared.clock.now(),
            );
            sessions.insert(
                id.clone(),
                Entry {
                    tx,
                    cap: CapEntry {
                        id: id.clone(),
                        live: true,
                        suspendable: false,
                        last_used: self.shared.clock.mono(),
                    },
                    supervision: placeholder,
                    rss: 0,
                    cpu: None,
                    cpu_percent: 0.0,
                },
            );
        }
        let s = &self.shared;
        let (policy, first) = SessionPolicy::new(
            id.clone(),
            s.limits(),
            s.agent().kind,
            resuming,
            s.clock.both(),
            Box::new(new_session_id),
        );
        let size = size.map_or(s.config().size, |(cols, rows)| (cols.clamp(20, 1000), rows.clamp(5, 500)));
        let actor = SessionActor::new(policy, first, s.clone(), cwd, size, rx);
        let sup = actor.supervision();
        if sup.state == SupervisionState::Terminated && sup.pid.is_none() {
            // The first launch failed outright (no such program): say why, keep nothing, not
            // even the row its first state showed in the roster (a Terminated row whose every
            // button then answered "no supervised session").
            s.finished(&id);
            return Err(SupervisorError::Spawn(why_not_started(&s.agent().program)));
        }
        let handle = tokio::spawn(tracing::Instrument::instrument(actor.run(), tracing::info_span!("session", %id)));
        lock(&s.tasks).push(handle);
        // Running again: no longer one a quit interrupted.
        s.recorder.send(RecordMsg::Clear(vec![id.clone()]));
        Ok(id)
    }

    /// The kept scrollback and a stream of new output. `terminal`: the client is a
    /// terminal emulator that answers the agent's queries (xterm.js, a real terminal);
    /// while none is attached, Mimesis answers them itself.
    pub async fn attach(&self, id: &SessionId, terminal: bool) -> Result<Attachment, SupervisorError> {
        let (reply, rx) = oneshot::channel();
        self.send(id, SessionCmd::Attach { terminal, reply })?;
        rx.await.map_err(|_| SupervisorError::Stopped)
    }

    /// For a terminal attached already (a resync of its output): the last `keep` bytes of
    /// the scrollback, and every byte after them. Counts no terminal.
    pub async fn tail(&self, id: &SessionId, keep: usize) -> Result<Attachment, SupervisorError> {
        let (reply, rx) = oneshot::channel();
        self.send(id, SessionCmd::Tail { keep, reply })?;
        rx.await.map_err(|_| SupervisorError::Stopped)
    }

    pub fn detach(&self, id: &SessionId, terminal: bool) {
        let _ = self.send(id, SessionCmd::Detach { terminal });
    }

    /// Keystrokes or a paste. `Ok(true)`: kept until the session is back (P2).
    pub async fn input(&self, id: &SessionId, data: &[u8]) -> Result<bool, SupervisorError> {
        let (reply, rx) = oneshot::channel();
        self.send(id, SessionCmd::Input(data.to_vec(), reply))?;
        match rx.await.map_err(|_| SupervisorError::Stopped)? {
            Delivery::Written => Ok(false),
            Delivery::Queued => Ok(true),
            Delivery::Refused => {
                let state = self.supervision(id).map(|s| s.state).unwrap_or(SupervisionState::Terminated);
                let name = match state {
                    SupervisionState::Unhealthy => "unhealthy",
                    _ => "terminated",
                };
                Err(SupervisorError::NotRunning(self.shared.resolve(id), name))
            }
        }
    }

    pub fn resize(&self, id: &SessionId, cols: u16, rows: u16) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Resize { cols, rows })
    }

    /// Stops the process; the session stays, `terminated` (reason `user`), resumable.
    pub fn stop(&self, id: &SessionId) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Control(Input::Stop))
    }

    /// Resumes a suspended, terminated or unhealthy session (`--resume <id>`).
    pub fn resume(&self, id: &SessionId) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Control(Input::Resume))
    }

    /// Graceful restart with resume; also "Retry" for an unhealthy session.
    pub fn restart(&self, id: &SessionId) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Control(Input::Restart))
    }

    /// Stops the process, cancels every timer, forgets the supervision (the transcript stays).
    pub fn delete(&self, id: &SessionId) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Control(Input::Delete))
    }

    /// Answers the dialog on a session's screen (a permission prompt, a question, plan
    /// mode's exit) with the option `answer` names, chosen by its label; returns that label
    /// once the dialog is gone. Nothing is chosen without this call: it is the user's
    /// explicit action.
    pub async fn answer(&self, id: &SessionId, answer: Answer) -> Result<String, SupervisorError> {
        let (reply, rx) = oneshot::channel();
        self.send(id, SessionCmd::Answer(answer, reply))?;
        rx.await.map_err(|_| SupervisorError::Stopped)?.map_err(|e| SupervisorError::Answer(self.shared.resolve(id), e))
    }

    /// The dialog on a session's screen, if one is there: what [`Supervisor::answer`]
    /// chooses from.
    pub async fn dialog(&self, id: &SessionId) -> Result<Option<Dialog>, SupervisorError> {
        Ok(Dialog::read(&self.screen(id).await?))
    }

    /// The visible screen of a session as Mimesis models it.
    pub async fn screen(&self, id: &SessionId) -> Result<Vec<String>, SupervisorError> {
        let (reply, rx) = oneshot::channel();
        self.send(id, SessionCmd::Screen(reply))?;
        rx.await.map_err(|_| SupervisorError::Stopped)
    }

    fn send(&self, id: &SessionId, cmd: SessionCmd) -> Result<(), SupervisorError> {
        self.shared.sender(id)?.send(cmd).map_err(|_| SupervisorError::UnknownSession(id.clone()))
    }

    /// What a supervised session's own records say (its live registry entry, hooks and
    /// transcript; the wiring follows the engine's reports and calls this): the policy
    /// reads the agent through these before its screen. A report for a session not
    /// supervised under exactly this id goes nowhere: after a fresh start replaced a
    /// corrupted session (EC-007), the old transcript must not drive the new one.
    pub fn agent_report(&self, id: &SessionId, report: AgentReport) {
        if let Some(tx) = self.shared.transcript_target(id) {
            let _ = tx.send(SessionCmd::Control(Input::Agent(report)));
        }
    }

    /// Issue 36: what a supervised session has spent so far (its transcript's cost, in US
    /// dollars; the wiring follows the roster). Like [`Supervisor::agent_report`], only a
    /// session supervised under exactly this id takes it.
    pub fn spend(&self, id: &SessionId, usd: f64) {
        if let Some(tx) = self.shared.transcript_target(id) {
            let _ = tx.send(SessionCmd::Control(Input::Spend(usd)));
        }
    }

    /// This session's own budget in US dollars ("Continue (raise the budget)"); `None`:
    /// the settings' `budgetUsd` again.
    pub fn set_budget(&self, id: &SessionId, usd: Option<f64>) -> Result<(), SupervisorError> {
        self.send(id, SessionCmd::Control(Input::Budget(usd)))
    }

    /// The fleet's daily budget is reached (its spend and limit), or no longer: every
    /// supervised session is suspended at its next idle moment while it is.
    pub fn fleet_budget(&self, reached: Option<(f64, f64)>) {
        let txs: Vec<_> = lock(&self.shared.sessions).values().map(|e| e.tx.clone()).collect();
        for tx in txs {
            let _ = tx.send(SessionCmd::Control(Input::FleetBudget(reached)));
        }
    }

    /// Supervision events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SupervisionEvent>> {
        self.shared.events.subscribe()
    }

    /// Sends an event about a session this supervisor does not run itself (a background
    /// session of Claude Code's service under Mimesis's limits) to every subscriber, counted
    /// and recorded like its own.
    pub fn publish_event(&self, ev: SupervisionEvent) {
        self.shared.emit(ev);
    }

    /// The supervision of a session (following a rename), if it is supervised.
    pub fn supervision(&self, id: &SessionId) -> Option<Supervision> {
        let id = self.shared.resolve(id);
        lock(&self.shared.sessions).get(&id).map(|e| e.supervision.clone())
    }

    /// The id a session goes by now (after a fresh start replaced it, EC-007).
    pub fn current_id(&self, id: &SessionId) -> SessionId {
        self.shared.resolve(id)
    }

    /// Every supervised session.
    pub fn sessions(&self) -> Vec<(SessionId, Supervision)> {
        let mut v: Vec<_> =
            lock(&self.shared.sessions).iter().map(|(k, e)| (k.clone(), e.supervision.clone())).collect();
        v.sort_by_key(|a| a.1.created_at);
        v
    }

    /// The resource view (P7) and the metrics (P14). RSS is measured now.
    pub async fn resources(&self) -> Resources {
        let now = self.shared.clock.now();
        let entries: Vec<(SessionId, Supervision, f64)> = lock(&self.shared.sessions)
            .iter()
            .map(|(k, e)| (k.clone(), e.supervision.clone(), e.cpu_percent))
            .collect();
        let pids: Vec<(SessionId, u32)> =
            entries.iter().filter_map(|(k, s, _)| s.pid.map(|p| (k.clone(), p))).collect();
        let usage = tokio::task::spawn_blocking(move || {
            let stats = procs::all();
            let page = procs::page_size();
            pids.into_iter()
                .map(|(id, pid)| {
                    let rss = procs::tree(pid, &stats)
                        .iter()
                        .filter(|s| s.state != 'Z')
                        .map(|s| s.rss_pages * page)
                        .sum::<u64>();
                    (id, rss)
                })
                .collect::<HashMap<SessionId, u64>>()
        })
        .await
        .unwrap_or_default();
        let mut rows = Vec::new();
        for (id, s, cpu) in entries {
            let rss = usage.get(&id).copied().unwrap_or(0);
            if let Some(e) = lock(&self.shared.sessions).get_mut(&id)
                && s.pid.is_some()
            {
                e.rss = rss;
            }
            if s.pid.is_none() {
                continue; // the resource view lists live sessions
            }
            rows.push(ResourceRow {
                session_id: id,
                cwd: s.cwd.clone(),
                pid: s.pid,
                started_at: s.process_started_at,
                uptime_secs: s.process_started_at.map_or(0, |t| now.since(t).as_secs()),
                rss_bytes: rss,
                cpu_percent: (cpu * 10.0).round() / 10.0,
                state: s.state,
                idle_remaining_secs: s.idle_deadline.map(|t| t.since(now).as_secs()),
                recovery_count: s.recovery_count,
            });
        }
        rows.sort_by_key(|a| a.started_at);
        Resources { rows, metrics: self.metrics() }
    }

    /// P14.
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics()
    }

    /// Re-evaluates every timer at the clock's current time (tests move a manual clock,
    /// then tick), including the fleet's disk and orphan checks when due.
    pub async fn tick(&self) {
        let senders: Vec<_> = lock(&self.shared.sessions).values().map(|e| e.tx.clone()).collect();
        for tx in senders {
            let _ = tx.send(SessionCmd::Control(Input::Tick));
        }
        let (reply, rx) = oneshot::channel();
        self.shared.fleet(FleetMsg::Tick(reply));
        let _ = rx.await;
    }

    /// The sessions a quit or a crash of Mimesis interrupted (this run's predecessors', or
    /// another Mimesis's on the same data dir) that are not supervised now: what the
    /// window offers to resume. Reads the ledger.
    pub async fn interrupted(&self) -> Vec<Interrupted> {
        let ledger = self.shared.config.ledger.clone();
        let recorded = tokio::task::spawn_blocking(move || ledger.interrupted()).await;
        let recorded = match recorded {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the interrupted sessions");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        let supervised: HashSet<SessionId> = lock(&self.shared.sessions).keys().cloned().collect();
        interrupted::offered(&recorded, &supervised)
    }

    /// The user dismissed these sessions' offer to resume: forgotten.
    pub fn dismiss_interrupted(&self, ids: Vec<SessionId>) {
        self.shared.recorder.send(RecordMsg::Clear(ids));
    }

    /// Records these sessions as interrupted (a hand-over to Claude Code's service that
    /// failed after Mimesis stopped them): offered for resume at the next start.
    pub fn mark_interrupted(&self, marks: Vec<Interrupted>) {
        if !marks.is_empty() {
            self.shared.recorder.send(RecordMsg::Mark(marks));
        }
    }

    /// P12: stops every session in parallel (SIGTERM, grace, SIGKILL) and waits for them.
    /// Those still running are recorded as interrupted by a quit, to be offered for resume.
    pub async fn shutdown(&self) {
        self.stop_all(InterruptedBy::Quit, || Input::Shutdown).await;
    }

    /// [`Supervisor::shutdown`] because this process got `signal` (SIGTERM, SIGINT,
    /// SIGHUP): each session ends with a `session_terminated` of reason `signal`.
    pub async fn shutdown_signalled(&self, signal: StopSignal) {
        self.stop_all(InterruptedBy::Signal, || Input::Signalled(signal)).await;
    }

    async fn stop_all(&self, by: InterruptedBy, input: impl Fn() -> Input) {
        let cut = interrupted::at_quit(&self.sessions(), by, self.shared.clock.now());
        if !cut.is_empty() {
            self.shared.recorder.send(RecordMsg::Mark(cut));
        }
        let senders: Vec<_> = lock(&self.shared.sessions).values().map(|e| e.tx.clone()).collect();
        for tx in senders {
            let _ = tx.send(SessionCmd::Control(input()));
        }
        let tasks: Vec<_> = lock(&self.shared.tasks).drain(..).collect();
        let limit = self.shared.limits().kill_after * 2 + Duration::from_secs(3);
        let all = futures_join_all(tasks);
        if tokio::time::timeout(limit, all).await.is_err() {
            tracing::warn!("some sessions did not stop in time; their processes were killed");
        }
        // What the agents started and left behind, in their sessions or out of them
        // (`setsid`): it carries this process's marks, and nothing of ours outlives us.
        if let Some(data) =
            self.shared.config.data_dir.clone().filter(|_| self.shared.marked.swap(false, Ordering::Relaxed))
        {
            let me = self.shared.recorder.owner.clone();
            let kill_after = self.shared.limits().kill_after;
            let mine = move |o: (u32, u64)| o == (me.pid, me.start_ticks);
            let _ = tokio::task::spawn_blocking(move || cleanup::end_strays(&data, mine, kill_after)).await;
        }
        self.shared.fleet(FleetMsg::Stop);
        // Nothing of ours runs any more: no record to keep, no metrics to show.
        self.shared.recorder.finish().await;
    }
}

async fn futures_join_all(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        let _ = t.await;
    }
}

/// A new session id: a UUID, as `--session-id` requires.
pub fn new_session_id() -> SessionId {
    SessionId::parse(&uuid::Uuid::new_v4().to_string()).expect("a UUID is a valid session id")
}

/// Why `program` could not be started (for a failed first launch).
fn why_not_started(program: &Path) -> StartError {
    let found = if let Some(found) = mimesis_os::programs::locate_here(program) {
        Some(found.program)
    } else if program.components().count() > 1 {
        program.is_file().then(|| program.to_owned())
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|c| c.is_file()))
            .unwrap_or(None)
    };
    match found {
        Some(p) => StartError::NotExecutable(p),
        None => StartError::NotFound(program.to_owned()),
    }
}

mod fleet_loop;
use fleet_loop::{RecordMsg, Recorder, fleet_task};
