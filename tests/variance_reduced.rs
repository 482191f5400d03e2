//! The library's variance-reduced replica exchange on the thesis' data posterior: the swap
//! correction estimates half the variance of the *paired* energy difference on shared
//! minibatches, and the sampler resumes bit for bit.

use sgmcmc::samplers::control::{Ladder, Smoothing, SwapScheme};
use sgmcmc::samplers::density::data_mixture::MixtureData;
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::rng::ChainRng;
use sgmcmc::samplers::sampler::{
    ControlSettings, ReplicaConfig, Sampler, SwapRule, VarianceReduced, VrConfig, VrRefresh,
};

const N: usize = 10_000;
const BATCH: usize = 100;

/// reSGLD x 2 at temperatures `taus`, both rungs at `lr`, F = 1, `sigma2_hat` starting at 0.
fn resgld(taus: [f64; 2], lr: f64) -> ReplicaConfig {
    ReplicaConfig {
        kernel: Kernel::Sgld,
        ladder: Ladder::tempered(taus.to_vec(), vec![lr, lr]).unwrap(),
        scheme: SwapScheme::Adjacent,
        rule: SwapRule::Metropolis {
            correction: 1.0,
            initial_variance: 0.0,
            smoothing: Smoothing::RunningMean,
            cooling: 0,
        },
        refresh: None,
        lr_scale: None,
    }
}

fn sampler(
    data: &MixtureData,
    lr: f64,
    control: Option<ControlSettings>,
    every: u64,
) -> VarianceReduced<HostEnsemble<MixtureData>> {
    let cfg = VrConfig {
        replica: resgld([10.0, 1000.0], lr),
        control,
        refresh: Some(VrRefresh { every, draws: 10 }),
    };
    let ens = HostEnsemble::new(data.clone(), &[vec![-4.0], vec![24.5]], 5).unwrap();
    let d = data.clone();
    let batches = Box::new(move |k: u64, j: usize| {
        d.minibatch(BATCH, &mut ChainRng::new(77, k * 64 + j as u64))
    });
    VarianceReduced::new(cfg, ens, batches, 5).unwrap()
}

fn run(s: &mut VarianceReduced<HostEnsemble<MixtureData>>, data: &MixtureData, steps: u64) {
    let mut rng = ChainRng::new(9, s.steps_done());
    for _ in 0..steps {
        let b = data.minibatch(BATCH, &mut rng);
        s.step(&b).unwrap();
    }
}

#[test]
fn the_correction_is_half_the_variance_of_the_paired_difference() {
    let data = MixtureData::thesis(N, 1983).unwrap();
    // Chains frozen in place (lr 1e-14 moves them < 1e-6) at near-mirrored points, so the
    // exact answer is a finite-population variance: with `D_i = L({i} | x_1) - L({i} | x_2)`
    // (the prior cancels in the variance), a minibatch of n indices drawn with replacement has
    // `Var(L(B | x_1) - L(B | x_2)) = Var_pop(D) / n`, and `sigma2 = Var_pop(D) / (2 n)`.
    let mut s = sampler(&data, 1e-14, None, 2);
    let (x1, x2) = (-4.0, 24.5);
    let d: Vec<f64> = (0..N)
        .map(|i| data.batch_energy_grad(x1, &[i]).0 - data.batch_energy_grad(x2, &[i]).0)
        .collect();
    let mean = d.iter().sum::<f64>() / N as f64;
    let exact = d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / N as f64 / (2 * BATCH) as f64;
    // One chain's energy alone varies far more: what the estimate was before pairing.
    let one = |x: f64| {
        let e: Vec<f64> = (0..N).map(|i| data.batch_energy_grad(x, &[i]).0).collect();
        let m = e.iter().sum::<f64>() / N as f64;
        e.iter().map(|v| (v - m).powi(2)).sum::<f64>() / N as f64 / BATCH as f64
    };
    let unpaired = 0.5 * (one(x1) + one(x2));
    run(&mut s, &data, 2000);
    let refreshes = s.reduction_stats().refreshes as f64;
    let sigma2 = s.replica().variance().unwrap().pair(0);
    // Each refresh's sample variance of 10 near-Gaussian differences has relative sd
    // sqrt(2 / 9) = 0.47; the running mean over R refreshes has relative se 0.47 / sqrt(R)
    // (R ~ 2000 / 2 = 1000: 1.5%, heavier tails allowed for by the 4.5 se band: 7%).
    let tol = 4.5 * (2.0f64 / 9.0).sqrt() / refreshes.sqrt();
    println!(
        "sigma2 {sigma2:.1}, exact {exact:.1} (rel tol {tol:.3}, {refreshes} refreshes), \
         one chain's variance {unpaired:.1}"
    );
    assert!(refreshes > 500.0, "{refreshes}");
    assert!((sigma2 / exact - 1.0).abs() < tol, "{sigma2} vs {exact}");
    // The unpaired estimate, the wrong answer, lies far outside the band.
    assert!((unpaired / exact - 1.0).abs() > 10.0 * tol, "{unpaired}");
}

