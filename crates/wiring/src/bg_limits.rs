//! The driver of Mimesis's limits on Claude Code's background sessions (issue 33 §4), on
//! when the user turns them on (`limits.backgroundSessions`). The rules are
//! `mimesis_core::supervision::background` (a machine per session, on the injected clock);
//! this task feeds it the roster's rows, measures the RSS of the worker's process tree when
//! asked, runs Claude Code's own verbs (`claude respawn|stop <id>`: nothing of the service
//! is ever signalled by Mimesis) and sends the events through the supervisor, so the window,
//! the tray and notifications see them like a supervised session's. The end of a turn, which
//! a stop or a restart waits for, is the row's status and what the session's transcript
//! shows ([`mimesis_watch::Engine::turn_written`], asked after each change of the row).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mimesis_core::clock::{Clock, Mono};
use mimesis_core::ids::{JobId, SessionId};
use mimesis_core::job::SessionKind;
use mimesis_core::session::TrackedSession;
use mimesis_core::status::Status;
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::supervision::background::{BgEffect, BgLimits, BgObservation};
use mimesis_core::supervision::limits::Limits;
use mimesis_supervise::Supervisor;
use tokio::sync::mpsc;

use crate::Mimesis;
use crate::background::Verb;
use crate::roster_rows::{self, Rows, Seen, wake_at};

/// One background session under the limits.
struct Watched {
    limits: BgLimits,
    job: JobId,
    root: PathBuf,
    /// The session's folder (Claude Code's verbs run there).
    cwd: Option<PathBuf>,
}

/// What the limits need of a roster row.
#[derive(Clone, Debug, Default)]
struct Slim {
    kind: Option<SessionKind>,
    job: Option<mimesis_core::job::Job>,
    live: bool,
    status: Status,
    host: Option<String>,
    /// The tokens its transcript records.
    tokens: u64,
}

impl roster_rows::Slim for Slim {
    fn of(s: &TrackedSession) -> Slim {
        Slim {
            kind: s.kind,
            job: s.job.clone(),
            live: s.live,
            status: s.status,
            host: s.host.clone(),
            tokens: s.usage.total(),
        }
    }

    fn apply(&mut self, p: &mimesis_core::session::SessionPatch) {
        if let Some(k) = p.kind {
            self.kind = k;
        }
        if let Some(j) = &p.job {
            self.job = j.clone();
        }
        if let Some(l) = p.live {
            self.live = l;
        }
        if let Some(s) = p.status {
            self.status = s;
        }
        if let Some(h) = &p.host {
            self.host = h.clone();
        }
        if let Some(u) = &p.usage {
            self.tokens = u.total();
        }
    }
}

/// What came back from work done off the task.
enum Done {
    /// The RSS of the worker `pid`'s process tree.
    Rss(SessionId, u64, u32),
}

