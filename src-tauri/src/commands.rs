//! The Tauri commands of docs/ipc.md: each is a thin call into the wiring (the engine, the
//! settings, hooks, doctor). Errors reach the UI as one sentence. File work (hooks,
//! doctor) runs off the async workers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use mimesis_core::approval::{Behavior, Pending, Via};
use mimesis_core::settings::{FieldError, SetOutcome, Settings};
use mimesis_core::{SessionId, TimelineItem};
use mimesis_wiring::approvals::Target;
use mimesis_wiring::doctor::DoctorReport;
use mimesis_wiring::hooks::install::HookStatus;
use mimesis_wiring::{Mimesis, demo};
use mimesis_wiring::{Snapshot, TimelinePage};
use serde::Serialize;

use tauri::Manager;

use crate::events::IpcItem;

pub struct AppState {
    pub mimesis: Mimesis,
    /// The session open in the window (no notification for it while the window has focus).
    /// (Its window key: an id, or `host:id` for another machine's session.)
    pub viewing: Mutex<Option<String>>,
    pub demo: Mutex<Option<demo::Demo>>,
    pub demo_root: PathBuf,
    /// Sends the page the store events after its last snapshot (`events::forward_store`).
    pub store_forwarder: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
    /// What the page has not heard since a held snapshot, until it listens.
    pub store_held: Mutex<Option<Held>>,
    /// The launch's roster, made before the page asks for it ([`prepare_roster`]).
    pub early_roster: Early<Prepared>,
}

use mimesis_core::spend::SpendView;

type CmdResult<T> = Result<T, String>;

fn session_id(s: &str) -> CmdResult<SessionId> {
    SessionId::parse(s).map_err(|e| e.to_string())
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, ts(rename = "TimelinePage"))]
pub struct IpcPage {
    session_id: String,
    total: usize,
    start: usize,
    items: Vec<IpcItem>,
    waiting: bool,
    seq: u64,
}

