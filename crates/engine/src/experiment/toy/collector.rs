//! The toy run's observer: what it keeps of the samples and the log points, and over the ranks
//! of a job the record each rank sends rank 0.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::collect::{ModeTraces, Traces, WeightedMean};
use sgmcmc_samplers::diagnostics::Coupling;
use sgmcmc_samplers::ensemble::{Ensemble, Positions};
use sgmcmc_samplers::registry::AnySampler;
use sgmcmc_samplers::sampler::StepReport;
use sgmcmc_testfunctions::{self as toy, ToyTarget};

use super::ToyConfig;
use crate::error::RunError;
use crate::observer::{Kept, Observer, Progress, decode, encode};

/// What a rank of a distributed run keeps for rank 0: its kept samples, in step and chain
/// order, and, for independent chains (which exchange nothing while they run), its chains'
/// energies at the log points.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Record {
    /// `(step, global chain)` of each sample.
    keys: Vec<(u64, usize)>,
    /// Each sample's importance weight.
    weights: Vec<f64>,
    /// The samples' points, row-major.
    points: Vec<f64>,
    /// This rank's chains' energies at each log point, row after row.
    log_energies: Vec<Vec<f64>>,
}

/// The toy's observer: mode traces, means and traces of the kept samples, plot samples, and
/// the metrics, theta and replica rows at the log points.
pub(super) struct Collector<'t> {
    dim: usize,
    iters: u64,
    mode_map: Option<&'t dyn toy::ModeMap>,
    pub(super) modes: Option<ModeTraces>,
    pub(super) mean: WeightedMean,
    pub(super) x0: Traces,
    pub(super) weights: Traces,
    plot_every: usize,
    pub(super) plot_samples: Vec<Vec<f64>>,
    collections: usize,
    pub(super) metrics: Vec<Vec<f64>>,
    log_every: u64,
    snapshot_every: u64,
    pub(super) theta_trace: Vec<Vec<f64>>,
    pub(super) replica_trace: Vec<Vec<f64>>,
    /// A rank of a distributed run records its samples for rank 0 instead of folding them.
    pub(super) record: Option<Record>,
    /// Whether the energies of the log rows must be gathered at the end (independent chains).
    pub(super) plain_energies: bool,
}

impl<'t> Collector<'t> {
    pub(super) fn new(
        cfg: &ToyConfig,
        target: &'t ToyTarget,
        outputs: usize,
        coupling: Coupling,
    ) -> Self {
        let collected_per_chain = (cfg.iters - cfg.burn_in()) / cfg.thin;
        let mode_map = target.potential().modes();
        Self {
            dim: target.dim(),
            iters: cfg.iters,
            modes: mode_map.map(|m| ModeTraces::new(m.n_modes(), outputs).with_coupling(coupling)),
            mode_map,
            mean: WeightedMean::new(target.dim()),
            x0: Traces::new(outputs),
            weights: Traces::new(outputs),
            // Plot every chain at every `plot_every`-th collection, at most `max_plot_samples`.
            plot_every: (collected_per_chain as usize * cfg.chains)
                .div_ceil(cfg.max_plot_samples.max(1))
                .max(1),
            plot_samples: Vec::new(),
            collections: 0,
            metrics: Vec::new(),
            log_every: (cfg.iters / cfg.log_points.max(1)).max(1),
            snapshot_every: (cfg.iters / 100).max(1),
            theta_trace: Vec::new(),
            replica_trace: Vec::new(),
            record: None,
            plain_energies: false,
        }
    }

