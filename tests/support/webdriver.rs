//! The built desktop app, driven through its real webview: `tauri-driver` (which starts
//! WebKitWebDriver and the app) under Xvfb, and a WebDriver client (fantoccini) over plain
//! HTTP on loopback.
//!
//! The app binary is not rebuilt here: `cargo build -p mimesis-desktop` first (the test
//! command does). With no `$DISPLAY`, a private Xvfb is started through `xvfb-run -a`.
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

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A running desktop app with a WebDriver session on it.
pub struct DesktopApp {
    pub client: Client,
    driver: Child,
}

impl DesktopApp {
    /// Starts the app with `args` and `env` and connects to its webview.
    pub async fn launch(args: &[String], env: &[(&str, OsString)]) -> Result<DesktopApp> {
        let app = app_binary()?;
        let driver_bin = find_on_path("tauri-driver")
            .context("tauri-driver is not installed: `cargo install tauri-driver --locked`")?;
        if find_on_path("WebKitWebDriver").is_none() && !Path::new("/usr/bin/WebKitWebDriver").exists() {
            bail!("WebKitWebDriver is missing: install the Debian package webkit2gtk-driver");
        }
        let (port, native) = (free_port()?, free_port()?);
        let mut cmd = if std::env::var_os("DISPLAY").is_some() {
            Command::new(&driver_bin)
        } else {
            let mut c = Command::new("xvfb-run");
            c.args(["-a", "-s", "-screen 0 1440x900x24 -nolisten tcp"]).arg(&driver_bin);
            c
        };
        cmd.args(["--port", &port.to_string(), "--native-port", &native.to_string()])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0);
        let driver = cmd.spawn().context("cannot start tauri-driver")?;
        let mut this = PartialApp { driver: Some(driver) };
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
        Ok(DesktopApp { client, driver: this.driver.take().expect("driver") })
    }

    /// Number of elements matching `css`.
    pub async fn count(&self, css: &str) -> Result<usize> {
        Ok(self.client.find_all(Locator::Css(css)).await?.len())
    }

    /// Runs a script in the page and returns its value.
    pub async fn js(&self, script: &str) -> Result<Value> {
        Ok(self.client.execute(script, vec![]).await?)
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

    /// Saves a PNG screenshot of the window.
    pub async fn screenshot(&self, path: &Path) -> Result<()> {
        let png = self.client.screenshot().await?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Ends the WebDriver session (the app quits) and stops the driver.
    pub async fn close(mut self) -> Result<()> {
        let client = self.client.clone();
        let _ = client.close().await;
        kill_group(&mut self.driver);
        Ok(())
    }
}

impl Drop for DesktopApp {
    fn drop(&mut self) {
        kill_group(&mut self.driver);
    }
}

/// Owns the driver until the WebDriver session exists, so a failed start leaves nothing.
struct PartialApp {
    driver: Option<Child>,
}

impl Drop for PartialApp {
    fn drop(&mut self) {
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
