//! Compiles the NTT kernels (csrc/ntt) with nvcc, or their CPU-only
//! stubs when the field layer was built without CUDA.

fn main() {
    // ntt.cu is one translation unit that includes the .cuh parts beside it:
    // rebuild when any file of csrc/ntt changes.
    println!("cargo:rerun-if-changed=../../csrc/ntt");
    cuzk_build::build_layer("cuzk-ntt", "cuzk_ntt_gpu", "ntt/ntt.cu", "ntt/nontt.cpp");
}
