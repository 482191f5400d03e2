//! Per-chain traces of scalars at the kept steps, and their convergence diagnostics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::diagnostics::{Convergence, weighted_k_hat};
use sgmcmc_samplers::sampler::Sampler;

use crate::error::RunError;
use crate::observer::{Kept, Observer, Points, Progress, decode, encode};
use crate::ranks::Ranks;

/// Records, for every target chain and every kept step (a *draw*), the energy of the kept
/// point, its log importance weight, and the values of user-chosen scalar functionals (a
/// prediction at a probe input, a chosen weight, a per-sample test loss): the `posterior` and
/// `sample_stats` of an ArviZ `InferenceData`, with dims `(chain, draw)`.
///
/// From them, [`Trace::summary`] gives each quantity's rank-normalised R-hat, bulk and tail
/// ESS and MCSE ([`Convergence`], as ArviZ computes them) and, when the weights vary (contour
/// and tempered samplers), the Pareto `k-hat` of the log weights
/// ([`sgmcmc_samplers::diagnostics::psis()`]). For weighted samplers R-hat and ESS describe
/// the unweighted draws (the flattened law the chains visit), the k-hat whether the weighted
/// averages can be trusted. R-hat needs at least two target chains: replica exchange has one,
/// the draws of whichever replica sits on rung 0 (keyed by the rung).
///
/// ```
/// use sgmcmc_engine::observers::Trace;
/// use sgmcmc_engine::{Kept, Repeat, Run};
/// use sgmcmc_testfunctions::by_name;
/// use sgmcmc_samplers::ensemble::{HostEnsemble, HostPoints};
/// use sgmcmc_samplers::registry::{BuildContext, SamplerSettings};
///
/// let chains = HostEnsemble::new(by_name("normal")?, &vec![vec![0.0]; 4], 1)?;
/// let sgld = SamplerSettings { lr: 0.1, ..SamplerSettings::named("sgld") };
/// let spec = sgld.spec(&BuildContext::steps(4000).chains(4))?;
/// let mut sgld = spec.build(chains, 1)?;
/// // One functional: the position itself.
/// let mut trace = Trace::new(&["x"], |kept: &Kept<HostPoints>, c| {
///     Ok(vec![kept.points.chain(kept.index(c))[0]])
/// });
/// Run::steps(4000).burn_in(1000).thin(10).observe(&mut trace).run(&mut sgld, &mut Repeat(()))?;
/// let summary = trace.summary();
/// assert_eq!((summary.chains, summary.draws), (4, 300));
/// assert!(summary.quantities["x"].rhat < 1.05);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Trace<F> {
    functionals: F,
    pub(super) state: TraceState,
}

/// The draws of one chain.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct ChainTrace {
    step: Vec<u64>,
    energy: Vec<f64>,
    log_weight: Vec<f64>,
    /// `values[q][draw]` of functional `q`.
    values: Vec<Vec<f64>>,
}

/// Which recorded quantity.
#[derive(Clone, Copy)]
enum Column {
    Energy,
    LogWeight,
    Functional(usize),
}

