//! Timing helpers: medians of wall-clock and CUDA-event times after a warm-up.

use anyhow::Result;
use std::time::Instant;

/// The median of `v` (the upper one for an even count).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Wall time in ms of `f`: median of at least `reps` runs (more for short
/// calls, up to 50) after a warm-up of at least one call and 200 ms.
pub(crate) fn wall_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    // Warm-up: at least one call and at least 200 ms of calls, so that a
    // GPU that idled at low clocks (while a CPU reference ran) is back at
    // its boost clock before the timed calls; then at least `reps` timed
    // calls and, for short calls, more until 200 ms were timed (at most 50).
    let warm = Instant::now();
    f();
    while warm.elapsed().as_secs_f64() < 0.2 {
        f();
    }
    let mut times = Vec::with_capacity(reps);
    let mut spent = 0.0;
    while times.len() < reps || (spent < 200.0 && times.len() < 50) {
        let t = Instant::now();
        f();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        spent += ms;
        times.push(ms);
    }
    median(times)
}

/// As [`wall_ms`], timed by CUDA events on `stream` around each call
/// (`f` queues work there): device time from the first queued operation to
/// the last, the way the sppark peer's figures are taken; ms, median.
pub(crate) fn event_ms(
    reps: usize,
    stream: &cuzk_alloc::Stream,
    mut f: impl FnMut(),
) -> Result<f64> {
    let (start, stop) = (
        cuzk_alloc::Event::new(stream.device())?,
        cuzk_alloc::Event::new(stream.device())?,
    );
    let warm = Instant::now();
    f();
    stream.synchronize()?;
    while warm.elapsed().as_secs_f64() < 0.2 {
        f();
        stream.synchronize()?;
    }
    let mut times = Vec::with_capacity(reps);
    let mut spent = 0.0;
    while times.len() < reps || (spent < 200.0 && times.len() < 50) {
        start.record(stream)?;
        f();
        stop.record(stream)?;
        let ms = f64::from(start.elapsed_ms(&stop)?);
        spent += ms;
        times.push(ms);
    }
    Ok(median(times))
}

/// Wall time in ms of one call of `f`, and its result.
pub(crate) fn once_ms<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let r = f();
    (t.elapsed().as_secs_f64() * 1e3, r)
}
