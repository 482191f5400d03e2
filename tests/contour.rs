//! Dynamic importance samplers (CSGLD, ICSGLD, AWSGLD): weighted estimates on the 9-mode
//! target against the exact mode masses, zeta = 0 is exactly the base kernel, divergence and bad
//! settings are caught.

use sgmcmc::samplers::SamplerError;
use sgmcmc::samplers::collect::ModeTraces;
use sgmcmc::samplers::control::{
    EnergyPartition, MultiplierScheme, RandomField, SaStepSize, ThetaInit,
};
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Contour, ContourConfig, Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::{by_name, quadrature};

/// Standard errors allowed between an estimate and its exact value.
const Z: f64 = 4.5;

fn csgld(
    field: RandomField,
    partition: EnergyPartition,
    omega: SaStepSize,
    init: ThetaInit,
    lr: f64,
) -> ContourConfig {
    ContourConfig {
        base: SgmcmcConfig::constant(Kernel::Sgld, lr, 1.0),
        partition,
        field,
        zeta: 0.75,
        omega,
        init,
        scheme: MultiplierScheme::Backward,
        multiplier_clip: None,
        target_temperature: None,
        weights: Default::default(),
    }
}

/// Supplement D.3 settings on the 9-mode target: lr 1e-3, tau 1, zeta 0.75, m = 100 bins of
/// 0.25 from one below the minimum energy (as the reference code), omega_k = min(0.003,
/// 10 / (k^0.8 + 100)), decreasing initial theta.
fn nine_mode(field: RandomField) -> ContourConfig {
    let umin = by_name("nine-mode")
        .unwrap()
        .potential()
        .energy(&[0.0, 0.0]);
    csgld(
        field,
        EnergyPartition::new(umin - 1.0, 0.25, 100).unwrap(),
        SaStepSize {
            omega_max: 0.003,
            a: 10.0,
            alpha: 0.8,
            b: 100.0,
        },
        ThetaInit::Decreasing,
        1e-3,
    )
}

/// Mode (and mode-class) traces of 4 independent single-chain runs of 4e5 steps (2e4 burn-in,
/// every 10th step: consecutive steps at lr 1e-3 are nearly equal).
fn nine_mode_traces(field: RandomField) -> (ModeTraces, ModeTraces) {
    let target = by_name("nine-mode").unwrap();
    let map = target.potential().modes().unwrap();
    let (mut modes, mut classes) = (ModeTraces::new(9, 4), ModeTraces::new(3, 4));
    for seed in 0..4 {
        let ens = HostEnsemble::new(target.clone(), &[vec![2.0, 2.0]], 70 + seed).unwrap();
        let mut s = Contour::new(nine_mode(field), ens).unwrap();
        for k in 0..400_000u64 {
            let x = s.ensemble().positions().to_vec();
            let weight = s.step(&()).unwrap().weights[0];
            if k >= 20_000 && k % 10 == 0 {
                let m = map.mode_of(&x);
                modes.push_weighted(seed as usize, m, weight);
                classes.push_weighted(seed as usize, class(m), weight);
            }
        }
    }
    (modes, classes)
}

/// The class of a mode of the 3 x 3 grid: 0 corner, 1 edge, 2 centre.
fn class(mode: usize) -> usize {
    match mode {
        4 => 2,
        m if m % 2 == 1 => 1,
        _ => 0,
    }
}

