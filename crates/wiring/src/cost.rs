//! Cost reports (`mimesis cost`, `--host` through `serve`'s `cost` request): the
//! transcripts of `roots` read once ([`mimesis_watch::spend`]), priced with the user's
//! price file over the shipped table, summed by local day (the system's time zone, `TZ`
//! respected) into [`mimesis_core::spend::CostReport`]. Needs neither the fleet database
//! nor a running Mimesis; writes only its cache, `<data_dir>/cost-cache.bin`
//! ([`mimesis_watch::spend::cache`]: what each transcript file contributed, so that the
//! next report reads only the files that changed; deleting it is safe).

use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, NaiveDate};
use mimesis_core::clock::Timestamp;
use mimesis_core::pricing::PriceTable;
use mimesis_core::remote::FromRemote;
use mimesis_core::spend::{self, CostQuery, CostReport, SpendView};

/// The price file read from the data folder when none is named.
pub const PRICE_FILE: &str = "prices.json";

/// A price file larger than this is not one (LiteLLM's whole table is about 3.5 MB).
const MAX_PRICE_FILE: u64 = 64 * 1024 * 1024;

pub use mimesis_watch::spend::Reading;

/// The report for `q` over the transcripts of `roots`. `prices`: a price file the user
/// named (said when it cannot be used); else `<data_dir>/prices.json` when it exists.
/// `how`: [`Reading::Mapped`] only in a short-lived process that says a bus error
/// ([`mimesis_os::files::say_on_bus_error`]); every caller now reads copied.
pub fn report(roots: &[PathBuf], data_dir: &Path, q: &CostQuery, prices: Option<&Path>, how: Reading) -> CostReport {
    let (table, price_warnings) = price_table(data_dir, prices);
    let ledger = read(roots, data_dir, how);
    let mut r = ledger.report(q, &table, &local_day);
    r.warnings.splice(0..0, price_warnings);
    r
}

/// The window's Spend view of the `days` days up to today (local time), over the
/// transcripts of `roots`, read copied (the window lives long), with the data folder's
/// price file when there is one.
pub fn spend_view(roots: &[PathBuf], data_dir: &Path, days: u32) -> SpendView {
    let (table, price_warnings) = price_table(data_dir, None);
    let ledger = read(roots, data_dir, Reading::Copied);
    let today = Local::now().date_naive();
    let mut v = ledger.spend_view(&table, &local_day, today, days);
    v.warnings.splice(0..0, price_warnings);
    v
}

/// Every request of the transcripts of `roots`, through the data folder's cost cache.
fn read(roots: &[PathBuf], data_dir: &Path, how: Reading) -> mimesis_core::spend::Ledger {
    mimesis_watch::spend::cache::read(roots, how, &data_dir.join(mimesis_watch::spend::cache::FILE))
}

/// The user's price file (`named`, else `<data_dir>/prices.json` when it exists) over the
/// shipped table, with why it could not be used.
fn price_table(data_dir: &Path, named: Option<&Path>) -> (PriceTable, Vec<String>) {
    let default = data_dir.join(PRICE_FILE);
    let file = match named {
        Some(p) => Some(p.to_owned()),
        None => default.exists().then_some(default),
    };
    match file {
        Some(p) => spend::price_table(Some((p.display().to_string().as_str(), read_price_file(&p)))),
        None => spend::price_table(None::<(&str, Result<String, PriceFileUnread>)>),
    }
}

/// Why the user's price file was not read: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
enum PriceFileUnread {
    #[error("there is no such file")]
    Missing,
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("it is larger than {} MB", MAX_PRICE_FILE >> 20)]
    TooLarge,
}

fn read_price_file(p: &Path) -> Result<String, PriceFileUnread> {
    let f = mimesis_os::files::open_regular(p, mimesis_os::files::Links::Follow).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => PriceFileUnread::Missing,
        _ => e.into(),
    })?;
    let mut text = String::new();
    f.take(MAX_PRICE_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PRICE_FILE {
        return Err(PriceFileUnread::TooLarge);
    }
    Ok(text)
}

/// The day `t` falls on here (the system's time zone; `TZ` overrides it).
pub fn local_day(t: Timestamp) -> NaiveDate {
    match DateTime::from_timestamp_millis(t.millis()) {
        Some(utc) => utc.with_timezone(&Local).date_naive(),
        None => NaiveDate::default(),
    }
}

/// The answer to a `cost` request: this machine's report (its own price file applies).
pub(crate) fn reply(roots: &[PathBuf], data_dir: &Path, req: u64, query: CostQuery, how: Reading) -> FromRemote {
    let query = CostQuery { project: query.project.map(|p| mimesis_core::text::clean_text(&p, 4096)), ..query };
    match query.check() {
        Ok(()) => FromRemote::Cost { req, report: Box::new(report(roots, data_dir, &query, None, how)) },
        Err(e) => FromRemote::Error { req: Some(req), message: e.to_string() },
    }
}
