//! Your own classifier, end to end: a small CNN written as an ordinary burn module, sampled by
//! SGHMC and by cyclical SGHMC with 2 chains each on the handwritten digits, the Bayesian model
//! average scored against the last sample (accuracy, NLL, Brier, ECE, entropy, mutual
//! information), the kept networks saved as safetensors files, loaded back and used to predict.
//!
//! `cargo run --release --example classifier` (writes `target/classifier/`). The digits come
//! from `$SGMCMC_DATA_DIR/digits` (else `../shared/datasets/digits`); without them the example
//! makes learnable synthetic digits and says so.

#[path = "common/digits.rs"]
mod digits;

use std::path::Path;

use sgmcmc::burn::module::Module;
use sgmcmc::burn::nn::conv::Conv2dConfig;
use sgmcmc::burn::nn::pool::MaxPool2dConfig;
use sgmcmc::burn::nn::{LinearConfig, PaddingConfig2d};
use sgmcmc::burn::tensor::{Device, Tensor, activation};
use sgmcmc::engine::observers::{ClassifierAverage, ClassifierScores, SampleFormat, SampleSaver};
use sgmcmc::engine::safetensors::Parameters;
use sgmcmc::engine::{BatchSource, Run, SavedPosterior, Shuffle, TensorBatches, init};
use sgmcmc::models::ModelPosterior;
use sgmcmc::nn::{Conv2d, Linear, MaxPool2d, categorical, probabilities};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
use sgmcmc::samplers::rng::with_device_seed;

use digits::{digits, reload_difference, tensors};

/// The network: conv 3x3 (16 channels), ReLU, 2x2 max pool, dense to 10 classes; burn's
/// layers as `sgmcmc::nn` wraps them (one fast operation each when training on flex).
#[derive(Module, Debug)]
pub struct Cnn {
    conv: Conv2d,
    pool: MaxPool2d,
    out: Linear,
}

impl Cnn {
    pub fn new(device: &Device) -> Self {
        Self {
            conv: Conv2dConfig::new([1, 16], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
                .into(),
            pool: MaxPool2dConfig::new([2, 2])
                .with_strides([2, 2])
                .init()
                .into(),
            out: LinearConfig::new(16 * 4 * 4, 10).init(device).into(),
        }
    }

    /// Logits `[n, 10]` of images `[n, 1, 8, 8]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = self.pool.forward(activation::relu(self.conv.forward(x)));
        self.out.forward(h.flatten(1, 3))
    }
}

/// Class probabilities of `net` on the images `x`, `[n, 10]` row-major.
fn predict(net: &Cnn, x: &Tensor<4>) -> Result<Vec<f64>, String> {
    probabilities(net.valid().forward(x.clone().inner()))
}

/// What one sampler gave: the model average's scores, the last sample's, and the largest
/// difference between the run's averaged probabilities and those of the saved posterior.
pub struct Outcome {
    pub sampler: &'static str,
    pub average: ClassifierScores,
    pub last: ClassifierScores,
    pub reloaded_difference: f64,
}

/// Samples with SGHMC and cyclical SGHMC, 2 chains each, 40 epochs of batches of 64.
pub fn run() -> Result<Vec<Outcome>, Box<dyn std::error::Error>> {
    let device = Device::flex().autodiff();
    let (train, test) = digits(Path::new("target/classifier"))?.split(0.2, 0)?;
    let (x, y) = tensors(&train, &device);
    let (x_test, _) = tensors(&test, &device);
    let n = train.len();
    let mut outcomes = Vec::new();
    for sampler in ["sghmc", "cycsghmc"] {
        let mut batches = TensorBatches::new(x.clone(), y.clone(), 64, 7, Shuffle::PerEpoch)?;
        let epochs = 40;
        let steps = epochs * batches.batches_per_epoch().unwrap_or(1);
        // ANCHOR: sampling
        // The step size of the mean loss (lr = 0.05 / N on the energy, the sum over the data).
        let mut settings = SamplerSettings::named(sampler).mean_loss(0.05, n);
        // Cyclical: 4 cosine cycles of 10 epochs, the second half of each sampled.
        settings.cyclical.cycles = 4;
        let nets = init::chains(&device, 7, 2, || Cnn::new(&device));
        let likelihood = categorical(|net: &Cnn, x: &Tensor<4>| net.forward(x.clone()));
        let target = ModelPosterior::new(likelihood, n);
        let chains = ModuleEnsemble::new(target, nets, 7)?;
        let mut s = settings
            .spec(&BuildContext::steps(steps))?
            .build(chains, 7)?;
        let mut bma = ClassifierAverage::new(10, |net: &Cnn| predict(net, &x_test));
        let dir = Path::new("target/classifier").join(sampler);
        // A reused folder would keep an earlier run's samples beside this one's.
        let _ = std::fs::remove_dir_all(&dir);
        // safetensors files: numpy and PyTorch read them too (`scripts/read_safetensors.py`).
        let mut saver = SampleSaver::new(&dir).format(SampleFormat::Safetensors(Parameters::All));
        Run::epochs(epochs)
            .burn_in(steps / 2)
            .thin(25)
            .observe(&mut bma)
            .observe(&mut saver)
            .run(&mut s, &mut batches)?;
        let saved = SavedPosterior::open(&dir)?;
        // ANCHOR_END: sampling
        // The template is drawn under the lock on burn's generator (as every draw here).
        let template = with_device_seed(&device, 0, || Cnn::new(&device.clone().inner()));
        let again = saved.average(&template, |net| predict(net, &x_test))?;
        let reloaded_difference = reload_difference(bma.probabilities(), again.mean())?;
        outcomes.push(Outcome {
            sampler,
            average: bma.scores(&test.labels)?,
            last: bma.last_scores(&test.labels)?,
            reloaded_difference,
        });
    }
    Ok(outcomes)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let outcomes = run()?;
    println!(
        "{:<9} {:<8} {:>6} {:>7} {:>6} {:>6} {:>8} {:>6}",
        "sampler", "", "acc", "nll", "brier", "ece", "entropy", "MI"
    );
    for o in outcomes {
        for (what, s) in [("average", &o.average), ("last", &o.last)] {
            println!(
                "{:<9} {what:<8} {:>6.4} {:>7.4} {:>6.4} {:>6.4} {:>8.4} {:>6.4}",
                o.sampler, s.accuracy, s.nll, s.brier, s.ece, s.entropy, s.mutual_information
            );
        }
        println!(
            "{:<9} saved posterior reloaded: largest probability difference {:.1e}",
            o.sampler, o.reloaded_difference
        );
    }
    Ok(())
}
