//! The observers the library ships: small types the caller composes into a [`Run`](crate::Run).
//!
//! | observer | what it does | checkpointed state |
//! |---|---|---|
//! | [`ProgressReport`] | calls a closure with (steps done, total) about 1000 times a run | - |
//! | [`ContourWatch`] | a contour sampler's bins after burn-in and multiplier range ([`ContourStats`](sgmcmc_samplers::diagnostics::ContourStats)) | the statistics |
//! | [`DivergenceGuard`] | stops the run when an energy or multiplier leaves its range | - |
//! | [`MetricsCsv`] | writes per-step energies, step sizes, weights and rungs to a CSV file | file length |
//! | [`ModelAverage`] | the importance-weighted average of a prediction over the kept models | the average |
//! | [`ClassifierAverage`] | the model average of class probabilities: accuracy, NLL, Brier, ECE, reliability, entropy, mutual information, OOD AUROC / AUPR | the averages |
//! | [`Evaluate`] | scores every chain's pre-move model at chosen steps (and the final models), gathered over the ranks and folded on rank 0 | the folded state, seconds |
//! | [`TrainClock`] | counts the steps done, the seconds the steps took and those of the run loop | steps, seconds |
//! | [`StepColumns`] | a value per chain and step (an energy, a multiplier), joined over the ranks on rank 0 | the rows |
//! | [`SampleSaver`] | saves kept models as burn records or safetensors files with their log weights | index length |
//! | [`Trace`] | per-chain draws of energies, log weights and functionals; R-hat, ESS, k-hat; an ArviZ Zarr store ([`Trace::write_zarr`]) | the draws |
//! | [`OnStep`], [`OnSample`], [`BeforeStep`], [`AfterStep`] | closures | - |
//!
//! The model averages and the sample saver also take models one at a time ([`Keep`]), so a burn
//! training loop that steps with the SG-MCMC optimizers (`sgmcmc_samplers::optim`) keeps its
//! samples through the same code: a [`Keeper`] counts the loop's steps, applies burn-in,
//! thinning and the sampling phase, and hands each kept model to them
//! (`examples/last_layer.rs`).

mod average;
mod classifier;
mod clock;
mod closure;
mod columns;
mod contour;
mod evaluate;
mod guard;
pub(crate) mod keep;
mod metrics;
mod progress;
mod samples;
mod trace;
mod trace_zarr;

pub use average::ModelAverage;
pub use classifier::{CALIBRATION_BINS, ClassifierAverage, ClassifierScores, OodDetection};
pub use clock::TrainClock;
pub use closure::{AfterStep, BeforeStep, OnSample, OnStep};
pub use columns::StepColumns;
pub use contour::ContourWatch;
pub use evaluate::{Evaluate, Scored, Scoring};
pub use guard::{BLOW_UP, DivergenceGuard};
pub use keep::{Keep, Keeper, KeptModel, lock};
pub use metrics::MetricsCsv;
pub use progress::ProgressReport;
pub use samples::{SAMPLES_INDEX, SampleFormat, SampleSaver};
pub use trace::{Functionals, NoFunctionals, Trace, TracePart, TraceSummary};
