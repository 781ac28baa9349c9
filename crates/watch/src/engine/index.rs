//! The start-up: a first roster (from the fleet database, else from both ends of every
//! file), then the full read, on the blocking pool; the actor adopts each part as it comes
//! and starts following changes once the last is in.

use std::collections::HashSet;
use std::path::PathBuf;

use mimesis_core::chain::Link;

use super::persist::load_persisted;
use super::{Actor, EngineConfig, Follow, IndexPriority, Phase};
use crate::scan;
use crate::store::{Changes, IndexedFile};
use crate::tail::FileTail;

/// Full reads handed to the engine at once while the index runs. The last part is adopted,
/// published and applied by the page after the last read, before the roster is complete;
/// the files are read biggest first, so the last part is many small files read in a few
/// milliseconds: at 512 it held up to 511 sessions' updates after the read (the window's
/// first launch: the app's and the page's work on them after the index was done).
const INDEX_PART: usize = 128;

/// Indexes the roots of `config` on the blocking pool, handing each part to `send`.
pub(super) fn spawn(config: &EngineConfig, send: impl Fn(IndexMsg) + Send + 'static) {
    let roots = config.roots.clone();
    let archive = config.archive.clone();
    let follow = config.follow;
    let clock = config.clock.clone();
    let priority = config.index_priority;
    tokio::task::spawn_blocking(move || {
        // A quick first roster, then the exact one: only the full read counts usage
        // and compactions, and only it leaves each file at a reading position. With
        // a fleet database both come from it: its rows at once, then each file read
        // on from where the last run stopped.
        let t0 = clock.mono();
        let (persisted, links) = match &archive {
            Some(archive) => load_persisted(archive.as_ref(), &roots),
            None => (Vec::new(), Vec::new()),
        };
        if archive.is_some() {
            tracing::info!(sessions = persisted.len(), links = links.len(), elapsed = ?clock.mono().since(t0),
                "loaded the fleet database");
        }
        if follow == Follow::SupervisedOnly {
            send(IndexMsg::Restored(Vec::new(), links));
            send(IndexMsg::Peeked(Vec::new()));
            send(IndexMsg::Done(Vec::new()));
        } else if persisted.is_empty() {
            send(IndexMsg::Restored(Vec::new(), links));
            send(IndexMsg::Peeked(scan::peek(&roots)));
            // In parts: every read file need not wait in memory for the last one.
            let mut part = Vec::new();
            let pool = readers(priority);
            scan::index_each_in(&roots, pool.as_ref(), |f| {
                part.push(f);
                if part.len() == INDEX_PART {
                    send(IndexMsg::Part(std::mem::take(&mut part)));
                }
            });
            send(IndexMsg::Done(part));
        } else {
            // A file unchanged since the last run is ready as stored: it is in the first
            // roster complete, and neither read nor copied again. The others are shown
            // from the database (provisional) until they are read on.
            let (unchanged, changed) = scan::split_unchanged(persisted);
            let done: HashSet<PathBuf> = unchanged.iter().map(|f| f.location.path.clone()).collect();
            // The provisional ones first: every session is known when the complete
            // ones are adopted (and their chains considered).
            let mut first: Vec<IndexedFile> = changed
                .iter()
                .map(|p| IndexedFile {
                    location: p.location.clone(),
                    tail: FileTail::new(PathBuf::new()),
                    facts: p.facts.clone(),
                    partial: true,
                    peeked: false,
                    as_stored: false,
                })
                .collect();
            first.extend(unchanged);
            send(IndexMsg::Restored(first, links));
            // (No stored session to read on, the usual second launch: no threads started for
            // it; a transcript new since the last run is read as before.)
            let priority = if changed.is_empty() { IndexPriority::Normal } else { priority };
            let read_on = || scan::index_resuming(&roots, changed, &done);
            let files = match readers(priority) {
                Some(pool) => pool.install(read_on),
                None => read_on(),
            };
            send(IndexMsg::Done(files));
        }
    });
}

/// The nice value of the full read's threads in the background ([`readers`]). Not 19: at
/// 19 anything else on the machine (builds at nice 10, load 8) went before the read and the
/// complete roster came 0.34 s later than with the read at nice 0; at 10 the page still
/// gets ~90 % of a core it shares with a reader, as the search index's first build does.
const READERS_NICE: i32 = 10;

