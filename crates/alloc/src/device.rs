//! Device memory: strategies, the out-of-memory retry, statistics, and the
//! RAII buffer and stream types.

use crate::budget::{fmt_bytes, Budget, BudgetConfig, MemSource, Reservation, ReservationUse};
use crate::sys;
use cuzk_field::{DeviceRepr, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// A raw pointer that may cross threads (device and pinned pointers are
/// plain addresses; the types holding them control access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ptr(*mut c_void);
// SAFETY: a device or pinned-host address carries no thread affinity.
unsafe impl Send for Ptr {}
// SAFETY: as above; shared access is read-only at this level.
unsafe impl Sync for Ptr {}

/// How device memory is obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// `cudaMalloc` / `cudaFree`: synchronous, no caching.
    Sync,
    /// `cudaMallocAsync` / `cudaFreeAsync` on the buffer's stream from the
    /// device's default pool; freed bytes stay cached up to the release
    /// threshold.
    Async,
    /// As `Async`, from a pool of cuzk's own (created on first use with the
    /// configured release threshold), so that cuzk's cache never mixes with
    /// other libraries' in the default pool.
    AsyncDedicated,
    /// `cudaMallocManaged`, advised to and prefetched on the device. Refused
    /// above the device's free memory: oversubscribed managed memory can
    /// hang the GPU.
    Unified,
}

impl Strategy {
    /// All strategies.
    pub const ALL: [Strategy; 4] = [
        Strategy::Sync,
        Strategy::Async,
        Strategy::AsyncDedicated,
        Strategy::Unified,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// A CUDA stream (non-blocking), destroyed when its last handle is dropped.
/// Cloning shares it; buffers keep their stream alive for their async free.
#[derive(Clone, Debug)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

#[derive(Debug)]
struct StreamInner {
    device: i32,
    raw: Ptr,
    owned: bool,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: the stream was created by cuzk_stream_create and is
            // destroyed once; CUDA lets pending work finish.
            let _ = check(unsafe { sys::cuzk_stream_destroy(self.device, self.raw.0) });
        }
    }
}

impl Stream {
    /// A new non-blocking stream on `device`.
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`], [`Error::NoDevice`] or [`Error::Cuda`].
    pub fn new(device: i32) -> Result<Stream> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer valid for the call.
        check(unsafe { sys::cuzk_stream_create(device, &mut raw) })?;
        Ok(Stream {
            inner: Arc::new(StreamInner {
                device,
                raw: Ptr(raw),
                owned: true,
            }),
        })
    }

    /// The legacy default stream of `device` (never destroyed).
    pub fn legacy_default(device: i32) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                device,
                raw: Ptr(std::ptr::null_mut()),
                owned: false,
            }),
        }
    }

    /// The `cudaStream_t`, for cuzk kernels' launch functions.
    pub fn as_raw(&self) -> *mut c_void {
        self.inner.raw.0
    }

    /// The device ordinal.
    pub fn device(&self) -> i32 {
        self.inner.device
    }

    /// Waits for all work queued on the stream.
    ///
    /// # Errors
    /// [`Error::Cuda`] with the error of any failed work on it.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live stream of this device.
        check(unsafe { sys::cuzk_stream_synchronize(self.inner.device, self.inner.raw.0) })
    }
}

/// A CUDA event with timing enabled, for measuring work on a [`Stream`]
/// (`cudaEventCreate` / `cudaEventRecord` / `cudaEventElapsedTime`);
/// destroyed on drop.
#[derive(Debug)]
pub struct Event {
    device: i32,
    raw: Ptr,
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuzk_event_create, destroyed once.
        let _ = check(unsafe { sys::cuzk_event_destroy(self.device, self.raw.0) });
    }
}

impl Event {
    /// A new event on `device`.
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`], [`Error::NoDevice`] without a GPU,
    /// [`Error::InvalidArgument`] for an ordinal that names none, or
    /// [`Error::Cuda`].
    pub fn new(device: i32) -> Result<Event> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer valid for the call.
        check(unsafe { sys::cuzk_event_create(device, &mut raw) })?;
        Ok(Event {
            device,
            raw: Ptr(raw),
        })
    }

    /// Records the event on `stream`: it completes when the work queued on
    /// the stream before it has.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the stream belongs to another device;
    /// [`Error::Cuda`].
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if stream.device() != self.device {
            return Err(Error::InvalidArgument(format!(
                "event of device {} recorded on a stream of device {}",
                self.device,
                stream.device()
            )));
        }
        // SAFETY: a live event and stream of this device.
        check(unsafe { sys::cuzk_event_record(self.device, self.raw.0, stream.as_raw()) })
    }

    /// Milliseconds from this event to `stop` (device time, about 0.5 us
    /// resolution), after waiting for `stop`. Both must have been recorded.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the events belong to different
    /// devices; [`Error::Cuda`]: `cudaErrorInvalidResourceHandle` when one
    /// was never recorded, `cudaErrorNotReady` when this one has not
    /// completed yet (recorded after `stop` on another stream), or the error
    /// of failed work before `stop`.
    pub fn elapsed_ms(&self, stop: &Event) -> Result<f32> {
        if stop.device != self.device {
            return Err(Error::InvalidArgument(format!(
                "events of devices {} and {} cannot be compared",
                self.device, stop.device
            )));
        }
        let mut ms = 0f32;
        // SAFETY: live events of this device; out-pointer valid for the call.
        check(unsafe { sys::cuzk_event_elapsed_ms(self.device, self.raw.0, stop.raw.0, &mut ms) })?;
        Ok(ms)
    }
}

