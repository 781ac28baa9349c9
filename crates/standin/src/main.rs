//! `mimesis-standin-agent`: a stand-in for the Claude Code CLI, for the faults the real one
//! cannot show on demand. It behaves like the real CLI where Mimesis looks:
//!
//! - `--session-id <uuid>` / `--resume <id>` / `-p [--] <prompt>`; an unknown or unreadable
//!   resume prints `No conversation found with session ID: <id>` and exits 1;
//! - the transcript at `$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<id>.jsonl`, created at
//!   the first prompt, with the real record shapes (user, assistant, system
//!   turn_duration, tool_use / tool_result), and `sessions/<pid>.json` while it runs;
//! - the TUI's cues: the `❯` prompt between rules with `? for shortcuts`, a spinner line
//!   with `esc to interrupt`, the `Do you want to proceed?` dialog, `✻ Baked for Ns`,
//!   and the resume hint on `/exit`.
//!
//! With `--plain` (or `MIMESIS_STANDIN_PLAIN=1`) it draws no Claude Code TUI at all: plain lines, a `> ` prompt, a
//! `[y/n]` question for permission, no spinner, no rules, no "? for shortcuts", no resume
//! hint; transcripts and the live registry stay exactly as above. Supervision must then
//! read the agent through those, not its screen. With `--no-registry` (or
//! `MIMESIS_STANDIN_NO_REGISTRY=1`) it keeps no live registry entry either (an agent that is
//! not Claude Code, or one whose `sessions/` cannot be written): its transcript is all there
//! is to read.
//!
//! Typed commands make it misbehave: `crash` (stack-overflow dump, survives),
//! `crash-die [code]` (dump, then exit), `crash-during-work <secs>` (the dump within the
//! first 300 ms), `work <secs>` (while working, `finish` ends the turn at once and `dump`
//! prints a crash dump), `ask`
//! (permission dialog), `ask-auto` (2.1.330's unnumbered "❯ No / Yes" dialog with No marked,
//! deaf to keys for 300 ms), `question` (an AskUserQuestion dialog with numbered options),
//! `exit <code>`, `hang`, `hang-hard` (also ignores SIGTERM),
//! `grow <MB>`, `spawn-child` (a grandchild in its own process group), `ignore-hup`,
//! `shell` (the harness dies into a bare shell prompt), `fail-resumes <n>` (the next n
//! `--resume` launches exit 2 before they show anything, like a CLI that cannot start).
//! Anything else is a normal turn. `MIMESIS_STANDIN_MODEL` names the model its replies
//! say (default `claude-standin`, which no price table knows).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use mimesis_core::Timestamp;
use serde_json::{Value, json};

const VERSION: &str = "2.1.197-standin";
/// The options of the `question` dialog (AskUserQuestion's), numbered from 1.
const QUESTION_OPTIONS: [&str; 3] = ["Postgres", "SQLite", "Type something."];
/// How long the auto-mode dialog ignores keys after it appears.
const PICKER_DEAF: Duration = Duration::from_millis(300);

