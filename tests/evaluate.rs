//! The engine's `Evaluate` observer: at the steps it picks it scores every chain's pre-move
//! model (the points `Kept` hands to the kept-sample observers, to the bit), after the last
//! step the final models, and folds all chains' scores in chain order.

use sgmcmc::burn::nn::{Linear, LinearConfig};
use sgmcmc::burn::tensor::{Device, Tensor, TensorData};
use sgmcmc::engine::init;
use sgmcmc::engine::observers::{AfterStep, Evaluate, OnSample, Scored, Scoring};
use sgmcmc::engine::{Length, Progress, Ranks, Repeat, Run};
use sgmcmc::models::{ModelPosterior, nll_fn};
use sgmcmc::samplers::ensemble::{Ensemble, ModuleEnsemble};
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig, StepReport};

#[derive(Clone)]
struct Xy(Tensor<2>, Tensor<2>);

fn nll(m: &Linear, b: &Xy) -> Tensor<1> {
    let r = m.forward(b.0.clone()) - b.1.clone();
    r.powi_scalar(2).mul_scalar(50.0).sum_dim(1).squeeze_dim(1)
}

/// The weight and bias of a `Linear(1, 1)`.
fn values(m: &Linear) -> Vec<f32> {
    let w = m.weight.val().into_data().try_to_vec::<f32>().unwrap();
    let b = m.bias.as_ref().unwrap().val().into_data();
    [w, b.try_to_vec::<f32>().unwrap()].concat()
}

/// Eight points on the line `y = 2 x - 1`.
fn line(device: &Device) -> Xy {
    let x: Vec<f32> = (0..8).map(|i| i as f32 / 8.0).collect();
    let y: Vec<f32> = x.iter().map(|v| 2.0 * v - 1.0).collect();
    Xy(
        Tensor::from_data(TensorData::new(x, [8, 1]), device),
        Tensor::from_data(TensorData::new(y, [8, 1]), device),
    )
}

#[test]
fn evaluations_score_the_pre_move_models_and_the_final_ones_in_chain_order() {
    let device = Device::flex().autodiff();
    let batch = line(&device);
    let posterior = ModelPosterior::new(nll_fn(nll as fn(&Linear, &Xy) -> Tensor<1>), 8);
    let models = init::chains(&device, 3, 3, || LinearConfig::new(1, 1).init(&device));
    let ensemble = ModuleEnsemble::new(posterior, models, 3).unwrap();
    let mut sampler =
        Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-3, 1.0), ensemble).unwrap();

    let when = |k: u64| k % 4 == 1;
    // Each score: (chain, steps done, end, the model's values); folded as they come.
    type Row = (usize, u64, bool, Vec<f32>);
    let mut evaluate = Evaluate::new(
        move |at: &Progress| when(at.step),
        |s: &Scoring<'_>, m: &Linear| Ok((s.chain, s.steps_done(), s.end, values(m))),
        |rows: &mut Vec<Vec<Row>>, s: Scored<'_, Row>| {
            rows.push(s.scores);
            Ok(())
        },
    )
    .at_end();
    // The engine's own pre-move points at the same steps.
    let mut kept: Vec<Vec<Vec<f32>>> = Vec::new();
    let mut reference = OnSample::new(|k: &sgmcmc::engine::Kept<'_, Vec<Linear>>| {
        kept.push(k.points.iter().map(values).collect());
    });
    Run::new(Length::Steps(10))
        .keep_when(when)
        .observe(&mut evaluate)
        .observe(&mut reference)
        .run(&mut sampler, &mut Repeat(batch))
        .unwrap();
    let finals: Vec<Vec<f32>> = sampler.ensemble().modules().map(values).collect();
    let rows = evaluate.into_state();

    // Steps 1, 5, 9, then the end (10 steps done).
    assert_eq!(rows.len(), 4);
    for (e, row) in rows.iter().enumerate() {
        let chains: Vec<usize> = row.iter().map(|r| r.0).collect();
        assert_eq!(chains, [0, 1, 2]);
        let end = e == 3;
        let steps = if end { 10 } else { 1 + 4 * e as u64 };
        assert!(row.iter().all(|r| r.1 == steps && r.2 == end), "{row:?}");
        let models: Vec<Vec<f32>> = row.iter().map(|r| r.3.clone()).collect();
        let want = if end { &finals } else { &kept[e] };
        assert_eq!(&models, want, "evaluation {e}");
    }
    // The models moved between evaluations: pre-move is not post-move.
    assert_ne!(rows[2][0].3, rows[3][0].3);
}