/// Usage counters of one strategy on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrategyStats {
    /// Bytes currently allocated through the strategy.
    pub in_use_bytes: u64,
    /// Highest `in_use_bytes` seen.
    pub peak_bytes: u64,
    /// Successful allocations.
    pub allocations: u64,
    /// Failed allocations (out of memory, budget, injected, CUDA errors).
    pub failures: u64,
    /// Frees that CUDA reported as failed (the bytes are still counted freed).
    pub free_errors: u64,
}

/// A snapshot of a device's memory use by cuzk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Per strategy, in [`Strategy::ALL`] order.
    pub per_strategy: [(Strategy, StrategyStats); 4],
    /// Bytes the default pool holds from the device (cached + in use).
    pub default_pool_reserved_bytes: u64,
    /// Bytes cuzk's dedicated pool holds from the device (0 if none).
    pub dedicated_pool_reserved_bytes: u64,
    /// Bytes claimed from the budget now (reservations + unreserved buffers).
    pub budget_claimed_bytes: u64,
}

impl Stats {
    /// Bytes in use over all strategies.
    pub fn in_use_bytes(&self) -> u64 {
        self.per_strategy.iter().map(|(_, s)| s.in_use_bytes).sum()
    }
}

#[derive(Default)]
struct Counters {
    in_use: AtomicU64,
    peak: AtomicU64,
    allocations: AtomicU64,
    failures: AtomicU64,
    free_errors: AtomicU64,
}

/// Makes every `period`-th allocation attempt fail before reaching CUDA,
/// to test that callers clean up (0: off).
#[derive(Default)]
struct Injector {
    period: AtomicU64,
    count: AtomicU64,
}

struct RealSource {
    device: i32,
    pools: Arc<Mutex<Pools>>,
}

#[derive(Default)]
struct Pools {
    default: Option<Ptr>,
    dedicated: Option<Ptr>,
}

impl Pools {
    fn all(&self) -> impl Iterator<Item = Ptr> + '_ {
        self.default.iter().chain(self.dedicated.iter()).copied()
    }
}

fn pool_usage(device: i32, pool: Ptr) -> Result<(u64, u64)> {
    let (mut r, mut u) = (0, 0);
    // SAFETY: a live pool of this device; out-pointers valid.
    check(unsafe { sys::cuzk_pool_usage(device, pool.0, &mut r, &mut u) })?;
    Ok((r, u))
}

fn mem_info(device: i32) -> Result<(u64, u64)> {
    let (mut f, mut t) = (0, 0);
    // SAFETY: out-pointers valid for the call.
    check(unsafe { sys::cuzk_mem_get_info(device, &mut f, &mut t) })?;
    Ok((f, t))
}

