//! Claude Code's background sessions in the window (issue 33): "New session … in the
//! background" (`bg_create`, through `claude --bg`), a background row opened in the
//! embedded terminal by attaching through Claude Code's own `claude attach <id>` (on
//! another machine `ssh -t host mimesis attach <id>`) in a pseudo-terminal of ours
//! ([`PlainTerminal`]: shown, not supervised), and its Stop, Respawn and Remove
//! (`claude stop|respawn|rm`). Closing the pane detaches the way a person does (Ctrl+Z):
//! the session goes on. Nothing of the service is ever signalled by us; only the attach
//! client, our own process, is ended if it does not leave by itself.
//!
//! The terminals are kept under the row's key (a session id, or `host:id`), so the
//! `pty_attach`, `pty_ack`, `pty_input`, `pty_resize` and `pty_detach` commands reach them
//! by the row's id (src-tauri/src/pty.rs).

use std::time::Duration;

use mimesis_wiring::background::{self as bg, Claude, ControlError, Target, Verb};
use mimesis_wiring::plain::PlainTerminal;

use crate::pty::{Created, PtyState};

type CmdResult<T> = Result<T, String>;

/// How long a detached client may take to leave after Ctrl+Z before it is closed.
const DETACH_WAIT: Duration = Duration::from_secs(3);

fn sentence(e: ControlError) -> String {
    e.to_string()
}

/// What `key` (a row's id) names, as the CLI would resolve it.
fn target(state: &PtyState, key: &str) -> CmdResult<Target> {
    let m = state.mimesis();
    bg::resolve(m.roots(), m.data_dir(), key).map_err(sentence)
}

/// `claude --bg PROMPT` in `cwd`, under the first config folder: the new session's id.
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_create(
    state: tauri::State<'_, PtyState>,
    cwd: String,
    prompt: String,
    permission_mode: Option<String>,
) -> CmdResult<Created> {
    let m = state.mimesis().clone();
    let root = m.roots().first().cloned().ok_or("no Claude Code config folder (CLAUDE_CONFIG_DIR, ~/.claude)")?;
    let claude = Claude::new(bg::claude_program(m.data_dir()), &root);
    let started = tauri::async_runtime::spawn_blocking(move || {
        claude.dispatch(std::path::Path::new(&cwd), &prompt, permission_mode.as_deref().filter(|p| !p.is_empty()))
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(sentence)?;
    Ok(Created::new(started.session_id.to_string()))
}

/// Opens the background session of `sessionId` in a terminal of the window's: `claude
/// attach` there (or over ssh), unless one is open already. The page then attaches to it
/// with `pty_attach`.
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_attach(
    state: tauri::State<'_, PtyState>,
    session_id: String,
    cols: Option<u16>,
    rows: Option<u16>,
) -> CmdResult<()> {
    if state.background.get(&session_id).is_some_and(|t| t.exit_code().is_none()) {
        return Ok(());
    }
    let target = target(&state, &session_id)?;
    let size = (cols.unwrap_or(120), rows.unwrap_or(40));
    let spec =
        bg::attach_spec(state.mimesis().data_dir(), &target, size, state.background.scrollback).map_err(sentence)?;
    let term = PlainTerminal::start(spec)?;
    tracing::info!(session = %session_id, pid = term.pid(), "attached to a background session");
    if let Some(old) = state.background.lock().insert(session_id, term) {
        old.close();
    }
    Ok(())
}

/// Closes the pane of a background session: detaches (Ctrl+Z, as Claude Code says), waits
/// for the client to leave, and forgets the terminal. The session goes on.
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_detach(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<()> {
    let Some(term) = state.background.lock().remove(&session_id) else { return Ok(()) };
    let _ = term.write(b"\x1a");
    let mut exited = term.exited();
    let left = tokio::time::timeout(DETACH_WAIT, exited.wait_for(Option::is_some)).await;
    if left.is_err() {
        tracing::info!(session = %session_id, "the attach client did not leave after Ctrl+Z; closing it");
    }
    term.close();
    Ok(())
}

/// Runs `verb` on the session; what it ran and how it ended is logged (at debug), so a
/// verb that never came back or failed can be told apart from one never asked for.
async fn act(state: &PtyState, session_id: &str, verb: Verb) -> CmdResult<String> {
    let target = target(state, session_id).inspect_err(|e| {
        tracing::debug!(session = %session_id, verb = verb.word(), error = ?e, "no target for a verb");
    })?;
    tracing::debug!(session = %session_id, verb = verb.word(), "running the verb");
    let data_dir = state.mimesis().data_dir().to_owned();
    let t0 = std::time::Instant::now();
    let result = run_verb(data_dir, target, verb).await;
    let (verb, ms) = (verb.word(), t0.elapsed().as_millis() as u64);
    match &result {
        Ok(said) => tracing::debug!(session = %session_id, verb, ms, said = ?said, "the verb ended"),
        Err(e) => tracing::debug!(session = %session_id, verb, ms, error = ?e, "the verb failed"),
    }
    result
}

async fn run_verb(data_dir: std::path::PathBuf, target: Target, verb: Verb) -> CmdResult<String> {
    tauri::async_runtime::spawn_blocking(move || match target {
        Target::Background(t) => Claude::of(&data_dir, &t).act(&t.job, verb),
        Target::Remote { host, id } => {
            let out = bg::remote_verb(&host, verb.word(), &id, false)?
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| ControlError::Failed(format!("cannot run ssh: {e}")))?;
            let said = |b: &[u8]| mimesis_core::text::clean_text(&String::from_utf8_lossy(b), 400);
            if out.status.success() {
                Ok(said(&out.stdout))
            } else {
                Err(ControlError::Failed(format!("{host}: {}", said(&out.stderr))))
            }
        }
        Target::Supervised { session_id, .. } => Err(ControlError::Uncontrollable(format!(
            "session {session_id} is supervised here: use its Stop and Restart"
        ))),
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(sentence)
}

/// `claude stop <id>`: Claude Code's line (`stopped <id>`).
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_stop(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<String> {
    act(&state, &session_id, Verb::Stop).await
}

/// `claude respawn <id>`: restarted from its transcript (also a stopped one).
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_respawn(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<String> {
    act(&state, &session_id, Verb::Respawn).await
}

/// `claude rm <id>`: stopped and removed from the service; the transcript stays.
#[tauri::command(rename_all = "camelCase")]
pub async fn bg_remove(state: tauri::State<'_, PtyState>, session_id: String) -> CmdResult<String> {
    if let Some(term) = state.background.lock().remove(&session_id) {
        term.close();
    }
    act(&state, &session_id, Verb::Remove).await
}
