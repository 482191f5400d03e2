//! Tuning helpers: an energy partition for contour samplers from a pilot run, and a probe for
//! the largest stable learning rate.

use sgmcmc_samplers::control::EnergyPartition;
use sgmcmc_samplers::sampler::Sampler;

use crate::batches::BatchSource;
use crate::error::RunError;
use crate::observers::OnStep;
use crate::run::Run;

/// The stochastic energies of every chain at every step after `burn_in` of a `steps`-step run
/// of `sampler` (e.g. SGLD at the sampling temperature): the pilot for [`partition`].
pub fn pilot_energies<S, B>(
    sampler: &mut S,
    batches: &mut B,
    steps: u64,
    burn_in: u64,
) -> Result<Vec<f64>, RunError>
where
    S: Sampler,
    B: BatchSource<Batch = S::Batch>,
{
    let mut energies = Vec::new();
    let mut collect = OnStep::new(
        |at: &crate::Progress, r: &sgmcmc_samplers::sampler::StepReport| {
            if at.step >= burn_in {
                energies.extend_from_slice(&r.energies);
            }
        },
    );
    Run::steps(steps)
        .observe(&mut collect)
        .run(sampler, batches)?;
    Ok(energies)
}

/// An energy partition of `bins` equal bins from pilot energies: it spans the pilot's range
/// `[q_lo, q_hi]` between its `low` and `high` quantiles, widened by `below` of that range
/// under it and `above` of it over it. A contour sampler flattens the energy landscape and
/// climbs above where a pilot at the target temperature stays, so the default
/// ([`partition`]) leaves room above: `low = 0.001`, `high = 0.999`, 10% below, 100% above.
pub fn partition_with(
    energies: &[f64],
    bins: usize,
    low: f64,
    high: f64,
    below: f64,
    above: f64,
) -> Result<EnergyPartition, RunError> {
    let mut e: Vec<f64> = energies.iter().copied().filter(|v| v.is_finite()).collect();
    if e.len() < 2 {
        return Err(RunError::Setting(
            "a partition needs at least two finite pilot energies".into(),
        ));
    }
    if !(0.0..=1.0).contains(&low) || !(low..=1.0).contains(&high) {
        return Err(RunError::Setting(format!(
            "quantiles must satisfy 0 <= low <= high <= 1 (got {low}, {high})"
        )));
    }
    e.sort_by(f64::total_cmp);
    let q = |p: f64| e[((e.len() - 1) as f64 * p).round() as usize];
    let (lo, hi) = (q(low), q(high));
    let range = (hi - lo).max(1e-12 * lo.abs().max(1.0));
    let u_min = lo - below * range;
    let du = (range * (1.0 + below + above)) / bins.max(1) as f64;
    EnergyPartition::new(u_min, du, bins).map_err(RunError::from)
}

/// [`partition_with`] at the defaults.
pub fn partition(energies: &[f64], bins: usize) -> Result<EnergyPartition, RunError> {
    partition_with(energies, bins, 0.001, 0.999, 0.1, 1.0)
}

/// The largest learning rate among `candidates` (tried from the largest down) whose `steps`-step
/// run neither diverges nor ends with a mean energy above `growth` times its first step's:
/// `build(lr)` makes a fresh sampler from the same starting point. Use a fraction of it (a
/// half is common) for the real run. Errors when every candidate fails.
///
/// A rule without a probe, for Gaussian-likelihood networks at full-data scale: the curvature
/// of the energy is about `N lambda` times that of the mean squared error (`lambda` the noise
/// precision), so stability needs `lr < 2 / (N lambda L)` with `L` the mean loss's largest
/// curvature; the probe measures the whole bound at once.
pub fn probe_lr<S, B>(
    candidates: &[f64],
    steps: u64,
    growth: f64,
    batches: &mut B,
    mut build: impl FnMut(f64) -> Result<S, RunError>,
) -> Result<f64, RunError>
where
    S: Sampler,
    B: BatchSource<Batch = S::Batch>,
{
    let mut sorted: Vec<f64> = candidates.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    for lr in sorted {
        let mut sampler = build(lr)?;
        let mut first = None;
        let mut last = 0.0;
        let mut track = OnStep::new(
            |_: &crate::Progress, r: &sgmcmc_samplers::sampler::StepReport| {
                let m = r.energies.iter().sum::<f64>() / r.energies.len().max(1) as f64;
                first.get_or_insert(m);
                last = m;
            },
        );
        let outcome = Run::steps(steps)
            .observe(&mut track)
            .run(&mut sampler, batches);
        match outcome {
            Ok(_)
                if last.is_finite()
                    && first.is_some_and(|f: f64| last <= growth * f.abs().max(f)) =>
            {
                return Ok(lr);
            }
            Ok(_) => {}
            Err(e) if e.is_divergence() => {}
            Err(e) => return Err(e),
        }
    }
    Err(RunError::Setting(format!(
        "every learning rate of {candidates:?} diverged or grew the energy {growth}-fold in {steps} steps"
    )))
}
