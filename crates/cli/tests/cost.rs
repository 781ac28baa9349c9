//! The contract of `mimesis cost` (issue 36), through the real binary: the JSON other tools
//! parse (field names, kinds, values), days in the local time zone, the readable table,
//! and bad input (token counts that cannot be right, unknown models, unreadable times, a
//! price file missing or corrupt, dates that do not parse) said in a sentence, never a
//! crash and never a silent zero.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const A: &str = "aaaaaaaa-1111-4000-8000-000000000001";
const B: &str = "bbbbbbbb-2222-4000-8000-000000000002";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
}

fn assistant(ts: &str, id: &str, model: &str, usage: Value, cwd: &str) -> Value {
    json!({"type": "assistant", "timestamp": ts, "requestId": format!("req_{id}"), "cwd": cwd, "sessionId": "x",
           "version": "2.1.330", "message": {"id": format!("msg_{id}"), "model": model, "role": "assistant",
           "content": [{"type": "text", "text": "done"}], "usage": usage}})
}

fn usage(input: u64, output: u64, write: u64, read: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "cache_creation_input_tokens": write, "cache_read_input_tokens": read})
}

fn write(path: &Path, records: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Session A (project /work/alpha): one request written as two records (one per content
/// block) on 2026-11-01, one on 2026-11-02 at 20:00 UTC (the 3rd in Tokyo), and its
/// subagent's request. Session B (project /work/beta): one request of Sonnet 4.6.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("claude");
    let alpha = root.join("projects/-work-alpha");
    write(
        &alpha.join(format!("{A}.jsonl")),
        &[
            json!({"type": "user", "timestamp": "2026-11-01T09:59:00.000Z", "cwd": "/work/alpha",
                   "message": {"role": "user", "content": "how much usage?"}}),
            assistant("2026-11-01T10:00:00.000Z", "1", "claude-opus-4-8", usage(10, 20, 30, 40), "/work/alpha"),
            assistant("2026-11-01T10:00:01.000Z", "1", "claude-opus-4-8", usage(10, 20, 30, 40), "/work/alpha"),
            assistant("2026-11-02T20:00:00.000Z", "2", "claude-opus-4-8", usage(1000, 100, 0, 0), "/work/alpha"),
        ],
    );
    write(
        &alpha.join(A).join("subagents/agent-1.jsonl"),
        &[assistant("2026-11-01T11:00:00.000Z", "3", "claude-haiku-4-5", usage(5, 5, 0, 0), "/work/alpha")],
    );
    write(
        &root.join(format!("projects/-work-beta/{B}.jsonl")),
        &[assistant("2026-11-02T08:00:00.000Z", "4", "claude-sonnet-4-6", usage(2000, 200, 0, 1000), "/work/beta")],
    );
    let data = dir.path().join("data");
    Fixture { _dir: dir, root, data }
}

impl Fixture {
    fn cost(&self, args: &[&str], tz: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_mimesis"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("MIMESIS_LOG", "warn")
            .env("TZ", tz)
            .arg("--config-dir")
            .arg(&self.root)
            .arg("--data-dir")
            .arg(&self.data)
            .arg("cost")
            .args(args)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str], tz: &str) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.cost(&all, tz);
        assert!(out.status.success(), "cost {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn keys(v: &Value) -> Vec<String> {
    v["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect()
}

/// Dollars are given to the millionth.
fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() <= 5e-7
}

#[test]
fn cost_json_prints_rows_and_their_total() {
    let f = fixture();
    let v = f.json(&[], "UTC");
    assert_eq!(v["by"], "day");
    let day1 = &v["rows"][0];
    let fields: Vec<&str> = day1.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "key",
        "host",
        "inputTokens",
        "outputTokens",
        "cacheCreationInputTokens",
        "cacheReadInputTokens",
        "totalTokens",
        "costUsd",
        "models",
        "unknownModels",
    ] {
        assert!(fields.contains(&k), "rows lack {k}: {fields:?}");
    }
    // Day 1: request 1 once (two records of it), and the subagent's request.
    assert_eq!(
        (&day1["key"], &day1["inputTokens"], &day1["outputTokens"], &day1["cacheCreationInputTokens"]),
        (&json!("2026-11-01"), &json!(15), &json!(25), &json!(30))
    );
    assert_eq!(
        (&day1["cacheReadInputTokens"], &day1["totalTokens"], &day1["host"]),
        (&json!(40), &json!(110), &Value::Null)
    );
    assert_eq!(day1["models"], json!(["claude-haiku-4-5", "claude-opus-4-8"]));
    // Opus 4.8: $5 in, $25 out, $6.25 cache writes, $0.50 reads per million; Haiku 4.5: $1 / $5.
    let opus = 10.0 * 5e-6 + 20.0 * 25e-6 + 30.0 * 6.25e-6 + 40.0 * 0.5e-6;
    assert!(close(&day1["costUsd"], opus + 5.0 * 1e-6 + 5.0 * 5e-6), "{}", day1["costUsd"]);
    assert_eq!(keys(&v), ["2026-11-01", "2026-11-02"]);
    let total = &v["total"];
    assert_eq!((&total["inputTokens"], &total["outputTokens"]), (&json!(3015), &json!(325)));
    assert_eq!(total["models"], json!(["claude-haiku-4-5", "claude-opus-4-8", "claude-sonnet-4-6"]));
    assert!(v["prices"]["table"].as_str().unwrap().starts_with("LiteLLM "), "{}", v["prices"]);
    assert_eq!(v["prices"]["file"], Value::Null);
    assert_eq!(v["warnings"], json!([]));
    assert_eq!(v["unknownModels"], json!([]));
}

