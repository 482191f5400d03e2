//! Loss surfaces on a plane, with paths over them (thesis Fig. 6.2 / 7.5).

use std::path::Path;

use plotters::prelude::*;

use crate::{PlotError, atomically, has_font};

/// One panel: a surface evaluated on a regular grid of a plane and paths across the plane.
#[derive(Clone, Debug, Default)]
pub struct Surface {
    /// The caption.
    pub name: String,
    /// Paths in the plane's coordinates `(a, b)`: the first drawn red, the others white, each
    /// from a dot at its start to a cross at its end.
    pub paths: Vec<Vec<(f64, f64)>>,
    /// `(a, b, value)` at the points of a square grid, row after row; the value is coloured on
    /// a log scale (viridis).
    pub grid: Vec<(f64, f64, f64)>,
}

/// Panels side by side, each a `grid x grid` surface with its paths.
pub fn surfaces(path: &Path, panels: &[Surface], grid: usize) -> Result<(), PlotError> {
    // Captions need a registered font; without one the panels go untitled.
    let text = has_font();
    let cells = grid.saturating_sub(1).max(1) as f64;
    atomically(path, |tmp| {
        let root = BitMapBackend::new(tmp, (420 * panels.len() as u32, 440)).into_drawing_area();
        root.fill(&WHITE)?;
        for (area, p) in root.split_evenly((1, panels.len())).iter().zip(panels) {
            let range = |f: fn(&(f64, f64, f64)) -> f64| {
                p.grid
                    .iter()
                    .map(f)
                    .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)))
            };
            let ((a0, a1), (b0, b1)) = (range(|g| g.0), range(|g| g.1));
            let logs: Vec<f64> = p.grid.iter().map(|g| g.2.max(1e-12).ln()).collect();
            let (l0, l1) = logs
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            let mut builder = ChartBuilder::on(area);
            builder.margin(8);
            if text {
                builder.caption(&p.name, ("sans-serif", 18));
            }
            let mut chart = builder.build_cartesian_2d(a0..a1, b0..b1)?;
            let (da, db) = ((a1 - a0) / cells, (b1 - b0) / cells);
            chart.draw_series(p.grid.iter().zip(&logs).map(|(g, l)| {
                let t = if l1 > l0 { (l - l0) / (l1 - l0) } else { 0.0 };
                Rectangle::new(
                    [
                        (g.0 - da / 2.0, g.1 - db / 2.0),
                        (g.0 + da / 2.0, g.1 + db / 2.0),
                    ],
                    ViridisRGB::get_color(t).filled(),
                )
            }))?;
            for (r, path) in p.paths.iter().enumerate() {
                let color = if r == 0 { RED } else { WHITE };
                chart.draw_series(LineSeries::new(path.iter().copied(), color.stroke_width(2)))?;
                if let (Some(s), Some(e)) = (path.first(), path.last()) {
                    chart.draw_series([Circle::new(*s, 5, color.filled())])?;
                    chart.draw_series([Cross::new(*e, 6, color.stroke_width(3))])?;
                }
            }
        }
        root.present()?;
        Ok(())
    })
}
