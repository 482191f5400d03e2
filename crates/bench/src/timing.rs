//! How a rate is measured: a step timed alone, or two steps timed paired and interleaved.

use std::time::Instant;

use crate::Figure;
use sgmcmc_apps::AppError;

/// Steps per second of `step` over about `seconds`.
pub fn rate(seconds: f64, mut step: impl FnMut() -> Result<(), AppError>) -> Result<f64, AppError> {
    step()?;
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < seconds || n < 3 {
        step()?;
        n += 1;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// A step under measurement.
pub type Step<'a> = Box<dyn FnMut() -> Result<(), AppError> + 'a>;

/// Interleaved timing of `b` against `a` in 8 alternating bursts of `seconds / 8` each (so both
/// see the same machine state): the two rates and the median over bursts of the step-time ratio
/// `time(b) / time(a)`.
pub fn paired(seconds: f64, a: &mut Step, b: &mut Step) -> Result<(f64, f64, f64), AppError> {
    let rounds = 8;
    let (mut ra, mut rb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let x = rate(seconds / rounds as f64, &mut *a)?;
        let y = rate(seconds / rounds as f64, &mut *b)?;
        ra.push(x);
        rb.push(y);
        ratios.push(x / y);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    ratios.sort_by(f64::total_cmp);
    Ok((mean(&ra), mean(&rb), 0.5 * (ratios[3] + ratios[4])))
}

/// Adds two rates and their ratio to the figures.
pub(crate) fn record<const N: usize>(
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
    rates: [(String, f64); N],
    ratio: (String, f64),
) {
    for (name, per_second) in rates {
        figures.push(Figure { name, per_second });
    }
    ratios.push(Figure {
        name: ratio.0,
        per_second: ratio.1,
    });
}
