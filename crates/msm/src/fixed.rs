//! Bases kept on one GPU for many MSMs: [`FixedBases`] (plain or with
//! precomputed shifted copies), single MSMs and batches against them.

use crate::config::merged_pays;
use crate::engine::GpuMsm;
use crate::{Error, Fr, MsmCurve, Result};
use ark_ec::short_weierstrass::Projective;
use cuzk_alloc::DeviceBuffer;
use std::marker::PhantomData;

/// Bases uploaded once to one GPU, for many MSMs against them (a Groth16
/// SRS, a KZG setup): from [`GpuMsm::upload_bases`] or
/// [`GpuMsm::upload_bases_precomputed`]. Holds the points' device memory
/// until dropped; MSMs run on the engine it came from, with its
/// [`crate::MsmConfig`].
pub struct FixedBases<P: MsmCurve> {
    engine: GpuMsm,
    /// n points, or W copies of n points when precomputed.
    bases: DeviceBuffer<u8>,
    n: usize,
    /// The window of the precomputed copies.
    window: Option<u32>,
    _p: PhantomData<P>,
}

impl<P: MsmCurve> std::fmt::Debug for FixedBases<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedBases")
            .field("curve", &P::NAME)
            .field("points", &self.n)
            .field("precomputed_window_bits", &self.window)
            .finish()
    }
}

impl<P: MsmCurve> FixedBases<P> {
    pub(crate) fn new(
        engine: GpuMsm,
        bases: DeviceBuffer<u8>,
        n: usize,
        window: Option<u32>,
    ) -> Self {
        FixedBases {
            engine,
            bases,
            n,
            window,
            _p: PhantomData,
        }
    }

    /// The device address of the points (copy 0 when precomputed).
    pub(crate) fn device_ptr(&self) -> *const u8 {
        self.bases.as_ptr()
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The window size (bits) of the precomputed copies, `None` for plain
    /// bases (see [`GpuMsm::upload_bases_precomputed`]).
    pub fn precomputed_window_bits(&self) -> Option<u32> {
        self.window
    }

    /// `sum_i scalars[i] * bases[i]` over the first `scalars.len()` bases:
    /// all of them, or a prefix (as Groth16's queries of different lengths
    /// use). Runs and waits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are more scalars than bases;
    /// otherwise as [`GpuMsm::msm`].
    pub fn msm(&self, scalars: &[Fr]) -> Result<Projective<P>> {
        let k = scalars.len();
        if k > self.n {
            return Err(Error::InvalidArgument(format!(
                "{k} scalars for {} fixed bases: give at most one scalar a base",
                self.n
            )));
        }
        // A short prefix is cheaper over copy 0 as plain bases: the merged
        // buckets (2^(c-1) of them) are reduced whatever the length.
        let plain_c = self
            .engine
            .config
            .window_bits
            .unwrap_or_else(|| crate::window_bits(k));
        let window = self
            .window
            .filter(|&c| k == self.n || merged_pays(k, c, plain_c));
        self.engine
            .run(self.bases.as_ptr(), self.n, window, scalars)
    }

    /// `sum_i scalars[range.start + i] * bases[i]` for i < `range.len()`:
    /// scalars already in device memory of this GPU (say, the quotient
    /// polynomial the NTTs left there), against all the bases or a prefix.
    /// Nothing crosses PCIe but the result. Waits for the scalars' stream
    /// first, then runs and waits. The scalars are classified on the device
    /// (see [`crate::MsmConfig::witness_shaped`]) unless the configuration
    /// says [`crate::WitnessShaped::Never`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the range passes the buffer, holds
    /// more scalars than there are bases, or the scalars are on another GPU;
    /// otherwise as [`GpuMsm::msm`].
    pub fn msm_device(
        &self,
        scalars: &DeviceBuffer<Fr>,
        range: std::ops::Range<usize>,
    ) -> Result<Projective<P>> {
        let k = range.len();
        if k > self.n {
            return Err(Error::InvalidArgument(format!(
                "{k} device scalars for {} fixed bases: give at most one scalar a base",
                self.n
            )));
        }
        self.engine
            .run_device(self.bases.as_ptr(), self.n, self.window, scalars, range)
    }

    /// One MSM per scalar vector, each against the bases (all of them or a
    /// prefix, as [`FixedBases::msm`]), one after another on the engine's
    /// stream.
    ///
    /// # Errors
    /// As [`FixedBases::msm`], for the first vector that fails.
    pub fn msm_batch(&self, scalars: &[&[Fr]]) -> Result<Vec<Projective<P>>> {
        scalars.iter().map(|s| self.msm(s)).collect()
    }
}
