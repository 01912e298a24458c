//! cuzk-ntt: number-theoretic transforms over BLS12-381 Fr.
//!
//! Forward and inverse NTTs for every power-of-two domain from 2^0 to 2^32
//! (Fr's two-adicity), input and output each in natural or bit-reversed
//! order ([`Order`]), on a coset when asked ([`NttOptions::coset`]), for a
//! batch of vectors at once, on the GPU ([`GpuNtt`]) over host slices or
//! device-resident buffers, or on the CPU ([`cpu::ntt`], through ark-poly's
//! `Radix2EvaluationDomain`, which is also the reference).
//!
//! Conventions (those of ark-poly): the forward transform of coefficients
//! `a` over the domain of size n with generator w (`Fr::get_root_of_unity(n)`)
//! is `A[i] = sum_j a[j] w^(i j)`; on the coset `g H` it is
//! `A[i] = sum_j a[j] (g w^i)^j`. The inverse undoes it (including 1/n).
//! The default coset shift is Fr's multiplicative generator (7), as
//! ark-poly's `get_coset(Fr::GENERATOR)` uses.
//!
//! ```
//! use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
//! use cuzk_ntt::{Fr, NttOptions, Order};
//! let coeffs: Vec<Fr> = (0..1u64 << 10).map(Fr::from).collect();
//! let mut data = coeffs.clone();
//! // The GPU when there is one, else ark-poly; `log_n` is the domain's
//! // exponent (a longer `data`, a multiple of 2^log_n, is a batch).
//! let _backend = cuzk_ntt::ntt(&mut data, 10, NttOptions::forward())?;
//! let domain = Radix2EvaluationDomain::<Fr>::new(1 << 10).unwrap();
//! assert_eq!(data, domain.fft(&coeffs));
//! // Back to the coefficients (the inverse includes the 1/n).
//! cuzk_ntt::ntt(&mut data, 10, NttOptions::inverse())?;
//! assert_eq!(data, coeffs);
//! // Bit-reversed output (the GPU's native forward order).
//! cuzk_ntt::ntt(&mut data, 10, NttOptions::forward().with_order(Order::NR))?;
//! cuzk_ntt::bit_reverse_permute(&mut data, 10)?;
//! assert_eq!(data, domain.fft(&coeffs));
//! // A length that is not a multiple of the domain is an error, not a panic.
//! assert!(cuzk_ntt::ntt(&mut data[..12], 3, NttOptions::forward()).is_err());
//! # Ok::<(), cuzk_ntt::Error>(())
//! ```
//!
//! The GPU algorithm is Bailey's four-step decomposition with radix-2
//! decimation-in-frequency passes in shared memory (see `csrc/ntt/ntt.cu`
//! and `csrc/ntt/passes.cuh`).

pub mod cpu;
mod gpu;
// Generated bindings (`cargo xtask bindings`): `pub` items of a private module.
#[allow(unreachable_pub)]
mod sys;
mod tables;

/// Pinned host memory (from cuzk-alloc): [`GpuNtt::ntt`] copies a slice of
/// one directly, with no staging copy.
pub use cuzk_alloc::PinnedBuffer;
pub use cuzk_field::{Backend, Error, Fr, Result};
pub use gpu::GpuNtt;
pub use tables::{full_twiddle_bytes, DEFAULT_FULL_TWIDDLE_MAX_BYTES, SHOUP_TWIDDLE_MAX_BYTES};

use ark_ff::{FftField, Field};

/// Element order of a transform's input and output: `N` natural, `R`
/// bit-reversed (index i holds element bitrev(i)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Natural in, natural out.
    NN,
    /// Natural in, bit-reversed out (the GPU's native forward order).
    NR,
    /// Bit-reversed in, natural out.
    RN,
    /// Bit-reversed in, bit-reversed out.
    RR,
}

impl Order {
    /// Every order.
    pub const ALL: [Order; 4] = [Order::NN, Order::NR, Order::RN, Order::RR];

    /// True when the input is bit-reversed.
    pub fn input_reversed(self) -> bool {
        matches!(self, Order::RN | Order::RR)
    }

