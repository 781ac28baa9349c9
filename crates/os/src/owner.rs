//! The Mimesis process that owns supervised agents: this one ([`me`]), and whether an
//! owner recorded earlier still runs ([`alive`]: same PID, start time and boot).

use mimesis_core::supervision::ledger::Owner;

use crate::procs;

/// This process.
pub fn me() -> Owner {
    let pid = std::process::id();
    Owner { pid, start_ticks: procs::start_ticks(pid).unwrap_or(0), boot_id: procs::boot_id() }
}

/// Is this owner still running (and not a process that reused its PID)?
pub fn alive(owner: &Owner) -> bool {
    owner.boot_id == procs::boot_id()
        && procs::alive(owner.pid)
        && procs::start_ticks(owner.pid) == Some(owner.start_ticks)
}
