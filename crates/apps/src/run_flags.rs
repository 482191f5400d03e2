//! The run-control flags the commands share, in groups of one meaning each, flattened into a
//! command's options (`#[command(flatten)]`): where a run writes and what it prints
//! ([`OutputFlags`], every command), where it computes ([`DeviceFlag`]), where it reads its
//! data ([`DataDir`]), a run's settings file and seed ([`SettingsFlags`]), continuing a run and
//! spreading it over ranks ([`ContinueFlags`]). A flag reads the same in every command's help
//! and means the same; [`RunFlags`] is the whole set of a network experiment (`mnist`,
//! `images`).
//!
//! `uci` and `bandit` run a series of seeds (`--seeds`) and their `--config` repeats a recorded
//! run, so they declare that flag themselves.

use std::path::{Path, PathBuf};

use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::{Launch, NetExperiment, run_distributed};
use sgmcmc_engine::settings::ConfigFile;

use crate::error::AppError;
use crate::output::Force;

/// Where a run writes and what it prints.
#[derive(Debug, clap::Args)]
pub struct OutputFlags {
    /// Run directory [default: a folder under `runs/` named after the command (and, for most,
    /// the run's settings); the last line printed names it].
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
    /// `demo`) [default: the run's settings', else host for toy targets and flex elsewhere].
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
}

/// Where a run reads its data.
#[derive(Debug, clap::Args)]
pub struct DataDir {
    /// Data directory holding the data set's folder (`uci/`, `digits/`, `mushroom/`, `mnist/`,
    /// `cifar10/`, ...) [default: `$SGMCMC_DATA_DIR`, else `../shared/datasets`]; `sgmcmc data
    /// fetch NAME --to DIR` writes one.
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

/// Continuing a checkpointed run, and spreading a run over the ranks of an MPI job.
#[derive(Debug, clap::Args)]
pub struct ContinueFlags {
    /// Continue the checkpointed run in this directory with the settings it records (with
    /// `--distributed`, on as many ranks as wrote it).
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
    pub ranks: ContinueFlags,
    /// Save the averaged networks and their log weights in `OUT/samples` for `sgmcmc predict`.
    #[arg(long)]
    pub save_samples: bool,
}

impl RunFlags {
    /// The flags of a fresh run that are not its settings.
    pub fn launch(&self) -> Launch {
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
        stop: E::Stop,
    ) -> Option<Result<(), AppError>> {
        let dir = self.ranks.resume.as_ref()?;
        Some(sgmcmc_engine::experiment::resume::<E>(
            self.ranks.distributed,
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
        stop: E::Stop,
    ) -> Result<(), AppError> {
        let root = self.data.root();
        run_distributed::<E>(resolve, (&root, files), self.launch(), stop)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::CommandFactory;

    use crate::cli::Cli;

    /// The help of the flag `id` in each `sgmcmc` command that takes it.
    fn helps(id: &str) -> BTreeMap<String, String> {
        Cli::command()
            .get_subcommands()
            .filter_map(|c| {
                let arg = c.get_arguments().find(|a| a.get_id() == id)?;
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                Some((c.get_name().to_string(), help))
            })
            .collect()
    }

    #[test]
    fn a_shared_flag_is_declared_once_and_reads_the_same_in_every_command() {
        let runs = ["toy", "uci", "mnist", "images", "digits", "bandit", "demo"];
        let data = ["uci", "mnist", "images", "digits", "bandit"];
        let settings = ["toy", "mnist", "images", "digits"];
        let ranks = ["toy", "uci", "mnist", "images"];
        let devices = [&runs[..], &["predict"]].concat();
        let forces = [&runs[..], &["vr-resgld"]].concat();
        let shared: [(&str, &[&str]); 9] = [
            ("out", &runs),
            ("force", &forces),
            ("quiet", &runs),
            ("device", &devices),
            ("data_dir", &data),
            ("config", &settings),
            ("seed", &settings),
            ("resume", &ranks),
            ("distributed", &ranks),
        ];
        for (id, commands) in shared {
            let helps = helps(id);
            for c in commands {
                assert!(helps.contains_key(*c), "`sgmcmc {c}` has no --{id}");
            }
            let texts: BTreeSet<&String> = commands.iter().map(|c| &helps[*c]).collect();
            assert_eq!(texts.len(), 1, "--{id} reads differently: {helps:#?}");
            assert!(!texts.first().unwrap().is_empty(), "--{id} has no help");
        }
    }
}
