//! Predictions of a saved posterior on new inputs, without sampling again.
//!
//! A run folder written with its samples holds the kept models with their log importance
//! weights (`samples/`, [`SavedPosterior`]) and what those models are (`model.json`,
//! [`SavedModel`]): which network, and how the run standardized its inputs. With normalised
//! weights `W_s`, the prediction on an input `x` is the weighted model average
//! `sum_s W_s f(x; theta_s)`:
//!
//! * a regression run ([`SavedModel::UciMlp`], [`regression`]): rows in original units, the
//!   average of the networks' outputs, in original units;
//! * an image classifier ([`SavedModel::ImageClassifier`], [`classifier::predict`]): the
//!   averaged class probabilities `p_c = sum_s W_s p_sc`, their entropy `H[p]` and its
//!   epistemic part, the mutual information `I = H[p] - sum_s W_s H[p_s]` between label and
//!   model, and with labels the accuracy, NLL, Brier score and ECE.

pub mod classifier;

use std::path::Path;

use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use sgmcmc_data::Standardizer;
use sgmcmc_models::{Mlp, MlpConfig, Network};

use crate::experiment::{DescribeSamples, MODEL_FILE, NetExperiment, SAMPLES_DIR};
use crate::{RunError, SavedPosterior};

/// What a saved run's models are: written beside the samples ([`MODEL_FILE`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SavedModel {
    /// A regression MLP with the training split's standardization.
    UciMlp {
        /// The network.
        mlp: MlpConfig,
        /// Feature (and target) statistics of the training split.
        standardizer: Standardizer,
        /// Whether the network predicts the standardized target.
        standardize_target: bool,
    },
    /// An image classifier.
    ImageClassifier(classifier::ClassifierInput),
}

impl SavedModel {
    /// Writes `dir/model.json`.
    pub fn write(&self, dir: &Path) -> Result<(), RunError> {
        crate::fs::write_json(&dir.join(MODEL_FILE), self)
    }

    /// [`Self::write`] once, into the run folder the experiment skeleton gives it.
    pub fn describe<E: NetExperiment>(self) -> DescribeSamples<E> {
        Box::new(move |dir| Ok(self.write(dir)?))
    }

    /// Reads `dir/model.json`.
    pub fn read(dir: &Path) -> Result<Self, RunError> {
        let path = dir.join(MODEL_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            RunError::Input(format!(
                "cannot read {} ({e}); was the run written with --save-samples?",
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| RunError::Input(format!("{}: {e}", path.display())))
    }
}

/// The model average's predictions on `rows` (original units) of the regression run in `dir`.
pub fn regression(dir: &Path, rows: &[Vec<f64>], device: &Device) -> Result<Vec<f64>, RunError> {
    let SavedModel::UciMlp {
        mlp,
        standardizer,
        standardize_target,
    } = SavedModel::read(dir)?
    else {
        return Err(RunError::Input(format!(
            "{} is a classifier's run, not a regression's",
            dir.display()
        )));
    };
    let posterior = SavedPosterior::open(&dir.join(SAMPLES_DIR))?;
    let mut x: Vec<f32> = Vec::with_capacity(rows.len() * mlp.inputs);
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in standardizer.x(r).into_iter().enumerate() {
            // The network computes in f32: an input beyond it would come back as NaN.
            if !(v as f32).is_finite() {
                return Err(RunError::Input(format!(
                    "row {}, column {}: {:e} is {v:.3e} training standard deviations from \
                     the training mean, beyond the network's f32 arithmetic",
                    i + 1,
                    j + 1,
                    r[j]
                )));
            }
            x.push(v as f32);
        }
    }
    let x = Tensor::<2>::from_data(TensorData::new(x, [rows.len(), mlp.inputs]), device);
    let template: Mlp = mlp.init(device);
    let mean = posterior
        .average(&template, |m: &Mlp| {
            sgmcmc_samplers::transfer::read_f64(m.forward(x.clone())).map_err(|e| e.to_string())
        })?
        .mean()
        .ok_or_else(|| RunError::Input("every saved model has weight 0".into()))?;
    if let Some(i) = mean.iter().position(|m| !m.is_finite()) {
        return Err(RunError::Observer(format!(
            "the prediction for row {} is {} (its inputs overflow the network)",
            i + 1,
            mean[i]
        )));
    }
    Ok(mean
        .into_iter()
        .map(|m| {
            if standardize_target {
                standardizer.y_back(m)
            } else {
                m
            }
        })
        .collect())
}
