//! cuzk-ntt against references: the CPU path against a schoolbook DFT
//! (small sizes) and ark-poly's conventions; the GPU path against the CPU
//! path for every order, direction and coset at log sizes 0..=20 (proptest
//! draws the inputs), spot checks at 2^24 and 2^27, a round trip at 2^28,
//! batches, the Groth16 coset quotient, and the errors.

use ark_ff::{Field, UniformRand};
use cuzk_ntt::{bit_reverse_permute, cpu, root_of_unity, Direction, GpuNtt, NttOptions, Order};
use cuzk_tests::{gpu_or_skip, report, rng};
use proptest::prelude::*;
use rand::SeedableRng;
use std::sync::OnceLock;

type Fr = cuzk_ntt::Fr;

fn random_vec(seed: u64, len: usize) -> Vec<Fr> {
    let mut r = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..len).map(|_| Fr::rand(&mut r)).collect()
}

/// Every (direction, order, coset) combination.
fn all_options() -> Vec<NttOptions> {
    let mut v = Vec::new();
    for dir in [NttOptions::forward(), NttOptions::inverse()] {
        for order in Order::ALL {
            v.push(dir.with_order(order));
            v.push(dir.with_order(order).on_default_coset());
        }
    }
    v
}

/// Schoolbook DFT in natural order: A[i] = sum_j a[j] (g w^i)^j, inverse with
/// w^-1, g^-1 and 1/n.
fn schoolbook(a: &[Fr], opts: NttOptions) -> Vec<Fr> {
    let n = a.len();
    let log_n = n.trailing_zeros();
    let inverse = opts.direction == Direction::Inverse;
    let w = if inverse {
        root_of_unity(log_n).unwrap().inverse().unwrap()
    } else {
        root_of_unity(log_n).unwrap()
    };
    let g = opts
        .coset
        .map(|g| if inverse { g.inverse().unwrap() } else { g });
    let n_inv = Fr::from(n as u64).inverse().unwrap();
    (0..n)
        .map(|i| {
            let x = w.pow([i as u64]);
            let mut acc = Fr::from(0u64);
            let mut p = Fr::from(1u64);
            for aj in a {
                acc += *aj * p;
                p *= x;
            }
            match (inverse, g) {
                // Inverse on a coset: coefficients c_j = (1/n) sum_i A_i w^-ij g^-j.
                (true, Some(g)) => acc * n_inv * g.pow([i as u64]),
                (true, None) => acc * n_inv,
                _ => acc,
            }
        })
        .collect()
}

fn forward_input(a: &[Fr], opts: NttOptions) -> Vec<Fr> {
    // For a forward coset transform, the schoolbook sums a_j (g w^i)^j:
    // scale a_j by g^j first.
    match (opts.direction, opts.coset) {
        (Direction::Forward, Some(g)) => a
            .iter()
            .enumerate()
            .map(|(j, x)| *x * g.pow([j as u64]))
            .collect(),
        _ => a.to_vec(),
    }
}

#[test]
fn cpu_path_matches_the_schoolbook_dft_in_every_order() {
    for log_n in 0..=6u32 {
        for (k, opts) in all_options().into_iter().enumerate() {
            let n = 1usize << log_n;
            let a = random_vec(1000 * log_n as u64 + k as u64, n);
            let mut want = schoolbook(&forward_input(&a, opts), opts);
            if opts.order.output_reversed() {
                bit_reverse_permute(&mut want, log_n).unwrap();
            }
            let mut got = a.clone();
            if opts.order.input_reversed() {
                bit_reverse_permute(&mut got, log_n).unwrap();
            }
            cpu::ntt(&mut got, log_n, opts).unwrap();
            assert_eq!(got, want, "log_n {log_n} {opts:?}");
        }
    }
}

