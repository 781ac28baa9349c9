//! Search over the history of every session on this machine (issue 35): the index of the
//! data dir brought up to date with the transcripts (only what was appended is read), then
//! queried; each hit carries its work chain from the links the fleet database kept. An
//! index found damaged is built anew, once, and the search goes on.

use std::path::{Path, PathBuf};

use mimesis_core::chain::Chains;
use mimesis_core::clock::{Clock, SystemClock};
use mimesis_core::ids::SessionId;
use mimesis_core::search::{Progress, Request, Results};
use mimesis_search::{Index, IndexError};
use mimesis_watch::scan;

pub use mimesis_search::{FILE_NAME as INDEX_FILE, Status as IndexStatus};

fn opened(data_dir: &Path, now: &str) -> Result<Index, IndexError> {
    mimesis_os::private::create_dir_all(data_dir)
        .map_err(|e| IndexError::Request(format!("cannot create the data folder {}: {e}", data_dir.display())))?;
    Index::open(data_dir, now)
}

/// The index of `data_dir`, up to date with every transcript under `roots`;
/// `progress(done, total)` while transcripts are read.
pub fn updated(roots: &[PathBuf], data_dir: &Path, progress: &mut dyn FnMut(usize, usize)) -> Result<Index, String> {
    let now = SystemClock.now().to_iso();
    let files: Vec<_> = roots.iter().flat_map(|r| scan::discover(r)).collect();
    let mut retried = false;
    loop {
        let attempt = opened(data_dir, &now).and_then(|mut ix| ix.update(&files, progress).map(|_| ix));
        match attempt {
            Ok(ix) => return Ok(ix),
            Err(e) if e.is_damage() && !retried => {
                retried = true;
                Index::rebuild(data_dir, &format!("the index was damaged ({e})"), &now).map_err(|e| e.to_string())?;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The hits of `req` among the transcripts under `roots`, most recent first.
pub fn search(
    roots: &[PathBuf],
    data_dir: &Path,
    req: &Request,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Results, String> {
    req.checked()?;
    let ix = updated(roots, data_dir, progress)?;
    let mut results = ix.search(req).map_err(|e| e.to_string())?;
    with_chains(data_dir, &mut results);
    Ok(results)
}

/// Each hit's work chain, and whether its session was superseded (the hit is in the
/// chain's history).
fn with_chains(data_dir: &Path, results: &mut Results) {
    let links = crate::once::stored_links(data_dir);
    if links.is_empty() {
        return;
    }
    let mut chains = Chains::new();
    for l in links {
        let _ = chains.add(l);
    }
    let db = mimesis_fleetdb::Db::open_read_only(&data_dir.join(mimesis_fleetdb::FILE_NAME)).ok();
    let mut names = std::collections::HashMap::new();
    for h in &mut results.hits {
        if chains.link_into(&h.session_id).is_some() || chains.link_out(&h.session_id).is_some() {
            h.work_chain_id = Some(chains.root(&h.session_id).as_str().to_owned());
            h.superseded = chains.successor(&h.session_id).is_some();
            if h.superseded {
                h.chain_head = chains.members(&h.session_id).last().cloned();
            }
            let head = h.chain_head.clone().unwrap_or_else(|| h.session_id.clone());
            h.work_chain_name = names.entry(head.clone()).or_insert_with(|| chain_name(db.as_ref(), &head)).clone();
        }
    }
}

/// A chain's name as the roster shows it: its newest session's stored row's chain name
/// (the first title among its segments), else that session's goal.
fn chain_name(db: Option<&mimesis_fleetdb::Db>, head: &SessionId) -> Option<String> {
    let row = db?.stored_row(head).ok()??;
    row.work_chain_name.or(row.title).or(row.goal)
}

/// What the doctor says about the index.
pub fn status(data_dir: &Path) -> IndexStatus {
    Index::status(data_dir)
}

/// The hits of `req` in the index as it is now (not brought up to date first: the app's
/// [`Keeper`] does that as the transcripts change), with their chains.
pub fn query(data_dir: &Path, req: &Request) -> Result<Results, String> {
    req.checked()?;
    let now = SystemClock.now().to_iso();
    let ix = opened(data_dir, &now).map_err(|e| e.to_string())?;
    let mut results = ix.search(req).map_err(|e| e.to_string())?;
    with_chains(data_dir, &mut results);
    Ok(results)
}

/// Keeps the index of a data dir up to date while the app runs: built on its own thread
/// (the first time, with [`Keeper::progress`] saying how far), then brought up to date each
/// time it is poked (the engine read new records), at most once per [`UPDATE_GAP`]; pokes
/// that come during an update or the gap after it are read by one more.
pub struct Keeper {
    shared: std::sync::Arc<KeeperShared>,
}

/// The least time from the end of one update to the start of the next. Each update lists
/// every project folder and looks at the size of every transcript: under a stream of
/// changes (the window bench's 200 appends a second to 2,000 sessions) updates ran back to
/// back, about a sixth of a core beside the window's own work; a hit in the search at most
/// a couple of seconds behind the transcript costs a user nothing.
pub const UPDATE_GAP: std::time::Duration = std::time::Duration::from_secs(2);

struct KeeperShared {
    state: std::sync::Mutex<KeeperState>,
    wake: std::sync::Condvar,
    clock: std::sync::Arc<dyn Clock>,
    gap: std::time::Duration,
}

#[derive(Default)]
struct KeeperState {
    poked: bool,
    stopped: bool,
    /// Poked, and waiting for the gap after the last update to pass.
    holding: bool,
    progress: Progress,
    /// Updates finished so far (a test waits for the next one).
    updates: u64,
    error: Option<String>,
}

impl Keeper {
    /// Starts the keeper's thread; its first update (a first build, or what was appended
    /// while Mimesis was not running) starts at once.
    pub fn start(roots: Vec<PathBuf>, data_dir: PathBuf) -> Keeper {
        Keeper::start_with(roots, data_dir, std::sync::Arc::new(SystemClock), UPDATE_GAP)
    }

    /// [`Keeper::start`] with its clock and the least time between two updates.
    pub fn start_with(
        roots: Vec<PathBuf>,
        data_dir: PathBuf,
        clock: std::sync::Arc<dyn Clock>,
        gap: std::time::Duration,
    ) -> Keeper {
        let shared =
            std::sync::Arc::new(KeeperShared { state: Default::default(), wake: Default::default(), clock, gap });
        shared.lock().poked = true;
        let s = shared.clone();
        let spawned = std::thread::Builder::new().name("mimesis-search".into()).spawn(move || {
            // The first build reads every transcript: it must not slow the roster's launch.
            if let Err(e) = mimesis_os::procs::lower_this_threads_priority() {
                tracing::debug!("the search index's thread keeps its priority: {e}");
            }
            s.run(&roots, &data_dir)
        });
        if let Err(e) = spawned {
            shared.lock().error = Some(format!("the search index cannot be kept up to date: {e}"));
        }
        Keeper { shared }
    }

    /// Something changed in the transcripts: the index reads it soon.
    pub fn poke(&self) {
        self.shared.lock().poked = true;
        self.shared.wake.notify_all();
    }

    /// How far the first build is (`indexing` false once it is done).
    pub fn progress(&self) -> Progress {
        self.shared.lock().progress
    }

    /// Why the last update failed, if it did.
    pub fn error(&self) -> Option<String> {
        self.shared.lock().error.clone()
    }

    /// Updates finished so far.
    pub fn updates(&self) -> u64 {
        self.shared.lock().updates
    }

    /// Whether it was poked and waits for the gap after its last update ([`UPDATE_GAP`]).
    pub fn holding(&self) -> bool {
        self.shared.lock().holding
    }

    /// Stops the thread after the update under way.
    pub fn stop(&self) {
        self.shared.lock().stopped = true;
        self.shared.wake.notify_all();
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop();
    }
}

impl KeeperShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, KeeperState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self, roots: &[PathBuf], data_dir: &Path) {
        let mut first = true;
        // When the last update ended (none yet: the first starts at once).
        let mut ended: Option<mimesis_core::clock::Mono> = None;
        loop {
            {
                let mut st = self.lock();
                loop {
                    if st.stopped {
                        return;
                    }
                    if !st.poked {
                        st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                        continue;
                    }
                    // Poked: at once, or once the gap after the last update has passed (the
                    // clock is asked again at every wake-up: a stop, a poke, the timeout).
                    let now = self.clock.mono();
                    match ended.map(|e| e.plus(self.gap)).filter(|due| *due > now) {
                        Some(due) => {
                            st.holding = true;
                            st = self.wake.wait_timeout(st, due.since(now)).unwrap_or_else(|e| e.into_inner()).0;
                        }
                        None => break,
                    }
                }
                st.poked = false;
                st.holding = false;
            }
            let mut progress = |done: usize, total: usize| {
                // Only the first update is a build worth showing; later ones are a few lines.
                if first {
                    self.lock().progress = Progress { indexing: done < total, done, total };
                }
            };
            let outcome = updated(roots, data_dir, &mut progress);
            if first {
                // The first update (a build, or what was appended while Mimesis was not
                // running) reads every transcript: what it freed goes back to the system.
                mimesis_os::procs::release_free_memory();
            }
            first = false;
            ended = Some(self.clock.mono());
            {
                let mut st = self.lock();
                st.progress.indexing = false;
                st.updates += 1;
                st.error = outcome.err();
                if let Some(e) = &st.error {
                    tracing::warn!(error = %e, "the search index could not be brought up to date");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::*;

    fn append(path: &Path, uuid: &str, text: &str) {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        let line = serde_json::json!({"type": "user", "uuid": uuid, "timestamp": "2026-11-25T10:00:00.000Z",
            "cwd": "/srv/api", "message": {"role": "user", "content": text}});
        writeln!(f, "{line}").unwrap();
    }

    /// Waits (a condition, not a fixed time) until `f` holds, 30 s at most.
    fn until(what: &str, mut f: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !f() {
            assert!(t0.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
            std::thread::yield_now();
            std::thread::park_timeout(Duration::from_millis(10));
        }
    }

    fn found(data: &Path, word: &str) -> usize {
        let req = Request { query: word.into(), ..Request::default() };
        query(data, &req).map(|r| r.hits.len()).unwrap_or(0)
    }

    #[test]
    fn the_keeper_builds_the_index_then_reads_what_is_appended_when_poked_once_its_gap_has_passed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        let data = dir.path().join("data");
        let folder = root.join("projects/-srv-api");
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("dddddddd-0000-4000-8000-000000000001.jsonl");
        append(&path, "u1", "the first heron");
        let clock = std::sync::Arc::new(mimesis_core::clock::ManualClock::new(SystemClock.now()));
        let keeper = Keeper::start_with(vec![root], data.clone(), clock.clone(), UPDATE_GAP);
        until("the first build", || keeper.updates() >= 1);
        assert!(!keeper.progress().indexing);
        assert_eq!(keeper.error(), None);
        assert_eq!(found(&data, "heron"), 1);
        // Appended and poked right after that update: it waits for the gap, however many
        // pokes come meanwhile.
        append(&path, "u2", "a second kingfisher");
        keeper.poke();
        until("the keeper holding for its gap", || keeper.holding());
        clock.advance(UPDATE_GAP / 2);
        keeper.poke();
        until("the keeper holding again", || keeper.holding());
        assert_eq!(keeper.updates(), 1);
        assert_eq!(found(&data, "kingfisher"), 0);
        // The gap has passed: the next update reads it, once.
        clock.advance(UPDATE_GAP / 2);
        keeper.poke();
        until("the appended record", || found(&data, "kingfisher") == 1);
        until("the update's end", || keeper.updates() == 2);
        assert!(!keeper.holding());
        keeper.stop();
    }

    #[test]
    fn a_keeper_holding_for_its_gap_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        std::fs::create_dir_all(root.join("projects")).unwrap();
        let clock = std::sync::Arc::new(mimesis_core::clock::ManualClock::new(SystemClock.now()));
        let keeper =
            Keeper::start_with(vec![root], dir.path().join("data"), clock, std::time::Duration::from_secs(3600));
        until("the first build", || keeper.updates() >= 1);
        keeper.poke();
        until("the keeper holding for its gap", || keeper.holding());
        let shared = keeper.shared.clone();
        keeper.stop();
        until("the thread's end", || std::sync::Arc::strong_count(&shared) == 2);
    }
}
