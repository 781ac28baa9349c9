//! Parsing one transcript line (a JSONL record written by Claude Code) into the fields
//! the roster needs, in one pass and mostly without allocating.
//!
//! Forward compatible by construction: unknown record types and fields are ignored, and a
//! known field with an unexpected type reads as absent instead of failing the record. Only
//! a line that is not JSON at all is "malformed". Large payloads (tool results, file
//! contents, progress data) are skipped by the parser without being materialised.
//!
//! The timeline (`crate::timeline`) reads the same records with the same reader, asking
//! for more of them ([`parse_timeline_line`]): contents whole, and [`TimelineFields`].

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

#[macro_use]
mod lenient;

use lenient::{Key, Scalar, drain_map, drain_seq};
pub use lenient::{Keyed, LBool, LMap, LStr, LU64, LUInt, MAX_TOKENS, Tokens};

/// `message.content`: a plain string or an array of blocks.
#[derive(Debug, Default)]
pub enum Content<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    /// An object where a string or a list was expected (read for the timeline only); boxed,
    /// as the roster's records never hold one and are moved whole a few times a line.
    Object(Box<serde_json::Value>),
    /// A number or a boolean, as JSON text (read for the timeline only).
    Other(String),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor { timeline: false })
    }
}

/// Reads a [`Content`]; for the timeline, every element of a list is kept (a string as
/// [`Block::bare`], anything else as an empty block) and an object or a scalar too.
#[derive(Clone, Copy)]
struct ContentVisitor {
    timeline: bool,
}

impl<'de> DeserializeSeed<'de> for ContentVisitor {
    type Value = Content<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or an array of content blocks")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Content::Text(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::new();
        if self.timeline {
            while let Some(b) = seq.next_element_seed(TimelineBlock)? {
                blocks.push(b);
            }
            return Ok(Content::Blocks(blocks));
        }
        while let Some(LMap(b)) = seq.next_element::<LMap<Block<'de>>>()? {
            if let Some(b) = b {
                blocks.push(b);
            }
        }
        Ok(Content::Blocks(blocks))
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
        if self.timeline {
            return serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(m))
                .map(|v| Content::Object(Box::new(v)));
        }
        drain_map(m).map(|_| Content::None)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(if self.timeline { Content::Other(v.to_string()) } else { Content::None })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(if self.timeline { Content::Other(v.to_string()) } else { Content::None })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(if self.timeline { Content::Other(serde_json::Value::from(v).to_string()) } else { Content::None })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(if self.timeline { Content::Other(serde_json::Value::from(v).to_string()) } else { Content::None })
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::None)
    }
}

impl Content<'_> {
    /// The content as text, the way the timeline shows it: a string as it is, a list's
    /// pieces ([`Block::piece`]) a line each, anything else as its JSON.
    pub fn text(&self) -> String {
        match self {
            Content::None => String::new(),
            Content::Text(t) => t.to_string(),
            Content::Blocks(blocks) => {
                let mut out = String::new();
                for p in blocks.iter().filter_map(Block::piece) {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&p);
                }
                out
            }
            Content::Object(v) => v.to_string(),
            Content::Other(t) => t.clone(),
        }
    }

    /// A JSON value read as content (a tool result's, for the timeline).
    pub fn of_value(v: &serde_json::Value) -> Content<'_> {
        ContentVisitor { timeline: true }.deserialize(v).unwrap_or_default()
    }
}

/// One content block, with only the fields the roster reads. Tool results' content and
/// thinking text are skipped unread.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub id: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub tool_use_id: LStr<'a>,
    pub is_error: LBool,
    #[serde(borrow)]
    pub input: LMap<ToolInput<'a>>,
    /// What only the timeline reads ([`TimelineBlock`]), boxed so that the roster's blocks
    /// stay small.
    #[serde(skip)]
    pub timeline: Option<Box<TimelineBlockFields<'a>>>,
}

