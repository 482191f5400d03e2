//! SVHN, format 2 (cropped 32x32 digits; Netzer et al. 2011): `train_32x32.mat` and
//! `test_32x32.mat`, MATLAB v5 files read with the `matfile` crate (compressed or not).
//!
//! Each file holds `X`, `uint8` of MATLAB size `32 x 32 x 3 x N`, and `y`, `N x 1` labels in
//! `1..=10` where 10 stands for the digit 0. MATLAB stores arrays column-major (first index
//! fastest), so pixel `(row r, col c, channel ch)` of image `k` is
//! `X[r + 32 c + 1024 ch + 3072 k]`; it is moved to burn's `[n, 3, 32, 32]` row-major index
//! `((k * 3 + ch) * 32 + r) * 32 + c`, i.e. each channel plane is transposed. Label 10 becomes
//! 0, so labels are the digits `0..10`.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use matfile::{MatFile, NumericData};

use crate::error::DataError;
use crate::fetch::io_or_missing;
use crate::images::Images;
use crate::mat_writer::{MatValues, MatVar, write_mat};

/// Side of an SVHN image.
pub const SIDE: usize = 32;
/// The two files: training, test.
pub const SVHN_FILES: [&str; 2] = ["train_32x32.mat", "test_32x32.mat"];

/// SVHN's training and test sets.
#[derive(Clone, Debug)]
pub struct Svhn {
    /// `train_32x32.mat`.
    pub train: Images,
    /// `test_32x32.mat`.
    pub test: Images,
}

impl Svhn {
    /// Loads both files of `dir`.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        Ok(Self {
            train: read_svhn(&dir.join(SVHN_FILES[0]))?,
            test: read_svhn(&dir.join(SVHN_FILES[1]))?,
        })
    }
}

/// Any numeric array as `f64`, with whether it has an imaginary part.
fn reals(d: &NumericData) -> (Vec<f64>, bool) {
    fn conv<T: Copy + Into<f64>>(r: &[T], i: Option<&Vec<T>>) -> (Vec<f64>, bool) {
        (r.iter().map(|&v| v.into()).collect(), i.is_some())
    }
    match d {
        NumericData::Int8 { real, imag } => conv(real, imag.as_ref()),
        NumericData::UInt8 { real, imag } => conv(real, imag.as_ref()),
        NumericData::Int16 { real, imag } => conv(real, imag.as_ref()),
        NumericData::UInt16 { real, imag } => conv(real, imag.as_ref()),
        NumericData::Int32 { real, imag } => conv(real, imag.as_ref()),
        NumericData::UInt32 { real, imag } => conv(real, imag.as_ref()),
        NumericData::Single { real, imag } => conv(real, imag.as_ref()),
        NumericData::Double { real, imag } => conv(real, imag.as_ref()),
        // 64-bit integers: labels fit in f64 exactly.
        NumericData::Int64 { real, imag } => {
            (real.iter().map(|&v| v as f64).collect(), imag.is_some())
        }
        NumericData::UInt64 { real, imag } => {
            (real.iter().map(|&v| v as f64).collect(), imag.is_some())
        }
    }
}

