//! The async driver: one tokio task (the actor) owns the [`Store`], the notify watcher,
//! the timers and the open timelines. Everything else talks to it through an [`Engine`]
//! handle — commands in, store events and timeline updates out on broadcast channels.
//!
//! The actor never blocks on a big read: the cold index and timeline loads run on the
//! blocking pool and come back as messages.
//!
//! Its parts, one concern each: [`actor`] (the loop, its one clock, publishing), [`command`]
//! (what the handle asks), [`index`] (the first roster and the full read), [`watches`] (file
//! events, rescans, the registry and background polls), [`hook_spool`] (hook events),
//! [`cwd`] (the `<cwd>/.claude` folders), [`timelines`] (open timelines), [`persist`] (the
//! fleet database) and [`once`] (the one-shot roster of `mimesis ls`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::attention::{Attention, AttentionSet, Notification, SupervisionSignal};
use mimesis_core::clock::{Clock, SystemClock};
use mimesis_core::cwd_files::STATUS_FILE_TTL;
use mimesis_core::hook_event::HookEvent;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::SessionArchive;
use mimesis_core::registry::RegistryEntry;
use mimesis_core::session::TrackedSession;
use mimesis_core::settings::NotificationSettings;
use mimesis_core::status::Timeouts;
use mimesis_core::supervision::policy::AgentReport;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::timeline::TimelineItem;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::background::BackgroundReader;
use crate::store::{Store, StoreEvent};
use crate::watcher::RootWatcher;

mod actor;
mod command;
mod cwd;
mod hook_spool;
mod index;
mod once;
mod persist;
mod timelines;
mod watches;

pub use actor::IDLE_POLL;
use actor::Timers;
use command::{Change, Command, Query};
use cwd::CwdWatches;
use hook_spool::HookSpool;
pub use once::{chain_of, roster_once, roster_once_each};
use persist::Persister;
pub use timelines::{IndexedItem, TimelinePage, TimelineUpdate};
use timelines::{OpenTimeline, TimelineCmd, Timelines};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("no session with id {0} is known (is its config folder among the roots?)")]
    UnknownSession(SessionId),
    #[error("the timeline of session {0} is not open")]
    TimelineNotOpen(SessionId),
    #[error("cannot read the transcript {path}: {source}")]
    Transcript { path: PathBuf, source: std::io::Error },
    #[error("the engine has stopped")]
    Stopped,
}

/// Which sessions the engine follows.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Follow {
    /// Every session under the roots (the app, `mimesis watch`).
    #[default]
    Everything,
    /// Only the sessions being supervised ([`Engine::set_supervision`]): no index, and
    /// other transcripts are not read (`mimesis run`, which needs its own agent's view).
    SupervisedOnly,
}

/// At which CPU priority the first index reads every transcript in full (after the first
/// roster from both ends of each, which keeps the caller's priority).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum IndexPriority {
    /// As the rest of the process (the CLI: nothing else waits for the CPU).
    #[default]
    Normal,
    /// On threads of their own at a low priority (nice 10), which end with the index: the
    /// window's page, starting beside it on the same cores, goes first and the read fills
    /// the time it leaves.
    Background,
}

/// How the engine runs. `Default` gives the spec's values and the system clock.
#[derive(Clone)]
pub struct EngineConfig {
    pub roots: Vec<PathBuf>,
    pub timeouts: Timeouts,
    pub clock: Arc<dyn Clock>,
    /// How often the process registry and watch coverage are re-checked (they also
    /// react to file events at once).
    pub poll_interval: Duration,
    /// How often while nothing calls for it ([`poll_wait`]): no process registered, every
    /// root watched, nothing changed since the last poll.
    pub idle_poll_interval: Duration,
    /// Store events kept for a slow subscriber before it has to resync.
    pub event_capacity: usize,
    /// How long a status file is trusted (SPEC W6).
    pub status_file_ttl: Duration,
    /// Which notifications to decide on.
    pub notifications: NotificationSettings,
    /// Mimesis's data dir, where the hook spool (`hooks/`) lives. `None`: hooks are not
    /// read (tests that need none).
    pub data_dir: Option<PathBuf>,
    /// Where what was learnt is kept between runs (the fleet database). `None`: every
    /// start reads every transcript.
    pub archive: Option<Arc<dyn SessionArchive>>,
    pub follow: Follow,
    pub index_priority: IndexPriority,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            roots: Vec::new(),
            timeouts: Timeouts::default(),
            clock: Arc::new(SystemClock),
            poll_interval: Duration::from_secs(2),
            idle_poll_interval: IDLE_POLL,
            event_capacity: 16_384,
            status_file_ttl: STATUS_FILE_TTL,
            notifications: NotificationSettings::default(),
            data_dir: None,
            archive: None,
            follow: Follow::Everything,
            index_priority: IndexPriority::Normal,
        }
    }
}

