use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_vendored_table_is_litellm_with_its_version_and_date() {
    let t = PriceTable::vendored();
    assert!(t.len() > 100, "{} models", t.len());
    assert!(t.source.name.starts_with("LiteLLM 1."), "{}", t.source.name);
    let day = t.source.retrieved.as_deref().unwrap();
    assert!(chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok(), "{day}");
    assert_eq!(t.source.file, None);
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    assert_eq!(prices_as_of(), day);
}

/// The names Claude Code writes, and their spellings with a date, a provider or a suffix,
/// cost what ccusage 20.0.24 (`daily --json --offline`) says for the same request: 100,000
/// input, 10,000 output, 1,000 cache-write and 50,000 cache-read tokens.
#[test]
fn names_price_as_ccusage_prices_them() {
    let t = PriceTable::vendored();
    let req =
        RequestTokens { input: 100_000, output: 10_000, cache_write_5m: 1_000, cache_write_1h: 0, cache_read: 50_000 };
    let ccusage = [
        ("anthropic/claude-sonnet-4-6", 0.46875),
        ("claude-3-5-sonnet-20241022", 0.46875),
        ("claude-3-7-sonnet-20250219", 0.46875),
        ("claude-3-haiku-20240307", 0.0393),
        ("claude-fable-5", 1.5625),
        ("claude-haiku-4-5-20251001", 0.15625),
        ("claude-opus-4", 2.34375),
        ("claude-opus-4-1", 2.34375),
        ("claude-opus-4-5-20251101", 0.78125),
        ("claude-opus-4-8", 0.78125),
        ("claude-opus-4-8-20260101", 0.78125),
        ("claude-sonnet-4-20250514", 0.46875),
        ("claude-sonnet-4-5", 0.46875),
        ("claude-sonnet-4-5-20250929", 0.46875),
        ("claude-sonnet-4-6", 0.46875),
        ("claude-sonnet-4-6-20260101", 0.46875),
        ("claude-sonnet-4-6[1m]", 0.46875),
        ("claude-sonnet-5", 0.3125),
        ("us.anthropic.claude-sonnet-4-6", 0.515625),
    ];
    for (model, usd) in ccusage {
        let p = t.find(model).unwrap_or_else(|| panic!("{model} is not priced"));
        let got = p.cost(&req, false);
        assert!(close(got, usd), "{model}: {got} where ccusage says {usd}");
    }
    // Newer than ccusage 20.0.24's own table: priced here, $0 there.
    assert!(close(t.find("claude-opus-5-5").unwrap().cost(&req, false), 0.615));
}

#[test]
fn unknown_and_family_names_are_not_guessed() {
    let t = PriceTable::vendored();
    for model in ["claude-opus-4-9", "foo", "gpt-4o", "sonnet", "claude", "", "<synthetic>", "claude-opus-4-88"] {
        assert!(t.find(model).is_none(), "{model:?} was priced");
    }
    let long = "claude-sonnet-4-6".repeat(20);
    assert!(t.find(&long).is_none());
}

#[test]
fn names_match_between_boundaries_and_not_across_versions() {
    let keys = ["claude-opus-4", "claude-opus-4-8", "vertex_ai/claude-sonnet-4-5@20250929", "claude-haiku-4-5"];
    let m = |name: &str| names::best_match(name, keys.iter().copied());
    assert_eq!(m("claude-opus-4-8-20260101"), Some("claude-opus-4-8"), "a date is the same model");
    assert_eq!(m("claude-opus-4-20250514"), Some("claude-opus-4"));
    assert_eq!(m("claude-opus-4-7"), None, "another version is another model");
    assert_eq!(m("claude-sonnet-4-5@20250929"), Some("vertex_ai/claude-sonnet-4-5@20250929"));
    assert_eq!(m("claude-sonnet-4-5-20250929"), Some("vertex_ai/claude-sonnet-4-5@20250929"), "@ reads as -");
    assert_eq!(m("xclaude-haiku-4-5"), None, "no boundary before");
    assert_eq!(m("claude-haiku-4-5x"), None, "no boundary after");
    assert_eq!(m("bedrock/claude-haiku-4-5:0"), Some("claude-haiku-4-5"));
}

