//! One connection to `mimesis serve --stdio` on a host, through the user's `ssh`: its
//! hello checked, its lines read within a bound; and the helper copied there on the
//! user's word.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mimesis_core::clock::{Clock, Mono};
use mimesis_core::remote::{self, Destination, Failure, FromRemote, PROTOCOL, ToRemote, Waits, wait_words};
use mimesis_core::session::TrackedSession;
use mimesis_core::spend::{CostQuery, CostReport};
use mimesis_core::timeline::TimelineItem;
use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The `ssh` this Mimesis runs: the one on PATH, or `$MIMESIS_SSH`; with `-F
/// $MIMESIS_SSH_CONFIG` when that is set (else the user's `~/.ssh/config`, as ssh reads it);
/// and how long it waits on a host (`$MIMESIS_REMOTE_WAIT_SECS`, else the defaults).
#[derive(Clone, Debug)]
pub struct Ssh {
    pub program: PathBuf,
    pub config: Option<PathBuf>,
    pub waits: Waits,
}

impl Ssh {
    pub fn new(program: impl Into<PathBuf>, config: Option<PathBuf>) -> Ssh {
        Ssh { program: program.into(), config, waits: Waits::default() }
    }

    pub fn from_env() -> Ssh {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let waits = Waits::with_env(std::env::var(remote::WAIT_ENV).ok().as_deref());
        Ssh { waits, ..Ssh::new(var("MIMESIS_SSH").unwrap_or_else(|| "ssh".into()), var("MIMESIS_SSH_CONFIG")) }
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
        // then closes the connection, rather than ssh dying under it. Whatever ends
        // Mimesis (a signal, SIGKILL, an error path that skips a drop) ends ssh too, so a
        // remote that never closes can not keep it alive.
        c.process_group(0);
        mimesis_os::procs::end_with_parent(c.as_std_mut());
        mimesis_os::child_env::restore(c.as_std_mut());
        c
    }
}

/// How often a wait on the injectable clock looks at it again (a test's manual clock is
/// noticed this fast; the real one's deadline is met to within it).
const CLOCK_SLICE: Duration = Duration::from_millis(250);

/// `fut`, or None once `clock` reads `deadline`: every wait on a host is bounded, on the
/// clock its owner runs on.
pub(super) async fn before<T>(clock: &dyn Clock, deadline: Mono, fut: impl Future<Output = T>) -> Option<T> {
    let mut fut = std::pin::pin!(fut);
    loop {
        let left = deadline.since(clock.mono());
        if left.is_zero() {
            return None;
        }
        if let Ok(v) = tokio::time::timeout(left.min(CLOCK_SLICE), fut.as_mut()).await {
            return Some(v);
        }
    }
}

/// Sleeps until `clock` reads `deadline` (at most [`CLOCK_SLICE`] at a time).
pub(super) async fn until(clock: &dyn Clock, deadline: Mono) {
    before(clock, deadline, std::future::pending::<()>()).await;
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
    /// `show` requests sent and not answered: only then may a line be a timeline's length.
    shows: usize,
    pub hello: Hello,
    pub waits: Waits,
}

/// Connects to `dest` and checks that the remote speaks this protocol, within
/// `ssh.waits.hello` of `clock`.
pub async fn connect(ssh: &Ssh, dest: &Destination, clock: &dyn Clock) -> Result<Connection, Failure> {
    connect_with(ssh, dest, clock, &ToRemote::Hello { protocol: PROTOCOL }).await
}

/// [`connect`], with `first` sent in place of the hello (a one-shot request).
async fn connect_with(
    ssh: &Ssh,
    dest: &Destination,
    clock: &dyn Clock,
    first: &ToRemote,
) -> Result<Connection, Failure> {
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
        shows: 0,
        hello: Hello { protocol: 0, version: String::new(), os: String::new(), arch: String::new() },
        waits: ssh.waits,
    };
    // Sent at once: the remote checks it while ssh still negotiates nothing more.
    let _ = conn.send(first).await;
    let wait = ssh.waits.hello;
    let first = before(clock, clock.mono().plus(wait), conn.recv())
        .await
        .ok_or_else(|| Failure::Unreachable(format!("the host did not answer within {}", wait_words(wait))))??;
    match first {
        FromRemote::Hello { protocol, version, os, arch } if protocol == PROTOCOL => {
            conn.hello = Hello { protocol, version, os, arch };
            Ok(conn)
        }
        FromRemote::Hello { protocol, version, .. } => Err(remote::other_protocol(&version, protocol)),
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
        let max = FromRemote::line_cap(self.shows > 0);
        // Cancel-safe: a line cut by a `select!` stays in `buf` for the next call.
        let read = read_line(&mut self.reader, &mut self.buf, max).await;
        let result = match read {
            Ok(true) => {
                let msg = FromRemote::parse(&self.buf);
                self.buf.clear();
                msg
            }
            Ok(false) => Err(self.ended().await),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(Failure::Protocol(format!(
                "the host sent more than {} on one line, more than Mimesis accepts; it stopped reading it",
                remote::size_words(max)
            ))),
            Err(e) => Err(Failure::Protocol(format!("cannot read from the host: {e}"))),
        };
        // A long line's buffer is not kept for the short ones after it.
        if self.buf.capacity() > remote::MAX_EVENT_LINE {
            self.buf = Vec::new();
        }
        match &result {
            Ok(FromRemote::Timeline { .. } | FromRemote::Error { req: Some(_), .. }) => {
                self.shows = self.shows.saturating_sub(1)
            }
            Ok(_) => {}
            Err(_) => {
                let _ = self.child.start_kill();
            }
        }
        result
    }

    /// Messages until the first snapshot, within `waits.snapshot` of `clock` (the remote
    /// indexes its sessions first).
    pub async fn snapshot(&mut self, clock: &dyn Clock) -> Result<Vec<TrackedSession>, Failure> {
        let wait = self.waits.snapshot;
        let got = before(clock, clock.mono().plus(wait), async {
            loop {
                if let FromRemote::Snapshot { sessions } = self.recv().await? {
                    return Ok(sessions);
                }
            }
        })
        .await;
        got.unwrap_or_else(|| {
            Err(Failure::Unreachable(format!("the host sent no sessions within {} of its hello", wait_words(wait))))
        })
    }

    pub async fn send(&mut self, msg: &ToRemote) -> io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
        let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
        line.push(b'\n');
        stdin.write_all(&line).await?;
        stdin.flush().await?;
        if matches!(msg, ToRemote::Show { .. }) {
            self.shows += 1;
        }
        Ok(())
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

/// Reads one line (without its newline) into `buf`, after what `buf` holds already (a
/// call cancelled mid-line leaves its part there: clear `buf` once a line is used); false
/// at the end of input. A line longer than `max` is an error, never a growing buffer.
pub async fn read_line(r: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
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
/// kept only when its SHA-256 matches. Returns where it went. The question takes at most
/// `ssh.waits.hello`, the copy `ssh.waits.install` (ssh is killed after).
pub async fn install_helper(
    ssh: &Ssh,
    dest: &Destination,
    exe: &Path,
    clock: &dyn Clock,
) -> Result<String, InstallError> {
    let here = remote::uname_of(std::env::consts::OS, std::env::consts::ARCH);
    let asked = ssh.command(dest, &remote::remote_uname()).stdin(Stdio::null()).output();
    let out = before(clock, clock.mono().plus(ssh.waits.hello), asked)
        .await
        .ok_or_else(|| InstallError::NoAnswer(wait_words(ssh.waits.hello)))?;
    let run = |source| InstallError::Run { program: ssh.program.display().to_string(), source };
    let out = out.map_err(run)?;
    if !out.status.success() {
        return Err(InstallError::Ssh(Failure::classify(out.status.code(), &String::from_utf8_lossy(&out.stderr))));
    }
    let there = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if there != here {
        return Err(InstallError::OtherKind { there, here });
    }
    let bytes = tokio::fs::read(exe).await.map_err(|source| InstallError::Read { exe: exe.to_owned(), source })?;
    let sum = sha256_hex(&bytes);
    let mut child = ssh.command(dest, &remote::remote_install(&sum)).spawn().map_err(run)?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = tokio::spawn(async move {
        let r = stdin.write_all(&bytes).await;
        drop(stdin);
        r
    });
    let copied = before(clock, clock.mono().plus(ssh.waits.install), child.wait_with_output())
        .await
        .ok_or_else(|| InstallError::CopyTooLong(wait_words(ssh.waits.install)))?;
    let out = copied.map_err(InstallError::Copy)?;
    let _ = writer.await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success()
        && let Some(path) = stdout.lines().find_map(|l| l.strip_prefix("installed "))
    {
        return Ok(remote::quote(path));
    }
    if stderr.contains("mimesis-checksum-mismatch") {
        return Err(InstallError::Damaged);
    }
    Err(InstallError::CopyRefused(Failure::classify(out.status.code(), &stderr)))
}

/// Why this build was not installed as a host's helper: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("the host did not answer within {0}")]
    NoAnswer(String),
    #[error("cannot run {program}: {source}")]
    Run { program: String, source: std::io::Error },
    #[error("{}", .0.sentence())]
    Ssh(Failure),
    /// `there`: what the host's `uname -sm` printed (quoted when shown).
    #[error(
        "the host runs {}, this machine {here}: install Mimesis there yourself (Mimesis only copies itself to a host of the same kind)",
        remote::quote(.there)
    )]
    OtherKind { there: String, here: String },
    #[error("cannot read {}: {source}", .exe.display())]
    Read { exe: std::path::PathBuf, source: std::io::Error },
    #[error("the copy did not finish within {0}; try again")]
    CopyTooLong(String),
    #[error("the copy failed: {0}")]
    Copy(std::io::Error),
    #[error("the copy arrived damaged (its checksum differs) and was removed; try again")]
    Damaged,
    #[error("the copy failed: {}", .0.sentence())]
    CopyRefused(Failure),
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Marks rows as the host's.
pub(super) fn owned_by(mut s: TrackedSession, host: &Destination) -> TrackedSession {
    s.host = Some(host.as_str().to_owned());
    s
}

