//! The CIFAR training augmentation of the papers' reference code (and of He et al. 2016):
//! zero-pad every side by `pad` pixels, crop a random `rows x cols` window, and flip it
//! horizontally with probability 1/2 (torchvision's `RandomCrop(32, padding=4)` and
//! `RandomHorizontalFlip()`).
//!
//! Each draw is a pure function of a 64-bit key (a run derives it from its seed, the epoch and
//! the image's index), so a resumed run augments every image as the uninterrupted run did.

use crate::datasets::ImageItem;
use crate::splitmix::SplitMix64;

/// Random crop with zero padding, then a random horizontal flip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Augment {
    /// Zero pixels added on each side before cropping (4 in the papers; 0 = no crop).
    pub pad: usize,
    /// Flip horizontally with probability 1/2.
    pub flip: bool,
}

impl Augment {
    /// The papers' augmentation: 4-pixel padding and horizontal flips.
    pub const PAPER: Augment = Augment { pad: 4, flip: true };

    /// No augmentation.
    pub const NONE: Augment = Augment {
        pad: 0,
        flip: false,
    };

    /// The crop offsets `(dy, dx)` in `0..=2 pad` and the flip drawn for `key`.
    pub fn draw(&self, key: u64) -> (usize, usize, bool) {
        let mut rng = SplitMix64(key);
        let span = (2 * self.pad + 1) as u64;
        let dy = (rng.next_u64() % span) as usize;
        let dx = (rng.next_u64() % span) as usize;
        let flip = self.flip && rng.next_u64() >> 63 == 1;
        (dy, dx, flip)
    }

    /// `item` augmented with the draw of `key`: output pixel `(r, c)` of channel `ch` is input
    /// pixel `(r + dy - pad, c' + dx - pad)` (0 outside the image), `c' = cols - 1 - c` when
    /// flipped, else `c`.
    pub fn apply(&self, item: &ImageItem, key: u64) -> ImageItem {
        if *self == Self::NONE {
            return item.clone();
        }
        let (dy, dx, flip) = self.draw(key);
        let (rows, cols) = (item.rows, item.cols);
        let mut pixels = vec![0u8; item.pixels.len()];
        for ch in 0..item.channels {
            let plane = &item.pixels[ch * rows * cols..(ch + 1) * rows * cols];
            let out = &mut pixels[ch * rows * cols..(ch + 1) * rows * cols];
            for r in 0..rows {
                let Some(src_r) = (r + dy).checked_sub(self.pad).filter(|&s| s < rows) else {
                    continue;
                };
                for c in 0..cols {
                    let cc = if flip { cols - 1 - c } else { c };
                    if let Some(src_c) = (cc + dx).checked_sub(self.pad).filter(|&s| s < cols) {
                        out[r * cols + c] = plane[src_r * cols + src_c];
                    }
                }
            }
        }
        ImageItem {
            pixels,
            ..item.clone()
        }
    }
}

/// `n` distinct indices of `0..total` drawn uniformly without replacement for `key` (a
/// partial Fisher-Yates shuffle): the minibatches a sampler draws outside the epoch order
/// (e.g. to refresh a variance estimate), reproducible from the key alone.
pub fn sample_indices(total: usize, n: usize, key: u64) -> Vec<usize> {
    let n = n.min(total);
    let mut rng = SplitMix64(key);
    let mut all: Vec<usize> = (0..total).collect();
    for i in 0..n {
        let j = i + (rng.next_u64() % (total - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
    all
}

/// The key of image `index` in epoch `epoch` of a run seeded `seed`.
pub fn key(seed: u64, epoch: u64, index: usize) -> u64 {
    let mut rng = SplitMix64(seed ^ 0xA5A5_5A5A_0F0F_F0F0);
    let a = rng.next_u64();
    SplitMix64(a ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .next_u64()
        .wrapping_add(index as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> ImageItem {
        // 2 channels of 3x4, pixel value = 100 ch + 10 r + c.
        let mut pixels = Vec::new();
        for ch in 0..2u8 {
            for r in 0..3u8 {
                for c in 0..4u8 {
                    pixels.push(100 * ch + 10 * r + c);
                }
            }
        }
        ImageItem {
            pixels,
            label: 7,
            channels: 2,
            rows: 3,
            cols: 4,
        }
    }

    /// Exhaustive check of `apply` against the formula, over many keys.
    #[test]
    fn crops_and_flips_follow_the_formula() {
        let a = Augment { pad: 2, flip: true };
        let x = item();
        let (mut flips, mut offsets) = (0, std::collections::BTreeSet::new());
        for k in 0..400u64 {
            let key = key(3, 1, k as usize);
            let (dy, dx, flip) = a.draw(key);
            assert!(dy <= 4 && dx <= 4);
            offsets.insert((dy, dx));
            flips += usize::from(flip);
            let y = a.apply(&x, key);
            assert_eq!((y.label, y.channels, y.rows, y.cols), (7, 2, 3, 4));
            for ch in 0..2usize {
                for r in 0..3usize {
                    for c in 0..4usize {
                        let cc = if flip { 3 - c } else { c };
                        let (sr, sc) =
                            (r as isize + dy as isize - 2, cc as isize + dx as isize - 2);
                        let want = if (0..3).contains(&sr) && (0..4).contains(&sc) {
                            (100 * ch as isize + 10 * sr + sc) as u8
                        } else {
                            0
                        };
                        assert_eq!(y.pixels[(ch * 3 + r) * 4 + c], want);
                    }
                }
            }
        }
        // All 25 offsets occur; flips are Binomial(400, 1/2): 200 +- 10, 5 sd = 50.
        assert_eq!(offsets.len(), 25);
        assert!((150..=250).contains(&flips), "{flips} flips of 400");
    }

    /// Each index is drawn with probability `n / total`: over 2000 keys, every index of 0..10
    /// appears 600 times in expectation for n = 3 (binomial sd 20.5; 5 sd = 103).
    #[test]
    fn sampled_indices_are_distinct_and_uniform() {
        let mut counts = [0usize; 10];
        for k in 0..2000u64 {
            let idx = sample_indices(10, 3, key(9, k, 0));
            let mut sorted = idx.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), 3, "{idx:?}");
            for i in idx {
                counts[i] += 1;
            }
        }
        assert!(counts.iter().all(|&c| c.abs_diff(600) < 103), "{counts:?}");
        assert_eq!(sample_indices(4, 9, 1).len(), 4);
        assert_eq!(sample_indices(100, 5, 7), sample_indices(100, 5, 7));
    }

    #[test]
    fn no_augmentation_and_centred_crops_are_the_identity() {
        let x = item();
        assert_eq!(Augment::NONE.apply(&x, 5), x);
        let centred = (0..5000u64)
            .map(|k| key(1, 0, k as usize))
            .find(|&k| Augment::PAPER.draw(k) == (4, 4, false))
            .expect("a centred draw among 5000 keys (probability 1/162 each)");
        assert_eq!(Augment::PAPER.apply(&x, centred), x);
        assert_ne!(key(1, 0, 0), key(1, 1, 0));
        assert_ne!(key(1, 0, 0), key(2, 0, 0));
    }
}
