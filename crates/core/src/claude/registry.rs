//! Claude Code's live process registry: `<root>/sessions/<pid>.json`, one small file per
//! running interactive session (SPEC W9, docs/claude-code-observed.md).
//!
//! It tells which sessions are alive, in which PID, and whether the CLI shows a permission
//! dialog right now. It is undocumented, so every field is optional, unknown values are
//! tolerated, and a file whose process is gone (or whose PID now belongs to another
//! process) counts for nothing.

use std::path::Path;

use serde::Deserialize;

use crate::clock::Timestamp;
use crate::ids::{JobId, SessionId};
use crate::job::SessionKind;
use crate::status::{RegistrySignal, RegistryState};

#[derive(Debug, Clone, PartialEq)]
pub struct RegistryEntry {
    pub pid: u32,
    pub session_id: SessionId,
    pub cwd: Option<String>,
    pub status: Option<String>,
    pub waiting_for: Option<String>,
    pub status_updated_at: Option<Timestamp>,
    /// `procStart` as written by the CLI (its format is not documented).
    pub proc_start: Option<serde_json::Value>,
    /// `pidDomain` (2.1.330): `linux:<machine-id>:<pid namespace>`, where `pid` means
    /// something; an entry of another domain cannot be checked against this process table.
    pub pid_domain: Option<String>,
    /// The session's name (2.1.330: `proj-73`), when the CLI gives one.
    pub name: Option<String>,
    /// The tmux pane running it (2.1.330: `session:@window.%pane`), when inside tmux.
    pub tmux: Option<String>,
    /// `kind`: `interactive`, or `bg` for a session of the background service (2.1.332).
    pub kind: Option<SessionKind>,
    /// `jobId`: a background session's short id (2.1.332).
    pub job_id: Option<JobId>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry {
    pid: Option<serde_json::Value>,
    session_id: Option<String>,
    cwd: Option<String>,
    status: Option<serde_json::Value>,
    waiting_for: Option<serde_json::Value>,
    updated_at: Option<serde_json::Value>,
    status_updated_at: Option<serde_json::Value>,
    proc_start: Option<serde_json::Value>,
    pid_domain: Option<serde_json::Value>,
    name: Option<serde_json::Value>,
    tmux: Option<serde_json::Value>,
    kind: Option<serde_json::Value>,
    job_id: Option<serde_json::Value>,
}

fn timestamp_of(v: &serde_json::Value) -> Option<Timestamp> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().map(Timestamp::from_millis),
        serde_json::Value::String(s) => Timestamp::parse(s),
        _ => None,
    }
}

/// A printable string of at most `max` bytes, else nothing (the file is untrusted).
fn short_text(v: Option<serde_json::Value>, max: usize) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) if !s.is_empty() && s.len() <= max && !s.chars().any(char::is_control) => {
            Some(s)
        }
        _ => None,
    }
}

/// Reads one registry file. `file_pid` is the PID in its name; a file whose content names
/// another PID, or an invalid session id, is refused.
pub fn parse_entry(bytes: &[u8], file_pid: u32) -> Option<RegistryEntry> {
    let raw: RawEntry = crate::json::from_slice(bytes).ok()?;
    let pid = match raw.pid.as_ref().and_then(|v| v.as_u64()) {
        Some(p) if p != u64::from(file_pid) => return None,
        _ => file_pid,
    };
    let session_id = SessionId::parse(raw.session_id.as_deref()?).ok()?;
    let text = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned));
    Some(RegistryEntry {
        pid,
        session_id,
        cwd: raw.cwd,
        status: text(raw.status),
        waiting_for: text(raw.waiting_for),
        status_updated_at: raw.status_updated_at.as_ref().or(raw.updated_at.as_ref()).and_then(timestamp_of),
        proc_start: raw.proc_start,
        pid_domain: short_text(raw.pid_domain, 256),
        name: short_text(raw.name, 128),
        tmux: short_text(raw.tmux, 256),
        kind: match raw.kind.as_ref().and_then(|k| k.as_str()) {
            Some("interactive") => Some(SessionKind::Interactive),
            Some("bg") => Some(SessionKind::Background),
            _ => None,
        },
        job_id: raw.job_id.as_ref().and_then(|j| j.as_str()).and_then(|j| JobId::parse(j).ok()),
    })
}

