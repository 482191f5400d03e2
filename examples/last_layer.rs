//! Uncertainty on a network someone already trained: sample its last layer.
//!
//! 1. A 64-128-64-10 ReLU network is trained to a point estimate with burn's Adam, 300 epochs
//!    (it overfits, as checkpoints trained to zero training loss do), and written as a
//!    safetensors file with burn's store: it stands in for a downloaded checkpoint.
//! 2. A fresh network loads those weights (`ModuleSnapshot::load_from`), and its backbone is
//!    frozen (`no_grad()`): burn computes no gradient for it and the optimizer leaves it alone.
//! 3. The head (64 x 10 weights and 10 biases) is sampled from its posterior under a Gaussian
//!    prior with the library's SG-MCMC optimizers in a plain burn loop: SGHMC at a constant
//!    learning rate, and cyclical SGHMC (Zhang et al. 2020) with 2 chains. Every kept head, and
//!    only the head, is written as a safetensors file.
//! 4. The Bayesian model average of the kept heads is scored against the point estimate
//!    (accuracy, NLL, ECE) on held-out digits and on the same digits under Gaussian pixel noise
//!    of sd 0.3, where the overfit point estimate is most overconfident.
//!
//! `cargo run --release --example last_layer` (writes `target/last-layer/`). The digits come from
//! `$SGMCMC_DATA_DIR/digits` (else `../shared/datasets/digits`); without them the example makes
//! learnable synthetic digits and says so.

#[path = "common/digits.rs"]
mod digits;

use std::path::Path;

use sgmcmc::burn::lr_scheduler::LrScheduler;
use sgmcmc::burn::module::Module;
use sgmcmc::burn::nn::LinearConfig;
use sgmcmc::burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use sgmcmc::burn::store::{ModuleSnapshot, SafetensorsStore};
use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor, TensorData, activation};
use sgmcmc::engine::SavedPosterior;
use sgmcmc::engine::observers::{
    ClassifierAverage, ClassifierScores, Keeper, SampleFormat, SampleSaver,
};
use sgmcmc::engine::safetensors::Parameters;
use sgmcmc::nn::{Linear, categorical_nll, probabilities};
use sgmcmc::samplers::control::Phase;
use sgmcmc::samplers::optim::SghmcConfig;
use sgmcmc::samplers::optim::schedule::{CyclicalLrSchedulerConfig, ScheduledLr};
use sgmcmc::samplers::rng::{epoch_order, with_device_seed};

use digits::{digits, reload_difference, tensors};

type Error = Box<dyn std::error::Error>;

/// The backbone: two ReLU layers, 64 -> 128 -> 64.
#[derive(Module, Debug)]
pub struct Backbone {
    l1: Linear,
    l2: Linear,
}

impl Backbone {
    /// Features `[n, 64]` of images `[n, 1, 8, 8]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = activation::relu(self.l1.forward(x.flatten(1, 3)));
        activation::relu(self.l2.forward(h))
    }
}

/// The network: backbone and a linear head to 10 classes.
#[derive(Module, Debug)]
pub struct Net {
    backbone: Backbone,
    head: Linear,
}

impl Net {
    pub fn new(device: &Device) -> Self {
        let l = |i, o| LinearConfig::new(i, o).init(device).into();
        Self {
            backbone: Backbone {
                l1: l(64, 128),
                l2: l(128, 64),
            },
            head: l(64, 10),
        }
    }

    /// Logits `[n, 10]` of images `[n, 1, 8, 8]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.head.forward(self.backbone.forward(x))
    }
}

/// The training images and labels, and the test images.
struct Data {
    x: Tensor<4>,
    y: Tensor<1, Int>,
    x_test: Tensor<4>,
    x_shift: Tensor<4>,
}

const BATCH: usize = 64;

