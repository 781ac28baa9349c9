//! The session store (SPEC W7): every known session, its facts and the roster row last
//! published for it. Changes come in (new lines of a file, a registry snapshot, the clock
//! moving on) and store events come out: `discovered`, `updated` with only the fields that
//! changed, `removed`, handed back by the entry point that made them ([`Changes`], with the
//! supervised sessions' reports that changed). What the fleet database is to keep is taken
//! apart, on its own schedule ([`Store::take_batch`]).
//!
//! The store owns no thread, timer or watcher, and does no I/O: a driver ([`crate::engine`],
//! or the CLI's one-shot `ls`) calls it, and what it needs of files (a transcript read on
//! from its offset, whether a path exists, settings files, git) it asks of its [`Disk`],
//! which the watch layer answers ([`crate::disk::Files`]). It reads no clock either: every
//! entry point takes the driver's [`Now`]: the wall clock for the times transcripts, hooks
//! and status files name, the monotonic clock for the waits that are the store's own (the
//! chain matching grace). Its next deadline is an instant of the monotonic clock
//! ([`Store::next_deadline`]).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Arc;

// Maps keyed by our own ids and paths: a fast hasher (no untrusted party picks the keys'
// hashes to collide: ids are validated and come from file names we list).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::chain::{self, Candidate, Chains, Link, LinkReason, Newcomer};
use mimesis_core::clock::{Mono, Now, Timestamp};
use mimesis_core::cwd_files::{Marker, STATUS_FILE_TTL, StatusReport};
use mimesis_core::facts::{Birth, SessionFacts};
use mimesis_core::hook_event::{HookEvent, TerminalContext};
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::{Batch, PersistedSession};
use mimesis_core::registry::RegistryEntry;
pub use mimesis_core::session::StoreEvent;
use mimesis_core::session::{PendingTool, Source, TrackedSession};
use mimesis_core::status::{self, HookSignal, PendingCall, StatusInput, Timeouts};
use mimesis_core::supervision::policy::AgentReport;
use mimesis_core::supervision::view::{Supervision, SupervisionState};
use mimesis_core::text::clean_text;

use crate::tail::ReadOutcome;

/// A new file that looks like a successor waits this long for the hook events and the
/// registry update that name its terminal before it is matched by folder alone. A wait of
/// the store's own, so on the monotonic clock (`Now::mono`), not a time a transcript names.
pub const CHAIN_GRACE: Duration = Duration::from_secs(2);
/// A `SessionEnd` with reason `clear` pairs with the `SessionStart` that follows within this.
const CLEAR_PAIRING: Duration = Duration::from_secs(300);

struct Entry {
    location: TranscriptLocation,
    /// Where the reading of its file stands (the reading itself is the [`Disk`]'s).
    tail: TailInfo,
    facts: SessionFacts,
    /// Peeked or restored, not read: never tailed until a full read replaces it.
    partial: bool,
    /// Peeked: its facts are a first guess (a provisional row).
    peeked: bool,
    /// The row last published (None until `discovered` was sent, and always in a
    /// one-time read, which derives rows at the end).
    published: Option<Box<TrackedSession>>,
    /// It is a session of the roster (a file with no complete line yet is not, unless
    /// supervised).
    shown: bool,
    /// Adopted as the fleet database holds it, and not published since: its first row is
    /// not a change to store (the row the database keeps is for other readers only).
    as_stored: bool,
}

impl Entry {
    /// A session whose file is to be read from its start (nothing of it known yet).
    fn fresh(location: TranscriptLocation) -> Box<Entry> {
        Box::new(Entry {
            location,
            tail: TailInfo::default(),
            facts: SessionFacts::default(),
            partial: false,
            peeked: false,
            published: None,
            shown: false,
            as_stored: false,
        })
    }
}

/// What hooks told about one session.
#[derive(Clone, Debug)]
struct HookInfo {
    signal: Option<HookSignal>,
    terminal: TerminalContext,
    first_at: Timestamp,
    last_at: Timestamp,
    cwd: Option<String>,
    /// Subagents started and not stopped in the current turn (SubagentStart/-Stop).
    subagents: u32,
    /// A StopFailure ended the last turn (an API error), until the next prompt.
    failed: bool,
    /// Where the session's transcript is (or will be), as the hooks last said.
    transcript_path: Option<String>,
}

