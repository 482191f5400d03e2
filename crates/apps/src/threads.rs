//! The compute threads of a run.
//!
//! burn-flex splits GEMMs and large element-wise ops over rayon's pool. That pays for the CNN
//! (batch 256: 3.0 -> 3.6 steps/s from one to two threads here) but costs on small networks,
//! whose ops take microseconds: handing a 100x64x100 GEMM to a second thread and waiting for it
//! costs more than it saves (digits MLP: ~4,800 steps/s on one thread vs ~3,400 on two). The
//! small-network commands therefore run inside a pool of `--threads` (default 1) and spend the
//! machine's other cores on independent runs (`sgmcmc uci --jobs`).

use rayon::ThreadPoolBuilder;

use crate::error::AppError;

/// Runs `f` with burn's CPU kernels on `threads` threads (0: rayon's default, one per core).
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> Result<T, AppError> {
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sgmcmc-compute-{i}"))
        .build()
        .map_err(|e| AppError::Run(format!("cannot start {threads} compute threads: {e}")))?;
    Ok(pool.install(f))
}
