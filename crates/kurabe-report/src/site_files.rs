//! Writing a dashboard's pages into a directory, each only when its text
//! changed, so a regenerated site touches only what moved.
//!
//! Owns the directory layout on disk. Must not build pages ([`crate::site_pages`] does).

use std::path::{Path, PathBuf};

use crate::write::{write_if_changed, WriteError};
use crate::SitePage;

/// Why the site could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SiteWriteError {
    /// A folder could not be made.
    #[error("cannot create {}", .0.display())]
    CreateDir(PathBuf, #[source] std::io::Error),
    /// A page could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Write `pages` under `dir`; returns how many were written and how many
/// were already up to date.
pub fn write_site(dir: &Path, pages: &[SitePage]) -> Result<(usize, usize), SiteWriteError> {
    let (mut written, mut same) = (0, 0);
    for page in pages {
        let path = dir.join(&page.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SiteWriteError::CreateDir(parent.to_owned(), e))?;
        }
        if write_if_changed(&path, page.html.as_bytes())? {
            written += 1;
        } else {
            same += 1;
        }
    }
    Ok((written, same))
}