/// What one change to the store made, handed back by each of its entry points: the roster's
/// events, and the supervised sessions' reports that changed (for their supervisors).
#[derive(Debug, Default)]
pub struct Changes {
    pub events: Vec<StoreEvent>,
    pub reports: Vec<(SessionId, AgentReport)>,
}

impl Changes {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.reports.is_empty()
    }

    /// These changes, then `more`.
    pub fn add(&mut self, more: Changes) {
        self.events.extend(more.events);
        self.reports.extend(more.reports);
    }
}

/// The roster's single source of truth.
pub struct Store {
    /// Boxed: an entry is large (facts, tail, row) and the map's spare slots and its growth
    /// would otherwise hold that much per slot (most of the index's memory at 10,000 sessions).
    entries: HashMap<SessionId, Box<Entry>>,
    by_path: HashMap<PathBuf, SessionId>,
    /// Live registry entries per root, as last reported (only processes found alive).
    registry: HashMap<PathBuf, Vec<RegistryEntry>>,
    /// Session id → its live registry entry (merged over roots).
    live: HashMap<SessionId, RegistryEntry>,
    /// Sessions that had a live process at some point: gone now means ended.
    ever_live: HashSet<SessionId>,
    /// Where a missing entry means ended (store/reach.rs).
    reach: reach::Reach,
    /// Sessions by working folder (their transcript's, else their hooks'), so matching a
    /// `/clear` successor looks at its folder, not at every session (no square growth
    /// when thousands of sessions share one repository).
    /// Each folder's sessions ordered by last activity (the `/clear` rule takes the most
    /// recent one that fits), and where each session is filed.
    by_cwd: HashMap<Arc<str>, BTreeSet<(Option<Timestamp>, SessionId)>>,
    /// (The folder's name is shared with `by_cwd`: thousands of sessions share a folder.)
    cwd_of: HashMap<SessionId, (Arc<str>, Option<Timestamp>)>,
    /// What the store asks of the disk (transcripts, settings files, git): the watch layer
    /// answers ([`crate::disk::Files`]), and the store itself does no I/O.
    disk: Box<dyn Disk>,
    /// Each cwd's repository root, as the disk last said.
    repo_roots: HashMap<String, Option<String>>,
    timeouts: Timeouts,
    deadlines: BinaryHeap<Reverse<(Timestamp, SessionId)>>,
    /// Work-chain links (SPEC C1–C4).
    chains: Chains,
    /// Links added since the last [`Store::take_batch`].
    new_links: Vec<Link>,
    hooks: HashMap<SessionId, HookInfo>,
    /// `SessionEnd` reason `clear` per `claude` process, waiting for its `SessionStart`.
    pending_clear: HashMap<(u32, u64), (SessionId, Timestamp)>,
    /// Markers naming a session whose file is not (fully) known yet.
    pending_markers: HashMap<SessionId, Marker>,
    /// The last PID the registry showed running each session.
    last_pid: HashMap<SessionId, u32>,
    /// The last name the registry gave each session (kept once its process is gone).
    names: HashMap<SessionId, String>,
    /// Status files by session: the folder they were found in and what they say.
    status_files: HashMap<SessionId, (String, StatusReport)>,
    status_file_ttl: Duration,
    /// New files that may be successors, to match once [`CHAIN_GRACE`] has passed (on the
    /// monotonic clock: the grace is the store's own wait, not a time a transcript names).
    chain_checks: Vec<(Mono, SessionId)>,
    /// Sessions whose predecessor question is settled.
    chain_checked: HashSet<SessionId>,
    /// The initial index is being adopted: chain matching waits for all of it.
    bulk: bool,
    /// Rows are kept as they change and diffed into events; off for a one-time read,
    /// which derives each row once, at the end ([`Store::for_each_row`]), so no row is
    /// kept beside its facts.
    keep_rows: bool,
    /// Sessions whose facts or reading position changed since the last batch.
    dirty: HashSet<SessionId>,
    removed: Vec<SessionId>,
    /// Sessions Mimesis runs in a PTY, and their supervision (shown as `source: pty`).
    supervised: HashMap<SessionId, Supervision>,
    /// What each supervised session's own records said last (for its supervisor), and the
    /// reports that changed since an entry point last handed them back ([`Changes`]).
    agent_reports: HashMap<SessionId, AgentReport>,
    new_agent_reports: Vec<(SessionId, AgentReport)>,
    /// Each root's background files as last reported, and the background sessions they
    /// make (store/background.rs).
    background: HashMap<PathBuf, background::BackgroundFiles>,
    jobs: HashMap<SessionId, background::BgView>,
    /// The last attempt the service's roster gave each background session.
    attempts: HashMap<SessionId, u32>,
    /// The last kind the registry or the service gave each session (kept once it ended).
    kinds: HashMap<SessionId, mimesis_core::job::SessionKind>,
    /// Running sessions have rows before their transcripts (store/at_prompt.rs).
    rows_at_prompt: bool,
}

