//! `sgmcmc uci --distributed`: each seed's chains over the ranks of `mpirun`, the seeds one
//! after another. Rank 0 resolves the run (a new folder, `--config` or `--resume`) and sends
//! its settings to the others, which read the data it recorded and check its digest; rank 0
//! alone writes `config.toml`, the seeds' `result.json` and the tables.

use super::{UciArgs, prepare, recorded_data, single};
use crate::error::AppError;

/// Runs what `a` asks for over the ranks of this MPI job.
pub fn run(a: &UciArgs) -> Result<(), AppError> {
    let ranks = crate::distributed::join()?;
    let mut prepared = None;
    if ranks.is_leader() {
        prepared = Some(ranks.check(prepare(a))?);
    }
    let head = prepared
        .as_ref()
        .map(|p| (p.config.clone(), p.out.clone(), p.resume));
    let Some((config, out, resume)) = ranks.broadcast(head)? else {
        return Err(AppError::Run("rank 0 sent no run".into()));
    };
    if config.save_samples {
        return ranks.agree(Err(AppError::Usage(
            "--save-samples writes each rank's models and one index: it runs in one process".into(),
        )));
    }
    let path = out.join("config.toml");
    let data = match prepared {
        Some(p) => ranks.agree(Ok::<_, AppError>(p.data))?,
        None => ranks.agree(recorded_data(&config, &path))?,
    };
    single(&ranks, &config, data, 1, &out, resume)
}
