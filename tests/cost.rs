//! `mimesis cost --by day --json` against ccusage 20.0.24 (`daily --json --offline`), the
//! report most people check their spend with, on generated corpora of both shapes
//! (bench/gen_corpus.py: 2.1.197, and 2.1.330 with its request copies, `cost-state` records
//! and /clear chains): the tokens of every local day are equal, in more than one time
//! zone. ccusage is installed from npm into the test cache on first use
//! (`support::ccusage`); the speed comparison is `scripts/bench cost`. Each report is made
//! twice, with an empty data folder (no cost cache) and with one whose cache an earlier
//! report (in another time zone) wrote: both are the same.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use mimesis_tests::ccusage::ensure_ccusage;
use mimesis_tests::claude::workspace_root;
use mimesis_tests::mimesis::mimesis_bin;
use serde_json::Value;

type Days = BTreeMap<String, [u64; 4]>;

fn json(cmd: &mut Command) -> Result<Value> {
    let out = cmd.output().with_context(|| format!("run {cmd:?}"))?;
    ensure!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).with_context(|| format!("{cmd:?} printed no JSON"))
}

fn ccusage_days(exe: &Path, corpus: &Path, tz: &str) -> Result<(Days, f64)> {
    let v =
        json(Command::new(exe).args(["daily", "--json", "--offline"]).env("CLAUDE_CONFIG_DIR", corpus).env("TZ", tz))?;
    let mut days = Days::new();
    let mut usd = 0.0;
    for r in v["daily"].as_array().context("no daily rows")? {
        let n = |k: &str| r[k].as_u64().unwrap_or(u64::MAX);
        days.insert(
            r["period"].as_str().context("a row with no period")?.to_owned(),
            [n("inputTokens"), n("outputTokens"), n("cacheCreationTokens"), n("cacheReadTokens")],
        );
        usd += r["totalCost"].as_f64().unwrap_or(0.0);
    }
    Ok((days, usd))
}

/// The report, made with an empty data folder and with `warm_data` (whose cost cache an
/// earlier report wrote): checked the same.
fn mimesis_days(exe: &Path, corpus: &Path, tz: &str, warm_data: &Path) -> Result<(Days, f64)> {
    let cold = tempfile::tempdir()?;
    let run = |data: &Path| {
        json(
            Command::new(exe)
                .args(["cost", "--by", "day", "--json"])
                .env("CLAUDE_CONFIG_DIR", corpus)
                .env("MIMESIS_DATA_DIR", data)
                .env("TZ", tz),
        )
    };
    let v = run(cold.path())?;
    ensure!(cold.path().join("cost-cache.bin").is_file(), "the report wrote no cost cache");
    let warm_before = std::fs::read(warm_data.join("cost-cache.bin")).ok();
    ensure!(run(warm_data)? == v, "TZ={tz}: the report with a warm cost cache differs from the cold one");
    if let Some(before) = warm_before {
        ensure!(std::fs::read(warm_data.join("cost-cache.bin"))? == before, "an unchanged corpus rewrote the cache");
    }
    let mut days = Days::new();
    for r in v["rows"].as_array().context("no rows")? {
        let n = |k: &str| r[k].as_u64().unwrap_or(u64::MAX);
        days.insert(
            r["key"].as_str().context("a row with no key")?.to_owned(),
            [n("inputTokens"), n("outputTokens"), n("cacheCreationInputTokens"), n("cacheReadInputTokens")],
        );
    }
    Ok((days, v["total"]["costUsd"].as_f64().unwrap_or(f64::NAN)))
}

#[test]
fn tokens_per_day_equal_ccusages_on_generated_corpora() -> Result<()> {
    let Some(ccusage) = ensure_ccusage()? else {
        eprintln!("skipped: ccusage publishes its pinned binary for Linux x86-64 only");
        return Ok(());
    };
    let mimesis = mimesis_bin()?;
    let dir = tempfile::tempdir()?;
    for (shape, seed) in [("2.1.197", "21"), ("2.1.330", "22")] {
        let corpus = dir.path().join(shape);
        let warm_data = dir.path().join(format!("data-{shape}"));
        let status = Command::new("python3")
            .arg(workspace_root().join("bench/gen_corpus.py"))
            .arg(&corpus)
            .args(["--sessions", "80", "--projects", "6", "--mb", "8", "--shape", shape, "--clear-chains", "0.2"])
            .args(["--seed", seed])
            .stdout(std::process::Stdio::null())
            .status()
            .context("run python3 bench/gen_corpus.py")?;
        ensure!(status.success(), "gen_corpus.py failed");
        for tz in ["UTC", "Asia/Kolkata", "America/Los_Angeles"] {
            let (theirs, their_usd) = ccusage_days(&ccusage, &corpus, tz)?;
            let (ours, our_usd) = mimesis_days(&mimesis, &corpus, tz, &warm_data)?;
            ensure!(theirs.len() > 20, "{shape} {tz}: ccusage found only {} days", theirs.len());
            assert_eq!(ours, theirs, "{shape} TZ={tz}: tokens per day");
            eprintln!("{shape} TZ={tz}: {} days equal; ccusage ${their_usd:.2}, mimesis ${our_usd:.2}", ours.len());
        }
    }
    Ok(())
}
