//! Answering the default mode (issue 33): every dialog Claude Code shows — auto mode's own
//! dialog and the per-call dialog after it (no `PermissionRequest` hook runs for either),
//! a question, plan mode's exit, a permission in manual mode — listed with the hooks'
//! requests and answered from any face, where Mimesis can reach the session's screen.
//!
//! [`start`] follows the live registry (`waiting` / `waitingFor`), the hooks (Notification
//! `permission_prompt` / `agent_needs_input`) and the roster (the call a session is blocked
//! on) through [`mimesis_core::answering::Asks`], finds each dialog's route (this face's PTY,
//! `claude attach` for a background session, the session's tmux pane, kitty window or
//! WezTerm pane, or none: "answer it in its terminal"), and keeps the face's list in step
//! ([`Approvals::sync_dialogs`]). It also gives the list its answerer: [`attach`] and
//! [`pane`] type into screens Mimesis does not own, a supervised session's PTY is typed into
//! by its supervisor. Nothing is typed but for a user's explicit answer, always by the
//! option's label, at the dialog the request names, and said done only once it is gone.

pub mod attach;
mod pane;
mod screen;

pub use screen::{CommandError, TypingError};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use mimesis_core::answering::{Ask, AskKey, Asks, Channel, Route, route};
use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::job::SessionKind;
use mimesis_core::registry::RegistryEntry;
use mimesis_watch::engine::LiveRegistry;
use tokio::sync::broadcast::error::RecvError;

use crate::Mimesis;
use crate::approvals::{DialogAnswerer, DialogCall, Listed, Rows};

/// Starts following the sessions' dialogs for `m`'s list, and answering them. Must be
/// called within a tokio runtime.
pub(crate) fn start(m: &Mimesis, rows: Rows) {
    m.approvals().set_answerer(answerer(m.clone()));
    tokio::spawn(follow(m.clone(), rows));
}

fn answerer(m: Mimesis) -> DialogAnswerer {
    Arc::new(move |call: DialogCall| {
        let m = m.clone();
        Box::pin(async move {
            let clock = m.clock().clone();
            match call.route {
                Route::Pty => {
                    let sup = m.supervisor_now().ok_or(TypingError::NoSupervisor)?;
                    let mut label = String::new();
                    for a in call.answers {
                        label = sup.answer(&call.session_id, a).await?;
                    }
                    Ok(label)
                }
                Route::Attach { job, config_dir } => {
                    let claude =
                        crate::background::Claude::new(crate::background::claude_program(m.data_dir()), &config_dir);
                    Ok(attach::answer(&claude, &job, call.answers, clock.as_ref()).await?)
                }
                Route::Pane(p) => Ok(pane::answer(&p, call.pid, call.answers, clock.as_ref()).await?),
                Route::Terminal(why) => Err(TypingError::Unreachable(why).into()),
            }
        })
    })
}

/// Keeps the list in step with the sessions' dialogs, for as long as the face runs.
async fn follow(m: Mimesis, rows: Rows) {
    let engine = m.engine().clone();
    let approvals = m.approvals().clone();
    let mut registry = engine.subscribe_registry();
    let mut hooks = engine.subscribe_hooks();
    let mut requests = approvals.subscribe();
    let mut row_changes = rows.subscribe();
    let mut serving = approvals.serving();
    let mut asks = Asks::default();
    let mut routes: HashMap<(SessionId, AskKey), Route> = HashMap::new();
    // The sessions the engine was asked about, whether their hooks run (once each).
    let mut asked_hooks: HashSet<SessionId> = HashSet::new();
    loop {
        let live = registry.borrow_and_update().clone();
        let now = m.clock().now();
        asks.set_registry(live.values().flatten(), now);
        for id in asks.sessions() {
            let row = rows.get(&id);
            asks.set_row(&id, row.as_ref().and_then(|r| r.pending_tool.clone()), row.and_then(|r| r.last_activity));
            if !asks.hooks_run(&id) && asked_hooks.insert(id.clone()) && hooks_seen(&m, &id).await {
                asks.set_hooks_run(&id);
            }
        }
        let followed: HashSet<SessionId> = asks.sessions().into_iter().collect();
        asked_hooks.retain(|id| followed.contains(id));
        let hooked: HashSet<SessionId> = requests
            .borrow_and_update()
            .iter()
            .filter(|p| p.channel == Channel::Hook)
            .map(|p| p.request.session_id.clone())
            .collect();
        asks.set_hooked(&hooked, now);
        let life = approvals.wait();
        let wanted = asks.asks(now, life);
        routes.retain(|(id, key), _| wanted.iter().any(|a| &a.session_id == id && &a.key == key));
        let mut listed = Vec::with_capacity(wanted.len());
        for ask in wanted {
            let slot = (ask.session_id.clone(), ask.key.clone());
            let r = match routes.get(&slot) {
                Some(r) => r.clone(),
                None => {
                    let r = route_of(&m, &ask, &live).await;
                    routes.insert(slot, r.clone());
                    r
                }
            };
            let cwd = rows.get(&ask.session_id).and_then(|r| r.cwd);
            listed.push(Listed {
                session_id: ask.session_id,
                key: ask.key,
                kind: ask.kind,
                tool: ask.tool,
                cwd,
                route: r,
                pid: ask.pid,
            });
        }
        approvals.sync_dialogs(listed);
        let expiry = asks.next_expiry(now, life).map(|t| now_until(now, t));
        tokio::select! {
            r = registry.changed() => if r.is_err() { return },
            ev = hooks.recv() => match ev {
                Ok(ev) => asks.hook(&ev),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            r = requests.changed() => if r.is_err() { return },
            r = row_changes.changed() => if r.is_err() { return },
            r = serving.changed() => if r.is_err() { return },
            () = sleep_for(expiry) => {}
        }
    }
}

fn now_until(now: Timestamp, then: Timestamp) -> std::time::Duration {
    then.since(now) + std::time::Duration::from_millis(10)
}

async fn sleep_for(d: Option<std::time::Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Whether the engine has seen a hook of session `id` (before this loop followed them).
async fn hooks_seen(m: &Mimesis, id: &SessionId) -> bool {
    m.engine().hooks_seen(id).await.unwrap_or(false)
}

/// Where the answer to `ask` goes: this face's supervisor, the background service's attach,
/// the session's pane, or none.
async fn route_of(m: &Mimesis, ask: &Ask, live: &LiveRegistry) -> Route {
    let supervised =
        m.supervisor_now().is_some_and(|s| s.supervision(&ask.session_id).is_some_and(|v| v.pid.is_some()));
    let entry: Option<(&PathBuf, &RegistryEntry)> = live
        .iter()
        .flat_map(|(root, entries)| entries.iter().map(move |e| (root, e)))
        .find(|(_, e)| e.session_id == ask.session_id && Some(e.pid) == ask.pid);
    // A background session (2.1.332): its registry entry's `kind: bg` and `jobId`.
    let job = entry
        .filter(|(_, e)| e.kind == Some(SessionKind::Background))
        .and_then(|(root, e)| e.job_id.as_ref().map(|j| (j, root.as_path())));
    let terminal = m.engine().terminal_of(&ask.session_id).await.ok().flatten();
    let tmux = entry.and_then(|(_, e)| e.tmux.clone());
    route(supervised, job, terminal.as_ref(), tmux.as_deref())
}
