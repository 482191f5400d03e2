//! The readers' data as burn datasets ([`Dataset`]) with batchers ([`Batcher`]), so that any
//! of them feeds the engine's `DatasetBatches` (shuffled per epoch with the run's seed) or
//! burn's own data loader.
//!
//! | data | item | batcher | batch |
//! |---|---|---|---|
//! | [`ImageSet`] (MNIST, Fashion-MNIST) | [`ImageItem`] | [`ImageBatcher`] | `[n, 1, rows, cols]` normalised pixels, `[n]` labels |
//! | [`Images`] (CIFAR-10/100, SVHN; any channels) | [`ImageItem`] | [`ImageBatcher`] | `[n, channels, rows, cols]` normalised pixels, `[n]` labels |
//! | [`Digits`] | [`ClassItem`] | [`ClassBatcher`] | `[n, 64]` features in `[0, 1]`, `[n]` labels |
//! | [`SplitData`] (UCI) train / test | [`RowItem`] | [`RowBatcher`] | `[n, d]` standardized features, `[n, 1]` targets |

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, DatasetError};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::digits::Digits;
use crate::images::Images;
use crate::mnist::ImageSet;
use crate::uci::SplitData;

fn missing(index: usize, len: usize) -> DatasetError {
    DatasetError::new(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("item {index} of a data set of {len}"),
    ))
}

/// Batches images as `((p / 255 - mean[ch]) / std[ch])` per channel in
/// `[n, channels, rows, cols]` with their labels: the papers' per-channel normalisation
/// (`transforms.Normalize(mean, std)`), with the statistics of the training images
/// ([`ChannelBatcher::fit`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChannelBatcher {
    /// Per-channel pixel mean after scaling to `[0, 1]`.
    pub mean: Vec<f32>,
    /// Per-channel pixel standard deviation after scaling.
    pub std: Vec<f32>,
}

impl ChannelBatcher {
    /// The per-channel mean and (population) standard deviation of `images`' pixels scaled to
    /// `[0, 1]` (a channel of constant pixels gets standard deviation 1).
    pub fn fit(images: &Images) -> Self {
        let plane = images.rows * images.cols;
        let mut sum = vec![0f64; images.channels];
        let mut sq = vec![0f64; images.channels];
        for (i, &p) in images.pixels.iter().enumerate() {
            let ch = (i / plane) % images.channels.max(1);
            let v = f64::from(p) / 255.0;
            sum[ch] += v;
            sq[ch] += v * v;
        }
        let n = (images.len() * plane).max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
        let std = sq
            .iter()
            .zip(&mean)
            .map(|(q, m)| {
                let sd = (q / n - m * m).max(0.0).sqrt();
                if sd > 0.0 { sd as f32 } else { 1.0 }
            })
            .collect();
        Self {
            mean: mean.into_iter().map(|m| m as f32).collect(),
            std,
        }
    }

    /// The normalised pixels of `items`, `[n, channels, rows, cols]` row-major.
    pub fn pixels(&self, items: &[ImageItem]) -> Vec<f32> {
        let luts: Vec<Vec<f32>> = self
            .mean
            .iter()
            .zip(&self.std)
            .map(|(m, s)| {
                (0..=255u8)
                    .map(|p| (f32::from(p) / 255.0 - m) / s)
                    .collect()
            })
            .collect();
        let mut out = Vec::with_capacity(items.iter().map(|i| i.pixels.len()).sum());
        for item in items {
            let plane = item.rows * item.cols;
            for (ch, chunk) in item.pixels.chunks(plane.max(1)).enumerate() {
                let lut = &luts[ch.min(luts.len() - 1)];
                out.extend(chunk.iter().map(|&p| lut[usize::from(p)]));
            }
        }
        out
    }
}

impl Batcher<ImageItem, (Tensor<4>, Tensor<1, Int>)> for ChannelBatcher {
    fn batch(&self, items: Vec<ImageItem>, device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
        let (channels, rows, cols) = items
            .first()
            .map_or((0, 0, 0), |i| (i.channels, i.rows, i.cols));
        let labels: Vec<i64> = items.iter().map(|i| i64::from(i.label)).collect();
        let n = items.len();
        (
            Tensor::from_data(
                TensorData::new(self.pixels(&items), [n, channels, rows, cols]),
                device,
            ),
            Tensor::from_data(TensorData::new(labels, [n]), device),
        )
    }
}

/// One image and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageItem {
    /// `channels * rows * cols` pixels, `[channels, rows, cols]` row-major.
    pub pixels: Vec<u8>,
    /// Class label.
    pub label: u8,
    /// Channels (1 for MNIST, 3 for CIFAR and SVHN).
    pub channels: usize,
    /// Height.
    pub rows: usize,
    /// Width.
    pub cols: usize,
}

