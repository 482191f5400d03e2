//! Langevin-type kernels: one step of every chain, per parameter block.
//!
//! Each kernel is a formula over the [`Lane`] algebra (one file each) and runs unchanged on burn
//! tensors ([`tensor_lane`]) and on plain `f64` ([`lane`]). A step takes the parameters `x`, the
//! stochastic gradient `g` of the energy at full-data scale, the kernel's per-parameter state
//! (momentum, preconditioner), a per-chain [`StepSize`] and a noise source. Notation of
//! ALGORITHMS.md: `psi` is the per-chain gradient multiplier (1 unless an adaptive sampler sets
//! it), `tau` the temperature, `xi ~ N(0, I)`.
//!
//! # Adding a kernel
//!
//! A kernel is three edits, shown by [`sgnht`] (the Nose-Hoover thermostat) and by [`baoab`]
//! (BAOAB splitting: its file, its variant with six one-line arms, one registry entry):
//!
//! 1. **its file** (`kernel/sgnht.rs`): the update as a function over the [`Lane`] algebra,
//!    reading its per-chain [`Coefs`] and its per-parameter state slots;
//! 2. **this enum**: a [`Kernel`] variant with its hyper-parameters, and one arm in each of
//!    [`Kernel::name`], [`Kernel::validate`], [`Kernel::state_slots`],
//!    [`Kernel::is_stochastic`], [`Kernel::coefficients`] and [`Kernel::update`];
//! 3. **the registry** ([`crate::registry`]): a [`KernelKind`](crate::registry::KernelKind)
//!    with its settings, and the sampler names that use it.
//!
//! Every ensemble (host `f64`, burn tensors on any device), every sampler (plain, contour,
//! replica exchange), checkpoints and the command line then take it without further change.

pub mod baoab;
pub mod lane;
pub mod momentum;
pub mod psgld;
pub mod sgd;
pub mod sghmc;
pub mod sgld;
pub mod sgnht;
pub mod tensor_lane;

use serde::{Deserialize, Serialize};

pub use lane::Lane;
pub use tensor_lane::TensorCoef;

use crate::error::{SamplerError, check, non_negative, positive, temperature};

/// Per-chain step size of one step: learning rate (full-data scale), temperature and gradient
/// multiplier. May change every step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSize {
    /// Learning rate `lr` at full-data scale (the energy is a sum over the data).
    pub lr: f64,
    /// Temperature `tau` of the target `exp(-U / tau)`.
    pub temperature: f64,
    /// Gradient multiplier `psi` (contour samplers); 1 otherwise. May be negative.
    pub multiplier: f64,
}

impl StepSize {
    /// `lr` at temperature `tau` with multiplier 1.
    pub fn new(lr: f64, temperature: f64) -> Self {
        Self {
            lr,
            temperature,
            multiplier: 1.0,
        }
    }
}

/// Which kernel, with its own hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kernel {
    /// Stochastic gradient descent ([`sgd`]).
    Sgd,
    /// Momentum SGD ([`momentum`]).
    Momentum {
        /// Momentum `mu` in `[0, 1)`.
        mu: f64,
    },
    /// Stochastic gradient Langevin dynamics ([`sgld`]).
    Sgld,
    /// Stochastic gradient Hamiltonian Monte Carlo ([`sghmc`]).
    Sghmc {
        /// Momentum `mu` (= 1 - friction `alpha`), default 0.9.
        mu: f64,
        /// Gradient-noise variance estimate `V` (`beta = V lr / 2`), default 0.
        noise_estimate: f64,
        /// Resample the momentum from its stationary law `N(0, 2 lr tau / (1 + mu))` every this
        /// many steps (0 = never).
        resample_every: u64,
    },
    /// Preconditioned SGLD ([`psgld`]).
    Psgld {
        /// Moving-average factor `a` of the squared gradients, default 0.99.
        alpha: f64,
        /// Regulariser `lambda` of the preconditioner, default 1e-5.
        lambda: f64,
    },
    /// Stochastic gradient Nose-Hoover thermostat ([`sgnht`]).
    Sgnht {
        /// Injected friction `a = A h` in `(0, 1)` (the thermostat's rest value), default 0.1.
        friction: f64,
    },
    /// BAOAB Langevin splitting ([`baoab`]).
    Baoab {
        /// Momentum `mu = exp(-gamma h)` kept by the O step, in `[0, 1)`, default 0.9.
        mu: f64,
    },
}

/// Per-chain coefficients of one step, in a lane's layout: `f64` on the host
/// ([`Coefficients`]), [`TensorCoef`] on tensors. Each kernel reads the ones it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Coefs<C> {
    /// `-lr psi`: multiplies the gradient.
    pub drift: C,
    /// The Langevin noise scale of the step (`sqrt(2 lr tau)` for SGLD).
    pub diffusion: C,
    /// Standard deviation of a momentum resample (SGHMC: `sqrt(2 lr tau / (1 + mu))`).
    pub refresh: C,
    /// `-2 lr tau`: the thermostat's kinetic target with its sign (SGNHT).
    pub thermostat: C,
}

