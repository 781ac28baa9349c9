//! A scripted mock of the Anthropic Messages API, served on `127.0.0.1` (random port).
//!
//! The server is a small hand-written HTTP/1.1 server on tokio rather than hyper: the
//! Claude Code CLI only needs a handful of endpoints, and owning the byte-level protocol
//! keeps the dependency tree at what the workspace already builds (tokio) while letting
//! us accept anything a client throws at it (keep-alive, `Content-Length` or chunked
//! request bodies, `Expect: 100-continue`, absolute-form proxy requests, `CONNECT`),
//! record it verbatim, and never hang.
//!
//! It runs on its own thread with its own tokio runtime, so it works the same from a
//! plain `#[test]` and from a `#[tokio::test]`, and dropping a [`MockApi`] stops it.
//!
//! # Routing
//! * `POST /v1/messages` (any query, e.g. `?beta=true`): classified by [`RequestKind`].
//!   [`RequestKind::Main`] requests (a turn of the main conversation) pop the next
//!   scripted [`Reply`] from the queue ([`MockApi::push`]) or get the default reply
//!   when the queue is empty. Side requests (title generation, `/compact` summaries, other
//!   one-shot helper calls) never touch the queue: they get [`MockApi::set_compact_reply`],
//!   a generated title, or a short text. `stream: true` answers Server-Sent Events,
//!   anything else a JSON message.
//! * `POST /v1/messages/count_tokens`: `{"input_tokens": <deterministic>}`.
//! * `CONNECT host:port` and absolute-form requests for another host (the mock doubles as
//!   the CLI's `HTTPS_PROXY`, see [`crate::claude::ClaudeHome::env`]): refused with 403 and
//!   recorded as [`RequestKind::External`], so tests can assert nothing tried to leave the
//!   machine.
//! * `HEAD`/`GET` on `/` and `/v1/...` probes: 200 with a tiny JSON body; anything else 404.
//!
//! Every request is recorded ([`MockApi::requests`]) with its parsed JSON body.
//! Message ids (`msg_mock_0001`, ...), tool-use ids (`toolu_mock_0001`, ...), request ids
//! (`req_mock_0001`, ...) and usage numbers are deterministic.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// Largest request head (request line + headers) accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted (the CLI's requests are a few hundred KB at most).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// An idle keep-alive connection is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Token usage reported for a reply (deterministic; see [`Reply::with_usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens`
    pub input_tokens: u64,
    /// `output_tokens`
    pub output_tokens: u64,
    /// `cache_creation_input_tokens`
    pub cache_creation_input_tokens: u64,
    /// `cache_read_input_tokens`
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Usage with the given input and output token counts and no cache tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self { input_tokens, output_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
    }

    fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        })
    }
}

/// One content block of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A `text` block.
    Text(String),
    /// A `tool_use` block; the id is assigned by the server (`toolu_mock_NNNN`).
    ToolUse {
        /// Tool name, e.g. `Bash`.
        name: String,
        /// Tool input object.
        input: Value,
    },
}

/// A gate that holds a reply until the test opens it (see [`Reply::with_gate`]).
///
/// Useful to observe the "request in flight" state of the CLI for as long as a test needs.
#[derive(Debug, Clone)]
pub struct Gate {
    tx: Arc<watch::Sender<bool>>,
}

impl Gate {
    /// A new, closed gate.
    pub fn new() -> Self {
        Self { tx: Arc::new(watch::channel(false).0) }
    }

    /// Opens the gate: held replies (and later ones using this gate) proceed.
    pub fn open(&self) {
        self.tx.send_replace(true);
    }

    async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // An error means the sender is gone, which cannot happen while `self` lives.
        let _ = rx.wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// A scripted answer to one main-conversation request.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: ReplyKind,
    usage: Usage,
    /// Pause after `message_start` (streaming) or before answering (non-streaming).
    delay: Duration,
    /// Pause between the later SSE frames.
    frame_delay: Duration,
    gate: Option<Gate>,
}

#[derive(Debug, Clone)]
enum ReplyKind {
    Message { blocks: Vec<Block>, stop_reason: String },
    Error { status: u16, error_type: String, message: String },
}

impl Reply {
    /// Default usage of a scripted reply.
    pub const DEFAULT_USAGE: Usage =
        Usage { input_tokens: 1000, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

    /// A reply with arbitrary blocks and stop reason.
    pub fn blocks(blocks: Vec<Block>, stop_reason: &str) -> Self {
        Self {
            kind: ReplyKind::Message { blocks, stop_reason: stop_reason.to_owned() },
            usage: Self::DEFAULT_USAGE,
            delay: Duration::ZERO,
            frame_delay: Duration::ZERO,
            gate: None,
        }
    }

    /// A single text block ending the turn (`stop_reason: "end_turn"`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::blocks(vec![Block::Text(text.into())], "end_turn")
    }

