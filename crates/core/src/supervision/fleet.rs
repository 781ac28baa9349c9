//! The fleet-wide rules, as pure functions: which session to suspend when too many are
//! live (P7), what to do about disk usage (P10), which processes are orphans (P11), whether
//! a process recorded by an earlier run is still that process, and which shell snapshots
//! are stale (P9, P10). The supervisor gathers the facts (the process table, `statvfs`,
//! a folder listing) and carries out the answers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::{Mono, Timestamp};
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
    pub last_used: Mono,
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

/// The environment variable every agent is started with: `<owner pid>-<owner start ticks>`
/// of the Mimesis process that started it. Descendants inherit it, so a process that carries
/// it was started (directly or not) by that Mimesis: the proof required before a process
/// that is not a recorded agent itself is ever killed (P11).
pub const OWNER_ENV: &str = "MIMESIS_OWNER";

/// The value of [`OWNER_ENV`] for an owner.
pub fn owner_mark(pid: u32, start_ticks: u64) -> String {
    format!("{pid}-{start_ticks}")
}

/// The owner (PID, start ticks) an [`OWNER_ENV`] mark names.
pub fn parse_owner_mark(mark: &[u8]) -> Option<(u32, u64)> {
    let (pid, ticks) = std::str::from_utf8(mark).ok()?.split_once('-')?;
    Some((pid.parse().ok()?, ticks.parse().ok()?))
}

/// The environment variable every agent is started with besides [`OWNER_ENV`]: the data
/// dir of the Mimesis that started it. Together they say whose a process is wherever it
/// went (a `setsid` child leaves its agent's session and process group): a Mimesis ends
/// what carries its own mark when it exits, and what carries the mark of a gone owner of
/// its data dir when it starts (P11, P12) — never what another data dir's Mimesis started.
pub const OWNER_DATA_ENV: &str = "MIMESIS_OWNER_DATA";

/// Every owner mark: what a process we start carries only when we give it (a supervised
/// agent), never what one inherits from Mimesis's own environment (Claude Code's verbs, the
/// window's terminals).
pub const OWNER_MARKS: [&str; 2] = [OWNER_ENV, OWNER_DATA_ENV];

/// Is this command line one of Claude Code's background service (2.1.332:
/// `claude daemon run …`, its PTY hosts `claude bg-pty-host …` and spare sessions
/// `claude bg-spare …`; docs/claude-code-observed.md)? Such a process is Claude Code's own,
/// even when it carries our marks (an agent of ours ran `claude --bg`, which started the
/// service): Mimesis acts on it only through Claude Code's verbs and never ends it, nor what
/// runs under it. The verb is the first word after the program (and after the script, when
/// an interpreter runs one).
pub fn is_claude_service(argv: &[String]) -> bool {
    let script = |w: &&str| [".js", ".mjs", ".cjs"].iter().any(|e| w.ends_with(e));
    // A process that set its title has it as one string: its words are the same.
    let mut words = argv.iter().flat_map(|a| a.split(' ')).filter(|w| !w.is_empty()).skip(1).skip_while(script);
    match (words.next(), words.next()) {
        (Some("daemon"), Some("run")) => true,
        (Some(w), _) => matches!(w, "bg-pty-host" | "--bg-pty-host" | "bg-spare" | "--bg-spare"),
        _ => false,
    }
}

/// A process that carries the owner marks of one data dir ([`OWNER_ENV`] and
/// [`OWNER_DATA_ENV`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedRow {
    pub pid: u32,
    pub start_ticks: u64,
    /// `R`, `S`, `Z`, …
    pub state: char,
    /// The owner its mark names: (PID, start ticks).
    pub owner: (u32, u64),
    /// It, or a process it runs under, is Claude Code's background service
    /// ([`is_claude_service`]): never ended by Mimesis, whatever marks it carries.
    pub claude_service: bool,
}

