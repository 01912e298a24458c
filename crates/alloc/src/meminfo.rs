//! The host's memory as Linux reports it (/proc/meminfo): what a build or a
//! load of tens of GB checks against before it starts.

/// The host's memory (MemTotal of /proc/meminfo), bytes; `None` where it
/// cannot be read (not Linux).
pub fn host_memory_total() -> Option<u64> {
    meminfo_bytes("MemTotal:")
}

/// The host's memory available for new allocations without swapping
/// (MemAvailable of /proc/meminfo), bytes; `None` where it cannot be read.
pub fn host_memory_available() -> Option<u64> {
    meminfo_bytes("MemAvailable:")
}

/// The field `key` of /proc/meminfo (given in kB there), in bytes.
fn meminfo_bytes(key: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    /// Where /proc/meminfo exists, both figures are there, and what is
    /// available is at most the total.
    #[test]
    fn total_and_available() {
        if !std::path::Path::new("/proc/meminfo").exists() {
            return;
        }
        let total = super::host_memory_total().unwrap();
        let available = super::host_memory_available().unwrap();
        assert!(total > 0 && available <= total, "{available} of {total}");
    }
}
