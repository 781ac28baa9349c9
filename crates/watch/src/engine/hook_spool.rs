//! The hook spool: what `mimesis hook` recorded (one file a day under the data dir), read
//! on from where the last read stopped, each event handed to the store and to whoever
//! follows hook events.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mimesis_core::hook_event::{self as hooks, HookEvent};

use super::Actor;
use crate::spool;
use crate::store::Changes;
use crate::tail::FileTail;

/// Where the spool is, and the reading position in each of its files.
pub(super) struct HookSpool {
    pub(super) data_dir: Option<PathBuf>,
    tails: HashMap<PathBuf, FileTail>,
}

impl HookSpool {
    pub(super) fn new(data_dir: Option<PathBuf>) -> HookSpool {
        HookSpool { data_dir, tails: HashMap::new() }
    }

    /// Is `dir` the spool's folder?
    pub(super) fn is_dir(&self, dir: &Path) -> bool {
        self.data_dir.as_ref().is_some_and(|d| hooks::spool_dir(d) == dir)
    }

    /// The events appended to `path` since the last read.
    fn read_new(&mut self, path: &Path) -> Vec<HookEvent> {
        let tail =
            self.tails.entry(path.to_owned()).or_insert_with(|| FileTail::with_max_line(path, hooks::MAX_SPOOL_LINE));
        let mut found: Vec<HookEvent> = Vec::new();
        if let Err(e) = tail.read_new(|l| match hooks::parse_spool_line(l) {
            Some(ev) => found.push(ev),
            None => tracing::debug!("skipped a malformed hook spool line"),
        }) {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the hook spool");
        }
        found
    }
}

impl Actor {
    /// Reads what was appended to the hook spool files.
    pub(super) fn read_spool(&mut self) {
        let Some(data_dir) = self.spool.data_dir.clone() else { return };
        for path in spool::spool_files(&data_dir) {
            self.read_spool_file(&path);
        }
    }

    pub(super) fn read_spool_file(&mut self, path: &Path) {
        let found = self.spool.read_new(path);
        let now = self.clock.both();
        let mut events = Changes::default();
        for ev in found {
            if self.out.live.hooks.receiver_count() > 0 {
                let _ = self.out.live.hooks.send(Arc::new(ev.clone()));
            }
            events.add(self.store.hook_event(ev, now));
        }
        self.publish(events);
    }
}