#[test]
fn days_are_the_local_time_zones() {
    let f = fixture();
    // 2026-11-02T20:00Z is the 3rd in Tokyo, the 2nd in Los Angeles.
    assert_eq!(keys(&f.json(&[], "Asia/Tokyo")), ["2026-11-01", "2026-11-02", "2026-11-03"]);
    assert_eq!(keys(&f.json(&[], "America/Los_Angeles")), ["2026-11-01", "2026-11-02"]);
    let tokyo = f.json(&["--since", "2026-11-03"], "Asia/Tokyo");
    assert_eq!((keys(&tokyo), &tokyo["total"]["inputTokens"]), (vec!["2026-11-03".to_owned()], &json!(1000)));
}

#[test]
fn rows_by_week_month_session_project_and_model() {
    let f = fixture();
    assert_eq!(keys(&f.json(&["--by", "week"], "UTC")), ["2026-W44", "2026-W45"]);
    assert_eq!(keys(&f.json(&["--by", "month"], "UTC")), ["2026-11"]);
    let sessions = f.json(&["--by", "session"], "UTC");
    assert_eq!(keys(&sessions), [B, A], "the costliest first");
    assert_eq!(sessions["rows"][1]["project"], "/work/alpha");
    assert_eq!(sessions["rows"][1]["inputTokens"], 1015, "the subagent's request counts for its session");
    assert_eq!(keys(&f.json(&["--by", "project"], "UTC")), ["/work/beta", "/work/alpha"]);
    assert_eq!(keys(&f.json(&["--by", "model"], "UTC")), ["claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5"]);
    let beta = f.json(&["--project", "beta"], "UTC");
    assert_eq!((keys(&beta), &beta["total"]["inputTokens"]), (vec!["2026-11-02".to_owned()], &json!(2000)));
    let until = f.json(&["--until", "20261101"], "UTC");
    assert_eq!(keys(&until), ["2026-11-01"]);
}

