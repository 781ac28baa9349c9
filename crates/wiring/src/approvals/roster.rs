//! The sessions a face follows, as its requests are marked with them
//! ([`Approvals::set_roster`]) and its dialogs are described ([`crate::answering`]): the few
//! fields of the engine's roster they need, kept in step with its events.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use mimesis_core::clock::Timestamp;
use mimesis_core::ids::SessionId;
use mimesis_core::session::{PendingTool, SessionPatch, StoreEvent, TrackedSession};
use mimesis_core::text::clean_text;
use mimesis_watch::Engine;

use super::Approvals;

/// What the faces' requests need of a roster row.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub cwd: Option<String>,
    title: Option<String>,
    goal: Option<String>,
    /// The tool call it is blocked on, from its transcript.
    pub pending_tool: Option<PendingTool>,
    /// Its newest record.
    pub last_activity: Option<Timestamp>,
}

impl Row {
    fn of(s: &TrackedSession) -> Row {
        Row {
            cwd: s.cwd.clone(),
            title: s.title.clone(),
            goal: s.goal.clone(),
            pending_tool: s.pending_tool.clone(),
            last_activity: Some(s.last_activity_at),
        }
    }

    /// Takes a patch in; whether the name changed, and whether anything did.
    fn apply(&mut self, p: &SessionPatch) -> (bool, bool) {
        let mut named = false;
        for (field, new) in [(&mut self.cwd, &p.cwd), (&mut self.title, &p.title), (&mut self.goal, &p.goal)] {
            if let Some(v) = new {
                named |= *field != *v;
                field.clone_from(v);
            }
        }
        let mut other = false;
        if let Some(t) = &p.pending_tool {
            other |= self.pending_tool != *t;
            self.pending_tool.clone_from(t);
        }
        if let Some(t) = p.last_activity_at {
            other |= self.last_activity != Some(t);
            self.last_activity = Some(t);
        }
        (named, named || other)
    }

    /// How the face calls the session: its folder, its title (else its goal).
    pub fn name(&self) -> String {
        let folder = self.cwd.as_deref().and_then(|c| c.rsplit('/').find(|p| !p.is_empty()));
        let title = self.title.as_deref().or(self.goal.as_deref()).filter(|t| !t.trim().is_empty());
        match (folder, title) {
            (Some(f), Some(t)) => format!("{} · {}", clean_text(f, 60), clean_text(t, 80)),
            (Some(f), None) => clean_text(f, 60),
            (None, Some(t)) => clean_text(t, 80),
            (None, None) => String::new(),
        }
    }
}

/// The rows of the sessions a face follows. Cheap to clone.
#[derive(Clone)]
pub struct Rows {
    map: Arc<RwLock<HashMap<SessionId, Row>>>,
    /// Grows by one at every change of a row.
    changed: watch::Sender<u64>,
}

impl Rows {
    pub fn get(&self, id: &SessionId) -> Option<Row> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    /// Told of every change of a row (its number grows).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// Marks `approvals`' requests with the sessions `engine` follows, from now on; the rows
/// are kept for whoever else describes requests.
pub fn follow(engine: &Engine, approvals: &Approvals) -> Rows {
    let rows = Rows { map: Arc::default(), changed: watch::channel(0).0 };
    approvals.set_roster({
        let rows = rows.clone();
        Arc::new(move |id| rows.get(id).map(|r| r.name()))
    });
    let (engine, approvals, out) = (engine.clone(), approvals.clone(), rows.clone());
    tokio::spawn(async move {
        let mut rx = engine.subscribe();
        let Some(mut seq) = resync(&engine, &rows, &approvals).await else { return };
        loop {
            let env = match rx.recv().await {
                Ok(env) => env,
                Err(RecvError::Lagged(_)) => match resync(&engine, &rows, &approvals).await {
                    Some(s) => {
                        seq = s;
                        continue;
                    }
                    None => return,
                },
                Err(RecvError::Closed) => return,
            };
            if env.seq <= seq {
                continue;
            }
            let (named, changed) = {
                let mut map = rows.map.write().unwrap_or_else(|e| e.into_inner());
                match &env.event {
                    StoreEvent::Discovered { session } => {
                        map.insert(session.session_id.clone(), Row::of(session));
                        (Some(&session.session_id), true)
                    }
                    StoreEvent::Updated { session_id, changes } => {
                        let (named, changed) = map.get_mut(session_id).map_or((false, false), |r| r.apply(changes));
                        (named.then_some(session_id), changed)
                    }
                    StoreEvent::Removed { session_id } => {
                        let gone = map.remove(session_id).is_some();
                        (gone.then_some(session_id), gone)
                    }
                }
            };
            if let Some(id) = named {
                approvals.roster_changed(id);
            }
            if changed {
                rows.bump();
            }
        }
    });
    out
}

/// The whole roster again (at the start, and after falling behind); its seq.
async fn resync(engine: &Engine, rows: &Rows, approvals: &Approvals) -> Option<u64> {
    let snap = engine.snapshot().await.ok()?;
    *rows.map.write().unwrap_or_else(|e| e.into_inner()) =
        snap.sessions.iter().map(|s| (s.session_id.clone(), Row::of(s))).collect();
    approvals.set_roster_again();
    rows.bump();
    Some(snap.seq)
}
