//! Sessions on other machines (issue 13): the transport, the helper installer, [`HostFeed`]
//! and [`Hub`] are the `mimesis-remote` crate; here is what composes them with the rest of
//! Mimesis: [`serve`] (`mimesis serve --stdio`, a whole Mimesis on the far side) and the
//! machines of the stored settings ([`configured`], [`change_configured`]).

use std::path::Path;

use mimesis_core::remote::Destination;

mod serve;

pub use mimesis_remote::*;
pub use serve::serve;

/// The machines the user added (Settings › Machines, `mimesis hosts add`), as stored.
pub fn configured(data_dir: &Path) -> Vec<Destination> {
    crate::stored_settings(&data_dir.join(mimesis_fleetdb::FILE_NAME))
        .machines
        .hosts
        .iter()
        .filter_map(|h| Destination::parse(h).ok())
        .collect()
}

/// Adds (`add`) or removes a machine in the stored settings. Returns the new list.
pub fn change_configured(data_dir: &Path, dest: &Destination, add: bool) -> Result<Vec<Destination>, MachinesError> {
    let path = data_dir.join(mimesis_fleetdb::FILE_NAME);
    mimesis_os::private::create_dir_all(data_dir)
        .map_err(|source| MachinesError::CreateDir { dir: data_dir.to_owned(), source })?;
    let db = mimesis_fleetdb::Db::open_shared(&path).map_err(MachinesError::Open)?;
    let mut settings = db.settings();
    settings.machines.change(dest, add)?;
    if let Some(e) = settings.validate().into_iter().find(|e| e.field.starts_with("machines")) {
        return Err(MachinesError::Invalid(e.message));
    }
    db.save_settings(&settings).map_err(MachinesError::Save)?;
    Ok(settings.machines.hosts.iter().filter_map(|h| Destination::parse(h).ok()).collect())
}

/// Why the list of machines was not changed: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
pub enum MachinesError {
    #[error("cannot create {}: {source}", .dir.display())]
    CreateDir { dir: std::path::PathBuf, source: std::io::Error },
    #[error("cannot open the settings: {0}")]
    Open(mimesis_fleetdb::DbError),
    #[error(transparent)]
    List(#[from] mimesis_core::settings::HostListError),
    /// The settings' own sentence about the list.
    #[error("{0}")]
    Invalid(String),
    #[error("cannot save the settings: {0}")]
    Save(mimesis_fleetdb::DbError),
}
