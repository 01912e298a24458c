//! Host <-> device copies of large arrays: [`Staging`] (two pinned chunks
//! and parallel host memcpy) and [`StagedCopies`] (an engine's copies,
//! direct for page-locked slices).

use crate::buffer::DeviceBuffer;
use crate::host::{is_page_locked, PinnedBuffer};
use crate::raw::check;
use crate::sys;
use cuzk_field::{DeviceRepr, Error, Result};

/// True when a copy of `data` should skip the staging buffers: it is
/// non-empty and page-locked. A failed query reads as pageable (the staged
/// path then reports any real problem).
fn direct_copy<T: DeviceRepr>(data: &[T]) -> bool {
    !data.is_empty() && is_page_locked(data).unwrap_or(false)
}

/// Host <-> device copies of large arrays through two pinned staging
/// buffers: while the GPU's copy engine moves one chunk over PCIe, the
/// staging's own host threads (up to 16) copy the next chunk between the
/// caller's pageable memory and the other pinned buffer. A plain copy from
/// pageable memory is staged by the driver one thread at a time; this one
/// is limited by the slower of the PCIe link and the host's parallel memcpy
/// (BENCHMARKS.md has figures).
///
/// A host slice that is already page-locked ([`is_page_locked`]) is copied
/// directly with one `cudaMemcpyAsync`, without the staging buffers; a
/// gather ([`Staging::upload_gather`]) from mapped pinned memory is read by
/// the GPU itself, any other goes through them.
///
/// Holds `2 * chunk_bytes` of pinned host memory until dropped. One
/// `Staging` serves one copy at a time (`&mut self`); give each worker its
/// own, or share one through [`StagedCopies`].
pub struct Staging {
    bufs: [PinnedBuffer<u8>; 2],
    chunk: usize,
    pool: rayon::ThreadPool,
    /// Gathers the GPU did from mapped memory ([`Staging::gpu_gathers`]).
    gpu_gathers: u64,
}

/// Default chunk of a [`Staging`]: 32 MiB (two of them pinned).
pub const DEFAULT_STAGING_CHUNK_BYTES: usize = 32 << 20;

/// Host threads of one staged memcpy, at most. Pageable-to-pinned memcpy
/// runs at a few GB/s a thread, and the copy must keep up with a PCIe 5.0
/// link's direction; 16 threads measured faster than 8 on a 16-core host
/// (BENCHMARKS.md).
const COPY_THREADS: usize = 16;

/// Copies `src` into `dst` (equal lengths) on `pool`, in 1 MiB pieces.
/// The pool is the [`Staging`]'s own (never rayon's global one): its
/// workers run nothing but these copies, so a copy neither queues behind
/// the caller's other parallel work (the prover's CPU stages) nor runs,
/// under a [`StagedCopies`] lock, a job that waits for that lock; and its
/// threads are started once, not for every chunk.
fn par_copy(pool: &rayon::ThreadPool, dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 20;
    pool.install(|| {
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s))
    });
}

/// Gathers records into `dst` on `pool`: record k of `dst` (bytes
/// `k * record..(k + 1) * record`) is record `indices[k]` of `src`, in
/// pieces of about 1 MiB of output. The indices must be in range (checked
/// by the callers).
fn par_gather(
    pool: &rayon::ThreadPool,
    dst: &mut [u8],
    src: &[u8],
    record: usize,
    indices: &[u32],
) {
    use rayon::prelude::*;
    let per_piece = ((1usize << 20) / record).max(1);
    pool.install(|| {
        dst.par_chunks_mut(per_piece * record)
            .zip(indices.par_chunks(per_piece))
            .for_each(|(d, ix)| {
                for (out, &i) in d.chunks_exact_mut(record).zip(ix) {
                    let at = i as usize * record;
                    out.copy_from_slice(&src[at..at + record]);
                }
            })
    });
}

