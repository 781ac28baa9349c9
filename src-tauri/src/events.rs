//! Engine streams become the Tauri events of docs/ipc.md: store events (batched as they
//! come) as `store:events`, open timelines as `timeline:update`, the attention set as
//! `attention:changed`. Transcript text crosses as data (JSON strings); the UI renders it
//! as text.

use std::sync::Arc;

use mimesis_core::{SessionId, TimelineItem};
use mimesis_wiring::Engine;
use mimesis_wiring::{IndexProgress, IndexedItem};
use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;

/// Long strings are cut in pages sent to the webview; `timeline_item` returns an item whole.
const IPC_STRING_MAX: usize = 16 * 1024;
/// At most this many store events per Tauri event.
const BATCH_MAX: usize = 512;
/// How long the store forwarder gathers events after the first of a batch: one frame.
/// Tried and left (issue 37 §5): 100 ms while the first index runs, cut short by its end,
/// for fewer batches to the page (it applies them at most every 250 ms then anyway): the web
/// process used 900 instead of 930 ms of CPU to a first launch's complete roster, which came
/// no sooner (1,821 vs 1,832 ms; 8 first launches each, alternating, 2026-12-03).
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
    events: Vec<Arc<mimesis_wiring::Envelope>>,
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

/// Forwards the store events after the seq of the snapshot the page was given to
/// the webview, batching what comes within a frame. Started by `roster_snapshot`, with a receiver
/// subscribed before that snapshot was taken: nothing falls between the two, and nothing is
/// sent before the page asked (a page that is still loading would parse it for nothing: on a
/// warm start the engine's first events are one per session).
///
/// The end of the first index (`store:progress` with `indexing: false`) goes this way too,
/// after the events that complete the index: sent on its own, it overtook the last batch,
/// and the page called its roster complete while a thousand sessions were still on their way.
pub async fn forward_store<R: Runtime>(
    app: AppHandle<R>,
    rx: tokio::sync::broadcast::Receiver<Arc<mimesis_wiring::Envelope>>,
    progress: tokio::sync::watch::Receiver<IndexProgress>,
    snapshot: (u64, IndexProgress),
) {
    let (after, indexing) = (snapshot.0, snapshot.1.indexing);
    store_stream(rx, progress, after, indexing, |out| {
        let sent = match out {
            Out::Events(events) => {
                tracing::debug!(events = events.len(), "store:events");
                app.emit("store:events", StoreBatch { events })
            }
            Out::Indexed(p) => app.emit("store:progress", p),
            Out::Resync => app.emit("store:resync", serde_json::json!({})),
        };
        if let Err(e) = sent {
            tracing::warn!(error = %e, "cannot emit a store event");
        }
    })
    .await
}

/// What the store forwarder sends the page, in this order.
#[derive(Debug)]
pub(crate) enum Out {
    Events(Vec<Arc<mimesis_wiring::Envelope>>),
    /// The first index ended: sent once, after every event published before it.
    Indexed(IndexProgress),
    /// The page fell behind: it must read a new snapshot.
    Resync,
}

/// [`forward_store`] without the webview: `send` gets each batch, and the end of the index.
/// `progress` was subscribed before the snapshot (of seq `after`) was taken, and `indexing`
/// is what that snapshot said: the end is still to be said only then, and a change made
/// since the subscription (even before this starts) is seen.
pub(crate) async fn store_stream(
    mut rx: tokio::sync::broadcast::Receiver<Arc<mimesis_wiring::Envelope>>,
    mut progress: tokio::sync::watch::Receiver<IndexProgress>,
    after: u64,
    mut indexing: bool,
    mut send: impl FnMut(Out),
) {
    let mut pending: Vec<Arc<mimesis_wiring::Envelope>> = Vec::new();
    loop {
        tokio::select! {
            biased;
            got = rx.recv() => match got {
                Ok(e) if e.seq <= after => continue,
                Ok(e) => pending.push(e),
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "the webview fell behind; asking it to resync");
                    pending.clear();
                    send(Out::Resync);
                    continue;
                }
                Err(RecvError::Closed) => return,
            },
            changed = progress.changed(), if indexing => {
                let p = *progress.borrow_and_update();
                if changed.is_err() || p.indexing {
                    indexing = changed.is_ok();
                    continue;
                }
                // The engine published the index's last events before it said so: they
                // are in the channel now (however many), and go first.
                loop {
                    drain(&mut rx, after, &mut pending);
                    if pending.is_empty() {
                        break;
                    }
                    send(Out::Events(std::mem::take(&mut pending)));
                }
                send(Out::Indexed(p));
                indexing = false;
                continue;
            }
        }
        // Whatever else comes within a frame goes in the same batch: a burst (200 updates a
        // second across a large roster) reaches the page as at most one batch per frame.
        tokio::time::sleep(COALESCE).await;
        drain(&mut rx, after, &mut pending);
        send(Out::Events(std::mem::take(&mut pending)));
    }
}

