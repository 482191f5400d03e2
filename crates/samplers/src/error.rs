//! Typed errors of the samplers crate.

use thiserror::Error;

/// Errors raised by samplers, kernels and the control layer.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SamplerError {
    /// A hyper-parameter is out of its valid range.
    #[error("invalid hyper-parameter `{name}` = {value}: {reason}")]
    InvalidHyperParameter {
        /// Name of the parameter as it appears in configs.
        name: &'static str,
        /// The offending value, formatted.
        value: String,
        /// What the valid range is.
        reason: &'static str,
    },
    /// A chain's energy (or gradient) became NaN or infinite: the chain diverged.
    #[error(
        "chain {chain} diverged at step {step}: energy is {energy} ({})",
        divergence_hint(*step)
    )]
    Diverged {
        /// Index of the chain (0-based).
        chain: usize,
        /// Step at which the non-finite energy was observed (0-based).
        step: u64,
        /// The energy value.
        energy: f64,
    },
    /// A refresh of the corrected swap's energy-variance estimate was NaN or infinite: the
    /// paired energies of two replicas were not finite or differ beyond `f64`. Folding it in
    /// would leave `sigma2_hat` non-finite for good and stop every swap of the pair silently.
    #[error(
        "the energy-variance estimate of rungs {pair} and {} would become {value}: the replicas' \
         paired energies are not finite or differ beyond f64 (a diverging replica?)",
        .pair + 1
    )]
    NonFiniteVariance {
        /// The pair of rungs (`pair`, `pair + 1`), 0-based.
        pair: usize,
        /// The refresh's half paired variance.
        value: f64,
    },
    /// A name that is not in a registry.
    #[error("unknown {what} `{name}` (known: {known})")]
    Unknown {
        /// What kind of name (sampler, kernel).
        what: &'static str,
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// Settings that do not fit together (e.g. a ladder with more rungs than chains).
    #[error("{0}")]
    InvalidSetting(String),
    /// A checkpoint does not fit the sampler it is restored into.
    #[error("checkpoint does not match this sampler: {0}")]
    Checkpoint(String),
    /// The target failed to produce an estimate.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The ranks of a distributed run could not exchange their values ([`crate::comm`]).
    #[error("{0}")]
    Communication(String),
}

impl SamplerError {
    /// Whether this is a divergence (a chain's energy, or the swap correction's variance
    /// estimate, became NaN or infinite) rather than bad input.
    pub fn is_divergence(&self) -> bool {
        matches!(self, Self::Diverged { .. } | Self::NonFiniteVariance { .. })
    }
}

/// Errors raised by targets (energies and gradients).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TargetError {
    /// The target was configured with invalid parameters.
    #[error("invalid target parameter `{name}` = {value}: {reason}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The offending value, formatted.
        value: String,
        /// What the valid range is.
        reason: &'static str,
    },
    /// A name that is not in a registry.
    #[error("unknown {what} `{name}` (known: {known})")]
    Unknown {
        /// What kind of name (target, sampler, preset).
        what: &'static str,
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// Shapes of the parameters or the batch do not match the target.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A Gaussian mixture's parameters are invalid.
    #[error(transparent)]
    Mixture(#[from] MixtureError),
}

/// Why a Gaussian mixture cannot be built. Components are numbered from 1 in messages, as a
/// reader counts the entries of a TOML list.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MixtureError {
    /// No components.
    #[error("a mixture needs at least one component")]
    Empty,
    /// Means with no coordinates.
    #[error("means need at least one coordinate")]
    ZeroDimension,
    /// A per-component list whose length is not the number of components.
    #[error("{what} has {got} entries for {expected} components (one per mean)")]
    Count {
        /// Which list (`weights`, `sd`, `cov`).
        what: &'static str,
        /// Its length.
        got: usize,
        /// The number of means.
        expected: usize,
    },
    /// A vector or matrix whose size is not the dimension.
    #[error("component {}: {what} has {got} entries, expected {expected} (dimension {dim})", .component + 1)]
    Size {
        /// Component index (0-based).
        component: usize,
        /// Which parameter (`mean`, `sd`, `cov`, `cov row`).
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length it must have.
        expected: usize,
        /// The dimension (length of the first mean).
        dim: usize,
    },
    /// A weight that is not a finite positive number.
    #[error("component {}: weight {value} must be finite and > 0", .component + 1)]
    Weight {
        /// Component index (0-based).
        component: usize,
        /// The weight.
        value: f64,
    },
    /// A NaN or infinite entry.
    #[error("component {}: {what} has a non-finite entry ({value})", .component + 1)]
    NonFinite {
        /// Component index (0-based).
        component: usize,
        /// Which parameter.
        what: &'static str,
        /// The entry.
        value: f64,
    },
    /// A standard deviation that is not positive, or whose variance or precision `1 / sd^2`
    /// overflows `f64` (a density flat to rounding, which no chain can sample).
    #[error(
        "component {}: standard deviation {value:?} must be > 0 with sd^2 and 1 / sd^2 finite \
         (about 1e-150 to 1e150)",
        .component + 1
    )]
    Sd {
        /// Component index (0-based).
        component: usize,
        /// The standard deviation.
        value: f64,
    },
    /// A covariance with `C_ij != C_ji`.
    #[error(
        "component {}: covariance is not symmetric (entry [{i}][{j}] = {a}, [{j}][{i}] = {b})",
        .component + 1
    )]
    NotSymmetric {
        /// Component index (0-based).
        component: usize,
        /// Row of the upper entry.
        i: usize,
        /// Column of the upper entry.
        j: usize,
        /// `C_ij`.
        a: f64,
        /// `C_ji`.
        b: f64,
    },
    /// A covariance whose Cholesky factorisation meets a non-positive pivot.
    #[error(
        "component {}: covariance is not positive definite (Cholesky pivot {pivot} at row {row})",
        .component + 1
    )]
    NotPositiveDefinite {
        /// Component index (0-based).
        component: usize,
        /// Row of the failing pivot (0-based).
        row: usize,
        /// `C_rr - sum_k L_rk^2`, which must be > 0.
        pivot: f64,
    },
}

