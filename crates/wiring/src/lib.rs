//! One wiring of Mimesis, for both faces: [`Mimesis::start`] is the one function that
//! builds a running Mimesis, whether the desktop app, `mimesis watch` or `mimesis run`
//! asks for it. It opens the fleet database, reads the stored settings and fans them out
//! once (the engine's timeouts and notification choices, the supervisor's limits with the
//! environment's and the command line's overrides on top, the agent), starts the engine
//! and the supervisor and connects them: each supervised session's state goes into the
//! roster, the roster's view of the agent (live registry, hooks, transcript) goes into
//! the supervisor, and supervision events become attention (the tray, notifications).
//! Hooks and `doctor` are here too, because they need the whole picture.
//!
//! Layer: the top of the library, above every I/O crate (`mimesis-fleetdb`,
//! `mimesis-search`, `mimesis-watch`, `mimesis-supervise`, `mimesis-hooks`,
//! `mimesis-remote`, `mimesis-approvals`) and `mimesis-core`. The faces (`mimesis` and
//! `mimesis-desktop`) only parse their input, call this, and render: they reach the I/O
//! crates only through what it re-exports.
//!
//! - [`background`]: one control vocabulary (`bg`, `attach`, `logs`, `stop`, `respawn`,
//!   `rm`) for background, supervised and remote sessions, through Claude Code's own verbs.
//! - [`doctor`]: is this installation able to watch Claude Code?
//! - [`demo`]: generated live sessions for a newcomer (SPEC X2).
//! - [`once`]: the roster and timelines read once, without watching (`ls`, `show`).
//! - [`cost`]: cost reports by day, session, project or model (`cost`).
//! - [`ui_contract`]: what the UI must word and offer as the engine does, as TypeScript.

pub mod answering;
pub mod approvals;
pub mod background;
mod bg_limits;
mod budgets;
pub mod cost;
pub mod demo;
pub mod doctor;
mod handover;
pub mod once;
pub mod remote;
mod roster_rows;
pub mod search;
pub mod supervisors;
pub mod ui_contract;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mimesis_core::attention::SupervisionSignal;
use mimesis_core::clock::{Clock, SystemClock, Timestamp};
use mimesis_core::ids::SessionId;
use mimesis_core::layout::TranscriptLocation;
use mimesis_core::persist::SessionArchive;
use mimesis_core::session::StoreEvent;
use mimesis_core::settings::{FieldError, SetOutcome, Settings};
use mimesis_core::status::Status;
use mimesis_core::supervision::limits::{self, Effective, LimitFlags, Limits, LimitsEnv};
use mimesis_core::supervision::policy::AgentReport;
use mimesis_core::supervision::view::Supervision;
use mimesis_core::supervision::{AgentCommand, SupervisionEvent};
use mimesis_fleetdb::Db;
use mimesis_hooks::install::{self, HookStatus};
use mimesis_supervise::{Roster, SupervisorConfig};
use mimesis_watch::EngineConfig;
use tokio::sync::{broadcast, watch};

pub use mimesis_fleetdb::{DbHealth, DbStats, FILE_NAME as DATABASE_FILE};
pub use mimesis_supervise::{Attachment, StartError, Supervisor, SupervisorError, metrics, new_session_id, plain};
pub use mimesis_watch::engine::{Follow, IndexPriority};
// The faces reach the watch and hook crates through here only (tests/layers.rs).
pub use mimesis_watch::engine::{IndexProgress, IndexedItem, RootInfo, TimelinePage};
pub use mimesis_watch::{Engine, Envelope, Snapshot};

/// The hook side, which runs inside the faces' binaries (`mimesis hook`): its installer
/// and the client of the approvals socket.
pub mod hooks {
    pub use mimesis_hooks::{approvals, install, record_from_stdin, run_hook};
}

