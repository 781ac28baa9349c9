//! The window's Spend view: one pass over the [`Ledger`] gives the cost of each of the
//! last days split by project and by model (the chart's two stackings), the totals of
//! today, this ISO week and this month, and the costliest sessions of the days shown.

use std::collections::HashMap;

use chrono::{Datelike, Days, NaiveDate};
use serde::{Deserialize, Serialize};

use super::read::{NO_MODEL, SYNTHETIC};
use super::{Ledger, round_usd};
use crate::clock::Timestamp;
use crate::pricing::PriceTable;

/// The most days a view covers (a year).
pub const MAX_DAYS: u32 = 366;
/// Named series of a stacking; the rest are summed as [`OTHER`].
pub const MAX_SERIES: usize = 7;
/// The series of everything past the [`MAX_SERIES`] costliest.
pub const OTHER: &str = "Other";
/// Sessions listed as the costliest.
pub const TOP_SESSIONS: usize = 10;

/// One stack of the chart: a project's or a model's cost on each day of the view.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendSeries {
    /// A project's folder (its working directory), a model, or "Other".
    pub name: String,
    /// Dollars on each day of [`SpendView::days`], in the same order.
    pub usd: Vec<f64>,
}

/// A sum over some days: dollars (estimated) and tokens.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendTotal {
    pub usd: f64,
    pub tokens: u64,
}

impl SpendTotal {
    fn add(&mut self, usd: f64, tokens: u64) {
        self.usd += usd;
        self.tokens = self.tokens.saturating_add(tokens);
    }

    fn rounded(self) -> SpendTotal {
        SpendTotal { usd: round_usd(self.usd), tokens: self.tokens }
    }
}

/// One of the costliest sessions of the days shown.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendSession {
    pub session_id: String,
    pub project: String,
    /// Estimated over the days shown.
    pub usd: f64,
    pub tokens: u64,
    /// Its last request's time (ms since the epoch).
    pub last_at: i64,
}

/// What the Spend view shows (docs/ipc.md `spend_view`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendView {
    /// The days shown, oldest first, the last one today (`2026-11-28`, local time).
    pub days: Vec<String>,
    /// The chart stacked by project: the costliest first, then "Other".
    pub by_project: Vec<SpendSeries>,
    /// The chart stacked by model: the costliest first, then "Other".
    pub by_model: Vec<SpendSeries>,
    /// All the days shown.
    pub shown: SpendTotal,
    pub today: SpendTotal,
    /// Monday to today.
    pub week: SpendTotal,
    /// The 1st of the month to today.
    pub month: SpendTotal,
    /// The costliest sessions of the days shown, the costliest first.
    pub top_sessions: Vec<SpendSession>,
    /// "LiteLLM 1.110.2 (2026-11-28)".
    pub prices: String,
    /// Models used in the days shown that the table does not price (their tokens are
    /// counted, not priced).
    pub unknown_models: Vec<String>,
    /// What a reader must know about these figures (a price file that could not be used,
    /// transcripts that could not be read), one sentence each.
    pub warnings: Vec<String>,
}

/// Sums by key into per-day columns.
struct Stacks<'a> {
    days: usize,
    by: HashMap<&'a str, Vec<f64>>,
}

impl<'a> Stacks<'a> {
    fn new(days: usize) -> Self {
        Stacks { days, by: HashMap::new() }
    }

    fn add(&mut self, key: &'a str, day: usize, usd: f64) {
        let days = self.days;
        self.by.entry(key).or_insert_with(|| vec![0.0; days])[day] += usd;
    }

    /// The costliest [`MAX_SERIES`] by name, then the rest as one; none without cost.
    fn series(self) -> Vec<SpendSeries> {
        let mut all: Vec<(&str, Vec<f64>, f64)> = self
            .by
            .into_iter()
            .map(|(k, v)| {
                let sum = v.iter().sum();
                (k, v, sum)
            })
            .filter(|(_, _, sum)| *sum > 0.0)
            .collect();
        all.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        let mut out: Vec<SpendSeries> = Vec::new();
        let mut other = vec![0.0; self.days];
        let many = all.len() > MAX_SERIES + 1;
        for (i, (k, v, _)) in all.into_iter().enumerate() {
            if many && i >= MAX_SERIES {
                other.iter_mut().zip(&v).for_each(|(o, x)| *o += x);
            } else {
                out.push(SpendSeries { name: k.to_owned(), usd: v });
            }
        }
        if many {
            out.push(SpendSeries { name: OTHER.to_owned(), usd: other });
        }
        for s in &mut out {
            s.usd.iter_mut().for_each(|x| *x = round_usd(*x));
        }
        out
    }
}

