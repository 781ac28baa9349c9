//! A ledger held in memory, for this crate's unit tests: the real ledgers (the fleet
//! database's, the files') are in `mimesis-fleetdb`, above this crate; the tests that clean
//! up after them are in `tests/supervise.rs`.

use std::io;
use std::sync::Mutex;

use mimesis_core::ids::SessionId;
use mimesis_core::supervision::interrupted::Interrupted;
use mimesis_core::supervision::ledger::{CorruptedSession, Owner, ProcessLedger, ProcessRecord};

#[derive(Default)]
pub struct MemoryLedger {
    owners: Mutex<Vec<(Owner, Vec<ProcessRecord>)>>,
    interrupted: Mutex<Vec<Interrupted>>,
}

impl ProcessLedger for MemoryLedger {
    fn save(&self, owner: &Owner, records: &[ProcessRecord]) -> io::Result<()> {
        let mut owners = self.owners.lock().unwrap();
        owners.retain(|(o, _)| o != owner);
        owners.push((owner.clone(), records.to_vec()));
        Ok(())
    }

    fn load(&self) -> io::Result<Vec<(Owner, Vec<ProcessRecord>)>> {
        Ok(self.owners.lock().unwrap().clone())
    }

    fn forget(&self, owner: &Owner) -> io::Result<()> {
        self.owners.lock().unwrap().retain(|(o, _)| o != owner);
        Ok(())
    }

    fn archive_corrupted(&self, _: &CorruptedSession) -> io::Result<()> {
        Ok(())
    }

    fn mark_interrupted(&self, entries: &[Interrupted]) -> io::Result<()> {
        let mut all = self.interrupted.lock().unwrap();
        all.retain(|i| !entries.iter().any(|e| e.session_id == i.session_id));
        all.extend(entries.iter().cloned());
        Ok(())
    }

    fn interrupted(&self) -> io::Result<Vec<Interrupted>> {
        Ok(self.interrupted.lock().unwrap().clone())
    }

    fn clear_interrupted(&self, ids: &[SessionId]) -> io::Result<()> {
        self.interrupted.lock().unwrap().retain(|i| !ids.contains(&i.session_id));
        Ok(())
    }
}
