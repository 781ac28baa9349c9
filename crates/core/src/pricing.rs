//! What tokens cost: LiteLLM's model price table (the table ccusage and most of the
//! ecosystem price with), its Anthropic models vendored in `data/prices.json` with the
//! version and date they were taken (`scripts/refresh-prices` takes them again), parsed
//! once; and what Claude Code 2.1.330 itself says was billed (its `cost-state` record,
//! which also counts the compaction calls the transcript leaves out).
//!
//! A model the table does not price is named as unknown, never guessed and never priced
//! as zero in silence. Names are matched as ccusage matches them ([`names`]): exactly,
//! else the longest table entry that the name spells with a date, a provider prefix or a
//! suffix around it.
//!
//! The tiers the table has: cache writes for 5 minutes and for an hour, cache reads, and a
//! long-context tier (`*_above_200k_tokens`, `*_above_100k_tokens`): a request whose context
//! (input, cache writes and reads) is over the threshold is priced at that tier's rates in
//! all its parts, as Anthropic bills it and LiteLLM prices it (ccusage instead splits each
//! part at the threshold).

mod names;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

use crate::session::{Billed, ByModel, Cost, Usage};

/// The vendored table (`scripts/refresh-prices` writes it).
const VENDORED: &str = include_str!("../data/prices.json");

/// US dollars per token, for each kind of token a request is billed for.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    /// Cache writes kept 5 minutes (Claude Code's default).
    pub cache_write_5m: f64,
    /// Cache writes kept an hour.
    pub cache_write_1h: f64,
    pub cache_read: f64,
}

/// A long-context tier: requests whose context is over `threshold` tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongContext {
    pub threshold: u64,
    pub rates: Rates,
}

/// The prices of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    pub rates: Rates,
    pub long_context: Option<LongContext>,
    /// What fast mode (`usage.speed: "fast"`) multiplies the cost by.
    pub fast_multiplier: f64,
    /// LiteLLM no longer lists it; kept from an earlier table.
    pub retired: bool,
}

/// The tokens of one API request, as its `usage` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestTokens {
    pub input: u64,
    pub output: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
}

impl RequestTokens {
    /// What the request sent: the tier is chosen by it.
    pub fn context(&self) -> u64 {
        self.input
            .saturating_add(self.cache_write_5m)
            .saturating_add(self.cache_write_1h)
            .saturating_add(self.cache_read)
    }
}

impl ModelPrice {
    /// The cost of one request in US dollars.
    pub fn cost(&self, t: &RequestTokens, fast: bool) -> f64 {
        let r = match &self.long_context {
            Some(l) if t.context() > l.threshold => &l.rates,
            _ => &self.rates,
        };
        let c = t.input as f64 * r.input
            + t.output as f64 * r.output
            + t.cache_write_5m as f64 * r.cache_write_5m
            + t.cache_write_1h as f64 * r.cache_write_1h
            + t.cache_read as f64 * r.cache_read;
        if fast { c * self.fast_multiplier } else { c }
    }
}

/// Where a table came from, for the report to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceSource {
    /// "LiteLLM 1.110.2" (or what a user's file says it is).
    pub name: String,
    /// The day it was taken (YYYY-MM-DD), when known.
    pub retrieved: Option<String>,
    /// The user's price file it was read from; `None` for the vendored table.
    pub file: Option<String>,
}

/// A price table: model names to prices.
#[derive(Debug, Clone)]
pub struct PriceTable {
    pub source: PriceSource,
    models: HashMap<String, ModelPrice>,
    /// Entries of the file that were left out, each with why.
    pub skipped: Vec<String>,
}

/// A price file that cannot be used at all.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PriceFileError {
    #[error("it is not JSON ({0})")]
    NotJson(String),
    #[error("it holds no model with an input and an output price")]
    NoPrices,
}

/// The most a token can cost here: $1 (a million dollars per million). More is a corrupt
/// file, not a price.
const MAX_PER_TOKEN: f64 = 1.0;

/// Most models a file may name (LiteLLM's whole table has about 5,000).
const MAX_MODELS: usize = 20_000;

