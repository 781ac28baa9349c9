//! Which sessions need the user, and when to tell them (SPEC U5). Pure: store events and
//! supervision signals come in with `now`; desktop notifications and the attention set
//! (the tray's count and menu) come out. The desktop shell only displays them.
//!
//! A notification is sent once per transition: a session entering "waiting for
//! approval" is announced once, not again while it stays there, and not again within
//! the debounce window if it flaps out and back in for the same tool call (a dialog for
//! another call is a new question and is announced). Sessions known at start-up are a
//! baseline and announce nothing. Each kind can be turned off in the settings.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde::Serialize;

use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::session::{StoreEvent, TrackedSession};
use crate::settings::NotificationSettings;
use crate::status::Status;
use crate::supervision::event::{EventKind, SupervisionEvent};

/// The same session and kind are not announced twice within this.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_secs(10);

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    WaitingForApproval,
    WaitingForInput,
    Crashed,
    Recovered,
    Terminated,
    /// Issue 36: a budget is 80 % spent, or spent (and what became of the session).
    Budget,
}

/// A desktop notification to show; clicking it opens `session_id` (`app:open-session`).
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub session_id: SessionId,
    pub kind: NotificationKind,
    pub title: String,
    pub body: String,
    pub at: Timestamp,
}

impl Notification {
    /// Whether to show it on the desktop: not when the user is looking at its session in
    /// a focused window (they see it there, and may be typing into it). Crashes and ends
    /// are always shown.
    pub fn worth_showing(&self, viewing: Option<&SessionId>, window_focused: bool) -> bool {
        let watched = window_focused && viewing == Some(&self.session_id);
        !watched || matches!(self.kind, NotificationKind::Crashed | NotificationKind::Terminated)
    }
}

/// Keeps bursts of desktop notifications from stacking up: within `window`, the first
/// `alone` are shown on their own, the rest are folded into one summary that grows.
#[derive(Debug)]
pub struct Coalescer {
    window: Duration,
    alone: usize,
    recent: std::collections::VecDeque<crate::clock::Mono>,
    folded: Vec<String>,
    folded_at: Option<crate::clock::Mono>,
}

/// How to show one notification.
#[derive(Debug, PartialEq, Eq)]
pub enum Coalesced {
    /// On its own.
    Alone,
    /// As the burst's summary (replacing the previous one): its title and body.
    Folded { count: usize, title: String, body: String },
}

/// Bursts: more than 2 notifications within 20 s are folded into one.
pub const BURST_WINDOW: Duration = Duration::from_secs(20);
pub const BURST_ALONE: usize = 2;

impl Coalescer {
    pub fn new(window: Duration, alone: usize) -> Self {
        Coalescer { window, alone, recent: Default::default(), folded: Vec::new(), folded_at: None }
    }

    pub fn admit(&mut self, n: &Notification, now: crate::clock::Mono) -> Coalesced {
        while self.recent.front().is_some_and(|&t| now.since(t) >= self.window) {
            self.recent.pop_front();
        }
        if self.folded_at.is_some_and(|t| now.since(t) >= self.window) {
            self.folded.clear();
            self.folded_at = None;
        }
        if self.recent.len() < self.alone && self.folded.is_empty() {
            self.recent.push_back(now);
            return Coalesced::Alone;
        }
        self.folded_at = Some(now);
        self.folded.push(format!("{}: {}", n.title, n.body.lines().next().unwrap_or("")));
        let count = self.folded.len();
        let title =
            if count == 1 { "1 more session needs you".to_owned() } else { format!("{count} more sessions need you") };
        let body = self.folded.iter().rev().take(5).cloned().collect::<Vec<_>>().join("\n");
        Coalesced::Folded { count, title, body }
    }
}

/// What the supervision of a PTY session reports (issue 3's events, reduced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SupervisionSignal {
    /// The process crashed (`crash_detected`, `error`) or the session became unhealthy.
    Crashed { message: String },
    /// It came back (`session_recovered`, `session_ready`).
    Recovered { message: String },
    /// It was ended by a limit (`session_terminated`).
    Terminated { message: String },
    /// It runs normally again, or was deleted: nothing to flag.
    Cleared,
    /// A budget (issue 36): a notification, no flag.
    Budget { message: String },
}

/// A text field of a patch that changed to a value.
fn changed_text(f: &Option<Option<String>>) -> Option<&str> {
    f.as_ref().and_then(|v| v.as_deref())
}

