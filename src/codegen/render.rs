//! Rendering a [`KernelConfig`] to CUDA C++ with the Tera template family in `templates/`.
//!
//! The template text is embedded in the binary (`include_str!`), so nothing needs template
//! files at run time. One template per family ([`Family`]) covers its configuration space:
//! Tera only fills in the kernel name and `constexpr` constants; the body chooses its code
//! paths with `if constexpr` on them. The split-K reduction kernel is one shared template.
//!
//! # Split-K is a run-time value
//!
//! The kernel partitions the reduction over `gridDim.z`, so one compiled kernel serves every
//! `split_k`. The source of a configuration therefore does not depend on `split_k`: it is
//! rendered for [`compile_key`]`(cfg)` (the same configuration with `split_k = 1`) and its
//! entry points are named after that key. Launchers must look the functions up by
//! [`KernelSource::name`] and [`KernelSource::reduce_name`], not by `cfg.name()`; the
//! configuration name (with its `sk` suffix) remains the name used in logs and the database.
//! A split summed in a cluster ([`KernelConfig::cluster_sum`]) is the exception: its cluster
//! size is compiled in, so its key keeps `split_k`.

use super::{validate, ACopy, CodegenError, Family, KernelConfig};
use crate::problem::{ALayout, NmPattern, Problem};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The templates: (template name, text). Everything that shapes the rendered source.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "nm_spmm.cu.tera",
        include_str!("../../templates/nm_spmm.cu.tera"),
    ),
    (
        "nm_spmm_decode.cu.tera",
        include_str!("../../templates/nm_spmm_decode.cu.tera"),
    ),
    (
        "split_k_reduce.cu.tera",
        include_str!("../../templates/split_k_reduce.cu.tera"),
    ),
    (
        "transpose_a.cu.tera",
        include_str!("../../templates/transpose_a.cu.tera"),
    ),
    (
        "nm_spmm_ew.cu.tera",
        include_str!("../../templates/nm_spmm_ew.cu.tera"),
    ),
    (
        "nm_spmm_ew_decode.cu.tera",
        include_str!("../../templates/nm_spmm_ew_decode.cu.tera"),
    ),
    (
        "nm_spmm_sk.cu.tera",
        include_str!("../../templates/nm_spmm_sk.cu.tera"),
    ),
    (
        STREAM_K_TMA_TEMPLATE,
        include_str!("../../templates/nm_spmm_sk_tma.cu.tera"),
    ),
    (
        CLUSTER_SUM_TEMPLATE,
        include_str!("../../templates/nm_spmm_clsum.cu.tera"),
    ),
    (
        EW_SHUFFLE_TEMPLATE,
        include_str!("../../templates/nm_spmm_ew_decode_shfl.cu.tera"),
    ),
    (
        "decode_common.cu.tera",
        include_str!("../../templates/decode_common.cu.tera"),
    ),
    (
        "decode_reduce.cu.tera",
        include_str!("../../templates/decode_reduce.cu.tera"),
    ),
    // The tensor-core family's (codegen::tc); no FP32 family uses it, so it is in none of
    // their checksums.
    (super::tc::TEMPLATE_NAME, super::tc::TEMPLATE),
    (
        TC_TRANSPOSE_TEMPLATE,
        include_str!("../../templates/transpose_a16.cu.tera"),
    ),
];

/// The templates that shape a family's modules, the entry template first: for the tiled and
/// element-wise families, the split-K reduction every module defines and the transposing copy
/// of A; for the two decode families, the code they share and their own reduction, which takes
/// part in their launch protocol.
fn family_templates(family: Family) -> &'static [&'static str] {
    match family {
        Family::Tiled => &[
            "nm_spmm.cu.tera",
            "split_k_reduce.cu.tera",
            "transpose_a.cu.tera",
        ],
        Family::Ew => &[
            "nm_spmm_ew.cu.tera",
            "split_k_reduce.cu.tera",
            "transpose_a.cu.tera",
        ],
        Family::Decode => &[
            "nm_spmm_decode.cu.tera",
            "decode_common.cu.tera",
            "decode_reduce.cu.tera",
        ],
        Family::EwDecode => &[
            "nm_spmm_ew_decode.cu.tera",
            "decode_common.cu.tera",
            "decode_reduce.cu.tera",
        ],
        Family::Tc => &[super::tc::TEMPLATE_NAME],
    }
}

