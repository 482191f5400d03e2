//! A safe single-threaded `f32` matrix product over strided slices (the `gemm` crate that
//! burn-flex itself multiplies with); the kernels here parallelise over images instead.

/// A read-only `rows x cols` matrix view: element `(i, j)` is `data[i * row_stride + j *
/// col_stride]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a> View<'a> {
    /// A row-major `rows x cols` matrix.
    pub fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Largest index touched, plus one (0 for an empty view).
    fn extent(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride + 1
        }
    }
}

/// `dst = a @ b` (or `dst += a @ b` with `accumulate`), `dst` row-major `a.rows x b.cols`.
///
/// # Panics
/// If the shapes disagree or a view reaches past its slice.
pub(crate) fn matmul(dst: &mut [f32], a: View, b: View, accumulate: bool) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions");
    assert!(dst.len() >= m * n, "destination too small");
    assert!(
        a.extent() <= a.data.len() && b.extent() <= b.data.len(),
        "view out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(0.0);
        }
        return;
    }
    // SAFETY: the asserts above keep every index the product reads (`a`, `b`: within `extent`)
    // and writes (`dst`: `m * n` row-major) inside its slice; `dst` does not alias the inputs
    // (a `&mut` and two `&` borrows).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.data.as_ptr(),
            a.col_stride as isize,
            a.row_stride as isize,
            b.data.as_ptr(),
            b.col_stride as isize,
            b.row_stride as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: View, b: View) -> Vec<f32> {
        let mut out = vec![0.0; a.rows * b.cols];
        for i in 0..a.rows {
            for j in 0..b.cols {
                for l in 0..a.cols {
                    out[i * b.cols + j] += a.data[i * a.row_stride + l * a.col_stride]
                        * b.data[l * b.row_stride + j * b.col_stride];
                }
            }
        }
        out
    }

    /// Small integers: every product and sum is exact in `f32`, so the results must be equal.
    #[test]
    fn matmul_matches_the_naive_product_on_every_layout() {
        let a: Vec<f32> = (0..35).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..20).map(|i| (i % 5) as f32 - 2.0).collect();
        for (va, vb) in [
            (View::rows(&a, 7, 5), View::rows(&b, 5, 4)),
            (View::rows(&a, 5, 7).t(), View::rows(&b, 4, 5).t()),
        ] {
            let want = naive(va, vb);
            let mut got = vec![f32::NAN; 28];
            matmul(&mut got, va, vb, false);
            assert_eq!(got, want);
            matmul(&mut got, va, vb, true);
            let twice: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
            assert_eq!(got, twice);
        }
    }
}
