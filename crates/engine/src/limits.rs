//! Bounds on run sizes that no sampler checks: a budget no machine finishes, a thread count no
//! machine holds, a chain count a sampler cannot run with, a seed no configuration file holds.
//! Each refusal is one line ([`RunError::Setting`], or [`RunError::Input`] for data too small),
//! to be given before any work. The messages name the command line's options (`--threads`,
//! `--chains`) a caller passes in.

use sgmcmc_samplers::registry::lookup;

use crate::RunError;

/// The most steps per chain a run may ask for, 2^40 (about 1.1e12: some 13 days of the fastest
/// host toy chain, 10^6 steps/s; years for a network).
pub const MAX_STEPS: u64 = 1 << 40;

/// The most compute threads a run may ask for (more only wait on each other, and thousands
/// exhaust the system before the first step).
pub const MAX_THREADS: usize = 1024;

/// Refuses `steps` steps per chain (what `flag` asks for; a lower bound where only it is
/// known, e.g. the epochs) beyond [`MAX_STEPS`]; `None` is a count that overflowed while
/// being computed.
pub fn check_steps(flag: &str, steps: Option<u64>) -> Result<(), RunError> {
    match steps {
        Some(s) if s <= MAX_STEPS => Ok(()),
        _ => Err(RunError::Setting(format!(
            "{flag}: {} steps per chain are beyond any run (at most 2^40 = {MAX_STEPS})",
            steps.map_or("more than 2^64".to_string(), |s| s.to_string())
        ))),
    }
}

/// Refuses a thread count beyond [`MAX_THREADS`].
pub fn check_threads(threads: usize) -> Result<(), RunError> {
    if threads > MAX_THREADS {
        return Err(RunError::Setting(format!(
            "--threads {threads}: at most {MAX_THREADS} compute threads"
        )));
    }
    Ok(())
}

/// Refuses fewer chains than sampler `name` runs with
/// ([`Entry::min_chains`](sgmcmc_samplers::registry::Entry::min_chains)): replica exchange
/// needs two rungs, ICSGLD's P interacting chains at least two (one is CSGLD). Unknown names
/// are left to the sampler registry's own error.
pub fn check_chains(name: &str, chains: usize) -> Result<(), RunError> {
    match lookup(name) {
        Ok(e) if chains < e.min_chains() => Err(RunError::Setting(format!(
            "{name} runs at least {} chains, got {chains} (--chains)",
            e.min_chains()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a training set of `n` images smaller than one minibatch of `batch`.
pub fn check_batch_fits(n: usize, batch: usize) -> Result<(), RunError> {
    if n < batch {
        return Err(RunError::Input(format!(
            "{n} training images, fewer than the batch size {batch}"
        )));
    }
    Ok(())
}

/// Refuses a seed beyond the signed 64-bit integers of TOML (a run's `config.toml`).
pub fn check_seed(seed: u64) -> Result<(), RunError> {
    if i64::try_from(seed).is_err() {
        return Err(RunError::Setting(format!(
            "seed {seed} is too large (at most {}, the largest integer a config file holds)",
            i64::MAX
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_at_their_edges() {
        assert!(check_steps("--iters", Some(MAX_STEPS)).is_ok());
        assert!(check_steps("--iters", Some(MAX_STEPS + 1)).is_err());
        assert!(check_steps("--epochs", None).is_err());
        assert!(check_threads(MAX_THREADS).is_ok());
        assert!(check_threads(MAX_THREADS + 1).is_err());
        assert!(check_chains("icsgld", 1).is_err());
        assert!(check_chains("icsgld", 2).is_ok());
        assert!(check_chains("resgld", 1).is_err());
        assert!(check_chains("csgld", 1).is_ok());
        assert!(check_chains("no-such-sampler", 1).is_ok());
        assert!(check_seed(i64::MAX as u64).is_ok());
        assert!(check_seed(i64::MAX as u64 + 1).is_err());
    }
}