/// Moves what the channel holds now (after `after`) to `into`, up to a batch.
fn drain(
    rx: &mut tokio::sync::broadcast::Receiver<Arc<mimesis_wiring::Envelope>>,
    after: u64,
    into: &mut Vec<Arc<mimesis_wiring::Envelope>>,
) {
    while into.len() < BATCH_MAX {
        match rx.try_recv() {
            Ok(e) if e.seq <= after => {}
            Ok(e) => into.push(e),
            Err(_) => break,
        }
    }
}

/// Sends every timeline update. Subscribed when called, not when first polled: under load a
/// spawned task may first run after the page has opened a timeline.
pub fn forward_timeline<R: Runtime>(app: AppHandle<R>, engine: Engine) -> impl Future<Output = ()> + Send + 'static {
    let mut rx = engine.subscribe_timeline();
    async move {
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
}

/// The one sender of the window's attention set (`attention:changed`): the page hears the
/// sets in the order they were read. When each asker (a page that starts listening, another
/// machine's change, the engine's) read the set and emitted it itself, on its own thread, a
/// set read earlier could be queued for the page after one read later (and an emit on the
/// main thread skips that queue), and stay: once the toolbar said no session needed the user
/// while the tray said one did (tests/webview_chains.rs).
#[derive(Clone, Default)]
pub struct AttentionSender(Arc<tokio::sync::Notify>);

/// The attention set as it is now goes to the page, after every set sent before it.
pub fn send_attention<R: Runtime>(app: &AppHandle<R>) {
    if let Some(sender) = app.try_state::<AttentionSender>() {
        // (A permit is kept while the sender is busy: an ask is never lost.)
        sender.0.notify_one();
    }
}

/// Sends this machine's attention set, with other machines' (`attention:changed`).
fn emit_attention<R: Runtime>(app: &AppHandle<R>, local: mimesis_core::attention::AttentionSet) {
    let set = crate::hosts::with_remote(app, local);
    if let Some(w) = app.get_webview_window(crate::window::MAIN) {
        let _ = w.set_title(&set.title);
    }
    if let Err(e) = app.emit("attention:changed", set) {
        tracing::warn!(error = %e, "cannot emit the attention set");
    }
}

/// Sends every change of the attention set, and the set when asked ([`send_attention`]): the
/// only sender ([`AttentionSender`]). Subscribed when called, not when the task is first
/// polled: a task spawned at start-up and first polled after the page listened (under load)
/// would lose a change in between: it would reach the tray but never the window.
pub fn forward_attention<R: Runtime>(
    app: AppHandle<R>,
    engine: Engine,
    asked: AttentionSender,
) -> impl Future<Output = ()> + Send + 'static {
    let rx = engine.subscribe_attention();
    // The window's title carries the count too (the taskbar, window switchers).
    attention_stream(rx, asked.0, move |local| emit_attention(&app, local))
}

/// Hands `send` the value of `rx` at every change and whenever `asked`, at most once per
/// [`ATTENTION_EVERY`]: a change within that time of the last one sent waits for the rest of
/// it, and goes with whatever changed meanwhile (the latest value). Ends when `rx` does.
async fn attention_stream<T: Clone>(
    mut rx: tokio::sync::watch::Receiver<T>,
    asked: Arc<tokio::sync::Notify>,
    mut send: impl FnMut(T),
) {
    let mut sent: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = asked.notified() => {}
        }
        if let Some(at) = sent {
            tokio::time::sleep_until(at + ATTENTION_EVERY).await;
        }
        let value = rx.borrow_and_update().clone();
        send(value);
        sent = Some(tokio::time::Instant::now());
    }
}