/// Checks a gather's shapes: `src_len` elements in records of `record`,
/// `dst_len` elements for `indices`, every index a record of `src`.
fn check_gather(
    what: &str,
    src_len: usize,
    dst_len: usize,
    record: usize,
    indices: &[u32],
) -> Result<()> {
    use rayon::prelude::*;
    if record == 0 || src_len % record != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: records of {record} elements in a source of {src_len}: the record must be \
             non-zero and divide the source"
        )));
    }
    if indices.len().checked_mul(record) != Some(dst_len) {
        return Err(Error::InvalidArgument(format!(
            "{what}: {} records of {record} elements into a buffer of {dst_len}",
            indices.len()
        )));
    }
    let records = src_len / record;
    if let Some(bad) = indices.par_iter().find_first(|&&i| i as usize >= records) {
        return Err(Error::InvalidArgument(format!(
            "{what}: index {bad} past the source's {records} records"
        )));
    }
    Ok(())
}

/// The copy threads of one [`Staging`].
fn copy_pool() -> Result<rayon::ThreadPool> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(COPY_THREADS);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cuzk-staging-{i}"))
        .build()
        .map_err(|e| Error::Internal(format!("Staging: cannot start its copy threads: {e}")))
}

/// The bytes of a slice of device-layout values.
fn as_bytes<T: DeviceRepr>(s: &[T]) -> &[u8] {
    // SAFETY: DeviceRepr types have no padding bytes (the trait's safety
    // contract), so every byte of the slice is initialized; u8 has no
    // alignment requirement and the view covers exactly the slice.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// The bytes of a mutable slice of device-layout values.
fn as_bytes_mut<T: DeviceRepr>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`. Every byte written through this view comes
    // from a DeviceBuffer<T>, i.e. from values of T as the device code
    // writes them, which the DeviceRepr contract makes valid values; a copy
    // that fails part-way leaves whole chunks written (see
    // Staging::download), so an element may mix old and new bytes, each
    // half from a valid value, which the caller is told to discard.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

impl Staging {
    /// Two pinned buffers of `chunk_bytes` bytes each (a few MiB or more is
    /// sensible; [`DEFAULT_STAGING_CHUNK_BYTES`] suits PCIe 4 and 5).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero chunk; [`Error::OutOfMemory`]
    /// when pinned memory runs out; [`Error::NoDevice`] /
    /// [`Error::NoCudaBuild`] without CUDA.
    pub fn new(chunk_bytes: usize) -> Result<Self> {
        if chunk_bytes == 0 {
            return Err(Error::InvalidArgument(
                "Staging::new: the chunk must be at least one byte".into(),
            ));
        }
        Ok(Staging {
            bufs: [
                PinnedBuffer::new(chunk_bytes)?,
                PinnedBuffer::new(chunk_bytes)?,
            ],
            chunk: chunk_bytes,
            pool: copy_pool()?,
            gpu_gathers: 0,
        })
    }

    /// Chunk size in bytes.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk
    }

    /// How many [`Staging::upload_gather`] calls so far the GPU did itself,
    /// reading mapped page-locked memory (the others: the host threads).
    pub fn gpu_gathers(&self) -> u64 {
        self.gpu_gathers
    }

    /// Copies `src` (elements) into `dst`, which must hold as many, on
    /// `dst`'s stream. Blocks until the copy is complete; it first waits for
    /// the work already queued on that stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths (in elements) differ;
    /// [`Error::Cuda`] (or [`Error::InvalidArgument`] for a CUDA
    /// invalid-value error) from a failed copy or synchronize, after which
    /// the buffer's contents are unspecified; `src` is never written.
    pub fn upload<T: DeviceRepr>(&mut self, dst: &mut DeviceBuffer<T>, src: &[T]) -> Result<()> {
        if src.len() != dst.len {
            return Err(Error::InvalidArgument(format!(
                "Staging::upload: {} elements into a buffer of {}",
                src.len(),
                dst.len
            )));
        }
        if direct_copy(src) {
            dst.stream.synchronize()?;
            return dst.copy_from_host(src);
        }
        let src = as_bytes(src);
        let chunk = self.chunk;
        let lens: Vec<usize> = src.chunks(chunk).map(<[u8]>::len).collect();
        self.upload_rounds(dst, &lens, |pool, buf, k| {
            par_copy(pool, buf, &src[k * chunk..k * chunk + buf.len()]);
        })
    }

    /// Fills `dst` from its start in rounds of `lens[k]` bytes (each at
    /// most a chunk): `fill(pool, buf, k)` writes round k's bytes into a
    /// pinned buffer on the staging's threads while the copy engine moves
    /// round k - 1's from the other one. Waits for the work queued on
    /// `dst`'s stream first, and for the last copy before returning.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the rounds pass `dst` or a chunk;
    /// CUDA errors of the copies and synchronizes.
    fn upload_rounds<T: DeviceRepr>(
        &mut self,
        dst: &DeviceBuffer<T>,
        lens: &[usize],
        mut fill: impl FnMut(&rayon::ThreadPool, &mut [u8], usize),
    ) -> Result<()> {
        let total: usize = lens.iter().sum();
        if total as u64 > dst.bytes || lens.iter().any(|&l| l > self.chunk) {
            return Err(Error::InvalidArgument(format!(
                "Staging: {total} bytes in rounds of up to {} into a buffer of {} bytes, chunks \
                 of {}",
                lens.iter().max().unwrap_or(&0),
                dst.bytes,
                self.chunk
            )));
        }
        let stream = dst.stream.clone();
        let mut at = 0;
        for (k, &len) in lens.iter().enumerate() {
            let buf = &mut self.bufs[k % 2];
            // The copy engine may still be moving round k - 1 (other
            // buffer); buffer k % 2 was released by the synchronize of
            // round k - 1.
            fill(&self.pool, &mut buf[..len], k);
            stream.synchronize()?;
            // SAFETY: the rounds add up to at most `dst`'s bytes (checked
            // above), so the device address stays inside its allocation;
            // the pinned buffer holds `len` bytes and is not written again
            // before the synchronize of the next round (or the final one)
            // has waited for this copy.
            check(unsafe {
                sys::cuzk_memcpy_async(
                    dst.memory.device(),
                    dst.ptr.0.cast::<u8>().wrapping_add(at).cast(),
                    buf.as_ptr().cast(),
                    len as u64,
                    stream.as_raw(),
                )
            })?;
            at += len;
        }
        stream.synchronize()
    }

    /// Copies the records `indices` of `src` into `dst`, in that order, on
    /// `dst`'s stream: record k of `dst` (elements `k * record..(k + 1) *
    /// record`) is record `indices[k]` of `src`, so that only the chosen
    /// records cross PCIe (say, the bases of an MSM's non-zero scalars).
    /// Blocks until the copy is complete; it first waits for the work
    /// already queued on that stream.
    ///
    /// Where `src` lies in one mapped page-locked allocation or
    /// registration of this crate ([`PinnedBuffer`],
    /// [`crate::HostRegistration`], [`crate::PageLock`]) and its records
    /// are multiples of 16 bytes, a kernel reads the records over PCIe
    /// itself (zero-copy; the indices reach it through the pinned buffers),
    /// and no host thread touches them. Otherwise the staging threads gather
    /// each chunk into a pinned buffer while the copy engine moves the one
    /// before.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `record` is zero or does not divide
    /// `src`, when `dst` does not hold `indices.len() * record` elements,
    /// when an index is past `src`'s records, or when a chunk of this
    /// staging is smaller than one record; CUDA errors as
    /// [`Staging::upload`].
    pub fn upload_gather<T: DeviceRepr>(
        &mut self,
        dst: &mut DeviceBuffer<T>,
        src: &[T],
        record: usize,
        indices: &[u32],
    ) -> Result<()> {
        // On the staging's own threads, as the copies: rayon's global pool
        // may be busy with the caller's CPU stages.
        self.pool.install(|| {
            check_gather(
                "Staging::upload_gather",
                src.len(),
                dst.len,
                record,
                indices,
            )
        })?;
        let record_bytes = record * std::mem::size_of::<T>();
        let per_chunk = self.chunk / record_bytes.max(1);
        if per_chunk == 0 {
            return Err(Error::InvalidArgument(format!(
                "Staging::upload_gather: records of {record_bytes} bytes do not fit the staging's \
                 chunks of {} bytes: use a larger staging chunk",
                self.chunk
            )));
        }
        let src = as_bytes(src);
        if let Some((base, offset)) = crate::host::mapped_range(src) {
            match self.gather_mapped(dst, base, offset, record_bytes, indices) {
                // Refused before any kernel ran (not mapped for this
                // device, or misaligned): the host threads gather instead.
                Ok(false) => {}
                Ok(true) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        let lens: Vec<usize> = indices
            .chunks(per_chunk)
            .map(|ix| ix.len() * record_bytes)
            .collect();
        self.upload_rounds(dst, &lens, |pool, buf, k| {
            let ix = &indices[k * per_chunk..k * per_chunk + buf.len() / record_bytes];
            par_gather(pool, buf, src, record_bytes, ix);
        })
    }

    /// [`Staging::upload_gather`] by the GPU: the records `indices`
    /// (checked in range) of the mapped host records at byte `offset` of the
    /// allocation or registration starting at `base`, `record_bytes` each,
    /// read by a kernel on `dst`'s stream ([`sys::cuzk_gather_mapped`]).
    /// The indices go to the kernel through the pinned buffers, a chunk's
    /// worth a round: the host copies round k's while round k - 1's kernel
    /// runs. Waits for the last kernel. `Ok(false)` when the GPU refused the
    /// first round before any kernel ran (the records not a multiple of 16
    /// bytes, a range misaligned or not mapped for the device, a chunk too
    /// small for one index): nothing written, the host may gather instead.
    ///
    /// # Errors
    /// CUDA errors of the kernels and synchronizes (and a refusal of a
    /// later round, which cannot happen as the first was accepted), after
    /// the stream has been waited for: no kernel outlives the call.
    fn gather_mapped<T: DeviceRepr>(
        &mut self,
        dst: &DeviceBuffer<T>,
        base: *const u8,
        offset: u64,
        record_bytes: usize,
        indices: &[u32],
    ) -> Result<bool> {
        let per_round = self.chunk / std::mem::size_of::<u32>();
        let record_u32 = u32::try_from(record_bytes).unwrap_or(0);
        if per_round == 0 || record_u32 == 0 || record_bytes % 16 != 0 {
            return Ok(false);
        }
        let stream = dst.stream.clone();
        let device = dst.memory.device();
        let mut launched = false;
        let mut rounds = || -> Result<()> {
            for (k, ix) in indices.chunks(per_round).enumerate() {
                let buf = &mut self.bufs[k % 2];
                // Buffer k % 2 was last read by round k - 2's kernel, which
                // the synchronize of round k - 1 waited for.
                let bytes = as_bytes(ix);
                par_copy(&self.pool, &mut buf[..bytes.len()], bytes);
                stream.synchronize()?;
                let args = sys::cuzk_gather_args {
                    dst: dst
                        .ptr
                        .0
                        .cast::<u8>()
                        .wrapping_add(k * per_round * record_bytes)
                        .cast(),
                    src_base: base.cast(),
                    src_offset: offset,
                    indices_base: buf.as_ptr().cast(),
                    indices_offset: 0,
                    count: ix.len() as u64,
                    record_bytes: record_u32,
                };
                // SAFETY: `dst` holds indices.len() * record_bytes bytes
                // (checked by the caller), so round k's records stay inside
                // it; every index is a record of the source (checked by the
                // caller), which lies inside the mapped range at `base` that
                // the caller's borrow keeps locked; the indices sit in a
                // pinned buffer of this staging that is not written again
                // before the synchronize that follows its kernel.
                check(unsafe { sys::cuzk_gather_mapped(device, &args, stream.as_raw()) })?;
                launched = true;
            }
            stream.synchronize()
        };
        match rounds() {
            Ok(()) => {
                self.gpu_gathers += 1;
                Ok(true)
            }
            // The first round refused before its kernel: nothing ran.
            Err(Error::InvalidArgument(_)) if !launched => Ok(false),
            Err(e) => {
                // No kernel may still read the indices' buffers or the
                // caller's memory once the call returns.
                let _ = stream.synchronize();
                Err(e)
            }
        }
    }

    /// Copies `src` into `dst` (elements; equal lengths), on `src`'s
    /// stream. Blocks until the copy is complete; it first waits for the
    /// work already queued on that stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths (in elements) differ;
    /// [`Error::Cuda`] (or [`Error::InvalidArgument`] for a CUDA
    /// invalid-value error) from a failed copy or synchronize, after which
    /// `dst` holds whole chunks of the new bytes followed by its old ones:
    /// the element at a chunk boundary may be torn (mixed old and new
    /// limbs), so discard `dst` on error.
    pub fn download<T: DeviceRepr>(&mut self, src: &DeviceBuffer<T>, dst: &mut [T]) -> Result<()> {
        if dst.len() != src.len {
            return Err(Error::InvalidArgument(format!(
                "Staging::download: a buffer of {} elements into {}",
                src.len,
                dst.len()
            )));
        }
        if direct_copy(dst) {
            src.stream.synchronize()?;
            return src.copy_to_host(dst);
        }
        let total = std::mem::size_of_val(dst);
        let dst = as_bytes_mut(dst);
        let stream = src.stream.clone();
        let chunk = self.chunk;
        let issue = |k: usize, bufs: &mut [PinnedBuffer<u8>; 2]| -> Result<()> {
            let off = k * chunk;
            let len = chunk.min(total - off);
            // SAFETY: `src` holds `total` bytes and off + len <= total, so the
            // device address stays inside its allocation; the pinned buffer
            // holds `len` bytes and is not read before the synchronize that
            // follows.
            check(unsafe {
                sys::cuzk_memcpy_async(
                    src.memory.device(),
                    bufs[k % 2].as_mut_ptr().cast(),
                    src.ptr.0.cast::<u8>().wrapping_add(off).cast(),
                    len as u64,
                    stream.as_raw(),
                )
            })
        };
        let chunks = total.div_ceil(chunk);
        if chunks == 0 {
            return Ok(());
        }
        issue(0, &mut self.bufs)?;
        for k in 0..chunks {
            stream.synchronize()?; // chunk k is in bufs[k % 2]
            if k + 1 < chunks {
                issue(k + 1, &mut self.bufs)?; // into the other buffer
            }
            let off = k * chunk;
            let len = chunk.min(total - off);
            par_copy(
                &self.pool,
                &mut dst[off..off + len],
                &self.bufs[k % 2][..len],
            );
        }
        Ok(())
    }
}

/// State of a [`StagedCopies`]' staging buffers.
enum StagingState {
    Ready(Staging),
    /// Pinned memory could not be had (the error, for `Debug`); every
    /// later copy takes the plain path without asking again.
    Unavailable(String),
}

/// The staging buffers of a [`StagedCopies`] (its locked state), created
/// on first use; `None` once pinned memory could not be had.
fn ready(state: &mut Option<StagingState>) -> Option<&mut Staging> {
    let state = state.get_or_insert_with(|| match Staging::new(DEFAULT_STAGING_CHUNK_BYTES) {
        Ok(s) => StagingState::Ready(s),
        Err(e) => StagingState::Unavailable(e.to_string()),
    });
    match state {
        StagingState::Ready(s) => Some(s),
        StagingState::Unavailable(_) => None,
    }
}

/// One engine's host <-> device copies: a page-locked host slice
/// ([`is_page_locked`]: a [`PinnedBuffer`], a [`HostRegistration`](crate::HostRegistration)) is
/// copied directly by DMA; pageable arrays of at least
/// [`StagedCopies::MIN_BYTES`] bytes go through a [`Staging`] created on
/// first use (two pinned chunks of [`DEFAULT_STAGING_CHUNK_BYTES`], 64 MiB
/// of pinned host memory held until the engine is dropped; the first use
/// calls `cudaHostAlloc`, which may wait for the device). Smaller arrays,
/// copies that find the staging buffers busy with another thread's copy,
/// and every copy once pinned memory could not be had, take the plain
/// path ([`DeviceBuffer::copy_from_host`] / [`DeviceBuffer::copy_to_host`]).
/// Every copy blocks until it is complete.
#[derive(Default)]
pub struct StagedCopies {
    /// `None` until the first copy that wants staging.
    state: std::sync::Mutex<Option<StagingState>>,
}

impl std::fmt::Debug for StagedCopies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state.try_lock().as_deref() {
            Ok(None) => "untried".to_string(),
            Ok(Some(StagingState::Ready(s))) => format!("ready ({} byte chunks)", s.chunk),
            Ok(Some(StagingState::Unavailable(e))) => format!("unavailable: {e}"),
            Err(_) => "in use".to_string(),
        };
        f.debug_struct("StagedCopies")
            .field("staging", &state)
            .finish()
    }
}