/// Reads one SVHN `.mat` file into `[n, 3, 32, 32]` images with digit labels `0..10`.
///
/// Errors name the file: [`DataError::Missing`] / [`DataError::Io`], and [`DataError::Mat`]
/// for anything else (not a v5 file, truncated or corrupt, no `X` or `y`, `X` not `uint8` of
/// size `32 x 32 x 3 x N`, `y` not `N` labels, a label not an integer in `1..=10`).
pub fn read_svhn(path: &Path) -> Result<Images, DataError> {
    let bad = |why: String| DataError::Mat {
        path: path.to_path_buf(),
        why,
    };
    // The header is checked first; the file is then parsed from disk (no second copy).
    let mut file = fs::File::open(path).map_err(|e| io_or_missing(path, e))?;
    let mut head = Vec::with_capacity(19);
    (&mut file)
        .take(19)
        .read_to_end(&mut head)
        .and_then(|_| file.seek(SeekFrom::Start(0)))
        .map_err(|e| io_or_missing(path, e))?;
    if head != b"MATLAB 5.0 MAT-file" {
        let head = String::from_utf8_lossy(&head).into_owned();
        return Err(bad(format!(
            "header starts `{}`, not `MATLAB 5.0 MAT-file` (only v5 files are read; v7.3 is HDF5)",
            head.escape_debug()
        )));
    }
    let mat = MatFile::parse(std::io::BufReader::new(file))
        .map_err(|e| bad(format!("{e} (the file may be truncated or corrupt)")))?;
    let x = mat
        .find_by_name("X")
        .ok_or_else(|| bad("no numeric array `X` (the file may be truncated or corrupt)".into()))?;
    let n = match x.size().as_slice() {
        &[SIDE, SIDE, 3, n] if n > 0 => n,
        d => {
            return Err(bad(format!(
                "`X` has size {d:?}, expected [32, 32, 3, n] with n > 0"
            )));
        }
    };
    let NumericData::UInt8 {
        real: px,
        imag: None,
    } = x.data()
    else {
        return Err(bad("`X` is not a real uint8 array".into()));
    };
    let y = mat
        .find_by_name("y")
        .ok_or_else(|| bad("no numeric array `y` (the file may be truncated or corrupt)".into()))?;
    let (ys, complex) = reals(y.data());
    if complex || ys.len() != n || !y.size().contains(&n) {
        return Err(bad(format!(
            "`y` has size {:?}, expected [{n}, 1] real labels (one per image of `X`)",
            y.size()
        )));
    }
    let mut labels = Vec::with_capacity(n);
    for (index, &v) in ys.iter().enumerate() {
        if !(1.0..=10.0).contains(&v) || v.fract() != 0.0 {
            return Err(bad(format!(
                "label {v} of item {index} is not an integer in 1..=10"
            )));
        }
        labels.push((v as u8) % 10);
    }
    let plane = SIDE * SIDE;
    let mut pixels = vec![0u8; px.len()];
    for (k, img) in px.chunks_exact(3 * plane).enumerate() {
        for ch in 0..3 {
            let out = &mut pixels[(k * 3 + ch) * plane..][..plane];
            for c in 0..SIDE {
                for r in 0..SIDE {
                    out[r * SIDE + c] = img[ch * plane + c * SIDE + r];
                }
            }
        }
    }
    Ok(Images {
        pixels,
        labels,
        channels: 3,
        rows: SIDE,
        cols: SIDE,
        classes: 10,
    })
}

/// Writes `images` (3 x 32 x 32, labels `0..10`) as an SVHN `.mat` file: `X` in MATLAB's
/// column-major `32 x 32 x 3 x N` order and `y` as `double` with 0 written as 10. For
/// synthetic test folders.
///
/// # Panics
/// If `images` is not 3 x 32 x 32.
pub fn write_svhn(path: &Path, images: &Images, compressed: bool) -> Result<(), DataError> {
    assert_eq!((images.channels, images.rows, images.cols), (3, SIDE, SIDE));
    let plane = SIDE * SIDE;
    let mut x = vec![0u8; images.pixels.len()];
    for k in 0..images.len() {
        for ch in 0..3 {
            for r in 0..SIDE {
                for c in 0..SIDE {
                    x[k * 3 * plane + ch * plane + c * SIDE + r] = images.at(k, r, c, ch);
                }
            }
        }
    }
    let y = images
        .labels
        .iter()
        .map(|&l| if l == 0 { 10.0 } else { f64::from(l) })
        .collect();
    let vars = [
        MatVar {
            name: "X".into(),
            dims: vec![SIDE, SIDE, 3, images.len()],
            values: MatValues::U8(x),
        },
        MatVar {
            name: "y".into(),
            dims: vec![images.len(), 1],
            values: MatValues::F64(y),
        },
    ];
    write_mat(path, &vars, compressed)
}

#[cfg(test)]
#[path = "svhn_tests.rs"]
mod tests;
