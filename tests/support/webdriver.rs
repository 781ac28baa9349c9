//! The built desktop app, driven through its real webview: `tauri-driver` (which starts
//! WebKitWebDriver and the app) under Xvfb, and a WebDriver client (fantoccini) over plain
//! HTTP on loopback.
//!
//! The app binary is not rebuilt here: `cargo build -p mimesis-desktop` first (the test
//! command does). With no `$DISPLAY`, a private Xvfb is started through `xvfb-run -a`.
//! [`DesktopApp::launch_in_session`] also gives the app a private D-Bus session bus (and,
//! if asked, a real notification server, dunst), so single-instance names, notifications
//! and their clicks are real and never reach the developer's own desktop.
//! Everything runs in its own process group and is killed when [`DesktopApp`] drops.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// The workspace root (this crate lives in `<root>/tests`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned()
}

/// How many trims the WebKit process `pid` has done (crates/webkit-trim: its thread's name,
/// `mimesis-trim 2`), or nothing when it has no such thread.
pub fn trims_done(pid: u32) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks.flatten().find_map(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        let rest = comm.trim().strip_prefix("mimesis-trim")?;
        if rest.is_empty() { Some(0) } else { rest.trim().parse().ok() }
    })
}

/// The desktop binary: `$MIMESIS_DESKTOP_BIN`, else `<root>/target/debug/mimesis-desktop`.
pub fn app_binary() -> Result<PathBuf> {
    let p = std::env::var_os("MIMESIS_DESKTOP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/debug/mimesis-desktop"));
    if !p.is_file() {
        bail!("the desktop app is not built at {}: run `cargo build -p mimesis-desktop` first", p.display());
    }
    Ok(p)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        dirs.push(home.join("bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Two free ports on loopback, told apart: both are held until both are chosen (a port
/// given back before the second is asked for may be given again).
fn free_ports() -> Result<(u16, u16)> {
    let a = std::net::TcpListener::bind("127.0.0.1:0")?;
    let b = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// What runs next to the app in [`DesktopApp::launch_in_session`].
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Start dunst, a real notification server, on the private bus and display.
    pub notification_server: bool,
}

/// The display and session bus the app runs on, to run more programs next to it
/// (a second instance, `dunstctl`).
#[derive(Clone, Debug, Default)]
pub struct DesktopSession {
    pub display: String,
    pub bus: String,
    /// Xvfb's authority file, when `xvfb-run` made the display.
    pub xauthority: String,
    /// Working folder of the session (the dunst config lives here).
    dir: Option<PathBuf>,
}

impl DesktopSession {
    /// The environment variables that put a program on this display and bus.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("DISPLAY", self.display.clone()), ("DBUS_SESSION_BUS_ADDRESS", self.bus.clone())];
        if !self.xauthority.is_empty() {
            env.push(("XAUTHORITY", self.xauthority.clone()));
        }
        env
    }

    /// Runs `dunstctl args…` against this session's notification server.
    pub fn dunstctl(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("dunstctl").args(args).envs(self.env()).stdin(Stdio::null()).output()?;
        if !out.status.success() {
            bail!("dunstctl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Clicks the action labelled `label` of the newest notification that offers it, as a
    /// user does through dunst's context menu (its menu program is a script that picks the
    /// entry by label).
    pub fn choose_action(&self, label: &str) -> Result<()> {
        let dir = self.dir.as_ref().context("no notification server in this session")?;
        std::fs::write(dir.join("choice"), label)?;
        self.dunstctl(&["context"]).map(|_| ())
    }

    /// What dunst printed for each notification it received (`dunst -print`).
    pub fn notifications_log(&self) -> String {
        self.dir.as_ref().and_then(|d| std::fs::read_to_string(d.join("dunst.log")).ok()).unwrap_or_default()
    }
}

/// The folders an app under test runs with, in a temporary folder named `<prefix>…`:
/// Claude Code's config (`projects/` made), Mimesis's data, and a project to run agents in.
pub struct AppFolders {
    _dir: tempfile::TempDir,
    pub config: PathBuf,
    pub data: PathBuf,
    pub project: PathBuf,
}

impl AppFolders {
    pub fn new(prefix: &str) -> Result<AppFolders> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let base = dir.path().canonicalize()?;
        let (config, data, project) = (base.join("claude"), base.join("data"), base.join("project"));
        for d in [&config.join("projects"), &data, &project] {
            std::fs::create_dir_all(d)?;
        }
        Ok(AppFolders { _dir: dir, config, data, project })
    }
}

/// Processes whose working folder is `dir` (the agents the app ran there).
pub fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if std::fs::read_link(e.path().join("cwd")).ok().as_deref() == Some(dir) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    found
}

/// `roots` and every process they started, and those started, from one snapshot of the table.
pub fn with_descendants(roots: Vec<u32>, stats: &[mimesis_os::procs::Stat]) -> Vec<u32> {
    let mut found = roots;
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        let children: Vec<u32> =
            stats.iter().filter(|s| s.ppid == parent && !found.contains(&s.pid)).map(|s| s.pid).collect();
        found.extend(children);
        i += 1;
    }
    found
}

/// A running desktop app with a WebDriver session on it.
pub struct DesktopApp {
    pub client: Client,
    driver: Child,
    /// Set by [`DesktopApp::launch_in_session`].
    pub session: Option<DesktopSession>,
    _session_dir: Option<tempfile::TempDir>,
    watchdog: Watchdog,
    /// Stops the driver's group if this process dies without reaping it.
    orphans: Option<OrphanGuard>,
    /// The desktop binary this runs.
    app: PathBuf,
}

/// Longer than any one app of a test or benchmark runs (`$MIMESIS_TEST_APP_LIMIT_SECS`).
const APP_LIMIT: Duration = Duration::from_secs(600);

/// Stops the driver's process group (WebKitWebDriver and the app) once the app has run
/// longer than any test needs: a WebDriver command that is never answered (the client has
/// no timeout of its own) then fails with the connection, instead of holding the run.
/// Disarmed (its channel closed, which wakes its thread at once) before the group is reaped.
struct Watchdog {
    disarm: Option<std::sync::mpsc::Sender<()>>,
}

impl Watchdog {
    fn start(pgid: i32) -> Watchdog {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let limit = std::env::var("MIMESIS_TEST_APP_LIMIT_SECS")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map_or(APP_LIMIT, Duration::from_secs);
        let watch = move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("the app ran for over {limit:?}: stopping it and its WebDriver");
                // SAFETY: signalling our own child's process group, not reaped yet (the
                // watchdog is disarmed before it is).
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
        };
        if let Err(e) = std::thread::Builder::new().name("app-watchdog".into()).spawn(watch) {
            eprintln!("no watchdog for the app: {e}");
        }
        Watchdog { disarm: Some(tx) }
    }

    fn disarm(&mut self) {
        self.disarm.take();
    }
}

