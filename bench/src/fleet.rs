//! Figures of issue 4 (`scripts/bench fleet`):
//!
//! 1. `mimesis hook` wall time, median and p99 over 200 runs (a Stop payload carrying a
//!    2 KB answer, as Claude Code sends it, into a fresh data dir);
//! 2. time to the first roster and to the full read, cold (empty data dir) versus warm
//!    (the fleet database of the previous run), on the 1 GB corpus, with the bytes each
//!    start read from transcripts;
//! 3. the fleet database's size for the corpus's 2,000 sessions.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use mimesis_wiring::{Mimesis, Options};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn hook_times(mimesis: &Path, runs: usize) -> Result<Vec<Duration>> {
    let data = tempfile_dir("hook")?;
    let cwd = data.join("proj");
    std::fs::create_dir_all(&cwd)?;
    let payload = serde_json::json!({
        "session_id": "3f1c2b9e-0000-4000-8000-000000000001",
        "transcript_path": "/home/me/.claude/projects/-home-me-proj/3f1c2b9e-0000-4000-8000-000000000001.jsonl",
        "cwd": cwd, "hook_event_name": "Stop", "permission_mode": "default", "stop_hook_active": false,
        "last_assistant_message": "Done. ".repeat(350), "background_tasks": []
    })
    .to_string();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let mut child = Command::new(mimesis)
            .args(["hook", "--data-dir"])
            .arg(&data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child.stdin.take().context("stdin")?.write_all(payload.as_bytes())?;
        let out = child.wait_with_output()?;
        times.push(start.elapsed());
        ensure!(out.status.success() && out.stdout.is_empty(), "the hook printed or failed: {:?}", out);
    }
    let recorded = mimesis_watch::spool::read_all(&data).len();
    ensure!(recorded == runs, "{recorded} of {runs} events recorded");
    let _ = std::fs::remove_dir_all(&data);
    times.sort();
    Ok(times)
}

fn tempfile_dir(what: &str) -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("mimesis-bench-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

struct Start {
    first_roster: Duration,
    ready: Duration,
    sessions: usize,
    bytes_read: u64,
}

async fn start(corpus: &Path, data: &Path) -> Result<Start> {
    let t0 = Instant::now();
    let mimesis = Mimesis::start(Options::watching(vec![corpus.to_owned()], data.to_owned())).await;
    let engine = mimesis.engine();
    engine.first_roster().await;
    let snap = engine.snapshot().await?;
    let first_roster = t0.elapsed();
    engine.ready().await;
    let ready = t0.elapsed();
    let (bytes_read, _) = engine.read_stats().await?;
    mimesis.shutdown().await;
    Ok(Start { first_roster, ready, sessions: snap.sessions.len(), bytes_read })
}

fn main() -> Result<()> {
    let root = workspace_root();
    let mut corpus = root.join("target/bench/corpus");
    let mut runs = 3usize;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--corpus" => corpus = PathBuf::from(it.next().context("--corpus DIR")?),
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            other => bail!("unknown argument {other:?} (--corpus DIR, --runs N)"),
        }
    }
    // The CLI built with this bench, in the same target dir (release or profiling).
    let mimesis = std::env::current_exe()?.with_file_name("mimesis");
    ensure!(mimesis.is_file(), "{} is missing: build first with scripts/bench", mimesis.display());
    ensure!(
        corpus.join("projects").is_dir(),
        "generate the corpus first: python3 bench/gen_corpus.py {}",
        corpus.display()
    );

    // 1. The hook.
    let _ = hook_times(&mimesis, 20)?; // page cache, dynamic loader
    let t = hook_times(&mimesis, 200)?;
    println!(
        "| `mimesis hook` (200 runs) | median {:.2} ms | p99 {:.2} ms | min {:.2} ms | max {:.2} ms |",
        ms(percentile(&t, 0.5)),
        ms(percentile(&t, 0.99)),
        ms(t[0]),
        ms(t[t.len() - 1])
    );

    // 2. Cold versus warm starts. The page cache is warm for both (the corpus is read
    //    once before), so this compares the programs, not the disk.
    for loc in mimesis_watch::scan::discover(&corpus) {
        let _ = std::fs::read(&loc.path)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    println!("\n| start | first roster | everything read | sessions | transcript bytes read |\n|---|---|---|---|---|");
    let data = tempfile_dir("fleet")?;
    let mut db_size = 0;
    for run in 0..runs {
        let _ = std::fs::remove_dir_all(&data);
        let cold = rt.block_on(start(&corpus, &data))?;
        let warm = rt.block_on(start(&corpus, &data))?;
        for (name, s) in [("cold (empty data dir)", &cold), ("warm (fleet database)", &warm)] {
            println!(
                "| {name} #{run} | {:.0} ms | {:.0} ms | {} | {} |",
                ms(s.first_roster),
                ms(s.ready),
                s.sessions,
                s.bytes_read
            );
        }
        db_size = std::fs::metadata(data.join(mimesis_fleetdb::FILE_NAME))?.len();
        // Of the warm first roster: reading the database alone.
        let t = Instant::now();
        let db =
            mimesis_fleetdb::Db::open(&data.join(mimesis_fleetdb::FILE_NAME), mimesis_core::Timestamp::from_millis(0));
        let n = db.load_sessions(std::slice::from_ref(&corpus))?.len();
        let _ = db.load_links()?;
        println!("| (database load alone #{run}) | {:.0} ms | | {n} | 0 |", ms(t.elapsed()));
    }
    println!("\nfleet database for the corpus: {:.1} MB ({db_size} bytes)", db_size as f64 / 1e6);
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}
