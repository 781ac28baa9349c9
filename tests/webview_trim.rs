//! WebKit's web and network processes give back the pages only their launch used (the
//! library the app has them preload, crates/webkit-trim), and so does the app (the same
//! thread, `mimesis_os::trim`), through the real webview: the built desktop app started by
//! WebDriver with `MIMESIS_WEBKIT_TRIM_AFTER_MS` and `MIMESIS_WEBKIT_TRIM_EVERY_MS`
//! shortened. Each of the two processes runs the trim's thread; once it has trimmed, the web
//! process holds far fewer pages of files (its `RssFile`: WebKit's, JavaScriptCore's and
//! Mesa's code that only the launch ran), and the page still answers. Use brings pages back
//! (Settings drawn); once the page is quiet again, they go again.
//!
//! Run: `npm run build` in ui/, `cargo build -p mimesis-desktop -p mimesis-webkit-trim`, then
//! `cargo test -p mimesis-tests --test e2e webview_trim::` (under Xvfb when there is no display).

use std::ffi::OsString;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use mimesis_tests::webdriver::{AppFolders as Fixture, DesktopApp, app_binary, trims_done};

/// When the trim runs after each process's start: the page is up well before, even under load
/// (the test needs to see the trim's thread waiting, and the pages the launch loaded).
const AFTER_MS: &str = "6000";
/// How often the thread looks whether to trim again (the app's default is a minute). Two
/// seconds: a period is quiet at a quarter of a percent of a core (5 ms here), and one of
/// WebKit's own wake-ups at rest (a collection, a timer) can take a few milliseconds on a slow
/// machine, which a one-second period (2.5 ms) cannot hold.
const EVERY_MS: &str = "2000";

const T: Duration = Duration::from_secs(30);

/// The first of the app's processes whose `comm` (at most 15 bytes) starts with `name`.
fn process_named(app: &DesktopApp, name: &str) -> Option<u32> {
    app.app_processes()
        .into_iter()
        .find(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.starts_with(name)))
}

/// The CPU time the process has used (all its threads, from `/proc/<pid>/task/*/schedstat`,
/// in nanoseconds), read from outside.
fn cpu_time(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// The process's resident pages of files, in kB (`RssFile` of /proc/<pid>/status).
fn rss_file_kb(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    mimesis_os::procs::status_kb(&status, "RssFile").context("no RssFile in kB")
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
        ("MIMESIS_WEBKIT_TRIM_EVERY_MS", EVERY_MS.into()),
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
    let web = process_named(app, "WebKitWebProces").context("WebKit's web process among the app's")?;
    let network = process_named(app, "WebKitNetworkPr").context("WebKit's network process among the app's")?;
    for pid in [web, network] {
        let preload = preload(pid);
        ensure!(
            preload.split([' ', ':']).any(|p| p == lib.to_string_lossy()),
            "process {pid} preloads the trim library: LD_PRELOAD={preload:?}"
        );
        ensure!(
            trims_done(pid) == Some(0),
            "the trim already ran in process {pid} before the page was up: raise AFTER_MS"
        );
    }
    let before = rss_file_kb(web)?;
    // (Read from /proc only while waiting: a script run in the page would be work of its own.)
    app.wait_for("the launch's trim in WebKit's web and network processes", T, || async {
        Ok(trims_done(web) == Some(1) && trims_done(network) == Some(1))
    })
    .await?;
    let after = rss_file_kb(web)?;
    eprintln!("WebKit's web process: {before} kB of files resident before the trim, {after} kB after");
    // The app trims itself too once its launch is over (the same thread, from
    // `release_when_sent`), and looks again after each spell of use as they do.
    let own = process_named(app, "mimesis-desktop").context("the app's own process")?;
    app.wait_for("the launch's trim in the app", T, || async { Ok(trims_done(own).is_some_and(|n| n >= 1)) }).await?;
    ensure!(after * 2 < before, "the web process kept its launch's file pages: {before} kB before, {after} kB after");
    // What runs again comes back from the page cache: the page still answers.
    ensure!(app.count("[data-testid=empty-state]").await? == 1, "the page after the trim");

    // Use: a view not drawn since brings WebKit's layout and paint code back.
    let at_trim = cpu_time(web);
    app.click("[data-testid=page-settings]").await.context("open Settings")?;
    app.wait_for("Settings", T, || async { Ok(app.count("[data-testid=settings-view]").await? == 1) }).await?;
    let used = rss_file_kb(web)?;
    eprintln!("after Settings were drawn: {used} kB");
    ensure!(used > after + 4096, "drawing Settings brought back no pages to trim: {after} kB before, {used} kB after");
    // (Drawing Settings took 70–140 ms of the web process's CPU here, under the 200 ms of work that
    // counts as use: the pages that came back are use enough by themselves, `Retrim::REGROWN_KB`.)
    eprintln!("drawing Settings took {:?} of the web process's CPU", cpu_time(web).saturating_sub(at_trim));
    // Once the page is quiet for a period, the thread trims again (the network process, which
    // did next to nothing, does not). While waiting, what the web process uses each second is
    // kept, to say why if it never trims.
    let per_second = std::cell::RefCell::new((Vec::new(), std::time::Instant::now(), cpu_time(web)));
    let waited = app
        .wait_for("a trim after the page was used", 2 * T, || async {
            let mut s = per_second.borrow_mut();
            if s.1.elapsed() >= Duration::from_secs(1) {
                let cpu = cpu_time(web);
                let used = cpu.saturating_sub(s.2).as_millis();
                s.0.push(used);
                (s.1, s.2) = (std::time::Instant::now(), cpu);
            }
            Ok(trims_done(web).is_some_and(|n| n >= 2))
        })
        .await;
    if let Err(e) = waited {
        bail!(
            "{e}: the web process used {:?} ms of CPU in each second since (a period of {EVERY_MS} ms is quiet at \
             a quarter of a percent of a core)",
            per_second.borrow().0
        );
    }
    let again = rss_file_kb(web)?;
    eprintln!("after the page was quiet again: {again} kB");
    ensure!(again * 2 < used, "the second trim kept the pages use brought back: {used} kB before, {again} kB after");
    ensure!(app.count("[data-testid=settings-view]").await? == 1, "the page after the second trim");
    let alive = |pid: u32| mimesis_os::procs::stat(pid).is_some_and(|s| s.state != 'Z');
    ensure!(alive(web) && alive(network), "WebKit's processes run on after the trim");
    Ok(())
}
