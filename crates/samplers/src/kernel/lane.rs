//! The algebra the kernel formulas are written in.
//!
//! A [`Lane`] is "the values of one parameter block for the chains that share it": a burn tensor
//! `[rows, cols]` (one row per chain hosted by the module) or a single `f64` element of one
//! chain. Kernel formulas are generic over `Lane`, so one formula drives the burn path and the
//! tensor-free `f64` path; per-chain scalars (learning rate times multiplier, noise scale) are
//! [`Lane::Coef`] values.

/// Element-wise arithmetic on the values of a parameter block.
pub trait Lane: Sized {
    /// A per-chain scalar coefficient in this lane's layout.
    type Coef;
    /// Zeros of the same shape.
    fn zeros_like(&self) -> Self;
    /// `self + other`.
    fn add(self, other: Self) -> Self;
    /// `self * other`, element-wise.
    fn mul(self, other: &Self) -> Self;
    /// `self * c` with a per-chain coefficient.
    fn scale(self, c: &Self::Coef) -> Self;
    /// `self * s` with a scalar common to all chains.
    fn scale_by(self, s: f64) -> Self;
    /// `self + s`.
    fn add_scalar(self, s: f64) -> Self;
    /// Element-wise square root.
    fn sqrt(self) -> Self;
    /// Element-wise reciprocal.
    fn recip(self) -> Self;
    /// Element-wise `min(max(self, lo), hi)`.
    fn clamp(self, lo: f64, hi: f64) -> Self;
    /// A copy (tensors are reference-counted handles: cheap).
    fn copy(&self) -> Self;
}

impl Lane for f64 {
    type Coef = f64;
    #[inline]
    fn zeros_like(&self) -> Self {
        0.0
    }
    #[inline]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline]
    fn mul(self, other: &Self) -> Self {
        self * other
    }
    #[inline]
    fn scale(self, c: &f64) -> Self {
        self * c
    }
    #[inline]
    fn scale_by(self, s: f64) -> Self {
        self * s
    }
    #[inline]
    fn add_scalar(self, s: f64) -> Self {
        self + s
    }
    #[inline]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline]
    fn recip(self) -> Self {
        1.0 / self
    }
    #[inline]
    fn clamp(self, lo: f64, hi: f64) -> Self {
        f64::clamp(self, lo, hi)
    }
    #[inline]
    fn copy(&self) -> Self {
        *self
    }
}