impl Store {
    /// A store that asks `disk` what it needs to know of files.
    pub fn with_disk(timeouts: Timeouts, disk: Box<dyn Disk>) -> Self {
        Store {
            entries: HashMap::default(),
            by_path: HashMap::default(),
            registry: HashMap::default(),
            live: HashMap::default(),
            ever_live: HashSet::default(),
            reach: reach::Reach::default(),
            by_cwd: HashMap::default(),
            cwd_of: HashMap::default(),
            disk,
            repo_roots: HashMap::default(),
            timeouts,
            deadlines: BinaryHeap::new(),
            chains: Chains::new(),
            new_links: Vec::new(),
            hooks: HashMap::default(),
            pending_clear: HashMap::default(),
            pending_markers: HashMap::default(),
            last_pid: HashMap::default(),
            names: HashMap::default(),
            status_files: HashMap::default(),
            status_file_ttl: STATUS_FILE_TTL,
            chain_checks: Vec::new(),
            chain_checked: HashSet::default(),
            bulk: true,
            keep_rows: true,
            dirty: HashSet::default(),
            removed: Vec::new(),
            supervised: HashMap::default(),
            agent_reports: HashMap::default(),
            new_agent_reports: Vec::new(),
            background: HashMap::default(),
            jobs: HashMap::default(),
            attempts: HashMap::default(),
            kinds: HashMap::default(),
            rows_at_prompt: true,
        }
    }

    /// A store for a one-time read (`mimesis ls`): it sends no events and keeps no rows;
    /// [`Store::for_each_row`] derives them at the end.
    pub fn one_time(timeouts: Timeouts) -> Self {
        Store { keep_rows: false, ..Store::new(timeouts) }
    }

