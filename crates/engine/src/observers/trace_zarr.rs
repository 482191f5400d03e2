//! A [`Trace`] as an ArviZ `InferenceData` in a Zarr store.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::Trace;
use crate::error::RunError;
use crate::zarr::{Array, Group, Values, valid_key, write_store};

impl<F> Trace<F> {
    /// Writes the draws as the Zarr store `path`, laid out as ArviZ's `InferenceData`, which
    /// opens it in one line: `az.from_zarr("path")` (ArviZ 0.x with `zarr<3`), or
    /// `az.InferenceData.from_datatree(xr.open_datatree("path", engine="zarr"))`.
    ///
    /// Groups, each with the coordinates `chain` (the chains' indices; the rung for replica
    /// exchange) and `draw` (`0..D`, every chain cut to the shortest one's `D` draws, as
    /// [`Trace::draws`]):
    ///
    /// * `posterior`: each functional, `(chain, draw)`;
    /// * `sample_stats`: `lp`, the stochastic log posterior density `-U~` of the draw (up to
    ///   its constant; the sampler's minibatch energy at full-data scale), `log_weight`, the
    ///   draw's log importance weight (0 for plain samplers), and `step`, its step index.
    ///
    /// # Errors
    ///
    /// [`RunError::Setting`] without draws or for a functional named `chain`, `draw`, twice or
    /// with a name that is not a file name; [`RunError::Io`] when the store cannot be written.
    pub fn write_zarr(&self, path: &Path) -> Result<(), RunError> {
        let chains: Vec<i64> = self.state.chains.keys().map(|&c| c as i64).collect();
        let draws = self.draws_per_chain();
        if chains.is_empty() || draws == 0 {
            return Err(RunError::Setting(
                "a trace without draws has nothing to write".into(),
            ));
        }
        let (c, d) = (chains.len(), draws);
        let coords = || {
            vec![
                Array {
                    name: "chain".into(),
                    dims: vec!["chain".into()],
                    shape: vec![c],
                    values: Values::I64(chains.clone()),
                },
                Array {
                    name: "draw".into(),
                    dims: vec!["draw".into()],
                    shape: vec![d],
                    values: Values::I64((0..d as i64).collect()),
                },
            ]
        };
        let variable = |name: &str, values: Values| Array {
            name: name.into(),
            dims: vec!["chain".into(), "draw".into()],
            shape: vec![c, d],
            values,
        };
        let flat = |q: &str| -> Vec<f64> { self.draws(q).unwrap_or_default().concat() };
        let mut posterior = coords();
        for (i, name) in self.state.names.iter().enumerate() {
            let repeated = self.state.names[..i].contains(name);
            if !valid_key(name) || name == "chain" || name == "draw" || repeated {
                return Err(RunError::Setting(format!(
                    "a traced functional named `{name}` cannot be a variable of the store \
                     (names are distinct file names other than `chain` and `draw`)"
                )));
            }
            posterior.push(variable(name, Values::F64(flat(name))));
        }
        let lp = flat("energy").into_iter().map(|u| -u).collect();
        let steps = self
            .steps()
            .iter()
            .flat_map(|s| s[..d].iter().map(|&k| k as i64))
            .collect();
        let mut stats = coords();
        stats.push(variable("lp", Values::F64(lp)));
        stats.push(variable("log_weight", Values::F64(flat("log_weight"))));
        stats.push(variable("step", Values::I64(steps)));
        let attrs = || -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("inference_library".into(), json!("sgmcmc"));
            m.insert(
                "inference_library_version".into(),
                json!(env!("CARGO_PKG_VERSION")),
            );
            m
        };
        let groups = [
            Group {
                name: "posterior".into(),
                attrs: attrs(),
                arrays: posterior,
            },
            Group {
                name: "sample_stats".into(),
                attrs: attrs(),
                arrays: stats,
            },
        ];
        write_store(path, attrs(), &groups)
    }
}
