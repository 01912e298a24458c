//! Admission to the GPU stage of a proof, shared by every
//! [`crate::MultiGpuProver`] lane over one device memory: a proving
//! service that holds several circuits (one prover each, one
//! `DeviceMemory` a GPU) admits at most as many proofs at once on a GPU as
//! the most frugal of its circuits' lanes allows, so that proofs of two
//! circuits never run out of memory beside each other.
//!
//! Each lane states its working set (bytes a proof in its GPU stage may
//! hold), its workers, and the proofs it admits at once by its own measure
//! (the working sets that fit the budget's available bytes when it was
//! built). A lane registered while a proof was in a GPU stage on the device
//! measured memory that proof held: at the device's next idle moment (no
//! proof in a GPU stage) the gate reads the budget again and sizes that
//! lane from the reading (at least one, at most its workers). Lanes
//! registered on an idle device keep their own measure. The device's places
//! never rise while proofs are in their GPU stages: a proof admitted as the
//! only one stays the only one until it leaves.

use crate::{Error, Result};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// The gates in use, by key (a device memory's address, or a private key
/// for a lane without one).
static GATES: Mutex<BTreeMap<usize, Weak<DeviceGate>>> = Mutex::new(BTreeMap::new());

/// Lanes registered so far, for their ids (and the private keys of lanes
/// without a device memory, counted down from the top of the key space).
static NEXT_LANE: AtomicU64 = AtomicU64::new(0);

/// Bytes a proof could claim on a device now (its budget's available
/// bytes), `None` when they cannot be read.
pub(crate) type Probe = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

/// One device's admission: proofs in a GPU stage at once, at most the
/// fewest that any lane registered on it admits.
pub(crate) struct DeviceGate {
    state: Mutex<State>,
    released: Condvar,
}

/// One lane's demand on its device.
#[derive(Clone, Copy)]
struct Demand {
    /// Bytes one of its proofs may hold in its GPU stage (at least 1).
    working_set: u64,
    /// Its workers: never more of its proofs at once than this.
    workers: usize,
    /// Proofs at once it allows (at least one).
    places: usize,
    /// Whether `places` was measured beside a proof in a GPU stage, to be
    /// measured again at the device's next idle moment.
    provisional: bool,
}

#[derive(Default)]
struct State {
    /// Each registered lane's demand, by lane id.
    lanes: BTreeMap<u64, Demand>,
    /// Reads the bytes a proof could claim (`None`: a gate without a
    /// device memory, whose lanes keep their own measure).
    probe: Option<Probe>,
    /// Proofs admitted now.
    admitted: usize,
    /// The device's places when its first proof in a GPU stage now was
    /// admitted: the most admitted at once until it is idle again.
    ceiling: usize,
    /// Proofs waiting for admission now, in the order they came: each is
    /// admitted when it is first and there is a place, so that no
    /// circuit's workers overtake another's for ever.
    queue: VecDeque<u64>,
    /// The next waiter's number.
    next: u64,
}

impl State {
    /// Places on the device: the fewest any lane allows (at least one),
    /// and while proofs are in GPU stages no more than when the first of
    /// them was admitted.
    fn permits(&self) -> usize {
        let fewest = self
            .lanes
            .values()
            .map(|d| d.places)
            .min()
            .unwrap_or(usize::MAX)
            .max(1);
        if self.admitted > 0 {
            fewest.min(self.ceiling.max(1))
        } else {
            fewest
        }
    }

    /// With no proof in a GPU stage, sizes the lanes measured beside one
    /// from what a proof could claim now.
    fn settle_if_idle(&mut self) {
        if self.admitted > 0 || !self.lanes.values().any(|d| d.provisional) {
            return;
        }
        let reading = self.probe.as_ref().and_then(|probe| probe());
        for (id, d) in self.lanes.iter_mut().filter(|(_, d)| d.provisional) {
            d.provisional = false;
            let Some(bytes) = reading else { continue };
            let places = usize::try_from(bytes / d.working_set)
                .unwrap_or(usize::MAX)
                .clamp(1, d.workers);
            if places != d.places {
                tracing::debug!(
                    lane = id,
                    before = d.places,
                    after = places,
                    idle_bytes = bytes,
                    "admission: a lane measured beside a running proof, sized again on the idle device"
                );
                d.places = places;
            }
        }
    }

