//! Quitting with supervised sessions running (issue 37): the tray's Quit, and closing the
//! window where no tray could bring it back, ask in the window first ("Stop them", "Hand
//! them to Claude Code's background service" where the installed `claude` can, or
//! "Cancel"); a signal (SIGTERM, SIGINT, SIGHUP) quits without asking, as the window's
//! "Stop them" does. The sessions a quit stops are recorded as interrupted with `by: quit`
//! (the supervisor's shutdown), and the next start offers them for resume:
//! [`sessions_interrupted`], [`interrupted_dismiss`]. Handed-over sessions are not: they go
//! on under Claude Code's service, background rows after the next start.

use std::sync::atomic::{AtomicBool, Ordering};

use mimesis_core::supervision::interrupted::{self, Interrupted, InterruptedBy};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::commands::AppState;

type CmdResult<T> = Result<T, String>;

/// `app:quit-requested`: the window asks the user what to do with the running sessions.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct QuitRequest {
    /// Supervised sessions that a quit now would stop.
    pub running: u32,
    /// The installed Claude Code can continue them in its background service
    /// (`claude --bg --resume`): the window offers to hand them over.
    pub hand_over: bool,
}

/// The window was asked; a second Quit meanwhile (its page does not answer) quits.
static ASKED: AtomicBool = AtomicBool::new(false);

/// A quit the user asked for (the tray's Quit, the last window closed): at once when no
/// supervised session runs, else the window asks first.
pub fn request<R: Runtime>(app: &AppHandle<R>) {
    if ASKED.swap(true, Ordering::SeqCst) {
        app.exit(0);
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let sup = app.try_state::<AppState>().and_then(|s| s.mimesis.supervisor_now());
        let running =
            sup.map_or(0, |sup| interrupted::at_quit(&sup.sessions(), InterruptedBy::Quit, Default::default()).len());
        if running == 0 {
            app.exit(0);
            return;
        }
        let hand_over = match app.try_state::<AppState>() {
            Some(s) => s.mimesis.can_hand_over().await,
            None => false,
        };
        crate::window::show_main(&app);
        if let Err(e) = app.emit("app:quit-requested", QuitRequest { running: running as u32, hand_over }) {
            tracing::warn!(error = %e, "cannot ask the window about quitting; quitting");
            app.exit(0);
        }
    });
}

/// The window's answer to `app:quit-requested`: `stop` quits (the running sessions stop,
/// recorded as interrupted, offered for resume at the next start); `handover` hands each to
/// Claude Code's background service at its next idle moment (`app:handover` says how it
/// goes), then quits; `cancel` keeps running.
#[tauri::command]
pub async fn app_quit<R: Runtime>(app: AppHandle<R>, choice: String) -> CmdResult<()> {
    match choice.as_str() {
        "stop" => {
            // The sessions stop while the window still draws (its dialog says so), not in
            // the exit, which holds the window's thread until they have: 5-10 s of a frozen
            // window for an agent that ignores /exit and SIGTERM.
            if let Some(state) = app.try_state::<AppState>() {
                state.mimesis.stop_supervised().await;
            }
            app.exit(0);
            Ok(())
        }
        "handover" => {
            let state = app.try_state::<AppState>().ok_or("Mimesis is still starting; try again")?;
            let mimesis = state.mimesis.clone();
            if !mimesis.can_hand_over().await {
                return Err("the installed Claude Code cannot continue sessions in its background service \
                            (`claude --bg --resume` needs 2.1.330 or later); stop them or cancel"
                    .into());
            }
            let app = app.clone();
            tauri::async_runtime::spawn(async move {
                let done = mimesis
                    .hand_over(|p| {
                        if let Err(e) = app.emit("app:handover", p) {
                            tracing::debug!(error = %e, "cannot tell the window how the hand-over goes");
                        }
                    })
                    .await;
                tracing::info!(handed = done.handed, failed = done.failed, "handed the sessions over; quitting");
                app.exit(0);
            });
            Ok(())
        }
        "cancel" => {
            ASKED.store(false, Ordering::SeqCst);
            Ok(())
        }
        other => Err(format!("{other:?} is not an answer to quitting; choose stop, handover or cancel")),
    }
}

/// The supervised sessions a quit or a crash of Mimesis interrupted and that are not
/// running again, oldest first: each offers Resume (`pty_create` with `resume`).
#[tauri::command]
pub async fn sessions_interrupted(state: tauri::State<'_, AppState>) -> CmdResult<Vec<Interrupted>> {
    Ok(match state.mimesis.supervisor().await {
        Some(sup) => sup.interrupted().await,
        None => Vec::new(),
    })
}

/// The user dismissed the offer to resume these sessions: forgotten.
#[tauri::command(rename_all = "camelCase")]
pub async fn interrupted_dismiss(state: tauri::State<'_, AppState>, session_ids: Vec<String>) -> CmdResult<()> {
    let ids = session_ids
        .iter()
        .map(|s| mimesis_core::SessionId::parse(s).map_err(|e| format!("{s:?} is not a session id: {e}")))
        .collect::<CmdResult<Vec<_>>>()?;
    if let Some(sup) = state.mimesis.supervisor().await {
        sup.dismiss_interrupted(ids);
    }
    Ok(())
}
