//! Saved posteriors as safetensors files: the layout of the specification, the parameters by
//! path (all, or the sampled ones only), read back and loaded into a model exactly, and a run's
//! samples saved that way averaging to the run's own model average.

use std::collections::BTreeMap;
use std::path::PathBuf;

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use sgmcmc_engine::observers::{ModelAverage, SampleFormat, SampleSaver};
use sgmcmc_engine::safetensors::{Parameters, load_into, named_parameters, read, write};
use sgmcmc_engine::{Repeat, Run, SavedPosterior, init};
use sgmcmc_models::{ModelPosterior, nll_fn};
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::{BuildContext, SamplerSettings};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sgmcmc-safetensors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[derive(Module, Debug)]
struct Net {
    fc: Linear,
    bn: BatchNorm,
    layers: Vec<Linear>,
    frozen: Linear,
}

fn net(device: &Device, seed: u64) -> Net {
    init::chains(device, seed, 1, || Net {
        fc: LinearConfig::new(3, 2).init(device),
        bn: BatchNormConfig::new(2).init(device),
        layers: vec![LinearConfig::new(2, 2).init(device)],
        frozen: LinearConfig::new(2, 1).init(device).no_grad(),
    })
    .remove(0)
}

#[test]
fn parameters_are_named_by_path_written_as_the_specification_lays_out_and_read_back() {
    let device = Device::flex().autodiff();
    let a = net(&device, 1);
    let all = named_parameters(&a, Parameters::All).unwrap();
    let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fc.weight",
            "fc.bias",
            "bn.gamma",
            "bn.beta",
            "bn.running_mean",
            "bn.running_var",
            "layers.0.weight",
            "layers.0.bias",
            "frozen.weight",
            "frozen.bias"
        ]
    );
    assert_eq!(all[0].shape, [3, 2]);
    // The sampled ones: no running statistics, nothing frozen.
    let sampled = named_parameters(&a, Parameters::Sampled).unwrap();
    let kept: Vec<&str> = sampled.iter().map(|t| t.name.as_str()).collect();
    let sampled_names: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !n.starts_with("bn.running") && !n.starts_with("frozen"))
        .collect();
    assert_eq!(kept, sampled_names);
    let dir = tmp("layout");
    let path = dir.join("a.safetensors");
    let meta: BTreeMap<String, String> = [("log_weight".to_string(), "-0.5".to_string())].into();
    write(&path, &all, &meta).unwrap();
    // The bytes: header length, a JSON header padded to 8 bytes, then the f32 values in order.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0);
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header["__metadata__"]["log_weight"], "-0.5");
    assert_eq!(header["fc.weight"]["dtype"], "F32");
    assert_eq!(header["fc.weight"]["shape"], serde_json::json!([3, 2]));
    assert_eq!(
        header["fc.weight"]["data_offsets"],
        serde_json::json!([0, 24])
    );
    let first: Vec<f32> = bytes[8 + n..8 + n + 24]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(first, all[0].values);
    let total: usize = all.iter().map(|t| 4 * t.values.len()).sum();
    assert_eq!(bytes.len(), 8 + n + total);
    let (back, meta_back) = read(&path).unwrap();
    assert_eq!((back, meta_back), (all.clone(), meta));
    // Loaded into a differently initialised model, every parameter is the file's.
    let b = load_into(&net(&device, 2), &all).unwrap();
    assert_eq!(named_parameters(&b, Parameters::All).unwrap(), all);
    assert!(b.fc.weight.val().is_require_grad() && !b.frozen.weight.val().is_require_grad());
    // Only the sampled ones: the rest keeps the template's values.
    let template = net(&device, 3);
    let c = load_into(&template, &sampled).unwrap();
    let c_all = named_parameters(&c, Parameters::All).unwrap();
    let t_all = named_parameters(&template, Parameters::All).unwrap();
    assert_eq!(c_all[0], all[0]);
    assert_eq!(c_all[8], t_all[8], "frozen.weight stays the template's");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_that_do_not_fit_are_errors() {
    let device = Device::flex();
    let dir = tmp("errors");
    let all = named_parameters(&net(&device, 1), Parameters::All).unwrap();
    let path = dir.join("a.safetensors");
    write(&path, &all, &BTreeMap::new()).unwrap();
    // Another architecture: a shape differs, or a name is missing from the model.
    let small = LinearConfig::new(3, 1).init(&device);
    let e = load_into(&small, &all[..1]).unwrap_err().to_string();
    assert!(e.contains("`weight`") || e.contains("no parameter"), "{e}");
    let wide = Net {
        fc: LinearConfig::new(3, 5).init(&device),
        ..net(&device, 1)
    };
    let e = load_into(&wide, &all).unwrap_err().to_string();
    assert!(e.contains("fc.weight") && e.contains("shape"), "{e}");
    // Truncated files and a header past the end.
    let bytes = std::fs::read(&path).unwrap();
    for cut in [4, 20, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("not a safetensors file"), "{cut}: {e}");
    }
    // Headers that lie: a shape whose size overflows, a hole between tensors, a huge header.
    let raw = |header: &str, data: &[u8]| {
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        b
    };
    for (header, data) in [
        (
            r#"{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}"#,
            &[][..],
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#,
            &[0u8; 12][..],
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            &[0u8; 8][..],
        ),
    ] {
        std::fs::write(&path, raw(header, data)).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("not a safetensors file"), "{header}: {e}");
    }
    let mut huge = u64::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    std::fs::write(&path, huge).unwrap();
    assert!(read(&path).is_err());
    // A tensor whose values do not fill its shape is not written, nor one named as the metadata.
    let mut meta_named = all[0].clone();
    meta_named.name = "__metadata__".into();
    assert!(write(&path, &[meta_named], &BTreeMap::new()).is_err());
    let mut bad = all[0].clone();
    bad.values.pop();
    assert!(write(&path, &[bad], &BTreeMap::new()).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn samples_saved_as_safetensors_average_to_the_runs_model_average() {
    let device = Device::flex().autodiff();
    let x: Tensor<2> = Tensor::from_data(TensorData::new(vec![0.5f32, -1.0], [2, 1]), &device);
    let y = x.clone().mul_scalar(2.0);
    let predict = |m: &Linear| -> Result<Vec<f64>, String> {
        let v = m.valid().forward(x.clone().inner()).into_data();
        Ok(v.iter::<f32>().map(f64::from).collect())
    };
    let dir = tmp("run");
    let steps = 200;
    let nll = nll_fn(|m: &Linear, b: &(Tensor<2>, Tensor<2>)| {
        (m.forward(b.0.clone()) - b.1.clone())
            .powi_scalar(2)
            .squeeze_dim(1)
    });
    let chains = ModuleEnsemble::new(
        ModelPosterior::new(nll, 2),
        init::chains(&device, 4, 2, || LinearConfig::new(1, 1).init(&device)),
        4,
    )
    .unwrap();
    let mut s = SamplerSettings {
        lr: 1e-3,
        ..SamplerSettings::named("sgld")
    }
    .spec(&BuildContext::steps(steps).chains(2))
    .unwrap()
    .build(chains, 4)
    .unwrap();
    let mut avg = ModelAverage::new(predict);
    // An earlier run's model in the reused folder goes; a file of the user's stays.
    let samples = dir.join("samples");
    std::fs::create_dir_all(&samples).unwrap();
    let stale = samples.join("step-000000005-chain-9.bpk");
    std::fs::write(&stale, b"an earlier run").unwrap();
    std::fs::write(samples.join("notes.txt"), b"mine").unwrap();
    let mut saver = SampleSaver::new(&samples).format(SampleFormat::Safetensors(Parameters::All));
    Run::steps(steps)
        .burn_in(100)
        .thin(10)
        .observe(&mut avg)
        .observe(&mut saver)
        .run(&mut s, &mut Repeat((x.clone(), y)))
        .unwrap();
    assert!(!stale.exists() && samples.join("notes.txt").exists());
    let saved = SavedPosterior::open(&dir.join("samples")).unwrap();
    assert_eq!(saved.len(), 20);
    assert!(saved.rows()[0].file.ends_with(".safetensors"));
    let (_, meta) = read(&dir.join("samples").join(&saved.rows()[0].file)).unwrap();
    assert_eq!(
        (meta["step"].as_str(), meta["chain"].as_str()),
        ("100", "0")
    );
    let template = LinearConfig::new(1, 1).init(&device.clone().inner());
    let again = saved.average(&template, predict).unwrap();
    assert_eq!(
        again.mean(),
        avg.mean(),
        "the same f32 values, the same forward pass"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
