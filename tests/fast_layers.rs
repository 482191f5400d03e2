//! The networks' training forward (`ResNet` and `Cnn` through `sgmcmc::models::layers`, which
//! takes burn-flex's fast convolution and batch norm where it can) computes the same function
//! as their burn-module reference forward, outputs and every parameter gradient, on every
//! compiled device: flex runs the fast path, ndarray and wgpu the fallback.

mod common;

use sgmcmc::burn::module::{Module, ModuleVisitor, Param};
use sgmcmc::burn::optim::GradientsParams;
use sgmcmc::burn::tensor::{Device, Distribution, Tensor};
use sgmcmc::models::{CnnConfig, Network, ResNetConfig};

/// Largest `|a - b|` over the largest `|b|`.
fn rel_err<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    let a: Vec<f32> = a.into_data().convert::<f32>().try_into_vec().unwrap();
    let b: Vec<f32> = b.into_data().convert::<f32>().try_into_vec().unwrap();
    let scale = b.iter().fold(f32::MIN_POSITIVE, |m, v| m.max(v.abs()));
    a.iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// `|a - b| / |b|` in the Euclidean norm: robust to the few entries where the two paths take
/// different sides of a ReLU or max-pool kink within rounding (an O(1) difference of one unit's
/// contribution; an entry-wise bound fails on such draws, see the models crate's ResNet test).
fn norm_err<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    let a: Vec<f32> = a.into_data().convert::<f32>().try_into_vec().unwrap();
    let b: Vec<f32> = b.into_data().convert::<f32>().try_into_vec().unwrap();
    let d: f64 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum();
    let n: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    (d.sqrt() / n.sqrt().max(f64::from(f32::MIN_POSITIVE))) as f32
}

/// The largest relative gradient difference (in norm) over the parameters of `model`.
struct Worst<'a> {
    a: &'a GradientsParams,
    b: &'a GradientsParams,
    worst: f32,
    seen: usize,
}

impl ModuleVisitor for Worst<'_> {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        if let (Some(a), Some(b)) = (self.a.get::<D>(p.id), self.b.get::<D>(p.id)) {
            self.worst = self.worst.max(norm_err(a, b));
            self.seen += 1;
        }
    }
}

/// Logits of `fast` and `reference` on `x`, then the gradients of a random projection of each;
/// returns (logit error, worst gradient error, parameters compared).
fn compare<M: Module>(
    model: &M,
    x: Tensor<4>,
    fast: impl Fn(&M, Tensor<4>) -> Tensor<2>,
    reference: impl Fn(&M, Tensor<4>) -> Tensor<2>,
) -> (f32, f32, usize) {
    let (a, b) = (fast(model, x.clone()), reference(model, x));
    let r = Tensor::<2>::random(a.dims(), Distribution::Normal(0.0, 1.0), &a.device());
    let logits = rel_err(a.clone(), b.clone());
    let ga = GradientsParams::from_grads((a * r.clone()).sum().backward(), model);
    let gb = GradientsParams::from_grads((b * r).sum().backward(), model);
    let mut w = Worst {
        a: &ga,
        b: &gb,
        worst: 0.0,
        seen: 0,
    };
    model.visit(&mut w);
    (logits, w.worst, w.seen)
}

fn image(shape: [usize; 4], device: &Device) -> Tensor<4> {
    Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
}

/// ResNet8 on two 3x12x12 images. Tolerances as in the models crate's test of ResNet20: logits
/// 1e-3 (f32 sums reordered through 7 conv + BN layers), gradients 1e-2 in norm (2-3e-6 for
/// most draws, up to ~5e-3 where a ReLU kink flips within rounding); a wrong tap, channel or
/// statistic is an O(1) error.
#[test]
fn resnet_training_forward_matches_the_reference_on_every_device() {
    for (choice, base, _) in common::devices() {
        let device = base.autodiff();
        device.seed(4);
        let model = ResNetConfig::new(8, 10).init(&device).unwrap();
        let (logits, grads, seen) = compare(
            &model,
            image([2, 3, 12, 12], &device),
            |m, x| m.forward(x),
            |m, x| m.forward_reference(x),
        );
        // 7 convs, 7 BN (gamma, beta), the linear layer (weight, bias).
        assert_eq!(seen, 7 + 2 * 7 + 2, "{choice}");
        println!("{choice}: ResNet8 logits {logits:.2e}, gradients {grads:.2e}");
        assert!(logits < 1e-3, "{choice}: logits {logits}");
        assert!(grads < 1e-2, "{choice}: gradients {grads}");
    }
}

/// The MNIST CNN on two 28x28 images: no batch norm, so logits and gradients agree to 1e-4
/// (f32 sums of at most 800 products, reordered).
#[test]
fn cnn_training_forward_matches_the_reference_on_every_device() {
    for (choice, base, _) in common::devices() {
        let device = base.autodiff();
        device.seed(5);
        let model = CnnConfig::default().init(&device);
        let (logits, grads, seen) = compare(
            &model,
            image([2, 1, 28, 28], &device),
            |m, x| m.forward(x),
            |m, x| m.forward_reference(x),
        );
        assert_eq!(seen, 8, "{choice}");
        assert!(logits < 1e-4, "{choice}: logits {logits}");
        assert!(grads < 1e-4, "{choice}: gradients {grads}");
    }
}
