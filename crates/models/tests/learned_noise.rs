//! The learned Gaussian noise precision: its energy against a host `f64` formula and finite
//! differences, and SGLD on `s = ln lambda` against the exact conjugate posterior.

// Tests move data freely (the library's transfers are counted: clippy.toml).
#![allow(clippy::disallowed_methods)]

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Likelihood, Mlp, MlpConfig, Network, Posterior, Scale, Targets, WithNoise};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::diagnostics::{ess, mcse};
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// `x W` with a free `[inputs, outputs]` weight (no bias), built from host values.
#[derive(Module, Debug)]
struct Lin {
    w: Param<Tensor<2>>,
}

impl Network for Lin {
    type Input = Tensor<2>;
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        x.matmul(self.w.val())
    }
}

/// A parameter-free network predicting 0: the only parameter of `WithNoise<Zero>` is `s`.
#[derive(Module, Debug)]
struct Zero {
    outputs: usize,
}

impl Network for Zero {
    type Input = Tensor<2>;
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        Tensor::zeros([x.dims()[0], self.outputs], &x.device())
    }
}

fn tensor2(v: &[f64], shape: [usize; 2], device: &Device) -> Tensor<2> {
    let data: Vec<f32> = v.iter().map(|x| *x as f32).collect();
    Tensor::from_data(TensorData::new(data, shape), device)
}

fn noisy_lin(w: &[f64], s: f64, device: &Device) -> WithNoise<Lin> {
    let lin = Lin {
        w: Param::from_tensor(tensor2(w, [3, 2], device)),
    };
    WithNoise::new(lin, s.exp(), device).unwrap()
}

fn host_vec(t: Tensor<2>) -> Vec<f64> {
    let v: Vec<f32> = t.into_data().try_into_vec().unwrap();
    v.into_iter().map(f64::from).collect()
}

struct Problem {
    x: Vec<f64>,
    y: Vec<f64>,
    n: usize,
    n_data: usize,
    prior_precision: f64,
    shape: f64,
    rate: f64,
}

impl Problem {
    /// `prior/2 |w|^2 + (N/n) sum_ij [e^s/2 r_ij^2 - s/2 + ln(2 pi)/2] - a s + b e^s` in f64.
    fn energy(&self, w: &[f64], s: f64) -> f64 {
        let mut fit = 0.0;
        for i in 0..self.n {
            for j in 0..2 {
                let f: f64 = (0..3).map(|k| self.x[i * 3 + k] * w[k * 2 + j]).sum();
                let r = self.y[i * 2 + j] - f;
                fit += 0.5 * s.exp() * r * r - 0.5 * s + 0.5 * LN_2PI;
            }
        }
        let sq: f64 = w.iter().map(|v| v * v).sum();
        0.5 * self.prior_precision * sq + self.n_data as f64 / self.n as f64 * fit - self.shape * s
            + self.rate * s.exp()
    }

    fn posterior(&self) -> Posterior {
        Posterior {
            likelihood: Likelihood::GaussianLearned {
                shape: self.shape,
                rate: self.rate,
            },
            scale: Scale {
                n_data: self.n_data,
                prior_precision: self.prior_precision,
            },
        }
    }

    fn batch(&self, device: &Device) -> Batch<Tensor<2>> {
        Batch {
            x: tensor2(&self.x, [self.n, 3], device),
            y: Targets::Real(tensor2(&self.y, [self.n, 2], device)),
        }
    }
}

fn problem() -> Problem {
    let mut rng = ChainRng::new(11, 0);
    let n = 5;
    Problem {
        x: (0..n * 3).map(|_| rng.normal()).collect(),
        y: (0..n * 2).map(|_| rng.normal()).collect(),
        n,
        n_data: 20,
        prior_precision: 0.7,
        shape: 1.5,
        rate: 0.3,
    }
}

