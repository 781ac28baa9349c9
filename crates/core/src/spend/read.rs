//! One transcript file's usage records, read line by line through the one transcript
//! reader ([`crate::transcript`]) and checked as ccusage checks them, so the same lines
//! count in both.

use crate::clock::Timestamp;
use crate::pricing::{CostState, RequestTokens};
use std::sync::LazyLock;

use memchr::memmem::Finder;

use crate::transcript::{self, Fields, MessageUsage, RecordParser, Tokens};

/// A model index that is no model: the record named none.
pub(super) const NO_MODEL: u32 = u32::MAX;
/// Claude Code's own stand-in for a message no API call made (an error shown as a reply).
pub(super) const SYNTHETIC: u32 = u32::MAX - 1;

/// One API request's usage, as one record of a file states it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageEntry {
    pub at: Timestamp,
    /// Hashes of `message.id` and `requestId`: a request Claude Code wrote several times
    /// (one record per content block, a resumed session's copy, a sidechain's replay)
    /// counts once.
    pub message: Option<u64>,
    pub request: Option<u64>,
    /// Index into the models of its file, or [`NO_MODEL`] / [`SYNTHETIC`].
    pub model: u32,
    pub tokens: RequestTokens,
    pub sidechain: bool,
    pub fast: bool,
    /// Its place among its file's records.
    pub seq: u32,
}

impl UsageEntry {
    /// Tokens of every kind: what ccusage compares to keep the fullest copy of a request.
    pub fn total(&self) -> u64 {
        let t = &self.tokens;
        t.input
            .saturating_add(t.output)
            .saturating_add(t.cache_write_5m)
            .saturating_add(t.cache_write_1h)
            .saturating_add(t.cache_read)
    }

    /// Of two copies of one request, is this one kept over `other`? ccusage's choice: a
    /// main-chain copy over a sidechain's replay, then the one with more tokens, then a
    /// fast one; else the first (in file order, `order` being each file's place, then in
    /// the file), so the choice does not depend on the order copies are met in.
    pub fn better_than(&self, order: u32, other: &UsageEntry, other_order: u32) -> bool {
        if self.sidechain != other.sidechain {
            return other.sidechain;
        }
        let (a, b) = (self.total(), other.total());
        if a != b {
            return a > b;
        }
        if self.fast != other.fast {
            return self.fast;
        }
        (order, self.seq) < (other_order, other.seq)
    }
}

/// Records left out of a report, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// A token count that cannot be right (negative, fractional, over 2^40, a string, null) or
    /// no input or output count at all.
    pub invalid_tokens: u64,
    /// No timestamp, or one that does not parse.
    pub no_time: u64,
    /// An empty id or model, or a `version` that is not one (ccusage leaves these out).
    pub invalid_record: u64,
    /// Lines that mention usage but are not JSON (a torn write).
    pub unreadable_lines: u64,
    /// Transcript files that could not be read.
    pub unreadable_files: u64,
}

impl Skipped {
    pub fn add(&mut self, o: &Skipped) {
        self.invalid_tokens += o.invalid_tokens;
        self.no_time += o.no_time;
        self.invalid_record += o.invalid_record;
        self.unreadable_lines += o.unreadable_lines;
        self.unreadable_files += o.unreadable_files;
    }
}

/// What one transcript file says about spend.
#[derive(Debug, Clone, Default)]
pub struct FileUsage {
    /// The session it belongs to: the file's own id, or for a subagent's file
    /// (`<session>/subagents/agent-….jsonl`) its parent's.
    pub session: String,
    /// The folder under `projects/` it is in.
    pub project_dir: String,
    /// Its place in the order files are taken in (their paths'): of two equal copies of a
    /// request, the one in the first file is kept.
    pub order: u32,
    /// The first working folder its records name.
    pub cwd: Option<String>,
    pub models: Vec<String>,
    pub entries: Vec<UsageEntry>,
    /// What Claude Code says it billed for the session (its last `cost-state`).
    pub billed_usd: Option<f64>,
    pub skipped: Skipped,
    /// Usage records kept so far (each one's `seq`).
    seen: u32,
}

