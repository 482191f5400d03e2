//! One agent on one seed: the bandit loop over the engine's [`Run`].
//!
//! Bandit step `t` (of `steps`): `pulls` mushrooms drawn uniformly with replacement; for each,
//! the agent acts (uniformly at random while fewer than `initial_pulls` pulls were made), the
//! reward is drawn and `(mushroom, action, reward)` joins the replay buffer (the oldest leaves
//! beyond `buffer`); then, once the buffer holds `initial_pulls` entries, the sampler takes
//! `iters * iters_factor` steps on minibatches of `batch` drawn without replacement from the
//! buffer, with `N` the buffer's size. The network maps `[one-hot mushroom, one-hot action]` to
//! the predicted reward. Dropout's acting masks come from a stream of their own (stream
//! `u64::MAX` of the seed; the chains' training masks from theirs, `0..chains`).

use std::collections::VecDeque;

use burn::tensor::{Device, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sgmcmc_data::Mushrooms;
use sgmcmc_data::mushroom_bandit::{self as env, Action};
use sgmcmc_engine::observers::{Trace, TraceSummary};
use sgmcmc_engine::{FnBatches, Run, init};
use sgmcmc_models::buffer_posterior::BufferPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Activation, Mlp, MlpConfig, Targets};
use sgmcmc_samplers::control::Schedule;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSpec};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::Sampler;

use super::agents::{Acting, AgentConfig, acting_weights, thompson_chain};
use super::config::BanditConfig;
use crate::error::AppError;

type BanditSampler = AnySampler<ModuleEnsemble<Mlp, BufferPosterior>>;

/// One pull in the buffer.
#[derive(Clone, Copy, Debug)]
struct Pull {
    mushroom: usize,
    action: Action,
    reward: f64,
}

/// The network's input row of `mushroom` with `action`.
fn input(data: &Mushrooms, mushroom: usize, action: Action, row: &mut Vec<f32>) {
    env::input(data.row(mushroom), action, row);
}

/// A minibatch of `batch` pulls drawn without replacement from the buffer (one draw per
/// sampler step, from the agent's batch stream).
fn buffer_batch(
    data: &Mushrooms,
    buffer: &VecDeque<Pull>,
    batch: usize,
    rng: &mut StdRng,
    device: &Device,
) -> Batch<Tensor<2>> {
    let picks = rand::seq::index::sample(rng, buffer.len(), batch);
    let width = data.width + 2;
    let mut x = Vec::with_capacity(batch * width);
    let mut y = Vec::with_capacity(batch);
    for i in picks {
        let p = buffer[i];
        input(data, p.mushroom, p.action, &mut x);
        y.push(p.reward as f32);
    }
    Batch {
        x: Tensor::from_data(TensorData::new(x, [batch, width]), device),
        y: Targets::Real(Tensor::from_data(TensorData::new(y, [batch, 1]), device)),
    }
}

/// The agent's sampler over `agent.chains` freshly initialised networks.
fn sampler(
    config: &BanditConfig,
    agent: &AgentConfig,
    width: usize,
    posterior: BufferPosterior,
    seed: u64,
    device: &Device,
) -> Result<BanditSampler, AppError> {
    let iters = config.iters * agent.iters_factor;
    let total = config.steps * iters;
    let mut spec = agent
        .sampler
        .spec(&BuildContext::steps(total).chains(agent.chains))?;
    if agent.lr_decay != 1.0 {
        let SamplerSpec::Sgmcmc(plain) = &mut spec else {
            return Err(AppError::Usage(format!(
                "bandit agent {}: lr_decay needs a plain sampler",
                agent.name
            )));
        };
        // One "epoch" per training round: lr * decay^round.
        plain.lr = Schedule::StepDecay {
            initial: agent.sampler.lr,
            gamma: agent.lr_decay,
            every_epochs: 1,
            steps_per_epoch: iters,
        };
    }
    let net = MlpConfig {
        inputs: width + 2,
        hidden: config.hidden.clone(),
        outputs: 1,
        activation: Activation::Relu,
    };
    let models = (0..agent.chains as u64)
        .map(|p| {
            init::seeded(device, seed.wrapping_mul(1_000_003).wrapping_add(p), || {
                net.init(device)
            })
        })
        .collect();
    let ensemble = ModuleEnsemble::new(posterior, models, seed)?;
    Ok(spec.build(ensemble, seed)?)
}

/// Predicted rewards of eating minus passing for `mushrooms`, per chain (`[chain][mushroom]`;
/// with dropout, each chain's the mean of its masked passes, masks from `masks`).
fn eat_advantage(
    sampler: &BanditSampler,
    data: &Mushrooms,
    mushrooms: &[usize],
    masks: &mut ChainRng,
    device: &Device,
) -> Result<Vec<Vec<f64>>, AppError> {
    let width = data.width + 2;
    let mut x = Vec::with_capacity(2 * mushrooms.len() * width);
    for &m in mushrooms {
        input(data, m, Action::Pass, &mut x);
        input(data, m, Action::Eat, &mut x);
    }
    let x = Tensor::<2>::from_data(TensorData::new(x, [2 * mushrooms.len(), width]), device);
    let ensemble = sampler.ensemble();
    ensemble
        .modules()
        .map(|model| {
            let f = ensemble
                .target()
                .now()
                .predict(model, x.clone(), std::slice::from_mut(masks))?
                .into_data()
                .try_into_vec::<f32>()
                .map_err(|e| AppError::Run(format!("reading predictions: {e:?}")))?;
            Ok((0..mushrooms.len())
                .map(|i| f64::from(f[2 * i + 1] - f[2 * i]))
                .collect())
        })
        .collect()
}

