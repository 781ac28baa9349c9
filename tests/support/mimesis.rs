//! The `mimesis` binary of this workspace, built on demand, for tests that need the real
//! command (the hook Claude Code runs, the installer).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, ensure};

use crate::claude::workspace_root;

/// Builds `mimesis` (debug profile; a no-op when it is up to date) and returns its path.
pub fn mimesis_bin() -> Result<PathBuf> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut memo = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = memo.as_ref() {
        return Ok(p.clone());
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
