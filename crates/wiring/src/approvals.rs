//! The face's end of answering from Mimesis (`mimesis_core::approval`): a socket in the
//! data dir, owner-only, that the `PermissionRequest` hook and `mimesis pending / approve
//! / deny` connect to. A hook's request stays open while its connection does: answered
//! here, cancelled when its session's dialog was answered elsewhere, gone when the hook is.
//!
//! Only the same user gets in: the socket file is mode 0600 and every connection's peer
//! uid is checked. Request ids are 128 random bits and single-use. Nothing here decides:
//! [`Approvals::decide`] is called for a user's explicit action only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{oneshot, watch};

use mimesis_core::approval::{self, Behavior, Decided, Decision, MAX_LINE, Pending, PendingList, ToFace};
use mimesis_core::clock::Clock;
use mimesis_core::ids::SessionId;

/// How long a client has to send its one line.
const READ_LINE: Duration = Duration::from_secs(5);

/// The open requests of this face. Cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    open: Arc<Mutex<Vec<Open>>>,
    changed: watch::Sender<Vec<Pending>>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
}

struct Open {
    pending: Pending,
    reply: oneshot::Sender<Decision>,
}

impl Approvals {
    /// Serves the socket of `data_dir`, unless another running face serves it already
    /// (then `None`: that face answers). Must be called within a tokio runtime.
    pub fn serve(data_dir: &Path, clock: Arc<dyn Clock>) -> Option<Approvals> {
        let path = approval::socket_path(data_dir);
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            tracing::info!(socket = %path.display(), "another running Mimesis answers permission requests");
            return None;
        }
        let _ = std::fs::remove_file(&path); // a dead face's
        let listener = match bind_private(&path) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(socket = %path.display(), error = %e, "cannot answer permission requests from here");
                return None;
            }
        };
        let (changed, _) = watch::channel(Vec::new());
        let me = Approvals { open: Arc::new(Mutex::new(Vec::new())), changed, clock, path };
        tokio::spawn(me.clone().accept(listener));
        Some(me)
    }

    /// The open requests, oldest first.
    pub fn pending(&self) -> Vec<Pending> {
        self.lock().iter().map(|o| o.pending.clone()).collect()
    }

    /// The open requests now and after every change.
    pub fn subscribe(&self) -> watch::Receiver<Vec<Pending>> {
        self.changed.subscribe()
    }

    /// The user's answer to one request: `target` is its id, or a session id or a prefix
    /// of one that names a single session with an open request (its oldest then).
    pub fn decide(&self, target: &str, behavior: Behavior, message: Option<String>) -> Result<Pending, String> {
        let target = target.trim();
        let open = {
            let mut open = self.lock();
            let i = match open.iter().position(|o| o.pending.id == target) {
                Some(i) => i,
                None if target.is_empty() => return Err("name a request id or a session id".into()),
                None => {
                    let matching: Vec<usize> = (0..open.len())
                        .filter(|&i| open[i].pending.request.session_id.as_str().starts_with(target))
                        .collect();
                    let mut sessions: Vec<&str> =
                        matching.iter().map(|&i| open[i].pending.request.session_id.as_str()).collect();
                    sessions.dedup();
                    match (matching.first(), sessions.len()) {
                        (None, _) => {
                            return Err(format!(
                                "no open permission request matches {target:?} (it may have been answered already; `mimesis pending` lists the open ones)"
                            ));
                        }
                        (Some(&i), 1) => i,
                        _ => return Err(format!("{target:?} matches several sessions: {}", sessions.join(", "))),
                    }
                }
            };
            open.remove(i)
        };
        self.publish();
        let message = message.filter(|m| !m.trim().is_empty() && behavior == Behavior::Deny);
        // (A hook that went away meanwhile gets nothing: its request is gone either way.)
        let _ = open.reply.send(Decision { behavior: Some(behavior), message });
        tracing::info!(session = %open.pending.request.session_id, ?behavior, "a permission request answered from Mimesis");
        Ok(open.pending)
    }

    /// The session's dialog was answered somewhere else (its terminal): its requests end
    /// with no decision.
    pub fn cancel_session(&self, id: &SessionId) {
        let gone: Vec<Open> = {
            let mut open = self.lock();
            let (gone, keep) = open.drain(..).partition(|o| &o.pending.request.session_id == id);
            *open = keep;
            gone
        };
        if !gone.is_empty() {
            for o in gone {
                let _ = o.reply.send(Decision::default());
            }
            self.publish();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self) {
        self.changed.send_replace(self.pending());
    }

    async fn accept(self, listener: UnixListener) {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(self.clone().serve_one(stream));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the permission socket failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            if !self.path.exists() {
                tracing::warn!(socket = %self.path.display(), "the permission socket was removed; no longer answering");
                return;
            }
        }
    }

    async fn serve_one(self, stream: UnixStream) {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !stream.peer_cred().is_ok_and(|c| c.uid() == me) {
            tracing::warn!("refused a connection to the permission socket from another user");
            return;
        }
        let (rd, mut wr) = stream.into_split();
        let mut rd = BufReader::new(rd.take(MAX_LINE as u64));
        let mut line = Vec::new();
        if !matches!(tokio::time::timeout(READ_LINE, rd.read_until(b'\n', &mut line)).await, Ok(Ok(n)) if n > 0) {
            return;
        }
        let reply = match serde_json::from_slice::<ToFace>(&line) {
            Err(e) => serde_json::json!({ "error": format!("not a request: {e}") }).to_string(),
            Ok(ToFace::List) => json(&PendingList { pending: self.pending() }),
            Ok(ToFace::Decide { target, behavior, message }) => json(&match self.decide(&target, behavior, message) {
                Ok(p) => Decided { answered: Some(p), error: None },
                Err(e) => Decided { answered: None, error: Some(e) },
            }),
            Ok(ToFace::Request(request)) => {
                let (tx, rx) = oneshot::channel();
                let id = approval::new_id(random());
                let pending = Pending { id: id.clone(), request, since: self.clock.now() };
                self.lock().push(Open { pending, reply: tx });
                self.publish();
                let mut probe = [0u8; 1];
                let decision = tokio::select! {
                    d = rx => d.unwrap_or_default(),
                    // The hook went away (Claude Code ended it, the dialog was answered).
                    _ = rd.read(&mut probe) => {
                        let removed = {
                            let mut open = self.lock();
                            let before = open.len();
                            open.retain(|o| o.pending.id != id);
                            before != open.len()
                        };
                        if removed {
                            self.publish();
                        }
                        return;
                    }
                };
                json(&decision)
            }
        };
        let _ = wr.write_all(format!("{reply}\n").as_bytes()).await;
        let _ = wr.shutdown().await;
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
}

