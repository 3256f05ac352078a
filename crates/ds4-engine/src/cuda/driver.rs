//! Thin layer over the CUDA driver API (through cudarc's dynamically loaded bindings):
//! device init, NVRTC compilation of the kernel source, raw device buffers, kernel launches,
//! events and graphs. Raw `CUdeviceptr`s are used throughout so that kernel argument structs
//! can be plain `#[repr(C)]` data shared with the CUDA source.

use cudarc::driver::{result as dr, sys, CudaContext, CudaStream};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

pub type DevPtr = sys::CUdeviceptr;

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("CUDA is not available: {0}")]
    Unavailable(String),
    #[error("CUDA driver error in {ctx}: {err}")]
    Driver { ctx: String, err: String },
    #[error("NVRTC compilation failed: {0}")]
    Compile(String),
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, CudaError>;

pub(crate) fn derr<E: std::fmt::Debug>(ctx: &str) -> impl FnOnce(E) -> CudaError + '_ {
    move |e| CudaError::Driver { ctx: ctx.to_string(), err: format!("{e:?}") }
}

/// The full kernel source handed to NVRTC (headers inlined: NVRTC has no include path here).
/// The kernels' constants that session.rs mirrors: (the kernel-source expression, the Rust
/// name, its value). kernel_source asserts each equal, so a drifted one fails to compile.
fn shared_constants() -> Vec<(&'static str, &'static str, i64)> {
    use super::session as s;
    let rb = |t: ds4_gguf::GgmlType| s::qs_slot_row_bytes(t.id() as i32) as i64;
    use ds4_gguf::GgmlType::{Iq2Xxs, Q2K, Q4K};
    vec![
        ("GR_ST", "GR_ST", s::GR_ST as i64),
        ("GQ_GREP", "GQ_GREP", s::GQ_GREP as i64),
        ("QSW<T_IQ2_XXS>::P", "QS_PAIR", s::QS_PAIR as i64),
        ("QSW<T_Q2_K>::P", "QS_PAIR", s::QS_PAIR as i64),
        ("QSW<T_Q4_K>::P", "QS_PAIR", s::QS_PAIR as i64),
        ("QSW<T_IQ2_XXS>::RB", "qs_slot_row_bytes", rb(Iq2Xxs)),
        ("QSW<T_Q2_K>::RB", "qs_slot_row_bytes", rb(Q2K)),
        ("QSW<T_Q4_K>::RB", "qs_slot_row_bytes", rb(Q4K)),
        ("GU_XCH", "GU_XCH", s::GU_XCH as i64),
        ("GQR<T_IQ2_XXS>::RB", "gq_raw_bytes", s::gq_raw_bytes(Iq2Xxs.id() as i32) as i64),
        ("GQR<T_Q2_K>::RB", "gq_raw_bytes", s::gq_raw_bytes(Q2K.id() as i32) as i64),
        ("GQR<T_Q4_K>::RB", "gq_raw_bytes", s::gq_raw_bytes(Q4K.id() as i32) as i64),
        ("GQ_FLAG_XH", "GQ_FLAG_XH", s::GQ_FLAG_XH as i64),
        ("GQ_FLAG_HI", "GQ_FLAG_HI", s::GQ_FLAG_HI as i64),
        ("GQ_FLAG_LO", "GQ_FLAG_LO", s::GQ_FLAG_LO as i64),
        ("GQ_FLAG_S64", "GQ_FLAG_S64", s::GQ_FLAG_S64 as i64),
        ("GQ_FLAG_MIDB", "GQ_FLAG_MIDB", s::GQ_FLAG_MIDB as i64),
        ("GQ_FLAG_Y16", "GQ_FLAG_Y16", s::GQ_FLAG_Y16 as i64),
        ("GQ_KS_SHIFT", "GQ_KS_SHIFT", s::GQ_KS_SHIFT as i64),
        ("GQ_DG_SHIFT", "GQ_DG_SHIFT", s::GQ_DG_SHIFT as i64),
        ("GQ_SPLIT_NX", "QS_NX", s::QS_NX as i64),
        ("HCM_SMEM", "HC_MMA_SMEM", s::HC_MMA_SMEM as i64),
        ("HCM_SMEM8", "HC_MMA8_SMEM", s::HC_MMA8_SMEM as i64),
        ("ATW_TR", "ATTN_TW_TRACE", s::ATTN_TW_TRACE as i64),
        ("IDX_ROWS_PER_BLOCK", "IDX_ROWS_PER_BLOCK", s::IDX_ROWS_PER_BLOCK as i64),
        ("IDXQ_L_CS", "IDXQ_L_CS", s::IDXQ_L_CS as i64),
        ("IDXW_MAX_RPB", "IDXW_MAX_RPB", s::IDXW_MAX_RPB as i64),
        ("IDT_R", "IDT_R", s::IDT_R as i64),
        ("IWG_T", "IWG_T", s::IWG_T as i64),
        ("IWG_R", "IWG_R", s::IWG_R as i64),
        ("IWG_QB", "IWG_QB", s::IWG_QB as i64),
        ("TOPK_CL", "TOPK_CL", s::TOPK_CL as i64),
        ("MAX_JOBS", "MAX_JOBS", s::MAX_JOBS as i64),
        ("MAXN", "HC_MAXN", s::HC_MAXN as i64),
        ("HC_S_F32", "HC_S_F32", s::HC_S_F32 as i64),
        ("HC_S_F16", "HC_S_F16", s::HC_S_F16 as i64),
        ("HCF_S_F16", "HCF_S_F16", s::HCF_S_F16 as i64),
        ("MVQM_NT", "MVQM_NT", s::MVQM_NT as i64),
        ("MVQS_ST", "MVQS_ST", s::MVQS_ST as i64),
        ("mvqs_stage_bytes(T_IQ2_XXS)", "mvqs_stage_bytes", s::mvqs_stage_bytes(Iq2Xxs.id() as i32) as i64),
        ("mvqs_stage_bytes(T_Q2_K)", "mvqs_stage_bytes", s::mvqs_stage_bytes(Q2K.id() as i32) as i64),
        ("mvqs_stage_bytes(T_Q4_K)", "mvqs_stage_bytes", s::mvqs_stage_bytes(Q4K.id() as i32) as i64),
    ]
}

