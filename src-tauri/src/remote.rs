//! Other machines in the window (issue 13): the machines of the settings kept connected
//! by the wiring's [`Hub`], their rows beside the local ones (keyed `host:id`), their
//! states (`hosts:changed`), their changes (`remote:events`) and their timelines, read on
//! the host and followed while open; Settings › Machines' commands. The state the other
//! modules read is in [`crate::hosts`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mimesis_core::remote::Destination;
use mimesis_wiring::Mimesis;
use mimesis_wiring::remote::{HostInfo, Hub, HubEvent, Ssh};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Runtime};

use crate::events::IpcItem;
use crate::hosts::{Open, RemoteState};

fn configured(mimesis: &Mimesis) -> Vec<Destination> {
    mimesis.settings().machines.hosts.iter().filter_map(|h| Destination::parse(h).ok()).collect()
}

/// Connects the machines of the settings, follows changes of the list, and forwards what
/// the hub says to the page.
pub fn start<R: Runtime>(app: &AppHandle<R>, mimesis: &Mimesis) -> RemoteState {
    let _guard = tauri::async_runtime::handle().inner().enter();
    let hub = Hub::new(Ssh::from_env(), mimesis.clock().clone());
    hub.set_notifications(mimesis.settings().notifications);
    hub.set_hosts(&configured(mimesis));
    let state = RemoteState::new(hub.clone());
    let mut settings = mimesis.subscribe_settings();
    let follow = hub.clone();
    tauri::async_runtime::spawn(async move {
        while settings.changed().await.is_ok() {
            let now = settings.borrow_and_update().clone();
            let hosts: Vec<Destination> =
                now.machines.hosts.iter().filter_map(|h| Destination::parse(h).ok()).collect();
            follow.set_notifications(now.notifications);
            follow.set_hosts(&hosts);
        }
    });
    tauri::async_runtime::spawn(forward(app.clone(), hub, state.open.clone()));
    state
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub(crate) struct EventsPayload {
    #[cfg_attr(test, ts(as = "Vec<mimesis_core::StoreEvent>"))]
    events: Vec<serde_json::Value>,
}

/// A `timeline:update` for another machine's session: no `seq` (the page applies it as it
/// comes); `changed` holds what differs from what was last read.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteTimelineUpdate {
    session_id: String,
    total: usize,
    reset: bool,
    changed: Vec<Changed>,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub(crate) struct Changed {
    index: usize,
    item: IpcItem,
}

async fn forward<R: Runtime>(app: AppHandle<R>, hub: Hub, open: Open) {
    let mut rx = hub.subscribe();
    loop {
        match rx.recv().await {
            Ok(HubEvent::Attention(_)) => crate::events::send_attention(&app),
            Ok(HubEvent::Notify { key, title, body }) => crate::notify::show_remote(&app, &key, &title, &body),
            Ok(HubEvent::Supervision(events)) => {
                // (Each after the row change it describes, which went out before it.)
                for ev in events {
                    let _ = app.emit("supervision:event", ev);
                }
            }
            Ok(HubEvent::Hosts(hosts)) => {
                let _ = app.emit("hosts:changed", crate::hosts::HostsPayload { hosts });
            }
            Ok(HubEvent::Events(events)) => {
                let touched: Vec<String> = events
                    .iter()
                    .filter_map(|e| e.get("sessionId").or_else(|| e.get("session")?.get("sessionId")))
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                let _ = app.emit("remote:events", EventsPayload { events });
                for key in touched {
                    let is_open = open.lock().map(|o| o.contains_key(&key)).unwrap_or(false);
                    if is_open {
                        tauri::async_runtime::spawn(follow(app.clone(), hub.clone(), open.clone(), key));
                    }
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                // The page re-reads the roster; the hub's rows are in the snapshot.
                let _ = app.emit("store:resync", serde_json::json!({}));
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Timelines being re-read (true: changed again meanwhile, read once more after).
static FOLLOWING: Mutex<Option<HashMap<String, bool>>> = Mutex::new(None);

/// Re-reads an open remote timeline after its session changed and sends what differs;
/// one read per timeline at a time, and one more when it changed during the read.
async fn follow<R: Runtime>(app: AppHandle<R>, hub: Hub, open: Open, key: String) {
    {
        let mut f = FOLLOWING.lock().unwrap_or_else(|e| e.into_inner());
        let f = f.get_or_insert_with(HashMap::new);
        if let Some(again) = f.get_mut(&key) {
            *again = true;
            return;
        }
        f.insert(key.clone(), false);
    }
    loop {
        follow_once(&app, &hub, &open, &key).await;
        let mut f = FOLLOWING.lock().unwrap_or_else(|e| e.into_inner());
        let f = f.get_or_insert_with(HashMap::new);
        match f.get_mut(&key) {
            Some(again) if *again => *again = false,
            _ => {
                f.remove(&key);
                return;
            }
        }
    }
}

async fn follow_once<R: Runtime>(app: &AppHandle<R>, hub: &Hub, open: &Open, key: &str) {
    let key = key.to_owned();
    let Ok(items) = hub.timeline(&key).await else { return };
    let before = {
        let mut o = open.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = o.get_mut(&key) else { return };
        std::mem::replace(slot, Arc::new(items.clone()))
    };
    let changed: Vec<Changed> = items
        .iter()
        .enumerate()
        .filter(|(i, it)| before.get(*i) != Some(*it))
        .map(|(index, it)| Changed { index, item: IpcItem::new(it) })
        .collect();
    let reset = items.len() < before.len();
    if changed.is_empty() && !reset {
        return;
    }
    let _ = app.emit("timeline:update", RemoteTimelineUpdate { session_id: key, total: items.len(), reset, changed });
}

/// The machines and their states (Settings › Machines).
#[tauri::command]
pub fn hosts_list(state: tauri::State<'_, RemoteState>) -> Vec<HostInfo> {
    state.hub.hosts()
}

/// Connect to a machine now, without waiting.
#[tauri::command]
pub async fn host_retry(state: tauri::State<'_, RemoteState>, host: String) -> Result<(), String> {
    let dest = Destination::parse(&host).map_err(|e| e.to_string())?;
    state.hub.retry(&dest).await.map_err(|e| e.to_string())
}

/// Copy this build's `mimesis` to a machine that has none (the user's click), then connect.
#[tauri::command]
pub async fn host_install(state: tauri::State<'_, RemoteState>, host: String) -> Result<(), String> {
    let dest = Destination::parse(&host).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot tell where Mimesis is installed: {e}"))?;
    let cli = mimesis_wiring::hooks::install::hook_program(&exe);
    if cli == exe {
        return Err("the mimesis command is not installed next to the app, so there is nothing to copy".into());
    }
    state.hub.install(&dest, cli).await.map_err(|e| e.to_string())
}

/// Adds a machine to Settings › Machines (connected at once).
#[tauri::command]
pub async fn host_add(state: tauri::State<'_, crate::commands::AppState>, host: String) -> Result<(), String> {
    change(&state.mimesis, &host, true).await.map_err(|e| e.to_string())
}

/// Removes a machine (its connection closes, its rows leave the roster).
#[tauri::command]
pub async fn host_remove(state: tauri::State<'_, crate::commands::AppState>, host: String) -> Result<(), String> {
    change(&state.mimesis, &host, false).await.map_err(|e| e.to_string())
}

async fn change(mimesis: &Mimesis, host: &str, add: bool) -> Result<(), ChangeError> {
    let dest = Destination::parse(host)?;
    let mut settings = mimesis.settings();
    settings.machines.change(&dest, add)?;
    let doc = serde_json::to_value(&settings)?;
    let outcome = mimesis.settings_set(&doc).await;
    if let Some(e) = outcome.errors.first() {
        return Err(ChangeError::Refused(e.message.clone()));
    }
    Ok(())
}

/// Why the list of machines did not change: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
enum ChangeError {
    #[error(transparent)]
    Destination(#[from] mimesis_core::remote::DestinationError),
    #[error(transparent)]
    List(#[from] mimesis_core::settings::HostListError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The settings' own sentence.
    #[error("{0}")]
    Refused(String),
}
