//! A background session's job, as Claude Code's background service (2.1.332) keeps it in
//! `<config>/jobs/<id>/state.json` (docs/claude-code-observed.md "The background service"),
//! and what a roster row shows of it ([`Job`], [`SessionKind`]).
//!
//! The file is undocumented and untrusted: every field is optional, read through the depth
//! guard, text is cleaned and cut, ids are validated ([`JobId`], [`SessionId`]); a value
//! of the wrong type counts as absent. Nothing here builds a path: the I/O layer names the
//! folder from a validated [`JobId`] only.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::{JobId, SessionId};
use crate::status::{JobNeed, JobSignal, JobTempo};
use crate::text::{clean_text, strip_ansi};

/// A job file is a few kilobytes (a question's options at most); anything far bigger is
/// not one.
pub const MAX_STATE_BYTES: u64 = 1 << 20;

/// Text of a job (its detail, what it needs, its prompt) shown on a row: at most this many
/// characters.
pub const TEXT_MAX: usize = 300;

/// How a session runs, when known: in a terminal of its own (an interactive `claude`, or a
/// session Mimesis supervises in a PTY), or under Claude Code's background service.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    Interactive,
    Background,
}

/// What a row shows of a background session's job (docs/ipc.md `job`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// The service's short id (`claude agents --json`'s `id`): what `mimesis attach|logs|
    /// stop|respawn` and `claude attach|…` take.
    pub id: JobId,
    /// The job's state as `claude agents` shows it: `working`, `blocked` (a dialog waits
    /// for the user), `done`, `failed`, … (the service's word, cleaned); null when unknown.
    pub state: Option<String>,
    /// The service's one line about it ("starting…", the call under way, the question).
    pub detail: Option<String>,
    /// The prompt it was dispatched with.
    pub intent: Option<String>,
    /// The service's attempt: 1, one more at each restart after a crash (the last one seen
    /// while it ran); null when never seen running.
    pub attempt: Option<u32>,
    /// What it waits for while blocked ("approve Bash: …", "answer: …", "approve plan").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

/// What `jobs/<id>/state.json` says (only what Mimesis uses).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct JobState {
    /// `working`, `done`, `blocked`, `failed`, … (a short word, else absent).
    pub state: Option<String>,
    pub detail: Option<String>,
    /// `active`, `idle`, `blocked` (a short word, else absent).
    pub tempo: Option<String>,
    pub needs: Option<String>,
    pub intent: Option<String>,
    /// The job's label (also the registry's `name` once given).
    pub name: Option<String>,
    pub session_id: Option<SessionId>,
    /// `daemonShort`: the job's short id as the file says it.
    pub short: Option<JobId>,
    pub cwd: Option<String>,
    pub cli_version: Option<String>,
    /// The transcript's path (`linkScanPath`), unchecked: the caller checks it is the
    /// session's own transcript under the root before using it.
    pub transcript: Option<String>,
    pub updated_at: Option<Timestamp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawState {
    state: Option<serde_json::Value>,
    detail: Option<serde_json::Value>,
    tempo: Option<serde_json::Value>,
    needs: Option<serde_json::Value>,
    intent: Option<serde_json::Value>,
    name: Option<serde_json::Value>,
    session_id: Option<serde_json::Value>,
    daemon_short: Option<serde_json::Value>,
    cwd: Option<serde_json::Value>,
    cli_version: Option<serde_json::Value>,
    link_scan_path: Option<serde_json::Value>,
    updated_at: Option<serde_json::Value>,
}

fn string(v: &Option<serde_json::Value>) -> Option<&str> {
    v.as_ref()?.as_str()
}

/// A short lowercase word (`working`, `blocked`): at most 32 of `[a-z_-]`.
fn word(v: &Option<serde_json::Value>) -> Option<String> {
    let s = string(v)?;
    (!s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-'))
        .then(|| s.to_owned())
}

/// One line of untrusted text, cleaned and cut; absent when nothing is left.
fn text(v: &Option<serde_json::Value>, max: usize) -> Option<String> {
    let s = string(v)?;
    let cleaned = clean_text(&strip_ansi(crate::text::prefix(s, max * 4 + 16)), max);
    (!cleaned.is_empty()).then_some(cleaned)
}

/// A path-like string, as written (at most 4096 bytes, no control characters), unchecked.
fn path_text(v: &Option<serde_json::Value>) -> Option<String> {
    let s = string(v)?;
    (!s.is_empty() && s.len() <= 4096 && !s.chars().any(char::is_control)).then(|| s.to_owned())
}

pub(crate) fn timestamp_of(v: &serde_json::Value) -> Option<Timestamp> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().map(Timestamp::from_millis),
        serde_json::Value::String(s) => Timestamp::parse(s),
        _ => None,
    }
}

/// Reads a job file. Nothing when it is not a JSON object (or nests too deep).
pub fn parse_state(bytes: &[u8]) -> Option<JobState> {
    let raw: RawState = crate::json::from_slice(bytes).ok()?;
    Some(JobState {
        state: word(&raw.state),
        detail: text(&raw.detail, TEXT_MAX),
        tempo: word(&raw.tempo),
        needs: text(&raw.needs, TEXT_MAX),
        intent: text(&raw.intent, TEXT_MAX),
        name: text(&raw.name, 128),
        session_id: string(&raw.session_id).and_then(|s| SessionId::parse(s).ok()),
        short: string(&raw.daemon_short).and_then(|s| JobId::parse(s).ok()),
        cwd: path_text(&raw.cwd),
        cli_version: text(&raw.cli_version, 32),
        transcript: path_text(&raw.link_scan_path),
        updated_at: raw.updated_at.as_ref().and_then(timestamp_of),
    })
}

