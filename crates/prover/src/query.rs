//! The proving key's queries as the MSMs use them (identity bases skipped;
//! bases resident on the GPU, or streamed to it from page-locked host
//! memory when the budget does not hold them).

use crate::assignment::CompactAssignment;
use crate::{Error, Fr, Result};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::AffineRepr;
use ark_ff::{AdditiveGroup, Field};
use cuzk_alloc::{DeviceBuffer, DeviceMemory, PageLock, Reservation, Stream};
use cuzk_field::DeviceRepr;
use cuzk_msm::{FixedBases, GpuMsm, MsmCurve};
use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};

/// Skip identity bases in an MSM when at least this fraction (1/8) of them
/// are the identity (variables whose QAP polynomial is zero).
const SPARSE_DIVISOR: usize = 8;

/// One query of the key as the MSMs use it: the indices of its non-identity
/// bases when skipping the rest pays, the compacted bases on the host (CPU
/// path, streamed queries) and, on the GPU path, the bases resident on the
/// device or streamed to it from host memory on every MSM.
pub(crate) struct Query<P: MsmCurve> {
    /// Page-locks the host bases of a streamed query (declared first, so it
    /// is dropped before `host`; the key's own slices outlive the prover's
    /// queries, see [`crate::Prover`]).
    lock: Option<Arc<PageLock>>,
    /// Page-locks `keep` on the GPU path (before it, so dropped first): a
    /// proof whose scalars come from the device-resident assignment copies
    /// the indices up by DMA for the gather.
    keep_lock: Option<Arc<PageLock>>,
    /// Indices of the non-identity bases, when compacted.
    keep: Option<Vec<u32>>,
    /// The compacted bases on the host (CPU path or streamed, when
    /// compacted).
    host: Option<Vec<Affine<P>>>,
    /// The (compacted) bases on the GPU.
    gpu: Option<FixedBases<P>>,
    /// The engine that streams the bases (host memory to the GPU) when
    /// they are not resident.
    streamed: Option<GpuMsm>,
    /// Bases the MSMs use (the non-identity ones when compacted).
    points: usize,
}

/// Where a query's bases are for the GPU path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Residency {
    /// Uploaded once, on the device.
    Resident,
    /// Streamed from page-locked host memory on every MSM.
    Streamed,
}

/// Page-locked host ranges of this process's provers (address, bytes),
/// shared: the provers of several GPUs stream one key, and the range stays
/// locked until the last of them drops it.
static PAGE_LOCKS: Mutex<Vec<(usize, usize, Weak<PageLock>)>> = Mutex::new(Vec::new());

/// Page-locks `data` for DMA (a streamed query's bases, a streamed R1CS
/// chunk), or shares the lock another prover holds on the same range;
/// `None` when the memory was page-locked by someone else (the caller's
/// own pinned buffer).
///
/// # Safety
/// `data` must stay allocated, unmoved and unshrunk while the returned
/// lock (or a clone of it) lives: drop every holder's lock before the data.
pub(crate) unsafe fn page_lock<T: DeviceRepr>(data: &[T]) -> Result<Option<Arc<PageLock>>> {
    let key = (data.as_ptr() as usize, std::mem::size_of_val(data));
    let mut locks = PAGE_LOCKS.lock().unwrap_or_else(|p| p.into_inner());
    locks.retain(|(_, _, w)| w.strong_count() > 0);
    if let Some(lock) = locks
        .iter()
        .find(|(p, n, _)| (*p, *n) == key)
        .and_then(|(_, _, w)| w.upgrade())
    {
        return Ok(Some(lock));
    }
    if cuzk_alloc::is_page_locked(data)? {
        return Ok(None);
    }
    // SAFETY: the caller keeps `data` allocated and unmoved while the lock
    // lives (this function's contract).
    let lock = Arc::new(unsafe { PageLock::new(data) }?);
    locks.push((key.0, key.1, Arc::downgrade(&lock)));
    Ok(Some(lock))
}

/// The bases at indices `keep` (a compacted query), copied on rayon's
/// threads: a PoRep-shaped 2^27 key's A and B queries are about 20 GB.
fn gather<P: MsmCurve>(bases: &[Affine<P>], keep: &[u32]) -> Vec<Affine<P>> {
    use rayon::prelude::*;
    keep.par_iter().map(|&i| bases[i as usize]).collect()
}

