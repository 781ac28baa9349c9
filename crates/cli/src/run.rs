//! `mimesis run`: one supervised session attached to this terminal (raw mode, resize
//! forwarded), the crash-proof way to run Claude Code without the desktop app. Without a
//! terminal on stdin it still runs, taking stdin as keystrokes.
//!
//! Exit code: the agent's final exit code, or 0 after a limit-driven termination.
//!
//! Limits and the agent come from, lowest first: the defaults, the settings stored in the
//! fleet database by the desktop app (read, never written), the environment
//! (`MAX_SESSION_DURATION_SECONDS`, …), then the flags: the same merge as the app's. The
//! session runs on the same wiring as the app's ([`Mimesis::start`]): its engine follows
//! the supervised session's transcript and live registry entry and feeds them to the
//! supervisor.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mimesis_core::SessionId;
use mimesis_core::supervision::policy::StopSignal;
use mimesis_core::supervision::{
    AgentCommand, EventKind, LimitFlags, SupervisionEvent, SupervisionState, parse_duration,
};
use mimesis_os::roots;
use mimesis_wiring::{Follow, Mimesis, Options, SuperviseOptions, Supervisor, limits_env_of_process};
use tokio::sync::broadcast;

use crate::run_status::{self, Boundary};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The folder to run the session in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The agent program (default: $MIMESIS_AGENT, else the desktop app's setting, else claude). Only
    /// claude-like agents are resumed and recovered.
    #[arg(long, value_name = "PROGRAM")]
    agent: Option<PathBuf>,
    /// Resume this session instead of starting a new one.
    #[arg(long, value_name = "ID", conflicts_with = "session_id")]
    resume: Option<String>,
    /// Start the new session under this id (a UUID) instead of one Mimesis chooses.
    #[arg(long = "session-id", value_name = "UUID")]
    session_id: Option<String>,
    /// Append one JSON object per supervision event to FILE.
    #[arg(long = "events-json", value_name = "FILE")]
    events_json: Option<PathBuf>,
    /// End the session after this long (default 4h; env MAX_SESSION_DURATION_SECONDS).
    #[arg(long = "max-duration", value_name = "D", value_parser = parse_duration)]
    max_duration: Option<Duration>,
    /// How often the session's age is re-checked (default 60s); the warning and the end also fire at their own instants.
    #[arg(long = "duration-check", value_name = "D", value_parser = parse_duration)]
    duration_check: Option<Duration>,
    /// Restart (with resume) when the process tree uses more memory (default 4096; env MAX_SESSION_RSS_MB).
    #[arg(long = "max-rss-mb", value_name = "N")]
    max_rss_mb: Option<u64>,
    /// How often memory is checked (default 30s).
    #[arg(long = "rss-check", value_name = "D", value_parser = parse_duration)]
    rss_check: Option<Duration>,
    /// Suspend after this long idle once a turn has finished (default 10m, at most 2h).
    #[arg(long = "idle-timeout", value_name = "D", value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// A regular expression that means the agent crashed (repeatable; replaces the default
    /// "RangeError: Maximum call stack size exceeded").
    #[arg(long = "crash-pattern", value_name = "REGEX")]
    crash_pattern: Vec<String>,
    /// How long an in-flight turn may finish when a limit is reached (default 30s).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    grace: Option<Duration>,
    /// Time between SIGTERM and SIGKILL (default 5s).
    #[arg(long = "kill-after", value_name = "D", value_parser = parse_duration)]
    kill_after: Option<Duration>,
    /// The session's budget in US dollars (e.g. 5 or 0.50): a warning at 80 %, and at 100 %
    /// the session is suspended at its next idle moment (default: the settings' budgetUsd).
    #[arg(long = "budget-usd", value_name = "USD", allow_negative_numbers = true,
          value_parser = mimesis_core::supervision::budget::parse_usd)]
    budget_usd: Option<mimesis_core::supervision::budget::Usd>,
    /// Arguments for the agent, after `--`.
    #[arg(last = true, value_name = "AGENT_ARGS")]
    agent_args: Vec<String>,
}

impl RunArgs {
    fn flags(&self) -> LimitFlags {
        LimitFlags {
            max_duration: self.max_duration,
            duration_check: self.duration_check,
            max_rss_mb: self.max_rss_mb,
            rss_check: self.rss_check,
            idle_timeout: self.idle_timeout,
            turn_grace: self.grace,
            kill_after: self.kill_after,
            crash_patterns: self.crash_pattern.clone(),
            budget_usd: self.budget_usd,
        }
    }
}

