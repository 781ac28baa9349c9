//! ccusage (`daily --json --offline`), the usage report `mimesis cost` is checked against:
//! its native binary from npm, the version `scripts/bench` races, installed into the test
//! cache once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, ensure};

use crate::claude::npm_install_cached;

pub const CCUSAGE_VERSION: &str = "20.0.24";

/// The `ccusage` binary, installed first if the cache does not hold it; `None` on a
/// platform ccusage publishes no Linux x86-64 binary for (the only one pinned here).
pub fn ensure_ccusage() -> Result<Option<PathBuf>> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Ok(None);
    }
    static ONCE: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut memo = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = memo.as_ref() {
        return Ok(Some(p.clone()));
    }
    let specs = [format!("ccusage@{CCUSAGE_VERSION}"), format!("@ccusage/ccusage-linux-x64@{CCUSAGE_VERSION}")];
    let exe = npm_install_cached(&format!("ccusage-{CCUSAGE_VERSION}"), &specs, find_exe)?;
    *memo = Some(exe.clone());
    Ok(Some(exe))
}

fn find_exe(dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exe = dir.join("node_modules/@ccusage/ccusage-linux-x64/bin/ccusage");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("{} is not there", exe.display()))?;
    let out = Command::new(&exe).arg("--version").output().with_context(|| format!("run {}", exe.display()))?;
    let said = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success() && said.contains(CCUSAGE_VERSION), "{} --version said {said:?}", exe.display());
    Ok(exe)
}
