//! Renders and compiles the kernels of `compile_set` with NVRTC for sm_80, sm_89 and sm_90.
//!
//! The full space is about 4,000 distinct kernels per (N:M, L) pattern at 0.3–5 s each,
//! far beyond a CI budget, so by default the test compiles a deterministic stratified
//! sample. Strata are (A copy path, packing, m_t, n_t, whether the tiled family's inner
//! loop runs in row chunks) and, for the element-wise family, k_s (its windows per stage
//! set how much of the loop is unrolled). Patterns come in
//! groups of siblings whose kernels run the same code with other constants (the three
//! sparse M = 32, L = 32 patterns; the three small windows; the three element-wise ones;
//! dense alone): for sm_90, `PRIMARY_PER_STRATUM` kernels of every stratum of a group,
//! spread evenly over the stratum, taken from one sibling in turn, so that every code path
//! and tile shape compiles once a group and every pattern gets a share; for sm_80 and sm_89,
//! alternately, one kernel per code path (A copy path, packing, element-wise windows) of
//! every pattern; plus the stream-K entry of every 8th sampled tiled kernel, the
//! tensor-copy variant (sm_90) of every 4th that can take one, the stream-K entry (its own
//! template) of every 8th unsplit tensor-copy variant, and the cluster-summed split (sm_90, its
//! own template, every split from 2 to 8 in turn) of every 8th tiled kernel.
//! `NMTUNE_COMPILE_SAMPLE=full` compiles every distinct kernel of every pattern for all
//! three architectures.
//!
//! Cubins are cached under `$NMTUNE_CACHE_DIR` (default: cargo's target tmp folder), so a
//! rerun compiles nothing. Without NVRTC the test prints "SKIPPED: NVRTC not found" and
//! passes, unless `NMTUNE_REQUIRE_NVRTC` is set (CI sets it), in which case it fails.

mod common;

use nmtune::codegen::nvrtc::{compile_cached_with_outcome, CacheOutcome, CompiledKernel};
use nmtune::codegen::{
    compile_key, compile_set, nvrtc_version, render, validate, ACopy, Family, KernelConfig,
};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{ALayout, Dtype, NmPattern};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// (N, M, L) patterns compiled, in groups of siblings (see the module comment): the paper's
/// M = 32 sparsities, dense, small windows, and element-wise (L = 1) at the sparsest and
/// densest M = 32 patterns and a small window.
const SIBLING_GROUPS: [&[(u32, u32, u32)]; 4] = [
    &[(16, 32, 32), (8, 32, 32), (4, 32, 32)],
    &[(32, 32, 32)],
    &[(2, 4, 4), (2, 4, 8), (4, 8, 16)],
    &[(4, 32, 1), (16, 32, 1), (2, 4, 1)],
];
const PRIMARY_ARCH: &str = "sm_90";
const SECONDARY_ARCHS: [&str; 2] = ["sm_80", "sm_89"];
const PRIMARY_PER_STRATUM: usize = 1;
/// One stream-K variant per this many sampled tiled kernels of a pattern.
const STREAM_K_EVERY: usize = 8;
/// One tensor-copy variant (sm_90 only) per this many sampled kernels that can take one.
const TMA_EVERY: usize = 4;
/// One cluster-summed split (sm_90 only) per this many sampled tiled kernels, split in turn
/// in each of these ways.
const CLUSTER_SUM_EVERY: usize = 8;
const CLUSTER_SPLITS: [u32; 5] = [2, 3, 4, 6, 8];

struct Job {
    pattern: String,
    cfg: KernelConfig,
    arch: &'static str,
}

struct Outcome {
    job: Job,
    result: Result<(CompiledKernel, CacheOutcome), String>,
    elapsed: Duration,
}

#[test]
fn every_sampled_kernel_compiles_for_every_architecture() {
    if !common::nvrtc_or_skip() {
        return;
    }
    let full = std::env::var("NMTUNE_COMPILE_SAMPLE").is_ok_and(|v| v == "full");
    let jobs = plan_jobs(full);
    let cache_dir = common::cubin_cache();
    println!(
        "compiling {} kernels ({}) with NVRTC {:?} on {} threads, cache {}",
        jobs.len(),
        if full {
            "full space"
        } else {
            "stratified sample; NMTUNE_COMPILE_SAMPLE=full for all"
        },
        nvrtc_version().unwrap(),
        rayon::current_num_threads(),
        cache_dir.display()
    );
    let started = Instant::now();
    let outcomes: Vec<Outcome> = jobs
        .into_par_iter()
        .map(|job| {
            let t = Instant::now();
            let result = render(&job.cfg).map_err(|e| e.to_string()).and_then(|src| {
                let compiled = compile_cached_with_outcome(&src, job.arch, &cache_dir)
                    .map_err(|e| e.to_string())?;
                check_module(&compiled.0, &src.name, &compile_key(&job.cfg).name())?;
                Ok(compiled)
            });
            Outcome {
                job,
                result,
                elapsed: t.elapsed(),
            }
        })
        .collect();
    let report = summarize(&outcomes, started.elapsed(), full);
    println!("{report}");
    let report_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compile_report.txt");
    if let Err(e) = std::fs::write(&report_path, &report) {
        println!("cannot write {}: {e}", report_path.display());
    } else {
        println!("report written to {}", report_path.display());
    }
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.result
                .as_ref()
                .err()
                .map(|e| format!("{} [{}]: {e}", o.job.cfg.name(), o.job.arch))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} kernels failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The launched entry point (`name`) and the reduction (`<base>_reduce`) exist and ptxas
