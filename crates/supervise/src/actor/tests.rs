//! The effect loop of one actor, driven by a test host (no supervisor, no fleet): with a
//! fake agent on an injected clock for the policy's timers and escalations, and with a
//! plain shell in a real PTY for the operating system's side.

use super::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use crate::host::SupervisorConfig;
use crate::process::{OsTerminals, StartError, TerminalError, Terminals};
use mimesis_core::clock::{Clock, ManualClock, SystemClock};
use mimesis_core::status::RegistryState;
use mimesis_core::supervision::event::EventKind;
use mimesis_core::supervision::keys::ENTER_PAUSE;
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
    fn start(&self, spec: StartSpec) -> Result<Started, StartError> {
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
    fn resize(&self, cols: u16, rows: u16) -> Result<(), TerminalError> {
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
    wait_for("/exit typed", || agent.typed() == "/exit").await;
    screen_shows(&tx, "/exit").await;
    // Its Enter waits on the same clock, until the input row shows the line.
    advance(&clock, &tx, ENTER_PAUSE).await;
    wait_for("the Enter of /exit, once the input row shows it", || agent.typed() == "/exit\r").await;
    assert_eq!(agent.signals(), [], "no signal while /exit may still work");

    let kill_after = Limits::default().kill_after;
    advance(&clock, &tx, kill_after - ENTER_PAUSE - Duration::from_millis(1)).await;
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
    // Quiet since it started: `/exit` goes at once, and its Enter once the clock moves.
    barrier(&tx).await;
    wait_for("/exit typed", || agent.typed() == "/exit").await;
    screen_shows(&tx, "/exit").await;
    advance(&clock, &tx, ENTER_PAUSE).await;
    wait_for("a new process", || host.fake().count() == 2).await;
    assert_eq!(agent.typed(), "/exit\r");
    assert_eq!(agent.signals(), [], "it left on /exit: no signal was needed");
    assert_eq!(host.fake().agent(1).unwrap().spec.args, ["--resume", "idle"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_resumed_under_the_same_id_after_its_delay() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual_clock();
    let host = TestHost::new(dir.path(), AgentCommand::new("claude"), clock.clone(), Some(FakeTerminals::default()));
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
    let host = TestHost::new(dir.path(), AgentCommand::new("claude"), manual_clock(), Some(FakeTerminals::default()));
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

#[test]
fn last_bytes_takes_the_end_of_a_ring_across_its_wrap() {
    // A ring whose contents wrap around its buffer: two slices.
    let mut ring: VecDeque<u8> = VecDeque::with_capacity(8);
    ring.extend(b"abcdefgh");
    ring.drain(..5);
    ring.extend(b"ijklm");
    assert!(!ring.as_slices().1.is_empty(), "the ring wraps: {:?}", ring.as_slices());
    let all: Vec<u8> = ring.iter().copied().collect();
    assert_eq!(all, b"fghijklm");
    for keep in 0..=all.len() + 2 {
        assert_eq!(last_bytes(&ring, keep), all[all.len().saturating_sub(keep)..], "keep {keep}");
    }
    assert_eq!(last_bytes(&VecDeque::new(), 5), b"");
}