/// A store event with its sequence number (one more per event, from 1).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Envelope {
    pub seq: u64,
    #[serde(flatten)]
    pub event: StoreEvent,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RootInfo {
    pub path: PathBuf,
    pub exists: bool,
    pub session_count: usize,
}

/// The roster at one instant: events with `seq <= self.seq` are already in it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub seq: u64,
    pub sessions: Vec<TrackedSession>,
    pub roots: Vec<RootInfo>,
    /// The initial index is still running: more sessions will be discovered.
    pub indexing: bool,
    pub progress: IndexProgress,
}

/// How far the initial index has come (docs/ipc.md `store:progress`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct IndexProgress {
    /// Still reading: rows may be provisional and more may come.
    pub indexing: bool,
    /// Transcripts read in full so far, of `total` found.
    pub done: usize,
    pub total: usize,
}

type Reply<T> = oneshot::Sender<T>;

/// The engine's polls of the registry and of its watches ([`Engine::polls`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PollState {
    /// Polls done since the start.
    pub done: u64,
    /// How long until the next one.
    pub next_in: Duration,
}

/// A handle to the running engine. Cheap to clone; the engine stops when
/// [`Engine::shutdown`] is called or the last handle is dropped.
#[derive(Clone)]
pub struct Engine {
    cmd: mpsc::UnboundedSender<Command>,
    events: broadcast::Sender<Arc<Envelope>>,
    timeline: broadcast::Sender<Arc<TimelineUpdate>>,
    agent_reports: broadcast::Sender<Arc<(SessionId, AgentReport)>>,
    notifications: broadcast::Sender<Notification>,
    live: LiveSignals,
    attention: watch::Receiver<AttentionSet>,
    ready: watch::Receiver<Phase>,
    progress: watch::Receiver<IndexProgress>,
    clock: Arc<dyn Clock>,
    /// Where the answers given from Mimesis are logged (their timeline notes).
    data_dir: Option<PathBuf>,
}

/// How far the start-up has come.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Starting,
    /// A first roster from the ends of every file is in the store.
    Peeked,
    /// Every file was read in full; changes are being followed.
    Indexed,
}

