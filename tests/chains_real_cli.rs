//! SPEC C1–C5 and W5 (hook inputs) against the real thing: the real Claude Code CLI
//! (pinned 2.1.197, in PTYs, against the mock API on 127.0.0.1) with Mimesis's hooks
//! installed into its isolated config dir by `mimesis hooks install`, and the Mimesis
//! engine reading the events the real `mimesis hook` recorded.
//!
//! Two terminals work in one folder: A (the scenario) and C (a second `claude`, the most
//! recently active session when A is cleared). `/compact` in A counts one compaction on
//! A; `/clear` in A starts B, which supersedes A in the same chain; C is untouched by both.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use mimesis_tests::engine_watch::{EngineWatch, State};
use mimesis_tests::mimesis::mimesis_bin;
use mimesis_tests::pty::{Pty, PtyCommand};
use mimesis_tests::scenario::{Scenario, is_idle_prompt, prompt_input, registry_field};
use serde_json::{Value, json};

const NOTICE: Duration = Duration::from_secs(10);
const STEP: Duration = Duration::from_secs(30);
const PROMPT_C: &str = "third terminal: say hello";

fn field<'a>(st: &'a State, id: &str, key: &str) -> Option<&'a Value> {
    st.field(id, key)
}

fn mimesis(bin: &Path, config: &Path, data: &Path, args: &[&str]) -> Result<Value> {
    let out = Command::new(bin).arg("--config-dir").arg(config).arg("--data-dir").arg(data).args(args).output()?;
    ensure!(out.status.success(), "mimesis {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).with_context(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Types a line into a second `claude` TUI and presses Enter.
fn type_line(pty: &Pty, text: &str) -> Result<()> {
    pty.wait_for("idle prompt", STEP, is_idle_prompt)?;
    pty.send(text)?;
    pty.wait_for("the typed line", STEP, |s| prompt_input(s).is_some_and(|l| l.trim_end() == text))?;
    pty.send("\r")?;
    Ok(())
}

#[test]
fn compact_and_clear_make_one_chain_and_leave_the_other_terminal_alone() -> Result<()> {
    let bin = mimesis_bin()?;
    let mut s = Scenario::new()?;
    let data = tempfile::Builder::new().prefix("mimesis-data-").tempdir()?;
    let config = s.home.config_dir().to_owned();

    // Installed by the real installer, into the isolated config dir.
    let installed = mimesis(&bin, &config, data.path(), &["hooks", "install", "--json"])?;
    ensure!(installed[0]["installed"] == json!(true), "{installed}");
    let settings: Value = serde_json::from_slice(&std::fs::read(config.join("settings.json"))?)?;
    ensure!(settings["hooks"]["SessionStart"][0]["hooks"][0]["command"].as_str().is_some_and(|c| c.contains(" hook ")));

    let engine = EngineWatch::start_with(&config, Some(data.path()))?;
    let result = run(&mut s, &engine, &bin, data.path());
    if let Err(e) = result {
        let spool = std::fs::read_dir(data.path().join("hooks"))
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| {
                        format!("{}:\n{}", e.path().display(), std::fs::read_to_string(e.path()).unwrap_or_default())
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        let state = engine.with(|st| serde_json::to_string_pretty(&st.sessions).unwrap_or_default());
        return Err(e.context(format!("hook spool:\n{spool}\nengine sessions:\n{state}\n{}", s.diagnostics())));
    }
    // Uninstall removes exactly what install added.
    let removed = mimesis(&bin, &config, data.path(), &["hooks", "uninstall", "--json"])?;
    ensure!(removed[0]["installed"] == json!(false), "{removed}");
    let settings: Value = serde_json::from_slice(&std::fs::read(config.join("settings.json"))?)?;
    ensure!(settings.get("hooks").is_none(), "{settings}");
    Ok(())
}

fn run(s: &mut Scenario, engine: &EngineWatch, bin: &Path, data: &Path) -> Result<()> {
    // What the hooks recorded is checked below against the processes that ran them.
    // A: a prompt, a permission dialog, approval, end of turn.
    s.start()?;
    s.prompt_with_permission()?;
    let a = s.registry_session_id()?;
    // The Notification hook (permission_prompt) and the registry both say so.
    engine.wait_for("A waiting for approval", NOTICE, |st| {
        field(st, &a, "status") == Some(&json!("waiting_for_approval"))
    })?;
    s.approve()?;

    // C: a second terminal in the same folder, active after A.
    let cmd = PtyCommand::new(s.claude_path().as_os_str()).envs(s.home.env()).cwd(s.home.project_dir()).size(120, 40);
    let c_pty = Pty::spawn(cmd)?;
    let c_pid = c_pty.pid();
    c_pty.wait_for("C's idle prompt", STEP, is_idle_prompt)?;
    type_line(&c_pty, PROMPT_C)?;
    c_pty.wait_for("C's reply", STEP, |sc| is_idle_prompt(sc) && sc.contains("●"))?;
    let deadline = std::time::Instant::now() + STEP;
    let c = loop {
        if let Some(id) = registry_field(&s.files(), c_pid, "sessionId") {
            break id.to_owned();
        }
        ensure!(std::time::Instant::now() < deadline, "C's registry entry never named its session");
        std::thread::sleep(Duration::from_millis(50));
    };
    ensure!(c != a, "two terminals, two sessions");
    engine.wait_for("C known, with its goal", NOTICE, |st| field(st, &c, "goal") == Some(&json!(PROMPT_C)))?;
    let last = |st: &State, id: &str| field(st, id, "lastActivityAt").and_then(Value::as_str).map(str::to_owned);
    engine.wait_for("C more recently active than A", NOTICE, |st| last(st, &c) > last(st, &a))?;

    // Every hook event of A names A's `claude` process and its terminal; C's name C's.
    let events = mimesis_watch::spool::read_all(data);
    let pid_a = s.pid()?;
    let of = |id: &str| events.iter().filter(|e| e.session_id.as_str() == id).collect::<Vec<_>>();
    ensure!(!of(&a).is_empty() && !of(&c).is_empty(), "hook events for A and C: {events:?}");
    for e in of(&a) {
        ensure!(
            e.terminal.claude_pid == Some(pid_a),
            "A's event from pid {:?}, not {pid_a}: {e:?}",
            e.terminal.claude_pid
        );
        ensure!(e.terminal.tty.as_deref().is_some_and(|t| t.starts_with("pts/")), "A's terminal: {e:?}");
    }
    for e in of(&c) {
        ensure!(e.terminal.claude_pid == Some(c_pid), "C's event: {e:?}");
        ensure!(e.terminal.tty != of(&a)[0].terminal.tty, "two terminals, two TTYs");
    }

    // /compact in A: one compaction on A, nothing else changes.
    s.compact()?;
    engine.wait_for("compactionCount 1 on A; C untouched; no chain", NOTICE, |st| {
        field(st, &a, "compactionCount") == Some(&json!(1))
            && field(st, &a, "superseded") == Some(&json!(false))
            && field(st, &a, "chainLength") == Some(&json!(1))
            && field(st, &c, "compactionCount") == Some(&json!(0))
            && field(st, &c, "superseded") == Some(&json!(false))
    })?;
    let marker = s.home.project_dir().join(format!(".claude/compacted.{a}.marker"));
    ensure!(marker.is_file(), "the SessionStart(compact) hook wrote {}", marker.display());

    // /clear in A: B succeeds A in A's chain; C stays its own chain.
    s.clear()?;
    let b = s.registry_session_id()?;
    ensure!(b != a && b != c);
    engine.wait_for("A superseded by B, one chain; C untouched", NOTICE, |st| {
        field(st, &a, "superseded") == Some(&json!(true))
            && field(st, &a, "supersededBy") == Some(&json!(b))
            && field(st, &a, "supersededAt").is_some_and(Value::is_string)
            && field(st, &b, "superseded") == Some(&json!(false))
            && field(st, &b, "workChainId") == field(st, &a, "workChainId")
            && field(st, &b, "chainLength") == Some(&json!(2))
            && field(st, &a, "chainLength") == Some(&json!(2))
            && field(st, &b, "compactionCount") == Some(&json!(1))
            && field(st, &c, "superseded") == Some(&json!(false))
            && field(st, &c, "chainLength") == Some(&json!(1))
            && field(st, &c, "workChainId") == Some(&json!(c))
    })?;
    s.second_prompt()?;
    engine.wait_for("B waiting for input after its turn (Stop hook)", NOTICE, |st| {
        field(st, &b, "status") == Some(&json!("waiting_for_input"))
    })?;

    // The one-shot CLI agrees: one row per chain by default, all rows with --all.
    let config = s.home.config_dir().to_owned();
    let ls = mimesis(bin, &config, data, &["ls", "--json"])?;
    let ids: Vec<&str> = ls.as_array().context("array")?.iter().filter_map(|r| r["sessionId"].as_str()).collect();
    ensure!(ids.contains(&b.as_str()) && ids.contains(&c.as_str()) && !ids.contains(&a.as_str()), "ls: {ids:?}");
    let all = mimesis(bin, &config, data, &["ls", "--json", "--all"])?;
    let row_a = all.as_array().context("array")?.iter().find(|r| r["sessionId"] == json!(a)).context("A in --all")?;
    ensure!(row_a["supersededBy"] == json!(b), "{row_a}");
    // `show` of the head reads across the chain, with a boundary.
    let shown = mimesis(bin, &config, data, &["show", &b, "--json"])?;
    let kinds: Vec<&str> = shown.as_array().context("array")?.iter().filter_map(|i| i["kind"].as_str()).collect();
    let seg = kinds.iter().position(|k| *k == "segment").context("a segment boundary")?;
    ensure!(kinds[..seg].contains(&"compaction") && kinds[seg + 1..].contains(&"assistant_text"), "{kinds:?}");

    s.exit()?;
    drop(c_pty);
    Ok(())
}
