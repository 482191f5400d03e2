//! `sgmcmc predict --run DIR --data FILE`: the weighted model average of a saved posterior on
//! new inputs, without sampling again.
//!
//! `DIR` is a run folder written with `--save-samples` (`sgmcmc uci ... --save-samples` writes
//! one per seed, `OUT/seed-K`; `sgmcmc images` and `sgmcmc mnist` one): its `model.json` says
//! which network and which input standardization the run used, `samples/` holds the kept
//! models with their log importance weights. The predictions go to `predictions.csv` beside
//! `FILE` or to `--out`.
//!
//! * A regression run: `FILE` holds one input row per line in original units (numbers
//!   separated by commas or white space; a first line that is not numeric is taken as a
//!   header); the prediction is the importance-weighted average of the models' outputs, in
//!   original units.
//! * An image classifier: `FILE` holds images ([`classifier`]); the predictions are the
//!   averaged class probabilities, the predicted class, the predictive entropy and its
//!   epistemic part, and with `--labels` the accuracy, NLL, Brier score and ECE go to
//!   `metrics.json` beside the predictions.

pub mod classifier;

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use sgmcmc_data::Standardizer;
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::SavedPosterior;
use sgmcmc_models::{Mlp, MlpConfig, Network};

use crate::error::AppError;
use crate::output;

/// Options of `sgmcmc predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// A run folder with `model.json` and `samples/` (`--save-samples`).
    #[arg(long)]
    pub run: PathBuf,
    /// Input rows in original units (CSV or white-space separated).
    #[arg(long)]
    pub data: PathBuf,
    /// Output file (default: `predictions.csv` beside the data).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The images' labels, for the metrics of a classifier (IDX bytes or one per line).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Tensor device: flex, ndarray, wgpu or cuda; wgpu:N or cuda:N picks GPU N (without N, under mpirun, the local rank's).
    #[arg(long, default_value_t = DeviceChoice::Flex, value_name = "DEVICE")]
    pub device: DeviceChoice,
}

/// What a saved run's models are: written beside the samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SavedModel {
    /// A UCI regression MLP with the split's standardization.
    UciMlp {
        /// The network.
        mlp: MlpConfig,
        /// Feature (and target) statistics of the training split.
        standardizer: Standardizer,
        /// Whether the network predicts the standardized target.
        standardize_target: bool,
    },
    /// An image classifier of `sgmcmc images`.
    ImageClassifier(classifier::ClassifierInput),
}

impl SavedModel {
    /// Writes `dir/model.json`.
    pub fn write(&self, dir: &Path) -> Result<(), AppError> {
        output::write_json(&dir.join(sgmcmc_engine::experiment::MODEL_FILE), self)
    }

    /// [`Self::write`] once, into the run folder the experiment skeleton gives it.
    pub fn describe<E>(self) -> sgmcmc_engine::experiment::DescribeSamples<E>
    where
        E: sgmcmc_engine::experiment::NetExperiment<Error = AppError>,
    {
        Box::new(move |dir| self.write(dir))
    }

    fn read(dir: &Path) -> Result<Self, AppError> {
        let path = dir.join("model.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            AppError::Input(format!(
                "cannot read {} ({e}); was the run written with --save-samples?",
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| AppError::Input(format!("{}: {e}", path.display())))
    }
}

/// Input rows of `path`: numbers separated by commas or white space, one row per line.
pub fn read_rows(path: &Path, width: usize) -> Result<Vec<Vec<f64>>, AppError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AppError::Input(format!("cannot read {}: {e}", path.display())))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        if cells.is_empty() {
            continue;
        }
        let parsed: Result<Vec<f64>, _> = cells.iter().map(|c| c.parse::<f64>()).collect();
        let row = match parsed {
            Ok(r) => r,
            Err(_) if i == 0 => continue,
            Err(_) => {
                return Err(AppError::Input(format!(
                    "{}:{}: not a row of numbers",
                    path.display(),
                    i + 1
                )));
            }
        };
        if row.len() != width {
            return Err(AppError::Input(format!(
                "{}:{}: expected {width} numbers, got {}",
                path.display(),
                i + 1,
                row.len()
            )));
        }
        if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(AppError::Input(format!(
                "{}:{}: column {} is {v}, not a finite number",
                path.display(),
                i + 1,
                j + 1
            )));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(AppError::Input(format!("{} holds no row", path.display())));
    }
    Ok(rows)
}

