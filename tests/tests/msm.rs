//! cuzk-msm against references: the CPU path (blst) against arkworks'
//! `VariableBaseMSM`; the GPU path against blst for G1 and G2 on the inputs
//! that break MSMs (empty, n = 1, odd sizes, identities, zero / one / r - 1
//! scalars, equal points with equal scalars, P beside -P, windows that
//! divide the scalar size, skewed witness-like scalars), proptest sizes
//! 0..=2^14, random sizes up to 2^20, spot checks at 2^24 and 2^26, a size
//! whose sorted pairs pass 2^31 entries, repeatability, bases precomputed
//! for one set of buckets, two-part MSMs; and the Ethereum
//! KZG ceremony's setup: commitments equal c-kzg's `blob_to_kzg_commitment`.

use ark_bls12_381::{g1, g2};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::CurveGroup;
use ark_ff::{BigInteger, One, PrimeField, UniformRand, Zero};
use ark_serialize::CanonicalDeserialize;
use cuzk_alloc::{DeviceBuffer, Strategy, Stream};
use cuzk_msm::{cpu, Error, Fr, GpuMsm, MsmConfig, MsmCurve, WitnessShaped};
use cuzk_tests::{gpu_or_skip, report, rng};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

/// How a case's inputs are drawn.
#[derive(Clone, Copy, Debug)]
enum Flavor {
    /// Uniform points and scalars.
    Random,
    /// Identities among the points; scalars 0, 1, r - 1, 2, small.
    Edges,
    /// Equal points with equal scalars (a bucket must double) and P beside
    /// -P with equal scalars (a bucket must reach the identity).
    Collisions,
    /// Witness-like: mostly 0 and 1, a few values repeated thousands of times.
    Skewed,
    /// The SHA-256 chain's witness: about 58% zeros, 42% ones, 0.1% other.
    Bits,
    /// Every scalar 0.
    AllZero,
    /// Every scalar 1.
    AllOne,
}

const FLAVORS: [Flavor; 7] = [
    Flavor::Random,
    Flavor::Edges,
    Flavor::Collisions,
    Flavor::Skewed,
    Flavor::Bits,
    Flavor::AllZero,
    Flavor::AllOne,
];

/// How many distinct points [`points`] draws; past it they repeat.
const POINT_PERIOD: usize = 1 << 16;

fn points<P: MsmCurve>(rng: &mut ChaCha20Rng, n: usize) -> Vec<Affine<P>> {
    // A random walk over a few random points is cheap; beyond
    // POINT_PERIOD the points repeat (which MSMs must handle anyway).
    let m = n.min(POINT_PERIOD);
    let base = cuzk_tests::cross::random_points::<P, _>(rng, m);
    (0..n).map(|i| base[i % m.max(1)]).collect()
}

/// blst's `sum_i scalars[i] * bases[i]` for bases from [`points`] (checked
/// to repeat with period [`POINT_PERIOD`]): each distinct base's scalars
/// summed in Fr, then blst's MSM over the distinct bases. By linearity
/// this is the MSM over all n, at the cost of a 2^16-point one (a dense
/// 2^26 G1 MSM takes blst about 70 s on 16 cores).
fn folded_reference<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Projective<P> {
    assert_eq!(bases.len(), scalars.len());
    let m = bases.len().min(POINT_PERIOD);
    assert!(
        bases.iter().enumerate().all(|(i, b)| *b == bases[i % m]),
        "the bases do not repeat with period {m}"
    );
    let mut folded = vec![Fr::zero(); m];
    for (i, s) in scalars.iter().enumerate() {
        folded[i % m] += s;
    }
    cpu::msm_dense(&bases[..m], &folded).unwrap()
}

fn inputs<P: MsmCurve>(
    rng: &mut ChaCha20Rng,
    n: usize,
    flavor: Flavor,
) -> (Vec<Affine<P>>, Vec<Fr>) {
    let mut bases = points::<P>(rng, n);
    let mut scalars: Vec<Fr> = (0..n).map(|_| Fr::rand(rng)).collect();
    let minus_one = -Fr::one();
    match flavor {
        Flavor::Random => {}
        Flavor::Edges => {
            for i in 0..n {
                match rng.gen_range(0..8) {
                    0 => bases[i] = Affine::identity(),
                    1 => scalars[i] = Fr::zero(),
                    2 => scalars[i] = Fr::one(),
                    3 => scalars[i] = minus_one,
                    4 => scalars[i] = Fr::from(rng.gen_range(0..1024u64)),
                    _ => {}
                }
            }
        }
        Flavor::Collisions => {
            for i in 1..n {
                match rng.gen_range(0..4) {
                    0 => {
                        bases[i] = bases[i - 1];
                        scalars[i] = scalars[i - 1];
                    }
                    1 => {
                        bases[i] = -bases[i - 1];
                        scalars[i] = scalars[i - 1];
                    }
                    _ => {}
                }
            }
        }
        Flavor::Skewed => {
            let few: Vec<Fr> = (0..4).map(|_| Fr::rand(rng)).collect();
            for s in scalars.iter_mut() {
                *s = match rng.gen_range(0..100) {
                    0..=44 => Fr::zero(),
                    45..=84 => Fr::one(),
                    85..=97 => few[rng.gen_range(0..few.len())],
                    _ => *s,
                };
            }
        }
        Flavor::Bits => {
            for s in scalars.iter_mut() {
                *s = match rng.gen_range(0..1000) {
                    0..=579 => Fr::zero(),
                    580..=998 => Fr::one(),
                    _ => *s,
                };
            }
        }
        Flavor::AllZero => scalars.fill(Fr::zero()),
        Flavor::AllOne => scalars.fill(Fr::one()),
    }
    (bases, scalars)
}

fn gpu() -> Option<&'static GpuMsm> {
    // One engine for every test, and one skip message.
    static G: OnceLock<Option<GpuMsm>> = OnceLock::new();
    G.get_or_init(|| {
        gpu_or_skip("msm (GPU tests)")?;
        Some(GpuMsm::new(0).expect("GPU engine on device 0"))
    })
    .as_ref()
}

/// `g` with plain-base MSMs at a fixed window of `c` bits.
fn with_window(g: &GpuMsm, c: u32) -> GpuMsm {
    let config = MsmConfig {
        window_bits: Some(c),
        ..*g.config()
    };
    g.clone().with_config(config).unwrap()
}

