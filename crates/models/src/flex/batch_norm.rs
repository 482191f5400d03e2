//! Training-mode batch normalisation over `[B, C, ...]` on burn-flex's autodiff backend as one
//! tracked operation with a two-pass forward and a two-pass backward.
//!
//! With `N = B * (elements per channel and image)`, per channel `c`:
//! `mu = sum x / N`, `var = sum (x - mu)^2 / N` (biased, what feeds the running statistics),
//! `xhat = (x - mu) / sqrt(var + eps)`, `y = gamma xhat + beta`; backward
//! `dbeta = sum dy`, `dgamma = sum dy xhat`,
//! `dx = gamma / sqrt(var + eps) (dy - dbeta / N - xhat dgamma / N)`.
//!
//! burn 0.22's default `batch_norm_train` (which flex uses) records the same function through
//! about ten element-wise passes forward and fifteen backward, several of them transposing
//! copies; the statistics here are accumulated in `f64`.

use burn::backend::Flex;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::tensor::{Shape, TensorData};
use rayon::prelude::*;

use super::{FlexAd, f32_slice};

/// `[batch, channels, elements per channel and image]` of the input.
type Dims = [usize; 3];

/// Independent partial sums per reduction: the compiler keeps them in one vector register.
const LANES: usize = 8;

/// `(sum u, sum v)` of `(u, v) = f(a_i, b_i)` over the pairs of `a` and `b` (equal lengths), in
/// `LANES` interleaved `f32` partial sums (vectorised), added up in `f64`.
fn pair_sums(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> (f32, f32)) -> (f64, f64) {
    let (mut t1, mut t2) = ([0.0f32; LANES], [0.0f32; LANES]);
    let (ca, ra) = a.as_chunks::<LANES>();
    let (cb, rb) = b.as_chunks::<LANES>();
    for (ca, cb) in ca.iter().zip(cb) {
        for k in 0..LANES {
            let (u, v) = f(ca[k], cb[k]);
            t1[k] += u;
            t2[k] += v;
        }
    }
    for (&x, &y) in ra.iter().zip(rb) {
        let (u, v) = f(x, y);
        t1[0] += u;
        t2[0] += v;
    }
    let add = |t: [f32; LANES]| t.iter().map(|&v| v as f64).sum::<f64>();
    (add(t1), add(t2))
}

/// Per-channel sums over `[B, C, S]` data in `f64`: `(sum (a - shift), sum (a - shift)^2)`
/// without `b`; `(sum a, sum a (b - shift))` with it.
fn channel_sums(d: Dims, a: &[f32], b: Option<&[f32]>, shift: &[f64]) -> Vec<(f64, f64)> {
    let [batch, channels, spatial] = d;
    (0..channels)
        .into_par_iter()
        .map(|c| {
            let m = shift[c] as f32;
            let (mut s1, mut s2) = (0.0f64, 0.0f64);
            for n in 0..batch {
                let at = (n * channels + c) * spatial;
                let xa = &a[at..at + spatial];
                let (u, v) = match b {
                    None => pair_sums(xa, xa, |v, _| {
                        let z = v - m;
                        (z, z * z)
                    }),
                    Some(b) => pair_sums(xa, &b[at..at + spatial], |g, v| (g, g * (v - m))),
                };
                s1 += u;
                s2 += v;
            }
            (s1, s2)
        })
        .collect()
}

/// `out[n, c, :] = a[n, c, :] * scale[c] + shift[c] (+ b[n, c, :] * bscale[c])`, in parallel
/// over images.
fn affine(
    d: Dims,
    a: &[f32],
    scale: &[f32],
    shift: &[f32],
    extra: Option<(&[f32], &[f32])>,
) -> Vec<f32> {
    let [_, channels, spatial] = d;
    let mut out = vec![0.0f32; a.len()];
    out.par_chunks_mut(channels * spatial)
        .enumerate()
        .for_each(|(n, out)| {
            for c in 0..channels {
                let at = (n * channels + c) * spatial;
                let o = &mut out[c * spatial..(c + 1) * spatial];
                let xa = &a[at..at + spatial];
                let (s, t) = (scale[c], shift[c]);
                match extra {
                    None => {
                        for (o, &v) in o.iter_mut().zip(xa) {
                            *o = v * s + t;
                        }
                    }
                    Some((b, bscale)) => {
                        let xb = &b[at..at + spatial];
                        let u = bscale[c];
                        for ((o, &v), &w) in o.iter_mut().zip(xa).zip(xb) {
                            *o = v * s + w * u + t;
                        }
                    }
                }
            }
        });
    out
}