impl Engine {
    /// Starts watching `config.roots` and indexing them. Returns at once; the roster
    /// fills as the index completes ([`Engine::ready`]). Must be called within a tokio
    /// runtime.
    pub fn start(mut config: EngineConfig) -> Engine {
        // Watch events name paths as they were watched: keep the data dir absolute.
        config.data_dir = config.data_dir.map(|d| std::path::absolute(&d).unwrap_or(d));
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (fs_tx, fs_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(config.event_capacity.max(16));
        let (timeline, _) = broadcast::channel(1024);
        let (agent_reports, _) = broadcast::channel(256);
        let (notifications, _) = broadcast::channel(256);
        let live = LiveSignals::new();
        let (attention_tx, attention) = watch::channel(AttentionSet::default());
        let (ready_tx, ready) = watch::channel(Phase::Starting);
        let (progress_tx, progress) = watch::channel(IndexProgress { indexing: true, done: 0, total: 0 });
        let outputs = Outputs {
            events: events.clone(),
            timeline: timeline.clone(),
            agent_reports: agent_reports.clone(),
            notifications: notifications.clone(),
            attention: attention_tx,
            ready: ready_tx,
            progress: progress_tx,
            live: live.clone(),
        };
        let actor = Actor::new(&config, fs_tx, outputs);
        let index_tx = cmd_tx.clone();
        index::spawn(&config, move |m| {
            let _ = index_tx.send(Command::Index(m));
        });
        tokio::spawn(actor.run(cmd_rx, fs_rx, config.poll_interval, config.idle_poll_interval));
        Engine {
            cmd: cmd_tx,
            events,
            timeline,
            agent_reports,
            notifications,
            live,
            attention,
            ready,
            progress,
            clock: config.clock,
            data_dir: config.data_dir,
        }
    }

    /// How far the initial index has come, now and after every part of it.
    pub fn subscribe_progress(&self) -> watch::Receiver<IndexProgress> {
        self.progress.clone()
    }

    /// Waits until every transcript was read in full and changes are followed.
    pub async fn ready(&self) {
        let mut r = self.ready.clone();
        let _ = r.wait_for(|p| *p == Phase::Indexed).await;
    }

    /// Waits until a first roster is available (both ends of every file read); the exact
    /// one follows as `updated` events.
    pub async fn first_roster(&self) {
        let mut r = self.ready.clone();
        let _ = r.wait_for(|p| *p >= Phase::Peeked).await;
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Store events from now on. A receiver that falls behind by more than the
    /// configured capacity gets `Lagged` and should take a new snapshot.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Envelope>> {
        self.events.subscribe()
    }

    /// What supervised sessions' own records say (registry, hooks, transcript), whenever
    /// it changes: their supervisor reads the agent through these before its screen.
    pub fn subscribe_agent_reports(&self) -> broadcast::Receiver<Arc<(SessionId, AgentReport)>> {
        self.agent_reports.subscribe()
    }

    /// Every live registry entry (`sessions/<pid>.json` of a process found alive) by config
    /// root, now and after every change: what answering the default mode lists its dialogs
    /// from (`waiting`, `waitingFor`), beside the roster's status.
    pub fn subscribe_registry(&self) -> watch::Receiver<Arc<LiveRegistry>> {
        self.live.registry.subscribe()
    }

    /// The terminal the session's hooks last ran in (its tmux pane, kitty window…), if any.
    pub async fn terminal_of(
        &self,
        id: &SessionId,
    ) -> Result<Option<mimesis_core::hook_event::TerminalContext>, EngineError> {
        let id = id.clone();
        self.ask(|r| Query::Terminal(id, r)).await
    }

    /// Whether a hook of the session was read (Mimesis's hooks run for it).
    pub async fn hooks_seen(&self, id: &SessionId) -> Result<bool, EngineError> {
        let id = id.clone();
        self.ask(|r| Query::HooksSeen(id, r)).await
    }

    /// Does the session's transcript, as read so far, show its words written: its turn over
    /// (its last assistant message, or the record that closes the turn) with no tool call
    /// pending, or a call pending ([`mimesis_core::status::turn_written`])? What a stop "at
    /// the turn's end" waits for: the status may say the turn is over before the transcript
    /// has its last words. None for a session with no row.
    pub async fn turn_written(&self, id: &SessionId) -> Result<Option<bool>, EngineError> {
        let id = id.clone();
        self.ask(|r| Query::TurnWritten(id, r)).await
    }

    /// Every hook event read from the spool from now on (Notification's type, the terminal
    /// a session runs in).
    pub fn subscribe_hooks(&self) -> broadcast::Receiver<Arc<HookEvent>> {
        self.live.hooks.subscribe()
    }

    /// Every supervised session's current report (after a receiver fell behind).
    pub async fn agent_reports(&self) -> Result<Vec<(SessionId, AgentReport)>, EngineError> {
        self.ask(Query::AgentReports).await
    }

    /// Updates of open timelines.
    pub fn subscribe_timeline(&self) -> broadcast::Receiver<Arc<TimelineUpdate>> {
        self.timeline.subscribe()
    }

    async fn ask<T, C: Into<Command>>(&self, make: impl FnOnce(Reply<T>) -> C) -> Result<T, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(make(tx).into()).map_err(|_| EngineError::Stopped)?;
        rx.await.map_err(|_| EngineError::Stopped)
    }

