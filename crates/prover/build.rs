//! Compiles the prover's kernels (csrc/prover: R1CS evaluation, gathers)
//! with nvcc, or their CPU-only stubs when the field layer was built
//! without CUDA; and, in every build, the host run of the row evaluation
//! (csrc/prover/host.cpp) that CPU tests check the kernel's code with.

fn main() {
    println!("cargo:rerun-if-changed=../../csrc/prover");
    cuzk_build::build_layer(
        "cuzk-prover",
        "cuzk_prover_gpu",
        "prover/prover.cu",
        "prover/noprover.cpp",
    );
    let include = std::env::var("DEP_CUZK_FIELD_INCLUDE").expect("the crate depends on cuzk-field");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(3)
        .include(include)
        .file("../../csrc/prover/host.cpp")
        .compile("cuzk_prover_host");
}
