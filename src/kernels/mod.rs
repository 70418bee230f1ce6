//! The kernel library, below both the tuner that measures it and the runtime that launches
//! it (as CUTLASS's kernels sit below its profiler): the paper's fixed configurations and the
//! default a problem gets ([`table_one`]), a compiled kernel loaded on a GPU with its one
//! launch path ([`loaded`]), a compressed weight's operands on the device ([`operands`]) and a launch's scratch
//! memory ([`workspace`]).

pub mod loaded;
pub mod operands;
pub mod table_one;
pub mod tc;
pub mod workspace;

pub use loaded::{IndexOperand, LaunchBuffers, LoadedKernel};
pub use operands::{upload_compressed, DeviceColInfo, DeviceColInfos, DeviceIndices, OperandError};
pub use workspace::Workspace;
