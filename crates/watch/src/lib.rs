//! Watching Claude Code sessions (SPEC W1–W9): everything that reads them from disk and
//! keeps the roster current.
//!
//! Data flows one way: file bytes → records → session facts → store → events.
//!
//! - [`scan`] finds transcripts and indexes them in parallel (a first roster from both ends
//!   of every file, then the full read); [`watcher`] follows changes with `notify`;
//!   [`tail`] reads each file incrementally from a remembered offset.
//! - [`store`] holds every session and emits `discovered` / `updated` / `removed`;
//!   [`engine`] is the async driver (one actor task) and the handle to it.
//! - What the store reads besides transcripts: [`registry`] (Claude Code's live process
//!   registry), [`background`] (its background service's jobs and roster), [`spool`] (the hook events `mimesis hook` recorded), [`cwd_files`]
//!   (markers and status files), [`permission_files`] (settings files' permission rules),
//!   [`git`] (a cwd's repository root).
//! - [`timeline_view`]: timelines read from transcript files, live.
//! - [`spend`]: every transcript's usage read once for a cost report (`mimesis cost`).
//!
//! Layer: above `mimesis-core` (the types and rules: parsing, facts, the status state
//! machine, chains, attention) and `mimesis-os`. It never names the fleet database: it
//! persists through [`mimesis_core::persist::SessionArchive`]; and it knows nothing of
//! supervision but the `supervision` field of a row that the wiring sets.

pub mod background;
pub mod cwd_files;
pub mod disk;
pub mod engine;
pub mod git;
pub mod parse;
pub mod permission_files;
pub mod registry;
pub mod scan;
pub mod spend;
pub mod spool;
pub mod store;
pub mod tail;
pub mod timeline_view;
pub mod watcher;

pub use engine::{Engine, EngineConfig, EngineError, Envelope, PollState, Snapshot, TimelinePage, TimelineUpdate};
