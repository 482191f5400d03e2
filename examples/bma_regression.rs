//! Sample the posterior of your own burn network with SGLD and average its predictions.
//!
//! `cargo run --release --example bma_regression`: a 1-50-50-1 tanh MLP on 200 noisy points,
//! 400 epochs of batches of 20, a model kept every 20 steps after the first half.

#[path = "common/mod.rs"]
mod common;

use common::{Net, XyBatcher, data, posterior, predict, rmse};
use sgmcmc::burn::data::dataloader::batcher::Batcher;
use sgmcmc::burn::data::dataset::Dataset;
use sgmcmc::burn::tensor::Device;
use sgmcmc::engine::observers::{ModelAverage, ProgressReport};
use sgmcmc::engine::{BatchSource, DatasetBatches, Run, init};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};

/// Test RMSE of the model average and of the last kept model.
pub fn run(show_progress: bool) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let device = Device::flex().autodiff();
    let (train, test) = (data(200, 1), data(100, 2));
    let test = XyBatcher.batch(test.iter().collect::<Result<_, _>>()?, &device);
    let mut batches = DatasetBatches::new(train, XyBatcher, 20, 7, &device)?;
    let epochs = 400;
    let steps = epochs * batches.batches_per_epoch().unwrap_or(1);
    // Full-data scale: lr 1e-5 is a mean-loss step of 2e-3 over 200 points.
    let sgld = SamplerSettings {
        lr: 1e-5,
        ..SamplerSettings::named("sgld")
    };
    let nets = init::chains(&device, 7, 1, || Net::new(&device));
    let chains = ModuleEnsemble::new(posterior(200), nets, 7)?;
    let mut sampler = sgld.spec(&BuildContext::steps(steps))?.build(chains, 7)?;
    let mut bma = ModelAverage::new(|net: &Net| predict(net, &test));
    let bar = indicatif::ProgressBar::new(steps);
    let mut progress = ProgressReport::new(|done, _| {
        if show_progress {
            bar.set_position(done)
        }
    });
    Run::epochs(epochs)
        .burn_in(steps / 2)
        .thin(20)
        .observe(&mut bma)
        .observe(&mut progress)
        .run(&mut sampler, &mut batches)?;
    bar.finish_and_clear();
    let last = rmse(bma.last().ok_or("no model kept")?, &test);
    Ok((rmse(&bma.mean().ok_or("no weight")?, &test), last))
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (average, last) = run(true)?;
    println!("test RMSE: model average {average:.4}, last sample {last:.4}");
    Ok(())
}