impl SupervisionSignal {
    /// What a supervision event means for attention, if anything. The same for every face
    /// (the app, `mimesis run`), so a crash is flagged the same way wherever it happens.
    pub fn from_event(ev: &SupervisionEvent) -> Option<SupervisionSignal> {
        let msg = |m: &str| m.to_owned();
        Some(match &ev.kind {
            EventKind::CrashDetected { .. } => SupervisionSignal::Crashed { message: msg("Crash detected") },
            EventKind::Error { message, .. }
            | EventKind::SessionUnhealthy { message }
            | EventKind::RecoveryFailed { message } => SupervisionSignal::Crashed { message: msg(message) },
            EventKind::SessionRecovered { message } | EventKind::SessionReady { message, .. } => {
                SupervisionSignal::Recovered { message: msg(message) }
            }
            // The user stopped or deleted it, or Mimesis is quitting: nothing to tell them.
            EventKind::SessionTerminated { reason, .. }
                if matches!(reason.as_str(), "user" | "deleted" | "shutdown") =>
            {
                SupervisionSignal::Cleared
            }
            EventKind::SessionTerminated { message, .. } => SupervisionSignal::Terminated { message: msg(message) },
            EventKind::SessionStarted {} | EventKind::SessionResumed { .. } => SupervisionSignal::Cleared,
            EventKind::SessionWarning { reason, message, .. } | EventKind::SessionSuspended { reason, message }
                if reason == "budget" =>
            {
                SupervisionSignal::Budget { message: msg(message) }
            }
            _ => return None,
        })
    }
}

/// The tray's view: sessions that need the user (docs/ipc.md `attention:changed`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AttentionSet {
    pub count: usize,
    pub session_ids: Vec<SessionId>,
    /// The window's title for this count ("Mimesis — 2 need you").
    pub title: String,
}

impl Default for AttentionSet {
    fn default() -> Self {
        AttentionSet { count: 0, session_ids: Vec::new(), title: window_title(0) }
    }
}

