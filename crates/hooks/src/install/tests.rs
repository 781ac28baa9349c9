use super::*;
use serde_json::{Value, json};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const CMD: &str = "/opt/mimesis/bin/mimesis hook --data-dir /home/me/.local/share/mimesis";

fn root() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join(".claude");
    fs::create_dir_all(&r).unwrap();
    (d, r)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// As Claude Code writes it: `JSON.stringify(settings, null, 2)`.
fn claude_style(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap();
    b.push(b'\n');
    b
}

fn foreign() -> Value {
    json!({
        "permissions": {"allow": ["Bash(npm test)"], "deny": []},
        "model": "opus",
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "~/bin/greet.sh"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit --strict", "timeout": 3}]}]
        },
        "statusLine": {"type": "command", "command": "status.sh"}
    })
}

#[test]
fn recognises_our_command_and_nothing_else() {
    assert!(is_our_command(CMD));
    assert!(is_our_command("'/path with space/mimesis' hook --data-dir '/d'"));
    assert!(is_our_command(&hook_command(Path::new("/a b/it's/mimesis"), Path::new("/d"))));
    assert_eq!(
        shell_words(&hook_command(Path::new("/a b/it's/mimesis"), Path::new("/d"))),
        ["/a b/it's/mimesis", "hook", "--data-dir", "/d", MARKER]
    );
    // Any program with the marker; the old unmarked forms of our own binaries only.
    assert!(is_our_command("/moved/elsewhere/m hook --data-dir /d --installed-by=mimesis"));
    assert!(is_our_command("/usr/local/bin/mimesis hook"));
    for user in [
        "/opt/mimesis-notify hook",
        "/opt/mimesis-notify hook --data-dir /d",
        "/usr/bin/mimesis hook --data-dir /d --verbose",
        "mimesisctl hook",
    ] {
        assert!(!is_our_command(user), "a user's hook taken for ours: {user}");
    }
    assert!(is_our_command("/opt/Mimesis/mimesis-desktop hook --data-dir /d"), "the desktop app runs the hook too");
    for other in ["/bin/mimesis ls", "echo mimesis hook", "~/bin/greet.sh", "", "hook"] {
        assert!(!is_our_command(other), "{other}");
    }
}

#[test]
fn install_into_a_missing_file_then_again_changes_nothing() {
    let (_d, r) = root();
    let st = install(&r, CMD, T0).unwrap();
    assert!(st.installed && !st.partial && st.error.is_none());
    let v: Value = serde_json::from_slice(&fs::read(settings_path(&r)).unwrap()).unwrap();
    assert_eq!(v["hooks"]["SessionStart"][0]["matcher"], "startup|resume|clear|compact|fork");
    for (event, _) in WANTED {
        assert_eq!(v["hooks"][event][0]["hooks"][0]["command"], CMD, "{event}");
        assert_eq!(v["hooks"][event][0]["hooks"][0]["type"], "command");
    }
    assert!(v["hooks"]["Stop"][0].get("matcher").is_none(), "all stops");
    let bytes = fs::read(settings_path(&r)).unwrap();
    let names = files_in(&r);
    assert_eq!(names, ["settings.json"], "no backup of a file that did not exist");
    // Idempotent: same bytes, no backup, no temp file.
    assert!(install(&r, CMD, T0.plus(Duration::from_secs(1))).unwrap().installed);
    assert_eq!(fs::read(settings_path(&r)).unwrap(), bytes);
    assert_eq!(files_in(&r), names);
}

use std::time::Duration;

