//! A file format for a circuit's R1CS matrices: versioned, checksummed, streamed.
//!
//! One file holds the A, B and C matrices of a [`ConstraintMatrices`] with
//! the circuit's number of instance variables (`num_inputs`, the constant
//! one included) and of variables (`num_variables`, the length of the full
//! assignment). It is written and read row by row through 1 MiB buffers,
//! so that a circuit of 2^27 constraints and billions of nonzeros never
//! needs a second copy of its matrices in memory: [`write()`] / [`write_to`]
//! take the matrices by reference, [`read()`] / [`read_from`] build them as
//! they come, [`read_compact`] builds the GPU's compact form
//! ([`crate::SparseR1cs`]) as they come without ever holding the row-major
//! matrices, and [`read_header`] reads the 64-byte header alone.
//!
//! # Layout (version 1)
//!
//! All integers are unsigned little-endian. Offsets are in bytes.
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | magic: the ASCII bytes `CUZKR1CS` (`43 55 5A 4B 52 31 43 53`) |
//! | 8 | 4 | format version, u32: `1` |
//! | 12 | 4 | field id, u32: `1` = the BLS12-381 scalar field Fr (r = `0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001`) |
//! | 16 | 8 | `num_constraints`, u64: rows of each matrix |
//! | 24 | 8 | `num_inputs`, u64: instance variables, the constant one included (`<= num_variables`) |
//! | 32 | 8 | `num_variables`, u64: columns of each matrix, the length of the full assignment (`<= 2^32`) |
//! | 40 | 8 | nonzeros of A, u64: terms over all rows of A |
//! | 48 | 8 | nonzeros of B, u64 |
//! | 56 | 8 | nonzeros of C, u64 |
//! | 64 | | the rows of A, then those of B, then those of C, `num_constraints` rows each |
//! | end - 32 | 32 | checksum: BLAKE3 (32-byte output) of every byte before it, header included |
//!
//! A row is
//!
//! | size | field |
//! |---:|---|
//! | 4 | `count`, u32: the row's terms (0 for an empty row) |
//! | 36 x `count` | the terms in the matrix's order, each a column (variable index, u32, `< num_variables`) then its coefficient: 32 bytes, the canonical integer in `[0, r)` little-endian (not Montgomery form) |
//!
//! So the file has exactly `64 + 12 * num_constraints + 36 * (nnz_A +
//! nnz_B + nnz_C) + 32` bytes ([`Header::file_len`]); a file of another
//! length is truncated or has trailing data. Terms are kept as given: the
//! format neither sorts nor merges columns, and zero coefficients are
//! stored like any other.
//!
//! The checksum is BLAKE3 (the `blake3` crate): it hashes several GiB/s on
//! one core with SIMD, so verifying a file of tens of GiB costs seconds
//! rather than minutes (SHA-256 without SHA extensions runs near 0.4 GiB/s),
//! and it is well kept. It guards against corruption in storage and
//! transfer, not against a forger.
//!
//! # Errors
//!
//! Every failure is an [`Error::InvalidArgument`] whose message names the
//! problem: not a cuzk R1CS file (wrong magic), an unsupported version or
//! field, a truncated file or trailing data, a checksum mismatch
//! (`corrupted: checksum ...`), a column `>= num_variables`, a coefficient
//! `>=` the modulus, matrices of unequal rows, a nonzero count that
//! disagrees with the header, or an I/O failure with the path (the crate's
//! `Error` has no I/O variant); only a writer that miscounts its own bytes
//! gives [`Error::Internal`]. A body that
//! fails a structural check is first checked against its checksum: when
//! the checksum does not match either, the error says `corrupted` and
//! names the first inconsistency found.

use crate::{ConstraintMatrices, Error, Fr, Result};
use ark_ff::{BigInt, PrimeField};
use ark_relations::gr1cs::Matrix;
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The first 8 bytes of every file.
pub const MAGIC: [u8; 8] = *b"CUZKR1CS";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The field id of the BLS12-381 scalar field Fr.
pub const FIELD_BLS12_381_FR: u32 = 1;
/// Bytes of the header.
pub const HEADER_LEN: u64 = 64;
/// Bytes of the checksum at the end.
pub const CHECKSUM_LEN: u64 = 32;

