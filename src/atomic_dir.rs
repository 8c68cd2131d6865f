//! Writing an output folder so that it is either complete or absent.

use std::fs::{File, Permissions};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ckpt_base::atomic_file::{folder_of, sweep_stale_partials, PARTIAL_PREFIX, PARTIAL_SUFFIX};
use ckpt_base::interrupt::InFlight;

/// Why a folder cannot be written at a path, found before any work is done.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFolderError {
    #[error("{path}: exists and is not a folder")]
    /// Something other than a folder is at the path.
    NotFolder {
        /// The output path.
        path: String,
    },
    #[error("{path}: the folder is not empty; pass --force to replace it")]
    /// A non-empty folder is there and replacing was not asked for.
    NotEmpty {
        /// The output path.
        path: String,
    },
    #[error("{path}: the folder holds files that are not a DCP checkpoint; refusing to replace it, even with --force")]
    /// The folder there is not a DCP checkpoint, so it is never replaced.
    NotReplaceable {
        /// The output path.
        path: String,
    },
    #[error("{path}: the folder {folder} does not exist")]
    /// The folder the output would be written in is missing.
    NoParent {
        /// The output path.
        path: String,
        /// Its parent folder.
        folder: String,
    },
}

/// Checks that [`write_folder_atomically`] may write `path`: it does not exist, or is an empty
/// folder, or (with `replace`) a folder holding a DCP checkpoint (a `.metadata` file), which
/// is all `replace` ever removes; and the folder that will hold it exists.
pub fn check_folder(path: &Path, replace: bool) -> Result<(), OutputFolderError> {
    let shown = path.display().to_string();
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_dir() => return Err(OutputFolderError::NotFolder { path: shown }),
        Ok(_) => {
            let empty = std::fs::read_dir(path).map(|mut d| d.next().is_none());
            if !empty.unwrap_or(false) {
                if !replace {
                    return Err(OutputFolderError::NotEmpty { path: shown });
                }
                if !ckpt_formats::torch::dcp::is_dcp(path) {
                    return Err(OutputFolderError::NotReplaceable { path: shown });
                }
            }
        }
        Err(_) => {}
    }
    let parent = folder_of(path);
    if !parent.is_dir() {
        return Err(OutputFolderError::NoParent {
            path: shown,
            folder: parent.display().to_string(),
        });
    }
    Ok(())
}

/// Runs `fill` on a new temporary folder beside `path` (`.ckpt-*.partial`), fsyncs it, then
/// moves it to `path`; an existing folder there (allowed by [`check_folder`], checked again
/// here) is moved aside first and removed once the new one is in place. If `fill` fails,
/// nothing is left behind and `path` is untouched. `fill` must fsync the files it writes.
pub fn write_folder_atomically<T, E>(
    path: &Path,
    replace: bool,
    fill: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<io::Error>,
{
    check_folder(path, replace).map_err(|e| io::Error::other(e.to_string()))?;
    let parent = folder_of(path);
    sweep_stale_partials(parent);
    let make = || {
        tempfile::Builder::new()
            .prefix(PARTIAL_PREFIX)
            .suffix(PARTIAL_SUFFIX)
            .permissions(Permissions::from_mode(0o777))
            .tempdir_in(parent)
    };
    let (temp, in_flight) = InFlight::create(make, |t| t.path()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create a folder in {}: {e}", parent.display()),
        )
    })?;
    // Held while the folder is filled: a sweep of the parent leaves it alone (see
    // `atomic_file::sweep_stale_partials`).
    let lock = File::open(temp.path())?;
    lock.try_lock().map_err(io::Error::other)?;
    let value = fill(temp.path())?;
    File::open(temp.path())?.sync_all()?;
    in_flight.commit(|| replace_folder(temp, path, parent))?;
    drop(lock);
    Ok(value)
}

/// Moves the filled `temp` folder to `path` (an occupied `path` aside first, removed once the
/// new folder is in place; put back if the move fails) and fsyncs `parent`.
fn replace_folder(temp: tempfile::TempDir, path: &Path, parent: &Path) -> io::Result<()> {
    let occupied = std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_some());
    let old = match occupied {
        true => {
            let aside = tempfile::Builder::new()
                .prefix(".ckpt-")
                .suffix(".old")
                .tempdir_in(parent)?;
            std::fs::rename(path, aside.path())?;
            Some(aside)
        }
        false => None,
    };
    if let Err(e) = std::fs::rename(temp.path(), path) {
        if let Some(aside) = &old {
            let _ = std::fs::rename(aside.path(), path);
        }
        return Err(io::Error::new(
            e.kind(),
            format!("cannot write {}: {e}", path.display()),
        ));
    }
    // The temporary folder now has the destination's name: nothing to clean up.
    let _ = temp.keep();
    if let Ok(folder) = File::open(parent) {
        let _ = folder.sync_all();
    }
    drop(old);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill_one(dir: &Path) -> io::Result<()> {
        std::fs::write(dir.join(".metadata"), b"new")
    }

    #[test]
    fn a_new_folder_appears_complete() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        write_folder_atomically(&out, false, fill_one).unwrap();
        assert_eq!(std::fs::read(out.join(".metadata")).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_fill_leaves_nothing_behind() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        let err = write_folder_atomically(&out, false, |dir| -> io::Result<()> {
            fill_one(dir)?;
            Err(io::Error::other("boom"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_non_empty_folder_needs_replace_and_must_be_a_checkpoint() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("notes.txt"), b"mine").unwrap();
        let refused = write_folder_atomically(&out, false, fill_one).unwrap_err();
        assert!(refused.to_string().contains("--force"), "{refused}");
        let refused = write_folder_atomically(&out, true, fill_one).unwrap_err();
        assert!(
            refused.to_string().contains("not a DCP checkpoint"),
            "{refused}"
        );
        assert!(out.join("notes.txt").exists());
    }

    #[test]
    fn replace_swaps_an_old_checkpoint_folder() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(".metadata"), b"old").unwrap();
        std::fs::write(out.join("__7_0.distcp"), b"old").unwrap();
        write_folder_atomically(&out, true, fill_one).unwrap();
        assert_eq!(std::fs::read(out.join(".metadata")).unwrap(), b"new");
        assert!(!out.join("__7_0.distcp").exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_empty_folder_is_filled_without_replace() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        std::fs::create_dir(&out).unwrap();
        write_folder_atomically(&out, false, fill_one).unwrap();
        assert!(out.join(".metadata").exists());
    }
}
