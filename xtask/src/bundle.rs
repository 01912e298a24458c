//! `cargo xtask bundle`: release test and bench executables built with CUDA,
//! copied (debug info stripped) with run scripts into `target/bundle/`, and
//! packed into one file, `target/bundle.tar.xz` (at most [`MAX_ARCHIVE`]),
//! for a GPU machine that has no cargo:
//! `tar xf bundle.tar.xz && cd bundle && ./run-tests` (or `./run-bench`).

use crate::toolkit;
use crate::util::{cargo, root, run, show};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The most bytes the packed bundle may take: what a GPU runner accepts as
/// one carried file.
const MAX_ARCHIVE: u64 = 64 << 20;

/// Arguments of `cargo xtask bundle`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// GPU architectures to compile (sets CUZK_CUDA_ARCHS), e.g. `90` for the H200.
    #[arg(long)]
    archs: Option<String>,
    /// Output folder (default target/bundle); the archive is written beside
    /// it, as `<folder>.tar.xz`.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Builds with `cargo <args> --message-format=json` (with cuzk's CUDA
/// feature, `cuzk-field/cuda`, unless `args` builds the supraseal peer,
/// which does not depend on cuzk-field) and returns the paths of the
/// executables it produced.
fn build_executables(
    args: &[&str],
    nvcc: &Path,
    archs: &Option<String>,
) -> Result<Vec<(PathBuf, String)>> {
    let mut cmd = cargo();
    cmd.args(args);
    // `cargo bench` builds optimized already and takes no --release.
    if args[0] != "bench" {
        cmd.arg("--release");
    }
    if !args.contains(&"cuzk-supraseal-peer") {
        cmd.args(["--features", "cuzk-field/cuda"]);
    }
    cmd.arg("--message-format=json-render-diagnostics")
        .env("NVCC", nvcc)
        // sppark's build script (the bench's peer) links a probe with nvcc,
        // which needs the toolkit's libcudart on the linker's search path.
        .env("LIBRARY_PATH", library_path(nvcc))
        // supraseal-c2's build script (the bench's other peer) runs nvcc
        // through the cc crate, which looks for it on PATH.
        .env("PATH", search_path(nvcc))
        .stdout(Stdio::piped());
    if let Some(a) = archs {
        cmd.env("CUZK_CUDA_ARCHS", a);
    }
    eprintln!("$ {}", show(&cmd));
    let out = cmd.output().context("running cargo")?;
    if !out.status.success() {
        bail!("`{}` failed", show(&cmd));
    }
    let mut exes = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] == "compiler-artifact" {
            if let Some(exe) = v["executable"].as_str() {
                // Test harnesses as "test" ("test-bin" for a binary's own
                // unit tests, whose file name is its crate's library's), so
                // that the binaries and examples `cargo test` also builds
                // stay out of tests/.
                let kind = if v["profile"]["test"] == true && args[0] == "test" {
                    if v["target"]["kind"][0] == "bin" {
                        "test-bin".to_owned()
                    } else {
                        "test".to_owned()
                    }
                } else {
                    v["target"]["kind"][0].as_str().unwrap_or("").to_owned()
                };
                exes.push((PathBuf::from(exe), kind));
            }
        }
    }
    Ok(exes)
}

