//! Other machines' state in the app (issue 13), for every module that needs it: the
//! wiring's [`Hub`] and the remote timelines open in the window. A leaf: it depends on no
//! other module of the app (`remote` runs the hub and its commands on top of it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mimesis_core::TimelineItem;
use mimesis_core::attention::{AttentionSet, window_title};
use mimesis_core::remote::split_host_id;
use mimesis_wiring::remote::Hub;
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime};

/// `hosts:changed`: every configured machine's state, in the configured order.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub(crate) struct HostsPayload {
    pub(crate) hosts: Vec<mimesis_wiring::remote::HostInfo>,
}

/// The open timelines of other machines' sessions, as last read there.
pub type Open = Arc<Mutex<HashMap<String, Arc<Vec<TimelineItem>>>>>;

pub struct RemoteState {
    pub hub: Hub,
    pub open: Open,
}

impl RemoteState {
    pub fn new(hub: Hub) -> RemoteState {
        RemoteState { hub, open: Arc::default() }
    }
}

/// Whether a window key names a session of another machine (`host:id`).
pub fn is_remote(key: &str) -> bool {
    split_host_id(key).0.is_some()
}

/// The attention set as the window shows it: this machine's sessions and other machines'
/// (`host:id`), one count, one title.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub struct WindowAttention {
    pub count: usize,
    pub session_ids: Vec<String>,
    pub title: String,
}

pub fn with_remote<R: Runtime>(app: &AppHandle<R>, set: AttentionSet) -> WindowAttention {
    let mut ids: Vec<String> = set.session_ids.iter().map(|i| i.to_string()).collect();
    if let Some(r) = app.try_state::<RemoteState>() {
        ids.extend(r.hub.needs_you());
    }
    WindowAttention { count: ids.len(), title: window_title(ids.len()), session_ids: ids }
}

/// `open_timeline` of a session of another machine: read there, kept while open.
pub async fn open_timeline<R: Runtime>(app: &AppHandle<R>, key: &str) -> Result<Arc<Vec<TimelineItem>>, TimelineError> {
    let state = app.state::<RemoteState>();
    let items = Arc::new(state.hub.timeline(key).await?);
    state.open.lock().map_err(|_| TimelineError::Poisoned)?.insert(key.to_owned(), items.clone());
    Ok(items)
}

/// An open remote timeline, as last read.
pub fn opened<R: Runtime>(app: &AppHandle<R>, key: &str) -> Result<Arc<Vec<TimelineItem>>, TimelineError> {
    let state = app.state::<RemoteState>();
    let open = state.open.lock().map_err(|_| TimelineError::Poisoned)?;
    open.get(key).cloned().ok_or(TimelineError::NotOpen)
}

/// Why a timeline of another machine is not there: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error(transparent)]
    Remote(#[from] mimesis_wiring::remote::RemoteError),
    #[error("poisoned")]
    Poisoned,
    #[error("that timeline is not open")]
    NotOpen,
}

/// The webview takes the sentence (commands answer `Result<_, String>`).
impl From<TimelineError> for String {
    fn from(e: TimelineError) -> String {
        e.to_string()
    }
}

pub fn close<R: Runtime>(app: &AppHandle<R>, key: &str) {
    if let Ok(mut o) = app.state::<RemoteState>().open.lock() {
        o.remove(key);
    }
}