fn check_gpu<P: MsmCurve>(g: &GpuMsm, bases: &[Affine<P>], scalars: &[Fr], what: &str) {
    let want = cpu::msm(bases, scalars).unwrap();
    let got = g.msm(bases, scalars).unwrap();
    assert_eq!(
        got.into_affine(),
        want.into_affine(),
        "{} {what}: n = {}, window {}",
        P::NAME,
        bases.len(),
        g.config()
            .window_bits
            .unwrap_or_else(|| cuzk_msm::window_bits(bases.len()))
    );
}

// ---- CPU path ----------------------------------------------------------

fn cpu_case<P: MsmCurve>(seed: u64) {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    for n in [0usize, 1, 2, 3, 31, 33, 100, 1000] {
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(&mut r, n, flavor);
            let want = cpu::msm_arkworks(&b, &s).unwrap();
            assert_eq!(
                cpu::msm(&b, &s).unwrap(),
                want,
                "{} witness-shaped vs arkworks, n = {n}, {flavor:?}",
                P::NAME
            );
            assert_eq!(
                cpu::msm_dense(&b, &s).unwrap(),
                want,
                "{} blst vs arkworks, n = {n}, {flavor:?}",
                P::NAME
            );
            let shape = cpu::scalar_shape(&s);
            assert_eq!(shape.zeros + shape.ones + shape.other, n);
            assert_eq!(shape.zeros, s.iter().filter(|x| x.is_zero()).count());
            assert_eq!(shape.ones, s.iter().filter(|x| x.is_one()).count());
        }
    }
}

#[test]
fn cpu_msm_matches_arkworks() {
    let seed = rng("cpu_msm_matches_arkworks").gen();
    cpu_case::<g1::Config>(seed);
    cpu_case::<g2::Config>(seed);
}

