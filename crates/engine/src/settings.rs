//! Settings layered on a base value: defaults < preset < configuration file ([`ConfigFile`])
//! < `KEY=VALUE` overrides ([`apply_sets`]) < single options ([`flags_over!`](crate::flags_over)),
//! for any serde configuration. Nested tables merge key by key; a key the configuration does
//! not have is an error of its type. A run writes its resolved settings to `config.toml`; laid
//! over the same defaults again it repeats the run. [`changes`] names what differs between two
//! settings, by dotted path. The refusals are worded for the command line (`--set KEY=VALUE`,
//! `--FLAG`), where these layers come from.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sgmcmc_samplers::registry::SamplerSettings;

/// Why settings could not be layered.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A configuration file cannot be read.
    #[error("cannot read {what}: {source}")]
    Read {
        /// The file, as `config PATH`.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A configuration document is not TOML, or does not fit the settings' type.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// The document.
        what: String,
        /// The parser's message, on one line.
        reason: String,
    },
    /// An override is malformed, has no effect, or contradicts an option.
    #[error("{0}")]
    Set(String),
    /// The base value has no TOML form (a bug of its type).
    #[error("cannot encode settings: {0}")]
    Encode(String),
}

/// A parser's message on one line.
fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string().replace('\n', " ")
}

/// A configuration file, read and parsed once.
pub struct ConfigFile {
    what: String,
    text: String,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads and parses `path` (a TOML document).
    pub fn read(path: &Path) -> Result<Self, SettingsError> {
        let what = format!("config {}", path.display());
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(source) => return Err(SettingsError::Read { what, source }),
        };
        let table = match text.parse() {
            Ok(t) => t,
            Err(e) => {
                let reason = one_line(e);
                return Err(SettingsError::Malformed { what, reason });
            }
        };
        Ok(Self { what, text, table })
    }

    /// The string `key` of the file, if it has one (e.g. the preset a config starts from).
    pub fn string(&self, key: &str) -> Option<&str> {
        self.table.get(key).and_then(toml::Value::as_str)
    }

    /// `base` with the file's settings laid over it.
    pub fn over<T: Serialize + DeserializeOwned>(&self, base: &T) -> Result<T, SettingsError> {
        merge_toml(base, &self.text, &self.what)
    }
}

/// `base` with the file `path`, if any, laid over it.
pub fn with_config<T: Serialize + DeserializeOwned>(
    base: T,
    path: Option<&Path>,
) -> Result<T, SettingsError> {
    match path {
        Some(p) => ConfigFile::read(p)?.over(&base),
        None => Ok(base),
    }
}

/// Lays options over a configuration: `flags_over!(cfg, args; a, b)` sets `cfg.a` to
/// `args.a` when that `Option` was given, and so on (options and fields share names).
#[macro_export]
macro_rules! flags_over {
    ($cfg:expr, $args:expr; $($field:ident),* $(,)?) => {
        $( if let Some(v) = &$args.$field { $cfg.$field = v.clone(); } )*
    };
}

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

fn to_table<T: Serialize>(value: &T) -> Result<toml::Table, SettingsError> {
    toml::Table::try_from(value).map_err(|e| SettingsError::Encode(e.to_string()))
}

/// `base` with the keys of the TOML document `text` laid over it (unknown keys are errors of
/// the target type). `what` names the document in errors.
pub fn merge_toml<T: Serialize + DeserializeOwned>(
    base: &T,
    text: &str,
    what: &str,
) -> Result<T, SettingsError> {
    let bad = |e: toml::de::Error| SettingsError::Malformed {
        what: what.to_string(),
        reason: one_line(e),
    };
    let overlay: toml::Table = text.parse().map_err(bad)?;
    let mut merged = to_table(base)?;
    merge(&mut merged, overlay);
    merged.try_into().map_err(bad)
}

/// `base` with each `KEY=VALUE` of `sets` applied, `KEY` a dotted path (`momentum`,
/// `contour.zeta`, `replica.temperatures`) and `VALUE` a TOML value (`0.95`, `[1.0, 10.0]`,
/// `true`, or a bare word taken as a string).
pub fn apply_sets<T: Serialize + DeserializeOwned + Clone>(
    base: &T,
    sets: &[String],
) -> Result<T, SettingsError> {
    if sets.is_empty() {
        return Ok(base.clone());
    }
    let mut merged = to_table(base)?;
    for set in sets {
        let (key, value) = set
            .split_once('=')
            .ok_or_else(|| SettingsError::Set(format!("--set {set}: expected KEY=VALUE")))?;
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
    merged
        .try_into()
        .map_err(|e: toml::de::Error| SettingsError::Set(format!("--set: {}", one_line(e))))
}

/// Refuses an override of a field that one of the command's own options also sets (`--lr
/// 0.01 --set lr=0.02`): which of the two wins would be one more rule to remember, so the
/// user gives one. `flags` holds each such option, the field it sets and whether it was given.
pub fn check_flags_vs_sets(
    flags: &[(&str, &str, bool)],
    sets: &[String],
) -> Result<(), SettingsError> {
    for set in sets {
        let key = set.split('=').next().unwrap_or_default().trim();
        if let Some((flag, field, _)) = flags.iter().find(|(_, f, given)| *given && *f == key) {
            return Err(SettingsError::Set(format!(
                "--{flag} and --set {set} both set `{field}`; give one of them"
            )));
        }
    }
    Ok(())
}

/// Refuses an override of a sampler setting that none of `samplers` reads
/// ([`SamplerSettings::reads`]): `--set momentum=0.5` on `sgld` would have no effect. A run of
/// several samplers (a table of them) takes a setting that one of them reads.
pub fn check_sets_read(
    samplers: &[&SamplerSettings],
    sets: &[String],
) -> Result<(), SettingsError> {
    for set in sets {
        let field = set.split(['=', '.']).next().unwrap_or_default().trim();
        let mut read = false;
        for s in samplers {
            read |= s
                .reads(field)
                .map_err(|e| SettingsError::Set(e.to_string()))?;
        }
        if !read {
            let names: Vec<&str> = samplers.iter().map(|s| s.name.as_str()).collect();
            return Err(SettingsError::Set(format!(
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

/// Where the settings `now` differ from `was`, each as `path = now (was was)` with the dotted
/// path of the field (the keys of either side, in order); empty when they are equal, or when
/// either has no JSON form.
pub fn changes<T: Serialize>(now: &T, was: &T) -> Vec<String> {
    let mut out = Vec::new();
    if let (Ok(n), Ok(w)) = (serde_json::to_value(now), serde_json::to_value(was)) {
        differences("", &n, &w, &mut out);
    }
    out
}

fn differences(at: &str, now: &serde_json::Value, was: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value::{Null, Object};
    if let (Object(n), Object(w)) = (now, was) {
        let mut keys: Vec<&String> = n.keys().chain(w.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let path = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            differences(
                &path,
                n.get(k).unwrap_or(&Null),
                w.get(k).unwrap_or(&Null),
                out,
            );
        }
    } else if now != was {
        out.push(format!("{at} = {now} (was {was})"));
    }
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

    #[test]
    fn changes_name_every_differing_field_by_its_path() {
        let was = SamplerSettings::named("csgld");
        let mut now = was.clone();
        now.lr = 0.5;
        now.contour.zeta = 7.0;
        let c = changes(&now, &was);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c[0].starts_with("contour.zeta = 7.0 (was "), "{c:?}");
        assert!(c[1].starts_with("lr = 0.5 (was "), "{c:?}");
        assert!(changes(&was, &was).is_empty());
    }
}
