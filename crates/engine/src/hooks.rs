//! Claude Code hooks (SPEC C5, W5): what `mimesis hook` records, and how the engine reads
//! it back.
//!
//! `mimesis hook` runs inside Claude Code, synchronously, several times per turn. It must
//! cost a few milliseconds, print nothing on stdout (SessionStart and UserPromptSubmit
//! output is injected into the model's context), and never fail in a way Claude Code
//! notices. So it does no scanning and talks to no server: it appends one JSON line per
//! event to a spool file in Mimesis's data dir (`hooks/events-YYYY-MM-DD.jsonl`) with a
//! single `O_APPEND` write, which concurrent hooks and a running app can share without
//! locks. The engine tails the spool like a transcript.
//!
//! The payload is untrusted: the session id is validated, the cwd is only used for the
//! compaction marker after it was checked to be a plain absolute folder, and nothing
//! else becomes a path. [`install`] edits Claude Code's `settings.json`.

pub mod install;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::status::HookState;

/// The most `mimesis hook` reads from stdin (a Stop payload repeats the last answer).
pub const MAX_PAYLOAD: usize = 8 * 1024 * 1024;
/// A spool line longer than this is not ours.
pub const MAX_SPOOL_LINE: usize = 64 * 1024;
/// Spool files older than this many days are deleted by the engine.
pub const SPOOL_KEEP_DAYS: i64 = 7;
/// The hook log is cut back to nothing past this size.
const MAX_LOG: u64 = 1024 * 1024;
/// Terminal ids and other environment values longer than this are dropped.
const MAX_ENV_VALUE: usize = 128;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("the hook payload is not a JSON object: {0}")]
    Payload(String),
    #[error("the hook payload has no valid session id: {0}")]
    SessionId(String),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("no compaction marker: {0}")]
    Marker(String),
}

/// Where `claude` runs: enough to tell two terminals in one folder apart (SPEC C2).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TerminalContext {
    /// The `claude` process that ran the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_pid: Option<u32>,
    /// Its start time in clock ticks since boot: a PID alone may be reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_start: Option<u64>,
    /// Its controlling terminal (`pts/3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kitty_window_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wezterm_pane: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterm_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term_session_id: Option<String>,
}

impl TerminalContext {
    /// The `claude` process, when both its PID and start time are known.
    pub fn process(&self) -> Option<(u32, u64)> {
        Some((self.claude_pid?, self.claude_start?))
    }

    /// Terminal-emulator ids (not the process): equal when both name the same tab.
    fn terminal_ids(&self) -> [(&'static str, Option<&str>); 5] {
        [
            ("kitty", self.kitty_window_id.as_deref()),
            ("tmux", self.tmux_pane.as_deref()),
            ("wezterm", self.wezterm_pane.as_deref()),
            ("iterm", self.iterm_session_id.as_deref()),
            ("term", self.term_session_id.as_deref()),
        ]
    }

    /// Same tab of the same terminal: the same process, else the same TTY, else the same
    /// terminal-emulator id. `None` when nothing comparable is known on both sides.
    pub fn same_terminal(&self, other: &TerminalContext) -> Option<bool> {
        if let (Some(a), Some(b)) = (self.process(), other.process())
            && a == b
        {
            return Some(true);
        }
        if let (Some(a), Some(b)) = (&self.tty, &other.tty) {
            return Some(a == b);
        }
        let mut compared = false;
        for ((_, a), (_, b)) in self.terminal_ids().iter().zip(other.terminal_ids().iter()) {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    return Some(false);
                }
                compared = true;
            }
        }
        if compared { Some(true) } else { None }
    }

    pub fn is_empty(&self) -> bool {
        *self == TerminalContext::default()
    }
}

/// One hook invocation as recorded in the spool (one JSON line).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HookEvent {
    pub at: Timestamp,
    /// `hook_event_name`: SessionStart, SessionEnd, Stop, Notification, UserPromptSubmit…
    pub event: String,
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// SessionStart: startup | resume | clear | compact | fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// SessionEnd: clear | logout | prompt_input_exit | other…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification: permission_prompt | idle_prompt | …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
    #[serde(default, skip_serializing_if = "TerminalContext::is_empty")]
    pub terminal: TerminalContext,
}

