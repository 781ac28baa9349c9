//! Answering a permission request from Mimesis (issue 12): what Claude Code's
//! `PermissionRequest` hook (`mimesis hook`), a running face (the window, `mimesis watch`,
//! `mimesis run`) and `mimesis pending / approve / deny` say to each other over the face's
//! socket in the data dir — one JSON object per line — and what the hook prints for Claude
//! Code. docs/ipc.md has the shapes.
//!
//! Nothing here decides anything: a decision only ever comes from a user's explicit
//! action in a face or the CLI. No face, no answer in time, a face that goes away: the hook
//! prints nothing, and Claude Code's own dialog decides.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::text::clean_text;
use crate::transcript::TARGET_KEYS;

/// The socket of the face that answers, in the data dir (owner-only).
pub const SOCKET: &str = "approvals.sock";

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// How long the hook waits for a decision unless `MIMESIS_APPROVAL_WAIT_SECS` says
/// otherwise; Claude Code's dialog stays usable all along.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);
pub const WAIT_ENV: &str = "MIMESIS_APPROVAL_WAIT_SECS";

/// The longest line either side reads.
pub const MAX_LINE: usize = 256 * 1024;

/// Messages to a face.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum ToFace {
    /// From the hook: the connection stays open until the face answers with a
    /// [`Decision`] (or the hook goes away: then the request is gone).
    Request(Request),
    /// Open requests; answered with [`PendingList`].
    List,
    /// Answers one request (its id, or a session id or unique prefix of one); answered with
    /// [`Decided`].
    #[serde(rename_all = "camelCase")]
    Decide { target: String, behavior: Behavior, message: Option<String> },
}

/// What Claude Code asks permission for, as the hook read it from its payload.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub session_id: SessionId,
    pub tool: String,
    /// The command, the file, the URL… (cleaned, at most 300 characters).
    pub target: Option<String>,
    pub cwd: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Behavior {
    Allow,
    Deny,
}

/// A face's answer to the hook. `behavior: None`: no decision (the dialog decides).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub behavior: Option<Behavior>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An open request as faces and `mimesis pending --json` show it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    /// Unguessable and single-use.
    pub id: String,
    #[serde(flatten)]
    pub request: Request,
    pub since: Timestamp,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PendingList {
    pub pending: Vec<Pending>,
}

/// The reply to [`ToFace::Decide`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    /// The request answered, or why none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<Pending>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The request in a `PermissionRequest` hook payload (`tool_name`, `tool_input`).
pub fn request_of(session_id: SessionId, cwd: Option<String>, payload: &Value) -> Request {
    let tool = payload.get("tool_name").and_then(Value::as_str).unwrap_or("tool");
    let input = payload.get("tool_input");
    let target = TARGET_KEYS.iter().find_map(|k| {
        let v = input?.get(*k)?;
        let text = match v {
            Value::String(s) => s.as_str(),
            // AskUserQuestion: its first question.
            Value::Array(items) => items.first()?.get("question")?.as_str()?,
            _ => return None,
        };
        Some(clean_text(text.lines().next().unwrap_or(""), 300))
    });
    Request { session_id, tool: clean_text(tool, 100), target, cwd }
}

/// What the hook prints on stdout for Claude Code: the documented `PermissionRequest`
/// output, or nothing for no decision.
pub fn hook_output(d: &Decision) -> Option<String> {
    let behavior = match d.behavior? {
        Behavior::Allow => "allow",
        Behavior::Deny => "deny",
    };
    let mut decision = serde_json::json!({ "behavior": behavior });
    if let (Behavior::Deny, Some(m)) = (d.behavior?, &d.message) {
        decision["message"] = Value::String(m.clone());
    }
    let out = serde_json::json!({
        "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision }
    });
    Some(out.to_string())
}

/// A new request id: 128 random bits, hex.
pub fn new_id(random: [u8; 16]) -> String {
    random.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hook_prints_claude_codes_documented_output_or_nothing() {
        let allow = Decision { behavior: Some(Behavior::Allow), message: Some("ignored".into()) };
        let v: Value = serde_json::from_str(&hook_output(&allow).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let deny = Decision { behavior: Some(Behavior::Deny), message: Some("use the staging host".into()) };
        let v: Value = serde_json::from_str(&hook_output(&deny).unwrap()).unwrap();
        assert_eq!(v["hookSpecificOutput"]["decision"], json!({"behavior": "deny", "message": "use the staging host"}));
        assert_eq!(hook_output(&Decision::default()), None, "no decision: nothing on stdout");
    }

    #[test]
    fn a_request_names_the_tool_and_its_target_as_text() {
        let id = SessionId::parse("s1").unwrap();
        let p = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build\n&& echo \u{1b}[31mdone", "description": "x"}});
        let r = request_of(id.clone(), None, &p);
        assert_eq!((r.tool.as_str(), r.target.as_deref()), ("Bash", Some("rm -rf build")));
        let q = json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": "Which DB?"}]}});
        assert_eq!(request_of(id.clone(), None, &q).target.as_deref(), Some("Which DB?"));
        assert_eq!(request_of(id, None, &json!({})).tool, "tool");
    }

    #[test]
    fn messages_round_trip_with_their_op() {
        let m = ToFace::Decide { target: "ab".into(), behavior: Behavior::Deny, message: None };
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(s, r#"{"op":"decide","target":"ab","behavior":"deny","message":null}"#);
        assert_eq!(serde_json::from_str::<ToFace>(&s).unwrap(), m);
        assert_eq!(serde_json::to_string(&ToFace::List).unwrap(), r#"{"op":"list"}"#);
    }
}