#[test]
fn cache_tiers_and_fast_mode_follow_the_table() {
    let t = PriceTable::vendored();
    // The 1-hour cache write at its own price (2x input), the 5-minute one at 1.25x; as
    // ccusage prices it: $1.593.
    let sonnet = t.find("claude-sonnet-4-6").unwrap();
    let req =
        RequestTokens { input: 1000, output: 1000, cache_write_5m: 100_000, cache_write_1h: 200_000, cache_read: 0 };
    assert!(close(sonnet.cost(&req, false), 1.593), "{}", sonnet.cost(&req, false));
    // Fast mode: the table's multiplier (ccusage: $0.06).
    let opus = t.find("claude-opus-4-8").unwrap();
    let req = RequestTokens { input: 1000, output: 1000, ..Default::default() };
    assert!(close(opus.cost(&req, true), 0.06));
    assert!(close(opus.cost(&req, false), 0.03));
}

#[test]
fn a_long_request_is_priced_at_the_long_context_tier_in_all_its_parts() {
    let t = PriceTable::vendored();
    let p = t.find("claude-sonnet-4-5-20250929-v1:0").unwrap();
    let tier = p.long_context.expect("Sonnet 4.5 on Bedrock has a tier above 200k tokens");
    assert_eq!(tier.threshold, 200_000);
    // 300k input, 1k output: all of it at $6 / $22.50 (ccusage: $1.215, the first 200k at $3).
    let req = RequestTokens { input: 300_000, output: 1_000, ..Default::default() };
    assert!(close(p.cost(&req, false), 1.8225), "{}", p.cost(&req, false));
    // The context counts cache reads: 1k input over 300k read is a long request.
    let req = RequestTokens { input: 1_000, output: 1_000, cache_read: 300_000, ..Default::default() };
    assert!(close(p.cost(&req, false), 0.006 + 0.0225 + 0.18));
    // At the threshold, not over it: base rates.
    let req = RequestTokens { input: 200_000, ..Default::default() };
    assert!(close(p.cost(&req, false), 0.6));
}

#[test]
fn a_user_file_is_read_in_either_format_and_goes_over_the_vendored_one() {
    let litellm = r#"{"sample_spec": {"input_cost_per_token": "in USD"},
        "claude-new-1": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                         "input_cost_per_token_above_100k_tokens": 3e-6, "provider_specific_entry": {"fast": 3}},
        "claude-new-latest": {"alias_of": "claude-new-1"},
        "embedding-x": {"input_cost_per_token": 1e-7, "mode": "embedding"}}"#;
    let t = PriceTable::parse(litellm, Some("/d/prices.json")).unwrap();
    assert_eq!(t.source.file.as_deref(), Some("/d/prices.json"));
    assert_eq!(t.skipped, ["sample_spec: input_cost_per_token is a string, not a number"]);
    let p = t.find("claude-new-latest").unwrap();
    assert!(
        close(p.rates.cache_write_5m, 1.25e-6)
            && close(p.rates.cache_read, 1e-7)
            && close(p.rates.cache_write_1h, 2e-6)
    );
    assert_eq!(p.long_context.unwrap().threshold, 100_000);
    assert_eq!(p.fast_multiplier, 3.0);
    let merged = t.over(PriceTable::vendored());
    assert!(merged.find("claude-new-1").is_some() && merged.find("claude-sonnet-4-6").is_some());
    let ours = r#"{"version": "9.9.9", "retrieved": "2027-01-02", "models": {
        "claude-sonnet-4-6": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}}"#;
    let t = PriceTable::parse(ours, None).unwrap().over(PriceTable::vendored());
    assert_eq!(t.describe(), "LiteLLM 9.9.9 (2027-01-02)");
    assert_eq!(t.find("claude-sonnet-4-6").unwrap().rates.input, 1e-6, "the user's price wins");
}

