//! Folding transcript records into what the roster knows about one session.
//!
//! [`SessionFacts`] is built incrementally: each new line is applied once, in file order,
//! and nothing here ever re-reads earlier lines. It is plain data plus `apply`, no I/O.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::session::{ByModel, Usage};
use crate::status::Tail;
use crate::text::{clean_text, prefix};
use crate::transcript::{self, Block, Content, Record, RecordParser};

/// A tool_use that has no tool_result yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTool {
    pub id: String,
    pub name: String,
    pub target: String,
    pub since: Option<Timestamp>,
    /// A progress record for it arrived: it runs rather than waits.
    pub running: bool,
}

/// How a transcript begins: tells a `/clear` successor or a compaction rollover from
/// the files alone (SPEC C4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Birth {
    /// No significant record yet.
    #[default]
    Unknown,
    /// A prompt, an answer: a conversation of its own.
    Fresh,
    /// Its first command is `/clear`: the session a `/clear` opened.
    Clear,
    /// It starts with a compaction (a boundary or a compact summary): a rollover.
    Compacted,
}

/// Records looked at to decide a [`Birth`]; past them a file is `Fresh`.
const BIRTH_WINDOW: u64 = 64;

/// Models kept apart for the cost estimate; a transcript naming more is hostile.
pub const MAX_MODELS: usize = 32;

/// Everything derived from the transcript of one session so far. Serializable, so the
/// fleet database can resume reading a file where it stopped.
#[derive(Default, Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionFacts {
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub created_at: Option<Timestamp>,
    pub last_activity: Option<Timestamp>,
    pub model: Option<String>,
    pub usage: Usage,
    /// Hashes of the API messages already counted (`message.id` + `requestId`). Kept in
    /// the database as a compact blob ([`SessionFacts::dedup_bytes`]), not as JSON.
    #[serde(skip)]
    counted_messages: HashSet<u64>,
    /// The message counted last and what was counted for it: its block records follow
    /// each other and may carry growing usage.
    last_message: Option<(u64, Usage)>,
    /// Compaction boundaries already counted (replayed history repeats them).
    #[serde(skip)]
    counted_compactions: HashSet<u64>,
    pub goal: Option<String>,
    /// A custom slash command, used as the goal when no prompt is ever typed.
    command_goal: Option<String>,
    summary_record: Option<String>,
    compact_summary: Option<String>,
    last_prompt: Option<String>,
    /// The last real prompt typed, and whether it came after the last `last-prompt`
    /// record (a resumed session's `last-prompt` is the previous run's until it exits).
    latest_prompt: Option<String>,
    prompt_after_last_prompt: bool,
    /// The Claude Code version that wrote the records (`version`), and how it ran
    /// (`entrypoint`: `cli` for an interactive session).
    pub cli_version: Option<String>,
    pub entrypoint: Option<String>,
    /// Its records say it runs under the background service (`sessionKind: "bg"`, 2.1.332).
    #[serde(default)]
    pub background: bool,
    custom_title: Option<String>,
    ai_title: Option<String>,
    /// The name Claude Code's registry gave the session while it ran (not in the
    /// transcript): kept here so that the name outlives the process and the face that saw it.
    pub registry_name: Option<String>,
    pub permission_mode: Option<String>,
    pub compaction_count: u32,
    pub open_tools: Vec<OpenTool>,
    pub tail: Tail,
    /// Timestamp of the record that set `tail`. Claude Code does not always write in
    /// causal order (a fast reply can land before its prompt), so an older record never
    /// replaces the tail a newer one set.
    tail_at: Option<Timestamp>,
    /// Timestamp of the record being applied.
    current: Option<Timestamp>,
    pub api_error: bool,
    /// The `sessionId` the records carry (may differ from the file name for copied history).
    pub record_session_id: Option<String>,
    /// Lines skipped: not JSON, or longer than the line cap.
    pub malformed: u64,
    /// Fields with a value that cannot be right (a token count of `1.5e300`, `-3`,
    /// `"12"`): taken as absent and counted here.
    pub malformed_fields: u64,
    /// Tokens per model (for the cost estimate); at most [`MAX_MODELS`] models.
    pub usage_by_model: ByModel,
    /// What Claude Code says it billed: the last `cost-state` record (2.1.330) of each
    /// cost ledger the transcript shows, summed (see [`SessionFacts::note_cost_state`]).
    pub billed: Option<crate::session::Billed>,
    /// The ledgers before the current one, summed, and the current one's start and figure.
    billed_before: Option<crate::session::Billed>,
    ledger_start: Option<f64>,
    ledger_billed: Option<crate::session::Billed>,
    pub records: u64,
    /// How the file begins.
    pub birth: Birth,
    /// Its first significant record is a `compact_boundary`: its own compaction count
    /// already includes the compaction that started it.
    pub born_with_boundary: bool,
}

