//! Installing Mimesis's hooks into Claude Code's `settings.json` (SPEC C5).
//!
//! The file belongs to the user: every other setting and every other hook stays as it
//! was, keys keep their order and the file keeps its indentation, so `install` then
//! `uninstall` gives back the same bytes. A write is atomic (a temporary file with the
//! same permissions, renamed over the original) and leaves a timestamped backup. A file
//! that is not valid JSON, or whose `hooks` is not the documented shape, is refused with
//! its path and line, and nothing is written.
//!
//! Our entries are recognised by an exact marker in their command ([`MARKER`], an argument
//! `mimesis hook` ignores), so an install from a binary that has moved since is still
//! found and a user's own hook is never taken for ours, whatever its program is called.
//! Entries written before the marker existed are recognised by their exact form only
//! (`mimesis|mimesis-desktop hook --data-dir DIR`).

use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize as DeriveSerialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use mimesis_core::clock::Timestamp;

/// The hooks Mimesis installs: (event, matcher).
pub const WANTED: &[(&str, Option<&str>)] = &[
    ("SessionStart", Some("startup|resume|clear|compact|fork")),
    ("SessionEnd", None),
    ("Stop", None),
    ("Notification", None),
    ("UserPromptSubmit", None),
    // Since 2.1.330 (older versions ignore events they do not know; tests/versions.rs):
    // a permission dialog at once (the Notification hook comes seconds later), compaction,
    // a turn ended by an API error, subagents at work.
    ("PermissionRequest", None),
    ("PreCompact", None),
    ("PostCompact", None),
    ("StopFailure", None),
    ("SubagentStart", None),
    ("SubagentStop", None),
];

/// The argument that marks a hook command as installed by Mimesis.
pub const MARKER: &str = "--installed-by=mimesis";

/// Seconds Claude Code gives our hook before giving up on it (it needs milliseconds)…
const HOOK_TIMEOUT_SECS: u64 = 10;

/// …but at a permission dialog it may wait for the user's answer from Mimesis
/// (`mimesis_core::approval::DEFAULT_WAIT`, and a little more).
fn timeout_secs(event: &str) -> u64 {
    if event == "PermissionRequest" { mimesis_core::approval::DEFAULT_WAIT.as_secs() + 10 } else { HOOK_TIMEOUT_SECS }
}

/// One config root's hook state (docs/ipc.md `HookStatus`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(DeriveSerialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HookStatus {
    pub root: PathBuf,
    pub settings_path: PathBuf,
    /// Every hook of [`WANTED`] is there, as this version installs it.
    pub installed: bool,
    /// Some, not all, are there, or one is outdated (installing again fixes either).
    pub partial: bool,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
    /// The program our hooks run, when it is not there any more (Mimesis was removed or
    /// moved): Claude Code then fails to run them until they are uninstalled or reinstalled.
    pub missing_program: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "{path} is not valid JSON (line {line}, column {column}: {message}); hooks were not changed, nothing was written"
    )]
    InvalidJson { path: PathBuf, line: usize, column: usize, message: String },
    #[error("{path}: {what}; hooks were not changed, nothing was written")]
    Shape { path: PathBuf, what: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}; the original file is unchanged")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The settings file of a config root.
pub fn settings_path(root: &Path) -> PathBuf {
    root.join("settings.json")
}

/// The command line our hooks run: this binary, `hook`, and the data dir, so the hook
/// records where this Mimesis reads whatever environment Claude Code runs it in.
pub fn hook_command(exe: &Path, data_dir: &Path) -> String {
    format!(
        "{} hook --data-dir {} {MARKER}",
        shell_quote(&exe.to_string_lossy()),
        shell_quote(&data_dir.to_string_lossy())
    )
}

