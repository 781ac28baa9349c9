//! Engine streams become the Tauri events of docs/ipc.md: store events (batched as they
//! come) as `store:events`, open timelines as `timeline:update`, the attention set as
//! `attention:changed`. Transcript text crosses as data (JSON strings); the UI renders it
//! as text.

use std::sync::Arc;

use mimesis_core::{SessionId, TimelineItem};
use mimesis_watch::Engine;
use mimesis_watch::engine::IndexedItem;
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;

/// Long strings are cut in pages sent to the webview; `timeline_item` returns an item whole.
const IPC_STRING_MAX: usize = 16 * 1024;
/// At most this many store events per Tauri event.
const BATCH_MAX: usize = 512;
/// How long the store forwarder gathers events after the first of a batch: one frame.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(16);

/// A timeline item as sent to the webview: possibly shortened.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub struct IpcItem {
    #[serde(flatten)]
    item: TimelineItem,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(test, ts(as = "Option<bool>", optional))]
    truncated: bool,
}

impl IpcItem {
    pub fn new(item: &TimelineItem) -> Self {
        let (item, truncated) = item.shortened(IPC_STRING_MAX);
        IpcItem { item, truncated }
    }
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub(crate) struct StoreBatch {
    events: Vec<Arc<mimesis_watch::Envelope>>,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, ts(rename = "TimelineUpdate"))]
pub(crate) struct IpcTimelineUpdate {
    pub(crate) session_id: SessionId,
    pub(crate) total: usize,
    pub(crate) reset: bool,
    pub(crate) changed: Vec<IpcIndexed>,
    pub(crate) seq: u64,
    pub(crate) prev: u64,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
pub(crate) struct IpcIndexed {
    pub(crate) index: usize,
    pub(crate) item: IpcItem,
}

fn ipc_indexed(i: &IndexedItem) -> IpcIndexed {
    IpcIndexed { index: i.index, item: IpcItem::new(&i.item) }
}

/// Forwards the store events after `after` (the seq of the snapshot the page was given) to
/// the webview, batching what comes within a frame. Started by `roster_snapshot`, with a receiver
/// subscribed before that snapshot was taken: nothing falls between the two, and nothing is
/// sent before the page asked (a page that is still loading would parse it for nothing: on a
/// warm start the engine's first events are one per session).
pub async fn forward_store<R: Runtime>(
    app: AppHandle<R>,
    mut rx: tokio::sync::broadcast::Receiver<Arc<mimesis_watch::Envelope>>,
    after: u64,
) {
    loop {
        let first = match rx.recv().await {
            Ok(e) if e.seq <= after => continue,
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "the webview fell behind; asking it to resync");
                let _ = app.emit("store:resync", serde_json::json!({}));
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        // Whatever else comes within a frame goes in the same batch: a burst (200 updates a
        // second across a large roster) reaches the page as at most one batch per frame.
        tokio::time::sleep(COALESCE).await;
        let mut events = vec![first];
        while events.len() < BATCH_MAX {
            match rx.try_recv() {
                Ok(e) => events.push(e),
                Err(_) => break,
            }
        }
        tracing::debug!(events = events.len(), "store:events");
        if let Err(e) = app.emit("store:events", StoreBatch { events }) {
            tracing::warn!(error = %e, "cannot emit store events");
        }
    }
}

pub async fn forward_timeline<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe_timeline();
    loop {
        match rx.recv().await {
            Ok(u) => {
                let payload = IpcTimelineUpdate {
                    session_id: u.session_id.clone(),
                    total: u.total,
                    reset: u.reset,
                    changed: u.changed.iter().map(ipc_indexed).collect(),
                    seq: u.seq,
                    prev: u.prev,
                };
                let _ = app.emit("timeline:update", payload);
            }
            Err(RecvError::Lagged(n)) => {
                // Updates were dropped: each open timeline starts over from the engine's
                // state rather than keep a hole (a reset makes the page reopen it; the page
                // would also see the hole in `prev` at the next update, if one came).
                tracing::warn!(missed = n, "timeline updates fell behind; resyncing the open timelines");
                for (session_id, total) in engine.open_timelines().await.unwrap_or_default() {
                    let payload =
                        IpcTimelineUpdate { session_id, total, reset: true, changed: Vec::new(), seq: 0, prev: 0 };
                    let _ = app.emit("timeline:update", payload);
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Sends the attention set as it is now (`attention:changed`).
pub fn emit_attention<R: Runtime>(app: &AppHandle<R>, engine: &Engine) {
    let set = crate::hosts::with_remote(app, engine.subscribe_attention().borrow().clone());
    if let Some(w) = app.get_webview_window(crate::window::MAIN) {
        let _ = w.set_title(&set.title);
    }
    if let Err(e) = app.emit("attention:changed", set) {
        tracing::warn!(error = %e, "cannot emit the attention set");
    }
}

/// Sends every change of the attention set.
pub async fn forward_attention<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe_attention();
    while rx.changed().await.is_ok() {
        rx.borrow_and_update();
        // The window's title carries the count too (the taskbar, window switchers).
        emit_attention(&app, &engine);
    }
}

/// Waits for the next change of `rx`. Once it has no sender (or when there is no `rx`: this
/// face answers no permission requests) it never returns — rather than returning at once,
/// forever, and spinning the loop that waits on it.
pub async fn next_change<T>(rx: &mut Option<tokio::sync::watch::Receiver<T>>) {
    if let Some(r) = rx
        && r.changed().await.is_ok()
    {
        return;
    }
    *rx = None;
    std::future::pending::<()>().await
}

/// How far the initial index has come (`store:progress`), after every part of it.
pub async fn forward_progress<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe_progress();
    loop {
        let p = *rx.borrow_and_update();
        if let Err(e) = app.emit("store:progress", p) {
            tracing::debug!(error = %e, "cannot emit store:progress");
        }
        if !p.indexing || rx.changed().await.is_err() {
            return;
        }
    }
}

/// The permission requests waiting for an answer from Mimesis, whenever they change
/// (`approvals:changed`, the whole list: there are a few at most).
pub async fn forward_approvals<R: Runtime>(
    app: AppHandle<R>,
    mut rx: tokio::sync::watch::Receiver<Vec<mimesis_core::approval::Pending>>,
) {
    loop {
        let list = rx.borrow_and_update().clone();
        if let Err(e) = app.emit("approvals:changed", list) {
            tracing::debug!(error = %e, "cannot emit approvals:changed");
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}
