//! Compiling rendered kernels to SASS cubins with NVRTC, with an on-disk cache.
//!
//! NVRTC is loaded at run time (cudarc's dynamic loading). cudarc panics when the library is
//! missing, so every entry point checks [`nvrtc_available`] first and returns
//! [`CodegenError::NvrtcMissing`] instead.

use super::render::KernelSource;
use super::CodegenError;
use cudarc::nvrtc::{result, sys};
use sha2::{Digest, Sha256};
use std::ffi::{c_char, CString};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How to get NVRTC when it is missing.
const INSTALL_HINT: &str = "NVRTC (libnvrtc.so.13) not found: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc` and put nvidia/cu13/lib on LD_LIBRARY_PATH";

/// First line of a cache file; bump when the file layout changes.
const CACHE_MAGIC: &str = "nmtune-cubin-v1";

/// A kernel module compiled for one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledKernel {
    /// Symbol of the main kernel ([`KernelSource::name`]).
    pub name: String,
    /// Architecture it was compiled for, e.g. "sm_90".
    pub arch: String,
    /// SASS for `arch`, loadable with cuModuleLoadData.
    pub cubin: Vec<u8>,
    /// NVRTC's log, with ptxas's resource report.
    pub log: String,
    /// Registers per thread of the main kernel, from the ptxas report.
    pub registers: Option<u32>,
    /// Bytes of register spill stores of the main kernel.
    pub spill_bytes: Option<u32>,
    /// Static shared memory of the main kernel, bytes (the dynamic part is not reported).
    pub smem_static: Option<u32>,
}

impl CompiledKernel {
    /// A kernel from NVRTC's output (fresh or cached), with ptxas's report parsed from the log.
    fn from_output(src: &KernelSource, arch: &str, cubin: Vec<u8>, log: String) -> Self {
        let report = parse_resource_report(&log, &src.name);
        Self {
            name: src.name.clone(),
            arch: arch.to_string(),
            cubin,
            log,
            registers: report.registers,
            spill_bytes: report.spill_bytes,
            smem_static: report.smem_static,
        }
    }
}

/// Ok when the NVRTC library can be loaded.
pub fn nvrtc_available() -> Result<(), CodegenError> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the library by its candidate names.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(CodegenError::NvrtcMissing(INSTALL_HINT.to_string()))
    }
}

/// NVRTC's (major, minor) version.
pub fn nvrtc_version() -> Result<(i32, i32), CodegenError> {
    nvrtc_available()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for writes.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| CodegenError::NvrtcMissing(format!("nvrtcVersion failed: {e}")))?;
    Ok((major, minor))
}

/// Options passed to NVRTC for `arch` ("sm_90"): SASS for the real architecture, C++17,
/// and ptxas's resource report in the log.
pub fn compile_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--ptxas-options=-v".to_string(),
    ]
}

/// Compile `src` for `arch` (e.g. "sm_90") to a cubin.
pub fn compile(src: &KernelSource, arch: &str) -> Result<CompiledKernel, CodegenError> {
    nvrtc_available()?;
    validate_arch(arch)?;
    let fail = |log: String| CodegenError::Compile {
        name: src.name.clone(),
        arch: arch.to_string(),
        log,
    };
    let source =
        CString::new(src.source.as_str()).map_err(|_| fail("source contains a NUL byte".into()))?;
    let file_name = CString::new(format!("{}.cu", src.name))
        .map_err(|_| fail("name contains a NUL byte".into()))?;
    let prog = result::create_program(&source, Some(&file_name))
        .map_err(|e| fail(format!("nvrtcCreateProgram: {e}")))?;
    let outcome = compile_program(prog, arch);
    // SAFETY: `prog` came from create_program and is destroyed exactly once, here.
    let _ = unsafe { result::destroy_program(prog) };
    let (cubin, log) = outcome.map_err(fail)?;
    Ok(CompiledKernel::from_output(src, arch, cubin, log))
}

