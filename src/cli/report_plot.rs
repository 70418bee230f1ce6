//! `nmtune report --plot`: the roofline of the best entries, one plot per GPU.

use anyhow::bail;
use nmtune::db::{Database, Measurement};
use nmtune::gpu::GpuProfile;
use nmtune::plot;
use std::path::{Path, PathBuf};

/// Draw `best` into `path`; with several GPUs, one file each, named `<stem>-<gpu>.<ext>`.
pub fn plot(db: &Database, best: &[Measurement], path: &Path) -> anyhow::Result<()> {
    let mut gpus: Vec<&str> = best.iter().map(|m| m.gpu.as_str()).collect();
    gpus.dedup();
    if gpus.is_empty() {
        bail!("{} has no best entry to plot", db.path().display());
    }
    for gpu in &gpus {
        let Some(profile) = db.gpu_profile(gpu)?.or_else(|| GpuProfile::builtin(gpu)) else {
            bail!("no profile of GPU '{gpu}' to draw its roofline");
        };
        let mine: Vec<Measurement> = best.iter().filter(|m| m.gpu == *gpu).cloned().collect();
        let target = if gpus.len() == 1 {
            path.to_path_buf()
        } else {
            per_gpu(path, gpu)
        };
        let title = format!(
            "{}: {} best kernels of {}",
            profile.full_name,
            mine.len(),
            db.path().display()
        );
        plot::draw_roofline(
            &plot::roofline_points(&mine, &profile),
            &profile,
            &title,
            &target,
        )?;
        eprintln!("nmtune: wrote {}", target.display());
    }
    Ok(())
}

fn per_gpu(path: &Path, gpu: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("roofline");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("png");
    path.with_file_name(format!("{stem}-{gpu}.{ext}"))
}
