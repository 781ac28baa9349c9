//! The process table, read from `/proc`: is a PID alive, and is it still the same process
//! (its start time) — the guard against PID reuse; the process tree of a supervised
//! session (RSS, CPU time), its terminal, signals to its process group, and filesystem usage.

use std::path::Path;

use mimesis_core::supervision::fleet::ProcRow;

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

/// This process's CPU time, user and system, all its threads, to the nanosecond
/// (`CLOCK_PROCESS_CPUTIME_ID`; `/proc/self/stat` counts whole clock ticks of 10 ms).
pub fn own_cpu_time() -> Option<std::time::Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0 && ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec))
        .then(|| std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// This process's resident pages of files (`RssFile` of `/proc/self/status`), in kB: the
/// clean copies of its libraries' code and constants, among others.
pub fn own_file_pages_kb() -> Option<u64> {
    status_kb(&std::fs::read_to_string("/proc/self/status").ok()?, "RssFile")
}

/// A field given in kB in a `/proc/<pid>/status` text (`RssFile:     7712 kB`).
pub fn status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))?;
    let mut words = line[field.len() + 1..].split_whitespace();
    let kb = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kb)
}

/// The fields of `/proc/<pid>/stat` supervision needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    /// The command name (at most 15 bytes, as the kernel keeps it).
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
    /// The controlling terminal's device number (0: none).
    pub tty_nr: u32,
    /// User + system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    pub start_ticks: u64,
    /// Resident set size in pages.
    pub rss_pages: u64,
}

/// Reads `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

fn parse_stat(pid: u32, text: &str) -> Option<Stat> {
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?.to_owned();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // f[0] is field 3 (state); field n is f[n - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        pid,
        comm,
        state: f.first()?.chars().next()?,
        ppid: num(4)? as u32,
        pgrp: num(5)? as u32,
        session: num(6)? as u32,
        tty_nr: f.get(7 - 3).and_then(|v| v.parse::<i64>().ok())? as u32,
        cpu_ticks: num(14)? + num(15)?,
        start_ticks: num(22)?,
        rss_pages: num(24)?,
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

/// Every process now (unreadable entries are skipped: they may vanish while listed).
pub fn all() -> Vec<Stat> {
    pids().into_iter().filter_map(stat).collect()
}

/// The PIDs of every process now.
pub fn pids() -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).collect()
}

/// This process's children (of all its threads; adopted orphans too, for a subreaper), from
/// `/proc/self/task/*/children`: a few small reads instead of one per process of the machine.
/// None when the kernel has no such files (built without `CONFIG_PROC_CHILDREN`). (The
/// kernel lists children exactly only while none is being created or exiting: one that does
/// meanwhile may be missing, and is seen by the next look.)
pub fn my_children() -> Option<Vec<Stat>> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut pids: Vec<u32> = Vec::new();
    let mut read_any = false;
    for task in tasks.flatten() {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else { continue };
        read_any = true;
        pids.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    if !read_any {
        return None;
    }
    pids.sort_unstable();
    pids.dedup();
    Some(pids.into_iter().filter_map(stat).collect())
}

/// The process table as the fleet rules see it.
pub fn rows(stats: &[Stat]) -> Vec<ProcRow> {
    stats
        .iter()
        .map(|s| ProcRow { pid: s.pid, ppid: s.ppid, sid: s.session, state: s.state, start_ticks: s.start_ticks })
        .collect()
}

/// The command line of `pid`, one string per argument.
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None; // a zombie or kernel thread
    }
    Some(raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
}

/// The value of environment variable `name` in `pid`'s initial environment (what it was
/// started with), if readable.
pub fn env_var(pid: u32, name: &str) -> Option<Vec<u8>> {
    let [v] = env_vars(pid, [name]);
    v
}

/// The values of the environment variables `names` in `pid`'s initial environment, in
/// that order, from one read (`None` for each when it cannot be read).
pub fn env_vars<const N: usize>(pid: u32, names: [&str; N]) -> [Option<Vec<u8>>; N] {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/environ")) else { return std::array::from_fn(|_| None) };
    names.map(|name| {
        raw.split(|b| *b == 0).find_map(|kv| {
            let rest = kv.strip_prefix(name.as_bytes())?;
            rest.strip_prefix(b"=").map(<[u8]>::to_vec)
        })
    })
}