/// One epoch of minibatch steps of the mean loss `L` (the batch's mean NLL) at learning rates
/// from `lr`; `after(net, phase)` sees the network after each step with that step's phase.
fn epoch(
    mut net: Net,
    data: &Data,
    optim: &mut ModuleOptimizer,
    lr: &mut dyn FnMut() -> (f64, Phase),
    (seed, e): (u64, u64),
    after: &mut dyn FnMut(&Net, Phase) -> Result<(), Error>,
) -> Result<Net, Error> {
    let n = data.y.dims()[0];
    let device = data.x.device();
    let order: Vec<i64> = epoch_order(n, seed, e).iter().map(|&i| i as i64).collect();
    for batch in order.chunks(BATCH) {
        let idx =
            Tensor::<1, Int>::from_data(TensorData::new(batch.to_vec(), [batch.len()]), &device);
        // ANCHOR: step
        let logits = net.forward(data.x.clone().select(0, idx.clone()));
        let loss =
            categorical_nll(logits, &data.y.clone().select(0, idx)).div_scalar(batch.len() as f64);
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        let (eta, phase) = lr();
        net = optim.step(eta, net, grads);
        after(&net, phase)?;
        // ANCHOR_END: step
    }
    Ok(net)
}

/// Class probabilities of `net` on the test images, `[n, 10]` row-major.
fn predict(net: &Net, x: &Tensor<4>) -> Result<Vec<f64>, String> {
    probabilities(net.valid().forward(x.clone().inner()))
}

/// Trains the point estimate with Adam and writes it to `file`.
fn pretrain(data: &Data, file: &Path) -> Result<(), Error> {
    let device = data.x.device();
    let mut net = with_device_seed(&device, 1, || Net::new(&device));
    let mut adam = AdamConfig::new().init();
    for e in 0..300 {
        net = epoch(
            net,
            data,
            &mut adam,
            &mut || (2e-3, Phase::Sampling),
            (1, e),
            &mut |_, _| Ok(()),
        )?;
    }
    net.save_into(&mut SafetensorsStore::from_file(file).overwrite(true))?;
    Ok(())
}

/// The pretrained network from `file` with its backbone frozen.
fn load(file: &Path, device: &Device) -> Result<Net, Error> {
    // A template whose values the file replaces, drawn under the workspace's lock on burn's
    // generator so that it cannot land between another thread's seed and its draws.
    let mut net = with_device_seed(device, 0, || Net::new(device));
    // ANCHOR: freeze
    net.load_from(&mut SafetensorsStore::from_file(file))?;
    net.backbone = net.backbone.no_grad();
    // ANCHOR_END: freeze
    Ok(net)
}

/// How one approach scores on the test digits, clean and under pixel noise.
pub struct Outcome {
    pub method: &'static str,
    pub clean: ClassifierScores,
    pub shifted: ClassifierScores,
    /// Heads averaged (and saved).
    pub kept: usize,
    /// The largest change of any backbone feature on the test images after sampling: 0 for a
    /// frozen backbone.
    pub backbone_change: f64,
    /// The largest difference between the averaged test probabilities of the run and those of
    /// the saved heads loaded back into the pretrained network.
    pub reloaded_difference: f64,
}

/// Standard deviation of the Gaussian pixel noise of the shifted test set (pixels in [0, 1]).
const SHIFT: f64 = 0.3;

