//! MNIST / Fashion-MNIST image sets in the IDX layout, class filters, epoch orders and a
//! synthetic writer for end-to-end tests.
//!
//! A dataset folder holds `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
//! `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, each plain or with `.gz`
//! (see [`crate::idx`]). Images are `[n, rows, cols]` unsigned bytes, labels `[n]` in `0..10`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::DataError;
use crate::idx::{IdxArray, read_idx, write_idx};
use crate::splitmix::SplitMix64;

/// Mean of the MNIST training pixels scaled to [0, 1] (the usual normalisation constant).
pub const MNIST_MEAN: f32 = 0.1307;
/// Standard deviation of the MNIST training pixels scaled to [0, 1].
pub const MNIST_STD: f32 = 0.3081;

/// Number of classes of the MNIST layout (labels are `0..10`).
pub const N_CLASSES: u8 = 10;

/// The four files of a dataset folder, without `.gz`: train images, train labels, test images,
/// test labels.
pub const FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// Images of `rows x cols` unsigned-byte pixels (row-major, image after image) with one label
/// each.
#[derive(Clone, Debug)]
pub struct ImageSet {
    /// `len() * rows * cols` pixels.
    pub images: Vec<u8>,
    /// One label per image.
    pub labels: Vec<u8>,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
}

impl ImageSet {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when the set holds no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Pixels per image, `rows * cols`.
    pub fn pixels(&self) -> usize {
        self.rows * self.cols
    }

    /// The pixels of image `i`.
    fn image(&self, i: usize) -> &[u8] {
        let p = self.pixels();
        &self.images[i * p..(i + 1) * p]
    }

    /// A new set of the images `keep` (in that order), with labels mapped by `label`.
    fn select(&self, keep: impl Iterator<Item = usize>, label: impl Fn(u8) -> u8) -> ImageSet {
        let mut images = Vec::new();
        let mut labels = Vec::new();
        for i in keep {
            images.extend_from_slice(self.image(i));
            labels.push(label(self.labels[i]));
        }
        ImageSet {
            images,
            labels,
            rows: self.rows,
            cols: self.cols,
        }
    }

    /// Keeps the images whose label is in `classes` (order preserved); labels become their
    /// index in `classes`.
    ///
    /// Fails with [`DataError::EmptyFilter`] if no image is kept and with
    /// [`DataError::Invalid`] if a class is listed twice (its new label would be ambiguous).
    pub fn filter_classes(&self, classes: &[u8]) -> Result<ImageSet, DataError> {
        let mut new_label = [None::<u8>; 256];
        for (k, &c) in classes.iter().enumerate() {
            if new_label[usize::from(c)].is_some() {
                return Err(DataError::Invalid(format!(
                    "filter_classes: class {c} is listed twice in {classes:?}"
                )));
            }
            // `classes` has at most 256 distinct entries, so `k` fits in a byte.
            new_label[usize::from(c)] = Some(k as u8);
        }
        let keep = (0..self.len()).filter(|&i| new_label[usize::from(self.labels[i])].is_some());
        let out = self.select(keep, |l| new_label[usize::from(l)].unwrap_or(l));
        if out.is_empty() {
            return Err(DataError::EmptyFilter {
                classes: classes.to_vec(),
            });
        }
        Ok(out)
    }

    /// The first n images of each class (stratified, order preserved), for scaled-down runs.
    pub fn per_class(&self, n: usize) -> ImageSet {
        let mut seen = [0usize; 256];
        let keep = (0..self.len()).filter(|&i| {
            let s = &mut seen[usize::from(self.labels[i])];
            *s += 1;
            *s <= n
        });
        self.select(keep, |l| l)
    }

    /// Pixels of images `idx` as f32 in [batch, 1, rows, cols] row-major order:
    /// `(p/255 - mean)/std`.
    ///
    /// # Panics
    /// If an index is not below [`ImageSet::len`] (a caller bug, like slice indexing).
    pub fn normalized(&self, idx: &[usize], mean: f32, std: f32) -> Vec<f32> {
        let lut: Vec<f32> = (0..=255u8)
            .map(|p| (f32::from(p) / 255.0 - mean) / std)
            .collect();
        let mut out = Vec::with_capacity(idx.len() * self.pixels());
        for &i in idx {
            out.extend(self.image(i).iter().map(|&p| lut[usize::from(p)]));
        }
        out
    }