/// The user that owns `pid` (its effective user id, as `/proc/<pid>` shows it).
pub fn uid(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

/// This process's effective user id.
pub fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `pid` and its ancestors, up to init.
pub fn lineage(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut at = pid;
    while let Some(parent) = stat(at).map(|s| s.ppid).filter(|&p| p > 1 && !out.contains(&p)) {
        out.push(parent);
        at = parent;
    }
    out
}

/// The calling thread yields to everything else (nice 10 for this thread alone, Linux): for
/// background work that must not slow what the user waits for, such as the search index's
/// first build while the window opens. (Not `SCHED_IDLE`: a thread that could starve for as
/// long as the machine is busy would hold the index's write lock meanwhile.)
pub fn lower_this_threads_priority() -> std::io::Result<()> {
    lower_this_threads_priority_to(10)
}

/// The calling thread's nice value becomes `nice` (Linux: for this thread alone), if that is
/// lower than its own (a higher number); it cannot be raised back without privileges, so
/// only threads that end with their work should call this.
pub fn lower_this_threads_priority_to(nice: i32) -> std::io::Result<()> {
    // SAFETY: gettid has no preconditions; setpriority on this thread's id touches only it.
    let me = unsafe { libc::gettid() } as libc::id_t;
    if this_threads_nice() >= nice {
        return Ok(()); // Already as low (raising it back needs privileges).
    }
    // SAFETY: as above.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, me, nice) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// The calling thread's nice value (Linux: each thread has its own).
pub fn this_threads_nice() -> i32 {
    // SAFETY: gettid has no preconditions; getpriority on this thread's id only reads it (-1
    // is also a valid nice value: an error, which cannot happen for our own thread, would
    // read as -1).
    unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
}

/// This boot's id: start ticks only compare within one boot.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned()).unwrap_or_default()
}

/// This machine and pid namespace as Claude Code names them in its registry (`pidDomain`,
/// since 2.1.330): `linux:<machine-id>:<the link /proc/self/ns/pid>`. A registry entry of
/// another domain (a container, another machine sharing the folder) names a PID that means
/// nothing here. None when either part cannot be read.
pub fn pid_domain() -> Option<String> {
    let id = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()))?;
    let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("linux:{id}:{}", ns.to_str()?))
}

/// The page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

/// The process tree of a session leader: the members of its session plus any descendant
/// that left it (setsid), from one snapshot of the table.
pub fn tree(leader: u32, stats: &[Stat]) -> Vec<&Stat> {
    let mut members: Vec<&Stat> = stats.iter().filter(|s| s.session == leader || s.pid == leader).collect();
    let mut frontier: Vec<u32> = members.iter().map(|s| s.pid).collect();
    while let Some(p) = frontier.pop() {
        for s in stats.iter().filter(|s| s.ppid == p) {
            if !members.iter().any(|m| m.pid == s.pid) {
                members.push(s);
                frontier.push(s.pid);
            }
        }
    }
    members
}

/// RSS in bytes and CPU ticks of the tree led by `leader` (zombies count for nothing).
pub fn tree_usage(leader: u32) -> (u64, u64) {
    let stats = all();
    let page = page_size();
    tree(leader, &stats)
        .iter()
        .filter(|s| s.state != 'Z')
        .fold((0, 0), |(rss, cpu), s| (rss + s.rss_pages * page, cpu + s.cpu_ticks))
}

/// Sends `sig` to the process group `pgid` (the agent leads its own).
pub fn signal_group(pgid: u32, sig: libc::c_int) -> bool {
    if pgid <= 1 || pgid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
    unsafe { libc::kill(-(pgid as i32), sig) == 0 }
}

/// Sends `sig` to one process.
pub fn signal(pid: u32, sig: libc::c_int) -> bool {
    if pid <= 1 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill(2); no memory involved.
    unsafe { libc::kill(pid as i32, sig) == 0 }
}

/// SIGKILL to every process of session `sid` (members that moved to another process
/// group are not reached by a group signal).
pub fn kill_session(sid: u32) {
    for s in all().iter().filter(|s| s.session == sid && s.state != 'Z') {
        signal(s.pid, libc::SIGKILL);
    }
}

/// Used share of the filesystem holding `path`, in percent, as `df` counts it (blocks
/// reserved for root are not available).
pub fn disk_usage_percent(path: &Path) -> Option<u8> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct for a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let used = (st.f_blocks - st.f_bfree) as f64;
    let total = used + st.f_bavail as f64;
    if total <= 0.0 {
        return None;
    }
    Some(((used / total) * 100.0).ceil().min(100.0) as u8)
}

