//! Chains spread over ranks reproduce the single-process run bit for bit: ranks run as threads
//! ([`ThreadGroup`]), each with its own host chains, and every step's global report (energies,
//! swaps, rungs, bins, multipliers, weights) and every chain's final position and kernel state
//! (velocities) must equal the one-process run's with the same seed, also when replica swaps
//! move velocities between ranks. The MPI runs of `tests/mpi.rs` check the same through
//! `mpirun`.

mod common;

use std::sync::Arc;

use common::cli::{sgmcmc, tmp};

use sgmcmc::samplers::checkpoint::EnsembleState;
use sgmcmc::samplers::comm::{ChainLayout, Placement, ThreadGroup};
use sgmcmc::samplers::control::SwapScheme;
use sgmcmc::samplers::ensemble::{Ensemble, HostEnsemble};
use sgmcmc::samplers::registry::{AnySampler, BuildContext, SamplerSettings, SamplerSpec};
use sgmcmc::samplers::sampler::Sampler;
use sgmcmc::testfunctions::{Noise, NoiseModel, ToyTarget, by_name};

/// Final rungs, accepted swaps per pair, round trips and ladder of a replica exchange.
type Swaps = (Vec<usize>, Vec<u64>, u64, Vec<f64>);

/// One run's history: per step the global report's vectors, then the final positions and
/// kernel state (per slot) of the chains this rank steps, `theta` and the replica statistics.
#[derive(Debug, PartialEq)]
struct History {
    steps: Vec<Vec<f64>>,
    positions: Vec<f64>,
    kernel: Vec<Vec<f64>>,
    theta: Option<Vec<f64>>,
    replica: Option<Swaps>,
}

struct Scenario {
    target: ToyTarget,
    settings: SamplerSettings,
    chains: usize,
    steps: u64,
    seed: u64,
}

impl Scenario {
    fn spec(&self) -> SamplerSpec {
        let ctx = BuildContext::steps(self.steps).chains(self.chains);
        self.settings.spec(&ctx).unwrap()
    }

    fn starts(&self) -> Vec<Vec<f64>> {
        let d = self.target.dim();
        (0..self.chains)
            .map(|c| (0..d).map(|i| 0.3 * c as f64 - 0.1 * i as f64).collect())
            .collect()
    }

    /// The run on the chains `placement` gives this rank.
    fn run(&self, placement: Placement) -> History {
        let here = placement.here();
        let starts = self.starts();
        let ens = HostEnsemble::new_part(
            self.target.clone(),
            &starts[here.clone()],
            self.seed,
            here.start,
        )
        .unwrap();
        let mut s = self.spec().build_placed(ens, self.seed, placement).unwrap();
        assert_eq!((s.n_chains(), s.local_chains()), (self.chains, here));
        let mut steps = Vec::new();
        for _ in 0..self.steps {
            let r = s.step(&()).unwrap();
            let mut row: Vec<f64> = r.energies.clone();
            row.extend(
                r.step_sizes
                    .iter()
                    .flat_map(|z| [z.lr, z.temperature, z.multiplier]),
            );
            row.extend(r.bins.iter().map(|b| *b as f64));
            row.extend(&r.log_weights);
            row.extend(r.rungs.iter().map(|b| *b as f64));
            row.push(r.bouncy_moves as f64);
            steps.push(row);
        }
        history(&s, steps)
    }

