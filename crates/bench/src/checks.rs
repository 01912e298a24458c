//! Correctness checks: every comparison of a cuzk result with a reference
//! (arkworks, ark-poly, blst, sppark) is recorded with its verdict; a
//! mismatch fails the run.

use crate::progress;
use std::fmt::Debug;

/// The outcome of one comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// cuzk's result equals the reference's.
    Equal,
    /// They differ; `detail` says where.
    Mismatch { detail: String },
    /// The comparison could not run (no GPU, no reference at this size, ...).
    Skipped { why: String },
}

impl Verdict {
    /// The verdict's name in report.json: `equal`, `mismatch` or `skipped`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Verdict::Equal => "equal",
            Verdict::Mismatch { .. } => "mismatch",
            Verdict::Skipped { .. } => "skipped",
        }
    }
}

/// One recorded comparison.
#[derive(Clone, Debug)]
pub(crate) struct Check {
    /// Layer: field, ntt, msm, prover.
    pub(crate) layer: &'static str,
    /// What was checked: operation and cuzk implementation, e.g.
    /// "G1 MSM 2^20: cuzk GPU (resident bases)".
    pub(crate) name: String,
    /// The reference it was compared with, e.g. "blst Pippenger (CPU)".
    pub(crate) against: &'static str,
    /// Problem size in elements (constraints for the prover).
    pub(crate) size: usize,
    /// The outcome.
    pub(crate) verdict: Verdict,
    /// Seed of the run's random inputs (`--seed` replays them).
    pub(crate) seed: u64,
}

/// The checks of one run.
#[derive(Debug)]
pub(crate) struct Checks {
    seed: u64,
    /// The layer whose first checked cuzk result is to be corrupted
    /// (`--inject-mismatch`); cleared once used.
    inject: Option<String>,
    list: Vec<Check>,
}

/// At most this many characters of a value in a mismatch's detail.
const SHOWN: usize = 240;

fn shown(v: &impl Debug) -> String {
    let s = format!("{v:?}");
    if s.chars().count() > SHOWN {
        format!("{}...", s.chars().take(SHOWN).collect::<String>())
    } else {
        s
    }
}

impl Checks {
    /// An empty collector for a run with inputs from `seed`, corrupting one
    /// result of layer `inject` if given.
    pub(crate) fn new(seed: u64, inject: Option<String>) -> Self {
        Checks {
            seed,
            inject,
            list: Vec::new(),
        }
    }

    /// True once for `layer` when `--inject-mismatch layer` was given: the
    /// caller then corrupts the cuzk result it is about to check.
    pub(crate) fn inject(&mut self, layer: &str) -> bool {
        if self.inject.as_deref() == Some(layer) {
            self.inject = None;
            progress::say(format!(
                "cuzk-bench: --inject-mismatch: corrupting one {layer} result on purpose"
            ));
            true
        } else {
            false
        }
    }

    /// Records a check with a verdict already reached; prints a mismatch
    /// with the seed that replays its inputs.
    pub(crate) fn record(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        against: &'static str,
        size: usize,
        verdict: Verdict,
    ) {
        let c = Check {
            layer,
            name: name.into(),
            against,
            size,
            verdict,
            seed: self.seed,
        };
        if let Verdict::Mismatch { detail } = &c.verdict {
            progress::say(format!(
                "cuzk-bench: MISMATCH in {}: {} differs from {} (size {}): {detail}; \
                 inputs from seed {} (replay: --seed {} --only {})",
                c.layer, c.name, c.against, c.size, c.seed, c.seed, c.layer
            ));
        }
        self.list.push(c);
    }

    /// Compares two values (one result each) and records the verdict.
    pub(crate) fn values<T: PartialEq + Debug>(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        against: &'static str,
        size: usize,
        ours: &T,
        reference: &T,
    ) {
        let verdict = if ours == reference {
            Verdict::Equal
        } else {
            Verdict::Mismatch {
                detail: format!(
                    "cuzk gave {}, the reference {}",
                    shown(ours),
                    shown(reference)
                ),
            }
        };
        self.record(layer, name, against, size, verdict);
    }

    /// Compares two Groth16 proofs and records the verdict: a mismatch names
    /// which of the proof's points (A in G1, B in G2, C in G1) differ and
    /// shows each pair.
    pub(crate) fn proofs(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        against: &'static str,
        size: usize,
        ours: &ark_groth16::Proof<ark_bls12_381::Bls12_381>,
        reference: &ark_groth16::Proof<ark_bls12_381::Bls12_381>,
    ) {
        let mut differ = Vec::new();
        let mut point = |what: &str, same: bool, ours: &dyn Debug, theirs: &dyn Debug| {
            if !same {
                differ.push(format!(
                    "{what}: cuzk {}, the reference {}",
                    shown(&ours),
                    shown(&theirs)
                ));
            }
        };
        point("A", ours.a == reference.a, &ours.a, &reference.a);
        point("B", ours.b == reference.b, &ours.b, &reference.b);
        point("C", ours.c == reference.c, &ours.c, &reference.c);
        let verdict = if differ.is_empty() {
            Verdict::Equal
        } else {
            Verdict::Mismatch {
                detail: format!(
                    "{} of the proof's 3 points differ; {}",
                    differ.len(),
                    differ.join("; ")
                ),
            }
        };
        self.record(layer, name, against, size, verdict);
    }

