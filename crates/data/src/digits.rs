//! The handwritten-digits set: the UCI "optdigits" test set (1797 images of 8x8 pixel counts,
//! the set scikit-learn ships as `load_digits`).
//!
//! Format: comma-separated text, one image per line, 65 integers: the 64 pixel counts in
//! `0..=16` (row-major 8x8; each is the number of set pixels in a 4x4 block of the original
//! 32x32 bitmap) followed by the label in `0..=9`. Lines end in `\n` or `\r\n`; one final newline
//! is allowed, blank lines elsewhere are an error. The file may be gzip-compressed (detected by
//! the magic bytes `1f 8b`, not by the name).

use std::fs;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::fetch::hex;
use crate::idx::{io_error, read_payload, write_atomic};

/// [`Digits::content_sha256`] of the real 1797-row set (computed from scikit-learn's
/// `digits.csv.gz`, documented as a copy of UCI's `optdigits.tes`).
pub const DIGITS_CONTENT_SHA256: &str =
    "68aea062d35a127749050fa0e52dca09d6569ac08092c925610e0954e172dde2";

/// The file names [`Digits::load`] looks for in a folder, in order of preference.
pub const DIGITS_FILES: [&str; 3] = ["digits.csv", "digits.csv.gz", "optdigits.tes"];

/// Largest pixel count (a 4x4 block has 16 pixels).
const MAX_PIXEL: u8 = 16;

/// The handwritten-digits images with their labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digits {
    /// `len() * FEATURES` pixel counts in `0..=16`, image after image, each row-major 8x8.
    pub pixels: Vec<u8>,
    /// One label in `0..CLASSES` per image.
    pub labels: Vec<u8>,
}

impl Digits {
    /// Pixels per image (8x8).
    pub const FEATURES: usize = 64;
    /// Number of classes (the digits 0 to 9).
    pub const CLASSES: u8 = 10;

    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there is no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Reads the first of `dir/digits.csv`, `dir/digits.csv.gz`, `dir/optdigits.tes` that
    /// exists (see [`locate`]) with [`Digits::parse`].
    pub fn load(dir: &Path) -> Result<Digits, DataError> {
        let path = locate(dir)?;
        let bytes = read_payload(&path)?;
        Digits::parse(&path, &bytes)
    }

