//! Compiles the MSM kernels (csrc/msm) with nvcc, or their CPU-only stubs
//! when the field layer was built without CUDA.

fn main() {
    cuzk_build::build_layer("cuzk-msm", "cuzk_msm_gpu", "msm/msm.cu", "msm/nomsm.cpp");
}