/// The threads of the full read, when it is not to run on rayon's global pool: threads
/// of their own at a low priority, which end with the index (a thread cannot raise its
/// priority back). On a first launch the window's page starts at the same moment and
/// needs both cores for ~0.4 s; at nice 0 the read (~0.6 s of CPU on 2,000 transcripts)
/// took half of them and the page's steps from its document to its first rows took
/// 520-565 ms instead of 330-360 (its bundle's evaluation 190-200 ms instead of 140-180).
fn readers(priority: IndexPriority) -> Option<rayon::ThreadPool> {
    if priority == IndexPriority::Normal {
        return None;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("mimesis-index-{i}"))
        .start_handler(|_| {
            if let Err(e) = mimesis_os::procs::lower_this_threads_priority_to(READERS_NICE) {
                tracing::debug!("a reader of the first index keeps its priority: {e}");
            }
        })
        .build();
    match pool {
        Ok(pool) => Some(pool),
        Err(e) => {
            tracing::warn!("the first index reads on the shared threads: {e}");
            None
        }
    }
}

/// What the index thread hands over (engine/index.rs).
pub(super) enum IndexMsg {
    /// The first roster from the fleet database, with the chain links it kept.
    Restored(Vec<IndexedFile>, Vec<Link>),
    /// The first roster: every transcript read at both ends only.
    Peeked(Vec<IndexedFile>),
    /// Full reads, as they finish (a big roster fills in while the rest is read).
    Part(Vec<IndexedFile>),
    /// The last full reads: the index is done.
    Done(Vec<IndexedFile>),
}

impl Actor {
    pub(super) fn index_message(&mut self, msg: IndexMsg) {
        match msg {
            IndexMsg::Restored(files, links) => {
                self.store.restore_links(links);
                let total = files.len();
                // Those found unchanged are complete already.
                let complete = files.iter().filter(|f| !f.partial).count();
                self.out.progress.send_modify(|p| {
                    p.done += complete;
                    p.total = p.total.max(total);
                });
                if !files.is_empty() {
                    self.adopt(files);
                    self.poll_registry();
                    let _ = self.out.ready.send(Phase::Peeked);
                }
            }
            IndexMsg::Peeked(files) => {
                let total = files.len();
                self.out.progress.send_modify(|p| p.total = p.total.max(total));
                self.adopt(files);
                // Liveness and "waiting for approval" come from the registry: part of the
                // first roster too.
                self.poll_registry();
                let _ = self.out.ready.send(Phase::Peeked);
            }
            IndexMsg::Part(files) => {
                let n = files.len();
                self.out.progress.send_modify(|p| {
                    p.done += n;
                    p.total = p.total.max(p.done);
                });
                self.adopt(files);
            }
            IndexMsg::Done(files) => {
                let n = files.len();
                let now = self.clock.both();
                let mut events = Changes::default();
                for f in files {
                    events.add(self.store.adopt_read_later(f, now));
                }
                events.add(self.store.drop_partial());
                self.publish(events);
                self.indexing = false;
                self.out.progress.send_modify(|p| {
                    p.done += n;
                    p.total = p.total.max(p.done);
                    p.indexing = false;
                });
                self.poll_registry();
                self.after_index();
                let _ = self.out.ready.send(Phase::Indexed);
            }
        }
    }

    fn adopt(&mut self, files: Vec<IndexedFile>) {
        let now = self.clock.both();
        let mut events = Changes::default();
        for f in files {
            events.add(self.store.adopt_read_later(f, now));
        }
        self.publish(events);
    }

    /// After the initial index: hook events, markers and status files, then the chains
    /// the files alone show; then notifications start.
    fn after_index(&mut self) {
        let now = self.clock.both();
        self.read_spool();
        let events = self.store.end_bulk(now);
        self.publish(events);
        self.ensure_cwd_watches();
        // (The rows as they are: a copy of all of them, sorted, was 2,000 rows cloned as
        // the window's roster was completed.)
        self.alerts.attention.baseline(self.store.rows());
        self.alerts.armed = true;
        self.update_attention();
        // Now `projects/` too (not while the index opened every file in it), and what
        // changed in it meanwhile: as the events queued during the index would have been.
        // This reads each file on from where the index stopped (they were adopted without
        // reading on: `Store::adopt_read_later`).
        self.ensure_coverage();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_background_readers_run_at_a_low_priority() {
        assert!(readers(IndexPriority::Normal).is_none(), "the caller's pool, as it is");
        // (The tests may themselves run niced: then the readers keep that lower priority.)
        let mine = mimesis_os::procs::this_threads_nice();
        let pool = readers(IndexPriority::Background).expect("a pool of readers");
        let nices = pool.broadcast(|_| mimesis_os::procs::this_threads_nice());
        assert!(!nices.is_empty());
        assert!(nices.iter().all(|&n| n == READERS_NICE.max(mine)), "the readers' nice values: {nices:?}");
        assert_eq!(mimesis_os::procs::this_threads_nice(), mine, "the caller keeps its priority");
    }
}
