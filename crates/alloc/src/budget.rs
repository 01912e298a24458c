//! The per-device memory budget: how many bytes cuzk may hold on a device,
//! RAII reservations against it, and the planning questions upper layers
//! ask (does a working set fit, how many workers fit, what chunk fits).
//!
//! Pure logic over a [`MemSource`] (the real device, or a simulated one in
//! tests), so that every rule here is tested on the CPU.

use cuzk_field::{Error, Result};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Default safety margin kept free on every device: 512 MiB.
pub const DEFAULT_MARGIN_BYTES: u64 = 512 << 20;

/// Where the budget reads the device's memory figures.
pub trait MemSource: Send + Sync {
    /// `(free, total)` in bytes, as `cudaMemGetInfo` reports them, plus
    /// whatever cuzk's own pools cache and could release (a trim gives it
    /// back to the device).
    fn mem_info(&self) -> Result<(u64, u64)>;
}

/// Budget settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetConfig {
    /// Bytes always left free on the device (default [`DEFAULT_MARGIN_BYTES`]).
    pub margin_bytes: u64,
    /// Cap on what cuzk uses, in bytes, below the card's total (e.g. 16 GiB
    /// to simulate a small card on a large one). `None`: the whole card.
    pub cap_bytes: Option<u64>,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            margin_bytes: DEFAULT_MARGIN_BYTES,
            cap_bytes: None,
        }
    }
}

impl BudgetConfig {
    /// The defaults, with the user settings `CUZK_DEVICE_MEMORY_LIMIT` (the
    /// cap; unset: the whole card) and `CUZK_DEVICE_MEMORY_MARGIN` (the
    /// margin; unset: [`DEFAULT_MARGIN_BYTES`]) applied. Both are byte
    /// counts as [`parse_bytes`] reads them (`16GiB`, `512MiB`, `1.5G`, a
    /// plain number of bytes); the crate documentation describes them. The
    /// only environment reads in this crate.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the variable when one does not
    /// parse (never silently ignored).
    pub fn from_env() -> Result<Self> {
        let mut c = BudgetConfig::default();
        if let Ok(v) = std::env::var("CUZK_DEVICE_MEMORY_LIMIT") {
            c.cap_bytes =
                Some(parse_bytes(&v).map_err(|e| {
                    Error::InvalidArgument(format!("CUZK_DEVICE_MEMORY_LIMIT: {e}"))
                })?);
        }
        if let Ok(v) = std::env::var("CUZK_DEVICE_MEMORY_MARGIN") {
            c.margin_bytes = parse_bytes(&v)
                .map_err(|e| Error::InvalidArgument(format!("CUZK_DEVICE_MEMORY_MARGIN: {e}")))?;
        }
        Ok(c)
    }
}

/// Parses a byte count: a number (fractions allowed) with an optional unit
/// `B`, `K`/`KiB`/`KB`, `M`/`MiB`/`MB`, `G`/`GiB`/`GB`, `T`/`TiB`/`TB`. All
/// units are binary (powers of 1024), as memory sizes usually are; a
/// fraction of a byte is rounded down.
///
/// # Errors
/// A message naming the text: it did not parse, its count does not fit 64
/// bits (16 EiB), or a non-zero count rounds to 0 bytes.
pub fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("`{text}` is not a byte count (expected e.g. 16GiB, 512MiB, 1073741824)")
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        u => {
            return Err(format!(
                "`{text}`: unknown unit `{u}` (use B, KiB, MiB, GiB or TiB)"
            ))
        }
    };
    if !num.contains('.') {
        // Whole numbers exactly, beyond f64's 53 bits too.
        return num
            .parse::<u64>()
            .ok()
            .and_then(|v| v.checked_mul(1u64 << shift))
            .ok_or_else(|| format!("`{text}` is more bytes than 64 bits hold (16 EiB)"));
    }
    let bytes = value * (1u64 << shift) as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("`{text}` is more bytes than 64 bits hold (16 EiB)"));
    }
    if value > 0.0 && bytes < 1.0 {
        return Err(format!("`{text}` is less than one byte"));
    }
    Ok(bytes as u64)
}

/// Formats a byte count for messages (`12.00 GiB`).
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

#[derive(Debug, Default)]
struct State {
    /// Sum of live claims (reservations and unreserved allocations).
    claimed: u64,
    /// Highest `claimed` seen.
    peak: u64,
}

struct Inner {
    config: BudgetConfig,
    source: Box<dyn MemSource>,
    state: Mutex<State>,
    released: Condvar,
}

