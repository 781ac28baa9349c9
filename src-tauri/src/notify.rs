//! Desktop notifications (SPEC U5). The engine decides when to notify (once per
//! transition, per-kind preferences); this only shows its decisions and turns a click on
//! one into `app:open-session`.
//!
//! Clicks: on Linux a click is reported when the notification server offers the `default`
//! action (GNOME, KDE, dunst, mako do); on Windows while the toast is on screen; on macOS
//! as the plugin reports it. Where nothing is reported the notification is still shown.
//! Without a notification server (or a session bus) nothing is shown and nothing fails.

use std::sync::atomic::{AtomicI32, Ordering};

use mimesis_core::SessionId;
use mimesis_core::attention::Notification;
use mimesis_watch::Engine;
use tauri::{AppHandle, Runtime};
use tauri_plugin_notification::NotificationExt;
use tokio::sync::broadcast::error::RecvError;

use crate::window;

/// The body is the session's goal or title: transcript text, kept short.
const BODY_CHARS: usize = 200;
/// The notification's payload key naming its session.
const SESSION_KEY: &str = "sessionId";

/// Makes clicks on our notifications open their session.
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    let handle = app.clone();
    let _ = app.notification().on_action(move |performed| {
        // A click on the notification itself; it carries no other actions.
        if performed.action_id() != "tap" {
            return;
        }
        let id = performed
            .notification()
            .and_then(|n| n.extra().get(SESSION_KEY))
            .and_then(|v| v.as_str())
            .and_then(|s| SessionId::parse(s).ok());
        if let Some(id) = id {
            window::open_session(&handle, &id);
        }
    });
}

/// Shows every notification the engine decides on.
pub async fn follow<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe_notifications();
    loop {
        match rx.recv().await {
            Ok(n) => show(&app, &n),
            Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "notifications fell behind; some were not shown"),
            Err(RecvError::Closed) => return,
        }
    }
}

fn show<R: Runtime>(app: &AppHandle<R>, n: &Notification) {
    static NEXT_ID: AtomicI32 = AtomicI32::new(1);
    let body: Vec<String> = n.body.lines().map(|l| mimesis_core::text::clean_text(l, BODY_CHARS)).collect();
    let result = app
        .notification()
        .builder()
        .id(NEXT_ID.fetch_add(1, Ordering::Relaxed))
        .title(&n.title)
        .body(escape_markup(&body.join("\n")))
        .extra(SESSION_KEY, n.session_id.as_str())
        .show();
    if let Err(e) = result {
        tracing::warn!(error = %e, session = %n.session_id, "cannot show a desktop notification");
    }
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