impl MemSource for RealSource {
    fn mem_info(&self) -> Result<(u64, u64)> {
        let (free, total) = mem_info(self.device)?;
        // Bytes cached (reserved but unused) in the pools cuzk trims count as
        // free: a trim hands them back before any allocation fails.
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let cached: u64 = pools
            .all()
            .filter_map(|p| pool_usage(self.device, p).ok())
            .map(|(r, u)| r.saturating_sub(u))
            .sum();
        Ok(((free + cached).min(total), total))
    }
}

/// cuzk's memory on one device: the budget every worker shares, the pools,
/// the statistics. Create one per device ([`DeviceMemory::new`]) and share
/// the `Arc` between workers.
pub struct DeviceMemory {
    device: i32,
    budget: Budget,
    pools: Arc<Mutex<Pools>>,
    release_threshold: u64,
    counters: [Counters; 4],
    injector: Injector,
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory")
            .field("device", &self.device)
            .field("budget", &self.budget)
            .finish()
    }
}

impl DeviceMemory {
    /// cuzk's memory on `device` with `config`; async pools keep up to
    /// `release_threshold_bytes` cached after frees (set on the default pool
    /// and on cuzk's dedicated pool).
    ///
    /// # Errors
    /// [`Error::NoCudaBuild`], [`Error::NoDevice`] or [`Error::Cuda`] when
    /// the device cannot be queried.
    pub fn new(
        device: i32,
        config: BudgetConfig,
        release_threshold_bytes: u64,
    ) -> Result<Arc<DeviceMemory>> {
        mem_info(device)?;
        let mut default = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        check(unsafe { sys::cuzk_pool_default(device, &mut default) })?;
        // SAFETY: the device's default pool is valid while the device is.
        check(unsafe {
            sys::cuzk_pool_set_release_threshold(device, default, release_threshold_bytes)
        })?;
        let pools = Arc::new(Mutex::new(Pools {
            default: Some(Ptr(default)),
            dedicated: None,
        }));
        let source = RealSource {
            device,
            pools: pools.clone(),
        };
        Ok(Arc::new(DeviceMemory {
            device,
            budget: Budget::new(config, Box::new(source)),
            pools,
            release_threshold: release_threshold_bytes,
            counters: Default::default(),
            injector: Injector::default(),
        }))
    }

    /// [`DeviceMemory::new`] with [`BudgetConfig::from_env`] and an
    /// unlimited release threshold (pools keep what they cache until cuzk
    /// trims them).
    ///
    /// # Errors
    /// As [`DeviceMemory::new`], plus a malformed environment variable.
    pub fn from_env(device: i32) -> Result<Arc<DeviceMemory>> {
        Self::new(device, BudgetConfig::from_env()?, u64::MAX)
    }

    /// The device ordinal.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The budget shared by every worker on this device.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Makes every `period`-th allocation attempt fail with an injected
    /// out-of-memory error (0 turns it off). For failure-path tests.
    pub fn inject_failures(&self, period: u64) {
        self.injector.period.store(period, SeqCst);
        self.injector.count.store(0, SeqCst);
    }

    fn dedicated_pool(&self) -> Result<Ptr> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.dedicated {
            return Ok(p);
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        check(unsafe { sys::cuzk_pool_create(self.device, self.release_threshold, &mut raw) })?;
        pools.dedicated = Some(Ptr(raw));
        Ok(Ptr(raw))
    }

    /// Synchronizes the device and releases every byte cached in the pools
    /// cuzk uses back to the device (`cudaMemPoolTrimTo(pool, 0)`).
    ///
    /// # Errors
    /// [`Error::Cuda`] when synchronizing or trimming fails.
    pub fn trim(&self) -> Result<()> {
        // SAFETY: plain device call.
        check(unsafe { sys::cuzk_device_synchronize(self.device) })?;
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        for p in pools.all() {
            // SAFETY: a live pool of this device.
            check(unsafe { sys::cuzk_pool_trim(self.device, p.0, 0) })?;
        }
        Ok(())
    }

    /// `(free, total)` bytes of the device as `cudaMemGetInfo` reports them.
    ///
    /// # Errors
    /// As [`DeviceMemory::new`].
    pub fn mem_get_info(&self) -> Result<(u64, u64)> {
        mem_info(self.device)
    }

