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

use mimesis_core::clock::Timestamp;
use mimesis_core::dialog::{Answer, Dialog};
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
use crate::process::{AgentProcess, StartSpec, Started};

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
    Resize {
        cols: u16,
        rows: u16,
    },
    Control(Input),
    Screen(oneshot::Sender<Vec<String>>),
    /// Choose an option of the dialog on screen; the reply names the option chosen.
    Answer(Answer, oneshot::Sender<Result<String, String>>),
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

/// An answer to a dialog under way: it waits for the dialog to settle (2.1.330 ignores keys
/// for a moment after a dialog appears), types its keys one at a time, then checks that
/// the dialog is gone — or says why not.
struct Answering {
    answer: Answer,
    reply: oneshot::Sender<Result<String, String>>,
    stage: AnswerStage,
    /// When it gives up.
    deadline: tokio::time::Instant,
}

enum AnswerStage {
    /// The dialog last read and since when it has looked the same.
    Settling(Option<(Dialog, tokio::time::Instant)>),
    Typing {
        dialog: Dialog,
        label: String,
        keys: VecDeque<Vec<u8>>,
        next: tokio::time::Instant,
    },
    Checking {
        dialog: Dialog,
        label: String,
    },
}

/// A dialog is answered once it has been on screen, unchanged or with no output, this long.
const DIALOG_SETTLE: Duration = Duration::from_millis(800);
/// Between the keys of an answer.
const KEY_PAUSE: Duration = Duration::from_millis(60);
/// An answer not done in this long has failed.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

