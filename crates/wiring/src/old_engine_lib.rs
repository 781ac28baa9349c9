//! The Mimesis engine: everything that knows about Claude Code sessions, with no UI.
//!
//! Data flows one way: file bytes → records → session facts → store → events.
//!
//! - [`roots`]: where sessions live (config roots, Mimesis's data dir).
//! - [`scan`] finds transcripts and indexes them in parallel; [`watch`] follows changes
//!   with `notify`; [`tail`] reads each file incrementally from a remembered offset.
//! - [`transcript`] parses one JSONL record leniently; [`facts`] folds records into what
//!   the roster needs; [`timeline`] builds the full, itemised history of one session.
//! - [`status`] is the state machine (a pure function of facts, signals and `now`);
//!   [`permissions`] answers "would this tool call ask?" from settings files;
//!   [`registry`] reads Claude Code's live process registry; [`procs`] the process table.
//! - [`store`] holds every session and emits `discovered` / `updated` / `removed`;
//!   [`engine`] is the async driver (one actor task) and the handle to it.
//! - [`supervise`] runs sessions in PTYs and keeps them alive (SPEC P1–P14): a pure
//!   policy per session and for the fleet, the output monitor on a `vt100` screen, the
//!   per-session actor that owns the process, the ledger of processes, and the
//!   [`supervise::Supervisor`] handle the faces use.
//! - [`clock`] is the injectable clock every timeout reads; [`ids`] validates ids.
//! - [`chain`] links sessions into work chains (pure matching); [`cwd_files`] reads the
//!   compaction markers and status files in `<cwd>/.claude/`; [`hooks`] is what
//!   `mimesis hook` records and how hooks are installed into Claude Code's settings.
//! - [`db`] is the fleet database (sessions, reading positions, chains, supervised
//!   processes, settings); [`settings`] the settings document and its validation.
//! - [`attention`] decides desktop notifications and which sessions need the user;
//!   [`doctor`] checks an installation.
//! - [`demo`] writes generated live sessions for newcomers (SPEC X2).
//!
//! Nothing here depends on a windowing toolkit: the CLI and the desktop app are thin
//! faces on this crate.

pub mod attention;
pub mod chain;
pub mod clock;
pub mod cwd_files;
pub mod db;
pub mod demo;
pub mod doctor;
pub mod engine;
pub mod facts;
pub mod git;
pub mod hooks;
pub mod ids;
pub mod permissions;
pub mod procs;
pub mod registry;
pub mod roots;
pub mod scan;
pub mod session;
pub mod settings;
pub mod status;
pub mod store;
pub mod supervise;
pub mod tail;
pub mod timeline;
pub mod transcript;
pub mod watch;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use engine::{Engine, EngineConfig, EngineError, Envelope, Snapshot, TimelinePage, TimelineUpdate};
pub use ids::SessionId;
pub use session::{PendingTool, Source, TrackedSession, Usage};
pub use status::{Status, Timeouts};
pub use store::StoreEvent;
pub use timeline::TimelineItem;
