//! The kernels as burn optimizers (`samplers::optim`): in a burn training loop (`ModuleOptimizer`,
//! a mean loss, burn's learning rate) each one walks the chain the library's own kernel walks
//! on the full-data energy from the same noise, and burn's optimizer and scheduler records
//! resume it exactly.
//!
//! The reference chain runs `Kernel::update` in `f64` on the host with `lr = eta / N` and the
//! full-data gradient `N (grad L + wd x)`; the optimizer runs in `f32` through autodiff. Over
//! 40 steps of a contracting chain (`lr a <= 0.1`) their difference is `f32` rounding: we
//! allow `1e-4 (1 + |x|)`, and measured below `2e-7`.

use sgmcmc::burn::lr_scheduler::LrScheduler;
use sgmcmc::burn::module::{Module, Param};
use sgmcmc::burn::optim::{GradientsParams, ModuleOptimizer};
use sgmcmc::burn::tensor::{Device, Tensor, TensorData};
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::optim::schedule::{AnnealingLrSchedulerConfig, CyclicalLrSchedulerConfig};
use sgmcmc::samplers::optim::{PsgldConfig, SghmcConfig, SgldConfig, SgnhtConfig, noise_stream};

/// Two parameters, visited by burn in field order: streams 0 and 1.
#[derive(Module, Debug)]
struct Point {
    w: Param<Tensor<2>>,
    b: Param<Tensor<1>>,
}

const N: f64 = 200.0;
/// Curvatures of the energy `U = sum a_i x_i^2 / 2` per element of `w` (2 x 3) then `b` (4).
const A: [f64; 10] = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 0.8, 1.2, 1.6, 2.4];
const START: [f64; 10] = [1.0, -0.5, 0.3, 2.0, -1.5, 0.7, 0.2, -0.9, 1.1, -0.4];
const WD: f64 = 2e-3;

fn point(device: &Device) -> Point {
    let f = |v: &[f64], shape: Vec<usize>| {
        let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        TensorData::new(v, shape)
    };
    Point {
        w: Param::from_tensor(Tensor::from_data(f(&START[..6], vec![2, 3]), device)),
        b: Param::from_tensor(Tensor::from_data(f(&START[6..], vec![4]), device)),
    }
}

fn values(p: &Point) -> Vec<f64> {
    let host = |d: TensorData| d.convert::<f64>().try_to_vec::<f64>().unwrap();
    [host(p.w.val().into_data()), host(p.b.val().into_data())].concat()
}

/// The mean loss `L = U / N` whose full-data energy is `U = sum a_i x_i^2 / 2`.
fn mean_loss(p: &Point, device: &Device) -> Tensor<1> {
    let a = |r: std::ops::Range<usize>, shape: Vec<usize>| {
        let v: Vec<f32> = A[r].iter().map(|&x| (x / (2.0 * N)) as f32).collect();
        TensorData::new(v, shape)
    };
    let aw: Tensor<2> = Tensor::from_data(a(0..6, vec![2, 3]), device);
    let ab: Tensor<1> = Tensor::from_data(a(6..10, vec![4]), device);
    let w = p.w.val();
    let b = p.b.val();
    (w.clone() * w * aw).sum() + (b.clone() * b * ab).sum()
}

/// `steps` optimizer steps at burn learning rates `etas(k)`.
fn run(
    mut p: Point,
    optim: &mut ModuleOptimizer,
    etas: &mut dyn FnMut() -> f64,
    steps: usize,
    device: &Device,
) -> Point {
    for _ in 0..steps {
        let grads = GradientsParams::from_grads(mean_loss(&p, device).backward(), &p);
        p = optim.step(etas(), p, grads);
    }
    p
}

/// The library's kernel in `f64` on the full-data energy: parameter `p`'s noise at step `k`
/// from `noise_stream(seed, p, k)`, one whole-parameter draw per call of the kernel's noise.
fn reference(kernel: &Kernel, eta: f64, tau: f64, seed: u64, steps: u64) -> Vec<f64> {
    let blocks = [0..6, 6..10];
    let mut x = START.to_vec();
    let mut state = vec![vec![0.0; kernel.state_slots()]; 10];
    let c = kernel
        .coefficients(&sgmcmc::samplers::kernel::StepSize::new(eta / N, tau))
        .unwrap();
    for k in 0..steps {
        for (p, block) in blocks.iter().enumerate() {
            let mut rng = noise_stream(seed, p as u64, k);
            let mut draws: Vec<Vec<f64>> = Vec::new();
            for (j, i) in block.clone().enumerate() {
                let mut call = 0;
                let noise = || {
                    if call == draws.len() {
                        draws.push((0..block.len()).map(|_| rng.normal()).collect());
                    }
                    call += 1;
                    draws[call - 1][j]
                };
                let g = A[i] * x[i] + N * WD * x[i];
                let refresh = kernel.refreshes_at(k);
                x[i] = kernel.update(x[i], g, &mut state[i], noise, &c, refresh);
            }
        }
    }
    x
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / (1.0 + w.abs()))
        .fold(0.0f64, f64::max);
    assert!(
        worst < 1e-4,
        "{what}: off by {worst}\n got {got:?}\nwant {want:?}"
    );
    assert!(got != START, "{what}: did not move");
}