pub fn kernel_source() -> String {
    let grid = include_str!("kernels/iq2xxs_grid.inc");
    let matmul = include_str!("kernels/matmul.cuh").replace("#include \"iq2xxs_grid.inc\"", grid);
    let layouts: String = super::session::kernel_arg_layouts()
        .iter()
        .map(|(name, size, align)| format!("static_assert(sizeof({name}) == {size} && alignof({name}) == {align}, \"{name}: layout differs from its Rust mirror\");\n"))
        .collect::<String>()
        + &shared_constants()
            .iter()
            .map(|(c, rust, v)| format!("static_assert({c} == {v}, \"{c} differs from session.rs {rust} ({v})\");\n"))
            .collect::<String>();
    format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
        include_str!("kernels/common.cuh"),
        matmul,
        include_str!("kernels/matvec.cuh"),
        include_str!("kernels/q8.cuh"),
        include_str!("kernels/model.cuh"),
        include_str!("kernels/attn.cuh"),
        include_str!("kernels/idx.cuh"),
        include_str!("kernels/decode.cuh"),
        layouts
    )
}

/// Names of every `extern "C"` kernel in the source (checked by the NVRTC test).
pub const KERNELS: &[&str] = &[
    "matvec_grouped", "mv2", "mv2_b2", "mv2_b3", "mv2_b4", "moe_down_fused", "gemm_f32", "gemm_h", "gemm_q64", "gemm_q128", "gq_ks_sum", "gemm_qr", "gemm_qr2", "gemm_qs", "gemm_qs2", "gemm_qs4", "gemm_qr_y16", "gemm_qr2_y16", "gemm_qs_y16", "gemm_qs2_y16", "gemm_qs4_y16", "gemm_qs_gu", "gemm_qs2_gu", "gemm_qs_guc", "gemm_qs_dg",
    "repack_blocks", "dequant_rows", "embed_rows", "embed_rows_h",
    "hc_post_mix", "hc_post_mix4", "hc_post_mma", "hc_post_mma8", "hc_post_mma8_y", "hc_post_mma8_h", "hc_post_mma8_hy", "hc_post_mma8_hp", "hc_post_mma8_hyp", "hc_post_mma8_hpy", "hc_post_mma8_hyps", "hc_finish", "hc_finish_h", "hc_sk_rows", "hc_step", "hc_step_gs", "attn_prep", "comp_emit", "comp_emit16", "comp_state", "idx_q_prep", "idx_q_prep_l", "e2m1_check", "idx_score", "idx_score_w", "topk_select", "topk_cluster",
    "attn_partial", "attn_combine", "moe_route", "moe_group", "moe_group2", "moe_grp_count", "moe_grp_place", "moe_mid", "moe_mid_h", "moe_mid_pairs_h", "moe_combine", "argmax_excl", "near_max", "topk_logits", "topk_pairs", "copy_f4", "read_f4",
    "attn_kv_f16", "attn_tc_512", "attn_tc_128", "attn_tw_512", "attn_tw_128", "attn_tx_512", "attn_tx_128", "idx_to_f16", "idx_score_tc", "idx_score_tc2", "idx_score_wg", "idx_score_dtc", "quant_q8", "q8_from_f16", "mvq_b2", "mvq_b3", "mvqm", "mvqm_k", "mvqs", "pair_chunks", "quant_q8p",
    "deq_f16", "deq_f16_exp", "x_to_f16", "attn_dec", "moe_route_w", "router_dec",
];

static NVRTC_PRELOAD: OnceLock<Option<String>> = OnceLock::new();

/// Make libnvrtc loadable. cudarc looks it up by soname (`libnvrtc.so.13`, ...) through the
/// normal dynamic-linker search (LD_LIBRARY_PATH). Where it lives elsewhere (e.g. the PyPI
/// wheel `nvidia-cuda-nvrtc`, .../site-packages/nvidia/cu13/lib), set `DS4_NVRTC_LIB` to the
/// library file: it is dlopen'ed by path first, after which the soname lookup finds it.
pub fn preload_nvrtc(extra_candidates: &[std::path::PathBuf]) -> Option<String> {
    NVRTC_PRELOAD
        .get_or_init(|| {
            let mut cands: Vec<std::path::PathBuf> = Vec::new();
            if let Ok(p) = std::env::var("DS4_NVRTC_LIB") {
                cands.push(p.into());
            }
            cands.extend(extra_candidates.iter().cloned());
            for c in cands {
                if c.is_file() {
                    // libnvrtc dlopens its builtins library by soname at compile time: load the
                    // one next to it first so that lookup succeeds too.
                    if let Some(dir) = c.parent() {
                        if let Ok(rd) = std::fs::read_dir(dir) {
                            for e in rd.flatten() {
                                let n = e.file_name().to_string_lossy().to_string();
                                if n.starts_with("libnvrtc-builtins.so") {
                                    // SAFETY: as below.
                                    if let Ok(b) = unsafe { libloading::os::unix::Library::open(Some(e.path()), libc_flags()) } {
                                        std::mem::forget(b);
                                    }
                                }
                            }
                        }
                    }
                    // SAFETY: loading a shared library runs its initialisers; libnvrtc's are benign.
                    if let Ok(lib) = unsafe { libloading::os::unix::Library::open(Some(&c), libc_flags()) } {
                        std::mem::forget(lib); // keep it loaded for the process lifetime
                        return Some(c.display().to_string());
                    }
                }
            }
            None
        })
        .clone()
}

fn libc_flags() -> i32 {
    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL
}

