//! The control layer: scalar logic in plain `f64`, no tensors.
//!
//! Schedules decide the learning rate and temperature of every step, stochastic-approximation
//! step sizes drive the adaptive samplers. Later modules (energy partitions, theta, swaps, ladders)
//! belong here too.

pub mod control_variate;
pub mod cyclical;
pub mod energy_variance;
pub mod ladder;
pub mod partition;
pub mod sa_step;
pub mod schedule;
pub mod swap;
pub mod theta;
pub mod weights;

pub use control_variate::ControlVariate;
pub use cyclical::{Cyclical, Phase};
pub use energy_variance::{EnergyVariance, Smoothing, half_paired_variance, sample_variance};
pub use ladder::{IndexProcess, Ladder};
pub use partition::EnergyPartition;
pub use sa_step::SaStepSize;
pub use schedule::Schedule;
pub use swap::{SwapSchedule, SwapScheme, SwapStats};
pub use theta::{ContourTheta, MultiplierScheme, RandomField, ThetaInit, WeightRule};
