//! Named toy presets: the papers' settings, and scaled-down variants that run in seconds.

use sgmcmc_samplers::control::{MultiplierScheme, SwapScheme, ThetaInit, WeightRule};
use sgmcmc_samplers::registry::{
    ContourSettings, CyclicalSettings, ReplicaSettings, SamplerSettings,
};
use sgmcmc_testfunctions::Noise;

use super::{Init, ToyConfig, toy_sampler};

/// Every preset with a one-line description.
pub const PRESET_NAMES: &[(&str, &str)] = &[
    (
        "nine-mode-sgld",
        "9-mode target, SGLD lr 1e-3, 2e5 iterations (CSGLD sec. 4.1 / D.3)",
    ),
    (
        "nine-mode-cycsgld",
        "9-mode target, cycSGLD lr0 5e-3, 20 cycles, 2e5 iterations (D.3)",
    ),
    (
        "twenty-five-mode-sgld",
        "25-mode target, SGLD x P5, lr 3e-3, 8e4 iterations (E.4.2)",
    ),
    (
        "twenty-five-mode-cycsgld",
        "25-mode target, cycSGLD x T5 (4e5 iterations), lr0 1e-2, 10 cycles (reference code)",
    ),
    (
        "twenty-five-mode-resgld",
        "25-mode target, reSGLD x P5 (taus 1..5, lrs 0.001..0.005, DEO), 8e4 iterations (E.4.2)",
    ),
    (
        "twenty-five-mode-csgld",
        "25-mode target, CSGLD x T5 (4e5 iterations), lr 3e-3, 100 bins of 0.125 (E.4.2)",
    ),
    (
        "nine-mode-csgld",
        "9-mode target, CSGLD lr 1e-3, zeta 0.75, 100 bins of 0.25, 4e5 iterations (D.3)",
    ),
    (
        "twenty-five-mode-icsgld",
        "25-mode target, ICSGLD x P5, lr 3e-3, 100 bins of 0.125, 8e4 iterations (E.4.2)",
    ),
    (
        "mixture-csgld",
        "0.4 N(-6,1) + 0.6 N(4,1), CSGLD lr 0.1, zeta 0.75, 50 unit bins, 1e7 iterations (Fig. 1)",
    ),
    ("mixture-csgld-quick", "the same, 1e6 iterations"),
    (
        "mixture-icsgld",
        "0.4 N(-6,1) + 0.6 N(4,1), ICSGLD x P10, zeta 0.9, 100 unit bins, 1e6 iterations (6.4)",
    ),
    (
        "awsgld-cdf",
        "N(0,1), AWSGLD zeta 1, 1000 bins of 0.01, 1e7 iterations: theta vs the energy CDF (7.2.1)",
    ),
    (
        "awsgld-cdf-quick",
        "N(0,1), AWSGLD zeta 1, 100 bins of 0.1, lr 0.02, 2e6 iterations",
    ),
    (
        "awsgld-table",
        "Table 7.1: iterations to hit on 10 functions, SGLD low/high tau, AW-10, AW-100, 10 seeds",
    ),
    (
        "awsgld-table-quick",
        "Table 7.1 on G20, R20, PW24, DP25 with 3 seeds",
    ),
    (
        "resgld-1",
        "0.4 N(-3,0.7^2) + 0.6 N(2,0.5^2), energy noise N(0,4): reSGLD tau (1,10), F 1, 1e5 its (2.5.1)",
    ),
    ("resgld-1-naive", "the same with naive swaps (F = inf)"),
    (
        "resgld-1-sgld",
        "the same target with SGLD alone (lr 0.03, tau 1)",
    ),
    (
        "resgld-2",
        "0.4 N(-4,0.7^2) + 0.6 N(3,0.5^2), energy noise t(5): reSGLD, F 1 (2.5.1)",
    ),
    ("resgld-2-naive", "the same with naive swaps"),
    (
        "resgld-3",
        "0.4 N(-6,0.7^2) + 0.6 N(4,0.5^2), energy noise 7 t(10): reSGLD, F 1 (2.5.1)",
    ),
    (
        "resgld-3-f2",
        "the same with F = 2 (paper: swap rate ~0.4%)",
    ),
    ("resgld-3-f4", "the same with F = 4 (paper: ~7.1%)"),
    ("resgld-3-naive", "the same with F = inf (paper: ~46%)"),
    (
        "deo-sgd-25-mode",
        "25-mode target, noise sd 2: DEO*-SGD x P16 (W* = 8), lr 0.003..0.6, S 0.4, 2e4 its (4.5.1)",
    ),
    ("deo-sgd-25-mode-w1", "the same with W = 1 (DEO)"),
    (
        "mixture-csgld-sgld",
        "0.4 N(-6,1) + 0.6 N(4,1), SGLD lr 0.1, 1e7 iterations (CSGLD 4.1)",
    ),
    (
        "mixture-resgld",
        "0.4 N(-6,1) + 0.6 N(4,1), reSGLD tau (1, 10), lr 0.1, F 1, 1e6 iterations (the demo)",
    ),
    (
        "bimodal-sgld",
        "two modes with a low barrier, SGLD lr 0.01, 8 chains x 2e5 iterations",
    ),
    (
        "gaussian-sgld",
        "10-d Gaussian, SGLD lr 0.2, 1000 chains: exact discretised covariance",
    ),
    (
        "rugged-sgld-high",
        "rugged landscape, SGLD tau 20, lr 5e-5, 1e5 iterations (F.1)",
    ),
    (
        "rugged-psgld",
        "rugged landscape, pSGLD tau 2 (a 0.999, lambda 0.1), 1e5 iterations (F.1)",
    ),
];

