//! Every rule of the policy, on instants: a 4-hour limit is tested in microseconds.

use super::*;
use crate::status::{HookSignal, RegistryState, Status};
use crate::supervision::limits::SuspendMode;
use crate::supervision::view::RestartHold;
use std::time::Duration;

const BASE: i64 = 1_800_000_000_000;

/// Both clocks `secs` after the start: the wall clock from BASE, the monotonic from 0.
fn at(secs: f64) -> Now {
    Now { wall: wall(secs), mono: mono(secs) }
}

fn wall(secs: f64) -> Timestamp {
    Timestamp::from_millis(BASE + (secs * 1000.0) as i64)
}

fn mono(secs: f64) -> Mono {
    Mono::from_millis((secs * 1000.0) as u64)
}

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

/// A policy with a harness around it: the current instant, every effect so far.
struct H {
    p: SessionPolicy,
    now: f64,
    log: Vec<Effect>,
    next_pid: u32,
}

impl H {
    fn with(limits: Limits, kind: AgentKind, resume: bool) -> H {
        let mut n = 0;
        let fresh = Box::new(move || {
            n += 1;
            sid(&format!("fresh-{n}"))
        });
        let (p, effects) = SessionPolicy::new(sid("s1"), limits, kind, resume, at(0.0), fresh);
        H { p, now: 0.0, log: effects, next_pid: 100 }
    }

    /// A claude-like session, spawned and at its prompt.
    fn ready(limits: Limits) -> H {
        let mut h = H::with(limits, AgentKind::ClaudeLike, false);
        h.spawned();
        h.screen(Activity::Idle);
        h
    }

    fn generation_now(&self) -> u64 {
        self.p.generation().expect("a process")
    }

    fn feed(&mut self, input: Input) -> Vec<Effect> {
        let e = self.p.handle(input, at(self.now));
        self.log.extend(e.clone());
        e
    }

    fn to(&mut self, secs: f64) -> Vec<Effect> {
        self.now = secs;
        self.feed(Input::Tick)
    }

    fn spawned(&mut self) -> Vec<Effect> {
        self.next_pid += 1;
        let generation = self.generation_now();
        self.feed(Input::Spawned { generation, pid: self.next_pid })
    }

    fn screen(&mut self, a: Activity) -> Vec<Effect> {
        let generation = self.generation_now();
        self.feed(Input::Screen { generation, signal: ScreenSignal::Activity(a) })
    }

    fn signal(&mut self, s: ScreenSignal) -> Vec<Effect> {
        let generation = self.generation_now();
        self.feed(Input::Screen { generation, signal: s })
    }

    /// A whole turn: working, then back at the prompt.
    fn turn(&mut self) -> Vec<Effect> {
        self.screen(Activity::Working);
        self.screen(Activity::Idle)
    }

    fn exit(&mut self, code: i32) -> Vec<Effect> {
        let generation = self.generation_now();
        self.feed(Input::Exited { generation, code, last_line: None })
    }

    fn output(&mut self) {
        let generation = self.generation_now();
        self.feed(Input::Output { generation });
    }

    fn type_keys(&mut self, s: &str) -> (Delivery, Vec<Effect>) {
        let (d, e) = self.p.input(s.as_bytes().to_vec(), at(self.now));
        self.log.extend(e.clone());
        (d, e)
    }

    /// Brings a freshly spawned process up (spawned + prompt on screen).
    fn come_up(&mut self) -> Vec<Effect> {
        let mut e = self.spawned();
        e.extend(self.screen(Activity::Idle));
        e
    }
}

fn events(e: &[Effect]) -> Vec<&'static str> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Emit(ev) => Some(ev.type_name()),
            _ => None,
        })
        .collect()
}

fn event<'a>(e: &'a [Effect], ty: &str) -> &'a SupervisionEvent {
    e.iter()
        .find_map(|e| match e {
            Effect::Emit(ev) if ev.type_name() == ty => Some(ev),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {ty} event in {e:#?}"))
}

fn spawn_of(e: &[Effect]) -> Option<(&SessionId, &Launch)> {
    e.iter().find_map(|e| match e {
        Effect::Spawn { session_id, launch, .. } => Some((session_id, launch)),
        _ => None,
    })
}

fn signals(e: &[Effect]) -> Vec<Sig> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Signal(s) => Some(*s),
            _ => None,
        })
        .collect()
}

fn writes(e: &[Effect]) -> Vec<Vec<u8>> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Write(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

/// What reaches the agent, as typed: `Write`s as they are, each `TypeLine` with a `⏎`
/// for its (delayed) Enter.
fn typed(e: &[Effect]) -> Vec<String> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Write(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Effect::TypeLine(b) => Some(format!("{}⏎", String::from_utf8_lossy(b))),
            _ => None,
        })
        .collect()
}

/// The position of the first effect matching `f`.
fn index_of(e: &[Effect], f: impl Fn(&Effect) -> bool) -> usize {
    e.iter().position(f).unwrap_or_else(|| panic!("not in {e:#?}"))
}

fn limits() -> Limits {
    Limits::default()
}

// ---------------------------------------------------------------- launch

#[test]
fn first_launch_chooses_the_session_id_and_announces_the_start() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    assert_eq!(spawn_of(&h.log), Some((&sid("s1"), &Launch::Fresh)));
    let e = h.spawned();
    assert_eq!(events(&e), ["session_started"]);
    assert_eq!(h.p.pid(), Some(101));
    assert_eq!(h.p.state(), SupervisionState::Running);

    let h = H::with(limits(), AgentKind::ClaudeLike, true);
    assert_eq!(spawn_of(&h.log), Some((&sid("s1"), &Launch::Resume)));
}

#[test]
fn a_monitored_agent_is_never_given_resume() {
    let h = H::with(limits(), AgentKind::MonitoredOnly, true);
    assert_eq!(spawn_of(&h.log).map(|(_, l)| l), Some(&Launch::Fresh));
}

#[test]
fn type_ahead_during_the_first_launch_goes_straight_to_the_agent() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    let (d, e) = h.type_keys("hello");
    assert_eq!(d, Delivery::Written);
    assert_eq!(writes(&e), [b"hello".to_vec()]);
}

#[test]
fn a_launch_that_shows_nothing_is_taken_as_up_after_the_fallback() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    h.to(29.0);
    assert!(matches!(h.p.proc, Proc::Starting { .. }));
    h.to(30.0);
    assert!(matches!(h.p.proc, Proc::Live { .. }));
}

#[test]
fn a_failed_first_launch_ends_the_session_without_retrying() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    let generation = h.generation_now();
    let e = h.feed(Input::SpawnFailed { generation, error: "cannot run claude: not found".into() });
    assert_eq!(events(&e), ["error"]);
    assert_eq!(h.p.state(), SupervisionState::Terminated);
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::FailedToStart));

    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    let e = h.exit(2);
    assert_eq!(events(&e), ["error", "session_exited"]);
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::FailedToStart));
    assert!(h.to(100.0).iter().all(|e| !matches!(e, Effect::Spawn { .. })));
}

#[test]
fn resuming_an_unknown_id_on_request_fails_like_the_cli() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, true);
    h.spawned();
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert_eq!(events(&e), ["error", "session_exited"]);
    assert_eq!(event(&e, "error").message(), Some("No conversation found with session ID: s1"));
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::FailedToStart));
}

#[test]
fn quitting_the_agent_ends_the_session() {
    let mut h = H::ready(limits());
    let e = h.exit(0);
    assert_eq!(events(&e), ["session_exited"]);
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::Exited));
    let (d, _) = h.type_keys("x");
    assert_eq!(d, Delivery::Refused);
}

// ---------------------------------------------------------------- P2 queue

#[test]
fn input_while_recovering_is_queued_and_delivered_in_order_once_back() {
    let mut h = H::ready(limits());
    h.exit(137);
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    assert_eq!(h.type_keys("first ").0, Delivery::Queued);
    assert_eq!(h.type_keys("second\r").0, Delivery::Queued);
    assert_eq!(h.p.supervision("", "").queued_inputs, 2);
    h.to(2.0);
    let e = h.spawned();
    assert!(typed(&e).is_empty(), "nothing is typed before the prompt is back");
    let e = h.screen(Activity::Idle);
    // Typed like a person: the text, then Enter once the TUI took it (text and Enter in
    // one read is a paste the TUI would not submit).
    assert_eq!(typed(&e), ["first second⏎"]);
    assert!(writes(&e).is_empty());
    assert_eq!(h.p.supervision("", "").queued_inputs, 0);
    assert_eq!(h.type_keys("third").0, Delivery::Written);
}