#[test]
fn a_corrupt_price_file_is_refused_with_why() {
    assert!(matches!(PriceTable::parse("{not json", None), Err(PriceFileError::NotJson(_))));
    assert!(matches!(PriceTable::parse("[1,2]", None), Err(PriceFileError::NotJson(_))));
    assert_eq!(PriceTable::parse("{}", None).unwrap_err(), PriceFileError::NoPrices);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(PriceTable::parse(&deep, None), Err(PriceFileError::NotJson(_))));
    let bad = r#"{"claude-a": {"input_cost_per_token": -1, "output_cost_per_token": 1e-6},
                 "claude-b": {"input_cost_per_token": 1e300, "output_cost_per_token": 1e-6},
                 "claude-c": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}"#;
    let t = PriceTable::parse(bad, None).unwrap();
    assert_eq!(t.len(), 1);
    let mut skipped = t.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            "claude-a: input_cost_per_token is -1, not a price per token",
            "claude-b: input_cost_per_token is 1e+300, not a price per token"
        ]
    );
    let err = PriceTable::parse(r#"{"claude-a": {"input_cost_per_token": -1, "output_cost_per_token": 1}}"#, None);
    assert_eq!(err.unwrap_err(), PriceFileError::NoPrices);
}

#[test]
fn tokens_per_model_are_stored_as_the_map_they_stand_for() {
    let u = |n| Usage { output_tokens: n, ..Default::default() };
    let mut by = ByModel::default();
    by.add("claude-z", &u(1));
    by.add("claude-a", &u(2));
    by.add("claude-z", &u(3));
    let json = serde_json::to_string(&by).unwrap();
    let as_map: BTreeMap<String, Usage> = serde_json::from_str(&json).unwrap();
    assert_eq!(as_map, BTreeMap::from([("claude-a".to_owned(), u(2)), ("claude-z".to_owned(), u(4))]));
    assert_eq!(json, serde_json::to_string(&as_map).unwrap(), "the same bytes as the map it replaced");
    assert_eq!(serde_json::from_str::<ByModel>(&json).unwrap(), by);
}

#[test]
fn opus_5_5_costs_what_claude_code_bills() {
    let u = Usage { input_tokens: 4000, output_tokens: 80, ..Default::default() };
    let by_model = ByModel::from_iter([("claude-opus-5-5".to_owned(), u)]);
    let c = estimate(&by_model, None);
    assert_eq!(c.estimated_usd, Some(0.0176));
    assert!(c.unknown_models.is_empty());
    assert_eq!(c.prices_as_of, prices_as_of());
}

#[test]
fn unknown_models_are_named_not_guessed() {
    let u = Usage { input_tokens: 1_000_000, ..Default::default() };
    let c = estimate(&ByModel::from_iter([("claude-opus-4-9".to_owned(), u)]), None);
    assert_eq!(c.estimated_usd, None);
    assert_eq!(c.unknown_models, ["claude-opus-4-9"]);
    let c =
        estimate(&ByModel::from_iter([("claude-opus-4-9".to_owned(), u), ("claude-sonnet-4-6".to_owned(), u)]), None);
    assert_eq!(c.estimated_usd, Some(3.0), "the priced part, with the unknown named");
    assert_eq!(c.unknown_models, ["claude-opus-4-9"]);
}

#[test]
fn a_cost_state_record_is_read_sanely() {
    let rec: CostState = serde_json::from_str(
        r#"{"type":"cost-state","totalCostUSD":0.0176,"modelUsage":{"claude-opus-5-5":{"inputTokens":4000,
        "outputTokens":80,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0176}}}"#,
    )
    .unwrap();
    let b = rec.billed().unwrap();
    assert_eq!(b.cost_usd, 0.0176);
    assert_eq!((b.usage.input_tokens, b.usage.output_tokens), (4000, 80));
    let bad: CostState = serde_json::from_str(r#"{"totalCostUSD":-1,"modelUsage":{}}"#).unwrap();
    assert_eq!(bad.billed(), None);
    let huge: CostState =
        serde_json::from_str(r#"{"totalCostUSD":1,"modelUsage":{"m":{"inputTokens":1e300}}}"#).unwrap();
    assert_eq!(huge.billed().unwrap().usage.input_tokens, 0);
}
