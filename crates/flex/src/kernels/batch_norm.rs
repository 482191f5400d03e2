//! Kernels of training-mode batch normalisation over `[B, C, S]` data (`S` elements per channel
//! and image), with an optional residual sum and ReLU in the same passes.
//!
//! With `N = B S`, per channel `c`: `mu = sum x / N`, `var = sum (x - mu)^2 / N` (biased, what
//! feeds the running statistics), `xhat = (x - mu) / sqrt(var + eps)`, `z = gamma xhat + beta
//! (+ r)` and `y = relu(z)` (or `y = z`). Backward, with `g = dy [y > 0]` (or `g = dy`):
//! `dr = g`, `dbeta = sum g`, `dgamma = sum g xhat`,
//! `dx = gamma / sqrt(var + eps) (g - dbeta / N - xhat dgamma / N)`.
//!
//! Passes over the activations: forward one read for the statistics (sums of `x - x[0, c, 0]`:
//! shifted by a sample of the channel, so a large mean costs no precision) and one
//! read-and-write for `y`; backward one read of `dy` (and `y` for the mask, writing `g`) for
//! the sums and one read-and-write for `dx`. burn's default `batch_norm_train` (which flex
//! uses) records about ten element-wise passes forward and fifteen backward, and the ReLU and
//! the residual sum two more each way. Sums run in `f32` lanes within an image and channel and
//! in `f64` across them, added up in image order (the same result whatever the thread timing);
//! outputs are written once, into buffers that are never zero-filled first.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::uninit::{write_map, written};

/// `[batch, channels, elements per channel and image]` of the input.
pub(crate) type Dims = [usize; 3];

/// Independent partial sums per reduction: the compiler keeps them in vector registers.
const LANES: usize = 16;

/// `max(z, 0)`, NaN kept (burn-flex's `relu`).
fn relu(z: f32) -> f32 {
    if z.is_nan() || z > 0.0 { z } else { 0.0 }
}

/// `g` where the ReLU passed its input (`y > 0` or NaN: burn-flex's `relu_backward`), else 0.
fn relu_grad(y: f32, g: f32) -> f32 {
    if y.is_nan() || y > 0.0 { g } else { 0.0 }
}

/// `(sum (a_i - sa), sum (a_i - sa) (b_i - sb))` over `a` and `b` (equal lengths), in `LANES`
/// interleaved `f32` partial sums, added up in `f64`; the whole chunks in AVX-512 registers
/// where the CPU has them (the same sums either way: same lanes, no multiply-add fused).
fn centred_sums(a: &[f32], sa: f32, b: &[f32], sb: f32) -> (f64, f64) {
    centred_sums_with(a, sa, b, sb, super::direct::available())
}

/// [`centred_sums`], by the AVX-512 loop if `vector` (which needs the CPU to have it).
fn centred_sums_with(a: &[f32], sa: f32, b: &[f32], sb: f32, vector: bool) -> (f64, f64) {
    assert_eq!(a.len(), b.len());
    let (mut t1, mut t2) = ([0.0f32; LANES], [0.0f32; LANES]);
    let (ca, ra) = a.as_chunks::<LANES>();
    let (cb, rb) = b.as_chunks::<LANES>();
    let vector = cfg!(target_arch = "x86_64") && vector;
    #[cfg(target_arch = "x86_64")]
    if vector {
        assert!(super::direct::available(), "AVX-512F");
        // SAFETY: the CPU has AVX-512F.
        unsafe { centred_sums_avx512(ca, sa, cb, sb, (&mut t1, &mut t2)) };
    }
    if !vector {
        for (ca, cb) in ca.iter().zip(cb) {
            for k in 0..LANES {
                let u = ca[k] - sa;
                t1[k] += u;
                t2[k] += u * (cb[k] - sb);
            }
        }
    }
    for (&x, &y) in ra.iter().zip(rb) {
        let u = x - sa;
        t1[0] += u;
        t2[0] += u * (y - sb);
    }
    let add = |t: [f32; LANES]| t.iter().map(|&v| v as f64).sum::<f64>();
    (add(t1), add(t2))
}