#[test]
fn queued_lines_are_each_typed_and_a_pasted_enter_stays_in_its_paste() {
    let mut h = H::ready(limits());
    h.exit(137);
    h.type_keys("one\rtwo\r\x1b[200~pasted\rlines\x1b[201~\rpartial");
    h.to(2.0);
    let e = h.come_up();
    assert_eq!(typed(&e), ["one⏎", "two⏎", "\x1b[200~pasted\rlines\x1b[201~⏎", "partial"]);
}

// ---------------------------------------------------------------- P4 crash recovery

#[test]
fn crash_while_working_is_deferred_until_the_turn_ends_then_recovered_gracefully() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    let e = h.signal(ScreenSignal::Crash);
    assert_eq!(events(&e), ["crash_detected"]);
    assert!(matches!(event(&e, "crash_detected").kind, EventKind::CrashDetected { deferred: true }));
    assert!(signals(&e).is_empty() && writes(&e).is_empty(), "a working agent is never interrupted");
    assert!(h.p.supervision("", "").pending_crash_recovery);
    assert_eq!(h.p.state(), SupervisionState::Running);

    h.now = 40.0;
    let e = h.screen(Activity::Idle);
    assert!(e.contains(&Effect::TypeLine("/exit".into())), "graceful: /exit, {e:?}");
    assert!(signals(&e).is_empty());
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    let e = h.exit(0);
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)));
    let e = h.come_up();
    assert_eq!(events(&e), ["session_recovered"]);
    assert_eq!(event(&e, "session_recovered").message(), Some("Session recovered automatically."));
    let s = h.p.supervision("", "");
    assert_eq!((s.recovery_count, s.pending_crash_recovery, s.state), (1, false, SupervisionState::Running));
}

#[test]
fn a_graceful_exit_that_hangs_is_escalated_to_sigterm_then_sigkill() {
    let mut h = H::ready(limits());
    h.now = 10.0;
    h.screen(Activity::Working);
    h.signal(ScreenSignal::Crash);
    h.screen(Activity::Idle);
    assert!(signals(&h.to(14.9)).is_empty());
    assert_eq!(signals(&h.to(15.0)), [Sig::Term]);
    assert_eq!(signals(&h.to(19.9)), []);
    assert_eq!(signals(&h.to(20.0)), [Sig::Kill]);
    assert_eq!(signals(&h.to(60.0)), [], "SIGKILL once");
}

#[test]
fn exit_is_typed_only_once_the_output_settled() {
    // Claude Code writes the turn to its transcript a moment after the screen shows it:
    // `/exit` typed at once would lose it.
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    h.signal(ScreenSignal::Crash);
    h.now = 5.0;
    h.output();
    let e = h.screen(Activity::Idle);
    assert!(typed(&e).is_empty() && signals(&e).is_empty(), "{e:?}");
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    assert_eq!(h.p.next_deadline(), Some(mono(7.0)));
    assert!(typed(&h.to(6.9)).is_empty());
    assert_eq!(typed(&h.to(7.0)), ["/exit⏎"]);
    assert!(signals(&h.to(11.9)).is_empty());
    assert_eq!(signals(&h.to(12.0)), [Sig::Term], "then the usual escalation");
}

#[test]
fn crash_at_a_permission_prompt_never_recovers_there() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    h.screen(Activity::Permission);
    let e = h.signal(ScreenSignal::Crash);
    assert!(matches!(event(&e, "crash_detected").kind, EventKind::CrashDetected { deferred: true }));
    assert!(h.p.supervision("", "").awaiting_permission);
    // Long after any idle timeout, still at the dialog: nothing.
    for t in [60.0, 600.0, 3600.0] {
        let e = h.to(t);
        assert!(signals(&e).is_empty() && !e.iter().any(|e| matches!(e, Effect::TypeLine(_))), "{e:?}");
    }
    // The user approves, the tool runs, the turn ends: now it recovers.
    h.screen(Activity::Working);
    let e = h.screen(Activity::Idle);
    assert!(e.contains(&Effect::TypeLine("/exit".into())));
}

#[test]
fn a_dialog_answered_no_is_a_safe_idle() {
    let mut h = H::ready(limits());
    h.now = 10.0;
    h.screen(Activity::Permission);
    h.signal(ScreenSignal::Crash);
    let e = h.screen(Activity::Idle);
    assert!(e.contains(&Effect::TypeLine("/exit".into())));
}

#[test]
fn crash_while_idle_recovers_at_once_forced() {
    let mut h = H::ready(limits());
    let e = h.signal(ScreenSignal::Crash);
    assert!(matches!(event(&e, "crash_detected").kind, EventKind::CrashDetected { deferred: false }));
    assert_eq!(writes(&e), [vec![0x03]], "Ctrl-C");
    assert_eq!(signals(&e), [Sig::Term]);
    assert_eq!(signals(&h.to(5.0)), [Sig::Kill]);
    let e = h.exit(137);
    assert_eq!(events(&e), Vec::<&str>::new(), "an exit we caused is no new crash");
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::Resume));
}

#[test]
fn double_detection_of_one_dump_is_debounced() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    h.signal(ScreenSignal::Crash);
    let e = h.signal(ScreenSignal::Crash);
    assert!(events(&e).is_empty(), "already pending");

    // Idle: recovered; the rest of the dump arriving within 30 s is ignored.
    let mut h = H::ready(limits());
    h.signal(ScreenSignal::Crash);
    h.exit(137);
    h.come_up();
    h.now = 29.0;
    assert!(events(&h.signal(ScreenSignal::Crash)).is_empty());
    h.now = 30.0;
    assert_eq!(events(&h.signal(ScreenSignal::Crash)), ["crash_detected"]);
}

#[test]
fn after_a_failed_recovery_detections_are_debounced_five_seconds() {
    let mut h = H::ready(limits());
    h.signal(ScreenSignal::Crash);
    h.exit(137);
    // Both resume attempts die before they come up: recovery failed at 13 s.
    h.now = 10.0;
    h.spawned();
    h.exit(1);
    h.to(12.0);
    h.now = 13.0;
    h.spawned();
    h.exit(1);
    assert_eq!(h.p.mode(), Mode::OneShot);
    assert_eq!(h.p.supervision("", "").last_exit_code, Some(1));
    // "Retry" at once: the session is back 1 s after the failed attempt.
    h.now = 14.0;
    h.feed(Input::Restart);
    h.come_up();
    assert_eq!(h.p.state(), SupervisionState::Running);
    // Within 5 s of the failed attempt a crash dump is ignored (the failure's own echo)…
    h.now = 17.9;
    assert!(events(&h.signal(ScreenSignal::Crash)).is_empty());
    assert!(!h.p.supervision("", "").pending_crash_recovery);
    // …from 5 s on it is a new crash, not the 30 s window of a success.
    h.now = 18.0;
    let e = h.signal(ScreenSignal::Crash);
    assert_eq!(events(&e), ["crash_detected"]);
    assert_eq!(signals(&e), [Sig::Term]);
}

#[test]
fn a_pending_recovery_is_retried_once_the_failure_debounce_has_passed() {
    let mut h = H::ready(limits());
    // A failed recovery attempt just happened…
    h.p.crash.last_recovery = Some((mono(0.0), false));
    h.screen(Activity::Working);
    h.now = 6.0;
    h.signal(ScreenSignal::Crash);
    assert!(h.p.supervision("", "").pending_crash_recovery);
    // …then another one fails at 10 s, while the session is idle and pending.
    h.p.crash.last_recovery = Some((mono(10.0), false));
    h.now = 11.0;
    let e = h.screen(Activity::Idle);
    assert!(!e.contains(&Effect::TypeLine("/exit".into())), "within the 5 s failure debounce");
    assert_eq!(h.p.next_deadline(), Some(mono(15.0)));
    let e = h.to(15.0);
    assert!(e.contains(&Effect::TypeLine("/exit".into())), "the retry loop flushes it: {e:?}");
}

#[test]
fn a_silent_harness_with_a_pending_crash_is_recovered_after_the_idle_timeout() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    h.signal(ScreenSignal::Crash);
    h.now = 100.0;
    h.output();
    assert!(signals(&h.to(699.0)).is_empty());
    let e = h.to(700.0);
    assert_eq!(writes(&e), [vec![0x03]], "forced: the harness may be dead");
    assert_eq!(signals(&e), [Sig::Term]);
}

