//! Claude Code's background service (2.1.332) as its files describe it: `<config>/
//! daemon.status.json` (there while the service runs) and `<config>/daemon/roster.json`
//! (one worker per running background session). docs/claude-code-observed.md "The
//! background service" says what every field means.
//!
//! Only the fields Mimesis uses are read. The roster also holds the service's socket
//! secrets (`rvAuth`, `ptyAuth`): they are never deserialized into anything, kept, logged
//! or shown. The files are untrusted: depth guard, ids validated, a worker whose key is not
//! a job id or whose fields have the wrong type is skipped, at most [`MAX_WORKERS`] read.

use serde::Deserialize;

use crate::clock::Timestamp;
use crate::ids::{JobId, SessionId};
use crate::job::timestamp_of;

/// A roster is a couple of kilobytes per running session.
pub const MAX_ROSTER_BYTES: u64 = 4 << 20;
/// `daemon.status.json` is a few dozen bytes.
pub const MAX_STATUS_BYTES: u64 = 64 << 10;
/// Workers read from one roster; the rest are ignored.
pub const MAX_WORKERS: usize = 1024;

/// The running process of one background session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Worker {
    pub job: JobId,
    /// The PTY host (`pid`), and its start as the service wrote it (`procStart`).
    pub pid: u32,
    pub proc_start: Option<String>,
    /// The session's own process (`replPid`: the registry's `pid`).
    pub repl_pid: Option<u32>,
    pub repl_proc_start: Option<String>,
    pub session_id: SessionId,
    /// 1, then one more at each restart after a crash (a respawn keeps it).
    pub attempt: Option<u32>,
    pub cli_version: Option<String>,
    pub cwd: Option<String>,
    pub started_at: Option<Timestamp>,
}

/// `daemon/roster.json`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Roster {
    pub supervisor_pid: Option<u32>,
    pub workers: Vec<Worker>,
}

/// `daemon.status.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceStatus {
    pub supervisor_pid: u32,
    pub supervisor_proc_start: Option<String>,
    pub written_at: Option<Timestamp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRoster {
    supervisor_pid: Option<serde_json::Value>,
    workers: Option<std::collections::BTreeMap<String, RawWorker>>,
}

// Every field the service writes that is not named here (the dispatch with its
// environment, the sockets and their secrets) is skipped by the parser, never stored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWorker {
    pid: Option<serde_json::Value>,
    proc_start: Option<serde_json::Value>,
    repl_pid: Option<serde_json::Value>,
    repl_proc_start: Option<serde_json::Value>,
    session_id: Option<serde_json::Value>,
    attempt: Option<serde_json::Value>,
    cli_version: Option<serde_json::Value>,
    cwd: Option<serde_json::Value>,
    started_at: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStatus {
    supervisor_pid: Option<serde_json::Value>,
    supervisor_proc_start: Option<serde_json::Value>,
    written_at: Option<serde_json::Value>,
}

/// A PID: a positive number that fits a `pid_t`.
fn pid(v: &Option<serde_json::Value>) -> Option<u32> {
    v.as_ref()?.as_u64().filter(|p| *p > 0 && *p <= i32::MAX as u64).map(|p| p as u32)
}

