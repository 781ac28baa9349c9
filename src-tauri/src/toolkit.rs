//! What the app tells its toolkit (GTK, WebKit) through the environment, first thing in
//! `main`: no GL without a GPU, libraries for WebKit's helper processes to load first, and
//! that there is no session bus when none can be found. Each is set only when the user has
//! not set it (the user's preloads stay, first), and every program Mimesis starts gets the
//! user's values back (`mimesis_os::child_env`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Sets the toolkit's environment. Call it before any other thread exists. Returns the
/// library that trims WebKit's processes, where it was found (for the log, which does not
/// exist yet).
pub fn prepare() -> Option<PathBuf> {
    let is_set = |var: &str| std::env::var_os(var).is_some();
    let mut vars: Vec<(&str, String)> = if crate::pty::gpu() { Vec::new() } else { without_gpu(is_set) }
        .into_iter()
        .map(|(k, v)| (k, v.to_owned()))
        .collect();
    let trim = std::env::current_exe().ok().and_then(|exe| trim_library(&exe, |p| p.is_file()));
    // (A preload that is not UTF-8 is left as it is.)
    let user = match std::env::var("LD_PRELOAD") {
        Ok(v) => Some(Some(v)),
        Err(std::env::VarError::NotPresent) => Some(None),
        Err(std::env::VarError::NotUnicode(_)) => None,
    };
    let preload = user.and_then(|user| preload_for_webkit(user.as_deref(), FLITE_VOICE, trim.as_deref()));
    vars.extend(preload.map(|v| ("LD_PRELOAD", v)));
    let uid = std::os::unix::fs::MetadataExt::uid;
    let uid = std::fs::metadata("/proc/self").map(|m| uid(&m)).ok();
    vars.extend(no_session_bus(|v| std::env::var_os(v), uid, |p| p.exists()).map(|(k, v)| (k, v.to_owned())));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // SAFETY: the first thing `main` does, before any thread exists.
    unsafe { mimesis_os::child_env::set_for_toolkit(&vars) };
    trim
}

/// What WebKit and GTK are told on a machine without a GPU (no DRM render node: a VM, a
/// remote desktop, Xvfb), but for what the user set:
/// - no accelerated compositing: in software (llvmpipe) every repaint composites the whole
///   window on the CPU, and the GL buffers cost about 100 MB; WebKit's plain software path
///   draws the same page at a fraction of both;
/// - no GL in the app's own process: GTK's GL (`GDK_GL`), the DMA-BUF renderer, and the
///   render node WebKit would otherwise find by starting EGL here. Each of them loads Mesa's
///   software driver and with it LLVM (about 25 MB of the app's memory with nothing to draw:
///   the window bench, 2,000 sessions). The web process still starts its own EGL: without
///   one it aborts ("Could not create default EGL display").
fn without_gpu(is_set: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    const SETTINGS: [(&str, &str); 4] = [
        ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
        ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
        ("GDK_GL", "disable"),
        // There is none; named so WebKit does not look for one (its only use of EGL here).
        ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/dri/none"),
    ];
    SETTINGS.into_iter().filter(|(var, _)| !is_set(var)).collect()
}

/// The speech voice the app was linked with (build.rs), if any.
const FLITE_VOICE: Option<&str> = option_env!("MIMESIS_FLITE_VOICE");

/// The library WebKit's web and network processes preload to trim themselves once the
/// launch is over (crates/webkit-trim): beside the app's binary (a build's target dir), or
/// where the package installs it (`/usr/lib/mimesis/` for `/usr/bin/mimesis-desktop`).
/// Without it the app runs as it would, WebKit's processes keeping their launch's pages.
const TRIM_LIBRARY: &str = "libmimesis_webkit_trim.so";

fn trim_library(exe: &Path, is_file: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    // (A relative path would be looked for from each process's working directory.)
    let dir = exe.parent().filter(|d| d.is_absolute())?;
    let beside = dir.join(TRIM_LIBRARY);
    let installed = dir.parent().map(|prefix| prefix.join("lib/mimesis").join(TRIM_LIBRARY));
    [Some(beside), installed].into_iter().flatten().find(|p| is_file(p))
}

