//! The comparison the kernel tests use (here and in the networks' tests of `sgmcmc-models`).

use burn::tensor::Tensor;

/// Largest `|a - b|` relative to the largest `|b|` (scale-relative error), over all elements.
///
/// # Panics
///
/// If the two tensors hold different numbers of elements.
// A test's comparison, not one of the library's counted transfers.
#[allow(clippy::disallowed_methods)]
pub fn rel_err<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    let a: Vec<f32> = a
        .into_data()
        .convert::<f32>()
        .try_to_vec()
        .expect("f32 values");
    let b: Vec<f32> = b
        .into_data()
        .convert::<f32>()
        .try_to_vec()
        .expect("f32 values");
    assert_eq!(a.len(), b.len(), "rel_err of tensors of different sizes");
    let scale = b
        .iter()
        .fold(0f32, |m, v| m.max(v.abs()))
        .max(f32::MIN_POSITIVE);
    a.iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()))
        / scale
}