#[test]
fn learned_noise_energy_matches_the_formula_and_finite_differences() {
    let device = Device::flex().autodiff();
    let p = problem();
    let w = [0.3, -0.2, 0.5, 0.1, -0.4, 0.25];
    let s = 0.2;
    let model = noisy_lin(&w, s, &device);
    assert!((model.precision() - s.exp()).abs() < 1e-6);
    let (posterior, batch) = (p.posterior(), p.batch(&device));
    let energy = posterior.energy(&model, &batch).unwrap();
    let value = f64::from(energy.clone().into_scalar::<f32>());
    let want = p.energy(&w, s);
    println!("energy {value} vs host {want}");
    // f32 sums of ~20 terms of size ~10: relative rounding ~1e-6.
    assert!(
        (value - want).abs() < 1e-5 * want.abs(),
        "{value} vs {want}"
    );

    let grads = energy.backward();
    let g_s = f64::from(
        model
            .log_precision
            .val()
            .grad(&grads)
            .unwrap()
            .into_scalar::<f32>(),
    );
    let g_w = host_vec(model.net.w.val().grad(&grads).unwrap());
    // Central differences of the f64 formula (delta 1e-6: truncation ~1e-12, rounding ~1e-10),
    // against f32 autodiff gradients (relative error ~1e-6).
    let h = 1e-6;
    let fd_s = (p.energy(&w, s + h) - p.energy(&w, s - h)) / (2.0 * h);
    assert!(
        (g_s - fd_s).abs() < 1e-4 * (1.0 + fd_s.abs()),
        "{g_s} vs {fd_s}"
    );
    for k in 0..6 {
        let (mut up, mut down) = (w, w);
        up[k] += h;
        down[k] -= h;
        let fd = (p.energy(&up, s) - p.energy(&down, s)) / (2.0 * h);
        assert!(
            (g_w[k] - fd).abs() < 1e-4 * (1.0 + fd.abs()),
            "w[{k}]: {} vs {fd}",
            g_w[k]
        );
    }
    println!("dU/ds {g_s} (fd {fd_s}), dU/dw {g_w:?}");

    // The same finite differences through burn's own f32 energy (delta 1e-2: truncation
    // ~1e-4 relative, rounding ~1e-6 * |U| / delta ~ 1e-3).
    let burn_energy = |w: &[f64], s: f64| {
        let m = noisy_lin(w, s, &device);
        f64::from(posterior.energy(&m, &batch).unwrap().into_scalar::<f32>())
    };
    let d = 1e-2;
    let fd_s = (burn_energy(&w, s + d) - burn_energy(&w, s - d)) / (2.0 * d);
    assert!(
        (g_s - fd_s).abs() < 5e-3 * (1.0 + fd_s.abs()),
        "{g_s} vs {fd_s}"
    );
    let (mut up, mut down) = (w, w);
    up[2] += d;
    down[2] -= d;
    let fd_w = (burn_energy(&up, s) - burn_energy(&down, s)) / (2.0 * d);
    assert!(
        (g_w[2] - fd_w).abs() < 5e-3 * (1.0 + fd_w.abs()),
        "{} vs {fd_w}",
        g_w[2]
    );
}

#[test]
fn likelihood_and_model_must_agree_on_the_noise() {
    let device = Device::flex().autodiff();
    let p = problem();
    let batch = p.batch(&device);
    let mlp: Mlp = MlpConfig {
        inputs: 3,
        hidden: vec![4],
        outputs: 2,
        activation: sgmcmc_models::Activation::Tanh,
    }
    .init(&device);
    // A learned likelihood needs the model's log precision.
    let err = p.posterior().energy(&mlp, &batch).unwrap_err();
    assert!(err.to_string().contains("WithNoise"), "{err}");
    // A fixed likelihood refuses a model that carries one (it would never be sampled).
    let fixed = Posterior {
        likelihood: Likelihood::Gaussian { precision: 1.0 },
        scale: Scale {
            n_data: 20,
            prior_precision: 1.0,
        },
    };
    let wrapped = WithNoise::new(mlp, 1.0, &device).unwrap();
    let err = fixed.energy(&wrapped, &batch).unwrap_err();
    assert!(err.to_string().contains("gaussian_learned"), "{err}");
    // Invalid hyper-parameters.
    let bad = Posterior {
        likelihood: Likelihood::GaussianLearned {
            shape: -1.0,
            rate: 1.0,
        },
        ..fixed.clone()
    };
    assert!(matches!(
        bad.energy(&wrapped, &batch),
        Err(TargetError::InvalidParameter {
            name: "noise shape",
            ..
        })
    ));
    assert!(WithNoise::new(Zero { outputs: 1 }, 0.0, &device).is_err());
    assert!(WithNoise::new(Zero { outputs: 1 }, f64::NAN, &device).is_err());
}

