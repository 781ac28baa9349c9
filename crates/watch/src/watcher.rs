//! Watching the config roots with `notify` (SPEC W2): what changed, sorted into the kinds
//! of path the engine cares about. The watcher only reports; the engine reads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use mimesis_core::layout as roots;

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsSignal {
    /// These paths changed (created, written, renamed or removed).
    Paths(Vec<PathBuf>),
    /// Events were lost (the kernel queue overflowed): everything must be re-checked.
    Rescan,
}

/// What a changed path is to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKind {
    /// `<root>/projects/<project>/<file>`: maybe a transcript.
    ProjectFile,
    /// `<root>/projects/<project>`: a project folder appeared or went.
    ProjectDir,
    /// `<root>/projects` itself.
    ProjectsDir,
    /// `<root>/sessions/<pid>.json` or the folder itself.
    Registry,
    /// `<root>/settings.json` or `settings.local.json`.
    Settings,
    /// The background service's files (2.1.332): `<root>/jobs/…`, `<root>/daemon/…`,
    /// `<root>/daemon.status.json`, or those folders themselves.
    Background,
    Other,
}

pub fn classify(root: &Path, path: &Path) -> PathKind {
    let Ok(rel) = path.strip_prefix(root) else { return PathKind::Other };
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    match parts.as_slice() {
        [p] if *p == "projects" => PathKind::ProjectsDir,
        [p, _] if *p == "projects" => PathKind::ProjectDir,
        [p, _, _] if *p == "projects" => PathKind::ProjectFile,
        [s] | [s, _] if *s == "sessions" => PathKind::Registry,
        [f] if *f == "settings.json" || *f == "settings.local.json" => PathKind::Settings,
        [f] if *f == "daemon.status.json" => PathKind::Background,
        [d] | [d, _] if *d == "daemon" => PathKind::Background,
        [j] | [j, _] | [j, _, _] if *j == "jobs" => PathKind::Background,
        _ => PathKind::Other,
    }
}

/// The notify watcher over a set of roots. Dropping it stops watching.
pub struct RootWatcher {
    watcher: notify::RecommendedWatcher,
    /// Folders under watch, with their mode.
    watched: BTreeSet<(PathBuf, bool)>,
}

impl RootWatcher {
    /// Starts a watcher whose events arrive on `tx`.
    pub fn new(tx: mpsc::UnboundedSender<FsSignal>) -> notify::Result<Self> {
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(ev) => {
                tracing::trace!(kind = ?ev.kind, paths = ?ev.paths, "notify event");
                if ev.need_rescan() {
                    let _ = tx.send(FsSignal::Rescan);
                } else if !matches!(ev.kind, notify::EventKind::Access(_)) && !ev.paths.is_empty() {
                    let _ = tx.send(FsSignal::Paths(ev.paths));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "file watcher error; re-checking every root");
                let _ = tx.send(FsSignal::Rescan);
            }
        })?;
        Ok(RootWatcher { watcher, watched: BTreeSet::new() })
    }

    /// Watches what exists of `root`: the root itself (to see `projects/` and `sessions/`
    /// appear and settings change), `projects/` recursively, `sessions/`, and the
    /// background service's `jobs/` (recursively: a folder per job) and `daemon/`. Call
    /// again when a missing folder appears.
    pub fn watch_root(&mut self, root: &Path) {
        for (dir, recursive) in folders(root) {
            self.watch(&dir, recursive);
        }
    }

    /// [`RootWatcher::watch_root`] without `projects/`, while the first index reads every
    /// transcript: a watch there hears each of those opens (an open and a close event per
    /// file, which notify's thread reads and we drop: about 8 % of a first index's CPU).
    /// The index's end watches the rest ([`RootWatcher::covers`] is false until then) and
    /// lists the folders again for what changed meanwhile.
    pub fn watch_root_but_projects(&mut self, root: &Path) {
        let projects = roots::projects_dir(root);
        for (dir, recursive) in folders(root) {
            if dir != projects {
                self.watch(&dir, recursive);
            }
        }
    }

    /// Watches one folder outside the roots, non-recursively (the hook spool, a cwd's
    /// `.claude/`).
    pub fn watch_dir(&mut self, dir: &Path) {
        self.watch(dir, false);
    }

    pub fn unwatch_root(&mut self, root: &Path) {
        let gone: Vec<(PathBuf, bool)> = self.watched.iter().filter(|(p, _)| p.starts_with(root)).cloned().collect();
        for (p, rec) in gone {
            let _ = self.watcher.unwatch(&p);
            self.watched.remove(&(p, rec));
        }
    }

    fn watch(&mut self, dir: &Path, recursive: bool) {
        if self.watched.contains(&(dir.to_owned(), recursive)) || !dir.is_dir() {
            return;
        }
        let mode = if recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
        match self.watcher.watch(dir, mode) {
            Ok(()) => {
                self.watched.insert((dir.to_owned(), recursive));
            }
            Err(e) => tracing::warn!(path = %dir.display(), error = %e,
                "cannot watch folder; changes in it are picked up by the periodic rescan"),
        }
    }

    /// Is every folder of `root` that exists under watch?
    pub fn covers(&self, root: &Path) -> bool {
        folders(root).iter().all(|(p, r)| !p.is_dir() || self.watched.contains(&(p.clone(), *r)))
    }
}

