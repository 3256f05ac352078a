//! cuBLAS path for the prefill GEMMs of `Precision::Fast`: the dense ones (projections, shared
//! expert, router; `DenseCall`) and the routed experts (`ExpCall`). Per call the weight matrix is dequantized once
//! into an f16 scratch matrix (`deq_f16`; F16 weights are used in place), the activations are
//! rounded to f16 (`x_to_f16`), and `cublasGemmEx` multiplies them with f32 accumulation: the
//! same operand precision as our gemm_q kernels, at cuBLAS's tensor-core throughput.
//!
//! libcublas is loaded at run time (cudarc `dynamic-loading`): the crate still builds and runs
//! without it, and the session falls back to gemm_q (one log line) when it cannot be loaded.
//! `DS4_GEMM_DENSE=q` keeps gemm_q; `DS4_GEMM_DENSE_MIN_T` (default 128) is the smallest
//! batch that takes this path (below it the dequantization pass is not paid back).
//! The routed experts (`ExpCall`) dequantize the stack of every expert that has tokens into one
//! f16 scratch (4.3 GB at the real shapes, allocated on first use) and run one cublasGemmEx
//! per expert on its slot range; `DS4_GEMM_EXP=q` (or `h`) keeps the grouped gemm_q (gemm_h)
//! kernels, `DS4_GEMM_EXP_MIN_T` (default 3072) is the smallest batch that takes this path.
//! Determinism: cuBLAS with atomics not allowed (its default) gives the same bits run to run
//! for the same shapes on the same GPU and library.

use super::driver::{derr, Args, CudaError, DevBuf, DevPtr, Event, Gpu, Result};
use super::weights::WMat;
use cudarc::cublas::{result as br, sys as bs};
use cudarc::driver::{CudaContext, CudaStream};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// `DS4_GEMM_DENSE=q` keeps the built-in kernels for the dense prefill GEMMs (read once).
pub fn dense_blas_wanted() -> bool {
    env_unless!("DS4_GEMM_DENSE", "q")
}

/// Smallest token count routed to cuBLAS (`DS4_GEMM_DENSE_MIN_T`, default 128, read once).
pub fn dense_min_t() -> usize {
    env_num!("DS4_GEMM_DENSE_MIN_T", usize, 128)
}

/// `DS4_GEMM_EXP=cublas` runs the routed experts of prefill on cuBLAS (read once). Off by
/// default: on the H200 it is 1.4-1.7x faster per expert matrix at 8192 tokens in the kernel
/// bench, yet a whole 8K prefill measured slower (3823 vs 4917 t/s; bench/NOTES.md).
pub fn exp_blas_wanted() -> bool {
    env_is!("DS4_GEMM_EXP", "cublas")
}

/// Host time spent issuing the routed-expert products (`ExpCall::gemm`, seconds) and how many
/// expert matrices were issued, since the process started. With hundreds of small products per
/// matrix whose shapes change with the routing, issuing them (cuBLAS chooses an algorithm per
/// new shape) may take longer than the GPU needs to run them; ds4-bench prints this after a
/// prefill that used the path.
pub fn exp_host_time() -> (f64, u64) {
    (EXP_HOST_NS.load(Ordering::Relaxed) as f64 * 1e-9, EXP_MATS.load(Ordering::Relaxed))
}
static EXP_HOST_NS: AtomicU64 = AtomicU64::new(0);
static EXP_MATS: AtomicU64 = AtomicU64::new(0);

/// Smallest batch whose routed experts run on cuBLAS (`DS4_GEMM_EXP_MIN_T`, read once).
/// Default 3072: the path writes and re-reads the f16 copy of every chosen expert (2 x 4.3 GB
/// per matrix at the real shapes, ~2.5 ms on the H200) whatever the batch, while the grouped
/// kernels (70-117 TFLOP/s) take ~1 ms per 1000 tokens per matrix; below ~3000 tokens the
/// dequantization is not paid back (kbench `DS4_KBENCH=exp` shows the crossover).
pub fn exp_min_t() -> usize {
    env_num!("DS4_GEMM_EXP_MIN_T", usize, 3072)
}