/// A rendered CUDA module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSource {
    /// Symbol of the kernel a launch starts: `compile_key(cfg).name()`, the module's base
    /// name, or for a stream-K configuration `<base>_stream` ([`stream_name`]).
    pub name: String,
    /// Symbol of the split-K reduction kernel when `cfg.split_k > 1` (every module defines
    /// it, as `<base>_reduce`).
    pub reduce_name: Option<String>,
    /// CUDA C++ source for NVRTC.
    pub source: String,
}

/// The configuration whose compiled kernel serves `cfg`: `cfg` with `split_k = 1`; for a
/// split summed in a cluster ([`KernelConfig::cluster_sum`]), whose cluster size is compiled
/// in, `cfg` itself; and for the tensor-core family, whose kernels read N and M only through
/// their arguments and compile their split into the kernel (a cluster of split_k blocks),
/// with the pattern [`TC_KEY_PATTERN`] and the split kept. Configurations with equal keys
/// share one source, one compilation and one cubin.
pub fn compile_key(cfg: &KernelConfig) -> KernelConfig {
    if cfg.family() == Family::Tc {
        return KernelConfig {
            nm: TC_KEY_PATTERN,
            ..*cfg
        };
    }
    if cfg.cluster_sum {
        return *cfg;
    }
    KernelConfig { split_k: 1, ..*cfg }
}

/// The architecture NVRTC compiles `cfg` for on a GPU of architecture `gpu_arch`: the GPU's
/// own, except for the tensor-core family, whose `wgmma` exists only in `sm_90a`.
pub fn compile_arch<'a>(cfg: &KernelConfig, gpu_arch: &'a str) -> &'a str {
    if cfg.family() == Family::Tc {
        super::tc::TC_ARCH
    } else {
        gpu_arch
    }
}

/// The pattern every tensor-core compile key carries: its kernels serve every N:M.
pub const TC_KEY_PATTERN: NmPattern = NmPattern { n: 1, m: 1 };

/// The element-wise decode family's entry template for A by warp shuffles (`ewsrow`,
/// `ewscol`), in place of the family's own: a template of its own, so that adding it left
/// the rows timed with the family's `__ldca` kernels current.
const EW_SHUFFLE_TEMPLATE: &str = "nm_spmm_ew_decode_shfl.cu.tera";

/// The templates of a shuffle path's module: its own, and the decode code it shares.
const EW_SHUFFLE_TEMPLATES: [&str; 3] = [
    EW_SHUFFLE_TEMPLATE,
    "decode_common.cu.tera",
    "decode_reduce.cu.tera",
];

/// The stream-K schedule's template: a second entry kernel beside the tiled family's own,
/// rendered for configurations with `stream_k` (and for problems above decode size).
const STREAM_K_TEMPLATE: &str = "nm_spmm_sk.cu.tera";

/// The stream-K schedule of configurations with tensor copies: a template of its own (a copy
/// of [`STREAM_K_TEMPLATE`] that hands the tensor maps to the workers), so that the stream-K
/// kernels without them keep the checksum their tuning rows carry.
const STREAM_K_TMA_TEMPLATE: &str = "nm_spmm_sk_tma.cu.tera";

/// The split of k summed in a cluster ([`KernelConfig::cluster_sum`]): a second entry beside
/// the tiled family's own, in a template of its own so that the split kernels without it
/// keep the checksum their tuning rows carry.
const CLUSTER_SUM_TEMPLATE: &str = "nm_spmm_clsum.cu.tera";

/// The entry symbol of a split summed in a cluster, in the module whose base name is `base`.
pub fn cluster_sum_name(base: &str) -> String {
    format!("{base}_cluster")
}

/// The entry symbol of a stream-K configuration's module whose base name is `base`.
pub fn stream_name(base: &str) -> String {
    format!("{base}_stream")
}

/// The tensor-core family's transposing pass of row-major A, rendered into the modules of
/// its row-major configurations only, so that adding it left the column-major rows current.
pub(super) const TC_TRANSPOSE_TEMPLATE: &str = "transpose_a16.cu.tera";

/// Hex SHA-256 of the templates of `families` and the templates named in `extra` (the
/// stream-K schedule's, the tensor-core transposing pass), in [`TEMPLATES`] order (each
/// once).
fn checksum_of(families: &[Family], extra: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for (name, text) in TEMPLATES {
        let used =
            families.iter().any(|f| family_templates(*f).contains(name)) || extra.contains(name);
        if used {
            hasher.update(name.as_bytes());
            hasher.update([0u8]);
            hasher.update(text.as_bytes());
            hasher.update([0u8]);
        }
    }
    hex::encode(hasher.finalize())
}

