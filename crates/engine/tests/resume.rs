//! A run stopped at a checkpoint and resumed into fresh objects writes the same bytes and
//! reaches the same state as the uninterrupted run, for every registry family on host chains
//! (kernel state, contour theta, replica ladder, swap streams, variance refreshes) and for
//! network chains (module parameters, kernel state, observers' files and averages).

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use sgmcmc_engine::observers::{MetricsCsv, ModelAverage, OnSample, SampleSaver};
use sgmcmc_engine::{Checkpoint, Checkpoints, Kept, Repeat, Run, SavedPosterior, init};
use sgmcmc_models::{ModelPosterior, nll_fn};
use sgmcmc_samplers::ensemble::{HostEnsemble, HostPoints, ModuleEnsemble};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc_samplers::sampler::Sampler;
use sgmcmc_testfunctions::by_name;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sgmcmc-engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn settings(name: &str, lr: f64) -> SamplerSettings {
    let mut s = SamplerSettings {
        lr,
        ..SamplerSettings::named(name)
    };
    s.contour.u_min = Some(-1.0);
    s.contour.du = 0.5;
    s.contour.bins = 40;
    s.replica.variance_period = 7;
    s.replica.variance_draws = 3;
    s.replica.lr_max = 4.0 * lr;
    s.annealing.steps_per_epoch = 10;
    s.cyclical.cycles = 4;
    s
}

/// Host chains of the 2-D 9-mode target with injected noise.
fn host(name: &str, chains: usize, steps: u64) -> AnySampler<HostEnsemble> {
    let target = by_name("nine-mode").unwrap();
    let starts: Vec<Vec<f64>> = (0..chains).map(|c| vec![0.1 * c as f64, -0.2]).collect();
    let ens = HostEnsemble::new(target, &starts, 5).unwrap();
    let ctx = BuildContext::steps(steps).chains(chains);
    settings(name, 3e-3)
        .spec(&ctx)
        .unwrap()
        .build(ens, 5)
        .unwrap()
}

/// Runs `steps` steps (stopping at `stop` if given, resuming from `resume`), with a metrics
/// file and a collector of the kept points; returns the collected points.
fn run_host(
    s: &mut AnySampler<HostEnsemble>,
    steps: u64,
    dir: &Path,
    stop: Option<u64>,
    resume: Option<Checkpoint>,
) -> Vec<Vec<f64>> {
    let mut seen: Vec<Vec<f64>> = Vec::new();
    let mut collect = OnSample::new(|k: &Kept<HostPoints>| {
        for &c in k.chains {
            let mut row = k.points.chain(c).to_vec();
            row.push(k.log_weights[c]);
            seen.push(row);
        }
    });
    let mut metrics = MetricsCsv::new(dir.join("metrics.csv"), 3);
    let mut run = Run::steps(steps)
        .burn_in(10)
        .thin(4)
        .observe(&mut collect)
        .observe(&mut metrics)
        .checkpoints(Checkpoints::new(dir.join("checkpoint.cbor"), 25));
    if let Some(n) = stop {
        run = run.stop_after(n);
    }
    if let Some(c) = resume {
        run = run.resume(c);
    }
    run.run(s, &mut Repeat(())).unwrap();
    seen
}