/// Stops the driver's process group (WebKitWebDriver, the app, WebKit's processes) when the
/// test's process ends without reaping it: a SIGKILL (a timeout's, a developer's) runs no
/// `Drop`, and the whole tree went on running. A shell outside the group reads a pipe whose
/// only writer is this process (its end is closed on exec in every other child) and at its
/// end of file stops the group: SIGTERM (the app quits as from the tray, its own children
/// with it), then SIGKILL to what is left after 3 s. Disarmed before the group is reaped, so
/// that it never signals a group id that could be someone else's by then.
pub struct OrphanGuard {
    shell: Option<Child>,
    _writer: std::io::PipeWriter,
}

/// The guard's shell: `$1` is the group's id.
const ORPHAN_SCRIPT: &str = "read -r _ ; kill -TERM -\"$1\" 2>/dev/null || exit 0; \
     for i in $(seq 30); do kill -0 -\"$1\" 2>/dev/null || exit 0; sleep 0.1; done; kill -KILL -\"$1\" 2>/dev/null";

impl OrphanGuard {
    /// Guards the process group `pgid`, a group this process started. `None` (said on
    /// stderr) when no shell could be started: the test runs unguarded, as before.
    pub fn start(pgid: i32) -> Option<OrphanGuard> {
        match Self::start_with(pgid) {
            Ok((shell, writer)) => Some(OrphanGuard { shell: Some(shell), _writer: writer }),
            Err(e) => {
                eprintln!("no guard for the app's processes if this test is killed: {e}");
                None
            }
        }
    }

