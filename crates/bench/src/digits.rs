//! The BlackJAX comparison: SGLD with a streaming BMA on the digits-shaped MLP.

use burn::module::{Module, ParamId};
use burn::nn::LinearConfig;
use burn::tensor::{Device, Distribution, Int, Tensor, activation};
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{
    Gaussian, Likelihood, Mlp, ModelPosterior, Posterior, Prior, Scale, Targets, nn,
};
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};

use crate::timing::{Step, paired, record};
use crate::{BenchArgs, Figure};
use sgmcmc_apps::AppError;

/// The digits-shaped data of the BlackJAX comparison (random values: the speed does not depend
/// on them), on one device.
pub(crate) struct Digits {
    x: Tensor<2>,
    y: Tensor<1, Int>,
    x_test: Tensor<2>,
}

impl Digits {
    fn new(device: &Device) -> Self {
        let (n, n_test) = (1437usize, 360usize);
        let labels: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
        Self {
            x: Tensor::<2>::random([n, 64], Distribution::Normal(0.0, 1.0), device),
            y: Tensor::<1, Int>::from_data(labels.as_slice(), device),
            x_test: Tensor::<2>::random([n_test, 64], Distribution::Normal(0.0, 1.0), device),
        }
    }
}

/// One SGLD step of the BlackJAX comparison on `target` over the network `net`: a random
/// window of 100 consecutive training points (a `slice`, no index upload, made a batch by
/// `batch`), and every 100 steps the softmax predictions on the test set (`predict`, on the
/// plain device) added to a streaming Bayesian model average.
pub(crate) fn digits_step<'a, M, T>(
    (target, net): (T, M),
    data: &'a Digits,
    seed: u64,
    batch: impl Fn(Tensor<2>, Tensor<1, Int>) -> T::Batch + 'a,
    predict: impl Fn(&M, &Tensor<2>) -> Result<Vec<f64>, AppError> + 'a,
) -> Result<Step<'a>, AppError>
where
    M: Module + 'a,
    T: Target<M> + 'a,
{
    let ens = ModuleEnsemble::new(target, vec![net], seed)?;
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-5, 1.0), ens)?;
    let mut bma = sgmcmc_models::metrics::Bma::default();
    let mut rng = ChainRng::new(3, seed);
    let n = data.x.dims()[0];
    let x_test = data.x_test.clone().inner();
    let mut k = 0u64;
    Ok(Box::new(move || {
        let start = rng.below(n - 100);
        let b = batch(
            data.x.clone().slice(start..start + 100),
            data.y.clone().slice(start..start + 100),
        );
        s.step(&b)?;
        k += 1;
        if k.is_multiple_of(100) {
            let m = s.ensemble().modules().next().expect("one chain");
            bma.add(1.0, &predict(m, &x_test)?);
        }
        Ok(())
    }))
}

/// [`digits_step`] of the digits MLP ([`sgmcmc_apps::digits::network`]) under `target`.
fn mlp_step<'a, T>(
    device: &Device,
    target: T,
    data: &'a Digits,
    seed: u64,
) -> Result<Step<'a>, AppError>
where
    T: Target<Mlp, Batch = Batch<Tensor<2>>> + 'a,
{
    let net = sgmcmc_apps::digits::network(100).init(device);
    let batch = |x, y| Batch {
        x,
        y: Targets::Class(y),
    };
    digits_step(
        (target, net),
        data,
        seed,
        batch,
        sgmcmc_apps::digits::predict,
    )
}

/// The digits MLP as a user writes it with the drop-in layers ([`sgmcmc_models::nn`]).
#[derive(Module, Debug)]
struct DropInMlp {
    hidden: nn::Linear,
    out: nn::Linear,
}

impl DropInMlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(nn::tanh(self.hidden.forward(x)))
    }
}