    /// A snapshot of the counters and pool sizes.
    pub fn stats(&self) -> Stats {
        let per = |s: Strategy| {
            let c = &self.counters[s.index()];
            (
                s,
                StrategyStats {
                    in_use_bytes: c.in_use.load(SeqCst),
                    peak_bytes: c.peak.load(SeqCst),
                    allocations: c.allocations.load(SeqCst),
                    failures: c.failures.load(SeqCst),
                    free_errors: c.free_errors.load(SeqCst),
                },
            )
        };
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let reserved = |p: Option<Ptr>| {
            p.and_then(|p| pool_usage(self.device, p).ok())
                .map_or(0, |(r, _)| r)
        };
        Stats {
            per_strategy: Strategy::ALL.map(per),
            default_pool_reserved_bytes: reserved(pools.default),
            dedicated_pool_reserved_bytes: reserved(pools.dedicated),
            budget_claimed_bytes: self.budget.claimed_bytes(),
        }
    }

    /// Checks that every buffer was given back: no bytes in use under any
    /// strategy and nothing claimed from the budget.
    ///
    /// # Errors
    /// [`Error::Internal`] listing what is still held.
    pub fn check_all_returned(&self) -> Result<()> {
        let s = self.stats();
        if s.in_use_bytes() == 0 && s.budget_claimed_bytes == 0 {
            return Ok(());
        }
        Err(Error::Internal(format!(
            "device {} memory not all returned: {s:?}",
            self.device
        )))
    }

    /// Allocates `len` elements of `T` with `strategy`, ordered on `stream`.
    /// The bytes are claimed from the budget for the buffer's lifetime,
    /// unless `reservation` is given (the caller reserved its working set
    /// already). Contents are uninitialized device memory.
    ///
    /// On `cudaErrorMemoryAllocation` it synchronizes the device, trims the
    /// pools it owns and retries once.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] saying how much was requested, what was free
    /// and which strategy failed (also for the budget and for `Unified`
    /// above free memory); [`Error::InvalidArgument`] when `stream` belongs
    /// to another device or the size overflows; other CUDA errors as
    /// [`Error::Cuda`]. After an error the device stays usable.
    pub fn alloc<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
        strategy: Strategy,
        stream: &Stream,
        reservation: Option<&Reservation>,
    ) -> Result<DeviceBuffer<T>> {
        let c = &self.counters[strategy.index()];
        let r = self.alloc_raw::<T>(len, strategy, stream, reservation);
        if r.is_err() {
            c.failures.fetch_add(1, SeqCst);
        }
        r
    }

    fn alloc_raw<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
        strategy: Strategy,
        stream: &Stream,
        reservation: Option<&Reservation>,
    ) -> Result<DeviceBuffer<T>> {
        if stream.device() != self.device {
            return Err(Error::InvalidArgument(format!(
                "stream of device {} used to allocate on device {}",
                stream.device(),
                self.device
            )));
        }
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow a byte count"))
            })?;
        let period = self.injector.period.load(SeqCst);
        if period > 0 && (self.injector.count.fetch_add(1, SeqCst) + 1) % period == 0 {
            return Err(Error::OutOfMemory(format!(
                "injected failure (every {period}th allocation) of {} with {strategy:?}",
                fmt_bytes(bytes)
            )));
        }
        let claim = match reservation {
            Some(r) => Claim::Within {
                _held: r.take(bytes)?,
            },
            None => Claim::Own {
                _held: self.budget.try_reserve(bytes)?,
            },
        };
        if strategy == Strategy::Unified {
            let (free, _) = mem_info(self.device)?;
            if bytes > free {
                return Err(Error::OutOfMemory(format!(
                    "Unified strategy: requested {} but the device has {} free; managed memory \
                     beyond free device memory can hang the GPU, so it is refused",
                    fmt_bytes(bytes),
                    fmt_bytes(free)
                )));
            }
        }
        let ptr = match self.cuda_alloc(bytes, strategy, stream) {
            Err(Error::OutOfMemory(_)) => {
                self.trim()?;
                self.cuda_alloc(bytes, strategy, stream).map_err(|e| match e {
                    Error::OutOfMemory(m) => {
                        let (free, total) = mem_info(self.device).unwrap_or((0, 0));
                        Error::OutOfMemory(format!(
                            "{strategy:?} strategy on device {}: requested {}, device free {} of {} \
                             after synchronizing and trimming cuzk's pools ({m})",
                            self.device,
                            fmt_bytes(bytes),
                            fmt_bytes(free),
                            fmt_bytes(total)
                        ))
                    }
                    e => e,
                })?
            }
            r => r?,
        };
        let c = &self.counters[strategy.index()];
        let now = c.in_use.fetch_add(bytes, SeqCst) + bytes;
        c.peak.fetch_max(now, SeqCst);
        c.allocations.fetch_add(1, SeqCst);
        Ok(DeviceBuffer {
            ptr,
            len,
            bytes,
            strategy,
            stream: stream.clone(),
            memory: self.clone(),
            _claim: claim,
            _t: PhantomData,
        })
    }

    fn cuda_alloc(&self, bytes: u64, strategy: Strategy, stream: &Stream) -> Result<Ptr> {
        let mut p = std::ptr::null_mut();
        // SAFETY: (every arm) out-pointer valid; stream and pools are live
        // handles of this device.
        let s = unsafe {
            match strategy {
                Strategy::Sync => sys::cuzk_malloc(self.device, bytes, &mut p),
                Strategy::Async => sys::cuzk_malloc_async(
                    self.device,
                    bytes,
                    std::ptr::null_mut(),
                    stream.as_raw(),
                    &mut p,
                ),
                Strategy::AsyncDedicated => {
                    let pool = self.dedicated_pool()?;
                    sys::cuzk_malloc_async(self.device, bytes, pool.0, stream.as_raw(), &mut p)
                }
                Strategy::Unified => {
                    sys::cuzk_malloc_managed(self.device, bytes, stream.as_raw(), &mut p)
                }
            }
        };
        check(s)?;
        Ok(Ptr(p))
    }

    fn free(&self, ptr: Ptr, bytes: u64, strategy: Strategy, stream: &Stream) {
        // SAFETY: `ptr` came from the matching allocation call and is freed
        // once; async frees are ordered on the stream that allocated it.
        let s = unsafe {
            match strategy {
                Strategy::Sync | Strategy::Unified => sys::cuzk_free(self.device, ptr.0),
                Strategy::Async | Strategy::AsyncDedicated => {
                    sys::cuzk_free_async(self.device, ptr.0, stream.as_raw())
                }
            }
        };
        let c = &self.counters[strategy.index()];
        if check(s).is_err() {
            c.free_errors.fetch_add(1, SeqCst);
        }
        c.in_use.fetch_sub(bytes, SeqCst);
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.dedicated {
            // SAFETY: every buffer holds an Arc to self, so none is left; the
            // pool was created by cuzk_pool_create and is destroyed once.
            let _ = check(unsafe { sys::cuzk_pool_destroy(self.device, p.0) });
        }
    }
}

