//! `nmtune._native`: the Rust half of the Python package `nmtune`.
//!
//! This crate sits above the library's `runtime` (and the `format` and `checkpoint` layers
//! below it) and only translates: Python values in, the library's calls, Python values out,
//! every library error a `nmtune.NmtuneError` with the CLI's one-line message
//! ([`nmtune::one_line`]). The Python modules `nmtune` and `nmtune.torch` hold the user-facing
//! API (NumPy and torch conversions, type checks, `nn.Module`); matrices cross the boundary as
//! little-endian `bytes` (f32 or u8), device tensors as raw addresses. Nothing in the library
//! knows about Python.

use cudarc::driver::{sys, CudaContext};
use nmtune::checkpoint;
use nmtune::format::{self, CompressedWeight, Padding};
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::runtime::{
    Answer, BorrowedLinear, DeviceMatrix, Lookup as Table, PreparedWeight, Runtime, SparseLinear,
};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

create_exception!(
    nmtune,
    NmtuneError,
    PyValueError,
    "An error of nmtune: bad input, a missing or unreadable file, or a failure on the GPU. The \
     message is one line, the same as the command line tool prints."
);

/// Any library error as a Python exception with its one-line message.
fn py_err(err: impl std::error::Error + 'static) -> PyErr {
    NmtuneError::new_err(nmtune::one_line(&err))
}

fn pattern(nm: &str) -> PyResult<NmPattern> {
    NmPattern::parse_explicit(nm).map_err(py_err)
}

/// Little-endian f32 bytes as floats; the length must fit `rows`×`cols`.
fn floats(bytes: &[u8], rows: usize, cols: usize, what: &str) -> PyResult<Vec<f32>> {
    let expected = rows.checked_mul(cols).and_then(|e| e.checked_mul(4));
    if expected != Some(bytes.len()) {
        return Err(NmtuneError::new_err(format!(
            "{what} holds {} bytes, not the 4·{rows}·{cols} of a {rows}×{cols} float32 matrix",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Floats as a Python `bytes` object of little-endian f32, written in place.
fn float_bytes<'py>(py: Python<'py>, values: &[f32]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * 4, |buf| {
        for (out, v) in buf.chunks_exact_mut(4).zip(values) {
            out.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    })
}

/// B' and D as bytes, and the padded (n_p, k_p).
type CompressedBytes<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, (usize, usize));

/// B' and D as bytes, the pattern, L, (n, k) and (n_p, k_p) of a checkpoint's weight.
type PrunedBytes<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    String,
    usize,
    (usize, usize),
    (usize, usize),
);

/// Parse a sparsity pattern as the CLI's `--nm` does: `N:M` or a percentage pruned (M = 32).
/// Returns (N, M).
#[pyfunction]
fn parse_pattern(nm: &str) -> PyResult<(u32, u32)> {
    let p = pattern(nm)?;
    Ok((p.n, p.m))
}

/// Prune the dense n×k weight `dense` (PyTorch's out × in, f32 bytes) by magnitude and
/// compress it. Returns (B' bytes, w×n_p f32; D bytes, w×q u8; (n_p, k_p)).
#[pyfunction]
fn prune_and_compress<'py>(
    py: Python<'py>,
    dense: &[u8],
    n: usize,
    k: usize,
    nm: &str,
    l: usize,
) -> PyResult<CompressedBytes<'py>> {
    let nm = pattern(nm)?;
    let dense = floats(dense, n, k, "the weight")?;
    let (weight, padding) = py
        .detach(|| format::prune_and_compress_nk(&dense, n, k, nm, l))
        .map_err(py_err)?;
    let values = float_bytes(py, &weight.values)?;
    let indices = PyBytes::new(py, &weight.indices);
    Ok((values, indices, (padding.n_padded, padding.k_padded)))
}

/// The compressed weight of B' (w×n_p f32 bytes) and D (w×q u8 bytes), checked.
fn compressed(
    values: &[u8],
    indices: &[u8],
    (n_p, k_p): (usize, usize),
    nm: NmPattern,
    l: usize,
) -> PyResult<CompressedWeight> {
    let w = k_p / nm.m.max(1) as usize * nm.n as usize;
    let values = floats(values, w, n_p, "the values B'")?;
    CompressedWeight::from_parts(k_p, n_p, nm, l, values, indices.to_vec()).map_err(py_err)
}

/// The padding of an [n, k] weight compressed as [n_p, k_p].
fn padding((n, k): (usize, usize), (n_p, k_p): (usize, usize)) -> Padding {
    Padding {
        k_original: k,
        k_padded: k_p,
        n_original: n,
        n_padded: n_p,
    }
}

