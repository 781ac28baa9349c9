//! The supervisors of this data dir that run in other processes (each `mimesis run`),
//! followed from what they publish under `<data dir>/metrics/`: the supervision of their
//! sessions (for the roster's `supervision`) and their supervision events, in order. Used
//! by `mimesis serve`, so a window on another machine sees a session started there through
//! `ssh -t … mimesis run` as supervised, with its events, like one of its own; and by
//! `mimesis watch`, whose rows of a `mimesis run`'s sessions carry their `supervision`.
//!
//! Events are read from each supervisor's events file as it grows (never the history from
//! before the follower started). An event is held back until its supervisor's snapshot is
//! at least as new as the event (the row's state first, then the event that describes it,
//! as docs/ipc.md promises), or for [`HOLD_MAX`] polls at most, or until the supervisor
//! has gone (its last events come after its snapshot is withdrawn).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimesis_core::clock::Timestamp;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::supervision::view::Supervision;
use mimesis_supervise::metrics;
use tokio::sync::mpsc;

/// Polls an event waits for its supervisor's snapshot at most.
pub const HOLD_MAX: u32 = 4;

/// The most read from one events file per poll (the rest on the next).
const READ_MAX: u64 = 1 << 20;

/// One events file, read as it grows.
struct EventsTail {
    offset: u64,
    /// The start of a line whose end has not been written yet.
    partial: Vec<u8>,
}

/// An event read, waiting for its supervisor's snapshot.
struct Held {
    event: SupervisionEvent,
    /// The events file it came from (names its supervisor).
    file: PathBuf,
    polls: u32,
}

/// What one poll found.
#[derive(Default, Debug)]
pub struct Found {
    /// Sessions whose supervision is new or changed: set it on their rows.
    pub changed: Vec<(TranscriptLocation, Supervision)>,
    /// Sessions no longer published (their supervisor ended): plain rows again.
    pub gone: Vec<TranscriptLocation>,
    /// Events to send, after the row changes above.
    pub events: Vec<SupervisionEvent>,
}

/// The other supervisors of one data dir, as far as they have been read.
pub struct Supervisors {
    dir: PathBuf,
    roots: Vec<PathBuf>,
    applied: HashMap<TranscriptLocation, Supervision>,
    tails: HashMap<PathBuf, EventsTail>,
    held: Vec<Held>,
}

impl Supervisors {
    /// Starts following `data_dir`'s supervisors of sessions under `roots`; events written
    /// before now are not read.
    pub fn new(roots: Vec<PathBuf>, data_dir: &Path) -> Supervisors {
        let dir = metrics::dir(data_dir);
        let tails = events_files(&dir)
            .into_iter()
            .map(|f| {
                let offset = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
                (f, EventsTail { offset, partial: Vec::new() })
            })
            .collect();
        Supervisors { dir, roots, applied: HashMap::new(), tails, held: Vec::new() }
    }

    /// Reads what changed since the last poll.
    pub fn poll(&mut self) -> Found {
        let mut found = Found::default();
        let collected = metrics::collect(&self.dir, false);
        // When each live supervisor last published, by its snapshot's file.
        let published: HashMap<PathBuf, Timestamp> =
            collected.live.iter().map(|p| (p.path.clone(), p.updated_at)).collect();
        let now: HashMap<TranscriptLocation, Supervision> =
            crate::once::under_roots(&self.roots, collected.supervised).into_iter().collect();
        for (loc, sup) in &now {
            if self.applied.get(loc) != Some(sup) {
                found.changed.push((loc.clone(), sup.clone()));
            }
        }
        found.gone = self.applied.keys().filter(|l| !now.contains_key(l)).cloned().collect();
        self.applied = now;

        for file in events_files(&self.dir) {
            let tail = self.tails.entry(file.clone()).or_insert(EventsTail { offset: 0, partial: Vec::new() });
            for line in read_lines(&file, tail) {
                // A line that is not an event (another version's, a torn write) is skipped.
                if let Ok(event) = mimesis_core::json::from_slice::<SupervisionEvent>(&line) {
                    self.held.push(Held { event, file: file.clone(), polls: 0 });
                }
            }
        }
        self.tails.retain(|f, _| f.exists());

        let held = std::mem::take(&mut self.held);
        for mut h in held {
            let snapshot = metrics::snapshot_of_events(&h.file);
            let ready = match snapshot.and_then(|s| published.get(&s).copied()) {
                Some(updated) => updated >= h.event.at || h.polls >= HOLD_MAX,
                None => true, // its supervisor has gone: nothing newer will come
            };
            if ready {
                found.events.push(h.event);
            } else {
                h.polls += 1;
                self.held.push(h);
            }
        }
        found
    }
}

fn events_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(metrics::EVENTS_SUFFIX)))
        .collect();
    files.sort();
    files
}