/// Streams the routed-expert products are spread over (`DS4_GEMM_EXP_STREAMS`, default 4, 1 =
/// all on the Gpu's stream; read once). One expert's product fills only part of the GPU (at
/// 192 tokens per expert a 2048 x 192 output is ~32 tiles of 128 x 128 for 132 SMs), and the
/// products are independent (disjoint outputs), so a few run concurrently.
pub fn exp_streams() -> usize {
    static V: OnceLock<usize> = OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_GEMM_EXP_STREAMS").ok().and_then(|v| v.parse().ok()).unwrap_or(4).clamp(1, 16))
}

/// Side streams of the expert path, each with its own cuBLAS workspace (concurrent kernels
/// must not share one), and the events that fork them from / join them to the Gpu's stream.
struct Side {
    streams: Vec<Arc<CudaStream>>,
    ws: Vec<DevBuf>,
    fork: Event,
    done: Vec<Event>,
}

impl Side {
    fn new(gpu: &Gpu, n: usize) -> Result<Side> {
        let mut sd = Side { streams: Vec::new(), ws: Vec::new(), fork: gpu.event()?, done: Vec::new() };
        for _ in 0..n {
            sd.streams.push(gpu.ctx.new_stream().map_err(derr("stream"))?);
            sd.ws.push(gpu.alloc(WORKSPACE_BYTES)?);
            sd.done.push(gpu.event()?);
        }
        Ok(sd)
    }
}

/// cuBLAS workspace: given explicitly so that calls are also valid inside stream capture
/// (cuBLAS would otherwise allocate its own).
const WORKSPACE_BYTES: usize = 32 << 20;

/// A cuBLAS handle bound to the Gpu's stream.
pub struct Blas {
    handle: bs::cublasHandle_t,
    ctx: Arc<CudaContext>,
    _ws: DevBuf,
    /// expert-path side streams, made on first use (None: could not be made; all on one stream)
    side: OnceLock<Option<Side>>,
    /// The library file that was found (for the log line).
    pub lib: String,
}
// SAFETY: the handle is used only through &Gpu, on the Gpu's single stream, with the context
// bound (as every other driver object here).
unsafe impl Send for Blas {}
unsafe impl Sync for Blas {}

impl Drop for Blas {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: created in Blas::new, destroyed once (before the workspace is freed).
        unsafe {
            let _ = br::destroy_handle(self.handle);
        }
    }
}

fn dlopen_global(p: &std::path::Path) -> bool {
    // SAFETY: loading a shared library runs its initialisers; cuBLAS's are benign.
    match unsafe {
        libloading::os::unix::Library::open(Some(p), libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL)
    } {
        Ok(l) => {
            std::mem::forget(l); // stays loaded for the process lifetime
            true
        }
        Err(_) => false,
    }
}

/// Make libcublas loadable: cudarc dlopens it by soname (`libcublas.so.13` for CUDA 13, ...)
/// through LD_LIBRARY_PATH. Where it is elsewhere, `DS4_CUBLAS_LIB` (the file), the directory
/// of the libnvrtc in use (the PyPI wheels share `nvidia/cu13/lib`) and the usual toolkit
/// directories are tried by path first (libcublasLt next to it before), after which the soname
/// lookup finds the loaded library. Returns the path loaded by hand, if any.
fn preload_cublas() -> Option<String> {
    static P: OnceLock<Option<String>> = OnceLock::new();
    P.get_or_init(|| {
        let mut cands: Vec<std::path::PathBuf> = Vec::new();
        if let Ok(p) = std::env::var("DS4_CUBLAS_LIB") {
            cands.push(p.into());
        }
        let mut dirs: Vec<std::path::PathBuf> = Vec::new();
        if let Some(nv) = super::driver::preload_nvrtc(&[]) {
            if let Some(d) = std::path::Path::new(&nv).parent() {
                dirs.push(d.to_path_buf());
            }
        }
        dirs.push("/usr/local/cuda/lib64".into());
        dirs.push("/usr/local/cuda-13.0/targets/x86_64-linux/lib".into());
        for d in dirs {
            cands.push(d.join("libcublas.so.13"));
        }
        for c in cands {
            if !c.is_file() {
                continue;
            }
            if let Some(dir) = c.parent() {
                let lt = dir.join("libcublasLt.so.13");
                if lt.is_file() {
                    dlopen_global(&lt);
                }
            }
            if dlopen_global(&c) {
                return Some(c.display().to_string());
            }
        }
        None
    })
    .clone()
}

