//! Figures of supervised PTY sessions (issue 3), in one run:
//!
//! 1. supervisor cost per tick with 50 live sessions (stand-in agents at their prompt):
//!    wall time of `Supervisor::tick` and this process's CPU time per tick; plus the pure
//!    policy's cost for 50 sessions, and one full RSS check of 50 process trees;
//! 2. keystroke-to-echo latency in-process through a real PTY (`cat`, the line discipline
//!    echoes): p50 / p99 over 2,000 keys, from `Supervisor::input` to the byte arriving
//!    on an attached client;
//! 3. memory per live session in Mimesis (this process's RSS growth / sessions);
//! 4. PTY output throughput into the engine (screen model, scrollback, broadcast): an
//!    agent writing 200 MB, measured on an attached client.
//!
//! `cargo build --profile profiling -p mimesis-standin -p mimesis-bench && target/profiling/mimesis-bench-supervise`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mimesis_core::supervision::policy::{Activity, AgentKind, Input, ScreenSignal, SessionPolicy};
use mimesis_core::supervision::{AgentCommand, Limits};
use mimesis_core::{Mono, Now, SessionId, Timestamp};
use mimesis_supervise::{Supervisor, SupervisorConfig};

fn cpu_time() -> Duration {
    // SAFETY: rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn rss_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let p = exe.parent().context("exe dir")?.join(name);
    if !p.is_file() {
        bail!("{} is missing: cargo build --profile profiling -p mimesis-standin -p mimesis-bench", p.display());
    }
    Ok(p)
}

async fn supervisor(dir: &Path, agent: AgentCommand, limits: Limits) -> Supervisor {
    let root = dir.join(".claude");
    std::fs::create_dir_all(&root).unwrap();
    let mut c = SupervisorConfig::new(root.clone(), mimesis_fleetdb::ledger::open(&dir.join("data")));
    c.agent = agent;
    c.limits = limits;
    c.config_root_env = Some(root);
    c.subreaper = false;
    c.size = (120, 40);
    Supervisor::start(c).await
}

