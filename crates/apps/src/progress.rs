//! Progress bars for long runs (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};
use sgmcmc_engine::Observer;
use sgmcmc_samplers::sampler::Sampler;

/// A progress bar over `total` steps, or a hidden one for short runs (< ~1 s of work).
pub fn bar(total: u64, label: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{msg:>14} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(label.to_string());
    pb
}

/// An observer that moves `bar` about `updates` times over a run.
pub fn report(
    bar: ProgressBar,
    updates: u64,
) -> sgmcmc_engine::observers::ProgressReport<impl FnMut(u64, u64)> {
    sgmcmc_engine::observers::ProgressReport::new(move |done, _total| bar.set_position(done))
        .updates(updates)
}

/// The terminal: lines on stdout, warnings on stderr, progress bars (the experiment skeleton's
/// [`Console`](sgmcmc_engine::experiment::Console)).
pub struct Terminal;

impl sgmcmc_engine::experiment::Console for Terminal {
    /// A bar that clears itself when the run's observers are dropped.
    fn progress<S: Sampler>(
        total: u64,
        label: &str,
        show: bool,
        updates: u64,
    ) -> Box<dyn Observer<S>> {
        let bar = bar(total, label, show).with_finish(ProgressFinish::AndClear);
        Box::new(report(bar, updates))
    }

    fn say(line: &str) {
        println!("{line}");
    }

    fn warn(line: &str) {
        eprintln!("{line}");
    }
}