/// `mb` megabytes, every page touched so it is resident.
fn resident(mb: usize) -> Vec<u8> {
    let mut block = vec![0u8; mb * 1024 * 1024];
    for i in (0..block.len()).step_by(4096) {
        block[i] = 1;
    }
    block
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut session_id = None;
    let mut resume = None;
    // Like the real CLI: `-p` is a switch and the prompt a positional argument; after
    // `--` every argument is positional, even one that looks like an option.
    let mut print = false;
    // `--plain`, or `MIMESIS_STANDIN_PLAIN=1` (for a `mimesis run` that passes env along).
    let mut plain = std::env::var_os("MIMESIS_STANDIN_PLAIN").is_some_and(|v| v == "1");
    let mut no_registry = std::env::var_os("MIMESIS_STANDIN_NO_REGISTRY").is_some_and(|v| v == "1");
    let mut positional = Vec::new();
    let mut options_done = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if options_done {
            positional.push(args[i].clone());
            i += 1;
            continue;
        }
        match arg {
            "--" => options_done = true,
            "--session-id" => {
                i += 1;
                session_id = args.get(i).cloned();
            }
            "--resume" | "-r" => {
                i += 1;
                resume = args.get(i).cloned();
            }
            "-p" | "--print" => print = true,
            "--plain" => plain = true,
            "--no-registry" => no_registry = true,
            "--version" | "-v" => {
                println!("{VERSION} (Claude Code)");
                return;
            }
            a if a.starts_with('-') => {} // like the real CLI's many flags: accepted
            _ => positional.push(args[i].clone()),
        }
        i += 1;
    }
    let print = if print {
        match positional.first() {
            Some(p) => Some(p.clone()),
            None => {
                eprintln!(
                    "Error: Input must be provided either through stdin or as a prompt argument when using --print"
                );
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    let config = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".claude"));
    let cwd = std::env::current_dir().and_then(|c| c.canonicalize()).unwrap_or_else(|_| PathBuf::from("/"));
    let id = resume.clone().or(session_id).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        eprintln!("Error: invalid session id {id:?}");
        std::process::exit(1);
    }
    if resume.is_some() && take_resume_failure(&config) {
        eprintln!("Error: the stand-in was told to fail this resume");
        std::process::exit(2);
    }
    let transcript = Transcript::new(&config, &cwd, &id);
    if resume.is_some() && !transcript.readable() {
        println!("No conversation found with session ID: {id}");
        std::process::exit(1);
    }
    let mut transcript = transcript;
    if let Some(prompt) = print {
        let reply = format!("One-shot reply to: {prompt}");
        transcript.turn(&prompt, &reply, 5);
        println!("{reply}");
        return;
    }
    let mut agent = Agent::new(config, cwd, id, transcript, resume.is_some(), plain);
    agent.no_registry = no_registry;
    agent.run();
}

/// `fail-resumes <n>` left a count in the config folder: takes one failure from it.
fn take_resume_failure(config: &Path) -> bool {
    let path = config.join(FAIL_RESUMES_FILE);
    let left: u64 = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
    if left == 0 {
        return false;
    }
    let _ = std::fs::write(&path, (left - 1).to_string());
    true
}

const FAIL_RESUMES_FILE: &str = "standin-fail-resumes";

// ---------------------------------------------------------------- transcript

struct Transcript {
    path: PathBuf,
    cwd: String,
    id: String,
    parent: Option<String>,
}

fn now_iso() -> String {
    Timestamp::from_system_time(SystemTime::now()).to_iso()
}

fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Transcript {
    fn new(config: &Path, cwd: &Path, id: &str) -> Transcript {
        let project = mimesis_core::layout::project_dir_name(cwd);
        let path = config.join("projects").join(project).join(format!("{id}.jsonl"));
        let mut t = Transcript { path, cwd: cwd.to_string_lossy().into_owned(), id: id.to_owned(), parent: None };
        t.parent = t.last_uuid();
        t
    }

    /// Exists and holds at least one valid record (else the resume is refused).
    fn readable(&self) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.path) else { return false };
        let mut valid = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Value>(line) {
                Ok(v) if v.get("type").is_some() => valid += 1,
                _ => return false, // corrupted
            }
        }
        valid > 0
    }

    fn last_uuid(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        text.lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|v| v.get("uuid").and_then(Value::as_str).map(str::to_owned))
    }

    fn prompts(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "user")
            .filter_map(|v| v.pointer("/message/content").and_then(Value::as_str).map(str::to_owned))
            .collect()
    }

    fn append(&mut self, mut record: Value) {
        let uuid = new_uuid();
        let envelope = json!({
            "parentUuid": self.parent, "isSidechain": false, "userType": "external", "cwd": self.cwd,
            "sessionId": self.id, "version": VERSION, "gitBranch": "", "uuid": uuid, "timestamp": now_iso(),
        });
        if let (Value::Object(r), Value::Object(e)) = (&mut record, envelope) {
            for (k, v) in e {
                r.entry(k).or_insert(v);
            }
        }
        self.parent = Some(uuid);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut f = match std::fs::OpenOptions::new().create(true).append(true).open(&self.path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("cannot write {}: {e}", self.path.display());
                return;
            }
        };
        let _ = writeln!(f, "{record}");
    }

    fn prompt(&mut self, text: &str) {
        self.append(json!({"type": "user", "message": {"role": "user", "content": text},
            "permissionMode": "default", "promptSource": "typed"}));
    }

    fn assistant(&mut self, content: Value, stop: &str) {
        // `MIMESIS_STANDIN_MODEL`: a priced model, for budgets (issue 36).
        let model = std::env::var("MIMESIS_STANDIN_MODEL").unwrap_or_else(|_| "claude-standin".into());
        self.append(json!({"type": "assistant", "requestId": format!("req_{}", new_uuid().replace('-', "")),
            "message": {"id": format!("msg_{}", new_uuid().replace('-', "")), "type": "message", "role": "assistant",
                "model": model, "content": content, "stop_reason": stop, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}));
    }

    fn turn_done(&mut self, ms: u64) {
        self.append(
            json!({"type": "system", "subtype": "turn_duration", "durationMs": ms, "messageCount": 2, "isMeta": false}),
        );
    }

    fn turn(&mut self, prompt: &str, reply: &str, ms: u64) {
        self.prompt(prompt);
        self.assistant(json!([{"type": "text", "text": reply}]), "end_turn");
        self.turn_done(ms);
    }
}