/// One chain's coefficients on the host.
pub type Coefficients = Coefs<f64>;

impl<C> Coefs<C> {
    /// The same coefficients in another layout.
    pub fn map<D>(&self, mut f: impl FnMut(&C) -> D) -> Coefs<D> {
        Coefs {
            drift: f(&self.drift),
            diffusion: f(&self.diffusion),
            refresh: f(&self.refresh),
            thermostat: f(&self.thermostat),
        }
    }
}

impl Kernel {
    /// SGHMC with the reference defaults (mu 0.9, V = 0, no resampling).
    pub fn sghmc() -> Self {
        Self::Sghmc {
            mu: 0.9,
            noise_estimate: 0.0,
            resample_every: 0,
        }
    }

    /// pSGLD with the defaults of Li et al. (a = 0.99, lambda = 1e-5).
    pub fn psgld() -> Self {
        Self::Psgld {
            alpha: 0.99,
            lambda: 1e-5,
        }
    }

    /// Name used in configs and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sgd => "sgd",
            Self::Momentum { .. } => "msgd",
            Self::Sgld => "sgld",
            Self::Sghmc { .. } => "sghmc",
            Self::Psgld { .. } => "psgld",
            Self::Sgnht { .. } => "sgnht",
            Self::Baoab { .. } => "baoab",
        }
    }

    /// Checks the kernel's own hyper-parameters.
    pub fn validate(&self) -> Result<(), SamplerError> {
        match self {
            Self::Sgd | Self::Sgld => Ok(()),
            Self::Momentum { mu } | Self::Sghmc { mu, .. } | Self::Baoab { mu } => {
                check((0.0..1.0).contains(mu), "mu", *mu, "must lie in [0, 1)")?;
                if let Self::Sghmc { noise_estimate, .. } = self {
                    non_negative("noise_estimate", *noise_estimate)?;
                }
                Ok(())
            }
            Self::Psgld { alpha, lambda } => {
                check(
                    (0.0..1.0).contains(alpha),
                    "alpha",
                    *alpha,
                    "must lie in [0, 1)",
                )?;
                positive("lambda", *lambda)
            }
            Self::Sgnht { friction } => check(
                *friction > 0.0 && *friction < 1.0,
                "friction",
                *friction,
                "must lie in (0, 1)",
            ),
        }
    }

    /// Number of state tensors per parameter (momentum, squared-gradient average).
    pub fn state_slots(&self) -> usize {
        match self {
            Self::Sgd | Self::Sgld => 0,
            Self::Momentum { .. }
            | Self::Sghmc { .. }
            | Self::Psgld { .. }
            | Self::Baoab { .. } => 1,
            Self::Sgnht { .. } => 2,
        }
    }

    /// Whether the kernel's per-parameter state is a velocity, whose stationary law depends on
    /// the step size and temperature (`v ~ N(0, ~lr tau)`): under replica exchange it belongs
    /// to the rung, not to the parameters (a replica arriving on rung 0 must not bring a hot
    /// rung's velocity). pSGLD's preconditioner, an average of squared gradients at the
    /// parameters, moves with them.
    pub fn state_follows_rung(&self) -> bool {
        matches!(
            self,
            Self::Momentum { .. } | Self::Sghmc { .. } | Self::Sgnht { .. } | Self::Baoab { .. }
        )
    }

    /// The lag `c` of the velocity behind the position at learning rate `lr`: the discrete chain
    /// keeps `v_k = x_k - x_(k-1)`, half a step behind `x_k`, and at stationarity
    /// `E[v_k | x_k] = c grad U(x_k)` with `c = lr / (1 + mu)` (momentum SGD, SGHMC; exact on a
    /// Gaussian, from the discrete Lyapunov equation). A replica exchange that moves a position
    /// under a rung's velocity shifts the velocity by `c (grad U(x_new) - grad U(x_old))` to keep
    /// this relation (0 for kernels without a velocity). `None` where no scalar lag exists:
    /// SGNHT's is `lr / (2 - xi)` with each element's own friction `xi`, so replica exchange
    /// refuses it ([`crate::sampler::ReplicaConfig::validate`]).
    pub fn velocity_lag(&self, lr: f64) -> Option<f64> {
        match self {
            Self::Momentum { mu } | Self::Sghmc { mu, .. } => Some(lr / (1.0 + mu)),
            // BAOAB's stored velocity is taken between the two half drifts: lag lr / 2.
            Self::Baoab { .. } => Some(lr / 2.0),
            Self::Sgnht { .. } => None,
            Self::Sgd | Self::Sgld | Self::Psgld { .. } => Some(0.0),
        }
    }

    /// Whether the kernel injects noise at all (SGD and momentum SGD do not).
    pub fn is_stochastic(&self) -> bool {
        !matches!(self, Self::Sgd | Self::Momentum { .. })
    }

    /// Whether step `k` (0-based) resamples the momentum.
    pub fn refreshes_at(&self, k: u64) -> bool {
        matches!(self, Self::Sghmc { resample_every, .. } if *resample_every > 0 && k > 0 && k.is_multiple_of(*resample_every))
    }

    /// The per-chain coefficients of a step; errors if the step size is invalid.
    pub fn coefficients(&self, s: &StepSize) -> Result<Coefficients, SamplerError> {
        positive("lr", s.lr)?;
        temperature("temperature", s.temperature)?;
        check(
            s.multiplier.is_finite(),
            "multiplier",
            s.multiplier,
            "must be finite",
        )?;
        let drift = -s.lr * s.multiplier;
        let c = Coefficients {
            drift,
            ..Coefficients::default()
        };
        Ok(match self {
            Self::Sgd | Self::Momentum { .. } => c,
            Self::Sgld | Self::Psgld { .. } => Coefficients {
                diffusion: (2.0 * s.lr * s.temperature).sqrt(),
                ..c
            },
            Self::Baoab { mu } => Coefficients {
                diffusion: (s.lr * s.temperature * (1.0 - mu * mu)).sqrt(),
                ..c
            },
            Self::Sgnht { friction } => Coefficients {
                diffusion: (2.0 * friction * s.lr * s.temperature).sqrt(),
                thermostat: -2.0 * s.lr * s.temperature,
                ..c
            },
            Self::Sghmc {
                mu, noise_estimate, ..
            } => {
                let beta = sghmc::beta(*noise_estimate, s.lr);
                check(
                    beta <= 1.0 - mu,
                    "noise_estimate",
                    *noise_estimate,
                    "SGHMC needs beta = V lr / 2 <= 1 - mu",
                )?;
                Coefficients {
                    diffusion: (2.0 * s.lr * (1.0 - mu - beta) * s.temperature).sqrt(),
                    refresh: (2.0 * s.lr * s.temperature / (1.0 + mu)).sqrt(),
                    ..c
                }
            }
        })
    }

    /// One step of one parameter block: returns the new `x`, updates `state` in place.
    /// `noise()` yields `xi ~ N(0, I)` of the block's shape and is called only when needed.
    #[inline]
    pub fn update<L: Lane>(
        &self,
        x: L,
        g: L,
        state: &mut [L],
        noise: impl FnMut() -> L,
        c: &Coefs<L::Coef>,
        refresh: bool,
    ) -> L {
        match self {
            Self::Sgd => sgd::update(x, g, &c.drift),
            Self::Momentum { mu } => momentum::update(x, g, &mut state[0], *mu, &c.drift),
            Self::Sgld => sgld::update(x, g, noise, &c.drift, &c.diffusion),
            Self::Sghmc { mu, .. } => sghmc::update(x, g, &mut state[0], noise, *mu, c, refresh),
            Self::Psgld { alpha, lambda } => psgld::update(
                x,
                g,
                &mut state[0],
                noise,
                *alpha,
                *lambda,
                &c.drift,
                &c.diffusion,
            ),
            Self::Sgnht { friction } => {
                let [v, s] = state else {
                    unreachable!("SGNHT keeps two state slots")
                };
                sgnht::update(x, g, v, s, noise, *friction, c)
            }
            Self::Baoab { mu } => baoab::update(x, g, &mut state[0], noise, *mu, c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sghmc_rejects_beta_above_one_minus_mu() {
        let k = Kernel::Sghmc {
            mu: 0.9,
            noise_estimate: 10.0,
            resample_every: 0,
        };
        // beta = 10 * 0.01 / 2 = 0.05 <= 0.1: fine; at lr 0.1 beta = 0.5 > 0.1: error.
        assert!(k.coefficients(&StepSize::new(0.01, 1.0)).is_ok());
        let err = k.coefficients(&StepSize::new(0.1, 1.0)).unwrap_err();
        assert!(err.to_string().contains("beta"), "{err}");
    }

    #[test]
    fn step_sizes_are_validated() {
        let k = Kernel::Sgld;
        assert!(k.coefficients(&StepSize::new(0.0, 1.0)).is_err());
        assert!(k.coefficients(&StepSize::new(-1e-3, 1.0)).is_err());
        assert!(k.coefficients(&StepSize::new(1e-3, f64::NAN)).is_err());
        assert!(k.coefficients(&StepSize::new(1e-3, f64::INFINITY)).is_err());
        assert!(Kernel::Momentum { mu: 1.0 }.validate().is_err());
        assert!(
            Kernel::Psgld {
                alpha: 0.99,
                lambda: 0.0
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn sgld_formula_on_f64() {
        let k = Kernel::Sgld;
        let c = k.coefficients(&StepSize::new(0.1, 2.0)).unwrap();
        let x = k.update(1.0, 3.0, &mut [], || 0.5, &c, false);
        assert_eq!(c.refresh, 0.0);
        assert!((x - (1.0 - 0.1 * 3.0 + (2.0f64 * 0.1 * 2.0).sqrt() * 0.5)).abs() < 1e-15);
    }
}