/// A device's memory budget, shared (cheaply cloned) by every worker on the
/// device. cuzk may hold at most `min(total, cap) - margin` bytes, and never
/// more than the device's free memory minus the margin.
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("config", &self.inner.config)
            .field("claimed", &self.claimed_bytes())
            .finish()
    }
}

/// A claim of bytes against a [`Budget`], released when dropped. Upper
/// layers reserve a working set before allocating its buffers.
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    bytes: u64,
    /// Bytes of buffers allocated under this reservation and still alive.
    used: Arc<std::sync::atomic::AtomicU64>,
}

impl Reservation {
    fn new(budget: &Budget, bytes: u64) -> Reservation {
        Reservation {
            budget: budget.clone(),
            bytes,
            used: Arc::default(),
        }
    }

    /// Bytes reserved.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of live buffers allocated under this reservation.
    pub fn used_bytes(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Takes `bytes` of the reservation for a buffer; the returned handle
    /// gives them back when dropped.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the reservation has less than `bytes` left.
    pub fn take(&self, bytes: u64) -> Result<ReservationUse> {
        use std::sync::atomic::Ordering::SeqCst;
        let mut cur = self.used.load(SeqCst);
        loop {
            if cur + bytes > self.bytes {
                return Err(Error::OutOfMemory(format!(
                    "reservation of {}: {} already in use, {} more requested; reserve a larger \
                     working set",
                    fmt_bytes(self.bytes),
                    fmt_bytes(cur),
                    fmt_bytes(bytes)
                )));
            }
            match self.used.compare_exchange(cur, cur + bytes, SeqCst, SeqCst) {
                Ok(_) => {
                    return Ok(ReservationUse {
                        used: self.used.clone(),
                        bytes,
                    })
                }
                Err(now) => cur = now,
            }
        }
    }
}

/// Bytes of a [`Reservation`] held by one buffer, given back on drop.
#[derive(Debug)]
pub struct ReservationUse {
    used: Arc<std::sync::atomic::AtomicU64>,
    bytes: u64,
}

impl Drop for ReservationUse {
    fn drop(&mut self) {
        self.used
            .fetch_sub(self.bytes, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

impl Budget {
    /// A budget over `source` with `config`.
    pub fn new(config: BudgetConfig, source: Box<dyn MemSource>) -> Budget {
        Budget {
            inner: Arc::new(Inner {
                config,
                source,
                state: Mutex::new(State::default()),
                released: Condvar::new(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &BudgetConfig {
        &self.inner.config
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A worker that panicked while holding the lock leaves plain counters
        // behind; they are still consistent, so carry on.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Most bytes cuzk may ever hold on this device: `min(total, cap) - margin`.
    ///
    /// # Errors
    /// When the device's memory figures cannot be read.
    pub fn limit_bytes(&self) -> Result<u64> {
        let (_, total) = self.inner.source.mem_info()?;
        let c = &self.inner.config;
        Ok(c.cap_bytes
            .map_or(total, |cap| cap.min(total))
            .saturating_sub(c.margin_bytes))
    }

    /// Bytes a new claim could get now: the limit less live claims, and no
    /// more than the device's free memory less the margin.
    ///
    /// # Errors
    /// When the device's memory figures cannot be read.
    pub fn available_bytes(&self) -> Result<u64> {
        let st = self.state();
        self.available_locked(&st)
    }

    fn available_locked(&self, st: &State) -> Result<u64> {
        let (free, total) = self.inner.source.mem_info()?;
        let c = &self.inner.config;
        let limit = c
            .cap_bytes
            .map_or(total, |cap| cap.min(total))
            .saturating_sub(c.margin_bytes);
        Ok(limit
            .saturating_sub(st.claimed)
            .min(free.saturating_sub(c.margin_bytes)))
    }

    /// Sum of live claims, in bytes.
    pub fn claimed_bytes(&self) -> u64 {
        self.state().claimed
    }

    /// Highest sum of live claims so far, in bytes.
    pub fn peak_claimed_bytes(&self) -> u64 {
        self.state().peak
    }

    fn claim_locked(&self, st: &mut State, bytes: u64) {
        st.claimed += bytes;
        st.peak = st.peak.max(st.claimed);
    }

    /// Reserves `bytes` now, or fails.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] naming the request, what is available and why
    /// (limit, cap, margin, free memory).
    pub fn try_reserve(&self, bytes: u64) -> Result<Reservation> {
        let mut st = self.state();
        let avail = self.available_locked(&st)?;
        if bytes > avail {
            return Err(self.refusal(bytes, avail, &st));
        }
        self.claim_locked(&mut st, bytes);
        Ok(Reservation::new(self, bytes))
    }

    /// Reserves `bytes`, waiting up to `timeout` for other workers to release
    /// theirs. A request larger than the whole limit fails at once.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when it can never fit, or still does not fit
    /// when `timeout` has passed.
    pub fn reserve_wait(&self, bytes: u64, timeout: Duration) -> Result<Reservation> {
        let limit = self.limit_bytes()?;
        if bytes > limit {
            let st = self.state();
            return Err(self.refusal(bytes, limit.saturating_sub(st.claimed), &st));
        }
        let deadline = Instant::now() + timeout;
        let mut st = self.state();
        loop {
            let avail = self.available_locked(&st)?;
            if bytes <= avail {
                self.claim_locked(&mut st, bytes);
                return Ok(Reservation::new(self, bytes));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.refusal(bytes, avail, &st));
            }
            // Wake on every release; also poll, since memory freed outside the
            // budget (another process) sends no signal.
            let wait = (deadline - now).min(Duration::from_millis(50));
            st = self
                .inner
                .released
                .wait_timeout(st, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Reserves as much as is available between `min_bytes` and `max_bytes`
    /// (a worker that can shrink its chunk takes what fits instead of
    /// waiting), rounded down to a multiple of `granule_bytes` (at least 1).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when not even `min_bytes` is available.
    pub fn reserve_up_to(
        &self,
        min_bytes: u64,
        max_bytes: u64,
        granule_bytes: u64,
    ) -> Result<Reservation> {
        let g = granule_bytes.max(1);
        let mut st = self.state();
        let avail = self.available_locked(&st)?;
        let take = (avail.min(max_bytes) / g) * g;
        if take < min_bytes || take == 0 && min_bytes > 0 {
            return Err(self.refusal(min_bytes, avail, &st));
        }
        self.claim_locked(&mut st, take);
        Ok(Reservation::new(self, take))
    }

    /// True when a working set of `bytes` could be reserved now.
    ///
    /// # Errors
    /// When the device's memory figures cannot be read.
    pub fn fits(&self, bytes: u64) -> Result<bool> {
        Ok(bytes <= self.available_bytes()?)
    }

    /// How many workers with a working set of `per_worker_bytes` each fit in
    /// the limit at once (0 when not even one does). Counts the limit, not
    /// what other workers hold now: it is the sizing answer for a worker pool.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `per_worker_bytes == 0`; when the
    /// device's memory figures cannot be read.
    pub fn workers_that_fit(&self, per_worker_bytes: u64) -> Result<u64> {
        if per_worker_bytes == 0 {
            return Err(Error::InvalidArgument(
                "workers_that_fit: per-worker working set of 0 bytes".into(),
            ));
        }
        let (free, _) = self.inner.source.mem_info()?;
        let usable = self
            .limit_bytes()?
            .min(free.saturating_sub(self.inner.config.margin_bytes) + self.claimed_bytes());
        Ok(usable / per_worker_bytes)
    }

    /// The largest number of elements of `element_bytes` each that fit now
    /// beside `fixed_bytes` of other buffers, capped at `max_elements`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `element_bytes == 0`; when the device's
    /// memory figures cannot be read.
    pub fn chunk_elements(
        &self,
        element_bytes: u64,
        fixed_bytes: u64,
        max_elements: u64,
    ) -> Result<u64> {
        if element_bytes == 0 {
            return Err(Error::InvalidArgument(
                "chunk_elements: element size of 0 bytes".into(),
            ));
        }
        Ok((self.available_bytes()?.saturating_sub(fixed_bytes) / element_bytes).min(max_elements))
    }

    fn release(&self, bytes: u64) {
        let mut st = self.state();
        st.claimed = st.claimed.saturating_sub(bytes);
        drop(st);
        self.inner.released.notify_all();
    }

    fn refusal(&self, bytes: u64, avail: u64, st: &State) -> Error {
        let c = &self.inner.config;
        let (free, total) = self.inner.source.mem_info().unwrap_or((0, 0));
        Error::OutOfMemory(format!(
            "memory budget: requested {}, available {} (device free {} of {}, cap {}, margin {}, \
             claimed by cuzk {}); lower the chunk size or the number of workers, or raise \
             CUZK_DEVICE_MEMORY_LIMIT",
            fmt_bytes(bytes),
            fmt_bytes(avail),
            fmt_bytes(free),
            fmt_bytes(total),
            c.cap_bytes.map_or("none".into(), fmt_bytes),
            fmt_bytes(c.margin_bytes),
            fmt_bytes(st.claimed),
        ))
    }
}

/// A device simulated in host memory, for tests of the budget and planner
/// logic: `free` goes down by what [`SimulatedDevice::take`] takes. A test
/// fixture: only with the `test-utils` feature.
#[cfg(any(test, feature = "test-utils"))]
#[derive(Debug)]
pub struct SimulatedDevice {
    total: u64,
    used: std::sync::atomic::AtomicU64,
}

#[cfg(any(test, feature = "test-utils"))]
impl SimulatedDevice {
    /// A device with `total` bytes, `used` of them already taken by others.
    pub fn new(total: u64, used: u64) -> Arc<Self> {
        Arc::new(SimulatedDevice {
            total,
            used: used.into(),
        })
    }

    /// Takes (positive) or gives back (negative) device memory, as another
    /// process would.
    pub fn take(&self, bytes: i64) {
        use std::sync::atomic::Ordering::SeqCst;
        if bytes >= 0 {
            self.used.fetch_add(bytes as u64, SeqCst);
        } else {
            self.used.fetch_sub(bytes.unsigned_abs(), SeqCst);
        }
    }
}

#[cfg(any(test, feature = "test-utils"))]
impl MemSource for Arc<SimulatedDevice> {
    fn mem_info(&self) -> Result<(u64, u64)> {
        let used = self.used.load(std::sync::atomic::Ordering::SeqCst);
        Ok((self.total.saturating_sub(used), self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn budget(
        total: u64,
        used: u64,
        cap: Option<u64>,
        margin: u64,
    ) -> (Budget, Arc<SimulatedDevice>) {
        let dev = SimulatedDevice::new(total, used);
        let b = Budget::new(
            BudgetConfig {
                margin_bytes: margin,
                cap_bytes: cap,
            },
            Box::new(dev.clone()),
        );
        (b, dev)
    }

    #[test]
    fn parse_bytes_units() {
        assert_eq!(parse_bytes("16GiB").unwrap(), 16 * GIB);
        assert_eq!(parse_bytes("16G").unwrap(), 16 * GIB);
        assert_eq!(parse_bytes(" 512 MiB ").unwrap(), 512 * MIB);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 * GIB / 2);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("lots")
            .unwrap_err()
            .contains("not a byte count"));
        assert!(parse_bytes("3 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        // Whole numbers exactly, past f64's 53 bits; 64 bits at most.
        assert_eq!(parse_bytes("9007199254740993").unwrap(), (1 << 53) + 1);
        assert_eq!(parse_bytes("0").unwrap(), 0);
        assert_eq!(parse_bytes("0.0GiB").unwrap(), 0);
        for too_big in ["18446744073709551616", "99999999999TiB", "16777216TiB"] {
            let e = parse_bytes(too_big).unwrap_err();
            assert!(e.contains("64 bits"), "{too_big}: {e}");
        }
        assert!(parse_bytes("0.0000001")
            .unwrap_err()
            .contains("less than one byte"));
        assert_eq!(parse_bytes("1.5B").unwrap(), 1);
    }

    #[test]
    fn limit_is_the_smaller_of_cap_and_total_less_margin() {
        let (b, _) = budget(80 * GIB, 0, None, 512 * MIB);
        assert_eq!(b.limit_bytes().unwrap(), 80 * GIB - 512 * MIB);
        let (b, _) = budget(80 * GIB, 0, Some(16 * GIB), 512 * MIB);
        assert_eq!(b.limit_bytes().unwrap(), 16 * GIB - 512 * MIB);
        let (b, _) = budget(8 * GIB, 0, Some(16 * GIB), GIB);
        assert_eq!(b.limit_bytes().unwrap(), 7 * GIB);
    }

    #[test]
    fn available_respects_free_memory_of_others() {
        let (b, dev) = budget(80 * GIB, 70 * GIB, None, 512 * MIB);
        assert_eq!(b.available_bytes().unwrap(), 10 * GIB - 512 * MIB);
        dev.take(-(60 * GIB as i64));
        assert_eq!(b.available_bytes().unwrap(), 70 * GIB - 512 * MIB);
    }

    #[test]
    fn reservations_add_up_and_release_on_drop() {
        let (b, _) = budget(16 * GIB, 0, None, 0);
        let r1 = b.try_reserve(10 * GIB).unwrap();
        assert_eq!(b.claimed_bytes(), 10 * GIB);
        let e = b.try_reserve(7 * GIB).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory(_)));
        assert!(
            e.to_string()
                .contains("requested 7.00 GiB, available 6.00 GiB"),
            "{e}"
        );
        let r2 = b.try_reserve(6 * GIB).unwrap();
        drop(r1);
        assert_eq!(b.claimed_bytes(), 6 * GIB);
        assert_eq!(b.peak_claimed_bytes(), 16 * GIB);
        drop(r2);
        assert_eq!(b.claimed_bytes(), 0);
    }

    #[test]
    fn buffers_cannot_overdraw_a_reservation() {
        let (b, _) = budget(16 * GIB, 0, None, 0);
        let r = b.try_reserve(4 * GIB).unwrap();
        let u1 = r.take(3 * GIB).unwrap();
        assert!(r
            .take(2 * GIB)
            .unwrap_err()
            .to_string()
            .contains("3.00 GiB already in use"));
        let u2 = r.take(GIB).unwrap();
        assert_eq!(r.used_bytes(), 4 * GIB);
        drop(u1);
        drop(u2);
        assert_eq!(r.used_bytes(), 0);
    }

    #[test]
    fn reserve_up_to_shrinks_to_what_fits() {
        let (b, _) = budget(16 * GIB, 0, None, 512 * MIB);
        let _first = b.try_reserve(12 * GIB).unwrap();
        let second = b.reserve_up_to(GIB, 12 * GIB, 256 * MIB).unwrap();
        assert_eq!(second.bytes(), 3 * GIB + 512 * MIB);
        assert!(b.reserve_up_to(GIB, 12 * GIB, MIB).is_err());
    }

    #[test]
    fn reserve_wait_gets_memory_when_another_worker_releases() {
        let (b, _) = budget(16 * GIB, 0, Some(16 * GIB), 512 * MIB);
        let first = b.try_reserve(12 * GIB).unwrap();
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            b2.reserve_wait(12 * GIB, Duration::from_secs(10))
                .map(|r| r.bytes())
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !waiter.is_finished(),
            "the second worker must wait, not fail"
        );
        drop(first);
        assert_eq!(waiter.join().unwrap().unwrap(), 12 * GIB);
        assert_eq!(b.claimed_bytes(), 0);
    }

    #[test]
    fn reserve_wait_times_out_and_refuses_the_impossible_at_once() {
        let (b, _) = budget(16 * GIB, 0, None, 512 * MIB);
        let _held = b.try_reserve(12 * GIB).unwrap();
        let t = Instant::now();
        assert!(b
            .reserve_wait(12 * GIB, Duration::from_millis(120))
            .is_err());
        assert!(t.elapsed() >= Duration::from_millis(100));
        let t = Instant::now();
        let e = b
            .reserve_wait(17 * GIB, Duration::from_secs(60))
            .unwrap_err();
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "impossible requests must not wait"
        );
        assert!(e.to_string().contains("requested 17.00 GiB"), "{e}");
    }

    #[test]
    fn planner_answers() {
        let (b, _) = budget(16 * GIB, 0, None, 512 * MIB);
        assert!(b.fits(12 * GIB).unwrap());
        assert!(!b.fits(16 * GIB).unwrap());
        assert_eq!(b.workers_that_fit(12 * GIB).unwrap(), 1);
        assert_eq!(b.workers_that_fit(5 * GIB).unwrap(), 3);
        assert_eq!(b.workers_that_fit(20 * GIB).unwrap(), 0);
        assert!(b.workers_that_fit(0).is_err());
        // 15.5 GiB available, 1.5 GiB fixed: 14 GiB of 32-byte elements.
        assert_eq!(
            b.chunk_elements(32, 3 * GIB / 2, u64::MAX).unwrap(),
            14 * GIB / 32
        );
        assert_eq!(b.chunk_elements(32, 0, 1000).unwrap(), 1000);
        assert!(b.chunk_elements(0, 0, 10).is_err());
        let (b, _) = budget(16 * GIB, 0, Some(16 * GIB), 512 * MIB);
        let _r = b.try_reserve(12 * GIB).unwrap();
        assert!(!b.fits(12 * GIB).unwrap());
        assert_eq!(b.workers_that_fit(12 * GIB).unwrap(), 1);
    }

    #[test]
    fn many_threads_never_exceed_the_limit() {
        let (b, _) = budget(10 * GIB, 0, None, 0);
        let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (b, peak) = (b.clone(), peak.clone());
                std::thread::spawn(move || {
                    for j in 0..200u64 {
                        let want = ((i * 7 + j * 13) % 5 + 1) * GIB;
                        if let Ok(r) = b.reserve_wait(want, Duration::from_secs(5)) {
                            peak.fetch_max(b.claimed_bytes(), std::sync::atomic::Ordering::SeqCst);
                            drop(r);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(peak.load(std::sync::atomic::Ordering::SeqCst) <= 10 * GIB);
        assert!(b.peak_claimed_bytes() <= 10 * GIB);
        assert_eq!(b.claimed_bytes(), 0);
    }
}