    /// A single `tool_use` block (`stop_reason: "tool_use"`).
    pub fn tool_use(name: impl Into<String>, input: Value) -> Self {
        Self::blocks(vec![Block::ToolUse { name: name.into(), input }], "tool_use")
    }

    /// A text block followed by a `tool_use` block (`stop_reason: "tool_use"`).
    pub fn text_then_tool_use(text: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::blocks(vec![Block::Text(text.into()), Block::ToolUse { name: name.into(), input }], "tool_use")
    }

    /// An HTTP error with an Anthropic error body, e.g. `(529, "overloaded_error", ...)`.
    ///
    /// Note that the CLI retries 429/5xx errors several times; each retry pops a reply.
    pub fn error(status: u16, error_type: &str, message: &str) -> Self {
        Self {
            kind: ReplyKind::Error { status, error_type: error_type.to_owned(), message: message.to_owned() },
            usage: Self::DEFAULT_USAGE,
            delay: Duration::ZERO,
            frame_delay: Duration::ZERO,
            gate: None,
        }
    }

    /// Replaces the reported usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Waits this long after `message_start` before streaming the content.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Streams the frames after `message_start` this far apart (a slow model), so the
    /// CLI sees each content block finish well before `message_delta`.
    pub fn with_frame_delay(mut self, delay: Duration) -> Self {
        self.frame_delay = delay;
        self
    }

    /// Holds the reply after `message_start` until `gate` is opened.
    pub fn with_gate(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }

    /// The blocks of this reply (empty for an error reply).
    pub fn content(&self) -> &[Block] {
        match &self.kind {
            ReplyKind::Message { blocks, .. } => blocks,
            ReplyKind::Error { .. } => &[],
        }
    }
}

/// What a recorded request was, as far as the mock could tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestKind {
    /// A turn of the main conversation (has tools and the main system prompt); answered
    /// from the scripted queue.
    Main,
    /// The `/compact` (or auto-compact) summarization request.
    Compact,
    /// A session title / topic generation request.
    Title,
    /// Claude Code's background service asking a small model which state a background job
    /// is in (2.1.332: "decide which of four states it's in"; the answer becomes
    /// `jobs/<id>/state.json`): answered with [`MockApi::set_job_state_reply`].
    JobState,
    /// The background service asking for a job's "2-4 word lowercase label" (its `name`):
    /// answered with [`MockApi::JOB_LABEL`].
    JobLabel,
    /// Any other `/v1/messages` call (one-shot helper calls, usually a small model).
    Side,
    /// `/v1/messages/count_tokens`.
    CountTokens,
    /// A `CONNECT` or absolute-form request for a host other than the mock: an attempt
    /// to reach the network, refused.
    External,
    /// Anything else (probes, unknown endpoints).
    Other,
}

/// One request as received by the mock.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// 1-based arrival order.
    pub seq: usize,
    /// When it arrived (fully read).
    pub at: Instant,
    /// HTTP method.
    pub method: String,
    /// The raw request target (path and query, or absolute URI, or `host:port`).
    pub target: String,
    /// The path part of the target (no query).
    pub path: String,
    /// The query string, without `?` (empty when absent).
    pub query: String,
    /// Headers in arrival order; names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Raw body (chunked encoding removed).
    pub body: Vec<u8>,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    /// Classification.
    pub kind: RequestKind,
    /// Short description of the answer given (e.g. `sse text "Done."`).
    pub answered: String,
}

impl RecordedRequest {
    /// A header value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The `model` field of the body.
    pub fn model(&self) -> Option<&str> {
        self.json.as_ref()?.get("model")?.as_str()
    }

    /// Whether the body asked for streaming.
    pub fn is_stream(&self) -> bool {
        self.json.as_ref().and_then(|j| j.get("stream")).and_then(Value::as_bool).unwrap_or(false)
    }

    /// Names of the tools offered in the body.
    pub fn tool_names(&self) -> Vec<String> {
        self.json
            .as_ref()
            .and_then(|j| j.get("tools"))
            .and_then(Value::as_array)
            .map(|tools| {
                tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).map(str::to_owned).collect()
            })
            .unwrap_or_default()
    }

    /// The system prompt flattened to text (string or array of text blocks).
    pub fn system_text(&self) -> String {
        self.json.as_ref().and_then(|j| j.get("system")).map(flatten_text).unwrap_or_default()
    }

    /// The `messages` array of the body (empty when absent).
    pub fn messages(&self) -> &[Value] {
        self.json.as_ref().and_then(|j| j.get("messages")).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Text of the last `user` message (text blocks only, joined).
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| m.get("content"))
            .map(flatten_text)
            .unwrap_or_default()
    }

    /// All `tool_result` blocks sent in the body's messages.
    pub fn tool_results(&self) -> Vec<Value> {
        self.messages()
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .cloned()
            .collect()
    }

    /// Body as text (lossy), for diagnostics.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl fmt::Display for RecordedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} {} {:?} model={} stream={} tools={} msgs={} body={}B -> {}",
            self.seq,
            self.method,
            self.target,
            self.kind,
            self.model().unwrap_or("-"),
            self.is_stream(),
            self.tool_names().len(),
            self.messages().len(),
            self.body.len(),
            self.answered
        )
    }
}

