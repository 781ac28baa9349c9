//! Supervised PTY sessions (SPEC P1–P14): Mimesis runs the agent in a pseudo-terminal and
//! keeps it alive through crashes, memory bloat, long runs and idleness. This crate is the
//! driver; the rules it carries out are `mimesis_core::supervision` (a pure policy per
//! session and for the fleet, the limits, the events and their wording).
//!
//! - [`supervisor`]: the [`Supervisor`] handle the faces use, and the fleet task (the
//!   live-session cap, disk, the orphan scan, the ledger, the metrics).
//! - `actor`: one tokio task per session that owns the PTY and the agent's process group
//!   and carries out the policy's effects; `process`: the agent's process in its
//!   pseudo-terminal behind a trait (the real one, or a test's fake); [`monitor`]: the
//!   terminal-screen model (`vt100`) and the signals read from it.
//! - [`cleanup`]: what earlier, dead Mimesis processes left running is killed at start.
//! - [`metrics`]: each supervisor's metrics, published for `mimesis metrics` (P14).
//! - [`plain`]: a terminal shown but not supervised (a session supervised on another machine).
//!
//! Layer: above `mimesis-core` and `mimesis-os`. It does not know the engine: the wiring
//! shows each session's supervision in the roster through [`Roster`] and feeds what the
//! agent's own records say (registry, hooks, transcript) in through
//! [`Supervisor::agent_report`].

mod actor;
pub mod cleanup;
mod host;
pub mod metrics;
pub mod monitor;
pub mod plain;
mod process;
pub mod supervisor;
#[cfg(test)]
mod test_ledger;

pub use actor::Attachment;
pub use process::{StartError, TerminalError};
pub use supervisor::{Roster, Supervisor, SupervisorConfig, SupervisorError, new_session_id};
