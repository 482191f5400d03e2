//! Dataset readers for sgmcmc: UCI regression benchmark layout, MNIST / Fashion-MNIST IDX,
//! Mushroom, CIFAR binary batches, and synthetic generators. Readers validate what they read and
//! return typed errors; a data directory is passed in (CLI `--data-dir`, env `SGMCMC_DATA_DIR`).

pub mod error;
pub mod fetch;
pub mod uci;

pub use error::DataError;
pub use uci::{Split, SplitData, Standardizer, UciDataset};
