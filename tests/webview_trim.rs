//! WebKit's web and network processes give back the pages only their launch used (the
//! library the app has them preload, crates/webkit-trim), through the real webview: the
//! built desktop app started by WebDriver with `MIMESIS_WEBKIT_TRIM_AFTER_MS` shortened. Each
//! of the two processes runs the trim's one thread until it has trimmed; once it has ended,
//! the web process holds far fewer pages of files (its `RssFile`: WebKit's, JavaScriptCore's
//! and Mesa's code that only the launch ran), and the page still answers.
//!
//! Run: `npm run build` in ui/, `cargo build -p mimesis-desktop -p mimesis-webkit-trim`, then
//! `cargo test -p mimesis-tests --test e2e webview_trim::` (under Xvfb when there is no display).

use std::ffi::OsString;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_tests::webdriver::{AppFolders as Fixture, DesktopApp, app_binary};

/// When the trim runs after each process's start: the page is up well before, even under load
/// (the test needs to see the trim's thread waiting, and the pages the launch loaded).
const AFTER_MS: &str = "6000";

const T: Duration = Duration::from_secs(30);

/// The first of the app's processes whose `comm` (at most 15 bytes) starts with `name`.
fn webkit_process(app: &DesktopApp, name: &str) -> Option<u32> {
    app.app_processes()
        .into_iter()
        .find(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.starts_with(name)))
}

/// The process's resident pages of files, in kB (`RssFile` of /proc/<pid>/status).
fn rss_file_kb(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("RssFile:")).context("no RssFile")?;
    line.split_whitespace().nth(1).context("RssFile's value")?.parse().context("RssFile's value")
}

/// Whether the trim's thread runs in `pid` (it ends once it has trimmed).
fn trim_waits(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.flatten().any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "mimesis-trim"))
}

fn preload(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"LD_PRELOAD="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webkits_processes_give_back_their_launchs_pages() -> Result<()> {
    let fx = Fixture::new("mimesis-webview-trim-")?;
    let env: Vec<(&str, OsString)> = vec![
        ("MIMESIS_DATA_DIR", fx.data.clone().into_os_string()),
        ("CLAUDE_CONFIG_DIR", fx.config.clone().into_os_string()),
        ("MIMESIS_WEBKIT_TRIM_AFTER_MS", AFTER_MS.into()),
    ];
    let args = vec!["--config-dir".to_owned(), fx.config.to_string_lossy().into_owned()];
    let app = DesktopApp::launch(&args, &env).await?;
    let result = trimmed(&app).await;
    app.close().await?;
    result
}

async fn trimmed(app: &DesktopApp) -> Result<()> {
    let lib = app_binary()?.canonicalize()?.with_file_name("libmimesis_webkit_trim.so");
    ensure!(lib.is_file(), "no {} beside the app: `cargo build -p mimesis-webkit-trim`", lib.display());
    app.wait_for("the page (the empty roster)", T, || async { Ok(app.count("[data-testid=empty-state]").await? == 1) })
        .await?;
    let web = webkit_process(app, "WebKitWebProces").context("WebKit's web process among the app's")?;
    let network = webkit_process(app, "WebKitNetworkPr").context("WebKit's network process among the app's")?;
    for pid in [web, network] {
        let preload = preload(pid);
        ensure!(
            preload.split([' ', ':']).any(|p| p == lib.to_string_lossy()),
            "process {pid} preloads the trim library: LD_PRELOAD={preload:?}"
        );
        ensure!(trim_waits(pid), "the trim already ran in process {pid} before the page was up: raise AFTER_MS");
    }
    let before = rss_file_kb(web)?;
    app.wait_for("the trim in WebKit's web and network processes", T, || async {
        Ok(!trim_waits(web) && !trim_waits(network))
    })
    .await?;
    let after = rss_file_kb(web)?;
    eprintln!("WebKit's web process: {before} kB of files resident before the trim, {after} kB after");
    ensure!(after * 2 < before, "the web process kept its launch's file pages: {before} kB before, {after} kB after");
    // What runs again comes back from the page cache: the page still answers.
    ensure!(app.count("[data-testid=empty-state]").await? == 1, "the page after the trim");
    let alive = |pid: u32| mimesis_os::procs::stat(pid).is_some_and(|s| s.state != 'Z');
    ensure!(alive(web) && alive(network), "WebKit's processes run on after the trim");
    Ok(())
}
