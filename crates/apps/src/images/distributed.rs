//! `sgmcmc images --distributed`: one run's chains over the ranks of `mpirun` (feature
//! `mpi`). Every rank resolves the same configuration and loads the same data, steps its block
//! of chains and scores its chains' networks at the evaluations; rank 0 prepares the run
//! folder, folds every chain's predictions in chain order ([`ChainProbs`]) and writes the one
//! process's files.
//!
//! Over ranks: ICSGHMC x P (the shared `theta` from the gathered energies), M-SGD x P and the
//! other independent chains, DEO*-SGD x P (its exploration rungs run SGD, rung 0 SGLD: no
//! velocity). Refused over more than one rank (a job of one rank runs them as one process
//! does): the replica exchange of `resghmc`, `vr-resghmc` and `cvr-resghmc`, which draws its
//! swap variance from fresh minibatches and full-data passes (variance-reduced replica
//! exchange, one process), and cycSWAG, whose draws come from per-chain fits rank 0 does not
//! hold.

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_engine::predict::classifier::probabilities;
use sgmcmc_models::{ImageClassifier, Posterior};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::SamplerSpec;

use super::config::ImagesConfig;
use super::data::ImagesData;
use super::run::ImagesSampler;
use crate::error::AppError;

/// One chain's predictions at an evaluation: on the test set, and, if its network joins the
/// model average, on the out-of-distribution set (where the run has one). A rank computes
/// its chains' and sends them to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainProbs {
    /// Probabilities on the whole test set (`whole`), else on the curve's images (its first
    /// ones).
    pub test: Vec<f64>,
    /// Whether `test` covers the whole test set.
    pub whole: bool,
    /// Whether the network joins the model average.
    pub collected: bool,
    /// Out-of-distribution probabilities of a collected network.
    pub ood: Option<Vec<f64>>,
}

impl ChainProbs {
    /// The predictions of `model` on the plain `device`: on the whole test set when `whole`
    /// (else the curve's images); when `collect` (which implies `whole`) also those the
    /// average needs.
    pub fn of(
        model: &ImageClassifier,
        data: &ImagesData,
        device: &Device,
        (collect, whole): (bool, bool),
    ) -> Result<Self, AppError> {
        let set = if whole { &data.test } else { &data.curve };
        Ok(Self {
            test: probabilities(model, set, &data.normaliser, device)?,
            whole,
            collected: collect,
            ood: if collect {
                Self::ood_of(model, data, device)?
            } else {
                None
            },
        })
    }

    /// The out-of-distribution probabilities of `model` (`None` without the set).
    pub fn ood_of(
        model: &ImageClassifier,
        data: &ImagesData,
        device: &Device,
    ) -> Result<Option<Vec<f64>>, AppError> {
        if data.ood.is_empty() {
            return Ok(None);
        }
        Ok(probabilities(model, &data.ood, &data.normaliser, device).map(Some)?)
    }
}

/// The sampler of `spec` over this rank's part `ensemble` of the chains `placement` lays out
/// over several ranks; refuses what cannot run over them (see the module docs).
pub fn placed(
    config: &ImagesConfig,
    spec: SamplerSpec,
    ensemble: ModuleEnsemble<ImageClassifier, Posterior>,
    placement: Placement,
) -> Result<ImagesSampler, AppError> {
    let refused = match (&spec, config.sampler.as_str()) {
        (SamplerSpec::VarianceReduced(_), _) => Some(
            "its replica exchange refreshes the swap variance from fresh minibatches and \
             full-data passes (variance-reduced replica exchange)",
        ),
        (_, "cycswag") => Some("its draws come from per-chain SWAG fits"),
        _ => None,
    };
    if let Some(why) = refused {
        return Err(AppError::Usage(format!(
            "images --distributed: `{}` runs in one process: {why}",
            config.sampler
        )));
    }
    Ok(spec.build_placed(ensemble, config.seed, placement)?)
}
