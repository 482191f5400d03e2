//! Toy chains as rows of one burn tensor: `P` chains of a `d`-dimensional toy target are a single
//! `[P, d]` parameter, so the kernel moves all of them with a handful of tensor operations.
//!
//! The analytic energies are evaluated on the host by the same [`ToyTarget`] code the `f64` fast
//! path uses (one formula per toy, no second tensor implementation to keep in sync); the
//! gradient goes back as one `[P, d]` tensor. On a GPU this costs a read-back per step, which is
//! fine for toys; network targets never leave the device.

use burn::module::{Module, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Float, Tensor, TensorData};

use super::toy::ToyTarget;
use super::{Estimate, Target};
use crate::error::TargetError;
use crate::rng::ChainRng;
use crate::transfer;

/// `P` chains of a `d`-dimensional toy target, one per row.
#[derive(Module, Debug)]
pub struct Particles {
    /// Positions `[P, d]`.
    pub x: Param<Tensor<2>>,
}

impl Particles {
    /// Particles at the given rows (`rows[p]` is chain `p`'s starting point, all of length `d`).
    pub fn from_rows(rows: &[Vec<f64>], device: &Device) -> Result<Self, TargetError> {
        let p = rows.len();
        let d = rows.first().map_or(0, Vec::len);
        if p == 0 || d == 0 || rows.iter().any(|r| r.len() != d) {
            return Err(TargetError::Shape(format!(
                "particles need P >= 1 rows of equal length d >= 1 (got {p} rows)"
            )));
        }
        let data: Vec<f32> = rows.iter().flatten().map(|&v| v as f32).collect();
        let x: Tensor<2> = transfer::upload(TensorData::new(data, [p, d]), device);
        Ok(Self {
            x: Param::from_tensor(x),
        })
    }

    /// Positions as host rows.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        let [p, d] = self.x.val().dims();
        let flat = host_values(self.x.val());
        (0..p).map(|i| flat[i * d..(i + 1) * d].to_vec()).collect()
    }
}

fn host_values(t: Tensor<2>) -> Vec<f64> {
    transfer::read(t)
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map(|v| v.into_iter().map(f64::from).collect())
        .unwrap_or_default()
}

impl Target<Particles> for ToyTarget {
    type Batch = ();

    fn chains_per_module(&self, model: &Particles) -> usize {
        model.x.val().dims()[0]
    }

    fn estimate(
        &self,
        model: &Particles,
        _batch: &(),
        rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let x = model.x.val();
        let [p, d] = x.dims();
        if d != self.dim() || rngs.len() != p {
            return Err(TargetError::Shape(format!(
                "particles are [{p}, {d}], target has dimension {} and {} streams were given",
                self.dim(),
                rngs.len()
            )));
        }
        let device = x.device();
        let flat = host_values(x.inner());
        let mut grad = vec![0.0f64; p * d];
        let energies: Vec<f64> = (0..p)
            .map(|i| {
                let rows = i * d..(i + 1) * d;
                self.noisy_energy_grad(&flat[rows.clone()], &mut grad[rows], &mut rngs[i])
            })
            .collect();
        let g32: Vec<f32> = grad.iter().map(|&v| v as f32).collect();
        let mut grads = GradientsParams::new();
        grads.register(
            model.x.id,
            transfer::upload::<2, Float>(TensorData::new(g32, [p, d]), &device),
        );
        Ok(Estimate {
            energies: energies.into(),
            grads,
        })
    }

    fn noisy_energies(&self) -> bool {
        self.noise().energy.scale > 0.0
    }

    fn full_energy(&self, model: &Particles) -> Result<Vec<f64>, TargetError> {
        Ok(model
            .rows()
            .iter()
            .map(|r| self.potential().energy(r))
            .collect())
    }
}
