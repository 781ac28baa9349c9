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

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// The command name (at most 15 bytes, as the kernel keeps it).
    pub comm: String,
    pub ppid: u32,
    /// The controlling terminal's device number (0: none).
    pub tty_nr: u32,
    pub start_ticks: u64,
}

/// Reads `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    Some(ProcStat {
        comm,
        ppid: f.get(1)?.parse().ok()?,
        tty_nr: f.get(4)?.parse::<i64>().ok()? as u32,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// A terminal device number as a name (`pts/3`, `tty2`), or None for "no terminal".
pub fn tty_name(tty_nr: u32) -> Option<String> {
    if tty_nr == 0 {
        return None;
    }
    let major = (tty_nr >> 8) & 0xfff;
    let minor = (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00);
    Some(match major {
        136..=143 => format!("pts/{}", (major - 136) * 256 + minor),
        4 if minor < 64 => format!("tty{minor}"),
        4 => format!("ttyS{}", minor - 64),
        _ => format!("tty:{major}:{minor}"),
    })
}

/// The command line of `pid`, its arguments joined by spaces (empty for kernel threads).
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let parts: Vec<String> =
        raw.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    Some(parts.join(" "))
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

    #[test]
    fn stat_reads_parent_and_start_time() {
        let me = std::process::id();
        let s = stat(me).unwrap();
        assert_eq!(s.start_ticks, start_ticks(me).unwrap());
        assert_eq!(s.ppid, std::os::unix::process::parent_id());
        assert!(cmdline(me).unwrap().contains("mimesis_engine"));
    }

    #[test]
    fn tty_names() {
        assert_eq!(tty_name(0), None);
        assert_eq!(tty_name(136 << 8 | 3), Some("pts/3".into()));
        assert_eq!(tty_name(4 << 8 | 2), Some("tty2".into()));
    }
}