#[test]
fn length_mismatch_is_an_error() {
    let mut r = rng("length_mismatch_is_an_error");
    let b = points::<g1::Config>(&mut r, 3);
    let s = vec![Fr::one(); 2];
    assert!(matches!(cpu::msm(&b, &s), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        cuzk_msm::msm(&b, &s),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_bad_arguments_are_errors() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_bad_arguments_are_errors");
    let b = points::<g1::Config>(&mut r, 3);
    let s = vec![Fr::one(); 2];
    assert!(matches!(g.msm(&b, &s), Err(Error::InvalidArgument(_))));
    for bad in [
        MsmConfig {
            window_bits: Some(25),
            ..MsmConfig::default()
        },
        MsmConfig {
            window_bits: Some(1),
            ..MsmConfig::default()
        },
        MsmConfig {
            windows_per_batch: Some(0),
            ..MsmConfig::default()
        },
    ] {
        assert!(
            matches!(g.clone().with_config(bad), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
    let fixed = g.upload_bases(&b).unwrap();
    assert!(matches!(
        fixed.msm(&[Fr::one(); 4]),
        Err(Error::InvalidArgument(_))
    ));
}

// ---- KZG: the Ethereum ceremony's setup --------------------------------

/// The 4096 G1 points of the Ethereum KZG ceremony in Lagrange form
/// (tests/data/kzg_g1_lagrange.bin: c-kzg 2.1.8's g1_lagrange_bytes.bin, 48
/// compressed bytes a point, natural order), bit-reversed as EIP-4844's
/// `blob_to_kzg_commitment` uses them.
fn kzg_setup() -> Vec<g1::G1Affine> {
    let bytes = include_bytes!("../data/kzg_g1_lagrange.bin");
    let mut pts: Vec<g1::G1Affine> = bytes
        .chunks_exact(48)
        .map(|c| g1::G1Affine::deserialize_compressed(c).expect("ceremony point"))
        .collect();
    assert_eq!(pts.len(), 4096);
    cuzk_ntt::bit_reverse_permute(&mut pts, 12).unwrap();
    pts
}

fn random_blob(r: &mut ChaCha20Rng) -> (Vec<Fr>, Box<c_kzg::Blob>) {
    let fr: Vec<Fr> = (0..4096).map(|_| Fr::rand(r)).collect();
    let mut bytes = Vec::with_capacity(4096 * 32);
    for x in &fr {
        bytes.extend_from_slice(&x.into_bigint().to_bytes_be());
    }
    (fr, Box::new(c_kzg::Blob::from_bytes(&bytes).unwrap()))
}

fn ckzg_commitment(blob: &c_kzg::Blob) -> g1::G1Affine {
    let c = c_kzg::ethereum_kzg_settings(0)
        .blob_to_kzg_commitment(blob)
        .unwrap();
    g1::G1Affine::deserialize_compressed(&c.to_bytes()[..]).unwrap()
}

#[test]
fn kzg_commitments_equal_c_kzg() {
    let mut r = rng("kzg_commitments_equal_c_kzg");
    let setup = kzg_setup();
    let blobs: Vec<_> = (0..3).map(|_| random_blob(&mut r)).collect();
    let want: Vec<g1::G1Affine> = blobs.iter().map(|(_, b)| ckzg_commitment(b)).collect();
    for ((fr, _), w) in blobs.iter().zip(&want) {
        assert_eq!(cpu::msm(&setup, fr).unwrap().into_affine(), *w, "CPU");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_kzg_commitments_equal_c_kzg() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_kzg_commitments_equal_c_kzg");
    let setup = kzg_setup();
    let blobs: Vec<_> = (0..3).map(|_| random_blob(&mut r)).collect();
    let want: Vec<g1::G1Affine> = blobs.iter().map(|(_, b)| ckzg_commitment(b)).collect();
    let fixed = g.upload_bases(&setup).unwrap();
    let scalars: Vec<&[Fr]> = blobs.iter().map(|(f, _)| f.as_slice()).collect();
    let got = fixed.msm_batch(&scalars).unwrap();
    for (x, w) in got.iter().zip(&want) {
        assert_eq!(x.into_affine(), *w, "GPU, fixed bases");
    }
    report(&format!(
        "kzg: {} blob commitments on the GPU equal c-kzg's",
        got.len()
    ));
}

// ---- GPU path ----------------------------------------------------------

fn gpu_edges<P: MsmCurve>(g: &GpuMsm, r: &mut ChaCha20Rng) {
    for n in [
        0usize, 1, 2, 3, 31, 32, 33, 63, 64, 65, 255, 257, 1000, 4099,
    ] {
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(r, n, flavor);
            check_gpu(g, &b, &s, &format!("{flavor:?}"));
        }
    }
    // All scalars equal / all points equal, and the whole input zero.
    let (b, _) = inputs::<P>(r, 777, Flavor::Random);
    check_gpu(g, &b, &vec![-Fr::one(); 777], "all r - 1");
    check_gpu(
        g,
        &[b[0]; 777],
        &vec![Fr::from(5u64); 777],
        "one point, one scalar",
    );
    check_gpu(g, &b, &vec![Fr::zero(); 777], "all zero scalars");
    check_gpu(
        g,
        &[Affine::<P>::identity(); 777],
        &vec![Fr::one(); 777],
        "all identities",
    );
    // Windows that divide the scalars' 255 bits (3, 5, 15, 17) or 256
    // (2, 4, 8, 16), and the extremes.
    for c in [2u32, 3, 4, 5, 8, 13, 15, 16, 17, 20, 24] {
        let gc = with_window(g, c);
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(r, 3000, flavor);
            check_gpu(&gc, &b, &s, &format!("window {c}, {flavor:?}"));
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_edge_cases() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_edge_cases");
    gpu_edges::<g1::Config>(g, &mut r);
    gpu_edges::<g2::Config>(g, &mut r);
    report("msm: G1 and G2 edge cases equal blst");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_msm_proptest(log in 0u32..=14, frac in 0.0f64..1.0, flavor in 0usize..7, g2 in any::<bool>(), seed in any::<u64>()) {
        let Some(g) = gpu() else { return Ok(()) };
        let n = ((1usize << log) as f64 * (0.5 + frac / 2.0)) as usize;
        let mut r = ChaCha20Rng::seed_from_u64(seed);
        if g2 {
            let (b, s) = inputs::<g2::Config>(&mut r, n, FLAVORS[flavor]);
            check_gpu(g, &b, &s, "proptest");
        } else {
            let (b, s) = inputs::<g1::Config>(&mut r, n, FLAVORS[flavor]);
            check_gpu(g, &b, &s, "proptest");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_random_sizes_to_2_20() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_random_sizes_to_2_20");
    for k in 0..4 {
        let n = r.gen_range(1 << 15..=1 << 20);
        let flavor = FLAVORS[k % 4];
        let (b, s) = inputs::<g1::Config>(&mut r, n, flavor);
        check_gpu(g, &b, &s, &format!("{flavor:?}"));
        let n2 = n / 4;
        let (b, s) = inputs::<g2::Config>(&mut r, n2, flavor);
        check_gpu(g, &b, &s, &format!("{flavor:?}"));
        report(&format!(
            "msm: G1 n = {n} and G2 n = {n2} ({flavor:?}) equal blst"
        ));
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_is_repeatable() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_is_repeatable");
    let (b, s) = inputs::<g1::Config>(&mut r, 1 << 16, Flavor::Skewed);
    let fixed = g.upload_bases(&b).unwrap();
    let first = fixed.msm(&s).unwrap().into_affine();
    for _ in 0..10 {
        assert_eq!(fixed.msm(&s).unwrap().into_affine(), first);
    }
    assert_eq!(first, cpu::msm(&b, &s).unwrap().into_affine());
    let (b, s) = inputs::<g2::Config>(&mut r, 1 << 14, Flavor::Random);
    let first = g.msm(&b, &s).unwrap().into_affine();
    for _ in 0..5 {
        assert_eq!(g.msm(&b, &s).unwrap().into_affine(), first);
    }
}

/// One 2^16 G1 and one 2^16 G2 MSM, and each again over bases precomputed
/// for 16-bit windows: the case `compute-sanitizer` runs (`--tool memcheck`
/// and `--tool racecheck`).
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_sanitizer_case() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_sanitizer_case");
    let (b, s) = inputs::<g1::Config>(&mut r, 1 << 16, Flavor::Edges);
    check_gpu(g, &b, &s, "sanitizer case");
    check_precomputed(g, &b, &s, Some(16), "sanitizer case");
    let (b, s) = inputs::<g2::Config>(&mut r, 1 << 16, Flavor::Edges);
    check_gpu(g, &b, &s, "sanitizer case");
    check_precomputed(g, &b, &s, Some(16), "sanitizer case");
}

/// The MSM over bases precomputed for window `c` (None: the engine's
/// choice) against blst, for all the scalars and for a prefix of them.
fn check_precomputed<P: MsmCurve>(
    g: &GpuMsm,
    bases: &[Affine<P>],
    scalars: &[Fr],
    c: Option<u32>,
    what: &str,
) {
    let fixed = g.upload_bases_precomputed(bases, c).unwrap();
    if c.is_some() && !bases.is_empty() {
        assert_eq!(fixed.precomputed_window_bits(), c);
    }
    let want = cpu::msm(bases, scalars).unwrap().into_affine();
    assert_eq!(
        fixed.msm(scalars).unwrap().into_affine(),
        want,
        "{} {what}: precomputed, n = {}, window {:?}",
        P::NAME,
        bases.len(),
        fixed.precomputed_window_bits()
    );
    let k = scalars.len() * 2 / 3;
    let want = cpu::msm(&bases[..k], &scalars[..k]).unwrap().into_affine();
    assert_eq!(
        fixed.msm(&scalars[..k]).unwrap().into_affine(),
        want,
        "{} {what}: precomputed prefix of {k}, n = {}",
        P::NAME,
        bases.len()
    );
}

fn gpu_precomputed_edges<P: MsmCurve>(g: &GpuMsm, r: &mut ChaCha20Rng) {
    for n in [0usize, 1, 2, 33, 257, 4099] {
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(r, n, flavor);
            check_precomputed(g, &b, &s, None, &format!("{flavor:?}"));
        }
    }
    // Windows that divide 255 or 256, odd ones, and the largest (26 bits:
    // 2^25 buckets, 10 copies).
    for c in [2u32, 3, 8, 13, 16, 17, 21, 24, 26] {
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(r, 3000, flavor);
            check_precomputed(g, &b, &s, Some(c), &format!("window {c}, {flavor:?}"));
        }
    }
}

/// Bases precomputed for one set of buckets across windows: every edge-case
/// flavour, windows 2..=26, prefixes; bad windows are errors.
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_precomputed_bases() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_precomputed_bases");
    gpu_precomputed_edges::<g1::Config>(g, &mut r);
    gpu_precomputed_edges::<g2::Config>(g, &mut r);
    let (b, _) = inputs::<g1::Config>(&mut r, 10, Flavor::Random);
    for c in [0u32, 1, 27, 40] {
        assert!(
            matches!(
                g.upload_bases_precomputed(&b, Some(c)),
                Err(Error::InvalidArgument(_))
            ),
            "window {c}"
        );
    }
    report("msm: G1 and G2 over precomputed bases (windows 2..=26) equal blst");
}

// ---- witness-shaped MSMs ------------------------------------------------

/// Scalars of which a fraction `trivial` is 0 or 1 (half each), the rest
/// mixed: small values (2..1024), r - 1 and uniform ones.
fn mixed(r: &mut ChaCha20Rng, n: usize, trivial: f64) -> Vec<Fr> {
    (0..n)
        .map(|_| {
            if r.gen_bool(trivial) {
                if r.gen_bool(0.5) {
                    Fr::zero()
                } else {
                    Fr::one()
                }
            } else {
                match r.gen_range(0..3) {
                    0 => Fr::from(r.gen_range(2..1024u64)),
                    1 => -Fr::one(),
                    _ => Fr::rand(r),
                }
            }
        })
        .collect()
}

/// `g` with `witness_shaped` set.
fn shaped(g: &GpuMsm, w: WitnessShaped) -> GpuMsm {
    let config = MsmConfig {
        witness_shaped: w,
        ..*g.config()
    };
    g.clone().with_config(config).unwrap()
}

/// The scalars in device memory of `g`'s GPU.
fn on_device(g: &GpuMsm, scalars: &[Fr]) -> DeviceBuffer<Fr> {
    let stream = Stream::new(g.memory().device()).unwrap();
    let mut d = g
        .memory()
        .alloc::<Fr>(scalars.len(), Strategy::Async, &stream, None)
        .unwrap();
    d.copy_from_host(scalars).unwrap();
    d
}

/// One case through every way in: host scalars witness-shaped, dense and
/// detected; device scalars witness-shaped and dense; bases precomputed for
/// a 12-bit window, witness-shaped.
fn check_shapes<P: MsmCurve>(g: &GpuMsm, bases: &[Affine<P>], scalars: &[Fr], what: &str) {
    let want = cpu::msm_dense(bases, scalars).unwrap().into_affine();
    let n = bases.len();
    for w in [
        WitnessShaped::Always,
        WitnessShaped::Never,
        WitnessShaped::Detect,
    ] {
        let gw = shaped(g, w);
        let fixed = gw.upload_bases(bases).unwrap();
        assert_eq!(
            fixed.msm(scalars).unwrap().into_affine(),
            want,
            "{} {what}: n = {n}, {w:?}, host scalars",
            P::NAME
        );
        let d = on_device(g, scalars);
        assert_eq!(
            fixed.msm_device(&d, 0..d.len()).unwrap().into_affine(),
            want,
            "{} {what}: n = {n}, {w:?}, device scalars",
            P::NAME
        );
        if n > 1 {
            // A range that starts past the buffer's first scalar.
            let shifted = cpu::msm_dense(&bases[..n - 1], &scalars[1..]).unwrap();
            assert_eq!(
                fixed.msm_device(&d, 1..n).unwrap().into_affine(),
                shifted.into_affine(),
                "{} {what}: n = {n}, {w:?}, device scalars 1..n",
                P::NAME
            );
        }
    }
    if n > 0 {
        let pre = shaped(g, WitnessShaped::Always)
            .upload_bases_precomputed(bases, Some(12))
            .unwrap();
        assert_eq!(
            pre.msm(scalars).unwrap().into_affine(),
            want,
            "{} {what}: n = {n}, witness-shaped over precomputed bases",
            P::NAME
        );
        let d = on_device(g, scalars);
        assert_eq!(
            pre.msm_device(&d, 0..d.len()).unwrap().into_affine(),
            want,
            "{} {what}: n = {n}, device scalars over precomputed bases",
            P::NAME
        );
    }
}

fn gpu_witness_edges<P: MsmCurve>(g: &GpuMsm, r: &mut ChaCha20Rng) {
    for n in [0usize, 1, 2, 31, 33, 255, 1000, 4099] {
        for flavor in FLAVORS {
            let (b, s) = inputs::<P>(r, n, flavor);
            check_shapes(g, &b, &s, &format!("{flavor:?}"));
        }
        for trivial in [0.0, 0.25, 0.5, 0.9, 0.99, 1.0] {
            let (b, _) = inputs::<P>(r, n, Flavor::Edges);
            let s = mixed(r, n, trivial);
            check_shapes(g, &b, &s, &format!("{trivial} of 0/1, the rest mixed"));
        }
    }
    // Ones on identity bases, on equal points (the sum doubles) and on P
    // beside -P (the sum passes through the identity).
    let (b, _) = inputs::<P>(r, 3000, Flavor::Random);
    let mut pts = b.clone();
    for i in (0..3000).step_by(3) {
        pts[i] = Affine::identity();
    }
    check_shapes(g, &pts, &vec![Fr::one(); 3000], "ones on identities");
    check_shapes(
        g,
        &[b[0]; 3000],
        &vec![Fr::one(); 3000],
        "ones on one point",
    );
    let pm: Vec<Affine<P>> = (0..3000)
        .map(|i| if i % 2 == 0 { b[i / 2] } else { -b[i / 2] })
        .collect();
    check_shapes(g, &pm, &vec![Fr::one(); 3000], "ones on P and -P");
    check_shapes(
        g,
        &pm[..2999],
        &vec![Fr::one(); 2999],
        "ones on P and -P, one left",
    );
}

/// Witness-shaped MSMs (zeros skipped, ones summed, the rest through
/// Pippenger by index) equal blst for G1 and G2: every flavour, every mix
/// of 0/1 with small, r - 1 and uniform scalars, host and device scalars,
/// plain and precomputed bases, and sizes past the first-level sum's 2^18
/// partials and the two-part threshold.
#[test]
#[ignore = "needs a GPU"]
fn gpu_witness_shaped_msm_equals_blst() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_witness_shaped_msm_equals_blst");
    gpu_witness_edges::<g1::Config>(g, &mut r);
    gpu_witness_edges::<g2::Config>(g, &mut r);
    for (n, flavor) in [
        (SPLIT_MIN_POINTS + 5, Flavor::Bits),
        ((1 << 21) + 3, Flavor::AllOne),
        ((1 << 21) + 9, Flavor::Skewed),
    ] {
        let (b, s) = inputs::<g1::Config>(&mut r, n, flavor);
        check_shapes(g, &b, &s, &format!("{flavor:?}"));
    }
    let (b, s) = inputs::<g2::Config>(&mut r, SPLIT_MIN_POINTS + 1, Flavor::Bits);
    check_shapes(g, &b, &s, "Bits");
    // Ranges past the buffer or longer than the bases are errors.
    let (b, s) = inputs::<g1::Config>(&mut r, 100, Flavor::Bits);
    let fixed = g.upload_bases(&b[..50]).unwrap();
    let d = on_device(g, &s);
    #[allow(clippy::reversed_empty_ranges)] // a reversed range must be refused
    let ranges = [0..51, 90..101, 60..50];
    for range in ranges {
        assert!(
            matches!(
                fixed.msm_device(&d, range.clone()),
                Err(Error::InvalidArgument(_))
            ),
            "{range:?}"
        );
    }
    report("msm: witness-shaped G1 and G2 MSMs (host and device scalars, plain and precomputed bases) equal blst");
}

/// The sizes of the figures: G1 2^24 and 2^26 + 3, G2 2^24, with
/// the SHA-256 chain's 0/1 fraction and 99% 0/1, witness-shaped against
/// blst's witness-shaped CPU path (itself checked against dense blst in CI).
#[test]
#[ignore = "needs a GPU"]
fn gpu_witness_shaped_large() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_witness_shaped_large");
    let w = shaped(g, WitnessShaped::Always);
    let n = (1 << 26) + 3;
    let b = points::<g1::Config>(&mut r, n);
    for n in [1usize << 24, n] {
        let fixed = w.upload_bases(&b[..n]).unwrap();
        for trivial in [0.9996, 0.99] {
            let s = mixed(&mut r, n, trivial);
            let want = cpu::msm(&b[..n], &s).unwrap().into_affine();
            assert_eq!(
                fixed.msm(&s).unwrap().into_affine(),
                want,
                "G1 n = {n}, {trivial}"
            );
            let d = on_device(g, &s);
            assert_eq!(
                fixed.msm_device(&d, 0..d.len()).unwrap().into_affine(),
                want,
                "G1 n = {n}, {trivial}, device"
            );
            report(&format!(
                "msm: witness-shaped G1 n = {n} ({trivial} of 0/1) equals blst"
            ));
        }
    }
    drop(b);
    let n = 1 << 24;
    let b = points::<g2::Config>(&mut r, n);
    let fixed = w.upload_bases(&b).unwrap();
    let s = mixed(&mut r, n, 0.9996);
    assert_eq!(
        fixed.msm(&s).unwrap().into_affine(),
        cpu::msm(&b, &s).unwrap().into_affine(),
        "G2 n = {n}"
    );
    report(&format!("msm: witness-shaped G2 n = {n} equals blst"));
}

/// Under device-memory caps that the full plan does not fit, a 2^22 G1 MSM
/// shrinks its plan (windows a batch, parts, window, chunks of points) and
/// still equals blst, within the cap; a witness-shaped one under the
/// smallest cap too, and under a cap with no room for its scalars
/// (classified on the host); below the smallest plan it is an
/// out-of-memory error that names it.
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_shrinks_to_the_budget() {
    if gpu().is_none() {
        return;
    }
    let mut r = rng("gpu_msm_shrinks_to_the_budget");
    let n = 1 << 22;
    let (b, s) = inputs::<g1::Config>(&mut r, n, Flavor::Random);
    let want = cpu::msm(&b, &s).unwrap().into_affine();
    let bits = mixed(&mut r, n, 0.9996);
    let want_bits = cpu::msm(&b, &bits).unwrap().into_affine();
    let dense = MsmConfig {
        witness_shaped: WitnessShaped::Never,
        ..MsmConfig::default()
    };
    let full = cuzk_msm::scratch_bytes_estimate::<g1::Config>(n, &dense).unwrap();
    let bases = 96 * n as u64;
    let engine = |cap: u64, config: MsmConfig| capped(cap).with_config(config).unwrap();
    // A witness-shaped MSM under `cap` equals blst's, within the cap.
    let shaped_within = |cap: u64, what: &str| {
        let g = engine(cap, MsmConfig::default());
        let fixed = g.upload_bases(&b).unwrap();
        assert_eq!(fixed.msm(&bits).unwrap().into_affine(), want_bits, "{what}");
        let peak = g.memory().budget().peak_claimed_bytes();
        assert!(peak <= cap, "{what}: peak {peak} > cap {cap}");
    };
    for room in [full / 2, full / 8, full / 32, 48 << 20] {
        // Bases, the scalars of a chunk (at most all of them) and the room.
        let cap = bases + 32 * n as u64 + room;
        let g = engine(cap, dense);
        let fixed = g.upload_bases(&b).unwrap();
        assert_eq!(fixed.msm(&s).unwrap().into_affine(), want, "room {room}");
        let peak = g.memory().budget().peak_claimed_bytes();
        assert!(peak <= cap, "dense, room {room}: peak {peak} > cap {cap}");
        shaped_within(cap, &format!("witness-shaped, room {room}"));
        report(&format!(
            "msm: G1 2^22 under a cap of {} MiB (full scratch {} MiB) equals blst",
            cap >> 20,
            full >> 20
        ));
    }
    // No room for the witness-shaped scalars beside the bases (8 bytes a
    // scalar where copying them in takes 36): the host classifies them and
    // only the indices go up.
    shaped_within(
        bases + 8 * n as u64,
        "witness-shaped, classified on the host",
    );
    let g = engine(bases + (1 << 20), dense);
    let fixed = g.upload_bases(&b).unwrap();
    match fixed.msm(&s) {
        Err(Error::OutOfMemory(m)) => assert!(m.contains("smallest plan"), "{m}"),
        other => panic!("expected out of memory, got {other:?}"),
    }
}

/// An engine on GPU 0 whose budget is capped at `cap` bytes (no margin).
fn capped(cap: u64) -> GpuMsm {
    use cuzk_alloc::{BudgetConfig, DeviceMemory};
    let mem = DeviceMemory::new(
        0,
        BudgetConfig {
            margin_bytes: 0,
            cap_bytes: Some(cap),
        },
        u64::MAX,
    )
    .unwrap();
    GpuMsm::with_memory(mem).unwrap()
}

/// Streamed bases of one curve: under each cap (one chunk, two uneven
/// chunks, many chunks of the minimal size) host scalars dense and
/// witness-shaped, pageable and pinned bases, device scalars and a prefix
/// equal blst's; the budget's peak stays under the cap; `GpuMsm::msm`
/// streams when the bases do not fit (under `fallback`, less than the
/// bases' bytes); below the floor it is an
/// out-of-memory error naming the streaming minimum.
fn check_streamed<P: MsmCurve>(
    r: &mut ChaCha20Rng,
    n: usize,
    caps: &[u64],
    fallback: u64,
    floor: u64,
) where
    Affine<P>: cuzk_field::DeviceRepr,
{
    let g = gpu().expect("checked by the caller");
    let (b, s) = inputs::<P>(r, n, Flavor::Random);
    let bits = mixed(r, n, 0.9);
    let want = cpu::msm_dense(&b, &s).unwrap().into_affine();
    let want_bits = cpu::msm_dense(&b, &bits).unwrap().into_affine();
    let want_prefix = cpu::msm_dense(&b[..n - 7], &s[..n - 7])
        .unwrap()
        .into_affine();
    let mut pinned = cuzk_alloc::PinnedBuffer::<Affine<P>>::new(n).unwrap();
    pinned.copy_from_slice(&b);
    let on_gpu = on_device(g, &s);
    // The bases of the witness-shaped scalars that are not zero, gathered
    // (`msm_streamed_device_gathered`: by the GPU from the pinned bases, by
    // the host threads from pageable ones), with those scalars on the
    // device; a second gather of every other base, out of order and with a
    // repeat, against dense scalars.
    let nz: Vec<u32> = (0..n as u32)
        .filter(|&i| !bits[i as usize].is_zero())
        .collect();
    let nz_scalars: Vec<Fr> = nz.iter().map(|&i| bits[i as usize]).collect();
    let nz_on_gpu = on_device(g, &nz_scalars);
    let mut odd: Vec<u32> = (0..n as u32).rev().step_by(2).collect();
    odd.push(odd[0]);
    let odd_scalars: Vec<Fr> = odd.iter().map(|&i| s[i as usize]).collect();
    let odd_bases: Vec<Affine<P>> = odd.iter().map(|&i| b[i as usize]).collect();
    let want_odd = cpu::msm_dense(&odd_bases, &odd_scalars)
        .unwrap()
        .into_affine();
    let odd_on_gpu = on_device(g, &odd_scalars);
    for &cap in caps {
        let e = capped(cap);
        let what = format!(
            "{} 2^{:.2} under {} MiB",
            P::NAME,
            (n as f64).log2(),
            cap >> 20
        );
        assert_eq!(
            e.msm_streamed(&b, &s).unwrap().into_affine(),
            want,
            "{what}"
        );
        assert_eq!(
            e.msm_streamed(&pinned, &s).unwrap().into_affine(),
            want,
            "{what}, pinned"
        );
        assert_eq!(
            e.msm_streamed(&pinned, &bits).unwrap().into_affine(),
            want_bits,
            "{what}, witness-shaped"
        );
        assert_eq!(
            e.msm_streamed(&b, &s[..n - 7]).unwrap().into_affine(),
            want_prefix,
            "{what}, a prefix"
        );
        assert_eq!(
            e.msm_streamed_device(&pinned, &on_gpu, 0..n)
                .unwrap()
                .into_affine(),
            want,
            "{what}, device scalars"
        );
        assert_eq!(
            e.msm_streamed_device_gathered(&pinned, &nz, &nz_on_gpu, 0..nz.len())
                .unwrap()
                .into_affine(),
            want_bits,
            "{what}, only the bases of non-zero scalars"
        );
        assert_eq!(
            e.msm_streamed_device_gathered(&b, &odd, &odd_on_gpu, 0..odd.len())
                .unwrap()
                .into_affine(),
            want_odd,
            "{what}, pageable bases gathered out of order"
        );
        assert_eq!(
            e.msm_streamed_device_gathered(&pinned, &odd, &odd_on_gpu, 0..odd.len())
                .unwrap()
                .into_affine(),
            want_odd,
            "{what}, pinned bases gathered out of order by the GPU"
        );
        let peak = e.memory().budget().peak_claimed_bytes();
        assert!(peak <= cap, "{what}: peak {peak} > cap {cap}");
        report(&format!("msm: {what}, streamed bases, equals blst"));
    }
    // GpuMsm::msm with bases larger than the budget streams them.
    assert!(fallback < (n * std::mem::size_of::<Affine<P>>()) as u64);
    let e = capped(fallback);
    assert_eq!(
        e.msm(&b, &s).unwrap().into_affine(),
        want,
        "msm() falls back to streaming"
    );
    match capped(floor - 1).msm_streamed(&b, &s) {
        Err(Error::OutOfMemory(m)) => assert!(m.contains("streaming"), "{m}"),
        other => panic!("expected out of memory below the floor, got {other:?}"),
    }
    assert!(
        e.msm_streamed(&b[..3], &s).is_err(),
        "more scalars than bases"
    );
    match e.msm_streamed_device_gathered(&b[..n / 2], &odd, &odd_on_gpu, 0..odd.len()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("past"), "{m}"),
        other => panic!("expected an index past the bases to be refused, got {other:?}"),
    }
    assert!(
        e.msm_streamed_device_gathered(&b, &odd[1..], &odd_on_gpu, 0..odd.len())
            .is_err(),
        "fewer indices than scalars"
    );
}

/// Bases that stay in host memory and stream to the GPU in chunks (the
/// next chunk's copy overlapping this chunk's MSM) give blst's results for
/// G1 and G2 (see `check_streamed`).
#[test]
#[ignore = "needs a GPU"]
fn gpu_streamed_msm_equals_blst() {
    if gpu().is_none() {
        return;
    }
    let mut r = rng("gpu_streamed_msm_equals_blst");
    // G1, 96 bytes a point: the floor is 4 x 2^16 x 96 bytes = 24 MiB.
    let n = (1 << 20) + 12345;
    let caps = [8 * 96 * n as u64, 150 << 20, 40 << 20];
    check_streamed::<g1::Config>(&mut r, n, &caps, 40 << 20, 24 << 20);
    // G2, 192 bytes a point: the floor is 48 MiB; the bases take 96 MiB,
    // and 72 MiB leaves room for an MSM beside two minimal chunks.
    let n = (1 << 19) + 3;
    let caps = [8 * 192 * n as u64, 120 << 20, 72 << 20];
    check_streamed::<g2::Config>(&mut r, n, &caps, 72 << 20, 48 << 20);
}

/// `masked_sums_streamed` against blst: for G1 and G2, under caps that
/// stream the bases in one chunk or several, each mask's sum equals the
/// MSM of the bases with scalar 1 where the mask's bit is set and 0
/// elsewhere. The first `sets` of these masks: random halves, every bit,
/// none, the last base alone (a partial last word), the first 64 bases
/// alone, random halves again, the first mask's complement (the kernel
/// takes them in groups of four: 5 leaves a group of one, 7 one of three).
fn check_masked<P: MsmCurve>(r: &mut ChaCha20Rng, n: usize, sets: usize, caps: &[u64])
where
    Affine<P>: cuzk_field::DeviceRepr,
{
    let words = n.div_ceil(64);
    let b = points::<P>(r, n);
    let mut masks: Vec<Vec<u64>> = vec![
        (0..words).map(|_| r.gen()).collect(),
        vec![u64::MAX; words],
        vec![0; words],
        vec![0; words],
        vec![0; words],
        (0..words).map(|_| r.gen()).collect(),
        vec![0; words],
    ];
    masks[6] = masks[0].iter().map(|w| !w).collect();
    for m in [0, 1, 5, 6] {
        masks[m][words - 1] &= u64::MAX >> (words * 64 - n);
    }
    masks[3][(n - 1) / 64] = 1 << ((n - 1) % 64);
    masks[4][0] = u64::MAX;
    masks.truncate(sets);
    let want: Vec<_> = masks
        .iter()
        .map(|m| {
            let bits: Vec<Fr> = (0..n)
                .map(|j| Fr::from((m[j / 64] >> (j % 64)) & 1))
                .collect();
            cpu::msm_dense(&b, &bits).unwrap().into_affine()
        })
        .collect();
    let rows: Vec<&[u64]> = masks.iter().map(Vec::as_slice).collect();
    for &cap in caps {
        let got = capped(cap).masked_sums_streamed(&b, &rows).unwrap();
        for (p, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.into_affine(), *w, "{} mask {p}, cap {cap}", P::NAME);
        }
    }
    let e = capped(caps[0]);
    match e.masked_sums_streamed(&b[..n - 64], &rows) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("words"), "{m}"),
        other => panic!("expected masks of the wrong length to be refused, got {other:?}"),
    }
    assert!(e.masked_sums_streamed(&b, &[]).unwrap().is_empty());
}

