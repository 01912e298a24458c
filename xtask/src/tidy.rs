//! Tidy checks of the source tree, run by `cargo test -p xtask` (and so by
//! `cargo xtask test` and CI), as in rust-analyzer's `xtask/src/tidy.rs`.
//!
//! Each check is a detector (a function from a file's path and text to
//! findings, unit-tested below on synthetic text) and a `#[test]` that runs
//! it over the tree and fails with one `file:line: what, what to do` line a
//! finding:
//! - environment reads in library code beyond the allow-listed user settings;
//! - work-log entries in comments ("session 13", "(S12)", H200 timings);
//! - developer switches in the CUDA sources (`#ifndef CUZK_X` + default);
//! - public items without a doc comment, and source files without a
//!   module doc;
//! - C ABI functions with more than [`MAX_C_ABI_PARAMS`] parameters.

use crate::util::root;
use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The environment variables library code may read, by crate folder: user
/// settings documented in README.md's settings and the crates' lib docs.
/// The build settings read by `crates/build` (a build-script helper) are
/// not library code.
const ENV_ALLOW: &[(&str, &[&str])] = &[
    (
        "crates/alloc/",
        &["CUZK_DEVICE_MEMORY_LIMIT", "CUZK_DEVICE_MEMORY_MARGIN"],
    ),
    (
        "crates/prover/",
        &["CUZK_DEVICES", "CUZK_GPU_WORKERS_PER_DEVICE"],
    ),
];

/// The most parameters a function of the C ABI takes; more cross as one
/// plan or configuration struct.
const MAX_C_ABI_PARAMS: usize = 7;

/// One problem found by a detector.
#[derive(Debug, PartialEq)]
struct Finding {
    line: usize,
    message: String,
}

/// Files under `dir` (relative to the root) whose names end in one of `exts`.
fn files(dir: &str, exts: &[&str]) -> Vec<PathBuf> {
    fn walk(p: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(p) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, exts, out);
            } else if exts
                .iter()
                .any(|x| p.to_string_lossy().ends_with(&format!(".{x}")))
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), exts, &mut out);
    out.sort();
    out
}

/// The library sources: `crates/*/src` (not `crates/build`, a build-script
/// helper) and `csrc`.
fn library_sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for krate in std::fs::read_dir(root().join("crates"))
        .into_iter()
        .flatten()
    {
        let Ok(krate) = krate else { continue };
        if krate.file_name() == "build" {
            continue;
        }
        let src = format!("crates/{}/src", krate.file_name().to_string_lossy());
        out.extend(files(&src, &["rs"]));
    }
    out.extend(files("csrc", &C_EXTS));
    out.sort();
    out
}

const C_EXTS: [&str; 6] = ["cu", "cuh", "h", "hpp", "cpp", "c"];

/// Every source file that comments could be in: the library sources, the
/// tests, xtask (but this file, whose tests spell out what they catch), the
/// build helper and the tools.
fn all_sources() -> Vec<PathBuf> {
    let mut out = library_sources();
    for dir in ["crates/build/src", "tests", "xtask/src", "tools"] {
        out.extend(files(dir, &["rs"]));
        out.extend(files(dir, &C_EXTS));
    }
    out.retain(|p| !rel(p).ends_with("xtask/src/tidy.rs"));
    out.sort();
    out.dedup();
    out
}

/// `p` relative to the workspace root, with `/` separators.
fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs `detect` over `paths`; panics listing every finding.
fn check(name: &str, paths: &[PathBuf], detect: impl Fn(&str, &str) -> Vec<Finding>) {
    let mut report = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        let path = rel(p);
        for f in detect(&path, &text) {
            report.push(format!("{path}:{}: {}", f.line, f.message));
        }
    }
    assert!(
        report.is_empty(),
        "tidy: {name}: {} finding(s):\n{}\n",
        report.len(),
        report.join("\n")
    );
}

// ---- environment reads ----------------------------------------------------

static ENV_READ: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\benv::(var|var_os|vars|vars_os|set_var|remove_var)\b|\b(getenv|setenv|putenv|unsetenv|secure_getenv)\s*\(").unwrap()
});
static STR_LIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([A-Za-z0-9_]+)""#).unwrap());

