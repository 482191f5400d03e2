//! Where a run's minibatches come from.
//!
//! A [`BatchSource`] hands out batch `i` of epoch `e` as a pure function of `(e, i)` (and the
//! run's seed): a resumed run asks for the batch it stopped at and gets the same one, with no
//! iterator state to checkpoint. [`DatasetBatches`] serves any burn
//! [`Dataset`] through a burn
//! [`Batcher`], shuffled per epoch by
//! [`epoch_order`]; [`IndexBatches`] hands each batch's item indices and its epoch to a
//! closure (a stage that augments each item with a draw keyed by the epoch and the item);
//! [`Repeat`] serves one batch forever (`()` for analytic toys, or a full-data batch);
//! [`FnBatches`] asks a closure for the batch of each step.

use std::marker::PhantomData;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::Device;
use sgmcmc_samplers::rng::epoch_order;

use crate::error::RunError;

/// Minibatches addressed by epoch and position.
pub trait BatchSource {
    /// What one step consumes.
    type Batch;

    /// Batches per epoch, or `None` for an endless stream (runs then count steps).
    fn batches_per_epoch(&self) -> Option<u64>;

    /// Batch `index` of epoch `epoch`: the same batch whenever it is asked for.
    fn batch(&mut self, epoch: u64, index: u64) -> Result<Self::Batch, RunError>;

    /// The same batches passed through `f` (e.g. a batcher's tensors into a target's batch).
    fn map<T, F: FnMut(Self::Batch) -> T>(self, f: F) -> Map<Self, F>
    where
        Self: Sized,
    {
        Map { inner: self, f }
    }
}

/// [`BatchSource::map`].
pub struct Map<B, F> {
    inner: B,
    f: F,
}

impl<B: BatchSource, T, F: FnMut(B::Batch) -> T> BatchSource for Map<B, F> {
    type Batch = T;

    fn batches_per_epoch(&self) -> Option<u64> {
        self.inner.batches_per_epoch()
    }

    fn batch(&mut self, epoch: u64, index: u64) -> Result<T, RunError> {
        self.inner.batch(epoch, index).map(&mut self.f)
    }
}

/// Refuses a batch size outside `1..=n`, the size of the data set.
pub(crate) fn check_batch_size(batch_size: usize, n: usize) -> Result<(), RunError> {
    if batch_size == 0 || batch_size > n {
        return Err(RunError::Setting(format!(
            "batch size {batch_size} must lie in 1..={n} (the data set's size)"
        )));
    }
    Ok(())
}

/// The same batch at every step (`()` for analytic toys, or the whole data set).
#[derive(Clone, Debug, Default)]
pub struct Repeat<B>(pub B);

impl<B: Clone> BatchSource for Repeat<B> {
    type Batch = B;

    fn batches_per_epoch(&self) -> Option<u64> {
        None
    }

    fn batch(&mut self, _epoch: u64, _index: u64) -> Result<B, RunError> {
        Ok(self.0.clone())
    }
}

/// An endless stream of batches from `f(step)`. The closure answers for the contract of a
/// [`BatchSource`]: one that draws from a stream of its own, in order, repeats an uninterrupted
/// run but not a resumed one (a study that never checkpoints); keyed by the step, it repeats
/// both.
pub struct FnBatches<F>(pub F);

impl<T, F: FnMut(u64) -> Result<T, RunError>> BatchSource for FnBatches<F> {
    type Batch = T;

    fn batches_per_epoch(&self) -> Option<u64> {
        None
    }

    fn batch(&mut self, _epoch: u64, index: u64) -> Result<T, RunError> {
        (self.0)(index)
    }
}

/// Minibatches of a burn dataset: epoch `e` visits the items in the order
/// [`epoch_order`]`(len, seed, e)` in batches of `batch_size`, the last partial batch dropped
/// (every step then sees `batch_size` items, as the `N / n` scaling of the energy assumes).
pub struct DatasetBatches<D, B, I, O> {
    dataset: D,
    batcher: B,
    device: Device,
    order: EpochOrder,
    _items: PhantomData<fn(I) -> O>,
}

/// The items of every epoch cut into batches: epoch `e` visits `0..n` in
/// [`epoch_order`]`(n, seed, e)`, `n / batch_size` batches, the last partial one dropped.
struct EpochOrder {
    n: usize,
    batch_size: usize,
    seed: u64,
    /// The order of the epoch last asked for.
    order: Option<(u64, Vec<usize>)>,
}

impl EpochOrder {
    fn new(n: usize, batch_size: usize, seed: u64) -> Result<Self, RunError> {
        check_batch_size(batch_size, n)?;
        Ok(Self {
            n,
            batch_size,
            seed,
            order: None,
        })
    }

    fn per_epoch(&self) -> u64 {
        (self.n / self.batch_size) as u64
    }

    /// Item indices of batch `index` of epoch `epoch` (`index` below [`EpochOrder::per_epoch`]).
    fn indices(&mut self, epoch: u64, index: u64) -> &[usize] {
        if self.order.as_ref().is_none_or(|(e, _)| *e != epoch) {
            self.order = Some((epoch, epoch_order(self.n, self.seed, epoch)));
        }
        let b = self.batch_size;
        let start = index as usize * b;
        let order = &self.order.as_ref().expect("set above").1;
        &order[start..start + b]
    }

    /// [`EpochOrder::indices`], an index past the epoch refused.
    fn checked(&mut self, epoch: u64, index: u64) -> Result<&[usize], RunError> {
        let per_epoch = self.per_epoch();
        if index >= per_epoch {
            return Err(RunError::Batch(format!(
                "batch {index} of an epoch of {per_epoch}"
            )));
        }
        Ok(self.indices(epoch, index))
    }
}