/// Bytes of a row's `count`.
const COUNT_LEN: usize = 4;
/// Bytes of one term: column u32 and 32-byte coefficient.
const TERM_LEN: usize = 36;
/// Bytes of the read and write buffers.
const BUF_LEN: usize = 1 << 20;
/// Rows encoded or decoded as one parallel batch.
const CHUNK_ROWS: usize = 1 << 14;
/// Matrix names in file order, for messages.
const NAMES: [&str; 3] = ["A", "B", "C"];

/// The header of a file: the sizes of the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The format version ([`VERSION`] for every header this build returns).
    pub version: u32,
    /// Rows of each matrix.
    pub num_constraints: u64,
    /// Instance variables, the constant one included.
    pub num_inputs: u64,
    /// Variables (columns; the length of the full assignment).
    pub num_variables: u64,
    /// Terms of A, B and C, over all rows.
    pub nonzeros: [u64; 3],
}

impl Header {
    /// Bytes of the whole file this header describes, header and checksum
    /// included (see the module's layout).
    pub fn file_len(&self) -> u64 {
        // `parse` and `write_to` admit only headers whose length fits a u64.
        self.checked_file_len().unwrap_or(u64::MAX)
    }

    fn checked_file_len(&self) -> Option<u64> {
        let terms = self.nonzeros[0]
            .checked_add(self.nonzeros[1])?
            .checked_add(self.nonzeros[2])?;
        let rows = self.num_constraints.checked_mul(3 * COUNT_LEN as u64)?;
        HEADER_LEN
            .checked_add(rows)?
            .checked_add(terms.checked_mul(TERM_LEN as u64)?)?
            .checked_add(CHECKSUM_LEN)
    }

