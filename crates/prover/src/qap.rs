//! The witness side of Groth16's QAP: the evaluations `A z`, `B z`, `C z` and the quotient H.
//!
//! libsnark's reduction, as ark-groth16's `LibsnarkReduction` computes it:
//! the evaluations `A z`, `B z`, `C z` of
//! the constraint matrices on the full assignment, and the coefficients of
//! `H = (A B - C) / Z` through NTTs on the default coset.

use crate::r1cs::ConstraintMatrices;
use crate::{Error, Fr, Result};
use ark_ff::{AdditiveGroup, Field};
use ark_relations::gr1cs::Matrix;
use cuzk_alloc::DeviceBuffer;
use cuzk_ntt::{GpuNtt, NttOptions, Order};
use rayon::prelude::*;

/// Size exponent of the evaluation domain for `num_constraints` constraints
/// and `num_inputs` instance variables (including the constant one): the
/// smallest power of two holding both, as ark-poly's radix-2 domain picks.
///
/// # Errors
/// [`Error::InvalidArgument`] beyond 2^32 (Fr's two-adicity).
pub(crate) fn domain_log_size(num_constraints: usize, num_inputs: usize) -> Result<u32> {
    let m = num_constraints
        .checked_add(num_inputs)
        .and_then(|m| m.max(1).checked_next_power_of_two())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{num_constraints} constraints and {num_inputs} inputs need a domain beyond usize; \
                 Fr's roots of unity allow at most 2^{}",
                cuzk_ntt::MAX_LOG_N
            ))
        })?;
    let log_n = m.trailing_zeros();
    if log_n > cuzk_ntt::MAX_LOG_N {
        return Err(Error::InvalidArgument(format!(
            "{num_constraints} constraints and {num_inputs} inputs need a domain of 2^{log_n}, \
             more than Fr's 2^{} roots of unity",
            cuzk_ntt::MAX_LOG_N
        )));
    }
    Ok(log_n)
}

/// `out[i] = <row i of m, z>` for every row, in parallel.
fn eval_rows(m: &Matrix<Fr>, z: &[Fr], out: &mut [Fr], name: &str) -> Result<()> {
    out.par_iter_mut()
        .zip(m.par_iter())
        .enumerate()
        .try_for_each(|(i, (o, row))| {
            let mut acc = Fr::ZERO;
            for &(coeff, col) in row {
                let v = z.get(col).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "matrix {name}, constraint {i}: column {col} is past the assignment's {} \
                         variables; the matrices and the assignment come from different circuits",
                        z.len()
                    ))
                })?;
                if coeff == Fr::ONE {
                    acc += v;
                } else {
                    acc += *v * coeff;
                }
            }
            *o = acc;
            Ok(())
        })
}

/// The three evaluation vectors of 2^log_n elements each: `a`, `b`, `c` hold
/// `A z`, `B z`, `C z` on the constraints; `a` also holds the instance
/// variables after them (the input-consistency rows libsnark's reduction
/// adds); the rest is zero.
///
/// With `check`, a row where `a * b != c` is an [`Error::InvalidArgument`].
///
/// # Errors
/// [`Error::InvalidArgument`] for a matrix whose row count is not
/// `m.num_constraints`, a column past the assignment or, with `check`, an
/// unsatisfied constraint.
pub(crate) fn evaluate(
    m: &ConstraintMatrices,
    z: &[Fr],
    num_inputs: usize,
    log_n: u32,
    check: bool,
) -> Result<[Vec<Fr>; 3]> {
    let n = 1usize << log_n;
    let nc = m.num_constraints;
    if nc + num_inputs > n || num_inputs > z.len() {
        return Err(Error::InvalidArgument(format!(
            "{nc} constraints and {num_inputs} inputs do not fit a domain of {n} with {} variables",
            z.len()
        )));
    }
    if !m.has_rows() {
        return Err(Error::InvalidArgument(format!(
            "R1CS matrices of {nc} constraints without their rows (SparseR1cs::without_rows): \
             prove them on the prover holding that compact form (Prover::with_r1cs), or \
             evaluate them with SparseR1cs::evaluate"
        )));
    }
    for (name, rows) in [("A", m.a.len()), ("B", m.b.len()), ("C", m.c.len())] {
        if rows != nc {
            return Err(Error::InvalidArgument(format!(
                "matrix {name} has {rows} rows but the system has {nc} constraints; build the \
                 matrices with ConstraintMatrices::new, which checks their shapes"
            )));
        }
    }
    let mut a = vec![Fr::ZERO; n];
    let mut b = vec![Fr::ZERO; n];
    let mut c = vec![Fr::ZERO; n];
    eval_rows(&m.a, z, &mut a[..nc], "A")?;
    eval_rows(&m.b, z, &mut b[..nc], "B")?;
    eval_rows(&m.c, z, &mut c[..nc], "C")?;
    if check {
        let bad = (0..nc).into_par_iter().find_first(|&i| a[i] * b[i] != c[i]);
        if let Some(i) = bad {
            return Err(Error::InvalidArgument(format!(
                "the witness does not satisfy constraint {i} of {nc}: <A_{i}, z> * <B_{i}, z> != <C_{i}, z>"
            )));
        }
    }
    a[nc..nc + num_inputs].copy_from_slice(&z[..num_inputs]);
    Ok([a, b, c])
}

