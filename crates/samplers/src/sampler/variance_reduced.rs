//! Replica exchange on a data posterior with minibatch energies: variance-reduced reSGLD /
//! reSGHMC (VR paper Algorithm 1, thesis Algorithm 2, eq. 3.5) and, without control variates,
//! reSGLD whose correction is estimated from fresh minibatches (thesis Algorithm 1).
//!
//! One step `k` on minibatch `B_k`, around a [`ReplicaExchange`]:
//!
//! 1. snapshots, every `m` steps (`k mod m = 0`): every chain stores `x^_p = x_p` and its exact
//!    energy `L^_p = L(x^_p)` (a full-data pass). A snapshot belongs to its parameter set: swaps
//!    exchange rungs, so it stays with its chain;
//! 2. variance refresh, every `K` steps on average at a random phase of the snapshot period
//!    (a refresh right at a snapshot would see `x = x^` and no control-variate variance): on
//!    `n` fresh minibatches `B_1 .. B_n`, every replica's swap energy
//!    `L~(B_j | x_p) = L(B_j | x_p) + c (L(B_j | x^_p) - L^_p)` (or the plain `L(B_j | x_p)`);
//!    pair `r` folds `Var_j(L~(B_j | x_r) - L~(B_j | x_(r+1))) / 2` into its `sigma2_hat`
//!    ([`crate::control::EnergyVariance`]). The draws are paired because the swap test reads
//!    both replicas on the same minibatch: their errors are correlated, and the variance of the
//!    difference, not the sum of the two variances, is what the correction must remove. With
//!    the adaptive option, each chain's `c_p <- (1 - gamma) c_p + gamma c^_p` from the same
//!    draws;
//! 3. the replica-exchange step: swap tests on `L~(B_k | x_p)` with
//!    `S = exp(d (L~_r - L~_(r+1) - d sigma2_hat / F))` (eq. 2.12 / eq. 6 of the VR paper), then
//!    every replica moves with the plain minibatch gradient (gradients are not variance-reduced).
//!
//! Control variates need energies that are exact given the minibatch
//! ([`SnapshotEnergy::exact_energies`]): a toy target with injected energy noise is refused, since
//! its snapshot energies would draw the same noise at every evaluation and freeze an offset per
//! chain into every swap test.
//!
//! Until the first refresh `sigma2_hat` is the rule's `initial_variance`. The minibatches of a
//! refresh come from a [`BatchDraw`] addressed by `(step, draw)`, so a resumed run draws the
//! same batches without iterator state.

use serde::{Deserialize, Serialize};

use super::{ReplicaConfig, ReplicaExchange, Sampler, StepReport, SwapRule, check_finite};
use crate::checkpoint::{AlgorithmState, ReductionState, SamplerState, mismatch};
use crate::control::{ControlVariate, half_paired_variance, sample_variance};
use crate::ensemble::SnapshotEnergy;
use crate::error::{SamplerError, check};
use crate::rng::ChainRng;

/// Control variates of the swap energies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlSettings {
    /// Snapshot period `m >= 1`.
    pub period: u64,
    /// Coefficient `c` (-1: the textbook control variate).
    pub coefficient: f64,
    /// Adaptation step `gamma` in (0, 1] of each chain's `c_p` (`None`: fixed).
    pub adapt: Option<f64>,
}

/// Refreshes of `sigma2_hat` from fresh minibatches.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VrRefresh {
    /// Mean steps between refreshes `K >= 2` (each gap is uniform on `[K/2, 3K/2)`).
    pub every: u64,
    /// Minibatches per refresh (`>= 2`).
    pub draws: usize,
}

/// Configuration of [`VarianceReduced`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VrConfig {
    /// The replica exchange (Metropolis rule, no built-in refresh).
    pub replica: ReplicaConfig,
    /// Control variates (`None`: plain minibatch energies, i.e. reSGLD).
    pub control: Option<ControlSettings>,
    /// Variance refreshes (`None`: `sigma2_hat` stays at the rule's initial value).
    pub refresh: Option<VrRefresh>,
}

