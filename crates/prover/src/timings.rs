//! Per-stage timings of a proof ([`ProofTimings`]) and their `tracing` event.

use std::time::Instant;

/// Where each stage of a proof went, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProofTimings {
    /// Circuit synthesis (zero when the matrices and assignment were given).
    pub witness_ms: f64,
    /// Evaluating `A z`, `B z`, `C z` on the constraints (and the
    /// satisfiability check when asked) on the CPU; with
    /// [`ProofTimings::eval_on_gpu`], only the checks of the job's shape.
    pub eval_ms: f64,
    /// Whether the GPU evaluated `A z`, `B z`, `C z` (see
    /// [`crate::Prover::with_r1cs`]): the assignment's upload and the
    /// evaluations are then inside [`ProofTimings::h_ntt_ms`].
    pub eval_on_gpu: bool,
    /// The quotient H: seven NTTs and the coset division (with
    /// [`ProofTimings::eval_on_gpu`], also the assignment's upload and the
    /// GPU's evaluation of `A z`, `B z`, `C z`).
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
    /// Whether H's MSM ran beside the witness MSMs (A, B, L) on two
    /// engines ([`crate::Prover::with_msm_overlap`]): their times then
    /// overlap, and the MSM stage took about the larger of
    /// [`ProofTimings::msm_h_ms`] and the others' sum.
    pub msm_overlapped: bool,
    /// Assembling A, B, C from the MSMs and the key.
    pub assembly_ms: f64,
    /// Bytes of the key's bases streamed from host memory to the GPU for
    /// this proof (the queries the memory budget did not hold; 0 when the
    /// key is resident or on the CPU path); their copies overlap the MSMs
    /// and are inside the MSM times.
    pub streamed_bytes: u64,
    /// When this proof's GPU stage (the H stage through the last MSM; the
    /// device's work, each step waited for) began and ended, on the host's
    /// monotonic clock; `None` on the CPU path. See [`gpu_busy_fraction`].
    pub gpu_stage: Option<(Instant, Instant)>,
    /// The same stage on the device's clock: milliseconds from the prover's
    /// epoch (a CUDA event recorded when it was built) to CUDA events
    /// recorded on its stream when the stage began and ended; `None` on
    /// the CPU path. Comparable with [`crate::Prover::device_clock_ms`] of
    /// the same prover. See [`gpu_busy_fraction_device`].
    pub gpu_stage_device_ms: Option<(f64, f64)>,
    /// How many proofs (this one included) the batch's witness pass that
    /// ran this proof's witness MSMs (A, B, L) served
    /// ([`crate::MultiGpuProver::with_witness_pass`]); 0 when they ran in
    /// its own GPU stage. With a pass, [`ProofTimings::msm_a_ms`] and the
    /// other witness MSM times are the pass's, shared by those proofs (not
    /// this proof's own), [`ProofTimings::total_ms`] counts their share, and
    /// [`ProofTimings::streamed_bytes`] still counts every witness base
    /// once, though the pass sent them once for all its proofs.
    pub witness_pass_proofs: usize,
    /// Whether that pass ran beside the batch's GPU stages (within room the
    /// lane reserved for it) rather than after them; `false` without a
    /// pass.
    pub witness_pass_beside: bool,
    /// The witness pass's GPU stage on the host's monotonic clock, as
    /// [`ProofTimings::gpu_stage`] (the same for every proof it served);
    /// `None` without a pass.
    pub witness_pass_stage: Option<(Instant, Instant)>,
    /// The witness pass's GPU stage on the device's clock (milliseconds
    /// from the prover's epoch), as [`ProofTimings::gpu_stage_device_ms`];
    /// `None` without a pass.
    pub witness_pass_device_ms: Option<(f64, f64)>,
}

/// The fraction of the device-clock window `[start_ms, end_ms)` (from
/// [`crate::Prover::device_clock_ms`] or
/// [`crate::MultiGpuProver::device_clock_ms`] of one GPU) during which at
/// least one of `timings`' GPU stages ran on that GPU
/// ([`ProofTimings::gpu_stage_device_ms`], the union of the intervals,
/// clipped to the window, over its length): the GPU's busy fraction over a
/// batch, measured by CUDA events. `None` for an empty window or when no
/// proof has device times. Give only the timings of proofs of that GPU's
/// prover (the epochs of two provers differ).
pub fn gpu_busy_fraction_device(
    timings: &[ProofTimings],
    start_ms: f64,
    end_ms: f64,
) -> Option<f64> {
    if end_ms <= start_ms || timings.iter().all(|t| t.gpu_stage_device_ms.is_none()) {
        return None;
    }
    let spans = timings
        .iter()
        .flat_map(|t| [t.gpu_stage_device_ms, t.witness_pass_device_ms])
        .flatten()
        .map(|(a, b)| (a.max(start_ms), b.min(end_ms)))
        .filter(|(a, b)| a < b)
        .collect();
    Some(union_length(spans) / (end_ms - start_ms))
}