/// The orders the quotient's transforms use. `Natural` keeps every vector in
/// natural order (the CPU's choice: ark-poly works in natural order);
/// `Reversed` leaves the coset evaluations bit-reversed (the quotient is
/// element-wise, so order does not matter there), which saves the GPU two
/// bit-reversal passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Orders {
    /// Natural order throughout.
    Natural,
    /// Coset evaluations in bit-reversed order.
    Reversed,
}

/// Where the quotient's transforms run: host vectors (CPU) or device buffers
/// (GPU), with the same sequence of steps.
pub(crate) trait QuotientEngine {
    /// A vector of 2^log_n elements where this engine keeps it.
    type Buf;
    /// Moves a host vector to the engine.
    ///
    /// # Errors
    /// Out of memory, CUDA errors.
    fn load(&self, v: Vec<Fr>) -> Result<Self::Buf>;
    /// Transforms in place.
    ///
    /// # Errors
    /// As `cuzk_ntt`'s transforms.
    fn ntt(&self, v: &mut Self::Buf, log_n: u32, opts: NttOptions) -> Result<()>;
    /// `(a * b - c) / (g^n - 1)` element-wise, consuming the inputs.
    ///
    /// # Errors
    /// As `cuzk_ntt`'s `coset_quotient`.
    fn quotient(&self, a: Self::Buf, b: Self::Buf, c: Self::Buf, g: Fr) -> Result<Self::Buf>;
}

/// The CPU engine: `cuzk_ntt::cpu` (ark-poly) on host vectors.
pub(crate) struct CpuEngine;

impl QuotientEngine for CpuEngine {
    type Buf = Vec<Fr>;
    fn load(&self, v: Vec<Fr>) -> Result<Vec<Fr>> {
        Ok(v)
    }
    fn ntt(&self, v: &mut Vec<Fr>, log_n: u32, opts: NttOptions) -> Result<()> {
        cuzk_ntt::cpu::ntt(v, log_n, opts)
    }
    fn quotient(&self, mut a: Vec<Fr>, b: Vec<Fr>, c: Vec<Fr>, g: Fr) -> Result<Vec<Fr>> {
        let z_inv = vanishing_inverse(g, a.len())?;
        a.par_iter_mut()
            .zip(b.par_iter().zip(c.par_iter()))
            .for_each(|(a, (b, c))| {
                *a = (*a * b - c) * z_inv;
            });
        Ok(a)
    }
}

/// `1 / (g^n - 1)`, the inverse of the vanishing polynomial on the coset.
fn vanishing_inverse(g: Fr, n: usize) -> Result<Fr> {
    (g.pow([n as u64]) - Fr::ONE)
        .inverse()
        .ok_or_else(|| Error::InvalidArgument("the coset shift's n-th power is 1".into()))
}

/// The GPU engine: a [`GpuNtt`] on device buffers from its memory manager.
pub(crate) struct GpuEngine<'a>(pub(crate) &'a GpuNtt);

impl QuotientEngine for GpuEngine<'_> {
    type Buf = DeviceBuffer<Fr>;
    fn load(&self, v: Vec<Fr>) -> Result<DeviceBuffer<Fr>> {
        self.0.upload(&v)
    }
    fn ntt(&self, v: &mut DeviceBuffer<Fr>, log_n: u32, opts: NttOptions) -> Result<()> {
        self.0.ntt_device(v, log_n, opts)
    }
    fn quotient(
        &self,
        mut a: DeviceBuffer<Fr>,
        b: DeviceBuffer<Fr>,
        c: DeviceBuffer<Fr>,
        g: Fr,
    ) -> Result<DeviceBuffer<Fr>> {
        // Into `a`: three vectors on the device at the peak, not four.
        self.0.coset_quotient_in_place(&mut a, &b, &c, g)?;
        Ok(a)
    }
}

