//! `sgmcmc data`: fetch and verify the benchmark datasets.

use std::path::PathBuf;

use clap::Subcommand;
use sgmcmc_data::fetch::{UCI_UPSTREAM, fetch_uci, table1, verify_dir};
use sgmcmc_data::fetch_color::{color_benchmark, fetch_color};
use sgmcmc_data::fetch_digits::{DIGITS_UPSTREAM, fetch_digits};
use sgmcmc_data::fetch_mnist::{fetch_images, image_benchmark};

use crate::error::AppError;

/// `sgmcmc data` commands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Download a benchmark from its public upstream and verify it (SHA-256 and layout).
    Fetch {
        /// Which benchmark: `uci` (Energy, Concrete, Yacht, Wine with their 20 splits, into
        /// `DIR/uci/NAME/`), `mnist` or `fashion-mnist` (the four gzip IDX files, into
        /// `DIR/mnist/` or `DIR/fashion-mnist/`), `digits` (UCI optdigits test set, 1797 8x8
        /// images, into `DIR/digits/digits.csv`), `cifar10` or `cifar100` (the binary version's
        /// `*.bin` files, unpacked from its tarball into `DIR/cifar10/` or `DIR/cifar100/`),
        /// `svhn` (`train_32x32.mat` and `test_32x32.mat` into `DIR/svhn/`): the folders a
        /// command's `--data-dir DIR` reads. The colour sets are checked by their image counts
        /// (no official SHA-256 is pinned yet); their content hash is printed.
        what: String,
        /// Directory to write.
        #[arg(long)]
        to: PathBuf,
        /// Upstream base URL (`uci`: `BASE/NAME/data/FILE`; images: `BASE/FILE.gz`; digits:
        /// `BASE/optdigits.tes`; cifar: `BASE/cifar-10-binary.tar.gz`; svhn: `BASE/FILE.mat`);
        /// default: the benchmark's public upstream.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// Verify the dataset folders found in DIR (UCI `DIR/NAME` or `DIR/uci/NAME`, `DIR/mnist`,
    /// `DIR/fashion-mnist`, `DIR/digits`, `DIR/cifar10`, `DIR/cifar100`, `DIR/svhn`): checksums
    /// (image counts for the colour sets) and layout.
    Verify {
        /// The directory holding the dataset folders.
        dir: PathBuf,
    },
}

/// Runs a `data` command.
pub fn run(c: &DataCommand) -> Result<(), AppError> {
    match c {
        DataCommand::Fetch { what, to, base_url } => {
            let dirs = if what == "uci" {
                let root = to.join("uci");
                fetch_uci(
                    base_url.as_deref().unwrap_or(UCI_UPSTREAM),
                    &root,
                    &table1(),
                )?
            } else if what == "digits" {
                vec![fetch_digits(
                    base_url.as_deref().unwrap_or(DIGITS_UPSTREAM),
                    to,
                )?]
            } else if let Some(k) = image_benchmark(what) {
                vec![fetch_images(
                    base_url.as_deref().unwrap_or(&k.upstream),
                    to,
                    &k,
                )?]
            } else if let Some(k) = color_benchmark(what) {
                let (dir, hash) = fetch_color(base_url.as_deref().unwrap_or(&k.upstream), to, &k)?;
                println!("content sha256 {hash}");
                vec![dir]
            } else {
                return Err(AppError::Usage(format!(
                    "unknown benchmark `{what}` (known: uci, mnist, fashion-mnist, digits, \
                     cifar10, cifar100, svhn)"
                )));
            };
            for dir in dirs {
                println!("ok {}", dir.display());
            }
        }
        DataCommand::Verify { dir } => {
            for d in verify_dir(dir)? {
                println!("ok {}", d.display());
            }
        }
    }
    Ok(())
}
