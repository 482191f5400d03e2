//! `sgmcmc images` settings: the samplers, the papers' protocol (`gpu`) and the CPU-sized
//! version (`cpu`), and the table rows as named presets ([`super::presets`]).
//!
//! Learning rates are at full-data scale, as everywhere in the library: the energy is
//! `U(theta) = N * mean loss + (weight_decay / 2) |theta|^2`, so the reference code's
//! `lr = 2e-6` with `N = 50,000` is PyTorch's SGD lr 0.1 on the mean loss (momentum 0.9,
//! weight decay `25 / N = 5e-4`).

use serde::{Deserialize, Serialize};
use sgmcmc_data::augment::Augment;
use sgmcmc_models::classifier::{Architecture, UnknownModel};
use sgmcmc_samplers::control::{ThetaInit, WeightRule};
use sgmcmc_samplers::registry::{BuildContext, SamplerSettings, SamplerSpec};

use crate::error::AppError;

/// Samplers `sgmcmc images` runs by name, with a line each.
pub const IMAGES_SAMPLERS: &[(&str, &str)] = &[
    ("msgd", "momentum SGD (no noise; M-SGD x P with --chains P)"),
    (
        "cycmsgd",
        "momentum SGD under a cosine lr (Table 6.1's M-SGD x P4: one cycle)",
    ),
    (
        "sa-msgd",
        "momentum SGD with the lr held, then divided per epoch (saM-SGD)",
    ),
    ("sghmc", "SGHMC"),
    (
        "cycswag",
        "cycSWAG x T: cyclical momentum SGD, a SWAG Gaussian per cycle, draws averaged",
    ),
    (
        "cycsghmc",
        "cyclical SGHMC (cosine lr cycles; cycSGHMC x T)",
    ),
    (
        "resghmc",
        "replica-exchange SGHMC x 2, swaps corrected by the variance estimate / F",
    ),
    (
        "vr-resghmc",
        "VR-reSGHMC x 2: swap energies with control variates (snapshots every vr_period_epochs)",
    ),
    (
        "cvr-resghmc",
        "cVR-reSGHMC x 2: VR-reSGHMC under cosine lr cycles (thesis 3.5.2)",
    ),
    (
        "deo-sgd",
        "DEO*-SGD x P: non-reversible swaps between momentum-SGD rungs",
    ),
    ("csghmc", "contour SGHMC (power field, importance weights)"),
    (
        "icsghmc",
        "interacting contour SGHMC x P (one shared theta, interacting field)",
    ),
    (
        "sa-sghmc",
        "SGHMC with simulated annealing (lr held, then / 1.01 per epoch; tau / 1.01 per epoch)",
    ),
    ("sa-csghmc", "contour SGHMC with simulated annealing"),
    (
        "sa-icsghmc",
        "interacting contour SGHMC x P with simulated annealing",
    ),
];

/// The samplers whose generic presets decay the lr at 50% and 75% of the run (the Table 6.1
/// protocol of thesis E.4.2); the cyclical, `sa` and DEO* samplers set their lr themselves.
const STEP_DECAY: &[&str] = &[
    "msgd",
    "sghmc",
    "csghmc",
    "icsghmc",
    "resghmc",
    "vr-resghmc",
];

/// Data sets `sgmcmc images` reads, with their default out-of-distribution set.
pub const DATASETS: &[(&str, &str)] = &[
    ("fashion-mnist", "mnist"),
    ("mnist", "fashion-mnist"),
    ("cifar10", "svhn"),
    ("cifar100", "svhn"),
    ("svhn", "cifar10"),
    ("synthetic", "synthetic"),
];

/// No hold of the cyclical lr (and what a run's `config.toml` from before the hold means).
fn no_hold() -> f64 {
    1.0
}

