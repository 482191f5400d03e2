//! One sampler over network chains, whichever kind it is: the plain kernels (SGD, SGLD, SGHMC,
//! pSGLD, cyclical) and the contour samplers (CSGLD, ICSGLD, AWSGLD) behind one step call, with
//! checkpoint state. Shared by the network apps (`sgmcmc mnist`, `sgmcmc uci`). The target is
//! the autodiff [`Posterior`] by default, or any other posterior of the same network (e.g. the
//! closed-form [`MlpPosterior`](sgmcmc_models::mlp::MlpPosterior)).

use std::sync::Mutex;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Network, Posterior};
use sgmcmc_samplers::checkpoint::SamplerState;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::sampler::{Contour, ContourConfig, Sampler, Sgmcmc, SgmcmcConfig, StepReport};
use sgmcmc_samplers::target::Target;

use crate::error::AppError;

/// What to build: a plain sampler or a contour sampler.
#[derive(Clone, Debug)]
pub enum NetSpec {
    /// Independent chains of one kernel.
    Plain(SgmcmcConfig),
    /// Chains sharing one contour `theta`.
    Contour(ContourConfig),
}

/// The chains of a network posterior and the sampler that moves them.
pub enum NetRunner<M: Network, T: Target<M> = Posterior> {
    /// Independent chains.
    Plain(Box<Sgmcmc<ModuleEnsemble<M, T>>>),
    /// Contour sampler.
    Contour(Box<Contour<ModuleEnsemble<M, T>>>),
}

impl<M: Network, T: Target<M, Batch = Batch<M::Input>>> NetRunner<M, T> {
    /// Builds the sampler of `spec` over `ensemble`.
    pub fn new(spec: &NetSpec, ensemble: ModuleEnsemble<M, T>) -> Result<Self, AppError> {
        Ok(match spec {
            NetSpec::Plain(c) => Self::Plain(Box::new(Sgmcmc::new(c.clone(), ensemble)?)),
            NetSpec::Contour(c) => Self::Contour(Box::new(Contour::new(c.clone(), ensemble)?)),
        })
    }

    /// The chains' modules, in chain order.
    pub fn modules(&self) -> Vec<&M> {
        match self {
            Self::Plain(s) => s.ensemble().modules().collect(),
            Self::Contour(s) => s.ensemble().modules().collect(),
        }
    }

    /// One step on `batch`.
    pub fn step(&mut self, batch: &Batch<M::Input>) -> Result<&StepReport, AppError> {
        Ok(match self {
            Self::Plain(s) => s.step(batch)?,
            Self::Contour(s) => s.step(batch)?,
        })
    }

    /// Steps done so far.
    pub fn steps_done(&self) -> u64 {
        match self {
            Self::Plain(s) => s.steps_done(),
            Self::Contour(s) => s.steps_done(),
        }
    }

    /// Gradient multipliers of the last step (1 for plain samplers).
    pub fn multipliers(report: &StepReport) -> Vec<f64> {
        report.step_sizes.iter().map(|s| s.multiplier).collect()
    }

    /// The contour `theta`, if any.
    pub fn theta(&self) -> Option<&[f64]> {
        match self {
            Self::Plain(_) => None,
            Self::Contour(s) => Some(s.theta().theta()),
        }
    }

    /// Contour samplers: how far the multiplier can move over the next `steps` steps, to first
    /// order (see [`Contour::multiplier_reach`]).
    pub fn psi_reach(&self, steps: u64) -> Option<f64> {
        match self {
            Self::Plain(_) => None,
            Self::Contour(s) => Some(s.multiplier_reach(steps)),
        }
    }

    /// Everything needed to continue the run bit for bit.
    pub fn state(&self) -> Result<SamplerState, AppError> {
        Ok(match self {
            Self::Plain(s) => s.state()?,
            Self::Contour(s) => s.state()?,
        })
    }

    /// Restores a state taken by [`NetRunner::state`] from a sampler of the same spec.
    pub fn restore(&mut self, state: SamplerState) -> Result<(), AppError> {
        match self {
            Self::Plain(s) => s.restore(state)?,
            Self::Contour(s) => s.restore(state)?,
        }
        Ok(())
    }
}

/// burn's CPU backends share one process-global generator for parameter initialisation; this
/// lock keeps "seed, then initialise" atomic when several runs share a process (tests, `--jobs`).
static INIT: Mutex<()> = Mutex::new(());

/// Runs `init` (a network initialisation) right after seeding `device` with `seed`, so the
/// initial weights are a function of the seed.
///
/// burn initialises parameters lazily, on their first use. The parameters are therefore drawn
/// here, under the lock: drawn later, they would come from whatever state the shared generator
/// is in by then, e.g. after another run's `seed` (a race between `--jobs`, seen as a different
/// first run of a `sgmcmc uci` cell on a loaded machine).
pub fn seeded<T: Module>(device: &Device, seed: u64, init: impl FnOnce() -> T) -> T {
    let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    device.seed(seed);
    let module = init();
    module.visit(&mut Materialize);
    module
}

/// Draws every lazily initialised parameter of a module.
struct Materialize;

impl ModuleVisitor for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;
    use sgmcmc_models::{Activation, Mlp, MlpConfig, Network};

    use super::*;

    fn outputs(m: &Mlp, device: &Device) -> Vec<f32> {
        let x = Tensor::<2>::from_data(TensorData::new(vec![0.3f32, -1.2, 0.7], [1, 3]), device);
        m.forward(x).into_data().try_into_vec::<f32>().unwrap()
    }

    #[test]
    fn seeded_weights_do_not_depend_on_a_later_seed() {
        // Run A seeds and initialises; run B seeds with another seed before A first uses its
        // network (what two `--jobs` threads can do). A's weights must be those of its seed.
        let device = Device::flex();
        let cfg = MlpConfig {
            inputs: 3,
            hidden: vec![8],
            outputs: 2,
            activation: Activation::Tanh,
        };
        let alone = seeded(&device, 11, || cfg.init(&device));
        let alone = outputs(&alone, &device);
        let a = seeded(&device, 11, || cfg.init(&device));
        let b = seeded(&device, 12, || cfg.init(&device));
        assert_eq!(outputs(&a, &device), alone);
        assert_ne!(outputs(&b, &device), alone);
    }
}