impl Blas {
    /// A handle on `gpu`'s stream, or why not (no library, no handle).
    pub fn new(gpu: &Gpu) -> Result<Blas> {
        let pre = preload_cublas();
        // SAFETY: only probes dlopen.
        if !unsafe { bs::is_culib_present() } {
            return Err(CudaError::Unavailable("libcublas not found (LD_LIBRARY_PATH or DS4_CUBLAS_LIB)".into()));
        }
        gpu.bind()?;
        let ws = gpu.alloc(WORKSPACE_BYTES)?;
        let handle = br::create_handle().map_err(derr("cublasCreate"))?;
        let b = Blas { handle, ctx: gpu.ctx.clone(), _ws: ws, side: OnceLock::new(), lib: pre.unwrap_or_else(|| "libcublas (soname)".into()) };
        b.bind(gpu.cu_stream(), b._ws.ptr)?;
        Ok(b)
    }

    /// Queue the following calls on `stream` with workspace `ws` (WORKSPACE_BYTES). Both are
    /// set together: cublasSetStream resets the workspace to the library's default pool.
    fn bind(&self, stream: cudarc::driver::sys::CUstream, ws: DevPtr) -> Result<()> {
        // SAFETY: live handle, a live stream of our context (the driver's CUstream is the
        // runtime's cudaStream_t), and a device workspace that outlives the handle's use of it.
        unsafe {
            br::set_stream(self.handle, stream as bs::cudaStream_t).map_err(derr("cublasSetStream"))?;
            bs::cublasSetWorkspace_v2(self.handle, ws as *mut c_void, WORKSPACE_BYTES).result().map_err(derr("cublasSetWorkspace"))
        }
    }

    /// The expert path's side streams (`exp_streams()` of them; None when 1 or not creatable,
    /// with one log line).
    fn side(&self, gpu: &Gpu) -> Option<&Side> {
        self.side
            .get_or_init(|| {
                let n = exp_streams();
                if n < 2 {
                    return None;
                }
                Side::new(gpu, n).map_err(|e| eprintln!("ds4: expert GEMMs on one stream: side streams not created ({e})")).ok()
            })
            .as_ref()
    }
}

/// f16 scratch of the dense path: `w16` holds a dequantized weight matrix, `x16` the
/// activations of one call (elements, not bytes). The expert path uses one of its own: `w16`
/// holds the dequantized stack of experts, `x16` the slot-major inputs of all (token, expert)
/// pairs.
#[derive(Clone, Copy, Debug)]
pub struct Dense16 {
    pub w16: DevPtr,
    pub w_elems: usize,
    pub x16: DevPtr,
    pub x_elems: usize,
}

/// One dense product `y[t, rows] = x[t, cols] . W^T` on cuBLAS, or `groups` block-diagonal
/// ones in one strided-batched call: group g multiplies rows [g*rows/groups, (g+1)*rows/groups)
/// of W by columns [g*cols, (g+1)*cols) of x into columns [g*rows/groups, ...) of y (the
/// attention output projection `out_a`). W is `w.rows` x `w.cols`.
#[derive(Clone, Copy, Debug)]
pub struct DenseCall {
    pub w: WMat,
    pub groups: usize,
    pub x: DevPtr,
    pub ldx: usize,
    pub y: DevPtr,
    pub ldy: usize,
    pub t: usize,
    /// y as f16 (cuBLAS rounds its f32 sums once, to nearest) instead of f32
    pub y16: bool,
    /// W's f16 copy (`CudaModel::w16_of`, made once by the first session), 0: none
    /// (dequantized per call into the scratch, or F16 read in place)
    pub w16: DevPtr,
}

