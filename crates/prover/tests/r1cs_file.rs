//! The R1CS file format: round trips, the documented byte layout, and every
//! kind of corruption giving its documented error.

use ark_bls12_381::Bls12_381;
use ark_ff::{BigInteger, One, PrimeField, UniformRand, Zero};
use ark_groth16::Groth16;
use ark_relations::gr1cs::Matrix;
use cuzk_prover::r1cs_file::{self, Header};
use cuzk_prover::{ConstraintMatrices, Error, Fr, ProofJob, Prover};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A random system: rows of 0 to `max_terms` terms (empty rows included),
/// coefficients random or 0, 1, -1 (the largest canonical value).
fn random_matrices(
    rng: &mut ChaCha20Rng,
    rows: usize,
    num_variables: usize,
    max_terms: usize,
) -> ConstraintMatrices {
    let mut m = || -> Matrix<Fr> {
        (0..rows)
            .map(|_| {
                let n = if num_variables == 0 {
                    0
                } else {
                    rng.gen_range(0..=max_terms)
                };
                (0..n)
                    .map(|_| {
                        let c = match rng.gen_range(0..4) {
                            0 => Fr::zero(),
                            1 => Fr::one(),
                            2 => -Fr::one(),
                            _ => Fr::rand(rng),
                        };
                        (c, rng.gen_range(0..num_variables))
                    })
                    .collect()
            })
            .collect()
    };
    let (a, b, c) = (m(), m(), m());
    ConstraintMatrices::new(a, b, c).expect("equal rows")
}

fn message<T: std::fmt::Debug>(r: cuzk_prover::Result<T>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn to_bytes(m: &ConstraintMatrices, num_inputs: usize, num_variables: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let info = r1cs_file::write_to(&mut out, m, num_inputs, num_variables).expect("write");
    assert_eq!(info.bytes, out.len() as u64);
    assert_eq!(info.header.file_len(), out.len() as u64);
    out
}

/// Replaces the trailing checksum with BLAKE3 of the rest (after a patch).
fn reseal(bytes: &mut [u8]) {
    let n = bytes.len() - 32;
    let h = blake3::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(h.as_bytes());
}

#[test]
fn round_trip_random_matrices() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x0123_4567);
    // (constraints, inputs, variables, max terms a row): a 0x0 system, rows
    // without variables, one variable, and more rows than one parallel batch.
    let shapes = [
        (0, 0, 0, 0),
        (3, 0, 0, 0),
        (1, 1, 1, 1),
        (17, 3, 40, 6),
        (20_000, 2, 300, 3),
    ];
    for (rows, inputs, vars, terms) in shapes {
        let m = random_matrices(&mut rng, rows, vars, terms);
        let bytes = to_bytes(&m, inputs, vars);
        let back = r1cs_file::read_from(bytes.as_slice()).expect("read");
        assert_eq!(back.matrices, m, "{rows}x{vars}");
        assert_eq!((back.num_inputs, back.num_variables), (inputs, vars));
        let nnz = |x: &Matrix<Fr>| x.iter().map(|r| r.len() as u64).sum::<u64>();
        assert_eq!(
            back.header,
            Header {
                version: 1,
                num_constraints: rows as u64,
                num_inputs: inputs as u64,
                num_variables: vars as u64,
                nonzeros: [nnz(&m.a), nnz(&m.b), nnz(&m.c)],
            }
        );
        assert_eq!(&back.checksum[..], &bytes[bytes.len() - 32..]);
        assert_eq!(
            back.checksum,
            *blake3::hash(&bytes[..bytes.len() - 32]).as_bytes()
        );
    }
}

#[test]
fn round_trip_through_a_path() {
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let m = random_matrices(&mut rng, 300, 50, 5);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.r1cs");
    let info = r1cs_file::write(&path, &m, 4, 50).expect("write");
    assert!(!dir.path().join("c.r1cs.partial").exists());
    assert_eq!(std::fs::metadata(&path).expect("meta").len(), info.bytes);
    assert_eq!(r1cs_file::read_header(&path).expect("header"), info.header);
    let back = r1cs_file::read(&path).expect("read");
    assert_eq!(back.matrices, m);
    assert_eq!((back.num_inputs, back.num_variables), (4, 50));
    assert_eq!(back.checksum, info.checksum);
    // The same bytes as the stream writer.
    assert_eq!(std::fs::read(&path).expect("bytes"), to_bytes(&m, 4, 50));
}

