//! Every chain scored at chosen steps, or every kept sample, over the ranks of a job: the
//! evaluation of a network experiment (test accuracy of each chain, the model average of the
//! sample chains).

use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Kept, Observer, Progress, decode, encode};
use crate::ranks::Ranks;

/// One chain's model at an evaluation, as the score sees it.
pub struct Scoring<'a> {
    /// The step whose pre-move models are scored; at the end evaluation, the last step.
    pub at: &'a Progress,
    /// That step's report: phase, rungs, log weights of the pre-move points.
    pub report: &'a StepReport,
    /// The global index of the chain.
    pub chain: usize,
    /// Whether this is the evaluation after the last step: the final models, whose log
    /// weights no step has computed (an average should not take them).
    pub end: bool,
}

/// The scores of one evaluation, in global chain order (on rank 0).
pub struct Scored<'a, T> {
    /// As [`Scoring::at`].
    pub at: &'a Progress,
    /// As [`Scoring::report`].
    pub report: &'a StepReport,
    /// One score per scored chain: every chain of the run, or ([`Evaluate::kept`]) the chains
    /// whose points are samples.
    pub scores: Vec<T>,
    /// The global index of each score's chain, ascending.
    pub chains: Vec<usize>,
    /// As [`Scoring::end`].
    pub end: bool,
}

impl Scoring<'_> {
    /// Steps done when the scored models were current: the step's index for pre-move models,
    /// the run's steps for the end evaluation.
    pub fn steps_done(&self) -> u64 {
        steps_done(self.at, self.end)
    }
}

impl<T> Scored<'_, T> {
    /// As [`Scoring::steps_done`].
    pub fn steps_done(&self) -> u64 {
        steps_done(self.at, self.end)
    }
}

fn steps_done(at: &Progress, end: bool) -> u64 {
    at.step + u64::from(end)
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Timed<St> {
    state: St,
    seconds: f64,
}

/// The rule of the steps to evaluate at.
type When<'a> = Box<dyn Fn(&Progress) -> bool + 'a>;
/// A score closure: one chain's model to a value that travels to rank 0.
type Score<'a, M, T> = Box<dyn FnMut(&Scoring<'_>, &M) -> Result<T, String> + 'a>;
/// A fold closure: every chain's scores into the evaluation's state, on rank 0.
type Fold<'a, St, T> = Box<dyn FnMut(&mut St, Scored<'_, T>) -> Result<(), String> + 'a>;
/// A closure after the steps a predicate picks: this rank's models as the step left them, into
/// the state.
type AfterSteps<'a, M, St> = (
    Box<dyn Fn(&Progress, &StepReport) -> bool + 'a>,
    Box<dyn FnMut(&mut St, &Progress, &StepReport, &[M]) -> Result<(), String> + 'a>,
);

/// Scores every chain at the steps `when` picks and folds the scores on rank 0 (the only rank
/// of one process; over the ranks of a job, those of the run, [`crate::Run::over`]).
///
/// At such a step `k` each rank scores its chains' models *before* the step (the points the
/// step's log weights and rungs refer to, as [`Kept`](crate::Kept) holds them) with `score`,
/// after the step, so the score sees the step's report; rank 0 receives every chain's score in
/// global chain order ([`Ranks::gather_chains`]) and folds them into the state `St` with
/// `fold` (the other ranks' state is only what [`Evaluate::after_steps`] makes of the
/// initial one). With [`Evaluate::at_end`] the final models
/// are scored once more after the last step ([`Scoring::end`]). The state and the seconds
/// spent are checkpointed with the run, so a resumed run folds the same scores.
///
/// Every chain must be one model of the ensemble ([`Ensemble::Snapshot`] `= Vec<M>`, one
/// module per chain): network chains, not toy rows.
pub struct Evaluate<'a, M, T, St> {
    ranks: Ranks,
    /// The steps to score every chain at; `None`: the kept samples ([`Evaluate::kept`]).
    when: Option<When<'a>>,
    score: Score<'a, M, T>,
    fold: Fold<'a, St, T>,
    after_steps: Option<AfterSteps<'a, M, St>>,
    at_end: bool,
    /// Whether the seconds spent are counted (and checkpointed).
    clocked: bool,
    timed: Timed<St>,
    held: Option<Vec<M>>,
    /// The models [`Evaluate::after_steps`] sees (a buffer kept between steps).
    now: Vec<M>,
}

