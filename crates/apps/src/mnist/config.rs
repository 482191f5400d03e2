//! `sgmcmc mnist` settings: the papers' protocol (`paper`) and a CPU-sized one (`cpu`).
//!
//! Paper (thesis sec. 6.4.1, E.4.1, 7.2.3): digits 0-4 (30,596 training images), the CNN
//! conv5x5(1->32)-pool-conv5x5(32->64)-pool-fc50-fc5, batch 2500, 500 epochs, lr 1e-6 at
//! full-data scale, prior precision ("weight decay") 25 at full-data scale, ICSGLD/CSGLD at
//! tau 0.1 with zeta 3e4, m = 10000 bins of du = 10 on the stochastic energy,
//! `omega_k = min(0.01, 1/(k^0.6 + 100))`; AWSGLD and high-tau SGLD at tau 1, pSGLD / SGHMC /
//! cycSGLD at tau 0.3.
//!
//! CPU preset: 400 training images per class (N = 2000) with batch 160 (N/n = 12.5, the
//! paper's 30,596 / 2500 is 12.2) for 30 epochs (375 steps), a CNN of half the width (16 and 32
//! feature maps, fc 50), ICSGLD with P = 2 chains, held-out sets cut to 1000 images; the
//! paper's dynamics carried over by [`MnistConfig::scaled_to`] (the same update and stationary
//! law in terms of the mean loss, bins at the same losses, the same multiplier as a function of
//! theta). What changes is the data (N is 15x smaller), the width and the run length (375 steps
//! instead of 6,000): a chain takes about 2-3 minutes on an idle 2-core machine.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::control::{ThetaInit, WeightRule};
use sgmcmc_samplers::registry::{BuildContext, SamplerSettings, SamplerSpec};

use crate::error::AppError;

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

