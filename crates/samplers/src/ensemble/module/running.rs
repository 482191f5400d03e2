//! burn's running state (BatchNorm's running mean and variance) under chains that step on
//! pool threads.
//!
//! A [`RunningState`](burn::module::RunningState) records each update under the id of the
//! thread that made it and folds the recorded entries into its value, *averaging* them, at the
//! next sync: when the same thread updates again, when a training-mode forward reads it with
//! `value_sync` on a thread that has an entry, or at [`Module::valid`]. A network chain's
//! forward pass runs on whichever pool thread picks the chain up, so without a sync the running
//! statistics would depend on the thread schedule: a forward on a thread with no entry reads a
//! value one update old, and a later sync averages two steps' updates. Settling a module on the
//! thread that just updated it leaves a single entry, whose average is itself: the statistics
//! are always those of the last forward pass, whichever thread ran it, so runs are
//! reproducible and a checkpoint (which reads the value) holds the current statistics.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

/// Whether `module` is a trainable module (some float tensor takes gradients) with float state
/// outside the autodiff graph (running statistics, or other tensors without gradients) that a
/// sync or a copy may concern.
pub(crate) fn has_buffers<M: Module>(module: &M) -> bool {
    #[derive(Default)]
    struct Kinds {
        trainable: bool,
        buffer: bool,
    }
    impl ModuleVisitor for Kinds {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if param.val().is_require_grad() {
                self.trainable = true;
            } else {
                self.buffer = true;
            }
        }
    }
    let mut v = Kinds::default();
    module.visit(&mut v);
    v.trainable && v.buffer
}

/// A copy of the autodiff module `module` whose running state is its own: a clone shares it
/// (burn's `RunningState` sits behind `Arc`s), so a forward pass of the clone, or of the
/// original, would move both. Snapshots of chains (samples, control-variate points) are such
/// copies: they keep the statistics of the moment they were taken.
pub(crate) fn detached_copy<M: Module>(module: &M) -> M {
    module.valid().train()
}

/// Folds the pending running-state updates of `module` into their values (see the module
/// docs); call it on the thread that ran the forward pass.
pub(crate) fn settle<M: Module>(module: &M) {
    drop(module.valid());
}
