//! The searchable documents of a transcript: each record is read through the timeline's
//! own reader ([`TimelineBuilder`]), so a document's `uuid` is the timeline item's and its
//! kind follows how the timeline shows it. What the timeline does not show (request
//! shapes, file-history snapshots, attachments) is not searched; images are `[image]`.

use std::collections::HashSet;

use serde_json::Value;

use super::Kind;
use crate::clock::Timestamp;
use crate::timeline::{TimelineBuilder, TimelineItem};

/// What a tool call did to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    Read,
    Edit,
    Write,
}

impl FileOp {
    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn from_code(n: i64) -> Option<FileOp> {
        [FileOp::Read, FileOp::Edit, FileOp::Write].get(usize::try_from(n).ok()?).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Edit => "edited",
            FileOp::Write => "wrote",
        }
    }

    /// What a tool of this name does to its `file_path`.
    pub fn of_tool(tool: &str) -> Option<FileOp> {
        match tool {
            "Read" | "NotebookRead" => Some(FileOp::Read),
            "Edit" | "MultiEdit" | "NotebookEdit" => Some(FileOp::Edit),
            "Write" => Some(FileOp::Write),
            _ => None,
        }
    }
}

/// One piece of searchable text.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// The timeline item (for a tool result whose call is in another record: the
    /// placeholder item's, see `tool_use_id`).
    pub uuid: String,
    /// A tool call's or tool result's id: a result is shown on its call's item.
    pub tool_use_id: Option<String>,
    pub kind: Kind,
    pub text: String,
    pub at: Option<Timestamp>,
    /// The file a tool call read, edited or wrote.
    pub file: Option<(FileOp, String)>,
}

fn strings_of(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        Value::Array(a) => a.iter().for_each(|v| strings_of(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings_of(v, out)),
        Value::Number(n) => {
            out.push(' ');
            out.push_str(&n.to_string());
        }
        _ => {}
    }
}

/// The documents of one record, in a fixed order: a document is found again by its place
/// in this list (`part`).
pub fn record_docs(record: &Value) -> Vec<Doc> {
    let mut b = TimelineBuilder::new();
    b.push_record(record, &mut Vec::new());
    let mut result_ids = record
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|b| b.get("tool_use_id").and_then(Value::as_str).unwrap_or("").to_owned());
    let mut out = Vec::new();
    for item in b.into_items() {
        let doc = |uuid: String, kind: Kind, text: String, at: Option<Timestamp>| Doc {
            uuid,
            tool_use_id: None,
            kind,
            text,
            at,
            file: None,
        };
        match item {
            TimelineItem::Prompt { uuid, timestamp, text } => out.push(doc(uuid, Kind::Prompt, text, timestamp)),
            TimelineItem::AssistantText { uuid, timestamp, text, .. } => {
                out.push(doc(uuid, Kind::Reply, text, timestamp))
            }
            TimelineItem::Thinking { uuid, timestamp, text, redacted: false } => {
                out.push(doc(uuid, Kind::Thinking, text, timestamp))
            }
            TimelineItem::ToolCall { uuid, timestamp, tool_use_id, tool, input, .. } => {
                let mut text = tool.clone();
                strings_of(&input, &mut text);
                let file = FileOp::of_tool(&tool).and_then(|op| {
                    let path = input.get("file_path").or_else(|| input.get("notebook_path"))?.as_str()?;
                    Some((op, path.to_owned()))
                });
                let tool_use_id = Some(tool_use_id).filter(|t| !t.is_empty());
                out.push(Doc { uuid, tool_use_id, kind: Kind::ToolCall, text, at: timestamp, file });
            }
            TimelineItem::System { uuid, timestamp, subtype, text } => match subtype.as_str() {
                "command" | "shell" => out.push(doc(uuid, Kind::Prompt, text, timestamp)),
                "command_output" => out.push(doc(uuid, Kind::ToolResult, text, timestamp)),
                "tool_result" => {
                    let id = result_ids.next().filter(|t| !t.is_empty());
                    out.push(Doc { tool_use_id: id, ..doc(uuid, Kind::ToolResult, text, timestamp) });
                }
                _ => {}
            },
            _ => {}
        }
    }
    out.retain(|d| !d.text.trim().is_empty());
    out
}

/// Reads one transcript's lines in order, skipping replayed records.
#[derive(Default)]
pub struct Extractor {
    seen: HashSet<String>,
}

impl Extractor {
    pub fn new() -> Self {
        Self::default()
    }

    /// The documents of one line (none for a record that is not text to search).
    pub fn line(&mut self, line: &[u8]) -> Vec<Doc> {
        match parse_line(line) {
            Some(v) => {
                if let Some(u) = v.get("uuid").and_then(Value::as_str)
                    && !self.seen.insert(u.to_owned())
                {
                    return Vec::new();
                }
                record_docs(&v)
            }
            None => Vec::new(),
        }
    }
}