    /// The header's 64 bytes.
    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut h = [0u8; HEADER_LEN as usize];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&self.version.to_le_bytes());
        h[12..16].copy_from_slice(&FIELD_BLS12_381_FR.to_le_bytes());
        let words = [
            self.num_constraints,
            self.num_inputs,
            self.num_variables,
            self.nonzeros[0],
            self.nonzeros[1],
            self.nonzeros[2],
        ];
        for (i, w) in words.iter().enumerate() {
            h[16 + 8 * i..24 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        h
    }

    /// Checks and decodes the 64 header bytes.
    fn parse(h: &[u8; HEADER_LEN as usize]) -> Result<Self> {
        if h[0..8] != MAGIC {
            return Err(invalid(format!(
                "not a cuzk R1CS file: it starts with bytes {} where the magic `CUZKR1CS` \
                 should be; give a file written by cuzk_prover::r1cs_file::write",
                hex(&h[0..8])
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let version = u32_at(8);
        if version != VERSION {
            return Err(invalid(format!(
                "unsupported cuzk R1CS file version {version}: this build reads version \
                 {VERSION} only; write the file again with this build (or read it with the \
                 cuzk-prover that wrote it)"
            )));
        }
        let field = u32_at(12);
        if field != FIELD_BLS12_381_FR {
            return Err(invalid(format!(
                "cuzk R1CS file over field id {field}: this build supports field id \
                 {FIELD_BLS12_381_FR} (BLS12-381 Fr) only"
            )));
        }
        let header = Header {
            version,
            num_constraints: u64_at(16),
            num_inputs: u64_at(24),
            num_variables: u64_at(32),
            nonzeros: [u64_at(40), u64_at(48), u64_at(56)],
        };
        header.check()?;
        Ok(header)
    }

    /// The checks every header passes, written or read.
    fn check(&self) -> Result<()> {
        if self.num_inputs > self.num_variables {
            return Err(invalid(format!(
                "R1CS header of {} instance variables but {} variables: the instance \
                 variables (the constant one included) are part of the variables",
                self.num_inputs, self.num_variables
            )));
        }
        if self.num_variables > MAX_VARIABLES {
            return Err(invalid(format!(
                "R1CS system of {} variables: the format's u32 columns hold at most 2^32",
                self.num_variables
            )));
        }
        if self.checked_file_len().is_none() {
            return Err(invalid(format!(
                "R1CS header of {} constraints and {:?} nonzeros: the file length overflows \
                 64 bits (a corrupted header?)",
                self.num_constraints, self.nonzeros
            )));
        }
        Ok(())
    }
}

/// Most variables a file can index (u32 columns).
const MAX_VARIABLES: u64 = 1 << 32;

/// What [`write()`] or [`write_to`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// The header written.
    pub header: Header,
    /// Bytes written, equal to `header.file_len()`.
    pub bytes: u64,
    /// The BLAKE3 checksum at the end of the file.
    pub checksum: [u8; 32],
}

/// A file read back by [`read()`] or [`read_from`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R1csFile {
    /// The header.
    pub header: Header,
    /// The matrices, rows and terms in file order.
    pub matrices: ConstraintMatrices,
    /// Instance variables, the constant one included.
    pub num_inputs: usize,
    /// Variables (the length of the full assignment).
    pub num_variables: usize,
    /// The checksum, verified.
    pub checksum: [u8; 32],
}

/// Writes `matrices` to a file at `path` (created or replaced), with the
/// system's `num_inputs` (instance variables, the constant one included)
/// and `num_variables` (length of the full assignment).
///
/// The bytes go to `path` with `.partial` appended first and are renamed to
/// `path` when complete, so a reader never sees a half-written file under
/// `path`; on failure the partial file is removed.
///
/// # Errors
/// [`Error::InvalidArgument`] as [`write_to`], or naming the path and the
/// operating system's error when the file cannot be created, written or
/// renamed.
pub fn write(
    path: impl AsRef<Path>,
    matrices: &ConstraintMatrices,
    num_inputs: usize,
    num_variables: usize,
) -> Result<FileInfo> {
    let path = path.as_ref();
    // Checked before any file is created.
    let header = header_for(matrices, num_inputs, num_variables)?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = File::create(&partial).map_err(|e| io_error("creating", &partial, e))?;
    let written = write_checked(file, matrices, header).and_then(|info| {
        std::fs::rename(&partial, path).map_err(|e| {
            invalid(format!(
                "renaming {} to {}: {e}",
                partial.display(),
                path.display()
            ))
        })?;
        Ok(info)
    });
    if written.is_err() {
        // Best effort: the error being returned is the one that matters.
        let _ = std::fs::remove_file(&partial);
    }
    written.map_err(|e| match e {
        Error::InvalidArgument(m) => invalid(format!("writing {}: {m}", path.display())),
        other => other,
    })
}

/// Writes `matrices` in the file format to `out` (buffered here: a `File`
/// or a socket can be given as is), with the system's `num_inputs`
/// (instance variables, the constant one included) and `num_variables`
/// (length of the full assignment). Rows are encoded in parallel batches
/// of 16384 and written as they are encoded.
///
/// # Errors
/// [`Error::InvalidArgument`], before anything is written, when the
/// matrices' numbers of rows differ (from each other or from
/// `num_constraints`), when `num_inputs > num_variables`, when
/// `num_variables > 2^32`, when a row has 2^32 terms or more, or when a
/// column is `>= num_variables` (naming matrix, row and column); and when
/// `out` fails, with its error.
pub fn write_to(
    out: impl Write,
    matrices: &ConstraintMatrices,
    num_inputs: usize,
    num_variables: usize,
) -> Result<FileInfo> {
    let header = header_for(matrices, num_inputs, num_variables)?;
    write_checked(out, matrices, header)
}

/// The header of `matrices`, after every check `write_to` documents.
fn header_for(
    matrices: &ConstraintMatrices,
    num_inputs: usize,
    num_variables: usize,
) -> Result<Header> {
    let m = [&matrices.a, &matrices.b, &matrices.c];
    if m.iter().any(|x| x.len() != matrices.num_constraints) {
        return Err(invalid(format!(
            "R1CS matrices of {}, {} and {} rows for {} constraints: A, B and C need one \
             row per constraint each",
            m[0].len(),
            m[1].len(),
            m[2].len(),
            matrices.num_constraints
        )));
    }
    let mut nonzeros = [0u64; 3];
    for (k, x) in m.iter().enumerate() {
        nonzeros[k] = check_matrix(x, NAMES[k], num_variables)?;
    }
    let header = Header {
        version: VERSION,
        num_constraints: matrices.num_constraints as u64,
        num_inputs: num_inputs as u64,
        num_variables: num_variables as u64,
        nonzeros,
    };
    header.check()?;
    Ok(header)
}

/// Checks a matrix's columns and row lengths; returns its number of terms.
fn check_matrix(rows: &Matrix<Fr>, name: &str, num_variables: usize) -> Result<u64> {
    let bad = rows.par_iter().position_first(|row| {
        row.len() > u32::MAX as usize || row.iter().any(|&(_, col)| col >= num_variables)
    });
    if let Some(r) = bad {
        let row = &rows[r];
        if row.len() > u32::MAX as usize {
            return Err(invalid(format!(
                "row {r} of matrix {name} has {} terms: the format holds at most 2^32 - 1 \
                 a row",
                row.len()
            )));
        }
        let (t, col) = row
            .iter()
            .enumerate()
            .find_map(|(t, &(_, col))| (col >= num_variables).then_some((t, col)))
            .unwrap_or((0, 0));
        return Err(invalid(format!(
            "term {t} of row {r} of matrix {name} has column {col}, not below num_variables \
             {num_variables}: give the number of variables of the full assignment"
        )));
    }
    Ok(rows.par_iter().map(|row| row.len() as u64).sum())
}

/// Writes a checked header and the matrices, then the checksum.
fn write_checked(
    out: impl Write,
    matrices: &ConstraintMatrices,
    header: Header,
) -> Result<FileInfo> {
    let wr = |e: io::Error| invalid(format!("I/O error writing an R1CS file: {e}"));
    let mut w = BufWriter::with_capacity(
        BUF_LEN,
        HashingWriter {
            inner: out,
            hasher: blake3::Hasher::new(),
            written: 0,
        },
    );
    w.write_all(&header.encode()).map_err(wr)?;
    for rows in [&matrices.a, &matrices.b, &matrices.c] {
        for chunk in rows.chunks(CHUNK_ROWS) {
            let parts: Vec<Vec<u8>> = chunk
                .par_chunks(
                    CHUNK_ROWS
                        .div_ceil(rayon::current_num_threads().max(1))
                        .max(1),
                )
                .map(|sub| {
                    let mut b = Vec::new();
                    sub.iter().for_each(|row| encode_row(row, &mut b));
                    b
                })
                .collect();
            for p in &parts {
                w.write_all(p).map_err(wr)?;
            }
        }
    }
    let mut hw = w.into_inner().map_err(|e| wr(e.into_error()))?;
    let checksum = *hw.hasher.finalize().as_bytes();
    hw.inner.write_all(&checksum).map_err(wr)?;
    hw.inner.flush().map_err(wr)?;
    let bytes = hw.written + CHECKSUM_LEN;
    if bytes != header.file_len() {
        return Err(Error::Internal(format!(
            "wrote {bytes} bytes of an R1CS file whose header promises {}",
            header.file_len()
        )));
    }
    Ok(FileInfo {
        header,
        bytes,
        checksum,
    })
}

/// Appends a row's bytes (count, then the terms) to `out`. The caller
/// checked the row's length and columns.
fn encode_row(row: &[(Fr, usize)], out: &mut Vec<u8>) {
    out.reserve(COUNT_LEN + TERM_LEN * row.len());
    out.extend_from_slice(&(row.len() as u32).to_le_bytes());
    for &(coeff, col) in row {
        out.extend_from_slice(&(col as u32).to_le_bytes());
        for limb in coeff.into_bigint().0 {
            out.extend_from_slice(&limb.to_le_bytes());
        }
    }
}

/// Reads the header of the file at `path` (64 bytes, no matrices) and
/// checks the file's length against it.
///
/// # Errors
/// [`Error::InvalidArgument`] when the file cannot be opened (path and
/// operating system's error), is shorter than a header, is not a cuzk R1CS
/// file, has another version or field, or has a length other than the
/// header's [`Header::file_len`] (truncated, or trailing data).
pub fn read_header(path: impl AsRef<Path>) -> Result<Header> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|e| io_error("opening", path, e))?;
    Ok(header_of_file(&mut file, path)?.0)
}

