//! Chains as burn modules on any device.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use rayon::prelude::*;

mod noise;
mod running;
mod state;
mod trainable;

pub use noise::NoiseSource;
pub(crate) use noise::draw as draw_noise;

pub use state::{module_values, with_module_values};
pub use trainable::{trainable_values, with_trainable_values};

use super::{Draws, Ensemble, KernelRow, RowSwap};
use crate::checkpoint::EnsembleState;
use crate::density::{Energies, Target};
use crate::error::{SamplerError, TargetError};
use crate::kernel::{Coefficients, Coefs, Kernel, TensorCoef};
use crate::rng::ChainRng;

/// Chains stored as burn modules: each module hosts `target.chains_per_module(m)` chains
/// (1 for a network, `P` for a `[P, d]` particle module). Kernel state (momentum,
/// preconditioner) is kept per module and per `ParamId`; clones of a module share `ParamId`s, so
/// each chain's state lives with its own module, never shared.
///
/// With two or more modules (independent network chains), [`Ensemble::estimate`] and
/// [`Ensemble::apply`] step the modules on the threads of the current rayon pool, one module
/// per task: every module owns its random streams, so the result is the same bits as stepping
/// them one after another ([`ModuleEnsemble::sequential`] turns this off).
pub struct ModuleEnsemble<M: Module, T: Target<M>> {
    target: T,
    chains: Vec<ModuleChain<M>>,
    energies: Vec<f64>,
    parallel: bool,
    /// Whether the modules carry running state to settle after each forward pass
    /// ([`running`]).
    buffers: bool,
    /// Whether the Langevin noise is drawn on the modules' device ([`NoiseSource`]).
    device_noise: bool,
}

pub(super) struct ModuleChain<M> {
    module: Option<M>,
    rngs: Vec<ChainRng>,
    state: HashMap<ParamId, Vec<Tensor<2>>>,
    grads: Option<GradientsParams>,
    energies: Vec<f64>,
    /// The last estimate's energies until [`ModuleEnsemble::gather`] reads them.
    pending: Option<Energies>,
}

impl<M: Module, T: Target<M>> ModuleEnsemble<M, T> {
    /// Chains from `modules`; hosted chain `p` (in module order, then row order) draws from
    /// stream `p` of `seed`.
    pub fn new(target: T, modules: Vec<M>, seed: u64) -> Result<Self, SamplerError> {
        Self::new_part(target, modules, seed, 0)
    }

    /// A rank's part of a distributed run ([`crate::comm`]): hosted chain `p` is global chain
    /// `first + p` and draws from stream `first + p` of `seed`, as it would in one process.
    pub fn new_part(
        target: T,
        modules: Vec<M>,
        seed: u64,
        first: usize,
    ) -> Result<Self, SamplerError> {
        let mut offset = first as u64;
        let chains: Vec<ModuleChain<M>> = modules
            .into_iter()
            .map(|m| {
                let rows = target.chains_per_module(&m);
                let c = ModuleChain {
                    module: Some(m),
                    rngs: (offset..offset + rows as u64)
                        .map(|s| ChainRng::new(seed, s))
                        .collect(),
                    state: HashMap::new(),
                    grads: None,
                    energies: vec![0.0; rows],
                    pending: None,
                };
                offset += rows as u64;
                c
            })
            .collect();
        if offset == first as u64 {
            return Err(SamplerError::InvalidHyperParameter {
                name: "chains",
                value: "0".into(),
                reason: "need at least one chain",
            });
        }
        let buffers = chains
            .first()
            .and_then(|c| c.module.as_ref())
            .is_some_and(running::has_buffers);
        let mut ensemble = Self {
            target,
            chains,
            energies: vec![0.0; (offset - first as u64) as usize],
            parallel: true,
            buffers,
            device_noise: false,
        };
        ensemble.device_noise = ensemble.resolve(NoiseSource::Auto);
        Ok(ensemble)
    }

