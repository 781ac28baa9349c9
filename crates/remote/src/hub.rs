//! The machines of the settings, and all of them kept connected for a window: [`Hub`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mimesis_core::attention::{Attention, SupervisionSignal};
use mimesis_core::clock::Clock;
use mimesis_core::ids::SessionId;
use mimesis_core::remote::{self, Destination, HostState};
use mimesis_core::session::{StoreEvent, TrackedSession};
use mimesis_core::settings::NotificationSettings;
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::timeline::TimelineItem;
use tokio::sync::{mpsc, oneshot};

use super::RemoteError;
use super::feed::{FeedCmd, FeedMsg, HostFeed, HostInfo};
use super::ssh::{Ssh, before, no_answer};

// ---- every configured host, for a window ---------------------------------------------------

/// The fields of another machine's row a window sees keyed by its host: its ids (so ids
/// that collide across machines stay apart) and its transcript's path (a path there, which
/// must never match a folder here).
const KEYED: [&str; 3] = ["sessionId", "supersededBy", "transcriptPath"];

/// A row of another machine as a window keys it: `host:id`, the CLI's way of naming it
/// ([`KEYED`]).
pub fn face_row(s: &TrackedSession) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let (Some(host), Some(o)) = (&s.host, v.as_object_mut()) {
        for key in KEYED {
            if let Some(serde_json::Value::String(id)) = o.get(key) {
                let keyed = format!("{host}:{id}");
                o.insert(key.into(), keyed.into());
            }
        }
    }
    v
}

/// A remote store event as a window sees it (ids keyed as in [`face_row`]).
fn face_event(host: &str, ev: &StoreEvent) -> serde_json::Value {
    match ev {
        StoreEvent::Discovered { session } => serde_json::json!({"type": "discovered", "session": face_row(session)}),
        StoreEvent::Updated { session_id, changes } => {
            let mut changes = serde_json::to_value(changes).unwrap_or_default();
            for key in KEYED {
                if let Some(serde_json::Value::String(id)) = changes.get(key).cloned() {
                    changes[key] = format!("{host}:{id}").into();
                }
            }
            serde_json::json!({"type": "updated", "sessionId": format!("{host}:{session_id}"), "changes": changes})
        }
        StoreEvent::Removed { session_id } => {
            serde_json::json!({"type": "removed", "sessionId": format!("{host}:{session_id}")})
        }
    }
}

/// A remote supervision event as a window sees it (`sessionId` and `resumeSessionId`
/// keyed as in [`face_row`]).
pub fn face_supervision(host: &str, ev: &SupervisionEvent) -> serde_json::Value {
    let mut v = serde_json::to_value(ev).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        for key in ["sessionId", "resumeSessionId"] {
            if let Some(serde_json::Value::String(id)) = o.get(key) {
                let keyed = format!("{host}:{id}");
                o.insert(key.into(), keyed.into());
            }
        }
    }
    v
}

/// What a [`Hub`] tells a window.
#[derive(Clone, Debug)]
pub enum HubEvent {
    /// Every host's state, in the configured order.
    Hosts(Vec<HostInfo>),
    /// Roster changes of other machines, keyed as in [`face_row`].
    Events(Vec<serde_json::Value>),
    /// Supervision events of other machines' sessions, keyed as in [`face_supervision`],
    /// each after the roster change it describes.
    Supervision(Vec<serde_json::Value>),
    /// The sessions of other machines that need the user now (keys `host:id`), by the same
    /// policy as this machine's (`mimesis_core::attention`).
    Attention(Vec<String>),
    /// A notification the attention policy decided on (`key`: `host:id`).
    Notify { key: String, title: String, body: String },
}

/// Every configured machine kept connected for a window: their rows held through drops,
/// their states, their timelines on demand. Changing the list starts and stops feeds;
/// a removed machine's rows are removed.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<std::sync::Mutex<HubInner>>,
    events: tokio::sync::broadcast::Sender<HubEvent>,
    ssh: Ssh,
    clock: Arc<dyn Clock>,
}

#[derive(Default)]
struct HubInner {
    order: Vec<Destination>,
    feeds: HashMap<Destination, HostFeed>,
    infos: HashMap<Destination, HostInfo>,
    rows: HashMap<Destination, HashMap<SessionId, TrackedSession>>,
    attention: HashMap<Destination, Attention>,
    notifications: NotificationSettings,
    /// The attention set last told.
    needs_you: Vec<String>,
}

impl HubInner {
    /// The sessions of live machines that need the user. A machine that is away (the
    /// connection dropped, unreachable) keeps its rows as last seen, but what they waited for
    /// may be over and cannot be answered from here: they count again once it is back.
    fn needs_you(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .attention
            .iter()
            .filter(|(d, _)| self.infos.get(*d).is_some_and(|i| i.state == HostState::Live))
            .flat_map(|(d, a)| a.set().session_ids.into_iter().map(move |id| format!("{d}:{id}")))
            .collect();
        keys.sort();
        keys
    }