/// What only the timeline reads of a content block.
#[derive(Debug, Default)]
pub struct TimelineBlockFields<'a> {
    /// A thinking block's text.
    pub thinking: LStr<'a>,
    /// A tool reference's tool.
    pub tool_name: LStr<'a>,
    /// A tool call's input, whole.
    pub input: Option<serde_json::Value>,
    /// A tool result's content, whole.
    pub content: Option<serde_json::Value>,
    /// The text of an element that is a bare string.
    pub bare: Option<Cow<'a, str>>,
}

/// What a block read for the roster has of [`TimelineBlockFields`].
const NO_TIMELINE_BLOCK_FIELDS: TimelineBlockFields<'static> =
    TimelineBlockFields { thinking: LStr(None), tool_name: LStr(None), input: None, content: None, bare: None };

/// An element of a content list, read whole for the timeline: an object as a [`Block`]
/// with every field the timeline shows, a string as [`Block::bare`], anything else as an
/// empty block.
#[derive(Clone, Copy)]
struct TimelineBlock;

impl<'de> DeserializeSeed<'de> for TimelineBlock {
    type Value = Block<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TimelineBlock {
    type Value = Block<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut b = Block::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "type" => b.kind = map.next_value()?,
                "id" => b.id = map.next_value()?,
                "name" => b.name = map.next_value()?,
                "text" => b.text = map.next_value()?,
                "tool_use_id" => b.tool_use_id = map.next_value()?,
                "is_error" => b.is_error = map.next_value()?,
                "thinking" => b.timeline.get_or_insert_default().thinking = map.next_value()?,
                "tool_name" => b.timeline.get_or_insert_default().tool_name = map.next_value()?,
                "input" => b.timeline.get_or_insert_default().input = Some(map.next_value()?),
                "content" => b.timeline.get_or_insert_default().content = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(b)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Block::bare(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Block::bare(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Block::bare(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
        drain_seq(s).map(|_| Block::default())
    }
    skip_scalars!(Block::default());
}

impl<'a> Block<'a> {
    /// An element that is a bare string.
    pub fn bare(text: Cow<'a, str>) -> Block<'a> {
        let fields = TimelineBlockFields { bare: Some(text), ..TimelineBlockFields::default() };
        Block { timeline: Some(Box::new(fields)), ..Block::default() }
    }

    /// What the timeline reads of it (all absent for a block read for the roster).
    pub fn timeline_fields(&self) -> &TimelineBlockFields<'a> {
        self.timeline.as_deref().unwrap_or(&NO_TIMELINE_BLOCK_FIELDS)
    }

    /// An object read as a block, for the timeline (a content that is one object).
    pub fn of_value(v: &'a serde_json::Value) -> Block<'a> {
        TimelineBlock.deserialize(v).unwrap_or_default()
    }

    /// What the block stands for in a text: its text, `[image]`, `[document]`,
    /// `[tool <name>]`, a bare string itself; `None` for anything else.
    pub fn piece(&self) -> Option<String> {
        match self.kind.get() {
            Some("text") => self.text.get().map(str::to_owned),
            Some("image") => Some("[image]".to_owned()),
            Some("document") => Some("[document]".to_owned()),
            Some("tool_reference") => self.timeline_fields().tool_name.get().map(|n| format!("[tool {n}]")),
            _ => self.timeline_fields().bare.as_deref().map(str::to_owned),
        }
    }

    /// A tool result's content as text ([`Content::text`]).
    pub fn content_text(&self) -> String {
        self.timeline_fields().content.as_ref().map(|c| Content::of_value(c).text()).unwrap_or_default()
    }
}

/// The fields of a tool's input that name what it acts on.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolInput<'a> {
    #[serde(borrow)]
    pub file_path: LStr<'a>,
    #[serde(borrow)]
    pub notebook_path: LStr<'a>,
    #[serde(borrow)]
    pub command: LStr<'a>,
    #[serde(borrow)]
    pub pattern: LStr<'a>,
    #[serde(borrow)]
    pub url: LStr<'a>,
    #[serde(borrow)]
    pub query: LStr<'a>,
    #[serde(borrow)]
    pub path: LStr<'a>,
    #[serde(borrow)]
    pub description: LStr<'a>,
    /// AskUserQuestion: the first question asked.
    #[serde(borrow)]
    pub questions: FirstQuestion<'a>,
    /// ExitPlanMode: the plan (markdown).
    #[serde(borrow)]
    pub plan: LStr<'a>,
}

/// The keys of a tool's input that name its target, in the order [`ToolInput::target`]
/// tries them (the UI's copy is generated from this list). `questions` is
/// AskUserQuestion's list (its first question), `plan` ExitPlanMode's (its first line).
pub const TARGET_KEYS: &[&str] =
    &["file_path", "notebook_path", "command", "pattern", "url", "query", "path", "questions", "plan", "description"];

impl ToolInput<'_> {
    /// SPEC W4: the target of a pending tool is its file_path, command, pattern or url;
    /// for AskUserQuestion the question, for ExitPlanMode the plan's first line.
    pub fn target(&self) -> Option<&str> {
        self.file_path
            .get()
            .or(self.notebook_path.get())
            .or(self.command.get())
            .or(self.pattern.get())
            .or(self.url.get())
            .or(self.query.get())
            .or(self.path.get())
            .or(self.questions.0.as_deref())
            .or(self.plan.get().map(first_line))
            .or(self.description.get())
    }
}

/// The first line with text of a markdown document, without its heading marks.
fn first_line(s: &str) -> &str {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").trim_start_matches('#').trim_start()
}

/// `questions` of AskUserQuestion: the `question` of its first entry; anything else reads
/// as absent, and the rest of the array is skipped unread.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FirstQuestion<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstQuestion<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Entry<'a> {
            #[serde(borrow, default)]
            question: LStr<'a>,
        }
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstQuestion<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of questions")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<LMap<Entry<'de>>>()?.and_then(|LMap(e)| e).and_then(|e| e.question.0);
                drain_seq(seq)?;
                Ok(FirstQuestion(first))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m).map(|_| FirstQuestion(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(FirstQuestion(None))
            }
            skip_scalars!(FirstQuestion(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(default)]
pub struct RawUsage {
    pub input_tokens: Tokens,
    pub output_tokens: Tokens,
    pub cache_creation_input_tokens: Tokens,
    pub cache_read_input_tokens: Tokens,
    /// How the cache writes split between the 5-minute and the 1-hour cache (priced apart).
    pub cache_creation: LMap<CacheCreation>,
    /// `"fast"` for a request in fast mode (priced at the table's multiplier).
    pub speed: Speed,
}

/// `usage.cache_creation`.
#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(default)]
pub struct CacheCreation {
    pub ephemeral_5m_input_tokens: Tokens,
    pub ephemeral_1h_input_tokens: Tokens,
}

/// `usage.speed`: fast mode or not (anything but the string `"fast"` is not).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Speed {
    pub fast: bool,
}

impl<'de> Deserialize<'de> for Speed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Speed { fast: matches!(Scalar::deserialize(d)?, Scalar::Str(s) if s == "fast") })
    }
}