    /// Parses the (decompressed) bytes of a digits file; `path` only names it in errors.
    ///
    /// Errors, each naming `path` and the 1-based line: [`DataError::Ragged`] for a row without
    /// 65 cells, [`DataError::Parse`] for a cell that is not an integer,
    /// [`DataError::Invalid`] for a pixel outside `0..=16`, a label that is negative or above
    /// 255, or a blank line before the end, [`DataError::LabelOutOfRange`] for a label in
    /// `10..=255` (its 0-based item `index` is on line `index + 1`, since blank lines are
    /// errors), and [`DataError::Empty`] when there is no row.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Digits, DataError> {
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let mut d = Digits {
            pixels: Vec::new(),
            labels: Vec::new(),
        };
        if body.is_empty() {
            return Err(DataError::Empty {
                path: path.to_path_buf(),
                what: "data rows",
            });
        }
        for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let text = raw.strip_suffix(b"\r").unwrap_or(raw);
            if text.is_empty() {
                return Err(DataError::Invalid(format!(
                    "{}:{line}: blank line (only one final newline is allowed)",
                    path.display()
                )));
            }
            let cells: Vec<&[u8]> = text.split(|&b| b == b',').collect();
            if cells.len() != Self::FEATURES + 1 {
                return Err(DataError::Ragged {
                    path: path.to_path_buf(),
                    line,
                    expected: Self::FEATURES + 1,
                    got: cells.len(),
                });
            }
            for (c, cell) in cells.iter().enumerate() {
                let column = c + 1;
                let text = String::from_utf8_lossy(cell);
                let value: i64 = text.trim().parse().map_err(|_| DataError::Parse {
                    path: path.to_path_buf(),
                    line,
                    column,
                    cell: text.to_string(),
                })?;
                if c < Self::FEATURES {
                    match u8::try_from(value) {
                        Ok(p) if p <= MAX_PIXEL => d.pixels.push(p),
                        _ => {
                            return Err(DataError::Invalid(format!(
                                "{}:{line}: column {column}: pixel {value} is outside 0..={MAX_PIXEL}",
                                path.display()
                            )));
                        }
                    }
                } else {
                    match u8::try_from(value) {
                        Ok(l) if l < Self::CLASSES => d.labels.push(l),
                        Ok(label) => {
                            return Err(DataError::LabelOutOfRange {
                                path: path.to_path_buf(),
                                index: i,
                                label,
                                classes: Self::CLASSES,
                            });
                        }
                        Err(_) => {
                            return Err(DataError::Invalid(format!(
                                "{}:{line}: column {column}: label {value} is outside 0..={}",
                                path.display(),
                                Self::CLASSES - 1
                            )));
                        }
                    }
                }
            }
        }
        Ok(d)
    }

    /// Hex SHA-256 of the values: for each image in order, its 64 pixel counts as bytes followed
    /// by its label as a byte (`65 * len()` bytes in all). It does not depend on line endings,
    /// spacing or compression of the file the set was read from.
    pub fn content_sha256(&self) -> String {
        let mut h = Sha256::new();
        for (row, label) in self.pixels.chunks_exact(Self::FEATURES).zip(&self.labels) {
            h.update(row);
            h.update([*label]);
        }
        hex(&h.finalize())
    }

    /// The pixels as features in `[0, 1]`: `x = count / 16`, image after image (`len() * 64`
    /// values, row-major 8x8 per image).
    pub fn features(&self) -> Vec<f32> {
        self.pixels
            .iter()
            .map(|&p| f32::from(p) / f32::from(MAX_PIXEL))
            .collect()
    }

    /// The images at `rows`, in that order.
    fn subset(&self, rows: &[usize]) -> Digits {
        let f = Self::FEATURES;
        Digits {
            pixels: rows
                .iter()
                .flat_map(|&r| self.pixels[r * f..(r + 1) * f].iter().copied())
                .collect(),
            labels: rows.iter().map(|&r| self.labels[r]).collect(),
        }
    }

    /// A seeded random `(train, test)` split, as scikit-learn's `train_test_split`: the test
    /// set has `n_test = ceil(n * test_fraction)` images, the train set the other `n - n_test`.
    ///
    /// The row indices `0..n` are shuffled (Fisher-Yates, [`SliceRandom::shuffle`], driven by
    /// `Xoshiro256PlusPlus::seed_from_u64(seed)`); the first `n_test` shuffled indices form the
    /// test set and the rest the train set, each in shuffled order. The same seed gives the same
    /// split. Fails with [`DataError::Invalid`] unless `0 < test_fraction < 1` and both sets are
    /// non-empty.
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Digits, Digits), DataError> {
        let n = self.len();
        let n_test = (n as f64 * test_fraction).ceil();
        if !(test_fraction > 0.0 && test_fraction < 1.0) || n_test < 1.0 || n_test >= n as f64 {
            return Err(DataError::Invalid(format!(
                "digits split: test fraction {test_fraction} of {n} images must be in (0, 1) \
                 and leave non-empty train and test sets"
            )));
        }
        let n_test = n_test as usize;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
        let (test, train) = order.split_at(n_test);
        Ok((self.subset(train), self.subset(test)))
    }
}

/// The digits file of `dir`: the first of [`DIGITS_FILES`] that exists, else
/// [`DataError::Missing`] naming `dir/digits.csv`.
pub fn locate(dir: &Path) -> Result<PathBuf, DataError> {
    DIGITS_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.exists())
        .ok_or_else(|| DataError::Missing {
            path: dir.join(DIGITS_FILES[0]),
        })
}

