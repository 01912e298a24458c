//! The R1CS matrices in the compact form the GPU evaluates them from:
//! compressed sparse rows in chunks of rows, each chunk one contiguous
//! block of words with its own table of distinct coefficients.

use crate::r1cs::ConstraintMatrices;
use crate::{Error, Fr, Result};
use ark_ff::{AdditiveGroup, BigInt, Field};
use ark_relations::gr1cs::Matrix;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// Most rows a chunk (2^20).
pub(crate) const MAX_CHUNK_ROWS: usize = 1 << 20;
/// Most entries a chunk (2^23, 64 MiB of entries), unless one row alone
/// holds more (it then gets a chunk of its own).
pub(crate) const MAX_CHUNK_ENTRIES: usize = 1 << 23;

/// Coefficient index of 1 in every chunk's table: the entry adds its
/// variable without a multiplication (`CUZK_R1CS_COEFF_ONE` of
/// `cuzk/prover.h`).
const COEFF_ONE: u32 = 0;
/// Coefficient index of -1: the entry subtracts its variable
/// (`CUZK_R1CS_COEFF_MINUS_ONE`).
const COEFF_MINUS_ONE: u32 = 1;

/// A circuit's R1CS matrices (kept, shared) with their compact form for
/// evaluating `A z`, `B z`, `C z` on the GPU (see
/// [`crate::Prover::with_r1cs`]).
///
/// Each matrix is cut into chunks of consecutive rows (at most 2^20 rows
/// and 2^23 entries a chunk, a longer row alone). A chunk is one block of
/// 64-bit words, copied to the device in one transfer:
///
/// - the end of each row's entries, a `u32` a row counted from the chunk's
///   first entry (two a word, the last word padded);
/// - the entries, a word each: the column (low 32 bits) and the index of
///   its coefficient in the chunk's table (high 32 bits), then a word of
///   padding when the table would start at an odd word;
/// - the table (16-byte aligned): the chunk's distinct coefficients, Fr in Montgomery form
///   (four words each), starting with 1 and -1, which the evaluation adds
///   and subtracts without a multiplication.
///
/// A PoRep-shaped circuit's coefficients are 1, -1, 2 and powers of two,
/// so its tables are a few hundred bytes and an entry costs 8 bytes
/// (against 40 in [`ConstraintMatrices`]); a circuit of random
/// coefficients costs up to 40.
pub struct SparseR1cs {
    matrices: Arc<ConstraintMatrices>,
    num_variables: usize,
    parts: [Vec<RowChunk>; 3],
}

impl std::fmt::Debug for SparseR1cs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseR1cs")
            .field("num_constraints", &self.matrices.num_constraints)
            .field("num_variables", &self.num_variables)
            .field("chunks", &self.num_chunks())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// Consecutive rows of one matrix in one block of words (see
/// [`SparseR1cs`]).
pub(crate) struct RowChunk {
    /// The chunk's first row in the matrix.
    pub(crate) first_row: usize,
    /// Rows in the chunk.
    pub(crate) rows: usize,
    /// Entries in the chunk.
    pub(crate) entries: usize,
    /// Coefficients in the chunk's table (1 and -1 included).
    pub(crate) coefficients: usize,
    /// Row ends, entries, table, as the type's docs lay them out.
    pub(crate) words: Vec<u64>,
}

impl RowChunk {
    /// Words of the row ends (a `u32` a row, two a word).
    pub(crate) fn row_end_words(&self) -> usize {
        self.rows.div_ceil(2)
    }

    /// Word offset of the coefficient table: after the entries, rounded
    /// up to an even word, so that each coefficient is 16-byte aligned on
    /// the device (the kernel reads Fr as two 16-byte loads).
    pub(crate) fn table_offset(&self) -> usize {
        table_offset(self.rows, self.entries)
    }

    /// End of row `i`'s entries, counted from the chunk's first entry.
    fn row_end(&self, i: usize) -> usize {
        (self.words[i / 2] >> (32 * (i % 2))) as u32 as usize
    }

    /// Coefficient `k` of the table.
    fn coefficient(&self, k: usize) -> Fr {
        let at = self.table_offset() + 4 * k;
        let w = &self.words[at..at + 4];
        Fr::new_unchecked(BigInt([w[0], w[1], w[2], w[3]]))
    }