/// Compile, then fetch the cubin and the log. Errors carry the log.
fn compile_program(prog: sys::nvrtcProgram, arch: &str) -> Result<(Vec<u8>, String), String> {
    let options = compile_options(arch);
    // SAFETY: `prog` is a live program; the options are plain strings without NUL bytes.
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|chars| c_chars_to_string(&chars))
        .unwrap_or_default();
    if let Err(e) = compiled {
        return Err(format!("{e}\n{log}"));
    }
    // SAFETY: the program compiled successfully for a real architecture, so it has a cubin.
    let cubin = unsafe { get_cubin(prog) }.map_err(|e| format!("nvrtcGetCUBIN: {e}\n{log}"))?;
    Ok((cubin, log))
}

/// # Safety
/// `prog` must be a live, successfully compiled program.
unsafe fn get_cubin(prog: sys::nvrtcProgram) -> Result<Vec<u8>, result::NvrtcError> {
    let mut size = 0usize;
    sys::nvrtcGetCUBINSize(prog, &mut size).result()?;
    let mut cubin = vec![0u8; size];
    sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut c_char).result()?;
    Ok(cubin)
}

fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The compute capability an architecture name stands for: `sm_90` and `sm_90a` → (9, 0),
/// `sm_120` → (12, 0); `None` for a name that is no architecture.
pub fn compute_capability_of(arch: &str) -> Option<(u32, u32)> {
    let digits = arch.strip_prefix("sm_")?;
    let digits = digits
        .strip_suffix(|c: char| c.is_ascii_lowercase())
        .unwrap_or(digits);
    if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

fn validate_arch(arch: &str) -> Result<(), CodegenError> {
    if compute_capability_of(arch).is_some() {
        Ok(())
    } else {
        Err(CodegenError::Compile {
            name: String::new(),
            arch: arch.to_string(),
            log: format!("'{arch}' is not a real architecture such as sm_90"),
        })
    }
}

/// Resources ptxas reported for one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceReport {
    pub registers: Option<u32>,
    pub spill_bytes: Option<u32>,
    pub smem_static: Option<u32>,
}

/// Read ptxas's `-v` report for `function` out of an NVRTC log. For each function ptxas
/// writes "Compiling entry function '<f>' for 'sm_90'", "Function properties for <f>",
/// "<n> bytes stack frame, <s> bytes spill stores, <l> bytes spill loads" and
/// "Used <r> registers, … <b> bytes smem …"; the lines up to the next "Compiling entry
/// function" belong to `<f>`. Among them are the properties of the non-inlined device
/// functions `<f>` calls (the stream-K fix-up's `add_slots`), whose spills run as `<f>`'s:
/// the spill bytes are the sum over the block.
pub fn parse_resource_report(log: &str, function: &str) -> ResourceReport {
    let mut report = ResourceReport::default();
    let mut in_function = false;
    let quoted = format!("'{function}'");
    for line in log.lines() {
        if line.contains("Compiling entry function") {
            in_function = line.contains(&quoted);
            continue;
        }
        if !in_function {
            continue;
        }
        if let Some(v) = number_before(line, "bytes spill stores") {
            report.spill_bytes = Some(report.spill_bytes.unwrap_or(0) + v);
        }
        if let Some(v) = number_after(line, "Used ") {
            report.registers = Some(v);
        }
        if let Some(v) = number_before(line, "bytes smem") {
            report.smem_static = Some(v);
        }
    }
    report
}

/// The integer right before `marker` in `line`.
fn number_before(line: &str, marker: &str) -> Option<u32> {
    let head = &line[..line.find(marker)?];
    head.split(|c: char| !c.is_ascii_digit())
        .rfind(|s| !s.is_empty())?
        .parse()
        .ok()
}

