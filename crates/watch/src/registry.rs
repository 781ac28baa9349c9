//! Claude Code's live process registry on disk: `<root>/sessions/<pid>.json`, read and
//! checked against the process table. What an entry means is `mimesis_core::registry`.

use std::path::Path;

use mimesis_core::registry::{RegistryEntry, parse_entry, pid_of_file};
use mimesis_os::procs;

/// A registry entry is a few hundred bytes; anything far bigger is not one.
const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// Reads every registry file in `dir`. Missing folder: no entries.
pub fn read_dir(dir: &Path) -> Vec<RegistryEntry> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let pid = pid_of_file(&path)?;
            let bytes = mimesis_os::files::read_bounded(&path, MAX_ENTRY_BYTES).ok()?;
            parse_entry(&bytes, pid)
        })
        .collect()
}

/// Is the process that wrote this entry still running? A PID that now belongs to a
/// process started at another time is not it.
pub fn alive(entry: &RegistryEntry) -> bool {
    if !procs::alive(entry.pid) {
        return false;
    }
    match entry.proc_start.as_ref() {
        Some(v) => proc_start_matches(v, entry.pid),
        None => true,
    }
}

/// Compares the CLI's `procStart` with the process table. Formats seen or plausible: the
/// raw tick count of `/proc/<pid>/stat` (as a number or string), or epoch milliseconds.
/// An unrecognised format is not held against the process.
fn proc_start_matches(v: &serde_json::Value, pid: u32) -> bool {
    let Some(ticks) = procs::start_ticks(pid) else { return false };
    let n = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let Some(n) = n else { return true };
    if (n - ticks as f64).abs() < 1.0 {
        return true;
    }
    // Epoch milliseconds: compare with boot time + ticks, allowing clock granularity.
    if let Some(boot) = procs::boot_time_ms() {
        let started_ms = boot as f64 + ticks as f64 * 1000.0 / procs::ticks_per_second() as f64;
        if n > 1e12 {
            return (n - started_ms).abs() < 2_000.0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::registry::parse_entry;

    #[test]
    fn a_live_process_with_its_start_time_is_alive() {
        let me = std::process::id();
        let ticks = procs::start_ticks(me).unwrap();
        let json = format!(
            r#"{{"pid":{me},"sessionId":"abc-1","cwd":"/p","startedAt":1,"procStart":"{ticks}","version":"2.1.197",
            "kind":"interactive","entrypoint":"cli","status":"waiting","waitingFor":"permission prompt",
            "updatedAt":1800000000000,"statusUpdatedAt":1800000000001}}"#
        );
        let e = parse_entry(json.as_bytes(), me).unwrap();
        assert!(alive(&e));
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        let me = std::process::id();
        let json = format!(r#"{{"pid":{me},"sessionId":"abc","procStart":"12345678901","status":"idle"}}"#);
        let e = parse_entry(json.as_bytes(), me).unwrap();
        assert!(!alive(&e));
    }
}
