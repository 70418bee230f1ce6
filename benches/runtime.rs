//! Runtime benchmarks: lookup latency (the hot path, target < 1 µs), weight preparation
//! throughput, and — where there is a GPU — the dispatched kernel beside cuBLAS on Llama-7B
//! shapes.
//!
//! ```sh
//! cargo bench --bench runtime -- lookup --measurement-time 2
//! cargo bench --bench runtime -- gpu
//! ```

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nmtune::codegen::{templates_checksum, ACopy, KernelConfig, WarpLayout};
use nmtune::db::Database;
use nmtune::gpu::{device, Gpu, GpuError, GpuProfile};
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::runtime::{Lookup, PreparedWeight, Runtime, SparseLinear};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::time::Duration;

const DB: &str = "tuning-db/h200.sqlite";

fn pattern() -> NmPattern {
    NmPattern::new(8, 32).unwrap()
}

/// The committed H200 table, its checksums set to this build's so that the benchmark times
/// the exact and nearest-m paths whatever the templates look like today.
fn h200_lookup() -> Lookup {
    let db = Database::open_read_only(Path::new(DB)).unwrap();
    let profile = db
        .gpu_profile("h200")
        .unwrap()
        .unwrap_or_else(|| GpuProfile::builtin("h200").unwrap());
    let rows = db.measurements(Some("h200")).unwrap();
    let current = rows.into_iter().map(|mut m| {
        m.template_checksum = templates_checksum(&m.problem).to_string();
        m
    });
    Lookup::from_measurements(profile, current)
}

fn lookup(c: &mut Criterion) {
    let table = h200_lookup();
    let cases = [
        (
            "exact",
            Problem::new(256, 4096, 4096, pattern(), 32).unwrap(),
        ),
        (
            "nearest_m",
            Problem::new(300, 4096, 4096, pattern(), 32).unwrap(),
        ),
        (
            "default",
            Problem::new(300, 4096, 2048, pattern(), 32).unwrap(),
        ),
    ];
    let expected = ["exact", "nearest_m", "default"];
    let mut group = c.benchmark_group("lookup");
    for ((name, problem), rule) in cases.iter().zip(expected) {
        assert_eq!(table.lookup(problem).unwrap().rule.as_str(), rule, "{name}");
        group.bench_function(*name, |b| {
            b.iter(|| table.lookup(black_box(problem)).unwrap())
        });
    }
    group.finish();
}

fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

fn prepare(c: &mut Criterion) {
    let (k, n) = (4096, 4096);
    let dense = random(k * n, 1);
    let packing = KernelConfig {
        a_copy: ACopy::Row4,
        m_s: 64,
        n_s: 128,
        k_s: 64,
        m_t: 8,
        n_t: 8,
        warp: WarpLayout::new(4, 8),
        nm: pattern(),
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
    };
    let mut group = c.benchmark_group("prepare");
    group.sample_size(10);
    group.throughput(Throughput::Elements((k * n) as u64));
    group.bench_function("prune_compress_4096x4096", |b| {
        b.iter(|| PreparedWeight::from_dense_kn(black_box(&dense), k, n, pattern(), 32).unwrap())
    });
    group.bench_function("prune_compress_col_info_4096x4096", |b| {
        b.iter(|| {
            let w = PreparedWeight::from_dense_kn(black_box(&dense), k, n, pattern(), 32).unwrap();
            w.host_buffers(&packing).unwrap().indices.len()
        })
    });
    group.finish();
}

/// Sum of `iters` event-timed launches, for criterion's `iter_custom`.
fn event_time(
    gpu: &Gpu,
    iters: u64,
    launch: impl FnMut(usize) -> Result<(), GpuError>,
) -> Duration {
    let ms: f64 = gpu
        .time_each(2, iters as usize, Duration::from_secs(60), launch)
        .unwrap()
        .iter()
        .sum();
    Duration::from_secs_f64(ms * 1e-3)
}

fn gpu_kernels(c: &mut Criterion) {
    if !device::driver_present() {
        eprintln!("SKIPPED: gpu benchmarks (no NVIDIA driver on this machine)");
        return;
    }
    let gpu = Gpu::open(0).unwrap();
    let name = &gpu.profile().name;
    let table = Lookup::open(&Path::new("tuning-db").join(format!("{name}.sqlite")), name).unwrap();
    let runtime = Runtime::new(table, &gpu.ctx).unwrap();
    let mut group = c.benchmark_group("gpu");
    group.sample_size(10);
    for (layer, n, k) in [("q_proj", 4096, 4096), ("up_proj", 11008, 4096)] {
        let w = PreparedWeight::from_dense_kn(&random(k * n, 3), k, n, pattern(), 32).unwrap();
        let dense = gpu.upload(&nmtune::format::decompress(w.weight())).unwrap();
        let mut sparse =
            SparseLinear::new(runtime.clone(), w, ALayout::RowMajor, &gpu.stream).unwrap();
        for m in [256, 4096] {
            let a = gpu.upload(&random(m * k, 5)).unwrap();
            let mut c_out = gpu.alloc(m * n).unwrap();
            let id = format!("{layer}_m{m}_{}", pattern());
            group.throughput(Throughput::Elements((2 * m * n * k) as u64));
            group.bench_function(BenchmarkId::new("nmtune", &id), |b| {
                b.iter_custom(|iters| {
                    event_time(&gpu, iters, |_| {
                        sparse
                            .forward(&gpu.stream, &a, &mut c_out, m, 1.0, 0.0)
                            .map(|_| ())
                            .map_err(|e| GpuError::Driver {
                                what: "launching".into(),
                                detail: e.to_string(),
                            })
                    })
                })
            });
            group.bench_function(BenchmarkId::new("cublas", &id), |b| {
                b.iter_custom(|iters| {
                    event_time(&gpu, iters, |_| {
                        gpu.sgemm(&a, ALayout::RowMajor, &dense, &mut c_out, (m, n, k))
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, lookup, prepare, gpu_kernels);
criterion_main!(benches);
