//! The CSGLD paper's 1-D mixture `0.4 N(-6,1) + 0.6 N(4,1)` (sec. 4.1, Fig. 1; thesis 5.4.1)
//! and the ICSGLD reference check on it (thesis 6.4, "validation of reduced variance"):
//! theta against the exact energy-bin masses, importance-weighted means against SGLD, and the
//! spread of theta across seeds for ICSGLD x P10 against CSGLD x T10 at equal gradient budget.
//!
//! Settings are the paper's: lr 0.1, tau 1, unit bins from one below the minimum energy,
//! `omega_k = 1 / (k^0.6 + 100)`, gradient noise N(0, 0.01), start at 0. Runs are shorter
//! (1e4-2e6 instead of 1e7 steps); `sgmcmc toy --preset mixture-csgld` runs the full length.
//! Tolerances are 4.5 Monte Carlo standard errors estimated in each test (batch means, or a
//! jackknife over seeds), and each test shows its plausible wrong answer outside them.
//!
//! The multiplier uses the supplement's scheme D.1 (`theta[J+1] / theta[J]`), as the reference
//! 1-D code does: with eq. 8's backward difference a chain entering a never-visited bin sees
//! `ln theta[J] - ln theta[J-1] << 0`, a large negative multiplier that at lr 0.1 throws it
//! further out until the energy overflows; the forward difference gives multiplier 1 there.

use sgmcmc::samplers::control::{
    EnergyPartition, MultiplierScheme, RandomField, SaStepSize, ThetaInit, WeightRule,
};
use sgmcmc::samplers::diagnostics::{batch_sums, ratio_estimate};
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Contour, ContourConfig, Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::equilibrium::theta_equilibrium;
use sgmcmc::testfunctions::{ToyTarget, by_name, energy_bins::energy_bin_masses};

/// Standard errors allowed between an estimate and its exact value.
const Z: f64 = 4.5;

fn target() -> ToyTarget {
    by_name("mixture-csgld").unwrap()
}

fn partition(m: usize) -> EnergyPartition {
    let umin = target().potential().energy(&[4.0]);
    EnergyPartition::new(umin - 1.0, 1.0, m).unwrap()
}

fn config(field: RandomField, zeta: f64, m: usize, weights: WeightRule) -> ContourConfig {
    ContourConfig {
        base: SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0),
        partition: partition(m),
        field,
        zeta,
        omega: SaStepSize {
            omega_max: 0.01,
            a: 1.0,
            alpha: 0.6,
            b: 100.0,
        },
        init: ThetaInit::Uniform,
        scheme: MultiplierScheme::Forward,
        multiplier_clip: None,
        target_temperature: None,
        weights,
    }
}

/// One run: its final theta, and 20 batch sums of the samples after 10% burn-in, weighted
/// `(sum w, sum w x)` and raw `(n, sum x)` (all chains pooled per step).
struct Run {
    theta: Vec<f64>,
    weighted: Vec<(f64, f64)>,
    raw: Vec<(f64, f64)>,
}

fn run(config: &ContourConfig, chains: usize, iters: u64, seed: u64) -> Run {
    let starts = vec![vec![0.0]; chains];
    let ens = HostEnsemble::new(target(), &starts, seed).unwrap();
    let mut s = Contour::new(config.clone(), ens).unwrap();
    let kept = (iters - iters / 10) as usize;
    let (mut w, mut wmean, mut n, mut mean) = (
        Vec::with_capacity(kept),
        Vec::with_capacity(kept),
        Vec::with_capacity(kept),
        Vec::with_capacity(kept),
    );
    for k in 0..iters {
        let x = s.ensemble().positions().to_vec();
        let r = s.step(&()).unwrap();
        if k >= iters / 10 {
            let sw: f64 = r.weights.iter().sum();
            let swx: f64 = x.iter().zip(&r.weights).map(|(x, w)| x * w).sum();
            w.push(sw);
            wmean.push(swx / sw);
            n.push(chains as f64);
            mean.push(x.iter().sum::<f64>() / chains as f64);
        }
    }
    Run {
        theta: s.theta().theta().to_vec(),
        weighted: batch_sums(&w, &wmean, 20),
        raw: batch_sums(&n, &mean, 20),
    }
}

