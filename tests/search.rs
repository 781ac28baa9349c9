//! `mimesis search` as a person runs it (issue 35): the real binary on real transcripts,
//! its index in a temporary data dir. A record appended is found by the very next search,
//! and bad input gets a result or one line, never a crash or a raw escape.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_tests::mimesis::{HOSTILE, ensure_inert, wait_output};
use mimesis_tests::supervised::mimesis;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(60);
const ID: &str = "dddddddd-0000-4000-8000-000000000001";

fn run(root: &Path, data: &Path, args: &[&str]) -> Result<(i32, Vec<u8>, String)> {
    let child = Command::new(mimesis()?)
        .args(["--config-dir", root.to_str().context("utf-8")?, "--data-dir", data.to_str().context("utf-8")?])
        .args(args)
        .env_remove("MIMESIS_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let out = wait_output(child, T)?;
    Ok((out.status.code().unwrap_or(-1), out.stdout, String::from_utf8_lossy(&out.stderr).into()))
}

fn append(path: &Path, line: &Value) -> Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(f, "{line}")?;
    Ok(())
}

fn prompt(uuid: &str, at: &str, text: &str) -> Value {
    json!({"type": "user", "uuid": uuid, "timestamp": at, "sessionId": ID, "cwd": "/srv/api",
        "message": {"role": "user", "content": text}})
}

fn setup() -> Result<(tempfile::TempDir, PathBuf, PathBuf, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("claude");
    let data = dir.path().join("data");
    let folder = root.join("projects/-srv-api");
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(format!("{ID}.jsonl"));
    append(&path, &prompt("u1", "2026-11-25T10:00:00.000Z", "which session ran that migration?"))?;
    append(
        &path,
        &json!({"type": "assistant", "uuid": "a1", "timestamp": "2026-11-25T10:00:05.000Z", "sessionId": ID,
            "message": {"role": "assistant", "content": [{"type": "text", "text": format!("The migration {HOSTILE} ran.")}]}}),
    )?;
    Ok((dir, root, data, path))
}

#[test]
fn an_appended_record_is_found_by_the_next_search_and_hits_are_newest_first() -> Result<()> {
    let (_dir, root, data, path) = setup()?;
    let (code, out, err) = run(&root, &data, &["search", "migration", "--json"])?;
    ensure!(code == 0, "{err}");
    let v: Value = serde_json::from_slice(&out)?;
    assert_eq!(v["total"], 2);
    assert_eq!(v["hits"][0]["uuid"], "a1");
    assert_eq!(v["hits"][0]["kind"], "reply");
    assert_eq!(v["hits"][0]["sessionId"], ID);
    assert_eq!(v["hits"][0]["host"], Value::Null);
    assert_eq!(v["hits"][1]["kind"], "prompt");
    ensure_inert("--json", &out)?;
    // The index is kept: appended, then searched at once, the record is there.
    append(&path, &prompt("u2", "2026-11-25T11:00:00.000Z", "now the kingfisher migration"))?;
    let (code, out, err) = run(&root, &data, &["search", "kingfisher", "--json"])?;
    ensure!(code == 0, "{err}");
    let v: Value = serde_json::from_slice(&out)?;
    assert_eq!(v["hits"][0]["uuid"], "u2", "{v}");
    let (code, out, _) = run(&root, &data, &["search", "migration", "--kind", "prompt"])?;
    let text = String::from_utf8(out)?;
    ensure!(code == 0 && text.contains("kingfisher") && !text.contains("Looking"), "{text}");
    Ok(())
}

#[test]
fn bad_input_gets_a_result_or_one_line_and_nothing_raw_reaches_the_terminal() -> Result<()> {
    let (_dir, root, data, _) = setup()?;
    let long = "migration ".repeat(1100);
    let queries =
        ["\"ran that", "- \" * -", long.as_str(), r"^(migr|x)+$ .* [a-z]{3}", "迁移 миграция", "\"\"", "pwned"];
    for q in queries {
        let (code, out, err) = run(&root, &data, &["search", "--", q])?;
        ensure!(code == 0 || code == 1, "{q:?}: exit {code}: {err}");
        if code == 1 {
            ensure!(err.trim().lines().count() == 1 && err.contains("query"), "{q:?}: {err}");
        }
        ensure_inert(q, &out)?;
        ensure_inert(q, err.as_bytes())?;
    }
    for args in [
        &["search", "x", "--kind", "tool"][..],
        &["search", "x", "--since", "yesterday"],
        &["search", "--file", "a\u{1b}b"],
    ] {
        let (code, _, err) = run(&root, &data, args)?;
        ensure!(code != 0 && !err.is_empty(), "{args:?}");
        ensure_inert("error", err.as_bytes())?;
    }
    Ok(())
}

/// Issue 35 §chains: a hit in an earlier segment of a work chain (the links the fleet
/// database kept) says so, with the chain and its newest session, where the window opens it.
#[test]
fn a_hit_in_an_earlier_segment_names_its_chain_and_its_head() -> Result<()> {
    use mimesis_core::chain::{Link, LinkReason};
    use mimesis_core::ids::SessionId;
    use mimesis_core::persist::Batch;
    const NEXT: &str = "dddddddd-0000-4000-8000-000000000002";
    let (_dir, root, data, path) = setup()?;
    let next = path.with_file_name(format!("{NEXT}.jsonl"));
    append(
        &next,
        &json!({"type": "user", "uuid": "n1", "timestamp": "2026-11-25T12:00:00.000Z", "sessionId": NEXT,
            "cwd": "/srv/api", "message": {"role": "user", "content": "after the clear, the migration again"}}),
    )?;
    std::fs::create_dir_all(&data)?;
    let db = mimesis_fleetdb::Db::open(&data.join(mimesis_fleetdb::FILE_NAME), mimesis_core::Timestamp::from_millis(0));
    let link = Link {
        predecessor: SessionId::parse(ID)?,
        successor: SessionId::parse(NEXT)?,
        reason: LinkReason::Clear,
        at: mimesis_core::Timestamp::from_millis(1_764_072_000_000),
    };
    db.save(&Batch { links: vec![link], ..Batch::default() }, mimesis_core::Timestamp::from_millis(0))?;
    drop(db);
    let (code, out, err) = run(&root, &data, &["search", "migration", "--json"])?;
    ensure!(code == 0, "{err}");
    let v: Value = serde_json::from_slice(&out)?;
    let hits = v["hits"].as_array().context("hits")?;
    let newest = &hits[0];
    assert_eq!(newest["sessionId"], NEXT, "{v}");
    assert_eq!(newest["superseded"], false);
    assert_eq!(newest["chainHead"], Value::Null);
    assert_eq!(newest["workChainId"], ID);
    for old in &hits[1..] {
        assert_eq!(old["sessionId"], ID, "{v}");
        assert_eq!(old["superseded"], true);
        assert_eq!(old["chainHead"], NEXT);
        assert_eq!(old["workChainId"], ID);
    }
    Ok(())
}
