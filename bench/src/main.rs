//! The spine's figures, in one run (`scripts/bench`):
//!
//! 1. cold full index: `mimesis ls --json` with an empty data dir, against ccusage's native
//!    binary (`ccusage session --offline --json`) on the same corpus — wall, user CPU,
//!    peak RSS, the ratio;
//! 2. time until the engine has a first roster, and until it has read everything;
//! 3. live append → store event latency, p50/p99 over 1,000 appends across 100 sessions,
//!    with the whole corpus watched;
//! 4. CPU use of `mimesis watch` over 60 s idle with the corpus watched.
//!
//! Both tools read a warm page cache (every file is read once before timing), so the
//! comparison is of the programs, not the disk.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mimesis_core::{Clock, StoreEvent, SystemClock};
use mimesis_watch::{Engine, EngineConfig};
use serde_json::json;

struct Args {
    corpus: PathBuf,
    runs: usize,
    idle_secs: u64,
    ccusage: Option<PathBuf>,
}

fn args() -> Result<Args> {
    let root = workspace_root();
    let mut a = Args { corpus: root.join("target/bench/corpus"), runs: 5, idle_secs: 60, ccusage: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--corpus" => a.corpus = PathBuf::from(it.next().context("--corpus DIR")?),
            "--runs" => a.runs = it.next().context("--runs N")?.parse()?,
            "--idle-secs" => a.idle_secs = it.next().context("--idle-secs N")?.parse()?,
            "--ccusage" => a.ccusage = Some(PathBuf::from(it.next().context("--ccusage PATH")?)),
            "-h" | "--help" => {
                println!("mimesis-bench [--corpus DIR] [--runs N] [--idle-secs N] [--ccusage PATH]");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    Ok(a)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned()
}

/// Wall time, user and system CPU, peak RSS of one child process (from `wait4`).
#[derive(Clone, Copy, Debug)]
struct Usage {
    wall: Duration,
    user: Duration,
    sys: Duration,
    max_rss_kb: u64,
}

fn timed(cmd: &mut Command) -> Result<Usage> {
    let start = Instant::now();
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().context("spawn")?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = start.elapsed();
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let mut err = String::new();
        if let Some(mut e) = child.stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        bail!("{cmd:?} failed (status {status}): {err}");
    }
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Ok(Usage { wall, user: tv(ru.ru_utime), sys: tv(ru.ru_stime), max_rss_kb: ru.ru_maxrss as u64 })
}

fn median(mut v: Vec<Usage>) -> Usage {
    v.sort_by_key(|u| u.wall);
    v[v.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ensure_corpus(dir: &Path) -> Result<()> {
    if dir.join("projects").is_dir() {
        return Ok(());
    }
    eprintln!("generating the corpus (2,000 sessions, 60 projects, 1,000 MB) in {} …", dir.display());
    let ok = Command::new("python3")
        .arg(workspace_root().join("bench/gen_corpus.py"))
        .arg(dir)
        .args(["--sessions", "2000", "--projects", "60", "--mb", "1000"])
        .status()?
        .success();
    if !ok {
        bail!("gen_corpus.py failed");
    }
    Ok(())
}

fn warm_cache(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for loc in mimesis_watch::scan::discover(dir) {
        total += std::fs::read(&loc.path)?.len() as u64;
    }
    Ok(total)
}

fn ensure_ccusage(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    let dir = workspace_root().join("target/bench/ccusage");
    let bin = dir.join("node_modules/@ccusage/ccusage-linux-x64/bin/ccusage");
    if !bin.is_file() {
        eprintln!("installing ccusage 20.0.24 (native binary) from npm …");
        std::fs::create_dir_all(&dir)?;
        let ok = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args(["ccusage@20.0.24", "@ccusage/ccusage-linux-x64@20.0.24"])
            .status()?
            .success();
        if !ok || !bin.is_file() {
            bail!("could not install ccusage");
        }
    }
    // npm does not keep the executable bit on this package's binary.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    Ok(bin)
}

async fn first_roster(corpus: &Path) -> Result<(Duration, Duration, usize)> {
    let start = Instant::now();
    let engine = Engine::start(EngineConfig { roots: vec![corpus.to_owned()], ..Default::default() });
    engine.first_roster().await;
    let snap = engine.snapshot().await?;
    let first = start.elapsed();
    engine.ready().await;
    let full = start.elapsed();
    engine.shutdown().await;
    Ok((first, full, snap.sessions.len()))
}

/// 1,000 appends across 100 sessions of a second root, the corpus watched as well: the
/// time from the end of each write to the store event for that session.
async fn live_latency(corpus: &Path) -> Result<Vec<Duration>> {
    let tmp = std::env::temp_dir().join(format!("mimesis-bench-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let project = tmp.join("projects/-bench-live");
    std::fs::create_dir_all(&project)?;
    let ids: Vec<String> = (0..100).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for id in &ids {
        let rec = json!({"type": "user", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": SystemClock.now().to_iso(),
                         "cwd": "/bench/live", "message": {"role": "user", "content": "benchmark session"}});
        std::fs::write(project.join(format!("{id}.jsonl")), format!("{rec}\n"))?;
    }
    let engine = Engine::start(EngineConfig { roots: vec![corpus.to_owned(), tmp.clone()], ..Default::default() });
    engine.ready().await;
    let mut rx = engine.subscribe();
    let mut latencies = Vec::with_capacity(1000);
    for n in 0..1000usize {
        let id = &ids[n % ids.len()];
        let rec = json!({"type": "assistant", "uuid": uuid::Uuid::new_v4().to_string(), "timestamp": SystemClock.now().to_iso(),
                         "requestId": format!("req_{n}"),
                         "message": {"id": format!("msg_{n}"), "model": "claude-opus-4-8", "stop_reason": null,
                                     "content": [{"type": "text", "text": format!("step {n}")}],
                                     "usage": {"input_tokens": 1, "output_tokens": 1}}});
        let mut f = std::fs::OpenOptions::new().append(true).open(project.join(format!("{id}.jsonl")))?;
        f.write_all(format!("{rec}\n").as_bytes())?;
        drop(f);
        let t0 = Instant::now();
        loop {
            let env =
                tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.context("no event within 5 s")??;
            if let StoreEvent::Updated { session_id, .. } = &env.event
                && session_id.as_str() == id
            {
                break;
            }
        }
        latencies.push(t0.elapsed());
        // Appends arrive spread out in real life; a short pause keeps them apart.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    engine.shutdown().await;
    let _ = std::fs::remove_dir_all(&tmp);
    latencies.sort();
    Ok(latencies)
}

fn proc_cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = &stat[stat.rfind(')').context("stat")? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Ok(f[11].parse::<u64>()? + f[12].parse::<u64>()?)
}

/// `mimesis watch` on the corpus, idle: CPU percent over `secs` once the roster is out.
fn idle_cpu(mimesis: &Path, corpus: &Path, secs: u64) -> Result<f64> {
    let mut child = Command::new(mimesis)
        .args(["--config-dir"])
        .arg(corpus)
        .args(["watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut out = child.stdout.take().context("stdout")?;
    // Ready once all 2,000 `discovered` lines are out.
    let mut buf = [0u8; 1 << 16];
    let mut lines = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines < 2000 && Instant::now() < deadline {
        let n = std::io::Read::read(&mut out, &mut buf)?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    let drain = std::thread::spawn(move || while std::io::Read::read(&mut out, &mut buf).unwrap_or(0) > 0 {});
    std::thread::sleep(Duration::from_secs(2));
    let t0 = proc_cpu_ticks(child.id())?;
    std::thread::sleep(Duration::from_secs(secs));
    let t1 = proc_cpu_ticks(child.id())?;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait()?;
    let _ = drain.join();
    let hz = mimesis_os::procs::ticks_per_second() as f64;
    Ok((t1 - t0) as f64 / hz / secs as f64 * 100.0)
}

fn main() -> Result<()> {
    let a = args()?;
    let root = workspace_root();
    // The CLI built with this bench, in the same target dir (release or profiling).
    let mimesis = std::env::current_exe()?.with_file_name("mimesis");
    if !mimesis.is_file() {
        bail!("{} is missing: build first with scripts/bench", mimesis.display());
    }
    ensure_corpus(&a.corpus)?;
    let bytes = warm_cache(&a.corpus)?;
    let ccusage = ensure_ccusage(a.ccusage.clone())?;
    let mut report: HashMap<&str, serde_json::Value> = HashMap::new();
    println!(
        "corpus: {} ({:.0} MB, warm page cache), {} runs each, 2 cores",
        a.corpus.display(),
        bytes as f64 / 1e6,
        a.runs
    );

    // 1. Cold full index versus ccusage.
    let data = std::env::temp_dir().join(format!("mimesis-bench-data-{}", std::process::id()));
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..a.runs {
        let _ = std::fs::remove_dir_all(&data);
        ours.push(timed(
            Command::new(&mimesis)
                .env("MIMESIS_DATA_DIR", &data)
                .arg("--config-dir")
                .arg(&a.corpus)
                .args(["ls", "--json"]),
        )?);
        theirs.push(timed(Command::new(&ccusage).env("CLAUDE_CONFIG_DIR", &a.corpus).args([
            "session",
            "--offline",
            "--json",
        ]))?);
    }
    let _ = std::fs::remove_dir_all(&data);
    let (m, c) = (median(ours), median(theirs));
    println!("\n| cold full index | wall | user CPU | sys CPU | peak RSS |\n|---|---|---|---|---|");
    for (name, u) in [("mimesis ls --json", m), ("ccusage session --offline --json", c)] {
        println!(
            "| {name} | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} MB |",
            ms(u.wall),
            ms(u.user),
            ms(u.sys),
            u.max_rss_kb as f64 / 1024.0
        );
    }
    let ratio = c.wall.as_secs_f64() / m.wall.as_secs_f64();
    println!(
        "speed-up (wall): {ratio:.1}x; CPU (user+sys): {:.1}x",
        (c.user + c.sys).as_secs_f64() / (m.user + m.sys).as_secs_f64()
    );
    report.insert("index", json!({"mimesis_wall_ms": ms(m.wall), "mimesis_user_ms": ms(m.user), "mimesis_rss_mb": m.max_rss_kb / 1024,
        "ccusage_wall_ms": ms(c.wall), "ccusage_user_ms": ms(c.user), "ccusage_rss_mb": c.max_rss_kb / 1024, "ratio": ratio}));

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;

    // 2. First roster.
    let mut firsts = Vec::new();
    let mut fulls = Vec::new();
    let mut count = 0;
    for _ in 0..a.runs {
        let (f, full, n) = rt.block_on(first_roster(&a.corpus))?;
        firsts.push(f);
        fulls.push(full);
        count = n;
    }
    firsts.sort();
    fulls.sort();
    let (f, full) = (firsts[firsts.len() / 2], fulls[fulls.len() / 2]);
    println!("\nfirst roster ({count} sessions): {:.0} ms; everything read: {:.0} ms (medians)", ms(f), ms(full));
    report.insert("first_roster", json!({"first_ms": ms(f), "full_ms": ms(full), "sessions": count}));

    // 3. Live latency.
    let lat = rt.block_on(live_latency(&a.corpus))?;
    let (p50, p99, max) = (percentile(&lat, 0.5), percentile(&lat, 0.99), *lat.last().unwrap_or(&Duration::ZERO));
    println!(
        "append → event over {} appends / 100 sessions: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        ms(p50),
        ms(p99),
        ms(max)
    );
    report.insert("live", json!({"p50_ms": ms(p50), "p99_ms": ms(p99), "max_ms": ms(max)}));
    drop(rt);

    // 4. Idle CPU.
    let cpu = idle_cpu(&mimesis, &a.corpus, a.idle_secs)?;
    println!("idle CPU of `mimesis watch` with {count} sessions watched, over {} s: {cpu:.3} %", a.idle_secs);
    report.insert("idle_cpu_percent", json!(cpu));

    let out = root.join("target/bench/report.json");
    std::fs::create_dir_all(out.parent().expect("parent"))?;
    std::fs::write(&out, serde_json::to_string_pretty(&report)?)?;
    println!("\nreport: {}", out.display());
    Ok(())
}
