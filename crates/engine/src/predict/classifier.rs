//! The model average of a saved image classifier on new images.
//!
//! The images are an IDX file of unsigned bytes or text rows of pixel values, the labels an
//! IDX file of bytes or one integer per line (`sgmcmc_data::inputs`). For every image, with
//! the models' log weights `w_s` normalised to `W_s`: the averaged probabilities
//! `p_c = sum_s W_s p_sc`, their entropy `H[p]`, and the mutual information
//! `I = H[p] - sum_s W_s H[p_s]` between the label and the model (the epistemic part).
//!
//! **BatchNorm.** A sampled network is scored with the running means and variances its own
//! forward passes accumulated while it was sampled (burn's `BatchNorm` on a plain device, like
//! the reference code's `model.eval()`): each saved model brings its own statistics.

use std::path::Path;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::{Device, Int, Tensor, activation};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sgmcmc_data::Images;
use sgmcmc_data::datasets::{ChannelBatcher, ImageItem};
use sgmcmc_data::inputs::{read_labels, read_pixels};
use sgmcmc_models::metrics::{ClassifierMetrics, entropy, mutual_information};
use sgmcmc_models::{Architecture, CnnConfig, ImageClassifier, Network};

use crate::experiment::{MODEL_FILE, SAMPLES_DIR};
use crate::{RunError, SavedPosterior};

/// Images per forward pass of [`probabilities`].
const CHUNK: usize = 500;

/// The network of a saved classifier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "network", rename_all = "snake_case")]
pub enum ClassifierNetwork {
    /// A ResNet (or another [`Architecture`]).
    ImageClassifier {
        /// The architecture's name.
        model: String,
        /// Its base width.
        width: usize,
    },
    /// The papers' CNN.
    Cnn(CnnConfig),
}

/// The network and input of a saved image classifier ([`super::SavedModel::ImageClassifier`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassifierInput {
    /// The network.
    pub network: ClassifierNetwork,
    /// Classes.
    pub classes: usize,
    /// The label each output stands for (e.g. the digits of a subset of MNIST's classes);
    /// empty: output `c` is label `c`. Given labels are read in these terms.
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
    pub metrics: Option<ClassifierMetrics>,
}