/// The indices of the non-identity points of `bases`, ascending, when at
/// least 1/[`SPARSE_DIVISOR`] of them are the identity (else `None`: the
/// query is used whole). Scans on rayon's threads.
fn sparse_indices<P: MsmCurve>(bases: &[Affine<P>]) -> Option<Vec<u32>> {
    use rayon::prelude::*;
    let zeros = bases.par_iter().filter(|p| p.is_zero()).count();
    (bases.len() >= 2 && zeros * SPARSE_DIVISOR >= bases.len()).then(|| {
        (0..bases.len() as u32)
            .into_par_iter()
            .filter(|&i| !bases[i as usize].is_zero())
            .collect()
    })
}

/// The non-zero scalars of one streamed query's MSM in a proof, so that
/// only their bases cross PCIe ([`GpuMsm::msm_streamed_device_gathered`]):
/// the positions of those bases among the bases the MSMs use (the
/// compacted ones when the query is compacted), ascending, and the
/// scalars' variables relative to the query's first (`None` when the same
/// as the positions: an uncompacted query).
#[derive(Debug, Default)]
pub(crate) struct NonZero {
    bases: Vec<u32>,
    scalars: Option<Vec<u32>>,
}

impl NonZero {
    /// Bases that cross PCIe.
    pub(crate) fn len(&self) -> usize {
        self.bases.len()
    }

    /// The scalars' variables, relative to the query's first.
    fn scalars(&self) -> &[u32] {
        self.scalars.as_deref().unwrap_or(&self.bases)
    }
}

/// The non-zero scalars of an MSM over a query of `points` bases (the
/// compacted ones, at the query positions `keep`, when compacted) against
/// `host`, the assignment from the query's first variable: `None` when
/// fewer than an eighth of them are zero (or there are none). Scans on
/// rayon's threads; positions ascend.
fn nonzero_scalars(keep: Option<&[u32]>, points: usize, host: &[Fr]) -> Option<NonZero> {
    use rayon::prelude::*;
    let is_nonzero = |i: u32| host.get(i as usize).is_some_and(|s| *s != Fr::ZERO);
    let candidates = keep.map_or(host.len().min(points), <[u32]>::len);
    let bases: Vec<u32> = match keep {
        Some(keep) => (0..keep.len() as u32)
            .into_par_iter()
            .filter(|&j| is_nonzero(keep[j as usize]))
            .collect(),
        None => (0..candidates as u32)
            .into_par_iter()
            .filter(|&i| is_nonzero(i))
            .collect(),
    };
    if candidates == 0 || (candidates - bases.len()) * SPARSE_DIVISOR < candidates {
        return None;
    }
    let scalars = keep.map(|keep| bases.par_iter().map(|&j| keep[j as usize]).collect());
    Some(NonZero { bases, scalars })
}

/// A streamed query's scalars in one proof, split for a batch's witness
/// pass ([`crate::MultiGpuProver::with_witness_pass`]): a bitmask of the
/// scalars equal to 1 over the bases the MSMs use (bit j % 64 of word j /
/// 64 for base j; the compacted bases when compacted), and the positions
/// and values of the scalars neither 0 nor 1.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Masked {
    pub(crate) ones: Vec<u64>,
    others: Vec<u32>,
    other_scalars: Vec<Fr>,
}

/// Masks a stream of a query's bases serves at most in a witness pass
/// ([`Query::masked_msms`]): 16, about 1.2 GiB of masks, G2 partial sums
/// and pattern buckets at 2^27.
const MASKS_A_STREAM: usize = 16;

/// A witness pass pays only while the scalars neither 0 nor 1 are at most
/// this fraction (1/16) of a query's: they go through an MSM of their own,
/// their bases gathered on the host.
const OTHERS_DIVISOR: usize = 16;

