//! The data sets' values in a run's data digest ([`DataDigest`]: what `--resume` checks).

use sgmcmc_data::{ImageSet, UciDataset};
use sgmcmc_engine::experiment::DataDigest;

/// Feeds a data set's values to a [`DataDigest`].
pub trait DigestData {
    /// Feeds a UCI data set: rows, targets and splits.
    fn uci(&mut self, d: &UciDataset) -> &mut Self;
    /// Feeds an image set: its shape, pixels and labels.
    fn images(&mut self, s: &ImageSet) -> &mut Self;
}

impl DigestData for DataDigest {
    fn uci(&mut self, d: &UciDataset) -> &mut Self {
        for row in &d.x {
            self.reals(row);
        }
        self.reals(&d.y);
        for s in &d.splits {
            self.counts(&s.train).counts(&s.test);
        }
        self
    }

    fn images(&mut self, s: &ImageSet) -> &mut Self {
        self.counts(&[s.rows, s.cols])
            .bytes(&s.images)
            .bytes(&s.labels)
    }
}
