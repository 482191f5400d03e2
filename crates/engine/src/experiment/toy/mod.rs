//! The skeleton of a toy experiment: a registry sampler on an analytic target of
//! `sgmcmc_testfunctions` (host fast path or a tensor device, one process or the ranks of a
//! job), its kept samples folded into mode masses, a weighted mean, traces for R-hat and ESS,
//! plot samples and log rows ([`run_toy`], [`ToyOutcome`]). The caller supplies the settings
//! ([`ToyConfig`], e.g. `sgmcmc toy`'s presets, files and flags) and the report.

mod collector;
mod persist;
mod run;

pub use persist::Persist;
pub use run::{ToyOutcome, check, run_toy, run_toy_on};

use serde::{Deserialize, Serialize};
#[cfg(feature = "fault-injection")]
use sgmcmc_samplers::ensemble::Fault;
use sgmcmc_samplers::registry::SamplerSettings;
use sgmcmc_testfunctions::{Noise, TargetChoice};

use crate::DeviceChoice;
use crate::error::RunError;

/// Starting points of the chains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Init {
    /// Every chain at this point.
    Point(Vec<f64>),
    /// Uniform in the target's support box (zeros if it has none), one draw per chain.
    Uniform,
}

/// Configuration of a toy run. The sampler is a registry description
/// ([`SamplerSettings`], the `[sampler]` table of `config.toml`); the rest is the toy's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToyConfig {
    /// Target: a name (`sgmcmc_testfunctions::by_name`, `sgmcmc toy --list`) or a `[target]`
    /// table describing the user's own density (a Gaussian mixture, see
    /// [`sgmcmc_testfunctions::spec`]).
    pub target: TargetChoice,
    /// The sampler (`sgmcmc toy --list` names them) and its hyper-parameters.
    pub sampler: SamplerSettings,
    /// Number of chains.
    pub chains: usize,
    /// Iterations per chain.
    pub iters: u64,
    /// Run seed.
    pub seed: u64,
    /// `host` (f64 fast path) or a tensor backend (chains as rows of one tensor).
    pub device: DeviceChoice,
    /// Steps discarded before collecting samples (default: a tenth of `iters`).
    pub burn_in: Option<u64>,
    /// Keep every `thin`-th sample.
    pub thin: u64,
    /// Starting points.
    pub init: Init,
    /// Override of the target's gradient noise.
    pub gradient_noise: Option<Noise>,
    /// Override of the target's energy noise.
    pub energy_noise: Option<Noise>,
    /// Rows of `metrics.csv` (evenly spaced logging points).
    pub log_points: u64,
    /// At most this many samples go to `samples.csv` and the plot.
    pub max_plot_samples: usize,
    /// A fault on purpose (tests of distributed runs): `{ rank = 1, step = 500, kind =
    /// "diverge" }` makes rank 1's first chain report a NaN energy from step 500 on; `kind =
    /// "kill"` makes the rank's process SIGKILL itself there. Only in a build with the
    /// `fault-injection` feature (the tests'); the shipped binary refuses the table.
    #[cfg(feature = "fault-injection")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

/// The toys' sampler defaults: the registry's, with the toys' stochastic-approximation steps
/// `omega_k = min(0.003, 10 / (k^0.8 + 100))`.
pub fn toy_sampler(name: &str) -> SamplerSettings {
    let mut s = SamplerSettings::named(name);
    s.contour.omega_max = 0.003;
    s.contour.omega_a = 10.0;
    s.contour.omega_alpha = 0.8;
    s.contour.omega_b = 100.0;
    s
}

impl Default for ToyConfig {
    fn default() -> Self {
        Self {
            target: "nine-mode".into(),
            sampler: toy_sampler("sgld"),
            chains: 1,
            iters: 100_000,
            seed: 1,
            device: DeviceChoice::Host,
            burn_in: None,
            thin: 1,
            init: Init::Uniform,
            gradient_noise: None,
            energy_noise: None,
            log_points: 1000,
            max_plot_samples: 20_000,
            #[cfg(feature = "fault-injection")]
            fault: None,
        }
    }
}

impl ToyConfig {
    /// Steps discarded before collecting.
    pub fn burn_in(&self) -> u64 {
        self.burn_in.unwrap_or(self.iters / 10)
    }

