//! Output buffers written once, with no zero fill first: the kernels' outputs are allocated
//! uninitialised and handed to writers that set every element.

use std::mem::MaybeUninit;

/// A vector of `len` elements, all of them written by `fill` (which gets them uninitialised),
/// and what `fill` returns.
///
/// # Safety
///
/// `fill` must initialise every element of the slice it is given.
pub(crate) unsafe fn written<R>(
    len: usize,
    fill: impl FnOnce(&mut [MaybeUninit<f32>]) -> R,
) -> (Vec<f32>, R) {
    let mut v = Vec::with_capacity(len);
    let r = fill(&mut v.spare_capacity_mut()[..len]);
    // SAFETY: the caller's contract: `fill` initialised `v[..len]`.
    unsafe { v.set_len(len) };
    (v, r)
}

/// `out` filled with zeros, as the initialised slice it now is.
pub(crate) fn zeroed(out: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    out.fill(MaybeUninit::new(0.0));
    // SAFETY: every element was just written.
    unsafe { &mut *(out as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// Writes `f(a_i, b_i)` to every `out_i` (all three of one length) and returns `out` as the
/// initialised slice it now is.
pub(crate) fn write_map<'a>(
    out: &'a mut [MaybeUninit<f32>],
    a: &[f32],
    b: &[f32],
    f: impl Fn(f32, f32) -> f32,
) -> &'a [f32] {
    assert!(
        a.len() == out.len() && b.len() == out.len(),
        "write_map: lengths differ"
    );
    for ((o, &u), &v) in out.iter_mut().zip(a).zip(b) {
        o.write(f(u, v));
    }
    // SAFETY: the loop wrote every element (equal lengths, asserted above).
    unsafe { &*(out as *const [MaybeUninit<f32>] as *const [f32]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_set_every_element() {
        let (v, ()) =
            unsafe { written(5, |o| _ = write_map(o, &[1.0; 5], &[2.0; 5], |a, b| a + b)) };
        assert_eq!(v, [3.0; 5]);
        let mut buf = [MaybeUninit::new(7.0f32); 3];
        assert_eq!(zeroed(&mut buf), [0.0; 3]);
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn write_map_refuses_short_inputs() {
        let mut buf = [MaybeUninit::<f32>::uninit(); 3];
        write_map(&mut buf, &[1.0; 2], &[1.0; 3], |a, _| a);
    }
}
