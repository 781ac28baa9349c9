//! What a Claude Code hook tells (SPEC C5, W5): the payload `mimesis hook` receives,
//! reduced to the event it records in the spool, and the terminal it ran in. Pure: the
//! hook's side (reading stdin, appending to the spool, writing markers) is
//! `mimesis-hooks`; the engine's side (tailing the spool) is `mimesis-watch`.
//!
//! The payload is untrusted: the session id is validated, strings are bounded and free
//! of control characters, and nothing here becomes a path except through
//! [`crate::ids::SessionId`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::status::HookState;

/// The most `mimesis hook` reads from stdin (a Stop payload repeats the last answer).
pub const MAX_PAYLOAD: usize = 8 * 1024 * 1024;
/// A spool line longer than this is not ours.
pub const MAX_SPOOL_LINE: usize = 64 * 1024;
/// Spool files older than this many days are deleted by the engine.
pub const SPOOL_KEEP_DAYS: i64 = 7;
/// Terminal ids and other environment values longer than this are dropped.
const MAX_ENV_VALUE: usize = 128;

/// Why a payload was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the hook payload is not a JSON object: {0}")]
    NotAnObject(crate::json::JsonError),
    #[error("the hook payload has no valid session id: {0}")]
    SessionId(String),
}

/// Where `claude` runs: enough to tell two terminals in one folder apart (SPEC C2).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TerminalContext {
    /// The `claude` process that ran the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_pid: Option<u32>,
    /// Its start time in clock ticks since boot: a PID alone may be reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_start: Option<u64>,
    /// Its controlling terminal (`pts/3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kitty_window_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    /// The tmux server's socket (the first field of `$TMUX`), to reach a server that is
    /// not the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_socket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wezterm_pane: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterm_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term_session_id: Option<String>,
}

impl TerminalContext {
    /// The `claude` process, when both its PID and start time are known.
    pub fn process(&self) -> Option<(u32, u64)> {
        Some((self.claude_pid?, self.claude_start?))
    }

    /// Terminal-emulator ids (not the process): equal when both name the same tab.
    fn terminal_ids(&self) -> [(&'static str, Option<&str>); 5] {
        [
            ("kitty", self.kitty_window_id.as_deref()),
            ("tmux", self.tmux_pane.as_deref()),
            ("wezterm", self.wezterm_pane.as_deref()),
            ("iterm", self.iterm_session_id.as_deref()),
            ("term", self.term_session_id.as_deref()),
        ]
    }

    /// Same tab of the same terminal: the same process, else the same TTY, else the same
    /// terminal-emulator id. `None` when nothing comparable is known on both sides.
    pub fn same_terminal(&self, other: &TerminalContext) -> Option<bool> {
        if let (Some(a), Some(b)) = (self.process(), other.process())
            && a == b
        {
            return Some(true);
        }
        if let (Some(a), Some(b)) = (&self.tty, &other.tty) {
            return Some(a == b);
        }
        let mut compared = false;
        for ((_, a), (_, b)) in self.terminal_ids().iter().zip(other.terminal_ids().iter()) {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    return Some(false);
                }
                compared = true;
            }
        }
        if compared { Some(true) } else { None }
    }

    pub fn is_empty(&self) -> bool {
        *self == TerminalContext::default()
    }
}

/// One hook invocation as recorded in the spool (one JSON line).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HookEvent {
    pub at: Timestamp,
    /// `hook_event_name`: SessionStart, SessionEnd, Stop, Notification, UserPromptSubmit…
    pub event: String,
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// SessionStart: startup | resume | clear | compact | fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// SessionEnd: clear | logout | prompt_input_exit | other…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification: permission_prompt | idle_prompt | …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
    #[serde(default, skip_serializing_if = "TerminalContext::is_empty")]
    pub terminal: TerminalContext,
}