/// The inverse of `prune_and_compress`: the dense [n, k] weight (f32 bytes, zeros where
/// pruned) of B' and D compressed as [n_p, k_p].
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn decompress<'py>(
    py: Python<'py>,
    values: &[u8],
    indices: &[u8],
    nm: &str,
    l: usize,
    padded: (usize, usize),
    shape: (usize, usize),
) -> PyResult<Bound<'py, PyBytes>> {
    let weight = compressed(values, indices, padded, pattern(nm)?, l)?;
    let dense = py
        .detach(|| format::decompress_nk(&weight, &padding(shape, padded)))
        .map_err(py_err)?;
    float_bytes(py, &dense)
}

/// Weight `name` of the pruned checkpoint at `path`: (B' bytes, f32; D bytes, u8; pattern
/// "N:M"; L; (n, k); (n_p, k_p)).
#[pyfunction]
fn read_pruned<'py>(py: Python<'py>, path: PathBuf, name: &str) -> PyResult<PrunedBytes<'py>> {
    let pruned = py
        .detach(|| checkpoint::read_pruned(&path, name))
        .map_err(py_err)?;
    let info = &pruned.info;
    Ok((
        float_bytes(py, &pruned.weight.values)?,
        PyBytes::new(py, &pruned.weight.indices),
        info.nm.clone(),
        info.l,
        (info.shape[0], info.shape[1]),
        (info.padded_shape[0], info.padded_shape[1]),
    ))
}

/// The names of the weights a pruned checkpoint holds.
#[pyfunction]
fn pruned_names(path: PathBuf) -> PyResult<Vec<String>> {
    checkpoint::pruned_names(&path).map_err(py_err)
}

/// A float tensor of a safetensors file as f32 bytes, with its shape.
#[pyfunction]
fn read_float_tensor<'py>(
    py: Python<'py>,
    path: PathBuf,
    name: &str,
) -> PyResult<(Bound<'py, PyBytes>, Vec<usize>)> {
    let (shape, values) = py
        .detach(|| checkpoint::read_float_tensor(&path, name))
        .map_err(py_err)?;
    Ok((float_bytes(py, &values)?, shape))
}

/// The runtimes of one lookup table, one per CUDA device used so far.
struct Shared {
    table: Table,
    runtimes: Mutex<HashMap<usize, Arc<Runtime>>>,
}

impl Shared {
    /// The runtime of device `ordinal`, created on first use. Its context is the device's
    /// primary context, the one PyTorch uses, so PyTorch's memory and streams belong to it.
    fn runtime(&self, ordinal: usize) -> Result<Arc<Runtime>, String> {
        let mut runtimes = self.runtimes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(runtime) = runtimes.get(&ordinal) {
            return Ok(runtime.clone());
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| format!("cannot open CUDA device {ordinal}: {e}"))?;
        // SAFETY: every launch of this context goes through `BorrowedLinear` on the caller's
        // stream, and weights are uploaded with a synchronisation; cudarc's per-buffer events,
        // which order work across streams it creates itself, would only cost time here.
        unsafe { ctx.disable_event_tracking() };
        let runtime = Runtime::new(self.table.clone(), &ctx).map_err(|e| nmtune::one_line(&e))?;
        runtimes.insert(ordinal, runtime.clone());
        Ok(runtime)
    }
}

/// A tuning table loaded from one or more databases for one GPU (read once, answered from
/// memory).
#[pyclass(module = "nmtune._native", frozen)]
struct Lookup {
    shared: Arc<Shared>,
}

#[pymethods]
impl Lookup {
    /// Every path must exist; several are read as one (`Lookup::open_all`).
    #[new]
    fn new(py: Python<'_>, paths: Vec<PathBuf>, gpu: &str) -> PyResult<Self> {
        let table = py
            .detach(|| Table::open_existing(&paths, gpu))
            .map_err(py_err)?;
        Ok(Self {
            shared: Arc::new(Shared {
                table,
                runtimes: Mutex::default(),
            }),
        })
    }

    /// The GPU profile's name, e.g. "h100".
    #[getter]
    fn gpu(&self) -> String {
        self.shared.table.gpu().name.clone()
    }

    /// The answer of `nmtune lookup --format json` for one problem, as that JSON text.
    #[allow(clippy::too_many_arguments)]
    fn lookup(
        &self,
        m: usize,
        n: usize,
        k: usize,
        nm: &str,
        l: usize,
        a_layout: &str,
        dtype: &str,
    ) -> PyResult<String> {
        let layout: ALayout = a_layout.parse().map_err(py_err)?;
        let dtype: Dtype = dtype.parse().map_err(py_err)?;
        let problem = Problem::new(m, n, k, pattern(nm)?, l)
            .and_then(|p| p.with_layout(layout))
            .map(|p| p.with_dtype(dtype))
            .map_err(py_err)?;
        let table = &self.shared.table;
        let choice = table.lookup(&problem).map_err(py_err)?;
        Ok(Answer::new(&table.gpu().name, &problem, &choice).to_json())
    }
}

