//! The Mimesis desktop app: a thin Tauri shell over the engine.
//!
//! It only wires things together:
//! - [`commands`]: the UI's commands (docs/ipc.md) as engine calls;
//! - [`events`]: engine streams as Tauri events (store, timelines, attention);
//! - [`tray`]: the tray icon with the sessions that need the user ([`tray_host`]: is there a
//!   tray on this desktop at all);
//! - [`notify`]: the engine's notification decisions as desktop notifications;
//! - [`pty`]: supervised PTY sessions (the engine's supervisor), their terminals and events;
//! - [`remote`]: other machines' sessions over SSH (issue 13), beside the local ones
//!   ([`hosts`]: their state, for the other modules);
//! - [`window`]: show/focus, close-to-tray, size and place kept across runs;
//! - [`autostart`]: "Start at login" (an XDG autostart entry) and `--hidden`, its launch;
//! - [`toolkit`]: what GTK and WebKit are told through the environment before they start;
//! - `record` (cargo feature `record` only): notes the page's commands and events for the
//!   UI's replay tests.
//!
//! `mimesis-desktop hook …` is Claude Code's hook command when no `mimesis` CLI sits next
//! to the app: it is handled before anything else, with no toolkit loaded, and always exits 0.
//! One instance runs per data dir; a second launch shows the first one's window and exits.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[cfg(test)]
mod acl;
mod autostart;
mod background;
mod bg_terminals;
mod commands;
mod events;
mod fonts;
mod hosts;
#[cfg(test)]
mod ipc_types;
mod notify;
mod pty;
mod quit;
#[cfg(feature = "record")]
mod record;
mod remote;
mod remote_pty;
mod search;
mod toolkit;
mod tray;
mod tray_host;
mod window;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mimesis_os::roots;
use mimesis_wiring::{IndexPriority, Mimesis, Options, SuperviseOptions, limits_env_of_process};
use tauri::Manager;

use crate::commands::AppState;

/// `--config-dir DIR` (repeatable), as in the CLI.
fn config_dirs_from_args() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--config-dir" {
            if let Some(d) = args.next() {
                dirs.push(PathBuf::from(d));
            }
        } else if let Some(d) = a.strip_prefix("--config-dir=") {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs
}

/// The single-instance name for a data dir: two runs on one fleet database are one app;
/// runs on different data dirs (tests, another profile) do not disturb each other.
fn instance_id(data_dir: &Path) -> String {
    // FNV-1a: stable across builds, unlike the standard hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data_dir.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("dev.mimesis.desktop.d{h:016x}")
}

/// SIGTERM, SIGINT and SIGHUP, listened for from the first moment of setup: one that
/// comes while Mimesis starts is kept and acted on once it has started.
type QuitSignals = (tokio::signal::unix::Signal, tokio::signal::unix::Signal, tokio::signal::unix::Signal);

fn listen_for_quit() -> Option<QuitSignals> {
    use tokio::signal::unix::{SignalKind, signal};
    let _guard = tauri::async_runtime::handle().inner().enter();
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup())) {
        (Ok(t), Ok(i), Ok(h)) => Some((t, i, h)),
        _ => {
            tracing::warn!("cannot listen for termination signals");
            None
        }
    }
}

/// The signals quit like the tray's Quit: the engine stores what it has not stored yet,
/// and the window's place is kept.
fn quit_on_signals(app: tauri::AppHandle, signals: Option<QuitSignals>) {
    let Some((mut term, mut int, mut hup)) = signals else { return };
    tauri::async_runtime::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        app.exit(0);
    });
}

/// When `main` began: the launch's milestones in the log (debug) count from here.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

pub(crate) fn since_start() -> std::time::Duration {
    STARTED.get().map(|t| t.elapsed()).unwrap_or_default()
}

/// The engine, started before the window ([`EngineStart::Early`], the data dir's lock held)
/// or to start in `setup`: the lock could not be taken ([`EngineStart::Later`]: an error), or
/// another desktop app holds it ([`EngineStart::Busy`]).
enum EngineStart {
    Early(tauri::async_runtime::JoinHandle<Mimesis>, std::fs::File),
    Later(Box<Options>),
    Busy(Box<Options>),
}

