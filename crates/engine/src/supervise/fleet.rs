//! The fleet-wide rules, as pure functions: which session to suspend when too many are
//! live (P7), what to do about disk usage (P10), which processes are orphans (P11), whether
//! a process recorded by an earlier run is still that process, and which shell snapshots
//! are stale (P9, P10). The supervisor gathers the facts (the process table, `statvfs`,
//! a folder listing) and carries out the answers.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::Timestamp;
use crate::ids::SessionId;

/// What the cap needs to know about one session.
#[derive(Clone, Debug, PartialEq)]
pub struct CapEntry {
    pub id: SessionId,
    /// Has (or is starting) a process.
    pub live: bool,
    /// Idle at its prompt, nothing pending: suspending it loses nothing.
    pub suspendable: bool,
    /// When the user last typed into it.
    pub last_used: Timestamp,
}

/// P7: the least recently used idle sessions to suspend so that at most `max` are live.
/// Busy sessions are never chosen; when too few are idle, the fleet stays over the cap
/// until one becomes idle (the supervisor asks again on every change).
pub fn over_cap(max: u32, sessions: &[CapEntry]) -> Vec<SessionId> {
    let live = sessions.iter().filter(|s| s.live).count();
    let excess = live.saturating_sub(max as usize);
    if excess == 0 {
        return Vec::new();
    }
    let mut idle: Vec<&CapEntry> = sessions.iter().filter(|s| s.live && s.suspendable).collect();
    idle.sort_by(|a, b| a.last_used.cmp(&b.last_used).then_with(|| a.id.cmp(&b.id)));
    idle.into_iter().take(excess).map(|s| s.id.clone()).collect()
}

/// What to do about disk usage (EC-023).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskAction {
    /// Over the warning threshold (once per crossing).
    Warn(u8),
    /// Over the cleanup threshold: delete shell snapshots older than 24 h.
    CleanupSnapshots,
    /// Full: every live session restarts (like the RSS flow), once per crossing.
    RestartAll,
}

/// Remembers which thresholds were crossed, so each is acted on once per crossing.
#[derive(Clone, Debug, Default)]
pub struct DiskWatch {
    warned: bool,
    full: bool,
}

impl DiskWatch {
    pub fn usage(&mut self, percent: u8, warn: u8, cleanup: u8) -> Vec<DiskAction> {
        let mut actions = Vec::new();
        if percent >= warn {
            if !self.warned {
                actions.push(DiskAction::Warn(percent));
            }
            self.warned = true;
        } else {
            self.warned = false;
        }
        if percent >= cleanup {
            actions.push(DiskAction::CleanupSnapshots);
        }
        if percent >= 100 {
            if !self.full {
                actions.push(DiskAction::RestartAll);
            }
            self.full = true;
        } else {
            self.full = false;
        }
        actions
    }
}

/// One row of the process table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcRow {
    pub pid: u32,
    pub ppid: u32,
    pub sid: u32,
    /// `R`, `S`, `Z`, …
    pub state: char,
    pub start_ticks: u64,
}

/// P11 at run time. Every agent Mimesis spawns leads its own session (`setsid`), so its
/// whole tree shares the session id = the agent's PID, unless a descendant called setsid
/// itself. `ours` are the session ids of every agent spawned by this process; `live` those
/// whose agent runs now. A process of one of our sessions whose agent is gone is an
/// orphan. Returns (orphans to terminate, zombies to reap: only those that are our own
/// children, adopted as subreaper).
pub fn orphans(rows: &[ProcRow], me: u32, ours: &HashSet<u32>, live: &HashSet<u32>) -> (Vec<u32>, Vec<u32>) {
    let mut kill = Vec::new();
    let mut reap = Vec::new();
    for r in rows {
        if !ours.contains(&r.sid) || r.pid == me {
            continue;
        }
        if r.state == 'Z' || r.state == 'X' {
            // A zombie agent is reaped by its own waiter; only adopted orphans are ours.
            if r.ppid == me && !ours.contains(&r.pid) {
                reap.push(r.pid);
            }
        } else if !live.contains(&r.sid) {
            kill.push(r.pid);
        }
    }
    (kill, reap)
}

/// What a process recorded by an earlier run of Mimesis is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub pid: u32,
    pub start_ticks: u64,
    pub cmdline: Vec<String>,
    pub boot_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Still the very process we started: kill it (and its session).
    Same,
    /// No process has that PID any more (its session's leftovers may remain).
    Gone,
    /// The PID now belongs to another process (another start time, command line or
    /// boot): never touched.
    Reused,
}

