//! The async driver: one tokio task (the actor) owns the [`Store`], the notify watcher,
//! the timers and the open timelines. Everything else talks to it through an [`Engine`]
//! handle — commands in, store events and timeline updates out on broadcast channels.
//!
//! The actor never blocks on a big read: the cold index and timeline loads run on the
//! blocking pool and come back as messages.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::attention::{Attention, AttentionSet, DEFAULT_DEBOUNCE, Notification, SupervisionSignal};
use mimesis_core::chain::Link;
use mimesis_core::clock::{Clock, Mono, SystemClock, Timestamp};
use mimesis_core::cwd_files::{self, CwdFile, STATUS_FILE_TTL};
use mimesis_core::hook_event::{self as hooks, HookEvent};
use mimesis_core::ids::SessionId;
use mimesis_core::layout::{self as roots, TranscriptLocation};
use mimesis_core::persist::{Batch, PersistedSession, SessionArchive};
use mimesis_core::registry::RegistryEntry;
use mimesis_core::session::TrackedSession;
use mimesis_core::settings::NotificationSettings;
use mimesis_core::status::Timeouts;
use mimesis_core::supervision::policy::AgentReport;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::timeline::{ChainSegment, TimelineItem};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::background::{self, BackgroundReader};
use crate::cwd_files::read_bounded;
use crate::store::BackgroundFiles;
use crate::store::{IndexedFile, Store, StoreEvent};
use crate::tail::FileTail;
use crate::timeline_view::{self as timeline, TimelineView};
use crate::watcher::{FsSignal, PathKind, RootWatcher, classify};
use crate::{registry, scan, spool};

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

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelinePage {
    pub session_id: SessionId,
    pub total: usize,
    pub start: usize,
    pub items: Vec<TimelineItem>,
    /// The transcript does not exist yet (Claude Code writes it at the first prompt): the
    /// timeline follows it from its first byte once it appears.
    pub waiting: bool,
    /// The timeline's last update so far ([`TimelineUpdate::seq`]): the first update after
    /// this page has `prev == seq`.
    pub seq: u64,
}

/// A change of an open timeline. Updates are numbered (one sequence for all timelines of an
/// engine) and name the previous update of the same timeline: a reader that was given a
/// page at `seq` applies the update whose `prev` is its last, ignores older ones, and
/// reloads when `prev` is newer than what it has (an update was lost).
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelineUpdate {
    pub session_id: SessionId,
    pub total: usize,
    pub reset: bool,
    pub changed: Vec<IndexedItem>,
    pub seq: u64,
    pub prev: u64,
}

