//! A proving key as a bellperson parameter file (the layout supraseal-c2's
//! `SRS` reads), and the densities of its A and B queries.
//!
//! The layout, as supraseal-c2 0.1.2 documents it in `groth16_srs.cuh`
//! (bellperson's `Parameters::write`), in order and without padding:
//! alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then the
//! sections ic, h, l, a, b_g1 (G1) and b_g2 (G2), each a 4-byte big-endian
//! count followed by its points. Points are uncompressed in the zcash
//! encoding (96 bytes G1, 192 bytes G2: big-endian coordinates, the
//! infinity flag in the top bits), as `blst_p1_affine_serialize` writes them.
//!
//! bellperson keeps only the A and B points that are not the identity, so
//! the a section holds every instance variable's point and then the points
//! of the witness variables that occur in A, and the b sections the points
//! of the variables (instance and witness) that occur in B. The prover is
//! told which ones with bit vectors, [`Density`].

use ark_bls12_381::{Bls12_381, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_groth16::ProvingKey;
use blst::{blst_fp, blst_fp2, blst_p1_affine, blst_p2_affine};
use rayon::prelude::*;
use std::borrow::Borrow;
use std::io::Write;
use std::path::Path;

/// Bytes of an uncompressed G1 point in the file.
pub const G1_BYTES: usize = 96;
/// Bytes of an uncompressed G2 point in the file.
pub const G2_BYTES: usize = 192;

/// Which variables have a point in the A and B queries of a key: bit `j`
/// of word `i` stands for variable `64 i + j` of its range (instance
/// variables, the constant one first, or witness variables), as
/// supraseal-c2's `Assignment` takes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Density {
    /// Instance variables, the constant one included.
    pub num_inputs: usize,
    /// Witness variables.
    pub num_aux: usize,
    /// Witness variables with a point in A (every instance variable has one).
    pub a_aux: Vec<u64>,
    /// Instance variables with a point in B.
    pub b_inputs: Vec<u64>,
    /// Witness variables with a point in B.
    pub b_aux: Vec<u64>,
}

/// Ones in a bit vector.
pub fn popcount(bits: &[u64]) -> usize {
    bits.iter().map(|w| w.count_ones() as usize).sum()
}

/// The bit vector of `n` flags.
fn bits(n: usize, set: impl Fn(usize) -> bool + Sync) -> Vec<u64> {
    (0..n.div_ceil(64))
        .into_par_iter()
        .map(|w| {
            (0..64)
                .filter(|&j| w * 64 + j < n && set(w * 64 + j))
                .fold(0u64, |acc, j| acc | (1 << j))
        })
        .collect()
}

impl Density {
    /// The densities of `pk`: a variable occurs in A (or B) where its
    /// point is not the identity, as bellperson's setup filters them. The
    /// instance variables are `pk.vk.gamma_abc_g1.len()`.
    ///
    /// # Errors
    /// When the queries' lengths disagree (A, B in G1 and B in G2 must
    /// have a point for every variable, L one for every witness variable),
    /// or a variable's B point is the identity in one group but not the
    /// other.
    pub fn of(pk: &ProvingKey<Bls12_381>) -> Result<Self, String> {
        let num_inputs = pk.vk.gamma_abc_g1.len();
        let num_aux = pk.l_query.len();
        let nv = num_inputs + num_aux;
        for (name, len) in [
            ("a_query", pk.a_query.len()),
            ("b_g1_query", pk.b_g1_query.len()),
            ("b_g2_query", pk.b_g2_query.len()),
        ] {
            if len != nv {
                return Err(format!(
                    "{name} has {len} points, but the key has {num_inputs} instance and \
                     {num_aux} witness variables"
                ));
            }
        }
        if let Some(i) = (0..nv)
            .into_par_iter()
            .find_first(|&i| pk.b_g1_query[i].is_zero() != pk.b_g2_query[i].is_zero())
        {
            return Err(format!(
                "variable {i}: its B point is the identity in one group only; bellperson's \
                 layout needs the same B density in G1 and G2"
            ));
        }
        Ok(Density {
            num_inputs,
            num_aux,
            a_aux: bits(num_aux, |j| !pk.a_query[num_inputs + j].is_zero()),
            b_inputs: bits(num_inputs, |i| !pk.b_g1_query[i].is_zero()),
            b_aux: bits(num_aux, |j| !pk.b_g1_query[num_inputs + j].is_zero()),
        })
    }

