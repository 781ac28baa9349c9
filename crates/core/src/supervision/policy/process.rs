//! The process of one session (one at a time, each with its generation) and how it is
//! stopped: `/exit` once the output settled, Esc, Ctrl-C, then SIGTERM and SIGKILL, each
//! step on its own deadline. Pure: [`plan_stop`] and [`Proc::escalate`] say what to send.

use std::time::Duration;

use super::{Effect, Launch, SessionPolicy, Sig};
use crate::clock::Mono;
use crate::supervision::budget::Scope;
use crate::supervision::event::{EventKind, wording};
use crate::supervision::view::{SupervisionState, TerminatedReason};

/// How long an interrupted turn has to wind down (write its interruption) before SIGTERM.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(1);
/// `/exit` is typed only once the agent's output has been quiet this long: Claude Code
/// writes a turn to its transcript a moment (~0.2 s) after the screen shows it, and an
/// `/exit` typed in between loses the turn (the resume then finds less, or nothing: EC-007).
pub const EXIT_SETTLE: Duration = Duration::from_secs(2);

/// A signal that told the supervisor itself to stop (`mimesis run` got it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    Term,
    Int,
    Hup,
}

impl StopSignal {
    /// Its name, as the operating system's documentation spells it.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Int => "SIGINT",
            StopSignal::Hup => "SIGHUP",
        }
    }

    /// Its number: a program it stopped exits with 128 + this.
    pub fn number(self) -> u8 {
        match self {
            StopSignal::Term => 15,
            StopSignal::Int => 2,
            StopSignal::Hup => 1,
        }
    }
}

impl std::fmt::Display for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RestartReason {
    Memory,
    Disk,
    User,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SuspendCause {
    Idle,
    Cap,
    Budget(Scope),
}

/// Why a process is being stopped, and so what happens once it is gone.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum StopWhy {
    Recover,
    Restart(RestartReason),
    Suspend(SuspendCause),
    Duration { incomplete: bool },
    User,
    Shutdown,
    Signal(StopSignal),
    Delete,
}

