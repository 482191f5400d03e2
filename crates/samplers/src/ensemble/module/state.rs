//! Saving and restoring a [`ModuleEnsemble`]: parameters and kernel state in parameter-visit
//! order, random streams per chain ([`crate::checkpoint`]).

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};

use super::super::{KernelRow, ParamRow, RowSwap};
use crate::checkpoint::{ChainState, EnsembleState, TensorState, mismatch};
use crate::error::SamplerError;
use crate::rng::ChainRng;
use crate::transfer;

fn read<const D: usize>(t: Tensor<D>) -> Result<TensorState, SamplerError> {
    let dims = t.dims().to_vec();
    let values = transfer::read(t)
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

/// Per-parameter kernel state (e.g. momenta), keyed by parameter id.
pub(super) type KernelState = HashMap<ParamId, Vec<Tensor<2>>>;

/// Puts saved values back, keeping parameter ids and autodiff tracking.
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
            transfer::upload(TensorData::new(p.values.clone(), p.dims.clone()), &device);
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
                    transfer::upload(TensorData::new(s.values.clone(), s.dims.clone()), &device)
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

/// One chain's module, its kernel state and its streams, as the ensemble holds them.
type Held<'a, M> = (Option<&'a M>, &'a KernelState, &'a Vec<ChainRng>);

/// The state of every module chain.
pub(super) fn save<'a, M: Module + 'a>(
    chains: impl Iterator<Item = Held<'a, M>>,
) -> Result<EnsembleState, SamplerError> {
    let mut saved = Vec::new();
    let mut rngs = Vec::new();
    for (module, kernel, streams) in chains {
        let module = module.ok_or_else(|| mismatch("a chain is mid-step"))?;
        let mut c = Collect {
            kernel,
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
        saved.push(c.out);
        rngs.extend(streams.iter().cloned());
    }
    Ok(EnsembleState::Modules {
        chains: saved,
        rngs,
    })
}

/// The modules (with their number of hosted chains) with `saved` put back: parameters, kernel
/// state keyed by the modules' own parameter ids, and streams. Nothing is returned unless every
/// module fits.
pub(super) fn load<M: Module>(
    modules: Vec<(Option<M>, usize)>,
    saved: EnsembleState,
) -> Result<Vec<(M, KernelState, Vec<ChainRng>)>, SamplerError> {
    let EnsembleState::Modules { chains, rngs } = saved else {
        return Err(mismatch("host chains' state given to a module ensemble"));
    };
    let hosted: usize = modules.iter().map(|(_, rows)| rows).sum();
    if chains.len() != modules.len() || rngs.len() != hosted {
        return Err(mismatch(format!(
            "{} modules and {} streams saved, the ensemble has {} and {hosted}",
            chains.len(),
            rngs.len(),
            modules.len(),
        )));
    }
    let mut streams = rngs.into_iter();
    let mut out = Vec::with_capacity(modules.len());
    for ((module, rows), saved) in modules.into_iter().zip(&chains) {
        let module = module.ok_or_else(|| mismatch("a chain is mid-step"))?;
        let (module, kernel) = put(module, saved)?;
        out.push((module, kernel, streams.by_ref().take(rows).collect()));
    }
    Ok(out)
}

/// The parameter ids of a module in visit order, with its gradients as `[rows, cols]`.
struct Grads<'a> {
    grads: Option<&'a GradientsParams>,
    rows: usize,
    out: Vec<(ParamId, Option<Tensor<2>>)>,
}

impl ModuleVisitor for Grads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let g = self.grads.and_then(|g| g.get::<D>(param.id)).map(|g| {
            let n: usize = g.dims().iter().product();
            g.inner().reshape([self.rows, n / self.rows])
        });
        self.out.push((param.id, g));
    }
}

fn grads<M: Module>(chain: &super::ModuleChain<M>) -> Vec<(ParamId, Option<Tensor<2>>)> {
    let mut v = Grads {
        grads: chain.grads.as_ref(),
        rows: chain.rngs.len(),
        out: Vec::new(),
    };
    if let Some(m) = chain.module.as_ref() {
        m.visit(&mut v);
    }
    v.out
}