/// The header of an open file and its bytes, the file's length checked.
fn header_of_file(file: &mut File, path: &Path) -> Result<(Header, [u8; HEADER_LEN as usize])> {
    let len = file
        .metadata()
        .map_err(|e| io_error("reading the metadata of", path, e))?
        .len();
    let in_file = |e: Error| match e {
        Error::InvalidArgument(m) => invalid(format!("{}: {m}", path.display())),
        other => other,
    };
    let mut head = [0u8; HEADER_LEN as usize];
    let got = read_full(file, &mut head).map_err(|e| io_error("reading", path, e))?;
    if (got as u64) < HEADER_LEN {
        return Err(in_file(short_header(&head[..got])));
    }
    let header = Header::parse(&head).map_err(in_file)?;
    let want = header.file_len();
    if len < want {
        return Err(in_file(invalid(format!(
            "truncated R1CS file: {len} bytes where its header ({} constraints, {:?} \
             nonzeros) promises {want}; write or copy it again",
            header.num_constraints, header.nonzeros
        ))));
    }
    if len > want {
        return Err(in_file(invalid(format!(
            "R1CS file of {len} bytes where its header promises {want}: {} bytes of \
             trailing data after the checksum (two files concatenated?)",
            len - want
        ))));
    }
    Ok((header, head))
}

