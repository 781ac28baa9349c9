//! The pure core of Mimesis: the types and the rules, with no I/O. Everything here is a
//! function of its inputs and an injected clock, so it is tested with instants and
//! bytes, never with sleeps, files or processes.
//!
//! Layer: the bottom. Nothing here may depend on tokio, notify, rusqlite, portable-pty,
//! vt100 or libc (tests/layers.rs checks it); every other Mimesis crate depends on this
//! one. Modules, roughly in the order data flows through them:
//!
//! - [`clock`]: wall-clock [`Timestamp`]s, monotonic [`Mono`] instants, the injectable
//!   [`Clock`]; [`ids`]: validated session ids; [`text`]: one-line text for a roster.
//! - [`claude`]: Claude Code's formats in one place: [`layout`] (where it keeps things in a
//!   config root), [`transcript`], [`registry`], [`hook_event`], [`dialog`], [`job`] and
//!   [`daemon`], each also at its old path here.
//! - [`transcript`]: one JSONL record, parsed leniently; [`json`]: the depth guard every
//!   parse of outside JSON goes through; [`facts`]: records folded into what the roster
//!   needs; [`timeline`]: the itemised history of one session.
//! - [`status`]: the status state machine; [`permissions`]: "would this tool call ask?";
//!   [`registry`]: Claude Code's live process registry; [`hook_event`]: what a hook
//!   tells; [`cwd_files`]: compaction markers and status files; [`job`] and [`daemon`]:
//!   Claude Code's background service (its jobs, the roster of its running sessions).
//! - [`session`]: the roster row ([`TrackedSession`]), its typed patch and the store
//!   events; [`chain`]: work chains; [`attention`]: who needs the user and when to say so.
//! - [`pricing`]: LiteLLM's prices of Anthropic's models, vendored; [`spend`]: requests
//!   counted once across files and summed into cost reports by day, session, model….
//! - [`settings`]: Mimesis's settings document and its validation; [`persist`]: what
//!   the engine and the fleet database exchange.
//! - [`supervision`]: the per-session and fleet policies of supervised PTY sessions, their
//!   limits, events and wording; [`trim`]: when a process gives memory back after use.

pub mod answering;
pub mod approval;
pub mod attention;
pub mod chain;
pub mod claude;
pub mod clock;
pub mod cwd_files;
pub mod facts;
pub mod focus;
pub mod ids;
pub mod json;
pub mod links;
pub mod permissions;
pub mod persist;
pub mod pricing;
pub mod remote;
pub mod search;
pub mod session;
pub mod settings;
pub mod spend;
pub mod status;
pub mod supervision;
pub mod text;
pub mod timeline;
pub mod trim;
#[cfg(feature = "ts")]
mod ts;

// Claude Code's formats live in `claude`; their old paths stay for the crates above.
pub use claude::{daemon, dialog, hook_event, job, layout, registry, transcript};

pub use clock::{Clock, ManualClock, Mono, Now, SystemClock, Timestamp};
pub use ids::SessionId;
pub use session::{PendingTool, SessionPatch, Source, StoreEvent, TrackedSession, Usage};
pub use status::{Status, Timeouts};
pub use timeline::TimelineItem;