    /// `out[i] = <row i, z>` for the chunk's rows, on this thread.
    fn evaluate(&self, z: &[Fr], out: &mut [Fr]) {
        let table: Vec<Fr> = (0..self.coefficients)
            .map(|k| self.coefficient(k))
            .collect();
        let first = self.row_end_words();
        let entries = &self.words[first..first + self.entries];
        let mut lo = 0;
        for (i, o) in out.iter_mut().enumerate() {
            let hi = self.row_end(i);
            let mut acc = Fr::ZERO;
            for &e in &entries[lo..hi] {
                let v = z[e as u32 as usize];
                match (e >> 32) as u32 {
                    COEFF_ONE => acc += v,
                    COEFF_MINUS_ONE => acc -= v,
                    k => acc += v * table[k as usize],
                }
            }
            *o = acc;
            lo = hi;
        }
    }
}

impl SparseR1cs {
    /// The compact form of `matrices` (built on all cores; a PoRep-shaped
    /// 2^27 circuit takes seconds, and as many bytes as 8 an entry).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the matrices' row counts differ from
    /// `num_constraints`, or a column or a row's length passes 2^32 - 1.
    pub fn new(matrices: Arc<ConstraintMatrices>) -> Result<Self> {
        Self::with_limits(matrices, MAX_CHUNK_ROWS, MAX_CHUNK_ENTRIES)
    }

    /// [`SparseR1cs::new`] with chunks of at most `max_rows` rows and
    /// `max_entries` entries (tests cut small chunks).
    pub(crate) fn with_limits(
        matrices: Arc<ConstraintMatrices>,
        max_rows: usize,
        max_entries: usize,
    ) -> Result<Self> {
        let nc = matrices.num_constraints;
        let named = [("A", &matrices.a), ("B", &matrices.b), ("C", &matrices.c)];
        for (name, m) in named {
            if m.len() != nc {
                return Err(Error::InvalidArgument(format!(
                    "matrix {name} has {} rows but the system has {nc} constraints; build the \
                     matrices with ConstraintMatrices::new, which checks their shapes",
                    m.len()
                )));
            }
        }
        // The three matrices at once (each on all cores too, chunk by chunk).
        let built = named
            .into_par_iter()
            .map(|(name, m)| compact(m, name, max_rows.max(1), max_entries.max(1)))
            .collect::<Result<Vec<_>>>()?;
        let num_variables = built.iter().map(|(_, v)| *v).max().unwrap_or(0);
        let mut built = built.into_iter().map(|(c, _)| c);
        let parts = [(); 3].map(|()| built.next().unwrap_or_default());
        Ok(SparseR1cs {
            matrices,
            num_variables,
            parts,
        })
    }

    /// The same compact form without the row-major matrices it was built
    /// from: [`SparseR1cs::matrices`] then has the system's number of
    /// constraints and no rows, and its memory (about 40 bytes an entry and
    /// 24 a row of each matrix, some 40 GB for a PoRep-shaped 2^27 circuit)
    /// is freed once no one else holds the shared matrices. A
    /// [`crate::ProofJob`] with these matrices proves only on a prover
    /// holding this form ([`crate::Prover::with_r1cs`]), on the GPU or
    /// (with the witness check, or on the CPU path) from the compact form on
    /// the CPU; any other prover refuses it for its missing rows.
    ///
    /// The rows are many small allocations: freed, glibc keeps them in its
    /// arenas, resident and out of reach of large allocations (a key,
    /// pinned buffers). A process that needs that memory back calls
    /// `malloc_trim(0)` after the free, as cuzk-daemon does; this library
    /// leaves the process-wide heap alone.
    pub fn without_rows(mut self) -> Self {
        self.matrices = Arc::new(ConstraintMatrices {
            num_constraints: self.matrices.num_constraints,
            ..ConstraintMatrices::default()
        });
        self
    }

    /// Whether [`SparseR1cs::matrices`] holds the rows (see
    /// [`SparseR1cs::without_rows`]).
    pub fn has_rows(&self) -> bool {
        self.matrices.has_rows()
    }

    /// The matrices this form was built from (without their rows after
    /// [`SparseR1cs::without_rows`]). A [`crate::ProofJob`] whose
    /// `matrices` is this very reference is evaluated on the GPU by a
    /// prover holding this form.
    pub fn matrices(&self) -> &ConstraintMatrices {
        &self.matrices
    }