/// Environment reads and writes of library file `path` that are not an
/// allow-listed user setting of its crate.
fn env_reads(path: &str, text: &str) -> Vec<Finding> {
    let allowed: &[&str] = ENV_ALLOW
        .iter()
        .find(|(dir, _)| path.starts_with(dir))
        .map_or(&[], |(_, names)| names);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = strip_line_comment(line);
        let Some(m) = ENV_READ.captures(code) else {
            continue;
        };
        let call = m.get(0).unwrap().as_str().trim_end_matches(['(', ' ']);
        // The variable's name: the first string literal on the line or the
        // next (a call split by rustfmt).
        let name = lines[i..lines.len().min(i + 2)]
            .iter()
            .find_map(|l| STR_LIT.captures(l).map(|c| c[1].to_owned()));
        let writes = call.contains("set") || call.contains("put") || call.contains("remove");
        match name {
            Some(n) if !writes && allowed.contains(&n.as_str()) => {}
            Some(n) => out.push(Finding {
                line: i + 1,
                message: format!(
                    "`{call}` of {n}: library code takes no settings from the environment \
                     but the allow-listed user settings (xtask/src/tidy.rs ENV_ALLOW); make it \
                     an explicit option with a default in the crate's config struct"
                ),
            }),
            None => out.push(Finding {
                line: i + 1,
                message: format!(
                    "`{call}` with no literal variable name: library code reads only the \
                     allow-listed user settings (xtask/src/tidy.rs ENV_ALLOW), named literally"
                ),
            }),
        }
    }
    out
}

/// `line` without a trailing `//` comment (naively: not inside strings).
fn strip_line_comment(line: &str) -> &str {
    match line.find("//") {
        Some(i) if !line[..i].contains('"') => &line[..i],
        _ => line,
    }
}

// ---- work-log entries -----------------------------------------------------

static WORK_LOG: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"(?i)\bsessions? \d+", "a session number"),
        (r"(?i)\bsessions? \d+ and \d+", "session numbers"),
        (r"\bcall \d+\b[),;]", "a call number"),
        (r"\(S\d+\)", "a session tag like (S12)"),
        (
            r"(?i)BENCHMARKS(\.md)?,? (run|call|entry|item|step) \d+",
            "a numbered BENCHMARKS.md entry",
        ),
    ]
    .into_iter()
    .map(|(re, what)| (Regex::new(re).unwrap(), what))
    .collect()
});
static H200: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bH[12]00\b").unwrap());
/// A measured figure: a time, a percentage or a bandwidth.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d(\.\d+)? ?(ms|us|µs|ns|s)\b|\d(\.\d+)? ?%|\d(\.\d+)? ?[GM]B/s\b").unwrap()
});

/// The comment text of each line of `text` (Rust or C/C++/CUDA): `//`
/// comments and the lines of `/* */` blocks; empty for code lines.
fn comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut comment = String::new();
        let mut rest = line;
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(e) => {
                        comment.push_str(&rest[..e]);
                        rest = &rest[e + 2..];
                        in_block = false;
                    }
                    None => {
                        comment.push_str(rest);
                        break;
                    }
                }
            } else {
                let line_c = rest.find("//");
                let block_c = rest.find("/*");
                match (line_c, block_c) {
                    (Some(l), b) if b.is_none_or(|b| l < b) => {
                        comment.push_str(&rest[l + 2..]);
                        break;
                    }
                    (_, Some(b)) => {
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    _ => break,
                }
            }
        }
        out.push(comment);
    }
    out
}

