//! The MLP's `tanh`, the categorical likelihood's closed-form gradient and [`MlpPosterior`],
//! against `f64` references computed on the host and against burn's autodiff.
//!
//! Tolerances are `f32` rounding, not Monte Carlo: there is no randomness in what is checked
//! (inputs are fixed), so the bounds are a few `f32` ulps (`6e-8` relative) times the number
//! of operations that accumulate, rounded up.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_samplers::TargetError;

use super::tanh::{tanh_by_ops, tanh_value_by_ops};
use super::{Mlp, MlpConfig, MlpPosterior, tanh, tanh_value};
use crate::Activation;
use crate::likelihood::{Likelihood, Targets};
use crate::posterior::{Batch, Posterior, Scale};

pub(super) fn host(t: Tensor<2>) -> Vec<f64> {
    let v: Vec<f32> = t.into_data().convert::<f32>().try_into_vec().unwrap();
    v.into_iter().map(f64::from).collect()
}

pub(super) fn tensor(v: &[f64], shape: [usize; 2], device: &Device) -> Tensor<2> {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    Tensor::from_data(TensorData::new(v, shape), device)
}

/// Points from -12 to 12, dense near 0 and around the clamp at 7.9.
fn grid() -> Vec<f64> {
    let mut xs: Vec<f64> = (-1200..=1200).map(|i| f64::from(i) * 0.01).collect();
    xs.extend([1e-30, -1e-20, 1e-7, 3e-4, -3e-4, 7.9, -7.91, 7.95]);
    xs
}

#[test]
fn tanh_value_is_tanh_to_a_few_ulps() {
    let xs = grid();
    let t = host(tanh_value(tensor(&xs, [1, xs.len()], &Device::flex())));
    for (x, t) in xs.iter().zip(&t) {
        let exact = x.tanh();
        // Approximation error <= 2.6e-7 (exact arithmetic, at the clamp) plus ~20 f32
        // roundings of terms <= 1 in magnitude near x = 8: 5e-7 absolute.
        assert!((t - exact).abs() <= 5e-7, "tanh({x}) = {t}, exact {exact}");
        // Near 0 the rational form is accurate relatively too: p and q are well conditioned.
        if x.abs() < 0.5 {
            assert!((t - exact).abs() <= 1e-6 * exact.abs(), "tanh({x}) = {t}");
        }
    }
}

#[test]
fn tanh_on_autodiff_has_the_same_value_and_the_derivative_of_its_value() {
    let device = Device::flex().autodiff();
    let xs = grid();
    let x0 = tensor(&xs, [1, xs.len()], &device.clone().inner());
    let x = Tensor::from_inner(x0.clone()).require_grad();
    let y = tanh(x.clone());
    let t = host(tanh_value(x0));
    assert_eq!(
        host(y.clone().inner()),
        t,
        "value must be tanh_value bit for bit"
    );
    let g = host(x.grad(&y.sum().backward()).unwrap());
    for ((x, t), g) in xs.iter().zip(&t).zip(&g) {
        // 1 - t^2 in f32 (exact t^2 rounded, then 1 - that): 2 roundings.
        assert!((g - (1.0 - t * t)).abs() <= 2.5e-7, "tanh'({x}) = {g}");
        // And against the exact derivative 1 - tanh^2: the value error times 2|t|.
        let exact = 1.0 - x.tanh().powi(2);
        assert!(
            (g - exact).abs() <= 1.5e-6,
            "tanh'({x}) = {g}, exact {exact}"
        );
    }
}