impl RawUsage {
    /// How many of the four counts are present but not a sane count.
    pub fn invalid_fields(&self) -> u64 {
        let split = self.cache_creation.0.unwrap_or_default();
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            split.ephemeral_5m_input_tokens,
            split.ephemeral_1h_input_tokens,
        ]
        .iter()
        .filter(|t| **t == Tokens::Invalid)
        .count() as u64
    }
}

/// `message`: the API message a record carries.
#[derive(Debug, Default)]
pub struct Message<'a> {
    pub id: LStr<'a>,
    pub model: LStr<'a>,
    pub stop_reason: LStr<'a>,
    pub usage: LMap<RawUsage>,
    pub content: Content<'a>,
}

/// Which fields of a record a reader needs. One reader reads records either way; the
/// fields a reader does not need are skipped unread (not materialised).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// Everything the roster and the timeline read.
    #[default]
    All,
    /// What a cost report reads ([`Record::message_usage`], `cwd`, `type`): the message's
    /// content, tool results and side texts are skipped.
    Usage,
}

struct MessageVisitor<'a> {
    fields: Fields,
    /// Read for the timeline: the content whole ([`ContentVisitor`]).
    timeline: bool,
    _life: PhantomData<&'a ()>,
}

impl<'de: 'a, 'a> Visitor<'de> for MessageVisitor<'a> {
    type Value = Message<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an API message (a JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = Message::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "id" => m.id = map.next_value()?,
                "model" => m.model = map.next_value()?,
                "stop_reason" => m.stop_reason = map.next_value()?,
                "usage" => m.usage = map.next_value()?,
                "content" if self.timeline => m.content = map.next_value_seed(ContentVisitor { timeline: true })?,
                "content" if self.fields == Fields::All => m.content = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(m)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Message<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor { fields: Fields::All, timeline: false, _life: PhantomData })
    }
}

