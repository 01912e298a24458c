//! The checked element-wise entry points: typed slices, unary operations
//! and raw bytes, dispatched to the host build or the GPU.

use super::{layout, Kind, Op};
use crate::layout::DeviceRepr;
use crate::{sys, Backend, Error, Result};
use ark_ff::PrimeField;
use std::mem::size_of;

/// Checks operand element sizes and lengths against (kind, op); returns `n`.
pub(super) fn check_shapes(
    kind: Kind,
    op: Op,
    a: (usize, usize),
    b: (usize, usize),
    out: (usize, usize),
) -> Result<usize> {
    let l = layout(kind, op)?;
    let n = a.1;
    let bad = |what: &str, got: usize, want: usize| {
        Error::InvalidArgument(format!(
            "{kind:?} {op:?}: {what} elements are {got} bytes, the operation takes {want}-byte elements"
        ))
    };
    if a.0 != l.a_bytes {
        return Err(bad("a", a.0, l.a_bytes));
    }
    if out.0 != l.out_bytes {
        return Err(bad("out", out.0, l.out_bytes));
    }
    if out.1 != n {
        return Err(Error::InvalidArgument(format!(
            "{kind:?} {op:?}: out has {} elements but a has {n}; give them the same length",
            out.1
        )));
    }
    if op.reads_b() {
        if b.0 != l.b_bytes {
            return Err(bad("b", b.0, l.b_bytes));
        }
        if b.1 != n {
            return Err(Error::InvalidArgument(format!(
                "{kind:?} {op:?}: b has {} elements but a has {n}; give them the same length",
                b.1
            )));
        }
    } else if b.1 != 0 {
        return Err(Error::InvalidArgument(format!(
            "{kind:?} {op:?} reads no b operand; pass an empty slice (got {} elements)",
            b.1
        )));
    }
    Ok(n)
}

/// Runs `out[i] = op(a[i], b[i])` for typed slices (arkworks types, passed
/// to the GPU without conversion). For operations that read no `b`, use
/// [`apply_unary`] (or pass `&[] as &[Fr]`).
///
/// # Errors
/// [`Error::InvalidArgument`] when the element types do not fit (kind, op)
/// or the lengths differ (for an element type of the wrong kind, e.g. Fr
/// data with `Kind::Fp`, the message names both sizes); on the GPU backend, [`Error::NoCudaBuild`],
/// [`Error::NoDevice`], [`Error::OutOfMemory`] or [`Error::Cuda`]. On error
/// `out` may be partly written; `a` and `b` are never modified.
pub fn apply<A: DeviceRepr, B: DeviceRepr, O: DeviceRepr>(
    backend: Backend,
    kind: Kind,
    op: Op,
    a: &[A],
    b: &[B],
    out: &mut [O],
) -> Result<()> {
    let n = check_shapes(
        kind,
        op,
        (size_of::<A>(), a.len()),
        (size_of::<B>(), b.len()),
        (size_of::<O>(), out.len()),
    )?;
    // SAFETY: the shapes were checked against the native layout table.
    unsafe {
        apply_raw(
            backend,
            kind,
            op,
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            n,
        )
    }
}

/// [`apply`] for the operations that read no `b` (`Neg`, `Sqr`, `Inv`,
/// `JacDbl`, `XyzzDbl`): `out[i] = op(a[i])`.
///
/// ```
/// use cuzk_field::{ops, Backend, Fr, Kind, Op};
/// let a = [Fr::from(2u64), Fr::from(4u64)];
/// let mut out = [Fr::from(0u64); 2];
/// ops::apply_unary(Backend::Cpu, Kind::Fr, Op::Inv, &a, &mut out).unwrap();
/// assert_eq!(out[0] * a[0], Fr::from(1u64));
/// ```
///
/// # Errors
/// As [`apply`]; [`Error::InvalidArgument`] for an operation that reads `b`.
pub fn apply_unary<A: DeviceRepr, O: DeviceRepr>(
    backend: Backend,
    kind: Kind,
    op: Op,
    a: &[A],
    out: &mut [O],
) -> Result<()> {
    if op.reads_b() {
        return Err(Error::InvalidArgument(format!(
            "{kind:?} {op:?} reads a second operand; call ops::apply with b"
        )));
    }
    apply(backend, kind, op, a, &[] as &[A], out)
}

