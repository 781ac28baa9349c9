//! Would Claude Code ask before running this tool call? (SPEC W5)
//!
//! Inference must not call a long-running, allowed tool "waiting for approval". This module
//! parses the `permissions` of the settings files that apply to a session (managed, user,
//! project, project-local; they are read by `mimesis-watch`) and answers from the session's permission mode and the
//! allow / ask / deny rules. It never guesses "allowed": when the rules do not say, the
//! state machine's approval timeout decides.
//!
//! Settings files are untrusted input: an invalid file is logged and ignored, never fatal.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::status::Approval;

/// Tools that never show a permission dialog.
const NEVER_PROMPT: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebSearch",
    "WebFetch",
    "Task",
    "Agent",
    "TodoWrite",
    "TodoRead",
    "TaskOutput",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
    "TaskStop",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ToolSearch",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "EnterPlanMode",
    "LSP",
];

/// Tools `acceptEdits` lets through.
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// One `Tool` or `Tool(specifier)` rule, with the folder its relative paths start from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub tool: String,
    pub spec: Option<String>,
    base: PathBuf,
}

impl Rule {
    pub fn parse(s: &str, base: &Path) -> Option<Rule> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        match s.find('(') {
            Some(i) if s.ends_with(')') => Some(Rule {
                tool: s[..i].trim().to_owned(),
                spec: Some(s[i + 1..s.len() - 1].to_owned()).filter(|p| !p.is_empty() && p != "*"),
                base: base.to_owned(),
            }),
            Some(_) => None,
            None => Some(Rule { tool: s.to_owned(), spec: None, base: base.to_owned() }),
        }
    }

    fn matches(&self, tool: &str, target: &str, ctx: &Context<'_>) -> bool {
        let tool_matches = self.tool == tool
            || (EDIT_TOOLS.contains(&tool) && EDIT_TOOLS.contains(&self.tool.as_str()))
            || mcp_matches(&self.tool, tool);
        if !tool_matches {
            return false;
        }
        let Some(spec) = self.spec.as_deref() else { return true };
        match tool {
            "Bash" => bash_part_matches(spec, target),
            "WebFetch" => spec.strip_prefix("domain:").is_some_and(|d| host_matches(d, target)),
            t if EDIT_TOOLS.contains(&t) || t == "Read" => path_matches(spec, target, &self.base, ctx),
            _ => spec == target,
        }
    }
}

fn mcp_matches(rule: &str, tool: &str) -> bool {
    if !rule.starts_with("mcp__") || !tool.starts_with("mcp__") {
        return false;
    }
    let rule = rule.trim_end_matches("__*").trim_end_matches('*');
    tool == rule || tool.strip_prefix(rule).is_some_and(|rest| rest.starts_with("__"))
}

fn bash_part_matches(spec: &str, part: &str) -> bool {
    if let Some(prefix) = spec.strip_suffix(":*") {
        return part == prefix || part.starts_with(&format!("{prefix} ")) || part.starts_with(prefix);
    }
    if spec.contains('*') {
        return wildcard(spec.as_bytes(), part.as_bytes());
    }
    spec.trim() == part
}