#[test]
fn every_family_resumes_bit_for_bit_on_host_chains() {
    let steps = 200;
    for (name, chains) in [
        ("sgld", 1),
        ("sghmc", 2),
        ("psgld", 1),
        ("sgnht", 1),
        ("cycsgld", 1),
        ("annealed-sgld", 1),
        ("csgld", 1),
        ("icsgld", 2),
        ("awsgld", 1),
        ("resgld", 2),
        ("deo-sgd", 4),
    ] {
        let (a, b) = (tmp(&format!("{name}-whole")), tmp(&format!("{name}-parts")));
        let mut whole = host(name, chains, steps);
        let all = run_host(&mut whole, steps, &a, None, None);
        let mut first = host(name, chains, steps);
        let head = run_host(&mut first, steps, &b, Some(90), None);
        // A fresh sampler and fresh observers continue from the checkpoint at step 90.
        let c = Checkpoint::read(&b.join("checkpoint.cbor")).unwrap();
        assert_eq!(c.next_step, 90, "{name}");
        let mut second = host(name, chains, steps);
        let tail = run_host(&mut second, steps, &b, None, Some(c));
        assert_eq!(
            all,
            [head, tail].concat(),
            "{name}: kept points and weights"
        );
        assert_eq!(
            std::fs::read(a.join("metrics.csv")).unwrap(),
            std::fs::read(b.join("metrics.csv")).unwrap(),
            "{name}: metrics.csv"
        );
        assert_eq!(
            whole.state().unwrap(),
            second.state().unwrap(),
            "{name}: final state"
        );
        for d in [a, b] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[test]
fn a_checkpoint_of_another_sampler_is_refused_and_leaves_it_untouched() {
    let dir = tmp("refuse");
    let mut s = host("icsgld", 2, 50);
    run_host(&mut s, 50, &dir, Some(20), None);
    let c = Checkpoint::read(&dir.join("checkpoint.cbor")).unwrap();
    let mut other = host("resgld", 2, 50);
    let before = other.state().unwrap();
    let err = other.restore(c.sampler.clone()).unwrap_err();
    assert!(err.to_string().contains("contour"), "{err}");
    assert_eq!(other.state().unwrap(), before);
    let mut fewer = host("icsgld", 3, 50);
    assert!(fewer.restore(c.sampler.clone()).is_err());
    // A run of another length refuses the checkpoint.
    let mut again = host("icsgld", 2, 60);
    let err = Run::steps(60)
        .resume(c)
        .run(&mut again, &mut Repeat(()))
        .unwrap_err();
    assert!(err.to_string().contains("50 steps"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `y = 2 x - 1 + 0.1 noise` on 64 points; the batches are the whole set.
#[derive(Clone)]
struct Xy(Tensor<2>, Tensor<2>);

fn data(device: &Device) -> Xy {
    let x: Vec<f32> = (0..64).map(|i| i as f32 / 32.0 - 1.0).collect();
    let y: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| 2.0 * v - 1.0 + 0.1 * ((i * 37 % 11) as f32 / 5.0 - 1.0))
        .collect();
    Xy(
        Tensor::from_data(TensorData::new(x, [64, 1]), device),
        Tensor::from_data(TensorData::new(y, [64, 1]), device),
    )
}

type Posterior = ModelPosterior<
    sgmcmc_models::nll::NllFn<fn(&Linear, &Xy) -> Tensor<1>, Xy>,
    sgmcmc_models::Gaussian,
>;

fn gaussian_nll(m: &Linear, b: &Xy) -> Tensor<1> {
    let r = m.forward(b.0.clone()) - b.1.clone();
    r.powi_scalar(2).mul_scalar(50.0).sum_dim(1).squeeze_dim(1)
}

fn network(
    name: &str,
    chains: usize,
    steps: u64,
    device: &Device,
) -> AnySampler<ModuleEnsemble<Linear, Posterior>> {
    let posterior = ModelPosterior::new(nll_fn(gaussian_nll as fn(&Linear, &Xy) -> Tensor<1>), 64);
    let models = init::chains(device, 3, chains, || LinearConfig::new(1, 1).init(device));
    let ens = ModuleEnsemble::new(posterior, models, 3).unwrap();
    let mut s = settings(name, 5e-5);
    s.contour.u_min = Some(0.0);
    s.contour.du = 20.0;
    s.replica.variance_period = 0;
    s.spec(&BuildContext::steps(steps).chains(chains))
        .unwrap()
        .build(ens, 3)
        .unwrap()
}

fn predict(m: &Linear, x: &Tensor<2>) -> Result<Vec<f64>, String> {
    m.valid()
        .forward(x.clone())
        .into_data()
        .try_into_vec::<f32>()
        .map(|v| v.into_iter().map(f64::from).collect())
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn network_chains_resume_bit_for_bit_and_their_saved_posterior_predicts_as_the_run() {
    let device = Device::flex().autodiff();
    let batch = data(&device);
    let x = batch.0.clone().inner();
    let steps = 120;
    for (name, chains) in [("sgld", 1), ("icsgld", 2), ("resgld", 2), ("deo-sgd", 4)] {
        let run = |dir: &Path, stop: Option<u64>, resume: Option<Checkpoint>| {
            let mut s = network(name, chains, steps, &device);
            let mut avg = ModelAverage::new(|m: &Linear| predict(m, &x));
            let mut saver = SampleSaver::new(dir.join("samples"));
            let mut r = Run::steps(steps)
                .burn_in(30)
                .thin(10)
                .observe(&mut avg)
                .observe(&mut saver)
                .checkpoints(Checkpoints::new(dir.join("checkpoint.cbor"), 40));
            if let Some(n) = stop {
                r = r.stop_after(n);
            }
            if let Some(c) = resume {
                r = r.resume(c);
            }
            r.run(&mut s, &mut Repeat(Xy(batch.0.clone(), batch.1.clone())))
                .unwrap();
            (s.state().unwrap(), avg.mean(), avg.models())
        };
        let (a, b) = (tmp(&format!("net-{name}-a")), tmp(&format!("net-{name}-b")));
        let whole = run(&a, None, None);
        run(&b, Some(70), None);
        let c = Checkpoint::read(&b.join("checkpoint.cbor")).unwrap();
        let resumed = run(&b, None, Some(c));
        assert_eq!(whole, resumed, "{name}: state and model average");
        assert_eq!(
            std::fs::read(a.join("samples/index.csv")).unwrap(),
            std::fs::read(b.join("samples/index.csv")).unwrap(),
            "{name}: saved samples"
        );
        // The saved posterior's average equals the run's own to the last bit.
        let saved = SavedPosterior::open(&a.join("samples")).unwrap();
        assert_eq!(saved.len(), whole.2, "{name}");
        let template = LinearConfig::new(1, 1).init(&device.clone().inner());
        let again = saved.average(&template, |m| predict(m, &x)).unwrap();
        let (run_mean, saved_mean) = (whole.1.unwrap(), again.mean().unwrap());
        let worst = run_mean
            .iter()
            .zip(&saved_mean)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 1e-6, "{name}: saved posterior differs by {worst}");
        for d in [a, b] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A linear model behind a BatchNorm layer: running statistics updated by every forward pass.
#[derive(Module, Debug)]
struct Normed {
    bn: BatchNorm,
    linear: Linear,
}

fn normed_nll(m: &Normed, b: &Xy) -> Tensor<1> {
    gaussian_nll(&m.linear, &Xy(m.bn.forward(b.0.clone()), b.1.clone()))
}

/// The final state (parameters, kernel state, running statistics) of 3 SGHMC chains of
/// `make()` networks after 50 steps, stepped on pool threads or one after another.
fn final_state<M: Module>(
    make: impl Fn() -> M,
    nll: fn(&M, &Xy) -> Tensor<1>,
    lr: f64,
    parallel: bool,
) -> sgmcmc_samplers::checkpoint::SamplerState {
    let device = Device::flex().autodiff();
    let batch = data(&device);
    let posterior = ModelPosterior::new(nll_fn(nll), 64);
    let models = init::chains(&device, 9, 3, make);
    let mut ens = ModuleEnsemble::new(posterior, models, 9).unwrap();
    if !parallel {
        ens = ens.sequential();
    }
    let mut s = settings("sghmc", lr)
        .spec(&BuildContext::steps(50).chains(3))
        .unwrap()
        .build(ens, 9)
        .unwrap();
    // Parallel chains step on two pools in turn (25 steps each), so every chain's forward
    // passes move to other threads halfway.
    let mut batches = Repeat(Xy(batch.0.clone(), batch.1.clone()));
    for half in 1..=2 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            Run::steps(50)
                .stop_after(25 * half)
                .run(&mut s, &mut batches)
                .unwrap()
        });
    }
    s.state().unwrap()
}

#[test]
fn parallel_network_chains_give_the_bits_of_sequential_ones() {
    let device = Device::flex().autodiff();
    let linear = || LinearConfig::new(1, 1).init(&device);
    let gaussian = gaussian_nll as fn(&Linear, &Xy) -> Tensor<1>;
    assert_eq!(
        final_state(linear, gaussian, 1e-4, true),
        final_state(linear, gaussian, 1e-4, false)
    );
    // With BatchNorm, whose running statistics burn records per thread: the chains move
    // between pool threads from step to step, and the statistics must not notice.
    let normed = || Normed {
        bn: BatchNormConfig::new(1).init(&device),
        linear: LinearConfig::new(1, 1).init(&device),
    };
    let (a, b) = (
        final_state(normed, normed_nll, 1e-5, true),
        final_state(normed, normed_nll, 1e-5, false),
    );
    assert_eq!(a, b);
}
