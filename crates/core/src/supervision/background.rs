//! Mimesis's limits applied to one of Claude Code's background sessions (issue 33 §4), when
//! the user turns them on (`limits.backgroundSessions`): a pure machine of (state, input,
//! now) → effects, on the monotonic clock. The driver (`mimesis-wiring`) measures, runs the
//! verbs and sends the events; nothing of the service is ever signalled: a memory restart is
//! `claude respawn <id>`, the end of the duration limit `claude stop <id>`.
//!
//! - Memory (P9): the RSS of the worker's process tree over `maxRssMb` → a restart at an idle
//!   moment (after the turn, at most `turnGrace` later; at once at twice the limit), rate
//!   limited like a supervised session's ([`RestartLimit`], back-off); over the limit again
//!   right after one, before any work: held (`memory_baseline`), said once. Work is a turn
//!   the transcript records (its tokens grow) or a working status of the new worker once it
//!   sat at its prompt: not the status the respawn itself flashes (the old worker's last
//!   one, or the service rewriting the job as working while it resumes the session). The
//!   old worker measured while the respawn replaces it says nothing; still measured 30 s
//!   later, the respawn did not happen and the session may be restarted again.
//! - Duration (P8): the same warning at `durationWarnPercent`, the same grace for a turn under
//!   way, then `session_terminated` (`duration_limit`) and the stop. Counted from when the
//!   service started the session.
//! - Crashes: the service restarts a crashed session itself; when its `attempt` grows, a
//!   `crash_detected` and a `session_recovered` event say so.
//!
//! The end of a turn is the status's and the transcript's ([`TurnEnd`]): the service's job
//! says idle a moment before the worker writes the turn's last words, and a stop or a
//! respawn in that moment kills it before it does.

use std::time::Duration;

use crate::clock::Mono;
use crate::ids::SessionId;
use crate::supervision::event::{EventKind, wording};
use crate::supervision::limit_clock::{DurationLimit, DurationVerdict, RestartLimit};
use crate::supervision::limits::Limits;
use crate::supervision::turn_end::{TRANSCRIPT_GRACE, TurnEnd, TurnVerdict};
use crate::supervision::view::RestartHold;

/// What the roster says of the session at an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BgObservation {
    /// The service runs a worker for it.
    pub live: bool,
    /// A turn runs (its status is `working`).
    pub busy: bool,
    /// The service's attempt (1, more after crash restarts).
    pub attempt: Option<u32>,
    /// When the service started it, on the monotonic clock.
    pub started: Mono,
    /// The worker running it (the roster's PTY host `pid`): another one after a respawn.
    pub worker: Option<u32>,
    /// The tokens its transcript records: they grow only when a turn runs.
    pub tokens: u64,
    /// Its transcript shows its words so far written ([`crate::status::turn_written`]).
    pub written: bool,
}

/// What the driver does.
#[derive(Clone, Debug, PartialEq)]
pub enum BgEffect {
    /// Sends this supervision event for the session.
    Emit(EventKind),
    /// Measures the RSS of the worker's process tree and reports it ([`BgLimits::rss`]).
    MeasureRss,
    /// `claude respawn <id>`.
    Respawn,
    /// `claude stop <id>`.
    Stop,
}

/// The limits of one background session.
#[derive(Clone, Debug)]
pub struct BgLimits {
    id: SessionId,
    limits: Limits,
    obs: BgObservation,
    duration: DurationLimit,
    duration_grace_until: Option<Mono>,
    /// Stopped for its duration: nothing more until it runs again.
    ended: bool,
    next_rss_check: Mono,
    restarts: RestartLimit,
    /// A memory restart waits for the turn (or its grace, or the back-off).
    memory_pending: bool,
    memory_grace_until: Option<Mono>,
    /// A memory restart happened and the session has done no work since.
    fresh: Option<SinceRestart>,
    hold: Option<RestartHold>,
    turn: TurnEnd,
    /// Where the turn was when last looked at.
    verdict: TurnVerdict,
}

