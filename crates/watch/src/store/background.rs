//! The store's side of Claude Code's background service (2.1.332): each root's job files
//! and the roster's running workers, as the driver last read them, merged into what a row
//! shows (`kind`, `job`, liveness, the job's status signal). A job whose worker runs gets
//! its row at once, at the path its transcript will have, like a supervised session: its
//! state file is there when `claude --bg` returns, its transcript seconds later.

use mimesis_core::daemon::Worker;
use mimesis_core::ids::JobId;
use mimesis_core::job::{Job, JobState, SessionKind};
use mimesis_core::layout::checked_cwd;
use mimesis_core::status::JobSignal;

use super::*;

/// What one root's background files say now (read by the driver: `jobs/*/state.json`,
/// and the workers of `daemon/roster.json` whose processes are alive).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackgroundFiles {
    /// Each job folder's id and what its state file says.
    pub jobs: Vec<(JobId, JobState)>,
    /// Running workers (none while the service is not running).
    pub workers: Vec<Worker>,
}

/// One background session, as the files of its root say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BgView {
    pub job: JobId,
    pub root: PathBuf,
    pub state: Option<JobState>,
    pub worker: Option<Worker>,
}

impl BgView {
    fn cwd(&self) -> Option<&str> {
        self.state.as_ref().and_then(|s| s.cwd.as_deref()).or(self.worker.as_ref().and_then(|w| w.cwd.as_deref()))
    }

    /// Where its transcript is (the job's word, when it names the session's own file under
    /// the root), else where Claude Code will write it.
    fn location(&self, id: &SessionId) -> Option<TranscriptLocation> {
        let named = self.state.as_ref().and_then(|s| s.transcript.as_deref()).and_then(|p| {
            TranscriptLocation::of(&self.root, Path::new(p))
                .filter(|l| l.session_id == *id && l.path.starts_with(&self.root))
        });
        named.or_else(|| Some(TranscriptLocation::expected(&self.root, &checked_cwd(self.cwd()?).ok()?, id)))
    }
}

impl Store {
    /// Replaces what the background files of `root` say.
    pub fn set_background(&mut self, root: &Path, files: BackgroundFiles, now: Now) -> Changes {
        if self.background.get(root) == Some(&files) {
            return Changes::default();
        }
        self.background.insert(root.to_owned(), files);
        let mut merged: HashMap<SessionId, BgView> = HashMap::default();
        for (root, files) in &self.background {
            for (job, state) in &files.jobs {
                // The folder's name is the job; its session must start with it.
                let Some(sid) = state.session_id.clone().filter(|s| job.names(s)) else { continue };
                merged.insert(
                    sid,
                    BgView { job: job.clone(), root: root.clone(), state: Some(state.clone()), worker: None },
                );
            }
            for w in files.workers.iter().filter(|w| w.job.names(&w.session_id)) {
                merged
                    .entry(w.session_id.clone())
                    .or_insert_with(|| BgView { job: w.job.clone(), root: root.clone(), state: None, worker: None })
                    .worker = Some(w.clone());
            }
        }
        let mut touched: Vec<SessionId> =
            merged.iter().filter(|(id, v)| self.jobs.get(*id) != Some(*v)).map(|(id, _)| id.clone()).collect();
        touched.extend(self.jobs.keys().filter(|id| !merged.contains_key(*id)).cloned());
        for (id, v) in &merged {
            if let Some(a) = v.worker.as_ref().and_then(|w| w.attempt) {
                self.attempts.insert(id.clone(), a);
            }
            self.kinds.insert(id.clone(), SessionKind::Background);
        }
        self.jobs = merged;
        let mut events = Vec::new();
        for id in touched {
            self.background_changed(&id, now, &mut events);
        }
        self.changes(events)
    }

    fn background_changed(&mut self, id: &SessionId, now: Now, events: &mut Vec<StoreEvent>) {
        if self.entries.contains_key(id) {
            // A row that stood for a running job alone goes when the job does.
            if !self.has_row_before_its_file(id) && !self.disk.exists(&self.entries[id].location.path) {
                self.remove_id(id, events);
            } else {
                self.refresh(id, now, events);
            }
            return;
        }
        // A running job with no transcript yet: its row now, at its transcript's path.
        let Some(location) = self.jobs.get(id).filter(|v| v.worker.is_some()).and_then(|v| v.location(id)) else {
            return;
        };
        if self.by_path.contains_key(&location.path) {
            return;
        }
        if self.keep_rows {
            self.by_path.insert(location.path.clone(), id.clone());
        }
        self.entries.insert(id.clone(), Entry::fresh(location));
        self.read_entry(id, now, events);
    }

    /// Does the service run a worker for `id` now?
    pub(crate) fn live_job(&self, id: &SessionId) -> bool {
        self.jobs.get(id).is_some_and(|v| v.worker.is_some())
    }

    /// Is any background session running (whose end only a poll may see)?
    pub(crate) fn has_live_jobs(&self) -> bool {
        self.jobs.values().any(|v| v.worker.is_some())
    }

    pub(crate) fn worker_of(&self, id: &SessionId) -> Option<&Worker> {
        self.jobs.get(id)?.worker.as_ref()
    }

    /// The job's status signal, while its worker runs.
    pub(crate) fn job_signal(&self, id: &SessionId) -> Option<JobSignal> {
        let v = self.jobs.get(id)?;
        v.worker.as_ref()?;
        Some(v.state.as_ref()?.signal())
    }

    pub(crate) fn job_cwd(&self, id: &SessionId) -> Option<String> {
        self.jobs.get(id)?.cwd().map(str::to_owned)
    }

    pub(crate) fn job_name(&self, id: &SessionId) -> Option<String> {
        self.jobs.get(id)?.state.as_ref()?.name.clone()
    }

    /// The row's `job`.
    pub(crate) fn job_row(&self, id: &SessionId) -> Option<Job> {
        let v = self.jobs.get(id)?;
        let st = v.state.as_ref();
        Some(Job {
            id: v.job.clone(),
            state: st.and_then(JobState::shown_state),
            detail: st.and_then(|s| s.detail.clone()),
            intent: st.and_then(|s| s.intent.clone()),
            attempt: v.worker.as_ref().and_then(|w| w.attempt).or_else(|| self.attempts.get(id).copied()),
            needs: st.filter(|s| s.blocked()).and_then(|s| s.needs.clone()),
        })
    }

    /// The row's `kind`: the live registry's word, the job, the transcript's records, what
    /// the registry said earlier, supervision here (an interactive session in our PTY).
    pub(crate) fn kind_of(&self, id: &SessionId, facts: &SessionFacts) -> Option<SessionKind> {
        if let Some(k) = self.live.get(id).and_then(|e| e.kind) {
            return Some(k);
        }
        if self.jobs.contains_key(id) || facts.background {
            return Some(SessionKind::Background);
        }
        self.kinds.get(id).copied().or(self.supervised.contains_key(id).then_some(SessionKind::Interactive))
    }
}