/// `read_compact` gives the compact form that `SparseR1cs::new` makes from
/// `read`'s matrices: the same sizes, and the same `A z`, `B z`, `C z` for
/// a random z; a damaged file is refused as `read` refuses it, naming the
/// file.
#[test]
fn read_compact_matches_read_then_compact() {
    use cuzk_prover::SparseR1cs;
    use std::sync::Arc;
    let mut rng = ChaCha20Rng::seed_from_u64(0xc0c0);
    let dir = tempfile::tempdir().expect("tempdir");
    for (rows, vars, ni) in [(3000, 700, 3), (5, 3, 1), (0, 1, 1)] {
        let m = random_matrices(&mut rng, rows, vars, 5);
        let path = dir.path().join(format!("c{rows}.r1cs"));
        let info = r1cs_file::write(&path, &m, ni, vars).expect("write");
        let got = r1cs_file::read_compact(&path).expect("read_compact");
        let want = SparseR1cs::new(Arc::new(r1cs_file::read(&path).expect("read").matrices))
            .expect("compact");
        assert_eq!(got.header, info.header);
        assert_eq!(got.checksum, info.checksum);
        assert_eq!((got.num_inputs, got.num_variables), (ni, vars));
        assert!(rows == 0 || !got.r1cs.has_rows());
        assert_eq!(got.r1cs.num_constraints(), rows);
        assert_eq!(got.r1cs.num_variables(), want.num_variables());
        assert_eq!(got.r1cs.num_chunks(), want.num_chunks());
        assert_eq!(got.r1cs.bytes(), want.bytes());
        let z: Vec<Fr> = (0..vars).map(|_| Fr::rand(&mut rng)).collect();
        let log_n = (rows + ni).next_power_of_two().trailing_zeros();
        assert_eq!(
            got.r1cs.evaluate(&z, ni, log_n).expect("evaluate"),
            want.evaluate(&z, ni, log_n).expect("evaluate")
        );
    }
    let (_, mut bytes) = small_file();
    let last = bytes.len() - 40;
    bytes[last] ^= 1;
    let path = dir.path().join("damaged.r1cs");
    std::fs::write(&path, &bytes).expect("write");
    let msg = message(r1cs_file::read_compact(&path));
    assert!(msg.contains("damaged.r1cs"), "{msg}");
    assert!(msg.contains("corrupted: checksum mismatch"), "{msg}");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    let msg = message(r1cs_file::read_compact(&path));
    assert!(msg.contains("truncated"), "{msg}");
}

/// The documented layout, written out by hand for a small system.
#[test]
fn byte_layout_is_as_documented() {
    let minus_one = -Fr::one();
    let m = ConstraintMatrices::new(
        vec![vec![(Fr::from(5u64), 1), (minus_one, 2)], vec![]],
        vec![vec![], vec![(Fr::one(), 0)]],
        vec![vec![(Fr::from(7u64), 2)], vec![]],
    )
    .expect("matrices");
    let mut want = Vec::new();
    want.extend_from_slice(b"CUZKR1CS");
    want.extend_from_slice(&1u32.to_le_bytes()); // version
    want.extend_from_slice(&1u32.to_le_bytes()); // BLS12-381 Fr
    for w in [2u64, 1, 3, 2, 1, 1] {
        want.extend_from_slice(&w.to_le_bytes());
    }
    assert_eq!(want.len(), 64);
    let coeff = |c: Fr| {
        let b = c.into_bigint().to_bytes_le();
        assert_eq!(b.len(), 32);
        b
    };
    // r - 1, little-endian: the modulus from its published hex.
    let r_minus_1 = {
        let hex = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000000";
        let mut b: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
            .collect();
        b.reverse();
        b
    };
    assert_eq!(coeff(minus_one), r_minus_1);
    let rows: [&[(u64, u32, Vec<u8>)]; 6] = [
        &[(0, 1, coeff(Fr::from(5u64))), (0, 2, r_minus_1.clone())],
        &[],
        &[],
        &[(0, 0, {
            let mut one = vec![0u8; 32];
            one[0] = 1;
            one
        })],
        &[(0, 2, {
            let mut seven = vec![0u8; 32];
            seven[0] = 7;
            seven
        })],
        &[],
    ];
    for row in rows {
        want.extend_from_slice(&(row.len() as u32).to_le_bytes());
        for (_, col, c) in row {
            want.extend_from_slice(&col.to_le_bytes());
            want.extend_from_slice(c);
        }
    }
    let h = blake3::hash(&want);
    want.extend_from_slice(h.as_bytes());
    assert_eq!(to_bytes(&m, 1, 3), want);
    assert_eq!(
        want.len() as u64,
        64 + 12 * 2 + 36 * (2 + 1 + 1) + 32,
        "the documented length formula"
    );
}

