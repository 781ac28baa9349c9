//! `TrackedSession`: one roster row, the shape the UI, the tray and `mimesis ls --json`
//! share (SPEC W4, seed 001), its typed patch ([`SessionPatch`], what changed between two
//! rows) and the store's events (SPEC W7). Field names are the contract; see docs/ipc.md.
//! Inside Rust, changes travel as the typed patch; JSON is made only at the edges.

use serde::de::Deserializer;
use serde::ser::{Error as _, Serializer};
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::cwd_files::StatusReport;
use crate::ids::SessionId;
use crate::job::{Job, SessionKind};
use crate::status::Status;
use crate::supervision::view::Supervision;

/// Token usage, each API message counted once.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Default, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

/// Tokens per model, sorted by model name, serialized as the map it stands for. A session
/// names one model or two: a short list, where a tree's first node alone would take most
/// of a kilobyte per session.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
pub struct ByModel(Vec<(String, Usage)>);

impl ByModel {
    pub fn get_mut(&mut self, model: &str) -> Option<&mut Usage> {
        let i = self.0.binary_search_by(|(m, _)| m.as_str().cmp(model)).ok()?;
        Some(&mut self.0[i].1)
    }

    /// Adds `usage` to `model`'s, which is new if it was not there.
    pub fn add(&mut self, model: &str, usage: &Usage) {
        match self.0.binary_search_by(|(m, _)| m.as_str().cmp(model)) {
            Ok(i) => self.0[i].1.add(usage),
            Err(i) => self.0.insert(i, (model.to_owned(), *usage)),
        }
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Usage)> {
        self.0.iter().map(|(m, u)| (m.as_str(), u))
    }

    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
}

impl FromIterator<(String, Usage)> for ByModel {
    fn from_iter<I: IntoIterator<Item = (String, Usage)>>(iter: I) -> Self {
        let mut by = ByModel::default();
        for (m, u) in iter {
            by.add(&m, &u);
        }
        by
    }
}

impl Serialize for ByModel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(m, u)| (m, u)))
    }
}

impl<'de> Deserialize<'de> for ByModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(std::collections::BTreeMap::<String, Usage>::deserialize(d)?.into_iter().collect())
    }
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    /// Adds `other`; totals saturate rather than wrap.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_input_tokens =
            self.cache_creation_input_tokens.saturating_add(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self.cache_read_input_tokens.saturating_add(other.cache_read_input_tokens);
    }
}

/// What Claude Code says it billed for a session (its last `cost-state` record).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Billed {
    pub cost_usd: f64,
    /// Summed over its models; includes calls the transcript does not show (compaction).
    pub usage: Usage,
}

/// A session's cost (docs/ipc.md `cost`), worked out by `crate::pricing`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// From the transcript's tokens and the price table; null when no model is priced.
    pub estimated_usd: Option<f64>,
    /// Models the session used that the table does not price (their tokens are left out).
    pub unknown_models: Vec<String>,
    pub prices_as_of: String,
    /// What Claude Code says it billed (2.1.330's `cost-state`), else null.
    pub billed: Option<Billed>,
}

/// The tool call a session is blocked on, and what it acts on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
pub struct PendingTool {
    pub tool: String,
    /// The input's file_path, command, pattern or url ("" when it has none).
    pub target: String,
}

/// Where the engine learned about a session.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// An external session found under a config root.
    #[default]
    Watcher,
    /// A session Mimesis runs in a PTY.
    Pty,
}

