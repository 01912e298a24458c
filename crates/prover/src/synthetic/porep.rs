//! A circuit shaped like Filecoin PoRep C2's partitions, for benchmarks at
//! their scale (2^27 constraints): a witness of bits, sparse A and B.
//!
//! Filecoin's partition circuit is mostly SHA-256 (and Poseidon) gadgets
//! over bits. This circuit keeps what matters to a prover's cost and
//! nothing else: blocks of 2^14 constraints, each starting from 64 random
//! bits (each with a booleanity constraint `b (1 - b) = 0`) and going on
//! with XOR (`2x y = x + y - z`), AND (`x y = z`) and OR (`x y = x + y -
//! z`) gates over bits of the same block's recent past, plus rare packings
//! of 32 bits into one value (`1 * sum_i 2^i b_i = v`), and booleanity
//! checks of recent bits that allocate nothing (2 of every 5 constraints
//! after the seed bits), so that the variables number about 0.6 of the
//! constraints and the key matches Filecoin's in size (about 47 GiB at
//! 2^27). The gates' mix gives the SHA-256 chain's witness shape (cuzk-prover's bundled chain:
//! about 58% zeros, 42% ones, 0.06% other). Public input
//! i packs the first 64 bits of block i. Blocks are independent, so the
//! matrices and the witness are built on all cores: 2^27 constraints in
//! well under a minute on 16.

use crate::synthetic::random_key_for;
use crate::{ConstraintMatrices, Error, Fr, ProvingKey, Result, Synthesized};
use ark_ec::AffineRepr;
use ark_ff::{AdditiveGroup, One, Zero};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::time::Instant;

/// Constraints a block.
const BLOCK: usize = 1 << 14;
/// Random bits that start a block.
const SEED_BITS: usize = 64;
/// Operands are drawn from the last this many variables of the block.
const WINDOW: usize = 512;
/// Packings per million constraints (the "other" values).
const PACK_PER_MILLION: u32 = 600;
/// Bits a packing sums.
const PACK_BITS: usize = 32;
/// Of every [`CHECK_PERIOD`] constraints after a block's seed bits, the
/// first this many are booleanity checks `b (1 - b) = 0` of a recent bit,
/// which allocate no variable: the circuit then has about 0.6 variables a
/// constraint, and its key at 2^27 about Filecoin's size (47 GiB: 2^27 H
/// points and 0.6 x 2^27 A, B (G1, G2) and L points).
const CHECKS_PER_PERIOD: usize = 2;
/// See [`CHECKS_PER_PERIOD`].
const CHECK_PERIOD: usize = 5;
/// Gates: XOR below this percentile, AND up to the next, OR above. With p
/// the share of ones among a block's bits, the next gate's output is 1
/// with probability 0.5 (2p(1 - p)) + 0.32 p^2 + 0.18 (2p - p^2), whose
/// fixed point is p = 0.36 / 0.86 = 0.419: the SHA-256 chain's 42% ones.
const XOR_PERCENT: u32 = 50;
/// See [`XOR_PERCENT`].
const AND_PERCENT_END: u32 = 82;

/// A PoRep-shaped circuit of 2^`log_domain` QAP domain (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PorepShaped {
    /// log2 of the QAP domain: the constraints fill it with the inputs.
    pub log_domain: u32,
    /// Public inputs (besides the constant one); at most one a block.
    pub num_inputs: usize,
    /// Seed of the structure (which variables each gate takes): circuits
    /// of equal sizes and seeds share one key.
    pub seed: u64,
    /// Seed of the values (the blocks' starting bits): partitions of one
    /// circuit differ here.
    pub values_seed: u64,
}

/// One block's rows and its witness values.
struct Block {
    a: Vec<Vec<(Fr, usize)>>,
    b: Vec<Vec<(Fr, usize)>>,
    c: Vec<Vec<(Fr, usize)>>,
    w: Vec<Fr>,
    /// The packed value of the first 64 bits (the block's public input, if
    /// it has one).
    input: Fr,
}