/// The checksum of the templates that may serve `problem` ([`Family::serving`], and the
/// two stream-K schedules and the cluster-summed split above decode size, the transposing
/// pass of row-major tensor-core problems, the shuffle template of element-wise decode ones),
/// computed once per set: the key of a tuning run, by which it resumes. A tuning-database row
/// is current while it matches, or while its kernel's own templates are unchanged
/// ([`kernel_checksum`]): a change to the decode template leaves the rows of problems above
/// m = 16 valid, and a family, schedule or path added (the element-wise family for L = 1,
/// stream-K, the shuffle gather, the cluster sum) leaves every existing row valid.
pub fn templates_checksum(problem: &Problem) -> &'static str {
    static LARGE_M: OnceLock<String> = OnceLock::new();
    static DECODE: OnceLock<String> = OnceLock::new();
    static ELEMENT_WISE: OnceLock<String> = OnceLock::new();
    static ELEMENT_WISE_DECODE: OnceLock<String> = OnceLock::new();
    static TENSOR_CORE: OnceLock<String> = OnceLock::new();
    static TENSOR_CORE_ROW: OnceLock<String> = OnceLock::new();
    let families = Family::serving(problem);
    let tc_row = families.contains(&Family::Tc) && problem.a_layout == ALayout::RowMajor;
    let cell = if tc_row {
        &TENSOR_CORE_ROW
    } else if families.contains(&Family::Tc) {
        &TENSOR_CORE
    } else if families.contains(&Family::EwDecode) {
        &ELEMENT_WISE_DECODE
    } else if families.contains(&Family::Ew) {
        &ELEMENT_WISE
    } else if families.contains(&Family::Decode) {
        &DECODE
    } else {
        &LARGE_M
    };
    let stream_k = families.contains(&Family::Tiled) && !problem.is_decode();
    let extra: &[&str] = if stream_k {
        &[
            STREAM_K_TEMPLATE,
            STREAM_K_TMA_TEMPLATE,
            CLUSTER_SUM_TEMPLATE,
        ]
    } else if tc_row {
        &[TC_TRANSPOSE_TEMPLATE]
    } else if families.contains(&Family::EwDecode) {
        &[EW_SHUFFLE_TEMPLATE]
    } else {
        &[]
    };
    cell.get_or_init(|| checksum_of(families, extra))
}

/// The checksum of one family's templates, written into every module it renders (so that
/// the compiled-kernel cache, keyed by source, follows template changes).
pub fn family_checksum(family: Family) -> &'static str {
    static TILED: OnceLock<String> = OnceLock::new();
    static DECODE: OnceLock<String> = OnceLock::new();
    static ELEMENT_WISE: OnceLock<String> = OnceLock::new();
    static ELEMENT_WISE_DECODE: OnceLock<String> = OnceLock::new();
    static TENSOR_CORE: OnceLock<String> = OnceLock::new();
    let cell = match family {
        Family::Tiled => &TILED,
        Family::Decode => &DECODE,
        Family::Ew => &ELEMENT_WISE,
        Family::EwDecode => &ELEMENT_WISE_DECODE,
        Family::Tc => &TENSOR_CORE,
    };
    cell.get_or_init(|| checksum_of(&[family], &[]))
}

/// The checksum of the templates that render `cfg`: its family's ([`family_checksum`]), and
/// the stream-K template for a tiled stream-K configuration (its tensor-copy one with
/// `tma`), the transposing pass for a
/// row-major tensor-core one (whose stream-K schedule is in its own template); a shuffle
/// path's own templates ([`EW_SHUFFLE_TEMPLATES`]). Stored with every measurement, so a row
/// stays current while the code it timed is still generated.
pub fn kernel_checksum(cfg: &KernelConfig) -> &'static str {
    static TILED_STREAM_K: OnceLock<String> = OnceLock::new();
    static TILED_STREAM_K_TMA: OnceLock<String> = OnceLock::new();
    static TILED_CLUSTER_SUM: OnceLock<String> = OnceLock::new();
    static TC_TRANSPOSED: OnceLock<String> = OnceLock::new();
    static EW_SHUFFLE: OnceLock<String> = OnceLock::new();
    if cfg.a_copy.shuffles_a() {
        EW_SHUFFLE.get_or_init(|| checksum_of(&[], &EW_SHUFFLE_TEMPLATES))
    } else if cfg.stream_k && cfg.tma && cfg.family() == Family::Tiled {
        TILED_STREAM_K_TMA.get_or_init(|| checksum_of(&[Family::Tiled], &[STREAM_K_TMA_TEMPLATE]))
    } else if cfg.stream_k && cfg.family() == Family::Tiled {
        TILED_STREAM_K.get_or_init(|| checksum_of(&[Family::Tiled], &[STREAM_K_TEMPLATE]))
    } else if cfg.cluster_sum && cfg.family() == Family::Tiled {
        TILED_CLUSTER_SUM.get_or_init(|| checksum_of(&[Family::Tiled], &[CLUSTER_SUM_TEMPLATE]))
    } else if cfg.a_copy == ACopy::WgmmaTrans {
        TC_TRANSPOSED.get_or_init(|| checksum_of(&[Family::Tc], &[TC_TRANSPOSE_TEMPLATE]))
    } else {
        family_checksum(cfg.family())
    }
}