static VENDORED_TABLE: LazyLock<PriceTable> =
    LazyLock::new(|| PriceTable::parse(VENDORED, None).expect("the vendored price table parses (pricing tests)"));

impl PriceTable {
    /// The table shipped with this build.
    pub fn vendored() -> &'static PriceTable {
        &VENDORED_TABLE
    }

    /// Reads a table: this repository's format (`{"version", "retrieved", "models": {…}}`)
    /// or LiteLLM's own file (a map of model names to entries). Entries without an input and
    /// an output price (other kinds of model, the sample spec) are left out quietly; entries
    /// with a price that cannot be one are left out and named in `skipped`.
    pub fn parse(json: &str, file: Option<&str>) -> Result<PriceTable, PriceFileError> {
        let doc: Value =
            crate::json::from_slice(json.as_bytes()).map_err(|e| PriceFileError::NotJson(e.to_string()))?;
        let Value::Object(mut top) = doc else {
            return Err(PriceFileError::NotJson("the file is not a JSON object".into()));
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| crate::text::clean_text(s, 80));
        let (entries, name, retrieved) = match top.remove("models") {
            Some(Value::Object(models)) => {
                let version = text(top.get("version"));
                let name = match version {
                    Some(v) => format!("LiteLLM {v}"),
                    None => "a price table".to_owned(),
                };
                (models, name, text(top.get("retrieved")))
            }
            _ => (top, "LiteLLM's price table".to_owned(), None),
        };
        let mut models = HashMap::new();
        let mut aliases = Vec::new();
        let mut skipped = Vec::new();
        for (model, entry) in entries.into_iter().take(MAX_MODELS) {
            if model.is_empty() || model.len() > 200 {
                continue;
            }
            match parse_entry(&entry) {
                Entry::Price(p) => {
                    models.insert(model, p);
                }
                Entry::Alias(target) => aliases.push((model, target)),
                Entry::NotPriced => {}
                Entry::Bad(why) => skipped.push(format!("{}: {why}", crate::text::clean_text(&model, 80))),
            }
        }
        for (alias, target) in aliases {
            if let Some(p) = models.get(&target).cloned() {
                models.entry(alias).or_insert(p);
            }
        }
        if models.is_empty() {
            return Err(PriceFileError::NoPrices);
        }
        let source = PriceSource { name, retrieved, file: file.map(str::to_owned) };
        Ok(PriceTable { source, models, skipped })
    }

    /// This table's entries over `base`'s: a user's file need only hold what it changes.
    pub fn over(mut self, base: &PriceTable) -> PriceTable {
        for (m, p) in &base.models {
            self.models.entry(m.clone()).or_insert_with(|| p.clone());
        }
        self
    }

    /// The price of `model`, matched as ccusage matches names; `None` when the table does
    /// not price it.
    pub fn find(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(p) = self.models.get(model) {
            return Some(p);
        }
        names::best_match(model, self.models.keys().map(String::as_str)).and_then(|k| self.models.get(k))
    }

    /// "LiteLLM 1.110.2 (2026-11-28)".
    pub fn describe(&self) -> String {
        match &self.source.retrieved {
            Some(d) => format!("{} ({d})", self.source.name),
            None => self.source.name.clone(),
        }
    }

    pub fn len(&self) -> usize {
        self.models.len()
    }

    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

enum Entry {
    Price(ModelPrice),
    Alias(String),
    /// Not a priced chat model (no input and output price): not an error.
    NotPriced,
    Bad(BadPrice),
}