impl PorepShaped {
    /// The generator's version: it changes whenever the circuit's
    /// structure, its witness or its key's density change, so that keys
    /// cached under names that carry it ([`crate::synthetic::cached_key`])
    /// are never taken for another version's.
    pub const SHAPE_VERSION: u32 = 2;

    /// The circuit whose constraints and `num_inputs` public inputs fill a
    /// domain of 2^`log_domain`.
    pub fn new(log_domain: u32, num_inputs: usize, seed: u64) -> Self {
        PorepShaped {
            log_domain,
            num_inputs,
            seed,
            values_seed: seed ^ 0x5851_f42d_4c95_7f2d,
        }
    }

    /// Constraints: the domain less the instance variables.
    pub fn num_constraints(&self) -> usize {
        super::domain_less(self.log_domain, self.num_inputs.saturating_add(1))
    }

    /// Host memory (bytes) that building this circuit takes at least, for
    /// a check before the work starts: its rows ([`PorepShaped::matrices`]:
    /// three `Vec`s a constraint, 72 bytes, holding at least three
    /// (coefficient, column) entries of 40 bytes between them), its
    /// assignment (at least half a variable a constraint, 32 bytes each)
    /// and, with `with_key`, its random-point key
    /// ([`PorepShaped::random_key`]: a 96-byte H point a constraint, and
    /// 3 x 96 + 192 bytes a variable for A, B in G1, L and B in G2). A lower
    /// bound: at 2^27 it gives 73 GB, where the rows took about 40 GB and
    /// the key about 49 GB (BENCHMARKS.md). Saturates at `u64::MAX`.
    pub fn host_bytes_at_least(&self, with_key: bool) -> u64 {
        let n = self.num_constraints() as u128;
        let (rows, assignment) = (n * (72 + 3 * 40), n / 2 * 32);
        let key = if with_key {
            n * 96 + n / 2 * (3 * 96 + 192)
        } else {
            0
        };
        u64::try_from(rows + assignment + key).unwrap_or(u64::MAX)
    }

    fn blocks(&self) -> usize {
        self.num_constraints().div_ceil(BLOCK)
    }

    /// Whether this circuit can be built, checked before any work (as
    /// [`PorepShaped::matrices`] does first).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a domain beyond Fr's 2^32, one too
    /// small for a block's seed bits, more public inputs than blocks, or a
    /// last block too short for its seed bits and a packing.
    pub fn check(&self) -> Result<()> {
        if self.log_domain > cuzk_ntt::MAX_LOG_N {
            return Err(Error::InvalidArgument(format!(
                "a PoRep-shaped circuit of 2^{} domain: Fr's roots of unity allow domains up to \
                 2^{} (the seed workload's is 2^27)",
                self.log_domain,
                cuzk_ntt::MAX_LOG_N
            )));
        }
        let n = self.num_constraints();
        if n < SEED_BITS + 2 {
            return Err(Error::InvalidArgument(format!(
                "a PoRep-shaped circuit of 2^{} domain has {n} constraints: give a larger domain",
                self.log_domain
            )));
        }
        // The last block must hold its seed bits and a packing.
        let last = n - (self.blocks() - 1) * BLOCK;
        if self.num_inputs > self.blocks() || (last < SEED_BITS + 2 && self.blocks() > 1) {
            return Err(Error::InvalidArgument(format!(
                "{} public inputs in a PoRep-shaped circuit of {} blocks: give at most one a \
                 block, or a domain that fills its last block",
                self.num_inputs,
                self.blocks()
            )));
        }
        Ok(())
    }

    /// Whether gate `j` of a block (its constraints less the input
    /// packing) is a booleanity check, allocating no variable.
    fn is_check(j: usize) -> bool {
        j >= SEED_BITS && (j - SEED_BITS) % CHECK_PERIOD < CHECKS_PER_PERIOD
    }

    /// Variables a block of `gates` gates allocates.
    fn allocated(gates: usize) -> usize {
        let after = gates.saturating_sub(SEED_BITS);
        let checks = (after / CHECK_PERIOD) * CHECKS_PER_PERIOD
            + (after % CHECK_PERIOD).min(CHECKS_PER_PERIOD);
        gates - checks
    }

