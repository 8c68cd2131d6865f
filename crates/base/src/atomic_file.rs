//! Writing an output file so that it is either complete or absent, with the permissions a
//! plain `open(2)` would have given it.

use std::fs::{File, Permissions};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::interrupt::InFlight;

/// Runs `fill` on a new temporary file in the folder of `path`'s destination, fsyncs it,
/// renames it over the destination and fsyncs the folder. If `fill` fails, or the process
/// dies, the destination is untouched: the temporary file (`.ckpt-*.partial`) is removed on
/// error and on an interrupt ([`crate::interrupt`]), and never has the destination's name.
/// The temporary file is `flock`ed while it exists; before writing, the folder is swept of
/// `.ckpt-*.partial` files and folders whose lock can be taken (left by a writer that was
/// killed, `kill -9` or power loss).
///
/// The destination is `path`, or the file a symlink at `path` points to (the link is kept).
/// A new file gets mode `0666 & !umask`, as `open(2)` would; a file that is replaced keeps its
/// mode and, where the process may `chown`, its owner and group.
pub fn write_atomically<T, E>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<io::Error>,
{
    write_atomically_as(path, PARTIAL_PREFIX, fill)
}

/// [`write_atomically`] with temporary files named `<temp_prefix>*.partial`.
pub fn write_atomically_as<T, E>(
    path: &Path,
    temp_prefix: &str,
    fill: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<io::Error>,
{
    let path = destination(path);
    let dir = folder_of(&path);
    let replaced = std::fs::metadata(&path).ok().filter(|m| m.is_file());
    sweep_stale_partials(dir);
    let (mut temp, in_flight) = InFlight::create(|| temp_file(dir, temp_prefix), |t| t.path())
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {e}", dir.display()),
            )
        })?;
    temp.as_file().try_lock().map_err(io::Error::other)?;
    if let Some(old) = &replaced {
        keep_owner_and_mode(temp.as_file(), old)?;
    }
    let watch = crate::progress::watch_output(temp.path(), &path);
    let value = fill(temp.as_file_mut())?;
    temp.as_file().sync_all()?;
    drop(watch);
    in_flight.commit(|| temp.persist(&path)).map_err(|e| {
        io::Error::new(
            e.error.kind(),
            format!("cannot write {}: {}", path.display(), e.error),
        )
    })?;
    sync_folder(dir);
    Ok(value)
}