impl HookEvent {
    /// What this event says about the session's state (SPEC W5), if anything.
    pub fn state(&self) -> Option<HookState> {
        match self.event.as_str() {
            "UserPromptSubmit" | "PreToolUse" | "PostToolUse" => Some(HookState::Working),
            "Stop" => Some(HookState::TurnDone),
            "SessionEnd" => Some(HookState::Ended),
            "PermissionRequest" => Some(HookState::WaitingForApproval),
            "Notification" => match self.notification_type.as_deref() {
                Some("permission_prompt") => Some(HookState::WaitingForApproval),
                // Sixty seconds at the prompt: the turn is over.
                Some("idle_prompt") => Some(HookState::TurnDone),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn is_session_start(&self, source: &str) -> bool {
        self.event == "SessionStart" && self.source.as_deref() == Some(source)
    }

    pub fn is_session_end(&self, reason: &str) -> bool {
        self.event == "SessionEnd" && self.reason.as_deref() == Some(reason)
    }
}

/// The fields of Claude Code's hook payload that Mimesis uses; everything else (the
/// last answer of a Stop, tool inputs) is ignored.
#[derive(Deserialize, Default)]
struct Payload {
    #[serde(default)]
    session_id: Option<serde_json::Value>,
    #[serde(default)]
    hook_event_name: Option<serde_json::Value>,
    #[serde(default)]
    cwd: Option<serde_json::Value>,
    #[serde(default)]
    transcript_path: Option<serde_json::Value>,
    #[serde(default)]
    source: Option<serde_json::Value>,
    #[serde(default)]
    reason: Option<serde_json::Value>,
    #[serde(default)]
    notification_type: Option<serde_json::Value>,
}

fn short_text(v: Option<serde_json::Value>, max: usize) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) if s.len() <= max && !s.chars().any(char::is_control) => Some(s),
        _ => None,
    }
}

/// An environment value kept only if it is short and printable.
pub fn clean_env_value(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty() && s.len() <= MAX_ENV_VALUE && s.bytes().all(|b| (0x20..0x7f).contains(&b)))
}

/// Turns a raw payload into the event to record.
pub fn parse_payload(bytes: &[u8], at: Timestamp, terminal: TerminalContext) -> Result<HookEvent, HookError> {
    let p: Payload = serde_json::from_slice(bytes).map_err(|e| HookError::Payload(e.to_string()))?;
    let raw_id = match &p.session_id {
        Some(serde_json::Value::String(s)) => s.clone(),
        other => return Err(HookError::SessionId(format!("{other:?}"))),
    };
    let session_id = SessionId::parse(&raw_id).map_err(|e| HookError::SessionId(e.to_string()))?;
    let event = short_text(p.hook_event_name, 64).unwrap_or_else(|| "Unknown".to_owned());
    Ok(HookEvent {
        at,
        event,
        session_id,
        cwd: short_text(p.cwd, 4096),
        transcript_path: short_text(p.transcript_path, 4096),
        source: short_text(p.source, 64),
        reason: short_text(p.reason, 64),
        notification_type: short_text(p.notification_type, 64),
        terminal,
    })
}

/// The spool folder in Mimesis's data dir.
pub fn spool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("hooks")
}

/// Today's spool file (one per UTC day keeps files small and lets old ones be deleted).
pub fn spool_file(data_dir: &Path, at: Timestamp) -> PathBuf {
    spool_dir(data_dir).join(format!("events-{}.jsonl", &at.to_iso()[..10]))
}

/// Is this a spool file name, and of which day (`YYYY-MM-DD`)?
pub fn spool_day(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let day = name.strip_prefix("events-")?.strip_suffix(".jsonl")?;
    (day.len() == 10 && day.bytes().all(|b| b.is_ascii_digit() || b == b'-')).then_some(day)
}

/// The hook's own log: why an invocation recorded nothing.
pub fn log_file(data_dir: &Path) -> PathBuf {
    spool_dir(data_dir).join("hook.log")
}

fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Appends one event to the spool with a single write, so lines of concurrent hooks never
/// interleave.
pub fn append_event(data_dir: &Path, ev: &HookEvent) -> Result<(), HookError> {
    let path = spool_file(data_dir, ev.at);
    let mut line = serde_json::to_vec(ev).map_err(|e| HookError::Payload(e.to_string()))?;
    line.push(b'\n');
    let write = || -> std::io::Result<()> {
        ensure_private_dir(&spool_dir(data_dir))?;
        let mut f = OpenOptions::new().append(true).create(true).mode(0o600).open(&path)?;
        f.write_all(&line)
    };
    write().map_err(|source| HookError::Write { path: path.clone(), source })
}

