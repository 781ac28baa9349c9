//! Budgets (issue 36): a daily budget for the fleet and a budget per supervised session,
//! in US dollars. Pure: the spend observed comes in, what to say and whether to suspend
//! goes out; the wiring measures the spend (the roster's per-row cost) and the policy
//! suspends at the session's next idle moment, never mid-turn.
//!
//! - [`Meter`]: one budget and the spend seen against it: a warning once at
//!   [`WARN_PERCENT`], "reached" once at 100 %; raising the limit above the spend clears it.
//! - [`SessionBudget`]: a supervised session's own budget (the settings' `budgetUsd`, or
//!   the one given to this session: `mimesis run --budget-usd`, "Continue (raise the
//!   budget)") and whether the fleet's daily budget is reached.
//! - [`FleetBudget`]: the fleet's spend of the local day against `dailyBudgetUsd`; a new
//!   day starts it again.

use std::fmt;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::clock::Mono;
use crate::supervision::turn_end::{TurnEnd, TurnVerdict};

/// A sum in US dollars, as the settings document writes it (a JSON number: a newtype is
/// its value in serde).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Usd(pub f64);

// Budgets are validated ([`check_usd`]) before use: never NaN where compared.
impl Eq for Usd {}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&dollars(self.0))
    }
}

/// The largest budget taken: anything above is a typo, not a budget.
pub const MAX_BUDGET_USD: f64 = 1_000_000.0;
/// The share of a budget at which the warning is given.
pub const WARN_PERCENT: f64 = 80.0;

/// `$4.00`, `$0.25`, `$12,345.60`; under a cent: `$0.004`.
pub fn dollars(v: f64) -> String {
    if v > 0.0 && v < 0.01 {
        return format!("${}", format!("{v:.4}").trim_end_matches('0'));
    }
    let cents = (v * 100.0).round() as i64;
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{:02}", cents % 100)
}

/// Why a budget cannot be taken, in a sentence, or `Ok`.
pub fn check_usd(v: f64) -> Result<Usd, String> {
    if v.is_nan() || v.is_infinite() {
        return Err("must be a number of dollars".into());
    }
    if v <= 0.0 {
        return Err("must be more than $0 (leave it empty for no budget)".into());
    }
    if v > MAX_BUDGET_USD {
        return Err(format!("must be at most {}", dollars(MAX_BUDGET_USD)));
    }
    Ok(Usd(v))
}

/// A budget as typed on a command line: `5`, `0.5`, `$20`.
pub fn parse_usd(s: &str) -> Result<Usd, String> {
    let t = s.trim();
    let t = t.strip_prefix('$').unwrap_or(t);
    match t.parse::<f64>() {
        Ok(v) => check_usd(v).map_err(|e| format!("the budget {s:?} {e}")),
        Err(_) => Err(format!("the budget {s:?} is not a number of dollars (for example 5 or 0.50)")),
    }
}

/// Which budget a warning or a suspension is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Session,
    /// The fleet's daily budget.
    Fleet,
}

/// What a budget says as the spend grows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Crossed {
    /// [`WARN_PERCENT`] of the budget is spent (said once).
    Warn { spent: f64, limit: f64 },
    /// All of it (said once): suspend at the next idle moment.
    Reached { spent: f64, limit: f64 },
}

/// One budget and the spend seen against it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meter {
    limit: Option<f64>,
    spent: f64,
    warned: bool,
    reached: bool,
}

impl Meter {
    pub fn limit(&self) -> Option<f64> {
        self.limit
    }

    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// The whole budget is spent (until it is raised).
    pub fn reached(&self) -> bool {
        self.reached
    }

    /// The spend so far (a total: it never goes down; a smaller figure, or one that is
    /// not a number, is ignored). Says each threshold once.
    pub fn observe(&mut self, spent: f64) -> Option<Crossed> {
        if spent.is_finite() && spent > self.spent {
            self.spent = spent;
        }
        self.crossed()
    }

    /// A new limit (`None`: no budget). A limit above the spend clears "reached"; above
    /// the warning's share, the warning too, so both are said again as the spend grows.
    pub fn set_limit(&mut self, limit: Option<f64>) -> Option<Crossed> {
        self.limit = limit.filter(|l| l.is_finite() && *l > 0.0);
        let Some(limit) = self.limit else {
            (self.warned, self.reached) = (false, false);
            return None;
        };
        if self.spent < limit {
            self.reached = false;
        }
        if self.spent * 100.0 < limit * WARN_PERCENT {
            self.warned = false;
        }
        self.crossed()
    }

