//! The fleet database from the engine's side: what the last run kept is loaded at the
//! start, and what the store learns is written back in batches, on a thread of its own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::chain::Link;
use mimesis_core::persist::{Batch, PersistedSession, SessionArchive};
use tokio::sync::oneshot;

/// How soon after the store changed its changes are written to the fleet database (in
/// batches of at most [`PERSIST_BATCH_MAX`] sessions, one batch per interval).
pub(super) const PERSIST_INTERVAL: Duration = Duration::from_millis(500);
/// Sessions copied out for the database per batch (shutdown writes all that is left).
pub(super) const PERSIST_BATCH_MAX: usize = 250;

/// Loads what the archive kept for `roots`. An archive found unusable here is rebuilt
/// (and the transcripts read from scratch).
pub(super) fn load_persisted(archive: &dyn SessionArchive, roots: &[PathBuf]) -> (Vec<PersistedSession>, Vec<Link>) {
    match archive.load(roots) {
        Ok(loaded) => loaded,
        Err(e) => {
            archive.rebuild(&e.to_string());
            (Vec::new(), Vec::new())
        }
    }
}

/// Writes batches to the archive on its own thread, off the actor's path.
pub(super) struct Persister {
    tx: std::sync::mpsc::Sender<PersistMsg>,
}

enum PersistMsg {
    Batch(Batch),
    Flush(oneshot::Sender<()>),
}

impl Persister {
    pub(super) fn start(archive: Arc<dyn SessionArchive>) -> Persister {
        let (tx, rx) = std::sync::mpsc::channel::<PersistMsg>();
        std::thread::Builder::new()
            .name("mimesis-db".into())
            .spawn(move || {
                for msg in rx {
                    match msg {
                        PersistMsg::Batch(b) => {
                            if let Err(e) = archive.save(&b) {
                                tracing::warn!(error = %e, "could not write to the fleet database");
                            }
                        }
                        PersistMsg::Flush(ack) => {
                            archive.checkpoint();
                            let _ = ack.send(());
                        }
                    }
                }
            })
            .expect("a thread can be spawned");
        Persister { tx }
    }

    pub(super) fn send(&self, batch: Batch) {
        if !batch.is_empty() {
            let _ = self.tx.send(PersistMsg::Batch(batch));
        }
    }

    /// Waits until everything sent so far is written.
    pub(super) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(PersistMsg::Flush(ack)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(10), done).await;
        }
    }
}
