//! The Debian package (`scripts/package`) installed on this machine as a user installs it,
//! tried, and removed (issue 37 §1). It changes /usr, so `cargo test` does not run it
//! (`#[ignore]`): `scripts/package --test` builds the package and runs this (root or sudo),
//! with the package's path in `$MIMESIS_PACKAGE_DEB`. It refuses to start while a `mimesis`
//! package is installed (a user's own install is not the test's to remove), and removes what
//! it installed whatever happens.
//!
//! - `apt-get install ./mimesis_….deb`: the two programs, the library WebKit's processes
//!   preload, the menu entry and the icons land where they should, and every library the
//!   programs load belongs to a package that the declared dependencies pull in;
//! - `mimesis --version` and `mimesis doctor` from PATH, as a user with a Claude Code folder;
//! - the installed window under Xvfb (through WebDriver, on a private session bus): the
//!   roster shows the user's session; Settings › Claude Code hooks › Install writes hooks that
//!   run the packaged CLI, `/usr/bin/mimesis`; Start at login writes an entry that starts
//!   `/usr/bin/mimesis-desktop --hidden`;
//! - `apt-get remove mimesis`: every file the package installed is gone and the user's
//!   settings.json (hooks included) is byte for byte what it was; this workspace's own
//!   `mimesis doctor` then says the hooks run a program that is not installed, and
//!   `mimesis hooks uninstall` gives back the file the user had before Mimesis.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use mimesis_core::{Clock, SystemClock, Timestamp};
use mimesis_tests::mimesis::{mimesis_bin, wait_output};
use mimesis_tests::webdriver::{DesktopApp, SessionOptions};
use serde_json::{Value, json};

const PACKAGE: &str = "mimesis";
const CLI: &str = "/usr/bin/mimesis";
const APP: &str = "/usr/bin/mimesis-desktop";
/// What WebKit's processes preload from the app (src-tauri/src/toolkit.rs, `trim_library`).
const TRIM: &str = "/usr/lib/mimesis/libmimesis_webkit_trim.so";
const SESSION: &str = "dddddddd-0000-4000-8000-000000000004";
const WAIT: Duration = Duration::from_secs(30);
/// What a user already had in settings.json: their own settings and hook.
const USERS_SETTINGS: &str = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";

/// A command run as root: directly when the test is root, else through `sudo -n`.
fn as_root(program: &str) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        Command::new(program)
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", program]);
        c
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<Output> {
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what}"))?;
    let out = wait_output(child, Duration::from_secs(600)).with_context(|| what.to_owned())?;
    ensure!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(out)
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn package_installed() -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", PACKAGE])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn remove_package() -> Result<()> {
    run(
        as_root("apt-get").args(["remove", "-y", "-q", PACKAGE]).env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get remove mimesis",
    )
    .map(drop)
}

/// Removes the package when the test ends before it did (a failure, a panic).
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        if package_installed() {
            eprintln!("removing the package the test installed");
            if let Err(e) = remove_package() {
                eprintln!("could not remove it: {e:#}; remove it with `apt remove {PACKAGE}`");
            }
        }
    }
}

/// A user's home: a Claude Code folder with one session and their own settings.json, and
/// the folders Mimesis writes to.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    data: PathBuf,
    xdg_config: PathBuf,
}

impl Home {
    fn new() -> Result<Home> {
        let dir = tempfile::tempdir()?;
        let home = dir.path().canonicalize()?.join("home");
        let config = home.join(".claude");
        let project = config.join("projects/-home-me-src-app");
        std::fs::create_dir_all(&project)?;
        let ts = |secs_ago: i64| Timestamp::from_millis(SystemClock.now().millis() - secs_ago * 1000).to_iso();
        let records = [
            json!({"type": "user", "uuid": "u1", "timestamp": ts(60), "sessionId": SESSION, "cwd": "/home/me/src/app",
                   "version": "2.1.330", "message": {"role": "user", "content": "Package the app"}}),
            json!({"type": "assistant", "uuid": "a1", "timestamp": ts(50), "sessionId": SESSION,
                   "cwd": "/home/me/src/app", "version": "2.1.330", "requestId": "req_1",
                   "message": {"id": "msg_1", "model": "claude-opus-4-8", "stop_reason": "end_turn",
                               "content": [{"type": "text", "text": "Done."}],
                               "usage": {"input_tokens": 10, "output_tokens": 20}}}),
        ];
        let lines: Vec<String> = records.iter().map(Value::to_string).collect();
        std::fs::write(project.join(format!("{SESSION}.jsonl")), lines.join("\n") + "\n")?;
        std::fs::write(config.join("settings.json"), USERS_SETTINGS)?;
        let data = home.join(".local/share/mimesis");
        let xdg_config = home.join(".config");
        Ok(Home { _dir: dir, home, config, data, xdg_config })
    }

    fn settings(&self) -> PathBuf {
        self.config.join("settings.json")
    }