/// Render the CUDA module of `cfg`. The configuration's structural rules are checked first
/// ([`validate::validate_structure`]); GPU limits are the caller's business.
pub fn render(cfg: &KernelConfig) -> Result<KernelSource, CodegenError> {
    validate::validate_structure(cfg)?;
    if let Some(tc) = cfg.as_tc() {
        return super::tc::render_tc(&tc);
    }
    let key = compile_key(cfg);
    let base = key.name();
    let source = render_template(&key, &base)?;
    let reduce_name = cfg.launches_reduce().then(|| format!("{base}_reduce"));
    let name = if cfg.stream_k {
        stream_name(&base)
    } else if cfg.cluster_sum {
        cluster_sum_name(&base)
    } else {
        base
    };
    Ok(KernelSource {
        name,
        reduce_name,
        source,
    })
}

/// The templates, parsed once per process: a search renders thousands of configurations, and
/// parsing every template again for each was most of a render's time.
pub(super) fn parsed_templates() -> Result<&'static tera::Tera, CodegenError> {
    static PARSED: OnceLock<Result<tera::Tera, String>> = OnceLock::new();
    PARSED
        .get_or_init(|| {
            let mut tera = tera::Tera::default();
            tera.autoescape_on(vec![]);
            tera.add_raw_templates(TEMPLATES.iter().copied())
                .map(|()| tera)
                .map_err(|e| describe(&e))
        })
        .as_ref()
        .map_err(|e| CodegenError::Template(e.clone()))
}

fn render_template(cfg: &KernelConfig, name: &str) -> Result<String, CodegenError> {
    let tera = parsed_templates()?;
    let context = match cfg.family() {
        Family::Tiled => template_context(cfg, name),
        Family::Decode | Family::EwDecode => decode_context(cfg, name),
        Family::Ew => ew_context(cfg, name),
        Family::Tc => unreachable!("render() hands the tensor-core family to tc::render_tc"),
    };
    let template = if cfg.stream_k && cfg.tma {
        STREAM_K_TMA_TEMPLATE
    } else if cfg.stream_k {
        STREAM_K_TEMPLATE
    } else if cfg.cluster_sum {
        CLUSTER_SUM_TEMPLATE
    } else if cfg.a_copy.shuffles_a() {
        EW_SHUFFLE_TEMPLATE
    } else {
        family_templates(cfg.family())[0]
    };
    tera.render(template, &context)
        .map_err(|e| CodegenError::Template(describe(&e)))
}

fn template_context(cfg: &KernelConfig, name: &str) -> tera::Context {
    let mut ctx = tera::Context::new();
    ctx.insert("name", name);
    ctx.insert("checksum", kernel_checksum(cfg));
    ctx.insert("a_copy", &cfg.a_copy.template_id());
    ctx.insert("transposes_a", &cfg.a_copy.transposes_a());
    ctx.insert("m_s", &cfg.m_s);
    ctx.insert("n_s", &cfg.n_s);
    ctx.insert("k_s", &cfg.k_s);
    ctx.insert("m_t", &cfg.m_t);
    ctx.insert("n_t", &cfg.n_t);
    ctx.insert("warp_rows", &cfg.warp.rows);
    ctx.insert("warp_cols", &cfg.warp.cols);
    ctx.insert("n", &cfg.nm.n);
    ctx.insert("m", &cfg.nm.m);
    ctx.insert("l", &cfg.l);
    ctx.insert("w_s", &cfg.w_s());
    ctx.insert("q_s", &cfg.q_s());
    ctx.insert("a_rows", &cfg.a_rows());
    ctx.insert("a_stride", &cfg.a_stride());
    ctx.insert("d_row", &cfg.d_row());
    ctx.insert("groups", &validate::index_groups(cfg));
    ctx.insert("stages", &cfg.stages);
    ctx.insert("packing", if cfg.packing { "true" } else { "false" });
    ctx.insert("threads", &cfg.threads());
    ctx.insert("min_blocks", &cfg.min_blocks);
    ctx.insert("stage_floats", &cfg.stage_floats());
    ctx.insert("fragment_buffers", &validate::fragment_buffers(cfg));
    ctx.insert("row_chunk", &validate::row_chunk(cfg));
    ctx.insert("at_align", &super::config::TRANSPOSED_ALIGN_FLOATS);
    ctx.insert("tma", &cfg.tma);
    if cfg.cluster_sum {
        ctx.insert("split_k", &cfg.split_k);
        ctx.insert(
            "sum_passes",
            &validate::cluster_sum_passes(cfg).unwrap_or(0),
        );
    }
    ctx
}