impl<'a, M, T, St: Default> Evaluate<'a, M, T, St> {
    /// Scores at the steps `when(at)` picks (over the ranks the run is spread over, if any).
    pub fn new(
        when: impl Fn(&Progress) -> bool + 'a,
        score: impl FnMut(&Scoring<'_>, &M) -> Result<T, String> + 'a,
        fold: impl FnMut(&mut St, Scored<'_, T>) -> Result<(), String> + 'a,
    ) -> Self {
        Self::build(Some(Box::new(when)), St::default(), score, fold)
    }
}

impl<'a, M, T, St> Evaluate<'a, M, T, St> {
    /// Scores the run's samples instead: at every kept step ([`Kept`]: after the burn-in, every
    /// `thin`-th step, not in an exploration phase), each rank scores the pre-move points of its
    /// chains that are samples (every chain, or the rung-0 chain of replica exchange), and rank
    /// 0 folds them in global chain order with [`Scored::chains`] naming them. A model average
    /// of any prediction, over the ranks, in the order of a one-process run; the folds start
    /// from `state`.
    pub fn kept(
        state: St,
        score: impl FnMut(&Scoring<'_>, &M) -> Result<T, String> + 'a,
        fold: impl FnMut(&mut St, Scored<'_, T>) -> Result<(), String> + 'a,
    ) -> Self {
        Self::build(None, state, score, fold)
    }

    fn build(
        when: Option<When<'a>>,
        state: St,
        score: impl FnMut(&Scoring<'_>, &M) -> Result<T, String> + 'a,
        fold: impl FnMut(&mut St, Scored<'_, T>) -> Result<(), String> + 'a,
    ) -> Self {
        Self {
            ranks: Ranks::local(),
            when,
            score: Box::new(score),
            fold: Box::new(fold),
            after_steps: None,
            at_end: false,
            clocked: true,
            timed: Timed {
                state,
                seconds: 0.0,
            },
            held: None,
            now: Vec::new(),
        }
    }

    /// Leaves the seconds spent uncounted ([`Evaluate::seconds`] stays 0): the checkpoints then
    /// hold the folded state alone, and a resumed run's final checkpoint equals an
    /// uninterrupted one's to the byte.
    pub fn unclocked(mut self) -> Self {
        self.clocked = false;
        self
    }

    /// Also scores the final models after the last step of a finished run.
    pub fn at_end(mut self) -> Self {
        self.at_end = true;
        self
    }

    /// Also calls `f(state, at, report, models)` after each step `when(at, report)` picks
    /// (after that step's evaluation, if any) with this rank's chains' models as the step left
    /// them: models that join the state's average other than the chains' own points, e.g.
    /// cycSWAG's draws from its fits of the iterates ([`sgmcmc_samplers::swag::CycleSwag::reads`]
    /// says which steps it reads). The models are copied out of the chains at those steps
    /// alone. It runs on every rank, on that rank's state; its time counts in
    /// [`Evaluate::seconds`].
    pub fn after_steps(
        mut self,
        when: impl Fn(&Progress, &StepReport) -> bool + 'a,
        f: impl FnMut(&mut St, &Progress, &StepReport, &[M]) -> Result<(), String> + 'a,
    ) -> Self {
        self.after_steps = Some((Box::new(when), Box::new(f)));
        self
    }

    /// The folded state (rank 0's; on the other ranks what [`Evaluate::after_steps`] made
    /// of the initial one).
    pub fn state(&self) -> &St {
        &self.timed.state
    }

    /// The folded state, taken.
    pub fn into_state(self) -> St {
        self.timed.state
    }

    /// Seconds spent scoring and folding, over every session of the run.
    pub fn seconds(&self) -> f64 {
        self.timed.seconds
    }
}

impl<M, T, St> Evaluate<'_, M, T, St>
where
    T: Serialize + DeserializeOwned,
{
    /// Scores `models`, this rank's chains `chains` (every chain of the run when `all`), and
    /// folds every rank's scores on rank 0.
    fn evaluate<'m>(
        &mut self,
        (at, report, end): (&Progress, &StepReport, bool),
        chains: &[usize],
        models: impl Iterator<Item = &'m M>,
        all: bool,
    ) -> Result<(), RunError>
    where
        M: 'm,
    {
        if !self.ranks.is_distributed() && report.local.len() != report.energies.len() {
            return Err(RunError::Setting(
                "the run's chains are spread over ranks: the run must be too (Run::over), so \
                 that its evaluation gathers them"
                    .into(),
            ));
        }
        let clock = Instant::now();
        let mine = models
            .zip(chains)
            .map(|(m, &chain)| {
                let s = Scoring {
                    at,
                    report,
                    chain,
                    end,
                };
                (self.score)(&s, m).map_err(RunError::Observer)
            })
            .collect::<Result<Vec<T>, _>>()?;
        let gathered = if all {
            self.ranks.gather_chains(mine)?.map(|scores| {
                let chains = (0..scores.len()).collect();
                (scores, chains)
            })
        } else {
            let pairs: Vec<(usize, T)> = chains.iter().copied().zip(mine).collect();
            self.ranks.gather(pairs)?.map(|parts| {
                let mut pairs: Vec<(usize, T)> = parts.into_iter().flatten().collect();
                pairs.sort_by_key(|(c, _)| *c);
                pairs.into_iter().map(|(c, t)| (t, c)).unzip()
            })
        };
        if let Some((scores, chains)) = gathered {
            let scored = Scored {
                at,
                report,
                scores,
                chains,
                end,
            };
            (self.fold)(&mut self.timed.state, scored).map_err(RunError::Observer)?;
        }
        if self.clocked {
            self.timed.seconds += clock.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// [`Self::evaluate`] of one model per chain of this rank.
    fn evaluate_all(
        &mut self,
        step: (&Progress, &StepReport, bool),
        models: &[M],
    ) -> Result<(), RunError> {
        let local: Vec<usize> = step.1.local.clone().collect();
        if models.len() != local.len() {
            return Err(RunError::Observer(format!(
                "an evaluation scores one model per chain ({} models for {} chains)",
                models.len(),
                local.len()
            )));
        }
        self.evaluate(step, &local, models.iter(), true)
    }
}

impl<S, M, T, St> Observer<S> for Evaluate<'_, M, T, St>
where
    S: Sampler,
    S::Ensemble: Ensemble<Snapshot = Vec<M>>,
    T: Serialize + DeserializeOwned,
    St: Serialize + DeserializeOwned,
{
    fn wants_points(&self) -> bool {
        self.when.is_none()
    }

    fn over_ranks(&mut self, ranks: &Ranks) {
        self.ranks = ranks.clone();
    }

    fn before_step(&mut self, at: &Progress, sampler: &S) -> Result<(), RunError> {
        if self.when.as_ref().is_some_and(|when| when(at)) {
            let mut held = self.held.take().unwrap_or_default();
            sampler.ensemble().snapshot_into(&mut held);
            self.held = Some(held);
        }
        Ok(())
    }

    fn on_step(&mut self, at: &Progress, sampler: &S, report: &StepReport) -> Result<(), RunError> {
        if let Some(models) = self.held.take() {
            self.evaluate_all((at, report, false), &models)?;
        }
        if let Some((_, f)) = self
            .after_steps
            .as_mut()
            .filter(|(when, _)| when(at, report))
        {
            let clock = Instant::now();
            sampler.ensemble().snapshot_into(&mut self.now);
            f(&mut self.timed.state, at, report, &self.now).map_err(RunError::Observer)?;
            if self.clocked {
                self.timed.seconds += clock.elapsed().as_secs_f64();
            }
        }
        Ok(())
    }

    fn on_sample(&mut self, at: &Progress, kept: &Kept<'_, Vec<M>>) -> Result<(), RunError> {
        if self.when.is_none() {
            let models = kept.chains.iter().map(|&c| &kept.points[kept.index(c)]);
            self.evaluate((at, kept.report, false), kept.chains, models, false)?;
        }
        Ok(())
    }

    fn on_end(&mut self, at: &Progress, sampler: &S) -> Result<(), RunError> {
        if self.at_end {
            let mut models = Vec::new();
            sampler.ensemble().snapshot_into(&mut models);
            self.evaluate_all((at, sampler.report(), true), &models)?;
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.timed)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.timed = decode(state)?;
        Ok(())
    }
}