/// True when libnvrtc can be loaded (after `preload_nvrtc`).
pub fn nvrtc_present() -> bool {
    // SAFETY: only probes dlopen.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// True when the CUDA driver library can be loaded and reports at least one device.
pub fn cuda_present() -> bool {
    // SAFETY: only probes dlopen.
    if !unsafe { sys::is_culib_present() } {
        return false;
    }
    dr::init().is_ok() && matches!(dr::device::get_count(), Ok(n) if n > 0)
}

/// NVRTC options: the device's own architecture (full Hopper code on an H200), IEEE
/// division/sqrt (the reference precision must follow the CPU path), no fast math.
pub fn compile(arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        fmad: Some(true),
        options: vec!["--std=c++17".into(), "-default-device".into()],
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(kernel_source(), opts).map_err(|e| CudaError::Compile(format!("{e}")))
}

/// Compile straight to a CUBIN for `arch` (a real `sm_XX`): the driver then loads machine code
/// without a PTX JIT step at start-up.
pub fn compile_cubin(arch: &str) -> Result<Vec<u8>> {
    use cudarc::nvrtc::{result as nr, sys as ns};
    let src = std::ffi::CString::new(kernel_source()).map_err(|e| CudaError::Compile(e.to_string()))?;
    let prog = nr::create_program(&src, None).map_err(|e| CudaError::Compile(format!("{e:?}")))?;
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
        "--fmad=true".to_string(),
        "--std=c++17".to_string(),
        "-default-device".to_string(),
    ];
    // DS4_NVRTC_VERBOSE=1: ptxas's per-kernel report and warnings (e.g. a serialized wgmma
    // pipeline) printed to stderr
    let verbose = std::env::var("DS4_NVRTC_VERBOSE").map(|v| v == "1").unwrap_or(false);
    if verbose {
        opts.push("--ptxas-options=-v".to_string());
    }
    // SAFETY: prog is a live program; destroyed below on every path.
    unsafe {
        let r = nr::compile_program(prog, &opts);
        if verbose {
            if let Ok(l) = nr::get_program_log(prog) {
                let b: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                eprintln!("{}", String::from_utf8_lossy(&b));
            }
        }
        if let Err(e) = r {
            let log = nr::get_program_log(prog).ok().map(|l| {
                let b: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                String::from_utf8_lossy(&b).to_string()
            });
            let _ = nr::destroy_program(prog);
            return Err(CudaError::Compile(format!("{e:?}: {}", log.unwrap_or_default())));
        }
        let mut n: usize = 0;
        let rc = ns::nvrtcGetCUBINSize(prog, &mut n as *mut usize);
        if rc != ns::nvrtcResult::NVRTC_SUCCESS || n == 0 {
            let _ = nr::destroy_program(prog);
            return Err(CudaError::Compile(format!("no CUBIN produced ({rc:?})")));
        }
        let mut buf = vec![0u8; n];
        let rc = ns::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut std::ffi::c_char);
        let _ = nr::destroy_program(prog);
        if rc != ns::nvrtcResult::NVRTC_SUCCESS {
            return Err(CudaError::Compile(format!("nvrtcGetCUBIN: {rc:?}")));
        }
        Ok(buf)
    }
}

/// `compile_cubin` with a disk cache keyed by a hash of the source and arch
/// (`$DS4_KERNEL_CACHE`, default `$HOME/.cache/ds4-cuda`): later processes skip NVRTC.
pub fn cached_cubin(arch: &str) -> Result<Vec<u8>> {
    let src = kernel_source();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in src.bytes().chain(arch.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let dir = std::env::var_os("DS4_KERNEL_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/ds4-cuda")));
    let path = dir.as_ref().map(|d| d.join(format!("kernels-{arch}-{h:016x}.cubin")));
    if let Some(p) = &path {
        if let Ok(b) = std::fs::read(p) {
            if b.len() > 4 && &b[..4] == b"\x7fELF" {
                return Ok(b);
            }
        }
    }
    // long work shows progress: a cold start compiles for about a minute
    match &dir {
        Some(d) => eprintln!("ds4: compiling the CUDA kernels for {arch} with NVRTC (first start with this build; about a minute; cached in {})", d.display()),
        None => eprintln!("ds4: compiling the CUDA kernels for {arch} with NVRTC (about a minute; set DS4_KERNEL_CACHE to keep the result)"),
    }
    let cubin = compile_cubin(arch)?;
    if let (Some(d), Some(p)) = (&dir, &path) {
        // best effort: a read-only home just means compiling again next time
        let _ = std::fs::create_dir_all(d).and_then(|_| std::fs::write(p, &cubin));
    }
    Ok(cubin)
}

/// Whether the kernels built for compute capability `cc` include the wgmma ones (an "a" target).
pub fn wgmma_built(cc: (i32, i32)) -> bool {
    arch_for(cc) == "sm_90a"
}

pub fn arch_for(cc: (i32, i32)) -> &'static str {
    match cc {
        // the "a" target: wgmma (gemm_qr); such code runs on sm_90 parts only, which this is
        (9, 0) => "sm_90a",
        (8, 9) => "sm_89",
        (8, 6) => "sm_86",
        (8, 0) => "sm_80",
        (10, 0) => "sm_100",
        (12, 0) => "sm_120",
        (7, 5) => "sm_75",
        _ => "sm_80",
    }
}

/// A device allocation freed on drop.
///
/// Every device object (buffer, graph, event) holds its context: the context is released only
/// after the last of them is gone, and each drop makes the context current on the dropping
/// thread first. Without that, dropping a session that held the last reference to its model
/// released the primary context (destroying it) before the session's buffers and CUDA graphs
/// were freed, so `cuMemFree` / `cuGraphExecDestroy` ran on handles of a destroyed context from
/// a thread where it was no longer current (the likely cause of the shutdown hang the server
/// saw on the H200).
pub struct DevBuf {
    pub ptr: DevPtr,
    pub bytes: usize,
    ctx: Arc<CudaContext>,
}
impl DevBuf {
    pub fn f32_ptr(&self) -> DevPtr {
        self.ptr
    }
}
impl Drop for DevBuf {
    fn drop(&mut self) {
        if self.ptr != 0 {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: ptr came from malloc_sync in this context and is freed once.
            unsafe {
                let _ = dr::free_sync(self.ptr);
            }
        }
    }
}
// SAFETY: a device pointer is just an address; synchronization is by stream order.
unsafe impl Send for DevBuf {}
unsafe impl Sync for DevBuf {}

