//! Human-readable output: the roster table, a timeline, live events.
//!
//! Transcript text is untrusted: before it reaches the terminal every control character
//! (escape sequences could retitle the window, move the cursor or worse) and every
//! bidirectional override is replaced.

use std::collections::HashMap;
use std::io::{self, Write};

use mimesis_core::{Clock, Status, StoreEvent, SystemClock, TimelineItem, Timestamp, TrackedSession};

pub struct Style {
    color: bool,
    pub(crate) width: usize,
}

impl Style {
    pub fn detect(tty: bool) -> Style {
        let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Style { color, width: terminal_width().unwrap_or(120).clamp(60, 240) }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_owned() }
    }

    pub(crate) fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    pub(crate) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
}

fn terminal_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(c);
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct; a zeroed one is a valid value to pass.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// Makes untrusted text safe to print: control characters (other than newline and tab
/// when `multiline`) and bidi overrides become U+FFFD.
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
pub fn roster(out: &mut impl Write, sessions: &[TrackedSession], now: Timestamp, st: &Style) -> io::Result<()> {
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
    let flexible = st.width.saturating_sub(fixed).max(20);
    let (goal_w, tool_w) = (flexible * 3 / 5, flexible - flexible * 3 / 5);
    writeln!(
        out,
        "{}",
        st.dim(&format!(
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
        ))
    )?;
    for (key, members) in groups {
        let name = key.rsplit('/').find(|p| !p.is_empty()).unwrap_or(&key);
        writeln!(
            out,
            "{} {} {}",
            st.bold(&sanitize(name, false)),
            st.dim(&sanitize(&key, false)),
            st.dim(&format!("({})", members.len()))
        )?;
        for s in members {
            let (label, code) = status_label(s.status);
            let goal = s.title.as_deref().or(s.goal.as_deref()).unwrap_or("(no prompt yet)");
            writeln!(
                out,
                "{} {} {} {} {} {} {:>7} {} {}",
                st.paint(code, &fit(label, 16)),
                fit(s.session_id.short(), 8),
                fit(&sanitize(goal, false), goal_w),
                fit(&sanitize(&pending(s), false), tool_w),
                fit(&sanitize(s.branch.as_deref().unwrap_or(""), false), 14),
                fit(&sanitize(&short_model(s.model.as_deref()), false), 10),
                tokens(s.usage.total()),
                fit(&ago(now, s.last_activity_at), 8),
                if s.live { st.paint("32", "live") } else { String::new() },
            )?;
        }
    }
    Ok(())
}

fn clock_time(t: Option<Timestamp>) -> String {
    t.map(|t| t.to_iso()[11..19].to_owned()).unwrap_or_default()
}

fn indented(out: &mut impl Write, text: &str, prefix: &str, max_lines: usize, st: &Style) -> io::Result<()> {
    let text = sanitize(text, true);
    let lines: Vec<&str> = text.lines().collect();
    for l in lines.iter().take(max_lines) {
        writeln!(out, "{prefix}{l}")?;
    }
    if lines.len() > max_lines {
        writeln!(out, "{prefix}{}", st.dim(&format!("… {} more lines", lines.len() - max_lines)))?;
    }
    Ok(())
}

fn tool_summary(tool: &str, input: &serde_json::Value) -> String {
    for key in ["command", "file_path", "notebook_path", "pattern", "url", "query", "path", "description", "prompt"] {
        if let Some(v) = input.get(key).and_then(|v| v.as_str()) {
            return v.lines().next().unwrap_or("").to_owned();
        }
    }
    let _ = tool;
    String::new()
}

