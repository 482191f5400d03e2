//! The papers' MNIST CNN on the CPU backends: a full SGLD step (forward + backward of the
//! posterior energy + update) at batch 256 and 2500, through `Cnn`'s channels-last im2col
//! forward and through burn's `Conv2d`/`MaxPool2d` reference forward; and the pieces (conv
//! blocks, plain conv, pooling, fc1) forward and forward + backward.
//!
//! `cargo bench --bench cnn` (flex); `SGMCMC_BENCH_NDARRAY_CNN=1` adds ndarray (slow reference
//! path). Filter with criterion's arguments, e.g. `cargo bench --bench cnn -- step/flex/b256`.
//! Compare with PyTorch through `scripts/bench-torch.sh`.
//!
//! On a shared machine wall-clock time measures the neighbours too: `SGMCMC_BENCH_CPU=1`
//! measures the CPU time of this process instead (all threads, from `/proc/self/task`; Linux
//! only), which with `RAYON_NUM_THREADS=1` is the work per iteration.

use burn::module::Module;
use burn::nn::LinearConfig;
use burn::nn::conv::Conv2dConfig;
use burn::nn::pool::MaxPool2dConfig;
use burn::tensor::{Device, Distribution, Int, Tensor, activation};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use sgmcmc::engine::DeviceChoice;
use sgmcmc::models::conv_gemm::{conv_pool_relu_nhwc, conv2d_nhwc};
use sgmcmc::models::posterior::Batch;
use sgmcmc::models::{Cnn, Network, Targets};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc_bench::{cnn_workload, cpu_ns};
use std::time::{Duration, Instant};

/// Wall-clock time, or with `cpu` the on-CPU time of all threads of this process.
struct Clock {
    cpu: bool,
}

impl Measurement for Clock {
    type Intermediate = (Instant, u64);
    type Value = Duration;
    fn start(&self) -> Self::Intermediate {
        (Instant::now(), if self.cpu { cpu_ns() } else { 0 })
    }
    fn end(&self, (t, c): Self::Intermediate) -> Duration {
        if self.cpu {
            Duration::from_nanos(cpu_ns().saturating_sub(c))
        } else {
            t.elapsed()
        }
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Millis
    }
}

/// Formats nanoseconds as milliseconds.
struct Millis;

impl ValueFormatter for Millis {
    fn scale_values(&self, _typical: f64, values: &mut [f64]) -> &'static str {
        values.iter_mut().for_each(|v| *v /= 1e6);
        "ms"
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
        };
        values.iter_mut().for_each(|v| *v = n as f64 * 1e9 / *v);
        "/s"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

type Group<'a> = BenchmarkGroup<'a, Clock>;

/// The CNN through burn's NCHW `Conv2d`/`MaxPool2d` modules (`Cnn::forward_reference`).
#[derive(Module, Debug)]
struct Reference {
    cnn: Cnn,
}

impl Network for Reference {
    type Input = Tensor<4>;
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.cnn.forward_reference(x)
    }
}

/// `batch` random 28x28 images with labels `i % 5`, on `device`.
fn images(batch: usize, device: &Device) -> Batch<Tensor<4>> {
    let x = Tensor::<4>::random([batch, 1, 28, 28], Distribution::Normal(0.0, 1.0), device);
    let labels: Vec<i64> = (0..batch as i64).map(|i| i % 5).collect();
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), device);
    Batch {
        x,
        y: Targets::Class(y),
    }
}

fn group<'a>(c: &'a mut Criterion<Clock>, name: &str, slow: bool) -> Group<'a> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .measurement_time(Duration::from_secs(if slow { 20 } else { 5 }))
        .warm_up_time(Duration::from_secs(1));
    g
}

fn step<M: Network + 'static>(
    g: &mut Group,
    name: &str,
    model: M,
    batch: &Batch<M::Input>,
    device: &Device,
) {
    let (_, posterior, _) = cnn_workload(device);
    let ens = ModuleEnsemble::new(posterior, vec![model], 1).unwrap();
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-6, 1.0), ens).unwrap();
    g.bench_function(name, |b| b.iter(|| s.step(batch).unwrap().energies[0]));
}

fn steps(c: &mut Criterion<Clock>) {
    for choice in [DeviceChoice::Flex, DeviceChoice::Ndarray] {
        let Ok(Some(device)) = choice.device() else {
            continue;
        };
        if choice == DeviceChoice::Ndarray && std::env::var("SGMCMC_BENCH_NDARRAY_CNN").is_err() {
            continue;
        }
        let ad = device.autodiff();
        let (cnn, _, _) = cnn_workload(&ad);
        for b in [256usize, 2500] {
            let batch = images(b, &ad);
            let mut g = group(c, &format!("step/{choice}/b{b}"), b > 1000);
            step(&mut g, "im2col", cnn.init(&ad), &batch, &ad);
            let reference = Reference { cnn: cnn.init(&ad) };
            step(&mut g, "reference", reference, &batch, &ad);
            g.finish();
        }
    }
}