/// Reaps `pid` if it is our exited child (a zombie adopted as subreaper). Never blocks.
pub fn reap(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on a specific pid with WNOHANG; status is a plain int.
    unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) == pid as i32 }
}

/// Makes the child `cmd` starts get SIGKILL when the thread that starts it ends
/// (PR_SET_PDEATHSIG): with Mimesis killed outright, on a signal or on a path that skips
/// its drops, a child of ours in a process group of its own does not live on. Start such
/// a child from a thread that lives as long as the work does (a runtime's worker, the
/// main thread), never from a pool thread that may end before it.
pub fn end_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, _exit),
    // and no allocation.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the prctl: nobody will send the signal.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Makes this process the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER), so a
/// grandchild left by a dead agent is reparented here, where the orphan scan finds it.
pub fn become_subreaper() -> bool {
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// The most open files [`raise_open_files_limit`] asks for.
pub const OPEN_FILES: libc::rlim_t = 65_536;

/// Raises this process's limit of open files (RLIMIT_NOFILE) from its soft value towards
/// its hard one, to at most [`OPEN_FILES`]: a face holds a connection per open permission
/// request besides its watcher's files. (Capped: children inherit the soft limit, and some
/// programs walk every possible descriptor.) Returns the limit in force afterwards.
pub fn raise_open_files_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let want = lim.rlim_max.min(OPEN_FILES);
    if lim.rlim_cur < want {
        let raised = libc::rlimit { rlim_cur: want, rlim_max: lim.rlim_max };
        // SAFETY: a valid rlimit, at most the hard limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(raised.rlim_cur);
        }
    }
    Some(lim.rlim_cur)
}

/// Gives the memory the allocator holds but no longer uses back to the system (glibc keeps
/// freed heap in its arenas: after the first index, megabytes of it). Returns whether any
/// was given back.
pub fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim has no preconditions; it only returns free pages.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Which read-only file mappings [`trim_clean_file_pages`] unmaps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mapped {
    /// The program's own file (its code and constants).
    Program,
    /// Every file: the program and the libraries.
    AllFiles,
}

/// The mappings of `smaps` (the text of `/proc/<pid>/smaps`) whose pages are all clean copies
/// of their file: mapped from a file named by an absolute path (`program`'s alone for
/// [`Mapped::Program`]), not writable, and with no page of their own (`Anonymous: 0 kB`: a
/// page written once, such as one a loader relocated before it made the mapping read-only,
/// is not a copy of the file any more). As (start, length) pairs.
pub fn clean_file_mappings(smaps: &str, program: &Path, which: Mapped) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let first = fields.next().unwrap_or_default();
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
        {
            // start-end perms offset dev inode [path]: the path may hold spaces.
            let perms = fields.next().unwrap_or_default();
            let path = line.splitn(6, |c: char| c.is_ascii_whitespace()).nth(5).unwrap_or_default().trim_start();
            let file = path.starts_with('/') && !path.ends_with(" (deleted)");
            let wanted = match which {
                Mapped::Program => Path::new(path) == program,
                Mapped::AllFiles => true,
            };
            current = (file && wanted && !perms.contains('w') && end > start).then_some((start, end - start));
            continue;
        }
        if first == "Anonymous:"
            && let Some(m) = current.take()
            && fields.next() == Some("0")
        {
            out.push(m);
        }
    }
    out
}

/// The parts of `clean` ([`clean_file_mappings`], sorted or not) inside `segment`, a loaded
/// object's read-only segment (start, length), as (start, length) pairs.
pub fn inside_segment(clean: &[(usize, usize)], segment: (usize, usize)) -> impl Iterator<Item = (usize, usize)> + '_ {
    let (seg_start, seg_end) = (segment.0, segment.0.saturating_add(segment.1));
    clean.iter().filter_map(move |&(start, len)| {
        let (a, b) = (start.max(seg_start), start.saturating_add(len).min(seg_end));
        (a < b).then(|| (a, b - a))
    })
}