/// Reads the file at `path`: header, matrices and checksum, every check of
/// [`read_from`] made, and the file's length checked against the header
/// first (so a truncated file fails before its rows are read).
///
/// # Errors
/// [`Error::InvalidArgument`] as [`read_header`] and [`read_from`].
pub fn read(path: impl AsRef<Path>) -> Result<R1csFile> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|e| io_error("opening", path, e))?;
    let (header, head) = header_of_file(&mut file, path)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&head);
    read_file(file, header, hasher, true).map_err(|e| match e {
        Error::InvalidArgument(m) => invalid(format!("{}: {m}", path.display())),
        other => other,
    })
}

/// A file read straight into its compact form by [`read_compact`].
#[derive(Debug)]
pub struct R1csCompactFile {
    /// The header.
    pub header: Header,
    /// The matrices' compact form, without rows
    /// ([`SparseR1cs::without_rows`](crate::SparseR1cs::without_rows)):
    /// the same chunks, word for word, as `SparseR1cs::new` makes from
    /// [`read()`]'s matrices.
    pub r1cs: crate::SparseR1cs,
    /// Instance variables, the constant one included.
    pub num_inputs: usize,
    /// Variables (the length of the full assignment).
    pub num_variables: usize,
    /// The checksum, verified.
    pub checksum: [u8; 32],
}

/// Reads the file at `path` into the compact form the GPU evaluates
/// ([`crate::SparseR1cs`], without rows), chunk by chunk as the rows are
/// decoded: at most one chunk's rows a core, 16 at most, are held at once
/// (about 170 MB each for a PoRep-shaped circuit, at most about 360 MB),
/// never the row-major matrices (about 48 bytes an entry, some 66 GB for a
/// PoRep-shaped 2^27 circuit), so a prover that
/// needs only the compact form (the GPU's, or the CPU path's with
/// [`crate::Prover::with_r1cs`]) loads a circuit in about 8 bytes an entry.
/// The checksum is verified at the end, as [`read()`] does; on any error
/// nothing is returned.
///
/// # Errors
/// As [`read()`].
pub fn read_compact(path: impl AsRef<Path>) -> Result<R1csCompactFile> {
    let path = path.as_ref();
    let named = |e| match e {
        Error::InvalidArgument(m) => invalid(format!("{}: {m}", path.display())),
        other => other,
    };
    let mut file = File::open(path).map_err(|e| io_error("opening", path, e))?;
    let (header, head) = header_of_file(&mut file, path)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&head);
    let (compactor, checksum) =
        read_stream(file, header, hasher, true, crate::sparse::Compactor::new()).map_err(named)?;
    let r1cs = compactor
        .finish(header.num_constraints as usize)
        .map_err(named)?;
    Ok(R1csCompactFile {
        header,
        r1cs,
        num_inputs: header.num_inputs as usize,
        num_variables: header.num_variables as usize,
        checksum,
    })
}

