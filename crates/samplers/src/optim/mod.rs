//! The Langevin kernels as burn optimizers: SGLD, SGHMC, pSGLD and SGNHT for a `burn::optim`
//! training loop (burn-train's `Learner`, or a hand-written one), with the cyclical and
//! annealing schedules as burn learning-rate schedulers ([`schedule`]).
//!
//! ```
//! use sgmcmc_samplers::optim::SghmcConfig;
//! // 60,000 training examples, the loss a batch mean, as for burn's `SgdConfig`.
//! let optimizer = SghmcConfig::new(60_000).with_momentum(0.9).with_seed(7).init().unwrap();
//! # let _ = optimizer;
//! ```
//!
//! # Scale
//!
//! A burn loop minimises a *mean* loss `L(x)` (over a batch) at a learning rate `eta`, as
//! burn's `Sgd` does. The library's kernels (ALGORITHMS.md) act on the energy at full-data
//! scale. With `N` the data-set size (the config's `data_size`) and `wd` the weight decay, the
//! optimizer takes
//!
//! `U(x) = N (L(x) + wd |x|^2 / 2)`, `g = N (grad L(x) + wd x)`, `lr = eta / N`,
//!
//! and applies the kernel's update with `(lr, g)`: `exp(-U / tau)` is the posterior of a
//! likelihood whose mean negative log is `L` under a Gaussian prior of precision `N wd`, at
//! temperature `tau`. SGLD, for one, reads (Welling & Teh 2011, eq. 4)
//!
//! `x <- x - eta (grad L + wd x) + sqrt(2 eta tau / N) xi`,
//!
//! so at temperature 0 it is burn's `Sgd` at the same `eta` and weight decay, and a learning
//! rate tuned for SGD is the place to start. Each kernel's update, with its paper's equation, is
//! in [`crate::kernel`]; the optimizer calls that same code ([`Kernel::update`]) on each
//! parameter viewed as one row.
//!
//! # Noise
//!
//! A parameter's Langevin noise at its `k`-th step comes from its own stream
//! [`noise_stream`]`(seed, p, k)`, where `p` numbers the parameters in the order of their first
//! step (burn's `ModuleOptimizer` visits a module's parameters in a fixed order). The state of
//! each parameter (its kernel slots: momentum, thermostat, squared-gradient average) carries
//! `p` and `k`, so burn's optimizer record (`to_record`, `save`, `into_bytes`) resumes the
//! chain exactly. Chains that should differ need different seeds. On an accelerator the noise
//! is drawn by the device's generator seeded from that stream, on a CPU device on the host
//! ([`NoiseSource::Auto`](crate::ensemble::NoiseSource), decided at the first step).
//!
//! # What stays on `Run`
//!
//! Contour samplers (CSGLD, ICSGLD, AWSGLD) and replica exchange (reSGLD, VR-reSGLD, DEO) need
//! the energy of every chain at every step and act across chains; a per-parameter optimizer
//! sees neither. They run on the engine's `Run`. The cyclical schedule's noise-free exploration
//! phase is a temperature switch an `LrScheduler` cannot make: give the optimizer temperature 0
//! for an SGD exploration run, or use `Run` (which switches per step).

mod config;
pub mod schedule;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use burn::optim::{LearningRate, Optimizer, RecordState, StateSink, StateSource};
use burn::tensor::{Device, Tensor};

pub use config::{PsgldConfig, SghmcConfig, SgldConfig, SgnhtConfig};

use crate::ensemble::{NoiseSource, draw_noise};
use crate::error::{SamplerError, non_negative, temperature as check_temperature};
use crate::kernel::{Kernel, StepSize, TensorCoef};
use crate::rng::{ChainRng, combine};
use crate::transfer;

/// The random stream of parameter `p`'s noise at its step `k` (0-based) for run seed `seed`: a
/// pure function, so a resumed optimizer draws what an uninterrupted one would.
pub fn noise_stream(seed: u64, p: u64, k: u64) -> ChainRng {
    ChainRng::new(combine(seed, p), k)
}

/// One of the library's kernels as a burn [`Optimizer`]; built by the configs of this module
/// ([`SgldConfig`], [`SghmcConfig`], [`PsgldConfig`], [`SgnhtConfig`]), whose `init()` wraps it
/// in burn's `ModuleOptimizer`.
#[derive(Clone, Debug)]
pub struct KernelOptimizer {
    kernel: Kernel,
    data_size: f64,
    temperature: f64,
    weight_decay: f64,
    seed: u64,
    /// Parameters seen so far: the next one's stream number.
    streams: Arc<AtomicU64>,
    /// Whether the noise is drawn on the device, decided once at the first step (asking the
    /// device drains a fused backend's queue: not on every parameter's step).
    device_noise: Arc<OnceLock<bool>>,
}