    /// Block `k`: `len` constraints, its witness variables from column
    /// `first` on.
    fn block(&self, k: usize, len: usize, first: usize) -> Block {
        let mut rng = StdRng::seed_from_u64(self.seed ^ (k as u64).wrapping_mul(0x9e37_79b9));
        let mut vrng =
            StdRng::seed_from_u64(self.values_seed ^ (k as u64).wrapping_mul(0xc2b2_ae35));
        let has_input = k < self.num_inputs;
        let gates = len - usize::from(has_input);
        let mut blk = Block {
            a: Vec::with_capacity(len),
            b: Vec::with_capacity(len),
            c: Vec::with_capacity(len),
            w: Vec::with_capacity(Self::allocated(gates)),
            input: Fr::zero(),
        };
        let mut is_bit: Vec<bool> = Vec::with_capacity(Self::allocated(gates));
        let one = Fr::one();
        let two = Fr::from(2u64);
        for j in 0..gates {
            // The next variable's index in the block, and its column.
            let nw = blk.w.len();
            let col = first + nw;
            if j < SEED_BITS {
                let v = if vrng.gen::<bool>() { one } else { Fr::zero() };
                blk.a.push(vec![(one, col)]);
                blk.b.push(vec![(one, 0), (-one, col)]);
                blk.c.push(Vec::new());
                blk.w.push(v);
                is_bit.push(true);
                continue;
            }
            // A recent bit of this block.
            let pick = |rng: &mut StdRng| loop {
                let i = nw - 1 - rng.gen_range(0..nw.min(WINDOW));
                if is_bit[i] {
                    return i;
                }
            };
            if Self::is_check(j) {
                let x = pick(&mut rng);
                blk.a.push(vec![(one, first + x)]);
                blk.b.push(vec![(one, 0), (-one, first + x)]);
                blk.c.push(Vec::new());
                continue;
            }
            let r = rng.gen_range(0..1_000_000u32);
            if r < PACK_PER_MILLION {
                let bits: Vec<usize> = (0..PACK_BITS).map(|_| pick(&mut rng)).collect();
                let mut v = Fr::zero();
                let mut row = Vec::with_capacity(PACK_BITS);
                let mut coeff = one;
                for &i in &bits {
                    v += coeff * blk.w[i];
                    row.push((coeff, first + i));
                    coeff.double_in_place();
                }
                blk.a.push(vec![(one, 0)]);
                blk.b.push(row);
                blk.c.push(vec![(one, col)]);
                blk.w.push(v);
                is_bit.push(false);
            } else {
                let (x, y) = (pick(&mut rng), pick(&mut rng));
                let (vx, vy) = (blk.w[x], blk.w[y]);
                let vz = match rng.gen_range(0..100u32) {
                    // XOR: 2x y = x + y - z.
                    0..XOR_PERCENT => {
                        blk.a.push(vec![(two, first + x)]);
                        blk.c
                            .push(vec![(one, first + x), (one, first + y), (-one, col)]);
                        vx + vy - two * vx * vy
                    }
                    // AND: x y = z.
                    XOR_PERCENT..AND_PERCENT_END => {
                        blk.a.push(vec![(one, first + x)]);
                        blk.c.push(vec![(one, col)]);
                        vx * vy
                    }
                    // OR: x y = x + y - z.
                    _ => {
                        blk.a.push(vec![(one, first + x)]);
                        blk.c
                            .push(vec![(one, first + x), (one, first + y), (-one, col)]);
                        vx + vy - vx * vy
                    }
                };
                blk.b.push(vec![(one, first + y)]);
                blk.w.push(vz);
                is_bit.push(true);
            }
        }
        if has_input {
            let mut coeff = one;
            let mut row = Vec::with_capacity(SEED_BITS);
            for i in 0..SEED_BITS {
                blk.input += coeff * blk.w[i];
                row.push((coeff, first + i));
                coeff.double_in_place();
            }
            blk.a.push(vec![(one, 0)]);
            blk.b.push(row);
            blk.c.push(vec![(one, 1 + k)]);
        }
        blk
    }

