//! AWSGLD (thesis ch. 7): the cumulative field estimates the energy CDF (Fig. 7.1) and the
//! sampler biases its samples toward low energies.
//!
//! Settings: tau 1, zeta 1, `omega_k = 0.02 / (k^0.6 + 100)`, gradient noise N(0, 0.1^2), the
//! partition from the minimum energy. The paper uses 1000 bins of 0.01 and 1e7 steps
//! (`sgmcmc toy --preset awsgld-cdf`, 66 s, max error 0.013 at lr 0.005); the test uses 100 bins
//! of 0.1, lr 0.02 and 2e6 steps (the `awsgld-cdf-quick` preset), about 2 s per target.

use sgmcmc::samplers::control::{EnergyPartition, RandomField, SaStepSize};
use sgmcmc::samplers::density::toy::{by_name, energy_bins::energy_bin_masses, quadrature};
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Contour, ContourConfig, Sampler, Sgmcmc, SgmcmcConfig};

fn config(u_min: f64) -> ContourConfig {
    let mut c = ContourConfig::new(
        SgmcmcConfig::constant(Kernel::Sgld, 0.02, 1.0),
        EnergyPartition::new(u_min, 0.1, 100).unwrap(),
        RandomField::Cumulative,
        1.0,
    );
    c.omega = SaStepSize {
        omega_max: 1.0,
        a: 0.02,
        alpha: 0.6,
        b: 100.0,
    };
    c
}

/// Minimum energy on the quadrature grid.
fn min_energy(name: &str) -> f64 {
    let t = by_name(name).unwrap();
    let mut u = f64::INFINITY;
    quadrature::visit_grid(t.potential(), 1.0, 20_000, |x, _| {
        u = u.min(t.potential().energy(x));
    })
    .unwrap();
    u
}

#[test]
fn theta_estimates_the_energy_cdf() {
    // Measured max |theta_i - CDF_i| over the 100 bins: 0.033 (N(0,1)) and 0.028 (mixture), a
    // bias concentrated in the lowest bins (seed-to-seed spread 0.001); bound 0.05. Bins of 0.01
    // at the paper's lr 0.005 bring it to 0.013 on N(0,1).
    for name in ["normal", "mixture-awsgld"] {
        let c = config(min_energy(name));
        let t = by_name(name).unwrap();
        let masses = energy_bin_masses(t.potential(), 1.0, 200_000, &c.partition).unwrap();
        let cdf: Vec<f64> = masses
            .iter()
            .scan(0.0, |s, m| {
                *s += m;
                Some(*s)
            })
            .collect();
        let ens = HostEnsemble::new(t, &[vec![0.0]], 5).unwrap();
        let mut s = Contour::new(c, ens).unwrap();
        for _ in 0..2_000_000 {
            s.step(&()).unwrap();
        }
        let theta = s.theta().theta();
        let err = theta
            .iter()
            .zip(&cdf)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!("{name}: max |theta - CDF| = {err:.4}");
        assert!(err < 0.05, "{name}: {err}");
        // theta is a CDF: increasing to 1.
        assert!(theta.windows(2).all(|w| w[0] <= w[1]));
        assert!((theta[99] - 1.0).abs() < 1e-12);
    }
}

#[test]
fn awsgld_samples_favour_low_energies() {
    // Under N(0,1), P(|x| < 0.12566) = 0.1 (the lowest energy decile). SGLD's samples land
    // there about 10% of the time; AWSGLD's (raw, unweighted) more often (measured 0.145 with
    // zeta = 1), while the weighted fraction recovers 0.1 (measured 0.095). 1e6 steps at lr 0.02
    // give an ESS of about 2e4, so the Monte Carlo sd of each fraction is about 0.0025: the
    // bounds below sit at 4-6 sd.
    let a = 0.125_66;
    let t = by_name("normal").unwrap();
    let n = 1_000_000u64;
    let ens = HostEnsemble::new(t.clone(), &[vec![0.0]], 6).unwrap();
    let mut aw = Contour::new(config(min_energy("normal")), ens).unwrap();
    let (mut raw, mut wsum, mut wlow) = (0.0, 0.0, 0.0);
    for k in 0..2 * n {
        let x = aw.ensemble().positions()[0];
        let w = aw.step(&()).unwrap().weights[0];
        if k >= n {
            let low = f64::from(u8::from(x.abs() < a));
            raw += low;
            wsum += w;
            wlow += w * low;
        }
    }
    let ens = HostEnsemble::new(t, &[vec![0.0]], 6).unwrap();
    let mut sgld = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 0.02, 1.0), ens).unwrap();
    let mut low_sgld = 0.0;
    for _ in 0..n {
        let x = sgld.ensemble().positions()[0];
        sgld.step(&()).unwrap();
        low_sgld += f64::from(u8::from(x.abs() < a));
    }
    let (raw, weighted, plain) = (raw / n as f64, wlow / wsum, low_sgld / n as f64);
    println!("lowest energy decile: AWSGLD raw {raw:.3}, weighted {weighted:.3}, SGLD {plain:.3}");
    assert!((plain - 0.1).abs() < 0.02, "SGLD {plain}");
    assert!(raw > 1.3 * plain, "AWSGLD raw {raw} vs SGLD {plain}");
    assert!((weighted - 0.1).abs() < 0.03, "weighted {weighted}");
}