/// Appends a line to the hook log (best effort: the hook has nowhere else to complain).
pub fn log(data_dir: &Path, at: Timestamp, message: &str) {
    let path = log_file(data_dir);
    let _ = ensure_private_dir(&spool_dir(data_dir));
    if fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG) {
        let _ = fs::remove_file(&path);
    }
    if let Ok(mut f) = OpenOptions::new().append(true).create(true).mode(0o600).open(&path) {
        let line: String = message.chars().filter(|c| !c.is_control()).take(2000).collect();
        let _ = f.write_all(format!("{} {line}\n", at.to_iso()).as_bytes());
    }
}

/// A cwd from a payload, usable as a folder to write the marker into: absolute, no `.` or
/// `..` parts, no NUL, an existing folder.
pub fn checked_cwd(cwd: &str) -> Result<PathBuf, HookError> {
    let p = Path::new(cwd);
    if cwd.is_empty() || cwd.len() > 4096 || cwd.contains('\0') || !p.is_absolute() {
        return Err(HookError::Marker(format!("cwd {cwd:?} is not an absolute path")));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return Err(HookError::Marker(format!("cwd {cwd:?} has '.' or '..' parts")));
    }
    if !p.is_dir() {
        return Err(HookError::Marker(format!("cwd {cwd:?} is not a folder")));
    }
    Ok(p.to_owned())
}

/// The marker file of seed 001 (SPEC C1): `<cwd>/.claude/compacted.<newSessionId>.marker`.
pub fn marker_path(cwd: &Path, id: &SessionId) -> PathBuf {
    cwd.join(".claude").join(format!("compacted.{id}.marker"))
}

/// Writes the compaction marker for a `SessionStart` with source `compact`, atomically
/// (a temporary file renamed into place), never through a symlinked `.claude`.
pub fn write_marker(ev: &HookEvent) -> Result<PathBuf, HookError> {
    let cwd = checked_cwd(ev.cwd.as_deref().unwrap_or(""))?;
    let dir = cwd.join(".claude");
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(HookError::Marker(format!("{} is not a plain folder", dir.display()))),
        Err(_) => fs::DirBuilder::new()
            .mode(0o755)
            .create(&dir)
            .map_err(|source| HookError::Write { path: dir.clone(), source })?,
    }
    let path = marker_path(&cwd, &ev.session_id);
    let body = serde_json::json!({
        "newSessionId": ev.session_id,
        "cwd": cwd.to_string_lossy(),
        "compactedAt": ev.at,
    });
    let tmp = dir.join(format!(".compacted.{}.{}.tmp", ev.session_id, std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = OpenOptions::new().write(true).create_new(true).mode(0o644).open(&tmp)?;
        f.write_all(body.to_string().as_bytes())?;
        drop(f);
        fs::rename(&tmp, &path)
    };
    write().map_err(|source| {
        let _ = fs::remove_file(&tmp);
        HookError::Write { path: path.clone(), source }
    })?;
    Ok(path)
}

/// What `mimesis hook` does with a payload: record the event, and for a compaction write
/// the marker. Errors are for the log only; the caller exits 0 regardless.
pub fn record(
    data_dir: &Path,
    payload: &[u8],
    at: Timestamp,
    terminal: TerminalContext,
) -> Result<HookEvent, HookError> {
    let ev = parse_payload(payload, at, terminal)?;
    append_event(data_dir, &ev)?;
    if ev.is_session_start("compact")
        && let Err(e) = write_marker(&ev)
    {
        log(data_dir, at, &format!("session {}: {e}", ev.session_id));
    }
    Ok(ev)
}

/// Reads one spool line. Anything malformed (a torn write, a hand-edited file) is `None`.
pub fn parse_spool_line(line: &[u8]) -> Option<HookEvent> {
    if line.len() > MAX_SPOOL_LINE {
        return None;
    }
    serde_json::from_slice(line).ok()
}

