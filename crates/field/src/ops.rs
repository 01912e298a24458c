//! Element-wise field and point operations: `out[i] = op(a[i], b[i])`, on the
//! GPU or on the CPU through a host build of the same device formulas.
//!
//! This is the field layer's test and benchmark entry point: the host build
//! lets CI check the GPU's formulas against arkworks without a GPU, and the
//! GPU path checks the PTX carry chains themselves.
//!
//! ```
//! use cuzk_field::{ops, Backend, Fr, Kind, Op};
//! let a = [Fr::from(3u64), Fr::from(5u64)];
//! let b = [Fr::from(7u64), Fr::from(11u64)];
//! let mut out = [Fr::from(0u64); 2];
//! ops::apply(Backend::Cpu, Kind::Fr, Op::Mul, &a, &b, &mut out).unwrap();
//! assert_eq!(out, [Fr::from(21u64), Fr::from(55u64)]);
//! ```

use crate::layout::DeviceRepr;
use crate::{sys, Backend, Error, Result};
use ark_ff::PrimeField;
use std::mem::size_of;

/// The element kind an operation works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// BLS12-381 scalar field (255-bit r).
    Fr,
    /// BLS12-381 base field (381-bit p).
    Fp,
    /// Quadratic extension Fp[u]/(u^2 + 1).
    Fp2,
    /// Points of G1 (coordinates in Fp).
    G1,
    /// Points of G2 (coordinates in Fp2).
    G2,
}

/// An element-wise operation. Operand and result types per operation (the
/// checked entry points enforce them by size):
///
/// | op | kinds | a | b | out |
/// |---|---|---|---|---|
/// | `Add`, `Sub`, `Mul` | Fr, Fp, Fp2 | field | field | field |
/// | `Neg`, `Sqr`, `Inv` (0 maps to 0) | Fr, Fp, Fp2 | field | none | field |
/// | `Pow` | Fr, Fp | field | plain integer `BigInt<4>` / `BigInt<6>` | field |
/// | `JacDbl` | G1, G2 | Jacobian (`G1Projective`) | none | Jacobian |
/// | `JacAdd` | G1, G2 | Jacobian | Jacobian | Jacobian |
/// | `JacMadd` | G1, G2 | Jacobian | affine | Jacobian |
/// | `XyzzDbl` | G1, G2 | [`crate::Xyzz`] | none | XYZZ |
/// | `XyzzAdd` | G1, G2 | XYZZ | XYZZ | XYZZ |
/// | `XyzzMadd` | G1, G2 | XYZZ | affine | XYZZ |
///
/// Point formulas (EFD): Jacobian dbl-2009-l, add-2007-bl, madd-2007-bl;
/// XYZZ dbl-2008-s-1, add-2008-s, madd-2008-s. All are complete: identity
/// operands, P == Q and P == -Q give the right result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Op {
    Add,
    Sub,
    Neg,
    Mul,
    Sqr,
    Inv,
    Pow,
    JacDbl,
    JacAdd,
    JacMadd,
    XyzzDbl,
    XyzzAdd,
    XyzzMadd,
}

impl Kind {
    fn raw(self) -> i32 {
        (match self {
            Kind::Fr => sys::CUZK_KIND_FR,
            Kind::Fp => sys::CUZK_KIND_FP,
            Kind::Fp2 => sys::CUZK_KIND_FP2,
            Kind::G1 => sys::CUZK_KIND_G1,
            Kind::G2 => sys::CUZK_KIND_G2,
        }) as i32
    }
}

impl Op {
    fn raw(self) -> i32 {
        (match self {
            Op::Add => sys::CUZK_OP_ADD,
            Op::Sub => sys::CUZK_OP_SUB,
            Op::Neg => sys::CUZK_OP_NEG,
            Op::Mul => sys::CUZK_OP_MUL,
            Op::Sqr => sys::CUZK_OP_SQR,
            Op::Inv => sys::CUZK_OP_INV,
            Op::Pow => sys::CUZK_OP_POW,
            Op::JacDbl => sys::CUZK_OP_JAC_DBL,
            Op::JacAdd => sys::CUZK_OP_JAC_ADD,
            Op::JacMadd => sys::CUZK_OP_JAC_MADD,
            Op::XyzzDbl => sys::CUZK_OP_XYZZ_DBL,
            Op::XyzzAdd => sys::CUZK_OP_XYZZ_ADD,
            Op::XyzzMadd => sys::CUZK_OP_XYZZ_MADD,
        }) as i32
    }

    /// True when the operation reads the second operand `b`.
    pub fn reads_b(self) -> bool {
        !matches!(self, Op::Neg | Op::Sqr | Op::Inv | Op::JacDbl | Op::XyzzDbl)
    }
}

/// Bytes of one element of each operand of (kind, op); `b_bytes` is 0 when
/// the operation reads no `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of one `a` element.
    pub a_bytes: usize,
    /// Bytes of one `b` element (0: not read).
    pub b_bytes: usize,
    /// Bytes of one `out` element.
    pub out_bytes: usize,
}

/// The operand sizes of (kind, op).
///
/// # Errors
/// [`Error::InvalidArgument`] for a pair the table in [`Op`] does not list
/// (e.g. `Pow` on `Fp2`, `Mul` on `G1`).
pub fn layout(kind: Kind, op: Op) -> Result<Layout> {
    let (mut a, mut b, mut o) = (0u64, 0u64, 0u64);
    // SAFETY: out-pointers valid for the call.
    Error::check(unsafe {
        sys::cuzk_field_op_layout(kind.raw(), op.raw(), &mut a, &mut b, &mut o)
    })?;
    Ok(Layout {
        a_bytes: a as usize,
        b_bytes: b as usize,
        out_bytes: o as usize,
    })
}

/// Checks operand element sizes and lengths against (kind, op); returns `n`.
fn check_shapes(
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
            Backend::Gpu { device } => sys::cuzk_field_gpu_apply(
                device,
                kind.raw(),
                op.raw(),
                a,
                b,
                out,
                n as u64,
                std::ptr::null_mut(),
            ),
        }
    };
    Error::check(status)
}

/// Median GPU kernel time in milliseconds (CUDA events, `reps` runs after
/// one warm-up) of `op` over `a`, `b` copied to device `device` once.
/// For benchmarks; the result is discarded.
///
/// # Errors
/// As [`apply`] on the GPU backend; `reps` must be at least 1.
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
    let mut ms = 0f32;
    // SAFETY: shapes checked; `ms` is a valid out-pointer.
    Error::check(unsafe {
        sys::cuzk_field_gpu_bench(
            device,
            kind.raw(),
            op.raw(),
            a.as_ptr().cast(),
            b_ptr,
            n as u64,
            reps,
            &mut ms,
        )
    })?;
    Ok(ms)
}