#[test]
fn install_keeps_every_other_setting_and_hook_and_uninstall_restores_the_bytes() {
    let (_d, r) = root();
    // Keys in the order a person wrote them (not sorted), as JSON.stringify(_, null, 2) lays them out.
    let original = br#"{
  "permissions": {
    "allow": [
      "Bash(npm test)"
    ],
    "deny": []
  },
  "model": "opus",
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/greet.sh"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "audit --strict",
            "timeout": 3
          }
        ]
      }
    ]
  },
  "statusLine": {
    "type": "command",
    "command": "status.sh"
  }
}
"#
    .to_vec();
    assert_eq!(serde_json::from_slice::<Value>(&original).unwrap(), foreign());
    fs::write(settings_path(&r), &original).unwrap();
    fs::set_permissions(settings_path(&r), fs::Permissions::from_mode(0o600)).unwrap();

    install(&r, CMD, T0).unwrap();
    let v: Value = serde_json::from_slice(&fs::read(settings_path(&r)).unwrap()).unwrap();
    assert_eq!(v["permissions"], foreign()["permissions"]);
    assert_eq!(v["statusLine"], foreign()["statusLine"]);
    assert_eq!(v["hooks"]["PreToolUse"], foreign()["hooks"]["PreToolUse"]);
    assert_eq!(v["hooks"]["SessionStart"][0], foreign()["hooks"]["SessionStart"][0], "the foreign hook stays first");
    assert_eq!(v["hooks"]["SessionStart"][1]["hooks"][0]["command"], CMD);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "model", "hooks", "statusLine"], "the file keeps its order");
    let text = String::from_utf8(fs::read(settings_path(&r)).unwrap()).unwrap();
    assert!(text.find("\"permissions\"").unwrap() < text.find("\"model\"").unwrap(), "key order kept");
    assert_eq!(fs::metadata(settings_path(&r)).unwrap().permissions().mode() & 0o777, 0o600, "permissions kept");
    // The backup holds the original.
    let backups: Vec<String> =
        files_in(&r).into_iter().filter(|n| n.starts_with("settings.json.mimesis-backup-")).collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(fs::read(r.join(&backups[0])).unwrap(), original);

    let st = uninstall(&r, T0.plus(Duration::from_secs(1))).unwrap();
    assert!(!st.installed && !st.partial);
    assert_eq!(fs::read(settings_path(&r)).unwrap(), original, "byte for byte");
    assert_eq!(fs::metadata(settings_path(&r)).unwrap().permissions().mode() & 0o777, 0o600);
    // Uninstalling again: nothing to do, nothing written.
    let n = files_in(&r).len();
    uninstall(&r, T0.plus(Duration::from_secs(2))).unwrap();
    assert_eq!(files_in(&r).len(), n);
}

#[test]
fn other_layouts_survive_a_round_trip() {
    let (_d, r) = root();
    // Four-space indentation, no trailing newline.
    let original = b"{\n    \"env\": {\"A\": \"1\"},\n    \"n\": 1.5\n}".to_vec();
    fs::write(settings_path(&r), &original).unwrap();
    install(&r, CMD, T0).unwrap();
    let text = String::from_utf8(fs::read(settings_path(&r)).unwrap()).unwrap();
    assert!(text.contains("\n        \"SessionStart\""), "four spaces per level: {text}");
    uninstall(&r, T0).unwrap();
    let after: Value = serde_json::from_slice(&fs::read(settings_path(&r)).unwrap()).unwrap();
    assert_eq!(after, serde_json::from_slice::<Value>(&original).unwrap());
    assert!(!fs::read(settings_path(&r)).unwrap().ends_with(b"\n"));
}

#[test]
fn invalid_json_is_refused_with_its_line_and_nothing_changes() {
    let (_d, r) = root();
    let bad = b"{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n";
    fs::write(settings_path(&r), bad).unwrap();
    let err = install(&r, CMD, T0).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, InstallError::InvalidJson { line: 4, .. }), "{msg}");
    assert!(msg.contains("settings.json is not valid JSON (line 4"), "{msg}");
    assert!(msg.contains("nothing was written"), "{msg}");
    assert_eq!(fs::read(settings_path(&r)).unwrap(), bad);
    assert_eq!(files_in(&r), ["settings.json"], "no backup, no temp file");
    assert!(uninstall(&r, T0).is_err());
    assert_eq!(fs::read(settings_path(&r)).unwrap(), bad);
    let st = status(&r);
    assert!(!st.installed && st.error.is_some());
}

#[test]
fn a_hooks_field_of_another_shape_is_refused() {
    let (_d, r) = root();
    for bad in [json!({"hooks": []}), json!({"hooks": {"Stop": {}}}), json!({"hooks": {"Stop": [1]}}), json!([1, 2])] {
        let bytes = claude_style(&bad);
        fs::write(settings_path(&r), &bytes).unwrap();
        assert!(matches!(install(&r, CMD, T0), Err(InstallError::Shape { .. })), "{bad}");
        assert_eq!(fs::read(settings_path(&r)).unwrap(), bytes);
    }
}

