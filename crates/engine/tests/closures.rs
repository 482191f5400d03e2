//! The closure observers see the chains on either side of each step, and a closure batch
//! source is asked once per step, in order.

use sgmcmc_engine::observers::{AfterStep, BeforeStep};
use sgmcmc_engine::{FnBatches, Progress, Run, RunError};
use sgmcmc_samplers::ensemble::HostEnsemble;
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc_samplers::sampler::{Sampler, StepReport};
use sgmcmc_testfunctions::by_name;

type Sgld = AnySampler<HostEnsemble>;

#[test]
fn before_and_after_step_see_the_chain_on_either_side_of_the_move() {
    let chains = HostEnsemble::new(by_name("normal").unwrap(), &[vec![2.0]], 3).unwrap();
    let mut sgld = SamplerSettings::named("sgld")
        .spec(&BuildContext::steps(6))
        .unwrap()
        .build(chains, 3)
        .unwrap();
    let (mut before, mut after, mut asked) = (Vec::new(), Vec::new(), Vec::new());
    let mut batches = FnBatches(|k| {
        asked.push(k);
        Ok::<(), RunError>(())
    });
    let mut pre = BeforeStep(|at: &Progress, s: &Sgld| {
        before.push((at.step, s.ensemble().chain(0)[0]));
        Ok(())
    });
    let mut post = AfterStep(|at: &Progress, s: &Sgld, r: &StepReport| {
        after.push((r.step, at.step, s.ensemble().chain(0)[0]));
        Ok(())
    });
    Run::steps(6)
        .observe(&mut pre)
        .observe(&mut post)
        .run(&mut sgld, &mut batches)
        .unwrap();
    assert_eq!(asked, (0..6).collect::<Vec<u64>>());
    assert_eq!(before[0], (0, 2.0), "the start");
    for k in 0..6 {
        assert_eq!((after[k].0, after[k].1), (k as u64, k as u64));
        assert_ne!(after[k].2, before[k].1, "step {k} moved the chain");
        if k + 1 < 6 {
            assert_eq!(
                before[k + 1].1,
                after[k].2,
                "step {k}'s result starts step {}",
                k + 1
            );
        }
    }
}
