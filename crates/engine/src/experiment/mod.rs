//! The skeleton of a network experiment (the command line's `mnist` and `images`): what every
//! such experiment does the same way, on one process or over the ranks of `mpirun`.
//!
//! An experiment fills in [`NetExperiment`] (its settings, data, sampler, recorders and
//! report); the skeleton then
//!
//! * builds the sampler on every rank ([`execute_on`]), trains it, and has rank 0 report the
//!   finished run or say how to continue a stopped one;
//! * continues a checkpointed run from its folder alone ([`resume()`]): the settings, data folder
//!   and device the checkpoint records, the data checked against the digest it records;
//! * runs the engine loop the same way for every experiment ([`drive`]): the divergence guard,
//!   the steps and their time, the experiment's recorders, its progress observer, checkpoints
//!   carrying the run's [`RunMeta`], the early stop and the resume, `config.toml` written
//!   first by rank 0;
//! * starts a run over the ranks of an MPI job ([`run_distributed`]);
//! * runs any command in the order a job of ranks follows: rank 0 prepares, every rank runs its
//!   part, rank 0 reports ([`run_job`]);
//! * runs a series of independent runs, the seeds of one configuration or the cells of a table
//!   ([`run_series`], each with its result file: [`with_result_file`]).
//!
//! Beside it: the run's record ([`RunMeta`]: settings, data digest, device), continuing a
//! checkpoint on one process or on as many ranks as wrote it ([`Resume`]). The skeleton prints
//! nothing: lines for the user and progress go through the experiment's [`Console`].
//!
//! Two more skeletons: a regression experiment (an MLP on a split of tabular data, any sampler,
//! its model average: [`regression`]) and a toy experiment (a sampler on an analytic target,
//! its mode masses and traces: [`toy`]).

mod job;
mod meta;
pub mod regression;
mod resume;
mod series;
pub mod toy;

pub use job::{Lead, LeaderOnly, leader_only, run_job, run_job_on};
pub use meta::{DataDigest, DataRecord, RunMeta, checkpoint_path};
pub use resume::{Resume, one_process_error, resume_command, with_parts};
pub use series::{run_series, with_result_file};

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::device::DeviceChoice;
use crate::error::RunError;
use crate::observers::{
    BLOW_UP, DivergenceGuard, SampleSaver, StepColumns, Trace, TracePart, TraceSummary, TrainClock,
};
use crate::ranks::{JobError, Ranks};
use crate::run::Length;
use crate::run_dir::fresh_run_dir;
use crate::{BatchSource, Checkpoint, Checkpoints, Observer, Run};

/// What a network experiment is made of; the skeleton's functions do the rest.
pub trait NetExperiment: Sized {
    /// The command (`sgmcmc NAME`), as messages and resume commands name it.
    const COMMAND: &'static str;
    /// What a checkpoint of another command (or an older sgmcmc) is called in the error.
    const NOT_OURS: &'static str;
    /// What goes wrong (the skeleton's own errors arrive as [`RunError`]).
    type Error: JobError;
    /// Where the experiment's lines and progress go.
    type Console: Console;
    /// The run's settings (its `config.toml`).
    type Config: RunSettings;
    /// The data a run reads.
    type Data: RunData<Settings = Self::Config, Error = Self::Error>;
    /// The sampler over the run's chains (its snapshots are the chains' networks, which
    /// [`drive`] saves when asked).
    type Sampler: Sampler;
    /// What a run records (built by [`NetExperiment::train`] from its recorders and what
    /// [`drive`] returns).
    type Record;

