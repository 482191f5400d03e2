//! The skeleton of a regression experiment: an MLP on one split of a tabular data set (the UCI
//! benchmark layout, [`sgmcmc_data::SplitData`]), sampled by any registry sampler, scored by its
//! model average. The caller supplies the split, the network and the run's settings
//! ([`RegressionRun`]); [`run_regression`] does the rest and returns what the run measured
//! ([`RegressionResult`]).
//!
//! The run (the CSGLD paper's protocol, sec. 4.2, in its structure): features standardized with
//! the training split (the target too when [`RegressionRun::standardize_target`]); a Gaussian
//! likelihood of fixed precision or of a precision sampled with the weights
//! ([`RegressionNoise`]); prior precision `N * weight_decay`; minibatches of the training rows
//! shuffled in place by one Fisher-Yates pass per epoch, the last partial batch dropped. The
//! model average takes [`RegressionRun::models`] models evenly over the second half of the run
//! from every sample chain (every chain, or the chain on rung 0 of replica exchange),
//! importance-weighted for contour samplers (each model's weight is that of the step it was
//! taken before). RMSE is in original units. With fixed noise the test NLL uses a Gaussian
//! predictive with the models' spread plus a plug-in noise variance, the mean squared training
//! residual of the averaged prediction (a fixed likelihood precision is a modelling choice, not
//! an estimate of the noise).
//!
//! **Learned noise** ([`RegressionNoise::Learned`]): the MLP is wrapped in
//! [`sgmcmc_models::WithNoise`] so the noise precision `lambda = e^s` is sampled with the
//! weights under a `Gamma(shape, rate)` prior (see `sgmcmc_models::noise`), starting from
//! `lambda = 1`. The test NLL is then that of the posterior predictive itself: the weighted
//! mixture over the collected models, each a Gaussian with its own mean and its own sampled
//! `1 / lambda_k` (`sgmcmc_models::regression_average`), in original units. RMSE is unchanged
//! (the mixture's mean).
//!
//! Replica exchange draws its swap variance from fresh minibatches ([`fresh`]). A command's
//! series of runs (seeds, the cells of a table), with their result files and the failed runs
//! kept as rows: [`run_regressions`] (over ranks: [`run_regressions_on`]).

pub mod fresh;
mod run;
mod series;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sgmcmc_models::Likelihood;
use sgmcmc_samplers::control::RandomField;
use sgmcmc_samplers::diagnostics::ContourStats;
use sgmcmc_samplers::registry::SamplerSettings;

pub use run::{run_regression, run_regression_on};
pub use series::{SeriesRun, run_regressions, run_regressions_on};

use crate::error::RunError;
use crate::observers::{TracePart, TraceSummary};

/// The observation noise model of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RegressionNoise {
    /// Fixed noise precision (the CSGLD paper: 1 in the target's units).
    Fixed {
        /// `lambda`.
        precision: f64,
    },
    /// Noise precision sampled with the weights under a `Gamma(shape, rate)` prior.
    Learned {
        /// Gamma shape `a`.
        shape: f64,
        /// Gamma rate `b` (squared target units).
        rate: f64,
    },
}

impl RegressionNoise {
    /// The default learned-noise prior `Gamma(1, 0.01)`: an exponential prior on `lambda` with
    /// mean 100, weak for any noise sd above ~0.1 target units, so the data (hundreds of
    /// points) set `lambda`. (PBP's `Gamma(6, 6)` assumes a standardized target; the paper's
    /// protocol keeps the target in original units.)
    pub fn learned(shape: Option<f64>, rate: Option<f64>) -> Self {
        Self::Learned {
            shape: shape.unwrap_or(1.0),
            rate: rate.unwrap_or(0.01),
        }
    }

    /// Checks the precision (finite, `> 0`) or the Gamma parameters (finite, `>= 0`).
    pub fn validate(self) -> Result<(), RunError> {
        self.likelihood()
            .validate()
            .map_err(|e| RunError::Setting(e.to_string()))
    }

    /// The likelihood of the model.
    pub fn likelihood(self) -> Likelihood {
        match self {
            Self::Fixed { precision } => Likelihood::Gaussian { precision },
            Self::Learned { shape, rate } => Likelihood::GaussianLearned { shape, rate },
        }
    }
}

