//! What the UI must say and offer exactly as the engine does, written out as TypeScript
//! (`ui/src/lib/generated/engine.ts`): the settings' defaults, ranges and units, the keys
//! that name a tool's target, and the wording of supervision events. The UI and its
//! browser preview both read that file, so neither keeps a copy that can drift; a test
//! (`tests/ui_contract.rs`) fails when the file is stale and rewrites it with
//! `MIMESIS_BLESS=1`.

use std::fmt::Write;
use std::time::Duration;

use mimesis_core::ids::SessionId;
use mimesis_core::settings::{NUMBER_FIELDS, Settings};
use mimesis_core::supervision::event::wording;
use mimesis_core::transcript::TARGET_KEYS;

/// Where the generated file lives, from the repository's root.
pub const PATH: &str = "ui/src/lib/generated/engine.ts";

/// A number no real message contains, replaced by a `{name}` placeholder.
const MARK: u64 = 987_654_321;

/// The file's whole text.
pub fn typescript() -> String {
    let mut out = String::new();
    out.push_str(
        "// Generated from the Rust engine (crates/wiring/src/ui_contract.rs); do not edit.\n\
         // Refresh: MIMESIS_BLESS=1 cargo test -p mimesis-tests --test e2e ui_contract::\n\n\
         import type { Settings } from './ipc';\n\n",
    );

    let defaults = serde_json::to_value(Settings::default()).unwrap_or_default();
    // The whole document as the engine's defaults (ipc.ts declares its shape).
    out.push_str("/** The settings document as the engine makes it when there is none. */\n");
    let _ = writeln!(
        out,
        "export const DEFAULT_SETTINGS: Settings = {};\n",
        serde_json::to_string(&defaults).unwrap_or_default()
    );
    out.push_str("/** Every number of the Settings document: the range the view offers, its unit and default. */\n");
    out.push_str("export const SETTINGS_NUMBERS = {\n");
    for f in NUMBER_FIELDS {
        let (section, key) = f.path.split_once('.').unwrap_or((f.path, ""));
        let default = defaults[section][key].as_u64().unwrap_or(f.min);
        let _ = writeln!(
            out,
            "  {:?}: {{ min: {}, max: {}, unit: {:?}, default: {} }},",
            f.path,
            f.min,
            f.max,
            f.unit.symbol(),
            default
        );
    }
    out.push_str("} as const;\n\n");
    out.push_str("export type SettingsNumberPath = keyof typeof SETTINGS_NUMBERS;\n\n");

    out.push_str("/** The keys of a tool's input that name its target, in the engine's order. */\n");
    let keys: Vec<String> = TARGET_KEYS.iter().map(|k| format!("{k:?}")).collect();
    let _ = writeln!(out, "export const TOOL_TARGET_KEYS = [{}] as const;\n", keys.join(", "));

    let id = SessionId::parse("SESSION").expect("a valid id");
    let n = MARK;
    let secs = Duration::from_secs;
    let fixed: &[(&str, &str)] = &[
        ("durationEndedIncomplete", wording::DURATION_ENDED_INCOMPLETE),
        ("restarting", wording::RESTARTING),
        ("restored", wording::RESTORED),
        ("notRestored", wording::NOT_RESTORED),
        ("recovered", wording::RECOVERED),
        ("resumedByUser", wording::RESUMED_BY_USER),
        ("stoppedByUser", wording::STOPPED_BY_USER),
        ("deleted", wording::DELETED),
        ("shutdown", wording::SHUTDOWN),
        ("modeOneShot", wording::MODE_ONE_SHOT),
        ("modePersistent", wording::MODE_PERSISTENT),
        ("diskRestarting", wording::DISK_RESTARTING),
    ];
    out.push_str("/** Supervision messages that take no value, as the engine words them. */\n");
    out.push_str("export const WORDING = {\n");
    for (name, text) in fixed {
        let _ = writeln!(out, "  {name}: {text:?},");
    }
    out.push_str("} as const;\n\n");

    // Each template is the engine's own sentence with its values marked.
    let templates: Vec<(&str, &[&str], String)> = vec![
        ("durationWarning", &["duration"], wording::duration_warning(secs(n))),
        ("durationEnded", &["limit"], wording::duration_ended(secs(n))),
        ("recoveryFailed", &["sessionId"], wording::recovery_failed(&id)),
        ("unhealthy", &["crashes"], wording::unhealthy(n as u32)),
        ("signalled", &["signal", "sessionId"], wording::signalled("SIGNAL", &id)),
        ("memoryBelowBaseline", &["limitMb", "rssMb"], wording::memory_below_baseline(n, n + 1)),
        ("restartLimit", &["restarts", "window"], wording::restart_limit(n as usize, secs(n + 1))),
        ("suspendedIdle", &["idle"], wording::suspended_idle(secs(n))),
        ("suspendedCap", &["max"], wording::suspended_cap(n as u32)),
        ("resuming", &["idleMin"], wording::resuming(secs(n * 60))),
        ("abnormalExit", &["exitCode", "lastLine"], wording::abnormal_exit(n as i32, Some("LASTLINE"))),
        ("diskWarning", &["percent"], wording::disk_warning(99)),
    ];
    out.push_str("/** Why a session ended, as the end of \"This session has ended because …\". */\n");
    out.push_str("export const TERMINATED_BECAUSE: Record<string, string> = {\n");
    for r in wording::TERMINATED_REASONS {
        let key = serde_json::to_value(r).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let _ = writeln!(out, "  {key}: {:?},", wording::terminated_because(r));
    }
    out.push_str("};\n\n");
    // Exit statuses as the engine words them: the signals a shell reports as 128 + n.
    out.push_str("/** A process's exit status in words, as the engine says it. */\n");
    out.push_str("export function exitStatus(code: number): string {\n  const words: Record<number, string> = {\n");
    for code in 0..=160 {
        let w = wording::exit_status(code);
        if !w.starts_with("exit code") {
            let _ = writeln!(out, "    {code}: {w:?},");
        }
    }
    out.push_str("  };\n  return words[code] ?? `exit code ${code}`;\n}\n\n");
    out.push_str("/** Supervision messages with values: `{name}` marks where each goes. */\n");
    out.push_str("export const WORDING_TEMPLATES = {\n");
    for (name, params, text) in templates {
        let marked = mark(&text, params);
        let _ = writeln!(out, "  {name}: {marked:?},");
    }
    out.push_str("} as const;\n\n");
    out.push_str(
        "/** Fills a template's `{name}` marks. */\n\
         export function fill(template: string, values: Record<string, string | number>): string {\n\
         \x20 return template.replace(/\\{(\\w+)\\}/g, (m, k: string) => (k in values ? String(values[k]) : m));\n\
         }\n",
    );
    out
}