/// The settings of one `sgmcmc mnist` run (written to the run's `config.toml`, read back with
/// `--config`, stored in its checkpoints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MnistConfig {
    /// Preset the run started from.
    pub preset: String,
    /// Sampler name (one of [`MNIST_SAMPLERS`]).
    pub sampler: String,
    /// Chains (ICSGLD's P; independent chains for the others).
    pub chains: usize,
    /// Classes used (in-distribution); the others of the test set are held out.
    pub classes: Vec<u8>,
    /// Training images per class (`None` = all; 0 in files).
    #[serde(with = "zero_is_all")]
    pub train_per_class: Option<usize>,
    /// Held-out test images per set used for the entropy CDFs (`None` = all; 0 in files).
    #[serde(with = "zero_is_all")]
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
    /// Importance weights of the contour samplers' model average: the reference code's
    /// `theta[J]` by default (what produced thesis Fig. 7.4; see the module docs of
    /// [`crate::mnist`]), `bin` for the papers' `theta[J]^zeta`.
    #[serde(default)]
    pub weights: WeightRule,
    /// Save the networks the model average collects, with their log weights, in `samples/`
    /// (and the network's description in `model.json`) for `sgmcmc predict`. One process.
    #[serde(default)]
    pub save_samples: bool,
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
            weights: WeightRule::Reference,
            save_samples: false,
        };
        match name {
            "paper" => Ok(paper),
            "cpu" => Ok(Self {
                chains: chains.min(2),
                train_per_class: Some(400),
                heldout_limit: Some(1000),
                channels: [16, 32],
                batch: 160,
                epochs: 30,
                eval_every: 3,
                checkpoint_every: 10,
                ..paper
            }
            .scaled_to(400 * 5)),
            other => Err(AppError::Usage(format!(
                "unknown preset `{other}` (known: paper, cpu)"
            ))),
        }
    }

    /// The paper's dynamics carried over to `n` training images. With `s = n / 30596`, the
    /// energy `U = N L + prior` of a mean loss `L` becomes `s U` when the prior precision is
    /// scaled by `s` too; with `lr / s` and `tau s` the SGLD step
    /// `- lr/s grad(s U) + sqrt(2 (lr/s) (tau s)) xi` is the paper's step, and the stationary
    /// law `exp(-s U / (s tau))` the paper's posterior in terms of `L`. The partition follows
    /// (`du s`, bins at the same losses), and `zeta tau / du`, hence the multiplier as a function
    /// of theta, is unchanged with `zeta` itself unchanged. (Scaling `lr` alone leaves the
    /// posterior `1/s` times hotter: at tau 1 the training loss climbs above its initial value.)
    pub fn scaled_to(self, n: usize) -> Self {
        let s = n as f64 / PAPER_N as f64;
        let paper = Self::preset("paper", &self.sampler).expect("a known sampler");
        Self {
            lr: paper.lr / s,
            temperature: paper.temperature * s,
            prior_precision: paper.prior_precision * s,
            du: paper.du * s,
            zeta: paper.zeta,
            ..self
        }
    }

    /// Checks what the samplers do not check themselves.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |what: &str| Err(AppError::Usage(what.to_string()));
        sgmcmc_engine::limits::check_seed(self.seed)?;
        if self.chains == 0 {
            return bad("chains must be >= 1 (got 0)");
        }
        if self.chains > 64 {
            return Err(AppError::Usage(format!(
                "chains must be at most 64, got {}",
                self.chains
            )));
        }
        if self.batch == 0 || self.epochs == 0 || self.eval_every == 0 {
            return bad("batch, epochs and eval_every must be >= 1");
        }
        sgmcmc_engine::limits::check_chains(&self.settings().name, self.chains)?;
        // Steps are epochs times at most 60,000 batches: bounding the epochs keeps every
        // product of epochs and steps per epoch inside u64.
        sgmcmc_engine::limits::check_steps("epochs", Some(self.epochs as u64))?;
        sgmcmc_engine::limits::check_steps("checkpoint_every", Some(self.checkpoint_every as u64))?;
        if self.classes.len() < 2 || self.classes.iter().any(|&c| c > 9) {
            return bad("classes must be at least two digits 0-9");
        }
        if !(0.0..1.0).contains(&self.burn_fraction) {
            return bad("burn_fraction must be in [0, 1)");
        }
        if !self.lr.is_finite() || self.lr <= 0.0 {
            return Err(AppError::Usage(format!("lr must be > 0 (got {})", self.lr)));
        }
        // A layer of width 0 panicked inside burn.
        if self.channels.contains(&0) || self.hidden == 0 {
            return Err(AppError::Usage(format!(
                "channels and hidden must be >= 1 (got {:?} and {})",
                self.channels, self.hidden
            )));
        }
        if !self.prior_precision.is_finite() || self.prior_precision < 0.0 {
            return Err(AppError::Usage(format!(
                "prior_precision must be finite and >= 0 (got {})",
                self.prior_precision
            )));
        }
        self.spec(1).map(|_| ())
    }

    /// The sampler's registry settings.
    pub fn settings(&self) -> SamplerSettings {
        let name = match self.sampler.as_str() {
            "sgld-high" => "sgld",
            other => other,
        };
        let mut s = SamplerSettings {
            lr: self.lr,
            temperature: self.temperature,
            ..SamplerSettings::named(name)
        };
        match name {
            "psgld" => s.lr = self.psgld_lr,
            "cycsgld" => {
                s.lr = 2.0 * self.lr;
                s.cyclical.cycles = self.cycles;
                s.cyclical.noise_free_exploration = false;
            }
            _ => {}
        }
        s.contour.zeta = self.zeta;
        s.contour.bins = self.bins;
        s.contour.du = self.du;
        s.contour.u_min = Some(self.u_min);
        s.contour.weights = self.weights;
        if name != "awsgld" {
            s.contour.theta_init = Some(ThetaInit::Uniform);
        }
        s
    }

    /// The sampler to build; `steps` is the run's total step count (cyclical schedules).
    pub fn spec(&self, steps: u64) -> Result<SamplerSpec, AppError> {
        if !MNIST_SAMPLERS.iter().any(|(n, _)| *n == self.sampler) {
            return Err(unknown(&self.sampler));
        }
        let ctx = BuildContext::steps(steps.max(self.cycles)).chains(self.chains);
        Ok(self.settings().spec(&ctx)?)
    }
}

/// A count that may be "all" (`None`), written as 0: TOML has no null, and a key left out of a
/// config file would keep the preset's count.
mod zero_is_all {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.unwrap_or(0) as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
        Ok(Option::<usize>::deserialize(d)?.filter(|&n| n > 0))
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

impl sgmcmc_engine::experiment::RunSettings for MnistConfig {
    fn sampler(&self) -> &str {
        &self.sampler
    }

    fn chains(&self) -> usize {
        self.chains
    }
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
        let n = 2000.0;
        // lr N (the step on the mean loss), lr tau (the noise), tau / N, prior / N and du / N
        // are the paper's; zeta is.
        let s = n / PAPER_N as f64;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        assert!(close(c.lr * n, 1e-6 * PAPER_N as f64));
        assert!(close(c.lr * c.temperature, 1e-6 * 0.1));
        assert!(close(c.temperature, 0.1 * s) && close(c.prior_precision, 25.0 * s));
        assert!(close(c.du, 10.0 * s) && c.zeta == 3e4);
        assert!(MnistConfig::preset("cpu", "sgd").unwrap().spec(10).is_ok());
        for (name, _) in MNIST_SAMPLERS {
            MnistConfig::preset("cpu", name)
                .unwrap()
                .validate()
                .unwrap();
        }
    }
}
