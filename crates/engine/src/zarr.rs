//! A minimal writer of Zarr v2 stores (uncompressed, one chunk per array), the format ArviZ and
//! xarray open in one line: `az.from_zarr("trace.zarr")`, `xr.open_zarr(..., group=...)`.
//!
//! A store is a folder: every group holds `.zgroup` (`{"zarr_format": 2}`) and `.zattrs`, every
//! array `.zarray` (shape, chunks, little-endian dtype `<f8` / `<i8`, no compressor, C order),
//! `.zattrs` with xarray's `_ARRAY_DIMENSIONS`, and its one chunk `0` / `0.0` as raw bytes; the
//! root's `.zmetadata` repeats every metadata document (consolidated metadata, which xarray
//! reads first). The store is written into a hidden sibling folder and renamed into place
//! (the old one moved aside first, and back on failure).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::error::RunError;
use crate::fs::{create_dir, sync_dir, write_atomic};

/// The values of an array.
pub enum Values {
    /// `f64`, stored as `<f8`.
    F64(Vec<f64>),
    /// `i64`, stored as `<i8`.
    I64(Vec<i64>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Self::F64(v) => v.len(),
            Self::I64(v) => v.len(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            Self::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Self::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    fn dtype(&self) -> &'static str {
        match self {
            Self::F64(_) => "<f8",
            Self::I64(_) => "<i8",
        }
    }
}

/// One array of a group: its name, dimension names, shape and row-major values.
pub struct Array {
    /// The array's key in its group.
    pub name: String,
    /// xarray's dimension names, one per axis.
    pub dims: Vec<String>,
    /// The shape.
    pub shape: Vec<usize>,
    /// The values, row-major.
    pub values: Values,
}

/// A group of arrays with its attributes.
pub struct Group {
    /// The group's key under the root.
    pub name: String,
    /// Its attributes (`.zattrs`).
    pub attrs: Map<String, Value>,
    /// Its arrays.
    pub arrays: Vec<Array>,
}

/// A key Zarr and the file system both take: not empty, no `/` or `\`, not starting with `.`.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && !key.starts_with('.') && !key.contains(['/', '\\', '\0'])
}

/// Writes `groups` (with the root attributes `attrs`) as the Zarr v2 store `path`, replacing an
/// earlier one.
///
/// # Errors
///
/// [`RunError::Setting`] for a key that is not [`valid_key`], an array whose values do not fill
/// its shape or whose shape has a zero (a chunk needs at least one element); [`RunError::Io`]
/// when a file cannot be written.
pub fn write_store(
    path: &Path,
    attrs: Map<String, Value>,
    groups: &[Group],
) -> Result<(), RunError> {
    check(groups)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".into());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let _ = fs::remove_dir_all(&tmp);
    let mut meta = Map::new();
    let mut put = |key: String, doc: Value| -> Result<(), RunError> {
        let bytes = serde_json::to_vec_pretty(&doc).expect("JSON values serialise");
        let file = tmp.join(&key);
        if let Some(dir) = file.parent() {
            create_dir(dir)?;
        }
        write_atomic(&file, &bytes)?;
        meta.insert(key, doc);
        Ok(())
    };
    put(".zgroup".into(), json!({"zarr_format": 2}))?;
    put(".zattrs".into(), Value::Object(attrs))?;
    for g in groups {
        put(format!("{}/.zgroup", g.name), json!({"zarr_format": 2}))?;
        put(
            format!("{}/.zattrs", g.name),
            Value::Object(g.attrs.clone()),
        )?;
        for a in &g.arrays {
            // No fill value: xarray would read it as a missing-value mark (a chain 0 as NaN).
            let zarray = json!({
                "zarr_format": 2,
                "shape": a.shape,
                "chunks": a.shape,
                "dtype": a.values.dtype(),
                "compressor": null,
                "fill_value": null,
                "filters": null,
                "order": "C",
            });
            put(format!("{}/{}/.zarray", g.name, a.name), zarray)?;
            let dims = json!({"_ARRAY_DIMENSIONS": a.dims});
            put(format!("{}/{}/.zattrs", g.name, a.name), dims)?;
            // Zarr v2 names the one chunk `0`, `0.0`, ... (`0` for a 0-d array too).
            let chunk = vec!["0"; a.shape.len().max(1)].join(".");
            write_atomic(
                &tmp.join(&g.name).join(&a.name).join(chunk),
                &a.values.bytes(),
            )?;
        }
    }
    let consolidated = json!({"zarr_consolidated_format": 1, "metadata": meta});
    let bytes = serde_json::to_vec_pretty(&consolidated).expect("JSON values serialise");
    write_atomic(&tmp.join(".zmetadata"), &bytes)?;
    replace_dir(&tmp, path)
}

/// Refuses what would not be a valid store.
fn check(groups: &[Group]) -> Result<(), RunError> {
    for g in groups {
        let bad = |what: &str, key: &str| {
            RunError::Setting(format!(
                "zarr {what} `{key}`: keys are not empty, have no `/` or `\\` and do not start with `.`"
            ))
        };
        if !valid_key(&g.name) {
            return Err(bad("group", &g.name));
        }
        for a in &g.arrays {
            if !valid_key(&a.name) {
                return Err(bad("array", &a.name));
            }
            let n: usize = a.shape.iter().product();
            if n == 0 || a.values.len() != n || a.dims.len() != a.shape.len() {
                return Err(RunError::Setting(format!(
                    "zarr array `{}/{}`: {} values and dims {:?} for shape {:?} (no empty axis)",
                    g.name,
                    a.name,
                    a.values.len(),
                    a.dims,
                    a.shape
                )));
            }
        }
    }
    Ok(())
}

/// Moves the finished folder `tmp` to `path`, replacing what was there: the old store is
/// moved aside first and back if the new one cannot take its place (a crash between the two
/// renames leaves it at `.NAME.old`).
fn replace_dir(tmp: &Path, path: &Path) -> Result<(), RunError> {
    let old: PathBuf = path.with_file_name(format!(
        ".{}.old",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let _ = fs::remove_dir_all(&old);
    let had_old = path.exists();
    if had_old {
        fs::rename(path, &old).map_err(|e| RunError::io("cannot write", path, e))?;
    }
    if let Err(e) = fs::rename(tmp, path).and_then(|()| sync_dir(path)) {
        if had_old {
            let _ = fs::rename(&old, path);
        }
        return Err(RunError::io("cannot write", path, e));
    }
    let _ = fs::remove_dir_all(&old);
    Ok(())
}
