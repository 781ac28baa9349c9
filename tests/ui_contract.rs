//! The UI's generated copy of the engine's contract (ranges, target keys, wording) is
//! current: CI fails when a Rust change was not carried over. `MIMESIS_BLESS=1` rewrites it.

use anyhow::{Result, ensure};
use mimesis_wiring::ui_contract;

#[test]
fn the_generated_ui_contract_is_current() -> Result<()> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(ui_contract::PATH);
    let want = ui_contract::typescript();
    if std::env::var_os("MIMESIS_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder"))?;
        std::fs::write(&path, &want)?;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    ensure!(
        have == want,
        "{} is stale: run MIMESIS_BLESS=1 cargo test -p mimesis-tests --test e2e ui_contract::",
        ui_contract::PATH
    );
    Ok(())
}