    /// Labels of images `idx`, as the `i64` class indices a cross-entropy loss takes.
    ///
    /// # Panics
    /// If an index is not below [`ImageSet::len`].
    pub fn labels_of(&self, idx: &[usize]) -> Vec<i64> {
        idx.iter().map(|&i| i64::from(self.labels[i])).collect()
    }
}

/// The training and test sets of one dataset folder.
#[derive(Clone, Debug)]
pub struct ImageData {
    /// The training images (`train-*`).
    pub train: ImageSet,
    /// The test images (`t10k-*`).
    pub test: ImageSet,
}

impl ImageData {
    /// Loads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte, each plain or with `.gz`.
    /// Validates magic numbers, image/label counts agree, dims are 3-D/1-D, labels < 10.
    /// Missing files -> DataError naming the path.
    ///
    /// Also rejects empty sets and train/test image sizes that differ.
    pub fn load(dir: &Path) -> Result<ImageData, DataError> {
        let train = load_set(&locate(dir, FILES[0])?, &locate(dir, FILES[1])?)?;
        let test_images = locate(dir, FILES[2])?;
        let test = load_set(&test_images, &locate(dir, FILES[3])?)?;
        if (train.rows, train.cols) != (test.rows, test.cols) {
            return Err(DataError::Invalid(format!(
                "{}: test images are {}x{} but training images are {}x{}",
                test_images.display(),
                test.rows,
                test.cols,
                train.rows,
                train.cols
            )));
        }
        Ok(ImageData { train, test })
    }
}

/// `dir/stem` if it is a file, else `dir/stem.gz` if it is, else [`DataError::Missing`] naming
/// the `.gz` path.
pub(crate) fn locate(dir: &Path, stem: &str) -> Result<PathBuf, DataError> {
    let plain = dir.join(stem);
    if plain.is_file() {
        return Ok(plain);
    }
    let gz = dir.join(format!("{stem}.gz"));
    if gz.is_file() {
        Ok(gz)
    } else {
        Err(DataError::Missing { path: gz })
    }
}

/// Reads `path` and checks its rank (3 for images, magic 0x00000803; 1 for labels, 0x00000801).
fn read_rank(path: &Path, rank: usize) -> Result<IdxArray, DataError> {
    let a = read_idx(path)?;
    if a.dims.len() != rank {
        return Err(DataError::IdxHeader {
            path: path.to_path_buf(),
            why: format!(
                "magic 0x000008{:02x} has {} dimensions, expected 0x000008{rank:02x}",
                a.dims.len(),
                a.dims.len()
            ),
        });
    }
    Ok(a)
}

/// One image file with its label file.
fn load_set(images_path: &Path, labels_path: &Path) -> Result<ImageSet, DataError> {
    let images = read_rank(images_path, 3)?;
    let labels = read_rank(labels_path, 1)?;
    let (n, rows, cols) = (images.dims[0], images.dims[1], images.dims[2]);
    if n != labels.dims[0] {
        return Err(DataError::CountMismatch {
            images: images_path.to_path_buf(),
            n_images: n,
            labels: labels_path.to_path_buf(),
            n_labels: labels.dims[0],
        });
    }
    if n == 0 || rows == 0 || cols == 0 {
        return Err(DataError::Empty {
            path: images_path.to_path_buf(),
            what: "images (a dimension is 0)",
        });
    }
    if let Some((index, &label)) = labels
        .data
        .iter()
        .enumerate()
        .find(|&(_, &l)| l >= N_CLASSES)
    {
        return Err(DataError::LabelOutOfRange {
            path: labels_path.to_path_buf(),
            index,
            label,
            classes: N_CLASSES,
        });
    }
    Ok(ImageSet {
        images: images.data,
        labels: labels.data,
        rows,
        cols,
    })
}