/// Work-log entries in the comments of `text`: session and call numbers,
/// numbered BENCHMARKS.md entries, and GPU timings (a comment block that
/// names the H200 and gives a time, percentage or bandwidth, outside
/// `tests/`).
fn work_log(path: &str, text: &str) -> Vec<Finding> {
    let comments = comments(text);
    let mut out = Vec::new();
    let entry = |c: &str| WORK_LOG.iter().find(|(re, _)| re.is_match(c)).map(|e| e.1);
    for (i, c) in comments.iter().enumerate() {
        // An entry broken over two comment lines ("session" ending one,
        // its number starting the next) is reported at its first line.
        let next = comments
            .get(i + 1)
            .map(|n| n.trim_start_matches(['/', '!', '*']).trim())
            .unwrap_or("");
        let found = entry(c).or_else(|| {
            (!next.is_empty() && entry(next).is_none())
                .then(|| entry(&format!("{} {next}", c.trim_end())))
                .flatten()
        });
        if let Some(what) = found {
            out.push(Finding {
                line: i + 1,
                message: format!(
                    "work-log entry ({what}) in a comment: say what the code is and why; \
                     measurements and their history belong in BENCHMARKS.md"
                ),
            });
        }
    }
    // GPU figures: a run of consecutive comment lines naming the GPU and
    // giving a figure, reported at its first figure. Tests may say what a
    // GPU does in their explanations.
    let mut i = if path.starts_with("tests/") {
        comments.len()
    } else {
        0
    };
    while i < comments.len() {
        if comments[i].trim().is_empty() {
            i += 1;
            continue;
        }
        let start = i;
        while i < comments.len() && !comments[i].trim().is_empty() {
            i += 1;
        }
        let block = &comments[start..i];
        // A figure within three lines of the GPU's name.
        let near_gpu = |k: usize| {
            block[k.saturating_sub(3)..block.len().min(k + 4)]
                .iter()
                .any(|c| H200.is_match(c))
        };
        if let Some(k) = (0..block.len()).find(|&k| FIGURE.is_match(&block[k]) && near_gpu(k)) {
            if !out.iter().any(|f| f.line == start + k + 1) {
                out.push(Finding {
                    line: start + k + 1,
                    message: "measured GPU figure in a comment (a time, percentage or \
                              bandwidth on a named GPU): it goes stale; state the reason \
                              and cite BENCHMARKS.md instead"
                        .into(),
                });
            }
        }
    }
    out.sort_by_key(|f| f.line);
    out
}

// ---- developer switches ---------------------------------------------------

static IFNDEF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*#\s*ifndef\s+(CUZK_\w+)").unwrap());
static DEFINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*#\s*define\s+(CUZK_\w+)\s+\S").unwrap());

/// Developer switches in CUDA/C++ `text`: a `#ifndef CUZK_X` that defines a
/// default value for `CUZK_X` (overridable with `-DCUZK_X=...`), or a
/// comment that calls itself one. Include guards define no value.
fn dev_switches(_path: &str, text: &str) -> Vec<Finding> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let overridable = IFNDEF.captures(line).is_some_and(|c| {
            lines
                .get(i + 1)
                .and_then(|n| DEFINE.captures(n))
                .is_some_and(|d| d[1] == c[1])
        });
        if overridable || line.contains("developer switch") {
            out.push(Finding {
                line: i + 1,
                message: "developer switch in a shipped source: keep the chosen code only \
                          (the alternatives' figures stay in BENCHMARKS.md), or make it an \
                          explicit, documented option"
                    .into(),
            });
        }
    }
    out
}

// ---- documentation --------------------------------------------------------

static PUB_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*pub\s+((unsafe|async|const|extern\s+.C.)\s+)*(fn|struct|enum|trait|type|const|static|union|mod\s+\w+\s*\{)\b",
    )
    .unwrap()
});

/// Public items of Rust `text` (not bindgen's `sys.rs`) with no doc comment (`///`, `/** */` or
/// `#[doc]`) above them and their attributes, before the file's test module;
/// a file that does not open with a module doc (`//!`); and `ignore`
/// doctests.
fn undocumented(path: &str, text: &str) -> Vec<Finding> {
    if path.ends_with("/sys.rs") {
        return Vec::new(); // bindgen's output, documented from the headers
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    if !lines
        .iter()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with("//!") || l.trim_start().starts_with("/*!"))
    {
        out.push(Finding {
            line: 1,
            message: "no module doc: open the file with a `//!` line saying what lives there"
                .into(),
        });
    }
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if (t.starts_with("///") || t.starts_with("//!")) && t.contains("```ignore") {
            out.push(Finding {
                line: i + 1,
                message: "an `ignore` doctest: GPU runs pass --include-ignored, which would \
                          compile it; mark it `no_run` (compiled, not run) or `text`"
                    .into(),
            });
        }
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if !PUB_ITEM.is_match(line) {
            continue;
        }
        let mut j = i;
        let documented = loop {
            if j == 0 {
                break false;
            }
            j -= 1;
            let prev = lines[j].trim();
            if prev.starts_with("///") || prev.starts_with("#[doc") || prev.ends_with("*/") {
                break true;
            }
            // Attributes: one line each, or a longer one from its last line
            // up to its `#[`.
            if prev.starts_with("#[") {
                continue;
            }
            if prev.ends_with(']') {
                match (j.saturating_sub(20)..j)
                    .rev()
                    .find(|&k| lines[k].trim().starts_with("#["))
                {
                    Some(k) => {
                        j = k;
                        continue;
                    }
                    None => break false,
                }
            }
            break false;
        };
        if !documented {
            out.push(Finding {
                line: i + 1,
                message: "public item without a doc comment: say what it is, its shapes, \
                          units and errors (or make it pub(crate))"
                    .into(),
            });
        }
    }
    out
}