// ---------------------------------------------------------------- the TUI

enum Mode {
    Idle,
    /// An AskUserQuestion dialog: its numbered options answer it.
    Question {
        tool_id: String,
        started: Instant,
    },
    Working {
        until: Instant,
        started: Instant,
        prompt: String,
        crash_at: Option<Instant>,
    },
    /// `picker`: the unnumbered "❯ No / Yes" dialog of 2.1.330's auto mode (Some(true) while
    /// Yes is marked), which ignores keys for its first moments, as 2.1.330 does.
    Permission {
        tool_id: String,
        started: Instant,
        picker: Option<bool>,
    },
}

struct Agent {
    config: PathBuf,
    id: String,
    transcript: Transcript,
    log: Vec<String>,
    input: String,
    mode: Mode,
    work: Duration,
    ballast: Vec<Vec<u8>>,
    ctrl_c: Option<Instant>,
    survive_hangup: bool,
    /// No TUI: plain lines and a `> ` prompt (`--plain`).
    plain: bool,
    /// Plain mode: log lines already printed.
    printed: std::cell::Cell<usize>,
    /// Keeps no live registry entry.
    no_registry: bool,
}

const DUMP: &[&str] = &[
    "file:///$bunfs/root/claude.js:4012",
    "function Xe(A,B){return A.length>B?Xe(A.slice(1),B):Q9(A,B)}function Q9(A,B){return Xe([...A,B],B+1)}",
    "                                             ^",
    "",
    "Exception in PromiseRejectCallback:",
    "RangeError: Maximum call stack size exceeded",
    "    at Xe (file:///$bunfs/root/claude.js:4012:46)",
    "    at Q9 (file:///$bunfs/root/claude.js:4012:88)",
];

impl Agent {
    fn new(config: PathBuf, cwd: PathBuf, id: String, transcript: Transcript, resumed: bool, plain: bool) -> Agent {
        let work = std::env::var("STANDIN_WORK_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
        let mut log = if plain {
            vec![format!("stand-in agent, session {id}, in {}", cwd.display())]
        } else {
            // The size it started at: what its first screen was drawn for.
            let (rows, cols) = Agent::size();
            vec![
                "✻ Welcome to the Claude Code stand-in".to_owned(),
                format!("  cwd: {}", cwd.display()),
                format!("  started at {cols}×{rows}"),
                String::new(),
            ]
        };
        if resumed {
            log.push(format!("resumed {id}"));
            for p in transcript.prompts().iter().rev().take(3).rev() {
                log.push(format!("> {p}"));
            }
        }
        // `MIMESIS_STANDIN_BASELINE_MB`: memory in use at rest, from the start (the real
        // CLI needs some 230 MB before any work).
        let baseline = std::env::var("MIMESIS_STANDIN_BASELINE_MB").ok().and_then(|v| v.parse::<usize>().ok());
        Agent {
            config,
            id,
            transcript,
            log,
            input: String::new(),
            mode: Mode::Idle,
            work: Duration::from_millis(work),
            ballast: baseline.map(resident).into_iter().collect(),
            ctrl_c: None,
            survive_hangup: false,
            plain,
            printed: std::cell::Cell::new(0),
            no_registry: false,
        }
    }

    fn run(mut self) {
        let _raw = RawMode::enable();
        self.registry("idle", None);
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 4096];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        self.draw();
        loop {
            let timeout = match &self.mode {
                Mode::Working { until, crash_at, .. } => {
                    let next = crash_at.map_or(*until, |c| c.min(*until));
                    next.saturating_duration_since(Instant::now())
                }
                _ => Duration::from_secs(3600),
            };
            match rx.recv_timeout(timeout) {
                Ok(bytes) => self.keys(&bytes),
                Err(mpsc::RecvTimeoutError::Timeout) => self.timer(),
                // stdin closed (the terminal went away): like the real CLI, quit, unless
                // told to outlive a hang-up.
                Err(mpsc::RecvTimeoutError::Disconnected) if self.survive_hangup => loop {
                    std::thread::sleep(Duration::from_secs(3600));
                },
                Err(mpsc::RecvTimeoutError::Disconnected) => self.quit(0),
            }
        }
    }

