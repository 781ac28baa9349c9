//! `mimesis hook`, `mimesis hooks …` and `mimesis doctor` as Claude Code and a person
//! run them: the real binary, real files.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mimesis");

fn hook(data: &Path, stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(["hook", "--data-dir"])
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn spool_lines(data: &Path) -> Vec<Value> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(data.join("hooks")).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with("events-") {
            for l in std::fs::read_to_string(e.path()).unwrap().lines() {
                v.push(serde_json::from_str(l).unwrap());
            }
        }
    }
    v
}

#[test]
fn the_hook_prints_nothing_and_always_exits_zero() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let ok = hook(&data, br#"{"session_id":"abc-1","hook_event_name":"UserPromptSubmit","cwd":"/tmp","prompt":"hi"}"#);
    assert!(ok.status.success());
    assert!(ok.stdout.is_empty() && ok.stderr.is_empty(), "{ok:?}");
    let lines = spool_lines(&data);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["event"], "UserPromptSubmit");
    assert_eq!(lines[0]["terminal"]["claudePid"], json!(std::process::id()), "the parent of the hook");
    for bad in [&b""[..], b"{", b"\xff\xfe", br#"{"session_id":"../x","hook_event_name":"Stop"}"#] {
        let out = hook(&data, bad);
        assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    }
    assert_eq!(spool_lines(&data).len(), 1, "nothing recorded for bad payloads");
    let log = std::fs::read_to_string(data.join("hooks/hook.log")).unwrap();
    assert_eq!(log.lines().count(), 4, "each reason logged: {log}");
    // A data dir that cannot be written: still exit 0, still silent.
    let out = hook(Path::new("/proc/mimesis-cannot-write-here"), br#"{"session_id":"a","hook_event_name":"Stop"}"#);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
}

#[test]
fn the_hook_does_not_wait_forever_for_stdin() {
    let d = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["hook", "--data-dir"])
        .arg(d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take(); // held open, never written
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the hook hung on an open stdin");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let log = std::fs::read_to_string(d.path().join("hooks/hook.log")).unwrap();
    assert!(log.contains("not closed in time"), "{log}");
}

fn mimesis(config: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(BIN).arg("--config-dir").arg(config).arg("--data-dir").arg(data).args(args).output().unwrap()
}

#[test]
fn hooks_install_status_uninstall_and_refusal() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    let data = d.path().join("data");
    let out = mimesis(&config, &data, &["hooks", "install", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st[0]["installed"], true);
    let settings: Value = serde_json::from_slice(&std::fs::read(config.join("settings.json")).unwrap()).unwrap();
    let cmd = settings["hooks"]["Stop"][0]["hooks"][0]["command"].as_str().unwrap().to_owned();
    let exe = std::fs::canonicalize(BIN).unwrap();
    assert!(cmd.starts_with(exe.to_str().unwrap()) && cmd.contains(" hook --data-dir "), "{cmd}");
    // The installed command works as Claude Code runs it: through a shell.
    let mut child =
        Command::new("sh").arg("-c").arg(&cmd).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(br#"{"session_id":"s1","hook_event_name":"Stop"}"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(spool_lines(&data).len(), 1);
    let out = mimesis(&config, &data, &["hooks", "status", "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()[0]["installed"], true);
    let out = mimesis(&config, &data, &["doctor", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["roots"][0]["hooks"]["installed"], true);
    assert_eq!(report["hookSpool"]["events"], 1);
    let sup = &report["supervision"];
    assert_eq!((sup["recordedProcesses"].as_u64(), sup["recordedSessions"].as_u64()), (Some(0), Some(0)), "{sup}");
    assert_eq!((&sup["supervisors"], &sup["metricsPublishers"]), (&json!([]), &json!([])), "{sup}");
    assert_eq!(sup["staleMetrics"], 0);
    let out = mimesis(&config, &data, &["hooks", "uninstall", "--json"]);
    assert!(out.status.success());
    let settings: Value = serde_json::from_slice(&std::fs::read(config.join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings, json!({}));

    // Invalid JSON: exit 1, the file and its folder unchanged, the line named.
    let bad = b"{\n  \"model\": \"opus\"\n  \"x\": 1\n}\n";
    std::fs::write(config.join("settings.json"), bad).unwrap();
    let before: Vec<_> = std::fs::read_dir(&config).unwrap().map(|e| e.unwrap().file_name()).collect();
    let out = mimesis(&config, &data, &["hooks", "install"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("not valid JSON (line 3"), "{text}");
    assert_eq!(std::fs::read(config.join("settings.json")).unwrap(), bad);
    let after: Vec<_> = std::fs::read_dir(&config).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before.len(), after.len());
}

/// Mimesis removed (a package uninstalled) leaves the user's settings.json with hooks that
/// run a program no longer there: the doctor says so in a sentence, and what to do.
#[test]
fn the_doctor_names_hooks_whose_program_is_gone() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    let data = d.path().join("data");
    let gone = d.path().join("usr/bin/mimesis");
    std::fs::create_dir_all(gone.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &gone).unwrap();
    // Another test's child may hold the copy open for writing between its fork and exec
    // (the copy's descriptor is inherited until then): running it waits for that to end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let out = loop {
        let run = Command::new(&gone)
            .arg("--config-dir")
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .args(["hooks", "install"])
            .output();
        match run {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && std::time::Instant::now() < deadline => {
                std::thread::yield_now();
            }
            other => break other.unwrap(),
        }
    };
    assert!(out.status.success(), "{out:?}");
    let doctor = |config: &Path| String::from_utf8(mimesis(config, &data, &["doctor"]).stdout).unwrap();
    assert!(!doctor(&config).contains("which is not installed"));
    std::fs::remove_file(&gone).unwrap();
    let text = doctor(&config);
    let settings = config.join("settings.json");
    let want = format!(
        "problem: hooks in {} run {}, which is not installed; run `mimesis hooks uninstall` or reinstall Mimesis\n",
        settings.display(),
        gone.display()
    );
    assert!(text.contains(&want), "{text}");
    assert!(!text.contains("hooks are not installed"), "{text}");
    let out = mimesis(&config, &data, &["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["roots"][0]["hooks"]["missingProgram"], gone.to_str().unwrap());
}
