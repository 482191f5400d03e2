//! `sgmcmc predict` on a saved image classifier (`sgmcmc images` or `sgmcmc mnist` with
//! `--save-samples`): the posterior's class probabilities on new images, their predictive
//! entropy and its epistemic part, and with labels the accuracy, NLL, Brier score and ECE.
//!
//! The images are an IDX file of unsigned bytes (`[n, rows, cols]` for one channel, or `[n,
//! channels, rows, cols]`; plain or gzip, as the MNIST distribution ships them) or a text file
//! with one image per line, `channels * rows * cols` pixel values in `0..=255` in that order.
//! Labels (`--labels`) are an IDX file of `n` bytes or one integer per line.
//!
//! For every image, with the models' log weights `w_s` normalised to `W_s`: the averaged
//! probabilities `p_c = sum_s W_s p_sc`, their entropy `H[p]`, and the mutual information
//! `I = H[p] - sum_s W_s H[p_s]` between the label and the model (the epistemic part).

use std::path::Path;

use burn::tensor::Device;
use burn::tensor::Tensor;
use serde::Serialize;
use sgmcmc_data::Images;
use sgmcmc_data::datasets::ChannelBatcher;
use sgmcmc_data::idx::read_idx;
use sgmcmc_engine::SavedPosterior;
use sgmcmc_models::metrics::{entropy, mutual_information};
use sgmcmc_models::{Architecture, CnnConfig, ImageClassifier, Network};

use super::read_rows;
use crate::error::AppError;
use crate::images::eval::{Metrics, metrics, probabilities};

/// The network of a saved classifier.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "network", rename_all = "snake_case")]
pub enum ClassifierNetwork {
    /// A ResNet of `sgmcmc images`.
    ImageClassifier {
        /// The architecture's name (`sgmcmc images --model`).
        model: String,
        /// Its base width.
        width: usize,
    },
    /// The CNN of `sgmcmc mnist`.
    Cnn(CnnConfig),
}

/// The network and input of a saved image classifier ([`super::SavedModel::ImageClassifier`]).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ClassifierInput {
    /// The network.
    pub network: ClassifierNetwork,
    /// Classes.
    pub classes: usize,
    /// The label each output stands for (`sgmcmc mnist`'s digits); empty: output `c` is label
    /// `c`. Given labels are read in these terms.
    #[serde(default)]
    pub class_labels: Vec<u8>,
    /// Channels, rows and columns of an image.
    pub shape: [usize; 3],
    /// The per-channel normalisation of the training run.
    pub normaliser: ChannelBatcher,
}

/// The model average on a set of images.
pub struct ClassPredictions {
    /// Classes.
    pub classes: usize,
    /// Averaged class probabilities, row-major `[n, classes]`.
    pub probabilities: Vec<f64>,
    /// Predictive entropy of each image (nats).
    pub entropy: Vec<f64>,
    /// Mutual information between label and model of each image (nats).
    pub mutual_information: Vec<f64>,
    /// The metrics against the labels, when given.
    pub metrics: Option<Metrics>,
}

/// The model average of the run in `dir` (a [`super::SavedModel::ImageClassifier`]) on the
/// images of `data`, scored against `labels` when given.
pub fn predict(
    dir: &Path,
    input: &ClassifierInput,
    data: &Path,
    labels: Option<&Path>,
    device: &Device,
) -> Result<ClassPredictions, AppError> {
    let k = input.classes;
    let set = read_images(data, labels, input)?;
    let posterior = SavedPosterior::open(&dir.join(sgmcmc_engine::experiment::SAMPLES_DIR))?;
    let mean = match &input.network {
        ClassifierNetwork::ImageClassifier { model, width } => {
            let arch: Architecture = model.parse().map_err(|e| {
                AppError::Input(format!("{}: {e}", dir.join("model.json").display()))
            })?;
            let template: ImageClassifier = arch
                .init(k, input.shape[0], *width, device)
                .map_err(AppError::Input)?;
            averaged(&posterior, &template, &set, input, device)?
        }
        ClassifierNetwork::Cnn(cnn) => {
            averaged(&posterior, &cnn.init(device), &set, input, device)?
        }
    };
    let (probs, mean_entropy) = mean.split_at(set.len() * k);
    let metrics = labels.map(|_| metrics(probs, &set));
    Ok(ClassPredictions {
        classes: k,
        entropy: entropy(probs, k),
        mutual_information: mutual_information(probs, k, mean_entropy),
        probabilities: probs.to_vec(),
        metrics,
    })
}

