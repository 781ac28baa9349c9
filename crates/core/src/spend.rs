//! Spend: what Claude Code's API requests cost, summed by day, week, month, session,
//! project or model (`mimesis cost`, a [`CostReport`]), and per day by project and by model
//! for the window's Spend page (a [`SpendView`], `view.rs`).
//!
//! Pure. `mimesis-watch` reads the transcript files (in parallel) into one [`FileUsage`]
//! each, through the one transcript reader; here they are folded, in file order, into a
//! [`Ledger`] that keeps each request once as ccusage does (by `message.id` + `requestId`,
//! across files; of several copies the fullest, a main-chain copy before a sidechain's),
//! and the ledger is summed into a report for a [`CostQuery`], each request priced by
//! itself ([`crate::pricing`]). The local day of an instant comes from the caller (the
//! time zone is read from the system, which is I/O).

pub mod cache;
mod read;
#[cfg(test)]
mod tests;
mod view;

use std::collections::{BTreeMap, HashMap};

use chrono::Datelike;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::pricing::{ModelPrice, PriceTable, RequestTokens};
pub use chrono::NaiveDate;
pub use read::{FileUsage, MAX_LINE, Skipped, UsageEntry};
use read::{NO_MODEL, SYNTHETIC};
pub use view::{MAX_DAYS, SpendSeries, SpendSession, SpendTotal, SpendView};

/// What the rows of a report are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    #[default]
    Day,
    /// ISO weeks, Monday to Sunday (`2026-W45`).
    Week,
    Month,
    Session,
    Project,
    Model,
}

impl GroupBy {
    pub fn parse(s: &str) -> Result<GroupBy, CostArgError> {
        Ok(match s {
            "day" => GroupBy::Day,
            "week" => GroupBy::Week,
            "month" => GroupBy::Month,
            "session" => GroupBy::Session,
            "project" => GroupBy::Project,
            "model" => GroupBy::Model,
            _ => return Err(CostArgError::NotAGrouping(s.to_owned())),
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Day => "day",
            GroupBy::Week => "week",
            GroupBy::Month => "month",
            GroupBy::Session => "session",
            GroupBy::Project => "project",
            GroupBy::Model => "model",
        }
    }

    /// Rows in time order (else the costliest first).
    pub fn is_time(self) -> bool {
        matches!(self, GroupBy::Day | GroupBy::Week | GroupBy::Month)
    }
}

/// Which requests a report sums, and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostQuery {
    pub by: GroupBy,
    /// First and last local day included (`YYYY-MM-DD` in JSON).
    #[serde(default, with = "day_json")]
    pub since: Option<NaiveDate>,
    #[serde(default, with = "day_json")]
    pub until: Option<NaiveDate>,
    /// Only this project: its working folder, the folder's name, or the name of its folder
    /// under `projects/`.
    pub project: Option<String>,
}

/// A day on the command line: `2026-11-01` or `20261101`.
pub fn parse_day(s: &str) -> Result<NaiveDate, CostArgError> {
    let t = s.trim();
    let compact = t.len() == 8 && t.bytes().all(|b| b.is_ascii_digit());
    let parsed =
        if compact { NaiveDate::parse_from_str(t, "%Y%m%d") } else { NaiveDate::parse_from_str(t, "%Y-%m-%d") };
    parsed.map_err(|_| CostArgError::NotADate(s.to_owned()))
}

/// Why a cost query's words were refused: the sentence is the Display.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CostArgError {
    #[error("{0:?} is not a grouping: use day, week, month, session, project or model")]
    NotAGrouping(String),
    #[error("{:?} is not a date: write it as YYYY-MM-DD (2026-11-01) or YYYYMMDD", crate::text::clean_text(.0, 40))]
    NotADate(String),
    #[error("--since {since} is after --until {until}: nothing could match")]
    Backwards { since: NaiveDate, until: NaiveDate },
}

/// An optional day as `"YYYY-MM-DD"` or null.
mod day_json {
    use chrono::NaiveDate;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<NaiveDate>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.collect_str(&d.format("%Y-%m-%d")),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
        Option::<String>::deserialize(d)?.map(|s| super::parse_day(&s).map_err(serde::de::Error::custom)).transpose()
    }
}

