//! SGLD on the 2-D 9-mode target through the library API: run 8 chains, estimate the mode
//! masses with Monte Carlo errors and compare with the exact masses by quadrature.
//!
//! `cargo run --release --example nine_mode`

use sgmcmc::samplers::collect::ModeTraces;
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::{by_name, quadrature};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = by_name("nine-mode")?;
    let chains = 8;
    let starts = vec![vec![0.0, 0.0]; chains];
    let mut sgld = Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::Sgld, 1e-3, 1.0),
        HostEnsemble::new(target.clone(), &starts, 42)?,
    )?;
    let map = target.potential().modes().ok_or("no modes")?;
    let mut modes = ModeTraces::new(map.n_modes(), chains);
    for k in 0..200_000 {
        sgld.step(&())?;
        if k >= 20_000 && k % 10 == 0 {
            for (c, x) in sgld.ensemble().positions().chunks(2).enumerate() {
                modes.push(c, map.mode_of(x));
            }
        }
    }
    let (masses, se) = modes.masses();
    let exact = quadrature::mode_masses(target.potential(), 1.0, 1000)?;
    for (i, label) in map.labels().iter().enumerate() {
        println!(
            "{label:>8}: {:.3} ± {:.3}  (exact {:.3})",
            masses[i], se[i], exact[i]
        );
    }
    Ok(())
}
