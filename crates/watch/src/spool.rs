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

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::hook_event::{TerminalContext, parse_payload, spool_file};

    const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

    /// One event appended as `mimesis hook` writes it (`mimesis_hooks::append_event`).
    fn append(data_dir: &Path, ev: &HookEvent) {
        use std::io::Write;
        let path = spool_file(data_dir, ev.at);
        fs::create_dir_all(spool_dir(data_dir)).unwrap();
        let mut line = serde_json::to_vec(ev).unwrap();
        line.push(b'\n');
        fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(&line).unwrap();
    }

    #[test]
    fn old_spool_files_are_pruned() {
        let d = tempfile::tempdir().unwrap();
        let old = T0.plus(std::time::Duration::ZERO);
        let now = Timestamp::from_millis(T0.millis() + 10 * 86_400_000);
        append(
            d.path(),
            &parse_payload(br#"{"session_id":"a","hook_event_name":"Stop"}"#, old, TerminalContext::default()).unwrap(),
        );
        append(
            d.path(),
            &parse_payload(br#"{"session_id":"b","hook_event_name":"Stop"}"#, now, TerminalContext::default()).unwrap(),
        );
        assert_eq!(spool_files(d.path()).len(), 2);
        prune_spool(d.path(), now);
        assert_eq!(read_all(d.path()).iter().map(|e| e.session_id.as_str()).collect::<Vec<_>>(), ["b"]);
    }
}