fn normalised_power(theta: &[f64], zeta: f64) -> Vec<f64> {
    let v: Vec<f64> = theta.iter().map(|t| t.powf(zeta)).collect();
    let s: f64 = v.iter().sum();
    v.iter().map(|x| x / s).collect()
}

/// Sums `v` (one entry per bin of width `1 / refine`) into unit bins.
fn unit_bins(v: &[f64], refine: usize) -> Vec<f64> {
    let mut out = vec![0.0; v.len() / refine];
    for (i, e) in v.iter().enumerate() {
        out[i / refine] += e;
    }
    out
}

#[test]
fn csgld_theta_converges_to_the_bin_masses_up_to_the_computed_partition_bias() {
    // CSGLD's theta (power field, zeta 0.75) converges to the fixed point of its mean field,
    // which differs from the exact bin masses by the partition's bias: the dynamics flatten by
    // Psi_theta(U), which moves by a factor theta[J+1]/theta[J] ~ 0.2 across a unit bin, while
    // the field counts whole bins. `theta_equilibrium` computes that fixed point by quadrature:
    // on the heavy unit bins 1-4 it is 0.85-1.03 times the exact mass with unit bins, 0.98-1.01
    // with bins of 0.25 summed into unit bins.
    // Estimate: theta averaged over the second half of a 2e6-step run (every 50 steps), two
    // seeds; standard error from 2 x 20 batch means (0.3-1.4% of the mass). The paper's lr 0.1
    // adds a discretisation bias of 2-5% at bins of 0.25 (measured, 4-12 se), so the test runs
    // at lr 0.02, where it is below the Monte Carlo error (measured: within 1.7 se).
    // Wrong answers it must reject: the exact masses with unit bins (a test blind to the
    // partition's bias; 9-14 se off) and theta^zeta normalised, ICSGLD's read-off applied to
    // CSGLD's theta.
    // ICSGLD (interacting field) is not in this test: its equilibrium flattens all 50 bins, theta
    // spans many orders of magnitude over the barrier bins, and the discrete chain (multipliers
    // far from 1) does not follow the flattened law there, so there is no closed form to hold it
    // to; ICSGLD is checked by its weighted mode masses (tests/contour.rs) and its variance
    // reduction below.
    let masses = energy_bin_masses(target().potential(), 1.0, 200_000, &partition(50)).unwrap();
    // Bins holding at least 1% of the mass (1-4).
    let heavy: Vec<usize> = (0..50).filter(|&i| masses[i] > 1e-2).collect();
    assert!(heavy.len() >= 4);
    let mut bias = Vec::new();
    for du in [1.0f64, 0.25] {
        let refine = (1.0 / du).round() as usize;
        let mut c = config(RandomField::Power, 0.75, 50, WeightRule::Bin);
        c.base = SgmcmcConfig::constant(Kernel::Sgld, 0.02, 1.0);
        c.partition = EnergyPartition::new(partition(50).u_min, du, 50 * refine).unwrap();
        let eq = theta_equilibrium(
            target().potential(),
            1.0,
            40_000,
            &c.partition,
            RandomField::Power,
            0.75,
            MultiplierScheme::Forward,
        )
        .unwrap();
        let wrong = unit_bins(&normalised_power(&eq, 0.75), refine);
        let eq_fine = eq;
        let eq = unit_bins(&eq_fine, refine);
        // Batch sums (count, sum of theta) per unit bin.
        let (n, nb) = (2_000_000u64, 20u64);
        let mut batches = vec![Vec::new(); 50];
        for seed in [100, 101] {
            let ens = HostEnsemble::new(target(), &[vec![0.0]], seed).unwrap();
            let mut s = Contour::new(c.clone(), ens).unwrap();
            let (mut sum, mut count) = (vec![0.0; 50], 0.0);
            for k in 0..n {
                s.step(&()).unwrap();
                if k >= n / 2 && k % 50 == 0 {
                    for (a, v) in sum.iter_mut().zip(unit_bins(s.theta().theta(), refine)) {
                        *a += v;
                    }
                    count += 1.0;
                }
                if k >= n / 2 && (k + 1 - n / 2) % (n / 2 / nb) == 0 {
                    for (b, a) in batches.iter_mut().zip(&mut sum) {
                        b.push((count, std::mem::take(a)));
                    }
                    count = 0.0;
                }
            }
        }
        let est: Vec<(f64, f64)> = batches.iter().map(|b| ratio_estimate(b)).collect();
        let worst = |reference: &[f64]| {
            heavy
                .iter()
                .map(|&i| (est[i].0 - reference[i]).abs() / est[i].1)
                .fold(0.0, f64::max)
        };
        let (z_eq, z_exact, z_wrong) = (worst(&eq), worst(&masses), worst(&wrong));
        let ratios: Vec<String> = heavy
            .iter()
            .map(|&i| {
                format!(
                    "{i}: {:.3} +- {:.3} (equilibrium {:.3})",
                    est[i].0 / masses[i],
                    est[i].1 / masses[i],
                    eq[i] / masses[i]
                )
            })
            .collect();
        println!(
            "du {du}: estimate / exact bin mass {ratios:?}; worst |z| against the equilibrium \
             {z_eq:.1}, the exact masses {z_exact:.1}, theta^zeta normalised {z_wrong:.1}"
        );
        assert!(z_eq < Z, "du {du}: theta {z_eq:.1} se from its equilibrium");
        assert!(z_wrong > Z, "du {du}: theta^zeta within {z_wrong:.1} se");
        if du == 1.0 {
            assert!(z_exact > Z, "unit bins: the partition bias is not resolved");
        }
        bias.push(
            heavy
                .iter()
                .map(|&i| (eq[i] / masses[i] - 1.0).abs())
                .fold(0.0, f64::max),
        );
    }
    assert!(
        bias[1] < 0.5 * bias[0],
        "the computed bias must shrink with du: {bias:?}"
    );
}