/// Connects, installing the helper first when `install` names this build's binary and
/// the host lacks it (or has one of another protocol).
pub async fn connect_or_install(
    ssh: &Ssh,
    dest: &Destination,
    install: Option<&Path>,
    clock: &dyn Clock,
) -> Result<Connection, Failure> {
    connect_or_install_with(ssh, dest, install, clock, &ToRemote::Hello { protocol: PROTOCOL }).await
}

async fn connect_or_install_with(
    ssh: &Ssh,
    dest: &Destination,
    install: Option<&Path>,
    clock: &dyn Clock,
    first: &ToRemote,
) -> Result<Connection, Failure> {
    match connect_with(ssh, dest, clock, first).await {
        Err(f) if f.wants_helper() => match install {
            Some(exe) => {
                // A copy that fails leaves the host without a helper, said with why.
                install_helper(ssh, dest, exe, clock).await.map_err(|e| Failure::HelperMismatch(e.to_string()))?;
                connect_with(ssh, dest, clock, first).await
            }
            None => Err(f),
        },
        other => other,
    }
}

/// The report of `dest`'s transcripts, once (`mimesis cost --host`): one request sent in
/// place of the hello, answered there from the files, without indexing; the answer
/// within `ssh.waits.snapshot` (the host reads every transcript first).
pub async fn cost(
    ssh: &Ssh,
    dest: &Destination,
    query: &CostQuery,
    install: Option<&Path>,
    clock: &dyn Clock,
) -> Result<CostReport, Failure> {
    let first = ToRemote::Cost { req: 1, query: query.clone() };
    let conn = connect_or_install_with(ssh, dest, install, clock, &first).await?;
    // The host reads every transcript first: as long as a snapshot may take.
    answer_of_request_1(conn, clock, ssh.waits.snapshot, |msg| match msg {
        FromRemote::Cost { req: 1, report } => Some(Ok(*report)),
        FromRemote::Error { req: None, message } => Some(Err(Failure::Protocol(remote::quote(&message)))),
        _ => None,
    })
    .await
}