impl StagedCopies {
    /// Arrays below this many bytes (4 MiB) take the plain copy.
    pub const MIN_BYTES: usize = 4 << 20;

    /// Runs `f` with the staging buffers, or returns `None` when the array
    /// is small, another thread's copy holds them, or pinned memory cannot
    /// be had. Never waits for another copy (`try_lock`).
    fn with<R>(&self, bytes: usize, f: impl FnOnce(&mut Staging) -> R) -> Option<R> {
        if bytes < Self::MIN_BYTES {
            return None;
        }
        let mut guard = match self.state.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        ready(&mut guard).map(f)
    }

    /// Creates the staging buffers now, as the first copy that wants them
    /// would (two pinned chunks of [`DEFAULT_STAGING_CHUNK_BYTES`]), so
    /// that no later copy allocates: for a process that measures device
    /// memory after a warm-up, since a pinned allocation's mapping for the
    /// GPU takes device memory. Returns whether pinned memory could be had;
    /// when not, every copy takes the plain path, as after a failed first
    /// use. Waits for a copy in progress on another thread.
    pub fn prepare(&self) -> bool {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        ready(&mut guard).is_some()
    }

    /// Copies `src` into `dst` (elements; equal lengths) and waits.
    ///
    /// # Errors
    /// As [`Staging::upload`] (or [`DeviceBuffer::copy_from_host`] on the
    /// plain path): the buffer's contents are unspecified after an error.
    pub fn upload<T: DeviceRepr>(&self, dst: &mut DeviceBuffer<T>, src: &[T]) -> Result<()> {
        if std::mem::size_of_val(src) >= Self::MIN_BYTES && direct_copy(src) {
            return dst.copy_from_host(src);
        }
        match self.with(std::mem::size_of_val(src), |s| s.upload(dst, src)) {
            Some(r) => r,
            None => dst.copy_from_host(src),
        }
    }

