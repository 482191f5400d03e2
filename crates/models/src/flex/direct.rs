//! The shifted-view product `Y'[o, r] = sum_(c, p, q) w[o, c, p, q] xp[c, r + p Wp + q]` (see
//! [`super::shifted`]) as one register-blocked kernel: a tile of 32 grid points times 8 output
//! channels stays in 16 vector accumulators over all `C kh kw` terms and is written once,
//! where tap-by-tap matrix products would read and write the output `kh kw` times.
//!
//! Each term is one unaligned load of 16 consecutive grid points of one input channel and one
//! broadcast weight per output channel, fused multiply-added into the accumulators: AVX-512F
//! intrinsics, taken when the CPU has them (checked at run time); elsewhere the caller falls
//! back to tap-by-tap matrix products.

/// Grid points per vector.
const LANES: usize = 16;
/// Output channels per tile.
const OUT_BLOCK: usize = 8;

/// The operands of one product.
pub(crate) struct Product<'a> {
    /// Padded input, channel `c` at `c * channel_stride` (read up to `grid` points past the
    /// largest tap offset of the last channel).
    pub xp: &'a [f32],
    pub channel_stride: usize,
    pub channels: usize,
    /// Tap offsets `p Wp + q`, in the weight's `(p, q)` order.
    pub taps: &'a [usize],
    /// Weight laid out `[C, taps, O]` (see [`weight_layout`]).
    pub weight: &'a [f32],
    pub out_channels: usize,
    /// Grid points, a multiple of 16.
    pub grid: usize,
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

/// `out: [O, grid]` (row-major) = the product, if this CPU has AVX-512F (`false`, and `out`
/// untouched, otherwise: the caller then takes tap-by-tap matrix products).
///
/// # Panics
/// If `grid` is not a multiple of 16 or an operand is too short.
pub(crate) fn product(a: &Product, out: &mut [f32]) -> bool {
    assert_eq!(a.grid % LANES, 0, "grid not a multiple of {LANES}");
    let reach = a.taps.iter().max().copied().unwrap_or(0) + a.grid;
    assert!(a.channels == 0 || a.xp.len() >= (a.channels - 1) * a.channel_stride + reach);
    assert!(a.weight.len() >= a.channels * a.taps.len() * a.out_channels);
    assert!(out.len() >= a.out_channels * a.grid);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F; the operands are as long as asserted above.
        unsafe { avx512::tiles(a, out.as_mut_ptr()) };
        return true;
    }
    false
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps,
    };

    use super::{LANES, OUT_BLOCK, Product};

    /// Every tile of the product into `out` (`O x grid` values).
    ///
    /// # Safety
    /// AVX-512F available; the operands as long as [`super::product`] asserts.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tiles(a: &Product, out: *mut f32) {
        let vectors = a.grid / LANES;
        for o0 in (0..a.out_channels).step_by(OUT_BLOCK) {
            let ob = OUT_BLOCK.min(a.out_channels - o0);
            let mut v = 0;
            while v < vectors {
                let r0 = v * LANES;
                // SAFETY (all calls): `o0 + ob <= O`, `r0 + 16 RB <= grid`, and the contract.
                unsafe {
                    if v + 2 <= vectors && ob == OUT_BLOCK {
                        tile::<2, OUT_BLOCK>(a, o0, r0, out);
                        v += 2;
                        continue;
                    }
                    match ob {
                        8 => tile::<1, 8>(a, o0, r0, out),
                        7 => tile::<1, 7>(a, o0, r0, out),
                        6 => tile::<1, 6>(a, o0, r0, out),
                        5 => tile::<1, 5>(a, o0, r0, out),
                        4 => tile::<1, 4>(a, o0, r0, out),
                        3 => tile::<1, 3>(a, o0, r0, out),
                        2 => tile::<1, 2>(a, o0, r0, out),
                        _ => tile::<1, 1>(a, o0, r0, out),
                    }
                }
                v += 1;
            }
        }
    }

    /// Output channels `o0..o0 + OB` at grid points `r0..r0 + 16 RB`: `OB x RB` vector
    /// accumulators over all `C kh kw` terms, then one store each.
    ///
    /// # Safety
    /// AVX-512F; `o0 + OB <= O`, `r0 + 16 RB <= grid`, and the operands as long as
    /// [`super::product`] asserts. Every access is then in bounds: input `c S + r0 + off + 16 RB
    /// - 1 < (C - 1) S + max off + grid`, weight `(c taps + t) O + o0 + OB - 1 < C taps O`,
    /// output `(o0 + o) grid + r0 + 16 RB - 1 < O grid`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const RB: usize, const OB: usize>(
        a: &Product,
        o0: usize,
        r0: usize,
        out: *mut f32,
    ) {
        let mut acc: [[__m512; RB]; OB] = [[_mm512_setzero_ps(); RB]; OB];
        let (xp, weight, o_all) = (a.xp.as_ptr(), a.weight.as_ptr(), a.out_channels);
        // SAFETY: in bounds by the contract.
        unsafe {
            for c in 0..a.channels {
                let x = xp.add(c * a.channel_stride + r0);
                let mut w = weight.add(c * a.taps.len() * o_all + o0);
                for &off in a.taps {
                    let mut xv: [__m512; RB] = [_mm512_setzero_ps(); RB];
                    for (b, xv) in xv.iter_mut().enumerate() {
                        *xv = _mm512_loadu_ps(x.add(off.wrapping_add(b * LANES)));
                    }
                    for (o, acc) in acc.iter_mut().enumerate() {
                        let wv = _mm512_set1_ps(*w.add(o));
                        for (acc, &xv) in acc.iter_mut().zip(&xv) {
                            *acc = _mm512_fmadd_ps(xv, wv, *acc);
                        }
                    }
                    w = w.add(o_all);
                }
            }
            for (o, acc) in acc.iter().enumerate() {
                for (b, &acc) in acc.iter().enumerate() {
                    _mm512_storeu_ps(out.add((o0 + o) * a.grid + r0 + b * LANES), acc);
                }
            }
        }
    }
}