/// The coefficients of `H = (A B - C) / Z` (2^log_n of them; the last is
/// zero for a satisfied system) from the evaluations `[a, b, c]` on the
/// domain: inverse NTT, forward NTT on the default coset, the quotient
/// there, inverse NTT on the coset. Left where the engine keeps vectors
/// (on the GPU: device memory, for the H MSM to read in place).
///
/// # Errors
/// The engine's errors.
pub(crate) fn quotient<E: QuotientEngine>(
    engine: &E,
    abc: [Vec<Fr>; 3],
    log_n: u32,
    orders: Orders,
) -> Result<E::Buf> {
    let mut coset = Vec::with_capacity(3);
    for v in abc {
        let mut d = engine.load(v)?;
        to_coset(engine, &mut d, log_n, orders)?;
        coset.push(d);
    }
    let c = coset.pop().expect("three vectors");
    let b = coset.pop().expect("three vectors");
    let a = coset.pop().expect("three vectors");
    let mut h = engine.quotient(a, b, c, <Fr as ark_ff::FftField>::GENERATOR)?;
    from_coset(engine, &mut h, log_n, orders)?;
    Ok(h)
}

/// Evaluations on the domain to evaluations on the default coset: an
/// inverse NTT, then a forward one on the coset (in `orders`' order).
fn to_coset<E: QuotientEngine>(
    engine: &E,
    v: &mut E::Buf,
    log_n: u32,
    orders: Orders,
) -> Result<()> {
    let fwd = match orders {
        Orders::Natural => Order::NN,
        Orders::Reversed => Order::NR,
    };
    engine.ntt(v, log_n, NttOptions::inverse())?;
    engine.ntt(
        v,
        log_n,
        NttOptions::forward().on_default_coset().with_order(fwd),
    )
}

/// Evaluations on the default coset (in `orders`' order) to coefficients:
/// an inverse NTT on the coset, in natural order out.
fn from_coset<E: QuotientEngine>(
    engine: &E,
    v: &mut E::Buf,
    log_n: u32,
    orders: Orders,
) -> Result<()> {
    let back = match orders {
        Orders::Natural => Order::NN,
        Orders::Reversed => Order::RN,
    };
    engine.ntt(
        v,
        log_n,
        NttOptions::inverse().on_default_coset().with_order(back),
    )
}

/// Device memory left free when the H stage takes a third vector
/// (`device_quotient`'s `third`): for the NTTs' and the product's small
/// allocations beside it.
const THIRD_VECTOR_HEADROOM_BYTES: u64 = 256 << 20;