    fn registry(&self, status: &str, waiting_for: Option<&str>) {
        if self.no_registry {
            return;
        }
        let dir = self.config.join("sessions");
        let _ = std::fs::create_dir_all(&dir);
        let pid = std::process::id();
        let mut v = json!({"pid": pid, "sessionId": self.id, "cwd": self.transcript.cwd, "startedAt": 0,
            "version": VERSION, "kind": "interactive", "entrypoint": "cli", "status": status});
        if let Some(w) = waiting_for {
            v["waitingFor"] = json!(w);
        }
        let _ = std::fs::write(dir.join(format!("{pid}.json")), v.to_string());
    }

    fn quit(&self, code: i32) -> ! {
        let _ = std::fs::remove_file(self.config.join("sessions").join(format!("{}.json", std::process::id())));
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\r\n");
        let _ = out.flush();
        RawMode::restore();
        std::process::exit(code)
    }

    fn size() -> (usize, usize) {
        // SAFETY: TIOCGWINSZ fills a plain struct.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
        if ok && ws.ws_row > 0 && ws.ws_col > 0 { (ws.ws_row as usize, ws.ws_col as usize) } else { (40, 120) }
    }

    /// Plain mode: the log lines not printed yet, then the prompt line anew.
    fn draw_plain(&self) {
        let mut out = String::from("\r\x1b[K");
        // The log is written with the TUI's glyphs; plain mode prints none of them.
        for line in &self.log[self.printed.get().min(self.log.len())..] {
            if line.starts_with("✻ ") {
                continue;
            }
            out.push_str(line.trim_start_matches("⏺ ").trim_start().trim_start_matches("⎿  "));
            out.push_str("\r\n");
        }
        self.printed.set(self.log.len());
        match &self.mode {
            Mode::Idle => {
                out.push_str("> ");
                out.push_str(&self.input);
            }
            Mode::Working { .. } => out.push_str("(working)"),
            Mode::Permission { .. } => out.push_str("run `echo hi`? [y/n] "),
            Mode::Question { .. } => out.push_str("database (1-3)? "),
        }
        let mut stdout = std::io::stdout();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }

    /// Redraws the whole screen: the log, then the prompt box or the dialog.
    fn draw(&self) {
        if self.plain {
            return self.draw_plain();
        }
        let (rows, cols) = Self::size();
        let rule = "─".repeat(cols.min(200));
        let mut bottom: Vec<String> = Vec::new();
        match &self.mode {
            Mode::Question { .. } => {
                bottom.push(" ☐ Database".into());
                bottom.push(" Which database should the service use?".into());
                for (i, o) in QUESTION_OPTIONS.iter().enumerate() {
                    bottom.push(format!(" {} {}. {o}", if i == 0 { "❯" } else { " " }, i + 1));
                }
            }
            Mode::Permission { picker: Some(yes), .. } => {
                bottom.push(" Auto mode can't check this action, so this one needs your approval".into());
                bottom.push("   echo hi".into());
                bottom.push(" Do you want to proceed?".into());
                bottom.push(format!(" {} No", if *yes { " " } else { "❯" }));
                bottom.push(format!(" {} Yes", if *yes { "❯" } else { " " }));
            }
            Mode::Permission { .. } => {
                bottom.push(" Bash command".into());
                bottom.push("   echo hi".into());
                bottom.push(" Do you want to proceed?".into());
                bottom.push(" ❯ 1. Yes".into());
                bottom.push("   2. Yes, and always allow access to this command".into());
                bottom.push("   3. No, and tell Claude what to do differently (esc)".into());
            }
            Mode::Working { started, .. } => {
                bottom.push(format!("✻ Thinking… ({}s · esc to interrupt)", started.elapsed().as_secs()));
                bottom.push(rule.clone());
                bottom.push(format!("❯ {}", self.input));
                bottom.push(rule.clone());
            }
            Mode::Idle => {
                bottom.push(rule.clone());
                bottom.push(format!("❯ {}", self.input));
                bottom.push(rule.clone());
                bottom.push("  ? for shortcuts".into());
            }
        }
        let room = rows.saturating_sub(bottom.len() + 1);
        let start = self.log.len().saturating_sub(room);
        let mut screen = String::from("\x1b[2J\x1b[H");
        for line in &self.log[start..] {
            screen.push_str(&truncate(line, cols));
            screen.push_str("\r\n");
        }
        screen.push_str("\r\n");
        for (i, line) in bottom.iter().enumerate() {
            screen.push_str(&truncate(line, cols));
            if i + 1 < bottom.len() {
                screen.push_str("\r\n");
            }
        }
        let mut out = std::io::stdout();
        let _ = out.write_all(screen.as_bytes());
        let _ = out.flush();
    }

