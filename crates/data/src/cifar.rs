//! The binary versions of CIFAR-10 and CIFAR-100 (Krizhevsky 2009).
//!
//! A file is a sequence of fixed-size records: CIFAR-10 `<label><3072 pixels>`, CIFAR-100
//! `<coarse label><fine label><3072 pixels>`. The pixels of a record are the 1024 red, then
//! 1024 green, then 1024 blue values of a 32x32 image, each plane row-major: exactly burn's
//! `[3, 32, 32]` order, so records are copied without reordering.
//!
//! A CIFAR-10 folder holds `data_batch_1.bin` .. `data_batch_5.bin` (training, in that order)
//! and `test_batch.bin`; a CIFAR-100 folder `train.bin` and `test.bin`. The files may also sit
//! in the subfolder the official tarball extracts to (`cifar-10-batches-bin`,
//! `cifar-100-binary`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::DataError;
use crate::fetch::io_or_missing;
use crate::images::Images;

/// Side of a CIFAR image.
pub const SIDE: usize = 32;
/// Pixel bytes of a record: 3 channels of 32x32.
pub const PIXELS: usize = 3 * SIDE * SIDE;

/// The CIFAR-10 training files, in order.
pub const CIFAR10_TRAIN: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];
/// The CIFAR-10 test file.
pub const CIFAR10_TEST: &str = "test_batch.bin";
/// The CIFAR-100 files: training, test.
pub const CIFAR100_FILES: [&str; 2] = ["train.bin", "test.bin"];
/// The folder the official CIFAR-10 binary tarball extracts to.
pub const CIFAR10_SUBDIR: &str = "cifar-10-batches-bin";
/// The folder the official CIFAR-100 binary tarball extracts to.
pub const CIFAR100_SUBDIR: &str = "cifar-100-binary";

/// Which record layout a file has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One label byte (10 classes).
    Cifar10,
    /// A coarse (20 classes) then a fine (100 classes) label byte.
    Cifar100,
}

impl Layout {
    /// Label bytes before the pixels.
    pub fn label_bytes(self) -> usize {
        match self {
            Layout::Cifar10 => 1,
            Layout::Cifar100 => 2,
        }
    }

    /// Bytes per record.
    pub fn record(self) -> usize {
        self.label_bytes() + PIXELS
    }

    /// Classes of each label byte, in file order.
    fn classes(self) -> &'static [u8] {
        match self {
            Layout::Cifar10 => &[10],
            Layout::Cifar100 => &[20, 100],
        }
    }
}

/// Images with their label bytes: `labels[j]` holds label byte `j` of every record.
struct Records {
    pixels: Vec<u8>,
    labels: Vec<Vec<u8>>,
}

/// Reads one record file, refusing a length that is not a positive whole number of records
/// ([`DataError::RecordLength`]) and labels out of range ([`DataError::LabelOutOfRange`]).
fn read_records(path: &Path, layout: Layout, into: &mut Records) -> Result<(), DataError> {
    let raw = fs::read(path).map_err(|e| io_or_missing(path, e))?;
    let record = layout.record();
    if raw.is_empty() || !raw.len().is_multiple_of(record) {
        return Err(DataError::RecordLength {
            path: path.to_path_buf(),
            record,
            len: raw.len(),
        });
    }
    into.pixels.reserve(raw.len() / record * PIXELS);
    for (index, r) in raw.chunks_exact(record).enumerate() {
        for (j, &classes) in layout.classes().iter().enumerate() {
            if r[j] >= classes {
                return Err(DataError::LabelOutOfRange {
                    path: path.to_path_buf(),
                    index,
                    label: r[j],
                    classes,
                });
            }
            into.labels[j].push(r[j]);
        }
        into.pixels.extend_from_slice(&r[layout.label_bytes()..]);
    }
    Ok(())
}

/// `dir/file` if it exists, else `dir/sub/file` if that does, else [`DataError::Missing`]
/// naming `dir/file`.
fn locate(dir: &Path, sub: &str, file: &str) -> Result<PathBuf, DataError> {
    let direct = dir.join(file);
    let nested = dir.join(sub).join(file);
    if !direct.is_file() && nested.is_file() {
        return Ok(nested);
    }
    if direct.is_file() {
        Ok(direct)
    } else {
        Err(DataError::Missing { path: direct })
    }
}