/// A CUDA event (destroyed on drop, in its context).
pub struct Event {
    ev: sys::CUevent,
    ctx: Arc<CudaContext>,
}
impl Event {
    /// Wait until the work recorded into the event has finished.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live event owned by self.
        unsafe { dr::event::synchronize(self.ev) }.map_err(derr("event sync"))
    }
}
impl Event {
    /// Record the event on `stream` (another stream than the Gpu's: cuBLAS side streams).
    pub fn record_on(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: a live event owned by self; a live stream (the borrow keeps it alive).
        unsafe { dr::event::record(self.ev, stream.cu_stream()) }.map_err(derr("record"))
    }
    /// Make `stream` wait (on the device) for the work last recorded into the event.
    pub fn wait_on(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: as above.
        unsafe { dr::stream::wait_event(stream.cu_stream(), self.ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }.map_err(derr("stream wait"))
    }
}
impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: created by Gpu::event and destroyed once; pending work completes regardless.
        unsafe {
            let _ = dr::event::destroy(self.ev);
        }
    }
}
// SAFETY: an event handle is a plain driver object; recording and waiting are thread-safe.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

pub struct Gpu {
    /// cuBLAS handle on our stream, created on first use (`Gpu::blas`); None when libcublas
    /// cannot be loaded. First field: dropped (handle destroyed) before the stream.
    blas: OnceLock<Option<super::blas::Blas>>,
    /// Counts device work queued through this Gpu (launches, copies, memsets): a value that
    /// has not changed proves that nothing was written since (see `work_seq`).
    seq: std::sync::atomic::AtomicU64,
    /// gemm_qr's tile counter (two ints the kernel leaves zero; allocated on first use, see
    /// `qr_counter`). Before ctx: freed while the context lives.
    qr_ctr: OnceLock<DevBuf>,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// A second stream for independent work inside a decode step (`fork` .. `join`: a
    /// parallel branch of the decode graph); launches go to it while `on_side` is set, with
    /// priority `side_prio` (see `fork`).
    side: Arc<CudaStream>,
    on_side: std::sync::atomic::AtomicBool,
    side_prio: Option<i32>,
    /// fork (recorded on the main stream) and join (on the side stream) events
    fork_ev: (Event, Event),
    _module: sys::CUmodule,
    funcs: HashMap<&'static str, sys::CUfunction>,
    pub name: String,
    pub sm_count: i32,
    pub cc: (i32, i32),
    pub total_mem: usize,
    /// Shared memory one block may opt in to (bytes; 227 KB on sm_90).
    smem_optin: i32,
    /// Seconds NVRTC took to build the kernels.
    pub compile_s: f64,
    /// Per-kernel (total ms, launches) when `DS4_PROFILE` is set: every launch is then timed
    /// with events and synchronized (slow; for finding where time goes, not for throughput).
    profile: Option<std::sync::Mutex<HashMap<String, (f64, usize)>>>,
    prof_ev: (Event, Event),
    /// Programmatic dependent launch (Hopper+): each kernel may be scheduled while its
    /// predecessor drains; kernels order their dependent memory accesses with
    /// `griddepcontrol.wait` (the PDL_* macros in common.cuh). On with `DS4_PDL=1`: measured
    /// slower on the H200 in CUDA graphs (decode 64.7 -> 59.2 t/s in session 2; session 4:
    /// 90.5 t/s with the successor released before the wait, 93.5 after it, 96.2 off), so off by default.
    pub pdl: bool,
    /// Kernels launched with PDL whatever `pdl` says: `DS4_PDL_K`, a comma list of kernel
    /// names (empty: none), for A/B runs of single kernels (every kernel waits before its
    /// dependent accesses, so any may be named). Default quant_q8: decode +0.2 % on an H100,
    /// 4 of 4 runs; attn_prep and router_dec neutral, attn_dec -2.7 %, every mvq_b3 launch
    /// -3 %, every mvq_b2 launch -1 % (bench/NOTES.md session 47). hc_step_gs has its own
    /// (`DS4_HC_PDL`).
    pdl_k: Vec<String>,
    /// Timing ablation only: kernels named in `DS4_SKIP_KERNELS` (comma list) are not launched,
    /// so a run shows what the rest costs. The results of such a run are meaningless.
    skip: Vec<String>,
}
// SAFETY: the context is bound per call (bind_to_thread) and all work goes to one stream
// (and its side stream between fork and join, ordered by events; see `fork` for who may queue
// work while a branch is open).
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