/// A real circuit, written and read back, proves on the CPU path and
/// ark-groth16 verifies the proof.
#[test]
fn sha256_chain_round_trip_proves() {
    use cuzk_prover::circuits::Sha256Chain;
    let mut rng = ChaCha20Rng::seed_from_u64(0x5348_4132);
    let mut preimage = [0u8; 32];
    rng.fill(&mut preimage);
    let chain = Sha256Chain::new(preimage, 1);
    let w = cuzk_prover::synthesize(chain.clone(), true).expect("synthesis");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sha256-1.r1cs");
    let info =
        r1cs_file::write(&path, &w.matrices, w.num_inputs, w.full_assignment.len()).expect("write");
    assert_eq!(
        info.header.num_constraints,
        w.matrices.num_constraints as u64
    );
    let back = r1cs_file::read(&path).expect("read");
    assert_eq!(back.matrices, w.matrices);
    assert_eq!(back.num_inputs, w.num_inputs);
    assert_eq!(back.num_variables, w.full_assignment.len());

    let pk =
        Groth16::<Bls12_381>::generate_random_parameters_with_reduction(chain.clone(), &mut rng)
            .expect("setup");
    let pvk = ark_groth16::prepare_verifying_key(&pk.vk);
    let prover = Prover::cpu(pk).expect("prover");
    let job = ProofJob {
        matrices: &back.matrices,
        full_assignment: &w.full_assignment,
        num_inputs: back.num_inputs,
        r: Fr::rand(&mut rng),
        s: Fr::rand(&mut rng),
    };
    let (proof, _) = prover.prove_job(&job).expect("proof");
    assert_eq!(chain.public_inputs(), w.public_inputs());
    assert!(
        Groth16::<Bls12_381>::verify_proof(&pvk, &proof, &chain.public_inputs()).expect("verify")
    );
}

fn small_file() -> (ConstraintMatrices, Vec<u8>) {
    let mut rng = ChaCha20Rng::seed_from_u64(0xbad);
    let m = random_matrices(&mut rng, 12, 9, 3);
    let bytes = to_bytes(&m, 2, 9);
    (m, bytes)
}

#[test]
fn every_flipped_byte_is_an_error() {
    let (_, bytes) = small_file();
    let body = 64..bytes.len();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            let msg = message(r1cs_file::read_from(b.as_slice()));
            if body.contains(&i) {
                assert!(
                    msg.starts_with("corrupted: checksum mismatch"),
                    "byte {i} bit {bit:#x}: {msg}"
                );
            } else {
                assert!(
                    [
                        "not a cuzk R1CS file",
                        "unsupported cuzk R1CS file version",
                        "field id",
                        "truncated",
                        "corrupted: checksum mismatch",
                        "instance variables",
                        "at most 2^32",
                        "overflows 64 bits",
                    ]
                    .iter()
                    .any(|k| msg.contains(k)),
                    "byte {i} bit {bit:#x}: {msg}"
                );
            }
        }
    }
}