    /// The shell, and the pipe's writer that holds it back.
    fn start_with(pgid: i32) -> Result<(Child, std::io::PipeWriter)> {
        let (reader, writer) = std::io::pipe()?;
        let shell = Command::new("sh")
            .args(["-c", ORPHAN_SCRIPT, "sh", &pgid.to_string()])
            .stdin(reader)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start the orphan guard's shell")?;
        Ok((shell, writer))
    }

    fn disarm(&mut self) {
        if let Some(mut shell) = self.shell.take() {
            let _ = shell.kill();
            let _ = shell.wait();
        }
    }
}

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// Keeps dunst's notifications on screen until the test acts on them, and leaves the
/// developer's own dunst config out.
const DUNSTRC: &str = "[global]\n    follow = none\n[urgency_low]\n    timeout = 0\n\
[urgency_normal]\n    timeout = 0\n[urgency_critical]\n    timeout = 0\n";

impl DesktopApp {
    /// Starts the app with `args` and `env` and connects to its webview.
    pub async fn launch(args: &[String], env: &[(&str, OsString)]) -> Result<DesktopApp> {
        Self::start(app_binary()?, args, env, None).await
    }

    /// Like [`DesktopApp::launch`], for the desktop binary at `app` (two builds compared:
    /// tests/window_bench.rs).
    pub async fn launch_binary(app: &Path, args: &[String], env: &[(&str, OsString)]) -> Result<DesktopApp> {
        Self::start(app.to_owned(), args, env, None).await
    }

    /// Like [`DesktopApp::launch`], on a private D-Bus session bus (`dbus-run-session`),
    /// with a notification server if asked.
    pub async fn launch_in_session(
        args: &[String],
        env: &[(&str, OsString)],
        opts: SessionOptions,
    ) -> Result<DesktopApp> {
        Self::start(app_binary()?, args, env, Some(opts)).await
    }

    /// Like [`DesktopApp::launch_in_session`], for the desktop binary at `app` (an
    /// installed one: tests/package.rs).
    pub async fn launch_binary_in_session(
        app: &Path,
        args: &[String],
        env: &[(&str, OsString)],
        opts: SessionOptions,
    ) -> Result<DesktopApp> {
        Self::start(app.to_owned(), args, env, Some(opts)).await
    }

