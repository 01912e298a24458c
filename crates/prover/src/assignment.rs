//! The full assignment on the GPU, dense or compact: a witness of mostly 0s
//! and 1s (a hash gadget's bits; 99.9% of the PoRep-shaped circuit's)
//! crosses PCIe as two bitmasks and its few other values, about 1/100 of
//! its dense bytes, and the R1CS evaluation reads it in that form
//! (`cuzk_assignment` in include/cuzk/prover.h).

use crate::device_r1cs::check;
#[cfg(test)]
use crate::Error;
use crate::{sys, Fr, Result};
use ark_ff::{AdditiveGroup, Field};
use cuzk_alloc::{DeviceBuffer, DeviceMemory, Strategy, Stream};
use rayon::prelude::*;
use std::sync::Arc;

/// A full assignment in the compact form of `cuzk_assignment`, in host
/// memory: for variable i, word i / 64 and bit i % 64 of `ones` (z[i] = 1)
/// or of `others` (z[i] neither 0 nor 1, its value in `values` at `rank`
/// of its word plus the set bits of `others` below it); z[i] = 0 where
/// neither bit is set.
pub(crate) struct CompactAssignment {
    ones: Vec<u64>,
    others: Vec<u64>,
    /// Set bits of `others` before each word.
    rank: Vec<u32>,
    /// The values neither 0 nor 1, in order; one zero when there are none
    /// (so that the device array is never empty).
    values: Vec<Fr>,
    len: usize,
}

impl CompactAssignment {
    /// `z` in the compact form, built on rayon's threads (one pass over z);
    /// `None` when more than half of its values are neither 0 nor 1, where
    /// the dense form is as small and reads as fast.
    pub(crate) fn of(z: &[Fr]) -> Option<Self> {
        let (ones, others): (Vec<u64>, Vec<u64>) = z
            .par_chunks(64)
            .map(|c| {
                let (mut one, mut other) = (0u64, 0u64);
                for (b, v) in c.iter().enumerate() {
                    if *v == Fr::ONE {
                        one |= 1 << b;
                    } else if *v != Fr::ZERO {
                        other |= 1 << b;
                    }
                }
                (one, other)
            })
            .unzip();
        let count: u64 = others.par_iter().map(|w| u64::from(w.count_ones())).sum();
        if count > (z.len() / 2) as u64 || count > u64::from(u32::MAX) {
            return None;
        }
        let mut rank = Vec::with_capacity(others.len());
        let mut at = 0u32;
        for w in &others {
            rank.push(at);
            // No overflow: the total is at most u32::MAX (checked above).
            at += w.count_ones();
        }
        let mut values: Vec<Fr> = z
            .par_chunks(64)
            .zip(others.par_iter())
            .flat_map_iter(|(c, &w)| {
                (0..c.len())
                    .filter(move |b| w >> b & 1 == 1)
                    .map(move |b| c[b])
            })
            .collect();
        if values.is_empty() {
            values.push(Fr::ZERO);
        }
        Some(CompactAssignment {
            ones,
            others,
            rank,
            values,
            len: z.len(),
        })
    }

    /// Number of variables.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// z[i]; zero past the end.
    pub(crate) fn get(&self, i: usize) -> Fr {
        if i >= self.len {
            return Fr::ZERO;
        }
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.ones[w] & bit != 0 {
            return Fr::ONE;
        }
        let others = self.others[w];
        if others & bit == 0 {
            return Fr::ZERO;
        }
        self.values[self.rank[w] as usize + (others & (bit - 1)).count_ones() as usize]
    }

    /// Bytes of the form (what crosses PCIe).
    pub(crate) fn bytes(&self) -> u64 {
        (8 * (self.ones.len() + self.others.len()) + 4 * self.rank.len()) as u64
            + (self.values.len() * std::mem::size_of::<Fr>()) as u64
    }

