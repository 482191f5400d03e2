//! [`Lane`] over burn tensors: a parameter viewed as `[rows, cols]`, one row per hosted chain.

use burn::tensor::{Device, Tensor, TensorData};

use super::lane::Lane;

/// A per-chain coefficient for a `[rows, cols]` tensor: a plain scalar when the module hosts one
/// chain (the common network case, `mul_scalar`), a `[rows, 1]` column otherwise (toy chains as
/// rows of one tensor; broadcast multiply).
#[derive(Clone, Debug)]
pub enum TensorCoef {
    /// Same value for the single hosted chain.
    Scalar(f64),
    /// One value per row.
    Column(Box<Tensor<2>>),
}

impl TensorCoef {
    /// Builds the coefficient from one value per hosted chain: a scalar when every chain has
    /// the same value (one chain, or a sampler whose chains share their step size), so only
    /// chain-specific coefficients (e.g. contour multipliers) cost an upload.
    pub fn from_values(values: &[f64], device: &Device) -> Self {
        if values.windows(2).all(|w| w[0] == w[1]) {
            Self::Scalar(values.first().copied().unwrap_or(0.0))
        } else {
            let data: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            Self::Column(Box::new(crate::transfer::upload(
                TensorData::new(data, [values.len(), 1]),
                device,
            )))
        }
    }
}

impl Lane for Tensor<2> {
    type Coef = TensorCoef;
    fn zeros_like(&self) -> Self {
        Tensor::zeros_like(self)
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn mul(self, other: &Self) -> Self {
        self * other.clone()
    }
    fn scale(self, c: &TensorCoef) -> Self {
        match c {
            TensorCoef::Scalar(s) => self.mul_scalar(*s),
            TensorCoef::Column(col) => self * (**col).clone(),
        }
    }
    fn scale_by(self, s: f64) -> Self {
        self.mul_scalar(s)
    }
    fn add_scalar(self, s: f64) -> Self {
        Tensor::add_scalar(self, s)
    }
    fn sqrt(self) -> Self {
        Tensor::sqrt(self)
    }
    fn recip(self) -> Self {
        Tensor::recip(self)
    }
    fn clamp(self, lo: f64, hi: f64) -> Self {
        Tensor::clamp(self, lo, hi)
    }
    fn copy(&self) -> Self {
        self.clone()
    }
}
