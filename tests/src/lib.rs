//! Shared test templates for cuzk's crates: GPU gating, seeded random
//! inputs, edge values, and the arkworks cross-check of the field layer's
//! element-wise operations.
//!
//! - GPU tests are marked `#[ignore = "needs a GPU"]` (inside `proptest!`
//!   too), so that on a machine without a GPU the test runner counts them as
//!   ignored, never as passed. `cargo xtask test` runs them
//!   (`-- --include-ignored`) when `nvidia-smi -L` lists a GPU or
//!   `CUZK_REQUIRE_GPU=1`; the bundle's `./run-tests` always does. By hand:
//!   `cargo test -p cuzk-tests --features cuda -- --include-ignored`.
//! - Their bodies still call [`gpu_or_skip`]: run without a GPU (with
//!   `--include-ignored`), they print why and return, unless
//!   `CUZK_REQUIRE_GPU=1`, where they fail.
//! - Random inputs come from [`rng`]: a fresh seed each run, printed, and
//!   replayed by setting `CUZK_TEST_SEED`.

pub mod cross;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// True when `CUZK_REQUIRE_GPU=1`: GPU tests must run, not skip.
pub fn gpu_required() -> bool {
    std::env::var("CUZK_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The GPU to test on (ordinal 0), or `None` after printing why the test is
/// skipped.
///
/// # Panics
/// When there is no usable GPU and `CUZK_REQUIRE_GPU=1`.
pub fn gpu_or_skip(test: &str) -> Option<i32> {
    match cuzk_field::gpu::device_count() {
        Ok(n) if n > 0 => Some(0),
        Ok(_) => skip(test, "the CUDA runtime reports 0 devices"),
        Err(e) => skip(test, &e.to_string()),
    }
}

fn skip(test: &str, why: &str) -> Option<i32> {
    if gpu_required() {
        panic!("{test}: CUZK_REQUIRE_GPU=1 but no GPU is usable: {why}");
    }
    // Straight to stderr, not through eprintln!: the test harness captures
    // the print macros of passing tests, and a skip must be seen.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no GPU ({why}); set CUZK_REQUIRE_GPU=1 to make this a failure"
    );
    None
}

/// Prints `line` straight to stderr, past the test harness's capture of
/// the print macros, so that device logs keep counts and figures of passing
/// tests.
pub fn report(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A ChaCha20 generator with a fresh seed (or `CUZK_TEST_SEED` when set),
/// printed so that a failure can be replayed.
pub fn rng(test: &str) -> ChaCha20Rng {
    let seed = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().next_u64());
    eprintln!("{test}: CUZK_TEST_SEED={seed}");
    ChaCha20Rng::seed_from_u64(seed)
}
