//! Supervised PTY sessions in the app (issue 3): one engine [`Supervisor`] for the app's
//! lifetime, the `pty_*` and `resources` commands of docs/ipc.md, terminal output to the
//! webview over a raw-bytes channel, every supervision event as `supervision:event`, and
//! the supervision's crashes, recoveries and terminations fed to the attention policy
//! (tray count, desktop notifications).
//!
//! The supervisor starts in the background (its start-up cleans up after an earlier run
//! killed with SIGKILL, which may wait for a process to die); commands wait for it. It
//! adopts orphaned grandchildren (PR_SET_CHILD_SUBREAPER) so its orphan scan reaps them,
//! and [`shutdown`] stops every supervised process (SIGTERM, grace, SIGKILL) when the app
//! exits, however it was asked to (tray, last window closed, SIGTERM, SIGINT).
//!
//! Agent: the stored settings' (`agent.command`), or `$MIMESIS_AGENT` when set (tests, a
//! stand-in program). Limits: the stored settings with the environment's overrides
//! (`MAX_SESSION_DURATION_SECONDS`, …) on top, following every `settings_set`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mimesis_core::SessionId;
use mimesis_core::approval::{Answered, Via};
use mimesis_core::dialog::{Answer, Dialog};
use mimesis_core::supervision::flow::{Flow, RESET, Resync, resync_reach, resync_tail, visible_tail};
use mimesis_core::supervision::{AgentCommand, Resources, SupervisionEvent};
use mimesis_wiring::plain::PlainTerminal;
use mimesis_wiring::{Attachment, Mimesis, StartError, Supervisor, SupervisorError};
use serde::Serialize;
use tauri::ipc::{Channel, InvokeResponseBody};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::bg_terminals::BgTerminals;
use crate::hosts::{RemoteState, is_remote};
use crate::remote_pty::{RemoteTerminals, refused};

/// Output is sent to the webview at most once per frame (a keystroke's echo right away,
/// a flood as one message per frame)…
const FRAME: Duration = Duration::from_millis(16);
/// …or when this much is waiting: bigger messages cost the webview more than they save,
/// and one of them is as much live output as the flow control lets be in flight
/// (`flow::FLOOD_AT`; more is a flood).
const MESSAGE_MAX: usize = 256 * 1024;
const _: () = assert!(MESSAGE_MAX as u64 <= mimesis_core::supervision::flow::FLOOD_AT);
/// Output kept per session (the engine's default): what a resync shows is its end
/// (`flow::visible_tail`: the xterm's 3,000 lines of scrollback in TerminalPane and a
/// screen, at most `flow::RESYNC_MAX` bytes). 10,000 lines of Claude Code's output, coloured
/// and styled (some 200 bytes a line); 20,000 plain 100-column lines.
pub const SCROLLBACK: usize = 2 * 1024 * 1024;
/// Output in flight and no ack from the page for this long: the forwarder sends an empty
/// message ([`probe`]).
const PROBE_AFTER: Duration = Duration::from_secs(2);
/// …and after this many such spells it says so in the log.
const SILENT_SPELLS: u32 = 5;
/// No output for this long ends a flood (`Flow::settled`): the terminal gets its scrollback.
const SETTLE: Duration = Duration::from_millis(100);
/// During a flood the page gets a screen at most this often (`flow::Resync::Screen`): the
/// page's terminal draws each anew (with the DOM renderer, 20–30 ms of the web process's
/// CPU here), and ten a second still look like output streaming by.
const FLOOD_EVERY: Duration = Duration::from_millis(100);

/// One terminal attachment of the webview: its forwarder and where its acks go.
struct Forwarder {
    id: u64,
    task: tauri::async_runtime::JoinHandle<()>,
    acked: watch::Sender<u64>,
}

/// The app's Mimesis (whose supervisor commands wait for) and the webview's terminal
/// attachments.
pub struct PtyState {
    mimesis: Mimesis,
    /// Output forwarders per session (window key: an id, or `host:id` for a terminal on
    /// another machine), oldest first (`pty_detach` ends the oldest).
    attachments: Mutex<HashMap<String, Vec<Forwarder>>>,
    next_attachment: AtomicU64,
    /// Terminals of other machines' sessions (`host:id`).
    pub remote: RemoteTerminals,
    /// Attached terminals of Claude Code's background sessions (by row key).
    pub background: BgTerminals,
}

