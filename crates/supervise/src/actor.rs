//! The driver of one supervised session: a tokio task that owns the PTY and the agent
//! process and carries out what the policy says, controlled through a queue (like
//! watchexec-supervisor's `Job`). It is the only thing that spawns or signals the
//! session's process, and it handles one message at a time, so a timer firing and a user
//! message can never race into two processes.
//!
//! Per process, three plain threads do the blocking work: a reader (PTY → actor), a
//! writer (actor → PTY) and a waiter (`waitid`, then reap). The waiter reaps under a lock
//! that every signal also takes, so a signal can never reach a recycled PID.

use std::collections::{BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use tokio::sync::{broadcast, mpsc, oneshot};

use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::supervision::AgentCommand;
use mimesis_core::supervision::event::SupervisionEvent;
use mimesis_core::supervision::fleet;
use mimesis_core::supervision::ledger::{CorruptedSession, ProcessRecord};
use mimesis_core::supervision::policy::{AgentKind, Delivery, Effect, Input, Launch, ScreenSignal, SessionPolicy, Sig};
use mimesis_core::supervision::view::Supervision;
use mimesis_os::procs;

use crate::host::Host;
use crate::monitor::{Monitor, READ_EVERY};

/// Messages to a session actor.
pub(crate) enum SessionCmd {
    Input(Vec<u8>, oneshot::Sender<Delivery>),
    Attach { terminal: bool, reply: oneshot::Sender<Attachment> },
    Detach { terminal: bool },
    Resize { cols: u16, rows: u16 },
    Control(Input),
    Screen(oneshot::Sender<Vec<String>>),
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

/// Bytes to the PTY that wait behind a typed line's Enter.
enum Held {
    Bytes(Vec<u8>),
    Line(Vec<u8>),
}

/// A typed line whose Enter is not sent yet: it goes once the TUI shows the text in its
/// input row (so it has read it), at least [`ENTER_PAUSE`] after the text and at most
/// [`ENTER_WAIT`] after it (a TUI that does not echo).
struct Typing {
    /// The end of the line, without whitespace, as the screen would show it.
    needle: String,
    since: tokio::time::Instant,
}

const ENTER_PAUSE: Duration = Duration::from_millis(50);
const ENTER_WAIT: Duration = Duration::from_secs(2);
/// How often the screen is looked at while an Enter waits.
const ENTER_POLL: Duration = Duration::from_millis(25);

/// The agent process, guarded so signals never outlive its PID.
struct ChildGuard {
    pid: u32,
    reaped: Mutex<bool>,
}

impl ChildGuard {
    fn signal(&self, sig: Sig) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if *reaped {
            return;
        }
        let signo = match sig {
            Sig::Term => libc::SIGTERM,
            Sig::Kill => libc::SIGKILL,
            Sig::Stop => libc::SIGSTOP,
            Sig::Cont => libc::SIGCONT,
        };
        procs::signal_group(self.pid, signo);
        if sig == Sig::Kill {
            // Members that moved to another process group are not reached by the group.
            procs::kill_session(self.pid);
        }
    }

    fn reaped(&self) -> bool {
        *self.reaped.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Agents whose waiter thread has not reaped them yet, across every supervisor of this
/// process: the orphan scan must never reap one (it would steal its exit code). A spawn
/// holds the lock until its PID is in, so a scan holding it sees every agent.
static WAITED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

pub(crate) fn waited_agents() -> MutexGuard<'static, BTreeSet<u32>> {
    WAITED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The [`fleet::OWNER_ENV`] mark of this process, given to every agent.
fn own_mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        let me = mimesis_os::owner::me();
        fleet::owner_mark(me.pid, me.start_ticks)
    })
}

