//! The face's end of answering from Mimesis (`mimesis_core::approval`): a socket in the
//! data dir, owner-only, that the `PermissionRequest` hook and `mimesis pending / approve
//! / deny` connect to. A hook's request stays open while its connection does: answered
//! here, cancelled when its session's dialog was answered elsewhere, gone when the hook is.
//!
//! Only the same user gets in: the socket file is mode 0600 and every connection's peer
//! uid is checked. Request ids are 128 random bits and single-use. Nothing here decides:
//! [`Approvals::decide`] is called for a user's explicit action only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{oneshot, watch};

use mimesis_core::approval::{
    self, Answered, Behavior, Decided, Decision, MAX_LINE, Pending, PendingList, ToFace, Via,
};
use mimesis_core::clock::{Clock, Mono, Timestamp};
use mimesis_core::ids::SessionId;

/// How long a client has to send its one line.
const READ_LINE: Duration = Duration::from_secs(5);

/// How often open requests are checked against the wait (`watch.answerWaitSecs`); with none
/// open there is no check.
const EXPIRY_CHECK: Duration = Duration::from_secs(1);

/// Told of every answer given here (to log it and show it in the session's timeline).
pub type OnAnswer = Arc<dyn Fn(&Answered) + Send + Sync>;

/// The open requests of this face. Cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    open: Arc<Mutex<Vec<Open>>>,
    changed: watch::Sender<Vec<Pending>>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
    /// How long a request waits for an answer here before Claude Code's dialog alone
    /// decides.
    wait: Arc<Mutex<Duration>>,
    on_answer: OnAnswer,
}

struct Open {
    pending: Pending,
    since: Mono,
    reply: oneshot::Sender<Decision>,
}

/// Appends one answer to the data dir's answers log (created owner-only), in one write.
pub fn log_answer(data_dir: &Path, answered: &Answered) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut line = serde_json::to_vec(answered)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(approval::answers_path(data_dir))?;
    f.write_all(&line)
}

/// A fresh id for an answer that had no request (a supervised session's dialog).
pub fn answer_id() -> String {
    approval::new_id(random())
}

impl Approvals {
    /// Serves the socket of `data_dir`, unless another running face serves it already
    /// (then `None`: that face answers). Must be called within a tokio runtime.
    pub fn serve(data_dir: &Path, clock: Arc<dyn Clock>, on_answer: OnAnswer) -> Option<Approvals> {
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
        let me = Approvals {
            open: Arc::new(Mutex::new(Vec::new())),
            changed,
            clock,
            path,
            wait: Arc::new(Mutex::new(approval::DEFAULT_WAIT)),
            on_answer,
        };
        tokio::spawn(me.clone().accept(listener));
        let expiring = me.clone();
        tokio::spawn(async move {
            let mut changes = expiring.subscribe();
            let mut every = tokio::time::interval(EXPIRY_CHECK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                // Nothing open, nothing to expire: no timer wakes an idle face.
                if changes.borrow_and_update().is_empty() {
                    if changes.changed().await.is_err() {
                        return;
                    }
                    continue;
                }
                every.tick().await;
                if !expiring.path.exists() {
                    return;
                }
                expiring.expire();
            }
        });
        Some(me)
    }

    /// How long a request waits for an answer here (the setting `watch.answerWaitSecs`).
    pub fn set_wait(&self, wait: Duration) {
        *self.wait.lock().unwrap_or_else(|e| e.into_inner()) = wait;
    }

