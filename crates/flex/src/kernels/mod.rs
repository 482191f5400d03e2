//! Fast paths for training on burn-flex (`Device::flex().autodiff()`): convolution, batch
//! normalisation (with the ReLU and residual sum after it), the option-A shortcut and 2x2 max
//! pooling as single tracked operations whose forward and backward run as our own kernels
//! (matrix products over im2col matrices or shifted views of the padded images, one-pass
//! channel statistics; in parallel over rayon's pool), in place of burn 0.22's default
//! backward passes, which flex inherits.
//!
//! [`crate::layers`] routes a layer here when its input and parameters live on
//! `Autodiff<Flex>` in `f32` and the layer has a supported shape, and to burn's own module
//! otherwise (other devices, inference). Each kernel is checked against burn's op (outputs and
//! gradients) in `layers`' tests; `docs/perf/` holds the same kernels as a patch to
//! burn-flex's `conv2d_weight_backward`, `conv2d_x_backward` and `batch_norm_train`.

pub(crate) mod batch_norm;
pub(crate) mod batch_norm_op;
pub mod categorical;
pub(crate) mod conv;
mod direct;
mod gemm;
mod im2col;
pub(crate) mod linear;
pub(crate) mod max_pool;
mod shifted;
pub(crate) mod shortcut;
pub(crate) mod tanh;
mod uninit;

use std::borrow::Cow;

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Flex};
use burn::tensor::{DType, Shape, Tensor, TensorData};

/// A float tensor primitive of `Autodiff<Flex>`.
pub(crate) type FlexAd = FloatTensor<Autodiff<Flex>>;

/// The `Autodiff<Flex>` primitive of an `f32` tensor, if it lives there.
pub(crate) fn flex_ad<const D: usize>(t: &Tensor<D>) -> Option<FlexAd> {
    let p = t.clone().try_into_primitive::<Autodiff<Flex>>().ok()?;
    (p.primitive().dtype() == DType::F32).then_some(p)
}

/// The plain (no autodiff) flex primitive of an `f32` tensor, if it lives there.
pub(crate) fn flex_plain<const D: usize>(t: &Tensor<D>) -> Option<FlexTensor> {
    if t.is_autodiff() {
        return None;
    }
    let p = t.clone().try_into_primitive::<Flex>().ok()?;
    (p.dtype() == DType::F32).then_some(p)
}

/// A plain flex tensor back to a tensor.
pub(crate) fn plain<const D: usize>(p: FlexTensor) -> Tensor<D> {
    Tensor::from_primitive::<Flex>(p)
}

/// A contiguous `f32` flex tensor of `shape` holding `data` (row-major).
pub(crate) fn from_f32(data: Vec<f32>, shape: impl Into<Shape>) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(data, shape))
}

/// The dimensions of a flex tensor.
pub(crate) fn dims_of(t: &FlexTensor) -> Vec<usize> {
    t.layout().shape().iter().copied().collect()
}

/// Back to a tensor.
pub(crate) fn tensor<const D: usize>(p: FlexAd) -> Tensor<D> {
    Tensor::from_primitive::<Autodiff<Flex>>(p)
}

/// The elements of an `f32` flex tensor in row-major order (borrowed when contiguous).
pub(crate) fn f32_slice(t: &FlexTensor) -> Cow<'_, [f32]> {
    match t.as_slice::<f32>() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(
            t.to_contiguous()
                .as_slice::<f32>()
                .expect("a contiguous f32 tensor")
                .to_vec(),
        ),
    }
}
