//! Replica exchange on regression networks: the swap variance from fresh minibatches.
//!
//! The corrected swap (reSGLD, Algorithm 1, eq. 2.12) subtracts `d sigma2_hat / F` from the
//! energy difference, `sigma2_hat` per pair of adjacent rungs being half the variance of the
//! two replicas' energy difference over paired fresh minibatches
//! (`sgmcmc_samplers::control::energy_variance`). A refresh without data of its own sees only
//! the step's batch, on which a network's energy difference has no spread, and would leave the
//! corrected swap the naive one. As the image tables do, `resgld` / `resghmc` therefore run as
//! their variance-reduced forms without control variates (`vr-*` with `control_period = 0`: the
//! same chains and swaps), whose refresh draws `variance_draws` fresh minibatches every
//! `variance_period` steps ([`fresh_batches`]).

use burn::tensor::{Int, Tensor, TensorData};
use sgmcmc_models::Targets;
use sgmcmc_models::posterior::Batch;
use sgmcmc_samplers::registry::SamplerSettings;
use sgmcmc_samplers::rng::epoch_order;
use sgmcmc_samplers::sampler::BatchDraw;
use sgmcmc_samplers::transfer;

use crate::error::RunError;

/// The settings to build for `s`: `resgld` / `resghmc` as `vr-resgld` / `vr-resghmc` without
/// control variates, other samplers unchanged. Across ranks (`distributed`) the fresh
/// minibatches would have to be drawn on every rank in step: refused with one line.
pub fn settings(s: &SamplerSettings, distributed: bool) -> Result<SamplerSettings, RunError> {
    if !matches!(s.name.as_str(), "resgld" | "resghmc") {
        return Ok(s.clone());
    }
    if distributed {
        return Err(RunError::Setting(format!(
            "`{}` runs in one process, not over ranks: its swap variance comes from fresh \
             minibatches (deo-* samplers need none)",
            s.name
        )));
    }
    let mut vr = s.clone();
    vr.name = format!("vr-{}", s.name);
    vr.replica.control_period = 0;
    Ok(vr)
}

/// Fresh minibatches of `batch` rows of `(x, y)`: draw `j` of the refresh at step `k` takes
/// rows `j b .. (j + 1) b` (cyclically) of a permutation of the training rows that depends on
/// `(seed, k)` alone ([`epoch_order`] of a stream apart from the training batches'), so a
/// resumed run draws the same ones. With more draws than `n / b` batches the draws of one
/// refresh overlap.
pub fn fresh_batches(
    x: Tensor<2>,
    y: Tensor<2>,
    batch: usize,
    seed: u64,
) -> BatchDraw<Batch<Tensor<2>>> {
    let n = x.dims()[0];
    let seed = seed ^ 0x5EED_F2E5_4A11_CE00;
    Box::new(move |k, j| {
        let order = epoch_order(n, seed, k);
        let rows: Vec<i64> = (0..batch)
            .map(|i| order[(j * batch + i) % n] as i64)
            .collect();
        let idx: Tensor<1, Int> = transfer::upload(TensorData::new(rows, [batch]), &x.device());
        Batch {
            x: x.clone().select(0, idx.clone()),
            y: Targets::Real(y.clone().select(0, idx)),
        }
    })
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Distribution};
    use sgmcmc_models::{Activation, Likelihood, MlpConfig, Posterior, Scale};
    use sgmcmc_samplers::checkpoint::AlgorithmState;
    use sgmcmc_samplers::ensemble::ModuleEnsemble;
    use sgmcmc_samplers::registry::BuildContext;
    use sgmcmc_samplers::sampler::Sampler;

    use super::*;
    use crate::init;

    /// `sigma2_hat` after 30 steps of a two-rung reSGLD on the UCI benchmark's network,
    /// refreshed every 5 steps from 4 estimates; built as a regression run builds it (`fresh`)
    /// or with the replica's own refresh on the step's batch.
    fn swap_variance_after(fresh: bool) -> Vec<f64> {
        let device = Device::flex().autodiff();
        let (n, d) = (200, 4);
        let x = init::seeded(&device, 3, || {
            Tensor::<2>::random([n, d], Distribution::Normal(0.0, 1.0), &device)
        });
        let y = x.clone().sum_dim(1).mul_scalar(0.5);
        let post = Posterior {
            likelihood: Likelihood::Gaussian { precision: 1.0 },
            scale: Scale::from_weight_decay(n, 1e-4),
        };
        let mlp = MlpConfig {
            inputs: d,
            hidden: vec![50],
            outputs: 1,
            activation: Activation::Relu,
        };
        let nets = init::chains(&device, 1, 2, || mlp.init(&device));
        let chains = ModuleEnsemble::new(post, nets, 1).unwrap();
        let mut s = SamplerSettings {
            lr: 1e-4,
            ..SamplerSettings::named("resgld")
        };
        s.replica.variance_period = 5;
        s.replica.variance_draws = 4;
        let ctx = BuildContext::steps(30).chains(2);
        let batch = fresh_batches(x.clone(), y.clone(), 20, 9)(0, 0);
        let mut sampler = if fresh {
            let draws = fresh_batches(x, y, 20, 1);
            let spec = settings(&s, false).unwrap().spec(&ctx).unwrap();
            spec.build_with_data(chains, 1, draws, None).unwrap()
        } else {
            s.spec(&ctx).unwrap().build(chains, 1).unwrap()
        };
        for _ in 0..30 {
            sampler.step(&batch).unwrap();
        }
        match sampler.state().unwrap().algorithm {
            AlgorithmState::Replica(r) => {
                r.variance.expect("a Metropolis ladder").values().to_vec()
            }
            other => panic!("not a replica state: {other:?}"),
        }
    }

    #[test]
    fn the_swap_variance_of_a_network_comes_from_fresh_minibatches() {
        // The replica's own refresh repeats the estimate on the step's batch: a network's
        // energy is then the same number every time, and the swap correction vanishes.
        assert_eq!(swap_variance_after(false), vec![0.0]);
        let fresh = swap_variance_after(true);
        println!("sigma2_hat from fresh minibatches: {fresh:?}");
        assert!(fresh.iter().all(|v| v.is_finite() && *v > 0.0), "{fresh:?}");
    }

    #[test]
    fn replica_samplers_map_to_their_fresh_batch_form_and_refuse_ranks() {
        let s = settings(&SamplerSettings::named("resghmc"), false).unwrap();
        assert_eq!(
            (s.name.as_str(), s.replica.control_period),
            ("vr-resghmc", 0)
        );
        assert_eq!(
            settings(&SamplerSettings::named("sgld"), false)
                .unwrap()
                .name,
            "sgld"
        );
        assert_eq!(
            settings(&SamplerSettings::named("deo-sgd"), true)
                .unwrap()
                .name,
            "deo-sgd"
        );
        assert!(matches!(
            settings(&SamplerSettings::named("resgld"), true),
            Err(RunError::Setting(m)) if m.contains("runs in one process")
        ));
        // Draws differ across draws and refreshes and repeat for the same `(k, j)`.
        let device = Device::flex();
        let x = Tensor::<2>::from_data(
            TensorData::new((0..40).map(|v| v as f32).collect::<Vec<_>>(), [40, 1]),
            &device,
        );
        let draw = fresh_batches(x.clone(), x, 8, 5);
        let rows = |k, j| -> Vec<f32> { draw(k, j).x.into_data().try_into_vec().unwrap() };
        assert_eq!(rows(3, 1), rows(3, 1));
        assert_ne!(rows(3, 1), rows(3, 2));
        assert_ne!(rows(3, 1), rows(4, 1));
    }
}