/// Unmaps the pages of this process's clean read-only file mappings ([`clean_file_mappings`])
/// that are read-only segments of the program or of a library it has loaded: the code that
/// only a launch ran (start-up, the first index) no longer counts in this process's memory,
/// and what runs again comes back from the page cache at its next touch. These are pages
/// the kernel may take back at any time; this only does it now. Returns the bytes of the
/// ranges so advised (not all of them were resident).
///
/// `smaps` is a snapshot: by the time a range is advised, another thread may have unmapped
/// it and mapped something else there (a font file let go, then the allocator's memory; a
/// library being loaded, whose reservation the loader maps over with its segments), and
/// `MADV_DONTNEED` would throw away whatever that holds. So only the ranges inside a
/// read-only `PT_LOAD` segment of an object the loader lists are advised, from within
/// `dl_iterate_phdr`, which keeps objects from being added or removed meanwhile: the loader
/// maps a segment before it lists its object, never writes to a read-only one (relocations
/// go to the writable segment; `Anonymous: 0` in `smaps` leaves out the rest), and a listed
/// object's segments stay mapped until it leaves the list (glibc unmaps a library that
/// `dlclose` ends before it unlinks it, so a `dlclose` between the snapshot and the advice
/// is the one case left; the processes this runs in do not unload libraries once launched).
pub fn trim_clean_file_pages(which: Mapped) -> usize {
    #[cfg(target_os = "linux")]
    {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else { return 0 };
        let program = std::fs::read_link("/proc/self/exe").unwrap_or_default();
        let clean = clean_file_mappings(&smaps, &program, which);
        let mut trim = Trim { clean: &clean, page: page_size() as usize, advised: 0 };
        // SAFETY: the callback only reads the loader's description of each object and
        // advises ranges inside its read-only segments; `trim` outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(trim_object), (&raw mut trim).cast()) };
        trim.advised
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = which;
        0
    }
}

#[cfg(target_os = "linux")]
struct Trim<'a> {
    clean: &'a [(usize, usize)],
    page: usize,
    advised: usize,
}

#[cfg(target_os = "linux")]
unsafe extern "C" fn trim_object(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `data` is the `Trim` that `trim_clean_file_pages` passed, and `info` the
    // loader's description of one object, valid during this call.
    let (trim, info) = unsafe { (&mut *data.cast::<Trim>(), &*info) };
    if info.dlpi_phdr.is_null() || trim.page == 0 {
        return 0;
    }
    // SAFETY: the loader's program headers of this object: `dlpi_phnum` of them.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    for h in headers.iter().filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W == 0) {
        let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
        let end = start.saturating_add(h.p_memsz as usize);
        // Whole pages: a segment starts and ends on pages of its own.
        let start = start & !(trim.page - 1);
        let end = end.saturating_add(trim.page - 1) & !(trim.page - 1);
        for (at, len) in inside_segment(trim.clean, (start, end.saturating_sub(start))) {
            // SAFETY: a range of a read-only segment of a loaded object (which stays mapped
            // while the loader lists it) that held no page of its own at the snapshot:
            // dropping its pages loses nothing, since each comes back from the file as it was.
            if unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) } == 0 {
                trim.advised += len;
            }
        }
    }
    0
}