    /// The same chains with their Langevin noise drawn from `source` (default
    /// [`NoiseSource::Auto`]: on the device for modules on an accelerator, else on the host).
    pub fn with_noise(mut self, source: NoiseSource) -> Self {
        self.device_noise = self.resolve(source);
        self
    }

    /// Whether the Langevin noise is drawn on the modules' device.
    pub fn noise_on_device(&self) -> bool {
        self.device_noise
    }

    /// Whether `source` draws on the device the modules live on.
    fn resolve(&self, source: NoiseSource) -> bool {
        self.modules()
            .next()
            .and_then(|m| m.devices().into_iter().next())
            .is_some_and(|d| source.on_device(&d))
    }

    /// Steps the modules one after another on the calling thread.
    pub fn sequential(mut self) -> Self {
        self.parallel = false;
        self
    }

    /// The modules, in chain order.
    pub fn modules(&self) -> impl Iterator<Item = &M> {
        self.chains.iter().filter_map(|c| c.module.as_ref())
    }

    /// Module `i`.
    pub fn module(&self, i: usize) -> Option<&M> {
        self.chains.get(i).and_then(|c| c.module.as_ref())
    }

    /// The target.
    pub fn target(&self) -> &T {
        &self.target
    }

    /// A copy of `module` for a snapshot: a clone (tensors are reference-counted), with running
    /// state of its own where the modules have any ([`running::detached_copy`]).
    pub(super) fn copy_of(&self, module: &M) -> M {
        if self.buffers {
            running::detached_copy(module)
        } else {
            module.clone()
        }
    }

    fn threaded(&self) -> bool {
        self.parallel && self.chains.len() > 1 && rayon::current_num_threads() > 1
    }

    /// The module hosting chain `c` and the chain's row in it.
    fn locate(&self, c: usize) -> Result<(usize, usize), SamplerError> {
        let mut at = 0;
        for (m, chain) in self.chains.iter().enumerate() {
            if c < at + chain.rngs.len() {
                return Ok((m, c - at));
            }
            at += chain.rngs.len();
        }
        Err(crate::checkpoint::mismatch(format!(
            "chain {c} of an ensemble of {at}"
        )))
    }

    /// `out` = `energy(m)` of every module of `points` in order, settled after each; on the
    /// pool's threads when the chains step there ([`ModuleEnsemble::threaded`]); device
    /// energies read in one transfer after every module's work is queued.
    pub(super) fn energies_of(
        &self,
        points: &[M],
        out: &mut [f64],
        energy: impl Fn(&M) -> Result<Energies, SamplerError> + Sync,
    ) -> Result<(), SamplerError> {
        let buffers = self.buffers;
        let one = |m: &M| {
            let e = energy(m);
            if buffers {
                running::settle(m);
            }
            e
        };
        let energies: Vec<Energies> = if self.threaded() && points.len() > 1 {
            // Modules are `Send`, not `Sync`: each task takes its own handle (a clone shares
            // the tensors and the running state).
            let owned: Vec<M> = points.to_vec();
            owned
                .into_par_iter()
                .map(|m| one(&m))
                .collect::<Result<_, _>>()?
        } else {
            points.iter().map(one).collect::<Result<_, _>>()?
        };
        let mut at = 0;
        for e in Energies::read_all(energies)? {
            let Some(slot) = out.get_mut(at..at + e.len()) else {
                return Err(crate::checkpoint::mismatch(format!(
                    "{} snapshot energies for {} chains",
                    at + e.len(),
                    out.len()
                )));
            };
            slot.copy_from_slice(&e);
            at += e.len();
        }
        Ok(())
    }

    /// Reads the modules' last energies into the ensemble's vector, in chain order: the device
    /// energies of all modules in one transfer when they share a device.
    fn gather(&mut self) -> Result<&[f64], SamplerError> {
        let (chains, parts): (Vec<usize>, Vec<Energies>) = self
            .chains
            .iter_mut()
            .enumerate()
            .filter_map(|(i, c)| c.pending.take().map(|e| (i, e)))
            .unzip();
        for (i, values) in chains.into_iter().zip(Energies::read_all(parts)?) {
            self.chains[i].energies.copy_from_slice(&values);
        }
        let mut at = 0;
        for chain in &self.chains {
            self.energies[at..at + chain.energies.len()].copy_from_slice(&chain.energies);
            at += chain.energies.len();
        }
        Ok(&self.energies)
    }
}

