//! The hook side of Claude Code's hooks (SPEC C5, W5): what `mimesis hook` does when
//! Claude Code runs it, and installing it into Claude Code's `settings.json` ([`install`]).
//! What a payload means is `mimesis_core::hook_event`; the engine reads the spool back
//! (`mimesis_watch::spool`).
//!
//! Layer: above `mimesis-core` and `mimesis-os`; no async runtime, nothing else.
//!
//! `mimesis hook` runs inside Claude Code, synchronously, several times per turn. It must
//! cost a few milliseconds, print nothing on stdout (SessionStart and UserPromptSubmit
//! output is injected into the model's context), and never fail in a way Claude Code
//! notices. The one exception is a permission dialog (`PermissionRequest`): then it asks
//! the running face, if there is one, and prints its decision ([`approvals`]). Otherwise
//! it does no scanning and talks to no server: it appends one JSON line per
//! event to a spool file in Mimesis's data dir (`hooks/events-YYYY-MM-DD.jsonl`) with a
//! single `O_APPEND` write, which concurrent hooks and a running app can share without
//! locks. The engine tails the spool like a transcript.
//!
//! The payload is untrusted: the cwd is only used for the compaction marker after it was
//! checked to be a plain absolute folder, and nothing else becomes a path.

pub mod approvals;
pub mod install;

use std::fs;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use mimesis_core::clock::{Clock, SystemClock, Timestamp};
use mimesis_core::hook_event::{
    HookEvent, MAX_PAYLOAD, PayloadError, TerminalContext, clean_env_value, log_file, marker_path, parse_payload,
    spool_dir, spool_file,
};
use mimesis_os::procs;

/// The hook log is cut back to nothing past this size.
const MAX_LOG: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(transparent)]
    Payload(#[from] PayloadError),
    #[error("cannot encode the event: {0}")]
    Encode(String),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("no compaction marker: {0}")]
    Marker(String),
}

/// Appends one event to the spool with a single write, so lines of concurrent hooks never
/// interleave.
pub fn append_event(data_dir: &Path, ev: &HookEvent) -> Result<(), HookError> {
    let path = spool_file(data_dir, ev.at);
    let mut line = serde_json::to_vec(ev).map_err(|e| HookError::Encode(e.to_string()))?;
    line.push(b'\n');
    let write = || -> std::io::Result<()> {
        mimesis_os::private::own_dir(&spool_dir(data_dir))?;
        mimesis_os::private::append(&path)?.write_all(&line)
    };
    write().map_err(|source| HookError::Write { path: path.clone(), source })
}

/// Appends a line to the hook log (best effort: the hook has nowhere else to complain).
pub fn log(data_dir: &Path, at: Timestamp, message: &str) {
    let path = log_file(data_dir);
    let _ = mimesis_os::private::own_dir(&spool_dir(data_dir));
    if fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG) {
        let _ = fs::remove_file(&path);
    }
    if let Ok(mut f) = mimesis_os::private::append(&path) {
        let line: String = message.chars().filter(|c| !c.is_control()).take(2000).collect();
        let _ = f.write_all(format!("{} {line}\n", at.to_iso()).as_bytes());
    }
}

/// A cwd from a payload, usable as a folder to write the marker into: absolute, no `.` or
/// `..` parts, no NUL, an existing folder.
pub fn checked_cwd(cwd: &str) -> Result<PathBuf, HookError> {
    let p = mimesis_core::layout::checked_cwd(cwd).map_err(|e| HookError::Marker(e.to_string()))?;
    if !p.is_dir() {
        return Err(HookError::Marker(format!("cwd {cwd:?} is not a folder")));
    }
    Ok(p)
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
        // Read by Mimesis alone (the same user); the `.claude` folder is the project's.
        let mut f = mimesis_os::private::options().write(true).create_new(true).open(&tmp)?;
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

/// The terminal context of the `claude` process running this hook: walks up from the
/// hook's parent past shells (Claude Code may run hooks through `sh -c`), then reads that
/// process's start time and TTY from `/proc`. Terminal ids come from the environment.
pub fn terminal_context(env: impl Fn(&str) -> Option<String>) -> TerminalContext {
    let mut ctx = TerminalContext {
        kitty_window_id: clean_env_value(env("KITTY_WINDOW_ID")),
        tmux_pane: clean_env_value(env("TMUX_PANE")),
        tmux_socket: clean_env_value(env("TMUX")).and_then(|t| t.split(',').next().map(str::to_owned)),
        wezterm_pane: clean_env_value(env("WEZTERM_PANE")),
        iterm_session_id: clean_env_value(env("ITERM_SESSION_ID")),
        term_session_id: clean_env_value(env("TERM_SESSION_ID")),
        ..Default::default()
    };
    // SAFETY: getppid has no preconditions.
    let mut pid = unsafe { libc::getppid() } as u32;
    for _ in 0..4 {
        let Some(stat) = procs::stat(pid) else { break };
        if is_shell(&stat.comm) && stat.ppid > 1 {
            pid = stat.ppid;
            continue;
        }
        ctx.claude_pid = Some(pid);
        ctx.claude_start = Some(stat.start_ticks);
        ctx.tty = procs::tty_name(stat.tty_nr);
        break;
    }
    ctx
}

fn is_shell(comm: &str) -> bool {
    matches!(comm, "sh" | "bash" | "dash" | "zsh" | "fish" | "ksh" | "busybox" | "env" | "timeout")
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
    record_from_stdin(&data_dir.unwrap_or_else(mimesis_os::roots::data_dir));
}

/// Reads the payload from stdin (bounded in size and time), records it with this
/// process's terminal context, and logs whatever went wrong to the hook log.
pub fn record_from_stdin(data_dir: &Path) {
    let now = SystemClock.now();
    let payload = match read_stdin_bounded(MAX_PAYLOAD, STDIN_TIMEOUT) {
        Ok(p) => p,
        Err(e) => {
            log(data_dir, now, &format!("cannot read the hook payload: {e}"));
            return;
        }
    };
    let terminal = terminal_context(|k| std::env::var(k).ok());
    match record(data_dir, &payload, now, terminal) {
        Ok(ev) if ev.event == "PermissionRequest" => answer_permission(data_dir, &ev, &payload),
        Ok(_) => {}
        Err(e) => log(data_dir, now, &e.to_string()),
    }
}

/// A permission dialog: asks the running face, if any, and prints its decision for
/// Claude Code — the only thing this hook ever prints. No face or no decision: nothing.
fn answer_permission(data_dir: &Path, ev: &HookEvent, payload: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(payload) else { return };
    let request = mimesis_core::approval::request_of(ev.session_id.clone(), ev.cwd.clone(), &value);
    let decision = approvals::ask(data_dir, &request, approvals::wait_from_env());
    if let Some(out) = mimesis_core::approval::hook_output(&decision, value.get("tool_input")) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{out}");
        let _ = stdout.flush();
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
