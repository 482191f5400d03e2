//! SGLD with a small step on a 1-D two-mode target with a low barrier: mode masses within 3
//! Monte Carlo standard errors of the exact masses (quadrature), split R-hat < 1.01 over 8 chains.

use sgmcmc::samplers::collect::{ModeTraces, Traces};
use sgmcmc::samplers::diagnostics::split_rhat;
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::{by_name, quadrature};

#[test]
fn sgld_mode_masses_on_a_low_barrier_two_mode_target() {
    let target = by_name("bimodal").unwrap();
    let exact = quadrature::mode_masses(target.potential(), 1.0, 200_000).unwrap();
    let chains = 8;
    let starts: Vec<Vec<f64>> = (0..chains)
        .map(|c| vec![if c % 2 == 0 { -3.0 } else { 3.0 }])
        .collect();
    let ens = HostEnsemble::new(target.clone(), &starts, 2024).unwrap();
    // lr 0.01: the discretisation bias of the masses is O(lr) ~ 1e-3, a tenth of the s.e.
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 0.01, 1.0), ens).unwrap();
    let map = target.potential().modes().unwrap();
    let mut modes = ModeTraces::new(2, chains);
    let mut x = Traces::new(chains);
    for k in 0..200_000u64 {
        s.step(&()).unwrap();
        if k >= 20_000 && k % 5 == 0 {
            let pos = s.ensemble().positions();
            for (c, xc) in pos.chunks(1).enumerate() {
                modes.push(c, map.mode_of(xc));
            }
            x.push(pos.iter().copied());
        }
    }
    let (masses, se) = modes.masses();
    for i in 0..2 {
        let z = (masses[i] - exact[i]).abs() / se[i];
        assert!(
            z < 3.0,
            "mode {i}: {} vs exact {} (se {}, z {z})",
            masses[i],
            exact[i],
            se[i]
        );
        assert!(se[i] < 0.02, "s.e. too large to be a test: {}", se[i]);
    }
    let rhat = split_rhat(&x.chains);
    assert!(rhat < 1.01, "split R-hat {rhat}");
}