/// The weighted average over the saved models of each model's class probabilities on `set`,
/// then of its per-image entropies, in one vector.
fn averaged<M: Network<Input = Tensor<4>> + Sync>(
    posterior: &SavedPosterior,
    template: &M,
    set: &Images,
    input: &ClassifierInput,
    device: &Device,
) -> Result<Vec<f64>, AppError> {
    posterior
        .average(template, |m: &M| {
            let mut p =
                probabilities(m, set, &input.normaliser, device).map_err(|e| e.to_string())?;
            let h = entropy(&p, input.classes);
            p.extend(h);
            Ok(p)
        })?
        .mean()
        .ok_or_else(|| AppError::Input("every saved model has weight 0".into()))
}

/// The images of `path` (IDX or text rows) with the labels of `labels` (0 without).
fn read_images(
    path: &Path,
    labels: Option<&Path>,
    input: &ClassifierInput,
) -> Result<Images, AppError> {
    let [channels, rows, cols] = input.shape;
    let width = channels * rows * cols;
    let pixels = match read_idx(path) {
        Ok(a) => {
            let shape_ok = match a.dims.as_slice() {
                [_, r, c] => channels == 1 && [*r, *c] == [rows, cols],
                [_, ch, r, c] => [*ch, *r, *c] == input.shape,
                _ => false,
            };
            if !shape_ok {
                return Err(AppError::Input(format!(
                    "{}: IDX images of shape {:?}, the run's are {channels} x {rows} x {cols}",
                    path.display(),
                    a.dims
                )));
            }
            a.data
        }
        // Not IDX: text rows of pixel values.
        Err(_) => read_rows(path, width)?
            .into_iter()
            .enumerate()
            .map(|(i, row)| pixel_row(path, i, row))
            .collect::<Result<Vec<_>, _>>()?
            .concat(),
    };
    let n = pixels.len() / width;
    if n == 0 {
        return Err(AppError::Input(format!(
            "{} holds no image",
            path.display()
        )));
    }
    let labels = match labels {
        Some(p) => read_labels(p, n, input)?,
        None => vec![0; n],
    };
    Ok(Images {
        pixels,
        labels,
        channels,
        rows,
        cols,
        classes: input.classes as u8,
    })
}

fn pixel_row(path: &Path, i: usize, row: Vec<f64>) -> Result<Vec<u8>, AppError> {
    row.into_iter()
        .map(|v| {
            if (0.0..=255.0).contains(&v) && v.fract() == 0.0 {
                Ok(v as u8)
            } else {
                Err(AppError::Input(format!(
                    "{}: image {}: pixel {v} is not an integer in 0..=255",
                    path.display(),
                    i + 1
                )))
            }
        })
        .collect()
}

/// `n` labels from an IDX file of bytes or a text file of integers, as output indices (through
/// the run's class labels, where it has them).
fn read_labels(path: &Path, n: usize, input: &ClassifierInput) -> Result<Vec<u8>, AppError> {
    let labels: Vec<u8> = match read_idx(path) {
        Ok(a) => a.data,
        Err(_) => read_rows(path, 1)?
            .into_iter()
            .map(|r| {
                let v = r[0];
                if v.fract() == 0.0 && (0.0..255.0).contains(&v) {
                    Ok(v as u8)
                } else {
                    Err(AppError::Input(format!(
                        "{}: label {v} is not a class index",
                        path.display()
                    )))
                }
            })
            .collect::<Result<_, _>>()?,
    };
    if labels.len() != n {
        return Err(AppError::Input(format!(
            "{}: {} labels for {n} images",
            path.display(),
            labels.len()
        )));
    }
    let classes = input.classes;
    labels
        .into_iter()
        .map(|l| {
            let index = match input.class_labels.as_slice() {
                [] => (usize::from(l) < classes).then_some(l),
                names => names.iter().position(|&c| c == l).map(|i| i as u8),
            };
            index.ok_or_else(|| {
                AppError::Input(format!(
                    "{}: label {l} is not one of the run's {classes} classes",
                    path.display()
                ))
            })
        })
        .collect()
}

/// The rows of `predictions.csv`: `p_c` for every class `c`, the predicted class, the entropy
/// and the mutual information (classes named by the run's class labels, where it has them).
pub fn table(p: &ClassPredictions, input: &ClassifierInput) -> (Vec<String>, Vec<Vec<f64>>) {
    let k = p.classes;
    let label = |c: usize| input.class_labels.get(c).map_or(c, |&l| usize::from(l));
    let mut header: Vec<String> = (0..k).map(|c| format!("p_{}", label(c))).collect();
    header.extend(["class", "entropy", "mutual_information"].map(String::from));
    let rows = p
        .probabilities
        .chunks(k)
        .enumerate()
        .map(|(i, row)| {
            let class = (0..k).fold(0, |b, c| if row[c] > row[b] { c } else { b });
            let mut r = row.to_vec();
            r.extend([label(class) as f64, p.entropy[i], p.mutual_information[i]]);
            r
        })
        .collect();
    (header, rows)
}