async fn wait_screen(sup: &Supervisor, id: &SessionId, needle: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sup.screen(id).await?.iter().any(|r| r.contains(needle)) {
        if Instant::now() > deadline {
            bail!("{needle:?} never showed");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn pure_policy_tick(n: usize) -> Duration {
    let t0 = Now { wall: Timestamp::from_millis(1_800_000_000_000), mono: Mono::from_millis(0) };
    let mut policies: Vec<SessionPolicy> = (0..n)
        .map(|i| {
            let id = SessionId::parse(&format!("s{i}")).unwrap();
            let (mut p, _) = SessionPolicy::new(
                id,
                Limits::default(),
                AgentKind::ClaudeLike,
                false,
                t0,
                Box::new(|| SessionId::parse("x").unwrap()),
            );
            p.handle(Input::Spawned { generation: 1, pid: 1000 + i as u32 }, t0);
            p.handle(Input::Screen { generation: 1, signal: ScreenSignal::Activity(Activity::Idle) }, t0);
            p
        })
        .collect();
    let rounds = 10_000;
    let start = Instant::now();
    for r in 0..rounds {
        let d = Duration::from_millis(r * 7);
        let now = Now { wall: t0.wall.plus(d), mono: t0.mono.plus(d) };
        for p in &mut policies {
            std::hint::black_box(p.handle(Input::Tick, now));
            std::hint::black_box(p.next_deadline());
        }
    }
    start.elapsed() / rounds as u32
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let standin = sibling("mimesis-standin-agent")?;
    let tmp = tempfile::tempdir()?;
    println!("# Supervised PTY sessions — figures");
    println!("machine: {} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));

    // 1 + 3: 50 live sessions.
    println!("\n## 50 live sessions (stand-in agents)");
    let p = pure_policy_tick(50);
    println!("pure policy, Tick for 50 sessions: {:.1} µs", p.as_secs_f64() * 1e6);
    let rss0 = rss_kb();
    let limits = Limits { max_live_sessions: 100, ..Limits::default() };
    let sup = supervisor(tmp.path(), AgentCommand::new(&standin), limits).await;
    let cwd = tmp.path().join("project");
    std::fs::create_dir_all(&cwd)?;
    let mut ids = Vec::new();
    for _ in 0..50 {
        ids.push(sup.create(&cwd, None).await?);
    }
    for id in &ids {
        wait_screen(&sup, id, "? for shortcuts").await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss1 = rss_kb();
    let ticks = 2000u32;
    let (c0, w0) = (cpu_time(), Instant::now());
    for _ in 0..ticks {
        sup.tick().await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await; // let the 50 actors finish their last tick
    let (cpu, wall) = (cpu_time() - c0, w0.elapsed());
    println!(
        "Supervisor::tick with 50 live sessions: {:.1} µs wall, {:.1} µs CPU per tick (all 50 actors + fleet), over {ticks} ticks",
        wall.as_secs_f64() * 1e6 / f64::from(ticks),
        cpu.as_secs_f64() * 1e6 / f64::from(ticks)
    );
    let t = Instant::now();
    let res = sup.resources().await;
    println!(
        "one RSS check of 50 process trees (resources()): {:.1} ms, {} rows",
        t.elapsed().as_secs_f64() * 1e3,
        res.rows.len()
    );
    println!(
        "memory per live session in Mimesis: {:.0} KiB (RSS {} MiB -> {} MiB for 50)",
        (rss1.saturating_sub(rss0)) as f64 / 50.0,
        rss0 / 1024,
        rss1 / 1024
    );
    sup.shutdown().await;

    // 2: keystroke to echo.
    println!("\n## keystroke-to-echo, in-process, real PTY (cat; the line discipline echoes)");
    let dir2 = tempfile::tempdir()?;
    let sup = supervisor(dir2.path(), AgentCommand::new("cat"), Limits::default()).await;
    std::fs::create_dir_all(dir2.path().join("p"))?;
    let id = sup.create(&dir2.path().join("p"), None).await?;
    let mut att = sup.attach(&id, true).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    while att.output.try_recv().is_ok() {}
    let mut lat = Vec::new();
    for i in 0..2000 {
        let key = if i % 50 == 49 { b'\r' } else { b'a' + (i % 26) as u8 };
        let t = Instant::now();
        sup.input(&id, &[key]).await?;
        loop {
            let chunk = att.output.recv().await?;
            if chunk.contains(&key) {
                break;
            }
        }
        lat.push(t.elapsed());
        // Drain cat's own echo of a finished line.
        tokio::time::sleep(Duration::from_micros(200)).await;
        while att.output.try_recv().is_ok() {}
    }
    lat.sort();
    println!(
        "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms over {} keys",
        pct(&lat, 0.5).as_secs_f64() * 1e3,
        pct(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().unwrap().as_secs_f64() * 1e3,
        lat.len()
    );
    sup.shutdown().await;

    // 4: throughput.
    println!("\n## PTY output throughput into the engine");
    let dir3 = tempfile::tempdir()?;
    let mut agent = AgentCommand::new("sh");
    let bytes: u64 = 200 * 1024 * 1024;
    agent.args =
        vec!["-c".into(), format!("yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c {bytes}")];
    let sup = supervisor(dir3.path(), agent, Limits::default()).await;
    std::fs::create_dir_all(dir3.path().join("p"))?;
    let mut events = sup.subscribe();
    let t = Instant::now();
    let id = sup.create(&dir3.path().join("p"), None).await?;
    let mut att = sup.attach(&id, true).await?;
    let mut got = att.scrollback.len() as u64;
    let mut lagged = 0u64;
    let c0 = cpu_time();
    loop {
        tokio::select! {
            chunk = att.output.recv() => match chunk {
                Ok(c) => got += c.len() as u64,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => lagged += n,
                Err(_) => break,
            },
            ev = events.recv() => {
                if ev.map(|e| e.type_name() == "session_exited").unwrap_or(true) {
                    break;
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    while let Ok(c) = att.output.try_recv() {
        got += c.len() as u64;
    }
    println!(
        "{:.0} MB in {:.2} s: {:.0} MB/s through the screen model to an attached client ({} MB received, {} chunks dropped for lag); CPU {:.2} s",
        bytes as f64 / 1e6,
        secs,
        bytes as f64 / 1e6 / secs,
        got / 1_000_000,
        lagged,
        (cpu_time() - c0).as_secs_f64()
    );
    sup.shutdown().await;
    Ok(())
}