#[test]
fn cpu_round_trips_and_batches() {
    let log_n = 10;
    let a = random_vec(7, 3 << log_n);
    let mut b = a.clone();
    for order in [Order::NR, Order::NN] {
        let f = NttOptions::forward().with_order(order).on_default_coset();
        cpu::ntt(&mut b, log_n, f).unwrap();
        let back = match order {
            Order::NR => Order::RN,
            _ => Order::NN,
        };
        cpu::ntt(
            &mut b,
            log_n,
            NttOptions::inverse().with_order(back).on_default_coset(),
        )
        .unwrap();
        assert_eq!(a, b);
    }
    // A batch equals the vectors one by one.
    let mut whole = a.clone();
    cpu::ntt(&mut whole, log_n, NttOptions::forward()).unwrap();
    for (i, chunk) in a.chunks(1 << log_n).enumerate() {
        let mut one = chunk.to_vec();
        cpu::ntt(&mut one, log_n, NttOptions::forward()).unwrap();
        assert_eq!(&whole[i << log_n..(i + 1) << log_n], &one[..]);
    }
}

#[test]
fn bad_shapes_are_errors() {
    let mut v = random_vec(1, 12);
    let e = cpu::ntt(&mut v, 3, NttOptions::forward()).unwrap_err();
    assert!(
        e.to_string().contains("not a whole number of vectors"),
        "{e}"
    );
    let mut big = random_vec(2, 1 << 10);
    let e = cpu::ntt(&mut big, 33, NttOptions::forward()).unwrap_err();
    assert!(e.to_string().contains("two-adicity"), "{e}");
    let mut empty: Vec<Fr> = Vec::new();
    assert!(cpu::ntt(&mut empty, 0, NttOptions::forward()).is_err());
    let e = cpu::ntt(
        &mut v[..8],
        3,
        NttOptions::forward().on_coset(Fr::from(0u64)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("nonzero"), "{e}");
}

/// The pass plan and the twiddle tables it implies (no GPU needed, only a
/// CUDA build): the sizes the docs of `GpuNtt` and BENCHMARKS.md quote for
/// the least default limit, 2 GiB, and for larger and smaller ones.
#[test]
fn full_twiddle_table_sizes_follow_the_pass_plan() {
    use cuzk_ntt::{full_twiddle_bytes, DEFAULT_FULL_TWIDDLE_MAX_BYTES as LIMIT};
    const MIB: u64 = 1 << 20;
    let bytes = |log_n| match full_twiddle_bytes(log_n, LIMIT) {
        Ok(b) => Some(b),
        Err(cuzk_ntt::Error::NoCudaBuild(_)) => None,
        Err(e) => panic!("{e}"),
    };
    let Some(b24) = bytes(24) else {
        eprintln!("skipped: a build without the CUDA sources has no pass plan");
        return;
    };
    // Forms, fastest first: tiled Shoup (80 B x B), tiled Montgomery
    // (32 B x B), half Shoup (40 B x B, up to 64 MiB), half Montgomery
    // (16 B x B). 2^24: passes 8/8/8, B = 2^24 (tiled Shoup, 1.25 GiB) and
    // 2^16 (tiled Shoup, 5 MiB).
    assert_eq!(b24, 1280 * MIB + 5 * MIB);
    // 2^26: 9/9/8; B = 2^26 (tiled Shoup 5 GiB is over the limit: tiled
    // Montgomery, 2 GiB) and 2^17 (tiled Shoup, 10 MiB).
    assert_eq!(bytes(26), Some(2048 * MIB + 10 * MIB));
    // 2^27: 9/9/9; B = 2^27 (half Montgomery, 2 GiB) and 2^18 (tiled Shoup,
    // 20 MiB).
    assert_eq!(bytes(27), Some(2048 * MIB + 20 * MIB));
    // 2^28: 7/7/7/7; B = 2^28 (half Montgomery: 4 GiB) is over the limit;
    // 2^21 (tiled Shoup, 160 MiB) and 2^14 (tiled Shoup).
    assert_eq!(bytes(28), Some(160 * MIB + (80 << 14)));
    // One pass: no twiddles between passes.
    assert_eq!(bytes(9), Some(0));
    // An eighth of an H200's budget (17 GiB): tiled Shoup throughout.
    assert_eq!(
        full_twiddle_bytes(27, 17 << 30).unwrap(),
        (80 << 27) + (80 << 18)
    );
    assert_eq!(
        full_twiddle_bytes(27, u64::MAX).unwrap(),
        (80 << 27) + (80 << 18)
    );
    assert_eq!(full_twiddle_bytes(27, 1 << 30).unwrap(), 20 * MIB);
    // A limit under every other form: the half Montgomery table.
    assert_eq!(full_twiddle_bytes(27, 5 * MIB).unwrap(), 4 * MIB);
    // 2^27 at 64 MiB (the prover's limit): the second pass's tiled Shoup.
    assert_eq!(full_twiddle_bytes(27, 64 * MIB).unwrap(), 20 * MIB);
    assert!(full_twiddle_bytes(33, LIMIT).is_err());
}

fn engine() -> Option<&'static GpuNtt> {
    static E: OnceLock<Option<GpuNtt>> = OnceLock::new();
    gpu_or_skip("ntt gpu tests")?;
    E.get_or_init(|| Some(GpuNtt::new(0).expect("GPU NTT engine")))
        .as_ref()
}