#[test]
fn a_bare_shell_prompt_means_the_harness_died_recover_forced() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    let e = h.signal(ScreenSignal::HarnessDead);
    assert!(matches!(event(&e, "crash_detected").kind, EventKind::CrashDetected { deferred: false }));
    assert_eq!(signals(&e), [Sig::Term]);
}

#[test]
fn self_referential_crash_text_only_costs_a_graceful_restart() {
    // An agent discussing the pattern: deferred, then a clean /exit + --resume.
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    h.signal(ScreenSignal::Crash);
    h.output();
    h.screen(Activity::Idle);
    let e = h.to(2.0);
    assert!(e.contains(&Effect::TypeLine("/exit".into())));
    assert!(signals(&e).is_empty());
}

#[test]
fn only_claude_like_agents_are_recovered() {
    let mut h = H::with(limits(), AgentKind::MonitoredOnly, false);
    h.come_up();
    assert!(h.signal(ScreenSignal::Crash).is_empty());
    assert!(!h.p.supervision("", "").pending_crash_recovery);
    let e = h.exit(139);
    assert_eq!(events(&e), ["error", "session_exited"]);
    assert!(spawn_of(&e).is_none());
    assert!(h.to(10.0).iter().all(|e| !matches!(e, Effect::Spawn { .. })));
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::Exited));
}

// ---------------------------------------------------------------- P5 abnormal exit

#[test]
fn kill_9_is_resumed_after_two_seconds_with_the_exit_code_reported() {
    let mut h = H::ready(limits());
    h.now = 50.0;
    let e = h.exit(137);
    assert_eq!(events(&e), ["error"]);
    assert!(matches!(event(&e, "error").kind, EventKind::Error { exit_code: 137, .. }));
    assert!(spawn_of(&e).is_none(), "not before the retry delay");
    assert_eq!(h.p.next_deadline(), Some(mono(52.0)));
    assert!(spawn_of(&h.to(51.9)).is_none());
    let e = h.to(52.0);
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)));
    let e = h.come_up();
    assert_eq!(events(&e), ["session_recovered"]);
    assert_eq!(h.p.supervision("", "").recovery_count, 1);
    assert_eq!(h.p.supervision("", "").last_exit_code, Some(137));
}

#[test]
fn two_failed_resumes_switch_to_one_shot_mode() {
    let mut h = H::ready(limits());
    h.exit(1);
    h.to(2.0);
    h.spawned();
    h.exit(1);
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    assert!(spawn_of(&h.to(3.9)).is_none());
    assert!(spawn_of(&h.to(4.0)).is_some(), "second retry 2 s after the first failed");
    h.spawned();
    h.type_keys("queued prompt\r");
    let e = h.exit(1);
    assert_eq!(events(&e), ["recovery_failed", "mode_change"]);
    assert!(matches!(&event(&e, "mode_change").kind, EventKind::ModeChange { mode, .. } if mode == "one_shot"));
    assert_eq!(h.p.mode(), Mode::OneShot);
    // What was typed meanwhile runs as the first one-shot.
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::OneShot { prompt: "queued prompt".into() }));
    assert!(spawn_of(&h.to(100.0)).is_none(), "no more automatic resumes");
}

#[test]
fn one_shot_mode_runs_each_line_as_its_own_process() {
    let mut h = H::ready(Limits { recovery_retries: 0, ..limits() });
    h.exit(1);
    assert_eq!(h.p.mode(), Mode::OneShot);
    assert!(h.type_keys("\x7f").1.is_empty(), "nothing to rub out, nothing typed");
    let (d, e) = h.type_keys("hi");
    assert_eq!(d, Delivery::Queued);
    assert_eq!(e, [Effect::Echo(b"hi".to_vec())]);
    let (_, e) = h.type_keys("\x7f!\r");
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::OneShot { prompt: "h!".into() }));
    h.spawned();
    h.type_keys("next\r");
    let e = h.exit(3);
    assert_eq!(events(&e), ["error"]);
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::OneShot { prompt: "next".into() }));
    h.spawned();
    let e = h.exit(0);
    assert!(events(&e).is_empty() && spawn_of(&e).is_none());
    // "Retry" brings the persistent session back.
    h.feed(Input::Restart);
    let e = h.come_up();
    assert_eq!(h.p.mode(), Mode::Persistent);
    assert_eq!(events(&e), ["session_ready"]);
}

/// One-shot mode, with a one-shot answer running and "Retry" asked meanwhile.
fn retry_asked_during_a_one_shot() -> (H, Vec<Effect>) {
    let mut h = H::ready(Limits { recovery_retries: 0, ..limits() });
    h.exit(1);
    assert_eq!(h.p.mode(), Mode::OneShot);
    let (_, e) = h.type_keys("one shot\r");
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::OneShot { prompt: "one shot".into() }));
    h.spawned();
    let e = h.feed(Input::Restart);
    (h, e)
}

#[test]
fn a_retry_while_a_one_shot_answer_finishes_follows_it() {
    // Seen in CI: the one-shot's reply was on screen, its process not yet gone, and the
    // user's "Retry" was dropped.
    let (mut h, e) = retry_asked_during_a_one_shot();
    assert!(spawn_of(&e).is_none(), "one process at a time");
    let e = h.exit(0);
    assert!(spawn_of(&e).is_some(), "the retry, once the one-shot ended: {e:?}");
    let e = h.come_up();
    assert_eq!(h.p.mode(), Mode::Persistent);
    assert_eq!(events(&e), ["session_ready"]);
}

#[test]
fn a_stop_after_a_pending_retry_wins() {
    let (mut h, _) = retry_asked_during_a_one_shot();
    h.feed(Input::Stop);
    let e = h.exit(143);
    assert!(spawn_of(&e).is_none(), "the Retry before the Stop is forgotten: {e:?}");
    assert!(spawn_of(&h.to(h.now + 100.0)).is_none());
}

#[test]
fn more_than_two_consecutive_crashes_mark_the_session_unhealthy() {
    let mut h = H::ready(limits());
    for i in 0..2 {
        h.exit(137);
        h.to(h.now + 2.0);
        h.come_up();
        assert_eq!(h.p.supervision("", "").consecutive_crashes, i + 1);
    }
    let e = h.exit(137);
    assert_eq!(events(&e), ["error", "session_unhealthy"]);
    assert_eq!(h.p.state(), SupervisionState::Unhealthy);
    assert!(h.to(h.now + 100.0).iter().all(|e| !matches!(e, Effect::Spawn { .. })));
    assert_eq!(h.type_keys("x").0, Delivery::Refused);
    // The user asks to retry.
    let e = h.feed(Input::Resume);
    assert!(spawn_of(&e).is_some());
    let e = h.come_up();
    assert_eq!(events(&e), ["session_resumed"]);
    assert_eq!(h.p.supervision("", "").consecutive_crashes, 0);
}

#[test]
fn a_finished_turn_proves_health_and_resets_the_crash_count() {
    let mut h = H::ready(limits());
    for _ in 0..5 {
        h.exit(137);
        h.to(h.now + 2.0);
        h.come_up();
        h.turn();
        assert_eq!(h.p.supervision("", "").consecutive_crashes, 0);
    }
    assert_eq!(h.p.state(), SupervisionState::Running);
    assert_eq!(h.p.supervision("", "").recovery_count, 5);
}

#[test]
fn screen_crashes_count_toward_unhealthy_too() {
    let mut h = H::ready(limits());
    for _ in 0..2 {
        h.now += 31.0;
        h.signal(ScreenSignal::Crash);
        h.exit(137);
        h.come_up();
    }
    h.now += 31.0;
    let e = h.signal(ScreenSignal::Crash);
    assert_eq!(events(&e), ["crash_detected", "session_unhealthy"]);
    assert!(signals(&e).is_empty(), "an unhealthy session that still runs is left alone");
}

#[test]
fn a_health_check_that_finds_the_process_gone_takes_the_crash_path() {
    let mut h = H::ready(limits());
    assert!(h.to(60.0).contains(&Effect::CheckHealth));
    let generation = h.generation_now();
    let e = h.feed(Input::Health { generation, alive: false });
    assert_eq!(events(&e), ["error"]);
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    // The late exit notice of that process changes nothing.
    let e = h.feed(Input::Exited { generation, code: 137, last_line: None });
    assert!(e.is_empty());
}