#[derive(Serialize, Clone, Debug)]
pub struct IndexedItem {
    pub index: usize,
    pub item: TimelineItem,
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

enum Command {
    Snapshot(Reply<Snapshot>),
    Polls(Reply<PollState>),
    /// Bytes and lines read from transcripts so far.
    ReadStats(Reply<(u64, u64)>),
    ChainSegments(SessionId, Reply<Vec<ChainSegment>>),
    ApplySettings(Timeouts, Duration, NotificationSettings, Reply<()>),
    Supervision(SessionId, SupervisionSignal),
    Attention(Reply<AttentionSet>),
    /// The first roster from the fleet database, with the chain links it kept.
    Restored(Vec<IndexedFile>, Vec<Link>),
    AddRoot(PathBuf, Reply<()>),
    RemoveRoot(PathBuf, Reply<()>),
    Tick(Reply<()>),
    Path(SessionId, Reply<Option<PathBuf>>),
    AgentReports(Reply<Vec<(SessionId, AgentReport)>>),
    Terminal(SessionId, Reply<Option<mimesis_core::hook_event::TerminalContext>>),
    HooksSeen(SessionId, Reply<bool>),
    InstallTimeline(SessionId, Box<OpenTimeline>, usize, Reply<TimelinePage>),
    TimelineRange(SessionId, usize, usize, Reply<Result<TimelinePage, EngineError>>),
    TimelineItem(SessionId, usize, Reply<Result<Option<TimelineItem>, EngineError>>),
    CloseTimeline(SessionId),
    /// An item from outside the transcript for the session's open timeline.
    Note(SessionId, Box<TimelineItem>),
    OpenTimelines(Reply<Vec<(SessionId, usize)>>),
    Supervise(TranscriptLocation, Option<Box<Supervision>>),
    /// The first roster: every transcript read at both ends only.
    Peeked(Vec<IndexedFile>),
    /// Full reads, as they finish (a big roster fills in while the rest is read).
    IndexedPart(Vec<IndexedFile>),
    /// The last full reads: the index is done.
    Indexed(Vec<IndexedFile>),
    Shutdown(Reply<()>),
}

/// Full reads handed to the engine at once while the index runs.
const INDEX_PART: usize = 512;

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
        let now = config.clock.now();
        let mut store = Store::new(config.timeouts);
        store.set_rows_at_prompt(config.follow == Follow::Everything);
        store.set_timeouts(config.timeouts, config.status_file_ttl, now);
        let watcher = match RootWatcher::new(fs_tx) {
            Ok(mut w) => {
                for r in &config.roots {
                    w.watch_root(r);
                }
                if let Some(d) = &config.data_dir {
                    spool::prune_spool(d, now);
                    let spool = hooks::spool_dir(d);
                    let _ = mimesis_os::private::own_dir(&spool);
                    w.watch_dir(&spool);
                }
                Some(w)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; changes are found by rescanning every few seconds");
                None
            }
        };
        let persist = config.archive.clone().map(Persister::start);
        let actor = Actor {
            store,
            roots: config.roots.clone(),
            watcher,
            events: events.clone(),
            timeline: timeline.clone(),
            agent_reports: agent_reports.clone(),
            live: live.clone(),
            seq: 0,
            clock: config.clock.clone(),
            timelines: HashMap::new(),
            timeline_seq: 0,
            registry_dirty: config.roots.iter().cloned().collect(),
            background_dirty: config.roots.iter().cloned().collect(),
            background: BackgroundReader::default(),
            polls: PollState::default(),
            next_poll: tokio::time::Instant::now(),
            indexing: true,
            ready: ready_tx,
            progress: progress_tx,
            dir_rescans: Vec::new(),
            data_dir: config.data_dir.clone(),
            spool_tails: HashMap::new(),
            cwd_dirs: HashMap::new(),
            cwd_checked: None,
            attention: Attention::new(config.notifications.clone(), DEFAULT_DEBOUNCE),
            armed: false,
            notifications: notifications.clone(),
            attention_tx,
            persist,
            follow: config.follow,
        };
        let roots = config.roots.clone();
        let index_tx = cmd_tx.clone();
        let index_db = config.archive.clone();
        let follow = config.follow;
        tokio::task::spawn_blocking(move || {
            // A quick first roster, then the exact one: only the full read counts usage
            // and compactions, and only it leaves each file at a reading position. With
            // a fleet database both come from it: its rows at once, then each file read
            // on from where the last run stopped.
            let t0 = std::time::Instant::now();
            let (persisted, links) = match &index_db {
                Some(archive) => load_persisted(archive.as_ref(), &roots),
                None => (Vec::new(), Vec::new()),
            };
            if index_db.is_some() {
                tracing::info!(sessions = persisted.len(), links = links.len(), elapsed = ?t0.elapsed(),
                    "loaded the fleet database");
            }
            if follow == Follow::SupervisedOnly {
                let _ = index_tx.send(Command::Restored(Vec::new(), links));
                let _ = index_tx.send(Command::Peeked(Vec::new()));
                let _ = index_tx.send(Command::Indexed(Vec::new()));
            } else if persisted.is_empty() {
                let _ = index_tx.send(Command::Restored(Vec::new(), links));
                let _ = index_tx.send(Command::Peeked(scan::peek(&roots)));
                // In parts: every read file need not wait in memory for the last one.
                let mut part = Vec::new();
                scan::index_each(&roots, |f| {
                    part.push(f);
                    if part.len() == INDEX_PART {
                        let _ = index_tx.send(Command::IndexedPart(std::mem::take(&mut part)));
                    }
                });
                let _ = index_tx.send(Command::Indexed(part));
            } else {
                // A file unchanged since the last run is ready as stored: it is in the first
                // roster complete, and neither read nor copied again. The others are shown
                // from the database (provisional) until they are read on.
                let (unchanged, changed) = scan::split_unchanged(persisted);
                let done: HashSet<PathBuf> = unchanged.iter().map(|f| f.location.path.clone()).collect();
                // The provisional ones first: every session is known when the complete
                // ones are adopted (and their chains considered).
                let mut first: Vec<IndexedFile> = changed
                    .iter()
                    .map(|p| IndexedFile {
                        location: p.location.clone(),
                        tail: FileTail::new(PathBuf::new()),
                        facts: p.facts.clone(),
                        partial: true,
                        peeked: false,
                        as_stored: false,
                    })
                    .collect();
                first.extend(unchanged);
                let _ = index_tx.send(Command::Restored(first, links));
                let _ = index_tx.send(Command::Indexed(scan::index_resuming(&roots, changed, &done)));
            }
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
        self.ask(|r| Command::Terminal(id, r)).await
    }

    /// Whether a hook of the session was read (Mimesis's hooks run for it).
    pub async fn hooks_seen(&self, id: &SessionId) -> Result<bool, EngineError> {
        let id = id.clone();
        self.ask(|r| Command::HooksSeen(id, r)).await
    }

    /// Every hook event read from the spool from now on (Notification's type, the terminal
    /// a session runs in).
    pub fn subscribe_hooks(&self) -> broadcast::Receiver<Arc<HookEvent>> {
        self.live.hooks.subscribe()
    }

    /// Every supervised session's current report (after a receiver fell behind).
    pub async fn agent_reports(&self) -> Result<Vec<(SessionId, AgentReport)>, EngineError> {
        self.ask(Command::AgentReports).await
    }

    /// Updates of open timelines.
    pub fn subscribe_timeline(&self) -> broadcast::Receiver<Arc<TimelineUpdate>> {
        self.timeline.subscribe()
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(make(tx)).map_err(|_| EngineError::Stopped)?;
        rx.await.map_err(|_| EngineError::Stopped)
    }

    pub async fn snapshot(&self) -> Result<Snapshot, EngineError> {
        self.ask(Command::Snapshot).await
    }

    /// The engine's polls so far and when the next one comes (tests, diagnostics).
    pub async fn polls(&self) -> Result<PollState, EngineError> {
        self.ask(Command::Polls).await
    }

    /// Adds a config root (the demo uses this) and indexes it.
    pub async fn add_root(&self, root: PathBuf) -> Result<(), EngineError> {
        self.ask(|r| Command::AddRoot(root, r)).await
    }

    /// Stops watching a root; its sessions are removed from the roster.
    pub async fn remove_root(&self, root: PathBuf) -> Result<(), EngineError> {
        self.ask(|r| Command::RemoveRoot(root, r)).await
    }

    /// Re-evaluates timeouts at the clock's current time (tests move a manual clock, then tick).
    pub async fn tick(&self) -> Result<(), EngineError> {
        self.ask(Command::Tick).await
    }

    pub async fn transcript_path(&self, id: &SessionId) -> Result<PathBuf, EngineError> {
        self.ask(|r| Command::Path(id.clone(), r)).await?.ok_or_else(|| EngineError::UnknownSession(id.clone()))
    }

    /// Loads the timeline of a session and keeps it current; returns its last `tail`
    /// items. Updates arrive on [`Engine::subscribe_timeline`].
    pub async fn open_timeline(&self, id: &SessionId, tail: usize) -> Result<TimelinePage, EngineError> {
        let path = self.transcript_path(id).await?;
        let segments = self.ask(|r| Command::ChainSegments(id.clone(), r)).await?;
        let (data_dir, session) = (self.data_dir.clone(), id.clone());
        let view = tokio::task::spawn_blocking(move || {
            // The earlier segments of a chain come first, each closed by its boundary.
            let prefix = timeline::chain_prefix(&segments)
                .map_err(|source| EngineError::Transcript { path: path.clone(), source })?;
            let mut view = TimelineView::new(&path);
            if let Some(d) = &data_dir {
                view.add_notes(timeline::answers_of(d, &session));
            }
            let waiting = match view.poll() {
                Ok(_) => false,
                // A session started a moment ago: its transcript comes with the first prompt.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(source) => return Err(EngineError::Transcript { path, source }),
            };
            Ok::<_, EngineError>(OpenTimeline { prefix, view, waiting, last_seq: 0 })
        })
        .await
        .map_err(|_| EngineError::Stopped)??;
        self.ask(|r| Command::InstallTimeline(id.clone(), Box::new(view), tail, r)).await
    }

    pub async fn timeline_range(&self, id: &SessionId, start: usize, end: usize) -> Result<TimelinePage, EngineError> {
        self.ask(|r| Command::TimelineRange(id.clone(), start, end, r)).await?
    }

    pub async fn timeline_item(&self, id: &SessionId, index: usize) -> Result<Option<TimelineItem>, EngineError> {
        self.ask(|r| Command::TimelineItem(id.clone(), index, r)).await?
    }

    /// The open timelines and their item counts (a consumer that missed updates resyncs
    /// each of them).
    pub async fn open_timelines(&self) -> Result<Vec<(SessionId, usize)>, EngineError> {
        self.ask(Command::OpenTimelines).await
    }

    /// An answer given from Mimesis to one of the session's requests (already in the
    /// answers log): shown in its open timeline at once.
    pub fn note_answer(&self, answered: &mimesis_core::approval::Answered) {
        let _ = self.cmd.send(Command::Note(answered.session_id.clone(), Box::new(answered.item())));
    }

    pub fn close_timeline(&self, id: &SessionId) {
        let _ = self.cmd.send(Command::CloseTimeline(id.clone()));
    }

    /// Shows a session Mimesis runs in a PTY in the roster (`source: pty` with its
    /// `supervision`), at the transcript path it will have; `None` makes it a plain
    /// watched session again.
    pub fn set_supervision(&self, location: TranscriptLocation, supervision: Option<Supervision>) {
        let _ = self.cmd.send(Command::Supervise(location, supervision.map(Box::new)));
    }

    /// Stops the engine and its watcher; what the fleet database has not stored yet is
    /// written first.
    pub async fn shutdown(&self) {
        let _ = self.ask(Command::Shutdown).await;
    }

    /// Bytes and lines read from transcripts since the engine started (a warm start
    /// reads only what was appended while Mimesis was not running).
    pub async fn read_stats(&self) -> Result<(u64, u64), EngineError> {
        self.ask(Command::ReadStats).await
    }

    /// New watch timeouts, status-file trust and notification choices, from now on; every
    /// row is re-derived.
    pub async fn apply_settings(
        &self,
        timeouts: Timeouts,
        status_file_ttl: Duration,
        notifications: NotificationSettings,
    ) -> Result<(), EngineError> {
        self.ask(|r| Command::ApplySettings(timeouts, status_file_ttl, notifications, r)).await
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
        self.ask(Command::Attention).await
    }

    /// Tells the attention policy what the supervision of a PTY session reported
    /// (crashed, recovered, terminated).
    pub fn supervision_signal(&self, id: &SessionId, signal: SupervisionSignal) {
        let _ = self.cmd.send(Command::Supervision(id.clone(), signal));
    }
}

/// Loads what the archive kept for `roots`. An archive found unusable here is rebuilt
/// (and the transcripts read from scratch).
fn load_persisted(archive: &dyn SessionArchive, roots: &[PathBuf]) -> (Vec<PersistedSession>, Vec<Link>) {
    match archive.load(roots) {
        Ok(loaded) => loaded,
        Err(e) => {
            archive.rebuild(&e);
            (Vec::new(), Vec::new())
        }
    }
}

/// An open timeline: the earlier segments of its chain (fixed), then the live file.
pub struct OpenTimeline {
    prefix: Vec<TimelineItem>,
    view: TimelineView,
    /// Its transcript did not exist when last read.
    waiting: bool,
    /// Its last update (or its page, when installed).
    last_seq: u64,
}

impl OpenTimeline {
    fn total(&self) -> usize {
        self.prefix.len() + self.view.items().len()
    }

