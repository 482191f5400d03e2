//! Saving and restoring a [`ModuleEnsemble`]: parameters and kernel state in parameter-visit
//! order, random streams per chain ([`crate::checkpoint`]).

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::{Tensor, TensorData};

use super::ModuleEnsemble;
use crate::checkpoint::{ChainState, EnsembleState, StatefulEnsemble, TensorState, mismatch};
use crate::error::SamplerError;
use crate::target::Target;

fn read<const D: usize>(t: Tensor<D>) -> Result<TensorState, SamplerError> {
    let dims = t.dims().to_vec();
    let values = t
        .into_data()
        .try_into_vec::<f32>()
        .map_err(|e| mismatch(format!("cannot read a tensor: {e:?}")))?;
    Ok(TensorState { dims, values })
}

/// Collects parameter values and their kernel state.
struct Collect<'a> {
    kernel: &'a HashMap<ParamId, Vec<Tensor<2>>>,
    out: ChainState,
    error: Option<SamplerError>,
}

impl ModuleVisitor for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let slots = self.kernel.get(&param.id).cloned().unwrap_or_default();
        let saved = read(param.val().inner()).and_then(|p| {
            let k = slots.into_iter().map(read).collect::<Result<Vec<_>, _>>()?;
            Ok((p, k))
        });
        match saved {
            Ok((p, k)) => {
                self.out.params.push(p);
                self.out.kernel.push(k);
            }
            Err(e) => self.error = self.error.take().or(Some(e)),
        }
    }
}

/// Puts saved values back, keeping parameter ids and autodiff tracking.
/// Per-parameter kernel state (e.g. momenta), keyed by parameter id.
type KernelState = HashMap<ParamId, Vec<Tensor<2>>>;

struct Put<'a> {
    saved: &'a ChainState,
    next: usize,
    kernel: KernelState,
    error: Option<SamplerError>,
}

impl ModuleMapper for Put<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let i = self.next;
        self.next += 1;
        let Some(p) = self.saved.params.get(i) else {
            self.error
                .get_or_insert(mismatch("the module has more parameters than saved"));
            return Param::from_mapped_value(id, tensor, mapper);
        };
        if p.dims != tensor.dims().to_vec() {
            self.error.get_or_insert(mismatch(format!(
                "parameter {i} has shape {:?}, saved {:?}",
                tensor.dims(),
                p.dims
            )));
            return Param::from_mapped_value(id, tensor, mapper);
        }
        let (autodiff, require_grad) = (tensor.is_autodiff(), tensor.is_require_grad());
        let device = tensor.inner().device();
        let mut out: Tensor<D> =
            Tensor::from_data(TensorData::new(p.values.clone(), p.dims.clone()), &device);
        if autodiff {
            out = Tensor::from_inner(out);
            if require_grad {
                out = out.require_grad();
            }
        }
        let slots = self.saved.kernel.get(i).map(Vec::as_slice).unwrap_or(&[]);
        if !slots.is_empty() {
            let tensors = slots
                .iter()
                .map(|s| {
                    Tensor::from_data(TensorData::new(s.values.clone(), s.dims.clone()), &device)
                })
                .collect();
            self.kernel.insert(id, tensors);
        }
        Param::from_mapped_value(id, out, mapper)
    }
}

/// The values of every float parameter of `module`, in visit order (e.g. to flatten sampled
/// networks for a trajectory picture).
pub fn module_values<M: Module>(module: &M) -> Result<Vec<TensorState>, SamplerError> {
    let empty = HashMap::new();
    let mut c = Collect {
        kernel: &empty,
        out: ChainState {
            params: Vec::new(),
            kernel: Vec::new(),
        },
        error: None,
    };
    module.visit(&mut c);
    c.error.map_or(Ok(c.out.params), Err)
}

/// `module` with its float parameters replaced by `values` (visit order, shapes checked).
pub fn with_module_values<M: Module>(
    module: M,
    values: Vec<TensorState>,
) -> Result<M, SamplerError> {
    let saved = ChainState {
        kernel: Vec::new(),
        params: values,
    };
    put(module, &saved).map(|(module, _)| module)
}

/// `module` with the values of `saved` put into its float parameters (visit order, shapes
/// checked), and the saved kernel state keyed by the module's parameter ids.
fn put<M: Module>(module: M, saved: &ChainState) -> Result<(M, KernelState), SamplerError> {
    let mut put = Put {
        saved,
        next: 0,
        kernel: HashMap::new(),
        error: None,
    };
    let module = module.map(&mut put);
    if let Some(e) = put.error {
        return Err(e);
    }
    if put.next != saved.params.len() {
        return Err(mismatch(format!(
            "{} parameters saved, the module has {}",
            saved.params.len(),
            put.next
        )));
    }
    Ok((module, put.kernel))
}

impl<M: Module, T: Target<M>> StatefulEnsemble for ModuleEnsemble<M, T> {
    fn state(&self) -> Result<EnsembleState, SamplerError> {
        let mut chains = Vec::with_capacity(self.chains.len());
        for chain in &self.chains {
            let module = chain
                .module
                .as_ref()
                .ok_or_else(|| mismatch("a chain is mid-step"))?;
            let mut c = Collect {
                kernel: &chain.state,
                out: ChainState {
                    params: Vec::new(),
                    kernel: Vec::new(),
                },
                error: None,
            };
            module.visit(&mut c);
            if let Some(e) = c.error {
                return Err(e);
            }
            chains.push(c.out);
        }
        Ok(EnsembleState {
            chains,
            rngs: self.rngs.clone(),
        })
    }

    fn restore(&mut self, state: EnsembleState) -> Result<(), SamplerError> {
        if state.chains.len() != self.chains.len() || state.rngs.len() != self.rngs.len() {
            return Err(mismatch(format!(
                "{} modules and {} streams saved, the ensemble has {} and {}",
                state.chains.len(),
                state.rngs.len(),
                self.chains.len(),
                self.rngs.len()
            )));
        }
        let mut restored = Vec::with_capacity(self.chains.len());
        for (chain, saved) in self.chains.iter().zip(&state.chains) {
            let module = chain
                .module
                .clone()
                .ok_or_else(|| mismatch("a chain is mid-step"))?;
            restored.push(put(module, saved)?);
        }
        // Only commit once every chain fitted.
        for (chain, (module, kernel)) in self.chains.iter_mut().zip(restored) {
            chain.module = Some(module);
            chain.state = kernel;
            chain.grads = None;
        }
        self.rngs = state.rngs;
        Ok(())
    }
}