impl ChainTrace {
    /// The draws of `self` and `other` in step order.
    fn merged(self, other: ChainTrace) -> ChainTrace {
        let all = [self, other];
        let mut at: Vec<(u64, usize, usize)> = all
            .iter()
            .enumerate()
            .flat_map(|(p, t)| t.step.iter().enumerate().map(move |(i, &k)| (k, p, i)))
            .collect();
        at.sort_unstable();
        let columns = all[0].values.len();
        let mut out = ChainTrace {
            values: vec![Vec::with_capacity(at.len()); columns],
            ..ChainTrace::default()
        };
        for (k, p, i) in at {
            let t = &all[p];
            out.step.push(k);
            out.energy.push(t.energy[i]);
            out.log_weight.push(t.log_weight[i]);
            for (column, values) in out.values.iter_mut().zip(&t.values) {
                column.push(values[i]);
            }
        }
        out
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct TraceState {
    /// The functionals' names.
    pub(super) names: Vec<String>,
    /// By target chain: the global chain index, or for replica exchange the rung (0).
    pub(super) chains: BTreeMap<usize, ChainTrace>,
}

/// The draws of some chains of a [`Trace`], to send to another rank ([`Trace::part`],
/// [`Trace::join`]; serde, bit-exact in CBOR).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TracePart(TraceState);

/// A trace's diagnostics ([`Trace::summary`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Chains with draws.
    pub chains: usize,
    /// Draws per chain (the shortest chain's count; the diagnostics use that many of each).
    pub draws: usize,
    /// `energy` and every functional by name.
    pub quantities: BTreeMap<String, Convergence>,
    /// Pareto `k-hat` of all draws' log weights (`r_eff = 1`), when they vary.
    pub pareto_k_hat: Option<f64>,
}

/// The scalar functionals a [`Trace`] records at a kept step of chain `chain`: a closure
/// `FnMut(&Kept<X>, usize) -> Result<Vec<f64>, String>`, or [`NoFunctionals`].
pub trait Functionals<X> {
    /// The values, in the order of the trace's names.
    fn values(&mut self, kept: &Kept<'_, X>, chain: usize) -> Result<Vec<f64>, String>;
}

impl<X, F: FnMut(&Kept<'_, X>, usize) -> Result<Vec<f64>, String>> Functionals<X> for F {
    fn values(&mut self, kept: &Kept<'_, X>, chain: usize) -> Result<Vec<f64>, String> {
        self(kept, chain)
    }
}

/// No functionals: a trace of the energies and log weights alone ([`Trace::energies`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFunctionals;

impl<X> Functionals<X> for NoFunctionals {
    fn values(&mut self, _: &Kept<'_, X>, _: usize) -> Result<Vec<f64>, String> {
        Ok(Vec::new())
    }
}

impl Trace<NoFunctionals> {
    /// A trace of the energies and log weights alone.
    pub fn energies() -> Self {
        Self::new(&[], NoFunctionals)
    }
}

impl<F> Trace<F> {
    /// A trace of the energies, the log weights and the functionals `names`, which
    /// `functionals(kept, chain)` returns in that order for global chain `chain` of a kept step
    /// (its point is `kept.points[kept.index(chain)]` for network chains,
    /// `kept.points.chain(kept.index(chain))` for host chains).
    pub fn new(names: &[&str], functionals: F) -> Self {
        Self {
            functionals,
            state: TraceState {
                names: names.iter().map(|n| n.to_string()).collect(),
                chains: BTreeMap::new(),
            },
        }
    }

    /// This trace's draws (a rank's chains), for [`Trace::join`] on another rank, e.g. after
    /// [`crate::Ranks::gather`].
    pub fn part(&self) -> TracePart {
        TracePart(self.state.clone())
    }

    /// Adds the chains of `part` (another rank's). A chain in both (replica exchange's rung 0,
    /// held by the replicas of several ranks in turn) gets the draws of both in step order.
    /// Errors when the part traced other functionals.
    pub fn join(&mut self, part: TracePart) -> Result<(), RunError> {
        self.same_names(&part.0.names, "a trace part")?;
        for (chain, t) in part.0.chains {
            match self.state.chains.remove(&chain) {
                None => self.state.chains.insert(chain, t),
                Some(mine) => self.state.chains.insert(chain, mine.merged(t)),
            };
        }
        Ok(())
    }

    fn same_names(&self, names: &[String], what: &str) -> Result<(), RunError> {
        if names == self.state.names.as_slice() {
            return Ok(());
        }
        Err(RunError::Observer(format!(
            "{what} traces the functionals {names:?}, this trace {:?}",
            self.state.names
        )))
    }

    /// The names of the traced quantities: `energy`, then the functionals.
    pub fn names(&self) -> Vec<String> {
        std::iter::once("energy".to_string())
            .chain(self.state.names.iter().cloned())
            .collect()
    }

