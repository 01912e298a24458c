//! Per-stage timings of a proof ([`ProofTimings`]) and their `tracing` event.

use std::time::Instant;

/// Where each stage of a proof went, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProofTimings {
    /// Circuit synthesis (zero when the matrices and assignment were given).
    pub witness_ms: f64,
    /// Evaluating `A z`, `B z`, `C z` on the constraints (and the
    /// satisfiability check when asked).
    pub eval_ms: f64,
    /// The quotient H: seven NTTs and the coset division.
    pub h_ntt_ms: f64,
    /// MSM of the A query (G1).
    pub msm_a_ms: f64,
    /// MSM of the B query in G2.
    pub msm_b_g2_ms: f64,
    /// MSM of the B query in G1 (zero when r = 0).
    pub msm_b_g1_ms: f64,
    /// MSM of the H query (G1).
    pub msm_h_ms: f64,
    /// MSM of the L query (G1).
    pub msm_l_ms: f64,
    /// Assembling A, B, C from the MSMs and the key.
    pub assembly_ms: f64,
    /// Bytes of the key's bases streamed from host memory to the GPU for
    /// this proof (the queries the memory budget did not hold; 0 when the
    /// key is resident or on the CPU path); their copies overlap the MSMs
    /// and are inside the MSM times.
    pub streamed_bytes: u64,
}

impl ProofTimings {
    /// Sum of every stage, milliseconds.
    pub fn total_ms(&self) -> f64 {
        self.witness_ms
            + self.eval_ms
            + self.h_ntt_ms
            + self.msm_a_ms
            + self.msm_b_g2_ms
            + self.msm_b_g1_ms
            + self.msm_h_ms
            + self.msm_l_ms
            + self.assembly_ms
    }

    pub(crate) fn emit(&self, backend: &str) {
        tracing::info!(
            target: "cuzk_prover",
            backend,
            witness_ms = self.witness_ms,
            eval_ms = self.eval_ms,
            h_ntt_ms = self.h_ntt_ms,
            msm_a_ms = self.msm_a_ms,
            msm_b_g2_ms = self.msm_b_g2_ms,
            msm_b_g1_ms = self.msm_b_g1_ms,
            msm_h_ms = self.msm_h_ms,
            msm_l_ms = self.msm_l_ms,
            assembly_ms = self.assembly_ms,
            streamed_bytes = self.streamed_bytes,
            total_ms = self.total_ms(),
            "groth16 proof"
        );
    }
}

/// Milliseconds elapsed since `t`.
pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