    /// The shared matrices (see [`SparseR1cs::matrices`]).
    pub fn matrices_arc(&self) -> &Arc<ConstraintMatrices> {
        &self.matrices
    }

    /// Number of constraints (rows of each matrix).
    pub fn num_constraints(&self) -> usize {
        self.matrices.num_constraints
    }

    /// One more than the largest column any entry names (0 without
    /// entries): an assignment must hold at least this many variables.
    pub fn num_variables(&self) -> usize {
        self.num_variables
    }

    /// Chunks of all three matrices.
    pub fn num_chunks(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    /// Bytes of the compact form (what a resident copy takes on the
    /// device, and what a streamed one sends over PCIe a proof).
    pub fn bytes(&self) -> u64 {
        self.chunks().map(|c| 8 * c.words.len() as u64).sum()
    }

    /// Bytes of the largest chunk (a streamed evaluation holds two).
    pub fn max_chunk_bytes(&self) -> u64 {
        self.chunks()
            .map(|c| 8 * c.words.len() as u64)
            .max()
            .unwrap_or(0)
    }

    /// Every chunk, A's then B's then C's.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &RowChunk> {
        self.parts.iter().flatten()
    }

    /// The chunks of matrix `k` (0: A, 1: B, 2: C).
    pub(crate) fn part(&self, k: usize) -> &[RowChunk] {
        &self.parts[k]
    }

    /// The evaluations as [`crate::ProofJob::evaluations`] computes them
    /// (`A z`, `B z`, `C z` on the constraints, the instance variables
    /// after the constraints in `A z`, zeros to 2^`log_n`), from the
    /// compact form on the CPU's cores: the reference of the GPU's
    /// evaluation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the constraints and inputs do not
    /// fit 2^`log_n`, or the assignment is shorter than `num_inputs` or
    /// than [`SparseR1cs::num_variables`].
    pub fn evaluate(&self, z: &[Fr], num_inputs: usize, log_n: u32) -> Result<[Vec<Fr>; 3]> {
        self.check_assignment(z.len(), num_inputs, log_n)?;
        let n = 1usize << log_n;
        let nc = self.num_constraints();
        let eval = |k: usize| {
            let mut out = vec![Fr::ZERO; n];
            let mut rest = &mut out[..nc];
            let mut slices = Vec::with_capacity(self.parts[k].len());
            for c in &self.parts[k] {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(c.rows);
                slices.push((c, head));
                rest = tail;
            }
            slices.into_par_iter().for_each(|(c, o)| c.evaluate(z, o));
            out
        };
        let mut a = eval(0);
        a[nc..nc + num_inputs].copy_from_slice(&z[..num_inputs]);
        Ok([a, eval(1), eval(2)])
    }

    /// Checks an assignment of `len` variables with `num_inputs` instance
    /// variables against this system and a domain of 2^`log_n`.
    pub(crate) fn check_assignment(&self, len: usize, num_inputs: usize, log_n: u32) -> Result<()> {
        let nc = self.num_constraints();
        if log_n as usize >= usize::BITS as usize || nc + num_inputs > 1usize << log_n {
            return Err(Error::InvalidArgument(format!(
                "{nc} constraints and {num_inputs} inputs do not fit a domain of 2^{log_n}"
            )));
        }
        if num_inputs > len || self.num_variables > len {
            return Err(Error::InvalidArgument(format!(
                "an assignment of {len} variables for a system whose matrices name {} and \
                 {num_inputs} inputs: the matrices and the assignment come from different \
                 circuits",
                self.num_variables
            )));
        }
        Ok(())
    }
}

/// Rows of one matrix, row-major.
type Rows = Vec<Vec<(Fr, usize)>>;

/// Most groups of rows (a chunk's worth each) a [`Compactor`] holds before
/// it builds them: one a core up to 16. A group holds at most 2^20 rows
/// and 2^23 entries (about 360 MB as `Vec`s, about 170 MB for a
/// PoRep-shaped circuit's rows), so at most about 6 GB wait at once.
const MAX_PENDING_GROUPS: usize = 16;