/// `LD_PRELOAD` for WebKit's web and network processes: the user's own preloads first (they
/// keep their place ahead of everything), then
/// - the speech voice, when the app was linked with it. WebKit's processes load the same
///   libraries as the app, and pay the same cost the build script saves the app (build.rs,
///   `FLITE_VOICE`): a voice whose 31,000 references to its own symbols are each looked up
///   in the ~60 libraries loaded before it, about 1.8 million hash checks and 15–20 ms a
///   process, the web process's on the way to the first page. Preloaded, each is found in
///   one of the first libraries searched. (The symbols each reference binds to are the same
///   either way: checked with `LD_DEBUG=bindings` on both processes.)
/// - the trim library ([`trim_library`]), which in those two processes (and no other
///   program) gives back the launch's clean file pages and free heap some seconds after
///   their start: with 2,000 sessions after 60 s idle, the window's memory goes from 235
///   to 126 MB.
///
/// A path holding a space or a colon (the loader's separators) is left out; `None` when
/// nothing of ours is left.
fn preload_for_webkit(user: Option<&str>, voice: Option<&str>, trim: Option<&Path>) -> Option<String> {
    let ours: Vec<&str> = voice
        .into_iter()
        .chain(trim.and_then(Path::to_str))
        .filter(|p| !p.is_empty() && !p.contains([' ', ':']))
        .collect();
    if ours.is_empty() {
        return None;
    }
    let user = user.map(|u| u.trim_matches([' ', ':'])).filter(|u| !u.is_empty());
    Some(user.into_iter().chain(ours).collect::<Vec<_>>().join(" "))
}