impl DenseCall {
    fn xcols(&self) -> usize {
        self.groups * self.w.cols as usize
    }
    fn w_in_place(&self) -> bool {
        !dequantized_per_call(&self.w)
    }
    /// Whether this call fits the kernels' alignment rules and the scratch sizes.
    pub fn ok(&self, s: &Dense16) -> bool {
        let (rows, cols) = (self.w.rows.max(0) as usize, self.w.cols.max(0) as usize);
        self.t > 0
            && self.groups >= 1
            && rows > 0
            && rows % self.groups == 0
            && cols % 8 == 0
            && self.xcols() <= self.ldx
            && self.ldx % 4 == 0
            && self.x % 16 == 0
            && self.ldy >= rows
            && (!self.y16 || (self.ldy % 8 == 0 && self.y % 16 == 0))
            && (self.w_in_place() || self.w16 != 0 || rows * cols <= s.w_elems)
            && self.t * self.xcols() <= s.x_elems
            && self.t <= i32::MAX as usize
    }
    /// The f16 weight matrix cuBLAS reads.
    fn w16(&self, s: &Dense16) -> DevPtr {
        if self.w_in_place() {
            self.w.pay
        } else if self.w16 != 0 {
            self.w16
        } else {
            s.w16
        }
    }

    /// Dequantize W into `s.w16` (nothing for F16 weights or with an f16 copy).
    pub fn prep_w(&self, gpu: &Gpu, s: &Dense16) -> Result<()> {
        if self.w_in_place() || self.w16 != 0 {
            return Ok(());
        }
        launch_deq_f16(gpu, self.w, s.w16)
    }
    /// Round x to f16 into `s.x16` (t x xcols, packed).
    pub fn prep_x(&self, gpu: &Gpu, s: &Dense16) -> Result<()> {
        launch_x_to_f16(gpu, self.x, self.ldx, self.xcols(), self.t, 0, s.x16, false)
    }
    /// The cuBLAS product on the prepared f16 operands. Row-major y[t x r] = x[t x k] . W^T is
    /// column-major y^T (r x t) = W (as k x r column-major, transposed) . x^T (k x t).
    pub fn gemm(&self, blas: &Blas, s: &Dense16) -> Result<()> {
        let r = self.w.rows as usize / self.groups;
        let k = self.w.cols as usize;
        let xc = self.xcols();
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ap = &alpha as *const f32 as *const c_void;
        let bp = &beta as *const f32 as *const c_void;
        let (op_t, op_n) = (bs::cublasOperation_t::CUBLAS_OP_T, bs::cublasOperation_t::CUBLAS_OP_N);
        let (f16, f32t) = (bs::cudaDataType_t::CUDA_R_16F, bs::cudaDataType_t::CUDA_R_32F);
        let yt = if self.y16 { f16 } else { f32t };
        let ct = bs::cublasComputeType_t::CUBLAS_COMPUTE_32F;
        let algo = bs::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        // SAFETY: w16 holds rows x k f16, x16 t x xc f16 (ok() checked the scratch sizes), y
        // holds t rows of ldy f32 or f16 (y16) (caller); alpha/beta are host scalars read during the call.
        unsafe {
            if self.groups == 1 {
                br::gemm_ex(
                    blas.handle,
                    op_t,
                    op_n,
                    r as i32,
                    self.t as i32,
                    k as i32,
                    ap,
                    self.w16(s) as *const c_void,
                    f16,
                    k as i32,
                    s.x16 as *const c_void,
                    f16,
                    xc as i32,
                    bp,
                    self.y as *mut c_void,
                    yt,
                    self.ldy as i32,
                    ct,
                    algo,
                )
            } else {
                br::gemm_strided_batched_ex(
                    blas.handle,
                    op_t,
                    op_n,
                    r as i32,
                    self.t as i32,
                    k as i32,
                    ap,
                    self.w16(s) as *const c_void,
                    f16,
                    k as i32,
                    (r * k) as i64,
                    s.x16 as *const c_void,
                    f16,
                    xc as i32,
                    k as i64,
                    bp,
                    self.y as *mut c_void,
                    yt,
                    self.ldy as i32,
                    r as i64,
                    self.groups as i32,
                    ct,
                    algo,
                )
            }
        }
        .map_err(derr("cublasGemmEx"))
    }
    /// prep_w + prep_x (skipped when `x_ready`: `s.x16` already holds this call's x) + gemm
    /// (the cuBLAS part shows as `cublas_gemm` under DS4_PROFILE).
    pub fn run(&self, gpu: &Gpu, blas: &Blas, s: &Dense16, x_ready: bool) -> Result<()> {
        self.prep_w(gpu, s)?;
        if !x_ready {
            self.prep_x(gpu, s)?;
        }
        gpu.profiled("cublas_gemm", || self.gemm(blas, s))
    }
    /// What identifies the f16 activations this call leaves in `x16` (see CudaSession::gemm_blas).
    pub fn x_key(&self) -> (DevPtr, usize, usize, usize) {
        (self.x, self.ldx, self.xcols(), self.t)
    }
}

