//! The MLPs' rational `tanh` ([`crate::tanh::tanh_value`]) on burn-flex as one pass over the
//! tensor instead of about twenty element-wise operations, and on `Autodiff<Flex>` as one tracked
//! operation whose backward pass is `dx = dy (1 - t^2)` from the saved output `t`.
//!
//! Every element goes through the same `f32` operations in the same order as the tensor path
//! (clamp, `x^2`, two Horner chains, a product and a quotient; no multiply-add fused), so the
//! values are the tensor path's to the bit; the loop runs in AVX-512 registers where the CPU
//! has them.

use std::mem::MaybeUninit;

use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::tensor::Tensor;

use super::uninit::written;
use super::{dims_of, f32_slice, flex_ad, flex_plain, from_f32, plain, tensor};
use crate::tanh::{TANH_CLAMP, TANH_P, TANH_Q};

/// `tanh_value(x)` for one element: the tensor path's operations, in its order.
#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    let (lo, hi) = (-TANH_CLAMP as f32, TANH_CLAMP as f32);
    // burn-flex's clamp_min and clamp_max: NaN passes through.
    let x = if x.is_nan() || x > lo { x } else { lo };
    let x = if x.is_nan() || x < hi { x } else { hi };
    let x2 = x * x;
    let horner = |c: &[f64]| {
        c[2..]
            .iter()
            .fold(x2 * c[0] as f32 + c[1] as f32, |acc, &a| {
                acc * x2 + a as f32
            })
    };
    let p = horner(&TANH_P) * x;
    p / horner(&TANH_Q)
}

/// `dy (1 - t^2)`: the tensor path's `t.powi_scalar(2).neg().add_scalar(1.0)` times `dy`.
#[inline(always)]
fn slope_times(t: f32, dy: f32) -> f32 {
    dy * (-(t * t) + 1.0)
}

/// `out_i = f(a_i, b_i)` (`b` ignored by `f` when it is a copy of `a`).
#[inline(always)]
fn map(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    assert!(
        a.len() == out.len() && b.len() == out.len(),
        "lengths differ"
    );
    for ((o, &u), &v) in out.iter_mut().zip(a).zip(b) {
        o.write(f(u, v));
    }
}

/// [`map`] of `tanh` (`slope` false) or of `b (1 - a^2)` (`slope` true), compiled for AVX-512F.
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn map_avx512(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], slope: bool) {
    if slope {
        map(out, a, b, slope_times)
    } else {
        map(out, a, b, |x, _| tanh_f32(x))
    }
}

/// `tanh` of every element (`slope = false`) or `b_i (1 - a_i^2)` (`true`), a new vector.
fn elementwise(a: &[f32], b: &[f32], slope: bool) -> Vec<f32> {
    // SAFETY: `map` writes every element of `out` (equal lengths, asserted there).
    let (v, ()) = unsafe {
        written(a.len(), |out| {
            #[cfg(target_arch = "x86_64")]
            if super::direct::available() {
                // SAFETY: the CPU has AVX-512F.
                return map_avx512(out, a, b, slope);
            }
            if slope {
                map(out, a, b, slope_times)
            } else {
                map(out, a, b, |x, _| tanh_f32(x))
            }
        })
    };
    v
}

/// The rational `tanh` of every element of an `f32` flex tensor.
fn value(x: &FlexTensor) -> FlexTensor {
    let xs = f32_slice(x);
    let t = elementwise(&xs, &xs, false);
    from_f32(t, dims_of(x))
}

#[derive(Debug)]
struct TanhBackward;

impl Backward<Flex, 1> for TanhBackward {
    /// The output `t`.
    type State = FlexTensor;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            let t = ops.state;
            let dx = elementwise(&f32_slice(&t), &f32_slice(&dy), true);
            grads.register::<Flex>(node.id, from_f32(dx, dims_of(&t)));
        }
    }
}

/// `tanh_value(x)` as one pass, for `x` in `f32` on flex (plain or autodiff; on autodiff a
/// tracked operation differentiated from its output); `None` elsewhere.
pub(crate) fn tanh<const D: usize>(x: &Tensor<D>) -> Option<Tensor<D>> {
    if let Some(xp) = flex_ad(x) {
        let t = value(xp.primitive());
        let y = match TanhBackward
            .prepare::<NoCheckpointing>([xp.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(t.clone(), t),
            OpsKind::UnTracked(prep) => prep.finish(t),
        };
        return Some(tensor(y));
    }
    flex_plain(x).map(|xp| plain(value(&xp)))
}
