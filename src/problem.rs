//! The problem a kernel solves: `C = alpha * A ⊗ (B', D) + beta * C` with A dense m×k
//! (row-major or column-major: [`ALayout`]), B pruned vector-wise N:M along k with vector length L, C m×n row-major.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// Largest m of a decode-sized problem (one new token per sequence for up to 16 sequences).
pub const DECODE_MAX_M: usize = 16;

/// The vector length of element-wise N:M: every column of B keeps its own rows.
pub const ELEMENT_WISE_L: usize = 1;

/// Whether vector length `l` is element-wise N:M ([`ELEMENT_WISE_L`]): the one rule that sends
/// a problem to the element-wise kernel family and its D to the device as bytes.
pub fn is_element_wise(l: usize) -> bool {
    l == ELEMENT_WISE_L
}

/// Why a problem or sparsity pattern is not valid.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProblemError {
    #[error("N:M pattern {n}:{m}: N must be at least 1")]
    ZeroN { n: u32, m: u32 },
    #[error("N:M pattern {n}:{m}: N must not exceed M")]
    NGreaterThanM { n: u32, m: u32 },
    #[error("N:M pattern {n}:{m}: M must be between 1 and 128")]
    MOutOfRange { n: u32, m: u32 },
    #[error("cannot parse sparsity '{text}': {why}")]
    BadSparsity { text: String, why: String },
    #[error("'{text}' is neither N:M nor a percentage: write the pattern as N:M (8:32) or the share of weights pruned with a % sign (75%, with M = 32)")]
    NotExplicit { text: String },
    #[error("shape m={m} n={n} k={k}: every dimension must be at least 1")]
    EmptyDimension { m: usize, n: usize, k: usize },
    #[error("k={k} is not a multiple of M={m_window}; pad the weight first (format::prune_and_compress pads)")]
    KNotMultipleOfM { k: usize, m_window: u32 },
    #[error("n={n} is not a multiple of the vector length L={l}; pad the weight first")]
    NNotMultipleOfL { n: usize, l: usize },
    #[error("m={m} must be a multiple of 4 for column-major A (its columns are copied 16 bytes at a time); pad A's rows")]
    ColMajorRows { m: usize },
    #[error("unknown A layout '{text}': use row (row-major) or col (column-major)")]
    BadLayout { text: String },
    #[error("unknown data type '{text}': use f32, bf16 or f16")]
    BadDtype { text: String },
    #[error("vector length L={l} must be between 1 and 128")]
    LOutOfRange { l: usize },
    #[error(
        "shape m={m} n={n} k={k} is too large: element counts must fit in 32-bit kernel indices"
    )]
    TooLarge { m: usize, n: usize, k: usize },
}

/// For a small enum of names (its `ALL` and `as_str`, as the shapes files, the CLI, the
/// database and JSON spell them): `parse`, the inverse of `as_str`; `FromStr`, which ignores
/// surrounding blanks and case and answers anything else with the one-line error `$error`;
/// and `Display` as `as_str`.
macro_rules! named_values {
    ($type:ident, $error:ident) => {
        impl $type {
            #[doc = concat!("Inverse of [`", stringify!($type), "::as_str`].")]
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|v| v.as_str() == text)
            }
        }

        impl std::str::FromStr for $type {
            type Err = ProblemError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::parse(&text.trim().to_ascii_lowercase()).ok_or_else(|| ProblemError::$error {
                    text: text.to_string(),
                })
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// An N:M pattern: in every window of M consecutive rows of k, N rows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct NmPattern {
    pub n: u32,
    pub m: u32,
}

impl NmPattern {
    pub fn new(n: u32, m: u32) -> Result<Self, ProblemError> {
        if n == 0 {
            return Err(ProblemError::ZeroN { n, m });
        }
        if m == 0 || m > 128 {
            return Err(ProblemError::MOutOfRange { n, m });
        }
        if n > m {
            return Err(ProblemError::NGreaterThanM { n, m });
        }
        Ok(Self { n, m })
    }

