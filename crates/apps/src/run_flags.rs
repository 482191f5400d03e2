//! The flags every network experiment (`mnist`, `images`) shares: where a run reads and
//! writes, on which device, whether it continues a checkpoint or spreads over ranks.

use std::path::PathBuf;

use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::{Launch, NetExperiment, run_distributed};

use crate::error::AppError;
use crate::output::Force;

/// Where and how a run runs (flattened into a command's options).
#[derive(Debug, clap::Args)]
pub struct RunFlags {
    /// TOML config file (the fields of a run's `config.toml`); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Run seed [default: the config file's, else 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Data directory holding the data set's folder (`mnist/`, `fashion-mnist/`, `cifar10/`,
    /// ...); default `$SGMCMC_DATA_DIR`, else `../shared/datasets`.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Run directory [default: a folder under `runs/` named after the command and the run's
    /// settings; the summary line names it].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Tensor device: flex, ndarray, wgpu or cuda; wgpu:N or cuda:N picks GPU N (without N,
    /// under mpirun, the local rank's).
    #[arg(long, default_value_t = DeviceChoice::Flex, value_name = "DEVICE")]
    pub device: DeviceChoice,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: Force,
    /// Continue the checkpointed run in this directory (with `--distributed`, on as many ranks
    /// as wrote it).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Save the averaged networks and their log weights in `OUT/samples` for `sgmcmc predict`.
    #[arg(long)]
    pub save_samples: bool,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Spread the chains over the ranks of `mpirun -np R` (build feature `mpi`); rank 0 writes
    /// the run folder, the one-process run's files.
    #[arg(long)]
    pub distributed: bool,
}

impl RunFlags {
    /// The data folder: `--data-dir`, else `$SGMCMC_DATA_DIR`, else `../shared/datasets`.
    pub fn data_root(&self) -> PathBuf {
        sgmcmc_data::data_root(self.data_dir.as_deref())
    }

    /// The flags of a fresh run that are not its settings.
    pub fn launch(&self) -> Launch {
        Launch {
            device: self.device,
            force: self.force.force,
            quiet: self.quiet,
        }
    }

    /// `--resume DIR`: the checkpointed run continued in this process, or over the ranks of
    /// this MPI job with `--distributed` ([`sgmcmc_engine::experiment::resume`]); `None`
    /// without `--resume`.
    pub fn resume<E: NetExperiment<Error = AppError>>(
        &self,
        stop: E::Stop,
    ) -> Option<Result<(), AppError>> {
        let dir = self.resume.as_ref()?;
        Some(sgmcmc_engine::experiment::resume::<E>(
            self.distributed,
            dir,
            stop,
            self.quiet,
        ))
    }

    /// One fresh run over the ranks of this MPI job ([`run_distributed`]): every rank resolves
    /// the settings and folder (`resolve`) and loads the data under [`RunFlags::data_root`];
    /// rank 0 prepares the folder for the command's `files`.
    pub fn over_ranks<E: NetExperiment<Error = AppError>>(
        &self,
        files: &[&'static str],
        resolve: impl FnOnce() -> Result<(E::Config, PathBuf), AppError>,
        stop: E::Stop,
    ) -> Result<(), AppError> {
        let root = self.data_root();
        run_distributed::<E>(resolve, (&root, files), self.launch(), stop)
    }
}
