//! Register-blocked AVX-512 kernels over the shifted views of [`super::shifted`]:
//!
//! * [`product`], `Y'[o, r] = sum_(c, t) w[o, c, t] xp[c, r + off_t]` (forward and input
//!   gradient): a tile of 32 grid points times 8 output channels stays in 16 vector
//!   accumulators over all `C kh kw` terms and is written once, where tap-by-tap matrix
//!   products would read and write the output `kh kw` times. Each term is one unaligned load of
//!   16 grid points of one input channel and one broadcast weight per output channel.
//! * [`weight_grad`], `dw[t, c, o] = sum_r dY'[o, r] xp[c, r + off_t]`: per block of 4 output
//!   times 4 input channels, 16 accumulators of 16 grid points each per tap, the grid in
//!   L1-sized chunks, summed across the lanes at the end; `dY'` is read in its natural
//!   `[O, grid]` rows (no transposition).
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
    /// `(first lane, lanes, index in y of the first)` for output channel `o` of `out_channels`.
    fn runs(
        &self,
        r: usize,
        o: usize,
        out_channels: usize,
        mut f: impl FnMut(usize, usize, usize),
    ) {
        let [oh, ow] = self.out_hw;
        let mut k = 0;
        while k < LANES {
            let (b, q) = ((r + k) / self.plane, (r + k) % self.plane);
            let (i, j) = (q / self.pitch, q % self.pitch);
            // Lanes left in this row of the grid (one row, or up to the image's end).
            let row = (LANES - k).min(self.pitch - j);
            if b < self.images && i < oh && j < ow {
                f(
                    k,
                    row.min(ow - j),
                    ((b * out_channels + o) * oh + i) * ow + j,
                );
            }
            k += row;
        }
    }

    /// Elements of `y`.
    fn len(&self, out_channels: usize) -> usize {
        self.images * out_channels * self.out_hw[0] * self.out_hw[1]
    }
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
    // store `Crop::runs` allows is inside `y`.
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
        __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_reduce_add_ps,
        _mm512_set1_ps, _mm512_setzero_ps,
    };

    use super::{Crop, LANES, OUT_BLOCK, Views};

    /// Output and input channels per weight-gradient tile.
    const GRAD_BLOCK: usize = 4;
    /// Grid points per weight-gradient chunk: 8 rows of 2 KiB stay in the L1 cache.
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
        for o0 in (0..o_all).step_by(OUT_BLOCK) {
            let ob = OUT_BLOCK.min(o_all - o0);
            let mut v = 0;
            while v < vectors {
                let r0 = v * LANES;
                // SAFETY (all calls): `o0 + ob <= O`, `r0 + 16 RB <= grid`, and the contract.
                unsafe {
                    if v + 3 <= vectors && ob == OUT_BLOCK {
                        tile::<3, OUT_BLOCK>(a, weight, (o_all, o0), r0, (crop, out));
                        v += 3;
                        continue;
                    }
                    if v + 2 <= vectors && ob == OUT_BLOCK {
                        tile::<2, OUT_BLOCK>(a, weight, (o_all, o0), r0, (crop, out));
                        v += 2;
                        continue;
                    }
                    match ob {
                        8 => tile::<1, 8>(a, weight, (o_all, o0), r0, (crop, out)),
                        7 => tile::<1, 7>(a, weight, (o_all, o0), r0, (crop, out)),
                        6 => tile::<1, 6>(a, weight, (o_all, o0), r0, (crop, out)),
                        5 => tile::<1, 5>(a, weight, (o_all, o0), r0, (crop, out)),
                        4 => tile::<1, 4>(a, weight, (o_all, o0), r0, (crop, out)),
                        3 => tile::<1, 3>(a, weight, (o_all, o0), r0, (crop, out)),
                        2 => tile::<1, 2>(a, weight, (o_all, o0), r0, (crop, out)),
                        _ => tile::<1, 1>(a, weight, (o_all, o0), r0, (crop, out)),
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
    /// output: the lanes [`Crop::runs`] gives, inside `y` by [`super::product`]'s asserts.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const RB: usize, const OB: usize>(
        a: &Views,
        weight: &[f32],
        (o_all, o0): (usize, usize),
        r0: usize,
        (crop, out): (&Crop, *mut f32),
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
            for (o, acc) in acc.iter().enumerate() {
                for (b, &acc) in acc.iter().enumerate() {
                    crop.runs(r0 + b * LANES, o0 + o, o_all, |k, lanes, at| {
                        // Lanes `k..k + lanes` to `y[at..at + lanes]`: the base pointer is
                        // `k` before `at` (masked lanes are never touched).
                        let mask = (((1u32 << lanes) - 1) << k) as u16;
                        _mm512_mask_storeu_ps(out.wrapping_add(at).wrapping_sub(k), mask, acc);
                    });
                }
            }
        }
    }

    /// Every weight-gradient tile into `dw: [taps, C, O]`: per block of 4 output times 4 input
    /// channels, the grid in chunks of [`CHUNK`] points (the block's rows of `dy` and of the
    /// input stay in the L1 cache across the taps), each tap's accumulators carried from chunk
    /// to chunk in `part`, and summed across their lanes at the end.
    ///
    /// # Safety
    /// AVX-512F available; the operands as long as [`super::weight_grad`] asserts.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn weight_tiles(a: &Views, dy: &[f32], o_all: usize, dw: &mut [f32]) {
        let taps = a.taps.len();
        let mut part = vec![_mm512_setzero_ps(); taps * GRAD_BLOCK * GRAD_BLOCK];
        for o0 in (0..o_all).step_by(GRAD_BLOCK) {
            for c0 in (0..a.channels).step_by(GRAD_BLOCK) {
                let (ob, cb) = (GRAD_BLOCK.min(o_all - o0), GRAD_BLOCK.min(a.channels - c0));
                if ob == GRAD_BLOCK && cb == GRAD_BLOCK {
                    // SAFETY: the block lies inside `O x C`; the contract.
                    unsafe { block::<GRAD_BLOCK, GRAD_BLOCK>(a, dy, o_all, dw, o0, c0, &mut part) };
                    continue;
                }
                // A ragged edge block: one channel pair at a time.
                for o in o0..o0 + ob {
                    for c in c0..c0 + cb {
                        // SAFETY: `o < O`, `c < C`; the contract.
                        unsafe { block::<1, 1>(a, dy, o_all, dw, o, c, &mut part) };
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
                        let mut xv = [_mm512_setzero_ps(); CB];
                        for (j, xv) in xv.iter_mut().enumerate() {
                            *xv = _mm512_loadu_ps(x.wrapping_add(j * stride + r));
                        }
                        for (acc, &dyv) in acc.iter_mut().zip(&dyv) {
                            for (acc, &xv) in acc.iter_mut().zip(&xv) {
                                *acc = _mm512_fmadd_ps(dyv, xv, *acc);
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
            for i in 0..OB {
                for j in 0..CB {
                    let v = _mm512_reduce_add_ps(part[i * CB + j]);
                    dw[(t * a.channels + c0 + j) * o_all + o0 + i] = v;
                }
            }
        }
    }
}
