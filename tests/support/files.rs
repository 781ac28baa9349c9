//! Snapshots of what Claude Code writes under `$CLAUDE_CONFIG_DIR`: transcripts
//! (`projects/**/*.jsonl`) and the live process registry (`sessions/*.json`).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One transcript file.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// Parsed lines (a line that is not valid JSON is kept as a JSON string).
    pub records: Vec<Value>,
    /// Whether the file ends without a newline (a torn last line).
    pub torn: bool,
}

impl Transcript {
    /// The records of one `type`.
    pub fn records_of_type<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.records.iter().filter(move |r| record_type(r) == ty)
    }

    /// The last conversation record: ignores side-channel metadata without a `uuid`
    /// (`last-prompt`, `permission-mode`, `ai-title`, `file-history-snapshot`, ...),
    /// `attachment` and `progress` records.
    pub fn last_significant(&self) -> Option<&Value> {
        self.records
            .iter()
            .rev()
            .find(|r| r.get("uuid").is_some() && !matches!(record_type(r), "attachment" | "progress"))
    }

    /// The `system` records with the given subtype.
    pub fn system_records<'a>(&'a self, subtype: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.records_of_type("system").filter(move |r| r.get("subtype").and_then(Value::as_str) == Some(subtype))
    }

    /// All `tool_use` content blocks of assistant records.
    pub fn tool_uses(&self) -> Vec<&Value> {
        self.records_of_type("assistant").flat_map(content_blocks).filter(|b| block_type(b) == "tool_use").collect()
    }

    /// All `tool_result` content blocks of user records.
    pub fn tool_results(&self) -> Vec<&Value> {
        self.records_of_type("user").flat_map(content_blocks).filter(|b| block_type(b) == "tool_result").collect()
    }

    /// Whether some user record has `isCompactSummary: true`.
    pub fn has_compact_summary(&self) -> bool {
        self.records_of_type("user").any(|r| r.get("isCompactSummary").and_then(Value::as_bool) == Some(true))
    }
}

/// The `type` of a record (empty when absent).
pub fn record_type(r: &Value) -> &str {
    r.get("type").and_then(Value::as_str).unwrap_or("")
}

fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The content blocks of a user/assistant record (`message.content` as an array).
pub fn content_blocks(r: &Value) -> impl Iterator<Item = &Value> {
    r.get("message").and_then(|m| m.get("content")).and_then(Value::as_array).into_iter().flatten()
}

/// A one-line summary of a record: type, subtype and the fields that matter for state.
pub fn describe_record(r: &Value) -> String {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let ty = record_type(r);
    let mut out = ty.to_owned();
    match ty {
        "system" => {
            out.push('/');
            out.push_str(&s(r.get("subtype")));
            if let Some(c) = r.get("content").and_then(Value::as_str) {
                out.push_str(&format!(" {:?}", truncate(c, 50)));
            }
        }
        "user" | "assistant" => {
            let msg = r.get("message");
            let content = msg.and_then(|m| m.get("content"));
            match content {
                Some(Value::String(t)) => out.push_str(&format!(" text {:?}", truncate(t, 50))),
                Some(Value::Array(blocks)) => {
                    let kinds: Vec<String> = blocks
                        .iter()
                        .map(|b| match block_type(b) {
                            "text" => format!("text {:?}", truncate(&s(b.get("text")), 40)),
                            "tool_use" => format!("tool_use {}", s(b.get("name"))),
                            "tool_result" => format!(
                                "tool_result is_error={}",
                                b.get("is_error").and_then(Value::as_bool).unwrap_or(false)
                            ),
                            other => other.to_owned(),
                        })
                        .collect();
                    out.push_str(&format!(" [{}]", kinds.join(", ")));
                }
                _ => {}
            }
            if ty == "assistant" {
                let id = s(msg.and_then(|m| m.get("id")));
                let stop = msg.and_then(|m| m.get("stop_reason")).map(|v| v.to_string()).unwrap_or_else(|| "-".into());
                out.push_str(&format!(" id={id} stop_reason={stop}"));
            }
            for flag in ["isCompactSummary", "isMeta"] {
                if r.get(flag).and_then(Value::as_bool) == Some(true) {
                    out.push_str(&format!(" {flag}"));
                }
            }
        }
        "attachment" => {
            out.push('/');
            out.push_str(&s(r.get("attachment").and_then(|a| a.get("type"))));
        }
        "permission-mode" => out.push_str(&format!(" {}", s(r.get("permissionMode")))),
        "queue-operation" => out.push_str(&format!(" {}", s(r.get("operation")))),
        _ => {}
    }
    out
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

/// Transcripts and registry files at one moment.
#[derive(Debug, Clone, Default)]
pub struct FilesSnapshot {
    /// `projects/**/*.jsonl`, keyed by path (sub-agent files included).
    pub transcripts: BTreeMap<PathBuf, Transcript>,
    /// `sessions/*.json`, keyed by path (unparsable files as JSON strings).
    pub sessions: BTreeMap<PathBuf, Value>,
}

impl FilesSnapshot {
    /// Reads the files under `config_dir` (missing folders are empty).
    pub fn capture(config_dir: &Path) -> Self {
        let mut snap = Self::default();
        let mut jsonl = Vec::new();
        collect_files(&config_dir.join("projects"), "jsonl", &mut jsonl);
        for path in jsonl {
            let Ok(bytes) = fs::read(&path) else { continue };
            let text = String::from_utf8_lossy(&bytes);
            let records = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_owned())))
                .collect();
            let torn = !bytes.is_empty() && !bytes.ends_with(b"\n");
            snap.transcripts.insert(path, Transcript { records, torn });
        }
        if let Ok(entries) = fs::read_dir(config_dir.join("sessions")) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "json") {
                    let Ok(text) = fs::read_to_string(&path) else { continue };
                    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    snap.sessions.insert(path, value);
                }
            }
        }
        snap
    }

    /// Top-level transcripts (`projects/<project>/<id>.jsonl`, no sub-agent files).
    pub fn main_transcripts(&self) -> impl Iterator<Item = (&PathBuf, &Transcript)> {
        self.transcripts.iter().filter(|(p, _)| {
            p.parent().and_then(Path::parent).and_then(Path::file_name).is_some_and(|n| n == "projects")
        })
    }

    /// The transcript of a session id, if any.
    pub fn transcript_for(&self, session_id: &str) -> Option<&Transcript> {
        self.main_transcripts().find(|(p, _)| p.file_stem().is_some_and(|s| s == session_id)).map(|(_, t)| t)
    }

    /// The registry entry `sessions/<pid>.json`.
    pub fn session_for_pid(&self, pid: u32) -> Option<&Value> {
        let name = format!("{pid}.json");
        self.sessions.iter().find(|(p, _)| p.file_name().is_some_and(|n| n == name.as_str())).map(|(_, v)| v)
    }
}