    /// Points in the file's a section: every instance variable's and those
    /// of the witness variables in A.
    pub fn a_points(&self) -> usize {
        self.num_inputs + popcount(&self.a_aux)
    }

    /// Points in the file's b_g1 and b_g2 sections.
    pub fn b_points(&self) -> usize {
        popcount(&self.b_inputs) + popcount(&self.b_aux)
    }
}

fn fp(limbs: [u64; 6]) -> blst_fp {
    blst_fp { l: limbs }
}

/// `p` as blst's affine point (both use Montgomery form with R = 2^384;
/// the identity is all zeros in blst).
fn blst_g1(p: &G1Affine) -> blst_p1_affine {
    if p.is_zero() {
        return blst_p1_affine {
            x: fp([0; 6]),
            y: fp([0; 6]),
        };
    }
    blst_p1_affine {
        x: fp(p.x.0 .0),
        y: fp(p.y.0 .0),
    }
}

fn blst_g2(p: &G2Affine) -> blst_p2_affine {
    let z = blst_fp2 {
        fp: [fp([0; 6]), fp([0; 6])],
    };
    if p.is_zero() {
        return blst_p2_affine { x: z, y: z };
    }
    blst_p2_affine {
        x: blst_fp2 {
            fp: [fp(p.x.c0.0 .0), fp(p.x.c1.0 .0)],
        },
        y: blst_fp2 {
            fp: [fp(p.y.c0.0 .0), fp(p.y.c1.0 .0)],
        },
    }
}

/// The 96-byte uncompressed encoding of `p`.
pub fn g1_bytes(p: &G1Affine) -> [u8; G1_BYTES] {
    let mut out = [0u8; G1_BYTES];
    let a = blst_g1(p);
    // SAFETY: `out` holds the 96 bytes blst writes; `a` is a valid affine
    // point or the all-zero identity.
    unsafe { blst::blst_p1_affine_serialize(out.as_mut_ptr(), &a) };
    out
}

/// The 192-byte uncompressed encoding of `p`.
pub fn g2_bytes(p: &G2Affine) -> [u8; G2_BYTES] {
    let mut out = [0u8; G2_BYTES];
    let a = blst_g2(p);
    // SAFETY: `out` holds the 192 bytes blst writes.
    unsafe { blst::blst_p2_affine_serialize(out.as_mut_ptr(), &a) };
    out
}

/// Points a block when encoding a section in parallel (96 MiB of G1).
const BLOCK: usize = 1 << 20;

/// A section: its count (4 bytes, big-endian) and its points, encoded on
/// all cores a block at a time.
fn section<T, W, const B: usize>(
    w: &mut W,
    name: &str,
    points: &[T],
    encode: impl Fn(&T) -> [u8; B] + Sync,
) -> Result<(), String>
where
    T: Sync,
    W: Write,
{
    let count = u32::try_from(points.len()).map_err(|_| {
        format!(
            "{name}: {} points do not fit the format's u32",
            points.len()
        )
    })?;
    let io = |e: std::io::Error| format!("writing {name}: {e}");
    w.write_all(&count.to_be_bytes()).map_err(io)?;
    let mut buf = Vec::new();
    for block in points.chunks(BLOCK) {
        buf.resize(block.len() * B, 0);
        buf.par_chunks_mut(B)
            .zip(block.par_iter())
            .for_each(|(o, p)| o.copy_from_slice(&encode(p)));
        w.write_all(&buf).map_err(io)?;
    }
    Ok(())
}

/// The points of `query` for the instance variables (`all_inputs`: every
/// one; else those set in `inputs`) and the witness variables set in
/// `aux`, in variable order.
fn kept<'a, T>(
    query: &'a [T],
    d: &Density,
    all_inputs: bool,
    inputs: &[u64],
    aux: &[u64],
) -> Vec<&'a T> {
    let set = |bits: &[u64], i: usize| bits[i / 64] >> (i % 64) & 1 == 1;
    let ni = d.num_inputs;
    (0..ni)
        .filter(|&i| all_inputs || set(inputs, i))
        .map(|i| &query[i])
        .chain(
            (0..d.num_aux)
                .filter(|&j| set(aux, j))
                .map(|j| &query[ni + j]),
        )
        .collect()
}