/// The settings of one `sgmcmc images` run (written to the run's `config.toml`, read back with
/// `--config`, stored in its checkpoints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesConfig {
    /// Preset the run started from (`cpu`, `gpu` or a table row, `--list`).
    pub preset: String,
    /// Training and test data ([`DATASETS`]).
    pub dataset: String,
    /// Out-of-distribution set scored beside the test set (`""` for none).
    pub ood: String,
    /// The network: `resnet20`, `resnet32`, `resnet56` (any `resnet{6n+2}`), `wrn16-8`,
    /// `wrn28-10` (any `wrn{6n+4}-{k}`).
    pub model: String,
    /// Channel multiplier of a ResNet (1: 16-32-64 channels; WRNs carry their own).
    pub width: usize,
    /// Sampler name (one of [`IMAGES_SAMPLERS`]).
    pub sampler: String,
    /// Chains (P of the multi-chain samplers, rungs of replica exchange).
    pub chains: usize,
    /// Training images used, the first ones of the training set (0 = all).
    pub train_limit: usize,
    /// Test images scored (0 = all).
    pub test_limit: usize,
    /// Out-of-distribution images scored (0 = all).
    pub ood_limit: usize,
    /// Test images of each chain's accuracy curve at evaluations that collect nothing (the
    /// first ones of the test set; 0 = all): collected networks and the last evaluation
    /// always score the whole test set.
    pub curve_limit: usize,
    /// Minibatch size.
    pub batch: usize,
    /// Epochs (passes of the step counter over the training set; every chain steps on every
    /// batch). Fractions are allowed.
    pub epochs: f64,
    /// Learning rate at full-data scale (rung 0's for replica exchange; the peak of cyclical
    /// schedules).
    pub lr: f64,
    /// Momentum `mu` (friction `1 - mu`).
    pub momentum: f64,
    /// Sampling temperature `tau`.
    pub temperature: f64,
    /// Prior precision at full-data scale ("weight decay 25" in the papers, `25 / N` on the
    /// mean loss).
    pub weight_decay: f64,
    /// Training augmentation (random crop after zero padding, horizontal flip).
    pub augment: Augment,
    /// A step decay of the lr: multiplied by `lr_gamma` at each of these fractions of the run
    /// (thesis E.4.2, the Table 6.1 protocol: x0.2 at epochs 250 and 375 of 500, i.e. 0.5 and
    /// 0.75); empty: none.
    pub lr_milestones: Vec<f64>,
    /// The factor of `lr_milestones`.
    pub lr_gamma: f64,
    /// Evaluate every this many epochs (and at the end).
    pub eval_every: f64,
    /// Collect models for the model average from this epoch on.
    pub burn_epochs: f64,
    /// Checkpoint every this many epochs (0 = never).
    pub checkpoint_every: f64,
    /// Cycles of cyclical schedules.
    pub cycles: u64,
    /// Fraction of each cycle after which cyclical samplers collect (the sampling phase).
    pub cycle_sampling: f64,
    /// Fraction of each cycle from which the cosine lr is held constant (1: no hold). Thesis
    /// E.4.4: "the learning rate in the last 15% of each cycle is fixed at a constant value"
    /// for cycSGHMC and MultiSWAG (0.85); cycSWAG also fits its Gaussian to those iterates only
    /// (`cycle_sampling` 0.85), the constant-lr trajectory SWAG's moments describe.
    #[serde(default = "no_hold")]
    pub cycle_hold: f64,
    /// cycSWAG: deviations kept by each cycle's fit (the rank `K`).
    pub swag_rank: usize,
    /// cycSWAG: iterates added to the fit per epoch of the sampling phase.
    pub swag_per_epoch: usize,
    /// cycSWAG: networks drawn from each cycle's fit.
    pub swag_samples: usize,
    /// cycSWAG: training batches that recompute a draw's BatchNorm statistics.
    pub bn_batches: usize,
    /// Contour `zeta`.
    pub zeta: f64,
    /// Contour bins `m`.
    pub bins: usize,
    /// Contour bin width `du` on the stochastic energy.
    pub du: f64,
    /// Lower end of the energy partition.
    pub u_min: f64,
    /// Replica exchange: the swap correction `F` (the variance estimate is divided by it).
    pub correction: f64,
    /// Replica exchange: the temperature of the hot rung(s) over `temperature`; DEO*: the top
    /// learning rate over `lr`.
    pub ladder_ratio: f64,
    /// Replica exchange (Metropolis): the learning rate of each hotter rung over the one
    /// below (thesis 2.5.2: 1.5).
    pub hot_lr_ratio: f64,
    /// Replica exchange (Metropolis): fresh minibatches per refresh of the swap variance
    /// `sigma2_hat`, once per epoch on average (thesis 2.5.2: 10).
    pub variance_draws: usize,
    /// Replica exchange (Metropolis): smoothing `gamma` of `sigma2_hat` (thesis eq. 2.14:
    /// 0.3).
    pub variance_smoothing: f64,
    /// VR-reSGHMC: epochs between control-variate snapshots (thesis 3.5.2: m = 392 steps,
    /// 2 epochs at batch 256).
    pub vr_period_epochs: f64,
    /// `sa` variants: the lr is held up to epoch `anneal_hold_epochs` and divided by
    /// `anneal_factor` from the next epoch on, once per epoch (399: "fixed in the first 400
    /// epochs", first division at 0-based epoch 400).
    pub anneal_hold_epochs: u64,
    /// `sa` variants: the division factor of the lr per epoch after the hold.
    pub anneal_factor: f64,
    /// `sa` variants: the division factor of the temperature per epoch (from the start).
    pub anneal_temperature_factor: f64,
    /// Importance weights of the contour samplers' model average (see `sgmcmc mnist`).
    pub weights: WeightRule,
    /// Training batches prepared ahead on a background thread (read, augmented, normalised and
    /// uploaded while the device steps); 0 prepares each when the step asks. Changes no result.
    #[serde(default = "default_prefetch")]
    pub prefetch: usize,
    /// Save the networks the model average collects, with their log weights, in `samples/`
    /// (and the network's description in `model.json`) for `sgmcmc predict`. One process;
    /// not cycSWAG, whose average is of its SWAG draws.
    #[serde(default)]
    pub save_samples: bool,
    /// Run seed.
    pub seed: u64,
}

