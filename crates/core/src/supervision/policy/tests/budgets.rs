//! Issue 36: budgets in a supervised session, on the injected instants.

use super::*;
use crate::supervision::budget::Usd;
use crate::supervision::view::SuspendedReason;

fn budget(usd: f64) -> Limits {
    Limits { budget_usd: Some(Usd(usd)), ..limits() }
}

fn warnings(e: &[Effect]) -> Vec<String> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Emit(SupervisionEvent { kind: EventKind::SessionWarning { reason, message, .. }, .. })
                if reason == "budget" =>
            {
                Some(message.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn warns_once_at_80_percent() {
    let mut h = H::ready(budget(5.0));
    assert!(warnings(&h.feed(Input::Spend(3.0))).is_empty());
    assert_eq!(warnings(&h.feed(Input::Spend(4.0))), ["$4.00 of this session's budget of $5.00 is spent (80 %)."]);
    assert!(warnings(&h.feed(Input::Spend(4.5))).is_empty(), "once");
    let s = h.p.supervision("", "");
    assert_eq!((s.budget_usd, s.spent_usd), (Some(5.0), Some(4.5)));
    assert_eq!(h.p.state(), SupervisionState::Running);
}

#[test]
fn the_whole_budget_spent_mid_turn_suspends_at_the_next_idle_moment_only() {
    let mut h = H::ready(budget(1.0));
    h.screen(Activity::Working);
    let e = h.feed(Input::Spend(1.2));
    assert_eq!(warnings(&e).len(), 1, "{e:#?}");
    assert!(signals(&e).is_empty(), "never mid-turn");
    assert!(signals(&h.to(50.0)).is_empty());
    h.screen(Activity::Permission);
    assert!(signals(&h.to(60.0)).is_empty(), "nor at a dialog");
    let e = h.screen(Activity::Idle);
    assert!(matches!(&event(&e, "mode_change").kind, EventKind::ModeChange { mode, .. } if mode == "suspended"));
    assert_eq!(signals(&e), [Sig::Term]);
    let e = h.exit(143);
    let EventKind::SessionSuspended { message, reason } = &event(&e, "session_suspended").kind else { panic!() };
    assert_eq!(reason, "budget");
    assert_eq!(
        message,
        "Suspended: $1.20 of this session's budget of $1.00 is spent. Raise the budget to continue; nothing is lost."
    );
    assert_eq!(h.p.supervision("", "").suspended_reason, Some(SuspendedReason::Budget));
}

#[test]
fn a_message_to_a_session_over_budget_is_kept_until_the_budget_is_raised_then_resumes() {
    let mut h = H::ready(budget(1.0));
    h.feed(Input::Spend(1.0));
    h.exit(143);
    assert_eq!(h.p.state(), SupervisionState::Suspended);
    let (d, e) = h.type_keys("more please\r");
    assert_eq!(d, Delivery::Queued);
    assert!(spawn_of(&e).is_none(), "the budget holds it");
    // Continue (raise the budget): this session's own budget, then resume.
    h.feed(Input::Budget(Some(3.0)));
    assert_eq!(h.p.supervision("", "").budget_usd, Some(3.0));
    let e = h.feed(Input::Resume);
    assert_eq!(spawn_of(&e), Some((&sid("s1"), &Launch::Resume)), "with --resume, as an idle one");
    let e = h.come_up();
    assert_eq!(typed(&e), ["more please⏎"]);
    assert_eq!(h.p.state(), SupervisionState::Running);
    assert_eq!(h.p.supervision("", "").suspended_reason, None);
}

#[test]
fn the_fleet_budget_suspends_an_idle_session_and_lifts_when_it_is_no_longer_reached() {
    let mut h = H::ready(limits());
    h.screen(Activity::Working);
    assert!(signals(&h.feed(Input::FleetBudget(Some((20.5, 20.0))))).is_empty());
    assert_eq!(signals(&h.screen(Activity::Idle)), [Sig::Term]);
    let e = h.exit(143);
    let EventKind::SessionSuspended { message, reason } = &event(&e, "session_suspended").kind else { panic!() };
    assert_eq!(reason, "budget");
    assert!(message.contains("today's budget for all sessions of $20.00"), "{message}");
    h.feed(Input::FleetBudget(None));
    let (d, e) = h.type_keys("go\r");
    assert_eq!(d, Delivery::Queued);
    assert!(spawn_of(&e).is_some(), "no budget holds it now: the message resumes it");
}

#[test]
fn a_lower_budget_in_the_settings_reaches_at_once_and_no_budget_never_suspends() {
    let mut h = H::ready(limits());
    h.feed(Input::Spend(100.0));
    assert_eq!(h.p.state(), SupervisionState::Running, "no budget");
    let e = h.feed(Input::Limits(Box::new(budget(50.0))));
    assert_eq!(warnings(&e).len(), 1);
    assert_eq!(signals(&e), [Sig::Term], "idle: suspended at once");
}

#[test]
fn the_idle_timer_still_suspends_for_idleness_within_budget() {
    let mut h = H::ready(budget(10.0));
    h.turn();
    h.feed(Input::Spend(1.0));
    h.to(600.0);
    h.exit(143);
    assert_eq!(h.p.supervision("", "").suspended_reason, Some(SuspendedReason::Idle));
}
