//! One host kept connected: [`HostFeed`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mimesis_core::clock::{Clock, Mono, Timestamp};
use mimesis_core::ids::SessionId;
use mimesis_core::remote::{
    self, Destination, Failure, FromRemote, HostLink, HostState, MAX_HOST_BYTES, MAX_HOST_SESSIONS, ToRemote,
};
use mimesis_core::search::{Request, Results};
use mimesis_core::session::{StoreEvent, TrackedSession};
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::timeline::TimelineItem;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use super::RemoteError;
use super::ssh::{Connection, Ssh, before, connect_or_install, no_answer, owned_by, until};

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
    Show(String, oneshot::Sender<Result<Vec<TimelineItem>, RemoteError>>),
    /// A search of the host's history (the window's search).
    Search(Box<Request>, oneshot::Sender<Result<Results, RemoteError>>),
}

/// One host kept connected: reconnects after a drop with back-off (1 s doubling to a
/// minute, on the injectable clock), holds its last roster while away (stale), and waits
/// for the user when the host has no helper. Dropping the feed closes the connection.
pub struct HostFeed {
    pub dest: Destination,
    pub(super) cmds: mpsc::Sender<FeedCmd>,
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
    /// Each row's size as JSON, and their sum: what is held of the host, capped.
    sizes: HashMap<SessionId, usize>,
    held: usize,
    version: Option<String>,
    clock: Arc<dyn Clock>,
    out: mpsc::Sender<FeedMsg>,
}

