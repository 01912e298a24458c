//! The machine a run measures: GPU, CPU, driver, commit and start time.

use crate::report::Machine;

/// The first line of `cmd args`'s output, if it runs and succeeds.
fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
}

/// The GPU to bench on (device 0), if any, and its description for the
/// report ("none (why)" without one).
pub(crate) fn gpu() -> (Option<i32>, String) {
    match cuzk_field::gpu::devices() {
        Ok(d) if !d.is_empty() => (
            Some(0),
            format!(
                "{} (sm_{}{}, {} SMs, {:.0} GiB)",
                d[0].name,
                d[0].compute_capability.0,
                d[0].compute_capability.1,
                d[0].sm_count,
                d[0].total_memory_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        Ok(_) => (None, "none".into()),
        Err(e) => {
            eprintln!("cuzk-bench: no GPU found ({e}); running the CPU paths only");
            (None, format!("none ({e})"))
        }
    }
}

/// The current time (UTC, RFC 3339), or "unknown".
pub(crate) fn now() -> String {
    command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]).unwrap_or_else(|| "unknown".into())
}

/// The machine block of the report, for a run on `gpu` started at `date`.
pub(crate) fn describe(gpu: String, date: String) -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    Machine {
        gpu,
        cpu,
        cpu_threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        driver: command_output(
            "nvidia-smi",
            &["--query-gpu=driver_version", "--format=csv,noheader"],
        )
        .unwrap_or_else(|| "none".into()),
        commit: env!("CUZK_GIT_COMMIT").into(),
        date,
    }
}
