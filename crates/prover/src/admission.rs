//! Admission to the GPU stage of a proof, shared by every
//! [`crate::MultiGpuProver`] lane over one device memory: a proving
//! service that holds several circuits (one prover each, one
//! `DeviceMemory` a GPU) admits at most as many proofs at once on a GPU as
//! the most frugal of its circuits' lanes allows, so that proofs of two
//! circuits never run out of memory beside each other.
//!
//! Each lane states its working set (bytes a proof in its GPU stage may
//! hold) and its workers. Whenever no proof is in a GPU stage on the
//! device, the gate measures the bytes a proof could have then (the
//! budget's available bytes, with every resident key counted), and each
//! lane admits as many working sets as fit that figure (at least one, at
//! most its workers). A lane registered while proofs held memory is
//! sized from what it saw until the device is next idle: so a circuit
//! loaded beside a running proof, or a key freed since, changes the
//! device's number of places at its next idle moment, not for ever.

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
    /// Proofs at once by its own measure when it was registered.
    registered: usize,
}

#[derive(Default)]
struct State {
    /// Each registered lane's demand, by lane id.
    lanes: BTreeMap<u64, Demand>,
    /// Reads the bytes a proof could claim (`None`: a gate without a
    /// device memory, whose lanes keep their registered places).
    probe: Option<Probe>,
    /// The probe's last reading while no proof was in a GPU stage, if no
    /// lane came or went since.
    idle_bytes: Option<u64>,
    /// Proofs admitted now.
    admitted: usize,
    /// Proofs waiting for admission now, in the order they came: each is
    /// admitted when it is first and there is a place, so that no
    /// circuit's workers overtake another's for ever.
    queue: VecDeque<u64>,
    /// The next waiter's number.
    next: u64,
}

impl State {
    /// Places on the device: the fewest any lane allows (at least one).
    fn permits(&self) -> usize {
        self.lanes
            .values()
            .map(|d| match self.idle_bytes {
                Some(bytes) => usize::try_from(bytes / d.working_set)
                    .unwrap_or(usize::MAX)
                    .clamp(1, d.workers),
                None => d.registered,
            })
            .min()
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// With no proof in a GPU stage, reads what a proof could have now.
    fn measure_if_idle(&mut self) {
        if self.admitted == 0 {
            if let Some(probe) = &self.probe {
                let before = self.permits();
                self.idle_bytes = probe();
                let after = self.permits();
                if after != before {
                    tracing::debug!(
                        before,
                        after,
                        idle_bytes = self.idle_bytes,
                        "admission: the device's places changed at an idle reading"
                    );
                }
            }
        }
    }

    /// Admits the caller if it is first in line (or nobody waits and it is
    /// not in line) and there is a place.
    fn take_place(&mut self, me: Option<u64>) -> bool {
        let first = match me {
            Some(me) => self.queue.front() == Some(&me),
            None => self.queue.is_empty(),
        };
        if !first {
            return false;
        }
        self.measure_if_idle();
        if self.admitted >= self.permits() {
            return false;
        }
        if me.is_some() {
            self.queue.pop_front();
        }
        self.admitted += 1;
        true
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
    /// by its own measure now it admits `registered` proofs at once (at
    /// least one). `probe` reads what a proof could claim on the device
    /// (the first registration's probe serves the gate).
    pub(crate) fn new(
        memory: Option<usize>,
        working_set: u64,
        workers: usize,
        registered: usize,
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
            if st.probe.is_none() {
                st.probe = probe;
            }
            // A new key on the device, or a new working set: the last
            // idle reading no longer holds.
            st.idle_bytes = None;
            st.lanes.insert(
                id,
                Demand {
                    working_set: working_set.max(1),
                    workers: workers.max(1),
                    registered: registered.max(1),
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
        self.gate.state().take_place(None).then(|| Admission {
            gate: self.gate.clone(),
        })
    }

    /// Proofs the device admits at once now (the last idle reading's, or
    /// the lanes' own measures where the device has not been idle since a
    /// lane came or went).
    #[cfg(test)]
    pub(crate) fn places(&self) -> usize {
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
            if st.take_place(Some(me)) {
                drop(st);
                // The next in line may have a place too.
                self.gate.released.notify_all();
                return Ok(Admission {
                    gate: self.gate.clone(),
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
        let mut st = self.gate.state();
        st.lanes.remove(&self.id);
        // A key may have gone with the lane: read the device again.
        st.idle_bytes = None;
        drop(st);
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

    /// With a probe, the device's places follow what a proof could claim
    /// when no proof is in a GPU stage: a lane registered beside a running
    /// proof (and so measuring too little) holds the device to its count
    /// only until the device is next idle; a lane's departure or arrival
    /// makes the gate read the device again.
    #[test]
    fn places_follow_the_idle_device() {
        let free = Arc::new(AtomicU64::new(25));
        let probe: Probe = {
            let free = free.clone();
            Arc::new(move || Some(free.load(Ordering::SeqCst)))
        };
        let mem = Some(0x1d1e_0000_usize);
        // 10-byte working sets, 2 workers: 25 free bytes hold two.
        let a = Registration::new(mem, 10, 2, 2, Some(probe.clone()));
        assert_eq!(a.places(), 2, "the lane's own count until a reading");
        let first = a.try_admit().expect("a place");
        free.store(15, Ordering::SeqCst);
        // Registered while the first proof holds 10 bytes: it saw room for
        // one, and the device keeps to that while it is busy.
        let b = Registration::new(mem, 10, 2, 1, Some(probe.clone()));
        assert_eq!(a.places(), 1);
        assert!(a.try_admit().is_none(), "one place while busy");
        drop(first);
        free.store(25, Ordering::SeqCst);
        // Idle: the gate reads 25 bytes, room for two of either lane.
        let x = b.try_admit().expect("first of two");
        free.store(15, Ordering::SeqCst);
        let y = a.try_admit().expect("second of two, by the idle reading");
        assert_eq!(a.places(), 2);
        assert!(a.try_admit().is_none(), "no more than the workers");
        drop((x, y));
        // A larger key arrives: 12 bytes left, room for one.
        free.store(12, Ordering::SeqCst);
        let _ = a.try_admit().expect("idle: read again");
        assert_eq!(a.places(), 1);
        // The probe cannot read the device: the lanes' own counts.
        let none: Probe = Arc::new(|| None);
        let c = Registration::new(Some(0x1d1f_0000_usize), 10, 2, 2, Some(none));
        let _c1 = c.try_admit().expect("first");
        let _c2 = c.try_admit().expect("second, by the lane's own count");
        drop(b);
        // The lane that saw one place is gone: the other's count holds
        // until the device is read again.
        assert_eq!(a.places(), 2);
    }
}
