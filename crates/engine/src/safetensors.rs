//! A module's parameters as a safetensors file, the format numpy (`safetensors.numpy`, or a few
//! lines of `json` and `np.frombuffer`), PyTorch and JAX read without burn.
//!
//! Layout (the safetensors specification): an 8-byte little-endian header length `N`, `N` bytes
//! of JSON (padded with spaces to a multiple of 8) mapping each tensor's name to its `dtype`
//! (`F32`), `shape` and `data_offsets` `[begin, end)` into the byte buffer that follows, plus a
//! `__metadata__` map of strings; then the tensors' little-endian values, back to back in the
//! header's order. Names are the parameters' paths in the module, field names and vector
//! indices joined by dots (`conv.weight`, `layers.0.bias`), as burn's own safetensors store
//! names them.

use std::collections::BTreeMap;
use std::path::Path;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorData};
use serde_json::{Map, Value, json};
use sgmcmc_samplers::transfer;

use crate::error::RunError;
use crate::fs::write_atomic;

/// One named parameter tensor, row-major `f32`.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedTensor {
    /// The parameter's path in the module.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values.
    pub values: Vec<f32>,
}

/// Which parameters a file holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Parameters {
    /// Every float tensor of the module (BatchNorm running statistics included).
    #[default]
    All,
    /// Only the ones the sampler moves: on an autodiff device those that require gradients
    /// (not frozen parameters or running statistics); on a plain device every one.
    Sampled,
}

/// The float parameters of `module` by path, in the module's visit order.
pub fn named_parameters<M: Module>(
    module: &M,
    which: Parameters,
) -> Result<Vec<NamedTensor>, RunError> {
    struct Collect {
        path: Vec<String>,
        which: Parameters,
        out: Vec<NamedTensor>,
        error: Option<String>,
    }
    impl ModuleVisitor for Collect {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let value = param.val();
            let frozen = value.is_autodiff() && !value.is_require_grad();
            if self.which == Parameters::Sampled && frozen {
                return;
            }
            let shape = value.dims().to_vec();
            match transfer::read(value.inner())
                .convert::<f32>()
                .try_into_vec::<f32>()
            {
                Ok(values) => self.out.push(NamedTensor {
                    name: self.path.join("."),
                    shape,
                    values,
                }),
                Err(e) => self.error = Some(format!("{}: {e:?}", self.path.join("."))),
            }
        }
    }
    let mut c = Collect {
        path: Vec::new(),
        which,
        out: Vec::new(),
        error: None,
    };
    module.visit(&mut c);
    match c.error {
        Some(e) => Err(RunError::Observer(format!("cannot read a parameter: {e}"))),
        None => Ok(c.out),
    }
}