#[test]
fn news_about_an_old_process_never_touches_the_new_one() {
    let mut h = H::ready(limits());
    let old = h.generation_now();
    h.exit(137);
    h.to(2.0);
    h.come_up();
    for input in [
        Input::Exited { generation: old, code: 1, last_line: None },
        Input::Screen { generation: old, signal: ScreenSignal::Crash },
        Input::Rss { generation: old, bytes: u64::MAX },
        Input::Health { generation: old, alive: false },
    ] {
        assert!(h.feed(input).is_empty());
    }
    assert_eq!(h.p.state(), SupervisionState::Running);
}

// ---------------------------------------------------------------- P6 idle suspension

#[test]
fn the_idle_timer_starts_only_after_a_turn_completes() {
    let mut h = H::ready(limits());
    assert_eq!(h.p.supervision("", "").idle_deadline, None, "a fresh prompt is not an idle session yet");
    h.to(700.0);
    assert_eq!(h.p.state(), SupervisionState::Running);
    h.now = 1000.0;
    h.turn();
    assert_eq!(h.p.supervision("", "").idle_deadline, Some(wall(1600.0)));
}

#[test]
fn idle_suspension_announces_the_mode_change_then_terminates() {
    let mut h = H::ready(limits());
    h.turn();
    let e = h.to(600.0);
    // Seed 003 §2.2: the client is told (mode_change) before the process is stopped.
    assert_eq!(events(&e), ["mode_change"]);
    assert!(matches!(&event(&e, "mode_change").kind, EventKind::ModeChange { mode, .. } if mode == "suspended"));
    assert_eq!(signals(&e), [Sig::Term]);
    assert!(
        index_of(&e, |e| matches!(e, Effect::Emit(_))) < index_of(&e, |e| matches!(e, Effect::Signal(_))),
        "mode_change first: {e:#?}"
    );
    assert_eq!(h.p.state(), SupervisionState::Suspended);
    assert_eq!(signals(&h.to(605.0)), [Sig::Kill]);
    let e = h.exit(143);
    assert_eq!(events(&e), ["session_suspended"], "the suspension itself once the process is gone");
    assert_eq!(
        event(&e, "session_suspended").message(),
        Some("Session suspended after 10 minutes idle. Your next message resumes it.")
    );
    assert!(!h.p.is_live());
}

#[test]
fn any_input_or_output_resets_the_idle_timer() {
    let mut h = H::ready(limits());
    h.turn();
    h.now = 500.0;
    h.output();
    assert!(signals(&h.to(600.0)).is_empty());
    h.now = 1000.0;
    h.type_keys("a");
    assert!(signals(&h.to(1100.0)).is_empty());
    assert_eq!(signals(&h.to(1600.0)), [Sig::Term]);
}

#[test]
fn a_busy_session_or_one_at_a_dialog_is_never_suspended() {
    let mut h = H::ready(limits());
    h.turn();
    h.screen(Activity::Working);
    assert_eq!(h.p.supervision("", "").idle_deadline, None);
    assert!(signals(&h.to(5000.0)).is_empty());
    h.screen(Activity::Permission);
    assert!(signals(&h.to(9000.0)).is_empty());
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn the_next_message_resumes_a_suspended_session_and_is_delivered_after() {
    let mut h = H::ready(limits());
    h.turn();
    h.to(600.0);
    h.exit(143);
    h.now = 600.0 + 15.0 * 60.0;
    let (d, e) = h.type_keys("continue please\r");
    assert_eq!(d, Delivery::Queued);
    assert_eq!(event(&e, "session_resumed").message(), Some("Resuming session (idle for 15 min)…"));
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)));
    let e = h.come_up();
    assert_eq!(events(&e), ["mode_change"]);
    assert_eq!(typed(&e), ["continue please⏎"]);
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn a_message_racing_the_idle_timer_never_makes_two_processes() {
    let mut h = H::ready(limits());
    h.turn();
    h.to(600.0); // SIGTERM sent, the process is still going away
    let (d, e) = h.type_keys("hi\r");
    assert_eq!(d, Delivery::Queued);
    assert!(spawn_of(&e).is_none(), "no second process while the first one lives");
    let e = h.exit(143);
    assert_eq!(events(&e), ["session_suspended", "session_resumed"]);
    assert!(spawn_of(&e).is_some());
    let e = h.come_up();
    assert_eq!(typed(&e), ["hi⏎"]);
}

/// Issue 33: Ctrl-C at a session suspended for idleness is not a message: it does not
/// resume the agent only to hand it the keys that quit it (its exit then counted as a
/// crash and recovered). The next message resumes it as ever.
#[test]
fn ctrl_c_at_a_suspended_session_neither_wakes_it_nor_counts_as_a_crash() {
    for mode in [SuspendMode::Terminate, SuspendMode::Stop] {
        let mut h = H::ready(Limits { suspend_mode: mode, ..limits() });
        h.turn();
        h.to(600.0);
        if mode == SuspendMode::Terminate {
            h.exit(143);
        }
        assert_eq!(h.p.state(), SupervisionState::Suspended);
        for keys in ["\x03", "\x03\x03", "\x04"] {
            let (d, e) = h.type_keys(keys);
            assert_eq!(d, Delivery::Written, "{mode:?}: taken");
            assert!(spawn_of(&e).is_none() && signals(&e).is_empty(), "{mode:?}: not woken: {e:#?}");
            assert!(writes(&e).is_empty() && events(&e).is_empty(), "{mode:?}: nothing sent: {e:#?}");
        }
        assert_eq!(h.p.state(), SupervisionState::Suspended);
        assert_eq!(h.p.supervision("", "").consecutive_crashes, 0);
        let (_, e) = h.type_keys("go on\r");
        assert_eq!(events(&e).first(), Some(&"session_resumed"), "{mode:?}");
    }
}

#[test]
fn suspend_mode_stop_uses_sigstop_and_sigcont() {
    let mut h = H::ready(Limits { suspend_mode: SuspendMode::Stop, ..limits() });
    h.turn();
    let e = h.to(600.0);
    assert_eq!(signals(&e), [Sig::Stop]);
    assert_eq!(events(&e), ["mode_change", "session_suspended"]);
    assert!(index_of(&e, |e| matches!(e, Effect::Emit(_))) < index_of(&e, |e| matches!(e, Effect::Signal(_))));
    assert!(!h.p.is_live());
    assert!(h.to(700.0).iter().all(|e| *e != Effect::MeasureRss), "a stopped process is not measured");
    let (d, e) = h.type_keys("x");
    assert_eq!(d, Delivery::Written);
    assert_eq!(signals(&e), [Sig::Cont]);
    assert_eq!(writes(&e), [b"x".to_vec()]);
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn the_fleet_can_suspend_only_an_idle_session() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    assert!(!h.p.suspendable());
    assert!(h.feed(Input::Suspend).is_empty());
    h.screen(Activity::Idle);
    assert!(h.p.suspendable());
    let e = h.feed(Input::Suspend);
    assert_eq!(events(&e), ["mode_change"]);
    assert_eq!(signals(&e), [Sig::Term]);
    let e = h.exit(143);
    assert_eq!(
        event(&e, "session_suspended").message(),
        Some("Session suspended to keep at most 3 live sessions. Your next message resumes it.")
    );
}

// ---------------------------------------------------------------- P8 duration

fn short_duration() -> Limits {
    Limits { max_duration: Duration::from_secs(100), duration_check: Duration::from_secs(10), ..limits() }
}

#[test]
fn the_duration_warning_comes_at_ninety_percent_on_a_check() {
    let mut h = H::ready(Limits::default());
    // Checked every 60 s: nothing until the check at or after 12,960 s.
    assert!(events(&h.to(12_959.0)).is_empty());
    let e = h.to(12_960.0);
    assert_eq!(events(&e), ["session_warning"]);
    let w = event(&e, "session_warning");
    assert!(
        matches!(&w.kind, EventKind::SessionWarning { reason, remaining_seconds: Some(1440), .. } if reason == "duration")
    );
    assert_eq!(w.message(), Some("Session will end in 24 minutes. Save your work."));
    assert!(events(&h.to(13_020.0)).is_empty(), "once");
}

#[test]
fn a_wall_clock_step_moves_no_deadline() {
    // Deadlines run on the monotonic clock: the wall clock jumping a day ahead (NTP, a
    // manual change) neither ends a 4-hour session early nor skips its SIGKILL grace.
    let mut h = H::ready(Limits::default());
    let stepped = |secs: f64| Now { wall: wall(secs + 86_400.0), mono: mono(secs) };
    let e = h.p.handle(Input::Tick, stepped(60.0));
    assert!(events(&e).is_empty(), "{e:?}");
    assert_eq!(h.p.state(), SupervisionState::Running);
    // Shown in wall time as of now: still four hours after the start, seen from the new wall clock.
    assert_eq!(h.p.supervision("", "").duration_deadline, Some(wall(14_400.0 + 86_400.0)));
    assert!(events(&h.p.handle(Input::Tick, stepped(12_959.0))).is_empty());
    assert_eq!(events(&h.p.handle(Input::Tick, stepped(12_960.0))), ["session_warning"]);
}

