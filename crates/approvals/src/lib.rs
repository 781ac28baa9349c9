//! The face's end of answering from Mimesis (`mimesis_core::approval`): a socket in the
//! data dir, owner-only, that the `PermissionRequest` hook and `mimesis pending / approve
//! / deny` connect to. A hook's request stays open while its connection does: answered
//! here, cancelled when its session's dialog was answered elsewhere, gone when the hook is.
//!
//! Only the same user gets in: the socket file is mode 0600 and every connection's peer
//! uid is checked. Request ids are `req_` and 128 random bits, single-use. Nothing here
//! decides: [`Approvals::decide`] is called for a user's explicit action only.
//!
//! Beside the hooks' requests it lists the dialogs no hook asks about (auto mode's own and
//! the per-call dialog after it, any dialog of a session without Mimesis's hooks), which
//! the wiring's `answering` keeps in step with the sessions ([`Approvals::sync_dialogs`]) and
//! answers by typing into the session's screen ([`dialogs`]).
//!
//! One face of a data dir serves the socket at a time ([`owner`]): another waits and takes
//! over when it stops. At most [`MAX_OPEN`] requests are held open, each one connection;
//! one beyond them is refused at once (its dialog decides), and connections still being
//! read are bounded too, so that the face's file descriptors stay for its watcher.

mod dialogs;
mod owner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};

use mimesis_core::approval::{
    self, Answered, Behavior, Decided, Decision, MAX_LINE, MAX_OPEN, PAGE_BYTES, Pending, PendingList, ToFace, Via,
};
use mimesis_core::clock::{Clock, Mono, Timestamp};
use mimesis_core::ids::SessionId;

pub use dialogs::{DialogAnswerer, DialogCall, Listed, NotTyped};
pub use owner::LOCK;

/// How long a client has to send its one line.
const READ_LINE: Duration = Duration::from_secs(5);

/// How many connections are read and answered at once (besides the held requests): more
/// wait in the socket's backlog, costing the face nothing.
const MAX_CONNECTIONS: usize = 32;

/// How often open requests are checked against the wait (`watch.answerWaitSecs`); with none
/// open there is no check.
const EXPIRY_CHECK: Duration = Duration::from_secs(1);

/// Told of every answer given here (to log it and show it in the session's timeline).
pub type OnAnswer = Arc<dyn Fn(&Answered) + Send + Sync>;

/// How the face calls a session it follows (its folder and title; may be empty), or `None`
/// for a session in no roster.
pub type Roster = Arc<dyn Fn(&SessionId) -> Option<String> + Send + Sync>;

/// The open requests of this face. Cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    open: Arc<Mutex<OpenList>>,
    changed: watch::Sender<Vec<Pending>>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
    /// How long a request waits for an answer here before Claude Code's dialog alone
    /// decides.
    wait: Arc<Mutex<Duration>>,
    on_answer: OnAnswer,
    roster: Arc<RwLock<Option<Roster>>>,
    serving: watch::Sender<Serving>,
    /// The lock and the socket while this face serves.
    held: Arc<Mutex<Option<(owner::Lock, owner::Bound)>>>,
    connections: Arc<Semaphore>,
    /// Types an answer into a dialog's screen (set by the wiring's `answering`).
    answerer: Arc<RwLock<Option<DialogAnswerer>>>,
}

/// An answer given: the request, and for a dialog the label of the option typed.
#[derive(Clone, Debug)]
pub struct Given {
    pub request: Pending,
    pub choice: Option<String>,
}

/// How a request to answer is named.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// Its whole id.
    Id(&'a str),
    /// What the user typed: see [`approval::resolve`].
    Typed(&'a str),
}

/// Whether this face serves the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serving {
    /// Another face does; this one takes over when it stops.
    Waiting,
    Yes,
    /// Not (any more): closed, or the socket could not be made.
    No,
}

#[derive(Default)]
struct OpenList {
    list: Vec<Open>,
    /// The number of the next request: the list's order and its pages' cursor.
    next_seq: u64,
}

struct Open {
    pending: Pending,
    seq: u64,
    since: Mono,
    /// A hook's request: where its decision goes. `None`: a dialog ([`Open::dialog`]).
    reply: Option<oneshot::Sender<Decision>>,
    dialog: Option<dialogs::OpenDialog>,
}

