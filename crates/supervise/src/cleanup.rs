//! Cleaning up after earlier runs (P11): what Mimesis processes that died (quit,
//! crashed, SIGKILLed) left running is killed — but only a process that is still the very
//! one recorded, or a leftover that carries the dead owner's mark — and their records are
//! forgotten.

use std::io;
use std::time::{Duration, Instant};

use mimesis_core::supervision::fleet::{self, Verdict};
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
            let now = procs::stat(rec.pid)
                .filter(|s| s.state != 'Z')
                .and_then(|s| procs::cmdline(rec.pid).map(|c| (s.start_ticks, c)));
            let verdict = fleet::verify(&rec.recorded(), now.as_ref().map(|(t, c)| (*t, c.as_slice())), &boot);
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
