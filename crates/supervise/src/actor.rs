//! The driver of one supervised session: a tokio task that owns the PTY and the agent
//! process and carries out what the policy says, controlled through a queue (like
//! watchexec-supervisor's `Job`). It is the only thing that spawns or signals the
//! session's process, and it handles one message at a time, so a timer firing and a user
//! message can never race into two processes.
//!
//! Per process, three plain threads do the blocking work: a reader (PTY → actor), a
//! writer (actor → PTY) and a waiter (`waitid`, then reap). The process itself is behind
//! [`crate::process`]: its waiter reaps under a lock that every signal also takes, so a
//! signal can never reach a recycled PID, and a test can put a fake in its place.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};

use mimesis_core::clock::{Mono, Timestamp};
use mimesis_core::dialog::Answer;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::AgentCommand;
use mimesis_core::supervision::event::SupervisionEvent;
use mimesis_core::supervision::fleet;
use mimesis_core::supervision::keys::{AnswerError, KeyEffect, Keys};
use mimesis_core::supervision::ledger::{CorruptedSession, ProcessRecord};
use mimesis_core::supervision::policy::{AgentKind, Delivery, Effect, Input, Launch, ScreenSignal, SessionPolicy, Sig};
use mimesis_core::supervision::view::Supervision;
use mimesis_os::procs;

use crate::host::Host;
use crate::monitor::{Monitor, READ_EVERY};
use crate::process::{AgentProcess, StartError, StartSpec, Started};

/// Messages to a session actor.
pub(crate) enum SessionCmd {
    Input(Vec<u8>, oneshot::Sender<Delivery>),
    Attach {
        terminal: bool,
        reply: oneshot::Sender<Attachment>,
    },
    Detach {
        terminal: bool,
    },
    /// For a terminal attached already: the last `keep` bytes of the scrollback, and the
    /// output after them (a resync; no terminal is counted, none goes).
    Tail {
        keep: usize,
        reply: oneshot::Sender<Attachment>,
    },
    Resize {
        cols: u16,
        rows: u16,
    },
    Control(Input),
    Screen(oneshot::Sender<Vec<String>>),
    /// Choose an option of the dialog on screen; the reply names the option chosen.
    Answer(Answer, oneshot::Sender<Result<String, AnswerError>>),
}

/// The last `keep` bytes of `ring` (all of it when it has fewer), in one piece: a resync
/// during a flood copies the screen it shows, not the whole 2 MB scrollback ten times a
/// second.
pub(crate) fn last_bytes(ring: &VecDeque<u8>, keep: usize) -> Vec<u8> {
    let skip = ring.len().saturating_sub(keep);
    let (a, b) = ring.as_slices();
    let mut out = Vec::with_capacity(ring.len() - skip);
    match a.get(skip..) {
        Some(rest) => {
            out.extend_from_slice(rest);
            out.extend_from_slice(b);
        }
        None => out.extend_from_slice(&b[skip - a.len()..]),
    }
    out
}

/// What a client gets when it attaches: the kept scrollback, then every new byte.
pub struct Attachment {
    pub scrollback: Vec<u8>,
    pub output: broadcast::Receiver<Arc<[u8]>>,
    pub cols: u16,
    pub rows: u16,
}

enum Io {
    Output {
        generation: u64,
        bytes: Vec<u8>,
    },
    Eof {
        generation: u64,
    },
    Exited {
        generation: u64,
        code: i32,
    },
    Usage {
        generation: u64,
        rss: u64,
        cpu_ticks: u64,
    },
    /// A first measurement once the process is up, for the metrics only (the policy
    /// measures on its own schedule).
    Sampled {
        rss: u64,
        cpu_ticks: u64,
    },
}

/// The [`fleet::OWNER_ENV`] mark of this process, given to every agent.
fn own_mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        let me = mimesis_os::owner::me();
        fleet::owner_mark(me.pid, me.start_ticks)
    })
}

struct Running {
    generation: u64,
    pid: u32,
    process: Arc<dyn AgentProcess>,
    writer: std::sync::mpsc::Sender<Vec<u8>>,
    started_at: Timestamp,
    /// The exit code, once seen; the actor waits for the output's end (or a short while)
    /// so the last thing the agent printed is read before the exit is acted on.
    exit: Option<(i32, tokio::time::Instant)>,
    eof: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        // No child outlives its actor (a dropped runtime, a panic): kill what still runs.
        self.process.signal(Sig::Kill);
    }
}