/// A message read for its usage only ([`Fields::Usage`]).
struct UsageMessage<'a>(Message<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for UsageMessage<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor { fields: Fields::Usage, timeline: false, _life: PhantomData })
            .map(UsageMessage)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProgressData<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: LStr<'a>,
    /// An `agent_progress` record's copy of a subagent's message (older versions wrote
    /// them into the parent's transcript): its usage counts, once.
    #[serde(borrow)]
    pub message: LMap<ProgressMessage<'a>>,
}

/// `data.message` of a progress record: the subagent's record, as far as usage goes.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProgressMessage<'a> {
    #[serde(borrow)]
    pub timestamp: LStr<'a>,
    #[serde(borrow)]
    pub request_id: LStr<'a>,
    pub is_sidechain: LBool,
    #[serde(borrow)]
    pub message: LMap<Message<'a>>,
}

/// One transcript record, as far as the roster is concerned.
///
/// Deserialized by hand (see the impl below): a derived visitor keeps an `Option` per
/// field and moves the whole struct several times per line, which was a third of the
/// cold index's time.
#[derive(Debug, Default)]
pub struct Record<'a> {
    pub kind: LStr<'a>,
    pub subtype: LStr<'a>,
    pub uuid: LStr<'a>,
    pub session_id: LStr<'a>,
    pub timestamp: LStr<'a>,
    pub cwd: LStr<'a>,
    pub git_branch: LStr<'a>,
    pub is_sidechain: LBool,
    pub is_meta: LBool,
    pub is_compact_summary: LBool,
    pub is_api_error_message: LBool,
    pub request_id: LStr<'a>,
    pub permission_mode: LStr<'a>,
    pub message: LMap<Message<'a>>,
    /// The text of a side-channel record, whichever key carries it for its type:
    /// `summary` (summary), `lastPrompt` (last-prompt), `customTitle` (custom-title),
    /// `aiTitle` (ai-title), `operation` (queue-operation). One slot keeps the struct small:
    /// it is zeroed and moved once per line.
    pub side_text: LStr<'a>,
    /// Boxed: most records have none, and the record is moved whole a few times a line.
    pub data: LMap<Box<ProgressData<'a>>>,
    pub parent_tool_use_id: LStr<'a>,
    pub tool_use_id: LStr<'a>,
    /// Only its string form matters (`"User rejected tool use"`); objects are skipped.
    pub tool_use_result: LStr<'a>,
    /// The top-level `content` of a `system` record (a local command's text).
    pub content: LStr<'a>,
    /// The Claude Code version that wrote the record, and how it was started.
    pub version: LStr<'a>,
    pub entrypoint: LStr<'a>,
    /// `bg` on the records of a background session (2.1.332).
    pub session_kind: LStr<'a>,
    /// What only the timeline reads ([`parse_timeline_line`]), boxed so that the record
    /// the roster reads stays small.
    pub timeline: Option<Box<TimelineFields<'a>>>,
}

