//! Cleaning up after earlier runs (P11): what Mimesis processes that died (quit,
//! crashed, SIGKILLed) left running is killed — but only a process that is still the very
//! one recorded, or a leftover that carries the dead owner's mark — and their records are
//! forgotten.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use mimesis_core::supervision::fleet::{self, MarkedRow, Verdict};
use mimesis_core::supervision::ledger::{Owner, ProcessLedger, ProcessRecord};
use mimesis_os::procs;

/// What the start-up cleanup did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Processes killed (agents and their leftovers).
    pub killed: Vec<u32>,
    /// Recorded PIDs that now belong to another process: left alone.
    pub reused: Vec<u32>,
    /// Sessions of dead owners, which can be resumed.
    pub resumable: Vec<ProcessRecord>,
}

/// Kills what earlier, now dead, Mimesis processes left running (P11), waiting up to
/// `kill_after` between SIGTERM and SIGKILL, and forgets their records. Blocking.
pub fn clean_previous_runs(ledger: &dyn ProcessLedger, me: &Owner, kill_after: Duration) -> io::Result<Cleanup> {
    let mut report = Cleanup::default();
    let boot = procs::boot_id();
    for (owner, records) in ledger.load()? {
        if owner == *me || mimesis_os::owner::alive(&owner) {
            continue; // a running Mimesis (the app, another `mimesis run`) owns these
        }
        let rows = procs::rows(&procs::all());
        let mark = fleet::owner_mark(owner.pid, owner.start_ticks);
        let marked = |pid: u32| procs::env_var(pid, fleet::OWNER_ENV).as_deref() == Some(mark.as_bytes());
        let mut doomed = Vec::new();
        for rec in &records {
            let now = procs::stat(rec.pid).filter(|s| s.state != 'Z').map(|s| (s.start_ticks, marked(rec.pid)));
            let verdict = fleet::verify(&rec.recorded(), now, &boot);
            if verdict == Verdict::Reused {
                tracing::info!(pid = rec.pid, "a recorded PID now belongs to another process; leaving it alone");
                report.reused.push(rec.pid);
            }
            let left = fleet::leftovers(&rec.recorded(), verdict, &rows, &boot, marked);
            if !left.is_empty() {
                tracing::warn!(pid = rec.pid, session = %rec.session_id, processes = ?left,
                    "killing processes left running by an earlier Mimesis");
            }
            doomed.extend(left);
            report.resumable.push(rec.clone());
        }
        terminate_all(&doomed, kill_after);
        report.killed.extend(doomed);
        ledger.forget(&owner)?;
    }
    Ok(report)
}

/// This user's processes that carry the owner marks of data dir `data` ([`fleet::OWNER_ENV`]
/// and [`fleet::OWNER_DATA_ENV`]). Another user's process is never among them, even where
/// its environment can be read (as root). One read per process of the machine: the rest
/// only for the marked ones.
fn marked_by(data: &[u8]) -> Vec<MarkedRow> {
    let me = procs::my_uid();
    procs::pids()
        .into_iter()
        .filter_map(|pid| {
            let [owner, dir] = procs::env_vars(pid, [fleet::OWNER_ENV, fleet::OWNER_DATA_ENV]);
            if dir.as_deref() != Some(data) {
                return None;
            }
            let owner = fleet::parse_owner_mark(&owner?)?;
            let s = procs::stat(pid).filter(|_| procs::uid(pid) == Some(me))?;
            let claude_service = under_claude_service(pid);
            Some(MarkedRow { pid, start_ticks: s.start_ticks, state: s.state, owner, claude_service })
        })
        .collect()
}

/// Is `pid`, or a process it runs under, Claude Code's background service
/// ([`fleet::is_claude_service`])? Its PTY hosts outlive the service a moment, under init.
fn under_claude_service(pid: u32) -> bool {
    procs::lineage(pid).into_iter().any(|p| procs::cmdline(p).is_some_and(|argv| fleet::is_claude_service(&argv)))
}

