//! A kernel configuration: the point of the parameter space one compiled kernel implements.

use crate::problem::NmPattern;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How tiles travel from global to shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Pipeline {
    /// One shared-memory buffer: load, barrier, compute, barrier.
    Single,
    /// Two shared-memory buffers; the next tile is staged through registers while the
    /// current one is computed.
    RegisterDouble,
    /// `cp.async` ring of `stages` shared-memory buffers (2..=4).
    CpAsync { stages: u32 },
}

impl Pipeline {
    /// Shared-memory buffers this pipeline keeps.
    pub fn buffers(&self) -> u32 {
        match self {
            Pipeline::Single => 1,
            Pipeline::RegisterDouble => 2,
            Pipeline::CpAsync { stages } => *stages,
        }
    }

    /// Short token used in kernel names: `sb`, `db`, `cp3`.
    pub fn token(&self) -> String {
        match self {
            Pipeline::Single => "sb".into(),
            Pipeline::RegisterDouble => "db".into(),
            Pipeline::CpAsync { stages } => format!("cp{stages}"),
        }
    }
}

/// Arrangement of a warp's 32 threads over its tile of C: `rows × cols` thread tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct WarpLayout {
    pub rows: u32,
    pub cols: u32,
}

impl WarpLayout {
    pub const fn new(rows: u32, cols: u32) -> Self {
        Self { rows, cols }
    }
}

/// Every parameter of one generated kernel. N, M and L are compile-time constants of the
/// kernel; m, n and k are run-time arguments, so one configuration serves every shape of
/// its sparsity pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct KernelConfig {
    /// Block tile of C: m_s rows × n_s columns.
    pub m_s: u32,
    pub n_s: u32,
    /// Columns of A (rows of dense B) per main-loop step; a multiple of M.
    pub k_s: u32,
    /// Thread tile of C held in registers.
    pub m_t: u32,
    pub n_t: u32,
    pub warp: WarpLayout,
    pub nm: NmPattern,
    /// Vector length L.
    pub l: u32,
    /// Load only the A columns a tile needs (col_info) instead of the whole k_s window.
    pub packing: bool,
    pub pipeline: Pipeline,
    /// Slices of the reduction run by separate blocks, summed by a second kernel.
    pub split_k: u32,
}

impl KernelConfig {
    /// Compressed rows per main-loop step: k_s·N/M.
    pub fn w_s(&self) -> u32 {
        // `max(1)`: the fields are public; a nonsense configuration must not divide by zero.
        self.k_s / self.nm.m.max(1) * self.nm.n
    }

    /// Index columns per block: n_s/L, at least one.
    pub fn q_s(&self) -> u32 {
        self.n_s.div_ceil(self.l.max(1))
    }

    /// Threads per block: (m_s/m_t)·(n_s/n_t).
    pub fn threads(&self) -> u32 {
        (self.m_s / self.m_t.max(1)) * (self.n_s / self.n_t.max(1))
    }

    /// Column groups a thread's n_t columns span (1 when n_t ≤ L).
    pub fn groups_per_thread(&self) -> u32 {
        self.n_t.div_ceil(self.l).max(1)
    }

    /// Row stride of the transposed A tile in shared memory, in floats. Padding by 4 keeps
    /// 16-byte alignment for vector reads and makes the transposing stores conflict-free.
    pub fn a_stride(&self) -> u32 {
        self.m_s + 4
    }

    /// Dynamic shared memory per block, bytes: A_s, B_s and D_s for every pipeline buffer
    /// (DESIGN.md eq. 4 with the padding counted).
    pub fn smem_bytes(&self) -> u32 {
        let per_stage =
            self.k_s * self.a_stride() + self.w_s() * self.n_s + self.w_s() * self.q_s();
        4 * per_stage * self.pipeline.buffers()
    }

    /// Kernel name that spells the configuration, e.g.
    /// `nm_spmm_f32_ms64_ns128_ks32_mt8_nt8_w4x8_n8m32l32_pack_cp3_sk1`.
    pub fn name(&self) -> String {
        format!(
            "nm_spmm_f32_ms{}_ns{}_ks{}_mt{}_nt{}_w{}x{}_n{}m{}l{}_{}_{}_sk{}",
            self.m_s,
            self.n_s,
            self.k_s,
            self.m_t,
            self.n_t,
            self.warp.rows,
            self.warp.cols,
            self.nm.n,
            self.nm.m,
            self.l,
            if self.packing { "pack" } else { "nopack" },
            self.pipeline.token(),
            self.split_k
        )
    }

    /// Inverse of [`KernelConfig::name`]: only names it spells are accepted (no `+64`,
    /// no leading zeros), so one configuration has exactly one name.
    pub fn parse_name(name: &str) -> Option<Self> {
        Self::parse_name_loosely(name).filter(|cfg| cfg.name() == name)
    }

    fn parse_name_loosely(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("nm_spmm_f32_")?;
        let parts: Vec<&str> = rest.split('_').collect();
        if parts.len() != 10 {
            return None;
        }
        let num = |s: &str, prefix: &str| s.strip_prefix(prefix)?.parse::<u32>().ok();
        let (wr, wc) = parts[5].strip_prefix('w')?.split_once('x')?;
        let nml = parts[6].strip_prefix('n')?;
        let (n, ml) = nml.split_once('m')?;
        let (m, l) = ml.split_once('l')?;
        let pipeline = match parts[8] {
            "sb" => Pipeline::Single,
            "db" => Pipeline::RegisterDouble,
            cp => Pipeline::CpAsync {
                stages: cp.strip_prefix("cp")?.parse().ok()?,
            },
        };
        Some(Self {
            m_s: num(parts[0], "ms")?,
            n_s: num(parts[1], "ns")?,
            k_s: num(parts[2], "ks")?,
            m_t: num(parts[3], "mt")?,
            n_t: num(parts[4], "nt")?,
            warp: WarpLayout::new(wr.parse().ok()?, wc.parse().ok()?),
            nm: NmPattern {
                n: n.parse().ok()?,
                m: m.parse().ok()?,
            },
            l: l.parse().ok()?,
            packing: match parts[7] {
                "pack" => true,
                "nopack" => false,
                _ => return None,
            },
            pipeline,
            split_k: num(parts[9], "sk")?,
        })
    }
}

impl fmt::Display for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_round_trips() {
        let cfg = KernelConfig {
            m_s: 64,
            n_s: 128,
            k_s: 32,
            m_t: 8,
            n_t: 8,
            warp: WarpLayout::new(4, 8),
            nm: NmPattern { n: 8, m: 32 },
            l: 32,
            packing: true,
            pipeline: Pipeline::CpAsync { stages: 3 },
            split_k: 1,
        };
        assert_eq!(
            cfg.name(),
            "nm_spmm_f32_ms64_ns128_ks32_mt8_nt8_w4x8_n8m32l32_pack_cp3_sk1"
        );
        assert_eq!(KernelConfig::parse_name(&cfg.name()), Some(cfg));
        assert_eq!(cfg.threads(), 128);
        assert_eq!(cfg.w_s(), 8);
    }
}