    /// Copies the records `indices` of `src` into `dst` and waits, as
    /// [`Staging::upload_gather`] does. Unlike the other copies, a gather
    /// waits for the staging buffers when another thread's copy holds them
    /// (a gather has no direct path: its records are not contiguous).
    /// Gathers of less than [`StagedCopies::MIN_BYTES`], and every gather
    /// once pinned memory could not be had, collect the records into a host
    /// vector on this thread and copy it plainly.
    ///
    /// # Errors
    /// As [`Staging::upload_gather`].
    pub fn upload_gather<T: DeviceRepr>(
        &self,
        dst: &mut DeviceBuffer<T>,
        src: &[T],
        record: usize,
        indices: &[u32],
    ) -> Result<()> {
        let bytes = indices
            .len()
            .saturating_mul(record)
            .saturating_mul(std::mem::size_of::<T>());
        if bytes >= Self::MIN_BYTES {
            let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = ready(&mut guard) {
                return s.upload_gather(dst, src, record, indices);
            }
        }
        check_gather(
            "StagedCopies::upload_gather",
            src.len(),
            dst.len,
            record,
            indices,
        )?;
        let mut host: Vec<T> = Vec::with_capacity(indices.len() * record);
        for &i in indices {
            let at = i as usize * record;
            host.extend_from_slice(&src[at..at + record]);
        }
        dst.copy_from_host(&host)
    }