/// Reads `files` of `dir` (in order) as one set; returns the images with the last label byte
/// and the other label bytes.
fn read_set(
    dir: &Path,
    sub: &str,
    files: &[&str],
    layout: Layout,
) -> Result<(Images, Vec<Vec<u8>>), DataError> {
    let mut recs = Records {
        pixels: Vec::new(),
        labels: vec![Vec::new(); layout.label_bytes()],
    };
    for f in files {
        read_records(&locate(dir, sub, f)?, layout, &mut recs)?;
    }
    let classes = layout.classes();
    let labels = recs.labels.pop().unwrap_or_default();
    let images = Images {
        pixels: recs.pixels,
        labels,
        channels: 3,
        rows: SIDE,
        cols: SIDE,
        classes: classes[classes.len() - 1],
    };
    Ok((images, recs.labels))
}

/// CIFAR-10: 10 classes.
#[derive(Clone, Debug)]
pub struct Cifar10 {
    /// The five training batches, in order.
    pub train: Images,
    /// The test batch.
    pub test: Images,
}

impl Cifar10 {
    /// Loads the CIFAR-10 binary files of `dir` (or `dir/cifar-10-batches-bin`).
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let (train, _) = read_set(dir, CIFAR10_SUBDIR, &CIFAR10_TRAIN, Layout::Cifar10)?;
        let (test, _) = read_set(dir, CIFAR10_SUBDIR, &[CIFAR10_TEST], Layout::Cifar10)?;
        Ok(Self { train, test })
    }
}

/// One CIFAR-100 set: the images labelled with their fine class (the default label, 100
/// classes) and each image's coarse class (20 superclasses).
#[derive(Clone, Debug)]
pub struct Cifar100Set {
    /// Images with fine labels.
    pub fine: Images,
    /// Coarse label of each image.
    pub coarse: Vec<u8>,
}

impl Cifar100Set {
    /// The images labelled with their coarse class (20 classes).
    pub fn coarse_images(&self) -> Images {
        self.fine.relabelled(self.coarse.clone(), 20)
    }
}

/// CIFAR-100: 100 fine classes in 20 coarse ones.
#[derive(Clone, Debug)]
pub struct Cifar100 {
    /// `train.bin`.
    pub train: Cifar100Set,
    /// `test.bin`.
    pub test: Cifar100Set,
}

impl Cifar100 {
    /// Loads `train.bin` and `test.bin` of `dir` (or `dir/cifar-100-binary`).
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let set = |file: &str| -> Result<Cifar100Set, DataError> {
            let (fine, mut rest) = read_set(dir, CIFAR100_SUBDIR, &[file], Layout::Cifar100)?;
            Ok(Cifar100Set {
                fine,
                coarse: rest.pop().unwrap_or_default(),
            })
        };
        Ok(Self {
            train: set(CIFAR100_FILES[0])?,
            test: set(CIFAR100_FILES[1])?,
        })
    }
}

/// Writes records in `layout` to `path` (for synthetic test folders): record `k` is
/// `labels[k]` (one byte per label of the layout, coarse first) then `pixels[k]` (3072 bytes,
/// `[3, 32, 32]` row-major).
///
/// # Panics
/// If a label row or an image has the wrong length.
pub fn write_records(
    path: &Path,
    layout: Layout,
    labels: &[Vec<u8>],
    pixels: &[Vec<u8>],
) -> Result<(), DataError> {
    let mut out = Vec::with_capacity(labels.len() * layout.record());
    for (l, p) in labels.iter().zip(pixels) {
        assert_eq!((l.len(), p.len()), (layout.label_bytes(), PIXELS));
        out.extend_from_slice(l);
        out.extend_from_slice(p);
    }
    fs::write(path, out).map_err(|e| io_or_missing(path, e))
}

#[cfg(test)]
#[path = "cifar_tests.rs"]
mod tests;