/// Flattens a string or an array of `{type: "text", text}` blocks to text.
fn flatten_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Decides what a `/v1/messages` request body is.
///
/// Observed with Claude Code 2.1.197:
/// * main turns: the full tool list, a system prompt starting with "You are Claude Code",
///   model `claude-opus-4-8`;
/// * `/compact`: the same shape as a main turn (tools included) plus a final user message
///   "CRITICAL: Respond with TEXT ONLY ... Your task is to create a detailed summary of the
///   conversation so far ...";
/// * title generation: model `claude-haiku-4-5-20251001`, `tools: []`, a system prompt
///   "Generate a concise, sentence-case title ..." and
///   `output_config.format` = a JSON schema with a `title` property.
///
/// Observed with 2.1.332's background service (model `claude-haiku-5-5`, no tools):
/// * the job-state classifier: a system prompt "… decide which of four states it's in …"
///   asking for `{"state", "detail", "tempo", "needs", "output"}` as bare JSON;
/// * the job label: a user message "2-4 word lowercase label for this job.".
///
/// Everything else is [`RequestKind::Side`].
pub fn classify_messages_request(body: &Value) -> RequestKind {
    let system = body.get("system").map(flatten_text).unwrap_or_default();
    let last_user = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user")))
        .and_then(|m| m.get("content"))
        .map(flatten_text)
        .unwrap_or_default();
    let has_tools = body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
    let schema_wants_title = body.pointer("/output_config/format/schema/properties/title").is_some();

    if last_user.contains("create a detailed summary of the conversation")
        || last_user.contains("summary of the conversation so far")
    {
        return RequestKind::Compact;
    }
    if schema_wants_title || (!has_tools && system.contains("title") && system.contains("Generate")) {
        return RequestKind::Title;
    }
    if has_tools && system.contains("You are Claude Code") {
        return RequestKind::Main;
    }
    if !has_tools && system.contains("decide which of four states") {
        return RequestKind::JobState;
    }
    if !has_tools && last_user.contains("lowercase label for this job") {
        return RequestKind::JobLabel;
    }
    RequestKind::Side
}

struct Inner {
    queue: VecDeque<Reply>,
    default_reply: Reply,
    compact_reply: Reply,
    job_state: Value,
    requests: Vec<RecordedRequest>,
    next_message: u64,
    next_tool: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running mock server. Dropping it stops the server.
pub struct MockApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockApi {
    /// Text of the default reply, given to main requests when the queue is empty.
    pub const DEFAULT_TEXT: &'static str = "OK.";
    /// Text of the default `/compact` summary.
    pub const DEFAULT_SUMMARY: &'static str = "Summary: the user asked for a file and it was created.";
    /// Title returned to title-generation requests.
    pub const TITLE: &'static str = "Mock session";
    /// Label returned to the background service's job-label requests (a job's `name`).
    pub const JOB_LABEL: &'static str = "mock job";

    /// The job state the classifier answers until [`MockApi::set_job_state_reply`]: done.
    pub fn default_job_state() -> Value {
        json!({"state": "done", "detail": "mock: the turn ended", "tempo": "idle", "output": {"result": "mock result"}})
    }

