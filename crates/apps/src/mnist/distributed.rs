//! `sgmcmc mnist --distributed`: one run's chains over the ranks of `mpirun`. Every rank
//! resolves the same configuration and loads the same data; rank 0 prepares the run folder
//! and writes the outputs ([`sgmcmc_engine::experiment::run_distributed`]).

use sgmcmc_engine::experiment::{Launch, run_distributed};
use sgmcmc_engine::settings::ConfigFile;
use std::path::PathBuf;

use super::run::Stop;
use super::{FILES, Mnist, MnistArgs, config_of, data_dir, preset_of, samplers_of};
use crate::error::AppError;

/// Runs the one sampler `a` names over the ranks of this MPI job.
pub fn run(a: &MnistArgs, stop: Stop) -> Result<(), AppError> {
    let resolve = || {
        let file = a.config.as_deref().map(ConfigFile::read).transpose()?;
        let samplers = samplers_of(a, file.as_ref());
        let [sampler] = samplers.as_slice() else {
            return Err(AppError::Usage(
                "--distributed runs one sampler's chains over the ranks; `--sampler all` runs \
                 in one process"
                    .into(),
            ));
        };
        let config = config_of(a, file.as_ref(), sampler)?;
        let preset = preset_of(a, file.as_ref());
        let dir = a
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("runs/mnist-{preset}-{sampler}")));
        Ok((config, dir))
    };
    let launch = Launch {
        device: a.device,
        force: a.force.force,
        quiet: a.quiet,
    };
    let ranks = crate::distributed::join()?;
    run_distributed::<Mnist>(&ranks, resolve, (&data_dir(a), FILES), launch, stop)
}