/// The values of every chain's model of `s`.
fn chain_values<S: Sampler<Ensemble: Ensemble<Snapshot = Vec<Linear>>>>(s: &S) -> Vec<Vec<f32>> {
    let mut models = Vec::new();
    s.ensemble().snapshot_into(&mut models);
    models.iter().map(values).collect()
}

/// `Evaluate::after_steps` sees the models of the steps it picks as the step left them (the
/// chains' own, to the bit), after that step's evaluation has folded the pre-move models.
#[test]
fn after_steps_sees_the_picked_steps_models_after_that_steps_evaluation() {
    let device = Device::flex().autodiff();
    let posterior = ModelPosterior::new(nll_fn(nll as fn(&Linear, &Xy) -> Tensor<1>), 8);
    let models = init::chains(&device, 5, 2, || LinearConfig::new(1, 1).init(&device));
    let ensemble = ModuleEnsemble::new(posterior, models, 5).unwrap();
    let mut sampler =
        Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-3, 1.0), ensemble).unwrap();
    // (step, whether an evaluation wrote it, every chain's values), in the order written.
    type Log = Vec<(u64, bool, Vec<Vec<f32>>)>;
    let mut evaluate = Evaluate::new(
        |at: &Progress| at.step.is_multiple_of(3),
        |_: &Scoring<'_>, m: &Linear| Ok(values(m)),
        |log: &mut Log, s: Scored<'_, Vec<f32>>| {
            log.push((s.at.step, true, s.scores));
            Ok(())
        },
    )
    .after_steps(
        |at: &Progress, _: &StepReport| at.step != 5,
        |log: &mut Log, at: &Progress, _, models: &[Linear]| {
            log.push((at.step, false, models.iter().map(values).collect()));
            Ok(())
        },
    );
    let mut after: Vec<Vec<Vec<f32>>> = Vec::new();
    let mut reference = AfterStep(|_: &Progress, s: &_, _: &_| {
        after.push(chain_values(s));
        Ok::<(), sgmcmc::engine::RunError>(())
    });
    Run::new(Length::Steps(7))
        .observe(&mut evaluate)
        .observe(&mut reference)
        .run(&mut sampler, &mut Repeat(line(&device)))
        .unwrap();
    let log = evaluate.into_state();
    let order: Vec<(u64, bool)> = log.iter().map(|(k, e, _)| (*k, *e)).collect();
    let want: Vec<(u64, bool)> = (0..7u64)
        .flat_map(|k| {
            [(k, true), (k, false)]
                .into_iter()
                .filter(move |(_, e)| if *e { k.is_multiple_of(3) } else { k != 5 })
        })
        .collect();
    assert_eq!(order, want);
    let evals: Vec<&Vec<Vec<f32>>> = log.iter().filter(|l| l.1).map(|l| &l.2).collect();
    // The evaluation at step 3 scores the pre-move models, those step 2 left, not step 3's.
    assert_eq!(evals[1], &after[2]);
    assert_ne!(after[2], after[3]);
    let each: Vec<Vec<Vec<f32>>> = log.into_iter().filter(|l| !l.1).map(|l| l.2).collect();
    let picked: Vec<Vec<Vec<f32>>> = (0..)
        .zip(after)
        .filter(|(k, _)| *k != 5)
        .map(|(_, a)| a)
        .collect();
    assert_eq!(each, picked);
}

/// Each chain's (index, values) at every evaluation, as rank 0 folds them.
type Folds = Vec<Vec<(usize, Vec<f32>)>>;

/// Four SGLD chains of `Linear(1, 1)` on this rank's block over `ranks`, evaluated every other
/// step; `spread`: the run is over the ranks too (else the sampler alone is). Rank 0's folds.
fn folds_over(ranks: &Ranks, spread: bool) -> Option<Folds> {
    use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
    let device = Device::flex().autodiff();
    let posterior = ModelPosterior::new(nll_fn(nll as fn(&Linear, &Xy) -> Tensor<1>), 8);
    let placement = ranks.placement(4).unwrap();
    let here = placement.here();
    let models = init::chains_in(&device, 7, here.clone(), || {
        LinearConfig::new(1, 1).init(&device)
    });
    let ensemble = ModuleEnsemble::new_part(posterior, models, 7, here.start).unwrap();
    let settings = SamplerSettings {
        lr: 1e-3,
        ..SamplerSettings::named("sgld")
    };
    let spec = settings.spec(&BuildContext::steps(6).chains(4)).unwrap();
    let mut sampler = spec.build_placed(ensemble, 7, placement).unwrap();
    let mut evaluate = Evaluate::new(
        |at: &Progress| at.step % 2 == 1,
        |s: &Scoring<'_>, m: &Linear| Ok((s.chain, values(m))),
        |rows: &mut Folds, s: Scored<'_, (usize, Vec<f32>)>| {
            rows.push(s.scores);
            Ok(())
        },
    );
    let run = Run::new(Length::Steps(6)).observe(&mut evaluate);
    let run = if spread { run.over(ranks) } else { run };
    run.run(&mut sampler, &mut Repeat(line(&device))).unwrap();
    ranks.is_leader().then(|| evaluate.into_state())
}

