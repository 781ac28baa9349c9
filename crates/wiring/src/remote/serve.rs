//! The far side: `mimesis serve --stdio`, what `--host` runs on the other machine.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mimesis_core::clock::Clock;
use mimesis_core::ids::SessionId;
use mimesis_core::remote::{FromRemote, PROTOCOL, ToRemote};
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::timeline::TimelineItem;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::{Mimesis, Options, once};
use mimesis_remote::read_line;

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
            // Read copied: a transcript cut short while mapped would end this process with a
            // bus error, which the hub could only tell as a dropped connection.
            let how = crate::cost::Reading::Copied;
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
    let follower =
        tokio::spawn(crate::supervisors::follow(roots.clone(), data_dir.clone(), engine.clone(), Some(sup_tx)));
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
                                Err(e) => FromRemote::Error { req: Some(req), message: e.to_string() },
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
                    Some(ToRemote::Search { req, request }) => {
                        let (roots, data_dir, done_tx) = (roots.clone(), data_dir.clone(), done_tx.clone());
                        tokio::task::spawn_blocking(move || {
                            let reply = match crate::search::search(&roots, &data_dir, &request, &mut |_, _| {}) {
                                Ok(results) => FromRemote::SearchResults { req, results },
                                Err(e) => FromRemote::Error { req: Some(req), message: e.to_string() },
                            };
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

/// Lines from the peer, parsed; `None` once at the end (or on a line that is not the
/// protocol: the peer is not a Mimesis, and the conversation ends).
async fn read_requests(input: impl AsyncBufRead + Unpin, tx: mpsc::Sender<Option<ToRemote>>) {
    let mut input = input;
    let mut buf = Vec::new();
    while let Ok(true) = read_line(&mut input, &mut buf, 1024 * 1024).await {
        let parsed = ToRemote::parse(&buf);
        buf.clear();
        match parsed {
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
) -> Result<Vec<TimelineItem>, ShowError> {
    let id = SessionId::parse(query).map_err(|_| ShowError::NotAnId)?;
    let found = roots.iter().flat_map(|r| once::discover(r)).find(|l| l.session_id == id).map(|l| l.path);
    let path = match (found, known) {
        (Some(p), _) => p,
        (None, Some(p)) if !p.exists() => return Ok(Vec::new()),
        _ => return Err(ShowError::NotHere(id)),
    };
    let mut items =
        once::chain_prefix(roots, data_dir, &path, mimesis_core::clock::SystemClock.now()).map_err(ShowError::Chain)?;
    items.extend(once::read_timeline(&path, Some(data_dir)).map_err(ShowError::Transcript)?);
    Ok(items)
}

/// Why a session's timeline is not sent to the asking machine: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
enum ShowError {
    #[error("that is not a session id")]
    NotAnId,
    #[error("no session with id {0} on this host")]
    NotHere(SessionId),
    #[error("cannot read an earlier segment of the chain: {0}")]
    Chain(std::io::Error),
    #[error("cannot read the transcript: {0}")]
    Transcript(std::io::Error),
}

async fn write_msg(out: &mut (impl AsyncWrite + Unpin), msg: &FromRemote) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await
}