impl VrConfig {
    /// Checks every hyper-parameter.
    pub fn validate(&self) -> Result<(), SamplerError> {
        self.replica.validate()?;
        if !matches!(self.replica.rule, SwapRule::Metropolis { .. }) {
            return Err(SamplerError::InvalidHyperParameter {
                name: "rule",
                value: "deterministic".into(),
                reason: "variance reduction corrects the Metropolis swap test",
            });
        }
        if let Some(r) = &self.replica.refresh {
            return Err(SamplerError::InvalidHyperParameter {
                name: "variance_period",
                value: r.period.to_string(),
                reason: "the replica's own refresh reads one batch; set `refresh` of the \
                         variance-reduced sampler instead",
            });
        }
        if let Some(c) = &self.control {
            ControlVariate::new(1, c.period, c.coefficient, c.adapt)?;
        }
        if let Some(r) = &self.refresh {
            check(
                r.every >= 2,
                "refresh_every",
                r.every as f64,
                "must be >= 2",
            )?;
            check(
                r.draws >= 2,
                "refresh_draws",
                r.draws as f64,
                "must be >= 2",
            )?;
        }
        Ok(())
    }
}

/// Fresh minibatches addressed by `(step, draw)`.
pub type BatchDraw<B> = Box<dyn Fn(u64, usize) -> B + Send + Sync>;

/// Equal-sized minibatches that cover the data once, by index (`None` past the last): the
/// exact energy `L(x^)` is then the mean of their full-scale energies (each is
/// `-log p(x^) - (N / n) sum_B log p(d | x^)`).
pub type FullPass<B> = Box<dyn Fn(usize) -> Option<B> + Send + Sync>;

/// Mean variances seen at the refreshes: of one chain's energy and of half the paired
/// difference, for the plain minibatch energy and for the energy the swaps use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReductionStats {
    /// Refreshes so far.
    pub refreshes: u64,
    /// Sum over refreshes of the chain-mean `Var(L(B | x_p))`.
    pub plain_chain: f64,
    /// Sum over refreshes of the chain-mean variance of the swap energy `L~(B | x_p)`.
    pub used_chain: f64,
    /// Sum over refreshes of the pair-mean `Var(L(B | x_r) - L(B | x_(r+1))) / 2`.
    pub plain_pair: f64,
    /// Sum over refreshes of the pair-mean `Var(L~_r - L~_(r+1)) / 2`: what the correction uses.
    pub used_pair: f64,
}

impl ReductionStats {
    /// `[plain chain, used chain, plain pair, used pair]` averaged over the refreshes.
    pub fn means(&self) -> [f64; 4] {
        let n = self.refreshes.max(1) as f64;
        [
            self.plain_chain / n,
            self.used_chain / n,
            self.plain_pair / n,
            self.used_pair / n,
        ]
    }
}

/// Replica exchange with control-variate swap energies and paired variance refreshes (see the
/// module docs).
pub struct VarianceReduced<E: SnapshotEnergy> {
    inner: ReplicaExchange<E>,
    control_settings: Option<ControlSettings>,
    refresh: Option<VrRefresh>,
    control: Option<ControlVariate>,
    snapshots: E::Snapshot,
    batches: BatchDraw<E::Batch>,
    full_pass: Option<FullPass<E::Batch>>,
    rng: ChainRng,
    next_refresh: u64,
    stats: ReductionStats,
    /// Per-step scratch: `L(B | x^_p)` and the offsets the swap energies add.
    at_snapshot: Vec<f64>,
    offsets: Vec<f64>,
}

