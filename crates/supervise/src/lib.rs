//! Supervised PTY sessions (SPEC P1–P14): Mimesis runs the agent in a pseudo-terminal and
//! keeps it alive through crashes, memory bloat, long runs and idleness.
//!
//! - [`limits`]: every interval and threshold, with the spec's defaults and validation.
//! - [`policy`]: the pure per-session state machine, (state, input, now) -> effects.
//! - [`fleet`]: the pure fleet-wide rules: the live-session cap (LRU), disk, orphans.
//! - [`event`]: the supervision events and the seeds' wording.
//! - [`ledger`]: the processes started, in the fleet database, for cleaning up after a
//!   crash of Mimesis; [`metrics`]: each supervisor's published metrics (P14).
//! - [`supervisor`]: the handle, the per-session actors and the fleet task.

mod actor;
pub mod event;
pub mod fleet;
pub mod flow;
pub mod ledger;
pub mod limits;
pub mod metrics;
pub mod monitor;
pub mod policy;
pub mod supervisor;
pub mod view;

pub use actor::Attachment;
pub use event::{EventKind, ReadyStatus, SupervisionEvent};
pub use limits::{FieldError, Limits, LimitsEnv, SuspendMode, parse_duration};
pub use policy::{AgentKind, Mode, SupervisionState, TerminatedReason};
pub use supervisor::{AgentCommand, Supervisor, SupervisorConfig, SupervisorError, new_session_id};
pub use view::{Metrics, ResourceRow, Resources, Supervision};
