//! Files Mimesis reads in a session's working folder, `<cwd>/.claude/` (outside the
//! config roots): compaction markers `compacted.<newSessionId>.marker` (SPEC C1) and
//! status files `status.<sessionId>.md` (SPEC W6).
//!
//! Both are written by hooks and scripts, so their names and contents are untrusted
//! (C7): ids are validated, sizes are capped, the file must sit in the folder of the
//! session it names, and anything wrong is rejected with a reason for the log while
//! nothing changes. Pure: the files are read by `mimesis-watch` (bounded, regular files
//! only, no symlinks).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::status::Status;
use crate::text::clean_text;

/// A marker is three short fields.
pub const MAX_MARKER_BYTES: u64 = 4 * 1024;
/// A status file is a front matter and a short summary.
pub const MAX_STATUS_BYTES: u64 = 64 * 1024;
/// SPEC W6: a status file is trusted this long after its `updated` time.
pub const STATUS_FILE_TTL: Duration = Duration::from_secs(5 * 60);

const SUMMARY_MAX_CHARS: usize = 600;
const TASK_MAX_CHARS: usize = 300;

/// Why a file was not taken into account.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejected(pub String);

fn reject(s: impl Into<String>) -> Rejected {
    Rejected(s.into())
}

/// What a file in `<cwd>/.claude/` is to Mimesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CwdFile {
    Marker(SessionId),
    Status(SessionId),
}

/// Sorts a file name. Names of other files are `Ok(None)`; a name of our pattern with an
/// invalid id is rejected.
pub fn classify(name: &str) -> Result<Option<CwdFile>, Rejected> {
    if let Some(id) = name.strip_prefix("compacted.").and_then(|r| r.strip_suffix(".marker")) {
        return SessionId::parse(id).map(|id| Some(CwdFile::Marker(id))).map_err(|e| reject(e.to_string()));
    }
    if let Some(id) = name.strip_prefix("status.").and_then(|r| r.strip_suffix(".md")) {
        return SessionId::parse(id).map(|id| Some(CwdFile::Status(id))).map_err(|e| reject(e.to_string()));
    }
    Ok(None)
}

/// The folder holding a cwd's markers and status files.
pub fn dot_claude(cwd: &Path) -> PathBuf {
    cwd.join(".claude")
}

/// A compaction marker: `newSessionId` continues a session of `cwd` since `compactedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub new_session_id: SessionId,
    pub cwd: String,
    pub compacted_at: Timestamp,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMarker {
    new_session_id: String,
    cwd: String,
    compacted_at: String,
}

/// Parses a marker found in `<folder_cwd>/.claude/` under the name of `named`.
pub fn parse_marker(bytes: &[u8], named: &SessionId, folder_cwd: &str) -> Result<Marker, Rejected> {
    let raw: RawMarker = crate::json::from_slice(bytes).map_err(|e| reject(format!("not a marker: {e}")))?;
    let id = SessionId::parse(&raw.new_session_id).map_err(|e| reject(e.to_string()))?;
    if &id != named {
        return Err(reject(format!("names session {id}, but the file is named for {named}")));
    }
    if raw.cwd != folder_cwd {
        return Err(reject(format!("names cwd {:?}, but lies in {folder_cwd:?}", raw.cwd)));
    }
    let compacted_at = Timestamp::parse(&raw.compacted_at)
        .ok_or_else(|| reject(format!("{:?} is not a timestamp", raw.compacted_at)))?;
    Ok(Marker { new_session_id: id, cwd: raw.cwd, compacted_at })
}

/// The `status` values of a status file (seed 001).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Copy, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReportedStatus {
    Working,
    WaitingForApproval,
    WaitingForInput,
    Completed,
    Error,
    Blocked,
    Idle,
}

impl ReportedStatus {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => Self::Working,
            "waiting_for_approval" => Self::WaitingForApproval,
            "waiting_for_input" => Self::WaitingForInput,
            "completed" => Self::Completed,
            "error" => Self::Error,
            "blocked" => Self::Blocked,
            "idle" => Self::Idle,
            _ => return None,
        })
    }

    /// The roster status it means: finished, failed and blocked work waits for the user.
    pub fn status(self) -> Status {
        match self {
            Self::Working => Status::Working,
            Self::WaitingForApproval => Status::WaitingForApproval,
            Self::WaitingForInput | Self::Completed | Self::Error | Self::Blocked => Status::WaitingForInput,
            Self::Idle => Status::Idle,
        }
    }
}

/// A status file's content (docs/ipc.md `statusFile`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub status: ReportedStatus,
    pub updated: Timestamp,
    pub task: Option<String>,
    pub summary: Option<String>,
}

impl StatusReport {
    /// Trusted until `updated + ttl`.
    pub fn fresh(&self, now: Timestamp, ttl: Duration) -> bool {
        now < self.updated.plus(ttl)
    }
}