// ---- C ABI ------------------------------------------------------------------

static C_FN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(cuzk_\w+)\s*\(([^()]*)\)\s*;").unwrap());

/// Functions declared in the C header `text` with more than
/// [`MAX_C_ABI_PARAMS`] parameters.
fn c_abi_params(_path: &str, text: &str) -> Vec<Finding> {
    // Comments blanked (newlines kept), so that offsets give line numbers.
    let mut code = String::with_capacity(text.len());
    let comments = comments(text);
    for (line, comment) in text.lines().zip(&comments) {
        let mut l = line.to_owned();
        if !comment.is_empty() {
            // Blank everything from the comment's start (a line holds code
            // before a comment, never after one in these headers).
            let cut = l.find("//").into_iter().chain(l.find("/*")).min();
            match cut {
                Some(c) => l.truncate(c),
                None => l.clear(),
            }
        }
        code.push_str(&l);
        code.push('\n');
    }
    let mut out = Vec::new();
    for c in C_FN.captures_iter(&code) {
        let params = c[2].trim();
        let n = if params.is_empty() || params == "void" {
            0
        } else {
            params.split(',').count()
        };
        if n > MAX_C_ABI_PARAMS {
            let line = code[..c.get(1).unwrap().start()].matches('\n').count() + 1;
            out.push(Finding {
                line,
                message: format!(
                    "{} takes {n} parameters (at most {MAX_C_ABI_PARAMS}): pass the plan or \
                     configuration as one struct pointer",
                    &c[1]
                ),
            });
        }
    }
    out
}

// ---- the checks over the tree ---------------------------------------------

#[test]
fn no_environment_reads_in_library_code() {
    check("environment reads", &library_sources(), env_reads);
}

#[test]
fn no_work_log_entries_in_comments() {
    check("work-log entries", &all_sources(), work_log);
}

#[test]
fn no_developer_switches_in_csrc() {
    check(
        "developer switches",
        &files("csrc", &C_EXTS).into_iter().collect::<Vec<_>>(),
        dev_switches,
    );
}

#[test]
fn public_items_and_modules_are_documented() {
    let rust: Vec<PathBuf> = library_sources()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    check("documentation", &rust, undocumented);
}

#[test]
fn c_abi_functions_take_at_most_seven_parameters() {
    check(
        "C ABI parameters",
        &files("csrc/include/cuzk", &["h"]),
        c_abi_params,
    );
}

/// `missing_docs` and `unreachable_pub` are workspace lints that every crate
/// takes, and CI's clippy denies warnings: together they fail CI on an
/// undocumented reachable item, which the textual check above approximates.
#[test]
fn workspace_lints_cover_docs_and_visibility() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for lint in ["missing_docs", "unreachable_pub"] {
        assert!(
            manifest.contains(&format!("{lint} = ")),
            "Cargo.toml: [workspace.lints.rust] must set {lint}"
        );
    }
    let test_rs = std::fs::read_to_string(root().join("xtask/src/test.rs")).unwrap();
    assert!(
        test_rs.contains(r#""-D", "warnings""#),
        "xtask/src/test.rs: cargo xtask test must run clippy with -D warnings"
    );
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("Cargo.toml"))
        .collect();
    manifests.extend([
        root().join("tests/Cargo.toml"),
        root().join("xtask/Cargo.toml"),
    ]);
    for m in manifests {
        let text = std::fs::read_to_string(&m).unwrap_or_default();
        assert!(
            text.contains("[lints]\nworkspace = true"),
            "{}: add `[lints]\\nworkspace = true` so the crate takes the workspace lints",
            rel(&m)
        );
    }
}

// ---- the detectors on synthetic text ----------------------------------------

#[cfg(test)]
mod detectors {
    use super::*;

    fn lines(f: Vec<Finding>) -> Vec<usize> {
        f.into_iter().map(|f| f.line).collect()
    }

