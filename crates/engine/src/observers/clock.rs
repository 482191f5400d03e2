//! The steps a run has done and the time its sampler's steps took, kept with the run.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress, decode, encode};

/// Counts the steps done and the seconds from each step's start (this observer's
/// [`Observer::before_step`]) to its report (its [`Observer::on_step`]): register it before the
/// observers whose work should not count (evaluations). Checkpointed, so a resumed run goes on
/// counting from the checkpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrainClock {
    steps_done: u64,
    seconds: f64,
    #[serde(skip)]
    started: Option<Instant>,
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

    /// Seconds spent in the steps (over every session of the run).
    pub fn seconds(&self) -> f64 {
        self.seconds
    }
}

impl<S: Sampler> Observer<S> for TrainClock {
    fn before_step(&mut self, _: &Progress, _: &S) -> Result<(), RunError> {
        self.started = Some(Instant::now());
        Ok(())
    }

    fn on_step(&mut self, at: &Progress, _: &S, _: &StepReport) -> Result<(), RunError> {
        self.seconds += self
            .started
            .take()
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        self.steps_done = at.step + 1;
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&(self.steps_done, self.seconds))
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        (self.steps_done, self.seconds) = decode(state)?;
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
    fn the_clock_counts_steps_and_their_time_and_goes_on_after_a_restore() {
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
        assert!(clock.seconds() >= 3.0 * pause.as_secs_f64(), "{clock:?}");
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
        assert!(quick.seconds() < clock.seconds(), "{quick:?} vs {clock:?}");
        let state = Observer::<Sgld>::save(&clock).unwrap();
        let mut back = TrainClock::new();
        Observer::<Sgld>::restore(&mut back, &state).unwrap();
        assert_eq!((back.steps_done(), back.seconds()), (3, clock.seconds()));
    }
}