    /// Ends the requests that waited longer than the wait, by the face's clock: their hook
    /// returns no decision and Claude Code's dialog decides. Returns how many ended.
    pub fn expire(&self) -> usize {
        let wait = *self.wait.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.mono();
        let gone: Vec<Open> = {
            let mut open = self.lock();
            let (gone, keep) = open.drain(..).partition(|o| now.since(o.since) >= wait);
            *open = keep;
            gone
        };
        let n = gone.len();
        if n > 0 {
            for o in gone {
                tracing::info!(session = %o.pending.request.session_id, "a permission request waited too long; the terminal's dialog decides");
                let _ = o.reply.send(Decision::default());
            }
            self.publish();
        }
        n
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
    /// `answers` answer an AskUserQuestion request (with `allow` only; checked against its
    /// questions). The answer is logged for the session's timeline, marked with `via`.
    pub fn decide(
        &self,
        target: &str,
        behavior: Behavior,
        message: Option<String>,
        answers: Option<BTreeMap<String, String>>,
        answers_in_order: Option<Vec<String>>,
        via: Via,
    ) -> Result<Pending, String> {
        let target = target.trim();
        let (open, answers) = {
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
                    sessions.sort_unstable();
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
            let answers = match (answers, answers_in_order) {
                (Some(a), _) => Some(a),
                (None, Some(list)) => Some(approval::answers_by_question(&open[i].pending.request, &list)?),
                (None, None) => None,
            };
            if let Some(a) = &answers {
                if behavior != Behavior::Allow {
                    return Err("answers go with approve, not deny".into());
                }
                approval::check_answers(&open[i].pending.request, a)?;
            }
            (open.remove(i), answers)
        };
        self.publish();
        let message = message.filter(|m| !m.trim().is_empty() && behavior == Behavior::Deny);
        // (A hook that went away meanwhile gets nothing: its request is gone either way.)
        let _ =
            open.reply.send(Decision { behavior: Some(behavior), message: message.clone(), answers: answers.clone() });
        tracing::info!(session = %open.pending.request.session_id, ?behavior, "a permission request answered from Mimesis");
        let request = &open.pending.request;
        let answered = Answered {
            session_id: request.session_id.clone(),
            at: self.clock.now(),
            id: open.pending.id.clone(),
            tool: Some(request.tool.clone()),
            target: request.target.clone(),
            behavior: match behavior {
                Behavior::Allow => "allow",
                Behavior::Deny => "deny",
            }
            .into(),
            choice: None,
            message,
            answers,
            via,
        };
        self.record(&answered);
        Ok(open.pending)
    }

    fn record(&self, answered: &Answered) {
        (self.on_answer)(answered);
    }

    /// The session's dialog was answered somewhere else (its terminal): it wrote a record
    /// at `moved_on_at`, after its requests opened before then were asked. Those end with
    /// no decision; a request opened after it (the next dialog, asked before the record
    /// that ended the last one was read) stays.
    pub fn cancel_session(&self, id: &SessionId, moved_on_at: Timestamp) {
        let gone: Vec<Open> = {
            let mut open = self.lock();
            let (gone, keep) =
                open.drain(..).partition(|o| &o.pending.request.session_id == id && o.pending.since < moved_on_at);
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
            Ok(ToFace::Decide { target, behavior, message, answers, answers_in_order, via }) => {
                json(&match self.decide(&target, behavior, message, answers, answers_in_order, via) {
                    Ok(p) => Decided { answered: Some(p), error: None },
                    Err(e) => Decided { answered: None, error: Some(e) },
                })
            }
            Ok(ToFace::Request(request)) => {
                let (tx, rx) = oneshot::channel();
                let id = approval::new_id(random());
                let pending = Pending { id: id.clone(), request, since: self.clock.now() };
                tracing::debug!(session = %pending.request.session_id, since = ?pending.since, "a permission request is open");
                self.lock().push(Open { pending, since: self.clock.mono(), reply: tx });
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
            detail: None,
        }
    }

    fn serve(dir: &Path) -> Option<Approvals> {
        Approvals::serve(dir, Arc::new(SystemClock), Arc::new(|_| {}))
    }

    /// A face on a manual clock whose requests wait 120 s for an answer.
    fn face_waiting_120_s(dir: &Path) -> (Arc<mimesis_core::clock::ManualClock>, Approvals) {
        use mimesis_core::clock::{ManualClock, Timestamp};
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let a = Approvals::serve(dir, clock.clone(), Arc::new(|_| {})).expect("serving");
        a.set_wait(Duration::from_secs(120));
        (clock, a)
    }

    async fn wait_open(a: &Approvals, n: usize) {
        let mut rx = a.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|p| p.len() == n)).await;
        assert_eq!(a.pending().len(), n);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hooks_request_waits_for_the_users_answer_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = serve(dir.path()).expect("serving");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(approval::socket_path(dir.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
        assert!(serve(dir.path()).is_none(), "one face answers");

        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &request("abc-1"), Duration::from_secs(30)));
        wait_open(&a, 1).await;
        let id = a.pending()[0].id.clone();
        assert_eq!(id.len(), 32, "128 bits");
        let err = a.decide("zzz", Behavior::Allow, None, None, None, Via::Cli).unwrap_err();
        assert!(err.contains("no open permission request matches"), "{err}");
        let answered = a.decide("abc", Behavior::Deny, Some("not now".into()), None, None, Via::Cli).unwrap();
        assert_eq!(answered.id, id);
        let d = hook.await.unwrap();
        assert_eq!(d, Decision { behavior: Some(Behavior::Deny), message: Some("not now".into()), answers: None });
        assert!(a.decide(&id, Behavior::Allow, None, None, None, Via::Cli).is_err(), "single-use");

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
        let a = serve(dir.path()).expect("serving");
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
        let asked = a.pending()[0].since;
        // A record the session wrote before this request was asked (the end of the last
        // dialog, read late) does not end it; one written after it does.
        a.cancel_session(&SessionId::parse("s-term").unwrap(), asked);
        a.cancel_session(&SessionId::parse("s-term").unwrap(), Timestamp::from_millis(asked.millis() - 5));
        assert_eq!(a.pending().len(), 1, "a request asked after the record stays open");
        a.cancel_session(&SessionId::parse("s-term").unwrap(), Timestamp::from_millis(asked.millis() + 1));
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
        let _a = serve(dir.path()).expect("serving");
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn questions_are_answered_by_question_and_every_answer_is_recorded_with_where_it_came_from() {
        use mimesis_core::approval::{Detail, Question, QuestionOption};
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Mutex::new(Vec::<Answered>::new()));
        let on: OnAnswer = {
            let seen = seen.clone();
            Arc::new(move |a| seen.lock().unwrap().push(a.clone()))
        };
        let a = Approvals::serve(dir.path(), Arc::new(SystemClock), on).expect("serving");
        let mut q = request("q-1");
        q.tool = "AskUserQuestion".into();
        let option = |l: &str| QuestionOption { label: l.into(), description: None };
        q.detail = Some(Detail::Questions {
            questions: vec![Question {
                question: "Which database?".into(),
                header: Some("DB".into()),
                options: vec![option("Postgres"), option("SQLite")],
                multi_select: false,
            }],
        });
        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &q, Duration::from_secs(30)));
        wait_open(&a, 1).await;
        let wrong: BTreeMap<String, String> = [("Which colour?".to_owned(), "red".to_owned())].into();
        let err = a.decide("q-1", Behavior::Allow, None, Some(wrong), None, Via::Window).unwrap_err();
        assert!(err.contains("no answer to"), "{err}");
        let err = a.decide("q-1", Behavior::Allow, None, None, Some(vec![]), Via::Cli).unwrap_err();
        assert!(err.contains("1 question(s) asked, 0 answer(s) given"), "{err}");
        assert_eq!(a.pending().len(), 1, "a wrong answer leaves the request open");
        a.decide("q-1", Behavior::Allow, None, None, Some(vec!["SQLite".into()]), Via::Notification).unwrap();
        let d = hook.await.unwrap();
        let expected: BTreeMap<String, String> = [("Which database?".to_owned(), "SQLite".to_owned())].into();
        assert_eq!(d.answers.as_ref(), Some(&expected));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].via, seen[0].behavior.as_str()), (Via::Notification, "allow"));
        assert_eq!(seen[0].sentence(), "Answered from a notification: Which database? → SQLite");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_ends_with_no_decision_once_it_waited_the_setting_by_the_faces_clock() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, a) = face_waiting_120_s(dir.path());
        let data = dir.path().to_owned();
        let hook = tokio::task::spawn_blocking(move || ask(&data, &request("w-1"), Duration::from_secs(60)));
        wait_open(&a, 1).await;
        clock.advance(Duration::from_secs(119));
        assert_eq!(a.expire(), 0, "not before the wait");
        clock.advance(Duration::from_secs(1));
        assert_eq!(a.expire(), 1);
        assert_eq!(hook.await.unwrap(), Decision::default(), "the terminal's dialog decides");
        assert!(a.pending().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_face_expires_requests_on_its_own_again_after_it_had_none_open() {
        let dir = tempfile::tempdir().unwrap();
        let (clock, a) = face_waiting_120_s(dir.path());
        for s in ["w-1", "w-2"] {
            let data = dir.path().to_owned();
            let hook = tokio::task::spawn_blocking(move || ask(&data, &request(s), Duration::from_secs(60)));
            wait_open(&a, 1).await;
            clock.advance(Duration::from_secs(120));
            let decided = tokio::time::timeout(Duration::from_secs(20), hook).await;
            assert_eq!(decided.expect("expired without a call").unwrap(), Decision::default(), "{s}");
            wait_open(&a, 0).await;
        }
    }

    #[test]
    fn answers_are_logged_owner_only_and_read_back_per_session() {
        use mimesis_core::clock::Timestamp;
        let dir = tempfile::tempdir().unwrap();
        let answered = |s: &str, at: i64| Answered {
            session_id: SessionId::parse(s).unwrap(),
            at: Timestamp::from_millis(at),
            id: answer_id(),
            tool: Some("Bash".into()),
            target: Some("ls".into()),
            behavior: "deny".into(),
            choice: None,
            message: Some("not here".into()),
            answers: None,
            via: Via::Tray,
        };
        log_answer(dir.path(), &answered("s-a", 1)).unwrap();
        log_answer(dir.path(), &answered("s-b", 2)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(approval::answers_path(dir.path()))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{torn\n[[[[\n"))
            .unwrap();
        log_answer(dir.path(), &answered("s-a", 3)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(approval::answers_path(dir.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let items = mimesis_watch::timeline_view::answers_of(dir.path(), &SessionId::parse("s-a").unwrap());
        assert_eq!(items.len(), 2, "the other session's and the broken lines are left out");
        let v = serde_json::to_value(&items[0]).unwrap();
        assert_eq!(v["kind"], "answer");
        assert_eq!(v["via"], "tray");
        assert_eq!(v["text"], "Denied from the tray menu, telling Claude: “not here”");
    }

    #[test]
    fn a_face_that_dies_while_a_hook_waits_never_turns_into_an_allow() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let a = rt.block_on(async { serve(dir.path()) }).expect("serving");
        let data = dir.path().to_owned();
        let hook = std::thread::spawn(move || ask(&data, &request("s-crash"), Duration::from_secs(30)));
        let mut rx = a.subscribe();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|p| p.len() == 1)).await })
            .expect("the request arrived")
            .unwrap();
        // The face goes away with everything it ran (as when the app crashes).
        drop(rx);
        drop(a);
        rt.shutdown_background();
        assert_eq!(hook.join().unwrap(), Decision::default(), "no decision: the terminal's dialog decides");
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