impl fmt::Display for FilesSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "transcripts ({}):", self.transcripts.len())?;
        for (path, t) in &self.transcripts {
            writeln!(f, "  {}{}", path.display(), if t.torn { " (torn last line)" } else { "" })?;
            for (i, r) in t.records.iter().enumerate() {
                writeln!(f, "    {:>3} {}", i + 1, describe_record(r))?;
            }
        }
        writeln!(f, "sessions ({}):", self.sessions.len())?;
        for (path, v) in &self.sessions {
            writeln!(f, "  {}: {v}", path.display())?;
        }
        Ok(())
    }
}

fn collect_files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// One change seen by a [`Recorder`].
#[derive(Debug, Clone)]
pub enum FileEvent {
    /// A complete line was appended to a transcript (index is 0-based).
    Record {
        /// Transcript path.
        path: PathBuf,
        /// Line index.
        index: usize,
        /// The parsed record.
        record: Value,
    },
    /// A transcript got shorter or was replaced (content before `len` lines no longer
    /// matches); its records are re-read from the start.
    Truncated {
        /// Transcript path.
        path: PathBuf,
    },
    /// A `sessions/*.json` file was created or changed.
    Session {
        /// Registry file path.
        path: PathBuf,
        /// New content.
        value: Value,
    },
    /// A `sessions/*.json` file was removed.
    SessionRemoved {
        /// Registry file path.
        path: PathBuf,
    },
    /// A background session's `jobs/<id>/state.json` was written (2.1.332).
    Job {
        /// The job's short id (its folder's name).
        id: String,
        /// New content.
        value: Value,
    },
    /// A free-form note (see [`Recorder::note`]).
    Note(String),
}

/// A [`FileEvent`] with the time it was seen.
#[derive(Debug, Clone)]
pub struct TimedEvent {
    /// When the poll noticed it (up to one poll interval late).
    pub at: std::time::Instant,
    /// What happened.
    pub event: FileEvent,
}

#[derive(Default)]
struct RecorderState {
    events: Vec<TimedEvent>,
    /// Per transcript: number of complete lines seen.
    lines: BTreeMap<PathBuf, usize>,
    sessions: BTreeMap<PathBuf, String>,
    jobs: BTreeMap<String, String>,
}

/// Polls `$CLAUDE_CONFIG_DIR` every few milliseconds on a background thread and records
/// every appended transcript record, every change of `sessions/*.json` and of background
/// jobs' `jobs/*/state.json`, with times.
///
/// Meant for diagnostics and for measuring how quickly the CLI writes; it is not an
/// implementation of tailing (it re-reads files whose size changed).
pub struct Recorder {
    state: std::sync::Arc<std::sync::Mutex<RecorderState>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    t0: std::time::Instant,
}

impl Recorder {
    /// Poll interval.
    pub const INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