fn parse_entry(v: &Value) -> Entry {
    let Value::Object(o) = v else { return Entry::NotPriced };
    if let Some(target) = o.get("alias_of").and_then(Value::as_str) {
        return Entry::Alias(target.to_owned());
    }
    let price = |key: &str| -> Result<Option<f64>, BadPrice> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x.is_finite() && (0.0..=MAX_PER_TOKEN).contains(&x) => Ok(Some(x)),
                _ => Err(BadPrice::NotAPrice { key: key.to_owned(), value: n.to_string() }),
            },
            Some(other) => Err(BadPrice::NotANumber { key: key.to_owned(), kind: kind(other) }),
        }
    };
    let read = || -> Result<Option<ModelPrice>, BadPrice> {
        let (Some(input), Some(output)) = (price("input_cost_per_token")?, price("output_cost_per_token")?) else {
            return Ok(None);
        };
        let write_5m = price("cache_creation_input_token_cost")?.unwrap_or(input * 1.25);
        let rates = Rates {
            input,
            output,
            cache_write_5m: write_5m,
            cache_write_1h: price("cache_creation_input_token_cost_above_1hr")?.unwrap_or(input * 2.0),
            cache_read: price("cache_read_input_token_cost")?.unwrap_or(input * 0.1),
        };
        let mut long_context = None;
        for threshold in tier_thresholds(o.keys()) {
            let k = |base: &str| format!("{base}_above_{}k_tokens", threshold / 1000);
            let Some(input_above) = price(&k("input_cost_per_token"))? else { continue };
            let tier = Rates {
                input: input_above,
                output: price(&k("output_cost_per_token"))?.unwrap_or(rates.output),
                cache_write_5m: price(&k("cache_creation_input_token_cost"))?.unwrap_or(rates.cache_write_5m),
                cache_write_1h: price(&k("cache_creation_input_token_cost_above_1hr"))?.unwrap_or(input_above * 2.0),
                cache_read: price(&k("cache_read_input_token_cost"))?.unwrap_or(rates.cache_read),
            };
            long_context = Some(LongContext { threshold, rates: tier });
            break;
        }
        let fast = o
            .get("fast_multiplier")
            .or_else(|| o.get("provider_specific_entry").and_then(|p| p.get("fast")))
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite() && (1.0..=100.0).contains(x))
            .unwrap_or(1.0);
        let retired = o.get("retired").and_then(Value::as_bool).unwrap_or(false);
        Ok(Some(ModelPrice { rates, long_context, fast_multiplier: fast, retired }))
    };
    match read() {
        Ok(Some(p)) => Entry::Price(p),
        Ok(None) => Entry::NotPriced,
        Err(why) => Entry::Bad(why),
    }
}

/// The thresholds of an entry's `*_above_<N>k_tokens` prices, lowest first (the tier a
/// request crosses first).
fn tier_thresholds<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<u64> {
    let mut out: Vec<u64> = keys
        .filter_map(|k| k.strip_prefix("input_cost_per_token_above_")?.strip_suffix("k_tokens")?.parse::<u64>().ok())
        .filter(|n| (1..=100_000).contains(n))
        .map(|n| n * 1000)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Why an entry of a price file was left out (the field and what it holds).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum BadPrice {
    #[error("{key} is {value}, not a price per token")]
    NotAPrice { key: String, value: String },
    #[error("{key} is {kind}, not a number")]
    NotANumber { key: String, kind: &'static str },
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The day the vendored prices were taken.
pub fn prices_as_of() -> String {
    PriceTable::vendored().source.retrieved.clone().unwrap_or_default()
}

/// The tokens of a session's [`Usage`] as one request (cache writes taken as 5-minute ones).
fn as_request(u: &Usage) -> RequestTokens {
    RequestTokens {
        input: u.input_tokens,
        output: u.output_tokens,
        cache_write_5m: u.cache_creation_input_tokens,
        cache_write_1h: 0,
        cache_read: u.cache_read_input_tokens,
    }
}

/// The cost of a session that used `by_model`, from its tokens per model at the vendored
/// table's base rates (the roster's estimate: its sums say nothing of which requests were
/// long or wrote the hour-long cache; `mimesis cost` prices each request).
pub fn estimate(by_model: &ByModel, billed: Option<Billed>) -> Cost {
    let table = PriceTable::vendored();
    let mut total = 0.0;
    let mut priced = false;
    let mut unknown = Vec::new();
    for (model, usage) in by_model.iter() {
        match table.find(model) {
            Some(p) => {
                let base = ModelPrice { long_context: None, ..p.clone() };
                total += base.cost(&as_request(usage), false);
                priced = true;
            }
            None => unknown.push(model.to_owned()),
        }
    }
    Cost {
        estimated_usd: priced.then_some((total * 1e6).round() / 1e6),
        unknown_models: unknown,
        prices_as_of: prices_as_of(),
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
