//! What the drivers that act on background sessions share (budgets, the limits on Claude
//! Code's background sessions): following the roster with a few fields of each row (a copy
//! of every row would double the roster's memory), and Claude Code's own verb on a
//! session's worker (`claude stop|respawn <id>`: nothing of the service is ever signalled
//! by Mimesis).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mimesis_core::clock::{Clock, Mono};
use mimesis_core::daemon::Worker;
use mimesis_core::ids::{JobId, SessionId};
use mimesis_core::session::{SessionPatch, StoreEvent, TrackedSession};
use mimesis_watch::background::running_workers;
use mimesis_watch::{Engine, Envelope};
use tokio::sync::broadcast::error::RecvError;

use crate::background::{Claude, Verb, claude_program};

/// The few fields a driver keeps of a roster row.
pub(crate) trait Slim: Sized {
    fn of(s: &TrackedSession) -> Self;
    fn apply(&mut self, p: &SessionPatch);
    /// A row the engine discovered while followed (a new transcript).
    fn discovered(s: &TrackedSession) -> Self {
        Self::of(s)
    }
    /// A row read again after the events lagged; `was` is what was known of it.
    fn reread(was: Option<&Self>, s: &TrackedSession) -> Self {
        let _ = was;
        Self::of(s)
    }
}

/// What an event of the engine did to the rows.
pub(crate) enum Seen {
    /// These rows changed (a row no longer kept was removed).
    Rows(Vec<SessionId>),
    /// The engine's stream ended.
    Closed,
}

/// The rows of the roster, followed in the engine's order (a lag reads them again).
pub(crate) struct Rows<R> {
    rows: HashMap<SessionId, R>,
    seq: u64,
    following: bool,
}

impl<R: Slim> Rows<R> {
    pub(crate) fn new() -> Rows<R> {
        Rows { rows: HashMap::new(), seq: 0, following: false }
    }

    pub(crate) fn following(&self) -> bool {
        self.following
    }

    /// Starts following: the rows of a snapshot (none when the engine cannot give one).
    pub(crate) async fn start(&mut self, engine: &Engine) {
        if let Ok(snap) = engine.snapshot().await {
            self.seq = snap.seq;
            self.rows = snap.sessions.iter().map(|s| (s.session_id.clone(), R::of(s))).collect();
        }
        self.following = true;
    }

    /// Stops following: no row kept.
    pub(crate) fn stop(&mut self) {
        self.following = false;
        self.rows.clear();
    }

    pub(crate) fn all(&self) -> &HashMap<SessionId, R> {
        &self.rows
    }

    pub(crate) fn all_mut(&mut self) -> &mut HashMap<SessionId, R> {
        &mut self.rows
    }

    pub(crate) fn get(&self, id: &SessionId) -> Option<&R> {
        self.rows.get(id)
    }

    pub(crate) fn ids(&self) -> Vec<SessionId> {
        self.rows.keys().cloned().collect()
    }

    /// One of the engine's events (ignored while not following, and when older than the
    /// rows), or a lag (the rows read again: every row kept before or now has changed).
    pub(crate) async fn take(&mut self, ev: Result<Arc<Envelope>, RecvError>, engine: &Engine) -> Seen {
        match ev {
            Err(RecvError::Closed) => Seen::Closed,
            Ok(_) | Err(RecvError::Lagged(_)) if !self.following => Seen::Rows(Vec::new()),
            Ok(env) => {
                if env.seq <= self.seq {
                    return Seen::Rows(Vec::new());
                }
                self.seq = env.seq;
                let id = env.event.session_id().clone();
                match &env.event {
                    StoreEvent::Discovered { session } => {
                        self.rows.insert(id.clone(), R::discovered(session));
                    }
                    StoreEvent::Updated { changes, .. } => {
                        if let Some(r) = self.rows.get_mut(&id) {
                            r.apply(changes);
                        }
                    }
                    StoreEvent::Removed { .. } => {
                        self.rows.remove(&id);
                    }
                }
                Seen::Rows(vec![id])
            }
            Err(RecvError::Lagged(_)) => {
                let Ok(snap) = engine.snapshot().await else { return Seen::Rows(Vec::new()) };
                self.seq = snap.seq;
                let mut ids = self.ids();
                let was = std::mem::take(&mut self.rows);
                for s in &snap.sessions {
                    let row = R::reread(was.get(&s.session_id), s);
                    if !was.contains_key(&s.session_id) {
                        ids.push(s.session_id.clone());
                    }
                    self.rows.insert(s.session_id.clone(), row);
                }
                Seen::Rows(ids)
            }
        }
    }
}

/// The tokio instant at which the injected clock's monotonic time reaches `at` (an hour
/// away at most: a longer wait is looked at again).
pub(crate) fn wake_at(clock: &dyn Clock, at: Mono) -> tokio::time::Instant {
    tokio::time::Instant::now() + at.since(clock.mono()).min(std::time::Duration::from_secs(3600))
}

/// Where the service's worker of `job` runs: the config folder it was found under, and
/// the worker (its pid, folder, start).
pub(crate) fn worker(roots: &[PathBuf], job: &JobId) -> Option<(PathBuf, Worker)> {
    roots.iter().find_map(|r| running_workers(r).into_iter().find(|w| w.job == *job).map(|w| (r.clone(), w)))
}

/// The worker's folder, checked (absolute, no `..`).
pub(crate) fn cwd_of(w: &Worker) -> Option<PathBuf> {
    w.cwd.as_deref().and_then(|c| mimesis_core::layout::checked_cwd(c).ok())
}

/// Claude Code's own `claude <verb> <job>` for the session `id`, off the task, in the
/// session's folder, logged with `why` (what asked for it).
pub(crate) fn act(
    data_dir: &Path,
    root: &Path,
    cwd: Option<&Path>,
    (id, job): (&SessionId, &JobId),
    verb: Verb,
    why: &'static str,
) {
    let claude = Claude::new(claude_program(data_dir), root).in_folder(cwd);
    let (id, job) = (id.clone(), job.clone());
    tokio::task::spawn_blocking(move || match claude.act(&job, verb) {
        Ok(said) => tracing::info!(session = %id, %said, "{why}: claude {}", verb.word()),
        Err(e) => tracing::warn!(session = %id, error = %e, "{why}: claude {} failed", verb.word()),
    });
}
