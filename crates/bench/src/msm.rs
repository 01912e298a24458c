//! The MSM layer: G1 and G2 multi-scalar multiplications on the GPU
//! (resident, copied and precomputed bases), sppark's G1 MSM on the same
//! card, blst and arkworks on all CPU cores; every cuzk result is checked
//! against blst (beyond blst's timed sizes, blst over the scalars folded
//! onto the distinct bases).

use crate::cli::Run;
use crate::progress::{say, step};
use crate::report::Record;
use crate::timing::{once_ms, wall_ms};
use anyhow::Result;
use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::UniformRand;
use cuzk_field::Fr;
use cuzk_msm::{GpuMsm, MsmCurve};

const LAYER: &str = "msm";
const BLST: &str = "blst Pippenger (CPU)";
const BLST_FOLDED: &str = "blst Pippenger (CPU), scalars folded onto the distinct bases";
const ARKWORKS: &str = "arkworks VariableBaseMSM";
#[cfg(feature = "sppark")]
const SPPARK_COPIES: &str = "sppark 0.1.16 (copies incl.)";
#[cfg(feature = "sppark")]
const SPPARK_RESIDENT: &str = "sppark 0.1.16 (resident points)";

/// Sizes (log2) of the G1 and G2 ladders: `--quick`, default, `--full`.
pub(crate) const LOGS: [(&[u32], &[u32]); 3] = [
    (&[16], &[]),
    (&[16, 20, 22], &[16, 20]),
    (&[16, 20, 22, 24, 26], &[16, 20, 24]),
];

/// MSM: G1 at 2^16..2^26 and G2 at 2^16..2^24 (by run length), see
/// [`curve`].
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let (g1, g2) = run.size.pick(LOGS[0], LOGS[1], LOGS[2]);
    curve::<ark_bls12_381::g1::Config>(run, rec, g1, 3)?;
    curve::<ark_bls12_381::g2::Config>(run, rec, g2, 4)?;
    Ok(())
}

/// How many distinct bases the bench draws (beyond, they repeat).
pub(crate) const DISTINCT: usize = 1 << 20;

/// Points by a random walk over a few random seeds (drawing each point
/// uniformly costs a hash-to-curve), normalized in one batch; beyond
/// `distinct` points the walk repeats (MSM work does not depend on it).
pub(crate) fn bench_points<P: SWCurveConfig>(
    rng: &mut rand_chacha::ChaCha20Rng,
    n: usize,
    distinct: usize,
) -> Vec<Affine<P>> {
    let m = n.min(distinct).max(1);
    let seeds: Vec<Affine<P>> = (0..16).map(|_| Affine::rand(rng)).collect();
    let mut acc = Projective::<P>::from(seeds[0]);
    let walk: Vec<Projective<P>> = (0..m)
        .map(|i| {
            acc += seeds[i % 16];
            acc
        })
        .collect();
    let base = Projective::normalize_batch(&walk);
    (0..n).map(|i| base[i % m]).collect()
}

/// With `--inject-mismatch msm`: moves one cuzk result off by the generator.
fn corrupt_if_injected<P: SWCurveConfig>(rec: &mut Record, r: Affine<P>) -> Affine<P> {
    corrupt_point_if_injected(rec, LAYER, r)
}

/// With `--inject-mismatch LAYER` for `layer`: moves one cuzk result off
/// by the generator.
pub(crate) fn corrupt_point_if_injected<P: SWCurveConfig>(
    rec: &mut Record,
    layer: &'static str,
    r: Affine<P>,
) -> Affine<P> {
    if rec.checks.inject(layer) {
        (r + Affine::<P>::generator()).into_affine()
    } else {
        r
    }
}