    fn get(&self, i: usize) -> Option<&TimelineItem> {
        if i < self.prefix.len() { self.prefix.get(i) } else { self.view.items().get(i - self.prefix.len()) }
    }

    fn range(&self, start: usize, end: usize) -> Vec<TimelineItem> {
        (start..end).filter_map(|i| self.get(i).cloned()).collect()
    }
}

/// Writes batches to the archive on its own thread, off the actor's path.
struct Persister {
    tx: std::sync::mpsc::Sender<PersistMsg>,
}

enum PersistMsg {
    Batch(Batch),
    Flush(oneshot::Sender<()>),
}

impl Persister {
    fn start(archive: Arc<dyn SessionArchive>) -> Persister {
        let (tx, rx) = std::sync::mpsc::channel::<PersistMsg>();
        std::thread::Builder::new()
            .name("mimesis-db".into())
            .spawn(move || {
                for msg in rx {
                    match msg {
                        PersistMsg::Batch(b) => {
                            if let Err(e) = archive.save(&b) {
                                tracing::warn!(error = %e, "could not write to the fleet database");
                            }
                        }
                        PersistMsg::Flush(ack) => {
                            archive.checkpoint();
                            let _ = ack.send(());
                        }
                    }
                }
            })
            .expect("a thread can be spawned");
        Persister { tx }
    }

    fn send(&self, batch: Batch) {
        if !batch.is_empty() {
            let _ = self.tx.send(PersistMsg::Batch(batch));
        }
    }

