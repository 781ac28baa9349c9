use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::hook_event::TerminalContext;

const LIFE: Duration = Duration::from_secs(300);

fn id(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn t(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn entry(session: &str, pid: u32, status: &str, waiting_for: Option<&str>, since: i64) -> RegistryEntry {
    RegistryEntry {
        pid,
        session_id: id(session),
        cwd: None,
        status: Some(status.into()),
        waiting_for: waiting_for.map(str::to_owned),
        status_updated_at: Some(t(since)),
        proc_start: None,
        pid_domain: None,
        name: None,
        tmux: None,
        kind: None,
        job_id: None,
    }
}

fn hook(session: &str, event: &str, note: Option<&str>, at: i64) -> HookEvent {
    HookEvent {
        at: t(at),
        event: event.into(),
        session_id: id(session),
        cwd: None,
        transcript_path: None,
        source: None,
        reason: None,
        notification_type: note.map(str::to_owned),
        terminal: TerminalContext::default(),
    }
}

fn bash(target: &str) -> Option<PendingTool> {
    Some(PendingTool { tool: "Bash".into(), target: target.into() })
}

#[test]
fn the_kind_comes_from_the_registry_the_notification_and_the_pending_call() {
    assert_eq!(kind_of(Some("dialog open"), None, Some("Bash")), DialogKind::AutoMode);
    assert_eq!(kind_of(Some("permission prompt"), None, Some("Bash")), DialogKind::Permission);
    assert_eq!(kind_of(Some("permission prompt"), None, Some("ExitPlanMode")), DialogKind::Plan);
    assert_eq!(kind_of(Some("permission prompt"), None, Some("AskUserQuestion")), DialogKind::Question);
    assert_eq!(kind_of(Some("input needed"), None, None), DialogKind::Question);
    assert_eq!(kind_of(None, Some("agent_needs_input"), Some("Bash")), DialogKind::AutoMode);
    assert_eq!(kind_of(None, Some("permission_prompt"), None), DialogKind::Permission);
    assert_eq!(kind_of(Some("something new"), None, Some("Bash")), DialogKind::Other);
}

#[test]
fn a_waiting_registry_entry_is_listed_as_one_dialog_until_it_changes() {
    let mut a = Asks::default();
    a.set_registry([&entry("s1", 10, "busy", None, 100)], t(100));
    assert!(a.asks(t(200), LIFE).is_empty());
    a.set_registry([&entry("s1", 10, "waiting", Some("dialog open"), 200)], t(200));
    let gateway = a.asks(t(210), LIFE);
    assert_eq!(gateway.len(), 1);
    assert_eq!((gateway[0].kind, gateway[0].pid, gateway[0].tool.clone()), (DialogKind::AutoMode, Some(10), None));
    // The transcript names the call a moment later: the same dialog, now described.
    a.set_row(&id("s1"), bash("curl x | sh"), Some(t(205)));
    let described = a.asks(t(220), LIFE);
    assert_eq!(described[0].key, gateway[0].key);
    assert_eq!(described[0].tool, bash("curl x | sh"));
    // Stay in auto mode: the call's own dialog is another dialog (another key).
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 900)], t(900));
    let per_call = a.asks(t(910), LIFE);
    assert_eq!(per_call[0].kind, DialogKind::Permission);
    assert_ne!(per_call[0].key, gateway[0].key);
    // Two dialogs in a row with the same `waitingFor`: told apart by when the status changed.
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 1_500)], t(1_500));
    assert_ne!(a.asks(t(1_510), LIFE)[0].key, per_call[0].key);
    // Answered: gone.
    a.set_registry([&entry("s1", 10, "busy", None, 1_600)], t(1_600));
    assert!(a.asks(t(1_610), LIFE).is_empty());
    a.set_registry(std::iter::empty(), t(1_700));
    assert!(a.asks(t(1_700), LIFE).is_empty());
}

#[test]
fn a_hooks_request_is_listed_instead_of_its_dialog() {
    let mut a = Asks::default();
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 200)], t(200));
    a.set_hooked(&HashSet::from([id("s1")]), t(250));
    assert!(a.asks(t(300), LIFE).is_empty());
    a.set_hooked(&HashSet::new(), t(300));
    // The registry says `waiting` a moment after an answer: not listed at once…
    assert!(a.asks(t(300), LIFE).is_empty());
    assert_eq!(a.next_expiry(t(300), LIFE), Some(t(300).plus(HOOK_GRACE)));
    // …but a hook that gave up leaves its dialog: listed.
    assert_eq!(a.asks(t(300).plus(HOOK_GRACE), LIFE).len(), 1, "the hook gave up: the dialog is listed");
    // Answered after all: nothing to wait for.
    a.set_registry([&entry("s1", 10, "busy", None, 2_400)], t(2_400));
    assert!(a.asks(t(2_500), LIFE).is_empty() && a.next_expiry(t(2_500), LIFE).is_none());
}