/// The advantage of eating that `acting` decides on for mushroom `i`: the weighted mean of the
/// chains' `advantage`, or one chain's, drawn by weight from `draws`.
fn decided_advantage(
    acting: Acting,
    advantage: &[Vec<f64>],
    weights: &[f64],
    i: usize,
    draws: &mut ChainRng,
) -> f64 {
    match acting {
        Acting::WeightedMean => advantage
            .iter()
            .zip(weights)
            .fold(0.0, |sum, (chain, w)| sum + w * chain[i]),
        Acting::Thompson => advantage[thompson_chain(weights, draws.uniform())][i],
    }
}

/// Random streams of one run: the environment's (mushrooms, coins) depend on the seed only,
/// so every agent meets the same mushrooms.
struct Streams {
    mushrooms: StdRng,
    coins: StdRng,
    explore: StdRng,
    batches: StdRng,
    masks: ChainRng,
    thompson: ChainRng,
}

impl Streams {
    fn new(seed: u64) -> Self {
        let s = |k: u64| StdRng::seed_from_u64(seed.wrapping_mul(4).wrapping_add(k));
        Self {
            mushrooms: s(0),
            coins: s(1),
            explore: s(2),
            batches: s(3),
            masks: ChainRng::new(seed, u64::MAX),
            thompson: ChainRng::new(seed, u64::MAX - 1),
        }
    }
}

/// The cumulative expected regret after each bandit step of `agent` on `seed`, and the
/// diagnostics of its chains over the second half of the run: the energy of each chain at the
/// end of every bandit step's sampler steps (on that step's buffer; the buffer is full by then
/// in the presets, so the posterior drifts by `pulls` of `buffer` points a step).
pub fn run_agent(
    config: &BanditConfig,
    agent: &AgentConfig,
    data: &Mushrooms,
    seed: u64,
    device: &Device,
) -> Result<(Vec<f64>, TraceSummary), AppError> {
    let posterior = BufferPosterior::new(config.noise_precision, config.prior_precision)
        .with_dropout(agent.dropout);
    let mut sampler = sampler(config, agent, data.width, posterior.clone(), seed, device)?;
    let iters = config.iters * agent.iters_factor;
    let mut rng = Streams::new(seed);
    let mut buffer: VecDeque<Pull> = VecDeque::with_capacity(config.buffer);
    let mut weights = acting_weights(&[], agent.chains);
    let (mut pulls, mut regret) = (0usize, 0.0);
    let mut curve = Vec::with_capacity(config.steps as usize);
    let mut trace = Trace::energies();
    for t in 0..config.steps {
        let mushrooms: Vec<usize> = (0..config.pulls)
            .map(|_| rng.mushrooms.random_range(0..data.len()))
            .collect();
        let trained = sampler.steps_done() > 0;
        let advantage = if trained {
            eat_advantage(&sampler, data, &mushrooms, &mut rng.masks, device)?
        } else {
            Vec::new()
        };
        for (i, &m) in mushrooms.iter().enumerate() {
            let random = pulls < config.initial_pulls || rng.explore.random_bool(agent.epsilon);
            let action = if random || !trained {
                if rng.explore.random_bool(0.5) {
                    Action::Eat
                } else {
                    Action::Pass
                }
            } else if decided_advantage(agent.acting, &advantage, &weights, i, &mut rng.thompson)
                > 0.0
            {
                Action::Eat
            } else {
                Action::Pass
            };
            let poisonous = data.poisonous[m];
            let reward = env::reward(poisonous, action, rng.coins.random_bool(0.5));
            regret += env::regret(poisonous, action);
            if buffer.len() == config.buffer {
                buffer.pop_front();
            }
            buffer.push_back(Pull {
                mushroom: m,
                action,
                reward,
            });
            pulls += 1;
        }
        curve.push(regret);
        if buffer.len() >= config.initial_pulls.max(config.batch) {
            posterior.set_n(buffer.len());
            let draws = &mut rng.batches;
            let mut batches =
                FnBatches(|_| Ok(buffer_batch(data, &buffer, config.batch, draws, device)));
            let end = sampler.steps_done() + iters;
            let traced = 2 * t >= config.steps;
            Run::steps(end)
                .keep_when(move |k| traced && k + 1 == end)
                .observe(&mut trace)
                .run(&mut sampler, &mut batches)
                .map_err(|e| {
                    AppError::Run(format!("bandit agent {} seed {seed}: {e}", agent.name))
                })?;
            weights = acting_weights(&sampler.report().log_weights, agent.chains);
        }
    }
    Ok((curve, trace.summary()))
}