    fn crossed(&mut self) -> Option<Crossed> {
        let limit = self.limit?;
        let spent = self.spent;
        if spent >= limit && !self.reached {
            (self.reached, self.warned) = (true, true);
            return Some(Crossed::Reached { spent, limit });
        }
        if spent * 100.0 >= limit * WARN_PERCENT && !self.warned {
            self.warned = true;
            return Some(Crossed::Warn { spent, limit });
        }
        None
    }
}

/// A supervised session's budgets: its own, and whether the fleet's is reached.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionBudget {
    meter: Meter,
    /// The settings' `budgetUsd`.
    default: Option<f64>,
    /// Given to this session (`--budget-usd`, or raised by the user): above the settings'.
    own: Option<f64>,
    /// The fleet's daily budget is reached: its spend and limit.
    fleet: Option<(f64, f64)>,
}

impl SessionBudget {
    /// The settings' per-session budget.
    pub fn set_default(&mut self, usd: Option<f64>) -> Option<Crossed> {
        self.default = usd;
        self.meter.set_limit(self.own.or(self.default))
    }

    /// This session's own budget (`None`: the settings' again).
    pub fn set_own(&mut self, usd: Option<f64>) -> Option<Crossed> {
        self.own = usd;
        self.meter.set_limit(self.own.or(self.default))
    }

    /// The session's spend so far.
    pub fn observe(&mut self, spent: f64) -> Option<Crossed> {
        self.meter.observe(spent)
    }

    /// Whether the fleet's daily budget is reached (the wiring's [`FleetBudget`]): its
    /// spend and limit, or `None`.
    pub fn set_fleet(&mut self, reached: Option<(f64, f64)>) {
        self.fleet = reached;
    }

    /// The budget in force and the spend, for the row's `supervision`.
    pub fn limit(&self) -> Option<f64> {
        self.meter.limit()
    }

    pub fn spent(&self) -> f64 {
        self.meter.spent()
    }

    /// The budget that stops the session, if one is reached (its own first), with its
    /// spend and limit.
    pub fn exhausted(&self) -> Option<(Scope, f64, f64)> {
        match (self.meter.reached(), self.meter.limit(), self.fleet) {
            (true, Some(limit), _) => Some((Scope::Session, self.meter.spent(), limit)),
            (_, _, Some((spent, limit))) => Some((Scope::Fleet, spent, limit)),
            _ => None,
        }
    }
}

/// The fleet's spend of the local day against its daily budget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetBudget {
    day: Option<NaiveDate>,
    meter: Meter,
}

impl FleetBudget {
    pub fn set_limit(&mut self, usd: Option<f64>) -> Option<Crossed> {
        self.meter.set_limit(usd)
    }

    /// The spend of `day` (the local day) so far. A new day starts from nothing.
    pub fn observe(&mut self, day: NaiveDate, spent: f64) -> Option<Crossed> {
        if self.day != Some(day) {
            self.day = Some(day);
            let limit = self.meter.limit();
            self.meter = Meter::default();
            self.meter.set_limit(limit);
        }
        self.meter.observe(spent)
    }

    pub fn reached(&self) -> bool {
        self.meter.reached()
    }

    pub fn limit(&self) -> Option<f64> {
        self.meter.limit()
    }

    pub fn spent(&self) -> f64 {
        self.meter.spent()
    }
}

/// A session Mimesis does not supervise in a PTY: an external one (the notification only)
/// or one of Claude Code's background sessions (stopped at the end of its turn through the
/// service's own `claude stop`, the way its duration limit is). The end of the turn is the
/// status's and the transcript's ([`TurnEnd`]): a stop as soon as the service's job says
/// idle killed the worker before it wrote the turn's last words.
#[derive(Clone, Debug, PartialEq)]
pub struct RowBudget {
    budget: SessionBudget,
    background: bool,
    /// `claude stop` was asked for since the budget was reached.
    stopped: bool,
    /// The service runs a worker for it.
    live: bool,
    turn: TurnEnd,
}

