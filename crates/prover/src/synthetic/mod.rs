//! Test fixtures (feature `test-utils`): random circuits and random-point proving keys.
//!
//! Synthetic R1CS for tests and benchmarks: a random satisfiable circuit
//! ([`RandomCircuit`]: multiplications, additions with constants, zero
//! coefficients, empty rows, public inputs, unused variables) that
//! ark-relations can synthesize or that builds its matrices directly
//! ([`RandomCircuit::matrices`], fast at 2^24 constraints), and a proving
//! key of random points of the right shape ([`random_key`]: proofs against
//! it time the prover but do not verify); and a circuit shaped like
//! Filecoin PoRep C2's partitions ([`PorepShaped`]: a witness of bits,
//! sparse A and B, built on all cores at 2^27). Keys can be cached on
//! disk where the file system has room ([`cached_key`]).

mod cache;
mod porep;

pub use cache::{cached_key, KeyOrigin};
pub use porep::{is_satisfied, PorepShaped};

use crate::{qap, ConstraintMatrices, Error, Fr, ProvingKey, Result, Synthesized};
use ark_bls12_381::{g1, g2, G1Projective, G2Projective};
use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::CurveGroup;
use ark_ff::{AdditiveGroup, Field, UniformRand};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystemRef, LinearCombination, SynthesisError, Variable,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::time::Instant;

/// A variable of the synthetic circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Var {
    One,
    Input(usize),
    Witness(usize),
}

type Lc = Vec<(Fr, Var)>;

/// A piece of the circuit: [`PIECE`] consecutive constraints (fewer in the
/// last), their witnesses numbered from 0 within the piece, and their rows.
/// Pieces are built on rayon's threads, each from a random stream of its
/// own, so that a 2^26-constraint circuit builds in seconds.
struct Piece {
    witnesses: Vec<Fr>,
    rows: Vec<(Lc, Lc, Lc)>,
}

/// Constraints in a [`Piece`].
const PIECE: usize = 1 << 14;

/// `lc` with the piece's witness numbers moved up by `base` (the witnesses
/// of the pieces before it).
fn shift(lc: Lc, base: usize) -> Lc {
    lc.into_iter()
        .map(|(c, v)| match v {
            Var::Witness(i) => (c, Var::Witness(base + i)),
            v => (c, v),
        })
        .collect()
}

/// Receives the circuit: variables (inputs all first) and constraints.
trait Sink {
    fn input(&mut self, v: Fr) -> Result<()>;
    fn witness(&mut self, v: Fr) -> Result<()>;
    fn constraint(&mut self, a: Lc, b: Lc, c: Lc) -> Result<()>;
    /// Consecutive pieces, each with the number of witnesses before it:
    /// each piece's witnesses, then its constraints.
    fn pieces(&mut self, group: Vec<(Piece, usize)>) -> Result<()> {
        for (piece, base) in group {
            for w in piece.witnesses {
                self.witness(w)?;
            }
            for (a, b, c) in piece.rows {
                self.constraint(shift(a, base), shift(b, base), shift(c, base))?;
            }
        }
        Ok(())
    }
}

/// A random satisfiable R1CS circuit, determined by its fields (`seed`
/// included): the same structure in setup and prove mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomCircuit {
    /// Public inputs (besides the constant one).
    pub num_inputs: usize,
    /// Constraints.
    pub num_constraints: usize,
    /// Witness variables allocated but never constrained.
    pub num_unused: usize,
    /// Seed of the structure (operands, coefficients): circuits of equal
    /// sizes and seeds share one proving key.
    pub seed: u64,
    /// Seed of the values (public inputs, unused witnesses): partitions of
    /// one circuit differ here.
    pub values_seed: u64,
}

