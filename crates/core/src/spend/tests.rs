use serde_json::{Value, json};

use super::*;
use crate::transcript::SerdeJson;

fn utc_day(t: Timestamp) -> NaiveDate {
    chrono::DateTime::from_timestamp_millis(t.millis()).unwrap().date_naive()
}

fn assistant(ts: &str, id: Option<&str>, req: Option<&str>, model: &str, usage: Value) -> Value {
    let mut r = json!({"type": "assistant", "timestamp": ts, "sessionId": "s1", "version": "2.1.330", "cwd": "/home/me/p1",
                       "message": {"model": model, "usage": usage, "content": [{"type": "text", "text": "x"}]}});
    if let Some(id) = id {
        r["message"]["id"] = id.into();
    }
    if let Some(req) = req {
        r["requestId"] = req.into();
    }
    r
}

fn u(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn file(session: &str, dir: &str, lines: &[Value]) -> FileUsage {
    let mut f = FileUsage::new(session, dir);
    let mut scratch = String::new();
    for l in lines {
        f.add_line(&SerdeJson, l.to_string().as_bytes(), &mut scratch);
    }
    f
}

fn ledger(files: Vec<FileUsage>) -> Ledger {
    let mut l = Ledger::default();
    for f in files {
        l.add(f);
    }
    l
}

fn report(l: &Ledger, q: &CostQuery) -> CostReport {
    l.report(q, PriceTable::vendored(), &utc_day)
}

fn day(s: &str) -> NaiveDate {
    parse_day(s).unwrap()
}

/// The corpus of the ccusage check (ccusage 20.0.24 `daily --json --offline`, TZ=UTC, gave
/// these token totals): copies of one request within a file and across files counted once
/// (the fullest kept, a sidechain's replay folded in), ids missing, a user record carrying
/// usage, `<synthetic>`, a subagent's file, and records ccusage leaves out. One difference:
/// ccusage counts an input of 9007199254740993 tokens; here a count over 2^40 is refused.
#[test]
fn requests_count_once_as_ccusage_counts_them() {
    let m = "claude-sonnet-4-6";
    let bad = |ts: &str, id: &str, usage: Value| assistant(ts, Some(id), Some(id), m, usage);
    let main = file(
        "s1",
        "-p1",
        &[
            assistant("2026-11-01T10:00:00.000Z", Some("m1"), Some("r1"), m, u(100, 10)),
            assistant("2026-11-01T10:00:01.000Z", Some("m1"), Some("r1"), m, u(100, 50)),
            bad("2026-11-01T10:00:02.000Z", "m2", json!({"input_tokens": -5, "output_tokens": 7})),
            bad("2026-11-01T10:00:03.000Z", "m3", json!({"input_tokens": 2.5, "output_tokens": 7})),
            bad("2026-11-01T10:00:04.000Z", "m4", json!({"input_tokens": "12", "output_tokens": 7})),
            bad("2026-11-01T10:00:05.000Z", "m5", json!({"input_tokens": 1e300, "output_tokens": 7})),
            bad("2026-11-01T10:00:06.000Z", "m6", json!({"input_tokens": 3.0, "output_tokens": 7})),
            assistant("2026-11-01T10:00:07.000Z", Some("m7"), None, m, u(1000, 0)),
            assistant("2026-11-01T10:00:07.000Z", Some("m7"), None, m, u(1000, 0)),
            assistant("2026-11-01T10:00:08.000Z", None, None, m, u(2000, 0)),
            assistant("2026-11-01T10:00:08.000Z", None, None, m, u(2000, 0)),
            assistant("not a date", Some("m8"), Some("r8"), m, u(4000, 0)),
            assistant("2026-11-01T10:00:09Z", Some("m9"), Some("r9"), m, u(8000, 0)),
            assistant("2026-11-01T23:30:00+02:00", Some("m10"), Some("r10"), m, u(16000, 0)),
            json!({"type": "user", "timestamp": "2026-11-01T10:00:10.000Z", "version": "2.1.330",
                   "message": {"id": "m11", "model": m, "usage": u(32000, 0)}}),
            assistant("2026-11-01T10:00:11.000Z", Some("m12"), Some("r12"), "<synthetic>", u(64000, 0)),
            bad("2026-11-01T10:00:12.000Z", "m13", json!({"input_tokens": 9007199254740993u64, "output_tokens": 1})),
            bad("2026-11-01T10:00:13.000Z", "m14", json!({"output_tokens": 1})),
            bad("2026-11-01T10:00:14.000Z", "m15", json!({"input_tokens": null, "output_tokens": 1})),
            bad(
                "2026-11-01T10:00:15.000Z",
                "m16",
                json!({"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": null}),
            ),
        ],
    );
    assert_eq!(main.skipped.invalid_tokens, 9);
    assert_eq!(main.skipped.no_time, 1);
    let mut replay = assistant("2026-11-02T10:00:00.000Z", Some("m1"), Some("r1x"), m, u(100, 20));
    replay["isSidechain"] = true.into();
    let other =
        file("s2", "-p2", &[assistant("2026-11-02T10:00:00.000Z", Some("m1"), Some("r1"), m, u(100, 20)), replay]);
    let mut sub = assistant("2026-11-03T10:00:00.000Z", Some("m20"), Some("r20"), m, u(128000, 0));
    sub["isSidechain"] = true.into();
    let subagent = file("s2", "-p2", &[sub]);
    let l = ledger(vec![main, other, subagent]);
    let r = report(&l, &CostQuery::default());
    let days: Vec<(&str, u64, u64)> =
        r.rows.iter().map(|r| (r.key.as_str(), r.totals.input_tokens, r.totals.output_tokens)).collect();
    assert_eq!(days, [("2026-11-01", 125_100, 50), ("2026-11-03", 128_000, 0)]);
    assert_eq!(r.rows[0].totals.models, ["claude-sonnet-4-6"], "<synthetic> is no model");
    assert_eq!(r.total.input_tokens, 253_100);
    assert_eq!(r.total.total_tokens, 253_150);
    assert!(
        r.warnings.iter().any(|w| w.starts_with("9 usage records had token counts that cannot be right")),
        "{:?}",
        r.warnings
    );
    assert!(r.warnings.iter().any(|w| w.starts_with("1 usage record had no readable timestamp")), "{:?}", r.warnings);
    // Priced per request: the synthetic one's tokens are not.
    let priced = (125_100.0 - 64_000.0 + 128_000.0) * 3e-6 + 50.0 * 15e-6;
    assert!((r.total.cost_usd - priced).abs() < 1e-6, "{} vs {priced}", r.total.cost_usd);
}

#[test]
fn days_are_local_days() {
    let l = ledger(vec![file(
        "s",
        "-p",
        &[assistant("2026-11-01T23:30:00.000Z", Some("a"), Some("a"), "claude-haiku-4-5", u(1, 1))],
    )]);
    let plus_two =
        |t: Timestamp| chrono::DateTime::from_timestamp_millis(t.millis() + 2 * 3_600_000).unwrap().date_naive();
    let r = l.report(&CostQuery::default(), PriceTable::vendored(), &plus_two);
    assert_eq!(r.rows[0].key, "2026-11-02");
    assert_eq!(report(&l, &CostQuery::default()).rows[0].key, "2026-11-01");
}

fn three_sessions() -> Ledger {
    let m = |s: &str, ts: &str, model: &str, usage: Value| {
        let mut a = assistant(ts, Some(&format!("{s}{ts}")), Some("r"), model, usage);
        a["cwd"] = format!("/home/me/{s}").into();
        a
    };
    let mut a = file(
        "aaaa",
        "-home-me-alpha",
        &[
            m("alpha", "2026-10-31T12:00:00.000Z", "claude-opus-4-8", u(10_000, 1000)),
            m("alpha", "2026-11-02T12:00:00.000Z", "claude-haiku-4-5", u(1000, 100)),
        ],
    );
    let mut scratch = String::new();
    a.add_line(
        &SerdeJson,
        br#"{"type":"cost-state","sessionId":"aaaa","totalCostUSD":0.5,"modelUsage":{}}"#,
        &mut scratch,
    );
    let b = file("bbbb", "-home-me-beta", &[m("beta", "2026-11-09T12:00:00.000Z", "claude-sonnet-4-6", u(5000, 10))]);
    let c = file("cccc", "-home-me-beta", &[m("beta", "2026-11-10T12:00:00.000Z", "claude-opus-4-9", u(7, 3))]);
    ledger(vec![a, b, c])
}

#[test]
fn rows_by_week_month_session_project_and_model() {
    let l = three_sessions();
    let keys = |by: GroupBy| -> Vec<String> {
        report(&l, &CostQuery { by, ..Default::default() }).rows.iter().map(|r| r.key.clone()).collect()
    };
    assert_eq!(keys(GroupBy::Week), ["2026-W44", "2026-W45", "2026-W46"]);
    assert_eq!(keys(GroupBy::Month), ["2026-10", "2026-11"]);
    // Not time: the costliest first.
    assert_eq!(keys(GroupBy::Session), ["aaaa", "bbbb", "cccc"]);
    assert_eq!(keys(GroupBy::Project), ["/home/me/alpha", "/home/me/beta"]);
    assert_eq!(keys(GroupBy::Model), ["claude-opus-4-8", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-9"]);
    let s = report(&l, &CostQuery { by: GroupBy::Session, ..Default::default() });
    assert_eq!(s.rows[0].billed_usd, Some(0.5), "Claude Code's own figure beside the estimate");
    assert_eq!(s.rows[0].project.as_deref(), Some("/home/me/alpha"));
    assert_eq!(s.rows[1].billed_usd, None);
    assert_eq!(s.rows[0].totals.models, ["claude-haiku-4-5", "claude-opus-4-8"]);
}

#[test]
fn since_until_and_project_narrow_the_report() {
    let l = three_sessions();
    let q = CostQuery { since: Some(day("2026-11-01")), until: Some(day("20261109")), ..Default::default() };
    let r = report(&l, &q);
    assert_eq!(r.rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["2026-11-02", "2026-11-09"]);
    for p in ["beta", "/home/me/beta", "/home/me/beta/", "-home-me-beta"] {
        let r = report(&l, &CostQuery { project: Some(p.into()), ..Default::default() });
        assert_eq!(r.total.input_tokens, 5007, "{p}");
    }
    assert!(report(&l, &CostQuery { project: Some("gamma".into()), ..Default::default() }).rows.is_empty());
}

#[test]
fn an_unknown_model_is_counted_named_and_not_priced() {
    let r = report(&three_sessions(), &CostQuery::default());
    let row = r.rows.iter().find(|r| r.key == "2026-11-10").unwrap();
    assert_eq!((row.totals.input_tokens, row.totals.cost_usd), (7, 0.0));
    assert_eq!(row.totals.unknown_models, ["claude-opus-4-9"]);
    assert_eq!(r.unknown_models, [UnknownModel { model: "claude-opus-4-9".into(), tokens: 10, host: None }]);
    assert_eq!(r.total.unknown_models, ["claude-opus-4-9"]);
    assert!(r.warnings[0].starts_with("claude-opus-4-9 is not in the price table (LiteLLM "), "{:?}", r.warnings);
    assert!(r.warnings[0].ends_with("its 10 tokens are counted but not priced."), "{:?}", r.warnings);
}

#[test]
fn each_request_is_priced_by_itself() {
    // Two requests of 150k context on one day: neither is long, though the day's sum is.
    let m = "claude-sonnet-4-5-20250929-v1:0";
    let usage = json!({"input_tokens": 150_000, "output_tokens": 0,
                       "cache_creation_input_tokens": 1000, "cache_creation": {"ephemeral_1h_input_tokens": 1000}});
    let l = ledger(vec![file(
        "s",
        "-p",
        &[
            assistant("2026-11-01T10:00:00.000Z", Some("a"), Some("a"), m, usage.clone()),
            assistant("2026-11-01T11:00:00.000Z", Some("b"), Some("b"), m, usage),
        ],
    )]);
    let r = report(&l, &CostQuery::default());
    assert!((r.total.cost_usd - 2.0 * (0.45 + 1000.0 * 6e-6)).abs() < 1e-9, "{}", r.total.cost_usd);
    assert_eq!(r.total.cache_creation_input_tokens, 2000);
}

#[test]
fn lines_that_are_not_usage_are_skipped_and_torn_ones_said() {
    let mut f = FileUsage::new("s", "-p");
    let mut scratch = String::new();
    for line in [
        &br#"{"type":"user","message":{"role":"user","content":"what is my usage?"}}"#[..],
        br#"{"type":"api-request-shape","usage":{"input_tokens":5,"output_tokens":5}}"#,
        br#"{"parentUuid":"p","type":"assistant","message":{"id":"m","usage":{"input_tok"#,
        b"   ",
        b"\xff\xfe",
    ] {
        f.add_line(&SerdeJson, line, &mut scratch);
    }
    assert!(f.entries.is_empty());
    assert_eq!(f.skipped, Skipped { unreadable_lines: 1, ..Default::default() });
    let r = report(&ledger(vec![f]), &CostQuery::default());
    assert_eq!(r.warnings, ["1 line that mentions usage is not JSON (a torn write?) and was skipped."]);
}

#[test]
fn records_ccusage_leaves_out_are_left_out_and_said() {
    let m = "claude-haiku-4-5";
    let mut bad_version = assistant("2026-11-01T10:00:00.000Z", Some("a"), Some("a"), m, u(1, 1));
    bad_version["version"] = "banana".into();
    let empty_id = assistant("2026-11-01T10:00:00.000Z", Some(""), Some("b"), m, u(1, 1));
    let empty_model = assistant("2026-11-01T10:00:00.000Z", Some("c"), Some("c"), "", u(1, 1));
    let f = file("s", "-p", &[bad_version, empty_id, empty_model]);
    assert_eq!(f.skipped.invalid_record, 3);
    let r = report(&ledger(vec![f]), &CostQuery::default());
    assert!(r.rows.is_empty());
    assert!(r.warnings[0].starts_with("3 usage records had an empty id or model"), "{:?}", r.warnings);
}

#[test]
fn a_price_file_that_is_missing_or_corrupt_falls_back_to_the_shipped_table() {
    let (t, w) = price_table(None::<(&str, Result<String, String>)>);
    assert!(w.is_empty() && t.source.file.is_none());
    let (t, w) = price_table(Some(("/d/prices.json", Err::<String, _>("it does not exist"))));
    assert_eq!(t.source.file, None);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("The price file /d/prices.json could not be used (it does not exist); the prices shipped")
    );
    let (_, w) = price_table(Some(("/d/prices.json", Ok::<String, String>("{\"claude-x\": [".into()))));
    assert!(w[0].contains("could not be used (it is not JSON ("), "{w:?}");
    let (_, w) = price_table(Some(("/d/prices.json", Ok::<String, String>("{}".into()))));
    assert!(w[0].contains("(it holds no model with an input and an output price)"), "{w:?}");
    let good = r#"{"claude-haiku-4-5": {"input_cost_per_token": 2e-6, "output_cost_per_token": 1e-5},
                  "claude-bad": {"input_cost_per_token": "cheap", "output_cost_per_token": 1e-5}}"#;
    let (t, w) = price_table(Some(("/d/prices.json", Ok::<String, String>(good.into()))));
    assert_eq!(t.source.file.as_deref(), Some("/d/prices.json"));
    assert_eq!(t.find("claude-haiku-4-5").unwrap().rates.input, 2e-6);
    assert!(t.find("claude-sonnet-4-6").is_some(), "the rest from the shipped table");
    assert_eq!(
        w,
        ["The price file /d/prices.json: 1 entry was left out (claude-bad: input_cost_per_token is a string, \
             not a number); the shipped prices stand for them."]
    );
}

#[test]
fn dates_and_groupings_that_do_not_parse_are_refused_with_a_sentence() {
    assert_eq!(parse_day("2026-11-01").unwrap(), NaiveDate::from_ymd_opt(2026, 11, 1).unwrap());
    assert_eq!(parse_day(" 20261101 ").unwrap(), NaiveDate::from_ymd_opt(2026, 11, 1).unwrap());
    for bad in ["2026-13-01", "2026-02-30", "yesterday", "", "1/11/2026", "202611011"] {
        let e = parse_day(bad).unwrap_err().to_string();
        assert!(e.ends_with("is not a date: write it as YYYY-MM-DD (2026-11-01) or YYYYMMDD"), "{bad}: {e}");
    }
    assert_eq!(GroupBy::parse("week"), Ok(GroupBy::Week));
    assert!(
        GroupBy::parse("year").unwrap_err().to_string().contains("use day, week, month, session, project or model")
    );
    let q = CostQuery { since: Some(day("2026-11-02")), until: Some(day("2026-11-01")), ..Default::default() };
    assert_eq!(
        q.check().unwrap_err().to_string(),
        "--since 2026-11-02 is after --until 2026-11-01: nothing could match"
    );
    // Over the wire the query's days are strings, checked again on arrival.
    let wire = serde_json::to_value(&q).unwrap();
    assert_eq!(wire["since"], "2026-11-02");
    assert_eq!(serde_json::from_value::<CostQuery>(wire).unwrap(), q);
    assert!(serde_json::from_value::<CostQuery>(json!({"by": "day", "since": "soon"})).is_err());
}

#[test]
fn hosts_rows_are_named_and_summed_into_one_total() {
    let q = CostQuery::default();
    let here = report(&three_sessions(), &q);
    let there = report(&three_sessions(), &q);
    let merged = merge(Some(here.clone()), vec![("devbox".into(), there)], GroupBy::Day);
    assert_eq!(merged.rows.len(), 2 * here.rows.len());
    assert_eq!((merged.rows[0].host.as_deref(), merged.rows[1].host.as_deref()), (None, Some("devbox")));
    assert_eq!(merged.total.input_tokens, 2 * here.total.input_tokens);
    assert!((merged.total.cost_usd - 2.0 * here.total.cost_usd).abs() < 1e-9);
    assert!(merged.warnings.iter().any(|w| w.starts_with("devbox: claude-opus-4-9 is not in the price table")));
    assert_eq!(merged.unknown_models[1].host.as_deref(), Some("devbox"));
    let json = serde_json::to_value(&merged).unwrap();
    assert_eq!(json["rows"][0]["host"], Value::Null);
    for k in
        ["key", "inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "costUsd", "models"]
    {
        assert!(json["rows"][0].get(k).is_some(), "{k}");
        assert!(k == "key" || json["total"].get(k).is_some(), "total {k}");
    }
    let back: CostReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, merged);
}

#[test]
fn thousands_are_grouped() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

/// Reading a whole file's bytes at once finds the same requests, the same figure billed
/// and the same lines left out as reading it line by line, whatever lies between.
#[test]
fn a_file_read_at_once_reads_as_line_by_line() {
    let m = "claude-haiku-4-5";
    let usage_line = |id: &str| assistant("2026-11-01T10:00:00.000Z", Some(id), Some(id), m, u(1, 2)).to_string();
    let cost_state = |usd: f64| json!({"type": "cost-state", "totalCostUSD": usd, "modelUsage": {}}).to_string();
    let shape = r#"{"type":"api-request-shape","usage":{"input_tokens":5,"output_tokens":5},"x":"y"}"#.to_owned();
    let prompt = json!({"type": "user", "message": {"content": "what does \"usage\": mean?"}}).to_string();
    let torn = r#"{"type":"assistant","message":{"usage":{"input_tok"#.to_owned();
    let bad_time = assistant("then", Some("z"), Some("z"), m, u(1, 1)).to_string();
    let cases: Vec<Vec<String>> = vec![
        vec![usage_line("a"), cost_state(0.5)],
        vec![cost_state(0.5), usage_line("a")],
        vec![cost_state(0.25), prompt.clone(), cost_state(0.5), shape.clone()],
        vec![usage_line("a"), shape.clone(), torn.clone(), cost_state(0.5), usage_line("b"), prompt.clone()],
        vec![prompt.clone(), usage_line("a"), cost_state(0.5), cost_state(0.75), bad_time.clone()],
        vec![String::new(), "   ".into(), usage_line("a")],
        vec![],
    ];
    for (i, lines) in cases.iter().enumerate() {
        for last_torn in [false, true] {
            let mut text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            if last_torn {
                text.push_str(&usage_line("w")[..40]);
            }
            let mut by_line = FileUsage::new("s", "-p");
            let mut scratch = String::new();
            for l in lines {
                by_line.add_line(&SerdeJson, l.as_bytes(), &mut scratch);
            }
            let mut at_once = FileUsage::new("s", "-p");
            let mut told = Vec::new();
            at_once.add_text(&SerdeJson, text.as_bytes(), &mut scratch, |n| told.push(n));
            let case = format!("case {i}, torn end {last_torn}");
            assert_eq!(at_once.entries, by_line.entries, "{case}");
            assert_eq!(at_once.billed_usd, by_line.billed_usd, "{case}");
            assert_eq!(at_once.skipped, by_line.skipped, "{case}");
            assert_eq!(at_once.cwd, by_line.cwd, "{case}");
            assert_eq!(told.last(), Some(&text.len()), "{case}");
        }
    }
    // What the cases show: a request after Claude Code's figure makes it out of date.
    let read = |lines: &[String]| {
        let mut f = FileUsage::new("s", "-p");
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        f.add_text(&SerdeJson, text.as_bytes(), &mut String::new(), |_| {});
        f
    };
    assert_eq!(read(&cases[0]).billed_usd, Some(0.5));
    assert_eq!(read(&cases[1]).billed_usd, None);
    assert_eq!(read(&cases[2]).billed_usd, Some(0.5), "the last one, a request-shape copy is no request");
    assert_eq!(read(&cases[3]).skipped.unreadable_lines, 1);
    assert_eq!(read(&cases[4]).billed_usd, None, "a usage record after it, even one left out");
}

/// Which copy of a request is kept does not depend on the order files are folded in (they
/// are read in parallel): equal copies go to the first file in path order, then the first
/// record in it.
#[test]
fn the_report_does_not_depend_on_the_order_files_are_folded_in() {
    let m = "claude-haiku-4-5";
    let at = |day: u32| format!("2026-11-0{day}T10:00:00.000Z");
    let files = || {
        let mut a = file("a", "-p", &[assistant(&at(1), Some("x"), Some("r"), m, u(10, 1))]);
        // A resumed session's copy of x, on another day, equal: the first file's stays.
        let mut b = file(
            "b",
            "-p",
            &[
                assistant(&at(2), Some("x"), Some("r"), m, u(10, 1)),
                assistant(&at(2), Some("y"), Some("r"), m, u(5, 1)),
            ],
        );
        // A fuller copy of y: kept whatever the order.
        let mut c = file("c", "-p", &[assistant(&at(3), Some("y"), Some("r"), m, u(50, 1))]);
        (a.order, b.order, c.order) = (0, 1, 2);
        vec![a, b, c]
    };
    let by_session = CostQuery { by: GroupBy::Session, ..Default::default() };
    let mut seen = Vec::new();
    for perm in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]] {
        let mut fs: Vec<Option<FileUsage>> = files().into_iter().map(Some).collect();
        let l = ledger(perm.iter().map(|&i| fs[i].take().unwrap()).collect());
        let days: Vec<(String, u64)> =
            report(&l, &CostQuery::default()).rows.iter().map(|r| (r.key.clone(), r.totals.input_tokens)).collect();
        let sessions: Vec<String> = report(&l, &by_session).rows.iter().map(|r| r.key.clone()).collect();
        seen.push((days, sessions));
    }
    assert_eq!(seen[0].0, [("2026-11-01".to_owned(), 10), ("2026-11-03".to_owned(), 50)]);
    assert!(seen.iter().all(|s| *s == seen[0]), "{seen:?}");
}

