//! "Start at login" (Settings › Desktop): the stored setting made real in the desktop
//! session's autostart folder (`mimesis_os::autostart`), for the app running now: its entry
//! starts this very binary (the installed `/usr/bin/mimesis-desktop`, or wherever this build
//! is) with `--hidden`.

/// Writes (`on`) or removes our entry. An error's Display is a sentence for the setting's
/// field.
pub fn follow(on: bool) -> Result<(), FollowError> {
    let path = mimesis_os::autostart::path_from_env().ok_or(FollowError::NoHome)?;
    let exe = if on { Some(std::env::current_exe().map_err(FollowError::NoExe)?) } else { None };
    mimesis_os::autostart::set(&path, exe.as_deref()).map_err(FollowError::Entry)
}

/// Why start at login could not follow the setting.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("there is no home folder (HOME and XDG_CONFIG_HOME are unset) to keep an autostart entry in")]
    NoHome,
    #[error("cannot tell where Mimesis is installed: {0}")]
    NoExe(std::io::Error),
    #[error("{0}; nothing was saved")]
    Entry(mimesis_os::autostart::AutostartError),
}

/// Whether this launch starts hidden in the tray: asked for (`--hidden`, as the autostart
/// entry does) and there is a tray to bring the window back from.
pub fn start_hidden() -> bool {
    std::env::args().skip(1).any(|a| a == mimesis_os::autostart::HIDDEN_ARG) && crate::tray_host::host_present()
}
