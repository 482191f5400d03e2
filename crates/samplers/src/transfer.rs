//! Host-device transfers, counted.
//!
//! On an accelerator (burn-wgpu) every upload is a staging copy and every read a
//! synchronisation: the host waits for the queue to drain. A sampler step should need one read
//! (the energies of all chains, which the contour and replica controls use) and no upload but
//! the batch. Every transfer the sampler crate makes goes through [`upload`] and [`read`]
//! (clippy's `disallowed_methods` rejects the direct calls in this crate), which count them
//! process-wide, so a test can assert how many a step makes ([`counts`]; tests/transfers.rs).

use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::kind::Basic;
use burn::tensor::{Device, Tensor, TensorData};

use crate::error::TargetError;

static UPLOADS: AtomicU64 = AtomicU64::new(0);
static READS: AtomicU64 = AtomicU64::new(0);

/// Transfers made so far in this process (through [`upload`] and [`read`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    /// Host-to-device copies.
    pub uploads: u64,
    /// Device-to-host reads (each one a synchronisation on an accelerator).
    pub reads: u64,
}

impl std::ops::Sub for Transfers {
    type Output = Self;
    fn sub(self, earlier: Self) -> Self {
        Self {
            uploads: self.uploads - earlier.uploads,
            reads: self.reads - earlier.reads,
        }
    }
}

/// The process-wide counts: take the difference of two calls around the work to measure.
pub fn counts() -> Transfers {
    Transfers {
        uploads: UPLOADS.load(Ordering::Relaxed),
        reads: READS.load(Ordering::Relaxed),
    }
}

/// `data` as a tensor (float, int or bool) on `device`: one upload.
#[allow(clippy::disallowed_methods)]
pub fn upload<const D: usize, K: Basic>(data: TensorData, device: &Device) -> Tensor<D, K> {
    UPLOADS.fetch_add(1, Ordering::Relaxed);
    Tensor::from_data(data, device)
}

/// The values of `t` on the host: one read.
#[allow(clippy::disallowed_methods)]
pub fn read<const D: usize, K: Basic>(t: Tensor<D, K>) -> TensorData {
    READS.fetch_add(1, Ordering::Relaxed);
    t.into_data()
}

/// The values of the float tensor `t` on the host as `f64`: one read.
pub fn read_f64<const D: usize>(t: Tensor<D>) -> Result<Vec<f64>, TargetError> {
    let data = read(t).convert::<f32>();
    let values = data
        .as_slice::<f32>()
        .map_err(|e| TargetError::Shape(format!("reading energies: {e:?}")))?;
    Ok(values.iter().map(|&v| f64::from(v)).collect())
}