    /// Admits the caller if it is first in line (or nobody waits and it is
    /// not in line) and there is a place: `Some(sole)`, `sole` when the
    /// device admits one proof at once.
    fn take_place(&mut self, me: Option<u64>) -> Option<bool> {
        let first = match me {
            Some(me) => self.queue.front() == Some(&me),
            None => self.queue.is_empty(),
        };
        if !first {
            return None;
        }
        self.settle_if_idle();
        let permits = self.permits();
        if self.admitted >= permits {
            return None;
        }
        if me.is_some() {
            self.queue.pop_front();
        }
        if self.admitted == 0 {
            self.ceiling = permits;
        }
        self.admitted += 1;
        Some(permits == 1)
    }
}

/// A lane's registration on its device's gate; unregisters when dropped.
pub(crate) struct Registration {
    gate: Arc<DeviceGate>,
    id: u64,
}

/// One admitted proof; gives its place back when dropped.
pub(crate) struct Admission {
    gate: Arc<DeviceGate>,
    sole: bool,
}

impl Admission {
    /// Whether the device admitted this proof as the only one at once (and
    /// so admits no other until it leaves).
    pub(crate) fn sole(&self) -> bool {
        self.sole
    }
}

impl DeviceGate {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Registration {
    /// Registers a lane on the gate of the device memory at address
    /// `memory` (`None`: a gate of the lane's own): a proof of it may hold
    /// `working_set` bytes in its GPU stage, it has `workers` workers, and
    /// by its own measure now it admits `places` proofs at once (at least
    /// one). `probe` reads what a proof could claim on the device (the
    /// latest registration's probe serves the gate).
    pub(crate) fn new(
        memory: Option<usize>,
        working_set: u64,
        workers: usize,
        places: usize,
        probe: Option<Probe>,
    ) -> Registration {
        let id = NEXT_LANE.fetch_add(1, Ordering::SeqCst);
        let key = memory.unwrap_or(usize::MAX - id as usize);
        let gate = {
            let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
            gates.retain(|_, g| g.strong_count() > 0);
            match gates.get(&key).and_then(Weak::upgrade) {
                Some(g) => g,
                None => {
                    let g = Arc::new(DeviceGate {
                        state: Mutex::new(State::default()),
                        released: Condvar::new(),
                    });
                    gates.insert(key, Arc::downgrade(&g));
                    g
                }
            }
        };
        {
            let mut st = gate.state();
            if probe.is_some() {
                st.probe = probe;
            }
            let provisional = st.admitted > 0 && st.probe.is_some();
            st.lanes.insert(
                id,
                Demand {
                    working_set: working_set.max(1),
                    workers: workers.max(1),
                    places: places.max(1),
                    provisional,
                },
            );
        }
        Registration { gate, id }
    }

    /// Whether no proof is in a GPU stage on the device and none waits.
    pub(crate) fn idle(&self) -> bool {
        let st = self.gate.state();
        st.admitted == 0 && st.queue.is_empty()
    }

    /// Admission now, if there is a place and nobody waits for one.
    pub(crate) fn try_admit(&self) -> Option<Admission> {
        let sole = self.gate.state().take_place(None)?;
        Some(Admission {
            gate: self.gate.clone(),
            sole,
        })
    }

    /// Proofs this lane admits at once by its own measure (measured again
    /// at the device's first idle moment where it was registered beside a
    /// running proof).
    pub(crate) fn places(&self) -> usize {
        self.gate
            .state()
            .lanes
            .get(&self.id)
            .map_or(1, |d| d.places)
    }

    /// Proofs the device admits at once now.
    #[cfg(test)]
    fn device_places(&self) -> usize {
        self.gate.state().permits()
    }

