//! The window's search over all history (issue 35, docs/ipc.md `search_history`): the
//! index kept up to date while the app watches ([`mimesis_wiring::search::Keeper`], poked
//! whenever the engine publishes a change, started once the page shows the complete roster
//! so the roster never waits for it), queries over it and over the machines the window
//! follows, and finding a hit's item in a timeline.

use std::sync::Arc;

use mimesis_core::TimelineItem;
use mimesis_core::search::{Progress, Request, Results};
use mimesis_wiring::Mimesis;
use mimesis_wiring::search::Keeper;
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;

use crate::commands::AppState;

/// The keeper, once the engine's first roster is complete and on screen.
#[derive(Default)]
pub struct SearchState {
    keeper: std::sync::OnceLock<Keeper>,
    /// The page said its roster is complete on screen (`roster_shown`).
    shown: tokio::sync::Notify,
}

/// How long the keeper waits for the page to show its roster, after the engine's: a page
/// that never says so (it failed to load) delays the index by this much at most.
const SHOWN_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

impl SearchState {
    fn progress(&self) -> Progress {
        // Before the keeper starts, the index is as the last run left it: searchable.
        self.keeper.get().map(Keeper::progress).unwrap_or_default()
    }
}

/// Starts the keeper once the engine has read every transcript and the page shows the whole
/// roster (its update reads every transcript's size: during the launch it shared the cores
/// with the page's last rows, +7 % to the second launch), and pokes it at every change the
/// engine publishes from then on.
pub async fn keep_current<R: Runtime>(app: AppHandle<R>, mimesis: Mimesis) {
    let engine = mimesis.engine().clone();
    let mut rx = engine.subscribe();
    engine.ready().await;
    let state = app.state::<SearchState>();
    if tokio::time::timeout(SHOWN_WITHIN, state.shown.notified()).await.is_err() {
        tracing::debug!("the page did not say its roster is shown; the search index starts anyway");
    }
    let keeper = Keeper::start(mimesis.roots().to_vec(), mimesis.data_dir().to_owned());
    let keeper = state.keeper.get_or_init(|| keeper);
    loop {
        match rx.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => keeper.poke(),
            Err(RecvError::Closed) => return,
        }
    }
}

/// What `search_history` answers: the hits, and how far the index's first build is (its
/// hits are those of the transcripts read so far).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchAnswer {
    results: Results,
    progress: Progress,
}

/// One search of this machine's history (the window's search field).
#[tauri::command]
pub async fn search_history(
    state: tauri::State<'_, AppState>,
    search: tauri::State<'_, SearchState>,
    request: Request,
) -> Result<SearchAnswer, String> {
    // Someone searches: the index starts now if it waited for the roster.
    search.shown.notify_one();
    let data_dir = state.mimesis.data_dir().to_owned();
    let results = tokio::task::spawn_blocking(move || mimesis_wiring::search::query(&data_dir, &request))
        .await
        .map_err(|e| format!("the search failed: {e}"))??;
    Ok(SearchAnswer { results, progress: search.progress() })
}

/// The page shows its complete roster: the search index may start its update.
#[tauri::command]
pub fn roster_shown(search: tauri::State<'_, SearchState>) {
    search.shown.notify_one();
}

/// One search of another machine's history (the window asks each of the machines it
/// follows at once, beside `search_history`, and shows each answer as it comes): on the
/// connection the window keeps to it; its hits carry `host`, its failure is a sentence.
#[tauri::command]
pub async fn search_host(
    remote: tauri::State<'_, crate::hosts::RemoteState>,
    host: String,
    request: Request,
) -> Result<Results, String> {
    request.checked()?;
    remote.hub.search(&host, &request).await.map_err(|e| e.to_string())
}

/// How far the index's first build is.
#[tauri::command]
pub fn search_progress(search: tauri::State<'_, SearchState>) -> Progress {
    search.progress()
}

/// Items looked at per request to the engine while finding one.
const FIND_CHUNK: usize = 2_000;

/// The index, in the open timeline of `session_id`, of the item `uuid` (or, when given, of
/// the tool call `tool_use_id`), looked for from the newest; null when it is not there.
#[tauri::command(rename_all = "camelCase")]
pub async fn timeline_find(
    app: AppHandle,
    state: tauri::State<'_, AppState>,
    session_id: String,
    uuid: String,
    tool_use_id: Option<String>,
) -> Result<Option<usize>, String> {
    let is = |it: &TimelineItem| {
        it.uuid() == uuid
            || matches!((it, &tool_use_id), (TimelineItem::ToolCall { tool_use_id: a, .. }, Some(b)) if a == b)
    };
    if crate::hosts::is_remote(&session_id) {
        let items: Arc<Vec<TimelineItem>> = crate::hosts::opened(&app, &session_id)?;
        return Ok(items.iter().rposition(is));
    }
    let id = mimesis_core::SessionId::parse(&session_id).map_err(|e| e.to_string())?;
    let engine = state.mimesis.engine();
    let mut end = engine.timeline_range(&id, 0, 0).await.map_err(|e| e.to_string())?.total;
    while end > 0 {
        let start = end.saturating_sub(FIND_CHUNK);
        let page = engine.timeline_range(&id, start, end).await.map_err(|e| e.to_string())?;
        if let Some(i) = page.items.iter().rposition(is) {
            return Ok(Some(page.start + i));
        }
        end = start;
    }
    Ok(None)
}
