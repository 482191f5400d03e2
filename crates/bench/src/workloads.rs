//! The measured workloads: the UCI MLP, the papers' CNN and ResNet20 on random data of the
//! papers' shapes, and the samplers stepped on them.

use burn::module::Module;
use burn::tensor::{Device, Distribution, Int, Tensor};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{
    Activation, CnnConfig, Likelihood, MlpConfig, Network, Posterior, ResNet, ResNetConfig, Scale,
    Targets,
};
use sgmcmc_samplers::ensemble::{ModuleEnsemble, NoiseSource};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{Sgmcmc, SgmcmcConfig};

use sgmcmc_apps::AppError;

/// The MLP benchmark: 13-50-1 ReLU network, batch 50 of random regression data, Gaussian
/// likelihood, N = 1000, prior precision 1 (UCI scale).
pub fn mlp_workload(device: &Device) -> (MlpConfig, Posterior, Batch<Tensor<2>>) {
    let x = Tensor::<2>::random([50, 13], Distribution::Normal(0.0, 1.0), device);
    let y = Tensor::<2>::random([50, 1], Distribution::Normal(0.0, 1.0), device);
    let mlp = MlpConfig {
        inputs: 13,
        hidden: vec![50],
        outputs: 1,
        activation: Activation::Relu,
    };
    let post = Posterior {
        likelihood: Likelihood::Gaussian { precision: 1.0 },
        scale: Scale {
            n_data: 1000,
            prior_precision: 1.0,
        },
    };
    (
        mlp,
        post,
        Batch {
            x,
            y: Targets::Real(y),
        },
    )
}

/// The CNN benchmark: the papers' network (conv 1->32 5x5, pool, conv 32->64 5x5, pool, fc 50,
/// fc 5) on a batch of 256 random 28x28 images, categorical likelihood, N = 30,000.
pub fn cnn_workload(device: &Device) -> (CnnConfig, Posterior, Batch<Tensor<4>>) {
    let x = Tensor::<4>::random([256, 1, 28, 28], Distribution::Normal(0.0, 1.0), device);
    let labels: Vec<i64> = (0..256).map(|i| i % 5).collect();
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), device);
    let cnn = CnnConfig {
        classes: 5,
        ..CnnConfig::default()
    };
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(30_000, 1e-3),
    };
    (
        cnn,
        post,
        Batch {
            x,
            y: Targets::Class(y),
        },
    )
}

/// ResNet20 through burn's own `Conv2d` and `BatchNorm` modules only
/// ([`ResNet::forward_reference`]): the path the fast layers replace, measured beside them.
#[derive(Module, Debug)]
pub(crate) struct ReferenceResNet {
    pub(crate) net: ResNet,
}

impl Network for ReferenceResNet {
    type Input = Tensor<4>;

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.net.forward_reference(x)
    }
}

/// A batch of `batch` random `[channels, side, side]` images with labels `i % 10`.
pub(crate) fn image_batch(
    batch: usize,
    channels: usize,
    side: usize,
    device: &Device,
) -> Batch<Tensor<4>> {
    let x = Tensor::<4>::random(
        [batch, channels, side, side],
        Distribution::Normal(0.0, 1.0),
        device,
    );
    let labels: Vec<i64> = (0..batch as i64).map(|i| i % 10).collect();
    Batch {
        x,
        y: Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), device)),
    }
}

/// SGHMC on ResNet20 with the image tables' prior (weight decay 5e-4 on the mean loss, i.e.
/// precision `N * 5e-4` at full-data scale), categorical likelihood, one chain.
pub fn resnet_sampler<M: Network<Input = Tensor<4>>>(
    net: M,
    n_data: usize,
) -> Result<Sgmcmc<ModuleEnsemble<M, Posterior>>, AppError> {
    resnet_sampler_with(net, n_data, NoiseSource::Auto)
}

/// [`resnet_sampler`] with its Langevin noise drawn from `noise`.
pub(crate) fn resnet_sampler_with<M: Network<Input = Tensor<4>>>(
    net: M,
    n_data: usize,
    noise: NoiseSource,
) -> Result<Sgmcmc<ModuleEnsemble<M, Posterior>>, AppError> {
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(n_data, 5e-4),
    };
    let ens = ModuleEnsemble::new(post, vec![net], 1)?.with_noise(noise);
    Ok(Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::sghmc(), 1e-7, 1.0),
        ens,
    )?)
}

/// ResNet20 for one-channel images (the Fashion-MNIST preset's network) on `device`.
pub(crate) fn grey_resnet20(device: &Device) -> Result<ResNet, AppError> {
    ResNetConfig::resnet20(10)
        .with_in_channels(1)
        .init(device)
        .map_err(|e| AppError::Run(e.to_string()))
}