/// Batches kept ready by default: one in the queue and one being made hide a batch that takes
/// less time than a step.
fn default_prefetch() -> usize {
    2
}

impl ImagesConfig {
    /// The generic preset `name` (`gpu`: the papers' protocol; `cpu`: shortened) for
    /// `sampler` on `dataset` with `model`.
    pub fn preset(name: &str, dataset: &str, model: &str, sampler: &str) -> Result<Self, AppError> {
        known_sampler(sampler)?;
        let ood = DATASETS
            .iter()
            .find(|d| d.0 == dataset)
            .map(|d| d.1)
            .ok_or_else(|| {
                let known: Vec<&str> = DATASETS.iter().map(|d| d.0).collect();
                AppError::Usage(format!(
                    "unknown dataset `{dataset}` (known: {})",
                    known.join(", ")
                ))
            })?;
        let chains = match sampler {
            "resghmc" | "vr-resghmc" | "cvr-resghmc" => 2,
            "deo-sgd" | "icsghmc" | "sa-icsghmc" => 4,
            _ => 1,
        };
        let n = paper_n(dataset) as f64;
        let gpu = Self {
            preset: name.into(),
            dataset: dataset.into(),
            ood: ood.into(),
            model: model.into(),
            width: 1,
            sampler: sampler.into(),
            chains,
            train_limit: 0,
            test_limit: 0,
            ood_limit: 0,
            curve_limit: 0,
            batch: 256,
            epochs: 500.0,
            // PyTorch's 0.1 on the mean loss (thesis E.4.2: lr 2e-6 at N = 50,000).
            lr: 0.1 / n,
            momentum: 0.9,
            temperature: if sampler.ends_with("msgd")
                || sampler == "deo-sgd"
                || sampler == "cycswag"
            {
                0.0
            } else {
                // The tables' tempered posteriors (thesis 5.4, 6.4.2: tau = 0.0003 N^-1 scale).
                3e-4
            },
            weight_decay: 25.0,
            augment: Augment::PAPER,
            // Thesis E.4.2 (Table 6.1): the constant-lr samplers decay by 0.2 at 50% and 75%.
            lr_milestones: if STEP_DECAY.contains(&sampler) {
                vec![0.5, 0.75]
            } else {
                Vec::new()
            },
            lr_gamma: 0.2,
            eval_every: 5.0,
            burn_epochs: 250.0,
            checkpoint_every: 10.0,
            cycles: 4,
            cycle_sampling: if sampler == "cycswag" { 0.85 } else { 0.7 },
            cycle_hold: if matches!(sampler, "cycswag" | "cycsghmc") {
                0.85
            } else {
                no_hold()
            },
            swag_rank: 20,
            swag_per_epoch: 1,
            swag_samples: 10,
            bn_batches: 50,
            // Thesis E.4.4 and the ICSGLD reference README: m = 200, du = 200, zeta = 3e6,
            // partition from u0 = 2e4.
            zeta: 3e6,
            bins: 200,
            du: 200.0,
            u_min: 2e4,
            correction: 1e5,
            ladder_ratio: 2.0,
            hot_lr_ratio: 1.0,
            variance_draws: 10,
            variance_smoothing: 0.3,
            vr_period_epochs: 2.0,
            anneal_hold_epochs: 399,
            anneal_factor: 1.01,
            anneal_temperature_factor: 1.01,
            weights: WeightRule::Reference,
            prefetch: default_prefetch(),
            save_samples: false,
            seed: 1,
        };
        match name {
            "gpu" => Ok(gpu),
            "cpu" => Ok(Self::cpu(gpu)),
            other => Err(AppError::Usage(format!(
                "unknown preset `{other}` (known: cpu, gpu, and the table rows of --list)"
            ))),
        }
    }