impl BgLimits {
    pub fn new(id: SessionId, obs: BgObservation, limits: Limits, now: Mono) -> BgLimits {
        BgLimits {
            id,
            next_rss_check: now,
            limits,
            obs,
            duration: DurationLimit::new(now.min(obs.started)),
            duration_grace_until: None,
            ended: false,
            restarts: RestartLimit::default(),
            memory_pending: false,
            memory_grace_until: None,
            fresh: None,
            hold: None,
            turn: TurnEnd::default(),
            verdict: TurnVerdict::Running,
        }
        .with_turn(obs, now)
    }

    fn with_turn(mut self, obs: BgObservation, now: Mono) -> BgLimits {
        self.turn.status(obs.busy, now);
        self.verdict = self.turn.transcript(obs.written, now);
        self
    }

    /// Is the turn over (by the status and the transcript, or the transcript's grace)?
    fn turn_over(&self) -> bool {
        self.verdict.over()
    }

    /// Looks at the turn again: true when it has just ended.
    fn turn_ended(&mut self, verdict: TurnVerdict) -> bool {
        let ended = verdict.over() && !self.verdict.over();
        self.verdict = verdict;
        ended
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// New limits apply to what is ahead; a hold is lifted (the user changed something).
    pub fn set_limits(&mut self, limits: Limits, now: Mono) {
        if limits.max_duration != self.limits.max_duration
            || limits.duration_warn_percent != self.limits.duration_warn_percent
        {
            self.duration = DurationLimit::new(now.min(self.obs.started));
            self.duration_grace_until = None;
        }
        self.limits = limits;
        self.hold = None;
        self.next_rss_check = now;
    }

    /// When [`BgLimits::tick`] has something to do.
    pub fn next_deadline(&self) -> Option<Mono> {
        if !self.obs.live || self.ended {
            return None;
        }
        let waits = self.duration_grace_until.is_some() || self.memory_pending;
        [
            self.duration.due(self.obs.started, &self.limits),
            self.duration_grace_until,
            self.memory_grace_until,
            Some(self.next_rss_check),
            self.turn.deadline().filter(|_| waits),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// What the roster says now.
    pub fn observe(&mut self, obs: BgObservation, now: Mono) -> Vec<BgEffect> {
        let mut out = Vec::new();
        let before = self.obs;
        self.obs = obs;
        if let (Some(a), Some(b)) = (before.attempt, obs.attempt)
            && b > a
        {
            out.push(BgEffect::Emit(EventKind::CrashDetected { deferred: false }));
            out.push(BgEffect::Emit(EventKind::SessionRecovered { message: restarted_by_service(b) }));
        }
        if obs.started > before.started || (obs.live && !before.live && self.ended) {
            // Started again (respawned by the user, after a stop): the limit counts anew.
            self.duration = DurationLimit::new(now.min(obs.started));
            self.duration_grace_until = None;
            self.ended = false;
        }
        if !obs.live {
            self.memory_pending = false;
            self.memory_grace_until = None;
            return out;
        }
        if self.fresh.as_mut().is_some_and(|f| f.worked(&obs)) {
            self.fresh = None;
        }
        self.turn.status(obs.busy, now);
        let verdict = self.turn.transcript(obs.written, now);
        out.extend(self.after_turn(verdict, now));
        out
    }

    /// What waited for the end of the turn goes once it has ended.
    fn after_turn(&mut self, verdict: TurnVerdict, now: Mono) -> Vec<BgEffect> {
        if !self.turn_ended(verdict) {
            return Vec::new();
        }
        if self.duration_grace_until.take().is_some() {
            // Its last words not in the transcript after the grace: the answer may be incomplete.
            self.end_for_duration(verdict == TurnVerdict::Unwritten)
        } else if self.memory_pending {
            // Its last words not in the transcript after the grace: the restart says so.
            self.restart_now(now)
        } else {
            Vec::new()
        }
    }

    /// The RSS of the process tree of `worker` (the roster's PTY host `pid`), measured.
    pub fn rss(&mut self, bytes: u64, worker: Option<u32>, now: Mono) -> Vec<BgEffect> {
        let max = self.limits.max_rss_bytes();
        if !self.obs.live || self.ended || bytes <= max || self.hold.is_some() {
            return Vec::new();
        }
        if let Some(f) = self.fresh {
            if worker.is_none() || worker != f.old {
                // Over the limit again right after a memory restart, before any work: the
                // limit is below what the session needs at rest; restarting cannot help.
                return self.hold_restarts(RestartHold::MemoryBaseline, Some(bytes), now);
            }
            if now < f.asked.plus(RESPAWN_WITHIN) {
                // The worker being replaced: it says nothing of the new one.
                return Vec::new();
            }
            // Still the same worker: the respawn did not happen; restarting may.
            self.fresh = None;
        }
        if !self.memory_pending && self.restarts.exhausted(now, &self.limits) {
            return self.hold_restarts(RestartHold::RateLimit, None, now);
        }
        self.memory_pending = true;
        let force = bytes > max.saturating_mul(2);
        if force || self.turn_over() || self.limits.turn_grace.is_zero() {
            self.restart_now(now)
        } else {
            self.memory_grace_until.get_or_insert(now.plus(self.limits.turn_grace));
            Vec::new()
        }
    }

    /// Whatever fell due at `now`.
    pub fn tick(&mut self, now: Mono) -> Vec<BgEffect> {
        let mut out = Vec::new();
        if !self.obs.live || self.ended {
            return out;
        }
        let verdict = self.turn.verdict(now);
        out.extend(self.after_turn(verdict, now));
        if self.ended {
            return out;
        }
        if self.duration_grace_until.is_some_and(|g| g <= now) {
            self.duration_grace_until = None;
            // The turn did not finish in time: its last answer may be incomplete.
            out.extend(self.end_for_duration(!self.turn_over()));
            return out;
        }
        if self.duration_grace_until.is_none()
            && self.duration.due(self.obs.started, &self.limits).is_some_and(|d| d <= now)
        {
            match self.duration.check(self.obs.started, now, &self.limits) {
                DurationVerdict::Reached if !self.turn_over() && !self.limits.turn_grace.is_zero() => {
                    self.duration_grace_until = Some(now.plus(self.limits.turn_grace));
                }
                DurationVerdict::Reached => return self.end_for_duration(false),
                DurationVerdict::Warn(remaining) => out.push(BgEffect::Emit(EventKind::SessionWarning {
                    reason: "duration".into(),
                    remaining_seconds: Some(remaining.as_secs()),
                    message: wording::duration_warning(remaining),
                })),
                DurationVerdict::Nothing => {}
            }
        }
        if self.memory_grace_until.is_some_and(|g| g <= now) {
            self.memory_grace_until = None;
            out.extend(self.restart_now(now));
        }
        if self.next_rss_check <= now {
            self.next_rss_check = now.plus(self.limits.rss_check.max(Duration::from_secs(1)));
            out.push(BgEffect::MeasureRss);
        }
        out
    }

    fn end_for_duration(&mut self, incomplete: bool) -> Vec<BgEffect> {
        self.ended = true;
        self.memory_pending = false;
        self.memory_grace_until = None;
        let message = if incomplete {
            wording::DURATION_ENDED_INCOMPLETE.to_owned()
        } else {
            wording::duration_ended(self.limits.max_duration)
        };
        vec![
            BgEffect::Emit(EventKind::SessionTerminated {
                reason: "duration_limit".into(),
                message,
                resume_session_id: self.id.clone(),
            }),
            BgEffect::Stop,
        ]
    }

    /// Respawns now, saying what the turn as it stands may lose: nothing once its end is in
    /// the transcript; its last words when they never reached it, or have not yet (the job
    /// idle, the transcript behind); the turn itself when one still runs (forced at twice the
    /// limit, or its grace run out).
    fn restart_now(&mut self, now: Mono) -> Vec<BgEffect> {
        if let Some(at) = self.restarts.backoff_until(now, &self.limits) {
            // Back-off between consecutive restarts: still pending, until then.
            self.memory_grace_until = Some(self.memory_grace_until.map_or(at, |g| g.max(at)));
            return Vec::new();
        }
        if !self.restarts.take(now, &self.limits) {
            return self.hold_restarts(RestartHold::RateLimit, None, now);
        }
        self.memory_pending = false;
        self.memory_grace_until = None;
        self.fresh = Some(SinceRestart { old: self.obs.worker, asked: now, ready: None });
        vec![
            BgEffect::Emit(EventKind::SessionRestarting {
                reason: "memory_limit".into(),
                message: match self.verdict {
                    TurnVerdict::Over => wording::RESTARTING.into(),
                    TurnVerdict::Unwritten => wording::restarting_unwritten(TRANSCRIPT_GRACE),
                    TurnVerdict::Writing { .. } => wording::RESTARTING_UNWRITTEN_YET.into(),
                    TurnVerdict::Running => wording::RESTARTING_MID_TURN.into(),
                },
            }),
            BgEffect::Respawn,
        ]
    }

    fn hold_restarts(&mut self, hold: RestartHold, rss: Option<u64>, now: Mono) -> Vec<BgEffect> {
        self.memory_pending = false;
        self.memory_grace_until = None;
        if self.hold == Some(hold) {
            return Vec::new();
        }
        self.hold = Some(hold);
        let message = match hold {
            RestartHold::MemoryBaseline => {
                wording::memory_below_baseline(self.limits.max_rss_mb, rss.unwrap_or(0) / (1024 * 1024))
            }
            RestartHold::RateLimit => {
                wording::restart_limit(self.restarts.recent(now, &self.limits), self.limits.restart_limit_window)
            }
        };
        vec![BgEffect::Emit(EventKind::SessionWarning {
            reason: "restart_limit".into(),
            remaining_seconds: None,
            message,
        })]
    }
}

/// `claude respawn` replaces the worker in 2.1–4.1 s (docs/claude-code-observed.md): the old
/// worker still measured this long after means it did not.
const RESPAWN_WITHIN: Duration = Duration::from_secs(30);

/// What a memory restart left, to tell the session's next work from the respawn's own
/// moves: the old worker may still say it works (and its last turn's tokens may be read
/// late), and the service rewrites the job as working while it resumes the session,
/// before the new worker sits at its prompt. Work is what the new worker does from there.
#[derive(Copy, Clone, Debug)]
struct SinceRestart {
    /// The worker restarted, and when the respawn was asked for.
    old: Option<u32>,
    asked: Mono,
    /// A new worker seen at its prompt, and the transcript's tokens then.
    ready: Option<(u32, u64)>,
}

impl SinceRestart {
    /// Did the session work, seen `obs`?
    fn worked(&mut self, obs: &BgObservation) -> bool {
        let Some(worker) = obs.worker.filter(|w| obs.live && Some(*w) != self.old) else { return false };
        match self.ready {
            Some((ready, tokens)) if ready == worker => obs.busy || obs.tokens > tokens,
            _ => {
                if !obs.busy {
                    self.ready = Some((worker, obs.tokens));
                }
                false
            }
        }
    }
}

/// What the crash event says when the service restarted a session.
pub fn restarted_by_service(attempt: u32) -> String {
    format!(
        "Claude Code's background service restarted the session after its process ended unexpectedly (attempt {attempt})."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    fn at(s: u64) -> Mono {
        Mono::from_millis(s * 1000)
    }

    fn limits() -> Limits {
        Limits {
            max_duration: Duration::from_secs(100),
            duration_warn_percent: 90,
            turn_grace: Duration::from_secs(10),
            max_rss_mb: 100,
            rss_check: Duration::from_secs(5),
            restart_limit_burst: 2,
            restart_limit_window: Duration::from_secs(1000),
            ..Limits::default()
        }
    }

    fn obs(busy: bool) -> BgObservation {
        BgObservation {
            live: true,
            busy,
            attempt: Some(1),
            started: at(0),
            worker: Some(10),
            tokens: 100,
            written: !busy,
        }
    }

    /// What the roster says of the worker `w` whose transcript holds `tokens`.
    fn of(w: u32, busy: bool, tokens: u64) -> BgObservation {
        BgObservation { worker: Some(w), tokens, ..obs(busy) }
    }

    /// The worker of [`obs`], and the one a respawn starts.
    const OLD: Option<u32> = Some(10);
    const NEW: Option<u32> = Some(11);

    fn policy() -> BgLimits {
        BgLimits::new(SessionId::parse("s1").unwrap(), obs(false), limits(), at(0))
    }

    fn kinds(effects: &[BgEffect]) -> Vec<String> {
        effects
            .iter()
            .map(|e| match e {
                BgEffect::Emit(k) => format!("{k:?}").split([' ', '{']).next().unwrap_or_default().to_owned(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn measures_every_rss_check_while_it_runs() {
        let mut p = policy();
        assert_eq!(p.next_deadline(), Some(at(0)));
        assert_eq!(p.tick(at(0)), [BgEffect::MeasureRss]);
        assert_eq!(p.next_deadline(), Some(at(5)));
        assert_eq!(p.tick(at(3)), []);
        p.observe(BgObservation { live: false, ..obs(false) }, at(4));
        assert_eq!(p.next_deadline(), None, "stopped: nothing to measure");
    }

    #[test]
    fn over_the_memory_limit_it_is_respawned_at_an_idle_moment() {
        let mut p = policy();
        p.tick(at(0));
        p.observe(obs(true), at(1));
        assert_eq!(p.rss(150 * MB, OLD, at(2)), [], "a turn runs: it waits");
        assert_eq!(p.next_deadline(), Some(at(5)));
        let out = p.observe(obs(false), at(4));
        assert_eq!(kinds(&out), ["SessionRestarting", "Respawn"]);
        // Over again before any work: the limit is below what it needs at rest. Said once.
        assert_eq!(p.rss(150 * MB, OLD, at(5)), [], "the worker being replaced says nothing");
        let out = p.rss(150 * MB, NEW, at(20));
        assert_eq!(kinds(&out), ["SessionWarning"]);
        let BgEffect::Emit(EventKind::SessionWarning { message, .. }) = &out[0] else { panic!() };
        assert!(message.contains("100 MB"), "{message}");
        assert_eq!(p.rss(150 * MB, NEW, at(30)), []);
    }

    #[test]
    fn a_turn_gets_its_grace_and_twice_the_limit_none() {
        let mut p = policy();
        p.tick(at(0));
        p.observe(obs(true), at(1));
        assert_eq!(p.rss(150 * MB, OLD, at(2)), []);
        assert_eq!(p.next_deadline(), Some(at(5)));
        let out = p.tick(at(12));
        assert_eq!(kinds(&out), ["SessionRestarting", "Respawn", "MeasureRss"]);
        // Either way the respawn cuts the turn that runs, and says so.
        assert_eq!(restarting(&out), wording::RESTARTING_MID_TURN, "its grace run out");
        let mut q = policy();
        q.observe(obs(true), at(1));
        let out = q.rss(201 * MB, OLD, at(2));
        assert_eq!(kinds(&out), ["SessionRestarting", "Respawn"], "forced at twice the limit");
        assert_eq!(restarting(&out), wording::RESTARTING_MID_TURN);
    }

    /// The message of the `SessionRestarting` in `effects`.
    fn restarting(effects: &[BgEffect]) -> &str {
        effects
            .iter()
            .find_map(|e| match e {
                BgEffect::Emit(EventKind::SessionRestarting { message, .. }) => Some(message.as_str()),
                _ => None,
            })
            .expect("a SessionRestarting")
    }

    #[test]
    fn a_forced_restart_says_what_the_turn_as_it_stands_may_lose() {
        // The job idle, its transcript behind: the last words may not be written yet.
        let mut p = policy();
        p.observe(obs(true), at(1));
        p.observe(idle_unwritten(), at(2));
        assert_eq!(restarting(&p.rss(201 * MB, OLD, at(3))), wording::RESTARTING_UNWRITTEN_YET);
        // Its end in the transcript: nothing lost, the plain sentence.
        let mut q = policy();
        q.observe(obs(true), at(1));
        q.observe(obs(false), at(2));
        assert_eq!(restarting(&q.rss(201 * MB, OLD, at(3))), wording::RESTARTING);
        // A turn that runs with no grace at all: cut at once, and said.
        let zero = Limits { turn_grace: Duration::ZERO, ..limits() };
        let mut z = BgLimits::new(SessionId::parse("s1").unwrap(), obs(false), zero, at(0));
        z.observe(obs(true), at(1));
        assert_eq!(restarting(&z.rss(150 * MB, OLD, at(2))), wording::RESTARTING_MID_TURN);
    }

    #[test]
    fn memory_restarts_are_rate_limited_and_backed_off() {
        let mut p = policy();
        assert_eq!(kinds(&p.rss(150 * MB, OLD, at(1))), ["SessionRestarting", "Respawn"]);
        p.observe(of(11, false, 100), at(2)); // the new worker at its prompt
        p.observe(of(11, true, 100), at(2)); // it works: no longer fresh
        p.observe(of(11, false, 120), at(3));
        assert_eq!(p.rss(150 * MB, NEW, at(4)), [], "the back-off: 10 s after the last");
        assert_eq!(kinds(&p.tick(at(11))), ["SessionRestarting", "Respawn", "MeasureRss"]);
        p.observe(of(12, false, 140), at(13)); // the new worker at its prompt
        p.observe(of(12, false, 160), at(13)); // a turn in the transcript: work
        let out = p.rss(150 * MB, Some(12), at(40));
        assert_eq!(kinds(&out), ["SessionWarning"], "two restarts in the window: held");
        let BgEffect::Emit(EventKind::SessionWarning { reason, .. }) = &out[0] else { panic!() };
        assert_eq!(reason, "restart_limit");
        assert_eq!(p.rss(150 * MB, Some(12), at(50)), []);
    }

    #[test]
    fn the_duration_limit_warns_waits_for_the_turn_then_stops() {
        let mut p = policy();
        p.tick(at(0));
        assert_eq!(p.next_deadline(), Some(at(5)));
        for s in (5..90).step_by(5) {
            assert_eq!(kinds(&p.tick(at(s))), ["MeasureRss"], "{s}");
        }
        let out = p.tick(at(90));
        assert_eq!(kinds(&out), ["SessionWarning", "MeasureRss"]);
        let BgEffect::Emit(EventKind::SessionWarning { remaining_seconds, .. }) = &out[0] else { panic!() };
        assert_eq!(*remaining_seconds, Some(10));
        p.observe(obs(true), at(95));
        assert_eq!(kinds(&p.tick(at(100))), ["MeasureRss"], "a turn runs: its grace");
        assert_eq!(p.next_deadline(), Some(at(105)));
        let out = p.observe(obs(false), at(103));
        assert_eq!(kinds(&out), ["SessionTerminated", "Stop"]);
        let BgEffect::Emit(EventKind::SessionTerminated { reason, resume_session_id, .. }) = &out[0] else { panic!() };
        assert_eq!((reason.as_str(), resume_session_id.as_str()), ("duration_limit", "s1"));
        assert_eq!(p.next_deadline(), None);
        assert_eq!(p.rss(500 * MB, OLD, at(104)), [], "ended: nothing more");
        // Respawned by the user later: it counts anew.
        p.observe(BgObservation { live: false, ..obs(false) }, at(110));
        p.observe(BgObservation { started: at(200), ..obs(false) }, at(200));
        assert_eq!(kinds(&p.tick(at(200))), ["MeasureRss"]);
        let warned = (201..=290).find(|s| kinds(&p.tick(at(*s))).contains(&"SessionWarning".to_owned()));
        assert_eq!(warned, Some(290));
    }

    #[test]
    fn a_turn_that_outlasts_its_grace_is_stopped_incomplete() {
        let mut p = policy();
        p.observe(obs(true), at(1));
        p.tick(at(100));
        let out = p.tick(at(110));
        assert_eq!(kinds(&out), ["SessionTerminated", "Stop"]);
        let BgEffect::Emit(EventKind::SessionTerminated { message, .. }) = &out[0] else { panic!() };
        assert_eq!(message, wording::DURATION_ENDED_INCOMPLETE);
    }

    #[test]
    fn a_growing_attempt_is_a_crash_the_service_recovered() {
        let mut p = policy();
        let out = p.observe(BgObservation { attempt: Some(2), ..obs(false) }, at(5));
        assert_eq!(kinds(&out), ["CrashDetected", "SessionRecovered"]);
        let BgEffect::Emit(EventKind::SessionRecovered { message }) = &out[1] else { panic!() };
        assert!(message.contains("attempt 2"), "{message}");
        assert_eq!(p.observe(BgObservation { attempt: Some(2), ..obs(false) }, at(6)), []);
    }

    #[test]
    fn the_respawns_own_working_flash_is_not_work() {
        let mut p = policy();
        assert_eq!(kinds(&p.rss(150 * MB, OLD, at(1))), ["SessionRestarting", "Respawn"]);
        // The old worker's last word, then gone, then the service resuming the session
        // rewrites its job as working before the new worker sits at its prompt.
        p.observe(of(10, true, 100), at(2));
        p.observe(BgObservation { live: false, ..of(10, false, 100) }, at(2));
        p.observe(of(11, true, 100), at(4));
        p.observe(of(11, false, 100), at(5));
        let out = p.rss(150 * MB, NEW, at(20));
        assert_eq!(kinds(&out), ["SessionWarning"], "over again before any work: held, not restarted");
        let BgEffect::Emit(EventKind::SessionWarning { message, .. }) = &out[0] else { panic!() };
        assert!(message.contains("100 MB"), "the memory baseline: {message}");
        assert_eq!(kinds(&p.tick(at(21))), ["MeasureRss"], "no restart pending");
        assert_eq!(p.rss(150 * MB, NEW, at(22)), [], "said once");
    }

    #[test]
    fn the_new_workers_turn_is_work() {
        // Working after the new worker sat at its prompt.
        let mut p = policy();
        p.rss(150 * MB, OLD, at(1));
        p.observe(of(11, true, 100), at(3));
        p.observe(of(11, false, 100), at(4));
        p.observe(of(11, true, 100), at(20));
        p.observe(of(11, false, 100), at(25));
        assert_eq!(kinds(&p.rss(150 * MB, NEW, at(30))), ["SessionRestarting", "Respawn"], "worked: restarted again");
        // A turn the transcript records, the status never seen working (between two looks).
        let mut q = policy();
        q.rss(150 * MB, OLD, at(1));
        q.observe(of(11, false, 100), at(3));
        q.observe(of(11, false, 180), at(20));
        assert_eq!(kinds(&q.rss(150 * MB, NEW, at(30))), ["SessionRestarting", "Respawn"]);
        // The old worker working again (the respawn not done yet) is not the new one's work.
        let mut r = policy();
        r.rss(150 * MB, OLD, at(1));
        r.observe(of(10, false, 100), at(2));
        r.observe(of(10, true, 100), at(3));
        r.observe(of(10, false, 130), at(4)); // its last turn's tokens, read late
        assert_eq!(kinds(&r.rss(150 * MB, NEW, at(30))), ["SessionWarning"]);
    }

    #[test]
    fn a_respawn_that_did_not_happen_is_not_a_baseline() {
        let mut p = policy();
        assert_eq!(kinds(&p.rss(150 * MB, OLD, at(1))), ["SessionRestarting", "Respawn"]);
        assert_eq!(p.rss(150 * MB, OLD, at(2)), [], "the respawn under way");
        assert_eq!(p.rss(150 * MB, OLD, at(30)), []);
        // Still the old worker long after: the respawn failed; restarting again may help.
        assert_eq!(kinds(&p.rss(150 * MB, OLD, at(31))), ["SessionRestarting", "Respawn"]);
        let out = p.rss(150 * MB, OLD, at(61));
        assert_eq!(kinds(&out), ["SessionWarning"], "then the restart limit, said");
        let BgEffect::Emit(EventKind::SessionWarning { message, .. }) = &out[0] else { panic!() };
        assert!(!message.contains("at rest"), "not the baseline: {message}");
    }

    /// Idle by its status (the service's job), its transcript still without the turn's
    /// last words.
    fn idle_unwritten() -> BgObservation {
        BgObservation { written: false, ..obs(false) }
    }

    #[test]
    fn the_duration_limits_stop_waits_for_the_transcript_to_show_the_turns_end() {
        let mut p = policy();
        p.observe(obs(true), at(95));
        p.tick(at(100));
        assert_eq!(p.next_deadline(), Some(at(105)));
        assert_eq!(p.observe(idle_unwritten(), at(102)), [], "the job idle, the transcript mid-turn: it waits");
        assert!(p.tick(at(104)).is_empty(), "its grace runs");
        let out = p.observe(obs(false), at(104));
        assert_eq!(kinds(&out), ["SessionTerminated", "Stop"], "the closing text written");
        let BgEffect::Emit(EventKind::SessionTerminated { message, .. }) = &out[0] else { panic!() };
        assert_ne!(message, wording::DURATION_ENDED_INCOMPLETE);
        // A transcript that never shows it: the turn's grace ends it, incomplete.
        let mut q = policy();
        q.observe(obs(true), at(95));
        q.tick(at(100));
        q.observe(idle_unwritten(), at(102));
        let out = q.tick(at(110));
        assert_eq!(kinds(&out), ["SessionTerminated", "Stop"]);
        let BgEffect::Emit(EventKind::SessionTerminated { message, .. }) = &out[0] else { panic!() };
        assert_eq!(message, wording::DURATION_ENDED_INCOMPLETE);
    }

    #[test]
    fn a_memory_restart_waits_for_the_transcript_then_its_grace() {
        let mut p = policy();
        p.tick(at(0));
        p.observe(obs(true), at(1));
        assert_eq!(p.rss(150 * MB, OLD, at(2)), []);
        assert_eq!(p.observe(idle_unwritten(), at(3)), [], "the job idle, the transcript mid-turn: it waits");
        assert_eq!(p.rss(150 * MB, OLD, at(4)), [], "still pending");
        let out = p.observe(obs(false), at(5));
        assert_eq!(kinds(&out), ["SessionRestarting", "Respawn"], "the end written");
        let BgEffect::Emit(EventKind::SessionRestarting { message, .. }) = &out[0] else { panic!() };
        assert_eq!(message, wording::RESTARTING);
        // Never shown: after the transcript's grace (10 s), as after the turn's.
        let limits = Limits { turn_grace: Duration::from_secs(600), ..limits() };
        let mut q = BgLimits::new(SessionId::parse("s1").unwrap(), obs(false), limits, at(0));
        q.tick(at(0));
        q.observe(obs(true), at(1));
        assert_eq!(q.rss(150 * MB, OLD, at(2)), []);
        assert_eq!(q.observe(idle_unwritten(), at(3)), []);
        assert_eq!(q.next_deadline(), Some(at(5)), "the next RSS check");
        q.tick(at(5));
        assert_eq!(q.next_deadline(), Some(at(10)));
        assert_eq!(kinds(&q.tick(at(12))), ["MeasureRss"], "the transcript's grace runs");
        assert_eq!(q.next_deadline(), Some(at(13)), "it ends 10 s after the job said idle");
        let out = q.tick(at(13));
        assert_eq!(kinds(&out), ["SessionRestarting", "Respawn"]);
        // Said: its last words may be missing, as a budget's stop says.
        let BgEffect::Emit(EventKind::SessionRestarting { message, reason }) = &out[0] else { panic!() };
        assert_eq!(reason, "memory_limit");
        assert!(message.contains("may be missing") && message.contains("10 s"), "{message}");
    }
}
