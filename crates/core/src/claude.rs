//! Claude Code's formats, in one place: what it writes and Mimesis reads, each as types
//! that tolerate unknown fields and variants. Another agent's formats would sit beside
//! this module, with the rest of the core unchanged.
//!
//! - [`transcript`]: the records of a transcript (`<root>/projects/<cwd>/<id>.jsonl`), read
//!   once into typed records for the roster, cost reports and the timeline alike.
//! - [`layout`]: where things are inside a config root.
//! - [`registry`]: the live process registry (`<root>/sessions/<pid>.json`).
//! - [`hook_event`]: what a hook is told, as the spool keeps it.
//! - [`dialog`]: the dialogs on its screen, and the keys that answer them.
//! - [`daemon`], [`job`]: the background service's files (2.1.332).

pub mod daemon;
pub mod dialog;
pub mod hook_event;
pub mod job;
pub mod layout;
pub mod registry;
pub mod transcript;
