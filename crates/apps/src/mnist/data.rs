//! The images of one `sgmcmc mnist` run: training and test digits of the chosen classes, the
//! held-out digits (the other classes of the test set) and, when present, Fashion-MNIST as a
//! second out-of-distribution set; minibatches as tensors.

use std::path::Path;

use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_data::mnist::{MNIST_MEAN, MNIST_STD};
use sgmcmc_data::{ImageData, ImageSet};
use sgmcmc_models::Targets;
use sgmcmc_models::posterior::Batch;

use sgmcmc_engine::experiment::{DataDigest, DataRecord, RunData};

use crate::error::AppError;
use crate::mnist::config::MnistConfig;

/// The run's image sets.
pub struct MnistData {
    /// Training images of the classes (labels are class indices).
    pub train: ImageSet,
    /// Test images of the classes.
    pub test: ImageSet,
    /// Test images of the other digits (out of distribution).
    pub heldout: ImageSet,
    /// Fashion-MNIST test images (out of distribution), if the folder exists.
    pub fashion: Option<ImageSet>,
    /// The folder read and the digest of every image set above.
    pub source: DataRecord,
}

fn first(set: &ImageSet, n: Option<usize>) -> ImageSet {
    let n = n.unwrap_or(set.len()).min(set.len());
    let px = set.pixels();
    ImageSet {
        images: set.images[..n * px].to_vec(),
        labels: set.labels[..n].to_vec(),
        rows: set.rows,
        cols: set.cols,
    }
}

impl RunData for MnistData {
    type Settings = MnistConfig;
    type Error = AppError;

    /// Loads `DIR/mnist` (required) and `DIR/fashion-mnist` (optional) for `config`, with the
    /// record of what was read.
    fn load(data_dir: &Path, config: &MnistConfig) -> Result<Self, AppError> {
        let mnist = ImageData::load(&data_dir.join("mnist"))?;
        let mut train = mnist.train.filter_classes(&config.classes)?;
        if let Some(n) = config.train_per_class {
            train = train.per_class(n);
        }
        let test = mnist.test.filter_classes(&config.classes)?;
        let others: Vec<u8> = (0..10).filter(|c| !config.classes.contains(c)).collect();
        let heldout = if others.is_empty() {
            first(&test, Some(0))
        } else {
            first(&mnist.test.filter_classes(&others)?, config.heldout_limit)
        };
        let fashion_dir = data_dir.join("fashion-mnist");
        let fashion = if fashion_dir.exists() {
            Some(first(
                &ImageData::load(&fashion_dir)?.test,
                config.heldout_limit,
            ))
        } else {
            None
        };
        if train.rows != train.cols || train.rows < 16 {
            return Err(AppError::Input(format!(
                "the CNN needs square images of side >= 16 (got {}x{})",
                train.rows, train.cols
            )));
        }
        sgmcmc_engine::limits::check_batch_fits(train.len(), config.batch)?;
        let mut digest = DataDigest::default();
        for set in [&train, &test, &heldout].into_iter().chain(&fashion) {
            digest.images(set);
        }
        Ok(Self {
            source: DataRecord::new(data_dir, digest)?,
            train,
            test,
            heldout,
            fashion,
        })
    }

    fn source(&self) -> &DataRecord {
        &self.source
    }
}

/// Images `idx` of `set` as a normalised `[n, 1, rows, cols]` tensor.
pub fn images(set: &ImageSet, idx: &[usize], device: &Device) -> Tensor<4> {
    let x = set.normalized(idx, MNIST_MEAN, MNIST_STD);
    Tensor::from_data(
        TensorData::new(x, [idx.len(), 1, set.rows, set.cols]),
        device,
    )
}

/// The minibatch `idx` of `set` (images and class labels).
pub fn batch(set: &ImageSet, idx: &[usize], device: &Device) -> Batch<Tensor<4>> {
    let y = Tensor::<1, Int>::from_data(TensorData::new(set.labels_of(idx), [idx.len()]), device);
    Batch {
        x: images(set, idx, device),
        y: Targets::Class(y),
    }
}
