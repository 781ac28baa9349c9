//! The driver of budgets (issue 36). The rules are `mimesis_core::supervision::budget`;
//! this task follows the roster's per-row cost (what each transcript's tokens cost at the
//! vendored prices, or what Claude Code says it billed) and:
//! - a session supervised here: its spend goes to its policy, which warns at 80 % and
//!   suspends it at its next idle moment at 100 %;
//! - one of Claude Code's background sessions on this machine: the warning, then at the
//!   end of its turn Claude Code's own `claude stop` (as its duration limit does): once its
//!   status says the turn is over and its transcript shows the turn's last words written
//!   (the engine's [`mimesis_watch::Engine::turn_written`], asked after each change of the
//!   row), or a grace later without them, said;
//! - any other session (external): the warning and the notification only;
//! - the fleet (where every session is followed: the app): today's spend (local day, `TZ`
//!   respected) against `dailyBudgetUsd`; reached, every supervised and background
//!   session is suspended at its next idle moment, and the user is told once.
//!
//! Today's spend is what the transcripts said of today when the budget was first needed
//! (one cost report), plus what every row spent since (its cost now less its cost then);
//! at midnight it starts from nothing, every row's cost then its new base. Midnight is a
//! deadline on the injected clock ([`day::Day`]).

mod day;

use std::collections::{BTreeSet, HashMap};

use chrono::{Local, NaiveDate};
use mimesis_core::clock::{Mono, Timestamp};
use mimesis_core::ids::{JobId, SessionId};
use mimesis_core::job::SessionKind;
use mimesis_core::session::{Cost, TrackedSession};
use mimesis_core::spend::{CostQuery, GroupBy};
use mimesis_core::status::Status;
use mimesis_core::supervision::budget::{Crossed, FleetBudget, RowBudget, RowEffect, Scope, wording};
use mimesis_core::supervision::turn_end::TRANSCRIPT_GRACE;
use mimesis_core::supervision::{EventKind, SupervisionEvent};
use mimesis_supervise::Supervisor;
use tokio::sync::mpsc;

use crate::Mimesis;
use crate::background::Verb;
use crate::roster_rows::{self, Rows, Seen, Slim, wake_at};

/// What budgets need of a roster row.
#[derive(Clone, Debug, Default)]
struct Row {
    /// Its spend so far (US dollars).
    cost: f64,
    /// Its spend when today's count began for it.
    base: f64,
    /// Supervised by some face (here or another's `mimesis run`).
    supervised: bool,
    background: bool,
    job: Option<JobId>,
    live: bool,
    busy: bool,
    remote: bool,
}

fn spent(c: &Cost) -> f64 {
    c.billed.as_ref().map(|b| b.cost_usd).or(c.estimated_usd).filter(|v| v.is_finite() && *v >= 0.0).unwrap_or(0.0)
}

impl Slim for Row {
    fn of(s: &TrackedSession) -> Row {
        let cost = spent(&s.cost);
        Row {
            cost,
            base: cost,
            supervised: s.supervision.is_some(),
            background: s.kind == Some(SessionKind::Background),
            job: s.job.as_ref().map(|j| j.id.clone()),
            live: s.live,
            busy: matches!(s.status, Status::Working | Status::WaitingForApproval),
            remote: s.host.is_some(),
        }
    }

    /// A new file: all its spend is new (today's).
    fn discovered(s: &TrackedSession) -> Row {
        Row { base: 0.0, ..Row::of(s) }
    }

    /// Read again after a lag: today's count for it began when it did.
    fn reread(was: Option<&Row>, s: &TrackedSession) -> Row {
        Row { base: was.map_or(0.0, |r| r.base), ..Row::of(s) }
    }

    fn apply(&mut self, p: &mimesis_core::session::SessionPatch) {
        if let Some(c) = &p.cost {
            self.cost = spent(c);
        }
        if let Some(s) = &p.supervision {
            self.supervised = s.is_some();
        }
        if let Some(k) = p.kind {
            self.background = k == Some(SessionKind::Background);
        }
        if let Some(j) = &p.job {
            self.job = j.as_ref().map(|j| j.id.clone());
        }
        if let Some(l) = p.live {
            self.live = l;
        }
        if let Some(s) = p.status {
            self.busy = matches!(s, Status::Working | Status::WaitingForApproval);
        }
        if let Some(h) = &p.host {
            self.remote = h.is_some();
        }
    }
}