/// The network's pieces on `device` at batch `b`, each as a closure returning a 4-D tensor.
type Piece = (&'static str, Box<dyn Fn() -> Tensor<4>>);

fn make_pieces(b: usize, device: &Device, train: bool) -> Vec<Piece> {
    let normal = Distribution::Normal(0.0, 1.0);
    let conv1 = Conv2dConfig::new([1, 32], [5, 5]).init(device);
    let conv2 = Conv2dConfig::new([32, 64], [5, 5]).init(device);
    let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
    let fc1 = LinearConfig::new(1024, 50).init(device);
    let input = |shape: [usize; 4]| {
        let t = Tensor::<4>::random(shape, normal, device);
        if train { t.require_grad() } else { t }
    };
    let x = Tensor::<4>::random([b, 1, 28, 28], normal, device);
    let (h1, a1, f) = (
        input([b, 32, 12, 12]),
        input([b, 32, 24, 24]),
        input([b, 1024, 1, 1]),
    );
    let x_nhwc = x.clone().reshape([b, 28, 28, 1]);
    let h1_nhwc = input([b, 12, 12, 32]);
    let (w1, b1) = (conv1.weight.val(), conv1.bias.as_ref().map(|p| p.val()));
    let (w2, b2) = (conv2.weight.val(), conv2.bias.as_ref().map(|p| p.val()));
    let block2 = {
        let (conv2, pool, h1) = (conv2.clone(), pool.clone(), h1.clone());
        move || pool.forward(activation::relu(conv2.forward(h1.clone())))
    };
    let (x1, x2, x3, h2, h3) = (x.clone(), x_nhwc.clone(), x_nhwc, h1_nhwc.clone(), h1_nhwc);
    let (w1b, b1b, w2b, b2b) = (w1.clone(), b1.clone(), w2.clone(), b2.clone());
    vec![
        ("burn/conv1", Box::new(move || conv1.forward(x1.clone()))),
        ("burn/conv2", Box::new(move || conv2.forward(h1.clone()))),
        ("burn/pool1", Box::new(move || pool.forward(a1.clone()))),
        ("burn/block2", Box::new(block2)),
        (
            "fc1",
            Box::new(move || {
                fc1.forward(f.clone().reshape([b, 1024]))
                    .reshape([b, 50, 1, 1])
            }),
        ),
        (
            "im2col/conv1",
            Box::new(move || conv2d_nhwc(x2.clone(), w1.clone(), b1.clone()).unwrap()),
        ),
        (
            "im2col/block1",
            Box::new(move || conv_pool_relu_nhwc(x3.clone(), w1b.clone(), b1b.clone()).unwrap()),
        ),
        (
            "im2col/conv2",
            Box::new(move || conv2d_nhwc(h2.clone(), w2.clone(), b2.clone()).unwrap()),
        ),
        (
            "im2col/block2",
            Box::new(move || conv_pool_relu_nhwc(h3.clone(), w2b.clone(), b2b.clone()).unwrap()),
        ),
    ]
}

/// Forward alone (on the plain device: no graph) and forward + backward of the sum (on the
/// autodiff device) of each piece.
fn pieces(c: &mut Criterion<Clock>) {
    let Ok(Some(device)) = DeviceChoice::Flex.device() else {
        return;
    };
    for b in [256usize, 2500] {
        let mut g = group(c, &format!("pieces/flex/b{b}"), b > 1000);
        let plain = make_pieces(b, &device, false);
        let trained = make_pieces(b, &device.clone().autodiff(), true);
        for ((name, fwd), (_, both)) in plain.iter().zip(&trained) {
            g.bench_function(format!("{name}/fwd"), |bch| {
                bch.iter(|| fwd().sum().into_scalar::<f32>())
            });
            g.bench_function(format!("{name}/fwd_bwd"), |bch| {
                bch.iter(|| both().sum().backward())
            });
        }
        g.finish();
    }
}

fn config() -> Criterion<Clock> {
    Criterion::default().with_measurement(Clock {
        cpu: std::env::var("SGMCMC_BENCH_CPU").is_ok(),
    })
}

criterion_group! {
    name = benches;
    config = config();
    targets = steps, pieces
}
criterion_main!(benches);