/// One curve's MSM ladder: cuzk on the GPU with resident bases (uploaded
/// once; scalars copied in per call), with the bases copied in per call and
/// with precomputed bases (plus the precomputation's one-time cost),
/// blst on all CPU cores, arkworks (all cores, up to 2^20), and for G1
/// sppark 0.1.16 (points and scalars copied in per call, and with the points
/// uploaded once and the scalars copied in per call). Wall time of the
/// call, median of 5 (3 or 1 at the largest sizes). Inputs from stream
/// `stream` of the run's seed.
fn curve<P: MsmCurve>(run: &Run, rec: &mut Record, logs: &[u32], stream: u64) -> Result<()> {
    let Some(&max_log) = logs.iter().max() else {
        return Ok(());
    };
    let max = 1usize << max_log;
    let mut rng = run.rng(stream);
    let points = bench_points::<P>(&mut rng, max, DISTINCT);
    // Stream 100 + `stream`: the scalars' own draw.
    let scalars = run.random_fr(100 + stream, max);
    let engine = match run.gpu {
        Some(d) => Some(GpuMsm::new(d)?),
        None => None,
    };
    // blst is timed up to 2^24 for G1 and 2^20 for G2 (G1 2^26 and G2 2^24
    // take over a minute each on 16 cores); beyond, the reference is blst's
    // MSM over the distinct bases with the scalars folded onto them.
    let blst_max = if P::NAME == "G1" { 24 } else { 20 };
    for &log_n in logs {
        let n = 1usize << log_n;
        let name = format!("{} MSM 2^{log_n}", P::NAME);
        step(format!("bench msm: {name}"));
        let (p, s) = (&points[..n], &scalars[..n]);
        let (want, against) = if log_n <= blst_max {
            let mut r = Projective::<P>::default();
            let ms = if log_n >= 24 {
                once_ms(|| r = cpu_msm(p, s).expect("equal lengths")).0
            } else {
                wall_ms(3, || r = cpu_msm(p, s).expect("equal lengths"))
            };
            rec.figure(
                LAYER,
                name.clone(),
                "blst Pippenger (CPU, all cores)",
                n,
                ms,
                "wall",
            );
            (r.into_affine(), BLST)
        } else {
            (folded_msm(p, s, DISTINCT)?.into_affine(), BLST_FOLDED)
        };
        if log_n <= 20 {
            let mut got = Projective::<P>::default();
            let ms = wall_ms(if log_n >= 20 { 1 } else { 3 }, || {
                got = Projective::<P>::msm(p, s).expect("equal lengths")
            });
            rec.figure(
                LAYER,
                name.clone(),
                "arkworks VariableBaseMSM (CPU, all cores)",
                n,
                ms,
                "wall",
            );
            if log_n <= blst_max {
                let ours = corrupt_if_injected(rec, want);
                let what = format!("{name}: cuzk CPU path (blst)");
                rec.checks
                    .values(LAYER, what, ARKWORKS, n, &ours, &got.into_affine());
            }
        }
        let what = |how: &str| format!("{name}: cuzk GPU ({how})");
        let Some(g) = &engine else {
            rec.checks
                .skip(LAYER, what("resident bases"), BLST, n, "no GPU");
            continue;
        };
        let check = |rec: &mut Record, how: &str, got: Projective<P>| {
            let got = corrupt_if_injected(rec, got.into_affine());
            rec.checks.values(LAYER, what(how), against, n, &got, &want);
        };
        let gpu_reps = if log_n >= 26 { 3 } else { 5 };
        let fixed = g.upload_bases(p)?;
        let mut got = Projective::<P>::default();
        let ms = wall_ms(gpu_reps, || got = fixed.msm(s).expect("cuzk msm"));
        check(rec, "resident bases", got);
        let cuzk_result = got.into_affine();
        rec.figure(
            LAYER,
            name.clone(),
            "cuzk GPU (resident bases, scalars copied in)",
            n,
            ms,
            "wall, scalars host to device",
        );
        drop(fixed);
        let ms = wall_ms(3, || got = g.msm(p, s).expect("cuzk msm"));
        check(rec, "bases copied in", got);
        rec.figure(
            LAYER,
            name.clone(),
            "cuzk GPU (bases and scalars copied in)",
            n,
            ms,
            "wall, host to host",
        );
        // Precomputed bases (one set of buckets for all windows): the
        // one-time precomputation, then MSMs against them.
        let (setup_ms, pre) = once_ms(|| g.upload_bases_precomputed(p, None));
        let pre = pre?;
        if let Some(c) = pre.precomputed_window_bits() {
            let ms = wall_ms(gpu_reps, || got = pre.msm(s).expect("cuzk msm"));
            check(rec, "precomputed bases", got);
            rec.figure(
                LAYER,
                name.clone(),
                "cuzk GPU (precomputed bases, scalars copied in)",
                n,
                ms,
                "wall, scalars host to device",
            );
            rec.figure(
                LAYER,
                name.clone(),
                "cuzk GPU precomputation of the bases (once)",
                n,
                setup_ms,
                "wall, bases host to device, one run",
            );
            say(format!(
                "bench msm: {name}: precomputed with c = {c} in {setup_ms:.0} ms"
            ));
        } else {
            let why = "no room for precomputed bases in the memory budget";
            say(format!("bench msm: {name}: {why}, skipped"));
            rec.checks
                .skip(LAYER, what("precomputed bases"), BLST, n, why);
        }
        drop(pre);
        sppark_peer(rec, &points, s, &cuzk_result, &name, gpu_reps)?;
    }
    Ok(())
}