impl StopWhy {
    /// A later, weightier reason replaces an earlier one (a delete during a suspension).
    pub(super) fn weight(&self) -> u8 {
        match self {
            StopWhy::Recover | StopWhy::Restart(_) | StopWhy::Suspend(_) => 0,
            StopWhy::Duration { .. } => 1,
            StopWhy::User => 2,
            StopWhy::Shutdown | StopWhy::Signal(_) => 3,
            StopWhy::Delete => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StopHow {
    /// `/exit` once the output settled ([`EXIT_SETTLE`]), then SIGTERM after `killAfter`,
    /// then SIGKILL.
    Graceful,
    /// Esc (the TUI's interrupt), SIGTERM a moment later, then SIGKILL (EC-003).
    Interrupt,
    /// Ctrl-C and SIGTERM at once, SIGKILL after `killAfter`.
    Forced,
    /// SIGTERM, SIGKILL after `killAfter`.
    Term,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// A graceful stop waits for the output to settle before `/exit` (see [`EXIT_SETTLE`]).
    Settling,
    ExitTyped,
    Termed,
    Killed,
}

/// What a spawn is for: decides what is announced when it comes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    Initial,
    Recovery,
    Restart(RestartReason),
    /// EC-007: a fresh session replacing a corrupted one.
    Fresh,
    ResumeSuspended,
    ResumeByUser,
    OneShot,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Proc {
    None,
    Starting {
        generation: u64,
        pid: Option<u32>,
        since: Mono,
        launch: Launch,
        purpose: Purpose,
    },
    Live {
        generation: u64,
        pid: u32,
        since: Mono,
        purpose: Purpose,
        /// Started with `--resume`: a refusal can still show up (EC-007).
        resumed: bool,
    },
    Stopping {
        generation: u64,
        pid: Option<u32>,
        since: Mono,
        why: StopWhy,
        stage: Stage,
        next_at: Option<Mono>,
    },
}

impl Proc {
    pub(super) fn generation(&self) -> Option<u64> {
        match self {
            Proc::None => None,
            Proc::Starting { generation, .. } | Proc::Live { generation, .. } | Proc::Stopping { generation, .. } => {
                Some(*generation)
            }
        }
    }

    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Proc::Starting { pid, .. } | Proc::Stopping { pid, .. } => *pid,
            Proc::Live { pid, .. } => Some(*pid),
            Proc::None => None,
        }
    }

    /// The next step of a stop whose deadline passed at `now`: what to send.
    pub(super) fn escalate(&mut self, now: Mono, kill_after: Duration) -> Option<Effect> {
        let Proc::Stopping { stage, next_at, pid: Some(_), .. } = self else { return None };
        if !next_at.is_some_and(|t| t <= now) {
            return None;
        }
        let (next, at, effect) = match stage {
            Stage::Settling => (Stage::ExitTyped, Some(now.plus(kill_after)), Some(Effect::TypeLine("/exit".into()))),
            Stage::ExitTyped => (Stage::Termed, Some(now.plus(kill_after)), Some(Effect::Signal(Sig::Term))),
            Stage::Termed => (Stage::Killed, None, Some(Effect::Signal(Sig::Kill))),
            Stage::Killed => (Stage::Killed, None, None),
        };
        *stage = next;
        *next_at = at;
        effect
    }
}

/// How a stop begins: its first stage, what to send now, and when the next step is due.
/// `pid` is None while the spawn has not come back (the signal goes out when it does);
/// `settled` is when the output will have been quiet for [`EXIT_SETTLE`].
pub(super) fn plan_stop(
    how: StopHow,
    pid: Option<u32>,
    now: Mono,
    settled: Mono,
    kill_after: Duration,
) -> (Stage, Vec<Effect>, Mono) {
    let (stage, effects) = match (how, pid) {
        (_, None) => (Stage::Termed, vec![]),
        (StopHow::Graceful, _) if settled > now => (Stage::Settling, vec![]),
        (StopHow::Graceful, _) => (Stage::ExitTyped, vec![Effect::TypeLine("/exit".into())]),
        (StopHow::Interrupt, _) => (Stage::ExitTyped, vec![Effect::Write(vec![0x1b])]),
        (StopHow::Forced, _) => (Stage::Termed, vec![Effect::Write(vec![0x03]), Effect::Signal(Sig::Term)]),
        (StopHow::Term, _) => (Stage::Termed, vec![Effect::Signal(Sig::Term)]),
    };
    let next_at = match (stage, how) {
        (Stage::Settling, _) => settled,
        (_, StopHow::Interrupt) => now.plus(kill_after.min(INTERRUPT_GRACE)),
        _ => now.plus(kill_after),
    };
    (stage, effects, next_at)
}

impl SessionPolicy {
    pub(super) fn begin_stop(&mut self, why: StopWhy, how: StopHow) {
        self.idle.disarm();
        // A stop after a pending Retry (the user's Stop, a limit) is the later word.
        self.retry_after_one_shot = false;
        let (generation, pid, since) = match &mut self.proc {
            Proc::None => return self.after_stop(why),
            Proc::Stopping { why: current, .. } => {
                if why.weight() > current.weight() {
                    *current = why;
                }
                return;
            }
            Proc::Starting { generation, pid, since, .. } => (*generation, *pid, *since),
            Proc::Live { generation, pid, since, .. } => (*generation, Some(*pid), *since),
        };
        if self.frozen {
            // A stopped process would hold SIGTERM until continued.
            self.out.push(Effect::Signal(Sig::Cont));
            self.frozen = false;
        }
        let settled = self.last_output.plus(EXIT_SETTLE);
        let (stage, effects, next_at) = plan_stop(how, pid, self.now, settled, self.limits.kill_after);
        self.out.extend(effects);
        self.proc = Proc::Stopping { generation, pid, since, why, stage, next_at: Some(next_at) };
    }