    /// The draws of `quantity` (`energy`, `log_weight` or a functional's name), one `Vec` per
    /// chain in chain order, each cut to the shortest chain's length.
    pub fn draws(&self, quantity: &str) -> Option<Vec<Vec<f64>>> {
        let column = match quantity {
            "energy" => Column::Energy,
            "log_weight" => Column::LogWeight,
            name => Column::Functional(self.state.names.iter().position(|n| n == name)?),
        };
        let n = self.draws_per_chain();
        Some(
            self.state
                .chains
                .values()
                .map(|c| {
                    let draws = match column {
                        Column::Energy => &c.energy,
                        Column::LogWeight => &c.log_weight,
                        Column::Functional(q) => &c.values[q],
                    };
                    draws[..n].to_vec()
                })
                .collect(),
        )
    }

    /// The steps of the draws of each chain.
    pub fn steps(&self) -> Vec<Vec<u64>> {
        self.state.chains.values().map(|c| c.step.clone()).collect()
    }

    pub(super) fn draws_per_chain(&self) -> usize {
        self.state
            .chains
            .values()
            .map(|c| c.energy.len())
            .min()
            .unwrap_or(0)
    }

    /// R-hat, ESS and MCSE of every quantity, and the weights' `k-hat`.
    pub fn summary(&self) -> TraceSummary {
        let quantities = self
            .names()
            .into_iter()
            .filter_map(|name| {
                let draws = self.draws(&name)?;
                Some((name, Convergence::of(&draws)))
            })
            .collect();
        let weights: Vec<f64> = self
            .state
            .chains
            .values()
            .flat_map(|c| c.log_weight.iter().copied())
            .collect();
        TraceSummary {
            chains: self.state.chains.len(),
            draws: self.draws_per_chain(),
            quantities,
            pareto_k_hat: weighted_k_hat(&weights, 1.0),
        }
    }

    /// [`Trace::summary`] of every rank's chains, on rank 0 (`None` on the others): each rank's
    /// [`Trace::part`] gathered and joined. A collective: every rank calls it.
    pub fn summary_over(&self, ranks: &Ranks) -> Result<Option<TraceSummary>, RunError> {
        Ok(self.gather(ranks)?.map(|all| Trace::from(all).summary()))
    }

    /// Every rank's draws joined on rank 0 (`None` on the others). A collective: every rank
    /// calls it.
    pub fn gather(&self, ranks: &Ranks) -> Result<Option<TracePart>, RunError> {
        let Some(parts) = ranks.gather(self.part())? else {
            return Ok(None);
        };
        let mut all = Trace::new(&[], NoFunctionals);
        all.state.names.clone_from(&self.state.names);
        for p in parts {
            all.join(p)?;
        }
        Ok(Some(TracePart(all.state)))
    }
}

/// The draws of a part as a trace of their own (to summarise or write), e.g. a gathered one.
impl From<TracePart> for Trace<NoFunctionals> {
    fn from(part: TracePart) -> Self {
        Self {
            functionals: NoFunctionals,
            state: part.0,
        }
    }
}

impl<S, F> Observer<S> for Trace<F>
where
    S: Sampler,
    F: Functionals<Points<S>>,
{
    fn wants_points(&self) -> bool {
        !self.state.names.is_empty()
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, Points<S>>) -> Result<(), RunError> {
        for &c in kept.chains {
            let values = self
                .functionals
                .values(kept, c)
                .map_err(RunError::Observer)?;
            if values.len() != self.state.names.len() {
                return Err(RunError::Observer(format!(
                    "a trace of {} functionals got {} values",
                    self.state.names.len(),
                    values.len()
                )));
            }
            // Replica exchange keeps the rung-0 point, whichever replica holds it: its draws
            // form one target chain, keyed by the rung.
            let key = kept.report.rungs.get(c).copied().unwrap_or(c);
            let t = self.state.chains.entry(key).or_insert_with(|| ChainTrace {
                values: vec![Vec::new(); values.len()],
                ..ChainTrace::default()
            });
            t.step.push(kept.step);
            t.energy.push(kept.report.energies[c]);
            t.log_weight.push(kept.log_weights[c]);
            for (column, v) in t.values.iter_mut().zip(values) {
                column.push(v);
            }
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.state)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        let state: TraceState = decode(state)?;
        self.same_names(&state.names, "the checkpoint's trace")?;
        self.state = state;
        Ok(())
    }
}