/// Ends the processes that carry the marks of data dir `data` and whose owner `over` says is
/// over ([`fleet::strays`]): SIGTERM, up to `kill_after`, SIGKILL; then looks again for any
/// they started meanwhile, a few rounds at most. Returns the PIDs ended. Blocking.
///
/// At exit `over` is this process (P12: no child outlives Mimesis, not even one that left
/// its agent's session with `setsid`); at a start it is an owner that is gone (what an
/// earlier run on this data dir left, however it ended).
pub fn end_strays(data: &Path, mut over: impl FnMut((u32, u64)) -> bool, kill_after: Duration) -> Vec<u32> {
    let data = data.as_os_str().as_encoded_bytes();
    let spare = procs::lineage(std::process::id());
    let mut ended = Vec::new();
    for round in 0..4 {
        let doomed = fleet::strays(&marked_by(data), &spare, &mut over);
        if doomed.is_empty() {
            break;
        }
        tracing::warn!(processes = ?doomed, "ending processes left running by a Mimesis that is over");
        // The first round asks; the later ones find what was forked meanwhile, and kill.
        terminate_all(&doomed, if round == 0 { kill_after } else { Duration::ZERO });
        for &pid in &doomed {
            procs::reap(pid);
        }
        ended.extend(doomed);
    }
    ended.sort_unstable();
    ended.dedup();
    ended
}

/// [`end_strays`] at a start: what owners of `data` that are gone (not this process, not
/// one still running) left running.
pub fn end_strays_of_gone_owners(data: &Path, me: &Owner, kill_after: Duration) -> Vec<u32> {
    let boot = procs::boot_id();
    // Each owner looked up once: gone unless it is this process or it still runs.
    let mut gone: HashMap<(u32, u64), bool> = HashMap::new();
    let over = |(pid, start_ticks): (u32, u64)| {
        *gone.entry((pid, start_ticks)).or_insert_with(|| {
            (pid, start_ticks) != (me.pid, me.start_ticks)
                && !mimesis_os::owner::alive(&Owner { pid, start_ticks, boot_id: boot.clone() })
        })
    };
    end_strays(data, over, kill_after)
}