    /// The one-process run, and the run over `ranks` thread ranks; every rank's history must be
    /// the one-process history (positions: its own chains').
    fn check(&self, ranks: usize, coupled: bool) {
        let single = self.run(Placement::local(self.chains));
        let layout = ChainLayout::even(self.chains, ranks).unwrap();
        let d = self.target.dim();
        let parts: Vec<History> = std::thread::scope(|scope| {
            let handles: Vec<_> = ThreadGroup::new(ranks)
                .into_iter()
                .map(|g| {
                    let layout = layout.clone();
                    scope.spawn(move || self.run(Placement::new(Arc::new(g), layout).unwrap()))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, part) in parts.iter().enumerate() {
            let here = layout.range(rank);
            let mine = here.start * d..here.end * d;
            assert_eq!(
                part.positions,
                single.positions[mine.clone()],
                "rank {rank}: positions"
            );
            for (slot, (a, b)) in part.kernel.iter().zip(&single.kernel).enumerate() {
                assert_eq!(
                    a[..],
                    b[mine.clone()],
                    "rank {rank}: kernel state slot {slot}"
                );
            }
            assert_eq!(part.kernel.len(), single.kernel.len(), "rank {rank}: slots");
            assert_eq!(part.theta, single.theta, "rank {rank}: theta");
            assert_eq!(part.replica, single.replica, "rank {rank}: swaps");
            if coupled {
                // The report is the whole run's on every rank.
                for (k, (a, b)) in part.steps.iter().zip(&single.steps).enumerate() {
                    assert_eq!(a, b, "rank {rank}, step {k}");
                }
            }
        }
    }
}

fn history(s: &AnySampler<HostEnsemble>, steps: Vec<Vec<f64>>) -> History {
    let kernel = match s.ensemble().state().unwrap() {
        EnsembleState::Host { state, x, .. } => {
            state.chunks(x.len()).map(<[f64]>::to_vec).collect()
        }
        EnsembleState::Modules { .. } => unreachable!("host chains"),
    };
    History {
        steps,
        kernel,
        positions: s.ensemble().positions().to_vec(),
        theta: s.theta().map(|t| t.theta().to_vec()),
        replica: s.as_replica().map(|r| {
            (
                r.index().rungs().to_vec(),
                r.stats().accepts.clone(),
                r.index().total_round_trips(),
                r.config().ladder.lrs.clone(),
            )
        }),
    }
}

#[test]
fn resgld_on_a_mixture_with_variance_refreshes_swaps_identically_over_ranks() {
    // Four rungs on the 1-D mixture with Gaussian energy noise: corrected Metropolis swaps
    // whose sigma2 is refreshed every 50 steps from 5 gathered draws per chain.
    let mut settings = SamplerSettings::named("resgld");
    settings.lr = 0.03;
    settings.replica.temperatures = vec![1.0, 2.0, 4.0, 10.0];
    settings.replica.variance_period = 50;
    settings.replica.variance_draws = 5;
    settings.replica.initial_variance = 10.0;
    let s = Scenario {
        target: by_name("mixture-resgld-1").unwrap(),
        settings,
        chains: 4,
        steps: 3000,
        seed: 11,
    };
    s.check(4, true);
    s.check(2, true);
    let single = s.run(Placement::local(4));
    let (_, accepts, trips, _) = single.replica.unwrap();
    assert!(
        accepts.iter().all(|a| *a > 50) && trips > 0,
        "{accepts:?} {trips}"
    );
}

#[test]
fn deo_sgd_x8_on_the_25_mode_target_swaps_identically_with_two_chains_per_rank() {
    let mut settings = SamplerSettings::named("deo-sgd");
    settings.lr = 0.003;
    settings.replica.lr_max = 0.6;
    settings.replica.target_rate = 0.4;
    settings.replica.buffer = 4.0;
    let noise = NoiseModel {
        energy: Noise::gaussian(2.0),
        gradient: Noise::gaussian(2.0),
    };
    let s = Scenario {
        target: by_name("twenty-five-mode")
            .unwrap()
            .with_noise(noise)
            .unwrap(),
        settings,
        chains: 8,
        steps: 3000,
        seed: 5,
    };
    s.check(4, true);
    s.check(3, true);
    let (_, accepts, trips, _) = s.run(Placement::local(8)).replica.unwrap();
    assert!(
        accepts.iter().sum::<u64>() > 100 && trips > 0,
        "{accepts:?} {trips}"
    );
}

#[test]
fn icsgld_x4_shares_one_theta_over_ranks() {
    let mut settings = SamplerSettings::named("icsgld");
    settings.lr = 3e-3;
    settings.contour.du = 0.125;
    settings.contour.u_min = Some(-5.0);
    settings.contour.omega_max = 3e-3;
    let s = Scenario {
        target: by_name("twenty-five-mode").unwrap(),
        settings,
        chains: 4,
        steps: 3000,
        seed: 3,
    };
    s.check(4, true);
    s.check(2, true);
}

#[test]
fn independent_chains_exchange_nothing_and_move_as_in_one_process() {
    let s = Scenario {
        target: by_name("nine-mode").unwrap(),
        settings: SamplerSettings {
            lr: 1e-3,
            ..SamplerSettings::named("sgld")
        },
        chains: 5,
        steps: 500,
        seed: 9,
    };
    s.check(2, false);
}

#[test]
fn velocities_cross_ranks_at_swaps_as_in_one_process() {
    // reSGHMC x 4 on the 1-D mixture (Metropolis swaps) and DEO*-mSGD x 4 on the 25-mode
    // target (deterministic swaps, adaptive ladder): an accepted swap between chains of two
    // ranks sends each chain's velocity to the other rank, shifted by the velocity lag. Over 4
    // ranks every swap crosses; over 2 ranks the middle pair does (or not, as the replicas
    // move), the outer pairs swap within a rank.
    let mut resghmc = SamplerSettings::named("resghmc");
    resghmc.lr = 0.01;
    resghmc.replica.temperatures = vec![1.0, 2.0, 4.0, 10.0];
    resghmc.replica.initial_variance = 1.0;
    let mut deo = SamplerSettings::named("deo-msgd");
    deo.lr = 0.003;
    deo.replica.lr_max = 0.3;
    deo.replica.target_rate = 0.4;
    deo.replica.buffer = 4.0;
    for (settings, target) in [(resghmc, "mixture-resgld-1"), (deo, "twenty-five-mode")] {
        let s = Scenario {
            target: by_name(target).unwrap(),
            settings,
            chains: 4,
            steps: 3000,
            seed: 13,
        };
        s.check(4, true);
        s.check(2, true);
        let single = s.run(Placement::local(4));
        let (_, accepts, _, _) = single.replica.unwrap();
        assert!(accepts.iter().all(|a| *a > 20), "{target}: {accepts:?}");
        assert!(
            single.kernel[0].iter().any(|v| *v != 0.0),
            "{target}: no velocity"
        );
    }
}

#[test]
fn mismatched_parts_are_refused() {
    let target = by_name("normal").unwrap();
    let mut groups = ThreadGroup::new(2);
    let g = Arc::new(groups.pop().unwrap());
    let placement = Placement::new(g, ChainLayout::even(2, 2).unwrap()).unwrap();
    // Two chains given to a rank whose part is one.
    let sgld = SamplerSettings::named("sgld")
        .spec(&BuildContext::steps(10))
        .unwrap();
    let ens = HostEnsemble::new(target.clone(), &[vec![0.0], vec![1.0]], 1).unwrap();
    let err = sgld
        .clone()
        .build_placed(ens, 1, placement.clone())
        .err()
        .unwrap();
    assert!(err.to_string().contains("rank 1 holds 2 chains"), "{err}");
    // A one-process checkpoint restored into a rank's part.
    let ens = HostEnsemble::new(target.clone(), &[vec![0.0], vec![1.0]], 1).unwrap();
    let whole = sgld.clone().build(ens, 1).unwrap().state().unwrap();
    let ens = HostEnsemble::new_part(target, &[vec![1.0]], 1, 1).unwrap();
    let mut part = sgld.build_placed(ens, 1, placement).unwrap();
    let err = part.restore(whole).unwrap_err();
    assert!(err.to_string().contains("chains 1..2 of 2"), "{err}");
}

#[test]
fn swaps_are_scheduled_from_the_same_stream_on_every_rank_with_seo() {
    // SEO draws the parity of every step from the swap stream: the stream must stay in step.
    let mut settings = SamplerSettings::named("resgld");
    settings.lr = 0.01;
    settings.replica.temperatures = vec![1.0, 1.5, 2.2, 3.3, 5.0];
    settings.replica.scheme = Some(SwapScheme::StochasticEvenOdd);
    let s = Scenario {
        target: by_name("bimodal").unwrap(),
        settings,
        chains: 5,
        steps: 1000,
        seed: 2,
    };
    s.check(3, true);
}

#[test]
fn a_checkpointed_toy_run_stops_and_resumes_to_the_uninterrupted_outputs() {
    let dir = tmp("toy-resume");
    let (one, two) = (dir.join("one"), dir.join("two"));
    let (one_s, two_s) = (one.to_string_lossy(), two.to_string_lossy());
    let run = [
        "toy",
        "--preset",
        "twenty-five-mode-icsgld",
        "--iters",
        "6000",
        "--quiet",
    ];
    let ok = |args: &[&str]| {
        let out = sgmcmc(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    ok(&[&run[..], &["--out", &one_s]].concat());
    let printed = ok(&[
        &run[..],
        &[
            "--checkpoint-every",
            "1000",
            "--stop-after",
            "2500",
            "--out",
            &two_s,
        ],
    ]
    .concat());
    assert!(
        printed.contains("continue with `sgmcmc toy --resume"),
        "{printed}"
    );
    assert!(!two.join("summary.json").exists());
    // A flag that would change the run is refused beside --resume.
    let out = sgmcmc(&["toy", "--resume", &two_s, "--iters", "10"]);
    assert_eq!(out.status.code(), Some(2));
    ok(&["toy", "--resume", &two_s, "--stop-after", "4000", "--quiet"]);
    ok(&["toy", "--resume", &two_s, "--quiet"]);
    for f in [
        "metrics.csv",
        "samples.csv",
        "theta_trace.csv",
        "config.toml",
    ] {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f} differs after two resumes"
        );
    }
    let strip = |p: &std::path::Path| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("summary.json")).unwrap())
                .unwrap();
        for k in ["wall_seconds", "steps_per_second", "chain_steps_per_second"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(strip(&one), strip(&two));
    std::fs::remove_dir_all(&dir).unwrap();
}
