//! Other machines at scale (issue 13): a benchmark, not a test (every case is `#[ignore]`;
//! `scripts/bench remote` runs them on a release build). A real sshd on loopback serves the
//! "remote" machines (`support::sshd`), each an ssh alias with its own config root; the
//! helper is put in place beforehand as `--install-helper` would.
//!
//! - **first remote roster**: `mimesis ls --json --host big --no-local` on a 2,000-session
//!   corpus of today's shape (`$MIMESIS_BENCH_CORPUS`), cold (the remote's first index: an
//!   empty data dir there) and warm, against the same `ls --json` run locally, alternating,
//!   `$MIMESIS_BENCH_RUNS` times (default 5); medians.
//! - **bytes on the wire per appended line**: `serve --stdio` over ssh, 200 lines appended
//!   one by one to a session there (each waited for); bytes received per line against the
//!   line's own size, and the append → event latency over ssh.
//! - **ten machines at once**: the desktop app; ten machines (one sshd, ten config roots of
//!   200 sessions) added at the same moment from the page; time until all ten are live with
//!   every row on screen, and the page's frame gaps meanwhile (p95, max): is the window
//!   still responsive.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_tests::sshd::Sshd;
use mimesis_tests::webdriver::DesktopApp;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The CLI under test (`$MIMESIS_BENCH_BIN`, the release build `scripts/bench` makes).
fn mimesis() -> Result<PathBuf> {
    let p =
        PathBuf::from(std::env::var_os("MIMESIS_BENCH_BIN").context("set MIMESIS_BENCH_BIN (scripts/bench remote)")?);
    ensure!(p.is_file(), "{} is not built", p.display());
    Ok(p)
}

fn corpus() -> Result<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("MIMESIS_BENCH_CORPUS").context("set MIMESIS_BENCH_CORPUS")?);
    ensure!(dir.join("projects").is_dir(), "{} has no projects/", dir.display());
    Ok(dir.canonicalize()?)
}