#[test]
fn a_moved_binary_is_updated_not_duplicated_and_shared_groups_keep_foreign_hooks() {
    let (_d, r) = root();
    let mut v = foreign();
    // Someone put our hook into their own Stop group.
    v["hooks"]["Stop"] = json!([{"hooks": [{"type": "command", "command": "notify-send done"},
                                            {"type": "command", "command": "/old/place/mimesis hook"}]}]);
    fs::write(settings_path(&r), claude_style(&v)).unwrap();
    let st = install(&r, CMD, T0).unwrap();
    assert!(st.installed);
    let after: Value = serde_json::from_slice(&fs::read(settings_path(&r)).unwrap()).unwrap();
    assert_eq!(after["hooks"]["Stop"].as_array().unwrap().len(), 1, "found, not added again");
    assert_eq!(after["hooks"]["Stop"][0]["hooks"][1]["command"], CMD, "brought up to date");
    uninstall(&r, T0).unwrap();
    let after: Value = serde_json::from_slice(&fs::read(settings_path(&r)).unwrap()).unwrap();
    assert_eq!(after["hooks"]["Stop"], json!([{"hooks": [{"type": "command", "command": "notify-send done"}]}]));
    assert_eq!(after["hooks"]["SessionStart"], foreign()["hooks"]["SessionStart"]);
}