impl Ledger {
    /// The Spend view of the `days` days up to `today` (at most [`MAX_DAYS`]), at `prices`;
    /// `day_of` is the local day of an instant.
    pub fn spend_view(
        &self,
        prices: &PriceTable,
        day_of: &dyn Fn(Timestamp) -> NaiveDate,
        today: NaiveDate,
        days: u32,
    ) -> SpendView {
        let days = days.clamp(1, MAX_DAYS);
        let first = today.checked_sub_days(Days::new(u64::from(days - 1))).unwrap_or(today);
        let week_start =
            today.checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday()))).unwrap_or(today);
        let month_start = today.with_day(1).unwrap_or(today);
        let earliest = first.min(week_start).min(month_start);
        let priced: Vec<_> = self.models.iter().map(|m| prices.find(m)).collect();
        let project: Vec<&str> = self.files.iter().map(|f| f.cwd.as_deref().unwrap_or(&f.project_dir)).collect();
        let (mut by_project, mut by_model) = (Stacks::new(days as usize), Stacks::new(days as usize));
        let (mut shown, mut today_t, mut week, mut month) = Default::default();
        let mut sessions: HashMap<&str, (usize, SpendTotal, i64)> = HashMap::new();
        let mut unknown: Vec<&str> = Vec::new();
        for k in &self.kept {
            let e = &k.entry;
            let day = day_of(e.at);
            if day < earliest || day > today {
                continue;
            }
            let name = match e.model {
                NO_MODEL | SYNTHETIC => None,
                m => Some(m as usize),
            };
            let usd = match name.map(|m| (m, priced[m])) {
                Some((_, Some(p))) => super::exact_usd(p.cost(&e.tokens, e.fast)),
                Some((m, None)) => {
                    if day >= first && !unknown.contains(&self.models[m].as_str()) {
                        unknown.push(&self.models[m]);
                    }
                    0.0
                }
                None => 0.0,
            };
            let tokens = e.total();
            if day == today {
                SpendTotal::add(&mut today_t, usd, tokens);
            }
            if day >= week_start {
                SpendTotal::add(&mut week, usd, tokens);
            }
            if day >= month_start {
                SpendTotal::add(&mut month, usd, tokens);
            }
            if day < first {
                continue;
            }
            SpendTotal::add(&mut shown, usd, tokens);
            let i = (day - first).num_days() as usize;
            let file = k.file as usize;
            by_project.add(project[file], i, usd);
            by_model.add(name.map_or("(no model)", |m| self.models[m].as_str()), i, usd);
            let s = sessions.entry(&self.files[file].session).or_insert((file, SpendTotal::default(), 0));
            // The session's project is its first file's (in path order).
            if self.files[file].order < self.files[s.0].order {
                s.0 = file;
            }
            s.1.add(usd, tokens);
            s.2 = s.2.max(e.at.millis());
        }
        let mut top: Vec<SpendSession> = sessions
            .into_iter()
            .map(|(id, (file, t, last_at))| SpendSession {
                session_id: id.to_owned(),
                project: project[file].to_owned(),
                usd: round_usd(t.usd),
                tokens: t.tokens,
                last_at,
            })
            .collect();
        top.sort_by(|a, b| {
            b.usd.total_cmp(&a.usd).then(b.tokens.cmp(&a.tokens)).then_with(|| a.session_id.cmp(&b.session_id))
        });
        top.truncate(TOP_SESSIONS);
        unknown.sort_unstable();
        SpendView {
            days: (0..days)
                .filter_map(|i| first.checked_add_days(Days::new(u64::from(i))))
                .map(|d| d.format("%Y-%m-%d").to_string())
                .collect(),
            by_project: by_project.series(),
            by_model: by_model.series(),
            shown: SpendTotal::rounded(shown),
            today: SpendTotal::rounded(today_t),
            week: SpendTotal::rounded(week),
            month: SpendTotal::rounded(month),
            top_sessions: top,
            prices: prices.describe(),
            unknown_models: unknown.into_iter().map(str::to_owned).collect(),
            warnings: self
                .errors
                .iter()
                .take(1)
                .map(|e| {
                    format!(
                        "A transcript could not be read ({}); its usage is not in these figures.",
                        crate::text::clean_text(e, 200)
                    )
                })
                .collect(),
        }
    }
}
