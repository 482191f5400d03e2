//! The Langevin noise of module chains: drawn on the host from each chain's stream and uploaded,
//! or drawn on the module's device by burn's generator, seeded from each chain's stream.
//!
//! Host noise is the default on the CPU backends: it is the same stream the `f64` host path
//! draws, which the tests use to check one path against the other, and a run's noise does not
//! depend on anything else in the process. On an accelerator an upload per parameter tensor per
//! step is a staging copy each (59 for a ResNet20 chain), so there the noise is drawn where the
//! parameters live: every draw seeds burn's device generator with the next 64 bits of the
//! chain's stream ([`ChainRng::next_u64`]) under a process-wide lock
//! ([`crate::rng::with_device_seed`]), so each chain's noise is a function of its own stream,
//! reproducible on one device and resumed by a checkpoint. It is a different stream from the host
//! noise (the two paths agree in law, not in bits).

use burn::tensor::{Device, Distribution, Tensor, TensorData};

use crate::rng::{self, ChainRng};
use crate::transfer;

/// Where the Langevin noise of a [`ModuleEnsemble`](super::ModuleEnsemble)'s chains is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseSource {
    /// On the device when the modules live on an accelerator (a device with its own memory
    /// pool: burn-wgpu), else on the host.
    #[default]
    Auto,
    /// From each chain's host stream, uploaded.
    Host,
    /// By the device's generator, seeded from each chain's host stream.
    Device,
}

impl NoiseSource {
    /// Whether noise for modules on `device` is drawn there.
    pub fn on_device(self, device: &Device) -> bool {
        match self {
            Self::Auto => device.memory_pool_usage().is_some(),
            Self::Host => false,
            Self::Device => true,
        }
    }
}

/// Standard normal noise `[rows, cols]` for the chains of `rngs` (one row each): on the device
/// when `on_device`, else row `r` from stream `r` on the host.
pub(crate) fn draw(
    rngs: &mut [ChainRng],
    cols: usize,
    device: &Device,
    on_device: bool,
) -> Tensor<2> {
    if on_device {
        draw_on_device(rngs, cols, device)
    } else {
        draw_on_host(rngs, cols, device)
    }
}

fn draw_on_host(rngs: &mut [ChainRng], cols: usize, device: &Device) -> Tensor<2> {
    let rows = rngs.len();
    let mut buf = vec![0.0f32; rows * cols];
    for (rng, chunk) in rngs.iter_mut().zip(buf.chunks_mut(cols)) {
        // A local copy keeps the generator state in registers (the same stream; ~1.5x faster
        // than updating the state through the slice on every draw).
        let mut local = rng.clone();
        for v in chunk {
            *v = local.normal() as f32;
        }
        *rng = local;
    }
    transfer::upload(TensorData::new(buf, [rows, cols]), device)
}

/// One device draw for the whole `[rows, cols]` tensor. With one chain (a network) its seed is
/// the chain's next 64 bits; a module hosting several chains (toy particles) seeds its one draw
/// from all of theirs (every stream advances once), one kernel instead of one per row.
fn draw_on_device(rngs: &mut [ChainRng], cols: usize, device: &Device) -> Tensor<2> {
    let seed = rngs
        .iter_mut()
        .fold(0u64, |acc, r| rng::combine(acc, r.next_u64()));
    rng::with_device_seed(device, seed, || {
        Tensor::random([rngs.len(), cols], Distribution::Normal(0.0, 1.0), device)
    })
}