/// Reads a file from `input` (buffered here), which must be at its first
/// byte. Exactly the file's bytes are consumed (the header says how many),
/// so a stream may go on with other data after it. Rows are decoded in
/// parallel batches of 16384 as they arrive.
///
/// # Errors
/// [`Error::InvalidArgument`] when `input` ends early (`truncated`, with
/// the byte and what was being read) or fails, when it is not a cuzk R1CS
/// file or has another version or field, when the checksum does not match
/// (`corrupted: checksum ...`), when a column is `>= num_variables`, a
/// coefficient is not below the modulus, or a matrix's nonzeros differ from
/// the header's.
pub fn read_from(input: impl Read) -> Result<R1csFile> {
    let mut input = input;
    let mut head = [0u8; HEADER_LEN as usize];
    let got = read_full(&mut input, &mut head)
        .map_err(|e| invalid(format!("I/O error reading an R1CS file's header: {e}")))?;
    if (got as u64) < HEADER_LEN {
        return Err(short_header(&head[..got]));
    }
    let header = Header::parse(&head)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&head);
    read_file(input, header, hasher, false)
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The error for input that ends inside the header: a truncated file when
/// it starts like one, else not a cuzk R1CS file at all.
fn short_header(bytes: &[u8]) -> Error {
    let n = bytes.len().min(MAGIC.len());
    if bytes[..n] != MAGIC[..n] {
        return invalid(format!(
            "not a cuzk R1CS file: {} bytes, starting {} where the magic `CUZKR1CS` should \
             be; give a file written by cuzk_prover::r1cs_file::write",
            bytes.len(),
            hex(&bytes[..n])
        ));
    }
    invalid(format!(
        "truncated R1CS file: {} bytes, shorter than the {HEADER_LEN}-byte header",
        bytes.len()
    ))
}

/// Why reading the body stopped.
enum Stop {
    /// The input failed or ended at byte `at`, while reading `what`.
    Io {
        at: u64,
        what: String,
        err: io::Error,
    },
    /// The bytes read disagree with the header or the format.
    Invalid(String),
    /// The rows' sink failed for a reason of its own (not the file's).
    Sink(Error),
}

/// Reads the rows and the checksum after a parsed header (whose bytes are
/// already in `hasher`). With `sized`, the header was checked against the
/// file's length, so its counts are trusted for allocation.
fn read_stream<S: RowSink>(
    input: impl Read,
    header: Header,
    hasher: blake3::Hasher,
    sized: bool,
    mut sink: S,
) -> Result<(S, [u8; 32])> {
    let body_end = header.file_len() - CHECKSUM_LEN;
    let mut r = BufReader::with_capacity(
        BUF_LEN,
        HashingReader {
            inner: input.take(header.file_len() - HEADER_LEN),
            hasher,
            pos: HEADER_LEN,
            hash_end: body_end,
        },
    );
    let mut pos = HEADER_LEN;
    // On an error the sink goes at once, not after the rest of the body is
    // read for the checksum: it may hold most of the matrices.
    let body = read_matrices(&mut r, &header, sized, &mut pos, &mut sink).map(|()| sink);
    let first = match body {
        Ok(sink) => Ok(sink),
        Err(Stop::Invalid(msg)) => {
            // Consume the rest of the body so the checksum can say whether
            // the bytes were altered or written that way.
            let rest = body_end - pos;
            match io::copy(&mut (&mut r).take(rest), &mut io::sink()) {
                Ok(n) if n == rest => pos = body_end,
                Ok(n) => {
                    return Err(invalid(format!(
                        "truncated R1CS file: it ends at byte {} of the {} its header \
                         promises (and before that: {msg}); write or copy it again",
                        pos + n,
                        header.file_len()
                    )))
                }
                Err(e) => {
                    return Err(invalid(format!(
                        "I/O error reading an R1CS file at byte {pos}: {e}"
                    )))
                }
            }
            Err(msg)
        }
        Err(Stop::Io { at, what, err }) => return Err(io_stop(at, &what, err, &header)),
        Err(Stop::Sink(e)) => return Err(e),
    };
    let mut stored = [0u8; CHECKSUM_LEN as usize];
    r.read_exact(&mut stored)
        .map_err(|e| io_stop(pos, "the checksum", e, &header))?;
    let computed = *r.get_ref().hasher.finalize().as_bytes();
    if stored != computed {
        let found = match &first {
            Err(msg) => format!(" The first inconsistency found: {msg}."),
            Ok(_) => String::new(),
        };
        return Err(invalid(format!(
            "corrupted: checksum mismatch in an R1CS file (stored BLAKE3 {}, computed {} \
             over bytes 0..{body_end}): its bytes changed after writing; write or copy it \
             again.{found}",
            hex(&stored),
            hex(&computed)
        )));
    }
    let sink = first.map_err(|msg| {
        invalid(format!(
            "invalid R1CS file (its checksum matches, so it was written this way): {msg}"
        ))
    })?;
    Ok((sink, computed))
}