#[test]
fn costs_sum_the_same_in_any_order() {
    let costs: Vec<f64> = (1..5000u32).map(|i| f64::from(i) * 0.000_003_7 + 1.0 / f64::from(i)).collect();
    let plain = |v: &mut dyn Iterator<Item = f64>| v.fold(0.0, |a, b| a + b);
    assert_ne!(plain(&mut costs.iter().copied()), plain(&mut costs.iter().rev().copied()), "a sum that does depend");
    let exact: Vec<f64> = costs.iter().map(|&c| exact_usd(c)).collect();
    assert_eq!(plain(&mut exact.iter().copied()), plain(&mut exact.iter().rev().copied()));
    assert!((plain(&mut exact.iter().copied()) - plain(&mut costs.iter().copied())).abs() < 1e-6);
}

/// Costs summed in any order are the same to the last digit (each request's cost is a
/// multiple of 2^-32 dollars), and a session's project is its first file's.
#[test]
fn the_dollars_do_not_depend_on_the_order_files_are_folded_in() {
    let files = || {
        (0..6u32)
            .map(|i| {
                let lines: Vec<Value> = (0..200u64)
                    .map(|j| {
                        let id = format!("m{i}-{j}");
                        let model = ["claude-opus-4-1", "claude-sonnet-4-6", "claude-haiku-4-5"][(j % 3) as usize];
                        let mut r =
                            assistant("2026-11-01T10:00:00.000Z", Some(&id), Some(&id), model, u(7 + j * 13, 3 + j));
                        r["cwd"] = json!(format!("/home/me/p{i}"));
                        r
                    })
                    .collect();
                let mut f = file(if i < 3 { "s" } else { "t" }, "-p", &lines);
                f.order = i;
                f
            })
            .collect::<Vec<_>>()
    };
    let to = |day: &str| day.parse::<NaiveDate>().unwrap();
    let mut seen = Vec::new();
    for perm in [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [3, 0, 5, 1, 4, 2]] {
        let mut fs: Vec<Option<FileUsage>> = files().into_iter().map(Some).collect();
        let l = ledger(perm.iter().map(|&i| fs[i].take().unwrap()).collect());
        let by_session = CostQuery { by: GroupBy::Session, ..Default::default() };
        let view = l.spend_view(PriceTable::vendored(), &utc_day, to("2026-11-02"), 7);
        seen.push(json!([report(&l, &CostQuery::default()), report(&l, &by_session), view]));
    }
    assert!(seen.iter().all(|s| *s == seen[0]), "{seen:?}");
    assert_eq!(seen[0][1]["rows"][0]["project"], json!("/home/me/p0"), "{}", seen[0][1]);
}