#[test]
fn weighted_means_beat_sgld_at_equal_budget() {
    // The posterior mean 0.4 (-6) + 0.6 (4) = 0 from 4 seeds x 1e6 steps of CSGLD (lr 0.1) and
    // of SGLD. With the interpolated weights (Psi_theta(U)^zeta, which undo the flattening the
    // dynamics apply) the weighted mean is within 4.5 se of 0 (se from 4 x 20 batch means,
    // about 0.074; measured 0.108). Wrong answers outside the band: the raw (unweighted)
    // CSGLD mean, the flattened law's (measured -0.92, 12 se), and SGLD's, stuck in the mode at
    // 4 where it starts (4.0 on every seed). The papers' bin weights (theta[J]^zeta) carry the
    // unit bins' bias (measured -0.645 +- 0.075) but still beat SGLD by far.
    let exact = 0.4 * -6.0 + 0.6 * 4.0;
    let iters = 1_000_000u64;
    let seeds = 200..204u64;
    let mut pooled = [Vec::new(), Vec::new(), Vec::new()];
    for seed in seeds.clone() {
        for (i, rule) in [WeightRule::Interpolated, WeightRule::Bin]
            .into_iter()
            .enumerate()
        {
            let r = run(&config(RandomField::Power, 0.75, 50, rule), 1, iters, seed);
            pooled[i].extend(r.weighted);
            if i == 0 {
                pooled[2].extend(r.raw);
            }
        }
    }
    let [interp, bin, raw] = pooled.map(|b| ratio_estimate(&b));
    let sgld: Vec<f64> = seeds
        .map(|seed| {
            let ens = HostEnsemble::new(target(), &[vec![0.0]], seed).unwrap();
            let mut sgld =
                Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0), ens).unwrap();
            let (mut n, mut sx) = (0.0, 0.0);
            for k in 0..iters {
                let x = sgld.ensemble().positions()[0];
                sgld.step(&()).unwrap();
                if k >= iters / 10 {
                    n += 1.0;
                    sx += x;
                }
            }
            sx / n
        })
        .collect();
    println!(
        "posterior mean (exact {exact}): CSGLD interpolated weights {:.3} +- {:.3}, bin weights \
         {:.3} +- {:.3}, raw {:.3} +- {:.3}; SGLD per seed {sgld:.3?}",
        interp.0, interp.1, bin.0, bin.1, raw.0, raw.1
    );
    let band = Z * interp.1;
    assert!((interp.0 - exact).abs() < band, "{interp:?}");
    assert!((raw.0 - exact).abs() > band, "raw {raw:?} inside the band");
    let nearest_sgld = sgld
        .iter()
        .map(|m| (m - exact).abs())
        .fold(f64::INFINITY, f64::min);
    assert!(nearest_sgld > band, "SGLD {sgld:?} inside the band");
    assert!(
        (bin.0 - exact).abs() + Z * bin.1 < nearest_sgld,
        "bin weights {bin:?} vs SGLD {sgld:?}"
    );
}