/// The least time between two attention sets sent to the page. The set is every session
/// that needs the user, a finished turn included, and is sent whole: under 200 appends a
/// second to 2,000 sessions (the window bench's roster under load) it changed at nearly every
/// one and grew to hundreds of ids, and the page parsed and applied a set (and the window
/// took a new title) each time. A change after a quiet spell goes at once.
const ATTENTION_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

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

/// How far the initial index has come (`store:progress`), after every part of it. Its end
/// (`indexing: false`) is the store forwarder's to send, after the events that complete it
/// (or the snapshot's to say, when the page asks later).
pub async fn forward_progress<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe_progress();
    loop {
        let p = *rx.borrow_and_update();
        if !p.indexing {
            return;
        }
        if let Err(e) = app.emit("store:progress", p) {
            tracing::debug!(error = %e, "cannot emit store:progress");
        }
        if rx.changed().await.is_err() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mimesis_core::session::StoreEvent;

    fn removed(seq: u64) -> Arc<mimesis_wiring::Envelope> {
        let session_id = SessionId::parse(&format!("00000000-0000-4000-8000-{seq:012}")).unwrap();
        Arc::new(mimesis_wiring::Envelope { seq, event: StoreEvent::Removed { session_id } })
    }

    fn seqs(out: &[Out]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Out::Events(e) => format!("events {:?}", e.iter().map(|e| e.seq).collect::<Vec<_>>()),
                Out::Indexed(p) => format!("indexed {}", p.done),
                Out::Resync => "resync".to_owned(),
            })
            .collect()
    }

    type Said = Arc<std::sync::Mutex<Vec<Out>>>;

    /// A store forwarder on these channels, its output collected.
    fn forwarder(
        rx: tokio::sync::broadcast::Receiver<Arc<mimesis_wiring::Envelope>>,
        prx: tokio::sync::watch::Receiver<IndexProgress>,
        after: u64,
        indexing: bool,
    ) -> (tokio::task::JoinHandle<()>, Said) {
        let out: Said = Arc::default();
        let sink = out.clone();
        (tokio::spawn(store_stream(rx, prx, after, indexing, move |o| sink.lock().unwrap().push(o))), out)
    }

    /// A change after a quiet spell goes at once; the changes of a busy spell go as one set,
    /// the latest, once the least time since the last is over; an ask is answered likewise.
    #[tokio::test(start_paused = true)]
    async fn attention_sets_go_at_once_then_at_most_once_per_spell() {
        let (tx, rx) = tokio::sync::watch::channel(0u32);
        let asked = Arc::new(tokio::sync::Notify::new());
        let said: Arc<std::sync::Mutex<Vec<(u32, u128)>>> = Arc::default();
        let sink = said.clone();
        let t0 = tokio::time::Instant::now();
        let task = tokio::spawn(attention_stream(rx, asked.clone(), move |v| {
            sink.lock().unwrap().push((v, t0.elapsed().as_millis()));
        }));
        let step = |ms: u64| tokio::time::sleep(std::time::Duration::from_millis(ms));
        tx.send(1).unwrap();
        step(10).await;
        tx.send(2).unwrap();
        step(10).await;
        tx.send(3).unwrap();
        step(200).await;
        assert_eq!(*said.lock().unwrap(), vec![(1, 0), (3, 100)]);
        // Quiet since: the next change goes at once, an ask right after it once the time is over.
        step(1000).await;
        tx.send(4).unwrap();
        step(1).await;
        asked.notify_one();
        step(200).await;
        assert_eq!(*said.lock().unwrap(), vec![(1, 0), (3, 100), (4, 1220), (4, 1320)]);
        drop(tx);
        task.await.unwrap();
    }

    /// The engine publishes the index's last events, then says the index ended: the page
    /// gets them in that order, however the two channels are polled.
    #[tokio::test(start_paused = true)]
    async fn the_end_of_the_index_comes_after_the_events_that_complete_it() {
        let (tx, rx) = tokio::sync::broadcast::channel(4096);
        let (ptx, prx) = tokio::sync::watch::channel(IndexProgress { indexing: true, done: 0, total: 3 });
        let (forwarder, out) = forwarder(rx, prx, 1, true);
        tx.send(removed(1)).unwrap(); // in the snapshot already
        tx.send(removed(2)).unwrap();
        tokio::time::sleep(COALESCE * 2).await;
        // More than a batch, then the end, at once.
        for seq in 3..(BATCH_MAX as u64 + 10) {
            tx.send(removed(seq)).unwrap();
        }
        ptx.send(IndexProgress { indexing: false, done: 3, total: 3 }).unwrap();
        tokio::time::sleep(COALESCE * 10).await; // (paused time: no real wait)
        // Later events still come, and the end is not said twice.
        ptx.send(IndexProgress { indexing: false, done: 3, total: 3 }).unwrap();
        tx.send(removed(BATCH_MAX as u64 + 10)).unwrap();
        tokio::time::sleep(COALESCE * 2).await;
        drop(tx);
        forwarder.await.unwrap();
        let out = out.lock().unwrap();
        let said = seqs(&out);
        assert_eq!(said.first().map(String::as_str), Some("events [2]"));
        let end = said.iter().position(|s| s == "indexed 3").expect("the end is said");
        assert_eq!(said.iter().filter(|s| s.starts_with("indexed")).count(), 1, "{said:?}");
        let before: Vec<u64> = out[..end]
            .iter()
            .flat_map(|o| match o {
                Out::Events(e) => e.iter().map(|e| e.seq).collect(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(before, (2..(BATCH_MAX as u64 + 10)).collect::<Vec<_>>(), "every event published before the end");
        assert!(out[..end].iter().all(|o| matches!(o, Out::Events(e) if e.len() <= BATCH_MAX)));
        assert_eq!(said.last().map(String::as_str), Some(format!("events [{}]", BATCH_MAX + 10).as_str()));
    }

    /// The index's last part (more than a batch) and its end land while the forwarder waits
    /// on both channels: all of it goes before the end.
    #[tokio::test(start_paused = true)]
    async fn a_last_part_larger_than_a_batch_goes_whole_before_the_end() {
        let (tx, rx) = tokio::sync::broadcast::channel(4096);
        let (ptx, prx) = tokio::sync::watch::channel(IndexProgress { indexing: true, done: 0, total: 3 });
        let last = 2 * BATCH_MAX as u64 + 5;
        let (forwarder, out) = forwarder(rx, prx, 0, true);
        tokio::task::yield_now().await; // the forwarder now waits on both
        for seq in 1..=last {
            tx.send(removed(seq)).unwrap();
        }
        ptx.send(IndexProgress { indexing: false, done: 3, total: 3 }).unwrap();
        tokio::time::sleep(COALESCE * 10).await;
        drop(tx);
        forwarder.await.unwrap();
        let out = out.lock().unwrap();
        let said = seqs(&out);
        assert_eq!(said.last().map(String::as_str), Some("indexed 3"), "{said:?}");
        let sent: Vec<u64> = out
            .iter()
            .flat_map(|o| if let Out::Events(e) = o { e.iter().map(|e| e.seq).collect() } else { Vec::new() })
            .collect();
        assert_eq!(sent, (1..=last).collect::<Vec<_>>());
        assert!(out.iter().all(|o| !matches!(o, Out::Events(e) if e.len() > BATCH_MAX)));
    }

    /// A page that asked after the index ended learns it from its snapshot: nothing more.
    #[tokio::test(start_paused = true)]
    async fn an_index_that_had_ended_is_not_said_again() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (ptx, prx) = tokio::sync::watch::channel(IndexProgress { indexing: false, done: 3, total: 3 });
        let (forwarder, out) = forwarder(rx, prx, 0, false);
        ptx.send(IndexProgress { indexing: false, done: 3, total: 3 }).unwrap();
        tx.send(removed(1)).unwrap();
        tokio::time::sleep(COALESCE * 2).await;
        drop(tx);
        forwarder.await.unwrap();
        assert_eq!(seqs(&out.lock().unwrap()), ["events [1]"]);
    }

    /// The index ended between the snapshot (which said it ran) and the forwarder's start.
    #[tokio::test(start_paused = true)]
    async fn an_end_that_came_before_the_forwarder_started_is_said() {
        let (tx, rx) = tokio::sync::broadcast::channel(16);
        let (ptx, prx) = tokio::sync::watch::channel(IndexProgress { indexing: true, done: 0, total: 3 });
        tx.send(removed(1)).unwrap();
        ptx.send(IndexProgress { indexing: false, done: 3, total: 3 }).unwrap();
        let (forwarder, out) = forwarder(rx, prx, 0, true);
        tokio::time::sleep(COALESCE * 4).await;
        drop(tx);
        forwarder.await.unwrap();
        assert_eq!(seqs(&out.lock().unwrap()), ["events [1]", "indexed 3"]);
    }
}