#[test]
fn the_text_form_is_a_table_with_its_total_and_the_prices_named() {
    let f = fixture();
    let out = f.cost(&[], "UTC");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Day ") && lines[0].contains("Cost") && lines[0].contains("Models"), "{text}");
    assert!(lines[1].starts_with("2026-11-01 ") && lines[1].contains("haiku-4-5, opus-4-8"), "{text}");
    assert!(lines[3].starts_with("Total "), "{text}");
    assert!(lines[4].starts_with("Estimated per request at LiteLLM "), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour into a pipe");
    let empty = f.cost(&["--since", "2030-01-01"], "UTC");
    assert_eq!(
        String::from_utf8_lossy(&empty.stdout).lines().next(),
        Some("No Claude Code usage found for these dates and projects.")
    );
}

#[test]
fn bad_input_is_said_in_a_sentence_never_a_crash_never_a_silent_zero() {
    let f = fixture();
    let bad = f.root.join("projects/-work-bad/cccccccc-3333-4000-8000-000000000003.jsonl");
    let tokens = |i: u32, input: Value| {
        assistant(
            "2026-11-05T10:00:00.000Z",
            &format!("b{i}"),
            "claude-opus-4-8",
            json!({"input_tokens": input, "output_tokens": 1}),
            "/work/bad",
        )
    };
    write(
        &bad,
        &[
            tokens(1, json!(-5)),
            tokens(2, json!(2.5)),
            tokens(3, json!("12")),
            tokens(4, json!(1e300)),
            tokens(5, json!(9_007_199_254_740_993u64)),
            assistant("2026-11-05T10:00:00.000Z", "b6", "claude-opus-9-9", usage(700, 0, 0, 0), "/work/bad"),
            assistant("yesterday", "b7", "claude-opus-4-8", usage(1, 1, 0, 0), "/work/bad"),
        ],
    );
    let out = f.cost(&["--json"], "UTC");
    assert_eq!(out.status.code(), Some(0), "the report is made: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings[0].starts_with("claude-opus-9-9 is not in the price table (LiteLLM "), "{warnings:?}");
    assert!(warnings[0].ends_with("its 700 tokens are counted but not priced."), "{warnings:?}");
    assert!(warnings[1].starts_with("5 usage records had token counts that cannot be right"), "{warnings:?}");
    assert_eq!(warnings[2], "1 usage record had no readable timestamp and was left out.");
    assert_eq!(v["skipped"]["invalidTokens"], 5);
    let day = v["rows"].as_array().unwrap().iter().find(|r| r["key"] == "2026-11-05").unwrap();
    assert_eq!((&day["inputTokens"], &day["costUsd"]), (&json!(700), &json!(0.0)));
    assert_eq!(day["unknownModels"], json!(["claude-opus-9-9"]));
    assert_eq!(v["unknownModels"], json!([{"model": "claude-opus-9-9", "tokens": 700, "host": null}]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 3, "each said on stderr too: {stderr}");
    assert!(stderr.lines().all(|l| l.starts_with("mimesis: ")), "{stderr}");
    let text = String::from_utf8_lossy(&f.cost(&[], "UTC").stdout).into_owned();
    assert!(text.contains("(unpriced: opus-9-9)") && text.contains("Note: 5 usage records"), "{text}");
}

#[test]
fn a_price_file_that_is_missing_or_corrupt_is_said_and_the_shipped_prices_are_used() {
    let f = fixture();
    let shipped = f.json(&[], "UTC")["total"]["costUsd"].as_f64().unwrap();
    let missing = f.root.join("no-such-prices.json");
    let v = f.json(&["--prices", missing.to_str().unwrap()], "UTC");
    assert_eq!(v["total"]["costUsd"].as_f64().unwrap(), shipped);
    let w = v["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with(&format!("The price file {} could not be used (there is no such file);", missing.display())),
        "{w}"
    );
    assert!(w.contains("the prices shipped with Mimesis were used: LiteLLM "), "{w}");
    std::fs::create_dir_all(&f.data).unwrap();
    std::fs::write(f.data.join("prices.json"), "{\"claude-opus-4-8\": {\"input_cost_per_token\": ").unwrap();
    let v = f.json(&[], "UTC");
    assert_eq!(v["total"]["costUsd"].as_f64().unwrap(), shipped);
    assert!(v["warnings"][0].as_str().unwrap().contains("could not be used (it is not JSON ("), "{}", v["warnings"]);
    // A good file in the data folder: its prices over the shipped ones.
    let prices = json!({"claude-sonnet-4-6": {"input_cost_per_token": 1e-3, "output_cost_per_token": 0.0}});
    std::fs::write(f.data.join("prices.json"), prices.to_string()).unwrap();
    let v = f.json(&["--by", "model"], "UTC");
    assert_eq!(v["prices"]["file"], f.data.join("prices.json").to_str().unwrap());
    assert_eq!(v["warnings"], json!([]));
    let sonnet = v["rows"].as_array().unwrap().iter().find(|r| r["key"] == "claude-sonnet-4-6").unwrap();
    assert!(close(&sonnet["costUsd"], 2000.0 * 1e-3 + 1000.0 * 1e-4), "{}", sonnet["costUsd"]);
}

#[test]
fn dates_and_rows_that_do_not_parse_are_refused_with_a_sentence() {
    let f = fixture();
    for (args, says) in [
        (
            &["--since", "2026-13-01"][..],
            "\"2026-13-01\" is not a date: write it as YYYY-MM-DD (2026-11-01) or YYYYMMDD",
        ),
        (&["--until", "last week"][..], "is not a date"),
        (&["--by", "year"][..], "\"year\" is not a grouping: use day, week, month, session, project or model"),
    ] {
        let out = f.cost(args, "UTC");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = f.cost(&["--since", "2026-11-03", "--until", "2026-11-01"], "UTC");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "mimesis: --since 2026-11-03 is after --until 2026-11-01: nothing could match"
    );
}