pub fn run(args: RunArgs, config_dirs: &[PathBuf], data_dir: &Path) -> anyhow::Result<ExitCode> {
    let start = match start_of(&args) {
        Ok(s) => s,
        Err(e) => {
            crate::term::say(format_args!("mimesis run: {e}"));
            return Ok(ExitCode::from(2));
        }
    };
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot tell the current folder")?,
    };
    if !cwd.is_dir() {
        bail!("{} is not a folder; pass an existing folder with --cwd", cwd.display());
    }
    let events_file = match &args.events_json {
        // Created 0600 (it tells what the session did); a file that exists keeps its mode:
        // the path is the user's.
        Some(p) => Some(
            mimesis_os::private::options()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open {} for the events", p.display()))?,
        ),
        None => None,
    };
    let config_root = roots::from_env(config_dirs)
        .into_iter()
        .next()
        .context("no Claude Code config folder: set HOME or CLAUDE_CONFIG_DIR")?;
    let mut supervise = SuperviseOptions::new(config_root.clone());
    supervise.env = limits_env_of_process();
    supervise.flags = args.flags();
    // `--agent`, else `$MIMESIS_AGENT` (as the app reads it), else the stored setting.
    let env_agent = std::env::var_os("MIMESIS_AGENT").filter(|a| !a.is_empty()).map(PathBuf::from);
    supervise.agent = args.agent.clone().or(env_agent).map(AgentCommand::new);
    if args.agent.is_some() || !args.agent_args.is_empty() {
        supervise.agent_args = Some(args.agent_args.clone());
    }
    supervise.config_root_env = !config_dirs.is_empty();
    supervise.size = terminal_size();
    let mut opts = Options::watching(vec![config_root], data_dir.to_owned());
    opts.follow = Follow::SupervisedOnly;
    opts.supervise = Some(supervise);
    let tty = std::io::stdin().is_terminal();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let code = rt.block_on(async {
        let mimesis = Mimesis::start(opts).await;
        // A bad flag or environment value is a usage error here (the app only warns).
        let effective = mimesis.effective_limits().expect("this run supervises");
        if let Some(e) = effective.env_errors.first().or(effective.flag_errors.first()) {
            crate::term::say(format_args!("mimesis run: {}: {}", e.field, e.message));
            mimesis.shutdown().await;
            return Ok(ExitCode::from(2));
        }
        let result = session(&mimesis, cwd, start, events_file, tty).await;
        mimesis.shutdown().await;
        result
    });
    // The stdin reader may be blocked in read(2): do not wait for it.
    rt.shutdown_background();
    code
}

/// Which session `mimesis run` starts.
enum Start {
    New,
    NewAs(SessionId),
    Resume(SessionId),
}

fn start_of(args: &RunArgs) -> anyhow::Result<Start> {
    if let Some(id) = &args.resume {
        return SessionId::parse(id).map(Start::Resume).map_err(|e| anyhow::anyhow!("--resume: {e}"));
    }
    match &args.session_id {
        None => Ok(Start::New),
        Some(id) => match SessionId::parse(id) {
            Ok(id) if id.is_uuid() => Ok(Start::NewAs(id)),
            _ => Err(anyhow::anyhow!("--session-id: {id:?} is not a UUID (8-4-4-4-12 hex digits)")),
        },
    }
}

