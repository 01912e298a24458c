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
use ark_ff::{AdditiveGroup, BigInteger, Field, PrimeField};
use cuzk_prover::Fr;
use rayon::prelude::*;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
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

    /// Decodes an assignment from `input` (buffer it, or hand it large
    /// reads: it is read in blocks of [`BLOCK_ELEMENTS`] elements, each
    /// converted on rayon's pool).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a wrong magic, a truncated or
    /// over-long encoding, or an element at or above Fr's modulus (naming
    /// the first such index, counted within its section); [`Error::Io`]
    /// when a read fails.
    pub fn read_from(mut input: impl Read) -> Result<Self> {
        let mut header = [0u8; HEADER_BYTES];
        read_exact(&mut input, &mut header, "the header")?;
        let (p, w) = parse_header(&header)?;
        let mut buf = Vec::new();
        let public = read_section(&mut input, p, Section::Public, &mut buf)?;
        let witness = read_section(&mut input, w, Section::Witness, &mut buf)?;
        let mut extra = [0u8; 1];
        loop {
            match input.read(&mut extra) {
                Ok(0) => return Ok(Assignment { public, witness }),
                Ok(_) => return Err(trailing_bytes()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("reading an assignment", e)),
            }
        }
    }

    /// Decodes an assignment from a buffer.
    ///
    /// # Errors
    /// As [`Assignment::read_from`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::read_from(bytes)
    }

    /// Reads and decodes the file at `path`: [`read_full_file`], split into
    /// public inputs and witness.
    ///
    /// # Errors
    /// As [`Assignment::read_from`] (the same messages, the lowest bad
    /// element's index); [`Error::Io`] naming the path when it cannot be
    /// opened or read.
    pub fn read_file(path: &Path) -> Result<Self> {
        let (mut z, num_inputs) = read_full_file(path)?;
        let public = z[1..num_inputs].to_vec();
        z.drain(..num_inputs);
        Ok(Assignment { public, witness: z })
    }
}

/// Reads and decodes the file at `path` straight into the full assignment
/// `[1, public.., witness..]` that `cuzk_prover::ProofJob` takes, with the
/// number of instance variables (`1 + p`, the constant one included): the
/// same as [`Assignment::read_file`] then [`Assignment::into_full`] without
/// a second copy of the elements. Blocks of [`BLOCK_ELEMENTS`] elements
/// (1 MiB) are read by position and converted in parallel on rayon's pool.
///
/// # Errors
/// As [`Assignment::read_file`]: [`Error::InvalidArgument`] for a wrong
/// magic, a truncated or over-long file, or an element at or above Fr's
/// modulus (naming the lowest such index, counted within its section);
/// [`Error::Io`] naming the path when it cannot be opened or read.
pub fn read_full_file(path: &Path) -> Result<(Vec<Fr>, usize)> {
    read_full_file_with(path, zeroed)
}

/// [`read_full_file`] into a buffer that `make(n)` gives for the `n`
/// elements of the full assignment (say, page-locked memory that the GPU
/// copies by DMA); every element of it is written.
///
/// # Errors
/// As [`read_full_file`]; [`Error::Internal`] when `make(n)` gives a
/// buffer of another length.
pub fn read_full_file_with<B: std::ops::DerefMut<Target = [Fr]>>(
    path: &Path,
    make: impl FnOnce(usize) -> B,
) -> Result<(B, usize)> {
    let file = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("opening assignment {}", path.display()), e))?;
    read_full_opened_with(file, path, None, make)
}

