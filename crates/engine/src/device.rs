//! Run-time device choice by name: `host|flex|ndarray|wgpu[:N]|cuda[:N]` (a command's
//! `--device`, a config's `device`, a checkpoint's record of where its run computed).
//!
//! The GPU devices take an optional index: `wgpu:1` is the second adapter wgpu lists (on the
//! graphics API it picks by itself), `cuda:1` the second CUDA device. Without an index, a
//! process started by `mpirun` (or srun) takes its *local* rank modulo the number of devices
//! of that kind, so the ranks on one machine spread over its GPUs; any other process takes
//! wgpu's default adapter (the most powerful) or CUDA device 0.
//!
//! A device that this binary lacks (no Cargo feature), or that the machine lacks (no NVIDIA
//! driver, no such index), is refused with one line ([`RunError::Setting`]) before any tensor
//! is made: burn itself would panic on first use. The backends are this crate's features
//! `flex`, `ndarray`, `wgpu` and `cuda`.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use crate::error::RunError;

#[allow(dead_code)]
fn missing(name: &str) -> RunError {
    RunError::Setting(format!(
        "device `{name}` is not compiled into this binary; rebuild with `--features {name}`"
    ))
}

/// Where chains run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DeviceChoice {
    /// Host `f64` memory, no tensors: the fast path for analytic toy targets.
    Host,
    /// burn-flex, the default CPU tensor backend.
    Flex,
    /// burn-ndarray CPU backend.
    Ndarray,
    /// burn-wgpu (Vulkan/Metal/DX12 GPU, or a software Vulkan driver), with an adapter index.
    Wgpu(Option<usize>),
    /// burn-cuda: an NVIDIA GPU through CubeCL's CUDA runtime, with a device index.
    Cuda(Option<usize>),
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, index) = match *self {
            Self::Host => ("host", None),
            Self::Flex => ("flex", None),
            Self::Ndarray => ("ndarray", None),
            Self::Wgpu(i) => ("wgpu", i),
            Self::Cuda(i) => ("cuda", i),
        };
        match index {
            Some(i) => write!(f, "{name}:{i}"),
            None => f.write_str(name),
        }
    }
}

/// The devices `--device` takes, for messages and `--help`.
pub const DEVICE_NAMES: &str = "host, flex, ndarray, wgpu[:N], cuda[:N]";

impl FromStr for DeviceChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("unknown device `{s}` (expected one of {DEVICE_NAMES})");
        let (name, index) = match s.split_once(':') {
            Some((name, i)) => {
                let i: usize = i
                    .parse()
                    .map_err(|_| format!("device index `{i}` in `{s}` is not a whole number"))?;
                (name, Some(i))
            }
            None => (s, None),
        };
        match (name.to_ascii_lowercase().as_str(), index) {
            ("host", None) => Ok(Self::Host),
            ("flex", None) => Ok(Self::Flex),
            ("ndarray", None) => Ok(Self::Ndarray),
            ("wgpu", i) => Ok(Self::Wgpu(i)),
            ("cuda", i) => Ok(Self::Cuda(i)),
            ("host" | "flex" | "ndarray", Some(_)) => Err(format!(
                "device `{name}` takes no index (only wgpu and cuda do)"
            )),
            _ => Err(bad()),
        }
    }
}

impl TryFrom<String> for DeviceChoice {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<DeviceChoice> for String {
    fn from(d: DeviceChoice) -> String {
        d.to_string()
    }
}

/// This process's rank among the ranks of its job on this machine, as the launcher tells it
/// (Open MPI, MPICH / Intel MPI, MVAPICH, Slurm); `None` outside a job.
pub fn local_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "MV2_COMM_WORLD_LOCAL_RANK",
        "PMI_LOCAL_RANK",
        "SLURM_LOCALID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Device `index` of `count`, or without an index the local rank's share (`None` outside a job).
#[cfg(any(feature = "wgpu", feature = "cuda", test))]
fn pick(name: &str, index: Option<usize>, count: usize) -> Result<Option<usize>, RunError> {
    match index {
        Some(i) if i >= count => Err(RunError::Setting(format!(
            "device `{name}:{i}` does not exist: this machine has {count} {name} device{}",
            if count == 1 { "" } else { "s" }
        ))),
        Some(i) => Ok(Some(i)),
        None => Ok(local_rank().map(|r| r % count.max(1))),
    }
}

impl DeviceChoice {
    /// The burn device (`None` for the host path). Errors (usage, exit 2) if this binary was
    /// built without the backend's Cargo feature or the machine has no such device.
    pub fn device(self) -> Result<Option<Device>, RunError> {
        match self {
            Self::Host => Ok(None),
            #[cfg(feature = "flex")]
            Self::Flex => Ok(Some(Device::flex())),
            #[cfg(not(feature = "flex"))]
            Self::Flex => Err(missing("flex")),
            #[cfg(feature = "ndarray")]
            #[allow(deprecated)]
            Self::Ndarray => Ok(Some(Device::ndarray())),
            #[cfg(not(feature = "ndarray"))]
            Self::Ndarray => Err(missing("ndarray")),
            #[cfg(feature = "wgpu")]
            Self::Wgpu(index) => Ok(Some(wgpu(index)?)),
            #[cfg(not(feature = "wgpu"))]
            Self::Wgpu(_) => Err(missing("wgpu")),
            #[cfg(feature = "cuda")]
            Self::Cuda(index) => Ok(Some(cuda(index)?)),
            #[cfg(not(feature = "cuda"))]
            Self::Cuda(_) => Err(missing("cuda")),
        }
    }

