//! Children of ours that must not outlive us (issue 32 §11), in a process of their own:
//! the unit tests of the allocator's tuning count what other threads leave behind.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::{Duration, Instant};

#[test]
fn a_child_marked_to_end_with_its_parent_ends_when_the_starting_thread_does() {
    let mut child = std::thread::spawn(|| {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("600").process_group(0);
        mimesis_os::procs::end_with_parent(&mut cmd);
        cmd.spawn().expect("sleep")
    })
    .join()
    .expect("the thread");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert_eq!(status.signal(), Some(libc::SIGKILL));
            break;
        }
        assert!(Instant::now() < deadline, "the child outlived the thread that started it");
        std::thread::sleep(Duration::from_millis(10));
    }
}
