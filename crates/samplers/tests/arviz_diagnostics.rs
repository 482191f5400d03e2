//! The rank-normalised diagnostics and PSIS equal ArviZ's on fixed arrays.
//!
//! The arrays are AR(1) chains driven by a 64-bit LCG and Irwin-Hall normals, which
//! `scripts/pin_arviz_diagnostics.py` repeats in NumPy with the same integer and IEEE
//! arithmetic; the pinned values are its output under ArviZ 0.23.4 (NumPy 2.4.6, SciPy 1.17.1).
//! The estimators are deterministic, so the tolerance covers rounding, not Monte Carlo error:
//! the largest relative difference seen is 1e-14 (FFT autocovariances and the normal quantile
//! differ from NumPy's and SciPy's in the last bits); 1e-9 leaves room for another machine's
//! `exp` and `ln`, and is far inside the 1e-6 asked for.

use sgmcmc_samplers::diagnostics::rank::{ess_mean, normal_quantile};
use sgmcmc_samplers::diagnostics::{Convergence, pareto_k_hat, psis};

struct Lcg(u64);

impl Lcg {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            s += self.uniform();
        }
        s - 6.0
    }
}

/// `chains` AR(1) chains (`x <- rho x + e`), chain `c` shifted by `c * shift`, optionally
/// rounded to `decimals` (ties), as the script's `ar1`.
fn ar1(
    seed: u64,
    chains: usize,
    draws: usize,
    rho: f64,
    shift: f64,
    decimals: Option<i32>,
) -> Vec<Vec<f64>> {
    let mut g = Lcg(seed);
    (0..chains)
        .map(|c| {
            let mut x = 0.0;
            (0..draws)
                .map(|_| {
                    x = rho * x + g.normal();
                    let v = x + c as f64 * shift;
                    // NumPy's round: scale, round half to even, scale back.
                    match decimals {
                        Some(d) => {
                            let s = 10f64.powi(d);
                            (v * s).round_ties_even() / s
                        }
                        None => v,
                    }
                })
                .collect()
        })
        .collect()
}

fn close(what: &str, ours: f64, arviz: f64) {
    let rel = ((ours - arviz) / arviz).abs();
    assert!(
        rel < 1e-9,
        "{what}: ours {ours}, ArviZ {arviz} (relative {rel:.1e})"
    );
}

