//! Issue 34: the grace before a `/clear` successor is matched by its folder alone is the
//! store's own wait, on the monotonic clock: a manual clock drives it, and a step of the
//! wall clock neither ends it early nor holds it up.

use super::*;
use mimesis_core::clock::{Clock, ManualClock};

const TAB1: &str = "aaaa-tab1";
const TAB2: &str = "cccc-tab2";
const NEW: &str = "bbbb-new";

/// What a `/clear` writes first into the new session's file (2.1.x).
fn clear_command(secs: u64) -> Value {
    json!({"type": "system", "subtype": "local_command", "uuid": uuid::Uuid::new_v4().to_string(),
           "timestamp": at(secs).to_iso(), "cwd": "/nonexistent/p",
           "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"})
}

/// A hook event of `id` run by the `claude` process `pid`.
fn hook_of(id: &str, pid: u32, extra: Value, secs: u64) -> HookEvent {
    let mut payload = json!({"session_id": id, "cwd": "/nonexistent/p"});
    payload.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let terminal = TerminalContext { claude_pid: Some(pid), claude_start: Some(1000), ..Default::default() };
    mimesis_core::hook_event::parse_payload(payload.to_string().as_bytes(), at(secs), terminal).unwrap()
}

fn superseded_by(store: &Store, id: &str) -> Option<String> {
    store.get(&SessionId::parse(id).unwrap()).unwrap().superseded_by.as_ref().map(|s| s.to_string())
}

/// Two sessions in one folder, tab 2 the more recently active; at 100 s a `/clear`
/// successor's file appears. The clock's monotonic time then stands at 100 s.
fn cleared() -> (Fixture, Store, ManualClock) {
    let fx = Fixture::new();
    fx.append(TAB1, &[prompt("tab one", 0)]);
    fx.append(TAB2, &[prompt("tab two", 50)]);
    let clock = ManualClock::new(at(0));
    let mut store = Store::new(Timeouts::default());
    store.file_changed(fx.loc(TAB1), clock.both());
    store.file_changed(fx.loc(TAB2), clock.both());
    clock.advance(Duration::from_secs(100));
    store.end_bulk(clock.both());
    store.tick(clock.both()); // (the two sessions' statuses, as due by now)
    fx.append(NEW, &[clear_command(100)]);
    store.file_changed(fx.loc(NEW), clock.both());
    assert_eq!(store.links(), [], "not matched at once");
    (fx, store, clock)
}

#[test]
fn a_clear_is_matched_by_its_process_within_the_grace_whatever_the_wall_clock_does() {
    let (_fx, mut store, clock) = cleared();
    // The wall clock steps an hour ahead: the grace, a wait of the store's own, goes on.
    clock.set(at(3_700));
    clock.advance(Duration::from_millis(1_999));
    store.tick(clock.both());
    assert_eq!(store.links(), [], "within the grace: nothing matched by folder");
    // The hooks of the process that ran `/clear` name its predecessor, within the grace.
    store.hook_event(hook_of(TAB1, 10, json!({"hook_event_name": "SessionEnd", "reason": "clear"}), 101), clock.both());
    store
        .hook_event(hook_of(NEW, 10, json!({"hook_event_name": "SessionStart", "source": "clear"}), 101), clock.both());
    assert_eq!(superseded_by(&store, TAB1).as_deref(), Some(NEW), "the process's own predecessor");
    // Past the grace, the folder's most recent session is not taken too.
    clock.advance(Duration::from_secs(1));
    store.tick(clock.both());
    assert_eq!(superseded_by(&store, TAB2), None);
    assert_eq!(store.links().len(), 1);
}

#[test]
fn past_the_grace_a_clear_is_matched_by_its_folder_even_if_the_wall_clock_went_back() {
    let (_fx, mut store, clock) = cleared();
    let grace_ends = clock.mono().plus(CHAIN_GRACE);
    assert_eq!(store.next_deadline(clock.both()), Some(grace_ends), "the grace on the monotonic clock");
    clock.advance(CHAIN_GRACE - Duration::from_millis(1));
    store.tick(clock.both());
    assert_eq!(store.links(), [], "a millisecond before the grace ends");
    // The wall clock steps back a minute: the grace still ends when it is due.
    clock.set(at(41));
    clock.advance(Duration::from_millis(1));
    assert_eq!(clock.mono(), grace_ends);
    store.tick(clock.both());
    assert_eq!(superseded_by(&store, TAB2).as_deref(), Some(NEW), "the folder's most recent session");
    assert_eq!(superseded_by(&store, TAB1), None);
}