/// P12 at exit, P11 at start: which of the `marked` processes (of one data dir) to end —
/// those whose owner `over` says is over (this very process as it exits; one that is gone,
/// at a start). Never one in `spare` (this process and its ancestors: a Mimesis started
/// from inside a supervised session carries its starter's mark), never a zombie, and never
/// a process that started before the owner its mark names (it cannot have inherited that
/// mark: it was copied), nor Claude Code's background service or what runs under it (an
/// agent of ours that ran `claude --bg` started the service with our marks; it is Claude
/// Code's, acted on only through its own verbs).
pub fn strays(marked: &[MarkedRow], spare: &[u32], mut over: impl FnMut((u32, u64)) -> bool) -> Vec<u32> {
    marked
        .iter()
        .filter(|m| !spare.contains(&m.pid) && m.state != 'Z' && m.state != 'X' && !m.claude_service)
        .filter(|m| m.start_ticks >= m.owner.1 && m.pid != m.owner.0)
        .filter(|m| over(m.owner))
        .map(|m| m.pid)
        .collect()
}

/// What one orphan scan decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Processes left by our dead agents: terminate.
    pub kill: Vec<u32>,
    /// Zombie children of ours that no one else will reap.
    pub reap: Vec<u32>,
}

/// What the run-time scan must know about the process it runs in.
pub struct ScanFacts<'a> {
    pub rows: &'a [ProcRow],
    /// This process.
    pub me: u32,
    /// Agents running now (their PIDs = their session ids): never touched.
    pub live: &'a HashSet<u32>,
    /// Agent PIDs whose exit an actor waits for: their zombies are the actors' to reap
    /// (with the exit code).
    pub waited: &'a HashSet<u32>,
    /// This process is a child subreaper: it adopts orphans of anyone it started,
    /// including helpers of its own (a browser opener), whose zombies it must reap.
    pub adopting: bool,
}

/// P11 at run time. Every agent Mimesis spawns leads its own session (`setsid`), so its
/// whole tree shares the session id = the agent's PID, unless a descendant called setsid
/// itself. A process of one of our sessions whose agent is gone is an orphan.
///
/// A PID (and so a session id) is free for reuse once no process uses it any more: a
/// session id is forgotten as soon as a scan finds no process in it, and one whose leader
/// now started at another time is someone else's. Even then, a process is only killed if
/// it started no earlier than our agent and carries our [`OWNER_ENV`] mark (`marked`).
#[derive(Clone, Debug, Default)]
pub struct OrphanWatch {
    /// Session id (= the agent's PID) → the agent's start ticks.
    ours: HashMap<u32, u64>,
    /// Zombie children (PID, start ticks) of no agent seen by the last scan.
    lingering: HashSet<(u32, u64)>,
}

impl OrphanWatch {
    /// An agent was started.
    pub fn started(&mut self, pid: u32, start_ticks: u64) {
        self.ours.insert(pid, start_ticks);
    }

    /// Nothing to look for.
    pub fn is_idle(&self, adopting: bool) -> bool {
        self.ours.is_empty() && !adopting
    }

    /// Whether any agent of ours (or what it left) is watched. When none is, a scan only
    /// looks at this process's own children (adopted zombies): [`OrphanWatch::scan`] decides
    /// the same from them alone as from the whole process table.
    pub fn watches_agents(&self) -> bool {
        !self.ours.is_empty()
    }