/// What to do about a [`RowBudget`]'s session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowEffect {
    /// Tell the user (the session's budget; the fleet's is said once by [`FleetBudget`]).
    Say(Crossed),
    /// `claude stop` (a background session, at the end of its turn). `written`: the
    /// transcript showed the turn's last words; false when it still did not
    /// [`TRANSCRIPT_GRACE`](crate::supervision::turn_end::TRANSCRIPT_GRACE) after the status
    /// said the turn was over.
    Stop { scope: Scope, written: bool },
}

impl RowBudget {
    pub fn new(background: bool, budget_usd: Option<f64>) -> RowBudget {
        let mut budget = SessionBudget::default();
        budget.set_default(budget_usd);
        RowBudget { budget, background, stopped: false, live: false, turn: TurnEnd::default() }
    }

    /// The settings' per-session budget changed.
    pub fn set_default(&mut self, usd: Option<f64>) -> Option<Crossed> {
        self.budget.set_default(usd)
    }

    /// The fleet's daily budget is reached (its spend and limit), or not.
    pub fn set_fleet(&mut self, reached: Option<(f64, f64)>) {
        self.budget.set_fleet(reached);
    }

    /// What the row says now: its spend so far, whether a turn is under way by its status,
    /// and whether the session has a process (none: nothing to stop).
    pub fn observe(&mut self, spent: f64, busy: bool, live: bool, now: Mono) -> Vec<RowEffect> {
        let mut out: Vec<RowEffect> = self.budget.observe(spent).map(RowEffect::Say).into_iter().collect();
        self.live = live;
        let turn = self.turn.status(busy, now);
        self.stop_if_due(turn, &mut out);
        out
    }

    /// What the session's transcript shows ([`crate::status::turn_written`]): asked by the
    /// driver after each change of the row while [`RowBudget::wants_transcript`].
    pub fn transcript(&mut self, written: bool, now: Mono) -> Vec<RowEffect> {
        let turn = self.turn.transcript(written, now);
        let mut out = Vec::new();
        self.stop_if_due(turn, &mut out);
        out
    }

    /// Whatever fell due at `now` (the transcript's grace).
    pub fn tick(&mut self, now: Mono) -> Vec<RowEffect> {
        let turn = self.turn.verdict(now);
        let mut out = Vec::new();
        self.stop_if_due(turn, &mut out);
        out
    }

    /// A stop waits for the transcript to show the turn's end.
    pub fn wants_transcript(&self) -> bool {
        self.due().is_some() && self.turn.waiting_for_transcript()
    }

    /// When [`RowBudget::tick`] has something to do.
    pub fn next_deadline(&self) -> Option<Mono> {
        self.due().and(self.turn.deadline())
    }

    /// The scope of a stop still to be made at the turn's end.
    fn due(&self) -> Option<Scope> {
        let (scope, ..) = self.budget.exhausted()?;
        (self.background && self.live && !self.stopped).then_some(scope)
    }

    fn stop_if_due(&mut self, turn: TurnVerdict, out: &mut Vec<RowEffect>) {
        if self.budget.exhausted().is_none() {
            self.stopped = false;
            return;
        }
        if let Some(scope) = self.due()
            && turn.over()
        {
            self.stopped = true;
            out.push(RowEffect::Stop { scope, written: turn == TurnVerdict::Over });
        }
    }
}

/// The sentences of budgets.
pub mod wording {
    use super::{Scope, dollars};

