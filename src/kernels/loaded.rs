//! Compiled kernels loaded on the GPU, keyed by the kernel they were compiled from, and the
//! one launch path every caller (tuner, runtime, tests) uses.

use super::Workspace;
use crate::codegen::{self, KernelConfig};
use crate::gpu::device::driver_err;
use crate::gpu::{Gpu, GpuError};
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut, DevicePtr,
    DevicePtrMut, DriverError, LaunchConfig, PushKernelArg, SyncOnDrop,
};
use cudarc::nvrtc::Ptx;
use std::ffi::c_void;
use std::sync::Arc;

/// A generated kernel ready to launch: main function (a stream-K configuration's
/// `<base>_stream`) and, for split-K, its reduction.
pub struct LoadedKernel {
    pub config: KernelConfig,
    main: CudaFunction,
    /// sm_90+: the split-K reduction launches as a programmatic dependent of the main kernel
    /// (its launch overlaps the main kernel's tail; +1 to +1.5 % at m = 256 on the H100), and
    /// so do the decode families' main kernels, of whatever kernel precedes them (a decode
    /// step's previous layer): their first loads of the weight overlap its tail
    /// (docs/design.md, "Programmatic dependent launch").
    programmatic: bool,
    reduce: Option<CudaFunction>,
    /// The `Transposed` path's first pass.
    transpose: Option<CudaFunction>,
    /// A stream-K configuration's data-parallel entry (`<base>`), which runs the tiles its
    /// workers do not share ([`stream_split`]).
    data_parallel: Option<CudaFunction>,
    /// A stream-K configuration's workers: the blocks the GPU holds at once (SMs × the
    /// occupancy the driver reports for this kernel); 0 otherwise.
    stream_workers: usize,
    _module: Arc<CudaModule>,
}

/// D (and col_info) as a kernel family reads them, borrowed for a launch.
#[derive(Clone, Copy)]
pub enum IndexOperand<'a> {
    /// The tiled and decode families: D as i32, w×q, raw window positions (non-packing) or
    /// packed slots (packing), with the packing kernels' col_info lists and counts (any
    /// buffer for the others, which never read them).
    Wide {
        d: &'a CudaSlice<i32>,
        col_info: &'a CudaSlice<i32>,
        col_count: &'a CudaSlice<i32>,
    },
    /// The element-wise family (L = 1): D as the stored u8 window positions, w×n.
    Bytes(&'a CudaSlice<u8>),
}

impl<'a> IndexOperand<'a> {
    /// A non-packing kernel's i32 D; col_info and col_count are never read.
    pub fn plain(d: &'a CudaSlice<i32>) -> Self {
        IndexOperand::Wide {
            d,
            col_info: d,
            col_count: d,
        }
    }

    /// What this operand is, for an error message.
    fn describe(&self) -> &'static str {
        match self {
            IndexOperand::Wide { .. } => "i32 indices",
            IndexOperand::Bytes(_) => "u8 indices",
        }
    }
}

/// Device buffers of one problem instance, borrowed for a launch.
pub struct LaunchBuffers<'a> {
    pub a: &'a CudaSlice<f32>,
    pub b_values: &'a CudaSlice<f32>,
    /// D in the element type of the kernel's family (a mismatch is an error, never a launch).
    pub indices: IndexOperand<'a>,
    pub c: &'a mut CudaSlice<f32>,
    /// Room for the launch ([`Workspace::fits`]; a launch checks).
    pub workspace: &'a mut Workspace,
}

impl LoadedKernel {
    /// Load `cubin` (compiled from `source`) and prepare it for `config`'s shared memory.
    pub fn load(
        gpu: &Gpu,
        config: KernelConfig,
        source: &codegen::render::KernelSource,
        cubin: &[u8],
    ) -> Result<Self, GpuError> {
        Self::load_in(&gpu.ctx, config, source, cubin)
    }