const GOAL_MAX_CHARS: usize = 300;
const SUMMARY_MAX_CHARS: usize = 600;

/// Built-in slash commands that do not start a model turn.
const LOCAL_COMMANDS: &[&str] = &[
    "add-dir",
    "agents",
    "bashes",
    "clear",
    "config",
    "context",
    "cost",
    "doctor",
    "exit",
    "export",
    "help",
    "hooks",
    "ide",
    "login",
    "logout",
    "mcp",
    "memory",
    "model",
    "output-style",
    "permissions",
    "privacy-settings",
    "quit",
    "release-notes",
    "rename",
    "resume",
    "settings",
    "stats",
    "status",
    "statusline",
    "terminal-setup",
    "theme",
    "todos",
    "upgrade",
    "usage",
    "vim",
];

/// Marks what a user record that starts with one of these tags is.
enum UserText<'a> {
    Command(&'a str),
    LocalOutput,
    Interrupted,
    ShellInput,
    Meta,
    CompactSummary,
    Prompt,
}

fn classify_user_text(t: &str) -> UserText<'_> {
    let t = t.trim_start();
    if let Some(rest) = t.strip_prefix("<command-name>") {
        let name = rest.split("</command-name>").next().unwrap_or("").trim();
        return UserText::Command(name.trim_start_matches('/'));
    }
    if t.starts_with("<command-message>") {
        // Older CLIs put the message tag first: find the name wherever it is.
        if let Some(i) = t.find("<command-name>") {
            return classify_user_text(&t[i..]);
        }
        return UserText::Meta;
    }
    if t.starts_with("<local-command-stdout>")
        || t.starts_with("<local-command-stderr>")
        || t.starts_with("<bash-stdout>")
        || t.starts_with("<bash-stderr>")
    {
        return UserText::LocalOutput;
    }
    if t.starts_with("<local-command-caveat>") || t.starts_with("<system-reminder>") || t.starts_with("Caveat:") {
        return UserText::Meta;
    }
    if t.starts_with("<bash-input>") {
        return UserText::ShellInput;
    }
    if t.starts_with("[Request interrupted by user") {
        return UserText::Interrupted;
    }
    if t.starts_with("This session is being continued from a previous conversation") {
        return UserText::CompactSummary;
    }
    UserText::Prompt
}

/// Does the assistant end by asking the user something?
fn asks_question(text: &str) -> bool {
    text.trim_end().trim_end_matches(['*', '_', '`', ')', '"', '\'']).ends_with('?')
}

/// FNV-1a: a fast, stable hash for short keys.
pub(crate) fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn usage_of(raw: &transcript::RawUsage) -> Usage {
    Usage {
        input_tokens: raw.input_tokens.count(),
        output_tokens: raw.output_tokens.count(),
        cache_creation_input_tokens: raw.cache_creation_input_tokens.count(),
        cache_read_input_tokens: raw.cache_read_input_tokens.count(),
    }
}

impl SessionFacts {
    /// Parses and applies one line. A line that is not JSON is counted and skipped; if a
    /// torn fragment was glued to a good record (a writer died mid-line, then the file was
    /// appended to), the record is still recovered.
    pub fn apply_line(&mut self, line: &[u8], scratch: &mut String) {
        self.apply_line_with(&transcript::SerdeJson, line, scratch)
    }

