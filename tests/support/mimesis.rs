//! The `mimesis` binary of this workspace, built on demand, for tests that need the real
//! command (the hook Claude Code runs, the installer).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, ensure};

use crate::claude::workspace_root;

/// `$MIMESIS_CLI_BIN` when set (the test command builds `mimesis` with the rest of the
/// workspace and names it here), else builds `mimesis` (debug profile; a no-op when it is up
/// to date) and returns its path.
///
/// Not built again under the test command: `cargo build -p mimesis-cli` alone resolves other
/// features than the workspace's build (no `ts`, no tokio `test-util`), so it compiled 11 of
/// the workspace's crates a second time in the middle of the run, and left a `mimesis` that
/// the next workspace build replaced.
pub fn mimesis_bin() -> Result<PathBuf> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut memo = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = memo.as_ref() {
        return Ok(p.clone());
    }
    if let Some(bin) = std::env::var_os("MIMESIS_CLI_BIN").filter(|v| !v.is_empty()).map(PathBuf::from) {
        ensure!(bin.is_file(), "$MIMESIS_CLI_BIN names {}, which is not a file", bin.display());
        *memo = Some(bin.clone());
        return Ok(bin);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", "mimesis-cli", "--bin", "mimesis"])
        .current_dir(workspace_root())
        .status()
        .context("run cargo build -p mimesis-cli")?;
    ensure!(status.success(), "cargo build -p mimesis-cli failed");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    let bin = target.join("debug").join("mimesis");
    ensure!(bin.is_file(), "{} was not built", bin.display());
    *memo = Some(bin.clone());
    Ok(bin)
}

/// A started command's output, or an error (and the command killed) when it has not ended
/// within `limit`: a hung command fails the test instead of hanging it.
pub fn wait_output(child: std::process::Child, limit: std::time::Duration) -> Result<std::process::Output> {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Ok(out?),
        Err(_) => {
            // SAFETY: signalling a child we started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            anyhow::bail!("the command hung for {limit:?}")
        }
    }
}

/// OSC 52 (a clipboard write), OSC 0 and 2 (title changes), ED (a screen clear), the 8-bit
/// CSI (U+009B), DEL, a carriage return and bidi overrides: what an attacker puts in every
/// field that may reach a terminal (issue 32).
pub const HOSTILE: &str = "x\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;pwned\u{7}\u{1b}]2;pwned\u{1b}\\\u{1b}[2J\u{9b}31m\u{7f}\r\u{202e}\u{2066}y";

/// Output no terminal acts on: UTF-8 with no C0 control but newline and tab, no DEL, no C1
/// control, no bidi control.
pub fn ensure_inert(what: &str, out: &[u8]) -> Result<()> {
    let text = std::str::from_utf8(out).with_context(|| format!("{what}: not UTF-8"))?;
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    ensure!(bad.is_empty(), "{what} printed {bad:?} raw:\n{text}");
    Ok(())
}

/// The lines a started child writes on its stdout (piped), read on a thread.
pub fn stdout_lines(child: &mut std::process::Child) -> Result<std::sync::mpsc::Receiver<String>> {
    use std::io::BufRead;
    let stdout = child.stdout.take().context("stdout is not piped")?;
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    Ok(lines)
}
