//! runtime: the API applications call — look up the best kernel for a problem and launch it.
//!
//! * [`Lookup`] opens a tuning database read-only, loads one GPU's best entries into memory
//!   once, and answers [`Lookup::lookup`] from memory (rules: [`lookup`](self::lookup)'s
//!   module documentation, summarised in [`Rule`]).
//! * [`PreparedWeight`] turns a dense weight (k×n, or PyTorch's n×k) or an already
//!   compressed (B', D) pair into the host buffers the kernels read.
//! * [`Runtime`] binds a lookup to a CUDA context and compiles kernels on first use;
//!   [`SparseLinear`] is a prepared weight on the device that launches, on the caller's
//!   stream, the kernel chosen for each m. It takes A in the one layout it was created with
//!   ([`ALayout`](crate::problem::ALayout)), and launches only kernels compiled for it: A is
//!   never transposed behind the caller's back.
//!
//! ```no_run
//! use nmtune::problem::{ALayout, NmPattern};
//! use nmtune::runtime::{Lookup, PreparedWeight, Runtime, SparseLinear};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (n, k, m) = (4096, 4096, 300);
//! let dense_nk = vec![0.5f32; n * k]; // nn.Linear weight, out × in
//! let weight = PreparedWeight::from_dense_nk(&dense_nk, n, k, NmPattern::new(8, 32)?, 32)?;
//! let lookup = Lookup::open_all(&["tuning-db/h200.sqlite", "tuning-db/h200-decode.sqlite"], "h200")?;
//! let ctx = cudarc::driver::CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let runtime = Runtime::new(lookup, &ctx)?;
//! let mut layer = SparseLinear::new(runtime, weight, ALayout::RowMajor, &stream)?;
//! let a = stream.clone_htod(&vec![1.0f32; m * k])?;
//! let mut c = stream.alloc_zeros::<f32>(m * n)?;
//! let choice = layer.forward(&stream, &a, &mut c, m, 1.0, 0.0)?;
//! println!("{} chosen by rule {}", choice.config.name(), choice.rule);
//! # Ok(())
//! # }
//! ```

mod answer;
mod borrowed;
mod error;
mod linear;
pub mod lookup;
mod tc_linear;
mod weight;

pub use answer::Answer;
pub use borrowed::{BorrowedLinear, DeviceMatrix};
pub use error::RuntimeError;
pub use linear::{Runtime, SparseLinear};
pub use lookup::{Choice, Lookup, LookupStats, Rule};
pub use tc_linear::TcLinear;
pub use weight::{HostBuffers, HostIndices, PreparedWeight};
