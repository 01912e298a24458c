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

mod apply;
#[cfg(feature = "test-utils")]
mod bench;

pub use apply::{apply, apply_bytes, apply_unary};
#[cfg(feature = "test-utils")]
pub use bench::gpu_bench;

use crate::{sys, Error, Result};

/// The element kind an operation works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// BLS12-381 scalar field (255-bit r).
    Fr,
    /// BLS12-381 base field (381-bit p).
    Fp,
    /// Quadratic extension `Fp[u]/(u^2 + 1)`.
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
    })
    .map_err(|e| match e {
        Error::InvalidArgument(_) => Error::InvalidArgument(format!(
            "{op:?} on {kind:?} is not supported: the table in `cuzk_field::ops::Op` lists \
             the operations each kind takes"
        )),
        e => e,
    })?;
    Ok(Layout {
        a_bytes: a as usize,
        b_bytes: b as usize,
        out_bytes: o as usize,
    })
}