/// SIGTERM to each, wait up to `kill_after` for them to go, SIGKILL the rest. The PIDs
/// were verified a moment ago, and a killed process keeps its PID until reaped.
pub fn terminate_all(pids: &[u32], kill_after: Duration) {
    if pids.is_empty() {
        return;
    }
    for &p in pids {
        procs::signal(p, libc::SIGTERM);
    }
    let deadline = Instant::now() + kill_after;
    while Instant::now() < deadline && pids.iter().any(|&p| procs::alive(p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &p in pids.iter().filter(|&&p| procs::alive(p)) {
        procs::signal(p, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_ledger::MemoryLedger;
    use mimesis_core::clock::Timestamp;
    use mimesis_core::ids::SessionId;
    use mimesis_os::owner;

    fn record(pid: u32) -> ProcessRecord {
        // Right after a spawn, /proc can still show the parent's command line, or none
        // (the exec released the parent before it set up the new arguments).
        let mut cmdline = procs::cmdline(pid).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mine = procs::cmdline(std::process::id()).unwrap_or_default();
        while pid != std::process::id() && (cmdline.is_empty() || cmdline == mine) {
            assert!(Instant::now() < deadline, "the child's command line never showed");
            std::thread::sleep(Duration::from_millis(5));
            cmdline = procs::cmdline(pid).unwrap_or_default();
        }
        ProcessRecord {
            session_id: SessionId::parse("s1").unwrap(),
            cwd: "/p".into(),
            pid,
            start_ticks: procs::start_ticks(pid).unwrap_or(0),
            cmdline,
            boot_id: procs::boot_id(),
            started_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_dead_owners_live_process_is_killed_a_reused_pid_is_not() {
        let l = MemoryLedger::default();
        let dead_owner = Owner { pid: 999_999, start_ticks: 1, boot_id: procs::boot_id() };
        let mark = fleet::owner_mark(dead_owner.pid, dead_owner.start_ticks);
        let mut victim = std::process::Command::new("sleep").arg("300").env(fleet::OWNER_ENV, &mark).spawn().unwrap();
        // Even with the dead owner's mark: a PID whose process started at another time.
        let mut bystander =
            std::process::Command::new("sleep").arg("300").env(fleet::OWNER_ENV, &mark).spawn().unwrap();
        // The same command line, recorded, but not started by that owner (no mark).
        let mut unmarked = std::process::Command::new("sleep").arg("300").spawn().unwrap();
        let mut reused = record(bystander.id());
        reused.start_ticks += 1; // the recorded process started at another time
        l.save(&dead_owner, &[record(victim.id()), reused, record(unmarked.id())]).unwrap();
        // A live owner's records are never touched.
        l.save(&owner::me(), &[record(bystander.id())]).unwrap();
        let report =
            clean_previous_runs(&l, &Owner { pid: 1, start_ticks: 0, boot_id: String::new() }, Duration::from_secs(2))
                .unwrap();
        assert_eq!(report.killed, [victim.id()]);
        assert_eq!(report.reused, [bystander.id(), unmarked.id()], "another start time; no mark");
        assert!(victim.wait().unwrap().code().is_none(), "killed by a signal");
        assert!(bystander.try_wait().unwrap().is_none(), "the bystander lives");
        assert!(unmarked.try_wait().unwrap().is_none(), "a process without the owner's mark lives");
        unmarked.kill().unwrap();
        unmarked.wait().unwrap();
        assert_eq!(l.load().unwrap().len(), 1, "the dead owner's file is gone, the live one's stays");
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    #[test]
    fn an_agent_started_through_a_script_and_its_children_are_reaped_by_their_mark() {
        // A `#!` agent: /proc shows the interpreter and the script, never the recorded argv.
        let d = tempfile::tempdir().unwrap();
        let script = d.path().join("agent");
        std::fs::write(&script, "#!/bin/sh\nsleep 300 &\necho started\nwait\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let dead_owner = Owner { pid: 999_997, start_ticks: 9, boot_id: procs::boot_id() };
        let mark = fleet::owner_mark(dead_owner.pid, dead_owner.start_ticks);
        // Its own session, as the PTY gives it (setsid execs in place: same PID).
        let mut agent = std::process::Command::new("setsid")
            .arg(&script)
            .env(fleet::OWNER_ENV, &mark)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = [0u8; 8];
        std::io::Read::read_exact(agent.stdout.as_mut().unwrap(), &mut out).unwrap();
        // The background `sleep` may still be a forked shell a moment after the echo, and
        // an exec shows its new name before its new environment (the kernel sets the
        // name first), so wait for both.
        let deadline = Instant::now() + Duration::from_secs(5);
        let child = loop {
            let sleeping = procs::all().into_iter().find(|p| p.ppid == agent.id() && p.comm == "sleep");
            if let Some(p) = sleeping.filter(|p| procs::env_var(p.pid, fleet::OWNER_ENV).is_some()) {
                break p.pid;
            }
            assert!(Instant::now() < deadline, "the script's child never showed");
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut rec = record(agent.id());
        rec.cmdline = vec![script.to_string_lossy().into_owned()];
        let l = MemoryLedger::default();
        l.save(&dead_owner, &[rec]).unwrap();
        let report = clean_previous_runs(&l, &owner::me(), Duration::from_secs(2)).unwrap();
        assert_eq!(report.killed, [agent.id(), child], "{report:?}");
        assert!(agent.wait().unwrap().code().is_none(), "killed by a signal");
        let deadline = Instant::now() + Duration::from_secs(5);
        while procs::alive(child) && procs::stat(child).is_some_and(|s| s.state != 'Z') {
            assert!(Instant::now() < deadline, "the script's child is gone");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
