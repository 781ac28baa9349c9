//! A shared library the desktop app puts in `LD_PRELOAD` for WebKit's web and network
//! processes (src-tauri/src/toolkit.rs), to do in them what the app does to itself once its
//! launch is over (`release_when_sent` in src-tauri/src/commands.rs): give the allocator's
//! free heap back (`malloc_trim`) and drop the pages of clean read-only file mappings
//! (`mimesis_os::procs::trim_clean_file_pages`). Those are the code and constants of WebKit,
//! JavaScriptCore, Mesa's LLVM and the rest that only the launch ran: clean copies of their
//! files that these processes alone hold, which the kernel may take back at any time and
//! which come back from the page cache at their next touch. With 2,000 sessions after 60 s
//! idle, the window's memory goes from 235 to 126 MB (README, "Benchmark"). The app cannot drop them from outside: `process_madvise` needs
//! `CAP_SYS_NICE`.
//!
//! Its constructor does nothing in any other program (every program the app starts without
//! restoring the user's environment loads it). In those two it starts the trim's thread
//! (`mimesis_os::trim`, the app runs one too), which sleeps ([`DEFAULT_AFTER`] after the
//! process's start, or `$MIMESIS_WEBKIT_TRIM_AFTER_MS`) and trims. Use brings pages back (a
//! session that starts waiting for approval took the window from 147 to 211 MB, 60 s idle
//! after it), so the thread then looks once a period (a minute, or
//! `$MIMESIS_WEBKIT_TRIM_EVERY_MS`) at the process's CPU time and its pages of files, and
//! trims again when the process has been used since its last trim and has been quiet for that
//! period (`mimesis_core::trim::Retrim`): once per spell of use, never while in use, further
//! apart each time the pages come straight back, never for what comes back in the quiet
//! period right after a trim (a relative time redrawn each minute: the resting work's own),
//! and a process that stays idle is not trimmed again. Anything that fails leaves the process
//! as it was.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use mimesis_os::trim;

/// When the trim runs after the process's start: the window's launch, a first one with
/// 2,000 sessions included, is over by then (its complete roster at 1–2 s here), and the
/// page is idle.
pub const DEFAULT_AFTER: Duration = Duration::from_secs(12);

/// The variable that sets that delay, in milliseconds (tests shorten it).
pub const AFTER_VAR: &str = "MIMESIS_WEBKIT_TRIM_AFTER_MS";

/// Whether a process running `exe` (its `/proc/self/exe`) is one of WebKit's that trims.
fn trims(exe: &Path) -> bool {
    exe.file_name().is_some_and(|name| name == "WebKitWebProcess" || name == "WebKitNetworkProcess")
}

/// The delay `$MIMESIS_WEBKIT_TRIM_AFTER_MS` asks for, else [`DEFAULT_AFTER`].
fn after(value: Option<&OsStr>) -> Duration {
    trim::millis(value).unwrap_or(DEFAULT_AFTER)
}

/// Runs when the loader loads this library, before the program's `main`. Never panics:
/// a failure to read the executable's name or to start the thread is the end of it.
extern "C" fn at_load() {
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else { return };
    if !trims(&exe) {
        return;
    }
    let after = after(std::env::var_os(AFTER_VAR).as_deref());
    trim::start(after, trim::every(std::env::var_os(trim::EVERY_VAR).as_deref()));
}

/// The constructor: the loader runs each function of `.init_array` when it loads the library.
#[used]
#[unsafe(link_section = ".init_array")]
static AT_LOAD: extern "C" fn() = at_load;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_webkits_web_and_network_processes_trim() {
        assert!(trims(Path::new("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebProcess")));
        assert!(trims(Path::new("/usr/libexec/webkit2gtk-4.1/WebKitNetworkProcess")));
        for other in [
            "/usr/bin/mimesis-desktop",
            "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebDriver",
            "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitGPUProcess",
            "/usr/bin/bash",
            "/opt/WebKitWebProcess/bash",
            "/usr/bin/WebKitWebProcess2",
            "",
        ] {
            assert!(!trims(Path::new(other)), "{other}");
        }
        // This test's own program: the constructor ran here and started nothing.
        assert!(!trims(&std::fs::read_link("/proc/self/exe").unwrap()));
    }

    #[test]
    fn the_delay_is_the_variables_milliseconds_or_the_default() {
        assert_eq!(after(None), DEFAULT_AFTER);
        assert_eq!(after(Some(OsStr::new("1000"))), Duration::from_secs(1));
        assert_eq!(after(Some(OsStr::new(" 250\n"))), Duration::from_millis(250));
        assert_eq!(after(Some(OsStr::new("0"))), Duration::ZERO);
        for bad in ["", "-5", "1.5", "soon", "99999999999999999999999"] {
            assert_eq!(after(Some(OsStr::new(bad))), DEFAULT_AFTER, "{bad:?}");
        }
    }
}
