//! A compressed weight's operands on the device: B' and D (the non-packing kernels' operand,
//! i32 or, for the element-wise family, u8)
//! and the col_info tilings of packing kernels, built and uploaded once per tiling. Shared by
//! the tuner's random instances and the runtime's prepared weights.

use super::loaded::IndexOperand;
use crate::format::{self, ColInfo, CompressedWeight};
use crate::gpu::device::upload_on;
use crate::gpu::GpuError;
use crate::problem::is_element_wise;
use cudarc::driver::{CudaSlice, CudaStream};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

/// col_info of one (k_s, n_s) tiling on the device.
pub struct DeviceColInfo {
    pub columns: CudaSlice<i32>,
    pub counts: CudaSlice<i32>,
    pub packed_indices: CudaSlice<i32>,
}

impl DeviceColInfo {
    /// Copy a host [`ColInfo`] to the device.
    pub fn upload(stream: &Arc<CudaStream>, info: &ColInfo) -> Result<Self, GpuError> {
        Ok(Self {
            columns: upload_on(stream, &info.columns)?,
            counts: upload_on(stream, &info.counts)?,
            packed_indices: upload_on(stream, &info.packed_indices)?,
        })
    }
}

/// The col_info tilings of one weight built so far, keyed by (k_s, n_s): each is built on
/// the host and uploaded once, on first use (shared by the tuner and the runtime).
#[derive(Default)]
pub struct DeviceColInfos {
    tilings: HashMap<(u32, u32), DeviceColInfo>,
}

impl DeviceColInfos {
    /// Build and upload the (k_s, n_s) tiling of `host` unless it exists; return it.
    pub fn prepare(
        &mut self,
        stream: &Arc<CudaStream>,
        host: &CompressedWeight,
        (k_s, n_s): (u32, u32),
    ) -> Result<&DeviceColInfo, OperandError> {
        match self.tilings.entry((k_s, n_s)) {
            Entry::Occupied(found) => Ok(found.into_mut()),
            Entry::Vacant(slot) => {
                let info = format::build_col_info(host, k_s as usize, n_s as usize)?;
                Ok(slot.insert(DeviceColInfo::upload(stream, &info)?))
            }
        }
    }

    /// A tiling prepared earlier.
    pub fn get(&self, k_s: u32, n_s: u32) -> Option<&DeviceColInfo> {
        self.tilings.get(&(k_s, n_s))
    }
}

/// D of a weight on the device, in the element type of the family that serves its L: the
/// u8 positions as stored for element-wise N:M (L = 1, whose D is as large as B'), widened
/// to i32 for every other L (the tiled and decode families' operand).
pub enum DeviceIndices {
    Wide(CudaSlice<i32>),
    Bytes(CudaSlice<u8>),
}

impl DeviceIndices {
    /// Upload `host`'s D in the element type of its family.
    pub fn upload(stream: &Arc<CudaStream>, host: &CompressedWeight) -> Result<Self, GpuError> {
        Ok(if is_element_wise(host.l) {
            DeviceIndices::Bytes(upload_on(stream, &host.indices)?)
        } else {
            DeviceIndices::Wide(upload_on(stream, &host.indices_i32())?)
        })
    }

    /// Bytes on the device.
    pub fn bytes(&self) -> u64 {
        match self {
            DeviceIndices::Wide(d) => 4 * d.len() as u64,
            DeviceIndices::Bytes(d) => d.len() as u64,
        }
    }

    /// The operand of a non-packing launch.
    pub fn operand(&self) -> IndexOperand<'_> {
        match self {
            DeviceIndices::Wide(d) => IndexOperand::plain(d),
            DeviceIndices::Bytes(d) => IndexOperand::Bytes(d),
        }
    }

    /// The i32 positions, when this is the wide form.
    pub fn wide(&self) -> Option<&CudaSlice<i32>> {
        match self {
            DeviceIndices::Wide(d) => Some(d),
            DeviceIndices::Bytes(_) => None,
        }
    }
}

/// B' and D of a weight on the device, D in its family's element type ([`DeviceIndices`]).
pub fn upload_compressed(
    stream: &Arc<CudaStream>,
    host: &CompressedWeight,
) -> Result<(CudaSlice<f32>, DeviceIndices), GpuError> {
    Ok((
        upload_on(stream, &host.values)?,
        DeviceIndices::upload(stream, host)?,
    ))
}

/// Errors while putting operands on the device.
#[derive(Debug, thiserror::Error)]
pub enum OperandError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Format(#[from] format::FormatError),
}