/// Writes `pk` to `path` in bellperson's parameter layout (see the module
/// docs) and returns its densities, which each proof through the file
/// needs. About 96 bytes a G1 point and 192 a G2 point: 25 GB for a 2^26
/// PoRep-shaped key.
///
/// # Errors
/// The key's inconsistencies ([`Density::of`]), a section of more than
/// 2^32 - 1 points, and I/O errors, each naming what failed.
pub fn write_params(pk: &ProvingKey<Bls12_381>, path: &Path) -> Result<Density, String> {
    let d = Density::of(pk)?;
    let file =
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(8 << 20, file);
    let vk = &pk.vk;
    let io = |e: std::io::Error| format!("writing {}: {e}", path.display());
    for p in [&vk.alpha_g1, &pk.beta_g1] {
        w.write_all(&g1_bytes(p)).map_err(io)?;
    }
    for p in [&vk.beta_g2, &vk.gamma_g2] {
        w.write_all(&g2_bytes(p)).map_err(io)?;
    }
    w.write_all(&g1_bytes(&pk.delta_g1)).map_err(io)?;
    w.write_all(&g2_bytes(&vk.delta_g2)).map_err(io)?;
    let g1 = |p: &G1Affine| g1_bytes(p);
    section(&mut w, "ic", &vk.gamma_abc_g1, g1)?;
    section(&mut w, "h", &pk.h_query, g1)?;
    section(&mut w, "l", &pk.l_query, g1)?;
    let a = kept(&pk.a_query, &d, true, &[], &d.a_aux);
    section(&mut w, "a", &a, |p| g1_bytes(p.borrow()))?;
    let b1 = kept(&pk.b_g1_query, &d, false, &d.b_inputs, &d.b_aux);
    section(&mut w, "b_g1", &b1, |p| g1_bytes(p.borrow()))?;
    let b2 = kept(&pk.b_g2_query, &d, false, &d.b_inputs, &d.b_aux);
    section(&mut w, "b_g2", &b2, |p| g2_bytes(p.borrow()))?;
    w.flush().map_err(io)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::{AffineRepr, CurveGroup};
    use ark_ff::UniformRand;
    use ark_serialize::CanonicalSerialize;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn g1(rng: &mut ChaCha20Rng) -> G1Affine {
        (G1Affine::generator() * ark_bls12_381::Fr::rand(rng)).into_affine()
    }

    fn g2(rng: &mut ChaCha20Rng) -> G2Affine {
        (G2Affine::generator() * ark_bls12_381::Fr::rand(rng)).into_affine()
    }

    /// A key of random points, `ni` instance and `na` witness variables,
    /// about half of the A and B points the identity (B alike in G1 and
    /// G2), the first witness variable's always.
    fn key(rng: &mut ChaCha20Rng, ni: usize, na: usize, log_n: u32) -> ProvingKey<Bls12_381> {
        let nv = ni + na;
        let mut a_query: Vec<G1Affine> = (0..nv).map(|_| g1(rng)).collect();
        let mut b_g1_query: Vec<G1Affine> = (0..nv).map(|_| g1(rng)).collect();
        let mut b_g2_query: Vec<G2Affine> = (0..nv).map(|_| g2(rng)).collect();
        for i in 0..nv {
            if i == ni || rng.gen_bool(0.5) {
                a_query[i] = G1Affine::zero();
            }
            if i == ni || rng.gen_bool(0.5) {
                b_g1_query[i] = G1Affine::zero();
                b_g2_query[i] = G2Affine::zero();
            }
        }
        ProvingKey {
            vk: ark_groth16::VerifyingKey {
                alpha_g1: g1(rng),
                beta_g2: g2(rng),
                gamma_g2: g2(rng),
                delta_g2: g2(rng),
                gamma_abc_g1: (0..ni).map(|_| g1(rng)).collect(),
            },
            beta_g1: g1(rng),
            delta_g1: g1(rng),
            a_query,
            b_g1_query,
            b_g2_query,
            h_query: (0..(1usize << log_n) - 1).map(|_| g1(rng)).collect(),
            l_query: (0..na).map(|_| g1(rng)).collect(),
        }
    }

    /// arkworks' uncompressed encoding, the independent reference for the
    /// zcash format (ark-bls12-381 follows it).
    fn ark_bytes<T: CanonicalSerialize>(p: &T) -> Vec<u8> {
        let mut v = Vec::new();
        p.serialize_uncompressed(&mut v).expect("to a Vec");
        v
    }

    #[test]
    fn points_encode_as_arkworks_does() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5e1a);
        for _ in 0..32 {
            let p = g1(&mut rng);
            assert_eq!(g1_bytes(&p).to_vec(), ark_bytes(&p));
            let q = g2(&mut rng);
            assert_eq!(g2_bytes(&q).to_vec(), ark_bytes(&q));
        }
        assert_eq!(
            g1_bytes(&G1Affine::zero()).to_vec(),
            ark_bytes(&G1Affine::zero())
        );
        assert_eq!(
            g2_bytes(&G2Affine::zero()).to_vec(),
            ark_bytes(&G2Affine::zero())
        );
    }

    /// Reads the file back section by section (the layout of the module
    /// docs) and compares each with the key, filtered by its density as
    /// bellperson's setup filters it.
    #[test]
    fn the_file_holds_the_key_in_bellpersons_layout() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5e1b);
        let (ni, na) = (3, 200);
        let pk = key(&mut rng, ni, na, 8);
        let path =
            std::env::temp_dir().join(format!("cuzk-supraseal-{}.params", std::process::id()));
        let d = write_params(&pk, &path).expect("writes");
        let bytes = std::fs::read(&path).expect("reads");
        std::fs::remove_file(&path).expect("removes");

        // Densities: from the key's identity points, B alike in G1 and G2.
        for j in 0..na {
            let a = d.a_aux[j / 64] >> (j % 64) & 1 == 1;
            assert_eq!(a, !pk.a_query[ni + j].is_zero(), "a, witness {j}");
            let b = d.b_aux[j / 64] >> (j % 64) & 1 == 1;
            assert_eq!(b, !pk.b_g2_query[ni + j].is_zero(), "b, witness {j}");
        }
        assert_eq!(d.a_aux[0] & 1, 0);

        let mut at = 0;
        let mut take = |n: usize| {
            let s = &bytes[at..at + n];
            at += n;
            s
        };
        let mut want: Vec<Vec<u8>> = vec![
            ark_bytes(&pk.vk.alpha_g1),
            ark_bytes(&pk.beta_g1),
            ark_bytes(&pk.vk.beta_g2),
            ark_bytes(&pk.vk.gamma_g2),
            ark_bytes(&pk.delta_g1),
            ark_bytes(&pk.vk.delta_g2),
        ];
        for w in want.drain(..) {
            assert_eq!(take(w.len()), &w[..]);
        }
        let nonzero_g1 = |q: &[G1Affine], all: usize| -> Vec<G1Affine> {
            q.iter()
                .enumerate()
                .filter(|(i, p)| *i < all || !p.is_zero())
                .map(|(_, p)| *p)
                .collect()
        };
        let sections: Vec<Vec<G1Affine>> = vec![
            pk.vk.gamma_abc_g1.clone(),
            pk.h_query.clone(),
            pk.l_query.clone(),
            nonzero_g1(&pk.a_query, ni),
            nonzero_g1(&pk.b_g1_query, 0),
        ];
        for s in &sections {
            let count = u32::from_be_bytes(take(4).try_into().expect("4 bytes"));
            assert_eq!(count as usize, s.len());
            for p in s {
                assert_eq!(take(G1_BYTES), &ark_bytes(p)[..]);
            }
        }
        assert_eq!(sections[3].len(), d.a_points());
        assert_eq!(sections[4].len(), d.b_points());
        let b2: Vec<&G2Affine> = pk.b_g2_query.iter().filter(|p| !p.is_zero()).collect();
        let count = u32::from_be_bytes(take(4).try_into().expect("4 bytes"));
        assert_eq!(count as usize, b2.len());
        for p in b2 {
            assert_eq!(take(G2_BYTES), &ark_bytes(p)[..]);
        }
        assert_eq!(at, bytes.len(), "nothing after the b_g2 section");
    }

    #[test]
    fn keys_that_disagree_are_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5e1c);
        let mut pk = key(&mut rng, 2, 10, 5);
        pk.l_query.pop();
        assert!(Density::of(&pk).unwrap_err().contains("witness variables"));
        let mut pk = key(&mut rng, 2, 10, 5);
        let i = pk
            .b_g1_query
            .iter()
            .position(|p| !p.is_zero())
            .expect("one");
        pk.b_g2_query[i] = G2Affine::zero();
        assert!(Density::of(&pk).unwrap_err().contains("one group only"));
    }
}
