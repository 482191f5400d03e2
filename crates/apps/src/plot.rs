//! PNG plots: samples over the exact density (1-D and 2-D toys) and line charts.
//!
//! Text needs a TrueType font; we load DejaVu Sans (Debian's `fonts-dejavu-core`) or
//! `$SGMCMC_FONT` at run time. Without one, plots are drawn without captions and labels.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use sgmcmc_testfunctions::Potential;

use crate::error::AppError;
use crate::output;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Registers a font once; false if none was found.
pub(crate) fn has_font() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let env = std::env::var("SGMCMC_FONT").ok();
        let bytes = env
            .iter()
            .map(String::as_str)
            .chain(FONT_PATHS.iter().copied())
            .find_map(|p| std::fs::read(p).ok());
        match bytes {
            Some(b) => {
                let leaked: &'static [u8] = Box::leak(b.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, leaked).is_ok()
            }
            None => false,
        }
    })
}

/// A chart frame with margins, and a caption and label areas when a font is available.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &'b str,
    text: bool,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder.margin(12);
    if text {
        builder
            .caption(title, ("sans-serif", 20))
            .x_label_area_size(35)
            .y_label_area_size(60);
    }
    builder
}

/// Draws into a temp file and moves it into place.
fn atomically(
    path: &Path,
    draw: impl FnOnce(&Path) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), AppError> {
    let tmp = output::temp_path(path);
    if let Err(e) = draw(&tmp) {
        // A full disk or a missing folder: no half-drawn temp file stays behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(AppError::Run(format!(
            "cannot draw {}: {e}",
            path.display()
        )));
    }
    output::commit(&tmp, path)
}

/// Samples (points for 2-D, a histogram for 1-D) over the exact density `exp(-U / tau)`.
pub fn samples_over_density(
    path: &Path,
    potential: &dyn Potential,
    tau: f64,
    samples: &[Vec<f64>],
    title: &str,
) -> Result<(), AppError> {
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

/// Normalised exact density on `[lo, hi]` (normalised over the whole support).
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
) -> Result<(), AppError> {
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

/// A line chart of named series.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), AppError> {
    lines_with_bands(path, title, x_desc, y_desc, series, &[])
}

/// A line chart of named series, series `i` over the shaded band `bands[i]` of `(x, low,
/// high)` points when there is one (e.g. the mean +- one standard error).
pub fn lines_with_bands(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    bands: &[Vec<(f64, f64, f64)>],
) -> Result<(), AppError> {
    let band_pts = bands
        .iter()
        .flatten()
        .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
    let pts = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .chain(band_pts)
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in pts {
        x0 = x0.min(p.0);
        x1 = x1.max(p.0);
        y0 = y0.min(p.1);
        y1 = y1.max(p.1);
    }
    if !x0.is_finite() {
        return Ok(());
    }
    let pad = 0.05 * (y1 - y0).max(1e-9);
    let text = has_font();
    atomically(path, |tmp| {
        let root = BitMapBackend::new(tmp, (900, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = frame(&root, title, text);
        let mut chart =
            builder.build_cartesian_2d(x0..x1.max(x0 + 1e-9), (y0 - pad)..(y1 + pad))?;
        if text {
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()?;
        }
        for (i, band) in bands.iter().enumerate().filter(|b| !b.1.is_empty()) {
            let color = Palette99::pick(i).mix(0.2);
            let outline = band
                .iter()
                .map(|&(x, _, hi)| (x, hi))
                .chain(band.iter().rev().map(|&(x, lo, _)| (x, lo)));
            chart.draw_series(std::iter::once(Polygon::new(
                outline.collect::<Vec<_>>(),
                color.filled(),
            )))?;
        }
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let anno =
                chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            if text {
                anno.label(*name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            }
        }
        if text && series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    })
}

/// A scatter plot of named point series (e.g. gradient multiplier vs loss).
pub fn scatter(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), AppError> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let (x0, x1, y0, y1) = series.iter().flat_map(|s| s.1.iter()).filter(finite).fold(
        (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ),
        |(a, b, c, d), p| (a.min(p.0), b.max(p.0), c.min(p.1), d.max(p.1)),
    );
    if !x0.is_finite() {
        return Ok(());
    }
    let (xpad, ypad) = (0.02 * (x1 - x0).max(1e-9), 0.05 * (y1 - y0).max(1e-9));
    let text = has_font();
    atomically(path, |tmp| {
        let root = BitMapBackend::new(tmp, (900, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = frame(&root, title, text);
        let mut chart =
            builder.build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad)..(y1 + ypad))?;
        if text {
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()?;
        }
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).mix(0.6);
            let anno = chart.draw_series(
                pts.iter()
                    .filter(finite)
                    .map(|p| Circle::new(*p, 2, color.filled())),
            )?;
            if text {
                anno.label(*name)
                    .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
            }
        }
        if text && series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    /// A plot that cannot be written (here its folder is a file; a full disk alike) names the
    /// file in one line and leaves no temp file behind.
    #[test]
    fn a_plot_that_cannot_be_written_names_its_file_and_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_a_folder = dir.join("file");
        std::fs::write(&not_a_folder, b"").unwrap();
        let path = not_a_folder.join("curve.png");
        let series = [("a", vec![(0.0, 0.0), (1.0, 1.0)])];
        let e = super::lines(&path, "t", "x", "y", &series).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&path.display().to_string()) && !msg.contains('\n'),
            "{msg}"
        );
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