lenient_struct! {
    /// What only the timeline reads of a record.
    pub struct TimelineFields<'a> {
        /// An assistant record that is an API error: the HTTP status.
        "apiErrorStatus" => api_error_status: LUInt,
        /// A `compact_boundary`'s metadata.
        "compactMetadata" => compact_metadata: LMap<CompactMetadata<'a>>,
        /// An `api_error` system record's error.
        "error" => error: LMap<ApiError<'a>>,
        /// A `turn_duration` system record's duration.
        "durationMs" => duration_ms: LUInt,
        /// The top-level `content` whatever its shape (a system record's text).
        "content" => content: Content<'a>,
    }
}

lenient_struct! {
    /// `compactMetadata`.
    pub struct CompactMetadata<'a> {
        "trigger" => trigger: LStr<'a>,
        "preTokens" => pre_tokens: LUInt,
    }
}

lenient_struct! {
    /// `error` of an `api_error` system record: the status and the API's message, nested
    /// (`error.error.message`) or not (`error.message`).
    pub struct ApiError<'a> {
        "status" => status: LUInt,
        "error" => error: LMap<ApiErrorDetail<'a>>,
        "message" => message: LStr<'a>,
    }
}

lenient_struct! {
    /// `error.error`.
    pub struct ApiErrorDetail<'a> {
        "message" => message: Keyed<LStr<'a>>,
    }
}

impl ApiError<'_> {
    /// The API's message: the nested one when its key is there (whatever its value), else
    /// the outer one.
    pub fn detail(&self) -> Option<&str> {
        match self.error.0.as_ref().filter(|e| e.message.present) {
            Some(e) => e.message.value.get(),
            None => self.message.get(),
        }
    }
}

/// Nothing the timeline reads: what a record without those fields has.
const NO_TIMELINE_FIELDS: TimelineFields<'static> = TimelineFields {
    api_error_status: LUInt(None),
    compact_metadata: LMap(None),
    error: LMap(None),
    duration_ms: LUInt(None),
    content: Content::None,
};

struct RecordVisitor<'a> {
    fields: Fields,
    /// Read for the timeline too ([`TimelineFields`], contents whole).
    timeline: bool,
    _life: PhantomData<&'a ()>,
}

impl<'de: 'a, 'a> Visitor<'de> for RecordVisitor<'a> {
    type Value = Record<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a transcript record (a JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut r = Record::default();
        if self.fields == Fields::Usage {
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                match key.as_ref() {
                    "type" => r.kind = map.next_value()?,
                    "sessionId" => r.session_id = map.next_value()?,
                    "timestamp" => r.timestamp = map.next_value()?,
                    "cwd" => r.cwd = map.next_value()?,
                    "isSidechain" => r.is_sidechain = map.next_value()?,
                    "requestId" => r.request_id = map.next_value()?,
                    "message" => r.message = LMap(map.next_value::<LMap<UsageMessage<'de>>>()?.0.map(|m| m.0)),
                    "data" => r.data = map.next_value()?,
                    "version" => r.version = map.next_value()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            return Ok(r);
        }
        let timeline = self.timeline;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "message" if timeline => {
                    r.message = map.next_value_seed(MessageSeed)?;
                }
                "content" if timeline => {
                    let content = map.next_value_seed(ContentVisitor { timeline: true })?;
                    r.content = LStr(match &content {
                        Content::Text(t) => Some(t.clone()),
                        _ => None,
                    });
                    r.timeline.get_or_insert_default().content = content;
                }
                "apiErrorStatus" if timeline => {
                    r.timeline.get_or_insert_default().api_error_status = map.next_value()?
                }
                "compactMetadata" if timeline => {
                    r.timeline.get_or_insert_default().compact_metadata = map.next_value()?
                }
                "error" if timeline => r.timeline.get_or_insert_default().error = map.next_value()?,
                "durationMs" if timeline => r.timeline.get_or_insert_default().duration_ms = map.next_value()?,
                "type" => r.kind = map.next_value()?,
                "subtype" => r.subtype = map.next_value()?,
                "uuid" => r.uuid = map.next_value()?,
                "sessionId" => r.session_id = map.next_value()?,
                "timestamp" => r.timestamp = map.next_value()?,
                "cwd" => r.cwd = map.next_value()?,
                "gitBranch" => r.git_branch = map.next_value()?,
                "isSidechain" => r.is_sidechain = map.next_value()?,
                "isMeta" => r.is_meta = map.next_value()?,
                "isCompactSummary" => r.is_compact_summary = map.next_value()?,
                "isApiErrorMessage" => r.is_api_error_message = map.next_value()?,
                "requestId" => r.request_id = map.next_value()?,
                "permissionMode" => r.permission_mode = map.next_value()?,
                "message" => r.message = map.next_value()?,
                "summary" | "lastPrompt" | "customTitle" | "aiTitle" | "operation" => r.side_text = map.next_value()?,
                "data" => r.data = map.next_value()?,
                "parentToolUseID" => r.parent_tool_use_id = map.next_value()?,
                "toolUseID" => r.tool_use_id = map.next_value()?,
                "toolUseResult" => r.tool_use_result = map.next_value()?,
                "content" => r.content = map.next_value()?,
                "version" => r.version = map.next_value()?,
                "entrypoint" => r.entrypoint = map.next_value()?,
                "sessionKind" => r.session_kind = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(r)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Record<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RecordVisitor { fields: Fields::All, timeline: false, _life: PhantomData })
    }
}

