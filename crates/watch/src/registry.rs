//! Claude Code's live process registry on disk: `<root>/sessions/<pid>.json`, read and
//! checked against the process table. What an entry means is `mimesis_core::registry`.

use std::path::Path;
use std::sync::OnceLock;

use mimesis_core::ids::SessionId;
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

/// What one root's registry says, read once (issue 33).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Snapshot {
    /// `sessions/` is a folder that could be listed: the CLI writes its entries there, so
    /// a session missing from it has no process here (the store decides what that means).
    pub readable: bool,
    /// The entries whose processes run here.
    pub alive: Vec<RegistryEntry>,
    /// Sessions whose entry names another pid namespace (a container, another machine
    /// sharing the folder): whether they run cannot be told from this process table.
    pub foreign: Vec<SessionId>,
}

/// This process's `pidDomain`, read once.
fn our_domain() -> Option<&'static str> {
    static OURS: OnceLock<Option<String>> = OnceLock::new();
    OURS.get_or_init(procs::pid_domain).as_deref()
}

/// Does the entry name a PID of another pid namespace than ours? (An entry without a
/// domain, as 2.1.197 writes, or a machine whose domain cannot be read: taken as ours.)
fn foreign(entry: &RegistryEntry, ours: Option<&str>) -> bool {
    matches!((entry.pid_domain.as_deref(), ours), (Some(theirs), Some(ours)) if theirs != ours)
}

/// Reads the registry folder `dir`. `before` are the entries found alive last time: one
/// missing now whose process still runs is kept, for the CLI rewrites its file in place
/// (and may remove it for a moment) while it runs; its end is its process's end.
pub fn read(dir: &Path, before: &[RegistryEntry]) -> Snapshot {
    read_in(dir, before, our_domain())
}

fn read_in(dir: &Path, before: &[RegistryEntry], ours: Option<&str>) -> Snapshot {
    let readable = std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) && std::fs::read_dir(dir).is_ok();
    let mut snap = Snapshot { readable, ..Snapshot::default() };
    for e in read_dir(dir) {
        if foreign(&e, ours) {
            snap.foreign.push(e.session_id);
        } else if alive(&e) {
            snap.alive.push(e);
        }
    }
    for e in before {
        let listed = snap.alive.iter().any(|a| a.pid == e.pid) || snap.foreign.contains(&e.session_id);
        if !listed && alive(e) {
            snap.alive.push(e.clone());
        }
    }
    snap
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

    fn entry(json: &str) -> RegistryEntry {
        parse_entry(json.as_bytes(), std::process::id()).unwrap()
    }

    #[test]
    fn an_entry_of_another_pid_namespace_is_neither_alive_nor_gone() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let ours = "linux:m1:pid:[1]";
        let write = |pid: u32, sid: &str, domain: &str| {
            let json = format!(r#"{{"pid":{pid},"sessionId":"{sid}","status":"busy","pidDomain":"{domain}"}}"#);
            std::fs::write(dir.path().join(format!("{pid}.json")), json).unwrap();
        };
        write(me, "here", ours);
        // A container's process: its PID (here: one that does not run) says nothing.
        write(999_999_999, "there", "linux:m1:pid:[2]");
        let snap = read_in(dir.path(), &[], Some(ours));
        assert!(snap.readable);
        assert_eq!(snap.alive.iter().map(|e| e.session_id.as_str()).collect::<Vec<_>>(), ["here"]);
        assert_eq!(snap.foreign.iter().map(SessionId::as_str).collect::<Vec<_>>(), ["there"]);
        // Without a domain of ours to compare with, every entry is taken as ours.
        assert!(read_in(dir.path(), &[], None).foreign.is_empty());
    }

    #[test]
    fn a_folder_that_is_missing_or_not_a_folder_is_not_readable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!read_in(&dir.path().join("sessions"), &[], None).readable);
        std::fs::write(dir.path().join("sessions"), b"").unwrap();
        assert!(!read_in(&dir.path().join("sessions"), &[], None).readable);
        assert!(read_in(dir.path(), &[], None).readable);
    }

    #[test]
    fn an_entry_rewritten_or_gone_for_a_moment_stays_while_its_process_runs() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let was = entry(&format!(r#"{{"pid":{me},"sessionId":"abc","status":"waiting"}}"#));
        // The file is being rewritten: empty, or not there.
        std::fs::write(dir.path().join(format!("{me}.json")), b"").unwrap();
        assert_eq!(read_in(dir.path(), std::slice::from_ref(&was), None).alive, std::slice::from_ref(&was));
        std::fs::remove_file(dir.path().join(format!("{me}.json"))).unwrap();
        assert_eq!(read_in(dir.path(), std::slice::from_ref(&was), None).alive, [was]);
        // A process that is gone is gone.
        let dead = parse_entry(br#"{"sessionId":"abc"}"#, 999_999_999).unwrap();
        assert!(read_in(dir.path(), &[dead], None).alive.is_empty());
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        let me = std::process::id();
        let json = format!(r#"{{"pid":{me},"sessionId":"abc","procStart":"12345678901","status":"idle"}}"#);
        let e = parse_entry(json.as_bytes(), me).unwrap();
        assert!(!alive(&e));
    }
}
