//! The bandit's agents: a registry sampler over `chains` MLPs, how many sampler steps it takes
//! per bandit step, and how it acts.
//!
//! The agents of the thesis act greedily on the importance-weighted mean of their chains'
//! predicted rewards (the reference code's `AgentDN.evaluate`, [`Acting::WeightedMean`]): chain
//! `p` weighs `w_p + 1e-3`, `w_p` the sampler's weight of its last step (`theta[J_p]^zeta` for
//! contour samplers, 1 otherwise), normalised over the chains. That is not Thompson sampling:
//! the mean of 4 chains is a posterior-mean estimate, whose spread shrinks with the chains. The
//! Langevin agents also come as `psgld-ts`, `pcsgld-ts` and `picsgld-ts`
//! ([`Acting::Thompson`]): for every decision one chain is drawn with probability `w_p + 1e-3`
//! (normalised) and the agent acts greedily on its prediction alone, i.e. on one approximate
//! posterior draw, as Thompson sampling does (Riquelme et al. 2018). EpsGreedy also explores
//! uniformly with probability `epsilon`. Dropout's chains predict the mean of `samples` masked
//! passes (a fresh draw at every bandit step), as in training.

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
    /// How the agent turns its chains' predictions into an action.
    #[serde(default, skip_serializing_if = "Acting::is_weighted_mean")]
    pub acting: Acting,
    /// The registry sampler.
    pub sampler: SamplerSettings,
}

/// How an agent acts on its chains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acting {
    /// Greedy on the weighted mean of the chains' predictions (the thesis' agents).
    #[default]
    WeightedMean,
    /// Greedy on one chain's prediction, the chain drawn by weight for every decision.
    Thompson,
}

impl Acting {
    fn is_weighted_mean(&self) -> bool {
        *self == Self::WeightedMean
    }
}

/// The suffix of an agent that acts by Thompson sampling (`psgld-ts`).
pub const THOMPSON_SUFFIX: &str = "-ts";

/// The Langevin agents, which also come with [`THOMPSON_SUFFIX`].
pub const LANGEVIN_AGENTS: &[&str] = &["psgld", "pcsgld", "picsgld"];

/// The thesis' agents, which `--agents` runs by default (each Langevin one also takes
/// [`THOMPSON_SUFFIX`]).
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
/// pCSGLD x T4 takes Table E.1's smaller `lr = 5e-8` (the text's step sizes: 0.006 for it
/// against 0.03 for pICSGLD), scaled the same way.
/// Contour agents: `m = 100` bins of `du = 10` from `u_min`, `zeta = 20`.
/// `NAME-ts` is the Langevin agent `NAME` acting by [`Acting::Thompson`].
/// Dropout: ConstSGD's SGD on networks whose last hidden layer drops units with probability
/// 0.5, each prediction the mean of 5 masked passes (the reference's `-rate 0.5 -samples 5`
/// on its `DropoutNet`, `AgentDropout` and `DropoutRLReg`).
pub fn agent(name: &str, u_min: f64) -> Option<AgentConfig> {
    if let Some(base) = name.strip_suffix(THOMPSON_SUFFIX) {
        if !LANGEVIN_AGENTS.contains(&base) {
            return None;
        }
        return Some(AgentConfig {
            name: name.to_string(),
            acting: Acting::Thompson,
            ..agent(base, u_min)?
        });
    }
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
        acting: Acting::WeightedMean,
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
            ..base(SamplerSettings {
                lr: 5e-8 * batch,
                ..contour(RandomField::Power)
            })
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

/// The chain a Thompson decision acts on: the first whose cumulative weight exceeds `u` in
/// `[0, 1)` (the last if rounding leaves `u` above them all).
pub fn thompson_chain(weights: &[f64], u: f64) -> usize {
    let mut cumulative = 0.0;
    for (p, w) in weights.iter().enumerate() {
        cumulative += w;
        if u < cumulative {
            return p;
        }
    }
    weights.len().saturating_sub(1)
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
        // The Thompson variants of the Langevin agents only.
        for name in LANGEVIN_AGENTS {
            let ts = agent(&format!("{name}{THOMPSON_SUFFIX}"), 0.0).unwrap();
            assert_eq!(ts.acting, Acting::Thompson);
            let plain = agent(name, 0.0).unwrap();
            assert_eq!(ts.sampler, plain.sampler);
        }
        assert!(agent("constsgd-ts", 0.0).is_none() && agent("-ts", 0.0).is_none());
        // Table E.1: pCSGLD x T4 at 5e-8, pSGLD and pICSGLD x P4 at 3e-7 (x 512 here).
        let lr = |n: &str| agent(n, 0.0).unwrap().sampler.lr / 512.0;
        assert!((lr("pcsgld") - 5e-8).abs() < 1e-20 && (lr("picsgld") - 3e-7).abs() < 1e-20);
    }

    #[test]
    fn thompson_draws_each_chain_with_its_weight() {
        use rand::{Rng, SeedableRng};
        // Frequencies of 1e5 draws within 5 binomial standard errors of the weights
        // (se = sqrt(w (1 - w) / n) <= 1.6e-3).
        let w = acting_weights(&[0.0, 2f64.ln(), f64::NEG_INFINITY, 0.5f64.ln()], 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let n = 100_000;
        let mut counts = [0usize; 4];
        for _ in 0..n {
            counts[thompson_chain(&w, rng.random::<f64>())] += 1;
        }
        for (c, w) in counts.iter().zip(&w) {
            let se = (w * (1.0 - w) / n as f64).sqrt();
            assert!(
                (*c as f64 / n as f64 - w).abs() < 5.0 * se + 1e-12,
                "{counts:?} {w}"
            );
        }
        assert_eq!(thompson_chain(&[0.5, 0.5], 1.0), 1);
        assert_eq!(thompson_chain(&[1.0], 0.0), 0);
    }
}
