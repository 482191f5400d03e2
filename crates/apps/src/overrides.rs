//! Settings from TOML files and `--set KEY=VALUE` flags, layered on a base value: every command
//! resolves defaults < preset < config file < flags through these two functions, for any serde
//! configuration (nested tables merge key by key).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::AppError;

/// Overlays `overlay` on `base`, recursing into tables present in both.
fn merge(base: &mut toml::Table, overlay: toml::Table) {
    for (k, v) in overlay {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn to_table<T: Serialize>(value: &T) -> Result<toml::Table, AppError> {
    toml::Table::try_from(value).map_err(|e| AppError::Run(format!("cannot encode settings: {e}")))
}

/// `base` with the keys of the TOML document `text` laid over it (unknown keys are errors of
/// the target type). `what` names the document in errors.
pub fn merge_toml<T: Serialize + DeserializeOwned>(
    base: &T,
    text: &str,
    what: &str,
) -> Result<T, AppError> {
    let bad = |e: String| AppError::Input(format!("malformed {what}: {}", e.replace('\n', " ")));
    let overlay: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    let mut merged = to_table(base)?;
    merge(&mut merged, overlay);
    merged
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string()))
}

/// `base` with each `KEY=VALUE` of `sets` applied, `KEY` a dotted path (`momentum`,
/// `contour.zeta`, `replica.temperatures`) and `VALUE` a TOML value (`0.95`, `[1.0, 10.0]`,
/// `true`, or a bare word taken as a string).
pub fn apply_sets<T: Serialize + DeserializeOwned + Clone>(
    base: &T,
    sets: &[String],
) -> Result<T, AppError> {
    if sets.is_empty() {
        return Ok(base.clone());
    }
    let mut merged = to_table(base)?;
    for set in sets {
        let (key, value) = set
            .split_once('=')
            .ok_or_else(|| AppError::Usage(format!("--set {set}: expected KEY=VALUE")))?;
        let value = parse_value(value.trim());
        let mut path: Vec<&str> = key.trim().split('.').collect();
        let last = path.pop().unwrap_or_default();
        let mut leaf = toml::Table::new();
        leaf.insert(last.to_string(), value);
        let overlay = path.iter().rev().fold(leaf, |inner, k| {
            let mut t = toml::Table::new();
            t.insert((*k).to_string(), toml::Value::Table(inner));
            t
        });
        merge(&mut merged, overlay);
    }
    merged.try_into().map_err(|e: toml::de::Error| {
        AppError::Usage(format!("--set: {}", e.to_string().replace('\n', " ")))
    })
}

/// A TOML value, or the text as a string when it is not one.
fn parse_value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use sgmcmc_samplers::registry::SamplerSettings;

    use super::*;

    #[test]
    fn sets_and_files_merge_key_by_key() {
        let base = SamplerSettings::named("resghmc");
        let s = apply_sets(
            &base,
            &[
                "momentum=0.95".into(),
                "replica.temperatures=[1.0, 5.0]".into(),
                "contour.zeta = 3".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.momentum, 0.95);
        assert_eq!(s.replica.temperatures, vec![1.0, 5.0]);
        assert_eq!(s.contour.zeta, 3.0);
        assert_eq!(s.replica.correction, base.replica.correction);
        assert!(apply_sets(&base, &["nope=1".into()]).is_err());
        assert!(apply_sets(&base, &["momentum".into()]).is_err());
        let f = merge_toml(&base, "[replica]\ncorrection = 4.0\n", "config").unwrap();
        assert_eq!(f.replica.correction, 4.0);
        assert_eq!(f.replica.variance_draws, base.replica.variance_draws);
        assert!(merge_toml(&base, "lr = ", "config").is_err());
    }
}