    /// Fraction of rows kept, N/M.
    pub fn density(&self) -> f64 {
        self.n as f64 / self.m as f64
    }

    /// Fraction of rows pruned, 1 - N/M.
    pub fn sparsity(&self) -> f64 {
        1.0 - self.density()
    }

    /// Dense GEMM is the case N = M.
    pub fn is_dense(&self) -> bool {
        self.n == self.m
    }

    /// Parse "8:32", or a sparsity fraction such as "0.75" / "75%" with the window `default_m`.
    pub fn parse(text: &str, default_m: u32) -> Result<Self, ProblemError> {
        let bad = |why: &str| ProblemError::BadSparsity {
            text: text.to_string(),
            why: why.to_string(),
        };
        let t = text.trim();
        if let Some((n, m)) = t.split_once(':') {
            let n: u32 = n.trim().parse().map_err(|_| bad("N is not an integer"))?;
            let m: u32 = m.trim().parse().map_err(|_| bad("M is not an integer"))?;
            return Self::new(n, m);
        }
        let (num, scale) = match t.strip_suffix('%') {
            Some(p) => (p.trim(), 100.0),
            None => (t, 1.0),
        };
        let sparsity: f64 = num.parse().map_err(|_| bad("expected N:M or a fraction"))?;
        Self::from_sparsity(sparsity / scale, default_m).map_err(|e| match e {
            ProblemError::BadSparsity { why, .. } => bad(&why),
            other => other,
        })
    }

    /// A pattern as a person writes it on a command line or in a call: `N:M` (`8:32`), or the
    /// share of weights pruned as a percentage with M = 32 (`75%`). A bare number is refused:
    /// `0` could be 0 % pruned (dense) or a typo, and 0.75 a fraction kept or pruned. The one
    /// home of that rule: the CLI's `--nm` and the Python package read patterns with it.
    pub fn parse_explicit(text: &str) -> Result<Self, ProblemError> {
        let t = text.trim();
        if !t.contains(':') && !t.ends_with('%') {
            return Err(ProblemError::NotExplicit {
                text: text.to_string(),
            });
        }
        Self::parse(t, 32)
    }

    /// The pattern with window `m` whose sparsity is exactly `sparsity` (0 ≤ s < 1).
    pub fn from_sparsity(sparsity: f64, m: u32) -> Result<Self, ProblemError> {
        let bad = |why: String| ProblemError::BadSparsity {
            text: sparsity.to_string(),
            why,
        };
        if !(0.0..1.0).contains(&sparsity) {
            return Err(bad("sparsity must be in [0, 1)".into()));
        }
        let kept = (1.0 - sparsity) * m as f64;
        let n = kept.round();
        if (kept - n).abs() > 1e-9 {
            return Err(bad(format!("{sparsity} is not a multiple of 1/{m}")));
        }
        Self::new(n as u32, m)
    }
}

impl fmt::Display for NmPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.n, self.m)
    }
}

/// Layout of the dense operand A (m×k). Part of the problem key: a kernel is compiled for one
/// layout, and the runtime never transposes A on the hot path.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    Default,
    PartialOrd,
    Ord,
    clap::ValueEnum,
)]
pub enum ALayout {
    /// Row-major: element (i, j) at `i·k + j` (activations as PyTorch holds them).
    #[default]
    #[serde(rename = "row")]
    #[value(name = "row")]
    RowMajor,
    /// Column-major (k-major): element (i, j) at `j·m + i`, the NM-SpMM paper's layout, in
    /// which a kept row of k is contiguous along m and copies 16 bytes at a time.
    #[serde(rename = "col")]
    #[value(name = "col")]
    ColMajor,
}

impl ALayout {
    /// Every layout, in key order.
    pub const ALL: [ALayout; 2] = [ALayout::RowMajor, ALayout::ColMajor];

    /// The name used in shapes files, the CLI, the database and JSON: `row` or `col`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ALayout::RowMajor => "row",
            ALayout::ColMajor => "col",
        }
    }

    /// The other layout.
    pub fn other(&self) -> ALayout {
        match self {
            ALayout::RowMajor => ALayout::ColMajor,
            ALayout::ColMajor => ALayout::RowMajor,
        }
    }
}