/// How long the actor waits for the output to end after the agent exited.
const DRAIN: Duration = Duration::from_millis(300);
/// Waiting output chunks are taken together up to this size.
const COALESCE: usize = 1024 * 1024;
/// Output is noted to the policy (idle timer) at most this often.
const OUTPUT_NOTE_EVERY: Duration = Duration::from_millis(100);

pub(crate) struct SessionActor {
    policy: SessionPolicy,
    shared: Arc<dyn Host>,
    agent: AgentCommand,
    cwd: PathBuf,
    rx: mpsc::UnboundedReceiver<SessionCmd>,
    io_tx: mpsc::Sender<Io>,
    io_rx: mpsc::Receiver<Io>,
    proc: Option<Running>,
    monitor: Monitor,
    scrollback: VecDeque<u8>,
    output: broadcast::Sender<Arc<[u8]>>,
    terminals: usize,
    cols: u16,
    rows: u16,
    published: Option<Supervision>,
    corrupted: Option<SessionId>,
    /// An I/O message taken while coalescing output, handled next.
    stashed: Option<Io>,
    /// When output was last noted to the policy, and of which process.
    output_noted: Option<(u64, std::time::Instant)>,
    /// Events of the current step, sent after its state is published.
    unsent: Vec<SupervisionEvent>,
    /// When the last process started and ended.
    last_lifetime: Option<(Timestamp, Timestamp)>,
    /// The pace of keys to the agent's TUI (a typed line's Enter, a dialog's answer), on
    /// the injected monotonic clock; and who waits for the answer under way.
    keys: Keys,
    answer_reply: Option<oneshot::Sender<Result<String, AnswerError>>>,
    finished: bool,
    /// The process generation whose usage was sampled once it was up (`mimesis metrics`
    /// shows its RSS from the start, not after the first check of the memory limit).
    sampled: Option<u64>,
}

impl SessionActor {
    /// Builds the actor and carries out the first effects (the first spawn), so a command
    /// that cannot start is known before this returns.
    pub(crate) fn new(
        policy: SessionPolicy,
        first: Vec<Effect>,
        shared: Arc<dyn Host>,
        cwd: PathBuf,
        (cols, rows): (u16, u16),
        rx: mpsc::UnboundedReceiver<SessionCmd>,
    ) -> SessionActor {
        let (io_tx, io_rx) = mpsc::channel(256);
        let (output, _) = broadcast::channel(1024);
        let monitor = Monitor::new(rows, cols, &policy.limits().crash_patterns);
        let agent = shared.agent();
        let mono = shared.clock().mono();
        let mut actor = SessionActor {
            policy,
            shared,
            agent,
            cwd,
            rx,
            io_tx,
            io_rx,
            proc: None,
            monitor,
            scrollback: VecDeque::new(),
            output,
            terminals: 0,
            cols,
            rows,
            published: None,
            corrupted: None,
            unsent: Vec::new(),
            output_noted: None,
            stashed: None,
            last_lifetime: None,
            keys: Keys::new(mono),
            answer_reply: None,
            finished: false,
            sampled: None,
        };
        actor.run_effects(first);
        actor.publish();
        actor
    }

    pub(crate) fn supervision(&self) -> Supervision {
        self.policy.supervision(&self.agent.display_name(), &self.cwd.to_string_lossy())
    }

