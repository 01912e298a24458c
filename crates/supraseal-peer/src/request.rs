//! The files between cuzk's benchmark and the `cuzk-supraseal` process: a
//! [`Request`] (where the parameter file is, its densities, one proof's
//! inputs, how many timed proofs) and a [`Response`] (the timings and the
//! proofs). supraseal-c2 runs in a process of its own: its CUDA objects
//! share kernel names with the sppark peer's, and its C++ asserts would
//! abort the benchmark with it.
//!
//! Both files are arkworks' canonical serialization (uncompressed, field
//! elements and points checked on reading) of their fields in order.

use crate::params::Density;
use ark_bls12_381::{Bls12_381, Fr};
use ark_groth16::Proof;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// What `cuzk-supraseal` proves.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The parameter file ([`crate::write_params`]).
    pub params: PathBuf,
    /// Its densities.
    pub density: Density,
    /// Points of its h section (the domain size less one).
    pub h_points: u64,
    /// `A z`, `B z`, `C z` over the domain.
    pub abc: [Vec<Fr>; 3],
    /// The full assignment (the constant one first).
    pub assignment: Vec<Fr>,
    /// Groth16's r.
    pub r: Fr,
    /// Groth16's s.
    pub s: Fr,
    /// Timed proofs after the first (which waits for the parameter load).
    pub reps: u32,
}

/// What `cuzk-supraseal` answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// Loading the parameters and the first proof, wall milliseconds.
    pub load_and_first_ms: f64,
    /// Each timed proof, wall milliseconds.
    pub times_ms: Vec<f64>,
    /// The first proof, then one per timed proof.
    pub proofs: Vec<Proof<Bls12_381>>,
}

fn ser<T: CanonicalSerialize>(w: &mut impl Write, v: &T) -> Result<(), String> {
    v.serialize_with_mode(w, Compress::No)
        .map_err(|e| format!("serializing: {e}"))
}

fn de<T: CanonicalDeserialize>(r: &mut impl Read) -> Result<T, String> {
    T::deserialize_with_mode(r, Compress::No, Validate::Yes).map_err(|e| format!("reading: {e}"))
}

fn create(path: &Path) -> Result<BufWriter<std::fs::File>, String> {
    std::fs::File::create(path)
        .map(|f| BufWriter::with_capacity(8 << 20, f))
        .map_err(|e| format!("creating {}: {e}", path.display()))
}

fn open(path: &Path) -> Result<BufReader<std::fs::File>, String> {
    std::fs::File::open(path)
        .map(|f| BufReader::with_capacity(8 << 20, f))
        .map_err(|e| format!("opening {}: {e}", path.display()))
}

impl Request {
    /// Writes the request to `path`.
    ///
    /// # Errors
    /// I/O errors, naming the file.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut w = create(path)?;
        let d = &self.density;
        ser(&mut w, &self.params.to_string_lossy().as_bytes().to_vec())?;
        ser(&mut w, &(d.num_inputs as u64))?;
        ser(&mut w, &(d.num_aux as u64))?;
        ser(&mut w, &d.a_aux)?;
        ser(&mut w, &d.b_inputs)?;
        ser(&mut w, &d.b_aux)?;
        ser(&mut w, &self.h_points)?;
        for v in &self.abc {
            ser(&mut w, v)?;
        }
        ser(&mut w, &self.assignment)?;
        ser(&mut w, &self.r)?;
        ser(&mut w, &self.s)?;
        ser(&mut w, &self.reps)?;
        w.flush()
            .map_err(|e| format!("writing {}: {e}", path.display()))
    }

    /// Reads a request written by [`Request::write`].
    ///
    /// # Errors
    /// I/O errors and malformed contents (a field element out of range, a
    /// short file), naming the file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let mut r = open(path)?;
        let at = |e: String| format!("{}: {e}", path.display());
        let params: Vec<u8> = de(&mut r).map_err(at)?;
        let num_inputs: u64 = de(&mut r).map_err(at)?;
        let num_aux: u64 = de(&mut r).map_err(at)?;
        let density = Density {
            num_inputs: num_inputs as usize,
            num_aux: num_aux as usize,
            a_aux: de(&mut r).map_err(at)?,
            b_inputs: de(&mut r).map_err(at)?,
            b_aux: de(&mut r).map_err(at)?,
        };
        Ok(Request {
            params: PathBuf::from(String::from_utf8_lossy(&params).into_owned()),
            density,
            h_points: de(&mut r).map_err(at)?,
            abc: [
                de(&mut r).map_err(at)?,
                de(&mut r).map_err(at)?,
                de(&mut r).map_err(at)?,
            ],
            assignment: de(&mut r).map_err(at)?,
            r: de(&mut r).map_err(at)?,
            s: de(&mut r).map_err(at)?,
            reps: de(&mut r).map_err(at)?,
        })
    }
}

