//! Desktop notifications (SPEC U5). The engine decides when to notify (once per
//! transition, per-kind preferences); this only shows its decisions, turns a click on one
//! into `app:open-session`, and — for a session waiting for approval that can be answered
//! from here (a hook's request, or a session this app supervises) — offers **Approve
//! once** and **Deny** on the notification itself (issue 12). An action is the user's
//! explicit answer; nothing is ever chosen for them.
//!
//! Clicks and actions: on Linux they are reported when the notification server offers
//! actions (GNOME, KDE, dunst, mako do); on Windows while the toast is on screen; on macOS
//! as the plugin reports it. Where nothing is reported the notification is still shown.
//! Without a notification server (or a session bus) nothing is shown and nothing fails.
//!
//! A request that reaches Mimesis after its session's notification was shown replaces that
//! notification with one that offers the actions; a request answered or gone closes its
//! notification. Bursts of the other kinds are folded into one summary
//! (`mimesis_core::attention::Coalescer`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};

use mimesis_core::SessionId;
use mimesis_core::approval::{Behavior, Pending, Via};
use mimesis_core::attention::{BURST_ALONE, BURST_WINDOW, Coalesced, Coalescer, NotificationKind};
use mimesis_core::dialog::DialogKind;
use mimesis_wiring::Engine;
use mimesis_wiring::Mimesis;
use mimesis_wiring::approvals::Target;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::{Action, ActionType, NotificationExt};
use tokio::sync::broadcast::error::RecvError;

use crate::commands::AppState;
use crate::window;

/// The body is the session's goal or title: transcript text, kept short.
const BODY_CHARS: usize = 200;
/// The notification's payload keys: its session, and the request its actions answer.
const SESSION_KEY: &str = "sessionId";
const REQUEST_KEY: &str = "requestId";
/// The action types of notifications that can be answered, each naming what its actions do:
/// a tool call's permission, auto mode's own dialog, plan mode's exit.
const ANSWERABLE: &str = "approval";
const ANSWERABLE_AUTO_MODE: &str = "approval-auto-mode";
const ANSWERABLE_PLAN: &str = "approval-plan";
const APPROVE: &str = "approve";
const DENY: &str = "deny";

/// Makes clicks on our notifications open their session, and their actions answer it.
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    let kinds = [
        (ANSWERABLE, DialogKind::Permission),
        (ANSWERABLE_AUTO_MODE, DialogKind::AutoMode),
        (ANSWERABLE_PLAN, DialogKind::Plan),
    ];
    let types = kinds
        .into_iter()
        .map(|(id, kind)| {
            let (yes, no) = mimesis_core::answering::describe(kind, None, None);
            ActionType::builder(id)
                .actions(vec![Action::builder(APPROVE, &yes.label).build(), Action::builder(DENY, &no.label).build()])
                .build()
        })
        .collect();
    let _ = app.notification().register_action_types(types);
    let handle = app.clone();
    let _ = app.notification().on_action(move |performed| {
        let extra = performed.notification().map(|n| n.extra().clone()).unwrap_or_default();
        let text = |k: &str| extra.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let Some(key) = text(SESSION_KEY) else { return };
        if performed.action_id() == "tap" && crate::hosts::is_remote(&key) {
            return window::open_key(&handle, &key);
        }
        let Some(id) = SessionId::parse(&key).ok() else { return };
        let behavior = match performed.action_id() {
            "tap" => return window::open_session(&handle, &id),
            APPROVE => Behavior::Allow,
            DENY => Behavior::Deny,
            _ => return,
        };
        let (app, request) = (handle.clone(), text(REQUEST_KEY));
        tauri::async_runtime::spawn(async move {
            let mimesis = app.state::<AppState>().mimesis.clone();
            if let Err(e) = answer(&mimesis, &id, request.as_deref(), behavior).await {
                tracing::warn!(session = %id, error = %e, "an answer from a notification failed");
                show_text(&app, "Could not answer from the notification", &e, &id);
            }
        });
    });
}