/// [`Masked`] of an MSM over a query of `points` bases (the compacted
/// ones, at the query positions `keep`, when compacted) against `host`,
/// the assignment from the query's first variable (a missing scalar is
/// zero): `None` when more than 1/[`OTHERS_DIVISOR`] of the scalars are
/// neither 0 nor 1. Scans on rayon's threads, 64 bases a task.
fn masked_scalars(keep: Option<&[u32]>, points: usize, host: &[Fr]) -> Option<Masked> {
    masked_by(keep, points, host.len(), |v| {
        host.get(v).copied().unwrap_or(Fr::ZERO)
    })
}

/// [`masked_scalars`] of an assignment of `len` values from the query's
/// first variable, read through `value` (index from that variable).
fn masked_by(
    keep: Option<&[u32]>,
    points: usize,
    len: usize,
    value: impl Fn(usize) -> Fr + Sync,
) -> Option<Masked> {
    use rayon::prelude::*;
    let n = keep.map_or(len.min(points), <[u32]>::len);
    let scalar = |j: usize| {
        let v = match keep {
            Some(k) => k[j] as usize,
            None => j,
        };
        if v < len {
            value(v)
        } else {
            Fr::ZERO
        }
    };
    let one = Fr::ONE;
    let words: Vec<(u64, Vec<(u32, Fr)>)> = (0..n.div_ceil(64))
        .into_par_iter()
        .map(|w| {
            let (mut bits, mut rest) = (0u64, Vec::new());
            for j in w * 64..(w * 64 + 64).min(n) {
                let s = scalar(j);
                if s == one {
                    bits |= 1 << (j % 64);
                } else if s != Fr::ZERO {
                    rest.push((j as u32, s));
                }
            }
            (bits, rest)
        })
        .collect();
    let others: usize = words.iter().map(|(_, r)| r.len()).sum();
    if others * OTHERS_DIVISOR > n {
        return None;
    }
    let mut m = Masked {
        ones: Vec::with_capacity(words.len()),
        others: Vec::with_capacity(others),
        other_scalars: Vec::with_capacity(others),
    };
    for (bits, rest) in words {
        m.ones.push(bits);
        for (j, s) in rest {
            m.others.push(j);
            m.other_scalars.push(s);
        }
    }
    Some(m)
}

impl<P: MsmCurve> Query<P> {
    /// The query of `bases` (the full query, which must outlive this query
    /// unmoved when streamed): compacted when at least an eighth of the
    /// bases are the identity; on the GPU path resident (uploaded once) or
    /// streamed as `gpu` says. A resident query whose upload finds the
    /// budget short is streamed instead.
    ///
    /// # Errors
    /// CUDA errors of the upload or of page-locking the host bases.
    pub(crate) fn placed(bases: &[Affine<P>], gpu: Option<(&GpuMsm, Residency)>) -> Result<Self> {
        let keep = sparse_indices(bases);
        let compact = keep.as_ref().map(|k| gather(bases, k));
        let used: &[Affine<P>] = compact.as_deref().unwrap_or(bases);
        let mut q = Query {
            lock: None,
            keep_lock: None,
            keep,
            host: None,
            gpu: None,
            streamed: None,
            points: used.len(),
        };
        if let (Some(_), Some(k)) = (gpu, &q.keep) {
            // SAFETY: `keep` is this query's own vector, never resized, and
            // dropped after `keep_lock` (field order).
            match unsafe { page_lock(k) } {
                Ok(l) => q.keep_lock = l,
                Err(e) => tracing::debug!(
                    target: "cuzk_prover",
                    "page-locking a compacted query's indices failed ({e}); they go up from \
                     pageable memory"
                ),
            }
        }
        let mut residency = gpu.map(|(_, r)| r);
        if let (Some((g, Residency::Resident)), false) = (gpu, used.is_empty()) {
            match g.upload_bases(used) {
                Ok(f) => q.gpu = Some(f),
                Err(Error::OutOfMemory(_)) => residency = Some(Residency::Streamed),
                Err(e) => return Err(e),
            }
        }
        if let (Some((g, _)), Some(Residency::Streamed), false) = (gpu, residency, used.is_empty())
        {
            q.streamed = Some(g.clone());
            // SAFETY: the bytes of `used`, read only: arkworks' BLS12-381
            // affine points are plain coordinates (layout asserted in
            // cuzk-field).
            let bytes = unsafe {
                std::slice::from_raw_parts(used.as_ptr().cast::<u8>(), std::mem::size_of_val(used))
            };
            // SAFETY: `used` is the key's own query (every prover holding
            // this lock holds the key's `Arc` and drops its queries first)
            // or this query's compacted vector, never resized and dropped
            // after the lock (field order).
            q.lock = unsafe { page_lock(bytes) }?;
        }
        if q.gpu.is_none() {
            q.host = compact;
        }
        Ok(q)
    }

