//! Line charts (with shaded bands) and scatter plots of named series.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::{PlotError, atomically, bounds, frame, has_font};

/// A line chart of named series.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), PlotError> {
    lines_with_bands(path, title, x_desc, y_desc, series, &[])
}

/// A line chart of named series, series `i` over the shaded band `bands[i]` of `(x, low,
/// high)` points when there is one (e.g. the mean +- one standard error). Nothing is drawn
/// when no point is finite.
pub fn lines_with_bands(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    bands: &[Vec<(f64, f64, f64)>],
) -> Result<(), PlotError> {
    let band_pts = bands
        .iter()
        .flatten()
        .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
    let pts = series.iter().flat_map(|s| s.1.iter().copied());
    let (x0, x1, y0, y1) = bounds(pts.chain(band_pts));
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
        mesh(&mut chart, text, x_desc, y_desc)?;
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
        legend(&mut chart, text && series.len() > 1)?;
        root.present()?;
        Ok(())
    })
}

/// A scatter plot of named point series (e.g. gradient multiplier vs loss); points that are
/// not finite are left out.
pub fn scatter(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), PlotError> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let (x0, x1, y0, y1) = bounds(series.iter().flat_map(|s| s.1.iter().copied()));
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
        mesh(&mut chart, text, x_desc, y_desc)?;
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
        legend(&mut chart, text && series.len() > 1)?;
        root.present()?;
        Ok(())
    })
}

/// The axes' labels and grid, when there is `text`.
fn mesh<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    text: bool,
    x_desc: &str,
    y_desc: &str,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    if text {
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()?;
    }
    Ok(())
}

/// The series' legend, boxed on white, when `show`.
fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    show: bool,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    if show {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}
