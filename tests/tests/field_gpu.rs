//! The GPU's field and point operations (the PTX carry chains included)
//! against arkworks: for every operation, the edge values (every pair for
//! binary operations) plus 2^16 fresh random cases. Every test is
//! `#[ignore = "needs a GPU"]` (run them with `--include-ignored`) and still
//! skips without a GPU unless `CUZK_REQUIRE_GPU=1`.

use cuzk_field::{ops, Backend, Fr, Kind, Op};
use cuzk_tests::cross::{cross_check, ALL_OPS};
use cuzk_tests::{gpu_or_skip, report, rng};

/// Random cases per operation on the GPU.
const RANDOM_CASES: usize = 1 << 16;

#[test]
#[ignore = "needs a GPU"]
fn every_op_matches_arkworks_on_the_gpu() {
    let Some(device) = gpu_or_skip("every_op_matches_arkworks_on_the_gpu") else {
        return;
    };
    let mut rng = rng("every_op_matches_arkworks_on_the_gpu");
    let mut failures = Vec::new();
    let mut total = 0;
    for &(kind, op) in ALL_OPS {
        match cross_check(Backend::Gpu { device }, kind, op, &mut rng, RANDOM_CASES) {
            Ok(n) => {
                report(&format!("gpu {kind:?} {op:?}: {n} cases match arkworks"));
                total += n;
            }
            Err(e) => failures.push(e),
        }
    }
    report(&format!(
        "gpu field/point ops: {total} cases checked over {} operations",
        ALL_OPS.len()
    ));
    assert!(
        failures.is_empty(),
        "{} operations differ from arkworks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_bad_device_is_an_error_and_the_gpu_stays_usable() {
    let Some(device) = gpu_or_skip("gpu_bad_device_is_an_error_and_the_gpu_stays_usable") else {
        return;
    };
    let a = [Fr::from(3u64); 8];
    let mut out = [Fr::from(0u64); 8];
    let e = ops::apply(
        Backend::Gpu { device: 1 << 20 },
        Kind::Fr,
        Op::Sqr,
        &a,
        &[] as &[Fr],
        &mut out,
    )
    .unwrap_err();
    assert!(!e.to_string().is_empty());
    ops::apply(
        Backend::Gpu { device },
        Kind::Fr,
        Op::Sqr,
        &a,
        &[] as &[Fr],
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [Fr::from(9u64); 8]);
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_device_info_is_sane() {
    let Some(device) = gpu_or_skip("gpu_device_info_is_sane") else {
        return;
    };
    let info = cuzk_field::gpu::device_info(device).unwrap();
    report(&format!("{info:?}"));
    assert!(info.sm_count > 0 && info.total_memory_bytes > (1 << 30));
    assert!(cuzk_field::cuda_compiled());
}