impl From<TimelinePage> for IpcPage {
    fn from(p: TimelinePage) -> Self {
        IpcPage {
            session_id: p.session_id.to_string(),
            total: p.total,
            start: p.start,
            items: p.items.iter().map(IpcItem::new).collect(),
            waiting: p.waiting,
            seq: p.seq,
        }
    }
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RosterSnapshot {
    #[serde(flatten)]
    pub(crate) snapshot: Snapshot,
    pub(crate) demo: bool,
    /// The rows of other machines (issue 13), keyed `host:id`.
    #[cfg_attr(test, ts(as = "Vec<mimesis_core::TrackedSession>"))]
    pub(crate) remote: Vec<serde_json::Value>,
    /// Every configured machine's state.
    pub(crate) hosts: Vec<mimesis_wiring::remote::HostInfo>,
}

/// A page of a timeline of another machine's session (no `seq`: its updates carry none).
fn remote_page(key: &str, total: usize, start: usize, items: Vec<IpcItem>) -> IpcPage {
    IpcPage { session_id: key.to_owned(), total, start, items, waiting: false, seq: 0 }
}

#[tauri::command]
pub async fn roster_snapshot(app: tauri::AppHandle, state: tauri::State<'_, AppState>) -> CmdResult<RosterSnapshot> {
    snapshot_for_page(&app, &state, false).await
}

/// The roster's snapshot for a page that has no listeners yet: Mimesis's own page asks for it
/// at document start ([`EARLY_ROSTER`]), so the engine reads it while the page loads its
/// code. What changes after it waits here until the page says it listens
/// ([`roster_listening`]).
///
/// The snapshot goes to the page as one script (`window.__MIMESIS_ROSTER_SENT__({…})`), not
/// as the command's reply: WebKit hands a custom protocol's body (the reply) to the page in
/// 8 kB reads on the app's main loop, a few hundred for 2,000 sessions, while the page is
/// busy loading. A script is one message, and its JSON literal is read by the engine's JSON
/// parser. (serde's JSON is a valid script: every string is escaped, nothing can end it.)
/// Tried and left (issue 37 §5): an assignment to a setter (`window.X = {…};`). In a page's
/// `<script>` WebKit reads an assigned literal of 2.9 MB in 11–15 ms and a call's argument in
/// ~110 ms, but through this eval the call costs no such time (window bench: the bundle's
/// evaluation is as long either way), and a script's value goes back to the app: the
/// assignment's value, the snapshot, serialized there and back, held the page ~0.5 s. Also
/// tried and left: the JSON as a string for `JSON.parse` (`…(JSON.parse('{…}'))`). In a
/// page's `<script>` in MiniBrowser it halved the time (123 → 54 ms, 8 loads each), through
/// this eval it changed nothing (window bench, 16 second launches each, alternating, same
/// run: complete 447 vs 450 ms, page to module 73 vs 74). And rows without their blank
/// fields (null, false, 0: 2.9 → 2.1 MB), put back by the early script: the page's loop
/// over 2,000 rows cost more than the smaller script saved (complete 703 → 782 ms, page to
/// module 115 → 189; 14 second launches each, alternating, 2026-12-03).
#[tauri::command]
pub async fn roster_snapshot_held(
    app: tauri::AppHandle,
    webview: tauri::Webview,
    state: tauri::State<'_, AppState>,
) -> CmdResult<()> {
    let Prepared { script, follow } = match state.early_roster.take() {
        Some(prepared) => prepared,
        None => prepare(&app, &state, true).await?,
    };
    follow_snapshot(&app, &state, follow, true)?;
    webview.eval(script).map_err(|e| e.to_string())
}

/// Whether the launch's roster is made yet, and taken: it is made once, for the page's first
/// ask ([`roster_snapshot_held`]), and never after the page asked or loaded without asking.
pub struct Early<T>(Mutex<EarlyState<T>>);

impl<T> Default for Early<T> {
    fn default() -> Self {
        Early(Mutex::new(EarlyState::Waiting))
    }
}

enum EarlyState<T> {
    Waiting,
    Ready(T),
    Over,
}

impl<T> Early<T> {
    /// Keeps `made` for the page, unless it asked already (then it is dropped).
    fn offer(&self, made: T) {
        if let Ok(mut s) = self.0.lock()
            && matches!(*s, EarlyState::Waiting)
        {
            *s = EarlyState::Ready(made);
        }
    }

    /// What was made, if it was; from now on nothing more is kept.
    pub fn take(&self) -> Option<T> {
        let mut s = self.0.lock().ok()?;
        match std::mem::replace(&mut *s, EarlyState::Over) {
            EarlyState::Ready(made) => Some(made),
            EarlyState::Waiting | EarlyState::Over => None,
        }
    }

