//! The files: a checkpoint mapped into memory for reading, and outputs written through a
//! staging file so that a failure never leaves a partial output behind.

use super::CheckpointError;
use memmap2::Mmap;
use safetensors::tensor::TensorView;
use safetensors::SafeTensors;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A safetensors file mapped into memory: tensors are read in place, page by page as they
/// are used, never copied whole into memory.
pub struct Mapped {
    path: PathBuf,
    map: Mmap,
}

impl Mapped {
    pub fn open(path: &Path) -> Result<Self, CheckpointError> {
        let unreadable = |source| CheckpointError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(unreadable)?;
        if file.metadata().map_err(unreadable)?.is_dir() {
            return Err(unreadable(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "is a directory",
            )));
        }
        // SAFETY: the map is only read. Another process truncating the file while it is
        // mapped would fault the reads, as with any memory-mapped reader (the safetensors
        // loaders of PyTorch map files the same way); nmtune itself never writes a file it
        // reads: outputs are new files renamed into place.
        let map = unsafe { Mmap::map(&file) }.map_err(unreadable)?;
        let mapped = Self {
            path: path.to_path_buf(),
            map,
        };
        mapped.tensors()?; // refuse a file that is not safetensors at once
        Ok(mapped)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed header over the mapped bytes.
    pub fn tensors(&self) -> Result<SafeTensors<'_>, CheckpointError> {
        SafeTensors::deserialize(&self.map).map_err(|e| CheckpointError::NotSafetensors {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    /// The file's string→string metadata (`__metadata__`), empty when it has none.
    pub fn metadata(&self) -> Result<HashMap<String, String>, CheckpointError> {
        let (_, header) =
            SafeTensors::read_metadata(&self.map).map_err(|e| CheckpointError::NotSafetensors {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        Ok(header.metadata().clone().unwrap_or_default())
    }
}

/// The tensors of a file in name order (the file's own order is by type, then name), so that
/// every command visits them, and reports them, in one order.
pub fn sorted<'data>(tensors: &SafeTensors<'data>) -> Vec<(String, TensorView<'data>)> {
    let mut all = tensors.tensors();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// Refuse to write `output` when it is the file `input` (through any path, link or hard link):
/// the output is renamed into place, so the input would be gone.
pub fn check_not_input(input: &Path, output: &Path) -> Result<(), CheckpointError> {
    let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(output)) else {
        return Ok(()); // one of them does not exist: not the same file
    };
    if same_file(&a, &b) {
        return Err(CheckpointError::OutputIsInput {
            path: output.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Write `path` through a staging file in its directory: `write` fills the staging path, which
/// is renamed over `path` only when `write` succeeded. On any failure the staging file is
/// removed (dropping the handle removes it), so neither a partial output nor a temporary file
/// is left; an existing `path` is untouched.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), CheckpointError>,
) -> Result<(), CheckpointError> {
    let failed = |reason: String| CheckpointError::Write {
        path: path.to_path_buf(),
        reason,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let staging = tempfile::Builder::new()
        .prefix(".nmtune-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| failed(e.to_string()))?;
    write(staging.path())?;
    make_ordinary(staging.path()).map_err(|e| failed(e.to_string()))?;
    staging
        .persist(path)
        .map_err(|e| failed(e.error.to_string()))?;
    Ok(())
}

/// Temporary files are created private (0600), and the safetensors crate writes through one
/// of its own that ends up at the staging path; an output is an ordinary file, readable as
/// the user's umask allows (0666 less the umask, as a shell redirection creates it).
#[cfg(unix)]
fn make_ordinary(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = 0o666 & !umask();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn make_ordinary(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The process's umask, read from /proc (setting it to read it would race with other threads
/// creating files); 022, the usual one, where /proc does not say.
#[cfg(unix)]
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Umask:"))?;
            u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
        })
        .unwrap_or(0o022)
}