    /// Changes the timeouts; every row is re-derived.
    pub fn set_timeouts(&mut self, timeouts: Timeouts, status_file_ttl: Duration, now: Now) -> Changes {
        self.timeouts = timeouts;
        self.status_file_ttl = status_file_ttl;
        let ids: Vec<SessionId> = self.entries.keys().cloned().collect();
        let mut events = Vec::new();
        for id in ids {
            self.refresh(&id, now, &mut events);
        }
        self.changes(events)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every session's current row, in no order and not copied (what [`Store::snapshot`]
    /// gives, without a copy of every row).
    pub fn rows(&self) -> impl Iterator<Item = &TrackedSession> {
        self.entries.values().filter_map(|e| e.published.as_deref())
    }

    /// One session's current row (as [`Store::snapshot`] has it).
    pub fn row_of(&self, id: &SessionId) -> Option<&TrackedSession> {
        self.entries.get(id).and_then(|e| e.published.as_deref())
    }

    /// Every session's current row, most recently active first.
    pub fn snapshot(&self) -> Vec<TrackedSession> {
        sorted(self.entries.values().filter_map(|e| e.published.as_deref().cloned()).collect())
    }

    /// Every session's row at `now`, most recently active first, one at a time: a one-time
    /// read derives each here, so no two rows need to be in memory together.
    pub fn for_each_row(&self, now: Now, mut f: impl FnMut(TrackedSession)) {
        if self.keep_rows {
            return self.snapshot().into_iter().for_each(f);
        }
        let mut order: Vec<(Timestamp, &SessionId)> =
            self.entries.iter().filter(|(_, e)| e.shown).map(|(id, e)| (self.last_activity(e), id)).collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        for (_, id) in order {
            f(self.row(&self.entries[id], now.wall).0);
        }
    }

    pub fn get(&self, id: &SessionId) -> Option<&TrackedSession> {
        self.entries.get(id).and_then(|e| e.published.as_deref())
    }

    pub fn transcript_path(&self, id: &SessionId) -> Option<&Path> {
        self.entries.get(id).map(|e| e.location.path.as_path())
    }

    /// The segments of the chain up to `id`, oldest first, with the path of each and the
    /// reason of the link into it (for a timeline across the chain).
    pub fn chain_segments(&self, id: &SessionId) -> Vec<(SessionId, Option<PathBuf>, Option<LinkReason>)> {
        self.chains
            .segments(id)
            .into_iter()
            .map(|s| {
                let path = self.transcript_path(&s).map(Path::to_owned);
                let reason = self.chains.link_into(&s).map(|l| l.reason);
                (s, path, reason)
            })
            .collect()
    }

    /// Every known link.
    pub fn links(&self) -> Vec<Link> {
        self.chains.links().cloned().collect()
    }

    /// Does the registry name a process found alive (whose end only a poll can see)?
    pub fn has_live_registry(&self) -> bool {
        !self.live.is_empty() || self.has_live_jobs()
    }

    /// The cwds of sessions active since `since` (whose `.claude/` folders hold markers
    /// and status files), most recent first.
    pub fn recent_cwds(&self, since: Timestamp) -> Vec<String> {
        let mut v: Vec<(Timestamp, &String)> = self
            .entries
            .values()
            .filter_map(|e| Some((e.facts.last_activity?, e.facts.cwd.as_ref()?)))
            .filter(|(t, _)| *t >= since)
            .collect();
        v.sort_by(|a, b| b.cmp(a));
        let mut seen = HashSet::default();
        v.into_iter().filter(|(_, c)| seen.insert(*c)).map(|(_, c)| c.clone()).collect()
    }

    /// Is `id` a session Mimesis runs in a PTY?
    pub fn is_supervised(&self, id: &SessionId) -> bool {
        self.supervised.contains_key(id)
    }

    pub fn contains_path(&self, path: &Path) -> bool {
        self.by_path.contains_key(path)
    }

    /// Bytes and lines read so far, over all files.
    pub fn read_stats(&self) -> (u64, u64) {
        self.entries.values().fold((0, 0), |(b, l), e| (b + e.tail.stats.bytes_read, l + e.tail.stats.lines))
    }

    /// Adopts a file read by the indexer. If the store already follows that path (the
    /// file changed while it was being indexed), the indexed state replaces it and the
    /// file is read on from the indexed offset, so no line is applied twice.
    pub fn adopt(&mut self, file: IndexedFile, now: Now) -> Changes {
        self.adopt_then(file, now, true)
    }

    /// [`Store::adopt`] without reading on: for a caller that reads every adopted file on
    /// later anyway (the engine lists `projects/` again once its first index is in, and
    /// reads each file on from where the index stopped). The index's own read is what the
    /// row shows until then: one open of every transcript fewer (2,000 opens, fstats and
    /// reads of nothing, in the engine's thread as the window's first roster filled in).
    pub fn adopt_read_later(&mut self, file: IndexedFile, now: Now) -> Changes {
        self.adopt_then(file, now, false)
    }

    fn adopt_then(&mut self, mut file: IndexedFile, now: Now, read_on: bool) -> Changes {
        if !self.keep_rows {
            file.facts.release_dedup(); // a one-time read reads no further
        }
        let id = file.location.session_id.clone();
        if let Some(other) = self.entries.get(&id)
            && other.location.path != file.location.path
            // (A row waiting for its transcript where it was expected gives way to it.)
            && self.disk.exists(&other.location.path)
        {
            tracing::warn!(session = %id, kept = %other.location.path.display(), ignored = %file.location.path.display(),
                    "two transcripts have the same session id; following the first one");
            return Changes::default();
        }
        if self.keep_rows {
            // (Paths are looked up only when files change: a one-time read sees none.)
            self.by_path.insert(file.location.path.clone(), id.clone());
        }
        let existing = self.entries.remove(&id);
        // (A file the store already follows changed while it was indexed: read on.)
        let as_stored = file.as_stored && !file.partial && existing.is_none() && self.keep_rows;
        let (published, shown) = existing.map_or((None, false), |e| (e.published, e.shown));
        let (partial, peeked) = (file.partial, file.peeked);
        let tail = self.disk.adopt(&id, file.tail);
        if self.keep_rows && !partial && (tail.stats.bytes_read > 0 || tail.stats.resets > 0) {
            // Read by the index (in full, or on from a stored position): worth storing.
            self.dirty.insert(id.clone());
        }
        self.entries.insert(
            id.clone(),
            Box::new(Entry {
                shown,
                location: file.location,
                tail,
                facts: file.facts,
                partial,
                peeked,
                published,
                as_stored,
            }),
        );
        let mut events = Vec::new();
        if partial || !self.keep_rows {
            // (A one-time read reads no further than the index just did: no second open.)
            self.refresh(&id, now, &mut events);
        } else if as_stored || !read_on {
            // Unchanged since the `stat` that found it so: nothing to read (or read on later).
            self.consider_chain(&id, now, &mut events);
            self.refresh(&id, now, &mut events);
        } else {
            self.read_entry(&id, now, &mut events);
        }
        self.changes(events)
    }

    /// Sessions still known only from a peek (their file vanished before the full read):
    /// forgets them.
    pub fn drop_partial(&mut self) -> Changes {
        let ids: Vec<SessionId> = self.entries.iter().filter(|(_, e)| e.partial).map(|(id, _)| id.clone()).collect();
        let mut events = Vec::new();
        for id in ids {
            self.remove_id(&id, &mut events);
        }
        self.changes(events)
    }

    /// A transcript path changed on disk (created, appended, truncated, replaced, removed).
    pub fn file_changed(&mut self, location: TranscriptLocation, now: Now) -> Changes {
        let mut events = Vec::new();
        let id = location.session_id.clone();
        match self.entries.get(&id) {
            Some(e) if e.location.path != location.path => {
                if self.disk.exists(&e.location.path) {
                    return self.changes(events); // a duplicate id elsewhere: ignored, as in `adopt`
                }
                // The first file is gone: follow the new one.
                self.remove_id(&id, &mut events);
            }
            _ => {}
        }
        if !self.entries.contains_key(&id) {
            if !self.disk.exists(&location.path) {
                return self.changes(events);
            }
            self.by_path.insert(location.path.clone(), id.clone());
            self.entries.insert(id.clone(), Entry::fresh(location));
        }
        if self.entries.get(&id).is_some_and(|e| e.partial) {
            return self.changes(events); // the full read of the index will cover this change
        }
        self.read_entry(&id, now, &mut events);
        self.changes(events)
    }

    /// A path that may have been a transcript is gone.
    pub fn path_removed(&mut self, path: &Path) -> Changes {
        let mut events = Vec::new();
        if self.disk.exists(path) {
            return self.changes(events);
        }
        if let Some(id) = self.by_path.get(path).cloned()
            // A supervised, running or running background session keeps its row; its next
            // update refreshes it.
            && !self.has_row_before_its_file(&id)
        {
            self.remove_id(&id, &mut events);
        }
        self.changes(events)
    }

    /// Every transcript inside `dir` is gone (its project folder was removed).
    pub fn remove_under(&mut self, dir: &Path) -> Changes {
        let gone: Vec<PathBuf> = self.by_path.keys().filter(|p| p.starts_with(dir)).cloned().collect();
        let mut changes = Changes::default();
        for p in &gone {
            changes.add(self.path_removed(p));
        }
        changes
    }

    /// Forgets every session under `root` (a root was removed from the watch list).
    pub fn remove_root(&mut self, root: &Path) -> Changes {
        let mut events = Vec::new();
        let ids: Vec<SessionId> =
            self.entries.values().filter(|e| e.location.root == root).map(|e| e.location.session_id.clone()).collect();
        for id in ids {
            self.remove_id(&id, &mut events);
        }
        self.registry.remove(root);
        self.reach.forget(root);
        self.changes(events)
    }

    /// A session's folder (its transcript's, else its hooks') and last activity (the
    /// later of the transcript's and the hooks'), as chain matching sees them.
    pub(crate) fn activity(&self, id: &SessionId) -> (Option<&str>, Option<Timestamp>) {
        let entry = self.entries.get(id);
        let hook = self.hooks.get(id);
        let cwd = entry.and_then(|e| e.facts.cwd.as_deref()).or_else(|| hook.and_then(|h| h.cwd.as_deref()));
        let last = match (entry.and_then(|e| e.facts.last_activity), hook.map(|h| h.last_at)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        (cwd, last)
    }

    /// Keeps [`Store::by_cwd`] in step with the session's folder and activity.
    fn index_cwd(&mut self, id: &SessionId) {
        let (cwd, last) = self.activity(id);
        if self.cwd_of.get(id).is_some_and(|(c, l)| Some(&**c) == cwd && *l == last) {
            return;
        }
        let cwd: Option<Arc<str>> =
            cwd.map(|c| self.by_cwd.get_key_value(c).map_or_else(|| Arc::from(c), |(k, _)| k.clone()));
        self.unindex_cwd(id);
        if let Some(c) = cwd {
            self.by_cwd.entry(c.clone()).or_default().insert((last, id.clone()));
            self.cwd_of.insert(id.clone(), (c, last));
        }
    }

    fn unindex_cwd(&mut self, id: &SessionId) {
        if let Some((old, last)) = self.cwd_of.remove(id)
            && let Some(set) = self.by_cwd.get_mut(&old)
        {
            set.remove(&(last, id.clone()));
            if set.is_empty() {
                self.by_cwd.remove(&old);
            }
        }
    }

    fn remove_id(&mut self, id: &SessionId, events: &mut Vec<StoreEvent>) {
        self.unindex_cwd(id);
        if let Some(e) = self.entries.remove(id) {
            self.disk.forget(id);
            self.by_path.remove(&e.location.path);
            self.dirty.remove(id);
            self.removed.push(id.clone());
            if e.published.is_some() {
                events.push(StoreEvent::Removed { session_id: id.clone() });
            }
        }
    }

    fn read_entry(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        let keeps_row = self.has_row_before_its_file(id);
        let Some(entry) = self.entries.get_mut(id) else { return };
        let before = (entry.tail.stats.bytes_read, entry.tail.stats.resets);
        let outcome = self.disk.read(id, &entry.location.path, &mut entry.facts, &mut entry.tail);
        if self.keep_rows && (entry.tail.stats.bytes_read, entry.tail.stats.resets) != before {
            self.dirty.insert(id.clone());
        }
        match outcome {
            // A supervised, running or running background session keeps its row while its
            // file does not exist (yet).
            Ok(ReadOutcome::Missing) if !keeps_row => {
                self.remove_id(id, events);
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(path = %entry.location.path.display(), error = %e, "could not read transcript; will retry on its next change");
            }
        }
        self.consider_chain(id, now, events);
        self.refresh(id, now, events);
    }

    /// Replaces what the registry of `root` says: the entries whose processes are alive.
    pub fn set_registry(&mut self, root: &Path, alive: Vec<RegistryEntry>, now: Now) -> Changes {
        if self.registry.get(root) == Some(&alive) {
            return Changes::default();
        }
        self.reach.read(root, now.wall);
        self.registry.insert(root.to_owned(), alive);
        let mut merged: HashMap<SessionId, RegistryEntry> = HashMap::default();
        for e in self.registry.values().flatten() {
            merged.insert(e.session_id.clone(), e.clone());
        }
        let mut touched: HashSet<SessionId> = HashSet::default();
        for (id, e) in &merged {
            if self.live.get(id) != Some(e) {
                touched.insert(id.clone());
            }
        }
        for id in self.live.keys() {
            if !merged.contains_key(id) {
                touched.insert(id.clone());
            }
        }
        self.ever_live.extend(merged.keys().cloned());
        self.reach.running(&self.live, &merged, now.wall);
        for (id, e) in &merged {
            self.last_pid.insert(id.clone(), e.pid);
            if let Some(name) = &e.name {
                self.names.insert(id.clone(), name.clone());
            }
            if let Some(kind) = e.kind {
                self.kinds.insert(id.clone(), kind);
            }
        }
        self.live = merged;
        let mut events = Vec::new();
        self.live_sessions_changed(&touched, now, &mut events);
        for id in &touched {
            self.refresh(id, now, &mut events);
        }
        self.changes(events)
    }

    /// A settings file changed: permission answers may differ for pending tools.
    pub fn settings_changed(&mut self, now: Now) -> Changes {
        let ids: Vec<SessionId> =
            self.entries.iter().filter(|(_, e)| !e.facts.open_tools.is_empty()).map(|(id, _)| id.clone()).collect();
        let mut events = Vec::new();
        for id in ids {
            self.refresh(&id, now, &mut events);
        }
        self.changes(events)
    }

    /// Marks a session as supervised in a PTY (or no longer, with `None`). Claude Code
    /// writes a transcript only at the first prompt, so a supervised session gets its row
    /// at once, at the path its transcript will have; the file is read when it appears.
    pub fn set_supervision(
        &mut self,
        location: TranscriptLocation,
        supervision: Option<Supervision>,
        now: Now,
    ) -> Changes {
        let id = location.session_id.clone();
        let mut events = Vec::new();
        match supervision {
            Some(sup) => {
                self.supervised.insert(id.clone(), sup);
                if !self.entries.contains_key(&id) {
                    self.by_path.insert(location.path.clone(), id.clone());
                    self.entries.insert(id.clone(), Entry::fresh(location));
                    self.read_entry(&id, now, &mut events);
                } else {
                    self.refresh(&id, now, &mut events);
                }
            }
            None => {
                self.agent_reports.remove(&id);
                if self.supervised.remove(&id).is_some() {
                    let gone = self.entries.get(&id).is_some_and(|e| !self.disk.exists(&e.location.path));
                    if gone {
                        self.remove_id(&id, &mut events);
                    } else {
                        self.refresh(&id, now, &mut events);
                    }
                }
            }
        }
        self.changes(events)
    }

    /// Whether a hook of the session was read.
    /// Does the transcript of `id` show its words so far written, as read so far
    /// ([`status::turn_written`])? None for a session it has no row of. A first read of the
    /// file's ends cannot tell a pending call: not until the full read.
    pub fn turn_written(&self, id: &SessionId) -> Option<bool> {
        let e = self.entries.get(id)?;
        Some(!e.peeked && status::turn_written(&e.facts.tail, e.facts.pending_tool().is_some()))
    }

    pub fn hooks_seen(&self, id: &SessionId) -> bool {
        self.hooks.contains_key(id)
    }

    /// The terminal the session's hooks last ran in, when they named one.
    pub fn terminal(&self, id: &SessionId) -> Option<TerminalContext> {
        self.hooks.get(id).map(|h| h.terminal.clone()).filter(|t| !t.is_empty())
    }

    /// Every supervised session's current report (for a consumer that fell behind).
    pub fn agent_reports(&self) -> Vec<(SessionId, AgentReport)> {
        self.agent_reports
            .iter()
            .filter(|(id, _)| self.supervised.contains_key(*id))
            .map(|(i, r)| (i.clone(), r.clone()))
            .collect()
    }

    /// When the next timeout falls due, if any, on the monotonic clock of `now`. (A status
    /// changes at a time its transcript names, on the wall clock: the wait from `now.wall`;
    /// the chain matching grace is the store's own, on the monotonic clock.)
    pub fn next_deadline(&self, now: Now) -> Option<Mono> {
        let status = self.deadlines.peek().map(|Reverse((t, _))| now.mono.plus(t.since(now.wall)));
        let chain = self.chain_checks.iter().map(|(t, _)| *t).min();
        match (status, chain) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Re-evaluates every session whose timeout fell due at `now`.
    pub fn tick(&mut self, now: Now) -> Changes {
        let mut due = Vec::new();
        while let Some(Reverse((t, _))) = self.deadlines.peek() {
            if *t > now.wall {
                break;
            }
            let Some(Reverse((_, id))) = self.deadlines.pop() else { break };
            due.push(id);
        }
        due.sort();
        due.dedup();
        let mut events = Vec::new();
        let (ready, later): (Vec<_>, Vec<_>) = self.chain_checks.drain(..).partition(|(t, _)| *t <= now.mono);
        self.chain_checks = later;
        for (_, id) in ready {
            self.check_chain(&id, now, &mut events);
        }
        for id in due {
            self.refresh(&id, now, &mut events);
        }
        self.changes(events)
    }

    /// What an entry point hands back: its events, and the reports its refreshes changed.
    fn changes(&mut self, events: Vec<StoreEvent>) -> Changes {
        Changes { events, reports: std::mem::take(&mut self.new_agent_reports) }
    }

    /// Recomputes one session's row and publishes the difference.
    fn refresh(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        self.ensure_repo_root(id);
        self.index_cwd(id);
        let Some(entry) = self.entries.get(id) else { return };
        // A file with no complete line yet (created empty, or its first write still torn)
        // is not a session yet: it is announced with its first record, not before.
        if !entry.shown && !entry.partial && !entry.tail.has_lines && !self.has_row_before_its_file(id) {
            return;
        }
        if !self.keep_rows {
            let entry = self.entries.get_mut(id).expect("entry checked above");
            entry.shown = true;
            return;
        }
        let (row, next_check) = self.row(entry, now.wall);
        if let Some(t) = next_check {
            self.deadlines.push(Reverse((t, id.clone())));
        }
        if self.supervised.contains_key(id) {
            let report = AgentReport {
                registry: self.live.get(id).map(|e| (e.pid, e.signal().state)),
                hook: self.hooks.get(id).and_then(|h| h.signal),
                last_record: entry.facts.last_activity,
                status: row.status,
            };
            if self.agent_reports.get(id) != Some(&report) {
                self.agent_reports.insert(id.clone(), report.clone());
                self.new_agent_reports.push((id.clone(), report));
            }
        }
        let entry = self.entries.get_mut(id).expect("entry checked above");
        if row.name.is_some() && entry.facts.registry_name != row.name {
            entry.facts.registry_name.clone_from(&row.name);
        }
        match &entry.published {
            None => events.push(StoreEvent::Discovered { session: Box::new(row.clone()) }),
            Some(old) => {
                let changes = row.diff(old);
                if changes.is_empty() {
                    return;
                }
                events.push(StoreEvent::Updated { session_id: id.clone(), changes: Box::new(changes) });
            }
        }
        entry.published = Some(Box::new(row));
        entry.shown = true;
        if !entry.partial && !std::mem::take(&mut entry.as_stored) {
            self.dirty.insert(id.clone());
        }
    }

    fn ensure_repo_root(&mut self, id: &SessionId) {
        let Some(cwd) = self.entries.get(id).and_then(|e| e.facts.cwd.as_ref()) else { return };
        if !self.repo_roots.contains_key(cwd) {
            let root = self.disk.repo_root(Path::new(cwd));
            self.repo_roots.insert(cwd.clone(), root);
        }
    }
}

/// Rows most recently active first (ties by id, so the order is stable).
fn sorted(mut v: Vec<TrackedSession>) -> Vec<TrackedSession> {
    v.sort_by(|a, b| b.last_activity_at.cmp(&a.last_activity_at).then_with(|| a.session_id.cmp(&b.session_id)));
    v
}

mod at_prompt;
mod background;
mod disk;
mod row;

mod chains;
mod reach;

pub use background::BackgroundFiles;
pub use disk::{Disk, IndexedFile, TailInfo};

#[cfg(test)]
mod tests;