    /// Starts the server on `127.0.0.1:0`.
    pub fn start() -> Result<Self> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind mock API")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                default_reply: Reply::text(Self::DEFAULT_TEXT),
                compact_reply: Reply::text(Self::DEFAULT_SUMMARY),
                job_state: Self::default_job_state(),
                requests: Vec::new(),
                next_message: 0,
                next_tool: 0,
            }),
            changed: Condvar::new(),
        });
        let (tx, rx) = oneshot::channel();
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mock-api-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("mock API runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(std_listener).expect("mock API listener");
                    serve(listener, thread_shared, rx).await;
                });
                // Dropping the runtime cancels connection tasks still running.
            })
            .context("spawn mock API thread")?;
        Ok(Self { addr, shared, shutdown: Some(tx), thread: Some(thread) })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>` (for `ANTHROPIC_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a reply for the next main-conversation request.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Queues several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().queue.extend(replies);
    }

    /// Number of scripted replies not consumed yet.
    pub fn pending_replies(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Sets the reply given to main requests when the queue is empty.
    pub fn set_default_reply(&self, reply: Reply) {
        self.shared.lock().default_reply = reply;
    }

    /// Replaces what the background service's job-state classifier is told from now on:
    /// `{"state": "working|blocked|done|failed", "detail", "tempo": "active|idle|blocked",
    /// "needs"?, "output": {"result"?}}` (2.1.332 writes it into `jobs/<id>/state.json`).
    pub fn set_job_state_reply(&self, state: Value) {
        self.shared.lock().job_state = state;
    }

    /// Sets the reply given to `/compact` summarization requests.
    pub fn set_compact_reply(&self, reply: Reply) {
        self.shared.lock().compact_reply = reply;
    }

    /// A copy of every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// A copy of the requests of one kind.
    pub fn requests_of(&self, kind: &RequestKind) -> Vec<RecordedRequest> {
        self.shared.lock().requests.iter().filter(|r| r.kind == *kind).cloned().collect()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Blocks until a request matching `pred` has been recorded (looking at all requests,
    /// including earlier ones) and returns it; errors after `timeout`.
    pub fn wait_for_request(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&RecordedRequest) -> bool,
    ) -> Result<RecordedRequest> {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            if let Some(r) = inner.requests.iter().find(|r| pred(r)) {
                return Ok(r.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                let list: Vec<String> = inner.requests.iter().map(|r| r.to_string()).collect();
                bail!("no matching request within {timeout:?}; received:\n{}", list.join("\n"));
            }
            inner = self.shared.changed.wait_timeout(inner, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// One line per request, for diagnostics.
    pub fn summary(&self) -> String {
        let inner = self.shared.lock();
        let mut out = String::new();
        for r in &inner.requests {
            out.push_str(&r.to_string());
            out.push('\n');
        }
        out.push_str(&format!("({} scripted replies pending)\n", inner.queue.len()));
        out
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>, mut shutdown: oneshot::Receiver<()>) {
    let local = listener.local_addr().ok();
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = handle_connection(stream, shared, local).await;
                });
            }
        }
    }
}

/// A parsed request head.
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

async fn handle_connection(stream: TcpStream, shared: Arc<Shared>, local: Option<SocketAddr>) -> Result<()> {
    stream.set_nodelay(true).ok();
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    loop {
        let head = match tokio::time::timeout(IDLE_TIMEOUT, read_head(&mut rd)).await {
            Ok(Ok(Some(head))) => head,
            Ok(Ok(None)) | Err(_) => return Ok(()),
            Ok(Err(e)) => {
                let _ = write_simple(&mut wr, 400, "text/plain", b"bad request", true, false).await;
                return Err(e);
            }
        };
        if head.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
            wr.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let body = read_body(&mut rd, &head).await?;
        let close = head.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let keep_going = respond(&mut wr, &shared, head, body, local).await?;
        if close || !keep_going {
            let _ = wr.shutdown().await;
            return Ok(());
        }
    }
}

async fn read_head<R: AsyncBufReadExt + Unpin>(rd: &mut R) -> Result<Option<Head>> {
    let mut lines = Vec::new();
    let mut total = 0usize;
    loop {
        let mut line = Vec::new();
        let n = rd.read_until(b'\n', &mut line).await?;
        if n == 0 {
            if lines.is_empty() {
                return Ok(None);
            }
            bail!("connection closed inside request head");
        }
        total += n;
        if total > MAX_HEAD {
            bail!("request head too large");
        }
        let line = String::from_utf8_lossy(&line).trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            if lines.is_empty() {
                continue; // tolerate stray CRLF between requests
            }
            break;
        }
        lines.push(line);
    }
    let mut parts = lines[0].split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    if method.is_empty() || target.is_empty() {
        bail!("malformed request line {:?}", lines[0]);
    }
    let headers = lines[1..]
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Some(Head { method, target, headers }))
}

async fn read_body<R: AsyncBufReadExt + Unpin>(rd: &mut R, head: &Head) -> Result<Vec<u8>> {
    if head.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let mut line = Vec::new();
            if rd.read_until(b'\n', &mut line).await? == 0 {
                bail!("connection closed inside chunked body");
            }
            let line = String::from_utf8_lossy(&line);
            let size_text = line.trim().split(';').next().unwrap_or("").trim().to_owned();
            let size = usize::from_str_radix(&size_text, 16).map_err(|_| anyhow!("bad chunk size line {line:?}"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    let mut t = Vec::new();
                    if rd.read_until(b'\n', &mut t).await? == 0 || t == b"\r\n" || t == b"\n" {
                        break;
                    }
                }
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                bail!("request body too large");
            }
            let start = body.len();
            body.resize(start + size, 0);
            rd.read_exact(&mut body[start..]).await?;
            let mut crlf = Vec::new();
            rd.read_until(b'\n', &mut crlf).await?;
        }
    }
    let len = match head.header("content-length") {
        Some(v) => v.trim().parse::<usize>().map_err(|_| anyhow!("bad content-length {v:?}"))?,
        None => 0,
    };
    if len > MAX_BODY {
        bail!("request body too large");
    }
    let mut body = vec![0; len];
    rd.read_exact(&mut body).await?;
    Ok(body)
}