impl<E: SnapshotEnergy> VarianceReduced<E> {
    /// The sampler over `ensemble` (one chain per rung); `batches(k, j)` is the `j`-th fresh
    /// minibatch of the refresh at step `k`; `seed` drives the swaps and the refresh phases.
    pub fn new(
        config: VrConfig,
        ensemble: E,
        batches: BatchDraw<E::Batch>,
        seed: u64,
    ) -> Result<Self, SamplerError> {
        config.validate()?;
        if config.control.is_some() && !ensemble.exact_energies() {
            return Err(SamplerError::InvalidHyperParameter {
                name: "control",
                value: "control variates".into(),
                reason: "need energies that are exact given the minibatch; this target injects \
                         energy noise, which the snapshots would draw the same at every \
                         evaluation (run without control variates, or without energy noise)",
            });
        }
        let p = ensemble.n_chains();
        let control = match &config.control {
            Some(c) => Some(ControlVariate::new(p, c.period, c.coefficient, c.adapt)?),
            None => None,
        };
        let mut rng = ChainRng::new(seed, u64::MAX - 2);
        let next_refresh = config.refresh.map_or(u64::MAX, |r| first_gap(&mut rng, r));
        Ok(Self {
            inner: ReplicaExchange::new(config.replica, ensemble, seed)?,
            control_settings: config.control,
            refresh: config.refresh,
            control,
            snapshots: E::Snapshot::default(),
            batches,
            full_pass: None,
            rng,
            next_refresh,
            stats: ReductionStats::default(),
            at_snapshot: vec![0.0; p],
            offsets: vec![0.0; p],
        })
    }

    /// Computes the snapshots' exact energies from a pass over `batches` instead of
    /// [`SnapshotEnergy::full_energies_at`] (network targets do not hold their data set).
    pub fn with_full_pass(mut self, batches: FullPass<E::Batch>) -> Self {
        self.full_pass = Some(batches);
        self
    }

    /// The replica exchange inside (ladder, index process, swap statistics, `sigma2_hat`).
    pub fn replica(&self) -> &ReplicaExchange<E> {
        &self.inner
    }

    /// Variances measured at the refreshes.
    pub fn reduction_stats(&self) -> &ReductionStats {
        &self.stats
    }

    /// The control-variate coefficients `c_p`, in chain order (`None` without control
    /// variates).
    pub fn coefficients(&self) -> Option<&[f64]> {
        self.control.as_ref().map(ControlVariate::coefficients)
    }

    fn take_snapshots(&mut self, k: u64) -> Result<(), SamplerError> {
        let Some(cv) = self.control.as_mut() else {
            return Ok(());
        };
        if !cv.due(k) {
            return Ok(());
        }
        let ens = self.inner.ensemble();
        ens.snapshot_into(&mut self.snapshots);
        match &self.full_pass {
            None => ens.full_energies_at(&self.snapshots, &mut self.at_snapshot)?,
            Some(pass) => {
                let mut sum = vec![0.0; self.at_snapshot.len()];
                let mut count = 0usize;
                while let Some(b) = pass(count) {
                    ens.batch_energies_at(&self.snapshots, &b, &mut self.at_snapshot)?;
                    for (s, e) in sum.iter_mut().zip(&self.at_snapshot) {
                        *s += e;
                    }
                    count += 1;
                }
                check(count > 0, "full_pass", 0.0, "the full pass yields no batch")?;
                for (e, s) in self.at_snapshot.iter_mut().zip(sum) {
                    *e = s / count as f64;
                }
            }
        }
        check_finite(&self.at_snapshot, k)?;
        for (p, l) in self.at_snapshot.iter().enumerate() {
            cv.set(p, *l);
        }
        Ok(())
    }