impl JobState {
    /// Is the session waiting for the user (`tempo: "blocked"`: a dialog is open)?
    pub fn blocked(&self) -> bool {
        self.tempo.as_deref() == Some("blocked")
    }

    /// The state a row shows: `claude agents`' word (`blocked` while a dialog waits, else
    /// the file's `state`).
    pub fn shown_state(&self) -> Option<String> {
        if self.blocked() { Some("blocked".to_owned()) } else { self.state.clone() }
    }

    /// What the job says about the session's status, as one more exact signal (used while
    /// the service runs a worker for it).
    pub fn signal(&self) -> JobSignal {
        let tempo = match (self.tempo.as_deref(), self.state.as_deref()) {
            (Some("blocked"), _) | (None, Some("blocked")) => JobTempo::Blocked(match self.needs.as_deref() {
                Some(n) if n.starts_with("answer") => JobNeed::Input,
                Some(n) if n.starts_with("approve") => JobNeed::Approval,
                _ => JobNeed::Unknown,
            }),
            (Some("active"), _) => JobTempo::Active,
            (Some("idle"), _) => JobTempo::Idle,
            (None, Some("working")) => JobTempo::Active,
            (None, Some("done" | "failed" | "idle")) => JobTempo::Idle,
            _ => JobTempo::Unknown,
        };
        JobSignal { tempo, updated_at: self.updated_at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_it_uses() {
        let s = parse_state(
            br#"{"state":"working","detail":"Writing bg","tempo":"blocked","needs":"approve Bash: echo bg > bg.txt",
            "intent":"write it","sessionId":"aa2e1246-11cc-48b1-aa61-76af4aa5d5aa","daemonShort":"aa2e1246",
            "cwd":"/p","cliVersion":"2.1.332","updatedAt":"2026-11-28T21:02:56.644Z","providerEnv":{"X":"1"}}"#,
        )
        .unwrap();
        assert_eq!(s.shown_state().as_deref(), Some("blocked"));
        assert_eq!(s.signal().tempo, JobTempo::Blocked(JobNeed::Approval));
        assert_eq!(s.short.unwrap().as_str(), "aa2e1246");
        assert_eq!(s.updated_at, Timestamp::parse("2026-11-28T21:02:56.644Z"));
    }

    #[test]
    fn tempo_and_needs_make_the_signal() {
        let sig = |json: &str| parse_state(json.as_bytes()).unwrap().signal().tempo;
        assert_eq!(sig(r#"{"state":"working","tempo":"active"}"#), JobTempo::Active);
        assert_eq!(sig(r#"{"state":"done","tempo":"idle"}"#), JobTempo::Idle);
        assert_eq!(
            sig(r#"{"state":"working","tempo":"idle"}"#),
            JobTempo::Idle,
            "the classifier's working, at the prompt"
        );
        assert_eq!(sig(r#"{"tempo":"blocked","needs":"answer: Which? (A · B)"}"#), JobTempo::Blocked(JobNeed::Input));
        assert_eq!(sig(r#"{"tempo":"blocked","needs":"approve plan"}"#), JobTempo::Blocked(JobNeed::Approval));
        assert_eq!(sig(r#"{"tempo":"blocked"}"#), JobTempo::Blocked(JobNeed::Unknown));
        assert_eq!(sig(r#"{"state":"working"}"#), JobTempo::Active);
        assert_eq!(sig(r#"{"state":"hibernating","tempo":"sideways"}"#), JobTempo::Unknown);
        assert_eq!(sig("{}"), JobTempo::Unknown);
    }

    #[test]
    fn hostile_values_are_absent_or_cleaned() {
        let s = parse_state(
            format!(
                r#"{{"state":"WORKING\u001b[2J","detail":"a\u001b]0;title\u0007b\u202e\n c{}","sessionId":"../../etc","daemonShort":"../x",
                "cwd":"/p\u0000x","tempo":7,"needs":["approve"],"updatedAt":{{"a":1}}}}"#,
                "x".repeat(100_000)
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!((s.state, s.tempo, s.needs), (None, None, None));
        let detail = s.detail.unwrap();
        assert!(detail.chars().count() <= TEXT_MAX + 1 && !detail.chars().any(char::is_control), "{detail:?}");
        assert!(!detail.contains('\u{202e}'));
        assert_eq!((s.session_id, s.short, s.cwd, s.updated_at), (None, None, None, None));
        assert!(parse_state(b"[1,2]").is_none());
        assert!(parse_state(b"{not json").is_none());
        assert!(parse_state("[".repeat(100_000).as_bytes()).is_none());
        assert!(parse_state(b"").is_none());
    }

    #[test]
    fn the_row_shape() {
        let job = Job {
            id: JobId::parse("aa2e1246").unwrap(),
            state: Some("done".into()),
            detail: Some("mock: the turn ended".into()),
            intent: Some("say hello".into()),
            attempt: Some(1),
            needs: None,
        };
        let v = serde_json::to_value(&job).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"id": "aa2e1246", "state": "done", "detail": "mock: the turn ended", "intent": "say hello", "attempt": 1})
        );
        assert_eq!(serde_json::from_value::<Job>(v).unwrap(), job);
        assert_eq!(serde_json::to_value(SessionKind::Background).unwrap(), "background");
        assert!(
            serde_json::from_value::<Job>(
                serde_json::json!({"id": "../../x", "state": null, "detail": null, "intent": null, "attempt": null})
            )
            .is_err()
        );
    }
}