impl KernelOptimizer {
    /// The kernel at data-set size `data_size` (`N`), temperature `tau`, weight decay `wd` and
    /// noise seed `seed`; every value is checked.
    pub fn new(
        kernel: Kernel,
        data_size: usize,
        temperature: f64,
        weight_decay: f64,
        seed: u64,
    ) -> Result<Self, SamplerError> {
        kernel.validate()?;
        if data_size == 0 {
            return Err(SamplerError::InvalidHyperParameter {
                name: "data_size",
                value: "0".into(),
                reason: "must be at least 1 (the number of training examples)",
            });
        }
        check_temperature("temperature", temperature)?;
        non_negative("weight_decay", weight_decay)?;
        Ok(Self {
            kernel,
            data_size: data_size as f64,
            temperature,
            weight_decay,
            seed,
            streams: Arc::new(AtomicU64::new(0)),
            device_noise: Arc::new(OnceLock::new()),
        })
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The kernel's step size for burn's learning rate `eta`: `lr = eta / N`.
    pub fn step_size(&self, eta: LearningRate) -> StepSize {
        StepSize::new(eta / self.data_size, self.temperature)
    }
}

/// One parameter's state: the kernel's slots (shaped as the parameter), its stream number and
/// the number of steps it has taken.
#[derive(Clone, Debug)]
pub struct KernelState<const D: usize> {
    /// The kernel's per-parameter tensors ([`Kernel::state_slots`] of them).
    pub slots: Vec<Tensor<D>>,
    /// The parameter's noise stream `p` ([`noise_stream`]).
    pub stream: u64,
    /// Steps taken, `k`.
    pub step: u64,
}

impl<const D: usize> RecordState for KernelState<D> {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        for (i, slot) in self.slots.iter().enumerate() {
            out.push_tensor(prefix, &format!("slot{i}"), transfer::read(slot.clone()));
        }
        out.push_scalar(prefix, "slots", (self.slots.len() as u64).into());
        out.push_scalar(prefix, "stream", self.stream.into());
        out.push_scalar(prefix, "step", self.step.into());
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, device: &Device) -> Option<Self> {
        let mut scalar = |leaf| {
            src.take_scalar(prefix, leaf)
                .and_then(|s| u64::try_from(s).ok())
        };
        let (n, stream, step) = (scalar("slots")?, scalar("stream")?, scalar("step")?);
        let slots = (0..n)
            .map(|i| {
                let data = src.take_tensor(prefix, &format!("slot{i}"))?;
                Some(transfer::upload(data, device))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            slots,
            stream,
            step,
        })
    }
}

impl Optimizer for KernelOptimizer {
    type State<const D: usize> = KernelState<D>;

    /// # Panics
    ///
    /// When the learning rate `eta` the loop passes is not finite and positive, or SGHMC's
    /// `beta = V lr / 2` exceeds `1 - mu` at it: a step has no way to return an error.
    fn step<const D: usize>(
        &self,
        eta: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let shape = tensor.shape();
        let device = tensor.device();
        let numel = shape.num_elements();
        let row = |t: Tensor<D>| t.reshape([1, numel]);
        let mut state = state.unwrap_or_else(|| KernelState {
            slots: (0..self.kernel.state_slots())
                .map(|_| Tensor::zeros(shape.clone(), &device))
                .collect(),
            stream: self.streams.fetch_add(1, Ordering::Relaxed),
            step: 0,
        });
        let step = self.step_size(eta);
        let c = self.kernel.coefficients(&step).unwrap_or_else(|e| {
            panic!(
                "{} optimizer at learning rate {eta}: {e}",
                self.kernel.name()
            )
        });
        let c = c.map(|&v| TensorCoef::Scalar(v));
        let mut g = grad;
        if self.weight_decay > 0.0 {
            g = g + tensor.clone().mul_scalar(self.weight_decay);
        }
        let g = row(g.mul_scalar(self.data_size));
        let mut slots: Vec<Tensor<2>> = state.slots.drain(..).map(row).collect();
        let mut rng = noise_stream(self.seed, state.stream, state.step);
        let on_device = *self
            .device_noise
            .get_or_init(|| NoiseSource::Auto.on_device(&device));
        let noise = || draw_noise(std::slice::from_mut(&mut rng), numel, &device, on_device);
        let refresh = self.kernel.refreshes_at(state.step);
        let x = self
            .kernel
            .update(row(tensor), g, &mut slots, noise, &c, refresh);
        state.slots = slots
            .into_iter()
            .map(|s| s.reshape(shape.clone()))
            .collect();
        state.step += 1;
        (x.reshape(shape), Some(state))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        state.slots = state
            .slots
            .into_iter()
            .map(|s| s.to_device(device))
            .collect();
        state
    }
}
