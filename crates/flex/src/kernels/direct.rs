//! Register-blocked AVX-512 kernels over the shifted views of [`super::shifted`]:
//!
//! * [`product`], `Y'[o, r] = sum_(c, t) w[o, c, t] xp[c, r + off_t]` (forward and input
//!   gradient): a tile of 48 grid points times 8 output channels stays in 24 vector
//!   accumulators over all `C kh kw` terms and is written once, where tap-by-tap matrix
//!   products would read and write the output `kh kw` times. Each term is one unaligned load of
//!   16 grid points of one input channel and one broadcast weight per output channel. The
//!   masked stores of the output pixels among each vector's points are planned once per call
//!   ([`Crop::stores`]), not once per tile.
//! * [`weight_grad`], `dw[t, c, o] = sum_r dY'[o, r] xp[c, r + off_t]`: per block of 6 output
//!   times 4 input channels, 24 accumulators of 16 grid points each per tap, the grid in
//!   L1-sized chunks, summed across the lanes at the end (sixteen at a time by a transposing
//!   tree); `dY'` is read in its natural `[O, grid]` rows (no transposition), by aligned loads
//!   when the caller's rows start on a cache line.
//!
//! Both use AVX-512F intrinsics: callers take them when [`available`] says the CPU has them
//! (checked at run time) and fall back to tap-by-tap matrix products otherwise.
//! Their summation orders are fixed, so results do not depend on the thread count. Pointer
//! offsets are `wrapping_add`s (in bounds by the callers' asserts), which keeps the debug
//! builds' precondition checks out of the inner loops.

use std::mem::MaybeUninit;

/// Grid points per vector.
const LANES: usize = 16;
/// Output channels per tile.
const OUT_BLOCK: usize = 8;

/// The shifted views of one group of padded images.
pub(crate) struct Views<'a> {
    /// Padded input, channel `c` at `c * channel_stride` (read up to `grid` points past the
    /// largest tap offset of the last channel).
    pub xp: &'a [f32],
    pub channel_stride: usize,
    pub channels: usize,
    /// Tap offsets `p Wp + q`, in the weight's `(p, q)` order.
    pub taps: &'a [usize],
    /// Grid points, a multiple of 16.
    pub grid: usize,
}

impl Views<'_> {
    /// Asserts that every view lies inside `xp` and that the grid is whole vectors.
    fn check(&self) {
        assert_eq!(self.grid % LANES, 0, "grid not a multiple of {LANES}");
        let reach = self.taps.iter().max().copied().unwrap_or(0) + self.grid;
        assert!(
            self.channels == 0
                || self.xp.len() >= (self.channels - 1) * self.channel_stride + reach
        );
    }
}

/// Where the product's grid points go: output pixel `(b, i, j)` of image `b` is grid point
/// `b plane + i pitch + j` (`i < oh`, `j < ow`), written to `y: [images, O, oh, ow]`; the
/// other grid points are dropped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crop {
    pub images: usize,
    pub plane: usize,
    pub pitch: usize,
    pub out_hw: [usize; 2],
}

impl Crop {
    /// For the 16 grid points from `r`, each run of consecutive ones that are output pixels:
    /// `(first lane, lanes, index in y of the first)` for output channel 0 (channel `o`'s is
    /// `o oh ow` further on).
    fn runs(&self, r: usize, out_channels: usize, mut f: impl FnMut(usize, usize, usize)) {
        let [oh, ow] = self.out_hw;
        let mut k = 0;
        while k < LANES {
            let (b, q) = ((r + k) / self.plane, (r + k) % self.plane);
            let (i, j) = (q / self.pitch, q % self.pitch);
            // Lanes left in this row of the grid (one row, or up to the image's end).
            let row = (LANES - k).min(self.pitch - j);
            if b < self.images && i < oh && j < ow {
                f(k, row.min(ow - j), (b * out_channels * oh + i) * ow + j);
            }
            k += row;
        }
    }

