//! nmtune: an autotuning code generator for N:M-sparse matrix multiplication on NVIDIA GPUs.
//!
//! Data flows one way through the modules:
//! shapes ([`shapes`]) → candidate configurations ([`codegen::enumerate`]) → rendered CUDA
//! ([`codegen::render`]) → compiled module ([`codegen::nvrtc`]) → timing ([`tuner`]) →
//! database ([`db`]) → lookup and launch ([`runtime`]).
//!
//! The N:M vector-wise sparse format lives in [`format`], the CPU reference in [`reference`];
//! every other layer shares them. [`checkpoint`] prunes safetensors checkpoints into that
//! format and lists their shapes for tuning. The tuner and the runtime both stand on the kernel library
//! ([`kernels`]: Table I and the default configuration, a loaded kernel and its launch) and
//! the performance model ([`model`]); neither uses the other. `tests/layers.rs` keeps every
//! module's imports pointing down.

pub mod checkpoint;
pub mod codegen;
pub mod db;
pub mod format;
pub mod gpu;
pub mod gpu_profile;
pub mod kernels;
pub mod model;
pub mod plot;
pub mod problem;
pub mod reference;
pub mod replay;
pub mod runtime;
pub mod shapes;
pub mod summary;
pub mod tuner;

/// Version of this tool, recorded beside every measurement.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// An error and its causes as one line, the causes joined with ": ", as the CLI and the Python
/// package print them. A cause whose message the line already holds is left out: many errors
/// say their cause in their own message (`cannot read x: {source}`) and also report it as
/// their `source()`, and joining the chain blindly would repeat it.
pub fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(err) = cause {
        let text = err.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = err.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read model.safetensors: {source}")]
    struct SaysItsCause {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let err = SaysItsCause { source: io };
        assert_eq!(
            one_line(&err),
            "cannot read model.safetensors: No such file or directory"
        );
        let wrapped = anyhow::Error::new(err).context("pruning");
        assert_eq!(
            one_line(wrapped.as_ref()),
            "pruning: cannot read model.safetensors: No such file or directory"
        );
    }
}
