//! One connection to `mimesis serve --stdio` on a host, through the user's `ssh`: its
//! hello checked, its lines read within a bound; and the helper copied there on the
//! user's word.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mimesis_core::remote::{self, Destination, Failure, FromRemote, MAX_LINE, PROTOCOL, ToRemote};
use mimesis_core::session::TrackedSession;
use mimesis_core::timeline::TimelineItem;
use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

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
    let _ = conn.send(&ToRemote::Hello { protocol: PROTOCOL }).await;
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
pub(super) async fn read_line(r: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
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
pub(super) fn owned_by(mut s: TrackedSession, host: &Destination) -> TrackedSession {
    s.host = Some(host.as_str().to_owned());
    s
}

/// Connects, installing the helper first when `install` names this build's binary and
/// the host lacks it (or has one of another protocol).
pub async fn connect_or_install(ssh: &Ssh, dest: &Destination, install: Option<&Path>) -> Result<Connection, Failure> {
    match connect(ssh, dest).await {
        Err(f) if f.wants_helper() => match install {
            Some(exe) => {
                // A copy that fails leaves the host without a helper, said with why.
                install_helper(ssh, dest, exe).await.map_err(Failure::HelperMismatch)?;
                connect(ssh, dest).await
            }
            None => Err(f),
        },
        other => other,
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
        assert!(read_line(&mut r, &mut buf, 50).await.is_err());
        let mut r = tokio::io::BufReader::new(&b"no newline at the end"[..]);
        assert!(read_line(&mut r, &mut buf, 50).await.unwrap());
        assert_eq!(buf, b"no newline at the end");
        assert!(!read_line(&mut r, &mut buf, 50).await.unwrap());
    }
}