    /// Waits until everything sent so far is written.
    async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(PersistMsg::Flush(ack)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(10), done).await;
        }
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

struct Actor {
    store: Store,
    roots: Vec<PathBuf>,
    watcher: Option<RootWatcher>,
    events: broadcast::Sender<Arc<Envelope>>,
    timeline: broadcast::Sender<Arc<TimelineUpdate>>,
    agent_reports: broadcast::Sender<Arc<(SessionId, AgentReport)>>,
    live: LiveSignals,
    seq: u64,
    clock: Arc<dyn Clock>,
    timelines: HashMap<SessionId, OpenTimeline>,
    /// The last number given to a timeline update or page.
    timeline_seq: u64,
    registry_dirty: HashSet<PathBuf>,
    /// Roots whose background service files (2.1.332's jobs and roster) are to be read
    /// again, and their reader.
    background_dirty: HashSet<PathBuf>,
    background: BackgroundReader,
    /// Polls done, and when the next one comes.
    polls: PollState,
    next_poll: tokio::time::Instant,
    indexing: bool,
    ready: watch::Sender<Phase>,
    progress: watch::Sender<IndexProgress>,
    /// New project folders to list again: a file written into a folder the instant it
    /// appears can precede the recursive watch on it (root, folder, when).
    dir_rescans: Vec<(PathBuf, PathBuf, tokio::time::Instant)>,
    data_dir: Option<PathBuf>,
    /// Reading positions in the hook spool files.
    spool_tails: HashMap<PathBuf, FileTail>,
    /// Watched `<cwd>/.claude` folders and their cwd.
    cwd_dirs: HashMap<PathBuf, String>,
    /// When the recent cwds were last looked at for a `.claude/` to watch: the seq of the
    /// roster then, and the time.
    cwd_checked: Option<(u64, Mono)>,
    attention: Attention,
    /// The initial roster is the attention baseline; decisions start after it.
    armed: bool,
    notifications: broadcast::Sender<Notification>,
    attention_tx: watch::Sender<AttentionSet>,
    persist: Option<Persister>,
    follow: Follow,
}

/// Sessions active within this long have their `<cwd>/.claude/` watched.
const CWD_WATCH_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
/// At most this many `<cwd>/.claude/` folders are watched (the most recent cwds).
const CWD_WATCH_MAX: usize = 256;
/// The recent cwds are looked at again (for a `.claude/` to watch) when the roster changed
/// (a session that starts or works there), and at least this often (a folder made with no
/// session activity). Not every poll: walking the sessions is cheap while their memory is
/// warm, but an idle app's is not (on a VM, 10–40 ms for 2,000 sessions after 30 s idle):
/// that walk each second was a third of the idle app's CPU profile.
const CWD_RECHECK: Duration = Duration::from_secs(600);

/// Whether the recent cwds are due a look: never looked at, the roster changed since (its
/// seq), or [`CWD_RECHECK`] went by.
fn cwd_check_due(last: Option<(u64, Mono)>, seq: u64, now: Mono) -> bool {
    last.is_none_or(|(at_seq, at)| at_seq != seq || now.since(at) >= CWD_RECHECK)
}

/// The poll's interval while nothing calls for a quicker one (see [`poll_wait`]). Each poll
/// wakes the app; an idle window with no session running wakes for it twice a minute.
pub const IDLE_POLL: Duration = Duration::from_secs(30);

/// How long the engine waits before its next poll. `poll` while there is something only a
/// poll can see: a registered process that may end without a word (its file stays), a root
/// not watched (missing, or no watcher at all), or a change since the last poll (a new
/// session's folder gets its watch at the next poll). Otherwise `idle`: every other change
/// comes as a file event, which is handled at once.
fn poll_wait(poll: Duration, idle: Duration, needs_poll: bool) -> Duration {
    if needs_poll { poll } else { idle.max(poll) }
}

/// How soon after the store changed its changes are written to the fleet database (in
/// batches of at most [`PERSIST_BATCH_MAX`] sessions, one batch per interval).
const PERSIST_INTERVAL: Duration = Duration::from_millis(500);
/// Sessions copied out for the database per batch (shutdown writes all that is left).
const PERSIST_BATCH_MAX: usize = 250;

/// When a new project folder is listed again after it appeared.
const DIR_RESCAN_DELAYS: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(500)];

impl Actor {
    async fn run(
        mut self,
        mut cmd_rx: mpsc::UnboundedReceiver<Command>,
        mut fs_rx: mpsc::UnboundedReceiver<FsSignal>,
        poll: Duration,
        idle_poll: Duration,
    ) {
        self.next_poll = tokio::time::Instant::now() + poll;
        // The store's sequence at the end of the last poll: a change since calls for a poll.
        let mut polled_seq = self.seq;
        // Armed when there is something to store, so an idle engine has no timer for it.
        let mut persist_at: Option<tokio::time::Instant> = None;
        loop {
            // A change, or a process registered meanwhile: the next poll comes soon again.
            if self.seq != polled_seq || self.store.has_live_registry() {
                self.next_poll = self.next_poll.min(tokio::time::Instant::now() + poll);
            }
            if self.indexing || self.persist.is_none() || !self.store.has_batch() {
                persist_at = None;
            } else if persist_at.is_none() {
                persist_at = Some(tokio::time::Instant::now() + PERSIST_INTERVAL);
            }
            let deadline = self.store.next_deadline().map(|t| {
                let wait = t.since(self.clock.now());
                tokio::time::Instant::now() + wait.min(Duration::from_secs(3600))
            });
            let rescan_at = self.dir_rescans.iter().map(|(_, _, at)| *at).min();
            tokio::select! {
                biased;
                cmd = cmd_rx.recv() => match cmd {
                    Some(Command::Shutdown(reply)) => {
                        self.watcher = None;
                        if let Some(p) = self.persist.take() {
                            if !self.indexing {
                                p.send(self.store.take_batch());
                            }
                            p.flush().await;
                        }
                        let _ = reply.send(());
                        break;
                    }
                    Some(cmd) => self.command(cmd),
                    None => break,
                },
                // File events wait until the initial index is adopted: it reads from the
                // offsets the index reached, so nothing is applied twice.
                Some(first) = fs_rx.recv(), if !self.indexing => {
                    let mut paths = BTreeSet::new();
                    let mut rescan = false;
                    let mut take = |s: FsSignal| match s {
                        FsSignal::Paths(p) => paths.extend(p),
                        FsSignal::Rescan => rescan = true,
                    };
                    take(first);
                    while let Ok(more) = fs_rx.try_recv() {
                        take(more);
                    }
                    if rescan {
                        self.rescan_all();
                    }
                    self.paths_changed(paths);
                    self.poll_registry();
                }
                _ = sleep_until(deadline) => {
                    let events = self.store.tick(self.clock.now());
                    self.publish(events);
                }
                _ = sleep_until(rescan_at) => self.rescan_new_dirs(),
                _ = tokio::time::sleep_until(self.next_poll) => {
                    if !self.indexing {
                        self.registry_dirty.extend(self.roots.iter().cloned());
                        self.background_dirty.extend(self.roots.iter().cloned());
                        self.poll_registry();
                        self.ensure_coverage();
                        let now = self.clock.mono();
                        if cwd_check_due(self.cwd_checked, self.seq, now) {
                            self.ensure_cwd_watches();
                            self.cwd_checked = Some((self.seq, now));
                        }
                    }
                    // (The sequence only grows: a change before the poll or during it.)
                    let needs_poll = self.indexing
                        || self.seq != polled_seq
                        || self.store.has_live_registry()
                        || !self.watches_every_root();
                    polled_seq = self.seq;
                    self.polls.done += 1;
                    self.next_poll = tokio::time::Instant::now() + poll_wait(poll, idle_poll, needs_poll);
                }
                _ = sleep_until(persist_at) => {
                    persist_at = None;
                    if let Some(p) = &self.persist {
                        p.send(self.store.take_batch_of(PERSIST_BATCH_MAX));
                    }
                }
            }
        }
    }