    pub async fn snapshot(&self) -> Result<Snapshot, EngineError> {
        self.ask(Query::Snapshot).await
    }

    /// The current rows of `ids` (those known), as a snapshot has them: for a few sessions,
    /// without a copy of the whole roster.
    pub async fn sessions(&self, ids: Vec<SessionId>) -> Result<Vec<TrackedSession>, EngineError> {
        self.ask(|r| Query::Rows(ids, r)).await
    }

    /// The engine's polls so far and when the next one comes (tests, diagnostics).
    pub async fn polls(&self) -> Result<PollState, EngineError> {
        self.ask(Query::Polls).await
    }

    /// Adds a config root (the demo uses this) and indexes it.
    pub async fn add_root(&self, root: PathBuf) -> Result<(), EngineError> {
        self.ask(|r| Change::AddRoot(root, r)).await
    }

    /// Stops watching a root; its sessions are removed from the roster.
    pub async fn remove_root(&self, root: PathBuf) -> Result<(), EngineError> {
        self.ask(|r| Change::RemoveRoot(root, r)).await
    }

    /// Re-evaluates timeouts at the clock's current time (tests move a manual clock, then tick).
    pub async fn tick(&self) -> Result<(), EngineError> {
        self.ask(Change::Tick).await
    }

    pub async fn transcript_path(&self, id: &SessionId) -> Result<PathBuf, EngineError> {
        self.ask(|r| Query::Path(id.clone(), r)).await?.ok_or_else(|| EngineError::UnknownSession(id.clone()))
    }

    /// Loads the timeline of a session and keeps it current; returns its last `tail`
    /// items. Updates arrive on [`Engine::subscribe_timeline`].
    pub async fn open_timeline(&self, id: &SessionId, tail: usize) -> Result<TimelinePage, EngineError> {
        let path = self.transcript_path(id).await?;
        let segments = self.ask(|r| Query::ChainSegments(id.clone(), r)).await?;
        let (data_dir, session) = (self.data_dir.clone(), id.clone());
        let view =
            tokio::task::spawn_blocking(move || OpenTimeline::load(&path, &segments, data_dir.as_deref(), &session))
                .await
                .map_err(|_| EngineError::Stopped)??;
        self.ask(|r| TimelineCmd::Install(id.clone(), Box::new(view), tail, r)).await
    }

    pub async fn timeline_range(&self, id: &SessionId, start: usize, end: usize) -> Result<TimelinePage, EngineError> {
        self.ask(|r| TimelineCmd::Range(id.clone(), start, end, r)).await?
    }

    pub async fn timeline_item(&self, id: &SessionId, index: usize) -> Result<Option<TimelineItem>, EngineError> {
        self.ask(|r| TimelineCmd::Item(id.clone(), index, r)).await?
    }

    /// The open timelines and their item counts (a consumer that missed updates resyncs
    /// each of them).
    pub async fn open_timelines(&self) -> Result<Vec<(SessionId, usize)>, EngineError> {
        self.ask(TimelineCmd::List).await
    }

    /// An answer given from Mimesis to one of the session's requests (already in the
    /// answers log): shown in its open timeline at once.
    pub fn note_answer(&self, answered: &mimesis_core::approval::Answered) {
        let _ = self.cmd.send(TimelineCmd::Note(answered.session_id.clone(), Box::new(answered.item())).into());
    }

    pub fn close_timeline(&self, id: &SessionId) {
        let _ = self.cmd.send(TimelineCmd::Close(id.clone()).into());
    }

    /// Shows a session Mimesis runs in a PTY in the roster (`source: pty` with its
    /// `supervision`), at the transcript path it will have; `None` makes it a plain
    /// watched session again.
    pub fn set_supervision(&self, location: TranscriptLocation, supervision: Option<Supervision>) {
        let _ = self.cmd.send(Change::Supervise(location, supervision.map(Box::new)).into());
    }

    /// Stops the engine and its watcher; what the fleet database has not stored yet is
    /// written first.
    pub async fn shutdown(&self) {
        let _ = self.ask(Command::Shutdown).await;
    }