#[test]
fn control_variates_shrink_the_paired_variance_and_a_resumed_run_is_identical() {
    let data = MixtureData::thesis(N, 1983).unwrap();
    let control = Some(ControlSettings {
        period: 10,
        coefficient: -1.0,
        adapt: None,
    });
    let mut plain = sampler(&data, 1e-6, None, 50);
    let mut vr = sampler(&data, 1e-6, control, 50);
    run(&mut plain, &data, 600);
    run(&mut vr, &data, 600);
    let [_, _, p_pair, _] = plain.reduction_stats().means();
    let [_, _, vr_plain_pair, vr_used_pair] = vr.reduction_stats().means();
    println!("paired sigma2: plain {p_pair:.1}, VR plain {vr_plain_pair:.1} -> {vr_used_pair:.2}");
    // Snapshots 10 steps old at lr 1e-6: the control variate removes > 90% of the paired
    // variance (measured ~200x in `sgmcmc vr-resgld`).
    assert!(
        vr_used_pair < 0.1 * vr_plain_pair,
        "{vr_used_pair} vs {vr_plain_pair}"
    );

    // Checkpoint at step 600, run on; a sampler restored from the checkpoint must repeat it.
    let state = vr.state().unwrap();
    run(&mut vr, &data, 400);
    let mut resumed = sampler(&data, 1e-6, control, 50);
    resumed.restore(state).unwrap();
    run(&mut resumed, &data, 400);
    assert_eq!(vr.ensemble().positions(), resumed.ensemble().positions());
    assert_eq!(vr.reduction_stats(), resumed.reduction_stats());
    assert_eq!(vr.state().unwrap(), resumed.state().unwrap());
    // A checkpoint without the reduction state is refused.
    let plain_state = plain.replica().state().unwrap();
    assert!(resumed.restore(plain_state).is_err());
}

mod modules {
    //! The same sampler over burn module chains, with the snapshots' exact energies from a
    //! pass over the data.

    use sgmcmc::burn::nn::{Linear, LinearConfig};
    use sgmcmc::burn::tensor::{Device, Tensor, TensorData};
    use sgmcmc::engine::init;
    use sgmcmc::models::{ModelPosterior, nll_fn};
    use sgmcmc::samplers::ensemble::ModuleEnsemble;

    use super::*;

    /// Rows `16 b .. 16 b + 16` of `y = 2 x - 1 + noise`, 64 rows in all.
    #[derive(Clone)]
    struct Xy(Tensor<2>, Tensor<2>);

