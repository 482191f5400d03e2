//! Injected noise that emulates minibatch estimates on toy targets.

use serde::{Deserialize, Serialize};

use crate::error::TargetError;
use crate::rng::ChainRng;

/// Distribution of a standardised noise draw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoiseDist {
    /// Standard normal.
    Gaussian,
    /// Student-t with `nu` degrees of freedom (heavy tails; variance `nu / (nu - 2)`).
    StudentT {
        /// Degrees of freedom (> 0).
        nu: f64,
    },
}

/// `scale * z` with `z` from `dist`: e.g. `N(0, 0.01)` is scale 0.1 Gaussian, "7 t(10)" is scale 7
/// Student-t with 10 degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// Multiplier of the standardised draw (the standard deviation for Gaussian noise).
    pub scale: f64,
    /// Distribution of the standardised draw.
    pub dist: NoiseDist,
}

impl Noise {
    /// No noise.
    pub const NONE: Noise = Noise {
        scale: 0.0,
        dist: NoiseDist::Gaussian,
    };

    /// Gaussian noise with standard deviation `sd`.
    pub fn gaussian(sd: f64) -> Self {
        Self {
            scale: sd,
            dist: NoiseDist::Gaussian,
        }
    }

    /// `scale * t(nu)` noise.
    pub fn student_t(scale: f64, nu: f64) -> Self {
        Self {
            scale,
            dist: NoiseDist::StudentT { nu },
        }
    }

    /// One draw (0 without consuming randomness when `scale == 0`).
    #[inline]
    pub fn draw(&self, rng: &mut ChainRng) -> f64 {
        if self.scale == 0.0 {
            return 0.0;
        }
        self.scale
            * match self.dist {
                NoiseDist::Gaussian => rng.normal(),
                NoiseDist::StudentT { nu } => rng.student_t(nu),
            }
    }

    fn validate(&self, name: &'static str) -> Result<(), TargetError> {
        if !(self.scale.is_finite() && self.scale >= 0.0) {
            return Err(TargetError::InvalidParameter {
                name,
                value: self.scale.to_string(),
                reason: "noise scale must be finite and >= 0",
            });
        }
        if let NoiseDist::StudentT { nu } = self.dist
            && !(nu.is_finite() && nu > 0.0)
        {
            return Err(TargetError::InvalidParameter {
                name: "nu",
                value: nu.to_string(),
                reason: "Student-t degrees of freedom must be finite and > 0",
            });
        }
        Ok(())
    }
}

/// Noise on the energy and on the gradient, independent of each other.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseModel {
    /// Added to `U(x)`.
    pub energy: Noise,
    /// Added to each coordinate of `grad U(x)`.
    pub gradient: Noise,
}

impl NoiseModel {
    /// Exact energies and gradients.
    pub const EXACT: NoiseModel = NoiseModel {
        energy: Noise::NONE,
        gradient: Noise::NONE,
    };

    /// Gaussian gradient noise of standard deviation `sd`, exact energies.
    pub fn gradient(sd: f64) -> Self {
        Self {
            energy: Noise::NONE,
            gradient: Noise::gaussian(sd),
        }
    }

    /// Checks both parts.
    pub fn validate(&self) -> Result<(), TargetError> {
        self.energy.validate("energy_noise")?;
        self.gradient.validate("gradient_noise")
    }
}
