//! What the watcher and the polls report: transcript changes, new and removed project
//! folders, the registry, settings and the background service's files; and the rescans and
//! polls that cover what a file event can miss.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::layout::{self as roots, TranscriptLocation};

use super::Actor;
use super::Follow;
use super::actor::Alarm;
use crate::store::Changes;
use crate::watcher::{PathKind, classify};
use crate::{registry, scan};

/// When a new project folder is listed again after it appeared.
const DIR_RESCAN_DELAYS: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(500)];

impl Actor {
    /// The periodic poll: the registry, the background files, the watches' coverage and the
    /// recent cwds' `.claude/` folders (once the index is in).
    pub(super) fn poll(&mut self) {
        if self.indexing {
            return;
        }
        self.polling.registry_dirty.extend(self.roots.iter().cloned());
        self.polling.background_dirty.extend(self.roots.iter().cloned());
        self.poll_registry();
        self.ensure_coverage();
        self.check_cwd_watches();
    }

    pub(super) fn paths_changed(&mut self, paths: BTreeSet<PathBuf>) {
        let now = self.clock.both();
        let mut events = Changes::default();
        let mut settings_changed = false;
        let mut touched_sessions = Vec::new();
        for path in paths {
            if let Some(parent) = path.parent() {
                // Hook spool and cwd files publish their own events at once: what this batch
                // gathered so far goes first, so that events leave in the order the store
                // made them (a `/clear` successor's `discovered` before the link's `updated`;
                // in reverse, a consumer folding the events keeps a stale row).
                if self.spool.is_dir(parent) {
                    if mimesis_core::hook_event::spool_day(&path).is_some() {
                        self.publish(std::mem::take(&mut events));
                        self.read_spool_file(&path);
                    }
                    continue;
                }
                if self.cwd.watches(parent) {
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
                        events.add(self.store.file_changed(loc, now));
                    }
                }
                PathKind::ProjectDir => {
                    if path.is_dir() {
                        let mut found = Vec::new();
                        scan::discover_project(&root, &path, &mut found);
                        found.retain(|l| self.follows(&l.session_id));
                        for loc in found {
                            touched_sessions.push(loc.session_id.clone());
                            events.add(self.store.file_changed(loc, now));
                        }
                        for d in DIR_RESCAN_DELAYS {
                            let at = Alarm::after(self.clock.as_ref(), d);
                            self.timers.dir_rescans.push((root.clone(), path.clone(), at));
                        }
                    } else {
                        events.add(self.store.remove_under(&path));
                    }
                }
                PathKind::ProjectsDir => {
                    if let Some(w) = &mut self.watcher {
                        w.watch_root(&root);
                    }
                    events.add(self.rescan_events(&root));
                }
                PathKind::Registry => {
                    if path == roots::sessions_dir(&root)
                        && let Some(w) = &mut self.watcher
                    {
                        w.watch_root(&root);
                    }
                    self.polling.registry_dirty.insert(root);
                }
                PathKind::Settings => settings_changed = true,
                PathKind::Background => {
                    // (A `jobs/` or `daemon/` folder that appeared gets its watch.)
                    if let Some(w) = &mut self.watcher
                        && !w.covers(&root)
                    {
                        w.watch_root(&root);
                    }
                    self.polling.background_dirty.insert(root);
                }
                PathKind::Other => {}
            }
        }
        if settings_changed {
            events.add(self.store.settings_changed(now));
        }
        self.publish(events);
        touched_sessions.sort();
        touched_sessions.dedup();
        for id in touched_sessions {
            self.update_timeline(&id);
        }
    }

    pub(super) fn rescan_new_dirs(&mut self) {
        let mut paths = BTreeSet::new();
        for (root, dir) in self.timers.take_due_rescans() {
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

    pub(super) fn rescan_events(&mut self, root: &Path) -> Changes {
        let now = self.clock.both();
        let mut events = Changes::default();
        for loc in scan::discover(root) {
            if self.follows(&loc.session_id) {
                events.add(self.store.file_changed(loc, now));
            }
        }
        events
    }

    pub(super) fn rescan(&mut self, root: &Path) {
        let events = self.rescan_events(root);
        self.publish(events);
    }

    pub(super) fn rescan_all(&mut self) {
        for root in self.roots.clone() {
            self.rescan(&root);
            self.polling.registry_dirty.insert(root);
        }
    }

    /// Is every root there and watched (its folder, `projects/` and `sessions/` when they
    /// exist)? A root that does not exist yet is found only by polling.
    pub(super) fn watches_every_root(&self) -> bool {
        let Some(w) = &self.watcher else { return false };
        self.roots.iter().all(|r| r.is_dir() && w.covers(r))
    }

    /// Folders that appeared after the watch began (a fresh install creating
    /// `projects/`) are picked up here if their creation event was missed.
    pub(super) fn ensure_coverage(&mut self) {
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
    pub(super) fn poll_registry(&mut self) {
        let now = self.clock.both();
        let dirty: Vec<PathBuf> = self.polling.registry_dirty.drain().collect();
        let mut events = Changes::default();
        for root in dirty {
            let snapshot = registry::read(&roots::sessions_dir(&root), self.store.registry_of(&root));
            self.out.live.registry(&root, &snapshot.alive);
            events.add(self.store.set_registry_snapshot(&root, snapshot, now));
        }
        if !self.indexing && self.follow == Follow::Everything {
            for root in self.polling.background_dirty.drain().collect::<Vec<_>>() {
                let files = self.polling.background.read(&root);
                events.add(self.store.set_background(&root, files, now));
            }
        }
        self.publish(events);
    }
}