    /// The session ids still watched.
    pub fn sessions(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.ours.keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub fn scan(&mut self, f: &ScanFacts<'_>, marked: impl Fn(u32) -> bool) -> Scan {
        let mut out = Scan::default();
        // A session whose leader is a process that started at another time than our
        // agent: the PID was freed and taken again. Not ours any more.
        self.ours.retain(|&sid, &mut t0| match f.rows.iter().find(|r| r.pid == sid) {
            Some(leader) if leader.start_ticks != t0 => {
                tracing::debug!(sid, "a recorded agent's PID belongs to another process now");
                false
            }
            _ => true,
        });
        let mut in_use: HashSet<u32> = HashSet::new();
        let mut lingering = HashSet::new();
        for r in f.rows {
            if r.pid == f.me {
                continue;
            }
            let zombie = r.state == 'Z' || r.state == 'X';
            let agent = self.ours.get(&r.sid).copied();
            if agent.is_some() {
                in_use.insert(r.sid);
            }
            if zombie {
                if r.ppid != f.me || f.waited.contains(&r.pid) || self.ours.contains_key(&r.pid) {
                    continue; // not ours to reap, or an agent whose waiter reaps it
                }
                if agent.is_some() {
                    out.reap.push(r.pid); // adopted from one of our agents' sessions
                } else if f.adopting {
                    // Adopted from anywhere: reaped once it lingered a whole scan interval,
                    // so a waiter of our own (a `Command::output`) always gets there first.
                    let key = (r.pid, r.start_ticks);
                    if self.lingering.contains(&key) {
                        out.reap.push(r.pid);
                    } else {
                        lingering.insert(key);
                    }
                }
                continue;
            }
            let Some(t0) = agent else { continue };
            if f.live.contains(&r.sid) || f.waited.contains(&r.sid) || r.start_ticks < t0 {
                continue; // a running agent's tree, or older than our agent: not from it
            }
            // Even our own agent (same PID, same start time) must show the mark: nothing
            // is killed on the process table's word alone.
            if marked(r.pid) {
                out.kill.push(r.pid);
            }
        }
        self.lingering = lingering;
        // No process uses the session id any more: its PID may be reused from now on.
        self.ours.retain(|sid, _| in_use.contains(sid) || f.live.contains(sid) || f.waited.contains(sid));
        out
    }
}

/// What a process recorded by an earlier run of Mimesis is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub pid: u32,
    pub start_ticks: u64,
    pub boot_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Still the very process we started: kill it (and its session).
    Same,
    /// No process has that PID any more (its session's leftovers may remain).
    Gone,
    /// The PID now belongs to another process (another start time or boot, or no owner
    /// mark): never touched.
    Reused,
}

/// P11 at start-up (R3): is the process now at `rec.pid` the one recorded? `now` is what
/// the process table says about that PID: its start ticks, and whether its environment
/// carries the dead owner's [`OWNER_ENV`] mark; `boot_id` is this boot. The command line
/// is not compared: an agent started through a `#!` script shows its interpreter there,
/// and a binary may rewrite its own.
pub fn verify(rec: &Recorded, now: Option<(u64, bool)>, boot_id: &str) -> Verdict {
    if rec.boot_id != boot_id {
        // Start ticks count from boot: after a reboot they prove nothing.
        return if now.is_some() { Verdict::Reused } else { Verdict::Gone };
    }
    match now {
        None => Verdict::Gone,
        Some((ticks, true)) if ticks == rec.start_ticks => Verdict::Same,
        Some(_) => Verdict::Reused,
    }
}