/// Puts the helper where `--install-helper` would.
fn install_helper(data: &Path) -> Result<()> {
    let bin = data.join("bin");
    std::fs::create_dir_all(&bin)?;
    std::fs::copy(mimesis()?, bin.join("mimesis"))?;
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn timed_ls(args: &[&str], env: &[(&str, &Path)]) -> Result<(f64, usize)> {
    let mut c = Command::new(mimesis()?);
    c.args(args).stdin(Stdio::null()).stderr(Stdio::piped()).stdout(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let start = Instant::now();
    let out = c.output()?;
    let secs = start.elapsed().as_secs_f64();
    ensure!(out.status.success(), "mimesis {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok((secs, rows.as_array().map_or(0, Vec::len)))
}

#[test]
#[ignore = "a benchmark: scripts/bench remote"]
fn first_remote_roster_and_bytes_per_line() -> Result<()> {
    let corpus = corpus()?;
    let dir = tempfile::tempdir()?;
    let base = dir.path().canonicalize()?;
    let sshd = Sshd::start(&base.join("sshd"))?;
    let runs = env_num("MIMESIS_BENCH_RUNS", 5);
    let empty = base.join("local/.claude");
    std::fs::create_dir_all(&empty)?;

    // A: local `ls --json` on the corpus; B: cold remote; C: warm remote. A B C, A B C …
    let (mut local, mut cold, mut warm) = (vec![], vec![], vec![]);
    let mut counts = (0, 0, 0);
    for run in 0..runs {
        let data_local = base.join(format!("local-data-{run}"));
        let (t, n) = timed_ls(&["ls", "--json"], &[("CLAUDE_CONFIG_DIR", &corpus), ("MIMESIS_DATA_DIR", &data_local)])?;
        local.push(t);
        counts.0 = n;
        let alias = format!("big{run}");
        let remote_data = base.join(format!("remote-data-{run}"));
        install_helper(&remote_data)?;
        sshd.add_alias(&alias, &corpus, &remote_data)?;
        let env = [
            ("CLAUDE_CONFIG_DIR", empty.as_path()),
            ("MIMESIS_DATA_DIR", &base.join("local-data")),
            ("MIMESIS_SSH_CONFIG", sshd.client_config.as_path()),
        ];
        let (t, n) = timed_ls(&["ls", "--json", "--no-local", "--host", &alias], &env)?;
        cold.push(t);
        counts.1 = n;
        let (t, n) = timed_ls(&["ls", "--json", "--no-local", "--host", &alias], &env)?;
        warm.push(t);
        counts.2 = n;
        eprintln!(
            "run {run}: local {:.3} s, remote cold {:.3} s, remote warm {:.3} s",
            local[run as usize], cold[run as usize], warm[run as usize]
        );
    }
    ensure!(counts.0 == counts.1 && counts.1 == counts.2, "rows differ: {counts:?}");
    println!("sessions: {} ({} runs, medians)", counts.0, runs);
    println!("local `ls --json`                 {:.3} s", median(&mut local));
    println!("remote `ls --json --host`, cold   {:.3} s  (the remote's first index)", median(&mut cold));
    println!("remote `ls --json --host`, warm   {:.3} s", median(&mut warm));

    bytes_per_line(&sshd, &base, &corpus)?;
    Ok(())
}

/// `serve --stdio` over ssh; one session of a copy of part of the corpus gets 200 lines
/// appended one at a time.
fn bytes_per_line(sshd: &Sshd, base: &Path, corpus: &Path) -> Result<()> {
    // A copy of one project, so the corpus stays as generated.
    let root = base.join("wire/.claude");
    let project = std::fs::read_dir(corpus.join("projects"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .context("a project")?;
    let dest = root.join("projects").join(project.file_name().context("name")?);
    std::fs::create_dir_all(&dest)?;
    let mut target = None;
    for e in std::fs::read_dir(&project)?.filter_map(Result::ok) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            std::fs::copy(&p, dest.join(p.file_name().context("name")?))?;
            target.get_or_insert(dest.join(p.file_name().context("name")?));
        }
    }
    let target = target.context("a transcript")?;
    let data = base.join("wire-data");
    install_helper(&data)?;
    sshd.add_alias("wire", &root, &data)?;
    // The same line Claude Code 2.1.330 writes for a reply, each with fresh ids.
    let last = std::fs::read_to_string(&target)?;
    let template: serde_json::Value = last
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "assistant")
        .context("an assistant line to copy")?;

    let ssh = mimesis_wiring::remote::Ssh::new("ssh", Some(sshd.client_config.clone()));
    let dest_alias = mimesis_core::remote::Destination::parse("wire").map_err(anyhow::Error::msg)?;
    let argv = ssh.argv(&dest_alias, &mimesis_core::remote::remote_mimesis(&["serve", "--stdio"]), false);
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    writeln!(stdin, "{{\"type\":\"hello\",\"protocol\":{}}}", mimesis_core::remote::PROTOCOL)?;
    let mut out = BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    let snapshot_bytes = loop {
        line.clear();
        ensure!(out.read_line(&mut line)? > 0, "serve ended before its snapshot");
        if line.starts_with("{\"type\":\"snapshot\"") {
            break line.len();
        }
    };
    let (mut wire, mut written, mut lat) = (0usize, 0usize, vec![]);
    let n = 200;
    for i in 0..n {
        let mut rec = template.clone();
        rec["uuid"] = format!("bench-{i}-{}", uuid::Uuid::new_v4()).into();
        rec["timestamp"] =
            mimesis_core::Timestamp::from_millis(mimesis_core::Clock::now(&mimesis_core::SystemClock).millis())
                .to_iso()
                .into();
        let text = format!("{}\n", serde_json::to_string(&rec)?);
        written += text.len();
        let start = Instant::now();
        std::fs::OpenOptions::new().append(true).open(&target)?.write_all(text.as_bytes())?;
        // The event(s) it causes: read until one names the session (a status or usage change).
        loop {
            line.clear();
            ensure!(out.read_line(&mut line)? > 0, "serve ended");
            wire += line.len();
            if line.contains("\"type\":\"event\"") {
                break;
            }
        }
        lat.push(start.elapsed().as_secs_f64() * 1000.0);
        // Anything else this append causes (its usage, its cost) counts too: whatever
        // arrives until the wire has been quiet for 30 ms.
        wire += drain(&mut out, 30)?;
    }
    drop(stdin);
    let _ = child.wait();
    println!(
        "snapshot of {} sessions on the wire: {:.1} KB",
        std::fs::read_dir(&dest)?.count(),
        snapshot_bytes as f64 / 1024.0
    );
    println!(
        "{n} appended lines of {:.0} B on average: {:.0} B on the wire per line; append → event over ssh median {:.1} ms, p95 {:.1} ms",
        written as f64 / n as f64,
        wire as f64 / n as f64,
        median(&mut lat.clone()),
        pct(&mut lat, 0.95)
    );
    Ok(())
}

/// Reads what is buffered and whatever arrives until nothing has for `quiet_ms`.
fn drain(out: &mut BufReader<impl Read + std::os::fd::AsRawFd>, quiet_ms: i32) -> Result<usize> {
    let fd = out.get_ref().as_raw_fd();
    let mut total = out.buffer().len();
    out.consume(total);
    loop {
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd on a descriptor we own.
        let ready = unsafe { libc::poll(&mut pfd, 1, quiet_ms) };
        if ready <= 0 {
            return Ok(total);
        }
        let mut buf = [0u8; 65536];
        let n = out.get_mut().read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: scripts/bench remote"]
async fn ten_machines_at_once_in_the_window() -> Result<()> {
    let hosts = env_num("MIMESIS_BENCH_HOSTS", 10) as usize;
    let per_host = env_num("MIMESIS_BENCH_HOST_SESSIONS", 200);
    let dir = tempfile::tempdir()?;
    let base = dir.path().canonicalize()?;
    let sshd = Sshd::start(&base.join("sshd"))?;
    let cache =
        PathBuf::from(std::env::var_os("MIMESIS_BENCH_HOSTS_CORPUS").context("set MIMESIS_BENCH_HOSTS_CORPUS")?);
    ensure!(cache.join("projects").is_dir(), "{} has no projects/", cache.display());
    for h in 0..hosts {
        let data = base.join(format!("m{h}/data"));
        install_helper(&data)?;
        // Each machine its own copy: ten indexers, ten watchers.
        let root = base.join(format!("m{h}/.claude"));
        copy_dir(&cache, &root)?;
        sshd.add_alias(&format!("m{h}"), &root, &data)?;
    }
    let local = base.join("local/.claude");
    std::fs::create_dir_all(local.join("projects"))?;
    let data = base.join("local/data");
    std::fs::create_dir_all(&data)?;
    let env: Vec<(&str, OsString)> = vec![
        ("MIMESIS_DATA_DIR", data.into_os_string()),
        ("CLAUDE_CONFIG_DIR", local.clone().into_os_string()),
        ("MIMESIS_SSH_CONFIG", sshd.client_config.clone().into_os_string()),
    ];
    let app = DesktopApp::launch(&["--config-dir".into(), local.to_string_lossy().into_owned()], &env).await?;
    let result = async {
        app.wait_for("the page", Duration::from_secs(60), || async { Ok(app.count("[data-testid=page-settings]").await? == 1) })
            .await?;
        let want = hosts * per_host as usize;
        let names: Vec<String> = (0..hosts).map(|h| format!("\"m{h}\"")).collect();
        // Round 1: the machines' first index runs (on these same two cores); round 2: the
        // same machines again, their indexes kept (what the window itself costs, mostly).
        for round in ["cold (each machine indexes first)", "warm (their indexes kept)"] {
            app.js("window.__gaps = []; let last = performance.now(); window.__tick = (t) => { window.__gaps.push(t - last); last = t; if (window.__gaps) requestAnimationFrame(window.__tick); }; requestAnimationFrame(window.__tick); return null;").await?;
            let start = Instant::now();
            app.js(&format!(
                "const inv = window.__TAURI_INTERNALS__.invoke; for (const h of [{}]) inv('host_add', {{host: h}}); return null;",
                names.join(",")
            ))
            .await?;
            app.wait_for("every machine live with its rows", Duration::from_secs(600), || async {
                let v = app
                    .js("return window.__TAURI_INTERNALS__.invoke('hosts_list').then(h => h.filter(x => x.state === 'live').reduce((n, x) => n + x.sessions, 0) + ':' + h.filter(x => x.state === 'live').length);")
                    .await?;
                Ok(v.as_str().unwrap_or("0:0") == format!("{want}:{hosts}"))
            })
            .await?;
            let live_after = start.elapsed();
            app.wait_for("every row in the roster", Duration::from_secs(60), || async { Ok(roster_count(&app).await? == want as u64) })
                .await?;
            let all_rows = start.elapsed();
            let gaps = app.js("const g = window.__gaps; window.__gaps = null; return g;").await?;
            let mut gaps: Vec<f64> = gaps.as_array().context("gaps")?.iter().filter_map(|g| g.as_f64()).collect();
            ensure!(!gaps.is_empty(), "no frames");
            let max = gaps.iter().cloned().fold(0.0, f64::max);
            println!(
                "{round}: {hosts} machines × {per_host} sessions added at once: all live in {:.2} s, every row on screen in {:.2} s; frame gaps meanwhile median {:.1} ms, p95 {:.1} ms, max {:.1} ms over {} frames",
                live_after.as_secs_f64(),
                all_rows.as_secs_f64(),
                median(&mut gaps.clone()),
                pct(&mut gaps, 0.95),
                max,
                gaps.len()
            );
            // Remove them all for the next round.
            app.js(&format!(
                "const inv = window.__TAURI_INTERNALS__.invoke; (async () => {{ for (const h of [{}]) await inv('host_remove', {{host: h}}); }})(); return null;",
                names.join(",")
            ))
            .await?;
            app.wait_for("the rows gone", Duration::from_secs(60), || async { Ok(roster_count(&app).await? == 0) }).await?;
        }
        Ok::<(), anyhow::Error>(())
    }
    .await;
    app.close().await?;
    drop(sshd);
    result
}

/// Sessions in the roster, as the status bar counts them (shown plus superseded).
async fn roster_count(app: &DesktopApp) -> Result<u64> {
    let v = app
        .js("const t = document.querySelector('footer.bar')?.textContent ?? ''; const n = t.match(/(\\d+) sessions?/); const m = t.match(/(\\d+) superseded/); return (n ? +n[1] : 0) + (m ? +m[1] : 0);")
        .await?;
    Ok(v.as_u64().unwrap_or(0))
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    let status = Command::new("cp").arg("-r").arg(from).arg(to).status()?;
    if !status.success() {
        bail!("cp -r {} {} failed", from.display(), to.display());
    }
    Ok(())
}