/// A process start as written (a tick count, as a string or a number): digits only.
fn proc_start(v: &Option<serde_json::Value>) -> Option<String> {
    let s = match v.as_ref()? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!s.is_empty() && s.len() <= 24 && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

fn short(v: &Option<serde_json::Value>, max: usize) -> Option<String> {
    let s = v.as_ref()?.as_str()?;
    (!s.is_empty() && s.len() <= max && !s.chars().any(char::is_control)).then(|| s.to_owned())
}

/// Reads `daemon/roster.json`. Nothing when it is not a JSON object.
pub fn parse_roster(bytes: &[u8]) -> Option<Roster> {
    let raw: RawRoster = crate::json::from_slice(bytes).ok()?;
    let workers = raw
        .workers
        .unwrap_or_default()
        .into_iter()
        .take(MAX_WORKERS)
        .filter_map(|(key, w)| {
            let job = JobId::parse(&key).ok()?;
            let session_id = SessionId::parse(w.session_id.as_ref()?.as_str()?).ok()?;
            Some(Worker {
                pid: pid(&w.pid)?,
                proc_start: proc_start(&w.proc_start),
                repl_pid: pid(&w.repl_pid),
                repl_proc_start: proc_start(&w.repl_proc_start),
                attempt: w.attempt.as_ref().and_then(|a| a.as_u64()).map(|a| a.min(u64::from(u32::MAX)) as u32),
                cli_version: short(&w.cli_version, 32),
                cwd: short(&w.cwd, 4096),
                started_at: w.started_at.as_ref().and_then(timestamp_of),
                job,
                session_id,
            })
        })
        .collect();
    Some(Roster { supervisor_pid: pid(&raw.supervisor_pid), workers })
}

/// Reads `daemon.status.json`. Nothing when it is not a JSON object naming a supervisor.
pub fn parse_status(bytes: &[u8]) -> Option<ServiceStatus> {
    let raw: RawStatus = crate::json::from_slice(bytes).ok()?;
    Some(ServiceStatus {
        supervisor_pid: pid(&raw.supervisor_pid)?,
        supervisor_proc_start: proc_start(&raw.supervisor_proc_start),
        written_at: raw.written_at.as_ref().and_then(timestamp_of),
    })
}

impl Roster {
    pub fn worker(&self, job: &JobId) -> Option<&Worker> {
        self.workers.iter().find(|w| w.job == *job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKER: &str = r#"{"pid":26802,"procStart":"268567","sessionId":"aa2e1246-11cc-48b1-aa61-76af4aa5d5aa",
        "rendezvousSock":"/tmp/cc-daemon-0/x/rv/aa2e1246.sock","cliVersion":"2.1.332","startedAt":1795899772739,
        "attempt":2,"cwd":"/home/user/project","dispatch":{"env":{"CLAUDE_CONFIG_DIR":"/x"}},
        "rvAuth":"0123456789abcdef0123456789abcdef","ptyAuth":"fedcba9876543210fedcba9876543210",
        "replPid":26820,"replProcStart":"268594"}"#;

    #[test]
    fn reads_a_worker_and_nothing_of_its_secrets() {
        let json = format!(r#"{{"proto":1,"supervisorPid":26791,"updatedAt":1,"workers":{{"aa2e1246":{WORKER}}}}}"#);
        let r = parse_roster(json.as_bytes()).unwrap();
        assert_eq!(r.supervisor_pid, Some(26791));
        let w = r.worker(&JobId::parse("aa2e1246").unwrap()).unwrap();
        assert_eq!((w.pid, w.repl_pid, w.attempt), (26802, Some(26820), Some(2)));
        assert_eq!(w.proc_start.as_deref(), Some("268567"));
        let kept = format!("{r:?}");
        assert!(!kept.contains("0123456789abcdef") && !kept.contains("fedcba"), "{kept}");
    }

    #[test]
    fn hostile_workers_are_skipped_one_by_one() {
        let json = format!(
            r#"{{"workers":{{"../../etc":{WORKER},"aa2e1246":{WORKER},"bb2e1246":{{"pid":"12","sessionId":"x"}},
            "cc2e1246":{{"pid":-4,"sessionId":"x"}},"dd2e1246":{{"pid":5,"sessionId":"../a"}},
            "ee2e1246":{{"pid":5,"sessionId":"e","procStart":"12; rm -rf","attempt":1e300,"cwd":"/a\u0007"}}}}}}"#
        );
        let r = parse_roster(json.as_bytes()).unwrap();
        let jobs: Vec<&str> = r.workers.iter().map(|w| w.job.as_str()).collect();
        assert_eq!(jobs, ["aa2e1246", "ee2e1246"]);
        let e = &r.workers[1];
        assert_eq!((e.proc_start.as_deref(), e.attempt, e.cwd.as_deref()), (None, None, None));
        assert_eq!(parse_roster(br#"{"workers":{}}"#).unwrap().workers, []);
        assert_eq!(parse_roster(br#"{"workers":[1]}"#), None, "a roster of the wrong shape is none");
        assert_eq!(parse_roster(b"{}").unwrap(), Roster::default());
        assert!(parse_roster("{\"workers\":".repeat(10_000).as_bytes()).is_none());
    }

    #[test]
    fn the_status_file() {
        let s = parse_status(
            br#"{"supervisorPid":26791,"supervisorProcStart":"268524","writtenAt":1795899772708,"workers":{}}"#,
        )
        .unwrap();
        assert_eq!(s.supervisor_pid, 26791);
        assert_eq!(s.written_at, Some(Timestamp::from_millis(1_795_899_772_708)));
        assert!(parse_status(br#"{"supervisorPid":0}"#).is_none());
        assert!(parse_status(b"null").is_none());
    }
}