    /// The CPU version of `gpu`: the same sampler, model, chains and data (the full training
    /// and test sets) with a schedule shortened to fit 10 to 20 minutes per sampler on a 2-core
    /// machine (ResNet20 on 28x28 images at about 400 training and 800 test images per
    /// second): batch 128, 4 epochs for one chain, 2 for two, 8 chain-epochs for more (2 epochs
    /// for four; every chain steps on every batch), the step-decay samplers' lr divided by 5
    /// at half the run, networks collected from 62.5% of the run on (once they have settled
    /// at that lr: a third of an epoch after the decay for four chains, two thirds for one),
    /// no augmentation, 12 evaluations (8 for two chains, 6 for more) whose curves score the
    /// first 2,000 test images unless they collect, 2,000 out-of-distribution images, and the
    /// contour samplers' energy partition twice as wide.
    ///
    /// Why (Fashion-MNIST, ResNet20, seed 1, README): with crops and flips and the lr divided
    /// again at 65%, SGHMC's four collected networks were nearly one network (BMA 91.03%, NLL
    /// 0.247 against the last sample's 0.246); without augmentation the short runs fit better
    /// (92.2% for one network) and leave the last sample overconfident, and at lr / 5 the
    /// collected networks still differ: BMA 92.51%, NLL 0.206 and ECE 0.58% against the last
    /// sample's 0.209 and 1.08%. Collecting from the decay on (50%) put the networks that had
    /// not settled yet into the average (NLL 0.215).
    pub fn cpu(gpu: Self) -> Self {
        let (epochs, evaluations) = match gpu.chains {
            1 => (4.0, 12.0),
            2 => (2.0, 8.0),
            p => (8.0 / p as f64, 6.0),
        };
        let lr_milestones = if gpu.lr_milestones.is_empty() {
            Vec::new()
        } else {
            vec![0.5]
        };
        Self {
            lr_milestones,
            // The energies of a short run stay above those of the papers' 500 epochs
            // (Fashion-MNIST ICSGHMC: 40,000-65,000 after the first epoch); the partition must
            // cover what the chains visit after warm-up (thesis E.2.1), so its width doubles.
            du: 2.0 * gpu.du,
            batch: 128,
            epochs,
            ood_limit: 2000,
            curve_limit: 2000,
            eval_every: epochs / evaluations,
            burn_epochs: 0.625 * epochs,
            checkpoint_every: epochs / 4.0,
            augment: Augment::NONE,
            anneal_hold_epochs: 0,
            cycles: gpu.cycles.min(2),
            swag_per_epoch: 20,
            swag_samples: 2,
            bn_batches: 20,
            ..gpu
        }
    }

