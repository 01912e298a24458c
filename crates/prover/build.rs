//! Compiles the prover's kernels (csrc/prover: R1CS evaluation, gathers)
//! with nvcc, or their CPU-only stubs when the field layer was built
//! without CUDA.

fn main() {
    println!("cargo:rerun-if-changed=../../csrc/prover");
    cuzk_build::build_layer(
        "cuzk-prover",
        "cuzk_prover_gpu",
        "prover/prover.cu",
        "prover/noprover.cpp",
    );
}
