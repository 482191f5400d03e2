//! The `sgmcmc` command-line application: experiment configs, runners, reports and plots.
//!
//! Only this crate prints or parses arguments; the libraries return values and typed errors
//! (figures are drawn by `sgmcmc-plot`). Exit codes: 0 success, 2 bad usage, bad input or an
//! output that cannot be written, 1 a run that failed (e.g. divergence).

pub mod bandit;
pub mod cli;
pub mod data_cmd;
pub mod demo;
pub mod digits;
pub mod error;
pub mod images;
pub mod mnist;
pub mod output;
pub mod predict;
pub mod progress;
pub mod run_flags;
pub mod toy;
pub mod uci;
pub mod vr;

use std::ffi::OsString;

use sgmcmc_engine::run_dir;

pub use error::AppError;

/// Runs the CLI on `args` (including the program name) and returns the process exit code.
/// Errors are printed as one line on stderr.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_with(args, &[])
}

/// [`run`] with commands defined in other crates beside this crate's (the `sgmcmc` binary adds
/// the benchmark harness, `sgmcmc-bench`): same parsing, error lines and exit codes.
pub fn run_with<I, T>(args: I, external: &[cli::External]) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()));
        eprintln!(
            "error: internal error{}: {}",
            place.unwrap_or_default(),
            msg.replace('\n', " ")
        );
    }));
    run_dir::keep_made_run_dirs();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cli::dispatch(args, external)
    }));
    match outcome {
        Ok(Ok(())) => {
            run_dir::keep_made_run_dirs();
            0
        }
        Ok(Err(e)) => {
            run_dir::unmake_empty_run_dirs();
            eprintln!("error: {}", e.to_string().replace('\n', " "));
            e.exit_code()
        }
        Err(_) => {
            run_dir::unmake_empty_run_dirs();
            1
        }
    }
}