/// `psi(x)` by recurrence to `x >= 10` and the asymptotic series (error < 1e-12 there).
fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + x.ln() - 0.5 / x - x2 * (1.0 / 12.0 - x2 * (1.0 / 120.0 - x2 / 252.0))
}

/// `psi'(x)`, the same way.
fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x + 0.5 * x2 + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 / 42.0))
}

/// Mean and variance of the exact stationary law of the discretised chain
/// `s' = s - h U'(s) + sqrt(2 h) xi` with `U'(s) = beta e^s - alpha`, by power iteration of its
/// Gaussian transition kernel on a grid over `mean +- 12 sd` (1200 points: ~17 per kernel sd).
fn discretised_moments(alpha: f64, beta: f64, h: f64) -> (f64, f64) {
    let (m, sd) = (digamma(alpha) - beta.ln(), trigamma(alpha).sqrt());
    let n = 1200;
    let (lo, dx) = (m - 12.0 * sd, 24.0 * sd / (n - 1) as f64);
    let grid: Vec<f64> = (0..n).map(|i| lo + i as f64 * dx).collect();
    let var_k = 2.0 * h;
    let kernel: Vec<f64> = grid
        .iter()
        .flat_map(|&s| {
            let to = s - h * (beta * s.exp() - alpha);
            grid.iter()
                .map(move |&t| (-(t - to).powi(2) / (2.0 * var_k)).exp())
        })
        .collect();
    // Start from the continuous law; iterate until the density stops moving.
    let mut d: Vec<f64> = grid
        .iter()
        .map(|&s| (alpha * s - beta * s.exp() - (alpha * m - beta * m.exp())).exp())
        .collect();
    for _ in 0..5000 {
        let mut next = vec![0.0; n];
        for (i, di) in d.iter().enumerate() {
            for (nj, k) in next.iter_mut().zip(&kernel[i * n..(i + 1) * n]) {
                *nj += di * k;
            }
        }
        let z: f64 = next.iter().sum();
        next.iter_mut().for_each(|v| *v /= z);
        let change: f64 = next.iter().zip(&d).map(|(a, b)| (a - b).abs()).sum();
        d = next;
        if change < 1e-13 {
            break;
        }
    }
    let mean: f64 = grid.iter().zip(&d).map(|(s, p)| s * p).sum();
    let var: f64 = grid
        .iter()
        .zip(&d)
        .map(|(s, p)| (s - mean).powi(2) * p)
        .sum();
    (mean, var)
}