/// Declares the roster row and its patch from one list of fields, so the two can never
/// drift apart: [`TrackedSession::diff`] compares field by field (no serialisation), and
/// [`SessionPatch`] carries only what changed.
macro_rules! roster_row {
    ($( $(#[$meta:meta])* $field:ident : $ty:ty, )*) => {
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        #[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
        #[serde(rename_all = "camelCase")]
        pub struct TrackedSession {
            $( $(#[$meta])* pub $field: $ty, )*
        }

        /// The fields of a [`TrackedSession`] that changed: each `Some` holds the new value
        /// (for a nullable field, `Some(None)` means it became null).
        #[derive(Deserialize, Clone, PartialEq, Debug, Default)]
        #[serde(rename_all = "camelCase")]
        pub struct SessionPatch {
            $( #[serde(default, deserialize_with = "present")] pub $field: Option<$ty>, )*
        }

        impl TrackedSession {
            /// What changed from `before` to `self`. Empty when nothing did.
            pub fn diff(&self, before: &TrackedSession) -> SessionPatch {
                SessionPatch { $( $field: (self.$field != before.$field).then(|| self.$field.clone()), )* }
            }

            /// Applies a patch (what a face holding rows does with an `updated` event).
            pub fn apply(&mut self, patch: SessionPatch) {
                $( if let Some(v) = patch.$field { self.$field = v; } )*
            }
        }

        impl SessionPatch {
            pub fn is_empty(&self) -> bool {
                true $( && self.$field.is_none() )*
            }

            /// The names (camelCase, as in JSON) of the fields it carries.
            pub fn fields(&self) -> Vec<&'static str> {
                let mut v = Vec::new();
                $( if self.$field.is_some() { v.push(camel!($field)); } )*
                v
            }
        }

        /// `{"status": …, "usage": {…}}`: the changed fields only, keys sorted at every
        /// level, as `updated` events have always been written (docs/ipc.md).
        impl Serialize for SessionPatch {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = serde_json::Map::new();
                $(
                    if let Some(v) = &self.$field {
                        map.insert(camel!($field).to_owned(), serde_json::to_value(v).map_err(S::Error::custom)?);
                    }
                )*
                // (serde_json keeps insertion order: sorted here, as always written.)
                crate::json::sorted(serde_json::Value::Object(map)).serialize(s)
            }
        }
    };
}

/// A field name in camelCase, at compile time.
macro_rules! camel {
    (session_id) => {
        "sessionId"
    };
    (project_id) => {
        "projectId"
    };
    (repo_root) => {
        "repoRoot"
    };
    (has_pending_tool_use) => {
        "hasPendingToolUse"
    };
    (pending_tool) => {
        "pendingTool"
    };
    (last_activity_at) => {
        "lastActivityAt"
    };
    (created_at) => {
        "createdAt"
    };
    (api_error) => {
        "apiError"
    };
    (compaction_count) => {
        "compactionCount"
    };
    (superseded_by) => {
        "supersededBy"
    };
    (superseded_at) => {
        "supersededAt"
    };
    (work_chain_id) => {
        "workChainId"
    };
    (work_chain_name) => {
        "workChainName"
    };
    (chain_length) => {
        "chainLength"
    };
    (transcript_path) => {
        "transcriptPath"
    };
    (permission_mode) => {
        "permissionMode"
    };
    (malformed_lines) => {
        "malformedLines"
    };
    (malformed_fields) => {
        "malformedFields"
    };
    (status_file) => {
        "statusFile"
    };
    ($f:ident) => {
        stringify!($f)
    };
}

/// A present field of a patch, null included.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

roster_row! {
    session_id: SessionId,
    project_id: String,
    cwd: Option<String>,
    repo_root: Option<String>,
    branch: Option<String>,
    goal: Option<String>,
    summary: Option<String>,
    title: Option<String>,
    status: Status,
    has_pending_tool_use: bool,
    pending_tool: Option<PendingTool>,
    last_activity_at: Timestamp,
    created_at: Option<Timestamp>,
    model: Option<String>,
    usage: Usage,
    api_error: bool,
    compaction_count: u32,
    superseded: bool,
    superseded_by: Option<SessionId>,
    superseded_at: Option<Timestamp>,
    work_chain_id: Option<String>,
    work_chain_name: Option<String>,
    /// Sessions in the work chain (1 when alone).
    chain_length: u32,
    source: Source,
    /// Present for a session Mimesis runs in a PTY (`source: pty`), else null.
    supervision: Option<Supervision>,
    live: bool,
    pid: Option<u32>,
    transcript_path: String,
    permission_mode: Option<String>,
    malformed_lines: u64,
    /// Values in well-formed lines that cannot be right (e.g. a token count of `1.5e300`
    /// or `-3`), counted and taken as absent. (Absent in rows from older versions.)
    #[serde(default)]
    malformed_fields: u64,
    /// The session's status file (`<cwd>/.claude/status.<id>.md`) while it is trusted
    /// (SPEC W6), else null.
    status_file: Option<StatusReport>,
    /// The name Claude Code gave the session (2.1.330's registry: `proj-73`), else null.
    name: Option<String>,
    /// What the session cost: estimated from its tokens and the price table, and what
    /// Claude Code says it billed (docs/ipc.md `cost`).
    #[serde(default)]
    cost: Cost,
    /// Subagents working for the session right now, as its SubagentStart/SubagentStop
    /// hooks (2.1.330) tell; 0 without hooks or when the turn is over.
    #[serde(default)]
    subagents: u32,
    /// The row comes from a first quick read of its file's ends while the initial index
    /// runs: its usage and cost may still grow and it shows no pending tool yet. Absent
    /// (false) once the file was read in full, and in every row `mimesis ls` prints.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    provisional: bool,
    /// The SSH destination of the machine the session runs on (issue 13), as the user
    /// gave it; null for a session on this machine.
    #[serde(default)]
    host: Option<String>,
    /// How it runs: `interactive` (a terminal of its own, or supervised here), `background`
    /// (Claude Code's background service, 2.1.332), null when unknown (docs/ipc.md `kind`).
    #[serde(default)]
    kind: Option<SessionKind>,
    /// A background session's job (docs/ipc.md `job`), else null.
    #[serde(default)]
    job: Option<Job>,
}

/// What the store tells its consumers (SPEC W7).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum StoreEvent {
    Discovered { session: Box<TrackedSession> },
    Updated { session_id: SessionId, changes: Box<SessionPatch> },
    Removed { session_id: SessionId },
}

impl StoreEvent {
    pub fn session_id(&self) -> &SessionId {
        match self {
            StoreEvent::Discovered { session } => &session.session_id,
            StoreEvent::Updated { session_id, .. } | StoreEvent::Removed { session_id } => session_id,
        }
    }
}

#[cfg(test)]
mod tests;