/// Sums of the bases that bitmasks select, several masks over one stream
/// of bases (the witness pass of a batch: the ones of each partition's
/// witness), equal blst's MSMs of 0/1 scalars for G1 and G2.
#[test]
#[ignore = "needs a GPU"]
fn gpu_masked_sums_equal_blst() {
    if gpu().is_none() {
        return;
    }
    let mut r = rng("gpu_masked_sums_equal_blst");
    // The floor: the masks' partial sums (2^15 XYZZ points each and a tree
    // buffer of an eighth: 47 MiB for seven in G1, 68 MiB for five in G2),
    // two groups' pattern buckets (15 x 2^15 XYZZ points a group: 180 MiB
    // in G1, 360 MiB in G2) and two minimal chunks with as much again (24
    // MiB in G1, 48 MiB in G2). The middle caps stream the bases in three
    // chunks.
    let n = (1 << 20) + 12345;
    check_masked::<g1::Config>(&mut r, n, 7, &[8 * 96 * n as u64, 400 << 20, 262 << 20]);
    let n = (1 << 19) + 3;
    check_masked::<g2::Config>(&mut r, n, 5, &[8 * 192 * n as u64, 600 << 20, 488 << 20]);
    report("msm: masked sums of streamed bases (G1 2^20 + 12345, G2 2^19 + 3) equal blst");
}

