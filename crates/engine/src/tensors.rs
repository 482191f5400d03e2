//! Minibatches of a data set held as tensors: rows of `x` with the same rows of `y`.
//!
//! A data set that fits in memory (UCI tables, the digits, a user's `(x, y)` arrays) needs no
//! burn `Dataset` and `Batcher`: [`TensorBatches`] permutes the rows once per epoch on the
//! device (one `select`) and cuts the epoch into batches of `batch` rows (`slice`), the last
//! partial batch dropped, so every step sees `batch` rows as the `N / n` scaling of the energy
//! assumes. Batch `i` of epoch `e` is a pure function of `(seed, e, i)`: a resumed run gets the
//! batches an uninterrupted one would.

use burn::tensor::kind::Basic;
use burn::tensor::{Float, Int, Tensor, TensorData};
use sgmcmc_samplers::rng::{ChainRng, epoch_order};

use crate::batches::{BatchSource, check_batch_size};
use crate::error::RunError;

/// How an epoch orders the rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shuffle {
    /// Epoch `e` visits the rows in [`epoch_order`]`(N, seed, e)`: a fresh permutation per
    /// epoch, each computed on its own.
    #[default]
    PerEpoch,
    /// One Fisher-Yates pass per epoch over the previous epoch's order, drawn from one stream
    /// of the seed ([`Shuffle::CARRIED_STREAM`]), as a reference loop that shuffles its index
    /// array in place every epoch does. Epoch `e` is reached by replaying epochs `0..=e`.
    Carried,
}

impl Shuffle {
    /// The [`ChainRng`] stream of [`Shuffle::Carried`] (apart from the chains' streams).
    pub const CARRIED_STREAM: u64 = 1 << 40;
}

/// The order of [`Shuffle::Carried`] after some epoch.
struct Carried {
    epoch: u64,
    order: Vec<usize>,
    rng: ChainRng,
}

/// Minibatches of rows of in-memory tensors, shuffled per epoch with the run's seed.
///
/// A batch is `(x rows, y rows)`; [`BatchSource::map`] makes it the target's batch type:
///
/// ```
/// use burn::tensor::{Device, Tensor};
/// use sgmcmc_engine::{BatchSource, Shuffle, TensorBatches};
///
/// let device = Device::flex();
/// let x = Tensor::<2>::from_floats([[0.0], [1.0], [2.0], [3.0], [4.0]], &device);
/// let y = x.clone() * 2.0;
/// let mut batches = TensorBatches::new(x, y, 2, 7, Shuffle::PerEpoch)?;
/// assert_eq!(batches.batches_per_epoch(), Some(2));
/// let (xb, yb) = batches.batch(3, 1)?;
/// assert_eq!(xb.dims(), [2, 1]);
/// assert_eq!((yb - xb * 2.0).abs().max().into_scalar::<f32>(), 0.0);
/// # Ok::<(), sgmcmc_engine::RunError>(())
/// ```
pub struct TensorBatches<const D: usize, const E: usize, K: Basic = Float> {
    x: Tensor<D>,
    y: Tensor<E, K>,
    batch: usize,
    seed: u64,
    shuffle: Shuffle,
    /// The epoch last asked for, its rows in visiting order.
    epoch: Option<(u64, Tensor<D>, Tensor<E, K>)>,
    carried: Option<Carried>,
}

impl<const D: usize, const E: usize, K: Basic> TensorBatches<D, E, K> {
    /// Batches of `batch` rows of `(x, y)` (row `i` of `x` goes with row `i` of `y`), ordered
    /// by `shuffle` from `seed`. Errors when the row counts differ or `batch` is not in
    /// `1..=N`.
    pub fn new(
        x: Tensor<D>,
        y: Tensor<E, K>,
        batch: usize,
        seed: u64,
        shuffle: Shuffle,
    ) -> Result<Self, RunError> {
        let (n, m) = (x.dims()[0], y.dims()[0]);
        if n != m {
            return Err(RunError::Setting(format!(
                "the inputs have {n} rows and the targets {m}"
            )));
        }
        check_batch_size(batch, n)?;
        Ok(Self {
            x,
            y,
            batch,
            seed,
            shuffle,
            epoch: None,
            carried: None,
        })
    }

    /// Number of rows `N` (the full-data scale of the energy).
    pub fn len(&self) -> usize {
        self.x.dims()[0]
    }