/// How Mimesis should run.
pub struct Options {
    /// The Claude Code config roots to watch.
    pub roots: Vec<PathBuf>,
    /// Mimesis's data dir: the fleet database, the hook spool, the metrics.
    pub data_dir: PathBuf,
    pub clock: Arc<dyn Clock>,
    /// Every session under the roots (the app, `watch`), or only the supervised ones
    /// (`mimesis run`, which needs the roster's view of its own agent and nothing else).
    pub follow: Follow,
    /// At which priority a first index reads every transcript (the app: in the background
    /// of its window's launch).
    pub index_priority: IndexPriority,
    /// Supervised sessions, if this face runs any.
    pub supervise: Option<SuperviseOptions>,
    /// How often the registry and watch coverage are re-checked.
    pub poll_interval: Duration,
}

impl Options {
    /// Every session under `roots`, no supervision, the system clock.
    pub fn watching(roots: Vec<PathBuf>, data_dir: PathBuf) -> Options {
        Options {
            roots,
            data_dir,
            clock: Arc::new(SystemClock),
            follow: Follow::Everything,
            index_priority: IndexPriority::Normal,
            supervise: None,
            poll_interval: Duration::from_secs(2),
        }
    }
}

/// How supervised sessions run.
pub struct SuperviseOptions {
    /// The config root the agents write to (transcripts, shell snapshots).
    pub config_root: PathBuf,
    /// Set `CLAUDE_CONFIG_DIR` to `config_root` for the agents (else they inherit it).
    pub config_root_env: bool,
    /// A program fixed for this run (`--agent`, `$MIMESIS_AGENT`): the stored setting is
    /// then not followed.
    pub agent: Option<AgentCommand>,
    /// Arguments for the agent (`mimesis run -- ARGS`), replacing the stored ones.
    pub agent_args: Option<Vec<String>>,
    /// The environment's limit overrides ([`limits_env_of_process`]).
    pub env: LimitsEnv,
    /// The command line's limit overrides.
    pub flags: LimitFlags,
    /// Limits to use instead of the stored settings' (an embedder's fixed choice, the
    /// tests'); the environment and `flags` still apply on top.
    pub limits: Option<Limits>,
    /// Terminal size of a new session (cols, rows).
    pub size: Option<(u16, u16)>,
    /// Output kept per session for re-attaching.
    pub scrollback_bytes: usize,
    /// Adopt orphaned grandchildren so the orphan scan reaps them.
    pub subreaper: bool,
    /// Kill what earlier, dead Mimesis processes left running, at start.
    pub clean_previous: bool,
}

impl SuperviseOptions {
    pub fn new(config_root: PathBuf) -> SuperviseOptions {
        SuperviseOptions {
            config_root,
            config_root_env: false,
            agent: None,
            agent_args: None,
            env: LimitsEnv::default(),
            flags: LimitFlags::default(),
            limits: None,
            size: None,
            scrollback_bytes: 2 * 1024 * 1024,
            subreaper: true,
            clean_previous: true,
        }
    }
}

/// The limit overrides in this process's environment (the variables of
/// [`limits::ENV_VARS`] that are set).
pub fn limits_env_of_process() -> LimitsEnv {
    LimitsEnv::from_pairs(limits::ENV_VARS.iter().filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v))))
}

/// A running Mimesis: the engine, the supervisor (when this face supervises), the fleet
/// database and the settings in force. Cheap to clone.
#[derive(Clone)]
pub struct Mimesis {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    supervisor: watch::Receiver<Option<Supervisor>>,
    /// The database this process owns (the app, `watch`); `None` for `mimesis run`, which
    /// only reads the stored settings.
    db: Option<Arc<Db>>,
    settings: watch::Sender<Settings>,
    supervise: Option<SupervisionFixed>,
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    clock: Arc<dyn Clock>,
    /// The permission requests this face answers (none while another face does: it takes
    /// over when that one stops).
    approvals: approvals::Approvals,
}

