//! cycSWAG (thesis Tables 4.2 and 6.1, "MultiSWAG"): momentum SGD under a cyclical cosine lr;
//! in the sampling phase of each cycle the chain's trainable parameters are added to a SWAG fit
//! `swag_per_epoch` times per epoch; at the end of the cycle `swag_samples` networks are drawn
//! from it ([`sgmcmc_samplers::swag::CycleSwag`]), their BatchNorm running statistics
//! recomputed from scratch as the average over `bn_batches` augmented training batches (forward
//! passes in training mode, as SWAG's `bn_update`; the reference code fine-tunes each draw for
//! an epoch instead), and each joins the model average with weight 1. The fit restarts with the
//! next cycle.

use burn::module::Module;
use sgmcmc_models::ImageClassifier;
use sgmcmc_samplers::ensemble::with_trainable_values;

use crate::error::AppError;
use crate::images::data::TrainBatcher;

/// Recomputes the running BatchNorm statistics of `m` from scratch (SWAG's `bn_update`,
/// [`ImageClassifier::recompute_batch_norm`]; on an autodiff device, where burn's BatchNorm
/// runs in training mode) from `batches` fresh training batches keyed by `key`.
pub fn refresh_batch_norm(
    m: &mut ImageClassifier,
    source: &TrainBatcher,
    key: u64,
    batches: usize,
) -> Result<(), AppError> {
    m.recompute_batch_norm((0..batches).map(|i| source.fresh(key, i).map(|b| b.x)))?;
    Ok(())
}

/// The network of a draw `theta` (trainable parameters, [`sgmcmc_samplers::swag::CycleSwag`])
/// around `template` (an autodiff-device network whose running statistics
/// [`refresh_batch_norm`] replaces from the fresh batches keyed by `key`).
pub fn network(
    theta: &[f32],
    template: &ImageClassifier,
    source: &TrainBatcher,
    key: u64,
    bn_batches: usize,
) -> Result<ImageClassifier, AppError> {
    // A copy with running statistics of its own (a clone would share the chain's, and every
    // draw the last one's): `valid` then `train` rebuilds them. An internal invariant (the fit
    // is of this very network): a failed run, exit 1.
    let mut m = with_trainable_values(template.valid().train(), theta)
        .map_err(|e| AppError::Run(format!("SWAG draw: {e}")))?;
    refresh_batch_norm(&mut m, source, key, bn_batches)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;
    use burn::tensor::{Distribution, Tensor};
    use sgmcmc_models::{Network, ResNetConfig};
    use sgmcmc_samplers::ensemble::{module_values, trainable_values};

    #[test]
    fn trainable_values_are_the_published_parameter_count_and_round_trip() {
        let device = Device::flex().autodiff();
        let m = ImageClassifier::ResNet(ResNetConfig::resnet20(10).init(&device).unwrap());
        let flat = trainable_values(&m).unwrap();
        assert_eq!(flat.len(), 269_722);
        let doubled: Vec<f32> = flat.iter().map(|x| 2.0 * x).collect();
        let m2 = with_trainable_values(m, &doubled).unwrap();
        assert_eq!(trainable_values(&m2).unwrap(), doubled);
        assert!(with_trainable_values(m2, &doubled[1..]).is_err());
    }

    /// A draw's copy has running statistics of its own: refreshing them leaves the chain's
    /// network (and so every other draw) as it was.
    #[test]
    fn a_draw_copy_does_not_share_batch_norm_statistics() {
        let device = Device::flex().autodiff();
        let chain = ImageClassifier::ResNet(ResNetConfig::resnet20(10).init(&device).unwrap());
        let before = module_values(&chain).unwrap();
        let copy = with_trainable_values(chain.valid().train(), &trainable_values(&chain).unwrap())
            .unwrap();
        let x = Tensor::<4>::random([4, 3, 8, 8], Distribution::Normal(1.0, 2.0), &device);
        drop(copy.forward(x));
        drop(copy.valid());
        assert_eq!(module_values(&chain).unwrap(), before);
        assert_ne!(module_values(&copy).unwrap(), before);
        // A clone, by contrast, shares them (why the draws are not clones).
        let clone = chain.clone();
        let x = Tensor::<4>::random([4, 3, 8, 8], Distribution::Normal(1.0, 2.0), &device);
        drop(clone.forward(x));
        drop(clone.valid());
        assert_ne!(module_values(&chain).unwrap(), before);
    }
}
