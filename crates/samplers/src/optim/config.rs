//! burn-style configs of the kernel optimizers: `new(data_size)`, `with_*` for the rest,
//! `init()` for burn's `ModuleOptimizer` and `build()` for the bare [`KernelOptimizer`].

use burn::config::Config;
use burn::optim::ModuleOptimizer;

use super::KernelOptimizer;
use crate::error::SamplerError;
use crate::kernel::Kernel;

/// The fields every kernel optimizer shares, and its `build` / `init`.
macro_rules! kernel_config {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident: $ty:ty = $default:expr),* $(,)? } => |$c:ident| $kernel:expr) => {
        $(#[$doc])*
        #[derive(Config, Debug)]
        pub struct $name {
            /// Number of training examples `N`: the loss is a mean over a batch of them.
            pub data_size: usize,
            /// Temperature `tau` of the target `exp(-U / tau)` (1: the posterior; 0: no noise).
            #[config(default = 1.0)]
            pub temperature: f64,
            /// Weight decay `wd` on the mean loss, as burn's: a Gaussian prior of precision
            /// `N wd`.
            #[config(default = 0.0)]
            pub weight_decay: f64,
            /// Seed of the Langevin noise ([`super::noise_stream`]).
            #[config(default = 0)]
            pub seed: u64,
            $($(#[$fdoc])* #[config(default = $default)] pub $field: $ty,)*
        }

        impl $name {
            /// The bare optimizer (burn's `ModuleOptimizer::with_group` takes one), after
            /// checking every field.
            pub fn build(&self) -> Result<KernelOptimizer, SamplerError> {
                let $c = self;
                KernelOptimizer::new(
                    $kernel,
                    self.data_size,
                    self.temperature,
                    self.weight_decay,
                    self.seed,
                )
            }

            /// The optimizer of a whole module.
            pub fn init(&self) -> Result<ModuleOptimizer, SamplerError> {
                Ok(self.build()?.into())
            }
        }
    };
}

kernel_config!(
    /// SGLD ([`crate::kernel::sgld`], Welling & Teh 2011; thesis eq. 2.7):
    /// `x <- x - eta (grad L + wd x) + sqrt(2 eta tau / N) xi`.
    SgldConfig {} => |_c| Kernel::Sgld
);

kernel_config!(
    /// SGHMC ([`crate::kernel::sghmc`], Chen et al. 2014) in the SGD-with-momentum form of
    /// their reference code: `v <- mu v - eta (grad L + wd x) + sqrt(2 (eta / N) (1 - mu - beta)
    /// tau) xi`, `x <- x + v`.
    SghmcConfig {
        /// Momentum `mu = 1 - alpha` (friction `alpha`).
        momentum: f64 = 0.9,
        /// Gradient-noise variance estimate `V` at full-data scale (`beta = V lr / 2`).
        noise_estimate: f64 = 0.0,
        /// Resample the momentum from its stationary law every this many steps (0: never).
        resample_every: u64 = 0,
    } => |c| Kernel::Sghmc {
        mu: c.momentum,
        noise_estimate: c.noise_estimate,
        resample_every: c.resample_every,
    }
);

kernel_config!(
    /// pSGLD ([`crate::kernel::psgld`], Li et al. 2016, Algorithm 1) with the RMSprop
    /// preconditioner of the full-data gradient.
    PsgldConfig {
        /// Moving-average factor `a` of the squared gradients.
        alpha: f64 = 0.99,
        /// Regulariser `lambda` of the preconditioner.
        lambda: f64 = 1e-5,
    } => |c| Kernel::Psgld {
        alpha: c.alpha,
        lambda: c.lambda,
    }
);

kernel_config!(
    /// SGNHT ([`crate::kernel::sgnht`], Ding et al. 2014, Algorithm 1): a per-element
    /// thermostat that absorbs unknown gradient noise.
    SgnhtConfig {
        /// Injected friction `a = A h` in `(0, 1)`.
        friction: f64 = 0.1,
    } => |c| Kernel::Sgnht { friction: c.friction }
);