    /// Step 2 of the module docs: paired draws on fresh minibatches.
    fn refresh_variance(&mut self, k: u64, r: VrRefresh) -> Result<(), SamplerError> {
        let p = self.at_snapshot.len();
        let mut plain = vec![Vec::with_capacity(r.draws); p];
        let mut snap = vec![Vec::with_capacity(r.draws); p];
        for j in 0..r.draws {
            let b = (self.batches)(k, j);
            let e = self.inner.ensemble_mut().estimate(&b)?.to_vec();
            check_finite(&e, k)?;
            if self.control.is_some() {
                self.inner.ensemble().batch_energies_at(
                    &self.snapshots,
                    &b,
                    &mut self.at_snapshot,
                )?;
            }
            for c in 0..p {
                plain[c].push(e[c]);
                snap[c].push(self.at_snapshot[c]);
            }
        }
        let used: Vec<Vec<f64>> = match self.control.as_mut() {
            Some(cv) => {
                for c in 0..p {
                    cv.adapt(c, &plain[c], &snap[c]);
                }
                (0..p)
                    .map(|c| {
                        (0..r.draws)
                            .map(|j| cv.energy(c, plain[c][j], snap[c][j]))
                            .collect()
                    })
                    .collect()
            }
            None => plain.clone(),
        };
        let chain_mean =
            |d: &[Vec<f64>]| d.iter().map(|v| sample_variance(v)).sum::<f64>() / p as f64;
        let index = self.inner.index();
        let pair_mean = |d: &[Vec<f64>]| {
            (0..p - 1)
                .map(|r| {
                    let (lo, hi) = (index.replica_at(r), index.replica_at(r + 1));
                    half_paired_variance(&d[lo], &d[hi])
                })
                .sum::<f64>()
                / (p - 1) as f64
        };
        self.stats.refreshes += 1;
        self.stats.plain_chain += chain_mean(&plain);
        self.stats.used_chain += chain_mean(&used);
        self.stats.plain_pair += pair_mean(&plain);
        self.stats.used_pair += pair_mean(&used);
        self.inner.refresh_variance_from(&used)
    }
}

/// The first refresh: uniform on `[K/2, 3K/2)`.
fn first_gap(rng: &mut ChainRng, r: VrRefresh) -> u64 {
    r.every / 2 + rng.below(r.every as usize) as u64
}

impl<E: SnapshotEnergy> Sampler for VarianceReduced<E> {
    type Batch = E::Batch;
    type Ensemble = E;

    fn ensemble(&self) -> &E {
        self.inner.ensemble()
    }

    fn steps_done(&self) -> u64 {
        self.inner.steps_done()
    }

    fn step(&mut self, batch: &E::Batch) -> Result<&StepReport, SamplerError> {
        let k = self.inner.steps_done();
        self.take_snapshots(k)?;
        if let Some(r) = self.refresh
            && k == self.next_refresh
        {
            self.refresh_variance(k, r)?;
            self.next_refresh = k + first_gap(&mut self.rng, r);
        }
        match &self.control {
            Some(cv) => {
                self.inner.ensemble().batch_energies_at(
                    &self.snapshots,
                    batch,
                    &mut self.at_snapshot,
                )?;
                for (o, s) in self.offsets.iter_mut().enumerate() {
                    *s = cv.offset(o, self.at_snapshot[o]);
                }
            }
            None => self.offsets.fill(0.0),
        }
        self.inner.step_with_energy_offsets(batch, &self.offsets)
    }

    fn report(&self) -> &StepReport {
        self.inner.report()
    }

    fn state(&self) -> Result<SamplerState, SamplerError> {
        let mut state = self.inner.state()?;
        if let AlgorithmState::Replica(r) = &mut state.algorithm {
            r.reduction = Some(ReductionState {
                control: self.control.clone(),
                snapshots: self.inner.ensemble().points_to_values(&self.snapshots)?,
                rng: self.rng.clone(),
                next_refresh: self.next_refresh,
                stats: self.stats,
            });
        }
        Ok(state)
    }

    fn restore(&mut self, mut state: SamplerState) -> Result<(), SamplerError> {
        let reduction = match &mut state.algorithm {
            AlgorithmState::Replica(r) => r.reduction.take(),
            _ => None,
        };
        let Some(red) = reduction else {
            return Err(mismatch(
                "the checkpoint holds no variance-reduction state".to_string(),
            ));
        };
        if red.control.is_some() != self.control_settings.is_some() {
            return Err(mismatch("control variates on one side only".to_string()));
        }
        let snapshots = self.inner.ensemble().points_from_values(red.snapshots)?;
        self.inner.restore(state)?;
        self.control = red.control;
        self.snapshots = snapshots;
        self.rng = red.rng;
        self.next_refresh = red.next_refresh;
        self.stats = red.stats;
        Ok(())
    }
}