/// The whole chunks of [`centred_sums`] in AVX-512 registers: the same lanes, additions and
/// products (none fused) as the scalar loop.
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn centred_sums_avx512(
    a: &[[f32; LANES]],
    sa: f32,
    b: &[[f32; LANES]],
    sb: f32,
    (t1, t2): (&mut [f32; LANES], &mut [f32; LANES]),
) {
    use std::arch::x86_64::{
        _mm512_add_ps, _mm512_loadu_ps, _mm512_mul_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps, _mm512_sub_ps,
    };
    let (va, vb) = (_mm512_set1_ps(sa), _mm512_set1_ps(sb));
    let (mut s1, mut s2) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    for (ca, cb) in a.iter().zip(b) {
        // SAFETY: each chunk is 16 `f32`.
        let (x, y) = unsafe { (_mm512_loadu_ps(ca.as_ptr()), _mm512_loadu_ps(cb.as_ptr())) };
        let u = _mm512_sub_ps(x, va);
        s1 = _mm512_add_ps(s1, u);
        s2 = _mm512_add_ps(s2, _mm512_mul_ps(u, _mm512_sub_ps(y, vb)));
    }
    // SAFETY: each array is 16 `f32`.
    unsafe {
        _mm512_storeu_ps(t1.as_mut_ptr(), s1);
        _mm512_storeu_ps(t2.as_mut_ptr(), s2);
    }
}

/// Per-image, per-channel sums added up over the images in image order.
fn add_in_order(channels: usize, parts: Vec<Vec<(f64, f64)>>) -> Vec<(f64, f64)> {
    let mut total = vec![(0.0, 0.0); channels];
    for part in parts {
        for (t, (u, v)) in total.iter_mut().zip(part) {
            t.0 += u;
            t.1 += v;
        }
    }
    total
}

/// Per-channel sums of `f(image, channel)` over `[B, C, S]` data, in parallel over images and
/// added up in image order.
fn image_sums(d: Dims, f: impl Fn(usize, usize) -> (f64, f64) + Sync) -> Vec<(f64, f64)> {
    let [batch, channels, _] = d;
    let parts = (0..batch)
        .into_par_iter()
        .map(|n| (0..channels).map(|c| f(n, c)).collect())
        .collect();
    add_in_order(channels, parts)
}

/// A new `[B, C, S]` buffer whose image `n` (`C S` elements) `fill(n, image)` writes, every
/// element of it, in parallel over images; with `fill`'s per-channel sums added up in image
/// order.
fn fill_images(
    d: Dims,
    fill: impl Fn(usize, &mut [MaybeUninit<f32>]) -> Vec<(f64, f64)> + Sync,
) -> (Vec<f32>, Vec<(f64, f64)>) {
    let [batch, channels, spatial] = d;
    // SAFETY: `fill` writes every element of its image (its contract above: each caller's
    // loops `write_map` the whole slice of each channel).
    let (out, parts) = unsafe {
        written(batch * channels * spatial, |out| {
            out.par_chunks_mut((channels * spatial).max(1))
                .enumerate()
                .map(|(n, image)| fill(n, image))
                .collect()
        })
    };
    (out, add_in_order(channels, parts))
}

/// Batch statistics `(mean, biased variance)` per channel, in one pass over `x`.
pub(crate) fn statistics(d: Dims, x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let [batch, channels, spatial] = d;
    let count = (batch * spatial) as f64;
    // Sums of `x - s` with `s` the channel's first element: within a few standard deviations
    // of the mean, so `E (x - s)^2 - (E (x - s))^2` loses no precision to a large mean.
    let shift: Vec<f32> = (0..channels).map(|c| x[c * spatial]).collect();
    let sums = image_sums(d, |n, c| {
        let at = (n * channels + c) * spatial;
        let xs = &x[at..at + spatial];
        centred_sums(xs, shift[c], xs, shift[c])
    });
    let mut mean = Vec::with_capacity(channels);
    let mut var = Vec::with_capacity(channels);
    for (c, (s1, s2)) in sums.into_iter().enumerate() {
        let dm = s1 / count;
        mean.push(shift[c] as f64 + dm);
        var.push((s2 / count - dm * dm).max(0.0));
    }
    (mean, var)
}