/// Points from which an MSM runs in two parts (see `MsmConfig::split`).
const SPLIT_MIN_POINTS: usize = 1 << 20;

/// From 2^20 points an MSM runs in two parts (the second part's scalars go
/// up while the first part runs): plain and precomputed, G1 and G2, just
/// past the threshold and at odd sizes.
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_two_parts() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_two_parts");
    for (n, flavor) in [
        (SPLIT_MIN_POINTS, Flavor::Random),
        (SPLIT_MIN_POINTS + 7, Flavor::Skewed),
        ((1 << 21) + 12345, Flavor::Edges),
    ] {
        let (b, s) = inputs::<g1::Config>(&mut r, n, flavor);
        check_gpu(g, &b, &s, &format!("two parts, {flavor:?}"));
        check_precomputed(g, &b, &s, None, &format!("two parts, {flavor:?}"));
    }
    let n = SPLIT_MIN_POINTS + 1;
    let (b, s) = inputs::<g2::Config>(&mut r, n, Flavor::Collisions);
    check_gpu(g, &b, &s, "two parts");
    check_precomputed(g, &b, &s, Some(20), "two parts");
    report("msm: two-part MSMs (G1 to 2^21 + 12345, G2 2^20 + 1) equal blst");
}

fn big_scalars(r: &mut ChaCha20Rng, n: usize) -> Vec<Fr> {
    // ChaCha per element is slow at 2^26: expand 64-bit seeds with a
    // multiply-xorshift per limb instead, then reduce mod r (full range:
    // the top window's digits and carries are reached).
    let seed: u64 = r.gen();
    (0..n)
        .map(|i| {
            let mut x = seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut limbs = [0u64; 4];
            for l in limbs.iter_mut() {
                x ^= x >> 31;
                x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                x ^= x >> 29;
                *l = x;
            }
            let mut bytes = [0u8; 32];
            for (k, l) in limbs.iter().enumerate() {
                bytes[8 * k..8 * k + 8].copy_from_slice(&l.to_le_bytes());
            }
            Fr::from_le_bytes_mod_order(&bytes)
        })
        .collect()
}

