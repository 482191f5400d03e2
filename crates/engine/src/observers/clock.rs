//! The steps a run has done and the time they took, kept with the run.

use std::time::Instant;

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress, decode, encode};

/// Counts the steps done and two times, checkpointed, so a resumed run goes on counting from
/// the checkpoint:
///
/// * [`TrainClock::step_seconds`]: from each step's start (this observer's
///   [`Observer::before_step`]) to its report (its [`Observer::on_step`]): the sampler's step
///   and the `before_step` of the observers registered after the clock;
/// * [`TrainClock::loop_seconds`]: from the run's start to the last step's report, all the
///   loop's work (batches, every observer, checkpoints) but what follows the last report.
///
/// Register it before the observers whose work the step time should not count (evaluations).
#[derive(Clone, Debug, Default)]
pub struct TrainClock {
    steps_done: u64,
    step_seconds: f64,
    loop_seconds: f64,
    started: Option<Instant>,
    mark: Option<Instant>,
}

impl TrainClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Steps done (over every session of the run).
    pub fn steps_done(&self) -> u64 {
        self.steps_done
    }

    /// Seconds from the steps' starts to their reports (over every session of the run).
    pub fn step_seconds(&self) -> f64 {
        self.step_seconds
    }

    /// Seconds of the run loop up to the last step's report (over every session of the run).
    pub fn loop_seconds(&self) -> f64 {
        self.loop_seconds
    }
}

/// Seconds since `t`, if set.
fn since(t: Option<Instant>) -> f64 {
    t.map_or(0.0, |t| t.elapsed().as_secs_f64())
}

impl<S: Sampler> Observer<S> for TrainClock {
    fn on_start(&mut self, _: &Progress, _: &S) -> Result<(), RunError> {
        self.mark = Some(Instant::now());
        Ok(())
    }

    fn before_step(&mut self, _: &Progress, _: &S) -> Result<(), RunError> {
        self.started = Some(Instant::now());
        Ok(())
    }

    fn on_step(&mut self, at: &Progress, _: &S, _: &StepReport) -> Result<(), RunError> {
        self.step_seconds += since(self.started.take());
        self.loop_seconds += since(self.mark.replace(Instant::now()));
        self.steps_done = at.step + 1;
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&(self.steps_done, self.step_seconds, self.loop_seconds))
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        (self.steps_done, self.step_seconds, self.loop_seconds) = decode(state)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sgmcmc_samplers::ensemble::HostEnsemble;
    use sgmcmc_samplers::kernel::Kernel;
    use sgmcmc_samplers::sampler::{Sgmcmc, SgmcmcConfig};

    use super::*;
    use crate::observers::BeforeStep;
    use crate::{Repeat, Run};

    type Sgld = Sgmcmc<HostEnsemble>;

    fn sgld() -> Sgld {
        let normal = sgmcmc_testfunctions::by_name("normal").unwrap();
        let ens = HostEnsemble::new(normal, &[vec![0.0]], 1).unwrap();
        Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0), ens).unwrap()
    }

    #[test]
    fn the_clock_counts_steps_their_time_and_the_loops_and_goes_on_after_a_restore() {
        let mut clock = TrainClock::new();
        // A pause in an observer registered after the clock counts as the step's time.
        let pause = std::time::Duration::from_millis(20);
        let mut slow = BeforeStep(|_: &Progress, _: &Sgld| {
            std::thread::sleep(pause);
            Ok(())
        });
        Run::steps(3)
            .observe(&mut clock)
            .observe(&mut slow)
            .run(&mut sgld(), &mut Repeat(()))
            .unwrap();
        assert_eq!(clock.steps_done(), 3);
        let paused = 3.0 * pause.as_secs_f64();
        assert!(clock.step_seconds() >= paused, "{clock:?}");
        assert!(clock.loop_seconds() >= clock.step_seconds(), "{clock:?}");
        // One registered before it does not.
        let mut slow = BeforeStep(|_: &Progress, _: &Sgld| {
            std::thread::sleep(pause);
            Ok(())
        });
        let mut quick = TrainClock::new();
        Run::steps(3)
            .observe(&mut slow)
            .observe(&mut quick)
            .run(&mut sgld(), &mut Repeat(()))
            .unwrap();
        assert!(quick.step_seconds() < paused, "{quick:?}");
        // The loop counts the pause wherever it is.
        assert!(quick.loop_seconds() >= paused, "{quick:?}");
        let state = Observer::<Sgld>::save(&clock).unwrap();
        let mut back = TrainClock::new();
        Observer::<Sgld>::restore(&mut back, &state).unwrap();
        let times = |c: &TrainClock| (c.steps_done(), c.step_seconds(), c.loop_seconds());
        assert_eq!(times(&back), times(&clock));
    }
}
