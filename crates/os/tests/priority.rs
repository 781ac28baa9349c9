//! A thread that lowers its own priority (the search index's keeper, the first index's
//! readers), in a process of its own: the unit tests of the allocator's tuning count what
//! other threads leave behind when they end.

use mimesis_os::procs::{lower_this_threads_priority, lower_this_threads_priority_to, this_threads_nice};

#[test]
fn a_thread_can_lower_its_own_priority_alone() {
    let before = this_threads_nice();
    let lowered = std::thread::spawn(move || {
        lower_this_threads_priority().expect("a lower priority for this thread");
        this_threads_nice()
    })
    .join()
    .expect("the thread");
    assert!(lowered >= 10, "the thread's nice value is {lowered}");
    // To the lowest, and asking for a higher one then leaves it as it is (no error).
    let lowest = std::thread::spawn(move || {
        lower_this_threads_priority_to(19).expect("the lowest priority for this thread");
        lower_this_threads_priority().expect("a request to raise it back is a no-op");
        this_threads_nice()
    })
    .join()
    .expect("the thread");
    assert_eq!(lowest, 19);
    assert_eq!(this_threads_nice(), before, "the test's own thread kept its priority");
}