/// Runs until the engine's stream ends. `fleet`: the daily budget is kept here (every
/// session is followed).
pub(crate) async fn run(mimesis: Mimesis, sup: Supervisor, fleet: bool) {
    let engine = mimesis.engine().clone();
    let mut events = engine.subscribe();
    let mut settings = mimesis.subscribe_settings();
    engine.ready().await;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(NaiveDate, f64)>();
    let mut d = Driver {
        day: day::Day::new(&Local, mimesis.clock().both()),
        mimesis,
        sup,
        fleet_on: fleet,
        rows: Rows::new(),
        budgets: HashMap::new(),
        fleet: FleetBudget::default(),
        before: None,
        asked: false,
        told: false,
        done: done_tx,
        transcripts: BTreeSet::new(),
    };
    d.rows.start(&engine).await;
    d.settings_changed();
    loop {
        // Every wake-up looks at the clocks: a wall clock that jumped re-arms the day.
        d.day_check();
        // A stop waiting for a transcript is asked it after every change of its row.
        d.ask_transcripts().await;
        let clock = d.mimesis.clock().clone();
        let midnight = wake_at(clock.as_ref(), d.day.deadline());
        let grace = d.budgets.values().filter_map(RowBudget::next_deadline).min().map(|at| wake_at(clock.as_ref(), at));
        tokio::select! {
            ev = events.recv() => match d.rows.take(ev, &engine).await {
                Seen::Rows(ids) => {
                    for id in ids {
                        if d.rows.get(&id).is_none() {
                            d.budgets.remove(&id);
                        }
                        d.row_changed(&id);
                    }
                }
                Seen::Closed => return,
            },
            changed = settings.changed() => {
                if changed.is_err() {
                    return;
                }
                d.settings_changed();
            }
            Some((day, usd)) = done_rx.recv() => {
                if day == d.day.date {
                    // The report holds every row's spend of today so far: count from here.
                    for r in d.rows.all_mut().values_mut() {
                        r.base = r.cost;
                    }
                    d.before = Some(usd);
                    d.fleet_changed(None);
                }
            }
            _ = tokio::time::sleep_until(midnight) => d.day_check(),
            _ = sleep_until(grace) => d.tick(),
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Driver {
    mimesis: Mimesis,
    sup: Supervisor,
    fleet_on: bool,
    rows: Rows<Row>,
    /// Sessions not supervised here (external, background) with a budget.
    budgets: HashMap<SessionId, RowBudget>,
    fleet: FleetBudget,
    /// The local day, and its end on the injected clock.
    day: day::Day,
    /// Today's spend before the rows' bases (the cost report), once known.
    before: Option<f64>,
    /// The cost report of today was asked for.
    asked: bool,
    /// The supervisor and the rows were told the fleet's budget is reached.
    told: bool,
    done: mpsc::UnboundedSender<(NaiveDate, f64)>,
    /// Rows whose stop waits for their transcript, changed since it was last asked.
    transcripts: BTreeSet<SessionId>,
}

impl Driver {
    fn budget_usd(&self) -> (Option<f64>, Option<f64>) {
        let l = self.mimesis.effective_limits().map(|e| e.limits);
        let l = l.as_ref();
        (
            l.and_then(|l| l.budget_usd).map(|u| u.0),
            l.and_then(|l| l.daily_budget_usd).map(|u| u.0).filter(|_| self.fleet_on),
        )
    }

    fn settings_changed(&mut self) {
        let (session, daily) = self.budget_usd();
        for b in self.budgets.values_mut() {
            b.set_default(session);
        }
        if daily.is_some() && !self.asked {
            self.ask_today();
        }
        let crossed = self.fleet.set_limit(daily);
        self.fleet_changed(crossed);
        for id in self.rows.ids() {
            self.row_changed(&id);
        }
    }

    /// Today's spend so far, from the transcripts (once; the rows' growth is added to it).
    fn ask_today(&mut self) {
        self.asked = true;
        let (roots, data, day, done) =
            (self.mimesis.roots().to_vec(), self.mimesis.data_dir().to_owned(), self.day.date, self.done.clone());
        tokio::task::spawn_blocking(move || {
            let q = CostQuery { by: GroupBy::Session, since: Some(day), until: Some(day), project: None };
            let r = crate::cost::report(&roots, &data, &q, None, crate::cost::Reading::Copied);
            done.send((day, r.total.cost_usd)).ok()
        });
    }

    fn day_check(&mut self) {
        if self.day.check(&Local, self.mimesis.clock().both()).is_none() {
            return;
        }
        // A new day: every row's spend so far was before it.
        for r in self.rows.all_mut().values_mut() {
            r.base = r.cost;
        }
        self.before = Some(0.0);
        self.fleet_changed(None);
    }

    /// Today's spend of the fleet, once the report of the day before the rows is known.
    fn fleet_spent(&self) -> Option<f64> {
        let grown: f64 = self.rows.all().values().filter(|r| !r.remote).map(|r| (r.cost - r.base).max(0.0)).sum();
        self.before.map(|b| b + grown)
    }

    fn fleet_changed(&mut self, crossed: Option<Crossed>) {
        let mut said = crossed;
        if let Some(spent) = self.fleet_spent() {
            said = said.or(self.fleet.observe(self.day.date, spent));
        }
        if let Some(c) = said {
            let message = match c {
                Crossed::Warn { spent, limit } => wording::warning(Scope::Fleet, spent, limit),
                Crossed::Reached { spent, limit } => format!(
                    "{} Supervised and background sessions are suspended at their next idle moment.",
                    wording::reached_external(Scope::Fleet, spent, limit)
                ),
            };
            // Said once, about the session that spent last (a notification needs one).
            if let Some(id) = self.busiest() {
                self.say(&id, message);
            }
        }
        let reached = self.fleet_reached();
        if reached.is_some() != self.told {
            self.told = reached.is_some();
            self.sup.fleet_budget(reached);
            for b in self.budgets.values_mut() {
                b.set_fleet(reached);
            }
        }
    }

    fn fleet_reached(&self) -> Option<(f64, f64)> {
        match (self.fleet.reached(), self.fleet.limit()) {
            (true, Some(limit)) => Some((self.fleet.spent(), limit)),
            _ => None,
        }
    }

    /// The local session that spent the most today.
    fn busiest(&self) -> Option<SessionId> {
        self.rows
            .all()
            .iter()
            .filter(|(_, r)| !r.remote)
            .max_by(|a, b| (a.1.cost - a.1.base).total_cmp(&(b.1.cost - b.1.base)))
            .map(|(id, _)| id.clone())
    }

    fn say(&self, id: &SessionId, message: String) {
        let kind = EventKind::SessionWarning { reason: "budget".into(), remaining_seconds: None, message };
        let at: Timestamp = self.mimesis.clock().now();
        self.sup.publish_event(SupervisionEvent { kind, session_id: id.clone(), at });
    }

    fn row_changed(&mut self, id: &SessionId) {
        if self.fleet.limit().is_some() {
            self.fleet_changed(None);
        }
        let Some(row) = self.rows.get(id).cloned() else { return };
        if row.remote {
            return;
        }
        if self.sup.supervision(id).is_some() {
            self.sup.spend(id, row.cost);
            if let Some(reached) = self.fleet_reached() {
                // Also a session that came after the fleet's budget was reached.
                self.sup.fleet_budget(Some(reached));
            }
            return;
        }
        if row.supervised {
            return; // another face supervises it, and keeps its budget
        }
        if !row.live && !self.budgets.contains_key(id) {
            return; // a session no process runs (history): nothing to tell or stop
        }
        let (session, _) = self.budget_usd();
        let reached = self.fleet_reached();
        let b = self.budgets.entry(id.clone()).or_insert_with(|| {
            let mut b = RowBudget::new(row.background, session);
            b.set_fleet(reached);
            b
        });
        let now = self.mimesis.clock().mono();
        let effects = b.observe(row.cost, row.busy, row.live, now);
        if b.wants_transcript() {
            self.transcripts.insert(id.clone());
        }
        self.carry_out(id, effects);
    }

    /// Asks the engine what the transcripts of the rows whose stop waits for them show.
    async fn ask_transcripts(&mut self) {
        let engine = self.mimesis.engine().clone();
        while let Some(id) = self.transcripts.pop_first() {
            if !self.budgets.get(&id).is_some_and(RowBudget::wants_transcript) {
                continue;
            }
            let written = engine.turn_written(&id).await.ok().flatten().unwrap_or(false);
            let now = self.mimesis.clock().mono();
            let effects = self.budgets.get_mut(&id).map(|b| b.transcript(written, now)).unwrap_or_default();
            self.carry_out(&id, effects);
        }
    }

    /// The transcripts' grace fell due.
    fn tick(&mut self) {
        let now = self.mimesis.clock().mono();
        let due: Vec<SessionId> = self
            .budgets
            .iter()
            .filter(|(_, b)| b.next_deadline().is_some_and(|d: Mono| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let effects = self.budgets.get_mut(&id).map(|b| b.tick(now)).unwrap_or_default();
            self.carry_out(&id, effects);
        }
    }

    fn carry_out(&mut self, id: &SessionId, effects: Vec<RowEffect>) {
        let Some(row) = self.rows.get(id).cloned() else { return };
        for effect in effects {
            match effect {
                RowEffect::Say(Crossed::Warn { spent, limit }) => {
                    self.say(id, wording::warning(Scope::Session, spent, limit))
                }
                RowEffect::Say(Crossed::Reached { spent, limit }) => {
                    let mut m = wording::reached_external(Scope::Session, spent, limit);
                    if row.background {
                        m.push_str(" It will be stopped when its turn ends (Respawn resumes it).");
                    }
                    self.say(id, m)
                }
                RowEffect::Stop { scope, written } => {
                    if !written {
                        tracing::warn!(
                            session = %id,
                            grace_s = TRANSCRIPT_GRACE.as_secs(),
                            "stopping a background session over its budget: its transcript does not show its turn's end"
                        );
                        self.say(id, wording::stopped_unwritten(scope, TRANSCRIPT_GRACE));
                    }
                    if let Some(job) = &row.job {
                        self.stop(id, job, scope, written);
                    }
                }
            }
        }
    }

    /// Claude Code's own `claude stop` for a background session over its budget.
    fn stop(&self, id: &SessionId, job: &JobId, scope: Scope, written: bool) {
        let Some((root, worker)) = roster_rows::worker(self.mimesis.roots(), job) else { return };
        let why = match (scope, written) {
            (Scope::Fleet, true) => "background session over today's budget, at its turn's end",
            (Scope::Session, true) => "background session over its budget, at its turn's end",
            (Scope::Fleet, false) => "background session over today's budget, its turn's end not in its transcript",
            (Scope::Session, false) => "background session over its budget, its turn's end not in its transcript",
        };
        let cwd = roster_rows::cwd_of(&worker);
        roster_rows::act(self.mimesis.data_dir(), &root, cwd.as_deref(), (id, job), Verb::Stop, why);
    }
}

impl Mimesis {
    /// "Continue (raise the budget)" of a session suspended for its budget: `usd` becomes
    /// its own budget, or with `daily` the fleet's daily budget in the settings; then it
    /// resumes (`--resume`, as from an idle suspension). A bad sum is refused in a
    /// sentence and nothing changes.
    pub async fn raise_budget(&self, id: &SessionId, usd: f64, daily: bool) -> Result<(), String> {
        let usd = mimesis_core::supervision::budget::check_usd(usd).map_err(|e| format!("The budget {e}."))?;
        let sup = self.supervisor_now().ok_or("Supervision is not running.")?;
        if daily {
            let mut settings = self.settings();
            settings.limits.daily_budget_usd = Some(usd);
            let doc = serde_json::to_value(&settings).map_err(|e| e.to_string())?;
            let outcome = self.settings_set(&doc).await;
            if let Some(e) = outcome.errors.first() {
                return Err(format!("The daily budget could not be raised: {e}."));
            }
        } else {
            sup.set_budget(id, Some(usd.0)).map_err(|e| e.to_string())?;
        }
        sup.resume(id).map_err(|e| e.to_string())
    }
}