    /// [`SessionFacts::apply_line`] with another JSON parser (the watcher's faster one).
    pub fn apply_line_with<P: RecordParser + ?Sized>(&mut self, parser: &P, line: &[u8], scratch: &mut String) {
        if transcript::is_blank(line) {
            return;
        }
        if let Some(kind) = transcript::skippable(line) {
            self.apply_skipped(kind, line);
            return;
        }
        match transcript::parse_line_with(parser, line, scratch) {
            Ok(r) => {
                if r.kind() == "cost-state"
                    && let Ok(c) = crate::json::from_slice::<crate::pricing::CostState>(line)
                {
                    self.note_cost_state(&c);
                }
                self.apply(&r)
            }
            Err(_) => {
                self.malformed += 1;
                if let Some(start) = recover_glued_record(parser, line) {
                    let mut s2 = String::new();
                    if let Ok(r) = transcript::parse_line_with(parser, &line[start..], &mut s2) {
                        self.apply(&r);
                    }
                }
            }
        }
    }

    /// A line [`transcript::skippable`] found need not be parsed (a copy of an API request
    /// or of the system prompt: most of a 2.1.330 transcript's bytes): counted, and at most
    /// an attachment's time read, as activity (its last `"timestamp"`: `line` may be only the
    /// record's end, if that end has one).
    pub fn apply_skipped(&mut self, kind: transcript::Skipped, line: &[u8]) {
        self.records += 1;
        if kind == transcript::Skipped::Attachment
            && let Some(t) = transcript::trailing_timestamp(line).and_then(Timestamp::parse)
        {
            self.created_at = Some(self.created_at.map_or(t, |c| c.min(t)));
            self.last_activity = Some(self.last_activity.map_or(t, |l| l.max(t)));
        }
    }

    /// A `cost-state` record: Claude Code's running total for its process's cost ledger,
    /// written at `/clear` and exit. A resumed process restores the ledger from the last
    /// record (same `startTime`) and its record replaces the one before; a process that
    /// starts a ledger of its own (a different `startTime`: the process before it wrote
    /// its figure, then its successor did not take it up) adds to what came before.
    fn note_cost_state(&mut self, c: &crate::pricing::CostState) {
        let Some(billed) = c.billed() else { return };
        let start = c.start_time.filter(|t| t.is_finite() && *t >= 0.0);
        if let (Some(new), Some(old), Some(prev)) = (start, self.ledger_start, self.ledger_billed.take())
            && new != old
        {
            let mut before = self.billed_before.take().unwrap_or_default();
            before.cost_usd += prev.cost_usd;
            before.usage.add(&prev.usage);
            self.billed_before = Some(before);
        }
        self.ledger_start = start.or(self.ledger_start);
        let mut total = billed.clone();
        if let Some(before) = &self.billed_before {
            total.cost_usd += before.cost_usd;
            total.usage.add(&before.usage);
        }
        self.ledger_billed = Some(billed);
        self.billed = Some(total);
    }