    /// Whether this engine reads the transcript of `id`.
    fn follows(&self, id: &SessionId) -> bool {
        self.follow == Follow::Everything || self.store.is_supervised(id)
    }

    fn publish(&mut self, events: Vec<StoreEvent>) {
        for report in self.store.take_agent_reports() {
            let _ = self.agent_reports.send(Arc::new(report));
        }
        if events.is_empty() {
            return;
        }
        let now = self.clock.now();
        for event in events {
            if self.armed {
                for n in self.attention.on_store_event(&event, now) {
                    let _ = self.notifications.send(n);
                }
            }
            self.seq += 1;
            let _ = self.events.send(Arc::new(Envelope { seq: self.seq, event }));
        }
        self.update_attention();
    }

    fn update_attention(&mut self) {
        if !self.armed {
            return;
        }
        let set = self.attention.set();
        self.attention_tx.send_if_modified(|old| {
            if *old == set {
                false
            } else {
                *old = set;
                true
            }
        });
    }

    /// After the initial index: hook events, markers and status files, then the chains
    /// the files alone show; then notifications start.
    fn after_index(&mut self) {
        let now = self.clock.now();
        self.read_spool();
        let events = self.store.end_bulk(now);
        self.publish(events);
        self.ensure_cwd_watches();
        self.attention.baseline(&self.store.snapshot());
        self.armed = true;
        self.update_attention();
    }

    /// Reads what was appended to the hook spool files.
    fn read_spool(&mut self) {
        let Some(data_dir) = self.data_dir.clone() else { return };
        for path in spool::spool_files(&data_dir) {
            self.read_spool_file(&path);
        }
    }

    fn read_spool_file(&mut self, path: &Path) {
        let tail = self
            .spool_tails
            .entry(path.to_owned())
            .or_insert_with(|| FileTail::with_max_line(path, hooks::MAX_SPOOL_LINE));
        let mut found: Vec<HookEvent> = Vec::new();
        if let Err(e) = tail.read_new(|l| match hooks::parse_spool_line(l) {
            Some(ev) => found.push(ev),
            None => tracing::debug!("skipped a malformed hook spool line"),
        }) {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the hook spool");
        }
        let now = self.clock.now();
        let mut events = Vec::new();
        for ev in found {
            if self.live.hooks.receiver_count() > 0 {
                let _ = self.live.hooks.send(Arc::new(ev.clone()));
            }
            events.extend(self.store.hook_event(ev, now));
        }
        self.publish(events);
    }

    /// Watches the `.claude` folder of every recently active cwd (non-recursively) and
    /// reads what is already there.
    fn ensure_cwd_watches(&mut self) {
        let now = self.clock.now();
        let since = Timestamp::from_millis(now.millis() - CWD_WATCH_WINDOW.as_millis() as i64);
        let cwds = self.store.recent_cwds(since);
        for cwd in cwds.into_iter().take(CWD_WATCH_MAX) {
            let Ok(checked) = roots::checked_cwd(&cwd) else { continue };
            let dir = cwd_files::dot_claude(&checked);
            if self.cwd_dirs.contains_key(&dir) || !dir.is_dir() {
                continue;
            }
            if let Some(w) = &mut self.watcher {
                w.watch_dir(&dir);
            }
            self.cwd_dirs.insert(dir.clone(), cwd.clone());
            if let Ok(rd) = std::fs::read_dir(&dir) {
                let files: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
                for f in files {
                    self.cwd_file_changed(&dir, &f);
                }
            }
        }
    }

