//! The proving key's queries as the MSMs use them (identity bases skipped, bases on the GPU).

use crate::{Error, Fr, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::AffineRepr;
use ark_ff::AdditiveGroup;
use cuzk_alloc::DeviceBuffer;
use cuzk_msm::{FixedBases, GpuMsm, MsmCurve};

/// Skip identity bases in an MSM when at least this fraction (1/8) of them
/// are the identity (variables whose QAP polynomial is zero).
const SPARSE_DIVISOR: usize = 8;

/// One query of the key as the MSMs use it: the indices of its non-identity
/// bases when skipping the rest pays, the compacted bases on the host (CPU
/// path) or all of them on the device (GPU path).
pub(crate) struct Query<P: MsmCurve> {
    /// Indices of the non-identity bases, when compacted.
    keep: Option<Vec<u32>>,
    /// The compacted bases on the host (CPU path, when compacted).
    host: Option<Vec<Affine<P>>>,
    /// The (compacted) bases on the GPU.
    gpu: Option<FixedBases<P>>,
}

/// The bases at indices `keep` (a compacted query).
fn gather<P: MsmCurve>(bases: &[Affine<P>], keep: &[u32]) -> Vec<Affine<P>> {
    keep.iter().map(|&i| bases[i as usize]).collect()
}

impl<P: MsmCurve> Query<P> {
    /// The query of `bases` (the full query): compacted when at least an
    /// eighth of the bases are the identity, uploaded when `gpu` is given.
    ///
    /// # Errors
    /// Out of memory and CUDA errors of the upload.
    pub(crate) fn new(bases: &[Affine<P>], gpu: Option<&GpuMsm>) -> Result<Self> {
        let zeros = bases.iter().filter(|p| p.is_zero()).count();
        let keep = (bases.len() >= 2 && zeros * SPARSE_DIVISOR >= bases.len()).then(|| {
            (0..bases.len() as u32)
                .filter(|&i| !bases[i as usize].is_zero())
                .collect::<Vec<u32>>()
        });
        let compact = keep.as_ref().map(|k| gather(bases, k));
        let used: &[Affine<P>] = compact.as_deref().unwrap_or(bases);
        let gpu = match gpu {
            Some(g) if !used.is_empty() => Some(g.upload_bases(used)?),
            _ => None,
        };
        let host = if gpu.is_some() { None } else { compact };
        Ok(Query { keep, host, gpu })
    }

    /// Replaces the device bases with precomputed ones
    /// ([`GpuMsm::upload_bases_precomputed`], plain again when the copies do
    /// not fit the budget); `bases` is the full query. Returns whether they
    /// are precomputed. Without device bases nothing changes.
    pub(crate) fn precompute(&mut self, bases: &[Affine<P>], gpu: &GpuMsm) -> Result<bool> {
        if self.gpu.is_none() {
            return Ok(false);
        }
        let compact = self.keep.as_ref().map(|k| gather(bases, k));
        let used: &[Affine<P>] = compact.as_deref().unwrap_or(bases);
        // The plain copy goes first, so that the budget sees its room; if
        // the precomputation fails (say, another worker took the memory in
        // between), the plain bases come back and the prover stays usable.
        self.gpu = None;
        match gpu.upload_bases_precomputed(used, None) {
            Ok(pre) => {
                let done = pre.precomputed_window_bits().is_some();
                self.gpu = Some(pre);
                Ok(done)
            }
            Err(e) => {
                tracing::warn!(
                    target: "cuzk_prover",
                    "precomputing a query of {} points failed ({e}); keeping plain bases",
                    used.len()
                );
                self.gpu = Some(gpu.upload_bases(used)?);
                Ok(false)
            }
        }
    }

    /// `sum_i scalars[i] bases[i]` for i < `count`, the scalars in device
    /// memory (`bases` is the full query, `count` at most its length and the
    /// buffer's): read in place by the GPU when the query is on the device
    /// uncompacted; otherwise copied to the host first.
    ///
    /// # Errors
    /// As [`Query::msm`]; CUDA errors of the copy.
    pub(crate) fn msm_device(
        &self,
        bases: &[Affine<P>],
        scalars: &DeviceBuffer<Fr>,
        count: usize,
    ) -> Result<Projective<P>> {
        if count > bases.len() || count > scalars.len() {
            return Err(Error::InvalidArgument(format!(
                "{count} scalars of a device buffer of {} for a query of {} points",
                scalars.len(),
                bases.len()
            )));
        }
        match (&self.gpu, &self.keep) {
            (Some(g), None) => Ok(g.msm_device(scalars, 0..count.min(g.len()))?),
            _ => {
                scalars.stream().synchronize()?;
                let mut host = vec![Fr::ZERO; scalars.len()];
                scalars.copy_to_host(&mut host)?;
                self.msm(bases, &host[..count])
            }
        }
    }

    /// `sum_i scalars[i] bases[i]` (`bases` is the full query, `scalars` at
    /// most as long).
    pub(crate) fn msm(&self, bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
        if scalars.len() > bases.len() {
            return Err(Error::InvalidArgument(format!(
                "{} scalars for a query of {} points",
                scalars.len(),
                bases.len()
            )));
        }
        let gathered: Vec<Fr>;
        let (b, s): (&[Affine<P>], &[Fr]) = match &self.keep {
            Some(k) => {
                gathered = k
                    .iter()
                    .map(|&i| scalars.get(i as usize).copied().unwrap_or(Fr::ZERO))
                    .collect();
                (self.host.as_deref().unwrap_or(&[]), &gathered)
            }
            None => (&bases[..scalars.len().min(bases.len())], scalars),
        };
        match &self.gpu {
            Some(g) => g.msm(&s[..s.len().min(g.len())]),
            None => cuzk_msm::cpu::msm(b, &s[..b.len()]),
        }
    }
}
