//! The run's progress bar (stderr) and its messages.

use std::sync::OnceLock;
use std::time::Instant;

/// The progress bar; hidden when stderr is not a terminal, where each step
/// is printed as a line instead.
static PROGRESS: OnceLock<indicatif::ProgressBar> = OnceLock::new();

/// When the run started (for the elapsed time printed with each step).
static STARTED: OnceLock<Instant> = OnceLock::new();

/// Starts the progress bar with `steps` steps (a rough count, for the ETA).
pub(crate) fn start(steps: u64) {
    let _ = STARTED.set(Instant::now());
    let pb = indicatif::ProgressBar::new(steps);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {msg} (about {eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let _ = PROGRESS.set(pb);
}

/// Removes the progress bar before the tables are printed.
pub(crate) fn finish() {
    if let Some(pb) = PROGRESS.get() {
        pb.finish_and_clear();
    }
}

/// Announces one benchmark step (layer and size); without a terminal, as a
/// line that starts with the seconds since the run started.
pub(crate) fn step(msg: String) {
    match PROGRESS.get() {
        Some(pb) if !pb.is_hidden() => {
            pb.set_message(msg);
            pb.inc(1);
        }
        _ => {
            let s = STARTED.get().map_or(0.0, |t| t.elapsed().as_secs_f64());
            eprintln!("[{s:6.1} s] {msg}")
        }
    }
}

/// Prints a line on stderr above the progress bar.
pub(crate) fn say(msg: String) {
    match PROGRESS.get() {
        Some(pb) if !pb.is_hidden() => pb.suspend(|| eprintln!("{msg}")),
        _ => eprintln!("{msg}"),
    }
}
