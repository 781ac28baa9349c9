//! Sessions on other machines (issue 13), over the user's own OpenSSH client: their
//! `~/.ssh/config`, agent, keys, ProxyJump and ControlMaster all apply. Mimesis runs
//! `ssh -T` in batch mode (it never answers a password or host-key prompt) with the same
//! `mimesis` binary on the far side as `mimesis serve --stdio`, which does the reading
//! there and sends only the roster and its changes (the protocol: `mimesis_core::remote`).
//!
//! - [`connect`]: one connection, its hello checked; [`Connection::recv`] / `send`.
//! - [`serve`]: the far side of it.
//! - [`install_helper`]: copies this build's binary to a host of the same OS and
//!   architecture, into the helper folder of the user's data dir there, checksum verified.
//! - [`HostFeed`]: one host kept connected (back-off on the injectable clock), its roster
//!   held through drops and turned into store events that carry the host.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::attention::{Attention, SupervisionSignal};
use mimesis_core::clock::{Clock, Timestamp};
use mimesis_core::ids::SessionId;
use mimesis_core::remote::{self, Destination, Failure, FromRemote, HostLink, HostState, MAX_LINE, PROTOCOL, ToRemote};
use mimesis_core::session::{StoreEvent, TrackedSession};
use mimesis_core::settings::NotificationSettings;
use mimesis_core::spend::{CostQuery, CostReport};
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::timeline::TimelineItem;
use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use crate::{Mimesis, Options, once};

/// How long a connection may take to say hello (ssh's own connect timeout is shorter).
const HELLO_WAIT: Duration = Duration::from_secs(60);

/// The `ssh` this Mimesis runs: the one on PATH, or `$MIMESIS_SSH`; with `-F
/// $MIMESIS_SSH_CONFIG` when that is set (else the user's `~/.ssh/config`, as ssh reads it).
#[derive(Clone, Debug)]
pub struct Ssh {
    pub program: PathBuf,
    pub config: Option<PathBuf>,
}

impl Ssh {
    pub fn from_env() -> Ssh {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        Ssh { program: var("MIMESIS_SSH").unwrap_or_else(|| "ssh".into()), config: var("MIMESIS_SSH_CONFIG") }
    }

    /// The argv that runs `remote` (one command line for the remote shell, already quoted)
    /// on `dest`; with a terminal when `tty` (an interactive `mimesis run` there).
    pub fn argv(&self, dest: &Destination, remote: &str, tty: bool) -> Vec<String> {
        let mut v = vec![self.program.to_string_lossy().into_owned()];
        if let Some(c) = &self.config {
            v.extend(["-F".to_owned(), c.to_string_lossy().into_owned()]);
        }
        v.push(if tty { "-t" } else { "-T" }.to_owned());
        for o in ["BatchMode=yes", "ConnectTimeout=15", "ServerAliveInterval=15", "ServerAliveCountMax=3"] {
            v.extend(["-o".to_owned(), o.to_owned()]);
        }
        v.extend(["--".to_owned(), dest.as_str().to_owned(), remote.to_owned()]);
        v
    }

    fn command(&self, dest: &Destination, remote: &str) -> Command {
        let argv = self.argv(dest, remote, false);
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        // Its own process group: a Ctrl-C in the user's terminal reaches Mimesis, which
        // then closes the connection, rather than ssh dying under it.
        c.process_group(0);
        mimesis_os::child_env::restore(c.as_std_mut());
        c
    }
}

/// What the remote said in its hello.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    pub protocol: u32,
    pub version: String,
    pub os: String,
    pub arch: String,
}

/// One open connection to `mimesis serve --stdio` on a host.
pub struct Connection {
    child: Child,
    stdin: Option<ChildStdin>,
    reader: BufReader<ChildStdout>,
    stderr: Option<tokio::task::JoinHandle<String>>,
    buf: Vec<u8>,
    pub hello: Hello,
}

/// Connects to `dest` and checks that the remote speaks this protocol.
pub async fn connect(ssh: &Ssh, dest: &Destination) -> Result<Connection, Failure> {
    connect_with(ssh, dest, &ToRemote::Hello { protocol: PROTOCOL }).await
}

/// [`connect`], with `first` sent in place of the hello (a one-shot request).
async fn connect_with(ssh: &Ssh, dest: &Destination, first: &ToRemote) -> Result<Connection, Failure> {
    let mut child = ssh
        .command(dest, &remote::remote_mimesis(&["serve", "--stdio"]))
        .spawn()
        .map_err(|e| Failure::Unreachable(format!("cannot run {}: {e}", ssh.program.display())))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let stderr = tokio::spawn(collect_stderr(stderr));
    let mut conn = Connection {
        child,
        stdin,
        reader: BufReader::new(stdout),
        stderr: Some(stderr),
        buf: Vec::new(),
        hello: Hello { protocol: 0, version: String::new(), os: String::new(), arch: String::new() },
    };
    // Sent at once: the remote checks it while ssh still negotiates nothing more.
    let _ = conn.send(first).await;
    let first = tokio::time::timeout(HELLO_WAIT, conn.recv())
        .await
        .map_err(|_| Failure::Unreachable(format!("the host did not answer within {} s", HELLO_WAIT.as_secs())))??;
    match first {
        FromRemote::Hello { protocol, version, os, arch } if protocol == PROTOCOL => {
            conn.hello = Hello { protocol, version, os, arch };
            Ok(conn)
        }
        FromRemote::Hello { protocol, version, .. } => Err(Failure::HelperMismatch(format!(
            "the host has Mimesis {version}, which speaks protocol {protocol}; this Mimesis speaks {PROTOCOL}"
        ))),
        _ => Err(Failure::Protocol("the host did not start with a hello".into())),
    }
}