/// The window's title when `count` sessions need the user.
pub fn window_title(count: usize) -> String {
    match count {
        0 => "Mimesis".to_owned(),
        1 => "Mimesis — 1 needs you".to_owned(),
        n => format!("Mimesis — {n} need you"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flag {
    Crashed,
    Terminated,
}

#[derive(Default)]
struct Tracked {
    status: Status,
    superseded: bool,
    label: String,
    pending: Option<String>,
    flag: Option<Flag>,
    /// When each kind was last announced, and about which pending tool call.
    last_sent: HashMap<NotificationKind, (Timestamp, Option<String>)>,
}

impl Tracked {
    /// In the attention set: crashed or terminated, or waiting and not replaced by a successor.
    fn needs_user(&self) -> bool {
        self.flag.is_some() || (self.status.needs_user() && !self.superseded)
    }
}

/// The attention policy.
pub struct Attention {
    sessions: HashMap<SessionId, Tracked>,
    /// The sessions of [`Attention::set`], kept as they change (not found by walking every
    /// session on each change: 20,000 of them under load).
    needing: BTreeSet<SessionId>,
    settings: NotificationSettings,
    debounce: Duration,
}

fn label_of(s: &TrackedSession) -> String {
    let text = s.title.as_deref().or(s.goal.as_deref()).unwrap_or(&s.project_id);
    let short: String = text.chars().take(80).collect();
    if short.len() < text.len() { format!("{short}…") } else { short }
}

impl Attention {
    pub fn new(settings: NotificationSettings, debounce: Duration) -> Self {
        Attention { sessions: HashMap::new(), needing: BTreeSet::new(), settings, debounce }
    }

    pub fn set_settings(&mut self, settings: NotificationSettings) {
        self.settings = settings;
    }

    /// Takes the current roster as the starting point: nothing is announced for it.
    pub fn baseline<'a>(&mut self, sessions: impl IntoIterator<Item = &'a TrackedSession>) {
        for s in sessions {
            let t = self.sessions.entry(s.session_id.clone()).or_default();
            t.status = s.status;
            t.superseded = s.superseded;
            t.label = label_of(s);
            t.pending = s.pending_tool.as_ref().map(|p| format!("{}: {}", p.tool, p.target));
            self.refresh(&s.session_id);
        }
    }

    /// Whether `id` is in the set, as its state is now.
    fn refresh(&mut self, id: &SessionId) {
        let needs = self.sessions.get(id).is_some_and(Tracked::needs_user);
        if needs {
            if !self.needing.contains(id) {
                self.needing.insert(id.clone());
            }
        } else {
            self.needing.remove(id);
        }
    }

    /// Follows one store event; returns the notifications it causes.
    pub fn on_store_event(&mut self, ev: &StoreEvent, now: Timestamp) -> Vec<Notification> {
        let out = self.follow_store_event(ev, now);
        self.refresh(ev.session_id());
        out
    }

    fn follow_store_event(&mut self, ev: &StoreEvent, now: Timestamp) -> Vec<Notification> {
        match ev {
            StoreEvent::Discovered { session } => {
                // A session that appears already waiting was not seen to change: a baseline.
                self.baseline([session.as_ref()]);
                Vec::new()
            }
            StoreEvent::Removed { session_id } => {
                self.sessions.remove(session_id);
                Vec::new()
            }
            StoreEvent::Updated { session_id, changes } => {
                let t = self.sessions.entry(session_id.clone()).or_default();
                if let Some(v) = changes.superseded {
                    t.superseded = v;
                }
                if let Some(v) = changed_text(&changes.title).or(changed_text(&changes.goal)) {
                    t.label = v.chars().take(80).collect();
                }
                if let Some(p) = &changes.pending_tool {
                    t.pending = p.as_ref().map(|p| format!("{}: {}", p.tool, p.target));
                }
                let Some(new) = changes.status else {
                    return Vec::new();
                };
                let old = std::mem::replace(&mut t.status, new);
                if old == new || t.superseded {
                    return Vec::new();
                }
                let kind = match new {
                    Status::WaitingForApproval => NotificationKind::WaitingForApproval,
                    // A turn that ended; a session that merely appears at its prompt (a
                    // new `/clear` session, an idle one woken by a timeout) is not news.
                    Status::WaitingForInput if matches!(old, Status::Working | Status::WaitingForApproval) => {
                        NotificationKind::WaitingForInput
                    }
                    _ => return Vec::new(),
                };
                self.send(session_id, kind, None, now).into_iter().collect()
            }
        }
    }

    /// Follows a supervision signal of a PTY session.
    pub fn on_supervision(&mut self, id: &SessionId, signal: SupervisionSignal, now: Timestamp) -> Vec<Notification> {
        let out = self.follow_supervision(id, signal, now);
        self.refresh(id);
        out
    }

    fn follow_supervision(&mut self, id: &SessionId, signal: SupervisionSignal, now: Timestamp) -> Vec<Notification> {
        let t = self.sessions.entry(id.clone()).or_default();
        let (kind, message) = match signal {
            SupervisionSignal::Crashed { message } => {
                t.flag = Some(Flag::Crashed);
                (NotificationKind::Crashed, message)
            }
            SupervisionSignal::Terminated { message } => {
                t.flag = Some(Flag::Terminated);
                (NotificationKind::Terminated, message)
            }
            SupervisionSignal::Recovered { message } => {
                let was_flagged = t.flag.take().is_some();
                if !was_flagged {
                    return Vec::new();
                }
                (NotificationKind::Recovered, message)
            }
            SupervisionSignal::Cleared => {
                t.flag = None;
                return Vec::new();
            }
            SupervisionSignal::Budget { message } => (NotificationKind::Budget, message),
        };
        self.send(id, kind, Some(message), now).into_iter().collect()
    }

    fn send(
        &mut self,
        id: &SessionId,
        kind: NotificationKind,
        message: Option<String>,
        now: Timestamp,
    ) -> Option<Notification> {
        let enabled = self.settings.enabled
            && match kind {
                NotificationKind::WaitingForApproval => self.settings.waiting_for_approval,
                NotificationKind::WaitingForInput => self.settings.waiting_for_input,
                NotificationKind::Crashed => self.settings.crashed,
                NotificationKind::Recovered => self.settings.recovered,
                NotificationKind::Terminated => self.settings.terminated,
                NotificationKind::Budget => true,
            };
        let t = self.sessions.get_mut(id)?;
        if !enabled {
            return None;
        }
        // The debounce is for flapping: a dialog for another tool call is a new question.
        let about = if kind == NotificationKind::WaitingForApproval { t.pending.clone() } else { None };
        if let Some((last, last_about)) = t.last_sent.get(&kind)
            && now < last.plus(self.debounce)
            && *last_about == about
        {
            return None;
        }
        t.last_sent.insert(kind, (now, about));
        let title = match kind {
            NotificationKind::WaitingForApproval => "Claude needs your approval",
            NotificationKind::WaitingForInput => "Claude is waiting for your input",
            NotificationKind::Crashed => "Session crashed",
            NotificationKind::Recovered => "Session recovered",
            NotificationKind::Terminated => "Session terminated",
            NotificationKind::Budget => "Budget",
        };
        let mut body = if t.label.is_empty() { id.short().to_owned() } else { t.label.clone() };
        match (kind, &t.pending, message) {
            (_, _, Some(m)) if !m.is_empty() => body = format!("{body}\n{m}"),
            (NotificationKind::WaitingForApproval, Some(p), _) => body = format!("{body}\n{p}"),
            _ => {}
        }
        Some(Notification { session_id: id.clone(), kind, title: title.to_owned(), body, at: now })
    }

    /// Sessions that need the user now: waiting for approval or input (and not replaced
    /// by a successor), crashed or terminated.
    pub fn set(&self) -> AttentionSet {
        AttentionSet {
            count: self.needing.len(),
            title: window_title(self.needing.len()),
            session_ids: self.needing.iter().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{PendingTool, SessionPatch};
    use serde_json::json;

    const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

    fn at(s: u64) -> Timestamp {
        T0.plus(Duration::from_secs(s))
    }

    fn sid(s: &str) -> SessionId {
        SessionId::parse(s).unwrap()
    }

    /// The set kept as sessions change is the one a walk over every session finds, through
    /// any sequence of status, supersession, supervision and removal.
    #[test]
    fn the_kept_set_is_what_a_walk_over_all_sessions_finds() {
        let mut a = Attention::new(NotificationSettings::default(), Duration::from_secs(30));
        let statuses = [Status::Working, Status::WaitingForApproval, Status::WaitingForInput, Status::Idle];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..5_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = sid(&format!("s-{}", x % 40));
            let now = at(step);
            match (x >> 8) % 6 {
                0 | 1 => {
                    let changes = SessionPatch { status: Some(statuses[(x >> 16) as usize % 4]), ..Default::default() };
                    a.on_store_event(&StoreEvent::Updated { session_id: id, changes: Box::new(changes) }, now);
                }
                2 => {
                    let changes = SessionPatch { superseded: Some((x >> 20).is_multiple_of(2)), ..Default::default() };
                    a.on_store_event(&StoreEvent::Updated { session_id: id, changes: Box::new(changes) }, now);
                }
                3 => {
                    let signal = match (x >> 24) % 4 {
                        0 => SupervisionSignal::Crashed { message: String::new() },
                        1 => SupervisionSignal::Terminated { message: String::new() },
                        2 => SupervisionSignal::Recovered { message: String::new() },
                        _ => SupervisionSignal::Cleared,
                    };
                    a.on_supervision(&id, signal, now);
                }
                4 => {
                    a.on_store_event(&StoreEvent::Removed { session_id: id }, now);
                }
                _ => {}
            }
            let walked: Vec<SessionId> = a
                .sessions
                .iter()
                .filter(|(_, t)| t.needs_user())
                .map(|(id, _)| id.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(a.set().session_ids, walked, "after step {step}");
        }
    }

    #[test]
    fn a_burst_of_notifications_is_folded_into_one_summary_that_grows() {
        use crate::clock::Mono;
        let n = |s: &str| Notification {
            session_id: sid(s),
            kind: NotificationKind::WaitingForInput,
            title: "Claude is waiting for your input".into(),
            body: format!("task {s}"),
            at: T0,
        };
        let mut c = Coalescer::new(BURST_WINDOW, BURST_ALONE);
        let ms = Mono::from_millis;
        assert_eq!(c.admit(&n("a"), ms(0)), Coalesced::Alone);
        assert_eq!(c.admit(&n("b"), ms(1_000)), Coalesced::Alone);
        let Coalesced::Folded { count: 1, title, .. } = c.admit(&n("c"), ms(2_000)) else { panic!() };
        assert_eq!(title, "1 more session needs you");
        let Coalesced::Folded { count: 2, title, body } = c.admit(&n("d"), ms(3_000)) else { panic!() };
        assert_eq!(title, "2 more sessions need you");
        assert_eq!(body, "Claude is waiting for your input: task d\nClaude is waiting for your input: task c");
        // Still folding while the burst goes on, alone again once it is over.
        assert!(matches!(c.admit(&n("e"), ms(21_500)), Coalesced::Folded { count: 3, .. }));
        assert_eq!(c.admit(&n("f"), ms(42_000)), Coalesced::Alone);
    }

    #[test]
    fn no_notification_for_the_session_the_user_is_looking_at_in_a_focused_window() {
        let n = |kind| Notification { session_id: sid("s1"), kind, title: "t".into(), body: String::new(), at: T0 };
        let input = n(NotificationKind::WaitingForInput);
        assert!(!input.worth_showing(Some(&sid("s1")), true), "they are looking at it");
        assert!(input.worth_showing(Some(&sid("s1")), false), "the window is in the background");
        assert!(input.worth_showing(Some(&sid("s2")), true), "another session");
        assert!(input.worth_showing(None, true));
        assert!(!n(NotificationKind::WaitingForApproval).worth_showing(Some(&sid("s1")), true));
        assert!(n(NotificationKind::Crashed).worth_showing(Some(&sid("s1")), true), "a crash is always said");
    }

    fn status(id: &str, status: &str) -> StoreEvent {
        let status = serde_json::from_value(json!(status)).unwrap();
        StoreEvent::Updated {
            session_id: sid(id),
            changes: Box::new(SessionPatch { status: Some(status), ..Default::default() }),
        }
    }

    fn row(id: &str, status: Status) -> TrackedSession {
        serde_json::from_value(json!({
            "sessionId": id, "projectId": "-p", "cwd": null, "repoRoot": null, "branch": null, "goal": "fix the parser",
            "summary": null, "title": null, "status": status, "hasPendingToolUse": false, "pendingTool": null,
            "lastActivityAt": "2026-01-01T00:00:00.000Z", "createdAt": null, "model": null,
            "usage": {"inputTokens": 0, "outputTokens": 0, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
            "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null, "supersededAt": null,
            "workChainId": id, "workChainName": null, "chainLength": 1, "source": "watcher", "live": true, "pid": 1,
            "transcriptPath": "/x", "permissionMode": null, "malformedLines": 0, "statusFile": null
        }))
        .unwrap()
    }

    #[test]
    fn one_notification_per_transition() {
        let mut a = Attention::new(NotificationSettings::default(), DEFAULT_DEBOUNCE);
        a.baseline(&[row("s", Status::Working)]);
        let n = a.on_store_event(&status("s", "waiting_for_approval"), at(0));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].kind, NotificationKind::WaitingForApproval);
        assert_eq!(n[0].title, "Claude needs your approval");
        assert!(n[0].body.starts_with("fix the parser"));
        // Staying there (another update of the same status) says nothing more.
        assert!(a.on_store_event(&status("s", "waiting_for_approval"), at(1)).is_empty());
        // Flapping out and back within the debounce window: nothing.
        assert!(a.on_store_event(&status("s", "working"), at(2)).is_empty());
        assert!(a.on_store_event(&status("s", "waiting_for_approval"), at(3)).is_empty());
        // A later, separate transition is announced again.
        a.on_store_event(&status("s", "working"), at(20));
        assert_eq!(a.on_store_event(&status("s", "waiting_for_approval"), at(21)).len(), 1);
        // End of turn: waiting for input.
        a.on_store_event(&status("s", "working"), at(25));
        let n = a.on_store_event(&status("s", "waiting_for_input"), at(30));
        assert_eq!(n.iter().map(|n| n.kind).collect::<Vec<_>>(), [NotificationKind::WaitingForInput]);
        // Reaching the prompt from idle is not a turn that ended.
        a.on_store_event(&status("s", "idle"), at(100));
        assert!(a.on_store_event(&status("s", "waiting_for_input"), at(200)).is_empty());
    }

    #[test]
    fn a_dialog_for_another_tool_call_is_announced_within_the_debounce() {
        let mut a = Attention::new(NotificationSettings::default(), DEFAULT_DEBOUNCE);
        a.baseline(&[row("s", Status::Working)]);
        let pending = |tool: &str, target: &str| {
            let changes = SessionPatch {
                status: Some(Status::WaitingForApproval),
                pending_tool: Some(Some(PendingTool { tool: tool.into(), target: target.into() })),
                ..Default::default()
            };
            StoreEvent::Updated { session_id: sid("s"), changes: Box::new(changes) }
        };
        assert_eq!(a.on_store_event(&pending("Bash", "rm -rf build"), at(0)).len(), 1);
        a.on_store_event(&status("s", "working"), at(2));
        let n = a.on_store_event(&pending("Edit", "src/main.rs"), at(4));
        assert_eq!(n.len(), 1, "approving one call and being asked about the next is two questions");
        assert!(n[0].body.ends_with("Edit: src/main.rs"), "{}", n[0].body);
        // The same call flapping is still debounced.
        a.on_store_event(&status("s", "working"), at(5));
        assert!(a.on_store_event(&pending("Edit", "src/main.rs"), at(6)).is_empty());
    }

    #[test]
    fn the_baseline_and_new_sessions_announce_nothing() {
        let mut a = Attention::new(NotificationSettings::default(), DEFAULT_DEBOUNCE);
        a.baseline(&[row("s", Status::WaitingForInput)]);
        assert!(a.on_store_event(&status("s", "waiting_for_input"), at(0)).is_empty());
        let ev = StoreEvent::Discovered { session: Box::new(row("new", Status::WaitingForApproval)) };
        assert!(a.on_store_event(&ev, at(0)).is_empty());
        assert_eq!(a.set().count, 2, "both need the user all the same");
    }

    #[test]
    fn kinds_can_be_turned_off() {
        let settings = NotificationSettings { waiting_for_input: false, ..Default::default() };
        let mut a = Attention::new(settings, DEFAULT_DEBOUNCE);
        a.baseline(&[row("s", Status::Working)]);
        assert!(a.on_store_event(&status("s", "waiting_for_input"), at(0)).is_empty());
        a.set_settings(NotificationSettings { enabled: false, ..Default::default() });
        a.on_store_event(&status("s", "working"), at(100));
        assert!(a.on_store_event(&status("s", "waiting_for_approval"), at(200)).is_empty());
    }

    #[test]
    fn superseded_sessions_leave_the_attention_set() {
        let mut a = Attention::new(NotificationSettings::default(), DEFAULT_DEBOUNCE);
        a.baseline(&[row("a", Status::WaitingForInput), row("b", Status::Working)]);
        assert_eq!(a.set().session_ids, vec![sid("a")]);
        let changes = SessionPatch { superseded: Some(true), ..Default::default() };
        a.on_store_event(&StoreEvent::Updated { session_id: sid("a"), changes: Box::new(changes) }, at(0));
        assert_eq!(a.set(), AttentionSet::default());
        assert!(a.on_store_event(&status("a", "waiting_for_approval"), at(100)).is_empty());
    }

    #[test]
    fn supervision_crash_recover_terminate() {
        let mut a = Attention::new(NotificationSettings::default(), DEFAULT_DEBOUNCE);
        a.baseline(&[row("s", Status::Working)]);
        let n = a.on_supervision(&sid("s"), SupervisionSignal::Crashed { message: "exit code 7".into() }, at(0));
        assert_eq!(n[0].kind, NotificationKind::Crashed);
        assert!(n[0].body.ends_with("exit code 7"));
        assert_eq!(a.set().session_ids, vec![sid("s")]);
        let n = a.on_supervision(
            &sid("s"),
            SupervisionSignal::Recovered { message: "Session recovered automatically".into() },
            at(1),
        );
        assert_eq!(n[0].kind, NotificationKind::Recovered);
        assert_eq!(a.set().count, 0);
        assert!(
            a.on_supervision(&sid("s"), SupervisionSignal::Recovered { message: String::new() }, at(2)).is_empty(),
            "nothing to recover from"
        );
        let n = a.on_supervision(&sid("s"), SupervisionSignal::Terminated { message: "duration limit".into() }, at(3));
        assert_eq!(n[0].kind, NotificationKind::Terminated);
        assert_eq!(a.set().count, 1);
        a.on_supervision(&sid("s"), SupervisionSignal::Cleared, at(4));
        assert_eq!(a.set().count, 0);
        // Issue 36: a budget's warning and suspension are notified, and flag nothing.
        let warning = SupervisionEvent {
            kind: EventKind::SessionWarning {
                reason: "budget".into(),
                remaining_seconds: None,
                message: "80 %".into(),
            },
            session_id: sid("s"),
            at: at(30),
        };
        let signal = SupervisionSignal::from_event(&warning).unwrap();
        assert_eq!(signal, SupervisionSignal::Budget { message: "80 %".into() });
        let n = a.on_supervision(&sid("s"), signal, at(30));
        assert_eq!((n[0].kind, n[0].title.as_str()), (NotificationKind::Budget, "Budget"));
        assert_eq!(a.set().count, 0);
    }
}