/// Forward: `y = gamma (x - mean) / sqrt(var + eps) + beta (+ r)`, through a ReLU when
/// `relu_after`.
pub(crate) fn forward(
    d: Dims,
    x: &[f32],
    (gamma, beta): (&[f32], &[f32]),
    (mean, inv_std): (&[f64], &[f64]),
    residual: Option<&[f32]>,
    relu_after: bool,
) -> Vec<f32> {
    let [_, channels, spatial] = d;
    let scale: Vec<f32> = (0..channels)
        .map(|c| (gamma[c] as f64 * inv_std[c]) as f32)
        .collect();
    let shift: Vec<f32> = (0..channels)
        .map(|c| (beta[c] as f64 - gamma[c] as f64 * inv_std[c] * mean[c]) as f32)
        .collect();
    let (y, _) = fill_images(d, |n, image| {
        for c in 0..channels {
            let at = (n * channels + c) * spatial;
            let o = &mut image[c * spatial..(c + 1) * spatial];
            let (xs, s, t) = (&x[at..at + spatial], scale[c], shift[c]);
            match (residual, relu_after) {
                (None, false) => write_map(o, xs, xs, |v, _| v * s + t),
                (None, true) => write_map(o, xs, xs, |v, _| relu(v * s + t)),
                (Some(r), false) => write_map(o, xs, &r[at..at + spatial], |v, r| v * s + t + r),
                (Some(r), true) => {
                    write_map(o, xs, &r[at..at + spatial], |v, r| relu(v * s + t + r))
                }
            };
        }
        Vec::new()
    });
    y
}