/// The file read into row-major matrices.
fn read_file(
    input: impl Read,
    header: Header,
    hasher: blake3::Hasher,
    sized: bool,
) -> Result<R1csFile> {
    let ([a, b, c], checksum) =
        read_stream(input, header, hasher, sized, <[Matrix<Fr>; 3]>::default())?;
    Ok(R1csFile {
        header,
        matrices: ConstraintMatrices {
            num_constraints: header.num_constraints as usize,
            a,
            b,
            c,
        },
        num_inputs: header.num_inputs as usize,
        num_variables: header.num_variables as usize,
        checksum,
    })
}

fn io_stop(at: u64, what: &str, err: io::Error, header: &Header) -> Error {
    if err.kind() == io::ErrorKind::UnexpectedEof {
        invalid(format!(
            "truncated R1CS file: it ends at or after byte {at}, inside {what}, where its \
             header promises {} bytes; write or copy it again",
            header.file_len()
        ))
    } else {
        invalid(format!(
            "I/O error reading an R1CS file at byte {at} ({what}): {err}"
        ))
    }
}

/// Where decoded rows go: the row-major matrices ([`read()`]) or their
/// compact form, built as the rows arrive ([`read_compact`]).
trait RowSink {
    /// Room for `n` rows of matrix `k` (called once a matrix, where the
    /// file's length vouches for `n`).
    fn reserve(&mut self, k: usize, n: usize);
    /// The next row of matrix `k`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a row the sink refuses (the file's
    /// fault); any other error is the sink's own.
    fn push(&mut self, k: usize, row: Vec<(Fr, usize)>) -> Result<()>;
}

impl RowSink for [Matrix<Fr>; 3] {
    fn reserve(&mut self, k: usize, n: usize) {
        self[k].reserve_exact(n);
    }

    fn push(&mut self, k: usize, row: Vec<(Fr, usize)>) -> Result<()> {
        self[k].push(row);
        Ok(())
    }
}

impl RowSink for crate::sparse::Compactor {
    fn reserve(&mut self, _: usize, _: usize) {}

    fn push(&mut self, k: usize, row: Vec<(Fr, usize)>) -> Result<()> {
        crate::sparse::Compactor::push(self, k, row)
    }
}

