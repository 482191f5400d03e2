//! Small synthetic folders in the official CIFAR-10, CIFAR-100 and SVHN layouts, for tests of
//! the readers, the fetchers and the CLI (never a stand-in for the real data).

use std::fs;
use std::path::Path;

use crate::cifar::{CIFAR10_TEST, CIFAR10_TRAIN, CIFAR100_FILES, Layout, PIXELS, write_records};
use crate::error::DataError;
use crate::fetch_color::ColorSet;
use crate::images::Images;
use crate::splitmix::SplitMix64;
use crate::svhn::{SVHN_FILES, write_svhn};

/// `n` random 3 x 32 x 32 images from `rng`, labels `i % classes`.
fn random_images(n: usize, classes: u8, rng: &mut SplitMix64) -> Images {
    Images {
        pixels: (0..n * PIXELS)
            .map(|_| (rng.next_u64() >> 56) as u8)
            .collect(),
        labels: (0..n).map(|i| (i % usize::from(classes)) as u8).collect(),
        channels: 3,
        rows: 32,
        cols: 32,
        classes,
    }
}

/// Writes images `range` of `set` as records of `layout` (CIFAR-100: coarse label = fine / 5).
fn write_part(
    path: &Path,
    layout: Layout,
    set: &Images,
    range: std::ops::Range<usize>,
) -> Result<(), DataError> {
    let labels: Vec<Vec<u8>> = range
        .clone()
        .map(|k| match layout {
            Layout::Cifar10 => vec![set.labels[k]],
            Layout::Cifar100 => vec![set.labels[k] / 5, set.labels[k]],
        })
        .collect();
    let pixels: Vec<Vec<u8>> = range.map(|k| set.image(k).to_vec()).collect();
    write_records(path, layout, &labels, &pixels)
}

/// Writes a synthetic `set` folder of `n_train` training and `n_test` test images into `dir`
/// (created if needed), from `seed`. CIFAR-10 spreads the training images over its five batch
/// files in order, so it needs `n_train >= 5`; every set needs `n_test >= 1`.
pub fn write_synthetic(
    dir: &Path,
    set: ColorSet,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    if n_train < 5 || n_test == 0 {
        return Err(DataError::Invalid(format!(
            "write_synthetic needs n_train >= 5 and n_test >= 1 (got {n_train}, {n_test})"
        )));
    }
    fs::create_dir_all(dir).map_err(|e| crate::fetch::io_or_missing(dir, e))?;
    let mut rng = SplitMix64(seed);
    let classes = if set == ColorSet::Cifar100 { 100 } else { 10 };
    let train = random_images(n_train, classes, &mut rng);
    let test = random_images(n_test, classes, &mut rng);
    match set {
        ColorSet::Cifar10 => {
            for (b, file) in CIFAR10_TRAIN.iter().enumerate() {
                let part = b * n_train / 5..(b + 1) * n_train / 5;
                write_part(&dir.join(file), Layout::Cifar10, &train, part)?;
            }
            write_part(&dir.join(CIFAR10_TEST), Layout::Cifar10, &test, 0..n_test)
        }
        ColorSet::Cifar100 => {
            write_part(
                &dir.join(CIFAR100_FILES[0]),
                Layout::Cifar100,
                &train,
                0..n_train,
            )?;
            write_part(
                &dir.join(CIFAR100_FILES[1]),
                Layout::Cifar100,
                &test,
                0..n_test,
            )
        }
        ColorSet::Svhn => {
            write_svhn(&dir.join(SVHN_FILES[0]), &train, true)?;
            write_svhn(&dir.join(SVHN_FILES[1]), &test, true)
        }
    }
}