#[test]
fn a_flipped_coefficient_names_the_checksum_and_the_file() {
    let (_, mut bytes) = small_file();
    // The first term of the first non-empty row of A: its coefficient's
    // top byte made 0xff, above the modulus.
    let mut at = 64;
    loop {
        let count = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        if count > 0 {
            break;
        }
        at += 4;
    }
    bytes[at + 4 + 4 + 31] = 0xff;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("flipped.r1cs");
    std::fs::write(&path, &bytes).expect("write");
    let msg = message(r1cs_file::read(&path));
    assert!(msg.contains("flipped.r1cs"), "{msg}");
    assert!(msg.contains("corrupted: checksum mismatch"), "{msg}");
    assert!(msg.contains("not canonical"), "{msg}");

    // Resealed: a file written that way, not a corruption.
    reseal(&mut bytes);
    let msg = message(r1cs_file::read_from(bytes.as_slice()));
    assert!(msg.contains("checksum matches"), "{msg}");
    assert!(msg.contains("row 0 of matrix A"), "{msg}");
    assert!(msg.contains("not canonical"), "{msg}");
}

#[test]
fn truncated_files() {
    let (_, bytes) = small_file();
    for len in 0..bytes.len() {
        let msg = message(r1cs_file::read_from(&bytes[..len]));
        assert!(
            msg.starts_with("truncated R1CS file"),
            "length {len}: {msg}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.r1cs");
    for len in [0, 10, 64, 100, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).expect("write");
        for msg in [
            message(r1cs_file::read(&path)),
            message(r1cs_file::read_header(&path)),
        ] {
            assert!(msg.contains("truncated R1CS file"), "length {len}: {msg}");
            assert!(msg.contains("cut.r1cs"), "{msg}");
        }
    }
    // Trailing data: refused from a path; a stream stops at the file's end.
    let mut two = bytes.clone();
    two.extend_from_slice(&bytes);
    std::fs::write(&path, &two).expect("write");
    let msg = message(r1cs_file::read(&path));
    assert!(msg.contains("trailing data"), "{msg}");
    let mut stream = two.as_slice();
    let first = r1cs_file::read_from(&mut stream).expect("first");
    let second = r1cs_file::read_from(&mut stream).expect("second");
    assert!(stream.is_empty());
    assert_eq!(first, second);
}