/// The user's answer from a notification: to the hook's request it names, else typed into
/// the supervised session's dialog.
async fn answer(mimesis: &Mimesis, id: &SessionId, request: Option<&str>, behavior: Behavior) -> Result<(), String> {
    if let Some(request) = request {
        return mimesis
            .approvals()
            .decide(Target::Id(request), behavior, None, None, None, Via::Notification)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string());
    }
    let sup = mimesis.supervisor_now().ok_or("this session is not supervised by Mimesis")?;
    let word = if behavior == Behavior::Allow { "approve" } else { "deny" };
    crate::pty::answer_supervised(mimesis, &sup, id.clone(), word, Via::Notification).await.map(|_| ())
}

/// A notification shown for a session waiting for approval.
struct Shown {
    id: i32,
    /// The request its actions answer; `None` when it offers none or answers the PTY.
    request: Option<String>,
    answerable: bool,
    title: String,
    body: String,
}

/// Shows every notification the engine decides on, and keeps approval notifications in
/// step with the requests waiting for an answer.
/// Subscribed when called, not when the task is first polled: nothing decided in between is lost.
pub fn follow<R: Runtime>(
    app: AppHandle<R>,
    engine: Engine,
    mimesis: Mimesis,
) -> impl Future<Output = ()> + Send + 'static {
    let rx = engine.subscribe_notifications();
    let requests = Some(mimesis.approvals().subscribe());
    follow_from(app, mimesis, rx, requests)
}

async fn follow_from<R: Runtime>(
    app: AppHandle<R>,
    mimesis: Mimesis,
    mut rx: tokio::sync::broadcast::Receiver<mimesis_core::attention::Notification>,
    mut requests: Option<tokio::sync::watch::Receiver<Vec<Pending>>>,
) {
    let mut shown: HashMap<SessionId, Shown> = HashMap::new();
    let mut burst = Coalescer::new(BURST_WINDOW, BURST_ALONE);
    let mut summary: Option<i32> = None;
    loop {
        tokio::select! {
            n = rx.recv() => match n {
                Ok(n) if !n.worth_showing(viewing(&app).and_then(|v| SessionId::parse(&v).ok()).as_ref(), window::focused(&app)) => {
                    tracing::debug!(session = %n.session_id, "not notified: the user is looking at it");
                }
                Ok(n) if n.kind == NotificationKind::WaitingForApproval => {
                    let pending = requests.as_ref().map(|r| r.borrow().clone()).unwrap_or_default();
                    if let Some(old) = shown.remove(&n.session_id) {
                        close(&app, old.id);
                    }
                    let body = body_of(&n.body);
                    let s = show_approval(&app, &mimesis, &n.session_id, &n.title, &body, &pending);
                    shown.insert(n.session_id.clone(), s);
                }
                Ok(n) => match burst.admit(&n, mimesis.clock().mono()) {
                    Coalesced::Alone => {
                        show(&app, &n.title, &body_of(&n.body), n.session_id.as_str(), None);
                    }
                    // A burst: one summary, replaced as it grows; a click opens the latest.
                    Coalesced::Folded { title, body, .. } => {
                        if let Some(id) = summary.take() {
                            close(&app, id);
                        }
                        summary = Some(show(&app, &title, &body_of(&body), n.session_id.as_str(), None));
                    }
                },
                Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "notifications fell behind; some were not shown"),
                Err(RecvError::Closed) => return,
            },
            () = crate::events::next_change(&mut requests) => {
                let pending = requests.as_mut().map(|r| r.borrow_and_update().clone()).unwrap_or_default();
                shown.retain(|session, s| {
                    let open = pending.iter().find(|p| &p.request.session_id == session);
                    match (&s.request, open) {
                        // Its request was answered or went away: the notification goes too.
                        (Some(r), _) if !pending.iter().any(|p| &p.id == r) => {
                            close(&app, s.id);
                            false
                        }
                        // A request came for a session notified without actions: offer them.
                        (None, Some(_)) if !s.answerable => {
                            close(&app, s.id);
                            *s = show_approval(&app, &mimesis, session, &s.title.clone(), &s.body.clone(), &pending);
                            true
                        }
                        _ => true,
                    }
                });
            }
        }
    }
}

