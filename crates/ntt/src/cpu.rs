//! The CPU path: ark-poly's `Radix2EvaluationDomain` (no NTT of our own),
//! with cuzk's orders and batches around it. Also the tests' reference.

use crate::{bit_reverse_permute, check_shape, Direction, NttOptions};
use crate::{Error, Fr, Result};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};

/// Transforms each vector of 2^log_n elements of `data` in place.
///
/// # Errors
/// [`Error::InvalidArgument`] for a length that is not a non-zero multiple
/// of 2^log_n, a domain beyond 2^32, or a zero coset shift.
pub fn ntt(data: &mut [Fr], log_n: u32, opts: NttOptions) -> Result<()> {
    check_shape(data.len(), log_n)?;
    let n = 1usize << log_n;
    let mut domain = Radix2EvaluationDomain::<Fr>::new(n).ok_or_else(|| {
        Error::InvalidArgument(format!("ark-poly has no domain of size 2^{log_n}"))
    })?;
    if let Some(g) = opts.coset {
        domain = domain
            .get_coset(g)
            .ok_or_else(|| Error::InvalidArgument("coset shift must be nonzero".into()))?;
    }
    if opts.order.input_reversed() {
        bit_reverse_permute(data, log_n)?;
    }
    for v in data.chunks_exact_mut(n) {
        // ark-poly transforms a Vec in place.
        let mut w = v.to_vec();
        match opts.direction {
            Direction::Forward => domain.fft_in_place(&mut w),
            Direction::Inverse => domain.ifft_in_place(&mut w),
        }
        v.copy_from_slice(&w);
    }
    if opts.order.output_reversed() {
        bit_reverse_permute(data, log_n)?;
    }
    Ok(())
}
