//! The clients of answering from Mimesis (`mimesis_core::approval`): the
//! `PermissionRequest` hook asks the running face and waits for its decision — blocked on
//! the socket, so the wait costs nothing, and bounded — and `mimesis pending / approve
//! / deny` talk to the same face. With no face running the hook returns at once.
//!
//! Whoever listens on the socket reads the requests and may answer them, so a client talks
//! only to a face of its own user: the data dir must be the user's and writable by nobody
//! else (else anyone could have put the socket there), and the listener's peer credentials
//! must be the user's. Otherwise the client refuses, and the hook acts as with no face:
//! Claude Code's own dialog decides.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;

use mimesis_core::approval::{self, Decision, MAX_LINE, PendingList, Request, ToFace};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no Mimesis is running to answer (the window, `mimesis watch` or `mimesis run` with data dir {0}): nothing waits for an answer there"
    )]
    NoFace(PathBuf),
    #[error("{0}")]
    Untrusted(String),
    #[error("talking to the running Mimesis: {0}")]
    Io(#[from] std::io::Error),
    #[error("the running Mimesis answered something unexpected: {0}")]
    Reply(String),
}

/// Whether the face's socket in `data_dir` can be trusted to be the user's own: the data dir
/// is this user's and nobody else may write into it. A sentence saying why not.
pub fn check_data_dir(data_dir: &Path) -> Result<(), ClientError> {
    let meta = match std::fs::metadata(data_dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ClientError::NoFace(data_dir.to_owned())),
        Err(e) => return Err(e.into()),
    };
    let me = euid();
    if meta.uid() != me {
        return Err(ClientError::Untrusted(format!(
            "the data dir {} belongs to user {}, not to you (user {me}): its permission socket is not talked to; make the data dir your own",
            data_dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(ClientError::Untrusted(format!(
            "others may write into the data dir {} (mode {:o}): its permission socket is not talked to; `chmod 700 {}`",
            data_dir.display(),
            meta.mode() & 0o7777,
            data_dir.display()
        )));
    }
    Ok(())
}

/// The user id of the process at the other end of `stream` (the listener's, for a client).
fn peer_uid(stream: &UnixStream) -> std::io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket, and a buffer of the size given for SO_PEERCRED's ucred.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Connects to the face of `data_dir`, once it is known to be this user's own.
fn connect(data_dir: &Path) -> Result<UnixStream, ClientError> {
    check_data_dir(data_dir)?;
    let path = approval::socket_path(data_dir);
    let stream = match UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
            return Err(ClientError::NoFace(data_dir.to_owned()));
        }
        Err(e) => return Err(e.into()),
    };
    let (uid, me) = (peer_uid(&stream)?, euid());
    if uid != me {
        return Err(ClientError::Untrusted(format!(
            "the permission socket {} is served by user {uid}, not by you (user {me}): nothing was sent to it; remove it and start Mimesis again",
            path.display()
        )));
    }
    Ok(stream)
}

/// Sends `msg` to the face of `data_dir` and reads its one-line reply, waiting at most
/// `wait` for it.
pub fn call<T: DeserializeOwned>(data_dir: &Path, msg: &ToFace, wait: Duration) -> Result<T, ClientError> {
    let mut stream = connect(data_dir)?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    stream.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
    let mut line = serde_json::to_vec(msg).map_err(|e| ClientError::Reply(e.to_string()))?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reply = Vec::new();
    BufReader::new(stream.take(MAX_LINE as u64 + 1)).read_until(b'\n', &mut reply)?;
    if reply.is_empty() {
        return Err(ClientError::Reply("nothing (it went away)".into()));
    }
    if reply.last() != Some(&b'\n') {
        return Err(ClientError::Reply(if reply.len() > MAX_LINE {
            format!("a reply longer than {} MiB", MAX_LINE >> 20)
        } else {
            "a reply cut short (it went away)".into()
        }));
    }
    serde_json::from_slice(&reply).map_err(|e| ClientError::Reply(e.to_string()))
}

/// Every open request, oldest first: the list a page at a time, however long.
pub fn list(data_dir: &Path, wait: Duration) -> Result<PendingList, ClientError> {
    let mut all = PendingList { pending: Vec::new(), next: None };
    let mut cursor = None;
    loop {
        let page: PendingList = call(data_dir, &ToFace::List { cursor: cursor.take() }, wait)?;
        all.pending.extend(page.pending);
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
}

/// The hook's question: the face's decision, or no decision when there is no face, it
/// is not this user's, it does not answer within `wait`, it takes no more requests, or it
/// goes away. Whatever went wrong is logged.
pub fn ask(data_dir: &Path, request: &Request, wait: Duration) -> Decision {
    let log = |e: &str| crate::log(data_dir, mimesis_core::clock::Clock::now(&mimesis_core::clock::SystemClock), e);
    match call::<Decision>(data_dir, &ToFace::Request(request.clone()), wait) {
        Ok(d) => match d.error {
            Some(e) => {
                log(&format!("the running Mimesis took no request for session {}: {e}", request.session_id));
                Decision::default()
            }
            None => d,
        },
        Err(ClientError::NoFace(_)) => Decision::default(),
        Err(e) => {
            log(&format!("{e} (session {}: Claude Code's own dialog decides)", request.session_id));
            Decision::default()
        }
    }
}

/// How long the hook waits: [`approval::WAIT_ENV`] in seconds, else the default.
pub fn wait_from_env() -> Duration {
    std::env::var(approval::WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(approval::DEFAULT_WAIT, |s| Duration::from_secs(s.min(3600)))
}

#[cfg(test)]
mod tests;
