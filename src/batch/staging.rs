//! A private folder inside an output folder where one batch process writes an input's
//! outputs before renaming them into place. It holds an exclusive `flock` for the process's
//! lifetime; a later run removes every staging folder whose lock it can take (its owner
//! died, e.g. by `kill -9`), so no partial or temporary file outlives a rerun, while folders
//! of live processes (other shards sharing the output folder) are left alone.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use ckpt_base::interrupt::InFlight;

/// Names of staging folders start with this.
pub const PREFIX: &str = ".ckpt-staging-";

/// A staging folder this process owns. Removed on drop.
pub struct Staging {
    dir: PathBuf,
    _lock: File,
    /// Removed on an interrupt ([`ckpt_base::interrupt`]), like every temporary output.
    _in_flight: InFlight,
}

impl Staging {
    /// Creates and locks a new staging folder in `output_dir`.
    pub fn create(output_dir: &Path) -> io::Result<Staging> {
        let make = || {
            Ok(tempfile::Builder::new()
                .prefix(PREFIX)
                .tempdir_in(output_dir)?
                .keep())
        };
        let (dir, in_flight) = InFlight::create(make, |d: &PathBuf| d.as_path())?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))?;
        if !try_lock(&lock) {
            return Err(io::Error::other("cannot lock a new staging folder"));
        }
        Ok(Staging {
            dir,
            _lock: lock,
            _in_flight: in_flight,
        })
    }

    /// The folder itself.
    /// A fresh sub-folder for one input's outputs.
    pub fn slot(&self, name: &str) -> io::Result<PathBuf> {
        let slot = self.dir.join(name);
        if slot.exists() {
            std::fs::remove_dir_all(&slot)?;
        }
        std::fs::create_dir(&slot)?;
        Ok(slot)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the staging folders in `output_dir` whose owners are gone; returns how many.
pub fn sweep(output_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(output_dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_staging = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(PREFIX));
        if !is_staging || !path.is_dir() {
            continue;
        }
        let abandoned = match File::open(path.join("lock")) {
            Ok(lock) => try_lock(&lock),
            // Killed between creating the folder and its lock: abandoned once it is old.
            Err(_) => path
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 60),
        };
        if abandoned && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Takes an exclusive lock without waiting (`flock` on Unix, through std). Released when the
/// file is closed or the process dies.
fn try_lock(file: &File) -> bool {
    file.try_lock().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_folders_survive_a_sweep_and_dead_ones_do_not() {
        let out = tempfile::tempdir().expect("tempdir");
        let live = Staging::create(out.path()).expect("staging");
        std::fs::write(live.slot("0").expect("slot").join("x"), b"partial").expect("write");
        assert_eq!(sweep(out.path()), 0);
        assert!(live.dir.exists());
        // A dead owner: a folder whose lock nobody holds.
        let dead = out.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).expect("mkdir");
        std::fs::write(dead.join("lock"), b"").expect("lock");
        assert_eq!(sweep(out.path()), 1);
        assert!(!dead.exists());
        let dir = live.dir.to_owned();
        drop(live);
        assert!(!dir.exists());
    }
}