/// Builds a [`SparseR1cs`] without rows from rows that arrive one at a
/// time, matrix after matrix (A, B, then C), as a file reader decodes them:
/// the rows of at most one chunk a core ([`MAX_PENDING_GROUPS`] at most)
/// are held at once, so the row-major matrices (about 48 bytes an entry)
/// never sit in memory whole. Chunks are cut as [`SparseR1cs::new`] cuts them, so the result
/// is the same, word for word.
pub(crate) struct Compactor {
    max_rows: usize,
    max_entries: usize,
    parts: [Vec<RowChunk>; 3],
    /// Full groups of rows (first row, rows) waiting to be built.
    pending: Vec<(usize, Rows)>,
    /// The group being filled: its first row, its rows, its entries.
    start: usize,
    rows: Rows,
    entries: usize,
    /// The matrix being filled (0, 1, 2) and its next row.
    matrix: usize,
    next_row: usize,
    /// Rows of each matrix ended.
    row_counts: [usize; 3],
    /// One more than the largest column seen.
    vars: usize,
}

impl Compactor {
    /// A compactor cutting chunks as [`SparseR1cs::new`] does.
    pub(crate) fn new() -> Self {
        Self::with_limits(MAX_CHUNK_ROWS, MAX_CHUNK_ENTRIES)
    }

    /// As [`SparseR1cs::with_limits`].
    pub(crate) fn with_limits(max_rows: usize, max_entries: usize) -> Self {
        Compactor {
            max_rows: max_rows.max(1),
            max_entries: max_entries.max(1),
            parts: Default::default(),
            pending: Vec::new(),
            start: 0,
            rows: Vec::new(),
            entries: 0,
            matrix: 0,
            next_row: 0,
            row_counts: [0; 3],
            vars: 0,
        }
    }

    /// Adds the next row of matrix `k` (0, 1, 2 for A, B, C; a matrix's
    /// rows in order, the matrices in order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] as [`SparseR1cs::new`]: a row or a column
    /// past 2^32 - 1; [`Error::Internal`] for rows out of order.
    pub(crate) fn push(&mut self, k: usize, row: Vec<(Fr, usize)>) -> Result<()> {
        if k >= 3 || k < self.matrix {
            return Err(Error::Internal(format!(
                "a row of matrix {k} after rows of matrix {}: give the rows of A, B, C (0, 1, \
                 2) in order",
                self.matrix
            )));
        }
        while self.matrix < k {
            self.end_matrix()?;
        }
        let name = ["A", "B", "C"][k];
        let i = self.next_row;
        if row.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "matrix {name}, constraint {i}: {} terms, more than 2^32 - 1",
                row.len()
            )));
        }
        if i > self.start
            && (i - self.start == self.max_rows || self.entries + row.len() > self.max_entries)
        {
            self.close_group()?;
            self.start = i;
        }
        self.entries += row.len();
        self.rows.push(row);
        self.next_row += 1;
        Ok(())
    }

    /// Ends the group being filled; builds the pending groups once there is
    /// one for each core, or [`MAX_PENDING_GROUPS`].
    fn close_group(&mut self) -> Result<()> {
        let next = Vec::with_capacity(self.rows.len().min(self.max_rows));
        let rows = std::mem::replace(&mut self.rows, next);
        self.pending.push((self.start, rows));
        self.entries = 0;
        if self.pending.len() >= rayon::current_num_threads().clamp(1, MAX_PENDING_GROUPS) {
            self.build()?;
        }
        Ok(())
    }

    /// Builds the pending groups of the current matrix into chunks, on
    /// all cores, and frees their rows.
    fn build(&mut self) -> Result<()> {
        let name = ["A", "B", "C"][self.matrix];
        let built = std::mem::take(&mut self.pending)
            .into_par_iter()
            .map(|(first, rows)| chunk(&rows, first, name))
            .collect::<Result<Vec<_>>>()?;
        for (c, v) in built {
            self.vars = self.vars.max(v);
            self.parts[self.matrix].push(c);
        }
        Ok(())
    }

    /// Ends the current matrix (its last group built) and starts the next.
    fn end_matrix(&mut self) -> Result<()> {
        if !self.rows.is_empty() {
            let rows = std::mem::take(&mut self.rows);
            self.pending.push((self.start, rows));
        }
        self.build()?;
        self.row_counts[self.matrix] = self.next_row;
        self.matrix += 1;
        self.start = 0;
        self.next_row = 0;
        self.entries = 0;
        Ok(())
    }

    /// The compact form of the rows pushed, without rows
    /// ([`SparseR1cs::without_rows`]), for a system of `num_constraints`
    /// constraints.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a matrix got another number of rows
    /// than `num_constraints`; as [`Compactor::push`].
    pub(crate) fn finish(mut self, num_constraints: usize) -> Result<SparseR1cs> {
        while self.matrix < 3 {
            self.end_matrix()?;
        }
        for (k, &got) in self.row_counts.iter().enumerate() {
            if got != num_constraints {
                return Err(Error::InvalidArgument(format!(
                    "matrix {} has {got} rows but the system has {num_constraints} constraints",
                    ["A", "B", "C"][k]
                )));
            }
        }
        Ok(SparseR1cs {
            matrices: Arc::new(ConstraintMatrices {
                num_constraints,
                ..ConstraintMatrices::default()
            }),
            num_variables: self.vars,
            parts: self.parts,
        })
    }
}