    /// The attention set, when it changed since last told.
    fn needs_you_changed(&mut self) -> Option<Vec<String>> {
        let now = self.needs_you();
        (now != self.needs_you).then(|| {
            self.needs_you = now.clone();
            now
        })
    }
}

impl Hub {
    pub fn new(ssh: Ssh, clock: Arc<dyn Clock>) -> Hub {
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Hub { inner: Arc::default(), events, ssh, clock }
    }

    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<HubEvent> {
        self.events.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The machines to keep connected (from the settings). Call inside a tokio runtime.
    pub fn set_hosts(&self, hosts: &[Destination]) {
        let mut removed_events = Vec::new();
        {
            let mut inner = self.lock();
            inner.order = hosts.to_vec();
            let gone: Vec<Destination> = inner.feeds.keys().filter(|d| !hosts.contains(d)).cloned().collect();
            for d in gone {
                inner.feeds.remove(&d);
                inner.infos.remove(&d);
                inner.attention.remove(&d);
                for id in inner.rows.remove(&d).unwrap_or_default().into_keys() {
                    removed_events.push(serde_json::json!({"type": "removed", "sessionId": format!("{d}:{id}")}));
                }
            }
            for d in hosts {
                if inner.feeds.contains_key(d) {
                    continue;
                }
                let (feed, msgs) = HostFeed::start(self.ssh.clone(), d.clone(), self.clock.clone(), None);
                inner.feeds.insert(d.clone(), feed);
                inner.infos.insert(d.clone(), starting_info(d));
                tokio::spawn(self.clone().pump(d.clone(), msgs));
            }
        }
        if !removed_events.is_empty() {
            let _ = self.events.send(HubEvent::Events(removed_events));
        }
        let changed = self.lock().needs_you_changed();
        if let Some(keys) = changed {
            let _ = self.events.send(HubEvent::Attention(keys));
        }
        let _ = self.events.send(HubEvent::Hosts(self.hosts()));
    }

    /// Which notifications the user wants (the settings' `notifications`).
    pub fn set_notifications(&self, settings: NotificationSettings) {
        let mut inner = self.lock();
        for a in inner.attention.values_mut() {
            a.set_settings(settings.clone());
        }
        inner.notifications = settings;
    }

    /// The sessions of other machines that need the user now (keys `host:id`), those of
    /// machines that are live only.
    pub fn needs_you(&self) -> Vec<String> {
        self.lock().needs_you.clone()
    }

    /// One feed's messages into the held rows and out to the window.
    async fn pump(self, dest: Destination, mut msgs: mpsc::Receiver<FeedMsg>) {
        while let Some(first) = msgs.recv().await {
            // What arrived together goes out together.
            let mut batch = vec![first];
            while let Ok(m) = msgs.try_recv() {
                batch.push(m);
                if batch.len() >= 512 {
                    break;
                }
            }
            let mut events = Vec::new();
            let mut supervision = Vec::new();
            let mut notes = Vec::new();
            let mut hosts_changed = false;
            let needs_you;
            {
                let mut inner = self.lock();
                let now = self.clock.now();
                if !inner.feeds.contains_key(&dest) {
                    return; // removed meanwhile
                }
                for m in batch {
                    match m {
                        FeedMsg::State(info) => {
                            inner.infos.insert(dest.clone(), info);
                            hosts_changed = true;
                        }
                        FeedMsg::Event(ev) => {
                            let rows = inner.rows.entry(dest.clone()).or_default();
                            match &ev {
                                StoreEvent::Discovered { session } => {
                                    rows.insert(session.session_id.clone(), (**session).clone());
                                }
                                StoreEvent::Updated { session_id, changes } => {
                                    if let Some(r) = rows.get_mut(session_id) {
                                        r.apply((**changes).clone());
                                    }
                                }
                                StoreEvent::Removed { session_id } => {
                                    rows.remove(session_id);
                                }
                            }
                            let settings = inner.notifications.clone();
                            let policy = inner
                                .attention
                                .entry(dest.clone())
                                .or_insert_with(|| Attention::new(settings, mimesis_core::attention::DEFAULT_DEBOUNCE));
                            for n in policy.on_store_event(&ev, now) {
                                notes.push(HubEvent::Notify {
                                    key: format!("{dest}:{}", n.session_id),
                                    title: n.title,
                                    body: format!("{dest}: {}", n.body),
                                });
                            }
                            events.push(face_event(dest.as_str(), &ev));
                        }
                        FeedMsg::Supervision(ev) => {
                            if let Some(signal) = SupervisionSignal::from_event(&ev) {
                                let settings = inner.notifications.clone();
                                let policy = inner.attention.entry(dest.clone()).or_insert_with(|| {
                                    Attention::new(settings, mimesis_core::attention::DEFAULT_DEBOUNCE)
                                });
                                for n in policy.on_supervision(&ev.session_id, signal, now) {
                                    notes.push(HubEvent::Notify {
                                        key: format!("{dest}:{}", n.session_id),
                                        title: n.title,
                                        body: format!("{dest}: {}", n.body),
                                    });
                                }
                            }
                            supervision.push(face_supervision(dest.as_str(), &ev));
                        }
                    }
                }
                needs_you = inner.needs_you_changed();
            }
            if !events.is_empty() {
                let _ = self.events.send(HubEvent::Events(events));
            }
            if !supervision.is_empty() {
                let _ = self.events.send(HubEvent::Supervision(supervision));
            }
            if let Some(keys) = needs_you {
                let _ = self.events.send(HubEvent::Attention(keys));
            }
            for n in notes {
                let _ = self.events.send(n);
            }
            if hosts_changed {
                let _ = self.events.send(HubEvent::Hosts(self.hosts()));
            }
        }
    }

    /// Every machine's state, in the configured order.
    pub fn hosts(&self) -> Vec<HostInfo> {
        let inner = self.lock();
        inner.order.iter().map(|d| inner.infos.get(d).cloned().unwrap_or_else(|| starting_info(d))).collect()
    }

    /// Every held row of every machine, keyed for a window ([`face_row`]).
    pub fn rows(&self) -> Vec<serde_json::Value> {
        let inner = self.lock();
        inner.rows.values().flat_map(|r| r.values()).map(face_row).collect()
    }

    /// A held row by its window key `host:id`.
    pub fn row(&self, key: &str) -> Option<TrackedSession> {
        let (host, id) = remote::split_host_id(key);
        let (dest, id) = (Destination::parse(host?).ok()?, SessionId::parse(id).ok()?);
        self.lock().rows.get(&dest)?.get(&id).cloned()
    }

    async fn command(&self, dest: &Destination, cmd: FeedCmd) -> Result<(), RemoteError> {
        let tx = {
            let inner = self.lock();
            inner.feeds.get(dest).map(|f| f.cmds.clone()).ok_or_else(|| RemoteError::NotListed(dest.clone()))?
        };
        tx.send(cmd).await.map_err(|_| RemoteError::NotConnected(dest.clone()))
    }

    /// Connect now, without waiting for the back-off.
    pub async fn retry(&self, dest: &Destination) -> Result<(), RemoteError> {
        self.command(dest, FeedCmd::Retry).await
    }

    /// Install this build (`exe`) as the host's helper, then connect (the user's word).
    pub async fn install(&self, dest: &Destination, exe: PathBuf) -> Result<(), RemoteError> {
        self.command(dest, FeedCmd::Install(exe)).await
    }

    /// The timeline of a session on another machine, by its window key `host:id`.
    pub async fn timeline(&self, key: &str) -> Result<Vec<TimelineItem>, RemoteError> {
        let (host, id) = remote::split_host_id(key);
        let dest = Destination::parse(host.ok_or(RemoteError::NotRemote)?)?;
        SessionId::parse(id).map_err(|_| RemoteError::NotASessionId)?;
        // The feed answers within its reply wait once connected; this bounds the rest (a
        // connection or a copy under way).
        let w = self.ssh.waits;
        let wait = w.hello + w.install + w.reply;
        let asked = async {
            let (tx, rx) = oneshot::channel();
            self.command(&dest, FeedCmd::Show(id.to_owned(), tx)).await?;
            rx.await.map_err(|_| RemoteError::Dropped)?
        };
        before(&*self.clock, self.clock.mono().plus(wait), asked)
            .await
            .unwrap_or_else(|| Err(RemoteError::Failed(no_answer(wait))))
    }

    /// A search of one configured machine's history (the window's search), on its feed's
    /// connection: its hits carry `host`. A machine that is not connected is not waited
    /// for: the answer says why at once.
    pub async fn search(
        &self,
        host: &str,
        request: &mimesis_core::search::Request,
    ) -> Result<mimesis_core::search::Results, RemoteError> {
        let dest = Destination::parse(host)?;
        let info = self.lock().infos.get(&dest).cloned();
        match info {
            None => return Err(RemoteError::NotListed(dest)),
            Some(i) if i.state == HostState::Connecting => return Err(RemoteError::StillConnecting),
            Some(i) if i.state != HostState::Live => {
                let why = i.message.unwrap_or_else(|| "the connection dropped".to_owned());
                return Err(RemoteError::NotReachable(why));
            }
            Some(_) => {}
        }
        let wait = self.ssh.waits.reply;
        let asked = async {
            let (tx, rx) = oneshot::channel();
            self.command(&dest, FeedCmd::Search(Box::new(request.clone()), tx)).await?;
            rx.await.map_err(|_| RemoteError::Dropped)?
        };
        let mut results = before(&*self.clock, self.clock.mono().plus(wait), asked)
            .await
            .unwrap_or_else(|| Err(RemoteError::Failed(no_answer(wait))))?;
        let mut merged = mimesis_core::search::Results::default();
        results.failed.clear();
        merged.merge(dest.as_str(), results, request.limit());
        Ok(merged)
    }
}

fn starting_info(d: &Destination) -> HostInfo {
    HostInfo {
        host: d.as_str().to_owned(),
        state: HostState::Connecting,
        message: None,
        last_seen: None,
        sessions: 0,
        version: None,
        retry_in_secs: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::session::SessionPatch;

    fn row(id: &str, host: Option<&str>) -> TrackedSession {
        let mut v = serde_json::json!({
            "sessionId": id, "projectId": "-p", "cwd": null, "repoRoot": null, "branch": null, "goal": null,
            "summary": null, "title": null, "status": "idle", "hasPendingToolUse": false, "pendingTool": null,
            "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": null,
            "usage": {"inputTokens": 0, "outputTokens": 0, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
            "apiError": false, "compactionCount": 0, "superseded": true, "supersededBy": "next", "supersededAt": null,
            "workChainId": null, "workChainName": null, "chainLength": 1, "source": "watcher", "supervision": null,
            "live": false, "pid": null, "transcriptPath": "/x.jsonl", "permissionMode": null, "malformedLines": 0,
            "statusFile": null, "name": null
        });
        v["host"] = host.into();
        serde_json::from_value(v).expect("a row")
    }

    #[test]
    fn an_away_machines_sessions_stop_counting_as_needing_the_user_until_it_is_back() {
        let d = Destination::parse("devbox").unwrap();
        let mut waiting = row("abc", Some("devbox"));
        waiting.status = mimesis_core::status::Status::WaitingForApproval;
        waiting.superseded = false;
        waiting.superseded_by = None;
        let mut attention = Attention::new(NotificationSettings::default(), mimesis_core::attention::DEFAULT_DEBOUNCE);
        let now = mimesis_core::clock::Timestamp::parse("2026-11-25T10:00:01.000Z").unwrap();
        attention.on_store_event(&StoreEvent::Discovered { session: Box::new(waiting) }, now);
        let mut inner = HubInner::default();
        inner.attention.insert(d.clone(), attention);
        let set_state = |inner: &mut HubInner, state| {
            inner.infos.insert(d.clone(), HostInfo { state, ..starting_info(&d) });
        };

        set_state(&mut inner, HostState::Live);
        assert_eq!(inner.needs_you_changed(), Some(vec!["devbox:abc".to_owned()]), "a live machine's waiting session");
        for away in [HostState::Stale, HostState::Unreachable, HostState::HelperMissing, HostState::Connecting] {
            set_state(&mut inner, away);
            assert_eq!(inner.needs_you(), Vec::<String>::new(), "{away:?}: its last state is shown, not counted");
        }
        assert_eq!(inner.needs_you_changed(), Some(vec![]), "going away is a change the window and the tray hear");
        set_state(&mut inner, HostState::Live);
        assert_eq!(inner.needs_you_changed(), Some(vec!["devbox:abc".to_owned()]), "back: it counts again");
    }

    #[test]
    fn a_window_keys_another_machines_rows_by_host_and_id() {
        let remote = face_row(&row("abc", Some("devbox")));
        assert_eq!(remote["sessionId"], "devbox:abc");
        assert_eq!(remote["supersededBy"], "devbox:next", "links stay on their machine");
        assert_eq!(remote["host"], "devbox");
        let local = face_row(&row("abc", None));
        assert_eq!(local["sessionId"], "abc");
        let patch = SessionPatch { superseded_by: Some(Some(SessionId::parse("n2").unwrap())), ..Default::default() };
        let ev = face_event(
            "devbox",
            &StoreEvent::Updated { session_id: SessionId::parse("abc").unwrap(), changes: Box::new(patch) },
        );
        assert_eq!(ev["sessionId"], "devbox:abc");
        assert_eq!(ev["changes"]["supersededBy"], "devbox:n2");
        let gone = face_event("devbox", &StoreEvent::Removed { session_id: SessionId::parse("abc").unwrap() });
        assert_eq!(gone, serde_json::json!({"type": "removed", "sessionId": "devbox:abc"}));
    }
}