/// On burn-flex, [`tanh`] and [`tanh_value`] run as one pass each way
/// (`sgmcmc_flex`'s kernel); the values and gradients must be those of the element-wise tensor
/// operations to the bit (same `f32` operations, same order), NaN and the clamp included. At
/// `+-inf` the one-pass form is `+-1` where the on-graph form `t + (x - x0) (1 - t^2)` is NaN
/// (`inf - inf`), and at `-0` it is `-0` where the on-graph form adds `+0` to it, so those
/// three are compared with the plain values only.
#[test]
fn the_flex_tanh_is_the_tensor_operations_to_the_bit() {
    let device = Device::flex().autodiff();
    let mut xs = grid();
    xs.extend([f64::NAN, 0.0, 1e3, -1e30, 7.905_311_107_635_498]);
    let n = xs.len();
    let bits =
        |t: Tensor<2>| -> Vec<u32> { t.into_data().iter::<f32>().map(f32::to_bits).collect() };
    let x0 = tensor(&xs, [1, n], &device.clone().inner());
    let mut wide = xs.clone();
    wide.extend([f64::INFINITY, f64::NEG_INFINITY, -0.0]);
    let w0 = tensor(&wide, [1, n + 3], &device.clone().inner());
    assert_eq!(bits(tanh_value(w0.clone())), bits(tanh_value_by_ops(w0)));
    // An upstream gradient that is not all ones.
    let dy: Vec<f64> = (0..n).map(|i| 0.5 + i as f64 * 1e-3).collect();
    let dy = Tensor::from_inner(tensor(&dy, [1, n], &device.clone().inner()));
    let run = |f: fn(Tensor<2>) -> Tensor<2>| {
        let x = Tensor::from_inner(x0.clone()).require_grad();
        let y = f(x.clone());
        let g = x.grad(&(y.clone() * dy.clone()).sum().backward()).unwrap();
        (bits(y.inner()), bits(g))
    };
    let (fast, ops) = (run(tanh), run(tanh_by_ops));
    let differ = |a: &[u32], b: &[u32]| -> Vec<(f64, f32, f32)> {
        (0..n)
            // Bit for bit; any NaN matches any NaN (its sign and payload are not specified).
            .filter(|&i| {
                a[i] != b[i] && !(f32::from_bits(a[i]).is_nan() && f32::from_bits(b[i]).is_nan())
            })
            .map(|i| (xs[i], f32::from_bits(a[i]), f32::from_bits(b[i])))
            .collect()
    };
    assert_eq!(differ(&fast.0, &ops.0), [], "values");
    assert_eq!(differ(&fast.1, &ops.1), [], "gradients");
}

/// Logits `[3, 4]` with targets: rows of moderate, large (overflow-prone) and equal logits.
fn logits() -> (Vec<f64>, [usize; 2], Vec<i64>) {
    let out = vec![
        0.5, -1.0, 2.0, 0.0, //
        80.0, 95.0, 90.0, -50.0, //
        1.0, 1.0, 1.0, 1.0,
    ];
    (out, [3, 4], vec![2, 0, 3])
}

/// `sum_i logsumexp(out_i) - out_i[y_i]` and its gradient `softmax - onehot`, in `f64`.
fn categorical_reference(out: &[f64], k: usize, y: &[i64]) -> (f64, Vec<f64>) {
    let mut nll = 0.0;
    let mut grad = vec![0.0; out.len()];
    for (i, row) in out.chunks(k).enumerate() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        nll += m + z.ln() - row[y[i] as usize];
        for (j, v) in row.iter().enumerate() {
            grad[i * k + j] = (v - m).exp() / z - f64::from(u8::from(j == y[i] as usize));
        }
    }
    (nll, grad)
}

#[test]
fn categorical_nll_and_gradient_are_exact_to_f32_rounding() {
    let device = Device::flex().autodiff();
    let (out, shape, y) = logits();
    let (nll, grad) = categorical_reference(&out, shape[1], &y);
    let out = Tensor::from_inner(tensor(&out, shape, &device.clone().inner())).require_grad();
    let targets = Targets::Class(Tensor::<1, Int>::from_data(y.as_slice(), &device));
    let value = Likelihood::Categorical
        .neg_log_lik(out.clone(), &targets)
        .unwrap();
    let v = f64::from(value.clone().into_scalar::<f32>());
    // Terms up to 15 (row 2: 95 - 80 + log-sum): a few ulps of 15.
    assert!((v - nll).abs() <= 1e-5 * (1.0 + nll.abs()), "{v} vs {nll}");
    let g = host(out.grad(&value.backward()).unwrap());
    for (a, b) in g.iter().zip(&grad) {
        assert!((a - b).abs() <= 1e-6, "{g:?} vs {grad:?}");
    }
    // The plain (non-autodiff) path gives the same value, bit for bit.
    let plain = Likelihood::Categorical
        .neg_log_lik(out.inner(), &targets)
        .unwrap();
    assert_eq!(plain.into_scalar::<f32>().to_bits(), (v as f32).to_bits());
}

pub(super) fn posterior(likelihood: Likelihood) -> Posterior {
    Posterior {
        likelihood,
        scale: Scale {
            n_data: 30,
            prior_precision: 0.7,
        },
    }
}

