//! `sgmcmc bench --only input`: the input pipeline's share of an images step, and what
//! preparing batches ahead ([`sgmcmc_engine::Prefetch`]) gives back.
//!
//! The training batches of `sgmcmc images` at the CIFAR shape (3x32x32 images, the papers'
//! crops after 4-pixel padding and horizontal flips, per-channel normalisation, the upload),
//! batch: the first `--batches` size, over random images; the step: ResNet20 SGHMC on
//! `--device`. Figures: batches made per second alone, steps per second with the batch made
//! in the step's thread and with it prepared on a background thread (paired, interleaved),
//! the pipeline's share of a step (`step rate / batch rate`) and the step-time ratio.

use burn::tensor::{Device, Tensor};
use sgmcmc_data::Images;
use sgmcmc_data::augment::Augment;
use sgmcmc_data::datasets::ChannelBatcher;
use sgmcmc_engine::{BatchSource, Prefetch};
use sgmcmc_models::posterior::Batch;
use sgmcmc_samplers::sampler::Sampler;

use crate::gpu::warm_up;
use crate::{BenchArgs, Figure, Step, paired, rate, resnet_sampler};
use sgmcmc_apps::AppError;
use sgmcmc_apps::images::config::ImagesConfig;
use sgmcmc_apps::images::data::{ImagesData, augmented_batches};
use sgmcmc_engine::experiment::DataRecord;

/// `n` random 3x32x32 images of 10 classes (a fixed xorshift stream).
fn random_images(n: usize) -> Images {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let pixels = (0..n * 3 * 32 * 32)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect();
    Images {
        pixels,
        labels: (0..n).map(|i| (i % 10) as u8).collect(),
        channels: 3,
        rows: 32,
        cols: 32,
        classes: 10,
    }
}

/// Steps of `sampler` over the batches of `source` in a run's order.
fn stepper<'a, S, B>(sampler: &'a mut S, source: &'a mut B, per_epoch: u64) -> Step<'a>
where
    S: Sampler<Batch = Batch<Tensor<4>>>,
    B: BatchSource<Batch = Batch<Tensor<4>>>,
{
    let mut k = 0u64;
    Box::new(move || {
        let batch = source.batch(k / per_epoch, k % per_epoch)?;
        k += 1;
        sampler.step(&batch).map(|_| ()).map_err(Into::into)
    })
}

/// Runs the group on `device` (an autodiff device): the figures and the ratios.
pub fn measure(a: &BenchArgs, device: &Device) -> Result<(Vec<Figure>, Vec<Figure>), AppError> {
    let b = a.first_batch()?;
    let per_epoch = 16u64;
    let train = random_images(b * per_epoch as usize);
    let mut config = ImagesConfig::preset("gpu", "cifar10", "resnet20", "sghmc")?;
    config.batch = b;
    config.augment = Augment::PAPER;
    let data = ImagesData {
        normaliser: ChannelBatcher::fit(&train),
        test: random_images(10),
        curve: random_images(10),
        ood: random_images(0),
        train,
        source: DataRecord {
            dir: std::path::PathBuf::new(),
            sha256: String::new(),
        },
    };
    let label = format!("input/resnet20_3x32x32_b{b}");
    let on = a.on();
    let mut alone = augmented_batches(&config, &data, device)?;
    let mut k = 0u64;
    let batches = rate(a.seconds, || {
        alone.batch(k / per_epoch, k % per_epoch)?;
        k += 1;
        Ok(())
    })?;
    let chain = || -> Result<_, AppError> {
        let net = sgmcmc_models::ResNetConfig::resnet20(10)
            .init(device)
            .map_err(|e| AppError::Run(e.to_string()))?;
        resnet_sampler(net, 50_000)
    };
    let (mut s_plain, mut s_ahead) = (chain()?, chain()?);
    let mut plain = augmented_batches(&config, &data, device)?;
    let mut ahead = Prefetch::new(augmented_batches(&config, &data, device)?, 2)?;
    let mut fa = stepper(&mut s_plain, &mut plain, per_epoch);
    let mut fb = stepper(&mut s_ahead, &mut ahead, per_epoch);
    warm_up(a, &mut [&mut fa, &mut fb])?;
    let (r_plain, r_ahead, ratio) = paired(a.seconds, &mut fa, &mut fb)?;
    let figures = vec![
        Figure {
            name: format!("{label}/batches made (augment, normalise, upload) on {on}"),
            per_second: batches,
        },
        Figure {
            name: format!("{label}/sghmc steps, batch made in the step on {on}"),
            per_second: r_plain,
        },
        Figure {
            name: format!("{label}/sghmc steps, batches prefetched on {on}"),
            per_second: r_ahead,
        },
    ];
    let ratios = vec![
        Figure {
            name: format!("{label}/input share of a step (plain) on {on}"),
            per_second: r_plain / batches,
        },
        Figure {
            name: format!("{label}/prefetched:plain step time on {on}"),
            per_second: ratio,
        },
    ];
    Ok((figures, ratios))
}
