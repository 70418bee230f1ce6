//! Measurements as text: one JSON object per line holding every field of one database row,
//! lines sorted by (GPU, problem, kernel, source, template checksum, date), so that exporting
//! the same database twice gives the same bytes and a re-tune diffs line by line.
//!
//! Floats are written in their shortest exact form and read back bit for bit (serde_json's
//! `float_roundtrip`); the infinities SQLite can hold are written as the strings `"inf"` and
//! `"-inf"`. A row without a copy bandwidth has no `copy_gbps` field at all, and an FP32
//! problem no `dtype` field, so that files written before those fields existed remain their
//! databases' exact export.

use super::ReplayError;
use crate::codegen::KernelConfig;
use crate::db::{Measurement, Source, Status};
use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::path::Path;

/// One line of the file; the field order is the column order on disk.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    gpu: String,
    m: usize,
    n: usize,
    k: usize,
    nm: String,
    l: usize,
    a_layout: String,
    /// The element type where it is not FP32 (older files have no such field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dtype: Option<String>,
    /// The kernel name spells the whole configuration ([`KernelConfig::parse_name`]).
    kernel: String,
    status: Status,
    source: Source,
    median_us: Option<Float>,
    min_us: Option<Float>,
    runs: u32,
    verified: bool,
    max_rel_error: Option<Float>,
    cublas_us: Option<Float>,
    /// Only where the row has one: files exported before schema 2 have no such field, and a
    /// database read from one must export them again byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    copy_gbps: Option<Float>,
    registers: Option<u32>,
    spill_bytes: Option<u32>,
    error: Option<String>,
    template_checksum: String,
    /// Only where the row has one (schema 4 on), for the same reason as `copy_gbps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kernel_checksum: Option<String>,
    tool_version: String,
    created_at: String,
}

/// An f64 that survives JSON even when infinite.
#[derive(Debug, Clone, Copy)]
struct Float(f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            v if v.is_finite() => s.serialize_f64(v),
            v if v.is_nan() => s.serialize_str("nan"),
            v if v > 0.0 => s.serialize_str("inf"),
            _ => s.serialize_str("-inf"),
        }
    }
}

impl<'de> Deserialize<'de> for Float {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FloatVisitor)
    }
}

struct FloatVisitor;

