//! Temporary: per-op timing of the CNN pieces and A/B of the forward paths.
use std::time::Instant;

use sgmcmc::apps::bench::cnn_workload;
use sgmcmc::apps::device::DeviceChoice;
use sgmcmc::burn::nn::LinearConfig;
use sgmcmc::burn::nn::conv::Conv2dConfig;
use sgmcmc::burn::nn::pool::MaxPool2dConfig;
use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor, activation};
use sgmcmc::models::Targets;
use sgmcmc::models::conv_gemm::{conv_pool_relu_nhwc, conv2d_nhwc};

/// On-CPU nanoseconds of all threads of this process.
fn cpu_ns() -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir("/proc/self/task").unwrap() {
        let p = e.unwrap().path().join("schedstat");
        if let Ok(s) = std::fs::read_to_string(p) {
            total += s.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        }
    }
    total
}

/// CPU milliseconds per call (set CNN_WALL=1 for wall-clock).
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let wall = std::env::var("CNN_WALL").is_ok();
    let t = Instant::now();
    let c = cpu_ns();
    for _ in 0..reps {
        f();
    }
    if wall {
        t.elapsed().as_secs_f64() / reps as f64 * 1e3
    } else {
        (cpu_ns() - c) as f64 / reps as f64 / 1e6
    }
}

fn ops(dev: &Device, b: usize, reps: usize) {
    let ad = dev.clone().autodiff();
    let conv1 = Conv2dConfig::new([1, 32], [5, 5]).init(&ad);
    let conv2 = Conv2dConfig::new([32, 64], [5, 5]).init(&ad);
    let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
    let fc1 = LinearConfig::new(1024, 50).init(&ad);
    let x = Tensor::<4>::random([b, 1, 28, 28], Distribution::Normal(0.0, 1.0), &ad);
    let h1 =
        Tensor::<4>::random([b, 32, 12, 12], Distribution::Normal(0.0, 1.0), &ad).require_grad();
    let a1 =
        Tensor::<4>::random([b, 32, 24, 24], Distribution::Normal(0.0, 1.0), &ad).require_grad();
    let f = Tensor::<2>::random([b, 1024], Distribution::Normal(0.0, 1.0), &ad).require_grad();
    let r = |name: &str, fwd: f64, both: f64| {
        println!("  {name:<16} fwd {fwd:9.2} ms  bwd {:9.2} ms", both - fwd)
    };
    macro_rules! op {
        ($name:expr, $e:expr) => {{
            let fw = time(reps, || {
                $e.sum().into_scalar::<f32>();
            });
            let fb = time(reps, || {
                let _ = $e.sum().backward();
            });
            r($name, fw, fb);
        }};
    }
    op!("conv1 burn", conv1.forward(x.clone()));
    op!("conv2 burn", conv2.forward(h1.clone()));
    op!("pool1 burn", pool.forward(a1.clone()));
    op!("relu1", activation::relu(a1.clone()));
    op!("fc1", fc1.forward(f.clone()));
    let xn = x.clone().reshape([b, 28, 28, 1]);
    let h1n = h1
        .clone()
        .permute([0, 2, 3, 1])
        .reshape([b, 12, 12, 32])
        .detach()
        .require_grad();
    let w1 = conv1.weight.val();
    let b1 = conv1.bias.as_ref().map(|p| p.val());
    let w2 = conv2.weight.val();
    let b2 = conv2.bias.as_ref().map(|p| p.val());
    op!(
        "conv1 nhwc",
        conv2d_nhwc(xn.clone(), w1.clone(), b1.clone()).unwrap()
    );
    op!(
        "conv2 nhwc",
        conv2d_nhwc(h1n.clone(), w2.clone(), b2.clone()).unwrap()
    );
    op!(
        "block1 nhwc",
        conv_pool_relu_nhwc(xn.clone(), w1.clone(), b1.clone()).unwrap()
    );
    op!(
        "block2 nhwc",
        conv_pool_relu_nhwc(h1n.clone(), w2.clone(), b2.clone()).unwrap()
    );
}