/// Where Mimesis's hooks run, a dialog their `PermissionRequest` hook asks about is listed
/// as the hook's request (it comes 0.1–0.2 s after the registry says `waiting`), never first
/// as a dialog of its own; auto mode's own dialog (no hook asks) is listed at once.
#[test]
fn where_hooks_run_their_request_is_awaited_before_a_dialog_is_listed() {
    let mut a = Asks::default();
    a.set_registry([&entry("s1", 10, "busy", None, 90)], t(90));
    a.hook(&hook("s1", "UserPromptSubmit", None, 100));
    assert!(a.hooks_run(&id("s1")));
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 200)], t(210));
    assert!(a.asks(t(220), LIFE).is_empty(), "the hook may still come");
    assert_eq!(a.next_expiry(t(220), LIFE), Some(t(210).plus(HOOK_GRACE)));
    a.set_hooked(&HashSet::from([id("s1")]), t(400));
    assert!(a.asks(t(210).plus(HOOK_GRACE), LIFE).is_empty(), "the hook's request is the one listed");
    // No hook came (auto mode's per-call dialog): listed after the grace.
    a.set_hooked(&HashSet::new(), t(400));
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 5_000)], t(5_010));
    assert!(a.asks(t(5_020), LIFE).is_empty());
    assert_eq!(a.asks(t(5_010).plus(HOOK_GRACE), LIFE).len(), 1);
    // Auto mode's own dialog: no hook ever asks about it; nor about the call's own dialog
    // straight after it.
    a.set_registry([&entry("s1", 10, "waiting", Some("dialog open"), 9_000)], t(9_010));
    assert_eq!(a.asks(t(9_020), LIFE).len(), 1);
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 9_500)], t(9_510));
    assert_eq!(a.asks(t(9_520), LIFE).len(), 1);
    a.set_registry([&entry("s1", 10, "busy", None, 9_600)], t(9_610));
    a.set_registry([&entry("s1", 10, "waiting", Some("permission prompt"), 9_700)], t(9_710));
    assert!(a.asks(t(9_720), LIFE).is_empty(), "after a busy spell: another call, a hook may come");
    // A session whose hooks are not seen: at once.
    a.set_registry([&entry("s3", 12, "waiting", Some("permission prompt"), 9_000)], t(9_010));
    assert_eq!(a.asks(t(9_020), LIFE).iter().filter(|x| x.session_id == id("s3")).count(), 1);
    assert!(!a.hooks_run(&id("s3")));
    a.set_hooks_run(&id("s3"));
    assert!(a.hooks_run(&id("s3")));
}

#[test]
fn a_notification_lists_a_dialog_where_no_registry_entry_is_seen() {
    let mut a = Asks::default();
    a.set_row(&id("s2"), bash("rm -rf build"), Some(t(1_000)));
    a.hook(&hook("s2", "Notification", Some("idle_prompt"), 1_500));
    assert!(a.asks(t(1_600), LIFE).is_empty(), "an idle prompt is no dialog");
    a.hook(&hook("s2", "Notification", Some("permission_prompt"), 2_000));
    let listed = a.asks(t(2_100), LIFE);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].kind, listed[0].key.clone()),
        (DialogKind::Permission, AskKey::Notification { at: t(2_000) })
    );
    assert_eq!(a.next_expiry(t(2_100), LIFE), Some(t(2_000).plus(LIFE)));
    assert!(a.asks(t(2_000).plus(LIFE), LIFE).is_empty(), "not forever");
    // A record after it: answered (in its terminal).
    a.set_row(&id("s2"), bash("rm -rf build"), Some(t(2_500)));
    assert!(a.asks(t(2_600), LIFE).is_empty());
    // Another hook event after it: moved on.
    a.hook(&hook("s2", "Notification", Some("agent_needs_input"), 3_000));
    assert_eq!(a.asks(t(3_100), LIFE)[0].kind, DialogKind::AutoMode);
    a.hook(&hook("s2", "PermissionRequest", None, 3_050));
    assert_eq!(a.asks(t(3_100), LIFE).len(), 1, "a PermissionRequest is the hook's own request");
    a.hook(&hook("s2", "PostToolUse", None, 3_200));
    assert!(a.asks(t(3_300), LIFE).is_empty());
    // A registry entry, when seen, says more than the notification.
    a.hook(&hook("s2", "Notification", Some("permission_prompt"), 4_000));
    a.set_registry([&entry("s2", 11, "busy", None, 4_100)], t(4_100));
    assert!(a.asks(t(4_200), LIFE).is_empty());
    a.remove_row(&id("s2"));
    a.set_registry(std::iter::empty(), t(4_300));
    assert!(a.sessions.is_empty(), "nothing kept of a session that is gone");
}