    /// True when the output is bit-reversed.
    pub fn output_reversed(self) -> bool {
        matches!(self, Order::NR | Order::RR)
    }
}

/// Forward (coefficients to evaluations) or inverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Coefficients to evaluations.
    Forward,
    /// Evaluations to coefficients (including the 1/n).
    Inverse,
}

/// What transform to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttOptions {
    /// Forward or inverse.
    pub direction: Direction,
    /// Input and output orders.
    pub order: Order,
    /// Coset shift g (evaluate on g H); `None` for the subgroup H itself.
    pub coset: Option<Fr>,
}

impl NttOptions {
    /// Forward, natural order, no coset.
    pub fn forward() -> Self {
        NttOptions {
            direction: Direction::Forward,
            order: Order::NN,
            coset: None,
        }
    }

    /// Inverse, natural order, no coset.
    pub fn inverse() -> Self {
        NttOptions {
            direction: Direction::Inverse,
            ..Self::forward()
        }
    }

    /// The same transform with orders `order`.
    pub fn with_order(self, order: Order) -> Self {
        NttOptions { order, ..self }
    }

    /// The same transform on the coset `g H`.
    pub fn on_coset(self, g: Fr) -> Self {
        NttOptions {
            coset: Some(g),
            ..self
        }
    }

    /// The same transform on ark-poly's default coset, shifted by Fr's
    /// multiplicative generator.
    pub fn on_default_coset(self) -> Self {
        self.on_coset(Fr::GENERATOR)
    }
}

/// Largest domain: 2^32, Fr's two-adicity (r - 1 = 2^32 * odd).
pub const MAX_LOG_N: u32 = 32;

/// Checks a batch of vectors of 2^log_n elements: `len` a non-zero multiple
/// of the domain size (a batch of `len / 2^log_n` vectors), `log_n` at most
/// [`MAX_LOG_N`]. Returns the batch size.
///
/// # Errors
/// [`Error::InvalidArgument`] naming what is wrong.
pub(crate) fn check_shape(len: usize, log_n: u32) -> Result<usize> {
    if log_n > MAX_LOG_N {
        return Err(Error::InvalidArgument(format!(
            "a domain of 2^{log_n} is larger than Fr's two-adicity allows (at most 2^{MAX_LOG_N})"
        )));
    }
    let n = 1usize
        .checked_shl(log_n)
        .ok_or_else(|| Error::InvalidArgument(format!("2^{log_n} elements do not fit in usize")))?;
    if len == 0 {
        return Err(Error::InvalidArgument(format!(
            "no elements to transform: give a vector of the domain's 2^{log_n} = {n} elements \
             (or a multiple, for a batch)"
        )));
    }
    if len % n != 0 {
        return Err(Error::InvalidArgument(format!(
            "{len} elements is not a whole number of vectors of the domain size 2^{log_n} = {n}; \
             give a power-of-two length equal to the domain (or a multiple, for a batch)"
        )));
    }
    Ok(len / n)
}

/// The domain size exponent of a single vector of length `len`.
///
/// # Errors
/// [`Error::InvalidArgument`] when `len` is not a power of two.
pub(crate) fn log2_exact(len: usize) -> Result<u32> {
    if !len.is_power_of_two() {
        return Err(Error::InvalidArgument(format!(
            "NTT length {len} is not a power of two; pad the vector to the next power of two ({})",
            len.checked_next_power_of_two().unwrap_or(0)
        )));
    }
    Ok(len.trailing_zeros())
}

/// The generator of the multiplicative subgroup of order 2^log_n, the one
/// ark-poly's radix-2 domain of that size uses.
///
/// # Errors
/// [`Error::InvalidArgument`] when `log_n` is above [`MAX_LOG_N`].
pub fn root_of_unity(log_n: u32) -> Result<Fr> {
    if log_n > MAX_LOG_N {
        return Err(Error::InvalidArgument(format!(
            "Fr has no root of unity of order 2^{log_n}: its two-adicity allows at most \
             2^{MAX_LOG_N}"
        )));
    }
    Fr::get_root_of_unity(1u64 << log_n).ok_or_else(|| {
        Error::InvalidArgument(format!("Fr has no root of unity of order 2^{log_n}"))
    })
}