    pub(crate) async fn run(mut self) {
        while !self.finished {
            if let Some(io) = self.stashed.take() {
                self.io(io);
                continue;
            }
            // (Also here: a steady stream of commands must not starve the poll below.)
            self.poll_keys(false);
            let deadline = self.policy.next_deadline().map(|t| self.shared.instant_at(t));
            let drain = self.proc.as_ref().and_then(|p| p.exit.map(|(_, at)| at));
            let read_screen = self.monitor.dirty().then(|| tokio::time::Instant::now() + READ_EVERY);
            let typing = self.keys.next_poll(self.pace_now()).map(|t| self.shared.instant_at(t));
            tokio::select! {
                biased;
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => self.command(cmd),
                    // Every handle is gone: stop the process (dropping it kills it).
                    None => break,
                },
                Some(io) = self.io_rx.recv() => self.io(io),
                _ = sleep_until(drain) => self.finish_exit(),
                _ = sleep_until(read_screen) => self.flush_screen(),
                _ = sleep_until(typing) => self.poll_keys(true),
                _ = sleep_until(deadline) => self.step(Input::Tick),
            }
        }
        self.proc = None;
        self.shared.finished(self.policy.id());
    }

    fn command(&mut self, cmd: SessionCmd) {
        match cmd {
            SessionCmd::Input(bytes, reply) => {
                let (delivery, effects) = self.policy.input(bytes, self.shared.clock().both());
                self.run_effects(effects);
                self.publish();
                let _ = reply.send(delivery);
            }
            SessionCmd::Attach { terminal, reply } => {
                if terminal {
                    self.terminals += 1;
                    self.monitor.set_answering(false);
                }
                let _ = reply.send(self.attachment(usize::MAX));
            }
            SessionCmd::Tail { keep, reply } => {
                let _ = reply.send(self.attachment(keep));
            }
            SessionCmd::Detach { terminal } => {
                if terminal {
                    self.terminals = self.terminals.saturating_sub(1);
                    self.monitor.set_answering(self.terminals == 0);
                }
            }
            SessionCmd::Resize { cols, rows } => {
                self.cols = cols.max(1);
                self.rows = rows.max(1);
                self.monitor.resize(self.rows, self.cols);
                if let Some(p) = &self.proc
                    && let Err(e) = p.process.resize(self.cols, self.rows)
                {
                    tracing::debug!(error = %e, "resize failed");
                }
            }
            SessionCmd::Control(Input::Limits(limits)) => {
                if limits.crash_patterns != self.policy.limits().crash_patterns {
                    self.monitor.set_crash_patterns(&limits.crash_patterns);
                }
                self.step(Input::Limits(limits));
            }
            SessionCmd::Control(input) => self.step(input),
            SessionCmd::Screen(reply) => {
                let _ = reply.send(self.monitor.rows());
            }
            SessionCmd::Answer(answer, reply) => {
                if self.proc.is_none() {
                    let _ = reply.send(Err(AnswerError::NoAgent));
                } else if self.answer_reply.is_some() {
                    let _ = reply.send(Err(AnswerError::Busy));
                } else {
                    self.answer_reply = Some(reply);
                    let now = self.pace_now();
                    let monitor = &self.monitor;
                    let effects = self.keys.answer(answer, now, &|| monitor.rows());
                    self.keys_effects(effects);
                }
            }
        }
    }

    /// The injected monotonic clock, for the pace of keys.
    fn pace_now(&self) -> Mono {
        self.shared.clock().mono()
    }

    /// Looks at the screen for a waiting Enter (and, when `answer`, an answer's next step).
    fn poll_keys(&mut self, answer: bool) {
        let now = self.pace_now();
        let monitor = &self.monitor;
        let screen = || monitor.rows();
        let effects = if answer { self.keys.poll(now, &screen) } else { self.keys.poll_typing(now, &screen) };
        self.keys_effects(effects);
    }

    fn keys_effects(&mut self, effects: Vec<KeyEffect>) {
        for effect in effects {
            match effect {
                KeyEffect::Send(bytes) => self.send(bytes),
                KeyEffect::Answered(result) => {
                    if let Some(reply) = self.answer_reply.take() {
                        let _ = reply.send(result);
                    }
                }
            }
        }
    }

    fn io(&mut self, io: Io) {
        let current = self.proc.as_ref().map(|p| p.generation);
        match io {
            Io::Output { generation, mut bytes } => {
                // A flood arrives as many small reads: take what is already waiting as one.
                while bytes.len() < COALESCE {
                    match self.io_rx.try_recv() {
                        Ok(Io::Output { generation: g, bytes: more }) if g == generation => bytes.extend(more),
                        Ok(other) => {
                            self.stashed = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                self.show(&bytes);
                if current != Some(generation) {
                    return;
                }
                let paced = self.pace_now();
                self.keys.output(paced);
                let now = std::time::Instant::now();
                let signals = self.monitor.feed(&bytes, now);
                let replies = self.monitor.take_replies();
                if !replies.is_empty() && self.terminals == 0 {
                    // No terminal is attached to answer the agent's queries: answer them
                    // (at once: a query is not typing).
                    self.send(replies);
                }
                self.poll_keys(false);
                // Output only moves the idle timer (and, for an agent whose screen says
                // nothing, tells when it is up): a tenth of a second is precise enough. A new
                // process's first output is always noted.
                if self.output_noted.is_none_or(|(g, t)| g != generation || now.duration_since(t) >= OUTPUT_NOTE_EVERY)
                {
                    self.output_noted = Some((generation, now));
                    self.step(Input::Output { generation });
                }
                self.screen_signals(generation, signals);
            }
            Io::Eof { generation } => {
                if let Some(p) = self.proc.as_mut().filter(|p| p.generation == generation) {
                    p.eof = true;
                    if p.exit.is_some() {
                        self.finish_exit();
                    }
                }
            }
            Io::Exited { generation, code } => {
                if let Some(p) = self.proc.as_mut().filter(|p| p.generation == generation) {
                    p.exit = Some((code, tokio::time::Instant::now() + DRAIN));
                    if p.eof {
                        self.finish_exit();
                    }
                }
            }
            Io::Usage { generation, rss, cpu_ticks } => {
                self.shared.usage(self.policy.id(), rss, cpu_ticks);
                self.step(Input::Rss { generation, bytes: rss });
            }
            Io::Sampled { rss, cpu_ticks } => self.shared.usage(self.policy.id(), rss, cpu_ticks),
        }
    }

    fn screen_signals(&mut self, generation: u64, signals: Vec<ScreenSignal>) {
        for signal in signals {
            self.step(Input::Screen { generation, signal });
        }
    }

    /// Reads the screen after a burst of output ended.
    fn flush_screen(&mut self) {
        let Some(generation) = self.proc.as_ref().map(|p| p.generation) else { return };
        let signals = self.monitor.flush(std::time::Instant::now());
        self.screen_signals(generation, signals);
    }

    /// The last output of a process that just exited is read before its exit is acted on
    /// (a "No conversation found" line decides what the exit means).
    fn flush_screen_of(&mut self, generation: u64) {
        let signals = self.monitor.flush(std::time::Instant::now());
        self.screen_signals(generation, signals);
    }

    fn finish_exit(&mut self) {
        let Some((code, _)) = self.proc.as_ref().and_then(|p| p.exit) else { return };
        let generation = self.proc.as_ref().map_or(0, |p| p.generation);
        self.flush_screen_of(generation);
        let p = self.proc.take().expect("checked above");
        let effects = self.keys.process_ended();
        self.keys_effects(effects);
        self.last_lifetime = Some((p.started_at, self.shared.clock().now()));
        self.shared.process_ended(p.pid);
        drop(p);
        let last_line = self.monitor.last_line();
        tracing::info!(code, ?last_line, "the agent exited");
        self.step(Input::Exited { generation, code, last_line });
    }

    fn step(&mut self, input: Input) {
        let effects = self.policy.handle(input, self.shared.clock().both());
        self.run_effects(effects);
        self.sample_once_up();
        self.publish();
    }

    /// Measures the process once as soon as it is up, for the metrics.
    fn sample_once_up(&mut self) {
        let Some(p) = self.proc.as_ref().filter(|p| self.sampled != Some(p.generation)) else { return };
        if !self.policy.is_up() {
            return;
        }
        self.sampled = Some(p.generation);
        let (process, tx) = (p.process.clone(), self.io_tx.clone());
        tokio::task::spawn_blocking(move || {
            let (rss, cpu_ticks) = process.usage();
            let _ = tx.blocking_send(Io::Sampled { rss, cpu_ticks });
        });
    }

    fn run_effects(&mut self, effects: Vec<Effect>) {
        let mut queue: VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            if let Some(input) = self.execute(effect) {
                queue.extend(self.policy.handle(input, self.shared.clock().both()));
            }
        }
    }

    /// Carries out one effect; some answer at once with an input for the policy.
    fn execute(&mut self, effect: Effect) -> Option<Input> {
        match effect {
            Effect::Spawn { generation, session_id, launch } => {
                Some(match self.spawn(generation, &session_id, &launch) {
                    Ok(pid) => Input::Spawned { generation, pid },
                    Err(error) => Input::SpawnFailed { generation, error: error.to_string() },
                })
            }
            Effect::Write(bytes) => {
                let (now, monitor) = (self.pace_now(), &self.monitor);
                let effects = self.keys.write(bytes, now, &|| monitor.rows());
                self.keys_effects(effects);
                None
            }
            Effect::TypeLine(line) => {
                let (now, monitor) = (self.pace_now(), &self.monitor);
                let effects = self.keys.type_line(line, now, &|| monitor.rows());
                self.keys_effects(effects);
                None
            }
            Effect::Echo(bytes) => {
                self.show(&bytes);
                None
            }
            Effect::Signal(sig) => {
                // What was decided before the signal is told before it goes out (seed 003
                // §2.2: `mode_change` before the process is stopped).
                self.publish();
                if let Some(p) = &self.proc {
                    tracing::info!(pid = p.pid, ?sig, "signal to the agent's process group");
                    p.process.signal(sig);
                }
                None
            }
            Effect::Emit(ev) => {
                // Sent once the new state is published: a listener that reads the state on
                // an event sees the state the event is about.
                self.unsent.push(ev);
                None
            }
            Effect::MeasureRss => {
                if let Some(p) = &self.proc {
                    let (process, generation, tx) = (p.process.clone(), p.generation, self.io_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let (rss, cpu_ticks) = process.usage();
                        let _ = tx.blocking_send(Io::Usage { generation, rss, cpu_ticks });
                    });
                }
                None
            }
            Effect::CheckHealth => {
                let p = self.proc.as_ref()?;
                if p.process.reaped() || p.exit.is_some() {
                    return None; // the exit is on its way, with the real code
                }
                Some(Input::Health { generation: p.generation, alive: p.process.alive() })
            }
            Effect::DeleteShellSnapshots => {
                self.delete_stale_snapshots();
                None
            }
            Effect::ArchiveCorrupted { session_id } => {
                self.corrupted = Some(session_id);
                None
            }
            Effect::Renamed { from, to } => {
                self.archive(&from, &to);
                self.shared.rename(&from, &to, &self.cwd);
                None
            }
            Effect::Finished => {
                self.finished = true;
                None
            }
        }
    }

    fn send(&self, bytes: Vec<u8>) {
        if let Some(p) = &self.proc
            && !bytes.is_empty()
        {
            let _ = p.writer.send(bytes);
        }
    }

    /// The last `keep` bytes of the scrollback and the output after them.
    fn attachment(&self, keep: usize) -> Attachment {
        Attachment {
            scrollback: last_bytes(&self.scrollback, keep),
            output: self.output.subscribe(),
            cols: self.cols,
            rows: self.rows,
        }
    }

    /// Output to attached clients and the scrollback (not to the monitor).
    fn show(&mut self, bytes: &[u8]) {
        let cap = self.shared.config().scrollback_bytes;
        self.scrollback.extend(bytes);
        if self.scrollback.len() > cap {
            let excess = self.scrollback.len() - cap;
            // Cut at a line start where one is near, so a replay starts cleanly.
            let cut = self
                .scrollback
                .iter()
                .skip(excess)
                .take(4096)
                .position(|b| *b == b'\n')
                .map_or(excess, |i| excess + i + 1);
            self.scrollback.drain(..cut.min(self.scrollback.len()));
        }
        let _ = self.output.send(Arc::from(bytes));
    }

    fn spawn(&mut self, generation: u64, id: &SessionId, launch: &Launch) -> Result<u32, StartError> {
        let spec = self.start_spec(generation, id, launch);
        // What was passed, not /proc/<pid>/cmdline: right after the start the kernel may
        // still show the parent's while exec finishes.
        let cmdline = spec.argv();
        let Started { output, input, process } = self.shared.terminals().start(spec)?;
        let pid = process.pid();
        let started_at = self.shared.clock().now();

        let tx = self.io_tx.clone();
        spawn_thread(format!("pty-read-{pid}"), move || read_loop(output, generation, tx));
        let (wtx, wrx) = std::sync::mpsc::channel();
        spawn_thread(format!("pty-write-{pid}"), move || write_loop(input, wrx));
        let (waited, tx) = (process.clone(), self.io_tx.clone());
        spawn_thread(format!("pty-wait-{pid}"), move || {
            let code = waited.wait();
            let _ = tx.blocking_send(Io::Exited { generation, code });
        });

        let record = ProcessRecord {
            session_id: id.clone(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            pid,
            start_ticks: process.start_ticks(),
            cmdline,
            boot_id: procs::boot_id(),
            started_at,
        };
        self.shared.process_started(record);
        self.monitor = Monitor::new(self.rows, self.cols, &self.policy.limits().crash_patterns);
        self.monitor.set_answering(self.terminals == 0);
        self.keys.process_started();
        tracing::info!(pid, ?launch, "agent started");
        self.proc = Some(Running { generation, pid, process, writer: wtx, started_at, exit: None, eof: false });
        Ok(pid)
    }

    /// The command line and environment of the session's next process.
    fn start_spec(&self, generation: u64, id: &SessionId, launch: &Launch) -> StartSpec {
        let mut args = self.agent.args.clone();
        if self.agent.kind == AgentKind::ClaudeLike {
            // Claude Code writes a transcript only at the first prompt: a session that never
            // got one cannot be resumed, but can start again under its own id.
            let transcript = TranscriptLocation::expected(&self.shared.config().config_root, &self.cwd, id).path;
            // (The first launch resumes what the user named: a missing one must fail as such.)
            let launch = match launch {
                Launch::Resume if generation > 1 && !transcript.exists() => &Launch::Fresh,
                other => other,
            };
            let extra: Vec<&str> = match launch {
                Launch::Fresh => vec!["--session-id", id.as_str()],
                Launch::Resume => vec!["--resume", id.as_str()],
                // `--`: the prompt is the user's text, never an option (`-p "--version"`).
                Launch::OneShot { prompt } => vec!["--resume", id.as_str(), "-p", "--", prompt.as_str()],
            };
            args.extend(extra.iter().map(|a| a.to_string()));
        }
        let mut env: Vec<(OsString, OsString)> = Vec::new();
        if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
            env.push(("TERM".into(), "xterm-256color".into()));
        }
        env.extend(self.agent.env.iter().map(|(k, v)| (k.into(), v.into())));
        if let Some(root) = &self.shared.config().config_root_env {
            env.push(("CLAUDE_CONFIG_DIR".into(), root.into()));
        }
        // Inherited by everything the agent starts: what a later scan requires before it
        // kills a leftover (P11).
        env.push((fleet::OWNER_ENV.into(), own_mark().into()));
        if let Some(data) = &self.shared.config().data_dir {
            env.push((fleet::OWNER_DATA_ENV.into(), data.into()));
        }
        StartSpec {
            program: self.agent.program.clone(),
            args,
            cwd: self.cwd.clone(),
            env,
            cols: self.cols,
            rows: self.rows,
        }
    }

    /// P9: removes the shell snapshots the killed process left behind.
    fn delete_stale_snapshots(&self) {
        let Some(lifetime) = self.last_lifetime else { return };
        let dir = self.shared.config().config_root.join("shell-snapshots");
        let others = self.shared.other_process_starts(self.policy.id());
        tokio::task::spawn_blocking(move || {
            let files: Vec<PathBuf> =
                std::fs::read_dir(&dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
            for f in fleet::stale_snapshots(&files, lifetime, &others) {
                tracing::info!(file = %f.display(), "deleting a stale shell snapshot");
                let _ = std::fs::remove_file(f);
            }
        });
    }

    fn archive(&mut self, from: &SessionId, to: &SessionId) {
        let Some(old) = self.corrupted.take() else { return };
        debug_assert_eq!(&old, from);
        let loc = TranscriptLocation::expected(&self.shared.config().config_root, &self.cwd, from);
        let entry = CorruptedSession {
            session_id: from.clone(),
            replaced_by: to.clone(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            transcript_path: loc.path.to_string_lossy().into_owned(),
            archived_at: self.shared.clock().now(),
            reason: format!("No conversation found with session ID: {from}"),
        };
        if let Err(e) = self.shared.config().ledger.archive_corrupted(&entry) {
            tracing::warn!(error = %e, "could not archive the corrupted session");
        }
    }

    /// Shares the current supervision (roster row, resource view, cap) when it changed.
    fn publish(&mut self) {
        let sup = self.supervision();
        if !self.published.as_ref().is_some_and(|old| same_enough(old, &sup)) {
            self.shared.publish(self.policy.id(), &sup, &self.policy, &self.cwd);
            self.published = Some(sup);
        }
        for ev in self.unsent.drain(..) {
            self.shared.emit(ev);
        }
    }
}

/// Equal but for an idle deadline that only moved a little (every keystroke moves it).
fn same_enough(a: &Supervision, b: &Supervision) -> bool {
    let moved = match (a.idle_deadline, b.idle_deadline) {
        (Some(x), Some(y)) => (x.millis() - y.millis()).abs() >= 5_000,
        (x, y) => x != y,
    };
    !moved && Supervision { idle_deadline: b.idle_deadline, ..a.clone() } == *b
}

fn spawn_thread(name: String, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name).spawn(f) {
        tracing::error!(error = %e, "cannot start a PTY thread");
    }
}

fn read_loop(mut reader: Box<dyn Read + Send>, generation: u64, tx: mpsc::Sender<Io>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.blocking_send(Io::Output { generation, bytes: buf[..n].to_vec() }).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.blocking_send(Io::Eof { generation });
}

fn write_loop(mut writer: Box<dyn Write + Send>, rx: std::sync::mpsc::Receiver<Vec<u8>>) {
    while let Ok(b) = rx.recv() {
        if writer.write_all(&b).and_then(|_| writer.flush()).is_err() {
            break;
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
