//! `sgmcmc mnist` settings: the papers' protocol (`paper`) and a CPU-sized one (`cpu`).
//!
//! Paper (thesis sec. 6.4.1, E.4.1, 7.2.3): digits 0-4 (30,596 training images), the CNN
//! conv5x5(1->32)-pool-conv5x5(32->64)-pool-fc50-fc5, batch 2500, 500 epochs, lr 1e-6 at
//! full-data scale, prior precision ("weight decay") 25 at full-data scale, ICSGLD/CSGLD at
//! tau 0.1 with zeta 3e4, m = 10000 bins of du = 10 on the stochastic energy,
//! `omega_k = min(0.01, 1/(k^0.6 + 100))`; AWSGLD and high-tau SGLD at tau 1, pSGLD / SGHMC /
//! cycSGLD at tau 0.3.
//!
//! CPU preset: the same network, temperatures, prior, bin count and SA step sizes on 500
//! training images per class (N = 2500) with batch 200 (N/n = 12.5, the paper's 30,596 / 2500
//! is 12.2) for 40 epochs (500 steps), ICSGLD with P = 2 chains, with the step and partition
//! carried over by [`MnistConfig::scaled_to`] (same step on the mean loss, bins at the same
//! losses, same multiplier as a function of theta). What changes is the posterior's width (N
//! is 12x smaller) and the run length (500 steps instead of 6,000). The budget: about 5
//! minutes per chain on an idle 2-core machine.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::control::{
    Cyclical, EnergyPartition, RandomField, SaStepSize, Schedule, ThetaInit,
};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{ContourConfig, SgmcmcConfig};

use crate::error::AppError;
use crate::net_runner::NetSpec;

/// Training images of digits 0-4 in MNIST.
pub const PAPER_N: usize = 30_596;

/// Samplers `sgmcmc mnist` runs by name, with a line each.
pub const MNIST_SAMPLERS: &[(&str, &str)] = &[
    ("sgd", "SGD (no noise)"),
    ("sgld", "SGLD at the low temperature (tau 0.1)"),
    ("sgld-high", "SGLD at the high temperature (tau 1)"),
    ("psgld", "preconditioned SGLD (tau 0.3)"),
    ("sghmc", "SGHMC (tau 0.3)"),
    ("cycsgld", "cyclical SGLD (tau 0.3, 5 cycles)"),
    ("csgld", "contour SGLD, power field (tau 0.1, zeta 3e4)"),
    ("icsgld", "interacting contour SGLD x P (tau 0.1, zeta 3e4)"),
    (
        "awsgld",
        "adaptively weighted SGLD, cumulative field (tau 1)",
    ),
];

/// The settings of one `sgmcmc mnist` run (written to the run's `config.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MnistConfig {
    /// Preset the run started from.
    pub preset: String,
    /// Sampler name (one of [`MNIST_SAMPLERS`]).
    pub sampler: String,
    /// Chains (ICSGLD's P; independent chains for the others).
    pub chains: usize,
    /// Classes used (in-distribution); the others of the test set are held out.
    pub classes: Vec<u8>,
    /// Training images per class (`None` = all).
    pub train_per_class: Option<usize>,
    /// Held-out test images per set used for the entropy CDFs (`None` = all).
    pub heldout_limit: Option<usize>,
    /// CNN channels of the two conv layers.
    pub channels: [usize; 2],
    /// CNN hidden width.
    pub hidden: usize,
    /// Minibatch size.
    pub batch: usize,
    /// Epochs.
    pub epochs: usize,
    /// Learning rate at full-data scale.
    pub lr: f64,
    /// pSGLD's learning rate. Its step `lr G g` with `G = 1 / sqrt(V) ~ 1 / |g|` does not scale
    /// with the data size, so it is set apart: 1e-4 moves a weight about as far per step as
    /// SGLD's `lr * g` does here.
    pub psgld_lr: f64,
    /// Prior precision at full-data scale ("weight decay 25").
    pub prior_precision: f64,
    /// Sampling temperature.
    pub temperature: f64,
    /// Contour `zeta`.
    pub zeta: f64,
    /// Contour bins.
    pub bins: usize,
    /// Contour bin width on the stochastic energy.
    pub du: f64,
    /// Lower end of the energy partition.
    pub u_min: f64,
    /// Cyclical SGLD cycles.
    pub cycles: u64,
    /// Evaluate (test accuracy, BMA) every this many epochs.
    pub eval_every: usize,
    /// Collect models for the BMA from this fraction of the run on.
    pub burn_fraction: f64,
    /// Checkpoint every this many epochs (0 = never).
    pub checkpoint_every: usize,
    /// Run seed.
    pub seed: u64,
}