#[test]
fn status_reports_partial_installs() {
    let (_d, r) = root();
    fs::write(
        settings_path(&r),
        claude_style(&json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": CMD}]}]}})),
    )
    .unwrap();
    let st = status(&r);
    assert!(st.partial && !st.installed);
    assert!(install(&r, CMD, T0).unwrap().installed);

    // An install from before the permission wait (every hook with a 10 s timeout) reads as
    // partial, and installing again gives PermissionRequest its longer timeout.
    let text = fs::read_to_string(settings_path(&r)).unwrap();
    let old = text.replace(&format!("\"timeout\": {}", timeout_secs("PermissionRequest")), "\"timeout\": 10");
    assert_ne!(old, text);
    fs::write(settings_path(&r), &old).unwrap();
    let st = status(&r);
    assert!(st.partial && !st.installed, "{st:?}");
    assert!(install(&r, CMD, T0).unwrap().installed);
    assert!(
        fs::read_to_string(settings_path(&r))
            .unwrap()
            .contains(&format!("\"timeout\": {}", timeout_secs("PermissionRequest")))
    );
}

#[test]
fn install_all_changes_no_root_when_one_is_broken() {
    let (_d1, good) = root();
    let (_d2, bad) = root();
    fs::write(settings_path(&bad), b"{oops").unwrap();
    let err = install_all(&[good.clone(), bad.clone()], CMD, T0).unwrap_err();
    assert!(matches!(err, InstallError::InvalidJson { .. }));
    assert!(!settings_path(&good).exists(), "the good root was not touched either");
    fs::write(settings_path(&bad), b"{}").unwrap();
    let st = install_all(&[good.clone(), bad.clone()], CMD, T0).unwrap();
    assert!(st.iter().all(|s| s.installed));
    assert!(uninstall_all(&[good, bad], T0).unwrap().iter().all(|s| !s.installed));
}

#[test]
fn a_compact_file_and_an_empty_hooks_object_come_back_byte_for_byte() {
    let (_d, r) = root();
    let original = br#"{"hooks":{},"model":"opus","permissions":{"allow":["Read"]}}"#.to_vec();
    fs::write(settings_path(&r), &original).unwrap();
    install(&r, CMD, T0).unwrap();
    assert_ne!(fs::read(settings_path(&r)).unwrap(), original);
    uninstall(&r, T0.plus(Duration::from_secs(1))).unwrap();
    assert_eq!(fs::read(settings_path(&r)).unwrap(), original, "the user's own bytes, from the install's backup");
}

#[test]
fn a_symlinked_settings_file_is_written_through_and_stays_a_link() {
    let (d, r) = root();
    let dotfiles = d.path().join("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("claude-settings.json");
    fs::write(&target, claude_style(&foreign())).unwrap();
    std::os::unix::fs::symlink(&target, settings_path(&r)).unwrap();
    install(&r, CMD, T0).unwrap();
    assert!(fs::symlink_metadata(settings_path(&r)).unwrap().file_type().is_symlink(), "still a link");
    let installed: Value = serde_json::from_slice(&fs::read(&target).unwrap()).unwrap();
    assert!(installed.to_string().contains("mimesis hook"), "the link's target got the hooks");
    uninstall(&r, T0.plus(Duration::from_secs(1))).unwrap();
    assert!(fs::symlink_metadata(settings_path(&r)).unwrap().file_type().is_symlink());
    assert_eq!(fs::read(&target).unwrap(), claude_style(&foreign()));
}

#[test]
fn the_hook_runs_the_cli_next_to_the_app_else_the_app_itself() {
    let d = tempfile::tempdir().unwrap();
    let app = d.path().join("mimesis-desktop");
    fs::write(&app, b"app").unwrap();
    assert_eq!(hook_program(&app), app, "no CLI next to the app: the app runs its own `hook`");
    let cli = d.path().join("mimesis");
    fs::create_dir(&cli).unwrap();
    assert_eq!(hook_program(&app), app, "a folder named mimesis is not the CLI");
    fs::remove_dir(&cli).unwrap();
    fs::write(&cli, b"cli").unwrap();
    assert_eq!(hook_program(&app), cli);
    assert_eq!(hook_program(&cli), cli, "the CLI installs itself");
}

/// Hooks whose program is gone (the package was removed) say so; the user's own hooks are
/// never looked at, and a reinstall from where Mimesis is now puts it right.
#[test]
fn hooks_that_run_a_program_no_longer_there_are_reported() {
    let (d, r) = root();
    let bin = d.path().join("usr/bin/mimesis");
    fs::create_dir_all(bin.parent().unwrap()).unwrap();
    fs::write(&bin, b"cli").unwrap();
    let mut v = foreign();
    v["hooks"]["Stop"] = json!([{"hooks": [{"type": "command", "command": "/no/such/user-script"}]}]);
    fs::write(settings_path(&r), claude_style(&v)).unwrap();
    let st = install(&r, &hook_command(&bin, Path::new("/d")), T0).unwrap();
    assert!(st.installed);
    assert_eq!(st.missing_program, None, "a user's own missing program is not ours to report");
    fs::remove_file(&bin).unwrap();
    let st = status(&r);
    assert!(st.installed, "still in the file");
    assert_eq!(st.missing_program.as_deref(), Some(bin.as_path()));
    let moved = d.path().join("elsewhere/mimesis");
    fs::create_dir_all(moved.parent().unwrap()).unwrap();
    fs::write(&moved, b"cli").unwrap();
    assert_eq!(install(&r, &hook_command(&moved, Path::new("/d")), T0).unwrap().missing_program, None);
}

/// Issue 10.5: a user's hook named like ours survives install and uninstall, and a large
/// one-line settings file comes back byte for byte.
#[test]
fn a_users_look_alike_hook_and_a_big_compact_file_survive() {
    let (_d, r) = root();
    let mut v = foreign();
    v["hooks"]["Stop"] = json!([{"hooks": [{"type": "command", "command": "/opt/mimesis-notify hook"}]}]);
    v["big"] = json!("x".repeat(5 << 20));
    let original = serde_json::to_vec(&v).unwrap();
    assert!(original.len() > 4 << 20 && !original.contains(&b'\n'));
    fs::write(settings_path(&r), &original).unwrap();
    install(&r, CMD, T0).unwrap();
    let installed = fs::read(settings_path(&r)).unwrap();
    assert!(!installed.contains(&b'\n'), "a one-line file stays one line");
    let after: Value = serde_json::from_slice(&installed).unwrap();
    assert_eq!(after["hooks"]["Stop"][0]["hooks"][0]["command"], "/opt/mimesis-notify hook", "the user's hook is kept");
    assert_eq!(after["hooks"]["Stop"].as_array().unwrap().len(), 2, "ours added beside it, not over it");
    uninstall(&r, T0.plus(std::time::Duration::from_secs(1))).unwrap();
    assert!(fs::read(settings_path(&r)).unwrap() == original, "uninstall gives back the user's bytes");
}

/// A write that fails leaves neither a temporary file nor a backup behind.
#[test]
fn a_failed_write_leaves_nothing_behind() {
    let (_d, r) = root();
    let path = settings_path(&r);
    fs::write(&path, claude_style(&foreign())).unwrap();
    // The temporary file's name is taken by a folder: the write fails.
    let tmp = r.join(format!(".settings.json.mimesis-{}.tmp", std::process::id()));
    fs::create_dir(&tmp).unwrap();
    assert!(matches!(install(&r, CMD, T0), Err(InstallError::Write { .. })));
    fs::remove_dir(&tmp).unwrap();
    assert_eq!(files_in(&r), ["settings.json"], "no backup of a file that was not changed");
}
