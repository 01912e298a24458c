//! Compiles the NTT kernels (csrc/ntt) with nvcc, or their CPU-only
//! stubs when the field layer was built without CUDA.

fn main() {
    cuzk_build::build_layer("cuzk-ntt", "cuzk_ntt_gpu", "ntt/ntt.cu", "ntt/nontt.cpp");
}