/// The session open in the window, as the page said (`set_viewing`).
fn viewing<R: Runtime>(app: &AppHandle<R>) -> Option<String> {
    app.try_state::<AppState>()?.viewing.lock().ok()?.clone()
}

/// An approval notification: with Approve once / Deny when a request of the session waits
/// here or this app supervises it.
fn show_approval<R: Runtime>(
    app: &AppHandle<R>,
    mimesis: &Mimesis,
    session: &SessionId,
    title: &str,
    body: &str,
    pending: &[Pending],
) -> Shown {
    // A request that can be answered from here (a dialog in a terminal Mimesis cannot
    // reach is not), and with actions that say what they do; a question needs its options
    // chosen in the window.
    let request = pending.iter().find(|p| &p.request.session_id == session && p.channel.answerable());
    let supervised = mimesis.supervisor_now().and_then(|s| s.supervision(session)).is_some_and(|s| s.pid.is_some());
    let kind = request.map(|p| {
        p.dialog.unwrap_or(match p.request.tool.as_str() {
            "AskUserQuestion" => DialogKind::Question,
            "ExitPlanMode" => DialogKind::Plan,
            _ => DialogKind::Permission,
        })
    });
    let actions = match kind {
        Some(DialogKind::AutoMode) => Some(ANSWERABLE_AUTO_MODE),
        Some(DialogKind::Plan) => Some(ANSWERABLE_PLAN),
        Some(DialogKind::Question) => None,
        Some(_) => Some(ANSWERABLE),
        None if supervised => Some(ANSWERABLE),
        None => None,
    };
    let answerable = actions.is_some();
    // The request's own words where there is one: the tool and what it would touch.
    let body = match request {
        Some(p) => {
            let what = mimesis_core::text::clean_text(
                &format!("{} {}", p.request.tool, p.request.target.as_deref().unwrap_or("")),
                BODY_CHARS,
            );
            format!("{what}\n{body}")
        }
        None => body.to_owned(),
    };
    let id = show(app, title, &body, session.as_str(), actions.map(|a| (a, request.map(|p| p.id.as_str()))));
    Shown { id, request: request.map(|p| p.id.clone()), answerable, title: title.to_owned(), body }
}

fn body_of(body: &str) -> String {
    let lines: Vec<String> = body.lines().map(|l| mimesis_core::text::clean_text(l, BODY_CHARS)).collect();
    lines.join("\n")
}

/// Shows one notification; `answer: Some((actions, request))` offers the approval actions
/// of that type (for the request, or the supervised session's dialog when `None` inside).
/// Returns its id.
fn show<R: Runtime>(
    app: &AppHandle<R>,
    title: &str,
    body: &str,
    session: &str,
    answer: Option<(&str, Option<&str>)>,
) -> i32 {
    static NEXT_ID: AtomicI32 = AtomicI32::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut builder =
        app.notification().builder().id(id).title(title).body(escape_markup(body)).extra(SESSION_KEY, session);
    if let Some((actions, request)) = answer {
        builder = builder.action_type_id(actions);
        if let Some(r) = request {
            builder = builder.extra(REQUEST_KEY, r);
        }
    }
    if let Err(e) = builder.show() {
        tracing::warn!(error = %e, session = %session, "cannot show a desktop notification");
    }
    id
}

pub(crate) fn show_text<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str, session: &SessionId) {
    show(app, title, &body_of(body), session.as_str(), None);
}

/// A notification about another machine's session (`key`: `host:id`): none while the user
/// looks at that session in the focused window; a click opens it. Never with answer
/// actions (its requests are answered on its machine).
pub fn show_remote<R: Runtime>(app: &AppHandle<R>, key: &str, title: &str, body: &str) {
    if window::focused(app) && viewing(app).as_deref() == Some(key) {
        return;
    }
    show(app, title, &body_of(body), key, None);
}

fn close<R: Runtime>(app: &AppHandle<R>, id: i32) {
    let _ = app.notification().remove_active(vec![id]);
}

/// Servers with `body-markup` read `<b>`, `<a href>`, `<img>` in the body: the transcript
/// text must stay text.
fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}