/// The data dir's lock, kept for the app's life (`mimesis_os::instance`).
struct InstanceLock(#[allow(dead_code)] std::fs::File);

/// What the engine watches and supervises: every config root, and supervised sessions in the first.
fn engine_options(
    roots: Vec<PathBuf>,
    data_dir: PathBuf,
    config_root: Option<PathBuf>,
    config_dirs: &[PathBuf],
) -> Options {
    let mut opts = Options::watching(roots, data_dir);
    // The window's page goes first on a first launch; the full read fills the time it leaves.
    opts.index_priority = IndexPriority::Background;
    match config_root {
        Some(root) => {
            let mut s = SuperviseOptions::new(root);
            s.config_root_env = !config_dirs.is_empty();
            s.agent = pty::agent_override();
            s.env = limits_env_of_process();
            s.scrollback_bytes = pty::SCROLLBACK;
            opts.supervise = Some(s);
        }
        None => {
            tracing::warn!("no Claude Code config folder (HOME and CLAUDE_CONFIG_DIR unset): no supervised sessions")
        }
    }
    opts
}

fn main() {
    STARTED.get_or_init(std::time::Instant::now);
    // Claude Code runs this for every hook event: fast, silent, never failing.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "hook") {
        mimesis_wiring::hooks::run_hook(&args[2..]);
        std::process::exit(0);
    }

    let webkit_trim = toolkit::prepare();
    // Two arenas serve the app's few busy threads (glibc's default, 8 per core, kept about
    // 8 MB more of freed memory in a window showing 2,000 sessions: the window benchmark),
    // and big blocks are mapped apart from the heap whatever was freed before (2–5 MB less).
    mimesis_os::procs::tune_malloc(2, 128 * 1024);

    let filter = tracing_subscriber::EnvFilter::try_from_env("MIMESIS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour only for a person at a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();
    match &webkit_trim {
        Some(lib) => tracing::debug!(lib = %lib.display(), "WebKit's processes preload the trim library"),
        None => tracing::debug!("no trim library beside the app: WebKit's processes keep their launch's pages"),
    }

    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        eprintln!(
            "mimesis-desktop: there is no display (DISPLAY and WAYLAND_DISPLAY are unset).\n\
             In a terminal, `mimesis ls` shows the roster and `mimesis watch` follows it live."
        );
        std::process::exit(1);
    }

    let config_dirs = config_dirs_from_args();
    let roots = roots::from_env(&config_dirs);
    // Supervised sessions write their transcripts to the first root.
    let config_root = roots.first().cloned();
    let data_dir = roots::data_dir();
    let data_dir = std::path::absolute(&data_dir).unwrap_or(data_dir);
    if let Err(e) = mimesis_os::private::create_dir_all(&data_dir) {
        tracing::error!(error = %e, dir = %data_dir.display(), "cannot create the data dir; nothing will be kept");
    }
    // Before the window: the page has its fonts' names before its first layout (`fonts`).
    let (ui_font, mono_font) = fonts::system_families();
    tracing::debug!(?ui_font, ?mono_font, at = ?since_start(), "the system's fonts");
    let early_script =
        format!("{}\n{}", fonts::init_script(ui_font.as_deref(), mono_font.as_deref()), commands::EARLY_ROSTER);
    let demo_root = data_dir.join("demo");
    // Before the engine: a quit asked for from now on is a clean quit (`quit_on_signals`).
    let signals = listen_for_quit();
    // The engine starts now, beside the toolkit's own start (until the window exists the app
    // has one busy thread, and its warm start would otherwise share the cores with WebKit's
    // processes loading the page), when no other desktop app holds this data directory.
    // Else it starts in `setup`, after the single-instance check handed over to that one.
    let opts = engine_options(roots, data_dir.clone(), config_root, &config_dirs);
    let engine = match mimesis_os::instance::try_lock(&data_dir) {
        Ok(Some(lock)) => EngineStart::Early(
            tauri::async_runtime::spawn(async move {
                let t0 = std::time::Instant::now();
                let mimesis = Mimesis::start(opts).await;
                tracing::debug!(at = ?since_start(), took = ?t0.elapsed(), "the engine started");
                mimesis
            }),
            lock,
        ),
        Ok(None) => EngineStart::Busy(Box::new(opts)),
        Err(e) => {
            tracing::warn!(error = %e, dir = %data_dir.display(), "cannot lock the data dir; the engine starts with the window");
            EngineStart::Later(Box::new(opts))
        }
    };
    let setup_data_dir = data_dir.clone();
    let app = tauri::Builder::default()
        // First: a second instance must leave before anything else starts.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(instance_id(&data_dir))
                // A second launch shows the window, unless it is the autostart's.
                .callback(|app, argv, _cwd| {
                    if !argv.iter().any(|a| a == mimesis_os::autostart::HIDDEN_ARG) {
                        window::show_main(app)
                    }
                })
                .build(),
        );
    #[cfg(feature = "record")]
    let app = record::install(app);
    let result = app
        // At document start the page learns the system's font families, and asks for its
        // roster (see `fonts` and `commands::EARLY_ROSTER`).
        .plugin(tauri::plugin::Builder::<_, ()>::new("mimesis-early").js_init_script(early_script).build())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .manage(window::Placement::new(&data_dir))
        .manage(search::SearchState::default())
        .setup(move |app| {
            let handle = app.handle().clone();
            let hidden = autostart::start_hidden();
            window::restore(&handle, !hidden);
            let t0 = std::time::Instant::now();
            tracing::debug!(at = ?since_start(), "setting up");
            let (mimesis, lock) = match engine {
                EngineStart::Early(started, lock) => (tauri::async_runtime::block_on(started)?, Some(lock)),
                EngineStart::Later(opts) => (tauri::async_runtime::block_on(Mimesis::start(*opts)), None),
                EngineStart::Busy(opts) => {
                    // The single-instance check let this one through (no session bus to hand
                    // over on), yet another desktop app holds the data dir. It may be leaving
                    // (it handed over to this one); if not, two engines must not share it.
                    let within = std::time::Duration::from_secs(2);
                    let lock = match mimesis_os::instance::lock_within(&setup_data_dir, within) {
                        Ok(Some(lock)) => Some(lock),
                        Ok(None) => {
                            eprintln!(
                                "mimesis-desktop: Mimesis is already running on {} (its window is the one to use; \
                                 without a session bus a second launch cannot bring it forward).\n\
                                 Another data directory (MIMESIS_DATA_DIR) runs another Mimesis.",
                                setup_data_dir.display()
                            );
                            std::process::exit(1);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot lock the data dir; starting anyway");
                            None
                        }
                    };
                    (tauri::async_runtime::block_on(Mimesis::start(*opts)), lock)
                }
            };
            if let Some(lock) = lock {
                app.manage(InstanceLock(lock));
            }
            tracing::debug!(took = ?t0.elapsed(), "the engine is there");
            let engine = mimesis.engine().clone();
            if tracing::enabled!(tracing::Level::DEBUG) {
                let engine = engine.clone();
                tauri::async_runtime::spawn(async move {
                    engine.first_roster().await;
                    tracing::debug!(at = ?since_start(), "a first roster");
                    engine.ready().await;
                    tracing::debug!(at = ?since_start(), "the first index is done");
                });
            }
            // The attention set's one sender, before anything asks it to send.
            let attention = events::AttentionSender::default();
            app.manage(attention.clone());
            // Other machines first: the tray and the attention set count their sessions too.
            app.manage(remote::start(&handle, &mimesis));
            tauri::async_runtime::spawn(events::forward_timeline(handle.clone(), engine.clone()));
            tauri::async_runtime::spawn(events::forward_attention(handle.clone(), engine.clone(), attention));
            tauri::async_runtime::spawn(events::forward_progress(handle.clone(), engine.clone()));
            tauri::async_runtime::spawn(search::keep_current(handle.clone(), mimesis.clone()));
            tauri::async_runtime::spawn(events::forward_approvals(handle.clone(), mimesis.approvals().subscribe()));
            notify::init(&handle);
            tauri::async_runtime::spawn(notify::follow(handle.clone(), engine.clone(), mimesis.clone()));
            match tray::create(&handle) {
                Ok(()) => {
                    let requests = Some(mimesis.approvals().subscribe());
                    tauri::async_runtime::spawn(tray::follow(handle.clone(), engine.clone(), requests));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no tray icon");
                    if hidden {
                        window::show_main(&handle);
                    }
                }
            }
            pty::start(&handle, &mimesis);
            quit_on_signals(handle, signals);
            tracing::debug!(took = ?t0.elapsed(), "set up");
            app.manage(AppState {
                mimesis,
                viewing: Mutex::new(None),
                demo: Mutex::new(None),
                demo_root,
                store_forwarder: Mutex::new(None),
                store_held: Mutex::new(None),
                early_roster: commands::Early::default(),
            });
            tauri::async_runtime::spawn(commands::prepare_roster(app.handle().clone()));
            Ok(())
        })
        .on_window_event(|w, e| {
            if window::on_event(w, e) {
                quit::request(w.app_handle());
            }
        })
        // A reloaded page has no terminals: their output goes nowhere.
        .on_page_load(|webview, payload| {
            tracing::debug!(at = ?since_start(), event = ?payload.event(), "the page");
            if payload.event() == tauri::webview::PageLoadEvent::Started
                && let Some(state) = webview.try_state::<pty::PtyState>()
            {
                state.detach_all();
            }
            // A page that loaded without asking for the launch's roster never will.
            if payload.event() == tauri::webview::PageLoadEvent::Finished
                && let Some(state) = webview.try_state::<AppState>()
            {
                drop(state.early_roster.take());
            }
        })
        .invoke_handler(tauri::generate_handler![
            commands::roster_snapshot,
            commands::roster_snapshot_held,
            commands::roster_listening,
            commands::open_timeline,
            commands::timeline_range,
            commands::timeline_item,
            commands::close_timeline,
            commands::start_demo,
            commands::stop_demo,
            commands::hooks_status,
            commands::hooks_install,
            commands::hooks_uninstall,
            commands::doctor,
            commands::settings_get,
            commands::settings_set,
            commands::approvals_pending,
            commands::approval_decide,
            commands::focus_terminal,
            commands::set_viewing,
            commands::settings_in_effect,
            pty::folder_check,
            pty::pick_folder,
            pty::gpu_available,
            pty::pty_answer,
            pty::pty_dialog,
            pty::pty_create,
            pty::pty_attach,
            pty::pty_detach,
            pty::pty_ack,
            pty::pty_input,
            pty::pty_resize,
            pty::pty_stop,
            pty::pty_resume,
            pty::pty_raise_budget,
            pty::pty_restart,
            pty::pty_delete,
            pty::resources,
            background::bg_create,
            background::bg_attach,
            background::bg_detach,
            background::bg_stop,
            background::bg_respawn,
            background::bg_remove,
            remote::hosts_list,
            remote::host_retry,
            remote::host_install,
            remote::host_add,
            remote::host_remove,
            commands::open_link,
            quit::app_quit,
            quit::sessions_interrupted,
            quit::interrupted_dismiss,
            commands::spend_view,
            search::search_history,
            search::search_host,
            search::search_progress,
            search::roster_shown,
            search::timeline_find,
            #[cfg(feature = "record")]
            record::record_write,
        ])
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(e) => {
            eprintln!("mimesis-desktop: cannot start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            window::save_now(handle);
            if let Some(state) = handle.try_state::<pty::PtyState>() {
                state.detach_all();
                state.remote.close_all();
                state.background.detach_all();
            }
            if let Some(state) = handle.try_state::<AppState>() {
                if let Ok(mut d) = state.demo.lock() {
                    d.take();
                }
                // P12: every supervised process stops before Mimesis does; then the engine
                // stores what it has not stored yet.
                tauri::async_runtime::block_on(state.mimesis.shutdown());
            }
        }
    });
}
