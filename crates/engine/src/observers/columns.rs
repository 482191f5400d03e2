//! Every step's values of every chain (energies, multipliers, log weights), kept with the run:
//! each rank records its own chains', rank 0 joins them at the end.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress, decode, encode};
use crate::ranks::Ranks;

/// A value per chain.
type Value<'a, R> = Box<dyn Fn(&StepReport, usize) -> R + 'a>;

/// One row per step of `value(report, chain)` for this rank's chains (all of them in one
/// process), checkpointed with the run, so a resumed run's rows start at step 0 too;
/// [`StepColumns::gather`] joins every rank's rows on rank 0 into rows of every chain, in
/// global chain order (a one-process run's rows).
pub struct StepColumns<'a, R> {
    rows: Vec<Vec<R>>,
    value: Value<'a, R>,
}

impl<'a, R> StepColumns<'a, R> {
    /// Records `value(report, chain)` after every step for each of this rank's chains (`chain`
    /// its global index, as the report's vectors are indexed).
    pub fn new(value: impl Fn(&StepReport, usize) -> R + 'a) -> Self {
        Self {
            rows: Vec::new(),
            value: Box::new(value),
        }
    }

    /// This rank's rows so far (`rows[k]`: its chains' values at step `k`).
    pub fn rows(&self) -> &[Vec<R>] {
        &self.rows
    }

    /// Every rank's rows joined on rank 0 (`rows[k]`: every chain's value at step `k`, in
    /// global chain order); `None` on the other ranks. A collective every rank must reach.
    pub fn gather(self, ranks: &Ranks) -> Result<Option<Vec<Vec<R>>>, RunError>
    where
        R: Serialize + DeserializeOwned,
    {
        Ok(ranks.gather(self.rows)?.map(join))
    }
}

/// Rows of each rank's chains (in rank order, contiguous blocks of chains) joined step by step.
fn join<R>(parts: Vec<Vec<Vec<R>>>) -> Vec<Vec<R>> {
    let steps = parts.iter().map(Vec::len).max().unwrap_or(0);
    let mut parts: Vec<_> = parts.into_iter().map(Vec::into_iter).collect();
    (0..steps)
        .map(|_| {
            parts
                .iter_mut()
                .flat_map(|p| p.next().unwrap_or_default())
                .collect()
        })
        .collect()
}

impl<S: Sampler, R: Serialize + DeserializeOwned> Observer<S> for StepColumns<'_, R> {
    fn on_step(&mut self, _: &Progress, _: &S, report: &StepReport) -> Result<(), RunError> {
        let row = report
            .local
            .clone()
            .map(|c| (self.value)(report, c))
            .collect();
        self.rows.push(row);
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.rows)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.rows = decode(state)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sgmcmc_samplers::ensemble::HostEnsemble;
    use sgmcmc_samplers::kernel::Kernel;
    use sgmcmc_samplers::sampler::{Sgmcmc, SgmcmcConfig};

    use super::*;
    use crate::observers::OnStep;
    use crate::{Repeat, Run};

    type Sgld = Sgmcmc<HostEnsemble>;

    #[test]
    fn ranks_rows_join_in_chain_order() {
        // Rank 0 steps chains 0-1, rank 1 chain 2, over three steps.
        let parts = vec![
            vec![vec![0.0, 1.0], vec![10.0, 11.0], vec![20.0, 21.0]],
            vec![vec![2.0], vec![12.0], vec![22.0]],
        ];
        let joined = vec![
            vec![0.0, 1.0, 2.0],
            vec![10.0, 11.0, 12.0],
            vec![20.0, 21.0, 22.0],
        ];
        assert_eq!(join(parts), joined);
    }

    #[test]
    fn a_run_records_every_step_and_a_checkpoint_keeps_the_rows() {
        let ens = HostEnsemble::new(
            sgmcmc_testfunctions::by_name("normal").unwrap(),
            &[vec![0.0], vec![1.0]],
            1,
        )
        .unwrap();
        let config = SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0);
        let mut sampler: Sgld = Sgmcmc::new(config, ens).unwrap();
        let mut seen = Vec::new();
        let mut report = OnStep(|_: &Progress, r: &StepReport| seen.push(r.energies.clone()));
        let mut columns = StepColumns::new(|r: &StepReport, c| r.energies[c]);
        Run::steps(5)
            .observe(&mut columns)
            .observe(&mut report)
            .run(&mut sampler, &mut Repeat(()))
            .unwrap();
        assert_eq!(columns.rows(), seen.as_slice());
        let state = Observer::<Sgld>::save(&columns).unwrap();
        let mut back = StepColumns::new(|_: &StepReport, _| 0.0);
        Observer::<Sgld>::restore(&mut back, &state).unwrap();
        // One process: the gather is this rank's rows.
        assert_eq!(back.gather(&Ranks::local()).unwrap(), Some(seen));
    }
}
