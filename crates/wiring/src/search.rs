//! Search over the history of every session on this machine (issue 35): the index of the
//! data dir brought up to date with the transcripts (only what was appended is read), then
//! queried; each hit carries its work chain from the links the fleet database kept. An
//! index found damaged is built anew, once, and the search goes on.

use std::path::{Path, PathBuf};

use mimesis_core::chain::Chains;
use mimesis_core::clock::{Clock, SystemClock};
use mimesis_core::search::{Request, Results};
use mimesis_search::{Index, IndexError};
use mimesis_watch::scan;

pub use mimesis_search::{FILE_NAME as INDEX_FILE, Status as IndexStatus};

fn opened(data_dir: &Path, now: &str) -> Result<Index, IndexError> {
    mimesis_os::private::create_dir_all(data_dir)
        .map_err(|e| IndexError::Request(format!("cannot create the data folder {}: {e}", data_dir.display())))?;
    Index::open(data_dir, now)
}

/// The index of `data_dir`, up to date with every transcript under `roots`;
/// `progress(done, total)` while transcripts are read.
pub fn updated(roots: &[PathBuf], data_dir: &Path, progress: &mut dyn FnMut(usize, usize)) -> Result<Index, String> {
    let now = SystemClock.now().to_iso();
    let files: Vec<_> = roots.iter().flat_map(|r| scan::discover(r)).collect();
    let mut retried = false;
    loop {
        let attempt = opened(data_dir, &now).and_then(|mut ix| ix.update(&files, progress).map(|_| ix));
        match attempt {
            Ok(ix) => return Ok(ix),
            Err(e) if e.is_damage() && !retried => {
                retried = true;
                Index::rebuild(data_dir, &format!("the index was damaged ({e})"), &now).map_err(|e| e.to_string())?;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The hits of `req` among the transcripts under `roots`, most recent first.
pub fn search(
    roots: &[PathBuf],
    data_dir: &Path,
    req: &Request,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Results, String> {
    req.checked()?;
    let ix = updated(roots, data_dir, progress)?;
    let mut results = ix.search(req).map_err(|e| e.to_string())?;
    with_chains(data_dir, &mut results);
    Ok(results)
}

/// Each hit's work chain, and whether its session was superseded (the hit is in the
/// chain's history).
fn with_chains(data_dir: &Path, results: &mut Results) {
    let links = crate::once::stored_links(data_dir);
    if links.is_empty() {
        return;
    }
    let mut chains = Chains::new();
    for l in links {
        let _ = chains.add(l);
    }
    for h in &mut results.hits {
        if chains.link_into(&h.session_id).is_some() || chains.link_out(&h.session_id).is_some() {
            h.work_chain_id = Some(chains.root(&h.session_id).as_str().to_owned());
            h.superseded = chains.successor(&h.session_id).is_some();
        }
    }
}

/// What the doctor says about the index.
pub fn status(data_dir: &Path) -> IndexStatus {
    Index::status(data_dir)
}