/// [`read_full_file_with`] from `file`, already open (say, after its
/// caller checked which file it is); `path` names it in errors. With
/// `shape` = `(num_inputs, num_variables)` (a circuit's, each counting the
/// constant one), a header announcing another shape is refused before any
/// buffer is made: a file changed after its checks cannot make the reader
/// claim more memory than the circuit's assignment takes.
///
/// # Errors
/// As [`read_full_file_with`], but for opening; [`Error::InvalidArgument`]
/// naming both shapes when the header's is not `shape`.
pub fn read_full_opened_with<B: std::ops::DerefMut<Target = [Fr]>>(
    file: std::fs::File,
    path: &Path,
    shape: Option<(usize, usize)>,
    make: impl FnOnce(usize) -> B,
) -> Result<(B, usize)> {
    let file = BodyFile::from_file(path, file)?;
    if let Some((inputs, variables)) = shape {
        let p = file.p;
        let w = file.announced.map(|a| a - p);
        let fits = p.checked_add(1) == Some(inputs as u64)
            && file.announced.and_then(|a| a.checked_add(1)) == Some(variables as u64);
        if !fits {
            return Err(Error::InvalidArgument(format!(
                "assignment {} announces {p} public inputs and {} witness values; the circuit \
                 takes {} and {}",
                path.display(),
                w.map_or("too many".to_string(), |w| w.to_string()),
                inputs.saturating_sub(1),
                variables.saturating_sub(inputs)
            )));
        }
    }
    let n = 1 + file.complete;
    let mut z = make(n);
    if z.len() != n {
        return Err(Error::Internal(format!(
            "a buffer of {} elements for an assignment of {n}",
            z.len()
        )));
    }
    z[0] = Fr::ONE;
    let bad = file.decode(0, &mut z[1..])?;
    file.verdict(bad)?;
    // `verdict` passed: every announced element is there, so p fits.
    Ok((z, 1 + file.p as usize))
}

/// Elements (32 bytes each) in one block of the decoders: 1 MiB of
/// encoding, one read and one conversion task of [`read_full_file`] and
/// [`Assignment::read_file`], one read of [`Assignment::read_from`].
pub const BLOCK_ELEMENTS: usize = 1 << 15;

/// Elements converted in one rayon task within an in-memory block.
const TASK_ELEMENTS: usize = 1 << 12;

/// The two runs of elements after the header.
#[derive(Clone, Copy)]
enum Section {
    Public,
    Witness,
}

impl Section {
    /// Its name in error messages.
    fn name(self) -> &'static str {
        match self {
            Section::Public => "public input",
            Section::Witness => "witness",
        }
    }
}

/// An assignment file opened for decoding by position: its header checked
/// and its length compared with what the header announces.
struct BodyFile<'a> {
    path: &'a Path,
    file: std::fs::File,
    /// Public inputs announced.
    p: u64,
    /// Elements announced, public and witness (`None` past u64).
    announced: Option<u64>,
    /// Whole elements the file holds, at most those announced.
    complete: usize,
    /// Whether the file holds bytes past the announced elements.
    trailing: bool,
}

impl<'a> BodyFile<'a> {
    /// `file`, open, whose name in errors is `path`.
    fn from_file(path: &'a Path, file: std::fs::File) -> Result<Self> {
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("reading assignment {}", path.display()), e))?
            .len();
        if len < HEADER_BYTES as u64 {
            return Err(truncated("the header"));
        }
        let mut header = [0u8; HEADER_BYTES];
        file.read_exact_at(&mut header, 0)
            .map_err(|e| read_error(path, e))?;
        let (p, w) = parse_header(&header)?;
        let announced = p.checked_add(w);
        let body = len - HEADER_BYTES as u64;
        let whole = body / ELEMENT_BYTES as u64;
        let (complete, trailing) = match announced {
            Some(n) if whole >= n => (n, body > n * ELEMENT_BYTES as u64),
            _ => (whole, false),
        };
        Ok(BodyFile {
            path,
            file,
            p,
            announced,
            // At most the file's length over 32: it fits memory's index.
            complete: usize::try_from(complete).map_err(|_| {
                Error::InvalidArgument(format!(
                    "assignment {}: {complete} elements do not fit this host's memory",
                    path.display()
                ))
            })?,
            trailing,
        })
    }

    /// Decodes the elements `first..first + out.len()` of the body into
    /// `out`, in parallel by blocks; the lowest index (counted from the
    /// body's first element) of one not below the modulus. What a
    /// streaming read meets first wins: a bad element before a block whose
    /// read fails is the answer, and a failed read before a bad element
    /// the error.
    fn decode(&self, first: u64, out: &mut [Fr]) -> Result<Option<u64>> {
        // Each block's outcome at its first element's index: a read error,
        // a bad element, or nothing.
        type Outcome = (u64, Result<Option<u64>>);
        let event = |o: &Outcome| !matches!(o.1, Ok(None));
        out.par_chunks_mut(BLOCK_ELEMENTS)
            .enumerate()
            .map_init(Vec::new, |buf, (k, out)| -> Outcome {
                let start = first + (k * BLOCK_ELEMENTS) as u64;
                buf.resize(out.len() * ELEMENT_BYTES, 0);
                let offset = HEADER_BYTES as u64 + start * ELEMENT_BYTES as u64;
                let r = match self.file.read_exact_at(buf, offset) {
                    Ok(()) => Ok(decode_run(buf, out).map(|i| start + i as u64)),
                    Err(e) => Err(read_error(self.path, e)),
                };
                (start, r)
            })
            .reduce(
                || (u64::MAX, Ok(None)),
                |a, b| match (event(&a), event(&b)) {
                    (true, true) if b.0 < a.0 => b,
                    (true, _) => a,
                    (false, true) => b,
                    (false, false) => (a.0.min(b.0), Ok(None)),
                },
            )
            .1
    }

    /// The error the first bad element (`bad`, counted from the body's
    /// first element), a short file or trailing bytes make, in the order
    /// a streaming read meets them.
    fn verdict(&self, bad: Option<u64>) -> Result<()> {
        if let Some(i) = bad {
            return Err(self.bad_element(i));
        }
        if self.announced != Some(self.complete as u64) {
            let section = if (self.complete as u64) < self.p {
                Section::Public
            } else {
                Section::Witness
            };
            return Err(truncated(section.name()));
        }
        if self.trailing {
            return Err(trailing_bytes());
        }
        Ok(())
    }

    fn bad_element(&self, i: u64) -> Error {
        if i < self.p {
            bad_element(Section::Public, i)
        } else {
            bad_element(Section::Witness, i - self.p)
        }
    }
}