    /// Whether there are no rows (never, once built).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row order of epoch `epoch`.
    pub fn order(&mut self, epoch: u64) -> Vec<usize> {
        let n = self.len();
        match self.shuffle {
            Shuffle::PerEpoch => epoch_order(n, self.seed, epoch),
            Shuffle::Carried => {
                if self.carried.as_ref().is_none_or(|c| c.epoch > epoch) {
                    let mut rng = ChainRng::new(self.seed, Shuffle::CARRIED_STREAM);
                    let mut order: Vec<usize> = (0..n).collect();
                    fisher_yates(&mut order, &mut rng);
                    self.carried = Some(Carried {
                        epoch: 0,
                        order,
                        rng,
                    });
                }
                let c = self.carried.as_mut().expect("set above");
                while c.epoch < epoch {
                    fisher_yates(&mut c.order, &mut c.rng);
                    c.epoch += 1;
                }
                c.order.clone()
            }
        }
    }
}

/// One in-place Fisher-Yates pass.
fn fisher_yates(order: &mut [usize], rng: &mut ChainRng) {
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
}

impl<const D: usize, const E: usize, K: Basic> BatchSource for TensorBatches<D, E, K> {
    type Batch = (Tensor<D>, Tensor<E, K>);

    fn batches_per_epoch(&self) -> Option<u64> {
        Some((self.len() / self.batch) as u64)
    }

    fn batch(&mut self, epoch: u64, index: u64) -> Result<Self::Batch, RunError> {
        let per_epoch = (self.len() / self.batch) as u64;
        if index >= per_epoch {
            return Err(RunError::Batch(format!(
                "batch {index} of an epoch of {per_epoch}"
            )));
        }
        if self.epoch.as_ref().is_none_or(|(e, _, _)| *e != epoch) {
            let order: Vec<i64> = self.order(epoch).into_iter().map(|i| i as i64).collect();
            let n = order.len();
            let idx = Tensor::<1, Int>::from_data(TensorData::new(order, [n]), &self.x.device());
            let x = self.x.clone().select(0, idx.clone());
            let y = self.y.clone().select(0, idx);
            self.epoch = Some((epoch, x, y));
        }
        let (_, x, y) = self.epoch.as_ref().expect("set above");
        let rows = index as usize * self.batch..(index as usize + 1) * self.batch;
        Ok((x.clone().slice(rows.clone()), y.clone().slice(rows)))
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;

    use super::*;

    fn rows(t: Tensor<1, Int>) -> Vec<i64> {
        t.into_data().convert::<i64>().try_to_vec::<i64>().unwrap()
    }

    fn source(shuffle: Shuffle) -> TensorBatches<2, 1, Int> {
        let device = Device::flex();
        let y = Tensor::<1, Int>::arange(0..10, &device);
        let x = y.clone().float().reshape([10, 1]);
        TensorBatches::new(x, y, 3, 5, shuffle).unwrap()
    }

    #[test]
    fn an_epoch_visits_every_row_once_with_its_target_and_replays_exactly() {
        for shuffle in [Shuffle::PerEpoch, Shuffle::Carried] {
            let mut b = source(shuffle);
            assert_eq!(b.batches_per_epoch(), Some(3));
            let epoch = |b: &mut TensorBatches<2, 1, Int>, e| -> Vec<i64> {
                (0..3)
                    .flat_map(|i| {
                        let (x, y) = b.batch(e, i).unwrap();
                        let (x, y) = (rows(x.int().reshape([3])), rows(y));
                        assert_eq!(x, y, "x and y rows stay together");
                        y
                    })
                    .collect()
            };
            let e2 = epoch(&mut b, 2);
            let mut seen = e2.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), 9, "9 distinct rows, the 10th dropped");
            assert_ne!(epoch(&mut b, 1), e2, "epochs differ");
            // Asked again after a later or an earlier epoch, or from a fresh source: the same.
            assert_eq!(epoch(&mut b, 2), e2);
            assert_eq!(epoch(&mut source(shuffle), 2), e2);
            assert!(b.batch(2, 3).is_err());
        }
    }

    #[test]
    fn carried_epochs_shuffle_the_previous_order_in_place_from_one_stream() {
        let mut b = source(Shuffle::Carried);
        let mut rng = ChainRng::new(5, Shuffle::CARRIED_STREAM);
        let mut order: Vec<usize> = (0..10).collect();
        for e in 0..4 {
            fisher_yates(&mut order, &mut rng);
            assert_eq!(b.order(e), order);
        }
        let per_epoch = source(Shuffle::PerEpoch).order(3);
        assert_eq!(per_epoch, epoch_order(10, 5, 3));
    }

    #[test]
    fn mismatched_rows_and_batch_sizes_are_refused() {
        let device = Device::flex();
        let x = Tensor::<2>::zeros([4, 2], &device);
        let y = Tensor::<1, Int>::zeros([3], &device);
        assert!(TensorBatches::new(x.clone(), y, 2, 0, Shuffle::PerEpoch).is_err());
        for batch in [0, 5] {
            let y = Tensor::<1, Int>::zeros([4], &device);
            let err = TensorBatches::new(x.clone(), y, batch, 0, Shuffle::PerEpoch);
            assert!(matches!(err, Err(RunError::Setting(_))));
        }
    }
}