/// One transcript line as JSON, or None when it is blank, malformed, too deep, or a
/// record whose body is never text to search ([`crate::transcript::skippable`]).
pub fn parse_line(line: &[u8]) -> Option<Value> {
    if crate::transcript::is_blank(line) || crate::transcript::skippable(line).is_some() {
        return None;
    }
    if crate::json::too_deep(line, crate::json::MAX_DEPTH) {
        return None;
    }
    serde_json::from_slice(line).ok().or_else(|| serde_json::from_str(&String::from_utf8_lossy(line)).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(lines: &[&str]) -> Vec<Doc> {
        let mut x = Extractor::new();
        lines.iter().flat_map(|l| x.line(l.as_bytes())).collect()
    }

    #[test]
    fn each_kind_of_text_is_a_document_with_its_timeline_uuid() {
        let d = docs(&[
            r#"{"type":"user","uuid":"u1","timestamp":"2026-11-01T00:00:00Z","message":{"role":"user","content":"drop the cache"}}"#,
            r#"{"type":"assistant","uuid":"a1","timestamp":"2026-11-01T00:00:01Z","message":{"content":[{"type":"thinking","thinking":"hmm redis"},{"type":"text","text":"Dropping it."},{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/p/src/store.rs","old_string":"cache","new_string":""}}]}}"#,
            r#"{"type":"user","uuid":"r1","timestamp":"2026-11-01T00:00:02Z","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"\u001b[32mok\u001b[0m"},{"type":"image","source":{"type":"base64","data":"iVBORw0KGgoAAAANSUhEUg"}}]}]}}"#,
            r#"{"type":"user","uuid":"u1","timestamp":"2026-11-01T00:00:00Z","message":{"role":"user","content":"drop the cache"}}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{"a":"secretword"}}}"#,
            r#"{"type":"api-request-shape","body":"secretword"}"#,
            "not json",
        ]);
        let summary: Vec<_> = d.iter().map(|d| (d.uuid.as_str(), d.kind, d.text.as_str())).collect();
        assert_eq!(
            summary,
            [
                ("u1", Kind::Prompt, "drop the cache"),
                ("a1", Kind::Thinking, "hmm redis"),
                ("a1#2", Kind::Reply, "Dropping it."),
                ("a1#3", Kind::ToolCall, "Edit\n/p/src/store.rs\ncache\n"),
                ("r1", Kind::ToolResult, "ok\n[image]"),
            ]
        );
        assert_eq!(d[3].file, Some((FileOp::Edit, "/p/src/store.rs".into())));
        assert_eq!(d[3].tool_use_id.as_deref(), Some("t1"));
        assert_eq!(d[4].tool_use_id.as_deref(), Some("t1"));
        assert_eq!(d[0].at, Timestamp::parse("2026-11-01T00:00:00Z"));
    }

    #[test]
    fn commands_are_prompts_and_their_output_results() {
        let d = docs(&[
            r#"{"type":"user","uuid":"c1","message":{"content":"<command-name>/clear</command-name>"}}"#,
            r#"{"type":"user","uuid":"c2","message":{"content":"<bash-input>cargo test</bash-input>"}}"#,
            r#"{"type":"user","uuid":"c3","message":{"content":"<bash-stdout>3 passed</bash-stdout>"}}"#,
        ]);
        let kinds: Vec<_> = d.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, [Kind::Prompt, Kind::Prompt, Kind::ToolResult]);
    }

    /// Issue 35: today's transcripts (real ones of 2.1.332, whose records are 2.1.330's
    /// shape) lose no text of the conversation, and none of the records around it (request
    /// shapes and blobs, the system prompt's snapshots, tool listings, cost states) is searched.
    #[test]
    fn a_real_2_1_332_transcript_gives_every_text_of_its_conversation_and_nothing_else() {
        let interactive = include_str!("../../tests/fixtures/cc-2.1.332/transcript.interactive.jsonl");
        let bg = include_str!("../../tests/fixtures/cc-2.1.332/transcript.bg.jsonl");
        let got = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            docs(&lines).into_iter().map(|d| (d.kind, d.text.chars().take(40).collect::<String>())).collect::<Vec<_>>()
        };
        use Kind::*;
        let s = |k: Kind, t: &str| (k, t.to_owned());
        assert_eq!(
            got(interactive),
            [
                s(Prompt, "install it"),
                s(ToolCall, "Bash\ncurl -s http://example.invalid/inst"),
                s(ToolResult, "Exit code 127\nsh: 1: mock: not found"),
                s(Reply, "Installed."),
                s(Prompt, "/compact"),
                s(ToolResult, "Compacted (ctrl+o to see full summary)\nP"),
                s(Prompt, "a manual prompt"),
            ]
        );
        assert_eq!(got(bg), [s(Prompt, "say hello"), s(Reply, "Hello from the background.")]);
    }
}
