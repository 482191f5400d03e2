//! `sgmcmc data`: fetch and verify the benchmark datasets.

use std::path::PathBuf;

use clap::Subcommand;
use sgmcmc_data::fetch::{UCI_UPSTREAM, fetch_uci, table1, verify_uci};

use crate::error::AppError;

/// `sgmcmc data` commands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Download a benchmark from its public upstream and verify it (SHA-256 and layout).
    Fetch {
        /// Which benchmark (`uci`: Energy, Concrete, Yacht, Wine with their 20 splits).
        what: String,
        /// Directory to write (`DIR/NAME/...`).
        #[arg(long)]
        to: PathBuf,
        /// Upstream base URL (`BASE/NAME/data/FILE`).
        #[arg(long, default_value = UCI_UPSTREAM)]
        base_url: String,
    },
    /// Verify an existing UCI directory (`DIR/NAME/...`): checksums and layout.
    Verify {
        /// The directory holding the dataset folders.
        dir: PathBuf,
    },
}

/// Runs a `data` command.
pub fn run(c: &DataCommand) -> Result<(), AppError> {
    match c {
        DataCommand::Fetch { what, to, base_url } => {
            if what != "uci" {
                return Err(AppError::Usage(format!(
                    "unknown benchmark `{what}` (known: uci)"
                )));
            }
            for dir in fetch_uci(base_url, to, &table1())? {
                println!("ok {}", dir.display());
            }
        }
        DataCommand::Verify { dir } => {
            for d in verify_uci(dir, &table1())? {
                println!("ok {}", d.display());
            }
        }
    }
    Ok(())
}