    /// The burn device of a `command` that needs tensors: as [`Self::device`], and a usage
    /// error naming the tensor devices for the host path.
    pub fn tensor_device(self, command: &str) -> Result<Device, RunError> {
        self.device()?.ok_or_else(|| {
            RunError::Setting(format!(
                "{command} needs a tensor device (flex, ndarray, wgpu or cuda), not `{self}`"
            ))
        })
    }

    /// Whether this is a GPU device (wgpu or cuda): kernels compiled at first use, one host
    /// read per step, batches uploaded.
    pub fn is_gpu(self) -> bool {
        matches!(self, Self::Wgpu(_) | Self::Cuda(_))
    }

    /// The tensor backends compiled into this binary (GPU devices without an index).
    pub fn compiled() -> Vec<DeviceChoice> {
        let mut v = Vec::new();
        if cfg!(feature = "flex") {
            v.push(Self::Flex);
        }
        if cfg!(feature = "ndarray") {
            v.push(Self::Ndarray);
        }
        if cfg!(feature = "wgpu") {
            v.push(Self::Wgpu(None));
        }
        if cfg!(feature = "cuda") {
            v.push(Self::Cuda(None));
        }
        v
    }

    /// The tensor devices compiled in that this machine also has (a `cuda` build on a machine
    /// without an NVIDIA driver leaves cuda out).
    pub fn available() -> Vec<DeviceChoice> {
        Self::compiled()
            .into_iter()
            .filter(|c| c.device().is_ok())
            .collect()
    }
}

/// wgpu's adapter `index` (in the order wgpu lists them on the graphics API it picks), or the
/// default adapter; under `mpirun` the local rank's.
#[cfg(feature = "wgpu")]
fn wgpu(index: Option<usize>) -> Result<Device, RunError> {
    use burn::tensor::{DeviceKind, DeviceType};
    if index.is_none() && local_rank().is_none() {
        return Ok(Device::wgpu(DeviceKind::DefaultDevice));
    }
    let listed = Device::enumerate(DeviceType::Wgpu).into_vec();
    if listed.is_empty() {
        return Err(RunError::Setting(
            "device `wgpu`: no adapter found (no Vulkan, Metal or DX12 driver; \
             scripts/install-deps.sh installs a software Vulkan driver)"
                .into(),
        ));
    }
    Ok(match pick("wgpu", index, listed.len())? {
        Some(i) => listed[i].clone(),
        None => Device::wgpu(DeviceKind::DefaultDevice),
    })
}

/// CUDA device `index` (0 by default; under `mpirun` the local rank's), refused when the
/// machine has no NVIDIA driver or no such device.
#[cfg(feature = "cuda")]
fn cuda(index: Option<usize>) -> Result<Device, RunError> {
    use burn::tensor::DeviceType;
    // Asks the driver without opening a context; no driver is no device, not a panic.
    let count = Device::enumerate(DeviceType::Cuda).into_vec().len();
    if count == 0 {
        return Err(RunError::Setting(
            "device `cuda`: no CUDA device found (no NVIDIA driver loaded, or no GPU visible \
             to it)"
                .into(),
        ));
    }
    let i = pick("cuda", index, count)?.unwrap_or(0);
    Ok(Device::cuda(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_indices_round_trip() {
        for s in [
            "host", "flex", "ndarray", "wgpu", "wgpu:1", "cuda", "cuda:0", "cuda:3",
        ] {
            let d: DeviceChoice = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<DeviceChoice>(&json).unwrap(), d);
        }
        assert_eq!(
            "CUDA:2".parse::<DeviceChoice>(),
            Ok(DeviceChoice::Cuda(Some(2)))
        );
        for bad in [
            "gpu", "cuda:", "cuda:-1", "wgpu:x", "flex:0", "", "cuda:1:2",
        ] {
            let e = bad.parse::<DeviceChoice>().unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn an_index_past_the_last_device_is_refused() {
        assert!(matches!(
            pick("cuda", Some(1), 1),
            Err(RunError::Setting(_))
        ));
        assert_eq!(pick("cuda", Some(0), 1).unwrap(), Some(0));
    }

    /// A binary built with `cuda` on a machine without an NVIDIA driver refuses the device
    /// with a usage error (exit 2) instead of panicking inside burn.
    #[cfg(feature = "cuda")]
    #[test]
    fn cuda_without_a_driver_is_a_usage_error() {
        if Device::enumerate(burn::tensor::DeviceType::Cuda)
            .into_vec()
            .is_empty()
        {
            let e = DeviceChoice::Cuda(None).device().unwrap_err();
            assert!(matches!(e, RunError::Setting(_)), "{e}");
            assert!(!DeviceChoice::available().contains(&DeviceChoice::Cuda(None)));
        } else {
            println!("a CUDA device is present: the refusal is not exercised here");
        }
    }
}