/// A record read for [`Fields::Usage`] only: what a [`RecordParser`] parses for a cost
/// report.
pub struct UsageRecord<'a>(pub Record<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for UsageRecord<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RecordVisitor { fields: Fields::Usage, timeline: false, _life: PhantomData }).map(UsageRecord)
    }
}

/// `message` read for the timeline: an object as a [`Message`] with its content whole,
/// anything else as absent.
struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = LMap<Message<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = LMap<Message<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an API message")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        MessageVisitor { fields: Fields::All, timeline: true, _life: PhantomData }.visit_map(map).map(|m| LMap(Some(m)))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(LMap(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
        drain_seq(s).map(|_| LMap(None))
    }
    skip_scalars!(LMap(None));
}

/// A line read for the timeline: a record, or `None` for JSON that is not an object
/// (neither a record nor malformed).
pub struct TimelineLine<'a>(pub Option<Record<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for TimelineLine<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = TimelineLine<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let record = RecordVisitor { fields: Fields::All, timeline: true, _life: PhantomData };
                record.visit_map(map).map(|r| TimelineLine(Some(r)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(TimelineLine(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s).map(|_| TimelineLine(None))
            }
            skip_scalars!(TimelineLine(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Parses one line for the timeline: every field the roster reads and [`TimelineFields`],
/// contents whole. The same guards as [`parse_line_with`] (depth, invalid UTF-8 replaced).
pub fn parse_timeline_line<'a>(line: &'a [u8], scratch: &'a mut String) -> Result<Option<Record<'a>>, Malformed> {
    if crate::json::too_deep(line, crate::json::MAX_DEPTH) {
        return Err(Malformed(format!("nested deeper than {} levels", crate::json::MAX_DEPTH)));
    }
    match serde_json::from_slice::<TimelineLine>(line) {
        Ok(l) => Ok(l.0),
        Err(e) => {
            if std::str::from_utf8(line).is_ok() {
                return Err(Malformed(e.to_string()));
            }
            *scratch = String::from_utf8_lossy(line).into_owned();
            serde_json::from_str::<TimelineLine>(scratch).map(|l| l.0).map_err(|e| Malformed(e.to_string()))
        }
    }
}

impl Record<'_> {
    pub fn kind(&self) -> &str {
        self.kind.get().unwrap_or("")
    }
    /// What the timeline reads of it (all absent unless read by [`parse_timeline_line`]).
    pub fn timeline_fields(&self) -> &TimelineFields<'_> {
        self.timeline.as_deref().unwrap_or(&NO_TIMELINE_FIELDS)
    }
    pub fn subtype(&self) -> &str {
        self.subtype.get().unwrap_or("")
    }
}

/// What a record says of one API request's tokens, for cost reports: any record with a
/// `message.usage` (the assistant's, whatever its type, as ccusage counts them), or an
/// `agent_progress` record's copy of a subagent's.
#[derive(Debug, Clone, Copy)]
pub struct MessageUsage<'r> {
    pub timestamp: Option<&'r str>,
    pub model: Option<&'r str>,
    pub message_id: Option<&'r str>,
    pub request_id: Option<&'r str>,
    pub session_id: Option<&'r str>,
    pub version: Option<&'r str>,
    pub is_sidechain: bool,
    pub usage: RawUsage,
}

impl<'a> Record<'a> {
    /// The usage this record states, if it states one.
    pub fn message_usage(&self) -> Option<MessageUsage<'_>> {
        if let Some(m) = self.message.0.as_ref()
            && let Some(usage) = m.usage.0
        {
            return Some(MessageUsage {
                timestamp: self.timestamp.get(),
                model: m.model.get(),
                message_id: m.id.get(),
                request_id: self.request_id.get(),
                session_id: self.session_id.get(),
                version: self.version.get(),
                is_sidechain: self.is_sidechain.0,
                usage,
            });
        }
        let p = self.data.0.as_ref()?.message.0.as_ref()?;
        let m = p.message.0.as_ref()?;
        Some(MessageUsage {
            timestamp: p.timestamp.get(),
            model: m.model.get(),
            message_id: m.id.get(),
            request_id: p.request_id.get(),
            session_id: None,
            version: None,
            is_sidechain: p.is_sidechain.0,
            usage: m.usage.0?,
        })
    }
}

