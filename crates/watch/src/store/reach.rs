//! Where a missing registry entry means that a session ended (issue 33, SPEC W9).
//!
//! Claude Code (≥ 2.1.197, `entrypoint: cli`) keeps `sessions/<pid>.json` for as long as
//! it runs, so no entry usually means no process. Only usually: where `sessions/` cannot
//! be read (it is missing, or not a folder), where the entry names another pid namespace
//! (a container sharing the folder: `pidDomain`), or where the transcript goes on after
//! the entry was last seen gone, the registry does not speak for that process, and the
//! session is read from its transcript (working, waiting) instead of being called ended.
//! A transcript that goes on is one with activity later than the instant its absence was
//! seen: records written before the CLI removed its entry never are.

use super::*;

/// What the store knows of each root's registry besides its live entries.
#[derive(Default)]
pub(super) struct Reach {
    /// Per root: since when its `sessions/` folder is read (None: known unreadable).
    roots: HashMap<PathBuf, Option<Timestamp>>,
    /// Per root: sessions whose entry names another pid namespace.
    foreign: HashMap<PathBuf, Vec<SessionId>>,
    /// When each session seen running was last seen gone from its registry.
    vanished: HashMap<SessionId, Timestamp>,
    /// Sessions whose process's entry now names another session (`/clear` in the same
    /// process): over, whatever their transcript still receives.
    replaced: HashSet<SessionId>,
}

impl Reach {
    /// A registry read of `root` (by a caller that does not say more): readable, unless a
    /// snapshot said otherwise.
    pub(super) fn read(&mut self, root: &Path, now: Timestamp) {
        self.roots.entry(root.to_owned()).or_insert(Some(now));
    }

    /// Sessions seen running before (`before`) and now (`now_live`).
    pub(super) fn running(
        &mut self,
        before: &HashMap<SessionId, RegistryEntry>,
        now_live: &HashMap<SessionId, RegistryEntry>,
        now: Timestamp,
    ) {
        for (id, e) in before.iter().filter(|(id, _)| !now_live.contains_key(*id)) {
            self.vanished.insert(id.clone(), now);
            if now_live.values().any(|n| n.pid == e.pid) {
                self.replaced.insert(id.clone());
            }
        }
        for id in now_live.keys() {
            self.vanished.remove(id);
            self.replaced.remove(id);
        }
    }

    /// Takes what a read of `root` says; true when that changed anything.
    fn update(&mut self, root: &Path, readable: bool, mut foreign: Vec<SessionId>, now: Timestamp) -> bool {
        foreign.sort();
        let was = self.roots.get(root).copied();
        let since = match (readable, was) {
            (true, Some(Some(t))) => Some(t),
            (true, _) => Some(now),
            (false, _) => None,
        };
        let changed = was != Some(since) || self.foreign.get(root).map_or(!foreign.is_empty(), |f| *f != foreign);
        self.roots.insert(root.to_owned(), since);
        if foreign.is_empty() {
            self.foreign.remove(root);
        } else {
            self.foreign.insert(root.to_owned(), foreign);
        }
        changed
    }

    pub(super) fn forget(&mut self, root: &Path) {
        self.roots.remove(root);
        self.foreign.remove(root);
    }

    /// Does `root`'s registry, with no entry for `id`, say that its process is gone?
    pub(super) fn speaks_for(&self, root: &Path, id: &SessionId, last_activity: Option<Timestamp>) -> bool {
        if self.replaced.contains(id) {
            return true;
        }
        if self.foreign.values().any(|f| f.binary_search(id).is_ok()) {
            return false;
        }
        let Some(Some(since)) = self.roots.get(root).copied() else { return false };
        let absent = self.vanished.get(id).copied().unwrap_or(since);
        last_activity.is_none_or(|a| a <= absent)
    }
}

impl Store {
    /// Replaces what the registry of `root` says, as read ([`crate::registry::read`]):
    /// whether it can be read, the entries whose processes are alive, and the sessions
    /// that run in another pid namespace.
    pub fn set_registry_snapshot(&mut self, root: &Path, snapshot: crate::registry::Snapshot, now: Now) -> Changes {
        let mut events = Vec::new();
        if self.reach.update(root, snapshot.readable, snapshot.foreign, now.wall) {
            // Only recent sessions can read otherwise: an older one is idle either way.
            let idle = self.timeouts.idle;
            let ids: Vec<SessionId> = self
                .entries
                .values()
                .filter(|e| e.location.root == root)
                .filter(|e| e.facts.last_activity.is_some_and(|a| a.plus(idle) > now.wall))
                .map(|e| e.location.session_id.clone())
                .collect();
            for id in ids {
                self.refresh(&id, now, &mut events);
            }
        }
        let mut changes = self.changes(events);
        changes.add(self.set_registry(root, snapshot.alive, now));
        changes
    }

    /// The entries of `root` found alive at its last read.
    pub fn registry_of(&self, root: &Path) -> &[RegistryEntry] {
        self.registry.get(root).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

    fn at(secs: u64) -> Timestamp {
        T0.plus(Duration::from_secs(secs))
    }

    #[test]
    fn a_missing_entry_speaks_only_for_a_readable_registry_of_this_namespace_and_what_came_before() {
        let root = Path::new("/r");
        let id = SessionId::parse("s1").unwrap();
        let mut r = Reach::default();
        assert!(!r.speaks_for(root, &id, Some(at(0))), "never read");
        assert!(r.update(root, false, vec![], at(10)));
        assert!(!r.speaks_for(root, &id, Some(at(0))), "not readable");
        assert!(r.update(root, true, vec![], at(10)));
        assert!(!r.update(root, true, vec![], at(20)), "the same: nothing changed");
        assert!(r.speaks_for(root, &id, Some(at(5))), "history before the first read");
        assert!(r.speaks_for(root, &id, None));
        assert!(!r.speaks_for(root, &id, Some(at(11))), "a transcript that goes on");
        // Seen running, then gone at 30: what it wrote before counts for nothing.
        r.vanished.insert(id.clone(), at(30));
        assert!(r.speaks_for(root, &id, Some(at(29))));
        assert!(!r.speaks_for(root, &id, Some(at(31))));
        // Its entry names another pid namespace: it cannot be told.
        assert!(r.update(root, true, vec![id.clone()], at(40)));
        assert!(!r.speaks_for(root, &id, Some(at(0))));
    }
}
