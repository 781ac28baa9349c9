//! The clients of answering from Mimesis (`mimesis_core::approval`): the
//! `PermissionRequest` hook asks the running face and waits for its decision — blocked on
//! the socket, so the wait costs nothing, and bounded — and `mimesis pending / approve /
//! deny` talk to the same face. With no face running the hook returns at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;

use mimesis_core::approval::{self, Decision, MAX_LINE, Request, ToFace};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no Mimesis is running to answer (the window, `mimesis watch` or `mimesis run` with data dir {0}): nothing waits for an answer there"
    )]
    NoFace(PathBuf),
    #[error("talking to the running Mimesis: {0}")]
    Io(#[from] std::io::Error),
    #[error("the running Mimesis answered something unexpected: {0}")]
    Reply(String),
}

/// Sends `msg` to the face of `data_dir` and reads its one-line reply, waiting at most
/// `wait` for it.
pub fn call<T: DeserializeOwned>(data_dir: &Path, msg: &ToFace, wait: Duration) -> Result<T, ClientError> {
    let path = approval::socket_path(data_dir);
    let mut stream = match UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
            return Err(ClientError::NoFace(data_dir.to_owned()));
        }
        Err(e) => return Err(e.into()),
    };
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    stream.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
    let mut line = serde_json::to_vec(msg).map_err(|e| ClientError::Reply(e.to_string()))?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reply = Vec::new();
    BufReader::new(stream.take(MAX_LINE as u64)).read_until(b'\n', &mut reply)?;
    if reply.is_empty() {
        return Err(ClientError::Reply("nothing (it went away)".into()));
    }
    serde_json::from_slice(&reply).map_err(|e| ClientError::Reply(e.to_string()))
}

/// The hook's question: the face's decision, or no decision when there is no face, it
/// does not answer within `wait`, or it goes away.
pub fn ask(data_dir: &Path, request: &Request, wait: Duration) -> Decision {
    match call::<Decision>(data_dir, &ToFace::Request(request.clone()), wait) {
        Ok(d) => d,
        Err(ClientError::NoFace(_)) => Decision::default(),
        Err(e) => {
            crate::log(data_dir, mimesis_core::clock::Clock::now(&mimesis_core::clock::SystemClock), &e.to_string());
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