/// Batch statistics `(mean, biased variance)` per channel, two passes (the second centred on
/// a first estimate of the mean, so large means cost no precision).
pub(crate) fn statistics(d: Dims, x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let count = (d[0] * d[2]) as f64;
    let zero = vec![0.0; d[1]];
    let rough: Vec<f64> = channel_sums(d, x, None, &zero)
        .into_iter()
        .map(|(s, _)| (s / count) as f32 as f64) // the shift the second pass subtracts
        .collect();
    let centred = channel_sums(d, x, None, &rough);
    let mut mean = Vec::with_capacity(d[1]);
    let mut var = Vec::with_capacity(d[1]);
    for (c, (s1, s2)) in centred.into_iter().enumerate() {
        let dm = s1 / count;
        mean.push(rough[c] + dm);
        var.push((s2 / count - dm * dm).max(0.0));
    }
    (mean, var)
}

/// Forward: `y = gamma (x - mean) / sqrt(var + eps) + beta`.
pub(crate) fn forward(
    d: Dims,
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    mean: &[f64],
    inv_std: &[f64],
) -> Vec<f32> {
    let scale: Vec<f32> = (0..d[1])
        .map(|c| (gamma[c] as f64 * inv_std[c]) as f32)
        .collect();
    let shift: Vec<f32> = (0..d[1])
        .map(|c| (beta[c] as f64 - gamma[c] as f64 * inv_std[c] * mean[c]) as f32)
        .collect();
    affine(d, x, &scale, &shift, None)
}

/// Backward: `(dx, dgamma, dbeta)`.
pub(crate) fn backward(
    d: Dims,
    x: &[f32],
    gamma: &[f32],
    mean: &[f64],
    inv_std: &[f64],
    dy: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let count = (d[0] * d[2]) as f64;
    // sum dy and sum dy (x - mean); dgamma = inv_std * the latter.
    let sums = channel_sums(d, dy, Some(x), mean);
    let dbeta: Vec<f64> = sums.iter().map(|s| s.0).collect();
    let dgamma: Vec<f64> = sums.iter().zip(inv_std).map(|(s, i)| s.1 * i).collect();
    // dx = k (dy - dbeta / N - xhat dgamma / N), k = gamma inv_std, xhat = (x - mean) inv_std:
    // dx = k dy + (-k inv_std dgamma / N) x + k (inv_std dgamma mean / N - dbeta / N).
    let mut scale = Vec::with_capacity(d[1]);
    let mut xscale = Vec::with_capacity(d[1]);
    let mut shift = Vec::with_capacity(d[1]);
    for c in 0..d[1] {
        let k = gamma[c] as f64 * inv_std[c];
        let a = inv_std[c] * dgamma[c] / count;
        scale.push(k as f32);
        xscale.push((-k * a) as f32);
        shift.push((k * (a * mean[c] - dbeta[c] / count)) as f32);
    }
    let dx = affine(d, dy, &scale, &shift, Some((x, &xscale)));
    let f = |v: Vec<f64>| v.into_iter().map(|v| v as f32).collect();
    (dx, f(dgamma), f(dbeta))
}

#[derive(Clone, Debug)]
struct State {
    x: NodeId,
    gamma: NodeId,
    dims: Dims,
    shape: Vec<usize>,
    mean: Vec<f64>,
    inv_std: Vec<f64>,
}

#[derive(Debug)]
struct BatchNormBackward;

impl Backward<Flex, 3> for BatchNormBackward {
    type State = State;

    fn backward(self, ops: Ops<State, 3>, grads: &mut Gradients, cp: &mut Checkpointer) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        let s = ops.state;
        let x: FlexTensor = cp.retrieve_node_output(s.x);
        let gamma: FlexTensor = cp.retrieve_node_output(s.gamma);
        let (dx, dgamma, dbeta) = backward(
            s.dims,
            &f32_slice(&x),
            &f32_slice(&gamma),
            &s.mean,
            &s.inv_std,
            &f32_slice(&dy),
        );
        let t = |v: Vec<f32>, shape: Vec<usize>| {
            FlexTensor::from_data(TensorData::new(v, Shape::from(shape)))
        };
        if let Some(node) = node_x {
            grads.register::<Flex>(node.id, t(dx, s.shape.clone()));
        }
        if let Some(node) = node_gamma {
            grads.register::<Flex>(node.id, t(dgamma, vec![s.dims[1]]));
        }
        if let Some(node) = node_beta {
            grads.register::<Flex>(node.id, t(dbeta, vec![s.dims[1]]));
        }
    }
}