    /// The `cuzk_assignment` of this form in host memory, for the host runs
    /// of csrc/prover's code (valid while `self` is).
    #[cfg(test)]
    pub(crate) fn raw_host(&self) -> sys::cuzk_assignment {
        sys::cuzk_assignment {
            ones: self.ones.as_ptr(),
            others: self.others.as_ptr(),
            rank: self.rank.as_ptr(),
            values: self.values.as_ptr().cast(),
            num_variables: self.len as u64,
        }
    }
}

/// A full assignment in one GPU's memory, as the R1CS evaluation reads it.
pub(crate) enum DeviceAssignment {
    /// Every element, 32 bytes each.
    Dense(DeviceBuffer<Fr>),
    /// The arrays of a [`CompactAssignment`].
    Compact(Box<CompactOnDevice>),
}

/// The arrays of a [`CompactAssignment`] on the device, all ordered on the
/// stream of the upload.
pub(crate) struct CompactOnDevice {
    ones: DeviceBuffer<u64>,
    others: DeviceBuffer<u64>,
    rank: DeviceBuffer<u32>,
    values: DeviceBuffer<Fr>,
    len: usize,
}

impl DeviceAssignment {
    /// `c` copied to the GPU of `mem`, ordered on `stream`; waits for the
    /// copies.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`]; CUDA errors.
    pub(crate) fn upload(
        c: &CompactAssignment,
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
    ) -> Result<Self> {
        fn up<T: cuzk_field::DeviceRepr>(
            mem: &Arc<DeviceMemory>,
            stream: &Stream,
            host: &[T],
        ) -> Result<DeviceBuffer<T>> {
            let mut d = mem.alloc::<T>(host.len(), Strategy::Async, stream, None)?;
            d.copy_from_host(host)?;
            Ok(d)
        }
        Ok(DeviceAssignment::Compact(Box::new(CompactOnDevice {
            ones: up(mem, stream, &c.ones)?,
            others: up(mem, stream, &c.others)?,
            rank: up(mem, stream, &c.rank)?,
            values: up(mem, stream, &c.values)?,
            len: c.len,
        })))
    }

    /// Number of variables.
    pub(crate) fn len(&self) -> usize {
        match self {
            DeviceAssignment::Dense(d) => d.len(),
            DeviceAssignment::Compact(c) => c.len,
        }
    }

    /// The stream its buffers are ordered on (the dense buffer's, or the
    /// compact arrays', all on one).
    pub(crate) fn stream(&self) -> &Stream {
        match self {
            DeviceAssignment::Dense(d) => d.stream(),
            DeviceAssignment::Compact(c) => c.values.stream(),
        }
    }

    /// The `cuzk_assignment` for csrc/prover's kernels (device pointers,
    /// valid while `self` is).
    pub(crate) fn raw(&self) -> sys::cuzk_assignment {
        match self {
            DeviceAssignment::Dense(d) => sys::cuzk_assignment {
                ones: std::ptr::null(),
                others: std::ptr::null(),
                rank: std::ptr::null(),
                values: d.as_ptr().cast(),
                num_variables: d.len() as u64,
            },
            DeviceAssignment::Compact(c) => sys::cuzk_assignment {
                ones: c.ones.as_ptr(),
                others: c.others.as_ptr(),
                rank: c.rank.as_ptr(),
                values: c.values.as_ptr().cast(),
                num_variables: c.len as u64,
            },
        }
    }

    /// The dense form, for the MSMs that take z's elements as scalars: the
    /// buffer itself, or the compact form written out into a new buffer of
    /// `mem` on `stream` (waited for; the compact arrays are freed after).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] for the dense buffer; CUDA errors.
    pub(crate) fn into_dense(
        self,
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
    ) -> Result<DeviceBuffer<Fr>> {
        if let DeviceAssignment::Dense(d) = self {
            return Ok(d);
        }
        self.stream().synchronize()?;
        let mut out = mem.alloc::<Fr>(self.len(), Strategy::Async, stream, None)?;
        let raw = self.raw();
        // SAFETY: `out` holds len elements; the compact arrays hold what
        // `raw` names (built by `upload`); all on this device, alive until
        // the stream is synchronized below.
        check(unsafe {
            sys::cuzk_assignment_expand(
                mem.device(),
                out.as_mut_ptr().cast(),
                &raw,
                stream.as_raw(),
            )
        })?;
        stream.synchronize()?;
        Ok(out)
    }
}

