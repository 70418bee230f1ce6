//! What nmtune needs to know about a GPU model: its resource limits and roofline ceilings
//! ([`GpuProfile`]), from a built-in table for named GPUs or read off the device. It sits below
//! code generation (which validates against the limits) and needs no GPU.

use serde::{Deserialize, Serialize};

/// Resource limits and roofline ceilings of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProfile {
    /// Short name used on the command line and in the database: "h100", "a100", …
    pub name: String,
    /// Marketing name as the driver reports it, for humans.
    pub full_name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// Largest dynamic shared memory one block may opt into, bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM, bytes.
    pub smem_per_sm: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    /// FP32 FMA lanes per SM.
    pub fp32_lanes_per_sm: u32,
    /// Boost clock, MHz.
    pub clock_mhz: u32,
    /// DRAM bandwidth, GB/s.
    pub dram_gbps: f64,
    /// L2 cache, bytes.
    pub l2_bytes: u64,
}

impl GpuProfile {
    /// FP32 FMA peak in FLOP/s: SMs × lanes × 2 × clock.
    pub fn peak_fp32_flops(&self) -> f64 {
        self.sm_count as f64 * self.fp32_lanes_per_sm as f64 * 2.0 * self.clock_mhz as f64 * 1e6
    }

    /// DRAM bandwidth in bytes/s.
    pub fn dram_bytes_per_s(&self) -> f64 {
        self.dram_gbps * 1e9
    }

    /// NVRTC architecture option for this GPU, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// The built-in profile for a short name ("h100", "4090", …), case-insensitive.
    pub fn builtin(name: &str) -> Option<GpuProfile> {
        let wanted = name.trim().to_ascii_lowercase();
        BUILTIN_PROFILES
            .iter()
            .find(|p| p.name == wanted || p.aliases.contains(&wanted.as_str()))
            .map(BuiltinProfile::to_profile)
    }

    /// Short names of every built-in profile.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN_PROFILES.iter().map(|p| p.name).collect()
    }
}

/// A row of the built-in table (NM-SpMM Table III for the A100/3090/4090; NVIDIA's data
/// sheets for the Hopper parts).
pub struct BuiltinProfile {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub full_name: &'static str,
    pub cc: (u32, u32),
    pub sm_count: u32,
    pub smem_per_block_optin: u32,
    pub smem_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub fp32_lanes_per_sm: u32,
    pub clock_mhz: u32,
    pub dram_gbps: f64,
    pub l2_mib: u64,
}

impl BuiltinProfile {
    fn to_profile(&self) -> GpuProfile {
        GpuProfile {
            name: self.name.to_string(),
            full_name: self.full_name.to_string(),
            compute_capability: self.cc,
            sm_count: self.sm_count,
            smem_per_block_optin: self.smem_per_block_optin,
            smem_per_sm: self.smem_per_sm,
            regs_per_sm: 65536,
            max_threads_per_sm: self.max_threads_per_sm,
            max_blocks_per_sm: self.max_blocks_per_sm,
            fp32_lanes_per_sm: self.fp32_lanes_per_sm,
            clock_mhz: self.clock_mhz,
            dram_gbps: self.dram_gbps,
            l2_bytes: self.l2_mib << 20,
        }
    }
}

/// A transfer rate in GB/s, the unit of every bandwidth nmtune stores and reports
/// ([`GpuProfile::dram_gbps`], the report's `achieved_gbps` and `copy_gbps`): 10⁹ bytes a second.
pub fn gbps(bytes: f64, seconds: f64) -> f64 {
    bytes / seconds / 1e9
}

const KIB: u32 = 1024;

pub const BUILTIN_PROFILES: &[BuiltinProfile] = &[
    BuiltinProfile {
        name: "3090",
        aliases: &["rtx3090", "rtx-3090"],
        full_name: "NVIDIA GeForce RTX 3090",
        cc: (8, 6),
        sm_count: 82,
        smem_per_block_optin: 99 * KIB,
        smem_per_sm: 100 * KIB,
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        fp32_lanes_per_sm: 128,
        clock_mhz: 1695,
        dram_gbps: 936.0,
        l2_mib: 6,
    },
    BuiltinProfile {
        name: "4090",
        aliases: &["rtx4090", "rtx-4090"],
        full_name: "NVIDIA GeForce RTX 4090",
        cc: (8, 9),
        sm_count: 128,
        smem_per_block_optin: 99 * KIB,
        smem_per_sm: 100 * KIB,
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        fp32_lanes_per_sm: 128,
        clock_mhz: 2520,
        dram_gbps: 1008.0,
        l2_mib: 72,
    },
    BuiltinProfile {
        name: "a100",
        aliases: &["a100-80g", "a100-pcie"],
        full_name: "NVIDIA A100 80GB PCIe",
        cc: (8, 0),
        sm_count: 108,
        smem_per_block_optin: 163 * KIB,
        smem_per_sm: 164 * KIB,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        fp32_lanes_per_sm: 64,
        clock_mhz: 1410,
        dram_gbps: 1935.0,
        l2_mib: 40,
    },
    BuiltinProfile {
        name: "h100",
        aliases: &["h100-sxm", "h100-80g"],
        full_name: "NVIDIA H100 80GB HBM3",
        cc: (9, 0),
        sm_count: 132,
        smem_per_block_optin: 227 * KIB,
        smem_per_sm: 228 * KIB,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        fp32_lanes_per_sm: 128,
        clock_mhz: 1980,
        dram_gbps: 3350.0,
        l2_mib: 50,
    },
    BuiltinProfile {
        name: "h200",
        aliases: &["h200-sxm", "h200-141g"],
        full_name: "NVIDIA H200",
        cc: (9, 0),
        sm_count: 132,
        smem_per_block_optin: 227 * KIB,
        smem_per_sm: 228 * KIB,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        fp32_lanes_per_sm: 128,
        clock_mhz: 1980,
        dram_gbps: 4800.0,
        l2_mib: 50,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hopper_peak_matches_design_card() {
        let h200 = GpuProfile::builtin("H200").unwrap();
        let tflops = h200.peak_fp32_flops() / 1e12;
        assert!((tflops - 66.9).abs() < 0.5, "{tflops}");
        assert_eq!(h200.arch(), "sm_90");
        assert!(GpuProfile::builtin("v100").is_none());
    }

    #[test]
    fn gigabytes_are_decimal() {
        assert_eq!(gbps(3.0e9, 1.0), 3.0);
        assert_eq!(gbps(2.0e9, 0.5), 4.0);
    }
}