/// The 1-D mixture's contour settings (CSGLD sec. 4.1 and the ICSGLD reference check): lr 0.1,
/// unit bins, `omega_k = 1 / (k^0.6 + 100)`, the supplement's forward multiplier (D.1, as the
/// authors' 1-D code), uniform initial theta, interpolated weights, start at 0.
fn mixture_contour(name: &str, bins: usize, zeta: f64) -> SamplerSettings {
    let mut s = toy_sampler(name);
    s.lr = 0.1;
    s.contour = ContourSettings {
        zeta,
        bins,
        du: 1.0,
        omega_max: 0.01,
        omega_a: 1.0,
        omega_alpha: 0.6,
        omega_b: 100.0,
        multiplier_scheme: MultiplierScheme::Forward,
        theta_init: Some(ThetaInit::Uniform),
        weights: WeightRule::Interpolated,
        ..s.contour
    };
    s
}

/// `name` at learning rate `lr` with the toy defaults.
fn at(name: &str, lr: f64) -> SamplerSettings {
    SamplerSettings {
        lr,
        ..toy_sampler(name)
    }
}

/// The 25-mode contour settings (E.4.2): bins of 0.125, `omega_k = min(3e-3, 1 / (k^0.6 +
/// 100))`.
fn twenty_five_contour(name: &str) -> SamplerSettings {
    let mut s = at(name, 3e-3);
    s.contour.du = 0.125;
    s.contour.omega_max = 3e-3;
    s.contour.omega_a = 1.0;
    s.contour.omega_alpha = 0.6;
    s.contour.omega_b = 100.0;
    s
}