/// What the remote said in its hello, and its roster (rows marked as the host's), from one
/// connection (`mimesis ls --host`, `mimesis hosts`).
pub async fn roster(
    ssh: &Ssh,
    dest: &Destination,
    install: Option<&Path>,
    clock: &dyn Clock,
) -> Result<(Hello, Vec<TrackedSession>), Failure> {
    let mut conn = connect_or_install(ssh, dest, install, clock).await?;
    let sessions = conn.snapshot(clock).await?;
    let hello = conn.hello.clone();
    conn.close().await;
    Ok((hello, sessions.into_iter().map(|s| owned_by(s, dest)).collect()))
}

/// A search over `dest`'s history, once (`mimesis search --host`); the answer within
/// `ssh.waits.reply` (a first build of the host's index included).
pub async fn search(
    ssh: &Ssh,
    dest: &Destination,
    request: &mimesis_core::search::Request,
    install: Option<&Path>,
    clock: &dyn Clock,
) -> Result<mimesis_core::search::Results, Failure> {
    let msg = ToRemote::Search { req: 1, request: request.clone() };
    ask(ssh, dest, install, clock, &msg, |m| match m {
        FromRemote::SearchResults { req: 1, results } => Some(results),
        _ => None,
    })
    .await
}

/// The timeline of one session on `dest`, once (`mimesis show host:id`); the answer within
/// `ssh.waits.reply`.
pub async fn timeline(
    ssh: &Ssh,
    dest: &Destination,
    id: &str,
    install: Option<&Path>,
    clock: &dyn Clock,
) -> Result<Vec<TimelineItem>, Failure> {
    let msg = ToRemote::Show { req: 1, session_id: id.to_owned() };
    ask(ssh, dest, install, clock, &msg, |m| match m {
        FromRemote::Timeline { req: 1, items } => Some(items),
        _ => None,
    })
    .await
}