    /// The masked stores of every vector of a grid of `grid` points, worked out once per
    /// product rather than once per vector and tile of output channels.
    fn stores(&self, grid: usize, out_channels: usize) -> Stores {
        let mut plan = Stores {
            starts: Vec::with_capacity(grid / LANES + 1),
            runs: Vec::with_capacity(2 * grid / LANES),
            channel: self.out_hw[0] * self.out_hw[1],
        };
        for r in (0..grid).step_by(LANES) {
            plan.starts.push(plan.runs.len());
            self.runs(r, out_channels, |k, lanes, at| {
                plan.runs.push(Run {
                    mask: (((1u32 << lanes) - 1) << k) as u16,
                    base: at.wrapping_sub(k),
                })
            });
        }
        plan.starts.push(plan.runs.len());
        plan
    }

    /// Elements of `y`.
    fn len(&self, out_channels: usize) -> usize {
        self.images * out_channels * self.out_hw[0] * self.out_hw[1]
    }
}

/// One masked store of a vector of 16 grid points: its lanes in `mask` to `y[base + lane]`
/// for output channel 0 (`base` wraps below zero when the run starts past lane 0; only the
/// masked lanes are touched).
#[derive(Clone, Copy, Debug)]
struct Run {
    mask: u16,
    base: usize,
}

/// The stores of the grid's vectors: vector `v`'s are `runs[starts[v]..starts[v + 1]]`, each
/// `channel` (`oh ow`) further on per output channel.
#[derive(Debug)]
struct Stores {
    starts: Vec<usize>,
    runs: Vec<Run>,
    channel: usize,
}

/// Whether the kernels run on this CPU.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `w: [O, C, taps]` (burn's `[O, C, kh, kw]`) as `[C, taps, O]`: the kernel's broadcasts of
/// one term for consecutive output channels are then contiguous.
pub(crate) fn weight_layout(w: &[f32], out_channels: usize, channels: usize) -> Vec<f32> {
    let taps = w.len() / (out_channels * channels);
    let mut out = vec![0.0f32; w.len()];
    for o in 0..out_channels {
        for c in 0..channels {
            for t in 0..taps {
                out[(c * taps + t) * out_channels + o] = w[(o * channels + c) * taps + t];
            }
        }
    }
    out
}

/// `Y' = ` the product of `weight` (laid out `[C, taps, O]`, see [`weight_layout`]) with the
/// views, `[O, grid]`, its output pixels written to `y` (every element of `y`; see [`Crop`]).
///
/// # Panics
/// If the CPU lacks AVX-512F (see [`available`]), `grid` is not a multiple of 16, an operand
/// is too short, `y` is not `crop`'s size or the grid does not reach its last pixel.
pub(crate) fn product(
    v: &Views,
    weight: &[f32],
    out_channels: usize,
    crop: &Crop,
    y: &mut [MaybeUninit<f32>],
) {
    v.check();
    assert!(weight.len() >= v.channels * v.taps.len() * out_channels);
    assert_eq!(y.len(), crop.len(out_channels), "output size");
    let [oh, ow] = crop.out_hw;
    assert!(
        ow <= crop.pitch && oh * crop.pitch <= crop.plane,
        "crop inside the planes"
    );
    if y.is_empty() {
        return;
    }
    let last = (crop.images - 1) * crop.plane + (oh - 1) * crop.pitch + ow - 1;
    assert!(last < v.grid, "the grid reaches the last output pixel");
    assert!(available(), "the direct kernels need AVX-512F");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX-512F; the operands are as long as asserted above, and every
    // store `Crop::stores` plans is inside `y`.
    unsafe {
        avx512::tiles(v, weight, out_channels, crop, y.as_mut_ptr().cast::<f32>())
    };
}