/// Writes a small learnable synthetic image set in the MNIST layout into `dir` (4 gzip IDX files):
/// `classes` classes, class c = a bright 6x6 block at a class-specific position of a `side`x`side` image,
/// plus uniform pixel noise, from `seed`. For end-to-end tests.
///
/// Class `c` puts its block at grid cell `(c / k, c % k)` of a `k x k` grid, `k = ceil(sqrt(classes))`,
/// whose cell `r` starts at pixel `r (side - 6) / (k - 1)` (centred when `k = 1`). A pixel is
/// `base + u` with `base = 192` inside the block and 0 outside, `u` uniform in `0..64`, so
/// block pixels lie in `[192, 255]` and the rest in `[0, 63]`. Labels are balanced (`i mod
/// classes`, then shuffled). Needs `1 <= classes <= 10`, `side >= 6 + k - 1` (distinct block
/// positions), `side < 2^16` and `n_train, n_test >= 1`; the same arguments give the same files.
pub fn write_synthetic(
    dir: &Path,
    side: usize,
    classes: u8,
    n_train: usize,
    n_test: usize,
    seed: u64,
) -> Result<(), DataError> {
    let c = usize::from(classes);
    let k = (1..=c.max(1)).find(|k| k * k >= c).unwrap_or(1);
    if !(1..=N_CLASSES).contains(&classes)
        || side < 6 + k - 1
        || side >= 1 << 16
        || n_train == 0
        || n_test == 0
    {
        return Err(DataError::Invalid(format!(
            "write_synthetic needs 1 <= classes <= 10, 6 + ceil(sqrt(classes)) - 1 <= side < 65536 \
             and n_train, n_test >= 1 (got side {side}, classes {classes}, n_train {n_train}, \
             n_test {n_test})"
        )));
    }
    fs::create_dir_all(dir).map_err(|e| crate::idx::io_error(dir, e))?;
    let origin = |r: usize| {
        if k == 1 {
            (side - 6) / 2
        } else {
            r * (side - 6) / (k - 1)
        }
    };
    let mut rng = SplitMix64(seed);
    for (n, [images_file, labels_file]) in [
        (n_train, [FILES[0], FILES[1]]),
        (n_test, [FILES[2], FILES[3]]),
    ] {
        let mut labels: Vec<u8> = (0..n).map(|i| (i % usize::from(classes)) as u8).collect();
        for i in (1..n).rev() {
            labels.swap(i, rng.below(i + 1));
        }
        let mut images = Vec::with_capacity(n * side * side);
        for &c in &labels {
            let (top, left) = (origin(usize::from(c) / k), origin(usize::from(c) % k));
            for r in 0..side {
                for q in 0..side {
                    let inside = (top..top + 6).contains(&r) && (left..left + 6).contains(&q);
                    let base = if inside { 192 } else { 0 };
                    images.push(base + (rng.next_u64() >> 58) as u8);
                }
            }
        }
        write_idx(
            &dir.join(format!("{images_file}.gz")),
            &[n, side, side],
            &images,
            true,
        )?;
        write_idx(&dir.join(format!("{labels_file}.gz")), &[n], &labels, true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    /// A 2x2 set of 6 images: image i has pixels all equal to 40 i, labels as given.
    fn small(labels: &[u8]) -> ImageSet {
        ImageSet {
            images: (0..labels.len()).flat_map(|i| [40 * i as u8; 4]).collect(),
            labels: labels.to_vec(),
            rows: 2,
            cols: 2,
        }
    }

    /// Writes a plain (uncompressed) 3-image, 2x3 folder with the given labels.
    fn write_plain(dir: &Path, labels: &[u8], n_images: usize) {
        let px: Vec<u8> = (0..n_images * 6).map(|i| i as u8).collect();
        for (img, lab) in [(FILES[0], FILES[1]), (FILES[2], FILES[3])] {
            write_idx(&dir.join(img), &[n_images, 2, 3], &px, false).unwrap();
            write_idx(&dir.join(lab), &[labels.len()], labels, false).unwrap();
        }
    }

    #[test]
    fn mnist_plain_folder_loads_exactly() {
        let d = TempDir::new("plain");
        write_plain(&d.0, &[3, 0, 9], 3);
        let data = ImageData::load(&d.0).unwrap();
        for s in [&data.train, &data.test] {
            assert_eq!((s.len(), s.rows, s.cols, s.pixels()), (3, 2, 3, 6));
            assert_eq!(s.labels, vec![3, 0, 9]);
            assert_eq!(s.images, (0..18).collect::<Vec<u8>>());
        }
    }

    #[test]
    fn mnist_malformed_folders_are_typed_errors() {
        // Label out of range.
        let d = TempDir::new("label");
        write_plain(&d.0, &[3, 10, 9], 3);
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::LabelOutOfRange {
                    index: 1,
                    label: 10,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("train-labels-idx1-ubyte"), "{e}");

        // Count mismatch.
        let d = TempDir::new("count");
        write_plain(&d.0, &[3, 1], 3);
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::CountMismatch {
                    n_images: 3,
                    n_labels: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("3 images but"), "{e}");

        // Missing file, named with its path.
        let d = TempDir::new("missing");
        write_plain(&d.0, &[1, 2, 3], 3);
        fs::remove_file(d.0.join(FILES[2])).unwrap();
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(
            matches!(&e, DataError::Missing { path } if path.ends_with("t10k-images-idx3-ubyte.gz")),
            "{e}"
        );

        // Labels where images belong: wrong rank (magic 0x00000801 instead of 0x00000803).
        let d = TempDir::new("rank");
        write_plain(&d.0, &[1, 2, 3], 3);
        fs::copy(d.0.join(FILES[1]), d.0.join(FILES[0])).unwrap();
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(matches!(e, DataError::IdxHeader { .. }), "{e}");
        assert!(e.to_string().contains("0x00000803"), "{e}");

        // Bad magic and a truncated payload surface from the reader with the file's name.
        let d = TempDir::new("magic");
        write_plain(&d.0, &[1, 2, 3], 3);
        fs::write(d.0.join(FILES[3]), [0x50, 0x4b, 3, 4]).unwrap();
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(matches!(e, DataError::IdxHeader { .. }), "{e}");
        assert!(e.to_string().contains("t10k-labels-idx1-ubyte"), "{e}");
        let raw = fs::read(d.0.join(FILES[0])).unwrap();
        fs::write(d.0.join(FILES[0]), &raw[..raw.len() - 1]).unwrap();
        let e = ImageData::load(&d.0).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::IdxLength {
                    expected: 18,
                    got: 17,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn filter_per_class_normalized_and_labels_are_exact() {
        let s = small(&[3, 1, 3, 7, 1, 3]);
        let f = s.filter_classes(&[3, 1]).unwrap();
        assert_eq!(f.labels, vec![0, 1, 0, 1, 0]);
        // Kept images 0, 1, 2, 4, 5 in order: pixel values 40 i.
        let firsts: Vec<u8> = f.images.chunks(4).map(|c| c[0]).collect();
        assert_eq!(firsts, vec![0, 40, 80, 160, 200]);
        assert!(matches!(
            s.filter_classes(&[4, 5]),
            Err(DataError::EmptyFilter { .. })
        ));
        assert!(matches!(
            s.filter_classes(&[3, 3]),
            Err(DataError::Invalid(_))
        ));

        let p = s.per_class(2);
        assert_eq!(p.labels, vec![3, 1, 3, 7, 1]);
        assert_eq!(p.images.len(), 5 * 4);
        assert_eq!(p.images[16], 160);
        assert_eq!(s.per_class(0).len(), 0);
        assert_eq!(s.per_class(10).labels, s.labels);

        // (p/255 - mean)/std for p = 40 * 5 = 200 and p = 0.
        let x = s.normalized(&[5, 0], 0.5, 0.25);
        assert_eq!(x.len(), 8);
        assert_eq!(x[0], (200.0f32 / 255.0 - 0.5) / 0.25);
        assert_eq!(x[3], x[0]);
        assert_eq!(x[4], -2.0);
        assert_eq!(s.labels_of(&[3, 1]), vec![7i64, 1]);
    }

    #[test]
    fn synthetic_set_is_deterministic_balanced_and_learnable() {
        let d = TempDir::new("synthetic");
        write_synthetic(&d.0, 28, 10, 200, 50, 9).unwrap();
        for f in FILES {
            assert!(d.0.join(format!("{f}.gz")).is_file(), "{f}");
        }
        let data = ImageData::load(&d.0).unwrap();
        assert_eq!((data.train.len(), data.test.len()), (200, 50));
        assert_eq!((data.train.rows, data.train.cols), (28, 28));
        for c in 0..10u8 {
            assert_eq!(data.train.labels.iter().filter(|&&l| l == c).count(), 20);
            assert_eq!(data.test.labels.iter().filter(|&&l| l == c).count(), 5);
        }
        let again = TempDir::new("synthetic-again");
        write_synthetic(&again.0, 28, 10, 200, 50, 9).unwrap();
        let other = ImageData::load(&again.0).unwrap();
        assert_eq!(other.train.images, data.train.images);
        assert_eq!(other.test.labels, data.test.labels);

        // Nearest class mean (fitted on train) classifies every test image: block pixels are
        // >= 192 and others <= 63, so the classes are separated by a wide margin.
        let p = data.train.pixels();
        let mut means = vec![0.0f64; 10 * p];
        for i in 0..data.train.len() {
            let c = usize::from(data.train.labels[i]);
            for (m, &v) in means[c * p..(c + 1) * p]
                .iter_mut()
                .zip(data.train.image(i))
            {
                *m += f64::from(v) / 20.0;
            }
        }
        for i in 0..data.test.len() {
            let dist = |c: usize| -> f64 {
                means[c * p..(c + 1) * p]
                    .iter()
                    .zip(data.test.image(i))
                    .map(|(m, &v)| (m - f64::from(v)).powi(2))
                    .sum()
            };
            let best = (0..10)
                .min_by(|&a, &b| dist(a).total_cmp(&dist(b)))
                .unwrap();
            assert_eq!(best, usize::from(data.test.labels[i]), "test image {i}");
        }
        assert!(matches!(
            write_synthetic(&d.0, 8, 10, 1, 1, 0),
            Err(DataError::Invalid(_))
        ));
        assert!(matches!(
            write_synthetic(&d.0, 28, 11, 1, 1, 0),
            Err(DataError::Invalid(_))
        ));
    }

    #[test]
    fn real_mnist_if_present() {
        let dir = crate::shared_datasets().join("mnist");
        if !dir.is_dir() {
            println!(
                "skipped real_mnist_if_present: no {} (set SGMCMC_DATA_DIR)",
                dir.display()
            );
            return;
        }
        let data = ImageData::load(&dir).unwrap();
        assert_eq!((data.train.len(), data.test.len()), (60_000, 10_000));
        assert_eq!((data.train.rows, data.train.cols), (28, 28));
        let counts = |s: &ImageSet| {
            let mut c = [0usize; 10];
            s.labels.iter().for_each(|&l| c[usize::from(l)] += 1);
            c
        };
        let train = counts(&data.train);
        assert_eq!(train[..5].iter().sum::<usize>(), 30_596);
        assert_eq!(
            train,
            [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
        );
        assert_eq!(
            counts(&data.test),
            [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
        );
        // The normalisation constants are the training pixels' mean and sd (to 4 decimals).
        let n = data.train.images.len() as f64;
        let m = data.train.images.iter().map(|&v| f64::from(v)).sum::<f64>() / n / 255.0;
        let v = data
            .train
            .images
            .iter()
            .map(|&p| (f64::from(p) / 255.0 - m).powi(2))
            .sum::<f64>()
            / n;
        assert!((m - f64::from(MNIST_MEAN)).abs() < 5e-5, "{m}");
        assert!(
            (v.sqrt() - f64::from(MNIST_STD)).abs() < 5e-5,
            "{}",
            v.sqrt()
        );
        let zero_four = data.train.filter_classes(&[0, 1, 2, 3, 4]).unwrap();
        assert_eq!(zero_four.len(), 30_596);
    }
}
