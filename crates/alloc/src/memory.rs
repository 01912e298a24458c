//! [`DeviceMemory`]: one device's budget, pools, allocation strategies,
//! out-of-memory retry and statistics.

use crate::budget::{fmt_bytes, Budget, BudgetConfig, MemSource, Reservation};
use crate::buffer::{Claim, DeviceBuffer};
use crate::raw::{check, Ptr};
use crate::stream::Stream;
use crate::sys;
use cuzk_field::{DeviceRepr, Error, Result};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

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
#[cfg(any(test, feature = "test-utils"))]
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
    #[cfg(any(test, feature = "test-utils"))]
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
            #[cfg(any(test, feature = "test-utils"))]
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
    /// out-of-memory error (0 turns it off). For failure-path tests: only
    /// with the `test-utils` feature.
    #[cfg(any(test, feature = "test-utils"))]
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

    /// Device memory in use, in bytes (`cudaMemGetInfo`'s total - free,
    /// every process and context of the device counted), once this
    /// memory's pools are trimmed ([`DeviceMemory::trim`]) and the figure
    /// has settled: the same value three readings 100 ms apart, or the
    /// last of 50. Read before and after a workload, it shows whether the
    /// workload gave back what it took (the driver counts in pages of 2
    /// MiB; code of kernels loaded on their first launch stays until the
    /// process ends, so take the first figure after a warm-up run).
    ///
    /// # Errors
    /// As [`DeviceMemory::trim`] and [`DeviceMemory::mem_get_info`].
    pub fn settled_used_bytes(&self) -> Result<u64> {
        self.trim()?;
        let read = || -> Result<u64> {
            let (free, total) = self.mem_get_info()?;
            Ok(total.saturating_sub(free))
        };
        let mut last = read()?;
        let mut same = 0;
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let now = read()?;
            same = if now == last { same + 1 } else { 0 };
            last = now;
            if same >= 2 {
                break;
            }
        }
        Ok(last)
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
        // Read before the pools' lock: the budget's reading of free memory
        // takes the budget's lock and then the pools' one.
        let budget_claimed_bytes = self.budget.claimed_bytes();
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let reserved = |p: Option<Ptr>| {
            p.and_then(|p| pool_usage(self.device, p).ok())
                .map_or(0, |(r, _)| r)
        };
        Stats {
            per_strategy: Strategy::ALL.map(per),
            default_pool_reserved_bytes: reserved(pools.default),
            dedicated_pool_reserved_bytes: reserved(pools.dedicated),
            budget_claimed_bytes,
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
        #[cfg(any(test, feature = "test-utils"))]
        {
            let period = self.injector.period.load(SeqCst);
            if period > 0 && (self.injector.count.fetch_add(1, SeqCst) + 1) % period == 0 {
                return Err(Error::OutOfMemory(format!(
                    "injected failure (every {period}th allocation) of {} with {strategy:?}",
                    fmt_bytes(bytes)
                )));
            }
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

    pub(crate) fn free(&self, ptr: Ptr, bytes: u64, strategy: Strategy, stream: &Stream) {
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
