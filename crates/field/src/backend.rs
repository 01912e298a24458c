//! [`Backend`]: where a cuzk operation runs, the one notion every crate shares.

/// Where a cuzk operation runs (or ran): the field layer's element-wise
/// operations, an NTT, an MSM or a whole proof.
///
/// Entry points that choose for themselves (`cuzk_ntt::ntt`,
/// `cuzk_msm::msm`, `cuzk_prover::Prover::new`) take the GPU when one is
/// usable and return or report the `Backend` they used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The host's CPU cores (arkworks, blst, or the host build of cuzk's
    /// device formulas).
    Cpu,
    /// The GPU of CUDA device ordinal `device`.
    Gpu {
        /// CUDA device ordinal.
        device: i32,
    },
}

impl Backend {
    /// True for [`Backend::Gpu`].
    pub fn is_gpu(self) -> bool {
        matches!(self, Backend::Gpu { .. })
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Cpu => f.write_str("CPU"),
            Backend::Gpu { device } => write!(f, "GPU {device}"),
        }
    }
}
