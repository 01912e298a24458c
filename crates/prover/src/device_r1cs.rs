//! The R1CS on the GPU: the evaluations `A z`, `B z`, `C z` of a
//! [`SparseR1cs`] against a device-resident assignment (dense or compact),
//! its chunks resident on the device or streamed from page-locked host
//! memory on every proof.

use crate::assignment::DeviceAssignment;
use crate::query::page_lock;
use crate::sparse::{RowChunk, SparseR1cs};
use crate::{sys, Error, Fr, Result};
use cuzk_alloc::{DeviceBuffer, DeviceMemory, PageLock, Reservation, Strategy, Stream};
use std::sync::Arc;

/// A `cuzk_status` as a [`Result`].
pub(crate) fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// A [`SparseR1cs`] placed on one GPU.
pub(crate) struct DeviceR1cs {
    /// Page-locks of the streamed chunks' words (declared first: dropped
    /// before `sparse`, which owns the words).
    _locks: Vec<Arc<PageLock>>,
    /// Each chunk on the device, in [`SparseR1cs::chunks`] order, when
    /// resident.
    resident: Option<Vec<DeviceBuffer<u64>>>,
    sparse: Arc<SparseR1cs>,
    mem: Arc<DeviceMemory>,
}

impl DeviceR1cs {
    /// `sparse` on the GPU of `mem`: resident (uploaded once) when the
    /// budget's available bytes hold it with `reserve` bytes to spare (one
    /// proof's working set), else streamed (its chunks page-locked, for
    /// DMA; where the system refuses to lock that much, the rest streams
    /// from pageable memory, slower, with a warning). A resident upload
    /// that finds the budget short streams instead.
    ///
    /// # Errors
    /// CUDA errors of the uploads.
    pub(crate) fn place(
        sparse: Arc<SparseR1cs>,
        mem: Arc<DeviceMemory>,
        reserve: u64,
    ) -> Result<Self> {
        let copy_stream = Stream::new(mem.device())?;
        let room = mem.budget().available_bytes()?;
        let mut resident = None;
        if room >= sparse.bytes().saturating_add(reserve) {
            let upload = || -> Result<Vec<DeviceBuffer<u64>>> {
                sparse
                    .chunks()
                    .map(|c| {
                        let mut d =
                            mem.alloc::<u64>(c.words.len(), Strategy::Async, &copy_stream, None)?;
                        d.copy_from_host(&c.words)?;
                        Ok(d)
                    })
                    .collect()
            };
            match upload() {
                Ok(v) => resident = Some(v),
                Err(Error::OutOfMemory(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let mut locks = Vec::new();
        if resident.is_none() {
            // A chunk that cannot be locked (the system's limit, or a small
            // chunk sharing a page with one locked already) streams from
            // pageable memory, more slowly; the others stay locked.
            let (mut refused, mut refused_bytes, mut last) = (0usize, 0u64, None);
            for c in sparse.chunks() {
                // SAFETY: the words belong to `sparse`, held by this value
                // (an `Arc`, never mutated: chunks are built once) and
                // dropped after `locks` (field order).
                match unsafe { page_lock(&c.words) } {
                    Ok(Some(l)) => locks.push(l),
                    Ok(None) => {}
                    Err(e) => {
                        refused += 1;
                        refused_bytes += 8 * c.words.len() as u64;
                        last = Some(e);
                    }
                }
            }
            if let Some(e) = last {
                tracing::warn!(
                    target: "cuzk_prover",
                    "page-locking {refused} of {} chunks of the streamed R1CS ({refused_bytes} \
                     bytes) failed (the last: {e}); they stream from pageable memory, more \
                     slowly",
                    sparse.num_chunks()
                );
            }
        }
        Ok(DeviceR1cs {
            _locks: locks,
            resident,
            sparse,
            mem,
        })
    }

    /// The compact form.
    pub(crate) fn sparse(&self) -> &Arc<SparseR1cs> {
        &self.sparse
    }

    /// Whether the chunks stream from host memory on every evaluation.
    pub(crate) fn is_streamed(&self) -> bool {
        self.resident.is_none()
    }

    /// Device bytes an evaluation claims beyond its vectors: two chunks
    /// when streamed (the one in use and the next arriving), none when
    /// resident.
    pub(crate) fn stream_buffer_bytes(&self) -> u64 {
        if self.is_streamed() {
            2 * self.sparse.max_chunk_bytes()
        } else {
            0
        }
    }

    /// `out[i] = <row i of matrix k, z>` for the constraints (k: 0 for A, 1
    /// for B, 2 for C), then `z[..copy]` (the instance variables in `A z`,
    /// none in the others), then zeros to `out`'s end; on `stream` (the
    /// NTT engine's), and waited for. `z` is the full assignment on this
    /// GPU.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `z` is shorter than the system's
    /// variables, or the constraints and `copy` do not fit `out`;
    /// [`Error::OutOfMemory`] for a streamed chunk's buffer; CUDA errors.
    pub(crate) fn evaluate(
        &self,
        k: usize,
        z: &DeviceAssignment,
        out: &mut DeviceBuffer<Fr>,
        copy: usize,
        stream: &Stream,
    ) -> Result<()> {
        z.stream().synchronize()?;
        self.evaluate_beside(k, z, out, copy, stream)
    }

    /// As [`DeviceR1cs::evaluate`] for a `z` already written (its stream
    /// synchronized since its last write): `z`'s stream is not waited for,
    /// so that the evaluation, on a `stream` of its own, runs beside other
    /// work queued there (the NTTs of a vector evaluated before).
    ///
    /// # Errors
    /// As [`DeviceR1cs::evaluate`].
    pub(crate) fn evaluate_beside(
        &self,
        k: usize,
        z: &DeviceAssignment,
        out: &mut DeviceBuffer<Fr>,
        copy: usize,
        stream: &Stream,
    ) -> Result<()> {
        let nc = self.sparse.num_constraints();
        let dev = self.mem.device();
        if z.len() < self.sparse.num_variables() || z.len() < copy || nc + copy > out.len() {
            return Err(Error::InvalidArgument(format!(
                "R1CS evaluation: {nc} constraints and {copy} inputs into {} elements from an \
                 assignment of {} variables (the matrices name {})",
                out.len(),
                z.len(),
                self.sparse.num_variables()
            )));
        }
        for b in [z.stream(), out.stream()] {
            if b.device() != dev {
                return Err(Error::InvalidArgument(format!(
                    "R1CS evaluation on device {dev} with buffers of device {}",
                    b.device()
                )));
            }
        }
        out.stream().synchronize()?;
        let mut bad = self.mem.alloc::<u32>(1, Strategy::Async, stream, None)?;
        bad.copy_from_host(&[0])?;
        let out_ptr = out.as_mut_ptr();
        let bad_ptr = bad.as_mut_ptr();
        let zr = z.raw();
        let launch = |c: &RowChunk, words: *const u64| -> Result<()> {
            // Offsets inside the chunk's words (the pointers are only
            // computed here, read by the kernel).
            let entries = words.wrapping_add(c.row_end_words());
            let table = words.wrapping_add(c.table_offset());
            let args = sys::cuzk_r1cs_rows {
                row_end: words.cast(),
                entries,
                rows: c.rows as u64,
                coefficients: table.cast(),
                num_coefficients: c.coefficients as u64,
                z: zr,
                // SAFETY: first_row + rows <= nc <= out.len() (checked).
                out: unsafe { out_ptr.add(c.first_row) }.cast(),
                bad: bad_ptr,
            };
            // SAFETY: the chunk's words are on this device (resident, or a
            // streamed chunk's buffer kept until the stream is synchronized);
            // z, out and `bad` outlive the launch (synchronized below).
            check(unsafe { sys::cuzk_r1cs_eval_rows(dev, &args, stream.as_raw()) })
        };
        let chunks = self.sparse.part(k);
        match &self.resident {
            Some(bufs) => {
                let first: usize = (0..k).map(|j| self.sparse.part(j).len()).sum();
                for (c, d) in chunks.iter().zip(&bufs[first..]) {
                    launch(c, d.as_ptr())?;
                }
            }
            None => self.stream_chunks(chunks, stream, &launch)?,
        }
        let tail = out.len() - nc;
        // SAFETY: out holds nc + tail elements and z at least `copy`; both
        // on this device, alive until the stream is synchronized below.
        check(unsafe {
            sys::cuzk_r1cs_fill_tail(
                dev,
                out_ptr.add(nc).cast(),
                &zr,
                copy as u64,
                tail as u64,
                stream.as_raw(),
            )
        })?;
        stream.synchronize()?;
        let mut flag = [0u32];
        bad.copy_to_host(&mut flag)?;
        if flag[0] != 0 {
            return Err(Error::Internal(
                "an R1CS chunk names a column or coefficient out of range: its compact form is \
                 corrupt"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Streams `chunks` up two at a time (the copy of the next overlapping
    /// the kernel of this one) and runs `launch` on each, waiting for its
    /// kernel before its buffer goes.
    fn stream_chunks(
        &self,
        chunks: &[RowChunk],
        stream: &Stream,
        launch: &dyn Fn(&RowChunk, *const u64) -> Result<()>,
    ) -> Result<()> {
        let Some(first) = chunks.first() else {
            return Ok(());
        };
        // A copy stream of this call's own: the workers of one GPU stream
        // their chunks side by side.
        let copy_stream = Stream::new(self.mem.device())?;
        let alloc = |c: &RowChunk| {
            self.mem
                .alloc::<u64>(c.words.len(), Strategy::Async, &copy_stream, None)
        };
        let copy = |mut d: DeviceBuffer<u64>, c: &RowChunk| -> Result<DeviceBuffer<u64>> {
            d.copy_from_host(&c.words)?;
            Ok(d)
        };
        let mut current = copy(alloc(first)?, first)?;
        for (i, c) in chunks.iter().enumerate() {
            let next = chunks.get(i + 1);
            let next_buf = next.map(alloc).transpose()?;
            let (ran, arrived) = std::thread::scope(|s| {
                let h = next_buf.zip(next).map(|(b, n)| s.spawn(move || copy(b, n)));
                let ran = launch(c, current.as_ptr()).and_then(|()| stream.synchronize());
                let arrived = h.map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("an R1CS chunk's upload panicked".into()))
                    })
                });
                (ran, arrived)
            });
            ran?;
            if let Some(b) = arrived {
                current = b?;
            }
        }
        Ok(())
    }
}

/// `out[i] = z[start + index[i]]` for every index of `index` (host, page-
/// locked or not), on `stream` and waited for: a compacted query's
/// scalars gathered from the device-resident assignment. Returns the
/// gathered scalars; their buffer (and the indices', while the call runs)
/// is taken within `share` when given.
///
/// # Errors
/// [`Error::InvalidArgument`] when `start` is past `z`;
/// [`Error::OutOfMemory`]; CUDA errors.
pub(crate) fn gather(
    mem: &Arc<DeviceMemory>,
    stream: &Stream,
    z: &DeviceBuffer<Fr>,
    start: usize,
    index: &[u32],
    share: Option<&Reservation>,
) -> Result<DeviceBuffer<Fr>> {
    if start > z.len() {
        return Err(Error::InvalidArgument(format!(
            "gather from variable {start} of an assignment of {}",
            z.len()
        )));
    }
    let mut idx = mem.alloc::<u32>(index.len(), Strategy::Async, stream, share)?;
    idx.copy_from_host(index)?;
    let mut out = mem.alloc::<Fr>(index.len(), Strategy::Async, stream, share)?;
    z.stream().synchronize()?;
    // SAFETY: `out` and `idx` hold index.len() elements, z holds
    // z.len() - start past `start` (indices beyond read as zero); all on
    // this device and alive until the stream is synchronized.
    check(unsafe {
        sys::cuzk_prover_gather(
            mem.device(),
            out.as_mut_ptr().cast(),
            z.as_ptr().add(start).cast(),
            idx.as_ptr(),
            index.len() as u64,
            (z.len() - start) as u64,
            stream.as_raw(),
        )
    })?;
    stream.synchronize()?;
    Ok(out)
}

/// Runs csrc/prover's row code (the kernel's, `eval.cuh`) on the host over
/// every chunk of matrix `k`, against `z`: `out[i]` for the constraints,
/// as the GPU's evaluation computes them before the tail. For tests of the
/// kernel's arithmetic and of the chunks' layout without a GPU.
///
/// # Errors
/// [`Error::Internal`] when the row code flags an entry out of range.
#[cfg(test)]
pub(crate) fn eval_rows_host(sparse: &SparseR1cs, k: usize, z: &[Fr]) -> Result<Vec<Fr>> {
    let dense = sys::cuzk_assignment {
        ones: std::ptr::null(),
        others: std::ptr::null(),
        rank: std::ptr::null(),
        values: z.as_ptr().cast(),
        num_variables: z.len() as u64,
    };
    eval_rows_host_with(sparse, k, dense)
}

/// [`eval_rows_host`] against an assignment in either form (host pointers,
/// valid for the call).
#[cfg(test)]
pub(crate) fn eval_rows_host_with(
    sparse: &SparseR1cs,
    k: usize,
    z: sys::cuzk_assignment,
) -> Result<Vec<Fr>> {
    use ark_ff::AdditiveGroup;
    let mut out = vec![Fr::ZERO; sparse.num_constraints()];
    let mut bad = 0u32;
    for c in sparse.part(k) {
        let words = c.words.as_ptr();
        let args = sys::cuzk_r1cs_rows {
            row_end: words.cast(),
            entries: words.wrapping_add(c.row_end_words()),
            rows: c.rows as u64,
            coefficients: words.wrapping_add(c.table_offset()).cast(),
            num_coefficients: c.coefficients as u64,
            z,
            out: out[c.first_row..c.first_row + c.rows].as_mut_ptr().cast(),
            bad: &mut bad,
        };
        // SAFETY: host pointers into the chunk's words, `z`'s arrays and
        // `out`, valid for the call; the row code reads inside them
        // (entries out of range are skipped and flagged).
        check(unsafe { sys::cuzk_r1cs_eval_rows_host(&args) })?;
    }
    if bad != 0 {
        return Err(Error::Internal("an entry out of range".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// The kernel's row code, run on the host, gives the compact form's
    /// (and so the matrices') evaluations: random rows of 0 to 40 terms,
    /// coefficients 1, -1, 0, powers of two and random, chunks cut small
    /// (odd offsets of the table included) and at the defaults.
    #[test]
    fn kernel_row_code_matches_the_reference() {
        let mut rng = ChaCha20Rng::seed_from_u64(0xe7a1);
        let (rows, vars) = (3000, 700);
        let matrices = Arc::new(crate::sparse::tests::random_matrices(&mut rng, rows, vars));
        let z: Vec<Fr> = (0..vars).map(|_| Fr::rand(&mut rng)).collect();
        let log_n = crate::qap::domain_log_size(rows, 1).unwrap();
        for (max_rows, max_entries) in [(1, 1), (7, 29), (64, 50), (1 << 20, 1 << 23)] {
            let s = SparseR1cs::with_limits(matrices.clone(), max_rows, max_entries).unwrap();
            let want = s.evaluate(&z, 1, log_n).unwrap();
            for (k, w) in want.iter().enumerate() {
                assert_eq!(
                    eval_rows_host(&s, k, &z).unwrap(),
                    w[..rows],
                    "matrix {k}, limits {max_rows} {max_entries}"
                );
            }
        }
        // An assignment too short: flagged, not read past.
        let s = SparseR1cs::new(matrices).unwrap();
        assert!(eval_rows_host(&s, 0, &z[..vars / 2]).is_err());
    }

    /// The row code reads a compact assignment as the dense one: a witness
    /// of mostly 0s and 1s with a few other values, chunks cut small and at
    /// the defaults; an assignment too short is flagged there too.
    #[test]
    fn kernel_row_code_reads_compact_assignments() {
        use crate::assignment::CompactAssignment;
        use ark_ff::{AdditiveGroup, Field};
        use rand::Rng;
        let mut rng = ChaCha20Rng::seed_from_u64(0xc0a5);
        let (rows, vars) = (2000, 900);
        let matrices = Arc::new(crate::sparse::tests::random_matrices(&mut rng, rows, vars));
        let z: Vec<Fr> = (0..vars)
            .map(|_| match rng.gen_range(0..20) {
                0..=8 => Fr::ZERO,
                9..=17 => Fr::ONE,
                18 => -Fr::ONE,
                _ => Fr::rand(&mut rng),
            })
            .collect();
        let compact = CompactAssignment::of(&z).unwrap();
        let log_n = crate::qap::domain_log_size(rows, 1).unwrap();
        for (max_rows, max_entries) in [(7, 29), (1 << 20, 1 << 23)] {
            let s = SparseR1cs::with_limits(matrices.clone(), max_rows, max_entries).unwrap();
            let want = s.evaluate(&z, 1, log_n).unwrap();
            for (k, w) in want.iter().enumerate() {
                assert_eq!(
                    eval_rows_host_with(&s, k, compact.raw_host()).unwrap(),
                    w[..rows],
                    "matrix {k}, limits {max_rows} {max_entries}"
                );
            }
        }
        let short = CompactAssignment::of(&z[..vars / 2]).unwrap();
        let s = SparseR1cs::new(matrices).unwrap();
        assert!(eval_rows_host_with(&s, 0, short.raw_host()).is_err());
    }
}