/// LIBRARY_PATH with the toolkit's `lib` (beside `bin/nvcc`) in front.
pub(crate) fn library_path(nvcc: &Path) -> std::ffi::OsString {
    let lib = nvcc
        .parent()
        .and_then(Path::parent)
        .map(|r| r.join("lib"))
        .unwrap_or_default();
    let mut paths = vec![lib];
    if let Some(old) = std::env::var_os("LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// The daemon's checks on a GPU machine (tools/daemon-check.sh).
const RUN_DAEMON_CHECK: &str = include_str!("../../tools/daemon-check.sh");

/// One phase of a GPU session a device call (tools/device-session.sh).
const RUN_SESSION: &str = include_str!("../../tools/device-session.sh");

const RUN_TESTS: &str = r#"#!/usr/bin/env bash
# Runs every cuzk test executable in this bundle, GPU tests included
# (--include-ignored: they are `#[ignore = "needs a GPU"]`), with
# CUZK_REQUIRE_GPU=1: a GPU test that cannot find a GPU fails.
# Usage: ./run-tests [extra args for each test binary, e.g. a name filter]
# TESTS_FIRST="ntt prover": those executables first, then the others.
cd "$(dirname "$0")"
export CUZK_REQUIRE_GPU=1
order=()
for t in ${TESTS_FIRST:-}; do order+=("tests/$t"); done
for t in tests/*; do
  case " ${TESTS_FIRST:-} " in *" ${t#tests/} "*) ;; *) order+=("$t") ;; esac
done
pass=0; fail=0; failed=()
for t in "${order[@]}"; do
  echo "=== $t"
  if "$t" --include-ignored "$@"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$t"); fi
done
echo "failed executables: ${failed[*]:-none}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
"#;

const RUN_BENCH: &str = r#"#!/usr/bin/env bash
# Runs the main job (the cuzk benchmark) from this bundle; same arguments
# as `cargo xtask bench` (--quick, --full, --only LIST, --out DIR,
# --criterion, in any order). With --criterion, the msm and ntt criterion
# benches run first (results in $CRITERION_HOME, default ./criterion) and
# the report compares its figures with theirs (criterion_agreement.json).
cd "$(dirname "$0")"
args=()
criterion=0
for a in "$@"; do
    if [ "$a" = "--criterion" ]; then criterion=1; else args+=("$a"); fi
done
if [ "$criterion" = 1 ]; then
    export CRITERION_HOME="${CRITERION_HOME:-$PWD/criterion}"
    for b in benches/msm benches/ntt; do
        if [ -x "$b" ]; then "$b" --bench || exit $?; fi
    done
    exec ./bin/cuzk-bench --check-criterion "$CRITERION_HOME" "${args[@]}"
fi
exec ./bin/cuzk-bench "${args[@]}"
"#;

/// Cargo's package, binary and features of supraseal-c2's executable
/// (`cuzk-supraseal`), the bench's whole-prover peer, which cuzk-bench
/// runs from its own folder.
pub(crate) const SUPRASEAL_PEER: &[&str] = &[
    "-p",
    "cuzk-supraseal-peer",
    "--bin",
    "cuzk-supraseal",
    "--features",
    "cuzk-supraseal-peer/gpu",
];

/// `PATH` with nvcc's directory first.
pub(crate) fn search_path(nvcc: &Path) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = nvcc.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// Entry point of `cargo xtask bundle`.
pub(crate) fn run_bundle(args: Args) -> Result<()> {
    let nvcc = toolkit::ensure_cuda()?.join("bin/nvcc");
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| root().join("target/bundle"));
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    std::fs::create_dir_all(out.join("tests"))?;
    std::fs::create_dir_all(out.join("bin"))?;

    let tests = build_executables(
        &[
            "test",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "cuzk-sppark-peer",
            "--no-run",
        ],
        &nvcc,
        &args.archs,
    )?;
    let mut named = std::collections::BTreeMap::new();
    for (exe, kind) in &tests {
        let name = exe.file_name().unwrap().to_string_lossy();
        // Strip the cargo hash suffix: cuzk_field-0123abcd -> cuzk_field; a
        // binary's unit tests get `_bin` (cuzk-daemon's binary and its
        // library would both be cuzk_daemon).
        let short = name.rsplit_once('-').map_or(name.as_ref(), |(a, _)| a);
        let short = match kind.as_str() {
            "test" => short.to_owned(),
            "test-bin" => format!("{short}_bin"),
            _ => continue,
        };
        if let Some(other) = named.insert(short.clone(), exe.clone()) {
            bail!(
                "two test executables would be tests/{short}: {} and {}; rename a target",
                other.display(),
                exe.display()
            );
        }
        copy_stripped(exe, &out.join("tests").join(&short))?;
    }
    let bins = build_executables(
        &[
            "build",
            "-p",
            "cuzk-bench",
            "--bin",
            "cuzk-bench",
            "--features",
            "cuzk-bench/sppark",
        ],
        &nvcc,
        &args.archs,
    )?;
    // supraseal-c2, the bench's whole-prover peer, in a process of its own.
    let supraseal = build_executables(&[&["build"], SUPRASEAL_PEER].concat(), &nvcc, &args.archs)?;
    // The proving service and its client.
    let daemon = build_executables(
        &["build", "-p", "cuzk-daemon", "--bins"],
        &nvcc,
        &args.archs,
    )?;
    // The prover's example (a real circuit, proved and verified).
    let examples = build_executables(
        &[
            "build",
            "-p",
            "cuzk-prover",
            "--example",
            "prove",
            "--features",
            "cuzk-prover/test-utils,cuzk-prover/circuits",
        ],
        &nvcc,
        &args.archs,
    )?;
    let criterion = build_executables(
        &[
            "bench",
            "--workspace",
            "--exclude",
            "xtask",
            "--benches",
            "--no-run",
        ],
        &nvcc,
        &args.archs,
    )?;
    std::fs::create_dir_all(out.join("benches"))?;
    for (exe, kind) in &criterion {
        if kind != "bench" {
            continue;
        }
        let name = exe.file_name().unwrap().to_string_lossy();
        let short = name.rsplit_once('-').map_or(name.as_ref(), |(a, _)| a);
        copy_stripped(exe, &out.join("benches").join(short))?;
    }
    for (exe, _) in bins
        .iter()
        .chain(&supraseal)
        .chain(&daemon)
        .chain(&examples)
    {
        copy_stripped(exe, &out.join("bin").join(exe.file_name().unwrap()))?;
    }
    for (name, text) in [
        ("run-tests", RUN_TESTS),
        ("run-bench", RUN_BENCH),
        ("run-daemon-check", RUN_DAEMON_CHECK),
        ("run-session", RUN_SESSION),
    ] {
        let p = out.join(name);
        std::fs::write(&p, text)?;
        make_executable(&p)?;
    }
    let bytes: u64 = walk(&out)?
        .iter()
        .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    println!(
        "bundle: {} ({} test executables, {:.1} MiB)",
        out.display(),
        tests.len(),
        mib(bytes)
    );
    let archive = pack(&out)?;
    let packed = archive.metadata()?.len();
    println!(
        "bundle: {} ({:.1} MiB; unpack with `tar xf {}`, then `cd {} && ./run-tests`)",
        archive.display(),
        mib(packed),
        archive.file_name().unwrap().to_string_lossy(),
        out.file_name().unwrap().to_string_lossy()
    );
    if packed > MAX_ARCHIVE {
        bail!(
            "{} is {:.1} MiB, over the {:.0} MiB a GPU runner takes as one file: strip more, \
             build fewer architectures (--archs), or merge test executables",
            archive.display(),
            mib(packed),
            mib(MAX_ARCHIVE)
        );
    }
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Packs folder `dir` into `<dir>.tar.xz` beside it (the folder's name as
/// the archive's top folder), with xz -9e and a 256 MiB dictionary over the
/// whole tar: every test executable links the same standard library,
/// arkworks, cuzk crates and kernels, and a dictionary larger than the
/// bundle stores each of them once (a second copy of a 7 MiB executable
/// adds 8 KiB). Unpacking needs 256 MiB of memory. Returns the archive's
/// path.
fn pack(dir: &Path) -> Result<PathBuf> {
    let parent = dir.parent().context("the bundle folder has no parent")?;
    let name = dir.file_name().context("the bundle folder has no name")?;
    let archive = parent.join(format!("{}.tar.xz", name.to_string_lossy()));
    let file = std::fs::File::create(&archive)
        .with_context(|| format!("creating {}", archive.display()))?;
    let mut tar = std::process::Command::new("tar");
    tar.arg("-C")
        .arg(parent)
        .arg("-cf")
        .arg("-")
        .arg(name)
        .stdout(Stdio::piped());
    let lzma = "--lzma2=preset=9e,dict=256MiB";
    eprintln!("$ {} | xz {lzma} -T1 > {}", show(&tar), archive.display());
    let mut tar_child = tar.spawn().context("running tar")?;
    let mut xz = std::process::Command::new("xz");
    // One thread: xz's threads split the input into blocks that do not
    // share a dictionary.
    xz.args([lzma, "-T1", "-c"])
        .stdin(tar_child.stdout.take().unwrap())
        .stdout(file);
    let xz_status = xz.status().context("running xz (install xz-utils)")?;
    let tar_status = tar_child.wait()?;
    if !tar_status.success() || !xz_status.success() {
        bail!(
            "packing {} failed (tar: {tar_status}, xz: {xz_status})",
            dir.display()
        );
    }
    Ok(archive)
}

fn copy_stripped(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    // Debug info is most of a test binary's size; the bundle must stay small.
    let _ = run(std::process::Command::new("strip")
        .arg("--strip-debug")
        .arg(to));
    Ok(())
}

fn make_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            files.extend(walk(&p)?);
        } else {
            files.push(p);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    /// `pack` writes `<dir>.tar.xz` holding the folder under its own name.
    #[test]
    fn pack_writes_a_tar_xz_of_the_folder() {
        let base = std::env::temp_dir().join(format!("cuzk-pack-{}", std::process::id()));
        let dir = base.join("bundle");
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("tests/t"), b"#!/bin/sh\n").unwrap();
        let archive = super::pack(&dir).unwrap();
        assert_eq!(archive, base.join("bundle.tar.xz"));
        let list = std::process::Command::new("tar")
            .arg("tJf")
            .arg(&archive)
            .output()
            .unwrap();
        let list = String::from_utf8_lossy(&list.stdout);
        assert!(list.lines().any(|l| l == "bundle/tests/t"), "{list}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