    #[test]
    fn env_reads_flags_all_but_the_allow_list() {
        let text = "fn f() {\n    let a = std::env::var(\"CUZK_DEVICE_MEMORY_LIMIT\");\n    let b = std::env::var(\"CUZK_MSM_WINDOW\");\n    std::env::set_var(\"CUZK_DEVICE_MEMORY_MARGIN\", \"1\");\n    let c = env::var_os(\n        \"CUZK_DEVICE_MEMORY_MARGIN\",\n    );\n    // env::var(\"IN_A_COMMENT\")\n}\n";
        assert_eq!(lines(env_reads("crates/alloc/src/budget.rs", text)), [3, 4]);
        assert_eq!(
            lines(env_reads("crates/bench/src/main.rs", text)),
            [2, 3, 4, 5]
        );
        let c = "int v() { const char* v = std::getenv(\"CUZK_NTT_VARIANT\"); return 0; }\n";
        assert_eq!(lines(env_reads("csrc/ntt/ntt.cu", c)), [1]);
        assert!(env_reads("csrc/ntt/ntt.cu", "// getenv is not called\n").is_empty());
    }

    #[test]
    fn work_log_flags_sessions_calls_and_gpu_figures() {
        let text = "\
// Passes of at most 8 bits take tiles of 2^10 elements (session 13).
// The grid's loop remains for grids over 2^31.
/* sessions 12 and 13 */
fn f() {} // a call 4) note
// (S12) packed stores
// see BENCHMARKS.md run 11
/// Fewer registers are faster as long as nothing spills: on the H200
/// 2^27 took 36.0 ms against 36.5 ms.
/// Sizes: 17 GiB on an H200 with the default budget.

/// At least one call and 200 ms of warm-up.
/// One call 2 ms later; see Session notes.

/// bases are then most of what crosses PCIe (BENCHMARKS.md, session
/// 27).
";
        assert_eq!(lines(work_log("x.rs", text)), [1, 3, 4, 5, 6, 8, 14]);
        // Ordinary comments: numbers, sizes, calls, steps.
        let fine = "\
/// calls, up to 50, after a warm-up of at least one call and 200 ms.
// Steps 1-3 for n points; step 4 over the buckets.
// cuzk_msm_finish adds the arrays before step 4.
// Sessions of a daemon hold a device each; R = (S2 - S1).
// the H200's 50 MB of L2 holds 2^20 elements.
";
        assert!(
            work_log("x.rs", fine).is_empty(),
            "{:?}",
            work_log("x.rs", fine)
        );
    }

    #[test]
    fn dev_switches_flags_overridable_defaults() {
        let text = "\
#ifndef CUZK_NTT_H
#define CUZK_NTT_H
#ifndef CUZK_NTT_TILE_LOG
#define CUZK_NTT_TILE_LOG 11
#endif
#ifdef CUZK_NTT_OLD_INDEX /* developer switch: the old map */
#endif
constexpr int kTileLog = 11;
";
        assert_eq!(lines(dev_switches("csrc/ntt/ntt.cu", text)), [3, 6]);
    }

    #[test]
    fn undocumented_flags_public_items_and_missing_module_docs() {
        let text = "\
//! The module.

/// Documented.
pub fn a() {}

#[derive(Debug)]
#[cfg_attr(
    test,
    derive(Clone)
)]
/// Documented below its attributes.
pub struct B;

/// Documented above a long attribute.
#[cfg_attr(
    test,
    derive(Clone)
)]
pub struct B2;

/// Documented, then attributes.
#[derive(Debug)]
pub struct C;

pub fn d() {}
pub(crate) fn e() {}
/// ```ignore
pub use x::y;
pub mod m;

#[cfg(test)]
mod tests {
    pub fn helper() {}
}
";
        assert_eq!(lines(undocumented("crates/x/src/lib.rs", text)), [25, 27]);
        assert_eq!(
            lines(undocumented("crates/x/src/a.rs", "pub fn a() {}\n")),
            [1, 1]
        );
    }

    #[test]
    fn c_abi_params_counts_declared_parameters() {
        let text = "\
/* cuzk_doc(a, b, c, d, e, f, g, h); in a comment */
cuzk_status cuzk_ok(int32_t device, const cuzk_plan* plan, void* out,
                    uint64_t n, cudaStream_t stream);
cuzk_status cuzk_long(int a, int b, int c, int d,  // trailing comment, e
                      int e, int f, int g, int h);
uint32_t cuzk_none(void);
";
        let f = c_abi_params("csrc/include/cuzk/x.h", text);
        assert_eq!(lines(f), [4]);
    }
}
