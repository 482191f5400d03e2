//! Same seed, same backend, same output: bit for bit on flex and ndarray; and the tensor path
//! agrees with the f64 host path (same formulas, same random streams) up to f32 rounding.

mod common;

use common::devices;
use sgmcmc::samplers::density::particles::Particles;
use sgmcmc::samplers::ensemble::{HostEnsemble, ModuleEnsemble, NoiseSource};
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc::testfunctions::by_name;

fn configs() -> Vec<SgmcmcConfig> {
    vec![
        SgmcmcConfig::constant(Kernel::Sgld, 1e-3, 1.0),
        SgmcmcConfig::constant(Kernel::sghmc(), 1e-3, 1.0),
        SgmcmcConfig::constant(Kernel::psgld(), 1e-3, 1.0),
        SgmcmcConfig::constant(Kernel::Momentum { mu: 0.5 }, 1e-3, 0.0),
    ]
}

fn starts() -> Vec<Vec<f64>> {
    (0..16)
        .map(|i| vec![-3.0 + 0.4 * i as f64, 2.0 - 0.25 * i as f64])
        .collect()
}

fn tensor_run(
    cfg: SgmcmcConfig,
    device: &sgmcmc::burn::tensor::Device,
    steps: usize,
) -> Vec<Vec<f64>> {
    let t = by_name("nine-mode").unwrap();
    let p = Particles::from_rows(&starts(), device).unwrap();
    // Host noise on every device: the host path's streams (wgpu would draw on the device).
    let chains = ModuleEnsemble::new(t, vec![p], 99)
        .unwrap()
        .with_noise(NoiseSource::Host);
    let mut s = Sgmcmc::new(cfg, chains).unwrap();
    for _ in 0..steps {
        s.step(&()).unwrap();
    }
    s.ensemble().modules().flat_map(|m| m.rows()).collect()
}

#[test]
fn seeded_runs_are_bit_identical_on_cpu_backends() {
    for (name, device, _) in devices().into_iter().filter(|d| !d.0.is_gpu()) {
        for cfg in configs() {
            let a = tensor_run(cfg.clone(), &device, 300);
            let b = tensor_run(cfg.clone(), &device, 300);
            let bits =
                |v: &Vec<Vec<f64>>| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "{name} {:?}", cfg.kernel);
        }
    }
}

#[test]
fn tensor_path_tracks_the_host_path() {
    // Same noise streams; the only difference is f32 vs f64 arithmetic. Over 200 steps of lr
    // 1e-3 the paths stay within 1e-3 (f32 rounding ~1e-7 per step, mildly amplified).
    for (name, device, scale) in devices() {
        let steps = (200.0 * scale) as usize;
        for cfg in configs() {
            let t = by_name("nine-mode").unwrap();
            let mut h =
                Sgmcmc::new(cfg.clone(), HostEnsemble::new(t, &starts(), 99).unwrap()).unwrap();
            for _ in 0..steps {
                h.step(&()).unwrap();
            }
            let host: Vec<f64> = h.ensemble().positions().to_vec();
            let tensor: Vec<f64> = tensor_run(cfg.clone(), &device, steps)
                .into_iter()
                .flatten()
                .collect();
            let worst = host
                .iter()
                .zip(&tensor)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                worst < 1e-3,
                "{name} {:?}: host and tensor paths differ by {worst}",
                cfg.kernel
            );
        }
    }
}

#[test]
fn network_chains_are_bit_identical_on_cpu_backends() {
    use sgmcmc::burn::tensor::{Tensor, TensorData};
    use sgmcmc::models::posterior::Batch;
    use sgmcmc::models::{Activation, Likelihood, MlpConfig, Network, Posterior, Scale, Targets};
    use sgmcmc::samplers::rng::ChainRng;

    let mut rng = ChainRng::new(5, 0);
    let xs: Vec<f32> = (0..50 * 13).map(|_| rng.normal_f32()).collect();
    let ys: Vec<f32> = (0..50).map(|_| rng.normal_f32()).collect();
    for (name, device, _) in devices().into_iter().filter(|d| !d.0.is_gpu()) {
        let ad = device.clone().autodiff();
        let x = Tensor::<2>::from_data(TensorData::new(xs.clone(), [50, 13]), &ad);
        let y = Tensor::<2>::from_data(TensorData::new(ys.clone(), [50, 1]), &ad);
        let batch = Batch {
            x: x.clone(),
            y: Targets::Real(y),
        };
        let post = Posterior {
            likelihood: Likelihood::Gaussian { precision: 1.0 },
            scale: Scale {
                n_data: 500,
                prior_precision: 1.0,
            },
        };
        // Seeded initial weights. Unseeded (OS-entropy) starts made the downhill check below
        // flaky: over 3,000 seeded starts, 8 went uphill over these 60 pSGLD steps (none for SGLD
        // or SGHMC in 200). pSGLD starts from V = 0, so a weight with a small gradient gets a large
        // preconditioner 1/(lambda + sqrt V) and a large noise kick, as the method prescribes.
        let model = sgmcmc::engine::init::seeded(&ad, 0, || {
            MlpConfig {
                inputs: 13,
                hidden: vec![50],
                outputs: 1,
                activation: Activation::Tanh,
            }
            .init(&ad)
        });
        let run = |kernel: Kernel| {
            let ens = ModuleEnsemble::new(post.clone(), vec![model.clone()], 17).unwrap();
            let mut s = Sgmcmc::new(SgmcmcConfig::constant(kernel, 1e-4, 1.0), ens).unwrap();
            let energies: Vec<u64> = (0..60)
                .map(|_| s.step(&batch).unwrap().energies[0].to_bits())
                .collect();
            let out = s.ensemble().modules().next().unwrap().forward(x.clone());
            let out: Vec<u32> = out
                .into_data()
                .try_into_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            (energies, out)
        };
        for kernel in [Kernel::Sgld, Kernel::sghmc(), Kernel::psgld()] {
            let (e1, o1) = run(kernel.clone());
            let (e2, o2) = run(kernel.clone());
            assert_eq!(e1, e2, "{name} {kernel:?}: energies differ");
            assert_eq!(o1, o2, "{name} {kernel:?}: parameters differ");
            // And the chain moved downhill from its random start (the energy is a sum over 500
            // points at lr 1e-4: the first steps must lower it).
            assert!(
                f64::from_bits(e1[59]) < f64::from_bits(e1[0]),
                "{name} {kernel:?}: no progress"
            );
        }
    }
}