/// How long a quit waits for the engine to store what it has not stored yet ([`Mimesis::shutdown`]).
const ENGINE_STOP_WITHIN: Duration = Duration::from_secs(30);

/// What a face fixed for its supervisor, re-applied to every settings change.
struct SupervisionFixed {
    env: LimitsEnv,
    flags: LimitFlags,
    limits: Option<Limits>,
    agent: Option<AgentCommand>,
    agent_args: Option<Vec<String>>,
}

impl SupervisionFixed {
    fn effective(&self, settings: &Settings) -> Effective {
        let e = limits::effective(self.limits.as_ref().unwrap_or(&settings.limits), &self.env, &self.flags);
        for err in e.env_errors.iter().chain(&e.flag_errors) {
            tracing::warn!(field = %err.field, "{}", err.message);
        }
        e
    }

    fn agent(&self, settings: &Settings) -> AgentCommand {
        let mut agent = self.agent.clone().unwrap_or_else(|| settings.agent.command());
        if let Some(args) = &self.agent_args {
            agent.args = args.clone();
        }
        agent
    }
}

/// Settings whose value in force is not the stored one ([`Mimesis::settings_in_effect`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InEffect {
    pub overrides: Vec<Override>,
    /// Overrides that were given but could not be applied, in words.
    pub not_applied: Vec<String>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Override {
    /// The settings path (`limits.maxDurationSecs`).
    pub field: String,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub value: serde_json::Value,
    /// Where it comes from, in words.
    pub source: String,
}

/// Logs an answer given from Mimesis (the data dir's answers log) and shows it in the
/// session's open timeline.
fn record_answer(data_dir: &Path, engine: &Engine, answered: &mimesis_core::approval::Answered) {
    if let Err(e) = approvals::log_answer(data_dir, answered) {
        tracing::warn!(error = %e, "cannot log an answer for the timeline");
    }
    engine.note_answer(answered);
}

/// The engine's roster, as the supervisor's [`Roster`].
struct EngineRoster(Engine);

impl Roster for EngineRoster {
    fn show(&self, location: TranscriptLocation, supervision: Option<Supervision>) {
        self.0.set_supervision(location, supervision);
    }
}