/// Replaces the marker values in an engine sentence by `{param}` placeholders, in the
/// order the parameters were given.
fn mark(text: &str, params: &[&str]) -> String {
    let mut t = text.to_owned();
    let spans = [
        wording::span(Duration::from_secs(MARK)),
        wording::limit_adjective(Duration::from_secs(MARK)),
        wording::span(Duration::from_secs(MARK + 1)),
    ];
    for p in params {
        let marks: Vec<String> = match *p {
            "sessionId" => vec!["SESSION".into()],
            "signal" => vec!["SIGNAL".into()],
            "lastLine" => vec!["LASTLINE".into()],
            "percent" => vec!["99".into()],
            "rssMb" => vec![(MARK + 1).to_string()],
            "window" => vec![spans[2].clone()],
            "duration" | "idle" => vec![spans[0].clone()],
            "limit" => vec![spans[1].clone()],
            _ => vec![MARK.to_string()],
        };
        for m in marks {
            if let Some(at) = t.find(&m) {
                t.replace_range(at..at + m.len(), &format!("{{{p}}}"));
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_value_is_marked() {
        let ts = typescript();
        assert!(!ts.contains(&MARK.to_string()), "{ts}");
        assert!(!ts.contains("987654322"), "{ts}");
        assert!(!ts.contains("SESSION\"") && !ts.contains("LASTLINE"), "{ts}");
        assert!(ts.contains("\"limits.restartLimitBurst\": { min: 1, max: 100, unit: \"\", default: 5 }"), "{ts}");
        assert!(ts.contains("unhealthy: \"Session crashed {crashes} times in a row"), "{ts}");
    }
}