impl MnistConfig {
    /// The preset `name` (`paper` or `cpu`) for `sampler`.
    pub fn preset(name: &str, sampler: &str) -> Result<Self, AppError> {
        let temperature = match sampler {
            "sgd" => 0.0,
            "sgld" | "csgld" | "icsgld" => 0.1,
            "sgld-high" | "awsgld" => 1.0,
            "psgld" | "sghmc" | "cycsgld" => 0.3,
            other => return Err(unknown(other)),
        };
        let chains = if sampler == "icsgld" { 4 } else { 1 };
        let paper = Self {
            preset: name.into(),
            sampler: sampler.into(),
            chains,
            classes: vec![0, 1, 2, 3, 4],
            train_per_class: None,
            heldout_limit: None,
            channels: [32, 64],
            hidden: 50,
            batch: 2500,
            epochs: 500,
            lr: 1e-6,
            psgld_lr: 1e-4,
            prior_precision: 25.0,
            temperature,
            zeta: paper_zeta(sampler),
            bins: 10_000,
            du: 10.0,
            u_min: 0.0,
            cycles: 5,
            eval_every: 5,
            burn_fraction: 0.5,
            checkpoint_every: 25,
            seed: 1,
        };
        match name {
            "paper" => Ok(paper),
            "cpu" => Ok(Self {
                chains: chains.min(2),
                train_per_class: Some(500),
                heldout_limit: Some(2000),
                batch: 200,
                epochs: 40,
                eval_every: 4,
                checkpoint_every: 10,
                ..paper
            }
            .scaled_to(500 * 5)),
            other => Err(AppError::Usage(format!(
                "unknown preset `{other}` (known: paper, cpu)"
            ))),
        }
    }

    /// The paper's step and energy partition carried over to `n` training images:
    /// `lr * N`, the step on the mean loss, stays `1e-6 * 30596`; the bin width scales with N,
    /// `du = 10 N / 30596`, so bins cut the loss axis (`U~ / N`) where the paper's do; and
    /// `zeta` scales with `du`, which keeps the multiplier `1 + zeta tau / du (ln theta[J] -
    /// ln theta[J-1])` as a function of `theta` unchanged (with the paper's `zeta` at a smaller
    /// `du`, AWSGLD's multiplier starts in the hundreds and the chain diverges in 3 steps).
    pub fn scaled_to(self, n: usize) -> Self {
        let scale = n as f64 / PAPER_N as f64;
        Self {
            lr: 1e-6 / scale,
            du: 10.0 * scale,
            zeta: paper_zeta(&self.sampler) * scale,
            ..self
        }
    }