    fn keys(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (&self.mode, c) {
                (Mode::Question { .. }, '1'..='3') => self.choose(c as usize - '1' as usize),
                (Mode::Question { .. }, _) => {}
                (Mode::Permission { picker: Some(_), started, .. }, _) if started.elapsed() < PICKER_DEAF => {}
                (Mode::Permission { picker: Some(yes), .. }, '\r') => {
                    let yes = *yes;
                    self.answer(yes)
                }
                (Mode::Permission { picker: Some(_), .. }, '\x1b') if chars.peek() == Some(&'[') => {
                    chars.next();
                    let key = chars.next();
                    if let Mode::Permission { picker: Some(yes), .. } = &mut self.mode {
                        match key {
                            Some('B') => *yes = true,
                            Some('A') => *yes = false,
                            _ => {}
                        }
                    }
                }
                (Mode::Permission { picker: Some(_), .. }, '\x1b') => self.answer(false),
                (Mode::Permission { picker: Some(_), .. }, _) => {}
                (Mode::Permission { .. }, 'y') if self.plain => self.answer(true),
                (Mode::Permission { .. }, 'n') if self.plain => self.answer(false),
                (Mode::Permission { .. }, '1' | '\r') if !self.plain => self.answer(true),
                (Mode::Permission { .. }, '3' | '\x1b') => self.answer(false),
                // A crash while the dialog shows (the harness survives it).
                (Mode::Permission { .. }, 'c') => self.log.extend(DUMP.iter().map(|s| s.to_string())),
                (Mode::Permission { .. }, _) => {}
                (Mode::Working { .. }, '\x1b') if chars.peek().is_none() => self.interrupt(),
                (Mode::Working { .. }, '\x03') => self.interrupt(),
                (_, '\x1b')
                    // An escape sequence (arrows…): skip it.
                    if chars.peek() == Some(&'[') => {
                        chars.next();
                        for n in chars.by_ref() {
                            if n.is_ascii_alphabetic() || n == '~' {
                                break;
                            }
                        }
                    }
                (_, '\x03') => {
                    if self.input.is_empty() && self.ctrl_c.is_some_and(|t| t.elapsed() < Duration::from_secs(2)) {
                        self.quit(0);
                    }
                    self.input.clear();
                    self.ctrl_c = Some(Instant::now());
                    self.log.push("  Press Ctrl-C again to exit".into());
                }
                (_, '\x04') if self.input.is_empty() => self.exit_command(),
                (_, '\x7f' | '\x08') => {
                    self.input.pop();
                }
                (Mode::Idle, '\r' | '\n') => {
                    let line = std::mem::take(&mut self.input);
                    self.submit(line.trim());
                }
                // A test's way to end a long turn exactly when it wants.
                (Mode::Working { .. }, '\r' | '\n') if self.input.trim() == "finish" => {
                    self.input.clear();
                    if let Mode::Working { until, crash_at, .. } = &mut self.mode {
                        *until = Instant::now();
                        *crash_at = None;
                    }
                    self.timer();
                }
                // A crash dump in the middle of a turn, when the test has seen the turn start.
                (Mode::Working { .. }, '\r' | '\n') if self.input.trim() == "dump" => {
                    self.input.clear();
                    self.log.extend(DUMP.iter().map(|s| s.to_string()));
                }
                (_, '\r' | '\n') => {}
                (_, c) if !c.is_control() => self.input.push(c),
                _ => {}
            }
        }
        self.draw();
    }

    fn submit(&mut self, line: &str) {
        if line.is_empty() {
            return;
        }
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or("");
        let arg = words.next();
        let num = |d: u64| arg.and_then(|a| a.parse::<u64>().ok()).unwrap_or(d);
        match cmd {
            "/exit" | "/quit" => self.exit_command(),
            "crash" => {
                self.log.push(format!("> {line}"));
                self.log.extend(DUMP.iter().map(|s| s.to_string()));
            }
            "crash-die" => {
                self.log.extend(DUMP.iter().map(|s| s.to_string()));
                self.draw();
                self.quit(num(7) as i32);
            }
            "exit" => self.quit(num(1) as i32),
            "hang" | "hang-hard" => {
                if cmd == "hang-hard" {
                    // SAFETY: ignoring a signal.
                    unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
                }
                self.log.push(format!("> {line}"));
                self.draw();
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            "grow" => {
                self.ballast.push(resident(num(100) as usize));
                let total: usize = self.ballast.iter().map(Vec::len).sum();
                self.log.push(format!("> {line}"));
                self.log.push(format!("⏺ Grew to {} MB", total / (1024 * 1024)));
            }
            "spawn-child" => {
                use std::os::unix::process::CommandExt;
                let child = std::process::Command::new("sleep").arg("600").process_group(0).spawn();
                self.log.push(format!("> {line}"));
                match child {
                    Ok(c) => self.log.push(format!("child={}", c.id())),
                    Err(e) => self.log.push(format!("spawn failed: {e}")),
                }
            }
            "fail-resumes" => {
                let _ = std::fs::write(self.config.join(FAIL_RESUMES_FILE), num(1).to_string());
                self.log.push(format!("> {line}"));
                self.log.push(format!("⏺ The next {} resumes will fail", num(1)));
            }
            "ignore-hup" => {
                // SAFETY: ignoring a signal.
                unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
                self.survive_hangup = true;
                self.log.push("> ignore-hup".into());
                self.log.push("⏺ SIGHUP ignored".into());
            }
            "shell" => {
                let mut out = std::io::stdout();
                let _ = out.write_all(b"\x1b[2J\x1b[Hstandin@host:~$ ");
                let _ = out.flush();
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            "question" => {
                self.transcript.prompt(line);
                self.log.push(format!("> {line}"));
                let tool_id = format!("toolu_{}", new_uuid().replace('-', ""));
                self.transcript.assistant(
                    json!([{"type": "tool_use", "id": tool_id, "name": "AskUserQuestion", "input": {"questions": [
                        {"question": "Which database should the service use?", "header": "Database",
                         "options": QUESTION_OPTIONS.iter().map(|o| json!({"label": o})).collect::<Vec<_>>()}]}}]),
                    "tool_use",
                );
                self.mode = Mode::Question { tool_id, started: Instant::now() };
                self.registry("waiting", Some("input needed"));
            }
            "ask" | "ask-auto" => {
                self.transcript.prompt(line);
                self.log.push(format!("> {line}"));
                let tool_id = format!("toolu_{}", new_uuid().replace('-', ""));
                self.transcript.assistant(
                    json!([{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "echo hi", "description": "Say hi"}}]),
                    "tool_use",
                );
                self.log.push("⏺ Bash(echo hi)".into());
                self.log.push("  ⎿  Waiting…".into());
                let picker = (cmd == "ask-auto").then_some(false);
                self.mode = Mode::Permission { tool_id, started: Instant::now(), picker };
                self.registry("waiting", Some("permission prompt"));
            }
            "work" | "crash-during-work" => {
                let secs = Duration::from_secs_f64(arg.and_then(|a| a.parse::<f64>().ok()).unwrap_or(1.0));
                self.start_turn(line, secs, cmd == "crash-during-work");
            }
            _ => self.start_turn(line, self.work, false),
        }
    }

    fn start_turn(&mut self, prompt: &str, duration: Duration, crash: bool) {
        self.transcript.prompt(prompt);
        self.log.push(format!("> {prompt}"));
        let now = Instant::now();
        self.mode = Mode::Working {
            until: now + duration,
            started: now,
            prompt: prompt.to_owned(),
            crash_at: crash.then(|| now + (duration / 3).min(Duration::from_millis(300))),
        };
        self.registry("busy", None);
    }

    fn timer(&mut self) {
        let Mode::Working { until, started, prompt, crash_at } = &mut self.mode else { return };
        if let Some(at) = *crash_at
            && Instant::now() >= at
        {
            *crash_at = None;
            self.log.extend(DUMP.iter().map(|s| s.to_string()));
            self.draw();
            return;
        }
        if Instant::now() < *until {
            return;
        }
        let secs = started.elapsed().as_secs();
        let ms = started.elapsed().as_millis() as u64;
        let reply = format!("Echo: {prompt}");
        self.transcript.assistant(json!([{"type": "text", "text": reply}]), "end_turn");
        self.transcript.turn_done(ms);
        if self.plain {
            self.log.push(reply);
        } else {
            self.log.push(format!("⏺ {reply}"));
            self.log.push(format!("✻ Baked for {secs}s"));
        }
        self.mode = Mode::Idle;
        self.registry("idle", None);
        self.draw();
    }

    fn interrupt(&mut self) {
        self.transcript.append(json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}}));
        self.log.push("  ⎿  Interrupted by user".into());
        self.mode = Mode::Idle;
        self.registry("idle", None);
    }

    /// Answers the question with its option `i`.
    fn choose(&mut self, i: usize) {
        let Mode::Question { tool_id, started } = &self.mode else { return };
        let (tool_id, started) = (tool_id.clone(), *started);
        let choice = QUESTION_OPTIONS.get(i).copied().unwrap_or("Postgres");
        self.transcript.append(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": tool_id, "content": format!("User has answered your questions: \"Which database should the service use?\"=\"{choice}\""),
            "is_error": false}]}}));
        let reply = format!("You chose {choice}.");
        self.transcript.assistant(json!([{"type": "text", "text": reply}]), "end_turn");
        self.transcript.turn_done(started.elapsed().as_millis() as u64);
        self.log.push(format!("⏺ {reply}"));
        self.mode = Mode::Idle;
        self.registry("idle", None);
    }

    fn answer(&mut self, yes: bool) {
        let Mode::Permission { tool_id, started, .. } = &self.mode else { return };
        let (tool_id, started) = (tool_id.clone(), *started);
        if yes {
            self.transcript.append(json!({"type": "user", "toolUseResult": {"stdout": "hi", "stderr": "", "interrupted": false},
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "hi", "is_error": false}]}}));
            self.transcript.assistant(json!([{"type": "text", "text": "Done: said hi."}]), "end_turn");
            self.transcript.turn_done(started.elapsed().as_millis() as u64);
            self.log.push("  ⎿  hi".into());
            self.log.push("⏺ Done: said hi.".into());
            self.log.push(format!("✻ Baked for {}s", started.elapsed().as_secs()));
        } else {
            self.transcript.append(json!({"type": "user", "toolUseResult": "User rejected tool use",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "is_error": true,
                    "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]}}));
            self.log.push("  ⎿  User rejected".into());
        }
        self.mode = Mode::Idle;
        self.registry("idle", None);
    }

    fn exit_command(&mut self) -> ! {
        if self.plain {
            self.log.push("bye".into());
            self.draw_plain();
            self.quit(0)
        }
        self.log.push("> /exit".into());
        self.log.push("Resume this session with:".into());
        self.log.push(format!("claude --resume {}", self.id));
        self.mode = Mode::Idle;
        let mut out = std::io::stdout();
        let _ = write!(out, "\x1b[2J\x1b[H{}", self.log[self.log.len().saturating_sub(3)..].join("\r\n"));
        let _ = out.flush();
        self.quit(0)
    }
}

fn truncate(s: &str, cols: usize) -> String {
    s.chars().take(cols).collect()
}

/// Raw mode on the terminal (no echo, no line editing), restored on exit.
struct RawMode;

static SAVED: std::sync::Mutex<Option<libc::termios>> = std::sync::Mutex::new(None);

impl RawMode {
    fn enable() -> RawMode {
        // SAFETY: termios is plain data; tcgetattr/tcsetattr on stdin.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::isatty(0) == 1 && libc::tcgetattr(0, &mut t) == 0 {
                *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
                let mut raw = t;
                libc::cfmakeraw(&mut raw);
                libc::tcsetattr(0, libc::TCSANOW, &raw);
            }
        }
        RawMode
    }

    fn restore() {
        if let Some(t) = *SAVED.lock().unwrap_or_else(|e| e.into_inner()) {
            // SAFETY: restoring the saved attributes.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        RawMode::restore();
    }
}
