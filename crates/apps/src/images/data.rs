//! The data of one `sgmcmc images` run: training, test and out-of-distribution images read
//! from the data folder (`fashion-mnist/`, `mnist/`, `cifar-10-batches-bin/`,
//! `cifar-100-binary/`, `svhn/`), the per-channel normalisation fitted on the training images,
//! and the augmented training batches.

use std::path::Path;
use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::{Device, Tensor};
use sgmcmc_data::augment::{self, Augment};
use sgmcmc_data::cifar::{
    CIFAR10_SUBDIR, CIFAR10_TEST, CIFAR10_TRAIN, CIFAR100_FILES, CIFAR100_SUBDIR, Cifar10, Cifar100,
};
use sgmcmc_data::datasets::ChannelBatcher;
use sgmcmc_data::svhn::Svhn;
use sgmcmc_data::{DataError, ImageData, Images};
use sgmcmc_engine::{IndexBatches, RunError};
use sgmcmc_models::Targets;
use sgmcmc_models::posterior::Batch;

use sgmcmc_engine::experiment::{DataDigest, DataRecord, RunData};

use crate::error::AppError;
use crate::images::config::ImagesConfig;

/// The images of a run.
#[derive(Clone, Debug)]
pub struct ImagesData {
    /// Training images.
    pub train: Images,
    /// Test images.
    pub test: Images,
    /// The first test images, the chains' accuracy curves score when they collect nothing.
    pub curve: Images,
    /// Out-of-distribution images (empty when the config names none).
    pub ood: Images,
    /// Per-channel normalisation (training statistics).
    pub normaliser: ChannelBatcher,
    /// What was read.
    pub source: DataRecord,
}

/// The first `limit` images of `set` (0 = all).
fn first(set: Images, limit: usize) -> Images {
    if limit == 0 || limit >= set.len() {
        return set;
    }
    let p = set.image_len();
    Images {
        pixels: set.pixels[..limit * p].to_vec(),
        labels: set.labels[..limit].to_vec(),
        ..set
    }
}

/// Training and test images of `name` under `dir`: in `dir/name` (where `sgmcmc data fetch`
/// puts them) or, for CIFAR, in `dir` itself; a failure names the set and how to fetch it.
fn read(dir: &Path, name: &str) -> Result<(Images, Images), AppError> {
    // `DIR/NAME`, where `sgmcmc data fetch` writes it, or for CIFAR `DIR` itself when it holds
    // the set's files (as its archive unpacks); with neither, the error names `DIR/NAME`.
    let own = dir.join(name);
    let flat = name.starts_with("cifar") && !own.is_dir() && holds_cifar(dir, name);
    let folder = if flat { dir.to_path_buf() } else { own };
    let read = || -> Result<(Images, Images), DataError> {
        Ok(match name {
            "mnist" | "fashion-mnist" => {
                let d = ImageData::load(&folder)?;
                (Images::from(d.train), Images::from(d.test))
            }
            "cifar10" => {
                let d = Cifar10::load(&folder)?;
                (d.train, d.test)
            }
            "cifar100" => {
                let d = Cifar100::load(&folder)?;
                (d.train.fine, d.test.fine)
            }
            _ => {
                let d = Svhn::load(&folder)?;
                (d.train, d.test)
            }
        })
    };
    match name {
        "synthetic" => Ok((synthetic(64, 1), synthetic(32, 2))),
        "mnist" | "fashion-mnist" | "cifar10" | "cifar100" | "svhn" => read().map_err(|e| {
            AppError::Input(format!(
                "{name}: {e} (get it with `sgmcmc data fetch {name} --to {}`)",
                dir.display()
            ))
        }),
        other => Err(AppError::Usage(format!("unknown dataset `{other}`"))),
    }
}

/// Whether `dir` holds a file of the CIFAR set `name` (`cifar10`, `cifar100`) or the folder its
/// archive unpacks to.
fn holds_cifar(dir: &Path, name: &str) -> bool {
    let names = if name == "cifar10" {
        [&CIFAR10_TRAIN[..], &[CIFAR10_TEST, CIFAR10_SUBDIR]].concat()
    } else {
        [&CIFAR100_FILES[..], &[CIFAR100_SUBDIR]].concat()
    };
    names.iter().any(|n| dir.join(n).exists())
}

/// `n` random 3x12x12 images of 10 classes: class `c` sets the three channels' brightness to
/// levels `CODES[c]` of 0, 80, 160 (plus uniform noise in 0..64), so a network with global
/// average pooling tells the classes apart from the channel means: a tiny learnable set for
/// smoke runs of the whole pipeline (`--dataset synthetic`).
pub fn synthetic(n: usize, seed: u64) -> Images {
    const CODES: [[u8; 3]; 10] = [
        [0, 0, 0],
        [2, 0, 0],
        [0, 2, 0],
        [0, 0, 2],
        [2, 2, 0],
        [2, 0, 2],
        [0, 2, 2],
        [1, 1, 1],
        [2, 2, 2],
        [1, 0, 2],
    ];
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 58) as u8
    };
    let (c, side) = (3, 12);
    let mut pixels = Vec::with_capacity(n * c * side * side);
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    for &y in &labels {
        for level in CODES[usize::from(y)] {
            for _ in 0..side * side {
                pixels.push(80 * level + next());
            }
        }
    }
    Images {
        pixels,
        labels,
        channels: c,
        rows: side,
        cols: side,
        classes: 10,
    }
}

impl RunData for ImagesData {
    type Settings = ImagesConfig;
    type Error = AppError;

