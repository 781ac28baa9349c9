//! The ledger of supervised processes (P11, P12): every agent Mimesis starts is recorded
//! with its PID, start time, command line and boot id, under the Mimesis process that owns
//! it, so that a later start can clean up after an owner that died (see
//! `mimesis_supervise::cleanup`). Corrupted sessions (EC-007) are archived.
//!
//! This module holds the record types and [`ProcessLedger`], the narrow seam the
//! supervision writes through; the fleet database and the owner files implement it
//! (`mimesis_fleetdb::ledger`).

use std::io;

use serde::{Deserialize, Serialize};

use super::fleet::Recorded;
use super::interrupted::Interrupted;
use crate::clock::Timestamp;
use crate::ids::SessionId;

/// A Mimesis process that owns supervised agents.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub pid: u32,
    pub start_ticks: u64,
    pub boot_id: String,
}

/// One supervised agent process.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRecord {
    pub session_id: SessionId,
    pub cwd: String,
    pub pid: u32,
    pub start_ticks: u64,
    pub cmdline: Vec<String>,
    pub boot_id: String,
    pub started_at: Timestamp,
}

impl ProcessRecord {
    pub fn recorded(&self) -> Recorded {
        Recorded { pid: self.pid, start_ticks: self.start_ticks, boot_id: self.boot_id.clone() }
    }
}

/// A session whose resume failed (EC-007): kept so the user can look at it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CorruptedSession {
    pub session_id: SessionId,
    pub replaced_by: SessionId,
    pub cwd: String,
    pub transcript_path: String,
    pub archived_at: Timestamp,
    pub reason: String,
}

/// Where the supervised processes are recorded.
pub trait ProcessLedger: Send + Sync {
    /// Replaces what `owner` has recorded.
    fn save(&self, owner: &Owner, records: &[ProcessRecord]) -> io::Result<()>;
    /// Every owner's records (including the caller's own).
    fn load(&self) -> io::Result<Vec<(Owner, Vec<ProcessRecord>)>>;
    fn forget(&self, owner: &Owner) -> io::Result<()>;
    fn archive_corrupted(&self, entry: &CorruptedSession) -> io::Result<()>;
    /// Records sessions a quit or a crash of Mimesis interrupted (issue 37), each replacing
    /// an earlier mark of the same session.
    fn mark_interrupted(&self, entries: &[Interrupted]) -> io::Result<()>;
    /// Every session recorded as interrupted.
    fn interrupted(&self) -> io::Result<Vec<Interrupted>>;
    /// Forgets the marks of these sessions (resumed, or dismissed by the user).
    fn clear_interrupted(&self, ids: &[SessionId]) -> io::Result<()>;
}

/// Adds `more` owners' records to `all`, each process once.
pub fn merge(all: &mut Vec<(Owner, Vec<ProcessRecord>)>, more: Vec<(Owner, Vec<ProcessRecord>)>) {
    for (owner, records) in more {
        match all.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, known)) => {
                for r in records {
                    if !known.iter().any(|k| k.pid == r.pid && k.start_ticks == r.start_ticks) {
                        known.push(r);
                    }
                }
            }
            None => all.push((owner, records)),
        }
    }
}
