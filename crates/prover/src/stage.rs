//! Proofs in a GPU stage on each device memory, across every prover that
//! shares it (the daemon builds one `MultiGpuProver` a circuit over one
//! `DeviceMemory` a GPU): [`Stage::enter`] and [`alone`].

use cuzk_alloc::DeviceMemory;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Proofs in a GPU stage, by the address of their `DeviceMemory`.
static STAGES: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn stages() -> std::sync::MutexGuard<'static, BTreeMap<usize, usize>> {
    STAGES.lock().unwrap_or_else(|p| p.into_inner())
}

fn key(mem: &Arc<DeviceMemory>) -> usize {
    Arc::as_ptr(mem) as usize
}

/// One proof's presence in a GPU stage on a device memory, counted from
/// [`Stage::enter`] until dropped.
pub(crate) struct Stage(usize);

impl Stage {
    /// Counts a proof entering its GPU stage on `mem`.
    pub(crate) fn enter(mem: &Arc<DeviceMemory>) -> Stage {
        Stage::enter_key(key(mem))
    }

    fn enter_key(k: usize) -> Stage {
        *stages().entry(k).or_insert(0) += 1;
        Stage(k)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let mut s = stages();
        if let Some(c) = s.get_mut(&self.0) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                s.remove(&self.0);
            }
        }
    }
}

/// Whether at most one proof (the caller's) is in a GPU stage on `mem`.
pub(crate) fn alone(mem: &Arc<DeviceMemory>) -> bool {
    alone_key(key(mem))
}

fn alone_key(k: usize) -> bool {
    stages().get(&k).copied().unwrap_or(0) <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Proofs count per memory, each guard once, and the entry goes with
    /// the last (keys stand in for memories' addresses).
    #[test]
    fn stages_count_per_memory() {
        let (a, b) = (usize::MAX - 1, usize::MAX - 2);
        assert!(alone_key(a));
        let first = Stage::enter_key(a);
        assert!(alone_key(a), "one proof: alone");
        let second = Stage::enter_key(a);
        let other = Stage::enter_key(b);
        assert!(!alone_key(a), "two proofs on a");
        assert!(alone_key(b));
        drop(first);
        assert!(alone_key(a));
        drop((second, other));
        assert!(!stages().contains_key(&a) && !stages().contains_key(&b));
    }
}
