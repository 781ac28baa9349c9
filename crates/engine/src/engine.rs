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

use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::ids::SessionId;
use crate::registry;
use crate::roots;
use crate::scan;
use crate::session::TrackedSession;
use crate::status::Timeouts;
use crate::store::{IndexedFile, Store, StoreEvent, TranscriptLocation};
use crate::supervise::view::Supervision;
use crate::timeline::{TimelineItem, TimelineView};
use crate::watch::{FsSignal, PathKind, RootWatcher, classify};

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

/// How the engine runs. `Default` gives the spec's values and the system clock.
#[derive(Clone)]
pub struct EngineConfig {
    pub roots: Vec<PathBuf>,
    pub timeouts: Timeouts,
    pub clock: Arc<dyn Clock>,
    /// How often the process registry and watch coverage are re-checked (they also
    /// react to file events at once).
    pub poll_interval: Duration,
    /// Store events kept for a slow subscriber before it has to resync.
    pub event_capacity: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            roots: Vec::new(),
            timeouts: Timeouts::default(),
            clock: Arc::new(SystemClock),
            poll_interval: Duration::from_secs(2),
            event_capacity: 16_384,
        }
    }
}

/// A store event with its sequence number (one more per event, from 1).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Envelope {
    pub seq: u64,
    #[serde(flatten)]
    pub event: StoreEvent,
}

#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RootInfo {
    pub path: PathBuf,
    pub exists: bool,
    pub session_count: usize,
}