#[test]
fn bad_magic_and_future_version() {
    let (_, bytes) = small_file();
    let mut b = bytes.clone();
    b[0..8].copy_from_slice(b"NOTR1CS!");
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(msg.starts_with("not a cuzk R1CS file"), "{msg}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("other.bin");
    std::fs::write(
        &path,
        b"hello, not an R1CS file at all: just text; 64 bytes or more here.",
    )
    .expect("write");
    let msg = message(r1cs_file::read_header(&path));
    assert!(msg.contains("not a cuzk R1CS file"), "{msg}");
    std::fs::write(&path, b"short text").expect("write");
    let msg = message(r1cs_file::read(&path));
    assert!(msg.contains("not a cuzk R1CS file: 10 bytes"), "{msg}");

    let mut b = bytes.clone();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    reseal(&mut b);
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(
        msg.starts_with("unsupported cuzk R1CS file version 2: this build reads version 1"),
        "{msg}"
    );
    let mut b = bytes;
    b[12..16].copy_from_slice(&9u32.to_le_bytes());
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(msg.contains("field id 9"), "{msg}");
}

#[test]
fn column_out_of_range() {
    let m = ConstraintMatrices::new(
        vec![vec![(Fr::one(), 0)], vec![(Fr::from(3u64), 2)]],
        vec![vec![], vec![]],
        vec![vec![], vec![(Fr::one(), 1)]],
    )
    .expect("matrices");
    // Refused when writing, before a file exists.
    let msg = message(r1cs_file::write_to(Vec::new(), &m, 1, 2));
    assert!(
        msg.contains("term 0 of row 1 of matrix A has column 2, not below num_variables 2"),
        "{msg}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("never.r1cs");
    assert!(r1cs_file::write(&path, &m, 1, 2).is_err());
    assert!(!path.exists());
    assert!(!dir.path().join("never.r1cs.partial").exists());

    // A file claiming 2 variables (written for 3, header patched, resealed).
    let mut b = to_bytes(&m, 1, 3);
    b[32..40].copy_from_slice(&2u64.to_le_bytes());
    reseal(&mut b);
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(msg.contains("checksum matches"), "{msg}");
    assert!(
        msg.contains(
            "term 0 of row 1 of matrix A has column 2, not below the header's num_variables 2"
        ),
        "{msg}"
    );
}

#[test]
fn inconsistent_arguments_are_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut m = random_matrices(&mut rng, 4, 6, 2);
    let msg = message(r1cs_file::write_to(Vec::new(), &m, 7, 6));
    assert!(
        msg.contains("7 instance variables but 6 variables"),
        "{msg}"
    );
    let msg = message(r1cs_file::write_to(Vec::new(), &m, 1, (1usize << 32) + 1));
    assert!(msg.contains("at most 2^32"), "{msg}");
    m.c.pop();
    let msg = message(r1cs_file::write_to(Vec::new(), &m, 1, 6));
    assert!(msg.contains("4, 4 and 3 rows for 4 constraints"), "{msg}");

    // A header whose nonzero count disagrees with its rows (resealed).
    let m = random_matrices(&mut rng, 4, 6, 2);
    let mut b = to_bytes(&m, 1, 6);
    let nnz_c = u64::from_le_bytes(b[56..64].try_into().expect("8"));
    b[56..64].copy_from_slice(&(nnz_c + 1).to_le_bytes());
    b.splice(b.len() - 32..b.len() - 32, [0u8; 36]);
    reseal(&mut b);
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(
        msg.contains(&format!(
            "matrix C holds {nnz_c} nonzeros where the header says {}",
            nnz_c + 1
        )),
        "{msg}"
    );

    let missing = tempfile::tempdir()
        .expect("tempdir")
        .path()
        .join("absent.r1cs");
    let msg = message(r1cs_file::read(&missing));
    assert!(
        msg.contains("opening R1CS file") && msg.contains("absent.r1cs"),
        "{msg}"
    );
}

/// Coefficients are canonical: the modulus itself is refused, r - 1 read.
#[test]
fn coefficient_at_the_modulus() {
    let m = ConstraintMatrices::new(vec![vec![(-Fr::one(), 0)]], vec![vec![]], vec![vec![]])
        .expect("matrices");
    let mut b = to_bytes(&m, 1, 1);
    let back = r1cs_file::read_from(b.as_slice()).expect("read");
    assert_eq!(back.matrices.a[0][0].0, -Fr::one());
    // r - 1 + 1 = r: add one to the lowest byte (0x00 there).
    let low = 64 + 4 + 4;
    assert_eq!(b[low], 0x00);
    b[low] = 0x01;
    assert_eq!(
        &b[low..low + 32],
        Fr::MODULUS.to_bytes_le().as_slice(),
        "the bytes of r"
    );
    reseal(&mut b);
    let msg = message(r1cs_file::read_from(b.as_slice()));
    assert!(msg.contains("not canonical"), "{msg}");
}

/// Throughput of write and read on 2^20 constraints of 3 terms a row in
/// each matrix (about 340 MB); prints MB/s. A measurement, not a check:
/// `cargo test --release -p cuzk-prover --features test-utils,circuits
/// --test r1cs_file throughput -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run by hand in release"]
fn throughput() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let n = 1 << 20;
    let row = |rng: &mut ChaCha20Rng| -> Vec<(Fr, usize)> {
        (0..3)
            .map(|_| (Fr::rand(rng), rng.gen_range(0..n)))
            .collect()
    };
    let mut mat = || (0..n).map(|_| row(&mut rng)).collect::<Matrix<Fr>>();
    let (a, b, c) = (mat(), mat(), mat());
    let m = ConstraintMatrices::new(a, b, c).expect("matrices");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.r1cs");
    let t = std::time::Instant::now();
    let info = r1cs_file::write(&path, &m, 2, n).expect("write");
    let w = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let back = r1cs_file::read(&path).expect("read");
    let r = t.elapsed().as_secs_f64();
    assert_eq!(back.matrices, m);
    let mb = info.bytes as f64 / 1e6;
    println!(
        "{mb:.0} MB: write {w:.2} s ({:.0} MB/s), read {r:.2} s ({:.0} MB/s)",
        mb / w,
        mb / r
    );
}