pub(super) fn problem(device: &Device, classes: bool) -> Batch<Tensor<2>> {
    let x: Vec<f64> = (0..18).map(|i| (f64::from(i) * 0.37).sin() * 1.5).collect();
    let y = if classes {
        Targets::Class(Tensor::<1, Int>::from_data(
            [1i64, 0, 2, 2, 1, 0].as_slice(),
            device,
        ))
    } else {
        let y: Vec<f64> = (0..12).map(|i| (f64::from(i) * 0.9).cos()).collect();
        Targets::Real(tensor(&y, [6, 2], device))
    };
    Batch {
        x: tensor(&x, [6, 3], device),
        y,
    }
}

pub(super) fn mlp(activation: Activation, outputs: usize, device: &Device) -> Mlp {
    MlpConfig {
        inputs: 3,
        hidden: vec![5, 4],
        outputs,
        activation,
    }
    .init(device)
}

/// All gradients of `grads` for `model`'s parameters, in layer order, on the host.
pub(super) fn grad_values(model: &Mlp, grads: &GradientsParams) -> Vec<f64> {
    let mut out = Vec::new();
    for l in &model.layers {
        out.extend(host(grads.get::<2>(l.weight.id).unwrap()));
        let b = l.bias.as_ref().unwrap();
        out.extend(host(grads.get::<1>(b.id).unwrap().unsqueeze_dim(0)));
    }
    out
}

#[test]
fn closed_form_matches_autodiff() {
    let ad = Device::flex().autodiff();
    for (activation, likelihood, classes, outputs) in [
        (Activation::Tanh, Likelihood::Categorical, true, 3),
        (Activation::Relu, Likelihood::Categorical, true, 3),
        (
            Activation::Tanh,
            Likelihood::Gaussian { precision: 2.5 },
            false,
            2,
        ),
        (
            Activation::Relu,
            Likelihood::Gaussian { precision: 2.5 },
            false,
            2,
        ),
    ] {
        let model = mlp(activation, outputs, &ad);
        let batch = problem(&ad, classes);
        let post = posterior(likelihood);
        let energy = post.energy(&model, &batch).unwrap();
        let e = energy.clone().into_scalar::<f32>();
        let auto = GradientsParams::from_grads(energy.backward(), &model);
        let closed = MlpPosterior::new(post.clone());
        // Same device, and on the plain device (model and batch moved off autodiff).
        let plain_model = model.valid();
        let plain_batch = Batch {
            x: batch.x.clone().inner(),
            y: batch.y.inner(),
        };
        let want = grad_values(&model, &auto);
        for (m, b) in [(&model, &batch), (&plain_model, &plain_batch)] {
            let (energy, grads) = closed.energy_and_grads(m, b, true, &mut []).unwrap();
            let label = format!("{activation:?} {likelihood:?}");
            let got = f64::from(energy.into_scalar::<f32>());
            // The prior's squares are summed in another order: a few ulps.
            let e = f64::from(e);
            assert!((got - e).abs() <= 1e-6 * e.abs(), "{label}: {got} vs {e}");
            let got = grad_values(m, &grads.unwrap());
            let top = want.iter().fold(0.0f64, |a, b| a.max(b.abs()));
            for (g, w) in got.iter().zip(&want) {
                // Different summation orders of the same terms: ulps of the largest gradient.
                assert!((g - w).abs() <= 1e-6 * top, "{label}: {got:?} vs {want:?}");
            }
        }
    }
}