impl Open {
    /// Ends a hook's request with `d` (a dialog has nobody waiting).
    fn end(self, d: Decision) {
        if let Some(r) = self.reply {
            let _ = r.send(d);
        }
    }
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
    /// Serves the socket of `data_dir`; when another running face serves it, waits to take
    /// over from it ([`Serving::Waiting`]). Must be called within a tokio runtime.
    pub fn serve(data_dir: &Path, clock: Arc<dyn Clock>, on_answer: OnAnswer) -> Approvals {
        let path = approval::socket_path(data_dir);
        let (changed, _) = watch::channel(Vec::new());
        let (serving, _) = watch::channel(Serving::No);
        let me = Approvals {
            open: Arc::new(Mutex::new(OpenList::default())),
            changed,
            clock,
            path,
            wait: Arc::new(Mutex::new(approval::DEFAULT_WAIT)),
            on_answer,
            roster: Arc::new(RwLock::new(None)),
            serving,
            held: Arc::new(Mutex::new(None)),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            answerer: Arc::new(RwLock::new(None)),
        };
        let lock_path = data_dir.join(LOCK);
        match owner::Lock::try_take(&lock_path) {
            Ok(Some(lock)) => me.take_over(lock),
            Ok(None) => {
                tracing::info!(socket = %me.path.display(), "another running Mimesis answers permission requests; this one takes over when it stops");
                me.serving.send_replace(Serving::Waiting);
                me.wait_for_lock(lock_path);
            }
            Err(e) => {
                tracing::warn!(lock = %lock_path.display(), error = %e, "cannot answer permission requests from here");
            }
        }
        tokio::spawn(me.clone().expire_on_time());
        me
    }

    /// Waits in a thread of its own for the lock, then serves (unless this face closed or
    /// went away meanwhile: then the lock is let go at once).
    fn wait_for_lock(&self, lock_path: PathBuf) {
        let (tx, rx) = oneshot::channel::<owner::Lock>();
        let spawned = std::thread::Builder::new().name("approvals-lock".into()).spawn(move || match owner::Lock::wait(
            &lock_path,
        ) {
            Ok(lock) => drop(tx.send(lock)),
            Err(e) => {
                tracing::warn!(lock = %lock_path.display(), error = %e, "cannot wait to answer permission requests")
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot wait to answer permission requests");
            self.serving.send_replace(Serving::No);
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let Ok(lock) = rx.await else { return };
            if *me.serving.borrow() == Serving::Waiting {
                tracing::info!(socket = %me.path.display(), "the Mimesis that answered permission requests stopped; this one answers them now");
                me.take_over(lock);
            }
        });
    }

    /// Holding the lock: binds the socket and accepts.
    fn take_over(&self, lock: owner::Lock) {
        match owner::Bound::bind(&self.path) {
            Ok((listener, bound)) => {
                *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some((lock, bound));
                self.serving.send_replace(Serving::Yes);
                tokio::spawn(self.clone().accept(listener));
            }
            Err(e) => {
                tracing::warn!(socket = %self.path.display(), error = %e, "cannot answer permission requests from here");
                self.serving.send_replace(Serving::No);
            }
        }
    }

    /// Whether this face serves the socket, now and after every change.
    pub fn serving(&self) -> watch::Receiver<Serving> {
        self.serving.subscribe()
    }

    pub fn is_serving(&self) -> bool {
        *self.serving.borrow() == Serving::Yes
    }

    /// Stops serving: the requests open here end with no decision (their dialogs decide),
    /// the socket is removed if it is still the one bound here, and the lock goes to a face
    /// that waits for it. For a face on its way out (SIGTERM, SIGINT, quit).
    pub fn close(&self) {
        self.serving.send_replace(Serving::No);
        if let Some((lock, bound)) = self.held.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bound.remove();
            drop(lock);
        }
        let gone: Vec<Open> = self.lock().list.drain(..).collect();
        if !gone.is_empty() {
            for o in gone {
                o.end(Decision::default());
            }
            self.publish();
        }
    }

    /// How the face knows the sessions it follows: requests are marked with it.
    pub fn set_roster(&self, roster: Roster) {
        *self.roster.write().unwrap_or_else(|e| e.into_inner()) = Some(roster);
        self.publish();
    }

    /// The whole roster was read again: the requests are shown again if there are any.
    pub fn set_roster_again(&self) {
        if !self.lock().list.is_empty() {
            self.publish();
        }
    }

