//! The weighted Bayesian model average of a prediction.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::collect::LogWeightedMean;
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::Sampler;

use crate::error::RunError;
use crate::observer::{Kept, Observer, Progress, decode, encode};

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

/// Each kept target chain's model with its log weight, in chain order; an error where the
/// ensemble does not host one chain per module (a model average needs networks, not toy rows).
pub(super) fn kept_models<'k, M>(
    kept: &'k Kept<'_, Vec<M>>,
) -> impl Iterator<Item = Result<(&'k M, f64), RunError>> + 'k {
    kept.chains.iter().map(move |&c| {
        let model = kept.points.get(kept.index(c)).ok_or_else(|| {
            RunError::Observer(format!(
                "a model average needs one chain per module ({} modules, chain {c})",
                kept.points.len(),
            ))
        })?;
        Ok((model, kept.log_weights[c]))
    })
}

impl<S, M, F> Observer<S> for ModelAverage<F>
where
    S: Sampler,
    S::Ensemble: Ensemble<Snapshot = Vec<M>>,
    F: FnMut(&M) -> Result<Vec<f64>, String>,
{
    fn wants_points(&self) -> bool {
        true
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, Vec<M>>) -> Result<(), RunError> {
        for model in kept_models(kept) {
            let (model, log_w) = model?;
            let p = (self.predict)(model).map_err(RunError::Observer)?;
            self.state.mean.add_log(log_w, &p);
            self.state.last = Some(p);
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.state)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.state = decode(state)?;
        Ok(())
    }
}