    /// Reads the data `config` asks for from `dir`.
    fn load(dir: &Path, config: &ImagesConfig) -> Result<Self, AppError> {
        let (train, test) = read(dir, &config.dataset)?;
        let train = first(train, config.train_limit);
        let test = first(test, config.test_limit);
        let ood = if config.ood.is_empty() {
            Images {
                pixels: Vec::new(),
                labels: Vec::new(),
                ..test.clone()
            }
        } else {
            let (_, ood_test) = read(dir, &config.ood)?;
            first(ood_test, config.ood_limit)
        };
        if !ood.is_empty()
            && (ood.channels, ood.rows, ood.cols) != (train.channels, train.rows, train.cols)
        {
            return Err(AppError::Input(format!(
                "out-of-distribution set `{}` has {}x{}x{} images, the training set {}x{}x{}",
                config.ood,
                ood.channels,
                ood.rows,
                ood.cols,
                train.channels,
                train.rows,
                train.cols
            )));
        }
        sgmcmc_engine::limits::check_batch_fits(train.len(), config.batch)?;
        let mut digest = DataDigest::default();
        for set in [&train, &test, &ood] {
            digest
                .counts(&[set.channels, set.rows, set.cols])
                .bytes(&set.pixels)
                .bytes(&set.labels);
        }
        let source = if config.dataset == "synthetic" {
            DataRecord {
                dir: dir.to_path_buf(),
                sha256: digest.finish(),
            }
        } else {
            DataRecord::new(dir, digest)?
        };
        Ok(Self {
            curve: first(test.clone(), config.curve_limit),
            normaliser: ChannelBatcher::fit(&train),
            train,
            test,
            ood,
            source,
        })
    }

    fn source(&self) -> &DataRecord {
        &self.source
    }
}

impl ImagesData {
    /// Classes of the training set.
    pub fn classes(&self) -> usize {
        usize::from(self.train.classes)
    }
}

/// Training images batched for the sampler: normalised per channel and augmented, each image
/// with the draw keyed by (seed, epoch key, image index).
#[derive(Clone)]
pub struct TrainBatcher {
    train: Arc<Images>,
    normaliser: ChannelBatcher,
    augment: Augment,
    seed: u64,
    batch: usize,
    device: Device,
}

/// Epoch keys of the augmentation outside the epoch stream (far above any epoch a run reaches).
const FULL_PASS_EPOCH: u64 = u64::MAX - 1;
const FRESH_EPOCH: u64 = u64::MAX / 2;

impl TrainBatcher {
    /// Batches of `config.batch` training images of `data` on `device`.
    pub fn new(config: &ImagesConfig, data: &ImagesData, device: &Device) -> Self {
        Self {
            train: Arc::new(data.train.clone()),
            normaliser: data.normaliser.clone(),
            augment: config.augment,
            seed: config.seed,
            batch: config.batch,
            device: device.clone(),
        }
    }

    /// The images `indices`, augmented with the draws of `epoch_key`.
    pub fn batch_of(
        &self,
        indices: &[usize],
        epoch_key: u64,
    ) -> Result<Batch<Tensor<4>>, RunError> {
        let mut items = Vec::with_capacity(indices.len());
        for &i in indices {
            let item = self
                .train
                .get(i)
                .map_err(|e| RunError::Batch(format!("image {i}: {e}")))?;
            items.push(
                self.augment
                    .apply(&item, augment::key(self.seed, epoch_key, i)),
            );
        }
        let (x, y) = self.normaliser.batch(items, &self.device);
        Ok(Batch {
            x,
            y: Targets::Class(y),
        })
    }

    /// The `j`-th fresh minibatch at step `k` (variance refreshes of replica exchange): images
    /// drawn without replacement and augmented, both keyed by `(k, j)`.
    pub fn fresh(&self, k: u64, j: usize) -> Result<Batch<Tensor<4>>, RunError> {
        let key = augment::key(self.seed ^ 0xF8E5_0000, k, j);
        let idx = augment::sample_indices(self.train.len(), self.batch, key);
        self.batch_of(&idx, FRESH_EPOCH.wrapping_add(k))
    }

    /// Batch `i` of one pass over the training images in order (`None` past the last whole
    /// batch), augmented with one fixed draw per image: the snapshots' "full-data" energies of
    /// variance-reduced replica exchange, on the augmented distribution the minibatches come
    /// from.
    pub fn full_pass(&self, i: usize) -> Result<Option<Batch<Tensor<4>>>, RunError> {
        let start = i * self.batch;
        if start + self.batch > self.train.len() {
            return Ok(None);
        }
        let idx: Vec<usize> = (start..start + self.batch).collect();
        self.batch_of(&idx, FULL_PASS_EPOCH).map(Some)
    }
}

/// The training batches: epoch `e` visits the images in the order `epoch_order(N, seed, e)`,
/// each image augmented with the draw keyed by (seed, epoch, image index), normalised per
/// channel ([`IndexBatches`] with [`TrainBatcher::batch_of`] as its stage). A pure function of
/// (epoch, batch), so a resumed run sees the same batches.
pub fn augmented_batches(
    config: &ImagesConfig,
    data: &ImagesData,
    device: &Device,
) -> Result<AugmentedBatches, AppError> {
    let batcher = TrainBatcher::new(config, data, device);
    let stage: AugmentStage = Box::new(move |epoch, idx| batcher.batch_of(idx, epoch));
    Ok(IndexBatches::new(
        data.train.len(),
        config.batch,
        config.seed,
        stage,
    )?)
}

/// The stage of [`augmented_batches`]: the augmented, normalised batch of the training images
/// `idx` in an epoch.
pub type AugmentStage = Box<dyn FnMut(u64, &[usize]) -> Result<Batch<Tensor<4>>, RunError> + Send>;

/// The training batches of a run ([`augmented_batches`]).
pub type AugmentedBatches = IndexBatches<AugmentStage>;
