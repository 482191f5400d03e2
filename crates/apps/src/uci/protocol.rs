//! One UCI run: the CSGLD paper's protocol (sec. 4.2, Table 1) on one split with one sampler,
//! or the standardized protocol for data sets off the paper's list ([`standardized`]:
//! target standardized with the training split, noise precision 100 in those units, lr
//! `1e-3 / N`, so a target of any offset and scale gives the same run up to rounding; the
//! paper's unit precision on original units diverges or underfits on a target in the hundreds).
//! pSGLD's lr is per parameter, 1e-3 by default under both ([`default_lr`]). The run itself is
//! the engine's regression experiment ([`sgmcmc_engine::experiment::regression`]): this module
//! holds the protocol's settings and network.
//!
//! The paper's protocol:
//! MLP with one hidden layer of 50 ReLU units; features standardized with the training split
//! ("we normalized all features"; the target stays in original units, which sets the scale the
//! paper's lr 5e-6 and (tau, zeta) were tuned for: on a standardized target the same lr
//! underfits, e.g. SGD RMSE 1.92 instead of 1.13 on Energy); Gaussian likelihood with unit
//! precision; prior
//! precision `N * 1e-4` (L2 1e-4 on the mean loss); batch 50 (shuffled each epoch, the last
//! partial batch dropped); 5000 epochs; lr 5e-6 at full-data scale; temperature tau (SGD and
//! M-SGD run at 0); contour samplers partition the stochastic energy from 0 into 1000 bins of
//! 100 (the paper gives `du` only; 1000 bins cover every dataset's energies after warm-up) with
//! the dataset's zeta, a uniform initial `theta`, `omega_k = min(0.01, 1 / (k^0.6 + 100))` and
//! the power field of eq. 9 unless `contour.field` says otherwise. Any registry sampler runs
//! (replica exchange and ICSGLD with `chains >= 2`; samples come from every chain, or from the
//! chain on rung 0). With that field `theta` moves by `omega theta[J]^zeta` per step: at
//! Yacht's `zeta = 2.5` the multiplier can move by about 1e-4 over a run, at Wine's
//! `zeta = 10` by about 1e-25, so there CSGLD is SGLD (see
//! [`ContourStats`](sgmcmc_samplers::diagnostics::ContourStats)). Prediction: the mean over 50
//! models taken evenly over the second half of the run, importance-weighted for contour
//! samplers (each model's weight is that of the step it was taken before). RMSE is in original units. The test NLL uses a Gaussian predictive
//! with the models' spread plus a plug-in noise variance, the mean squared training residual of
//! the averaged prediction (the unit likelihood precision is a fixed modelling choice, not an
//! estimate of the noise).
//!
//! With a learned noise precision (`--noise learned`, not the paper's protocol) the test NLL is
//! that of the posterior predictive, the mixture of the collected models' Gaussians.

use burn::tensor::Device;
use sgmcmc_data::SplitData;
use sgmcmc_engine::experiment::regression::{
    RegressionNoise, RegressionResult, RegressionRun, RunFiles, run_regression,
};
use sgmcmc_models::{Activation, MlpConfig};
use sgmcmc_samplers::control::ThetaInit;
use sgmcmc_samplers::registry::{KernelKind, SamplerSettings};

use crate::error::AppError;

/// The paper's protocol for `sampler` with the dataset's `(tau, zeta)`.
pub fn paper(sampler: &str, temperature: f64, zeta: f64, seed: u64) -> RegressionRun {
    let mut s = SamplerSettings::named(sampler);
    s.temperature = temperature;
    s.contour.zeta = zeta;
    s.contour.du = 100.0;
    s.contour.bins = 1000;
    s.contour.u_min = Some(0.0);
    s.contour.theta_init = Some(ThetaInit::Uniform);
    // reSGLD's swap variance: 10 fresh minibatches every 100 steps
    // (`sgmcmc_engine::experiment::regression::fresh`).
    RegressionRun {
        sampler: s,
        chains: 1,
        epochs: 5000,
        batch: 50,
        weight_decay: 1e-4,
        models: 50,
        seed,
        standardize_target: false,
        noise: RegressionNoise::Fixed { precision: 1.0 },
        lr_per_row: None,
    }
    .with_lr(default_lr(sampler, 5e-6))
}

/// The protocol for data sets off the paper's list, whatever the target's scale: the target
/// standardized with the training split, noise precision 100 in standardized units (noise sd
/// 0.1 target sd: what the paper's unit precision means on Energy's, Concrete's and Yacht's
/// targets, sd 10-17), and lr `1e-3 / N` (the paper's `5e-6` is `3.5e-3 / N` on Energy; at
/// `3e-3 / N` the top rung of DEO*-SGD, at 5 x lr, diverged within 5 steps), i.e. a fixed step
/// on the mean loss. pSGLD keeps its per-coordinate lr ([`default_lr`]).
pub fn standardized(sampler: &str, temperature: f64, zeta: f64, seed: u64) -> RegressionRun {
    let mut run = paper(sampler, temperature, zeta, seed);
    run.standardize_target = true;
    run.noise = RegressionNoise::Fixed { precision: 100.0 };
    if !preconditioned(sampler) {
        run.lr_per_row = Some(1e-3);
    }
    run
}

/// Whether `sampler` runs the RMSprop-preconditioned kernel (pSGLD and its contour and DEO*
/// variants).
fn preconditioned(sampler: &str) -> bool {
    sgmcmc_samplers::registry::lookup(sampler).is_ok_and(|e| e.kernel == KernelKind::Psgld)
}

/// The default lr of `sampler` at full-data scale: `plain` for every kernel but pSGLD's, whose
/// preconditioner `G = 1 / (lambda + sqrt(V))` divides the full-data gradient by its own
/// running magnitude, so `lr G g` is about `lr` per parameter whatever `N` and the target's
/// units: there the lr is a per-parameter displacement, 1e-3 (on Energy and Yacht, 5000
/// epochs, 4 seeds: RMSE 0.47 and 0.54 at 1e-3; 2.6 and 3.2 at 1e-4; 15.8 and 16.6 at the
/// paper's SGLD lr 5e-6, which barely moves the weights).
pub fn default_lr(sampler: &str, plain: f64) -> f64 {
    if preconditioned(sampler) { 1e-3 } else { plain }
}

/// The paper's network: one hidden layer of 50 ReLU units.
pub fn uci_mlp(inputs: usize) -> MlpConfig {
    MlpConfig {
        inputs,
        hidden: vec![50],
        outputs: 1,
        activation: Activation::Relu,
    }
}

/// `run` on `data` with the paper's network, on `device` (plain or autodiff), with its files in
/// `files` (if any): [`run_regression`].
pub fn run_split(
    run: &RegressionRun,
    data: &SplitData,
    device: &Device,
    files: Option<&RunFiles>,
) -> Result<RegressionResult, AppError> {
    let mlp = uci_mlp(data.n_features);
    Ok(run_regression(run, &mlp, data, device, files)?)
}
