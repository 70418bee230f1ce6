//! A kernel configuration as flat JSON fields: the one spelling of a configuration in every
//! JSON interface (report rows, lookup answers, the Python package's lookup).

use super::KernelConfig;
use serde::Serialize;

/// A kernel configuration as the JSON of `nmtune report`, `nmtune lookup` and the
/// runtime's lookup answer spell it (README "Report fields"): flat fields, each a number, a boolean or a short string.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigFields {
    /// How A's tiles reach shared memory: `col16` (column-major A), `row4`, `row16`, `rowk` or
    /// `trans` (row-major A transposed into the workspace first); the other families' tokens
    /// ([`super::ACopy::token`] without its leading `a`), such as the tensor-core `wgmma`.
    pub a_copy: &'static str,
    pub m_s: u32,
    pub n_s: u32,
    pub k_s: u32,
    pub m_t: u32,
    pub n_t: u32,
    /// Warp layout, rows × columns of threads: `"8x4"`.
    pub warp: String,
    /// `"N:M"`.
    pub nm: String,
    pub l: u32,
    pub packing: bool,
    /// Depth of the cp.async ring.
    pub stages: u32,
    pub min_blocks: u32,
    pub split_k: u32,
    /// Compressed rows per pass of the tiled family's rolled inner loop; 0: each tile
    /// unrolled whole.
    pub row_chunk: u32,
    /// Whether the tiles of the last two waves are shared out stream-K.
    pub stream_k: bool,
    /// Whether the interior tiles of A and B' arrive by tensor copies (sm_90+).
    pub tma: bool,
    /// Whether the blocks of a split tile add up their sums in a cluster (sm_90+), not
    /// through a workspace and a second kernel.
    pub cluster_sum: bool,
}

impl From<&KernelConfig> for ConfigFields {
    fn from(c: &KernelConfig) -> Self {
        Self {
            a_copy: c.a_copy.token().trim_start_matches('a'),
            m_s: c.m_s,
            n_s: c.n_s,
            k_s: c.k_s,
            m_t: c.m_t,
            n_t: c.n_t,
            warp: format!("{}x{}", c.warp.rows, c.warp.cols),
            nm: c.nm.to_string(),
            l: c.l,
            packing: c.packing,
            stages: c.stages,
            min_blocks: c.min_blocks,
            split_k: c.split_k,
            row_chunk: c.row_chunk,
            stream_k: c.stream_k,
            tma: c.tma,
            cluster_sum: c.cluster_sum,
        }
    }
}
