// The app's commands get generated `allow-*` permissions; only those granted in
// capabilities/default.json reach the webview (everything else is denied).
const COMMANDS: &[&str] = &[
    "roster_snapshot",
    "roster_snapshot_held",
    "roster_listening",
    "open_timeline",
    "timeline_range",
    "timeline_item",
    "close_timeline",
    "start_demo",
    "stop_demo",
    "hooks_status",
    "hooks_install",
    "hooks_uninstall",
    "doctor",
    "settings_get",
    "settings_set",
    "pty_create",
    "pty_attach",
    "pty_detach",
    "pty_ack",
    "pty_input",
    "pty_resize",
    "pty_stop",
    "pty_resume",
    "pty_restart",
    "pty_delete",
    "pty_raise_budget",
    "resources",
    "spend_view",
    "search_history",
    "search_progress",
    "search_host",
    "roster_shown",
    "timeline_find",
    "approvals_pending",
    "approval_decide",
    "pty_answer",
    "pty_dialog",
    "focus_terminal",
    "set_viewing",
    "settings_in_effect",
    "folder_check",
    "pick_folder",
    "gpu_available",
    "hosts_list",
    "host_retry",
    "host_install",
    "host_add",
    "host_remove",
    "open_link",
    "bg_create",
    "bg_attach",
    "bg_detach",
    "bg_stop",
    "bg_respawn",
    "bg_remove",
    "app_quit",
    "sessions_interrupted",
    "interrupted_dismiss",
    // Only with the `record` feature, and granted at run time only while recording
    // (src/record.rs): default.json does not name it.
    "record_write",
];

fn main() {
    link_flite_voice_first();
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build script");
}

/// The library that makes WebKit slow to load, made the app's first: see [`FLITE_VOICE`].
fn link_flite_voice_first() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // (No pkg-config, no readelf, no WebKit that links it: nothing to do.)
    let Some(libdir) = command_output("pkg-config", &["--variable=libdir", "webkit2gtk-4.1"]) else { return };
    let webkit = format!("{}/libwebkit2gtk-4.1.so", libdir.trim());
    let Some(dynamic) = command_output("readelf", &["-d", &webkit]) else { return };
    if dynamic.lines().any(|l| l.contains("(NEEDED)") && l.contains(&format!("[{FLITE_VOICE}]"))) {
        // Named among the app's own libraries (the link line's last), it is searched right
        // after them: about the 17th library, not the 80th.
        println!("cargo:rustc-link-arg-bins=-Wl,--push-state,--no-as-needed,-l:{FLITE_VOICE},--pop-state");
        // For WebKit's own processes too (src/toolkit.rs).
        println!("cargo:rustc-env=MIMESIS_FLITE_VOICE={FLITE_VOICE}");
    }
}

/// A speech synthesis voice WebKitGTK links (Debian's build). 31,000 of the ~72,000 symbol
/// relocations made when the app loads are this library's references to its own data, and
/// the loader looks each up in every library it loaded before this one, about 80 of them:
/// 2.5 of the launch's 4.2 million hash checks (`LD_DEBUG=symbols`). Named by the app, it is
/// loaded about 17th, and the launch makes 2.2 million: `mimesis-desktop hook`, which loads
/// the libraries and exits, took 62–70 ms instead of 86–90 (`perf stat -r 15`).
const FLITE_VOICE: &str = "libflite_cmu_time_awb.so.1";

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