/// reported the launched kernel's registers.
fn check_module(kernel: &CompiledKernel, name: &str, base: &str) -> Result<(), String> {
    if kernel.cubin.is_empty() {
        return Err("empty cubin".into());
    }
    for symbol in [name.to_string(), format!("{base}_reduce")] {
        if !kernel
            .log
            .contains(&format!("Compiling entry function '{symbol}'"))
        {
            return Err(format!(
                "entry point {symbol} missing from the ptxas report"
            ));
        }
    }
    match kernel.registers {
        Some(r) if r <= 255 => Ok(()),
        other => Err(format!("register count {other:?} missing or above 255")),
    }
}

fn plan_jobs(full: bool) -> Vec<Job> {
    let gpu = GpuProfile::builtin("h100").expect("built-in h100 profile");
    let mut jobs = Vec::new();
    for group in SIBLING_GROUPS {
        let siblings: Vec<(String, Vec<KernelConfig>)> = group
            .iter()
            .map(|&(n, m, l)| {
                let nm = NmPattern::new(n, m).expect("valid pattern");
                let pattern = format!("{nm} L={l}");
                let kernels: Vec<KernelConfig> = ALayout::ALL
                    .into_iter()
                    .flat_map(|layout| compile_set(nm, l, layout, &gpu))
                    .collect();
                assert!(!kernels.is_empty(), "no kernel for {pattern}");
                (pattern, kernels)
            })
            .collect();
        let primaries = if full {
            siblings
                .iter()
                .map(|(_, kernels)| kernels.clone())
                .collect()
        } else {
            sample_group(&siblings)
        };
        for ((pattern, kernels), primary) in siblings.iter().zip(primaries) {
            let secondary = if full {
                kernels.clone()
            } else {
                one_per_path(kernels)
            };
            push_jobs(&mut jobs, pattern, primary, secondary, full);
        }
    }
    jobs
}

/// One pattern's jobs: its sm_90 kernels with their stream-K, tensor-copy and cluster-summed
/// variants (and the stream-K entry of some tensor-copy ones), and its kernels for the other
/// architectures.
fn push_jobs(
    jobs: &mut Vec<Job>,
    pattern: &str,
    primary: Vec<KernelConfig>,
    secondary: Vec<KernelConfig>,
    full: bool,
) {
    // The stream-K entry of every STREAM_K_EVERY-th sampled tiled kernel (its module holds
    // the data-parallel kernel too).
    let stream_k = primary
        .iter()
        .filter(|c| c.family() == Family::Tiled && c.split_k == 1)
        .step_by(STREAM_K_EVERY)
        .map(|c| KernelConfig {
            stream_k: true,
            tma: false,
            dtype: Dtype::F32,
            ..*c
        })
        .collect::<Vec<_>>();
    let tensor = primary
        .iter()
        .filter(|c| c.tma_capable())
        .step_by(TMA_EVERY)
        .map(|c| KernelConfig { tma: true, ..*c })
        .collect::<Vec<_>>();
    let tensor_stream_k = tensor
        .iter()
        .filter(|c| c.split_k == 1)
        .step_by(STREAM_K_EVERY)
        .map(|c| KernelConfig {
            stream_k: true,
            ..*c
        })
        .collect::<Vec<_>>();
    let cluster_sums = primary
        .iter()
        .chain(&tensor)
        .filter(|c| c.family() == Family::Tiled && !c.stream_k)
        .step_by(CLUSTER_SUM_EVERY)
        .zip(CLUSTER_SPLITS.iter().cycle())
        .map(|(c, &split_k)| KernelConfig {
            split_k,
            cluster_sum: true,
            ..*c
        })
        .filter(|c| validate::validate_structure(c).is_ok())
        .collect::<Vec<_>>();
    for cfg in primary
        .into_iter()
        .chain(stream_k)
        .chain(tensor)
        .chain(tensor_stream_k)
        .chain(cluster_sums)
    {
        jobs.push(Job {
            pattern: pattern.to_string(),
            cfg,
            arch: PRIMARY_ARCH,
        });
    }
    for (i, cfg) in secondary.into_iter().enumerate() {
        let archs: Vec<&'static str> = if full {
            SECONDARY_ARCHS.to_vec()
        } else {
            vec![SECONDARY_ARCHS[i % SECONDARY_ARCHS.len()]]
        };
        for arch in archs {
            jobs.push(Job {
                pattern: pattern.to_string(),
                cfg,
                arch,
            });
        }
    }
}

/// (A copy path, packing, m_t, n_t, the element-wise family's k_s, whether the tiled
/// family's inner loop runs in row chunks).
type Stratum = (ACopy, bool, u32, u32, u32, bool);