/// Reads the three matrices into `out`; `pos` follows the bytes consumed.
fn read_matrices(
    r: &mut impl Read,
    header: &Header,
    sized: bool,
    pos: &mut u64,
    out: &mut impl RowSink,
) -> std::result::Result<(), Stop> {
    let n = header.num_constraints;
    let nv = header.num_variables;
    let mut raw = Vec::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (k, name) in NAMES.into_iter().enumerate() {
        if sized {
            out.reserve(k, n as usize);
        }
        let mut left = header.nonzeros[k];
        let mut row = 0u64;
        while row < n {
            let batch = (n - row).min(CHUNK_ROWS as u64);
            raw.clear();
            spans.clear();
            for i in row..row + batch {
                let mut cb = [0u8; COUNT_LEN];
                r.read_exact(&mut cb).map_err(|err| Stop::Io {
                    at: *pos,
                    what: format!("the term count of row {i} of matrix {name}"),
                    err,
                })?;
                *pos += COUNT_LEN as u64;
                let count = u32::from_le_bytes(cb) as u64;
                if count > left {
                    return Err(Stop::Invalid(format!(
                        "row {i} of matrix {name} has {count} terms, more than the {left} \
                         left of the header's {} nonzeros",
                        header.nonzeros[k]
                    )));
                }
                left -= count;
                let start = raw.len();
                let want = count * TERM_LEN as u64;
                let at = *pos;
                let short = |err| Stop::Io {
                    at,
                    what: format!("the terms of row {i} of matrix {name}"),
                    err,
                };
                if sized || want <= BUF_LEN as u64 {
                    // A size the file's length (`sized`) or a small bound
                    // vouches for: read in place.
                    raw.resize(start + want as usize, 0);
                    r.read_exact(&mut raw[start..]).map_err(short)?;
                } else {
                    // `take` + `read_to_end` grows `raw` with the bytes
                    // that exist, so a corrupted count in a stream cannot
                    // allocate more than the input holds.
                    let got = r.by_ref().take(want).read_to_end(&mut raw).map_err(short)?;
                    if (got as u64) < want {
                        return Err(short(io::ErrorKind::UnexpectedEof.into()));
                    }
                }
                *pos += want;
                spans.push((start, raw.len()));
            }
            let decoded: Vec<std::result::Result<Vec<(Fr, usize)>, String>> = spans
                .par_iter()
                .enumerate()
                .map(|(j, &(s, e))| decode_row(&raw[s..e], nv, name, row + j as u64))
                .collect();
            for d in decoded {
                out.push(k, d.map_err(Stop::Invalid)?)
                    .map_err(|e| match e {
                        Error::InvalidArgument(m) => Stop::Invalid(m),
                        other => Stop::Sink(other),
                    })?;
            }
            row += batch;
        }
        if left != 0 {
            return Err(Stop::Invalid(format!(
                "matrix {name} holds {} nonzeros where the header says {}",
                header.nonzeros[k] - left,
                header.nonzeros[k]
            )));
        }
    }
    Ok(())
}

/// Decodes a row's terms, checking columns and canonical coefficients.
fn decode_row(
    raw: &[u8],
    num_variables: u64,
    name: &str,
    row: u64,
) -> std::result::Result<Vec<(Fr, usize)>, String> {
    raw.chunks_exact(TERM_LEN)
        .enumerate()
        .map(|(t, term)| {
            let col = u32::from_le_bytes([term[0], term[1], term[2], term[3]]);
            if u64::from(col) >= num_variables {
                return Err(format!(
                    "term {t} of row {row} of matrix {name} has column {col}, not below the \
                     header's num_variables {num_variables}"
                ));
            }
            let mut limbs = [0u64; 4];
            for (l, b) in limbs.iter_mut().zip(term[4..].chunks_exact(8)) {
                let mut w = [0u8; 8];
                w.copy_from_slice(b);
                *l = u64::from_le_bytes(w);
            }
            let coeff = Fr::from_bigint(BigInt(limbs)).ok_or_else(|| {
                format!(
                    "term {t} of row {row} of matrix {name} has coefficient bytes {} \
                     (little-endian), not canonical: not below the BLS12-381 Fr modulus",
                    hex(&term[4..])
                )
            })?;
            Ok((coeff, col as usize))
        })
        .collect()
}

/// A writer that hashes and counts what passes to `inner`.
struct HashingWriter<W> {
    inner: W,
    hasher: blake3::Hasher,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes what it reads from `inner` below byte `hash_end`
/// (positions counted from the file's start).
struct HashingReader<R> {
    inner: R,
    hasher: blake3::Hasher,
    pos: u64,
    hash_end: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let hashed = self.hash_end.saturating_sub(self.pos).min(n as u64) as usize;
        self.hasher.update(&buf[..hashed]);
        self.pos += n as u64;
        Ok(n)
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn io_error(doing: &str, path: &Path, e: io::Error) -> Error {
    invalid(format!("{doing} R1CS file {}: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
