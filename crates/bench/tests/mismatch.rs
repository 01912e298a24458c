//! A wrong cuzk result fails the main job: a CPU-only run of the field layer
//! at its smallest size (`--smoke`) with one result corrupted on purpose
//! (`--inject-mismatch field`) exits non-zero, after writing a report whose
//! verdict is `fail`.

use std::path::PathBuf;
use std::process::Command;

/// The bench executable: cargo's build of it, or, in a bundle made by
/// `cargo xtask bundle` (tests/ beside bin/), the bundle's own.
fn bench_exe() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_cuzk-bench"));
    if built.exists() {
        return built;
    }
    let me = std::env::current_exe().expect("the test's own path");
    me.parent()
        .and_then(|tests| tests.parent())
        .map(|bundle| bundle.join("bin/cuzk-bench"))
        .filter(|p| p.exists())
        .unwrap_or(built)
}

#[test]
fn an_injected_mismatch_fails_the_run_and_is_reported() {
    let out = std::env::temp_dir().join(format!("cuzk-bench-mismatch-{}", std::process::id()));
    let run = Command::new(bench_exe())
        .args(["--smoke", "--only", "field", "--inject-mismatch", "field"])
        .args(["--seed", "12345", "--out"])
        .arg(&out)
        .output()
        .expect("cuzk-bench runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the run passed:\n{stderr}");
    assert!(stderr.contains("MISMATCH"), "{stderr}");
    assert!(stderr.contains("--seed 12345"), "{stderr}");
    let text = std::fs::read_to_string(out.join("report.json")).expect("report.json written");
    let report: serde_json::Value = serde_json::from_str(&text).expect("report.json parses");
    assert_eq!(report["verdict"], "fail");
    assert_eq!(report["seed"], 12345);
    let checks = report["checks"].as_array().expect("a checks array");
    let bad: Vec<_> = checks
        .iter()
        .filter(|c| c["verdict"] == "mismatch")
        .collect();
    assert_eq!(bad.len(), 1, "one corrupted result, one mismatch: {bad:?}");
    assert_eq!(bad[0]["layer"], "field");
    assert_eq!(bad[0]["seed"], 12345);
    assert!(bad[0]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("index 0")));
    // Every other result was compared and found equal (or skipped, without a GPU).
    assert!(checks.iter().any(|c| c["verdict"] == "equal"));
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md written");
    assert!(md.contains("| layer | check | against | size | verdict | seed |"));
    assert!(md.contains("MISMATCH"));
    std::fs::remove_dir_all(&out).ok();
}