named_values!(ALayout, BadLayout);

/// The element type of A, B' and C (products accumulate in FP32 whatever it is). Part of the
/// problem key: a kernel is compiled for one type, and every entry's baseline is cuBLAS in the
/// same type. `f32` runs on the CUDA cores (the FP32 families); `bf16` and `f16` are for the
/// tensor-core family (`codegen::tc`). Its design:
/// docs/design.md "Tensor cores: the kernel family".
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    Default,
    PartialOrd,
    Ord,
    clap::ValueEnum,
)]
pub enum Dtype {
    #[default]
    #[serde(rename = "f32")]
    #[value(name = "f32")]
    F32,
    /// bfloat16: 8 significant bits, FP32's exponent range.
    #[serde(rename = "bf16")]
    #[value(name = "bf16")]
    Bf16,
    /// IEEE half precision: 11 significant bits.
    #[serde(rename = "f16")]
    #[value(name = "f16")]
    F16,
}

impl Dtype {
    /// Every type, in key order.
    pub const ALL: [Dtype; 3] = [Dtype::F32, Dtype::Bf16, Dtype::F16];

    /// Bytes of one element of A, B' or C.
    pub fn bytes(&self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::F16 => 2,
        }
    }

    /// The name used in shapes files, the CLI, the database and JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }
}

named_values!(Dtype, BadDtype);

/// One N:M SpMM problem: the key of the tuning database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub nm: NmPattern,
    /// Vector length: columns of B that share one kept-row pattern.
    pub l: usize,
    #[serde(default)]
    pub a_layout: ALayout,
    #[serde(default)]
    pub dtype: Dtype,
}

impl Problem {
    pub fn new(
        m: usize,
        n: usize,
        k: usize,
        nm: NmPattern,
        l: usize,
    ) -> Result<Self, ProblemError> {
        // The pattern's fields are public: re-check it, a hand-built one may have M = 0.
        let nm = NmPattern::new(nm.n, nm.m)?;
        if m == 0 || n == 0 || k == 0 {
            return Err(ProblemError::EmptyDimension { m, n, k });
        }
        if l == 0 || l > 128 {
            return Err(ProblemError::LOutOfRange { l });
        }
        if k % nm.m as usize != 0 {
            return Err(ProblemError::KNotMultipleOfM { k, m_window: nm.m });
        }
        if n % l != 0 {
            return Err(ProblemError::NNotMultipleOfL { n, l });
        }
        let limit = i32::MAX as u128;
        let (m128, n128, k128) = (m as u128, n as u128, k as u128);
        if m128 * k128 > limit || m128 * n128 > limit || k128 * n128 > limit {
            return Err(ProblemError::TooLarge { m, n, k });
        }
        Ok(Self {
            m,
            n,
            k,
            nm,
            l,
            a_layout: ALayout::RowMajor,
            dtype: Dtype::F32,
        })
    }

    /// A decode-sized problem (m ≤ [`DECODE_MAX_M`]): the weight's bytes, read once from
    /// DRAM, set its time, so it is timed over rotating weight copies and the decode family
    /// joins its candidates.
    pub fn is_decode(&self) -> bool {
        self.m <= DECODE_MAX_M
    }

    /// Element-wise N:M (L = 1, [`is_element_wise`]): served by its own kernel family.
    pub fn is_element_wise(&self) -> bool {
        is_element_wise(self.l)
    }

    /// Rows of the compressed weight B': k·N/M.
    pub fn w(&self) -> usize {
        self.k / self.nm.m as usize * self.nm.n as usize
    }

    /// Column groups of the index matrix D: n/L.
    pub fn q(&self) -> usize {
        self.n / self.l
    }

