//! `sgmcmc mnist --distributed`: one run's chains over the ranks of `mpirun`. Every rank
//! resolves the same configuration and loads the same data; rank 0 prepares the run folder
//! and writes the outputs ([`super::execute_on`]).

use std::path::PathBuf;

use super::data::MnistData;
use super::run::Stop;
use super::{FILES, MnistArgs, config_of, data_dir, preset_of, samplers_of};
use crate::distributed::with_parts;
use crate::error::AppError;
use crate::output::fresh_run_dir;
use crate::overrides::ConfigFile;

/// Runs the one sampler `a` names over the ranks of this MPI job.
pub fn run(a: &MnistArgs, stop: Stop) -> Result<(), AppError> {
    let ranks = crate::distributed::join()?;
    let resolved = (|| {
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
    })();
    let (config, dir) = ranks.agree(resolved)?;
    ranks.on_leader(|| fresh_run_dir(&dir, a.force.force, &with_parts(FILES)).map(drop))?;
    let data = ranks.agree(MnistData::load(&data_dir(a), &config))?;
    super::execute_on(&ranks, &config, &data, &dir, a.device, None, stop, a.quiet)?;
    Ok(())
}