/// The program a front end installs as the hook: the `mimesis` CLI next to `current_exe`
/// when it is there (a small binary that starts in milliseconds, built into the same
/// folder), else `current_exe` itself, which must then handle `hook` as its first
/// argument (the desktop app does, so hooks work without the CLI).
pub fn hook_program(current_exe: &Path) -> PathBuf {
    let cli = current_exe.with_file_name(format!("mimesis{}", std::env::consts::EXE_SUFFIX));
    if cli != current_exe && cli.is_file() { cli } else { current_exe.to_owned() }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._+-:@%=,".contains(&b)) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Splits a command line into words the way `sh` would for plain words and quotes
/// (no expansions). Enough to recognise our own command.
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        _ => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Is this hook command one Mimesis installed? One that runs `hook` with [`MARKER`], or
/// exactly a form installed before the marker: `mimesis` or `mimesis-desktop` (any
/// folder) with `hook` or `hook --data-dir DIR` and nothing else.
pub fn is_our_command(command: &str) -> bool {
    let words = shell_words(command);
    let legacy_program = |program: &str| {
        let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or("");
        name == "mimesis" || name == "mimesis-desktop"
    };
    match words.as_slice() {
        [_, sub, rest @ ..] if sub == "hook" && rest.iter().any(|w| w == MARKER) => true,
        [program, sub] if sub == "hook" => legacy_program(program),
        [program, sub, flag, _] if sub == "hook" && flag == "--data-dir" => legacy_program(program),
        _ => false,
    }
}

// ---------------------------------------------------------------- an order-keeping JSON value

/// A JSON value whose objects keep their key order, so a rewrite changes only what we
/// changed.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(o) => o.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(o) => o.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    fn str(s: &str) -> Json {
        Json::String(s.to_owned())
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n).map(Json::Number).ok_or_else(|| E::custom("not a JSON number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Json::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v: Vec<(String, Json)> = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, Json>()? {
                    // A repeated key: JSON.parse keeps the last value, so do we.
                    match v.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = x,
                        None => v.push((k, x)),
                    }
                }
                Ok(Json::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(x) => s.serialize_str(x),
            Json::Array(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Json::Object(o) => {
                let mut map = s.serialize_map(Some(o.len()))?;
                for (k, v) in o {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// The file as read: its value and how it was laid out.
struct Doc {
    value: Json,
    indent: Vec<u8>,
    /// The file was one line: keep it one line.
    compact: bool,
    trailing_newline: bool,
    existed: bool,
}

fn read_doc(path: &Path) -> Result<Doc, InstallError> {
    let bytes = match mimesis_os::files::read_regular(
        path,
        mimesis_core::permissions::MAX_SETTINGS_BYTES,
        mimesis_os::files::Links::Follow,
    ) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Doc {
                value: Json::Object(Vec::new()),
                indent: b"  ".to_vec(),
                compact: false,
                trailing_newline: true,
                existed: false,
            });
        }
        Err(source) => return Err(InstallError::Read { path: path.to_owned(), source }),
    };
    let value: Json = if bytes.iter().all(u8::is_ascii_whitespace) {
        Json::Object(Vec::new())
    } else if mimesis_core::json::too_deep(&bytes, mimesis_core::json::MAX_DEPTH) {
        return Err(InstallError::InvalidJson {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: format!("nested deeper than {} levels", mimesis_core::json::MAX_DEPTH),
        });
    } else {
        serde_json::from_slice(&bytes).map_err(|e| InstallError::InvalidJson {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().split(" at line").next().unwrap_or("").to_owned(),
        })?
    };
    let shape = |what: &str| InstallError::Shape { path: path.to_owned(), what: what.to_owned() };
    let Json::Object(_) = &value else { return Err(shape("the top level is not a JSON object")) };
    if let Some(hooks) = value.get("hooks") {
        let Json::Object(events) = hooks else { return Err(shape("\"hooks\" is not an object")) };
        for (event, groups) in events {
            let Json::Array(groups) = groups else {
                return Err(shape(&format!("\"hooks.{event}\" is not an array")));
            };
            for g in groups {
                if !matches!(g, Json::Object(_)) || !matches!(g.get("hooks"), None | Some(Json::Array(_))) {
                    return Err(shape(&format!("an entry of \"hooks.{event}\" is not {{matcher, hooks: [...]}}")));
                }
            }
        }
    }
    // A file written on one line (a tool's compact output) is written back on one line.
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let compact = !body.is_empty() && !body.contains(&b'\n');
    Ok(Doc { indent: detect_indent(&bytes), compact, trailing_newline: bytes.ends_with(b"\n"), value, existed: true })
}

/// The indentation of the first indented line (two spaces when the file has none).
fn detect_indent(bytes: &[u8]) -> Vec<u8> {
    for line in bytes.split(|&b| b == b'\n').skip(1) {
        let ws: Vec<u8> = line.iter().take_while(|&&b| b == b' ' || b == b'\t').copied().collect();
        if !ws.is_empty() {
            return ws;
        }
    }
    b"  ".to_vec()
}

fn render(doc: &Doc) -> Vec<u8> {
    let mut out = Vec::new();
    if doc.compact {
        let mut ser = serde_json::Serializer::new(&mut out);
        doc.value.serialize(&mut ser).expect("serializing a JSON value to memory cannot fail");
    } else {
        let fmt = serde_json::ser::PrettyFormatter::with_indent(&doc.indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        doc.value.serialize(&mut ser).expect("serializing a JSON value to memory cannot fail");
    }
    if doc.trailing_newline {
        out.push(b'\n');
    }
    out
}

/// Hook entries (`{type, command}`) inside one group.
fn group_commands(group: &Json) -> impl Iterator<Item = &str> {
    let hooks = match group.get("hooks") {
        Some(Json::Array(h)) => h.as_slice(),
        _ => &[],
    };
    hooks.iter().filter_map(|h| h.get("command").and_then(Json::as_str))
}

fn event_has_ours(doc: &Json, event: &str) -> bool {
    match doc.get("hooks").and_then(|h| h.get(event)) {
        Some(Json::Array(groups)) => groups.iter().any(|g| group_commands(g).any(is_our_command)),
        _ => false,
    }
}

/// Ours is there for `event` with another timeout than this version gives it (an install
/// from before the permission wait: Claude Code would end that hook too soon).
fn event_has_outdated(doc: &Json, event: &str) -> bool {
    let Some(Json::Array(groups)) = doc.get("hooks").and_then(|h| h.get(event)) else { return false };
    let want = Json::Number(timeout_secs(event).into());
    groups.iter().filter_map(|g| g.get("hooks")).any(|hooks| {
        let Json::Array(hooks) = hooks else { return false };
        hooks.iter().any(|h| {
            h.get("command").and_then(Json::as_str).is_some_and(is_our_command)
                && h.get("timeout").is_some_and(|t| *t != want)
        })
    })
}

fn status_of(root: &Path, doc: &Json) -> HookStatus {
    let present = WANTED.iter().filter(|(e, _)| event_has_ours(doc, e)).count();
    // An outdated one reads as partly installed: installing again brings it up to date.
    let outdated = WANTED.iter().any(|(e, _)| event_has_outdated(doc, e));
    HookStatus {
        root: root.to_owned(),
        settings_path: settings_path(root),
        installed: present == WANTED.len() && !outdated,
        partial: (outdated || present < WANTED.len()) && present > 0,
        error: None,
        missing_program: our_programs(doc).into_iter().map(PathBuf::from).find(|p| p.is_absolute() && !p.is_file()),
    }
}

/// The programs our hooks in `doc` run (each command's first word), once each.
fn our_programs(doc: &Json) -> Vec<String> {
    let mut programs: Vec<String> = Vec::new();
    let Some(Json::Object(events)) = doc.get("hooks") else { return programs };
    for (_, groups) in events {
        let Json::Array(groups) = groups else { continue };
        for command in groups.iter().flat_map(group_commands).filter(|c| is_our_command(c)) {
            if let Some(program) = shell_words(command).into_iter().next()
                && !programs.contains(&program)
            {
                programs.push(program);
            }
        }
    }
    programs
}

/// Whether Mimesis's hooks are in the root's `settings.json`.
pub fn status(root: &Path) -> HookStatus {
    match read_doc(&settings_path(root)) {
        Ok(doc) => status_of(root, &doc.value),
        Err(e) => HookStatus {
            root: root.to_owned(),
            settings_path: settings_path(root),
            installed: false,
            partial: false,
            error: Some(e.to_string()),
            missing_program: None,
        },
    }
}

fn our_group(event: &str, matcher: Option<&str>, command: &str) -> Json {
    let hook = Json::Object(vec![
        ("type".into(), Json::str("command")),
        ("command".into(), Json::str(command)),
        ("timeout".into(), Json::Number(timeout_secs(event).into())),
    ]);
    let mut g = Vec::new();
    if let Some(m) = matcher {
        g.push(("matcher".into(), Json::str(m)));
    }
    g.push(("hooks".into(), Json::Array(vec![hook])));
    Json::Object(g)
}

/// Adds the missing hooks; brings ours up to date (the binary moved, the matcher
/// changed). Returns whether anything changed.
fn add_ours(doc: &mut Json, command: &str) -> bool {
    let Json::Object(top) = doc else { return false };
    if !top.iter().any(|(k, _)| k == "hooks") {
        top.push(("hooks".into(), Json::Object(Vec::new())));
    }
    let Some(Json::Object(events)) = doc.get_mut("hooks") else { return false };
    let mut changed = false;
    for (event, matcher) in WANTED {
        if !events.iter().any(|(k, _)| k == event) {
            events.push(((*event).to_owned(), Json::Array(Vec::new())));
        }
        let Some((_, Json::Array(groups))) = events.iter_mut().find(|(k, _)| k == event) else { continue };
        let mut found = false;
        for g in groups.iter_mut() {
            let ours_only = group_commands(g).count() > 0 && group_commands(g).all(is_our_command);
            let Json::Object(fields) = g else { continue };
            let mut has_ours = false;
            if let Some((_, Json::Array(hooks))) = fields.iter_mut().find(|(k, _)| k == "hooks") {
                for h in hooks.iter_mut() {
                    let Json::Object(hf) = h else { continue };
                    if let Some((_, Json::String(c))) = hf.iter_mut().find(|(k, _)| k == "command")
                        && is_our_command(c)
                    {
                        has_ours = true;
                        if c != command {
                            *c = command.to_owned();
                            changed = true;
                        }
                        let timeout = Json::Number(timeout_secs(event).into());
                        match hf.iter_mut().find(|(k, _)| k == "timeout") {
                            Some((_, t)) if *t == timeout => {}
                            Some((_, t)) => {
                                *t = timeout;
                                changed = true;
                            }
                            None => {
                                hf.push(("timeout".into(), timeout));
                                changed = true;
                            }
                        }
                    }
                }
            }
            if has_ours {
                found = true;
                // Fix the matcher only in a group that holds nothing but ours.
                if ours_only {
                    let current = fields.iter().find(|(k, _)| k == "matcher").and_then(|(_, v)| v.as_str());
                    if current != *matcher {
                        fields.retain(|(k, _)| k != "matcher");
                        if let Some(m) = matcher {
                            fields.insert(0, ("matcher".into(), Json::str(m)));
                        }
                        changed = true;
                    }
                }
            }
        }
        if !found {
            groups.push(our_group(event, *matcher, command));
            changed = true;
        }
    }
    changed
}

/// Removes every hook entry of ours, then whatever group, event list or `hooks` object
/// that left empty. Containers that were empty before are left alone.
fn remove_ours(doc: &mut Json) -> bool {
    let mut changed = false;
    let Some(Json::Object(events)) = doc.get_mut("hooks") else { return false };
    let mut emptied: Vec<String> = Vec::new();
    for (event, groups) in events.iter_mut() {
        let Json::Array(groups) = groups else { continue };
        let before = groups.len();
        let mut touched = false;
        groups.retain_mut(|g| {
            let Json::Object(fields) = g else { return true };
            let Some((_, Json::Array(hooks))) = fields.iter_mut().find(|(k, _)| k == "hooks") else { return true };
            let n = hooks.len();
            hooks.retain(|h| !h.get("command").and_then(Json::as_str).is_some_and(is_our_command));
            if hooks.len() != n {
                touched = true;
                return !hooks.is_empty();
            }
            true
        });
        if touched {
            changed = true;
            if before > 0 && groups.is_empty() {
                emptied.push(event.clone());
            }
        }
    }
    if !emptied.is_empty() {
        events.retain(|(k, _)| !emptied.contains(k));
        if events.is_empty()
            && let Json::Object(top) = doc
        {
            top.retain(|(k, _)| k != "hooks");
        }
    }
    changed
}

/// Writes `bytes` over `path` atomically, keeping its permissions, after copying the
/// original to a timestamped backup. Returns the backup's path.
/// A settings file that is a symlink (dotfiles kept in a repository) is written through:
/// the link stays and its target changes, rather than the link being replaced by a copy.
fn write_atomically(path: &Path, bytes: &[u8], existed: bool, now: Timestamp) -> Result<Option<PathBuf>, InstallError> {
    let werr = |source| InstallError::Write { path: path.to_owned(), source };
    let real;
    let path = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        real = fs::canonicalize(path).map_err(werr)?;
        real.as_path()
    } else {
        path
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(werr)?;
    let mode = fs::metadata(path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
    let mut backup = None;
    if existed {
        let stamp: String = now.to_iso().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        let b = dir.join(format!("settings.json.mimesis-backup-{stamp}"));
        fs::copy(path, &b).map_err(werr)?;
        backup = Some(b);
    }
    let tmp = dir.join(format!(".settings.json.mimesis-{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        // Nothing was changed, so nothing is left behind: neither the temporary file nor
        // a backup of a file that is still as it was.
        let _ = fs::remove_file(&tmp);
        if let Some(b) = &backup {
            let _ = fs::remove_file(b);
        }
        return Err(werr(e));
    }
    Ok(backup)
}

/// Installs the hooks into `<root>/settings.json`, running `command`
/// ([`hook_command`]). Idempotent: when everything is there already, nothing is written.
pub fn install(root: &Path, command: &str, now: Timestamp) -> Result<HookStatus, InstallError> {
    let path = settings_path(root);
    let mut doc = read_doc(&path)?;
    if add_ours(&mut doc.value, command) {
        let bytes = render(&doc);
        let backup = write_atomically(&path, &bytes, doc.existed, now)?;
        tracing::info!(path = %path.display(), backup = ?backup, "installed Mimesis hooks");
    }
    Ok(status_of(root, &doc.value))
}

/// Installs into every root, or into none: each file is checked first, and the first
/// that cannot be changed stops it all before anything is written.
pub fn install_all(roots: &[PathBuf], command: &str, now: Timestamp) -> Result<Vec<HookStatus>, InstallError> {
    for r in roots {
        read_doc(&settings_path(r))?;
    }
    roots.iter().map(|r| install(r, command, now)).collect()
}

/// Uninstalls from every root, checking every file first like [`install_all`].
pub fn uninstall_all(roots: &[PathBuf], now: Timestamp) -> Result<Vec<HookStatus>, InstallError> {
    for r in roots {
        read_doc(&settings_path(r))?;
    }
    roots.iter().map(|r| uninstall(r, now)).collect()
}

/// Removes exactly the hooks Mimesis added from `<root>/settings.json`.
pub fn uninstall(root: &Path, now: Timestamp) -> Result<HookStatus, InstallError> {
    let path = settings_path(root);
    let mut doc = read_doc(&path)?;
    if doc.existed && remove_ours(&mut doc.value) {
        // The install's backup, when nothing else changed since, gives back the user's own
        // bytes (their formatting, not ours).
        let bytes = backup_with_value(&path, &doc.value).unwrap_or_else(|| render(&doc));
        let backup = write_atomically(&path, &bytes, true, now)?;
        tracing::info!(path = %path.display(), backup = ?backup, "removed Mimesis hooks");
    }
    Ok(status_of(root, &doc.value))
}

/// The newest of our backups of `path` whose content is `value`, as bytes.
fn backup_with_value(path: &Path, value: &Json) -> Option<Vec<u8>> {
    let real = fs::canonicalize(path).ok()?;
    let dir = real.parent()?;
    let mut backups: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("settings.json.mimesis-backup-")))
        .map(|e| e.path())
        .collect();
    backups.sort();
    backups.into_iter().rev().take(20).find_map(|b| {
        let bytes = mimesis_os::files::read_regular(
            &b,
            mimesis_core::permissions::MAX_SETTINGS_BYTES,
            mimesis_os::files::Links::Refuse,
        )
        .ok()?;
        let mut v: Json = mimesis_core::json::from_slice(&bytes).ok()?;
        // Uninstall drops a `hooks` object it emptied; the user's own empty one is theirs.
        if let Json::Object(top) = &mut v {
            top.retain(|(k, x)| !(k == "hooks" && matches!(x, Json::Object(e) if e.is_empty())));
        }
        (v == *value).then_some(bytes)
    })
}

#[cfg(test)]
mod tests;
