//! The long reductions of a step agree with flex on every tensor device: a training-mode batch
//! norm over ResNet20 batches (128 x 28 x 28 = 100,352 and 256 x 32 x 32 = 262,144 values per
//! channel, with its ReLU and residual; the running statistics too) and the prior's sum over
//! tensors of 32,768 to 3,000,000 values ([`sgmcmc::models::staged`]), the sums against the
//! exact `f64` sum. Tolerances: a sequential `f32` sum of 3e6 positive values drifts by about
//! 1e-4 relative (ndarray's here; flex and the staged sums 1e-7 to 1e-6), so sums get 1e-3 and
//! the batch norms, whose per-channel statistics are sums of 1e5 values, 1e-4. A wrong kernel
//! is far outside both: CubeCL 0.11's own reductions, which the staged ones replace on
//! accelerators, were off by 13% to 54% at these lengths on the software Vulkan device.

mod common;

use sgmcmc::burn::nn::BatchNormConfig;
use sgmcmc::burn::tensor::{Device, Distribution, Tensor};
use sgmcmc::models::{layers, staged};

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// `|a - b| / |b|` (Euclidean norms).
fn rel(a: &[f32], b: &[f32]) -> f64 {
    let n: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let d: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    (n / d).sqrt()
}

#[test]
fn long_reductions_agree_with_flex_on_every_device() {
    let flex = Device::flex();
    let flex_ad = flex.clone().autodiff();
    for (choice, device, _) in common::devices() {
        for n in [32_768usize, 100_352, 300_001, 3_000_000] {
            let x =
                Tensor::<2>::random([n / 1000 + 1, 1000], Distribution::Normal(1.0, 1.0), &flex);
            let exact: f64 = values(x.clone())
                .iter()
                .map(|v| f64::from(*v).powi(2))
                .sum();
            let got = f64::from(values(staged::sum_all(x.to_device(&device).powi_scalar(2)))[0]);
            let r = (got - exact).abs() / exact;
            assert!(
                r < 1e-3,
                "{choice}: sum of {n} values: relative error {r:.2e}"
            );
        }
        let ad = device.clone().autodiff();
        for shape in [[128, 16, 28, 28], [256, 16, 32, 32]] {
            // The same values as tensors made on each autodiff device (`to_device` from a plain
            // device would leave them untracked, and the layer in inference mode).
            let x = Tensor::<4>::random(shape, Distribution::Normal(0.5, 2.0), &flex).into_data();
            let res = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &flex).into_data();
            let on = |d: &Device| {
                (
                    Tensor::<4>::from_data(x.clone(), d),
                    Tensor::<4>::from_data(res.clone(), d),
                )
            };
            // Two layers (clones would share their running state), both freshly initialised:
            // gamma 1, beta 0, running mean 0 and variance 1.
            let on_flex = BatchNormConfig::new(16).init(&flex_ad);
            let (xf, rf) = on(&flex_ad);
            let want = values(layers::batch_norm_relu(&on_flex, xf, Some(rf)));
            let here = BatchNormConfig::new(16).init(&ad);
            let (xd, rd) = on(&ad);
            let got = values(layers::batch_norm_relu(&here, xd, Some(rd)));
            let r = rel(&got, &want);
            assert!(
                r < 1e-4,
                "{choice}: batch norm {shape:?}: relative error {r:.2e}"
            );
            for (a, b, what) in [
                (&here.running_mean, &on_flex.running_mean, "mean"),
                (&here.running_var, &on_flex.running_var, "variance"),
            ] {
                let (va, vb) = (values(a.value_sync()), values(b.value_sync()));
                assert!(
                    vb.iter().any(|v| (v - 1.0).abs() > 1e-3 && *v != 0.0),
                    "{what} not updated"
                );
                let r = rel(&va, &vb);
                assert!(
                    r < 1e-4,
                    "{choice}: running {what} {shape:?}: relative error {r:.2e}"
                );
            }
        }
    }
}
