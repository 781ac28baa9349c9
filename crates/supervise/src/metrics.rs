//! Metrics of every running supervisor, for `mimesis metrics` (SPEC P14, X1). Each
//! supervisor (the desktop app, each `mimesis run`) publishes a snapshot of its
//! [`Metrics`] as `<data dir>/metrics/<pid>-<start ticks>.json`, written atomically when
//! something changed (checked at least every [`HEARTBEAT`] while a process runs), again
//! after [`REFRESH`] at the latest, and withdrawn on a clean exit.
//! [`collect`] adds up the snapshots of the supervisors still running (same PID, start
//! time and boot as published) and sets aside those whose publisher is gone: a
//! SIGKILLed supervisor's last numbers are never shown as if it were alive.
//!
//! Beside its snapshot, each supervisor appends its supervision events to
//! `<pid>-<start ticks>.events.jsonl` (one [`SupervisionEvent`] per line), so a reader in
//! another process (`mimesis serve` for a window on another machine) follows them as the
//! face running the sessions sees them. That file outlives a clean exit by
//! [`EVENTS_KEPT`] (its last events are read after the snapshot is withdrawn), then the next
//! supervisor's start-up removes it.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::supervision::ledger::Owner;
use mimesis_core::supervision::view::{Metrics, Supervision};

/// The folder of the snapshots, under the data dir.
pub const DIR_NAME: &str = "metrics";

/// A supervisor with a process running re-publishes at least this often (its memory is
/// sampled, not announced).
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// A snapshot is written again after this long even when nothing changed (a file someone
/// removed comes back); sooner, an unchanged one is not written at all.
pub const REFRESH: Duration = Duration::from_secs(600);

/// How long the events of a supervisor that has gone are kept.
pub const EVENTS_KEPT: Duration = Duration::from_secs(600);

/// The suffix of the events files.
pub const EVENTS_SUFFIX: &str = ".events.jsonl";

/// The snapshots' folder for a data dir.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR_NAME)
}

/// One supervisor's published snapshot (the file's content).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub owner: Owner,
    pub updated_at: Timestamp,
    /// Supervised sessions (with or without a process) at that moment.
    pub sessions: usize,
    pub metrics: Metrics,
    /// Each supervised session and its supervision, so that `mimesis ls` (which watches
    /// nothing) shows it as the face running it does. (Absent from older snapshots.)
    #[serde(default)]
    pub supervised: Vec<Published>,
}

/// A supervised session as a supervisor published it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    pub session_id: SessionId,
    /// The Claude config dir the agent writes its transcript under.
    pub config_root: PathBuf,
    pub supervision: Supervision,
}

fn file_of(dir: &Path, owner: &Owner) -> PathBuf {
    dir.join(format!("{}-{}.json", owner.pid, owner.start_ticks))
}

/// The events file of `owner`.
pub fn events_file(dir: &Path, owner: &Owner) -> PathBuf {
    dir.join(format!("{}-{}{EVENTS_SUFFIX}", owner.pid, owner.start_ticks))
}

/// The snapshot file of the supervisor whose events file is `events`.
pub fn snapshot_of_events(events: &Path) -> Option<PathBuf> {
    let name = events.file_name()?.to_str()?.strip_suffix(EVENTS_SUFFIX)?;
    Some(events.with_file_name(format!("{name}.json")))
}

/// Appends `events` to `owner`'s events file, each on one line written whole (readers
/// in other processes may still see a line's first part and wait for its end).
pub fn append_events(dir: &Path, owner: &Owner, events: &[SupervisionEvent]) -> io::Result<()> {
    use std::io::Write;
    if events.is_empty() {
        return Ok(());
    }
    mimesis_os::private::own_dir(dir)?;
    let mut buf = Vec::new();
    for ev in events {
        serde_json::to_writer(&mut buf, ev)?;
        buf.push(b'\n');
    }
    mimesis_os::private::append(&events_file(dir, owner))?.write_all(&buf)
}

/// Writes `snapshot` for its owner; a reader never sees half a file.
pub fn publish(dir: &Path, snapshot: &Snapshot) -> io::Result<()> {
    mimesis_os::private::own_dir(dir)?;
    // (Written first to `<name>.json.tmp`, which readers skip.)
    mimesis_os::private::write_atomic(&file_of(dir, &snapshot.owner), &serde_json::to_vec(snapshot)?)
}

