//! The rules of supervised PTY sessions (SPEC P1–P14), as pure state machines and data.
//! The driver that owns processes, PTYs and timers is `mimesis-supervise`.
//!
//! - [`policy`]: the per-session state machine, (state, input, now) → (state, effects).
//! - [`fleet`]: the fleet-wide rules: the live-session cap (LRU), disk, orphans, PID reuse.
//! - [`limits`]: every interval and threshold, with the spec's defaults and validation;
//!   [`limit_clock`]: the duration limit and the restart start limit both policies use.
//! - [`background`]: the limits applied to Claude Code's background sessions (when the
//!   user turns them on), through the service's own verbs.
//! - [`budget`]: the fleet's daily budget and each session's (issue 36).
//! - [`turn_end`]: when a background session is at the end of its turn (status and transcript).
//! - [`event`]: the supervision events and the seeds' wording.
//! - [`view`]: what the faces see (`supervision` of a roster row, resources, metrics).
//! - [`agent`]: the program a session runs.
//! - [`baseline`]: memory restarts against what the agent needs at rest.
//! - [`readiness`]: when an agent whose screen and registry say nothing is up.
//! - [`ledger`]: the records of supervised processes and the seam they are kept through.
//! - [`interrupted`]: the sessions Mimesis's quit or crash interrupted, offered for resume.
//! - [`handover`]: handing supervised sessions to Claude Code's background service at a quit.
//! - [`flow`]: flow control of terminal output towards a slow viewer.
//! - [`keys`]: the pace of keys to the agent's TUI: a typed line's Enter, a dialog's answer.

pub mod activity;
pub mod agent;
pub mod background;
pub mod baseline;
pub mod budget;
pub mod event;
pub mod fleet;
pub mod flow;
pub mod handover;
pub mod interrupted;
pub mod keys;
pub mod ledger;
pub mod limit_clock;
pub mod limits;
pub mod policy;
pub mod readiness;
pub mod turn_end;
pub mod view;

pub use agent::AgentCommand;
pub use event::{EventKind, ReadyStatus, SupervisionEvent};
pub use limits::{
    Effective, FieldError, LimitFlags, Limits, LimitsEnv, Origin, SuspendMode, effective, parse_duration,
};
pub use policy::AgentKind;
pub use view::{Metrics, Mode, ResourceRow, Resources, RestartHold, Supervision, SupervisionState, TerminatedReason};