    /// [`LoadedKernel::load`] into any context, e.g. the one of an application's stream.
    pub fn load_in(
        ctx: &Arc<CudaContext>,
        config: KernelConfig,
        source: &codegen::render::KernelSource,
        cubin: &[u8],
    ) -> Result<Self, GpuError> {
        let module = ctx
            .load_module(Ptx::from_binary(cubin.to_vec()))
            .map_err(driver_err("loading a module"))?;
        let main = module
            .load_function(&source.name)
            .map_err(driver_err(format!("loading {}", source.name)))?;
        opt_into_smem(&main, &source.name, config.smem_bytes())?;
        // Every module holds `<base>_reduce`, and `Transposed` modules `<base>_transpose`, where
        // `<base>` is the compile key's name (codegen ABI). The module was compiled for the
        // split_k = 1 key (split_k is a launch parameter), so which of them a launch needs
        // follows from `config`, not `source`.
        let base = codegen::compile_key(&config).name();
        let function = |needed: bool, suffix: &str| -> Result<Option<CudaFunction>, GpuError> {
            if !needed {
                return Ok(None);
            }
            let symbol = format!("{base}_{suffix}");
            module
                .load_function(&symbol)
                .map(Some)
                .map_err(driver_err(format!("loading {symbol}")))
        };
        let reduce = function(config.launches_reduce(), "reduce")?;
        let (major, _) = ctx
            .compute_capability()
            .map_err(driver_err("reading the compute capability"))?;
        let programmatic = major >= PROGRAMMATIC_LAUNCH_MAJOR;
        let transpose = function(config.a_copy.transposes_a(), "transpose")?;
        let data_parallel = if config.stream_k {
            let dp = module
                .load_function(&base)
                .map_err(driver_err(format!("loading {base}")))?;
            opt_into_smem(&dp, &base, config.smem_bytes())?;
            Some(dp)
        } else {
            None
        };
        let stream_workers = if config.stream_k {
            resident_blocks(ctx, &main, &config)?
        } else {
            0
        };
        Ok(Self {
            config,
            main,
            programmatic,
            reduce,
            transpose,
            data_parallel,
            stream_workers,
            _module: module,
        })
    }

    /// Workspace floats this kernel needs for an m×k A and an m×n C
    /// ([`KernelConfig::workspace_floats`]).
    pub fn workspace_len(&self, m: usize, n: usize, k: usize) -> usize {
        self.config.workspace_floats(m, n, k) + self.config.stream_floats(self.stream_workers)
    }

    /// Share a stream-K schedule among `workers` workers instead of the blocks the GPU holds
    /// at once: any count gives the same result, and a handful of workers on a small
    /// problem exercises every kind of split tile (the GPU tests). Size the workspace after
    /// ([`LoadedKernel::workspace_len`]). No effect on other configurations.
    pub fn set_stream_workers(&mut self, workers: usize) {
        if self.config.stream_k {
            self.stream_workers = workers.max(1);
        }
    }

    /// Arrival counters this kernel needs for an m×n C ([`KernelConfig::counters`]).
    pub fn counters_len(&self, m: usize, n: usize) -> usize {
        self.config.counters(m, n)
    }

    /// Enqueue `C = alpha·A⊗(B',D) + beta·C` on the GPU's stream (asynchronous).
    pub fn launch(
        &self,
        gpu: &Gpu,
        bufs: LaunchBuffers<'_>,
        shape: (usize, usize, usize),
        alpha: f32,
        beta: f32,
    ) -> Result<(), GpuError> {
        self.launch_on(&gpu.stream, bufs, shape, alpha, beta)
    }

