//! `TrackedSession`: one roster row, the shape the UI, the tray and `mimesis ls --json`
//! share (SPEC W4, seed 001). Field names are the contract; see docs/ipc.md.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::cwd_files::StatusReport;
use crate::ids::SessionId;
use crate::status::Status;

/// Token usage, each API message counted once.
#[derive(Serialize, Deserialize, Default, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

/// The tool call a session is blocked on, and what it acts on.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
pub struct PendingTool {
    pub tool: String,
    /// The input's file_path, command, pattern or url ("" when it has none).
    pub target: String,
}

/// Where the engine learned about a session.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// An external session found under a config root.
    #[default]
    Watcher,
    /// A session Mimesis runs in a PTY.
    Pty,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TrackedSession {
    pub session_id: SessionId,
    pub project_id: String,
    pub cwd: Option<String>,
    pub repo_root: Option<String>,
    pub branch: Option<String>,
    pub goal: Option<String>,
    pub summary: Option<String>,
    pub title: Option<String>,
    pub status: Status,
    pub has_pending_tool_use: bool,
    pub pending_tool: Option<PendingTool>,
    pub last_activity_at: Timestamp,
    pub created_at: Option<Timestamp>,
    pub model: Option<String>,
    pub usage: Usage,
    pub api_error: bool,
    pub compaction_count: u32,
    pub superseded: bool,
    pub superseded_by: Option<SessionId>,
    pub superseded_at: Option<Timestamp>,
    pub work_chain_id: Option<String>,
    pub work_chain_name: Option<String>,
    /// Sessions in the work chain (1 when alone).
    pub chain_length: u32,
    pub source: Source,
    /// Present for a session Mimesis runs in a PTY (`source: pty`), else null.
    pub supervision: Option<crate::supervise::view::Supervision>,
    pub live: bool,
    pub pid: Option<u32>,
    pub transcript_path: String,
    pub permission_mode: Option<String>,
    pub malformed_lines: u64,
    /// The session's status file (`<cwd>/.claude/status.<id>.md`) while it is trusted
    /// (SPEC W6), else null.
    pub status_file: Option<StatusReport>,
}

impl TrackedSession {
    /// The fields of `self` that differ from `before`, as a JSON object (the payload of an
    /// `updated` event). Empty when nothing changed.
    pub fn changes_since(&self, before: &TrackedSession) -> serde_json::Map<String, serde_json::Value> {
        let (serde_json::Value::Object(new), serde_json::Value::Object(old)) =
            (serde_json::to_value(self).unwrap_or_default(), serde_json::to_value(before).unwrap_or_default())
        else {
            return serde_json::Map::new();
        };
        new.into_iter().filter(|(k, v)| old.get(k) != Some(v)).collect()
    }
}