impl RandomCircuit {
    /// The largest number of constraints whose domain (with the inputs and
    /// the constant one) is 2^log_n: none where the inputs fill it (a valid
    /// circuit of inputs only). A domain beyond Fr's 2^32 roots of unity
    /// makes a circuit whose build fails ([`RandomCircuit::matrices`] with
    /// [`Error::InvalidArgument`], ark-relations' synthesis with
    /// `SynthesisError::Unsatisfiable`).
    pub fn fill_domain(log_n: u32, num_inputs: usize, num_unused: usize, seed: u64) -> Self {
        RandomCircuit {
            num_inputs,
            num_constraints: domain_less(log_n, num_inputs.saturating_add(1)),
            num_unused,
            seed,
            values_seed: seed ^ 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// Walks the circuit: the public inputs, then the constraints in
    /// [`Piece`]s (built a group at a time on rayon's threads, handed to
    /// `sink` in order), then the unused witnesses.
    fn build(&self, sink: &mut impl Sink) -> Result<()> {
        crate::qap::domain_log_size(self.num_constraints, self.num_inputs.saturating_add(1))?;
        let mut vrng = StdRng::seed_from_u64(self.values_seed);
        // The variables every piece may pick: One and the public inputs.
        let mut inputs: Vec<(Var, Fr)> = vec![(Var::One, Fr::ONE)];
        for i in 0..self.num_inputs {
            let v = Fr::rand(&mut vrng);
            sink.input(v)?;
            inputs.push((Var::Input(i), v));
        }
        let pieces = self.num_constraints.div_ceil(PIECE);
        // A few pieces a thread at a time: the rows of a group wait in
        // memory only until the sink takes them.
        let group = 4 * rayon::current_num_threads().max(1);
        let mut nw = 0usize;
        for first in (0..pieces).step_by(group) {
            let built: Vec<Piece> = (first..pieces.min(first + group))
                .into_par_iter()
                .map(|p| self.piece(p, &inputs))
                .collect();
            let mut with_base = Vec::with_capacity(built.len());
            for piece in built {
                let base = nw;
                nw += piece.witnesses.len();
                with_base.push((piece, base));
            }
            sink.pieces(with_base)?;
        }
        for _ in 0..self.num_unused {
            sink.witness(Fr::rand(&mut vrng))?;
        }
        Ok(())
    }

    /// Piece `p` of the circuit: every constraint allocates one witness
    /// (or none), defined from the inputs and the piece's earlier
    /// witnesses, mostly recent ones (a chain).
    fn piece(&self, p: usize, inputs: &[(Var, Fr)]) -> Piece {
        let len = PIECE.min(self.num_constraints - p * PIECE);
        // The piece's own stream: the structure seed and the piece's index.
        let mut rng =
            StdRng::seed_from_u64(self.seed ^ (p as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
        let mut vals: Vec<(Var, Fr)> = Vec::with_capacity(inputs.len() + len);
        vals.extend_from_slice(inputs);
        let mut piece = Piece {
            witnesses: Vec::with_capacity(len),
            rows: Vec::with_capacity(len),
        };
        let coeff = |rng: &mut StdRng| -> Fr {
            match rng.gen_range(0..4) {
                0 => Fr::ONE,
                1 => -Fr::ONE,
                _ => Fr::rand(rng),
            }
        };
        for _ in 0..len {
            // Operands from anywhere, but mostly recent ones (a chain).
            let pick = |rng: &mut StdRng, vals: &[(Var, Fr)]| -> (Var, Fr) {
                let n = vals.len();
                if rng.gen_bool(0.5) {
                    vals[n - 1 - rng.gen_range(0..n.min(8))]
                } else {
                    vals[rng.gen_range(0..n)]
                }
            };
            let (x, xv) = pick(&mut rng, &vals);
            let (y, yv) = pick(&mut rng, &vals);
            let kind = rng.gen_range(0..16);
            if kind < 9 {
                // (ca x [+ 0 y]) * (cb y) = (ca cb) w, w = x y
                let (ca, cb) = (coeff(&mut rng), coeff(&mut rng));
                let w = xv * yv;
                let wv = Var::Witness(piece.witnesses.len());
                piece.witnesses.push(w);
                let mut a = vec![(ca, x)];
                if kind == 0 {
                    a.push((Fr::ZERO, y));
                }
                piece.rows.push((a, vec![(cb, y)], vec![(ca * cb, wv)]));
                vals.push((wv, w));
            } else if kind < 15 {
                // (ca x + cb y + cc) * 1 = w
                let (ca, cb, cc) = (coeff(&mut rng), coeff(&mut rng), Fr::rand(&mut rng));
                let w = ca * xv + cb * yv + cc;
                let wv = Var::Witness(piece.witnesses.len());
                piece.witnesses.push(w);
                piece.rows.push((
                    vec![(ca, x), (cb, y), (cc, Var::One)],
                    vec![(Fr::ONE, Var::One)],
                    vec![(Fr::ONE, wv)],
                ));
                vals.push((wv, w));
            } else {
                // An empty row: x * 0 = 0.
                piece.rows.push((vec![(Fr::ONE, x)], vec![], vec![]));
            }
        }
        piece
    }

    /// Matrices and full assignment built directly (no ark-relations): the
    /// same system ark-relations synthesizes, up to the order of terms in a
    /// row. Linear in the number of constraints.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the constraints and inputs need a
    /// domain beyond Fr's 2^32 roots of unity.
    pub fn matrices(&self) -> Result<Synthesized> {
        let t = Instant::now();
        struct M {
            ni: usize,
            z: Vec<Fr>,
            m: ConstraintMatrices,
        }
        /// A row with variables as assignment indices: the constant one,
        /// the inputs, then the witnesses (the piece's from `base`).
        fn row(lc: Lc, ni: usize, base: usize) -> Vec<(Fr, usize)> {
            lc.into_iter()
                .map(|(c, v)| {
                    let j = match v {
                        Var::One => 0,
                        Var::Input(i) => 1 + i,
                        Var::Witness(i) => ni + base + i,
                    };
                    (c, j)
                })
                .collect()
        }
        type Rows = Vec<Vec<(Fr, usize)>>;
        impl Sink for M {
            fn input(&mut self, v: Fr) -> Result<()> {
                self.z.push(v);
                Ok(())
            }
            fn witness(&mut self, v: Fr) -> Result<()> {
                self.z.push(v);
                Ok(())
            }
            fn constraint(&mut self, a: Lc, b: Lc, c: Lc) -> Result<()> {
                let ni = self.ni;
                self.m.a.push(row(a, ni, 0));
                self.m.b.push(row(b, ni, 0));
                self.m.c.push(row(c, ni, 0));
                self.m.num_constraints += 1;
                Ok(())
            }
            /// The rows converted on rayon's threads, then appended in
            /// order.
            fn pieces(&mut self, group: Vec<(Piece, usize)>) -> Result<()> {
                let ni = self.ni;
                let converted: Vec<(Vec<Fr>, Rows, Rows, Rows)> = group
                    .into_par_iter()
                    .map(|(piece, base)| {
                        let n = piece.rows.len();
                        let (mut a, mut b, mut c) = (
                            Vec::with_capacity(n),
                            Vec::with_capacity(n),
                            Vec::with_capacity(n),
                        );
                        for (ra, rb, rc) in piece.rows {
                            a.push(row(ra, ni, base));
                            b.push(row(rb, ni, base));
                            c.push(row(rc, ni, base));
                        }
                        (piece.witnesses, a, b, c)
                    })
                    .collect();
                for (w, a, b, c) in converted {
                    self.z.extend(w);
                    self.m.num_constraints += a.len();
                    self.m.a.extend(a);
                    self.m.b.extend(b);
                    self.m.c.extend(c);
                }
                Ok(())
            }
        }
        let mut m = M {
            ni: self.num_inputs + 1,
            z: vec![Fr::ONE],
            m: ConstraintMatrices::default(),
        };
        self.build(&mut m)?;
        Ok(Synthesized {
            matrices: m.m,
            full_assignment: m.z,
            num_inputs: self.num_inputs + 1,
            synthesis_ms: crate::timings::ms(t),
        })
    }

    /// Number of witness variables.
    pub fn num_witness(&self) -> Result<usize> {
        struct Count(usize);
        impl Sink for Count {
            fn input(&mut self, _: Fr) -> Result<()> {
                Ok(())
            }
            fn witness(&mut self, _: Fr) -> Result<()> {
                self.0 += 1;
                Ok(())
            }
            fn constraint(&mut self, _: Lc, _: Lc, _: Lc) -> Result<()> {
                Ok(())
            }
        }
        let mut c = Count(0);
        self.build(&mut c)?;
        Ok(c.0)
    }
}

impl ConstraintSynthesizer<Fr> for RandomCircuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        struct Cs {
            cs: ConstraintSystemRef<Fr>,
            inputs: Vec<Variable>,
            witnesses: Vec<Variable>,
            err: Option<SynthesisError>,
        }
        impl Cs {
            fn lc(&self, lc: Lc) -> LinearCombination<Fr> {
                LinearCombination(
                    lc.into_iter()
                        .map(|(c, v)| {
                            let var = match v {
                                Var::One => Variable::One,
                                Var::Input(i) => self.inputs[i],
                                Var::Witness(i) => self.witnesses[i],
                            };
                            (c, var)
                        })
                        .collect(),
                )
            }
            fn fail(&mut self, e: SynthesisError) -> Error {
                let msg = e.to_string();
                self.err = Some(e);
                Error::InvalidArgument(msg)
            }
        }
        impl Sink for Cs {
            fn input(&mut self, v: Fr) -> Result<()> {
                match self.cs.new_input_variable(|| Ok(v)) {
                    Ok(x) => {
                        self.inputs.push(x);
                        Ok(())
                    }
                    Err(e) => Err(self.fail(e)),
                }
            }
            fn witness(&mut self, v: Fr) -> Result<()> {
                match self.cs.new_witness_variable(|| Ok(v)) {
                    Ok(x) => {
                        self.witnesses.push(x);
                        Ok(())
                    }
                    Err(e) => Err(self.fail(e)),
                }
            }
            fn constraint(&mut self, a: Lc, b: Lc, c: Lc) -> Result<()> {
                let (a, b, c) = (self.lc(a), self.lc(b), self.lc(c));
                match self.cs.enforce_r1cs_constraint(|| a, || b, || c) {
                    Ok(()) => Ok(()),
                    Err(e) => Err(self.fail(e)),
                }
            }
        }
        let mut s = Cs {
            cs,
            inputs: vec![],
            witnesses: vec![],
            err: None,
        };
        match self.build(&mut s) {
            Ok(()) => Ok(()),
            Err(_) => Err(s.err.take().unwrap_or(SynthesisError::Unsatisfiable)),
        }
    }
}

/// 2^`log_n` less `instance`, saturating: `usize::MAX` where 2^`log_n`
/// exceeds `usize` (a size that [`crate::qap::domain_log_size`] rejects),
/// 0 where `instance` fills the domain.
pub(crate) fn domain_less(log_n: u32, instance: usize) -> usize {
    1usize
        .checked_shl(log_n)
        .map_or(usize::MAX, |n| n.saturating_sub(instance))
}

/// `count` distinct pseudo-random points of the prime-order subgroup, in
/// parallel chunks of [`CHUNK`]: point j of chunk k is `t_j + b_k`, with
/// `t_j = t + j step` (one table for every chunk) and `b_k = b + k step'`
/// (t, step, b, step' random). Each chunk's sums are affine additions
/// sharing one field inversion (Montgomery's batch inversion: about six
/// multiplications a point, against about twenty for a projective addition
/// and its normalization). Two outputs are equal only if `(j - j') step =
/// (k' - k) step'`, a discrete-logarithm relation between random points.
fn progression<P: SWCurveConfig>(count: usize, rng: &mut impl Rng) -> Vec<Affine<P>>
where
    P::ScalarField: From<u64>,
{
    let table_len = count.min(CHUNK);
    let table = {
        let (t, step) = (Projective::<P>::rand(rng), Projective::<P>::rand(rng));
        let mut p = t;
        let proj: Vec<Projective<P>> = (0..table_len)
            .map(|_| {
                let q = p;
                p += step;
                q
            })
            .collect();
        Projective::<P>::normalize_batch(&proj)
    };
    let (b, step) = (Projective::<P>::rand(rng), Projective::<P>::rand(rng));
    // Written first on every core: the first touch of tens of GB of fresh
    // pages is a single thread's work otherwise.
    let mut out: Vec<Affine<P>> = (0..count)
        .into_par_iter()
        .map(|_| Affine::<P>::identity())
        .collect();
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, c)| {
        let base = (b + step * P::ScalarField::from(k as u64)).into_affine();
        chunk_sums(&table[..c.len()], &base, c);
    });
    out
}