    /// Checks what the samplers do not check themselves.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |what: &str| Err(AppError::Usage(what.to_string()));
        if self.chains == 0 {
            return bad("chains must be >= 1 (got 0)");
        }
        if self.batch == 0 || self.epochs == 0 || self.eval_every == 0 {
            return bad("batch, epochs and eval_every must be >= 1");
        }
        if self.classes.len() < 2 || self.classes.iter().any(|&c| c > 9) {
            return bad("classes must be at least two digits 0-9");
        }
        if !(0.0..1.0).contains(&self.burn_fraction) {
            return bad("burn_fraction must be in [0, 1)");
        }
        if !self.lr.is_finite() || self.lr <= 0.0 {
            return Err(AppError::Usage(format!("lr must be > 0 (got {})", self.lr)));
        }
        self.spec(1).map(|_| ())
    }

    /// The sampler to build; `steps` is the run's total step count (cyclical schedules).
    pub fn spec(&self, steps: u64) -> Result<NetSpec, AppError> {
        let constant = |kernel| SgmcmcConfig::constant(kernel, self.lr, self.temperature);
        let contour = |field: RandomField, init: ThetaInit| -> Result<NetSpec, AppError> {
            let mut c = ContourConfig::new(
                constant(Kernel::Sgld),
                EnergyPartition::new(self.u_min, self.du, self.bins)?,
                field,
                self.zeta,
            );
            c.omega = SaStepSize {
                omega_max: 0.01,
                a: 1.0,
                alpha: 0.6,
                b: 100.0,
            };
            c.init = init;
            c.validate()?;
            Ok(NetSpec::Contour(c))
        };
        let plain = |c: SgmcmcConfig| -> Result<NetSpec, AppError> {
            c.validate()?;
            Ok(NetSpec::Plain(c))
        };
        match self.sampler.as_str() {
            "sgd" => plain(SgmcmcConfig::constant(Kernel::Sgd, self.lr, 0.0)),
            "sgld" | "sgld-high" => plain(constant(Kernel::Sgld)),
            "psgld" => plain(SgmcmcConfig::constant(
                Kernel::psgld(),
                self.psgld_lr,
                self.temperature,
            )),
            "sghmc" => plain(constant(Kernel::sghmc())),
            "cycsgld" => plain(SgmcmcConfig {
                kernel: Kernel::Sgld,
                lr: Schedule::Cyclical(Cyclical {
                    initial: 2.0 * self.lr,
                    total_steps: steps.max(self.cycles),
                    cycles: self.cycles,
                    sampling_threshold: 0.5,
                    noise_free_exploration: false,
                }),
                temperature: Schedule::constant(self.temperature),
            }),
            "csgld" => contour(RandomField::Power, ThetaInit::Uniform),
            "icsgld" => contour(RandomField::Interacting, ThetaInit::Uniform),
            "awsgld" => contour(RandomField::Cumulative, ThetaInit::Increasing),
            other => Err(unknown(other)),
        }
    }
}

/// `zeta` at the paper's scale: 3e4 (thesis E.4.1) for the contour samplers at tau 0.1. The
/// thesis gives none for AWSGLD on MNIST; at tau 1 the same 3e4 makes `zeta tau / du = 3000`,
/// the multiplier reaches ~30 after the first theta update, the chain leaves the top of the
/// partition, where the cumulative field keeps raising the multiplier, and diverges within 25
/// steps. 3e3 gives AWSGLD ICSGLD's `zeta tau / du = 300`.
fn paper_zeta(sampler: &str) -> f64 {
    if sampler == "awsgld" { 3e3 } else { 3e4 }
}

fn unknown(name: &str) -> AppError {
    let known: Vec<&str> = MNIST_SAMPLERS.iter().map(|s| s.0).collect();
    AppError::Usage(format!(
        "unknown sampler `{name}` (known: {})",
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_follow_the_papers_and_the_cpu_scaling_keeps_the_mean_loss_step() {
        let p = MnistConfig::preset("paper", "icsgld").unwrap();
        assert_eq!(
            (p.batch, p.epochs, p.bins, p.chains),
            (2500, 500, 10_000, 4)
        );
        assert_eq!(
            (p.lr, p.temperature, p.zeta, p.du, p.prior_precision),
            (1e-6, 0.1, 3e4, 10.0, 25.0)
        );
        assert_eq!(
            MnistConfig::preset("paper", "awsgld").unwrap().temperature,
            1.0
        );
        assert_eq!(
            MnistConfig::preset("paper", "psgld").unwrap().temperature,
            0.3
        );
        let c = MnistConfig::preset("cpu", "icsgld").unwrap();
        let n = 2500.0;
        // lr * N, du / N and zeta / du are those of the paper.
        assert!((c.lr * n - 1e-6 * PAPER_N as f64).abs() < 1e-12);
        assert!((c.du / n - 10.0 / PAPER_N as f64).abs() < 1e-15);
        assert!((c.zeta / c.du - 3e4 / 10.0).abs() < 1e-9);
        assert!(MnistConfig::preset("cpu", "sgd").unwrap().spec(10).is_ok());
        for (name, _) in MNIST_SAMPLERS {
            MnistConfig::preset("cpu", name)
                .unwrap()
                .validate()
                .unwrap();
        }
    }
}