impl Gpu {
    pub fn new(ordinal: usize) -> Result<Gpu> {
        preload_nvrtc(&[]);
        if !cuda_present() {
            return Err(CudaError::Unavailable("no CUDA driver or no device".into()));
        }
        if !nvrtc_present() {
            return Err(CudaError::Unavailable(
                "libnvrtc not found (set LD_LIBRARY_PATH or DS4_NVRTC_LIB to the libnvrtc.so file)".into(),
            ));
        }
        let ctx = CudaContext::new(ordinal).map_err(derr("context"))?;
        // We order everything on one stream ourselves: no per-buffer event tracking.
        // SAFETY: no CudaSlice of cudarc's safe API is used across streams.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(derr("stream"))?;
        // the device's greatest stream priority (a lower number) for the side stream, unless
        // DS4_FORK_PRIO=0
        let side_prio = match std::env::var("DS4_FORK_PRIO").map(|v| v != "0").unwrap_or(true) {
            true => Some(dr::stream::get_priority_range().map_err(derr("stream priorities"))?.1),
            false => None,
        };
        let side = match side_prio {
            Some(p) => ctx.new_stream_with_priority(p),
            None => ctx.new_stream(),
        }
        .map_err(derr("stream"))?;
        let cc = ctx.compute_capability().map_err(derr("cc"))?;
        let name = ctx.name().unwrap_or_default();
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(derr("attr"))?;
        let total_mem = ctx.total_mem().map_err(derr("mem"))?;
        let smem_optin = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(derr("attr"))?;
        let t0 = std::time::Instant::now();
        let cubin = cached_cubin(arch_for(cc))?;
        let compile_s = t0.elapsed().as_secs_f64();
        // SAFETY: a complete CUBIN image from NVRTC.
        let module = unsafe { dr::module::load_data(cubin.as_ptr() as *const c_void) }.map_err(derr("load module"))?;
        let mut funcs = HashMap::new();
        for k in KERNELS {
            let name = std::ffi::CString::new(*k).unwrap();
            // SAFETY: module loaded above.
            let f = unsafe { dr::module::get_function(module, name) }.map_err(derr(k))?;
            funcs.insert(*k, f);
        }
        let profile = std::env::var_os("DS4_PROFILE").map(|_| std::sync::Mutex::new(HashMap::new()));
        let mk = || -> Result<Event> {
            let ev = dr::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(derr("event"))?;
            Ok(Event { ev, ctx: ctx.clone() })
        };
        let prof_ev = (mk()?, mk()?);
        let mk_sync = || -> Result<Event> {
            let ev = dr::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(derr("event"))?;
            Ok(Event { ev, ctx: ctx.clone() })
        };
        let fork_ev = (mk_sync()?, mk_sync()?);
        let pdl = cc.0 >= 9 && std::env::var("DS4_PDL").map(|v| v == "1").unwrap_or(false);
        let names = |var: &str| -> Vec<String> { std::env::var(var).map(|v| v.split(',').map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).collect()).unwrap_or_default() };
        let skip = names("DS4_SKIP_KERNELS");
        let pdl_k = match (cc.0 >= 9, std::env::var_os("DS4_PDL_K").is_some()) {
            (false, _) => Vec::new(),
            (true, true) => names("DS4_PDL_K"),
            (true, false) => vec!["quant_q8".to_string()],
        };
        if !skip.is_empty() {
            eprintln!("ds4: DS4_SKIP_KERNELS set (timing ablation, outputs are meaningless): {skip:?}");
        }
        let on_side = Default::default();
        let g = Gpu { ctx, stream, side, on_side, side_prio, fork_ev, _module: module, funcs, name, sm_count, cc, total_mem, smem_optin, compile_s, profile, prof_ev, pdl, pdl_k, skip, blas: OnceLock::new(), seq: Default::default(), qr_ctr: OnceLock::new() };
        // kernels that may use more than 48 KiB of dynamic shared memory
        for k in ["matvec_grouped", "moe_down_fused", "attn_partial", "idx_score", "hc_finish", "hc_finish_h", "hc_step", "attn_prep", "gemm_q64", "gemm_q128"] {
            g.set_max_smem(k, 200 * 1024)?;
        }
        // the register-fragment expert GEMMs: GR_ST stages (22 KB each for Q2_K) + the tile
        // table (+ 32 KB of IQ2_XXS grid copies for that type: session.rs gq_grid_bytes; the
        // sm_90 opt-in limit is 227 KB)
        // (gemm_qs_gu / gemm_qs2_gu: + 32 KB of accumulator exchange, 213 KB at most)
        for k in ["gemm_qr", "gemm_qr2", "gemm_qs", "gemm_qs2", "gemm_qs4", "gemm_qr_y16", "gemm_qr2_y16", "gemm_qs_y16", "gemm_qs2_y16", "gemm_qs4_y16", "gemm_qs_gu", "gemm_qs2_gu", "gemm_qs_guc", "gemm_qs_dg"] {
            g.set_max_smem(k, 220 * 1024)?;
        }
        // moe_small's staged chunks: MVQS_ST stages of weight rows, x and factors
        g.set_max_smem(super::session::MVQS_KERNEL, super::session::mvqs_smem_max() as i32)?;
        // tensor-core prefill attention: Q + two K/V tiles + the S exchange (224 KiB at dh 512)
        for (k, dhp) in [("attn_tc_512", 512usize), ("attn_tc_128", 128)] {
            g.set_max_smem(k, super::session::attn_tc_smem(dhp) as i32)?;
        }
        // wgmma prefill attention: Q + two K/V tiles + P (attn_tx: two) + the token's selection (~205 / 213 KiB at dh 512)
        for k in ["attn_tw_512", "attn_tw_128", "attn_tx_512", "attn_tx_128"] {
            g.set_max_smem(k, super::session::ATTN_TW_SMEM_MAX as i32)?;
        }
        // hc_post_mma: 16 tokens' new state, the partial mixes and fn's fragments (73 KiB)
        g.set_max_smem("hc_post_mma", super::session::HC_MMA_SMEM as i32)?;
        for k in ["hc_post_mma8", "hc_post_mma8_y", "hc_post_mma8_h", "hc_post_mma8_hy", "hc_post_mma8_hp", "hc_post_mma8_hyp", "hc_post_mma8_hpy", "hc_post_mma8_hyps"] {
            g.set_max_smem(k, super::session::HC_MMA8_SMEM as i32)?;
        }
        // decode attention: a 48-row tile at dh 512 (96 KiB), two blocks per SM
        g.set_max_smem("attn_dec", super::session::attn_dec_smem(512) as i32)?;
        // SAFETY: valid function handle; 100 = percent of the maximum shared memory.
        unsafe {
            dr::function::set_function_attribute(g.f("attn_dec"), sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
        }
        .map_err(derr("carveout attr"))?;
        // tensor-core indexer scores: K tile + two Q tiles + the head weights of up to 128 heads
        g.set_max_smem("idx_score_tc", super::session::idx_tc_smem(128, 64, 128) as i32)?;
        g.set_max_smem("idx_score_tc2", super::session::idx_tc_smem(128, 32, 256) as i32)?;
        g.set_max_smem("idx_score_wg", super::session::idx_wg_smem(128) as i32)?;
        // top-k selection: the keys of long contexts (session.rs topk_smem_keys)
        g.set_max_smem("topk_select", (4 * super::session::topk_smem_keys(&g)) as i32)?;
        g.set_max_smem("topk_cluster", (4 * super::session::topk_smem_keys(&g)) as i32)?;
        Ok(g)
    }

