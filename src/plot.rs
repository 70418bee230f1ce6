//! Roofline plots of a tuning database's best entries (`nmtune report --plot`).
//!
//! y is the real FP32 work done per second, 2·m·n·k·N/M over the median time. Each roof is
//! drawn against the intensity it applies to, so that no measured point can sit above its roof
//! (docs/design.md "The performance model"): a dot at the real FLOPs over the bytes the kernel
//! must move from DRAM (every operand once) under the DRAM roof, and a ring at the real FLOPs
//! over the bytes its tiles read from L2 (every k-tile of every block) under the L2 roof the
//! model assumes. A cross marks the model's predicted rate at the DRAM intensity. The FP32
//! peak caps both roofs; each problem is drawn in its sparsity's colour. The roofs are the
//! FP32 families': BF16 and FP16 entries (the tensor-core family, whose peak and tiles are
//! other) are left out of the plot.
//!
//! Text is drawn with an embedded DejaVu Sans Mono (`assets/fonts`), so neither fontconfig nor
//! freetype is needed.

use crate::codegen::KernelConfig;
use crate::db::{Measurement, Source};
use crate::format::MinBytes;
use crate::gpu_profile::GpuProfile;
use crate::model;
use crate::problem::{Dtype, NmPattern, Problem};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use thiserror::Error;

/// Errors of the plot layer.
#[derive(Debug, Error)]
pub enum PlotError {
    #[error("{}: unknown plot format (use a .png or .svg file name)", path.display())]
    UnknownFormat { path: PathBuf },
    #[error(
        "nothing to plot: no FP32 best entry with a time (the roofline leaves BF16 and FP16 out)"
    )]
    Empty,
    #[error("cannot draw {}: {detail}", path.display())]
    Draw { path: PathBuf, detail: String },
}

/// One problem's best entry on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct RooflinePoint {
    pub nm: NmPattern,
    /// Real FLOPs over the bytes that must cross DRAM ([`dram_bytes`]), FLOP/byte.
    pub dram_intensity: f64,
    /// Real FLOPs over the bytes the kernel's tiles read from L2 ([`l2_bytes`]), FLOP/byte.
    pub l2_intensity: f64,
    /// Real FP32 work (2·m·n·k·N/M) per second at the median time, TFLOP/s.
    pub achieved_tflops: f64,
    /// The same work at the model's predicted time, TFLOP/s.
    pub predicted_tflops: f64,
    pub source: Source,
}

/// Bytes a kernel must move between DRAM and the SMs at the least ([`MinBytes`]): A, B' and D
/// read once and C written once.
pub fn dram_bytes(problem: &Problem) -> f64 {
    MinBytes::of(problem).total() as f64
}

/// Bytes the kernel's tiles read from L2, plus C (and split-K's partial sums) written: every
/// block row of C reads all of B' and D, every block column the A columns each k-tile needs
/// (all k_s of them, or with packing the expected distinct ones). Edge tiles read only what
/// lies inside the operands.
pub fn l2_bytes(cfg: &KernelConfig, problem: &Problem) -> f64 {
    let (m, n, k) = (problem.m as f64, problem.n as f64, problem.k as f64);
    let (w, q) = (problem.w() as f64, problem.q() as f64);
    let m_tiles = (problem.m as f64 / cfg.m_s as f64).ceil();
    let n_tiles = (problem.n as f64 / cfg.n_s as f64).ceil();
    let a_columns = if cfg.packing {
        let per_tile = model::expected_packed_columns(cfg).min(cfg.a_rows() as f64);
        k / cfg.k_s as f64 * per_tile
    } else {
        k
    };
    4.0 * (n_tiles * m * a_columns + m_tiles * (w * n + w * q) + cfg.split_k as f64 * m * n)
}

/// Points of every FP32 best entry that has a time.
pub fn roofline_points(best: &[Measurement], profile: &GpuProfile) -> Vec<RooflinePoint> {
    best.iter()
        .filter(|m| m.problem.dtype == Dtype::F32)
        .filter_map(|m| {
            let t = m.median_us.filter(|t| t.is_finite() && *t > 0.0)? * 1e-6;
            let work = m.problem.sparse_flops();
            let predicted = model::predict(&m.config, &m.problem, profile).time_s;
            Some(RooflinePoint {
                nm: m.problem.nm,
                dram_intensity: work / dram_bytes(&m.problem),
                l2_intensity: work / l2_bytes(&m.config, &m.problem),
                achieved_tflops: work / t / 1e12,
                predicted_tflops: work / predicted / 1e12,
                source: m.source,
            })
        })
        .collect()
}

const SIZE: (u32, u32) = (1100, 750);
const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSansMono.ttf");

/// Register the embedded font under the family names plotters asks for, once.
fn register_fonts() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            for style in [FontStyle::Normal, FontStyle::Bold] {
                plotters::style::register_font(family, style, FONT)
                    .map_err(|_| "the embedded font does not load".to_string())?;
            }
        }
        Ok(())
    })
    .clone()
}

/// Draw the roofline of `points` into `path` (.png or .svg).
pub fn draw_roofline(
    points: &[RooflinePoint],
    profile: &GpuProfile,
    title: &str,
    path: &Path,
) -> Result<(), PlotError> {
    if points.is_empty() {
        return Err(PlotError::Empty);
    }
    let failed = |detail: String| PlotError::Draw {
        path: path.to_path_buf(),
        detail,
    };
    register_fonts().map_err(failed)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(ext.to_ascii_lowercase().as_str(), "png" | "svg") {
        return Err(PlotError::UnknownFormat {
            path: path.to_path_buf(),
        });
    }
    // Open the file first: the drawing backends report a missing folder or a refused write
    // as a dump of nested error values.
    std::fs::File::create(path).map_err(|e| {
        let detail = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => format!("the folder {} does not exist", dir.display()),
            _ => e.to_string(),
        };
        failed(detail)
    })?;
    let drawn = match ext.to_ascii_lowercase().as_str() {
        "png" => draw(
            BitMapBackend::new(path, SIZE).into_drawing_area(),
            points,
            profile,
            title,
        ),
        "svg" => draw(
            SVGBackend::new(path, SIZE).into_drawing_area(),
            points,
            profile,
            title,
        ),
        _ => {
            return Err(PlotError::UnknownFormat {
                path: path.to_path_buf(),
            })
        }
    };
    drawn.map_err(|detail| {
        let _ = std::fs::remove_file(path);
        failed(detail)
    })
}

