//! The session store (SPEC W7): every known session, its facts and the roster row last
//! published for it. Changes come in (new lines of a file, a registry snapshot, the clock
//! moving on) and store events come out: `discovered`, `updated` with only the fields that
//! changed, `removed`.
//!
//! The store owns no thread, timer or watcher; a driver ([`crate::engine`], or the CLI's
//! one-shot `ls`) calls it. It reads transcript files only through [`FileTail`], from the
//! offset it reached before.

use std::cell::RefCell;
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

use crate::permission_files::SettingsCache;
use crate::tail::{FileTail, LineSink, ReadOutcome};

/// A new file that looks like a successor waits this long for the hook events and the
/// registry update that name its terminal before it is matched by folder alone.
pub const CHAIN_GRACE: Duration = Duration::from_secs(2);
/// A `SessionEnd` with reason `clear` pairs with the `SessionStart` that follows within this.
const CLEAR_PAIRING: Duration = Duration::from_secs(300);

/// A transcript read by the indexer, ready to be adopted by the store.
pub struct IndexedFile {
    pub location: TranscriptLocation,
    pub tail: FileTail,
    pub facts: SessionFacts,
    /// Only both ends were read ([`crate::scan::peek`]): the facts are a first guess and
    /// the tail is no reading position. The store waits for the full read.
    pub partial: bool,
    /// The facts are a guess from the file's ends ([`crate::scan::peek`]), not a stored
    /// full read: its row is provisional.
    pub peeked: bool,
    /// The file is exactly as the fleet database holds it ([`IndexedFile::unchanged`]): the
    /// store neither opens it again nor writes it back. (Its folder is watched before the
    /// `stat`, and changes wait for the end of the index: a later write is read on then.)
    pub as_stored: bool,
}

impl IndexedFile {
    /// Reads a transcript from the start.
    pub fn read(location: TranscriptLocation) -> std::io::Result<IndexedFile> {
        let mut tail = FileTail::new(&location.path);
        let mut sink = FactsSink { facts: SessionFacts::default(), scratch: String::new() };
        tail.read_into(&mut sink)?;
        sink.facts.shrink_to_fit();
        Ok(IndexedFile { location, tail, facts: sink.facts, partial: false, peeked: false, as_stored: false })
    }

    /// A previous run's session as it stands, when its file has not changed since: the same
    /// file (device and inode), exactly as long as the stored reading position. One `stat`,
    /// no read. Any other session is given back, to be read on ([`IndexedFile::resume`]).
    pub fn unchanged(mut p: PersistedSession) -> Result<IndexedFile, Box<PersistedSession>> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&p.location.path) else { return Err(Box::new(p)) };
        let same = meta.is_file() && (meta.dev(), meta.ino(), meta.len()) == (p.tail.dev, p.tail.ino, p.tail.offset);
        if !same {
            return Err(Box::new(p));
        }
        if let Some(d) = &p.dedup
            && p.facts.restore_dedup(d).is_none()
        {
            return Err(Box::new(p));
        }
        let mut tail = FileTail::resume(&p.location.path, p.tail);
        tail.mtime = meta.modified().ok();
        Ok(IndexedFile { location: p.location, tail, facts: p.facts, partial: false, peeked: false, as_stored: true })
    }

    /// Reads on from where a previous run stopped (the fleet database): only what was
    /// appended since, or the whole file again if it was replaced or shrank.
    pub fn resume(p: PersistedSession) -> std::io::Result<IndexedFile> {
        let location = p.location;
        let mut facts = p.facts;
        if let Some(d) = &p.dedup
            && facts.restore_dedup(d).is_none()
        {
            // Without its dedup sets the usage could count twice: read it all again.
            return IndexedFile::read(location);
        }
        let mut tail = FileTail::resume(&location.path, p.tail);
        let mut sink = FactsSink { facts, scratch: String::new() };
        match tail.read_into(&mut sink)? {
            ReadOutcome::Missing => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
            _ => {
                sink.facts.shrink_to_fit();
                Ok(IndexedFile { location, tail, facts: sink.facts, partial: false, peeked: false, as_stored: false })
            }
        }
    }
}

struct FactsSink {
    facts: SessionFacts,
    scratch: String,
}

impl LineSink for FactsSink {
    fn line(&mut self, line: &[u8]) {
        self.facts.apply_line_with(&crate::parse::SonicJson, line, &mut self.scratch);
    }
    fn reset(&mut self) {
        self.facts = SessionFacts::default();
    }
}