    /// Floating-point operations actually performed: 2·m·n·w.
    pub fn sparse_flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.w() as f64
    }

    /// Dense-equivalent operations 2·m·n·k, the figure "effective TFLOP/s" is quoted in.
    pub fn dense_flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The same problem with A in `layout`. Column-major A needs m to be a multiple of 4.
    pub fn with_layout(self, layout: ALayout) -> Result<Self, ProblemError> {
        if layout == ALayout::ColMajor && self.m % 4 != 0 {
            return Err(ProblemError::ColMajorRows { m: self.m });
        }
        Ok(Self {
            a_layout: layout,
            ..self
        })
    }

    /// The same problem in element type `dtype`.
    pub fn with_dtype(self, dtype: Dtype) -> Self {
        Self { dtype, ..self }
    }

    /// The same weight (n, k, N:M, L), A layout and element type at another number of rows m.
    pub fn with_m(&self, m: usize) -> Result<Self, ProblemError> {
        Ok(Self::new(m, self.n, self.k, self.nm, self.l)?
            .with_layout(self.a_layout)?
            .with_dtype(self.dtype))
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "m{}_n{}_k{}_{}_l{}",
            self.m, self.n, self.k, self.nm, self.l
        )?;
        if self.a_layout != ALayout::RowMajor {
            write!(f, "_a{}", self.a_layout)?;
        }
        // FP32 problems keep the names they had before the type was part of the key.
        match self.dtype {
            Dtype::F32 => Ok(()),
            dtype => write!(f, "_{dtype}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_patterns_are_n_m_or_a_percentage_never_a_bare_number() {
        assert_eq!(
            NmPattern::parse_explicit(" 8:32 ").unwrap(),
            NmPattern { n: 8, m: 32 }
        );
        assert_eq!(
            NmPattern::parse_explicit("75%").unwrap(),
            NmPattern { n: 8, m: 32 }
        );
        for bare in ["0", "0.75", "", "eight"] {
            let err = NmPattern::parse_explicit(bare).unwrap_err();
            assert_eq!(err, ProblemError::NotExplicit { text: bare.into() });
            assert!(err.to_string().contains("is neither N:M nor a percentage"));
        }
        assert!(matches!(
            NmPattern::parse_explicit("9:8"),
            Err(ProblemError::NGreaterThanM { .. })
        ));
    }

    #[test]
    fn parses_ratio_fraction_and_percent() {
        assert_eq!(
            NmPattern::parse("8:32", 32).unwrap(),
            NmPattern { n: 8, m: 32 }
        );
        assert_eq!(
            NmPattern::parse("0.75", 32).unwrap(),
            NmPattern { n: 8, m: 32 }
        );
        assert_eq!(
            NmPattern::parse("62.5%", 32).unwrap(),
            NmPattern { n: 12, m: 32 }
        );
        assert!(matches!(
            NmPattern::parse("33:32", 32),
            Err(ProblemError::NGreaterThanM { .. })
        ));
        assert!(NmPattern::parse("0.3", 32).is_err());
        assert!(NmPattern::parse("0:4", 32).is_err());
    }

    #[test]
    fn layouts_parse_from_their_names_only() {
        assert_eq!(" Col ".parse::<ALayout>().unwrap(), ALayout::ColMajor);
        assert_eq!("row".parse::<ALayout>().unwrap(), ALayout::RowMajor);
        let err = "diag".parse::<ALayout>().unwrap_err().to_string();
        assert!(err.contains("'diag'") && err.contains("row") && err.contains("col"));
        let p = Problem::new(6, 8, 8, NmPattern::new(2, 4).unwrap(), 4).unwrap();
        assert!(p.with_layout(ALayout::ColMajor).is_err());
        assert_eq!(p.with_m(8).unwrap().a_layout, ALayout::RowMajor);
    }

    #[test]
    fn problem_rejects_unpadded_and_oversized_shapes() {
        let nm = NmPattern::new(2, 4).unwrap();
        assert!(Problem::new(4, 8, 6, nm, 4).is_err());
        assert!(Problem::new(4, 6, 8, nm, 4).is_err());
        assert!(Problem::new(1 << 20, 1 << 20, 8, nm, 4).is_err());
        let p = Problem::new(3, 8, 8, nm, 4).unwrap();
        assert_eq!((p.w(), p.q()), (4, 2));
    }
}
