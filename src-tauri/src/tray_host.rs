//! Whether this desktop shows tray icons at all: decides if closing the window hides it
//! to the tray (the tray can bring it back) or quits.

/// Whether something on this desktop shows tray icons, so that a hidden window can be
/// brought back. Linux: a StatusNotifier host registered on the session bus (GNOME without
/// the AppIndicator extension has none). Elsewhere there always is one.
pub fn host_present() -> bool {
    #[cfg(target_os = "linux")]
    {
        let ask = || -> zbus::Result<bool> {
            let bus = zbus::blocking::Connection::session()?;
            let dbus = zbus::blocking::fdo::DBusProxy::new(&bus)?;
            Ok(dbus.name_has_owner("org.kde.StatusNotifierWatcher".try_into()?)?)
        };
        match ask() {
            Ok(has) => has,
            Err(e) => {
                tracing::debug!(error = %e, "cannot ask the session bus for a tray host");
                false
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}