/// The folded reference equals blst over every point, past two periods.
#[test]
fn folded_reference_equals_blst_over_every_point() {
    let mut r = rng("folded_reference_equals_blst_over_every_point");
    let n = 2 * POINT_PERIOD + 12345;
    let (b, s) = inputs::<g1::Config>(&mut r, n, Flavor::Random);
    assert_eq!(
        folded_reference(&b, &s).into_affine(),
        cpu::msm_dense(&b, &s).unwrap().into_affine()
    );
}

/// 2^24 and 2^26 + 12345 G1 points against blst (through
/// [`folded_reference`]); the latter also with 8-bit windows (32 windows:
/// 2^31 + 395,040 sorted pairs).
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_spot_checks_large() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_msm_spot_checks_large");
    let n = (1 << 26) + 12345;
    let bases = points::<g1::Config>(&mut r, n);
    let scalars = big_scalars(&mut r, n);
    for n in [1usize << 24, n] {
        let want = folded_reference(&bases[..n], &scalars[..n]).into_affine();
        let fixed = g.upload_bases(&bases[..n]).unwrap();
        assert_eq!(
            fixed.msm(&scalars[..n]).unwrap().into_affine(),
            want,
            "G1 n = {n}"
        );
        report(&format!(
            "msm: G1 n = {n} equals blst (scalars folded onto {POINT_PERIOD} distinct bases)"
        ));
        drop(fixed);
        let pre = g.upload_bases_precomputed(&bases[..n], None).unwrap();
        assert_eq!(
            pre.msm(&scalars[..n]).unwrap().into_affine(),
            want,
            "G1 n = {n}, precomputed with window {:?}",
            pre.precomputed_window_bits()
        );
        report(&format!(
            "msm: G1 n = {n} over precomputed bases (window {:?}) equals blst",
            pre.precomputed_window_bits()
        ));
        drop(pre);
        if n > 1 << 24 {
            let g8 = with_window(g, 8);
            let fixed = g8.upload_bases(&bases[..n]).unwrap();
            assert_eq!(
                fixed.msm(&scalars[..n]).unwrap().into_affine(),
                want,
                "G1 n = {n}, 8-bit windows"
            );
            report(&format!(
                "msm: G1 n = {n} with 8-bit windows ({} sorted pairs) equals blst",
                n as u64 * 32
            ));
        }
    }
}

