use super::*;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn at(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn link(p: &str, s: &str, reason: LinkReason) -> Link {
    Link { predecessor: sid(p), successor: sid(s), reason, at: at(100) }
}

fn cand<'a>(id: &'a SessionId, cwd: &'a str, created: u64, last: u64) -> Candidate<'a> {
    Candidate {
        id,
        cwd: Some(cwd),
        created_at: Some(at(created)),
        last_activity: Some(at(last)),
        superseded: false,
        terminal: None,
        pid: None,
        live: false,
    }
}

fn newcomer<'a>(id: &'a SessionId, cwd: &'a str, started: u64) -> Newcomer<'a> {
    Newcomer { id, cwd: Some(cwd), started_at: at(started), terminal: None, pid: None }
}

#[test]
fn links_form_simple_paths_and_refuse_cycles() {
    let mut c = Chains::new();
    c.add(link("a", "b", LinkReason::Clear)).unwrap();
    c.add(link("b", "c", LinkReason::Compact)).unwrap();
    assert_eq!(c.add(link("c", "a", LinkReason::Clear)), Err(LinkRefused::Cycle));
    assert_eq!(c.add(link("a", "x", LinkReason::Clear)), Err(LinkRefused::HasSuccessor(sid("a"))));
    assert_eq!(c.add(link("x", "b", LinkReason::Clear)), Err(LinkRefused::HasPredecessor(sid("b"))));
    assert_eq!(c.add(link("x", "x", LinkReason::Clear)), Err(LinkRefused::SelfLink));
    assert_eq!(c.root(&sid("c")), sid("a"));
    assert_eq!(c.segments(&sid("b")), vec![sid("a"), sid("b")]);
    assert_eq!(c.members(&sid("b")), vec![sid("a"), sid("b"), sid("c")]);
    assert_eq!(c.successor(&sid("a")), Some(&sid("b")));
}

#[test]
fn fields_count_compactions_across_links_but_not_clears() {
    let mut c = Chains::new();
    c.add(link("a", "b", LinkReason::Clear)).unwrap();
    c.add(link("b", "c", LinkReason::Rollover)).unwrap();
    c.add(link("c", "d", LinkReason::Compact)).unwrap();
    // a compacted twice in its file, c's file starts with the boundary that made it.
    let own = |id: &SessionId| match id.as_str() {
        "a" => (2, false),
        "c" => (1, true),
        _ => (0, false),
    };
    let fa = fields(&c, &sid("a"), own);
    assert_eq!(fa.work_chain_id, "a");
    assert_eq!(fa.chain_length, 4);
    assert_eq!(fa.superseded_by, Some(sid("b")));
    assert_eq!(fa.inherited_compactions, 0);
    assert_eq!(fields(&c, &sid("b"), own).inherited_compactions, 2, "a clear carries the count, adds nothing");
    assert_eq!(fields(&c, &sid("c"), own).inherited_compactions, 2, "c's own file counts its boundary");
    let fd = fields(&c, &sid("d"), own);
    assert_eq!(fd.inherited_compactions, 2 + 1 + 1);
    assert_eq!(fd.superseded_by, None);
    assert_eq!(fd.work_chain_id, "a");
}

#[test]
fn same_process_wins_over_a_more_recent_session_in_the_folder() {
    let (a, c, b) = (sid("a"), sid("c"), sid("b"));
    let t1 = TerminalContext {
        claude_pid: Some(10),
        claude_start: Some(5),
        tty: Some("pts/1".into()),
        ..Default::default()
    };
    let t2 = TerminalContext {
        claude_pid: Some(20),
        claude_start: Some(6),
        tty: Some("pts/2".into()),
        ..Default::default()
    };
    let mut ca = cand(&a, "/p", 0, 50);
    ca.terminal = Some(&t1);
    let mut cc = cand(&c, "/p", 0, 99);
    cc.terminal = Some(&t2);
    let mut n = newcomer(&b, "/p", 100);
    n.terminal = Some(&t1);
    assert_eq!(find_predecessor(&n, &[ca.clone(), cc.clone()]), Some(a.clone()));
    // Same TTY, new process (the user ran claude again in that terminal): still that tab.
    let t1b = TerminalContext {
        claude_pid: Some(11),
        claude_start: Some(9),
        tty: Some("pts/1".into()),
        ..Default::default()
    };
    n.terminal = Some(&t1b);
    assert_eq!(find_predecessor(&n, &[ca.clone(), cc.clone()]), Some(a.clone()));
}

#[test]
fn without_context_the_most_recent_session_of_the_folder_is_taken() {
    let (a, c, x, b) = (sid("a"), sid("c"), sid("x"), sid("b"));
    let ca = cand(&a, "/p", 0, 50);
    let cc = cand(&c, "/p", 0, 90);
    let cx = cand(&x, "/elsewhere", 0, 99);
    let n = newcomer(&b, "/p", 100);
    assert_eq!(find_predecessor(&n, &[ca.clone(), cc.clone(), cx.clone()]), Some(c.clone()));
    // Superseded sessions and sessions active only after the newcomer started are out.
    let mut cc2 = cc.clone();
    cc2.superseded = true;
    assert_eq!(find_predecessor(&n, &[ca.clone(), cc2, cx.clone()]), Some(a.clone()));
    let late = cand(&c, "/p", 500, 600);
    assert_eq!(find_predecessor(&n, &[ca.clone(), late]), Some(a.clone()));
    // Nothing in the folder: no predecessor.
    assert_eq!(find_predecessor(&n, &[cx]), None);
}

#[test]
fn a_session_running_in_another_process_is_never_the_predecessor() {
    let (a, c, b) = (sid("a"), sid("c"), sid("b"));
    // a ran in pid 10 (now gone from the registry), c runs live in pid 20; b is in pid 10.
    let mut ca = cand(&a, "/p", 0, 50);
    ca.pid = Some(10);
    let mut cc = cand(&c, "/p", 0, 99);
    cc.pid = Some(20);
    cc.live = true;
    let mut n = newcomer(&b, "/p", 100);
    n.pid = Some(10);
    assert_eq!(find_predecessor(&n, &[ca.clone(), cc.clone()]), Some(a.clone()));
    // Unknown pid for the newcomer: c still runs elsewhere, so a.
    n.pid = None;
    assert_eq!(find_predecessor(&n, &[ca, cc]), Some(a));
}

#[test]
fn a_different_terminal_is_excluded_from_the_folder_fallback() {
    let (a, c, b) = (sid("a"), sid("c"), sid("b"));
    let t1 = TerminalContext { kitty_window_id: Some("1".into()), ..Default::default() };
    let t2 = TerminalContext { kitty_window_id: Some("2".into()), ..Default::default() };
    let mut ca = cand(&a, "/p", 0, 50);
    ca.terminal = Some(&t1);
    let mut cc = cand(&c, "/p", 0, 99);
    cc.terminal = Some(&t2);
    let mut n = newcomer(&b, "/p", 100);
    n.terminal = Some(&t1);
    assert_eq!(find_predecessor(&n, &[cc.clone(), ca]), Some(a));
    assert_eq!(find_predecessor(&n, &[cc]), None, "the other tab is never taken");
}