/// Permutes each vector of 2^log_n elements of `data` (a batch: its length
/// a multiple of 2^log_n) into bit-reversed order (an involution). The CPU
/// helper for orders; O(n).
///
/// # Errors
/// [`Error::InvalidArgument`] as the NTT's shape check: `log_n` above
/// [`MAX_LOG_N`], or a length that is not a non-zero multiple of 2^log_n.
pub fn bit_reverse_permute<T>(data: &mut [T], log_n: u32) -> Result<()> {
    check_shape(data.len(), log_n)?;
    if log_n == 0 {
        return Ok(());
    }
    let n = 1usize << log_n;
    for v in data.chunks_exact_mut(n) {
        for i in 0..n {
            let r = i.reverse_bits() >> (usize::BITS - log_n);
            if i < r {
                v.swap(i, r);
            }
        }
    }
    Ok(())
}

/// `n^-1` in Fr.
pub(crate) fn inv_n(log_n: u32) -> Fr {
    Fr::from(1u64 << log_n)
        .inverse()
        .expect("n is nonzero in Fr")
}

/// Runs the NTT on the GPU when one is usable (device 0), else on the CPU;
/// returns where it ran. For one-off calls: a [`GpuNtt`] kept across calls
/// caches twiddle tables and device memory.
///
/// # Errors
/// As [`cpu::ntt`] and [`GpuNtt::ntt`].
pub fn ntt(data: &mut [Fr], log_n: u32, opts: NttOptions) -> Result<Backend> {
    match GpuNtt::new(0) {
        Ok(g) => g.ntt(data, log_n, opts).map(|_| Backend::Gpu { device: 0 }),
        Err(e) if e.is_no_gpu() => cpu::ntt(data, log_n, opts).map(|_| Backend::Cpu),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_with_messages() {
        assert_eq!(check_shape(3 << 4, 4).unwrap(), 3);
        let e = check_shape(12, 3).unwrap_err();
        assert!(
            e.to_string().contains("not a whole number of vectors"),
            "{e}"
        );
        let e = check_shape(1 << 10, 33).unwrap_err();
        assert!(e.to_string().contains("two-adicity"), "{e}");
        let e = check_shape(0, 0).unwrap_err();
        assert!(e.to_string().contains("no elements to transform"), "{e}");
        assert_eq!(log2_exact(1 << 12).unwrap(), 12);
        let e = log2_exact(12).unwrap_err();
        assert!(e.to_string().contains("not a power of two"), "{e}");
    }

    #[test]
    fn helpers_refuse_bad_shapes() {
        // ark-poly's domain of 2^10 uses the same root.
        let d =
            <ark_poly::Radix2EvaluationDomain<Fr> as ark_poly::EvaluationDomain<Fr>>::new(1 << 10)
                .unwrap();
        assert_eq!(root_of_unity(10).unwrap(), d.group_gen);
        assert_eq!(root_of_unity(0).unwrap(), Fr::from(1u64));
        assert!(root_of_unity(MAX_LOG_N).is_ok());
        for log_n in [MAX_LOG_N + 1, 64, u32::MAX] {
            let e = root_of_unity(log_n).unwrap_err();
            assert!(e.to_string().contains("two-adicity"), "{e}");
        }
        let mut v: Vec<u32> = (0..8).collect();
        bit_reverse_permute(&mut v, 3).unwrap();
        assert_eq!(v, [0, 4, 2, 6, 1, 5, 3, 7]);
        // Not a whole number of vectors: refused, the data untouched.
        let mut v: Vec<u32> = (0..12).collect();
        let e = bit_reverse_permute(&mut v, 3).unwrap_err();
        assert!(e.to_string().contains("not a whole number"), "{e}");
        assert_eq!(v, (0..12).collect::<Vec<_>>());
        assert!(bit_reverse_permute(&mut v, 64).is_err());
        assert!(bit_reverse_permute::<u32>(&mut [], 0).is_err());
    }
}