type CmdResult<T> = Result<T, String>;

fn session_id(s: &str) -> CmdResult<SessionId> {
    SessionId::parse(s).map_err(|e| e.to_string())
}

impl PtyState {
    pub(crate) fn mimesis(&self) -> &Mimesis {
        &self.mimesis
    }

    /// A terminal shown but not supervised here under `key`: a background session's
    /// attached one, or the terminal of a session on another machine.
    fn plain(&self, key: &str) -> Option<CmdResult<PlainTerminal>> {
        if let Some(t) = self.background.get(key) {
            return Some(Ok(t));
        }
        is_remote(key).then(|| self.remote.get(key))
    }

    /// The supervisor, once it has started.
    async fn sup(&self) -> CmdResult<Supervisor> {
        self.mimesis.supervisor().await.ok_or_else(|| {
            "no supervised sessions: no Claude Code config folder (HOME and CLAUDE_CONFIG_DIR are unset)".to_owned()
        })
    }

    /// Ends every forwarder (the page was reloaded: nothing reads their channels).
    pub fn detach_all(&self) {
        let all: Vec<_> = self.attachments.lock().map(|mut a| a.drain().collect()).unwrap_or_default();
        let sup = self.mimesis.supervisor_now();
        for (key, forwarders) in all {
            for f in forwarders {
                f.task.abort();
                if let (Some(sup), Ok(id)) = (&sup, SessionId::parse(&key)) {
                    sup.detach(&id, true);
                }
            }
        }
    }

    fn add_forwarder(&self, key: String, f: Forwarder) -> CmdResult<()> {
        self.attachments.lock().map_err(|_| "attachments poisoned".to_owned())?.entry(key).or_default().push(f);
        Ok(())
    }

    /// Ends the oldest forwarder of `key`, if any; whether there was one.
    fn end_oldest(&self, key: &str) -> CmdResult<bool> {
        let handle = {
            let mut all = self.attachments.lock().map_err(|_| "attachments poisoned".to_owned())?;
            let h = all.get_mut(key).and_then(|l| (!l.is_empty()).then(|| l.remove(0)));
            if all.get(key).is_some_and(Vec::is_empty) {
                all.remove(key);
            }
            h
        };
        Ok(handle.map(|f| f.task.abort()).is_some())
    }
}

/// Manages [`PtyState`] and forwards every supervision event to the webview once the
/// supervisor has started.
pub fn start<R: Runtime>(app: &AppHandle<R>, mimesis: &Mimesis) {
    app.manage(PtyState {
        mimesis: mimesis.clone(),
        attachments: Mutex::new(HashMap::new()),
        next_attachment: AtomicU64::new(1),
        remote: RemoteTerminals::new(SCROLLBACK),
        background: BgTerminals::new(SCROLLBACK),
    });
    let (app, mimesis) = (app.clone(), mimesis.clone());
    tauri::async_runtime::spawn(async move {
        if let Some(sup) = mimesis.supervisor().await {
            forward_events(app, sup.subscribe(), mimesis).await;
        }
    });
}

/// `$MIMESIS_AGENT`: the program sessions run, whatever the settings say.
pub fn agent_override() -> Option<AgentCommand> {
    let program = std::env::var_os("MIMESIS_AGENT").filter(|p| !p.is_empty())?;
    Some(AgentCommand::new(PathBuf::from(program)))
}

/// Every supervision event to the webview (`supervision:event`).
async fn forward_events<R: Runtime>(
    app: AppHandle<R>,
    mut rx: broadcast::Receiver<Arc<SupervisionEvent>>,
    mimesis: Mimesis,
) {
    loop {
        let ev = match rx.recv().await {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "supervision events fell behind; some were not shown");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        // The supervisor put the state this event describes into the roster before
        // sending it; a round trip through the engine's queue makes sure the store event
        // is out before this one (docs/ipc.md).
        let _ = mimesis.engine().attention().await;
        if let Err(e) = app.emit("supervision:event", &*ev) {
            tracing::warn!(error = %e, "cannot emit a supervision event");
        }
    }
}

// ---- commands (docs/ipc.md) ----

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// The window key: the session's id, or `host:id` on another machine.
    session_id: String,
}

impl Created {
    pub(crate) fn new(session_id: String) -> Created {
        Created { session_id }
    }
}