/// A named array of chains and ArviZ's values for it.
type Case = (&'static str, Vec<Vec<f64>>, [f64; 6]);

#[test]
fn rhat_ess_and_mcse_equal_arviz() {
    let sticky = ar1(2, 4, 300, 0.95, 0.0, None)
        .into_iter()
        .map(|c| c.into_iter().map(|v| (v / 2.0).exp()).collect())
        .collect();
    // rhat, ess_bulk, ess_tail, ess_mean, mcse_mean, mcse_sd
    let cases: [Case; 6] = [
        (
            "mixed",
            ar1(1, 4, 200, 0.5, 0.0, None),
            [
                1.004_846_833_187_801_8,
                269.930_091_057_352_23,
                394.777_686_339_152_2,
                270.663_197_926_475_7,
                6.642_034_112_977_686e-2,
                3.342_600_717_631_806_5e-2,
            ],
        ),
        (
            "sticky, heavy right tail",
            sticky,
            [
                1.058_537_371_412_010_5,
                48.718_352_707_542_81,
                69.239_263_692_652_33,
                56.188_879_437_390_97,
                0.819_902_084_775_968_8,
                2.161_338_799_797_663,
            ],
        ),
        (
            "shifted chains",
            ar1(3, 4, 200, 0.5, 0.4, None),
            [
                1.052_456_429_891_998,
                94.170_254_947_494_48,
                361.453_940_757_953_9,
                99.237_250_414_992_15,
                0.120_339_357_332_500_54,
                3.780_134_589_972_261_6e-2,
            ],
        ),
        (
            "odd length",
            ar1(4, 3, 201, 0.3, 0.0, None),
            [
                1.004_076_380_872_886_3,
                282.906_642_717_955_95,
                339.099_638_798_343_96,
                281.529_579_069_269_35,
                6.553_826_002_848_92e-2,
                4.550_814_636_038_705e-2,
            ],
        ),
        (
            "ties",
            ar1(5, 2, 100, 0.2, 0.0, Some(0)),
            [
                0.997_587_254_183_425_6,
                143.149_857_825_929_8,
                145.068_196_881_987_7,
                143.452_060_756_667,
                9.166_690_323_881_263e-2,
                5.571_379_178_278_132e-2,
            ],
        ),
        (
            // Draws on a 0.1 grid: ArviZ's 95% quantile is 1.6999999999999997, not 1.7, which
            // decides `x <= q` for the draws at 1.7 (the tail ESS).
            "ties at 0.1",
            ar1(6, 4, 101, 0.5, 0.0, Some(1)),
            [
                1.010_687_655_453_914_6,
                107.080_957_310_104_98,
                179.422_510_048_295_27,
                108.545_894_192_416_44,
                0.115_306_509_539_667_15,
                5.780_099_285_788_859e-2,
            ],
        ),
    ];
    let names = [
        "rhat",
        "ess_bulk",
        "ess_tail",
        "ess_mean",
        "mcse_mean",
        "mcse_sd",
    ];
    for (name, chains, want) in cases {
        let c = Convergence::of(&chains);
        let ours = [
            c.rhat,
            c.ess_bulk,
            c.ess_tail,
            ess_mean(&chains),
            c.mcse_mean,
            c.mcse_sd,
        ];
        for ((what, o), w) in names.iter().zip(ours).zip(want) {
            close(&format!("{name}: {what}"), o, w);
        }
    }
    // The shifted chains are flagged (rank R-hat above 1.01), the mixed ones are not.
    assert!(Convergence::of(&ar1(3, 4, 200, 0.5, 0.4, None)).rhat > 1.01);
    assert!(Convergence::of(&ar1(1, 4, 200, 0.5, 0.0, None)).rhat < 1.01);
}

#[test]
fn pareto_k_hat_and_smoothed_weights_equal_arviz() {
    // (seed, scale, draws, r_eff) -> k, max smoothed log weight, first smoothed log weight
    let cases = [
        (
            11,
            1.0,
            1000,
            1.0,
            [
                0.293_543_294_998_940_16,
                -3.982_595_472_413_527,
                -7.143_272_296_981_213,
            ],
        ),
        (
            12,
            2.0,
            1000,
            0.7,
            [
                0.578_322_730_042_002_5,
                -3.113_791_110_409_172_4,
                -6.860_492_336_622_528,
            ],
        ),
        (
            13,
            3.0,
            400,
            1.0,
            [
                1.102_929_022_568_056_8,
                -0.929_953_006_587_115_5,
                -13.669_750_267_461_144,
            ],
        ),
    ];
    for (seed, scale, n, r_eff, want) in cases {
        let mut g = Lcg(seed);
        let lw: Vec<f64> = (0..n).map(|_| scale * g.normal()).collect();
        let p = psis(&lw, r_eff);
        let max = p
            .log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        close(&format!("seed {seed}: k"), p.k_hat, want[0]);
        close(&format!("seed {seed}: max"), max, want[1]);
        close(&format!("seed {seed}: lw[0]"), p.log_weights[0], want[2]);
        let total: f64 = p.log_weights.iter().map(|v| v.exp()).sum();
        assert!((total - 1.0).abs() < 1e-12, "normalised: {total}");
        assert_eq!(pareto_k_hat(&lw, r_eff), p.k_hat);
    }
    // Too few draws for a tail of five, or a NaN weight: no fit, as ArviZ says (k = inf).
    assert!(pareto_k_hat(&[0.0, 1.0, 2.0, 3.0], 1.0).is_infinite());
    let mut g = Lcg(14);
    let mut lw: Vec<f64> = (0..100).map(|_| g.normal()).collect();
    lw[7] = f64::NAN;
    let p = psis(&lw, 1.0);
    assert!(p.k_hat.is_infinite() && p.log_weights.iter().all(|v| v.is_nan()));
}

#[test]
fn the_normal_quantile_matches_scipy() {
    // scipy.stats.norm.ppf at these points (SciPy 1.17.1).
    for (p, z) in [
        (1e-10, -6.361_340_902_404_056),
        (0.000_1, -3.719_016_485_455_680_4),
        (0.025, -1.959_963_984_540_054_5),
        (0.5, 0.0),
        (0.9, 1.281_551_565_544_600_4),
    ] {
        let ours = normal_quantile(p);
        assert!((ours - z).abs() < 1e-13 * z.abs().max(1.0), "{p}: {ours}");
    }
}
