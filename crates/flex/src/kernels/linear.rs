//! A dense layer `y = x W + b` (`x: [n, d_in]`, `W: [d_in, d_out]` as burn's `Linear` stores
//! it, `b: [d_out]`) on burn-flex's autodiff backend as one tracked operation:
//!
//! forward   `y = b + x W`             (one matrix product into rows that start as `b`)
//! backward  `dx = dy W^T`, `dW = x^T dy`, `db = sum_rows dy`
//!
//! The products read the transposes as strided views (no copies), write their outputs once
//! (no zero fill first), and split over row blocks of `y`/`dx` and of `dW` on rayon's pool when
//! the layer is large enough for a hand-off to pay. burn-flex 0.22.1 runs the same layer as a
//! zero-filled, copied product output plus a bias pass forward, and backward as two more
//! products (each output zero-filled and copied) and a reduction.

use std::mem::MaybeUninit;

use burn::backend::Flex;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, NodeGuard, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use rayon::prelude::*;

use super::gemm::{View, matmul};
use super::uninit::written;
use super::{FlexAd, f32_slice, from_f32};

/// Multiply-adds below which a product runs on the calling thread (a rayon hand-off costs
/// more than it saves there: the digits MLP's 100 x 64 x 100 products).
const PARALLEL_WORK: usize = 1 << 21;

/// Rows of `dst` (`rows x cols`, row-major) per task when `work` multiply-adds are split.
fn block_rows(rows: usize, work: usize) -> usize {
    let threads = rayon::current_num_threads();
    if threads < 2 || work < PARALLEL_WORK {
        rows.max(1)
    } else {
        rows.div_ceil(threads).max(1)
    }
}

/// `dst = init + a @ b` by row blocks of `dst` (`a.rows x b.cols`), `init` filling each row
/// first (`None`: zero, i.e. a plain product).
fn product(a: View, b: View, init: Option<&[f32]>) -> Vec<f32> {
    let (rows, cols) = (a.rows, b.cols);
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    let per = block_rows(rows, rows * cols * a.cols);
    // SAFETY: every block is filled (bias rows or zeros) and then accumulated into; the
    // blocks cover all `rows * cols` elements.
    let (v, ()) = unsafe {
        written(rows * cols, |out| {
            out.par_chunks_mut(per * cols)
                .enumerate()
                .for_each(|(i, block)| {
                    let r0 = i * per;
                    let n = block.len() / cols;
                    let block = fill_rows(block, cols, init);
                    let a = View {
                        data: &a.data[r0 * a.row_stride..],
                        rows: n,
                        ..a
                    };
                    matmul(block, a, b, true);
                })
        })
    };
    v
}

/// Every row of `out` (`cols` wide) set to `init` (zeros without), as the slice it now is.
fn fill_rows<'a>(
    out: &'a mut [MaybeUninit<f32>],
    cols: usize,
    init: Option<&[f32]>,
) -> &'a mut [f32] {
    for row in out.chunks_mut(cols) {
        match init {
            Some(b) => row.iter_mut().zip(b).for_each(|(o, &v)| _ = o.write(v)),
            None => row.fill(MaybeUninit::new(0.0)),
        }
    }
    // SAFETY: every element was just written.
    unsafe { &mut *(out as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// `sum_i dy[i, :]` in row order.
fn column_sums(dy: &[f32], cols: usize) -> Vec<f32> {
    let mut s = vec![0.0f32; cols];
    for row in dy.chunks_exact(cols) {
        s.iter_mut().zip(row).for_each(|(s, &v)| *s += v);
    }
    s
}

#[derive(Clone, Debug)]
struct State {
    x: NodeId,
    w: NodeId,
    /// `[n, d_in, d_out]`.
    dims: [usize; 3],
}

/// Parents `x`, `W` and, with `N = 3`, `b`.
#[derive(Debug)]
struct LinearBackward<const N: usize>;

impl<const N: usize> Backward<Flex, N> for LinearBackward<N> {
    type State = State;

    fn backward(self, ops: Ops<State, N>, grads: &mut Gradients, cp: &mut Checkpointer) {
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        let State { x, w, dims } = ops.state;
        let [n, d_in, d_out] = dims;
        let dy = f32_slice(&dy);
        let dyv = View::rows(&dy, n, d_out);
        if let Some(node) = ops.parents[0].clone() {
            let w: FlexTensor = cp.retrieve_node_output(w);
            let dx = product(dyv, View::rows(&f32_slice(&w), d_in, d_out).t(), None);
            grads.register::<Flex>(node.id, from_f32(dx, [n, d_in]));
        }
        if let Some(node) = ops.parents[1].clone() {
            let x: FlexTensor = cp.retrieve_node_output(x);
            let dw = product(View::rows(&f32_slice(&x), n, d_in).t(), dyv, None);
            grads.register::<Flex>(node.id, from_f32(dw, [d_in, d_out]));
        }
        if let Some(node) = ops.parents.get(2).cloned().flatten() {
            grads.register::<Flex>(node.id, from_f32(column_sums(&dy, d_out), [d_out]));
        }
    }
}

fn track<const N: usize>(
    nodes: [NodeGuard; N],
    (x, w): (&FlexAd, &FlexAd),
    dims: [usize; 3],
    y: FlexTensor,
) -> FlexAd {
    match LinearBackward::<N>
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = State {
                x: prep.checkpoint(x),
                w: prep.checkpoint(w),
                dims,
            };
            prep.finish(state, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}

/// `x W + b` and `[n, d_in, d_out]`.
fn forward(x: &FlexTensor, w: &FlexTensor, b: Option<&FlexTensor>) -> (FlexTensor, [usize; 3]) {
    let xs = x.layout().shape();
    let ws = w.layout().shape();
    let dims = [xs[0], xs[1], ws[1]];
    let [n, d_in, d_out] = dims;
    let bias = b.map(f32_slice);
    let y = product(
        View::rows(&f32_slice(x), n, d_in),
        View::rows(&f32_slice(w), d_in, d_out),
        bias.as_deref(),
    );
    (from_f32(y, [n, d_out]), dims)
}

/// `x W + b` of plain flex tensors (no graph): what [`linear`] computes going forward.
pub(crate) fn linear_plain(x: &FlexTensor, w: &FlexTensor, b: Option<&FlexTensor>) -> FlexTensor {
    forward(x, w, b).0
}

/// `x W + b` for `x: [n, d_in]`, `W: [d_in, d_out]`, `b: [d_out]` (optional) in `f32` on
/// `Autodiff<Flex>`.
pub(crate) fn linear(x: FlexAd, w: FlexAd, b: Option<FlexAd>) -> FlexAd {
    let (y, dims) = forward(
        x.primitive(),
        w.primitive(),
        b.as_ref().map(|b| b.primitive()),
    );
    match b {
        Some(b) => track([x.node(), w.node(), b.node()], (&x, &w), dims, y),
        None => track([x.node(), w.node()], (&x, &w), dims, y),
    }
}