impl HookEvent {
    /// What this event says about the session's state (SPEC W5), if anything.
    pub fn state(&self) -> Option<HookState> {
        match self.event.as_str() {
            // PreCompact: a compaction runs (2.1.330 also sends PostCompact, which says
            // nothing the transcript's boundary does not); SubagentStart: a subagent works.
            "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PreCompact" | "SubagentStart" => {
                Some(HookState::Working)
            }
            // StopFailure (2.1.330): an API error ended the turn; it is over all the same.
            "Stop" | "StopFailure" => Some(HookState::TurnDone),
            "SessionEnd" => Some(HookState::Ended),
            "PermissionRequest" => Some(HookState::WaitingForApproval),
            "Notification" => match self.notification_type.as_deref() {
                Some("permission_prompt") => Some(HookState::WaitingForApproval),
                // Sixty seconds at the prompt: the turn is over.
                Some("idle_prompt") => Some(HookState::TurnDone),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn is_session_start(&self, source: &str) -> bool {
        self.event == "SessionStart" && self.source.as_deref() == Some(source)
    }

    pub fn is_session_end(&self, reason: &str) -> bool {
        self.event == "SessionEnd" && self.reason.as_deref() == Some(reason)
    }
}

/// The fields of Claude Code's hook payload that Mimesis uses; everything else (the
/// last answer of a Stop, tool inputs) is ignored.
#[derive(Deserialize, Default)]
struct Payload {
    #[serde(default)]
    session_id: Option<serde_json::Value>,
    #[serde(default)]
    hook_event_name: Option<serde_json::Value>,
    #[serde(default)]
    cwd: Option<serde_json::Value>,
    #[serde(default)]
    transcript_path: Option<serde_json::Value>,
    #[serde(default)]
    source: Option<serde_json::Value>,
    #[serde(default)]
    reason: Option<serde_json::Value>,
    #[serde(default)]
    notification_type: Option<serde_json::Value>,
}

fn short_text(v: Option<serde_json::Value>, max: usize) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) if s.len() <= max && !s.chars().any(char::is_control) => Some(s),
        _ => None,
    }
}

/// An environment value kept only if it is short and printable.
pub fn clean_env_value(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty() && s.len() <= MAX_ENV_VALUE && s.bytes().all(|b| (0x20..0x7f).contains(&b)))
}

/// Turns a raw payload into the event to record.
pub fn parse_payload(bytes: &[u8], at: Timestamp, terminal: TerminalContext) -> Result<HookEvent, PayloadError> {
    let p: Payload = crate::json::from_slice(bytes).map_err(PayloadError::NotAnObject)?;
    let raw_id = match &p.session_id {
        Some(serde_json::Value::String(s)) => s.clone(),
        other => return Err(PayloadError::SessionId(format!("{other:?}"))),
    };
    let session_id = SessionId::parse(&raw_id).map_err(|e| PayloadError::SessionId(e.to_string()))?;
    let event = short_text(p.hook_event_name, 64).unwrap_or_else(|| "Unknown".to_owned());
    Ok(HookEvent {
        at,
        event,
        session_id,
        cwd: short_text(p.cwd, 4096),
        transcript_path: short_text(p.transcript_path, 4096),
        source: short_text(p.source, 64),
        reason: short_text(p.reason, 64),
        notification_type: short_text(p.notification_type, 64),
        terminal,
    })
}

/// The spool folder in Mimesis's data dir.
pub fn spool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("hooks")
}

/// Today's spool file (one per UTC day keeps files small and lets old ones be deleted).
pub fn spool_file(data_dir: &Path, at: Timestamp) -> PathBuf {
    spool_dir(data_dir).join(format!("events-{}.jsonl", &at.to_iso()[..10]))
}

/// Is this a spool file name, and of which day (`YYYY-MM-DD`)?
pub fn spool_day(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let day = name.strip_prefix("events-")?.strip_suffix(".jsonl")?;
    (day.len() == 10 && day.bytes().all(|b| b.is_ascii_digit() || b == b'-')).then_some(day)
}

/// The hook's own log: why an invocation recorded nothing.
pub fn log_file(data_dir: &Path) -> PathBuf {
    spool_dir(data_dir).join("hook.log")
}

/// Reads one spool line. Anything malformed (a torn write, a hand-edited file) is `None`.
pub fn parse_spool_line(line: &[u8]) -> Option<HookEvent> {
    if line.len() > MAX_SPOOL_LINE {
        return None;
    }
    crate::json::from_slice(line).ok()
}

/// The marker file of seed 001 (SPEC C1): `<cwd>/.claude/compacted.<newSessionId>.marker`.
pub fn marker_path(cwd: &Path, id: &SessionId) -> PathBuf {
    cwd.join(".claude").join(format!("compacted.{id}.marker"))
}