/// Splits a request target into (host if absolute-form, path, query).
fn split_target(target: &str) -> (Option<String>, String, String) {
    let (host, rest) = if let Some(after) = target.strip_prefix("http://").or_else(|| target.strip_prefix("https://")) {
        match after.find('/') {
            Some(i) => (Some(after[..i].to_owned()), after[i..].to_owned()),
            None => (Some(after.to_owned()), "/".to_owned()),
        }
    } else {
        (None, target.to_owned())
    };
    match rest.split_once('?') {
        Some((p, q)) => (host, p.to_owned(), q.to_owned()),
        None => (host, rest, String::new()),
    }
}

/// What to send back, decided under the lock.
enum Answer {
    Sse { frames: Vec<String>, delay: Duration, frame_delay: Duration, gate: Option<Gate>, request_id: String },
    Json { status: u16, body: Value, delay: Duration, gate: Option<Gate>, request_id: String },
    Simple { status: u16, body: &'static [u8], close: bool },
}

/// Answers one request; returns whether the connection may be reused.
async fn respond<W: AsyncWriteExt + Unpin>(
    wr: &mut W,
    shared: &Arc<Shared>,
    head: Head,
    body: Vec<u8>,
    local: Option<SocketAddr>,
) -> Result<bool> {
    let (host, path, query) = split_target(&head.target);
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    let is_local_host = |h: &str| local.is_some_and(|l| h == l.to_string() || h == format!("localhost:{}", l.port()));
    let external = head.method.eq_ignore_ascii_case("CONNECT") || host.as_deref().is_some_and(|h| !is_local_host(h));
    let is_messages = head.method == "POST" && path.ends_with("/v1/messages");
    let kind = if external {
        RequestKind::External
    } else if head.method == "POST" && path.ends_with("/v1/messages/count_tokens") {
        RequestKind::CountTokens
    } else if is_messages {
        json.as_ref().map(classify_messages_request).unwrap_or(RequestKind::Side)
    } else {
        RequestKind::Other
    };
    let stream = json.as_ref().and_then(|j| j.get("stream")).and_then(Value::as_bool).unwrap_or(false);
    let model = json.as_ref().and_then(|j| j.get("model")).and_then(Value::as_str).unwrap_or("claude-mock").to_owned();

    let answer;
    {
        let mut inner = shared.lock();
        let seq = inner.requests.len() + 1;
        let request_id = format!("req_mock_{seq:04}");
        let (answered, a) = match &kind {
            RequestKind::External => (
                "403 refused (external)".to_owned(),
                Answer::Simple { status: 403, body: b"mock API: no network in tests", close: true },
            ),
            RequestKind::CountTokens => {
                let n = json.as_ref().map(|j| j.to_string().len() as u64 / 4).unwrap_or(0);
                (
                    format!("count_tokens {n}"),
                    Answer::Json {
                        status: 200,
                        body: json!({"input_tokens": n}),
                        delay: Duration::ZERO,
                        gate: None,
                        request_id,
                    },
                )
            }
            RequestKind::Other => {
                let known = head.method == "HEAD" || (head.method == "GET" && (path == "/" || path.starts_with("/v1")));
                if known {
                    ("200 probe".to_owned(), Answer::Simple { status: 200, body: b"{}", close: false })
                } else {
                    ("404".to_owned(), Answer::Simple { status: 404, body: b"{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"not found\"}}", close: false })
                }
            }
            RequestKind::Main
            | RequestKind::Compact
            | RequestKind::Title
            | RequestKind::JobState
            | RequestKind::JobLabel
            | RequestKind::Side => {
                let reply = match kind {
                    RequestKind::Main => {
                        let r = inner.queue.pop_front();
                        r.unwrap_or_else(|| inner.default_reply.clone())
                    }
                    RequestKind::Compact => inner.compact_reply.clone(),
                    RequestKind::Title => title_reply(json.as_ref()),
                    RequestKind::JobState => Reply::text(inner.job_state.to_string()).with_usage(Usage::new(100, 30)),
                    RequestKind::JobLabel => Reply::text(MockApi::JOB_LABEL).with_usage(Usage::new(100, 3)),
                    _ => Reply::text(MockApi::DEFAULT_TEXT).with_usage(Usage::new(100, 5)),
                };
                render_reply(&mut inner, &reply, &model, stream, request_id)
            }
        };
        inner.requests.push(RecordedRequest {
            seq,
            at: Instant::now(),
            method: head.method.clone(),
            target: head.target.clone(),
            path,
            query,
            headers: head.headers.clone(),
            body,
            json,
            kind,
            answered,
        });
        answer = a;
    }
    shared.changed.notify_all();

    let head_only = head.method == "HEAD";
    match answer {
        Answer::Simple { status, body, close } => {
            write_simple(wr, status, "application/json", body, close, head_only).await?;
            Ok(!close)
        }
        Answer::Json { status, body, delay, gate, request_id } => {
            hold(delay, gate.as_ref()).await;
            let bytes = body.to_string().into_bytes();
            let head_text = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nrequest-id: {request_id}\r\nConnection: keep-alive\r\n\r\n",
                reason(status),
                bytes.len()
            );
            wr.write_all(head_text.as_bytes()).await?;
            if !head_only {
                wr.write_all(&bytes).await?;
            }
            wr.flush().await?;
            Ok(true)
        }
        Answer::Sse { frames, delay, frame_delay, gate, request_id } => {
            let head_text = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nrequest-id: {request_id}\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
            );
            wr.write_all(head_text.as_bytes()).await?;
            for (i, frame) in frames.iter().enumerate() {
                write_chunk(wr, frame.as_bytes()).await?;
                wr.flush().await?;
                if i == 0 {
                    hold(delay, gate.as_ref()).await;
                } else if !frame_delay.is_zero() {
                    tokio::time::sleep(frame_delay).await;
                }
            }
            wr.write_all(b"0\r\n\r\n").await?;
            wr.flush().await?;
            Ok(true)
        }
    }
}