/// Total length of the union of intervals `[a, b)`.
fn union_length(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (a, b) in spans {
        current = match current {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = current {
        total += cb - ca;
    }
    total
}

/// The fraction of `[start, end)` during which at least one of `timings`'
/// GPU stages ran (the union of their intervals, clipped to the window,
/// over its length): how busy one GPU was over a batch, given the timings
/// of the proofs it ran. `None` for an empty window or when no proof ran
/// on a GPU. The stages wait for their kernels, so the intervals bound the
/// device's work; gaps inside a stage (host-side steps between kernels)
/// count as busy.
pub fn gpu_busy_fraction(timings: &[ProofTimings], start: Instant, end: Instant) -> Option<f64> {
    if end <= start || timings.iter().all(|t| t.gpu_stage.is_none()) {
        return None;
    }
    let secs = |t: Instant| (t.max(start) - start).as_secs_f64();
    let spans = timings
        .iter()
        .flat_map(|t| [t.gpu_stage, t.witness_pass_stage])
        .flatten()
        .map(|(a, b)| (secs(a), secs(b.min(end))))
        .filter(|(a, b)| a < b)
        .collect();
    Some(union_length(spans) / (end - start).as_secs_f64())
}

impl ProofTimings {
    /// Sum of every stage, milliseconds; with
    /// [`ProofTimings::msm_overlapped`], the MSMs count as the larger of H's
    /// MSM and the witness MSMs' sum (they ran at once); with a witness
    /// pass, the witness MSMs count as the pass's time over the proofs it
    /// served.
    pub fn total_ms(&self) -> f64 {
        let witness = self.msm_a_ms + self.msm_b_g2_ms + self.msm_b_g1_ms + self.msm_l_ms;
        let msms = if self.witness_pass_proofs > 0 {
            self.msm_h_ms + witness / self.witness_pass_proofs as f64
        } else if self.msm_overlapped {
            witness.max(self.msm_h_ms)
        } else {
            witness + self.msm_h_ms
        };
        self.witness_ms + self.eval_ms + self.h_ntt_ms + msms + self.assembly_ms
    }

    pub(crate) fn emit(&self, backend: &str) {
        tracing::info!(
            target: "cuzk_prover",
            backend,
            witness_ms = self.witness_ms,
            eval_ms = self.eval_ms,
            eval_on_gpu = self.eval_on_gpu,
            h_ntt_ms = self.h_ntt_ms,
            msm_a_ms = self.msm_a_ms,
            msm_b_g2_ms = self.msm_b_g2_ms,
            msm_b_g1_ms = self.msm_b_g1_ms,
            msm_h_ms = self.msm_h_ms,
            msm_l_ms = self.msm_l_ms,
            msm_overlapped = self.msm_overlapped,
            witness_pass_proofs = self.witness_pass_proofs,
            witness_pass_beside = self.witness_pass_beside,
            assembly_ms = self.assembly_ms,
            streamed_bytes = self.streamed_bytes,
            total_ms = self.total_ms(),
            "groth16 proof"
        );
    }
}

/// One line of the stages' times in milliseconds: `witness 0.0 ms | eval
/// 3.8 | H (upload, GPU eval, NTT) 7.0 | MSM A 3.9 | B G2 16.4 | B G1 6.2 |
/// H 24.2 | L 6.2 | assembly 1.6 (ms)` (H's label says whether the GPU
/// evaluated `A z`, `B z`, `C z`).
impl std::fmt::Display for ProofTimings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "witness {:.1} ms | eval {:.1} | H {}{:.1} | MSM A {:.1} | B G2 {:.1} | B G1 {:.1} \
             | H {:.1} | L {:.1} | assembly {:.1} (ms)",
            self.witness_ms,
            self.eval_ms,
            if self.eval_on_gpu {
                "(upload, GPU eval, NTT) "
            } else {
                "(NTT) "
            },
            self.h_ntt_ms,
            self.msm_a_ms,
            self.msm_b_g2_ms,
            self.msm_b_g1_ms,
            self.msm_h_ms,
            self.msm_l_ms,
            self.assembly_ms
        )
    }
}