    async fn start(
        app: PathBuf,
        args: &[String],
        env: &[(&str, OsString)],
        session: Option<SessionOptions>,
    ) -> Result<DesktopApp> {
        let driver_bin = find_on_path("tauri-driver")
            .context("tauri-driver is not installed: `cargo install tauri-driver --locked`")?;
        if find_on_path("WebKitWebDriver").is_none() && !Path::new("/usr/bin/WebKitWebDriver").exists() {
            bail!("WebKitWebDriver is missing: install the Debian package webkit2gtk-driver");
        }
        let (port, native) = free_ports()?;
        let driver_args = ["--port".to_owned(), port.to_string(), "--native-port".to_owned(), native.to_string()];
        let mut session_dir = None;
        let mut program: Vec<OsString> = Vec::new();
        if std::env::var_os("DISPLAY").is_none() {
            program.extend(["xvfb-run", "-a", "-s", "-screen 0 1440x900x24 -nolisten tcp"].map(OsString::from));
        }
        if let Some(opts) = &session {
            if find_on_path("dbus-run-session").is_none() {
                bail!("dbus-run-session is missing: install the Debian package dbus");
            }
            if opts.notification_server && find_on_path("dunst").is_none() {
                bail!("dunst is missing: install the Debian package dunst");
            }
            let dir = tempfile::tempdir()?;
            // The context menu's program: picks the action whose label the test wrote.
            let menu = dir.path().join("menu.sh");
            std::fs::write(&menu, "#!/bin/sh\ngrep -m1 -F \"#$(cat \"$(dirname \"$0\")/choice\") (\"\n")?;
            std::fs::set_permissions(&menu, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
            let rc = DUNSTRC.replacen("[global]\n", &format!("[global]\n    dmenu = {}\n", menu.display()), 1);
            std::fs::write(dir.path().join("dunstrc"), rc)?;
            // The script notes where the session is, starts the notification server and
            // becomes tauri-driver; all of it stays in the process group killed at the end.
            let mut script = String::from(
                "printf '%s\\n%s\\n%s\\n' \"$DISPLAY\" \"$DBUS_SESSION_BUS_ADDRESS\" \"$XAUTHORITY\" > \"$1/env.tmp\"\n\
                 mv \"$1/env.tmp\" \"$1/env\"\n",
            );
            if opts.notification_server {
                script.push_str("dunst -config \"$1/dunstrc\" -print > \"$1/dunst.log\" 2>&1 &\n");
                // Wait until it owns its name: notifications sent before would start a second
                // dunst through D-Bus activation, with the user's config.
                script.push_str(
                    "for i in $(seq 200); do dbus-send --session --print-reply --dest=org.freedesktop.DBus \
                     /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications \
                     2>/dev/null | grep -q 'boolean true' && break; sleep 0.05; done\n",
                );
            }
            script.push_str("shift; exec \"$@\"\n");
            program.extend(["dbus-run-session", "--", "sh", "-c"].map(OsString::from));
            program.push(script.into());
            program.push("sh".into());
            program.push(dir.path().as_os_str().to_owned());
            session_dir = Some(dir);
        }
        program.push(driver_bin.into_os_string());
        program.extend(driver_args.map(OsString::from));
        let mut cmd = Command::new(&program[0]);
        cmd.args(&program[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0);
        let driver = cmd.spawn().context("cannot start tauri-driver")?;
        let orphans = OrphanGuard::start(driver.id() as i32);
        let mut this = PartialApp { driver: Some(driver), orphans };
        let caps = json!({"browserName": "wry", "tauri:options": {"application": app, "args": args}});
        let caps = caps.as_object().cloned().unwrap_or_default();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(45);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector).capabilities(caps.clone()).connect(&url).await {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    tracing_note(&format!("waiting for tauri-driver: {e}"));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => bail!("cannot open a WebDriver session on the app: {e}"),
            }
        };
        let session = match &session_dir {
            Some(dir) => {
                let text =
                    std::fs::read_to_string(dir.path().join("env")).context("the desktop session did not start")?;
                let mut lines = text.lines();
                Some(DesktopSession {
                    display: lines.next().unwrap_or_default().to_owned(),
                    bus: lines.next().unwrap_or_default().to_owned(),
                    xauthority: lines.next().unwrap_or_default().to_owned(),
                    dir: Some(dir.path().to_owned()),
                })
            }
            None => None,
        };
        let driver = this.driver.take().expect("driver");
        let orphans = this.orphans.take();
        let watchdog = Watchdog::start(driver.id() as i32);
        Ok(DesktopApp { client, driver, session, _session_dir: session_dir, watchdog, orphans, app })
    }

    /// Number of elements matching `css`, counted in the page in one go. (Not WebDriver's
    /// find-all: it makes a handle of each node it found, and fails with "Stale element found
    /// when trying to create the node handle" when the page replaced one meanwhile.)
    pub async fn count(&self, css: &str) -> Result<usize> {
        let script = format!("return document.querySelectorAll({}).length;", serde_json::to_string(css)?);
        let n = self.js(&script).await.with_context(|| format!("counting {css}"))?;
        n.as_u64().map(|n| n as usize).with_context(|| format!("counting {css}: the page said {n}"))
    }