/// The model average's predictions on `rows` (original units) from the run in `dir`.
pub fn predict(dir: &Path, rows: &[Vec<f64>], device: &Device) -> Result<Vec<f64>, AppError> {
    let SavedModel::UciMlp {
        mlp,
        standardizer,
        standardize_target,
    } = SavedModel::read(dir)?
    else {
        return Err(AppError::Input(format!(
            "{} is a classifier's run, not a regression's",
            dir.display()
        )));
    };
    let posterior = SavedPosterior::open(&dir.join("samples"))?;
    let mut x: Vec<f32> = Vec::with_capacity(rows.len() * mlp.inputs);
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in standardizer.x(r).into_iter().enumerate() {
            // The network computes in f32: an input beyond it would come back as NaN.
            if !(v as f32).is_finite() {
                return Err(AppError::Input(format!(
                    "row {}, column {}: {:e} is {v:.3e} training standard deviations from \
                     the training mean, beyond the network's f32 arithmetic",
                    i + 1,
                    j + 1,
                    r[j]
                )));
            }
            x.push(v as f32);
        }
    }
    let x = Tensor::<2>::from_data(TensorData::new(x, [rows.len(), mlp.inputs]), device);
    let template: Mlp = mlp.init(device);
    let mean = posterior
        .average(&template, |m: &Mlp| {
            m.forward(x.clone())
                .into_data()
                .try_into_vec::<f32>()
                .map(|v| v.into_iter().map(f64::from).collect())
                .map_err(|e| format!("reading predictions: {e:?}"))
        })?
        .mean()
        .ok_or_else(|| AppError::Input("every saved model has weight 0".into()))?;
    if let Some(i) = mean.iter().position(|m| !m.is_finite()) {
        return Err(AppError::Run(format!(
            "the prediction for row {} is {} (its inputs overflow the network)",
            i + 1,
            mean[i]
        )));
    }
    Ok(mean
        .into_iter()
        .map(|m| {
            if standardize_target {
                standardizer.y_back(m)
            } else {
                m
            }
        })
        .collect())
}

/// `sgmcmc predict`.
pub fn run(a: &PredictArgs) -> Result<(), AppError> {
    let device = a.device.tensor_device("predict")?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.data.with_file_name("predictions.csv"));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| AppError::Input(format!("cannot create {}: {e}", parent.display())))?;
    }
    let rows = match SavedModel::read(&a.run)? {
        SavedModel::UciMlp { mlp, .. } => {
            if a.labels.is_some() {
                return Err(AppError::Usage(
                    "--labels scores a classifier; this run is a regression".into(),
                ));
            }
            let rows = read_rows(&a.data, mlp.inputs)?;
            let pred = predict(&a.run, &rows, &device)?;
            let rows: Vec<Vec<f64>> = pred.iter().map(|p| vec![*p]).collect();
            output::write_csv(&out, &["mean"], &rows)?;
            rows
        }
        SavedModel::ImageClassifier(input) => {
            let p = classifier::predict(&a.run, &input, &a.data, a.labels.as_deref(), &device)?;
            let (header, rows) = classifier::table(&p, &input);
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            output::write_csv(&out, &header, &rows)?;
            if let Some(m) = &p.metrics {
                output::write_json(&out.with_file_name("metrics.json"), m)?;
                println!(
                    "accuracy {:.4}, NLL {:.4}, Brier {:.1} per mille, ECE {:.2}%",
                    m.accuracy, m.nll, m.brier_permille, m.ece_percent
                );
            }
            rows
        }
    };
    println!(
        "{} rows, {} saved models -> {}",
        rows.len(),
        SavedPosterior::open(&a.run.join("samples"))?.len(),
        out.display()
    );
    Ok(())
}