    /// Admission, waiting up to `timeout` (first come, first served) for a
    /// place.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when no place came within `timeout`.
    pub(crate) fn admit(&self, timeout: Duration) -> Result<Admission> {
        // A timeout past the clock's range waits for ever.
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.gate.state();
        let me = st.next;
        st.next += 1;
        st.queue.push_back(me);
        loop {
            if let Some(sole) = st.take_place(Some(me)) {
                drop(st);
                // The next in line may have a place too.
                self.gate.released.notify_all();
                return Ok(Admission {
                    gate: self.gate.clone(),
                    sole,
                });
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                st.queue.retain(|&t| t != me);
                let (admitted, permits) = (st.admitted, st.permits());
                drop(st);
                self.gate.released.notify_all();
                return Err(Error::OutOfMemory(format!(
                    "no admission to a GPU stage within {timeout:?}: {admitted} proofs of \
                     {permits} allowed at once on this device are still in theirs; raise the \
                     admission timeout or give the device fewer workers"
                )));
            }
            let wait = deadline.map_or(Duration::from_secs(3600), |d| d - now);
            st = self
                .gate
                .released
                .wait_timeout(st, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.gate.state().lanes.remove(&self.id);
        // The limit may have grown.
        self.gate.released.notify_all();
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut st = self.gate.state();
        st.admitted = st.admitted.saturating_sub(1);
        drop(st);
        self.gate.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lanes over one memory share one limit, the fewest any admits; a
    /// lane of its own memory (or none) is apart; a waiter gets the place
    /// given back, and times out with an error when none comes.
    #[test]
    fn lanes_of_one_device_share_the_fewest_places() {
        let mem = Some(0x5eed_0000_usize);
        let two = Registration::new(mem, 1, 2, 2, None);
        let one = Registration::new(mem, 1, 2, 1, None);
        let apart = Registration::new(None, 1, 1, 1, None);
        assert!(two.idle());
        let a = two.try_admit().expect("a first place");
        assert!(!one.idle(), "the device is busy for every lane on it");
        assert!(
            two.try_admit().is_none(),
            "one place: the other lane's limit"
        );
        assert!(one.try_admit().is_none());
        let b = apart.try_admit().expect("another device");
        assert!(matches!(
            one.admit(Duration::from_millis(20)),
            Err(Error::OutOfMemory(_))
        ));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| one.admit(Duration::from_secs(10)).map(drop));
            while one.gate.state().queue.is_empty() {
                std::thread::yield_now();
            }
            drop(a);
            waiter.join().unwrap().unwrap();
        });
        // First come, first served: a newcomer does not take the place
        // of a proof already waiting.
        let held = two.try_admit().expect("the only place");
        std::thread::scope(|s| {
            let waiter = s.spawn(|| one.admit(Duration::from_secs(10)).map(drop));
            while one.gate.state().queue.is_empty() {
                std::thread::yield_now();
            }
            drop(held);
            // Until the waiter has taken it, the freed place is not ours.
            assert!(two.try_admit().is_none(), "the waiter's place");
            waiter.join().unwrap().unwrap();
        });
        assert!(
            matches!(two.admit(Duration::MAX).map(drop), Ok(())),
            "a timeout past the clock's range waits for ever, not panics"
        );
        // With the one-place lane gone, the other admits two.
        drop(one);
        let c = two.try_admit().expect("first");
        let d = two.try_admit().expect("second");
        assert!(two.try_admit().is_none());
        drop((b, c, d, apart));
        assert!(two.idle());
    }

    /// A probe reading the bytes in the returned cell (`bytes` at first).
    fn settable_probe(bytes: u64) -> (Arc<AtomicU64>, Probe) {
        let free = Arc::new(AtomicU64::new(bytes));
        let cell = free.clone();
        (free, Arc::new(move || Some(cell.load(Ordering::SeqCst))))
    }