/// `cols`/`rows`: the size of the terminal that will show the session (its first screen is
/// drawn for it); the default size when either is missing.
#[tauri::command]
pub async fn pty_create<R: Runtime>(
    app: AppHandle<R>,
    state: tauri::State<'_, PtyState>,
    cwd: String,
    resume: Option<String>,
    cols: Option<u16>,
    rows: Option<u16>,
    host: Option<String>,
) -> CmdResult<Created> {
    if let Some(host) = host.filter(|h| !h.is_empty()) {
        // On another machine: `ssh -t host mimesis run …`, supervised there.
        let hub = &app.state::<RemoteState>().hub;
        let size = (cols.unwrap_or(120), rows.unwrap_or(40));
        let (key, term) = state.remote.open(hub, &host, &cwd, resume.as_deref(), size)?;
        crate::remote_pty::started(hub, &term, &key).await?;
        return Ok(Created { session_id: key });
    }
    let resume = resume.as_deref().map(session_id).transpose()?;
    // The same check the dialog makes as the user types.
    if let Some(problem) = mimesis_os::files::folder_problem(&cwd) {
        return Err(format!("{cwd}: {problem}"));
    }
    let cwd = PathBuf::from(cwd);
    let sup = state.sup().await?;
    let id = sup.create_sized(&cwd, resume, cols.zip(rows)).await.map_err(start_failure)?;
    Ok(Created { session_id: id.to_string() })
}

/// Why a session did not start, in the window's words: a missing agent program is set in
/// Settings here, not with the CLI's `--agent`.
fn start_failure(e: SupervisorError) -> String {
    match e {
        SupervisorError::Spawn(StartError::NotFound(program)) => format!(
            "cannot find the agent program {:?} (not a file, nor on PATH): install Claude Code, or set the \
             program to run in Settings › Agent › Command",
            program.display().to_string()
        ),
        e => e.to_string(),
    }
}

/// Why a folder cannot be a new session's folder, in a sentence; `null` when it can.
#[tauri::command]
pub async fn folder_check(path: String) -> CmdResult<Option<String>> {
    Ok(tauri::async_runtime::spawn_blocking(move || mimesis_os::files::folder_problem(&path)).await.unwrap_or(None))
}

/// The system's folder picker over the window, opened at `start` when it is a folder; the
/// chosen folder, or `null` when the user cancelled.
#[tauri::command]
pub async fn pick_folder(window: tauri::WebviewWindow, start: Option<String>) -> CmdResult<Option<String>> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut dialog = window.dialog().file().set_title("Folder for the new session").set_parent(&window);
    if let Some(dir) = start.map(PathBuf::from).filter(|d| d.is_dir()) {
        dialog = dialog.set_directory(dir);
    }
    dialog.pick_folder(move |chosen| {
        let _ = tx.send(chosen);
    });
    let chosen = rx.await.map_err(|_| "the folder picker closed without an answer".to_owned())?;
    Ok(chosen.and_then(|p| p.into_path().ok()).map(|p| p.to_string_lossy().into_owned()))
}

/// Whether the machine has a GPU: a DRM render node. (WebKit names every WebGL renderer
/// "Apple GPU", so the page cannot tell llvmpipe from hardware itself.)
pub fn gpu() -> bool {
    std::fs::read_dir("/dev/dri")
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false)
}

