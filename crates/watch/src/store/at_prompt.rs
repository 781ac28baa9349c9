//! Sessions at their prompt before their first one (issue 33). Claude Code writes a
//! transcript only at the first prompt, but its live registry entry is there from the
//! start (and its SessionStart hook says where the transcript will be). Such a session is
//! a row at once ("no prompt yet"), at the path its transcript will have, like a
//! supervised session before its first prompt; the file is read when it appears, and the
//! row goes when its process ends with no transcript written.

use super::*;

impl Store {
    /// Does `id` keep a row while its transcript does not exist (yet)? Supervised here, a
    /// running background job, or running (its live registry entry) in an engine that shows
    /// every session.
    pub(super) fn has_row_before_its_file(&self, id: &SessionId) -> bool {
        self.supervised.contains_key(id) || self.live_job(id) || (self.rows_at_prompt && self.live.contains_key(id))
    }

    /// Rows for sessions at their prompt (an engine that follows only supervised sessions
    /// wants none).
    pub fn set_rows_at_prompt(&mut self, on: bool) {
        self.rows_at_prompt = on;
    }

    /// Gives every running session with no row yet one, at the path its transcript will
    /// have. Not during the initial index, which may hold that transcript yet.
    pub(super) fn rows_for_live_sessions(&mut self, now: Now, events: &mut Vec<StoreEvent>) {
        if self.bulk || !self.rows_at_prompt {
            return;
        }
        let new: Vec<TranscriptLocation> = self
            .registry
            .iter()
            .flat_map(|(root, entries)| entries.iter().map(move |e| (root, e)))
            .filter(|(_, e)| !self.entries.contains_key(&e.session_id))
            .filter_map(|(root, e)| self.expected_location(root, &e.session_id, e.cwd.as_deref()))
            .collect();
        for location in new {
            let id = location.session_id.clone();
            if self.entries.contains_key(&id) {
                continue; // (two roots naming one session)
            }
            self.by_path.insert(location.path.clone(), id.clone());
            self.entries.insert(id.clone(), Entry::fresh(location));
            self.read_entry(&id, now, events);
        }
    }

    /// The registry changed for `touched`: rows of sessions whose process ended before
    /// their transcript was written go, and sessions that started get theirs.
    pub(super) fn live_sessions_changed(
        &mut self,
        touched: &HashSet<SessionId>,
        now: Now,
        events: &mut Vec<StoreEvent>,
    ) {
        let gone: Vec<SessionId> = touched
            .iter()
            .filter(|id| !self.has_row_before_its_file(id))
            .filter(|id| {
                self.entries
                    .get(*id)
                    .is_some_and(|e| !e.partial && !e.tail.has_lines && !self.disk.exists(&e.location.path))
            })
            .cloned()
            .collect();
        for id in gone {
            self.remove_id(&id, events);
        }
        self.rows_for_live_sessions(now, events);
    }

    /// Where the transcript of `id` will be: where its SessionStart hook said, when that
    /// is a transcript path of `root`, else in the project folder of its cwd.
    fn expected_location(&self, root: &Path, id: &SessionId, cwd: Option<&str>) -> Option<TranscriptLocation> {
        let hook = self.hooks.get(id).and_then(|h| h.transcript_path.as_deref());
        hook.and_then(|p| TranscriptLocation::of(root, Path::new(p))).filter(|l| &l.session_id == id).or_else(|| {
            cwd.filter(|c| Path::new(c).is_absolute()).map(|c| TranscriptLocation::expected(root, Path::new(c), id))
        })
    }
}