/// The budget bytes a buffer holds: its own claim, or part of a caller's
/// reservation. Released on drop.
#[derive(Debug)]
enum Claim {
    Own { _held: Reservation },
    Within { _held: ReservationUse },
}

/// `len` elements of `T` in device memory, freed (on its stream, for the
/// async strategies) when dropped. The raw pointer and stream go to cuzk's
/// kernels.
pub struct DeviceBuffer<T: DeviceRepr> {
    ptr: Ptr,
    len: usize,
    bytes: u64,
    strategy: Strategy,
    stream: Stream,
    memory: Arc<DeviceMemory>,
    _claim: Claim,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .field("bytes", &self.bytes)
            .field("strategy", &self.strategy)
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Length in elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The strategy it came from.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }
    /// Its stream (allocation, copies and the async free are ordered on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
    /// Device pointer, for kernels.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.0 as *const T
    }
    /// Mutable device pointer, for kernels.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.0 as *mut T
    }

    /// Copies `src` into the buffer and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; [`Error::Cuda`].
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::InvalidArgument(format!(
                "copy_from_host: {} elements into a buffer of {}",
                src.len(),
                self.len
            )));
        }
        // SAFETY: both ranges hold `bytes` bytes; the copy completes before return.
        check(unsafe {
            sys::cuzk_memcpy_async(
                self.memory.device,
                self.ptr.0,
                src.as_ptr().cast(),
                self.bytes,
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }

    /// Copies the buffer into `dst` and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; [`Error::Cuda`].
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::InvalidArgument(format!(
                "copy_to_host: buffer of {} elements into {}",
                self.len,
                dst.len()
            )));
        }
        // SAFETY: both ranges hold `bytes` bytes; the copy completes before return.
        check(unsafe {
            sys::cuzk_memcpy_async(
                self.memory.device,
                dst.as_mut_ptr().cast(),
                self.ptr.0,
                self.bytes,
                self.stream.as_raw(),
            )
        })?;
        self.stream.synchronize()
    }

    /// Launches a trivial kernel writing `value` to every 32-bit word of the
    /// buffer on its stream (a health check that the device runs kernels).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the launch fails.
    pub fn fill_words(&mut self, value: u32) -> Result<()> {
        // SAFETY: the buffer holds bytes/4 whole words.
        check(unsafe {
            sys::cuzk_fill_u32(
                self.memory.device,
                self.ptr.0,
                self.bytes / 4,
                value,
                self.stream.as_raw(),
            )
        })
    }
}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.memory
            .free(self.ptr, self.bytes, self.strategy, &self.stream);
    }
}