/// Lines that state usage: the key, with its colon (a record Claude Code writes has no
/// space there; ccusage looks for `"usage":{`).
static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\":"));
static COST_STATE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"cost-state\""));

/// A `cost-state` record names its type first.
fn is_cost_state(line: &[u8]) -> bool {
    COST_STATE.find(&line[..line.len().min(64)]).is_some()
}

/// Lines longer than this are not records (the tail reader's cap).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How often [`FileUsage::add_text`] says how far it got.
const PROGRESS_EVERY: usize = 8 * 1024 * 1024;

/// Most models one file may name; a file naming more is hostile, and its other models
/// count as none.
const MAX_MODELS: usize = 256;

impl FileUsage {
    pub fn new(session: impl Into<String>, project_dir: impl Into<String>) -> FileUsage {
        FileUsage { session: session.into(), project_dir: project_dir.into(), ..Default::default() }
    }

    /// Usage records read so far (the next one's `seq`): kept in the cost cache so that a
    /// file that grew is read on from where it was.
    pub fn seen(&self) -> u32 {
        self.seen
    }

    pub fn set_seen(&mut self, seen: u32) {
        self.seen = seen;
    }

    /// Reads one line (without its newline).
    pub fn add_line<P: RecordParser + ?Sized>(&mut self, parser: &P, line: &[u8], scratch: &mut String) {
        if transcript::is_blank(line) || transcript::skippable(line).is_some() {
            return;
        }
        if USAGE.find(line).is_some() {
            self.usage_line(parser, line, scratch);
        } else if is_cost_state(line) {
            self.cost_state_line(parser, line, scratch);
        }
    }

    /// Reads a whole file's bytes (a last line without its newline is a record being
    /// written: not read). The same as [`FileUsage::add_line`] on each line, without
    /// visiting each line: only the lines that mention usage are looked at, found by one
    /// search through the bytes, then the `cost-state` records after the last of them.
    /// `progress` is told how far the reading got, now and then (a mapped file's pages
    /// before it can be let go).
    pub fn add_text<P: RecordParser + ?Sized>(
        &mut self,
        parser: &P,
        text: &[u8],
        scratch: &mut String,
        mut progress: impl FnMut(usize),
    ) {
        // Every line start at or after `pos` is one `add_line` would see.
        let mut pos = 0;
        let mut after_usage = 0;
        let mut told = 0;
        while let Some(hit) = USAGE.find(&text[pos..]).map(|i| pos + i) {
            let start = memchr::memrchr(b'\n', &text[pos..hit]).map_or(pos, |i| pos + i + 1);
            let Some(end) = memchr::memchr(b'\n', &text[hit..]).map(|i| hit + i) else { break };
            let line = &text[start..end];
            if line.len() <= MAX_LINE && transcript::skippable(line).is_none() {
                self.usage_line(parser, line, scratch);
                after_usage = end + 1;
            }
            pos = end + 1;
            if pos - told >= PROGRESS_EVERY {
                progress(pos);
                told = pos;
            }
        }
        let mut pos = after_usage;
        while let Some(hit) = COST_STATE.find(&text[pos..]).map(|i| pos + i) {
            let start = memchr::memrchr(b'\n', &text[pos..hit]).map_or(pos, |i| pos + i + 1);
            let Some(end) = memchr::memchr(b'\n', &text[hit..]).map(|i| hit + i) else { break };
            let line = &text[start..end];
            if line.len() <= MAX_LINE && transcript::skippable(line).is_none() && is_cost_state(line) {
                self.cost_state_line(parser, line, scratch);
            }
            pos = end + 1;
        }
        progress(text.len());
    }

    fn usage_line<P: RecordParser + ?Sized>(&mut self, parser: &P, line: &[u8], scratch: &mut String) {
        // A request after Claude Code's own figure makes that figure out of date.
        self.billed_usd = None;
        let record = match transcript::parse_fields_with(parser, line, scratch, Fields::Usage) {
            Ok(r) => r,
            Err(_) => {
                self.skipped.unreadable_lines += 1;
                return;
            }
        };
        if self.cwd.is_none()
            && let Some(c) = record.cwd.get().filter(|c| !c.is_empty() && c.len() <= 4096)
        {
            self.cwd = Some(c.to_owned());
        }
        if let Some(u) = record.message_usage() {
            self.add_usage(&u);
        }
    }