    /// Folds one kept step's samples, `(point, weight)` of each target chain in chain order.
    fn fold_step<'a>(&mut self, samples: impl Iterator<Item = (&'a [f64], f64)> + Clone) {
        for (slot, (x, w)) in samples.clone().enumerate() {
            if let (Some(m), Some(map)) = (self.modes.as_mut(), self.mode_map) {
                m.push_weighted(slot, map.mode_of(x), w);
            }
            self.mean.add(x, w);
            if self.collections.is_multiple_of(self.plot_every) {
                self.plot_samples.push(x.to_vec());
            }
        }
        self.collections += 1;
        self.x0.push(samples.clone().map(|(x, _)| x[0]));
        self.weights.push(samples.map(|(_, w)| w));
    }

    /// Rank 0 of a distributed run: folds every rank's samples in step and chain order (the
    /// order of a one-process run), and completes the log rows of independent chains.
    pub(super) fn replay(&mut self, records: &[Record]) {
        let d = self.dim;
        let mut order: Vec<(u64, usize, usize, usize)> = records
            .iter()
            .enumerate()
            .flat_map(|(r, rec)| {
                rec.keys
                    .iter()
                    .enumerate()
                    .map(move |(i, k)| (k.0, k.1, r, i))
            })
            .collect();
        order.sort_unstable();
        let mut at = 0;
        while at < order.len() {
            let end = at
                + order[at..]
                    .iter()
                    .take_while(|o| o.0 == order[at].0)
                    .count();
            let step = &order[at..end];
            self.fold_step(step.iter().map(|&(_, _, r, i)| {
                let rec = &records[r];
                (&rec.points[i * d..(i + 1) * d], rec.weights[i])
            }));
            at = end;
        }
        if self.plain_energies {
            for (row, metrics) in self.metrics.iter_mut().enumerate() {
                let e: Vec<f64> = records
                    .iter()
                    .flat_map(|r| r.log_energies[row].iter().copied())
                    .collect();
                metrics[3] = e.iter().sum::<f64>() / e.len() as f64;
                metrics[4] = e.iter().copied().fold(f64::INFINITY, f64::min);
                metrics[5] = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            }
        }
    }

    fn log_row(report: &StepReport) -> Vec<f64> {
        let e = &report.energies;
        let s = report.step_sizes[0];
        let psi = report.step_sizes.iter().map(|s| s.multiplier);
        vec![
            report.step as f64,
            s.lr,
            s.temperature,
            e.iter().sum::<f64>() / e.len() as f64,
            e.iter().copied().fold(f64::INFINITY, f64::min),
            e.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            psi.clone().fold(f64::INFINITY, f64::min),
            psi.fold(f64::NEG_INFINITY, f64::max),
            report.bouncy_moves as f64,
        ]
    }
}

impl<E> Observer<AnySampler<E>> for Collector<'_>
where
    E: Ensemble<Batch = ()>,
    E::Snapshot: Positions,
{
    fn wants_points(&self) -> bool {
        true
    }

    fn on_step(
        &mut self,
        at: &Progress,
        sampler: &AnySampler<E>,
        report: &StepReport,
    ) -> Result<(), RunError> {
        let k = at.step;
        let last = k + 1 == self.iters;
        if k.is_multiple_of(self.log_every) || last {
            self.metrics.push(Self::log_row(report));
            if self.plain_energies
                && let Some(rec) = self.record.as_mut()
            {
                rec.log_energies
                    .push(report.energies[report.local.clone()].to_vec());
            }
            if let Some(r) = sampler.as_replica() {
                self.replica_trace
                    .push(std::iter::once(k as f64).chain(r.trace_row()).collect());
            }
        }
        if (k.is_multiple_of(self.snapshot_every) || last)
            && let Some(t) = sampler.theta()
        {
            self.theta_trace.push(
                std::iter::once(k as f64)
                    .chain(t.theta().iter().copied())
                    .collect(),
            );
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&(
            &self.record,
            &self.metrics,
            &self.theta_trace,
            &self.replica_trace,
        ))
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        type State = (Option<Record>, Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<Vec<f64>>);
        let (record, metrics, theta_trace, replica_trace): State = decode(state)?;
        if self.record.is_some() != record.is_some() {
            return Err(RunError::Observer(
                "the checkpoint's samples were not recorded for a resumable run".into(),
            ));
        }
        self.record = record;
        self.metrics = metrics;
        self.theta_trace = theta_trace;
        self.replica_trace = replica_trace;
        Ok(())
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, E::Snapshot>) -> Result<(), RunError> {
        let pos = kept.points.positions();
        let d = self.dim;
        let at = |c: usize| &pos[kept.index(c) * d..(kept.index(c) + 1) * d];
        match self.record.as_mut() {
            Some(rec) => {
                for &c in kept.chains {
                    rec.keys.push((kept.step, c));
                    rec.weights.push(kept.report.weights[c]);
                    rec.points.extend_from_slice(at(c));
                }
            }
            None => {
                let w = &kept.report.weights;
                self.fold_step(kept.chains.iter().map(|&c| (at(c), w[c])));
            }
        }
        Ok(())
    }
}