/// The PID in a registry file name (`<pid>.json`).
pub fn pid_of_file(path: &Path) -> Option<u32> {
    if path.extension()? != "json" {
        return None;
    }
    path.file_stem()?.to_str()?.parse().ok()
}

impl RegistryEntry {
    /// What the entry says about the session's state.
    pub fn signal(&self) -> RegistrySignal {
        let state = match self.status.as_deref() {
            Some("busy" | "running" | "working") => RegistryState::Busy,
            Some("idle") => RegistryState::Idle,
            Some("waiting") => match self.waiting_for.as_deref().map(str::to_ascii_lowercase).as_deref() {
                Some(w) if w.contains("permission") => RegistryState::WaitingForApproval,
                Some("input needed") => RegistryState::WaitingForInput,
                // `dialog open` (2.1.330: the auto-mode fallback, plan mode's exit, …) and
                // values this version does not know: the user is needed; for what, the
                // transcript tells (a pending tool call: approval).
                _ => RegistryState::WaitingForDialog,
            },
            _ => RegistryState::Unknown,
        };
        RegistrySignal { state, updated_at: self.status_updated_at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_observed_shape() {
        let json = r#"{"pid":42,"sessionId":"abc-1","cwd":"/p","startedAt":1,"procStart":"77","version":"2.1.197",
            "kind":"interactive","entrypoint":"cli","status":"waiting","waitingFor":"permission prompt",
            "updatedAt":1800000000000,"statusUpdatedAt":1800000000001}"#;
        let e = parse_entry(json.as_bytes(), 42).unwrap();
        assert_eq!(e.session_id.as_str(), "abc-1");
        assert_eq!(e.signal().state, RegistryState::WaitingForApproval);
        assert_eq!(e.status_updated_at, Some(Timestamp::from_millis(1_800_000_000_001)));
        assert_eq!((e.kind, e.job_id), (Some(SessionKind::Interactive), None));
        assert_eq!(e.pid_domain, None);
        let e = parse_entry(br#"{"sessionId":"a","pidDomain":"linux:3d12:pid:[4026531836]"}"#, 7).unwrap();
        assert_eq!(e.pid_domain.as_deref(), Some("linux:3d12:pid:[4026531836]"));
    }

    #[test]
    fn a_background_sessions_entry_names_its_job() {
        let e = parse_entry(br#"{"pid":7,"sessionId":"aa2e1246-11cc","kind":"bg","jobId":"aa2e1246"}"#, 7).unwrap();
        assert_eq!((e.kind, e.job_id.as_ref().map(JobId::as_str)), (Some(SessionKind::Background), Some("aa2e1246")));
        let e = parse_entry(br#"{"pid":7,"sessionId":"a","kind":"daemon","jobId":"../../x"}"#, 7).unwrap();
        assert_eq!((e.kind, e.job_id), (None, None));
    }

    #[test]
    fn refuses_mismatched_or_hostile_content() {
        assert!(parse_entry(br#"{"pid":1,"sessionId":"a"}"#, 2).is_none());
        assert!(parse_entry(br#"{"pid":2,"sessionId":"../../etc"}"#, 2).is_none());
        assert!(parse_entry(b"{not json", 2).is_none());
        assert!(parse_entry(br#"{"pid":2}"#, 2).is_none());
    }

    #[test]
    fn unknown_status_values_are_tolerated() {
        let e = parse_entry(br#"{"sessionId":"a","status":"hibernating"}"#, 7).unwrap();
        assert_eq!(e.signal().state, RegistryState::Unknown);
        let e = parse_entry(br#"{"sessionId":"a","status":"busy"}"#, 7).unwrap();
        assert_eq!(e.signal().state, RegistryState::Busy);
        for (w, state) in [
            ("permission prompt", RegistryState::WaitingForApproval),
            ("input needed", RegistryState::WaitingForInput),
            ("dialog open", RegistryState::WaitingForDialog),
            ("something new", RegistryState::WaitingForDialog),
        ] {
            let json = format!(r#"{{"sessionId":"a","status":"waiting","waitingFor":"{w}"}}"#);
            assert_eq!(parse_entry(json.as_bytes(), 7).unwrap().signal().state, state, "{w}");
        }
    }

    #[test]
    fn file_names() {
        assert_eq!(pid_of_file(Path::new("/x/sessions/123.json")), Some(123));
        assert_eq!(pid_of_file(Path::new("/x/sessions/abc.json")), None);
        assert_eq!(pid_of_file(Path::new("/x/sessions/123.tmp")), None);
    }
}
