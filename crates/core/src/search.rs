//! Search over the history of every session (issue 35, SPEC X8): what a search asks for and
//! what it finds, the query language, the text of each timeline item worth searching, and
//! snippets. Pure: the index (SQLite FTS5) lives in `mimesis-search`, the faces only render
//! [`Results`].
//!
//! - [`query`]: the query language people already know (words ANDed, case-insensitive;
//!   "quoted phrases"; a leading `-` excludes; a trailing `*` is a prefix), turned into FTS5
//!   syntax where every word the user typed is a quoted string, never an operator.
//! - [`extract`]: the searchable documents of a transcript, read through the timeline's own
//!   reader ([`crate::timeline::TimelineBuilder`]): a hit's `uuid` is the timeline item's.
//! - [`snippet`]: one line around the first match, with where the matches are.

pub mod extract;
pub mod query;
pub mod snippet;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::SessionId;

/// What a piece of text was.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SearchKind"))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// What the user typed (a prompt, a `! command`, a `/command`).
    Prompt,
    /// The assistant's reply.
    Reply,
    /// A tool call's input: a Bash command, a file path, an edit, a pattern.
    ToolCall,
    /// What a tool (or a `! command`) gave back.
    ToolResult,
    Thinking,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Prompt, Kind::Reply, Kind::ToolCall, Kind::ToolResult, Kind::Thinking];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::Reply => "reply",
            Kind::ToolCall => "tool_call",
            Kind::ToolResult => "tool_result",
            Kind::Thinking => "thinking",
        }
    }

    /// The number the index stores.
    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn from_code(n: i64) -> Option<Kind> {
        Kind::ALL.get(usize::try_from(n).ok()?).copied()
    }

    pub fn parse(s: &str) -> Result<Kind, String> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            format!("{:?} is not a kind of text; use prompt, reply, tool_call, tool_result or thinking", s)
        })
    }
}

/// The most hits one search returns.
pub const MAX_LIMIT: usize = 1000;
/// Hits returned when the request names no limit.
pub const DEFAULT_LIMIT: usize = 20;
/// `total` counts matches up to this many (or the limit, when higher); past it,
/// `totalCapped` is set.
pub const TOTAL_CAP: usize = 200;

/// One search (the CLI's flags, the window's field, a `search` request to another
/// machine). The JSON is camelCase (docs/ipc.md).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SearchRequest"))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Request {
    /// The query as typed ([`query::parse`]).
    pub query: String,
    /// Only these kinds of text (none: all).
    pub kinds: Vec<Kind>,
    /// Only sessions whose project folder or working directory contains this.
    pub project: Option<String>,
    /// Only what happened at or after this instant.
    pub since: Option<Timestamp>,
    /// Only tool calls that read, edited or wrote this file (a path, or the end of one).
    pub file: Option<String>,
    /// At most this many hits ([`DEFAULT_LIMIT`] when absent, at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
}

impl Request {
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
    }

    /// The query, checked: an error is one sentence for the user.
    pub fn checked(&self) -> Result<query::Query, String> {
        let file = self.file.as_deref().map(str::trim).filter(|f| !f.is_empty());
        let q = match query::parse(&self.query) {
            Ok(q) => q,
            Err(query::QueryError::Empty) if file.is_some() => query::Query::default(),
            Err(e) => return Err(e.to_string()),
        };
        if let Some(f) = file {
            snippet::check_path(f)?;
        }
        if q.all.is_empty() && file.is_none() {
            return Err(if q.none.is_empty() {
                query::QueryError::Empty.to_string()
            } else {
                query::QueryError::OnlyExclusions.to_string()
            });
        }
        if let Some(p) = &self.project
            && p.len() > query::MAX_QUERY_BYTES
        {
            return Err("the project is longer than any path; give a folder name or path".into());
        }
        Ok(q)
    }
}

/// One place the query was found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SearchHit"))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub session_id: SessionId,
    /// The machine (an SSH destination); null on this one.
    pub host: Option<String>,
    /// The timeline item: what `open` scrolls to and highlights.
    pub uuid: String,
    /// A tool result whose call the index could not place: the call's `toolUseId`, which
    /// finds it in the timeline instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    pub at: Timestamp,
    pub kind: Kind,
    /// One line of the text around the first match, as plain text.
    pub snippet: String,
    /// Where the matches are in `snippet`: `[start, end)` in characters (Unicode code
    /// points, not bytes or UTF-16 units), in order, not overlapping.
    pub marks: Vec<[usize; 2]>,
    /// The session's project folder (`projectId`).
    pub project: String,
    /// The session's work chain, when it is part of one.
    #[serde(default)]
    pub work_chain_id: Option<String>,
    #[serde(default)]
    pub work_chain_name: Option<String>,
    /// The session is an earlier segment of its chain (a `/clear` or compaction went on in
    /// another one): the hit is in the chain's history.
    #[serde(default)]
    pub superseded: bool,
    /// For a hit in an earlier segment: the chain's newest session (where its work went on),
    /// what the window opens to show the chain.
    #[serde(default)]
    pub chain_head: Option<SessionId>,
}

