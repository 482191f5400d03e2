//! Load the posterior `icsgld_regression` saved and predict with its weighted model average,
//! without sampling again.
//!
//! `cargo run --release --example predict_saved` (after `icsgld_regression`).

#[path = "common/mod.rs"]
mod common;

use common::{Net, XyBatcher, data, predict, rmse};
use sgmcmc::burn::data::dataloader::batcher::Batcher;
use sgmcmc::burn::data::dataset::Dataset;
use sgmcmc::burn::tensor::Device;
use sgmcmc::engine::SavedPosterior;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::flex();
    let dir = std::path::Path::new("target/icsgld-regression/samples");
    let saved = SavedPosterior::open(dir)
        .map_err(|e| format!("{e} (run `cargo run --example icsgld_regression` first)"))?;
    let test = XyBatcher.batch(data(100, 2).iter().collect::<Result<_, _>>()?, &device);
    // Any module of the same structure receives the saved values.
    let average = saved.average(&Net::new(&device), |net| predict(net, &test))?;
    let mean = average.mean().ok_or("every weight is 0")?;
    println!(
        "{} saved networks ({:.1} effective): test RMSE {:.4}; at x = {:.2} the average predicts {:.3}",
        saved.len(),
        average.effective_models(),
        rmse(&mean, &test),
        test.0.clone().slice(0..1).into_scalar::<f32>(),
        mean[0]
    );
    Ok(())
}