struct Entry {
    location: TranscriptLocation,
    tail: FileTail,
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
        let tail = FileTail::new(&location.path);
        Box::new(Entry {
            location,
            tail,
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
    /// Parsed settings files (a memo: re-read when a file's stamp changes).
    settings: RefCell<SettingsCache>,
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
    /// New files that may be successors, to match once [`CHAIN_GRACE`] has passed.
    chain_checks: Vec<(Timestamp, SessionId)>,
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
    /// reports that changed since [`Store::take_agent_reports`].
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
    pub fn new(timeouts: Timeouts) -> Self {
        Store {
            entries: HashMap::default(),
            by_path: HashMap::default(),
            registry: HashMap::default(),
            live: HashMap::default(),
            ever_live: HashSet::default(),
            reach: reach::Reach::default(),
            by_cwd: HashMap::default(),
            cwd_of: HashMap::default(),
            settings: RefCell::new(SettingsCache::new(dirs::home_dir())),
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
    pub fn set_timeouts(&mut self, timeouts: Timeouts, status_file_ttl: Duration, now: Timestamp) -> Vec<StoreEvent> {
        self.timeouts = timeouts;
        self.status_file_ttl = status_file_ttl;
        let ids: Vec<SessionId> = self.entries.keys().cloned().collect();
        let mut events = Vec::new();
        for id in ids {
            self.refresh(&id, now, &mut events);
        }
        events
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every session's current row, most recently active first.
    pub fn snapshot(&self) -> Vec<TrackedSession> {
        sorted(self.entries.values().filter_map(|e| e.published.as_deref().cloned()).collect())
    }

    /// Every session's row at `now`, most recently active first, one at a time: a one-time
    /// read derives each here, so no two rows need to be in memory together.
    pub fn for_each_row(&self, now: Timestamp, mut f: impl FnMut(TrackedSession)) {
        if self.keep_rows {
            return self.snapshot().into_iter().for_each(f);
        }
        let mut order: Vec<(Timestamp, &SessionId)> =
            self.entries.iter().filter(|(_, e)| e.shown).map(|(id, e)| (self.last_activity(e), id)).collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        for (_, id) in order {
            f(self.row(&self.entries[id], now).0);
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
    pub fn adopt(&mut self, mut file: IndexedFile, now: Timestamp) -> Vec<StoreEvent> {
        if !self.keep_rows {
            file.facts.release_dedup(); // a one-time read reads no further
        }
        let id = file.location.session_id.clone();
        if let Some(other) = self.entries.get(&id)
            && other.location.path != file.location.path
            // (A row waiting for its transcript where it was expected gives way to it.)
            && other.location.path.exists()
        {
            tracing::warn!(session = %id, kept = %other.location.path.display(), ignored = %file.location.path.display(),
                    "two transcripts have the same session id; following the first one");
            return Vec::new();
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
        if self.keep_rows && !partial && (file.tail.stats.bytes_read > 0 || file.tail.stats.resets > 0) {
            // Read by the index (in full, or on from a stored position): worth storing.
            self.dirty.insert(id.clone());
        }
        self.entries.insert(
            id.clone(),
            Box::new(Entry {
                shown,
                location: file.location,
                tail: file.tail,
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
        } else if as_stored {
            // Unchanged since the `stat` that found it so: nothing to read.
            self.consider_chain(&id, now, &mut events);
            self.refresh(&id, now, &mut events);
        } else {
            self.read_entry(&id, now, &mut events);
        }
        events
    }

    /// Sessions still known only from a peek (their file vanished before the full read):
    /// forgets them.
    pub fn drop_partial(&mut self) -> Vec<StoreEvent> {
        let ids: Vec<SessionId> = self.entries.iter().filter(|(_, e)| e.partial).map(|(id, _)| id.clone()).collect();
        let mut events = Vec::new();
        for id in ids {
            self.remove_id(&id, &mut events);
        }
        events
    }

    /// A transcript path changed on disk (created, appended, truncated, replaced, removed).
    pub fn file_changed(&mut self, location: TranscriptLocation, now: Timestamp) -> Vec<StoreEvent> {
        let mut events = Vec::new();
        let id = location.session_id.clone();
        match self.entries.get(&id) {
            Some(e) if e.location.path != location.path => {
                if e.location.path.exists() {
                    return events; // a duplicate id elsewhere: ignored, as in `adopt`
                }
                // The first file is gone: follow the new one.
                self.remove_id(&id, &mut events);
            }
            _ => {}
        }
        if !self.entries.contains_key(&id) {
            if !location.path.exists() {
                return events;
            }
            self.by_path.insert(location.path.clone(), id.clone());
            self.entries.insert(id.clone(), Entry::fresh(location));
        }
        if self.entries.get(&id).is_some_and(|e| e.partial) {
            return events; // the full read of the index will cover this change
        }
        self.read_entry(&id, now, &mut events);
        events
    }

    /// A path that may have been a transcript is gone.
    pub fn path_removed(&mut self, path: &Path) -> Vec<StoreEvent> {
        let mut events = Vec::new();
        if path.exists() {
            return events;
        }
        if let Some(id) = self.by_path.get(path).cloned()
            // A supervised, running or running background session keeps its row; its next
            // update refreshes it.
            && !self.has_row_before_its_file(&id)
        {
            self.remove_id(&id, &mut events);
        }
        events
    }

    /// Every transcript inside `dir` is gone (its project folder was removed).
    pub fn remove_under(&mut self, dir: &Path) -> Vec<StoreEvent> {
        let gone: Vec<PathBuf> = self.by_path.keys().filter(|p| p.starts_with(dir)).cloned().collect();
        gone.iter().flat_map(|p| self.path_removed(p)).collect()
    }

    /// Forgets every session under `root` (a root was removed from the watch list).
    pub fn remove_root(&mut self, root: &Path) -> Vec<StoreEvent> {
        let mut events = Vec::new();
        let ids: Vec<SessionId> =
            self.entries.values().filter(|e| e.location.root == root).map(|e| e.location.session_id.clone()).collect();
        for id in ids {
            self.remove_id(&id, &mut events);
        }
        self.registry.remove(root);
        self.reach.forget(root);
        events
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
            self.by_path.remove(&e.location.path);
            self.dirty.remove(id);
            self.removed.push(id.clone());
            if e.published.is_some() {
                events.push(StoreEvent::Removed { session_id: id.clone() });
            }
        }
    }

    fn read_entry(&mut self, id: &SessionId, now: Timestamp, events: &mut Vec<StoreEvent>) {
        let keeps_row = self.has_row_before_its_file(id);
        let Some(entry) = self.entries.get_mut(id) else { return };
        let mut sink = FactsSink { facts: std::mem::take(&mut entry.facts), scratch: String::new() };
        let before = (entry.tail.stats.bytes_read, entry.tail.stats.resets);
        let outcome = entry.tail.read_into(&mut sink);
        entry.facts = sink.facts;
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
    pub fn set_registry(&mut self, root: &Path, alive: Vec<RegistryEntry>, now: Timestamp) -> Vec<StoreEvent> {
        if self.registry.get(root) == Some(&alive) {
            return Vec::new();
        }
        self.reach.read(root, now);
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
        self.reach.running(&self.live, &merged, now);
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
        events
    }

    /// A settings file changed: permission answers may differ for pending tools.
    pub fn settings_changed(&mut self, now: Timestamp) -> Vec<StoreEvent> {
        let ids: Vec<SessionId> =
            self.entries.iter().filter(|(_, e)| !e.facts.open_tools.is_empty()).map(|(id, _)| id.clone()).collect();
        let mut events = Vec::new();
        for id in ids {
            self.refresh(&id, now, &mut events);
        }
        events
    }

    /// Marks a session as supervised in a PTY (or no longer, with `None`). Claude Code
    /// writes a transcript only at the first prompt, so a supervised session gets its row
    /// at once, at the path its transcript will have; the file is read when it appears.
    pub fn set_supervision(
        &mut self,
        location: TranscriptLocation,
        supervision: Option<Supervision>,
        now: Timestamp,
    ) -> Vec<StoreEvent> {
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
                    let gone = self.entries.get(&id).is_some_and(|e| !e.location.path.exists());
                    if gone {
                        self.remove_id(&id, &mut events);
                    } else {
                        self.refresh(&id, now, &mut events);
                    }
                }
            }
        }
        events
    }

    /// Whether a hook of the session was read.
    pub fn hooks_seen(&self, id: &SessionId) -> bool {
        self.hooks.contains_key(id)
    }

    /// The terminal the session's hooks last ran in, when they named one.
    pub fn terminal(&self, id: &SessionId) -> Option<TerminalContext> {
        self.hooks.get(id).map(|h| h.terminal.clone()).filter(|t| !t.is_empty())
    }

    /// The supervised sessions' reports that changed since the last call.
    pub fn take_agent_reports(&mut self) -> Vec<(SessionId, AgentReport)> {
        std::mem::take(&mut self.new_agent_reports)
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
    /// changes at a time its transcript names, on the wall clock: the wait from `now.wall`.)
    pub fn next_deadline(&self, now: Now) -> Option<Mono> {
        let status = self.deadlines.peek().map(|Reverse((t, _))| *t);
        let chain = self.chain_checks.iter().map(|(t, _)| *t).min();
        let next = match (status, chain) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(now.mono.plus(next.since(now.wall)))
    }

    /// Re-evaluates every session whose timeout fell due at `now`.
    pub fn tick(&mut self, now: Timestamp) -> Vec<StoreEvent> {
        let mut due = Vec::new();
        while let Some(Reverse((t, _))) = self.deadlines.peek() {
            if *t > now {
                break;
            }
            let Some(Reverse((_, id))) = self.deadlines.pop() else { break };
            due.push(id);
        }
        due.sort();
        due.dedup();
        let mut events = Vec::new();
        let (ready, later): (Vec<_>, Vec<_>) = self.chain_checks.drain(..).partition(|(t, _)| *t <= now);
        self.chain_checks = later;
        for (_, id) in ready {
            self.check_chain(&id, now, &mut events);
        }
        for id in due {
            self.refresh(&id, now, &mut events);
        }
        events
    }

    /// Recomputes one session's row and publishes the difference.
    fn refresh(&mut self, id: &SessionId, now: Timestamp, events: &mut Vec<StoreEvent>) {
        self.ensure_repo_root(id);
        self.index_cwd(id);
        let Some(entry) = self.entries.get(id) else { return };
        // A file with no complete line yet (created empty, or its first write still torn)
        // is not a session yet: it is announced with its first record, not before.
        if !entry.shown && !entry.partial && !entry.tail.has_lines() && !self.has_row_before_its_file(id) {
            return;
        }
        if !self.keep_rows {
            let entry = self.entries.get_mut(id).expect("entry checked above");
            entry.shown = true;
            return;
        }
        let (row, next_check) = self.row(entry, now);
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

    fn row(&self, entry: &Entry, now: Timestamp) -> (TrackedSession, Option<Timestamp>) {
        let f = &entry.facts;
        let id = &entry.location.session_id;
        let live = self.live.get(id);
        let supervision = self.supervised.get(id);
        let worker = self.worker_of(id);
        let last_activity = self.last_activity(entry);
        // A first read of the file's ends cannot tell a pending call from one answered
        // earlier in the file: none until the full read.
        let pending = if entry.peeked { None } else { f.pending_tool() };
        let report = self
            .status_files
            .get(id)
            .filter(|(cwd, _)| f.cwd.as_deref() == Some(cwd.as_str()))
            .map(|(_, r)| r)
            .filter(|r| r.fresh(now, self.status_file_ttl));
        let input = StatusInput {
            tail: f.tail.clone(),
            pending: pending.map(|t| PendingCall {
                since: t.since.unwrap_or(last_activity),
                approval: self.approval(entry, &t.name, &t.target),
                running: t.running,
            }),
            last_activity: f.last_activity,
            registry: live.map(RegistryEntry::signal),
            job: self.job_signal(id),
            hook: self.hooks.get(id).and_then(|h| h.signal),
            reported: report.map(|r| r.status.status()),
            // Gone: seen running before, or written by a CLI that keeps a registry entry for
            // as long as it runs (then no entry means no process: `ls` and `watch` agree),
            // where that registry speaks for its process (store/reach.rs). A supervised
            // session whose process Mimesis ended (a limit, the user, an earlier run of the
            // app) is over too: idle, not waiting for input.
            ended: live.is_none()
                && worker.is_none()
                && supervision.is_none_or(|s| s.pid.is_none())
                // (A background session runs only while the service runs a worker for it.)
                && (self.jobs.contains_key(id)
                    || (self.ever_live.contains(id) || f.registers_while_running())
                        && self.reach.speaks_for(&entry.location.root, id, f.last_activity)
                    || supervision.is_some_and(|s| {
                        matches!(s.state, SupervisionState::Terminated | SupervisionState::Suspended)
                    })),
        };
        let derived = status::derive(&input, now, &self.timeouts);
        let derived = status::Derived {
            next_check: match (derived.next_check, report.map(|r| r.updated.plus(self.status_file_ttl))) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            ..derived
        };
        let own = |sid: &SessionId| {
            self.entries.get(sid).map_or((0, false), |e| (e.facts.compaction_count, e.facts.born_with_boundary))
        };
        let chain = chain::fields(&self.chains, id, own);
        let work_chain_name = self
            .chains
            .segments(id)
            .iter()
            .find_map(|s| self.entries.get(s).and_then(|e| e.facts.title()))
            .map(str::to_owned);
        let row = TrackedSession {
            session_id: id.clone(),
            project_id: entry.location.project_id.clone(),
            cwd: f.cwd.clone().or_else(|| supervision.map(|s| s.cwd.clone())).or_else(|| self.job_cwd(id)),
            repo_root: f.cwd.as_ref().and_then(|c| self.repo_roots.get(c).cloned().flatten()),
            branch: f.branch.clone(),
            goal: f.goal().map(str::to_owned),
            summary: f.summary().map(str::to_owned),
            title: f.title().map(str::to_owned),
            status: derived.status,
            has_pending_tool_use: pending.is_some(),
            pending_tool: pending.map(|t| PendingTool { tool: t.name.clone(), target: clean_text(&t.target, 300) }),
            last_activity_at: last_activity,
            created_at: f.created_at,
            model: f.model.clone(),
            usage: f.usage,
            api_error: f.api_error || self.hooks.get(id).is_some_and(|h| h.failed),
            compaction_count: f.compaction_count.saturating_add(chain.inherited_compactions),
            superseded: chain.superseded_by.is_some(),
            superseded_by: chain.superseded_by,
            superseded_at: chain.superseded_at,
            work_chain_id: Some(chain.work_chain_id),
            work_chain_name,
            chain_length: chain.chain_length,
            source: if supervision.is_some() { Source::Pty } else { Source::Watcher },
            supervision: supervision.cloned(),
            live: live.is_some() || supervision.is_some_and(|s| s.pid.is_some()) || worker.is_some(),
            pid: live.map(|e| e.pid).or(supervision.and_then(|s| s.pid)).or(worker.and_then(|w| w.repl_pid)),
            transcript_path: entry.location.path.to_string_lossy().into_owned(),
            permission_mode: f.permission_mode.clone(),
            malformed_lines: f.malformed + entry.tail.stats.oversized_lines,
            malformed_fields: f.malformed_fields,
            status_file: report.cloned(),
            // A background session's label is its job's first (the registry follows it).
            name: self
                .job_name(id)
                .or_else(|| live.and_then(|e| e.name.clone()))
                .or_else(|| self.names.get(id).cloned())
                .or_else(|| f.registry_name.clone()),
            cost: mimesis_core::pricing::estimate(&f.usage_by_model, f.billed.clone()),
            // Only while the turn runs: a finished turn has no subagent working.
            subagents: match derived.status {
                mimesis_core::status::Status::Working => self.hooks.get(id).map_or(0, |h| h.subagents),
                _ => 0,
            },
            provisional: entry.peeked,
            host: None,
            kind: self.kind_of(id, f),
            job: self.job_row(id),
        };
        (row, derived.next_check)
    }

    /// When the session last did something: its last record, else its file's mtime, else
    /// when its supervision began, else when its registry entry last changed.
    fn last_activity(&self, entry: &Entry) -> Timestamp {
        let id = &entry.location.session_id;
        entry
            .facts
            .last_activity
            .or(entry.tail.mtime.map(Timestamp::from_system_time))
            .or(self.supervised.get(id).map(|s| s.created_at))
            .or(self.live.get(id).and_then(|e| e.status_updated_at))
            .unwrap_or(Timestamp::from_millis(0))
    }

    fn approval(&self, entry: &Entry, tool: &str, target: &str) -> status::Approval {
        let cwd = entry.facts.cwd.as_deref().map(Path::new);
        let mut settings = self.settings.borrow_mut();
        let rules = settings.rules_for(&entry.location.root, cwd);
        let ctx = settings.context(cwd.unwrap_or(Path::new("/")));
        rules.approval(tool, target, entry.facts.permission_mode.as_deref(), &ctx)
    }

    fn ensure_repo_root(&mut self, id: &SessionId) {
        let Some(cwd) = self.entries.get(id).and_then(|e| e.facts.cwd.as_ref()) else { return };
        if !self.repo_roots.contains_key(cwd) {
            let root = crate::git::repo_root(Path::new(cwd)).map(|p| p.to_string_lossy().into_owned());
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
mod chains;
mod reach;

pub use background::BackgroundFiles;

#[cfg(test)]
mod tests;
