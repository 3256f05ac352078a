//! cuBLAS path for the dense prefill GEMMs of `Precision::Fast` (projections, shared expert,
//! router; not the grouped routed-expert GEMMs). Per call the weight matrix is dequantized once
//! into an f16 scratch matrix (`deq_f16`; F16 weights are used in place), the activations are
//! rounded to f16 (`x_to_f16`), and `cublasGemmEx` multiplies them with f32 accumulation: the
//! same operand precision as our gemm_q kernels, at cuBLAS's tensor-core throughput.
//!
//! libcublas is loaded at run time (cudarc `dynamic-loading`): the crate still builds and runs
//! without it, and the session falls back to gemm_q (one log line) when it cannot be loaded.
//! `DS4_GEMM_DENSE=q` keeps gemm_q; `DS4_GEMM_DENSE_MIN_T` (default 128) is the smallest
//! batch that takes this path (below it the dequantization pass is not paid back).
//! Determinism: cuBLAS with atomics not allowed (its default) gives the same bits run to run
//! for the same shapes on the same GPU and library.

use super::driver::{derr, Args, CudaError, DevBuf, DevPtr, Gpu, Result};
use super::weights::WMat;
use cudarc::cublas::{result as br, sys as bs};
use cudarc::driver::CudaContext;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

/// `DS4_GEMM_DENSE=q` keeps the built-in kernels for the dense prefill GEMMs (read once).
pub fn dense_blas_wanted() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_GEMM_DENSE").map(|v| v != "q").unwrap_or(true))
}

/// Smallest token count routed to cuBLAS (`DS4_GEMM_DENSE_MIN_T`, default 128, read once).
pub fn dense_min_t() -> usize {
    static V: OnceLock<usize> = OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_GEMM_DENSE_MIN_T").ok().and_then(|v| v.parse().ok()).unwrap_or(128))
}

/// cuBLAS workspace: given explicitly so that calls are also valid inside stream capture
/// (cuBLAS would otherwise allocate its own).
const WORKSPACE_BYTES: usize = 32 << 20;

/// A cuBLAS handle bound to the Gpu's stream.
pub struct Blas {
    handle: bs::cublasHandle_t,
    ctx: Arc<CudaContext>,
    _ws: DevBuf,
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
        let b = Blas { handle, ctx: gpu.ctx.clone(), _ws: ws, lib: pre.unwrap_or_else(|| "libcublas (soname)".into()) };
        // SAFETY: live handle, our stream (the driver's CUstream is the runtime's cudaStream_t),
        // and a device workspace that lives as long as the handle.
        unsafe {
            br::set_stream(b.handle, gpu.cu_stream() as bs::cudaStream_t).map_err(derr("cublasSetStream"))?;
            bs::cublasSetWorkspace_v2(b.handle, b._ws.ptr as *mut c_void, WORKSPACE_BYTES)
                .result()
                .map_err(derr("cublasSetWorkspace"))?;
        }
        Ok(b)
    }
}

/// f16 scratch of the dense path: `w16` holds a dequantized weight matrix, `x16` the
/// activations of one call (elements, not bytes).
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
}

impl DenseCall {
    fn xcols(&self) -> usize {
        self.groups * self.w.cols as usize
    }
    fn w_in_place(&self) -> bool {
        self.w.ty == 1 // F16: cuBLAS reads the uploaded matrix (the payload is the plain matrix)
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
            && (self.w_in_place() || rows * cols <= s.w_elems)
            && self.t * self.xcols() <= s.x_elems
            && self.t <= i32::MAX as usize
    }
    /// The f16 weight matrix cuBLAS reads.
    fn w16(&self, s: &Dense16) -> DevPtr {
        if self.w_in_place() {
            self.w.pay
        } else {
            s.w16
        }
    }

    /// Dequantize W into `s.w16` (nothing for F16 weights).
    pub fn prep_w(&self, gpu: &Gpu, s: &Dense16) -> Result<()> {
        if self.w_in_place() {
            return Ok(());
        }
        let n = self.w.rows as usize * (self.w.cols as usize / 8);
        gpu.launch("deq_f16", (n.div_ceil(256) as u32, 1, 1), 256, 0, Args::new().a(self.w).a(s.w16))
    }
    /// Round x to f16 into `s.x16` (t x xcols, packed).
    pub fn prep_x(&self, gpu: &Gpu, s: &Dense16) -> Result<()> {
        let xc = self.xcols();
        let n = self.t * (xc / 8);
        let args = Args::new().a(self.x).a(self.ldx as i32).a(xc as i32).a(self.t as i32).a(s.x16);
        gpu.launch("x_to_f16", (n.div_ceil(256) as u32, 1, 1), 256, 0, args)
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
        let ct = bs::cublasComputeType_t::CUBLAS_COMPUTE_32F;
        let algo = bs::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        // SAFETY: w16 holds rows x k f16, x16 t x xc f16 (ok() checked the scratch sizes), y
        // holds t rows of ldy f32 (caller); alpha/beta are host scalars read during the call.
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
                    f32t,
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
                    f32t,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ty: i32, rows: i32, cols: i32, groups: usize, ldx: usize, ldy: usize, t: usize) -> DenseCall {
        let w = WMat { ty, rows, cols, pay: 0x1000, ..Default::default() };
        DenseCall { w, groups, x: 0x2000, ldx, y: 0x3000, ldy, t }
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
        // F16 weights are read in place: no weight scratch needed
        assert!(call(1, 16384, 4096, 1, 4096, 16384, 8).ok(&s));
        assert!(!call(8, 1024, 4096, 1, 4096, 1024, 0).ok(&s));
    }
}