#[test]
fn projective_identity_is_returned_for_empty_input() {
    let (p, _) = cuzk_msm::msm::<g1::Config>(&[], &[]).unwrap();
    assert!(p.is_zero());
    let p = cpu::msm::<g2::Config>(&[], &[]).unwrap();
    assert!(p.is_zero());
    let _unused: Projective<g1::Config> = Projective::default();
}

// ---- configuration and scratch estimate ----------------------------------

/// Every `MsmConfig` gives the same sums as the default: window overrides
/// (below, at and above the default), one window a batch, no split (at a
/// size that splits by default), profiling on.
#[test]
#[ignore = "needs a GPU"]
fn gpu_config_does_not_change_results() {
    let Some(g) = gpu() else { return };
    let mut r = rng("gpu_config_does_not_change_results");
    let n = SPLIT_MIN_POINTS + 3;
    let (b, s) = inputs::<g1::Config>(&mut r, n, Flavor::Skewed);
    let fixed = g.upload_bases(&b).unwrap();
    let want = fixed.msm(&s).unwrap().into_affine();
    assert_eq!(want, cpu::msm(&b, &s).unwrap().into_affine(), "default");
    let d = MsmConfig::default();
    let default_c = cuzk_msm::window_bits(n);
    for config in [
        MsmConfig {
            window_bits: Some(default_c - 3),
            ..d
        },
        MsmConfig {
            window_bits: Some(default_c),
            ..d
        },
        MsmConfig {
            window_bits: Some(default_c + 2),
            ..d
        },
        MsmConfig {
            windows_per_batch: Some(1),
            ..d
        },
        MsmConfig { split: false, ..d },
        MsmConfig { profile: true, ..d },
    ] {
        let gc = g.clone().with_config(config).unwrap();
        let got = gc.upload_bases(&b).unwrap().msm(&s).unwrap().into_affine();
        assert_eq!(got, want, "{config:?}");
    }
    let (b, s) = inputs::<g2::Config>(&mut r, 5000, Flavor::Edges);
    let want = cpu::msm(&b, &s).unwrap().into_affine();
    let gc = with_window(g, 9).with_config(MsmConfig {
        windows_per_batch: Some(3),
        profile: true,
        ..MsmConfig::default()
    });
    assert_eq!(gc.unwrap().msm(&b, &s).unwrap().into_affine(), want, "G2");
    report("msm: window, batch, split and profile settings give the default's sums");
}