/// One request (`req` 1) on a connection of its own, and the answer `take` picks, within
/// `ssh.waits.reply`.
async fn ask<T>(
    ssh: &Ssh,
    dest: &Destination,
    install: Option<&Path>,
    clock: &dyn Clock,
    msg: &ToRemote,
    take: impl Fn(FromRemote) -> Option<T>,
) -> Result<T, Failure> {
    let mut conn = connect_or_install(ssh, dest, install, clock).await?;
    conn.send(msg).await.map_err(|e| Failure::Unreachable(format!("cannot write to the host: {e}")))?;
    answer_of_request_1(conn, clock, ssh.waits.reply, |m| take(m).map(Ok)).await
}

/// The answer to request 1 on `conn`, within `wait`: what `pick` takes (its `Err`: the
/// host's own words), or the host's `error` for request 1; then the connection is closed.
/// A host that failed is not waited for: dropped, its ssh is killed.
async fn answer_of_request_1<T>(
    mut conn: Connection,
    clock: &dyn Clock,
    wait: Duration,
    mut pick: impl FnMut(FromRemote) -> Option<Result<T, Failure>>,
) -> Result<T, Failure> {
    let answer = before(clock, clock.mono().plus(wait), async {
        loop {
            let msg = match conn.recv().await? {
                FromRemote::Error { req: Some(1), message } => {
                    return Ok(Err(Failure::Protocol(remote::quote(&message))));
                }
                msg => msg,
            };
            if let Some(a) = pick(msg) {
                return Ok(a);
            }
        }
    })
    .await
    .unwrap_or_else(|| Err(no_answer(wait)))?;
    conn.close().await;
    answer
}

/// A request the host did not answer in time.
pub(super) fn no_answer(wait: Duration) -> Failure {
    Failure::Unreachable(format!("the host did not answer within {}", wait_words(wait)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_longer_than_the_limit_are_an_error_not_a_growing_buffer() {
        let data = format!("short\n{}\nafter\n", "x".repeat(100));
        let mut r = tokio::io::BufReader::with_capacity(8, data.as_bytes());
        let mut buf = Vec::new();
        assert!(read_line(&mut r, &mut buf, 50).await.unwrap());
        assert_eq!(buf, b"short");
        buf.clear();
        assert!(read_line(&mut r, &mut buf, 50).await.is_err());
        let mut r = tokio::io::BufReader::new(&b"no newline at the end"[..]);
        buf.clear();
        assert!(read_line(&mut r, &mut buf, 50).await.unwrap());
        assert_eq!(buf, b"no newline at the end");
        buf.clear();
        assert!(!read_line(&mut r, &mut buf, 50).await.unwrap());
    }

    /// A `select!` that drops a read mid-line (a request, a timer) loses nothing of it.
    #[tokio::test]
    async fn a_read_cut_mid_line_goes_on_where_it_stopped() {
        let (mut w, r) = tokio::io::duplex(64);
        let mut r = tokio::io::BufReader::new(r);
        let mut buf = Vec::new();
        w.write_all(b"{\"type\":").await.unwrap();
        let cut = tokio::time::timeout(Duration::from_millis(50), read_line(&mut r, &mut buf, 1000)).await;
        assert!(cut.is_err(), "no line yet");
        w.write_all(b"\"hello\"}\nnext\n").await.unwrap();
        assert!(read_line(&mut r, &mut buf, 1000).await.unwrap());
        assert_eq!(buf, br#"{"type":"hello"}"#);
    }
}