/// The MSM of bases that repeat with period `m` (as [`bench_points`] draws
/// them beyond `m`): sum_i s_i P_(i mod m) = sum_j (sum_k s_(j+km)) P_j, so
/// blst's MSM of the `m` distinct bases with the folded scalars is the same
/// point at a fraction of the cost. Errors if the bases do not repeat.
pub(crate) fn folded_msm<P: MsmCurve>(
    p: &[Affine<P>],
    s: &[Fr],
    m: usize,
) -> Result<Projective<P>> {
    use rayon::prelude::*;
    let distinct = &p[..m.min(p.len())];
    if p.len() % distinct.len() != 0 || !p.par_chunks(m).all(|c| c == distinct) {
        anyhow::bail!("the bench's bases do not repeat with period {m}");
    }
    let mut folded = s[..distinct.len()].to_vec();
    for c in s[distinct.len()..].chunks(m) {
        folded.par_iter_mut().zip(c).for_each(|(t, x)| *t += x);
    }
    cpu_msm(distinct, &folded)
}

/// cuzk-msm's CPU path (blst's Pippenger on all cores).
fn cpu_msm<P: MsmCurve>(p: &[Affine<P>], s: &[Fr]) -> Result<Projective<P>> {
    Ok(cuzk_msm::cpu::msm(p, s)?)
}

/// sppark 0.1.16's G1 MSM (G1 only; nothing for G2): points and scalars
/// copied in per call, then points uploaded once; both results must equal
/// cuzk's resident-bases result `ours`.
#[cfg(feature = "sppark")]
fn sppark_peer(
    rec: &mut Record,
    points: &dyn std::any::Any,
    s: &[Fr],
    ours: &dyn std::any::Any,
    name: &str,
    gpu_reps: usize,
) -> Result<()> {
    use cuzk_field::{G1Affine, G1Projective};
    let (Some(p1), Some(ours)) = (
        points.downcast_ref::<Vec<G1Affine>>(),
        ours.downcast_ref::<G1Affine>(),
    ) else {
        return Ok(());
    };
    let n = s.len();
    let what = format!("{name}: cuzk GPU (resident bases)");
    let mut got = G1Projective::default();
    let ms = wall_ms(gpu_reps, || {
        got = cuzk_sppark_peer::msm_g1(&p1[..n], s).expect("sppark msm")
    });
    rec.checks.values(
        LAYER,
        what.clone(),
        SPPARK_COPIES,
        n,
        ours,
        &got.into_affine(),
    );
    rec.figure(
        LAYER,
        name,
        "sppark 0.1.16 GPU (copies incl.)",
        n,
        ms,
        "wall, host to host",
    );
    // Like for like with cuzk's resident figure: sppark's msm_t with the
    // points uploaded once, scalars copied in per call.
    let (got, mut times) = cuzk_sppark_peer::msm_g1_resident(&p1[..n], s, gpu_reps as u32)
        .map_err(|e| anyhow::anyhow!("sppark resident msm: {e}"))?;
    rec.checks
        .values(LAYER, what, SPPARK_RESIDENT, n, ours, &got.into_affine());
    times.sort_by(f64::total_cmp);
    rec.figure(
        LAYER,
        name,
        "sppark 0.1.16 GPU (resident points, scalars copied in)",
        n,
        times[times.len() / 2],
        "wall, scalars host to device",
    );
    Ok(())
}

#[cfg(not(feature = "sppark"))]
fn sppark_peer(
    _: &mut Record,
    _: &dyn std::any::Any,
    _: &[Fr],
    _: &dyn std::any::Any,
    _: &str,
    _: usize,
) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The folded reference equals blst's MSM over the repeated bases, and
    /// bases that do not repeat are refused.
    #[test]
    fn folded_msm_equals_the_full_msm() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(29);
        let (n, m) = (1 << 10, 1 << 7);
        let p = bench_points::<ark_bls12_381::g1::Config>(&mut rng, n, m);
        let s: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let full = cpu_msm(&p, &s).expect("equal lengths");
        assert_eq!(folded_msm(&p, &s, m).expect("periodic"), full);
        assert!(folded_msm(&p, &s, m / 2).is_err());
    }
}