/// Exchanges row `ra` of module `ma`'s kernel state with row `rb` of module `mb`'s, parameter
/// by parameter in visit order (modules of one ensemble share their structure), and shifts the
/// exchanged velocities (slot 0) by `lags.0 (g_a - g_b)` and `lags.1 (g_b - g_a)`.
pub(super) fn swap_rows<M: Module>(
    chains: &mut [super::ModuleChain<M>],
    (ma, ra): (usize, usize),
    (mb, rb): (usize, usize),
    (la, lb): (f64, f64),
) {
    let pairs: Vec<_> = grads(&chains[ma])
        .into_iter()
        .zip(grads(&chains[mb]))
        .collect();
    for ((ia, ga), (ib, gb)) in pairs {
        let slots = chains[ma].state.get(&ia).map_or(0, Vec::len);
        if slots == 0 || chains[mb].state.get(&ib).map_or(0, Vec::len) != slots {
            continue;
        }
        for s in 0..slots {
            let ta = chains[ma].state[&ia][s].clone();
            let tb = chains[mb].state[&ib][s].clone();
            let cols = ta.dims()[1];
            let (rows_a, rows_b) = ([ra..ra + 1, 0..cols], [rb..rb + 1, 0..cols]);
            let mut new_a = tb.clone().slice(rows_b.clone());
            let mut new_b = ta.clone().slice(rows_a.clone());
            if let (0, Some(ga), Some(gb)) = (s, ga.as_ref(), gb.as_ref()) {
                let delta = ga.clone().slice(rows_a.clone()) - gb.clone().slice(rows_b.clone());
                new_a = new_a + delta.clone().mul_scalar(la);
                new_b = new_b - delta.mul_scalar(lb);
            }
            if ma == mb {
                let t = ta.slice_assign(rows_a, new_a).slice_assign(rows_b, new_b);
                chains[ma].state.get_mut(&ia).expect("present")[s] = t;
            } else {
                chains[ma].state.get_mut(&ia).expect("present")[s] = ta.slice_assign(rows_a, new_a);
                chains[mb].state.get_mut(&ib).expect("present")[s] = tb.slice_assign(rows_b, new_b);
            }
        }
    }
}

/// Row `r` of a module chain's kernel state (every slot) and last gradient, per parameter in
/// visit order ([`KernelRow`]).
pub(super) fn row_of<M: Module>(
    chain: &super::ModuleChain<M>,
    r: usize,
) -> Result<KernelRow, SamplerError> {
    let values = |t: &Tensor<2>| -> Result<Vec<f64>, SamplerError> {
        let cols = t.dims()[1];
        let row = read(t.clone().slice([r..r + 1, 0..cols]))?;
        Ok(row.values.into_iter().map(f64::from).collect())
    };
    grads(chain)
        .into_iter()
        .map(|(id, g)| {
            let slots = chain.state.get(&id).map_or(&[][..], Vec::as_slice);
            Ok(ParamRow {
                slots: slots.iter().map(values).collect::<Result<_, _>>()?,
                grad: g.as_ref().map(values).transpose()?,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|params| KernelRow { params })
}

/// Row `r` of a module chain takes `swap.peer`'s kernel state, its velocity (slot 0) shifted
/// as in [`swap_rows`]: by `lag (g_r - g_peer)` when it is the swap's first chain, else by
/// `-lag (g_peer - g_r)`, in the same tensor operations.
pub(super) fn take_row<M: Module>(
    chain: &mut super::ModuleChain<M>,
    r: usize,
    swap: &RowSwap,
) -> Result<(), SamplerError> {
    let RowSwap { peer, lag, first } = swap;
    let (lag, first) = (*lag, *first);
    let own = grads(chain);
    if own.len() != peer.params.len() {
        return Err(mismatch(format!(
            "a kernel row of {} parameters for a module of {}",
            peer.params.len(),
            own.len()
        )));
    }
    for ((id, g), p) in own.into_iter().zip(&peer.params) {
        let slots = chain.state.get(&id).map_or(0, Vec::len);
        if slots == 0 || p.slots.len() != slots {
            continue;
        }
        for (s, values) in p.slots.iter().enumerate() {
            let t = chain.state[&id][s].clone();
            let (device, cols) = (t.device(), t.dims()[1]);
            let tensor = |v: &[f64]| -> Result<Tensor<2>, SamplerError> {
                if v.len() != cols {
                    return Err(mismatch(format!(
                        "a kernel row of width {} for a parameter of {cols}",
                        v.len()
                    )));
                }
                let v: Vec<f32> = v.iter().map(|x| *x as f32).collect();
                Ok(transfer::upload(TensorData::new(v, [1, cols]), &device))
            };
            let rows = [r..r + 1, 0..cols];
            let mut new = tensor(values)?;
            if let (0, Some(g), Some(pg)) = (s, g.as_ref(), p.grad.as_ref()) {
                let (own_g, peer_g) = (g.clone().slice(rows.clone()), tensor(pg)?);
                new = if first {
                    new + (own_g - peer_g).mul_scalar(lag)
                } else {
                    new - (peer_g - own_g).mul_scalar(lag)
                };
            }
            chain.state.get_mut(&id).expect("present")[s] = t.slice_assign(rows, new);
        }
    }
    Ok(())
}