/// Writes `n` learnable synthetic images as `dir/digits.csv` (atomically: temp file, then
/// rename) and returns its path. For end-to-end tests.
///
/// Image `i` has label `i mod 10`. Class `c` has a fixed prototype (the same for every call):
/// each of its 64 pixels is 0 or 16 with probability 1/2, drawn from a generator with a constant
/// seed. An image is its class prototype plus independent noise uniform in `-3..=3` per pixel
/// (from `seed`), clamped to `0..=16`. Two prototypes differ in about 32 pixels by 16, far more
/// than the noise, so the classes are learnable. Fails with [`DataError::Invalid`] for `n = 0`
/// (an empty file is not a valid digits file).
pub fn write_synthetic(dir: &Path, n: usize, seed: u64) -> Result<PathBuf, DataError> {
    if n == 0 {
        return Err(DataError::Invalid(
            "digits write_synthetic needs n >= 1".into(),
        ));
    }
    let mut proto_rng = Xoshiro256PlusPlus::seed_from_u64(0x0d16_1775);
    let prototypes: Vec<[u8; Digits::FEATURES]> = (0..Digits::CLASSES)
        .map(|_| std::array::from_fn(|_| if proto_rng.random_bool(0.5) { 16 } else { 0 }))
        .collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut text = String::with_capacity(n * 3 * (Digits::FEATURES + 1));
    for i in 0..n {
        let label = i % usize::from(Digits::CLASSES);
        for &p in &prototypes[label] {
            let v = (i16::from(p) + rng.random_range(-3..=3)).clamp(0, i16::from(MAX_PIXEL));
            text.push_str(&format!("{v},"));
        }
        text.push_str(&format!("{label}\n"));
    }
    fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let path = dir.join(DIGITS_FILES[0]);
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use crate::test_dir::fresh as tmp;

    /// A row of 65 cells: pixels `p(0..64)`, then `label`.
    fn row(p: impl Fn(usize) -> u8, label: u8) -> String {
        let mut cells: Vec<String> = (0..64).map(|i| p(i).to_string()).collect();
        cells.push(label.to_string());
        cells.join(",")
    }

    /// Two rows with known values: pixels `i mod 17` with label 3, then `16 - i mod 17` with
    /// label 9.
    fn two_rows() -> [String; 2] {
        [row(|i| (i % 17) as u8, 3), row(|i| 16 - (i % 17) as u8, 9)]
    }

    fn parse(text: &str) -> Result<Digits, DataError> {
        Digits::parse(Path::new("t.csv"), text.as_bytes())
    }

    #[test]
    fn parses_known_values_and_hashes_them_canonically() {
        let [a, b] = two_rows();
        let d = parse(&format!("{a}\n{b}\n")).unwrap();
        assert_eq!(d.len(), 2);
        assert!(!d.is_empty());
        let expected_pixels: Vec<u8> = (0..64)
            .map(|i| (i % 17) as u8)
            .chain((0..64).map(|i| 16 - (i % 17) as u8))
            .collect();
        assert_eq!(d.pixels, expected_pixels);
        assert_eq!(d.labels, vec![3, 9]);
        // SHA-256 of the 130 bytes [0, 1, ..., 16, 0, ..., (63 mod 17), 3, 16, 15, ..., 9],
        // computed with an independent tool (Python's hashlib).
        assert_eq!(
            d.content_sha256(),
            "39da2f29e689ea974def957cb1abe4092f613a09175e978feb771cbff6ed49ca"
        );
        // Without the final newline, and with spaces around cells: the same values.
        assert_eq!(parse(&format!("{a}\n{b}")).unwrap(), d);
        assert_eq!(
            parse(&format!("{a}\n{}", b.replace(',', " , "))).unwrap(),
            d
        );
    }

    #[test]
    fn crlf_and_gzip_parse_to_the_same_values_as_lf() {
        let [a, b] = two_rows();
        let lf = parse(&format!("{a}\n{b}\n")).unwrap();
        assert_eq!(parse(&format!("{a}\r\n{b}\r\n")).unwrap(), lf);
        assert_eq!(parse(&format!("{a}\r\n{b}")).unwrap(), lf);

        let dir = tmp("gzip");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(format!("{a}\r\n{b}\r\n").as_bytes()).unwrap();
        // Compressed bytes under the plain name: detected by the magic, not the name.
        fs::write(dir.join("digits.csv"), enc.finish().unwrap()).unwrap();
        let gz = Digits::load(&dir).unwrap();
        assert_eq!(gz, lf);
        assert_eq!(gz.content_sha256(), lf.content_sha256());
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn malformed_rows_are_typed_errors_naming_file_and_line() {
        let [a, b] = two_rows();
        let with_second = |bad: &str| parse(&format!("{a}\n{bad}\n")).unwrap_err();

        let e = with_second(&format!("{b},0"));
        assert!(
            matches!(
                e,
                DataError::Ragged {
                    line: 2,
                    expected: 65,
                    got: 66,
                    ..
                }
            ),
            "{e}"
        );
        let e = with_second(&b[..b.rfind(',').unwrap()]);
        assert!(
            matches!(
                e,
                DataError::Ragged {
                    line: 2,
                    got: 64,
                    ..
                }
            ),
            "{e}"
        );

        let e = with_second(&b.replacen("16", "1.5", 1));
        assert!(
            matches!(&e, DataError::Parse { line: 2, column: 1, cell, .. } if cell == "1.5"),
            "{e}"
        );
        let e = with_second(&b.replacen("16", "x", 1));
        assert!(matches!(e, DataError::Parse { line: 2, .. }), "{e}");

        let e = with_second(&b.replacen("16", "17", 1));
        assert!(matches!(e, DataError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("t.csv:2: column 1: pixel 17"), "{e}");
        let e = with_second(&b.replacen("16", "-1", 1));
        assert!(e.to_string().contains("t.csv:2: column 1: pixel -1"), "{e}");

        let e = with_second(&row(|_| 0, 10));
        assert!(
            matches!(
                e,
                DataError::LabelOutOfRange {
                    index: 1,
                    label: 10,
                    classes: 10,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("t.csv"), "{e}");
        let e = with_second(&format!("{},-1", &b[..b.rfind(',').unwrap()]));
        assert!(
            e.to_string().contains("t.csv:2: column 65: label -1"),
            "{e}"
        );

        // Blank lines before the end, and more than one final newline.
        for text in [
            format!("{a}\n\n{b}\n"),
            format!("{a}\n\r\n{b}"),
            format!("{a}\n\n"),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(e.to_string().contains("t.csv:2: blank line"), "{e}");
        }

        let e = parse("").unwrap_err();
        assert!(matches!(e, DataError::Empty { .. }), "{e}");
        assert!(e.to_string().contains("t.csv"), "{e}");
    }

    #[test]
    fn load_prefers_digits_csv_and_reports_the_missing_file() {
        let dir = tmp("load");
        let e = Digits::load(&dir).unwrap_err();
        assert!(
            matches!(&e, DataError::Missing { path } if *path == dir.join("digits.csv")),
            "{e}"
        );
        let [a, b] = two_rows();
        fs::write(dir.join("optdigits.tes"), format!("{a}\r\n")).unwrap();
        assert_eq!(Digits::load(&dir).unwrap().len(), 1);
        fs::write(dir.join("digits.csv"), format!("{a}\n{b}\n")).unwrap();
        assert_eq!(Digits::load(&dir).unwrap().len(), 2);
        // Errors name the file actually read.
        fs::write(dir.join("digits.csv"), format!("{a}\n{b},1\n")).unwrap();
        let e = Digits::load(&dir).unwrap_err();
        assert!(
            matches!(&e, DataError::Ragged { path, line: 2, .. } if *path == dir.join("digits.csv")),
            "{e}"
        );
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn features_are_pixels_over_16() {
        let [a, b] = two_rows();
        let d = parse(&format!("{a}\n{b}\n")).unwrap();
        let f = d.features();
        assert_eq!(f.len(), 128);
        for (x, &p) in f.iter().zip(&d.pixels) {
            // p / 16 is exact in f32 (a dyadic rational with a 5-bit numerator).
            assert_eq!(*x, f32::from(p) / 16.0);
        }
        assert_eq!((f[0], f[16], f[64]), (0.0, 1.0, 1.0));
        assert_eq!(f[8], 0.5);
    }

    #[test]
    fn split_sizes_follow_ceil_and_are_deterministic_per_seed() {
        let dir = tmp("split");
        let d = Digits::load(write_synthetic(&dir, 1797, 11).unwrap().parent().unwrap()).unwrap();
        assert_eq!(d.len(), 1797);
        let (train, test) = d.split(0.2, 42).unwrap();
        // ceil(1797 * 0.2) = ceil(359.4) = 360.
        assert_eq!((train.len(), test.len()), (1437, 360));
        assert_eq!(train.pixels.len(), 1437 * 64);
        assert_eq!(d.split(0.2, 42).unwrap(), (train.clone(), test.clone()));
        assert_ne!(d.split(0.2, 43).unwrap().1, test);
        // A partition of the rows: every image is in exactly one set. The synthetic images
        // are (almost surely) distinct, so sorting the 65-byte rows compares the multisets.
        let rows = |x: &Digits| -> Vec<Vec<u8>> {
            x.pixels
                .chunks_exact(64)
                .zip(&x.labels)
                .map(|(p, &l)| [p, &[l]].concat())
                .collect()
        };
        let mut all = rows(&train);
        all.extend(rows(&test));
        all.sort();
        let mut want = rows(&d);
        want.sort();
        assert_eq!(all, want);
        assert_eq!(d.split(0.1, 0).unwrap().1.len(), 180); // ceil(179.7)
        for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(d.split(bad, 1), Err(DataError::Invalid(_))),
                "{bad}"
            );
        }
        // 0.9999 of 1797 rounds up to all 1797 images: no train set left.
        assert!(matches!(d.split(0.9999, 1), Err(DataError::Invalid(_))));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn synthetic_set_is_balanced_in_range_and_reproducible() {
        let dir = tmp("synth");
        let path = write_synthetic(&dir, 25, 5).unwrap();
        assert_eq!(path, dir.join("digits.csv"));
        let d = Digits::load(&dir).unwrap();
        assert_eq!(
            d.labels,
            (0..25).map(|i| (i % 10) as u8).collect::<Vec<_>>()
        );
        assert!(d.pixels.iter().all(|&p| p <= 16));
        // Same seed, same file; another seed, other noise.
        let first = fs::read(&path).unwrap();
        write_synthetic(&dir, 25, 5).unwrap();
        assert_eq!(fs::read(&path).unwrap(), first);
        write_synthetic(&dir, 25, 6).unwrap();
        assert_ne!(fs::read(&path).unwrap(), first);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
        // Images 0 and 10 share a prototype: noise of at most 3 per pixel keeps them within 6;
        // images 0 and 1 have different prototypes and differ by much more in total.
        let img = |i: usize| &d.pixels[i * 64..(i + 1) * 64];
        let dist = |x: &[u8], y: &[u8]| -> u32 {
            x.iter()
                .zip(y)
                .map(|(&a, &b)| u32::from(a.abs_diff(b)))
                .sum()
        };
        assert!(
            img(0)
                .iter()
                .zip(img(10))
                .all(|(&a, &b)| a.abs_diff(b) <= 6)
        );
        assert!(dist(img(0), img(1)) > 2 * dist(img(0), img(10)));
        assert!(matches!(
            write_synthetic(&dir, 0, 1),
            Err(DataError::Invalid(_))
        ));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn real_digits_have_known_counts_and_hash() {
        let dir = std::env::var_os("SGMCMC_DIGITS_DIR")
            .map_or_else(|| PathBuf::from("/work/runs/data/digits"), PathBuf::from);
        if locate(&dir).is_err() {
            eprintln!(
                "skipping: no digits file found in {} (set SGMCMC_DIGITS_DIR)",
                dir.display()
            );
            return;
        }
        let d = Digits::load(&dir).unwrap();
        assert_eq!(d.len(), 1797);
        let mut counts = [0usize; 10];
        for &l in &d.labels {
            counts[usize::from(l)] += 1;
        }
        assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
        assert_eq!(d.content_sha256(), DIGITS_CONTENT_SHA256);
    }
}
