//! The roster once, without watching (`mimesis ls`, `mimesis show`): the same store and
//! readers as the engine, run one time to the end.

use std::path::{Path, PathBuf};

use mimesis_core::chain::Link;
use mimesis_core::clock::{Mono, Now, Timestamp};
use mimesis_core::layout::{self as roots, TranscriptLocation};
use mimesis_core::session::TrackedSession;
use mimesis_core::status::Timeouts;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::timeline::ChainSegment;

use super::command::chain_segments;
use super::cwd;
use crate::store::Store;
use crate::{background, registry, scan, spool};

/// The roster once, without watching: indexes every root, reads the registry, the
/// recorded hook events (when `data_dir` is given), the chain links the fleet database
/// kept and the markers and status files of each cwd, and derives each session's status
/// at `now`. What `mimesis ls` prints. Changes nothing on disk.
pub fn roster_once(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Timestamp,
    data_dir: Option<&Path>,
    links: Vec<Link>,
) -> Vec<TrackedSession> {
    let mut rows = Vec::new();
    roster_once_each(roots, timeouts, now, data_dir, links, Vec::new(), |row| rows.push(row));
    rows
}

/// [`roster_once`], with the sessions that running supervisors (the app, `mimesis run`)
/// published as theirs (each gets its `supervision` and `source: pty`, as in the live
/// roster of the face that runs it), each row handed to `f` as it is derived (most
/// recently active first): memory holds the sessions' facts, never all their rows at once.
pub fn roster_once_each(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Timestamp,
    data_dir: Option<&Path>,
    links: Vec<Link>,
    supervised: Vec<(TranscriptLocation, Supervision)>,
    f: impl FnMut(TrackedSession),
) {
    let now = one_time(now);
    let mut store = store_once(roots, timeouts, now, data_dir, links, |store| {
        scan::index_each(roots, |f| {
            store.adopt(f, now);
        })
    });
    for (location, supervision) in supervised {
        store.set_supervision(location, Some(supervision), now);
    }
    store.for_each_row(now, f);
}

/// The time of a one-time read: its wall clock, at which every row is derived. It sets no
/// deadline that anything waits for (nothing ticks it), so its monotonic clock stands at
/// its origin.
fn one_time(wall: Timestamp) -> Now {
    Now { wall, mono: Mono::default() }
}

fn store_once(
    roots: &[PathBuf],
    timeouts: Timeouts,
    now: Now,
    data_dir: Option<&Path>,
    links: Vec<Link>,
    index: impl FnOnce(&mut Store),
) -> Store {
    let mut store = Store::one_time(timeouts);
    store.restore_links(links);
    index(&mut store);
    for root in roots {
        store.set_registry_snapshot(root, registry::read(&roots::sessions_dir(root), &[]), now);
        store.set_background(root, background::read_once(root), now);
    }
    if let Some(d) = data_dir {
        for ev in spool::read_all(d) {
            store.hook_event(ev, now);
        }
    }
    cwd::read_all_once(&mut store, now);
    store.end_bulk(now);
    store
}

/// The chain a session belongs to, up to it, oldest first: what `mimesis show` reads.
/// Only the session's own project folder is indexed (a chain never changes cwd). `links`:
/// the chain links the fleet database kept.
pub fn chain_of(
    roots: &[PathBuf],
    data_dir: Option<&Path>,
    links: Vec<Link>,
    path: &Path,
    now: Timestamp,
) -> Vec<ChainSegment> {
    let Some(loc) = roots.iter().find_map(|r| TranscriptLocation::of(r, path)) else { return Vec::new() };
    let mut found = Vec::new();
    if let Some(dir) = path.parent() {
        scan::discover_project(&loc.root, dir, &mut found);
    }
    let now = one_time(now);
    let store = store_once(roots, Timeouts::default(), now, data_dir, links, |store| {
        for f in scan::index_locations(found) {
            store.adopt(f, now);
        }
    });
    chain_segments(&store, &loc.session_id)
}