/// Sets glibc's malloc up for a long-lived process that once did a lot of short-lived work
/// (the first index). Call it first thing, before threads exist. Returns whether all were set.
/// - At most `arenas` arenas: glibc makes up to 8 per core, one per thread that contends,
///   and each keeps its freed memory (with a thread pool, many megabytes of it).
/// - Blocks of `mmap_threshold` bytes and more mapped apart from the heap (and unmapped when
///   freed). By default that size moves up to the largest block freed so far, so after the
///   first index's big buffers have been freed, the next ones come from the heap and leave
///   holes among the long-lived data there that no trim can give back (2–5 MB of a window
///   showing 2,000 sessions).
/// - No fastbins: a small block freed is merged with its free neighbours at once instead of
///   waiting on a list. Those lists are merged in one go by the next large block asked for
///   or freed, and the merged blocks are then walked one by one, cold in the cache, by the
///   next allocation the lists cannot serve. In an idle window after a launch that walk was
///   most of the app's CPU: `_int_malloc` and `malloc_consolidate` were 62 % of its samples
///   over a minute, and with fastbins off the app used 43–60 ms a minute instead of 77–141.
pub fn tune_malloc(arenas: i32, mmap_threshold: i32) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt with integer settings; called before other threads allocate.
        let (a, m, f) = unsafe {
            (
                libc::mallopt(libc::M_ARENA_MAX, arenas),
                libc::mallopt(libc::M_MMAP_THRESHOLD, mmap_threshold),
                libc::mallopt(libc::M_MXFAST, 0),
            )
        };
        a == 1 && m == 1 && f == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (arenas, mmap_threshold);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_in_kb() {
        let status =
            "Name:\tWebKitWebProces\nRssAnon:\t   48000 kB\nRssFile:\t    7712 kB\nRssShmem:\t 12 kB\nThreads:\t12\n";
        assert_eq!(status_kb(status, "RssFile"), Some(7712));
        assert_eq!(status_kb(status, "RssAnon"), Some(48000));
        assert_eq!(status_kb(status, "Rss"), None, "a field's name whole, not its start");
        assert_eq!(status_kb(status, "Threads"), None, "not in kB");
        assert_eq!(status_kb(status, "VmSwap"), None);
        assert_eq!(status_kb("RssFile:\tmany kB\n", "RssFile"), None);
        assert!(own_file_pages_kb().is_some_and(|kb| kb > 0), "this test's own program has pages of files");
    }

    #[test]
    fn own_cpu_time_grows_with_work() {
        let a = own_cpu_time().expect("this process's CPU time");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let b = own_cpu_time().expect("this process's CPU time");
        assert!(b > a, "{a:?} then {b:?}");
    }

    const SMAPS: &str = "\
5600aa000000-5600aa200000 r--p 00000000 fe:00 11 /opt/mimesis/mimesis-desktop
Rss:                 800 kB
Anonymous:             0 kB
5600aa200000-5600aa900000 r-xp 00200000 fe:00 11 /opt/mimesis/mimesis-desktop
Anonymous:             0 kB
5600aa900000-5600aa960000 r--p 00900000 fe:00 11 /opt/mimesis/mimesis-desktop
Anonymous:           368 kB
5600aa960000-5600aa968000 rw-p 00960000 fe:00 11 /opt/mimesis/mimesis-desktop
Anonymous:            20 kB
5600ab000000-5600ab100000 rw-p 00000000 00:00 0 [heap]
Anonymous:          1024 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 22 /usr/lib/libgtk 3.so
Anonymous:             0 kB
7f0000100000-7f0000200000 r--p 00000000 00:01 33 /SYSV00000000 (deleted)
Anonymous:             0 kB
7f0000200000-7f0000201000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
";

    #[test]
    fn my_children_are_listed_and_so_are_their_zombies() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let listed = |pid: u32| my_children().unwrap().into_iter().find(|s| s.pid == pid);
        let row = listed(pid).expect("a running child");
        assert_eq!(row.ppid, std::process::id());
        assert!(my_children().unwrap().iter().all(|s| s.ppid == std::process::id()), "children only");
        signal(pid, libc::SIGKILL);
        // Not reaped yet: a zombie, still a child. (Waits for the kill to land, bounded.)
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while listed(pid).map(|s| s.state) != Some('Z') {
            assert!(std::time::Instant::now() < deadline, "no zombie: {:?}", listed(pid));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(listed(pid).is_none(), "reaped: no longer a child");
    }

    #[test]
    fn only_clean_read_only_file_mappings_are_trimmed() {
        let program = Path::new("/opt/mimesis/mimesis-desktop");
        // Not the relocated (written, then read-only) one, the writable one, the heap, a
        // deleted file or the vdso.
        assert_eq!(
            clean_file_mappings(SMAPS, program, Mapped::Program),
            [(0x5600aa000000, 0x200000), (0x5600aa200000, 0x700000)]
        );
        assert_eq!(
            clean_file_mappings(SMAPS, program, Mapped::AllFiles),
            [(0x5600aa000000, 0x200000), (0x5600aa200000, 0x700000), (0x7f0000000000, 0x100000)],
            "a library's path may hold a space"
        );
        assert!(clean_file_mappings("", program, Mapped::AllFiles).is_empty());
        assert!(clean_file_mappings("garbage\nAnonymous: 0 kB\n", program, Mapped::AllFiles).is_empty());
    }

    #[test]
    fn only_what_is_inside_a_loaded_objects_segment_is_advised() {
        let clean = [(0x1000, 0x3000), (0x8000, 0x1000), (0x10000, 0x2000)];
        let inside = |seg| inside_segment(&clean, seg).collect::<Vec<_>>();
        // A snapshot's range larger than the segment (a loader's reservation) is cut to it.
        assert_eq!(inside((0x2000, 0x1000)), [(0x2000, 0x1000)]);
        assert_eq!(inside((0x0, 0x9000)), [(0x1000, 0x3000), (0x8000, 0x1000)]);
        assert_eq!(inside((0x4000, 0x4000)), [], "touching is not inside");
        assert_eq!(inside((0x11000, usize::MAX)), [(0x11000, 0x1000)]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn trimmed_code_leaves_this_process_and_still_runs() {
        let resident = || {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let program = std::fs::read_link("/proc/self/exe").unwrap();
            let ranges = clean_file_mappings(&smaps, &program, Mapped::Program);
            // The Rss line of each of those mappings, in kB.
            let mut total = 0;
            let mut inside = false;
            for line in smaps.lines() {
                if let Some((a, _)) = line.split_once('-')
                    && let Ok(a) = usize::from_str_radix(a, 16)
                {
                    inside = ranges.iter().any(|(s, _)| *s == a);
                } else if inside && line.starts_with("Rss:") {
                    total += line.split_whitespace().nth(1).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
                }
            }
            total
        };
        let before = resident();
        assert!(trim_clean_file_pages(Mapped::Program) > 0, "the test program has code of its own");
        let after = resident();
        assert!(after < before, "resident code of the program: {before} kB before, {after} kB after");
        // And the code that was dropped runs as before.
        assert_eq!(start_ticks(std::process::id()), start_ticks(std::process::id()));
        assert!(alive(std::process::id()));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn big_blocks_stay_mapped_apart_after_a_bigger_one_was_freed() {
        // glibc marks a block it mapped on its own in the size word before it (IS_MMAPPED).
        // SAFETY: `p` is the start of a live malloc block, which always has that word.
        let mapped = |p: *const u8| unsafe { *p.cast::<usize>().sub(1) & 2 != 0 };
        assert!(tune_malloc(2, 128 * 1024));
        // By default, freeing this would move the threshold up to its size.
        drop(std::hint::black_box(vec![1u8; 8 << 20]));
        let block: Vec<u8> = Vec::with_capacity(256 * 1024);
        assert!(mapped(block.as_ptr()), "a 256 KiB block came from the heap");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn small_blocks_freed_wait_on_no_fastbin() {
        assert!(tune_malloc(2, 128 * 1024));
        // Past the thread's cache (7 of a size), a freed 64-byte block would go on a fastbin.
        let blocks: Vec<Box<[u8; 64]>> = (0..1000).map(|i| std::hint::black_box(Box::new([i as u8; 64]))).collect();
        drop(blocks);
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { libc::mallinfo2() };
        assert_eq!(info.smblks, 0, "freed blocks waiting on fastbins: {} ({} bytes)", info.smblks, info.fsmblks);
    }

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
    fn stat_fields_are_read_past_odd_command_names() {
        let s = parse_stat(7, "7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 11 4 0 0 20 0 1 0 4242 1000 25 0").unwrap();
        assert_eq!((s.comm.as_str(), s.state, s.ppid, s.pgrp, s.session), ("a) b (c)", 'S', 1, 7, 7));
        assert_eq!((s.cpu_ticks, s.start_ticks, s.rss_pages), (15, 4242, 25));
        let me = stat(std::process::id()).unwrap();
        assert!(me.rss_pages > 0);
        assert!(cmdline(std::process::id()).is_some_and(|c| !c.is_empty()));
        assert!(!boot_id().is_empty());
        let (rss, _) = tree_usage(std::process::id());
        assert!(rss > 0);
        assert!(disk_usage_percent(Path::new("/")).is_some());
        assert_eq!(me.start_ticks, start_ticks(std::process::id()).unwrap());
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
    }

    #[test]
    fn a_childs_environment_is_read() {
        let mut child = std::process::Command::new("sleep").arg("30").env("MIMESIS_TEST_MARK", "7-42").spawn().unwrap();
        // The exec releases the parent a moment before the new environment is in place.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while env_var(child.id(), "MIMESIS_TEST_MARK").is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(env_var(child.id(), "MIMESIS_TEST_MARK").as_deref(), Some(&b"7-42"[..]));
        assert_eq!(env_var(child.id(), "MIMESIS_TEST_MAR"), None, "the whole name");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn tty_names() {
        assert_eq!(tty_name(0), None);
        assert_eq!(tty_name(136 << 8 | 3), Some("pts/3".into()));
        assert_eq!(tty_name(4 << 8 | 2), Some("tty2".into()));
    }
}