/// The Spend view: each day of the window split by project and by model (the costliest
/// named, the rest as "Other"), today / this week / this month whatever the window, the
/// costliest sessions of the window, unknown models named and not priced.
#[test]
fn the_spend_view_splits_days_by_project_and_model() {
    let sonnet = "claude-sonnet-4-6";
    let at = |ts: &str, id: &str, model: &str, input: u64| assistant(ts, Some(id), Some(id), model, u(input, 0));
    let mut files = vec![
        file(
            "s1",
            "-p1",
            &[
                at("2026-11-30T10:00:00Z", "a", sonnet, 100_000),
                at("2026-11-28T10:00:00Z", "b", sonnet, 100_000),
                at("2026-11-28T11:00:00Z", "c", "claude-mystery-9", 500),
            ],
        ),
        // Before the window, in the month: in the month's total only.
        file("s2", "-p2", &[at("2026-11-02T10:00:00Z", "d", sonnet, 150_000)]),
    ];
    // Nine more projects, one request each on the 29th: seven named, the rest "Other".
    for i in 0..9u64 {
        let mut f = file(
            &format!("t{i}"),
            &format!("-q{i}"),
            &[at("2026-11-29T10:00:00Z", &format!("q{i}"), sonnet, 1000 * (i + 1))],
        );
        f.cwd = Some(format!("/q{i}"));
        files.push(f);
    }
    let l = ledger(files);
    let v = l.spend_view(PriceTable::vendored(), &utc_day, day("2026-11-30"), 3);
    assert_eq!(v.days, ["2026-11-28", "2026-11-29", "2026-11-30"]);
    // $3 per million input tokens.
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert_eq!(v.today.tokens, 100_000);
    assert!(near(v.today.usd, 0.3), "{:?}", v.today);
    assert_eq!(v.week, v.today, "Monday the 30th: the week is today");
    assert_eq!(v.month.tokens, 200_500 + 150_000 + 45_000);
    assert!(near(v.month.usd, 0.3 + 0.3 + 0.45 + 0.135), "{:?}", v.month);
    assert_eq!(v.shown.tokens, 200_500 + 45_000);
    let names: Vec<&str> = v.by_project.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["/home/me/p1", "/q8", "/q7", "/q6", "/q5", "/q4", "/q3", "Other"]);
    assert_eq!(v.by_project[0].usd, [0.3, 0.0, 0.3]);
    let other = &v.by_project[7];
    assert_eq!(other.usd[1], round_usd(3e-6 * (1000.0 + 2000.0 + 3000.0)));
    let models: Vec<&str> = v.by_model.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(models, [sonnet], "a model with no price is no stack");
    assert_eq!(v.unknown_models, ["claude-mystery-9"]);
    assert_eq!(v.top_sessions[0].session_id, "s1");
    assert_eq!((v.top_sessions[0].usd, v.top_sessions[0].tokens), (0.6, 200_500));
    assert_eq!(v.top_sessions.len(), super::view::TOP_SESSIONS);
    assert!(!v.top_sessions.iter().any(|s| s.session_id == "s2"), "outside the window");
}
