//! The weighted Bayesian model average of a prediction.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::collect::LogWeightedMean;

use super::keep::{Keep, KeptModel, observe_by_keeping};
use crate::error::RunError;

/// `sum_s w_s f(theta_s) / sum_s w_s` over the kept models `theta_s` of every target chain,
/// with `w_s` the importance weight of the point (1 for plain samplers, `theta[J]^zeta` for
/// contour samplers, the rung-0 replica's point for replica exchange), accumulated in the log
/// domain ([`LogWeightedMean`]) so weights spanning thousands of orders of magnitude average
/// without overflow. `f` is any prediction as a flat vector: class probabilities `[n, k]`
/// row-major, regression means, a log-likelihood per test point.
pub struct ModelAverage<F> {
    predict: F,
    state: AverageState,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct AverageState {
    mean: LogWeightedMean,
    last: Option<Vec<f64>>,
}

impl<F> ModelAverage<F> {
    /// Averages `predict(model)` (which returns the prediction, or an error message).
    pub fn new(predict: F) -> Self {
        Self {
            predict,
            state: AverageState::default(),
        }
    }

    /// The weighted average (`None` before a model with positive weight was added).
    pub fn mean(&self) -> Option<Vec<f64>> {
        self.state.mean.mean()
    }

    /// The prediction of the last model added.
    pub fn last(&self) -> Option<&[f64]> {
        self.state.last.as_deref()
    }

    /// Models added.
    pub fn models(&self) -> usize {
        self.state.mean.models()
    }

    /// Kish's effective number of models, `(sum w)^2 / sum w^2`.
    pub fn effective_models(&self) -> f64 {
        self.state.mean.effective_models()
    }

    /// The running average itself.
    pub fn average(&self) -> &LogWeightedMean {
        &self.state.mean
    }
}

impl<M, F> Keep<M> for ModelAverage<F>
where
    F: FnMut(&M) -> Result<Vec<f64>, String>,
{
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError> {
        let p = (self.predict)(kept.model).map_err(RunError::Observer)?;
        self.state.mean.add_log(kept.log_weight, &p);
        self.state.last = Some(p);
        Ok(())
    }
}

observe_by_keeping!(ModelAverage);