    /// The matrices and the full assignment, built on all cores.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a domain too small for one block's
    /// starting bits, or more public inputs than blocks.
    pub fn matrices(&self) -> Result<Synthesized> {
        self.check()?;
        let t = Instant::now();
        let n = self.num_constraints();
        let ni = self.num_inputs + 1;
        let blocks = self.blocks();
        // Witness columns of block k start after every earlier block's
        // gates (a block's constraints less its input packing).
        let len = |k: usize| BLOCK.min(n - k * BLOCK);
        let gates = |k: usize| len(k) - usize::from(k < self.num_inputs);
        let mut firsts = Vec::with_capacity(blocks);
        let mut at = ni;
        for k in 0..blocks {
            firsts.push(at);
            at += Self::allocated(gates(k));
        }
        let built: Vec<Block> = (0..blocks)
            .into_par_iter()
            .map(|k| self.block(k, len(k), firsts[k]))
            .collect();
        let mut m = ConstraintMatrices {
            num_constraints: n,
            a: Vec::with_capacity(n),
            b: Vec::with_capacity(n),
            c: Vec::with_capacity(n),
        };
        let mut z = Vec::with_capacity(at);
        z.push(Fr::one());
        z.extend(built.iter().take(self.num_inputs).map(|b| b.input));
        for b in built {
            m.a.extend(b.a);
            m.b.extend(b.b);
            m.c.extend(b.c);
            z.extend(b.w);
        }
        Ok(Synthesized {
            matrices: m,
            full_assignment: z,
            num_inputs: ni,
            synthesis_ms: crate::timings::ms(t),
        })
    }

    /// A proving key of random points for `w` (this circuit's
    /// [`PorepShaped::matrices`]) with the density of a real key: the A
    /// and B points of variables that no A (or B) row uses are the
    /// identity, as ark-groth16's setup would make them. Proofs against it
    /// do not verify.
    ///
    /// # Errors
    /// As [`random_key_for`].
    pub fn random_key(w: &Synthesized, rng: &mut impl Rng) -> Result<ProvingKey> {
        let mut pk = random_key_for(w, rng)?;
        let used = |m: &[Vec<(Fr, usize)>]| {
            let mut u = vec![false; w.full_assignment.len()];
            for row in m {
                for &(_, j) in row {
                    u[j] = true;
                }
            }
            u
        };
        let (in_a, in_b) = (used(&w.matrices.a), used(&w.matrices.b));
        // ark-groth16 also puts the instance variables into A (the
        // R1CS-to-QAP reduction's extra constraints): they stay.
        pk.a_query.par_iter_mut().enumerate().for_each(|(i, p)| {
            if i >= w.num_inputs && !in_a[i] {
                *p = ark_bls12_381::G1Affine::zero();
            }
        });
        in_b.par_iter()
            .zip(pk.b_g1_query.par_iter_mut())
            .zip(pk.b_g2_query.par_iter_mut())
            .for_each(|((used, p1), p2)| {
                if !used {
                    *p1 = ark_bls12_381::G1Affine::zero();
                    *p2 = ark_bls12_381::G2Affine::zero();
                }
            });
        Ok(pk)
    }
}