/// The host-only scratch estimate: no GPU needed; grows with n and the
/// curve's point size, shrinks with fewer windows a batch, and rejects
/// invalid configurations and sizes.
#[test]
fn scratch_estimate_without_a_gpu() {
    use cuzk_msm::scratch_bytes_estimate as est;
    let d = MsmConfig::default();
    assert_eq!(est::<g1::Config>(0, &d).unwrap(), 0);
    let mut last = 0;
    for log in [4u32, 10, 16, 20, 24] {
        let g1 = est::<g1::Config>(1 << log, &d).unwrap();
        let g2 = est::<g2::Config>(1 << log, &d).unwrap();
        assert!(g1 > last, "2^{log}");
        assert!(g2 > g1, "2^{log}");
        // At least the sorted digit pairs: 16 bytes a point and window.
        let windows = 256u64.div_ceil(u64::from(cuzk_msm::window_bits(1 << log)));
        assert!(g1 >= 16 * windows * (1u64 << log) * 7 / 8, "2^{log}");
        last = g1;
    }
    let one = MsmConfig {
        windows_per_batch: Some(1),
        ..d
    };
    assert!(est::<g1::Config>(1 << 20, &one).unwrap() < est::<g1::Config>(1 << 20, &d).unwrap());
    let bad = MsmConfig {
        window_bits: Some(25),
        ..d
    };
    assert!(matches!(
        est::<g1::Config>(100, &bad),
        Err(Error::InvalidArgument(_))
    ));
    let whole = MsmConfig { split: false, ..d };
    assert!(matches!(
        est::<g1::Config>(1 << 31, &whole),
        Err(Error::InvalidArgument(_))
    ));
}

/// An MSM runs within the bases, the scalars and the scratch estimate (a
/// fresh engine, so that its budget's peak counts this MSM alone; 8 MiB of
/// slack for allocation granularity).
#[test]
#[ignore = "needs a GPU"]
fn gpu_msm_fits_the_scratch_estimate() {
    if gpu().is_none() {
        return;
    }
    let g = GpuMsm::new(0).unwrap();
    let mut r = rng("gpu_msm_fits_the_scratch_estimate");
    for n in [1usize << 16, SPLIT_MIN_POINTS + 5] {
        let (b, s) = inputs::<g1::Config>(&mut r, n, Flavor::Random);
        let est = cuzk_msm::scratch_bytes_estimate::<g1::Config>(n, g.config()).unwrap();
        let need = est + 96 * n as u64 + 32 * n as u64 + (8 << 20);
        let fixed = g.upload_bases(&b).unwrap();
        assert_eq!(
            fixed.msm(&s).unwrap().into_affine(),
            cpu::msm(&b, &s).unwrap().into_affine()
        );
        drop(fixed);
        let peak = g.memory().budget().peak_claimed_bytes();
        assert!(peak <= need, "n = {n}: peak {peak} bytes, estimate {need}");
    }
}
