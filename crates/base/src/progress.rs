//! Progress of one long command (a remap, a conversion, an export) on stderr.
//!
//! A command starts a [`Task`] for its input; while the task lives, a spinner with the
//! elapsed time says what is happening, and once [`crate::atomic_file`] starts writing the
//! output, a bar shows the bytes written against the input's size (an estimate: a cast to
//! float16 writes about half), with speed and ETA. Nothing is drawn unless stderr is a
//! terminal and `--quiet` was not given ([`shown`]); the library's writers only ever report
//! to the task the command started, so they need no progress parameter.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

/// The bar of the running [`Task`], if one is shown. Set by [`Task::start`], cleared on drop.
static CURRENT: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// How often the size of a file being written is read.
const POLL: Duration = Duration::from_millis(150);

/// Hides every progress display (`--quiet`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether progress is drawn: stderr is a terminal and `--quiet` was not given.
pub fn shown() -> bool {
    !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// The progress display of one command working on one input; cleared when dropped.
pub struct Task {
    bar: Option<ProgressBar>,
}

impl Task {
    /// Starts the display for work on `input`; the output is expected to be about as large.
    pub fn start(input: &Path) -> Task {
        let bar = shown().then(|| {
            let expected = std::fs::metadata(input).map_or(0, |m| m.len());
            let bar = ProgressBar::with_draw_target(Some(expected), ProgressDrawTarget::stderr());
            bar.set_style(style("{spinner} {msg} {elapsed}"));
            let name = input.file_name().map_or_else(
                || input.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            bar.set_message(format!("reading {name}"));
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if let Ok(mut current) = CURRENT.lock() {
            current.clone_from(&bar);
        }
        Task { bar }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if let Ok(mut current) = CURRENT.lock() {
            *current = None;
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Shows the growth of `file` (being written as `shown_as`) on the running task's bar
/// until dropped; writing the output is a command's last long step, so the display ends
/// there, before the command prints its summary. Does nothing when no task is shown.
pub(crate) fn watch_output(file: &Path, shown_as: &Path) -> Watch {
    let bar = CURRENT.lock().ok().and_then(|mut current| current.take());
    let Some(bar) = bar else {
        return Watch { poller: None };
    };
    bar.set_style(style(
        "{spinner} {msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
    ));
    let name = shown_as
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    bar.set_message(format!("writing {name}"));
    bar.set_position(0);
    bar.reset_eta();
    let stop = Arc::new(AtomicBool::new(false));
    let file: PathBuf = file.to_owned();
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(meta) = std::fs::metadata(&file) {
                    bar.set_position(meta.len());
                }
                std::thread::sleep(POLL);
            }
            bar
        })
    };
    Watch {
        poller: Some(Poller { stop, thread }),
    }
}

/// A running [`watch_output`]; stops polling and clears the bar when dropped.
pub(crate) struct Watch {
    poller: Option<Poller>,
}

struct Poller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ProgressBar>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(poller) = self.poller.take() {
            poller.stop.store(true, Ordering::Relaxed);
            if let Ok(bar) = poller.thread.join() {
                bar.finish_and_clear();
            }
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .progress_chars("=> ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hides_progress_even_on_a_terminal() {
        set_quiet(true);
        assert!(!shown());
        let task = Task::start(Path::new("/nonexistent"));
        assert!(task.bar.is_none());
        set_quiet(false);
    }

    #[test]
    fn watching_without_a_shown_task_starts_no_thread() {
        let watch = watch_output(Path::new("/nonexistent"), Path::new("out"));
        assert!(watch.poller.is_none());
    }
}