    /// The sampler of [`Build::config`] over this rank's block of the chains
    /// [`Build::placement`] lays out (all of them in one process).
    fn build(parts: Build<'_, Self>) -> Result<Self::Sampler, Self::Error>;
    /// Runs (or continues) `session` with `sampler` (through [`drive`]) and returns the record:
    /// on rank 0 every chain's; what the other ranks return is not read.
    fn train(
        session: Session<'_, Self>,
        data: &Self::Data,
        sampler: &mut Self::Sampler,
        device: &Device,
    ) -> Result<Self::Record, Self::Error>;
    /// How far a stopped run got (`after 3 of 10 epochs`), `None` when it is finished.
    fn stopped(config: &Self::Config, data: &Self::Data, record: &Self::Record) -> Option<String>;
    /// Rank 0 of a finished run: its files and summary line; `over` is ` over N ranks` for a
    /// distributed run, else empty.
    fn report(
        config: &Self::Config,
        data: &Self::Data,
        dir: &Path,
        device: DeviceChoice,
        record: &Self::Record,
        over: &str,
    ) -> Result<(), Self::Error>;
}

/// The settings of a network experiment's run (its `config.toml`), as the skeleton reads them.
pub trait RunSettings: Clone + Serialize + DeserializeOwned {
    /// The sampler's name.
    fn sampler(&self) -> &str;
    /// How many chains they run.
    fn chains(&self) -> usize;
}

/// The data of a network experiment's run.
pub trait RunData: Sized {
    /// The run's settings, which say what to read.
    type Settings;
    /// What goes wrong reading it.
    type Error;
    /// Reads the data `settings` ask for under the data folder `root`.
    fn load(root: &Path, settings: &Self::Settings) -> Result<Self, Self::Error>;
    /// The data folder read and the digest of what was read.
    fn source(&self) -> &DataRecord;
}

/// What [`NetExperiment::build`] builds a run's sampler from.
pub struct Build<'a, E: NetExperiment> {
    /// The run's settings.
    pub config: &'a E::Config,
    /// Its data.
    pub data: &'a E::Data,
    /// The autodiff device.
    pub device: &'a Device,
    /// The chains of the run and this rank's block of them.
    pub placement: Placement,
}

/// Where an experiment's lines for the user and its progress go: the skeleton prints nothing.
pub trait Console {
    /// The progress observer of a run of `total` steps of the sampler `label`, moved about
    /// `updates` times (hidden unless `show`: rank 0 of a run that shows progress).
    fn progress<S: Sampler>(
        total: u64,
        label: &str,
        show: bool,
        updates: u64,
    ) -> Box<dyn Observer<S>>;
    /// Rank 0's line for the user (a stopped run and how to continue it).
    fn say(line: &str);
    /// Rank 0's warning (a run folder that cannot be locked).
    fn warn(line: &str);
}

/// One run of an experiment on this rank: its settings, where it writes, what it continues.
pub struct Session<'a, E: NetExperiment> {
    /// The settings, data record and device (the checkpoints' meta).
    pub meta: RunMeta<E::Config>,
    /// The job's ranks ([`Ranks::local`] in one process).
    pub ranks: &'a Ranks,
    /// The run folder.
    pub dir: &'a Path,
    /// The checkpoint it continues from.
    pub resume: Option<Resume>,
    /// Where it stops early, with a checkpoint there (`--stop-after`, tests of resume): steps,
    /// or epochs of the batch source ([`Run::stop_at`]).
    pub stop: Option<Length>,
    /// Whether rank 0 shows a progress bar.
    pub show_progress: bool,
}

/// Writes the description of a run's saved networks into its folder ([`MODEL_FILE`]).
pub type DescribeSamples<E> = Box<dyn FnOnce(&Path) -> Result<(), <E as NetExperiment>::Error>>;

/// How long [`drive`] runs and how often it checkpoints, in steps.
pub struct Schedule<E: NetExperiment> {
    /// The run's length (epochs of the batch source, or steps).
    pub length: Length,
    /// Its steps (the progress bar's length).
    pub total: u64,
    /// Steps between checkpoints (0: none).
    pub checkpoint_every: u64,
    /// About how many times over the run the progress observer is moved.
    pub progress_updates: u64,
    /// The steps whose pre-move points are the run's draws (the models its average collects):
    /// the trace records their energies and log weights ([`Trace`]).
    pub keep: Box<dyn Fn(u64) -> bool>,
    /// Save the draws' networks in `samples/`, described by what this writes (`model.json`),
    /// for `sgmcmc predict` (one process).
    pub save: Option<DescribeSamples<E>>,
}