/// One compressed weight, launched on PyTorch's tensors through a `BorrowedLinear` on the
/// device of its first forward.
#[pyclass(module = "nmtune._native", frozen)]
struct Layer {
    shared: Arc<Shared>,
    weight: PreparedWeight,
    bound: Mutex<Option<(usize, BorrowedLinear)>>,
}

#[pymethods]
impl Layer {
    /// B' (w×n_p f32 bytes) and D (w×q u8 bytes) of an [n, k] weight compressed as
    /// [n_p, k_p], for row-major A.
    #[new]
    fn new(
        lookup: &Lookup,
        values: &[u8],
        indices: &[u8],
        nm: &str,
        l: usize,
        shape: (usize, usize),
        padded: (usize, usize),
    ) -> PyResult<Self> {
        let weight = compressed(values, indices, padded, pattern(nm)?, l)?;
        let weight = PreparedWeight::from_compressed_padded(weight, padding(shape, padded))
            .map_err(py_err)?;
        weight.problem(1).map_err(py_err)?;
        Ok(Self {
            shared: lookup.shared.clone(),
            weight,
            bound: Mutex::new(None),
        })
    }

    /// The answer of `nmtune lookup --format json` for `m` rows times this weight.
    fn choose(&self, m: usize) -> PyResult<String> {
        let problem = self.weight.problem(m).map_err(py_err)?;
        let table = &self.shared.table;
        let choice = table.lookup(&problem).map_err(py_err)?;
        Ok(Answer::new(&table.gpu().name, &problem, &choice).to_json())
    }

    /// `C = A ⊗ (B', D)` for `m` rows on device `device`'s stream `stream`: A and C are
    /// device addresses of `a_len` and `c_len` floats (A m×k_p row-major, C m×n_p). Enqueued,
    /// not waited for. Returns the kernel's name. The first call uploads the weight to the
    /// device (and compiles kernels as they are first needed); a later call on another
    /// device is an error.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        py: Python<'_>,
        device: usize,
        stream: usize,
        a: u64,
        a_len: usize,
        c: u64,
        c_len: usize,
        m: usize,
    ) -> PyResult<String> {
        py.detach(|| self.launch(device, stream, a, a_len, c, c_len, m))
            .map_err(NmtuneError::new_err)
    }
}

impl Layer {
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        device: usize,
        stream: usize,
        a: u64,
        a_len: usize,
        c: u64,
        c_len: usize,
        m: usize,
    ) -> Result<String, String> {
        let mut bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        if bound.is_none() {
            let runtime = self.shared.runtime(device)?;
            let ctx = runtime.context().clone();
            let upload = ctx.default_stream();
            let layer = SparseLinear::new(runtime, self.weight.clone(), ALayout::RowMajor, &upload)
                .map_err(|e| nmtune::one_line(&e))?;
            *bound = Some((device, BorrowedLinear::new(layer)));
        }
        let Some((on, layer)) = bound.as_mut() else {
            unreachable!("bound above");
        };
        if *on != device {
            return Err(format!(
                "this layer's weight is on cuda:{on}, the input on cuda:{device}: keep a layer's inputs on one device"
            ));
        }
        let a = DeviceMatrix {
            address: a,
            len: a_len,
        };
        let c = DeviceMatrix {
            address: c,
            len: c_len,
        };
        // SAFETY: the Python side passes a live CUDA stream of `device` (PyTorch's current
        // stream) and the addresses of contiguous float32 tensors of that device holding
        // `a_len` and `c_len` floats, which it keeps alive; PyTorch's caching allocator
        // orders their reuse on that same stream.
        let choice = unsafe { layer.forward(stream as sys::CUstream, a, c, m, 1.0, 0.0) }
            .map_err(|e| nmtune::one_line(&e))?;
        Ok(choice.config.name())
    }
}

/// The extension module `nmtune._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NmtuneError", m.py().get_type::<NmtuneError>())?;
    m.add_function(wrap_pyfunction!(parse_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(prune_and_compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(read_pruned, m)?)?;
    m.add_function(wrap_pyfunction!(pruned_names, m)?)?;
    m.add_function(wrap_pyfunction!(read_float_tensor, m)?)?;
    m.add_class::<Lookup>()?;
    m.add_class::<Layer>()?;
    m.add("TOOL_VERSION", nmtune::TOOL_VERSION)?;
    Ok(())
}
