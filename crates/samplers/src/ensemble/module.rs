//! Chains as burn modules on any device.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

mod state;

pub use state::{module_values, with_module_values};

use super::{Ensemble, needs_noise};
use crate::error::SamplerError;
use crate::kernel::{Coefficients, Kernel, TensorCoef};
use crate::rng::ChainRng;
use crate::target::Target;

/// Chains stored as burn modules: each module hosts `target.chains_per_module(m)` chains
/// (1 for a network, `P` for a `[P, d]` particle module). Kernel state (momentum,
/// preconditioner) is kept per module and per `ParamId`; clones of a module share `ParamId`s, so
/// each chain's state lives with its own module, never shared.
pub struct ModuleEnsemble<M: Module, T: Target<M>> {
    target: T,
    chains: Vec<ModuleChain<M>>,
    rngs: Vec<ChainRng>,
    energies: Vec<f64>,
}

struct ModuleChain<M> {
    module: Option<M>,
    rows: usize,
    offset: usize,
    state: HashMap<ParamId, Vec<Tensor<2>>>,
    grads: Option<GradientsParams>,
}

impl<M: Module, T: Target<M>> ModuleEnsemble<M, T> {
    /// Chains from `modules`; hosted chain `p` (in module order, then row order) draws from
    /// stream `p` of `seed`.
    pub fn new(target: T, modules: Vec<M>, seed: u64) -> Result<Self, SamplerError> {
        let mut offset = 0;
        let chains: Vec<ModuleChain<M>> = modules
            .into_iter()
            .map(|m| {
                let rows = target.chains_per_module(&m);
                let c = ModuleChain {
                    module: Some(m),
                    rows,
                    offset,
                    state: HashMap::new(),
                    grads: None,
                };
                offset += rows;
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
            rngs: ChainRng::streams(seed, offset),
            energies: vec![0.0; offset],
        })
    }

    /// The modules, in chain order.
    pub fn modules(&self) -> impl Iterator<Item = &M> {
        self.chains.iter().filter_map(|c| c.module.as_ref())
    }

    /// The target.
    pub fn target(&self) -> &T {
        &self.target
    }
}

impl<M: Module, T: Target<M>> Ensemble for ModuleEnsemble<M, T> {
    type Batch = T::Batch;

    fn n_chains(&self) -> usize {
        self.energies.len()
    }

    fn estimate(&mut self, batch: &T::Batch) -> Result<&[f64], SamplerError> {
        for chain in &mut self.chains {
            let module = chain.module.as_ref().expect("module present between steps");
            let rngs = &mut self.rngs[chain.offset..chain.offset + chain.rows];
            let est = self.target.estimate(module, batch, rngs)?;
            self.energies[chain.offset..chain.offset + chain.rows].copy_from_slice(&est.energies);
            chain.grads = Some(est.grads);
        }
        Ok(&self.energies)
    }

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], refresh: bool) {
        let noisy = needs_noise(kernel, coefs, refresh);
        for chain in &mut self.chains {
            let (Some(module), Some(mut grads)) = (chain.module.take(), chain.grads.take()) else {
                continue;
            };
            let range = chain.offset..chain.offset + chain.rows;
            let mut mapper = KernelMapper {
                kernel,
                grads: &mut grads,
                state: &mut chain.state,
                values: &coefs[range.clone()],
                coefs: None,
                rngs: &mut self.rngs[range],
                noisy,
                refresh,
            };
            chain.module = Some(module.map(&mut mapper));
        }
    }
}

/// Applies one kernel step to every float parameter that has a gradient.
struct KernelMapper<'a> {
    kernel: &'a Kernel,
    grads: &'a mut GradientsParams,
    state: &'a mut HashMap<ParamId, Vec<Tensor<2>>>,
    values: &'a [Coefficients],
    coefs: Option<[TensorCoef; 3]>,
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
            [0, 1, 2].map(|j| {
                let v: Vec<f64> = values.iter().map(|c| c[j]).collect();
                TensorCoef::from_values(&v, &device)
            })
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
