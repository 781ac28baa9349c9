//! The real Mimesis engine watching a config dir, from synchronous test code: a tokio
//! runtime on its own thread runs [`mimesis_watch::Engine`] and folds every store event
//! into a map of sessions (as JSON, the contract's shape) plus a per-session history of
//! statuses.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mimesis_core::StoreEvent;
use mimesis_watch::{Engine, EngineConfig};
use serde_json::Value;

#[derive(Default)]
pub struct State {
    /// Session id → the session object, kept current by applying events.
    pub sessions: HashMap<String, Value>,
    /// Session id → every status it was reported in, in order (consecutive repeats kept once).
    pub statuses: HashMap<String, Vec<String>>,
    /// Every event as received.
    pub events: Vec<Value>,
    /// Every status change as (when it was received, session id, new status).
    pub status_changes: Vec<(Instant, String, String)>,
}

impl State {
    fn apply(&mut self, ev: &StoreEvent) {
        self.events.push(serde_json::to_value(ev).unwrap_or(Value::Null));
        let id = ev.session_id().to_string();
        match ev {
            StoreEvent::Discovered { session } => {
                self.sessions.insert(id.clone(), serde_json::to_value(session).unwrap_or(Value::Null));
            }
            StoreEvent::Updated { changes, .. } => {
                if let (Some(Value::Object(s)), Ok(Value::Object(changes))) =
                    (self.sessions.get_mut(&id), serde_json::to_value(changes))
                {
                    s.extend(changes);
                }
            }
            StoreEvent::Removed { .. } => {
                self.sessions.remove(&id);
            }
        }
        if let Some(status) = self.sessions.get(&id).and_then(|s| s.get("status")).and_then(Value::as_str) {
            let h = self.statuses.entry(id.clone()).or_default();
            if h.last().map(String::as_str) != Some(status) {
                h.push(status.to_owned());
                self.status_changes.push((Instant::now(), id, status.to_owned()));
            }
        }
    }

    pub fn session(&self, id: &str) -> Option<&Value> {
        self.sessions.get(id)
    }

    pub fn field<'a>(&'a self, id: &str, key: &str) -> Option<&'a Value> {
        self.session(id)?.get(key)
    }
}

/// The engine on a runtime thread; dropped with the watcher.
pub struct EngineWatch {
    shared: Arc<(Mutex<State>, Condvar)>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EngineWatch {
    /// Starts the engine on `config_dir` and waits for its initial index.
    pub fn start(config_dir: &Path) -> Result<Self> {
        Self::start_with(config_dir, None)
    }

    /// Like [`EngineWatch::start`], with a data dir: the fleet database and the hook
    /// events recorded by `mimesis hook --data-dir <data_dir>`.
    pub fn start_with(config_dir: &Path, data_dir: Option<&Path>) -> Result<Self> {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let roots = vec![config_dir.to_owned()];
        let data_dir = data_dir.map(Path::to_owned);
        let sh = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
            rt.block_on(async move {
                let engine = Engine::start(EngineConfig {
                    roots,
                    poll_interval: Duration::from_millis(250),
                    data_dir,
                    ..Default::default()
                });
                let mut events = engine.subscribe();
                engine.ready().await;
                let _ = ready_tx.send(());
                let mut stop_rx = stop_rx;
                loop {
                    tokio::select! {
                        _ = &mut stop_rx => break,
                        ev = events.recv() => match ev {
                            Ok(env) => {
                                let (lock, cv) = &*sh;
                                lock.lock().expect("state lock").apply(&env.event);
                                cv.notify_all();
                            }
                            Err(e) => panic!("engine event stream failed: {e}"),
                        }
                    }
                }
                engine.shutdown().await;
            });
        });
        ready_rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| anyhow::anyhow!("the engine did not become ready"))?;
        Ok(EngineWatch { shared, stop: Some(stop_tx), thread: Some(thread) })
    }

    /// Runs `f` on the current state.
    pub fn with<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.shared.0.lock().expect("state lock"))
    }

    /// Waits until `cond` holds on the state; the error shows the state at the deadline.
    pub fn wait_for(&self, what: &str, timeout: Duration, mut cond: impl FnMut(&State) -> bool) -> Result<()> {
        let (lock, cv) = &*self.shared;
        let deadline = Instant::now() + timeout;
        let mut state = lock.lock().expect("state lock");
        loop {
            if cond(&state) {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                let sessions = serde_json::to_string_pretty(&state.sessions).unwrap_or_default();
                bail!(
                    "the engine did not report {what} within {timeout:?}\nsessions: {sessions}\nstatus history: {:?}",
                    state.statuses
                );
            }
            state = cv.wait_timeout(state, deadline - now).expect("state lock").0;
        }
    }
}

impl Drop for EngineWatch {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
