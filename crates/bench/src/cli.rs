//! Command-line options of `cuzk-bench` and the run settings derived from them.

use clap::Parser;
use std::path::PathBuf;

/// `cuzk-bench`'s options.
#[derive(Parser, Debug)]
#[command(about = "cuzk benchmark: GPU kernels beside CPU references, every result checked")]
pub(crate) struct Args {
    /// A short run (about a minute, small sizes).
    #[arg(long, conflicts_with = "full")]
    pub(crate) quick: bool,
    /// Up to the largest sizes: NTT 2^28, G1 MSM 2^26, G2 MSM 2^24,
    /// dense Groth16 proofs of 2^26 constraints (ark-groth16's to 2^22, a
    /// fitted line beyond), PoRep-shaped ones of 2^27 (2^26 beside
    /// supraseal-c2), batches of 10 partitions (4 at dense 2^26) with 2
    /// workers on the whole card and under 16 GiB, field operations over
    /// 2^24 elements on the GPU.
    #[arg(long)]
    pub(crate) full: bool,
    /// Comma-separated layers to run (available: field, alloc, ntt, msm, witness, prover).
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// Report folder.
    #[arg(long, default_value = "target/cuzk-report")]
    pub(crate) out: PathBuf,
    /// Seed of the random inputs (printed and recorded in report.json;
    /// pass a reported seed to replay a run's inputs). Default: drawn from
    /// the clock.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Keep the PoRep-shaped circuits' random-point keys in this folder
    /// (ark-serialize; written where the disk keeps 24 GiB free) and read
    /// them from it in later runs. Default: made afresh each run, never
    /// written (the 2^26 key is 25 GB).
    #[arg(long, value_name = "DIR")]
    pub(crate) key_cache: Option<PathBuf>,
    /// With `--full`: also the prover's batch variants under 16 GiB at
    /// PoRep-shaped 2^26 (the MSMs one after another; only the non-zero
    /// scalars' bases streamed), each beside the default in the same run
    /// (two more batch rows; their cost is in BENCHMARKS.md).
    #[arg(long, requires = "full")]
    pub(crate) variants: bool,
    /// supraseal-c2's proofs after its first at every size where it runs
    /// (default: 3 below 2^26, 1 from 2^26), each checked against cuzk's:
    /// many repeats of the same inputs test the peer's determinism.
    #[arg(long, value_name = "N")]
    pub(crate) peer_reps: Option<usize>,
    /// A criterion output folder (CRITERION_HOME of a run of the msm and
    /// ntt criterion benches): compare its medians with this run's figures
    /// for the same calls, print the ratios, flag those more than 10% apart,
    /// and write `criterion_agreement.json`.
    #[arg(long)]
    pub(crate) check_criterion: Option<PathBuf>,
    /// Test hook: as `--quick`, with the field layer over 64 elements (for
    /// the bench's own tests in debug builds).
    #[arg(long, hide = true, conflicts_with_all = ["quick", "full"])]
    pub(crate) smoke: bool,
    /// Test hook: corrupt the first cuzk result of this layer that is
    /// checked (field, ntt, msm, witness or prover), to show that a wrong
    /// result fails the run.
    #[arg(long, hide = true, value_name = "LAYER")]
    pub(crate) inject_mismatch: Option<String>,
}

/// How long a run is: the size ladders of each layer depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// `--smoke` (hidden): as `Quick`, with the field layer over 64
    /// elements.
    Smoke,
    /// `--quick`: small sizes, about a minute.
    Quick,
    /// No flag: sizes up to the middle of each ladder.
    Default,
    /// `--full`: up to the largest sizes.
    Full,
}

impl Size {
    /// Picks one of three values by run length (`Smoke` takes `quick`'s).
    pub(crate) fn pick<T>(self, quick: T, default: T, full: T) -> T {
        match self {
            Size::Smoke | Size::Quick => quick,
            Size::Default => default,
            Size::Full => full,
        }
    }
}

/// What every layer needs to know about the run.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    /// The GPU to bench on, or `None` for the CPU paths only.
    pub(crate) gpu: Option<i32>,
    /// Run length.
    pub(crate) size: Size,
    /// Seed of all random inputs; each layer draws from its own stream of it.
    pub(crate) seed: u64,
    /// `--key-cache`: where PoRep-shaped keys are kept between runs.
    pub(crate) key_cache: Option<PathBuf>,
    /// `--variants`: the prover's batch variants beside its defaults.
    pub(crate) variants: bool,
    /// `--peer-reps`: supraseal-c2's proofs after its first, if set.
    pub(crate) peer_reps: Option<usize>,
}

impl Run {
    /// A ChaCha20 generator for `seed` on stream `stream` (one stream per
    /// layer or input set, so that `--only LAYER --seed N` replays exactly
    /// the inputs that layer had in the full run).
    pub(crate) fn rng(&self, stream: u64) -> rand_chacha::ChaCha20Rng {
        use rand::SeedableRng;
        let mut r = rand_chacha::ChaCha20Rng::seed_from_u64(self.seed);
        r.set_stream(stream);
        r
    }

    /// `n` uniformly random elements of Fr from stream `stream` of the
    /// run's seed (see [`Run::random_with`]). Use a stream that nothing
    /// else draws from.
    pub(crate) fn random_fr(&self, stream: u64, n: usize) -> Vec<cuzk_field::Fr> {
        use ark_ff::UniformRand;
        self.random_with(stream, n, cuzk_field::Fr::rand)
    }

    /// `n` elements each drawn by `draw` from stream `stream` of the run's
    /// seed, on all cores: chunk `i` (2^16 elements) reads its own stretch
    /// of that ChaCha20 key stream, from word `i * 2^40` on, so the values
    /// depend on the seed, the stream and `n` only.
    pub(crate) fn random_with<T: Send>(
        &self,
        stream: u64,
        n: usize,
        draw: impl Fn(&mut rand_chacha::ChaCha20Rng) -> T + Sync,
    ) -> Vec<T> {
        self.random_chunked(stream, n, 1 << 16, draw)
    }

    /// [`Run::random_with`] in chunks of `chunk` elements: a small chunk
    /// spreads costly draws (random curve points) over the cores; the
    /// values depend on the chunk too.
    pub(crate) fn random_chunked<T: Send>(
        &self,
        stream: u64,
        n: usize,
        chunk: usize,
        draw: impl Fn(&mut rand_chacha::ChaCha20Rng) -> T + Sync,
    ) -> Vec<T> {
        use rayon::prelude::*;
        let chunk = chunk.max(1);
        let draw = &draw;
        (0..n.div_ceil(chunk))
            .into_par_iter()
            .flat_map_iter(|i| {
                let mut r = self.rng(stream);
                r.set_word_pos((i as u128) << 40);
                (0..chunk.min(n - i * chunk)).map(move |_| draw(&mut r))
            })
            .collect()
    }
}

impl Args {
    /// The run length the flags ask for.
    pub(crate) fn size(&self) -> Size {
        if self.smoke {
            Size::Smoke
        } else if self.quick {
            Size::Quick
        } else if self.full {
            Size::Full
        } else {
            Size::Default
        }
    }

    /// The layers to run, in order.
    pub(crate) fn layers(&self) -> Vec<String> {
        self.only
            .as_deref()
            .unwrap_or("field,alloc,ntt,msm,witness,prover")
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The seed given, or one drawn from the clock (below 2^53, so that
    /// JSON readers that parse numbers as doubles read it exactly).
    pub(crate) fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            // SplitMix64 finalizer: nearby clocks give unrelated seeds.
            let mut z = t.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) & ((1 << 53) - 1)
        })
    }
}
