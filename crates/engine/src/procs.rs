//! The process table, read from `/proc`: is a PID alive, and is it still the same process
//! (its start time) — the guard against PID reuse.

use std::path::Path;

/// The start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Is `pid` a running (not zombie) process?
pub fn alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => Path::new(&format!("/proc/{pid}")).exists(),
    }
}

/// Milliseconds since the epoch at which the system booted (from `/proc/stat` `btime`).
pub fn boot_time_ms() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("btime "))?;
    line[6..].trim().parse::<i64>().ok().map(|s| s * 1000)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_with_a_start_time() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(start_ticks(me).is_some());
        assert!(boot_time_ms().is_some());
        assert!(!alive(0));
        assert!(!alive(u32::MAX));
    }
}