/// Each module with the coefficients of the chains it hosts.
fn split<'a, M>(
    chains: &'a mut [ModuleChain<M>],
    coefs: &'a [Coefficients],
) -> Vec<(&'a mut ModuleChain<M>, &'a [Coefficients])> {
    let mut at = 0;
    chains
        .iter_mut()
        .map(|chain| {
            let rows = chain.rngs.len();
            at += rows;
            (chain, &coefs[at - rows..at])
        })
        .collect()
}

impl<M: Module> ModuleChain<M> {
    /// Energies and gradients of this module's chains on `batch`.
    fn estimate<T: Target<M>>(
        &mut self,
        target: &T,
        batch: &T::Batch,
        buffers: bool,
    ) -> Result<(), SamplerError> {
        let module = self.module.as_ref().expect("module present between steps");
        let est = target.estimate(module, batch, &mut self.rngs)?;
        if buffers {
            running::settle(module);
        }
        if est.energies.len() != self.energies.len() {
            return Err(TargetError::Shape(format!(
                "{} energies from a module hosting {} chains",
                est.energies.len(),
                self.energies.len()
            ))
            .into());
        }
        self.pending = Some(est.energies);
        self.grads = Some(est.grads);
        Ok(())
    }

    /// One kernel step of this module with the gradients of the last estimate.
    fn apply(&mut self, kernel: &Kernel, values: &[Coefficients], draws: Draws, on_device: bool) {
        let (Some(module), Some(mut grads)) = (self.module.take(), self.grads.take()) else {
            return;
        };
        let mut mapper = KernelMapper {
            kernel,
            grads: &mut grads,
            state: &mut self.state,
            values,
            coefs: None,
            rngs: &mut self.rngs,
            noisy: draws.noise,
            refresh: draws.refresh,
            device_noise: on_device,
        };
        self.module = Some(module.map(&mut mapper));
    }
}

impl<M: Module, T: Target<M>> Ensemble for ModuleEnsemble<M, T> {
    type Batch = T::Batch;
    type Snapshot = Vec<M>;

    fn n_chains(&self) -> usize {
        self.energies.len()
    }

