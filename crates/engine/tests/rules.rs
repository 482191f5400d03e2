//! The run loop's rules (lengths, keeping, guards) and the tuning helpers, on exact answers.

use sgmcmc_engine::observers::{DivergenceGuard, OnSample, OnStep, ProgressReport};
use sgmcmc_engine::{BatchSource, Kept, Length, Progress, Repeat, Run, RunError, tuning};
use sgmcmc_samplers::ensemble::{HostEnsemble, HostPoints};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc_samplers::sampler::{Sampler, StepReport};
use sgmcmc_testfunctions::{NoiseModel, ToyTarget, by_name};

/// `U(x) = x^2 / 2 + ln(2 pi) / 2`, exact energies and gradients.
fn target() -> ToyTarget {
    by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap()
}

fn normal(name: &str, lr: f64, chains: usize, steps: u64) -> AnySampler<HostEnsemble> {
    let ens = HostEnsemble::new(target(), &vec![vec![1.0]; chains], 2).unwrap();
    SamplerSettings {
        lr,
        ..SamplerSettings::named(name)
    }
    .spec(&BuildContext::steps(steps).chains(chains))
    .unwrap()
    .build(ens, 2)
    .unwrap()
}

#[test]
fn kept_steps_follow_burn_in_and_thinning_and_carry_the_pre_move_point() {
    let mut s = normal("sgld", 0.1, 2, 30);
    let mut kept = Vec::new();
    let mut before = Vec::new();
    let mut at_step = OnStep::new(|_: &Progress, r: &StepReport| before.push(r.energies.clone()));
    let mut keep = OnSample::new(|k: &Kept<HostPoints>| {
        kept.push((k.step, k.chains.to_vec(), k.points.chain(1)[0]));
    });
    let report = Run::steps(30)
        .burn_in(10)
        .thin(7)
        .observe(&mut at_step)
        .observe(&mut keep)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    assert_eq!(report.steps, 30);
    let steps: Vec<u64> = kept.iter().map(|k| k.0).collect();
    assert_eq!(steps, vec![10, 17, 24]);
    assert!(kept.iter().all(|k| k.1 == vec![0, 1]));
    // The kept point is the one the step's energy was taken at.
    let t = target();
    for (k, _, x) in &kept {
        assert!((before[*k as usize][1] - t.potential().energy(&[*x])).abs() < 1e-12);
    }
}

#[test]
fn bad_lengths_and_thinnings_are_refused_before_any_step() {
    let mut s = normal("sgld", 0.1, 1, 10);
    let mut run =
        |r: Run<'_, AnySampler<HostEnsemble>>| r.run(&mut s, &mut Repeat(())).unwrap_err();
    for (err, what) in [
        (run(Run::steps(0)), "at least one step"),
        (run(Run::steps(10).burn_in(10)), "no sample"),
        (run(Run::steps(10).thin(0)), "thin"),
        (run(Run::epochs(3)), "epochs"),
    ] {
        assert!(matches!(err, RunError::Setting(_)), "{err}");
        assert!(err.to_string().contains(what), "{err}");
    }
}

/// `per_epoch` unit batches an epoch.
struct Epochs(u64);

impl BatchSource for Epochs {
    type Batch = ();

    fn batches_per_epoch(&self) -> Option<u64> {
        Some(self.0)
    }

    fn batch(&mut self, _: u64, _: u64) -> Result<(), RunError> {
        Ok(())
    }
}

#[test]
fn a_stop_in_epochs_stops_after_that_many_epochs_of_the_source() {
    // Three batches an epoch, five epochs: a stop after two epochs is step 6; one at the end
    // or past it (however far: no overflow) stops nothing; one in steps is the same rule.
    for (stop, steps, stopped) in [
        (Length::Epochs(2), 6, true),
        (Length::Epochs(5), 15, false),
        (Length::Epochs(9), 15, false),
        (Length::Epochs(u64::MAX), 15, false),
        (Length::Steps(7), 7, true),
    ] {
        let mut s = normal("sgld", 0.1, 1, 15);
        let r = Run::epochs(5)
            .stop_at(stop)
            .run(&mut s, &mut Epochs(3))
            .unwrap();
        assert_eq!((r.steps, r.stopped), (steps, stopped), "{stop:?}");
    }
    // A stream addressed by step alone has no epochs to stop after: refused before any step.
    let mut s = normal("sgld", 0.1, 1, 15);
    let err = Run::steps(15)
        .stop_at(Length::Epochs(1))
        .run(&mut s, &mut Repeat(()))
        .unwrap_err();
    assert!(matches!(err, RunError::Setting(_)), "{err}");
    assert!(err.to_string().contains("epochs"), "{err}");
    assert_eq!(s.steps_done(), 0);
}