fn gpu_vs_cpu(g: &GpuNtt, a: &[Fr], log_n: u32, opts: NttOptions) -> Result<(), TestCaseError> {
    let mut want = a.to_vec();
    cpu::ntt(&mut want, log_n, opts).unwrap();
    let mut got = a.to_vec();
    g.ntt(&mut got, log_n, opts)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(
        got == want,
        "GPU differs from CPU at log_n {log_n}, {opts:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    #[ignore = "needs a GPU"]
    fn gpu_matches_cpu_every_order_direction_and_coset(log_n in 0u32..=20, which in 0usize..16, seed in any::<u64>()) {
        let Some(g) = engine() else { return Ok(()) };
        let opts = all_options()[which];
        gpu_vs_cpu(g, &random_vec(seed, 1 << log_n), log_n, opts)?;
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_every_size_and_option_once() {
    let Some(g) = engine() else { return };
    let mut r = rng("gpu_every_size_and_option_once");
    let mut cases = 0;
    for log_n in 0..=20u32 {
        let a: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::rand(&mut r)).collect();
        for opts in all_options() {
            gpu_vs_cpu(g, &a, log_n, opts).unwrap();
            cases += 1;
        }
    }
    report(&format!(
        "ntt: GPU = CPU for {cases} (size, direction, order, coset) cases, log sizes 0..=20"
    ));
}

/// The engine's default keeps full (half) twiddle tables for every pass up
/// to 2^27 elements, so the tests above run that path; this one turns them
/// off and runs the two-level twiddle products (which 2^28 uses for its
/// first pass, and a prover's engine at 2^27) at log sizes 10 to 21 (two
/// and three passes).
#[test]
#[ignore = "needs a GPU"]
fn gpu_two_level_twiddles_match_the_cpu() {
    if gpu_or_skip("ntt gpu tests").is_none() {
        return;
    }
    let g = GpuNtt::new(0)
        .expect("GPU NTT engine")
        .with_full_twiddle_limit(0);
    let mut r = rng("gpu_two_level_twiddles_match_the_cpu");
    let mut cases = 0;
    for log_n in 10..=21u32 {
        let a: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::rand(&mut r)).collect();
        for opts in [
            NttOptions::forward(),
            NttOptions::inverse().with_order(Order::RN),
            NttOptions::forward()
                .with_order(Order::NR)
                .on_default_coset(),
        ] {
            gpu_vs_cpu(&g, &a, log_n, opts).unwrap();
            cases += 1;
        }
    }
    report(&format!(
        "ntt: GPU with two-level twiddles = CPU for {cases} cases, log sizes 10..=21"
    ));
}

/// Every twiddle-table form the engine can pick (`full_twiddle_bytes`):
/// limits of 16 and 32 bytes an element make the first twiddle pass keep
/// a half or a tiled Montgomery table (the default limit gives tiled Shoup
/// tables at these sizes, the other tests' engine).
#[test]
#[ignore = "needs a GPU"]
fn gpu_table_forms_match_the_cpu() {
    if gpu_or_skip("ntt gpu tests").is_none() {
        return;
    }
    let mut r = rng("gpu_table_forms_match_the_cpu");
    let mut cases = 0;
    for log_n in [12u32, 16, 20, 21] {
        let a: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::rand(&mut r)).collect();
        for per_element in [16u64, 32] {
            let g = GpuNtt::new(0)
                .expect("GPU NTT engine")
                .with_full_twiddle_limit(per_element << log_n);
            for opts in [
                NttOptions::forward(),
                NttOptions::inverse().with_order(Order::RN),
                NttOptions::forward()
                    .with_order(Order::NR)
                    .on_default_coset(),
                NttOptions::inverse().on_default_coset(),
            ] {
                gpu_vs_cpu(&g, &a, log_n, opts).unwrap();
                cases += 1;
            }
        }
    }
    report(&format!(
        "ntt: GPU with half and tiled Montgomery tables = CPU for {cases} cases"
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_batches_and_spot_checks_at_2_24_and_2_27() {
    let Some(g) = engine() else { return };
    let mut r = rng("gpu_batches_and_spot_checks_at_2_24_and_2_27");
    // Batches whose last pass packs 2 (2^14 x 5) or 4 (2^16 x 5, 2^18 x 3)
    // vectors' sub-problems a tile, and a single pass over many vectors
    // (2^9 x 9000: one-column tiles, large-transform block size).
    for (log_n, batch) in [(14u32, 5usize), (16, 5), (18, 3), (9, 9000)] {
        let a: Vec<Fr> = (0..batch << log_n).map(|_| Fr::rand(&mut r)).collect();
        for opts in [
            NttOptions::forward(),
            NttOptions::inverse()
                .with_order(Order::RN)
                .on_default_coset(),
        ] {
            gpu_vs_cpu(g, &a, log_n, opts).unwrap();
        }
    }
    for log_n in [24u32, 27] {
        let a: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::rand(&mut r)).collect();
        gpu_vs_cpu(g, &a, log_n, NttOptions::forward()).unwrap();
        report(&format!(
            "ntt: GPU = CPU (ark-poly) at 2^{log_n}, forward, natural order"
        ));
    }
}

/// `GpuNtt::ntt` on pinned host arrays (copied directly, no staging)
/// against the CPU path: a small and a large (8 MiB) array, a batch, a part of a
/// pinned buffer, and a bad shape (which leaves the array as it was).
#[test]
#[ignore = "needs a GPU"]
fn gpu_pinned_host_arrays_match_the_cpu() {
    let Some(g) = engine() else { return };
    let mut r = rng("gpu_pinned_host_arrays_match_the_cpu");
    for (log_n, batch, opts) in [
        (12u32, 1usize, NttOptions::forward()),
        (18, 1, NttOptions::inverse().on_default_coset()),
        (16, 3, NttOptions::forward().with_order(Order::NR)),
    ] {
        let a: Vec<Fr> = (0..batch << log_n).map(|_| Fr::rand(&mut r)).collect();
        let mut want = a.clone();
        cpu::ntt(&mut want, log_n, opts).unwrap();
        let mut p = cuzk_ntt::PinnedBuffer::<Fr>::new(a.len()).expect("pinned memory");
        p.copy_from_slice(&a);
        g.ntt(&mut p, log_n, opts).unwrap();
        assert!(
            p[..] == want[..],
            "pinned GPU NTT differs from the CPU at 2^{log_n} x {batch}, {opts:?}"
        );
    }
    // The second half of a pinned buffer of two vectors.
    let a: Vec<Fr> = (0..2usize << 10).map(|_| Fr::rand(&mut r)).collect();
    let mut want = a[1 << 10..].to_vec();
    cpu::ntt(&mut want, 10, NttOptions::forward()).unwrap();
    let mut p = cuzk_ntt::PinnedBuffer::<Fr>::new(a.len()).expect("pinned memory");
    p.copy_from_slice(&a);
    g.ntt(&mut p[1 << 10..], 10, NttOptions::forward()).unwrap();
    assert!(p[..1 << 10] == a[..1 << 10], "the first half was written");
    assert!(
        p[1 << 10..] == want[..],
        "part of a pinned buffer differs from the CPU"
    );
    let mut p = cuzk_ntt::PinnedBuffer::<Fr>::new(3).expect("pinned memory");
    let three: Vec<Fr> = (0..3).map(|_| Fr::rand(&mut r)).collect();
    p.copy_from_slice(&three);
    assert!(matches!(
        g.ntt(&mut p, 2, NttOptions::forward()),
        Err(cuzk_ntt::Error::InvalidArgument(_))
    ));
    assert!(p[..] == three[..], "a refused call wrote the array");
    report("ntt: pinned host arrays (2^12, 2^18 coset inverse, 2^16 x 3, half a buffer) = CPU");
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_round_trip_at_2_28() {
    let Some(g) = engine() else { return };
    let log_n = 28;
    let mut r = rng("gpu_round_trip_at_2_28");
    let a: Vec<Fr> = (0..1usize << log_n).map(|_| Fr::rand(&mut r)).collect();
    let mut d = g
        .memory()
        .alloc::<Fr>(a.len(), cuzk_alloc::Strategy::Async, g.stream(), None)
        .unwrap();
    d.copy_from_host(&a).unwrap();
    g.ntt_device(&mut d, log_n, NttOptions::forward().with_order(Order::NR))
        .unwrap();
    g.ntt_device(&mut d, log_n, NttOptions::inverse().with_order(Order::RN))
        .unwrap();
    g.stream().synchronize().unwrap();
    let mut back = vec![Fr::from(0u64); a.len()];
    d.copy_to_host(&mut back).unwrap();
    assert!(back == a, "inverse(forward(x)) != x at 2^28");
    report("ntt: inverse(forward(x)) == x at 2^28 on the GPU");
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_coset_quotient_matches_the_cpu() {
    let Some(g) = engine() else { return };
    let log_n = 12;
    let n = 1usize << log_n;
    let mut r = rng("gpu_coset_quotient_matches_the_cpu");
    let host: Vec<Vec<Fr>> = (0..3)
        .map(|_| (0..n).map(|_| Fr::rand(&mut r)).collect())
        .collect();
    let shift = <Fr as ark_ff::FftField>::GENERATOR;
    let z_inv = (shift.pow([n as u64]) - Fr::from(1u64)).inverse().unwrap();
    let want: Vec<Fr> = (0..n)
        .map(|i| (host[0][i] * host[1][i] - host[2][i]) * z_inv)
        .collect();
    let bufs: Vec<_> = host
        .iter()
        .map(|h| {
            let mut d = g
                .memory()
                .alloc::<Fr>(n, cuzk_alloc::Strategy::Sync, g.stream(), None)
                .unwrap();
            d.copy_from_host(h).unwrap();
            d
        })
        .collect();
    let mut out = g
        .memory()
        .alloc::<Fr>(n, cuzk_alloc::Strategy::Sync, g.stream(), None)
        .unwrap();
    g.coset_quotient(&bufs[0], &bufs[1], &bufs[2], &mut out, shift)
        .unwrap();
    let mut got = vec![Fr::from(0u64); n];
    out.copy_to_host(&mut got).unwrap();
    assert_eq!(got, want);
    let e = g
        .coset_quotient(&bufs[0], &bufs[1], &bufs[2], &mut out, Fr::from(1u64))
        .unwrap_err();
    assert!(e.to_string().contains("vanishes"), "{e}");
    // In place, into a.
    let mut bufs = bufs;
    let (a, bc) = bufs.split_at_mut(1);
    g.coset_quotient_in_place(&mut a[0], &bc[0], &bc[1], shift)
        .unwrap();
    a[0].copy_to_host(&mut got).unwrap();
    assert_eq!(got, want, "in place");
    let short = g
        .memory()
        .alloc::<Fr>(n / 2, cuzk_alloc::Strategy::Sync, g.stream(), None)
        .unwrap();
    let e = g
        .coset_quotient_in_place(&mut a[0], &short, &bc[1], shift)
        .unwrap_err();
    assert!(e.to_string().contains("differ"), "{e}");
    // In two steps, as the prover does when short of memory: a * b into
    // a, then (a b - c) / Z into a.
    a[0].copy_from_host(&host[0]).unwrap();
    g.mul_in_place(&mut a[0], &bc[0]).unwrap();
    a[0].copy_to_host(&mut got).unwrap();
    let ab: Vec<Fr> = (0..n).map(|i| host[0][i] * host[1][i]).collect();
    assert_eq!(got, ab, "a * b");
    g.coset_quotient_of_product_in_place(&mut a[0], &bc[1], shift)
        .unwrap();
    a[0].copy_to_host(&mut got).unwrap();
    assert_eq!(got, want, "the quotient of the product");
    assert!(g.mul_in_place(&mut a[0], &short).is_err());
    assert!(g
        .coset_quotient_of_product_in_place(&mut a[0], &bc[1], Fr::from(1u64))
        .is_err());
}
