//! A benchmark helper: the median GPU kernel time of one operation
//! (`test-utils` feature).

use super::apply::check_shapes;
use super::{layout, Kind, Op};
use crate::layout::DeviceRepr;
use crate::{sys, Error, Result};
use std::mem::size_of;

/// Median GPU kernel time in milliseconds (CUDA events, `reps` runs after
/// one warm-up) of `op` over `a`, `b` copied to device `device` once.
/// For benchmarks (only with the `test-utils` feature); the result is
/// discarded.
///
/// # Errors
/// As [`apply`](super::apply) on the GPU backend; `reps` must be at least 1.
pub fn gpu_bench<A: DeviceRepr, B: DeviceRepr>(
    device: i32,
    kind: Kind,
    op: Op,
    a: &[A],
    b: &[B],
    reps: u32,
) -> Result<f32> {
    let l = layout(kind, op)?;
    let n = check_shapes(
        kind,
        op,
        (size_of::<A>(), a.len()),
        (size_of::<B>(), b.len()),
        (l.out_bytes, a.len()),
    )?;
    if reps == 0 || n == 0 {
        return Err(Error::InvalidArgument(
            "gpu_bench needs reps >= 1 and a non-empty input".into(),
        ));
    }
    let b_ptr = if op.reads_b() {
        b.as_ptr().cast()
    } else {
        std::ptr::null()
    };
    let operands = sys::cuzk_field_operands {
        kind: kind.raw(),
        op: op.raw(),
        a: a.as_ptr().cast(),
        b: b_ptr,
        out: std::ptr::null_mut(),
        n: n as u64,
    };
    let mut ms = 0f32;
    // SAFETY: shapes checked (`a` and, where read, `b` hold `n` elements of
    // the layout's sizes; `out` is not used); `ms` is a valid out-pointer.
    Error::check(unsafe { sys::cuzk_field_gpu_bench(device, &operands, reps, &mut ms) })?;
    Ok(ms)
}
