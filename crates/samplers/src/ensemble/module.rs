//! Chains as burn modules on any device.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use rayon::prelude::*;

mod state;

pub use state::{module_values, with_module_values};

use super::{Ensemble, needs_noise};
use crate::checkpoint::EnsembleState;
use crate::error::SamplerError;
use crate::kernel::{Coefficients, Coefs, Kernel, TensorCoef};
use crate::rng::ChainRng;
use crate::density::Target;

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
}

struct ModuleChain<M> {
    module: Option<M>,
    rngs: Vec<ChainRng>,
    state: HashMap<ParamId, Vec<Tensor<2>>>,
    grads: Option<GradientsParams>,
    energies: Vec<f64>,
}

impl<M: Module, T: Target<M>> ModuleEnsemble<M, T> {
    /// Chains from `modules`; hosted chain `p` (in module order, then row order) draws from
    /// stream `p` of `seed`.
    pub fn new(target: T, modules: Vec<M>, seed: u64) -> Result<Self, SamplerError> {
        let mut offset = 0u64;
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
                };
                offset += rows as u64;
                c
            })
            .collect();
        if offset == 0 {
            return Err(SamplerError::InvalidHyperParameter {
                name: "chains",
                value: "0".into(),
                reason: "need at least one chain",
            });
        }
        Ok(Self {
            target,
            chains,
            energies: vec![0.0; offset as usize],
            parallel: true,
        })
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

    fn threaded(&self) -> bool {
        self.parallel && self.chains.len() > 1 && rayon::current_num_threads() > 1
    }
}

impl<M: Module, T: Target<M>> Ensemble for ModuleEnsemble<M, T> {
    type Batch = T::Batch;
    type Snapshot = Vec<M>;

    fn n_chains(&self) -> usize {
        self.energies.len()
    }

    fn estimate(&mut self, batch: &T::Batch) -> Result<&[f64], SamplerError> {
        let target = &self.target;
        let one = |chain: &mut ModuleChain<M>| -> Result<(), SamplerError> {
            let module = chain.module.as_ref().expect("module present between steps");
            let est = target.estimate(module, batch, &mut chain.rngs)?;
            chain.energies.copy_from_slice(&est.energies);
            chain.grads = Some(est.grads);
            Ok(())
        };
        if self.threaded() {
            self.chains.par_iter_mut().try_for_each(one)?;
        } else {
            self.chains.iter_mut().try_for_each(one)?;
        }
        let mut at = 0;
        for chain in &self.chains {
            self.energies[at..at + chain.energies.len()].copy_from_slice(&chain.energies);
            at += chain.energies.len();
        }
        Ok(&self.energies)
    }

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], refresh: bool) {
        let noisy = needs_noise(kernel, coefs, refresh);
        let threaded = self.threaded();
        let mut at = 0;
        let mut work: Vec<(&mut ModuleChain<M>, &[Coefficients])> = Vec::new();
        for chain in &mut self.chains {
            let rows = chain.rngs.len();
            work.push((chain, &coefs[at..at + rows]));
            at += rows;
        }
        let one = |(chain, values): (&mut ModuleChain<M>, &[Coefficients])| {
            let (Some(module), Some(mut grads)) = (chain.module.take(), chain.grads.take()) else {
                return;
            };
            let mut mapper = KernelMapper {
                kernel,
                grads: &mut grads,
                state: &mut chain.state,
                values,
                coefs: None,
                rngs: &mut chain.rngs,
                noisy,
                refresh,
            };
            chain.module = Some(module.map(&mut mapper));
        };
        if threaded {
            work.into_par_iter().for_each(one);
        } else {
            work.into_iter().for_each(one);
        }
    }

    fn snapshot_into(&self, out: &mut Vec<M>) {
        out.clear();
        out.extend(self.modules().cloned());
    }

    fn state(&self) -> Result<EnsembleState, SamplerError> {
        state::save(self.chains.iter().map(|c| (c.module.as_ref(), &c.state, &c.rngs)))
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
}

/// Standard normal noise `[rows, cols]`, row `r` from stream `r`.
fn noise_tensor(rngs: &mut [ChainRng], cols: usize, device: &Device) -> Tensor<2> {
    let rows = rngs.len();
    let mut buf = vec![0.0f32; rows * cols];
    for (rng, chunk) in rngs.iter_mut().zip(buf.chunks_mut(cols)) {
        // A local copy keeps the generator state in registers (the same stream; ~1.5x faster
        // than updating the state through the slice on every draw).
        let mut local = rng.clone();
        for v in chunk {
            *v = local.normal() as f32;
        }
        *rng = local;
    }
    Tensor::from_data(TensorData::new(buf, [rows, cols]), device)
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
        let (rngs, noisy) = (&mut *self.rngs, self.noisy);
        let zeros = (!noisy).then(|| x.zeros_like());
        let noise = || match &zeros {
            Some(z) => z.clone(),
            None => noise_tensor(rngs, cols, &device),
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
