//! The run-control flags the commands share, in groups of one meaning each, flattened into a
//! command's options (`#[command(flatten)]`): where a run writes and what it prints
//! ([`OutputFlags`]), where it computes ([`DeviceFlag`]), where it reads its data
//! ([`DataDir`]), a run's settings file and seed ([`SettingsFlags`]), continuing a run and
//! spreading it over the ranks of an MPI job ([`JobFlags`]). Each is declared here alone, so a
//! flag reads and means the same in every command that takes it; [`RunFlags`] is the whole set
//! of a network experiment (`mnist`, `images`).
//!
//! Who takes which: the run commands (`demo`, `toy`, `uci`, `mnist`, `images`, `digits`,
//! `bandit`) all take [`OutputFlags`] and [`DeviceFlag`], `predict` and `bench` the device
//! alone. `uci`, `bandit` and `vr-resgld` declare a `--config` of their own, which repeats the
//! run a `config.toml` recorded; `demo` and `vr-resgld` a `--seed` with its default shown.

use std::path::{Path, PathBuf};

use sgmcmc_engine::experiment::{Launch, NetExperiment, run_distributed};
use sgmcmc_engine::settings::ConfigFile;
use sgmcmc_engine::{DeviceChoice, Length};

use crate::error::AppError;
use crate::output::{Force, fresh_run_dir};

/// Where a run writes and what it prints.
#[derive(Debug, clap::Args)]
pub struct OutputFlags {
    /// Run directory [default: a folder under `runs/` named after the command or preset and
    /// the run's settings; the last line printed names it].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: Force,
    /// No progress bars or progress lines.
    #[arg(long)]
    pub quiet: bool,
}

impl OutputFlags {
    /// `--out`, else the command's folder `default` names.
    pub fn dir_or(&self, default: impl FnOnce() -> PathBuf) -> PathBuf {
        self.out.clone().unwrap_or_else(default)
    }

    /// The fresh run folder `dir` for a command that writes the files `own` there
    /// ([`fresh_run_dir`]; `--force` replaces an earlier run's).
    pub fn fresh(&self, dir: &Path, own: &[&str]) -> Result<PathBuf, AppError> {
        fresh_run_dir(dir, self.force.force, own)
    }

    /// Whether to draw progress bars (no `--quiet`).
    pub fn progress(&self) -> bool {
        !self.quiet
    }
}

/// Where a run computes.
#[derive(Debug, clap::Args)]
pub struct DeviceFlag {
    /// Tensor device: flex, ndarray, wgpu or cuda; wgpu:N or cuda:N picks GPU N (without N,
    /// under mpirun, the local rank's); `host` is the f64 path of the toy targets (`toy`,
    /// `demo`) [default: flex; `demo`: host; `toy`: the preset's or config file's, else host].
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<DeviceChoice>,
}

impl DeviceFlag {
    /// `--device`, else `default` (the command's).
    pub fn or(&self, default: DeviceChoice) -> DeviceChoice {
        self.device.unwrap_or(default)
    }

    /// `--device`, else flex: the device of a network run.
    pub fn tensor(&self) -> DeviceChoice {
        self.or(DeviceChoice::Flex)
    }

    /// [`DeviceFlag::tensor`], refused (naming `command`) unless it is a tensor device this
    /// binary and machine have: checked before a run touches its folder.
    pub fn checked(&self, command: &str) -> Result<DeviceChoice, AppError> {
        let choice = self.tensor();
        choice.tensor_device(command)?;
        Ok(choice)
    }
}

/// Where a run reads its data.
#[derive(Debug, clap::Args)]
pub struct DataDir {
    /// Data directory holding the data sets' folders (`uci/`, `digits/`, `mushroom/`,
    /// `mnist/`, `cifar10/`, ...) [default: `$SGMCMC_DATA_DIR`, else `../shared/datasets`].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

impl DataDir {
    /// The data folder: `--data-dir`, else `$SGMCMC_DATA_DIR`, else `../shared/datasets`.
    pub fn root(&self) -> PathBuf {
        sgmcmc_data::data_root(self.data_dir.as_deref())
    }

    /// `--data-dir` as given.
    pub fn given(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }
}

/// A run's settings from a file, and its seed.
#[derive(Debug, clap::Args)]
pub struct SettingsFlags {
    /// TOML config file (the fields of a run's `config.toml`); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Run seed [default: the config file's, else 1].
    #[arg(long)]
    pub seed: Option<u64>,
}

impl SettingsFlags {
    /// The file `--config` names, read; `None` without `--config`.
    pub fn file(&self) -> Result<Option<ConfigFile>, AppError> {
        Ok(self.config.as_deref().map(ConfigFile::read).transpose()?)
    }
}

/// Continuing a run, and spreading a run over the ranks of an MPI job.
#[derive(Debug, clap::Args)]
pub struct JobFlags {
    /// Continue the run in this directory with the settings it records, from its checkpoints
    /// where it wrote them (with `--distributed`, on as many ranks as wrote them).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Spread the chains over the ranks of `mpirun -np R` (build feature `mpi`); rank 0 writes
    /// the run folder, the one-process run's files.
    #[arg(long)]
    pub distributed: bool,
}

/// The run-control flags of a network experiment (`mnist`, `images`).
#[derive(Debug, clap::Args)]
pub struct RunFlags {
    /// The settings file and seed.
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// The data folder.
    #[command(flatten)]
    pub data: DataDir,
    /// The run folder and progress.
    #[command(flatten)]
    pub output: OutputFlags,
    /// The device.
    #[command(flatten)]
    pub device: DeviceFlag,
    /// `--resume` and `--distributed`.
    #[command(flatten)]
    pub job: JobFlags,
    /// Save the averaged networks and their log weights in `OUT/samples` for `sgmcmc predict`.
    #[arg(long)]
    pub save_samples: bool,
}

impl RunFlags {
    /// The flags of a fresh run that are not its settings.
    fn launch(&self) -> Launch {
        Launch {
            device: self.device.tensor(),
            force: self.output.force.force,
            quiet: self.output.quiet,
        }
    }

    /// `--resume DIR`: the checkpointed run continued in this process, or over the ranks of
    /// this MPI job with `--distributed` ([`sgmcmc_engine::experiment::resume`]); `None`
    /// without `--resume`.
    pub fn resume<E: NetExperiment<Error = AppError>>(
        &self,
        stop: Option<Length>,
    ) -> Option<Result<(), AppError>> {
        let dir = self.job.resume.as_ref()?;
        Some(sgmcmc_engine::experiment::resume::<E>(
            self.job.distributed,
            dir,
            stop,
            self.output.quiet,
        ))
    }

    /// One fresh run over the ranks of this MPI job ([`run_distributed`]): every rank resolves
    /// the settings and folder (`resolve`) and loads the data under [`DataDir::root`]; rank 0
    /// prepares the folder for the command's `files`.
    pub fn over_ranks<E: NetExperiment<Error = AppError>>(
        &self,
        files: &[&'static str],
        resolve: impl FnOnce() -> Result<(E::Config, PathBuf), AppError>,
        stop: Option<Length>,
    ) -> Result<(), AppError> {
        let root = self.data.root();
        run_distributed::<E>(resolve, (&root, files), self.launch(), stop)
    }
}