fn optimizers() -> Vec<(Kernel, ModuleOptimizer)> {
    let seed = 17;
    vec![
        (
            Kernel::Sgld,
            SgldConfig::new(N as usize)
                .with_temperature(0.7)
                .with_weight_decay(WD)
                .with_seed(seed)
                .init()
                .unwrap(),
        ),
        (
            Kernel::Sghmc {
                mu: 0.8,
                noise_estimate: 5.0,
                resample_every: 7,
            },
            SghmcConfig::new(N as usize)
                .with_momentum(0.8)
                .with_noise_estimate(5.0)
                .with_resample_every(7)
                .with_temperature(0.7)
                .with_weight_decay(WD)
                .with_seed(seed)
                .init()
                .unwrap(),
        ),
        (
            Kernel::Psgld {
                alpha: 0.9,
                lambda: 1e-3,
            },
            PsgldConfig::new(N as usize)
                .with_alpha(0.9)
                .with_lambda(1e-3)
                .with_temperature(0.7)
                .with_weight_decay(WD)
                .with_seed(seed)
                .init()
                .unwrap(),
        ),
        (
            Kernel::Sgnht { friction: 0.2 },
            SgnhtConfig::new(N as usize)
                .with_friction(0.2)
                .with_temperature(0.7)
                .with_weight_decay(WD)
                .with_seed(seed)
                .init()
                .unwrap(),
        ),
    ]
}

#[test]
fn each_optimizer_walks_its_kernels_chain_from_the_same_noise() {
    let device = Device::flex().autodiff();
    let eta = 0.03 * N; // lr = 0.03: lr a <= 0.09
    for (kernel, mut optim) in optimizers() {
        let p = run(point(&device), &mut optim, &mut || eta, 40, &device);
        let want = reference(&kernel, eta, 0.7, 17, 40);
        assert_close(&values(&p), &want, kernel.name());
    }
}

#[test]
fn temperature_zero_sgld_is_burns_sgd() {
    let device = Device::flex().autodiff();
    let eta = 0.02 * N;
    let mut sgld = SgldConfig::new(N as usize)
        .with_temperature(0.0)
        .with_weight_decay(WD)
        .init()
        .unwrap();
    let mut sgd = sgmcmc::burn::optim::SgdConfig::new()
        .with_weight_decay(Some(sgmcmc::burn::optim::decay::WeightDecayConfig::new(
            WD as f32,
        )))
        .init();
    let a = run(point(&device), &mut sgld, &mut || eta, 30, &device);
    let b = run(point(&device), &mut sgd, &mut || eta, 30, &device);
    assert_close(&values(&a), &values(&b), "SGLD at tau 0 against Sgd");
}

#[test]
fn burns_records_resume_the_chain_and_the_schedule_exactly() {
    let device = Device::flex().autodiff();
    let schedule = || {
        CyclicalLrSchedulerConfig::new(0.05 * N, 30, 2)
            .init()
            .unwrap()
    };
    for (kernel, mut optim) in optimizers() {
        let fresh = optim.clone();
        let mut lr = schedule();
        let p = run(point(&device), &mut optim, &mut || lr.step(), 12, &device);
        let bytes = optim.into_bytes().unwrap();
        let mut resumed = fresh.from_bytes(bytes).unwrap();
        let mut lr2 = schedule();
        lr2.load_record(lr.to_record());
        let q = p.clone();
        let straight = run(p, &mut optim, &mut || lr.step(), 12, &device);
        let again = run(q, &mut resumed, &mut || lr2.step(), 12, &device);
        assert_eq!(values(&straight), values(&again), "{}", kernel.name());
    }
}

#[test]
fn the_schedulers_give_the_libraries_schedules() {
    // Cyclical: K = 10, M = 2, C = 5; eta_k = 1/2 (cos(pi (k mod 5) / 5) + 1).
    let mut c = CyclicalLrSchedulerConfig::new(1.0, 10, 2).init().unwrap();
    for k in 0..10u32 {
        let want = 0.5 * ((std::f64::consts::PI * f64::from(k % 5) / 5.0).cos() + 1.0);
        assert!((c.step() - want).abs() < 1e-15, "cyclical step {k}");
    }
    // Annealing: 3 steps an epoch, held for epoch 0 and 1, then / 2 per epoch.
    let mut a = AnnealingLrSchedulerConfig::new(0.8, 2.0, 3)
        .with_hold_epochs(1)
        .init()
        .unwrap();
    let got: Vec<f64> = (0..12).map(|_| a.step()).collect();
    let want = [0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2, 0.2];
    assert_eq!(got, want);
}

#[test]
fn bad_settings_are_refused_with_the_field_named() {
    let refused = |e: sgmcmc::samplers::error::SamplerError, field: &str| {
        assert!(e.to_string().contains(field), "{e}");
    };
    refused(SgldConfig::new(0).build().unwrap_err(), "data_size");
    refused(
        SgldConfig::new(10)
            .with_temperature(f64::NAN)
            .build()
            .unwrap_err(),
        "temperature",
    );
    refused(
        SgldConfig::new(10)
            .with_weight_decay(-1.0)
            .build()
            .unwrap_err(),
        "weight_decay",
    );
    refused(
        SghmcConfig::new(10).with_momentum(1.0).build().unwrap_err(),
        "mu",
    );
    refused(
        PsgldConfig::new(10).with_lambda(0.0).build().unwrap_err(),
        "lambda",
    );
    refused(
        SgnhtConfig::new(10).with_friction(1.5).build().unwrap_err(),
        "friction",
    );
    refused(
        CyclicalLrSchedulerConfig::new(0.1, 10, 0)
            .init()
            .unwrap_err(),
        "cycles",
    );
    refused(
        AnnealingLrSchedulerConfig::new(0.1, 0.0, 3)
            .init()
            .unwrap_err(),
        "factor",
    );
}
