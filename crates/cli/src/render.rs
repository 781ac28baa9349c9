//! Human-readable output: the roster table, a timeline, live events. Everything is written
//! through a [`Term`], which keeps every field's escape sequences, control characters and
//! bidi overrides from the terminal; here untrusted text is only laid out (one line per
//! field, cut to its column).

use std::collections::HashMap;
use std::io::{self, Write};

use mimesis_core::{Clock, Status, StoreEvent, SystemClock, TimelineItem, Timestamp, TrackedSession};

use crate::term::Term;

/// Untrusted text laid out on one line (`multiline`: its lines kept): newlines, carriage
/// returns and tabs become spaces. What may reach the terminal at all is [`Term`]'s
/// business; this only keeps a field from breaking a table's layout or forging a line.
pub fn sanitize(s: &str, multiline: bool) -> String {
    s.chars()
        .map(|c| match c {
            '\n' | '\t' if multiline => c,
            '\n' | '\t' | '\r' => ' ',
            c if c.is_control() => '\u{fffd}',
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Cuts to `width` characters (display width approximated by chars), with an ellipsis.
pub(crate) fn fit(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return format!("{s:width$}");
    }
    if width == 0 {
        return String::new();
    }
    let cut: String = s.chars().take(width - 1).collect();
    format!("{cut}…")
}

fn status_label(s: Status) -> (&'static str, &'static str) {
    match s {
        Status::Working => ("● working", "36"),
        Status::WaitingForApproval => ("▲ needs approval", "1;33"),
        Status::WaitingForInput => ("◆ needs input", "1;35"),
        Status::Idle => ("○ idle", "2"),
    }
}

pub fn ago(now: Timestamp, then: Timestamp) -> String {
    let s = now.since(then).as_secs();
    match s {
        0..=59 => format!("{s}s ago"),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86_399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}B", n as f64 / 1e9),
    }
}

fn short_model(m: Option<&str>) -> String {
    m.map(|m| m.trim_start_matches("claude-").to_owned()).unwrap_or_default()
}

/// The project a row belongs to (repo root, else cwd, else the project folder), behind
/// its machine's name for a session on another machine (`devbox:/srv/api`).
fn group_key(s: &TrackedSession) -> String {
    let project = s.repo_root.clone().or_else(|| s.cwd.clone()).unwrap_or_else(|| s.project_id.clone());
    match &s.host {
        Some(host) => format!("{host}:{project}"),
        None => project,
    }
}

fn pending(s: &TrackedSession) -> String {
    match &s.pending_tool {
        Some(p) if p.target.is_empty() => p.tool.clone(),
        Some(p) => format!("{} · {}", p.tool, p.target),
        None => String::new(),
    }
}

/// The roster, grouped by project (repo root, else cwd), groups by latest activity.
pub fn roster<W: Write>(out: &mut Term<W>, sessions: &[TrackedSession], now: Timestamp) -> io::Result<()> {
    let mut groups: Vec<(String, Vec<&TrackedSession>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for s in sessions {
        // `sessions` is sorted by activity, so groups come out in that order too.
        let key = group_key(s);
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(s);
    }
    // status 16, id 8, branch 14, model 10, tokens 7, active 8, live 4, spaces ~9
    let fixed = 16 + 8 + 14 + 10 + 7 + 8 + 4 + 9;
    let flexible = out.width().saturating_sub(fixed).max(20);
    let (goal_w, tool_w) = (flexible * 3 / 5, flexible - flexible * 3 / 5);
    out.dim(&format!(
        "{} {} {} {} {} {} {} {} {}",
        fit("STATUS", 16),
        fit("SESSION", 8),
        fit("GOAL", goal_w),
        fit("PENDING", tool_w),
        fit("BRANCH", 14),
        fit("MODEL", 10),
        fit("TOKENS", 7),
        fit("ACTIVE", 8),
        "LIVE"
    ))?;
    writeln!(out)?;
    for (key, members) in groups {
        let name = key.rsplit('/').find(|p| !p.is_empty()).unwrap_or(&key);
        out.bold(&sanitize(name, false))?;
        write!(out, " ")?;
        out.dim(&sanitize(&key, false))?;
        write!(out, " ")?;
        out.dim(&format!("({})", members.len()))?;
        writeln!(out)?;
        for s in members {
            let (label, code) = status_label(s.status);
            let goal = s.title.as_deref().or(s.goal.as_deref()).unwrap_or("(no prompt yet)");
            out.paint(code, &fit(label, 16))?;
            write!(
                out,
                " {} {} {} {} {} {:>7} {} ",
                fit(s.session_id.short(), 8),
                fit(&sanitize(goal, false), goal_w),
                fit(&sanitize(&pending(s), false), tool_w),
                fit(&sanitize(s.branch.as_deref().unwrap_or(""), false), 14),
                fit(&sanitize(&short_model(s.model.as_deref()), false), 10),
                tokens(s.usage.total()),
                fit(&ago(now, s.last_activity_at), 8),
            )?;
            if s.live {
                out.paint("32", "live")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

fn clock_time(t: Option<Timestamp>) -> String {
    t.map(|t| t.to_iso()[11..19].to_owned()).unwrap_or_default()
}

/// How an indented block's lines begin: text, and a bar in a colour (or none).
struct Prefix(&'static str, Option<(&'static str, &'static str)>);

fn indented<W: Write>(out: &mut Term<W>, text: &str, prefix: &Prefix, max_lines: usize) -> io::Result<()> {
    let text = sanitize(text, true);
    let lines: Vec<&str> = text.lines().collect();
    let start = |out: &mut Term<W>| -> io::Result<()> {
        out.write_all(prefix.0.as_bytes())?;
        match prefix.1 {
            Some((code, bar)) => {
                out.paint(code, bar)?;
                out.write_all(b" ")
            }
            None => Ok(()),
        }
    };
    for l in lines.iter().take(max_lines) {
        start(out)?;
        writeln!(out, "{l}")?;
    }
    if lines.len() > max_lines {
        start(out)?;
        out.dim(&format!("… {} more lines", lines.len() - max_lines))?;
        writeln!(out)?;
    }
    Ok(())
}

fn tool_summary(input: &serde_json::Value) -> String {
    for key in ["command", "file_path", "notebook_path", "pattern", "url", "query", "path", "description", "prompt"] {
        if let Some(v) = input.get(key).and_then(|v| v.as_str()) {
            return v.lines().next().unwrap_or("").to_owned();
        }
    }
    String::new()
}

const TEXT: Prefix = Prefix("  ", None);

/// A timeline, readable in a terminal.
pub fn timeline<W: Write>(out: &mut Term<W>, items: &[TimelineItem]) -> io::Result<()> {
    for item in items {
        match item {
            TimelineItem::Prompt { timestamp, text, .. } => {
                writeln!(out)?;
                out.paint("1;34", "▌ You")?;
                write!(out, " ")?;
                out.dim(&clock_time(*timestamp))?;
                writeln!(out)?;
                indented(out, text, &TEXT, 40)?;
            }
            TimelineItem::AssistantText { timestamp, text, model, .. } => {
                writeln!(out)?;
                out.paint("1;36", "● Claude")?;
                write!(out, " ")?;
                out.dim(&sanitize(&short_model(model.as_deref()), false))?;
                write!(out, " ")?;
                out.dim(&clock_time(*timestamp))?;
                writeln!(out)?;
                indented(out, text, &TEXT, 200)?;
            }
            TimelineItem::Thinking { text, redacted, .. } => {
                let first =
                    if *redacted { "(redacted)".to_owned() } else { text.lines().next().unwrap_or("").to_owned() };
                write!(out, "  ")?;
                out.dim(&format!("∴ thinking: {}", fit(&sanitize(&first, false), 100).trim_end()))?;
                writeln!(out)?;
            }
            TimelineItem::ToolCall { tool, input, result, .. } => {
                let (mark, code) = match result {
                    None => ("…", "33"),
                    Some(r) if r.is_error => ("✗", "31"),
                    Some(_) => ("✓", "32"),
                };
                write!(out, "  ")?;
                out.paint(code, mark)?;
                write!(out, " ")?;
                out.bold(&sanitize(tool, false))?;
                writeln!(out, " {}", sanitize(&tool_summary(input), false))?;
                if let Some(r) = result {
                    let bar = if r.is_error { Prefix("    ", Some(("31", "│"))) } else { Prefix("    │ ", None) };
                    indented(out, &r.content, &bar, 8)?;
                }
            }
            TimelineItem::Compaction { trigger, pre_tokens, summary, .. } => {
                let mut label = "── Conversation compacted".to_owned();
                if let Some(t) = trigger {
                    label.push_str(&format!(" · {t}"));
                }
                if let Some(p) = pre_tokens {
                    label.push_str(&format!(" · {} tokens", tokens(*p)));
                }
                writeln!(out)?;
                out.paint("1;33", &sanitize(&label, false))?;
                writeln!(out, " ──")?;
                if let Some(s) = summary {
                    indented(out, s, &TEXT, 6)?;
                }
            }
            TimelineItem::ApiError { text, status, retrying, .. } => {
                let status = status.map(|s| format!(" {s}")).unwrap_or_default();
                let retry = if *retrying { " (retrying)" } else { "" };
                write!(out, "  ")?;
                out.paint("31", &format!("! API error{status}: {}{retry}", sanitize(text, false)))?;
                writeln!(out)?;
            }
            TimelineItem::Segment { session_id, reason, timestamp, .. } => {
                let label = format!("══ {}: session {} begins", sanitize(reason, false), session_id.short());
                writeln!(out)?;
                out.paint("1;35", &label)?;
                write!(out, " ")?;
                out.dim(&clock_time(*timestamp))?;
                writeln!(out, " ══")?;
            }
            TimelineItem::Answer { tool, target, text, .. } => {
                let about: Vec<&str> = [tool.as_deref(), target.as_deref()].into_iter().flatten().collect();
                write!(out, "  ")?;
                out.paint("1;35", "◆ Mimesis")?;
                write!(out, " {}", sanitize(text, false))?;
                out.dim(&sanitize(&format!(" · {}", about.join(" ")), false))?;
                writeln!(out)?;
            }
            TimelineItem::System { subtype, text, .. } => {
                let line = match subtype.as_str() {
                    "command" => format!("› {}", sanitize(text, false)),
                    _ => format!("· {}", sanitize(text.lines().next().unwrap_or(""), false)),
                };
                write!(out, "  ")?;
                out.dim(&line)?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

pub fn event_discovered<W: Write>(out: &mut Term<W>, s: &TrackedSession) -> io::Result<()> {
    let (label, code) = status_label(s.status);
    let goal = s.title.as_deref().or(s.goal.as_deref()).unwrap_or("(no prompt yet)");
    out.dim(&clock_time(Some(s.last_activity_at)))?;
    write!(out, " ")?;
    out.paint("32", "+")?;
    write!(out, " {} ", s.session_id.short())?;
    out.paint(code, label)?;
    writeln!(out, " {}", fit(&sanitize(goal, false), 80).trim_end())
}

/// One store event, as a line.
pub fn event<W: Write>(out: &mut Term<W>, ev: &StoreEvent) -> io::Result<()> {
    let now = clock_time(Some(SystemClock.now()));
    match ev {
        StoreEvent::Discovered { session } => event_discovered(out, session),
        StoreEvent::Removed { session_id } => {
            out.dim(&now)?;
            write!(out, " ")?;
            out.paint("31", "-")?;
            writeln!(out, " {} removed", session_id.short())
        }
        StoreEvent::Updated { session_id, changes } => {
            let mut parts = Vec::new();
            if let Some(s) = changes.status {
                parts.push(format!("status={}", s.as_str()));
            }
            if let Some(p) = &changes.pending_tool {
                let p = match p {
                    Some(p) if !p.target.is_empty() => format!("{} · {}", p.tool, p.target),
                    Some(p) => p.tool.clone(),
                    None => "none".into(),
                };
                parts.push(format!("pending={}", sanitize(&p, false)));
            }
            if let Some(l) = changes.live {
                parts.push(if l { "live".into() } else { "ended".into() });
            }
            let mut rest: Vec<&str> =
                changes.fields().into_iter().filter(|k| !matches!(*k, "status" | "pendingTool" | "live")).collect();
            rest.sort_unstable();
            out.dim(&now)?;
            write!(out, " ")?;
            out.paint("33", "~")?;
            write!(out, " {} {}", session_id.short(), parts.join("  "))?;
            if !rest.is_empty() {
                if !parts.is_empty() {
                    write!(out, "  ")?;
                }
                out.dim(&format!("({})", rest.join(", ")))?;
            }
            writeln!(out)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::term::tests::{HOSTILE, assert_terminal_safe};

    /// A row whose every text field (ids aside: they are validated) is hostile.
    pub fn hostile_row(host: Option<&str>) -> TrackedSession {
        row_with(HOSTILE, host)
    }

    fn row_with(h: &str, host: Option<&str>) -> TrackedSession {
        serde_json::from_value(serde_json::json!({
            "sessionId": "abcdef12-0000-4000-8000-000000000001", "projectId": h, "cwd": h, "repoRoot": h,
            "branch": h, "goal": h, "summary": h, "title": null, "status": "waiting_for_approval",
            "hasPendingToolUse": true, "pendingTool": {"tool": h, "target": h},
            "lastActivityAt": "2026-11-25T10:00:00.000Z", "createdAt": null, "model": h,
            "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0},
            "apiError": false, "compactionCount": 0, "superseded": false, "supersededBy": null, "supersededAt": null,
            "workChainId": h, "workChainName": h, "chainLength": 1, "source": "watcher", "supervision": null,
            "live": true, "pid": null, "transcriptPath": h, "permissionMode": h, "malformedLines": 0,
            "statusFile": {"status": "working", "updated": "2026-11-25T10:00:00.000Z", "task": h, "summary": h},
            "name": h, "cost": {"estimatedUsd": null, "unknownModels": [h], "pricesAsOf": h, "billed": null},
            "host": host,
        }))
        .expect("a row")
    }

    /// One timeline item of every kind, every text field hostile.
    pub fn hostile_items() -> Vec<TimelineItem> {
        let h = HOSTILE;
        let ts = "2026-11-25T10:00:00.000Z";
        let id = "abcdef12-0000-4000-8000-000000000001";
        let items = serde_json::json!([
            {"kind": "prompt", "uuid": h, "timestamp": ts, "text": h},
            {"kind": "assistant_text", "uuid": h, "timestamp": ts, "text": h, "model": h},
            {"kind": "thinking", "uuid": h, "timestamp": ts, "text": h, "redacted": false},
            {"kind": "tool_call", "uuid": h, "timestamp": ts, "toolUseId": h, "tool": h,
             "input": {"command": h}, "result": {"content": h, "isError": true, "timestamp": ts}},
            {"kind": "tool_call", "uuid": h, "timestamp": ts, "toolUseId": h, "tool": h,
             "input": {"file_path": h}, "result": {"content": h, "isError": false, "timestamp": ts}},
            {"kind": "compaction", "uuid": h, "timestamp": ts, "trigger": h, "preTokens": 5, "summary": h},
            {"kind": "api_error", "uuid": h, "timestamp": ts, "text": h, "status": 529, "retrying": true},
            {"kind": "system", "uuid": h, "timestamp": ts, "subtype": "command", "text": h},
            {"kind": "system", "uuid": h, "timestamp": ts, "subtype": h, "text": h},
            {"kind": "segment", "uuid": h, "timestamp": ts, "sessionId": id, "previousSessionId": id, "reason": h},
            {"kind": "answer", "uuid": h, "timestamp": ts, "tool": h, "target": h, "behavior": h, "choice": h,
             "message": h, "answers": {h: h}, "via": h, "text": h},
        ]);
        let items: Vec<TimelineItem> = serde_json::from_value(items).expect("items");
        assert_eq!(items.len(), 11);
        items
    }

    fn both_styles(f: impl Fn(&mut Term<&mut Vec<u8>>) -> io::Result<()>) {
        for color in [false, true] {
            let mut out = Vec::new();
            f(&mut Term::new(&mut out, color, 200)).unwrap();
            assert!(String::from_utf8_lossy(&out).contains('\u{fffd}'), "the hostile text was printed");
            assert_terminal_safe(&out, color);
        }
    }

    #[test]
    fn no_field_of_a_row_reaches_the_terminal_raw() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        let mut rows = vec![hostile_row(None), hostile_row(Some("devbox"))];
        rows[1].title = Some(HOSTILE.into());
        both_styles(|out| roster(out, &rows, now));
        both_styles(|out| event_discovered(out, &rows[0]));
        let changes = rows[0].diff(&row_with("x", Some("x")));
        assert!(changes.pending_tool.is_some() && changes.model.is_some());
        let updated = StoreEvent::Updated { session_id: rows[0].session_id.clone(), changes: Box::new(changes) };
        both_styles(|out| event(out, &updated));
    }

    #[test]
    fn no_field_of_a_timeline_reaches_the_terminal_raw() {
        // Before issue 32 the model and a segment's reason went out as they were.
        both_styles(|out| timeline(out, &hostile_items()));
    }

    #[test]
    fn sanitize_removes_escape_sequences_and_bidi_overrides() {
        assert_eq!(sanitize("a\x1b]0;pwned\x07b", false), "a\u{fffd}]0;pwned\u{fffd}b");
        assert_eq!(sanitize("x\u{202e}y", true), "x\u{fffd}y");
        assert_eq!(sanitize("l1\nl2\tz", true), "l1\nl2\tz");
        assert_eq!(sanitize("l1\nl2", false), "l1 l2");
    }

    #[test]
    fn formats_numbers_and_times() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1_250), "1.2k");
        assert_eq!(tokens(3_400_000), "3.4M");
        let t = Timestamp::from_millis(10_000_000);
        assert_eq!(ago(t, Timestamp::from_millis(10_000_000 - 61_000)), "1m ago");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("ab", 4), "ab  ");
    }
}