/// Runs the example; `epochs` of head sampling per chain.
pub fn run(epochs: u64) -> Result<Vec<Outcome>, Error> {
    let out = Path::new("target/last-layer");
    let device = Device::flex().autodiff();
    let (train, test) = digits(out)?.split(0.2, 0)?;
    let (x, y) = tensors(&train, &device);
    let (x_test, _) = tensors(&test, &device);
    let noise = with_device_seed(&device, 99, || {
        Tensor::random(x_test.shape(), Distribution::Normal(0.0, SHIFT), &device)
    });
    let x_shift = x_test.clone() + noise;
    let data = Data {
        x,
        y,
        x_test,
        x_shift,
    };
    let n = train.len();
    std::fs::create_dir_all(out)?;
    let checkpoint = out.join("pretrained.safetensors");
    pretrain(&data, &checkpoint)?;

    let pretrained = load(&checkpoint, &device)?;
    let mut clean = ClassifierAverage::new(10, ());
    let mut noisy = ClassifierAverage::new(10, ());
    clean.add_log(0.0, &predict(&pretrained, &data.x_test)?)?;
    noisy.add_log(0.0, &predict(&pretrained, &data.x_shift)?)?;
    let mut outcomes = vec![Outcome {
        method: "point estimate",
        clean: clean.scores(&test.labels)?,
        shifted: noisy.scores(&test.labels)?,
        kept: 1,
        backbone_change: 0.0,
        reloaded_difference: 0.0,
    }];
    let features = |net: &Net| net.backbone.valid().forward(data.x_test.clone().inner());
    let before = features(&pretrained);

    let steps = epochs * n.div_ceil(BATCH) as u64;
    // The mean loss's learning rate; a unit Gaussian prior on the head (weight decay 1 / N).
    let (eta, wd) = (0.05, 1.0 / n as f64);
    for (method, chains) in [("SGHMC", 1), ("cSGHMC x 2", 2)] {
        let mut clean = ClassifierAverage::new(10, |net: &Net| predict(net, &data.x_test));
        let mut noisy = ClassifierAverage::new(10, |net: &Net| predict(net, &data.x_shift));
        // Only the parameters that were sampled (the head's): those that require gradients.
        let dir = out.join(method.replace(' ', ""));
        let mut saver =
            SampleSaver::new(&dir).format(SampleFormat::Safetensors(Parameters::Sampled));
        let mut backbone_change = 0.0f64;
        for chain in 0..chains {
            let seed = 10 + chain as u64;
            // ANCHOR: optimizer
            let mut optim = SghmcConfig::new(n)
                .with_momentum(0.9)
                .with_weight_decay(wd)
                .with_seed(seed)
                .init()?;
            // ANCHOR_END: optimizer
            // SGHMC: constant eta, the second half kept. cSGHMC: 4 cosine cycles from 2 eta,
            // the last quarter of each kept. Every 10th step of those.
            let (mut schedule, burn_in): (Option<ScheduledLr>, u64) = if chains > 1 {
                // ANCHOR: schedule
                let s = CyclicalLrSchedulerConfig::new(2.0 * eta, steps, 4)
                    .with_sampling_threshold(0.75)
                    .init()?;
                // ANCHOR_END: schedule
                (Some(s), 0)
            } else {
                (None, steps / 2)
            };
            let mut lr = || match schedule.as_mut() {
                Some(s) => {
                    let phase = s.phase();
                    (s.step(), phase)
                }
                None => (eta, Phase::Sampling),
            };
            // ANCHOR: keeper
            let mut keeper = Keeper::new(burn_in, 10, chain)?
                .to(&mut clean)
                .to(&mut noisy)
                .to(&mut saver);
            // ANCHOR_END: keeper
            let mut net = load(&checkpoint, &device)?;
            for e in 0..epochs {
                let mut after = |net: &Net, phase| Ok(keeper.after_step(net, phase).map(drop)?);
                net = epoch(net, &data, &mut optim, &mut lr, (seed, e), &mut after)?;
            }
            keeper.finish()?;
            let change = (features(&net) - before.clone()).abs().max();
            backbone_change = backbone_change.max(change.into_scalar::<f64>());
        }
        // The saved heads, loaded back into the pretrained network, predict as the run did.
        let saved = SavedPosterior::open(&dir)?;
        let again = saved.average(&pretrained, |net| predict(net, &data.x_test))?;
        let reloaded_difference = reload_difference(clean.probabilities(), again.mean())?;
        outcomes.push(Outcome {
            method,
            clean: clean.scores(&test.labels)?,
            shifted: noisy.scores(&test.labels)?,
            kept: saved.len(),
            backbone_change,
            reloaded_difference,
        });
    }
    Ok(outcomes)
}

#[allow(dead_code)]
fn main() -> Result<(), Error> {
    let outcomes = run(40)?;
    println!(
        "{:<15} {:>5} | {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} {:>7}",
        "test digits:", "heads", "acc", "nll", "ece", "noisy:", "acc", "nll", "ece"
    );
    for o in &outcomes {
        let (c, s) = (&o.clean, &o.shifted);
        println!(
            "{:<15} {:>5} | {:>7.4} {:>7.4} {:>7.4} | {:>7} {:>7.4} {:>7.4} {:>7.4}",
            o.method, o.kept, c.accuracy, c.nll, c.ece, "", s.accuracy, s.nll, s.ece
        );
    }
    for o in &outcomes[1..] {
        println!(
            "{}: the saved heads reloaded predict within {:.1e} of the run; the backbone moved \
             by {:.1e}",
            o.method, o.reloaded_difference, o.backbone_change
        );
    }
    Ok(())
}