fn ab_rate(dev: &Device, b: usize, secs: f64, reference: bool) -> f64 {
    let ad = dev.clone().autodiff();
    let (cnn, post, _) = cnn_workload(&ad);
    let model = cnn.init(&ad);
    let x = Tensor::<4>::random([b, 1, 28, 28], Distribution::Normal(0.0, 1.0), &ad);
    let labels: Vec<i64> = (0..b as i64).map(|i| i % 5).collect();
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), &ad);
    let t = Instant::now();
    let mut n = 0;
    while t.elapsed().as_secs_f64() < secs || n < 2 {
        let out = if reference {
            model.forward_reference(x.clone())
        } else {
            sgmcmc::models::Network::forward(&model, x.clone())
        };
        let e = post
            .likelihood
            .neg_log_lik(out, &Targets::Class(y.clone()))
            .unwrap();
        let _ = e.backward();
        n += 1;
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map(String::as_str).unwrap_or("flex");
    let mode = args.get(2).map(String::as_str).unwrap_or("ops");
    let batches: Vec<usize> = args.get(3).map_or(vec![256, 2500], |s| {
        s.split(',').map(|x| x.parse().unwrap()).collect()
    });
    let choice = if which == "ndarray" {
        DeviceChoice::Ndarray
    } else {
        DeviceChoice::Flex
    };
    let dev = choice.device().unwrap().unwrap();
    for b in batches {
        match mode {
            "ops" => {
                println!("{which} batch {b} ops:");
                ops(&dev, b, if b > 1000 { 2 } else { 5 });
            }
            "ab" => {
                for _ in 0..2 {
                    let r = ab_rate(&dev, b, 3.0, true);
                    let n = ab_rate(&dev, b, 3.0, false);
                    println!(
                        "{which} b{b}: reference {r:.3}/s  new {n:.3}/s  speedup {:.2}",
                        n / r
                    );
                }
            }
            "new" => {
                let n = ab_rate(&dev, b, 5.0, false);
                println!("{which} b{b}: new {n:.3}/s");
            }
            "cpu" => {
                // CPU ms per fwd+bwd of the full network, reference and new.
                let ad = dev.clone().autodiff();
                let (cnn, post, _) = cnn_workload(&ad);
                let model = cnn.init(&ad);
                let x = Tensor::<4>::random([b, 1, 28, 28], Distribution::Normal(0.0, 1.0), &ad);
                let labels: Vec<i64> = (0..b as i64).map(|i| i % 5).collect();
                let y = Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), &ad));
                let reps = if b > 1000 { 2 } else { 5 };
                for _ in 0..2 {
                    let r = time(reps, || {
                        let _ = post
                            .likelihood
                            .neg_log_lik(model.forward_reference(x.clone()), &y)
                            .unwrap()
                            .backward();
                    });
                    let n = time(reps, || {
                        let _ = post
                            .likelihood
                            .neg_log_lik(sgmcmc::models::Network::forward(&model, x.clone()), &y)
                            .unwrap()
                            .backward();
                    });
                    println!(
                        "{which} b{b}: fwd+bwd reference {r:.1} ms, new {n:.1} ms, ratio new/ref {:.3}",
                        n / r
                    );
                }
            }
            "mm" => {
                let shapes: [(usize, usize, usize, bool, bool); 14] = [
                    (512, 512, 512, false, false),
                    (2048, 800, 64, false, false),
                    (64, 800, b * 64, false, false), // CHWB conv2 fwd
                    (64, b * 64, 800, false, true),  // CHWB conv2 dW = g colsT^T
                    (800, 64, b * 64, true, false),  // CHWB conv2 dcolsT = W^T g
                    (32, 25, b * 576, false, false), // CHWB conv1 fwd
                    (32, b * 576, 25, false, true),  // CHWB conv1 dW
                    (b, 1024, 50, true, false),      // CHWB fc1 (featT^T W)
                    (b * 64, 800, 64, false, false), // conv2 fwd
                    (800, b * 64, 64, true, false),  // conv2 dW = cols^T g
                    (b * 64, 64, 800, false, true),  // conv2 dcols = g W^T
                    (b * 576, 25, 32, false, false), // conv1 fwd
                    (25, b * 576, 32, true, false),  // conv1 dW
                    (b, 1024, 50, false, false),     // fc1
                ];
                let mut best = vec![f64::INFINITY; shapes.len()];
                for _ in 0..4 {
                    for (i, &(m, k, n, ta, tb)) in shapes.iter().enumerate() {
                        let a = if ta {
                            Tensor::<2>::random([k, m], Distribution::Normal(0.0, 1.0), &dev)
                                .transpose()
                        } else {
                            Tensor::<2>::random([m, k], Distribution::Normal(0.0, 1.0), &dev)
                        };
                        let w = if tb {
                            Tensor::<2>::random([n, k], Distribution::Normal(0.0, 1.0), &dev)
                                .transpose()
                        } else {
                            Tensor::<2>::random([k, n], Distribution::Normal(0.0, 1.0), &dev)
                        };
                        let ms = time(3, || {
                            let _ = a.clone().matmul(w.clone());
                        });
                        best[i] = best[i].min(ms);
                    }
                }
                for (i, &(m, k, n, ta, tb)) in shapes.iter().enumerate() {
                    println!(
                        "  mm m={m} k={k} n={n} ta={ta} tb={tb}: {:.2} ms  {:.1} GFLOP/s",
                        best[i],
                        2.0 * (m * k * n) as f64 / best[i] / 1e6
                    );
                }
            }
            "b2f" | "b2fb" | "b1f" | "b1fb" => {
                let ad = dev.clone().autodiff();
                let conv1 = Conv2dConfig::new([1, 32], [5, 5]).init(&ad);
                let conv2 = Conv2dConfig::new([32, 64], [5, 5]).init(&ad);
                let xn = Tensor::<4>::random([b, 28, 28, 1], Distribution::Normal(0.0, 1.0), &ad);
                let h1n = Tensor::<4>::random([b, 12, 12, 32], Distribution::Normal(0.0, 1.0), &ad)
                    .require_grad();
                let (x, conv) = if mode.starts_with("b1") {
                    (xn, conv1)
                } else {
                    (h1n, conv2)
                };
                let w = conv.weight.val();
                let bias = conv.bias.as_ref().map(|p| p.val());
                let ms = time(10, || {
                    let y = conv_pool_relu_nhwc(x.clone(), w.clone(), bias.clone())
                        .unwrap()
                        .sum();
                    if mode.ends_with("fb") {
                        let _ = y.backward();
                    } else {
                        y.into_scalar::<f32>();
                    }
                });
                println!("{mode} b{b}: {ms:.2} ms");
            }
            _ => panic!("mode"),
        }
    }
}