impl Visitor<'_> for FloatVisitor {
    type Value = Float;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, \"inf\", \"-inf\" or \"nan\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Float, E> {
        Ok(Float(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Float, E> {
        Ok(Float(v as f64))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Float, E> {
        Ok(Float(v as f64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Float, E> {
        match v {
            "inf" => Ok(Float(f64::INFINITY)),
            "-inf" => Ok(Float(f64::NEG_INFINITY)),
            "nan" => Ok(Float(f64::NAN)),
            other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
        }
    }
}

fn float(v: Option<f64>) -> Option<Float> {
    v.map(Float)
}

fn unfloat(v: Option<Float>) -> Option<f64> {
    v.map(|f| f.0)
}

impl Line {
    fn from_measurement(m: &Measurement) -> Self {
        let p = &m.problem;
        Self {
            gpu: m.gpu.clone(),
            m: p.m,
            n: p.n,
            k: p.k,
            nm: p.nm.to_string(),
            l: p.l,
            a_layout: p.a_layout.as_str().to_string(),
            dtype: (p.dtype != Dtype::F32).then(|| p.dtype.as_str().to_string()),
            kernel: m.kernel_name(),
            status: m.status,
            source: m.source,
            median_us: float(m.median_us),
            min_us: float(m.min_us),
            runs: m.runs,
            verified: m.verified,
            max_rel_error: float(m.max_rel_error),
            cublas_us: float(m.cublas_us),
            copy_gbps: float(m.copy_gbps),
            registers: m.registers,
            spill_bytes: m.spill_bytes,
            error: m.error.clone(),
            template_checksum: m.template_checksum.clone(),
            kernel_checksum: m.kernel_checksum.clone(),
            tool_version: m.tool_version.clone(),
            created_at: m.created_at.clone(),
        }
    }

    /// Back to a measurement, checking what JSON alone cannot: a valid problem and a kernel
    /// name that spells a configuration of that problem's pattern.
    fn into_measurement(self) -> Result<Measurement, String> {
        let problem = self.problem()?;
        let config = KernelConfig::parse_name(&self.kernel)
            .filter(|c| c.name() == self.kernel)
            .ok_or_else(|| format!("'{}' is not an nmtune kernel name", self.kernel))?;
        if config.nm != problem.nm || config.l as usize != problem.l {
            return Err(format!(
                "kernel {} is for {} L={}, the problem is {} L={}",
                self.kernel, config.nm, config.l, problem.nm, problem.l
            ));
        }
        if config.a_layout() != problem.a_layout {
            return Err(format!(
                "kernel {} takes {}-major A, the line's a_layout is {}",
                self.kernel,
                config.a_layout(),
                problem.a_layout
            ));
        }
        if self.gpu.trim().is_empty() {
            return Err("empty gpu name".into());
        }
        let row = Measurement {
            gpu: self.gpu,
            problem,
            config,
            status: self.status,
            error: self.error,
            median_us: unfloat(self.median_us),
            min_us: unfloat(self.min_us),
            runs: self.runs,
            verified: self.verified,
            max_rel_error: unfloat(self.max_rel_error),
            cublas_us: unfloat(self.cublas_us),
            copy_gbps: unfloat(self.copy_gbps),
            registers: self.registers,
            spill_bytes: self.spill_bytes,
            template_checksum: self.template_checksum,
            kernel_checksum: self.kernel_checksum,
            source: self.source,
            tool_version: self.tool_version,
            created_at: self.created_at,
        };
        match row.impossible() {
            Some(why) => Err(why),
            None => Ok(row),
        }
    }

    fn problem(&self) -> Result<Problem, String> {
        let (n, m) = self
            .nm
            .split_once(':')
            .ok_or_else(|| format!("nm '{}' is not of the form N:M", self.nm))?;
        let int = |t: &str| t.trim().parse::<u32>().ok();
        let (Some(n), Some(m)) = (int(n), int(m)) else {
            return Err(format!("nm '{}' is not of the form N:M", self.nm));
        };
        let nm = NmPattern::new(n, m).map_err(|e| e.to_string())?;
        let layout = ALayout::parse(&self.a_layout)
            .ok_or_else(|| format!("unknown a_layout '{}' (expected row or col)", self.a_layout))?;
        let dtype = match &self.dtype {
            None => Dtype::F32,
            Some(text) => text.parse::<Dtype>().map_err(|e| e.to_string())?,
        };
        Problem::new(self.m, self.n, self.k, nm, self.l)
            .and_then(|p| p.with_layout(layout))
            .map(|p| p.with_dtype(dtype))
            .map_err(|e| e.to_string())
    }
}

/// The export order: GPU, problem key, kernel, source, template checksum, date.
fn export_order(a: &Measurement, b: &Measurement) -> Ordering {
    let key = |m: &Measurement| {
        let p = &m.problem;
        (
            m.gpu.clone(),
            (p.m, p.n, p.k, p.nm.n, p.nm.m, p.l, p.a_layout.as_str()),
            p.dtype,
            m.kernel_name(),
            m.source.as_str(),
            m.template_checksum.clone(),
            m.created_at.clone(),
        )
    };
    key(a).cmp(&key(b))
}

/// Every row as one JSON line, sorted by [`export_order`].
pub fn to_text(rows: &[Measurement]) -> String {
    let mut sorted: Vec<&Measurement> = rows.iter().collect();
    sorted.sort_by(|a, b| export_order(a, b));
    let mut out = String::new();
    for m in sorted {
        // Plain data with string keys: serialising it cannot fail.
        out += &serde_json::to_string(&Line::from_measurement(m)).unwrap_or_default();
        out.push('\n');
    }
    out
}

/// Parse the text of a measurements file; `path` names it in errors. Blank lines are skipped.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Measurement>, ReplayError> {
    let mut rows = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let fail = |detail: String| ReplayError::Line {
            path: path.to_path_buf(),
            line: index + 1,
            detail,
        };
        let line: Line = serde_json::from_str(raw).map_err(|e| fail(json_detail(&e)))?;
        rows.push(line.into_measurement().map_err(fail)?);
    }
    Ok(rows)
}

/// serde_json's message with its column, without its "at line 1" (every line is line 1).
fn json_detail(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    format!("column {}: {message}", err.column())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::{ACopy, WarpLayout};

    fn row(median: Option<f64>, m_s: u32) -> Measurement {
        let nm = NmPattern::new(8, 32).unwrap();
        Measurement {
            gpu: "h200".into(),
            problem: Problem::new(256, 4096, 4096, nm, 32).unwrap(),
            config: KernelConfig {
                a_copy: ACopy::Row4,
                m_s,
                n_s: 64,
                k_s: 64,
                m_t: 8,
                n_t: 4,
                warp: WarpLayout::new(4, 8),
                nm,
                l: 32,
                packing: true,
                stages: 2,
                min_blocks: 1,
                split_k: 1,
                row_chunk: 0,
                stream_k: false,
                tma: false,
                cluster_sum: false,
                dtype: Dtype::F32,
            },
            status: Status::Ok,
            error: None,
            median_us: median,
            min_us: median.map(|t| t * 0.97),
            runs: 10,
            verified: true,
            max_rel_error: Some(f64::INFINITY),
            cublas_us: Some(0.1 + 0.2),
            copy_gbps: None,
            registers: Some(128),
            spill_bytes: None,
            template_checksum: "abc".into(),
            kernel_checksum: None,
            source: Source::Measured,
            tool_version: "0.1.0".into(),
            created_at: "2026-11-22T03:10:35.483312040+00:00".into(),
        }
    }

    #[test]
    fn round_trips_bit_for_bit_and_sorts() {
        let rows = vec![row(Some(54.48000133037567), 64), row(None, 32)];
        let text = to_text(&rows);
        let back = parse(&text, Path::new("x.jsonl")).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].config.m_s, 32, "sorted by kernel name");
        assert_eq!(
            back[1].median_us.unwrap().to_bits(),
            54.48000133037567f64.to_bits()
        );
        assert_eq!(
            back[1].cublas_us.unwrap().to_bits(),
            (0.1f64 + 0.2).to_bits()
        );
        assert_eq!(back[1].max_rel_error, Some(f64::INFINITY));
        assert_eq!(to_text(&back), text);
    }

    #[test]
    fn copy_bandwidth_round_trips_and_is_left_out_when_absent() {
        let without = to_text(&[row(Some(3.0), 64)]);
        assert!(!without.contains("copy_gbps"), "{without}");
        let mut measured = row(Some(3.0), 64);
        measured.copy_gbps = Some(20_000.0 / 7.0);
        let with = to_text(&[measured.clone()]);
        assert!(
            with.contains("\"cublas_us\":0.30000000000000004,\"copy_gbps\":2857.1428571428573,"),
            "{with}"
        );
        let back = parse(&with, Path::new("x.jsonl")).unwrap();
        assert_eq!(back, [measured]);
        assert_eq!(to_text(&back), with);
        // A file of an older export (no field) reads as no bandwidth, and exports the same.
        let old = parse(&without, Path::new("x.jsonl")).unwrap();
        assert_eq!(old[0].copy_gbps, None);
        assert_eq!(to_text(&old), without);
        for bad in ["0", "-5", "\"inf\""] {
            let text = with.replace("2857.1428571428573", bad);
            let err = parse(&text, Path::new("x.jsonl")).unwrap_err().to_string();
            assert!(
                err.contains("copy_gbps") && err.contains("not a bandwidth"),
                "{err}"
            );
        }
    }

    #[test]
    fn kernel_checksum_round_trips_and_is_left_out_when_absent() {
        let without = to_text(&[row(Some(3.0), 64)]);
        assert!(!without.contains("kernel_checksum"), "{without}");
        let mut measured = row(Some(3.0), 64);
        measured.kernel_checksum = Some("f00d".into());
        let with = to_text(&[measured.clone()]);
        assert!(
            with.contains("\"template_checksum\":\"abc\",\"kernel_checksum\":\"f00d\","),
            "{with}"
        );
        let back = parse(&with, Path::new("x.jsonl")).unwrap();
        assert_eq!(back, [measured]);
        assert_eq!(to_text(&back), with);
        let old = parse(&without, Path::new("x.jsonl")).unwrap();
        assert_eq!(old[0].kernel_checksum, None);
        assert_eq!(to_text(&old), without);
    }

    #[test]
    fn column_major_rows_round_trip() {
        let mut col = row(Some(12.5), 64);
        col.problem = col.problem.with_layout(ALayout::ColMajor).unwrap();
        col.config.a_copy = ACopy::Col16;
        let rows = vec![row(Some(12.5), 64), col.clone()];
        let text = to_text(&rows);
        let col_line = text.lines().find(|l| l.contains("\"a_layout\":\"col\""));
        let col_line = col_line.expect("a col line");
        assert!(
            col_line.contains("\"kernel\":\"nm_spmm_f32_acol16_ms64"),
            "{text}"
        );
        let back = parse(&text, Path::new("x.jsonl")).unwrap();
        assert!(back.contains(&col) && back.contains(&rows[0]), "{back:?}");
        assert_eq!(to_text(&back), text);
        // A line whose kernel takes the other layout is refused.
        let crossed = col_line.replace("\"col\"", "\"row\"");
        let err = parse(&crossed, Path::new("x.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("takes col-major A"), "{err}");
        let odd = col_line.replace("\"m\":256", "\"m\":258");
        let err = parse(&odd, Path::new("x.jsonl")).unwrap_err().to_string();
        assert!(err.contains("multiple of 4"), "{err}");
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let good = to_text(&[row(Some(1.0), 64)]);
        let cases = [
            ("{\"gpu\": ", "column"),
            (
                &good.replace("\"runs\":10", "\"runs\":10,\"extra\":1"),
                "unknown field",
            ),
            (
                &good.replace("nm_spmm_f32_arow4_ms64", "nm_spmm_f32_arow4_msX"),
                "kernel name",
            ),
            (
                &good.replace("\"nm\":\"8:32\"", "\"nm\":\"12:32\""),
                "is for 8:32",
            ),
            (&good.replace("\"k\":4096", "\"k\":4100"), "multiple of M"),
            (
                &good.replace("\"a_layout\":\"row\"", "\"a_layout\":\"diag\""),
                "unknown a_layout 'diag'",
            ),
            (
                &good.replace("\"status\":\"ok\"", "\"status\":\"fine\""),
                "unknown variant",
            ),
            (
                &good.replace("\"median_us\":1.0", "\"median_us\":-5"),
                "median_us -5 is not a time",
            ),
            (
                &good.replace("\"cublas_us\":0.30000000000000004", "\"cublas_us\":1e300"),
                "cublas_us 1e300 is not a time",
            ),
            (
                &good.replace("\"min_us\":0.97", "\"min_us\":\"nan\""),
                "min_us NaN is not a time",
            ),
            (
                &good.replace("\"min_us\":0.97", "\"min_us\":2.0"),
                "min_us 2 is above median_us 1",
            ),
        ];
        for (bad, what) in cases {
            let text = format!("{good}\n{bad}\n");
            let err = parse(&text, Path::new("m.jsonl")).unwrap_err().to_string();
            assert!(err.starts_with("m.jsonl:3: "), "{err}");
            assert!(err.contains(what), "{err}");
        }
    }
}
