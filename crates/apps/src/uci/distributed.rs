//! `sgmcmc uci --distributed`: each seed's chains over the ranks of `mpirun`, the seeds one
//! after another. Rank 0 resolves the run (a new folder, `--config` or `--resume`) and sends
//! its settings to the others, which read the data it recorded and check its digest; rank 0
//! alone writes `config.toml`, the seeds' `result.json` and the tables.

use burn::tensor::Device;
use sgmcmc_data::UciDataset;
use sgmcmc_engine::DeviceChoice;

use super::protocol::UciResult;
use super::{Job, UciArgs, prepare, recorded_data, run_job, single};
use crate::distributed::Ranks;
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

/// Runs `jobs` one after another, each over every rank, on one compute thread per rank;
/// rank 0's results in job order (none elsewhere). A failure on any rank ends the job.
pub fn run_jobs(
    ranks: &Ranks,
    device: DeviceChoice,
    jobs: &[Job],
    data: &UciDataset,
) -> Result<Vec<UciResult>, AppError> {
    let device: Device = device.tensor_device("uci")?.autodiff();
    let pb = crate::progress::bar(jobs.len() as u64, "uci runs", ranks.is_leader());
    let results = sgmcmc_engine::jobs::with_threads(1, || {
        let mut results = Vec::new();
        for job in jobs {
            results.extend(ranks.check(run_job(job, data, &device, ranks))?);
            pb.inc(1);
        }
        Ok::<_, AppError>(results)
    })??;
    pb.finish_and_clear();
    Ok(results)
}