/// `dw: [taps, C, O]` (overwritten) = `sum_r dy[o, r] xp[c, r + off_t]` for `dy: [O, grid]`
/// (zero at the grid's dropped points).
///
/// # Panics
/// If the CPU lacks AVX-512F (see [`available`]), `grid` is not a multiple of 16 or an operand
/// is too short.
pub(crate) fn weight_grad(v: &Views, dy: &[f32], out_channels: usize, dw: &mut [f32]) {
    v.check();
    assert!(dy.len() >= out_channels * v.grid);
    assert!(dw.len() >= v.taps.len() * v.channels * out_channels);
    assert!(available(), "the direct kernels need AVX-512F");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX-512F; the operands are as long as asserted above.
    unsafe {
        avx512::weight_tiles(v, dy, out_channels, dw)
    };
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_add_ps, _mm512_castpd_ps, _mm512_castps_pd, _mm512_fmadd_ps,
        _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_reduce_add_ps, _mm512_set1_ps,
        _mm512_setzero_ps, _mm512_shuffle_f32x4, _mm512_storeu_ps, _mm512_unpackhi_pd,
        _mm512_unpackhi_ps, _mm512_unpacklo_pd, _mm512_unpacklo_ps,
    };

    use super::{Crop, LANES, OUT_BLOCK, Stores, Views};

    /// Output channels per weight-gradient block (rows of `dy`, aligned loads).
    const GRAD_OUT: usize = 6;
    /// Input channels per weight-gradient block (unaligned loads of the shifted views).
    const GRAD_IN: usize = 4;
    /// Grid points per weight-gradient chunk: the block's 10 rows of 2 KiB stay in the L1 cache.
    const CHUNK: usize = 512;

    /// Every tile of the product into `out` (`O x grid` values).
    ///
    /// # Safety
    /// AVX-512F available; the operands as long as [`super::product`] asserts.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tiles(
        a: &Views,
        weight: &[f32],
        o_all: usize,
        crop: &Crop,
        out: *mut f32,
    ) {
        let vectors = a.grid / LANES;
        let stores = &crop.stores(a.grid, o_all);
        for o0 in (0..o_all).step_by(OUT_BLOCK) {
            let ob = OUT_BLOCK.min(o_all - o0);
            let mut v = 0;
            while v < vectors {
                let r0 = v * LANES;
                // SAFETY (all calls): `o0 + ob <= O`, `r0 + 16 RB <= grid`, and the contract.
                unsafe {
                    if v + 3 <= vectors && ob == OUT_BLOCK {
                        tile::<3, OUT_BLOCK>(a, weight, (o_all, o0), r0, (stores, out));
                        v += 3;
                        continue;
                    }
                    if v + 2 <= vectors && ob == OUT_BLOCK {
                        tile::<2, OUT_BLOCK>(a, weight, (o_all, o0), r0, (stores, out));
                        v += 2;
                        continue;
                    }
                    match ob {
                        8 => tile::<1, 8>(a, weight, (o_all, o0), r0, (stores, out)),
                        7 => tile::<1, 7>(a, weight, (o_all, o0), r0, (stores, out)),
                        6 => tile::<1, 6>(a, weight, (o_all, o0), r0, (stores, out)),
                        5 => tile::<1, 5>(a, weight, (o_all, o0), r0, (stores, out)),
                        4 => tile::<1, 4>(a, weight, (o_all, o0), r0, (stores, out)),
                        3 => tile::<1, 3>(a, weight, (o_all, o0), r0, (stores, out)),
                        2 => tile::<1, 2>(a, weight, (o_all, o0), r0, (stores, out)),
                        _ => tile::<1, 1>(a, weight, (o_all, o0), r0, (stores, out)),
                    }
                }
                v += 1;
            }
        }
    }

    /// Output channels `o0..o0 + OB` at grid points `r0..r0 + 16 RB`: `OB x RB` vector
    /// accumulators over all `C kh kw` terms, then each stored (masked) to the output pixels
    /// among its points.
    ///
    /// # Safety
    /// AVX-512F; `o0 + OB <= O`, `r0 + 16 RB <= grid`, and the operands as long as
    /// [`super::product`] asserts. Every access is then in bounds: input `c S + r0 + off + 16 RB
    /// - 1 < (C - 1) S + max off + grid`, weight `(c taps + t) O + o0 + OB - 1 < C taps O`,
    /// output: the lanes [`Crop::stores`] gives, inside `y` by [`super::product`]'s asserts.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const RB: usize, const OB: usize>(
        a: &Views,
        weight: &[f32],
        (o_all, o0): (usize, usize),
        r0: usize,
        (stores, out): (&Stores, *mut f32),
    ) {
        let mut acc: [[__m512; RB]; OB] = [[_mm512_setzero_ps(); RB]; OB];
        let (xp, weight) = (a.xp.as_ptr(), weight.as_ptr());
        // SAFETY: in bounds by the contract.
        unsafe {
            for c in 0..a.channels {
                let x = xp.wrapping_add(c * a.channel_stride + r0);
                let mut w = weight.wrapping_add(c * a.taps.len() * o_all + o0);
                for &off in a.taps {
                    let mut xv: [__m512; RB] = [_mm512_setzero_ps(); RB];
                    for (b, xv) in xv.iter_mut().enumerate() {
                        *xv = _mm512_loadu_ps(x.wrapping_add(off.wrapping_add(b * LANES)));
                    }
                    for (o, acc) in acc.iter_mut().enumerate() {
                        let wv = _mm512_set1_ps(*w.wrapping_add(o));
                        for (acc, &xv) in acc.iter_mut().zip(&xv) {
                            *acc = _mm512_fmadd_ps(xv, wv, *acc);
                        }
                    }
                    w = w.wrapping_add(o_all);
                }
            }
            let v0 = r0 / LANES;
            for (o, acc) in acc.iter().enumerate() {
                let out = out.wrapping_add((o0 + o) * stores.channel);
                for (b, &acc) in acc.iter().enumerate() {
                    let runs = &stores.runs[stores.starts[v0 + b]..stores.starts[v0 + b + 1]];
                    for run in runs {
                        _mm512_mask_storeu_ps(out.wrapping_add(run.base), run.mask, acc);
                    }
                }
            }
        }
    }

    /// Every weight-gradient tile into `dw: [taps, C, O]`: per block of 6 output times 4 input
    /// channels (24 accumulators, and 10 loads per 24 products), the grid in chunks of
    /// [`CHUNK`] points (the block's rows of `dy` and of the input stay in the L1 cache across
    /// the taps), each tap's accumulators carried from chunk to chunk in `part`, and summed
    /// across their lanes at the end.
    ///
    /// # Safety
    /// AVX-512F available; the operands as long as [`super::weight_grad`] asserts.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn weight_tiles(a: &Views, dy: &[f32], o_all: usize, dw: &mut [f32]) {
        let taps = a.taps.len();
        let mut part = vec![_mm512_setzero_ps(); taps * GRAD_OUT * GRAD_IN];
        for o0 in (0..o_all).step_by(GRAD_OUT) {
            for c0 in (0..a.channels).step_by(GRAD_IN) {
                let ob = GRAD_OUT.min(o_all - o0);
                let p = &mut part;
                // SAFETY (all calls): the block lies inside `O x C`; the contract.
                unsafe {
                    if a.channels - c0 < GRAD_IN {
                        // A ragged edge of input channels: one channel pair at a time.
                        for o in o0..o0 + ob {
                            for c in c0..a.channels {
                                block::<1, 1>(a, dy, o_all, dw, o, c, p);
                            }
                        }
                        continue;
                    }
                    match ob {
                        6 => block::<6, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                        5 => block::<5, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                        4 => block::<4, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                        3 => block::<3, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                        2 => block::<2, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                        _ => block::<1, GRAD_IN>(a, dy, o_all, dw, o0, c0, p),
                    }
                }
            }
        }
    }

    /// `dw[t, c0 + j, o0 + i] = sum_r dy[o0 + i, r] xp[c0 + j, r + off_t]` for every tap and
    /// `i < OB`, `j < CB`, with `part` (at least `taps OB CB` vectors; contents unspecified) to carry
    /// the accumulators from chunk to chunk.
    ///
    /// # Safety
    /// AVX-512F; `o0 + OB <= O`, `c0 + CB <= C`, and the operands as long as
    /// [`super::weight_grad`] asserts. Every read is then in bounds: `dy` below `(o0 + OB) grid`,
    /// input below `(c0 + CB - 1) S + off_t + grid`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn block<const OB: usize, const CB: usize>(
        a: &Views,
        dy: &[f32],
        o_all: usize,
        dw: &mut [f32],
        o0: usize,
        c0: usize,
        part: &mut [__m512],
    ) {
        let part = &mut part[..a.taps.len() * OB * CB];
        let dy = dy.as_ptr().wrapping_add(o0 * a.grid);
        let x = a.xp.as_ptr().wrapping_add(c0 * a.channel_stride);
        let (grid, stride) = (a.grid, a.channel_stride);
        for start in (0..grid).step_by(CHUNK) {
            let end = (start + CHUNK).min(grid);
            for (&off, part) in a.taps.iter().zip(part.chunks_exact_mut(OB * CB)) {
                // From zero on the first chunk, else where the last one left them.
                let mut acc = [[_mm512_setzero_ps(); CB]; OB];
                if start > 0 {
                    for (i, acc) in acc.iter_mut().enumerate() {
                        acc.copy_from_slice(&part[i * CB..(i + 1) * CB]);
                    }
                }
                let x = x.wrapping_add(off);
                let mut r = start;
                while r < end {
                    // SAFETY: in bounds by the contract (`r + 16 <= grid`).
                    unsafe {
                        let mut dyv = [_mm512_setzero_ps(); OB];
                        for (i, dyv) in dyv.iter_mut().enumerate() {
                            *dyv = _mm512_loadu_ps(dy.wrapping_add(i * grid + r));
                        }
                        // One input vector at a time: `OB + 1 + OB CB` registers live.
                        for j in 0..CB {
                            let xv = _mm512_loadu_ps(x.wrapping_add(j * stride + r));
                            for (acc, &dyv) in acc.iter_mut().zip(&dyv) {
                                acc[j] = _mm512_fmadd_ps(dyv, xv, acc[j]);
                            }
                        }
                    }
                    r += LANES;
                }
                for (i, acc) in acc.iter().enumerate() {
                    part[i * CB..(i + 1) * CB].copy_from_slice(acc);
                }
            }
        }
        for (t, part) in part.chunks_exact(OB * CB).enumerate() {
            let mut sums = [0.0f32; GRAD_OUT * GRAD_IN];
            for (sums, part) in sums.chunks_mut(LANES).zip(part.chunks(LANES)) {
                if let Ok(part) = <&[__m512; LANES]>::try_from(part) {
                    // Sixteen lane sums in one vector.
                    // SAFETY: `sums` holds the 16 lanes stored.
                    unsafe { _mm512_storeu_ps(sums.as_mut_ptr(), sum16(part)) };
                } else {
                    for (sum, &v) in sums.iter_mut().zip(part) {
                        *sum = _mm512_reduce_add_ps(v);
                    }
                }
            }
            for i in 0..OB {
                for j in 0..CB {
                    dw[(t * a.channels + c0 + j) * o_all + o0 + i] = sums[i * CB + j];
                }
            }
        }
    }

    /// `[sum of v[0]'s lanes, ..., sum of v[15]'s lanes]`: a transposing tree of 15 vector
    /// additions (and 30 shuffles), where sixteen separate lane sums would take 64 of each.
    /// Each sum is `((l0 + l2) + (l1 + l3)) + ...` over its lanes: a fixed order.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sum16(v: &[__m512; LANES]) -> __m512 {
        // Pairs: within every 128-bit block, `[a0 + a2, b0 + b2, a1 + a3, b1 + b3]`.
        let pair = |a, b| _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
        // Quads: within every 128-bit block, the block's sum of each of the four vectors.
        let quad = |ab: __m512, cd: __m512| {
            let (ab, cd) = (_mm512_castps_pd(ab), _mm512_castps_pd(cd));
            _mm512_add_ps(
                _mm512_castpd_ps(_mm512_unpacklo_pd(ab, cd)),
                _mm512_castpd_ps(_mm512_unpackhi_pd(ab, cd)),
            )
        };
        // Across blocks: `[x0 + x1, x2 + x3, y0 + y1, y2 + y3]` for blocks `x0..x3`, `y0..y3`.
        let blocks = |x, y| {
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0b10_00_10_00>(x, y),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(x, y),
            )
        };
        let q: [__m512; 4] = std::array::from_fn(|k| {
            let v = &v[4 * k..4 * k + 4];
            quad(pair(v[0], v[1]), pair(v[2], v[3]))
        });
        blocks(blocks(q[0], q[1]), blocks(q[2], q[3]))
    }
}
