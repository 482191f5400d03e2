//! Predictions of sampled CNNs (the class probabilities of
//! [`sgmcmc_engine::predict::classifier::probabilities`]) and the run's weighted Bayesian model
//! averages (in-distribution test set, held-out digits, Fashion-MNIST).

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_data::ImageSet;
use sgmcmc_data::datasets::ImageBatcher;
use sgmcmc_data::mnist::{MNIST_MEAN, MNIST_STD};
use sgmcmc_engine::predict::classifier::probabilities;
use sgmcmc_models::Cnn;
use sgmcmc_models::metrics::{Bma, accuracy, nll};

use crate::error::AppError;
use crate::mnist::data::MnistData;

/// The weighted model averages of a run (checkpointed with it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Averages {
    /// On the in-distribution test set.
    pub test: Bma,
    /// On the held-out digits.
    pub heldout: Bma,
    /// On Fashion-MNIST.
    pub fashion: Bma,
}

/// Accuracy and NLL of one prediction on the test set.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Scores {
    /// Accuracy.
    pub accuracy: f64,
    /// Mean negative log-likelihood.
    pub nll: f64,
}

/// Scores of `probs` on `set` with `k` classes.
pub fn scores(probs: &[f64], set: &ImageSet, k: usize) -> Scores {
    let labels: Vec<usize> = set.labels.iter().map(|&l| usize::from(l)).collect();
    Scores {
        accuracy: accuracy(probs, k, &labels),
        nll: nll(probs, k, &labels),
    }
}

/// One chain's predictions at an evaluation: on the test digits, and, if its model joins the
/// averages, on the held-out digits and Fashion-MNIST (where the run has them). A rank of a
/// distributed run computes its chains' and sends them to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainPredictions {
    /// Test-set probabilities.
    pub test: Vec<f64>,
    /// Whether the model joins the averages.
    pub collected: bool,
    /// Held-out probabilities of a collected model.
    pub heldout: Option<Vec<f64>>,
    /// Fashion-MNIST probabilities of a collected model.
    pub fashion: Option<Vec<f64>>,
}

impl ChainPredictions {
    /// The predictions of `model` on the plain `device`; `collect`: also those the averages
    /// need.
    pub fn of(
        model: &Cnn,
        data: &MnistData,
        device: &Device,
        collect: bool,
    ) -> Result<Self, AppError> {
        let norm = ImageBatcher {
            mean: MNIST_MEAN,
            std: MNIST_STD,
        };
        let on = |set: &ImageSet| probabilities(model, set, &norm, device);
        Ok(Self {
            test: on(&data.test)?,
            collected: collect,
            heldout: (collect && !data.heldout.is_empty())
                .then(|| on(&data.heldout))
                .transpose()?,
            fashion: data
                .fashion
                .as_ref()
                .filter(|_| collect)
                .map(on)
                .transpose()?,
        })
    }
}

impl Averages {
    /// Adds a collected model's predictions with log weight `log_w`.
    pub fn add(&mut self, log_w: f64, p: &ChainPredictions) {
        self.test.add_log(log_w, &p.test);
        if let Some(h) = &p.heldout {
            self.heldout.add_log(log_w, h);
        }
        if let Some(f) = &p.fashion {
            self.fashion.add_log(log_w, f);
        }
    }
}