/// 128 bits from the kernel's random source.
fn random() -> [u8; 16] {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        // (Never on Linux; still unguessable enough to be single-use.)
        b.copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    b
}

/// Binds the socket and makes it the owner's only. (Connecting needs write permission on
/// the socket: under the usual umask nobody else has it even before the chmod, and every
/// connection's peer uid is checked besides.)
fn bind_private(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::approval::Request;
    use mimesis_core::clock::SystemClock;
    use mimesis_hooks::approvals::{ClientError, ask, call};

    fn request(session: &str) -> Request {
        Request {
            session_id: SessionId::parse(session).unwrap(),
            tool: "Bash".into(),
            target: Some("rm -rf build".into()),
            cwd: None,
        }
    }

    async fn wait_open(a: &Approvals, n: usize) {
        let mut rx = a.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|p| p.len() == n)).await;
        assert_eq!(a.pending().len(), n);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hooks_request_waits_for_the_users_answer_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = Approvals::serve(dir.path(), Arc::new(SystemClock)).expect("serving");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(approval::socket_path(dir.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
        assert!(Approvals::serve(dir.path(), Arc::new(SystemClock)).is_none(), "one face answers");

        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &request("abc-1"), Duration::from_secs(30)));
        wait_open(&a, 1).await;
        let id = a.pending()[0].id.clone();
        assert_eq!(id.len(), 32, "128 bits");
        let err = a.decide("zzz", Behavior::Allow, None).unwrap_err();
        assert!(err.contains("no open permission request matches"), "{err}");
        let answered = a.decide("abc", Behavior::Deny, Some("not now".into())).unwrap();
        assert_eq!(answered.id, id);
        let d = hook.await.unwrap();
        assert_eq!(d, Decision { behavior: Some(Behavior::Deny), message: Some("not now".into()) });
        assert!(a.decide(&id, Behavior::Allow, None).is_err(), "single-use");

        // Over the socket, as the CLI does; the list is empty again.
        let data = dir.path().to_owned();
        let list: PendingList = tokio::task::spawn_blocking(move || call(&data, &ToFace::List, Duration::from_secs(5)))
            .await
            .unwrap()
            .unwrap();
        assert!(list.pending.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hook_that_goes_away_takes_its_request_with_it_and_a_cancel_answers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = Approvals::serve(dir.path(), Arc::new(SystemClock)).expect("serving");
        // A hook whose wait ends (as when Claude Code ends it): the request goes.
        let data = dir.path().to_owned();
        let short = tokio::task::spawn_blocking(move || ask(&data, &request("s-short"), Duration::from_millis(300)));
        wait_open(&a, 1).await;
        assert_eq!(short.await.unwrap(), Decision::default(), "no answer in time: no decision");
        wait_open(&a, 0).await;
        // The dialog answered elsewhere: the waiting hook returns with no decision.
        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &request("s-term"), Duration::from_secs(30)));
        wait_open(&a, 1).await;
        a.cancel_session(&SessionId::parse("s-term").unwrap());
        assert_eq!(hook.await.unwrap(), Decision::default());
        wait_open(&a, 0).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_user_cannot_reach_the_socket() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("(needs root to act as another user)");
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // Even with the folder open to all, the socket itself is the owner's only.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let _a = Approvals::serve(dir.path(), Arc::new(SystemClock)).expect("serving");
        let path = approval::socket_path(dir.path());
        let script = format!(
            "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect({:?})\nexcept OSError:\n sys.exit(3)\nsys.exit(0)",
            path.to_str().unwrap()
        );
        let status = tokio::task::spawn_blocking(move || {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("python3").args(["-c", &script]).uid(65534).gid(65534).status()
        })
        .await
        .unwrap();
        match status {
            Ok(s) => assert_eq!(s.code(), Some(3), "nobody could connect to the owner's socket"),
            Err(e) => eprintln!("(cannot run python3 as another user: {e})"),
        }
    }

    #[test]
    fn with_no_face_the_hook_returns_at_once_with_no_decision() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ask(dir.path(), &request("s"), Duration::from_secs(30)), Decision::default());
        // A dead face's socket file: refused, not waited on.
        let stale = std::os::unix::net::UnixListener::bind(approval::socket_path(dir.path())).unwrap();
        drop(stale);
        assert_eq!(ask(dir.path(), &request("s"), Duration::from_secs(30)), Decision::default());
        let err = call::<PendingList>(dir.path(), &ToFace::List, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, ClientError::NoFace(_)), "{err}");
        assert!(err.to_string().contains("no Mimesis is running"), "{err}");
    }
}
