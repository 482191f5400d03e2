//! 2x2 max pooling with stride 2 (no padding; an odd last row or column is dropped) over
//! `[B, C, H, W]` on burn-flex's autodiff backend: one pass forward that records which of the
//! four inputs won (the first maximum in row-major order, as burn's `max_pool2d`), one pass
//! backward that routes each output gradient to it; planes in parallel.
//!
//! burn-flex 0.22.1's `max_pool2d_with_indices` recomputes every window's bounds with divisions
//! and its backward scatters through 64-bit indices one element at a time: about 30 % of an
//! MNIST CNN step's CPU time.

use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use rayon::prelude::*;

use super::{FlexAd, f32_slice, from_f32};

/// `[B, C, H, W]`.
type Dims = [usize; 4];

/// Output side lengths.
fn out_hw(d: Dims) -> [usize; 2] {
    [d[2] / 2, d[3] / 2]
}

/// The pooled planes and, per output, the winning tap `2 s + t` (`s`, `t`: row and column in
/// the window).
pub(crate) fn forward(d: Dims, x: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let [oh, ow] = out_hw(d);
    let plane = d[2] * d[3];
    let mut y = vec![0.0f32; d[0] * d[1] * oh * ow];
    let mut arg = vec![0u8; y.len()];
    y.par_chunks_mut(oh * ow)
        .zip(arg.par_chunks_mut(oh * ow))
        .zip(x.par_chunks(plane))
        .for_each(|((y, arg), x)| {
            for i in 0..oh {
                let (top, bottom) = (&x[2 * i * d[3]..], &x[(2 * i + 1) * d[3]..]);
                let (y, arg) = (&mut y[i * ow..(i + 1) * ow], &mut arg[i * ow..(i + 1) * ow]);
                for j in 0..ow {
                    let taps = [top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]];
                    let (mut m, mut k) = (taps[0], 0u8);
                    for (t, &v) in taps.iter().enumerate().skip(1) {
                        if v > m {
                            (m, k) = (v, t as u8);
                        }
                    }
                    y[j] = m;
                    arg[j] = k;
                }
            }
        });
    (y, arg)
}

/// The input gradient: each output gradient at its winning tap, zero elsewhere.
pub(crate) fn backward(d: Dims, arg: &[u8], dy: &[f32]) -> Vec<f32> {
    let [oh, ow] = out_hw(d);
    let plane = d[2] * d[3];
    let mut dx = vec![0.0f32; d[0] * d[1] * plane];
    dx.par_chunks_mut(plane)
        .zip(arg.par_chunks(oh * ow))
        .zip(dy.par_chunks(oh * ow))
        .for_each(|((dx, arg), dy)| {
            for i in 0..oh {
                for j in 0..ow {
                    let k = arg[i * ow + j] as usize;
                    dx[(2 * i + k / 2) * d[3] + 2 * j + k % 2] = dy[i * ow + j];
                }
            }
        });
    dx
}

#[derive(Debug)]
struct MaxPoolBackward;

impl Backward<Flex, 1> for MaxPoolBackward {
    type State = (Dims, Vec<u8>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        let (d, arg) = ops.state;
        if let Some(node) = node {
            let dx = backward(d, &arg, &f32_slice(&dy));
            let dx = from_f32(dx, d);
            grads.register::<Flex>(node.id, dx);
        }
    }
}

/// The pooled tensor, the input's dimensions and the arg-max of every output.
fn pool(x: &FlexTensor) -> (FlexTensor, Dims, Vec<u8>) {
    let s = x.layout().shape();
    let d = [s[0], s[1], s[2], s[3]];
    let [oh, ow] = out_hw(d);
    let (y, arg) = forward(d, &f32_slice(x));
    (from_f32(y, [d[0], d[1], oh, ow]), d, arg)
}

/// The pooling of a plain flex tensor (no graph): what [`max_pool2x2`] computes going forward.
pub(crate) fn max_pool2x2_plain(x: &FlexTensor) -> FlexTensor {
    pool(x).0
}

/// 2x2 max pooling with stride 2 of `x: [B, C, H, W]` as a tracked operation of
/// `Autodiff<Flex>`; `[B, C, H / 2, W / 2]` out.
pub(crate) fn max_pool2x2(x: FlexAd) -> FlexAd {
    let (y, d, arg) = pool(x.primitive());
    match MaxPoolBackward
        .prepare::<NoCheckpointing>([x.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish((d, arg), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}