#[test]
fn a_short_limit_is_honoured_at_its_own_instants_whatever_the_check_interval() {
    // `mimesis run --max-duration 2s`: the default 60 s check must not delay the warning
    // (90 %, 1.8 s) or the end (2 s).
    let mut h = H::ready(Limits { max_duration: Duration::from_secs(2), ..limits() });
    assert_eq!(h.p.next_deadline(), Some(mono(1.8)));
    assert!(events(&h.to(1.799)).is_empty());
    let e = h.to(1.8);
    assert_eq!(events(&e), ["session_warning"]);
    assert_eq!(event(&e, "session_warning").message(), Some("Session will end in 1 second. Save your work."));
    assert_eq!(h.p.next_deadline(), Some(mono(2.0)));
    assert!(signals(&h.to(1.999)).is_empty());
    assert_eq!(signals(&h.to(2.0)), [Sig::Term]);
    // Acted on: the instants are no wake-ups any more (no busy loop while it stops).
    assert_eq!(h.p.next_deadline(), Some(mono(7.0)), "only the SIGKILL escalation");
    let e = h.exit(143);
    assert_eq!(event(&e, "session_terminated").message(), Some("Session ended (2-second limit reached)."));
    assert_eq!(h.p.next_deadline(), None);
}

#[test]
fn a_limit_reached_mid_turn_waits_for_the_grace_not_for_the_next_check() {
    let mut h =
        H::ready(Limits { max_duration: Duration::from_secs(3), turn_grace: Duration::from_secs(1), ..limits() });
    h.screen(Activity::Working);
    h.to(3.0);
    assert_eq!(h.p.next_deadline(), Some(mono(4.0)), "the grace's end");
    let e = h.to(4.0);
    assert_eq!(writes(&e), [vec![0x1b]], "interrupted (EC-003)");
}

#[test]
fn the_duration_limit_terminates_an_idle_session_and_offers_resume() {
    let mut h = H::ready(Limits::default());
    let e = h.to(14_400.0);
    assert_eq!(signals(&e), [Sig::Term]);
    assert_eq!(signals(&h.to(14_405.0)), [Sig::Kill]);
    let e = h.exit(137);
    assert_eq!(events(&e), ["session_terminated"]);
    let t = event(&e, "session_terminated");
    assert!(matches!(&t.kind, EventKind::SessionTerminated { reason, resume_session_id, .. }
        if reason == "duration_limit" && resume_session_id == &sid("s1")));
    assert_eq!(t.message(), Some("Session ended (4-hour limit reached)."));
    assert_eq!(h.p.supervision("", "").terminated_reason, Some(TerminatedReason::DurationLimit));
    assert_eq!(h.p.next_deadline(), None);
    // Resume starts a new window.
    h.now = 20_000.0;
    h.feed(Input::Resume);
    h.come_up();
    assert_eq!(h.p.supervision("", "").duration_deadline, Some(wall(20_000.0 + 14_400.0)));
}

#[test]
fn a_turn_in_flight_at_the_limit_may_finish_within_the_grace() {
    let mut h = H::ready(short_duration());
    h.now = 95.0;
    h.screen(Activity::Working);
    let e = h.to(100.0);
    assert!(signals(&e).is_empty() && writes(&e).is_empty(), "waits for the turn");
    h.now = 120.0;
    let e = h.screen(Activity::Idle);
    assert_eq!(signals(&e), [Sig::Term]);
    assert!(writes(&e).is_empty(), "the finished turn is not interrupted");
    let e = h.exit(143);
    assert_eq!(event(&e, "session_terminated").message(), Some("Session ended (100-second limit reached)."));
}

#[test]
fn a_turn_past_the_grace_is_interrupted_ec_003() {
    let mut h = H::ready(short_duration());
    h.screen(Activity::Working);
    h.to(100.0);
    assert!(signals(&h.to(129.0)).is_empty());
    let e = h.to(130.0);
    assert_eq!(writes(&e), [vec![0x1b]], "interrupt (Esc)");
    assert!(signals(&e).is_empty(), "a moment to record the interruption");
    assert_eq!(signals(&h.to(131.0)), [Sig::Term]);
    assert_eq!(signals(&h.to(136.0)), [Sig::Kill]);
    let e = h.exit(143);
    assert_eq!(event(&e, "session_terminated").message(), Some("Session ended. Your last response may be incomplete."));
}

#[test]
fn a_suspended_session_reaching_the_limit_just_ends() {
    let mut h = H::ready(short_duration());
    h.turn();
    h.p.limits.idle_timeout = Duration::from_secs(5);
    h.turn();
    h.to(5.0);
    h.exit(143);
    assert_eq!(h.p.state(), SupervisionState::Suspended);
    let e = h.to(100.0);
    assert_eq!(events(&e), ["session_terminated"]);
    assert!(spawn_of(&e).is_none());
}

// ---------------------------------------------------------------- P9 memory

const MB: u64 = 1024 * 1024;

fn rss(h: &mut H, mb: u64) -> Vec<Effect> {
    let generation = h.generation_now();
    h.feed(Input::Rss { generation, bytes: mb * MB })
}

#[test]
fn rss_is_measured_on_its_interval() {
    let mut h = H::ready(limits());
    assert!(h.to(29.0).is_empty());
    assert_eq!(h.to(30.0), [Effect::MeasureRss]);
    assert!(rss(&mut h, 4096).is_empty(), "at the limit is fine");
}

#[test]
fn rss_over_the_limit_restarts_with_resume_when_idle() {
    let mut h = H::ready(limits());
    let e = rss(&mut h, 4097);
    assert_eq!(events(&e), ["session_restarting"]);
    let r = event(&e, "session_restarting");
    assert!(matches!(&r.kind, EventKind::SessionRestarting { reason, .. } if reason == "memory_limit"));
    assert_eq!(r.message(), Some("Session restarting to maintain performance. Your conversation will be preserved."));
    assert_eq!(signals(&e), [Sig::Term]);
    assert_eq!(h.p.state(), SupervisionState::RestartPending);
    let e = h.exit(143);
    assert!(e.contains(&Effect::DeleteShellSnapshots));
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)));
    let e = h.come_up();
    assert_eq!(events(&e), ["session_ready"]);
    let ready = event(&e, "session_ready");
    assert!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::Resumed, .. }));
    assert_eq!(ready.message(), Some("Session restored. You can continue."));
    assert_eq!(h.p.supervision("", "").restart_count, 1);
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn rss_over_the_limit_mid_turn_waits_for_the_turn_ec_004() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    let e = rss(&mut h, 5000);
    assert!(e.is_empty(), "the in-flight turn is not interrupted: {e:?}");
    assert_eq!(h.p.state(), SupervisionState::RestartPending);
    h.now = 10.0;
    let e = h.screen(Activity::Idle);
    assert_eq!(events(&e), ["session_restarting"]);
    assert_eq!(signals(&e), [Sig::Term]);
}

#[test]
fn rss_restart_goes_ahead_after_the_grace() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    rss(&mut h, 5000);
    assert!(signals(&h.to(29.0)).is_empty());
    assert_eq!(signals(&h.to(30.0)), [Sig::Term]);
}

#[test]
fn rss_at_twice_the_limit_forces_the_restart_at_once() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    rss(&mut h, 5000);
    let e = rss(&mut h, 8193);
    assert_eq!(events(&e), ["session_restarting"]);
    assert_eq!(signals(&e), [Sig::Term]);
}

/// One memory restart, through to the agent's prompt again.
fn memory_restart(h: &mut H, mb: u64) -> Vec<Effect> {
    let mut e = rss(h, mb);
    e.extend(h.exit(143));
    e.extend(h.come_up());
    e
}

