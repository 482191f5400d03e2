//! PNG figures of sgmcmc runs: line charts ([`lines`], [`lines_with_bands`]), scatter plots
//! ([`scatter`]), samples over a target's exact density ([`samples_over_density`],
//! [`weighted_histograms`]) and loss surfaces with paths over them ([`surfaces`]).
//!
//! Every figure is drawn into a temp file beside its path and moved into place
//! ([`sgmcmc_engine::fs::commit`]): a failed draw leaves nothing behind. Text needs a TrueType
//! font; DejaVu Sans (Debian's `fonts-dejavu-core`) or `$SGMCMC_FONT` is loaded at run time
//! ([`has_font`]). Without one, figures are drawn without captions, labels and legends.

mod charts;
mod density;
mod surface;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

pub use charts::{lines, lines_with_bands, scatter};
pub use density::{samples_over_density, weighted_histograms};
pub use surface::{Surface, surfaces};

/// Why a figure was not written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Drawing failed (a full disk, a folder that is a file).
    #[error("cannot draw {}: {reason}", path.display())]
    Draw {
        /// The figure.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The drawn figure could not be moved into place.
    #[error(transparent)]
    Write(#[from] sgmcmc_engine::RunError),
}

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Registers a font once (`$SGMCMC_FONT`, else DejaVu Sans or Arial where the system keeps
/// them); false if none was found.
pub fn has_font() -> bool {
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
) -> Result<(), PlotError> {
    let tmp = sgmcmc_engine::fs::temp_path(path);
    if let Err(e) = draw(&tmp) {
        // A full disk or a missing folder: no half-drawn temp file stays behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(PlotError::Draw {
            path: path.to_path_buf(),
            reason: e.to_string(),
        });
    }
    Ok(sgmcmc_engine::fs::commit(&tmp, path)?)
}

/// The smallest and largest `x` and `y` of finite points (infinite where there is none).
fn bounds(points: impl Iterator<Item = (f64, f64)>) -> (f64, f64, f64, f64) {
    points.filter(|p| p.0.is_finite() && p.1.is_finite()).fold(
        (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ),
        |(a, b, c, d), p| (a.min(p.0), b.max(p.0), c.min(p.1), d.max(p.1)),
    )
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
