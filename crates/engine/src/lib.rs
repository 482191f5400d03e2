//! Running sgmcmc samplers on data: the engine every app and every user calls.
//!
//! ```text
//! batches (a burn Dataset + Batcher, shuffled per epoch with the run's seed)
//!   -> Run: Sampler::step(batch) -> StepReport
//!   -> observers, in order: divergence guard, metrics, progress, kept-sample hooks
//!      (weighted model average in the log domain, samples saved as burn records)
//!   -> checkpoints (sampler state, streams, observer state), atomic
//! ```
//!
//! * [`Run`]: the loop (steps or epochs, burn-in, thinning, checkpoints, resume).
//! * [`Observer`]: what a run reports to; [`observers`] has the ones the library ships.
//! * [`BatchSource`]: minibatches by `(epoch, index)`; [`DatasetBatches`] over any burn
//!   dataset, [`TensorBatches`] over in-memory `(x, y)` tensors, [`IndexBatches`] for a stage
//!   that builds a batch from its item indices and epoch (augmentation), [`Repeat`] for toys,
//!   [`Prefetch`] to prepare the next ones on a thread of their own while the device steps.
//! * Evaluation: [`observers::Evaluate`] scores every chain at chosen steps over the ranks and
//!   folds the scores on rank 0; [`observers::ClassifierAverage`] and
//!   [`observers::ModelAverage`] average the kept models.
//! * [`Ranks`]: chains over the processes of `mpirun` (feature `mpi`), or one process, with
//!   the cross-rank agreement, gathering and failure rules; [`Run::over`] runs the loop over
//!   them.
//! * [`experiment`]: the skeleton of a network experiment on one process or over the ranks
//!   (build, drive, checkpoint with the run's record, resume from the folder alone, report on
//!   rank 0), of a regression experiment ([`experiment::regression`]: an MLP on a split of
//!   tabular data) and of a toy experiment ([`experiment::toy`]: a sampler on an analytic
//!   target), and of a command's series of runs ([`experiment::run_series`]), with [`run_dir`]
//!   (locked run folders) and [`DeviceChoice`] (a device by name).
//! * [`SavedPosterior`]: the models a run saved, loaded back; [`predict`]: their model
//!   average on new inputs (regression rows, images with their uncertainty and metrics).
//! * [`settings`]: settings layered from defaults, presets, files and `KEY=VALUE` overrides;
//!   [`limits`]: bounds on run sizes; [`jobs`]: independent runs side by side, each on a
//!   compute thread of its own; [`fs`]: atomic writes (JSON, TOML, CSV).
//! * [`init`]: chains initialised from the run's seed; [`tuning`]: energy partitions and step
//!   sizes from pilot runs.
//!
//! The library prints nothing: progress goes to a closure the caller passes
//! ([`observers::ProgressReport`]).

pub mod batches;
pub mod checkpoint;
pub mod checkpoint_parts;
pub mod device;
pub mod error;
pub mod experiment;
pub mod fs;
pub mod init;
pub mod jobs;
#[cfg(feature = "learner")]
pub mod learner;
pub mod limits;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod observer;
pub mod observers;
pub mod posterior;
pub mod predict;
pub mod prefetch;
pub mod ranks;
pub mod run;
pub mod run_dir;
pub mod safetensors;
pub mod settings;
pub mod tensors;
pub mod tuning;
pub mod zarr;

pub use batches::{BatchSource, DatasetBatches, FnBatches, IndexBatches, Repeat};
pub use checkpoint::{Checkpoint, Checkpoints};
pub use device::DeviceChoice;
pub use error::RunError;
pub use observer::{Kept, Observer, Progress};
pub use posterior::{SampleRow, SavedPosterior};
pub use prefetch::Prefetch;
pub use ranks::{JobError, Ranks};
pub use run::{Length, Run, RunReport};
pub use tensors::{Shuffle, TensorBatches};