/// `DBUS_SESSION_BUS_ADDRESS=disabled:` (an address no D-Bus library can use, so each fails
/// at once) when there is no session bus and none can be started: the variable is unset, no
/// `bus` socket is in the user's runtime dir, and no `dbus-launch` is on `PATH`. Else GLib,
/// asked for the session bus by the tray, the notifications or WebKit's accessibility, forks
/// the process to run `dbus-launch --autolaunch`, which is not there: about a dozen times in
/// the app, its web and its network process, in their first 300 ms (`strace -f`; a second
/// launch of the window benchmark, 2,000 sessions: 524 → 453 ms, median of 12 each). With
/// a `dbus-launch` (on `PATH`, or libdbus's own in /usr/bin), autolaunch may find the
/// display's bus or start one: left alone.
fn no_session_bus(
    env: impl Fn(&str) -> Option<OsString>,
    uid: Option<u32>,
    exists: impl Fn(&Path) -> bool,
) -> Option<(&'static str, &'static str)> {
    if env("DBUS_SESSION_BUS_ADDRESS").is_some() {
        return None;
    }
    // Where GLib and zbus look for it when the variable is unset.
    let runtime = env("XDG_RUNTIME_DIR").map(PathBuf::from).into_iter();
    let mut sockets = runtime.chain(uid.map(|u| PathBuf::from(format!("/run/user/{u}")))).map(|d| d.join("bus"));
    if sockets.any(|s| exists(&s)) {
        return None;
    }
    // (GLib's search path when PATH is unset; libdbus runs the one it was built with.)
    let path = env("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut launchers = std::env::split_paths(&path).map(|dir| dir.join("dbus-launch"));
    if launchers.any(|l| exists(&l)) || exists(Path::new("/usr/bin/dbus-launch")) {
        return None;
    }
    Some(("DBUS_SESSION_BUS_ADDRESS", "disabled:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_no_gl_is_started_but_what_the_user_set_stands() {
        let all = without_gpu(|_| false);
        let vars: Vec<&str> = all.iter().map(|(v, _)| *v).collect();
        assert_eq!(
            vars,
            [
                "WEBKIT_DISABLE_COMPOSITING_MODE",
                "WEBKIT_DISABLE_DMABUF_RENDERER",
                "GDK_GL",
                "WEBKIT_WEB_RENDER_DEVICE_FILE"
            ]
        );
        let kept = without_gpu(|v| v == "GDK_GL" || v == "WEBKIT_WEB_RENDER_DEVICE_FILE");
        assert_eq!(kept, [("WEBKIT_DISABLE_COMPOSITING_MODE", "1"), ("WEBKIT_DISABLE_DMABUF_RENDERER", "1")]);
    }

    #[test]
    fn webkit_preloads_the_voice_and_the_trim_library_after_the_users_preloads() {
        let voice = Some("libflite_cmu_time_awb.so.1");
        let trim = Path::new("/usr/lib/mimesis/libmimesis_webkit_trim.so");
        let both = "libflite_cmu_time_awb.so.1 /usr/lib/mimesis/libmimesis_webkit_trim.so";
        assert_eq!(preload_for_webkit(None, voice, Some(trim)).as_deref(), Some(both));
        assert_eq!(preload_for_webkit(None, voice, None).as_deref(), voice);
        assert_eq!(preload_for_webkit(None, None, Some(trim)).as_deref(), trim.to_str());
        assert_eq!(preload_for_webkit(None, None, None), None);
        // The user's come first, as they were.
        let user = "/opt/a.so:/opt/b.so";
        let mine = preload_for_webkit(Some(user), voice, Some(trim));
        assert_eq!(mine.as_deref(), Some(format!("{user} {both}").as_str()));
        assert_eq!(preload_for_webkit(Some(" "), None, Some(trim)).as_deref(), trim.to_str());
        // Nothing of ours: the user's value is not touched.
        assert_eq!(preload_for_webkit(Some(user), None, None), None);
        // A path the loader would split is left out.
        for odd in ["/home/a b/libmimesis_webkit_trim.so", "/opt/x:y/libmimesis_webkit_trim.so"] {
            assert_eq!(preload_for_webkit(None, voice, Some(Path::new(odd))).as_deref(), voice, "{odd}");
            assert_eq!(preload_for_webkit(None, None, Some(Path::new(odd))), None, "{odd}");
        }
    }

    #[test]
    fn the_trim_library_is_found_beside_the_app_or_where_the_package_puts_it() {
        let beside = |p: &Path| p == Path::new("/w/target/profiling/libmimesis_webkit_trim.so");
        assert_eq!(
            trim_library(Path::new("/w/target/profiling/mimesis-desktop"), beside).as_deref(),
            Some(Path::new("/w/target/profiling/libmimesis_webkit_trim.so"))
        );
        let installed = |p: &Path| p == Path::new("/usr/lib/mimesis/libmimesis_webkit_trim.so");
        assert_eq!(
            trim_library(Path::new("/usr/bin/mimesis-desktop"), installed).as_deref(),
            Some(Path::new("/usr/lib/mimesis/libmimesis_webkit_trim.so"))
        );
        assert_eq!(trim_library(Path::new("/usr/bin/mimesis-desktop"), beside), None);
        assert_eq!(trim_library(Path::new("mimesis-desktop"), |_| true), None);
    }

    #[test]
    fn a_session_bus_that_cannot_be_found_is_said_to_be_disabled() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |v: &str| vars.iter().find(|(k, _)| *k == v).map(|(_, x)| OsString::from(x))
        };
        let none = |_: &Path| false;
        let path = &[("PATH", "/usr/local/bin:/usr/bin:/bin"), ("XDG_RUNTIME_DIR", "/run/user/1000")];
        assert_eq!(no_session_bus(env(path), Some(1000), none), Some(("DBUS_SESSION_BUS_ADDRESS", "disabled:")));
        // An address the user set stands, whatever it is.
        let set = &[("DBUS_SESSION_BUS_ADDRESS", "unix:path=/tmp/bus"), ("PATH", "/usr/bin")];
        assert_eq!(no_session_bus(env(set), Some(1000), none), None);
        // A bus in the runtime dir, or in /run/user/<uid> when XDG_RUNTIME_DIR is unset.
        let bus = |p: &Path| p == Path::new("/run/user/1000/bus");
        assert_eq!(no_session_bus(env(path), Some(1000), bus), None);
        assert_eq!(no_session_bus(env(&[("PATH", "/usr/bin")]), Some(1000), bus), None);
        assert_eq!(no_session_bus(env(&[("PATH", "/usr/bin")]), Some(0), bus).map(|(_, v)| v), Some("disabled:"));
        // dbus-launch on PATH may autolaunch one.
        let launcher = |p: &Path| p == Path::new("/usr/bin/dbus-launch");
        assert_eq!(no_session_bus(env(path), Some(1000), launcher), None);
        assert_eq!(no_session_bus(env(&[]), None, launcher), None);
        assert_eq!(no_session_bus(env(&[("PATH", "/opt/bin")]), None, launcher), None);
        let elsewhere = |p: &Path| p == Path::new("/opt/dbus/bin/dbus-launch");
        assert_eq!(no_session_bus(env(&[("PATH", "/opt/dbus/bin")]), None, elsewhere), None);
        assert_eq!(no_session_bus(env(&[("PATH", "/opt/bin")]), None, elsewhere).map(|(_, v)| v), Some("disabled:"));
    }
}
