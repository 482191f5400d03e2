//! A target as a config names it, for TOML, the command line and code alike: a registered name
//! (`target = "nine-mode"`, [`TARGET_NAMES`](crate::TARGET_NAMES)) or the user's own density, a
//! `[target]` table. A Gaussian mixture in any dimension:
//!
//! ```toml
//! [target]
//! kind = "mixture"
//! name = "my-mixture"                # optional: names the run (default "mixture")
//! weights = [0.3, 0.7]               # > 0; normalised if they do not sum to 1
//! means = [[-2.0, 0.0], [2.0, 1.0]]
//! sd = [1.0, [0.5, 2.0]]             # per component: one sd, or one per coordinate
//! # cov = [[[1.0, 0.3], [0.3, 0.5]], [[0.25, 0.0], [0.0, 4.0]]]   # or full covariances
//! exact_draws = 1000000              # Monte Carlo draws for exact masses (optional)
//! ```
//!
//! Its modes are the cells of the nearest mean; exact mode and energy-bin masses come from
//! quadrature in 1-D and 2-D, from Monte Carlo with a standard error above
//! ([`crate::exact_masses`]). The target has exact energies and gradients (a command may add
//! noise on top).

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use sgmcmc_samplers::{MixtureError, TargetError};
use thiserror::Error;

use crate::exact_masses::DEFAULT_DRAWS;
use crate::{Covariance, GaussianMixture, NoiseModel, ToyTarget};

/// Why a [`TargetChoice`] cannot be built. The messages name the `[target]` table's field.
#[derive(Debug, Error)]
pub enum SpecError {
    /// A name outside the allowed characters.
    #[error("[target] name `{0}`: use letters, digits, `-`, `_` and `.` only")]
    Name(String),
    /// `exact_draws` outside its range.
    #[error("[target] exact_draws = {0}: must be in {min}..={max}", min = DRAWS_RANGE.0, max = DRAWS_RANGE.1)]
    Draws(usize),
    /// Both `sd` and `cov`.
    #[error("[target] mixture: give `sd` or `cov`, not both")]
    SdAndCov,
    /// Neither `sd` nor `cov`.
    #[error("[target] mixture: give each component's `sd` or `cov`")]
    NoSdOrCov,
    /// The mixture itself is invalid.
    #[error("[target] mixture: {0}")]
    Mixture(#[from] MixtureError),
    /// An unknown name, or a target the registry refuses.
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// A registered target or a user-defined one.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TargetChoice {
    /// A registry name.
    Named(String),
    /// A `[target]` table.
    Custom(TargetSpec),
}

/// A user-defined target, by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TargetSpec {
    /// `sum_k w_k N(mu_k, C_k)`.
    Mixture(MixtureSpec),
}

/// A Gaussian mixture as written in TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixtureSpec {
    /// Run name (letters, digits, `-`, `_`, `.`); default `mixture`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Component weights (> 0; normalised).
    pub weights: Vec<f64>,
    /// Component means, all of one dimension.
    pub means: Vec<Vec<f64>>,
    /// Per component: an isotropic sd or one sd per coordinate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<Vec<Sd>>,
    /// Per component: a full covariance matrix (rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cov: Option<Vec<Vec<Vec<f64>>>>,
    /// Monte Carlo draws for exact masses above 2-D (default 1,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_draws: Option<usize>,
}

/// One component's standard deviation(s).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Sd {
    /// The same sd in every coordinate.
    One(f64),
    /// One sd per coordinate.
    PerCoordinate(Vec<f64>),
}

impl From<&str> for TargetChoice {
    fn from(name: &str) -> Self {
        Self::Named(name.to_string())
    }
}

impl From<String> for TargetChoice {
    fn from(name: String) -> Self {
        Self::Named(name)
    }
}

impl fmt::Display for TargetChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(n) => f.write_str(n),
            Self::Custom(TargetSpec::Mixture(m)) => {
                f.write_str(m.name.as_deref().unwrap_or("mixture"))
            }
        }
    }
}