/// Backward from `dy`: `(dx, dgamma, dbeta, g)` with `g = dy [y > 0]` the gradient of the
/// sum before the ReLU (and of the residual), when `y` (the output) is given; without it the
/// ReLU is absent, `g = dy` and no `g` is returned.
pub(crate) fn backward(
    d: Dims,
    x: &[f32],
    gamma: &[f32],
    (mean, inv_std): (&[f64], &[f64]),
    dy: &[f32],
    y: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    let [batch, channels, spatial] = d;
    let count = (batch * spatial) as f64;
    let sums_of = |n: usize, c: usize, g: &[f32]| {
        let at = (n * channels + c) * spatial;
        let m = mean[c] as f32;
        centred_sums(g, 0.0, &x[at..at + spatial], m)
    };
    // sum g and sum g (x - mean); dgamma = inv_std * the latter.
    let (masked, sums) = match y {
        Some(y) => {
            let (g, sums) = fill_images(d, |n, image| {
                (0..channels)
                    .map(|c| {
                        let at = (n * channels + c) * spatial;
                        let o = &mut image[c * spatial..(c + 1) * spatial];
                        let g =
                            write_map(o, &y[at..at + spatial], &dy[at..at + spatial], relu_grad);
                        sums_of(n, c, g)
                    })
                    .collect()
            });
            (Some(g), sums)
        }
        None => (
            None,
            image_sums(d, |n, c| {
                let at = (n * channels + c) * spatial;
                sums_of(n, c, &dy[at..at + spatial])
            }),
        ),
    };
    let g: &[f32] = masked.as_deref().unwrap_or(dy);
    let dbeta: Vec<f64> = sums.iter().map(|s| s.0).collect();
    let dgamma: Vec<f64> = sums.iter().zip(inv_std).map(|(s, i)| s.1 * i).collect();
    // dx = k (g - dbeta / N - xhat dgamma / N), k = gamma inv_std, xhat = (x - mean) inv_std:
    // dx = k g + (-k inv_std dgamma / N) x + k (inv_std dgamma mean / N - dbeta / N).
    let mut coefs = Vec::with_capacity(channels);
    for c in 0..channels {
        let k = gamma[c] as f64 * inv_std[c];
        let a = inv_std[c] * dgamma[c] / count;
        let shift = k * (a * mean[c] - dbeta[c] / count);
        coefs.push((k as f32, (-k * a) as f32, shift as f32));
    }
    let (dx, _) = fill_images(d, |n, image| {
        for (c, &(s, u, t)) in coefs.iter().enumerate() {
            let at = (n * channels + c) * spatial;
            let o = &mut image[c * spatial..(c + 1) * spatial];
            write_map(o, &g[at..at + spatial], &x[at..at + spatial], |g, v| {
                g * s + v * u + t
            });
        }
        Vec::new()
    });
    let f = |v: Vec<f64>| v.into_iter().map(|v| v as f32).collect();
    (dx, f(dgamma), f(dbeta), masked)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook formulas in `f64` on a small batch with a large mean (which a one-pass
    /// variance of unshifted data in `f32` would get wrong), with and without the residual and
    /// the ReLU.
    #[test]
    fn kernels_match_the_formulas() {
        let d = [3, 2, 5];
        let x: Vec<f32> = (0..30)
            .map(|i| 1000.0 + ((i * 7) % 11) as f32 * 0.25)
            .collect();
        let dy: Vec<f32> = (0..30).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
        let r: Vec<f32> = (0..30).map(|i| ((i * 3) % 5) as f32 * 0.5 - 1.0).collect();
        let (gamma, beta, eps) = ([1.5f32, -0.5], [0.25f32, 0.0], 1e-5);
        let n = 15.0;
        let at = |b: usize, c: usize, s: usize| (b * 2 + c) * 5 + s;
        let idx = |c: usize| (0..3).flat_map(move |b| (0..5).map(move |s| at(b, c, s)));
        let (mean, var) = statistics(d, &x);
        let inv: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let mut relu_cut = 0;
        for (residual, relu_after) in [(false, false), (false, true), (true, false), (true, true)] {
            let res = residual.then_some(&r[..]);
            let y = forward(d, &x, (&gamma, &beta), (&mean, &inv), res, relu_after);
            let (dx, dgamma, dbeta, g) = backward(
                d,
                &x,
                &gamma,
                (&mean, &inv),
                &dy,
                relu_after.then_some(&y[..]),
            );
            assert_eq!(g.is_some(), relu_after);
            for c in 0..2 {
                let m: f64 = idx(c).map(|i| x[i] as f64).sum::<f64>() / n;
                let v: f64 = idx(c).map(|i| (x[i] as f64 - m).powi(2)).sum::<f64>() / n;
                // Per-image partial sums are `f32` (a few ulps of values of size ~1 around
                // the shift): 1e-5 is far above that and far below the 0.25 steps of the data.
                let (em, ev) = ((mean[c] - m).abs(), (var[c] - v).abs());
                assert!(em < 1e-5 && ev < 1e-5, "stats {c}: {em} {ev}");
                let inv_sd = 1.0 / (v + eps).sqrt();
                let xhat = |i: usize| (x[i] as f64 - m) * inv_sd;
                let z = |i: usize| {
                    gamma[c] as f64 * xhat(i)
                        + beta[c] as f64
                        + if residual { r[i] as f64 } else { 0.0 }
                };
                let open = |i: usize| !relu_after || z(i) > 0.0;
                let gi = |i: usize| if open(i) { dy[i] as f64 } else { 0.0 };
                let db: f64 = idx(c).map(gi).sum();
                let dg: f64 = idx(c).map(|i| gi(i) * xhat(i)).sum();
                assert!((dbeta[c] as f64 - db).abs() < 1e-5, "dbeta {c}");
                let tol = |w: f64| 1e-3 * w.abs().max(1.0);
                assert!((dgamma[c] as f64 - dg).abs() < tol(dg), "dgamma {c}");
                for i in idx(c) {
                    let want_y = if open(i) { z(i) } else { 0.0 };
                    relu_cut += usize::from(!open(i));
                    assert!((y[i] as f64 - want_y).abs() < 1e-3, "y {i}");
                    let want = gamma[c] as f64 * inv_sd * (gi(i) - db / n - xhat(i) * dg / n);
                    assert!((dx[i] as f64 - want).abs() < tol(want), "dx {i}");
                    if let Some(g) = &g {
                        assert_eq!(g[i] as f64, gi(i), "g {i}");
                    }
                }
            }
        }
        // The ReLU cases cut some elements (and not all): the masks were exercised.
        assert!(relu_cut > 5 && relu_cut < 55, "{relu_cut} cut");
    }

    /// The AVX-512 loop of the channel sums gives the scalar loop's sums bit for bit.
    #[test]
    fn both_ways_of_the_channel_sums_agree_exactly() {
        let a: Vec<f32> = (0..87)
            .map(|i| ((i * 37) % 101) as f32 * 0.173 - 5.0)
            .collect();
        let b: Vec<f32> = (0..87)
            .map(|i| ((i * 53) % 97) as f32 * 0.311 + 2.0)
            .collect();
        let scalar = centred_sums_with(&a, 0.5, &b, -1.25, false);
        let naive: f64 = a.iter().map(|&v| (v - 0.5) as f64).sum();
        assert!((scalar.0 - naive).abs() < 1e-3, "{scalar:?} {naive}");
        if crate::kernels::direct::available() {
            assert_eq!(centred_sums_with(&a, 0.5, &b, -1.25, true), scalar);
        }
    }

    /// NaN goes through the ReLU both ways, as through burn-flex's `relu`.
    #[test]
    fn relu_keeps_nan() {
        assert!(relu(f32::NAN).is_nan());
        assert_eq!((relu(-1.0), relu(2.0)), (0.0, 2.0));
        assert_eq!((relu_grad(f32::NAN, 3.0), relu_grad(0.0, 3.0)), (3.0, 0.0));
    }
}