/// What a search found, most recent first.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SearchResults"))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Results {
    pub hits: Vec<Hit>,
    /// How many matches there are in all (at most [`TOTAL_CAP`] counted per machine).
    pub total: usize,
    /// There are more than `total` (the count stopped at [`TOTAL_CAP`]).
    #[serde(default)]
    pub total_capped: bool,
    /// Machines that could not be searched, each with why (in a sentence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<HostFailure>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HostFailure {
    pub host: String,
    pub message: String,
}

impl Results {
    /// Another machine's results merged in (its hits get `host`): most recent first, at
    /// most `limit`.
    pub fn merge(&mut self, host: &str, mut other: Results, limit: usize) {
        for h in &mut other.hits {
            h.host = Some(host.to_owned());
        }
        self.hits.append(&mut other.hits);
        self.hits.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.uuid.cmp(&b.uuid)));
        self.hits.truncate(limit);
        self.total += other.total;
        self.total_capped |= other.total_capped;
        self.failed.append(&mut other.failed);
    }
}

/// How far the index of this machine is (the window's progress while it is first built).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "SearchProgress"))]
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Still reading transcripts it has not read before.
    pub indexing: bool,
    /// Transcripts read so far, of `total` to read.
    pub done: usize,
    pub total: usize,
}

/// `--since`: a date (`2026-11-01`, midnight UTC), an instant (RFC 3339), or a time ago
/// (`90m`, `12h`, `7d`, `2w`).
pub fn parse_since(s: &str, now: Timestamp) -> Result<Timestamp, String> {
    let s = s.trim();
    let bad = || {
        format!(
            "{:?} is not a time: give a date (2026-11-01), an instant (2026-11-01T12:00:00Z) or a time ago (90m, 12h, 7d, 2w)",
            crate::text::clean_text(s, 40)
        )
    };
    if let Some(t) = Timestamp::parse(s) {
        return Ok(t);
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let ms = d.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc().timestamp_millis();
        return Ok(Timestamp::from_millis(ms));
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let unit_ms: i64 = match unit.trim() {
        "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(bad()),
    };
    let ago = n.checked_mul(unit_ms).ok_or_else(bad)?;
    Ok(Timestamp::from_millis(now.millis().saturating_sub(ago)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_dates_instants_and_times_ago() {
        let now = Timestamp::parse("2026-11-10T12:00:00Z").unwrap();
        assert_eq!(parse_since("2026-11-01", now).unwrap(), Timestamp::parse("2026-11-01T00:00:00Z").unwrap());
        assert_eq!(
            parse_since("2026-11-01T08:30:00+01:00", now).unwrap(),
            Timestamp::parse("2026-11-01T07:30:00Z").unwrap()
        );
        assert_eq!(parse_since("7d", now).unwrap(), Timestamp::parse("2026-11-03T12:00:00Z").unwrap());
        assert_eq!(parse_since("90m", now).unwrap(), Timestamp::parse("2026-11-10T10:30:00Z").unwrap());
        for bad in ["", "yesterday", "7", "d", "-3d", "99999999999999999999d", "2026-13-01", "\u{1b}[2J"] {
            let e = parse_since(bad, now).unwrap_err();
            assert!(!e.contains('\u{1b}') && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn merged_results_are_newest_first_with_their_host() {
        let hit = |at: &str, uuid: &str| Hit {
            session_id: SessionId::parse("s").unwrap(),
            host: None,
            uuid: uuid.into(),
            tool_use_id: None,
            at: Timestamp::parse(at).unwrap(),
            kind: Kind::Prompt,
            snippet: String::new(),
            marks: Vec::new(),
            project: "p".into(),
            work_chain_id: None,
            work_chain_name: None,
            superseded: false,
            chain_head: None,
        };
        let mut local = Results {
            hits: vec![hit("2026-11-03T00:00:00Z", "a"), hit("2026-11-01T00:00:00Z", "b")],
            total: 2,
            ..Default::default()
        };
        let remote =
            Results { hits: vec![hit("2026-11-02T00:00:00Z", "c")], total: 1500, total_capped: true, failed: vec![] };
        local.merge("devbox", remote, 2);
        let order: Vec<_> = local.hits.iter().map(|h| (h.uuid.as_str(), h.host.as_deref())).collect();
        assert_eq!(order, [("a", None), ("c", Some("devbox"))]);
        assert_eq!((local.total, local.total_capped), (1502, true));
    }

    #[test]
    fn kinds_round_trip_and_unknown_ones_are_a_sentence() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Ok(k));
            assert_eq!(Kind::from_code(k.code()), Some(k));
        }
        assert!(Kind::parse("tool").unwrap_err().contains("tool_call"));
        assert_eq!(Kind::from_code(-1), None);
    }

    #[test]
    fn a_request_needs_something_to_look_for() {
        let r =
            |q: &str, file: Option<&str>| Request { query: q.into(), file: file.map(Into::into), ..Default::default() };
        assert!(r("", None).checked().is_err());
        assert!(r("-cache", None).checked().unwrap_err().contains("exclude"));
        assert!(r("", Some("src/store.rs")).checked().is_ok());
        assert!(r("-cache", Some("src/store.rs")).checked().is_ok());
        assert!(r("", Some("a\0b")).checked().is_err());
        assert_eq!(Request { limit: Some(0), ..Default::default() }.limit(), 1);
        assert_eq!(Request { limit: Some(1 << 40), ..Default::default() }.limit(), MAX_LIMIT);
    }
}