    /// [`LoadedKernel::launch`] on any stream of the context the kernel was loaded into.
    pub fn launch_on(
        &self,
        stream: &Arc<CudaStream>,
        bufs: LaunchBuffers<'_>,
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        beta: f32,
    ) -> Result<(), GpuError> {
        let cfg = &self.config;
        check_index_operand(cfg, &bufs.indices)?;
        if !bufs.workspace.fits(self, (m, n, k)) {
            return Err(GpuError::WorkspaceTooSmall {
                kernel: cfg.name(),
                shape: (m, n, k),
            });
        }
        let grid = |grid_dim| LaunchConfig {
            grid_dim,
            block_dim: (cfg.threads(), 1, 1),
            shared_mem_bytes: cfg.smem_bytes(),
        };
        let tiles_grid = |rows: usize| {
            let cols = n.div_ceil(cfg.n_s as usize) as u32;
            grid((cols, rows as u32, cfg.split_k))
        };
        let m_tiles = m.div_ceil(cfg.m_s as usize);
        // What runs: (function, grid, the stream-K workers' sk_tiles). A stream-K launch is
        // the data-parallel entry over its first rows of tiles, then the workers.
        let mut launches: Vec<(&CudaFunction, LaunchConfig, Option<i32>)> = Vec::with_capacity(2);
        match &self.data_parallel {
            Some(data_parallel) => {
                let n_tiles = n.div_ceil(cfg.n_s as usize);
                let k_tiles = k.div_ceil(cfg.k_s as usize);
                let many_ways = cfg.stream_k_splits_tiles_many_ways();
                let (dp_rows, sk_tiles) =
                    stream_split(m_tiles, n_tiles, k_tiles, self.stream_workers, many_ways);
                if dp_rows > 0 {
                    launches.push((data_parallel, tiles_grid(dp_rows), None));
                }
                if sk_tiles > 0 {
                    // Every worker's share is at least one k-tile.
                    let workers = self.stream_workers.min(sk_tiles * k_tiles);
                    let workers = grid((workers as u32, 1, 1));
                    launches.push((&self.main, workers, Some(sk_tiles as i32)));
                }
            }
            None => launches.push((&self.main, tiles_grid(m_tiles), None)),
        }
        let (m32, n32, k32) = (m as i32, n as i32, k as i32);
        let (mut transposed, mut partials) = bufs
            .workspace
            .floats
            .split_at_mut(cfg.transposed_floats(m, k));
        if let Some(transpose) = &self.transpose {
            launch_transpose(stream, transpose, bufs.a, &mut transposed, (m32, k32))
                .map_err(driver_err(format!("launching {}_transpose", cfg.name())))?;
        }
        // sm_90+: a decode kernel waits for the kernel before it in the stream, and a
        // transposing kernel for its transpose, both inside the kernel (`griddepcontrol`); a
        // stream-K launch's workers follow its data-parallel rows as an ordinary launch.
        let first_dependent =
            self.programmatic && (cfg.family().is_direct() || self.transpose.is_some());
        let maps = if cfg.tma {
            let (a_ptr, a_rows) = match self.transpose {
                Some(_) => (
                    transposed.device_ptr(stream).0,
                    cfg.transposed_floats(m, k) / k.max(1),
                ),
                None => (bufs.a.device_ptr(stream).0, m),
            };
            let w = k / cfg.nm.m as usize * cfg.nm.n as usize;
            let b_ptr = bufs.b_values.device_ptr(stream).0;
            let encode = |ptr, dims, boxes| {
                tensor_map(ptr, dims, boxes).map_err(driver_err(format!(
                    "encoding the tensor maps of {}",
                    cfg.name()
                )))
            };
            Some([
                encode(a_ptr, (a_rows, k), (cfg.m_s, cfg.k_s))?,
                encode(b_ptr, (n, w), (cfg.n_s, cfg.w_s()))?,
            ])
        } else {
            None
        };
        for (i, (function, grid, sk_tiles)) in launches.into_iter().enumerate() {
            if first_dependent && i == 0 {
                let a: &dyn DevicePtr<f32> = match self.transpose {
                    Some(_) => &transposed,
                    None => bufs.a,
                };
                let args = MainArgs {
                    a,
                    b_values: bufs.b_values,
                    indices: &bufs.indices,
                    c: &mut *bufs.c,
                    partials: &mut partials,
                    stream_k: sk_tiles.map(|sk_tiles| (&mut bufs.workspace.counters, sk_tiles)),
                    scalars: (m32, n32, k32, alpha, beta),
                    maps,
                };
                launch_main_dependent(stream, function, grid, args)
                    .map_err(driver_err(format!("launching {}", cfg.name())))?;
                continue;
            }
            let mut main = stream.launch_builder(function);
            if self.transpose.is_some() {
                main.arg(&mut transposed);
            } else {
                main.arg(bufs.a);
            }
            main.arg(bufs.b_values);
            match &bufs.indices {
                IndexOperand::Wide {
                    d,
                    col_info,
                    col_count,
                } => main.arg(*d).arg(*col_info).arg(*col_count),
                IndexOperand::Bytes(d) => main.arg(*d),
            };
            main.arg(&mut *bufs.c).arg(&mut partials);
            if sk_tiles.is_some() {
                main.arg(&mut bufs.workspace.counters);
            }
            main.arg(&m32).arg(&n32).arg(&k32);
            if let Some(sk_tiles) = &sk_tiles {
                main.arg(sk_tiles);
            }
            main.arg(&alpha).arg(&beta);
            if let Some(maps) = &maps {
                main.arg(&maps[0]).arg(&maps[1]);
            }
            // SAFETY: argument list matches the kernel ABI of codegen (the stream-K workers'
            // adds the counters and sk_tiles); sizes checked by callers.
            unsafe { main.launch(grid) }
                .map_err(driver_err(format!("launching {}", cfg.name())))?;
        }
        if let Some(reduce) = &self.reduce {
            let split = cfg.split_k as i32;
            let blocks = (m * n).div_ceil(4 * 256).max(1) as u32;
            let grid = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            if self.programmatic {
                let args = ReduceArgs {
                    partials: &mut partials,
                    c: bufs.c,
                    scalars: (m32, n32, split, alpha, beta),
                };
                launch_reduce_dependent(stream, reduce, grid, args)
                    .map_err(driver_err(format!("launching {}_reduce", cfg.name())))?;
                return Ok(());
            }
            let mut launch = stream.launch_builder(reduce);
            launch.arg(&mut partials).arg(bufs.c);
            launch
                .arg(&m32)
                .arg(&n32)
                .arg(&split)
                .arg(&alpha)
                .arg(&beta);
            // SAFETY: matches the `_reduce` ABI.
            unsafe { launch.launch(grid) }
                .map_err(driver_err(format!("launching {}_reduce", cfg.name())))?;
        }
        Ok(())
    }
}

