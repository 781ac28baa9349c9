//! The recorder (cargo feature `record`, never in a normal build): with `MIMESIS_RECORD=<file>`
//! set, everything the page sent and received crosses into that file as JSON Lines — each
//! command it invoked (name, args, reply or error) and each event it was given (name,
//! payload), with the time in milliseconds since the page loaded. The UI's tests replay these
//! files (ui/src/lib/replay.ts) instead of a hand-written imitation of the engine;
//! `scripts/record-ui` makes them.
//!
//! The page does the noting (ui/src/lib/record.ts, switched on by the script this module puts
//! in the page) and sends it here in batches through `record_write`: Tauri offers no place
//! on the Rust side where every command's reply can be seen, and the page is the one place
//! that sees replies and events in the order the UI met them, which is the order a replay
//! must keep. `record_write` is granted to the window at run time, and only while
//! recording: the permanent capabilities do not name it.
//!
//! It must never change what the app does: a write that fails is logged and dropped.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use tauri::ipc::CapabilityBuilder;
use tauri::plugin::{Builder, TauriPlugin};
use tauri::{Manager, Wry};

/// What the home folder reads as in a recording (an absolute path, like the real one).
const HOME: &str = "/home/user";

/// Where the recording goes, and the home folder to take out of it.
struct Recorder {
    file: Mutex<std::fs::File>,
    home: Option<String>,
}

/// The app with the recorder in it when `MIMESIS_RECORD` names a file; otherwise as it was.
pub fn install(app: tauri::Builder<Wry>) -> tauri::Builder<Wry> {
    match plugin() {
        Some(p) => app.plugin(p),
        None => app,
    }
}

fn plugin() -> Option<TauriPlugin<Wry>> {
    let path = PathBuf::from(std::env::var_os("MIMESIS_RECORD")?);
    // Created 0600: it holds what the page showed (a path the user named keeps its mode).
    let file = match mimesis_os::private::options().create(true).append(true).open(&path) {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(error = %e, file = %path.display(), "MIMESIS_RECORD: cannot open the file; not recording");
            return None;
        }
    };
    tracing::warn!(file = %path.display(), "recording the page's commands and events");
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1).map(|h| h.trim_end_matches('/').to_owned());
    let recorder = Recorder { file: Mutex::new(file), home };
    Some(
        Builder::new("mimesis-record")
            .js_init_script("window.__MIMESIS_RECORD__ = true;".to_owned())
            .setup(move |app, _| {
                app.manage(recorder);
                app.add_capability(
                    CapabilityBuilder::new("record").window(crate::window::MAIN).permission("allow-record-write"),
                )?;
                Ok(())
            })
            .build(),
    )
}

/// Appends the page's notes (one JSON value each) to the recording, the home folder as [`HOME`].
#[tauri::command]
pub fn record_write(app: tauri::AppHandle, entries: Vec<serde_json::Value>) -> Result<(), String> {
    let Some(rec) = app.try_state::<Recorder>() else { return Err("not recording".to_owned()) };
    let mut text = String::new();
    for e in &entries {
        let mut line = e.to_string();
        if let Some(home) = &rec.home {
            line = line.replace(home.as_str(), HOME);
        }
        text.push_str(&line);
        text.push('\n');
    }
    let mut f = rec.file.lock().map_err(|_| "the recording is poisoned".to_owned())?;
    if let Err(e) = f.write_all(text.as_bytes()) {
        tracing::warn!(error = %e, "cannot append to the recording");
    }
    Ok(())
}
