//! Interrupts while an output is being written: Ctrl-C (`SIGINT`), `kill` (`SIGTERM`) and a
//! closed terminal (`SIGHUP`).
//!
//! Every temporary output (`.ckpt-*.partial` files and folders, batch staging folders) is
//! registered here as an [`InFlight`] path for as long as it exists. Once [`install`] has
//! run (the command line does it first thing), one of those signals makes a helper thread
//! remove every registered path, print one line (`ckpt: interrupted; …`) and exit with
//! status 128 + the signal's number (130 for Ctrl-C).
//!
//! Invariant: an output becomes visible only inside [`InFlight::commit`], which holds the
//! registry's lock for the rename, and the helper thread holds the same lock from the
//! moment it starts removing until the process ends. So an interrupt lands either before a
//! rename (the temporary path is removed, the destination is untouched) or after it (the
//! output is complete): never in between, and nothing partial is left.
//!
//! `kill -9` and power loss cannot be caught; what they leave is removed by the next run that
//! writes in the same folder (see `atomic_file`'s sweep), which tells a live writer's files
//! from a dead one's by the `flock` each writer holds on its temporary output.

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Paths being written and not yet committed.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn in_flight() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding the lock leaves a list that is still the truth.
    IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Handles `SIGINT`, `SIGTERM` and `SIGHUP` for the rest of the process: remove every
/// [`InFlight`] path, print `ckpt: {message}` on stderr, exit with 128 + the signal number.
/// Call once, before any output is started.
pub fn install(message: &'static str) -> io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("ckpt-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Held until the process ends, so no rename can make a partial output
                // visible after this point.
                let paths = in_flight();
                for path in paths.iter() {
                    remove(path);
                }
                // Start a fresh line when a progress bar was drawn on the terminal.
                let clear = if io::stderr().is_terminal() {
                    "\r\x1b[2K"
                } else {
                    ""
                };
                eprintln!("{clear}ckpt: {message}");
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

fn remove(path: &Path) {
    let _ = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
}

/// A temporary output path, removed if the process is interrupted before it is committed.
/// Unregistered when dropped (the owner removes or keeps it as it sees fit).
#[derive(Debug)]
pub struct InFlight {
    path: PathBuf,
}

impl InFlight {
    /// Creates a temporary output with `make` and registers the path `path_of` gives for
    /// it, both under the registry's lock: an interrupt cannot land between the creation
    /// and the registration and leave the path behind.
    pub fn create<T>(
        make: impl FnOnce() -> io::Result<T>,
        path_of: impl FnOnce(&T) -> &Path,
    ) -> io::Result<(T, InFlight)> {
        let mut paths = in_flight();
        let made = make()?;
        let path = path_of(&made).to_owned();
        paths.push(path.clone());
        Ok((made, InFlight { path }))
    }

    /// Runs `commit` (the rename that gives the output its name) with no interrupt able to
    /// act during it, then forgets the path: after this the output is complete and stays.
    pub fn commit<T>(self, commit: impl FnOnce() -> T) -> T {
        let mut paths = in_flight();
        let value = commit();
        paths.retain(|p| p != &self.path);
        value
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().retain(|p| p != &self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(path: &Path) -> bool {
        in_flight().iter().any(|p| p == path)
    }

    #[test]
    fn a_path_is_registered_until_committed_or_dropped() {
        let a = Path::new("/nonexistent/ckpt-test-a.partial");
        let b = Path::new("/nonexistent/ckpt-test-b.partial");
        let register = |path: &'static Path| InFlight::create(|| Ok(path), |p| p).unwrap().1;
        let first = register(a);
        let second = register(b);
        assert!(registered(a) && registered(b));
        assert_eq!(first.commit(|| 7), 7);
        assert!(!registered(a) && registered(b));
        drop(second);
        assert!(!registered(b));
    }
}
