//! Stopping a run whose chains left their valid range.

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress};

/// Stops the run with [`RunError::Diverged`] (naming the chain and the step) when a chain's
/// energy exceeds `max_energy`, or its gradient multiplier or log weight is not finite. A
/// non-finite energy already stops every sampler; the bound catches a chain that is running
/// away before it overflows.
///
/// With [`DivergenceGuard::blow_up`] it also stops a chain whose energy grew beyond a factor
/// of where it started: a run that blows up to a large but finite energy (a network at lr 10:
/// 351 -> 2.4e13, and staying there) otherwise ends with metrics that describe no posterior.
#[derive(Clone, Debug, Default)]
pub struct DivergenceGuard {
    max_energy: Option<f64>,
    blow_up: Option<f64>,
    /// Each chain's energy at the session's first step (the reference of the blow-up rule).
    first: Vec<f64>,
}

/// The blow-up factor the commands use: an energy 10^6 times its start (and above 1e6) is a
/// run gone wrong, not a posterior (a network's energy at initialisation is `N ln C` or so; a
/// sampler at a sensible step size lowers it).
pub const BLOW_UP: f64 = 1e6;

impl DivergenceGuard {
    /// A guard on finiteness only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also stops when an energy exceeds `u`.
    pub fn max_energy(mut self, u: f64) -> Self {
        self.max_energy = Some(u);
        self
    }

    /// Also stops when a chain's energy exceeds `factor * max(|U_first|, 1)`, with `U_first`
    /// its energy at the first step of this session (of a resumed run: the first step after
    /// the resume).
    pub fn blow_up(mut self, factor: f64) -> Self {
        self.blow_up = Some(factor);
        self
    }
}

impl<S: Sampler> Observer<S> for DivergenceGuard {
    fn on_step(&mut self, at: &Progress, _: &S, r: &StepReport) -> Result<(), RunError> {
        let diverged = |chain: usize, what: String| RunError::Diverged {
            chain,
            step: at.step,
            what,
        };
        for (p, e) in r.energies.iter().enumerate() {
            if let Some(max) = self.max_energy
                && *e > max
            {
                return Err(diverged(p, format!("energy {e} exceeds {max}")));
            }
        }
        if let Some(factor) = self.blow_up {
            if self.first.len() != r.energies.len() {
                self.first = r.energies.clone();
            }
            for (p, (e, u0)) in r.energies.iter().zip(&self.first).enumerate() {
                let bound = factor * u0.abs().max(1.0);
                if *e > bound {
                    return Err(diverged(
                        p,
                        format!(
                            "energy {e:.3e} blew up to over {factor:e} times its start {u0:.3e} \
                             (a learning rate or temperature too large?)"
                        ),
                    ));
                }
            }
        }
        for (p, s) in r.step_sizes.iter().enumerate() {
            if !s.multiplier.is_finite() {
                return Err(diverged(p, format!("gradient multiplier {}", s.multiplier)));
            }
        }
        for (p, w) in r.log_weights.iter().enumerate() {
            if w.is_nan() {
                return Err(diverged(p, "importance weight is NaN".into()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blow-up rule against its bound: the first step sets the reference, a rise to
    /// just under `factor` times it passes, just over stops the run naming the chain.
    #[test]
    fn blow_up_stops_a_chain_whose_energy_grew_past_the_factor() {
        let mut g = DivergenceGuard::new().blow_up(1e6);
        let at = |step| Progress {
            step,
            total: 10,
            per_epoch: None,
        };
        let report = |e: Vec<f64>| StepReport {
            energies: e,
            ..StepReport::default()
        };
        let step = |g: &mut DivergenceGuard, k, e| {
            <DivergenceGuard as Observer<
                sgmcmc_samplers::sampler::Sgmcmc<sgmcmc_samplers::ensemble::HostEnsemble>,
            >>::on_step(g, &at(k), &dummy(), &report(e))
        };
        step(&mut g, 0, vec![351.0, 0.5]).unwrap();
        step(&mut g, 1, vec![3.5e8, 9.9e5]).unwrap();
        let err = step(&mut g, 2, vec![3.5e8, 1.1e6]).unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Diverged {
                    chain: 1,
                    step: 2,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("blew up"), "{err}");
        let err = step(&mut g, 3, vec![3.52e8, 0.0]).unwrap_err();
        assert!(matches!(err, RunError::Diverged { chain: 0, .. }), "{err}");
    }

    fn dummy() -> sgmcmc_samplers::sampler::Sgmcmc<sgmcmc_samplers::ensemble::HostEnsemble> {
        use sgmcmc_samplers::kernel::Kernel;
        use sgmcmc_samplers::sampler::SgmcmcConfig;
        use sgmcmc_testfunctions::by_name;
        let ens = sgmcmc_samplers::ensemble::HostEnsemble::new(
            by_name("normal").unwrap(),
            &[vec![0.0], vec![0.0]],
            1,
        )
        .unwrap();
        sgmcmc_samplers::sampler::Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0), ens)
            .unwrap()
    }
}