/// The description of a run's saved networks ([`Schedule::save`]).
pub const MODEL_FILE: &str = "model.json";
/// The folder of a run's saved networks ([`Schedule::save`]).
pub const SAMPLES_DIR: &str = "samples";

/// Runs `config` into `dir` in one process, from scratch or from the checkpoint `resume`, and
/// writes its outputs when it reaches the end. Returns the record.
pub fn execute<E: NetExperiment>(
    config: &E::Config,
    data: &E::Data,
    dir: &Path,
    device: DeviceChoice,
    resume: Option<Checkpoint>,
    stop: Option<Length>,
    quiet: bool,
) -> Result<E::Record, E::Error> {
    let ranks = Ranks::local();
    let session = Session::<E> {
        meta: RunMeta {
            config: config.clone(),
            data: data.source().clone(),
            device,
        },
        ranks: &ranks,
        dir,
        resume: resume.map(Resume::whole),
        stop,
        show_progress: !quiet,
    };
    execute_on(session, data)
}

/// [`execute`] of `session` on this rank's chains; rank 0 writes the outputs and reports
/// through the experiment's [`Console`].
pub fn execute_on<E: NetExperiment>(
    session: Session<'_, E>,
    data: &E::Data,
) -> Result<E::Record, E::Error> {
    let (ranks, dir) = (session.ranks, session.dir);
    let (config, device_choice) = (session.meta.config.clone(), session.meta.device);
    let device = device_choice.tensor_device(E::COMMAND)?.autodiff();
    let built = ranks
        .placement(config.chains())
        .map_err(E::Error::from)
        .and_then(|placement| {
            E::build(Build {
                config: &config,
                data,
                device: &device,
                placement,
            })
        });
    let mut sampler = ranks.agree(built)?;
    let record = E::train(session, data, &mut sampler, &device)?;
    ranks.on_leader(|| {
        if let Some(done) = E::stopped(&config, data, &record) {
            let on = ranks.is_distributed().then(|| ranks.size());
            let command = resume_command(E::COMMAND, dir, on);
            E::Console::say(&format!(
                "{}: stopped {done}; continue with `{command}`",
                config.sampler()
            ));
            return Ok(());
        }
        let over = if ranks.is_distributed() {
            format!(" over {} ranks", ranks.size())
        } else {
            String::new()
        };
        E::report(&config, data, dir, device_choice, &record, &over)
    })?;
    Ok(record)
}

/// Reads a run folder's checkpoint for `ranks` (this rank's part of a distributed one, refused
/// on another number of ranks) and the settings it records.
pub fn read_checkpoint_on<E: NetExperiment>(
    dir: &Path,
    ranks: &Ranks,
) -> Result<(RunMeta<E::Config>, Resume), E::Error> {
    let path = checkpoint_path(dir);
    Resume::read_meta(
        (&path, dir),
        ranks,
        (E::COMMAND, E::NOT_OURS),
        |m: &RunMeta<E::Config>| m.config.chains(),
        &E::Console::warn,
    )
}

/// A one-process run folder's checkpoint and the settings it records.
pub fn read_checkpoint<E: NetExperiment>(
    dir: &Path,
) -> Result<(RunMeta<E::Config>, Checkpoint), E::Error> {
    let (meta, r) = read_checkpoint_on::<E>(dir, &Ranks::local())?;
    Ok((meta, r.checkpoint))
}