    /// Compares two slices element by element and records the verdict (a
    /// mismatch names the first differing index and how many differ).
    pub(crate) fn slices<T: PartialEq + Debug>(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        against: &'static str,
        ours: &[T],
        reference: &[T],
    ) {
        let verdict = verdict_of_slices(ours, reference);
        self.record(layer, name, against, reference.len(), verdict);
    }

    /// Records a check that could not run, and why.
    pub(crate) fn skip(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        against: &'static str,
        size: usize,
        why: impl Into<String>,
    ) {
        let why = why.into();
        self.record(layer, name, against, size, Verdict::Skipped { why });
    }

    /// Every check, in the order run.
    pub(crate) fn all(&self) -> &[Check] {
        &self.list
    }

    /// The checks that failed.
    pub(crate) fn mismatches(&self) -> impl Iterator<Item = &Check> {
        self.list
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Mismatch { .. }))
    }

    /// The run's verdict: `pass` when no check failed, else `fail`.
    pub(crate) fn verdict(&self) -> &'static str {
        if self.mismatches().next().is_some() {
            "fail"
        } else {
            "pass"
        }
    }

    /// How many checks have each verdict: (equal, mismatch, skipped).
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        let n = |name: &str| {
            self.list
                .iter()
                .filter(|c| c.verdict.name() == name)
                .count()
        };
        (n("equal"), n("mismatch"), n("skipped"))
    }
}

/// Equal when the slices have the same length and elements; else a
/// mismatch naming the first differing index and the count.
fn verdict_of_slices<T: PartialEq + Debug>(ours: &[T], reference: &[T]) -> Verdict {
    if ours.len() != reference.len() {
        return Verdict::Mismatch {
            detail: format!(
                "cuzk gave {} elements, the reference {}",
                ours.len(),
                reference.len()
            ),
        };
    }
    let mut differ = ours
        .iter()
        .zip(reference)
        .enumerate()
        .filter(|(_, (a, b))| a != b);
    match differ.next() {
        None => Verdict::Equal,
        Some((i, (a, b))) => Verdict::Mismatch {
            detail: format!(
                "{} of {} elements differ; first at index {i}: cuzk {}, reference {}",
                1 + differ.count(),
                ours.len(),
                shown(a),
                shown(b)
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_records_verdicts_and_fails_on_a_mismatch() {
        let mut c = Checks::new(42, None);
        c.values("msm", "G1 MSM 2^4: cuzk", "blst", 16, &3u32, &3u32);
        c.skip("ntt", "NTT 2^4: cuzk GPU", "ark-poly", 16, "no GPU");
        assert_eq!(c.verdict(), "pass");
        assert_eq!(c.counts(), (1, 0, 1));
        c.slices(
            "ntt",
            "NTT 2^2: cuzk",
            "ark-poly",
            &[1, 2, 9, 8],
            &[1, 2, 3, 4],
        );
        assert_eq!(c.verdict(), "fail");
        assert_eq!(c.counts(), (1, 1, 1));
        let bad: Vec<_> = c.mismatches().collect();
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].seed, 42);
        assert_eq!(bad[0].size, 4);
        let Verdict::Mismatch { detail } = &bad[0].verdict else {
            panic!("not a mismatch")
        };
        assert!(
            detail.contains("2 of 4") && detail.contains("index 2"),
            "{detail}"
        );
    }

    #[test]
    fn a_proof_mismatch_names_the_points_that_differ() {
        use ark_ec::{AffineRepr, CurveGroup};
        let g1 = ark_bls12_381::G1Affine::generator();
        let g2 = ark_bls12_381::G2Affine::generator();
        let p = ark_groth16::Proof::<ark_bls12_381::Bls12_381> {
            a: g1,
            b: g2,
            c: (g1 + g1).into_affine(),
        };
        let mut q = p.clone();
        q.b = (g2 + g2).into_affine();
        let mut c = Checks::new(7, None);
        c.proofs("prover", "proof 2^4: cuzk", "supraseal-c2", 16, &p, &p);
        assert_eq!(c.verdict(), "pass");
        c.proofs("prover", "proof 2^4: cuzk", "supraseal-c2", 16, &p, &q);
        let bad: Vec<_> = c.mismatches().collect();
        let Verdict::Mismatch { detail } = &bad[0].verdict else {
            panic!("not a mismatch")
        };
        assert!(
            detail.starts_with("1 of the proof's 3 points differ; B:"),
            "{detail}"
        );
    }

    #[test]
    fn slices_of_other_lengths_differ() {
        assert_eq!(verdict_of_slices(&[1, 2], &[1, 2]), Verdict::Equal);
        assert!(matches!(
            verdict_of_slices(&[1, 2], &[1]),
            Verdict::Mismatch { .. }
        ));
    }

    #[test]
    fn injection_fires_once_for_its_layer() {
        let mut c = Checks::new(1, Some("ntt".into()));
        assert!(!c.inject("msm"));
        assert!(c.inject("ntt"));
        assert!(!c.inject("ntt"));
    }

    #[test]
    fn long_values_are_shortened() {
        let v = vec![7u8; 1000];
        assert!(shown(&v).len() <= SHOWN + 3);
    }
}
