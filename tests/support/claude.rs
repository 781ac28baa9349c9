//! The real Claude Code CLI: a pinned install ([`ensure_claude`]) and an isolated home
//! to run it in ([`ClaudeHome`]).

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

/// The oldest supported Claude Code version (the default of [`ensure_claude`]).
pub const CLAUDE_CODE_VERSION: &str = "2.1.197";
/// The first native binary with auto permission mode by default.
pub const CLAUDE_CODE_2_1_330: &str = "2.1.330";
/// The newest: auto mode by default, Claude Code's own background service (`claude --bg`,
/// `claude agents`, docs/claude-code-observed.md "The background service").
pub const CLAUDE_CODE_NEWEST: &str = "2.1.332";
/// The versions the real-CLI suite runs against (SPEC X6): the oldest supported, 2.1.330
/// and the newest. `MIMESIS_CLAUDE_VERSIONS` (comma-separated) replaces the list, e.g. for
/// `scripts/compat <version>`.
pub fn versions() -> Vec<String> {
    match std::env::var("MIMESIS_CLAUDE_VERSIONS") {
        Ok(v) if !v.trim().is_empty() => v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect(),
        _ => [CLAUDE_CODE_VERSION, CLAUDE_CODE_2_1_330, CLAUDE_CODE_NEWEST].map(str::to_owned).to_vec(),
    }
}
/// The npm package providing it.
pub const CLAUDE_CODE_PACKAGE: &str = "@anthropic-ai/claude-code";
/// Environment variable overriding the cache directory.
pub const CACHE_ENV: &str = "MIMESIS_TEST_CACHE";

/// Marker written into an install directory once it is complete and verified.
const COMPLETE_MARKER: &str = ".mimesis-install-complete";

/// The cargo workspace root (parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The test cache directory: `$MIMESIS_TEST_CACHE`, else `<workspace>/.cache/test`.
pub fn cache_root() -> PathBuf {
    match std::env::var_os(CACHE_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join(".cache").join("test"),
    }
}

/// Returns the path of the oldest supported `claude` ([`CLAUDE_CODE_VERSION`]).
pub fn ensure_claude() -> Result<PathBuf> {
    ensure_claude_version(CLAUDE_CODE_VERSION)
}

/// Returns the path of the `claude` executable of `version`, installing it with npm first
/// if the cache does not hold it yet.
///
/// Installs into `<cache>/claude-code-<version>` with
/// `npm install --no-audit --no-fund --prefix <tmp> @anthropic-ai/claude-code@<version>`
/// in a temporary sibling directory that is renamed into place once `claude --version`
/// checks out, all under an exclusive `flock` on `<cache>/claude-code-<version>.lock`, so
/// concurrent test processes (and threads) install once and never see a partial install.
/// npm 11 does not run the package's postinstall script by default; the package's
/// `node_modules/.bin/claude` works regardless, and is what this returns.
pub fn ensure_claude_version(version: &str) -> Result<PathBuf> {
    // Serialize threads of this process (flock locks are per open file description, so
    // two threads opening the lock file would each get their own lock).
    static IN_PROCESS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut memo = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = memo.iter().find(|(v, _)| v == version) {
        return Ok(path.clone());
    }
    ensure!(
        !version.is_empty() && version.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'),
        "{version:?} is not a version"
    );

    let spec = format!("{CLAUDE_CODE_PACKAGE}@{version}");
    let exe = npm_install_cached(&format!("claude-code-{version}"), &[spec], |dir| find_exe(dir, version))?;
    memo.push((version.to_owned(), exe.clone()));
    Ok(exe)
}