#[test]
fn a_memory_limit_below_the_agents_baseline_stops_restarts_instead_of_storming() {
    // `mimesis run --max-rss-mb 200` with an agent at 230 MB at rest: one restart, then
    // the same 230 MB before any work: restarting cannot help, so it stops and says why.
    let mut h = H::ready(Limits { max_rss_mb: 200, ..limits() });
    let e = memory_restart(&mut h, 230);
    assert_eq!(events(&e), ["session_restarting", "session_ready"]);
    let e = rss(&mut h, 230);
    assert_eq!(events(&e), ["session_warning"]);
    let w = event(&e, "session_warning");
    assert!(matches!(&w.kind, EventKind::SessionWarning { reason, .. } if reason == "memory_baseline"));
    assert_eq!(
        w.message(),
        Some(
            "The memory limit (200 MB) is below what the agent needs at rest (230 MB right after a restart). \
             Automatic restarts are stopped; the session keeps running. Raise the limit in Settings."
        )
    );
    assert!(signals(&e).is_empty(), "the session keeps running");
    assert_eq!(h.p.state(), SupervisionState::Running);
    assert_eq!(h.p.supervision("", "").restarts_held, Some(RestartHold::MemoryBaseline));
    // Every later check: nothing more, said once.
    h.turn();
    for _ in 0..10 {
        assert!(rss(&mut h, 260).is_empty());
    }
    // A limit the agent fits under lifts the hold.
    set_limits(&mut h, Limits { max_rss_mb: 300, ..limits() });
    assert_eq!(h.p.supervision("", "").restarts_held, None);
    assert!(rss(&mut h, 301).is_empty(), "backing off after the last restart");
    assert_eq!(h.p.state(), SupervisionState::RestartPending);
    assert_eq!(events(&h.to(10.0)), ["session_restarting"]);
}

#[test]
fn what_a_terminal_sends_by_itself_is_no_work_after_a_memory_restart() {
    // `mimesis run` in a real terminal with 2.1.332 (about 210 MB at rest, limit 100 MB):
    // the CLI asks the terminal things and turns on mouse and focus reports, so input
    // arrives while nobody works. It used to count as work, and the session restarted on
    // every check until the start limit.
    let mut h = H::ready(Limits { max_rss_mb: 100, ..limits() });
    let e = memory_restart(&mut h, 214);
    assert_eq!(events(&e), ["session_restarting", "session_ready"]);
    h.now = 30.0;
    h.type_keys("\x1b[?64;1;2c\x1b[I\x1b[<35;10;5M");
    let e = rss(&mut h, 214);
    assert_eq!(events(&e), ["session_warning"]);
    assert!(
        matches!(&event(&e, "session_warning").kind, EventKind::SessionWarning { reason, .. } if reason == "memory_baseline")
    );
    assert!(event(&e, "session_warning").message().unwrap().contains("(214 MB right after a restart)"));
    for i in 0..10 {
        h.now = 60.0 + 30.0 * f64::from(i);
        assert!(rss(&mut h, 214).is_empty(), "held, said once");
        assert!(signals(&h.to(h.now + 1.0)).is_empty());
    }
}

#[test]
fn a_memory_baseline_hold_ends_when_the_memory_grows_past_its_margin() {
    let mut h = H::ready(Limits { max_rss_mb: 100, ..limits() });
    memory_restart(&mut h, 214);
    h.now = 30.0;
    assert_eq!(events(&rss(&mut h, 214)), ["session_warning"]);
    // Work piles up, but not by a quarter of what it needs at rest: still held.
    h.turn();
    h.now = 100.0;
    assert!(rss(&mut h, 260).is_empty());
    // Past it: that much a restart can free again.
    h.now = 200.0;
    let e = rss(&mut h, 280);
    assert_eq!(events(&e), ["session_restarting"]);
    assert_eq!(h.p.supervision("", "").restarts_held, None);
    h.exit(143);
    h.come_up();
    // And back at rest, over the limit again: held again, and said again.
    h.now = 230.0;
    assert_eq!(events(&rss(&mut h, 214)), ["session_warning"]);
    assert_eq!(h.p.supervision("", "").restarts_held, Some(RestartHold::MemoryBaseline));
}

#[test]
fn memory_restarts_back_off_then_stop_at_the_start_limit() {
    let mut h = H::ready(Limits { max_rss_mb: 200, restart_limit_burst: 3, ..limits() });
    // The first restart goes at once; each later one waits longer (10 s, 20 s).
    assert_eq!(events(&memory_restart(&mut h, 300)), ["session_restarting", "session_ready"]);
    h.turn(); // work since: not the baseline case
    h.now = 1.0;
    let e = rss(&mut h, 300);
    assert!(signals(&e).is_empty(), "backing off: {e:?}");
    assert_eq!(h.p.state(), SupervisionState::RestartPending);
    assert!(signals(&h.to(9.9)).is_empty());
    let e = h.to(10.0);
    assert_eq!(signals(&e), [Sig::Term], "ten seconds after the first");
    h.exit(143);
    h.come_up();
    h.turn();
    h.now = 11.0;
    rss(&mut h, 300);
    assert!(signals(&h.to(29.9)).is_empty());
    assert_eq!(signals(&h.to(30.0)), [Sig::Term], "twenty seconds after the second");
    h.exit(143);
    h.come_up();
    h.turn();
    // Three in the window: the fourth is not started; the session keeps running.
    h.now = 100.0;
    let e = rss(&mut h, 300);
    assert_eq!(events(&e), ["session_warning"]);
    assert!(event(&e, "session_warning").message().unwrap().starts_with("Restarted 3 times in 30 minutes"));
    assert_eq!(h.p.supervision("", "").restarts_held, Some(RestartHold::RateLimit));
    assert_eq!(h.p.state(), SupervisionState::Running);
    h.feed(Input::Rss { generation: h.generation_now(), bytes: 300 * MB });
    assert!(!events(&h.to(2000.0)).contains(&"session_restarting"));
}

#[test]
fn crash_recoveries_count_against_the_start_limit() {
    // Each recovery works and a turn proves it (so the consecutive count resets), but a
    // crash every few minutes is still a loop: past the start limit, it stops.
    let mut h = H::ready(Limits { restart_limit_burst: 2, ..limits() });
    for i in 0..2 {
        h.now = 100.0 * f64::from(i);
        h.signal(ScreenSignal::Crash);
        h.exit(137);
        h.come_up();
        h.turn();
    }
    h.now = 300.0;
    let e = h.signal(ScreenSignal::Crash);
    assert_eq!(events(&e), ["crash_detected", "session_unhealthy"]);
    assert!(event(&e, "session_unhealthy").message().unwrap().contains("restarted 2 times in 30 minutes"));
    assert_eq!(h.p.state(), SupervisionState::Unhealthy);
    // The window moves on: older restarts no longer count once the user retries.
    h.now = 300.0 + 1800.0;
    h.feed(Input::Restart);
    assert_ne!(h.p.state(), SupervisionState::Unhealthy);
}

#[test]
fn a_corrupted_session_is_archived_and_replaced_by_a_fresh_one_ec_007() {
    let mut h = H::ready(limits());
    rss(&mut h, 5000);
    h.exit(143);
    h.spawned();
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert_eq!(
        e.iter().filter(|e| matches!(e, Effect::ArchiveCorrupted { .. } | Effect::Renamed { .. })).count(),
        2,
        "{e:?}"
    );
    assert!(e.contains(&Effect::ArchiveCorrupted { session_id: sid("s1") }));
    assert!(e.contains(&Effect::Renamed { from: sid("s1"), to: sid("fresh-1") }));
    assert_eq!(spawn_of(&e), Some((&sid("fresh-1"), &Launch::Fresh)));
    let e = h.come_up();
    let ready = event(&e, "session_ready");
    assert!(matches!(ready.kind, EventKind::SessionReady { status: ReadyStatus::New, .. }));
    assert_eq!(ready.session_id, sid("fresh-1"));
    assert_eq!(ready.message(), Some("Previous session could not be restored. Starting a new session."));
    assert_eq!(h.p.id(), &sid("fresh-1"));
}

/// 2.1.197 may show its prompt (and be taken to be up) before it refuses the resume: what
/// was typed into it meanwhile goes with it, so the new session gets it instead.
#[test]
fn what_went_to_a_resume_that_is_then_refused_is_typed_into_the_new_session() {
    let mut h = H::ready(limits());
    h.exit(137);
    assert_eq!(h.type_keys("go on\r").0, Delivery::Queued);
    h.to(2.0);
    let e = h.come_up();
    assert_eq!(typed(&e), ["go on⏎"], "delivered to the resumed process");
    assert_eq!(h.type_keys("and then").0, Delivery::Written);
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert_eq!(spawn_of(&e), Some((&sid("fresh-1"), &Launch::Fresh)));
    assert_eq!(h.p.supervision("", "").queued_inputs, 2);
    let e = h.come_up();
    assert!(matches!(event(&e, "session_ready").kind, EventKind::SessionReady { status: ReadyStatus::New, .. }));
    assert_eq!(typed(&e), ["go on⏎", "and then"]);

    // A resume that worked keeps nothing: a later refusal (none comes after a turn) has
    // nothing to give again.
    let mut h = H::ready(limits());
    h.exit(137);
    h.type_keys("go on\r");
    h.to(2.0);
    h.come_up();
    h.screen(Activity::Working);
    h.screen(Activity::Idle);
    h.signal(ScreenSignal::ResumeRejected);
    h.exit(1);
    assert_eq!(h.p.supervision("", "").queued_inputs, 0);
}