fn decode_context(cfg: &KernelConfig, name: &str) -> tera::Context {
    let mut ctx = tera::Context::new();
    ctx.insert("name", name);
    ctx.insert("checksum", kernel_checksum(cfg));
    ctx.insert("m_s", &cfg.m_s);
    ctx.insert("n_s", &cfg.n_s);
    ctx.insert("n_t", &cfg.n_t);
    ctx.insert("k_s", &cfg.k_s);
    ctx.insert("warps", &cfg.warp.rows);
    ctx.insert("stages", &cfg.stages);
    ctx.insert("n", &cfg.nm.n);
    ctx.insert("m", &cfg.nm.m);
    ctx.insert("l", &cfg.l);
    let a_col = cfg.a_layout() == crate::problem::ALayout::ColMajor;
    ctx.insert("a_col", if a_col { "true" } else { "false" });
    ctx
}

fn ew_context(cfg: &KernelConfig, name: &str) -> tera::Context {
    let mut ctx = tera::Context::new();
    ctx.insert("name", name);
    ctx.insert("checksum", family_checksum(cfg.family()));
    ctx.insert("m_t", &cfg.m_t);
    ctx.insert("n_t", &cfg.n_t);
    ctx.insert("warps", &cfg.warp.rows);
    ctx.insert("k_s", &cfg.k_s);
    ctx.insert("n", &cfg.nm.n);
    ctx.insert("m", &cfg.nm.m);
    ctx.insert("stages", &cfg.stages);
    ctx.insert("min_blocks", &cfg.min_blocks);
    ctx.insert("stage_floats", &cfg.stage_floats());
    ctx.insert("window_unroll", &validate::ew_window_unroll(cfg));
    ctx.insert("transposes_a", &cfg.a_copy.transposes_a());
    ctx.insert("at_align", &super::config::TRANSPOSED_ALIGN_FLOATS);
    ctx
}

/// Tera hides the useful part of an error in its source chain.
fn describe(err: &tera::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::{ACopy, WarpLayout};
    use crate::problem::{Dtype, NmPattern};

    fn cfg() -> KernelConfig {
        KernelConfig {
            a_copy: ACopy::Col16,
            m_s: 64,
            n_s: 128,
            k_s: 64,
            m_t: 8,
            n_t: 8,
            warp: WarpLayout::new(8, 4),
            nm: NmPattern { n: 8, m: 32 },
            l: 32,
            packing: false,
            stages: 3,
            min_blocks: 2,
            split_k: 4,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        }
    }

    #[test]
    fn renders_constants_and_entry_points_of_the_compile_key() {
        let src = render(&cfg()).unwrap();
        let key = compile_key(&cfg()).name();
        assert_eq!(src.name, key);
        assert!(key.ends_with("_sk1"));
        assert_eq!(
            src.reduce_name.as_deref(),
            Some(format!("{key}_reduce").as_str())
        );
        assert!(src.source.contains(&format!("\n{key}(")));
        assert!(src.source.contains(&format!("\n{key}_reduce(")));
        assert!(src.source.contains("constexpr int WS = 16;"));
        assert!(src.source.contains("constexpr int STAGES = 3;"));
        assert!(src.source.contains("constexpr bool PACKING = false;"));
        assert!(src.source.contains("constexpr int MIN_BLOCKS = 2;"));
        assert!(
            !src.source.contains("{{"),
            "unrendered Tera left in the source"
        );
    }

    #[test]
    fn split_k_does_not_change_the_source() {
        let one = render(&KernelConfig {
            split_k: 1,
            ..cfg()
        })
        .unwrap();
        let eight = render(&KernelConfig {
            split_k: 8,
            ..cfg()
        })
        .unwrap();
        assert_eq!(one.source, eight.source);
        assert_eq!(one.reduce_name, None);
    }
}