impl Mimesis {
    /// Starts Mimesis: the one function both faces build it with. Returns once the engine
    /// runs; the supervisor (whose start cleans up after an earlier run, which may wait
    /// for a process to die) starts in the background: [`Mimesis::supervisor`] waits for
    /// it. Must be called within a tokio runtime.
    pub async fn start(opts: Options) -> Mimesis {
        let data_dir = std::path::absolute(&opts.data_dir).unwrap_or(opts.data_dir);
        let db_path = data_dir.join(mimesis_fleetdb::FILE_NAME);
        let now = opts.clock.now();
        // The engine that follows everything owns the database (and rebuilds it when it is
        // unusable); `mimesis run` only reads the stored settings from it.
        let (db, stored) = match opts.follow {
            Follow::Everything => {
                let db = Arc::new(Db::open(&db_path, now));
                let settings = db.settings();
                (Some(db), settings)
            }
            Follow::SupervisedOnly => (None, stored_settings(&db_path)),
        };
        let engine = Engine::start(EngineConfig {
            roots: opts.roots.clone(),
            timeouts: stored.watch.timeouts(),
            status_file_ttl: stored.watch.status_file_ttl(),
            notifications: stored.notifications.clone(),
            clock: opts.clock.clone(),
            poll_interval: opts.poll_interval,
            data_dir: Some(data_dir.clone()),
            archive: db.clone().map(|d| d as Arc<dyn SessionArchive>),
            follow: opts.follow,
            index_priority: opts.index_priority,
            ..Default::default()
        });
        let (settings, _) = watch::channel(stored.clone());
        let (sup_tx, sup_rx) = watch::channel(None);
        let fixed = opts.supervise.as_ref().map(|s| SupervisionFixed {
            env: s.env.clone(),
            flags: s.flags.clone(),
            limits: s.limits.clone(),
            agent: s.agent.clone(),
            agent_args: s.agent_args.clone(),
        });
        let on_answer: approvals::OnAnswer = {
            let (data_dir, engine) = (data_dir.clone(), engine.clone());
            Arc::new(move |a| record_answer(&data_dir, &engine, a))
        };
        // Open requests and the watcher share the face's file descriptors: take all we may.
        mimesis_os::procs::raise_open_files_limit();
        let approvals = approvals::Approvals::serve(&data_dir, opts.clock.clone(), on_answer);
        approvals.set_wait(Duration::from_secs(stored.watch.answer_wait_secs));
        let rows = approvals::follow_roster(&engine, &approvals);
        tokio::spawn(cancel_answered_elsewhere(engine.subscribe(), approvals.clone(), opts.clock.clone()));
        if opts.follow == Follow::Everything {
            // The first index allocates and frees a lot: give the freed memory back once.
            let engine = engine.clone();
            tokio::spawn(async move {
                engine.ready().await;
                mimesis_os::procs::release_free_memory();
            });
        }
        let mimesis = Mimesis {
            inner: Arc::new(Inner {
                engine: engine.clone(),
                supervisor: sup_rx,
                db,
                settings,
                supervise: fixed,
                roots: opts.roots,
                data_dir: data_dir.clone(),
                clock: opts.clock.clone(),
                approvals,
            }),
        };
        answering::start(&mimesis, rows);
        if let Some(s) = opts.supervise {
            let fixed = mimesis.inner.supervise.as_ref().expect("set above");
            let mut config = SupervisorConfig::new(s.config_root.clone(), mimesis_fleetdb::ledger::open(&data_dir));
            config.limits = fixed.effective(&stored).limits;
            config.agent = fixed.agent(&stored);
            config.clock = opts.clock.clone();
            config.roster = Some(Arc::new(EngineRoster(engine.clone())));
            config.metrics_dir = Some(mimesis_supervise::metrics::dir(&data_dir));
            // The agents' mark of this data dir: one name for it, however it was spelled.
            config.data_dir = Some(std::fs::canonicalize(&data_dir).unwrap_or_else(|_| data_dir.clone()));
            config.scrollback_bytes = s.scrollback_bytes;
            config.subreaper = s.subreaper;
            config.clean_previous = s.clean_previous;
            if let Some(size) = s.size {
                config.size = size;
            }
            if s.config_root_env {
                config.config_root_env = Some(s.config_root.clone());
            }
            // Supervised transcripts must be watched to be read.
            let _ = engine.add_root(s.config_root).await;
            let limits_of_background = (opts.follow == Follow::Everything).then(|| mimesis.clone());
            let (budget_face, budget_fleet) = (mimesis.clone(), opts.follow == Follow::Everything);
            tokio::spawn(async move {
                let sup = Supervisor::start(config).await;
                let cleanup = sup.previous_runs();
                if !cleanup.killed.is_empty() {
                    tracing::info!(killed = ?cleanup.killed, "stopped what an earlier run of Mimesis left running");
                }
                tokio::spawn(forward_supervision_events(sup.subscribe(), engine.clone()));
                tokio::spawn(forward_agent_reports(engine.subscribe_agent_reports(), engine, sup.clone()));
                // Budgets (issue 36); the fleet's daily budget where every session is followed.
                tokio::spawn(budgets::run(budget_face, sup.clone(), budget_fleet));
                if let Some(m) = limits_of_background {
                    // The limits on Claude Code's background sessions, when turned on.
                    tokio::spawn(bg_limits::run(m, sup.clone()));
                }
                let _ = sup_tx.send(Some(sup));
                // Keep the sender: the handles' receivers stay valid for the app's lifetime.
                sup_tx.closed().await;
            });
        }
        mimesis
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The permission requests waiting for an answer from Mimesis (issue 12): none while
    /// another face answers them.
    pub fn approvals(&self) -> &approvals::Approvals {
        &self.inner.approvals
    }

    /// Logs an answer given from this face outside the permission socket (a supervised
    /// session's dialog answered in its PTY) and shows it in the session's timeline.
    pub fn record_answer(&self, answered: &mimesis_core::approval::Answered) {
        record_answer(&self.inner.data_dir, &self.inner.engine, answered);
    }

    /// The supervisor, once it has started; `None` when this face supervises nothing.
    pub async fn supervisor(&self) -> Option<Supervisor> {
        self.inner.supervise.as_ref()?;
        let mut rx = self.inner.supervisor.clone();
        let sup = rx.wait_for(Option::is_some).await.ok()?;
        sup.clone()
    }

    /// The supervisor if it has started already.
    pub fn supervisor_now(&self) -> Option<Supervisor> {
        self.inner.supervisor.borrow().clone()
    }

    /// The fleet database this process owns, if it owns it.
    pub fn db(&self) -> Option<&Arc<Db>> {
        self.inner.db.as_ref()
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.inner.roots
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The stored settings in force.
    pub fn settings(&self) -> Settings {
        self.inner.settings.borrow().clone()
    }

    /// The settings, and every later change made by [`Mimesis::settings_set`].
    pub fn subscribe_settings(&self) -> watch::Receiver<Settings> {
        self.inner.settings.subscribe()
    }

    /// The limits in force for supervised sessions and where each comes from (the stored
    /// setting, the environment, a flag); `None` when this face supervises nothing.
    pub fn effective_limits(&self) -> Option<Effective> {
        let fixed = self.inner.supervise.as_ref()?;
        Some(fixed.effective(&self.settings()))
    }

    /// The settings whose value in force is not the stored one, and why (the environment,
    /// the command line), with what could not be applied (docs/ipc.md `settings_in_effect`).
    pub fn settings_in_effect(&self) -> InEffect {
        let mut out = InEffect::default();
        let Some(fixed) = self.inner.supervise.as_ref() else { return out };
        let settings = self.settings();
        let e = fixed.effective(&settings);
        let values = serde_json::to_value(&e.limits).unwrap_or_default();
        for (field, origin) in &e.origins {
            let source = match origin {
                limits::Origin::Environment => format!("the environment ({})", fixed.env.names().join(", ")),
                limits::Origin::Flag => "this run's command line".to_owned(),
                limits::Origin::Settings => continue,
            };
            let value = values.get(field).cloned().unwrap_or_default();
            out.overrides.push(Override { field: format!("limits.{field}"), value, source });
        }
        if let Some(agent) = &fixed.agent
            && agent.program.to_string_lossy() != settings.agent.command
        {
            out.overrides.push(Override {
                field: "agent.command".into(),
                value: serde_json::Value::String(agent.program.to_string_lossy().into_owned()),
                source: "this run's --agent or $MIMESIS_AGENT".into(),
            });
        }
        out.not_applied =
            e.env_errors.iter().chain(&e.flag_errors).map(|e| format!("{}: {}", e.field, e.message)).collect();
        out
    }

    /// The program new supervised sessions run.
    pub fn agent(&self) -> Option<AgentCommand> {
        let fixed = self.inner.supervise.as_ref()?;
        Some(fixed.agent(&self.settings()))
    }

    /// Validates and stores a settings document (docs/ipc.md `settings_set`); nothing is
    /// saved while any field is wrong. Everything follows at once: the engine's timeouts
    /// and notification choices, the supervisor's limits (with the environment's and the
    /// command line's overrides on top) and the agent of new sessions.
    pub async fn settings_set(&self, doc: &serde_json::Value) -> SetOutcome {
        let settings = match Settings::from_json(doc) {
            Err(errors) => return SetOutcome { settings: self.settings(), errors },
            Ok(s) => s,
        };
        if let Some(db) = &self.inner.db
            && let Err(e) = db.save_settings(&settings)
        {
            let errors = vec![FieldError { field: "settings".into(), message: format!("could not be saved: {e}") }];
            return SetOutcome { settings: self.settings(), errors };
        }
        self.apply(&settings).await;
        self.inner.settings.send_replace(settings.clone());
        SetOutcome { settings, errors: Vec::new() }
    }

    /// Fans one settings document out: the one path every change takes.
    async fn apply(&self, settings: &Settings) {
        let w = &settings.watch;
        let _ =
            self.inner.engine.apply_settings(w.timeouts(), w.status_file_ttl(), settings.notifications.clone()).await;
        self.inner.approvals.set_wait(Duration::from_secs(w.answer_wait_secs));
        if let (Some(fixed), Some(sup)) = (&self.inner.supervise, self.supervisor_now()) {
            let limits = fixed.effective(settings).limits;
            if limits != sup.limits() {
                tracing::info!("the limits changed; running sessions use them from now on");
                sup.set_limits(limits);
            }
            sup.set_agent(fixed.agent(settings));
        }
    }

    /// Whether Mimesis's hooks are installed in each root (docs/ipc.md `hooks_status`).
    pub fn hooks_status(&self) -> Vec<HookStatus> {
        self.inner.roots.iter().map(|r| install::status(r)).collect()
    }

    /// Installs the hooks into every root, running `exe hook --data-dir <data dir>`
    /// (`exe` must handle a first argument `hook` with [`mimesis_hooks::run_hook`]). All
    /// or nothing; the error is a sentence for the user.
    pub fn hooks_install(&self, exe: &Path) -> Result<Vec<HookStatus>, install::InstallError> {
        let command = install::hook_command(exe, &self.inner.data_dir);
        install::install_all(&self.inner.roots, &command, self.inner.clock.now())
    }

    /// Removes exactly the hooks Mimesis added, from every root.
    pub fn hooks_uninstall(&self) -> Result<Vec<HookStatus>, install::InstallError> {
        install::uninstall_all(&self.inner.roots, self.inner.clock.now())
    }

    /// `mimesis doctor` for these roots, data dir and database.
    pub async fn doctor(&self) -> doctor::DoctorReport {
        let (roots, data_dir, db) = (self.inner.roots.clone(), self.inner.data_dir.clone(), self.inner.db.clone());
        tokio::task::spawn_blocking(move || doctor::run(&roots, &data_dir, db.as_deref()))
            .await
            .expect("doctor does not panic")
    }

    /// Stops answering permission requests (the socket removed, a waiting face takes over),
    /// then every supervised session (P12), then the engine (what the fleet database has
    /// not stored yet is written first).
    pub async fn shutdown(&self) {
        let clock = &self.inner.clock;
        let t0 = clock.mono();
        self.inner.approvals.close();
        self.stop_supervised().await;
        tracing::info!(elapsed = ?clock.mono().since(t0), "shutdown: no supervised session runs");
        // What the engine has not stored yet is written; a quit does not wait for it forever
        // (the sessions are stopped by now: nothing of ours is left behind by leaving).
        if tokio::time::timeout(ENGINE_STOP_WITHIN, self.inner.engine.shutdown()).await.is_err() {
            tracing::error!("shutdown: the engine did not stop within {ENGINE_STOP_WITHIN:?}; quitting without it");
        } else {
            tracing::info!(elapsed = ?clock.mono().since(t0), "shutdown: the engine stored what it had");
        }
    }

    /// Stops every supervised session as a quit does (P12: recorded as interrupted by the
    /// quit), before the quit itself: the window's "Stop them and quit" says so while they
    /// stop rather than freeze on the way out. [`Mimesis::shutdown`] after it has none to stop.
    pub async fn stop_supervised(&self) {
        if self.inner.supervise.is_none() {
            return;
        }
        // A supervisor still starting may be about to run sessions: wait for it briefly.
        let mut rx = self.inner.supervisor.clone();
        let sup = match tokio::time::timeout(Duration::from_secs(10), rx.wait_for(Option::is_some)).await {
            Ok(Ok(s)) => s.clone(),
            _ => None,
        };
        if let Some(sup) = sup {
            sup.shutdown().await;
        }
    }
}

/// The settings the app stored, or the defaults (no database, or unreadable).
pub(crate) fn stored_settings(path: &Path) -> Settings {
    if !path.exists() {
        return Settings::default();
    }
    match Db::open_read_only(path) {
        Ok(db) => db.settings(),
        Err(e) => {
            tracing::info!(error = %e, "cannot read the stored settings; using the defaults");
            Settings::default()
        }
    }
}

/// Supervision events become attention (the tray's count, notifications), for every face.
/// A session that moves on (working again, or ended) had its dialog answered (in its
/// terminal, or by a rule): its open requests end with no decision, and the hooks return.
async fn cancel_answered_elsewhere(
    mut rx: broadcast::Receiver<Arc<Envelope>>,
    approvals: approvals::Approvals,
    clock: Arc<dyn Clock>,
) {
    let mut sessions: std::collections::HashMap<SessionId, MovedOn> = std::collections::HashMap::new();
    loop {
        match rx.recv().await {
            Ok(env) => match &env.event {
                StoreEvent::Updated { session_id, changes } => {
                    let s = sessions.entry(session_id.clone()).or_default();
                    if let Some(before) = s.update(changes.status, changes.last_activity_at, clock.now()) {
                        tracing::debug!(session = %session_id, status = ?changes.status, last_activity = ?changes.last_activity_at, "moved on: its requests asked before {before:?} end");
                        approvals.cancel_session(session_id, before);
                    }
                }
                StoreEvent::Discovered { session } => {
                    let mut s = MovedOn::default();
                    s.update(Some(session.status), Some(session.last_activity_at), clock.now());
                    sessions.insert(session.session_id.clone(), s);
                }
                StoreEvent::Removed { session_id } => {
                    sessions.remove(session_id);
                }
            },
            // (A missed change only leaves a request open until its hook gives up.)
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Whether a session moved on from its dialog, and by a record written when: its requests
/// asked before that record, and before the move was seen here, end (it was answered
/// elsewhere); one asked after either stays.
///
/// "Moved on" is a status of working or idle (working again, or ended) since the session
/// last waited for an approval — not "waiting for input": a question (AskUserQuestion)
/// reads as that while its request waits here. The record behind it is the latest activity
/// known, which the store may tell before or after the status: the record that ended one
/// dialog can be read after the next one was asked (a denial, then at once the next call),
/// and is older than that request. And the store may read the records that open a dialog
/// (2.1.330 writes the turn's records when its dialog shows) before it reads that the
/// session waits: they are newer than the request, but the "working" before them was seen
/// before the request was asked, so it did not answer it. (A dialog answered in the
/// terminal also ends its hook in newer versions, which takes the request with it.)
#[derive(Default)]
struct MovedOn {
    /// When (by the face's clock) the session was first seen moved on, since it last waited.
    seen: Option<Timestamp>,
    last_activity: Option<Timestamp>,
}

impl MovedOn {
    /// Takes a change in, seen at `now`; the time before which requests end, if any.
    fn update(
        &mut self,
        status: Option<Status>,
        last_activity: Option<Timestamp>,
        now: Timestamp,
    ) -> Option<Timestamp> {
        match status {
            Some(Status::Working | Status::Idle) => {
                self.seen.get_or_insert(now);
            }
            Some(Status::WaitingForApproval) => self.seen = None,
            _ => {}
        }
        if last_activity.is_some() {
            self.last_activity = last_activity;
        }
        let told = status.is_some_and(|s| matches!(s, Status::Working | Status::Idle)) || last_activity.is_some();
        match (told, self.seen, self.last_activity) {
            (true, Some(seen), Some(record)) => Some(seen.min(record)),
            _ => None,
        }
    }
}

async fn forward_supervision_events(mut rx: broadcast::Receiver<Arc<SupervisionEvent>>, engine: Engine) {
    loop {
        match rx.recv().await {
            Ok(ev) => {
                if let Some(s) = SupervisionSignal::from_event(&ev) {
                    engine.supervision_signal(&ev.session_id, s);
                }
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "supervision events fell behind; attention may miss a crash flag");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// What each supervised session's own records say (its live registry entry, hooks, the
/// transcript) goes to the supervisor, which reads the agent through them before its
/// screen. A forwarder that fell behind takes every report anew instead of going on with
/// a hole (a missed "turn done" would leave a session unrecovered).
async fn forward_agent_reports(
    mut rx: broadcast::Receiver<Arc<(SessionId, AgentReport)>>,
    engine: Engine,
    sup: Supervisor,
) {
    loop {
        match rx.recv().await {
            Ok(report) => sup.agent_report(&report.0, report.1.clone()),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "agent reports fell behind; taking them anew for the supervisor");
                let Ok(reports) = engine.agent_reports().await else { return };
                for (id, report) in reports {
                    sup.agent_report(&id, report);
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Option<Timestamp> {
        Some(Timestamp::from_millis(ms))
    }

    /// Traces of the store's changes as the real CLIs gave them, each with when it was
    /// read; the request was asked at 1,000 ms.
    #[test]
    fn a_request_ends_when_its_session_moved_on_by_a_record_written_after_it_was_asked() {
        let now = |ms| Timestamp::from_millis(ms);
        let ends = |r: Option<Timestamp>| r.is_some_and(|t| t > Timestamp::from_millis(1_000));
        // 2.1.197, answered in the terminal: working (from the registry) and waiting for
        // input come before the records; the record after the answer ends the request.
        let mut s = MovedOn::default();
        assert_eq!(s.update(Some(Status::WaitingForApproval), None, now(995)), None);
        assert_eq!(s.update(None, at(990), now(996)), None, "the tool call itself");
        assert!(!ends(s.update(Some(Status::Working), None, now(1_500))));
        assert_eq!(s.update(Some(Status::WaitingForInput), None, now(1_600)), None);
        assert_eq!(
            s.update(None, at(1_900), now(1_910)),
            at(1_500),
            "the answer's records end requests asked before them"
        );

        // 2.1.330, a plan denied from Mimesis and asked again at once: the denial's record
        // (older than the new request) is read after the new request was asked.
        let mut s = MovedOn::default();
        s.update(Some(Status::WaitingForApproval), at(900), now(905));
        assert_eq!(
            s.update(Some(Status::Working), None, now(1_010)),
            at(900),
            "the old activity: only older requests end"
        );
        assert_eq!(s.update(None, at(950), now(1_020)), at(950));
        assert_eq!(s.update(Some(Status::WaitingForApproval), None, now(1_030)), None);
        assert_eq!(s.update(None, at(990), now(1_040)), None, "the new call, waiting: nothing ends");

        // 2.1.330, a Bash call asked while busy: the turn's records (written as the dialog
        // shows, newer than the request) are read before "waiting" is; the "working" seen
        // before the request was asked did not answer it.
        let mut s = MovedOn::default();
        s.update(Some(Status::WaitingForInput), at(100), now(110));
        assert!(!ends(s.update(Some(Status::Working), at(800), now(820))), "the prompt");
        assert!(!ends(s.update(None, at(1_021), now(1_025))), "the dialog's own records do not end it");
        assert_eq!(s.update(Some(Status::WaitingForApproval), None, now(1_030)), None);
        // Then answered in the terminal: it moves on, seen after the request was asked.
        assert!(ends(s.update(Some(Status::Working), None, now(1_400))));
    }
}
