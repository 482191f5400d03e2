//! Run-time device choice: `--device host|flex|ndarray|wgpu`.

use std::fmt;

use burn::tensor::Device;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

#[allow(dead_code)]
fn missing(name: &str) -> AppError {
    AppError::Usage(format!(
        "device `{name}` is not compiled into this binary; rebuild with `--features {name}`"
    ))
}

/// Where chains run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceChoice {
    /// Host `f64` memory, no tensors: the fast path for analytic toy targets.
    Host,
    /// burn-flex, the default CPU tensor backend.
    Flex,
    /// burn-ndarray CPU backend.
    Ndarray,
    /// burn-wgpu (Vulkan/Metal/DX12 GPU, or a software Vulkan driver).
    Wgpu,
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Host => "host",
            Self::Flex => "flex",
            Self::Ndarray => "ndarray",
            Self::Wgpu => "wgpu",
        })
    }
}

impl DeviceChoice {
    /// The burn device (`None` for the host path). Errors if this binary was built without the
    /// backend's Cargo feature.
    pub fn device(self) -> Result<Option<Device>, AppError> {
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
            Self::Wgpu => Ok(Some(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice))),
            #[cfg(not(feature = "wgpu"))]
            Self::Wgpu => Err(missing("wgpu")),
        }
    }

    /// The tensor backends compiled into this binary.
    pub fn compiled() -> Vec<DeviceChoice> {
        let mut v = Vec::new();
        if cfg!(feature = "flex") {
            v.push(Self::Flex);
        }
        if cfg!(feature = "ndarray") {
            v.push(Self::Ndarray);
        }
        if cfg!(feature = "wgpu") {
            v.push(Self::Wgpu);
        }
        v
    }
}
