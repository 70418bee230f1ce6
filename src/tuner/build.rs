//! The builder: render and compile every distinct kernel once, in parallel, through the
//! on-disk NVRTC cache.

use crate::codegen::{compile_arch, compile_key, nvrtc, render, KernelConfig};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A compiled kernel, or why it could not be built.
pub type BuildResult = Result<Built, String>;

/// Source and binary of one compile key.
pub struct Built {
    pub source: render::KernelSource,
    pub compiled: nvrtc::CompiledKernel,
}

/// Compile the distinct kernels behind `configs` for `arch`; keyed by compile-key name.
pub fn build_all(
    configs: &[KernelConfig],
    arch: &str,
    cache_dir: &Path,
) -> HashMap<String, BuildResult> {
    let keys: BTreeSet<KernelConfig> = configs.iter().map(compile_key).collect();
    let keys: Vec<KernelConfig> = keys.into_iter().collect();
    keys.par_iter()
        .map(|key| (key.name(), build_one(key, arch, cache_dir)))
        .collect()
}

fn build_one(key: &KernelConfig, arch: &str, cache_dir: &Path) -> BuildResult {
    let source = render::render(key).map_err(|e| e.to_string())?;
    let arch = compile_arch(key, arch);
    let compiled = nvrtc::compile_cached(&source, arch, cache_dir).map_err(|e| e.to_string())?;
    Ok(Built { source, compiled })
}