    /// Whether the bases stream from host memory on every MSM.
    pub(crate) fn is_streamed(&self) -> bool {
        self.streamed.is_some()
    }

    /// Whether an MSM of this query has nothing to do (every base the
    /// identity, or no bases).
    pub(crate) fn is_empty(&self) -> bool {
        self.points == 0
    }

    /// For a streamed query, the non-zero scalars among `host` (the
    /// assignment from the query's first variable) when at least an eighth
    /// of the scalars its MSM takes are zero: then only their bases need
    /// cross PCIe. `None` when the query is resident, on the CPU path,
    /// empty, or mostly non-zero. Scans `host` on rayon's threads (the
    /// prover's CPU stage).
    pub(crate) fn nonzero(&self, host: &[Fr]) -> Option<NonZero> {
        self.streamed.as_ref()?;
        nonzero_scalars(self.keep.as_deref(), self.points, host)
    }

    /// For a streamed, non-empty query, its scalars among `host` (the
    /// assignment from the query's first variable) as [`Masked`] for a
    /// batch's witness pass; `None` when the query is resident, on the
    /// CPU path or empty, or when more than 1/16 of the scalars are
    /// neither 0 nor 1. Scans `host` on rayon's threads (the prover's CPU
    /// stage).
    pub(crate) fn masked(&self, host: &[Fr]) -> Option<Masked> {
        self.streamed.as_ref()?;
        if self.points == 0 {
            return None;
        }
        masked_scalars(self.keep.as_deref(), self.points, host)
    }

    /// [`Query::masked`] of the assignment `z` in compact form from
    /// variable `start` (the query's first): the same masks, read from
    /// `z`'s bitmasks (a few bytes a scalar) instead of 32-byte values.
    pub(crate) fn masked_compact(&self, z: &CompactAssignment, start: usize) -> Option<Masked> {
        self.streamed.as_ref()?;
        if self.points == 0 {
            return None;
        }
        masked_by(
            self.keep.as_deref(),
            self.points,
            z.len().saturating_sub(start),
            |v| z.get(start + v),
        )
    }

    /// The bases a streamed MSM of `scalars` scalars of this query sends:
    /// the compacted ones, or a prefix of `bases` (the full query).
    fn streamed_bases<'a>(&'a self, bases: &'a [Affine<P>], scalars: usize) -> &'a [Affine<P>] {
        match &self.keep {
            Some(_) => self.host.as_deref().unwrap_or(&[]),
            None => &bases[..scalars.min(bases.len())],
        }
    }

