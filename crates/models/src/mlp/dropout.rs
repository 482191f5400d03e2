//! Dropout on an [`Mlp`](super::Mlp)'s hidden activations, as an option of the closed-form
//! posterior [`MlpPosterior`](super::MlpPosterior) (Srivastava et al. 2014, inverted form;
//! averaged masked passes as an approximate posterior predictive: Monte Carlo dropout, Gal &
//! Ghahramani 2016; the Dropout agent of the thesis' bandit, sec. 6.4.3 / Table E.1: rate
//! 50%, "each subprocess simulates 5 models for predictions").
//!
//! With keep probability `q = 1 - rate`, a masked hidden layer's activation becomes
//! `a_l = act(z_l) * m_l`, `m_l[i, j] = 1 / q` with probability `q` and `0` otherwise, drawn
//! independently per row and unit (`E[m] = 1`: a masked activation's mean is the unmasked
//! one). The network's prediction is the mean of `samples` masked
//! passes, each input row repeated `samples` times with masks of its own:
//!
//! ```text
//! f(x) = (1 / S) sum_{s=1..S} f(x; m^(s))
//! ```
//!
//! The likelihood is evaluated at this mean, as the ICSGLD bandit code's `DropoutRLReg` does
//! (`net(repeat_interleave(context, sample, dim=1)).mean(dim=1)` inside the MSE); `S = 1` is
//! plain dropout. The backward pass runs through the same masks: `dU/da_l` is multiplied by
//! `m_l` before the activation's slope, and each row's `S` copies of `dU/df` are `dU/df / S`.
//!
//! Masks come from a chain's own [`ChainRng`] stream, layer by layer in forward order, each a
//! row-major `[rows * S, width]` block of one uniform draw per entry (kept when `u < q`):
//! runs are reproducible and a checkpoint, which stores the streams, resumes them exactly.

use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::rng::ChainRng;

/// Which hidden layers dropout masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DropoutLayers {
    /// The last hidden layer only (the reference bandit code's `DropoutNet`).
    Last,
    /// Every hidden layer.
    Every,
}

/// Inverted dropout with `samples` masked passes averaged per input row.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropout {
    /// Probability that a unit is dropped, in `[0, 1)`.
    pub rate: f64,
    /// Masked passes averaged into one prediction (at least 1).
    pub samples: usize,
    /// The masked hidden layers.
    pub layers: DropoutLayers,
}

impl Dropout {
    /// The keep probability `1 - rate`.
    pub fn keep(&self) -> f64 {
        1.0 - self.rate
    }

    /// Checks the settings for a network with `hidden` hidden layers.
    pub fn validate(&self, hidden: usize) -> Result<(), TargetError> {
        let bad = |name, value: String, reason| {
            Err(TargetError::InvalidParameter {
                name,
                value,
                reason,
            })
        };
        if !(0.0..1.0).contains(&self.rate) {
            return bad("dropout rate", self.rate.to_string(), "must be in [0, 1)");
        }
        if self.samples == 0 {
            return bad("dropout samples", "0".into(), "must be at least 1");
        }
        if hidden == 0 {
            return bad(
                "dropout",
                format!("{self:?}"),
                "masks hidden activations: the network has no hidden layer",
            );
        }
        Ok(())
    }

    /// Whether hidden layer `layer` of `hidden` (0-based) is masked.
    pub fn masks_layer(&self, layer: usize, hidden: usize) -> bool {
        match self.layers {
            DropoutLayers::Last => layer + 1 == hidden,
            DropoutLayers::Every => layer < hidden,
        }
    }

    /// One mask `[rows, width]`: `1 / keep` with probability `keep`, else 0, one uniform draw
    /// per entry in row-major order.
    pub fn mask(
        &self,
        rng: &mut ChainRng,
        rows: usize,
        width: usize,
        device: &Device,
    ) -> Tensor<2> {
        let keep = self.keep();
        let scale = (1.0 / keep) as f32;
        // A local copy keeps the generator state in registers (the same stream).
        let mut local = rng.clone();
        let values: Vec<f32> = (0..rows * width)
            .map(|_| if local.uniform() < keep { scale } else { 0.0 })
            .collect();
        *rng = local;
        sgmcmc_samplers::transfer::upload(TensorData::new(values, [rows, width]), device)
    }

    /// The masks of one evaluation on `rows` input rows of a network whose hidden layers have
    /// `widths`: for each hidden layer, `[rows * samples, width]` or `None` where unmasked,
    /// drawn in layer order. Errors on invalid settings.
    pub fn masks(
        &self,
        widths: &[usize],
        rows: usize,
        rng: &mut ChainRng,
        device: &Device,
    ) -> Result<Vec<Option<Tensor<2>>>, TargetError> {
        self.validate(widths.len())?;
        Ok(widths
            .iter()
            .enumerate()
            .map(|(l, &w)| {
                self.masks_layer(l, widths.len())
                    .then(|| self.mask(rng, rows * self.samples, w, device))
            })
            .collect())
    }
}

/// `x` with each row repeated `s` times: rows `i s .. (i + 1) s` are copies of row `i`.
pub(super) fn repeat_rows(x: Tensor<2>, s: usize) -> Tensor<2> {
    let [rows, cols] = x.dims();
    x.reshape([rows, 1, cols])
        .repeat_dim(1, s)
        .reshape([rows * s, cols])
}

/// The sum of each run of `s` consecutive rows (the adjoint of [`repeat_rows`]).
pub(super) fn sum_rows(x: Tensor<2>, s: usize) -> Tensor<2> {
    let [rows, cols] = x.dims();
    x.reshape([rows / s, s, cols])
        .sum_dim(1)
        .reshape([rows / s, cols])
}

/// The mean of each run of `s` consecutive rows.
pub(super) fn mean_rows(x: Tensor<2>, s: usize) -> Tensor<2> {
    let [rows, cols] = x.dims();
    x.reshape([rows / s, s, cols])
        .mean_dim(1)
        .reshape([rows / s, cols])
}