    /// A file in a watched `<cwd>/.claude/` changed: a marker or a status file, maybe.
    /// Anything hostile or malformed is logged with its reason and changes nothing.
    fn cwd_file_changed(&mut self, dir: &Path, path: &Path) {
        let Some(cwd) = self.cwd_dirs.get(dir).cloned() else { return };
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return };
        let kind = match cwd_files::classify(name) {
            Ok(Some(k)) => k,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(path = %path.display(), reason = %e, "ignored a file with a hostile name");
                return;
            }
        };
        let now = self.clock.now();
        let events = match kind {
            CwdFile::Marker(id) => {
                if !path.exists() {
                    return;
                }
                match read_bounded(path, cwd_files::MAX_MARKER_BYTES)
                    .and_then(|b| cwd_files::parse_marker(&b, &id, &cwd))
                {
                    Ok(m) => self.store.marker(m, now),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), reason = %e, "ignored a compaction marker");
                        return;
                    }
                }
            }
            CwdFile::Status(id) => {
                if !path.exists() {
                    self.store.status_file(&id, &cwd, None, now)
                } else {
                    let mtime = std::fs::symlink_metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .map(Timestamp::from_system_time);
                    match read_bounded(path, cwd_files::MAX_STATUS_BYTES)
                        .and_then(|b| cwd_files::parse_status_file(&b, mtime))
                    {
                        Ok(r) => self.store.status_file(&id, &cwd, Some(r), now),
                        Err(e) => {
                            tracing::warn!(path = %path.display(), reason = %e, "ignored a status file");
                            return;
                        }
                    }
                }
            }
        };
        self.publish(events);
    }

    fn command(&mut self, cmd: Command) {
        let now = self.clock.now();
        match cmd {
            Command::Polls(reply) => {
                let next_in = self.next_poll.saturating_duration_since(tokio::time::Instant::now());
                let _ = reply.send(PollState { next_in, ..self.polls });
            }
            Command::Snapshot(reply) => {
                let sessions = self.store.snapshot();
                let roots = self
                    .roots
                    .iter()
                    .map(|r| RootInfo {
                        path: r.clone(),
                        exists: r.is_dir(),
                        session_count: sessions.iter().filter(|s| Path::new(&s.transcript_path).starts_with(r)).count(),
                    })
                    .collect();
                let progress = *self.progress.borrow();
                let _ = reply.send(Snapshot { seq: self.seq, sessions, roots, indexing: self.indexing, progress });
            }
            Command::ReadStats(reply) => {
                let _ = reply.send(self.store.read_stats());
            }
            Command::ChainSegments(id, reply) => {
                let segments = self.store.chain_segments(&id);
                let v = segments
                    .into_iter()
                    .filter_map(|(session_id, path, reason)| {
                        let at = self.store.link_at(&session_id);
                        Some(ChainSegment { session_id, path: path?, reason, at })
                    })
                    .collect();
                let _ = reply.send(v);
            }
            Command::ApplySettings(timeouts, status_file_ttl, notifications, reply) => {
                let events = self.store.set_timeouts(timeouts, status_file_ttl, now);
                self.attention.set_settings(notifications);
                self.publish(events);
                let _ = reply.send(());
            }
            Command::Supervision(id, signal) => {
                for n in self.attention.on_supervision(&id, signal, now) {
                    let _ = self.notifications.send(n);
                }
                self.update_attention();
            }
            Command::Attention(reply) => {
                let _ = reply.send(self.attention.set());
            }
            Command::Restored(files, links) => {
                self.store.restore_links(links);
                let total = files.len();
                // Those found unchanged are complete already.
                let complete = files.iter().filter(|f| !f.partial).count();
                self.progress.send_modify(|p| {
                    p.done += complete;
                    p.total = p.total.max(total);
                });
                if !files.is_empty() {
                    let mut events = Vec::new();
                    for f in files {
                        events.extend(self.store.adopt(f, now));
                    }
                    self.publish(events);
                    self.poll_registry();
                    let _ = self.ready.send(Phase::Peeked);
                }
            }
            Command::Peeked(files) => {
                let total = files.len();
                self.progress.send_modify(|p| p.total = p.total.max(total));
                let mut events = Vec::new();
                for f in files {
                    events.extend(self.store.adopt(f, now));
                }
                self.publish(events);
                // Liveness and "waiting for approval" come from the registry: part of the
                // first roster too.
                self.poll_registry();
                let _ = self.ready.send(Phase::Peeked);
            }
            Command::IndexedPart(files) => {
                let n = files.len();
                self.progress.send_modify(|p| {
                    p.done += n;
                    p.total = p.total.max(p.done);
                });
                let mut events = Vec::new();
                for f in files {
                    events.extend(self.store.adopt(f, now));
                }
                self.publish(events);
            }
            Command::Indexed(files) => {
                let files_len = files.len();
                let mut events = Vec::new();
                for f in files {
                    events.extend(self.store.adopt(f, now));
                }
                events.extend(self.store.drop_partial());
                self.publish(events);
                self.indexing = false;
                let n = files_len;
                self.progress.send_modify(|p| {
                    p.done += n;
                    p.total = p.total.max(p.done);
                    p.indexing = false;
                });
                self.poll_registry();
                self.after_index();
                let _ = self.ready.send(Phase::Indexed);
            }
            Command::AddRoot(root, reply) => {
                if !self.roots.contains(&root) {
                    self.roots.push(root.clone());
                    if let Some(w) = &mut self.watcher {
                        w.watch_root(&root);
                    }
                    self.rescan(&root);
                    self.registry_dirty.insert(root);
                    self.poll_registry();
                }
                let _ = reply.send(());
            }
            Command::RemoveRoot(root, reply) => {
                self.roots.retain(|r| r != &root);
                if let Some(w) = &mut self.watcher {
                    w.unwatch_root(&root);
                }
                let mut events = self.store.set_background(&root, BackgroundFiles::default(), now);
                events.extend(self.store.remove_root(&root));
                self.publish(events);
                let _ = reply.send(());
            }
            Command::Tick(reply) => {
                let events = self.store.tick(now);
                self.publish(events);
                let _ = reply.send(());
            }
            Command::Terminal(id, reply) => {
                let _ = reply.send(self.store.terminal(&id));
            }
            Command::HooksSeen(id, reply) => {
                let _ = reply.send(self.store.hooks_seen(&id));
            }
            Command::AgentReports(reply) => {
                let _ = reply.send(self.store.agent_reports());
            }
            Command::Path(id, reply) => {
                let _ = reply.send(self.store.transcript_path(&id).map(Path::to_owned));
            }
            Command::InstallTimeline(id, mut open, tail, reply) => {
                // Catch up with whatever was appended while it loaded.
                if open.view.poll().is_ok() {
                    open.waiting = false;
                }
                let total = open.total();
                let start = total.saturating_sub(tail);
                let items = open.range(start, total);
                self.timeline_seq += 1;
                open.last_seq = self.timeline_seq;
                let page = TimelinePage {
                    session_id: id.clone(),
                    total,
                    start,
                    items,
                    waiting: open.waiting,
                    seq: open.last_seq,
                };
                self.timelines.insert(id, *open);
                let _ = reply.send(page);
            }
            Command::TimelineRange(id, start, end, reply) => {
                let page = match self.timelines.get(&id) {
                    Some(v) => {
                        let total = v.total();
                        let end = end.min(total);
                        let start = start.min(end);
                        Ok(TimelinePage {
                            session_id: id,
                            total,
                            start,
                            items: v.range(start, end),
                            waiting: v.waiting,
                            seq: v.last_seq,
                        })
                    }
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(page);
            }
            Command::TimelineItem(id, index, reply) => {
                let item = match self.timelines.get(&id) {
                    Some(v) => Ok(v.get(index).cloned()),
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(item);
            }
            Command::Note(id, item) => {
                if let Some(open) = self.timelines.get_mut(&id) {
                    open.view.add_notes(vec![*item]);
                    self.update_timeline(&id);
                }
            }
            Command::CloseTimeline(id) => {
                self.timelines.remove(&id);
            }
            Command::OpenTimelines(reply) => {
                let _ = reply.send(self.timelines.iter().map(|(id, t)| (id.clone(), t.total())).collect());
            }
            Command::Supervise(location, supervision) => {
                let events = self.store.set_supervision(location, supervision.map(|b| *b), now);
                self.publish(events);
            }
            Command::Shutdown(_) => unreachable!("handled in run"),
        }
    }

    fn paths_changed(&mut self, paths: BTreeSet<PathBuf>) {
        let now = self.clock.now();
        let mut events = Vec::new();
        let mut settings_changed = false;
        let mut touched_sessions = Vec::new();
        for path in paths {
            if let Some(parent) = path.parent() {
                // Hook spool and cwd files publish their own events at once: what this batch
                // gathered so far goes first, so that events leave in the order the store
                // made them (a `/clear` successor's `discovered` before the link's `updated`;
                // in reverse, a consumer folding the events keeps a stale row).
                if self.data_dir.as_ref().is_some_and(|d| hooks::spool_dir(d) == parent) {
                    if hooks::spool_day(&path).is_some() {
                        self.publish(std::mem::take(&mut events));
                        self.read_spool_file(&path);
                    }
                    continue;
                }
                if self.cwd_dirs.contains_key(parent) {
                    let dir = parent.to_owned();
                    self.publish(std::mem::take(&mut events));
                    self.cwd_file_changed(&dir, &path);
                    continue;
                }
            }
            let Some(root) = self.roots.iter().find(|r| path.starts_with(r)).cloned() else { continue };
            match classify(&root, &path) {
                PathKind::ProjectFile => {
                    if let Some(loc) = TranscriptLocation::of(&root, &path).filter(|l| self.follows(&l.session_id)) {
                        touched_sessions.push(loc.session_id.clone());
                        events.extend(self.store.file_changed(loc, now));
                    }
                }
                PathKind::ProjectDir => {
                    if path.is_dir() {
                        let mut found = Vec::new();
                        scan::discover_project(&root, &path, &mut found);
                        found.retain(|l| self.follows(&l.session_id));
                        for loc in found {
                            touched_sessions.push(loc.session_id.clone());
                            events.extend(self.store.file_changed(loc, now));
                        }
                        let t = tokio::time::Instant::now();
                        for d in DIR_RESCAN_DELAYS {
                            self.dir_rescans.push((root.clone(), path.clone(), t + d));
                        }
                    } else {
                        events.extend(self.store.remove_under(&path));
                    }
                }
                PathKind::ProjectsDir => {
                    if let Some(w) = &mut self.watcher {
                        w.watch_root(&root);
                    }
                    events.extend(self.rescan_events(&root));
                }
                PathKind::Registry => {
                    if path == roots::sessions_dir(&root)
                        && let Some(w) = &mut self.watcher
                    {
                        w.watch_root(&root);
                    }
                    self.registry_dirty.insert(root);
                }
                PathKind::Settings => settings_changed = true,
                PathKind::Background => {
                    // (A `jobs/` or `daemon/` folder that appeared gets its watch.)
                    if let Some(w) = &mut self.watcher
                        && !w.covers(&root)
                    {
                        w.watch_root(&root);
                    }
                    self.background_dirty.insert(root);
                }
                PathKind::Other => {}
            }
        }
        if settings_changed {
            events.extend(self.store.settings_changed(now));
        }
        self.publish(events);
        touched_sessions.sort();
        touched_sessions.dedup();
        for id in touched_sessions {
            self.update_timeline(&id);
        }
    }

    fn update_timeline(&mut self, id: &SessionId) {
        let Some(open) = self.timelines.get_mut(id) else { return };
        let polled = open.view.poll();
        if polled.is_ok() {
            open.waiting = false;
        }
        match polled {
            Ok(delta) if delta.reset || !delta.changed.is_empty() => {
                let offset = open.prefix.len();
                self.timeline_seq += 1;
                let prev = std::mem::replace(&mut open.last_seq, self.timeline_seq);
                let update = TimelineUpdate {
                    seq: self.timeline_seq,
                    prev,
                    session_id: id.clone(),
                    total: open.total(),
                    reset: delta.reset,
                    changed: delta
                        .changed
                        .iter()
                        .filter_map(|&i| {
                            open.get(i + offset).map(|item| IndexedItem { index: i + offset, item: item.clone() })
                        })
                        .collect(),
                };
                let _ = self.timeline.send(Arc::new(update));
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(session = %id, error = %e, "timeline poll failed"),
        }
    }

    fn rescan_new_dirs(&mut self) {
        let now = tokio::time::Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.dir_rescans.drain(..).partition(|(_, _, at)| *at <= now);
        self.dir_rescans = later;
        let mut paths = BTreeSet::new();
        for (root, dir, _) in due {
            let mut found = Vec::new();
            scan::discover_project(&root, &dir, &mut found);
            // Every file: one followed already may have grown before the watch was in
            // place. Reads go on from each file's offset, so nothing is applied twice.
            paths.extend(found.into_iter().map(|l| l.path));
        }
        if !paths.is_empty() {
            self.paths_changed(paths);
        }
    }

    fn rescan_events(&mut self, root: &Path) -> Vec<StoreEvent> {
        let now = self.clock.now();
        let mut events = Vec::new();
        for loc in scan::discover(root) {
            if self.follows(&loc.session_id) {
                events.extend(self.store.file_changed(loc, now));
            }
        }
        events
    }

    fn rescan(&mut self, root: &Path) {
        let events = self.rescan_events(root);
        self.publish(events);
    }

    fn rescan_all(&mut self) {
        for root in self.roots.clone() {
            self.rescan(&root);
            self.registry_dirty.insert(root);
        }
    }

    /// Is every root there and watched (its folder, `projects/` and `sessions/` when they
    /// exist)? A root that does not exist yet is found only by polling.
    fn watches_every_root(&self) -> bool {
        let Some(w) = &self.watcher else { return false };
        self.roots.iter().all(|r| r.is_dir() && w.covers(r))
    }

    /// Folders that appeared after the watch began (a fresh install creating
    /// `projects/`) are picked up here if their creation event was missed.
    fn ensure_coverage(&mut self) {
        let Some(w) = &mut self.watcher else {
            // No watcher at all: poll every root.
            self.rescan_all();
            return;
        };
        let uncovered: Vec<PathBuf> = self.roots.iter().filter(|r| !w.covers(r)).cloned().collect();
        for root in uncovered {
            if let Some(w) = &mut self.watcher {
                w.watch_root(&root);
            }
            self.rescan(&root);
        }
    }

    /// Reads the live registry of the roots that changed, and (once the index is in, for an
    /// engine that follows every session) their background service's files.
    fn poll_registry(&mut self) {
        let now = self.clock.now();
        let dirty: Vec<PathBuf> = self.registry_dirty.drain().collect();
        let mut events = Vec::new();
        for root in dirty {
            let snapshot = registry::read(&roots::sessions_dir(&root), self.store.registry_of(&root));
            self.live.registry(&root, &snapshot.alive);
            events.extend(self.store.set_registry_snapshot(&root, snapshot, now));
        }
        if !self.indexing && self.follow == Follow::Everything {
            for root in self.background_dirty.drain().collect::<Vec<_>>() {
                let files = self.background.read(&root);
                events.extend(self.store.set_background(&root, files, now));
            }
        }
        self.publish(events);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The roster once, without watching: indexes every root, reads the registry, the
/// recorded hook events (when `data_dir` is given), the chain links the fleet database
/// kept and the markers and status files of each cwd, and derives each session's status
/// at `now`. What `mimesis ls` prints. Changes nothing on disk.
pub fn roster_once(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Timestamp,
    data_dir: Option<&Path>,
    links: Vec<Link>,
) -> Vec<TrackedSession> {
    let mut rows = Vec::new();
    roster_once_each(roots, timeouts, now, data_dir, links, Vec::new(), |row| rows.push(row));
    rows
}

/// [`roster_once`], with the sessions that running supervisors (the app, `mimesis run`)
/// published as theirs (each gets its `supervision` and `source: pty`, as in the live
/// roster of the face that runs it), each row handed to `f` as it is derived (most
/// recently active first): memory holds the sessions' facts, never all their rows at once.
pub fn roster_once_each(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Timestamp,
    data_dir: Option<&Path>,
    links: Vec<Link>,
    supervised: Vec<(TranscriptLocation, Supervision)>,
    f: impl FnMut(TrackedSession),
) {
    let mut store = store_once(roots, timeouts, now, data_dir, links, |store| {
        scan::index_each(roots, |f| {
            store.adopt(f, now);
        })
    });
    for (location, supervision) in supervised {
        store.set_supervision(location, Some(supervision), now);
    }
    store.for_each_row(now, f);
}

fn store_once(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Timestamp,
    data_dir: Option<&Path>,
    links: Vec<Link>,
    index: impl FnOnce(&mut Store),
) -> Store {
    let mut store = Store::one_time(timeouts);
    store.restore_links(links);
    index(&mut store);
    for root in roots {
        store.set_registry_snapshot(root, registry::read(&roots::sessions_dir(root), &[]), now);
        store.set_background(root, background::read_once(root), now);
    }
    if let Some(d) = data_dir {
        for ev in spool::read_all(d) {
            store.hook_event(ev, now);
        }
    }
    for cwd in store.recent_cwds(Timestamp::from_millis(0)) {
        let Ok(checked) = roots::checked_cwd(&cwd) else { continue };
        let dir = cwd_files::dot_claude(&checked);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.filter_map(Result::ok) {
            let path = e.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
            match cwd_files::classify(name) {
                Ok(Some(CwdFile::Marker(id))) => {
                    if let Ok(m) = read_bounded(&path, cwd_files::MAX_MARKER_BYTES)
                        .and_then(|b| cwd_files::parse_marker(&b, &id, &cwd))
                    {
                        store.marker(m, now);
                    }
                }
                Ok(Some(CwdFile::Status(id))) => {
                    let mtime = e.metadata().and_then(|m| m.modified()).ok().map(Timestamp::from_system_time);
                    if let Ok(r) = read_bounded(&path, cwd_files::MAX_STATUS_BYTES)
                        .and_then(|b| cwd_files::parse_status_file(&b, mtime))
                    {
                        store.status_file(&id, &cwd, Some(r), now);
                    }
                }
                _ => {}
            }
        }
    }
    store.end_bulk(now);
    store
}

/// The chain a session belongs to, up to it, oldest first: what `mimesis show` reads.
/// Only the session's own project folder is indexed (a chain never changes cwd). `links`:
/// the chain links the fleet database kept.
pub fn chain_of(
    roots: &[PathBuf],
    data_dir: Option<&Path>,
    links: Vec<Link>,
    path: &Path,
    now: Timestamp,
) -> Vec<ChainSegment> {
    let Some(loc) = roots.iter().find_map(|r| TranscriptLocation::of(r, path)) else { return Vec::new() };
    let mut found = Vec::new();
    if let Some(dir) = path.parent() {
        scan::discover_project(&loc.root, dir, &mut found);
    }
    let store = store_once(roots, Timeouts::default(), now, data_dir, links, |store| {
        for f in scan::index_locations(found) {
            store.adopt(f, now);
        }
    });
    store
        .chain_segments(&loc.session_id)
        .into_iter()
        .filter_map(|(session_id, path, reason)| {
            let at = store.link_at(&session_id);
            Some(ChainSegment { session_id, path: path?, reason, at })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_with_nothing_to_poll_for_waits_the_idle_interval() {
        let (poll, idle) = (Duration::from_secs(2), Duration::from_secs(30));
        assert_eq!(poll_wait(poll, idle, true), poll);
        assert_eq!(poll_wait(poll, idle, false), idle);
        // A test's quick poll is never slowed below itself.
        assert_eq!(poll_wait(Duration::from_secs(60), idle, false), Duration::from_secs(60));
    }

    #[test]
    fn the_recent_cwds_are_looked_at_when_the_roster_changed_or_rarely() {
        let t0 = Mono::from_millis(1_000);
        assert!(cwd_check_due(None, 0, t0), "first of all");
        let last = Some((2_000, t0));
        assert!(!cwd_check_due(last, 2_000, t0.plus(Duration::from_secs(1))), "idle: not each poll");
        assert!(!cwd_check_due(last, 2_000, t0.plus(CWD_RECHECK - Duration::from_millis(1))));
        assert!(cwd_check_due(last, 2_001, t0.plus(Duration::from_secs(1))), "a session changed");
        assert!(cwd_check_due(last, 2_000, t0.plus(CWD_RECHECK)), "now and then");
    }
}
