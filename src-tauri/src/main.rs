//! The Mimesis desktop app: a thin Tauri shell over the engine.
//!
//! It only wires things together: engine store events become `store:events` Tauri events
//! (batched as they come), open timelines become `timeline:update` events, and the UI's
//! commands become engine calls. Transcript text crosses to the webview as data (JSON
//! strings); the UI renders it as text.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mimesis_engine::engine::{IndexedItem, Snapshot};
use mimesis_engine::{Engine, EngineConfig, SessionId, TimelineItem, TimelinePage, demo, roots};
use serde::Serialize;
use tauri::{Emitter, Manager};
use tokio::sync::broadcast::error::RecvError;

/// Long strings are cut in pages sent to the webview; `timeline_item` returns an item whole.
const IPC_STRING_MAX: usize = 16 * 1024;
/// At most this many store events per Tauri event.
const BATCH_MAX: usize = 512;

struct AppState {
    engine: Engine,
    demo: Mutex<Option<demo::Demo>>,
    demo_root: PathBuf,
}

/// A timeline item as sent to the webview: possibly shortened.
#[derive(Serialize)]
struct IpcItem {
    #[serde(flatten)]
    item: TimelineItem,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

impl IpcItem {
    fn new(item: &TimelineItem) -> Self {
        let (item, truncated) = item.shortened(IPC_STRING_MAX);
        IpcItem { item, truncated }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IpcPage {
    session_id: SessionId,
    total: usize,
    start: usize,
    items: Vec<IpcItem>,
}

impl From<TimelinePage> for IpcPage {
    fn from(p: TimelinePage) -> Self {
        IpcPage {
            session_id: p.session_id,
            total: p.total,
            start: p.start,
            items: p.items.iter().map(IpcItem::new).collect(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RosterSnapshot {
    #[serde(flatten)]
    snapshot: Snapshot,
    demo: bool,
}

type CmdResult<T> = Result<T, String>;

fn session_id(s: &str) -> CmdResult<SessionId> {
    SessionId::parse(s).map_err(|e| e.to_string())
}

#[tauri::command]
async fn roster_snapshot(state: tauri::State<'_, AppState>) -> CmdResult<RosterSnapshot> {
    let snapshot = state.engine.snapshot().await.map_err(|e| e.to_string())?;
    let demo = state.demo.lock().map(|d| d.is_some()).unwrap_or(false);
    Ok(RosterSnapshot { snapshot, demo })
}

#[tauri::command(rename_all = "camelCase")]
async fn open_timeline(state: tauri::State<'_, AppState>, session_id: String, tail: usize) -> CmdResult<IpcPage> {
    let id = self::session_id(&session_id)?;
    state.engine.open_timeline(&id, tail.min(2_000)).await.map(IpcPage::from).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
async fn timeline_range(
    state: tauri::State<'_, AppState>,
    session_id: String,
    start: usize,
    end: usize,
) -> CmdResult<IpcPage> {
    let id = self::session_id(&session_id)?;
    let end = end.min(start.saturating_add(2_000));
    state.engine.timeline_range(&id, start, end).await.map(IpcPage::from).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
async fn timeline_item(state: tauri::State<'_, AppState>, session_id: String, index: usize) -> CmdResult<TimelineItem> {
    let id = self::session_id(&session_id)?;
    match state.engine.timeline_item(&id, index).await {
        Ok(Some(item)) => Ok(item),
        Ok(None) => Err(format!("the timeline of {id} has no item {index}")),
        Err(e) => Err(e.to_string()),
    }
}

#[tauri::command(rename_all = "camelCase")]
fn close_timeline(state: tauri::State<'_, AppState>, session_id: String) -> CmdResult<()> {
    state.engine.close_timeline(&self::session_id(&session_id)?);
    Ok(())
}

#[tauri::command]
async fn start_demo(state: tauri::State<'_, AppState>) -> CmdResult<()> {
    {
        let mut slot = state.demo.lock().map_err(|_| "demo state poisoned".to_owned())?;
        if slot.is_some() {
            return Ok(());
        }
        let d = demo::start(&state.demo_root, 1.0)
            .map_err(|e| format!("cannot write the demo sessions into {}: {e}", state.demo_root.display()))?;
        *slot = Some(d);
    }
    state.engine.add_root(state.demo_root.clone()).await.map_err(|e| e.to_string())
}

#[tauri::command]
async fn stop_demo(state: tauri::State<'_, AppState>) -> CmdResult<()> {
    let demo = state.demo.lock().map_err(|_| "demo state poisoned".to_owned())?.take();
    if let Some(mut d) = demo {
        d.stop();
    }
    state.engine.remove_root(state.demo_root.clone()).await.map_err(|e| e.to_string())
}

#[derive(Serialize, Clone)]
struct StoreBatch {
    events: Vec<Arc<mimesis_engine::Envelope>>,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct IpcTimelineUpdate {
    session_id: SessionId,
    total: usize,
    reset: bool,
    changed: Vec<IpcIndexed>,
}

#[derive(Serialize, Clone)]
struct IpcIndexed {
    index: usize,
    item: serde_json::Value,
}

fn ipc_indexed(i: &IndexedItem) -> IpcIndexed {
    IpcIndexed { index: i.index, item: serde_json::to_value(IpcItem::new(&i.item)).unwrap_or_default() }
}

/// Forwards store events to the webview, batching whatever is queued.
async fn forward_store(app: tauri::AppHandle, engine: Engine) {
    let mut rx = engine.subscribe();
    loop {
        let first = match rx.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "the webview fell behind; asking it to resync");
                let _ = app.emit("store:resync", serde_json::json!({}));
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let mut events = vec![first];
        while events.len() < BATCH_MAX {
            match rx.try_recv() {
                Ok(e) => events.push(e),
                Err(_) => break,
            }
        }
        if let Err(e) = app.emit("store:events", StoreBatch { events }) {
            tracing::warn!(error = %e, "cannot emit store events");
        }
    }
}

async fn forward_timeline(app: tauri::AppHandle, engine: Engine) {
    let mut rx = engine.subscribe_timeline();
    loop {
        match rx.recv().await {
            Ok(u) => {
                let payload = IpcTimelineUpdate {
                    session_id: u.session_id.clone(),
                    total: u.total,
                    reset: u.reset,
                    changed: u.changed.iter().map(ipc_indexed).collect(),
                };
                let _ = app.emit("timeline:update", payload);
            }
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        }
    }
}

/// `--config-dir DIR` (repeatable), as in the CLI.
fn config_dirs_from_args() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--config-dir" {
            if let Some(d) = args.next() {
                dirs.push(PathBuf::from(d));
            }
        } else if let Some(d) = a.strip_prefix("--config-dir=") {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MIMESIS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();

    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        eprintln!(
            "mimesis-desktop: there is no display (DISPLAY and WAYLAND_DISPLAY are unset).\n\
             In a terminal, `mimesis ls` shows the roster and `mimesis watch` follows it live."
        );
        std::process::exit(1);
    }

    let roots = roots::from_env(&config_dirs_from_args());
    let demo_root = roots::data_dir().join("demo");
    let result = tauri::Builder::default()
        .setup(move |app| {
            let engine =
                tauri::async_runtime::block_on(async { Engine::start(EngineConfig { roots, ..Default::default() }) });
            tauri::async_runtime::spawn(forward_store(app.handle().clone(), engine.clone()));
            tauri::async_runtime::spawn(forward_timeline(app.handle().clone(), engine.clone()));
            app.manage(AppState { engine, demo: Mutex::new(None), demo_root });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            roster_snapshot,
            open_timeline,
            timeline_range,
            timeline_item,
            close_timeline,
            start_demo,
            stop_demo
        ])
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(e) => {
            eprintln!("mimesis-desktop: cannot start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event
            && let Some(state) = handle.try_state::<AppState>()
        {
            if let Ok(mut d) = state.demo.lock() {
                d.take();
            }
            tauri::async_runtime::block_on(state.engine.shutdown());
        }
    });
}
