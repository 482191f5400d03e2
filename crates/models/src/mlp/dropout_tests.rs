//! [`MlpPosterior`] with [`Dropout`]: the masked closed form against burn's autodiff on the same
//! masks, rate 0 against the plain network, and the masks' keep frequency.
//!
//! The first two are deterministic (fixed inputs, fixed streams): their tolerances are `f32`
//! rounding as in [`super::tests`]. The keep frequency is binomial: its bound is 4.5 standard
//! errors.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData, activation};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::rng::ChainRng;

use super::tests::{grad_values, host, mlp, posterior, problem};
use super::{Dropout, DropoutLayers, Mlp, MlpPosterior, tanh};
use crate::likelihood::Likelihood;
use crate::network::Network;
use crate::posterior::{Batch, Posterior};
use crate::{Activation, prior};

/// The dropout energy by autodiff, from the masks `masks` (one per hidden layer): input rows
/// repeated on the host, masks multiplied after the activations, the output's copies averaged.
fn autodiff_energy(
    model: &Mlp,
    batch: &Batch<Tensor<2>>,
    post: &Posterior,
    masks: &[Option<Tensor<2>>],
    samples: usize,
) -> Tensor<1> {
    let [rows, cols] = batch.x.dims();
    let x = host(batch.x.clone());
    let repeated: Vec<f32> = x
        .chunks(cols)
        .flat_map(|row| {
            std::iter::repeat_n(row, samples)
                .flatten()
                .map(|&v| v as f32)
        })
        .collect();
    let device = batch.x.device();
    let mut h = Tensor::<2>::from_data(TensorData::new(repeated, [rows * samples, cols]), &device);
    let last = model.layers.len() - 1;
    for (i, layer) in model.layers.iter().enumerate() {
        h = layer.forward(h);
        if i < last {
            h = if model.relu {
                activation::relu(h)
            } else {
                tanh(h)
            };
            if let Some(m) = &masks[i] {
                h = h * Tensor::from_inner(m.clone());
            }
        }
    }
    let k = h.dims()[1];
    let f = h.reshape([rows, samples, k]).mean_dim(1).reshape([rows, k]);
    let nll = post.likelihood.neg_log_lik(f, &batch.y).unwrap();
    let scale = post.scale.n_data as f64 / rows as f64;
    let sq = prior::squared_norm(model, &[]).unwrap();
    nll.mul_scalar(scale) + sq.mul_scalar(0.5 * post.scale.prior_precision)
}

fn plain(batch: &Batch<Tensor<2>>) -> Batch<Tensor<2>> {
    Batch {
        x: batch.x.clone().inner(),
        y: batch.y.inner(),
    }
}

#[test]
fn masked_closed_form_matches_autodiff_on_the_same_masks() {
    let ad = Device::flex().autodiff();
    let gaussian = Likelihood::Gaussian { precision: 2.5 };
    for (activation, likelihood, rate, samples, layers) in [
        (Activation::Relu, gaussian, 0.5, 3, DropoutLayers::Last),
        (Activation::Tanh, gaussian, 0.5, 3, DropoutLayers::Every),
        (Activation::Relu, gaussian, 0.3, 1, DropoutLayers::Every),
        (
            Activation::Tanh,
            Likelihood::Categorical,
            0.3,
            4,
            DropoutLayers::Last,
        ),
    ] {
        let label = format!("{activation:?} {likelihood:?} {rate} x{samples} {layers:?}");
        let classes = matches!(likelihood, Likelihood::Categorical);
        let model = mlp(activation, if classes { 3 } else { 2 }, &ad);
        let batch = problem(&ad, classes);
        let post = posterior(likelihood);
        let dropout = Dropout {
            rate,
            samples,
            layers,
        };
        // The masks the closed form will draw: the same stream, cloned.
        let mut rng = ChainRng::new(11, 3);
        let masks = dropout
            .masks(&[5, 4], 6, &mut rng.clone(), &ad.clone().inner())
            .unwrap();
        let drawn: Vec<f64> = masks
            .iter()
            .flatten()
            .flat_map(|m| host(m.clone()))
            .collect();
        assert_eq!(
            drawn.len(),
            6 * samples * if layers == DropoutLayers::Last { 4 } else { 9 }
        );
        assert!(
            drawn.contains(&0.0) && drawn.iter().any(|&v| v > 1.0),
            "{label}: {drawn:?}"
        );

        let energy = autodiff_energy(&model, &batch, &post, &masks, samples);
        let e = f64::from(energy.clone().into_scalar::<f32>());
        let want = grad_values(
            &model,
            &GradientsParams::from_grads(energy.backward(), &model),
        );

        let closed = MlpPosterior::new(post).with_dropout(dropout);
        let mut rngs = [rng.clone()];
        let (got_e, grads) = closed
            .energy_and_grads(&model.valid(), &plain(&batch), true, &mut rngs)
            .unwrap();
        // The closed form drew exactly these masks: its stream is where the copy's is.
        dropout
            .masks(&[5, 4], 6, &mut rng, &ad.clone().inner())
            .unwrap();
        assert_eq!(rngs[0], rng, "{label}: the stream moved differently");
        let got_e = f64::from(got_e.into_scalar::<f32>());
        // The prior's squares and the copies' sums are ordered differently: a few ulps.
        assert!(
            (got_e - e).abs() <= 1e-6 * e.abs(),
            "{label}: {got_e} vs {e}"
        );
        let got = grad_values(&model, &grads.unwrap());
        let top = want.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-6 * top, "{label}: {got:?} vs {want:?}");
        }
    }
}

