//! The bandit's agents: a registry sampler over `chains` MLPs, how many sampler steps it takes
//! per bandit step, and how it acts.
//!
//! Every agent acts greedily on the importance-weighted mean of its chains' predicted rewards
//! (the reference code's `AgentDN.evaluate`): chain `p` weighs `w_p + 1e-3`, `w_p` the sampler's
//! weight of its last step (`theta[J_p]^zeta` for contour samplers, 1 otherwise), normalised over
//! the chains. For a Langevin sampler this is Thompson sampling from the chains' current
//! parameters; EpsGreedy also explores uniformly with probability `epsilon`. Dropout's chains
//! predict the mean of `samples` masked passes (a fresh draw at every bandit step), as in
//! training.

use serde::{Deserialize, Serialize};
use sgmcmc_models::mlp::{Dropout, DropoutLayers};
use sgmcmc_samplers::control::RandomField;
use sgmcmc_samplers::registry::SamplerSettings;

/// One agent of a bandit run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Name in the outputs.
    pub name: String,
    /// Parallel chains (networks).
    pub chains: usize,
    /// Multiplies the preset's sampler steps per bandit step (4 for a single chain x T4).
    pub iters_factor: u64,
    /// Probability of a uniformly random action.
    pub epsilon: f64,
    /// The lr is multiplied by this after every training round (1: constant).
    pub lr_decay: f64,
    /// Dropout on the networks' hidden activations, in training and in acting (none for
    /// every agent but `dropout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropout: Option<Dropout>,
    /// The registry sampler.
    pub sampler: SamplerSettings,
}

/// Every agent name `--agents` takes.
pub const AGENTS: &[&str] = &[
    "epsgreedy",
    "constsgd",
    "dropout",
    "psgld",
    "pcsgld",
    "picsgld",
];

/// The reference code's learning rate of SGD on `U = N * mean squared error` (thesis E.4.3).
const SGD_LR: f64 = 1e-6;

/// The named agent. pSGLD's RMSprop preconditioner here divides by `lambda + sqrt(V)` of the
/// energy's gradient, the reference's by `1e-3 + sqrt(V)` of the gradient over the batch size
/// (512), so its `lr = 3e-7` and `lambda = 1e-3` become `3e-7 * 512` and `1e-3 * 512`;
/// its moving average keeps `0.99` of `V` per step. Temperature 0.3 as in the reference.
/// Contour agents: `m = 100` bins of `du = 10` from `u_min`, `zeta = 20`.
/// Dropout: ConstSGD's SGD on networks whose last hidden layer drops units with probability
/// 0.5, each prediction the mean of 5 masked passes (the reference's `-rate 0.5 -samples 5`
/// on its `DropoutNet`, `AgentDropout` and `DropoutRLReg`).
pub fn agent(name: &str, u_min: f64) -> Option<AgentConfig> {
    let batch = 512.0;
    let psgld = |sampler: &str| SamplerSettings {
        lr: 3e-7 * batch,
        temperature: 0.3,
        psgld_alpha: 0.99,
        psgld_lambda: 1e-3 * batch,
        ..SamplerSettings::named(sampler)
    };
    let contour = |field: RandomField| {
        let mut s = psgld("pcsgld");
        s.contour.zeta = 20.0;
        s.contour.bins = 100;
        s.contour.du = 10.0;
        s.contour.u_min = Some(u_min);
        s.contour.field = Some(field);
        s
    };
    let sgd = SamplerSettings {
        lr: SGD_LR,
        temperature: 0.0,
        ..SamplerSettings::named("sgd")
    };
    let base = |sampler: SamplerSettings| AgentConfig {
        name: name.to_string(),
        chains: 4,
        iters_factor: 1,
        epsilon: 0.0,
        lr_decay: 1.0,
        dropout: None,
        sampler,
    };
    Some(match name {
        "epsgreedy" => AgentConfig {
            epsilon: 0.003,
            lr_decay: 0.999,
            ..base(sgd)
        },
        "constsgd" => base(sgd),
        "dropout" => AgentConfig {
            dropout: Some(Dropout {
                rate: 0.5,
                samples: 5,
                layers: DropoutLayers::Last,
            }),
            ..base(sgd)
        },
        "psgld" => base(psgld("psgld")),
        "pcsgld" => AgentConfig {
            chains: 1,
            iters_factor: 4,
            ..base(contour(RandomField::Power))
        },
        "picsgld" => base(contour(RandomField::Interacting)),
        _ => return None,
    })
}

/// The normalised acting weights `(w_p + 1e-3) / sum` from the chains' log weights.
pub fn acting_weights(log_weights: &[f64], chains: usize) -> Vec<f64> {
    let raw: Vec<f64> = (0..chains)
        .map(|p| log_weights.get(p).map_or(1.0, |lw| lw.exp()) + 1e-3)
        .collect();
    let total: f64 = raw.iter().sum();
    raw.into_iter().map(|w| w / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_is_known_and_weights_normalise() {
        for name in AGENTS {
            assert!(agent(name, 0.0).is_some(), "{name}");
        }
        assert!(agent("bogus", 0.0).is_none());
        // Before any step (no log weights): equal weights.
        assert_eq!(acting_weights(&[], 4), vec![0.25; 4]);
        // Weights e^0 = 1 and e^-inf = 0: (1.001, 0.001) / 1.002.
        let w = acting_weights(&[0.0, f64::NEG_INFINITY], 2);
        assert!((w[0] - 1.001 / 1.002).abs() < 1e-15 && (w[1] - 0.001 / 1.002).abs() < 1e-15);
    }
}
