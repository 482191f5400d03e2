//! The same network sampled by ICSGLD with 4 interacting chains: an SGLD pilot run sets the
//! energy partition, the chains share theta, the model average is importance-weighted, the
//! kept networks are saved for `predict_saved` to load, and a trace of the energy and of one
//! prediction gives the run's R-hat, ESS and the Pareto k-hat of its weights, and is written
//! as a Zarr store that ArviZ opens.
//!
//! `cargo run --release --example icsgld_regression` (writes `target/icsgld-regression/`).

#[path = "common/mod.rs"]
mod common;

use common::{Net, XyBatcher, data, posterior, predict, rmse};
use sgmcmc::burn::data::dataloader::batcher::Batcher;
use sgmcmc::burn::data::dataset::Dataset;
use sgmcmc::burn::tensor::Device;
use sgmcmc::engine::observers::{ModelAverage, SampleSaver, Trace};
use sgmcmc::engine::{BatchSource, DatasetBatches, Kept, Run, init, tuning};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::flex().autodiff();
    let test = XyBatcher.batch(data(100, 2).iter().collect::<Result<_, _>>()?, &device);
    let mut batches = DatasetBatches::new(data(200, 1), XyBatcher, 20, 7, &device)?;
    let steps = 300 * batches.batches_per_epoch().unwrap_or(1);
    let chains = |p| {
        ModuleEnsemble::new(
            posterior(200),
            init::chains(&device, 7, p, || Net::new(&device)),
            7,
        )
    };
    // Pilot: 2000 SGLD steps; the partition spans the energies of its second half, with room above.
    let mut pilot = SamplerSettings {
        lr: 1e-5,
        ..SamplerSettings::named("sgld")
    }
    .spec(&BuildContext::steps(2000))?
    .build(chains(1)?, 7)?;
    let energies = tuning::pilot_energies(&mut pilot, &mut batches, 2000, 1000)?;
    let partition = tuning::partition(&energies, 50)?;
    let mut s = SamplerSettings {
        lr: 1e-5,
        ..SamplerSettings::named("icsgld")
    };
    (s.contour.u_min, s.contour.du, s.contour.bins) = (Some(partition.u_min), partition.du, 50);
    s.contour.zeta = 0.5;
    let mut sampler = s
        .spec(&BuildContext::steps(steps).chains(4))?
        .build(chains(4)?, 7)?;
    let mut bma = ModelAverage::new(|net: &Net| predict(net, &test));
    let mut saver = SampleSaver::new("target/icsgld-regression/samples");
    // Per chain and kept step: the energy, the log weight and the prediction at the first
    // test input.
    let mut trace = Trace::new(&["f(x_0)"], |kept: &Kept<Vec<Net>>, c| {
        Ok(vec![predict(&kept.points[kept.index(c)], &test)?[0]])
    });
    let report = Run::steps(steps)
        .burn_in(steps / 2)
        .thin(50)
        .observe(&mut bma)
        .observe(&mut saver)
        .observe(&mut trace)
        .run(&mut sampler, &mut batches)?;
    let theta = sampler.theta().ok_or("a contour sampler")?;
    println!(
        "ICSGLD x 4: {} steps at {:.0} steps/s; partition {} bins of {:.1} from {:.1}",
        report.steps,
        report.steps_per_second(),
        partition.m,
        partition.du,
        partition.u_min
    );
    println!(
        "test RMSE of the weighted model average {:.4} ({} models, {:.1} effective); max theta {:.3}",
        rmse(&bma.mean().ok_or("no weight")?, &test),
        bma.models(),
        bma.effective_models(),
        theta.theta().iter().copied().fold(0.0, f64::max)
    );
    let t = trace.summary();
    for (name, d) in &t.quantities {
        println!(
            "{name}: R-hat {:.3}, bulk ESS {:.0}, tail ESS {:.0} of {} draws x {} chains",
            d.rhat, d.ess_bulk, d.ess_tail, t.draws, t.chains
        );
    }
    println!(
        "Pareto k-hat of the importance weights: {:.2} (above 0.7 the average rests on a few models)",
        t.pareto_k_hat.unwrap_or(f64::NAN)
    );
    // For ArviZ: `az.from_zarr("target/icsgld-regression/trace.zarr")`
    // (`scripts/arviz_trace.py` prints its `az.summary`).
    trace.write_zarr(std::path::Path::new("target/icsgld-regression/trace.zarr"))?;
    println!(
        "saved {} networks to {}; the trace to target/icsgld-regression/trace.zarr",
        saver.rows().len(),
        saver.dir().display()
    );
    Ok(())
}