#[test]
fn weighted_nine_mode_masses_match_the_exact_ones_and_raw_samples_do_not() {
    // Each weighted mode mass must lie within 4.5 Monte Carlo standard errors of its exact
    // value (the error of the ratio estimator from the ESS of its linearised trace over the 4
    // independent chains, `ModeTraces::masses`: 0.008-0.03; measured within 1.9 se). The raw
    // (unweighted) samples are the plausible wrong answer: they follow the flattened law, with
    // corners at 0.06-0.09 against 0.049. Per mode they are not resolved at this length (2-4.5
    // se), but pooled into corners, edges and centre they must lie outside the weighted band
    // (measured: corners 0.28 and 0.31 against 0.198, 6-7 se).
    let exact =
        quadrature::mode_masses(by_name("nine-mode").unwrap().potential(), 1.0, 1000).unwrap();
    let mut exact_class = [0.0; 3];
    for (m, e) in exact.iter().enumerate() {
        exact_class[class(m)] += e;
    }
    for field in [RandomField::Power, RandomField::Interacting] {
        let (modes, classes) = nine_mode_traces(field);
        let (w, se) = modes.masses();
        let z_modes = (0..9)
            .map(|i| (w[i] - exact[i]).abs() / se[i])
            .fold(0.0, f64::max);
        let (wc, sec) = classes.masses();
        let raw = classes.raw_masses();
        let z_class = (0..3)
            .map(|c| (wc[c] - exact_class[c]).abs() / sec[c])
            .fold(0.0, f64::max);
        let z_raw = (0..3)
            .map(|c| (raw[c] - exact_class[c]).abs() / sec[c])
            .fold(0.0, f64::max);
        println!(
            "{field:?}: worst |z| of the weighted modes {z_modes:.1}, classes {z_class:.1}; \
             (corner, edge, centre) weighted {wc:.3?} +- {sec:.3?}, raw {raw:.3?}, exact \
             {exact_class:.3?}: raw {z_raw:.1} se off"
        );
        assert!(
            z_modes < Z,
            "{field:?}: a weighted mode mass {z_modes:.1} se off"
        );
        assert!(
            z_class < Z,
            "{field:?}: a weighted class mass {z_class:.1} se off"
        );
        assert!(z_raw > Z, "{field:?}: raw masses within {z_raw:.1} se");
    }
}

#[test]
fn zeta_zero_is_exactly_the_base_kernel() {
    let target = by_name("nine-mode").unwrap();
    let starts = vec![vec![0.3, -1.2], vec![2.0, 0.5], vec![-1.0, -1.0]];
    for kernel in [Kernel::Sgld, Kernel::sghmc(), Kernel::psgld()] {
        let base = SgmcmcConfig::constant(kernel.clone(), 1e-3, 1.0);
        let cfg = ContourConfig {
            base: base.clone(),
            zeta: 0.0,
            ..nine_mode(RandomField::Power)
        };
        let mut c =
            Contour::new(cfg, HostEnsemble::new(target.clone(), &starts, 5).unwrap()).unwrap();
        let mut s =
            Sgmcmc::new(base, HostEnsemble::new(target.clone(), &starts, 5).unwrap()).unwrap();
        for _ in 0..2000 {
            c.step(&()).unwrap();
            s.step(&()).unwrap();
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(c.ensemble().positions()),
            bits(s.ensemble().positions()),
            "{kernel:?}"
        );
    }
}

#[test]
fn a_diverging_contour_chain_is_reported_with_chain_and_step() {
    let target = by_name("gaussian").unwrap();
    let cfg = ContourConfig {
        base: SgmcmcConfig::constant(Kernel::Sgld, 5.0, 1.0),
        ..nine_mode(RandomField::Power)
    };
    let mut c = Contour::new(
        cfg,
        HostEnsemble::new(target, &[vec![0.1; 10], vec![0.0; 10]], 1).unwrap(),
    )
    .unwrap();
    let err = (0..10_000)
        .find_map(|_| c.step(&()).err())
        .expect("diverges");
    assert!(matches!(err, SamplerError::Diverged { .. }), "{err}");
    assert!(err.to_string().contains("diverged at step"), "{err}");
}

#[test]
fn invalid_contour_settings_are_rejected() {
    let bad_omega = ContourConfig {
        omega: SaStepSize {
            omega_max: 2.0,
            a: 10.0,
            alpha: 0.6,
            b: 1.0,
        },
        ..nine_mode(RandomField::Power)
    };
    let ens = || HostEnsemble::new(by_name("bimodal").unwrap(), &[vec![0.0]], 1).unwrap();
    assert!(Contour::new(bad_omega, ens()).is_err());
    let bad_zeta = ContourConfig {
        zeta: -1.0,
        ..nine_mode(RandomField::Power)
    };
    assert!(Contour::new(bad_zeta, ens()).is_err());
    let bad_init = ContourConfig {
        init: ThetaInit::Given(vec![0.5; 3]),
        ..nine_mode(RandomField::Power)
    };
    let err = Contour::new(bad_init, ens()).err().unwrap().to_string();
    assert!(err.contains("theta"), "{err}");
}