#[test]
fn the_guard_names_the_chain_and_the_step_and_progress_reaches_the_total() {
    // From x = 1 under SGD at lr 3, x <- -2 x: U_k = 4^k / 2 + 0.92, over 100 first at k = 4.
    let mut s = normal("sgd", 3.0, 1, 50);
    let mut guard = DivergenceGuard::new().max_energy(100.0);
    let err = Run::steps(50)
        .observe(&mut guard)
        .run(&mut s, &mut Repeat(()))
        .unwrap_err();
    assert!(err.is_divergence());
    assert!(
        err.to_string().contains("chain 0 diverged at step 4"),
        "{err}"
    );
    let mut s = normal("sgld", 0.1, 1, 5000);
    let mut last = (0, 0);
    let mut calls = 0;
    let mut p = ProgressReport::new(|d, t| {
        last = (d, t);
        calls += 1;
    })
    .updates(10);
    Run::steps(5000)
        .observe(&mut p)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    assert_eq!(last, (5000, 5000));
    assert!((10..=12).contains(&calls), "{calls} calls");
}

#[test]
fn the_lr_probe_finds_the_exact_stability_bound_of_a_gaussian() {
    // On U = x^2 / 2 + c, SGD is stable exactly for lr < 2 (|1 - lr| < 1).
    let lr = tuning::probe_lr(&[4.0, 2.5, 1.9, 0.5], 300, 10.0, &mut Repeat(()), |lr| {
        Ok(normal("sgd", lr, 1, 300))
    })
    .unwrap();
    assert_eq!(lr, 1.9);
    let err = tuning::probe_lr(&[3.0, 2.2], 300, 10.0, &mut Repeat(()), |lr| {
        Ok(normal("sgd", lr, 1, 300))
    })
    .unwrap_err();
    assert!(err.to_string().contains("every learning rate"), "{err}");
}

#[test]
fn a_pilot_partition_covers_the_pilot_energies_with_headroom_above() {
    // SGLD on N(0, 1): U = x^2 / 2 follows chi2_1 / 2 (median 0.227, 99.9% below 5.41).
    let mut s = normal("sgld", 0.05, 4, 20_000);
    let e = tuning::pilot_energies(&mut s, &mut Repeat(()), 20_000, 1000).unwrap();
    assert_eq!(e.len(), 4 * 19_000);
    let p = tuning::partition(&e, 50).unwrap();
    let lo = e.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(p.u_min <= lo, "{} vs {lo}", p.u_min);
    let top = p.u_min + p.du * 50.0;
    // The 99.9% quantile (about 5.4) plus its range again lies inside, the extreme max may not.
    assert!(
        top > 2.0 * 5.0 && top < 2.5 * hi.max(6.0),
        "{top} vs max {hi}"
    );
    assert!(tuning::partition(&[1.0], 10).is_err());
}

#[test]
fn a_stop_condition_ends_the_run_at_the_first_step_that_meets_it() {
    // SGD at lr 0.5 from x = 1 halves x each step: U(x_k) - ln(2 pi) / 2 = 4^-k / 2, first
    // below 1e-3 at k = 5 (4^5 = 1024 > 500), so the run ends after 6 steps of 1000.
    let c = (2.0 * std::f64::consts::PI).ln() / 2.0;
    let mut s = normal("sgd", 0.5, 1, 1000);
    let mut seen = 0;
    let mut count = OnStep::new(|_: &Progress, _: &StepReport| seen += 1);
    let report = Run::steps(1000)
        .observe(&mut count)
        .stop_when(|_, r| r.energies[0] - c < 1e-3)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    assert_eq!((report.steps, report.session_steps), (6, 6));
    assert!(report.condition_met && !report.stopped);
    assert_eq!(seen, 6);
    // A condition never met leaves the run its full length.
    let mut s = normal("sgd", 0.5, 1, 20);
    let report = Run::steps(20)
        .stop_when(|_, r| r.energies[0] < c)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    assert_eq!(report.steps, 20);
    assert!(!report.condition_met);
}