/// The size of `row` as JSON, without writing it anywhere.
fn json_size(row: &TrackedSession) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    let _ = serde_json::to_writer(&mut n, row);
    n.0
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

    /// A (new) full roster: what changed since the held one becomes events. Ok(false):
    /// the feed's owner is gone; Err: the roster passes a cap (the held one is kept).
    async fn replace(&mut self, sessions: Vec<TrackedSession>) -> Result<bool, Failure> {
        let mut fresh: HashMap<SessionId, TrackedSession> =
            sessions.into_iter().map(|s| (s.session_id.clone(), owned_by(s, &self.dest))).collect();
        if fresh.len() > MAX_HOST_SESSIONS {
            return Err(Failure::too_many_sessions());
        }
        let mut sizes: HashMap<SessionId, usize> = fresh.iter().map(|(id, s)| (id.clone(), json_size(s))).collect();
        let held: usize = sizes.values().sum();
        if held > MAX_HOST_BYTES {
            return Err(Failure::too_much_data());
        }
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
        std::mem::swap(&mut self.sizes, &mut sizes);
        self.held = held;
        for e in events {
            if self.out.send(FeedMsg::Event(e)).await.is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Holds `row` (new or changed) unless that passes a cap.
    fn hold(&mut self, row: TrackedSession) -> Result<(), Failure> {
        let id = row.session_id.clone();
        let before = self.sizes.get(&id).copied();
        if before.is_none() && self.rows.len() >= MAX_HOST_SESSIONS {
            return Err(Failure::too_many_sessions());
        }
        let size = json_size(&row);
        let held = self.held - before.unwrap_or(0) + size;
        if held > MAX_HOST_BYTES {
            return Err(Failure::too_much_data());
        }
        self.held = held;
        self.sizes.insert(id.clone(), size);
        self.rows.insert(id, row);
        Ok(())
    }

    /// One of the host's store events, on the held rows and out. Ok(false): the feed's
    /// owner is gone; Err: the host passed a cap (the rows held so far are kept).
    async fn apply(&mut self, event: StoreEvent) -> Result<bool, Failure> {
        let event = match event {
            StoreEvent::Discovered { session } => {
                let s = owned_by(*session, &self.dest);
                self.hold(s.clone())?;
                StoreEvent::Discovered { session: Box::new(s) }
            }
            StoreEvent::Updated { session_id, changes } => {
                // Only what a host may say of its own row, keyed by the id it was sent for.
                let changes = remote::remote_patch(*changes);
                let Some(row) = self.rows.get(&session_id) else { return Ok(true) };
                let mut row = row.clone();
                row.apply(changes.clone());
                self.hold(row)?;
                StoreEvent::Updated { session_id, changes: Box::new(changes) }
            }
            StoreEvent::Removed { session_id } => {
                if self.rows.remove(&session_id).is_none() {
                    return Ok(true);
                }
                self.held -= self.sizes.remove(&session_id).unwrap_or(0);
                StoreEvent::Removed { session_id }
            }
        };
        Ok(self.out.send(FeedMsg::Event(event)).await.is_ok())
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
    let mut st = FeedState {
        dest,
        link: HostLink::default(),
        rows: HashMap::new(),
        sizes: HashMap::new(),
        held: 0,
        version: None,
        clock,
        out,
    };
    st.link.retry_now(st.clock.mono());
    loop {
        // Wait until an attempt is due, or the user asks.
        while !st.link.due(st.clock.mono()) {
            let cmd = match st.link.retry_at {
                Some(at) => before(&*st.clock, at, cmds.recv()).await,
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
                    let _ = reply.send(Err(RemoteError::HostNotConnected));
                }
                Some(Some(FeedCmd::Search(_, reply))) => {
                    let _ = reply.send(Err(RemoteError::HostNotConnected));
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
        let failure = match connect_or_install(&ssh, &st.dest, exe.as_deref(), &*st.clock).await {
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

/// A reply owed to whoever asked for a timeline or a search.
enum Reply {
    Timeline(oneshot::Sender<Result<Vec<TimelineItem>, RemoteError>>),
    Search(oneshot::Sender<Result<Results, RemoteError>>),
}

impl Reply {
    fn fail(self, why: RemoteError) {
        let _ = match self {
            Reply::Timeline(r) => r.send(Err(why)).is_ok(),
            Reply::Search(r) => r.send(Err(why)).is_ok(),
        };
    }
}

/// Serves one connection until it fails (Some) or the feed's owner is gone (None). Every
/// wait is bounded on the feed's clock: the first snapshot within `waits.snapshot` of the
/// hello, each `show` answered within `waits.reply` (else its asker is told).
async fn run_connection(
    st: &mut FeedState,
    conn: &mut Connection,
    cmds: &mut mpsc::Receiver<FeedCmd>,
) -> Option<Failure> {
    let mut next_req = 0u64;
    // Requests in flight, each with its deadline; dropped with the connection, which
    // answers them with an error.
    let mut waiting: HashMap<u64, (Mono, Reply)> = HashMap::new();
    let waits = conn.waits;
    let mut snapshot_due = Some(st.clock.mono().plus(waits.snapshot));
    loop {
        let next_deadline = waiting.values().map(|(at, _)| *at).chain(snapshot_due).min();
        let clock = st.clock.clone();
        let deadline = async move {
            match next_deadline {
                Some(at) => until(&*clock, at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = deadline => {
                let now = st.clock.mono();
                if snapshot_due.is_some_and(|at| at <= now) {
                    return Some(Failure::Unreachable(format!(
                        "the host sent no sessions within {} of its hello",
                        remote::wait_words(waits.snapshot)
                    )));
                }
                let late: Vec<u64> = waiting.iter().filter(|(_, (at, _))| *at <= now).map(|(req, _)| *req).collect();
                for req in late {
                    if let Some((_, reply)) = waiting.remove(&req) {
                        reply.fail(RemoteError::Failed(no_answer(waits.reply)));
                    }
                }
            }
            msg = conn.recv() => {
                let msg = match msg {
                    Ok(m) => m,
                    Err(f) => return Some(f),
                };
                st.link.heard(st.clock.now());
                let alive = match msg {
                    FromRemote::Snapshot { sessions } => {
                        snapshot_due = None;
                        let ok = match st.replace(sessions).await {
                            Ok(ok) => ok,
                            Err(f) => return Some(f),
                        };
                        st.link.live(st.clock.now());
                        ok && st.tell().await
                    }
                    FromRemote::Event { event } => {
                        let before = st.rows.len();
                        let ok = match st.apply(event).await {
                            Ok(ok) => ok,
                            Err(f) => return Some(f),
                        };
                        ok && (st.rows.len() == before || st.tell().await)
                    }
                    FromRemote::Supervision { event } => st.out.send(FeedMsg::Supervision(event)).await.is_ok(),
                    FromRemote::Timeline { req, items } => {
                        match waiting.remove(&req) {
                            Some((_, Reply::Timeline(r))) => { let _ = r.send(Ok(items)); }
                            Some((_, r)) => r.fail(RemoteError::WrongAnswer),
                            None => {}
                        }
                        true
                    }
                    FromRemote::SearchResults { req, results } => {
                        match waiting.remove(&req) {
                            Some((_, Reply::Search(r))) => { let _ = r.send(Ok(results)); }
                            Some((_, r)) => r.fail(RemoteError::WrongAnswer),
                            None => {}
                        }
                        true
                    }
                    FromRemote::Error { req: Some(req), message } => {
                        if let Some((_, r)) = waiting.remove(&req) {
                            r.fail(RemoteError::HostSaid(message));
                        }
                        true
                    }
                    FromRemote::Error { req: None, message } => {
                        return Some(Failure::HelperMismatch(remote::quote(&message)));
                    }
                    // The feed asks for no report.
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
                    let msg = ToRemote::Show { req: next_req, session_id: id };
                    ask(st, conn, &mut waiting, next_req, &msg, Reply::Timeline(reply)).await;
                }
                Some(FeedCmd::Search(request, reply)) => {
                    next_req += 1;
                    let msg = ToRemote::Search { req: next_req, request: *request };
                    ask(st, conn, &mut waiting, next_req, &msg, Reply::Search(reply)).await;
                }
                Some(FeedCmd::Retry | FeedCmd::Install(_)) => {}
            },
        }
    }
}

/// Sends one request on the feed's connection; its reply is owed within `waits.reply`.
async fn ask(
    st: &FeedState,
    conn: &mut Connection,
    waiting: &mut HashMap<u64, (Mono, Reply)>,
    req: u64,
    msg: &ToRemote,
    reply: Reply,
) {
    match conn.send(msg).await {
        Ok(()) => {
            waiting.insert(req, (st.clock.mono().plus(conn.waits.reply), reply));
        }
        Err(e) => reply.fail(RemoteError::Write(e)),
    }
}