    /// Applies one parsed record.
    pub fn apply(&mut self, r: &Record<'_>) {
        self.records += 1;
        let kind = r.kind();
        let ts = r.timestamp.get().and_then(Timestamp::parse);
        self.current = ts;
        if matches!(kind, "user" | "assistant" | "system" | "attachment" | "progress") {
            if let Some(t) = ts {
                self.created_at = Some(self.created_at.map_or(t, |c| c.min(t)));
                self.last_activity = Some(self.last_activity.map_or(t, |l| l.max(t)));
            }
            if self.cwd.is_none()
                && let Some(c) = r.cwd.get().filter(|c| !c.is_empty())
            {
                self.cwd = Some(c.to_owned());
            }
            if let Some(b) = r.git_branch.get().filter(|b| !b.is_empty())
                && self.branch.as_deref() != Some(b)
            {
                self.branch = Some(b.to_owned());
            }
            if self.record_session_id.is_none() {
                self.record_session_id = r.session_id.get().map(str::to_owned);
            }
            if let Some(v) = r.version.get().filter(|v| !v.is_empty() && v.len() <= 32)
                && self.cli_version.as_deref() != Some(v)
            {
                self.cli_version = Some(v.to_owned());
            }
            if let Some(e) = r.entrypoint.get().filter(|e| !e.is_empty() && e.len() <= 32)
                && self.entrypoint.as_deref() != Some(e)
            {
                self.entrypoint = Some(e.to_owned());
            }
            if r.session_kind.get() == Some("bg") {
                self.background = true;
            }
        }
        if self.birth == Birth::Unknown {
            self.note_birth(r, kind);
        }
        if let Some(m) = r.permission_mode.get()
            && self.permission_mode.as_deref() != Some(m)
        {
            self.permission_mode = Some(m.to_owned());
        }
        match kind {
            "user" => self.apply_user(r, ts),
            "assistant" => self.apply_assistant(r, ts),
            "system" => self.apply_system(r),
            "progress" => self.apply_progress(r),
            "summary" => set(&mut self.summary_record, r.side_text.get(), SUMMARY_MAX_CHARS),
            "custom-title" => set(&mut self.custom_title, r.side_text.get(), GOAL_MAX_CHARS),
            "ai-title" => set(&mut self.ai_title, r.side_text.get(), GOAL_MAX_CHARS),
            "last-prompt" => {
                set(&mut self.last_prompt, r.side_text.get(), SUMMARY_MAX_CHARS);
                self.prompt_after_last_prompt = false;
            }
            "queue-operation" if r.side_text.get() == Some("enqueue") => self.set_tail(Tail::Prompt),
            _ => {}
        }
    }