/// [`gpu`], for the terminal: without one it draws with the DOM, not WebGL in software.
#[tauri::command]
pub async fn gpu_available() -> CmdResult<bool> {
    Ok(gpu())
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
pub struct Attached {
    cols: u16,
    rows: u16,
    /// Names this attachment in `pty_ack`.
    attachment: u64,
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_attach(
    state: tauri::State<'_, PtyState>,
    session_id: String,
    on_data: Channel<InvokeResponseBody>,
) -> CmdResult<Attached> {
    let (source, att) = if let Some(term) = state.plain(&session_id) {
        let term = term?;
        let att = term.attach();
        (Source::Plain(term, session_id.clone()), att)
    } else {
        let id = self::session_id(&session_id)?;
        let sup = state.sup().await?;
        let att = sup.attach(&id, true).await.map_err(|e| e.to_string())?;
        (Source::Local(sup, id), att)
    };
    let attachment = state.next_attachment.fetch_add(1, Ordering::Relaxed);
    let attached = Attached { cols: att.cols, rows: att.rows, attachment };
    let (acked, acks) = watch::channel(0);
    let task = tauri::async_runtime::spawn(forward_output(source, att, on_data, acks));
    state.add_forwarder(session_id, Forwarder { id: attachment, task, acked })?;
    Ok(attached)
}

/// The page's xterm has parsed `parsed` bytes of this attachment's channel (all of them,
/// since it attached): the forwarder may send more (flow control, [`Flow`]).
#[tauri::command(rename_all = "camelCase")]
pub async fn pty_ack(
    state: tauri::State<'_, PtyState>,
    session_id: String,
    attachment: u64,
    parsed: u64,
) -> CmdResult<()> {
    let all = state.attachments.lock().map_err(|_| "attachments poisoned".to_owned())?;
    // A late ack of an attachment that has ended is no error: there is nothing to do.
    if let Some(f) = all.get(&session_id).and_then(|l| l.iter().find(|f| f.id == attachment)) {
        f.acked.send_if_modified(|a| {
            let more = parsed > *a;
            *a = (*a).max(parsed);
            more
        });
    }
    Ok(())
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_detach(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<()> {
    if is_remote(&session_id) || state.background.get(&session_id).is_some() {
        return state.end_oldest(&session_id).map(|_| ());
    }
    let id = self::session_id(&session_id)?;
    let sup = state.sup().await?;
    if state.end_oldest(&session_id)? {
        sup.detach(&id, true);
    }
    Ok(())
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
pub struct InputResult {
    queued: bool,
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_input(
    state: tauri::State<'_, PtyState>,
    session_id: String,
    data: String,
    binary: Option<bool>,
) -> CmdResult<InputResult> {
    let bytes = if binary == Some(true) { binary_bytes(&data).map_err(|e| e.to_string())? } else { data.into_bytes() };
    if let Some(term) = state.plain(&session_id) {
        term?.write(&bytes)?;
        return Ok(InputResult { queued: false });
    }
    let id = self::session_id(&session_id)?;
    let sup = state.sup().await?;
    let queued = sup.input(&id, &bytes).await.map_err(|e| e.to_string())?;
    Ok(InputResult { queued })
}

/// xterm's binary input (`onBinary`: mouse reports past column 95, in the X10 encoding) is a
/// string of one byte per character: those bytes, not their UTF-8.
fn binary_bytes(data: &str) -> Result<Vec<u8>, PastByte> {
    data.chars().map(|c| u8::try_from(u32::from(c))).collect::<Result<_, _>>().map_err(|_| PastByte)
}

/// Binary terminal input that is not bytes.
#[derive(Debug, thiserror::Error)]
#[error("binary terminal input has a character past byte 255: it was not sent")]
struct PastByte;

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_resize(state: tauri::State<'_, PtyState>, session_id: String, cols: u16, rows: u16) -> CmdResult<()> {
    if cols == 0 || rows == 0 {
        return Err(format!("a terminal of {cols}×{rows} cannot be shown"));
    }
    if let Some(term) = state.plain(&session_id) {
        return Ok(term?.resize(cols, rows)?);
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.resize(&id, cols, rows).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_stop(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<()> {
    if is_remote(&session_id) {
        return state.remote.stop(&session_id);
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.stop(&id).map_err(|e| e.to_string())
}

/// Issue 36: "Continue (raise the budget)": the session's own budget (or, `daily`, the
/// fleet's) becomes `budget_usd`, then the session resumes.
#[tauri::command(rename_all = "camelCase")]
pub async fn pty_raise_budget(
    state: tauri::State<'_, PtyState>,
    session_id: String,
    budget_usd: f64,
    daily: bool,
) -> CmdResult<()> {
    if is_remote(&session_id) {
        return Err("A budget is raised on the machine that runs the session.".into());
    }
    let id = self::session_id(&session_id)?;
    state.mimesis.raise_budget(&id, budget_usd, daily).await
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_resume<R: Runtime>(
    app: AppHandle<R>,
    state: tauri::State<'_, PtyState>,
    session_id: String,
) -> CmdResult<()> {
    if is_remote(&session_id) {
        return state.remote.resume(&app.state::<RemoteState>().hub, &session_id).await;
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.resume(&id).map_err(|e| e.to_string())
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_restart(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<()> {
    if is_remote(&session_id) {
        return Err(refused("Restarting", &session_id));
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.restart(&id).map_err(|e| e.to_string())
}

/// The dialog on a supervised session's screen (its question and options), if any.
#[tauri::command(rename_all = "camelCase")]
pub async fn pty_dialog(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<Option<Dialog>> {
    if is_remote(&session_id) {
        return Ok(None); // answered in its terminal, or on its machine
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.dialog(&id).await.map_err(|e| e.to_string())
}

/// Answers the dialog on a supervised session's screen by the label of its option
/// (`approve`, `deny`, or any label); returns the option chosen.
#[tauri::command(rename_all = "camelCase")]
pub async fn pty_answer(state: tauri::State<'_, PtyState>, session_id: String, answer: String) -> CmdResult<String> {
    if is_remote(&session_id) {
        return Err(refused("Answering", &session_id));
    }
    let id = self::session_id(&session_id)?;
    answer_supervised(&state.mimesis, &state.sup().await?, id, &answer, Via::Window).await
}

/// Types the user's answer into a supervised session's dialog (`approve`, `deny`, or an
/// option's label) and logs it for the session's timeline, marked with `via`.
pub async fn answer_supervised(
    mimesis: &Mimesis,
    sup: &Supervisor,
    id: SessionId,
    answer: &str,
    via: Via,
) -> CmdResult<String> {
    let (answer, behavior) = match answer {
        "approve" => (Answer::Approve, "allow"),
        "deny" => (Answer::Deny, "deny"),
        label => (Answer::Option(label.to_owned()), "choose"),
    };
    // What was asked, for the timeline: the dialog's question and the rows above it.
    let asked = sup.dialog(&id).await.ok().flatten();
    let chosen = sup.answer(&id, answer).await.map_err(|e| e.to_string())?;
    mimesis.record_answer(&Answered {
        session_id: id,
        at: mimesis.clock().now(),
        id: mimesis_wiring::approvals::answer_id(),
        tool: asked.as_ref().and_then(|d| d.context.first().cloned()),
        target: asked.map(|d| d.question),
        behavior: behavior.into(),
        choice: Some(chosen.clone()),
        message: None,
        answers: None,
        via,
    });
    Ok(chosen)
}

#[tauri::command(rename_all = "camelCase")]
pub async fn pty_delete(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<()> {
    if is_remote(&session_id) {
        return state.remote.delete(&session_id);
    }
    let id = self::session_id(&session_id)?;
    state.sup().await?.delete(&id).map_err(|e| e.to_string())
}

#[tauri::command]
pub async fn resources(state: tauri::State<'_, PtyState>) -> CmdResult<Resources> {
    Ok(state.sup().await?.resources().await)
}

// ---- output ----

/// What the output stream gave.
enum Next {
    Bytes(Arc<[u8]>),
    /// The forwarder fell behind and chunks were dropped.
    Lagged,
    Closed,
}

fn next(r: Result<Arc<[u8]>, RecvError>) -> Next {
    match r {
        Ok(b) => Next::Bytes(b),
        Err(RecvError::Lagged(_)) => Next::Lagged,
        Err(RecvError::Closed) => Next::Closed,
    }
}

/// Where a terminal's output comes from: a session supervised here, or a terminal shown
/// but not supervised here (a session on another machine, a background session attached).
enum Source {
    Local(Supervisor, SessionId),
    Plain(PlainTerminal, String),
}

impl Source {
    fn name(&self) -> &str {
        match self {
            Source::Local(_, id) => id.as_str(),
            Source::Plain(_, key) => key,
        }
    }

    /// The last `keep` bytes of the scrollback and the stream after them.
    async fn tail(&self, keep: usize) -> Option<Attachment> {
        match self {
            Source::Local(sup, id) => sup.tail(id, keep).await.ok(),
            Source::Plain(term, _) => Some(term.tail(keep)),
        }
    }
}

/// A fresh attachment (its scrollback and its stream start at the same byte), as the
/// message that resets the terminal and shows that scrollback (during a flood, its last
/// screen: `kind`).
async fn resync(source: &Source, kind: Resync) -> Option<(Vec<u8>, broadcast::Receiver<Arc<[u8]>>)> {
    let again = source.tail(resync_reach(kind)).await?;
    let tail = resync_tail(&again.scrollback, kind, again.rows);
    let mut msg = Vec::with_capacity(RESET.len() + tail.len());
    msg.extend_from_slice(RESET);
    msg.extend_from_slice(tail);
    Some((msg, again.output))
}

/// The kept scrollback, then live output coalesced per frame, under flow control
/// ([`Flow`], acks from `pty_ack`). When this falls behind the session's output, the
/// terminal is reset and gets the scrollback as it is now, so what it shows is never
/// missing a piece in the middle.
async fn forward_output(
    source: Source,
    att: Attachment,
    channel: Channel<InvokeResponseBody>,
    mut acks: watch::Receiver<u64>,
) {
    let send = |bytes: Vec<u8>| channel.send(InvokeResponseBody::Raw(bytes)).is_ok();
    let mut flow = Flow::default();
    let mut output = att.output;
    if !att.scrollback.is_empty() {
        let mut scrollback = att.scrollback;
        let cut = scrollback.len() - visible_tail(&scrollback).len();
        scrollback.drain(..cut);
        flow.resynced(scrollback.len());
        if !send(scrollback) {
            return;
        }
    }
    let mut last_send = Instant::now() - FRAME;
    let mut buf: Vec<u8> = Vec::new();
    // Spells of `PROBE_AFTER` the page has gone without acking output in flight.
    let mut quiet = 0u32;
    // A resync is due without waiting for an ack (the flood stopped and the page has room).
    let mut resync_now = false;
    loop {
        if flow.paused() {
            // Nothing goes out until the page has caught up; then one resync. (The stream
            // is not read meanwhile: the resync replaces it.) The acks are read again after
            // each quiet spell too, so nothing but the page's own silence holds this back.
            if !std::mem::take(&mut resync_now) {
                match tokio::time::timeout(PROBE_AFTER, acks.changed()).await {
                    Ok(Ok(())) => quiet = 0,
                    Ok(Err(_)) => return,
                    Err(_) => {
                        quiet += 1;
                        if !probe(&send, source.name(), &flow, quiet) {
                            return;
                        }
                    }
                }
                if !flow.ack(*acks.borrow_and_update()) {
                    continue;
                }
            }
            let kind = flow.resync();
            if kind == Resync::Screen {
                // A screen at most every `FLOOD_EVERY`: each is a whole screen drawn anew.
                tokio::time::sleep_until(last_send + FLOOD_EVERY).await;
            }
            tracing::debug!(
                session = source.name(),
                sent = flow.sent(),
                in_flight = flow.in_flight(),
                ?kind,
                "the terminal caught up; re-sending the scrollback"
            );
            let Some((msg, stream)) = resync(&source, kind).await else {
                tracing::warn!(
                    session = source.name(),
                    "the terminal caught up but the session could not be attached again; its output stops here"
                );
                return;
            };
            output = stream;
            flow.resynced(msg.len());
            if !send(msg) {
                return;
            }
            last_send = Instant::now();
            continue;
        }
        if flow.flooding() {
            // A screen was sent during a flood: the next goes once the page has parsed it,
            // and if no output comes for `SETTLE`, the flood is over: the full scrollback.
            match tokio::time::timeout(SETTLE, output.recv()).await {
                Ok(r) => {
                    if matches!(next(r), Next::Closed) {
                        // The session ended in a flood: its terminal keeps the scrollback, as
                        // after any flood (a screen at most is in flight: it has room).
                        if let Some((msg, _)) = resync(&source, Resync::Full).await {
                            send(msg);
                        }
                        return;
                    }
                    flow.ack(*acks.borrow_and_update());
                    resync_now = flow.hold();
                }
                Err(_) => resync_now = flow.settled(),
            }
            continue;
        }
        let mut lagged = false;
        let first = if flow.in_flight() == 0 {
            output.recv().await
        } else {
            match tokio::time::timeout(PROBE_AFTER, output.recv()).await {
                Ok(r) => r,
                Err(_) => {
                    // No output, and output in flight: has the page acked it meanwhile?
                    let before = flow.in_flight();
                    flow.ack(*acks.borrow_and_update());
                    if flow.in_flight() < before {
                        quiet = 0;
                    } else {
                        quiet += 1;
                        if !probe(&send, source.name(), &flow, quiet) {
                            return;
                        }
                    }
                    continue;
                }
            }
        };
        match next(first) {
            Next::Bytes(b) => buf.extend_from_slice(&b),
            Next::Lagged => lagged = true,
            Next::Closed => return,
        }
        // Whatever else is there, then more until the frame is over (the first output
        // after a quiet frame, such as an echo, goes at once).
        let until = last_send + FRAME;
        while !lagged && buf.len() < MESSAGE_MAX {
            let r = match output.try_recv() {
                Ok(b) => Ok(b),
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(TryRecvError::Closed) => Err(RecvError::Closed),
                Err(TryRecvError::Empty) => {
                    if Instant::now() >= until {
                        break;
                    }
                    match tokio::time::timeout_at(until, output.recv()).await {
                        Ok(r) => r,
                        Err(_) => break,
                    }
                }
            };
            match next(r) {
                Next::Bytes(b) => buf.extend_from_slice(&b),
                Next::Lagged => lagged = true,
                Next::Closed => break,
            }
        }
        flow.ack(*acks.borrow_and_update());
        let behind = if lagged {
            tracing::debug!(
                session = source.name(),
                sent = flow.sent(),
                in_flight = flow.in_flight(),
                "terminal output fell behind; re-sending the scrollback"
            );
            true
        } else if buf.is_empty() {
            continue;
        } else if !flow.offer(buf.len()) {
            tracing::debug!(
                session = source.name(),
                sent = flow.sent(),
                in_flight = flow.in_flight(),
                len = buf.len(),
                "the terminal is behind; holding output back"
            );
            true
        } else {
            false
        };
        if behind {
            buf.clear();
            // At once when the page has room, else when it has caught up. (Output held back
            // with little in flight must not wait for an ack: a page that has parsed all it
            // got sends none. So it was when the PTY's output came in one piece bigger than
            // the high-water mark, with nothing in flight: the terminal stopped for good.)
            if !flow.hold() {
                continue;
            }
            let Some((msg, stream)) = resync(&source, flow.resync()).await else {
                tracing::warn!(
                    session = source.name(),
                    "the session could not be attached again; its terminal output stops here"
                );
                return;
            };
            output = stream;
            flow.resynced(msg.len());
            buf = msg;
        }
        tracing::trace!(
            session = source.name(),
            len = buf.len(),
            sent = flow.sent(),
            in_flight = flow.in_flight(),
            "output to the terminal"
        );
        if !send(std::mem::take(&mut buf)) {
            return;
        }
        last_send = Instant::now();
    }
}

/// The page has not acked output in flight for `quiet` spells of [`PROBE_AFTER`]. After the
/// first, an empty message goes: if a message before it never reached the page (Tauri
/// fetches each large one separately and only logs a fetch that fails), the page sees the
/// gap and attaches again (the UI's `InOrder`); otherwise it costs nothing. Without it a lost
/// last message would leave the page waiting for it and this forwarder waiting for acks,
/// for ever. After [`SILENT_SPELLS`], a warning. False when the channel is closed.
fn probe(send: &impl Fn(Vec<u8>) -> bool, session: &str, flow: &Flow, quiet: u32) -> bool {
    if quiet == SILENT_SPELLS {
        tracing::warn!(
            session,
            sent = flow.sent(),
            in_flight = flow.in_flight(),
            "the terminal has acknowledged none of its output for {} s",
            (PROBE_AFTER * quiet).as_secs()
        );
    }
    quiet != 1 || send(Vec::new())
}

#[cfg(test)]
mod tests {
    #[test]
    fn binary_input_is_one_byte_per_character() {
        // A mouse report at column 200 (X10: 32 + 200 = 232), which UTF-8 would make two bytes.
        let report = format!("\x1b[M {}!", char::from(232u8));
        assert_eq!(super::binary_bytes(&report).unwrap(), [0x1b, b'[', b'M', b' ', 232, b'!']);
        assert!(super::binary_bytes("é€").is_err());
    }

    #[test]
    fn a_missing_agent_is_set_in_settings_not_with_a_flag() {
        use mimesis_wiring::{StartError, SupervisorError};
        let missing = SupervisorError::Spawn(StartError::NotFound("claude".into()));
        let said = super::start_failure(missing);
        assert!(said.contains("\"claude\"") && said.contains("Settings › Agent › Command"), "{said}");
        assert!(!said.contains("--agent"), "{said}");
        let other = SupervisorError::NotAFolder("/nowhere".into());
        assert_eq!(
            super::start_failure(other),
            "/nowhere is not a folder; choose an existing folder to run the session in"
        );
    }
}