/// The preset `name` applied on top of the defaults.
pub fn preset(name: &str) -> Option<ToyConfig> {
    let base = ToyConfig::default();
    let c = match name {
        "nine-mode-sgld" => ToyConfig {
            target: "nine-mode".into(),
            sampler: at("sgld", 1e-3),
            iters: 200_000,
            ..base
        },
        "nine-mode-cycsgld" => ToyConfig {
            target: "nine-mode".into(),
            sampler: at("cycsgld", 5e-3),
            iters: 200_000,
            ..base
        },
        "nine-mode-csgld" => ToyConfig {
            target: "nine-mode".into(),
            sampler: at("csgld", 1e-3),
            iters: 400_000,
            ..base
        },
        "twenty-five-mode-icsgld" => ToyConfig {
            target: "twenty-five-mode".into(),
            sampler: twenty_five_contour("icsgld"),
            chains: 5,
            iters: 80_000,
            ..base
        },
        "mixture-csgld" | "mixture-csgld-quick" => ToyConfig {
            target: "mixture-csgld".into(),
            sampler: mixture_contour("csgld", 50, 0.75),
            iters: if name.ends_with("quick") {
                1_000_000
            } else {
                10_000_000
            },
            thin: 10,
            init: Init::Point(vec![0.0]),
            ..base
        },
        "mixture-icsgld" => ToyConfig {
            target: "mixture-csgld".into(),
            sampler: mixture_contour("icsgld", 100, 0.9),
            chains: 10,
            iters: 1_000_000,
            thin: 10,
            init: Init::Point(vec![0.0]),
            ..base
        },
        "awsgld-cdf" | "awsgld-cdf-quick" => {
            let quick = name.ends_with("quick");
            let mut s = at("awsgld", if quick { 0.02 } else { 0.005 });
            s.contour.zeta = 1.0;
            s.contour.bins = if quick { 100 } else { 1000 };
            s.contour.du = if quick { 0.1 } else { 0.01 };
            s.contour.omega_max = 1.0;
            s.contour.omega_a = 0.02;
            s.contour.omega_alpha = 0.6;
            s.contour.omega_b = 100.0;
            ToyConfig {
                target: "normal".into(),
                sampler: s,
                iters: if quick { 2_000_000 } else { 10_000_000 },
                thin: 100,
                init: Init::Point(vec![0.0]),
                ..base
            }
        }
        name if name.starts_with("resgld-") => {
            let (target, sampler, correction) = match name {
                "resgld-1" => ("mixture-resgld-1", "resgld", 1.0),
                "resgld-1-naive" => ("mixture-resgld-1", "resgld", f64::INFINITY),
                "resgld-1-sgld" => ("mixture-resgld-1", "sgld", 1.0),
                "resgld-2" => ("mixture-resgld-2", "resgld", 1.0),
                "resgld-2-naive" => ("mixture-resgld-2", "resgld", f64::INFINITY),
                "resgld-3" => ("mixture-resgld-3", "resgld", 1.0),
                "resgld-3-f2" => ("mixture-resgld-3", "resgld", 2.0),
                "resgld-3-f4" => ("mixture-resgld-3", "resgld", 4.0),
                "resgld-3-naive" => ("mixture-resgld-3", "resgld", f64::INFINITY),
                _ => return None,
            };
            let mut s = at(sampler, 0.03);
            s.replica = ReplicaSettings {
                temperatures: vec![1.0, 10.0],
                correction,
                variance_period: 100,
                variance_draws: 10,
                initial_variance: 100.0,
                ..ReplicaSettings::default()
            };
            ToyConfig {
                target: target.into(),
                sampler: s,
                chains: if sampler == "sgld" { 1 } else { 2 },
                iters: 100_000,
                init: Init::Point(vec![0.0]),
                ..base
            }
        }
        "deo-sgd-25-mode" | "deo-sgd-25-mode-w1" => {
            let mut s = at("deo-sgd", 0.003);
            s.replica = ReplicaSettings {
                lr_max: 0.6,
                target_rate: 0.4,
                buffer: 4.0,
                scheme: name.ends_with("w1").then_some(SwapScheme::Window(1)),
                ..ReplicaSettings::default()
            };
            ToyConfig {
                target: "twenty-five-mode".into(),
                sampler: s,
                chains: 16,
                iters: 20_000,
                gradient_noise: Some(Noise::gaussian(2.0)),
                energy_noise: Some(Noise::gaussian(2.0)),
                ..base
            }
        }
        "twenty-five-mode-sgld" => ToyConfig {
            target: "twenty-five-mode".into(),
            sampler: at("sgld", 3e-3),
            chains: 5,
            iters: 80_000,
            ..base
        },
        "twenty-five-mode-cycsgld" => {
            let mut s = at("cycsgld", 1e-2);
            s.cyclical = CyclicalSettings {
                cycles: 10,
                sampling_threshold: 0.2,
                noise_free_exploration: false,
                hold: 1.0,
            };
            ToyConfig {
                target: "twenty-five-mode".into(),
                sampler: s,
                iters: 400_000,
                ..base
            }
        }
        "twenty-five-mode-resgld" => {
            let mut s = at("resgld", 1e-3);
            s.replica = ReplicaSettings {
                temperatures: vec![1.0, 2.0, 3.0, 4.0, 5.0],
                lrs: vec![1e-3, 2e-3, 3e-3, 4e-3, 5e-3],
                initial_variance: 30.0,
                scheme: Some(SwapScheme::DeterministicEvenOdd),
                ..ReplicaSettings::default()
            };
            ToyConfig {
                target: "twenty-five-mode".into(),
                sampler: s,
                chains: 5,
                iters: 80_000,
                ..base
            }
        }
        "twenty-five-mode-csgld" => ToyConfig {
            target: "twenty-five-mode".into(),
            sampler: twenty_five_contour("csgld"),
            iters: 400_000,
            ..base
        },
        "mixture-csgld-sgld" => ToyConfig {
            target: "mixture-csgld".into(),
            sampler: at("sgld", 0.1),
            iters: 10_000_000,
            thin: 10,
            init: Init::Point(vec![0.0]),
            ..base
        },
        "mixture-resgld" => {
            let mut s = at("resgld", 0.1);
            s.replica = ReplicaSettings {
                temperatures: vec![1.0, 10.0],
                variance_period: 100,
                variance_draws: 10,
                initial_variance: 100.0,
                ..ReplicaSettings::default()
            };
            ToyConfig {
                target: "mixture-csgld".into(),
                sampler: s,
                chains: 2,
                iters: 1_000_000,
                thin: 10,
                init: Init::Point(vec![0.0]),
                ..base
            }
        }
        "bimodal-sgld" => ToyConfig {
            target: "bimodal".into(),
            sampler: at("sgld", 0.01),
            chains: 8,
            iters: 200_000,
            ..base
        },
        "gaussian-sgld" => ToyConfig {
            target: "gaussian".into(),
            sampler: at("sgld", 0.2),
            chains: 1000,
            iters: 2_000,
            init: Init::Point(vec![0.0; 10]),
            ..base
        },
        "rugged-sgld-high" => ToyConfig {
            target: "rugged".into(),
            sampler: SamplerSettings {
                temperature: 20.0,
                ..at("sgld", 5e-5)
            },
            iters: 100_000,
            ..base
        },
        "rugged-psgld" => ToyConfig {
            target: "rugged".into(),
            sampler: SamplerSettings {
                temperature: 2.0,
                psgld_alpha: 0.999,
                psgld_lambda: 0.1,
                ..at("psgld", 5e-5)
            },
            iters: 100_000,
            ..base
        },
        _ => return None,
    };
    Some(c)
}