/// Checks a hyper-parameter and builds the error in one line.
/// What a divergence at `step` most likely means: at step 0 no step has been taken, so the
/// start (or the data) is at fault, not the learning rate.
fn divergence_hint(step: u64) -> &'static str {
    if step == 0 {
        "at the starting point, before any move: check the initial values and the data, not \
         the learning rate"
    } else {
        "usually a learning rate too large for the target's curvature; a target in large \
         units (standardize it) or a very high temperature does the same"
    }
}

pub(crate) fn check(
    ok: bool,
    name: &'static str,
    value: f64,
    reason: &'static str,
) -> Result<(), SamplerError> {
    if ok {
        Ok(())
    } else {
        // Very large or small values in exponent form (1e300, not 301 digits).
        let a = value.abs();
        let value = if a.is_finite() && a != 0.0 && !(1e-4..1e6).contains(&a) {
            format!("{value:e}")
        } else {
            format!("{value}")
        };
        Err(SamplerError::InvalidHyperParameter {
            name,
            value,
            reason,
        })
    }
}

/// `value` must be finite and strictly positive.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<(), SamplerError> {
    check(
        value.is_finite() && value > 0.0,
        name,
        value,
        "must be finite and > 0",
    )
}

/// The hottest temperature a sampler accepts. At full-data scale the energies a run visits
/// differ by far less than this (a sum over the data of per-example losses), so a hotter
/// target `exp(-U / tau)` is flat and its noise `sqrt(2 lr tau)` swamps every gradient: the
/// run would look like one and say nothing.
pub const MAX_TEMPERATURE: f64 = 1e10;

/// A temperature: finite, `>= 0` and at most [`MAX_TEMPERATURE`].
pub(crate) fn temperature(name: &'static str, value: f64) -> Result<(), SamplerError> {
    check(
        value.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&value),
        name,
        value,
        "must be finite, >= 0 and at most 1e10 (a hotter target exp(-U / tau) is flat over \
         the energies of any data set)",
    )
}

/// `value` must be finite and non-negative.
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<(), SamplerError> {
    check(
        value.is_finite() && value >= 0.0,
        name,
        value,
        "must be finite and >= 0",
    )
}

#[cfg(test)]
mod divergence_tests {
    use super::SamplerError;

    #[test]
    fn a_divergence_before_any_move_does_not_blame_the_learning_rate() {
        let at = |step| {
            SamplerError::Diverged {
                chain: 1,
                step,
                energy: f64::NAN,
            }
            .to_string()
        };
        assert!(at(0).contains("starting point") && at(0).contains("not the learning rate"));
        assert!(at(7).contains("learning rate too large") && at(7).contains("standardize"));
    }
}
