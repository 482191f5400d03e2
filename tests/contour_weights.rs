//! The reference code's importance weights (`WeightRule::Reference`): `theta[J]` without the
//! power and without tempering, 0 in the top bin, against the papers' `theta[J]^zeta`.

use sgmcmc::samplers::control::WeightRule;
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc::samplers::sampler::Sampler;
use sgmcmc::testfunctions::by_name;

fn sampler(name: &str, weights: WeightRule, u_min: f64) -> AnySampler<HostEnsemble> {
    let mut s = SamplerSettings {
        lr: 3e-3,
        ..SamplerSettings::named(name)
    };
    s.contour.u_min = Some(u_min);
    s.contour.du = 0.5;
    s.contour.bins = 40;
    s.contour.zeta = 3.0;
    s.contour.weights = weights;
    let ens = HostEnsemble::new(by_name("nine-mode").unwrap(), &[vec![0.1, -0.2]], 5).unwrap();
    s.spec(&BuildContext::steps(500).chains(1))
        .unwrap()
        .build(ens, 5)
        .unwrap()
}

#[test]
fn reference_weights_are_theta_without_the_power() {
    for name in ["csgld", "awsgld"] {
        let mut bin = sampler(name, WeightRule::Bin, -1.0);
        let mut reference = sampler(name, WeightRule::Reference, -1.0);
        for _ in 0..500 {
            let (a, b) = (
                bin.step(&()).unwrap().clone(),
                reference.step(&()).unwrap().clone(),
            );
            // The same chain: weights do not change the dynamics.
            assert_eq!(a.energies, b.energies);
            let j = b.bins[0];
            let theta = reference.theta().unwrap().theta()[j];
            assert!((b.log_weights[0] - theta.ln()).abs() < 1e-12, "{name}");
            // The papers' weight carries zeta = 3 (and AWSGLD's tempering, if any).
            if name == "csgld" {
                assert!((a.log_weights[0] - 3.0 * theta.ln()).abs() < 1e-12);
            }
        }
    }
    // A chain in the top bin (energies far above the partition) gets weight 0.
    let mut top = sampler("csgld", WeightRule::Reference, -1000.0);
    let r = top.step(&()).unwrap();
    assert_eq!(r.bins[0], 39);
    assert_eq!(r.weights[0], 0.0);
}