    /// Decides how the file begins from its first significant record.
    fn note_birth(&mut self, r: &Record<'_>, kind: &str) {
        if self.records > BIRTH_WINDOW {
            self.birth = Birth::Fresh;
            return;
        }
        if r.is_sidechain.0 {
            return;
        }
        match kind {
            "user" if !r.is_meta.0 => {
                if r.is_compact_summary.0 {
                    self.birth = Birth::Compacted;
                    return;
                }
                let Some(msg) = r.message.0.as_ref() else { return };
                match first_text(&msg.content).map(classify_user_text) {
                    Some(UserText::Command("clear")) => self.birth = Birth::Clear,
                    Some(UserText::CompactSummary) => self.birth = Birth::Compacted,
                    Some(UserText::Meta | UserText::LocalOutput) => {}
                    Some(_) => self.birth = Birth::Fresh,
                    None if matches!(msg.content, Content::Blocks(_)) => self.birth = Birth::Fresh,
                    None => {}
                }
            }
            "assistant" => self.birth = Birth::Fresh,
            "system" => match r.subtype() {
                "compact_boundary" => {
                    self.birth = Birth::Compacted;
                    self.born_with_boundary = true;
                }
                "local_command"
                    if r.content.get().is_some_and(|c| c.contains("<command-name>/clear</command-name>")) =>
                {
                    self.birth = Birth::Clear;
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn apply_user(&mut self, r: &Record<'_>, ts: Option<Timestamp>) {
        if r.is_sidechain.0 || r.is_meta.0 {
            return;
        }
        let Some(msg) = r.message.0.as_ref() else { return };
        if r.is_compact_summary.0 {
            if let Content::Text(t) = &msg.content {
                set(&mut self.compact_summary, Some(compact_summary_body(t)), SUMMARY_MAX_CHARS);
            } else if let Some(t) = first_text(&msg.content) {
                set(&mut self.compact_summary, Some(compact_summary_body(t)), SUMMARY_MAX_CHARS);
            }
            self.set_tail(Tail::Compacted);
            return;
        }
        match &msg.content {
            Content::Text(t) => self.user_text(t, ts),
            Content::Blocks(blocks) => {
                let mut answered = false;
                let mut rejected = r.tool_use_result.get().is_some_and(|s| s.starts_with("User rejected tool use"));
                for b in blocks.iter().filter(|b| b.kind.get() == Some("tool_result")) {
                    answered = true;
                    if let Some(id) = b.tool_use_id.get() {
                        self.open_tools.retain(|t| t.id != id);
                    }
                    if b.is_error.0 && r.tool_use_result.get().is_some_and(|s| s.contains("rejected")) {
                        rejected = true;
                    }
                }
                if answered {
                    let tail = if rejected {
                        self.close_tools_before_now();
                        Tail::Aborted
                    } else if self.open_tools.is_empty() {
                        Tail::ToolResults
                    } else {
                        Tail::ToolPending
                    };
                    self.set_tail(tail);
                } else if let Some(t) = first_text(&msg.content) {
                    self.user_text(t, ts);
                } else if blocks.iter().any(|b| matches!(b.kind.get(), Some("image" | "document"))) {
                    self.user_text("[image]", ts);
                }
            }
            Content::None | Content::Object(_) | Content::Other(_) => {}
        }
    }

    fn user_text(&mut self, t: &str, _ts: Option<Timestamp>) {
        match classify_user_text(t) {
            UserText::Command(name) => {
                if name == "compact" {
                    self.set_tail(Tail::Compacting);
                } else if LOCAL_COMMANDS.contains(&name) {
                    self.set_tail(Tail::LocalOutput);
                } else {
                    self.set_tail(Tail::Prompt);
                    self.close_tools_before_now();
                    if self.command_goal.is_none() && !name.is_empty() {
                        let args = t.split("<command-args>").nth(1).and_then(|a| a.split("</command-args>").next());
                        let text = format!("/{name} {}", args.unwrap_or(""));
                        self.command_goal = Some(clean_text(&text, GOAL_MAX_CHARS));
                    }
                }
            }
            UserText::LocalOutput => self.set_tail(Tail::LocalOutput),
            UserText::Interrupted => {
                self.close_tools_before_now();
                self.set_tail(Tail::Aborted);
            }
            UserText::ShellInput => self.set_tail(Tail::Prompt),
            UserText::Meta => {}
            UserText::CompactSummary => {
                set(&mut self.compact_summary, Some(compact_summary_body(t)), SUMMARY_MAX_CHARS);
                self.set_tail(Tail::Compacted);
            }
            UserText::Prompt => {
                self.set_tail(Tail::Prompt);
                self.close_tools_before_now();
                // Cleaned once (every prompt of a long session passes here); the goal is
                // the same text cut shorter.
                let latest = clean_text(t, SUMMARY_MAX_CHARS);
                if !latest.is_empty() {
                    if self.goal.is_none() {
                        self.goal = Some(cut_clean(&latest, GOAL_MAX_CHARS));
                    }
                    self.latest_prompt = Some(latest);
                    self.prompt_after_last_prompt = true;
                }
            }
        }
    }

    fn apply_assistant(&mut self, r: &Record<'_>, ts: Option<Timestamp>) {
        let Some(msg) = r.message.0.as_ref() else { return };
        let model = msg.model.get().unwrap_or("");
        if r.is_api_error_message.0 {
            if !r.is_sidechain.0 {
                self.api_error = true;
                self.set_tail(Tail::ApiError { retrying: false });
            }
            return;
        }
        if model == "<synthetic>" {
            return;
        }
        self.count_usage(msg, r.request_id.get());
        if r.is_sidechain.0 {
            return;
        }
        self.api_error = false;
        if !model.is_empty() && self.model.as_deref() != Some(model) {
            self.model = Some(model.to_owned());
        }
        let end_turn = msg.stop_reason.get() == Some("end_turn");
        match &msg.content {
            Content::Text(t) => {
                self.set_tail(Tail::AssistantText { end_turn, asks_question: asks_question(t) });
            }
            Content::Blocks(blocks) => {
                for b in blocks {
                    self.apply_assistant_block(b, ts, end_turn);
                }
            }
            Content::None | Content::Object(_) | Content::Other(_) => {}
        }
    }

    fn apply_assistant_block(&mut self, b: &Block<'_>, ts: Option<Timestamp>, end_turn: bool) {
        match b.kind.get() {
            Some("tool_use") => {
                let id = b.id.get().unwrap_or("").to_owned();
                if !id.is_empty() && self.open_tools.iter().any(|t| t.id == id) {
                    return; // a replayed block
                }
                // Most calls are answered within moments: keep a bounded raw prefix and
                // tidy it only if the call is ever shown as pending.
                let target = b.input.0.as_ref().and_then(|i| i.target()).unwrap_or("");
                self.open_tools.push(OpenTool {
                    id,
                    name: b.name.get().unwrap_or("tool").to_owned(),
                    target: prefix(target, GOAL_MAX_CHARS * 4).to_owned(),
                    since: ts,
                    running: false,
                });
                self.set_tail(Tail::ToolPending);
            }
            Some("text") => {
                let text = b.text.get().unwrap_or("");
                self.set_tail(Tail::AssistantText { end_turn, asks_question: asks_question(text) });
            }
            Some("thinking" | "redacted_thinking") => self.set_tail(Tail::Thinking),
            _ => {}
        }
    }

    /// Counts `u` in the total and under its model.
    fn add_usage(&mut self, model: &str, u: &Usage) {
        self.usage.add(u);
        if model.is_empty() || model == "<synthetic>" || model.len() > 128 {
            return;
        }
        if let Some(m) = self.usage_by_model.get_mut(model) {
            m.add(u);
        } else if self.usage_by_model.len() < MAX_MODELS {
            self.usage_by_model.add(model, u);
        }
    }

    fn count_usage(&mut self, msg: &transcript::Message<'_>, request_id: Option<&str>) {
        let Some(raw) = msg.usage.0.as_ref() else { return };
        self.malformed_fields += raw.invalid_fields();
        let u = usage_of(raw);
        let model = msg.model.get().unwrap_or("");
        let Some(id) = msg.id.get() else {
            self.add_usage(model, &u);
            return;
        };
        let key = fnv(&[id, request_id.unwrap_or("")]);
        match &mut self.last_message {
            // Another block of the message counted last: count only what grew.
            Some((k, counted)) if *k == key => {
                let grown = Usage {
                    input_tokens: u.input_tokens.saturating_sub(counted.input_tokens),
                    output_tokens: u.output_tokens.saturating_sub(counted.output_tokens),
                    cache_creation_input_tokens: u
                        .cache_creation_input_tokens
                        .saturating_sub(counted.cache_creation_input_tokens),
                    cache_read_input_tokens: u.cache_read_input_tokens.saturating_sub(counted.cache_read_input_tokens),
                };
                counted.add(&grown);
                self.add_usage(model, &grown);
            }
            _ => {
                if self.counted_messages.insert(key) {
                    self.add_usage(model, &u);
                    self.last_message = Some((key, u));
                }
            }
        }
    }

    fn apply_system(&mut self, r: &Record<'_>) {
        if r.is_sidechain.0 {
            return;
        }
        match r.subtype() {
            "turn_duration" | "stop_hook_summary" => {
                let asks = matches!(self.tail, Tail::AssistantText { asks_question: true, .. });
                if !matches!(self.tail, Tail::ToolPending) {
                    self.set_tail(Tail::TurnDone { asks_question: asks });
                }
            }
            "compact_boundary" => {
                let fresh = match r.uuid.get() {
                    Some(u) => self.counted_compactions.insert(fnv(&[u])),
                    None => true,
                };
                if fresh {
                    self.compaction_count += 1;
                }
                self.close_tools_before_now();
                self.set_tail(Tail::Compacting);
            }
            "api_error" => self.set_tail(Tail::ApiError { retrying: true }),
            "local_command" => self.set_tail(Tail::LocalOutput),
            _ => {}
        }
    }

    fn apply_progress(&mut self, r: &Record<'_>) {
        let kind = r.data.0.as_ref().and_then(|d| d.kind.get()).unwrap_or("");
        if kind == "hook_progress" {
            return; // a hook runs before the tool: says nothing about permission
        }
        let ids = [r.parent_tool_use_id.get(), r.tool_use_id.get()];
        for t in &mut self.open_tools {
            if ids.contains(&Some(t.id.as_str())) {
                t.running = true;
            }
        }
    }

    fn set_tail(&mut self, tail: Tail) {
        if let (Some(now), Some(set_at)) = (self.current, self.tail_at)
            && now < set_at
        {
            return;
        }
        self.tail = tail;
        if self.current.is_some() {
            self.tail_at = self.current;
        }
    }

    /// A new turn (or an abort) settles every tool call made before it; calls written
    /// after it in time (out of file order) stay open.
    fn close_tools_before_now(&mut self) {
        match self.current {
            Some(now) => self.open_tools.retain(|t| t.since.is_some_and(|s| s > now)),
            None => self.open_tools.clear(),
        }
    }

    /// The latest tool call still waiting for its result.
    pub fn pending_tool(&self) -> Option<&OpenTool> {
        self.open_tools.last()
    }

    /// Gives back the spare capacity a read left (strings cleaned from longer text, the
    /// tool calls once open, the dedup sets' growth): facts are kept for every session of
    /// the roster, tens of thousands of them.
    pub fn shrink_to_fit(&mut self) {
        let strings = [
            &mut self.cwd,
            &mut self.branch,
            &mut self.model,
            &mut self.goal,
            &mut self.command_goal,
            &mut self.summary_record,
            &mut self.compact_summary,
            &mut self.last_prompt,
            &mut self.latest_prompt,
            &mut self.cli_version,
            &mut self.entrypoint,
            &mut self.custom_title,
            &mut self.ai_title,
            &mut self.permission_mode,
            &mut self.record_session_id,
        ];
        for s in strings.into_iter().flatten() {
            s.shrink_to_fit();
        }
        self.open_tools.shrink_to_fit();
        self.usage_by_model.shrink_to_fit();
        self.counted_messages.shrink_to_fit();
        self.counted_compactions.shrink_to_fit();
    }

    /// Lets go of the dedup sets (messages, compaction boundaries) of a file that will be
    /// read no further (a one-time read): they are most of the memory of its facts.
    pub fn release_dedup(&mut self) {
        self.counted_messages = HashSet::new();
        self.counted_compactions = HashSet::new();
    }

    /// The dedup sets (messages, compaction boundaries) as bytes: a count and the
    /// little-endian hashes of each.
    pub fn dedup_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 8 * (self.counted_messages.len() + self.counted_compactions.len()));
        for set in [&self.counted_messages, &self.counted_compactions] {
            out.extend_from_slice(&(set.len() as u32).to_le_bytes());
            for h in set {
                out.extend_from_slice(&h.to_le_bytes());
            }
        }
        out
    }

    /// Restores what [`SessionFacts::dedup_bytes`] wrote. `None` when the bytes are not that.
    pub fn restore_dedup(&mut self, mut bytes: &[u8]) -> Option<()> {
        let mut sets = [HashSet::new(), HashSet::new()];
        for set in &mut sets {
            let n = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
            bytes = &bytes[4..];
            let body = bytes.get(..n.checked_mul(8)?)?;
            set.extend(body.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))));
            bytes = &bytes[n * 8..];
        }
        if !bytes.is_empty() {
            return None;
        }
        let [m, c] = sets;
        self.counted_messages = m;
        self.counted_compactions = c;
        Some(())
    }

    /// SPEC W4: summary record, else the compact summary, else the last prompt (a real
    /// prompt typed after the last `last-prompt` record wins: a resumed session's record
    /// is the previous run's until this one exits).
    pub fn summary(&self) -> Option<&str> {
        let last_prompt =
            if self.prompt_after_last_prompt { self.latest_prompt.as_deref() } else { self.last_prompt.as_deref() };
        self.summary_record.as_deref().or(self.compact_summary.as_deref()).or(last_prompt)
    }

    /// Does the CLI that wrote this transcript keep `sessions/<pid>.json` for as long as it
    /// runs? Interactive sessions (`entrypoint: cli`) of 2.1.197 and later do (observed):
    /// for them, no entry means the process is gone.
    pub fn registers_while_running(&self) -> bool {
        self.entrypoint.as_deref() == Some("cli")
            && self.cli_version.as_deref().is_some_and(|v| version_at_least(v, (2, 1, 197)))
    }

    pub fn title(&self) -> Option<&str> {
        self.custom_title.as_deref().or(self.ai_title.as_deref())
    }

    pub fn goal(&self) -> Option<&str> {
        self.goal.as_deref().or(self.command_goal.as_deref())
    }
}

