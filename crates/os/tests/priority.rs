//! A thread that lowers its own priority (the search index's keeper), in a process of its
//! own: the unit tests of the allocator's tuning count what other threads leave behind when
//! they end.

#[test]
fn a_thread_can_lower_its_own_priority_alone() {
    // SAFETY (all three): getpriority/gettid read this process's or thread's own values.
    let mine = || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    let before = mine();
    let lowered = std::thread::spawn(move || {
        mimesis_os::procs::lower_this_threads_priority().expect("a lower priority for this thread");
        mine()
    })
    .join()
    .expect("the thread");
    assert!(lowered >= 10, "the thread's nice value is {lowered}");
    assert_eq!(mine(), before, "the test's own thread kept its priority");
}