/// Drops the page cache of the regular file that writing `path` would replace (unless it is
/// `keep`, the file the output is being made from), before the new output is written.
///
/// Why: [`write_atomically`] keeps the old file whole until its rename, so its pages stay
/// cached while the new output's pages are added; `cp` over a file truncates it first and
/// holds only one copy. On a machine short of free memory the second copy was paid for as
/// direct reclaim during the write (1–2 s of system time for a 1 GiB output). Only clean
/// cached pages are dropped: the old file's content, on disk and as read, is unchanged, and
/// it stays in place until the rename. A no-op on tmpfs (its pages are the file) and off
/// Linux (no `posix_fadvise`).
#[cfg(target_os = "linux")]
pub fn drop_replaced_cache(path: &Path, keep: &File) {
    use std::os::fd::AsRawFd;
    let target = destination(path);
    let Ok(meta) = std::fs::metadata(&target) else {
        return;
    };
    let Ok(kept) = keep.metadata() else {
        return;
    };
    // Only regular files (opening a FIFO would block), and never the input itself: dropping
    // its pages would make the copy read it back from the disk.
    if !meta.is_file() || (meta.dev(), meta.ino()) == (kept.dev(), kept.ino()) {
        return;
    }
    if let Ok(old) = File::open(&target) {
        // SAFETY: posix_fadvise takes only integers and a descriptor `old` keeps open for the
        // call; it touches no memory of ours. A failure only keeps the pages cached.
        unsafe {
            libc::posix_fadvise(old.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
}

/// Off Linux there is no `posix_fadvise`: the old file's pages stay cached until the rename.
#[cfg(not(target_os = "linux"))]
pub fn drop_replaced_cache(_path: &Path, _keep: &File) {}

/// A new temporary file `<prefix>*.partial` in `dir`, created with mode `0666 & !umask`
/// (tempfile's default, `0600`, would make every output private whatever the umask).
fn temp_file(dir: &Path, prefix: &str) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(prefix)
        .suffix(PARTIAL_SUFFIX)
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)
}

/// Names of ckpt's own temporary outputs start with this and end with [`PARTIAL_SUFFIX`].
pub const PARTIAL_PREFIX: &str = ".ckpt-";
/// See [`PARTIAL_PREFIX`].
pub const PARTIAL_SUFFIX: &str = ".partial";

/// Removes from `dir` every `.ckpt-*.partial` file or folder whose `flock` can be taken: its
/// writer is gone (a live writer holds the lock until it renames or removes it). Returns how
/// many were removed; one that cannot be removed is left for the next sweep.
pub fn sweep_stale_partials(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(PARTIAL_PREFIX) && name.ends_with(PARTIAL_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        // Opened read-only: a folder can be opened and `flock`ed too.
        let Ok(candidate) = File::open(&path) else {
            continue;
        };
        if candidate.try_lock().is_err() {
            continue;
        }
        let gone = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// Makes a completed rename durable; failing here does not undo a complete output.
fn sync_folder(dir: &Path) {
    if let Ok(folder) = File::open(dir) {
        let _ = folder.sync_all();
    }
}

/// The folder a file at `path` lives in (`.` for a bare file name).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Why a file cannot be written at a path, found before any work is done.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputPathError {
    #[error("{path}: is a folder; give a file name for the output")]
    /// The path names a folder.
    IsFolder {
        /// The output path.
        path: String,
    },
    #[error("{path}: the folder {folder} does not exist")]
    /// The folder the file would be written in is missing.
    NoFolder {
        /// The output path.
        path: String,
        /// Its folder.
        folder: String,
    },
    #[error("{path}: {folder} is not a folder")]
    /// What should be the file's folder is something else.
    ParentNotFolder {
        /// The output path.
        path: String,
        /// Its would-be folder.
        folder: String,
    },
    #[error("{path}: cannot write into the folder {folder} (permission denied)")]
    /// The folder does not let us create the temporary file.
    FolderNotWritable {
        /// The output path.
        path: String,
        /// Its folder.
        folder: String,
    },
    #[error("{path}: the existing file is not writable")]
    /// The file to be replaced is read-only.
    FileNotWritable {
        /// The output path.
        path: String,
    },
}

/// Checks that [`write_atomically`] can create its temporary file beside `path`'s destination
/// and rename it into place: the destination is not a folder, its folder exists and is
/// writable, and an existing file there is writable.
pub fn check_writable(path: &Path) -> Result<(), OutputPathError> {
    let shown = path.display().to_string();
    let target = destination(path);
    if target.is_dir() {
        return Err(OutputPathError::IsFolder { path: shown });
    }
    let dir = folder_of(&target);
    let folder = dir.display().to_string();
    match std::fs::metadata(dir) {
        Err(_) => {
            return Err(OutputPathError::NoFolder {
                path: shown,
                folder,
            })
        }
        Ok(m) if !m.is_dir() => {
            return Err(OutputPathError::ParentNotFolder {
                path: shown,
                folder,
            })
        }
        Ok(_) => {}
    }
    if !may_write(dir) {
        return Err(OutputPathError::FolderNotWritable {
            path: shown,
            folder,
        });
    }
    if target.exists() && !may_write(&target) {
        return Err(OutputPathError::FileNotWritable { path: shown });
    }
    Ok(())
}

/// `path`, or what a symlink at `path` finally points to, so that writing replaces the
/// link's target and keeps the link. A dangling link resolves to itself.
fn destination(path: &Path) -> PathBuf {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        if let Ok(target) = std::fs::canonicalize(path) {
            return target;
        }
    }
    path.to_owned()
}

fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Gives `file` the mode of `old` and, where permitted, its owner and group (an
/// unprivileged user replacing someone else's file in a shared folder keeps ownership).
fn keep_owner_and_mode(file: &File, old: &std::fs::Metadata) -> io::Result<()> {
    let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
    file.set_permissions(Permissions::from_mode(old.mode() & 0o7777))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("metadata").mode() & 0o777
    }

    fn current_umask() -> u32 {
        // SAFETY: umask only swaps the process mask; it is put back at once.
        let mask = unsafe { libc::umask(0o022) };
        unsafe { libc::umask(mask) };
        mask
    }

    #[test]
    fn partials_of_dead_writers_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let dead = dir.path().join(".ckpt-dead1.partial");
        std::fs::write(&dead, b"half").expect("write");
        let dead_folder = dir.path().join(".ckpt-dead2.partial");
        std::fs::create_dir(&dead_folder).expect("mkdir");
        std::fs::write(dead_folder.join("0.distcp"), b"half").expect("write");
        let live = dir.path().join(".ckpt-live.partial");
        let held = File::create(&live).expect("create");
        held.lock().expect("lock");
        let other = dir.path().join(".model.pth.partial");
        std::fs::write(&other, b"not ours").expect("write");
        write_atomically(&dir.path().join("out.bin"), |f| f.write_all(b"done")).expect("write");
        assert!(!dead.exists() && !dead_folder.exists());
        assert!(live.exists() && other.exists());
        drop(held);
        assert_eq!(sweep_stale_partials(dir.path()), 1);
        assert!(!live.exists());
    }

    #[test]
    fn complete_output_appears_under_its_name() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        write_atomically(&path, |f| f.write_all(b"done")).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"done");
    }

    #[test]
    fn new_output_gets_the_mode_open_would_give() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        write_atomically(&path, |f| f.write_all(b"done")).expect("write");
        assert_eq!(mode(&path), 0o666 & !current_umask());
    }

    #[test]
    fn replaced_file_keeps_its_mode() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        std::fs::write(&path, b"old").expect("old");
        std::fs::set_permissions(&path, Permissions::from_mode(0o640)).expect("chmod");
        write_atomically(&path, |f| f.write_all(b"new")).expect("write");
        assert_eq!(mode(&path), 0o640);
    }

    #[test]
    fn writing_through_a_symlink_replaces_its_target_and_keeps_the_link() {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("real.bin");
        let link = dir.path().join("link.bin");
        std::fs::write(&target, b"old").expect("old");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        write_atomically(&link, |f| f.write_all(b"new")).expect("write");
        assert!(std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
    }

    #[test]
    fn failed_fill_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        let result: Result<(), io::Error> = write_atomically(&path, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("interrupted"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn dropping_the_replaced_cache_keeps_the_old_content() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        std::fs::write(&path, b"old").expect("old");
        let input = tempfile::tempfile().expect("input");
        drop_replaced_cache(&path, &input);
        drop_replaced_cache(&dir.path().join("missing.bin"), &input);
        let same = File::open(&path).expect("same");
        drop_replaced_cache(&path, &same);
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
    }

    #[test]
    fn output_path_problems_are_named_before_writing() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(matches!(
            check_writable(dir.path()),
            Err(OutputPathError::IsFolder { .. })
        ));
        let missing = dir.path().join("no/such/out.pt");
        let err = check_writable(&missing).expect_err("missing folder");
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(err.to_string().starts_with(&missing.display().to_string()));
        assert_eq!(check_writable(&dir.path().join("fine.pt")), Ok(()));
    }
}