/// One pattern's kernels by stratum, each stratum in the kernels' order (which varies m_s,
/// n_s, k_s, the warp layout, the stages and min_blocks).
fn strata(kernels: &[KernelConfig]) -> BTreeMap<Stratum, Vec<KernelConfig>> {
    let mut strata: BTreeMap<Stratum, Vec<KernelConfig>> = BTreeMap::new();
    for cfg in kernels {
        let windows = if cfg.family() == Family::Ew {
            cfg.k_s
        } else {
            0
        };
        let chunked = cfg.row_chunk > 0;
        strata
            .entry((cfg.a_copy, cfg.packing, cfg.m_t, cfg.n_t, windows, chunked))
            .or_default()
            .push(*cfg);
    }
    strata
}

/// The sm_90 sample of a group of sibling patterns, one list per sibling: the group's
/// strata in order, the j-th taken from sibling j mod (siblings), or from the next sibling
/// that has it.
fn sample_group(siblings: &[(String, Vec<KernelConfig>)]) -> Vec<Vec<KernelConfig>> {
    let by_sibling: Vec<_> = siblings
        .iter()
        .map(|(_, kernels)| strata(kernels))
        .collect();
    let keys: std::collections::BTreeSet<Stratum> =
        by_sibling.iter().flat_map(|s| s.keys().copied()).collect();
    let mut primaries = vec![Vec::new(); siblings.len()];
    for (j, key) in keys.iter().enumerate() {
        let owner = (0..siblings.len())
            .map(|d| (j + d) % siblings.len())
            .find(|&s| by_sibling[s].contains_key(key))
            .expect("a stratum of the group belongs to some sibling");
        primaries[owner].extend(spread(&by_sibling[owner][key], PRIMARY_PER_STRATUM));
    }
    primaries
}

/// The secondary architectures compile one kernel per code path (A copy path, packing, and
/// the element-wise family's windows a stage), the middle member of the path's kernels:
/// what differs between sm_80, sm_89 and sm_90 in the rendered source is the copy path, not
/// the tile sizes, which sm_90 covers stratum by stratum. Chunked kernels (sm_90's tuning)
/// only sm_90.
fn one_per_path(kernels: &[KernelConfig]) -> Vec<KernelConfig> {
    let mut paths: BTreeMap<(ACopy, bool, u32), Vec<KernelConfig>> = BTreeMap::new();
    for (stratum, members) in strata(kernels) {
        if !stratum.5 {
            let path = paths.entry((stratum.0, stratum.1, stratum.4)).or_default();
            path.extend(members);
        }
    }
    paths
        .values()
        .map(|members| members[members.len() / 2])
        .collect()
}

/// `count` members at evenly spaced positions, first and last included.
fn spread(members: &[KernelConfig], count: usize) -> Vec<KernelConfig> {
    if members.len() <= count {
        return members.to_vec();
    }
    (0..count)
        .map(|i| members[i * (members.len() - 1) / (count - 1).max(1)])
        .collect()
}

fn summarize(outcomes: &[Outcome], wall: Duration, full: bool) -> String {
    #[derive(Default)]
    struct Row {
        count: usize,
        compiled: usize,
        failed: usize,
        max_registers: u32,
        spilling: Vec<String>,
        compile_time: Duration,
    }
    let mut rows: BTreeMap<(String, &str), Row> = BTreeMap::new();
    for o in outcomes {
        let row = rows.entry((o.job.pattern.clone(), o.job.arch)).or_default();
        row.count += 1;
        match &o.result {
            Ok((kernel, outcome)) => {
                if *outcome == CacheOutcome::Compiled {
                    row.compiled += 1;
                    row.compile_time += o.elapsed;
                }
                row.max_registers = row.max_registers.max(kernel.registers.unwrap_or(0));
                if let Some(bytes) = kernel.spill_bytes.filter(|&b| b > 0) {
                    row.spilling
                        .push(format!("{} ({bytes} B)", o.job.cfg.name()));
                }
            }
            Err(_) => row.failed += 1,
        }
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "NVRTC compile report ({}), wall time {:.1} s",
        if full {
            "full space"
        } else {
            "stratified sample"
        },
        wall.as_secs_f64()
    );
    let _ = writeln!(
        text,
        "{:<14} {:<6} {:>7} {:>8} {:>6} {:>8} {:>8} {:>9}",
        "pattern", "arch", "kernels", "compiled", "failed", "max_regs", "spilling", "s/kernel"
    );
    for ((pattern, arch), row) in &rows {
        let per_kernel = if row.compiled > 0 {
            row.compile_time.as_secs_f64() / row.compiled as f64
        } else {
            0.0
        };
        let _ = writeln!(
            text,
            "{:<14} {:<6} {:>7} {:>8} {:>6} {:>8} {:>8} {:>9.2}",
            pattern,
            arch,
            row.count,
            row.compiled,
            row.failed,
            row.max_registers,
            row.spilling.len(),
            per_kernel
        );
    }
    for ((pattern, arch), row) in &rows {
        for name in &row.spilling {
            let _ = writeln!(text, "spills: {pattern} {arch} {name}");
        }
    }
    text
}
