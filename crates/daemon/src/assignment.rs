//! cuzk's assignment encoding: how a client hands the daemon a proof's
//! public inputs and witness (inline in a request, streamed in chunks, or
//! as a file), and how the daemon keeps it on disk until the job ends.
//!
//! | bytes | what |
//! |---|---|
//! | 0..8 | the magic `CUZKASG1` |
//! | 8..16 | `p`: public inputs, u64 little-endian (the constant one not counted) |
//! | 16..24 | `w`: witness values, u64 little-endian |
//! | 24.. | `p + w` elements of BLS12-381's Fr, 32 bytes each, little-endian, canonical (below the modulus, not in Montgomery form): the public inputs, then the witness |
//!
//! The full assignment z that Groth16 proves is `[1, public.., witness..]`.

use crate::{Error, Result};
use ark_ff::{BigInteger, PrimeField};
use cuzk_prover::Fr;
use std::io::{Read, Write};
use std::path::Path;

/// The first eight bytes of every assignment.
pub const MAGIC: &[u8; 8] = b"CUZKASG1";
/// Bytes before the first element.
pub const HEADER_BYTES: usize = 24;
/// Bytes of one element.
pub const ELEMENT_BYTES: usize = 32;

/// A decoded assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The public inputs, without the constant one.
    pub public: Vec<Fr>,
    /// The witness (the circuit's private variables).
    pub witness: Vec<Fr>,
}

impl Assignment {
    /// The full assignment `[1, public.., witness..]` and the number of
    /// instance variables (the constant one included), as
    /// `cuzk_prover::ProofJob` takes them.
    pub fn into_full(self) -> (Vec<Fr>, usize) {
        let num_inputs = 1 + self.public.len();
        let mut z = Vec::with_capacity(num_inputs + self.witness.len());
        z.push(Fr::from(1u64));
        z.extend(self.public);
        z.extend(self.witness);
        (z, num_inputs)
    }

    /// The assignment of a synthesized circuit (`cuzk_prover::Synthesized`):
    /// its full assignment without the constant one, split at `num_inputs`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `num_inputs` is 0 or past the
    /// assignment's end.
    pub fn from_full(full: &[Fr], num_inputs: usize) -> Result<Self> {
        if num_inputs == 0 || num_inputs > full.len() {
            return Err(Error::InvalidArgument(format!(
                "{num_inputs} instance variables in a full assignment of {}: give at least \
                 the constant one and no more than the assignment holds",
                full.len()
            )));
        }
        Ok(Assignment {
            public: full[1..num_inputs].to_vec(),
            witness: full[num_inputs..].to_vec(),
        })
    }

    /// Bytes of the encoding.
    pub fn encoded_len(&self) -> u64 {
        (HEADER_BYTES + ELEMENT_BYTES * (self.public.len() + self.witness.len())) as u64
    }

    /// The encoding, written to `out` (buffer it: one write an element).
    ///
    /// # Errors
    /// [`Error::Io`] when a write fails.
    pub fn write_to(&self, mut out: impl Write) -> Result<()> {
        let io = |e| Error::io("writing an assignment", e);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&(self.public.len() as u64).to_le_bytes())
            .map_err(io)?;
        out.write_all(&(self.witness.len() as u64).to_le_bytes())
            .map_err(io)?;
        for x in self.public.iter().chain(&self.witness) {
            out.write_all(&element_bytes(x)).map_err(io)?;
        }
        Ok(())
    }

    /// The encoding as one buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len() as usize);
        self.write_to(&mut v)
            .expect("writing to a Vec does not fail");
        v
    }

    /// Writes the encoding to a new file at `path` and syncs it to disk.
    ///
    /// # Errors
    /// [`Error::Io`] naming the path.
    pub fn write_file(&self, path: &Path) -> Result<()> {
        let what = || format!("writing assignment {}", path.display());
        let f = std::fs::File::create(path).map_err(|e| Error::io(what(), e))?;
        let mut w = std::io::BufWriter::new(f);
        self.write_to(&mut w)?;
        let f = w
            .into_inner()
            .map_err(|e| Error::io(what(), e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(what(), e))
    }

    /// Decodes an assignment from `input` (buffer it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a wrong magic, a truncated or
    /// over-long encoding, or an element at or above Fr's modulus (naming
    /// its index); [`Error::Io`] when a read fails.
    pub fn read_from(mut input: impl Read) -> Result<Self> {
        let mut header = [0u8; HEADER_BYTES];
        read_exact(&mut input, &mut header, "the header")?;
        let (p, w) = parse_header(&header)?;
        let mut read = |n: u64, what: &str| -> Result<Vec<Fr>> {
            let mut v = Vec::with_capacity(n.min(1 << 24) as usize);
            let mut buf = [0u8; ELEMENT_BYTES];
            for i in 0..n {
                read_exact(&mut input, &mut buf, what)?;
                v.push(element(&buf).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "assignment: {what} element {i} is not below Fr's modulus (give \
                         canonical little-endian values, not Montgomery form)"
                    ))
                })?);
            }
            Ok(v)
        };
        let public = read(p, "public input")?;
        let witness = read(w, "witness")?;
        let mut extra = [0u8; 1];
        match input.read(&mut extra) {
            Ok(0) => Ok(Assignment { public, witness }),
            Ok(_) => Err(Error::InvalidArgument(
                "assignment: bytes after the last element (the header's counts are too small)"
                    .into(),
            )),
            Err(e) => Err(Error::io("reading an assignment", e)),
        }
    }

    /// Decodes an assignment from a buffer.
    ///
    /// # Errors
    /// As [`Assignment::read_from`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::read_from(bytes)
    }

    /// Reads and decodes the file at `path`.
    ///
    /// # Errors
    /// As [`Assignment::read_from`]; [`Error::Io`] naming the path when it
    /// cannot be opened.
    pub fn read_file(path: &Path) -> Result<Self> {
        let f = std::fs::File::open(path)
            .map_err(|e| Error::io(format!("opening assignment {}", path.display()), e))?;
        Self::read_from(std::io::BufReader::with_capacity(1 << 20, f))
    }
}