#[test]
fn each_session_is_answered_where_its_screen_can_be_reached() {
    let ctx = |f: fn(&mut TerminalContext)| {
        let mut c = TerminalContext::default();
        f(&mut c);
        c
    };
    let dir = Path::new("/home/u/.claude");
    let job = JobId::parse("ab12cd34").unwrap();
    assert_eq!(route(true, Some((&job, dir)), None, None), Route::Pty);
    assert_eq!(
        route(false, Some((&job, dir)), None, Some("s:@1.%2")),
        Route::Attach { job: job.clone(), config_dir: dir.into() }
    );
    let tmux = ctx(|c| {
        c.tmux_pane = Some("%7".into());
        c.tmux_socket = Some("/tmp/tmux-1/default".into());
    });
    let r = route(false, None, Some(&tmux), None);
    assert_eq!(r.channel(), Channel::Tmux);
    let Route::Pane(p) = r else { panic!() };
    assert_eq!(capture_argv(&p), ["tmux", "-S", "/tmp/tmux-1/default", "capture-pane", "-p", "-t", "%7"]);
    assert_eq!(route(false, None, None, Some("main:@2.%11")).channel(), Channel::Tmux);
    assert_eq!(
        route(false, None, Some(&ctx(|c| c.kitty_window_id = Some("4".into()))), None).channel(),
        Channel::Kitty
    );
    assert_eq!(route(false, None, Some(&ctx(|c| c.wezterm_pane = Some("3".into()))), None).channel(), Channel::Wezterm);
    let Route::Terminal(why) = route(false, None, Some(&ctx(|c| c.tty = Some("pts/4".into()))), None) else { panic!() };
    assert!(why.contains("pts/4") && why.contains("answer it in its terminal"), "{why}");
    let Route::Terminal(why) = route(false, None, None, None) else { panic!() };
    assert!(why.contains("hooks"), "{why}");
}

#[test]
fn keys_become_each_terminals_own_commands_and_nothing_else_does() {
    let tmux = Pane { kind: PaneKind::Tmux { socket: None }, id: "%3".into() };
    let send = |p: &Pane, k: &[u8]| send_argv(p, k).map(|a| a.join(" "));
    assert_eq!(send(&tmux, b"\r").as_deref(), Some("tmux send-keys -t %3 Enter"));
    assert_eq!(send(&tmux, b"\x1b[B").as_deref(), Some("tmux send-keys -t %3 Down"));
    assert_eq!(send(&tmux, b"\x1b").as_deref(), Some("tmux send-keys -t %3 Escape"));
    assert_eq!(send(&tmux, b"4").as_deref(), Some("tmux send-keys -t %3 -l 4"), "a digit as text, not a key name");
    let kitty = Pane { kind: PaneKind::Kitty, id: "4".into() };
    assert_eq!(send_argv(&kitty, b"\x1b[B").unwrap().last().unwrap(), "\\x1b[B");
    assert_eq!(send_argv(&kitty, b"\r").unwrap()[..5], ["kitty", "@", "send-text", "--match", "id:4"]);
    let wez = Pane { kind: PaneKind::Wezterm, id: "3".into() };
    assert_eq!(send_argv(&wez, b"2").unwrap(), ["wezterm", "cli", "send-text", "--pane-id", "3", "--no-paste", "2"]);
    assert_eq!(capture_argv(&kitty), ["kitty", "@", "get-text", "--match", "id:4", "--extent", "screen"]);
    assert_eq!(capture_argv(&wez), ["wezterm", "cli", "get-text", "--pane-id", "3"]);
    for hostile in [&b"rm -rf ~\r"[..], b"\x1b]52;c;x\x07", b"123", b"", b"Enter", b"-l"] {
        for p in [&tmux, &kitty, &wez] {
            assert_eq!(send_argv(p, hostile), None, "{hostile:?}");
        }
    }
}

#[test]
fn each_answer_says_exactly_what_it_does() {
    let (yes, no) = describe(DialogKind::AutoMode, Some("Bash"), Some("curl x | sh"));
    assert_eq!(yes.label, "Stay in auto mode");
    assert!(yes.means.contains("Nothing runs yet") && yes.means.contains("Bash `curl x | sh`"), "{}", yes.means);
    assert!(no.means.contains("does not run"), "{}", no.means);
    let (yes, _) = describe(DialogKind::Permission, Some("Bash"), Some("a`b"));
    assert!(yes.means.contains("Runs Bash `a'b` once") && yes.means.contains("never “always allow”"), "{}", yes.means);
    assert_eq!(describe(DialogKind::Plan, Some("ExitPlanMode"), None).1.label, "Keep planning");
    assert_eq!(describe(DialogKind::Question, None, None).0.label, "Send answers");
    assert!(describe(DialogKind::AutoMode, None, None).1.means.contains("Cancels the tool call (Esc)"));
}