async fn hold(delay: Duration, gate: Option<&Gate>) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(g) = gate {
        g.wait().await;
    }
}

/// A title reply: Claude Code asks for JSON `{"title": ...}` (older versions for plain text).
fn title_reply(body: Option<&Value>) -> Reply {
    let wants_json =
        body.is_some_and(|b| b.pointer("/output_config/format").is_some() || b.to_string().contains("JSON"));
    let text = if wants_json { json!({"title": MockApi::TITLE}).to_string() } else { MockApi::TITLE.to_owned() };
    Reply::text(text).with_usage(Usage::new(100, 5))
}

fn render_reply(inner: &mut Inner, reply: &Reply, model: &str, stream: bool, request_id: String) -> (String, Answer) {
    let (blocks, stop_reason) = match &reply.kind {
        ReplyKind::Error { status, error_type, message } => {
            return (
                format!("error {status} {error_type}"),
                Answer::Json {
                    status: *status,
                    body: json!({"type": "error", "error": {"type": error_type, "message": message}}),
                    delay: reply.delay,
                    gate: reply.gate.clone(),
                    request_id,
                },
            );
        }
        ReplyKind::Message { blocks, stop_reason } => (blocks, stop_reason),
    };
    inner.next_message += 1;
    let message_id = format!("msg_mock_{:04}", inner.next_message);
    let content: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::ToolUse { name, input } => {
                inner.next_tool += 1;
                json!({
                    "type": "tool_use",
                    "id": format!("toolu_mock_{:04}", inner.next_tool),
                    "name": name,
                    "input": input,
                })
            }
        })
        .collect();
    let answered = format!(
        "{} {} [{}] {stop_reason}",
        if stream { "sse" } else { "json" },
        message_id,
        blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => format!("text {:?}", truncate(t, 40)),
                Block::ToolUse { name, .. } => format!("tool_use {name}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    let usage = reply.usage.to_json();
    if !stream {
        let body = json!({
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": usage,
        });
        return (
            answered,
            Answer::Json { status: 200, body, delay: reply.delay, gate: reply.gate.clone(), request_id },
        );
    }
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let mut frames = vec![sse(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage,
        }}),
    )];
    for (index, block) in content.iter().enumerate() {
        let (start, delta) = if block["type"] == "text" {
            (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        frames.push(sse(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        frames
            .push(sse("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": delta})));
        frames.push(sse("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
    }
    frames.push(sse(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": usage}),
    ));
    frames.push(sse("message_stop", &json!({"type": "message_stop"})));
    (
        answered,
        Answer::Sse {
            frames,
            delay: reply.delay,
            frame_delay: reply.frame_delay,
            gate: reply.gate.clone(),
            request_id,
        },
    )
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

async fn write_chunk<W: AsyncWriteExt + Unpin>(wr: &mut W, data: &[u8]) -> Result<()> {
    wr.write_all(format!("{:x}\r\n", data.len()).as_bytes()).await?;
    wr.write_all(data).await?;
    wr.write_all(b"\r\n").await?;
    Ok(())
}

async fn write_simple<W: AsyncWriteExt + Unpin>(
    wr: &mut W,
    status: u16,
    content_type: &str,
    body: &[u8],
    close: bool,
    head_only: bool,
) -> Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if close { "close" } else { "keep-alive" }
    );
    wr.write_all(head.as_bytes()).await?;
    if !head_only {
        wr.write_all(body).await?;
    }
    wr.flush().await?;
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;

    /// A response read off a raw connection.
    struct Resp {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    }

    fn read_response(rd: &mut BufReader<TcpStream>, head_only: bool) -> Resp {
        let mut line = String::new();
        rd.read_line(&mut line).unwrap();
        let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            rd.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let get = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut body = Vec::new();
        if head_only {
        } else if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                let mut size = String::new();
                rd.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                rd.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else if let Some(len) = get("content-length") {
            body.resize(len.parse().unwrap(), 0);
            rd.read_exact(&mut body).unwrap();
        }
        Resp { status, headers, body: String::from_utf8(body).unwrap() }
    }

    fn connect(api: &MockApi) -> (TcpStream, BufReader<TcpStream>) {
        let s = TcpStream::connect(api.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        (s, r)
    }

    fn post(path: &str, body: &Value) -> Vec<u8> {
        let b = body.to_string();
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        )
        .into_bytes()
    }

    fn main_body(stream: bool) -> Value {
        json!({
            "model": "claude-test",
            "stream": stream,
            "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
            "tools": [{"name": "Bash", "input_schema": {}}],
            "messages": [{"role": "user", "content": "hi"}],
        })
    }

    fn sse_events(body: &str) -> Vec<(String, Value)> {
        body.split("\n\n")
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                let ev = f.lines().find_map(|l| l.strip_prefix("event: ")).unwrap();
                let data = f.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                (ev.to_owned(), serde_json::from_str(data).unwrap())
            })
            .collect()
    }

    #[test]
    fn streams_scripted_replies_in_order_on_one_connection() {
        let api = MockApi::start().unwrap();
        api.push(Reply::text_then_tool_use("intro", "Bash", json!({"command": "ls"})));
        api.push(Reply::text("done").with_usage(Usage::new(7, 3)));
        let (mut w, mut r) = connect(&api);

        w.write_all(&post("/v1/messages?beta=true", &main_body(true))).unwrap();
        let resp = read_response(&mut r, false);
        assert_eq!(resp.status, 200);
        assert!(resp.headers.iter().any(|(k, v)| k == "request-id" && v == "req_mock_0001"));
        let events = sse_events(&resp.body);
        let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(events[0].1["message"]["id"], "msg_mock_0001");
        assert_eq!(events[2].1["delta"]["text"], "intro");
        assert_eq!(events[4].1["content_block"]["id"], "toolu_mock_0001");
        assert_eq!(events[5].1["delta"]["type"], "input_json_delta");
        let input: Value = serde_json::from_str(events[5].1["delta"]["partial_json"].as_str().unwrap()).unwrap();
        assert_eq!(input, json!({"command": "ls"}));
        assert_eq!(events[7].1["delta"]["stop_reason"], "tool_use");
        assert_eq!(events[7].1["usage"]["output_tokens"], 20);

        // Same connection (keep-alive), chunked request body, non-streaming answer.
        let body = main_body(false).to_string();
        let (a, b) = body.split_at(10);
        write!(
            w,
            "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        )
        .unwrap();
        let resp = read_response(&mut r, false);
        let msg: Value = serde_json::from_str(&resp.body).unwrap();
        assert_eq!(msg["content"][0]["text"], "done");
        assert_eq!(msg["stop_reason"], "end_turn");
        assert_eq!(msg["usage"]["input_tokens"], 7);

        // Queue empty: the default reply.
        w.write_all(&post("/v1/messages", &main_body(false))).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        assert_eq!(msg["content"][0]["text"], MockApi::DEFAULT_TEXT);

        let reqs = api.requests();
        assert_eq!(reqs.len(), 3);
        assert!(reqs.iter().all(|r| r.kind == RequestKind::Main));
        assert_eq!(reqs[1].json, Some(main_body(false)), "chunked body decoded");
        assert_eq!(reqs[0].query, "beta=true");
    }

    #[test]
    fn side_requests_do_not_consume_the_queue() {
        let api = MockApi::start().unwrap();
        api.push(Reply::text("scripted"));
        let (mut w, mut r) = connect(&api);

        let title = json!({
            "model": "claude-haiku",
            "system": [{"type": "text", "text": "Generate a concise, sentence-case title"}],
            "tools": [],
            "output_config": {"format": {"type": "json_schema", "schema": {"properties": {"title": {"type": "string"}}}}},
            "messages": [{"role": "user", "content": "<session>x</session>"}],
        });
        w.write_all(&post("/v1/messages?beta=true", &title)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        let text = msg["content"][0]["text"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap()["title"], MockApi::TITLE);

        let mut compact = main_body(false);
        compact["messages"] = json!([
            {"role": "user", "content": "hi"},
            {"role": "user", "content": [{"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Your task is to create a detailed summary of the conversation so far"}]},
        ]);
        w.write_all(&post("/v1/messages", &compact)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        assert_eq!(msg["content"][0]["text"], MockApi::DEFAULT_SUMMARY);

        let side = json!({"model": "m", "messages": [{"role": "user", "content": "quota"}]});
        w.write_all(&post("/v1/messages", &side)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        assert_eq!(msg["content"][0]["text"], MockApi::DEFAULT_TEXT);

        w.write_all(&post("/v1/messages/count_tokens?beta=true", &side)).unwrap();
        let resp = read_response(&mut r, false);
        assert!(serde_json::from_str::<Value>(&resp.body).unwrap()["input_tokens"].is_u64());

        assert_eq!(api.pending_replies(), 1);
        let kinds: Vec<RequestKind> = api.requests().into_iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RequestKind::Title, RequestKind::Compact, RequestKind::Side, RequestKind::CountTokens]);
    }

    /// The background service's helper calls (2.1.332) get a scripted job state and a label,
    /// never a scripted main reply.
    #[test]
    fn job_state_and_label_requests() {
        let api = MockApi::start().unwrap();
        api.push(Reply::text("scripted"));
        let (mut w, mut r) = connect(&api);
        let state = json!({
            "model": "claude-haiku-5-5",
            "system": [{"type": "text", "text": "A user kicked off a Claude Code agent … decide which of four states it's in"}],
            "messages": [{"role": "user", "content": "Current state: working (for 0m)"}],
        });
        w.write_all(&post("/v1/messages?beta=true", &state)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        let told: Value = serde_json::from_str(msg["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(told, MockApi::default_job_state());
        api.set_job_state_reply(
            json!({"state": "blocked", "detail": "d", "tempo": "blocked", "needs": "n", "output": {}}),
        );
        w.write_all(&post("/v1/messages?beta=true", &state)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        assert!(msg["content"][0]["text"].as_str().unwrap().contains("\"blocked\""));

        let label = json!({"model": "claude-haiku-5-5", "messages": [{"role": "user",
            "content": "2-4 word lowercase label for this job.\nUser: \"say hello\""}]});
        w.write_all(&post("/v1/messages?beta=true", &label)).unwrap();
        let msg: Value = serde_json::from_str(&read_response(&mut r, false).body).unwrap();
        assert_eq!(msg["content"][0]["text"], MockApi::JOB_LABEL);

        assert_eq!(api.pending_replies(), 1);
        let kinds: Vec<RequestKind> = api.requests().into_iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RequestKind::JobState, RequestKind::JobState, RequestKind::JobLabel]);
    }

    #[test]
    fn probes_unknown_paths_errors_and_proxy_attempts() {
        let api = MockApi::start().unwrap();
        let (mut w, mut r) = connect(&api);
        w.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut r, true).status, 200);
        w.write_all(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut r, false).status, 404);

        api.push(Reply::error(529, "overloaded_error", "Overloaded"));
        w.write_all(&post("/v1/messages", &main_body(true))).unwrap();
        let resp = read_response(&mut r, false);
        assert_eq!(resp.status, 529);
        assert!(resp.body.contains("overloaded_error"));

        let (mut w2, mut r2) = connect(&api);
        w2.write_all(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut r2, false).status, 403);
        let ext = api.requests_of(&RequestKind::External);
        assert_eq!(ext.len(), 1);
        assert_eq!(ext[0].target, "example.com:443");
    }

    #[test]
    fn gate_holds_the_reply_until_opened() {
        let api = MockApi::start().unwrap();
        let gate = Gate::new();
        api.push(Reply::text("held").with_gate(&gate));
        let (mut w, mut r) = connect(&api);
        w.write_all(&post("/v1/messages", &main_body(true))).unwrap();
        api.wait_for_request(Duration::from_secs(5), |r| r.kind == RequestKind::Main).unwrap();
        // (Timed from before the opener starts: a test thread held up between the spawn and
        // the clock read would see less than the opener's wait.)
        let t = Instant::now();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            gate.open();
        });
        let resp = read_response(&mut r, false);
        assert!(t.elapsed() >= Duration::from_millis(250));
        assert!(resp.body.contains("\"held\""));
        opener.join().unwrap();
    }
}