    /// The MSMs of several proofs' scalars over this streamed query, from
    /// their [`Masked`] forms (each made by [`Query::masked`] from `len`
    /// scalars): the bases of the ones stream once for all of them
    /// ([`GpuMsm::masked_sums_streamed`]); the few other scalars' bases are
    /// gathered on the host and go through an MSM a proof. `bases` is the
    /// full query; device memory within `share` when given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the query is not streamed or a mask
    /// does not match its bases; as [`GpuMsm::masked_sums_streamed`] and
    /// [`GpuMsm::msm_streamed`].
    pub(crate) fn masked_msms(
        &self,
        bases: &[Affine<P>],
        len: usize,
        masked: &[&Masked],
        share: Option<&Arc<Reservation>>,
    ) -> Result<Vec<Projective<P>>> {
        let Some(e) = &self.streamed else {
            return Err(Error::InvalidArgument(
                "a witness pass over a query that is not streamed".into(),
            ));
        };
        let e = &self.streaming(e, share);
        let b = self.streamed_bases(bases, len);
        // At most MASKS_A_STREAM masks a stream of the bases: the masks'
        // rows, partial sums and pattern buckets stay within about 1.2 GiB at 2^27
        // whatever the batch's size.
        let mut sums = Vec::with_capacity(masked.len());
        for group in masked.chunks(MASKS_A_STREAM) {
            let masks: Vec<&[u64]> = group.iter().map(|m| m.ones.as_slice()).collect();
            sums.extend(e.masked_sums_streamed(b, &masks)?);
        }
        for (sum, m) in sums.iter_mut().zip(masked) {
            if m.others.is_empty() {
                continue;
            }
            let points: Vec<Affine<P>> = m
                .others
                .iter()
                .map(|&j| {
                    b.get(j as usize).copied().ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "a scalar at base {j} of a query of {} bases",
                            b.len()
                        ))
                    })
                })
                .collect::<Result<_>>()?;
            *sum += e.msm_streamed(&points, &m.other_scalars)?;
        }
        Ok(sums)
    }

    /// Bytes an MSM from the device-resident assignment takes for its
    /// gathered scalars and their indices (36 a gathered scalar): the
    /// `nonzero` ones when given, else a compacted query's kept ones (0
    /// when uncompacted).
    pub(crate) fn gather_bytes(&self, nonzero: Option<&NonZero>) -> u64 {
        match nonzero {
            Some(nz) => 36 * nz.len() as u64,
            None => self.keep.as_ref().map_or(0, |k| 36 * k.len() as u64),
        }
    }

    /// The engine that streams this query's bases, within `share` when
    /// given.
    fn streaming(&self, e: &GpuMsm, share: Option<&Arc<Reservation>>) -> GpuMsm {
        match share {
            Some(s) => e.within(s.clone()),
            None => e.clone(),
        }
    }

    /// Bytes of bases that cross PCIe in each MSM of a streamed query (0
    /// when resident or on the CPU path); `full` is the full query's length.
    pub(crate) fn streamed_bytes(&self, full: usize) -> u64 {
        if self.streamed.is_none() {
            return 0;
        }
        let points = self.keep.as_ref().map_or(full, Vec::len);
        (points * std::mem::size_of::<Affine<P>>()) as u64
    }

    /// [`Query::streamed_bytes`] of an MSM that streams only the bases of
    /// `nonzero` scalars, when given.
    pub(crate) fn streamed_bytes_with(&self, full: usize, nonzero: Option<&NonZero>) -> u64 {
        match (nonzero, &self.streamed) {
            (Some(nz), Some(_)) => (nz.len() * std::mem::size_of::<Affine<P>>()) as u64,
            _ => self.streamed_bytes(full),
        }
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

    /// `sum_i scalars[range.start + i] bases[i]` for i < `range.len()`, the
    /// scalars in device memory (`bases` is the full query, the range at
    /// most as long and inside the buffer): read in place by the GPU when
    /// the query is on the device uncompacted; otherwise copied to the
    /// host first.
    ///
    /// A streamed query's MSM takes its device memory within `share` when
    /// given (see [`GpuMsm::within`]).
    ///
    /// # Errors
    /// As [`Query::msm`]; CUDA errors of the copy.
    pub(crate) fn msm_device(
        &self,
        bases: &[Affine<P>],
        scalars: &DeviceBuffer<Fr>,
        range: Range<usize>,
        share: Option<&Arc<Reservation>>,
    ) -> Result<Projective<P>> {
        let count = range.len();
        if count > bases.len() || range.end > scalars.len() {
            return Err(Error::InvalidArgument(format!(
                "scalars {range:?} of a device buffer of {} for a query of {} points",
                scalars.len(),
                bases.len()
            )));
        }
        match (&self.gpu, &self.keep, &self.streamed) {
            (Some(g), None, _) => {
                Ok(g.msm_device(scalars, range.start..range.start + count.min(g.len()))?)
            }
            (None, None, Some(e)) => Ok(self
                .streaming(e, share)
                .msm_streamed_device(bases, scalars, range)?),
            _ => {
                scalars.stream().synchronize()?;
                let mut host = vec![Fr::ZERO; scalars.len()];
                scalars.copy_to_host(&mut host)?;
                self.msm_within(bases, &host[range], share)
            }
        }
    }

    /// `sum_i z[start + i] bases[i]` for i < `host.len()`, the scalars
    /// taken from the device-resident full assignment `z` (so that the
    /// assignment crosses PCIe once a proof): in place when the query is
    /// uncompacted, gathered on the device (`mem`, `stream`) when
    /// compacted. `host` is the same scalars on the host: the MSM falls
    /// back to them when the device path runs out of memory, and the CPU
    /// path uses them. With `share`, the gathered scalars and a streamed
    /// query's MSM (the fallback's too) take their device memory within it.
    /// With `nonzero` ([`Query::nonzero`] of `host`), a streamed query
    /// gathers the non-zero scalars on the device and streams only their
    /// bases.
    ///
    /// # Errors
    /// As [`Query::msm`] and [`Query::msm_device`].
    #[allow(clippy::too_many_arguments)] // one internal driver, every argument used
    pub(crate) fn msm_assignment(
        &self,
        bases: &[Affine<P>],
        z: &DeviceBuffer<Fr>,
        start: usize,
        host: &[Fr],
        mem: &Arc<DeviceMemory>,
        stream: &Stream,
        share: Option<&Arc<Reservation>>,
        nonzero: Option<&NonZero>,
    ) -> Result<Projective<P>> {
        let on_device = || -> Result<Projective<P>> {
            let within = share.map(|s| &**s);
            if let (Some(nz), Some(e)) = (nonzero, &self.streamed) {
                if nz.len() == 0 {
                    // Every scalar is zero.
                    return Ok(Projective::default());
                }
                // Only the non-zero scalars' bases go up: the compacted
                // bases when compacted, else the query's own.
                let b = match &self.keep {
                    Some(_) => self.host.as_deref().unwrap_or(&[]),
                    None => bases,
                };
                let s = crate::device_r1cs::gather(mem, stream, z, start, nz.scalars(), within)?;
                return self.streaming(e, share).msm_streamed_device_gathered(
                    b,
                    &nz.bases,
                    &s,
                    0..nz.len(),
                );
            }
            match (&self.keep, &self.gpu, &self.streamed) {
                (None, Some(_), _) | (None, None, Some(_)) => {
                    self.msm_device(bases, z, start..start + host.len(), share)
                }
                (Some(keep), Some(g), _) => {
                    let s = crate::device_r1cs::gather(mem, stream, z, start, keep, within)?;
                    Ok(g.msm_device(&s, 0..keep.len().min(g.len()))?)
                }
                (Some(keep), None, Some(e)) => {
                    let s = crate::device_r1cs::gather(mem, stream, z, start, keep, within)?;
                    let b = self.host.as_deref().unwrap_or(&[]);
                    Ok(self.streaming(e, share).msm_streamed_device(
                        b,
                        &s,
                        0..keep.len().min(b.len()),
                    )?)
                }
                (_, None, None) => self.msm_within(bases, host, share),
            }
        };
        match on_device() {
            Err(Error::OutOfMemory(m)) => {
                tracing::debug!(
                    target: "cuzk_prover",
                    "an MSM from the device-resident assignment ran out of memory ({m}); \
                     taking host scalars"
                );
                self.msm_within(bases, host, share)
            }
            r => r,
        }
    }

    /// `sum_i scalars[i] bases[i]` (`bases` is the full query, `scalars` at
    /// most as long).
    pub(crate) fn msm(&self, bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
        self.msm_within(bases, scalars, None)
    }

    /// [`Query::msm`], a streamed query's MSM taking its device memory
    /// within `share` when given.
    fn msm_within(
        &self,
        bases: &[Affine<P>],
        scalars: &[Fr],
        share: Option<&Arc<Reservation>>,
    ) -> Result<Projective<P>> {
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
        match (&self.gpu, &self.streamed) {
            (Some(g), _) => g.msm(&s[..s.len().min(g.len())]),
            (None, Some(e)) => {
                let k = s.len().min(b.len());
                self.streaming(e, share).msm_streamed(&b[..k], &s[..k])
            }
            (None, None) => cuzk_msm::cpu::msm(b, &s[..b.len()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bls12_381::g1;
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Bits with `zeros` in 100 of them zero, and a few full scalars.
    fn witness(rng: &mut ChaCha20Rng, n: usize, zeros: u32) -> Vec<Fr> {
        (0..n)
            .map(|_| match rng.gen_range(0..100) {
                x if x < zeros => Fr::ZERO,
                x if x < 98 => Fr::from(1u64),
                _ => Fr::rand(rng),
            })
            .collect()
    }

    /// A compacted query over `bases`: every variable but those 3 mod 5,
    /// and one past the assignment `host` (its scalar reads as zero, its
    /// base stands in as `bases[0]`): the kept indices, their bases and
    /// their scalars.
    fn compacted(bases: &[g1::G1Affine], host: &[Fr]) -> (Vec<u32>, Vec<g1::G1Affine>, Vec<Fr>) {
        let n = bases.len() as u32;
        let mut keep: Vec<u32> = (0..n).filter(|i| i % 5 != 3).collect();
        keep.push(n + 7);
        let compact = keep
            .iter()
            .map(|&i| bases.get(i as usize).copied().unwrap_or(bases[0]))
            .collect();
        let kept = keep
            .iter()
            .map(|&i| host.get(i as usize).copied().unwrap_or(Fr::ZERO))
            .collect();
        (keep, compact, kept)
    }

    #[test]
    fn nonzero_scalars_keep_every_nonzero_term_of_the_msm() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x6e7a);
        let n = 3000;
        let bases: Vec<g1::G1Affine> = (0..n)
            .map(|_| g1::G1Projective::rand(&mut rng).into_affine())
            .collect();
        let host = witness(&mut rng, n, 58);
        let full = cuzk_msm::cpu::msm(&bases, &host).unwrap();

        // Uncompacted: positions are the variables themselves.
        let nz = nonzero_scalars(None, n, &host).expect("58% zeros");
        assert!(nz.scalars.is_none());
        let want: Vec<u32> = (0..n as u32)
            .filter(|&i| host[i as usize] != Fr::ZERO)
            .collect();
        assert_eq!(nz.bases, want);
        let b: Vec<_> = nz.bases.iter().map(|&i| bases[i as usize]).collect();
        let s: Vec<_> = nz.scalars().iter().map(|&i| host[i as usize]).collect();
        assert_eq!(cuzk_msm::cpu::msm(&b, &s).unwrap(), full);

        // Compacted: positions among the kept bases, variables from `keep`;
        // a kept variable past the assignment reads as zero.
        let (keep, compact, kept_scalars) = compacted(&bases, &host);
        let nz = nonzero_scalars(Some(&keep), keep.len(), &host).expect("58% zeros");
        let want: Vec<u32> = (0..keep.len() as u32)
            .filter(|&j| kept_scalars[j as usize] != Fr::ZERO)
            .collect();
        assert_eq!(nz.bases, want);
        assert!(nz.scalars().iter().all(|&i| host[i as usize] != Fr::ZERO));
        let b: Vec<_> = nz.bases.iter().map(|&j| compact[j as usize]).collect();
        let s: Vec<_> = nz.scalars().iter().map(|&i| host[i as usize]).collect();
        assert_eq!(
            cuzk_msm::cpu::msm(&b, &s).unwrap(),
            cuzk_msm::cpu::msm(&compact, &kept_scalars).unwrap()
        );
    }

    #[test]
    fn nonzero_scalars_pay_only_with_an_eighth_zero() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x6e7b);
        // 5% zeros: every base goes up.
        let dense = witness(&mut rng, 4000, 5);
        assert!(nonzero_scalars(None, dense.len(), &dense).is_none());
        // Exactly an eighth zero pays.
        let mut eighth = vec![Fr::from(1u64); 800];
        eighth[..100].iter_mut().for_each(|s| *s = Fr::ZERO);
        assert_eq!(
            nonzero_scalars(None, 800, &eighth).map(|n| n.len()),
            Some(700)
        );
        // Nothing to do.
        assert!(nonzero_scalars(None, 0, &dense).is_none());
        assert!(nonzero_scalars(Some(&[]), 0, &dense).is_none());
        // All zero: nothing crosses PCIe.
        let zeros = vec![Fr::ZERO; 64];
        assert_eq!(nonzero_scalars(None, 64, &zeros).map(|n| n.len()), Some(0));
        // The query is shorter than the assignment: only its points count.
        assert_eq!(
            nonzero_scalars(None, 100, &eighth).map(|n| n.len()),
            Some(0),
            "the first 100 scalars are zero"
        );
    }

    /// The MSM of `bases` and `host`'s scalars from a [`Masked`] form: the
    /// bases whose bit is set, plus the MSM of the others.
    fn from_masked(bases: &[g1::G1Affine], m: &Masked) -> g1::G1Projective {
        let ones: g1::G1Projective = (0..bases.len())
            .filter(|&j| m.ones[j / 64] >> (j % 64) & 1 == 1)
            .map(|j| bases[j].into_group())
            .sum();
        let b: Vec<_> = m.others.iter().map(|&j| bases[j as usize]).collect();
        ones + cuzk_msm::cpu::msm(&b, &m.other_scalars).unwrap()
    }

    #[test]
    fn masked_scalars_split_every_term_of_the_msm() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x6d61);
        let n = 3000;
        let bases: Vec<g1::G1Affine> = (0..n)
            .map(|_| g1::G1Projective::rand(&mut rng).into_affine())
            .collect();
        let host = witness(&mut rng, n, 58);
        let m = masked_scalars(None, n, &host).expect("2% neither 0 nor 1");
        assert_eq!(m.ones.len(), n.div_ceil(64));
        assert_eq!(m.ones[n / 64] >> (n % 64), 0, "no bit past the last base");
        assert!(m.others.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            from_masked(&bases, &m),
            cuzk_msm::cpu::msm(&bases, &host).unwrap()
        );

        // Compacted: bits over the kept bases; a kept variable past the
        // assignment reads as zero.
        let (keep, compact, kept) = compacted(&bases, &host);
        let m = masked_scalars(Some(&keep), keep.len(), &host).expect("2% others");
        assert_eq!(m.ones.len(), keep.len().div_ceil(64));
        assert_eq!(
            from_masked(&compact, &m),
            cuzk_msm::cpu::msm(&compact, &kept).unwrap()
        );

        // Dense scalars: no pass. At most 1/16 others: a pass.
        let dense: Vec<Fr> = (0..640).map(|_| Fr::rand(&mut rng)).collect();
        assert!(masked_scalars(None, 640, &dense).is_none());
        let mut edge = vec![Fr::ONE; 640];
        edge[..40].copy_from_slice(&dense[..40]);
        assert_eq!(
            masked_scalars(None, 640, &edge).map(|m| m.others.len()),
            Some(40)
        );
        edge[40] = dense[40];
        assert!(masked_scalars(None, 640, &edge).is_none(), "41 of 640");
        // The query is shorter than the assignment: its points only.
        let mut tail = vec![Fr::ONE; 64];
        tail.extend_from_slice(&dense);
        let m = masked_scalars(None, 64, &tail).expect("no others in the first 64");
        assert_eq!((m.ones, m.others.len()), (vec![u64::MAX], 0));
    }

    /// Masks read from the compact assignment equal those read from its
    /// values: full and compacted queries, from variables 0, 1 and 70, the
    /// query longer and shorter than the assignment.
    #[test]
    fn masks_from_the_compact_assignment() {
        use crate::assignment::CompactAssignment;
        let mut rng = ChaCha20Rng::seed_from_u64(0x6d63);
        let n = 3000;
        let z = witness(&mut rng, n, 58);
        let c = CompactAssignment::of(&z).expect("mostly bits");
        for start in [0usize, 1, 70] {
            let host = &z[start..];
            for points in [n - start, n + 100, 640] {
                assert_eq!(
                    masked_scalars(None, points, host),
                    masked_by(None, points, c.len() - start, |v| c.get(start + v)),
                    "start {start}, {points} points"
                );
            }
            let keep: Vec<u32> = (0..n as u32 + 50).filter(|i| i % 3 != 1).collect();
            assert_eq!(
                masked_scalars(Some(&keep), keep.len(), host),
                masked_by(Some(&keep), keep.len(), c.len() - start, |v| c
                    .get(start + v)),
                "start {start}, compacted"
            );
        }
    }
}