/// Milliseconds elapsed since `t`.
pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn display_is_one_line_of_stages() {
        let t = ProofTimings {
            eval_ms: 3.84,
            eval_on_gpu: true,
            h_ntt_ms: 7.0,
            msm_a_ms: 3.9,
            msm_b_g2_ms: 16.4,
            msm_b_g1_ms: 6.2,
            msm_h_ms: 24.2,
            msm_l_ms: 6.2,
            assembly_ms: 1.6,
            ..ProofTimings::default()
        };
        assert_eq!(
            t.to_string(),
            "witness 0.0 ms | eval 3.8 | H (upload, GPU eval, NTT) 7.0 | MSM A 3.9 | B G2 16.4 \
             | B G1 6.2 | H 24.2 | L 6.2 | assembly 1.6 (ms)"
        );
        let cpu = ProofTimings {
            eval_on_gpu: false,
            ..t
        };
        assert!(cpu.to_string().contains("| H (NTT) 7.0 |"));
    }

    fn stage(t0: Instant, a_ms: u64, b_ms: u64) -> ProofTimings {
        ProofTimings {
            gpu_stage: Some((
                t0 + Duration::from_millis(a_ms),
                t0 + Duration::from_millis(b_ms),
            )),
            ..ProofTimings::default()
        }
    }

    #[test]
    fn overlapped_msms_count_once_in_the_total() {
        let mut t = ProofTimings {
            h_ntt_ms: 100.0,
            msm_h_ms: 400.0,
            msm_a_ms: 50.0,
            msm_b_g2_ms: 100.0,
            msm_b_g1_ms: 50.0,
            msm_l_ms: 100.0,
            assembly_ms: 1.0,
            ..ProofTimings::default()
        };
        assert_eq!(t.total_ms(), 801.0);
        t.msm_overlapped = true;
        assert_eq!(t.total_ms(), 501.0, "H's 400 ms beside the others' 300");
        t.msm_l_ms = 300.0;
        assert_eq!(t.total_ms(), 601.0, "the others' 500 ms beside H's 400");
    }

    #[test]
    fn busy_fraction_is_the_union_of_the_stages() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_millis(100);
        // [10, 30) and [20, 50) overlap: 40 ms; [60, 70): 10; [90, 120)
        // clipped to [90, 100): 10. 60 of 100 ms.
        let ts = [
            stage(t0, 20, 50),
            stage(t0, 10, 30),
            stage(t0, 60, 70),
            stage(t0, 90, 120),
            ProofTimings::default(),
        ];
        let f = gpu_busy_fraction(&ts, t0, end).expect("some GPU stages");
        assert!((f - 0.6).abs() < 1e-9, "{f}");
        assert_eq!(gpu_busy_fraction(&ts, end, t0), None);
        assert_eq!(gpu_busy_fraction(&[ProofTimings::default()], t0, end), None);
        // Back to back and nested stages: all busy.
        let ts = [stage(t0, 0, 50), stage(t0, 50, 100), stage(t0, 10, 20)];
        let f = gpu_busy_fraction(&ts, t0, end).expect("some GPU stages");
        assert!((f - 1.0).abs() < 1e-9, "{f}");
    }

    #[test]
    fn device_busy_fraction_is_the_union_of_the_stages() {
        let stage = |a: f64, b: f64| ProofTimings {
            gpu_stage_device_ms: Some((a, b)),
            ..ProofTimings::default()
        };
        // The host test's stages on a device clock whose window starts at
        // 1000 ms, and one from before the window reaching 5 ms into it: 65
        // of 100 ms busy.
        let ts = [
            stage(1020.0, 1050.0),
            stage(1010.0, 1030.0),
            stage(1060.0, 1070.0),
            stage(1090.0, 1120.0),
            stage(900.0, 1005.0),
            ProofTimings::default(),
        ];
        let f = gpu_busy_fraction_device(&ts, 1000.0, 1100.0).expect("device stages");
        assert!((f - 0.65).abs() < 1e-9, "{f}");
        assert_eq!(gpu_busy_fraction_device(&ts, 1100.0, 1000.0), None);
        assert_eq!(
            gpu_busy_fraction_device(&[ProofTimings::default()], 0.0, 1.0),
            None
        );
    }
}
