//! The categorical negative log-likelihood `-sum_i log softmax(out_i)[y_i]` of logits
//! `out: [n, k]` on burn-flex in one pass over the rows, with its gradient
//! `softmax(out) - onehot(y)`; on `Autodiff<Flex>` one tracked operation whose backward pass
//! scales that gradient by the upstream scalar.
//!
//! Each row's log-sum-exp `m + ln sum_j exp(out_j - m)` (`m` the row's maximum; the
//! differences and their exponentials in `f32`, each within an ulp) is summed and logged in
//! `f64`, as is the sum over rows, so the value is within a few `f32` ulps of the exact one
//! (burn's `log_softmax`, gather and sum round at every step) and each gradient entry within a
//! few ulps of the exact softmax.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::{Autodiff, Flex};
use burn::tensor::{Int, Tensor};

use super::{f32_slice, flex_ad, flex_plain, from_f32, plain, tensor};

/// `(sum_i nll_i, softmax - onehot)` of row-major logits `[rows, k]`; `None` if a label is
/// outside `0..k` (the caller's own path then reports it as it always did).
fn value_grad(out: &[f32], k: usize, y: &[i64], with_grad: bool) -> Option<(f32, Vec<f32>)> {
    if y.iter().any(|&c| c < 0 || c as usize >= k) || out.len() != y.len() * k {
        return None;
    }
    let mut grad = if with_grad {
        vec![0.0f32; out.len()]
    } else {
        Vec::new()
    };
    let mut total = 0.0f64;
    let mut e = vec![0.0f64; k];
    for (i, (row, &c)) in out.chunks_exact(k).zip(y).enumerate() {
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let mut s = 0.0;
        for (e, &o) in e.iter_mut().zip(row) {
            // `o - m <= 0` in `f32` (one rounding), its `exp` in `f32` (within an ulp).
            *e = f64::from((o - m).exp());
            s += *e;
        }
        total += f64::from(m) + s.ln() - f64::from(row[c as usize]);
        if with_grad {
            let g = &mut grad[i * k..(i + 1) * k];
            for (g, &e) in g.iter_mut().zip(&e) {
                *g = (e / s) as f32;
            }
            g[c as usize] = (e[c as usize] / s - 1.0) as f32;
        }
    }
    Some((total as f32, grad))
}

/// The labels as `i64`, if they live on flex (host memory: read without a transfer).
fn labels(y: &Tensor<1, Int>) -> Option<Vec<i64>> {
    let p: FlexTensor = (y.clone().try_into_primitive::<Autodiff<Flex>>().ok())
        .or_else(|| y.clone().try_into_primitive::<Flex>().ok())?;
    Some(p.into_data().iter::<i64>().collect())
}

/// A flex tensor of `shape` holding `v`.
fn flex<const D: usize>(v: Vec<f32>, shape: [usize; D]) -> Tensor<D> {
    plain(from_f32(v, shape))
}

#[derive(Debug)]
struct CategoricalBackward;

impl Backward<Flex, 1> for CategoricalBackward {
    /// `softmax(out) - onehot(y)` and the shape of `out`.
    type State = (Vec<f32>, [usize; 2]);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            let (mut g, shape) = ops.state;
            let scale = f32_slice(&dy)[0];
            g.iter_mut().for_each(|g| *g *= scale);
            grads.register::<Flex>(node.id, from_f32(g, shape));
        }
    }
}

/// The `[1]` tensor `-sum_i log softmax(out_i)[y_i]` for `out` in `f32` on `Autodiff<Flex>`,
/// as one tracked operation; `None` elsewhere, or for a label outside `0..k`.
pub fn nll(out: &Tensor<2>, y: &Tensor<1, Int>) -> Option<Tensor<1>> {
    let p = flex_ad(out)?;
    let [rows, k] = out.dims();
    // The gradient only when it will be asked for (a forward-only pass records nothing).
    let tracked = p.is_tracked();
    let (value, grad) = value_grad(&f32_slice(p.primitive()), k, &labels(y)?, tracked)?;
    let v = from_f32(vec![value], [1]);
    let y = match CategoricalBackward
        .prepare::<NoCheckpointing>([p.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish((grad, [rows, k]), v),
        OpsKind::UnTracked(prep) => prep.finish(v),
    };
    Some(tensor(y))
}

/// The value and, if `with_grad`, the gradient for plain (non-autodiff) `f32` flex logits;
/// `None` elsewhere, or for a label outside `0..k`.
pub fn value_and_grad(
    out: &Tensor<2>,
    y: &Tensor<1, Int>,
    with_grad: bool,
) -> Option<(Tensor<1>, Option<Tensor<2>>)> {
    let p = flex_plain(out)?;
    let [rows, k] = out.dims();
    let (value, grad) = value_grad(&f32_slice(&p), k, &labels(y)?, with_grad)?;
    let grad = with_grad.then(|| flex(grad, [rows, k]));
    Some((flex(vec![value], [1]), grad))
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;

    /// Logits `[2, 3]`: the exact values by hand in `f64`.
    const OUT: [f32; 6] = [1.0, 2.0, 0.5, -3.0, 0.0, 4.0];

    #[test]
    fn an_upstream_scale_multiplies_the_gradient_and_bad_input_is_not_garbage() {
        let device = Device::flex().autodiff();
        let out = Tensor::from_inner(flex(OUT.to_vec(), [2, 3])).require_grad();
        let y = Tensor::<1, Int>::from_ints([1, 2], &device);
        let value = nll(&out, &y).expect("flex path");
        let grad = out.grad(&value.clone().mul_scalar(3.0).backward()).unwrap();
        let grad: Vec<f32> = grad.into_data().iter::<f32>().collect();
        let mut want_value = 0.0;
        for (i, (row, c)) in OUT.chunks(3).zip([1, 2]).enumerate() {
            let z: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let lse = z.iter().map(|v| v.exp()).sum::<f64>().ln();
            want_value += lse - z[c];
            for (j, zj) in z.iter().enumerate() {
                let g = 3.0 * ((zj - lse).exp() - f64::from(u8::from(j == c)));
                let got = f64::from(grad[3 * i + j]);
                // Softmax entries below 1 from f32 exponentials, times 3: a few 1e-7.
                assert!((got - g).abs() <= 1e-6, "{got} vs {g}");
            }
        }
        let v = f64::from(value.into_scalar::<f32>());
        // The value is about 0.48: 1e-6 of it is a few f32 ulps of the terms (up to 4) whose
        // exponentials and sum round once each.
        assert!(
            (v - want_value).abs() <= 1e-6 * want_value,
            "{v} vs {want_value}"
        );
        // A NaN logit makes its row's term NaN (a diverged chain shows as a NaN energy); a
        // label outside 0..k leaves the fast path (None) to the caller's own checks.
        let mut bad = OUT;
        bad[4] = f32::NAN;
        assert!(value_grad(&bad, 3, &[1, 2], true).unwrap().0.is_nan());
        assert!(value_grad(&OUT, 3, &[1, 3], false).is_none());
        assert!(value_grad(&OUT, 3, &[-1, 0], false).is_none());
    }
}