/// Class probabilities `[n, k]` (row-major) of `model` on every image of `set` (any dataset of
/// images: [`Images`], an MNIST `ImageSet`), normalised by `norm`, forward only on the plain
/// `device` with the running BatchNorm statistics. Chunks of images run on the
/// threads of the current pool (burn's inference convolution keeps about one core busy); each
/// chunk is computed alone and the rows are concatenated in order, so the result does not
/// depend on the threads.
pub fn probabilities<M, D, B>(
    model: &M,
    set: &D,
    norm: &B,
    device: &Device,
) -> Result<Vec<f64>, RunError>
where
    M: Network<Input = Tensor<4>> + Sync,
    D: Dataset<ImageItem>,
    B: Batcher<ImageItem, (Tensor<4>, Tensor<1, Int>)> + Sync,
{
    let model = model.valid();
    let starts: Vec<usize> = (0..set.len()).step_by(CHUNK).collect();
    let chunks: Vec<Vec<f32>> = starts
        .into_par_iter()
        .map(|start| {
            let end = (start + CHUNK).min(set.len());
            let items: Vec<ImageItem> = (start..end).filter_map(|i| set.get(i).ok()).collect();
            activation::softmax(model.forward(norm.batch(items, device).0), 1)
                .into_data()
                .try_into_vec::<f32>()
                .map_err(|e| RunError::Observer(format!("reading predictions: {e:?}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(chunks.into_iter().flatten().map(f64::from).collect())
}

/// The model average of the run in `dir` (a [`super::SavedModel::ImageClassifier`] described
/// by `input`) on the images of `data`, scored against `labels` when given.
pub fn predict(
    dir: &Path,
    input: &ClassifierInput,
    data: &Path,
    labels: Option<&Path>,
    device: &Device,
) -> Result<ClassPredictions, RunError> {
    let k = input.classes;
    let set = read_images(data, labels, input)?;
    let posterior = SavedPosterior::open(&dir.join(SAMPLES_DIR))?;
    let mean = match &input.network {
        ClassifierNetwork::ImageClassifier { model, width } => {
            let arch: Architecture = model
                .parse()
                .map_err(|e| RunError::Input(format!("{}: {e}", dir.join(MODEL_FILE).display())))?;
            let template: ImageClassifier = arch
                .init(k, input.shape[0], *width, device)
                .map_err(RunError::Input)?;
            averaged(&posterior, &template, &set, input, device)?
        }
        ClassifierNetwork::Cnn(cnn) => {
            averaged(&posterior, &cnn.init(device), &set, input, device)?
        }
    };
    let (probs, mean_entropy) = mean.split_at(set.len() * k);
    let truth: Vec<usize> = set.labels.iter().map(|&l| usize::from(l)).collect();
    Ok(ClassPredictions {
        classes: k,
        entropy: entropy(probs, k),
        mutual_information: mutual_information(probs, k, mean_entropy),
        probabilities: probs.to_vec(),
        metrics: labels.map(|_| ClassifierMetrics::of(probs, k, &truth)),
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
) -> Result<Vec<f64>, RunError> {
    posterior
        .average(template, |m: &M| {
            let mut p =
                probabilities(m, set, &input.normaliser, device).map_err(|e| e.to_string())?;
            let h = entropy(&p, input.classes);
            p.extend(h);
            Ok(p)
        })?
        .mean()
        .ok_or_else(|| RunError::Input("every saved model has weight 0".into()))
}

/// The images of `path` with the labels of `labels` (0 without) as output indices, through
/// the run's class labels where it has them.
fn read_images(
    path: &Path,
    labels: Option<&Path>,
    input: &ClassifierInput,
) -> Result<Images, RunError> {
    let [channels, rows, cols] = input.shape;
    let pixels = read_pixels(path, input.shape).map_err(input_error)?;
    let n = pixels.len() / (channels * rows * cols);
    let labels = match labels {
        Some(p) => class_indices(p, read_labels(p, n).map_err(input_error)?, input)?,
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

fn input_error(e: sgmcmc_data::DataError) -> RunError {
    RunError::Input(e.to_string())
}

/// The output index of each label of the file `path`.
fn class_indices(
    path: &Path,
    labels: Vec<u8>,
    input: &ClassifierInput,
) -> Result<Vec<u8>, RunError> {
    let classes = input.classes;
    labels
        .into_iter()
        .map(|l| {
            let index = match input.class_labels.as_slice() {
                [] => (usize::from(l) < classes).then_some(l),
                names => names.iter().position(|&c| c == l).map(|i| i as u8),
            };
            index.ok_or_else(|| {
                RunError::Input(format!(
                    "{}: label {l} is not one of the run's {classes} classes",
                    path.display()
                ))
            })
        })
        .collect()
}

impl ClassPredictions {
    /// The header and rows of a predictions table: `p_c` for every class `c`, the predicted
    /// class, the entropy and the mutual information (classes named by the run's class
    /// labels, where it has them).
    pub fn table(&self, input: &ClassifierInput) -> (Vec<String>, Vec<Vec<f64>>) {
        let k = self.classes;
        let label = |c: usize| input.class_labels.get(c).map_or(c, |&l| usize::from(l));
        let mut header: Vec<String> = (0..k).map(|c| format!("p_{}", label(c))).collect();
        header.extend(["class", "entropy", "mutual_information"].map(String::from));
        let rows = self
            .probabilities
            .chunks(k)
            .enumerate()
            .map(|(i, row)| {
                let class = (0..k).fold(0, |b, c| if row[c] > row[b] { c } else { b });
                let mut r = row.to_vec();
                r.extend([
                    label(class) as f64,
                    self.entropy[i],
                    self.mutual_information[i],
                ]);
                r
            })
            .collect();
        (header, rows)
    }
}