    /// A session joined or left the roster: its requests are shown again if it has any.
    pub fn roster_changed(&self, id: &SessionId) {
        if self.lock().list.iter().any(|o| &o.pending.request.session_id == id) {
            self.publish();
        }
    }

    /// How long a request waits for an answer here (the setting `watch.answerWaitSecs`).
    pub fn set_wait(&self, wait: Duration) {
        *self.wait.lock().unwrap_or_else(|e| e.into_inner()) = wait;
    }

    async fn expire_on_time(self) {
        let mut changes = self.subscribe();
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
            if *self.serving.borrow() == Serving::No {
                return;
            }
            self.expire();
        }
    }

    /// Ends the hooks' requests that waited longer than the wait, by the face's clock:
    /// their hook returns no decision and Claude Code's dialog decides. Returns how many
    /// ended. (A dialog's request lasts while its dialog does.)
    pub fn expire(&self) -> usize {
        let wait = self.wait();
        let now = self.clock.mono();
        let gone: Vec<Open> = {
            let mut open = self.lock();
            let (gone, keep) = open.list.drain(..).partition(|o| o.reply.is_some() && now.since(o.since) >= wait);
            open.list = keep;
            gone
        };
        let n = gone.len();
        if n > 0 {
            for o in gone {
                tracing::info!(session = %o.pending.request.session_id, "a permission request waited too long; the terminal's dialog decides");
                o.end(Decision::default());
            }
            self.publish();
        }
        n
    }

    /// How long a hook's request waits for an answer here.
    pub fn wait(&self) -> Duration {
        *self.wait.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open requests, oldest first, each marked with whether its session is known.
    pub fn pending(&self) -> Vec<Pending> {
        let list: Vec<Pending> = self.lock().list.iter().map(|o| o.pending.clone()).collect();
        self.marked(list)
    }

    fn marked(&self, mut list: Vec<Pending>) -> Vec<Pending> {
        let roster = self.roster.read().unwrap_or_else(|e| e.into_inner()).clone();
        for p in &mut list {
            let name = roster.as_ref().and_then(|r| r(&p.request.session_id));
            p.known_session = name.is_some();
            p.session_name = name.filter(|n| !n.trim().is_empty());
        }
        list
    }

    /// A page of the open requests: those after `cursor` (from the start without one), up
    /// to [`PAGE_BYTES`] of JSON and at least one; `next` names the page after it.
    pub fn page(&self, cursor: Option<&str>) -> Result<PendingList, NotACursor> {
        let after = match cursor {
            None => None,
            Some(c) => Some(c.parse::<u64>().map_err(|_| NotACursor(c.to_owned()))?),
        };
        let (items, more) = {
            let open = self.lock();
            let rest: Vec<&Open> = open.list.iter().filter(|o| after.is_none_or(|a| o.seq > a)).collect();
            let mut bytes = 0;
            let mut page = Vec::new();
            for o in &rest {
                let size = serde_json::to_vec(&o.pending).map_or(0, |v| v.len());
                if !page.is_empty() && bytes + size > PAGE_BYTES {
                    break;
                }
                bytes += size;
                page.push((o.pending.clone(), o.seq));
            }
            let more = page.len() < rest.len();
            (page, more)
        };
        let next = if more { items.last().map(|(_, seq)| seq.to_string()) } else { None };
        Ok(PendingList { pending: self.marked(items.into_iter().map(|(p, _)| p).collect()), next })
    }

    /// The open requests now and after every change.
    pub fn subscribe(&self) -> watch::Receiver<Vec<Pending>> {
        self.changed.subscribe()
    }

    /// The user's answer to one request: by its whole id (the window, the tray, a
    /// notification), or by a target the user typed (`mimesis approve/deny`: a request id
    /// or a session id, or a prefix of either that names a single request;
    /// [`approval::resolve`] refuses anything ambiguous). `answers` answer an
    /// AskUserQuestion request (with `allow` only; checked against its questions). A
    /// dialog's request is answered by typing into the session's screen, and returns once
    /// the dialog is gone (or says why not). The answer is logged for the session's
    /// timeline, marked with `via`.
    pub async fn decide(
        &self,
        target: Target<'_>,
        behavior: Behavior,
        message: Option<String>,
        answers: Option<BTreeMap<String, String>>,
        answers_in_order: Option<Vec<String>>,
        via: Via,
    ) -> Result<Given, DecideError> {
        let (target, exact) = match target {
            Target::Id(id) => (id, true),
            Target::Typed(t) => (t, false),
        };
        if *self.serving.borrow() != Serving::Yes {
            return Err(DecideError::NotServing);
        }
        let message = message.filter(|m| !m.trim().is_empty() && behavior == Behavior::Deny);
        let taken = {
            let mut open = self.lock();
            let i = {
                let all: Vec<&Pending> = open.list.iter().map(|o| &o.pending).collect();
                approval::resolve(target, &all, exact)?
            };
            if open.list[i].dialog.is_some() {
                let call = self.dialog_call(&mut open.list[i], behavior, message.clone(), answers, answers_in_order)?;
                Taken::Dialog(call, open.list[i].pending.clone())
            } else {
                let request = &open.list[i].pending.request;
                let answers = match (answers, answers_in_order) {
                    (Some(a), _) => Some(a),
                    (None, Some(list)) => Some(approval::answers_by_question(request, &list)?),
                    (None, None) => None,
                };
                if let Some(a) = &answers {
                    if behavior != Behavior::Allow {
                        return Err(DecideError::AnswersWithDeny);
                    }
                    approval::check_answers(request, a)?;
                }
                Taken::Hook(open.list.remove(i), answers)
            }
        };
        let (open, answers) = match taken {
            Taken::Dialog(call, pending) => return self.answer_dialog(call, pending, behavior, via).await,
            Taken::Hook(open, answers) => (open, answers),
        };
        self.publish();
        let decision =
            Decision { behavior: Some(behavior), message: message.clone(), answers: answers.clone(), error: None };
        let pending = open.pending.clone();
        // (A hook that went away meanwhile gets nothing: its request is gone either way.)
        open.end(decision);
        tracing::info!(session = %pending.request.session_id, ?behavior, "a permission request answered from Mimesis");
        self.record(&answered(&pending, behavior, None, message, answers, via, self.clock.now()));
        Ok(Given { request: self.marked(vec![pending]).remove(0), choice: None })
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
            let (gone, keep) = open.list.drain(..).partition(|o| {
                o.reply.is_some() && &o.pending.request.session_id == id && o.pending.since < moved_on_at
            });
            open.list = keep;
            gone
        };
        if !gone.is_empty() {
            for o in gone {
                o.end(Decision::default());
            }
            self.publish();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OpenList> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self) {
        self.changed.send_replace(self.pending());
    }

    async fn accept(self, listener: UnixListener) {
        let mut serving = self.serving();
        loop {
            // A connection is taken once it can be served: the others wait in the backlog.
            let permit = tokio::select! {
                p = self.connections.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return,
                },
                _ = serving.wait_for(|s| *s != Serving::Yes) => return,
            };
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = serving.wait_for(|s| *s != Serving::Yes) => return,
            };
            match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(self.clone().serve_one(stream, permit));
                }
                Err(e) => {
                    // (Out of file descriptors, say: try again shortly.)
                    tracing::warn!(error = %e, "the permission socket failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            let ours =
                self.held.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|(_, b)| b.still_ours());
            if !ours {
                tracing::warn!(socket = %self.path.display(), "the permission socket was removed; no longer answering");
                self.close();
                return;
            }
        }
    }

    async fn serve_one(self, stream: UnixStream, permit: OwnedSemaphorePermit) {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !stream.peer_cred().is_ok_and(|c| c.uid() == me) {
            tracing::warn!("refused a connection to the permission socket from another user");
            return;
        }
        let (rd, mut wr) = stream.into_split();
        let mut rd = BufReader::new(rd.take(MAX_LINE as u64 + 1));
        let mut line = Vec::new();
        if !matches!(tokio::time::timeout(READ_LINE, rd.read_until(b'\n', &mut line)).await, Ok(Ok(n)) if n > 0) {
            return;
        }
        let reply = match serde_json::from_slice::<ToFace>(&line) {
            Err(_) if line.len() > MAX_LINE => error_line(format!("a line longer than {} MiB", MAX_LINE >> 20)),
            Err(e) => error_line(format!("not a request: {e}")),
            Ok(ToFace::List { cursor }) => match self.page(cursor.as_deref()) {
                Ok(page) => json(&page),
                Err(e) => error_line(e.to_string()),
            },
            Ok(ToFace::Decide { target, behavior, message, answers, answers_in_order, via }) => {
                let decided =
                    self.decide(Target::Typed(&target), behavior, message, answers, answers_in_order, via).await;
                json(&match decided {
                    Ok(g) => Decided { answered: Some(g.request), choice: g.choice, error: None },
                    Err(e) => Decided { answered: None, choice: None, error: Some(e.to_string()) },
                })
            }
            Ok(ToFace::Request(request)) => {
                let (tx, rx) = oneshot::channel();
                let id = approval::new_id(random());
                let session = request.session_id.clone();
                let taken = {
                    let mut open = self.lock();
                    if open.list.len() >= MAX_OPEN {
                        false
                    } else {
                        let seq = open.next_seq;
                        open.next_seq += 1;
                        let pending = Pending::hook(id.clone(), request, self.clock.now());
                        open.list.push(Open { pending, seq, since: self.clock.mono(), reply: Some(tx), dialog: None });
                        true
                    }
                };
                if !taken {
                    tracing::warn!(session = %session, "{MAX_OPEN} permission requests are open already; one more was left to its terminal's dialog");
                    let d = Decision {
                        error: Some(format!(
                            "Mimesis holds {MAX_OPEN} open permission requests already: this one is left to Claude Code's own dialog"
                        )),
                        ..Decision::default()
                    };
                    let _ = wr.write_all(format!("{}\n", json(&d)).as_bytes()).await;
                    let _ = wr.shutdown().await;
                    return;
                }
                tracing::debug!(session = %session, "a permission request is open");
                self.publish();
                // Held: counted by the open list, not among the connections being read.
                drop(permit);
                let mut probe = [0u8; 1];
                let decision = tokio::select! {
                    d = rx => d.unwrap_or_default(),
                    // The hook went away (Claude Code ended it, the dialog was answered).
                    _ = rd.read(&mut probe) => {
                        let removed = {
                            let mut open = self.lock();
                            let before = open.list.len();
                            open.list.retain(|o| o.pending.id != id);
                            before != open.list.len()
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

/// A request taken to be answered.
enum Taken {
    Hook(Open, Option<BTreeMap<String, String>>),
    Dialog(DialogCall, Pending),
}

/// The log line of an answer.
fn answered(
    p: &Pending,
    behavior: Behavior,
    choice: Option<String>,
    message: Option<String>,
    answers: Option<BTreeMap<String, String>>,
    via: Via,
    at: Timestamp,
) -> Answered {
    let r = &p.request;
    Answered {
        session_id: r.session_id.clone(),
        at,
        id: p.id.clone(),
        tool: Some(r.tool.clone()),
        target: r.target.clone(),
        behavior: match behavior {
            Behavior::Allow => "allow",
            Behavior::Deny => "deny",
        }
        .into(),
        choice,
        message,
        answers,
        via,
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| error_line(e.to_string()))
}

fn error_line(e: String) -> String {
    serde_json::json!({ "error": e }).to_string()
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

/// A cursor of the list of open requests that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a cursor of the list")]
pub struct NotACursor(pub String);

/// Why a user's answer to a request was not given: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("another running Mimesis answers permission requests")]
    NotServing,
    #[error(transparent)]
    Target(#[from] mimesis_core::approval::ResolveError),
    #[error(transparent)]
    Answers(#[from] mimesis_core::approval::AnswersError),
    #[error("answers go with approve, not deny")]
    AnswersWithDeny,
    #[error("an answer to {id} is being typed already")]
    BeingTyped { id: String },
    #[error(
        "{} of session {short} cannot be answered from here: {why}; `mimesis focus {short}` brings its terminal forward",
        .kind.words()
    )]
    FromTerminalOnly { kind: mimesis_core::dialog::DialogKind, short: String, why: String },
    #[error(
        "{} on the screen of session {short} takes no message from here: deny without one, or answer it in its terminal",
        .kind.words()
    )]
    NoMessage { kind: mimesis_core::dialog::DialogKind, short: String },
    #[error("{} takes one option, {named} were named", .kind.words())]
    OneOption { kind: mimesis_core::dialog::DialogKind, named: usize },
    #[error("{} asks no questions: approve or deny it", .kind.words())]
    NoQuestions { kind: mimesis_core::dialog::DialogKind },
    #[error("could not answer {what} of session {short} {channel}: {why}")]
    NotAnswered { what: &'static str, short: String, channel: &'static str, why: NotTyped },
}