    /// The process is gone after a stop we asked for.
    pub(super) fn after_stop(&mut self, why: StopWhy) {
        match why {
            StopWhy::Recover => {
                self.state = SupervisionState::Recovering;
                self.spawn(Launch::Resume, Purpose::Recovery);
            }
            StopWhy::Restart(reason) => {
                if reason != RestartReason::User {
                    self.out.push(Effect::DeleteShellSnapshots);
                }
                self.state = SupervisionState::Recovering;
                self.spawn(Launch::Resume, Purpose::Restart(reason));
            }
            StopWhy::Suspend(cause) => {
                self.state = SupervisionState::Suspended;
                self.idle.suspended(self.now);
                self.announce_suspended(cause);
                if !self.input.queue.is_empty() && !self.budget_holds() {
                    // A message arrived while it was stopping: come straight back.
                    self.resume_from_suspension();
                }
            }
            StopWhy::Duration { incomplete } => {
                self.terminate(TerminatedReason::DurationLimit);
                let message = if incomplete {
                    wording::DURATION_ENDED_INCOMPLETE.to_owned()
                } else {
                    wording::duration_ended(self.limits.max_duration)
                };
                self.terminated("duration_limit", message);
            }
            StopWhy::User => {
                self.terminate(TerminatedReason::User);
                self.terminated("user", wording::STOPPED_BY_USER.into());
            }
            StopWhy::Shutdown => {
                self.terminate(TerminatedReason::Shutdown);
                self.out.push(Effect::Finished);
            }
            StopWhy::Signal(name) => {
                // The last word of a `mimesis run` that was told to stop.
                self.terminate(TerminatedReason::Signal);
                self.terminated("signal", wording::signalled(name.name(), &self.id));
                self.out.push(Effect::Finished);
            }
            StopWhy::Delete => {
                self.terminate(TerminatedReason::Deleted);
                self.out.push(Effect::Finished);
            }
        }
    }

    fn terminated(&mut self, reason: &str, message: String) {
        let resume_session_id = self.id.clone();
        self.emit(EventKind::SessionTerminated { reason: reason.into(), message, resume_session_id });
    }

    pub(super) fn stop(&mut self, why: StopWhy) {
        self.cancel_timers();
        self.crash.pending = false;
        self.input.clear();
        self.begin_stop(why, StopHow::Term);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Mono {
        Mono::from_millis(n)
    }

    const KILL: Duration = Duration::from_secs(5);

    #[test]
    fn a_graceful_stop_waits_for_the_output_to_settle_then_types_exit() {
        let (stage, effects, next) = plan_stop(StopHow::Graceful, Some(1), ms(1_000), ms(2_500), KILL);
        assert_eq!((stage, effects, next), (Stage::Settling, vec![], ms(2_500)));
        let (stage, effects, next) = plan_stop(StopHow::Graceful, Some(1), ms(3_000), ms(2_500), KILL);
        assert_eq!((stage, effects, next), (Stage::ExitTyped, vec![Effect::TypeLine("/exit".into())], ms(8_000)));
    }

    #[test]
    fn an_interrupt_gives_the_turn_a_second_and_a_forced_stop_signals_at_once() {
        let (stage, effects, next) = plan_stop(StopHow::Interrupt, Some(1), ms(0), ms(0), KILL);
        assert_eq!((stage, effects, next), (Stage::ExitTyped, vec![Effect::Write(vec![0x1b])], ms(1_000)));
        let (stage, effects, _) = plan_stop(StopHow::Forced, Some(1), ms(0), ms(0), KILL);
        assert_eq!((stage, effects), (Stage::Termed, vec![Effect::Write(vec![0x03]), Effect::Signal(Sig::Term)]));
        let (stage, effects, _) = plan_stop(StopHow::Forced, None, ms(0), ms(0), KILL);
        assert_eq!((stage, effects), (Stage::Termed, vec![]), "nothing to signal before the spawn is back");
    }

    #[test]
    fn an_overdue_stop_escalates_from_exit_to_term_to_kill_one_step_per_deadline() {
        let (stage, _, next_at) = plan_stop(StopHow::Graceful, Some(7), ms(0), ms(2_000), KILL);
        let mut p = Proc::Stopping {
            generation: 1,
            pid: Some(7),
            since: ms(0),
            why: StopWhy::User,
            stage,
            next_at: Some(next_at),
        };
        assert_eq!(p.escalate(ms(1_999), KILL), None, "not due yet");
        assert_eq!(p.escalate(ms(2_000), KILL), Some(Effect::TypeLine("/exit".into())));
        assert_eq!(p.escalate(ms(2_001), KILL), None);
        assert_eq!(p.escalate(ms(7_000), KILL), Some(Effect::Signal(Sig::Term)));
        assert_eq!(p.escalate(ms(12_000), KILL), Some(Effect::Signal(Sig::Kill)));
        assert_eq!(p.escalate(ms(99_000), KILL), None, "nothing after SIGKILL");
    }

    #[test]
    fn a_later_weightier_reason_wins() {
        assert!(StopWhy::Delete.weight() > StopWhy::Suspend(SuspendCause::Idle).weight());
        assert!(StopWhy::Shutdown.weight() > StopWhy::User.weight());
        assert!(StopWhy::User.weight() > StopWhy::Duration { incomplete: false }.weight());
    }
}