fn bits(t: Tensor<2>) -> Vec<u32> {
    let v: Vec<f32> = t.into_data().convert::<f32>().try_into_vec().unwrap();
    v.into_iter().map(f32::to_bits).collect()
}

#[test]
fn rate_zero_is_the_plain_network_bit_for_bit() {
    let device = Device::flex();
    for activation in [Activation::Relu, Activation::Tanh] {
        let model = mlp(activation, 2, &device);
        let batch = problem(&device, false);
        let post = MlpPosterior::new(posterior(Likelihood::Gaussian { precision: 2.5 }));
        let none = Dropout {
            rate: 0.0,
            samples: 1,
            layers: DropoutLayers::Every,
        };
        let masked = post.clone().with_dropout(none);
        let mut rngs = [ChainRng::new(5, 0)];
        // The prediction: the network's forward pass, with and without (rate 0) dropout.
        let plain = bits(model.forward(batch.x.clone()));
        let got = masked.predict(&model, batch.x.clone(), &mut rngs).unwrap();
        assert_eq!(bits(got), plain, "{activation:?}");
        assert_eq!(
            bits(post.predict(&model, batch.x.clone(), &mut []).unwrap()),
            plain
        );
        // Energy and gradients.
        let (e0, g0) = post
            .energy_and_grads(&model, &batch, true, &mut [])
            .unwrap();
        let (e1, g1) = masked
            .energy_and_grads(&model, &batch, true, &mut rngs)
            .unwrap();
        let to_bits = |v: Vec<f64>| {
            v.into_iter()
                .map(|x| (x as f32).to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            e0.clone().into_scalar::<f32>().to_bits(),
            e1.into_scalar::<f32>().to_bits(),
            "{activation:?}"
        );
        let g0 = grad_values(&model, &g0.unwrap());
        assert_eq!(
            to_bits(grad_values(&model, &g1.unwrap())),
            to_bits(g0.clone()),
            "{activation:?}"
        );
        // Four identical copies averaged: the same energy and gradients to rounding (the mean
        // of 4 equal f32 values, and a gradient summed over 4 quarters, are a few ulps off).
        let four = post.clone().with_dropout(Dropout { samples: 4, ..none });
        let (e4, g4) = four
            .energy_and_grads(&model, &batch, true, &mut rngs)
            .unwrap();
        let (e0, e4) = (e0.into_scalar::<f32>(), e4.into_scalar::<f32>());
        assert!((e4 - e0).abs() <= 1e-6 * e0.abs(), "{e4} vs {e0}");
        let top = g0.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for (g, w) in grad_values(&model, &g4.unwrap()).iter().zip(&g0) {
            assert!((g - w).abs() <= 1e-6 * top, "{activation:?}: {g} vs {w}");
        }
    }
}

#[test]
fn masks_keep_one_minus_rate() {
    let device = Device::flex();
    let n = 400 * 500;
    for rate in [0.5, 0.1, 0.9] {
        let dropout = Dropout {
            rate,
            samples: 1,
            layers: DropoutLayers::Last,
        };
        let mut rng = ChainRng::new(3, 1);
        let mask = host(dropout.mask(&mut rng, 400, 500, &device));
        let keep = 1.0 - rate;
        // Kept entries are exactly 1 / keep (in f32), the rest 0.
        let scale = f64::from((1.0 / keep) as f32);
        assert!(mask.iter().all(|&v| v == 0.0 || v == scale), "rate {rate}");
        let kept = mask.iter().filter(|&&v| v != 0.0).count() as f64;
        // Binomial(n, keep): 4.5 standard errors (a false alarm has probability 7e-6).
        let se = (n as f64 * keep * rate).sqrt();
        assert!(
            (kept - n as f64 * keep).abs() <= 4.5 * se,
            "rate {rate}: kept {kept} of {n}, expected {} +- {se:.0}",
            n as f64 * keep
        );
        // The next mask from the same stream is another draw.
        assert_ne!(host(dropout.mask(&mut rng, 400, 500, &device)), mask);
    }
}

#[test]
fn bad_dropout_settings_are_errors() {
    let device = Device::flex();
    let model = mlp(Activation::Relu, 2, &device);
    let batch = problem(&device, false);
    let post = MlpPosterior::new(posterior(Likelihood::Gaussian { precision: 1.0 }));
    let ok = Dropout {
        rate: 0.5,
        samples: 2,
        layers: DropoutLayers::Last,
    };
    let mut rngs = [ChainRng::new(1, 0)];
    let run = |d: Dropout, rngs: &mut [ChainRng]| {
        post.clone()
            .with_dropout(d)
            .energy_and_grads(&model, &batch, true, rngs)
            .map(|_| ())
    };
    assert!(run(ok, &mut rngs).is_ok());
    for (bad, needle) in [
        (Dropout { rate: 1.0, ..ok }, "[0, 1)"),
        (Dropout { rate: -0.1, ..ok }, "[0, 1)"),
        (Dropout { samples: 0, ..ok }, "at least 1"),
    ] {
        let err = run(bad, &mut rngs).unwrap_err();
        assert!(matches!(err, TargetError::InvalidParameter { .. }), "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    }
    let err = run(ok, &mut []).unwrap_err();
    assert!(err.to_string().contains("random stream"), "{err}");
    // No hidden layer: nothing to mask.
    let linear = crate::MlpConfig {
        inputs: 3,
        hidden: vec![],
        outputs: 2,
        activation: Activation::Relu,
    }
    .init(&device);
    let err = post
        .clone()
        .with_dropout(ok)
        .energy_and_grads(&linear, &batch, true, &mut rngs)
        .unwrap_err();
    assert!(err.to_string().contains("no hidden layer"), "{err}");
}

/// The masks come from the chains' streams, which a checkpoint stores: a sampler restored from
/// the state after 3 steps takes the next 3 with the uninterrupted run's energies and
/// parameters, bit for bit (masks from any other generator would differ).
#[test]
fn a_restored_sampler_draws_the_same_masks() {
    use sgmcmc_samplers::ensemble::ModuleEnsemble;
    use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
    use sgmcmc_samplers::sampler::Sampler;

    use crate::prior::squared_norm;

    let device = Device::flex();
    let batch = problem(&device, false);
    let post = MlpPosterior::new(posterior(Likelihood::Gaussian { precision: 2.5 })).with_dropout(
        Dropout {
            rate: 0.5,
            samples: 2,
            layers: DropoutLayers::Every,
        },
    );
    let build = || {
        let models = (0..2).map(|_| mlp(Activation::Relu, 2, &device)).collect();
        let ensemble = ModuleEnsemble::new(post.clone(), models, 9).unwrap();
        let settings = SamplerSettings {
            lr: 1e-3,
            ..SamplerSettings::named("sgld")
        };
        let ctx = BuildContext::steps(6).chains(2);
        settings.spec(&ctx).unwrap().build(ensemble, 9).unwrap()
    };
    // Three steps: the energies' and the parameters' bits.
    let run = |sampler: &mut AnySampler<ModuleEnsemble<Mlp, MlpPosterior>>| {
        let mut bits = Vec::new();
        for _ in 0..3 {
            let r = sampler.step(&batch).unwrap();
            bits.extend(r.energies.iter().map(|e| e.to_bits()));
        }
        for m in sampler.ensemble().modules() {
            let norm = squared_norm(m, &[]).unwrap().into_scalar::<f32>();
            bits.push(u64::from(norm.to_bits()));
        }
        bits
    };
    let mut first = build();
    run(&mut first);
    let state = first.state().unwrap();
    let uninterrupted = run(&mut first);
    let mut resumed = build();
    resumed.restore(state).unwrap();
    assert_eq!(run(&mut resumed), uninterrupted);
}