/// The integer right after `marker` in `line`.
fn number_after(line: &str, marker: &str) -> Option<u32> {
    let tail = &line[line.find(marker)? + marker.len()..];
    let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Cache key of a compilation: SHA-256 of the source, the architecture, the options and the
/// NVRTC version.
pub fn cache_key(src: &KernelSource, arch: &str) -> Result<String, CodegenError> {
    let (major, minor) = nvrtc_version()?;
    let mut hasher = Sha256::new();
    hasher.update(src.source.as_bytes());
    hasher.update([0u8]);
    hasher.update(src.name.as_bytes());
    hasher.update([0u8]);
    hasher.update(arch.as_bytes());
    hasher.update([0u8]);
    hasher.update(compile_options(arch).join(" ").as_bytes());
    hasher.update(format!("\0nvrtc {major}.{minor}").as_bytes());
    Ok(hex::encode(hasher.finalize()))
}

/// Default cache folder: `$NMTUNE_CACHE_DIR`, else `nmtune/cubins` in the user's cache
/// folder, else `target/nmtune-cubins`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NMTUNE_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .map(|d| d.join("nmtune").join("cubins"))
        .unwrap_or_else(|| PathBuf::from("target").join("nmtune-cubins"))
}

/// Whether a compilation came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Compiled,
}

/// [`compile`], memoised on disk under `cache_dir` by [`cache_key`]. A cache file holds a
/// header (magic, SHA-256 of the payload, lengths) and the payload (log, then cubin); a file
/// whose checksum does not match is never loaded: a warning is logged, the kernel compiled
/// again and the file replaced. Failures to write the cache are
/// not errors: the compiled kernel is returned all the same.
pub fn compile_cached(
    src: &KernelSource,
    arch: &str,
    cache_dir: &Path,
) -> Result<CompiledKernel, CodegenError> {
    compile_cached_with_outcome(src, arch, cache_dir).map(|(kernel, _)| kernel)
}

/// [`compile_cached`], also saying whether NVRTC ran.
pub fn compile_cached_with_outcome(
    src: &KernelSource,
    arch: &str,
    cache_dir: &Path,
) -> Result<(CompiledKernel, CacheOutcome), CodegenError> {
    let path = cache_path(src, arch, cache_dir)?;
    match read_cache_file(&path) {
        Ok(Some((cubin, log))) => {
            let kernel = CompiledKernel::from_output(src, arch, cubin, log);
            return Ok((kernel, CacheOutcome::Hit));
        }
        Ok(None) => {}
        Err(why) => log::warn!(
            "kernel cache {} is damaged ({why}): compiling {} again and replacing it",
            path.display(),
            src.name
        ),
    }
    let kernel = compile(src, arch)?;
    if let Err(e) = write_cache_entry(&path, &kernel) {
        log::warn!("cannot write kernel cache {}: {e}", path.display());
    }
    Ok((kernel, CacheOutcome::Compiled))
}

/// Where [`compile_cached`] keeps the cubin of `src` for `arch`: `<cache_dir>/<cache_key>.cubin`.
pub fn cache_path(
    src: &KernelSource,
    arch: &str,
    cache_dir: &Path,
) -> Result<PathBuf, CodegenError> {
    Ok(cache_dir.join(format!("{}.cubin", cache_key(src, arch)?)))
}

/// Store `kernel` as the cache file `path` (see [`cache_path`]), checksummed, written beside
/// and renamed into place.
pub fn write_cache_entry(path: &Path, kernel: &CompiledKernel) -> std::io::Result<()> {
    write_cache_file(path, &kernel.cubin, &kernel.log)
}

fn payload_checksum(log: &[u8], cubin: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(log);
    hasher.update(cubin);
    hex::encode(hasher.finalize())
}

