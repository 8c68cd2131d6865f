//! Progress on stderr: on a terminal, an overall bar (files, bytes/s, ETA) and a line per
//! active input; otherwise one plain line per finished input.
//!
//! The overall bar counts input bytes: each input's bytes as it is hashed (the first full
//! read of every input), the rest when it finishes, so speed and ETA move from the start.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How an input ended, for the log.
pub enum Outcome<'a> {
    Done { seconds: f64 },
    Skipped,
    Failed { error: &'a str },
}

/// The progress display of one batch run.
pub struct Progress {
    bars: Option<(MultiProgress, ProgressBar)>,
    total: usize,
    finished: AtomicUsize,
}

/// The line of one active input; removed when dropped.
pub struct Active {
    line: Option<ProgressBar>,
    overall: Option<ProgressBar>,
    key: String,
    /// Input bytes already counted on the overall bar.
    counted: Cell<u64>,
}

impl Progress {
    /// Bars when stderr is a terminal, plain lines otherwise.
    pub fn new(total_files: usize, total_bytes: u64) -> Progress {
        let bars = ckpt_base::progress::shown().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let overall = multi.add(ProgressBar::new(total_bytes));
            overall.set_style(
                ProgressStyle::with_template(
                    "{wide_bar} {msg} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            overall.set_message(format!("0/{total_files} files"));
            (multi, overall)
        });
        Progress {
            bars,
            total: total_files,
            finished: AtomicUsize::new(0),
        }
    }

    /// Shows a line for an input being processed.
    pub fn start(&self, key: &str) -> Active {
        let line = self.bars.as_ref().map(|(multi, _)| {
            let line = multi.add(ProgressBar::new_spinner());
            line.set_style(
                ProgressStyle::with_template("  {spinner} {prefix} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            line.set_prefix(key.to_owned());
            line.enable_steady_tick(Duration::from_millis(200));
            line
        });
        Active {
            line,
            overall: self.bars.as_ref().map(|(_, overall)| overall.clone()),
            key: key.to_owned(),
            counted: Cell::new(0),
        }
    }

    /// Records a finished input of `bytes` bytes.
    pub fn finish(&self, active: Active, bytes: u64, outcome: Outcome<'_>) {
        let n = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
        let line = match outcome {
            Outcome::Done { seconds } => format!(
                "ok {} ({:.1} MiB in {seconds:.2} s)",
                active.key,
                bytes as f64 / f64::from(1 << 20)
            ),
            Outcome::Skipped => format!("skipped {} (up to date)", active.key),
            Outcome::Failed { error } => format!("FAILED {}: {error}", active.key),
        };
        match &self.bars {
            Some((multi, overall)) => {
                overall.inc(bytes.saturating_sub(active.counted.get()));
                overall.set_message(format!("{n}/{} files", self.total));
                let _ = multi.println(format!("[{n}/{}] {line}", self.total));
            }
            None => eprintln!("ckpt batch: [{n}/{}] {line}", self.total),
        }
        drop(active);
    }

    /// Removes the bars.
    pub fn close(&self) {
        if let Some((_, overall)) = &self.bars {
            overall.finish_and_clear();
        }
    }
}

impl Active {
    /// Shows the step the input is at.
    pub fn step(&self, name: &str) {
        if let Some(line) = &self.line {
            line.set_message(name.to_owned());
        }
    }

    /// Counts `bytes` more of this input as read.
    pub fn read(&self, bytes: u64) {
        if let Some(overall) = &self.overall {
            overall.inc(bytes);
            self.counted.set(self.counted.get() + bytes);
        }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if let Some(line) = &self.line {
            line.finish_and_clear();
        }
    }
}