/// The 3-5-4-3 tanh network's energy and gradient, in `f64` from the `f32` parameters.
fn reference(model: &Mlp, batch: &Batch<Tensor<2>>, post: &Posterior) -> (f64, Vec<f64>) {
    let ws: Vec<(Vec<f64>, [usize; 2], Vec<f64>)> = model
        .layers
        .iter()
        .map(|l| {
            let w = l.weight.val();
            let dims = w.dims();
            let b = l.bias.as_ref().unwrap().val().unsqueeze_dim(0);
            (host(w), dims, host(b))
        })
        .collect();
    let x = host(batch.x.clone());
    let Targets::Class(y) = &batch.y else {
        unreachable!()
    };
    let y: Vec<i64> = y
        .clone()
        .into_data()
        .convert::<i64>()
        .try_into_vec()
        .unwrap();
    let n = y.len();
    // Forward.
    let mut acts = vec![x];
    for (l, (w, [din, dout], b)) in ws.iter().enumerate() {
        let a = &acts[l];
        let mut z = vec![0.0; n * dout];
        for i in 0..n {
            for j in 0..*dout {
                z[i * dout + j] = b[j]
                    + (0..*din)
                        .map(|k| a[i * din + k] * w[k * dout + j])
                        .sum::<f64>();
            }
        }
        if l + 1 < ws.len() {
            z.iter_mut().for_each(|v| *v = v.tanh());
        }
        acts.push(z);
    }
    let k = ws.last().unwrap().1[1];
    let f = acts.pop().unwrap();
    let (nll, gf) = categorical_reference(&f, k, &y);
    let s = post.scale.n_data as f64 / n as f64;
    let lam = post.scale.prior_precision;
    let sq: f64 = ws
        .iter()
        .map(|(w, _, b)| w.iter().chain(b).map(|v| v * v).sum::<f64>())
        .sum();
    let energy = s * nll + 0.5 * lam * sq;
    // Backward.
    let mut delta: Vec<f64> = gf.iter().map(|g| s * g).collect();
    let mut grads = vec![Vec::new(); ws.len()];
    for (l, (w, [din, dout], b)) in ws.iter().enumerate().rev() {
        let a = &acts[l];
        let mut g = Vec::with_capacity(din * dout + dout);
        for kk in 0..*din {
            for j in 0..*dout {
                let d: f64 = (0..n).map(|i| a[i * din + kk] * delta[i * dout + j]).sum();
                g.push(d + lam * w[kk * dout + j]);
            }
        }
        for j in 0..*dout {
            g.push((0..n).map(|i| delta[i * dout + j]).sum::<f64>() + lam * b[j]);
        }
        grads[l] = g;
        let mut back = vec![0.0; n * din];
        for i in 0..n {
            for kk in 0..*din {
                let d: f64 = (0..*dout)
                    .map(|j| delta[i * dout + j] * w[kk * dout + j])
                    .sum();
                back[i * din + kk] = d * (1.0 - a[i * din + kk].powi(2));
            }
        }
        delta = back;
    }
    (energy, grads.concat())
}

#[test]
fn closed_form_matches_an_f64_reference() {
    let device = Device::flex();
    let model = mlp(Activation::Tanh, 3, &device);
    let batch = problem(&device, true);
    let post = posterior(Likelihood::Categorical);
    let (energy, grads) = MlpPosterior::new(post.clone())
        .energy_and_grads(&model, &batch, true, &mut [])
        .unwrap();
    let (e, want) = reference(&model, &batch, &post);
    let got = grad_values(&model, &grads.unwrap());
    let e_got = f64::from(energy.into_scalar::<f32>());
    // f32 forward and sums of <= 30 terms: 1e-5 relative is ~100 ulps.
    assert!((e_got - e).abs() <= 1e-5 * e.abs(), "{e_got} vs {e}");
    let top = want.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * top, "{got:?} vs {want:?}");
    }
    // The forward pass alone gives the same energy.
    let (alone, none) = MlpPosterior::new(post)
        .energy_and_grads(&model, &batch, false, &mut [])
        .unwrap();
    assert!(none.is_none());
    assert_eq!(
        alone.into_scalar::<f32>().to_bits(),
        (e_got as f32).to_bits()
    );
}

#[test]
fn closed_form_reports_what_posterior_reports() {
    let device = Device::flex();
    let model = mlp(Activation::Tanh, 3, &device);
    let closed = |l| MlpPosterior::new(posterior(l));
    // Regression targets for a classifier and vice versa.
    let err = closed(Likelihood::Categorical)
        .energy_and_grads(&model, &problem(&device, false), true, &mut [])
        .unwrap_err();
    assert!(matches!(err, TargetError::Shape(_)), "{err}");
    let err = closed(Likelihood::Gaussian { precision: 1.0 })
        .energy_and_grads(&model, &problem(&device, true), true, &mut [])
        .unwrap_err();
    assert!(matches!(err, TargetError::Shape(_)), "{err}");
    // A learned noise precision needs WithNoise, an invalid precision is refused.
    let learned = Likelihood::GaussianLearned {
        shape: 1.0,
        rate: 1.0,
    };
    let err = closed(learned)
        .energy_and_grads(&model, &problem(&device, false), true, &mut [])
        .unwrap_err();
    assert!(err.to_string().contains("WithNoise"), "{err}");
    let bad = Likelihood::Gaussian { precision: -1.0 };
    assert!(
        closed(bad)
            .energy_and_grads(&model, &problem(&device, false), true, &mut [])
            .is_err()
    );
    // Inputs of the wrong width.
    let mut batch = problem(&device, true);
    batch.x = Tensor::zeros([6, 4], &device);
    let err = closed(Likelihood::Categorical)
        .energy_and_grads(&model, &batch, true, &mut [])
        .unwrap_err();
    assert!(err.to_string().contains("3 inputs"), "{err}");
}