/// Points of one [`progression`] chunk: `out[j] = table[j] + base`
/// (affine addition with one shared inversion; a pair whose x coordinates
/// agree, doubling or cancelling, goes through a projective addition).
fn chunk_sums<P: SWCurveConfig>(table: &[Affine<P>], base: &Affine<P>, out: &mut [Affine<P>]) {
    let mut den: Vec<P::BaseField> = table.iter().map(|t| t.x - base.x).collect();
    ark_ff::batch_inversion(&mut den);
    for ((o, t), inv) in out.iter_mut().zip(table).zip(&den) {
        *o = if t.x == base.x {
            (*t + *base).into_affine()
        } else {
            let l = (t.y - base.y) * inv;
            let x = l.square() - t.x - base.x;
            let y = l * (base.x - x) - base.y;
            Affine::<P>::new_unchecked(x, y)
        };
    }
}

/// Points a [`progression`] chunk holds (one table of this many points
/// serves every chunk).
const CHUNK: usize = 1 << 14;

/// A proving key of random points shaped for `num_inputs` instance
/// variables (the constant one included), `num_witness` witness variables
/// and `num_constraints` constraints. Proofs against it exercise every
/// stage of the prover at full size but do not verify.
///
/// # Errors
/// [`Error::InvalidArgument`] when the domain exceeds 2^32.
pub fn random_key(
    num_inputs: usize,
    num_witness: usize,
    num_constraints: usize,
    rng: &mut impl Rng,
) -> Result<ProvingKey> {
    if num_inputs == 0 {
        return Err(Error::InvalidArgument(
            "num_inputs counts the constant one: at least 1".into(),
        ));
    }
    let log_n = qap::domain_log_size(num_constraints, num_inputs)?;
    let nv = num_inputs + num_witness;
    let g1 = |n: usize, rng: &mut _| progression::<g1::Config>(n, rng);
    let g1p = |rng: &mut _| G1Projective::rand(rng).into_affine();
    let g2p = |rng: &mut _| G2Projective::rand(rng).into_affine();
    let vk = ark_groth16::VerifyingKey {
        alpha_g1: g1p(rng),
        beta_g2: g2p(rng),
        gamma_g2: g2p(rng),
        delta_g2: g2p(rng),
        gamma_abc_g1: g1(num_inputs, rng),
    };
    Ok(ProvingKey {
        vk,
        beta_g1: g1p(rng),
        delta_g1: g1p(rng),
        a_query: g1(nv, rng),
        b_g1_query: g1(nv, rng),
        b_g2_query: progression::<g2::Config>(nv, rng),
        h_query: g1((1usize << log_n) - 1, rng),
        l_query: g1(num_witness, rng),
    })
}

