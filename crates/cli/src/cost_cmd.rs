//! `mimesis cost`: what Claude Code's requests cost, by day, week, month, session, project
//! or model, on this machine and others (`--host`). The report is the wiring's
//! ([`mimesis_wiring::cost`]); this parses the command line, asks the hosts, and prints.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use mimesis_core::SystemClock;
use mimesis_core::spend::{self, CostQuery, CostReport, CostRow, GroupBy, NaiveDate};
use mimesis_wiring::remote;

use crate::remote_cmd::RemoteArgs;
use crate::render;
use crate::term::{self, Term};

#[derive(clap::Args)]
pub struct CostArgs {
    /// What a row is: day, week (ISO, Monday to Sunday), month, session, project or model.
    #[arg(long, value_name = "ROWS", default_value = "day", value_parser = GroupBy::parse)]
    by: GroupBy,
    /// The first day counted (local time): YYYY-MM-DD or YYYYMMDD.
    #[arg(long, value_name = "DATE", value_parser = spend::parse_day)]
    since: Option<NaiveDate>,
    /// The last day counted (local time): YYYY-MM-DD or YYYYMMDD.
    #[arg(long, value_name = "DATE", value_parser = spend::parse_day)]
    until: Option<NaiveDate>,
    /// Only this project: its folder (/home/me/proj), that folder's name (proj), or its
    /// folder under projects/ (-home-me-proj).
    #[arg(long, value_name = "P")]
    project: Option<String>,
    /// Prices to use over the shipped ones: a file in LiteLLM's format
    /// (model_prices_and_context_window.json) or Mimesis's. Default: prices.json in the
    /// data folder, when there is one.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Print the report as one JSON object (docs/ipc.md).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

pub fn run(roots: &[PathBuf], data_dir: &Path, a: CostArgs) -> anyhow::Result<()> {
    let query = CostQuery { by: a.by, since: a.since, until: a.until, project: a.project.clone() };
    query.check().map_err(anyhow::Error::msg)?;
    let (remote, failed) = reports(&a.remote, &query)?;
    // Read copied, not mapped: on the 1.36 GB corpus 0.27 s against 0.31 s and 16 MB against
    // 22 MB peak (the mapping's page faults and the shootdowns of its released pages cost
    // more than the copy from the page cache).
    let how = mimesis_wiring::cost::Reading::Copied;
    let local =
        (!a.remote.no_local).then(|| mimesis_wiring::cost::report(roots, data_dir, &query, a.prices.as_deref(), how));
    let report = spend::merge(local, remote, query.by);
    let mut out = Term::stdout();
    if a.json {
        term::json_line(&mut out, &report)?;
    } else {
        table(&mut out, &report)?;
    }
    out.flush()?;
    drop(out);
    // The figures' caveats go to stderr as well (they are in the JSON already).
    if a.json {
        for w in &report.warnings {
            term::say(format_args!("mimesis: {}", render::sanitize(w, false)));
        }
    }
    if failed {
        anyhow::bail!("some machines could not be read (see above)");
    }
    Ok(())
}

/// Every host's report, asked at once. Failures are said on stderr; true when any failed.
fn reports(args: &RemoteArgs, query: &CostQuery) -> anyhow::Result<(Vec<(String, CostReport)>, bool)> {
    let (answers, failed) = crate::remote_cmd::ask_each(args, |ssh, d, exe| {
        let q = query.clone();
        async move { remote::cost(&ssh, &d, &q, exe.as_deref(), &SystemClock).await }
    })?;
    Ok((answers.into_iter().map(|(d, r)| (d.as_str().to_owned(), r)).collect(), failed))
}

fn usd(x: f64) -> String {
    if x > 0.0 && x < 0.01 { "<$0.01".to_owned() } else { format!("${}", money(x)) }
}

/// `1234.5` → `1,234.50`.
fn money(x: f64) -> String {
    let cents = (x * 100.0).round() as u64;
    format!("{}.{:02}", spend::thousands(cents / 100), cents % 100)
}

fn short(models: &[String]) -> String {
    models.iter().map(|m| m.trim_start_matches("claude-")).collect::<Vec<_>>().join(", ")
}

/// The report as a table: one line per row, the total, then what the figures leave out.
fn table<W: Write>(out: &mut Term<W>, r: &CostReport) -> io::Result<()> {
    if r.rows.is_empty() {
        writeln!(out, "No Claude Code usage found for these dates and projects.")?;
    } else {
        let hosts = r.rows.iter().any(|row| row.host.is_some());
        let billed = r.rows.iter().any(|row| row.billed_usd.is_some());
        let key_width = match r.by {
            GroupBy::Day => 10,
            GroupBy::Week => 8,
            GroupBy::Month => 7,
            GroupBy::Session => 36,
            GroupBy::Project => 32,
            GroupBy::Model => 26,
        };
        let title = match r.by {
            GroupBy::Day => "Day",
            GroupBy::Week => "Week",
            GroupBy::Month => "Month",
            GroupBy::Session => "Session",
            GroupBy::Project => "Project",
            GroupBy::Model => "Model",
        };
        let host_width = if hosts {
            r.rows.iter().map(|row| row.host.as_deref().unwrap_or("here").chars().count()).max().unwrap_or(4).min(24)
        } else {
            0
        };
        let mut head = format!("{} ", render::fit(title, key_width));
        if hosts {
            head.push_str(&format!("{} ", render::fit("Host", host_width)));
        }
        head.push_str(&format!(
            "{:>9} {:>9} {:>11} {:>11} {:>9} {:>11}",
            "Input", "Output", "Cache write", "Cache read", "Total", "Cost"
        ));
        if billed {
            head.push_str(&format!(" {:>10}", "Billed"));
        }
        head.push_str("  Models");
        out.bold(&head)?;
        writeln!(out)?;
        let used = head.chars().count().saturating_sub(6);
        let models_width = out.width().saturating_sub(used).max(12);
        let line = |row: Option<&CostRow>, key: &str, t: &spend::Totals| {
            let mut s = format!("{} ", render::fit(&render::sanitize(key, false), key_width));
            if hosts {
                let host = row.and_then(|r| r.host.as_deref()).unwrap_or(if row.is_some() { "here" } else { "" });
                s.push_str(&format!("{} ", render::fit(&render::sanitize(host, false), host_width)));
            }
            s.push_str(&format!(
                "{:>9} {:>9} {:>11} {:>11} {:>9} {:>11}",
                render::tokens(t.input_tokens),
                render::tokens(t.output_tokens),
                render::tokens(t.cache_creation_input_tokens),
                render::tokens(t.cache_read_input_tokens),
                render::tokens(t.total_tokens),
                usd(t.cost_usd)
            ));
            if billed {
                let b = row.and_then(|r| r.billed_usd).map(usd).unwrap_or_default();
                s.push_str(&format!(" {b:>10}"));
            }
            let mut models = short(&t.models);
            if !t.unknown_models.is_empty() {
                models.push_str(&format!(" (unpriced: {})", short(&t.unknown_models)));
            }
            s.push_str(&format!("  {}", render::fit(&render::sanitize(&models, false), models_width).trim_end()));
            s
        };
        for row in &r.rows {
            writeln!(out, "{}", line(Some(row), &row.key, &row.totals))?;
            if let Some(p) = &row.project {
                out.dim(&format!("  {}", render::sanitize(p, false)))?;
                writeln!(out)?;
            }
        }
        out.bold(&line(None, "Total", &r.total))?;
        writeln!(out)?;
    }
    let file = r.prices.file.as_ref().map(|f| format!(", with {}", render::sanitize(f, false))).unwrap_or_default();
    out.dim(&format!("Estimated per request at {} prices{file}.", render::sanitize(&r.prices.table, false)))?;
    writeln!(out)?;
    for w in &r.warnings {
        writeln!(out, "Note: {}", render::sanitize(w, false))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_read_as_dollars() {
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.004), "<$0.01");
        assert_eq!(usd(1234.567), "$1,234.57");
    }
}