/// Whether a DenseCall dequantizes W into its scratch on every call: every type but F16, which
/// cuBLAS reads as uploaded (the payload is the plain matrix). These are the matrices an f16
/// copy made once can stand in for (weights.rs make_w16).
pub fn dequantized_per_call(w: &WMat) -> bool {
    w.ty != 1
}

/// W (rows x cols, a quantized type) dequantized to f16 at `out` (row-major).
pub fn launch_deq_f16(gpu: &Gpu, w: WMat, out: DevPtr) -> Result<()> {
    let n = w.rows as usize * (w.cols as usize / 8);
    gpu.launch("deq_f16", (n.div_ceil(256) as u32, 1, 1), 256, 0, Args::new().a(w).a(out))
}

/// x: `t` rows of `cols` f32 at stride `ldx` (row `gather[r]` when gather != 0) -> out: packed
/// f16 rows (`x_to_f16`: round to nearest even, as the GEMM kernels round). Used by the cuBLAS
/// paths here and by the f16-activation expert GEMMs (session.rs, GQ_FLAG_XH); `perm`: in
/// gemm_qr's K order (qr_kpos in common.cuh; cols % 32 == 0).
#[allow(clippy::too_many_arguments)]
pub fn launch_x_to_f16(gpu: &Gpu, x: DevPtr, ldx: usize, cols: usize, t: usize, gather: DevPtr, out: DevPtr, perm: bool) -> Result<()> {
    if perm && cols % 32 != 0 {
        return Err(CudaError::Other(format!("x_to_f16: the permuted order needs cols % 32 == 0 (cols {cols})")));
    }
    let n = t * (cols / 8);
    let args = Args::new().a(x).a(ldx as i32).a(cols as i32).a(t as i32).a(gather).a(out).a(perm as i32);
    gpu.launch("x_to_f16", (n.div_ceil(256) as u32, 1, 1), 256, 0, args)
}

/// The routed-expert product of one MoE matrix on cuBLAS: for every expert e with tokens
/// (slots off[e] .. off[e+1] of moe_group's slot order), y[slot] = x[gather[slot]] . W_e^T
/// (x row = slot when `gather` is 0: the down projection reads the slot-major mid). Outputs land
/// where the grouped gemm_q writes them (y row = slot), so moe_mid / moe_combine are unchanged.
/// `w` is the expert stack: `w.rows` x `w.cols` per expert, experts `e_pay` / `e_hdr` bytes apart.
#[derive(Clone, Copy, Debug)]
pub struct ExpCall {
    pub w: WMat,
    pub n_exp: usize,
    pub x: DevPtr,
    pub ldx: usize,
    pub gather: DevPtr,
    pub y: DevPtr,
    pub ldy: usize,
}