impl CostQuery {
    /// Refuses a range that ends before it starts.
    pub fn check(&self) -> Result<(), CostArgError> {
        if let (Some(s), Some(u)) = (self.since, self.until)
            && s > u
        {
            return Err(CostArgError::Backwards { since: s, until: u });
        }
        Ok(())
    }
}

/// Tokens and dollars of a row or of the whole report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub total_tokens: u64,
    /// The estimate: each request at the table's price. Requests of unknown models are
    /// left out of it (and named in `unknownModels`).
    pub cost_usd: f64,
    /// Models used, by name.
    pub models: Vec<String>,
    /// Models used that the table does not price.
    pub unknown_models: Vec<String>,
}

impl Totals {
    fn add_tokens(&mut self, t: &RequestTokens) {
        self.input_tokens = self.input_tokens.saturating_add(t.input);
        self.output_tokens = self.output_tokens.saturating_add(t.output);
        self.cache_creation_input_tokens =
            self.cache_creation_input_tokens.saturating_add(t.cache_write_5m).saturating_add(t.cache_write_1h);
        self.cache_read_input_tokens = self.cache_read_input_tokens.saturating_add(t.cache_read);
    }

    fn add(&mut self, o: &Totals) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_creation_input_tokens =
            self.cache_creation_input_tokens.saturating_add(o.cache_creation_input_tokens);
        self.cache_read_input_tokens = self.cache_read_input_tokens.saturating_add(o.cache_read_input_tokens);
        self.cost_usd += o.cost_usd;
        merge_sorted(&mut self.models, &o.models);
        merge_sorted(&mut self.unknown_models, &o.unknown_models);
        self.finish();
    }

    fn finish(&mut self) {
        self.total_tokens = self
            .input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens);
    }
}

fn merge_sorted(into: &mut Vec<String>, from: &[String]) {
    into.extend(from.iter().cloned());
    into.sort();
    into.dedup();
}

/// One row: a day, week, month, session, project or model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostRow {
    /// `2026-11-01`, `2026-W45`, `2026-11`, a session id, a project's folder or a model.
    pub key: String,
    /// The machine the row is from: null for this one, else the SSH destination.
    pub host: Option<String>,
    #[serde(flatten)]
    pub totals: Totals,
    /// Session rows: the session's project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Session rows: what Claude Code says it billed (2.1.330's `cost-state`; it also
    /// counts compaction calls the transcript leaves out), when it wrote one after the
    /// session's last request (an earlier one is out of date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_usd: Option<f64>,
}

/// A model the table does not price, and how many tokens it used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnknownModel {
    pub model: String,
    pub tokens: u64,
    pub host: Option<String>,
}

/// The prices a report used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PricesUsed {
    /// "LiteLLM 1.110.2 (2026-11-28)".
    pub table: String,
    /// The user's price file, when one was used over the shipped table.
    pub file: Option<String>,
}

/// The report: rows, their total, and everything that was left out, in sentences.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostReport {
    pub by: GroupBy,
    pub rows: Vec<CostRow>,
    pub total: Totals,
    pub unknown_models: Vec<UnknownModel>,
    pub prices: PricesUsed,
    pub skipped: Skipped,
    /// What a reader must know about these figures: unknown models, records left out, a
    /// price file that could not be used. One sentence each.
    pub warnings: Vec<String>,
}

/// Every request once, over every file read so far.
#[derive(Debug, Default)]
pub struct Ledger {
    files: Vec<FileMeta>,
    models: Vec<String>,
    model_ids: HashMap<String, u32>,
    kept: Vec<Kept>,
    /// Kept requests by the hash of their `message.id`.
    by_message: HashMap<u64, Copies>,
    skipped: Skipped,
    /// Why files could not be read (the first few).
    errors: Vec<String>,
}

/// The kept requests of one `message.id`: nearly always one.
#[derive(Debug)]
enum Copies {
    One(u32),
    Many(Vec<u32>),
}

impl Copies {
    fn as_slice(&self) -> &[u32] {
        match self {
            Copies::One(i) => std::slice::from_ref(i),
            Copies::Many(v) => v,
        }
    }

    fn push(&mut self, i: u32) {
        match self {
            Copies::One(first) => *self = Copies::Many(vec![*first, i]),
            Copies::Many(v) => v.push(i),
        }
    }
}

#[derive(Debug)]
struct FileMeta {
    order: u32,
    session: String,
    project_dir: String,
    cwd: Option<String>,
    billed_usd: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    file: u32,
    entry: UsageEntry,
}