/// Like [`apply`], over raw little-endian bytes (for callers that hold
/// encoded elements). Each field element in `a` and `b` is checked to be a
/// canonical Montgomery-form encoding (limbs below the modulus) first;
/// `Pow` exponents are plain integers and not checked.
///
/// # Errors
/// As [`apply`], plus [`Error::InvalidArgument`] for a byte length that is
/// not a whole number of elements or a non-canonical field element (its
/// index is named).
pub fn apply_bytes(
    backend: Backend,
    kind: Kind,
    op: Op,
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let l = layout(kind, op)?;
    let count = |what: &str, bytes: usize, elem: usize| {
        if elem == 0 || bytes % elem != 0 {
            Err(Error::InvalidArgument(format!(
                "{kind:?} {op:?}: {what} is {bytes} bytes, not a whole number of {elem}-byte elements"
            )))
        } else {
            Ok(bytes / elem)
        }
    };
    let n = count("a", a.len(), l.a_bytes)?;
    let nb = if op.reads_b() {
        count("b", b.len(), l.b_bytes)?
    } else {
        b.len()
    };
    let no = count("out", out.len(), l.out_bytes)?;
    check_shapes(kind, op, (l.a_bytes, n), (l.b_bytes, nb), (l.out_bytes, no))?;
    check_canonical(kind, "a", a)?;
    if op.reads_b() && op != Op::Pow {
        check_canonical(kind, "b", b)?;
    }
    // SAFETY: the shapes were checked against the native layout table.
    unsafe {
        apply_raw(
            backend,
            kind,
            op,
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            n,
        )
    }
}

/// Checks that every field element in `bytes` (Fr for `Kind::Fr`, else Fp:
/// points and Fp2 are sequences of Fp) is below its modulus.
fn check_canonical(kind: Kind, what: &str, bytes: &[u8]) -> Result<()> {
    fn check<F: PrimeField>(what: &str, bytes: &[u8]) -> Result<()> {
        let width = F::MODULUS.as_ref().len() * 8;
        let modulus = F::MODULUS;
        for (i, chunk) in bytes.chunks_exact(width).enumerate() {
            let mut limbs = modulus;
            for (l, w) in limbs.as_mut().iter_mut().zip(chunk.chunks_exact(8)) {
                *l = u64::from_le_bytes(w.try_into().expect("8-byte chunk"));
            }
            if limbs >= modulus {
                return Err(Error::InvalidArgument(format!(
                    "{what}: field element {i} (bytes {}..{}) is not canonical: its Montgomery limbs are not below the modulus {}",
                    i * width,
                    (i + 1) * width,
                    modulus
                )));
            }
        }
        Ok(())
    }
    match kind {
        Kind::Fr => check::<crate::Fr>(what, bytes),
        _ => check::<crate::Fp>(what, bytes),
    }
}

/// Dispatches to the native host or GPU entry point.
///
/// # Safety
/// `a`, `b` (when the op reads it) and `out` point to `n` elements of the
/// sizes `layout(kind, op)` gives.
unsafe fn apply_raw(
    backend: Backend,
    kind: Kind,
    op: Op,
    a: *const std::ffi::c_void,
    b: *const std::ffi::c_void,
    out: *mut std::ffi::c_void,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let b = if op.reads_b() { b } else { std::ptr::null() };
    // SAFETY: guaranteed by the caller.
    let status = unsafe {
        match backend {
            Backend::Cpu => sys::cuzk_field_host_apply(kind.raw(), op.raw(), a, b, out, n as u64),
            Backend::Gpu { device } => {
                let operands = sys::cuzk_field_operands {
                    kind: kind.raw(),
                    op: op.raw(),
                    a,
                    b,
                    out,
                    n: n as u64,
                };
                sys::cuzk_field_gpu_apply(device, &operands, std::ptr::null_mut())
            }
        }
    };
    Error::check(status)
}
