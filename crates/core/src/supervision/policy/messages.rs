//! What goes in and out of a session's policy: the [`Input`]s the driver feeds it, the
//! [`Effect`]s it asks for, and the words they are made of.

use super::StopSignal;
use crate::clock::Timestamp;
use crate::ids::SessionId;
use crate::status::{HookSignal, RegistryState, Status};
use crate::supervision::activity::Activity;
use crate::supervision::event::SupervisionEvent;
use crate::supervision::limits::Limits;

/// What the output monitor saw on the terminal screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScreenSignal {
    /// The screen's activity changed (level).
    Activity(Activity),
    /// A new "✻ Baked for 3s" line: a turn finished (edge).
    TurnDone,
    /// A crash pattern appeared (edge).
    Crash,
    /// The harness is gone and a bare shell prompt is left (edge).
    HarnessDead,
    /// `No conversation found with session ID: …` (edge).
    ResumeRejected,
}

/// How a process is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// `--session-id <id>`.
    Fresh,
    /// `--resume <id>`.
    Resume,
    /// `-p --resume <id> <prompt>` (one-shot mode).
    OneShot { prompt: String },
}

/// Signals sent to the session's process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sig {
    Term,
    Kill,
    Stop,
    Cont,
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Start the agent. Answer with [`Input::Spawned`] or [`Input::SpawnFailed`].
    Spawn {
        generation: u64,
        session_id: SessionId,
        launch: Launch,
    },
    /// Bytes to the PTY.
    Write(Vec<u8>),
    /// Type a line into the TUI: the text, then Enter once the TUI has taken the text (a
    /// TUI takes text and Enter arriving in one read as a paste, and would not submit it).
    TypeLine(Vec<u8>),
    /// Show bytes to attached terminals without sending them to the agent (one-shot echo).
    Echo(Vec<u8>),
    Signal(Sig),
    Emit(SupervisionEvent),
    /// Measure the process tree's RSS; answer with [`Input::Rss`].
    MeasureRss,
    /// Check the process is alive; answer with [`Input::Health`].
    CheckHealth,
    /// Remove the shell snapshots the killed process left behind (P9).
    DeleteShellSnapshots,
    /// Record the session as corrupted (EC-007) before starting a fresh one.
    ArchiveCorrupted {
        session_id: SessionId,
    },
    /// The session now goes by another id (EC-007 fresh start).
    Renamed {
        from: SessionId,
        to: SessionId,
    },
    /// Nothing more will happen: deleted, or stopped for shutdown.
    Finished,
}

/// Something that happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Spawned {
        generation: u64,
        pid: u32,
    },
    SpawnFailed {
        generation: u64,
        error: String,
    },
    /// The process is gone. `code` is its exit code, 128 + the signal when killed.
    /// `last_line` is the last non-empty screen line, for the error message.
    Exited {
        generation: u64,
        code: i32,
        last_line: Option<String>,
    },
    /// Output arrived.
    Output {
        generation: u64,
    },
    Screen {
        generation: u64,
        signal: ScreenSignal,
    },
    /// What the agent's own records say of it (the registry, hooks, transcript).
    Agent(AgentReport),
    /// RSS of the process tree, after [`Effect::MeasureRss`].
    Rss {
        generation: u64,
        bytes: u64,
    },
    /// After [`Effect::CheckHealth`].
    Health {
        generation: u64,
        alive: bool,
    },
    /// The config root's disk is full (P10): restart like for memory.
    DiskFull,
    /// The fleet is over its live-session cap and chose this session (P7).
    Suspend,
    Stop,
    Resume,
    Restart,
    Delete,
    /// Mimesis quits (P12): stop quietly, resumable.
    Shutdown,
    /// The supervisor was told to stop by a signal: stop, and say so.
    Signalled(StopSignal),
    /// The limits changed (the settings view): future checks use the new ones.
    Limits(Box<Limits>),
    /// Re-evaluate timers.
    Tick,
    /// Issue 36: what the session has spent so far (US dollars, its transcript's cost).
    Spend(f64),
    /// This session's own budget (`--budget-usd`, or raised by the user); `None`: the
    /// settings' `budgetUsd`.
    Budget(Option<f64>),
    /// The fleet's daily budget is reached (its spend and limit), or no longer.
    FleetBudget(Option<(f64, f64)>),
}

/// What the agent's own records say of it, for supervision (the wiring reads them from the
/// engine's roster), most exact first. The screen comes after all of these: a TUI redesign
/// must not break supervision.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AgentReport {
    /// The session's live registry entry (`sessions/<pid>.json`): the PID that wrote it and
    /// what it says. Only an entry of the supervised process itself counts.
    pub registry: Option<(u32, RegistryState)>,
    /// The newest hook event for the session.
    pub hook: Option<HookSignal>,
    /// When the newest transcript record was written (its own timestamp).
    pub last_record: Option<Timestamp>,
    /// The roster's status: all of the above plus time-based inference; the fallback.
    pub status: Status,
}

impl AgentReport {
    /// A report with only the roster's status.
    pub fn status(status: Status) -> AgentReport {
        AgentReport { status, ..AgentReport::default() }
    }
}

/// What happened to a piece of user input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Written,
    /// Kept until the session is back (P2).
    Queued,
    /// No process will ever take it unless the user resumes the session.
    Refused,
}