/// Word offset of a chunk's table (see [`RowChunk::table_offset`]).
fn table_offset(rows: usize, entries: usize) -> usize {
    (rows.div_ceil(2) + entries).next_multiple_of(2)
}

/// The chunks of one matrix and one more than its largest column.
fn compact(
    m: &Matrix<Fr>,
    name: &str,
    max_rows: usize,
    max_entries: usize,
) -> Result<(Vec<RowChunk>, usize)> {
    let mut bounds = Vec::new();
    let (mut start, mut entries) = (0usize, 0usize);
    for (i, row) in m.iter().enumerate() {
        if row.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "matrix {name}, constraint {i}: {} terms, more than 2^32 - 1",
                row.len()
            )));
        }
        if i > start && (i - start == max_rows || entries + row.len() > max_entries) {
            bounds.push(start..i);
            start = i;
            entries = 0;
        }
        entries += row.len();
    }
    if start < m.len() {
        bounds.push(start..m.len());
    }
    let built = bounds
        .into_par_iter()
        .map(|r| chunk(&m[r.clone()], r.start, name))
        .collect::<Result<Vec<_>>>()?;
    let vars = built.iter().map(|(_, v)| *v).max().unwrap_or(0);
    Ok((built.into_iter().map(|(c, _)| c).collect(), vars))
}

