//! Inputs a user hands a saved posterior for predictions: rows of numbers, images as an IDX
//! file or as text rows of pixel values, and labels.
//!
//! Text rows hold numbers separated by commas or white space, one row per line; blank lines
//! are skipped, and a first line that is not numeric is taken as a header. Every other line must
//! hold exactly the expected count of finite numbers; an error names the file and the line.

use std::path::Path;

use crate::error::DataError;
use crate::idx::read_idx;

/// The rows of numbers in `path`, each `width` wide.
pub fn read_rows(path: &Path, width: usize) -> Result<Vec<Vec<f64>>, DataError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DataError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    let at = |i: usize, what: String| {
        DataError::Invalid(format!("{}:{}: {what}", path.display(), i + 1))
    };
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        if cells.is_empty() {
            continue;
        }
        let row: Vec<f64> = match cells.iter().map(|c| c.parse()).collect() {
            Ok(r) => r,
            Err(_) if i == 0 => continue,
            Err(_) => return Err(at(i, "not a row of numbers".into())),
        };
        if row.len() != width {
            return Err(at(
                i,
                format!("expected {width} numbers, got {}", row.len()),
            ));
        }
        if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(at(
                i,
                format!("column {} is {v}, not a finite number", j + 1),
            ));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(DataError::Invalid(format!(
            "{} holds no row",
            path.display()
        )));
    }
    Ok(rows)
}

/// The pixels of the images in `path`, `[n, channels, rows, cols]` row-major, for images of
/// `shape = [channels, rows, cols]`: an IDX file of unsigned bytes (`[n, rows, cols]` for one
/// channel, or `[n, channels, rows, cols]`; plain or gzip), else text rows of
/// `channels * rows * cols` integers in `0..=255`.
pub fn read_pixels(path: &Path, shape: [usize; 3]) -> Result<Vec<u8>, DataError> {
    let [channels, rows, cols] = shape;
    let pixels = match read_idx(path) {
        Ok(a) => {
            let shape_ok = match a.dims.as_slice() {
                [_, r, c] => channels == 1 && [*r, *c] == [rows, cols],
                [_, ch, r, c] => [*ch, *r, *c] == shape,
                _ => false,
            };
            if !shape_ok {
                return Err(DataError::Invalid(format!(
                    "{}: IDX images of shape {:?}, the run's are {channels} x {rows} x {cols}",
                    path.display(),
                    a.dims
                )));
            }
            a.data
        }
        // Not IDX: text rows of pixel values.
        Err(_) => read_rows(path, channels * rows * cols)?
            .into_iter()
            .enumerate()
            .map(|(i, row)| pixel_row(path, i, row))
            .collect::<Result<Vec<_>, _>>()?
            .concat(),
    };
    if pixels.is_empty() {
        return Err(DataError::Invalid(format!(
            "{} holds no image",
            path.display()
        )));
    }
    Ok(pixels)
}

fn pixel_row(path: &Path, i: usize, row: Vec<f64>) -> Result<Vec<u8>, DataError> {
    row.into_iter()
        .map(|v| {
            if (0.0..=255.0).contains(&v) && v.fract() == 0.0 {
                Ok(v as u8)
            } else {
                Err(DataError::Invalid(format!(
                    "{}: image {}: pixel {v} is not an integer in 0..=255",
                    path.display(),
                    i + 1
                )))
            }
        })
        .collect()
}

/// `n` labels from an IDX file of bytes or a text file of one integer in `0..255` per line.
pub fn read_labels(path: &Path, n: usize) -> Result<Vec<u8>, DataError> {
    let labels: Vec<u8> = match read_idx(path) {
        Ok(a) => a.data,
        Err(_) => read_rows(path, 1)?
            .into_iter()
            .map(|r| {
                let v = r[0];
                if v.fract() == 0.0 && (0.0..255.0).contains(&v) {
                    Ok(v as u8)
                } else {
                    Err(DataError::Invalid(format!(
                        "{}: label {v} is not a class index",
                        path.display()
                    )))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    if labels.len() != n {
        return Err(DataError::Invalid(format!(
            "{}: {} labels for {n} images",
            path.display(),
            labels.len()
        )));
    }
    Ok(labels)
}