/// `n` zeros, written in parallel (the pages of a large vector are touched
/// by rayon's threads, not one).
pub(crate) fn zeroed(n: usize) -> Vec<Fr> {
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(Fr::ZERO, n));
    v
}

/// Reads and decodes one section of `n` elements of a stream, a block at a
/// time, each block converted in parallel.
fn read_section(
    input: &mut impl Read,
    n: u64,
    section: Section,
    buf: &mut Vec<u8>,
) -> Result<Vec<Fr>> {
    let mut v = Vec::new();
    let mut done = 0u64;
    while done < n {
        let want = (n - done).min(BLOCK_ELEMENTS as u64) as usize;
        buf.resize(want * ELEMENT_BYTES, 0);
        let got = fill(input, buf)?;
        let whole = got / ELEMENT_BYTES;
        let start = v.len();
        v.resize(start + whole, Fr::ZERO);
        if let Some(i) = par_decode(&buf[..whole * ELEMENT_BYTES], &mut v[start..]) {
            return Err(bad_element(section, done + i as u64));
        }
        if whole < want {
            return Err(truncated(section.name()));
        }
        done += want as u64;
    }
    Ok(v)
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading an assignment", e)),
        }
    }
    Ok(got)
}

/// Converts `out.len()` elements of `bytes` (32 each) into `out` in
/// parallel; the lowest index of one not below the modulus (the elements
/// after it in its task are left unconverted).
fn par_decode(bytes: &[u8], out: &mut [Fr]) -> Option<usize> {
    out.par_chunks_mut(TASK_ELEMENTS)
        .zip(bytes.par_chunks(TASK_ELEMENTS * ELEMENT_BYTES))
        .enumerate()
        .filter_map(|(k, (out, bytes))| decode_run(bytes, out).map(|i| k * TASK_ELEMENTS + i))
        .min()
}

/// Converts `out.len()` elements of `bytes` (32 each) into `out` in order,
/// stopping at the first one not below the modulus; its index.
fn decode_run(bytes: &[u8], out: &mut [Fr]) -> Option<usize> {
    for (i, (b, x)) in bytes
        .chunks_exact(ELEMENT_BYTES)
        .zip(out.iter_mut())
        .enumerate()
    {
        match element(b.try_into().expect("32 bytes")) {
            Some(v) => *x = v,
            None => return Some(i),
        }
    }
    None
}

fn bad_element(section: Section, i: u64) -> Error {
    Error::InvalidArgument(format!(
        "assignment: {} element {i} is not below Fr's modulus (give canonical \
         little-endian values, not Montgomery form)",
        section.name()
    ))
}

fn truncated(what: &str) -> Error {
    Error::InvalidArgument(format!(
        "assignment truncated in {what} (fewer bytes than its header announces)"
    ))
}

fn trailing_bytes() -> Error {
    Error::InvalidArgument(
        "assignment: bytes after the last element (the header's counts are too small)".into(),
    )
}