/// One chunk of `rows` (the matrix's rows from `first_row`) and one more
/// than its largest column.
fn chunk(rows: &[Vec<(Fr, usize)>], first_row: usize, name: &str) -> Result<(RowChunk, usize)> {
    let entries: usize = rows.iter().map(Vec::len).sum();
    if entries > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "matrix {name}, constraint {first_row}: {entries} terms in one row, more than \
             2^32 - 1"
        )));
    }
    let row_words = rows.len().div_ceil(2);
    let mut words = vec![0u64; table_offset(rows.len(), entries)];
    let (one, minus_one) = (Fr::ONE, -Fr::ONE);
    let mut table = vec![one, minus_one];
    let mut index: HashMap<Fr, u32> = HashMap::new();
    // The last coefficient looked up: runs of one value (2 in XOR gates)
    // skip the hash.
    let mut last: Option<(Fr, u32)> = None;
    let mut vars = 0usize;
    let mut k = 0usize;
    for (i, row) in rows.iter().enumerate() {
        for &(coeff, col) in row {
            let col32 = u32::try_from(col).map_err(|_| {
                Error::InvalidArgument(format!(
                    "matrix {name}, constraint {}: column {col} passes 2^32 - 1",
                    first_row + i
                ))
            })?;
            let ci = if coeff == one {
                COEFF_ONE
            } else if coeff == minus_one {
                COEFF_MINUS_ONE
            } else if let Some((_, k)) = last.filter(|(c, _)| *c == coeff) {
                k
            } else {
                let k = *index.entry(coeff).or_insert_with(|| {
                    table.push(coeff);
                    (table.len() - 1) as u32
                });
                last = Some((coeff, k));
                k
            };
            words[row_words + k] = u64::from(col32) | (u64::from(ci) << 32);
            vars = vars.max(col + 1);
            k += 1;
        }
        words[i / 2] |= (k as u64) << (32 * (i % 2));
    }
    let coefficients = table.len();
    words.reserve_exact(4 * coefficients);
    for c in table {
        words.extend_from_slice(&c.0 .0);
    }
    Ok((
        RowChunk {
            first_row,
            rows: rows.len(),
            entries,
            coefficients,
            words,
        },
        vars,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Random matrices over `vars` variables: empty rows, rows of one to
    /// 40 terms, coefficients 1, -1, 0, small and random.
    pub(crate) fn random_matrices(
        rng: &mut ChaCha20Rng,
        rows: usize,
        vars: usize,
    ) -> ConstraintMatrices {
        let mut m = || -> Matrix<Fr> {
            (0..rows)
                .map(|_| {
                    let len = match rng.gen_range(0..10) {
                        0 => 0,
                        1 => rng.gen_range(20..40),
                        _ => rng.gen_range(1..4),
                    };
                    (0..len)
                        .map(|_| {
                            let c = match rng.gen_range(0..6) {
                                0 => Fr::ONE,
                                1 => -Fr::ONE,
                                2 => Fr::ZERO,
                                3 => Fr::from(1u64 << rng.gen_range(0..32)),
                                _ => Fr::rand(rng),
                            };
                            (c, rng.gen_range(0..vars))
                        })
                        .collect()
                })
                .collect()
        };
        let (a, b, c) = (m(), m(), m());
        ConstraintMatrices::new(a, b, c).expect("equal rows")
    }

    /// The compact form evaluates as `qap::evaluate` does, whatever the
    /// chunk limits (one row a chunk, chunks cut by entries, by rows, one
    /// chunk), and its sizes add up.
    #[test]
    fn evaluates_as_the_matrices_do() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5ba5e);
        for (rows, vars, ni) in [(1000, 300, 3), (37, 5, 1), (1, 1, 1), (0, 1, 1)] {
            let m = Arc::new(random_matrices(&mut rng, rows, vars));
            let z: Vec<Fr> = (0..vars).map(|_| Fr::rand(&mut rng)).collect();
            let log_n = crate::qap::domain_log_size(rows, ni).unwrap();
            let want = crate::qap::evaluate(&m, &z, ni, log_n, false).unwrap();
            for (max_rows, max_entries) in [(1, 1), (64, 50), (7, 1 << 20), (1 << 20, 1 << 23)] {
                let s = SparseR1cs::with_limits(m.clone(), max_rows, max_entries).unwrap();
                assert_eq!(
                    s.evaluate(&z, ni, log_n).unwrap(),
                    want,
                    "{max_rows} {max_entries}"
                );
                let covered: usize = (0..3)
                    .map(|k| s.part(k).iter().map(|c| c.rows).sum::<usize>())
                    .sum();
                assert_eq!(covered, 3 * rows);
                for k in 0..3 {
                    let mut next = 0;
                    for c in s.part(k) {
                        assert_eq!(c.table_offset() % 2, 0, "16-byte aligned table");
                        assert_eq!(c.words.len(), c.table_offset() + 4 * c.coefficients);
                        assert_eq!(c.first_row, next);
                        assert!(c.rows <= max_rows);
                        assert!(c.entries <= max_entries || c.rows == 1);
                        next += c.rows;
                    }
                }
                assert_eq!(
                    s.bytes(),
                    s.chunks().map(|c| 8 * c.words.len() as u64).sum::<u64>()
                );
                assert!(s.num_variables() <= vars);
            }
        }
    }

    /// Rows pushed one at a time make the same chunks, word for word, as
    /// the whole matrices do, whatever the limits; a matrix short of rows
    /// or rows out of order are errors.
    #[test]
    fn compactor_cuts_as_new_does() {
        let mut rng = ChaCha20Rng::seed_from_u64(0xc0a7);
        for (rows, vars) in [(1000, 300), (37, 5), (1, 1), (0, 1)] {
            let m = Arc::new(random_matrices(&mut rng, rows, vars));
            for (max_rows, max_entries) in [(1, 1), (64, 50), (7, 1 << 20), (1 << 20, 1 << 23)] {
                let want = SparseR1cs::with_limits(m.clone(), max_rows, max_entries).unwrap();
                let mut c = Compactor::with_limits(max_rows, max_entries);
                for (k, mat) in [&m.a, &m.b, &m.c].into_iter().enumerate() {
                    for row in mat.iter() {
                        c.push(k, row.clone()).unwrap();
                    }
                }
                let got = c.finish(rows).unwrap();
                assert!(rows == 0 || !got.has_rows());
                assert_eq!(got.num_constraints(), rows);
                assert_eq!(got.num_variables(), want.num_variables());
                for k in 0..3 {
                    let (g, w) = (got.part(k), want.part(k));
                    assert_eq!(
                        g.len(),
                        w.len(),
                        "{rows} {max_rows} {max_entries} matrix {k}"
                    );
                    for (g, w) in g.iter().zip(w) {
                        assert_eq!(
                            (g.first_row, g.rows, g.entries, g.coefficients),
                            (w.first_row, w.rows, w.entries, w.coefficients)
                        );
                        assert_eq!(g.words, w.words);
                    }
                }
            }
        }
        let row = vec![(Fr::ONE, 0)];
        let mut c = Compactor::new();
        c.push(0, row.clone()).unwrap();
        c.push(1, row.clone()).unwrap();
        let e = c.finish(1).unwrap_err().to_string();
        assert!(e.contains("matrix C has 0 rows"), "{e}");
        let mut c = Compactor::new();
        c.push(1, row.clone()).unwrap();
        let e = c.push(0, row.clone()).unwrap_err().to_string();
        assert!(e.contains("matrix 0 after rows of matrix 1"), "{e}");
        let e = c.push(3, row.clone()).unwrap_err().to_string();
        assert!(e.contains("matrix 3"), "{e}");
        // B skipped: its missing rows are the error, at the end.
        let mut c = Compactor::new();
        c.push(0, row.clone()).unwrap();
        c.push(2, row).unwrap();
        let e = c.finish(1).unwrap_err().to_string();
        assert!(e.contains("matrix B has 0 rows"), "{e}");
    }

    /// 1, -1 and powers of two share a chunk's table; the PoRep-shaped
    /// circuit's chunks are 8 bytes an entry and then some.
    #[test]
    fn repeated_coefficients_are_interned() {
        let two = Fr::from(2u64);
        let row = vec![(Fr::ONE, 0), (-Fr::ONE, 1), (two, 2), (two, 3), (two, 0)];
        let m = Arc::new(
            ConstraintMatrices::new(
                vec![row.clone(); 100],
                vec![row.clone(); 100],
                vec![row; 100],
            )
            .unwrap(),
        );
        let s = SparseR1cs::new(m).unwrap();
        assert_eq!(s.num_chunks(), 3);
        for c in s.chunks() {
            assert_eq!(c.coefficients, 3, "1, -1 and 2");
            assert_eq!(c.coefficient(2), two);
            assert_eq!(c.coefficient(COEFF_MINUS_ONE as usize), -Fr::ONE);
        }
        // 100 rows: 50 words of row ends, 500 entries, 3 coefficients of 4
        // words (the table already at an even word).
        assert_eq!(s.bytes(), 3 * 8 * (50 + 500 + 12));
        assert_eq!(s.num_variables(), 4);
    }

    /// Shapes that do not match are errors that say so, never panics.
    #[test]
    fn mismatches_are_errors() {
        let m = ConstraintMatrices {
            num_constraints: 2,
            a: vec![vec![]; 2],
            b: vec![vec![]; 1],
            c: vec![vec![]; 2],
        };
        let e = SparseR1cs::new(Arc::new(m)).unwrap_err().to_string();
        assert!(e.contains("matrix B has 1 rows"), "{e}");

        let row = vec![(Fr::ONE, 9)];
        let m = ConstraintMatrices::new(vec![row.clone()], vec![row.clone()], vec![row]).unwrap();
        let s = SparseR1cs::new(Arc::new(m)).unwrap();
        let e = s.evaluate(&[Fr::ONE; 5], 1, 1).unwrap_err().to_string();
        assert!(e.contains("different circuits"), "{e}");
        let e = s.evaluate(&[Fr::ONE; 10], 2, 1).unwrap_err().to_string();
        assert!(e.contains("do not fit"), "{e}");
        assert!(s.evaluate(&[Fr::ONE; 10], 1, 1).is_ok());
    }
}
