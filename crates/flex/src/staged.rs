//! Long reductions on an accelerator, in stages.
//!
//! CubeCL 0.11's reduce kernels (burn 0.22.1's wgpu and cuda devices) return wrong sums over
//! long runs of values on some devices: on the software Vulkan device (lavapipe, the project's
//! CI), `sum_dim` over rows of 100,352 values was off by 54% relative with burn's `autotune` on
//! and rows of 300,000 by 13% without it, while every row of up to 32,768 values was right to
//! `f32` rounding (tests/gpu_reductions.rs). A training-mode batch norm reduces over
//! `batch x height x width` values per channel (100,352 for ResNet20 on 28x28 images at batch
//! 128; 262,144 on CIFAR at batch 256) and a prior sums every parameter tensor, so both take
//! their sums here in stages of at most [`RUN`] values each on a device with a memory pool of
//! its own (wgpu, cuda). The CPU backends keep their one reduction (and their bits).

use burn::nn::BatchNorm;
use burn::tensor::{Device, Tensor};

/// The longest run of values one reduction adds up on an accelerator.
pub const RUN: usize = 16_384;

/// Whether `device` is an accelerator (its own memory pool, as burn reports it).
fn accelerator(device: &Device) -> bool {
    device.memory_pool_usage().is_some()
}

/// The sum of every element of `x`, as a `[1]` tensor; on an accelerator in stages of at most
/// [`RUN`] values (padded with zeros to whole rows).
pub fn sum_all<const D: usize>(x: Tensor<D>) -> Tensor<1> {
    let n = x.shape().num_elements();
    if n <= RUN || !accelerator(&x.device()) {
        return x.sum();
    }
    let rows = n.div_ceil(RUN);
    let flat: Tensor<1> = x.flatten(0, D - 1);
    let flat = if rows * RUN > n {
        let zeros = Tensor::zeros([rows * RUN - n], &flat.device());
        Tensor::cat(vec![flat, zeros], 0)
    } else {
        flat
    };
    let partial: Tensor<1> = flat.reshape([rows, RUN]).sum_dim(1).flatten(0, 1);
    sum_all(partial)
}

/// A training-mode batch norm of `x: [batch, channels, ...]` with its statistics reduced in
/// two stages (over each image's `...` values, then over the batch), and the same
/// running-statistics update as burn's `BatchNorm::forward_train` (biased variance, momentum
/// `bn.momentum`): `None` where burn's own does (not training, not an autodiff device, not an
/// accelerator, or each channel's values fit one run, or a stage would not).
pub fn batch_norm_train<const D: usize>(bn: &BatchNorm, x: &Tensor<D>) -> Option<Tensor<D>> {
    let device = x.device();
    if D < 3 || !device.is_autodiff() || !bn.training.is_enabled() || !accelerator(&device) {
        return None;
    }
    let dims = x.dims();
    let (b, c) = (dims[0], dims[1]);
    let rest = dims[2..].iter().product::<usize>();
    if b * rest <= RUN || rest > RUN || b > RUN {
        return None;
    }
    let x3: Tensor<3> = x.clone().reshape([b, c, rest]);
    let mean = x3.clone().mean_dim(2).mean_dim(0);
    let centred = x3 - mean.clone();
    let var = centred.clone().powi_scalar(2).mean_dim(2).mean_dim(0);
    let scale = bn.gamma.val().reshape([1, c, 1]) / (var.clone() + bn.epsilon).sqrt();
    let y = centred * scale + bn.beta.val().reshape([1, c, 1]);
    let m = bn.momentum;
    let running = |old: Tensor<1>, new: Tensor<3>| {
        old.to_device(&device)
            .mul_scalar(1.0 - m)
            .add(new.detach().reshape([c]).mul_scalar(m))
            .detach()
    };
    bn.running_mean
        .update(running(bn.running_mean.value_sync(), mean));
    bn.running_var
        .update(running(bn.running_var.value_sync(), var));
    Some(y.reshape(dims))
}