    fn estimate(&mut self, batch: &T::Batch) -> Result<&[f64], SamplerError> {
        let (target, buffers) = (&self.target, self.buffers);
        let one = |chain: &mut ModuleChain<M>| chain.estimate(target, batch, buffers);
        if self.threaded() {
            self.chains.par_iter_mut().try_for_each(one)?;
        } else {
            self.chains.iter_mut().try_for_each(one)?;
        }
        self.gather()
    }

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], draws: Draws) {
        let (threaded, on_device) = (self.threaded(), self.device_noise);
        let work = split(&mut self.chains, coefs);
        let one = |(chain, values): (&mut ModuleChain<M>, &[Coefficients])| {
            chain.apply(kernel, values, draws, on_device);
        };
        if threaded {
            work.into_par_iter().for_each(one);
        } else {
            work.into_iter().for_each(one);
        }
    }

    /// Each module estimates and steps in one task (on the pool's threads when the chains step
    /// there); the energies of all modules are read once, after every module's work is queued.
    fn estimate_and_apply(
        &mut self,
        batch: &T::Batch,
        kernel: &Kernel,
        coefs: &[Coefficients],
        draws: Draws,
    ) -> Result<&[f64], SamplerError> {
        let (threaded, on_device) = (self.threaded(), self.device_noise);
        let (target, buffers) = (&self.target, self.buffers);
        let step = |(chain, values): (&mut ModuleChain<M>, &[Coefficients])| {
            chain.estimate(target, batch, buffers)?;
            chain.apply(kernel, values, draws, on_device);
            Ok::<(), SamplerError>(())
        };
        let work = split(&mut self.chains, coefs);
        if threaded {
            work.into_par_iter().try_for_each(step)?;
        } else {
            work.into_iter().try_for_each(step)?;
        }
        self.gather()
    }

    fn last_energies(&self) -> &[f64] {
        &self.energies
    }

    fn swap_kernel_state(&mut self, a: usize, b: usize, lags: (f64, f64)) {
        let locate = |c| self.locate(c).expect("a chain of the ensemble");
        let ((ma, ra), (mb, rb)) = (locate(a), locate(b));
        state::swap_rows(&mut self.chains, (ma, ra), (mb, rb), lags);
    }

    fn kernel_row(&self, c: usize) -> Result<KernelRow, SamplerError> {
        let (m, r) = self.locate(c)?;
        state::row_of(&self.chains[m], r)
    }

    fn take_kernel_row(&mut self, c: usize, swap: &RowSwap) -> Result<(), SamplerError> {
        let (m, r) = self.locate(c)?;
        state::take_row(&mut self.chains[m], r, swap)
    }

    fn snapshot_into(&self, out: &mut Vec<M>) {
        out.clear();
        out.extend(self.modules().map(|m| self.copy_of(m)));
    }

    fn state(&self) -> Result<EnsembleState, SamplerError> {
        state::save(
            self.chains
                .iter()
                .map(|c| (c.module.as_ref(), &c.state, &c.rngs)),
        )
    }

    fn restore(&mut self, saved: EnsembleState) -> Result<(), SamplerError> {
        let restored = state::load(
            self.chains
                .iter()
                .map(|c| (c.module.clone(), c.rngs.len()))
                .collect(),
            saved,
        )?;
        for (chain, (module, kernel, rngs)) in self.chains.iter_mut().zip(restored) {
            chain.module = Some(module);
            chain.state = kernel;
            chain.rngs = rngs;
            chain.grads = None;
            chain.pending = None;
        }
        Ok(())
    }
}

/// Applies one kernel step to every float parameter that has a gradient.
struct KernelMapper<'a> {
    kernel: &'a Kernel,
    grads: &'a mut GradientsParams,
    state: &'a mut HashMap<ParamId, Vec<Tensor<2>>>,
    values: &'a [Coefficients],
    coefs: Option<Coefs<TensorCoef>>,
    rngs: &'a mut [ChainRng],
    noisy: bool,
    refresh: bool,
    device_noise: bool,
}

impl ModuleMapper for KernelMapper<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let dims = tensor.dims();
        let rows = self.rngs.len();
        let cols = dims.iter().product::<usize>() / rows;
        let autodiff = tensor.is_autodiff();
        let require_grad = tensor.is_require_grad();
        let x: Tensor<2> = tensor.inner().reshape([rows, cols]);
        let g: Tensor<2> = grad.inner().reshape([rows, cols]);
        let device = x.device();
        let values = self.values;
        let coefs = self.coefs.get_or_insert_with(|| {
            let column = |f: fn(&Coefficients) -> f64| {
                let v: Vec<f64> = values.iter().map(f).collect();
                TensorCoef::from_values(&v, &device)
            };
            Coefs {
                drift: column(|c| c.drift),
                diffusion: column(|c| c.diffusion),
                refresh: column(|c| c.refresh),
                thermostat: column(|c| c.thermostat),
            }
        });
        let slots = self.kernel.state_slots();
        let state = self
            .state
            .entry(id)
            .or_insert_with(|| (0..slots).map(|_| x.zeros_like()).collect());
        let (rngs, noisy, on_device) = (&mut *self.rngs, self.noisy, self.device_noise);
        let zeros = (!noisy).then(|| x.zeros_like());
        let noise = || match &zeros {
            Some(z) => z.clone(),
            None => noise::draw(rngs, cols, &device, on_device),
        };
        let updated = self.kernel.update(x, g, state, noise, coefs, self.refresh);
        let mut out: Tensor<D> = updated.reshape(dims);
        if autodiff {
            out = Tensor::from_inner(out);
            if require_grad {
                out = out.require_grad();
            }
        }
        Param::from_mapped_value(id, out, mapper)
    }
}