/// Parses a status file: a YAML front matter of `key: value` lines between `---` lines,
/// then a markdown summary. Only the flat keys Mimesis uses are understood; nested YAML,
/// a missing or unknown `status`, or a bad `updated` is rejected. A file without
/// `updated` counts from `mtime`.
pub fn parse_status_file(bytes: &[u8], mtime: Option<Timestamp>) -> Result<StatusReport, Rejected> {
    let text = std::str::from_utf8(bytes).map_err(|_| reject("not UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(reject("no front matter (the first line must be ---)"));
    }
    let (mut status, mut updated, mut task) = (None, None, None);
    let mut closed = false;
    for line in lines.by_ref() {
        let t = line.trim_end();
        if t == "---" || t == "..." {
            closed = true;
            break;
        }
        if t.trim().is_empty() || t.trim_start().starts_with('#') {
            continue;
        }
        if t.starts_with([' ', '\t', '-']) {
            return Err(reject(format!("nested YAML is not supported: {:?}", prefix(t))));
        }
        let Some((key, value)) = t.split_once(':') else {
            return Err(reject(format!("not a `key: value` line: {:?}", prefix(t))));
        };
        let value = unquote(value.trim()).map_err(|e| reject(format!("{}: {e}", key.trim())))?;
        match key.trim() {
            "status" => {
                status = Some(ReportedStatus::parse(&value).ok_or_else(|| reject(format!("unknown status {value:?}")))?)
            }
            "updated" => {
                updated = Some(
                    Timestamp::parse(&value).ok_or_else(|| reject(format!("updated {value:?} is not a timestamp")))?,
                )
            }
            "task" => task = Some(clean_text(&value, TASK_MAX_CHARS)).filter(|t| !t.is_empty()),
            _ => {}
        }
    }
    if !closed {
        return Err(reject("the front matter is not closed by ---"));
    }
    let status = status.ok_or_else(|| reject("no status"))?;
    let updated = updated.or(mtime).ok_or_else(|| reject("no updated time"))?;
    let body: Vec<&str> = lines.collect();
    let body = body.join("\n");
    let body = body.trim_start();
    let body = body.strip_prefix("## Summary").unwrap_or(body);
    let summary = Some(clean_text(body, SUMMARY_MAX_CHARS)).filter(|s| !s.is_empty());
    Ok(StatusReport { status, updated, task, summary })
}

fn prefix(s: &str) -> String {
    s.chars().take(60).collect()
}

/// A YAML scalar: plain, or in matching single or double quotes. Flow collections and
/// block scalars are not scalars Mimesis reads.
fn unquote(v: &str) -> Result<String, Rejected> {
    if v.starts_with(['[', '{', '|', '>', '&', '*', '!']) {
        return Err(reject(format!("{:?} is not a plain value", prefix(v))));
    }
    for q in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(q) {
            return match rest.strip_suffix(q) {
                Some(inner) => Ok(inner.to_owned()),
                None => Err(reject(format!("unclosed quote in {:?}", prefix(v)))),
            };
        }
    }
    // A trailing comment.
    Ok(v.split(" #").next().unwrap_or(v).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(s: &str) -> SessionId {
        SessionId::parse(s).unwrap()
    }

    #[test]
    fn names_are_classified_and_hostile_ids_rejected() {
        assert_eq!(classify("compacted.abc-1.marker"), Ok(Some(CwdFile::Marker(sid("abc-1")))));
        assert_eq!(classify("status.abc-1.md"), Ok(Some(CwdFile::Status(sid("abc-1")))));
        assert_eq!(classify("settings.json"), Ok(None));
        for bad in ["compacted.../../x.marker", "status...md", "compacted..marker", "status.a b.md", "status.a/b.md"] {
            assert!(classify(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn markers_must_agree_with_their_name_and_folder() {
        let good = br#"{"newSessionId":"abc","cwd":"/p","compactedAt":"2026-01-11T18:00:00.000Z"}"#;
        let m = parse_marker(good, &sid("abc"), "/p").unwrap();
        assert_eq!(m.compacted_at, Timestamp::parse("2026-01-11T18:00:00Z").unwrap());
        assert!(parse_marker(good, &sid("other"), "/p").is_err());
        assert!(parse_marker(good, &sid("abc"), "/q").is_err());
        for bad in [
            &br#"{"newSessionId":"../../etc","cwd":"/p","compactedAt":"2026-01-11T18:00:00.000Z"}"#[..],
            br#"{"newSessionId":"abc","cwd":"/p","compactedAt":"yesterday"}"#,
            br#"{"newSessionId":"abc","cwd":"/p"}"#,
            b"not json",
            b"",
        ] {
            assert!(parse_marker(bad, &sid("abc"), "/p").is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn status_files_parse_front_matter_and_summary() {
        let f = "---\nstatus: blocked\nupdated: 2026-01-11T18:00:00Z\ntask: \"Implementing feature X\"\nother: ignored\n---\n\n## Summary\nWorking on the\nauth module.\n";
        let r = parse_status_file(f.as_bytes(), None).unwrap();
        assert_eq!(r.status, ReportedStatus::Blocked);
        assert_eq!(r.status.status(), Status::WaitingForInput);
        assert_eq!(r.task.as_deref(), Some("Implementing feature X"));
        assert_eq!(r.summary.as_deref(), Some("Working on the auth module."));
        let t = Timestamp::parse("2026-01-11T18:00:00Z").unwrap();
        assert!(r.fresh(t.plus(Duration::from_secs(299)), STATUS_FILE_TTL));
        assert!(!r.fresh(t.plus(Duration::from_secs(300)), STATUS_FILE_TTL));
        // No `updated`: the file's mtime.
        let r = parse_status_file(b"---\nstatus: working\n---\n", Some(t)).unwrap();
        assert_eq!((r.status, r.updated, r.summary), (ReportedStatus::Working, t, None));
    }

    #[test]
    fn invalid_status_files_are_rejected() {
        for bad in [
            "status: working\n",
            "---\nstatus: working\n",
            "---\nstatus: dancing\n---\n",
            "---\nstatus: [working\n---\n",
            "---\nstatus: 'working\n---\n",
            "---\nupdated: 2026-01-11T18:00:00Z\n---\n",
            "---\nstatus: working\nupdated: soon\n---\n",
            "---\nstatus: working\n  nested: x\n---\n",
            "---\njust text\n---\n",
        ] {
            assert!(parse_status_file(bad.as_bytes(), Some(Timestamp::from_millis(0))).is_err(), "{bad:?}");
        }
        assert!(parse_status_file(&[0xff, 0xfe], None).is_err());
    }
}
