//! The main window: shown and focused on demand (tray, notification, second launch),
//! hidden instead of closed while a tray can bring it back, and its size and place kept
//! across runs (SPEC U6) in `<data dir>/window.json`.
//!
//! The place is kept in Mimesis's data dir rather than the toolkit's config dir so that a
//! run on another data dir (tests, a second profile) neither reads nor overwrites it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use mimesis_core::SessionId;
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Emitter, Manager, PhysicalPosition, PhysicalSize, Runtime, Window, WindowEvent};

/// The label of the one window (tauri.conf.json).
pub const MAIN: &str = "main";

/// Whether the main window is shown and has the keyboard focus.
pub fn focused<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(MAIN).is_some_and(|w| w.is_visible().unwrap_or(false) && w.is_focused().unwrap_or(false))
}
/// The file the window's place is kept in, in the data dir.
const PLACE_FILE: &str = "window.json";
/// Moves and resizes come in bursts; the place is written this long after the last one.
const SAVE_DELAY: Duration = Duration::from_millis(500);
/// A stored size outside these bounds is not restored (a corrupt or hostile file).
const MIN_SIDE: u32 = 200;
const MAX_SIDE: u32 = 16_384;

/// Shows the main window, un-minimised and focused.
pub fn show_main<R: Runtime>(app: &AppHandle<R>) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// Shows the window and asks the UI to open `id` (docs/ipc.md `app:open-session`).
pub fn open_session<R: Runtime>(app: &AppHandle<R>, id: &SessionId) {
    open_key(app, id.as_str());
}

/// `app:open-session`: the page shows this session.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenSession<'a> {
    session_id: &'a str,
}

/// Shows the window on a session by its window key (an id, or `host:id` for another machine's).
pub fn open_key<R: Runtime>(app: &AppHandle<R>, id: &str) {
    show_main(app);
    if let Err(e) = app.emit("app:open-session", OpenSession { session_id: id }) {
        tracing::warn!(error = %e, "cannot ask the window to open a session");
    }
}

/// The window's size and place, in physical pixels.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    width: u32,
    height: u32,
    x: i32,
    y: i32,
    #[serde(default)]
    maximized: bool,
}

/// The last known place and whether a write is already scheduled.
pub struct Placement {
    path: PathBuf,
    state: Mutex<PlacementState>,
}

#[derive(Default)]
struct PlacementState {
    place: Option<Place>,
    save_pending: bool,
}

impl Placement {
    pub fn new(data_dir: &Path) -> Self {
        Placement { path: data_dir.join(PLACE_FILE), state: Mutex::new(PlacementState::default()) }
    }

    fn load(&self) -> Option<Place> {
        let bytes = mimesis_os::files::read_bounded(&self.path, 64 * 1024).ok()?;
        match mimesis_core::json::from_slice::<Place>(&bytes) {
            Ok(p) if (MIN_SIDE..=MAX_SIDE).contains(&p.width) && (MIN_SIDE..=MAX_SIDE).contains(&p.height) => Some(p),
            Ok(p) => {
                tracing::warn!(?p, path = %self.path.display(), "ignoring a stored window size out of bounds");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, path = %self.path.display(), "ignoring an unreadable window place");
                None
            }
        }
    }

    /// Writes the last known place (atomically: a crash mid-write leaves the old file).
    fn save(&self) {
        let Some(place) = self.state.lock().ok().and_then(|s| s.place) else { return };
        let write = serde_json::to_vec_pretty(&place)
            .map_err(std::io::Error::other)
            .and_then(|bytes| mimesis_os::private::write_atomic(&self.path, &bytes));
        if let Err(e) = write {
            tracing::warn!(error = %e, path = %self.path.display(), "cannot keep the window's place");
        }
    }
}

/// Restores the stored place onto the (still hidden) main window, then shows it (unless
/// the app starts hidden in the tray: `--hidden`).
pub fn restore<R: Runtime>(app: &AppHandle<R>, show: bool) {
    let Some(w) = app.get_webview_window(MAIN) else { return };
    let placement = app.state::<Placement>();
    if let Some(p) = placement.load() {
        let _ = w.set_size(PhysicalSize::new(p.width, p.height));
        // Only onto a monitor that is still there; else the window manager places it.
        let on_screen = w.available_monitors().unwrap_or_default().iter().any(|m| {
            let (mp, ms) = (m.position(), m.size());
            p.x < mp.x + ms.width as i32
                && p.x + p.width as i32 > mp.x
                && p.y < mp.y + ms.height as i32
                && p.y + p.height as i32 > mp.y
        });
        if on_screen {
            let _ = w.set_position(PhysicalPosition::new(p.x, p.y));
        }
        if p.maximized {
            let _ = w.maximize();
        }
        if let Ok(mut s) = placement.state.lock() {
            s.place = Some(p);
        }
    }
    if show {
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// Notes the main window's place now; writes it soon (bursts of moves write once).
fn note_place<R: Runtime>(window: &Window<R>) {
    let maximized = window.is_maximized().unwrap_or(false);
    let minimized = window.is_minimized().unwrap_or(false);
    if minimized {
        return;
    }
    let placement = window.state::<Placement>();
    let schedule = {
        let Ok(mut s) = placement.state.lock() else { return };
        match (maximized, s.place.as_mut()) {
            // A maximised window keeps the size and place it returns to.
            (true, Some(p)) => p.maximized = true,
            (true, None) => {}
            (false, _) => {
                let (Ok(size), Ok(pos)) = (window.inner_size(), window.outer_position()) else { return };
                if size.width == 0 || size.height == 0 {
                    return;
                }
                s.place = Some(Place { width: size.width, height: size.height, x: pos.x, y: pos.y, maximized: false });
            }
        }
        !std::mem::replace(&mut s.save_pending, true)
    };
    if schedule {
        let app = window.app_handle().clone();
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(SAVE_DELAY).await;
            let placement = app.state::<Placement>();
            if let Ok(mut s) = placement.state.lock() {
                s.save_pending = false;
            }
            placement.save();
        });
    }
}

/// Writes the place now (on quit).
pub fn save_now<R: Runtime>(app: &AppHandle<R>) {
    if let Some(p) = app.try_state::<Placement>() {
        p.save();
    }
}

/// Window events of the main window: keep its place; closing hides it while a tray can
/// bring it back, else the window stays and `true` says the user asked to quit (the
/// caller asks first while supervised sessions run: `quit::request`).
pub fn on_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) -> bool {
    if window.label() != MAIN {
        return false;
    }
    match event {
        WindowEvent::Moved(_) | WindowEvent::Resized(_) => note_place(window),
        WindowEvent::CloseRequested { api, .. } => {
            note_place(window);
            save_now(window.app_handle());
            if crate::tray_host::host_present() {
                api.prevent_close();
                let _ = window.hide();
            } else {
                // Nothing could show a hidden window again: closing the last window quits,
                // as usual, asking first while supervised sessions run.
                tracing::info!("no tray host on this desktop: closing the window quits");
                api.prevent_close();
                return true;
            }
        }
        _ => {}
    }
    false
}
