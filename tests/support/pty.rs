//! Drive a program in a real pseudo-terminal (`portable-pty`) and model its screen
//! (`vt100`).
//!
//! A reader thread feeds everything the program writes into a [`vt100::Parser`] and wakes
//! waiters; [`Pty::wait_for`] polls a condition on a [`Screen`] snapshot without fixed
//! sleeps. The reader also answers the terminal queries a real terminal would (cursor
//! position report, device attributes), so TUIs that probe the terminal do not stall.
//! The process (and its process group) is killed when the [`Pty`] is dropped.

use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

/// Default terminal width.
pub const DEFAULT_COLS: u16 = 120;
/// Default terminal height.
pub const DEFAULT_ROWS: u16 = 40;

/// What to spawn.
#[derive(Debug, Clone)]
pub struct PtyCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    inherit_env: bool,
    cwd: Option<PathBuf>,
    cols: u16,
    rows: u16,
}

impl PtyCommand {
    /// A command for `program`, with an EMPTY environment (see [`PtyCommand::inherit_env`]),
    /// 120x40 by default.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            inherit_env: false,
            cwd: None,
            cols: DEFAULT_COLS,
            rows: DEFAULT_ROWS,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env.extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Starts from this process's environment instead of an empty one.
    pub fn inherit_env(mut self) -> Self {
        self.inherit_env = true;
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets the terminal size.
    pub fn size(mut self, cols: u16, rows: u16) -> Self {
        self.cols = cols;
        self.rows = rows;
        self
    }
}

/// Keys with an escape sequence (for [`Pty::send_keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Return (`\r`).
    Enter,
    /// Escape.
    Esc,
    /// Tab.
    Tab,
    /// Shift+Tab (back-tab, `CSI Z`).
    ShiftTab,
    /// Backspace (DEL).
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Ctrl+C.
    CtrlC,
    /// Ctrl+D.
    CtrlD,
    /// A printable character.
    Char(char),
}

impl Key {
    /// The bytes a terminal sends for this key (normal cursor-key mode).
    pub fn bytes(self) -> Vec<u8> {
        match self {
            Key::Enter => b"\r".to_vec(),
            Key::Esc => b"\x1b".to_vec(),
            Key::Tab => b"\t".to_vec(),
            Key::ShiftTab => b"\x1b[Z".to_vec(),
            Key::Backspace => b"\x7f".to_vec(),
            Key::Up => b"\x1b[A".to_vec(),
            Key::Down => b"\x1b[B".to_vec(),
            Key::Right => b"\x1b[C".to_vec(),
            Key::Left => b"\x1b[D".to_vec(),
            Key::CtrlC => b"\x03".to_vec(),
            Key::CtrlD => b"\x04".to_vec(),
            Key::Char(c) => c.to_string().into_bytes(),
        }
    }
}

/// A snapshot of the visible screen.
#[derive(Debug, Clone)]
pub struct Screen {
    /// Visible rows, trailing spaces removed.
    pub rows: Vec<String>,
    /// Cursor (row, col), 0-based.
    pub cursor: (u16, u16),
    /// Whether the program has exited (the PTY reached end of file).
    pub exited: bool,
}

impl Screen {
    /// The rows joined with `\n`, trailing empty rows removed.
    pub fn text(&self) -> String {
        let mut rows: &[String] = &self.rows;
        while let Some((last, rest)) = rows.split_last() {
            if !last.is_empty() {
                break;
            }
            rows = rest;
        }
        rows.join("\n")
    }

    /// Whether any row contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.rows.iter().any(|r| r.contains(needle))
    }

    /// The first row containing `needle`.
    pub fn find_row(&self, needle: &str) -> Option<(usize, &str)> {
        self.rows.iter().enumerate().find(|(_, r)| r.contains(needle)).map(|(i, r)| (i, r.as_str()))
    }
}

impl fmt::Display for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
        writeln!(f, "┌{}┐", "─".repeat(width))?;
        for row in &self.rows {
            let pad = width - row.chars().count();
            writeln!(f, "│{row}{}│", " ".repeat(pad))?;
        }
        write!(f, "└{}┘", "─".repeat(width))?;
        if self.exited {
            write!(f, " (exited)")?;
        }
        Ok(())
    }
}