#[test]
fn icsgld_spreads_less_than_csgld_at_equal_budget() {
    // The reference check: zeta 0.9, 100 unit bins, the interacting field for both; ICSGLD x P10
    // runs 10 chains for n steps, CSGLD x T10 one chain for 10 n steps (same gradient count).
    // Statistic: the mean over bins 1-9 of ln(var_ICSGLD / var_CSGLD) of theta^zeta across 48
    // seeds at n = 1e4, its standard error by the jackknife over seeds (measured -1.8 +- 0.3,
    // an sd ratio of 0.41). The wrong answer, no reduction (0), must lie 4.5 se above it.
    let c = config(RandomField::Interacting, 0.9, 100, WeightRule::Bin);
    let seeds = 48u64;
    let n = 10_000u64;
    let spread = |chains: usize, iters: u64| -> Vec<Vec<f64>> {
        (0..seeds)
            .map(|s| normalised_power(&run(&c, chains, iters, 300 + s).theta, 0.9))
            .collect()
    };
    let (ic, cs) = (spread(10, n), spread(1, 10 * n));
    let var = |runs: &[&Vec<f64>], i: usize| {
        let k = runs.len() as f64;
        let m = runs.iter().map(|r| r[i]).sum::<f64>() / k;
        runs.iter().map(|r| (r[i] - m).powi(2)).sum::<f64>() / (k - 1.0)
    };
    // The statistic without seed `drop` (none: all seeds).
    let stat = |drop: Option<usize>| {
        fn keep(r: &[Vec<f64>], drop: Option<usize>) -> Vec<&Vec<f64>> {
            r.iter()
                .enumerate()
                .filter(|(s, _)| Some(*s) != drop)
                .map(|(_, v)| v)
                .collect()
        }
        let (a, b) = (keep(&ic, drop), keep(&cs, drop));
        (1..10).map(|i| (var(&a, i) / var(&b, i)).ln()).sum::<f64>() / 9.0
    };
    let full = stat(None);
    let jack: Vec<f64> = (0..seeds as usize).map(|s| stat(Some(s))).collect();
    let k = seeds as f64;
    let jm = jack.iter().sum::<f64>() / k;
    let se = ((k - 1.0) / k * jack.iter().map(|v| (v - jm).powi(2)).sum::<f64>()).sqrt();
    println!(
        "mean ln(var ICSGLD x P10 / var CSGLD x T10) of theta^zeta: {full:.2} +- {se:.2} (sd \
         ratio {:.2})",
        (full / 2.0).exp()
    );
    assert!(full + Z * se < 0.0, "ICSGLD {full} +- {se}");
}
