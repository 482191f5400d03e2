//! A module's trainable parameters as one flat vector (what a SWAG fit takes and draws,
//! [`crate::swag`]): the float tensors that require gradients, in visit order; running
//! statistics (BatchNorm's means and variances) are left out.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

use super::state::{module_values, with_module_values};
use crate::checkpoint::{TensorState, mismatch};
use crate::error::SamplerError;

/// Which float tensors of a module are trainable.
struct Trainable(Vec<bool>);

impl ModuleVisitor for Trainable {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push(param.val().is_require_grad());
    }
}

/// The float tensors of `m` and which of them are trainable.
fn split<M: Module>(m: &M) -> Result<(Vec<TensorState>, Vec<bool>), SamplerError> {
    let values = module_values(m)?;
    let mut t = Trainable(Vec::new());
    m.visit(&mut t);
    if t.0.len() != values.len() {
        return Err(mismatch("parameter visit orders differ"));
    }
    Ok((values, t.0))
}

/// The trainable parameters of `m`, flattened in visit order.
pub fn trainable_values<M: Module>(m: &M) -> Result<Vec<f32>, SamplerError> {
    let (values, mask) = split(m)?;
    Ok(values
        .into_iter()
        .zip(mask)
        .filter(|(_, t)| *t)
        .flat_map(|(v, _)| v.values)
        .collect())
}

/// `m` with its trainable parameters replaced by `flat` (visit order; exactly as many values).
pub fn with_trainable_values<M: Module>(m: M, flat: &[f32]) -> Result<M, SamplerError> {
    let (mut values, mask) = split(&m)?;
    let mut at = 0;
    for (v, t) in values.iter_mut().zip(mask) {
        if t {
            let n = v.values.len();
            let part = flat
                .get(at..at + n)
                .ok_or_else(|| mismatch("flat parameters shorter than the network"))?;
            v.values.copy_from_slice(part);
            at += n;
        }
    }
    if at != flat.len() {
        return Err(mismatch("flat parameters longer than the network"));
    }
    with_module_values(m, values)
}