/// How much slower the stream-K workers run a tile than the data-parallel kernel does: their
/// main loop is compiled in another function (1–6 % slower, docs/perf-log.md session 31),
/// and split tiles add their partial sums' stores and loads.
const WORKER_SLOWDOWN: f64 = 0.06;

/// A stream-K launch over `rows` × `n_tiles` tiles of `k_tiles` k-tiles with `workers`
/// workers: (rows of tiles the data-parallel entry runs first, tiles the workers then share
/// out). Chosen by the time it predicts in tile times: the data-parallel rows' waves, plus
/// the workers' even share at [`WORKER_SLOWDOWN`]; every share is at least a tile (so a tile
/// is split between two workers at most). All rows data-parallel where nothing beats that:
/// a whole number of waves, too many units for the kernel's 32-bit arithmetic, or fewer
/// tiles than workers, unless the schedule splits a tile among any number of workers
/// (`many_ways`, [`KernelConfig::stream_k_splits_tiles_many_ways`]): then such a grid, which
/// would leave SMs idle for its whole time, is shared out whole.
pub fn stream_split(
    rows: usize,
    n_tiles: usize,
    k_tiles: usize,
    workers: usize,
    many_ways: bool,
) -> (usize, usize) {
    let tiles = rows * n_tiles;
    let all_data_parallel = (rows, 0);
    let fits_i32 = |shared: usize| shared.saturating_mul(k_tiles) <= i32::MAX as usize;
    if workers == 0 || tiles % workers == 0 {
        return all_data_parallel;
    }
    if tiles < workers {
        let shared_time = tiles as f64 / workers as f64 * (1.0 + WORKER_SLOWDOWN);
        return if many_ways && shared_time < 1.0 && fits_i32(tiles) {
            (0, tiles)
        } else {
            all_data_parallel
        };
    }
    let waves = |t: usize| t.div_ceil(workers) as f64;
    let mut best = (all_data_parallel, waves(tiles));
    // From most data-parallel rows to fewest: a tie keeps the fewer split tiles.
    for dp_rows in (0..rows).rev() {
        let shared = tiles - dp_rows * n_tiles;
        if shared < workers || !fits_i32(shared) {
            continue;
        }
        let time =
            waves(dp_rows * n_tiles) + shared as f64 / workers as f64 * (1.0 + WORKER_SLOWDOWN);
        if time < best.1 {
            best = ((dp_rows, shared), time);
        }
    }
    best.0
}