    /// Copies `src` into `dst` (elements; equal lengths) and waits.
    ///
    /// # Errors
    /// As [`Staging::download`] (or [`DeviceBuffer::copy_to_host`] on the
    /// plain path): discard `dst` after an error.
    pub fn download<T: DeviceRepr>(&self, src: &DeviceBuffer<T>, dst: &mut [T]) -> Result<()> {
        if std::mem::size_of_val(dst) >= Self::MIN_BYTES && direct_copy(dst) {
            return src.copy_to_host(dst);
        }
        match self.with(std::mem::size_of_val(dst), |s| s.download(src, &mut *dst)) {
            Some(r) => r,
            None => src.copy_to_host(dst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_rejects_a_zero_chunk() {
        assert!(matches!(Staging::new(0), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn par_copy_copies_every_byte() {
        let pool = copy_pool().unwrap();
        for len in [0usize, 1, (1 << 20) - 1, (3 << 20) + 5, (17 << 20) + 3] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![0u8; len];
            par_copy(&pool, &mut dst, &src);
            assert!(dst == src, "length {len}");
        }
    }

    #[test]
    fn par_gather_takes_the_indexed_records_in_order() {
        let pool = copy_pool().unwrap();
        for record in [1usize, 96, 192, 100_000] {
            let records = 3000;
            let src: Vec<u8> = (0..records * record).map(|i| (i * 13 + 5) as u8).collect();
            // Ascending with gaps, a repeat, and the last record; enough to
            // span several 1 MiB pieces for the larger records.
            let mut indices: Vec<u32> = (0..records as u32).filter(|i| i % 3 != 1).collect();
            indices.push(7);
            indices.push(records as u32 - 1);
            let mut dst = vec![0u8; indices.len() * record];
            par_gather(&pool, &mut dst, &src, record, &indices);
            for (k, &i) in indices.iter().enumerate() {
                let i = i as usize;
                assert!(
                    dst[k * record..(k + 1) * record] == src[i * record..(i + 1) * record],
                    "record {k} (source {i}) of {record} bytes"
                );
            }
        }
    }

    #[test]
    fn gathers_check_their_shapes() {
        let ok = check_gather("t", 12, 6, 3, &[0, 3]);
        assert!(ok.is_ok());
        let e = |r: Result<()>| match r {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(e(check_gather("t", 12, 6, 0, &[0, 1])).contains("non-zero"));
        assert!(e(check_gather("t", 10, 6, 3, &[0, 1])).contains("divide"));
        assert!(e(check_gather("t", 12, 9, 3, &[0, 1])).contains("into a buffer of 9"));
        assert!(e(check_gather("t", 12, 6, 3, &[0, 4])).contains("index 4 past"));
    }

    #[test]
    fn staged_copies_debug_says_untried() {
        assert!(format!("{:?}", StagedCopies::default()).contains("untried"));
    }
}