impl<'de> Deserialize<'de> for TargetChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TargetChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a target name or a [target] table with a `kind`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TargetChoice, E> {
                Ok(TargetChoice::Named(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TargetChoice, A::Error> {
                TargetSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(TargetChoice::Custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Sd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Sd;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an sd (a number) or one sd per coordinate (a list of numbers)")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Sd, E> {
                Ok(Sd::One(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Sd, E> {
                Ok(Sd::One(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Sd, E> {
                Ok(Sd::One(v as f64))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Sd, A::Error> {
                Vec::<f64>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(Sd::PerCoordinate)
            }
        }
        d.deserialize_any(V)
    }
}

/// Fewest and most Monte Carlo draws `exact_draws` may ask for.
const DRAWS_RANGE: (usize, usize) = (1_000, 1_000_000_000);

impl TargetChoice {
    /// The target with its default noise (none for a user's mixture).
    pub fn build(&self) -> Result<ToyTarget, SpecError> {
        match self {
            Self::Named(n) => Ok(crate::by_name(n)?),
            Self::Custom(TargetSpec::Mixture(m)) => {
                let mixture = m.mixture()?;
                Ok(ToyTarget::new(
                    self.to_string(),
                    Arc::new(mixture),
                    NoiseModel::EXACT,
                )?)
            }
        }
    }

    /// Monte Carlo draws for exact masses.
    pub fn exact_draws(&self) -> usize {
        match self {
            Self::Custom(TargetSpec::Mixture(m)) => m.exact_draws.unwrap_or(DEFAULT_DRAWS),
            Self::Named(_) => DEFAULT_DRAWS,
        }
    }

    /// A line for the user when the weights were normalised.
    pub fn note(&self) -> Option<String> {
        let Self::Custom(TargetSpec::Mixture(m)) = self else {
            return None;
        };
        let total: f64 = m.weights.iter().sum();
        ((total - 1.0).abs() > 1e-9 && total.is_finite() && total > 0.0).then(|| {
            let w: Vec<f64> = m.weights.iter().map(|w| w / total).collect();
            format!("note: [target] weights sum to {total}; normalised to {w:?}")
        })
    }
}

impl MixtureSpec {
    /// The validated mixture.
    pub fn mixture(&self) -> Result<GaussianMixture, SpecError> {
        if let Some(name) = &self.name {
            let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
            if name.is_empty() || !name.chars().all(ok) {
                return Err(SpecError::Name(name.clone()));
            }
        }
        if let Some(n) = self.exact_draws
            && !(DRAWS_RANGE.0..=DRAWS_RANGE.1).contains(&n)
        {
            return Err(SpecError::Draws(n));
        }
        let n = self.means.len();
        let count = |what, got| MixtureError::Count {
            what,
            got,
            expected: n,
        };
        let covariances: Vec<Covariance> = match (&self.sd, &self.cov) {
            (Some(_), Some(_)) => return Err(SpecError::SdAndCov),
            (None, None) => return Err(SpecError::NoSdOrCov),
            (Some(sd), None) if sd.len() != n => return Err(count("sd", sd.len()).into()),
            (None, Some(cov)) if cov.len() != n => return Err(count("cov", cov.len()).into()),
            (Some(sd), None) => sd
                .iter()
                .map(|s| match s {
                    Sd::One(v) => Covariance::Isotropic(*v),
                    Sd::PerCoordinate(v) => Covariance::Diagonal(v.clone()),
                })
                .collect(),
            (None, Some(cov)) => cov.iter().cloned().map(Covariance::Full).collect(),
        };
        Ok(GaussianMixture::new(
            &self.weights,
            &self.means,
            &covariances,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Config {
        target: TargetChoice,
    }

    fn read(text: &str) -> TargetChoice {
        toml::from_str::<Config>(text).unwrap().target
    }

    #[test]
    fn names_and_tables_both_parse_and_survive_a_round_trip() {
        assert_eq!(read("target = \"bimodal\""), TargetChoice::from("bimodal"));
        let text = "[target]\nkind = \"mixture\"\nweights = [1, 3]\nmeans = [[0], [4]]\n\
                    sd = [1, [0.5]]\n";
        let custom = read(text);
        let TargetChoice::Custom(TargetSpec::Mixture(m)) = &custom else {
            panic!("{custom:?}");
        };
        assert_eq!(m.sd, Some(vec![Sd::One(1.0), Sd::PerCoordinate(vec![0.5])]));
        assert_eq!(custom.to_string(), "mixture");
        assert_eq!(
            custom.note().unwrap(),
            "note: [target] weights sum to 4; normalised to [0.25, 0.75]"
        );
        assert!(read("target = \"bimodal\"").note().is_none());
        // What a config file holds reads back to the same target.
        let config = Config { target: custom };
        let written = toml::to_string_pretty(&config).unwrap();
        assert_eq!(toml::from_str::<Config>(&written).unwrap(), config);
        let t = config.target.build().unwrap();
        assert_eq!((t.dim(), t.name()), (1, "mixture"));
    }

    #[test]
    fn bad_tables_are_refused_with_the_field_named() {
        let err = |text: &str| read(text).build().unwrap_err().to_string();
        let head = "[target]\nkind = \"mixture\"\nweights = [1]\nmeans = [[0]]\n";
        assert_eq!(
            err(&format!("{head}sd = [1]\ncov = [[[1]]]\n")),
            "[target] mixture: give `sd` or `cov`, not both"
        );
        assert_eq!(
            err(head),
            "[target] mixture: give each component's `sd` or `cov`"
        );
        assert!(err(&format!("{head}sd = [1, 2]\n")).starts_with("[target] mixture: "));
        assert_eq!(
            err(&format!("{head}sd = [1]\nname = \"a b\"\n")),
            "[target] name `a b`: use letters, digits, `-`, `_` and `.` only"
        );
        assert_eq!(
            err(&format!("{head}sd = [1]\nexact_draws = 10\n")),
            "[target] exact_draws = 10: must be in 1000..=1000000000"
        );
        assert!(TargetChoice::from("no-such").build().is_err());
    }
}