/// Installs the npm packages `specs` into `<cache>/<name>` once and returns what `verify`
/// finds in the install (its executable). The install goes into a temporary sibling
/// directory that is renamed into place once `verify` accepts it, all under an exclusive
/// `flock` on `<cache>/<name>.lock`, so concurrent test processes install once and never
/// see a partial install.
pub fn npm_install_cached(name: &str, specs: &[String], verify: impl Fn(&Path) -> Result<PathBuf>) -> Result<PathBuf> {
    let cache = cache_root();
    let dir = cache.join(name);
    if dir.join(COMPLETE_MARKER).is_file()
        && let Ok(exe) = verify(&dir)
    {
        return Ok(exe);
    }

    fs::create_dir_all(&cache).with_context(|| format!("create cache dir {}", cache.display()))?;
    let _lock = FileLock::acquire(&cache.join(format!("{name}.lock")))?;

    // Another process may have finished the install while we waited for the lock.
    if dir.join(COMPLETE_MARKER).is_file()
        && let Ok(exe) = verify(&dir)
    {
        return Ok(exe);
    }

    let tmp = cache.join(format!(".{name}.tmp-{}", std::process::id()));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).with_context(|| format!("remove {}", tmp.display()))?;
    }
    fs::create_dir_all(&tmp)?;
    eprintln!("[mimesis-tests] installing {} into {}", specs.join(" "), dir.display());
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&tmp)
        .args(specs)
        .current_dir(&tmp)
        .output()
        .context("run npm (is Node.js/npm installed and on PATH?)")?;
    if !out.status.success() {
        let _ = fs::remove_dir_all(&tmp);
        bail!(
            "npm install {} failed ({}):\n{}\n{}",
            specs.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if let Err(e) = verify(&tmp) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e.context(format!("verify fresh install in {}", tmp.display())));
    }
    fs::write(tmp.join(COMPLETE_MARKER), specs.join(" "))?;
    if dir.exists() {
        // An incomplete or broken earlier install.
        fs::remove_dir_all(&dir).with_context(|| format!("remove stale {}", dir.display()))?;
    }
    fs::rename(&tmp, &dir).with_context(|| format!("rename {} -> {}", tmp.display(), dir.display()))?;
    verify(&dir)
}

