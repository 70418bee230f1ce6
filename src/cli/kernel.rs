//! `nmtune kernel <name>`: render one kernel, compile it with NVRTC for an architecture and
//! print ptxas's resource report (registers, spills, shared memory); no GPU needed.

use anyhow::Context;
use clap::Args;
use nmtune::codegen::{nvrtc, render, validate, CodegenError, KernelConfig};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct KernelArgs {
    /// Kernel name, e.g. nm_spmm_f32_arow4_ms64_ns128_ks32_mt8_nt8_w8x4_n8m32l32_nopack_cp2_mb1_sk1.
    name: String,
    /// Target architecture: sm_<major><minor>, such as sm_90 (H100, H200) or sm_80 (A100).
    #[arg(long, default_value = "sm_90")]
    arch: String,
    /// Print the rendered CUDA source instead of compiling it.
    #[arg(long)]
    source: bool,
    /// NVRTC output cache [default: nmtune/cubins in the user cache directory, where the
    /// runtime API looks for compiled kernels too].
    #[arg(long, value_name = "DIR", env = "NMTUNE_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

pub fn run(args: &KernelArgs) -> anyhow::Result<()> {
    let cfg = KernelConfig::parse_name(args.name.trim())
        .with_context(|| format!("'{}' is not a kernel name", args.name))?;
    validate::validate_for_arch(&cfg, &args.arch)?;
    let source = render::render(&cfg)?;
    if args.source {
        print!("{}", source.source);
        return Ok(());
    }
    let cache = super::tune::cache_dir_or_default(args.cache_dir.clone());
    let arch = render::compile_arch(&cfg, &args.arch);
    let compiled = nvrtc::compile_cached(&source, arch, &cache).map_err(|err| match err {
        // Refused before the kernel's name was at hand: name it.
        CodegenError::Compile { name, arch, log } if name.is_empty() => CodegenError::Compile {
            name: cfg.name(),
            arch,
            log,
        },
        other => other,
    })?;
    let show = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
    println!(
        "{}: {} for {}: {} registers, {} bytes spilled, {} threads, {} bytes dynamic shared memory",
        cfg.name(),
        compiled.name,
        arch,
        show(compiled.registers),
        show(compiled.spill_bytes),
        cfg.threads(),
        cfg.smem_bytes()
    );
    Ok(())
}