/// The folders of a root under watch, and whether recursively.
fn folders(root: &Path) -> [(PathBuf, bool); 5] {
    [
        (root.to_owned(), false),
        (roots::projects_dir(root), true),
        (roots::sessions_dir(root), false),
        (roots::jobs_dir(root), true),
        (roots::daemon_dir(root), false),
    ]
}

/// Why folders cannot be watched here ([`probe`]): the watcher's own words, with the root
/// it failed on.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Start(notify::Error),
    #[error("{}: {source}", root.display())]
    Watch { root: PathBuf, source: notify::Error },
}

/// Can folders be watched here? Starts a watcher and watches each existing root (not
/// recursively), for `doctor`.
pub fn probe(roots: &[PathBuf]) -> Result<(), ProbeError> {
    let mut w = notify::recommended_watcher(|_res: notify::Result<notify::Event>| {}).map_err(ProbeError::Start)?;
    for r in roots.iter().filter(|r| r.is_dir()) {
        w.watch(r, RecursiveMode::NonRecursive).map_err(|source| ProbeError::Watch { root: r.clone(), source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_paths() {
        let r = Path::new("/h/.claude");
        assert_eq!(classify(r, Path::new("/h/.claude/projects/-p/a.jsonl")), PathKind::ProjectFile);
        assert_eq!(classify(r, Path::new("/h/.claude/projects/-p")), PathKind::ProjectDir);
        assert_eq!(classify(r, Path::new("/h/.claude/projects")), PathKind::ProjectsDir);
        assert_eq!(classify(r, Path::new("/h/.claude/sessions/12.json")), PathKind::Registry);
        assert_eq!(classify(r, Path::new("/h/.claude/sessions")), PathKind::Registry);
        assert_eq!(classify(r, Path::new("/h/.claude/settings.json")), PathKind::Settings);
        for p in
            ["jobs", "jobs/aa2e1246", "jobs/aa2e1246/state.json", "daemon", "daemon/roster.json", "daemon.status.json"]
        {
            assert_eq!(classify(r, &Path::new("/h/.claude").join(p)), PathKind::Background, "{p}");
        }
        assert_eq!(classify(r, Path::new("/h/.claude/jobs/aa2e1246/tmp/x")), PathKind::Other);
        assert_eq!(classify(r, Path::new("/h/.claude/projects/-p/a/subagents/x.jsonl")), PathKind::Other);
        assert_eq!(classify(r, Path::new("/elsewhere/x")), PathKind::Other);
    }
}