/// Splits a shell command on `&&`, `||`, `;`, `|` and newlines outside quotes: every part
/// must be allowed for the whole to run without asking.
fn split_compound(cmd: &str) -> Vec<&str> {
    let b = cmd.as_bytes();
    let (mut parts, mut start, mut i) = (Vec::new(), 0, 0);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'\\' => i += 1,
            None if c == b';' || c == b'\n' || c == b'|' || c == b'&' => {
                let sep = if (c == b'&' || c == b'|') && b.get(i + 1) == Some(&c) { 2 } else { 1 };
                if c == b'&' && sep == 1 {
                    i += 1; // a lone `&` (background job) or a redirection like `2>&1`
                    continue;
                }
                parts.push(cmd[start..i].trim());
                i += sep;
                start = i;
                continue;
            }
            None => {}
        }
        i += 1;
    }
    parts.push(cmd[start.min(cmd.len())..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// `*` matches any run of bytes (including `/` and spaces), `?` one byte.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Path globs: `*` stays within one path segment, `**` crosses segments.
fn glob(p: &str, s: &str) -> bool {
    let ps: Vec<&str> = p.split('/').filter(|x| !x.is_empty()).collect();
    let ss: Vec<&str> = s.split('/').filter(|x| !x.is_empty()).collect();
    glob_segments(&ps, &ss)
}

fn glob_segments(p: &[&str], s: &[&str]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(&"**") => (0..=s.len()).any(|k| glob_segments(&p[1..], &s[k..])),
        Some(seg) => !s.is_empty() && wildcard_segment(seg, s[0]) && glob_segments(&p[1..], &s[1..]),
    }
}

fn wildcard_segment(p: &str, s: &str) -> bool {
    wildcard(p.as_bytes(), s.as_bytes())
}

fn path_matches(spec: &str, target: &str, base: &Path, ctx: &Context<'_>) -> bool {
    let pattern: PathBuf = if let Some(abs) = spec.strip_prefix("//") {
        PathBuf::from("/").join(abs)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        match ctx.home {
            Some(h) => h.join(rest),
            None => return false,
        }
    } else if let Some(rest) = spec.strip_prefix('/') {
        base.join(rest)
    } else {
        ctx.cwd.join(spec.strip_prefix("./").unwrap_or(spec))
    };
    let target = if Path::new(target).is_absolute() { PathBuf::from(target) } else { ctx.cwd.join(target) };
    let (pattern, target) = (pattern.to_string_lossy(), target.to_string_lossy());
    if !pattern.contains(['*', '?']) {
        let p = pattern.trim_end_matches('/');
        return target == p || target.starts_with(&format!("{p}/"));
    }
    glob(&pattern, &target)
}

fn host_matches(domain: &str, url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    let domain = domain.to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Where relative rule paths resolve.
pub struct Context<'a> {
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
}

/// The merged permissions of every settings file that applies to one session.
#[derive(Debug, Default, Clone)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub default_mode: Option<String>,
}

impl Rules {
    pub fn merge(&mut self, other: &Rules) {
        self.allow.extend(other.allow.iter().cloned());
        self.ask.extend(other.ask.iter().cloned());
        self.deny.extend(other.deny.iter().cloned());
        if other.default_mode.is_some() {
            self.default_mode.clone_from(&other.default_mode);
        }
    }