/// [`digits_step`] of [`DropInMlp`] under the [`nn::categorical`] likelihood and `post`'s
/// prior.
fn drop_in_step<'a>(
    device: &Device,
    post: &Posterior,
    data: &'a Digits,
    seed: u64,
) -> Result<Step<'a>, AppError> {
    let net = DropInMlp {
        hidden: LinearConfig::new(64, 100).init(device).into(),
        out: LinearConfig::new(100, 10).init(device).into(),
    };
    let likelihood = nn::categorical(|m: &DropInMlp, x: &Tensor<2>| m.forward(x.clone()));
    let target = ModelPosterior::new(likelihood, post.scale.n_data).with_prior(post.prior());
    let predict = |m: &DropInMlp, x: &Tensor<2>| {
        let p = activation::softmax(m.valid().forward(x.clone()), 1);
        p.into_data()
            .try_into_vec::<f32>()
            .map(|v| v.into_iter().map(f64::from).collect())
            .map_err(|e| AppError::Run(format!("reading predictions: {e:?}")))
    };
    digits_step((target, net), data, seed, |x, y| (x, y), predict)
}

/// The BlackJAX comparison: SGLD on a 64-100-10 tanh MLP at batch 100 (the shape of sklearn's
/// digits: 1437 training and 360 test points, 10 classes), with a streaming Bayesian model
/// average of the test predictions every 100 steps. Reports steps/s including the averaging,
/// for the autodiff [`Posterior`] and for the closed-form [`MlpPosterior`] on the plain device
/// (paired, interleaved), and their step-time ratio; then the autodiff path with the Gaussian
/// prior detached (its default, [`Prior::add_detached`]) against the prior on the graph, and
/// the library's MLP against the same MLP written with the drop-in layers ([`DropInMlp`]).
pub(crate) fn digits_rate(
    a: &BenchArgs,
    device: &Device,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let ad = device.clone().autodiff();
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(1437, 1e-4),
    };
    let (on_ad, plain) = (Digits::new(&ad), Digits::new(device));
    let mut autodiff = mlp_step(&ad, post.clone(), &on_ad, 1)?;
    let mut closed = mlp_step(device, MlpPosterior::new(post.clone()), &plain, 1)?;
    let (ra, rb, ratio) = paired(a.seconds, &mut autodiff, &mut closed)?;
    let label = "mlp64-100-10_tanh_b100";
    record(
        figures,
        ratios,
        [
            (format!("{label}/sgld+bma steps"), ra),
            (format!("{label}/closed-form sgld+bma steps"), rb),
        ],
        (format!("{label}/closed-form:autodiff step time"), ratio),
    );
    let on_graph = post.as_model_posterior().with_prior(OnGraph(post.prior()));
    let mut graph = mlp_step(&ad, on_graph, &on_ad, 1)?;
    let mut autodiff = mlp_step(&ad, post.clone(), &on_ad, 1)?;
    let (rg, _, ratio) = paired(a.seconds, &mut graph, &mut autodiff)?;
    record(
        figures,
        ratios,
        [(format!("{label}/sgld+bma steps, prior on the graph"), rg)],
        (format!("{label}/detached:graph prior step time"), ratio),
    );
    // The same MLP written with the drop-in layers and the categorical likelihood, as the
    // README teaches, against the library's `impl Network` path.
    let mut autodiff = mlp_step(&ad, post.clone(), &on_ad, 1)?;
    let mut drop_in = drop_in_step(&ad, &post, &on_ad, 1)?;
    let (_, rd, ratio) = paired(a.seconds, &mut autodiff, &mut drop_in)?;
    record(
        figures,
        ratios,
        [(format!("{label}/sgld+bma steps, drop-in layers"), rd)],
        (format!("{label}/drop-in:network step time"), ratio),
    );
    Ok(())
}

/// A prior on the autodiff graph only (no [`Prior::add_detached`]): the reference the detached
/// Gaussian prior is timed against.
struct OnGraph(Gaussian);

impl<M: Module> Prior<M> for OnGraph {
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
        self.0.energy(model, exclude)
    }
}
