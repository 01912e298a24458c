//! Bench-only bindings to sppark 0.1.16's BLS12-381 NTT and G1 MSM, the
//! GPU peer in cuzk's benchmark (same card, same run). Not a cuzk library:
//! no checks beyond lengths; errors come back as strings.

use cuzk_field::{Fr, G1Affine, G1Projective};
#[cfg(cuzk_sppark)]
use std::ffi::{c_char, c_void};

// Keep sppark's and blst's static libraries linked in.
use blst as _;
use sppark as _;

#[cfg(cuzk_sppark)]
extern "C" {
    fn cuzk_sppark_ntt_bench(
        host: *const c_void,
        out: *mut c_void,
        lg_n: u32,
        reps: u32,
        median_ms: *mut f32,
        err: *mut c_char,
        errlen: usize,
    ) -> i32;
    fn cuzk_sppark_msm_g1(
        points: *const c_void,
        scalars: *const c_void,
        n: usize,
        out: *mut c_void,
        err: *mut c_char,
        errlen: usize,
    ) -> i32;
    fn cuzk_sppark_msm_g1_resident(
        points: *const c_void,
        scalars: *const c_void,
        n: usize,
        reps: u32,
        out: *mut c_void,
        times_ms: *mut f64,
        err: *mut c_char,
        errlen: usize,
    ) -> i32;
}

#[cfg(not(cuzk_sppark))]
const NO_PEER: &str = "the sppark peer was built without nvcc";

#[cfg(not(cuzk_sppark))]
/// Without nvcc: always an error.
pub fn ntt_forward_nn(_: &[Fr], _: u32) -> Result<(f32, Vec<Fr>), String> {
    Err(NO_PEER.into())
}

#[cfg(not(cuzk_sppark))]
/// Without nvcc: always an error.
pub fn msm_g1(_: &[G1Affine], _: &[Fr]) -> Result<G1Projective, String> {
    Err(NO_PEER.into())
}

#[cfg(not(cuzk_sppark))]
/// Without nvcc: always an error.
pub fn msm_g1_resident(
    _: &[G1Affine],
    _: &[Fr],
    _: u32,
) -> Result<(G1Projective, Vec<f64>), String> {
    Err(NO_PEER.into())
}

#[cfg(cuzk_sppark)]
fn message(code: i32, err: &[u8]) -> String {
    let end = err.iter().position(|&c| c == 0).unwrap_or(err.len());
    format!(
        "sppark error {code}: {}",
        String::from_utf8_lossy(&err[..end])
    )
}

#[cfg(cuzk_sppark)]
/// sppark's forward NTT (natural order in and out) of `data` (2^k elements)
/// on GPU 0, device-resident: median kernel time in ms over `reps` runs
/// after a warm-up, and the transform's output.
///
/// # Errors
/// A message when `data` is not a power of two or sppark fails.
pub fn ntt_forward_nn(data: &[Fr], reps: u32) -> Result<(f32, Vec<Fr>), String> {
    if !data.len().is_power_of_two() {
        return Err(format!("length {} is not a power of two", data.len()));
    }
    let mut out = vec![Fr::from(0u64); data.len()];
    let mut ms = 0f32;
    let mut err = [0u8; 256];
    // SAFETY: `data` and `out` hold 2^lg_n elements; err holds 256 bytes.
    let code = unsafe {
        cuzk_sppark_ntt_bench(
            data.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            data.len().trailing_zeros(),
            reps.max(1),
            &mut ms,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    if code != 0 {
        return Err(message(code, &err));
    }
    Ok((ms, out))
}

#[cfg(cuzk_sppark)]
/// sppark's G1 MSM of `points` and `scalars` (host memory, copied in by
/// sppark on every call) on GPU 0.
///
/// # Errors
/// A message on a length mismatch or an sppark failure.
pub fn msm_g1(points: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, String> {
    if points.len() != scalars.len() {
        return Err(format!(
            "{} points but {} scalars",
            points.len(),
            scalars.len()
        ));
    }
    let mut out = G1Projective::default();
    let mut err = [0u8; 256];
    // SAFETY: equal lengths; `out` is a 144-byte Jacobian point.
    let code = unsafe {
        cuzk_sppark_msm_g1(
            points.as_ptr().cast(),
            scalars.as_ptr().cast(),
            points.len(),
            (&mut out as *mut G1Projective).cast(),
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    if code != 0 {
        return Err(message(code, &err));
    }
    Ok(out)
}

#[cfg(cuzk_sppark)]
/// sppark's G1 MSM with `points` uploaded once and `scalars` copied in from
/// host memory on each of `reps` calls (after one warm-up call), on GPU 0:
/// the last call's result and each call's wall time in ms.
///
/// # Errors
/// A message on a length mismatch, `reps == 0`, or an sppark failure.
pub fn msm_g1_resident(
    points: &[G1Affine],
    scalars: &[Fr],
    reps: u32,
) -> Result<(G1Projective, Vec<f64>), String> {
    if points.len() != scalars.len() {
        return Err(format!(
            "{} points but {} scalars",
            points.len(),
            scalars.len()
        ));
    }
    if reps == 0 {
        return Err("at least one timed call is needed".into());
    }
    let mut out = G1Projective::default();
    let mut times = vec![0f64; reps as usize];
    let mut err = [0u8; 256];
    // SAFETY: equal lengths; `out` is a 144-byte Jacobian point; `times`
    // holds `reps` values.
    let code = unsafe {
        cuzk_sppark_msm_g1_resident(
            points.as_ptr().cast(),
            scalars.as_ptr().cast(),
            points.len(),
            reps,
            (&mut out as *mut G1Projective).cast(),
            times.as_mut_ptr(),
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    if code != 0 {
        return Err(message(code, &err));
    }
    Ok((out, times))
}
