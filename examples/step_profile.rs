//! Per-piece profile of one SGLD step on the digits-shaped 64-100-10 tanh MLP (batch 100,
//! categorical likelihood) on burn-flex: interleaved timing, median microseconds per call.
//!
//! `cargo run --release --example step_profile [-- rounds]`

use std::hint::black_box;
use std::time::Instant;

use sgmcmc::burn::module::Module;
use sgmcmc::burn::nn::{Linear, LinearConfig};
use sgmcmc::burn::optim::GradientsParams;
use sgmcmc::burn::tensor::activation;
use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use sgmcmc::models::mlp::MlpPosterior;
use sgmcmc::models::posterior::Batch;
use sgmcmc::models::prior::squared_norm;
use sgmcmc::models::{Activation, Likelihood, MlpConfig, Network, Posterior, Scale, Targets};
use sgmcmc::samplers::TargetError;
use sgmcmc::samplers::ensemble::{Ensemble, ModuleEnsemble};
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::rng::ChainRng;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::samplers::target::{Estimate, Target};

type Piece<'a> = (&'static str, Box<dyn FnMut() + 'a>);

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let plain = Device::flex();
    let ad = plain.clone().autodiff();
    let (n, b) = (1437usize, 100usize);
    let x = Tensor::<2>::random([n, 64], Distribution::Normal(0.0, 1.0), &ad);
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), &ad);
    let cfg = MlpConfig {
        inputs: 64,
        hidden: vec![100],
        outputs: 10,
        activation: Activation::Tanh,
    };
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(n, 1e-4),
    };
    let model = cfg.init(&ad);
    let model_plain = model.clone().valid();
    let batch = Batch {
        x: x.clone().slice(0..b),
        y: Targets::Class(y.clone().slice(0..b)),
    };
    let mut rng = ChainRng::new(3, 0);
    let mut sgld = Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::Sgld, 1e-5, 1.0),
        ModuleEnsemble::new(post.clone(), vec![cfg.init(&ad)], 1).unwrap(),
    )
    .unwrap();
    let mut sgd = Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::Sgd, 1e-5, 1.0),
        ModuleEnsemble::new(post.clone(), vec![cfg.init(&ad)], 1).unwrap(),
    )
    .unwrap();
    let mut closed = Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::Sgld, 1e-5, 1.0),
        ModuleEnsemble::new(MlpPosterior::new(post.clone()), vec![cfg.init(&plain)], 1).unwrap(),
    )
    .unwrap();
    let mut closed_sgd = Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::Sgd, 1e-5, 1.0),
        ModuleEnsemble::new(MlpPosterior::new(post.clone()), vec![cfg.init(&plain)], 1).unwrap(),
    )
    .unwrap();
    let closed_post = MlpPosterior::new(post.clone());
    let model_c = cfg.init(&plain);
    let batch_plain = Batch {
        x: batch.x.clone().inner(),
        y: Targets::Class(y.clone().slice(0..b).inner()),
    };
    let mut ens = ModuleEnsemble::new(post.clone(), vec![cfg.init(&ad)], 1).unwrap();
    let mut ens2 = ModuleEnsemble::new(post.clone(), vec![cfg.init(&ad)], 1).unwrap();
    let mut rng2 = ChainRng::new(4, 0);
    let buf2 = vec![0.5f32; 6400];
    let coefs = [Kernel::Sgld
        .coefficients(&sgmcmc::samplers::kernel::StepSize::new(1e-5, 1.0))
        .unwrap()];
    let a = Tensor::<2>::random([b, 64], Distribution::Normal(0.0, 1.0), &plain);
    let w = Tensor::<2>::random([64, 100], Distribution::Normal(0.0, 1.0), &plain);
    let h = Tensor::<2>::random([b, 100], Distribution::Normal(0.0, 1.0), &plain);
    let w2 = Tensor::<2>::random([100, 10], Distribution::Normal(0.0, 1.0), &plain);
    let o = Tensor::<2>::random([b, 10], Distribution::Normal(0.0, 1.0), &plain);
    let yb = Targets::Class(y.clone().slice(0..b).inner());
    let yba = Targets::Class(y.clone().slice(0..b));
    let mw = [
        Tensor::<2>::random([64, 100], Distribution::Normal(0.0, 0.1), &plain),
        Tensor::<2>::random([1, 100], Distribution::Normal(0.0, 0.1), &plain),
        Tensor::<2>::random([100, 10], Distribution::Normal(0.0, 0.1), &plain),
        Tensor::<2>::random([1, 10], Distribution::Normal(0.0, 0.1), &plain),
    ];
    let xb = x.clone().slice(0..b).inner();
    let yi = y.clone().slice(0..b).inner().unsqueeze_dim::<2>(1);
    let one = Tensor::<1>::zeros([1], &plain);
    let mut nrng = ChainRng::new(5, 0);
    let mut buf = vec![0.0f32; 7510];

    if std::env::args().nth(2).as_deref() == Some("sum") {
        let t = Tensor::<2>::random([100, 100], Distribution::Normal(0.0, 1.0), &plain);
        for _ in 0..rounds {
            black_box(t.clone().sum());
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("floor") {
        // The update against burn's own SGD (ModuleOptimizer), all with closed-form gradients
        // on the autodiff device (burn's ModuleOptimizer requires it).
        let post_c = MlpPosterior::new(post.clone());
        let mut m_burn = Some(cfg.init(&ad));
        let mut optim = sgmcmc::burn::optim::SgdConfig::new().init();
        let mut e_sgd = ModuleEnsemble::new(post_c.clone(), vec![cfg.init(&ad)], 1).unwrap();
        let mut e_sgld = ModuleEnsemble::new(post_c.clone(), vec![cfg.init(&ad)], 1).unwrap();
        let sgd_c = [Kernel::Sgd
            .coefficients(&sgmcmc::samplers::kernel::StepSize::new(1e-5, 1.0))
            .unwrap()];
        let m_est = cfg.init(&ad);
        let m_plain = cfg.init(&plain);
        let mut p_sgd = ModuleEnsemble::new(post_c.clone(), vec![cfg.init(&plain)], 1).unwrap();
        let mut p_sgld = ModuleEnsemble::new(post_c.clone(), vec![cfg.init(&plain)], 1).unwrap();
        let mut pieces: Vec<Piece> = vec![
            (
                "estimate only (closed form)",
                Box::new(|| {
                    let (e, g) = post_c.energy_and_grads(&m_est, &batch_plain, true).unwrap();
                    black_box((e.into_scalar::<f32>(), g));
                }),
            ),
            (
                "estimate + burn Sgd ModuleOptimizer step",
                Box::new(|| {
                    let m = m_burn.take().unwrap();
                    let (e, g) = post_c.energy_and_grads(&m, &batch_plain, true).unwrap();
                    black_box(e.into_scalar::<f32>());
                    m_burn = Some(optim.step(1e-5, m, g.unwrap()));
                }),
            ),
            (
                "estimate + our apply, Kernel::Sgd",
                Box::new(|| {
                    e_sgd.estimate(&batch_plain).unwrap();
                    e_sgd.apply(&Kernel::Sgd, &sgd_c, false);
                }),
            ),
            (
                "estimate + our apply, Kernel::Sgld",
                Box::new(|| {
                    e_sgld.estimate(&batch_plain).unwrap();
                    e_sgld.apply(&Kernel::Sgld, &coefs, false);
                }),
            ),
            (
                "plain device: estimate only",
                Box::new(|| {
                    let (e, g) = post_c
                        .energy_and_grads(&m_plain, &batch_plain, true)
                        .unwrap();
                    black_box((e.into_scalar::<f32>(), g));
                }),
            ),
            (
                "plain device: estimate + our apply, Sgd",
                Box::new(|| {
                    p_sgd.estimate(&batch_plain).unwrap();
                    p_sgd.apply(&Kernel::Sgd, &sgd_c, false);
                }),
            ),
            (
                "plain device: estimate + our apply, Sgld",
                Box::new(|| {
                    p_sgld.estimate(&batch_plain).unwrap();
                    p_sgld.apply(&Kernel::Sgld, &coefs, false);
                }),
            ),
        ];
        profile(&mut pieces, rounds);
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("matmul") {
        let t = |r: usize, c: usize| {
            Tensor::<2>::random([r, c], Distribution::Normal(0.0, 1.0), &plain)
        };
        let (x, w1, d1, a1, d2, w2) = (
            t(100, 64),
            t(64, 100),
            t(100, 100),
            t(100, 100),
            t(100, 10),
            t(100, 10),
        );
        let (x_t, w1_t) = (t(64, 100), t(100, 64));
        let mut pieces: Vec<Piece> = vec![
            (
                "fwd1 x[100,64] W[64,100]",
                Box::new(|| {
                    black_box(x.clone().matmul(w1.clone()));
                }),
            ),
            (
                "fwd1 as (W^T x^T)^T, transposed views",
                Box::new(|| {
                    black_box(w1_t.clone().matmul(x_t.clone()).transpose());
                }),
            ),
            (
                "fwd2 a[100,100] W[100,10]",
                Box::new(|| {
                    black_box(a1.clone().matmul(w2.clone()));
                }),
            ),
            (
                "dW2 a^T[100,100] d[100,10]",
                Box::new(|| {
                    black_box(a1.clone().transpose().matmul(d2.clone()));
                }),
            ),
            (
                "back d[100,10] W2^T[10,100]",
                Box::new(|| {
                    black_box(d2.clone().matmul(w2.clone().transpose()));
                }),
            ),
            (
                "dW1 x^T[64,100] d[100,100]",
                Box::new(|| {
                    black_box(x.clone().transpose().matmul(d1.clone()));
                }),
            ),
            (
                "dW1 from contiguous x^T",
                Box::new(|| {
                    black_box(x_t.clone().matmul(d1.clone()));
                }),
            ),
            (
                "tanh_value-like: clamp [100,100]",
                Box::new(|| {
                    black_box(a1.clone().clamp(-7.9, 7.9));
                }),
            ),
            (
                "mul [100,100] (fresh alloc)",
                Box::new(|| {
                    black_box(a1.clone() * d1.clone());
                }),
            ),
            (
                "add_scalar [100,100] (fresh alloc)",
                Box::new(|| {
                    black_box(a1.clone().add_scalar(1.0));
                }),
            ),
            (
                "sum_dim0 [100,100]",
                Box::new(|| {
                    black_box(d1.clone().sum_dim(0));
                }),
            ),
            (
                "powi2+sum [64,100]",
                Box::new(|| {
                    black_box(w1.clone().powi_scalar(2).sum());
                }),
            ),
            (
                "powi2 [64,100]",
                Box::new(|| {
                    black_box(w1.clone().powi_scalar(2));
                }),
            ),
            (
                "x*x [64,100]",
                Box::new(|| {
                    black_box(w1.clone() * w1.clone());
                }),
            ),
            (
                "sum [64,100]",
                Box::new(|| {
                    black_box(w1.clone().sum());
                }),
            ),
            (
                "sum [100,100]",
                Box::new(|| {
                    black_box(d1.clone().sum());
                }),
            ),
            (
                "clamp_min.clamp_max [100,100]",
                Box::new(|| {
                    black_box(a1.clone().clamp_min(-7.9).clamp_max(7.9));
                }),
            ),
            (
                "into_scalar [1]",
                Box::new(|| {
                    black_box(
                        w1.clone()
                            .slice([0..1, 0..1])
                            .reshape([1])
                            .into_scalar::<f32>(),
                    );
                }),
            ),
        ];
        profile(&mut pieces, rounds);
        return;
    }
    if let Some(mode @ ("compare" | "old" | "new" | "closed-bench")) =
        std::env::args().nth(2).as_deref()
    {
        compare(&plain, rounds, mode);
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("closed") {
        // The same with the closed-form target on the plain device.
        let (xp, yp) = (x.clone().inner(), y.clone().inner());
        for _ in 0..rounds {
            let s = rng.below(n - b) as i64;
            let idx: Vec<i64> = (s..s + b as i64).collect();
            let idx = Tensor::<1, Int>::from_data(idx.as_slice(), &plain);
            let bt = Batch {
                x: xp.clone().select(0, idx.clone()),
                y: Targets::Class(yp.clone().select(0, idx)),
            };
            black_box(closed.step(&bt).unwrap());
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("steps") {
        // A fixed number of steps for callgrind: `step_profile N steps`.
        for _ in 0..rounds {
            let s = rng.below(n - b) as i64;
            let idx: Vec<i64> = (s..s + b as i64).collect();
            let idx = Tensor::<1, Int>::from_data(idx.as_slice(), &ad);
            let bt = Batch {
                x: x.clone().select(0, idx.clone()),
                y: Targets::Class(y.clone().select(0, idx)),
            };
            black_box(sgld.step(&bt).unwrap());
        }
        return;
    }
    let mut pieces: Vec<Piece> = vec![
        (
            "sgld step (sampler, fixed batch)",
            Box::new(|| {
                black_box(sgld.step(&batch).unwrap());
            }),
        ),
        (
            "sgd step (sampler, fixed batch)",
            Box::new(|| {
                black_box(sgd.step(&batch).unwrap());
            }),
        ),
        (
            "sgld step closed form (plain device)",
            Box::new(|| {
                black_box(closed.step(&batch_plain).unwrap());
            }),
        ),
        (
            "sgd step closed form (plain device)",
            Box::new(|| {
                black_box(closed_sgd.step(&batch_plain).unwrap());
            }),
        ),
        (
            "closed form energy+grads",
            Box::new(|| {
                black_box(
                    closed_post
                        .energy_and_grads(&model_c, &batch_plain, true)
                        .unwrap(),
                );
            }),
        ),
        (
            "closed form energy only (forward)",
            Box::new(|| {
                black_box(
                    closed_post
                        .energy_and_grads(&model_c, &batch_plain, false)
                        .unwrap(),
                );
            }),
        ),
        (
            "closed form energy+grads+into_scalar",
            Box::new(|| {
                let (e, g) = closed_post
                    .energy_and_grads(&model_c, &batch_plain, true)
                    .unwrap();
                black_box((e.into_scalar::<f32>(), g));
            }),
        ),
        (
            "ensemble estimate",
            Box::new(|| {
                black_box(ens.estimate(&batch).unwrap());
            }),
        ),
        (
            "ensemble estimate + apply(sgld)",
            Box::new(|| {
                ens2.estimate(&batch).unwrap();
                ens2.apply(&Kernel::Sgld, &coefs, false);
            }),
        ),
        (
            "batch: Int idx + 2 select",
            Box::new(|| {
                let s = rng.below(n - b) as i64;
                let idx: Vec<i64> = (s..s + b as i64).collect();
                let idx = Tensor::<1, Int>::from_data(idx.as_slice(), &ad);
                black_box(x.clone().select(0, idx.clone()));
                black_box(y.clone().select(0, idx));
            }),
        ),
        (
            "batch: 2 slice",
            Box::new(|| {
                let s = rng2.below(n - b);
                black_box(x.clone().slice(s..s + b));
                black_box(y.clone().slice(s..s + b));
            }),
        ),
        (
            "energy fwd (autodiff)",
            Box::new(|| {
                black_box(post.energy(&model, &batch).unwrap());
            }),
        ),
        (
            "energy fwd + into_scalar",
            Box::new(|| {
                let e = post.energy(&model, &batch).unwrap();
                black_box(e.into_scalar::<f32>());
            }),
        ),
        (
            "energy fwd + backward",
            Box::new(|| {
                let e = post.energy(&model, &batch).unwrap();
                black_box(e.backward());
            }),
        ),
        (
            "energy fwd + backward + from_grads",
            Box::new(|| {
                let e = post.energy(&model, &batch).unwrap();
                black_box(GradientsParams::from_grads(e.backward(), &model));
            }),
        ),
        (
            "mlp fwd (autodiff)",
            Box::new(|| {
                black_box(model.forward(batch.x.clone()));
            }),
        ),
        (
            "mlp fwd (plain flex)",
            Box::new(|| {
                black_box(model_plain.forward(batch.x.clone().inner()));
            }),
        ),
        (
            "noise 7510 normals (host)",
            Box::new(|| {
                nrng.fill_normal_f32(&mut buf);
                black_box(&buf);
            }),
        ),
        (
            "upload [100,64] from_data",
            Box::new(|| {
                let d = TensorData::new(buf2.clone(), [100, 64]);
                black_box(Tensor::<2>::from_data(d, &plain));
            }),
        ),
        (
            "matmul [100,64]x[64,100] flex",
            Box::new(|| {
                black_box(a.clone().matmul(w.clone()));
            }),
        ),
        (
            "add [100,100] flex",
            Box::new(|| {
                black_box(h.clone() + h.clone());
            }),
        ),
        (
            "mul_scalar [100,100] flex",
            Box::new(|| {
                black_box(h.clone().mul_scalar(0.5));
            }),
        ),
        (
            "tanh [100,100] flex",
            Box::new(|| {
                black_box(h.clone().tanh());
            }),
        ),
        (
            "exp [100,100] flex",
            Box::new(|| {
                black_box(h.clone().exp());
            }),
        ),
        (
            "matmul [100,100]x[100,10] flex",
            Box::new(|| {
                black_box(h.clone().matmul(w2.clone()));
            }),
        ),
        (
            "matmul^T [64,100]x[100,100] flex",
            Box::new(|| {
                black_box(a.clone().transpose().matmul(h.clone()));
            }),
        ),
        (
            "log_softmax [100,10] flex",
            Box::new(|| {
                black_box(sgmcmc::burn::tensor::activation::log_softmax(o.clone(), 1));
            }),
        ),
        (
            "nll categorical plain",
            Box::new(|| {
                black_box(post.likelihood.neg_log_lik(o.clone(), &yb).unwrap());
            }),
        ),
        (
            "nll categorical autodiff fwd+bwd",
            Box::new(|| {
                let oa = Tensor::from_inner(o.clone()).require_grad();
                let l = post.likelihood.neg_log_lik(oa, &yba).unwrap();
                black_box(l.backward());
            }),
        ),
        (
            "tanh burn fwd+bwd [100,100] autodiff",
            Box::new(|| {
                let v = Tensor::from_inner(h.clone()).require_grad();
                black_box(v.clone().tanh().sum().backward());
            }),
        ),
        (
            "tanh via sigmoid fwd+bwd [100,100]",
            Box::new(|| {
                let v = Tensor::from_inner(h.clone()).require_grad();
                black_box(fast_tanh(v).sum().backward());
            }),
        ),
        (
            "sum fwd+bwd [100,100] autodiff",
            Box::new(|| {
                let v = Tensor::from_inner(h.clone()).require_grad();
                black_box(v.sum().backward());
            }),
        ),
        (
            "manual fwd+bwd plain (energy, 4 grads)",
            Box::new(|| {
                black_box(manual(&mw, &xb, &yi, 1437.0 / 100.0, 0.1437));
            }),
        ),
        (
            "chain 20 add_scalar [1] autodiff fwd+bwd",
            Box::new(|| {
                let mut v = Tensor::from_inner(one.clone()).require_grad();
                let v0 = v.clone();
                for _ in 0..20 {
                    v = v.add_scalar(1.0);
                }
                black_box(v.sum().backward());
                black_box(v0);
            }),
        ),
        (
            "chain 1 add_scalar [1] autodiff fwd+bwd",
            Box::new(|| {
                let v = Tensor::from_inner(one.clone()).require_grad();
                black_box(v.add_scalar(1.0).sum().backward());
            }),
        ),
        (
            "chain 20 add_scalar [1] plain",
            Box::new(|| {
                let mut v = one.clone();
                for _ in 0..20 {
                    v = v.add_scalar(1.0);
                }
                black_box(v);
            }),
        ),
        (
            "rational tanh [100,100] plain (22 ops)",
            Box::new(|| {
                black_box(rational_tanh(h.clone()));
            }),
        ),
        (
            "sigmoid tanh [100,100] plain",
            Box::new(|| {
                black_box(
                    sgmcmc::burn::tensor::activation::sigmoid(h.clone().mul_scalar(2.0))
                        .mul_scalar(2.0)
                        .sub_scalar(1.0),
                );
            }),
        ),
        (
            "add_scalar [1] flex",
            Box::new(|| {
                black_box(h.clone().slice([0..1, 0..1]).add_scalar(0.5));
            }),
        ),
    ];
    profile(&mut pieces, rounds);
}

/// Hand-written energy and gradient of the 64-100-10 tanh MLP posterior on plain tensors.
fn manual(
    w: &[Tensor<2>; 4],
    x: &Tensor<2>,
    y: &Tensor<2, Int>,
    scale: f64,
    prec: f64,
) -> (Tensor<1>, [Tensor<2>; 4]) {
    let h = x.clone().matmul(w[0].clone()) + w[1].clone();
    let a = sgmcmc::burn::tensor::activation::sigmoid(h.mul_scalar(2.0))
        .mul_scalar(2.0)
        .sub_scalar(1.0);
    let out = a.clone().matmul(w[2].clone()) + w[3].clone();
    let logp = sgmcmc::burn::tensor::activation::log_softmax(out, 1);
    let nll = logp
        .clone()
        .gather(1, y.clone())
        .sum()
        .neg()
        .mul_scalar(scale);
    let ones = Tensor::<2>::ones([y.dims()[0], 1], &x.device()).neg();
    let dout = logp
        .exp()
        .scatter(
            1,
            y.clone(),
            ones,
            sgmcmc::burn::tensor::IndexingUpdateOp::Add,
        )
        .mul_scalar(scale);
    let dw2 = a.clone().transpose().matmul(dout.clone()) + w[2].clone().mul_scalar(prec);
    let db2 = dout.clone().sum_dim(0) + w[3].clone().mul_scalar(prec);
    let da = dout.matmul(w[2].clone().transpose());
    let dh = da * a.powi_scalar(2).neg().add_scalar(1.0);
    let dw1 = x.clone().transpose().matmul(dh.clone()) + w[0].clone().mul_scalar(prec);
    let db1 = dh.sum_dim(0) + w[1].clone().mul_scalar(prec);
    let sq = w
        .iter()
        .map(|t| t.clone().powi_scalar(2).sum())
        .reduce(|p, q| p + q)
        .unwrap();
    (nll + sq.mul_scalar(0.5 * prec), [dw1, db1, dw2, db2])
}

fn rational_tanh(x: Tensor<2>) -> Tensor<2> {
    let c = 7.905_311;
    let x = x.clamp(-c, c);
    let x2 = x.clone() * x.clone();
    let mut p = x2
        .clone()
        .mul_scalar(-2.760_768_5e-16)
        .add_scalar(2.000_188e-13);
    for a in [
        -8.604_672e-11,
        5.122_297e-8,
        1.485_722_4e-5,
        6.372_619e-4,
        4.893_524_6e-3,
    ] {
        p = (p * x2.clone()).add_scalar(a);
    }
    let p = p * x;
    let mut q = x2
        .clone()
        .mul_scalar(1.198_258_4e-6)
        .add_scalar(1.185_347e-4);
    for b in [2.268_434_6e-3, 4.893_525e-3] {
        q = (q * x2.clone()).add_scalar(b);
    }
    p / q
}

fn fast_tanh(x: Tensor<2>) -> Tensor<2> {
    let x0 = x.clone().inner();
    let t = sgmcmc::burn::tensor::activation::sigmoid(x0.clone().mul_scalar(2.0))
        .mul_scalar(2.0)
        .sub_scalar(1.0);
    let slope = t.clone().powi_scalar(2).neg().add_scalar(1.0);
    (x - Tensor::from_inner(x0)) * Tensor::from_inner(slope) + Tensor::from_inner(t)
}

/// Runs every piece for about 10 ms per round, interleaved, and prints the minimum (the least
/// disturbed round on a shared machine) and the median over rounds.
fn profile(pieces: &mut [Piece], rounds: usize) {
    let mut times = vec![Vec::new(); pieces.len()];
    for (_, f) in pieces.iter_mut() {
        for _ in 0..20 {
            f();
        }
    }
    for _ in 0..rounds {
        for (i, (_, f)) in pieces.iter_mut().enumerate() {
            let start = Instant::now();
            let mut k = 0u32;
            while start.elapsed().as_secs_f64() < 0.01 {
                f();
                k += 1;
            }
            times[i].push(start.elapsed().as_secs_f64() * 1e6 / f64::from(k));
        }
    }
    for (i, (name, _)) in pieces.iter().enumerate() {
        let t = &mut times[i];
        t.sort_by(f64::total_cmp);
        println!(
            "{name:<40} {:>10.2} us (min) {:>10.2} us (median)",
            t[0],
            t[t.len() / 2]
        );
    }
}

/// The network and energy of the digits benchmark as they were before the closed-form work:
/// burn's `tanh` and `log_softmax` + `gather` on the autodiff device.
#[derive(Module, Debug)]
struct OldMlp {
    l1: Linear,
    l2: Linear,
}

impl Network for OldMlp {
    type Input = Tensor<2>;
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.l2.forward(activation::tanh(self.l1.forward(x)))
    }
}

#[derive(Clone)]
struct OldPosterior(Scale);

impl Target<OldMlp> for OldPosterior {
    type Batch = Batch<Tensor<2>>;
    fn chains_per_module(&self, _: &OldMlp) -> usize {
        1
    }
    fn estimate(
        &self,
        model: &OldMlp,
        batch: &Self::Batch,
        _: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let out = model.forward(batch.x.clone());
        let n = out.dims()[0];
        let Targets::Class(y) = &batch.y else {
            return Err(TargetError::Shape("classes".into()));
        };
        let logp = activation::log_softmax(out, 1);
        let nll = logp.gather(1, y.clone().unsqueeze_dim(1)).sum().neg();
        let energy = nll.mul_scalar(self.0.n_data as f64 / n as f64)
            + squared_norm(model, &[])
                .unwrap()
                .mul_scalar(0.5 * self.0.prior_precision);
        let value = f64::from(energy.clone().into_scalar::<f32>());
        Ok(Estimate {
            energies: vec![value],
            grads: GradientsParams::from_grads(energy.backward(), model),
        })
    }
    fn full_energy(&self, _: &OldMlp) -> Result<Vec<f64>, TargetError> {
        Err(TargetError::Shape("unused".into()))
    }
}

type Step<'a> = Box<dyn FnMut() + 'a>;

/// Before/after on the digits benchmark step (SGLD, batch 100, BMA every 100 steps), run
/// round-robin in bursts of 0.25 s: the old code with the old harness (index upload + select,
/// BMA forward on the autodiff model), the autodiff `Posterior` now, and `MlpPosterior` on the
/// plain device. Prints mean steps/s, the best burst, and the median step-time ratios.
fn compare(plain: &Device, rounds: usize, mode: &str) {
    let ad = plain.clone().autodiff();
    let (n, b) = (1437usize, 100usize);
    let scale = Scale::from_weight_decay(n, 1e-4);
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale,
    };
    let cfg = MlpConfig {
        inputs: 64,
        hidden: vec![100],
        outputs: 10,
        activation: Activation::Tanh,
    };
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
    let data = |d: &Device| {
        (
            Tensor::<2>::random([n, 64], Distribution::Normal(0.0, 1.0), d),
            Tensor::<1, Int>::from_data(labels.as_slice(), d),
            Tensor::<2>::random([360, 64], Distribution::Normal(0.0, 1.0), d),
        )
    };
    let sgld = || SgmcmcConfig::constant(Kernel::Sgld, 1e-5, 1.0);
    let (xa, ya, ta) = data(&ad);
    let (xp, yp, tp) = data(plain);
    let old_model = OldMlp {
        l1: LinearConfig::new(64, 100).init(&ad),
        l2: LinearConfig::new(100, 10).init(&ad),
    };
    let mut old = Sgmcmc::new(
        sgld(),
        ModuleEnsemble::new(OldPosterior(scale), vec![old_model], 1).unwrap(),
    )
    .unwrap();
    let mut now = Sgmcmc::new(
        sgld(),
        ModuleEnsemble::new(post.clone(), vec![cfg.init(&ad)], 1).unwrap(),
    )
    .unwrap();
    let mut closed = Sgmcmc::new(
        sgld(),
        ModuleEnsemble::new(MlpPosterior::new(post), vec![cfg.init(plain)], 1).unwrap(),
    )
    .unwrap();
    let (mut r1, mut r2, mut r3) = (
        ChainRng::new(3, 0),
        ChainRng::new(3, 1),
        ChainRng::new(3, 2),
    );
    let (mut k1, mut k2, mut k3) = (0u64, 0u64, 0u64);
    let mut steps: Vec<(&str, Step)> = vec![
        (
            "before (burn tanh, log_softmax; select; BMA on autodiff)",
            Box::new(|| {
                let s = r1.below(n - b) as i64;
                let idx: Vec<i64> = (s..s + b as i64).collect();
                let idx = Tensor::<1, Int>::from_data(idx.as_slice(), &ad);
                let bt = Batch {
                    x: xa.clone().select(0, idx.clone()),
                    y: Targets::Class(ya.clone().select(0, idx)),
                };
                old.step(&bt).unwrap();
                k1 += 1;
                if k1.is_multiple_of(100) {
                    let m = old.ensemble().modules().next().unwrap();
                    black_box(activation::softmax(m.forward(ta.clone()), 1).into_data());
                }
            }),
        ),
        (
            "after, autodiff Posterior",
            Box::new(|| {
                let s = r2.below(n - b);
                let bt = Batch {
                    x: xa.clone().slice(s..s + b),
                    y: Targets::Class(ya.clone().slice(s..s + b)),
                };
                now.step(&bt).unwrap();
                k2 += 1;
                if k2.is_multiple_of(100) {
                    let m = now.ensemble().modules().next().unwrap().valid();
                    black_box(activation::softmax(m.forward(ta.clone().inner()), 1).into_data());
                }
            }),
        ),
        (
            "after, closed-form MlpPosterior (plain)",
            Box::new(|| {
                let s = r3.below(n - b);
                let bt = Batch {
                    x: xp.clone().slice(s..s + b),
                    y: Targets::Class(yp.clone().slice(s..s + b)),
                };
                closed.step(&bt).unwrap();
                k3 += 1;
                if k3.is_multiple_of(100) {
                    let m = closed.ensemble().modules().next().unwrap();
                    black_box(activation::softmax(m.forward(tp.clone()), 1).into_data());
                }
            }),
        ),
    ];
    // Single-variant modes run `rounds` steps of one variant (for perf and callgrind).
    let single = ["old", "new", "closed-bench"]
        .iter()
        .position(|m| *m == mode);
    if let Some(i) = single {
        for _ in 0..rounds {
            (steps[i].1)();
        }
        return;
    }
    let mut rates = vec![Vec::new(); steps.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in steps.iter_mut().enumerate() {
            let start = Instant::now();
            let mut k = 0u32;
            while start.elapsed().as_secs_f64() < 0.25 {
                f();
                k += 1;
            }
            rates[i].push(f64::from(k) / start.elapsed().as_secs_f64());
        }
    }
    for (i, (name, _)) in steps.iter().enumerate() {
        let mean = rates[i].iter().sum::<f64>() / rates[i].len() as f64;
        let best = rates[i].iter().cloned().fold(0.0, f64::max);
        let mut ratio: Vec<f64> = rates[0].iter().zip(&rates[i]).map(|(a, b)| b / a).collect();
        ratio.sort_by(f64::total_cmp);
        println!(
            "{name:<58} {mean:>8.0} steps/s (best burst {best:>6.0}), speed-up {:.2}x",
            ratio[ratio.len() / 2]
        );
    }
}
