//! The MLPs' `tanh`: a rational approximation on the backend's element-wise operations,
//! differentiated from its value; on burn-flex one pass each way (the `kernels` module's `tanh`).

use burn::tensor::Tensor;

/// `tanh(x)`, evaluated once ([`tanh_value`]) and differentiated from its value:
/// `tanh'(x) = 1 - tanh(x)^2`.
///
/// On an autodiff tensor the result is `t + (x - x0) * (1 - t^2)`, with `x0 = x` and
/// `t = tanh_value(x)` held constant: its value is exactly `t` (`x - x0 = 0`) and its gradient
/// `1 - t^2`, so the backward pass costs one multiply. burn's autodiff `tanh` recomputes
/// `tanh` from the input during the backward pass, and burn-flex's `tanh` is a scalar `tanhf`
/// call per element: at the 64-100-10 MLP's size the two were half of an SGLD step.
///
/// On burn-flex in `f32` it is one tracked operation instead (the `kernels` module's `tanh`): one
/// pass forward, one backward (`dy (1 - t^2)`), the same values and gradients to the bit.
pub fn tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    #[cfg(feature = "flex")]
    if let Some(y) = crate::kernels::tanh::tanh(&x) {
        return y;
    }
    tanh_by_ops(x)
}

/// [`tanh`] by the backend's tensor operations (on burn-flex too).
pub fn tanh_by_ops<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let x0 = x.clone().inner();
    let t = tanh_value_by_ops(x0.clone());
    if !x.is_autodiff() {
        return t;
    }
    let slope = tanh_slope(t.clone());
    (x - Tensor::from_inner(x0)) * Tensor::from_inner(slope) + Tensor::from_inner(t)
}

/// `1 - t^2`, the derivative of `tanh` at the point where it equals `t`.
pub fn tanh_slope<const D: usize>(t: Tensor<D>) -> Tensor<D> {
    t.powi_scalar(2).neg().add_scalar(1.0)
}

/// Numerator coefficients `alpha_13, alpha_11, ..., alpha_1` (odd powers, highest first) of
/// the rational `tanh` of [`tanh_value`].
pub(crate) const TANH_P: [f64; 7] = [
    -2.760_768_477_423_55e-16,
    2.000_187_904_824_77e-13,
    -8.604_671_522_137_35e-11,
    5.122_297_090_371_14e-8,
    1.485_722_357_179_79e-5,
    6.372_619_288_754_36e-4,
    4.893_524_558_917_86e-3,
];
/// Denominator coefficients `beta_6, beta_4, beta_2, beta_0` (even powers, highest first).
pub(crate) const TANH_Q: [f64; 4] = [
    1.198_258_394_667_02e-6,
    1.185_347_056_866_54e-4,
    2.268_434_632_439e-3,
    4.893_525_185_543_85e-3,
];
/// `x` is clamped to `+-7.9053...`, where the rational form equals `+-(1 - 2.6e-7)`: beyond it
/// `tanh` is within that bound of `+-1`.
pub(crate) const TANH_CLAMP: f64 = 7.905_311_107_635_498;

/// `tanh(x)` on the backend's element-wise operations: the odd/even rational minimax
/// approximation `x p(x^2) / q(x^2)` of Eigen and XLA (degrees 13/6, `x` clamped to
/// `[-7.905, 7.905]`), maximal absolute error `2.6e-7` in exact arithmetic (at the clamp) and
/// a few `f32` ulps in single precision, relative error of the same order near 0.
/// About twenty element-wise passes over the tensor: several times faster than burn-flex's
/// scalar `tanhf` loop, and on any backend; on burn-flex in `f32` one pass
/// (the `kernels` module's `tanh`, the same values to the bit).
pub fn tanh_value<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    #[cfg(feature = "flex")]
    if !x.is_autodiff()
        && let Some(t) = crate::kernels::tanh::tanh(&x)
    {
        return t;
    }
    tanh_value_by_ops(x)
}

/// [`tanh_value`] by the backend's element-wise operations (on burn-flex too).
pub fn tanh_value_by_ops<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    // clamp_min + clamp_max: burn-flex's `clamp` is a scalar loop, about four times slower.
    let x = x.clamp_min(-TANH_CLAMP).clamp_max(TANH_CLAMP);
    let x2 = x.clone() * x.clone();
    let horner = |c: &[f64]| {
        c[2..]
            .iter()
            .fold(x2.clone().mul_scalar(c[0]).add_scalar(c[1]), |acc, &a| {
                (acc * x2.clone()).add_scalar(a)
            })
    };
    let p = horner(&TANH_P) * x;
    p / horner(&TANH_Q)
}