    fn of(scope: Scope) -> &'static str {
        match scope {
            Scope::Session => "this session's budget",
            Scope::Fleet => "today's budget for all sessions",
        }
    }

    /// "$4.00 of this session's budget of $5.00 is spent (80 %)."
    pub fn warning(scope: Scope, spent: f64, limit: f64) -> String {
        let pct = (spent / limit * 100.0).floor();
        format!("{} of {} of {} is spent ({pct} %).", dollars(spent), of(scope), dollars(limit))
    }

    /// The suspension's sentence.
    pub fn suspended(scope: Scope, spent: f64, limit: f64) -> String {
        format!(
            "Suspended: {} of {} of {} is spent. Raise the budget to continue; nothing is lost.",
            dollars(spent),
            of(scope),
            dollars(limit)
        )
    }

    /// A background session stopped over its budget although its transcript did not show
    /// its turn's last words `grace` after its status said the turn was over.
    pub fn stopped_unwritten(scope: Scope, grace: std::time::Duration) -> String {
        format!(
            "Stopped over {}: its turn's last words were not in its transcript {} s after the turn ended, \
             and may be missing (Respawn resumes it).",
            of(scope),
            grace.as_secs()
        )
    }

    /// For an external session (watched, not supervised): nothing is stopped.
    pub fn reached_external(scope: Scope, spent: f64, limit: f64) -> String {
        format!("{} of {} of {} is spent.", dollars(spent), of(scope), dollars(limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervision::turn_end::TRANSCRIPT_GRACE;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
    }

    #[test]
    fn warns_once_at_80_percent_then_reaches_once() {
        let mut m = Meter::default();
        assert_eq!(m.set_limit(Some(5.0)), None);
        assert_eq!(m.observe(3.9), None);
        assert_eq!(m.observe(4.0), Some(Crossed::Warn { spent: 4.0, limit: 5.0 }));
        assert_eq!(m.observe(4.5), None, "the warning is said once");
        assert!(!m.reached());
        assert_eq!(m.observe(5.0), Some(Crossed::Reached { spent: 5.0, limit: 5.0 }));
        assert_eq!(m.observe(6.0), None, "reached is said once");
        assert!(m.reached());
    }

    #[test]
    fn a_jump_past_the_whole_budget_says_reached_not_the_warning() {
        let mut m = Meter::default();
        m.set_limit(Some(1.0));
        assert_eq!(m.observe(2.0), Some(Crossed::Reached { spent: 2.0, limit: 1.0 }));
        assert_eq!(m.observe(2.5), None);
    }

    #[test]
    fn spend_never_goes_down_and_junk_is_ignored() {
        let mut m = Meter::default();
        m.set_limit(Some(10.0));
        m.observe(5.0);
        m.observe(1.0);
        m.observe(f64::NAN);
        m.observe(f64::INFINITY);
        assert_eq!(m.spent(), 5.0);
    }

    #[test]
    fn raising_the_budget_clears_it_and_says_it_again_later() {
        let mut m = Meter::default();
        m.set_limit(Some(1.0));
        m.observe(1.2);
        assert!(m.reached());
        assert_eq!(m.set_limit(Some(10.0)), None);
        assert!(!m.reached());
        assert_eq!(m.observe(8.0), Some(Crossed::Warn { spent: 8.0, limit: 10.0 }));
        assert_eq!(m.observe(10.0), Some(Crossed::Reached { spent: 10.0, limit: 10.0 }));
        // Raised, but not above the spend: still reached, said at once.
        let mut m = Meter::default();
        m.set_limit(Some(1.0));
        m.observe(3.0);
        assert_eq!(m.set_limit(Some(2.0)), None, "already said");
        assert!(m.reached());
        // No budget at all clears everything.
        m.set_limit(None);
        assert!(!m.reached());
        assert_eq!(m.observe(100.0), None);
    }

    #[test]
    fn lowering_the_budget_below_the_spend_reaches_it_at_once() {
        let mut m = Meter::default();
        m.set_limit(Some(10.0));
        m.observe(3.0);
        assert_eq!(m.set_limit(Some(2.0)), Some(Crossed::Reached { spent: 3.0, limit: 2.0 }));
    }

    #[test]
    fn a_session_s_own_budget_is_above_the_settings_and_the_fleet_comes_second() {
        let mut b = SessionBudget::default();
        b.set_default(Some(1.0));
        assert_eq!(b.observe(1.5), Some(Crossed::Reached { spent: 1.5, limit: 1.0 }));
        assert_eq!(b.exhausted(), Some((Scope::Session, 1.5, 1.0)));
        // Continue (raise the budget): this session's own.
        assert_eq!(b.set_own(Some(3.0)), None);
        assert_eq!((b.exhausted(), b.limit()), (None, Some(3.0)));
        // The settings change: the session keeps its own.
        b.set_default(Some(0.5));
        assert_eq!((b.exhausted(), b.limit()), (None, Some(3.0)));
        b.set_fleet(Some((20.0, 20.0)));
        assert_eq!(b.exhausted(), Some((Scope::Fleet, 20.0, 20.0)));
        b.observe(3.0);
        assert_eq!(b.exhausted(), Some((Scope::Session, 3.0, 3.0)), "its own budget is named first");
        b.set_fleet(None);
        b.set_own(None);
        assert_eq!((b.exhausted(), b.limit()), (Some((Scope::Session, 3.0, 0.5)), Some(0.5)));
    }

    #[test]
    fn the_fleet_budget_starts_again_each_local_day() {
        let mut f = FleetBudget::default();
        f.set_limit(Some(20.0));
        assert_eq!(f.observe(day(28), 16.0), Some(Crossed::Warn { spent: 16.0, limit: 20.0 }));
        assert_eq!(f.observe(day(28), 21.0), Some(Crossed::Reached { spent: 21.0, limit: 20.0 }));
        assert!(f.reached());
        assert_eq!(f.observe(day(29), 0.5), None, "a new day");
        assert!(!f.reached());
        assert_eq!(f.spent(), 0.5);
        assert_eq!(f.limit(), Some(20.0));
        assert_eq!(f.observe(day(29), 16.5), Some(Crossed::Warn { spent: 16.5, limit: 20.0 }));
    }

    fn at(ms: u64) -> Mono {
        Mono::from_millis(ms)
    }

    fn stop(scope: Scope) -> RowEffect {
        RowEffect::Stop { scope, written: true }
    }

    #[test]
    fn an_external_session_is_only_told_and_a_background_one_is_stopped_once_at_its_turns_end() {
        let mut ext = RowBudget::new(false, Some(1.0));
        assert_eq!(ext.observe(0.9, true, true, at(0)), [RowEffect::Say(Crossed::Warn { spent: 0.9, limit: 1.0 })]);
        assert_eq!(ext.observe(1.1, false, true, at(1)), [RowEffect::Say(Crossed::Reached { spent: 1.1, limit: 1.0 })]);
        assert!(!ext.wants_transcript());
        assert!(ext.transcript(true, at(2)).is_empty(), "never stopped");
        let mut bg = RowBudget::new(true, Some(1.0));
        assert_eq!(bg.observe(1.1, true, true, at(0)), [RowEffect::Say(Crossed::Reached { spent: 1.1, limit: 1.0 })]);
        assert!(bg.observe(1.1, true, true, at(1)).is_empty(), "not mid-turn");
        assert!(!bg.wants_transcript());
        assert!(bg.observe(1.1, false, true, at(2)).is_empty(), "the status says idle: the transcript is asked");
        assert!(bg.wants_transcript());
        assert_eq!(bg.transcript(true, at(3)), [stop(Scope::Session)]);
        assert!(!bg.wants_transcript());
        assert!(bg.observe(1.1, false, true, at(4)).is_empty(), "once");
        assert!(bg.transcript(true, at(5)).is_empty(), "once");
        assert!(bg.observe(1.1, false, false, at(6)).is_empty());
        // The fleet's budget stops it too, once more after the budget was raised.
        let mut bg = RowBudget::new(true, None);
        bg.set_fleet(Some((20.0, 20.0)));
        assert!(bg.observe(0.5, false, true, at(0)).is_empty());
        assert_eq!(bg.transcript(true, at(1)), [stop(Scope::Fleet)]);
        bg.set_fleet(None);
        assert!(bg.observe(0.5, false, true, at(2)).is_empty());
        assert!(!bg.wants_transcript());
        bg.set_fleet(Some((30.0, 30.0)));
        assert_eq!(bg.observe(0.5, false, true, at(3)), [stop(Scope::Fleet)], "the transcript still shows the end");
        assert_eq!(bg.set_default(Some(0.4)), Some(Crossed::Reached { spent: 0.5, limit: 0.4 }));
    }

    #[test]
    fn a_background_session_idle_by_its_job_but_mid_turn_by_its_transcript_is_stopped_when_the_transcript_shows_the_end()
     {
        let mut bg = RowBudget::new(true, Some(1.0));
        assert_eq!(bg.observe(1.1, true, true, at(0)), [RowEffect::Say(Crossed::Reached { spent: 1.1, limit: 1.0 })]);
        // The service's job says idle; the transcript ends with the tool results sent last.
        assert!(bg.observe(1.1, false, true, at(1_000)).is_empty());
        assert!(bg.transcript(false, at(1_010)).is_empty(), "its last words are not written yet");
        assert_eq!(bg.next_deadline(), Some(at(1_000).plus(TRANSCRIPT_GRACE)));
        assert!(bg.tick(at(1_700)).is_empty());
        assert!(bg.observe(1.1, false, true, at(1_700)).is_empty(), "another change of the row (its cost)");
        assert!(bg.wants_transcript());
        assert_eq!(bg.transcript(true, at(1_710)), [stop(Scope::Session)], "the closing text is written");
        assert_eq!(bg.next_deadline(), None);
        assert!(bg.tick(at(60_000)).is_empty());
    }

    #[test]
    fn a_transcript_that_never_shows_the_turns_end_is_waited_for_the_grace_then_the_stop_says_so() {
        let mut bg = RowBudget::new(true, None);
        bg.set_fleet(Some((20.0, 20.0)));
        assert!(bg.observe(0.5, false, true, at(5_000)).is_empty());
        assert!(bg.transcript(false, at(5_001)).is_empty());
        let until = at(5_000).plus(TRANSCRIPT_GRACE);
        assert_eq!(bg.next_deadline(), Some(until));
        assert!(bg.tick(at(4_999).plus(TRANSCRIPT_GRACE)).is_empty());
        assert_eq!(bg.tick(until), [RowEffect::Stop { scope: Scope::Fleet, written: false }]);
        assert_eq!(bg.next_deadline(), None);
        assert!(bg.tick(until.plus(TRANSCRIPT_GRACE)).is_empty(), "once");
        assert_eq!(
            wording::stopped_unwritten(Scope::Fleet, TRANSCRIPT_GRACE),
            "Stopped over today's budget for all sessions: its turn's last words were not in its transcript 10 s \
             after the turn ended, and may be missing (Respawn resumes it)."
        );
        // A turn that starts again before the grace ends: no stop mid-turn.
        let mut bg = RowBudget::new(true, Some(1.0));
        bg.observe(1.1, false, true, at(0));
        bg.observe(1.1, true, true, at(2_000));
        assert_eq!(bg.next_deadline(), None);
        assert!(bg.tick(at(0).plus(TRANSCRIPT_GRACE)).is_empty());
    }

    #[test]
    fn bad_budgets_are_refused_with_a_sentence() {
        for bad in ["-1", "0", "NaN", "inf", "1e9", "five", "", "$-3"] {
            let e = parse_usd(bad).unwrap_err();
            assert!(e.starts_with("the budget"), "{bad}: {e}");
        }
        assert!(parse_usd("1e9").unwrap_err().contains("at most $1,000,000.00"));
        assert!(parse_usd("-1").unwrap_err().contains("more than $0"));
        assert_eq!(parse_usd("$2.50"), Ok(Usd(2.5)));
        assert_eq!(parse_usd(" 0.01 "), Ok(Usd(0.01)));
        assert_eq!(check_usd(f64::NAN), Err("must be a number of dollars".into()));
    }

    #[test]
    fn the_settings_refuse_bad_budgets_field_by_field() {
        use crate::supervision::limits::Limits;
        let l = Limits { budget_usd: Some(Usd(-1.0)), daily_budget_usd: Some(Usd(2e6)), ..Limits::default() };
        let e = l.validate();
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].field, "limits.budgetUsd");
        assert_eq!(e[0].message, "must be more than $0 (leave it empty for no budget)");
        assert_eq!(e[1].field, "limits.dailyBudgetUsd");
        assert_eq!(e[1].message, "must be at most $1,000,000.00");
        let nan: Limits = serde_json::from_str(r#"{"budgetUsd": 1e400}"#).unwrap_or_default();
        assert!(nan.budget_usd.is_none_or(|u| check_usd(u.0).is_err()));
        let ok: Limits = serde_json::from_str(r#"{"budgetUsd": 2.5, "dailyBudgetUsd": null}"#).unwrap();
        assert_eq!((ok.budget_usd, ok.daily_budget_usd), (Some(Usd(2.5)), None));
        assert!(ok.validate().is_empty());
    }

    #[test]
    fn dollars_read_naturally() {
        assert_eq!(dollars(4.0), "$4.00");
        assert_eq!(dollars(12345.6), "$12,345.60");
        assert_eq!(dollars(0.004), "$0.004");
        assert_eq!(dollars(0.0), "$0.00");
        assert_eq!(
            wording::warning(Scope::Session, 4.0, 5.0),
            "$4.00 of this session's budget of $5.00 is spent (80 %)."
        );
    }
}
