//! The chains' points of a toy ensemble as one array, whichever ensemble holds them.

use std::borrow::Cow;

use super::HostPoints;
use crate::density::particles::Particles;

/// A snapshot of point chains (toy targets) as one row-major `[P, d]` array: the host fast
/// path's [`HostPoints`], or the [`Particles`] tensors of a device ensemble.
pub trait Positions {
    /// All positions, row-major.
    fn positions(&self) -> Cow<'_, [f64]>;
}

impl Positions for HostPoints {
    fn positions(&self) -> Cow<'_, [f64]> {
        Cow::Borrowed(&self.x)
    }
}

impl Positions for Vec<Particles> {
    fn positions(&self) -> Cow<'_, [f64]> {
        Cow::Owned(
            self.iter()
                .flat_map(|m| m.rows().into_iter().flatten())
                .collect(),
        )
    }
}
