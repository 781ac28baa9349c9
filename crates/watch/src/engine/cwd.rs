//! The `<cwd>/.claude/` folders of recently active sessions: watched (not recursively) for
//! compaction markers and status files, which go to the store once read and checked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::clock::{Mono, Now, Timestamp};
use mimesis_core::cwd_files::{self, CwdFile, Marker, Rejected, StatusReport};
use mimesis_core::ids::SessionId;
use mimesis_core::layout as roots;

use super::Actor;
use crate::cwd_files::read_bounded;
use crate::store::Store;

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

/// The watched `<cwd>/.claude` folders.
#[derive(Default)]
pub(super) struct CwdWatches {
    /// Each watched folder and its cwd.
    dirs: HashMap<PathBuf, String>,
    /// When the recent cwds were last looked at for a `.claude/` to watch: the seq of the
    /// roster then, and the time.
    checked: Option<(u64, Mono)>,
}

impl CwdWatches {
    pub(super) fn watches(&self, dir: &Path) -> bool {
        self.dirs.contains_key(dir)
    }
}

/// What a file of a `<cwd>/.claude/` folder says.
enum CwdRead {
    Marker(Marker),
    /// A status file, or `None` when it is gone.
    Status(SessionId, Option<StatusReport>),
}

/// Reads a file of the `.claude/` folder of `cwd`: `None` for a file of no interest (or a
/// marker that is gone); the reason when it was refused and what was refused.
fn read_cwd_file(path: &Path, cwd: &str) -> Result<Option<CwdRead>, (&'static str, Rejected)> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(None) };
    let kind = match cwd_files::classify(name) {
        Ok(Some(k)) => k,
        Ok(None) => return Ok(None),
        Err(e) => return Err(("ignored a file with a hostile name", e)),
    };
    match kind {
        CwdFile::Marker(id) => {
            if !path.exists() {
                return Ok(None);
            }
            read_bounded(path, cwd_files::MAX_MARKER_BYTES)
                .and_then(|b| cwd_files::parse_marker(&b, &id, cwd))
                .map(|m| Some(CwdRead::Marker(m)))
                .map_err(|e| ("ignored a compaction marker", e))
        }
        CwdFile::Status(id) => {
            if !path.exists() {
                return Ok(Some(CwdRead::Status(id, None)));
            }
            let mtime =
                std::fs::symlink_metadata(path).and_then(|m| m.modified()).ok().map(Timestamp::from_system_time);
            read_bounded(path, cwd_files::MAX_STATUS_BYTES)
                .and_then(|b| cwd_files::parse_status_file(&b, mtime))
                .map(|r| Some(CwdRead::Status(id, Some(r))))
                .map_err(|e| ("ignored a status file", e))
        }
    }
}

/// Hands what a `.claude/` file says to the store.
fn apply(store: &mut Store, read: CwdRead, cwd: &str, now: Now) -> crate::store::Changes {
    match read {
        CwdRead::Marker(m) => store.marker(m, now),
        CwdRead::Status(id, report) => store.status_file(&id, cwd, report, now),
    }
}

/// Reads every marker and status file of the recent cwds' `.claude/` folders into a
/// one-time store (hostile and malformed files change nothing).
pub(super) fn read_all_once(store: &mut Store, now: Now) {
    for cwd in store.recent_cwds(Timestamp::from_millis(0)) {
        let Ok(checked) = roots::checked_cwd(&cwd) else { continue };
        let dir = cwd_files::dot_claude(&checked);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.filter_map(Result::ok) {
            if let Ok(Some(read)) = read_cwd_file(&e.path(), &cwd) {
                apply(store, read, &cwd, now);
            }
        }
    }
}

impl Actor {
    /// On a poll: the recent cwds' `.claude/` folders, when due ([`cwd_check_due`]).
    pub(super) fn check_cwd_watches(&mut self) {
        let now = self.clock.mono();
        if cwd_check_due(self.cwd.checked, self.seq, now) {
            self.ensure_cwd_watches();
            self.cwd.checked = Some((self.seq, now));
        }
    }

    /// Watches the `.claude` folder of every recently active cwd (non-recursively) and
    /// reads what is already there.
    pub(super) fn ensure_cwd_watches(&mut self) {
        let now = self.clock.now();
        let since = Timestamp::from_millis(now.millis() - CWD_WATCH_WINDOW.as_millis() as i64);
        let cwds = self.store.recent_cwds(since);
        for cwd in cwds.into_iter().take(CWD_WATCH_MAX) {
            let Ok(checked) = roots::checked_cwd(&cwd) else { continue };
            let dir = cwd_files::dot_claude(&checked);
            if self.cwd.dirs.contains_key(&dir) || !dir.is_dir() {
                continue;
            }
            if let Some(w) = &mut self.watcher {
                w.watch_dir(&dir);
            }
            self.cwd.dirs.insert(dir.clone(), cwd.clone());
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
    pub(super) fn cwd_file_changed(&mut self, dir: &Path, path: &Path) {
        let Some(cwd) = self.cwd.dirs.get(dir).cloned() else { return };
        match read_cwd_file(path, &cwd) {
            Ok(Some(read)) => {
                let events = apply(&mut self.store, read, &cwd, self.clock.both());
                self.publish(events);
            }
            Ok(None) => {}
            Err((what, reason)) => tracing::warn!(path = %path.display(), reason = %reason, "{what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