const ENTER_PAUSE: Duration = Duration::from_millis(50);
const ENTER_WAIT: Duration = Duration::from_secs(2);
/// How often the screen is looked at while an Enter waits.
const ENTER_POLL: Duration = Duration::from_millis(25);

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
    /// A typed line waiting for its Enter, and what was written after it.
    typing: Option<Typing>,
    held: VecDeque<Held>,
    finished: bool,
    answering: Option<Answering>,
    /// When the current process last printed something.
    output_at: tokio::time::Instant,
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
            answering: None,
            output_at: tokio::time::Instant::now(),
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
            let typing =
                (self.typing.is_some() || self.answering.is_some()).then(|| tokio::time::Instant::now() + ENTER_POLL);
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
                _ = sleep_until(typing) => {
                    self.check_typing();
                    self.check_answer();
                }
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
                    let _ = reply.send(Err("the session has no running agent to answer".into()));
                } else if self.answering.is_some() {
                    let _ = reply.send(Err("another answer to this session is under way".into()));
                } else {
                    let deadline = tokio::time::Instant::now() + ANSWER_WAIT;
                    self.answering = Some(Answering { answer, reply, stage: AnswerStage::Settling(None), deadline });
                    self.check_answer();
                }
            }
        }
    }

    /// Moves an answer on: settled → keys, one at a time → the dialog gone.
    fn check_answer(&mut self) {
        let Some(mut a) = self.answering.take() else { return };
        let now = tokio::time::Instant::now();
        let shown = Dialog::read(&self.monitor.rows());
        let quiet = now.duration_since(self.output_at) >= DIALOG_SETTLE;
        let outcome = match &mut a.stage {
            AnswerStage::Settling(seen) => match (shown, seen.take()) {
                (None, _) if quiet => Some(Err("no dialog is on the session's screen".to_owned())),
                (None, _) => None,
                (Some(d), Some((before, since))) if d.same_as(&before) && (quiet || now >= since + DIALOG_SETTLE) => {
                    match d.keys(&a.answer) {
                        Err(e) => Some(Err(e)),
                        Ok(keys) => {
                            let label = d.chosen_label(&a.answer).unwrap_or_default();
                            a.stage = AnswerStage::Typing { dialog: d, label, keys: keys.into(), next: now };
                            None
                        }
                    }
                }
                (Some(d), Some((before, since))) if d.same_as(&before) => {
                    *seen = Some((before, since));
                    None
                }
                (Some(d), _) => {
                    *seen = Some((d, now));
                    None
                }
            },
            AnswerStage::Typing { dialog, label, keys, next } => {
                if now >= *next
                    && let Some(k) = keys.pop_front()
                {
                    self.send(k);
                    *next = now + KEY_PAUSE;
                }
                if keys.is_empty() {
                    let (dialog, label) = (dialog.clone(), std::mem::take(label));
                    a.stage = AnswerStage::Checking { dialog, label };
                }
                None
            }
            AnswerStage::Checking { dialog, label } => {
                (!shown.is_some_and(|d| d.same_as(dialog))).then(|| Ok(label.clone()))
            }
        };
        match outcome {
            Some(result) => {
                tracing::info!(?result, "answered the dialog on screen");
                let _ = a.reply.send(result);
            }
            None if now >= a.deadline => {
                let why = match a.stage {
                    AnswerStage::Settling(_) => "the dialog never settled on screen",
                    _ => "the dialog is still on screen: the agent did not take the answer",
                };
                let _ = a.reply.send(Err(why.to_owned()));
            }
            None => self.answering = Some(a),
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
                self.output_at = tokio::time::Instant::now();
                let now = std::time::Instant::now();
                let signals = self.monitor.feed(&bytes, now);
                let replies = self.monitor.take_replies();
                if !replies.is_empty() && self.terminals == 0 {
                    // No terminal is attached to answer the agent's queries: answer them
                    // (at once: a query is not typing).
                    self.send(replies);
                }
                self.check_typing();
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
        if let Some(a) = self.answering.take() {
            let _ = a.reply.send(Err("the agent exited before the answer was taken".into()));
        }
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
        self.typing = None;
        self.held.clear();
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

/// The effect loop of one actor, driven by a test host (no supervisor, no fleet): with a
/// fake agent on an injected clock for the policy's timers and escalations, and with a
/// plain shell in a real PTY for the operating system's side.
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Condvar, Mutex};

    use crate::host::SupervisorConfig;
    use crate::process::{OsTerminals, Terminals};
    use mimesis_core::clock::{Clock, ManualClock, SystemClock};
    use mimesis_core::status::RegistryState;
    use mimesis_core::supervision::event::EventKind;
    use mimesis_core::supervision::limits::Limits;
    use mimesis_core::supervision::policy::{AgentReport, EXIT_SETTLE, READY_FALLBACK};

    struct TestHost {
        config: SupervisorConfig,
        clock: Arc<dyn Clock>,
        fake: Option<FakeTerminals>,
        events: Mutex<Vec<SupervisionEvent>>,
        published: Mutex<Vec<Supervision>>,
        started: Mutex<Vec<u32>>,
        ended: Mutex<Vec<u32>>,
    }

    impl TestHost {
        fn new(
            dir: &std::path::Path,
            agent: AgentCommand,
            clock: Arc<dyn Clock>,
            fake: Option<FakeTerminals>,
        ) -> Arc<TestHost> {
            let ledger = Arc::new(crate::test_ledger::MemoryLedger::default());
            let mut config = SupervisorConfig::new(dir.join("claude"), ledger);
            config.agent = agent;
            config.clock = clock.clone();
            Arc::new(TestHost {
                config,
                clock,
                fake,
                events: Mutex::new(Vec::new()),
                published: Mutex::new(Vec::new()),
                started: Mutex::new(Vec::new()),
                ended: Mutex::new(Vec::new()),
            })
        }

        fn event_names(&self) -> Vec<&'static str> {
            self.events.lock().unwrap().iter().map(|e| e.type_name()).collect()
        }

        fn fake(&self) -> &FakeTerminals {
            self.fake.as_ref().expect("a fake agent")
        }
    }

    impl Host for TestHost {
        fn config(&self) -> &SupervisorConfig {
            &self.config
        }
        fn clock(&self) -> &dyn Clock {
            &*self.clock
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
        fn terminals(&self) -> &dyn Terminals {
            match &self.fake {
                Some(fake) => fake,
                None => &OsTerminals,
            }
        }
    }

    /// Pretend agents, one per start: they print what the test says, echo what is typed
    /// (as a TUI's input row does, so a typed line gets its Enter), and are signalled and
    /// measured without a process.
    #[derive(Default)]
    struct FakeTerminals {
        agents: Mutex<Vec<Arc<FakeAgent>>>,
        /// `/exit` and Enter end the agent with 0.
        obeys_exit: bool,
        /// SIGTERM does nothing (a hung agent); SIGKILL always ends it.
        ignores_term: bool,
        /// What its process tree measures.
        rss: u64,
    }

    impl FakeTerminals {
        fn agent(&self, n: usize) -> Option<Arc<FakeAgent>> {
            self.agents.lock().unwrap().get(n).cloned()
        }
        fn count(&self) -> usize {
            self.agents.lock().unwrap().len()
        }
    }

    impl Terminals for FakeTerminals {
        fn start(&self, spec: StartSpec) -> Result<Started, String> {
            let mut agents = self.agents.lock().unwrap();
            let (screen, output) = std::sync::mpsc::channel();
            let agent = Arc::new(FakeAgent {
                pid: 4_000_000 + agents.len() as u32,
                spec,
                screen: Mutex::new(Some(screen)),
                typed: Mutex::new(Vec::new()),
                exit: Mutex::new(None),
                exited: Condvar::new(),
                signals: Mutex::new(Vec::new()),
                size: Mutex::new((0, 0)),
                rss: AtomicU64::new(self.rss),
                obeys_exit: self.obeys_exit,
                ignores_term: self.ignores_term,
            });
            agents.push(agent.clone());
            Ok(Started {
                output: Box::new(FakeOutput { rx: output, pending: Vec::new() }),
                input: Box::new(FakeInput(agent.clone())),
                process: agent,
            })
        }
    }

    struct FakeAgent {
        pid: u32,
        spec: StartSpec,
        /// Its end of the terminal's output; dropped when it exits (the reader sees the end).
        screen: Mutex<Option<std::sync::mpsc::Sender<Vec<u8>>>>,
        typed: Mutex<Vec<u8>>,
        exit: Mutex<Option<i32>>,
        exited: Condvar,
        signals: Mutex<Vec<Sig>>,
        size: Mutex<(u16, u16)>,
        rss: AtomicU64,
        obeys_exit: bool,
        ignores_term: bool,
    }

    impl FakeAgent {
        fn print(&self, text: &str) {
            if let Some(screen) = &*self.screen.lock().unwrap() {
                let _ = screen.send(text.as_bytes().to_vec());
            }
        }
        fn exit(&self, code: i32) {
            let mut exit = self.exit.lock().unwrap();
            if exit.is_none() {
                *exit = Some(code);
                self.screen.lock().unwrap().take();
                self.exited.notify_all();
            }
        }
        fn typed(&self) -> String {
            String::from_utf8_lossy(&self.typed.lock().unwrap()).into_owned()
        }
        fn signals(&self) -> Vec<Sig> {
            self.signals.lock().unwrap().clone()
        }
    }

    impl AgentProcess for FakeAgent {
        fn pid(&self) -> u32 {
            self.pid
        }
        fn start_ticks(&self) -> u64 {
            1
        }
        fn signal(&self, sig: Sig) {
            if self.reaped() {
                return; // as the real one: never to a PID that may be someone else's now
            }
            self.signals.lock().unwrap().push(sig);
            match sig {
                Sig::Term if !self.ignores_term => self.exit(128 + 15),
                Sig::Kill => self.exit(128 + 9),
                _ => {}
            }
        }
        fn reaped(&self) -> bool {
            self.exit.lock().unwrap().is_some()
        }
        fn wait(&self) -> i32 {
            let mut exit = self.exit.lock().unwrap();
            loop {
                if let Some(code) = *exit {
                    return code;
                }
                exit = self.exited.wait(exit).unwrap();
            }
        }
        fn alive(&self) -> bool {
            self.exit.lock().unwrap().is_none()
        }
        fn usage(&self) -> (u64, u64) {
            (self.rss.load(Ordering::Relaxed), 0)
        }
        fn resize(&self, cols: u16, rows: u16) -> Result<(), String> {
            *self.size.lock().unwrap() = (cols, rows);
            Ok(())
        }
    }

    struct FakeOutput {
        rx: std::sync::mpsc::Receiver<Vec<u8>>,
        pending: Vec<u8>,
    }

    impl Read for FakeOutput {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pending.is_empty() {
                match self.rx.recv() {
                    Ok(bytes) => self.pending = bytes,
                    Err(_) => return Ok(0), // the agent exited: the terminal closed
                }
            }
            let n = buf.len().min(self.pending.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
    }

    struct FakeInput(Arc<FakeAgent>);

    impl Write for FakeInput {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let agent = &self.0;
            let typed = {
                let mut typed = agent.typed.lock().unwrap();
                typed.extend_from_slice(buf);
                String::from_utf8_lossy(&typed).into_owned()
            };
            agent.print(&String::from_utf8_lossy(buf).replace('\r', "\r\n❯ "));
            if agent.obeys_exit && typed.ends_with("/exit\r") {
                agent.exit(0);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A session actor on `host` for `id`, running, and its command queue.
    fn start(host: &Arc<TestHost>, id: &SessionId, cwd: &std::path::Path) -> mpsc::UnboundedSender<SessionCmd> {
        let (policy, first) = SessionPolicy::new(
            id.clone(),
            Limits::default(),
            host.config.agent.kind,
            false,
            host.clock.both(),
            Box::new(|| SessionId::parse("fresh").unwrap()),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = SessionActor::new(policy, first, host.clone(), cwd.to_owned(), host.config.size, rx);
        tokio::spawn(actor.run());
        tx
    }

    /// Returns once the actor handled everything sent before (it takes one command at a
    /// time, in order): what a command did synchronously is done.
    async fn barrier(tx: &mpsc::UnboundedSender<SessionCmd>) {
        let (reply, screen) = oneshot::channel();
        tx.send(SessionCmd::Screen(reply)).unwrap();
        screen.await.unwrap();
    }

    /// Waits until the actor's screen model shows `text` (so it took the output before).
    async fn screen_shows(tx: &mpsc::UnboundedSender<SessionCmd>, text: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (reply, screen) = oneshot::channel();
            tx.send(SessionCmd::Screen(reply)).unwrap();
            if screen.await.unwrap().iter().any(|row| row.contains(text)) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "the screen never showed {text:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Moves the injected clock on and lets the actor's timers look at it.
    async fn advance(clock: &ManualClock, tx: &mpsc::UnboundedSender<SessionCmd>, by: Duration) {
        clock.advance(by);
        tx.send(SessionCmd::Control(Input::Tick)).unwrap();
        barrier(tx).await;
    }

    /// Moves the injected clock on by half a second at a time until `cond` holds, giving
    /// the agent's threads real time to answer between steps (the budget is real time: the
    /// injected clock alone would run out before a loaded machine moved).
    async fn advance_until(
        clock: &ManualClock,
        tx: &mpsc::UnboundedSender<SessionCmd>,
        what: &str,
        mut cond: impl FnMut() -> bool,
    ) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            advance(clock, tx, Duration::from_millis(500)).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn manual_clock() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(Timestamp::parse("2026-11-25T10:00:00Z").unwrap()))
    }

    /// A conversation to resume for `id` started in `cwd`.
    fn transcript_of(host: &TestHost, cwd: &std::path::Path, id: &SessionId) {
        let transcript = TranscriptLocation::expected(&host.config.config_root, cwd, id).path;
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::write(&transcript, "{}\n").unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hung_agent_restarted_by_the_user_gets_exit_then_term_then_kill_each_on_the_injected_clock() {
        let dir = tempfile::tempdir().unwrap();
        let clock = manual_clock();
        let fake = FakeTerminals { ignores_term: true, ..Default::default() };
        let host = TestHost::new(dir.path(), AgentCommand::new("claude"), clock.clone(), Some(fake));
        let id = SessionId::parse("hung").unwrap();
        transcript_of(&host, dir.path(), &id);
        let tx = start(&host, &id, dir.path());
        let agent = host.fake().agent(0).expect("the first launch started the agent at once");
        assert_eq!(agent.spec.args, ["--session-id", "hung"], "a new session under its own id");
        assert!(agent.spec.env.iter().any(|(k, _)| k == fleet::OWNER_ENV), "the agent carries the owner mark");
        advance(&clock, &tx, READY_FALLBACK).await;
        // Its first output, at a known time: the quiet spell before `/exit` counts from it.
        agent.print("❯ ");
        screen_shows(&tx, "❯").await;
        // Its live registry entry says it sits at its prompt: a restart may be graceful.
        let idle = AgentReport { registry: Some((agent.pid, RegistryState::Idle)), ..AgentReport::default() };
        tx.send(SessionCmd::Control(Input::Agent(idle))).unwrap();

        tx.send(SessionCmd::Control(Input::Restart)).unwrap();
        barrier(&tx).await;
        // The output just moved: `/exit` waits for it to settle, on the injected clock.
        advance(&clock, &tx, EXIT_SETTLE + Duration::from_millis(1)).await;
        wait_for("/exit and its Enter, once the input row shows it", || agent.typed() == "/exit\r").await;
        assert_eq!(agent.signals(), [], "no signal while /exit may still work");

        let kill_after = Limits::default().kill_after;
        advance(&clock, &tx, kill_after - Duration::from_millis(1)).await;
        assert_eq!(agent.signals(), [], "not a moment before kill_after");
        advance(&clock, &tx, Duration::from_millis(1)).await;
        assert_eq!(agent.signals(), [Sig::Term], "then SIGTERM to the process group");
        advance(&clock, &tx, kill_after).await;
        assert_eq!(agent.signals(), [Sig::Term, Sig::Kill], "and SIGKILL once TERM was ignored for kill_after");

        wait_for("the exit to be handled", || host.ended.lock().unwrap().contains(&agent.pid)).await;
        wait_for("a new process", || host.fake().count() == 2).await;
        let second = host.fake().agent(1).unwrap();
        assert_eq!(second.spec.args, ["--resume", "hung"], "the restart resumes the conversation");
        let names = host.event_names();
        assert_eq!(names.first(), Some(&"session_started"), "{names:?}");
        assert!(!names.contains(&"error"), "a restart the user asked for is not a crash: {names:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_idle_agent_restarted_by_the_user_leaves_on_exit_without_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        let clock = manual_clock();
        let fake = FakeTerminals { obeys_exit: true, ..Default::default() };
        let host = TestHost::new(dir.path(), AgentCommand::new("claude"), clock.clone(), Some(fake));
        let id = SessionId::parse("idle").unwrap();
        transcript_of(&host, dir.path(), &id);
        let tx = start(&host, &id, dir.path());
        let agent = host.fake().agent(0).unwrap();
        advance(&clock, &tx, READY_FALLBACK).await;
        let idle = AgentReport { registry: Some((agent.pid, RegistryState::Idle)), ..AgentReport::default() };
        tx.send(SessionCmd::Control(Input::Agent(idle))).unwrap();
        tx.send(SessionCmd::Control(Input::Restart)).unwrap();
        advance(&clock, &tx, EXIT_SETTLE + Duration::from_millis(1)).await;
        wait_for("a new process", || host.fake().count() == 2).await;
        assert_eq!(agent.typed(), "/exit\r");
        assert_eq!(agent.signals(), [], "it left on /exit: no signal was needed");
        assert_eq!(host.fake().agent(1).unwrap().spec.args, ["--resume", "idle"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_crash_is_resumed_under_the_same_id_after_its_delay() {
        let dir = tempfile::tempdir().unwrap();
        let clock = manual_clock();
        let host =
            TestHost::new(dir.path(), AgentCommand::new("claude"), clock.clone(), Some(FakeTerminals::default()));
        let id = SessionId::parse("crashy").unwrap();
        transcript_of(&host, dir.path(), &id);
        let tx = start(&host, &id, dir.path());
        let first = host.fake().agent(0).unwrap();
        first.print("❯ ");
        advance(&clock, &tx, READY_FALLBACK).await;

        first.exit(1);
        wait_for("the crash to be told", || {
            host.events.lock().unwrap().iter().any(|e| matches!(e.kind, EventKind::Error { exit_code: 1, .. }))
        })
        .await;
        advance_until(&clock, &tx, "the recovery", || host.fake().count() == 2).await;
        let second = host.fake().agent(1).unwrap();
        assert_eq!(second.spec.args, ["--resume", "crashy"], "the recovery resumes the conversation");
        second.print("❯ ");
        advance(&clock, &tx, READY_FALLBACK).await;
        wait_for("the recovery to be told", || host.event_names().contains(&"session_recovered")).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_its_memory_limit_the_agent_is_restarted_and_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let clock = manual_clock();
        let limits = Limits::default();
        let fake = FakeTerminals { rss: (limits.max_rss_mb + 1) * 1024 * 1024, ..Default::default() };
        let host = TestHost::new(dir.path(), AgentCommand::new("claude"), clock.clone(), Some(fake));
        let id = SessionId::parse("bloated").unwrap();
        transcript_of(&host, dir.path(), &id);
        let tx = start(&host, &id, dir.path());
        let first = host.fake().agent(0).unwrap();
        first.print("❯ ");
        advance(&clock, &tx, READY_FALLBACK.max(limits.rss_check)).await;
        wait_for("the memory restart to be told", || host.event_names().contains(&"session_restarting")).await;
        advance_until(&clock, &tx, "the restart", || host.fake().count() == 2).await;
        assert_eq!(first.signals(), [Sig::Term], "measured on the injected clock, over the limit, terminated");
        let second = host.fake().agent(1).unwrap();
        assert_eq!(second.spec.args, ["--resume", "bloated"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_resize_reaches_the_agents_terminal_and_the_screen_model() {
        let dir = tempfile::tempdir().unwrap();
        let host =
            TestHost::new(dir.path(), AgentCommand::new("claude"), manual_clock(), Some(FakeTerminals::default()));
        let tx = start(&host, &SessionId::parse("sized").unwrap(), dir.path());
        let agent = host.fake().agent(0).unwrap();
        assert_eq!((agent.spec.cols, agent.spec.rows), host.config.size, "started at the configured size");
        tx.send(SessionCmd::Resize { cols: 100, rows: 0 }).unwrap();
        let (reply, screen) = oneshot::channel();
        tx.send(SessionCmd::Screen(reply)).unwrap();
        assert_eq!(screen.await.unwrap().len(), 1, "no terminal has zero rows");
        assert_eq!(*agent.size.lock().unwrap(), (100, 1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_effect_loop_starts_feeds_and_reports_an_exit_of_a_real_process() {
        let dir = tempfile::tempdir().unwrap();
        // A plain program, not Claude Code: monitored only, so its exit is reported, not
        // recovered. It echoes one line, then exits with 3.
        let mut agent = AgentCommand::new("/bin/sh");
        agent.args = vec!["-c".into(), "printf 'ready\\n'; read line; printf 'got %s\\n' \"$line\"; exit 3".into()];
        let host = TestHost::new(dir.path(), agent, Arc::new(SystemClock), None);
        let tx = start(&host, &SessionId::parse("actor-test").unwrap(), dir.path());

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

        assert_eq!(host.event_names().first(), Some(&"session_started"), "{:?}", host.event_names());
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
    }
}
