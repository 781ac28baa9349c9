//! The hook spool, read back (SPEC C5, W5): the events `mimesis hook` appended to
//! `<data dir>/hooks/events-YYYY-MM-DD.jsonl`. Files older than a week are deleted.

use std::fs;
use std::path::{Path, PathBuf};

use mimesis_core::clock::Timestamp;
use mimesis_core::hook_event::{HookEvent, MAX_SPOOL_LINE, SPOOL_KEEP_DAYS, parse_spool_line, spool_day, spool_dir};

use crate::tail::FileTail;

/// Deletes spool files older than [`SPOOL_KEEP_DAYS`].
pub fn prune_spool(data_dir: &Path, now: Timestamp) {
    let oldest = Timestamp::from_millis(now.millis() - SPOOL_KEEP_DAYS * 86_400_000).to_iso();
    let Ok(rd) = fs::read_dir(spool_dir(data_dir)) else { return };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if let Some(day) = spool_day(&p)
            && day < &oldest[..10]
        {
            let _ = fs::remove_file(&p);
        }
    }
}

/// Every spool file, oldest day first.
pub fn spool_files(data_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(spool_dir(data_dir)) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| spool_day(p).is_some()).collect();
    v.sort();
    v
}

/// Every recorded event (for the one-shot roster), in file order.
pub fn read_all(data_dir: &Path) -> Vec<HookEvent> {
    let mut out = Vec::new();
    for p in spool_files(data_dir) {
        let mut tail = FileTail::with_max_line(&p, MAX_SPOOL_LINE);
        let _ = tail.read_new(|l| out.extend(parse_spool_line(l)));
    }
    out
}