    /// The environment of a program this user starts (PATH as a login shell has it).
    fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("HOME", self.home.clone().into_os_string()),
            ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
            ("MIMESIS_DATA_DIR", self.data.clone().into_os_string()),
            ("XDG_CONFIG_HOME", self.xdg_config.clone().into_os_string()),
        ]
    }

    /// `sh -c script` as this user, Claude Code's own variables unset.
    fn sh(&self, script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]).env_remove("CLAUDE_CONFIG_DIR").envs(self.env());
        c
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "installs a package on this machine: scripts/package --test"]
async fn the_package_installs_runs_and_removes_cleanly() -> Result<()> {
    let deb = std::env::var_os("MIMESIS_PACKAGE_DEB")
        .map(PathBuf::from)
        .context("MIMESIS_PACKAGE_DEB is unset: run this through `scripts/package --test`")?;
    ensure!(deb.is_file(), "no package at {}: build it with scripts/package", deb.display());
    if package_installed() {
        bail!("a {PACKAGE} package is installed on this machine already: the test leaves it alone (remove it first)");
    }
    let home = Home::new()?;

    let _installed = Installed;
    run(
        as_root("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .arg(std::path::absolute(&deb)?)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get install",
    )?;
    ensure!(package_installed(), "apt-get install succeeded but the package is not installed");
    let files = installed_files()?;
    dependencies_cover_every_library()?;

    // From PATH, as a user.
    let out = run(&mut home.sh("command -v mimesis && mimesis --version"), "mimesis --version")?;
    ensure!(
        text(&out) == format!("{CLI}\nmimesis {}\n", env!("CARGO_PKG_VERSION")),
        "not the packaged CLI: {:?}",
        text(&out)
    );
    let out = run(&mut home.sh("mimesis doctor"), "mimesis doctor")?;
    let doctor = text(&out);
    let folder = format!("config folder {}: 1 session, hooks not installed", home.config.display());
    ensure!(doctor.contains(&folder), "the doctor did not find the user's folder: {doctor}");
    eprintln!("mimesis doctor, installed:\n{doctor}");

    let app = DesktopApp::launch_binary_in_session(Path::new(APP), &[], &home.env(), SessionOptions::default()).await?;
    let result = in_the_window(&app, &home).await;
    app.close().await?;
    result?;
    let out = run(&mut home.sh("mimesis doctor"), "mimesis doctor")?;
    ensure!(text(&out).contains(", hooks installed\n"), "{}", text(&out));

    // Removed: its files go, the user's files stay as they are.
    let with_hooks = std::fs::read(home.settings())?;
    remove_package()?;
    ensure!(!package_installed(), "apt-get remove left the package installed");
    let left: Vec<&PathBuf> = files.iter().filter(|f| f.symlink_metadata().is_ok_and(|m| !m.is_dir())).collect();
    ensure!(left.is_empty(), "files of the package left after its removal: {left:?}");
    ensure!(std::fs::read(home.settings())? == with_hooks, "removing the package changed the user's settings.json");

    // The hooks are the user's to remove, and the doctor says so.
    let ours = mimesis_bin()?;
    let doctor = |args: &[&str]| -> Result<String> {
        let mut cmd = Command::new(&ours);
        cmd.args(args).env_remove("CLAUDE_CONFIG_DIR").envs(home.env());
        Ok(text(&run(&mut cmd, &format!("mimesis {}", args.join(" ")))?))
    };
    let said = doctor(&["doctor"])?;
    let want = format!(
        "problem: hooks in {} run {CLI}, which is not installed; run `mimesis hooks uninstall` or reinstall Mimesis\n",
        home.settings().display()
    );
    ensure!(said.contains(&want), "the doctor does not say the hooks run a removed program: {said}");
    doctor(&["hooks", "uninstall"])?;
    ensure!(
        std::fs::read_to_string(home.settings())? == USERS_SETTINGS,
        "uninstalling the hooks did not give back the user's own file"
    );
    Ok(())
}

/// The files the package installed (`dpkg -L`), checked for the programs, the library
/// WebKit's processes preload, the menu entry and the icons.
fn installed_files() -> Result<Vec<PathBuf>> {
    let out = run(Command::new("dpkg-query").args(["-L", PACKAGE]), "dpkg-query -L")?;
    let files: Vec<PathBuf> = text(&out).lines().map(PathBuf::from).collect();
    let desktop = PathBuf::from("/usr/share/applications/Mimesis.desktop");
    for want in [Path::new(CLI), Path::new(APP), Path::new(TRIM), &desktop] {
        ensure!(files.iter().any(|f| f == want) && want.is_file(), "{} is not installed: {files:?}", want.display());
    }
    let icons =
        files.iter().filter(|f| f.starts_with("/usr/share/icons/hicolor") && f.ends_with("mimesis-desktop.png"));
    ensure!(icons.count() >= 3, "the icons are not installed: {files:?}");
    let entry = std::fs::read_to_string(&desktop)?;
    for line in ["Exec=mimesis-desktop", "Icon=mimesis-desktop", "Name=Mimesis", "Type=Application"] {
        ensure!(entry.lines().any(|l| l == line), "the menu entry has no {line}: {entry}");
    }
    Ok(files)
}

/// Every library the two programs load (`ldd`) is found, and belongs to a package that the
/// package's declared dependencies pull in (`apt-cache depends --recurse`): installing it on
/// a machine without the build's libraries brings them all.
fn dependencies_cover_every_library() -> Result<()> {
    let depends = text(&run(Command::new("dpkg-query").args(["-W", "-f", "${Depends}", PACKAGE]), "dpkg-query")?);
    for want in ["libwebkit2gtk-4.1-0", "libgtk-3-0", "libayatana-appindicator3-1"] {
        ensure!(depends.split(", ").any(|d| d.starts_with(want)), "{want} is not declared: {depends}");
    }
    let tree = run(
        Command::new("apt-cache").args([
            "depends",
            "--recurse",
            "--no-recommends",
            "--no-suggests",
            "--no-conflicts",
            "--no-breaks",
            "--no-replaces",
            "--no-enhances",
            PACKAGE,
        ]),
        "apt-cache depends",
    )?;
    let pulled: std::collections::HashSet<String> = text(&tree)
        .lines()
        .map(|l| l.trim().trim_start_matches('|').rsplit(": ").next().unwrap_or("").trim().to_owned())
        .map(|n| n.split(':').next().unwrap_or("").to_owned())
        .collect();
    for program in [APP, CLI] {
        let out = run(Command::new("ldd").arg(program), "ldd")?;
        for line in text(&out).lines() {
            ensure!(!line.contains("not found"), "{program} needs a library that is not there: {line}");
            let Some(path) = line.split(" => ").nth(1).and_then(|r| r.split(" (").next()) else { continue };
            let owner = owner_of(Path::new(path.trim()))?;
            ensure!(
                pulled.contains(&owner),
                "{program} loads {path} of {owner}, which the package's dependencies do not bring: {depends}"
            );
        }
    }
    Ok(())
}

/// The package that installed `lib` (as itself, or under /usr on a merged-/usr system).
fn owner_of(lib: &Path) -> Result<String> {
    let real = lib.canonicalize()?;
    let mut candidates = vec![lib.to_owned(), real.clone()];
    for p in [lib, real.as_path()] {
        if let Ok(rest) = p.strip_prefix("/usr") {
            candidates.push(Path::new("/").join(rest));
        } else {
            candidates.push(Path::new("/usr").join(p.strip_prefix("/").unwrap_or(p)));
        }
    }
    for c in &candidates {
        let out = Command::new("dpkg-query").arg("-S").arg(c).output()?;
        if out.status.success() {
            let line = text(&out);
            let pkg = line.split(": ").next().unwrap_or("").split(':').next().unwrap_or("").to_owned();
            if !pkg.is_empty() {
                return Ok(pkg);
            }
        }
    }
    bail!("no package owns {}", lib.display())
}

async fn in_the_window(app: &DesktopApp, home: &Home) -> Result<()> {
    let row = format!("[data-testid=roster-row][data-session-id='{SESSION}']");
    app.wait_for("the user's session in the roster", WAIT, || async { Ok(app.count(&row).await? == 1) }).await?;
    app.click("[data-testid=page-settings]").await?;
    let status = format!("[data-testid=hook-status][data-root='{}']", home.config.display());
    app.wait_for("the hooks' state", WAIT, || async { Ok(app.count(&status).await? == 1) }).await?;
    app.click("[data-testid=hooks-install]").await?;
    let installed = format!("{status}[data-installed=true]");
    app.wait_for("hooks installed", WAIT, || async { Ok(app.count(&installed).await? == 1) }).await?;
    let settings: Value = serde_json::from_slice(&std::fs::read(home.settings())?)?;
    let commands: Vec<&str> = settings["hooks"]
        .as_object()
        .context("no hooks")?
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|g| g["hooks"].as_array())
        .flatten()
        .filter_map(|h| h["command"].as_str())
        .collect();
    let ours: Vec<&&str> = commands.iter().filter(|c| c.contains("--installed-by=mimesis")).collect();
    ensure!(!ours.is_empty(), "no hooks of ours: {commands:?}");
    ensure!(
        ours.iter().all(|c| c.starts_with(&format!("{CLI} hook --data-dir {} ", home.data.display()))),
        "the hooks do not run the packaged CLI: {ours:?}"
    );
    ensure!(commands.contains(&"notify-send done"), "the user's own hook is gone: {commands:?}");

    app.click("input[data-field='desktop.startAtLogin']").await?;
    app.click("[data-testid=settings-save]").await?;
    let entry = home.xdg_config.join("autostart/mimesis.desktop");
    app.wait_for("the autostart entry", WAIT, || async { Ok(entry.is_file()) }).await?;
    let text = std::fs::read_to_string(&entry)?;
    ensure!(text.contains(&format!("\nExec={APP} --hidden\n")), "the entry does not start the installed app: {text}");
    Ok(())
}
