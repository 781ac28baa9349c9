//! `mimesis search`: every prompt, reply, tool call, tool result and thinking of every
//! session, most recent first (issue 35; docs/ipc.md "search").

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use mimesis_core::clock::{Clock, SystemClock};
use mimesis_core::search::{Hit, Kind, Request, Results, parse_since};

use crate::term::{self, Term};

#[derive(Args)]
pub struct SearchArgs {
    /// Words (all of them, any case), "a phrase", -word to leave out, pre* for a prefix.
    /// Quote a query that leaves words out (`"cache -redis"`), or put it after `--`.
    #[arg(value_name = "QUERY")]
    query: Vec<String>,
    /// Print {"hits": [...], "total": N} as JSON.
    #[arg(long)]
    json: bool,
    /// At most this many hits (default 20, at most 1000).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Only this kind of text (repeatable): prompt, reply, tool_call, tool_result, thinking.
    #[arg(long = "kind", value_name = "KIND", value_parser = Kind::parse)]
    kinds: Vec<Kind>,
    /// Only sessions whose project folder contains this (a folder name or path).
    #[arg(long, value_name = "P")]
    project: Option<String>,
    /// Only what happened since: a date (2026-11-01), an instant, or a time ago (12h, 7d).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// The tool calls that read, edited or wrote this file (a path or its last parts).
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    #[command(flatten)]
    remote: crate::remote_cmd::RemoteArgs,
}

pub fn search(roots: &[PathBuf], data_dir: &Path, args: SearchArgs) -> anyhow::Result<()> {
    let now = SystemClock.now();
    let req = Request {
        query: args.query.join(" "),
        kinds: args.kinds,
        project: args.project,
        since: args.since.as_deref().map(|s| parse_since(s, now)).transpose().map_err(anyhow::Error::msg)?,
        file: args.file,
        limit: args.limit,
    };
    req.checked().map_err(anyhow::Error::msg)?;
    let show_progress = crate::term::stderr_is_terminal();
    let shown = std::cell::Cell::new(false);
    let said = std::cell::Cell::new(false);
    let mut progress = |done: usize, total: usize| {
        // Only a long first build is worth a line: redrawn on a terminal, said once elsewhere.
        if total < 50 {
            return;
        }
        if show_progress {
            let _ = Term::stderr()
                .rewrite_line(&format!("Indexing the history for search: {done} of {total} transcripts…"));
            shown.set(true);
        } else if !said.replace(true) {
            term::say(format_args!(
                "mimesis: building the search index: {total} transcripts to read (once; later searches read only what was appended)"
            ));
        }
    };
    let results = crate::remote_cmd::searches(&args.remote, &req, || {
        let found = mimesis_wiring::search::search(roots, data_dir, &req, &mut progress).map_err(anyhow::Error::msg);
        if shown.get() {
            let _ = Term::stderr().clear_line();
        }
        found
    })?;
    let mut out = Term::stdout();
    if args.json {
        term::json_line(&mut out, &results)?;
    } else {
        render(&mut out, &results)?;
    }
    out.flush()?;
    // A host that failed was said on stderr; what the others found is printed.
    crate::remote_outcome(!results.failed.is_empty())
}

fn render(out: &mut Term<impl Write>, r: &Results) -> std::io::Result<()> {
    if r.hits.is_empty() {
        return writeln!(out, "No match.");
    }
    for h in &r.hits {
        line(out, h)?;
    }
    let more = if r.total_capped { format!("{}+", r.total) } else { r.total.to_string() };
    let what = if r.total == 1 { "match" } else { "matches" };
    if r.hits.len() < r.total || r.total_capped {
        writeln!(out, "{} of {more} {what} shown (--limit for more).", r.hits.len())
    } else {
        writeln!(out, "{more} {what}.")
    }
}

fn line(out: &mut Term<impl Write>, h: &Hit) -> std::io::Result<()> {
    let at = h.at.to_iso();
    out.dim(&format!("{} {} ", &at[..10], &at[11..16]))?;
    let session = &h.session_id.as_str()[..h.session_id.as_str().len().min(8)];
    let host = h.host.as_deref().map(|h| format!("{h}:")).unwrap_or_default();
    // The chain's name is a transcript's words (a title, a goal): one clean line.
    let chain = match (h.superseded, &h.work_chain_name) {
        (false, _) => String::new(),
        (true, Some(name)) => {
            format!(" (earlier in its chain \u{201c}{}\u{201d})", mimesis_core::text::clean_text(name, 60))
        }
        (true, None) => " (earlier in its chain)".to_owned(),
    };
    write!(out, "{:<11} {host}{session} {}{chain}  ", h.kind.as_str(), project_name(&h.project))?;
    let chars: Vec<char> = h.snippet.chars().collect();
    let mut from = 0;
    for m in &h.marks {
        let (a, b) = (m[0].min(chars.len()), m[1].min(chars.len()));
        if a < from {
            continue;
        }
        write!(out, "{}", chars[from..a].iter().collect::<String>())?;
        out.bold(&chars[a..b].iter().collect::<String>())?;
        from = b;
    }
    writeln!(out, "{}", chars[from..].iter().collect::<String>())
}

/// The last part of a project folder's name (`-home-me-src-app` → `app`).
fn project_name(project: &str) -> &str {
    project.rsplit('-').find(|s| !s.is_empty()).unwrap_or(project)
}

#[cfg(test)]
mod tests {
    use mimesis_core::clock::Timestamp;
    use mimesis_core::ids::SessionId;
    use mimesis_core::search::{Hit, Kind};

    use crate::term::Term;

    fn printed(name: Option<&str>, superseded: bool) -> String {
        let h = Hit {
            session_id: SessionId::parse("aaaaaaaa-0000-4000-8000-000000000001").unwrap(),
            host: None,
            uuid: "u1".into(),
            tool_use_id: None,
            at: Timestamp::from_millis(1_764_072_000_000),
            kind: Kind::Prompt,
            snippet: "the migration".into(),
            marks: vec![[4, 13]],
            project: "-srv-api".into(),
            work_chain_id: Some("aaaaaaaa-0000-4000-8000-000000000001".into()),
            work_chain_name: name.map(str::to_owned),
            superseded,
            chain_head: None,
        };
        let mut buf = Vec::new();
        {
            let mut out = Term::new(&mut buf, false, 200);
            super::line(&mut out, &h).unwrap();
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn a_hit_earlier_in_a_chain_names_the_chain_on_one_clean_line() {
        let named = printed(Some("Move the\n\u{1b}[31mstore"), true);
        assert!(named.contains("(earlier in its chain \u{201c}Move the [31mstore\u{201d})"), "{named:?}");
        assert!(!named.contains('\u{1b}'), "{named:?}");
        assert!(printed(None, true).contains("(earlier in its chain)"));
        assert!(!printed(Some("Move"), false).contains("earlier"));
    }
}
