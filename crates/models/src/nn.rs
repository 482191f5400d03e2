//! Drop-in layers: burn's [`Linear`](burn::nn::Linear), [`Conv2d`](burn::nn::conv::Conv2d),
//! [`BatchNorm`](burn::nn::BatchNorm) and [`MaxPool2d`](burn::nn::pool::MaxPool2d) whose
//! `forward` takes the fast path of [`crate::layers`] (one operation each way when training on
//! burn-flex, the staged statistics on an accelerator, burn's own op elsewhere), and the
//! categorical likelihood as one call.
//!
//! Each wraps burn's module and has burn's configs, parameters and record layout (its
//! [`Module`] visits the inner module's parameters under the same names), so weights saved from
//! either load into the other. Change the field types and add `.into()` to the configs' `init`:
//!
//! ```
//! use burn::module::Module;
//! use burn::nn::LinearConfig;
//! use burn::tensor::{Device, Int, Tensor};
//! use sgmcmc_models::nn::{Linear, categorical_nll, tanh};
//!
//! #[derive(Module, Debug)]
//! struct Mlp {
//!     hidden: Linear,
//!     out: Linear,
//! }
//!
//! impl Mlp {
//!     fn forward(&self, x: Tensor<2>) -> Tensor<2> {
//!         self.out.forward(tanh(self.hidden.forward(x)))
//!     }
//! }
//!
//! let device = Device::flex().autodiff();
//! let mlp = Mlp {
//!     hidden: LinearConfig::new(64, 100).init(&device).into(),
//!     out: LinearConfig::new(100, 10).init(&device).into(),
//! };
//! let x = Tensor::<2>::zeros([5, 64], &device);
//! let y = Tensor::<1, Int>::from_data([0, 1, 2, 3, 4], &device);
//! // `-sum_i log softmax(f(x_i))[y_i]` of the 5 examples.
//! let nll = categorical_nll(mlp.forward(x), &y).into_scalar::<f32>();
//! assert!(nll.is_finite() && nll > 0.0);
//! ```

use std::marker::PhantomData;

use burn::module::{
    Content, Devices, DisplaySettings, Module, ModuleDisplay, ModuleDisplayDefault, ModuleMapper,
    ModuleVisitor,
};
use burn::tensor::{Device, Int, Tensor};
use sgmcmc_samplers::TargetError;

use crate::nll::{BatchNll, NegLogLik};

pub use sgmcmc_flex::layers::tanh;

/// A newtype over a burn module whose [`Module`] and display are the inner module's.
macro_rules! drop_in {
    ($(#[$doc:meta])* $name:ident, $inner:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name(pub $inner);

        impl From<$inner> for $name {
            fn from(module: $inner) -> Self {
                Self(module)
            }
        }

        impl Module for $name {
            fn collect_devices(&self, devices: Devices) -> Devices {
                self.0.collect_devices(devices)
            }
            fn fork(self, device: &Device) -> Self {
                Self(self.0.fork(device))
            }
            fn to_device(self, device: &Device) -> Self {
                Self(self.0.to_device(device))
            }
            fn train(self) -> Self {
                Self(self.0.train())
            }
            fn valid(&self) -> Self {
                Self(self.0.valid())
            }
            fn materialize(self) -> Self {
                Self(self.0.materialize())
            }
            fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
                self.0.visit(visitor)
            }
            fn map<M: ModuleMapper>(self, mapper: &mut M) -> Self {
                Self(self.0.map(mapper))
            }
        }

        impl ModuleDisplayDefault for $name {
            fn content(&self, content: Content) -> Option<Content> {
                self.0.content(content)
            }
            fn num_params(&self) -> usize {
                ModuleDisplayDefault::num_params(&self.0)
            }
        }

        impl ModuleDisplay for $name {
            fn custom_settings(&self) -> Option<DisplaySettings> {
                self.0.custom_settings()
            }
            fn custom_content(&self, content: Content) -> Option<Content> {
                self.0.custom_content(content)
            }
        }
    };
}

