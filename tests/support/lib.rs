//! Test support for Mimesis: run the real Claude Code CLI in a pseudo-terminal against a
//! scripted mock of the Anthropic API, and observe what it writes.
//!
//! * [`claude`]: the pinned CLI install ([`claude::ensure_claude`]) and an isolated home
//!   ([`claude::ClaudeHome`]).
//! * [`mock_api`]: the scripted Messages API ([`mock_api::MockApi`]).
//! * [`pty`]: a PTY driver with a `vt100` screen model ([`pty::Pty`]).
//! * [`files`]: snapshots of transcripts and `sessions/<pid>.json`
//!   ([`files::FilesSnapshot`]).
//! * [`scenario`]: the interactive scenario as reusable steps ([`scenario::Scenario`]).
//! * [`webdriver`]: the built desktop app driven through its webview (tauri-driver).
//! * [`engine_watch`]: the real Mimesis engine watching a config dir, for assertions.
//! * [`mimesis`]: this workspace's `mimesis` binary (the hook command, the installer).
//! * [`bg`]: Claude Code's own background service (2.1.332: `claude --bg`, `claude agents`,
//!   `attach|logs|stop|respawn|rm`), stopped through its own verb when dropped.
//! * [`bg_budget`]: a background session over a budget, stopped at its turn's end.
//! * [`ccusage`]: ccusage's native binary, what `mimesis cost` is checked against.
//! * [`hooklog`]: a recording hook for every event (the raw payloads and their times).
//! * [`watch_cli`]: that binary on a home of its own, and `mimesis watch --json` read live.
//! * [`x11`]: the app's window asked to close, as its close button does.

pub mod bg;
pub mod bg_budget;
pub mod ccusage;
pub mod claude;
pub mod engine_watch;
pub mod files;
pub mod hooklog;
pub mod mimesis;
pub mod mock_api;
pub mod pty;
pub mod scenario;
pub mod sshd;
pub mod supervised;
pub mod watch_cli;
pub mod webdriver;
pub mod x11;
