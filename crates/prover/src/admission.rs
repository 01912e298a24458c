//! Admission to the GPU stage of a proof, shared by every
//! [`crate::MultiGpuProver`] lane over one device memory: a proving
//! service that holds several circuits (one prover each, one
//! `DeviceMemory` a GPU) admits at most as many proofs at once on a GPU as
//! the most frugal of its circuits' lanes allows, so that proofs of two
//! circuits never run out of memory beside each other.

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

/// One device's admission: proofs in a GPU stage at once, at most the
/// fewest that any lane registered on it admits.
pub(crate) struct DeviceGate {
    state: Mutex<State>,
    released: Condvar,
}

#[derive(Default)]
struct State {
    /// Each registered lane's own limit (proofs at once), by lane id.
    lanes: BTreeMap<u64, usize>,
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
    fn permits(&self) -> usize {
        self.lanes
            .values()
            .copied()
            .min()
            .unwrap_or(usize::MAX)
            .max(1)
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
    /// Registers a lane admitting `slots` proofs at once (at least one) on
    /// the gate of the device memory at address `memory` (`None`: a gate of
    /// the lane's own).
    pub(crate) fn new(memory: Option<usize>, slots: usize) -> Registration {
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
        gate.state().lanes.insert(id, slots.max(1));
        Registration { gate, id }
    }

    /// Whether no proof is in a GPU stage on the device and none waits.
    pub(crate) fn idle(&self) -> bool {
        let st = self.gate.state();
        st.admitted == 0 && st.queue.is_empty()
    }

    /// Admission now, if there is a place and nobody waits for one.
    pub(crate) fn try_admit(&self) -> Option<Admission> {
        let mut st = self.gate.state();
        (st.queue.is_empty() && st.admitted < st.permits()).then(|| {
            st.admitted += 1;
            Admission {
                gate: self.gate.clone(),
            }
        })
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
            if st.queue.front() == Some(&me) && st.admitted < st.permits() {
                st.queue.pop_front();
                st.admitted += 1;
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
        let two = Registration::new(mem, 2);
        let one = Registration::new(mem, 1);
        let apart = Registration::new(None, 1);
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
}