/// Text already cleaned by [`clean_text`] with a larger limit, cut to `max` characters as
/// `clean_text(original, max)` would have cut it.
fn cut_clean(cleaned: &str, max: usize) -> String {
    match cleaned.char_indices().nth(max) {
        None => cleaned.to_owned(),
        Some((at, _)) => {
            let mut out = cleaned[..at].trim_end().to_owned();
            out.push('…');
            out
        }
    }
}

fn set(slot: &mut Option<String>, v: Option<&str>, max: usize) {
    if let Some(v) = v {
        let v = clean_text(v, max);
        if !v.is_empty() {
            *slot = Some(v);
        }
    }
}

fn first_text<'a>(c: &'a Content<'_>) -> Option<&'a str> {
    match c {
        Content::Text(t) => Some(t),
        Content::Blocks(b) => b.iter().find(|b| b.kind.get() == Some("text")).and_then(|b| b.text.get()),
        Content::None | Content::Object(_) | Content::Other(_) => None,
    }
}

/// `major.minor.patch` (a pre-release suffix aside) is at least `min`.
fn version_at_least(v: &str, min: (u64, u64, u64)) -> bool {
    let mut parts = v.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse::<u64>());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(c))) => (a, b, c) >= min,
        _ => false,
    }
}

/// The summary itself, out of the compact-summary message Claude Code writes after a
/// compaction: without the "This session is being continued…" preamble, the
/// `<system-reminder>` blocks (such as `<tools-used-before-summary>`), a leading
/// `Summary:` label, and the closing instructions ("If you need specific details…",
/// with the transcript's path, "Continue the conversation…", "The messages after this
/// summary…").
pub fn compact_summary_body(text: &str) -> &str {
    let mut t = text.trim();
    if t.starts_with("This session is being continued from a previous conversation") {
        // The preamble is one paragraph; 2.1.197 ends it with "summarized below:" on the
        // same line as the summary.
        t = match (t.find("\n\n"), t.find("summarized below:")) {
            (_, Some(i)) => &t[i + "summarized below:".len()..],
            (Some(i), None) => &t[i..],
            // One line: the summary is what follows its label, if it has one.
            (None, None) => t.find("Summary:").map_or("", |i| &t[i..]),
        };
    }
    let mut t = t.trim_start();
    while let Some(rest) = t.strip_prefix("<system-reminder>") {
        t = rest.split_once("</system-reminder>").map_or("", |(_, after)| after).trim_start();
    }
    t = t.strip_prefix("Summary:").unwrap_or(t).trim_start();
    for closing in [
        "\nIf you need specific details from before compaction",
        "\nContinue the conversation from where it left off",
        "\nThe messages after this summary",
        "\nPlease continue the conversation from where we left",
    ] {
        if let Some(i) = t.find(closing) {
            t = &t[..i];
        }
    }
    t.trim()
}

/// In a line that failed to parse, the start of a complete record glued after a torn
/// fragment, if there is one.
fn recover_glued_record<P: RecordParser + ?Sized>(parser: &P, line: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(line, b"{\"").filter(|&i| i > 0).take(8).find(|&i| {
        let mut s = String::new();
        transcript::parse_line_with(parser, &line[i..], &mut s).is_ok()
    })
}

#[cfg(test)]
mod tests;