    /// Checks what the sampler library does not check itself.
    pub fn validate(&self) -> Result<(), RunError> {
        if self.chains == 0 {
            return Err(RunError::Setting("chains must be >= 1 (got 0)".into()));
        }
        if self.iters == 0 {
            return Err(RunError::Setting("iters must be >= 1 (got 0)".into()));
        }
        crate::limits::check_steps("iters", Some(self.iters))?;
        crate::limits::check_chains(&self.sampler.name, self.chains)?;
        if self.thin == 0 {
            return Err(RunError::Setting("thin must be >= 1 (got 0)".into()));
        }
        if self.burn_in() >= self.iters {
            return Err(RunError::Setting(format!(
                "burn_in ({}) must be smaller than iters ({})",
                self.burn_in(),
                self.iters
            )));
        }
        if self.iters - self.burn_in() <= self.thin {
            return Err(RunError::Setting(format!(
                "thin ({}) keeps only one sample per chain of the {} steps after burn-in",
                self.thin,
                self.iters - self.burn_in()
            )));
        }
        // Positions and kernel state are 2-3 arrays of chains x dimension doubles.
        const MAX_CHAINS: usize = 10_000_000;
        if self.chains > MAX_CHAINS {
            return Err(RunError::Setting(format!(
                "chains ({}) must be at most {MAX_CHAINS}",
                self.chains
            )));
        }
        crate::limits::check_seed(self.seed)
    }

    /// The temperature estimates refer to: the reweighting target of AWSGLD, else the sampling
    /// temperature.
    pub fn target_temperature(&self) -> f64 {
        self.sampler
            .contour
            .target_temperature
            .unwrap_or(self.sampler.temperature)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sgmcmc_samplers::comm::ThreadGroup;

    use super::*;
    use crate::ranks::Ranks;
    use crate::settings::merge_toml;

    /// A target name given later replaces a `[target]` table, and a table replaces a name.
    #[test]
    fn a_target_name_and_a_target_table_replace_each_other() {
        let table = "[target]\nkind = \"mixture\"\nweights = [1]\nmeans = [[0]]\nsd = [1]\n";
        let custom = merge_toml(&ToyConfig::default(), table, "config").unwrap();
        assert!(matches!(custom.target, TargetChoice::Custom(_)));
        let renamed = merge_toml(&custom, "target = \"nine-mode\"", "config").unwrap();
        assert_eq!(renamed.target, TargetChoice::from("nine-mode"));
        let back = merge_toml(&renamed, table, "config").unwrap();
        assert_eq!(back.target, custom.target);
    }

    /// What a run folded: mode masses, the weighted mean, the first coordinate's traces and
    /// weights, the plot samples and the log rows.
    type Folded = (
        Vec<f64>,
        Vec<f64>,
        Traces,
        Traces,
        Vec<Vec<f64>>,
        Vec<Vec<f64>>,
    );
    type Traces = Vec<Vec<f64>>;

    fn folded(o: &ToyOutcome) -> Folded {
        let modes = o.modes.as_ref().expect("nine-mode has modes").raw_masses();
        let (x0, w) = (o.x0.chains.clone(), o.weights.chains.clone());
        let samples = o.plot_samples.clone();
        (modes, o.mean.mean(), x0, w, samples, o.metrics.clone())
    }

    #[test]
    fn a_run_over_ranks_folds_the_one_process_outcome_to_the_bit() {
        // Independent chains (rank 0 completes the log rows from every rank's energies) and
        // ICSGLD x 4 (one shared theta, importance weights), over two ranks as threads.
        for sampler in ["sgld", "icsgld"] {
            let cfg = ToyConfig {
                sampler: toy_sampler(sampler),
                chains: 4,
                iters: 3000,
                log_points: 30,
                ..ToyConfig::default()
            };
            let one = folded(&run_toy(&cfg, |_, _| ()).unwrap());
            let ranks: Vec<Option<Folded>> = std::thread::scope(|s| {
                let handles: Vec<_> = ThreadGroup::new(2)
                    .into_iter()
                    .map(|g| {
                        let cfg = &cfg;
                        s.spawn(move || {
                            let ranks = Ranks::over(Arc::new(g));
                            let out = run_toy_on(cfg, |_, _| (), &ranks, None).unwrap();
                            out.as_ref().map(folded)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(ranks[1].is_none(), "{sampler}: rank 1 returns nothing");
            assert_eq!(ranks[0].as_ref(), Some(&one), "{sampler}");
        }
    }
}
