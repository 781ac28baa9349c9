//! The window's attached terminals of Claude Code's background sessions (src-tauri/src/
//! background.rs opens and closes them; the pty_* commands of src-tauri/src/pty.rs reach
//! them by the row's key). Apart from both, so neither module needs the other's state.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use mimesis_wiring::plain::PlainTerminal;

/// The window's attached terminals of background sessions, by row key.
pub struct BgTerminals {
    terms: Mutex<HashMap<String, PlainTerminal>>,
    pub(crate) scrollback: usize,
}

impl BgTerminals {
    pub fn new(scrollback: usize) -> BgTerminals {
        BgTerminals { terms: Mutex::default(), scrollback }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PlainTerminal>> {
        self.terms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The attached terminal of `key`, if the window opened one.
    pub fn get(&self, key: &str) -> Option<PlainTerminal> {
        self.lock().get(key).cloned()
    }

    /// Detaches every terminal (the app is quitting): Ctrl+Z to each, then closed.
    pub fn detach_all(&self) {
        let all: Vec<PlainTerminal> = self.lock().drain().map(|(_, t)| t).collect();
        for t in &all {
            let _ = t.write(b"\x1a");
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline && all.iter().any(|t| t.exit_code().is_none()) {
            std::thread::sleep(Duration::from_millis(20));
        }
        for t in all {
            t.close();
        }
    }
}