#[test]
fn sgld_on_the_log_precision_samples_the_conjugate_posterior() {
    // y_i ~ N(0, 1 / 4), N = 100, a zero network, full batch: lambda | y ~ Gamma(a + N/2,
    // b + S/2) exactly, s = ln lambda is log-Gamma: E[s] = psi(alpha) - ln beta, Var[s] =
    // psi'(alpha).
    let device = Device::flex().autodiff();
    let (n_data, shape, rate) = (100, 2.0, 1.0);
    let mut rng = ChainRng::new(5, 0);
    let y: Vec<f64> = (0..n_data).map(|_| 0.5 * rng.normal()).collect();
    let sum_sq: f64 = y.iter().map(|v| v * v).sum();
    let (alpha, beta) = (shape + n_data as f64 / 2.0, rate + sum_sq / 2.0);
    let (mean, var) = (digamma(alpha) - beta.ln(), trigamma(alpha));

    let posterior = Posterior {
        likelihood: Likelihood::GaussianLearned { shape, rate },
        // The weight prior must not touch s (the network has no other parameter).
        scale: Scale {
            n_data,
            prior_precision: 50.0,
        },
    };
    let batch = Batch {
        x: Tensor::<2>::zeros([n_data, 1], &device),
        y: Targets::Real(tensor2(&y, [n_data, 1], &device)),
    };
    // Step h = 2e-3 on a curvature U'' ~ alpha = 52: lag-1 correlation 1 - h alpha ~ 0.9
    // (integrated autocorrelation time ~18 steps), and an O(h) bias of the stationary law
    // (variance + h alpha / 2 ~ 5% for a Gaussian), computed exactly below.
    let (h, chains, burn, steps) = (2e-3, 4, 300, 40_000);
    let modules = (0..chains)
        .map(|_| WithNoise::new(Zero { outputs: 1 }, mean.exp(), &device).unwrap())
        .collect();
    let ens = ModuleEnsemble::new(posterior, modules, 17).unwrap();
    let mut sampler = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, h, 1.0), ens).unwrap();
    let mut traces = vec![Vec::with_capacity(steps); chains];
    for k in 0..burn + steps {
        sampler.step(&batch).unwrap();
        if k >= burn {
            for (t, m) in traces.iter_mut().zip(sampler.ensemble().modules()) {
                t.push(f64::from(m.log_precision.val().into_scalar::<f32>()));
            }
        }
    }
    let all: Vec<f64> = traces.iter().flatten().copied().collect();
    let m_hat = all.iter().sum::<f64>() / all.len() as f64;
    let dev2: Vec<Vec<f64>> = traces
        .iter()
        .map(|t| t.iter().map(|v| (v - m_hat).powi(2)).collect())
        .collect();
    let v_hat = dev2.iter().flatten().sum::<f64>() / all.len() as f64;
    // Monte Carlo errors from the effective sample size (Geyer's initial positive sequence over
    // the split chains): of the mean of s, and of the mean of (s - m)^2.
    let (se_m, se_v) = (mcse(&traces), mcse(&dev2));
    let (m_h, v_h) = discretised_moments(alpha, beta, h);
    println!(
        "E[s]: sample {m_hat:.5} +- {se_m:.5}, discretised {m_h:.5}, exact {mean:.5}\n\
         Var[s]: sample {v_hat:.6} +- {se_v:.6}, discretised {v_h:.6}, exact {var:.6}\n\
         ESS {:.0} of {} draws; E[lambda] exact {:.4}",
        ess(&traces),
        all.len(),
        alpha / beta
    );
    // The sampler against the exact law of the discretised chain: z < 4 (over 16 seeds the
    // z-scores of this setup had RMS 1.06, so the ESS-based errors are calibrated).
    assert!((m_hat - m_h).abs() < 4.0 * se_m, "mean {m_hat} vs {m_h}");
    assert!((v_hat - v_h).abs() < 4.0 * se_v, "var {v_hat} vs {v_h}");
    // The discretised law against the conjugate posterior: the SGLD bias is O(h), first order
    // `Var * h U'' / 2` for the variance (~5% here) and much smaller for the mean of this
    // nearly Gaussian law (skewness -1/sqrt(alpha)); allow twice the first-order term.
    assert!((v_h - var).abs() < var * h * alpha, "{v_h} vs {var}");
    assert!((m_h - mean).abs() < 0.1 * var.sqrt(), "{m_h} vs {mean}");
    // And the exact answer is far from what a missing Jacobian (alpha - 1) would give, in units
    // of the Monte Carlo error, so the test can tell them apart.
    assert!((digamma(alpha - 1.0) - mean).abs() > 10.0 * se_m);
}
