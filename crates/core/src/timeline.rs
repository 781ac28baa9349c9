//! The timeline of one session (SPEC U2): prompts, assistant text, thinking, tool calls
//! paired with their results, compaction boundaries, API errors and system notes, in file
//! order, deduplicated by record uuid.
//!
//! Transcript text is carried as plain strings; rendering it safely (as text, never HTML)
//! is the consumer's job and a rule of the UI.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::claude::transcript::{self, Block, Content, Record, TimelineLine};
use crate::clock::Timestamp;
use crate::text::clean_text;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    pub timestamp: Option<Timestamp>,
}

/// One entry of a timeline. The JSON shape is the `mimesis show --json` contract.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum TimelineItem {
    Prompt {
        uuid: String,
        timestamp: Option<Timestamp>,
        text: String,
    },
    AssistantText {
        uuid: String,
        timestamp: Option<Timestamp>,
        text: String,
        model: Option<String>,
    },
    Thinking {
        uuid: String,
        timestamp: Option<Timestamp>,
        text: String,
        redacted: bool,
    },
    ToolCall {
        uuid: String,
        timestamp: Option<Timestamp>,
        tool_use_id: String,
        tool: String,
        #[cfg_attr(feature = "ts", ts(type = "unknown"))]
        input: Value,
        result: Option<ToolResult>,
    },
    Compaction {
        uuid: String,
        timestamp: Option<Timestamp>,
        trigger: Option<String>,
        pre_tokens: Option<u64>,
        summary: Option<String>,
    },
    ApiError {
        uuid: String,
        timestamp: Option<Timestamp>,
        text: String,
        status: Option<u64>,
        retrying: bool,
    },
    System {
        uuid: String,
        timestamp: Option<Timestamp>,
        subtype: String,
        text: String,
    },
    /// The boundary between two sessions of a work chain: `session_id` starts here,
    /// continuing `previous_session_id` (docs/ipc.md).
    Segment {
        uuid: String,
        timestamp: Option<Timestamp>,
        session_id: crate::ids::SessionId,
        previous_session_id: crate::ids::SessionId,
        /// clear | compact | rollover
        reason: String,
    },
    /// An answer the user gave from Mimesis (the window, the tray, a notification, the
    /// CLI) to this session's permission request or dialog; not from the transcript.
    Answer {
        uuid: String,
        timestamp: Option<Timestamp>,
        tool: Option<String>,
        target: Option<String>,
        /// allow | deny | choose
        behavior: String,
        /// The option chosen, by its label (`choose`).
        choice: Option<String>,
        /// The message to Claude with a denial.
        message: Option<String>,
        /// AskUserQuestion's answers: question → answer.
        answers: Option<std::collections::BTreeMap<String, String>>,
        /// window | tray | notification | cli
        via: String,
        /// The answer in a sentence ("Approved once from the window").
        text: String,
    },
}

impl TimelineItem {
    pub fn uuid(&self) -> &str {
        match self {
            TimelineItem::Prompt { uuid, .. }
            | TimelineItem::AssistantText { uuid, .. }
            | TimelineItem::Thinking { uuid, .. }
            | TimelineItem::ToolCall { uuid, .. }
            | TimelineItem::Compaction { uuid, .. }
            | TimelineItem::ApiError { uuid, .. }
            | TimelineItem::System { uuid, .. }
            | TimelineItem::Segment { uuid, .. }
            | TimelineItem::Answer { uuid, .. } => uuid,
        }
    }