/// The coefficients of H on the GPU from the device-resident assignment
/// `z` (see [`quotient`]), with `A z`, `B z`, `C z` evaluated there by
/// `r1cs` and two vectors of the domain on the device beside `z`: `a` goes
/// to the coset while `b` is evaluated on a stream of its own, then `b`
/// goes there too and `a * b` replaces `a` before `b` is freed; then `c`,
/// and the quotient replaces `a * b` before `c` is freed. With `third`
/// (the caller's proof has the device's GPU stage to itself), `c` is
/// evaluated on a third stream beside `b`'s NTTs and the product where the
/// budget holds a third vector with [`THIRD_VECTOR_HEADROOM_BYTES`] to
/// spare, else after them. Left in device memory for the H MSM.
///
/// # Errors
/// The evaluation's and the NTT engine's errors.
pub(crate) fn device_quotient(
    ntt: &GpuNtt,
    r1cs: &crate::device_r1cs::DeviceR1cs,
    z: &crate::assignment::DeviceAssignment,
    num_inputs: usize,
    log_n: u32,
    third: bool,
) -> Result<DeviceBuffer<Fr>> {
    let n = 1usize << log_n;
    let engine = GpuEngine(ntt);
    let mem = ntt.memory();
    let mut h = mem.alloc::<Fr>(n, cuzk_alloc::Strategy::Async, ntt.stream(), None)?;
    r1cs.evaluate(0, z, &mut h, num_inputs, ntt.stream())?;
    {
        // B z on a stream of its own, beside A z's two NTTs: its kernels
        // (and, for a streamed R1CS, its matrix's chunks crossing PCIe) run
        // while the NTTs' kernels do. Two vectors and z, as before: b would
        // exist next anyway. z is written (A z's evaluation waited for it).
        let side = cuzk_alloc::Stream::new(mem.device())?;
        let mut b = mem.alloc::<Fr>(n, cuzk_alloc::Strategy::Async, &side, None)?;
        // C z's stream, when it runs beside b's NTTs: not `side`, whose
        // buffer b the NTT engine waits for before each of b's transforms.
        let side_c = if third {
            Some(cuzk_alloc::Stream::new(mem.device())?)
        } else {
            None
        };
        // On a failure, kernels may still be queued on any of the streams
        // that read z (freed later on the NTT stream) or write b or c
        // (freed on their own streams): all are waited for before any of
        // those buffers is freed.
        let settle = |e: Error| {
            let _ = side.synchronize();
            if let Some(c) = &side_c {
                let _ = c.synchronize();
            }
            let _ = ntt.stream().synchronize();
            e
        };
        let (a_done, b_done) = std::thread::scope(|s| {
            let eval_b = std::thread::Builder::new()
                .name("cuzk-eval-b".into())
                .spawn_scoped(s, || r1cs.evaluate_beside(1, z, &mut b, 0, &side));
            let a_done = to_coset(&engine, &mut h, log_n, Orders::Reversed);
            let b_done = eval_b.ok().map(|t| {
                t.join().unwrap_or_else(|_| {
                    Err(Error::Internal("the evaluation of B z panicked".into()))
                })
            });
            (a_done, b_done)
        });
        a_done.map_err(settle)?;
        match b_done {
            Some(r) => r.map_err(settle)?,
            // No thread to be had: after A z's NTTs instead.
            None => r1cs
                .evaluate_beside(1, z, &mut b, 0, &side)
                .map_err(settle)?,
        }
        // C z beside b's NTTs and the product, on `side_c`, where allowed
        // and the budget holds c and its chunks with room to spare.
        let vector = (n * std::mem::size_of::<Fr>()) as u64;
        let room = vector
            .saturating_add(r1cs.stream_buffer_bytes())
            .saturating_add(THIRD_VECTOR_HEADROOM_BYTES);
        let mut early = None;
        if let Some(side_c) = &side_c {
            let available = mem.budget().available_bytes().map_err(settle)?;
            if available >= room {
                match mem.alloc::<Fr>(n, cuzk_alloc::Strategy::Async, side_c, None) {
                    Ok(c) => early = Some(c),
                    Err(Error::OutOfMemory(_)) => {}
                    Err(e) => return Err(settle(e)),
                }
            }
            tracing::debug!(
                target: "cuzk_prover",
                room,
                available,
                beside = early.is_some(),
                "C z: a third vector beside B z's NTTs"
            );
        }
        let (product, c_done) = std::thread::scope(|s| {
            let eval_c = early.as_mut().zip(side_c.as_ref()).map(|(c, on)| {
                std::thread::Builder::new()
                    .name("cuzk-eval-c".into())
                    .spawn_scoped(s, move || {
                        r1cs.evaluate_beside(2, z, c, 0, on).map(|()| true)
                    })
            });
            let product = to_coset(&engine, &mut b, log_n, Orders::Reversed)
                .and_then(|()| ntt.mul_in_place(&mut h, &b));
            // Whether C z is in c: false when no thread was to be had.
            let c_done = eval_c.map(|t| match t {
                Ok(t) => t.join().unwrap_or_else(|_| {
                    Err(Error::Internal("the evaluation of C z panicked".into()))
                }),
                Err(_) => Ok(false),
            });
            (product, c_done)
        });
        // mul_in_place waits for its kernel: b may be freed after it.
        product.map_err(settle)?;
        drop(b);
        match c_done {
            Some(Ok(true)) | None => {}
            // No thread, or its chunks' buffers did not fit: c is freed
            // once `side_c` is idle, and evaluated after the product below.
            Some(Ok(false)) | Some(Err(Error::OutOfMemory(_))) => {
                if let Some(on) = &side_c {
                    on.synchronize()?;
                }
                early = None;
            }
            Some(Err(e)) => return Err(settle(e)),
        }
        let mut c = match early {
            Some(c) => c,
            None => {
                let mut c = mem.alloc::<Fr>(n, cuzk_alloc::Strategy::Async, ntt.stream(), None)?;
                r1cs.evaluate(2, z, &mut c, 0, ntt.stream())?;
                c
            }
        };
        // c may live on `side_c`: the NTT engine orders after its stream,
        // and the quotient waits for its kernel before c is freed there.
        to_coset(&engine, &mut c, log_n, Orders::Reversed).map_err(settle)?;
        ntt.coset_quotient_of_product_in_place(&mut h, &c, <Fr as ark_ff::FftField>::GENERATOR)
            .map_err(settle)?;
    }
    from_coset(&engine, &mut h, log_n, Orders::Reversed)?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_sizes() {
        assert_eq!(domain_log_size(0, 1).unwrap(), 0);
        assert_eq!(domain_log_size(3, 1).unwrap(), 2);
        assert_eq!(domain_log_size(4, 1).unwrap(), 3);
        assert!(domain_log_size(1 << 32, 1).is_err());
    }

    #[test]
    fn orders_agree_on_cpu() {
        // The GPU's order choice, run through the CPU engine, gives the same
        // quotient as natural order.
        let n = 16usize;
        let v = |k: u64| {
            (0..n as u64)
                .map(|i| Fr::from(i * i + k))
                .collect::<Vec<_>>()
        };
        let abc = [v(1), v(2), v(3)];
        let x = quotient(&CpuEngine, abc.clone(), 4, Orders::Natural).unwrap();
        let y = quotient(&CpuEngine, abc, 4, Orders::Reversed).unwrap();
        assert_eq!(x, y);
        assert_ne!(x[0], Fr::ONE);
    }
}