/// Replies to terminal queries found by the parser, written back by the reader thread.
#[derive(Default)]
struct QueryResponder {
    pending: Vec<u8>,
}

impl vt100::Callbacks for QueryResponder {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
        match (i1, c, first) {
            // DSR: cursor position report.
            (None, 'n', 6) => {
                let (row, col) = screen.cursor_position();
                self.pending.extend(format!("\x1b[{};{}R", row + 1, col + 1).into_bytes());
            }
            // DSR: status report.
            (None, 'n', 5) => self.pending.extend(b"\x1b[0n"),
            // Primary device attributes: a VT220-ish xterm.
            (None, 'c', 0) => self.pending.extend(b"\x1b[?62;22c"),
            // Secondary device attributes.
            (Some(b'>'), 'c', 0) => self.pending.extend(b"\x1b[>1;10;0c"),
            _ => {}
        }
    }
}

struct State {
    parser: vt100::Parser<QueryResponder>,
    /// Everything the program wrote, for diagnostics.
    raw: Vec<u8>,
    eof: bool,
    /// Bumped on every change.
    generation: u64,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A program running in a pseudo-terminal. Killed (with its process group) on drop.
pub struct Pty {
    child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    pid: u32,
    label: String,
}

impl Pty {
    /// Spawns the command in a new PTY.
    pub fn spawn(cmd: PtyCommand) -> Result<Self> {
        let size = PtySize { rows: cmd.rows, cols: cmd.cols, pixel_width: 0, pixel_height: 0 };
        let pair = native_pty_system().openpty(size).map_err(|e| anyhow!("openpty: {e}"))?;
        let mut builder = CommandBuilder::new(&cmd.program);
        builder.args(&cmd.args);
        if !cmd.inherit_env {
            builder.env_clear();
        }
        for (k, v) in &cmd.env {
            builder.env(k, v);
        }
        if let Some(cwd) = &cmd.cwd {
            builder.cwd(cwd);
        }
        let label = cmd.program.to_string_lossy().into_owned();
        let child = pair.slave.spawn_command(builder).map_err(|e| anyhow!("spawn {label} in a PTY: {e}"))?;
        drop(pair.slave);
        let pid = child.process_id().ok_or_else(|| anyhow!("spawned child has no pid"))?;
        let master = pair.master;
        let mut reader = master.try_clone_reader().map_err(|e| anyhow!("PTY reader: {e}"))?;
        let writer = Arc::new(Mutex::new(master.take_writer().map_err(|e| anyhow!("PTY writer: {e}"))?));
        let rows = NonZeroU16::new(cmd.rows).context("rows must be > 0")?;
        let cols = NonZeroU16::new(cmd.cols).context("cols must be > 0")?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                parser: vt100::Parser::new_with_callbacks(rows, cols, 0, QueryResponder::default()),
                raw: Vec::new(),
                eof: false,
                generation: 0,
            }),
            changed: Condvar::new(),
        });
        let thread_shared = shared.clone();
        let thread_writer = writer.clone();
        let reader_thread = std::thread::Builder::new()
            .name(format!("pty-reader-{pid}"))
            .spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let answers = {
                        let mut st = thread_shared.lock();
                        st.parser.process(&buf[..n]);
                        st.raw.extend_from_slice(&buf[..n]);
                        st.generation += 1;
                        std::mem::take(&mut st.parser.callbacks_mut().pending)
                    };
                    thread_shared.changed.notify_all();
                    if !answers.is_empty() {
                        let mut w = thread_writer.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = w.write_all(&answers);
                        let _ = w.flush();
                    }
                }
                let mut st = thread_shared.lock();
                st.eof = true;
                st.generation += 1;
                drop(st);
                thread_shared.changed.notify_all();
            })
            .context("spawn PTY reader thread")?;
        Ok(Self { child, master, writer, shared, reader: Some(reader_thread), pid, label })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes raw text (as typed; use `\r` for Enter).
    pub fn send(&self, text: &str) -> Result<()> {
        self.send_bytes(text.as_bytes())
    }

    /// Writes raw bytes.
    pub fn send_bytes(&self, bytes: &[u8]) -> Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        w.write_all(bytes).context("write to PTY")?;
        w.flush().context("flush PTY")?;
        Ok(())
    }

    /// Sends keys, one write per key.
    pub fn send_keys(&self, keys: &[Key]) -> Result<()> {
        for key in keys {
            self.send_bytes(&key.bytes())?;
        }
        Ok(())
    }

    /// A snapshot of the visible screen.
    pub fn screen(&self) -> Screen {
        snapshot(&self.shared.lock())
    }

    /// The visible screen as text (trailing blanks trimmed).
    pub fn screen_text(&self) -> String {
        self.screen().text()
    }

    /// Everything the program has written so far, escape sequences included.
    pub fn raw_output(&self) -> Vec<u8> {
        self.shared.lock().raw.clone()
    }

    /// Resizes the terminal (the program gets `SIGWINCH`).
    pub fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        self.master
            .resize(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 })
            .map_err(|e| anyhow!("resize: {e}"))?;
        if let (Some(r), Some(c)) = (NonZeroU16::new(rows), NonZeroU16::new(cols)) {
            self.shared.lock().parser.set_size(r, c);
        }
        Ok(())
    }

    /// Waits until `cond` holds on the screen, re-checking on every screen change (and at
    /// least every 100 ms). On timeout the error shows `what` and the screen.
    pub fn wait_for(&self, what: &str, timeout: Duration, mut cond: impl FnMut(&Screen) -> bool) -> Result<Screen> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            let screen = snapshot(&st);
            if cond(&screen) {
                return Ok(screen);
            }
            let now = Instant::now();
            if now >= deadline {
                bail!(
                    "timed out after {timeout:?} waiting for {what} ({} pid {}{})\n{screen}",
                    self.label,
                    self.pid,
                    if st.eof { ", program exited" } else { "" }
                );
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            st = self.shared.changed.wait_timeout(st, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<Screen> {
        self.wait_for(&format!("{needle:?} on screen"), timeout, |s| s.contains(needle))
    }

    /// Waits until the screen has not changed for `quiet` (bounded by `timeout`).
    pub fn wait_for_quiet(&self, quiet: Duration, timeout: Duration) -> Result<Screen> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        let mut generation = st.generation;
        let mut since = Instant::now();
        loop {
            let now = Instant::now();
            if now.duration_since(since) >= quiet {
                return Ok(snapshot(&st));
            }
            if now >= deadline {
                bail!("screen did not settle for {quiet:?} within {timeout:?}\n{}", snapshot(&st));
            }
            let wait = (since + quiet).min(deadline).saturating_duration_since(now);
            st = self
                .shared
                .changed
                .wait_timeout(st, wait.max(Duration::from_millis(1)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if st.generation != generation {
                generation = st.generation;
                since = Instant::now();
            }
        }
    }

    /// Non-blocking exit check.
    pub fn try_wait(&mut self) -> Result<Option<portable_pty::ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// Waits for the program to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<portable_pty::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!("{} (pid {}) did not exit within {timeout:?}\n{}", self.label, self.pid, self.screen());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the program and every process of its session (SIGKILL), then reaps it.
    /// Idempotent.
    ///
    /// portable-pty makes the child a session leader (`setsid`), so anything it started
    /// (e.g. a shell of the Bash tool, even in its own process group) is in session
    /// `pid` unless it called `setsid` itself; those are found through `/proc`.
    pub fn kill(&mut self) {
        let pid = self.pid as libc::pid_t;
        let alive = matches!(self.child.try_wait(), Ok(None));
        if alive {
            // SAFETY: kill(2) on our unreaped child: the pid cannot have been reused.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        // The leader is killed but not reaped yet (a zombie keeps its pid and session id
        // reserved), so the sweep cannot hit an unrelated process. Repeat in case a member
        // forked meanwhile.
        for _ in 0..3 {
            let members = session_members(pid);
            if members.is_empty() {
                break;
            }
            for member in members {
                // SAFETY: kill(2) on a process of the child's session.
                unsafe {
                    libc::kill(member, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive {
            let _ = self.child.wait();
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        self.kill();
        // The reader thread ends at EOF: once the child (the last slave holder) is gone.
        // Anything still holding the slave (an orphaned grandchild) was in the killed
        // group; don't join forever if something escaped it.
        if let Some(reader) = self.reader.take() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }
}

/// Processes (other than `sid` itself) whose session id is `sid`, from `/proc`.
fn session_members(sid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&p| p != sid)
        .filter(|&p| {
            // /proc/<pid>/stat: "pid (comm) state ppid pgrp session ..."; comm may contain
            // spaces and parentheses, so split after the last ')'.
            std::fs::read_to_string(format!("/proc/{p}/stat")).ok().and_then(|stat| {
                let rest = &stat[stat.rfind(')')? + 1..];
                rest.split_whitespace().nth(3)?.parse::<libc::pid_t>().ok()
            }) == Some(sid)
        })
        .collect()
}

fn snapshot(st: &State) -> Screen {
    let screen = st.parser.screen();
    let (_, cols) = screen.size();
    Screen {
        rows: screen.rows(0, cols.get()).map(|r| r.trim_end().to_owned()).collect(),
        cursor: screen.cursor_position(),
        exited: st.eof,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        // A zombie still has /proc/<pid>; check its state too.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                let rest = &s[s.rfind(')').map_or(0, |i| i + 1)..];
                rest.split_whitespace().next() != Some("Z")
            })
            .unwrap_or(false)
    }

    #[test]
    fn screen_input_and_exit() -> Result<()> {
        let mut pty = Pty::spawn(
            PtyCommand::new("/bin/bash")
                .args(["--norc", "--noprofile", "-c", "printf 'ready\\n'; read x; echo \"got [$x]\"; exit 3"])
                .env("PATH", "/usr/bin:/bin")
                .env("TERM", "xterm-256color")
                .size(80, 24),
        )?;
        pty.wait_for_text("ready", Duration::from_secs(10))?;
        pty.send("hello")?;
        pty.send_keys(&[Key::Enter])?;
        let screen = pty.wait_for_text("got [hello]", Duration::from_secs(10))?;
        assert_eq!(screen.rows.len(), 24);
        let status = pty.wait_exit(Duration::from_secs(10))?;
        assert_eq!(status.exit_code(), 3);
        Ok(())
    }

    #[test]
    fn timeout_error_shows_the_screen() -> Result<()> {
        let pty = Pty::spawn(
            PtyCommand::new("/bin/bash")
                .args(["--norc", "--noprofile", "-c", "echo visible-text; sleep 30"])
                .env("PATH", "/usr/bin:/bin"),
        )?;
        pty.wait_for_text("visible-text", Duration::from_secs(10))?;
        let err = pty.wait_for_text("never", Duration::from_millis(200)).expect_err("must time out");
        let msg = format!("{err:#}");
        assert!(msg.contains("\"never\" on screen"), "{msg}");
        assert!(msg.contains("visible-text"), "{msg}");
        Ok(())
    }

    #[test]
    fn drop_kills_the_whole_session() -> Result<()> {
        // The grandchild moves to its own process group, as job control would.
        let pty = Pty::spawn(
            PtyCommand::new("/bin/bash")
                .args(["--norc", "--noprofile", "-c", "set -m; sleep 300 & echo \"child=$!\"; wait"])
                .env("PATH", "/usr/bin:/bin"),
        )?;
        let screen = pty.wait_for("child pid", Duration::from_secs(10), |s| s.contains("child="))?;
        let (_, row) = screen.find_row("child=").expect("row");
        let child: u32 = row.trim_start_matches("child=").trim().parse()?;
        let leader = pty.pid();
        assert!(alive(child) && alive(leader));
        drop(pty);
        let deadline = Instant::now() + Duration::from_secs(5);
        while (alive(child) || alive(leader)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(leader), "leader {leader} survived");
        assert!(!alive(child), "grandchild {child} survived");
        Ok(())
    }

    #[test]
    fn answers_cursor_position_queries() -> Result<()> {
        // `read` gets the terminal's answer to DSR 6 (ESC [ row ; col R).
        let pty = Pty::spawn(
            PtyCommand::new("/bin/bash")
                .args([
                    "--norc",
                    "--noprofile",
                    "-c",
                    "printf 'ab'; printf '\\033[6n'; IFS= read -rs -d R ans; printf '\\n<%s>\\n' \"${ans#*[}\"; sleep 5",
                ])
                .env("PATH", "/usr/bin:/bin"),
        )?;
        pty.wait_for_text("<1;3>", Duration::from_secs(10))?;
        Ok(())
    }
}