/// Writes `tensors` and `metadata` as the safetensors file `path` (atomically).
pub fn write(
    path: &Path,
    tensors: &[NamedTensor],
    metadata: &BTreeMap<String, String>,
) -> Result<(), RunError> {
    let mut header = Map::new();
    if !metadata.is_empty() {
        header.insert("__metadata__".into(), json!(metadata));
    }
    let mut offset = 0usize;
    for t in tensors {
        let n: usize = t.shape.iter().product();
        if n != t.values.len() || header.contains_key(&t.name) || t.name == "__metadata__" {
            return Err(RunError::Setting(format!(
                "safetensors: tensor `{}` has {} values for shape {:?}, or its name is taken",
                t.name,
                t.values.len(),
                t.shape
            )));
        }
        let end = offset + 4 * n;
        header.insert(
            t.name.clone(),
            json!({"dtype": "F32", "shape": t.shape, "data_offsets": [offset, end]}),
        );
        offset = end;
    }
    let mut json = serde_json::to_vec(&Value::Object(header)).expect("JSON values serialise");
    json.resize(json.len().next_multiple_of(8), b' ');
    let mut bytes = Vec::with_capacity(8 + json.len() + offset);
    bytes.extend_from_slice(&(json.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&json);
    for t in tensors {
        bytes.extend(t.values.iter().flat_map(|v| v.to_le_bytes()));
    }
    write_atomic(path, &bytes)
}

/// Reads a safetensors file of `F32` tensors: the tensors in buffer order and the metadata.
pub fn read(path: &Path) -> Result<(Vec<NamedTensor>, BTreeMap<String, String>), RunError> {
    let bytes = std::fs::read(path).map_err(|e| RunError::io("cannot read", path, e))?;
    let bad = |reason: String| RunError::Malformed {
        path: path.to_path_buf(),
        reason: format!("not a safetensors file of f32 tensors: {reason}"),
    };
    let n = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| bad("shorter than its header length".into()))?;
    let json = usize::try_from(n)
        .ok()
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
        .ok_or_else(|| bad(format!("a header of {n} bytes past the end")))?;
    let n = json.len();
    let data = &bytes[8 + n..];
    let header: Map<String, Value> =
        serde_json::from_slice(json).map_err(|e| bad(format!("header: {e}")))?;
    let mut metadata = BTreeMap::new();
    let mut tensors = Vec::new();
    for (name, entry) in header {
        if name == "__metadata__" {
            metadata = serde_json::from_value(entry).map_err(|e| bad(format!("metadata: {e}")))?;
            continue;
        }
        let (dtype, shape, offsets) = (&entry["dtype"], &entry["shape"], &entry["data_offsets"]);
        let shape: Vec<usize> = serde_json::from_value(shape.clone())
            .map_err(|e| bad(format!("`{name}` shape: {e}")))?;
        let [begin, end]: [usize; 2] = serde_json::from_value(offsets.clone())
            .map_err(|e| bad(format!("`{name}` offsets: {e}")))?;
        let bytes_of = shape.iter().try_fold(4usize, |acc, &d| acc.checked_mul(d));
        let raw = data
            .get(begin..end)
            .filter(|r| dtype == "F32" && Some(r.len()) == bytes_of)
            .ok_or_else(|| bad(format!("`{name}`: {dtype} {shape:?} at {begin}..{end}")))?;
        tensors.push((
            begin,
            NamedTensor {
                name,
                shape,
                values: raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .collect(),
            },
        ));
    }
    tensors.sort_by_key(|(begin, _)| *begin);
    // The specification's buffer rule: the tensors fill it back to back, no holes or overlaps.
    let mut end = 0;
    for (begin, t) in &tensors {
        if *begin != end {
            return Err(bad(format!("`{}` starts at {begin}, not at {end}", t.name)));
        }
        end += 4 * t.values.len();
    }
    if end != data.len() {
        return Err(bad(format!(
            "{} bytes after the last tensor",
            data.len() - end
        )));
    }
    Ok((tensors.into_iter().map(|(_, t)| t).collect(), metadata))
}

/// `template` with every parameter named in `tensors` replaced by its values (on the
/// parameter's device, keeping whether it requires gradients); parameters not named keep the
/// template's values. Errors on a name the module lacks or a shape that differs.
pub fn load_into<M: Module>(template: &M, tensors: &[NamedTensor]) -> Result<M, RunError> {
    struct Load<'a> {
        path: Vec<String>,
        by_name: BTreeMap<&'a str, &'a NamedTensor>,
        used: usize,
        error: Option<String>,
    }
    impl ModuleMapper for Load<'_> {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.path.pop();
        }
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let name = self.path.join(".");
            let Some(t) = self.by_name.get(name.as_str()).copied() else {
                return param;
            };
            self.used += 1;
            param.map(|old| {
                if t.shape != old.dims() {
                    // The first mismatch is the one reported.
                    self.error.get_or_insert(format!(
                        "`{name}` has shape {:?} in the file and {:?} in the model",
                        t.shape,
                        old.dims()
                    ));
                    return old;
                }
                let data = TensorData::new(t.values.clone(), t.shape.clone());
                let new: Tensor<D> = transfer::upload(data, &old.device());
                if old.is_require_grad() {
                    new.require_grad()
                } else {
                    new
                }
            })
        }
    }
    let mut load = Load {
        path: Vec::new(),
        by_name: tensors.iter().map(|t| (t.name.as_str(), t)).collect(),
        used: 0,
        error: None,
    };
    let model = template.clone().map(&mut load);
    if let Some(e) = load.error {
        return Err(RunError::Setting(format!("safetensors: {e}")));
    }
    if load.used != tensors.len() {
        let known = named_parameters(template, Parameters::All)?;
        let missing: Vec<&str> = tensors
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| !known.iter().any(|k| k.name == *n))
            .collect();
        return Err(RunError::Setting(format!(
            "safetensors: the model has no parameter {missing:?}"
        )));
    }
    Ok(model)
}