/// Whether every constraint of `w` holds: `<A_i, z> <B_i, z> = <C_i, z>`.
pub fn is_satisfied(w: &Synthesized) -> bool {
    crate::r1cs::first_unsatisfied(&w.matrices, &w.full_assignment).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound stays under what was measured at 2^27 (rows about 40 GB,
    /// key about 49 GB) and under a real build's allocation at 2^14, and
    /// doubles with the domain.
    #[test]
    fn host_bytes_at_least_is_a_lower_bound() {
        let c27 = PorepShaped::new(27, 1, 1);
        assert!(c27.host_bytes_at_least(true) < 89_000_000_000);
        assert!(c27.host_bytes_at_least(true) > 70_000_000_000);
        assert!(c27.host_bytes_at_least(false) < 40_000_000_000);
        let c28 = PorepShaped::new(28, 1, 1);
        let r = c28.host_bytes_at_least(true) as f64 / c27.host_bytes_at_least(true) as f64;
        assert!((r - 2.0).abs() < 1e-6, "{r}");
        assert_eq!(
            PorepShaped::new(99, 1, 1).host_bytes_at_least(true),
            u64::MAX
        );
        // At 2^14: what the rows, the assignment and the key hold.
        let c = PorepShaped::new(14, 1, 1);
        let w = c.matrices().unwrap();
        let m = &w.matrices;
        let entries: usize = [&m.a, &m.b, &m.c]
            .iter()
            .map(|rows| rows.iter().map(Vec::len).sum::<usize>())
            .sum();
        let rows = 3 * 24 * m.num_constraints + 40 * entries;
        let nv = w.full_assignment.len();
        let key = 96 * (1 << 14) + nv * (3 * 96 + 192);
        assert!(c.host_bytes_at_least(false) as usize <= rows + 32 * nv);
        assert!(c.host_bytes_at_least(true) as usize <= rows + 32 * nv + key);
    }

    #[test]
    fn satisfied_deterministic_and_witness_shaped() {
        let c = PorepShaped::new(17, 2, 7);
        let w = c.matrices().unwrap();
        assert_eq!(w.matrices.num_constraints, (1 << 17) - 3);
        assert_eq!(w.num_inputs, 3);
        assert!(is_satisfied(&w));
        assert_eq!(w.matrices.a.len(), w.matrices.num_constraints);
        // About 0.6 variables a constraint (the key's size, module docs),
        // every one of them named by some row.
        let ratio = w.full_assignment.len() as f64 / w.matrices.num_constraints as f64;
        assert!((0.59..0.62).contains(&ratio), "{ratio}");
        let mut named = vec![false; w.full_assignment.len()];
        for m in [&w.matrices.a, &w.matrices.b, &w.matrices.c] {
            for &(_, j) in m.iter().flatten() {
                named[j] = true;
            }
        }
        assert!(named.iter().all(|&u| u));
        // Domain exactly 2^17.
        assert_eq!(
            crate::qap::domain_log_size(w.matrices.num_constraints, w.num_inputs).unwrap(),
            17
        );
        let s = w.witness_shape();
        let n = (s.zeros + s.ones + s.other) as f64;
        assert!((0.55..0.61).contains(&(s.zeros as f64 / n)), "{s:?}");
        assert!((0.39..0.45).contains(&(s.ones as f64 / n)), "{s:?}");
        assert!(s.other > 0 && (s.other as f64) / n < 0.002, "{s:?}");
        // Same seeds, same circuit; other values seed, other witness.
        let again = c.matrices().unwrap();
        assert_eq!(again.full_assignment, w.full_assignment);
        let other = PorepShaped {
            values_seed: 1,
            ..c
        }
        .matrices()
        .unwrap();
        assert_eq!(other.matrices.b, w.matrices.b);
        assert_ne!(other.full_assignment, w.full_assignment);
        assert!(is_satisfied(&other));
        // A wrong value breaks it.
        let mut bad = w.clone();
        let last = bad.full_assignment.len() - 1;
        bad.full_assignment[last] += Fr::one();
        assert!(!is_satisfied(&bad));
    }

    #[test]
    fn key_density_follows_the_matrices() {
        let w = PorepShaped::new(15, 1, 3).matrices().unwrap();
        let pk = PorepShaped::random_key(&w, &mut StdRng::seed_from_u64(1)).unwrap();
        let zeros = pk.a_query.iter().filter(|p| p.is_zero()).count();
        let b_zeros = pk.b_g2_query.iter().filter(|p| p.is_zero()).count();
        assert!(zeros > 0 && zeros < pk.a_query.len(), "{zeros}");
        assert!(b_zeros > 0 && b_zeros < pk.b_g2_query.len(), "{b_zeros}");
        assert_eq!(pk.vk.gamma_abc_g1.len(), 2);
    }

    #[test]
    fn too_small_or_too_many_inputs_are_errors() {
        assert!(PorepShaped::new(5, 0, 1).matrices().is_err());
        assert!(PorepShaped::new(15, 3, 1).matrices().is_err());
    }
}