/// Members of a recorded agent's session that are left over from it: processes whose
/// session id is the recorded PID, that started no earlier than the agent, in this boot,
/// and carry the owner's [`OWNER_ENV`] mark (`marked`). When the leader is still the same
/// process (and carries the mark), it is killed too. When it is gone, Linux keeps a PID reserved while any
/// process still uses it as session id, so the members are its leftovers — unless the
/// session emptied, the PID was reused and the new leader died too, which the mark tells.
pub fn leftovers(
    rec: &Recorded,
    verdict: Verdict,
    rows: &[ProcRow],
    boot_id: &str,
    marked: impl Fn(u32) -> bool,
) -> Vec<u32> {
    if verdict == Verdict::Reused || rec.boot_id != boot_id {
        return Vec::new();
    }
    let members = rows
        .iter()
        .filter(|r| r.sid == rec.pid && r.pid != rec.pid && r.start_ticks >= rec.start_ticks)
        .filter(|r| r.state != 'Z' && r.state != 'X')
        .map(|r| r.pid);
    match verdict {
        Verdict::Same => std::iter::once(rec.pid).chain(members).filter(|&p| marked(p)).collect(),
        _ => {
            if rows.iter().any(|r| r.pid == rec.pid) {
                return Vec::new(); // the PID was taken again
            }
            members.filter(|&p| marked(p)).collect()
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

    #[test]
    fn claude_codes_service_is_known_by_its_command_line() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        for yes in [
            "claude daemon run --origin transient --spawned-by {}",
            "/usr/bin/node /opt/claude/cli.js daemon run --origin transient",
            "claude bg-pty-host --bg-pty-host /tmp/s/spare/ab.pty.sock 200 50 -- claude",
            "claude bg-spare --bg-spare /tmp/s/spare/ab.claim.sock",
        ] {
            assert!(is_claude_service(&argv(yes)), "{yes}");
            assert!(is_claude_service(&[yes.to_owned()]), "a title: {yes}");
        }
        for no in [
            "claude --session-id 3f1c2d4e say hello",
            "claude daemon stop --any",
            "claude --bg daemon run",
            "bash -c echo daemon run",
            "sleep 300",
            "claude",
        ] {
            assert!(!is_claude_service(&argv(no)), "{no}");
        }
    }

    fn e(id: &str, live: bool, suspendable: bool, used: i64) -> CapEntry {
        CapEntry { id: SessionId::parse(id).unwrap(), live, suspendable, last_used: Mono::from_millis(used as u64) }
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

    fn at(r: ProcRow, start_ticks: u64) -> ProcRow {
        ProcRow { start_ticks, ..r }
    }

    fn scan(w: &mut OrphanWatch, rows: &[ProcRow], live: &[u32], adopting: bool, marked: &[u32]) -> Scan {
        let (live, waited): (HashSet<u32>, HashSet<u32>) =
            (live.iter().copied().collect(), live.iter().copied().collect());
        let f = ScanFacts { rows, me: 10, live: &live, waited: &waited, adopting };
        w.scan(&f, |p| marked.contains(&p))
    }

    #[test]
    fn orphans_are_marked_members_of_our_dead_agents_sessions_only() {
        let me = 10;
        let mut w = OrphanWatch::default();
        w.started(100, 100);
        w.started(200, 100);
        let rows = [
            row(101, 1, 100, 'S'),   // left by dead agent 100, marked
            row(103, 1, 100, 'S'),   // in that session, but without our mark
            row(102, me, 100, 'Z'),  // adopted by us, now a zombie
            row(201, 200, 200, 'S'), // child of a live agent
            row(300, 1, 300, 'S'),   // not ours
            row(100, me, 100, 'Z'),  // the dead agent itself, reaped by its waiter
        ];
        let s = scan(&mut w, &rows, &[200], false, &[101, 201, 300]);
        assert_eq!(s.kill, [101]);
        assert_eq!(s.reap, [102]);
    }

    #[test]
    fn a_reused_session_id_is_never_touched() {
        let me = 10;
        let mut w = OrphanWatch::default();
        w.started(500, 1000);
        // Agent 500 died with a leftover; the leftover is killed.
        let rows = [at(row(501, 1, 500, 'S'), 1001)];
        assert_eq!(scan(&mut w, &rows, &[], false, &[501]).kill, [501]);
        // It is gone: no process uses session 500 any more, so its PID is free…
        assert!(scan(&mut w, &[], &[], false, &[]).kill.is_empty());
        assert!(w.sessions().is_empty(), "the session id is forgotten");
        // …and an unrelated session leader takes PID 500: never killed, even marked.
        let rows = [at(row(500, 1, 500, 'S'), 5000), at(row(502, 500, 500, 'S'), 5001)];
        assert!(scan(&mut w, &rows, &[], false, &[500, 502]).kill.is_empty());

        // Reused between two scans (our session emptied and the PID was taken at once):
        // the leader's start time tells.
        let mut w = OrphanWatch::default();
        w.started(600, 1000);
        let rows = [at(row(600, 1, 600, 'S'), 7000), at(row(601, 600, 600, 'S'), 7001)];
        assert!(scan(&mut w, &rows, &[], false, &[600, 601]).kill.is_empty());
        assert!(w.sessions().is_empty());

        // A leaderless session whose members started before our agent is not its tree.
        let mut w = OrphanWatch::default();
        w.started(700, 1000);
        let rows = [at(row(701, 1, 700, 'S'), 999)];
        assert!(scan(&mut w, &rows, &[], false, &[701]).kill.is_empty());
        // Our own agent, still running but no longer supervised (same start time): killed,
        // but only with the mark.
        let rows = [at(row(700, me, 700, 'S'), 1000)];
        assert!(scan(&mut w, &rows, &[], false, &[]).kill.is_empty());
        assert_eq!(scan(&mut w, &rows, &[], false, &[700]).kill, [700]);
    }

    #[test]
    fn a_subreaper_reaps_any_lingering_zombie_child_but_never_an_agent() {
        let me = 10;
        let mut w = OrphanWatch::default();
        w.started(100, 100);
        // 400: an adopted orphan of a helper (xdg-open's child); 401: a child someone in
        // this process may be about to wait for; 100: a running agent's exit.
        let rows = [row(400, me, 400, 'Z'), row(100, me, 100, 'Z')];
        let live = [100];
        assert!(scan(&mut w, &rows, &live, true, &[]).reap.is_empty(), "not at first sight");
        let rows2 = [row(400, me, 400, 'Z'), row(401, me, 401, 'Z'), row(100, me, 100, 'Z')];
        assert_eq!(scan(&mut w, &rows2, &live, true, &[]).reap, [400], "a whole interval later");
        // A PID reused by a new zombie is a new zombie.
        let rows3 = [at(row(400, me, 400, 'Z'), 900)];
        assert!(scan(&mut w, &rows3, &[], true, &[]).reap.is_empty());
        // Not a subreaper: only what our agents' sessions left.
        let mut w = OrphanWatch::default();
        scan(&mut w, &rows, &[], false, &[]);
        assert!(scan(&mut w, &rows, &[], false, &[]).reap.is_empty());
    }

    #[test]
    fn with_no_agent_watched_our_children_alone_decide_what_the_whole_table_does() {
        let me = 10;
        // Zombies and live processes, ours and others', over two scans (a zombie is reaped
        // once it lingered a whole interval); 700 and 701 carry our mark, of no agent.
        let first = [
            row(400, me, 400, 'Z'),
            row(401, me, 400, 'S'),
            row(500, 1, 500, 'Z'),
            row(600, 77, 600, 'Z'),
            row(700, 1, 700, 'S'),
            row(701, me, 701, 'X'),
            row(me, 1, me, 'S'),
        ];
        let second = [row(400, me, 400, 'Z'), row(402, me, 402, 'Z'), row(600, 77, 600, 'Z'), row(701, me, 701, 'X')];
        let children = |rows: &[ProcRow]| rows.iter().filter(|r| r.ppid == me).cloned().collect::<Vec<_>>();
        for adopting in [true, false] {
            let (mut whole, mut ours) = (OrphanWatch::default(), OrphanWatch::default());
            assert!(!whole.watches_agents());
            for rows in [&first[..], &second[..]] {
                let a = scan(&mut whole, rows, &[], adopting, &[700, 701]);
                let b = scan(&mut ours, &children(rows), &[], adopting, &[700, 701]);
                assert_eq!(a, b, "adopting {adopting}");
            }
            assert_eq!(scan(&mut whole, &second, &[], adopting, &[]).reap.is_empty(), !adopting);
        }
        // Once an agent was started, the whole table counts (its session's leftovers).
        let mut w = OrphanWatch::default();
        w.started(100, 100);
        assert!(w.watches_agents());
    }

    fn rec() -> Recorded {
        Recorded { pid: 500, start_ticks: 42, boot_id: "b1".into() }
    }

    #[test]
    fn a_recorded_pid_is_killed_only_while_it_is_the_same_process() {
        let r = rec();
        assert_eq!(verify(&r, Some((42, true)), "b1"), Verdict::Same, "whatever its command line now");
        assert_eq!(verify(&r, None, "b1"), Verdict::Gone);
        assert_eq!(verify(&r, Some((43, true)), "b1"), Verdict::Reused, "another start time");
        assert_eq!(verify(&r, Some((42, false)), "b1"), Verdict::Reused, "no owner mark");
        assert_eq!(verify(&r, Some((42, true)), "b2"), Verdict::Reused, "another boot");
    }

    #[test]
    fn leftovers_of_a_gone_leader_are_found_by_session_id() {
        let r = rec();
        let rows = [
            ProcRow { pid: 501, ppid: 1, sid: 500, state: 'S', start_ticks: 50 },
            ProcRow { pid: 502, ppid: 1, sid: 500, state: 'S', start_ticks: 10 },
            ProcRow { pid: 600, ppid: 1, sid: 600, state: 'S', start_ticks: 60 },
        ];
        let all = |_: u32| true;
        assert_eq!(leftovers(&r, Verdict::Gone, &rows, "b1", all), [501], "502 is older than the agent");
        assert!(leftovers(&r, Verdict::Reused, &rows, "b1", all).is_empty());
        assert!(leftovers(&r, Verdict::Gone, &rows, "b2", all).is_empty());
        let mut with_leader = rows.to_vec();
        with_leader.push(ProcRow { pid: 500, ppid: 1, sid: 500, state: 'S', start_ticks: 99 });
        assert!(leftovers(&r, Verdict::Gone, &with_leader, "b1", all).is_empty(), "the PID was taken again");
        with_leader[3].start_ticks = 42;
        assert_eq!(leftovers(&r, Verdict::Same, &with_leader, "b1", all), [500, 501]);
    }

    #[test]
    fn a_leftover_without_the_owners_mark_is_not_ours() {
        // Session 500 emptied, its PID was reused by an unrelated leader that died too,
        // leaving members in "session 500" that started after our agent.
        let r = rec();
        let rows = [
            ProcRow { pid: 501, ppid: 1, sid: 500, state: 'S', start_ticks: 50 },
            ProcRow { pid: 503, ppid: 1, sid: 500, state: 'S', start_ticks: 60 },
        ];
        assert_eq!(leftovers(&r, Verdict::Gone, &rows, "b1", |p| p == 503), [503]);
        assert!(leftovers(&r, Verdict::Gone, &rows, "b1", |_| false).is_empty());
        let mut with_leader = rows.to_vec();
        with_leader.push(ProcRow { pid: 500, ppid: 1, sid: 500, state: 'S', start_ticks: 42 });
        assert_eq!(leftovers(&r, Verdict::Same, &with_leader, "b1", |p| p == 500), [500]);
        assert!(leftovers(&r, Verdict::Same, &with_leader, "b1", |_| false).is_empty(), "not even the agent unmarked");
    }

    #[test]
    fn marks_name_their_owner() {
        assert_eq!(parse_owner_mark(owner_mark(4242, 99).as_bytes()), Some((4242, 99)));
        for bad in ["", "4242", "4242-", "-9", "x-9", "1-2-3", "42 -9"] {
            assert_eq!(parse_owner_mark(bad.as_bytes()), None, "{bad:?}");
        }
    }

    /// Issue 32: a `setsid` child of an agent left its session, so neither the exit nor the
    /// next start found it. What carries a data dir's marks is found wherever it went.
    #[test]
    fn strays_are_the_marked_processes_of_an_owner_that_is_over_and_nothing_else() {
        let row = |pid, start_ticks, state, owner| MarkedRow { pid, start_ticks, state, owner, claude_service: false };
        let me = (100, 50);
        let gone = (200, 10);
        let live = (300, 20);
        let marked = [
            row(101, 60, 'S', me),   // mine: ended at my exit
            row(201, 70, 'S', gone), // a gone owner's: ended at a start
            row(202, 5, 'S', gone),  // started before its owner: a copied mark
            row(203, 80, 'Z', gone), // a zombie: nothing to end
            row(301, 90, 'S', live), // an owner that still runs: never
            row(100, 50, 'S', gone), // this process itself (started inside a gone session)
            row(200, 10, 'S', gone), // a process at the owner's own PID and start: the owner
        ];
        let spare = [100];
        assert_eq!(strays(&marked, &spare, |o| o == me), [101], "at my exit, mine alone");
        assert_eq!(strays(&marked, &spare, |o| o == gone), [201], "at a start, the gone owner's alone");
        assert!(strays(&marked, &spare, |_| false).is_empty());
        // Claude Code's service, started by `claude --bg` from one of my agents: not mine.
        let service = [MarkedRow { claude_service: true, ..row(102, 61, 'S', me) }, row(101, 60, 'S', me)];
        assert_eq!(strays(&service, &spare, |o| o == me), [101], "the service is never a stray");
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