    /// Make our context current on the calling thread (sessions may move between threads).
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(derr("bind context"))
    }

    pub fn f(&self, name: &str) -> sys::CUfunction {
        *self.funcs.get(name).unwrap_or_else(|| panic!("kernel {name} not in KERNELS"))
    }

    /// Resident blocks per SM of kernel `name` at `block` threads and `smem` dynamic bytes.
    pub fn blocks_per_sm(&self, name: &str, block: u32, smem: usize) -> Result<usize> {
        // SAFETY: valid function handle.
        let n = unsafe { dr::occupancy::max_active_block_per_multiprocessor(self.f(name), block as i32, smem) }
            .map_err(derr("occupancy"))?;
        Ok(n.max(0) as usize)
    }

    /// Let kernel `name` use up to `bytes` of dynamic shared memory, or what the device allows
    /// next to the kernel's static shared memory if that is less: a GPU with less shared
    /// memory than sm_90 then starts, and only the launches that need more fail (with the
    /// launch error), instead of every start failing here.
    fn set_max_smem(&self, name: &str, bytes: i32) -> Result<()> {
        let f = self.f(name);
        // SAFETY: valid function handle.
        let stat = unsafe { dr::function::get_function_attribute(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) }
            .map_err(derr("smem attr"))?;
        let bytes = bytes.min(self.smem_optin - stat).max(0);
        // SAFETY: valid function handle.
        unsafe { dr::function::set_function_attribute(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes) }
            .map_err(derr("smem attr"))
    }

    /// The cuBLAS handle (created once, on our stream), or None with one log line when
    /// libcublas cannot be loaded or initialised.
    pub fn blas(&self) -> Option<&super::blas::Blas> {
        self.blas
            .get_or_init(|| match super::blas::Blas::new(self) {
                Ok(b) => {
                    eprintln!("ds4: dense prefill GEMMs on cuBLAS ({})", b.lib);
                    Some(b)
                }
                Err(e) => {
                    eprintln!("ds4: cuBLAS unavailable ({e}); dense prefill GEMMs use the built-in kernels");
                    None
                }
            })
            .as_ref()
    }

    /// Shared memory one block may opt into (bytes).
    pub fn smem_optin(&self) -> usize {
        self.smem_optin.max(0) as usize
    }

    /// Free device memory in bytes, when the driver can say.
    pub fn free_mem(&self) -> Option<usize> {
        self.bind().ok()?;
        dr::mem_get_info().ok().map(|(free, _)| free)
    }

    /// The stream work is queued on: the main one, or the side one between `fork` and `to_main`.
    pub fn cu_stream(&self) -> sys::CUstream {
        if self.on_side.load(std::sync::atomic::Ordering::Relaxed) {
            self.side.cu_stream()
        } else {
            self.stream.cu_stream()
        }
    }

    /// Start a branch: work queued from here until `to_main` goes to the side stream, after
    /// everything queued so far and concurrent with what the main stream gets after
    /// `to_main`, until `join`. Its kernels carry the side stream's higher priority (kept in
    /// graphs: node priorities, instantiated with USE_NODE_PRIORITY): without it the block
    /// scheduler gave a short branch kernel SM slots only as the main stream's queued blocks
    /// ran out (the indexer's q_b started 13 us late, behind all of q_b's blocks; session 13
    /// trace). False (nothing changed; the branch's work stays in order on the main stream)
    /// when kernels are timed one by one (DS4_PROFILE) or launched with PDL (its programmatic
    /// edges are per stream). The branch state is the Gpu's, not the thread's: only the
    /// thread queuing a decode step may queue work while its branch is open (the engine's
    /// sessions are driven by one thread at a time: the server's worker, the CLI, the bench).
    pub fn fork(&self) -> Result<bool> {
        if self.pdl || self.profile.is_some() {
            return Ok(false);
        }
        self.to_main();
        // SAFETY: live events and streams of this context.
        unsafe {
            dr::event::record(self.fork_ev.0.ev, self.stream.cu_stream()).map_err(derr("fork record"))?;
            dr::stream::wait_event(self.side.cu_stream(), self.fork_ev.0.ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT).map_err(derr("fork wait"))?;
        }
        self.on_side.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
    /// Queue on the main stream again (the branch's work keeps running on the side stream;
    /// also after an error inside a branch).
    pub fn to_main(&self) {
        self.on_side.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    /// The main stream waits for the branch's work.
    pub fn join(&self) -> Result<()> {
        self.to_main();
        // SAFETY: as in fork.
        unsafe {
            dr::event::record(self.fork_ev.1.ev, self.side.cu_stream()).map_err(derr("join record"))?;
            dr::stream::wait_event(self.stream.cu_stream(), self.fork_ev.1.ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT).map_err(derr("join wait"))
        }
    }

    pub fn alloc(&self, bytes: usize) -> Result<DevBuf> {
        self.ctx.bind_to_thread().map_err(derr("bind"))?;
        let n = bytes.max(16);
        // SAFETY: plain device allocation.
        let ptr = unsafe { dr::malloc_sync(n) }.map_err(derr(&format!("alloc {bytes} bytes")))?;
        Ok(DevBuf { ptr, bytes: n, ctx: self.ctx.clone() })
    }

    /// A new device buffer holding `src` (alloc + htod).
    pub fn upload<T: Copy>(&self, src: &[T]) -> Result<DevBuf> {
        let b = self.alloc(std::mem::size_of_val(src))?;
        self.htod(b.ptr, src)?;
        Ok(b)
    }

    pub fn alloc_zeroed(&self, bytes: usize) -> Result<DevBuf> {
        let b = self.alloc(bytes)?;
        self.memset0(b.ptr, b.bytes)?;
        Ok(b)
    }

    /// The tile counter of gemm_qr's dynamic order (matmul.cuh gemm_qr `ctr`): zeroed once,
    /// every launch leaves it zero. One per stream: launches on one stream never overlap, and
    /// the side stream's (a split gemm_qs's branch, session.rs QsSplit) is 8 bytes further.
    pub fn qr_counter(&self) -> Result<DevPtr> {
        let base = match self.qr_ctr.get() {
            Some(b) => b.ptr,
            None => {
                let b = self.alloc_zeroed(16)?;
                self.qr_ctr.get_or_init(|| b).ptr
            }
        };
        Ok(if self.is_on_side() { base + 8 } else { base })
    }

    /// Whether launches go to the side stream now (between `fork` and `to_main`).
    pub fn is_on_side(&self) -> bool {
        self.on_side.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The device-work counter: equal values before and after a stretch of host code mean
    /// no kernel, copy or memset was queued through this Gpu in between (the cuBLAS dense path
    /// reuses its f16 activations then).
    pub fn work_seq(&self) -> u64 {
        self.seq.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn bump(&self) {
        self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn memset0(&self, ptr: DevPtr, bytes: usize) -> Result<()> {
        self.bump();
        // SAFETY: ptr..ptr+bytes lies in one allocation (callers pass whole buffers/slices).
        unsafe { dr::memset_d8_async(ptr, 0, bytes, self.cu_stream()) }.map_err(derr("memset"))
    }

    /// Copy host -> device and wait (ordered on our stream, so kernels see the data).
    pub fn htod<T: Copy>(&self, dst: DevPtr, src: &[T]) -> Result<()> {
        self.bump();
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: dst holds at least src.len() elements (caller); src outlives the sync below.
        unsafe { dr::memcpy_htod_async(dst, src, self.cu_stream()) }.map_err(derr("htod"))?;
        self.sync()
    }

    /// Async copy from host memory that stays valid until the next synchronize (pinned or not).
    pub fn htod_async<T: Copy>(&self, dst: DevPtr, src: &[T]) -> Result<()> {
        self.bump();
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: caller keeps `src` alive until the stream is synchronized.
        unsafe { dr::memcpy_htod_async(dst, src, self.cu_stream()) }.map_err(derr("htod async"))
    }

    /// Copy device -> host after all queued work (ordered on our stream).
    pub fn dtoh<T: Copy>(&self, dst: &mut [T], src: DevPtr) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: src holds at least dst.len() elements (caller); dst outlives the sync below.
        unsafe { dr::memcpy_dtoh_async(dst, src, self.cu_stream()) }.map_err(derr("dtoh"))?;
        self.sync()
    }

    /// Copy `bytes` device -> pinned host memory without waiting (ordered on our stream): the
    /// data is there once an event recorded after it has completed.
    pub fn dtoh_pinned(&self, dst: &mut Pinned, src: DevPtr, bytes: usize) -> Result<()> {
        let d = dst.as_mut_slice();
        if bytes > d.len() {
            return Err(CudaError::Other(format!("dtoh_pinned: {bytes} bytes into {}", d.len())));
        }
        // SAFETY: pinned memory owned by `dst`, which outlives the copy (its owner waits on an
        // event after it, or synchronizes, before reading or freeing it).
        unsafe { dr::memcpy_dtoh_async(&mut d[..bytes], src, self.cu_stream()) }.map_err(derr("dtoh pinned"))
    }

    pub fn dtod(&self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<()> {
        self.bump();
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both ranges valid (caller).
        unsafe { dr::memcpy_dtod_async(dst, src, bytes, self.cu_stream()) }.map_err(derr("dtod"))
    }

    /// Wait for all queued work (a branch left unjoined by an error included).
    pub fn sync(&self) -> Result<()> {
        self.to_main();
        // SAFETY: valid streams.
        unsafe {
            dr::stream::synchronize(self.side.cu_stream()).map_err(derr("synchronize"))?;
            dr::stream::synchronize(self.stream.cu_stream()).map_err(derr("synchronize"))
        }
    }

    /// Launch `name` with the given argument pointers (each points at one argument value).
    pub fn launch(&self, name: &str, grid: (u32, u32, u32), block: u32, smem: u32, args: Args) -> Result<()> {
        self.launch_ex(name, grid, block, smem, args, false, false)
    }

    /// `launch` as a cooperative launch: every block is resident at once (the launch fails
    /// otherwise), which a kernel with a grid-wide barrier needs (hc_step_gs). Check the
    /// grid against `coop_capacity` first.
    pub fn launch_coop(&self, name: &str, grid: (u32, u32, u32), block: u32, smem: u32, args: Args) -> Result<()> {
        self.launch_ex(name, grid, block, smem, args, true, false)
    }

    /// `launch_coop` with programmatic dependent launch for this launch alone (whatever
    /// `DS4_PDL` says): the kernel may start before its predecessor ends, and must read nothing
    /// the predecessor writes before its `griddepcontrol.wait` (hc_step_gs).
    pub fn launch_coop_pdl(&self, name: &str, grid: (u32, u32, u32), block: u32, smem: u32, args: Args) -> Result<()> {
        self.launch_ex(name, grid, block, smem, args, true, true)
    }

    /// How many blocks of `name` (at `block` threads, `smem` dynamic bytes) the device holds at
    /// once: the largest grid a cooperative launch accepts.
    pub fn coop_capacity(&self, name: &str, block: u32, smem: u32) -> Result<usize> {
        let mut n: std::ffi::c_int = 0;
        // SAFETY: a loaded function and a valid out pointer.
        let r = unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, self.f(name), block as i32, smem as usize) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(CudaError::Driver { ctx: format!("occupancy of {name}"), err: format!("{r:?}") });
        }
        Ok(n.max(0) as usize * self.sm_count.max(0) as usize)
    }

    fn launch_ex(&self, name: &str, grid: (u32, u32, u32), block: u32, smem: u32, mut args: Args, coop: bool, pdl: bool) -> Result<()> {
        self.bump();
        let args = args.ptrs();
        if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || (!self.skip.is_empty() && self.skip.iter().any(|k| k == name)) {
            return Ok(());
        }
        // launch attributes (no allocation per launch): cooperative, PDL, and the priority of a
        // branch's kernels
        // SAFETY: a zeroed attribute is valid; the used ones get their id and value below.
        let mut attrs: [sys::CUlaunchAttribute; 3] = unsafe { std::mem::zeroed() };
        let mut na = 0;
        if coop {
            attrs[na].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attrs[na].value.cooperative = 1;
            na += 1;
        }
        if self.pdl || pdl || (!self.pdl_k.is_empty() && self.pdl_k.iter().any(|k| k == name)) {
            attrs[na].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attrs[na].value.programmaticStreamSerializationAllowed = 1;
            na += 1;
        }
        if let (Some(p), true) = (self.side_prio, self.on_side.load(std::sync::atomic::Ordering::Relaxed)) {
            attrs[na].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY;
            attrs[na].value.priority = p;
            na += 1;
        }
        // the launch, accounted under `name` when profiling
        self.profiled(name, || {
            if na > 0 {
                let cfg = sys::CUlaunchConfig {
                    gridDimX: grid.0,
                    gridDimY: grid.1,
                    gridDimZ: grid.2,
                    blockDimX: block,
                    blockDimY: 1,
                    blockDimZ: 1,
                    sharedMemBytes: smem,
                    hStream: self.cu_stream(),
                    attrs: attrs.as_mut_ptr(),
                    numAttrs: na as u32,
                };
                // SAFETY: as below; every kernel begins with PDL_ENTRY so dependent accesses wait.
                let r = unsafe { sys::cuLaunchKernelEx(&cfg, self.f(name), args.as_mut_ptr(), std::ptr::null_mut()) };
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(CudaError::Driver { ctx: name.to_string(), err: format!("{r:?}") });
                }
            } else {
                // SAFETY: args match the kernel's parameter list (checked by construction in callers).
                unsafe { dr::launch_kernel(self.f(name), grid, (block, 1, 1), smem, self.cu_stream(), args) }.map_err(derr(name))?;
            }
            Ok(())
        })
    }

    /// Run `f` (work queued on our stream by a library, e.g. cuBLAS) and, when `DS4_PROFILE`
    /// is set and the stream is not capturing, account its time under `name` in the profile.
    pub fn profiled(&self, name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        let Some(p) = &self.profile else { return f() };
        let mut st = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: valid stream.
        let ok = unsafe { sys::cuStreamIsCapturing(self.cu_stream(), &mut st) } == sys::CUresult::CUDA_SUCCESS;
        if !ok || st != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return f();
        }
        self.record(&self.prof_ev.0)?;
        f()?;
        self.record(&self.prof_ev.1)?;
        let ms = self.elapsed_ms(&self.prof_ev.0, &self.prof_ev.1)? as f64;
        let mut m = p.lock().unwrap();
        let e = m.entry(name.to_string()).or_insert((0.0, 0));
        e.0 += ms;
        e.1 += 1;
        Ok(())
    }

    /// The per-kernel profile table (empty unless `DS4_PROFILE` was set), and reset it.
    pub fn take_profile(&self) -> Vec<(String, f64, usize)> {
        let Some(p) = &self.profile else { return Vec::new() };
        let mut m = p.lock().unwrap();
        let mut v: Vec<(String, f64, usize)> = m.drain().map(|(k, (ms, n))| (k, ms, n)).collect();
        v.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        v
    }

    pub fn event(&self) -> Result<Event> {
        let ev = dr::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(derr("event"))?;
        Ok(Event { ev, ctx: self.ctx.clone() })
    }
    pub fn record(&self, ev: &Event) -> Result<()> {
        // SAFETY: a live event and our stream.
        unsafe { dr::event::record(ev.ev, self.cu_stream()) }.map_err(derr("record"))
    }
    pub fn elapsed_ms(&self, a: &Event, b: &Event) -> Result<f32> {
        b.synchronize()?;
        // SAFETY: both live events, recorded on our stream.
        unsafe { dr::event::elapsed(a.ev, b.ev) }.map_err(derr("elapsed"))
    }

    pub fn begin_capture(&self) -> Result<()> {
        // SAFETY: valid stream, no other capture in progress.
        unsafe {
            dr::stream::begin_capture(self.cu_stream(), sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        }
        .map_err(derr("begin capture"))
    }
    pub fn end_capture(&self) -> Result<Graph> {
        self.to_main();
        // SAFETY: capture begun on this stream.
        let g = unsafe { dr::stream::end_capture(self.cu_stream()) }.map_err(derr("end capture"))?;
        // node priorities: a branch's kernels keep their higher priority in the graph (see fork)
        let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
        // SAFETY: g is a valid captured graph.
        let exec = unsafe { dr::graph::instantiate(g, flags) }.map_err(derr("instantiate"))?;
        Ok(Graph { graph: g, exec, ctx: self.ctx.clone() })
    }
    pub fn launch_graph(&self, g: &Graph) -> Result<()> {
        self.bump();
        // SAFETY: instantiated graph.
        unsafe { dr::graph::launch(g.exec, self.cu_stream()) }.map_err(derr("graph launch"))
    }
}

pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// Keeps the context alive until the graph is destroyed (see [`DevBuf`]).
    ctx: Arc<CudaContext>,
}
// SAFETY: graph handles are plain driver objects, used only through &Gpu on the session's thread.
unsafe impl Send for Graph {}
impl Drop for Graph {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: handles owned by this struct, in a context that is still alive.
        unsafe {
            let _ = dr::graph::exec_destroy(self.exec);
            let _ = dr::graph::destroy(self.graph);
        }
    }
}