drop_in!(
    /// burn's `Linear` (`LinearConfig::new(d_in, d_out).init(device).into()`), forward through
    /// [`crate::layers::linear`].
    Linear,
    burn::nn::Linear
);
drop_in!(
    /// burn's `Conv2d`, forward through [`crate::layers::conv2d`].
    Conv2d,
    burn::nn::conv::Conv2d
);
drop_in!(
    /// burn's `BatchNorm` (the same running statistics), forward through
    /// [`crate::layers::batch_norm`].
    BatchNorm,
    burn::nn::BatchNorm
);
drop_in!(
    /// burn's `MaxPool2d`, forward through [`crate::layers::max_pool2d`].
    MaxPool2d,
    burn::nn::pool::MaxPool2d
);

impl Linear {
    /// `x W + b` for `x: [n, d_in]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        crate::layers::linear(&self.0, x)
    }
}

impl Conv2d {
    /// The convolution of `x: [n, c, h, w]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        crate::layers::conv2d(&self.0, x)
    }
}

impl BatchNorm {
    /// Batch normalisation of `x: [n, c, ...]` (batch statistics in training, the running ones
    /// on a plain device).
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        crate::layers::batch_norm(&self.0, x)
    }
}

impl MaxPool2d {
    /// Max pooling of `x: [n, c, h, w]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        crate::layers::max_pool2d(&self.0, x)
    }
}

/// `-sum_i log softmax(logits_i)[labels_i]`, a `[1]` tensor, with its gradient in closed form
/// (one operation on burn-flex): the categorical likelihood of [`crate::Likelihood::Categorical`].
pub fn categorical_nll(logits: Tensor<2>, labels: &Tensor<1, Int>) -> Tensor<1> {
    crate::likelihood::categorical_nll(logits, labels)
}

/// The categorical likelihood of a classifier given by its logits, for
/// [`ModelPosterior`](crate::ModelPosterior): batches are `(inputs, labels)` and the batch's
/// negative log-likelihood is [`categorical_nll`] of `logits(model, inputs)`, e.g.
/// `ModelPosterior::new(categorical(|m: &Cnn, x: &Tensor<4>| m.forward(x.clone())), n_train)`.
pub fn categorical<M, X, F>(logits: F) -> Categorical<F, X>
where
    F: Fn(&M, &X) -> Tensor<2> + Sync,
{
    categorical_of(logits)
}

/// The class probabilities `softmax(logits)` of each row, row-major as `f64`: what the
/// `predict` closure of the engine's `ClassifierAverage` returns, e.g.
/// `|net: &Net| probabilities(net.valid().forward(x_test.clone()))` with `x_test` on the plain
/// device (`Tensor::inner`), off the autodiff graph.
pub fn probabilities(logits: Tensor<2>) -> Result<Vec<f64>, String> {
    let p = sgmcmc_samplers::transfer::read(burn::tensor::activation::softmax(logits, 1));
    Ok(p.iter::<f64>().collect())
}

/// The likelihood of [`categorical`].
pub struct Categorical<F, X> {
    logits: F,
    _inputs: PhantomData<fn(&X)>,
}

impl<F: Clone, X> Clone for Categorical<F, X> {
    fn clone(&self) -> Self {
        categorical_of(self.logits.clone())
    }
}

fn categorical_of<F, X>(logits: F) -> Categorical<F, X> {
    Categorical {
        logits,
        _inputs: PhantomData,
    }
}

