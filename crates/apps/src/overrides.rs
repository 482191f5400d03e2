//! Settings from TOML files and `--set KEY=VALUE` flags, layered on a base value: every command
//! resolves defaults < preset < config file ([`ConfigFile`], `--config`) < flags
//! (`flags_over!`, [`apply_sets`]) for any serde configuration (nested tables merge key by
//! key). A run writes its resolved configuration to `config.toml`; fed back with `--config` it
//! repeats the run.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sgmcmc_samplers::registry::SamplerSettings;

use crate::error::AppError;

/// A `--config` file, read and parsed once.
pub struct ConfigFile {
    what: String,
    text: String,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads and parses `path` (a TOML document).
    pub fn read(path: &Path) -> Result<Self, AppError> {
        let what = format!("config {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| AppError::Input(format!("cannot read {what}: {e}")))?;
        let table = text.parse().map_err(|e: toml::de::Error| {
            AppError::Input(format!(
                "malformed {what}: {}",
                e.to_string().replace('\n', " ")
            ))
        })?;
        Ok(Self { what, text, table })
    }

    /// The string `key` of the file, if it has one (e.g. the preset a config starts from).
    pub fn string(&self, key: &str) -> Option<&str> {
        self.table.get(key).and_then(toml::Value::as_str)
    }

    /// `base` with the file's settings laid over it.
    pub fn over<T: Serialize + DeserializeOwned>(&self, base: &T) -> Result<T, AppError> {
        merge_toml(base, &self.text, &self.what)
    }
}

/// `base` with the file `path`, if any, laid over it.
pub fn with_config<T: Serialize + DeserializeOwned>(
    base: T,
    path: Option<&Path>,
) -> Result<T, AppError> {
    match path {
        Some(p) => ConfigFile::read(p)?.over(&base),
        None => Ok(base),
    }
}

/// Lays the flags over a configuration: `flags_over!(cfg, args; a, b)` sets `cfg.a` to
/// `args.a` when that `Option` flag was given, and so on (flags and fields share names).
macro_rules! flags_over {
    ($cfg:expr, $args:expr; $($field:ident),* $(,)?) => {
        $( if let Some(v) = &$args.$field { $cfg.$field = v.clone(); } )*
    };
}
pub(crate) use flags_over;

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

/// Refuses a `--set` of a field that one of the command's own flags also sets (`--lr 0.01
/// --set lr=0.02`): which of the two wins would be one more rule to remember, so the user
/// gives one. `flags` holds each such flag, the field it sets and whether it was given.
pub fn check_flags_vs_sets(flags: &[(&str, &str, bool)], sets: &[String]) -> Result<(), AppError> {
    for set in sets {
        let key = set.split('=').next().unwrap_or_default().trim();
        if let Some((flag, field, _)) = flags.iter().find(|(_, f, given)| *given && *f == key) {
            return Err(AppError::Usage(format!(
                "--{flag} and --set {set} both set `{field}`; give one of them"
            )));
        }
    }
    Ok(())
}

/// Refuses a `--set` of a sampler setting that none of `samplers` reads
/// ([`SamplerSettings::reads`]): `--set momentum=0.5` on `sgld` would have no effect. A run of
/// several samplers (`uci --table`) takes a setting that one of them reads.
pub fn check_sets_read(samplers: &[&SamplerSettings], sets: &[String]) -> Result<(), AppError> {
    for set in sets {
        let field = set.split(['=', '.']).next().unwrap_or_default().trim();
        let mut read = false;
        for s in samplers {
            read |= s.reads(field)?;
        }
        if !read {
            let names: Vec<&str> = samplers.iter().map(|s| s.name.as_str()).collect();
            return Err(AppError::Usage(format!(
                "--set {set}: {} does not read `{field}`, so it would have no effect",
                names.join(", ")
            )));
        }
    }
    Ok(())
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

    /// A target name given later replaces a `[target]` table, and a table replaces a name.
    #[test]
    fn a_target_name_and_a_target_table_replace_each_other() {
        use crate::toy::{TargetChoice, ToyConfig};
        let table = "[target]\nkind = \"mixture\"\nweights = [1]\nmeans = [[0]]\nsd = [1]\n";
        let custom = merge_toml(&ToyConfig::default(), table, "config").unwrap();
        assert!(matches!(custom.target, TargetChoice::Custom(_)));
        let renamed = merge_toml(&custom, "target = \"nine-mode\"", "config").unwrap();
        assert_eq!(renamed.target, TargetChoice::from("nine-mode"));
        let back = merge_toml(&renamed, table, "config").unwrap();
        assert_eq!(back.target, custom.target);
    }

    #[test]
    fn a_flag_and_a_set_of_the_same_field_are_refused_together() {
        let sets = ["momentum=0.5".to_string(), " lr = 0.02".to_string()];
        let flags = [("temperature", "temperature", true), ("lr", "lr", true)];
        let e = check_flags_vs_sets(&flags, &sets).unwrap_err();
        assert!(
            e.to_string()
                .contains("--lr and --set  lr = 0.02 both set `lr`"),
            "{e}"
        );
        // A flag not given, or a field of a table (`replica.lr_max`), is no conflict.
        let unset = [("lr", "lr", false), ("momentum", "momentum", false)];
        check_flags_vs_sets(&unset, &sets).unwrap();
        let table = ["replica.lr_max=1".to_string()];
        check_flags_vs_sets(&[("lr", "lr", true)], &table).unwrap();
    }
}
