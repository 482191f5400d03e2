//! Samples of a 1-D or 2-D target over its exact density `exp(-U / tau)`.

use std::path::Path;

use plotters::prelude::*;
use sgmcmc_samplers::density::toy::Potential;

use crate::{PlotError, atomically, frame, has_font, lines};

/// Samples (points for 2-D, a histogram for 1-D) over the exact density `exp(-U / tau)` on the
/// potential's support. A target without a bounded support, or above 2-D, draws nothing.
pub fn samples_over_density(
    path: &Path,
    potential: &dyn Potential,
    tau: f64,
    samples: &[Vec<f64>],
    title: &str,
) -> Result<(), PlotError> {
    let Some(support) = potential.support() else {
        return Ok(());
    };
    let text = has_font();
    atomically(path, |tmp| {
        let root = BitMapBackend::new(tmp, (900, 820)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = frame(&root, title, text);
        if support.len() == 2 {
            let (x0, x1) = support[0];
            let (y0, y1) = support[1];
            let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
            let n = 160;
            let (dx, dy) = ((x1 - x0) / n as f64, (y1 - y0) / n as f64);
            let mut cells = Vec::with_capacity(n * n);
            let mut umin = f64::INFINITY;
            for i in 0..n {
                for j in 0..n {
                    let x = [x0 + (i as f64 + 0.5) * dx, y0 + (j as f64 + 0.5) * dy];
                    let u = potential.energy(&x);
                    umin = umin.min(u);
                    cells.push((x, u));
                }
            }
            chart.draw_series(cells.iter().map(|(x, u)| {
                let v = (-(u - umin) / tau).exp();
                let c = ViridisRGB::get_color(v.sqrt());
                Rectangle::new(
                    [
                        (x[0] - dx / 2.0, x[1] - dy / 2.0),
                        (x[0] + dx / 2.0, x[1] + dy / 2.0),
                    ],
                    c.filled(),
                )
            }))?;
            if text {
                chart.configure_mesh().disable_mesh().draw()?;
            }
            chart.draw_series(
                samples
                    .iter()
                    .map(|s| Circle::new((s[0], s[1]), 1, RGBColor(255, 80, 60).mix(0.5).filled())),
            )?;
        } else {
            let (lo, hi) = sample_range(samples, support[0]);
            let bins = 120;
            let w = (hi - lo) / bins as f64;
            let mut counts = vec![0.0; bins];
            for s in samples {
                let b = ((s[0] - lo) / w).floor();
                if b >= 0.0 && (b as usize) < bins {
                    counts[b as usize] += 1.0;
                }
            }
            let total = samples.len().max(1) as f64;
            let hist: Vec<f64> = counts.iter().map(|c| c / (total * w)).collect();
            let curve = density_curve(potential, tau, support[0], lo, hi, 600);
            let ymax = hist
                .iter()
                .chain(curve.iter().map(|p| &p.1))
                .copied()
                .fold(0.0, f64::max)
                * 1.1;
            let mut chart = builder.build_cartesian_2d(lo..hi, 0.0..ymax.max(1e-9))?;
            if text {
                chart
                    .configure_mesh()
                    .disable_mesh()
                    .x_desc("x")
                    .y_desc("density")
                    .draw()?;
            }
            chart.draw_series(hist.iter().enumerate().map(|(i, h)| {
                let x = lo + i as f64 * w;
                Rectangle::new(
                    [(x, 0.0), (x + w, *h)],
                    RGBColor(90, 140, 220).mix(0.6).filled(),
                )
            }))?;
            chart.draw_series(LineSeries::new(
                curve,
                RGBColor(200, 30, 30).stroke_width(2),
            ))?;
        }
        root.present()?;
        Ok(())
    })
}

/// The plotting range of 1-D samples: their 0.1%..99.9% range widened, within the support.
fn sample_range(samples: &[Vec<f64>], support: (f64, f64)) -> (f64, f64) {
    if samples.is_empty() {
        return support;
    }
    let mut xs: Vec<f64> = samples.iter().map(|s| s[0]).collect();
    xs.sort_by(f64::total_cmp);
    let q = |f: f64| xs[((xs.len() - 1) as f64 * f) as usize];
    let (a, b) = (q(0.001), q(0.999));
    let pad = 0.15 * (b - a).max(1.0);
    ((a - pad).max(support.0), (b + pad).min(support.1))
}

/// The exact density `exp(-U / tau) / Z` at `n + 1` points of `[lo, hi]`, `Z` by the midpoint
/// rule over the whole support (20,000 cells).
fn density_curve(
    potential: &dyn Potential,
    tau: f64,
    support: (f64, f64),
    lo: f64,
    hi: f64,
    n: usize,
) -> Vec<(f64, f64)> {
    let m = 20_000;
    let h = (support.1 - support.0) / m as f64;
    let us: Vec<f64> = (0..m)
        .map(|i| potential.energy(&[support.0 + (i as f64 + 0.5) * h]))
        .collect();
    let umin = us.iter().copied().fold(f64::INFINITY, f64::min);
    let z: f64 = us.iter().map(|u| (-(u - umin) / tau).exp()).sum::<f64>() * h;
    (0..=n)
        .map(|i| {
            let x = lo + (hi - lo) * i as f64 / n as f64;
            (x, (-(potential.energy(&[x]) - umin) / tau).exp() / z)
        })
        .collect()
}

/// A 1-D target's exact density `exp(-U / tau)` (normalised over its support) and, over it,
/// the importance-weighted histogram of each run's samples (`(name, samples, weights)`, the
/// weights need not be normalised), as lines: where each sampler puts its mass.
pub fn weighted_histograms(
    path: &Path,
    title: &str,
    potential: &dyn Potential,
    tau: f64,
    runs: &[(&str, &[f64], &[f64])],
) -> Result<(), PlotError> {
    let Some(&[support]) = potential.support().as_deref() else {
        return Ok(());
    };
    let (lo, hi) = support;
    let bins = 150;
    let width = (hi - lo) / bins as f64;
    let mut series = vec![("exact", density_curve(potential, tau, support, lo, hi, 600))];
    for &(name, x, w) in runs {
        let mut mass = vec![0.0; bins];
        for (xi, wi) in x.iter().zip(w) {
            let b = ((xi - lo) / width).floor();
            if b >= 0.0 && (b as usize) < bins {
                mass[b as usize] += wi;
            }
        }
        let total: f64 = mass.iter().sum::<f64>() * width;
        let steps = mass
            .iter()
            .enumerate()
            .flat_map(|(b, m)| {
                let (x0, d) = (lo + b as f64 * width, m / total.max(f64::MIN_POSITIVE));
                [(x0, d), (x0 + width, d)]
            })
            .collect();
        series.push((name, steps));
    }
    lines(path, title, "x", "density", &series)
}