/// A line that is not a record: not JSON, not an object, or nested too deep.
#[derive(Debug, thiserror::Error)]
#[error("malformed transcript line: {0}")]
pub struct Malformed(pub String);

/// The JSON parser records go through. [`SerdeJson`] here; the watcher plugs in a faster
/// one for the cold index. Either way [`parse_line_with`] applies the depth guard first.
pub trait RecordParser {
    /// Parses a record, reading only `fields` of it.
    fn parse_bytes<'a>(&self, line: &'a [u8], fields: Fields) -> Result<Record<'a>, Malformed>;
    fn parse_str<'a>(&self, line: &'a str, fields: Fields) -> Result<Record<'a>, Malformed>;
}

/// serde_json.
#[derive(Copy, Clone, Debug, Default)]
pub struct SerdeJson;

impl RecordParser for SerdeJson {
    fn parse_bytes<'a>(&self, line: &'a [u8], fields: Fields) -> Result<Record<'a>, Malformed> {
        match fields {
            Fields::All => serde_json::from_slice(line),
            Fields::Usage => serde_json::from_slice::<UsageRecord>(line).map(|r| r.0),
        }
        .map_err(|e| Malformed(e.to_string()))
    }
    fn parse_str<'a>(&self, line: &'a str, fields: Fields) -> Result<Record<'a>, Malformed> {
        match fields {
            Fields::All => serde_json::from_str(line),
            Fields::Usage => serde_json::from_str::<UsageRecord>(line).map(|r| r.0),
        }
        .map_err(|e| Malformed(e.to_string()))
    }
}

/// Parses one line with serde_json. See [`parse_line_with`].
pub fn parse_line<'a>(line: &'a [u8], scratch: &'a mut String) -> Result<Record<'a>, Malformed> {
    parse_line_with(&SerdeJson, line, scratch)
}

/// Parses one line. A line nested deeper than [`crate::json::MAX_DEPTH`] is malformed
/// before the parser sees it. Invalid UTF-8 is replaced (U+FFFD) rather than rejected: the
/// record's structure usually survives a mangled character, and it never panics.
/// `scratch` holds the repaired text when that happens.
pub fn parse_line_with<'a, P: RecordParser + ?Sized>(
    parser: &P,
    line: &'a [u8],
    scratch: &'a mut String,
) -> Result<Record<'a>, Malformed> {
    parse_fields_with(parser, line, scratch, Fields::All)
}

