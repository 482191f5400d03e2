//! The image networks of the papers' tables behind one module type, chosen by name:
//! `resnet20`, `resnet32`, `resnet56` (any `resnet{6n+2}`) and `wrn16-8`, `wrn28-10` (any
//! `wrn{6n+4}-{k}`), so one sampler type serves every row.

use std::str::FromStr;

use burn::module::Module;
use burn::nn::BatchNorm;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::network::Network;
use crate::resnet::{ResNet, ResNetConfig};
use crate::wide_resnet::{WideResNet, WideResNetConfig};

/// An image classification network.
#[derive(Module, Debug)]
pub enum ImageClassifier {
    /// A CIFAR ResNet ([`crate::resnet`]).
    ResNet(ResNet),
    /// A wide ResNet ([`crate::wide_resnet`]).
    Wide(WideResNet),
}

impl Network for ImageClassifier {
    type Input = Tensor<4>;

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        match self {
            Self::ResNet(m) => m.forward(x),
            Self::Wide(m) => m.forward(x),
        }
    }
}

impl ImageClassifier {
    /// Every BatchNorm layer, in forward order.
    pub fn batch_norms_mut(&mut self) -> Vec<&mut BatchNorm> {
        match self {
            Self::ResNet(m) => m.batch_norms_mut(),
            Self::Wide(m) => m.batch_norms_mut(),
        }
    }

    /// Recomputes every BatchNorm layer's running mean and variance from scratch as the
    /// equal-weight average of their values on `batches` (SWAG's `bn_update`, the cumulative
    /// average of PyTorch's `momentum=None`): batch `i` (1-based) is folded in with momentum
    /// `1 / i`, so the first replaces whatever the layers held and the result does not depend
    /// on it or on the batches' order. The network must be in training mode on an autodiff
    /// device (where burn's BatchNorm updates its statistics); the layers' momentum is restored
    /// afterwards. Returns the number of batches used.
    pub fn recompute_batch_norm<E>(
        &mut self,
        batches: impl IntoIterator<Item = Result<Tensor<4>, E>>,
    ) -> Result<usize, E> {
        let momenta: Vec<f64> = self.batch_norms_mut().iter().map(|b| b.momentum).collect();
        let mut n = 0;
        let mut outcome = Ok(());
        for x in batches {
            let x = match x {
                Ok(x) => x,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            n += 1;
            for bn in self.batch_norms_mut() {
                bn.momentum = 1.0 / n as f64;
            }
            drop(self.forward(x));
        }
        for (bn, m) in self.batch_norms_mut().into_iter().zip(momenta) {
            bn.momentum = m;
        }
        outcome.map(|()| n)
    }
}

/// Which network, by name (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Architecture {
    /// ResNet of depth `6n + 2`.
    ResNet {
        /// Depth.
        depth: usize,
    },
    /// WRN-`depth`-`widen`.
    Wide {
        /// Depth `6n + 4`.
        depth: usize,
        /// Widening factor.
        widen: usize,
    },
}

/// A model name that is neither `resnet{depth}` nor `wrn{depth}-{widen}` of a valid depth.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown model `{0}` (known: resnet20, resnet32, resnet56 or any resnet{{6n+2}}; wrn16-8, \
     wrn28-10 or any wrn{{6n+4}}-{{k}})"
)]
pub struct UnknownModel(pub String);

impl FromStr for Architecture {
    type Err = UnknownModel;

    fn from_str(name: &str) -> Result<Self, UnknownModel> {
        let bad = || UnknownModel(name.to_string());
        let arch = if let Some(d) = name.strip_prefix("resnet") {
            Self::ResNet {
                depth: d.parse().map_err(|_| bad())?,
            }
        } else if let Some(rest) = name.strip_prefix("wrn") {
            let rest = rest.strip_prefix('-').unwrap_or(rest);
            let (d, k) = rest.split_once('-').ok_or_else(bad)?;
            Self::Wide {
                depth: d.parse().map_err(|_| bad())?,
                widen: k.parse().map_err(|_| bad())?,
            }
        } else {
            return Err(bad());
        };
        // Depth and width are checked here so a bad name fails before any data is read.
        let valid = match arch {
            Self::ResNet { depth } => ResNetConfig::new(depth, 1).blocks_per_stage().is_ok(),
            Self::Wide { depth, widen } => WideResNetConfig::new(depth, widen, 1)
                .blocks_per_group()
                .is_ok(),
        };
        if valid { Ok(arch) } else { Err(bad()) }
    }
}