/// A positional read's failure: a file that shrank while it was read is
/// a truncated assignment, anything else the host's I/O error.
fn read_error(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::InvalidArgument(format!(
            "assignment {} truncated (it shrank while it was read)",
            path.display()
        ))
    } else {
        Error::io(format!("reading assignment {}", path.display()), e)
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
            truncated(what)
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

    /// The element-by-element streaming decoder the parallel ones must
    /// agree with: values, error kinds and messages.
    fn reference(mut input: &[u8]) -> Result<Assignment> {
        let mut header = [0u8; HEADER_BYTES];
        read_exact(&mut input, &mut header, "the header")?;
        let (p, w) = parse_header(&header)?;
        let mut read = |n: u64, what: &str| -> Result<Vec<Fr>> {
            let mut v = Vec::new();
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
        if input.is_empty() {
            Ok(Assignment { public, witness })
        } else {
            Err(trailing_bytes())
        }
    }

    /// Every decoder's result for `bytes`, checked against [`reference`]
    /// (values, or error kind and message); the reference's result.
    fn decode_all_ways(bytes: &[u8], dir: &Path) -> Result<Assignment> {
        let path = dir.join("a.asg");
        std::fs::write(&path, bytes).unwrap();
        let want = reference(bytes);
        let same = |got: &Result<Assignment>, how: &str| match (&want, got) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{how}"),
            (Err(Error::InvalidArgument(a)), Err(Error::InvalidArgument(b))) => {
                assert_eq!(a, b, "{how}")
            }
            (a, b) => panic!("{how}: {b:?}, want {a:?}"),
        };
        same(&Assignment::from_bytes(bytes), "from_bytes");
        // A reader that hands out a few bytes at a time.
        same(
            &Assignment::read_from(Trickle(bytes)),
            "read_from in small reads",
        );
        same(&Assignment::read_file(&path), "read_file");
        let full = read_full_file(&path).and_then(|(z, l)| {
            assert_eq!(z[0], Fr::ONE);
            Assignment::from_full(&z, l)
        });
        same(&full, "read_full_file");
        want
    }

    /// A reader of at most 7 bytes a read.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// The byte offset of element `i` of the body.
    fn at(i: usize) -> std::ops::Range<usize> {
        HEADER_BYTES + ELEMENT_BYTES * i..HEADER_BYTES + ELEMENT_BYTES * (i + 1)
    }

    fn message(r: Result<Assignment>) -> String {
        match r {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("want an invalid argument, got {other:?}"),
        }
    }

    /// A header announcing another shape than the circuit's is refused
    /// before any buffer is made: a file rewritten after its checks to
    /// announce 2^31 elements over a sparse tail claims no memory.
    #[test]
    fn a_shape_is_checked_before_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.asg");
        let a = random(2, 5, 7);
        a.write_file(&path).unwrap();
        let open = || std::fs::File::open(&path).unwrap();
        let (z, l) = read_full_opened_with(open(), &path, Some((3, 8)), zeroed).unwrap();
        assert_eq!((z, l), a.clone().into_full());
        let no_buffer = |n: usize| -> Vec<Fr> { panic!("a buffer of {n} elements was made") };
        for shape in [(2, 8), (3, 9), (4, 8), (3, 7)] {
            let e = read_full_opened_with(open(), &path, Some(shape), no_buffer).unwrap_err();
            assert!(
                e.to_string().contains("announces 2 public inputs and 5"),
                "{e}"
            );
        }
        // Rewritten in place: 2^31 witness values announced, a sparse file
        // of their length.
        let mut bytes = a.to_bytes();
        bytes[16..24].copy_from_slice(&(1u64 << 31).to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(HEADER_BYTES as u64 + ELEMENT_BYTES as u64 * ((1 << 31) + 2))
            .unwrap();
        let e = read_full_opened_with(open(), &path, Some((3, 8)), no_buffer).unwrap_err();
        assert!(e.to_string().contains("2147483648 witness values"), "{e}");
        assert!(e.to_string().contains("takes 2 and 5"), "{e}");
        // u64's limit announced: said, not overflowed.
        bytes[8..24].copy_from_slice(&[0xff; 16]);
        std::fs::write(&path, &bytes).unwrap();
        let e = read_full_opened_with(open(), &path, Some((3, 8)), no_buffer).unwrap_err();
        assert!(e.to_string().contains("too many witness values"), "{e}");
    }

    #[test]
    fn parallel_decoders_match_the_element_reader() {
        let dir = tempfile::tempdir().unwrap();
        let shapes = [
            (0, 0),
            (1, 0),
            (0, 1),
            (3, 1000),
            (BLOCK_ELEMENTS, 1),
            (5, 2 * BLOCK_ELEMENTS + 17),
            (BLOCK_ELEMENTS + 3, BLOCK_ELEMENTS - 3),
        ];
        for (k, (p, w)) in shapes.into_iter().enumerate() {
            let a = random(p, w, 100 + k as u64);
            let got = decode_all_ways(&a.to_bytes(), dir.path()).unwrap();
            assert_eq!(got, a);
            let (z, l) = read_full_file(&dir.path().join("a.asg")).unwrap();
            assert_eq!((z, l), a.into_full());
        }
    }

    #[test]
    fn parallel_decoders_give_the_element_readers_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (p, w) = (BLOCK_ELEMENTS + 2, 2 * BLOCK_ELEMENTS + 9);
        let good = random(p, w, 11).to_bytes();
        let n = p + w;
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        let mut bad_magic = good.clone();
        bad_magic[3] = b'X';
        cases.push(("bad magic".into(), bad_magic));
        for len in [0, 7, HEADER_BYTES - 1] {
            cases.push((format!("header cut at {len}"), good[..len].to_vec()));
        }
        for cut in [0, 1, p - 1, p, p + 1, n - 1] {
            let at = at(cut).start;
            cases.push((format!("cut before element {cut}"), good[..at].to_vec()));
            cases.push((format!("cut inside element {cut}"), good[..at + 5].to_vec()));
        }
        let mut long = good.clone();
        long.extend_from_slice(&[0; ELEMENT_BYTES + 3]);
        cases.push(("trailing bytes".into(), long));
        let mut huge = good[..HEADER_BYTES].to_vec();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        cases.push(("counts past u64".into(), huge));
        // Several bad elements, in different blocks and tasks: the lowest
        // is named, whichever block finishes first.
        for bad in [
            vec![0],
            vec![p - 1, p + 5],
            vec![p],
            vec![n - 1, p + BLOCK_ELEMENTS + 1, p + 2 * TASK_ELEMENTS + 3],
            vec![n - 1, 3 * TASK_ELEMENTS + 1, p + 1],
        ] {
            let mut b = good.clone();
            for &i in &bad {
                b[at(i)].fill(0xff);
            }
            cases.push((format!("bad elements {bad:?}"), b.clone()));
            // A bad element before the end of a short file is reported
            // before the truncation, one after it not at all.
            let lowest = *bad.iter().min().unwrap();
            cases.push((
                format!("bad elements {bad:?}, cut after"),
                b[..at(lowest).end + 3].to_vec(),
            ));
            cases.push((
                format!("bad elements {bad:?}, cut before"),
                b[..at(lowest).start].to_vec(),
            ));
            b.push(1);
            cases.push((format!("bad elements {bad:?}, trailing"), b));
        }
        // The modulus itself is the smallest value out of range.
        let mut modulus = good.clone();
        modulus[at(p + 7)].copy_from_slice(&Fr::MODULUS.to_bytes_le());
        cases.push(("the modulus".into(), modulus));
        for (what, bytes) in cases {
            let msg = message(decode_all_ways(&bytes, dir.path()));
            let ok = msg.contains("not a cuzk assignment")
                || msg.contains("truncated in")
                || msg.contains("bytes after the last element")
                || msg.contains("is not below Fr's modulus");
            assert!(ok, "{what}: {msg}");
        }
    }

    #[test]
    fn errors_name_the_lowest_bad_element() {
        let dir = tempfile::tempdir().unwrap();
        let (p, w) = (4, 3 * BLOCK_ELEMENTS);
        let mut b = random(p, w, 12).to_bytes();
        for i in [p + 3 * BLOCK_ELEMENTS - 1, p + BLOCK_ELEMENTS + 9, p + 40] {
            b[at(i)].fill(0xff);
        }
        let msg = message(decode_all_ways(&b, dir.path()));
        assert!(msg.contains("witness element 40 is not below"), "{msg}");
        b[at(2)].fill(0xff);
        let msg = message(decode_all_ways(&b, dir.path()));
        assert!(msg.contains("public input element 2 is not below"), "{msg}");
        let msg = message(decode_all_ways(&b[..at(1).end], dir.path()));
        assert!(msg.contains("truncated in public input"), "{msg}");
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.asg");
        let e = read_full_file(&path).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("absent.asg"), "{e}");
        let e = Assignment::read_file(&path).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
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
