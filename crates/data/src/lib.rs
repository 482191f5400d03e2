//! Dataset readers for sgmcmc: UCI regression benchmark layout, MNIST / Fashion-MNIST IDX, the
//! handwritten digits (UCI optdigits), CIFAR-10/100 binary, SVHN `.mat`, and synthetic
//! generators. Readers validate what they
//! read and return typed errors; a data directory is passed in (CLI `--data-dir`, env
//! `SGMCMC_DATA_DIR`, [`data_root`]). [`datasets`] offers every reader's data as a burn
//! `Dataset` with a batcher; [`inputs`] reads what a user hands a saved posterior.

pub mod augment;
pub mod cifar;
pub mod color_synthetic;
pub mod datasets;
pub mod digits;
pub mod error;
pub mod fetch;
pub mod fetch_color;
pub mod fetch_digits;
pub mod fetch_mnist;
pub mod idx;
pub mod images;
pub mod inputs;
pub mod loopback;
pub mod mat_writer;
pub mod mnist;
pub mod mushroom;
pub mod mushroom_bandit;
mod splitmix;
pub mod svhn;
#[cfg(test)]
mod test_dir;
pub mod uci;

pub use digits::Digits;
pub use error::DataError;
pub use images::Images;
pub use mnist::{ImageData, ImageSet};
pub use mushroom::Mushrooms;
pub use uci::{Split, SplitData, Standardizer, UciDataset};

/// The data folder of a run: `flag` if given, else `$SGMCMC_DATA_DIR` (an empty value counts
/// as unset), else `../shared/datasets` (relative to the working folder).
pub fn data_root(flag: Option<&std::path::Path>) -> std::path::PathBuf {
    flag.map(std::path::Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("SGMCMC_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
        })
        .unwrap_or_else(|| std::path::PathBuf::from("../shared/datasets"))
}

/// Where tests find the shared datasets: `$SGMCMC_DATA_DIR`, else `../shared/datasets` relative
/// to the workspace root.
#[cfg(test)]
pub(crate) fn shared_datasets() -> std::path::PathBuf {
    std::env::var_os("SGMCMC_DATA_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"),
        std::path::PathBuf::from,
    )
}