    /// A lane registered beside a running proof (and so measuring too
    /// little) holds the device to its count only until the device is next
    /// idle, when it is sized from the probe's reading (at least one, at
    /// most its workers); a lane registered on an idle device keeps its
    /// own measure; the device's places never rise while proofs are in
    /// their GPU stages.
    #[test]
    fn places_follow_the_idle_device() {
        let (free, probe) = settable_probe(25);
        let mem = Some(0x1d1e_0000_usize);
        // 10-byte working sets, 2 workers: 25 free bytes hold two.
        let a = Registration::new(mem, 10, 2, 2, Some(probe.clone()));
        let first = a.try_admit().expect("a place");
        assert!(!first.sole(), "two places");
        free.store(15, Ordering::SeqCst);
        // Registered while the first proof holds 10 bytes: it saw room for
        // one, and the device keeps to that while it is busy.
        let b = Registration::new(mem, 10, 2, 1, Some(probe.clone()));
        assert_eq!(b.device_places(), 1);
        assert!(a.try_admit().is_none(), "one place while busy");
        drop(first);
        free.store(25, Ordering::SeqCst);
        // Idle: the gate reads 25 bytes, room for two of b's.
        let x = b.try_admit().expect("first of two");
        assert_eq!(b.places(), 2, "b sized again on the idle device");
        assert!(!x.sole());
        // A reading lower than a lane's own measure on an idle device does
        // not shrink it: memory the prover keeps after its first proof is
        // counted in its working set already.
        free.store(0, Ordering::SeqCst);
        let y = a.try_admit().expect("second of two");
        assert!(a.try_admit().is_none(), "no more than two");
        drop((x, y));
        assert!(a.try_admit().map(|z| !z.sole()).expect("idle again"));
        assert_eq!((a.places(), b.places()), (2, 2));

        // Sized from a reading: at most the workers, at least one.
        let mem = Some(0x1d1f_0000_usize);
        let c = Registration::new(mem, 10, 4, 4, Some(probe.clone()));
        let held = c.try_admit().expect("a place");
        let d = Registration::new(mem, 10, 2, 1, Some(probe.clone()));
        free.store(100, Ordering::SeqCst);
        drop(held);
        drop(c.try_admit());
        assert_eq!(d.places(), 2, "ten working sets fit: its two workers");
        let held = c.try_admit().expect("a place");
        let e = Registration::new(mem, 10, 2, 2, Some(probe.clone()));
        free.store(5, Ordering::SeqCst);
        drop(held);
        let only = e.try_admit().expect("at least one place");
        assert_eq!(e.places(), 1);
        assert!(only.sole(), "the device admits one at once");
        // A lane leaving while a proof is in its GPU stage raises no place
        // until the device is idle.
        drop(e);
        assert!(c.try_admit().is_none(), "the sole proof stays alone");
        drop(only);
        let two = (c.try_admit(), d.try_admit());
        assert!(two.0.is_some() && two.1.is_some(), "two places when idle");

        // A probe that cannot read the device: the lane's own count.
        let none: Probe = Arc::new(|| None);
        let mem = Some(0x1d20_0000_usize);
        let f = Registration::new(mem, 10, 2, 2, Some(none.clone()));
        let held = f.try_admit().expect("a place");
        let g = Registration::new(mem, 10, 2, 1, Some(none));
        drop(held);
        drop(f.try_admit());
        assert_eq!(g.places(), 1);
    }

    /// A waiter at a full device is admitted, in its turn, when the device
    /// goes idle and a lane measured beside a running proof is sized again.
    #[test]
    fn waiters_get_the_places_of_an_idle_reading() {
        let (_free, probe) = settable_probe(30);
        let mem = Some(0x1d21_0000_usize);
        let a = Registration::new(mem, 10, 2, 2, Some(probe.clone()));
        let held = a.try_admit().expect("a place");
        let b = Registration::new(mem, 10, 2, 1, Some(probe));
        std::thread::scope(|s| {
            let w1 = s.spawn(|| a.admit(Duration::from_secs(10)));
            while a.gate.state().queue.is_empty() {
                std::thread::yield_now();
            }
            let w2 = s.spawn(|| b.admit(Duration::from_secs(10)));
            while a.gate.state().queue.len() < 2 {
                std::thread::yield_now();
            }
            drop(held);
            let (p1, p2) = (w1.join().unwrap().unwrap(), w2.join().unwrap().unwrap());
            assert!(!p1.sole() && !p2.sole(), "both in on one release");
            assert_eq!(b.places(), 2);
        });
    }
}