impl Dataset<ImageItem> for ImageSet {
    fn get(&self, index: usize) -> Result<ImageItem, DatasetError> {
        if index >= self.len() {
            return Err(missing(index, self.len()));
        }
        let p = self.pixels();
        Ok(ImageItem {
            pixels: self.images[index * p..(index + 1) * p].to_vec(),
            label: self.labels[index],
            channels: 1,
            rows: self.rows,
            cols: self.cols,
        })
    }

    fn len(&self) -> usize {
        ImageSet::len(self)
    }
}

impl Dataset<ImageItem> for Images {
    fn get(&self, index: usize) -> Result<ImageItem, DatasetError> {
        if index >= self.len() {
            return Err(missing(index, self.len()));
        }
        Ok(ImageItem {
            pixels: self.image(index).to_vec(),
            label: self.labels[index],
            channels: self.channels,
            rows: self.rows,
            cols: self.cols,
        })
    }

    fn len(&self) -> usize {
        Images::len(self)
    }
}

/// Batches images as `((p / 255 - mean) / std)` in `[n, channels, rows, cols]` with their
/// labels (the same `mean` and `std` for every channel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageBatcher {
    /// Pixel mean after scaling to `[0, 1]`.
    pub mean: f32,
    /// Pixel standard deviation after scaling.
    pub std: f32,
}

impl Batcher<ImageItem, (Tensor<4>, Tensor<1, Int>)> for ImageBatcher {
    fn batch(&self, items: Vec<ImageItem>, device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
        let (channels, rows, cols) = items
            .first()
            .map_or((0, 0, 0), |i| (i.channels, i.rows, i.cols));
        let lut: Vec<f32> = (0..=255u8)
            .map(|p| (f32::from(p) / 255.0 - self.mean) / self.std)
            .collect();
        let pixels: Vec<f32> = items
            .iter()
            .flat_map(|i| i.pixels.iter().map(|&p| lut[usize::from(p)]))
            .collect();
        let labels: Vec<i64> = items.iter().map(|i| i64::from(i.label)).collect();
        let n = items.len();
        (
            Tensor::from_data(TensorData::new(pixels, [n, channels, rows, cols]), device),
            Tensor::from_data(TensorData::new(labels, [n]), device),
        )
    }
}

/// A feature vector and its class.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassItem {
    /// Features.
    pub x: Vec<f32>,
    /// Class label.
    pub label: u8,
}

impl Dataset<ClassItem> for Digits {
    fn get(&self, index: usize) -> Result<ClassItem, DatasetError> {
        if index >= self.len() {
            return Err(missing(index, self.len()));
        }
        let f = Digits::FEATURES;
        Ok(ClassItem {
            x: self.pixels[index * f..(index + 1) * f]
                .iter()
                .map(|&p| f32::from(p) / 16.0)
                .collect(),
            label: self.labels[index],
        })
    }

    fn len(&self) -> usize {
        Digits::len(self)
    }
}

/// Batches feature vectors as `[n, d]` with their labels `[n]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClassBatcher;

impl Batcher<ClassItem, (Tensor<2>, Tensor<1, Int>)> for ClassBatcher {
    fn batch(&self, items: Vec<ClassItem>, device: &Device) -> (Tensor<2>, Tensor<1, Int>) {
        let (n, d) = (items.len(), items.first().map_or(0, |i| i.x.len()));
        let x: Vec<f32> = items.iter().flat_map(|i| i.x.iter().copied()).collect();
        let y: Vec<i64> = items.iter().map(|i| i64::from(i.label)).collect();
        (
            Tensor::from_data(TensorData::new(x, [n, d]), device),
            Tensor::from_data(TensorData::new(y, [n]), device),
        )
    }
}

/// A regression row.
#[derive(Clone, Debug, PartialEq)]
pub struct RowItem {
    /// Standardized features.
    pub x: Vec<f32>,
    /// Standardized target.
    pub y: f32,
}

/// The training or test rows of a UCI split, standardized with the training statistics.
#[derive(Clone, Debug)]
pub struct UciRows<'a> {
    split: &'a SplitData,
    train: bool,
}

impl SplitData {
    /// The training rows as a dataset.
    pub fn train_rows(&self) -> UciRows<'_> {
        UciRows {
            split: self,
            train: true,
        }
    }

    /// The test rows as a dataset.
    pub fn test_rows(&self) -> UciRows<'_> {
        UciRows {
            split: self,
            train: false,
        }
    }
}