    /// The element `css` names, once it is there (waited for up to [`PRESENCE`]: a dialog or
    /// field an action just asked for may be drawn a moment after the action's answer).
    pub async fn find(&self, css: &str) -> Result<fantoccini::elements::Element> {
        let start = Instant::now();
        loop {
            match bounded("finding an element", self.client.find(Locator::Css(css))).await? {
                Ok(el) => return Ok(el),
                Err(e) if e.is_no_such_element() && start.elapsed() < PRESENCE => {}
                Err(e) => return Err(anyhow::Error::from(e).context(format!("finding {css}"))),
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Finds the element `css` names (waiting for it as [`Self::find`] does) and clicks it.
    /// The page may replace the node between the find and the click (a row that moved to
    /// another group, a bar re-rendered by an update); a user's click lands on whatever is
    /// there, so the click is tried again on the new node, a few times.
    pub async fn click(&self, css: &str) -> Result<()> {
        use fantoccini::error::{CmdError, ErrorStatus};
        let mut last = None;
        for _ in 0..10 {
            let el = self.find(css).await?;
            match bounded("a click", el.click()).await? {
                Ok(()) => return Ok(()),
                // Only a node that went away before the click is tried again (the click did
                // not happen); any other error is the test's to see. WebKitWebDriver sends
                // some errors with an empty message: the status says what happened.
                Err(CmdError::Standard(w))
                    if matches!(w.error, ErrorStatus::StaleElementReference | ErrorStatus::NoSuchElement) =>
                {
                    last = Some(anyhow::anyhow!("{:?}: {}", w.error, w.message))
                }
                Err(CmdError::Standard(w)) => {
                    bail!("clicking {css}: the webdriver said {:?}: {:?}", w.error, w.message)
                }
                Err(e) => return Err(anyhow::Error::from(e).context(format!("clicking {css}"))),
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("no click")).context(format!("clicking {css}")))
    }

    /// Clicks the roster row `css` names until it is the open one (see [`Self::click_until`]).
    pub async fn open_row(&self, css: &str) -> Result<()> {
        let open = format!("{css}.open");
        self.click_until(css, "the row open", || async { Ok(self.count(&open).await? == 1) }).await
    }

    /// Clicks `css` until `done` holds (5 s after each click), three clicks at most, then
    /// waits for it up to 30 s more. A click is pressed and released at the element's place,
    /// read just before: an element that has just appeared may still be laid out (a row
    /// measured and placed under its group, a header that grows with the text it just got)
    /// and the click lands beside it. A user clicks again, and so does this, saying so in the
    /// test's output, but only on an element still there and enabled: one that went or was
    /// disabled took the click, and its effect is only slow (a loaded machine).
    pub async fn click_until<F, Fut>(&self, css: &str, what: &str, mut done: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool>>,
    {
        let rect = format!(
            "const e = document.querySelector({css:?}); if (!e || e.disabled) return null; \
             const r = e.getBoundingClientRect(); \
             return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];"
        );
        let mut before = Value::Null;
        for n in 1..=3 {
            if n > 1 {
                let now = self.js(&rect).await?;
                if now.is_null() {
                    eprintln!("{css}: not {what} after click {}, and gone or disabled: waiting on", n - 1);
                    break;
                }
                eprintln!("{css}: not {what} after click {}; clicking again (it was at {before}, is at {now})", n - 1);
            }
            before = self.js(&rect).await.unwrap_or_default();
            self.click(css).await?;
            if self.wait_for(what, Duration::from_secs(5), &mut done).await.is_ok() {
                return Ok(());
            }
        }
        self.wait_for(what, Duration::from_secs(30), &mut done)
            .await
            .with_context(|| format!("{css} was clicked and is still not {what}"))
            .map(drop)
    }

    /// Waits for `found` while the history search's field `css` holds its query, asking the
    /// query again (see [`Self::ask_again`]) while it finds nothing yet (an index still being
    /// built, a record not read yet). Asked again only once no machine's answer is pending
    /// and a while after the last ask, the while doubling up to 4 s: the field asks 150 ms
    /// after the last key, and an answer to a query asked again is dropped, so asking at every
    /// poll would keep any answer from ever showing.
    pub async fn search_until<F, Fut>(&self, css: &str, what: &str, timeout: Duration, mut found: F) -> Result<Duration>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool>>,
    {
        let start = Instant::now();
        let (mut asked, mut gap) = (start, Duration::from_secs(1));
        loop {
            if found().await? {
                return Ok(start.elapsed());
            }
            if start.elapsed() >= timeout {
                bail!("timed out after {timeout:?} waiting for {what}");
            }
            let pending = self.count("[data-testid=history-machine]:not(.failed)").await?;
            if pending == 0 && asked.elapsed() >= gap {
                self.ask_again(css).await?;
                asked = Instant::now();
                gap = (gap * 2).min(Duration::from_secs(4));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Types a space and takes it back in the field `css` (found afresh), so a field that runs
    /// its query as typed asks again. Not Enter: a result that came in since the test looked
    /// would be opened by it, and the field gone under the test.
    pub async fn ask_again(&self, css: &str) -> Result<()> {
        use fantoccini::key::Key;
        let field = self.find(css).await?;
        bounded("typing", field.send_keys(" ")).await??;
        bounded("typing", field.send_keys(&char::from(Key::Backspace).to_string())).await??;
        Ok(())
    }

    /// Runs a script in the page and returns its value.
    pub async fn js(&self, script: &str) -> Result<Value> {
        Ok(bounded("a script in the page", self.client.execute(script, vec![])).await??)
    }

    /// The text of the first element `css` names ("" when there is none).
    pub async fn text_of(&self, css: &str) -> Result<String> {
        let v =
            self.js(&format!("const e = document.querySelector(\"{css}\"); return e ? e.textContent : '';")).await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// What the embedded terminal shows ("" when none is open).
    pub async fn terminal_text(&self) -> Result<String> {
        let v = self
            .js("const t = document.querySelector('[data-testid=terminal]'); \
                 return t && t.terminalText ? t.terminalText() : '';")
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Opens "New session", types the folder and starts it (a supervised session in the
    /// embedded terminal); returns the new session's id.
    pub async fn start_session(&self, cwd: &Path) -> Result<String> {
        self.wait_for("the roster to load", Duration::from_secs(20), || async {
            Ok(self.count("[data-testid=new-session-button]").await? == 1)
        })
        .await?;
        self.click("[data-testid=new-session-button]").await?;
        let input = self.find("[data-testid=new-session-cwd]").await?;
        input.clear().await?;
        input.send_keys(&cwd.to_string_lossy()).await?;
        // Start is offered once the folder was checked (it exists).
        self.wait_for("the folder checked", Duration::from_secs(10), || async {
            Ok(self.count("[data-testid=new-session-start]:not([disabled])").await? == 1)
        })
        .await?;
        self.click("[data-testid=new-session-start]").await?;
        self.wait_for("the terminal to attach", Duration::from_secs(15), || async {
            Ok(self.count("[data-testid=terminal][data-attached=true]").await? == 1)
        })
        .await?;
        let id = self.js("return document.querySelector('[data-testid=terminal]').dataset.sessionId;").await?;
        id.as_str().map(str::to_owned).context("the terminal names no session")
    }

    /// Polls `cond` every 25 ms until it holds or `timeout` passes.
    pub async fn wait_for<F, Fut>(&self, what: &str, timeout: Duration, mut cond: F) -> Result<Duration>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool>>,
    {
        let start = Instant::now();
        loop {
            if cond().await? {
                return Ok(start.elapsed());
            }
            if start.elapsed() >= timeout {
                bail!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The app's processes: the app binary started by the driver and everything it started
    /// (WebKit's web and network processes), found through `/proc`.
    pub fn app_processes(&self) -> Vec<u32> {
        let app = self.app.canonicalize().unwrap_or_else(|_| self.app.clone());
        let stats = mimesis_os::procs::all();
        let is_app = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_deref() == Some(app.as_path());
        let apps = stats.iter().filter(|s| s.pgrp == self.driver.id() && is_app(s.pid)).map(|s| s.pid).collect();
        with_descendants(apps, &stats)
    }

    /// Saves a PNG screenshot of the window, when pictures are asked for
    /// (`MIMESIS_E2E_SHOTS=1`); see [`DesktopApp::failure_screenshot`] for the one a failed
    /// test takes.
    ///
    /// A screenshot is a picture for people, never what a test asserts, and taking one is
    /// not free: WebKitWebDriver now and then never answers one, and under load (seen with a
    /// dialog up in the middle of `webview_pty`) the driver then answered nothing more, so
    /// the test failed on its next step. A test's own run takes none unless asked.
    pub async fn screenshot(&self, path: &Path) -> Result<()> {
        if std::env::var_os("MIMESIS_E2E_SHOTS").is_none_or(|v| v.is_empty() || v == "0") {
            return Ok(());
        }
        self.failure_screenshot(path).await
    }

    /// Saves a PNG screenshot of the window whatever the environment (a test that failed:
    /// what the window showed). One that gives no answer within 20 s is said and skipped.
    /// The page is changed just before (an attribute on `<html>`), so a rendering update is
    /// on its way when the picture is asked for.
    pub async fn failure_screenshot(&self, path: &Path) -> Result<()> {
        let _ = self.js("document.documentElement.dataset.shot = String(Date.now()); return null;").await;
        let png = match tokio::time::timeout(Duration::from_secs(20), self.client.screenshot()).await {
            Ok(png) => png?,
            Err(_) => {
                eprintln!("no screenshot {}: the WebDriver gave no answer within 20 s", path.display());
                return Ok(());
            }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Ends the WebDriver session (the app quits) and stops the driver. The session's end is
    /// waited for 15 s at most (once, WebKitWebDriver never answered it): the driver's process
    /// group is stopped either way.
    /// Quits the app as a user does (SIGTERM: the tray's Quit), waits up to `within` for it
    /// to finish (it stores what it has not stored yet on the way out), then ends the
    /// session as [`DesktopApp::close`] does. Without it the group's SIGKILL can cut that short.
    pub async fn quit(self, within: Duration) -> Result<()> {
        if let Some(&pid) = self.app_processes().first() {
            // SAFETY: signalling the app this session started (a child of its driver).
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + within;
            // Gone, or a zombie its driver has not reaped yet.
            while mimesis_os::procs::stat(pid).is_some_and(|s| s.state != 'Z') {
                if Instant::now() > deadline {
                    eprintln!("the app did not quit within {within:?} of SIGTERM");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        self.close().await
    }

    pub async fn close(mut self) -> Result<()> {
        let client = self.client.clone();
        // (The driver is reaped below: the watchdog must not signal its group after.)
        self.watchdog.disarm();
        if tokio::time::timeout(Duration::from_secs(15), client.close()).await.is_err() {
            eprintln!("the WebDriver session did not end within 15 s; stopping the driver");
        }
        self.orphans.take();
        kill_group(&mut self.driver);
        Ok(())
    }
}

impl Drop for DesktopApp {
    fn drop(&mut self) {
        self.watchdog.disarm();
        self.orphans.take();
        kill_group(&mut self.driver);
    }
}

/// How long [`DesktopApp::find`] waits for an element to be there.
const PRESENCE: Duration = Duration::from_secs(10);

/// How long one WebDriver command may take: the page answers in milliseconds, and a
/// command WebKitWebDriver never answers must fail the test, not hold the run.
const COMMAND_BOUND: Duration = Duration::from_secs(30);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> Result<T> {
    tokio::time::timeout(COMMAND_BOUND, f)
        .await
        .map_err(|_| anyhow::anyhow!("{what}: the WebDriver gave no answer within {COMMAND_BOUND:?}"))
}

/// Owns the driver until the WebDriver session exists, so a failed start leaves nothing.
struct PartialApp {
    driver: Option<Child>,
    orphans: Option<OrphanGuard>,
}

impl Drop for PartialApp {
    fn drop(&mut self) {
        if let Some(mut guard) = self.orphans.take() {
            guard.disarm();
        }
        if let Some(d) = &mut self.driver {
            kill_group(d);
        }
    }
}

fn kill_group(child: &mut Child) {
    let pgid = child.id() as i32;
    // SAFETY: signalling our own child's process group.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    // SAFETY: as above; whatever is left of the group goes.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

fn tracing_note(msg: &str) {
    if std::env::var_os("MIMESIS_TEST_VERBOSE").is_some() {
        eprintln!("{msg}");
    }
}

/// axe-core's violations on the page as it is, one line each (`view: rule (impact): help — targets`).
pub async fn axe_violations(app: &DesktopApp, view: &str) -> Result<Vec<String>> {
    let axe = std::fs::read_to_string(workspace_root().join("ui/node_modules/axe-core/axe.min.js"))
        .context("axe-core (ui/package.json devDependencies; scripts/setup.sh installs it)")?;
    // Run as the body of a WebDriver script, not as a <script> in the page.
    app.client.execute(&format!("{axe}\n;window.axe = window.axe || axe; return null;"), vec![]).await?;
    let found = app
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             window.axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v => \
               v.id + ' (' + v.impact + '): ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))) \
             .catch(e => done(['axe failed: ' + e]));",
            vec![],
        )
        .await?;
    Ok(found
        .as_array()
        .context("violations")?
        .iter()
        .filter_map(Value::as_str)
        .map(|v| format!("{view}: {v}"))
        .collect())
}
