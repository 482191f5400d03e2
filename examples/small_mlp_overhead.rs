//! Minimal reproduction of burn's per-operation costs at small-MLP sizes on burn-flex (see
//! docs/perf/small-mlp-overhead.md): microseconds per call, the least disturbed of 30 rounds.
//!
//! `cargo run --release --example small_mlp_overhead`

use std::hint::black_box;
use std::time::Instant;

use sgmcmc::burn::tensor::{Device, Distribution, Tensor};

/// Minimum over 30 rounds of ~5 ms of the time per call, in microseconds.
fn us(mut f: impl FnMut()) -> f64 {
    (0..30)
        .map(|_| {
            let (start, mut k) = (Instant::now(), 0u32);
            while start.elapsed().as_secs_f64() < 5e-3 {
                f();
                k += 1;
            }
            start.elapsed().as_secs_f64() * 1e6 / f64::from(k)
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let plain = Device::flex();
    let r = |s: [usize; 2]| Tensor::<2>::random(s, Distribution::Normal(0.0, 1.0), &plain);
    let (x, w, h, one) = (r([100, 64]), r([64, 100]), r([100, 100]), r([1, 1]));
    let tracked = || Tensor::from_inner(h.clone()).require_grad();
    let rows = [
        (
            "matmul [100,64]x[64,100] (1.28 MFLOP)",
            us(|| drop(black_box(x.clone().matmul(w.clone())))),
        ),
        (
            "add [100,100]",
            us(|| drop(black_box(h.clone() + h.clone()))),
        ),
        ("exp [100,100]", us(|| drop(black_box(h.clone().exp())))),
        ("tanh [100,100]", us(|| drop(black_box(h.clone().tanh())))),
        (
            "tanh [100,100] autodiff fwd+bwd (+sum)",
            us(|| drop(black_box(tracked().tanh().sum().backward()))),
        ),
        (
            "sum fwd+bwd [100,100] autodiff (fixed cost)",
            us(|| drop(black_box(tracked().sum().backward()))),
        ),
        (
            "20 x add_scalar [1,1] autodiff fwd+bwd",
            us(|| {
                let mut v = Tensor::from_inner(one.clone()).require_grad();
                for _ in 0..20 {
                    v = v.add_scalar(1.0);
                }
                drop(black_box(v.sum().backward()));
            }),
        ),
        (
            "20 x add_scalar [1,1] plain",
            us(|| {
                let mut v = one.clone();
                for _ in 0..20 {
                    v = v.add_scalar(1.0);
                }
                drop(black_box(v));
            }),
        ),
        (
            "log_softmax [100,10] autodiff fwd+bwd (+sum)",
            us(|| {
                let v = Tensor::from_inner(h.clone().slice([0..100, 0..10])).require_grad();
                let l = sgmcmc::burn::tensor::activation::log_softmax(v, 1);
                drop(black_box(l.sum().backward()));
            }),
        ),
        ("sum [100,100]", us(|| drop(black_box(h.clone().sum())))),
        (
            "sum_dim(0) then sum [100,100]",
            us(|| drop(black_box(h.clone().sum_dim(0).sum()))),
        ),
        (
            "clamp [100,100]",
            us(|| drop(black_box(h.clone().clamp(-1.0, 1.0)))),
        ),
        (
            "clamp_min + clamp_max [100,100]",
            us(|| drop(black_box(h.clone().clamp_min(-1.0).clamp_max(1.0)))),
        ),
    ];
    for (name, t) in rows {
        println!("{name:<48} {t:>9.2} us");
    }
}
