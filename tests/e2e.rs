//! Mimesis's end-to-end tests, one module per area (tests/Cargo.toml: why one binary). A
//! test's name is `module::test`: `cargo nextest run -p mimesis-tests -E 'test(/^webview::/)'`,
//! or `cargo test -p mimesis-tests --test e2e webview::`.
//!
//! The test command (`scripts/test`, nextest) runs each test in a process of its own, as the
//! real CLI's and the window's tests expect: `cargo test` runs them as threads of one.

mod answer_dialogs;
mod approvals;
mod bg_fleet;
mod bg_real_cli;
mod budgets;
mod chains_real_cli;
mod cost;
mod engine_real_cli;
mod hostile_files;
mod layers;
mod quit_resume;
mod real_cli;
mod remote;
mod run_cli;
mod search;
mod supervise;
mod supervise_real_cli;
mod terminal;
mod ui_contract;
mod versions;
mod webview;
mod webview_bg;
mod webview_chains;
mod webview_pty;
mod webview_quit;
mod webview_search;
mod webview_trim;