    pub fn timestamp(&self) -> Option<Timestamp> {
        match self {
            TimelineItem::Prompt { timestamp, .. }
            | TimelineItem::AssistantText { timestamp, .. }
            | TimelineItem::Thinking { timestamp, .. }
            | TimelineItem::ToolCall { timestamp, .. }
            | TimelineItem::Compaction { timestamp, .. }
            | TimelineItem::ApiError { timestamp, .. }
            | TimelineItem::System { timestamp, .. }
            | TimelineItem::Segment { timestamp, .. }
            | TimelineItem::Answer { timestamp, .. } => *timestamp,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            TimelineItem::Prompt { .. } => "prompt",
            TimelineItem::AssistantText { .. } => "assistant_text",
            TimelineItem::Thinking { .. } => "thinking",
            TimelineItem::ToolCall { .. } => "tool_call",
            TimelineItem::Compaction { .. } => "compaction",
            TimelineItem::ApiError { .. } => "api_error",
            TimelineItem::System { .. } => "system",
            TimelineItem::Segment { .. } => "segment",
            TimelineItem::Answer { .. } => "answer",
        }
    }

    /// A copy whose long strings are cut to `max` bytes, and whether anything was cut.
    /// Keeps IPC pages small; the whole item is fetched on demand.
    pub fn shortened(&self, max: usize) -> (TimelineItem, bool) {
        let cut = std::cell::Cell::new(false);
        let short = |s: &String| -> String {
            if s.len() <= max {
                return s.clone();
            }
            cut.set(true);
            let mut end = max;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &s[..end])
        };
        let item = match self {
            TimelineItem::Prompt { uuid, timestamp, text } => {
                TimelineItem::Prompt { uuid: uuid.clone(), timestamp: *timestamp, text: short(text) }
            }
            TimelineItem::AssistantText { uuid, timestamp, text, model } => TimelineItem::AssistantText {
                uuid: uuid.clone(),
                timestamp: *timestamp,
                text: short(text),
                model: model.clone(),
            },
            TimelineItem::Thinking { uuid, timestamp, text, redacted } => TimelineItem::Thinking {
                uuid: uuid.clone(),
                timestamp: *timestamp,
                text: short(text),
                redacted: *redacted,
            },
            TimelineItem::ToolCall { uuid, timestamp, tool_use_id, tool, input, result } => {
                let mut input_cut = false;
                let input = shorten_value(input, max, &mut input_cut);
                if input_cut {
                    cut.set(true);
                }
                TimelineItem::ToolCall {
                    uuid: uuid.clone(),
                    timestamp: *timestamp,
                    tool_use_id: tool_use_id.clone(),
                    tool: tool.clone(),
                    input,
                    result: result.as_ref().map(|r| ToolResult {
                        content: short(&r.content),
                        is_error: r.is_error,
                        timestamp: r.timestamp,
                    }),
                }
            }
            TimelineItem::Compaction { uuid, timestamp, trigger, pre_tokens, summary } => TimelineItem::Compaction {
                uuid: uuid.clone(),
                timestamp: *timestamp,
                trigger: trigger.clone(),
                pre_tokens: *pre_tokens,
                summary: summary.as_ref().map(short),
            },
            TimelineItem::ApiError { uuid, timestamp, text, status, retrying } => TimelineItem::ApiError {
                uuid: uuid.clone(),
                timestamp: *timestamp,
                text: short(text),
                status: *status,
                retrying: *retrying,
            },
            TimelineItem::System { uuid, timestamp, subtype, text } => TimelineItem::System {
                uuid: uuid.clone(),
                timestamp: *timestamp,
                subtype: subtype.clone(),
                text: short(text),
            },
            TimelineItem::Segment { .. } | TimelineItem::Answer { .. } => self.clone(),
        };
        (item, cut.get())
    }
}

fn shorten_value(v: &Value, max: usize, cut: &mut bool) -> Value {
    match v {
        Value::String(s) if s.len() > max => {
            *cut = true;
            let mut end = max;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(format!("{}…", &s[..end]))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shorten_value(v, max, cut))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(|v| shorten_value(v, max, cut)).collect()),
        other => other.clone(),
    }
}

/// The ids of the items one record makes: its uuid, then `uuid#2`, `uuid#3`…
struct ItemIds {
    uuid: String,
    n: usize,
}

