//! The sessions a face follows, as its requests are marked with them
//! ([`Approvals::set_roster`]): the engine's roster, kept in step with its events.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast::error::RecvError;

use mimesis_core::ids::SessionId;
use mimesis_core::session::{SessionPatch, StoreEvent, TrackedSession};
use mimesis_core::text::clean_text;
use mimesis_watch::Engine;

use super::Approvals;

/// What a session is called by: its folder, its title (else its goal).
#[derive(Default)]
struct Name {
    cwd: Option<String>,
    title: Option<String>,
    goal: Option<String>,
}

impl Name {
    fn of(s: &TrackedSession) -> Name {
        Name { cwd: s.cwd.clone(), title: s.title.clone(), goal: s.goal.clone() }
    }

    /// Takes a patch in; whether the name changed.
    fn apply(&mut self, p: &SessionPatch) -> bool {
        let mut changed = false;
        for (field, new) in [(&mut self.cwd, &p.cwd), (&mut self.title, &p.title), (&mut self.goal, &p.goal)] {
            if let Some(v) = new {
                changed |= *field != *v;
                field.clone_from(v);
            }
        }
        changed
    }

    fn text(&self) -> String {
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

type Names = Arc<RwLock<HashMap<SessionId, Name>>>;

/// Marks `approvals`' requests with the sessions `engine` follows, from now on.
pub fn follow(engine: &Engine, approvals: &Approvals) {
    let names: Names = Arc::default();
    approvals.set_roster({
        let names = names.clone();
        Arc::new(move |id| names.read().unwrap_or_else(|e| e.into_inner()).get(id).map(Name::text))
    });
    let (engine, approvals) = (engine.clone(), approvals.clone());
    tokio::spawn(async move {
        let mut rx = engine.subscribe();
        let Some(mut seq) = resync(&engine, &names, &approvals).await else { return };
        loop {
            let env = match rx.recv().await {
                Ok(env) => env,
                Err(RecvError::Lagged(_)) => match resync(&engine, &names, &approvals).await {
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
            let changed = {
                let mut names = names.write().unwrap_or_else(|e| e.into_inner());
                match &env.event {
                    StoreEvent::Discovered { session } => {
                        names.insert(session.session_id.clone(), Name::of(session));
                        Some(&session.session_id)
                    }
                    StoreEvent::Updated { session_id, changes } => {
                        names.get_mut(session_id).is_some_and(|n| n.apply(changes)).then_some(session_id)
                    }
                    StoreEvent::Removed { session_id } => names.remove(session_id).map(|_| session_id),
                }
            };
            if let Some(id) = changed {
                approvals.roster_changed(id);
            }
        }
    });
}

/// The whole roster again (at the start, and after falling behind); its seq.
async fn resync(engine: &Engine, names: &Names, approvals: &Approvals) -> Option<u64> {
    let snap = engine.snapshot().await.ok()?;
    *names.write().unwrap_or_else(|e| e.into_inner()) =
        snap.sessions.iter().map(|s| (s.session_id.clone(), Name::of(s))).collect();
    approvals.set_roster_again();
    Some(snap.seq)
}