/// Axis ranges (log scale) that hold every point and the ridge of the roofline.
fn ranges(points: &[RooflinePoint], profile: &GpuProfile) -> ((f64, f64), (f64, f64)) {
    let peak = profile.peak_fp32_flops() / 1e12;
    let ridge = peak / (profile.dram_bytes_per_s() / 1e12);
    let xs = points
        .iter()
        .flat_map(|p| [p.dram_intensity, p.l2_intensity])
        .chain([ridge]);
    let ys = points
        .iter()
        .flat_map(|p| [p.achieved_tflops, p.predicted_tflops])
        .chain([peak]);
    let (x0, x1) = min_max(xs);
    let (y0, y1) = min_max(ys);
    ((x0 / 1.5, x1 * 2.0), (y0 / 1.5, y1 * 1.5))
}

fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// The sparsity patterns present, densest first, each with its colour.
fn palette(points: &[RooflinePoint]) -> Vec<(NmPattern, RGBColor)> {
    const COLOURS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    let mut patterns: Vec<NmPattern> = points.iter().map(|p| p.nm).collect();
    patterns.sort_by(|a, b| b.density().total_cmp(&a.density()).then(a.cmp(b)));
    patterns.dedup();
    patterns
        .into_iter()
        .enumerate()
        .map(|(i, nm)| (nm, COLOURS[i % COLOURS.len()]))
        .collect()
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    points: &[RooflinePoint],
    profile: &GpuProfile,
    title: &str,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let ((x0, x1), (y0, y1)) = ranges(points, profile);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("real FLOPs per byte from DRAM (●) or from L2 (○)")
        .y_desc("achieved FP32 TFLOP/s (2·m·n·k·N/M / time)")
        .label_style(("sans-serif", 14))
        .x_labels(12)
        .y_labels(12)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    draw_roofs(&mut chart, profile, (x0, x1), y0).map_err(err)?;
    for (nm, colour) in palette(points) {
        let mine: Vec<&RooflinePoint> = points.iter().filter(|p| p.nm == nm).collect();
        let label = format!("{nm} ({:.1} % sparse)", nm.sparsity() * 100.0);
        chart
            .draw_series(
                mine.iter().map(|p| {
                    Circle::new((p.dram_intensity, p.achieved_tflops), 4, colour.filled())
                }),
            )
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
        chart
            .draw_series(mine.iter().map(|p| {
                Circle::new(
                    (p.l2_intensity, p.achieved_tflops),
                    4,
                    colour.stroke_width(1),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(mine.iter().map(|p| {
                Cross::new(
                    (p.dram_intensity, p.predicted_tflops),
                    4,
                    colour.stroke_width(1),
                )
            }))
            .map_err(err)?;
    }
    chart
        .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
        .map_err(err)?
        .label("●: under the DRAM roof, ○: under the L2 roof, ×: predicted")
        .legend(|(x, y)| Cross::new((x + 10, y), 4, BLACK.stroke_width(1)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// A tick label without trailing zeros: 0.8, 2, 10, 67.5.
fn tick(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

type LogChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<
        plotters::coord::combinators::LogCoord<f64>,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// FP32 peak, DRAM roof and the model's L2 roof, each labelled in the legend.
fn draw_roofs<DB: DrawingBackend>(
    chart: &mut LogChart<'_, DB>,
    profile: &GpuProfile,
    (x0, x1): (f64, f64),
    y0: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let peak = profile.peak_fp32_flops() / 1e12;
    let dram = profile.dram_bytes_per_s() / 1e12;
    let l2 = dram * model::L2_BANDWIDTH_FACTOR;
    let xs: Vec<f64> = (0..=200)
        .map(|i| x0 * (x1 / x0).powf(i as f64 / 200.0))
        .collect();
    let roofs = [
        (
            dram,
            BLACK,
            format!("DRAM {:.1} TB/s, FP32 peak {peak:.1} TFLOP/s", dram),
        ),
        (
            l2,
            RGBColor(128, 128, 128),
            format!("L2 (model: {:.1}× DRAM)", model::L2_BANDWIDTH_FACTOR),
        ),
    ];
    for (bandwidth, colour, label) in roofs {
        let line = xs
            .iter()
            .map(|&x| (x, (bandwidth * x).min(peak)))
            .filter(|&(_, y)| y >= y0);
        chart
            .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_hold_the_ridge_and_every_point() {
        let profile = GpuProfile::builtin("h200").unwrap();
        let p = RooflinePoint {
            nm: NmPattern::new(8, 32).unwrap(),
            dram_intensity: 3.0,
            l2_intensity: 1.0,
            achieved_tflops: 5.0,
            predicted_tflops: 9.0,
            source: Source::Measured,
        };
        let ((x0, x1), (y0, y1)) = ranges(&[p], &profile);
        let ridge = profile.peak_fp32_flops() / profile.dram_bytes_per_s();
        assert!(x0 < 1.0 && x1 > ridge);
        assert!(y0 < 5.0 && y1 > profile.peak_fp32_flops() / 1e12);
    }
}