/// [`parse_line_with`], reading only `fields` of the record.
pub fn parse_fields_with<'a, P: RecordParser + ?Sized>(
    parser: &P,
    line: &'a [u8],
    scratch: &'a mut String,
    fields: Fields,
) -> Result<Record<'a>, Malformed> {
    if crate::json::too_deep(line, crate::json::MAX_DEPTH) {
        return Err(Malformed(format!("nested deeper than {} levels", crate::json::MAX_DEPTH)));
    }
    match parser.parse_bytes(line, fields) {
        Ok(r) => Ok(r),
        Err(e) => {
            if std::str::from_utf8(line).is_ok() {
                return Err(e);
            }
            *scratch = String::from_utf8_lossy(line).into_owned();
            parser.parse_str(scratch, fields)
        }
    }
}

/// Is this line blank (only whitespace)? Blank lines are neither records nor errors.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

/// Record types (top level) that carry nothing the roster or the timeline shows: 2.1.330's
/// copies of API requests, which are most of a transcript's bytes.
const SKIPPED_TYPES: &[&[u8]] = &[b"api-request-shape", b"api-request-blob", b"api-request", b"atis-latch"];

/// Attachment types of the same kind: the system prompt and tool listings sent each turn.
const SKIPPED_ATTACHMENTS: &[&[u8]] =
    &[b"prompt_snapshot", b"skill_listing", b"agent_listing_delta", b"deferred_tools_delta", b"mcp_instructions_delta"];

/// Where the record kind is looked for: the first bytes of a line, where Claude Code writes
/// `type` (or `attachment.type`, after `parentUuid` and `isSidechain`).
const KIND_WINDOW: usize = 256;

/// A record whose body need not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// One of [`SKIPPED_TYPES`]: not a conversation record at all.
    Request,
    /// One of [`SKIPPED_ATTACHMENTS`]: an attachment, so its time counts as activity.
    Attachment,
}

/// Is this a record whose body need not be read (see [`SKIPPED_TYPES`],
/// [`SKIPPED_ATTACHMENTS`])? Decided from the line's first bytes only, without parsing: a
/// line that does not begin the way Claude Code writes these is parsed as usual, so a
/// wrong guess can only cost time, never skip a record that matters.
pub fn skippable(line: &[u8]) -> Option<Skipped> {
    let head = &line[..line.len().min(KIND_WINDOW)];
    let named = |rest: &[u8], list: &[&[u8]]| {
        list.iter().any(|t| rest.strip_prefix(*t).is_some_and(|r| r.first() == Some(&b'"')))
    };
    if let Some(rest) = head.strip_prefix(b"{\"type\":\"") {
        return named(rest, SKIPPED_TYPES).then_some(Skipped::Request);
    }
    const ATTACHMENT: &[u8] = b",\"attachment\":{\"type\":\"";
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(ATTACHMENT));
    if head.starts_with(b"{\"parentUuid\":")
        && let Some(at) = FINDER.find(head)
    {
        return named(&head[at + ATTACHMENT.len()..], SKIPPED_ATTACHMENTS).then_some(Skipped::Attachment);
    }
    None
}

/// The last top-level-looking `"timestamp":"…"` of a line (Claude Code writes a record's
/// own timestamp after its body), read without parsing the line.
pub fn trailing_timestamp(line: &[u8]) -> Option<&str> {
    const KEY: &[u8] = b"\"timestamp\":\"";
    let at = memchr::memmem::rfind(line, KEY)? + KEY.len();
    let len = memchr::memchr(b'"', &line[at..])?;
    std::str::from_utf8(&line[at..at + len]).ok().filter(|s| s.len() <= 40)
}

#[cfg(test)]
mod tests;