/// Allow `function` `bytes` of dynamic shared memory.
pub(crate) fn opt_into_smem(
    function: &CudaFunction,
    name: &str,
    bytes: u32,
) -> Result<(), GpuError> {
    function
        .set_attribute(
            FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(driver_err(format!(
            "opting {name} into {bytes} B of shared memory"
        )))?;
    Ok(())
}

/// The blocks of `config`'s kernel `function` the GPU of `ctx` holds at once: SMs × the
/// occupancy the driver reports (registers, shared memory, threads).
fn resident_blocks(
    ctx: &Arc<CudaContext>,
    function: &CudaFunction,
    config: &KernelConfig,
) -> Result<usize, GpuError> {
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(driver_err("reading the SM count"))?;
    let per_sm = function
        .occupancy_max_active_blocks_per_multiprocessor(
            config.threads(),
            config.smem_bytes() as usize,
            None,
        )
        .map_err(driver_err(format!(
            "reading the occupancy of {}",
            config.name()
        )))?;
    Ok(sms.max(1) as usize * per_sm.max(1) as usize)
}

/// The element-wise families read D as bytes, the others as i32 (codegen's kernel ABI).
fn check_index_operand(cfg: &KernelConfig, indices: &IndexOperand<'_>) -> Result<(), GpuError> {
    let bytes = cfg.reads_byte_indices();
    if bytes == matches!(indices, IndexOperand::Bytes(_)) {
        return Ok(());
    }
    Err(GpuError::IndexType {
        kernel: cfg.name(),
        wanted: if bytes { "u8 indices" } else { "i32 indices" },
        given: indices.describe(),
    })
}

/// First compute capability (major) with programmatic dependent launch (`griddepcontrol`).
const PROGRAMMATIC_LAUNCH_MAJOR: i32 = 9;

/// The reduction kernel's arguments.
struct ReduceArgs<'a, 'b> {
    partials: &'a mut CudaViewMut<'b, f32>,
    c: &'a mut CudaSlice<f32>,
    /// m, n, split_k, alpha, beta.
    scalars: (i32, i32, i32, f32, f32),
}

/// Launch the reduction as a programmatic dependent of the kernel before it in the stream
/// (`griddepcontrol.wait` in the template orders its reads after the main kernel's writes).
fn launch_reduce_dependent(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    grid: LaunchConfig,
    args: ReduceArgs<'_, '_>,
) -> Result<(), DriverError> {
    let (ws_ptr, _ws) = args.partials.device_ptr(stream);
    let (c_ptr, _c) = args.c.device_ptr_mut(stream);
    let (m, n, split, alpha, beta) = args.scalars;
    let mut params = KernelParams::default();
    params.pointers.extend([ws_ptr, c_ptr]);
    params.ints.extend([m, n, split]);
    params.floats.extend([alpha, beta]);
    // SAFETY: the `_reduce` ABI (workspace, C, m, n, split_k, alpha, beta); the buffers were
    // sized by the callers and the guards above keep them alive past the launch.
    unsafe { launch_programmatic(stream, function, grid, params) }
}

/// The transposing copy paths' first kernel: row-major `a` (m×k) into `transposed`.
fn launch_transpose(
    stream: &Arc<CudaStream>,
    transpose: &CudaFunction,
    a: &CudaSlice<f32>,
    transposed: &mut CudaViewMut<'_, f32>,
    (m, k): (i32, i32),
) -> Result<(), DriverError> {
    let grid = LaunchConfig {
        grid_dim: ((k as u32).div_ceil(32), (m as u32).div_ceil(32), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(transpose);
    launch.arg(a).arg(transposed).arg(&m).arg(&k);
    // SAFETY: matches the `_transpose` ABI; `transposed` holds transposed_lda(m)·k floats.
    unsafe { launch.launch(grid) }.map(|_| ())
}

/// The main kernel's arguments for a programmatic launch: a decode family's (A read
/// directly) or a transposing kernel's (A its transposed copy; a stream-K entry also takes
/// its arrival counters and its count of shared tiles).
struct MainArgs<'a, 'b> {
    a: &'a dyn DevicePtr<f32>,
    b_values: &'a CudaSlice<f32>,
    indices: &'a IndexOperand<'a>,
    c: &'a mut CudaSlice<f32>,
    partials: &'a mut CudaViewMut<'b, f32>,
    stream_k: Option<(&'a mut CudaSlice<u32>, i32)>,
    /// m, n, k, alpha, beta.
    scalars: (i32, i32, i32, f32, f32),
    /// The tensor maps of A (or its transposed copy) and B' for a kernel with tensor copies
    /// ([`KernelConfig::tma`]), in the kernel's argument order after alpha and beta.
    maps: Option<[TmaMap; 2]>,
}

/// Launch a main kernel as a programmatic dependent of the kernel before it in the stream
/// (the template waits for that grid before it reads A or writes anything).
fn launch_main_dependent(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    grid: LaunchConfig,
    args: MainArgs<'_, '_>,
) -> Result<(), DriverError> {
    let mut guards = Vec::with_capacity(7);
    let mut params = KernelParams::default();
    let mut read = |ptr| keep(&mut guards, ptr);
    params.pointers.push(read(args.a.device_ptr(stream)));
    params.pointers.push(read(args.b_values.device_ptr(stream)));
    match args.indices {
        IndexOperand::Wide {
            d,
            col_info,
            col_count,
        } => {
            params.pointers.push(read(d.device_ptr(stream)));
            params.pointers.push(read(col_info.device_ptr(stream)));
            params.pointers.push(read(col_count.device_ptr(stream)));
        }
        IndexOperand::Bytes(d) => params.pointers.push(read(d.device_ptr(stream))),
    }
    params.pointers.push(read(args.c.device_ptr_mut(stream)));
    params
        .pointers
        .push(read(args.partials.device_ptr_mut(stream)));
    let (m, n, k, alpha, beta) = args.scalars;
    params.ints.extend([m, n, k]);
    if let Some((counters, sk_tiles)) = args.stream_k {
        params.pointers.push(read(counters.device_ptr_mut(stream)));
        params.ints.push(sk_tiles);
    }
    params.floats.extend([alpha, beta]);
    params.maps.extend(args.maps.into_iter().flatten());
    // SAFETY: the main-kernel ABI of codegen (A, B', D [, col_info, col_count], C, workspace
    // [, counters], m, n, k [, sk_tiles], alpha, beta); sizes checked by the callers, buffers
    // kept alive by `guards`.
    let launched = unsafe { launch_programmatic(stream, function, grid, params) };
    drop(guards);
    launched
}

/// The pointer of a (pointer, guard) pair, its guard kept until the launch is queued.
fn keep<'a>(
    guards: &mut Vec<SyncOnDrop<'a>>,
    (ptr, guard): (sys::CUdeviceptr, SyncOnDrop<'a>),
) -> sys::CUdeviceptr {
    guards.push(guard);
    ptr
}

/// A kernel's parameters by kind, in ABI order within each kind: every device pointer, then
/// every int, then every float (the order of all of codegen's kernel signatures).
#[derive(Default)]
pub(super) struct KernelParams {
    pub(super) pointers: Vec<sys::CUdeviceptr>,
    pub(super) ints: Vec<i32>,
    pub(super) floats: Vec<f32>,
    maps: Vec<TmaMap>,
}

/// A tensor map as a kernel parameter (`nmk::TmaMap`, 128 bytes).
#[repr(transparent)]
#[derive(Clone, Copy)]
struct TmaMap(sys::CUtensorMap);

// SAFETY: plain data the driver reads as the kernel's 128-byte parameter.
unsafe impl cudarc::driver::DeviceRepr for TmaMap {}

/// The tensor map of a column-major f32 matrix at `ptr`,
/// `rows` contiguous floats × `cols` columns, copied in boxes of `box_dims` (rows, columns).
fn tensor_map(
    ptr: sys::CUdeviceptr,
    (rows, cols): (usize, usize),
    box_dims: (u32, u32),
) -> Result<TmaMap, DriverError> {
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    let dims = [rows as u64, cols as u64];
    let strides = [rows as u64 * 4];
    let boxes = [box_dims.0, box_dims.1];
    let steps = [1u32, 1];
    // SAFETY: every array has the rank's length; the driver only writes `map`.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            2,
            ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            steps.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()?;
    // SAFETY: initialised by the successful call above.
    Ok(TmaMap(unsafe { map.assume_init() }))
}

/// Launch `function` with programmatic stream serialization (sm_90+).
///
/// # Safety
/// `params` must match the kernel's signature and its pointers stay valid until the kernel ran.
pub(super) unsafe fn launch_programmatic(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    grid: LaunchConfig,
    params: KernelParams,
) -> Result<(), DriverError> {
    // SAFETY: passed on from the caller.
    unsafe { launch_params(stream, function, grid, params, true) }
}

/// Launch `function` with `params`, as a programmatic dependent of the kernel before it in
/// the stream when `programmatic` (sm_90+), else as an ordinary launch.
///
/// # Safety
/// `params` must match the kernel's signature and its pointers stay valid until the kernel ran.
pub(super) unsafe fn launch_params(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    grid: LaunchConfig,
    mut params: KernelParams,
    programmatic: bool,
) -> Result<(), DriverError> {
    let mut list: Vec<*mut c_void> = Vec::new();
    list.extend(
        params
            .pointers
            .iter_mut()
            .map(|p| p as *mut sys::CUdeviceptr as *mut c_void),
    );
    list.extend(params.ints.iter_mut().map(|p| p as *mut i32 as *mut c_void));
    list.extend(
        params
            .floats
            .iter_mut()
            .map(|p| p as *mut f32 as *mut c_void),
    );
    list.extend(
        params
            .maps
            .iter_mut()
            .map(|p| p as *mut TmaMap as *mut c_void),
    );
    // SAFETY: a zeroed attribute is a valid plain-data value; id and value are set.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: grid.grid_dim.0,
        gridDimY: grid.grid_dim.1,
        gridDimZ: grid.grid_dim.2,
        blockDimX: grid.block_dim.0,
        blockDimY: grid.block_dim.1,
        blockDimZ: grid.block_dim.2,
        sharedMemBytes: grid.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: u32::from(programmatic),
    };
    stream.context().bind_to_thread()?;
    // SAFETY: the caller vouches for `params`; `list` points into it and both outlive the call.
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            function.cu_function(),
            list.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

#[cfg(test)]
mod tests {
    use super::stream_split;

    #[test]
    fn whole_waves_and_small_grids_stay_data_parallel() {
        // 4096 × 8448 with 128×256 tiles: 32 × 33 = 1,056 tiles, eight waves of 132.
        assert_eq!(stream_split(32, 33, 128, 132, false), (32, 0));
        // Fewer tiles than workers, for a schedule that splits a tile between two at most.
        assert_eq!(stream_split(2, 8, 64, 132, false), (2, 0));
    }

    #[test]
    fn a_grid_of_fewer_tiles_than_workers_is_shared_out_whole_where_tiles_split_many_ways() {
        // 256 × 6656 with 128×256 tiles: 2 × 26 = 52 tiles for 132 workers.
        assert_eq!(stream_split(2, 26, 104, 132, true), (0, 52));
        // A grid that nearly fills the GPU keeps its one wave.
        assert_eq!(stream_split(1, 128, 104, 132, true), (1, 0));
        // Larger grids as with two-way splits.
        for (rows, n_tiles) in [(32, 33), (32, 26), (32, 16)] {
            assert_eq!(
                stream_split(rows, n_tiles, 128, 132, true),
                stream_split(rows, n_tiles, 128, 132, false)
            );
        }
    }

    #[test]
    fn a_partly_idle_last_wave_goes_to_the_workers() {
        // 4096 × 6656: 32 × 26 = 832 tiles, 6.3 waves of 132. Data-parallel rows and the
        // workers' share add up to every tile, every share is at least one tile, and the
        // predicted time beats seven whole waves.
        let (rows, shared) = stream_split(32, 26, 208, 132, false);
        assert!(rows < 32);
        assert_eq!(rows * 26 + shared, 832);
        assert!(shared >= 132);
        let dp_waves = (rows * 26).div_ceil(132) as f64;
        assert!(dp_waves + shared as f64 / 132.0 * 1.06 < 7.0);
    }

    #[test]
    fn a_nearly_full_last_wave_is_not_worth_the_workers() {
        // 4096²: 512 tiles, 3.88 waves: the workers' slower loop costs more than the 3 %
        // of the last wave they would fill.
        assert_eq!(stream_split(32, 16, 128, 132, false), (32, 0));
    }
}