#[test]
fn a_monitored_agent_over_the_rss_limit_is_only_warned_about() {
    let mut h = H::with(limits(), AgentKind::MonitoredOnly, false);
    h.come_up();
    let e = rss(&mut h, 9000);
    assert_eq!(events(&e), ["session_warning"]);
    assert!(signals(&e).is_empty());
    assert!(rss(&mut h, 9000).is_empty(), "once");
}

// ---------------------------------------------------------------- P10 disk

#[test]
fn a_full_disk_restarts_like_memory() {
    let mut h = H::ready(limits());
    let e = h.feed(Input::DiskFull);
    assert!(
        matches!(&event(&e, "session_restarting").kind, EventKind::SessionRestarting { reason, .. } if reason == "disk_limit")
    );
    assert_eq!(signals(&e), [Sig::Term]);
}

// ---------------------------------------------------------------- commands

#[test]
fn stop_terminates_and_can_be_resumed() {
    let mut h = H::ready(limits());
    h.exit(137);
    h.type_keys("lost?");
    let e = h.feed(Input::Stop);
    assert_eq!(events(&e), ["session_terminated"], "no process: at once");
    assert_eq!(h.p.supervision("", "").queued_inputs, 0);
    assert!(spawn_of(&h.to(10.0)).is_none(), "the pending retry was cancelled");
    h.feed(Input::Resume);
    h.come_up();
    let e = h.feed(Input::Stop);
    assert_eq!(signals(&e), [Sig::Term]);
    let e = h.exit(143);
    assert!(
        matches!(&event(&e, "session_terminated").kind, EventKind::SessionTerminated { reason, .. } if reason == "user")
    );
}

#[test]
fn delete_stops_the_process_and_cancels_every_timer() {
    let mut h = H::ready(limits());
    h.turn();
    let e = h.feed(Input::Delete);
    assert_eq!(signals(&e), [Sig::Term]);
    assert_eq!(h.p.supervision("", "").idle_deadline, None);
    let e = h.exit(143);
    assert!(e.contains(&Effect::Finished));
    assert_eq!(h.p.next_deadline(), None);

    // A delete while a suspension is stopping the process wins.
    let mut h = H::ready(limits());
    h.turn();
    h.to(600.0);
    h.feed(Input::Delete);
    let e = h.exit(143);
    assert!(e.contains(&Effect::Finished));
    assert!(events(&e).is_empty());
}

#[test]
fn a_stop_before_the_spawn_answered_signals_as_soon_as_it_does() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.feed(Input::Shutdown);
    let e = h.spawned();
    assert_eq!(signals(&e), [Sig::Term]);
    let e = h.exit(143);
    assert!(e.contains(&Effect::Finished));
}

#[test]
fn restart_is_graceful_at_the_prompt() {
    let mut h = H::ready(limits());
    h.now = 10.0;
    let e = h.feed(Input::Restart);
    assert_eq!(e, [Effect::TypeLine("/exit".into())]);
    let e = h.exit(0);
    assert_eq!(spawn_of(&e).map(|(_, l)| l), Some(&Launch::Resume));
    assert!(!e.contains(&Effect::DeleteShellSnapshots), "only killed processes leave snapshots");
    let e = h.come_up();
    assert_eq!(events(&e), ["session_ready"]);
    assert_eq!(h.p.supervision("", "").restart_count, 0, "user restarts are not limit restarts");
}

#[test]
fn shutdown_stops_and_finishes() {
    let mut h = H::ready(limits());
    assert_eq!(signals(&h.feed(Input::Shutdown)), [Sig::Term]);
    assert_eq!(signals(&h.to(5.0)), [Sig::Kill]);
    assert!(h.exit(137).contains(&Effect::Finished));
}

// ---------------------------------------------------------------- exact signals first

fn registry(pid: u32, state: RegistryState) -> Input {
    Input::Agent(AgentReport { registry: Some((pid, state)), ..AgentReport::default() })
}

#[test]
fn the_agents_own_registry_entry_brings_it_up_and_outranks_the_screen() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned(); // pid 101
    h.feed(registry(77, RegistryState::Idle));
    assert!(matches!(h.p.proc, Proc::Starting { .. }), "another process's entry proves nothing");
    h.now = 0.4;
    h.feed(registry(101, RegistryState::Idle));
    assert!(matches!(h.p.proc, Proc::Live { .. }), "up at its first registry entry, not after 30 s");
    // A screen the policy misreads does not outvote the registry.
    h.screen(Activity::Working);
    assert_eq!(h.p.activity(), Activity::Idle);
    h.feed(registry(101, RegistryState::Busy));
    assert_eq!(h.p.activity(), Activity::Working);
    h.feed(registry(101, RegistryState::WaitingForDialog));
    assert!(h.p.supervision("", "").awaiting_permission, "a dialog: nothing is restarted under it");
    h.now = 10.0;
    h.feed(registry(101, RegistryState::Idle));
    assert_eq!(h.p.supervision("", "").idle_deadline, Some(wall(610.0)), "the turn ended: the idle clock runs");
    // Without an entry, the screen again.
    h.feed(Input::Agent(AgentReport::default()));
    assert_eq!(h.p.activity(), Activity::Working);
}

#[test]
fn a_crash_in_the_first_seconds_of_an_agent_with_an_unknown_screen_is_recovered() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    h.now = 0.5;
    h.feed(registry(101, RegistryState::Idle)); // no recognisable screen at all
    h.now = 2.0;
    let e = h.exit(134);
    assert_eq!(events(&e), ["error"], "a crash, not a failed start");
    assert_eq!(h.p.state(), SupervisionState::Recovering);
    let e = h.to(4.0);
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)));
    h.spawned(); // pid 102
    h.now = 4.3;
    let e = h.feed(registry(102, RegistryState::Idle));
    assert_eq!(events(&e), ["session_recovered"], "announced when it is up, not 30 s later");
}

#[test]
fn a_record_or_hook_written_after_the_spawn_brings_it_up_an_older_one_does_not() {
    let mut h = H::ready(limits());
    h.now = 20.0;
    h.exit(137);
    h.to(22.0);
    h.spawned();
    h.now = 22.5;
    // The crashed process's last record (20 s) and hook (21 s) reach the watcher now.
    let old = AgentReport {
        last_record: Some(wall(20.0)),
        hook: Some(HookSignal { state: HookState::TurnDone, at: wall(21.0) }),
        status: Status::WaitingForInput,
        ..AgentReport::default()
    };
    let e = h.feed(Input::Agent(old.clone()));
    assert!(events(&e).is_empty(), "{e:?}");
    assert!(matches!(h.p.proc, Proc::Starting { .. }));
    let e = h.feed(Input::Agent(AgentReport { last_record: Some(wall(22.4)), ..old.clone() }));
    assert_eq!(events(&e), ["session_recovered"]);

    // A hook of the new process does the same.
    h.now = 40.0;
    h.exit(137);
    h.to(42.0);
    h.spawned();
    h.now = 42.5;
    let e = h.feed(Input::Agent(AgentReport {
        hook: Some(HookSignal { state: HookState::Working, at: wall(42.3) }),
        ..old.clone()
    }));
    assert_eq!(events(&e), ["session_recovered"]);
}

// ---------------------------------------------------------------- the transcript as fallback

#[test]
fn the_transcript_tells_when_the_screen_cannot() {
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    h.feed(Input::Agent(AgentReport::status(Status::Working)));
    assert!(matches!(h.p.proc, Proc::Starting { .. }), "only the process's own screen proves it is up");
    h.to(30.0); // the fallback: nothing recognisable on screen for 30 s
    assert!(matches!(h.p.proc, Proc::Live { .. }));
    h.now = 40.0;
    h.feed(Input::Agent(AgentReport::status(Status::WaitingForInput)));
    assert_eq!(h.p.supervision("", "").idle_deadline, Some(wall(640.0)), "a turn finished");
    // The screen, once it says something, wins.
    h.screen(Activity::Working);
    h.feed(Input::Agent(AgentReport::status(Status::Idle)));
    assert_eq!(h.p.activity(), Activity::Working);
    h.feed(Input::Agent(AgentReport::status(Status::WaitingForApproval)));
    assert!(!h.p.supervision("", "").awaiting_permission);
}

