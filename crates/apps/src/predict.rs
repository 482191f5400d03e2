//! `sgmcmc predict --run DIR --data FILE`: the weighted model average of a saved posterior on
//! new inputs, without sampling again ([`sgmcmc_engine::predict`]).
//!
//! `DIR` is a run folder written with `--save-samples` (`sgmcmc uci ... --save-samples` writes
//! one per seed, `OUT/seed-K`; `sgmcmc images` and `sgmcmc mnist` one). The predictions go to
//! `predictions.csv` beside `FILE` or to `--out`:
//!
//! * a regression run: `FILE` holds one input row per line in original units (numbers
//!   separated by commas or white space; a first line that is not numeric is taken as a
//!   header); one column, `mean`, in original units;
//! * an image classifier: `FILE` holds images (an IDX file of unsigned bytes, or text rows of
//!   pixel values); the averaged class probabilities, the predicted class, the predictive
//!   entropy and its epistemic part, and with `--labels` the accuracy, NLL, Brier score and ECE
//!   in `metrics.json` beside the predictions.

use std::path::PathBuf;

use sgmcmc_data::inputs::read_rows;
use sgmcmc_engine::SavedPosterior;
use sgmcmc_engine::predict::{SavedModel, classifier, regression};

use crate::error::AppError;
use crate::output;
use crate::run_flags::DeviceFlag;

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
    /// `--device`.
    #[command(flatten)]
    pub device: DeviceFlag,
}

/// `sgmcmc predict`.
pub fn run(a: &PredictArgs) -> Result<(), AppError> {
    let device = a.device.tensor().tensor_device("predict")?;
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
            let pred = regression(&a.run, &rows, &device)?;
            let rows: Vec<Vec<f64>> = pred.iter().map(|p| vec![*p]).collect();
            output::write_csv(&out, &["mean"], &rows)?;
            rows
        }
        SavedModel::ImageClassifier(input) => {
            let p = classifier::predict(&a.run, &input, &a.data, a.labels.as_deref(), &device)?;
            let (header, rows) = p.table(&input);
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
        SavedPosterior::open(&a.run.join(sgmcmc_engine::experiment::SAMPLES_DIR))?.len(),
        out.display()
    );
    Ok(())
}