/// [`random_key`] shaped for the synthesized system `w`: its instance and
/// witness variable counts and its number of constraints.
///
/// # Errors
/// [`Error::InvalidArgument`] when `w.num_inputs` exceeds its assignment or
/// the domain exceeds 2^32.
pub fn random_key_for(w: &Synthesized, rng: &mut impl Rng) -> Result<ProvingKey> {
    let num_witness = w
        .full_assignment
        .len()
        .checked_sub(w.num_inputs)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} inputs but only {} variables in the assignment",
                w.num_inputs,
                w.full_assignment.len()
            ))
        })?;
    random_key(w.num_inputs, num_witness, w.matrices.num_constraints, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::AffineRepr;
    use rand_chacha::ChaCha20Rng;

    /// Domains beyond Fr's 2^32 roots of unity (2^64 and above included,
    /// which do not fit a usize) are errors before anything is built; a
    /// domain the inputs fill is a circuit of inputs only.
    #[test]
    fn bad_domains_are_errors() {
        let inputs_only = RandomCircuit::fill_domain(1, 3, 7, 1).matrices().unwrap();
        assert_eq!(inputs_only.matrices.num_constraints, 0);
        for (log_n, says) in [
            (33, "more than Fr's 2^32"),
            (40, "more than Fr's 2^32"),
            (64, "beyond usize"),
            (99, "beyond usize"),
        ] {
            let e = RandomCircuit::fill_domain(log_n, 8, 0, 1)
                .matrices()
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "2^{log_n}: {e}");
        }
        for log_n in [33, 64, 99] {
            let e = PorepShaped::new(log_n, 1, 1)
                .matrices()
                .unwrap_err()
                .to_string();
            assert!(e.contains("up to 2^32"), "2^{log_n}: {e}");
        }
    }

    /// Over several pieces (a partial last one), the matrices built
    /// directly are ark-relations' synthesis of the same circuit (the same
    /// assignment, the same rows up to the order of their terms), the
    /// system is satisfied, and the number of witnesses agrees. ark-relations
    /// drops the zero coefficients that the direct build keeps.
    #[test]
    fn pieces_match_ark_relations() {
        let c = RandomCircuit {
            num_inputs: 3,
            num_constraints: 2 * PIECE + 37,
            num_unused: 5,
            seed: 11,
            values_seed: 12,
        };
        let direct = c.matrices().expect("builds");
        let ark = crate::synthesize(c, true).expect("ark-relations synthesizes");
        assert_eq!(direct.full_assignment, ark.full_assignment);
        assert_eq!(direct.num_inputs, ark.num_inputs);
        let (d, a) = (&direct.matrices, &ark.matrices);
        assert_eq!(d.num_constraints, c.num_constraints);
        assert_eq!(a.num_constraints, c.num_constraints);
        let sorted = |r: &Vec<(Fr, usize)>| {
            let mut r: Vec<(usize, Fr)> = r
                .iter()
                .filter(|(f, _)| *f != Fr::ZERO)
                .map(|&(f, j)| (j, f))
                .collect();
            r.sort_by_key(|&(j, f)| (j, f.to_string()));
            r
        };
        for (i, (dm, am)) in [(&d.a, &a.a), (&d.b, &a.b), (&d.c, &a.c)]
            .into_iter()
            .enumerate()
        {
            assert_eq!(dm.len(), am.len(), "matrix {i}");
            for (row, (x, y)) in dm.iter().zip(am.iter()).enumerate() {
                assert_eq!(sorted(x), sorted(y), "matrix {i}, row {row}");
            }
        }
        assert!(is_satisfied(&direct));
        assert_eq!(
            c.num_witness().expect("counts"),
            direct.full_assignment.len() - direct.num_inputs
        );
    }

    /// Each chunk sum equals the projective sum, the cases of equal x
    /// (doubling, cancelling) included.
    fn chunk_sums_match<P: SWCurveConfig>(rng: &mut ChaCha20Rng) {
        let base = Projective::<P>::rand(rng).into_affine();
        let mut table: Vec<Affine<P>> = (0..64)
            .map(|_| Projective::<P>::rand(rng).into_affine())
            .collect();
        table[3] = base;
        table[7] = -base;
        let mut out = vec![Affine::<P>::identity(); table.len()];
        chunk_sums(&table, &base, &mut out);
        for (j, (o, t)) in out.iter().zip(&table).enumerate() {
            assert_eq!(*o, (*t + base).into_affine(), "entry {j}");
        }
        assert!(out[7].is_zero(), "t + (-t) is the identity");
    }

    #[test]
    fn chunk_sums_are_point_additions() {
        let mut rng = <ChaCha20Rng as SeedableRng>::seed_from_u64(7);
        chunk_sums_match::<g1::Config>(&mut rng);
        chunk_sums_match::<g2::Config>(&mut rng);
    }

    /// Distinct points of the prime-order subgroup, over more than one
    /// chunk and a partial last one.
    fn progression_is_distinct<P: SWCurveConfig>(rng: &mut ChaCha20Rng)
    where
        P::ScalarField: From<u64>,
    {
        let n = 2 * CHUNK + 5;
        let pts = progression::<P>(n, rng);
        assert_eq!(pts.len(), n);
        for p in pts.iter().step_by(97).chain(pts.last()) {
            assert!(p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve());
            assert!(!p.is_zero());
        }
        let mut xs: Vec<String> = pts.iter().map(|p| p.x.to_string()).collect();
        xs.sort_unstable();
        xs.dedup();
        assert_eq!(
            xs.len(),
            n,
            "every point distinct (by x: no two are p, -p either)"
        );
    }

    #[test]
    fn progression_gives_distinct_subgroup_points() {
        let mut rng = <ChaCha20Rng as SeedableRng>::seed_from_u64(8);
        progression_is_distinct::<g1::Config>(&mut rng);
        progression_is_distinct::<g2::Config>(&mut rng);
    }
}