#[test]
fn an_agent_whose_screen_and_registry_say_nothing_is_read_from_its_transcript_and_its_quiet_output() {
    // Issue 33: an agent that draws an unknown screen and keeps no registry.
    let mut h = H::with(limits(), AgentKind::ClaudeLike, false);
    h.spawned();
    h.output();
    h.to(30.0); // its first launch: nothing to go by but the fallback (type-ahead goes straight to it)
    h.feed(Input::Agent(AgentReport::status(Status::Working))); // a turn, told by the transcript alone
    // A crash dump while it works: deferred until the transcript shows the turn ended.
    let e = h.signal(ScreenSignal::Crash);
    assert!(matches!(event(&e, "crash_detected").kind, EventKind::CrashDetected { deferred: true }));
    h.now = 33.0;
    h.feed(Input::Agent(AgentReport::status(Status::WaitingForInput)));
    assert_eq!(h.p.state(), SupervisionState::Recovering, "recovering once the turn ended");
    h.exit(0);
    h.to(h.now + limits().recovery_retry_delay.as_secs_f64());
    h.spawned(); // --resume: it draws its screen and waits, writing nothing
    let (d, _) = h.type_keys("after the crash\r");
    assert_eq!(d, Delivery::Queued, "kept until it is up");
    h.output();
    assert!(events(&h.to(h.now + 0.9)).is_empty(), "still drawing, as far as anyone knows");
    let e = h.to(h.now + 0.1);
    assert_eq!(events(&e), ["session_recovered"], "up once its output went quiet, not after 30 s");
    assert_eq!(typed(&e).concat(), "after the crash⏎");
}

#[test]
fn transcript_status_during_a_resume_neither_brings_it_up_nor_hides_a_refusal_ec_007() {
    let mut h = H::ready(limits());
    rss(&mut h, 5000);
    h.exit(143);
    h.spawned(); // --resume s1
    // The old process's last records reach the transcript watcher now.
    let e = h.feed(Input::Agent(AgentReport::status(Status::WaitingForInput)));
    assert!(events(&e).is_empty(), "no session_ready before the process shows its prompt: {e:?}");
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert!(e.contains(&Effect::ArchiveCorrupted { session_id: sid("s1") }), "{e:#?}");
    assert_eq!(spawn_of(&e), Some((&sid("fresh-1"), &Launch::Fresh)));
    assert!(!events(&e).contains(&"error"));
    let e = h.come_up();
    assert_eq!(events(&e), ["session_ready"]);
    assert!(matches!(event(&e, "session_ready").kind, EventKind::SessionReady { status: ReadyStatus::New, .. }));
}

#[test]
fn a_resume_refused_after_it_was_taken_as_up_still_starts_fresh_ec_007() {
    let mut h = H::ready(limits());
    rss(&mut h, 5000);
    h.exit(143);
    h.spawned();
    h.to(30.0); // taken as up by the fallback timer
    assert!(matches!(h.p.proc, Proc::Live { .. }));
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert!(e.contains(&Effect::ArchiveCorrupted { session_id: sid("s1") }), "{e:#?}");
    assert_eq!(spawn_of(&e), Some((&sid("fresh-1"), &Launch::Fresh)));

    // A fresh launch that later exits with an error is an ordinary crash, whatever its
    // screen said.
    let mut h = H::ready(limits());
    h.signal(ScreenSignal::ResumeRejected);
    let e = h.exit(1);
    assert_eq!(events(&e), ["error"]);
    assert!(!e.iter().any(|e| matches!(e, Effect::ArchiveCorrupted { .. })));
}

#[test]
fn the_next_deadline_is_the_earliest_timer() {
    let mut h = H::ready(limits());
    assert_eq!(h.p.next_deadline(), Some(mono(30.0)), "the RSS check comes first");
    h.to(30.0);
    assert_eq!(h.p.next_deadline(), Some(mono(60.0)));
    h.exit(137);
    assert_eq!(h.p.next_deadline(), Some(mono(32.0)), "the retry");
}

// ---------------------------------------------------------------- limits changed at run time

fn set_limits(h: &mut H, l: Limits) -> Vec<Effect> {
    h.feed(Input::Limits(Box::new(l)))
}

#[test]
fn a_new_idle_timeout_moves_the_running_timer_from_its_start() {
    let mut h = H::ready(limits());
    h.now = 1000.0;
    h.turn();
    assert_eq!(h.p.supervision("", "").idle_deadline, Some(wall(1600.0)));
    h.now = 1100.0;
    let e = set_limits(&mut h, Limits { idle_timeout: Duration::from_secs(120), ..limits() });
    assert!(events(&e).is_empty() && signals(&e).is_empty(), "not due yet");
    assert_eq!(h.p.supervision("", "").idle_deadline, Some(wall(1120.0)), "counted from the turn's end");
    assert!(signals(&h.to(1119.0)).is_empty());
    assert_eq!(signals(&h.to(1120.0)), [Sig::Term], "suspended on the new timeout");
}

#[test]
fn a_new_idle_timeout_already_passed_suspends_at_once() {
    let mut h = H::ready(limits());
    h.turn();
    h.now = 300.0;
    let e = set_limits(&mut h, Limits { idle_timeout: Duration::from_secs(60), ..limits() });
    assert_eq!(signals(&e), [Sig::Term]);
    let e = h.exit(143);
    assert_eq!(
        event(&e, "session_suspended").message(),
        Some("Session suspended after 60 seconds idle. Your next message resumes it.")
    );
}

#[test]
fn a_shorter_duration_limit_warns_or_ends_on_the_spot_a_longer_one_rearms_the_warning() {
    // Warned at 90 % of 4 h, then the limit is raised: the warning comes again later.
    let mut h = H::ready(limits());
    assert_eq!(events(&h.to(12_960.0)), ["session_warning"]);
    h.now = 13_000.0;
    let e = set_limits(&mut h, Limits { max_duration: Duration::from_secs(8 * 3600), ..limits() });
    assert!(events(&e).is_empty());
    assert_eq!(h.p.supervision("", "").duration_deadline, Some(wall(28_800.0)));
    assert!(events(&h.to(25_919.0)).is_empty());
    assert_eq!(events(&h.to(25_960.0)), ["session_warning"], "on the first check past 90 % of the new limit");

    // Lowered below the time already run: ends now (idle: no grace needed).
    let mut h = H::ready(limits());
    h.now = 3600.0;
    let e = set_limits(&mut h, Limits { max_duration: Duration::from_secs(1800), ..limits() });
    assert_eq!(signals(&e), [Sig::Term], "ended at once, not at the next minute's check");
    let e = h.exit(143);
    assert_eq!(event(&e, "session_terminated").message(), Some("Session ended (30-minute limit reached)."));

    // Lowered into the warning window: warned now.
    let mut h = H::ready(limits());
    h.now = 3300.0;
    let e = set_limits(&mut h, Limits { max_duration: Duration::from_secs(3600), ..limits() });
    assert_eq!(events(&e), ["session_warning"]);
    assert!(signals(&e).is_empty());
}

#[test]
fn a_raised_duration_limit_cancels_the_grace_of_a_turn_in_flight() {
    let mut h = H::ready(short_duration());
    h.screen(Activity::Working);
    h.to(100.0);
    h.now = 110.0;
    set_limits(&mut h, Limits { max_duration: Duration::from_secs(1000), ..short_duration() });
    assert!(writes(&h.to(130.0)).is_empty() && signals(&h.to(140.0)).is_empty(), "no interrupt, no stop");
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn new_check_intervals_apply_from_now_and_a_new_rss_limit_is_measured_at_once() {
    let mut h = H::ready(limits());
    h.now = 5.0;
    let e = set_limits(&mut h, Limits { max_rss_mb: 1024, rss_check: Duration::from_secs(2), ..limits() });
    assert_eq!(e, [Effect::MeasureRss], "measured against the new limit now");
    assert_eq!(h.to(7.0), [Effect::MeasureRss], "then every 2 s");
    let e = rss(&mut h, 2000);
    assert_eq!(events(&e), ["session_restarting"], "over the new limit");
}

mod budgets;