/// Runs until the engine's stream ends.
pub(crate) async fn run(mimesis: Mimesis, sup: Supervisor) {
    let engine = mimesis.engine().clone();
    let mut events = engine.subscribe();
    let mut settings = mimesis.subscribe_settings();
    let clock = mimesis.clock().clone();
    engine.ready().await;
    let mut rows: Rows<Slim> = Rows::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut d =
        Driver { mimesis, sup, clock, watched: HashMap::new(), done: done_tx, written: HashMap::new(), limits: None };
    d.refresh_limits();
    loop {
        let wait = d.next_deadline().map(|at| wake_at(d.clock.as_ref(), at));
        // Rows are followed only while the limits apply to background sessions (off by default).
        let on = d.limits.is_some();
        if on && !rows.following() {
            rows.start(&engine).await;
            d.settings_changed(&rows);
        } else if !on && rows.following() {
            rows.stop();
            d.settings_changed(&rows);
        }
        tokio::select! {
            ev = events.recv() => match rows.take(ev, &engine).await {
                Seen::Rows(ids) => {
                    for id in ids {
                        let row = rows.get(&id);
                        if row.is_some_and(|r| r.kind == Some(SessionKind::Background) && r.host.is_none()) {
                            let written = engine.turn_written(&id).await.ok().flatten().unwrap_or(false);
                            d.written.insert(id.clone(), written);
                        } else {
                            d.written.remove(&id);
                        }
                        d.row_changed(&id, row);
                    }
                }
                Seen::Closed => return,
            },
            changed = settings.changed() => {
                if changed.is_err() {
                    return;
                }
                d.refresh_limits();
                if rows.following() {
                    d.settings_changed(&rows);
                }
            }
            Some(done) = done_rx.recv() => match done {
                Done::Rss(id, bytes, pid) => {
                    let now = d.clock.mono();
                    let effects = d.watched.get_mut(&id).map(|w| w.limits.rss(bytes, Some(pid), now)).unwrap_or_default();
                    d.carry_out(&id, effects);
                }
            },
            _ = sleep_until(wait) => d.tick(),
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Driver {
    mimesis: Mimesis,
    sup: Supervisor,
    clock: Arc<dyn Clock>,
    watched: HashMap<SessionId, Watched>,
    done: mpsc::UnboundedSender<Done>,
    /// What each background session's transcript showed when its row last changed: its
    /// words so far written.
    written: HashMap<SessionId, bool>,
    /// The limits in force, when they apply to background sessions: worked out again when
    /// the settings change, not for each of the engine's events (a first index of 2,000
    /// sessions sends thousands, all read once the index is done, and working the limits
    /// out took ~60 µs each: 0.1 s of CPU as the window's roster was completed).
    limits: Option<Limits>,
}

impl Driver {
    /// The limits in force, when they apply to background sessions.
    fn limits(&self) -> Option<Limits> {
        self.limits.clone()
    }

    fn refresh_limits(&mut self) {
        self.limits = self.mimesis.effective_limits().map(|e| e.limits).filter(|l| l.background_sessions);
    }

    fn next_deadline(&self) -> Option<Mono> {
        self.watched.values().filter_map(|w| w.limits.next_deadline()).min()
    }

    fn settings_changed(&mut self, rows: &Rows<Slim>) {
        let Some(limits) = self.limits() else {
            if !self.watched.is_empty() {
                tracing::info!("limits no longer applied to background sessions");
            }
            self.watched.clear();
            return;
        };
        let now = self.clock.mono();
        for w in self.watched.values_mut() {
            w.limits.set_limits(limits.clone(), now);
        }
        for (id, row) in rows.all() {
            self.row_changed(id, Some(row));
        }
    }

    fn row_changed(&mut self, id: &SessionId, row: Option<&Slim>) {
        let job =
            row.filter(|r| r.kind == Some(SessionKind::Background) && r.host.is_none()).and_then(|r| r.job.clone());
        let (Some(row), Some(job), Some(limits)) = (row, job, self.limits()) else {
            self.watched.remove(id);
            return;
        };
        let now = self.clock.mono();
        let wall = self.clock.now();
        let found = if row.live { roster_rows::worker(self.mimesis.roots(), &job.id) } else { None };
        let started_wall = found.as_ref().and_then(|(_, w)| w.started_at);
        let started = started_wall.map_or(now, |s| {
            Mono::from_millis(now.millis().saturating_sub(wall.millis().saturating_sub(s.millis()).max(0) as u64))
        });
        let obs = BgObservation {
            live: row.live,
            busy: row.status == Status::Working,
            attempt: job.attempt,
            started,
            worker: found.as_ref().map(|(_, w)| w.pid),
            tokens: row.tokens,
            written: self.written.get(id).copied().unwrap_or(false),
        };
        let effects = match self.watched.get_mut(id) {
            Some(w) => {
                if let Some((root, worker)) = found {
                    w.root = root;
                    w.cwd = roster_rows::cwd_of(&worker).or(w.cwd.take());
                }
                w.limits.observe(obs, now)
            }
            None => {
                let Some((root, worker)) = found else { return };
                tracing::info!(session = %id, job = %job.id, "the limits apply to this background session");
                let limits = BgLimits::new(id.clone(), obs, limits, now);
                let cwd = roster_rows::cwd_of(&worker);
                self.watched.insert(id.clone(), Watched { limits, job: job.id.clone(), root, cwd });
                Vec::new()
            }
        };
        self.carry_out(id, effects);
    }

    fn tick(&mut self) {
        let now = self.clock.mono();
        let due: Vec<SessionId> = self
            .watched
            .iter()
            .filter(|(_, w)| w.limits.next_deadline().is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let effects = self.watched.get_mut(&id).map(|w| w.limits.tick(now)).unwrap_or_default();
            self.carry_out(&id, effects);
        }
    }

    fn carry_out(&mut self, id: &SessionId, effects: Vec<BgEffect>) {
        let Some(w) = self.watched.get(id) else { return };
        let (job, root, cwd) = (w.job.clone(), w.root.clone(), w.cwd.clone());
        for effect in effects {
            match effect {
                BgEffect::Emit(kind) => {
                    self.sup.publish_event(SupervisionEvent { kind, session_id: id.clone(), at: self.clock.now() })
                }
                BgEffect::MeasureRss => {
                    let (done, id, job, roots) = (self.done.clone(), id.clone(), job.clone(), vec![root.clone()]);
                    tokio::task::spawn_blocking(move || {
                        let pid = roster_rows::worker(&roots, &job)?.1.pid;
                        let (rss, _) = mimesis_os::procs::tree_usage(pid);
                        done.send(Done::Rss(id, rss, pid)).ok()
                    });
                }
                BgEffect::Respawn | BgEffect::Stop => {
                    let verb = if effect == BgEffect::Respawn { Verb::Respawn } else { Verb::Stop };
                    let (data, why) = (self.mimesis.data_dir(), "background session limit");
                    roster_rows::act(data, &root, cwd.as_deref(), (id, &job), verb, why);
                }
            }
        }
    }
}