/// Removes `owner`'s snapshot (a clean exit).
pub fn withdraw(dir: &Path, owner: &Owner) -> io::Result<()> {
    match std::fs::remove_file(file_of(dir, owner)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A supervisor that published metrics.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Publisher {
    pub pid: u32,
    pub start_ticks: u64,
    pub updated_at: Timestamp,
    pub sessions: usize,
    pub path: PathBuf,
}

/// What [`collect`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collected {
    /// Supervisors still running, oldest snapshot first.
    pub live: Vec<Publisher>,
    /// Snapshots of supervisors that are gone, or that cannot be read.
    pub stale: Vec<PathBuf>,
    /// The live supervisors' metrics added up.
    pub metrics: Metrics,
    /// The sessions the live supervisors run.
    pub supervised: Vec<Published>,
}

/// Reads every snapshot in `dir`. With `clean`, the stale ones are deleted (`mimesis
/// metrics`); without, nothing is changed (`mimesis doctor`).
pub fn collect(dir: &Path, clean: bool) -> Collected {
    let mut out = Collected::default();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".json.tmp") {
            continue; // being written; its owner renames it in a moment
        }
        if name.ends_with(EVENTS_SUFFIX) {
            if clean && events_gone(&path) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if !name.ends_with(".json") {
            continue;
        }
        let snapshot = mimesis_os::files::read_bounded(&path, 16 << 20)
            .ok()
            .and_then(|b| mimesis_core::json::from_slice::<Snapshot>(&b).ok());
        match snapshot {
            Some(s) if file_of(dir, &s.owner) == path && mimesis_os::owner::alive(&s.owner) => {
                out.metrics.add(&s.metrics);
                out.supervised.extend(s.supervised);
                out.live.push(Publisher {
                    pid: s.owner.pid,
                    start_ticks: s.owner.start_ticks,
                    updated_at: s.updated_at,
                    sessions: s.sessions,
                    path,
                });
            }
            _ => {
                if clean && let Err(e) = std::fs::remove_file(&path) {
                    tracing::debug!(path = %path.display(), error = %e, "cannot remove a stale metrics snapshot");
                }
                out.stale.push(path);
            }
        }
    }
    out.live.sort_by_key(|p| p.updated_at);
    out
}

/// An events file whose supervisor withdrew its snapshot (or died) more than
/// [`EVENTS_KEPT`] ago.
fn events_gone(path: &Path) -> bool {
    let published = snapshot_of_events(path).is_some_and(|s| s.exists());
    let old = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > EVENTS_KEPT);
    !published && old
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(owner: Owner, session: &str, rss: u64, recoveries: u64) -> Snapshot {
        let mut metrics =
            Metrics { recoveries_total: recoveries, zombie_processes_cleaned_total: 1, ..Default::default() };
        metrics.rss_bytes.insert(session.into(), rss);
        Snapshot { owner, updated_at: Timestamp::from_millis(0), sessions: 1, metrics, supervised: Vec::new() }
    }

    #[test]
    fn live_publishers_add_up_dead_ones_are_set_aside_and_cleaned() {
        let d = tempfile::tempdir().unwrap();
        let me = mimesis_os::owner::me();
        // Another live process: our parent is a stand-in for "the app".
        let ppid = std::os::unix::process::parent_id();
        let parent = Owner {
            pid: ppid,
            start_ticks: mimesis_os::procs::start_ticks(ppid).unwrap(),
            boot_id: mimesis_os::procs::boot_id(),
        };
        let dead = Owner { pid: 999_999, start_ticks: 5, boot_id: mimesis_os::procs::boot_id() };
        let reused = Owner { start_ticks: me.start_ticks + 1, ..me.clone() };
        publish(d.path(), &snapshot(me.clone(), "a", 100, 1)).unwrap();
        publish(d.path(), &snapshot(parent, "b", 50, 2)).unwrap();
        publish(d.path(), &snapshot(dead, "c", 7, 5)).unwrap();
        publish(d.path(), &snapshot(reused, "d", 9, 9)).unwrap();
        std::fs::write(d.path().join("junk.json"), b"{").unwrap();

        let seen = collect(d.path(), false);
        assert_eq!(seen.live.len(), 2, "{seen:?}");
        assert_eq!(seen.stale.len(), 3, "the dead, the PID now another process, the unreadable");
        assert_eq!(seen.metrics.recoveries_total, 3);
        assert_eq!(seen.metrics.zombie_processes_cleaned_total, 2);
        assert_eq!(seen.metrics.rss_bytes.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 5, "looking changes nothing");

        let cleaned = collect(d.path(), true);
        assert_eq!(cleaned.metrics, seen.metrics);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2, "stale snapshots removed");
        withdraw(d.path(), &me).unwrap();
        withdraw(d.path(), &me).unwrap();
        assert_eq!(collect(d.path(), true).live.len(), 1);
    }
}