/// A timeline, readable in a terminal.
pub fn timeline(out: &mut impl Write, items: &[TimelineItem], st: &Style) -> io::Result<()> {
    for item in items {
        match item {
            TimelineItem::Prompt { timestamp, text, .. } => {
                writeln!(out, "\n{} {}", st.paint("1;34", "▌ You"), st.dim(&clock_time(*timestamp)))?;
                indented(out, text, "  ", 40, st)?;
            }
            TimelineItem::AssistantText { timestamp, text, model, .. } => {
                writeln!(
                    out,
                    "\n{} {} {}",
                    st.paint("1;36", "● Claude"),
                    st.dim(&short_model(model.as_deref())),
                    st.dim(&clock_time(*timestamp))
                )?;
                indented(out, text, "  ", 200, st)?;
            }
            TimelineItem::Thinking { text, redacted, .. } => {
                let first =
                    if *redacted { "(redacted)".to_owned() } else { text.lines().next().unwrap_or("").to_owned() };
                writeln!(
                    out,
                    "  {}",
                    st.dim(&format!("∴ thinking: {}", fit(&sanitize(&first, false), 100).trim_end()))
                )?;
            }
            TimelineItem::ToolCall { tool, input, result, .. } => {
                let (mark, code) = match result {
                    None => ("…", "33"),
                    Some(r) if r.is_error => ("✗", "31"),
                    Some(_) => ("✓", "32"),
                };
                writeln!(
                    out,
                    "  {} {} {}",
                    st.paint(code, mark),
                    st.bold(&sanitize(tool, false)),
                    sanitize(&tool_summary(tool, input), false)
                )?;
                if let Some(r) = result {
                    let prefix = if st.color && r.is_error { "    \x1b[31m│\x1b[0m " } else { "    │ " };
                    indented(out, &r.content, prefix, 8, st)?;
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
                writeln!(out, "\n{} ──", st.paint("1;33", &sanitize(&label, false)))?;
                if let Some(s) = summary {
                    indented(out, s, "  ", 6, st)?;
                }
            }
            TimelineItem::ApiError { text, status, retrying, .. } => {
                let status = status.map(|s| format!(" {s}")).unwrap_or_default();
                let retry = if *retrying { " (retrying)" } else { "" };
                writeln!(
                    out,
                    "  {}",
                    st.paint("31", &format!("! API error{status}: {}{retry}", sanitize(text, false)))
                )?;
            }
            TimelineItem::Segment { session_id, reason, timestamp, .. } => {
                let label = format!("══ {reason}: session {} begins", session_id.short());
                writeln!(out, "\n{} {} ══", st.paint("1;35", &label), st.dim(&clock_time(*timestamp)))?;
            }
            TimelineItem::Answer { tool, target, text, .. } => {
                let about: Vec<&str> = [tool.as_deref(), target.as_deref()].into_iter().flatten().collect();
                writeln!(
                    out,
                    "  {} {}{}",
                    st.paint("1;35", "◆ Mimesis"),
                    sanitize(text, false),
                    st.dim(&sanitize(&format!(" · {}", about.join(" ")), false))
                )?;
            }
            TimelineItem::System { subtype, text, .. } => {
                let line = match subtype.as_str() {
                    "command" => format!("› {}", sanitize(text, false)),
                    _ => format!("· {}", sanitize(text.lines().next().unwrap_or(""), false)),
                };
                writeln!(out, "  {}", st.dim(&line))?;
            }
        }
    }
    Ok(())
}

pub fn event_discovered(out: &mut dyn Write, s: &TrackedSession, st: &Style) -> io::Result<()> {
    let (label, code) = status_label(s.status);
    let goal = s.title.as_deref().or(s.goal.as_deref()).unwrap_or("(no prompt yet)");
    writeln!(
        out,
        "{} {} {} {} {}",
        st.dim(&clock_time(Some(s.last_activity_at))),
        st.paint("32", "+"),
        s.session_id.short(),
        st.paint(code, label),
        fit(&sanitize(goal, false), 80).trim_end()
    )
}

/// One store event, as a line.
pub fn event(out: &mut dyn Write, ev: &StoreEvent, st: &Style) -> io::Result<()> {
    let now = clock_time(Some(SystemClock.now()));
    match ev {
        StoreEvent::Discovered { session } => event_discovered(out, session, st),
        StoreEvent::Removed { session_id } => {
            writeln!(out, "{} {} {} removed", st.dim(&now), st.paint("31", "-"), session_id.short())
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
            if !rest.is_empty() {
                parts.push(st.dim(&format!("({})", rest.join(", "))));
            }
            writeln!(out, "{} {} {} {}", st.dim(&now), st.paint("33", "~"), session_id.short(), parts.join("  "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