/// Header line: `<magic> <sha256 of payload> <log bytes> <cubin bytes>\n`.
fn write_cache_file(path: &Path, cubin: &[u8], log: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let header = format!(
        "{CACHE_MAGIC} {} {} {}\n",
        payload_checksum(log.as_bytes(), cubin),
        log.len(),
        cubin.len()
    );
    let mut bytes = Vec::with_capacity(header.len() + log.len() + cubin.len());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(log.as_bytes());
    bytes.extend_from_slice(cubin);
    // Write beside and rename, so that a concurrent reader never sees half a file. The
    // temporary name is unique per process and call: two threads may store the same key.
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    let unique = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{unique}", std::process::id()));
    let written = fs::write(&tmp, &bytes).and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The (cubin, log) of a cache file; `Ok(None)` when there is none, `Err(why)` when the file
/// is there but damaged (wrong magic, lengths or checksum), so it must not be loaded.
fn read_cache_file(path: &Path) -> Result<Option<(Vec<u8>, String)>, String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("unreadable: {e}")),
    };
    let newline = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("no header line")?;
    let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| "header is not text")?;
    let fields: Vec<&str> = header.split(' ').collect();
    if fields.len() != 4 || fields[0] != CACHE_MAGIC {
        return Err(format!(
            "header is not '{CACHE_MAGIC} <sha256> <log bytes> <cubin bytes>'"
        ));
    }
    let length = |text: &str| {
        text.parse::<usize>()
            .map_err(|_| format!("bad length '{text}'"))
    };
    let (log_len, cubin_len) = (length(fields[2])?, length(fields[3])?);
    let payload = &bytes[newline + 1..];
    if Some(payload.len()) != log_len.checked_add(cubin_len) {
        return Err(format!(
            "holds {} payload bytes, its header says {log_len} + {cubin_len}",
            payload.len()
        ));
    }
    let (log, cubin) = payload.split_at(log_len);
    if payload_checksum(log, cubin) != fields[1] {
        return Err("contents do not match their SHA-256 checksum".into());
    }
    let log = String::from_utf8(log.to_vec()).map_err(|_| "log is not UTF-8")?;
    Ok(Some((cubin.to_vec(), log)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architecture_names_give_their_compute_capability() {
        let cases = [
            ("sm_90", Some((9, 0))),
            ("sm_90a", Some((9, 0))),
            ("sm_80", Some((8, 0))),
            ("sm_120", Some((12, 0))),
            ("sm_9", None),
            ("foo", None),
            ("sm_", None),
            ("sm_9x0", None),
        ];
        for (arch, want) in cases {
            assert_eq!(compute_capability_of(arch), want, "{arch}");
        }
    }

    const LOG: &str = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k_reduce' for 'sm_90'\n\
ptxas info    : Function properties for k_reduce\n\
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 16 registers, used 0 barriers, 400 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
ptxas info    : Function properties for k\n\
ptxas         .     24 bytes stack frame, 20 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 168 registers, used 1 barriers, 64 bytes smem, 400 bytes cmem[0]\n\
ptxas info    : Function properties for _ZN3nmk9add_slotsEv\n\
ptxas         .     0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n";

    #[test]
    fn reads_the_report_of_the_named_function_only() {
        let r = parse_resource_report(LOG, "k");
        assert_eq!(r.registers, Some(168));
        // Its own spills and those of the device function it calls.
        assert_eq!(r.spill_bytes, Some(36));
        assert_eq!(r.smem_static, Some(64));
        let reduce = parse_resource_report(LOG, "k_reduce");
        assert_eq!(reduce.registers, Some(16));
        assert_eq!(reduce.spill_bytes, Some(0));
        assert_eq!(
            parse_resource_report(LOG, "other"),
            ResourceReport::default()
        );
    }

    #[test]
    fn cache_file_round_trips_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.cubin");
        let cubin: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        write_cache_file(&path, &cubin, "log text").unwrap();
        assert_eq!(
            read_cache_file(&path),
            Ok(Some((cubin.clone(), "log text".to_string())))
        );
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        assert!(read_cache_file(&path).is_err());
        fs::write(&path, b"garbage").unwrap();
        assert!(read_cache_file(&path).is_err());
        assert_eq!(read_cache_file(&dir.path().join("absent.cubin")), Ok(None));
    }

    #[test]
    fn rejects_virtual_architectures() {
        assert!(validate_arch("sm_90").is_ok());
        assert!(validate_arch("sm_90a").is_ok());
        assert!(validate_arch("compute_90").is_err());
        assert!(validate_arch("90").is_err());
    }
}
