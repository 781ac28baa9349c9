//! What a session cost: an estimate from the tokens the transcript records and a price
//! table kept here (dated; a model not in it is named as unknown, never guessed), and
//! what Claude Code 2.1.330 itself says was billed (its `cost-state` record, which also
//! counts the compaction calls the transcript leaves out).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::session::{Billed, ByModel, Cost, Usage};

/// The day the prices below were last checked.
pub const PRICES_AS_OF: &str = "2026-11-20";

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

/// Standard API prices; cache writes at 1.25x input (5-minute cache), reads at 0.1x.
const fn price(input: f64, output: f64) -> Price {
    Price { input, output, cache_write: input * 1.25, cache_read: input * 0.1 }
}

/// Model id prefixes (dated ids such as `claude-sonnet-4-5-20250929` match theirs), most
/// specific first. Opus 5.5's input and output prices are those Claude Code 2.1.330
/// itself bills (its `cost-state`: 4,000 in / 80 out = $0.0176).
const PRICES: &[(&str, Price)] = &[
    ("claude-opus-5-5", price(4.0, 20.0)),
    ("claude-opus-4-5", price(5.0, 25.0)),
    ("claude-opus-4-1", price(15.0, 75.0)),
    ("claude-opus-4-0", price(15.0, 75.0)),
    ("claude-opus-4-2", price(15.0, 75.0)),
    ("claude-sonnet-4-5", price(3.0, 15.0)),
    ("claude-sonnet-4-0", price(3.0, 15.0)),
    ("claude-sonnet-4-2", price(3.0, 15.0)),
    ("claude-3-7-sonnet", price(3.0, 15.0)),
    ("claude-haiku-4-5", price(1.0, 5.0)),
    ("claude-3-5-haiku", price(0.8, 4.0)),
];

/// The price of `model`, if the table knows it.
pub fn price_of(model: &str) -> Option<Price> {
    PRICES.iter().find(|(prefix, _)| model.starts_with(prefix)).map(|(_, p)| *p)
}

/// The cost of `usage` at `p`, in US dollars.
pub fn cost_of(usage: &Usage, p: &Price) -> f64 {
    let m = |tokens: u64, per_million: f64| tokens as f64 / 1e6 * per_million;
    m(usage.input_tokens, p.input)
        + m(usage.output_tokens, p.output)
        + m(usage.cache_creation_input_tokens, p.cache_write)
        + m(usage.cache_read_input_tokens, p.cache_read)
}

/// The cost of a session that used `by_model`.
pub fn estimate(by_model: &ByModel, billed: Option<Billed>) -> Cost {
    let mut total = 0.0;
    let mut priced = false;
    let mut unknown = Vec::new();
    for (model, usage) in by_model.iter() {
        match price_of(model) {
            Some(p) => {
                total += cost_of(usage, &p);
                priced = true;
            }
            None => unknown.push(model.to_owned()),
        }
    }
    Cost {
        estimated_usd: priced.then_some((total * 1e6).round() / 1e6),
        unknown_models: unknown,
        prices_as_of: PRICES_AS_OF.to_owned(),
        billed,
    }
}

/// The fields of a `cost-state` record Mimesis reads.
#[derive(Deserialize, Debug, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct CostState {
    #[serde(rename = "totalCostUSD")]
    pub total_cost_usd: Option<f64>,
    /// When the process's cost ledger started (ms since the epoch). A resumed process
    /// that restored the ledger from the transcript carries the same value; a process
    /// that started its own (the one before it crashed without writing) a new one.
    pub start_time: Option<f64>,
    pub model_usage: BTreeMap<String, ModelUsage>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ModelUsage {
    pub input_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
    pub cache_read_input_tokens: Option<f64>,
    pub cache_creation_input_tokens: Option<f64>,
}

/// A token count or dollar amount from outside: finite, not negative, not absurd.
fn sane(v: Option<f64>, max: f64) -> Option<f64> {
    v.filter(|x| x.is_finite() && *x >= 0.0 && *x <= max)
}

impl CostState {
    /// What the record says was billed, if it says so sanely.
    pub fn billed(&self) -> Option<Billed> {
        let cost_usd = sane(self.total_cost_usd, 1e9)?;
        let mut usage = Usage::default();
        let tokens = |v: Option<f64>| sane(v, crate::transcript::MAX_TOKENS as f64).map_or(0, |x| x as u64);
        for m in self.model_usage.values().take(64) {
            usage.add(&Usage {
                input_tokens: tokens(m.input_tokens),
                output_tokens: tokens(m.output_tokens),
                cache_creation_input_tokens: tokens(m.cache_creation_input_tokens),
                cache_read_input_tokens: tokens(m.cache_read_input_tokens),
            });
        }
        Some(Billed { cost_usd, usage })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(c.prices_as_of, PRICES_AS_OF);
    }

    #[test]
    fn unknown_models_are_named_not_guessed() {
        let u = Usage { input_tokens: 1_000_000, ..Default::default() };
        let c = estimate(&ByModel::from_iter([("claude-opus-4-8".to_owned(), u)]), None);
        assert_eq!(c.estimated_usd, None);
        assert_eq!(c.unknown_models, ["claude-opus-4-8"]);
        let c = estimate(
            &ByModel::from_iter([("claude-opus-4-8".to_owned(), u), ("claude-sonnet-4-5-20250929".to_owned(), u)]),
            None,
        );
        assert_eq!(c.estimated_usd, Some(3.0), "the priced part, with the unknown named");
        assert_eq!(c.unknown_models, ["claude-opus-4-8"]);
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
}