/// Over two ranks (threads), each scoring its own chains, rank 0 folds every chain's scores in
/// chain order: the folds of one process (the evaluation learns the ranks from the run). A run
/// left in one process while its sampler's chains are spread over ranks is refused, not folded
/// from rank 0's chains.
#[test]
fn an_evaluation_over_ranks_folds_what_one_process_folds() {
    use std::sync::Arc;

    use sgmcmc::samplers::comm::ThreadGroup;

    let one = folds_over(&Ranks::local(), false).unwrap();
    assert_eq!(one.len(), 3);
    assert!(one.iter().all(|row| row.iter().map(|r| r.0).eq(0..4)));
    for spread in [true, false] {
        let ranks: Vec<std::thread::Result<Option<Folds>>> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadGroup::new(2)
                .into_iter()
                .map(|g| s.spawn(move || folds_over(&Ranks::over(Arc::new(g)), spread)))
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        if spread {
            let ranks: Vec<Option<Folds>> = ranks.into_iter().map(Result::unwrap).collect();
            assert_eq!(ranks, vec![Some(one.clone()), None]);
        } else {
            for r in ranks {
                let panic = r.expect_err("refused");
                let why = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(why.contains("the run must be too (Run::over)"), "{why}");
            }
        }
    }
}

/// `Evaluate::kept` scores exactly the samples `Kept` hands out (after the burn-in, every
/// `thin`-th step), each chain's pre-move model to the bit, and folds them in chain order,
/// naming the chains; a replica-exchange run's samples are its rung-0 chain alone.
#[test]
fn kept_evaluations_score_the_samples_and_name_their_chains() {
    use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
    let device = Device::flex().autodiff();
    let batch = line(&device);
    let posterior = ModelPosterior::new(nll_fn(nll as fn(&Linear, &Xy) -> Tensor<1>), 8);
    for (name, samples_per_step) in [("sgld", 3), ("resgld", 1)] {
        let models = init::chains(&device, 3, 3, || LinearConfig::new(1, 1).init(&device));
        let ensemble = ModuleEnsemble::new(posterior.clone(), models, 3).unwrap();
        let mut settings = SamplerSettings::named(name);
        settings.lr = 1e-3;
        if name == "resgld" {
            settings.replica.lrs = vec![1e-3, 1e-3, 1e-3];
            settings.replica.temperatures = vec![1.0, 3.0, 9.0];
        }
        let mut sampler = settings
            .spec(&BuildContext::steps(12).chains(3))
            .unwrap()
            .build(ensemble, 3)
            .unwrap();
        type Row = (u64, Vec<usize>, Vec<Vec<f32>>, Vec<f64>);
        let mut evaluate = Evaluate::kept(
            Vec::<Row>::new(),
            |_: &Scoring<'_>, m: &Linear| Ok(values(m)),
            |rows: &mut Vec<Row>, s: Scored<'_, Vec<f32>>| {
                let w = s.chains.iter().map(|c| s.report.log_weights[*c]).collect();
                rows.push((s.at.step, s.chains.clone(), s.scores, w));
                Ok(())
            },
        );
        let mut kept: Vec<(u64, Vec<usize>, Vec<Vec<f32>>)> = Vec::new();
        let mut reference = OnSample::new(|k: &sgmcmc::engine::Kept<'_, Vec<Linear>>| {
            let models = k.chains.iter().map(|c| values(&k.points[k.index(*c)]));
            kept.push((k.step, k.chains.to_vec(), models.collect()));
        });
        Run::new(Length::Steps(12))
            .burn_in(4)
            .thin(3)
            .observe(&mut evaluate)
            .observe(&mut reference)
            .run(&mut sampler, &mut Repeat(batch.clone()))
            .unwrap();
        let rows = evaluate.into_state();
        // Steps 4, 7 and 10 are kept.
        assert_eq!(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            [4, 7, 10],
            "{name}"
        );
        assert_eq!(rows.len(), kept.len(), "{name}");
        for (row, (step, chains, models)) in rows.iter().zip(&kept) {
            assert_eq!((row.0, &row.1, &row.2), (*step, chains, models), "{name}");
            assert_eq!(row.1.len(), samples_per_step, "{name}: {:?}", row.1);
            assert!(row.1.windows(2).all(|w| w[0] < w[1]), "{name}: chain order");
            assert!(row.3.iter().all(|w| w.is_finite()), "{name}");
        }
    }
}
