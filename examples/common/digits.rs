//! The handwritten digits the classifier examples train on, and their tensors.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sgmcmc::burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc::data::digits::{Digits, write_synthetic};

/// The digits as tensors: images `[n, 1, 8, 8]` in `[0, 1]` and labels.
pub fn tensors(d: &Digits, device: &Device) -> (Tensor<4>, Tensor<1, Int>) {
    let n = d.len();
    let x = Tensor::from_data(TensorData::new(d.features(), [n, 1, 8, 8]), device);
    let labels: Vec<i64> = d.labels.iter().map(|&l| i64::from(l)).collect();
    (x, Tensor::from_data(TensorData::new(labels, [n]), device))
}

/// The real digits from `$SGMCMC_DATA_DIR/digits` (else `../shared/datasets/digits`), else
/// synthetic ones written under `scratch` with a fifth of the labels replaced at random (the
/// synthetic classes alone are separable without error, which leaves a classifier nothing to be
/// uncertain about).
pub fn digits(scratch: &Path) -> Result<Digits, Box<dyn std::error::Error>> {
    let root = std::env::var_os("SGMCMC_DATA_DIR")
        .map_or_else(|| PathBuf::from("../shared/datasets"), PathBuf::from);
    if let Ok(d) = Digits::load(&root.join("digits")) {
        return Ok(d);
    }
    let dir = scratch.join("synthetic-digits");
    println!(
        "notice: no digits under {} (set SGMCMC_DATA_DIR); using 1000 synthetic ones",
        root.display()
    );
    write_synthetic(&dir, 1000, 3)?;
    let mut d = Digits::load(&dir)?;
    for (i, label) in d.labels.iter_mut().enumerate() {
        let h = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        if h.is_multiple_of(5) {
            *label = ((u64::from(*label) + 1 + (h >> 8) % 9) % 10) as u8;
        }
    }
    Ok(d)
}

/// The largest difference between a run's averaged class probabilities and those of its saved
/// posterior loaded back; an error when either kept no model.
pub fn reload_difference(run: Option<Vec<f64>>, saved: Option<Vec<f64>>) -> Result<f64, String> {
    let (run, saved) = run.zip(saved).ok_or("no model kept")?;
    Ok(run
        .iter()
        .zip(&saved)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs())))
}