impl Dataset<RowItem> for UciRows<'_> {
    fn get(&self, index: usize) -> Result<RowItem, DatasetError> {
        let (x, y) = if self.train {
            (&self.split.x_train, &self.split.y_train)
        } else {
            (&self.split.x_test, &self.split.y_test)
        };
        let d = self.split.n_features;
        if index >= y.len() {
            return Err(missing(index, y.len()));
        }
        Ok(RowItem {
            x: x[index * d..(index + 1) * d].to_vec(),
            y: y[index],
        })
    }

    fn len(&self) -> usize {
        if self.train {
            self.split.n_train()
        } else {
            self.split.n_test()
        }
    }
}

/// Batches rows as `[n, d]` features and `[n, 1]` targets.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowBatcher;

impl Batcher<RowItem, (Tensor<2>, Tensor<2>)> for RowBatcher {
    fn batch(&self, items: Vec<RowItem>, device: &Device) -> (Tensor<2>, Tensor<2>) {
        let (n, d) = (items.len(), items.first().map_or(0, |i| i.x.len()));
        let x: Vec<f32> = items.iter().flat_map(|i| i.x.iter().copied()).collect();
        let y: Vec<f32> = items.iter().map(|i| i.y).collect();
        (
            Tensor::from_data(TensorData::new(x, [n, d]), device),
            Tensor::from_data(TensorData::new(y, [n, 1]), device),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_items_batch_as_the_set_normalises_them() {
        let set = ImageSet {
            images: (0..32).map(|v| (v * 8) as u8).collect(),
            labels: vec![3, 7],
            rows: 4,
            cols: 4,
        };
        assert_eq!(Dataset::<ImageItem>::len(&set), 2);
        assert!(set.get(2).is_err());
        let device = Device::flex();
        let items = vec![set.get(1).unwrap(), set.get(0).unwrap()];
        let (x, y) = ImageBatcher {
            mean: 0.1,
            std: 0.3,
        }
        .batch(items, &device);
        assert_eq!(x.dims(), [2, 1, 4, 4]);
        let got = x.into_data().try_into_vec::<f32>().unwrap();
        assert_eq!(got, set.normalized(&[1, 0], 0.1, 0.3));
        assert_eq!(
            y.into_data()
                .convert::<i64>()
                .try_into_vec::<i64>()
                .unwrap(),
            vec![7, 3]
        );
    }

    #[test]
    fn colour_images_batch_channel_first() {
        // One 2-channel 1x2 image: channel 0 = [0, 51], channel 1 = [102, 255].
        let set = Images {
            pixels: vec![0, 51, 102, 255],
            labels: vec![6],
            channels: 2,
            rows: 1,
            cols: 2,
            classes: 10,
        };
        let item = set.get(0).unwrap();
        assert_eq!(item.channels, 2);
        assert!(set.get(1).is_err());
        let (x, y) = ImageBatcher {
            mean: 0.0,
            std: 1.0,
        }
        .batch(vec![item], &Device::flex());
        assert_eq!(x.dims(), [1, 2, 1, 2]);
        // p / 255 exactly: 51 / 255 = 0.2, 102 / 255 = 0.4 (f32 rounding only).
        let got = x.into_data().try_into_vec::<f32>().unwrap();
        for (g, e) in got.iter().zip([0.0, 0.2, 0.4, 1.0]) {
            assert!((g - e).abs() < 1e-6, "{got:?}");
        }
        assert_eq!(
            y.into_data()
                .convert::<i64>()
                .try_into_vec::<i64>()
                .unwrap(),
            vec![6]
        );
    }

    #[test]
    fn channel_statistics_are_exact_and_normalise_each_channel() {
        // Two 2-channel 1x2 images: channel 0 holds 0, 51, 102, 153 (mean 0.3, population sd
        // sqrt(0.05)); channel 1 is constant 255 (sd 0 -> 1).
        let set = Images {
            pixels: vec![0, 51, 255, 255, 102, 153, 255, 255],
            labels: vec![1, 2],
            channels: 2,
            rows: 1,
            cols: 2,
            classes: 3,
        };
        let b = ChannelBatcher::fit(&set);
        assert!((b.mean[0] - 0.3).abs() < 1e-6 && (b.mean[1] - 1.0).abs() < 1e-6);
        assert!((b.std[0] - 0.05f32.sqrt()).abs() < 1e-6 && b.std[1] == 1.0);
        let (x, _) = b.batch(vec![set.get(1).unwrap()], &Device::flex());
        let got = x.into_data().try_into_vec::<f32>().unwrap();
        let sd = 0.05f32.sqrt();
        for (g, e) in got
            .iter()
            .zip([(0.4 - 0.3) / sd, (0.6 - 0.3) / sd, 0.0, 0.0])
        {
            assert!((g - e).abs() < 1e-5, "{got:?}");
        }
    }
}