/// Training-mode batch normalisation of `x: [B, C, ...]` with `gamma`, `beta: [C]`; returns
/// the output and the batch mean and biased variance per channel.
pub(crate) fn batch_norm_train(
    x: FlexAd,
    gamma: FlexAd,
    beta: FlexAd,
    epsilon: f64,
) -> (FlexAd, Vec<f32>, Vec<f32>) {
    let shape: Vec<usize> = x.primitive().layout().shape().iter().copied().collect();
    let (batch, channels) = (shape[0], shape[1]);
    let dims = [batch, channels, shape[2..].iter().product()];
    let xs = f32_slice(x.primitive());
    let (mean, var) = statistics(dims, &xs);
    let inv_std: Vec<f64> = var.iter().map(|v| 1.0 / (v + epsilon).sqrt()).collect();
    let y = forward(
        dims,
        &xs,
        &f32_slice(gamma.primitive()),
        &f32_slice(beta.primitive()),
        &mean,
        &inv_std,
    );
    drop(xs);
    let y = FlexTensor::from_data(TensorData::new(y, Shape::from(shape.clone())));
    let stats = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let (mean32, var32) = (stats(&mean), stats(&var));
    let out = match BatchNormBackward
        .prepare::<NoCheckpointing>([x.node(), gamma.node(), beta.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = State {
                x: prep.checkpoint(&x),
                gamma: prep.checkpoint(&gamma),
                dims,
                shape,
                mean,
                inv_std,
            };
            prep.finish(state, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(y),
    };
    (out, mean32, var32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook formulas in `f64` on a small batch with a large mean (which a one-pass
    /// variance in `f32` would get wrong).
    #[test]
    fn kernels_match_the_formulas() {
        let d = [3, 2, 5];
        let x: Vec<f32> = (0..30)
            .map(|i| 1000.0 + ((i * 7) % 11) as f32 * 0.25)
            .collect();
        let dy: Vec<f32> = (0..30).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
        let (gamma, eps) = ([1.5f32, -0.5], 1e-5);
        let n = 15.0;
        let at = |b: usize, c: usize, s: usize| (b * 2 + c) * 5 + s;
        let idx = |c: usize| (0..3).flat_map(move |b| (0..5).map(move |s| at(b, c, s)));
        let (mean, var) = statistics(d, &x);
        let inv: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let (dx, dgamma, dbeta) = backward(d, &x, &gamma, &mean, &inv, &dy);
        let y = forward(d, &x, &gamma, &[0.25, 0.0], &mean, &inv);
        for c in 0..2 {
            let m: f64 = idx(c).map(|i| x[i] as f64).sum::<f64>() / n;
            let v: f64 = idx(c).map(|i| (x[i] as f64 - m).powi(2)).sum::<f64>() / n;
            // Per-image partial sums are `f32` (a few ulps of values of size ~1 around the
            // rough mean): 1e-5 is far above that and far below the 0.25 steps of the data.
            let (em, ev) = ((mean[c] - m).abs(), (var[c] - v).abs());
            assert!(em < 1e-5 && ev < 1e-5, "stats {c}: {em} {ev}");
            let r = 1.0 / (v + eps).sqrt();
            let xhat = |i: usize| (x[i] as f64 - m) * r;
            let db: f64 = idx(c).map(|i| dy[i] as f64).sum();
            let dg: f64 = idx(c).map(|i| dy[i] as f64 * xhat(i)).sum();
            assert!((dbeta[c] as f64 - db).abs() < 1e-5, "dbeta {c}");
            assert!(
                (dgamma[c] as f64 - dg).abs() < 1e-3 * dg.abs().max(1.0),
                "dgamma {c}"
            );
            for i in idx(c) {
                let beta = [0.25, 0.0][c];
                let want_y = gamma[c] as f64 * xhat(i) + beta;
                assert!((y[i] as f64 - want_y).abs() < 1e-3, "y {i}");
                let want = gamma[c] as f64 * r * (dy[i] as f64 - db / n - xhat(i) * dg / n);
                assert!(
                    (dx[i] as f64 - want).abs() < 1e-3 * want.abs().max(1.0),
                    "dx {i}"
                );
            }
        }
    }
}