/// The working `claude` of an install: `node_modules/.bin/claude`, or, should that be the
/// placeholder the skipped postinstall script normally replaces, the native binary of
/// the platform package (`node_modules/@anthropic-ai/claude-code-<platform>/claude`).
fn find_exe(install_dir: &Path, version: &str) -> Result<PathBuf> {
    let modules = install_dir.join("node_modules");
    let bin = modules.join(".bin").join("claude");
    let first_err = match check_version(&bin, version) {
        Ok(()) => return Ok(bin),
        Err(e) => e,
    };
    let mut natives: Vec<PathBuf> = fs::read_dir(modules.join("@anthropic-ai"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("claude-code-"))
        .map(|e| e.path().join("claude"))
        .filter(|p| p.is_file())
        .collect();
    natives.sort();
    for native in natives {
        if check_version(&native, version).is_ok() {
            return Ok(native);
        }
    }
    Err(first_err.context(format!("no working claude {version} executable in {}", install_dir.display())))
}

/// Runs `claude --version` in a throwaway home and checks it reports the pinned version.
fn check_version(exe: &Path, version: &str) -> Result<()> {
    ensure!(exe.exists(), "{} does not exist", exe.display());
    let home = tempfile::Builder::new().prefix("mimesis-claude-version-").tempdir()?;
    let out = Command::new(exe)
        .arg("--version")
        .env_clear()
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("PATH", system_path())
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .output()
        .with_context(|| format!("run {} --version", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && stdout.split_whitespace().next() == Some(version),
        "{} --version: expected {version}, got status {} stdout {:?} stderr {:?}",
        exe.display(),
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// An exclusive advisory lock on a file, released on drop.
struct FileLock {
    file: File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("open lock file {}", path.display()))?;
        loop {
            // SAFETY: flock on a file descriptor we own; no memory is involved.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Self { file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err).with_context(|| format!("flock {}", path.display()));
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: as above. Closing the file would release the lock anyway.
        unsafe {
            libc::flock(self.file.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// The standard system `PATH` given to the CLI (enough for `bash`, coreutils, `git`).
pub fn system_path() -> String {
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()
}

/// How Claude Code names a project folder under `projects/`: every character that is
/// not ASCII alphanumeric becomes `-` (`/tmp/a.b/c` -> `-tmp-a-b-c`). Paths longer than
/// 200 characters are shortened by the CLI with a hash, which this does not reproduce.
pub fn encode_project_dir(cwd: &Path) -> String {
    cwd.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// An isolated home for one `claude` run: a temporary `HOME`, `CLAUDE_CONFIG_DIR` at
/// `<home>/.claude`, a pre-seeded `.claude.json` (onboarding done, API key approved,
/// project trusted), a project working directory `<home>/project` and `TMPDIR` at `<home>/tmp`.
///
/// Everything is deleted on drop.
pub struct ClaudeHome {
    tmp: tempfile::TempDir,
    home: PathBuf,
    config_dir: PathBuf,
    project_dir: PathBuf,
    api_key: String,
    base_url: String,
    proxy_url: Option<String>,
    version: String,
}

impl ClaudeHome {
    /// The API key given to the CLI (any string works against the mock).
    pub const API_KEY: &'static str = "sk-ant-api03-mimesis-test-key-0123456789abcdefghij";

    /// Creates the home for a CLI talking to the API at `base_url`
    /// (e.g. [`crate::mock_api::MockApi::base_url`]).
    ///
    /// The same URL is also set as `HTTPS_PROXY`/`HTTP_PROXY` (with `NO_PROXY` covering
    /// loopback), so any request the CLI tries to make to another host lands on the mock,
    /// which refuses and records it instead of letting it reach the network.
    pub fn new(base_url: &str) -> Result<Self> {
        Self::for_version(base_url, CLAUDE_CODE_VERSION)
    }

    /// [`ClaudeHome::new`] for a CLI of `version` (its onboarding marked as seen).
    pub fn for_version(base_url: &str, version: &str) -> Result<Self> {
        let tmp = tempfile::Builder::new().prefix("mimesis-home-").tempdir()?;
        // Canonical, so the cwd the CLI sees (and encodes) is the one we compute.
        let home = tmp.path().canonicalize()?;
        let config_dir = home.join(".claude");
        let project_dir = home.join("project");
        fs::create_dir_all(&config_dir)?;
        fs::create_dir_all(&project_dir)?;
        fs::create_dir_all(home.join("tmp"))?;
        let this = Self {
            tmp,
            home,
            config_dir,
            project_dir,
            api_key: Self::API_KEY.to_owned(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            proxy_url: Some(base_url.trim_end_matches('/').to_owned()),
            version: version.to_owned(),
        };
        this.write_global_config()?;
        Ok(this)
    }

    /// Disables the proxy trick of [`ClaudeHome::new`] (no `*_PROXY` variables in [`env`]).
    ///
    /// [`env`]: ClaudeHome::env
    pub fn without_proxy(mut self) -> Self {
        self.proxy_url = None;
        self
    }

    /// `$HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `$CLAUDE_CONFIG_DIR` (`<home>/.claude`).
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// The project working directory (`<home>/project`).
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// The API key in [`ClaudeHome::env`].
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// `$CLAUDE_CONFIG_DIR/projects`.
    pub fn projects_dir(&self) -> PathBuf {
        self.config_dir.join("projects")
    }

    /// The transcript folder of the project directory:
    /// `$CLAUDE_CONFIG_DIR/projects/<encoded project dir>`.
    pub fn transcript_dir(&self) -> PathBuf {
        self.projects_dir().join(encode_project_dir(&self.project_dir))
    }

    /// `$CLAUDE_CONFIG_DIR/sessions` (live process registry, `<pid>.json`).
    pub fn sessions_dir(&self) -> PathBuf {
        self.config_dir.join("sessions")
    }

    /// Path of the global config the CLI reads (`$CLAUDE_CONFIG_DIR/.claude.json`).
    pub fn global_config_path(&self) -> PathBuf {
        self.config_dir.join(".claude.json")
    }

    /// Writes `$CLAUDE_CONFIG_DIR/settings.json` (e.g. `{"hooks": {...}}`).
    pub fn write_settings(&self, settings: &Value) -> Result<()> {
        fs::write(self.config_dir.join("settings.json"), serde_json::to_vec_pretty(settings)?)?;
        Ok(())
    }

    /// Marks another directory as trusted in `.claude.json` (to run `claude` elsewhere).
    pub fn trust_dir(&self, dir: &Path) -> Result<()> {
        let path = self.global_config_path();
        let mut cfg: Value = serde_json::from_slice(&fs::read(&path)?)?;
        cfg["projects"][dir.to_string_lossy().as_ref()] = project_entry();
        fs::write(&path, serde_json::to_vec_pretty(&cfg)?)?;
        Ok(())
    }

    fn write_global_config(&self) -> Result<()> {
        let key = &self.api_key;
        let last20 = &key[key.len().saturating_sub(20)..];
        let mut projects = serde_json::Map::new();
        projects.insert(self.project_dir.to_string_lossy().into_owned(), project_entry());
        let cfg = json!({
            "numStartups": 1,
            "installMethod": "unknown",
            "autoUpdates": false,
            "hasCompletedOnboarding": true,
            "lastOnboardingVersion": self.version,
            "lastReleaseNotesSeen": self.version,
            "theme": "dark",
            "customApiKeyResponses": { "approved": [last20], "rejected": [] },
            "bypassPermissionsModeAccepted": false,
            "hasSeenTasksHint": true,
            "projects": projects,
        });
        fs::write(self.global_config_path(), serde_json::to_vec_pretty(&cfg)?)?;
        Ok(())
    }

    /// The complete environment for the CLI (use with an empty base environment).
    pub fn env(&self) -> Vec<(String, String)> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let mut env = vec![
            ("HOME".to_owned(), s(&self.home)),
            ("USER".to_owned(), "mimesis".to_owned()),
            ("CLAUDE_CONFIG_DIR".to_owned(), s(&self.config_dir)),
            ("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(), "1".to_owned()),
            ("DISABLE_TELEMETRY".to_owned(), "1".to_owned()),
            ("DISABLE_ERROR_REPORTING".to_owned(), "1".to_owned()),
            // Otherwise 2.1.197 fetches the official plugin marketplace at startup
            // (downloads.claude.ai, then `git clone` from github.com).
            ("CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL".to_owned(), "1".to_owned()),
            ("ANTHROPIC_BASE_URL".to_owned(), self.base_url.clone()),
            ("ANTHROPIC_API_KEY".to_owned(), self.api_key.clone()),
            ("TERM".to_owned(), "xterm-256color".to_owned()),
            ("COLORTERM".to_owned(), "truecolor".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("SHELL".to_owned(), "/bin/bash".to_owned()),
            ("PATH".to_owned(), system_path()),
            // Inside the home, so what the CLI leaves in it goes with the home: since 2.1.330
            // every session makes `$TMPDIR/cc-socks/<pid>.sock` and a killed one leaves it.
            ("TMPDIR".to_owned(), s(&self.home.join("tmp"))),
        ];
        if let Some(proxy) = &self.proxy_url {
            for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
                env.push((name.to_owned(), proxy.clone()));
            }
            for name in ["NO_PROXY", "no_proxy"] {
                env.push((name.to_owned(), "127.0.0.1,localhost".to_owned()));
            }
        }
        env
    }

    /// A `std::process::Command` for `program` with [`ClaudeHome::env`] (and nothing else)
    /// and the project directory as cwd; for non-interactive runs such as `claude -p`.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear().envs(self.env()).current_dir(&self.project_dir);
        cmd
    }

    /// Keeps the directory on disk after drop (for debugging) and returns its path.
    pub fn persist(self) -> PathBuf {
        self.tmp.keep()
    }
}

fn project_entry() -> Value {
    json!({
        "allowedTools": [],
        "hasTrustDialogAccepted": true,
        "hasCompletedProjectOnboarding": true,
        "projectOnboardingSeenCount": 1,
        "hasClaudeMdExternalIncludesApproved": false,
        "hasClaudeMdExternalIncludesWarningShown": false,
    })
}