/// The counts of public inputs and witness values in a header, checked.
///
/// # Errors
/// [`Error::InvalidArgument`] for a wrong magic.
pub fn parse_header(header: &[u8; HEADER_BYTES]) -> Result<(u64, u64)> {
    if &header[..8] != MAGIC {
        return Err(Error::InvalidArgument(
            "not a cuzk assignment (it must start with the bytes CUZKASG1; see the \
             daemon's assignment module for the encoding)"
                .into(),
        ));
    }
    let p = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let w = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    Ok((p, w))
}

fn read_exact(input: &mut impl Read, buf: &mut [u8], what: &str) -> Result<()> {
    input.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::InvalidArgument(format!(
                "assignment truncated in {what} (fewer bytes than its header announces)"
            ))
        } else {
            Error::io("reading an assignment", e)
        }
    })
}

/// 32 bytes little-endian, canonical.
fn element_bytes(x: &Fr) -> [u8; ELEMENT_BYTES] {
    let mut out = [0u8; ELEMENT_BYTES];
    out.copy_from_slice(&x.into_bigint().to_bytes_le());
    out
}

/// The element of 32 canonical little-endian bytes; `None` at or above the
/// modulus.
fn element(b: &[u8; ELEMENT_BYTES]) -> Option<Fr> {
    let mut limbs = [0u64; 4];
    for (i, l) in limbs.iter_mut().enumerate() {
        *l = u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    }
    Fr::from_bigint(ark_ff::BigInt(limbs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::SeedableRng;

    fn random(p: usize, w: usize, seed: u64) -> Assignment {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        Assignment {
            public: (0..p).map(|_| Fr::rand(&mut rng)).collect(),
            witness: (0..w).map(|_| Fr::rand(&mut rng)).collect(),
        }
    }

    #[test]
    fn round_trips() {
        for (p, w) in [(0, 0), (1, 0), (0, 5), (3, 1000)] {
            let a = random(p, w, 26 + p as u64);
            let bytes = a.to_bytes();
            assert_eq!(bytes.len() as u64, a.encoded_len());
            assert_eq!(Assignment::from_bytes(&bytes).unwrap(), a);
        }
    }

    #[test]
    fn elements_are_canonical_little_endian() {
        let a = Assignment {
            public: vec![Fr::from(1u64)],
            witness: vec![Fr::from(0x0102u64), -Fr::from(1u64)],
        };
        let b = a.to_bytes();
        assert_eq!(&b[24..32], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[56..58], &[2, 1]);
        // r - 1, the modulus's low limb minus one.
        assert_eq!(&b[88..96], &0xffff_ffff_0000_0000u64.to_le_bytes());
    }

    #[test]
    fn bad_encodings_are_errors() {
        let good = random(1, 3, 7).to_bytes();
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        let msg = Assignment::from_bytes(&bad_magic).unwrap_err().to_string();
        assert!(msg.contains("not a cuzk assignment"), "{msg}");
        let msg = Assignment::from_bytes(&good[..good.len() - 1])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("truncated in witness"), "{msg}");
        let mut long = good.clone();
        long.push(0);
        let msg = Assignment::from_bytes(&long).unwrap_err().to_string();
        assert!(msg.contains("bytes after the last element"), "{msg}");
        let mut big = good.clone();
        big[24 + 32..24 + 64].fill(0xff);
        let msg = Assignment::from_bytes(&big).unwrap_err().to_string();
        assert!(msg.contains("witness element 0 is not below"), "{msg}");
    }

    #[test]
    fn full_assignment_starts_with_one() {
        let a = random(2, 3, 9);
        let (z, l) = a.clone().into_full();
        assert_eq!(l, 3);
        assert_eq!(z[0], Fr::from(1u64));
        assert_eq!(Assignment::from_full(&z, l).unwrap(), a);
        assert!(Assignment::from_full(&z, 0).is_err());
    }
}