/// Pinned host memory (for fast uploads).
pub struct Pinned {
    pub ptr: *mut u8,
    pub len: usize,
}
impl Pinned {
    pub fn new(len: usize) -> Result<Pinned> {
        // SAFETY: plain pinned allocation.
        let p = unsafe { dr::malloc_host(len, 0) }.map_err(derr("pinned alloc"))?;
        Ok(Pinned { ptr: p as *mut u8, len })
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: allocation of len bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host.
        unsafe {
            let _ = dr::free_host(self.ptr as *mut c_void);
        }
    }
}
unsafe impl Send for Pinned {}

/// Kernel arguments for `cuLaunchKernel`: each value is boxed so its address stays fixed.
#[derive(Default)]
pub struct Args {
    store: Vec<Box<dyn std::any::Any>>,
    ptrs: Vec<*mut c_void>,
}
impl Args {
    pub fn new() -> Args {
        Args::default()
    }
    pub fn a<T: Copy + 'static>(mut self, v: T) -> Args {
        let b: Box<T> = Box::new(v);
        let p = &*b as *const T as *mut c_void;
        self.store.push(b);
        self.ptrs.push(p);
        self
    }
    pub fn ptrs(&mut self) -> &mut [*mut c_void] {
        &mut self.ptrs
    }
}