/// The roster at one instant: events with `seq <= self.seq` are already in it.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub seq: u64,
    pub sessions: Vec<TrackedSession>,
    pub roots: Vec<RootInfo>,
    /// The initial index is still running: more sessions will be discovered.
    pub indexing: bool,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelinePage {
    pub session_id: SessionId,
    pub total: usize,
    pub start: usize,
    pub items: Vec<TimelineItem>,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelineUpdate {
    pub session_id: SessionId,
    pub total: usize,
    pub reset: bool,
    pub changed: Vec<IndexedItem>,
}

#[derive(Serialize, Clone, Debug)]
pub struct IndexedItem {
    pub index: usize,
    pub item: TimelineItem,
}

type Reply<T> = oneshot::Sender<T>;

enum Command {
    Snapshot(Reply<Snapshot>),
    AddRoot(PathBuf, Reply<()>),
    RemoveRoot(PathBuf, Reply<()>),
    Tick(Reply<()>),
    Path(SessionId, Reply<Option<PathBuf>>),
    InstallTimeline(SessionId, Box<TimelineView>, usize, Reply<TimelinePage>),
    TimelineRange(SessionId, usize, usize, Reply<Result<TimelinePage, EngineError>>),
    TimelineItem(SessionId, usize, Reply<Result<Option<TimelineItem>, EngineError>>),
    CloseTimeline(SessionId),
    Supervise(TranscriptLocation, Option<Box<Supervision>>),
    /// The first roster: every transcript read at both ends only.
    Peeked(Vec<IndexedFile>),
    Indexed(Vec<IndexedFile>),
    Shutdown(Reply<()>),
}

/// A handle to the running engine. Cheap to clone; the engine stops when
/// [`Engine::shutdown`] is called or the last handle is dropped.
#[derive(Clone)]
pub struct Engine {
    cmd: mpsc::UnboundedSender<Command>,
    events: broadcast::Sender<Arc<Envelope>>,
    timeline: broadcast::Sender<Arc<TimelineUpdate>>,
    ready: watch::Receiver<Phase>,
    clock: Arc<dyn Clock>,
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
    pub fn start(config: EngineConfig) -> Engine {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (fs_tx, fs_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(config.event_capacity.max(16));
        let (timeline, _) = broadcast::channel(1024);
        let (ready_tx, ready) = watch::channel(Phase::Starting);
        let watcher = match RootWatcher::new(fs_tx) {
            Ok(mut w) => {
                for r in &config.roots {
                    w.watch_root(r);
                }
                Some(w)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start the file watcher; changes are found by rescanning every few seconds");
                None
            }
        };
        let actor = Actor {
            store: Store::new(config.timeouts),
            roots: config.roots.clone(),
            watcher,
            events: events.clone(),
            timeline: timeline.clone(),
            seq: 0,
            clock: config.clock.clone(),
            timelines: HashMap::new(),
            registry_dirty: config.roots.iter().cloned().collect(),
            indexing: true,
            ready: ready_tx,
            dir_rescans: Vec::new(),
        };
        let roots = config.roots.clone();
        let index_tx = cmd_tx.clone();
        tokio::task::spawn_blocking(move || {
            // A quick first roster, then the exact one: only the full read counts usage
            // and compactions, and only it leaves each file at a reading position.
            let _ = index_tx.send(Command::Peeked(scan::peek(&roots)));
            let _ = index_tx.send(Command::Indexed(scan::index(&roots)));
        });
        tokio::spawn(actor.run(cmd_rx, fs_rx, config.poll_interval));
        Engine { cmd: cmd_tx, events, timeline, ready, clock: config.clock }
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
        let view = tokio::task::spawn_blocking(move || {
            let mut view = TimelineView::new(&path);
            view.poll().map(|_| view).map_err(|source| EngineError::Transcript { path, source })
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

    pub fn close_timeline(&self, id: &SessionId) {
        let _ = self.cmd.send(Command::CloseTimeline(id.clone()));
    }

    /// Shows a session Mimesis runs in a PTY in the roster (`source: pty` with its
    /// `supervision`), at the transcript path it will have; `None` makes it a plain
    /// watched session again.
    pub fn set_supervision(&self, location: TranscriptLocation, supervision: Option<Supervision>) {
        let _ = self.cmd.send(Command::Supervise(location, supervision.map(Box::new)));
    }

    /// Stops the engine and its watcher.
    pub async fn shutdown(&self) {
        let _ = self.ask(Command::Shutdown).await;
    }
}

struct Actor {
    store: Store,
    roots: Vec<PathBuf>,
    watcher: Option<RootWatcher>,
    events: broadcast::Sender<Arc<Envelope>>,
    timeline: broadcast::Sender<Arc<TimelineUpdate>>,
    seq: u64,
    clock: Arc<dyn Clock>,
    timelines: HashMap<SessionId, TimelineView>,
    registry_dirty: HashSet<PathBuf>,
    indexing: bool,
    ready: watch::Sender<Phase>,
    /// New project folders to list again: a file written into a folder the instant it
    /// appears can precede the recursive watch on it (root, folder, when).
    dir_rescans: Vec<(PathBuf, PathBuf, tokio::time::Instant)>,
}

/// When a new project folder is listed again after it appeared.
const DIR_RESCAN_DELAYS: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(500)];

impl Actor {
    async fn run(
        mut self,
        mut cmd_rx: mpsc::UnboundedReceiver<Command>,
        mut fs_rx: mpsc::UnboundedReceiver<FsSignal>,
        poll: Duration,
    ) {
        let mut poll_timer = tokio::time::interval(poll);
        poll_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
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
                _ = poll_timer.tick() => {
                    if !self.indexing {
                        self.registry_dirty.extend(self.roots.iter().cloned());
                        self.poll_registry();
                        self.ensure_coverage();
                    }
                }
            }
        }
    }

    fn publish(&mut self, events: Vec<StoreEvent>) {
        for event in events {
            self.seq += 1;
            let _ = self.events.send(Arc::new(Envelope { seq: self.seq, event }));
        }
    }

    fn command(&mut self, cmd: Command) {
        let now = self.clock.now();
        match cmd {
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
                let _ = reply.send(Snapshot { seq: self.seq, sessions, roots, indexing: self.indexing });
            }
            Command::Peeked(files) => {
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
            Command::Indexed(files) => {
                let mut events = Vec::new();
                for f in files {
                    events.extend(self.store.adopt(f, now));
                }
                events.extend(self.store.drop_partial());
                self.publish(events);
                self.indexing = false;
                self.poll_registry();
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
                let events = self.store.remove_root(&root);
                self.publish(events);
                let _ = reply.send(());
            }
            Command::Tick(reply) => {
                let events = self.store.tick(now);
                self.publish(events);
                let _ = reply.send(());
            }
            Command::Path(id, reply) => {
                let _ = reply.send(self.store.transcript_path(&id).map(Path::to_owned));
            }
            Command::InstallTimeline(id, mut view, tail, reply) => {
                // Catch up with whatever was appended while it loaded.
                let _ = view.poll();
                let total = view.items().len();
                let start = total.saturating_sub(tail);
                let page = TimelinePage { session_id: id.clone(), total, start, items: view.items()[start..].to_vec() };
                self.timelines.insert(id, *view);
                let _ = reply.send(page);
            }
            Command::TimelineRange(id, start, end, reply) => {
                let page = match self.timelines.get(&id) {
                    Some(v) => {
                        let total = v.items().len();
                        let end = end.min(total);
                        let start = start.min(end);
                        Ok(TimelinePage { session_id: id, total, start, items: v.items()[start..end].to_vec() })
                    }
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(page);
            }
            Command::TimelineItem(id, index, reply) => {
                let item = match self.timelines.get(&id) {
                    Some(v) => Ok(v.items().get(index).cloned()),
                    None => Err(EngineError::TimelineNotOpen(id)),
                };
                let _ = reply.send(item);
            }
            Command::CloseTimeline(id) => {
                self.timelines.remove(&id);
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
            let Some(root) = self.roots.iter().find(|r| path.starts_with(r)).cloned() else { continue };
            match classify(&root, &path) {
                PathKind::ProjectFile => {
                    if let Some(loc) = TranscriptLocation::of(&root, &path) {
                        touched_sessions.push(loc.session_id.clone());
                        events.extend(self.store.file_changed(loc, now));
                    }
                }
                PathKind::ProjectDir => {
                    if path.is_dir() {
                        let mut found = Vec::new();
                        scan::discover_project(&root, &path, &mut found);
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
        let Some(view) = self.timelines.get_mut(id) else { return };
        match view.poll() {
            Ok(delta) if delta.reset || !delta.changed.is_empty() => {
                let items = view.items();
                let update = TimelineUpdate {
                    session_id: id.clone(),
                    total: items.len(),
                    reset: delta.reset,
                    changed: delta
                        .changed
                        .iter()
                        .filter_map(|&i| items.get(i).map(|item| IndexedItem { index: i, item: item.clone() }))
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
            events.extend(self.store.file_changed(loc, now));
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

    fn poll_registry(&mut self) {
        let now = self.clock.now();
        let dirty: Vec<PathBuf> = self.registry_dirty.drain().collect();
        let mut events = Vec::new();
        for root in dirty {
            let alive: Vec<_> =
                registry::read_dir(&roots::sessions_dir(&root)).into_iter().filter(|e| e.alive()).collect();
            events.extend(self.store.set_registry(&root, alive, now));
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

/// The roster once, without watching: indexes every root, reads the registry, derives
/// each session's status at `now`. What `mimesis ls` prints.
pub fn roster_once(roots: &[PathBuf], timeouts: Timeouts, now: Timestamp) -> Vec<TrackedSession> {
    let mut store = Store::new(timeouts);
    for f in scan::index(roots) {
        store.adopt(f, now);
    }
    for root in roots {
        let alive = registry::read_dir(&roots::sessions_dir(root)).into_iter().filter(|e| e.alive()).collect();
        store.set_registry(root, alive, now);
    }
    store.snapshot()
}