/// `len` elements of `T` in pinned (page-locked) host memory from
/// `cudaHostAlloc`, zero-initialized, freed when dropped. Copies from and to
/// it run at full PCIe speed and can overlap with kernels.
pub struct PinnedBuffer<T: DeviceRepr> {
    ptr: Ptr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> PinnedBuffer<T> {
    /// Allocates `len` zeroed elements (all-zero bytes are a valid value of
    /// every [`DeviceRepr`] type: zero field elements, the (0, 0) affine
    /// identity).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when pinned memory runs out; [`Error::NoDevice`]
    /// or [`Error::NoCudaBuild`] without CUDA.
    pub fn new(len: usize) -> Result<Self> {
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow a byte count"))
            })?;
        let mut p = std::ptr::null_mut();
        if bytes > 0 {
            // SAFETY: out-pointer valid.
            check(unsafe { sys::cuzk_host_alloc(bytes, &mut p) })?;
            // SAFETY: `p` points to `bytes` writable bytes just allocated.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes as usize) };
        }
        Ok(PinnedBuffer {
            ptr: Ptr(p),
            len,
            _t: PhantomData,
        })
    }
}

impl<T: DeviceRepr> std::ops::Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` initialized elements owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.0 as *const T, self.len) }
    }
}

impl<T: DeviceRepr> std::ops::DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `len` initialized elements owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.0 as *mut T, self.len) }
    }
}

impl<T: DeviceRepr> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if !self.ptr.0.is_null() {
            // SAFETY: allocated by cuzk_host_alloc, freed once.
            let _ = check(unsafe { sys::cuzk_host_free(self.ptr.0) });
        }
    }
}

/// An existing slice page-locked with `cudaHostRegister` for as long as
/// this guard lives (unregistered on drop); the slice stays usable through
/// the guard.
pub struct HostRegistration<'a, T: DeviceRepr> {
    data: &'a mut [T],
}

impl<'a, T: DeviceRepr> HostRegistration<'a, T> {
    /// Registers `data` (a no-op for an empty slice).
    ///
    /// # Errors
    /// [`Error::Cuda`] (e.g. already registered), [`Error::NoDevice`],
    /// [`Error::NoCudaBuild`].
    pub fn new(data: &'a mut [T]) -> Result<Self> {
        if !data.is_empty() {
            // SAFETY: the slice is valid for its byte length for 'a; it is
            // unregistered before the borrow ends.
            check(unsafe {
                sys::cuzk_host_register(
                    data.as_mut_ptr().cast(),
                    std::mem::size_of_val(data) as u64,
                )
            })?;
        }
        Ok(HostRegistration { data })
    }
}

impl<T: DeviceRepr> std::ops::Deref for HostRegistration<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: DeviceRepr> std::ops::DerefMut for HostRegistration<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T: DeviceRepr> Drop for HostRegistration<'_, T> {
    fn drop(&mut self) {
        if !self.data.is_empty() {
            // SAFETY: registered in `new`.
            let _ = check(unsafe { sys::cuzk_host_unregister(self.data.as_mut_ptr().cast()) });
        }
    }
}

/// Whether `data` lies in page-locked host memory: a [`PinnedBuffer`] (or
/// part of one), a slice under a [`HostRegistration`], or any memory that
/// `cudaHostAlloc` / `cudaMallocHost` returned or `cudaHostRegister`
/// locked. Copies between such memory and the device run as direct DMA
/// transfers, so [`StagedCopies`] and [`Staging`] skip their staging
/// buffers for it.
///
/// Asks `cudaPointerGetAttributes` about the first and the last byte of the
/// slice; a slice whose ends lie in two registrations with pageable memory
/// between them reads as locked, which only makes its copies slower (a
/// direct copy from pageable memory is still correct). An empty slice is
/// not locked. Pageable memory is an answer, never an error, and leaves no
/// CUDA error behind.
///
/// # Errors
/// [`Error::NoCudaBuild`] in a build without CUDA; [`Error::NoDevice`]
/// without a usable GPU; [`Error::Cuda`] for another runtime failure.
pub fn is_page_locked<T: DeviceRepr>(data: &[T]) -> Result<bool> {
    let mut out = 0i32;
    // SAFETY: the pointer is only inspected (never dereferenced) by the
    // runtime; the out-pointer is valid for the call.
    check(unsafe {
        sys::cuzk_host_is_page_locked(
            data.as_ptr().cast(),
            std::mem::size_of_val(data) as u64,
            &mut out,
        )
    })?;
    Ok(out != 0)
}

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
/// directly with one `cudaMemcpyAsync`, without the staging buffers.
///
/// Holds `2 * chunk_bytes` of pinned host memory until dropped. One
/// `Staging` serves one copy at a time (`&mut self`); give each worker its
/// own, or share one through [`StagedCopies`].
pub struct Staging {
    bufs: [PinnedBuffer<u8>; 2],
    chunk: usize,
    pool: rayon::ThreadPool,
}

/// Default chunk of a [`Staging`]: 32 MiB (two of them pinned).
pub const DEFAULT_STAGING_CHUNK_BYTES: usize = 32 << 20;

/// Host threads of one staged memcpy, at most. Pageable-to-pinned memcpy
/// runs at a few GB/s a thread, and the copy must keep up with PCIe 5.0's
/// 55 GB/s a direction: on the H200's 16-core host, 8 threads left a 2^27
/// host-to-host NTT at 251.8 ms, 16 gave 224.0 ms (BENCHMARKS.md,
/// session 4).
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
        })
    }

    /// Chunk size in bytes.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk
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
        let stream = dst.stream.clone();
        let mut i = 0;
        for (k, piece) in src.chunks(self.chunk).enumerate() {
            let buf = &mut self.bufs[k % 2];
            // The copy engine may still be moving chunk k-1 (other buffer);
            // buffer k % 2 was released by the synchronize of round k-1.
            par_copy(&self.pool, &mut buf[..piece.len()], piece);
            stream.synchronize()?;
            // SAFETY: `dst` holds src.len() bytes and i + piece.len() is at
            // most that, so the device address stays inside its allocation;
            // the pinned buffer holds `piece.len()` bytes and is not written
            // again before the synchronize of the next round (or the final
            // one) has waited for this copy.
            check(unsafe {
                sys::cuzk_memcpy_async(
                    dst.memory.device,
                    dst.ptr.0.cast::<u8>().wrapping_add(i).cast(),
                    buf.as_ptr().cast(),
                    piece.len() as u64,
                    stream.as_raw(),
                )
            })?;
            i += piece.len();
        }
        stream.synchronize()
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
                    src.memory.device,
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

/// One engine's host <-> device copies: a page-locked host slice
/// ([`is_page_locked`]: a [`PinnedBuffer`], a [`HostRegistration`]) is
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
        if guard.is_none() {
            *guard = Some(match Staging::new(DEFAULT_STAGING_CHUNK_BYTES) {
                Ok(s) => StagingState::Ready(s),
                Err(e) => StagingState::Unavailable(e.to_string()),
            });
        }
        match guard.as_mut() {
            Some(StagingState::Ready(s)) => Some(f(s)),
            _ => None,
        }
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
    fn staged_copies_debug_says_untried() {
        assert!(format!("{:?}", StagedCopies::default()).contains("untried"));
    }
}