impl Ledger {
    /// Folds one file's records in, in any order: which copy of a request is kept
    /// depends on the files' `order`, not on which was read first.
    pub fn add(&mut self, f: FileUsage) {
        let file = self.files.len() as u32;
        let remap: Vec<u32> = f.models.iter().map(|m| self.model_id(m)).collect();
        self.skipped.add(&f.skipped);
        self.files.push(FileMeta {
            order: f.order,
            session: f.session,
            project_dir: f.project_dir,
            cwd: f.cwd,
            billed_usd: f.billed_usd,
        });
        for mut entry in f.entries {
            if let Some(&m) = remap.get(entry.model as usize) {
                entry.model = m;
            }
            self.keep(Kept { file, entry });
        }
    }

    /// A file that could not be read, and why.
    pub fn unreadable(&mut self, why: String) {
        self.skipped.unreadable_files += 1;
        if self.errors.len() < 3 {
            self.errors.push(why);
        }
    }

    fn model_id(&mut self, m: &str) -> u32 {
        if let Some(&i) = self.model_ids.get(m) {
            return i;
        }
        let i = self.models.len() as u32;
        self.models.push(m.to_owned());
        self.model_ids.insert(m.to_owned(), i);
        i
    }

    fn keep(&mut self, k: Kept) {
        let Some(message) = k.entry.message else {
            self.kept.push(k);
            return;
        };
        let next = self.kept.len() as u32;
        let copies = match self.by_message.entry(message) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Copies::One(next));
                self.kept.push(k);
                return;
            }
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
        };
        let kept = &self.kept;
        let same = copies
            .as_slice()
            .iter()
            .copied()
            .find(|&i| kept[i as usize].entry.request == k.entry.request)
            // A sidechain replays its parent's messages under new request ids.
            .or_else(|| {
                copies.as_slice().iter().copied().find(|&i| k.entry.sidechain || kept[i as usize].entry.sidechain)
            });
        match same {
            Some(i) => {
                let old = &self.kept[i as usize];
                let (order, old_order) = (self.files[k.file as usize].order, self.files[old.file as usize].order);
                if k.entry.better_than(order, &old.entry, old_order) {
                    self.kept[i as usize] = k;
                }
            }
            None => {
                copies.push(next);
                self.kept.push(k);
            }
        }
    }

    /// Requests kept (each once).
    pub fn requests(&self) -> usize {
        self.kept.len()
    }

    /// The report for `q`, at `prices`; `day_of` is the local day of an instant.
    pub fn report(&self, q: &CostQuery, prices: &PriceTable, day_of: &dyn Fn(Timestamp) -> NaiveDate) -> CostReport {
        let priced: Vec<Option<&ModelPrice>> = self.models.iter().map(|m| prices.find(m)).collect();
        let file_project: Vec<&str> =
            self.files.iter().map(|f| f.cwd.as_deref().unwrap_or(f.project_dir.as_str())).collect();
        let wanted: Vec<bool> =
            self.files.iter().map(|f| q.project.as_deref().is_none_or(|p| project_is(f, p))).collect();
        let mut rows: BTreeMap<RowKey<'_>, (Totals, Vec<u32>)> = BTreeMap::new();
        let mut unknown: BTreeMap<String, u64> = BTreeMap::new();
        let mut no_model_tokens = 0u64;
        for k in &self.kept {
            if !wanted[k.file as usize] {
                continue;
            }
            let e = &k.entry;
            let day = day_of(e.at);
            if q.since.is_some_and(|s| day < s) || q.until.is_some_and(|u| day > u) {
                continue;
            }
            let meta = &self.files[k.file as usize];
            let key = match q.by {
                GroupBy::Day => RowKey::Day(day),
                GroupBy::Week => RowKey::Week(day.iso_week().year(), day.iso_week().week()),
                GroupBy::Month => RowKey::Month(day.year(), day.month()),
                GroupBy::Session => RowKey::Text(&meta.session),
                GroupBy::Project => RowKey::Text(file_project[k.file as usize]),
                GroupBy::Model => match e.model {
                    NO_MODEL | SYNTHETIC => RowKey::Text("(no model)"),
                    m => RowKey::Text(&self.models[m as usize]),
                },
            };
            let (row, files) = rows.entry(key).or_default();
            if q.by == GroupBy::Session && !files.contains(&k.file) {
                files.push(k.file);
            }
            row.add_tokens(&e.tokens);
            match e.model {
                SYNTHETIC => {}
                NO_MODEL => {
                    if e.total() > 0 {
                        no_model_tokens = no_model_tokens.saturating_add(e.total());
                    }
                }
                m => {
                    let name = &self.models[m as usize];
                    if !row.models.contains(name) {
                        row.models.push(name.clone());
                    }
                    match priced[m as usize] {
                        Some(p) => row.cost_usd += exact_usd(p.cost(&e.tokens, e.fast)),
                        None => {
                            *unknown.entry(name.clone()).or_default() += e.total();
                            if !row.unknown_models.contains(name) {
                                row.unknown_models.push(name.clone());
                            }
                        }
                    }
                }
            }
        }
        let mut total = Totals::default();
        let mut out: Vec<CostRow> = rows
            .into_iter()
            .map(|(key, (mut totals, files))| {
                totals.models.sort();
                totals.unknown_models.sort();
                totals.finish();
                total.add(&totals);
                totals.cost_usd = round_usd(totals.cost_usd);
                let (project, billed_usd) = if q.by == GroupBy::Session {
                    let billed =
                        files.iter().filter_map(|&f| self.files[f as usize].billed_usd.map(exact_usd)).sum::<f64>();
                    let any = files.iter().any(|&f| self.files[f as usize].billed_usd.is_some());
                    let first = files.iter().min_by_key(|&&f| self.files[f as usize].order);
                    (first.map(|&f| file_project[f as usize].to_owned()), any.then(|| round_usd(billed)))
                } else {
                    (None, None)
                };
                CostRow { key: key.to_string(), host: None, totals, project, billed_usd }
            })
            .collect();
        total.cost_usd = round_usd(total.cost_usd);
        sort_rows(&mut out, q.by);
        let mut report = CostReport {
            by: q.by,
            rows: out,
            total,
            unknown_models: unknown
                .into_iter()
                .map(|(model, tokens)| UnknownModel { model, tokens, host: None })
                .collect(),
            prices: PricesUsed { table: prices.describe(), file: prices.source.file.clone() },
            skipped: self.skipped,
            warnings: Vec::new(),
        };
        report.warnings = warnings(&report, no_model_tokens, &self.errors);
        report
    }
}