impl Architecture {
    /// The network for `classes` classes of `in_channels`-channel images; `width` multiplies
    /// a ResNet's channels (WRNs carry their own widening factor).
    pub fn init(
        self,
        classes: usize,
        in_channels: usize,
        width: usize,
        device: &Device,
    ) -> Result<ImageClassifier, String> {
        match self {
            Self::ResNet { depth } => ResNetConfig::new(depth, classes)
                .with_width(width)
                .with_in_channels(in_channels)
                .init(device)
                .map(ImageClassifier::ResNet)
                .map_err(|e| e.to_string()),
            Self::Wide { depth, widen } => WideResNetConfig::new(depth, widen, classes)
                .with_in_channels(in_channels)
                .init(device)
                .map(ImageClassifier::Wide)
                .map_err(|e| e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    /// Every layer's running means, then every layer's running variances.
    fn running_stats(m: &mut ImageClassifier) -> Vec<f32> {
        let read = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        let layers = m.batch_norms_mut();
        let means = layers
            .iter()
            .flat_map(|b| read(b.running_mean.value_sync()));
        let vars = layers.iter().flat_map(|b| read(b.running_var.value_sync()));
        means.chain(vars).collect()
    }

    /// From scratch: two copies of one network whose running statistics differ (one saw
    /// inputs of mean 5 and sd 3 for 20 batches) agree after the recompute on the same batches,
    /// and the batches' order does not matter; under burn's momentum-0.1 average 0.9^3 = 73%
    /// of the old statistics would remain after 3 batches. Tolerance: f32 rounding of sums
    /// over 4 x 8 x 8 values.
    #[test]
    fn batch_norm_recompute_forgets_the_old_statistics_and_the_batch_order() {
        let device = Device::flex().autodiff();
        let fresh = Architecture::ResNet { depth: 8 }
            .init(10, 3, 1, &device)
            .unwrap();
        let mut dirty = fresh.clone().valid().train();
        for _ in 0..20 {
            let x = Tensor::<4>::random([4, 3, 8, 8], Distribution::Normal(5.0, 3.0), &device);
            drop(dirty.forward(x));
        }
        let mut clean = fresh.valid().train();
        assert_ne!(running_stats(&mut dirty), running_stats(&mut clean));
        let batches: Vec<Tensor<4>> = (0..3)
            .map(|_| Tensor::random([4, 3, 8, 8], Distribution::Normal(0.0, 1.0), &device))
            .collect();
        let ok = |v: &[Tensor<4>]| v.iter().cloned().map(Ok::<_, ()>).collect::<Vec<_>>();
        assert_eq!(dirty.recompute_batch_norm(ok(&batches)), Ok(3));
        let reversed: Vec<Tensor<4>> = batches.iter().rev().cloned().collect();
        assert_eq!(clean.recompute_batch_norm(ok(&reversed)), Ok(3));
        let (a, b) = (running_stats(&mut dirty), running_stats(&mut clean));
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{worst}");
        assert!(dirty.batch_norms_mut().iter().all(|b| b.momentum == 0.1));
        assert_eq!(
            clean.recompute_batch_norm([Err::<Tensor<4>, _>("unreadable")]),
            Err("unreadable")
        );
    }

    #[test]
    fn names_parse_to_architectures_and_bad_ones_are_refused() {
        let parse = |s: &str| s.parse::<Architecture>();
        assert_eq!(parse("resnet20"), Ok(Architecture::ResNet { depth: 20 }));
        assert_eq!(parse("resnet56"), Ok(Architecture::ResNet { depth: 56 }));
        assert_eq!(
            parse("wrn16-8"),
            Ok(Architecture::Wide {
                depth: 16,
                widen: 8
            })
        );
        assert_eq!(
            parse("wrn-28-10"),
            Ok(Architecture::Wide {
                depth: 28,
                widen: 10
            })
        );
        for bad in [
            "resnet21", "resnet", "wrn16", "wrn17-8", "wrn16-0", "vgg16", "",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
        let device = Device::flex();
        let net = parse("wrn10-1").unwrap().init(5, 1, 1, &device).unwrap();
        let x = Tensor::<4>::zeros([2, 1, 8, 8], &device);
        assert_eq!(net.forward(x).dims(), [2, 5]);
        assert!(parse("resnet20").unwrap().init(0, 3, 1, &device).is_err());
    }
}