    /// Checks what the samplers do not check themselves.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |what: String| Err(AppError::Usage(what));
        sgmcmc_engine::limits::check_seed(self.seed)?;
        known_sampler(&self.sampler)?;
        self.architecture()?;
        if self.chains == 0 || self.chains > 64 {
            return bad(format!("chains must be in 1..=64, got {}", self.chains));
        }
        if self.batch == 0 || self.width == 0 {
            return bad("batch and width must be >= 1".into());
        }
        if self.save_samples && self.sampler == "cycswag" {
            return bad(
                "--save-samples saves the chains' kept networks; cycswag averages SWAG draws \
                 instead"
                    .into(),
            );
        }
        if self.prefetch > 64 {
            return bad(format!(
                "prefetch must be in 0..=64 batches, got {}",
                self.prefetch
            ));
        }
        for (name, v) in [
            ("epochs", self.epochs),
            ("eval_every", self.eval_every),
            ("lr", self.lr),
        ] {
            if !v.is_finite() || v <= 0.0 {
                return bad(format!("{name} must be finite and > 0 (got {v})"));
            }
        }
        // At least one step per epoch: epochs beyond the step budget are beyond any run.
        if self.epochs > sgmcmc_engine::limits::MAX_STEPS as f64 {
            return bad(format!(
                "epochs {:e} is beyond any run (at least one step each; at most 2^40 = {} steps)",
                self.epochs,
                sgmcmc_engine::limits::MAX_STEPS
            ));
        }
        for (name, v) in [
            ("burn_epochs", self.burn_epochs),
            ("checkpoint_every", self.checkpoint_every),
            ("weight_decay", self.weight_decay),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(format!("{name} must be finite and >= 0 (got {v})"));
            }
        }
        if let Some(m) = self
            .lr_milestones
            .iter()
            .find(|m| !(**m > 0.0 && **m < 1.0))
        {
            return bad(format!(
                "lr_milestones are fractions of the run, strictly between 0 and 1; got {m}"
            ));
        }
        if self.burn_epochs >= self.epochs {
            return bad(format!(
                "burn_epochs ({}) must be below epochs ({}): no model would be averaged",
                self.burn_epochs, self.epochs
            ));
        }
        if self.sampler == "cycswag" && (self.swag_rank < 2 || self.swag_samples == 0) {
            return bad("cycswag needs swag_rank >= 2 and swag_samples >= 1".into());
        }
        if self.augment.pad > 16 {
            return bad(format!(
                "augment.pad must be at most 16, got {}",
                self.augment.pad
            ));
        }
        self.spec(1000, 10).map(|_| ())
    }

    /// The network (`model`: resnet20/32/56, wrn16-8, wrn28-10, ...).
    pub fn architecture(&self) -> Result<Architecture, AppError> {
        self.model
            .parse()
            .map_err(|e: UnknownModel| AppError::Usage(e.to_string()))
    }

    /// The sampler's registry settings.
    pub fn settings(&self, steps_per_epoch: u64) -> SamplerSettings {
        let (name, annealed) = match self.sampler.strip_prefix("sa-") {
            Some(base) => (base, true),
            None if self.sampler == "cycswag" => ("cycmsgd", false),
            // Replica exchange on a network refreshes its swap variance from fresh minibatches:
            // the variance-reduced sampler, with or without control variates.
            None if self.sampler.ends_with("resghmc") => ("vr-resghmc", false),
            None => (self.sampler.as_str(), false),
        };
        let mut s = SamplerSettings {
            lr: self.lr,
            temperature: self.temperature,
            momentum: self.momentum,
            ..SamplerSettings::named(name)
        };
        s.cyclical.cycles = self.cycles;
        s.cyclical.sampling_threshold = self.cycle_sampling;
        s.cyclical.hold = self.cycle_hold;
        s.annealing.factor = self.anneal_factor;
        s.annealing.temperature_factor = Some(self.anneal_temperature_factor);
        s.annealing.steps_per_epoch = steps_per_epoch.max(1);
        s.annealing.lr_milestones = self.lr_milestones.iter().map(|f| f * self.epochs).collect();
        s.annealing.lr_gamma = self.lr_gamma;
        if annealed {
            s.annealing.lr_hold_epochs = Some(self.anneal_hold_epochs);
        }
        s.contour.zeta = self.zeta;
        s.contour.bins = self.bins;
        s.contour.du = self.du;
        s.contour.u_min = Some(self.u_min);
        s.contour.weights = self.weights;
        s.contour.theta_init = Some(ThetaInit::Uniform);
        match name {
            "vr-resghmc" => {
                let per_epoch = steps_per_epoch.max(1) as f64;
                let rungs = 0..self.chains as i32;
                s.replica.temperatures = rungs
                    .clone()
                    .map(|r| self.temperature * self.ladder_ratio.powi(r))
                    .collect();
                s.replica.lrs = rungs.map(|r| self.lr * self.hot_lr_ratio.powi(r)).collect();
                s.replica.correction = self.correction;
                s.replica.variance_period = steps_per_epoch.max(2);
                s.replica.variance_draws = self.variance_draws;
                s.replica.variance_gamma = Some(self.variance_smoothing);
                s.replica.control_period = match self.sampler.as_str() {
                    "resghmc" => 0,
                    _ => ((self.vr_period_epochs * per_epoch).round() as u64).max(1),
                };
                s.replica.cyclical_lr = self.sampler == "cvr-resghmc";
            }
            "deo-sgd" => s.replica.lr_max = self.lr * self.ladder_ratio,
            _ => {}
        }
        s
    }

    /// The sampler to build for a run of `steps` steps of `steps_per_epoch` per epoch.
    pub fn spec(&self, steps: u64, steps_per_epoch: u64) -> Result<SamplerSpec, AppError> {
        known_sampler(&self.sampler)?;
        let ctx = BuildContext::steps(steps.max(self.cycles)).chains(self.chains);
        Ok(self.settings(steps_per_epoch).spec(&ctx)?)
    }
}

/// Training images of the full data sets (the `N` of the default learning rates).
pub fn paper_n(dataset: &str) -> usize {
    match dataset {
        "fashion-mnist" | "mnist" => 60_000,
        "svhn" => 73_257,
        "synthetic" => 64,
        _ => 50_000,
    }
}

fn known_sampler(name: &str) -> Result<(), AppError> {
    if IMAGES_SAMPLERS.iter().any(|(n, _)| *n == name) {
        return Ok(());
    }
    let known: Vec<&str> = IMAGES_SAMPLERS.iter().map(|s| s.0).collect();
    Err(AppError::Usage(format!(
        "unknown sampler `{name}` (known: {})",
        known.join(", ")
    )))
}

impl sgmcmc_engine::experiment::RunSettings for ImagesConfig {
    fn sampler(&self) -> &str {
        &self.sampler
    }

    fn chains(&self) -> usize {
        self.chains
    }
}