/// P11 at start-up: is the process now at `rec.pid` the one recorded? `now` is what the
/// process table says about that PID (start ticks and command line), `boot_id` this boot.
pub fn verify(rec: &Recorded, now: Option<(u64, &[String])>, boot_id: &str) -> Verdict {
    if rec.boot_id != boot_id {
        // Start ticks count from boot: after a reboot they prove nothing.
        return if now.is_some() { Verdict::Reused } else { Verdict::Gone };
    }
    match now {
        None => Verdict::Gone,
        Some((ticks, cmd)) if ticks == rec.start_ticks && cmd == rec.cmdline.as_slice() => Verdict::Same,
        Some(_) => Verdict::Reused,
    }
}

/// Members of a recorded agent's session that are left over from it: processes whose
/// session id is the recorded PID. When the leader is still the same process they are
/// surely its tree. When it is gone, Linux keeps a PID reserved while any process still
/// uses it as session id, so members can only be its leftovers; they must also have
/// started no earlier than the agent and in this boot.
pub fn leftovers(rec: &Recorded, verdict: Verdict, rows: &[ProcRow], boot_id: &str) -> Vec<u32> {
    match verdict {
        Verdict::Reused => Vec::new(),
        _ if rec.boot_id != boot_id => Vec::new(),
        Verdict::Same => {
            let mut v = vec![rec.pid];
            v.extend(rows.iter().filter(|r| r.sid == rec.pid && r.pid != rec.pid).map(|r| r.pid));
            v
        }
        Verdict::Gone => {
            if rows.iter().any(|r| r.pid == rec.pid) {
                return Vec::new();
            }
            rows.iter().filter(|r| r.sid == rec.pid && r.start_ticks >= rec.start_ticks).map(|r| r.pid).collect()
        }
    }
}

/// Claude Code's shell snapshot files: `shell-snapshots/snapshot-<shell>-<epoch ms>-<rand>.sh`.
pub fn snapshot_time(path: &Path) -> Option<Timestamp> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("snapshot-")?;
    rest.split('-')
        .find(|part| part.len() >= 12 && part.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|ms| ms.parse::<i64>().ok())
        .map(Timestamp::from_millis)
}

/// P9: the snapshots a killed process left behind: written during its lifetime. If another
/// agent started within that window, a snapshot may be its, so nothing is deleted.
pub fn stale_snapshots(
    files: &[PathBuf],
    lifetime: (Timestamp, Timestamp),
    other_agent_starts: &[Timestamp],
) -> Vec<PathBuf> {
    let (from, to) = lifetime;
    let from = Timestamp::from_millis(from.millis() - 2_000);
    if other_agent_starts.iter().any(|s| *s >= from && *s <= to) {
        return Vec::new();
    }
    files.iter().filter(|f| snapshot_time(f).is_some_and(|t| t >= from && t <= to)).cloned().collect()
}