    fn cost_state_line<P: RecordParser + ?Sized>(&mut self, parser: &P, line: &[u8], scratch: &mut String) {
        let Ok(record) = transcript::parse_fields_with(parser, line, scratch, Fields::Usage) else { return };
        if record.kind() == "cost-state"
            && let Ok(c) = crate::json::from_slice::<CostState>(line)
            && let Some(b) = c.billed()
        {
            self.billed_usd = Some(b.cost_usd);
        }
    }

    /// Adds one record's usage, or counts why it is left out.
    pub fn add_usage(&mut self, u: &MessageUsage<'_>) {
        let Some(at) = u.timestamp.and_then(Timestamp::parse) else {
            self.skipped.no_time += 1;
            return;
        };
        let Some(tokens) = request_tokens(&u.usage) else {
            self.skipped.invalid_tokens += 1;
            return;
        };
        let empty = |s: Option<&str>| s.is_some_and(str::is_empty);
        if u.version.is_some_and(|v| !is_version(v))
            || empty(u.session_id)
            || empty(u.request_id)
            || empty(u.message_id)
            || empty(u.model)
        {
            self.skipped.invalid_record += 1;
            return;
        }
        let model = match u.model {
            None => NO_MODEL,
            Some("<synthetic>") => SYNTHETIC,
            Some(m) => self.model_index(m),
        };
        let entry = UsageEntry {
            at,
            message: u.message_id.map(|id| crate::facts::fnv(&[id])),
            request: u.request_id.map(|id| crate::facts::fnv(&[id])),
            model,
            tokens,
            sidechain: u.is_sidechain,
            fast: u.usage.speed.fast,
            seq: self.seen,
        };
        self.seen = self.seen.saturating_add(1);
        // Claude Code writes one record per content block of a message, one after the
        // other: the copies are folded here already (as the ledger would), so a file holds
        // each request once, not once per block.
        if let Some(last) = self.entries.last_mut()
            && entry.message.is_some()
            && (last.message, last.request) == (entry.message, entry.request)
        {
            if entry.better_than(0, last, 0) {
                *last = entry;
            }
            return;
        }
        self.entries.push(entry);
    }

    fn model_index(&mut self, m: &str) -> u32 {
        if let Some(i) = self.models.iter().position(|x| x == m) {
            return i as u32;
        }
        if self.models.len() >= MAX_MODELS || m.len() > 200 {
            return NO_MODEL;
        }
        self.models.push(m.to_owned());
        (self.models.len() - 1) as u32
    }
}

/// The tokens of a usage, or `None` when a count cannot be right or the input or output
/// count is missing (ccusage requires both). Cache writes are split between the 5-minute
/// and the 1-hour cache as `cache_creation` says (the 1-hour part at most the whole).
fn request_tokens(u: &transcript::RawUsage) -> Option<RequestTokens> {
    let split = u.cache_creation.0.unwrap_or_default();
    let counts = [
        u.input_tokens,
        u.output_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens,
        split.ephemeral_5m_input_tokens,
        split.ephemeral_1h_input_tokens,
    ];
    if counts.iter().any(|t| matches!(t, Tokens::Invalid | Tokens::Null)) {
        return None;
    }
    let (Tokens::Count(input), Tokens::Count(output)) = (u.input_tokens, u.output_tokens) else {
        return None;
    };
    let written = u.cache_creation_input_tokens.count();
    let hour = u.cache_creation.0.map_or(0, |c| c.ephemeral_1h_input_tokens.count()).min(written);
    Some(RequestTokens {
        input,
        output,
        cache_write_5m: written - hour,
        cache_write_1h: hour,
        cache_read: u.cache_read_input_tokens.count(),
    })
}

/// `major.minor.patch…`: what Claude Code writes as `version`.
fn is_version(v: &str) -> bool {
    let mut parts = v.splitn(3, '.');
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!((parts.next(), parts.next(), parts.next()),
        (Some(a), Some(b), Some(c)) if digits(a) && digits(b) && c.as_bytes().first().is_some_and(u8::is_ascii_digit))
}
