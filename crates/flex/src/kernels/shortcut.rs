//! The option-A shortcut of the CIFAR ResNets on burn-flex's autodiff backend: subsampling
//! with stride `s` and zero channels added around the input's, as one tracked operation.
//!
//! For `x: [B, C, H, W]`, `y: [B, before + C + after, ceil(H / s), ceil(W / s)]` with
//! `y[b, before + c, i, j] = x[b, c, s i, s j]` and zero on the added channels; backward
//! `dx[b, c, s i, s j] = dy[b, before + c, i, j]`, zero elsewhere. burn computes the same
//! function as a 1x1 average pool with stride `s` and a pad: its pooling backward, a general
//! 3-D one, took 2-3 % of a ResNet20 step.

use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use rayon::prelude::*;

use super::uninit::{written, zeroed};
use super::{FlexAd, f32_slice, from_f32};

/// The input's `[B, C, H, W]`, the stride and the zero channels before and after.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shortcut {
    pub dims: [usize; 4],
    pub stride: usize,
    pub pad: [usize; 2],
}

impl Shortcut {
    /// `[B, before + C + after, oh, ow]`.
    fn out_dims(&self) -> [usize; 4] {
        let [b, c, h, w] = self.dims;
        let s = self.stride;
        [
            b,
            self.pad[0] + c + self.pad[1],
            h.div_ceil(s),
            w.div_ceil(s),
        ]
    }

    /// Forward.
    pub(crate) fn forward(&self, x: &[f32]) -> Vec<f32> {
        let ([_, c, h, w], [_, co, oh, ow]) = (self.dims, self.out_dims());
        let s = self.stride;
        // SAFETY: every output plane is zeroed or written whole (`oh` rows of `ow`).
        unsafe {
            written(self.out_dims().iter().product(), |y| {
                y.par_chunks_mut(oh * ow)
                    .enumerate()
                    .for_each(|(plane, y)| {
                        let (b, oc) = (plane / co, plane % co);
                        let Some(ci) = oc.checked_sub(self.pad[0]).filter(|&ci| ci < c) else {
                            zeroed(y);
                            return;
                        };
                        let x = &x[(b * c + ci) * h * w..][..h * w];
                        for (i, row) in y.chunks_mut(ow).enumerate() {
                            let src = &x[s * i * w..];
                            for (j, y) in row.iter_mut().enumerate() {
                                y.write(src[s * j]);
                            }
                        }
                    })
            })
            .0
        }
    }

    /// The input gradient of `dy`.
    pub(crate) fn backward(&self, dy: &[f32]) -> Vec<f32> {
        let ([_, c, h, w], [_, co, oh, ow]) = (self.dims, self.out_dims());
        let s = self.stride;
        // SAFETY: every plane is zeroed before the scatter.
        unsafe {
            written(self.dims.iter().product(), |dx| {
                dx.par_chunks_mut(h * w)
                    .enumerate()
                    .for_each(|(plane, dx)| {
                        let dx = zeroed(dx);
                        let (b, ci) = (plane / c, plane % c);
                        let dy = &dy[(b * co + self.pad[0] + ci) * oh * ow..][..oh * ow];
                        for (i, row) in dy.chunks(ow).enumerate() {
                            for (j, &v) in row.iter().enumerate() {
                                dx[s * i * w + s * j] = v;
                            }
                        }
                    })
            })
            .0
        }
    }
}

#[derive(Debug)]
struct ShortcutBackward;

impl Backward<Flex, 1> for ShortcutBackward {
    type State = Shortcut;

    fn backward(self, ops: Ops<Shortcut, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            let dx = ops.state.backward(&f32_slice(&dy));
            let dx = from_f32(dx, ops.state.dims);
            grads.register::<Flex>(node.id, dx);
        }
    }
}

/// `x: [B, C, H, W]` subsampled with `stride` and padded with `pad[0]` zero channels before
/// and `pad[1]` after, as a tracked operation of `Autodiff<Flex>`.
pub(crate) fn subsample_pad(x: FlexAd, stride: usize, pad: [usize; 2]) -> FlexAd {
    let s = x.primitive().layout().shape();
    let op = Shortcut {
        dims: [s[0], s[1], s[2], s[3]],
        stride,
        pad,
    };
    let y = op.forward(&f32_slice(x.primitive()));
    let y = from_f32(y, op.out_dims());
    match ShortcutBackward
        .prepare::<NoCheckpointing>([x.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(op, y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}