/// EC-023: snapshots older than `max_age` (24 h).
pub fn old_snapshots(files: &[PathBuf], now: Timestamp, max_age: Duration) -> Vec<PathBuf> {
    files.iter().filter(|f| snapshot_time(f).is_some_and(|t| now.since(t) > max_age)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(id: &str, live: bool, suspendable: bool, used: i64) -> CapEntry {
        CapEntry { id: SessionId::parse(id).unwrap(), live, suspendable, last_used: Timestamp::from_millis(used) }
    }

    #[test]
    fn the_cap_suspends_the_least_recently_used_idle_session() {
        let s = [e("a", true, true, 30), e("b", true, true, 10), e("c", true, false, 5), e("d", true, false, 40)];
        assert_eq!(over_cap(3, &s), [SessionId::parse("b").unwrap()]);
        assert!(over_cap(4, &s).is_empty());
        assert_eq!(over_cap(2, &s).len(), 2);
        // Not live sessions do not count; busy ones are never chosen.
        let s = [e("a", true, false, 1), e("b", true, false, 2), e("c", true, false, 3), e("d", true, false, 4)];
        assert!(over_cap(3, &s).is_empty());
        let s = [e("a", false, false, 1), e("b", true, true, 2), e("c", true, true, 3), e("d", true, true, 4)];
        assert!(over_cap(3, &s).is_empty());
    }

    #[test]
    fn disk_thresholds_act_once_per_crossing() {
        let mut d = DiskWatch::default();
        assert!(d.usage(79, 80, 95).is_empty());
        assert_eq!(d.usage(80, 80, 95), [DiskAction::Warn(80)]);
        assert!(d.usage(85, 80, 95).is_empty());
        assert_eq!(d.usage(96, 80, 95), [DiskAction::CleanupSnapshots]);
        assert_eq!(d.usage(100, 80, 95), [DiskAction::CleanupSnapshots, DiskAction::RestartAll]);
        assert_eq!(d.usage(100, 80, 95), [DiskAction::CleanupSnapshots]);
        assert!(d.usage(50, 80, 95).is_empty());
        assert_eq!(d.usage(81, 80, 95), [DiskAction::Warn(81)], "warned again after going below");
    }

    fn row(pid: u32, ppid: u32, sid: u32, state: char) -> ProcRow {
        ProcRow { pid, ppid, sid, state, start_ticks: 100 }
    }

    #[test]
    fn orphans_are_members_of_our_dead_agents_sessions_only() {
        let me = 10;
        let ours: HashSet<u32> = [100, 200].into();
        let live: HashSet<u32> = [200].into();
        let rows = [
            row(101, 1, 100, 'S'),   // left by dead agent 100
            row(102, me, 100, 'Z'),  // adopted by us, now a zombie
            row(201, 200, 200, 'S'), // child of a live agent
            row(300, 1, 300, 'S'),   // not ours
            row(100, me, 100, 'Z'),  // the dead agent itself, reaped by its waiter
        ];
        let (kill, reap) = orphans(&rows, me, &ours, &live);
        assert_eq!(kill, [101]);
        assert_eq!(reap, [102]);
    }

    fn rec() -> Recorded {
        Recorded {
            pid: 500,
            start_ticks: 42,
            cmdline: vec!["claude".into(), "--resume".into(), "x".into()],
            boot_id: "b1".into(),
        }
    }

    #[test]
    fn a_recorded_pid_is_killed_only_while_it_is_the_same_process() {
        let r = rec();
        let cmd = r.cmdline.clone();
        assert_eq!(verify(&r, Some((42, &cmd)), "b1"), Verdict::Same);
        assert_eq!(verify(&r, None, "b1"), Verdict::Gone);
        assert_eq!(verify(&r, Some((43, &cmd)), "b1"), Verdict::Reused, "another start time");
        let other = vec!["claude".to_owned()];
        assert_eq!(verify(&r, Some((42, &other)), "b1"), Verdict::Reused, "another command line");
        assert_eq!(verify(&r, Some((42, &cmd)), "b2"), Verdict::Reused, "another boot");
    }

    #[test]
    fn leftovers_of_a_gone_leader_are_found_by_session_id() {
        let r = rec();
        let rows = [
            ProcRow { pid: 501, ppid: 1, sid: 500, state: 'S', start_ticks: 50 },
            ProcRow { pid: 502, ppid: 1, sid: 500, state: 'S', start_ticks: 10 },
            ProcRow { pid: 600, ppid: 1, sid: 600, state: 'S', start_ticks: 60 },
        ];
        assert_eq!(leftovers(&r, Verdict::Gone, &rows, "b1"), [501]);
        assert!(leftovers(&r, Verdict::Reused, &rows, "b1").is_empty());
        assert!(leftovers(&r, Verdict::Gone, &rows, "b2").is_empty());
        let mut with_leader = rows.to_vec();
        with_leader.push(ProcRow { pid: 500, ppid: 1, sid: 500, state: 'S', start_ticks: 99 });
        assert!(leftovers(&r, Verdict::Gone, &with_leader, "b1").is_empty(), "the PID was taken again");
        assert_eq!(leftovers(&r, Verdict::Same, &with_leader, "b1"), [500, 501, 502]);
    }

    #[test]
    fn stale_snapshots_are_those_of_the_dead_process_alone() {
        let f = |ms: i64| PathBuf::from(format!("/c/shell-snapshots/snapshot-bash-{ms}-abc123.sh"));
        let files = [f(1_700_000_000_000), f(1_700_000_100_000), f(1_700_000_900_000)];
        let life = (Timestamp::from_millis(1_700_000_050_000), Timestamp::from_millis(1_700_000_200_000));
        assert_eq!(stale_snapshots(&files, life, &[]), [f(1_700_000_100_000)]);
        assert!(stale_snapshots(&files, life, &[Timestamp::from_millis(1_700_000_060_000)]).is_empty());
        assert_eq!(
            snapshot_time(Path::new("/x/snapshot-zsh-1700000000000-q.sh")),
            Some(Timestamp::from_millis(1_700_000_000_000))
        );
        assert_eq!(snapshot_time(Path::new("/x/notes.sh")), None);
        let now = Timestamp::from_millis(1_700_000_900_000 + 86_400_000);
        assert_eq!(
            old_snapshots(&files, now, Duration::from_secs(86_400)),
            [f(1_700_000_000_000), f(1_700_000_100_000)]
        );
    }
}