/// Keeps the last 8 KiB of what ssh writes on stderr (its errors, the remote's).
async fn collect_stderr(mut r: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = r.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 8192 {
            kept.drain(..kept.len() - 8192);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

impl Connection {
    /// The next message. A connection that ends becomes the failure ssh's exit and stderr
    /// describe.
    pub async fn recv(&mut self) -> Result<FromRemote, Failure> {
        match read_line(&mut self.reader, &mut self.buf, MAX_LINE).await {
            Ok(true) => {
                FromRemote::parse(&self.buf).map_err(|e| Failure::Protocol(format!("the host sent a bad message: {e}")))
            }
            Ok(false) => Err(self.ended().await),
            Err(e) => {
                let _ = self.child.start_kill();
                Err(Failure::Protocol(format!("cannot read from the host: {e}")))
            }
        }
    }

    pub async fn send(&mut self, msg: &ToRemote) -> io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
        let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
        line.push(b'\n');
        stdin.write_all(&line).await?;
        stdin.flush().await
    }

    async fn ended(&mut self) -> Failure {
        self.stdin = None;
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let code = match status {
            Ok(Ok(s)) => s.code(),
            _ => {
                let _ = self.child.start_kill();
                None
            }
        };
        let stderr = match self.stderr.take() {
            Some(h) => {
                tokio::time::timeout(Duration::from_secs(2), h).await.ok().and_then(Result::ok).unwrap_or_default()
            }
            None => String::new(),
        };
        if stderr.trim().is_empty() && code == Some(0) {
            return Failure::Unreachable("the connection was closed".into());
        }
        Failure::classify(code, &stderr)
    }

    /// Closes stdin (the remote stops) and waits a moment for ssh to exit; kills it after.
    pub async fn close(mut self) {
        self.stdin = None;
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// Reads one line (without its newline) into `buf`; false at the end of input. A line
/// longer than `max` is an error, never a growing buffer.
async fn read_line(r: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    buf.clear();
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match memchr(available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max + 1 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line longer than {max} bytes")));
        }
        buf.extend_from_slice(&available[..take]);
        r.consume(take);
        if done {
            buf.pop();
            return Ok(true);
        }
    }
}

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Copies this build's `exe` to `dest` as its helper: only when the host runs the same OS
/// and architecture; into `<data dir>/bin/mimesis` there, as the user ssh logs in as;
/// kept only when its SHA-256 matches. Returns where it went.
pub async fn install_helper(ssh: &Ssh, dest: &Destination, exe: &Path) -> Result<String, String> {
    let here = remote::uname_of(std::env::consts::OS, std::env::consts::ARCH);
    let out = ssh.command(dest, &remote::remote_uname()).stdin(Stdio::null()).output().await;
    let out = out.map_err(|e| format!("cannot run {}: {e}", ssh.program.display()))?;
    if !out.status.success() {
        return Err(Failure::classify(out.status.code(), &String::from_utf8_lossy(&out.stderr)).sentence());
    }
    let there = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if there != here {
        return Err(format!(
            "the host runs {}, this machine {here}: install Mimesis there yourself (Mimesis only copies itself to a host of the same kind)",
            mimesis_core::text::clean_text(&there, 80)
        ));
    }
    let bytes = tokio::fs::read(exe).await.map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let sum = sha256_hex(&bytes);
    let mut child = ssh
        .command(dest, &remote::remote_install(&sum))
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", ssh.program.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = tokio::spawn(async move {
        let r = stdin.write_all(&bytes).await;
        drop(stdin);
        r
    });
    let out = child.wait_with_output().await.map_err(|e| format!("the copy failed: {e}"))?;
    let _ = writer.await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success()
        && let Some(path) = stdout.lines().find_map(|l| l.strip_prefix("installed "))
    {
        return Ok(mimesis_core::text::clean_text(path, 300));
    }
    if stderr.contains("mimesis-checksum-mismatch") {
        return Err("the copy arrived damaged (its checksum differs) and was removed; try again".into());
    }
    Err(format!("the copy failed: {}", Failure::classify(out.status.code(), &stderr).sentence()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Marks rows as the host's.
fn owned_by(mut s: TrackedSession, host: &Destination) -> TrackedSession {
    s.host = Some(host.as_str().to_owned());
    s
}

/// Connects, installing the helper first when `install` names this build's binary and
/// the host lacks it (or has one of another protocol).
pub async fn connect_or_install(ssh: &Ssh, dest: &Destination, install: Option<&Path>) -> Result<Connection, Failure> {
    connect_or_install_with(ssh, dest, install, &ToRemote::Hello { protocol: PROTOCOL }).await
}

async fn connect_or_install_with(
    ssh: &Ssh,
    dest: &Destination,
    install: Option<&Path>,
    first: &ToRemote,
) -> Result<Connection, Failure> {
    match connect_with(ssh, dest, first).await {
        Err(f) if f.wants_helper() => match install {
            Some(exe) => {
                // A copy that fails leaves the host without a helper, said with why.
                install_helper(ssh, dest, exe).await.map_err(Failure::HelperMismatch)?;
                connect_with(ssh, dest, first).await
            }
            None => Err(f),
        },
        other => other,
    }
}

/// The report of `dest`'s transcripts, once (`mimesis cost --host`): one request sent in
/// place of the hello, answered there from the files, without indexing.
pub async fn cost(
    ssh: &Ssh,
    dest: &Destination,
    query: &CostQuery,
    install: Option<&Path>,
) -> Result<CostReport, Failure> {
    let first = ToRemote::Cost { req: 1, query: query.clone() };
    let mut conn = connect_or_install_with(ssh, dest, install, &first).await?;
    loop {
        match conn.recv().await? {
            FromRemote::Cost { req: 1, report } => {
                conn.close().await;
                return Ok(*report);
            }
            FromRemote::Error { req: Some(1) | None, message } => {
                conn.close().await;
                return Err(Failure::Protocol(mimesis_core::text::clean_text(&message, 500)));
            }
            _ => {}
        }
    }
}

/// The roster of `dest`, once (`mimesis ls --host`).
pub async fn roster(ssh: &Ssh, dest: &Destination, install: Option<&Path>) -> Result<Vec<TrackedSession>, Failure> {
    let mut conn = connect_or_install(ssh, dest, install).await?;
    loop {
        if let FromRemote::Snapshot { sessions } = conn.recv().await? {
            conn.close().await;
            return Ok(sessions.into_iter().map(|s| owned_by(s, dest)).collect());
        }
    }
}

/// The timeline of one session on `dest`, once (`mimesis show host:id`).
pub async fn timeline(
    ssh: &Ssh,
    dest: &Destination,
    id: &str,
    install: Option<&Path>,
) -> Result<Vec<TimelineItem>, Failure> {
    let mut conn = connect_or_install(ssh, dest, install).await?;
    conn.send(&ToRemote::Show { req: 1, session_id: id.to_owned() })
        .await
        .map_err(|e| Failure::Unreachable(format!("cannot write to the host: {e}")))?;
    loop {
        match conn.recv().await? {
            FromRemote::Timeline { req: 1, items } => {
                conn.close().await;
                return Ok(items);
            }
            FromRemote::Error { req: Some(1), message } => {
                conn.close().await;
                return Err(Failure::Protocol(mimesis_core::text::clean_text(&message, 500)));
            }
            _ => {}
        }
    }
}

// ---- the far side ----------------------------------------------------------------------

/// `mimesis serve --stdio`: says hello, indexes this machine's sessions, sends the roster
/// and then every change, and answers `show` requests; stops when `input` ends (the
/// connection closed), so it never outlives the one who asked.
pub async fn serve(
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    input: impl AsyncBufRead + Unpin + Send + 'static,
    mut output: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    let hello = FromRemote::Hello {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
    };
    write_msg(&mut output, &hello).await?;
    output.flush().await?;
    let (req_tx, mut requests) = mpsc::channel::<Option<ToRemote>>(16);
    tokio::spawn(read_requests(input, req_tx));
    // The peer's hello first: one of another protocol is told so, and nothing is indexed.
    match requests.recv().await.flatten() {
        Some(ToRemote::Hello { protocol }) if protocol == PROTOCOL => {}
        // A one-shot cost report: answered from the files, nothing indexed or watched.
        Some(ToRemote::Cost { req, query }) => {
            // This process ends with the answer: it may read the files mapped.
            crate::cost::say_on_bus_error();
            let how = crate::cost::Reading::Mapped;
            let reply = tokio::task::spawn_blocking(move || crate::cost::reply(&roots, &data_dir, req, query, how))
                .await
                .unwrap_or_else(|e| FromRemote::Error { req: Some(req), message: format!("the report failed: {e}") });
            write_msg(&mut output, &reply).await?;
            return output.flush().await;
        }
        Some(ToRemote::Hello { protocol }) => {
            let message = format!("this Mimesis speaks protocol {PROTOCOL}, not {protocol}");
            write_msg(&mut output, &FromRemote::Error { req: None, message }).await?;
            return output.flush().await;
        }
        _ => return Ok(()),
    }
    let mimesis = Mimesis::start(Options::watching(roots.clone(), data_dir.clone())).await;
    let engine = mimesis.engine().clone();
    let mut events = engine.subscribe();
    let (done_tx, mut done) = mpsc::channel::<FromRemote>(16);
    // The sessions this machine's `mimesis run`s supervise: their supervision on the rows,
    // then their events.
    let (sup_tx, mut sup_events) = mpsc::channel::<Vec<SupervisionEvent>>(16);
    let follower = tokio::spawn(follow_supervisors(roots.clone(), data_dir.clone(), engine.clone(), sup_tx));
    let result: io::Result<()> = async {
        // Requests that arrive while the first index runs are answered after it.
        engine.ready().await;
        let snap = engine.snapshot().await.map_err(io::Error::other)?;
        let mut last_seq = snap.seq;
        write_msg(&mut output, &FromRemote::Snapshot { sessions: snap.sessions }).await?;
        output.flush().await?;
        loop {
            tokio::select! {
                req = requests.recv() => match req.flatten() {
                    Some(ToRemote::Show { req, session_id }) => {
                        let (roots, data_dir, done_tx) = (roots.clone(), data_dir.clone(), done_tx.clone());
                        // A row whose transcript is not written yet (a session just started
                        // there) has an empty timeline, not none.
                        let known = match SessionId::parse(&session_id) {
                            Ok(id) => engine.transcript_path(&id).await.ok(),
                            Err(_) => None,
                        };
                        tokio::task::spawn_blocking(move || {
                            let reply = match show_one(&roots, &data_dir, &session_id, known) {
                                Ok(items) => FromRemote::Timeline { req, items },
                                Err(message) => FromRemote::Error { req: Some(req), message },
                            };
                            let _ = done_tx.blocking_send(reply);
                        });
                    }
                    Some(ToRemote::Cost { req, query }) => {
                        let (roots, data_dir, done_tx) = (roots.clone(), data_dir.clone(), done_tx.clone());
                        tokio::task::spawn_blocking(move || {
                            let reply = crate::cost::reply(&roots, &data_dir, req, query, crate::cost::Reading::Copied);
                            let _ = done_tx.blocking_send(reply);
                        });
                    }
                    Some(ToRemote::Hello { .. }) => {}
                    None => return Ok(()),
                },
                reply = done.recv() => {
                    if let Some(reply) = reply {
                        write_msg(&mut output, &reply).await?;
                        output.flush().await?;
                    }
                }
                evs = sup_events.recv() => {
                    // The row changes these events describe are queued already: out first.
                    write_queued(&mut output, &mut events, &mut last_seq).await?;
                    for event in evs.into_iter().flatten() {
                        write_msg(&mut output, &FromRemote::Supervision { event }).await?;
                    }
                    output.flush().await?;
                }
                ev = events.recv() => {
                    match ev {
                        Ok(env) => {
                            if env.seq > last_seq {
                                last_seq = env.seq;
                                write_msg(&mut output, &FromRemote::Event { event: env.event.clone() }).await?;
                            }
                            // Everything queued goes in one write.
                            write_queued(&mut output, &mut events, &mut last_seq).await?;
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            let snap = engine.snapshot().await.map_err(io::Error::other)?;
                            last_seq = snap.seq;
                            write_msg(&mut output, &FromRemote::Snapshot { sessions: snap.sessions }).await?;
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                    }
                    output.flush().await?;
                }
            }
        }
    }
    .await;
    follower.abort();
    mimesis.shutdown().await;
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The store events queued now, written out (the caller flushes).
async fn write_queued(
    output: &mut (impl AsyncWrite + Unpin),
    events: &mut tokio::sync::broadcast::Receiver<Arc<mimesis_watch::Envelope>>,
    last_seq: &mut u64,
) -> io::Result<()> {
    while let Ok(env) = events.try_recv() {
        if env.seq > *last_seq {
            *last_seq = env.seq;
            write_msg(output, &FromRemote::Event { event: env.event.clone() }).await?;
        }
    }
    Ok(())
}

/// How often the supervisors of this machine are looked at (their snapshots settle within
/// a quarter second of a change).
const SUPERVISORS_POLL: Duration = Duration::from_millis(300);

/// Follows the other supervisors of `data_dir` ([`crate::supervisors`]): sets their
/// sessions' supervision on the engine's rows, and sends their events once those row
/// changes are out (a round trip through the engine's queue).
async fn follow_supervisors(
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    engine: mimesis_watch::Engine,
    out: mpsc::Sender<Vec<SupervisionEvent>>,
) {
    let mut followed = crate::supervisors::Supervisors::new(roots, &data_dir);
    loop {
        let Ok((back, found)) = tokio::task::spawn_blocking(move || {
            let found = followed.poll();
            (followed, found)
        })
        .await
        else {
            return;
        };
        followed = back;
        let changed = !found.changed.is_empty() || !found.gone.is_empty();
        for (location, supervision) in found.changed {
            engine.set_supervision(location, Some(supervision));
        }
        for location in found.gone {
            engine.set_supervision(location, None);
        }
        if changed || !found.events.is_empty() {
            let _ = engine.attention().await;
        }
        if !found.events.is_empty() && out.send(found.events).await.is_err() {
            return;
        }
        tokio::time::sleep(SUPERVISORS_POLL).await;
    }
}

/// Lines from the peer, parsed; `None` once at the end (or on a line that is not the
/// protocol: the peer is not a Mimesis, and the conversation ends).
async fn read_requests(input: impl AsyncBufRead + Unpin, tx: mpsc::Sender<Option<ToRemote>>) {
    let mut input = input;
    let mut buf = Vec::new();
    while let Ok(true) = read_line(&mut input, &mut buf, 1024 * 1024).await {
        match ToRemote::parse(&buf) {
            Ok(msg) => {
                if tx.send(Some(msg)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!("serve: a line that is not the protocol: {e}");
                break;
            }
        }
    }
    let _ = tx.send(None).await;
}

/// `known`: where the engine's row of that session says its transcript is (it may not be
/// written yet).
fn show_one(
    roots: &[PathBuf],
    data_dir: &Path,
    query: &str,
    known: Option<PathBuf>,
) -> Result<Vec<TimelineItem>, String> {
    let id = SessionId::parse(query).map_err(|_| "that is not a session id".to_owned())?;
    let found = roots.iter().flat_map(|r| once::discover(r)).find(|l| l.session_id == id).map(|l| l.path);
    let path = match (found, known) {
        (Some(p), _) => p,
        (None, Some(p)) if !p.exists() => return Ok(Vec::new()),
        _ => return Err(format!("no session with id {id} on this host")),
    };
    let mut items = once::chain_prefix(roots, data_dir, &path, mimesis_core::clock::SystemClock.now())
        .map_err(|e| format!("cannot read an earlier segment of the chain: {e}"))?;
    items.extend(once::read_timeline(&path, Some(data_dir)).map_err(|e| format!("cannot read the transcript: {e}"))?);
    Ok(items)
}

async fn write_msg(out: &mut (impl AsyncWrite + Unpin), msg: &FromRemote) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await
}

// ---- one host, kept connected -------------------------------------------------------------

/// What a [`HostFeed`] reports.
#[derive(Clone, Debug)]
pub enum FeedMsg {
    /// The host's state changed (docs/ipc.md `HostInfo`).
    State(HostInfo),
    /// A change to the host's roster: sessions carry `host`; for `updated` and `removed`
    /// the host is the feed's.
    Event(StoreEvent),
    /// A supervision event of one of the host's sessions (after the row change it
    /// describes).
    Supervision(SupervisionEvent),
}

/// A host as the user sees it (`mimesis hosts --json`, Settings › Machines).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HostInfo {
    pub host: String,
    pub state: HostState,
    /// Why it is not live, in a sentence.
    pub message: Option<String>,
    pub last_seen: Option<Timestamp>,
    pub sessions: usize,
    /// Mimesis's version on the host, once it said hello.
    pub version: Option<String>,
    /// Seconds until the next attempt, when one is planned.
    pub retry_in_secs: Option<u64>,
}

/// What the owner of a feed can ask of it.
pub enum FeedCmd {
    /// Connect now (the user asked, or installed the helper).
    Retry,
    /// Install this build's binary as the helper, then connect.
    Install(PathBuf),
    /// The timeline of one of the host's sessions.
    Show(String, oneshot::Sender<Result<Vec<TimelineItem>, String>>),
}

/// One host kept connected: reconnects after a drop with back-off (1 s doubling to a
/// minute, on the injectable clock), holds its last roster while away (stale), and waits
/// for the user when the host has no helper. Dropping the feed closes the connection.
pub struct HostFeed {
    pub dest: Destination,
    cmds: mpsc::Sender<FeedCmd>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HostFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HostFeed {
    pub fn start(
        ssh: Ssh,
        dest: Destination,
        clock: Arc<dyn Clock>,
        install: Option<PathBuf>,
    ) -> (HostFeed, mpsc::Receiver<FeedMsg>) {
        let (tx, rx) = mpsc::channel(1024);
        let (cmds, cmd_rx) = mpsc::channel(16);
        let task = tokio::spawn(feed(ssh, dest.clone(), clock, install, tx, cmd_rx));
        (HostFeed { dest, cmds, task }, rx)
    }

    pub async fn send(&self, cmd: FeedCmd) -> bool {
        self.cmds.send(cmd).await.is_ok()
    }
}

struct FeedState {
    dest: Destination,
    link: HostLink,
    rows: HashMap<SessionId, TrackedSession>,
    version: Option<String>,
    clock: Arc<dyn Clock>,
    out: mpsc::Sender<FeedMsg>,
}

impl FeedState {
    fn info(&self) -> HostInfo {
        let now = self.clock.mono();
        HostInfo {
            host: self.dest.as_str().to_owned(),
            state: self.link.state,
            message: self.link.message.clone(),
            last_seen: self.link.last_seen,
            sessions: self.rows.len(),
            version: self.version.clone(),
            retry_in_secs: self.link.retry_at.map(|at| at.since(now).as_secs()),
        }
    }

    async fn tell(&self) -> bool {
        self.out.send(FeedMsg::State(self.info())).await.is_ok()
    }

    /// A (new) full roster: what changed since the held one becomes events.
    async fn replace(&mut self, sessions: Vec<TrackedSession>) -> bool {
        let mut fresh: HashMap<SessionId, TrackedSession> =
            sessions.into_iter().map(|s| (s.session_id.clone(), owned_by(s, &self.dest))).collect();
        let mut events = Vec::new();
        for (id, old) in &self.rows {
            match fresh.get(id) {
                None => events.push(StoreEvent::Removed { session_id: id.clone() }),
                Some(new) => {
                    let changes = new.diff(old);
                    if !changes.is_empty() {
                        events.push(StoreEvent::Updated { session_id: id.clone(), changes: Box::new(changes) });
                    }
                }
            }
        }
        for (id, s) in &fresh {
            if !self.rows.contains_key(id) {
                events.push(StoreEvent::Discovered { session: Box::new(s.clone()) });
            }
        }
        std::mem::swap(&mut self.rows, &mut fresh);
        for e in events {
            if self.out.send(FeedMsg::Event(e)).await.is_err() {
                return false;
            }
        }
        true
    }

    async fn apply(&mut self, event: StoreEvent) -> bool {
        let event = match event {
            StoreEvent::Discovered { session } => {
                let s = owned_by(*session, &self.dest);
                self.rows.insert(s.session_id.clone(), s.clone());
                StoreEvent::Discovered { session: Box::new(s) }
            }
            StoreEvent::Updated { session_id, mut changes } => {
                changes.host = None; // the host's own word on `host` is not taken
                match self.rows.get_mut(&session_id) {
                    Some(row) => row.apply((*changes).clone()),
                    None => return true,
                }
                StoreEvent::Updated { session_id, changes }
            }
            StoreEvent::Removed { session_id } => {
                if self.rows.remove(&session_id).is_none() {
                    return true;
                }
                StoreEvent::Removed { session_id }
            }
        };
        self.out.send(FeedMsg::Event(event)).await.is_ok()
    }
}

async fn feed(
    ssh: Ssh,
    dest: Destination,
    clock: Arc<dyn Clock>,
    mut install: Option<PathBuf>,
    out: mpsc::Sender<FeedMsg>,
    mut cmds: mpsc::Receiver<FeedCmd>,
) {
    let mut st = FeedState { dest, link: HostLink::default(), rows: HashMap::new(), version: None, clock, out };
    st.link.retry_now(st.clock.mono());
    loop {
        // Wait until an attempt is due, or the user asks.
        while !st.link.due(st.clock.mono()) {
            let wait = st.link.retry_at.map(|at| at.since(st.clock.mono()));
            let cmd = match wait {
                Some(w) => tokio::time::timeout(w, cmds.recv()).await.ok(),
                None => Some(cmds.recv().await),
            };
            match cmd {
                Some(None) => return,
                Some(Some(FeedCmd::Retry)) => st.link.retry_now(st.clock.mono()),
                Some(Some(FeedCmd::Install(exe))) => {
                    install = Some(exe);
                    st.link.retry_now(st.clock.mono());
                }
                Some(Some(FeedCmd::Show(_, reply))) => {
                    let _ = reply.send(Err("the host is not connected".into()));
                }
                // The wait ran out: `due`, on the injectable clock, decides.
                None => {}
            }
        }
        st.link.connecting();
        if !st.tell().await {
            return;
        }
        // The user's word to install holds for this one attempt: a copy that fails is said
        // and waits for the user again, never retried on its own.
        let exe = install.take();
        let failure = match connect_or_install(&ssh, &st.dest, exe.as_deref()).await {
            Ok(mut conn) => {
                st.version = Some(mimesis_core::text::clean_text(&conn.hello.version, 40));
                match run_connection(&mut st, &mut conn, &mut cmds).await {
                    Some(f) => f,
                    None => return,
                }
            }
            Err(f) => f,
        };
        st.link.failed(&failure, st.clock.mono());
        tracing::info!(host = %st.dest, "remote host: {}", failure.sentence());
        if !st.tell().await {
            return;
        }
    }
}

/// Serves one connection until it fails (Some) or the feed's owner is gone (None).
async fn run_connection(
    st: &mut FeedState,
    conn: &mut Connection,
    cmds: &mut mpsc::Receiver<FeedCmd>,
) -> Option<Failure> {
    let mut next_req = 0u64;
    // Requests in flight; dropped with the connection, which answers them with an error.
    let mut waiting: HashMap<u64, oneshot::Sender<Result<Vec<TimelineItem>, String>>> = HashMap::new();
    loop {
        tokio::select! {
            msg = conn.recv() => {
                let msg = match msg {
                    Ok(m) => m,
                    Err(f) => return Some(f),
                };
                st.link.heard(st.clock.now());
                let alive = match msg {
                    FromRemote::Snapshot { sessions } => {
                        let ok = st.replace(sessions).await;
                        st.link.live(st.clock.now());
                        ok && st.tell().await
                    }
                    FromRemote::Event { event } => {
                        let before = st.rows.len();
                        let ok = st.apply(event).await;
                        ok && (st.rows.len() == before || st.tell().await)
                    }
                    FromRemote::Supervision { event } => st.out.send(FeedMsg::Supervision(event)).await.is_ok(),
                    FromRemote::Timeline { req, items } => {
                        if let Some(r) = waiting.remove(&req) { let _ = r.send(Ok(items)); }
                        true
                    }
                    FromRemote::Error { req: Some(req), message } => {
                        if let Some(r) = waiting.remove(&req) {
                            let _ = r.send(Err(mimesis_core::text::clean_text(&message, 500)));
                        }
                        true
                    }
                    FromRemote::Error { req: None, message } => {
                        return Some(Failure::HelperMismatch(mimesis_core::text::clean_text(&message, 300)));
                    }
                    // The feed asks for no report (a later Spend view will).
                    FromRemote::Hello { .. } | FromRemote::Cost { .. } => true,
                };
                if !alive {
                    return None;
                }
            }
            cmd = cmds.recv() => match cmd {
                None => return None,
                Some(FeedCmd::Show(id, reply)) => {
                    next_req += 1;
                    match conn.send(&ToRemote::Show { req: next_req, session_id: id }).await {
                        Ok(()) => { waiting.insert(next_req, reply); }
                        Err(e) => { let _ = reply.send(Err(format!("cannot write to the host: {e}"))); }
                    }
                }
                Some(FeedCmd::Retry | FeedCmd::Install(_)) => {}
            },
        }
    }
}

// ---- configured hosts ---------------------------------------------------------------------

/// The machines the user added (Settings › Machines, `mimesis hosts add`), as stored.
pub fn configured(data_dir: &Path) -> Vec<Destination> {
    crate::stored_settings(&data_dir.join(mimesis_fleetdb::FILE_NAME))
        .machines
        .hosts
        .iter()
        .filter_map(|h| Destination::parse(h).ok())
        .collect()
}

/// Adds (`add`) or removes a machine in the stored settings. Returns the new list.
pub fn change_configured(data_dir: &Path, dest: &Destination, add: bool) -> Result<Vec<Destination>, String> {
    let path = data_dir.join(mimesis_fleetdb::FILE_NAME);
    std::fs::create_dir_all(data_dir).map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let db = mimesis_fleetdb::Db::open_shared(&path).map_err(|e| format!("cannot open the settings: {e}"))?;
    let mut settings = db.settings();
    settings.machines.change(dest, add)?;
    if let Some(e) = settings.validate().into_iter().find(|e| e.field.starts_with("machines")) {
        return Err(e.message);
    }
    db.save_settings(&settings).map_err(|e| format!("cannot save the settings: {e}"))?;
    Ok(settings.machines.hosts.iter().filter_map(|h| Destination::parse(h).ok()).collect())
}

// ---- every configured host, for a window ---------------------------------------------------

/// A row of another machine as a window keys it: `host:id`, the CLI's way of naming it,
/// so ids that collide across machines stay apart (`sessionId` and `supersededBy`).
pub fn face_row(s: &TrackedSession) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let (Some(host), Some(o)) = (&s.host, v.as_object_mut()) {
        for key in ["sessionId", "supersededBy"] {
            if let Some(serde_json::Value::String(id)) = o.get(key) {
                let keyed = format!("{host}:{id}");
                o.insert(key.into(), keyed.into());
            }
        }
    }
    v
}

/// A remote store event as a window sees it (ids keyed as in [`face_row`]).
fn face_event(host: &str, ev: &StoreEvent) -> serde_json::Value {
    match ev {
        StoreEvent::Discovered { session } => serde_json::json!({"type": "discovered", "session": face_row(session)}),
        StoreEvent::Updated { session_id, changes } => {
            let mut changes = serde_json::to_value(changes).unwrap_or_default();
            if let Some(serde_json::Value::String(id)) = changes.get("supersededBy").cloned() {
                changes["supersededBy"] = format!("{host}:{id}").into();
            }
            serde_json::json!({"type": "updated", "sessionId": format!("{host}:{session_id}"), "changes": changes})
        }
        StoreEvent::Removed { session_id } => {
            serde_json::json!({"type": "removed", "sessionId": format!("{host}:{session_id}")})
        }
    }
}

/// A remote supervision event as a window sees it (`sessionId` and `resumeSessionId`
/// keyed as in [`face_row`]).
pub fn face_supervision(host: &str, ev: &SupervisionEvent) -> serde_json::Value {
    let mut v = serde_json::to_value(ev).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        for key in ["sessionId", "resumeSessionId"] {
            if let Some(serde_json::Value::String(id)) = o.get(key) {
                let keyed = format!("{host}:{id}");
                o.insert(key.into(), keyed.into());
            }
        }
    }
    v
}

/// What a [`Hub`] tells a window.
#[derive(Clone, Debug)]
pub enum HubEvent {
    /// Every host's state, in the configured order.
    Hosts(Vec<HostInfo>),
    /// Roster changes of other machines, keyed as in [`face_row`].
    Events(Vec<serde_json::Value>),
    /// Supervision events of other machines' sessions, keyed as in [`face_supervision`],
    /// each after the roster change it describes.
    Supervision(Vec<serde_json::Value>),
    /// The sessions of other machines that need the user now (keys `host:id`), by the same
    /// policy as this machine's (`mimesis_core::attention`).
    Attention(Vec<String>),
    /// A notification the attention policy decided on (`key`: `host:id`).
    Notify { key: String, title: String, body: String },
}

/// Every configured machine kept connected for a window: their rows held through drops,
/// their states, their timelines on demand. Changing the list starts and stops feeds;
/// a removed machine's rows are removed.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<std::sync::Mutex<HubInner>>,
    events: tokio::sync::broadcast::Sender<HubEvent>,
    ssh: Ssh,
    clock: Arc<dyn Clock>,
}

#[derive(Default)]
struct HubInner {
    order: Vec<Destination>,
    feeds: HashMap<Destination, HostFeed>,
    infos: HashMap<Destination, HostInfo>,
    rows: HashMap<Destination, HashMap<SessionId, TrackedSession>>,
    attention: HashMap<Destination, Attention>,
    notifications: NotificationSettings,
    /// The attention set last told.
    needs_you: Vec<String>,
}

impl HubInner {
    fn needs_you(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .attention
            .iter()
            .flat_map(|(d, a)| a.set().session_ids.into_iter().map(move |id| format!("{d}:{id}")))
            .collect();
        keys.sort();
        keys
    }

    /// The attention set, when it changed since last told.
    fn needs_you_changed(&mut self) -> Option<Vec<String>> {
        let now = self.needs_you();
        (now != self.needs_you).then(|| {
            self.needs_you = now.clone();
            now
        })
    }
}

impl Hub {
    pub fn new(ssh: Ssh, clock: Arc<dyn Clock>) -> Hub {
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Hub { inner: Arc::default(), events, ssh, clock }
    }

    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<HubEvent> {
        self.events.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The machines to keep connected (from the settings). Call inside a tokio runtime.
    pub fn set_hosts(&self, hosts: &[Destination]) {
        let mut removed_events = Vec::new();
        {
            let mut inner = self.lock();
            inner.order = hosts.to_vec();
            let gone: Vec<Destination> = inner.feeds.keys().filter(|d| !hosts.contains(d)).cloned().collect();
            for d in gone {
                inner.feeds.remove(&d);
                inner.infos.remove(&d);
                inner.attention.remove(&d);
                for id in inner.rows.remove(&d).unwrap_or_default().into_keys() {
                    removed_events.push(serde_json::json!({"type": "removed", "sessionId": format!("{d}:{id}")}));
                }
            }
            for d in hosts {
                if inner.feeds.contains_key(d) {
                    continue;
                }
                let (feed, msgs) = HostFeed::start(self.ssh.clone(), d.clone(), self.clock.clone(), None);
                inner.feeds.insert(d.clone(), feed);
                inner.infos.insert(d.clone(), starting_info(d));
                tokio::spawn(self.clone().pump(d.clone(), msgs));
            }
        }
        if !removed_events.is_empty() {
            let _ = self.events.send(HubEvent::Events(removed_events));
        }
        let changed = self.lock().needs_you_changed();
        if let Some(keys) = changed {
            let _ = self.events.send(HubEvent::Attention(keys));
        }
        let _ = self.events.send(HubEvent::Hosts(self.hosts()));
    }

    /// Which notifications the user wants (the settings' `notifications`).
    pub fn set_notifications(&self, settings: NotificationSettings) {
        let mut inner = self.lock();
        for a in inner.attention.values_mut() {
            a.set_settings(settings.clone());
        }
        inner.notifications = settings;
    }

    /// The sessions of other machines that need the user now (keys `host:id`).
    pub fn needs_you(&self) -> Vec<String> {
        self.lock().needs_you.clone()
    }

    /// One feed's messages into the held rows and out to the window.
    async fn pump(self, dest: Destination, mut msgs: mpsc::Receiver<FeedMsg>) {
        while let Some(first) = msgs.recv().await {
            // What arrived together goes out together.
            let mut batch = vec![first];
            while let Ok(m) = msgs.try_recv() {
                batch.push(m);
                if batch.len() >= 512 {
                    break;
                }
            }
            let mut events = Vec::new();
            let mut supervision = Vec::new();
            let mut notes = Vec::new();
            let mut hosts_changed = false;
            let needs_you;
            {
                let mut inner = self.lock();
                let now = self.clock.now();
                if !inner.feeds.contains_key(&dest) {
                    return; // removed meanwhile
                }
                for m in batch {
                    match m {
                        FeedMsg::State(info) => {
                            inner.infos.insert(dest.clone(), info);
                            hosts_changed = true;
                        }
                        FeedMsg::Event(ev) => {
                            let rows = inner.rows.entry(dest.clone()).or_default();
                            match &ev {
                                StoreEvent::Discovered { session } => {
                                    rows.insert(session.session_id.clone(), (**session).clone());
                                }
                                StoreEvent::Updated { session_id, changes } => {
                                    if let Some(r) = rows.get_mut(session_id) {
                                        r.apply((**changes).clone());
                                    }
                                }
                                StoreEvent::Removed { session_id } => {
                                    rows.remove(session_id);
                                }
                            }
                            let settings = inner.notifications.clone();
                            let policy = inner
                                .attention
                                .entry(dest.clone())
                                .or_insert_with(|| Attention::new(settings, mimesis_core::attention::DEFAULT_DEBOUNCE));
                            for n in policy.on_store_event(&ev, now) {
                                notes.push(HubEvent::Notify {
                                    key: format!("{dest}:{}", n.session_id),
                                    title: n.title,
                                    body: format!("{dest}: {}", n.body),
                                });
                            }
                            events.push(face_event(dest.as_str(), &ev));
                        }
                        FeedMsg::Supervision(ev) => {
                            if let Some(signal) = SupervisionSignal::from_event(&ev) {
                                let settings = inner.notifications.clone();
                                let policy = inner.attention.entry(dest.clone()).or_insert_with(|| {
                                    Attention::new(settings, mimesis_core::attention::DEFAULT_DEBOUNCE)
                                });
                                for n in policy.on_supervision(&ev.session_id, signal, now) {
                                    notes.push(HubEvent::Notify {
                                        key: format!("{dest}:{}", n.session_id),
                                        title: n.title,
                                        body: format!("{dest}: {}", n.body),
                                    });
                                }
                            }
                            supervision.push(face_supervision(dest.as_str(), &ev));
                        }
                    }
                }
                needs_you = inner.needs_you_changed();
            }
            if !events.is_empty() {
                let _ = self.events.send(HubEvent::Events(events));
            }
            if !supervision.is_empty() {
                let _ = self.events.send(HubEvent::Supervision(supervision));
            }
            if let Some(keys) = needs_you {
                let _ = self.events.send(HubEvent::Attention(keys));
            }
            for n in notes {
                let _ = self.events.send(n);
            }
            if hosts_changed {
                let _ = self.events.send(HubEvent::Hosts(self.hosts()));
            }
        }
    }

    /// Every machine's state, in the configured order.
    pub fn hosts(&self) -> Vec<HostInfo> {
        let inner = self.lock();
        inner.order.iter().map(|d| inner.infos.get(d).cloned().unwrap_or_else(|| starting_info(d))).collect()
    }

    /// Every held row of every machine, keyed for a window ([`face_row`]).
    pub fn rows(&self) -> Vec<serde_json::Value> {
        let inner = self.lock();
        inner.rows.values().flat_map(|r| r.values()).map(face_row).collect()
    }

    /// A held row by its window key `host:id`.
    pub fn row(&self, key: &str) -> Option<TrackedSession> {
        let (host, id) = remote::split_host_id(key);
        let (dest, id) = (Destination::parse(host?).ok()?, SessionId::parse(id).ok()?);
        self.lock().rows.get(&dest)?.get(&id).cloned()
    }

    async fn command(&self, dest: &Destination, cmd: FeedCmd) -> Result<(), String> {
        let tx = {
            let inner = self.lock();
            inner
                .feeds
                .get(dest)
                .map(|f| f.cmds.clone())
                .ok_or_else(|| format!("{dest} is not in the list of machines"))?
        };
        tx.send(cmd).await.map_err(|_| format!("{dest} is not connected"))
    }

    /// Connect now, without waiting for the back-off.
    pub async fn retry(&self, dest: &Destination) -> Result<(), String> {
        self.command(dest, FeedCmd::Retry).await
    }

    /// Install this build (`exe`) as the host's helper, then connect (the user's word).
    pub async fn install(&self, dest: &Destination, exe: PathBuf) -> Result<(), String> {
        self.command(dest, FeedCmd::Install(exe)).await
    }

    /// The timeline of a session on another machine, by its window key `host:id`.
    pub async fn timeline(&self, key: &str) -> Result<Vec<TimelineItem>, String> {
        let (host, id) = remote::split_host_id(key);
        let dest = Destination::parse(host.ok_or("not a session of another machine")?)?;
        SessionId::parse(id).map_err(|_| "that is not a session id".to_owned())?;
        let (tx, rx) = oneshot::channel();
        self.command(&dest, FeedCmd::Show(id.to_owned(), tx)).await?;
        rx.await.map_err(|_| "the connection to the host dropped".to_owned())?
    }
}

fn starting_info(d: &Destination) -> HostInfo {
    HostInfo {
        host: d.as_str().to_owned(),
        state: HostState::Connecting,
        message: None,
        last_seen: None,
        sessions: 0,
        version: None,
        retry_in_secs: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::session::SessionPatch;

    fn row(id: &str, host: Option<&str>) -> TrackedSession {
        let mut v = serde_json::json!({
            "sessionId": id, "projectId": "-p", "cwd": null, "repoRoot": null, "branch": null, "goal": null,
            "summary": null, "title": null, "status": "idle", "hasPendingToolUse": false, "pendingTool": null,
            "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": null,
            "usage": {"inputTokens": 0, "outputTokens": 0, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
            "apiError": false, "compactionCount": 0, "superseded": true, "supersededBy": "next", "supersededAt": null,
            "workChainId": null, "workChainName": null, "chainLength": 1, "source": "watcher", "supervision": null,
            "live": false, "pid": null, "transcriptPath": "/x.jsonl", "permissionMode": null, "malformedLines": 0,
            "statusFile": null, "name": null
        });
        v["host"] = host.into();
        serde_json::from_value(v).expect("a row")
    }

    #[test]
    fn a_window_keys_another_machines_rows_by_host_and_id() {
        let remote = face_row(&row("abc", Some("devbox")));
        assert_eq!(remote["sessionId"], "devbox:abc");
        assert_eq!(remote["supersededBy"], "devbox:next", "links stay on their machine");
        assert_eq!(remote["host"], "devbox");
        let local = face_row(&row("abc", None));
        assert_eq!(local["sessionId"], "abc");
        let patch = SessionPatch { superseded_by: Some(Some(SessionId::parse("n2").unwrap())), ..Default::default() };
        let ev = face_event(
            "devbox",
            &StoreEvent::Updated { session_id: SessionId::parse("abc").unwrap(), changes: Box::new(patch) },
        );
        assert_eq!(ev["sessionId"], "devbox:abc");
        assert_eq!(ev["changes"]["supersededBy"], "devbox:n2");
        let gone = face_event("devbox", &StoreEvent::Removed { session_id: SessionId::parse("abc").unwrap() });
        assert_eq!(gone, serde_json::json!({"type": "removed", "sessionId": "devbox:abc"}));
    }

    #[tokio::test]
    async fn lines_longer_than_the_limit_are_an_error_not_a_growing_buffer() {
        let data = format!("short\n{}\nafter\n", "x".repeat(100));
        let mut r = tokio::io::BufReader::with_capacity(8, data.as_bytes());
        let mut buf = Vec::new();
        assert!(read_line(&mut r, &mut buf, 50).await.unwrap());
        assert_eq!(buf, b"short");
        assert!(read_line(&mut r, &mut buf, 50).await.is_err());
        let mut r = tokio::io::BufReader::new(&b"no newline at the end"[..]);
        assert!(read_line(&mut r, &mut buf, 50).await.unwrap());
        assert_eq!(buf, b"no newline at the end");
        assert!(!read_line(&mut r, &mut buf, 50).await.unwrap());
    }
}