/// The settings of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegressionRun {
    /// The sampler (registry name and hyper-parameters; lr at full-data scale).
    pub sampler: SamplerSettings,
    /// Chains (rungs of replica exchange, ICSGLD's P).
    pub chains: usize,
    /// Epochs.
    pub epochs: usize,
    /// Minibatch size.
    pub batch: usize,
    /// L2 weight decay on the mean loss.
    pub weight_decay: f64,
    /// Models averaged (per sample chain).
    pub models: usize,
    /// Seed (initialisation, minibatches, noise).
    pub seed: u64,
    /// Standardize the target too (not the CSGLD paper's protocol).
    pub standardize_target: bool,
    /// Observation noise.
    pub noise: RegressionNoise,
    /// When set, the sampler's lr is this divided by the training split's rows (a fixed step on
    /// the mean loss whatever `N`).
    #[serde(default)]
    pub lr_per_row: Option<f64>,
}

impl RegressionRun {
    /// The run with the lr resolved for a training split of `rows` rows.
    pub fn resolved(&self, rows: usize) -> Self {
        match self.lr_per_row {
            Some(eta) => Self {
                lr_per_row: None,
                ..self.clone()
            }
            .with_lr(eta / rows.max(1) as f64),
            None => self.clone(),
        }
    }

    /// Sets the learning rate (full-data scale); a DEO* ladder tops out at 5 x lr.
    pub fn with_lr(mut self, lr: f64) -> Self {
        self.sampler.lr = lr;
        self.sampler.replica.lr_max = 5.0 * lr;
        self
    }

    /// Sets the contour field (the CSGLD paper's eq. 9 is the power field).
    pub fn with_field(mut self, field: Option<RandomField>) -> Self {
        self.sampler.contour.field = field;
        self
    }
}

/// What one run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegressionResult {
    /// Test RMSE in original units.
    pub rmse: f64,
    /// Test Gaussian NLL per point in original units.
    pub nll: f64,
    /// Sampler steps.
    pub steps: u64,
    /// Wall time.
    pub wall_seconds: f64,
    /// Why the run failed (a diverged chain, ...); its metrics are then NaN.
    pub error: Option<String>,
    /// With learned noise: the weighted mean over the collected models of the sampled noise sd
    /// `lambda^-1/2`, in original units.
    pub noise_sd: Option<f64>,
    /// Contour samplers: bins visited, multiplier range, effective number of models.
    pub contour: Option<ContourStats>,
    /// The model average's test predictions in original units (its mean).
    #[serde(default)]
    pub predictions: Vec<f64>,
    /// Convergence diagnostics of the averaged models' energies: R-hat (two or more chains),
    /// bulk and tail ESS, MCSE, and the Pareto `k-hat` of contour samplers' weights.
    #[serde(default)]
    pub diagnostics: Option<TraceSummary>,
    /// The draws the diagnostics come from, every chain's (on rank 0; not kept in the result
    /// files a resume reads back).
    #[serde(skip)]
    pub trace: Option<TracePart>,
    /// The settings the run ran with (a resume refuses to read the result back under others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<RegressionRun>,
}

impl RegressionResult {
    /// A run that failed for `why`: NaN metrics, its reason recorded.
    pub fn failed(why: String) -> Self {
        Self {
            rmse: f64::NAN,
            nll: f64::NAN,
            steps: 0,
            wall_seconds: 0.0,
            error: Some(why),
            noise_sd: None,
            contour: None,
            predictions: Vec::new(),
            diagnostics: None,
            trace: None,
            settings: None,
        }
    }
}

/// Where a run keeps its files (checkpoints, saved samples).
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// The run's folder (e.g. `seed-K` in the command's folder).
    pub dir: PathBuf,
    /// Steps between checkpoints (0: none).
    pub checkpoint_every: u64,
    /// Save every averaged model as a burn record under `dir/samples`.
    pub save_samples: bool,
    /// Continue from `dir/checkpoint.cbor` if it exists.
    pub resume: bool,
    /// The command whose run this is (`sgmcmc COMMAND --resume`, as errors name it).
    pub command: &'static str,
    /// Where the warning of a run folder that cannot be locked goes.
    pub warn: fn(&str),
}

impl RunFiles {
    /// The folder of the command's run that holds this one (what a resume names).
    fn run_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }
}