    fn rows(b: usize, device: &Device) -> Xy {
        let x: Vec<f32> = (16 * b..16 * b + 16)
            .map(|i| i as f32 / 32.0 - 1.0)
            .collect();
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(i, v)| 2.0 * v - 1.0 + 0.3 * ((i * 37 % 11) as f32 / 5.0 - 1.0))
            .collect();
        Xy(
            Tensor::from_data(TensorData::new(x, [16, 1]), device),
            Tensor::from_data(TensorData::new(y, [16, 1]), device),
        )
    }

    fn nll(m: &Linear, b: &Xy) -> Tensor<1> {
        let r = m.forward(b.0.clone()) - b.1.clone();
        r.powi_scalar(2).mul_scalar(50.0).sum_dim(1).squeeze_dim(1)
    }

    type Post = ModelPosterior<
        sgmcmc::models::nll::NllFn<fn(&Linear, &Xy) -> Tensor<1>, Xy>,
        sgmcmc::models::Gaussian,
    >;

    /// reSGLD x 2 at taus 1 and 10 and `lr`, snapshots every 5 steps when `control`, a
    /// refresh from 4 draws every 10 steps.
    fn vr_config(lr: f64, control: bool) -> VrConfig {
        VrConfig {
            replica: resgld([1.0, 10.0], lr),
            control: control.then_some(ControlSettings {
                period: 5,
                coefficient: -1.0,
                adapt: None,
            }),
            refresh: Some(VrRefresh {
                every: 10,
                draws: 4,
            }),
        }
    }

    fn sampler(device: &Device) -> VarianceReduced<ModuleEnsemble<Linear, Post>> {
        sampler_of(device, false)
    }

    /// The sampler, its chains stepped (and their snapshots scored) one after another when
    /// `sequential`, else on the pool's threads.
    fn sampler_of(
        device: &Device,
        sequential: bool,
    ) -> VarianceReduced<ModuleEnsemble<Linear, Post>> {
        let posterior = ModelPosterior::new(nll_fn(nll as fn(&Linear, &Xy) -> Tensor<1>), 64);
        let models = init::chains(device, 3, 2, || LinearConfig::new(1, 1).init(device));
        let mut ens = ModuleEnsemble::new(posterior, models, 3).unwrap();
        if sequential {
            ens = ens.sequential();
        }
        let cfg = vr_config(1e-6, true);
        let (d1, d2) = (device.clone(), device.clone());
        VarianceReduced::new(
            cfg,
            ens,
            Box::new(move |k, j| rows((k as usize + j) % 4, &d1)),
            3,
        )
        .unwrap()
        .with_full_pass(Box::new(move |i| (i < 4).then(|| rows(i, &d2))))
    }

    fn run(s: &mut VarianceReduced<ModuleEnsemble<Linear, Post>>, steps: u64, device: &Device) {
        for _ in 0..steps {
            let b = rows(s.steps_done() as usize % 4, device);
            s.step(&b).unwrap();
        }
    }

    #[test]
    fn module_chains_reduce_the_variance_and_resume_exactly() {
        let device = Device::flex().autodiff();
        let mut s = sampler(&device);
        run(&mut s, 120, &device);
        let [_, _, plain, used] = s.reduction_stats().means();
        println!("module chains: paired sigma2 plain {plain:.3}, VR {used:.5}");
        // At lr 1e-6 a snapshot at most 4 steps old barely differs from its chain: the control
        // variate leaves a small fraction of the paired variance (measured 1/700).
        assert!(used < 0.1 * plain, "{used} vs {plain}");
        let state = s.state().unwrap();
        run(&mut s, 30, &device);
        let mut resumed = sampler(&device);
        resumed.restore(state).unwrap();
        run(&mut resumed, 30, &device);
        assert_eq!(s.state().unwrap(), resumed.state().unwrap());
    }

    /// Snapshot energies (every step's control variate and the full passes) scored on two
    /// pool threads, one module per task, give the chains of the sequential scoring exactly.
    #[test]
    fn snapshots_scored_on_pool_threads_equal_the_sequential_scoring() {
        let device = Device::flex().autodiff();
        let states = sgmcmc::engine::jobs::with_threads(2, || {
            [false, true].map(|sequential| {
                let mut s = sampler_of(&device, sequential);
                run(&mut s, 40, &device);
                s.state().unwrap()
            })
        })
        .unwrap();
        assert_eq!(states[0], states[1]);
    }

    /// A toy target with injected energy noise draws the same noise at every snapshot
    /// evaluation (fixed streams), which would freeze a per-chain offset into every swap test:
    /// control variates are refused on it, as the host path refuses a target without exact
    /// energies; without energy noise, or without control variates, the sampler builds.
    #[test]
    fn control_variates_are_refused_on_a_toy_target_with_energy_noise() {
        use sgmcmc::samplers::density::particles::Particles;
        use sgmcmc::testfunctions::{Noise, NoiseModel, by_name};

        let device = Device::flex().autodiff();
        let build = |energy_sd: f64, control: bool| {
            let noise = NoiseModel {
                energy: Noise::gaussian(energy_sd),
                gradient: Noise::gaussian(1.0),
            };
            let target = by_name("bimodal").unwrap().with_noise(noise).unwrap();
            let p = Particles::from_rows(&[vec![0.0], vec![1.0]], &device).unwrap();
            let ens = ModuleEnsemble::new(target, vec![p], 1).unwrap();
            VarianceReduced::new(vr_config(1e-3, control), ens, Box::new(|_, _| ()), 1).map(drop)
        };
        let e = build(0.5, true).unwrap_err().to_string();
        assert!(e.contains("energy noise"), "{e}");
        build(0.0, true).unwrap();
        build(0.5, false).unwrap();
    }
}