    /// Bytes and lines read from transcripts since the engine started (a warm start
    /// reads only what was appended while Mimesis was not running).
    pub async fn read_stats(&self) -> Result<(u64, u64), EngineError> {
        self.ask(Query::ReadStats).await
    }

    /// New watch timeouts, status-file trust and notification choices, from now on; every
    /// row is re-derived.
    pub async fn apply_settings(
        &self,
        timeouts: Timeouts,
        status_file_ttl: Duration,
        notifications: NotificationSettings,
    ) -> Result<(), EngineError> {
        self.ask(|r| Change::ApplySettings(timeouts, status_file_ttl, notifications, r)).await
    }

    /// Desktop notifications to show (SPEC U5), decided by [`crate::attention`].
    pub fn subscribe_notifications(&self) -> broadcast::Receiver<Notification> {
        self.notifications.subscribe()
    }

    /// The sessions that need the user (the tray's count and menu); changes as they do.
    pub fn subscribe_attention(&self) -> watch::Receiver<AttentionSet> {
        self.attention.clone()
    }

    pub async fn attention(&self) -> Result<AttentionSet, EngineError> {
        self.ask(Query::Attention).await
    }

    /// Tells the attention policy what the supervision of a PTY session reported
    /// (crashed, recovered, terminated).
    pub fn supervision_signal(&self, id: &SessionId, signal: SupervisionSignal) {
        let _ = self.cmd.send(Change::Supervision(id.clone(), signal).into());
    }
}

/// The live registry entries by config root.
pub type LiveRegistry = std::collections::BTreeMap<PathBuf, Vec<RegistryEntry>>;

/// What the registry and the hooks say as they change, for answering the default mode.
#[derive(Clone)]
struct LiveSignals {
    registry: watch::Sender<Arc<LiveRegistry>>,
    hooks: broadcast::Sender<Arc<HookEvent>>,
}

impl LiveSignals {
    fn new() -> LiveSignals {
        LiveSignals { registry: watch::channel(Arc::default()).0, hooks: broadcast::channel(256).0 }
    }

    fn registry(&self, root: &Path, alive: &[RegistryEntry]) {
        self.registry.send_if_modified(|all| {
            if all.get(root).map(Vec::as_slice) == Some(alive) {
                return false;
            }
            Arc::make_mut(all).insert(root.to_owned(), alive.to_vec());
            true
        });
    }
}

/// Where the actor's results go: the handle's channels.
struct Outputs {
    events: broadcast::Sender<Arc<Envelope>>,
    timeline: broadcast::Sender<Arc<TimelineUpdate>>,
    agent_reports: broadcast::Sender<Arc<(SessionId, AgentReport)>>,
    notifications: broadcast::Sender<Notification>,
    attention: watch::Sender<AttentionSet>,
    ready: watch::Sender<Phase>,
    progress: watch::Sender<IndexProgress>,
    live: LiveSignals,
}

/// The attention policy, and whether its decisions have started.
struct Alerts {
    attention: Attention,
    /// The initial roster is the attention baseline; decisions start after it.
    armed: bool,
}

/// What the next registry and background polls read again.
struct Polling {
    registry_dirty: HashSet<PathBuf>,
    /// Roots whose background service files (2.1.332's jobs and roster) are to be read
    /// again, and their reader.
    background_dirty: HashSet<PathBuf>,
    background: BackgroundReader,
}

/// The actor's state, one field per concern: its loop is in engine/actor.rs, and each
/// concern's methods are in its own module (watches, index, hook_spool, cwd, timelines).
struct Actor {
    store: Store,
    roots: Vec<PathBuf>,
    watcher: Option<RootWatcher>,
    follow: Follow,
    clock: Arc<dyn Clock>,
    /// The last store event's sequence number.
    seq: u64,
    indexing: bool,
    out: Outputs,
    alerts: Alerts,
    timelines: Timelines,
    polling: Polling,
    timers: Timers,
    spool: HookSpool,
    cwd: CwdWatches,
    persist: Option<Persister>,
}