/// The terminal context of the `claude` process running this hook: walks up from the
/// hook's parent past shells (Claude Code may run hooks through `sh -c`), then reads that
/// process's start time and TTY from `/proc`. Terminal ids come from the environment.
pub fn terminal_context(env: impl Fn(&str) -> Option<String>) -> TerminalContext {
    let mut ctx = TerminalContext {
        kitty_window_id: clean_env_value(env("KITTY_WINDOW_ID")),
        tmux_pane: clean_env_value(env("TMUX_PANE")),
        wezterm_pane: clean_env_value(env("WEZTERM_PANE")),
        iterm_session_id: clean_env_value(env("ITERM_SESSION_ID")),
        term_session_id: clean_env_value(env("TERM_SESSION_ID")),
        ..Default::default()
    };
    // SAFETY: getppid has no preconditions.
    let mut pid = unsafe { libc::getppid() } as u32;
    for _ in 0..4 {
        let Some(stat) = crate::procs::stat(pid) else { break };
        if is_shell(&stat.comm) && stat.ppid > 1 {
            pid = stat.ppid;
            continue;
        }
        ctx.claude_pid = Some(pid);
        ctx.claude_start = Some(stat.start_ticks);
        ctx.tty = crate::procs::tty_name(stat.tty_nr);
        break;
    }
    ctx
}

fn is_shell(comm: &str) -> bool {
    matches!(comm, "sh" | "bash" | "dash" | "zsh" | "fish" | "ksh" | "busybox" | "env" | "timeout")
}

/// Deletes spool files older than [`SPOOL_KEEP_DAYS`].
pub fn prune_spool(data_dir: &Path, now: Timestamp) {
    let oldest = Timestamp::from_millis(now.millis() - SPOOL_KEEP_DAYS * 86_400_000).to_iso();
    let Ok(rd) = fs::read_dir(spool_dir(data_dir)) else { return };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if let Some(day) = spool_day(&p)
            && day < &oldest[..10]
        {
            let _ = fs::remove_file(&p);
        }
    }
}

/// Every spool file, oldest day first.
pub fn spool_files(data_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(spool_dir(data_dir)) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| spool_day(p).is_some()).collect();
    v.sort();
    v
}

/// Every recorded event (for the one-shot roster), in file order.
pub fn read_all(data_dir: &Path) -> Vec<HookEvent> {
    let mut out = Vec::new();
    for p in spool_files(data_dir) {
        let mut tail = crate::tail::FileTail::with_max_line(&p, MAX_SPOOL_LINE);
        let _ = tail.read_new(|l| out.extend(parse_spool_line(l)));
    }
    out
}

/// How long the hook waits for Claude Code to finish writing the payload.
const STDIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The whole of `<binary> hook [--data-dir DIR]` for any Mimesis binary (the CLI, the
/// desktop app): call it first thing in `main` when the first argument is `hook`, then
/// exit 0. It starts no runtime and prints nothing on stdout.
pub fn run_hook(args: &[std::ffi::OsString]) {
    let mut data_dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--data-dir" {
            data_dir = it.next().map(PathBuf::from);
        } else if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("--data-dir=")) {
            data_dir = Some(PathBuf::from(v));
        }
    }
    record_from_stdin(&data_dir.unwrap_or_else(crate::roots::data_dir));
}

/// Reads the payload from stdin (bounded in size and time), records it with this
/// process's terminal context, and logs whatever went wrong to the hook log.
pub fn record_from_stdin(data_dir: &Path) {
    let now = crate::clock::Clock::now(&crate::clock::SystemClock);
    let payload = match read_stdin_bounded(MAX_PAYLOAD, STDIN_TIMEOUT) {
        Ok(p) => p,
        Err(e) => {
            log(data_dir, now, &format!("cannot read the hook payload: {e}"));
            return;
        }
    };
    let terminal = terminal_context(|k| std::env::var(k).ok());
    if let Err(e) = record(data_dir, &payload, now, terminal) {
        log(data_dir, now, &e.to_string());
    }
}

/// Reads stdin to its end, at most `max` bytes and for at most `timeout`: a hook must
/// never hang Claude Code, whatever is (not) written to it.
fn read_stdin_bounded(max: usize, timeout: std::time::Duration) -> std::io::Result<Vec<u8>> {
    use std::io::{ErrorKind, Read};
    let deadline = std::time::Instant::now() + timeout;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut stdin = std::io::stdin().lock();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now()).as_millis() as i32;
        let mut pfd = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, left) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if ready == 0 {
            return Err(std::io::Error::new(ErrorKind::TimedOut, "stdin was not closed in time"));
        }
        let n = match stdin.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > max {
            return Err(std::io::Error::new(ErrorKind::InvalidData, format!("the payload is larger than {max} bytes")));
        }
        out.extend_from_slice(&buf[..n]);
    }
}

#[cfg(test)]
mod tests;