/// The whole lines added to `file` since `tail`'s offset (a line still being written
/// waits for its end; one longer than [`READ_MAX`] is dropped).
fn read_lines(file: &Path, tail: &mut EventsTail) -> Vec<Vec<u8>> {
    let Ok(mut f) = std::fs::File::open(file) else { return Vec::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len < tail.offset {
        // Replaced: read it from its start.
        tail.offset = 0;
        tail.partial.clear();
    }
    if len == tail.offset || f.seek(SeekFrom::Start(tail.offset)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let Ok(n) = f.take(READ_MAX).read_to_end(&mut buf) else { return Vec::new() };
    tail.offset += n as u64;
    tail.partial.extend_from_slice(&buf);
    let mut lines = Vec::new();
    while let Some(end) = tail.partial.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = tail.partial.drain(..=end).collect();
        lines.push(line[..line.len() - 1].to_vec());
    }
    if tail.partial.len() as u64 > READ_MAX {
        tail.partial.clear();
    }
    lines
}

/// How often the supervisors of this machine are looked at (their snapshots settle within
/// a quarter second of a change).
const SUPERVISORS_POLL: Duration = Duration::from_millis(300);

/// Follows the other supervisors of `data_dir` ([`crate::supervisors`]): sets their
/// sessions' supervision on the engine's rows, and sends their events once those row
/// changes are out (a round trip through the engine's queue), to `out` when there is one
/// (`mimesis serve`; `mimesis watch` wants the rows only).
pub async fn follow(
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    engine: mimesis_watch::Engine,
    out: Option<mpsc::Sender<Vec<SupervisionEvent>>>,
) {
    let mut followed = crate::supervisors::Supervisors::new(roots, &data_dir);
    loop {
        let Ok((back, found)) = tokio::task::spawn_blocking(move || {
            let found = followed.poll();
            (followed, found)
        })
        .await
        else {
            return;
        };
        followed = back;
        let changed = !found.changed.is_empty() || !found.gone.is_empty();
        for (location, supervision) in found.changed {
            engine.set_supervision(location, Some(supervision));
        }
        for location in found.gone {
            engine.set_supervision(location, None);
        }
        if changed || !found.events.is_empty() {
            let _ = engine.attention().await;
        }
        if let Some(out) = &out
            && !found.events.is_empty()
            && out.send(found.events).await.is_err()
        {
            return;
        }
        tokio::time::sleep(SUPERVISORS_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::ids::SessionId;
    use mimesis_core::supervision::EventKind;
    use mimesis_core::supervision::ledger::Owner;
    use mimesis_supervise::metrics::{Published, Snapshot};

    fn event(id: &str, at: i64) -> SupervisionEvent {
        SupervisionEvent {
            kind: EventKind::SessionSuspended {
                message: "Suspended after 10 minutes idle.".into(),
                reason: "idle".into(),
            },
            session_id: SessionId::parse(id).unwrap(),
            at: Timestamp::from_millis(at),
        }
    }

    fn publish(data: &Path, owner: &Owner, root: &Path, id: &str, updated: i64) {
        let mut supervision = Supervision::starting("claude", "/work/p", Timestamp::from_millis(0));
        supervision.recovery_count = updated as u32;
        let snap = Snapshot {
            owner: owner.clone(),
            updated_at: Timestamp::from_millis(updated),
            sessions: 1,
            metrics: Default::default(),
            supervised: vec![Published {
                session_id: SessionId::parse(id).unwrap(),
                config_root: root.to_owned(),
                supervision,
            }],
        };
        metrics::publish(&metrics::dir(data), &snap).unwrap();
    }

    #[test]
    fn follows_supervision_and_events_in_order() {
        let d = tempfile::tempdir().unwrap();
        let (data, root) = (d.path().join("data"), d.path().join("claude"));
        let me = mimesis_os::owner::me();
        let dir = metrics::dir(&data);
        // History from before the follower started is not read.
        metrics::append_events(&dir, &me, &[event("old", 1)]).unwrap();
        let mut f = Supervisors::new(vec![root.clone()], &data);
        assert!(f.poll().events.is_empty());

        publish(&data, &me, &root, "s1", 10);
        let found = f.poll();
        assert_eq!(found.changed.len(), 1);
        assert_eq!(found.changed[0].0.session_id.as_str(), "s1");
        assert!(f.poll().changed.is_empty(), "only what changed");

        // An event newer than the snapshot waits for the next one.
        metrics::append_events(&dir, &me, &[event("s1", 20)]).unwrap();
        assert!(f.poll().events.is_empty(), "held until the row says it");
        publish(&data, &me, &root, "s1", 25);
        let found = f.poll();
        assert_eq!(found.changed.len(), 1, "the row first…");
        assert_eq!(found.events.len(), 1, "…then the event");

        // A torn line waits for its end; junk is skipped.
        let file = metrics::events_file(&dir, &me);
        let whole = serde_json::to_vec(&event("s1", 5)).unwrap();
        let mut raw = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
        std::io::Write::write_all(&mut raw, b"not json\n").unwrap();
        std::io::Write::write_all(&mut raw, &whole[..10]).unwrap();
        assert!(f.poll().events.is_empty());
        std::io::Write::write_all(&mut raw, &whole[10..]).unwrap();
        std::io::Write::write_all(&mut raw, b"\n").unwrap();
        assert_eq!(f.poll().events.len(), 1);

        // The supervisor withdraws: its rows are plain again, its last events still come.
        metrics::append_events(&dir, &me, &[event("s1", 99)]).unwrap();
        metrics::withdraw(&dir, &me).unwrap();
        let found = f.poll();
        assert_eq!(found.gone.len(), 1);
        assert_eq!(found.events.len(), 1);
    }

    #[test]
    fn an_event_whose_snapshot_never_comes_is_sent_after_a_few_polls() {
        let d = tempfile::tempdir().unwrap();
        let (data, root) = (d.path().join("data"), d.path().join("claude"));
        let me = mimesis_os::owner::me();
        let mut f = Supervisors::new(vec![root.clone()], &data);
        publish(&data, &me, &root, "s1", 10);
        metrics::append_events(&metrics::dir(&data), &me, &[event("s1", 50)]).unwrap();
        let sent: usize = (0..=HOLD_MAX).map(|_| f.poll().events.len()).sum();
        assert_eq!(sent, 1);
    }
}