impl ExpCall {
    fn w_in_place(&self) -> bool {
        self.w.ty == 1 // F16 experts: cuBLAS reads expert e of the uploaded stack
    }
    fn mat_elems(&self) -> usize {
        self.w.rows.max(0) as usize * self.w.cols.max(0) as usize
    }
    /// Whether this call fits the kernels' alignment rules and the scratch sizes for `pairs`
    /// slots (the expert stack of a dequantized type must fit `s.w16` whole: expert e sits at
    /// e * rows * cols).
    pub fn ok(&self, s: &Dense16, pairs: usize) -> bool {
        let (rows, cols) = (self.w.rows.max(0) as usize, self.w.cols.max(0) as usize);
        rows > 0
            && cols > 0
            && self.n_exp > 0
            && cols % 8 == 0
            && cols <= self.ldx
            && self.ldx % 4 == 0
            && self.x % 16 == 0
            && self.ldy >= rows
            && (!self.w_in_place() || (self.w.pay % 16 == 0 && self.w.e_pay % 16 == 0))
            && (self.w_in_place() || self.n_exp * rows * cols <= s.w_elems)
            && pairs * cols <= s.x_elems
            && pairs <= i32::MAX as usize
    }
    /// Dequantize every expert that has slots (device `off`) into `s.w16` (nothing for F16).
    pub fn prep_w(&self, gpu: &Gpu, s: &Dense16, off: DevPtr) -> Result<()> {
        if self.w_in_place() {
            return Ok(());
        }
        let n = self.mat_elems() / 8;
        let grid = (n.div_ceil(256) as u32, self.n_exp as u32, 1);
        gpu.launch("deq_f16_exp", grid, 256, 0, Args::new().a(self.w).a(off).a(s.w16))
    }
    /// Gather the inputs of the `pairs` slots and round them to f16 into `s.x16` (pairs x cols).
    pub fn prep_x(&self, gpu: &Gpu, s: &Dense16, pairs: usize) -> Result<()> {
        launch_x_to_f16(gpu, self.x, self.ldx, self.w.cols as usize, pairs, self.gather, s.x16, false)
    }
    /// One cublasGemmEx per expert with slots (`off`: moe_group's offsets, on the host), each a
    /// DenseCall on expert e's f16 matrix and its slice of the prepared inputs. Not
    /// cublasGemmGroupedBatchedEx: with f16 inputs it only writes f16 outputs (cuBLAS 12.5-13
    /// type table), and the grouped kernels' outputs are f32.
    /// The products go round-robin over the side streams (see `exp_streams`), forked from and
    /// joined back to the Gpu's stream by events, so the call is ordered like a kernel launch.
    pub fn gemm(&self, gpu: &Gpu, blas: &Blas, s: &Dense16, off: &[i32]) -> Result<()> {
        let t0 = std::time::Instant::now();
        let r = self.gemm_issue(gpu, blas, s, off);
        EXP_HOST_NS.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        EXP_MATS.fetch_add(1, Ordering::Relaxed);
        r
    }
    fn gemm_issue(&self, gpu: &Gpu, blas: &Blas, s: &Dense16, off: &[i32]) -> Result<()> {
        let calls = self.expert_calls(s, off)?;
        let Some(sd) = blas.side(gpu).filter(|_| calls.len() > 1) else {
            return self.gemm_serial(blas, s, off);
        };
        gpu.record(&sd.fork)?;
        for st in &sd.streams {
            sd.fork.wait_on(st)?;
        }
        let n = sd.streams.len();
        let r = calls.iter().enumerate().try_for_each(|(i, (call, se))| {
            blas.bind(sd.streams[i % n].cu_stream(), sd.ws[i % n].ptr)?;
            call.gemm(blas, se)
        });
        // join and rebind to the Gpu's stream even after a failed call
        let mut j = Ok(());
        for (st, ev) in sd.streams.iter().zip(&sd.done) {
            j = j.and(ev.record_on(st)).and(ev.wait_on(&gpu.stream));
        }
        r.and(j).and(blas.bind(gpu.cu_stream(), blas._ws.ptr))
    }
    /// `gemm` with every product on the Gpu's stream, one after the other.
    pub fn gemm_serial(&self, blas: &Blas, s: &Dense16, off: &[i32]) -> Result<()> {
        self.expert_calls(s, off)?.iter().try_for_each(|(call, se)| call.gemm(blas, se))
    }
    /// The per-expert dense products of `gemm`: expert e's f16 matrix (scratch slot e, or the
    /// F16 stack in place) times its slots' rows of `s.x16` into its slots' rows of y.
    fn expert_calls(&self, s: &Dense16, off: &[i32]) -> Result<Vec<(DenseCall, Dense16)>> {
        if off.len() != self.n_exp + 1 {
            return Err(CudaError::Other(format!("expert GEMM: {} slot offsets for {} experts", off.len(), self.n_exp)));
        }
        let (rows, cols) = (self.w.rows, self.w.cols as usize);
        let mut v = Vec::new();
        for e in 0..self.n_exp {
            let (a, b) = (off[e], off[e + 1]);
            if b < a || a < 0 {
                return Err(CudaError::Other(format!("expert GEMM: bad slot offsets {a}..{b} for expert {e}")));
            }
            if b == a {
                continue;
            }
            let (a, n) = (a as usize, (b - a) as usize);
            let pay = if self.w_in_place() { self.w.pay + e as u64 * self.w.e_pay as u64 } else { s.w16 + (e * self.mat_elems() * 2) as u64 };
            // expert e as a plain F16 matrix (read in place by DenseCall::gemm)
            let w = WMat { pay, ty: 1, rows, cols: cols as i32, ..Default::default() };
            let call = DenseCall { w, groups: 1, x: 0, ldx: cols, y: self.y + (a * self.ldy * 4) as u64, ldy: self.ldy, t: n, y16: false, w16: 0 };
            let se = Dense16 { w16: 0, w_elems: 0, x16: s.x16 + (a * cols * 2) as u64, x_elems: n * cols };
            v.push((call, se));
        }
        Ok(v)
    }
    /// prep_w + prep_x (skipped when `x_ready`: `s.x16` already holds this call's inputs, as
    /// for up after gate) + gemm (shown as `cublas_exp` under DS4_PROFILE). `off_dev` / `off`:
    /// the slot offsets on the device and on the host; the last is the slot count.
    pub fn run(&self, gpu: &Gpu, blas: &Blas, s: &Dense16, off_dev: DevPtr, off: &[i32], x_ready: bool) -> Result<()> {
        let pairs = off.last().copied().unwrap_or(0).max(0) as usize;
        self.prep_w(gpu, s, off_dev)?;
        if !x_ready {
            self.prep_x(gpu, s, pairs)?;
        }
        gpu.profiled("cublas_exp", || self.gemm(gpu, blas, s, off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ty: i32, rows: i32, cols: i32, groups: usize, ldx: usize, ldy: usize, t: usize) -> DenseCall {
        let w = WMat { ty, rows, cols, pay: 0x1000, ..Default::default() };
        DenseCall { w, groups, x: 0x2000, ldx, y: 0x3000, ldy, t, y16: false, w16: 0 }
    }

    /// The shape guard sends only calls the f16 kernels and the scratch can serve to cuBLAS;
    /// everything else falls back to gemm_q.
    #[test]
    fn dense_call_guard() {
        let s = Dense16 { w16: 0x4000, w_elems: 8192 * 4096, x16: 0x5000, x_elems: 64 * 32768 };
        assert!(call(8, 1024, 4096, 1, 4096, 1024, 64).ok(&s));
        // out_a: 8 groups of 1024 rows over 4096-column slices of the 32768-wide heads
        assert!(call(8, 8192, 4096, 8, 32768, 8192, 64).ok(&s));
        assert!(!call(8, 8192, 4096, 8, 32768, 4096, 64).ok(&s), "y too narrow for all groups");
        assert!(!call(8, 8192, 4096, 8, 16384, 8192, 64).ok(&s), "x narrower than the groups");
        assert!(!call(8, 8190, 4096, 8, 32768, 8192, 64).ok(&s), "rows not divisible by groups");
        assert!(!call(8, 1024, 4096, 1, 4098, 1024, 64).ok(&s), "x rows not 16-byte aligned");
        assert!(call(8, 1024, 4096, 1, 4096, 1024, 512).ok(&s));
        assert!(!call(8, 1024, 4096, 1, 4096, 1024, 513).ok(&s), "x scratch too small");
        assert!(!call(8, 16384, 4096, 1, 4096, 16384, 8).ok(&s), "w scratch too small");
        // F16 weights are read in place, and an f16 copy replaces the scratch: no weight
        // scratch needed, and that copy is the matrix cuBLAS reads
        assert!(call(1, 16384, 4096, 1, 4096, 16384, 8).ok(&s));
        let c16 = DenseCall { w16: 0x6000, ..call(8, 16384, 4096, 1, 4096, 16384, 8) };
        assert!(c16.ok(&s));
        assert_eq!(c16.w16(&s), 0x6000);
        assert_eq!(call(8, 1024, 4096, 1, 4096, 1024, 64).w16(&s), s.w16);
        assert_eq!(call(1, 1024, 4096, 1, 4096, 1024, 64).w16(&s), 0x1000);
        assert!(!call(8, 1024, 4096, 1, 4096, 1024, 0).ok(&s));
        // f16 y: 16-byte aligned rows
        assert!(DenseCall { y16: true, ..call(8, 1024, 4096, 1, 4096, 1024, 64) }.ok(&s));
        assert!(!DenseCall { y16: true, ..call(8, 1020, 4096, 1, 4096, 1020, 64) }.ok(&s), "f16 y rows not 16-byte aligned");
    }

    fn exp_call(ty: i32, rows: i32, cols: i32, ldx: usize, gather: DevPtr, ldy: usize) -> ExpCall {
        let w = WMat { ty, rows, cols, pay: 0x10_0000, e_pay: (rows as i64) * (cols as i64) * 2, ..Default::default() };
        ExpCall { w, n_exp: 4, x: 0x2000, ldx, gather, y: 0x300_0000, ldy }
    }

    /// The expert path's guard: the whole dequantized stack must fit the weight scratch (F16
    /// stacks are read in place), all pairs' inputs the activation scratch.
    #[test]
    fn exp_call_guard() {
        let s = Dense16 { w16: 0x4000, w_elems: 4 * 2048 * 4096, x16: 0x5000, x_elems: 600 * 4096 };
        assert!(exp_call(16, 2048, 4096, 4096, 0x6000, 2048).ok(&s, 600));
        assert!(exp_call(10, 4096, 2048, 2048, 0, 4096).ok(&s, 1200), "down: 1200 pairs x 2048 fit");
        assert!(!exp_call(16, 2048, 4096, 4096, 0x6000, 2048).ok(&s, 601), "x scratch too small");
        assert!(!exp_call(16, 4096, 4096, 4096, 0x6000, 4096).ok(&s, 8), "stack larger than the w scratch");
        assert!(exp_call(1, 4096, 4096, 4096, 0x6000, 4096).ok(&s, 8), "F16 stacks need no w scratch");
        assert!(!exp_call(16, 2048, 4096, 4096, 0x6000, 1024).ok(&s, 8), "y rows narrower than the output");
        assert!(!exp_call(16, 2048, 4092, 4096, 0x6000, 2048).ok(&s, 8), "cols not a multiple of 8");
        assert!(!exp_call(16, 2048, 4096, 4094, 0x6000, 2048).ok(&s, 8), "x rows not 16-byte aligned");
    }

    /// Per-expert products: expert e multiplies scratch matrix e (or stack entry e for F16)
    /// by the f16 rows of its slots off[e]..off[e+1] into the same rows of y; empty experts
    /// are skipped, inconsistent offsets are an error.
    #[test]
    fn exp_calls_follow_the_slot_offsets() {
        let s = Dense16 { w16: 0x4000_0000, w_elems: 4 * 64 * 256, x16: 0x5000_0000, x_elems: 100 * 256 };
        let c = exp_call(12, 64, 256, 512, 0x6000, 80);
        let off = [0, 3, 3, 10, 12];
        let v = c.expert_calls(&s, &off).unwrap();
        assert_eq!(v.len(), 3, "expert 1 has no slots");
        let want = [(0usize, 0usize, 3usize), (2, 3, 7), (3, 10, 2)];
        for ((call, se), &(e, a, n)) in v.iter().zip(&want) {
            assert_eq!(call.w.ty, 1);
            assert_eq!((call.w.rows, call.w.cols), (64, 256));
            assert_eq!(call.w.pay, s.w16 + (e * 64 * 256 * 2) as u64, "expert {e}: scratch slot");
            assert_eq!(call.t, n);
            assert_eq!(call.groups, 1);
            assert_eq!((call.ldx, call.ldy), (256, 80), "x16 is packed (ld = cols); y keeps its stride");
            assert_eq!(call.y, c.y + (a * 80 * 4) as u64);
            assert_eq!(se.x16, s.x16 + (a * 256 * 2) as u64);
            assert_eq!(se.x_elems, n * 256);
            assert!(call.ok(se), "each per-expert product passes the dense guard on its slice");
        }
        // F16 stacks: expert e read in place, e_pay bytes apart
        let c16 = exp_call(1, 64, 256, 256, 0, 64);
        let v = c16.expert_calls(&s, &off).unwrap();
        assert_eq!(v[1].0.w.pay, c16.w.pay + 2 * c16.w.e_pay as u64);
        assert!(c.expert_calls(&s, &[0, 3, 2, 10, 12]).is_err(), "decreasing offsets");
        assert!(c.expert_calls(&s, &[0, 3, 10, 12]).is_err(), "wrong offset count");
    }
}