impl<D, B, I, O> DatasetBatches<D, B, I, O>
where
    D: Dataset<I>,
    B: Batcher<I, O>,
{
    /// Batches of `batch_size` items of `dataset`, built by `batcher` on `device`, shuffled
    /// with `seed`. Errors on an empty batch size or one larger than the data set.
    pub fn new(
        dataset: D,
        batcher: B,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Result<Self, RunError> {
        Ok(Self {
            order: EpochOrder::new(dataset.len(), batch_size, seed)?,
            dataset,
            batcher,
            device: device.clone(),
            _items: PhantomData,
        })
    }

    /// Number of items `N` (the full-data scale of the energy).
    pub fn len(&self) -> usize {
        self.dataset.len()
    }

    /// Whether the data set is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.dataset.is_empty()
    }

    /// The data set.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// Item indices of batch `index` of epoch `epoch`.
    pub fn indices(&mut self, epoch: u64, index: u64) -> &[usize] {
        self.order.indices(epoch, index)
    }
}

impl<D, B, I, O> BatchSource for DatasetBatches<D, B, I, O>
where
    D: Dataset<I>,
    B: Batcher<I, O>,
{
    type Batch = O;

    fn batches_per_epoch(&self) -> Option<u64> {
        Some(self.order.per_epoch())
    }

    fn batch(&mut self, epoch: u64, index: u64) -> Result<O, RunError> {
        let idx = self.order.checked(epoch, index)?;
        let mut items = Vec::with_capacity(idx.len());
        for &i in idx {
            items.push(
                self.dataset
                    .get(i)
                    .map_err(|e| RunError::Batch(format!("item {i}: {e}")))?,
            );
        }
        Ok(self.batcher.batch(items, &self.device))
    }
}

/// Minibatches by index: epoch `e` visits the items `0..n` in [`epoch_order`]`(n, seed, e)` in
/// batches of `batch_size` (the last partial batch dropped), and `make(e, indices)` builds the
/// batch of those items: a stage free to draw per item from keys of `(seed, e, item)`, such as
/// data augmentation, so that a batch stays a pure function of `(epoch, index)`.
pub struct IndexBatches<F> {
    order: EpochOrder,
    make: F,
}

impl<F> IndexBatches<F> {
    /// Batches of `batch_size` of `n` items, shuffled with `seed`, built by `make`. Errors on
    /// an empty batch size or one larger than `n`.
    pub fn new(n: usize, batch_size: usize, seed: u64, make: F) -> Result<Self, RunError> {
        Ok(Self {
            order: EpochOrder::new(n, batch_size, seed)?,
            make,
        })
    }
}

impl<T, F: FnMut(u64, &[usize]) -> Result<T, RunError>> BatchSource for IndexBatches<F> {
    type Batch = T;

    fn batches_per_epoch(&self) -> Option<u64> {
        Some(self.order.per_epoch())
    }

    fn batch(&mut self, epoch: u64, index: u64) -> Result<T, RunError> {
        let idx = self.order.checked(epoch, index)?;
        (self.make)(epoch, idx)
    }
}

#[cfg(test)]
mod tests {
    use burn::data::dataset::InMemDataset;

    use super::*;

    struct Sum;
    impl Batcher<u32, Vec<u32>> for Sum {
        fn batch(&self, items: Vec<u32>, _device: &Device) -> Vec<u32> {
            items
        }
    }

    #[test]
    fn an_epoch_visits_every_item_once_and_replays_exactly() {
        let data = InMemDataset::new((0..10u32).collect());
        let device = Device::flex();
        let mut b = DatasetBatches::new(data, Sum, 3, 5, &device).unwrap();
        assert_eq!(b.batches_per_epoch(), Some(3));
        let epoch: Vec<u32> = (0..3).flat_map(|i| b.batch(2, i).unwrap()).collect();
        let mut seen = epoch.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(
            seen.len(),
            9,
            "9 distinct items, the 10th dropped with the partial batch"
        );
        // Random access gives the same batches in any order.
        assert_eq!(b.batch(0, 1).unwrap().len(), 3);
        assert_eq!(b.batch(2, 1).unwrap(), epoch[3..6]);
        assert!(b.batch(2, 3).is_err());
        assert!(DatasetBatches::new(InMemDataset::new(vec![1u32]), Sum, 2, 0, &device).is_err());
    }

    #[test]
    fn index_batches_hand_out_the_dataset_order_with_the_epoch() {
        let data = InMemDataset::new((0..10u32).collect());
        let device = Device::flex();
        let mut by_item = DatasetBatches::new(data, Sum, 3, 5, &device).unwrap();
        let mut by_index = IndexBatches::new(10, 3, 5, |e: u64, idx: &[usize]| {
            Ok((e, idx.iter().map(|&i| i as u32).collect::<Vec<_>>()))
        })
        .unwrap();
        assert_eq!(by_index.batches_per_epoch(), Some(3));
        for (e, i) in [(2, 1), (0, 0), (2, 2), (7, 1)] {
            assert_eq!(
                by_index.batch(e, i).unwrap(),
                (e, by_item.batch(e, i).unwrap())
            );
        }
        assert!(by_index.batch(0, 3).is_err());
        assert!(IndexBatches::new(3, 0, 1, |_: u64, _: &[usize]| Ok::<(), RunError>(())).is_err());
    }
}
