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
    "resources",
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
    // Only with the `record` feature, and granted at run time only while recording
    // (src/record.rs): default.json does not name it.
    "record_write",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build script");
}
