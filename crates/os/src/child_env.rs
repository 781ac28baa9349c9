//! The environment of the programs Mimesis starts.
//!
//! The desktop app tells its toolkit (GTK, WebKit) a few things through the environment
//! before anything else runs: no GL without a GPU, and a library for WebKit's helper
//! processes to load first. Those are for the app and the processes WebKit starts, not for
//! what the user runs: an agent in a terminal, ssh, a command that brings a terminal
//! forward. Each program Mimesis starts gets those variables back as the user had them
//! ([`restore`], [`user_values`]).

use std::ffi::OsString;
use std::sync::OnceLock;

static USER: OnceLock<Vec<(OsString, Option<OsString>)>> = OnceLock::new();

/// Sets each of `vars` in this process's environment (for its toolkit and the processes
/// the toolkit starts), noting what the user had for [`user_values`]. Only the first call
/// sets anything.
///
/// # Safety
/// As [`std::env::set_var`]: no other thread may read or write the environment meanwhile.
/// Call it first thing in `main`.
pub unsafe fn set_for_toolkit(vars: &[(&str, &str)]) {
    let user = vars.iter().map(|(k, _)| (OsString::from(k), std::env::var_os(k))).collect();
    if USER.set(user).is_ok() {
        for (k, v) in vars {
            // SAFETY: the caller's promise.
            unsafe { std::env::set_var(k, v) };
        }
    }
}

/// Each variable [`set_for_toolkit`] set, with the user's value (`None`: it was unset).
/// Empty unless the process set any (the CLI sets none).
pub fn user_values() -> &'static [(OsString, Option<OsString>)] {
    USER.get().map(Vec::as_slice).unwrap_or(&[])
}

/// Gives `cmd` the user's value of each variable set for the toolkit.
pub fn restore(cmd: &mut std::process::Command) {
    restore_with(cmd, user_values());
}

fn restore_with(cmd: &mut std::process::Command, values: &[(OsString, Option<OsString>)]) {
    for (k, v) in values {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_child_gets_the_users_values_back() {
        let mut cmd = std::process::Command::new("env");
        let values = [
            (OsString::from("MIMESIS_TEST_UNSET"), None),
            (OsString::from("MIMESIS_TEST_SET"), Some(OsString::from("the user's"))),
        ];
        restore_with(&mut cmd, &values);
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("MIMESIS_TEST_UNSET"), None)), "{envs:?}");
        assert!(envs.contains(&(OsStr::new("MIMESIS_TEST_SET"), Some(OsStr::new("the user's")))), "{envs:?}");
    }

    #[test]
    fn nothing_to_restore_in_a_process_that_set_nothing() {
        // (The test binary never calls `set_for_toolkit`.)
        assert!(user_values().is_empty());
        let mut cmd = std::process::Command::new("env");
        restore(&mut cmd);
        assert_eq!(cmd.get_envs().count(), 0);
    }
}