/// `c` written out dense by csrc/prover's element code on the host (the
/// kernels' `load_z`), for tests of the compact form without a GPU.
///
/// # Errors
/// [`Error::Internal`] when the host call fails.
#[cfg(test)]
pub(crate) fn expand_host(c: &CompactAssignment) -> Result<Vec<Fr>> {
    let mut out = vec![Fr::ZERO; c.len()];
    let raw = c.raw_host();
    // SAFETY: `out` holds len elements and `raw` names `c`'s arrays, both
    // valid for the call.
    check(unsafe { sys::cuzk_assignment_expand_host(out.as_mut_ptr().cast(), &raw) })
        .map_err(|e| Error::Internal(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// A witness of `len` values: each 0 with weight w0, 1 with w1, a small
    /// value (2, -1) or random otherwise.
    fn witness(rng: &mut ChaCha20Rng, len: usize, w0: f64, w1: f64) -> Vec<Fr> {
        (0..len)
            .map(|_| {
                let x: f64 = rng.gen();
                if x < w0 {
                    Fr::ZERO
                } else if x < w0 + w1 {
                    Fr::ONE
                } else if x < w0 + w1 + 0.02 {
                    if rng.gen() {
                        Fr::from(2u64)
                    } else {
                        -Fr::ONE
                    }
                } else {
                    Fr::rand(rng)
                }
            })
            .collect()
    }

    /// The kernels' element code reads the compact form back as z, for
    /// lengths around the 64-bit words, bit-heavy and mixed witnesses,
    /// all zeros and all ones.
    #[test]
    fn compact_form_reads_back_as_z() {
        let mut rng = ChaCha20Rng::seed_from_u64(0xa55e);
        for len in [1usize, 2, 63, 64, 65, 127, 128, 129, 1000, 4099] {
            for (w0, w1) in [(0.6, 0.39), (0.3, 0.3), (1.0, 0.0), (0.0, 1.0), (0.55, 0.0)] {
                let z = witness(&mut rng, len, w0, w1);
                let others = z
                    .iter()
                    .filter(|v| **v != Fr::ZERO && **v != Fr::ONE)
                    .count();
                let Some(c) = CompactAssignment::of(&z) else {
                    assert!(others > len / 2, "len {len}: {others} others");
                    continue;
                };
                assert!(others <= len / 2);
                assert_eq!(c.len(), len);
                assert_eq!(expand_host(&c).unwrap(), z, "len {len}, weights {w0} {w1}");
                assert!((0..len + 70).all(|i| c.get(i) == z.get(i).copied().unwrap_or(Fr::ZERO)));
                assert_eq!(c.values.len(), others.max(1));
                assert!(c.bytes() < (len * 32 + 64) as u64);
            }
        }
        assert!(CompactAssignment::of(&[]).is_some_and(|c| c.len() == 0));
    }

    /// A witness with more than half of its values neither 0 nor 1 stays
    /// dense.
    #[test]
    fn dense_witness_is_not_compacted() {
        let mut rng = ChaCha20Rng::seed_from_u64(0xde5e);
        let z: Vec<Fr> = (0..1000).map(|_| Fr::rand(&mut rng)).collect();
        assert!(CompactAssignment::of(&z).is_none());
        let mut half = z.clone();
        half[..500].fill(Fr::ONE);
        assert!(CompactAssignment::of(&half).is_some());
        half[499] = Fr::from(7u64);
        assert!(CompactAssignment::of(&half).is_none());
    }
}