/// Waits for the child to exit without reaping it, then reaps it under the guard's lock.
fn wait_for_exit(guard: &ChildGuard) -> i32 {
    let pid = guard.pid as libc::id_t;
    loop {
        // SAFETY: siginfo_t is plain data; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    let mut reaped = guard.reaped.lock().unwrap_or_else(|e| e.into_inner());
    let mut status = 0;
    // SAFETY: reaping our own child.
    let r = unsafe { libc::waitpid(guard.pid as i32, &mut status, 0) };
    *reaped = true;
    waited_agents().remove(&guard.pid);
    if r != guard.pid as i32 {
        return 1; // someone else reaped it; the code is unknown
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

struct Running {
    generation: u64,
    pid: u32,
    guard: Arc<ChildGuard>,
    master: Box<dyn MasterPty + Send>,
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
        self.guard.signal(Sig::Kill);
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
    /// When output was last noted to the policy.
    output_noted: Option<std::time::Instant>,
    /// Events of the current step, sent after its state is published.
    unsent: Vec<SupervisionEvent>,
    /// When the last process started and ended.
    last_lifetime: Option<(Timestamp, Timestamp)>,
    /// A typed line waiting for its Enter, and what was written after it.
    typing: Option<Typing>,
    held: VecDeque<Held>,
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
        rx: mpsc::UnboundedReceiver<SessionCmd>,
    ) -> SessionActor {
        let (io_tx, io_rx) = mpsc::channel(256);
        let (output, _) = broadcast::channel(1024);
        let (cols, rows) = shared.config().size;
        let monitor = Monitor::new(rows, cols, &policy.limits().crash_patterns);
        let agent = shared.agent();
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
            typing: None,
            held: VecDeque::new(),
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
            self.check_typing();
            let deadline = self.policy.next_deadline().map(|t| self.shared.instant_at(t));
            let drain = self.proc.as_ref().and_then(|p| p.exit.map(|(_, at)| at));
            let read_screen = self.monitor.dirty().then(|| tokio::time::Instant::now() + READ_EVERY);
            let typing = self.typing.as_ref().map(|_| tokio::time::Instant::now() + ENTER_POLL);
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
                _ = sleep_until(typing) => self.check_typing(),
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
                }
                let (scrollback, _) = self.scrollback.as_slices();
                let mut all = scrollback.to_vec();
                all.extend_from_slice(self.scrollback.as_slices().1);
                let _ = reply.send(Attachment {
                    scrollback: all,
                    output: self.output.subscribe(),
                    cols: self.cols,
                    rows: self.rows,
                });
            }
            SessionCmd::Detach { terminal } => {
                if terminal {
                    self.terminals = self.terminals.saturating_sub(1);
                }
            }
            SessionCmd::Resize { cols, rows } => {
                self.cols = cols.max(1);
                self.rows = rows.max(1);
                self.monitor.resize(self.rows, self.cols);
                if let Some(p) = &self.proc {
                    let size = PtySize { rows: self.rows, cols: self.cols, pixel_width: 0, pixel_height: 0 };
                    if let Err(e) = p.master.resize(size) {
                        tracing::debug!(error = %e, "resize failed");
                    }
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
                let now = std::time::Instant::now();
                let signals = self.monitor.feed(&bytes, now);
                let replies = self.monitor.take_replies();
                if !replies.is_empty() && self.terminals == 0 {
                    // No terminal is attached to answer the agent's queries: answer them
                    // (at once: a query is not typing).
                    self.send(replies);
                }
                self.check_typing();
                // Output only moves the idle timer: a tenth of a second is precise enough.
                if self.output_noted.is_none_or(|t| now.duration_since(t) >= OUTPUT_NOTE_EVERY) {
                    self.output_noted = Some(now);
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
        self.typing = None;
        self.held.clear();
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
        let (pid, tx) = (p.pid, self.io_tx.clone());
        tokio::task::spawn_blocking(move || {
            let (rss, cpu_ticks) = procs::tree_usage(pid);
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
                    Err(error) => Input::SpawnFailed { generation, error },
                })
            }
            Effect::Write(bytes) => {
                self.write(Held::Bytes(bytes));
                None
            }
            Effect::TypeLine(line) => {
                self.write(Held::Line(line));
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
                    p.guard.signal(sig);
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
                    let (pid, generation, tx) = (p.pid, p.generation, self.io_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let (rss, cpu_ticks) = procs::tree_usage(pid);
                        let _ = tx.blocking_send(Io::Usage { generation, rss, cpu_ticks });
                    });
                }
                None
            }
            Effect::CheckHealth => {
                let p = self.proc.as_ref()?;
                if p.guard.reaped() || p.exit.is_some() {
                    return None; // the exit is on its way, with the real code
                }
                Some(Input::Health { generation: p.generation, alive: procs::alive(p.pid) })
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

    /// Input for the agent, in order: behind a typed line still waiting for its Enter.
    fn write(&mut self, msg: Held) {
        if self.typing.is_some() {
            self.held.push_back(msg);
            return;
        }
        match msg {
            Held::Bytes(b) => self.send(b),
            Held::Line(line) => {
                let text = String::from_utf8_lossy(&line);
                let needle: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                let needle = needle.chars().rev().take(16).collect::<Vec<_>>().into_iter().rev().collect();
                self.send(line);
                self.typing = Some(Typing { needle, since: tokio::time::Instant::now() });
                self.check_typing();
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

    /// Sends a waiting Enter once the TUI shows the line (or waited long enough), then
    /// what was held behind it.
    fn check_typing(&mut self) {
        let Some(t) = &self.typing else { return };
        let waited = t.since.elapsed();
        if waited < ENTER_PAUSE || (waited < ENTER_WAIT && !input_shows(&self.monitor.rows(), &t.needle)) {
            return;
        }
        self.typing = None;
        self.send(b"\r".to_vec());
        while self.typing.is_none()
            && let Some(msg) = self.held.pop_front()
        {
            self.write(msg);
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

    fn spawn(&mut self, generation: u64, id: &SessionId, launch: &Launch) -> Result<u32, String> {
        let program = self.agent.program.clone();
        let size = PtySize { rows: self.rows, cols: self.cols, pixel_width: 0, pixel_height: 0 };
        let pair = native_pty_system().openpty(size).map_err(|e| format!("cannot open a pseudo-terminal: {e}"))?;
        let mut cmd = CommandBuilder::new(&program);
        cmd.args(&self.agent.args);
        let mut argv: Vec<String> = vec![program.to_string_lossy().into_owned()];
        argv.extend(self.agent.args.iter().cloned());
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
            cmd.args(&extra);
            argv.extend(extra.iter().map(|a| a.to_string()));
        }
        cmd.cwd(&self.cwd);
        if std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb") {
            cmd.env("TERM", "xterm-256color");
        }
        for (k, v) in &self.agent.env {
            cmd.env(k, v);
        }
        if let Some(root) = &self.shared.config().config_root_env {
            cmd.env("CLAUDE_CONFIG_DIR", root);
        }
        // Inherited by everything the agent starts: what a later scan requires before it
        // kills a leftover (P11).
        cmd.env(fleet::OWNER_ENV, own_mark());
        // (Everything that can fail comes before the spawn: a started agent always gets
        // its waiter.)
        let master = pair.master;
        let reader = master.try_clone_reader().map_err(|e| format!("cannot read the pseudo-terminal: {e}"))?;
        let writer = master.take_writer().map_err(|e| format!("cannot write to the pseudo-terminal: {e}"))?;
        let pid = {
            let mut waited = waited_agents();
            let child =
                pair.slave.spawn_command(cmd).map_err(|e| format!("cannot start {}: {e}", program.display()))?;
            // The waiter thread reaps it; the handle is not needed (dropping it does nothing).
            let Some(pid) = child.process_id() else {
                return Err("the agent started without a process id".into());
            };
            waited.insert(pid);
            pid
        };
        drop(pair.slave);
        let guard = Arc::new(ChildGuard { pid, reaped: Mutex::new(false) });
        let started_at = self.shared.clock().now();

        let tx = self.io_tx.clone();
        spawn_thread(format!("pty-read-{pid}"), move || read_loop(reader, generation, tx));
        let (wtx, wrx) = std::sync::mpsc::channel();
        spawn_thread(format!("pty-write-{pid}"), move || write_loop(writer, wrx));
        let (g, tx) = (guard.clone(), self.io_tx.clone());
        spawn_thread(format!("pty-wait-{pid}"), move || {
            let code = wait_for_exit(&g);
            let _ = tx.blocking_send(Io::Exited { generation, code });
        });

        let record = ProcessRecord {
            session_id: id.clone(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            pid,
            start_ticks: procs::start_ticks(pid).unwrap_or(0),
            // What was passed, not /proc/<pid>/cmdline: right after the spawn the kernel may
            // still show the parent's while exec finishes. portable-pty keeps argv[0] as given.
            cmdline: argv,
            boot_id: procs::boot_id(),
            started_at,
        };
        self.shared.process_started(record);
        self.monitor = Monitor::new(self.rows, self.cols, &self.policy.limits().crash_patterns);
        self.typing = None;
        self.held.clear();
        tracing::info!(pid, ?launch, "agent started");
        self.proc = Some(Running { generation, pid, guard, master, writer: wtx, started_at, exit: None, eof: false });
        Ok(pid)
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

/// Does the TUI's input row (the last `❯` row and what wraps below it, up to the box's
/// rule) show `needle` (compared without whitespace)? Without such a row, any row counts.
fn input_shows(rows: &[String], needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let Some(start) = rows.iter().rposition(|r| r.trim_start().starts_with('❯')) else {
        return rows.iter().any(|r| squeeze(r).contains(needle));
    };
    let input: String =
        rows[start..].iter().take_while(|r| !r.trim_start().starts_with('─')).map(|r| squeeze(r)).collect();
    input.contains(needle)
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The effect loop of one actor, driven by a test host (no supervisor, no fleet) with a
/// plain shell as the agent in a real PTY: what it publishes and emits, in order.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SupervisorConfig;
    use mimesis_core::clock::{Clock, SystemClock};
    use mimesis_core::supervision::event::EventKind;

    struct TestHost {
        config: SupervisorConfig,
        clock: SystemClock,
        events: Mutex<Vec<SupervisionEvent>>,
        published: Mutex<Vec<Supervision>>,
        started: Mutex<Vec<u32>>,
        ended: Mutex<Vec<u32>>,
    }

    impl Host for TestHost {
        fn config(&self) -> &SupervisorConfig {
            &self.config
        }
        fn clock(&self) -> &dyn Clock {
            &self.clock
        }
        fn agent(&self) -> AgentCommand {
            self.config.agent.clone()
        }
        fn publish(&self, _: &SessionId, sup: &Supervision, _: &SessionPolicy, _: &std::path::Path) {
            self.published.lock().unwrap().push(sup.clone());
        }
        fn emit(&self, ev: SupervisionEvent) {
            self.events.lock().unwrap().push(ev);
        }
        fn usage(&self, _: &SessionId, _: u64, _: u64) {}
        fn process_started(&self, record: ProcessRecord) {
            self.started.lock().unwrap().push(record.pid);
        }
        fn process_ended(&self, pid: u32) {
            self.ended.lock().unwrap().push(pid);
        }
        fn other_process_starts(&self, _: &SessionId) -> Vec<Timestamp> {
            Vec::new()
        }
        fn rename(&self, _: &SessionId, _: &SessionId, _: &std::path::Path) {}
        fn finished(&self, _: &SessionId) {}
    }

    async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_effect_loop_starts_feeds_and_reports_an_exit() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Arc::new(mimesis_fleetdb::ledger::FileLedger::new(dir.path().join("data")));
        let mut config = SupervisorConfig::new(dir.path().join("claude"), ledger);
        // A plain program, not Claude Code: monitored only, so its exit is reported, not
        // recovered. It echoes one line, then exits with 3.
        config.agent = AgentCommand::new("/bin/sh");
        config.agent.args =
            vec!["-c".into(), "printf 'ready\\n'; read line; printf 'got %s\\n' \"$line\"; exit 3".into()];
        let host = Arc::new(TestHost {
            config,
            clock: SystemClock,
            events: Mutex::new(Vec::new()),
            published: Mutex::new(Vec::new()),
            started: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
        });
        let id = SessionId::parse("actor-test").unwrap();
        let (policy, first) = SessionPolicy::new(
            id.clone(),
            Default::default(),
            host.config.agent.kind,
            false,
            host.clock.both(),
            Box::new(|| SessionId::parse("fresh").unwrap()),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = SessionActor::new(policy, first, host.clone(), dir.path().to_owned(), rx);
        let task = tokio::spawn(actor.run());

        wait_for("the process to start", || !host.started.lock().unwrap().is_empty()).await;
        let (attach_tx, attach_rx) = oneshot::channel();
        tx.send(SessionCmd::Attach { terminal: true, reply: attach_tx }).unwrap();
        let attachment = attach_rx.await.unwrap();
        let (reply, delivered) = oneshot::channel();
        tx.send(SessionCmd::Input(b"hello\r".to_vec(), reply)).unwrap();
        let _ = delivered.await;
        let pid = host.started.lock().unwrap()[0];
        wait_for("the process to end", || host.ended.lock().unwrap().contains(&pid)).await;
        wait_for("the exit to be reported", || {
            host.events.lock().unwrap().iter().any(|e| matches!(e.kind, EventKind::Error { exit_code: 3, .. }))
        })
        .await;

        let kinds: Vec<&'static str> = host.events.lock().unwrap().iter().map(|e| e.type_name()).collect();
        assert_eq!(kinds.first(), Some(&"session_started"), "{kinds:?}");
        let published = host.published.lock().unwrap().clone();
        assert!(published.iter().any(|s| s.pid == Some(pid)), "the running process was published");
        assert!(published.last().is_some_and(|s| s.pid.is_none()), "and then that it ended");
        let mut seen = attachment.scrollback.clone();
        let mut rx = attachment.output;
        while let Ok(Ok(chunk)) = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
            seen.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&seen);
        assert!(text.contains("got hello"), "the input reached the agent through the PTY: {text:?}");
        drop(tx);
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
}