impl Response {
    /// Writes the response to `path`.
    ///
    /// # Errors
    /// I/O errors, naming the file.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut w = create(path)?;
        ser(&mut w, &self.load_and_first_ms.to_bits())?;
        let bits: Vec<u64> = self.times_ms.iter().map(|t| t.to_bits()).collect();
        ser(&mut w, &bits)?;
        ser(&mut w, &self.proofs)?;
        w.flush()
            .map_err(|e| format!("writing {}: {e}", path.display()))
    }

    /// Reads a response written by [`Response::write`]; the proofs' points
    /// are not checked (a wrong proof is the comparison's business).
    ///
    /// # Errors
    /// I/O errors and malformed contents (a short file), naming the file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let mut r = open(path)?;
        let at = |e: String| format!("{}: {e}", path.display());
        let first: u64 = de(&mut r).map_err(at)?;
        let bits: Vec<u64> = de(&mut r).map_err(at)?;
        // Proofs unchecked: a point off the curve is a wrong proof, which
        // the comparison with cuzk's reports, not a file error.
        let proofs =
            Vec::<Proof<Bls12_381>>::deserialize_with_mode(&mut r, Compress::No, Validate::No)
                .map_err(|e| at(format!("reading: {e}")))?;
        Ok(Response {
            load_and_first_ms: f64::from_bits(first),
            times_ms: bits.into_iter().map(f64::from_bits).collect(),
            proofs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::{AffineRepr, CurveGroup};
    use ark_ff::UniformRand;
    use rand::SeedableRng;

    #[test]
    fn requests_and_responses_round_trip() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5e1e);
        let v = |rng: &mut rand_chacha::ChaCha20Rng, n| (0..n).map(|_| Fr::rand(rng)).collect();
        let req = Request {
            params: PathBuf::from("/tmp/x.params"),
            density: Density {
                num_inputs: 2,
                num_aux: 70,
                a_aux: vec![u64::MAX, 5],
                b_inputs: vec![1],
                b_aux: vec![3, 0],
            },
            h_points: 127,
            abc: [v(&mut rng, 128), v(&mut rng, 128), v(&mut rng, 128)],
            assignment: v(&mut rng, 72),
            r: Fr::rand(&mut rng),
            s: Fr::rand(&mut rng),
            reps: 3,
        };
        let dir = std::env::temp_dir();
        let p = dir.join(format!("cuzk-supraseal-req-{}", std::process::id()));
        req.write(&p).expect("writes");
        assert_eq!(Request::read(&p).expect("reads"), req);
        let g1 = |rng: &mut rand_chacha::ChaCha20Rng| {
            (ark_bls12_381::G1Affine::generator() * Fr::rand(rng)).into_affine()
        };
        let proof = Proof {
            a: g1(&mut rng),
            b: (ark_bls12_381::G2Affine::generator() * Fr::rand(&mut rng)).into_affine(),
            c: g1(&mut rng),
        };
        let resp = Response {
            load_and_first_ms: 1234.5,
            times_ms: vec![10.25, 11.0],
            proofs: vec![proof.clone(), proof],
        };
        resp.write(&p).expect("writes");
        assert_eq!(Response::read(&p).expect("reads"), resp);
        std::fs::write(&p, b"short").expect("writes");
        assert!(Request::read(&p).is_err());
        std::fs::remove_file(&p).expect("removes");
    }
}