/// `sgmcmc COMMAND --resume DIR [--distributed]`: the recorded settings, data folder and
/// device, in this process or over the ranks of this MPI job with `distributed`
/// ([`Ranks::of`], as many as wrote the checkpoint); the data must be what the run started on.
pub fn resume<E: NetExperiment>(
    distributed: bool,
    dir: &Path,
    stop: Option<Length>,
    quiet: bool,
) -> Result<(), E::Error> {
    let ranks = &Ranks::of(distributed)?;
    let (meta, r) = read_checkpoint_on::<E>(dir, ranks)?;
    let data = ranks.agree(E::Data::load(&meta.data.dir, &meta.config).and_then(|d| {
        meta.data.check(d.source())?;
        Ok(d)
    }))?;
    let session = Session::<E> {
        meta,
        ranks,
        dir,
        resume: Some(r),
        stop,
        show_progress: !quiet,
    };
    execute_on(session, &data)?;
    Ok(())
}

/// Writes a finished run's trace ([`drive`]'s) as `trace.zarr` in `dir`, an ArviZ store
/// (`scripts/arviz_trace.py`), and returns its diagnostics for `summary.json`. A run that kept
/// no draw (every evaluation in the burn-in) writes no store; its diagnostics say 0 draws.
pub fn write_trace(dir: &Path, trace: &TracePart) -> Result<TraceSummary, RunError> {
    let trace = Trace::from(trace.clone());
    let summary = trace.summary();
    if summary.draws > 0 {
        trace.write_zarr(&dir.join(TRACE_FILE))?;
    }
    Ok(summary)
}

/// The file of [`write_trace`].
pub const TRACE_FILE: &str = "trace.zarr";

/// Flags of a fresh run that are not its settings.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// The device.
    pub device: DeviceChoice,
    /// Whether an earlier run in the folder is replaced.
    pub force: bool,
    /// No progress bars.
    pub quiet: bool,
}