async fn session(
    mimesis: &Mimesis,
    cwd: PathBuf,
    start: Start,
    mut events_file: Option<std::fs::File>,
    tty: bool,
) -> anyhow::Result<ExitCode> {
    let sup = mimesis.supervisor().await.context("the supervisor did not start")?;
    let mut events = sup.subscribe();
    let created = match start {
        Start::New => sup.create(&cwd, None).await,
        Start::NewAs(id) => sup.create_new_as(&cwd, id, None).await,
        Start::Resume(id) => sup.create(&cwd, Some(id)).await,
    };
    let id = match created {
        Ok(id) => id,
        Err(e) => {
            drain_events(&mut events, &mut events_file);
            sup.shutdown().await;
            bail!("{e}");
        }
    };
    let raw = if tty { RawMode::enable() } else { None };
    let attach = sup.attach(&id, tty).await?;
    let mut stdout = std::io::stdout();
    stdout.write_all(&attach.scrollback)?;
    stdout.flush()?;
    let mut boundary = Boundary::default();
    boundary.feed(&attach.scrollback);
    let mut output = attach.output;
    // The agent's output, and between its pieces the titles of ours (run_status).
    let (title_tx, mut titles) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut out = std::io::stdout();
        let mut held: Option<Vec<u8>> = None;
        loop {
            tokio::select! {
                chunk = output.recv() => match chunk {
                    Ok(chunk) => {
                        let _ = out.write_all(&chunk);
                        boundary.feed(&chunk);
                        if boundary.clear() && let Some(t) = held.take() {
                            let _ = out.write_all(&t);
                        }
                        let _ = out.flush();
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                Some(title) = titles.recv() => {
                    if boundary.clear() {
                        let _ = out.write_all(&title);
                        let _ = out.flush();
                    } else {
                        held = Some(title);
                    }
                }
            }
        }
    });
    // A screen the agent draws on: our sentences go into its title, and on a line only
    // while no agent draws (run_status).
    let says = Says { screen: std::io::stdout().is_terminal(), titles: title_tx };
    let (in_tx, mut in_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 || in_tx.send(buf[..n].to_vec()).is_err() {
                break; // end of input: the loop below decides
            }
        }
    })?;

    use tokio::signal::unix::{SignalKind, signal};
    let mut winch = signal(SignalKind::window_change())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut stdin_open = true;
    let code: u8 = loop {
        tokio::select! {
            bytes = in_rx.recv(), if stdin_open => match bytes {
                Some(bytes) => {
                    let current = sup.current_id(&id);
                    if let Some(code) = quit_while_suspended(&sup, &current, &bytes, tty) {
                        break code;
                    }
                    if let Err(e) = sup.input(&current, &bytes).await {
                        tracing::info!(error = %e, "input not taken");
                        if let Some(code) = while_unhealthy(&sup, &current, &bytes, tty) {
                            break code;
                        }
                    }
                }
                None => {
                    stdin_open = false;
                    if !tty {
                        // A script fed this session and is done: stop it (resumable) and
                        // exit once it has stopped; an unhealthy one can wait for no one.
                        let current = sup.current_id(&id);
                        if let Some(code) = unhealthy_exit_code(&sup, &current) {
                            break code;
                        }
                        tracing::info!("stdin ended: stopping the session");
                        let _ = sup.stop(&current);
                    }
                }
            },
            ev = events.recv() => match ev {
                Ok(ev) => {
                    record(&ev, &mut events_file);
                    says.tell(&sup, &ev);
                    if let Some(code) = ended(&sup, &ev) {
                        break code;
                    }
                    if matches!(ev.kind, EventKind::SessionUnhealthy { .. }) && unhealthy_exit_code(&sup, &ev.session_id).is_some() {
                        if !stdin_open {
                            break unhealthy_exit_code(&sup, &ev.session_id).unwrap_or(1);
                        }
                        tell_line(RETRY_HINT, says.screen);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => tracing::warn!(missed = n, "missed supervision events"),
                Err(broadcast::error::RecvError::Closed) => break 1,
            },
            _ = winch.recv() => {
                if let Some((cols, rows)) = terminal_size() {
                    let _ = sup.resize(&sup.current_id(&id), cols, rows);
                }
            }
            _ = term.recv() => break stop(&sup, &mut events, &mut events_file, StopSignal::Term).await,
            _ = int.recv() => break stop(&sup, &mut events, &mut events_file, StopSignal::Int).await,
            _ = hup.recv() => break stop(&sup, &mut events, &mut events_file, StopSignal::Hup).await,
        }
    };
    sup.shutdown().await;
    drain_events(&mut events, &mut events_file);
    drop(raw);
    Ok(ExitCode::from(code))
}

/// Whether the session is over, and the exit code if so.
fn ended(sup: &Supervisor, ev: &SupervisionEvent) -> Option<u8> {
    let state = sup.supervision(&ev.session_id);
    match &ev.kind {
        EventKind::SessionExited { exit_code } => {
            let over = state.is_none_or(|s| s.state == SupervisionState::Terminated);
            over.then(|| (*exit_code).clamp(0, 255) as u8)
        }
        EventKind::SessionTerminated { .. } => Some(0),
        _ => None,
    }
}

const RETRY_HINT: &str = "Automatic recovery is off. Press Enter to retry, or q (or Ctrl-C) to quit.";

/// The exit code to leave with when the session is unhealthy with no process (else None).
fn unhealthy_exit_code(sup: &Supervisor, id: &SessionId) -> Option<u8> {
    let s = sup.supervision(id)?;
    (s.state == SupervisionState::Unhealthy && s.pid.is_none())
        .then(|| s.last_exit_code.unwrap_or(1).clamp(1, 255) as u8)
}

/// Keys typed while the session is unhealthy with no process: Enter retries, q, Ctrl-C or
/// Ctrl-D quits (with the agent's last exit code), anything else repeats the hint.
fn while_unhealthy(sup: &Supervisor, id: &SessionId, bytes: &[u8], tty: bool) -> Option<u8> {
    let code = unhealthy_exit_code(sup, id)?;
    if bytes.iter().any(|b| matches!(b, 0x03 | 0x04 | b'q' | b'Q')) {
        return Some(code);
    }
    if bytes.iter().any(|b| matches!(b, b'\r' | b'\n')) {
        tell_line("Retrying…", tty);
        if let Err(e) = sup.restart(id) {
            tell_line(&format!("cannot retry: {e}"), tty);
        }
    } else {
        tell_line(RETRY_HINT, tty);
    }
    None
}

/// Ctrl-C or Ctrl-D alone, typed while the session is suspended (ended or paused): nothing
/// to interrupt, so `mimesis run` leaves, the session resumable as it is (the policy would
/// drop the keys rather than wake the agent only to quit it).
fn quit_while_suspended(sup: &Supervisor, id: &SessionId, bytes: &[u8], tty: bool) -> Option<u8> {
    let s = sup.supervision(id)?;
    if s.state != SupervisionState::Suspended || bytes.is_empty() || !bytes.iter().all(|b| matches!(b, 0x03 | 0x04)) {
        return None;
    }
    tell_line(&format!("Left the suspended session; `mimesis run --resume {id}` goes on with it."), tty);
    Some(0)
}

/// A signal to `mimesis run` itself: stop the session (it can be resumed), with a last
/// `session_terminated` (reason `signal`) in the events, and exit 128 + sig.
async fn stop(
    sup: &Supervisor,
    events: &mut broadcast::Receiver<std::sync::Arc<SupervisionEvent>>,
    file: &mut Option<std::fs::File>,
    signal: StopSignal,
) -> u8 {
    sup.shutdown_signalled(signal).await;
    drain_events(events, file);
    128 + signal.number()
}

fn drain_events(events: &mut broadcast::Receiver<std::sync::Arc<SupervisionEvent>>, file: &mut Option<std::fs::File>) {
    while let Ok(ev) = events.try_recv() {
        record(&ev, file);
    }
}

fn record(ev: &SupervisionEvent, file: &mut Option<std::fs::File>) {
    if let Some(f) = file {
        let mut line = serde_json::to_vec(ev).unwrap_or_default();
        line.push(b'\n');
        if let Err(e) = f.write_all(&line).and_then(|_| f.flush()) {
            tracing::warn!(error = %e, "cannot write the events file");
        }
    }
}

/// Where the seeds' sentences go.
struct Says {
    /// Standard output is a terminal, which the agent draws on.
    screen: bool,
    titles: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
}

impl Says {
    /// On a screen: in its title, and on a line of their own only while no agent process
    /// draws on it. Elsewhere: on a line of their own.
    fn tell(&self, sup: &Supervisor, ev: &SupervisionEvent) {
        let Some(msg) = ev.message() else { return };
        if matches!(ev.kind, EventKind::ModeChange { .. }) {
            return;
        }
        if !self.screen {
            return tell_line(msg, false);
        }
        let _ = self.titles.send(run_status::title(msg));
        if sup.supervision(&ev.session_id).is_none_or(|s| s.pid.is_none()) {
            tell_line(msg, true);
        }
    }
}

/// A sentence on a line of its own (the label's colours are ours; the words go through the
/// terminal filter: an error may quote the agent).
fn tell_line(msg: &str, tty: bool) {
    let mut line: Vec<u8> = if tty { b"\r\n\x1b[7m mimesis \x1b[0m ".to_vec() } else { b"mimesis: ".to_vec() };
    {
        let mut clean = crate::term::Term::new(&mut line, false, 120);
        let _ = clean.write_all(msg.as_bytes());
    }
    line.extend_from_slice(if tty { b"\r\n" } else { b"\n" });
    let _ = std::io::stderr().write_all(&line);
}

fn terminal_size() -> Option<(u16, u16)> {
    for fd in [libc::STDOUT_FILENO, libc::STDIN_FILENO] {
        // SAFETY: TIOCGWINSZ fills a plain struct.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        if unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_col > 0 && ws.ws_row > 0 {
            return Some((ws.ws_col, ws.ws_row));
        }
    }
    None
}

/// The user's terminal in raw mode (keys go to the agent as typed), restored on drop.
struct RawMode(libc::termios);

impl RawMode {
    fn enable() -> Option<RawMode> {
        // SAFETY: termios is plain data; tcgetattr/tcsetattr on stdin.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 {
                return None;
            }
            let mut raw = t;
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw);
            Some(RawMode(t))
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restoring the attributes saved in `enable`.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.0) };
    }
}