/// What a row is, before it is written out: dates sort as dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum RowKey<'a> {
    Day(NaiveDate),
    Week(i32, u32),
    Month(i32, u32),
    Text(&'a str),
}

impl std::fmt::Display for RowKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowKey::Day(d) => write!(f, "{}", d.format("%Y-%m-%d")),
            RowKey::Week(y, w) => write!(f, "{y}-W{w:02}"),
            RowKey::Month(y, m) => write!(f, "{y}-{m:02}"),
            RowKey::Text(t) => f.write_str(t),
        }
    }
}

/// Does `f` belong to the project the user named?
fn project_is(f: &FileMeta, p: &str) -> bool {
    let p = p.trim_end_matches('/');
    f.project_dir == p
        || f.cwd.as_deref().is_some_and(|c| {
            let c = c.trim_end_matches('/');
            c == p || c.rsplit('/').next() == Some(p)
        })
}

fn round_usd(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One request's cost, rounded to a multiple of 2^-32 dollars (2.3e-10): sums of such
/// costs below 2^21 dollars are exact, so a report is the same whatever order the files
/// were read in (in parallel, or some from the cost cache).
pub(crate) fn exact_usd(x: f64) -> f64 {
    const Q: f64 = 4_294_967_296.0;
    (x * Q).round() / Q
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and its noun, singular for one: "1 session", "1,240 sessions".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// The report's figures that need a word, one sentence each.
fn warnings(r: &CostReport, no_model_tokens: u64, errors: &[String]) -> Vec<String> {
    let mut w = Vec::new();
    for u in &r.unknown_models {
        w.push(format!(
            "{} is not in the price table ({}): its {} are counted but not priced.",
            crate::text::clean_text(&u.model, 80),
            r.prices.table,
            plural(u.tokens, "token", "tokens")
        ));
    }
    if no_model_tokens > 0 {
        w.push(format!(
            "{} of requests that name no model are counted but not priced.",
            plural(no_model_tokens, "token", "tokens")
        ));
    }
    let s = &r.skipped;
    let left_out = [
        (
            s.invalid_tokens,
            "had token counts that cannot be right (negative, fractional, over 2^40, not numbers, null or missing)",
            "",
        ),
        (s.no_time, "had no readable timestamp", ""),
        (s.invalid_record, "had an empty id or model, or a version that is not one,", " (as ccusage leaves them out)"),
    ];
    for (n, why, after) in left_out.into_iter().filter(|(n, ..)| *n > 0) {
        let was = if n == 1 { "was" } else { "were" };
        w.push(format!("{} {why} and {was} left out{after}.", plural(n, "usage record", "usage records")));
    }
    if s.unreadable_lines > 0 {
        w.push(format!(
            "{} that {} usage {} not JSON (a torn write?) and {} skipped.",
            plural(s.unreadable_lines, "line", "lines"),
            if s.unreadable_lines == 1 { "mentions" } else { "mention" },
            if s.unreadable_lines == 1 { "is" } else { "are" },
            if s.unreadable_lines == 1 { "was" } else { "were" }
        ));
    }
    if s.unreadable_files > 0 {
        let first = errors.first().map(|e| format!(" ({})", crate::text::clean_text(e, 200))).unwrap_or_default();
        w.push(format!(
            "{} could not be read{first}; {} usage is not in these figures.",
            plural(s.unreadable_files, "transcript file", "transcript files"),
            if s.unreadable_files == 1 { "its" } else { "their" }
        ));
    }
    w
}

/// Several machines' reports as one: every row, named by its host, and one total. A
/// host's warnings are said with its name.
pub fn merge(mut local: Option<CostReport>, remote: Vec<(String, CostReport)>, by: GroupBy) -> CostReport {
    let mut out = local.take().unwrap_or_else(|| CostReport { by, ..Default::default() });
    for (host, mut r) in remote {
        for row in &mut r.rows {
            row.host = Some(host.clone());
        }
        for u in &mut r.unknown_models {
            u.host = Some(host.clone());
        }
        out.total.add(&r.total);
        out.total.cost_usd = round_usd(out.total.cost_usd);
        out.rows.extend(r.rows);
        out.unknown_models.extend(r.unknown_models);
        out.skipped.add(&r.skipped);
        out.warnings.extend(r.warnings.into_iter().map(|w| format!("{host}: {}", crate::text::clean_text(&w, 500))));
        if out.prices.table.is_empty() {
            out.prices = r.prices;
        }
    }
    sort_rows(&mut out.rows, by);
    out
}

/// Days, weeks and months in time order (their keys sort so), each key's machines in
/// order; other rows the costliest first.
fn sort_rows(rows: &mut [CostRow], by: GroupBy) {
    if by.is_time() {
        rows.sort_by(|a, b| a.key.cmp(&b.key).then_with(|| a.host.cmp(&b.host)));
    } else {
        rows.sort_by(|a, b| {
            b.totals
                .cost_usd
                .total_cmp(&a.totals.cost_usd)
                .then_with(|| a.key.cmp(&b.key))
                .then_with(|| a.host.cmp(&b.host))
        });
    }
}

/// The price table a report uses: the user's file over the shipped one, or the shipped
/// one with a sentence saying why the file could not be used.
pub fn price_table<E: std::fmt::Display>(file: Option<(&str, Result<String, E>)>) -> (PriceTable, Vec<String>) {
    let vendored = PriceTable::vendored();
    let Some((path, read)) = file else { return (vendored.clone(), Vec::new()) };
    let fallback = |why: String| {
        let w = format!(
            "The price file {path} could not be used ({why}); the prices shipped with Mimesis were used: {}.",
            vendored.describe()
        );
        (vendored.clone(), vec![w])
    };
    let text = match read {
        Ok(t) => t,
        Err(e) => return fallback(e.to_string()),
    };
    match PriceTable::parse(&text, Some(path)) {
        Ok(t) => {
            let mut w = Vec::new();
            if !t.skipped.is_empty() {
                w.push(format!(
                    "The price file {path}: {} left out ({}); the shipped prices stand for them.",
                    plural(t.skipped.len() as u64, "entry was", "entries were"),
                    t.skipped.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
                ));
            }
            (t.over(vendored), w)
        }
        Err(e) => fallback(e.to_string()),
    }
}