impl<M, X: Sync, F> NegLogLik<M> for Categorical<F, X>
where
    M: Module,
    F: Fn(&M, &X) -> Tensor<2> + Sync,
{
    type Batch = (X, Tensor<1, Int>);

    fn nll(&self, model: &M, (x, y): &Self::Batch) -> Result<BatchNll, TargetError> {
        let n = y.dims()[0];
        if n == 0 {
            return Err(TargetError::Shape(
                "the likelihood saw an empty batch".into(),
            ));
        }
        Ok(BatchNll {
            sum: categorical_nll((self.logits)(model, x), y),
            n,
            owned_prior: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::nn::conv::Conv2dConfig;
    use burn::nn::pool::MaxPool2dConfig;
    use burn::nn::{BatchNormConfig, LinearConfig, PaddingConfig2d};
    use burn::tensor::{Device, Distribution, Int, Tensor, activation};

    /// A small CNN with every drop-in layer, written twice: with burn's modules and with ours.
    macro_rules! cnn {
        ($name:ident, $linear:ty, $conv:ty, $bn:ty, $pool:ty) => {
            #[derive(Module, Debug)]
            struct $name {
                conv: $conv,
                bn: $bn,
                pool: $pool,
                out: $linear,
            }

            impl $name {
                fn new(device: &Device) -> Self {
                    Self {
                        conv: Conv2dConfig::new([1, 4], [3, 3])
                            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                            .init(device)
                            .into(),
                        bn: BatchNormConfig::new(4).init(device).into(),
                        pool: MaxPool2dConfig::new([2, 2])
                            .with_strides([2, 2])
                            .init()
                            .into(),
                        out: LinearConfig::new(4 * 4 * 4, 3).init(device).into(),
                    }
                }

                fn forward(&self, x: Tensor<4>) -> Tensor<2> {
                    let h = activation::relu(self.bn.forward(self.conv.forward(x)));
                    self.out.forward(self.pool.forward(h).flatten(1, 3))
                }
            }
        };
    }

    cnn!(
        Burn,
        burn::nn::Linear,
        burn::nn::conv::Conv2d,
        burn::nn::BatchNorm,
        burn::nn::pool::MaxPool2d
    );
    cnn!(
        Ours,
        super::Linear,
        super::Conv2d,
        super::BatchNorm,
        super::MaxPool2d
    );

    fn max_abs(a: Tensor<2>, b: Tensor<2>) -> f32 {
        (a - b).abs().max().into_scalar::<f32>()
    }

    /// burn's weights load into the drop-in modules (same record), and both compute the same
    /// logits, categorical NLL and gradients, in training (batch statistics) and evaluation;
    /// the tolerances are f32 rounding of sums over at most 64 terms of order 1.
    #[test]
    fn the_drop_in_modules_load_burns_weights_and_compute_its_function() {
        let device = Device::flex().autodiff();
        let burn_net = Burn::new(&device);
        let ours = Ours::new(&device).load_record(burn_net.clone().into_record());
        let x = Tensor::<4>::random([6, 1, 8, 8], Distribution::Normal(0.0, 1.0), &device);
        let y = Tensor::<1, Int>::from_data([0, 1, 2, 0, 1, 2], &device);
        let (a, b) = (burn_net.forward(x.clone()), ours.forward(x.clone()));
        assert!(max_abs(a.clone(), b.clone()) < 1e-5);
        let reference = activation::log_softmax(a, 1)
            .gather(1, y.clone().unsqueeze_dim(1))
            .sum()
            .neg();
        let nll = super::categorical_nll(b, &y);
        let (r, n): (f32, f32) = (
            reference.clone().into_scalar::<f32>(),
            nll.clone().into_scalar::<f32>(),
        );
        assert!((r - n).abs() < 1e-4 * r.abs(), "{r} vs {n}");
        let (gr, gn) = (reference.backward(), nll.backward());
        let grad = |w: &Tensor<2>, g| w.grad(g).unwrap();
        let (wb, wo) = (burn_net.out.weight.val(), ours.out.0.weight.val());
        assert!(max_abs(grad(&wb, &gr), grad(&wo, &gn)) < 1e-4);
        // Evaluation: the running statistics the training pass updated, alike in both.
        let plain = x.inner();
        let (a, b) = (
            burn_net.valid().forward(plain.clone()),
            ours.valid().forward(plain),
        );
        assert!(max_abs(a, b) < 1e-5);
        assert_eq!(burn_net.num_params(), ours.num_params());
    }
}