impl ItemIds {
    fn next(&mut self) -> String {
        self.n += 1;
        if self.n == 1 { self.uuid.clone() } else { format!("{}#{}", self.uuid, self.n) }
    }
}

/// Builds a timeline line by line, attaching tool results to their calls.
#[derive(Default)]
pub struct TimelineBuilder {
    items: Vec<TimelineItem>,
    tool_at: HashMap<String, usize>,
    seen_uuids: HashSet<String>,
    last_compaction: Option<usize>,
    lines: u64,
    pub malformed: u64,
    /// Items from outside the transcript (answers given from Mimesis), oldest first, not
    /// placed yet: each goes in before the first transcript item that is later than it.
    notes: std::collections::VecDeque<TimelineItem>,
}

/// The text inside `<tag>…</tag>`, or the whole string.
fn strip_tag<'a>(s: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    match (s.find(&open), s.rfind(&close)) {
        (Some(a), Some(b)) if a + open.len() <= b => s[a + open.len()..b].trim(),
        _ => s.trim(),
    }
}

fn seconds(ms: u64) -> String {
    if ms < 60_000 {
        format!("Turn took {:.1} s", ms as f64 / 1000.0)
    } else {
        format!("Turn took {} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

impl TimelineBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn items(&self) -> &[TimelineItem] {
        &self.items
    }

    pub fn into_items(self) -> Vec<TimelineItem> {
        self.items
    }

    /// Applies one line; indices of items added or changed are pushed to `changed`.
    pub fn push_line(&mut self, line: &[u8], changed: &mut Vec<usize>) {
        if crate::transcript::is_blank(line) {
            return;
        }
        self.lines += 1;
        if crate::transcript::skippable(line).is_some() {
            return;
        }
        let mut scratch = String::new();
        match transcript::parse_timeline_line(line, &mut scratch) {
            Ok(Some(record)) => self.push_parsed(&record, changed),
            Ok(None) => {}
            Err(_) => self.malformed += 1,
        }
    }

    /// Adds items from outside the transcript; each is placed by its timestamp among the
    /// transcript's items, and at the end by [`TimelineBuilder::place_notes`].
    pub fn add_notes(&mut self, notes: impl IntoIterator<Item = TimelineItem>) {
        self.notes.extend(notes);
        self.notes.make_contiguous().sort_by_key(TimelineItem::timestamp);
    }

    /// Places the notes not placed yet at the end.
    pub fn place_notes(&mut self, changed: &mut Vec<usize>) {
        while let Some(n) = self.notes.pop_front() {
            self.items.push(n);
            changed.push(self.items.len() - 1);
        }
    }

    fn push(&mut self, item: TimelineItem, changed: &mut Vec<usize>) -> usize {
        if let Some(at) = item.timestamp() {
            while self.notes.front().is_some_and(|n| n.timestamp().is_some_and(|t| t < at)) {
                let n = self.notes.pop_front().expect("a note");
                self.items.push(n);
                changed.push(self.items.len() - 1);
            }
        }
        self.items.push(item);
        let i = self.items.len() - 1;
        changed.push(i);
        i
    }

    /// Applies one record given as JSON (read with the same reader as a line).
    pub fn push_record(&mut self, r: &Value, changed: &mut Vec<usize>) {
        if let Ok(TimelineLine(Some(record))) = TimelineLine::deserialize(r) {
            self.push_parsed(&record, changed);
        }
    }

    /// Applies one record, read by [`transcript::parse_timeline_line`].
    pub fn push_parsed(&mut self, r: &Record<'_>, changed: &mut Vec<usize>) {
        if r.is_sidechain.0 {
            return;
        }
        let uuid = match r.uuid.get() {
            Some(u) => {
                if !self.seen_uuids.insert(u.to_owned()) {
                    return; // replayed history
                }
                u.to_owned()
            }
            None => format!("line-{}", self.lines),
        };
        let mut ids = ItemIds { uuid, n: 0 };
        let ts = r.timestamp.get().and_then(Timestamp::parse);
        let message = r.message.0.as_ref();
        let content = message.map_or(&Content::None, |m| &m.content);
        match r.kind() {
            "user" => self.user_record(r, content, ts, &mut ids, changed),
            "assistant" => self.assistant_record(r, content, ts, &mut ids, changed),
            "system" => self.system_record(r, ts, &mut ids, changed),
            _ => {}
        }
    }

    fn user_record(
        &mut self,
        r: &Record<'_>,
        content: &Content<'_>,
        ts: Option<Timestamp>,
        ids: &mut ItemIds,
        changed: &mut Vec<usize>,
    ) {
        if r.is_meta.0 {
            return;
        }
        if r.is_compact_summary.0 {
            self.compact_summary(content.text(), ts, ids.next(), changed);
            return;
        }
        let one;
        let blocks: &[Block<'_>] = match content {
            Content::Blocks(b) => b,
            Content::Text(t) => {
                one = [Block::bare(t.clone())];
                &one
            }
            Content::Object(v) => {
                one = [Block::of_value(v)];
                &one
            }
            Content::None | Content::Other(_) => {
                one = [Block::default()];
                &one
            }
        };
        let mut texts = Vec::new();
        for b in blocks {
            if b.kind.get() != Some("tool_result") {
                texts.push(b.piece().unwrap_or_default());
                continue;
            }
            let id = b.tool_use_id.get().unwrap_or("");
            // What a command printed for a terminal, as text: its colours and
            // cursor moves (`␛[2m…`) are dropped.
            let result = ToolResult {
                content: crate::text::strip_ansi(&b.content_text()),
                is_error: b.is_error.0,
                timestamp: ts,
            };
            match self.tool_at.get(id) {
                Some(&i) => {
                    if let TimelineItem::ToolCall { result: slot, .. } = &mut self.items[i] {
                        *slot = Some(result);
                        changed.push(i);
                    }
                }
                None => {
                    let item = TimelineItem::System {
                        uuid: ids.next(),
                        timestamp: ts,
                        subtype: "tool_result".into(),
                        text: result.content,
                    };
                    self.push(item, changed);
                }
            }
        }
        let text = texts.join("\n");
        if !text.is_empty() {
            let item = self.user_text_item(text, ts, ids.next());
            if let Some(item) = item {
                if let TimelineItem::Compaction { summary: Some(s), .. } = &item {
                    self.compact_summary(s.clone(), ts, item.uuid().to_owned(), changed);
                } else if is_compact_command(&item) && self.items.last().is_some_and(is_compaction) {
                    // 2.1.330 writes `/compact` after the boundary it caused: the
                    // command goes first, the compaction moves after it.
                    let at = self.items.len() - 1;
                    let compaction = std::mem::replace(&mut self.items[at], item);
                    changed.push(at);
                    let i = self.push(compaction, changed);
                    self.last_compaction = self.last_compaction.map(|_| i);
                } else {
                    self.push(item, changed);
                }
            }
        }
    }

    fn assistant_record(
        &mut self,
        r: &Record<'_>,
        content: &Content<'_>,
        ts: Option<Timestamp>,
        ids: &mut ItemIds,
        changed: &mut Vec<usize>,
    ) {
        let message = r.message.0.as_ref();
        let model = message.and_then(|m| m.model.get()).map(str::to_owned);
        if r.is_api_error_message.0 {
            let item = TimelineItem::ApiError {
                uuid: ids.next(),
                timestamp: ts,
                text: content.text(),
                status: r.timeline_fields().api_error_status.0,
                retrying: false,
            };
            self.push(item, changed);
            return;
        }
        let one;
        let blocks: &[Block<'_>] = match content {
            Content::Blocks(b) => b,
            Content::Text(t) => {
                one = [Block::bare(t.clone())];
                &one
            }
            _ => &[],
        };
        for b in blocks {
            let item = match b.kind.get() {
                None => b.timeline_fields().bare.as_ref().map(|t| TimelineItem::AssistantText {
                    uuid: ids.next(),
                    timestamp: ts,
                    text: t.to_string(),
                    model: model.clone(),
                }),
                Some("text") => Some(TimelineItem::AssistantText {
                    uuid: ids.next(),
                    timestamp: ts,
                    text: b.text.get().unwrap_or("").to_owned(),
                    model: model.clone(),
                }),
                Some("thinking") => Some(TimelineItem::Thinking {
                    uuid: ids.next(),
                    timestamp: ts,
                    text: b.timeline_fields().thinking.get().unwrap_or("").to_owned(),
                    redacted: false,
                }),
                Some("redacted_thinking") => Some(TimelineItem::Thinking {
                    uuid: ids.next(),
                    timestamp: ts,
                    text: String::new(),
                    redacted: true,
                }),
                Some("tool_use" | "server_tool_use") => Some(TimelineItem::ToolCall {
                    uuid: ids.next(),
                    timestamp: ts,
                    tool_use_id: b.id.get().unwrap_or("").to_owned(),
                    tool: b.name.get().unwrap_or("tool").to_owned(),
                    input: b.timeline_fields().input.clone().unwrap_or(Value::Null),
                    result: None,
                }),
                Some("web_search_tool_result") => {
                    let id = b.tool_use_id.get().unwrap_or("");
                    if let Some(&i) = self.tool_at.get(id)
                        && let TimelineItem::ToolCall { result, .. } = &mut self.items[i]
                    {
                        *result = Some(ToolResult {
                            content: b.timeline_fields().content.as_ref().map(|c| c.to_string()).unwrap_or_default(),
                            is_error: false,
                            timestamp: ts,
                        });
                        changed.push(i);
                    }
                    None
                }
                _ => None,
            };
            if let Some(item) = item {
                let tool_id = match &item {
                    TimelineItem::ToolCall { tool_use_id, .. } if !tool_use_id.is_empty() => Some(tool_use_id.clone()),
                    _ => None,
                };
                let i = self.push(item, changed);
                if let Some(id) = tool_id {
                    self.tool_at.insert(id, i);
                }
            }
        }
    }

    fn system_record(&mut self, r: &Record<'_>, ts: Option<Timestamp>, ids: &mut ItemIds, changed: &mut Vec<usize>) {
        let extra = r.timeline_fields();
        let subtype = r.subtype();
        let text = extra.content.text();
        let item = match subtype {
            "compact_boundary" => {
                let meta = extra.compact_metadata.0.as_ref();
                Some(TimelineItem::Compaction {
                    uuid: ids.next(),
                    timestamp: ts,
                    trigger: meta.and_then(|m| m.trigger.get()).map(str::to_owned),
                    pre_tokens: meta.and_then(|m| m.pre_tokens.0),
                    summary: None,
                })
            }
            "api_error" => {
                let err = extra.error.0.as_ref();
                let status = err.and_then(|e| e.status.0);
                let detail = err.and_then(|e| e.detail()).map(str::to_owned);
                let text = detail.or(Some(text).filter(|t| !t.is_empty())).unwrap_or_else(|| "API error".into());
                Some(TimelineItem::ApiError { uuid: ids.next(), timestamp: ts, text, status, retrying: true })
            }
            "turn_duration" => {
                let ms = extra.duration_ms.0.unwrap_or(0);
                Some(TimelineItem::System {
                    uuid: ids.next(),
                    timestamp: ts,
                    subtype: subtype.into(),
                    text: seconds(ms),
                })
            }
            "microcompact_boundary" | "stop_hook_summary" | "bridge_status" => None,
            _ if text.is_empty() => None,
            _ => Some(TimelineItem::System {
                uuid: ids.next(),
                timestamp: ts,
                subtype: if subtype.is_empty() { "system".into() } else { subtype.into() },
                text: crate::text::strip_ansi(strip_tag(&text, "local-command-stdout")),
            }),
        };
        if let Some(item) = item {
            let is_compaction = matches!(item, TimelineItem::Compaction { .. });
            let i = self.push(item, changed);
            if is_compaction {
                self.last_compaction = Some(i);
            }
        }
    }

    fn compact_summary(&mut self, summary: String, ts: Option<Timestamp>, uuid: String, changed: &mut Vec<usize>) {
        let summary = summary_body(summary);
        if let Some(i) = self.last_compaction.take()
            && let TimelineItem::Compaction { summary: slot @ None, .. } = &mut self.items[i]
        {
            *slot = Some(summary);
            changed.push(i);
            return;
        }
        let item =
            TimelineItem::Compaction { uuid, timestamp: ts, trigger: None, pre_tokens: None, summary: Some(summary) };
        self.push(item, changed);
    }

    fn user_text_item(&self, text: String, ts: Option<Timestamp>, uuid: String) -> Option<TimelineItem> {
        let t = text.trim_start();
        let system = |subtype: &str, text: String| {
            Some(TimelineItem::System { uuid: uuid.clone(), timestamp: ts, subtype: subtype.into(), text })
        };
        if t.starts_with("<command-name>") || t.starts_with("<command-message>") {
            let name = strip_tag(t, "command-name");
            let args = if t.contains("<command-args>") { strip_tag(t, "command-args") } else { "" };
            let name = if name.starts_with('/') { name.to_owned() } else { format!("/{name}") };
            return system("command", clean_text(&format!("{name} {args}"), 2000));
        }
        for tag in ["local-command-stdout", "local-command-stderr", "bash-stdout", "bash-stderr"] {
            if t.starts_with(&format!("<{tag}>")) {
                // 2.1.330 keeps the colours of what a command printed: shown as plain text.
                let out = crate::text::strip_ansi(strip_tag(t, tag));
                return if out.trim().is_empty() { None } else { system("command_output", out) };
            }
        }
        if t.starts_with("<bash-input>") {
            return system("shell", format!("! {}", strip_tag(t, "bash-input")));
        }
        if t.starts_with("<local-command-caveat>") || t.starts_with("<system-reminder>") {
            return None;
        }
        if t.starts_with("[Request interrupted by user") {
            return system("interrupted", t.trim().to_owned());
        }
        if t.starts_with("This session is being continued from a previous conversation") {
            return Some(TimelineItem::Compaction {
                uuid,
                timestamp: ts,
                trigger: None,
                pre_tokens: None,
                summary: Some(summary_body(text)),
            });
        }
        Some(TimelineItem::Prompt { uuid, timestamp: ts, text })
    }
}

/// A compaction's summary, not the instructions to the model around it (the wrapper); all
/// of it where nothing is left without them.
fn summary_body(text: String) -> String {
    match crate::facts::compact_summary_body(&text) {
        "" => text,
        body => body.to_owned(),
    }
}

fn is_compaction(item: &TimelineItem) -> bool {
    matches!(item, TimelineItem::Compaction { .. })
}

fn is_compact_command(item: &TimelineItem) -> bool {
    matches!(item, TimelineItem::System { subtype, text, .. }
        if subtype == "command" && (text.trim_end() == "/compact" || text.starts_with("/compact ")))
}

/// One segment of a chain to show: the session, its transcript, and how it began.
#[derive(Clone, Debug)]
pub struct ChainSegment {
    pub session_id: crate::ids::SessionId,
    pub path: std::path::PathBuf,
    /// The reason of the link into it (None for the chain's first session).
    pub reason: Option<crate::chain::LinkReason>,
    pub at: Option<Timestamp>,
}

#[cfg(test)]
mod tests;