    /// Starts recording changes under `config_dir`.
    pub fn start(config_dir: &Path) -> Self {
        let state = std::sync::Arc::new(std::sync::Mutex::new(RecorderState::default()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let t0 = std::time::Instant::now();
        let (s, st, dir) = (state.clone(), stop.clone(), config_dir.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("claude-files-recorder".into())
            .spawn(move || {
                while !st.load(std::sync::atomic::Ordering::Relaxed) {
                    poll_once(&dir, &s);
                    std::thread::sleep(Self::INTERVAL);
                }
                poll_once(&dir, &s);
            })
            .ok();
        Self { state, stop, thread, t0 }
    }

    /// Adds a note to the timeline (e.g. "sent Enter").
    pub fn note(&self, text: impl Into<String>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.events.push(TimedEvent { at: std::time::Instant::now(), event: FileEvent::Note(text.into()) });
    }

    /// When recording started.
    pub fn started_at(&self) -> std::time::Instant {
        self.t0
    }

    /// A copy of all events so far.
    pub fn events(&self) -> Vec<TimedEvent> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).events.clone()
    }

    /// The timeline as text, one event per line, times relative to the start.
    pub fn timeline(&self) -> String {
        self.timeline_with(Vec::new())
    }

    /// The timeline merged with extra timed lines (e.g. API requests), sorted by time.
    pub fn timeline_with(&self, extra: Vec<(std::time::Instant, String)>) -> String {
        let mut events = self.events();
        events.extend(extra.into_iter().map(|(at, text)| TimedEvent { at, event: FileEvent::Note(text) }));
        events.sort_by_key(|e| e.at);
        let mut out = String::new();
        for e in events {
            let ms = e.at.saturating_duration_since(self.t0).as_millis();
            let file = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let line = match &e.event {
                FileEvent::Record { path, index, record } => {
                    format!("{} #{} {}", short_id(&file(path)), index + 1, describe_record(record))
                }
                FileEvent::Truncated { path } => format!("{} TRUNCATED", file(path)),
                FileEvent::Session { path, value } => {
                    format!("sessions/{} {}", file(path), describe_session(value))
                }
                FileEvent::SessionRemoved { path } => format!("sessions/{} REMOVED", file(path)),
                FileEvent::Job { id, value } => {
                    let g = |k: &str| value.get(k).map(|x| x.to_string()).unwrap_or_else(|| "-".into());
                    format!("jobs/{id} state={} tempo={} detail={}", g("state"), g("tempo"), g("detail"))
                }
                FileEvent::Note(n) => format!("-- {n}"),
            };
            out.push_str(&format!("{ms:>7}ms {line}\n"));
        }
        out
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn short_id(file_name: &str) -> String {
    file_name.chars().take(8).collect()
}

/// A compact description of a `sessions/<pid>.json` value.
pub fn describe_session(v: &Value) -> String {
    let g = |k: &str| v.get(k).map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    format!(
        "status={} waitingFor={} sessionId={} updatedAt={} statusUpdatedAt={}",
        g("status"),
        g("waitingFor"),
        short_id(v.get("sessionId").and_then(Value::as_str).unwrap_or("-")),
        g("updatedAt"),
        g("statusUpdatedAt")
    )
}

fn poll_once(dir: &Path, state: &std::sync::Mutex<RecorderState>) {
    let now = std::time::Instant::now();
    let mut jsonl = Vec::new();
    collect_files(&dir.join("projects"), "jsonl", &mut jsonl);
    let mut fresh = Vec::new();
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    for path in jsonl {
        let Ok(bytes) = fs::read(&path) else { continue };
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(i) => &bytes[..=i],
            None => &bytes[..0],
        };
        let text = String::from_utf8_lossy(complete);
        let lines: Vec<&str> = text.lines().collect();
        let seen = st.lines.get(&path).copied().unwrap_or(0);
        let start = if lines.len() < seen {
            fresh.push(FileEvent::Truncated { path: path.clone() });
            0
        } else {
            seen
        };
        for (i, l) in lines.iter().enumerate().skip(start) {
            let record = serde_json::from_str(l).unwrap_or_else(|_| Value::String((*l).to_owned()));
            fresh.push(FileEvent::Record { path: path.clone(), index: i, record });
        }
        st.lines.insert(path, lines.len());
    }
    let mut present = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(dir.join("sessions")) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Ok(text) = fs::read_to_string(&path)
            {
                present.insert(path, text);
            }
        }
    }
    for (path, text) in &present {
        if st.sessions.get(path) != Some(text) {
            let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()));
            fresh.push(FileEvent::Session { path: path.clone(), value });
        }
    }
    for path in st.sessions.keys() {
        if !present.contains_key(path) {
            fresh.push(FileEvent::SessionRemoved { path: path.clone() });
        }
    }
    st.sessions = present;
    for entry in fs::read_dir(dir.join("jobs")).into_iter().flatten().flatten() {
        let id = entry.file_name().to_string_lossy().into_owned();
        let Ok(text) = fs::read_to_string(entry.path().join("state.json")) else { continue };
        if st.jobs.get(&id) != Some(&text) {
            if let Ok(value) = serde_json::from_str(&text) {
                fresh.push(FileEvent::Job { id: id.clone(), value });
            }
            st.jobs.insert(id, text);
        }
    }
    st.events.extend(fresh.into_iter().map(|event| TimedEvent { at: now, event }));
}