    /// Whether the page asked already (nothing is worth making).
    fn over(&self) -> bool {
        self.0.lock().map(|s| matches!(*s, EarlyState::Over)).unwrap_or(true)
    }
}

/// A held roster for the page: its script ([`roster_script`]) and what follows it.
pub struct Prepared {
    script: String,
    follow: Follow,
}

/// What follows a snapshot to the page: the store's events and progress, subscribed before
/// it was taken, and (held) other machines' changes.
pub struct Follow {
    rx: tokio::sync::broadcast::Receiver<std::sync::Arc<mimesis_wiring::Envelope>>,
    progress: tokio::sync::watch::Receiver<mimesis_wiring::IndexProgress>,
    remote: Option<tokio::sync::broadcast::Receiver<mimesis_wiring::remote::HubEvent>>,
    /// The snapshot's seq and progress.
    at: (u64, mimesis_wiring::IndexProgress),
}

/// Makes the launch's roster as soon as the first index is done, while WebKit starts and
/// the page loads, so that it is there when the page asks. Made when asked, it reached the
/// page after the page's code had loaded (the snapshot, 2,000 sessions: 13 ms; its script:
/// 15 ms), and its 2.9 MB waited there behind that code's evaluation.
pub async fn prepare_roster(app: tauri::AppHandle) {
    let Some(state) = app.try_state::<AppState>() else { return };
    state.mimesis.engine().ready().await;
    if state.early_roster.over() {
        return;
    }
    match prepare(&app, &state, true).await {
        Ok(prepared) => state.early_roster.offer(prepared),
        Err(e) => tracing::debug!(error = %e, "no roster made before the page asked"),
    }
}

async fn prepare(app: &tauri::AppHandle, state: &AppState, hold: bool) -> CmdResult<Prepared> {
    let (snapshot, follow) = take_snapshot(app, state, hold).await?;
    let script = roster_script(&snapshot).map_err(|e| e.to_string())?;
    Ok(Prepared { script, follow })
}

/// The script that hands `snapshot` to the page: one call with its JSON as the argument, in
/// ASCII: every other character is escaped (`\uXXXX`). One `…` would otherwise make WebKit
/// convert the whole script to UTF-16 on the app's main thread (2.9 MB become 5.8 MB for
/// 2,000 sessions, 347 ellipses of shortened titles) and parse it as such in the page; and
/// U+2028 and U+2029, which JSON leaves as they are, end no line of the script in an engine
/// older than ES2019.
fn roster_script(snapshot: &impl Serialize) -> serde_json::Result<String> {
    const CALL: &str = "window.__MIMESIS_ROSTER_SENT__(";
    let mut out = Vec::with_capacity(64 * 1024);
    out.extend_from_slice(CALL.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, AsciiJson);
    snapshot.serialize(&mut ser)?;
    out.push(b')');
    // (ASCII throughout: serde_json writes only valid UTF-8, and the formatter escapes the rest.)
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// serde_json's compact output with every non-ASCII character escaped.
struct AsciiJson;

impl serde_json::ser::Formatter for AsciiJson {
    fn write_string_fragment<W: ?Sized + std::io::Write>(&mut self, w: &mut W, fragment: &str) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.bytes().position(|b| !b.is_ascii()) {
            w.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().expect("a character starts at a non-ASCII byte of a str");
            for unit in c.encode_utf16(&mut [0; 2]) {
                write!(w, "\\u{unit:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
    }
}

/// The page listens now: the store's events held since [`roster_snapshot_held`] go out (and
/// then the rest as they come), and what the page cannot have heard meanwhile follows: the
/// attention set, other machines' states, and a `store:resync` when their rows changed.
#[tauri::command]
pub fn roster_listening(app: tauri::AppHandle, state: tauri::State<'_, AppState>) -> CmdResult<()> {
    let held = state.store_held.lock().map_err(|_| "poisoned".to_owned())?.take();
    let Some(mut held) = held else {
        return Ok(());
    };
    let _ = held.release.send(());
    crate::events::send_attention(&app);
    let missed = Missed::drain(&mut held.remote);
    if missed.rows {
        tracing::debug!("other machines' rows changed before the page listened: it reads its roster again");
        let _ = tauri::Emitter::emit(&app, "store:resync", serde_json::json!({}));
    } else if missed.hosts {
        let hosts = app.state::<crate::hosts::RemoteState>().hub.hosts();
        let _ = tauri::Emitter::emit(&app, "hosts:changed", crate::hosts::HostsPayload { hosts });
    }
    Ok(())
}

/// What a page that was not listening missed of other machines' changes.
#[derive(Debug, Default, PartialEq)]
struct Missed {
    /// Their rows changed (or some changes were lost): the roster is read again.
    rows: bool,
    /// Their states changed: the current ones are sent.
    hosts: bool,
}

impl Missed {
    fn drain(rx: &mut tokio::sync::broadcast::Receiver<mimesis_wiring::remote::HubEvent>) -> Missed {
        use mimesis_wiring::remote::HubEvent;
        use tokio::sync::broadcast::error::TryRecvError;
        let mut m = Missed::default();
        loop {
            match rx.try_recv() {
                Ok(HubEvent::Events(_)) | Err(TryRecvError::Lagged(_)) => m.rows = true,
                Ok(HubEvent::Hosts(_)) => m.hosts = true,
                // The attention set is sent anyway; supervision and notifications are not the roster's.
                Ok(HubEvent::Attention(_) | HubEvent::Supervision(_) | HubEvent::Notify { .. }) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => return m,
            }
        }
    }
}

/// What a held snapshot's page has not heard yet ([`roster_snapshot_held`]).
pub struct Held {
    /// Starts the store forwarder.
    release: tokio::sync::oneshot::Sender<()>,
    /// Other machines' changes since the snapshot.
    remote: tokio::sync::broadcast::Receiver<mimesis_wiring::remote::HubEvent>,
}

/// Mimesis's page asks for its roster before its code has loaded (a script run at document
/// start): the snapshot is read while the page parses its code. The page takes the promise
/// (`window.__MIMESIS_ROSTER__`) when it starts, listens, then calls `roster_listening`.
pub const EARLY_ROSTER: &str = "if (window.top === window && window.__TAURI_INTERNALS__) { \
     performance.mark('mimesis:snapshot-asked'); \
     window.__MIMESIS_ROSTER__ = new Promise((resolve, reject) => { \
       window.__MIMESIS_ROSTER_SENT__ = (r) => { performance.mark('mimesis:snapshot-script'); resolve(r); }; \
       window.__TAURI_INTERNALS__.invoke('roster_snapshot_held').catch(reject); }); \
     window.__MIMESIS_ROSTER__.catch(() => {}); }";

async fn snapshot_for_page(app: &tauri::AppHandle, state: &AppState, hold: bool) -> CmdResult<RosterSnapshot> {
    let (snapshot, follow) = take_snapshot(app, state, hold).await?;
    follow_snapshot(app, state, follow, hold)?;
    Ok(snapshot)
}

/// The roster now, and what follows it (subscribed first: every later event reaches the
/// page, none twice).
async fn take_snapshot(app: &tauri::AppHandle, state: &AppState, hold: bool) -> CmdResult<(RosterSnapshot, Follow)> {
    let engine = state.mimesis.engine();
    let remote = app.state::<crate::hosts::RemoteState>();
    let rx = engine.subscribe();
    let progress = engine.subscribe_progress();
    // (A held page hears nothing meanwhile: what other machines change is noted for it.)
    let remote_rx = hold.then(|| remote.hub.subscribe());
    let t0 = std::time::Instant::now();
    let snapshot = engine.snapshot().await.map_err(|e| e.to_string())?;
    tracing::debug!(at = ?crate::since_start(), took = ?t0.elapsed(), sessions = snapshot.sessions.len(), hold, "the roster's snapshot");
    let follow = Follow { rx, progress, remote: remote_rx, at: (snapshot.seq, snapshot.progress) };
    let demo = state.demo.lock().map(|d| d.is_some()).unwrap_or(false);
    Ok((RosterSnapshot { snapshot, demo, remote: remote.hub.rows(), hosts: remote.hub.hosts() }, follow))
}

/// Starts sending the page what follows its snapshot: now, or (held) once it listens.
fn follow_snapshot(app: &tauri::AppHandle, state: &AppState, follow: Follow, hold: bool) -> CmdResult<()> {
    let forward = crate::events::forward_store(app.clone(), follow.rx, follow.progress, follow.at);
    let held = if hold {
        let (release, released) = tokio::sync::oneshot::channel();
        let forwarder = tauri::async_runtime::spawn(async move {
            // (Dropped unsent: a newer snapshot replaced this one.)
            if released.await.is_ok() {
                forward.await;
            }
        });
        (forwarder, follow.remote.map(|remote| Held { release, remote }))
    } else {
        (tauri::async_runtime::spawn(forward), None)
    };
    if let Some(old) = state.store_forwarder.lock().map_err(|_| "poisoned".to_owned())?.replace(held.0) {
        old.abort();
    }
    *state.store_held.lock().map_err(|_| "poisoned".to_owned())? = held.1;
    if !hold {
        // The UI listens for `attention:changed` before it asks for the roster: the set as it
        // is now reaches it even when it last changed before the page had loaded.
        crate::events::send_attention(app);
    }
    release_when_sent();
    Ok(())
}

/// A snapshot of 2,000 sessions is a few megabytes of JSON, serialized and handed to the
/// webview after the command returns; glibc keeps what it freed in its heap. Once it has
/// surely gone, that memory goes back to the system (5 MB of the app's 47 with 2,000
/// sessions, the window bench).
///
/// After the first one, the launch is over: the pages of code and constants that only the
/// launch used (GTK's and WebKit's start-up, the first index, the database's migrations)
/// leave the app's memory too, and again after each later spell of use once it is over
/// (`mimesis_os::trim`, the thread WebKit's processes run too). They are clean copies of
/// their files, which the kernel may drop at any time; what runs again comes back from the
/// page cache at its next touch. With 2,000 sessions, the app and its WebKit processes then
/// hold 13–16 MB less in all (the window bench after 60 s idle: the app 83 → 49–51 MB; its
/// WebKit processes hold alone about 20 MB of pages they shared with it).
fn release_when_sent() {
    const AFTER: std::time::Duration = std::time::Duration::from_secs(3);
    static LAUNCH_TRIMMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    tauri::async_runtime::spawn(async {
        tokio::time::sleep(AFTER).await;
        // Off the async workers: malloc_trim walks the heap, and the trim reads all of
        // /proc/self/smaps (tens of milliseconds with WebKit's libraries mapped).
        let _ = tauri::async_runtime::spawn_blocking(|| {
            if LAUNCH_TRIMMED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                mimesis_os::procs::release_free_memory();
            } else {
                // The trim's thread, as in WebKit's processes: it trims now, then again after
                // each spell of use (a session that asks for approval brought 28 MB back).
                let every = mimesis_os::trim::every(std::env::var_os(mimesis_os::trim::EVERY_VAR).as_deref());
                mimesis_os::trim::start(std::time::Duration::ZERO, every);
                tracing::debug!(at = ?crate::since_start(), "the launch's code leaves the app's memory");
            }
        })
        .await;
    });
}

#[tauri::command(rename_all = "camelCase")]
pub async fn open_timeline(
    app: tauri::AppHandle,
    state: tauri::State<'_, AppState>,
    session_id: String,
    tail: usize,
) -> CmdResult<IpcPage> {
    if crate::hosts::is_remote(&session_id) {
        let items = crate::hosts::open_timeline(&app, &session_id).await?;
        let start = items.len().saturating_sub(tail.min(2_000));
        let page = items[start..].iter().map(IpcItem::new).collect();
        return Ok(remote_page(&session_id, items.len(), start, page));
    }
    let id = self::session_id(&session_id)?;
    state.mimesis.engine().open_timeline(&id, tail.min(2_000)).await.map(IpcPage::from).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
pub async fn timeline_range(
    app: tauri::AppHandle,
    state: tauri::State<'_, AppState>,
    session_id: String,
    start: usize,
    end: usize,
) -> CmdResult<IpcPage> {
    let end = end.min(start.saturating_add(2_000));
    if crate::hosts::is_remote(&session_id) {
        let items = crate::hosts::opened(&app, &session_id)?;
        let (end, total) = (end.min(items.len()), items.len());
        let start = start.min(end);
        let page = items[start..end].iter().map(IpcItem::new).collect();
        return Ok(remote_page(&session_id, total, start, page));
    }
    let id = self::session_id(&session_id)?;
    state.mimesis.engine().timeline_range(&id, start, end).await.map(IpcPage::from).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
pub async fn timeline_item(
    app: tauri::AppHandle,
    state: tauri::State<'_, AppState>,
    session_id: String,
    index: usize,
) -> CmdResult<TimelineItem> {
    if crate::hosts::is_remote(&session_id) {
        let items = crate::hosts::opened(&app, &session_id)?;
        return items.get(index).cloned().ok_or_else(|| format!("the timeline has no item {index}"));
    }
    let id = self::session_id(&session_id)?;
    match state.mimesis.engine().timeline_item(&id, index).await {
        Ok(Some(item)) => Ok(item),
        Ok(None) => Err(format!("the timeline of {id} has no item {index}")),
        Err(e) => Err(e.to_string()),
    }
}

#[tauri::command(rename_all = "camelCase")]
pub fn close_timeline(app: tauri::AppHandle, state: tauri::State<'_, AppState>, session_id: String) -> CmdResult<()> {
    if crate::hosts::is_remote(&session_id) {
        crate::hosts::close(&app, &session_id);
        return Ok(());
    }
    state.mimesis.engine().close_timeline(&self::session_id(&session_id)?);
    Ok(())
}

#[tauri::command]
pub async fn start_demo(state: tauri::State<'_, AppState>) -> CmdResult<()> {
    {
        let mut slot = state.demo.lock().map_err(|_| "demo state poisoned".to_owned())?;
        if slot.is_some() {
            return Ok(());
        }
        let d = demo::start(&state.demo_root, 1.0)
            .map_err(|e| format!("cannot write the demo sessions into {}: {e}", state.demo_root.display()))?;
        *slot = Some(d);
    }
    state.mimesis.engine().add_root(state.demo_root.clone()).await.map_err(|e| e.to_string())
}

#[tauri::command]
pub async fn stop_demo(state: tauri::State<'_, AppState>) -> CmdResult<()> {
    let demo = state.demo.lock().map_err(|_| "demo state poisoned".to_owned())?.take();
    if let Some(mut d) = demo {
        d.stop();
    }
    state.mimesis.engine().remove_root(state.demo_root.clone()).await.map_err(|e| e.to_string())
}

/// Runs file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    state: &tauri::State<'_, AppState>,
    f: impl FnOnce(&Mimesis) -> T + Send + 'static,
) -> CmdResult<T> {
    let mimesis = state.mimesis.clone();
    tauri::async_runtime::spawn_blocking(move || f(&mimesis)).await.map_err(|e| format!("the command failed: {e}"))
}

#[tauri::command]
pub async fn hooks_status(state: tauri::State<'_, AppState>) -> CmdResult<Vec<HookStatus>> {
    blocking(&state, |e| e.hooks_status()).await
}

/// Installs hooks that run the `mimesis` CLI built next to this app (`mimesis hook`: a
/// small binary, fast to start, run several times per turn), or, where there is none, this
/// very binary (`mimesis-desktop hook`, handled first thing in `main`), so hooks work
/// without the CLI installed.
#[tauri::command]
pub async fn hooks_install(state: tauri::State<'_, AppState>) -> CmdResult<Vec<HookStatus>> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot tell where Mimesis is installed, so no hook was written: {e}"))?;
    let program = mimesis_wiring::hooks::install::hook_program(&exe);
    blocking(&state, move |e| e.hooks_install(&program).map_err(|e| e.to_string())).await?
}

#[tauri::command]
pub async fn hooks_uninstall(state: tauri::State<'_, AppState>) -> CmdResult<Vec<HookStatus>> {
    blocking(&state, |e| e.hooks_uninstall().map_err(|e| e.to_string())).await?
}

#[tauri::command]
pub async fn doctor(state: tauri::State<'_, AppState>) -> CmdResult<DoctorView> {
    let report = state.mimesis.doctor().await;
    Ok(DoctorView { lines: report.lines(), problems: report.problems(), report })
}

/// The doctor's report for the window: in words (the lines `mimesis doctor` prints, and
/// the problems to act on), and whole.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(serde::Serialize)]
pub struct DoctorView {
    lines: Vec<String>,
    problems: Vec<String>,
    report: DoctorReport,
}

/// The settings whose value in force is not the stored one, and why.
#[tauri::command]
pub async fn settings_in_effect(state: tauri::State<'_, AppState>) -> CmdResult<mimesis_wiring::InEffect> {
    Ok(state.mimesis.settings_in_effect())
}

#[tauri::command]
pub async fn settings_get(state: tauri::State<'_, AppState>) -> CmdResult<Settings> {
    Ok(state.mimesis.settings())
}

/// The settings form's document. Machines have their own commands (`host_add`,
/// `host_remove`) and keep their stored list here, whatever the form holds: saving a form
/// opened before a machine was added never removes it.
#[tauri::command]
pub async fn settings_set(state: tauri::State<'_, AppState>, settings: serde_json::Value) -> CmdResult<SetOutcome> {
    let mut settings = settings;
    let stored = state.mimesis.settings();
    if let Some(doc) = settings.as_object_mut() {
        doc.insert("machines".into(), serde_json::to_value(&stored.machines).map_err(|e| e.to_string())?);
    }
    // Start at login follows a valid document before it is stored: an autostart folder that
    // cannot be written is said against that setting, and nothing is saved.
    let start_at_login = Settings::from_json(&settings).ok().map(|s| s.desktop.start_at_login);
    if let Some(on) = start_at_login
        && let Err(e) = crate::autostart::follow(on)
    {
        let errors = vec![FieldError { field: "desktop.startAtLogin".into(), message: e.to_string() }];
        return Ok(SetOutcome { settings: stored, errors });
    }
    let outcome = state.mimesis.settings_set(&settings).await;
    if start_at_login.is_some() && !outcome.errors.is_empty() {
        let _ = crate::autostart::follow(stored.desktop.start_at_login);
    }
    Ok(outcome)
}

/// The permission requests waiting for an answer (none when another face answers them).
#[tauri::command]
pub async fn approvals_pending(state: tauri::State<'_, AppState>) -> CmdResult<Vec<Pending>> {
    Ok(state.mimesis.approvals().pending())
}

/// The user's answer to one permission request (a click: never made for them).
#[tauri::command(rename_all = "camelCase")]
pub async fn approval_decide(
    state: tauri::State<'_, AppState>,
    id: String,
    allow: bool,
    message: Option<String>,
    answers: Option<BTreeMap<String, String>>,
) -> CmdResult<Pending> {
    let behavior = if allow { Behavior::Allow } else { Behavior::Deny };
    // By its whole id: a click names one request. A dialog's request returns once the
    // dialog on the session's screen is gone (or says why not).
    let given = state
        .mimesis
        .approvals()
        .decide(Target::Id(&id), behavior, message, answers, None, Via::Window)
        .await
        .map_err(|e| e.to_string())?;
    Ok(given.request)
}

/// The session the window shows now (`null`: none).
#[tauri::command(rename_all = "camelCase")]
pub async fn set_viewing(state: tauri::State<'_, AppState>, session_id: Option<String>) -> CmdResult<()> {
    let id = match session_id {
        Some(s) if crate::hosts::is_remote(&s) => Some(s),
        Some(s) => Some(self::session_id(&s)?.to_string()),
        None => None,
    };
    *state.viewing.lock().map_err(|e| e.to_string())? = id;
    Ok(())
}

/// Brings the terminal of a session running outside Mimesis forward; says what it did.
#[tauri::command(rename_all = "camelCase")]
pub async fn focus_terminal(state: tauri::State<'_, AppState>, session_id: String) -> CmdResult<String> {
    let id = self::session_id(&session_id)?;
    let (roots, data_dir) = (state.mimesis.roots().to_vec(), state.mimesis.data_dir().to_owned());
    tokio::task::spawn_blocking(move || {
        mimesis_wiring::once::focus_terminal(&roots, &data_dir, &id).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The Spend view (docs/ipc.md `spend_view`): the cost of each of the last `days` days
/// (1 to 366) by project and by model, today, this week and this month, and the costliest
/// sessions, from every transcript of this machine, read anew.
#[tauri::command]
pub async fn spend_view(state: tauri::State<'_, AppState>, days: u32) -> CmdResult<SpendView> {
    let (roots, data_dir) = (state.mimesis.roots().to_vec(), state.mimesis.data_dir().to_owned());
    tokio::task::spawn_blocking(move || mimesis_wiring::cost::spend_view(&roots, &data_dir, days))
        .await
        .map_err(|e| format!("the report failed: {e}"))
}

/// Opens a link from a transcript or a terminal in the system's browser: only a plain web
/// address (`mimesis_core::links`); anything else is refused with why.
#[tauri::command]
pub fn open_link(url: String) -> CmdResult<()> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let url = mimesis_core::links::openable(&url).map_err(|e| e.to_string())?;
    let mut tried = Vec::new();
    // The desktop's launchers, most common first (xdg-open), each with the user's
    // environment, in its own process group: a signal to the app's leaves the browser be.
    for mut launcher in open::commands(url) {
        mimesis_os::child_env::restore(&mut launcher);
        launcher.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
        match launcher.spawn() {
            Ok(mut child) => {
                // (xdg-open without a desktop runs the browser itself: reaped when it ends.)
                std::thread::spawn(move || child.wait());
                return Ok(());
            }
            Err(e) => tried.push(format!("{}: {e}", launcher.get_program().to_string_lossy())),
        }
    }
    Err(format!("cannot open {url}: no launcher could start ({})", tried.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::{Early, Missed};
    use mimesis_wiring::remote::HubEvent;

    #[test]
    fn the_launch_roster_is_taken_once_and_never_made_after_the_page_asked() {
        // Made before the page asks: the page takes it, once.
        let early = Early::default();
        assert!(!early.over());
        early.offer("made");
        assert_eq!(early.take(), Some("made"));
        assert!(early.over());
        assert_eq!(early.take(), None);
        // A reloaded page asks again: nothing made now is kept for it.
        early.offer("late");
        assert_eq!(early.take(), None);

        // The page asked first (or loaded without asking): what is made after is dropped.
        let early = Early::default();
        assert_eq!(early.take(), None::<&str>);
        assert!(early.over());
        early.offer("too late");
        assert_eq!(early.take(), None);
    }

    fn missed(events: Vec<HubEvent>, capacity: usize) -> Missed {
        let (tx, mut rx) = tokio::sync::broadcast::channel(capacity);
        for e in events {
            tx.send(e).unwrap();
        }
        Missed::drain(&mut rx)
    }

    #[test]
    fn the_roster_script_is_one_call_whose_argument_is_the_snapshot_whatever_its_text() {
        // Text from transcripts: quotes, a script's end, a call, line and paragraph separators
        // (line ends in JavaScript strings before ES2019), control characters, a lone `\`.
        let hostile = "\"); alert(1); (\" </script><script>x()</script> \u{2028}\u{2029} \u{0}\u{1b}[31m \\ ${x} `y` */ // \
                       … é 𝄞 😀 \u{7f}";
        let snapshot = serde_json::json!({"seq": 7, "sessions": [{"sessionId": "a", "goal": hostile, hostile: 1}]});
        let script = super::roster_script(&snapshot).unwrap();
        let arg = script.strip_prefix("window.__MIMESIS_ROSTER_SENT__(").and_then(|s| s.strip_suffix(')')).unwrap();
        // The argument is one JSON value (a JavaScript expression since ES2019), the snapshot
        // itself, and nothing of the text is left outside a string.
        let back: serde_json::Value = serde_json::from_str(arg).unwrap();
        assert_eq!(back, snapshot);
        assert!(!arg.contains('\u{2028}') && !arg.contains('\u{0}') && !arg.contains('\u{1b}'));
        // In ASCII: WebKit keeps it an 8-bit string, half the size, parsed as such.
        assert!(script.is_ascii(), "{script}");
        assert!(arg.contains("\\u2026") && arg.contains("\\ud834\\udd1e"), "{arg}");
    }

    #[test]
    fn a_page_that_was_not_listening_reads_again_only_what_other_machines_changed() {
        assert_eq!(missed(vec![], 8), Missed::default());
        // Their states alone: sent again, no new roster.
        let states = missed(vec![HubEvent::Hosts(vec![]), HubEvent::Attention(vec![])], 8);
        assert_eq!(states, Missed { rows: false, hosts: true });
        // Their rows: the roster is read again.
        let rows = missed(vec![HubEvent::Attention(vec![]), HubEvent::Events(vec![]), HubEvent::Hosts(vec![])], 8);
        assert_eq!(rows, Missed { rows: true, hosts: true });
        // Changes lost to a full channel count as rows changed, whatever they were.
        let lost = missed((0..4).map(|_| HubEvent::Attention(vec![])).collect(), 2);
        assert!(lost.rows);
        let only_notes = vec![
            HubEvent::Supervision(vec![]),
            HubEvent::Notify { key: "h:1".into(), title: "t".into(), body: "b".into() },
        ];
        assert_eq!(missed(only_notes, 8), Missed::default());
    }
}