/// One run over the ranks of the MPI job this process was started in ([`Ranks::of`]): every
/// rank resolves the same settings and folder (`resolve`) and loads the same data from `root`;
/// rank 0 prepares the folder (`files`, and the checkpoint parts) and writes the outputs.
pub fn run_distributed<E: NetExperiment>(
    resolve: impl FnOnce() -> Result<(E::Config, PathBuf), E::Error>,
    (root, files): (&Path, &[&'static str]),
    launch: Launch,
    stop: Option<Length>,
) -> Result<(), E::Error> {
    let ranks = &Ranks::of(true)?;
    let (config, dir) = ranks.agree(resolve())?;
    ranks.on_leader(|| {
        fresh_run_dir(&dir, launch.force, &with_parts(files))?.warn(E::Console::warn);
        Ok::<(), E::Error>(())
    })?;
    let data = ranks.agree(E::Data::load(root, &config))?;
    let session = Session::<E> {
        meta: RunMeta {
            config,
            data: data.source().clone(),
            device: launch.device,
        },
        ranks,
        dir: &dir,
        resume: None,
        stop,
        show_progress: !launch.quiet,
    };
    execute_on(session, &data)?;
    Ok(())
}

/// One chain's values at one step, which [`drive`] records for every step of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainStep {
    /// Stochastic energy `U~` (full-data scale) before the move.
    pub energy: f64,
    /// Gradient multiplier of the move (1 for samplers without one).
    pub multiplier: f64,
    /// Log importance weight of the pre-move point.
    pub log_weight: f64,
}

/// What [`drive`] gives rank 0.
#[derive(Clone, Debug, Default)]
pub struct Driven {
    /// The draws' energies and log weights, every rank's trace joined.
    pub trace: TracePart,
    /// Of a run that finished (empty for a stopped one), every chain's values at every step:
    /// `steps[k][c]` for step `k` and global chain `c`.
    pub steps: Vec<Vec<ChainStep>>,
    /// Steps done, over every session of the run.
    pub steps_done: u64,
    /// Seconds rank 0's steps took ([`TrainClock::step_seconds`]: the sampler's step and the
    /// [`Observer::before_step`] of the experiment's recorders), over every session of the run.
    pub step_seconds: f64,
    /// Seconds of rank 0's run loop ([`TrainClock::loop_seconds`]: batches, steps, every
    /// observer, checkpoints), over every session of the run.
    pub loop_seconds: f64,
}

/// The engine run of `session`: the divergence guard (NaN, and the [`BLOW_UP`] rule), every
/// chain's values at every step ([`ChainStep`], a [`StepColumns`]), the steps' time
/// ([`TrainClock`]), the experiment's
/// `recorders` (in order), a [`Trace`] of the draws' energies and log weights, its progress
/// observer ([`Console::progress`]), checkpoints carrying the session's meta, the early stop
/// and the resume, over the session's ranks ([`Run::over`]); rank 0 writes the settings to
/// `config.toml` before the first step. Returns what rank 0 gathers ([`Driven`]; `None` on the
/// other ranks).
pub fn drive<E, B>(
    session: Session<'_, E>,
    schedule: Schedule<E>,
    recorders: &mut [&mut dyn Observer<E::Sampler>],
    sampler: &mut E::Sampler,
    batches: &mut B,
) -> Result<Option<Driven>, E::Error>
where
    E: NetExperiment,
    B: BatchSource<Batch = <E::Sampler as Sampler>::Batch>,
    SampleSaver: Observer<E::Sampler>,
{
    let (ranks, config) = (session.ranks, &session.meta.config);
    let name = config.sampler();
    let show = session.show_progress && ranks.is_leader();
    let mut progress = E::Console::progress(schedule.total, name, show, schedule.progress_updates);
    let meta = crate::observer::encode(&session.meta)?;
    let checkpoints =
        Checkpoints::new(checkpoint_path(session.dir), schedule.checkpoint_every).with_meta(meta);
    let mut guard = DivergenceGuard::new().blow_up(BLOW_UP);
    let mut steps = StepColumns::new(|r: &StepReport, c| {
        [r.energies[c], r.step_sizes[c].multiplier, r.log_weights[c]]
    });
    let mut trace = Trace::energies();
    let mut clock = TrainClock::new();
    let mut saver = match schedule.save {
        Some(_) if ranks.is_distributed() => {
            return Err(RunError::Setting(
                "--save-samples writes one process's networks: run it without --distributed".into(),
            )
            .into());
        }
        Some(describe) => {
            describe(session.dir)?;
            Some(SampleSaver::new(session.dir.join(SAMPLES_DIR)))
        }
        None => None,
    };
    let mut run = Run::new(schedule.length)
        .keep_when(schedule.keep)
        .observe(&mut guard)
        .observe(&mut steps)
        .observe(&mut clock);
    for recorder in recorders.iter_mut() {
        run = run.observe(&mut **recorder);
    }
    let mut run = run
        .observe(&mut trace)
        .observe(&mut *progress)
        .checkpoints(checkpoints)
        .over(ranks);
    if let Some(s) = saver.as_mut() {
        run = run.observe(s);
    }
    if let Some(at) = session.stop {
        run = run.stop_at(at);
    }
    if let Some(r) = session.resume {
        run = r.apply(run);
    }
    if ranks.is_leader() {
        crate::fs::write_toml(&session.dir.join("config.toml"), config)?;
    }
    let report = run.run(sampler, batches)?;
    drop(progress);
    // Collectives every rank reaches alike (the stop is the same on every rank).
    let trace = trace.gather(ranks)?;
    let rows = if report.stopped {
        None
    } else {
        steps.gather(ranks)?
    };
    let steps = rows.unwrap_or_default().into_iter().map(|row| {
        let step = |[energy, multiplier, log_weight]: [f64; 3]| ChainStep {
            energy,
            multiplier,
            log_weight,
        };
        row.into_iter().map(step).collect()
    });
    Ok(trace.map(|trace| Driven {
        trace,
        steps: steps.collect(),
        steps_done: clock.steps_done(),
        step_seconds: clock.step_seconds(),
        loop_seconds: clock.loop_seconds(),
    }))
}
