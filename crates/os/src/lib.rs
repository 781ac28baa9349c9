//! What Mimesis asks of the operating system (Linux), in one place: the process table
//! read from `/proc` ([`procs`]: liveness, start times against PID reuse, process trees,
//! RSS and CPU, terminals, signals to process groups, disk usage, reaping), which Mimesis
//! process owns a supervised agent ([`owner`]), the environment of the programs it starts
//! ([`child_env`]), the desktop app's lock on its data directory ([`instance`]) and its entry in
//! the desktop session's autostart folder ([`autostart`]), and the files and folders Mimesis
//! keeps for itself, readable by the user alone ([`private`]), and whole files read through a
//! memory map, safe against their shrinking meanwhile ([`mapped`]), and the thread that gives
//! back memory after use ([`trim`]).
//!
//! Layer: above `mimesis-core` (whose plain types it fills in), below every crate that
//! watches or supervises. It holds no policy: callers decide, this crate only looks and
//! acts.

pub mod autostart;
pub mod child_env;
pub mod files;
pub mod instance;
pub mod mapped;
pub mod owner;
pub mod private;
pub mod procs;
pub mod programs;
pub mod roots;
pub mod trim;