/// The refusal of the file at `path` (a checkpoint, a finished run's result file) written with
/// settings `old` (`None`: unreadable) other than the `now` of the run's `config.toml`, naming
/// every changed setting by its dotted path.
pub fn changed_settings<T: Serialize>(path: &Path, old: Option<&T>, now: &T) -> RunError {
    let mut changed = old.map_or_else(Vec::new, |old| crate::settings::changes(now, old));
    if changed.is_empty() {
        changed.push("the run settings".into());
    }
    RunError::Setting(format!(
        "{} was written with other settings than config.toml gives now ({}); restore \
         config.toml or start the run again with --force",
        path.display(),
        changed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;
    use sgmcmc_data::UciDataset;
    use sgmcmc_data::uci::write_synthetic;
    use sgmcmc_models::{Activation, MlpConfig};

    use super::*;

    /// SGLD or CSGLD (`sampler`) at temperature 1 with `noise`, 200 epochs of batches of 50,
    /// the contour partition of the UCI benchmark.
    fn run_of(sampler: &str, noise: RegressionNoise) -> RegressionRun {
        let mut s = SamplerSettings::named(sampler);
        s.temperature = 1.0;
        s.contour.zeta = 1.0;
        s.contour.theta_init = Some(sgmcmc_samplers::control::ThetaInit::Uniform);
        s.contour.du = 100.0;
        s.contour.bins = 1000;
        s.contour.u_min = Some(0.0);
        RegressionRun {
            sampler: s,
            chains: 1,
            epochs: 200,
            batch: 50,
            weight_decay: 1e-4,
            models: 50,
            seed: 1,
            standardize_target: false,
            noise,
            lr_per_row: None,
        }
        .with_lr(1e-4)
    }

    #[test]
    fn learned_noise_moves_from_its_start_to_the_residual_scale() {
        // y = w.x + sin(x_0) + 0.1 N(0, 1) over 4 features (target sd ~1.5). The precision
        // starts at 1 (noise sd 1.0, ten times the true noise); sampled with the weights it must
        // settle near the scale of the residuals (the fitted MLP's RMSE is ~0.1-0.3 here), so
        // its sd ends well below the start and above nothing-but-noise. The NLL is that of
        // the mixture of the collected models' Gaussians, finite.
        let dir = std::env::temp_dir().join(format!("sgmcmc-reg-noise-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_synthetic(&dir, 400, 4, 1, 0.1, 7).unwrap();
        let split = UciDataset::load(&dir).unwrap().split(0).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let device = Device::flex().autodiff();
        let mlp = MlpConfig {
            inputs: 4,
            hidden: vec![50],
            outputs: 1,
            activation: Activation::Relu,
        };
        for sampler in ["sgld", "csgld"] {
            let run = run_of(sampler, RegressionNoise::learned(None, None));
            let r = run_regression(&run, &mlp, &split, &device, None).unwrap();
            let sd = r.noise_sd.unwrap();
            println!(
                "{sampler}: RMSE {:.3}, NLL {:.3}, sampled noise sd {sd:.3}",
                r.rmse, r.nll
            );
            assert!(r.rmse < 0.5, "{sampler}: RMSE {}", r.rmse);
            assert!(r.nll.is_finite(), "{sampler}: NLL {}", r.nll);
            assert!((0.1..0.8).contains(&sd), "{sampler}: noise sd {sd}");
        }
        // A fixed precision reports no sampled noise.
        let mut run = run_of("sgld", RegressionNoise::Fixed { precision: 1.0 });
        run.epochs = 5;
        let r = run_regression(&run, &mlp, &split, &device, None).unwrap();
        assert!(r.noise_sd.is_none());
        run.noise = RegressionNoise::learned(Some(-1.0), None);
        assert!(matches!(
            run_regression(&run, &mlp, &split, &device, None),
            Err(RunError::Setting(m)) if m.contains("noise shape")
        ));
    }

    #[test]
    fn a_changed_setting_is_named_by_its_path() {
        let now = run_of("sgld", RegressionNoise::Fixed { precision: 1.0 });
        let old = now.clone().with_lr(2e-4);
        let e = changed_settings(Path::new("r.json"), Some(&old), &now).to_string();
        assert!(
            e.starts_with("r.json was written with other settings"),
            "{e}"
        );
        let names =
            "(sampler.lr = 0.0001 (was 0.0002), sampler.replica.lr_max = 0.0005 (was 0.001))";
        assert!(e.contains(names), "{e}");
        let e = changed_settings::<RegressionRun>(Path::new("r.json"), None, &now).to_string();
        assert!(e.contains("(the run settings)"), "{e}");
    }
}
