//! Training-mode batch normalisation, optionally followed by a residual sum and a ReLU
//! (`y = relu(bn(x) + r)`), as one tracked operation on burn-flex's autodiff backend whose
//! forward and backward are [`super::batch_norm`]'s kernels.

use burn::backend::Flex;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, NodeGuard, Ops, OpsKind};
use burn::backend::flex::FlexTensor;

use super::batch_norm::{Dims, backward, forward, statistics};
use super::{FlexAd, dims_of, f32_slice, from_f32};

#[derive(Clone, Debug)]
struct State {
    x: NodeId,
    gamma: NodeId,
    dims: Dims,
    shape: Vec<usize>,
    mean: Vec<f64>,
    inv_std: Vec<f64>,
    /// The output, whose sign masks the gradient, when a ReLU follows.
    relu_output: Option<FlexTensor>,
}

/// Parents `x`, `gamma`, `beta` and, with `N = 4`, the residual.
#[derive(Debug)]
struct BatchNormBackward<const N: usize>;

impl<const N: usize> Backward<Flex, N> for BatchNormBackward<N> {
    type State = State;

    fn backward(self, ops: Ops<State, N>, grads: &mut Gradients, cp: &mut Checkpointer) {
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        let s = ops.state;
        let x: FlexTensor = cp.retrieve_node_output(s.x);
        let gamma: FlexTensor = cp.retrieve_node_output(s.gamma);
        let y = s.relu_output.as_ref().map(f32_slice);
        let (dx, dgamma, dbeta, masked) = backward(
            s.dims,
            &f32_slice(&x),
            &f32_slice(&gamma),
            (&s.mean, &s.inv_std),
            &f32_slice(&dy),
            y.as_deref(),
        );
        let t = |v: Vec<f32>, shape: &[usize]| from_f32(v, shape.to_vec());
        let channels = [s.dims[1]];
        let [x_node, gamma_node, beta_node] = [0, 1, 2].map(|i| ops.parents[i].clone());
        if let Some(node) = ops.parents.get(3).cloned().flatten() {
            // The residual's gradient is `g` (`dy` itself without a ReLU).
            let g = masked.map_or(dy, |g| t(g, &s.shape));
            grads.register::<Flex>(node.id, g);
        }
        for (node, grad, shape) in [
            (x_node, dx, &s.shape[..]),
            (gamma_node, dgamma, &channels[..]),
            (beta_node, dbeta, &channels[..]),
        ] {
            if let Some(node) = node {
                grads.register::<Flex>(node.id, t(grad, shape));
            }
        }
    }
}

/// The output `y` recorded as the operation on `nodes` (`x`, `gamma`, `beta`, and the
/// residual when there are four), `x` and `gamma` kept for the backward pass.
fn track<const N: usize>(
    nodes: [NodeGuard; N],
    (x, gamma): (&FlexAd, &FlexAd),
    state: impl FnOnce(NodeId, NodeId) -> State,
    y: FlexTensor,
) -> FlexAd {
    match BatchNormBackward::<N>
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = state(prep.checkpoint(x), prep.checkpoint(gamma));
            prep.finish(state, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}

/// `relu(gamma (x - mean) / sqrt(var + eps) + beta + r)` in training mode on `x: [B, C, ...]`,
/// `gamma`, `beta: [C]`, with the residual `r` (shaped like `x`) and the ReLU each optional;
/// returns the output and the batch mean and biased variance per channel.
pub(crate) fn batch_norm_train(
    x: FlexAd,
    (gamma, beta): (FlexAd, FlexAd),
    epsilon: f64,
    residual: Option<FlexAd>,
    relu: bool,
) -> (FlexAd, Vec<f32>, Vec<f32>) {
    let shape = dims_of(x.primitive());
    let (batch, channels) = (shape[0], shape[1]);
    let dims = [batch, channels, shape[2..].iter().product()];
    let xs = f32_slice(x.primitive());
    let (mean, var) = statistics(dims, &xs);
    let inv_std: Vec<f64> = var.iter().map(|v| 1.0 / (v + epsilon).sqrt()).collect();
    let y = forward(
        dims,
        &xs,
        (&f32_slice(gamma.primitive()), &f32_slice(beta.primitive())),
        (&mean, &inv_std),
        residual
            .as_ref()
            .map(|r| f32_slice(r.primitive()))
            .as_deref(),
        relu,
    );
    drop(xs);
    let y = from_f32(y, shape.clone());
    let stats = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let (mean32, var32) = (stats(&mean), stats(&var));
    let relu_output = relu.then(|| y.clone());
    let state = |x, gamma| State {
        x,
        gamma,
        dims,
        shape,
        mean,
        inv_std,
        relu_output,
    };
    let out = match residual {
        None => track(
            [x.node(), gamma.node(), beta.node()],
            (&x, &gamma),
            state,
            y,
        ),
        Some(r) => track(
            [x.node(), gamma.node(), beta.node(), r.node()],
            (&x, &gamma),
            state,
            y,
        ),
    };
    (out, mean32, var32)
}