    /// Would `tool` acting on `target` show a permission dialog, in permission `mode`?
    pub fn approval(&self, tool: &str, target: &str, mode: Option<&str>, ctx: &Context<'_>) -> Approval {
        if tool == "AskUserQuestion" {
            return Approval::AsksUser;
        }
        if NEVER_PROMPT.contains(&tool) {
            return Approval::NotNeeded;
        }
        let mode = mode.or(self.default_mode.as_deref()).unwrap_or("default");
        if matches!(mode, "bypassPermissions" | "dontAsk") {
            return Approval::NotNeeded;
        }
        // A compound shell command runs without asking only if every part is allowed.
        let parts = if tool == "Bash" { split_compound(target) } else { vec![target] };
        let any = |rules: &[Rule], part: &str| rules.iter().any(|r| r.matches(tool, part, ctx));
        if parts.iter().any(|p| any(&self.deny, p)) {
            return Approval::NotNeeded; // refused at once, no dialog
        }
        if parts.iter().any(|p| any(&self.ask, p)) {
            return Approval::Needed;
        }
        if !parts.is_empty() && parts.iter().all(|p| any(&self.allow, p)) {
            return Approval::NotNeeded;
        }
        if mode == "acceptEdits" && EDIT_TOOLS.contains(&tool) {
            return Approval::NotNeeded;
        }
        Approval::Needed
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SettingsFile {
    permissions: PermissionsSection,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PermissionsSection {
    allow: Vec<serde_json::Value>,
    ask: Vec<serde_json::Value>,
    deny: Vec<serde_json::Value>,
    default_mode: Option<serde_json::Value>,
}

/// A Claude Code settings file larger than this is refused rather than read (real ones are
/// a few KB; a 4 MB one-line file must still work).
pub const MAX_SETTINGS_BYTES: u64 = 64 << 20;

/// The permission rules of one settings file's text; relative paths resolve from `base`.
pub fn rules_from(text: &[u8], base: &Path) -> Result<Rules, crate::json::JsonError> {
    let f: SettingsFile = crate::json::from_slice(text)?;
    let list =
        |v: &[serde_json::Value]| v.iter().filter_map(|x| x.as_str()).filter_map(|s| Rule::parse(s, base)).collect();
    Ok(Rules {
        allow: list(&f.permissions.allow),
        ask: list(&f.permissions.ask),
        deny: list(&f.permissions.deny),
        default_mode: f.permissions.default_mode.and_then(|v| v.as_str().map(str::to_owned)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
        let b = Path::new("/proj");
        let p = |v: &[&str]| v.iter().filter_map(|s| Rule::parse(s, b)).collect();
        Rules { allow: p(allow), ask: p(ask), deny: p(deny), default_mode: None }
    }

    fn ask(r: &Rules, tool: &str, target: &str, mode: Option<&str>) -> Approval {
        let ctx = Context { cwd: Path::new("/proj"), home: Some(Path::new("/home/me")) };
        r.approval(tool, target, mode, &ctx)
    }

    #[test]
    fn read_only_tools_never_prompt() {
        let r = Rules::default();
        for t in ["Read", "Glob", "Grep", "WebFetch", "WebSearch", "Task", "Agent", "TodoWrite"] {
            assert_eq!(ask(&r, t, "x", None), Approval::NotNeeded, "{t}");
        }
        assert_eq!(ask(&r, "AskUserQuestion", "", None), Approval::AsksUser);
    }

    #[test]
    fn modes() {
        let r = Rules::default();
        assert_eq!(ask(&r, "Bash", "rm -rf x", Some("bypassPermissions")), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "rm -rf x", Some("default")), Approval::Needed);
        assert_eq!(ask(&r, "Edit", "/proj/a.rs", Some("acceptEdits")), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "ls", Some("acceptEdits")), Approval::Needed);
        assert_eq!(ask(&r, "Edit", "/proj/a.rs", Some("plan")), Approval::Needed);
        let with_default = Rules { default_mode: Some("bypassPermissions".into()), ..Default::default() };
        assert_eq!(ask(&with_default, "Bash", "x", None), Approval::NotNeeded);
    }

    #[test]
    fn bash_rules() {
        let r = rules(&["Bash(npm run test:*)", "Bash(cargo build)", "Bash(git log *)"], &[], &[]);
        assert_eq!(ask(&r, "Bash", "npm run test", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "npm run test -- --watch", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "cargo build", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "cargo build --release", None), Approval::Needed);
        assert_eq!(ask(&r, "Bash", "git log --oneline", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "cargo build && rm -rf /", None), Approval::Needed, "every part must be allowed");
        assert_eq!(ask(&r, "Bash", "cargo build && npm run test", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Bash", "cargo build 2>&1", None), Approval::Needed);
        let all = rules(&["Bash"], &[], &[]);
        assert_eq!(ask(&all, "Bash", "anything | at all", None), Approval::NotNeeded);
    }

    #[test]
    fn ask_beats_allow_and_deny_never_prompts() {
        let r = rules(&["Bash"], &["Bash(git push:*)"], &["Bash(rm:*)"]);
        assert_eq!(ask(&r, "Bash", "git push origin", None), Approval::Needed);
        assert_eq!(ask(&r, "Bash", "rm -rf x", None), Approval::NotNeeded);
    }

    #[test]
    fn path_rules() {
        let r = rules(&["Edit(src/**)", "Write(//tmp/*.txt)", "Edit(~/notes/**)", "Edit(/docs)"], &[], &[]);
        assert_eq!(ask(&r, "Edit", "/proj/src/a/b.rs", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Write", "/proj/src/x.rs", None), Approval::NotNeeded, "Edit rules cover all edit tools");
        assert_eq!(ask(&r, "Edit", "/proj/other.rs", None), Approval::Needed);
        assert_eq!(ask(&r, "Write", "/tmp/a.txt", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Write", "/tmp/sub/a.txt", None), Approval::Needed);
        assert_eq!(ask(&r, "Edit", "/home/me/notes/x.md", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Edit", "/proj/docs/guide.md", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "Edit", "src/rel.rs", None), Approval::NotNeeded, "relative targets resolve from cwd");
    }

    #[test]
    fn web_and_mcp_rules() {
        let r = rules(&["WebFetch(domain:example.com)", "mcp__github", "mcp__jira__get_issue"], &[], &[]);
        assert_eq!(ask(&r, "mcp__github__create_pr", "", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "mcp__jira__get_issue", "", None), Approval::NotNeeded);
        assert_eq!(ask(&r, "mcp__jira__delete", "", None), Approval::Needed);
        assert_eq!(ask(&r, "mcp__githubby__x", "", None), Approval::Needed);
        assert!(host_matches("example.com", "https://docs.example.com:443/x"));
        assert!(!host_matches("example.com", "https://example.com.evil.io/x"));
    }

    #[test]
    fn splits_compound_commands_outside_quotes() {
        assert_eq!(split_compound("a && b || c; d | e"), vec!["a", "b", "c", "d", "e"]);
        assert_eq!(split_compound("echo 'a && b'"), vec!["echo 'a && b'"]);
        assert_eq!(split_compound("sleep 1 &"), vec!["sleep 1 &"]);
    }
}
