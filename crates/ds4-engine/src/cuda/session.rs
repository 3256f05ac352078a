//! A CUDA inference session: KV state on the GPU, layer-major batched prefill, and a decode
//! step that is captured once into a CUDA graph (per position bucket) and replayed. Logits stay
//! on the device until asked for; greedy decoding reads back only the argmax (eval_greedy: read
//! while the next step already runs on it).

use super::driver::{wgmma_built, Args, CudaError, DevBuf, DevPtr, Event, Gpu, Graph, Pinned, Result};
use super::blas::{dense_blas_wanted, dense_min_t, exp_blas_wanted, exp_min_t, launch_x_to_f16, Blas, DenseCall, Dense16, ExpCall};
use super::weights::{CudaModel, GMat, WMat};
use ds4_gguf::GgmlType;
use crate::sampling::{NearMax, NEAR_MAX_CAP};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 activations everywhere (f32 FMA GEMMs in prefill): matches the fixtures like the
    /// CPU reference.
    Reference,
    /// Prefill GEMMs on tensor cores with f16 inputs and f32 accumulation; decode unchanged.
    Fast,
}

#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub ctx: usize,
    /// FP8 KV / FP4 indexer simulation (the model's QAT numerics); false = "exact" numerics.
    pub qat: bool,
    pub precision: Precision,
    pub max_chunk: usize,
    pub graphs: bool,
    /// Record near-tie decisions ([`CudaSession::near_ties`]); off: no buffer, no margins.
    pub near_ties: bool,
    /// Prefill batches of at most this many tokens run as decode steps (0: never); see
    /// [`default_step_max`].
    pub step_max: usize,
}

/// Prefill batches up to this many tokens run as decode steps (`DS4_STEP_BATCH` overrides; 0:
/// never). Why: the prefill GEMMs' tiles are sized for many tokens, and at a few tokens they
/// leave most of the GPU idle (gemm_q64 ~100 us per matrix whatever the batch: 61 of the 63 ms
/// of a 1-token prefill batch on an H100, 28 layers, against 4.4 ms for a decode step), while
/// the decode kernels stream each matrix at the memory bandwidth. Chat turns and tool results
/// often end in such a batch (the tail of a prompt past its last 2048-token chunk, a short user
/// reply), and a speculative verifier's batches are that small. H100, 28 layers, t/s of a batch
/// of 1 / 2 / 4 / 8 tokens at 2K: decode steps 231 / 225 / 221 / 221; prefill with its
/// projections split over K (gq_ks) and its routed experts on the int8 matvec (moe_small) 73 /
/// 121 / 228 / 408 (with neither: 16 / 30 / 57 / 105). Session 50, bench/s50.
pub fn default_step_max() -> usize {
    std::env::var("DS4_STEP_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_STEP_MAX)
}
const DEFAULT_STEP_MAX: usize = 3;

/// Prefill batch size of CUDA sessions with context `ctx`: `DS4_CHUNK`, else 16384 tokens (the
/// grouped expert GEMMs need many tokens per expert: full-size prefill at 8K measured 2374,
/// 2889 and 3210 tok/s with 2048, 4096 and 8192-token batches; 16384 against 8192: +5.5 % at a
/// 32K prompt, +4.7 % at 64K, H100 session 45), lowered for long contexts so that the
/// per-batch indexer score matrix (batch x ctx/4 floats) stays within 4 GiB (at least 2048).
/// [`CudaSession::open`] falls back to 8192 where the larger batch's scratch does not fit.
pub fn default_max_chunk(ctx: usize) -> usize {
    if let Some(n) = std::env::var("DS4_CHUNK").ok().and_then(|v| v.parse().ok()).filter(|&n: &usize| n > 0) {
        return n;
    }
    let by_scores = (4usize << 30) / ((ctx / 4 + 2) * 4);
    (by_scores / 256 * 256).clamp(2048, MAX_CHUNK)
}

/// default_max_chunk's largest batch, and the one below it that [`CudaSession::open`] falls
/// back to when that does not fit.
const MAX_CHUNK: usize = 16384;
const FALLBACK_CHUNK: usize = 8192;
/// Device memory a session with batches past FALLBACK_CHUNK must leave free (the routed
/// experts' cuBLAS scratch allocated on first use, cuBLAS workspaces, decode graphs).
const BIG_CHUNK_SPARE: usize = 4 << 30;

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions { ctx: 4096, qat: true, precision: Precision::Fast, max_chunk: 2048, graphs: true, near_ties: false, step_max: default_step_max() }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct MvJob {
    pub w: WMat,
    pub x: u64,
    pub y: u64,
    pub sel: u64,
    pub x_slot: i64,
    pub nslots: i32,
    pub x_grp_rows: i32,
}

impl MvJob {
    /// y = w x for one plain matrix (no expert selection, one input slice).
    pub(crate) fn plain(w: WMat, x: u64, y: u64) -> MvJob {
        MvJob { w, x, y, x_grp_rows: w.rows, nslots: 1, ..Default::default() }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GemmArgs {
    pub w: WMat,
    pub x: u64,
    pub y: u64,
    pub grp_off: u64,
    pub gather: u64,
    pub ldx: i32,
    pub ldy: i32,
    pub t: i32,
    /// gemm_q only: GQ_FLAG_HDEQ (1) = f16x2 dequantization (see `gemm_q_flags`)
    pub flags: i32,
}

/// Mirror of `struct GuArgs` in matmul.cuh: the up matrix, routing weights and clamp of a
/// gate + up launch (gemm_qs_gu, `launch_gemm_gu`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GuArgs {
    pub w2: WMat,
    pub pw: u64,
    pub clamp: f32,
    pub pad: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CompArgs {
    kv: u64,
    sc: u64,
    ape: u64,
    skv: u64,
    ssc: u64,
    rows: u64,
    norm: u64,
    omega: u64,
    pos: u64,
    t: i32,
    r: i32,
    d: i32,
    rd: i32,
    eps: f32,
    qat: i32,
    indexer: i32,
    layer: i32,
    ties: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct AttnArgs {
    q: u64,
    raw: u64,
    comp: u64,
    sel: u64,
    pos: u64,
    omega: u64,
    po: u64,
    pml: u64,
    cap: i32,
    topk: i32,
    h: i32,
    dh: i32,
    rd: i32,
    w: i32,
    ratio: i32,
    nsplit: i32,
    eps: f32,
    pad: i32,
}

/// Arguments of the fused decode hyper-connection step (kernels/model.cuh `HcStepArgs`).
#[repr(C)]
#[derive(Clone, Copy)]
struct HcStepArgs {
    s: u64,
    y: u64,
    post: u64,
    comb: u64,
    fn_w: u64,
    pdot: u64,
    pss: u64,
    ticket: u64,
    scale: u64,
    base: u64,
    norm: u64,
    post_out: u64,
    comb_out: u64,
    xn_out: u64,
    q8s: u64,
    q8d: u64,
    z_out: u64,
    m: i32,
    d: i32,
    n: i32,
    ny: i32,
    iters: i32,
    eps: f32,
    hc_eps: f32,
    pad: i32,
    trace: u64,
    gs: u64,
}

/// The hc_pre that follows an hc_post: its weights, the normalized row it writes, and
/// optionally the int8 copy of that row (decode FFN input) or f16 copies (prefill).
#[derive(Clone, Copy)]
pub(crate) struct HcFinish {
    pub m: usize,
    pub scale: DevPtr,
    pub base: DevPtr,
    pub norm: DevPtr,
    pub out: DevPtr,
    pub q8: Option<(DevPtr, DevPtr)>,
    /// f16 copies written by the separate hc_finish launch (prefill), not by hc_step
    pub f16: HcF16,
}

/// f16 copies of the finished rows that hc_finish writes beside them (`DS4_HC_F16`): packed
/// t x D halfs, the values launch_x_to_f16 (no gather) makes of the f32 rows; `b` in
/// gemm_qr's K order when `b_perm`. 0: none. D % 32 == 0 when any is set. `no_f32`: the f32
/// rows are not written (their every reader takes a copy; `DS4_FFN_XN16`).
#[derive(Clone, Copy, Default)]
pub(crate) struct HcF16 {
    pub a: DevPtr,
    pub b: DevPtr,
    pub b_perm: bool,
    pub no_f32: bool,
}

/// Buffers and constants of the hyper-connection kernels: S [T][N][D], post [T][N], comb
/// [T][N][N], the partial sums pdot ([T][M][split] from hc_step, [T][split][M] from hc_post_mix
/// for hc_finish) / pss [T][split] (hc_step_gs: the Gram partials [T][G][split], G = N(N+1)/2),
/// hc_step's tickets [T], hc_step_gs's barrier counters [T].
#[derive(Clone, Copy)]
pub(crate) struct HcBufs {
    pub s: DevPtr,
    pub post: DevPtr,
    pub comb: DevPtr,
    pub pdot: DevPtr,
    pub pss: DevPtr,
    pub ticket: DevPtr,
    /// hc_step_gs's barrier counters (u64, only grow); 0: decode takes hc_step
    pub gs: DevPtr,
    /// hc_step's comb logits [T][N][N], for the Sinkhorn block of a later launch (attn_prep,
    /// router_dec: `HcSk`); 0: the finishing block runs the Sinkhorn itself
    pub z: DevPtr,
    /// 32-column slices (D / 32 rounded up)
    pub split: usize,
    pub d: usize,
    pub n: usize,
    pub eps: f32,
    pub iters: usize,
    pub hc_eps: f32,
    /// prefill's 128-column slices take hc_post_mma where it applies (hc_mma_ok; Fast
    /// precision only: its partial mixes keep ~22 bits of each state value)
    pub mma: bool,
    /// S's storage (model.cuh HC_S_*): HC_S_F32, or prefill's 16-bit state (`DS4_HC_S16`:
    /// hc_post_mma8_h / _b and hc_finish's HCF_S_* read and write it)
    pub s16: u8,
    /// one i32 that hc_post_mma8_h sets when its f16 state saturates (0: none; see
    /// CudaSession::hc_sat_check)
    pub sat: DevPtr,
    /// the f16 state's hc_post_mma8 forms with the loads a group ahead where they apply
    /// (hc_mma8_name; prefill: `DS4_HC_PF`)
    pub pf: bool,
}

/// The hc state's storage (model.cuh HC_S_F32 / HC_S_F16; asserted equal by the kernel
/// source) and hc_finish_h's flag for the f16 one (HCF_S_F16).
pub(crate) const HC_S_F32: u8 = 0;
pub(crate) const HC_S_F16: u8 = 1;
pub(crate) const HCF_S_F16: i32 = 16;

/// Set once an f16 hc state saturated in some prefill (CudaSession::hc_sat_check): every later
/// prefill of the process keeps the state in f32 (the saturating batch itself runs again).
static HC_S16_SATURATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Bytes of one hc state value in storage `s16`.
pub(crate) fn hc_s_bytes(s16: u8) -> usize {
    if s16 == HC_S_F32 {
        4
    } else {
        2
    }
}

/// Prefill's hc state in f16 (default; `DS4_HC_S16=0`: f32; session 44, H100, 28 layers, 8K
/// prompt: +1.7 %), Fast
/// precision only, where every prefill hc_post takes hc_post_mma8 (N 4, D % 128 == 0: the
/// attention and FFN steps' N(N+2) mixes and the head's N). Why: S is ~64 KB per token in f32
/// and the hc glue moves it three times per step (hc_post reads and writes it, hc_finish reads
/// it): half the bytes of hc_post_mma8 (~1.15 GB -> 0.64 GB per attention step at 8K tokens)
/// and of hc_finish (0.58 -> 0.32 GB). Its cost: each state value rounded once per step
/// (11 bits, saturating at 65504); the fixtures' fast-vs-reference lines measure it. (bf16,
/// with 8 bits, was ruled out before it ran: ~100x f16's KL in tools/hc16_sim.py.) Read once.
pub(crate) fn hc_s16_mode(n: usize, d: usize) -> u8 {
    if HC_S16_SATURATED.load(std::sync::atomic::Ordering::Relaxed) {
        return HC_S_F32;
    }
    static MODE: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    let want = *MODE.get_or_init(|| match std::env::var("DS4_HC_S16").as_deref() {
        Ok("0") => HC_S_F32,
        _ => HC_S_F16,
    });
    let split = hc_prefill_split(d);
    let ok = d % 8 == 0 && hc_mma8() && hc_mma_ok(n, n * (n + 2), d, split) && hc_mma_ok(n, n, d, split);
    if ok {
        want
    } else {
        HC_S_F32
    }
}

/// Whether hc_post_mma takes a prefill hc_post_mix launch of this shape (model.cuh: N == 4,
/// M <= 24, 128-column slices); `DS4_HC_MMA=0`: never.
pub(crate) fn hc_mma_ok(n: usize, m: usize, d: usize, split: usize) -> bool {
    n == 4 && m <= 24 && hc_wide_slices(d, split) && env_unless!("DS4_HC_MMA", "0")
}

/// Whether `split` slices of D are hc_post_mix4's / hc_post_mma's 128 columns each.
fn hc_wide_slices(d: usize, split: usize) -> bool {
    d % HC_WIDE == 0 && split == d / HC_WIDE
}

/// hc_post_mma8's f16-state forms with each warp's next token loads issued before the mma
/// and reduce phases (model.cuh hc_post_mma8_hp / _hyp: y rows with ny 1 or none, the MoE sum
/// of f16 slot rows), the same bits as hc_post_mma8_h / _hy (HcBufs::pf; `DS4_HC_PF=0`:
/// without). Kernel bench at T 8192 (H100, session 55): y rows 0.460 against 0.555 ms, the
/// MoE sum 0.593 against 0.615; an 8K prompt +0.6 %, the same tokens; fixtures the same lines.
pub(crate) fn hc_pf() -> bool {
    env_unless!("DS4_HC_PF", "0")
}

/// The hc_post_mma8 form for an f16 state or f16 MoE slot rows (hc_mma8_takes holds): `y`
/// whether there is a layer output, `ny` its rows (or slots), `moe` whether it is the MoE sum.
pub(crate) fn hc_mma8_name(b: &HcBufs, y: bool, ny: usize, moe: bool, y16: bool) -> &'static str {
    hc_mma8_name16(b, y, ny, moe, y16, false)
}

/// hc_mma8_name with the shared expert's rows as f16 when `sh16` (hc_shared16_ok must hold).
pub(crate) fn hc_mma8_name16(b: &HcBufs, y: bool, ny: usize, moe: bool, y16: bool, sh16: bool) -> &'static str {
    match (b.s16 == HC_S_F16, y16) {
        (true, true) if sh16 && moe && hc_shared16_ok(b, y16) => "hc_post_mma8_hyps",
        (false, _) => "hc_post_mma8_y",
        (true, false) if b.pf && !moe && (!y || ny == 1) => "hc_post_mma8_hp",
        (true, false) => "hc_post_mma8_h",
        (true, true) if b.pf && moe => "hc_post_mma8_hyp",
        (true, true) if hc_rows16_ok(b, y, ny, moe) => "hc_post_mma8_hpy",
        (true, true) => "hc_post_mma8_hy",
    }
}

/// `DS4_HC_CHUNK=N`: prefill's hc_post and hc_finish launched in turn per N tokens (of a
/// batch of more; 0 or unset: the whole batch each), so that each finish reads the state its
/// hc_post just wrote while it is in L2 (1024 tokens of an f16 state at D 4096: 32 MB)
/// instead of from DRAM. The same kernels per token: the same bits. Read once.
fn hc_chunk(t: usize) -> usize {
    let n = env_num!("DS4_HC_CHUNK", usize, 0);
    if n == 0 || n >= t {
        t
    } else {
        n
    }
}

/// Whether hc_post can read y's rows as f16 (hc_post_mma8_hpy): one row per token, on the f16
/// state with the loads a group ahead; the other forms read f16 only as MoE slot rows.
pub(crate) fn hc_rows16_ok(b: &HcBufs, y: bool, ny: usize, moe: bool) -> bool {
    b.s16 == HC_S_F16 && b.pf && y && ny == 1 && !moe
}

/// Whether hc_post's MoE sum can read the shared expert's rows as f16 (hc_post_mma8_hyps): on
/// the f16 state with the loads a group ahead and f16 slot rows.
pub(crate) fn hc_shared16_ok(b: &HcBufs, y16: bool) -> bool {
    b.s16 == HC_S_F16 && b.pf && y16
}

/// `DS4_DENSE_Y16=N` (bits): prefill's cuBLAS outputs whose one reader can take f16 written
/// as f16 rows, read as such: 1 the attention output (out_b after out_a's f16 low-rank rows,
/// out_low16; hc_post_mma8_hpy, where hc_rows16_ok holds), 2 the shared expert's down
/// (hc_post_mma8_hyps, where hc_shared16_ok holds), 4 the shared expert's gate and up (its
/// mids, moe_mid_pairs_h). Why: each is a t x 4096 (t x 2048) f32 matrix written once and read
/// once (at 8K tokens 134 / 67 MB per layer each way; of hc_post's ~83 / ~131 KB per token 16
/// are such a row); f16 halves both. One more rounding of those outputs (f16, as the MoE's slot
/// rows under DS4_EXP_Y16). Returns (attention, shared down, shared gate / up). Read once.
pub(crate) fn dense_y16() -> (bool, bool, bool) {
    let v = env_num!("DS4_DENSE_Y16", u32, 0);
    (v & 1 != 0, v & 2 != 0, v & 4 != 0)
}

/// hc_post_mma on 8-token groups (`hc_post_mma8`, default; `DS4_HC_MMA8=0`: 16-token groups):
/// 48.5 KB and 64 registers, so four blocks per SM against three. Kernel bench at T 8192 (H200,
/// session 33, same run): 0.515 against 0.525 ms with y rows, 0.674 against 0.695 with the MoE
/// sum; the same state bits and mixes; an 8K prompt within noise (~1 ms of ~650).
pub(crate) fn hc_mma8() -> bool {
    env_unless!("DS4_HC_MMA8", "0")
}

/// hc_post with the layer output `y` (`ny` > 1: the sum of `ny` consecutive D-rows, MoE slot
/// outputs added in slot order; y == 0: none) and the partial sums of the next hc_pre with
/// mixing weights `fn_ptr` (`m` mixes), for `t` tokens.
pub(crate) fn launch_hc_post_mix(gpu: &Gpu, b: &HcBufs, t: usize, y: DevPtr, ny: usize, fn_ptr: DevPtr, m: usize) -> Result<()> {
    hc_post_mix_at(gpu, b, t, y, ny, fn_ptr, m, 0, 0, false, false)
}

/// launch_hc_post_mix with one f16 row of y per token (hc_rows16_ok must hold).
pub(crate) fn launch_hc_post_mix16(gpu: &Gpu, b: &HcBufs, t: usize, y: DevPtr, fn_ptr: DevPtr, m: usize) -> Result<()> {
    hc_post_mix_at(gpu, b, t, y, 1, fn_ptr, m, 0, 0, true, false)
}

/// launch_hc_post_mix with prefill's MoE output as y: per token the `k` routed slot rows of
/// `ypair` (row pair_of[t*k + i]) and the shared expert's row of `shared`, summed by the
/// kernel in moe_combine's order (model.cuh moe_sum_at): the same bits as moe_combine into a
/// row and launch_hc_post_mix on it, without that row's write and read (`DS4_FUSE_COMBINE`).
/// `y16`: the slot rows are f16 (`DS4_EXP_Y16`; hc_post_mma8's `_y` / `_hy` forms only: see
/// hc_mma8_takes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_hc_post_mix_moe(gpu: &Gpu, b: &HcBufs, t: usize, ypair: DevPtr, pair_of: DevPtr, shared: DevPtr, k: usize, fn_ptr: DevPtr, m: usize, y16: bool) -> Result<()> {
    launch_hc_post_mix_moe16(gpu, b, t, ypair, pair_of, shared, k, fn_ptr, m, y16, false)
}

/// launch_hc_post_mix_moe with the shared expert's rows as f16 when `sh16` (hc_shared16_ok
/// must hold).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_hc_post_mix_moe16(gpu: &Gpu, b: &HcBufs, t: usize, ypair: DevPtr, pair_of: DevPtr, shared: DevPtr, k: usize, fn_ptr: DevPtr, m: usize, y16: bool, sh16: bool) -> Result<()> {
    if ypair == 0 || pair_of == 0 || shared == 0 || k == 0 {
        return Err(CudaError::Other("hc_post_mix: the MoE sum needs ypair, pair_of, shared and k > 0".into()));
    }
    hc_post_mix_at(gpu, b, t, ypair, k, fn_ptr, m, pair_of, shared, y16, sh16)
}

/// Whether the hc_post launch of `b` with `m` mixes runs on hc_post_mma8, the only kernel with
/// forms for f16 MoE slot rows (model.cuh hc_post_mma8_y / _hy) and an f16 state (_h / _hy).
pub(crate) fn hc_mma8_takes(b: &HcBufs, m: usize) -> bool {
    b.mma && hc_mma8() && hc_mma_ok(b.n, m, b.d, b.split)
}

#[allow(clippy::too_many_arguments)]
fn hc_post_mix_at(gpu: &Gpu, b: &HcBufs, t: usize, y: DevPtr, ny: usize, fn_ptr: DevPtr, m: usize, pair_of: DevPtr, shared: DevPtr, y16: bool, sh16: bool) -> Result<()> {
    let tt = hc_tokens(t, b.split, gpu.sm_count.max(1) as usize);
    let args = Args::new()
        .a(b.s)
        .a(y)
        .a(b.post)
        .a(b.comb)
        .a(fn_ptr)
        .a(m as i32)
        .a(b.d as i32)
        .a(b.n as i32)
        .a(b.pdot)
        .a(b.pss)
        .a(ny as i32)
        .a(t as i32)
        .a(tt as i32)
        .a(pair_of)
        .a(shared)
        .a(b.sat);
    // the slice width is the split's (hc_prefill_split): 128 columns (hc_post_mma or
    // hc_post_mix4) or 32
    if b.s16 != HC_S_F32 || y16 {
        // (hc_s16_mode and the layers' moe_y16 checked this for every prefill step's shape)
        if y16 && pair_of == 0 && !hc_rows16_ok(b, y != 0, ny, false) {
            return Err(CudaError::Other(format!("hc_post_mix: f16 y rows need one row per token on the f16 state with the loads ahead (ny {ny})")));
        }
        if sh16 && (pair_of == 0 || !hc_shared16_ok(b, y16)) {
            return Err(CudaError::Other("hc_post_mix: f16 shared-expert rows need the MoE sum of f16 slots on the f16 state with the loads ahead".into()));
        }
        if !hc_mma8_takes(b, m) {
            return Err(CudaError::Other(format!("hc_post_mix: an f16 state or f16 MoE rows need hc_post_mma8 (N {}, M {m}, D {})", b.n, b.d)));
        }
        return gpu.launch(hc_mma8_name16(b, y != 0, ny, pair_of != 0, y16, sh16), (b.split as u32, t.div_ceil(tt) as u32, 1), 256, HC_MMA8_SMEM as u32, args);
    }
    if sh16 {
        return Err(CudaError::Other("hc_post_mix: f16 shared-expert rows need the f16 state".into()));
    }
    if b.mma && hc_mma_ok(b.n, m, b.d, b.split) {
        let (name, smem) = if hc_mma8() { ("hc_post_mma8", HC_MMA8_SMEM) } else { ("hc_post_mma", HC_MMA_SMEM) };
        return gpu.launch(name, (b.split as u32, t.div_ceil(tt) as u32, 1), 256, smem as u32, args);
    }
    let name = if hc_wide_slices(b.d, b.split) {
        "hc_post_mix4"
    } else if b.split == b.d.div_ceil(HC_COLS) {
        "hc_post_mix"
    } else {
        return Err(CudaError::Other(format!("hc_post_mix: {} slices of D {}", b.split, b.d)));
    };
    gpu.launch(name, (b.split as u32, t.div_ceil(tt) as u32, 1), 256, 0, args)
}

/// Slices of hc_post_mix's partial sums for the separate prefill launches (hc_finish reads as
/// many): 128 columns each (hc_post_mix4, a lane on 4 columns) where D % 128 == 0, else 32;
/// `DS4_HC_WIDE=0`: 32 (read once).
pub(crate) fn hc_prefill_split(d: usize) -> usize {
    if d % HC_WIDE == 0 && env_unless!("DS4_HC_WIDE", "0") {
        d / HC_WIDE
    } else {
        d.div_ceil(HC_COLS)
    }
}

/// The finish of hc_pre `f` for tokens [t0, t0+t) (its partial sums from launch_hc_post_mix),
/// xn rows written from `f.out` on, the f16 copies (`f.f16`) likewise from theirs (`f.q8` is
/// not written here: see launch_quant_q8).
pub(crate) fn launch_hc_finish(gpu: &Gpu, b: &HcBufs, t0: usize, t: usize, f: &HcFinish) -> Result<()> {
    launch_hc_finish_sk(gpu, b, t0, t, f, hc_sk_rows_on())
}

/// launch_hc_finish with the Sinkhorn in hc_sk_rows (`sk_rows`, where there is one) or not.
pub(crate) fn launch_hc_finish_sk(gpu: &Gpu, b: &HcBufs, t0: usize, t: usize, f: &HcFinish, sk_rows: bool) -> Result<()> {
    let (ns, n, d, m) = (b.split, b.n, b.d, f.m);
    let h = f.f16;
    if (h.a != 0 || h.b != 0) && d % 32 != 0 {
        return Err(CudaError::Other(format!("hc_finish: f16 copies need D % 32 == 0 (D {d})")));
    }
    if h.no_f32 && h.a == 0 && h.b == 0 {
        return Err(CudaError::Other("hc_finish: no f32 rows without an f16 copy".into()));
    }
    // model.cuh HCF_PERM_B, HCF_NO_F32, HCF_NORM_GLOBAL: the norm weights are not staged, so
    // a block's shared memory is the N x D state alone (three blocks per SM at D 4096, N 4,
    // where the staged weights made it two; DS4_HC_FIN_NSH=1: staged)
    let nglobal = !env_is!("DS4_HC_FIN_NSH", "1");
    // (model.cuh HCF_SK_LATER: the Sinkhorn in hc_sk_rows after the launch)
    let sk_later = m > n && sk_rows;
    if b.s16 != HC_S_F32 && d % 8 != 0 {
        return Err(CudaError::Other(format!("hc_finish: an f16 state needs D % 8 == 0 (D {d})")));
    }
    let s_flag = if b.s16 == HC_S_F16 { HCF_S_F16 } else { 0 };
    let flags = h.b_perm as i32 | (h.no_f32 as i32) << 1 | (nglobal as i32) << 2 | (sk_later as i32) << 3 | s_flag;
    let smem = hc_finish_smem(n, d, b.s16, !nglobal);
    let args = Args::new()
        .a(b.s + (t0 * n * d * hc_s_bytes(b.s16)) as u64)
        .a(b.pdot + (t0 * ns * m * 4) as u64)
        .a(b.pss + (t0 * ns * 8) as u64)
        .a(ns as i32)
        .a(m as i32)
        .a(d as i32)
        .a(n as i32)
        .a(f.scale)
        .a(f.base)
        .a(f.norm)
        .a(b.eps)
        .a(b.iters as i32)
        .a(b.hc_eps)
        .a(b.post + (t0 * n * 4) as u64)
        .a(b.comb + (t0 * n * n * 4) as u64)
        .a(f.out)
        .a(h.a)
        .a(h.b)
        .a(flags);
    // (an f16 state has its own entry point: model.cuh hc_finish_h)
    let name = if b.s16 == HC_S_F32 { "hc_finish" } else { "hc_finish_h" };
    gpu.launch(name, (t as u32, 1, 1), if t == 1 { 1024 } else { 256 }, smem, args)?;
    if sk_later {
        let args = Args::new().a(b.comb + (t0 * n * n * 4) as u64).a(t as i32).a(n as i32).a(b.iters as i32).a(b.hc_eps);
        gpu.launch("hc_sk_rows", (t.div_ceil(128) as u32, 1, 1), 128, 0, args)?;
    }
    Ok(())
}

/// hc_finish leaves the Sinkhorn to a thread-per-token launch after it (`hc_sk_rows`; default,
/// `DS4_HC_SK_ROWS=0`: hc_finish's warp 0 runs it while the other warps collapse). Read once.
pub(crate) fn hc_sk_rows_on() -> bool {
    env_unless!("DS4_HC_SK_ROWS", "0")
}

/// hc_post_mix + hc_finish (+ the int8 copy of xn when `f.q8`) in one launch (model.cuh
/// `hc_step`) for `t` <= the ticket buffer's length tokens; D % 32 == 0.
pub(crate) fn launch_hc_step(gpu: &Gpu, b: &HcBufs, t: usize, y: DevPtr, ny: usize, fn_ptr: DevPtr, f: &HcFinish) -> Result<()> {
    launch_hc_step_traced(gpu, b, t, y, ny, fn_ptr, f, 0, false)
}

/// `launch_hc_step` recording phase times (globaltimer, ns) into `trace` (0: off): per block
/// {entry, mixes done, ticket taken}, then the finishing block's {partials reduced, Sinkhorn
/// done, collapse done, group barrier passed, int8 rows written} (the kernel bench reads them).
/// `pdl`: hc_step_gs with programmatic dependent launch, so its loads of the weights, the state
/// and post / comb overlap the predecessor's tail (model.cuh hc_step_gs): only where the
/// predecessor writes none of them (a layer's step: its out_b or down matvec, never the
/// embedding; not a kernel bench's back-to-back steps).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_hc_step_traced(gpu: &Gpu, b: &HcBufs, t: usize, y: DevPtr, ny: usize, fn_ptr: DevPtr, f: &HcFinish, trace: DevPtr, pdl: bool) -> Result<()> {
    let (q8s, q8d) = f.q8.unwrap_or((0, 0));
    let z_out = if f.m > b.n { b.z } else { 0 };
    let a = HcStepArgs {
        s: b.s,
        y,
        post: b.post,
        comb: b.comb,
        fn_w: fn_ptr,
        pdot: b.pdot,
        pss: b.pss,
        ticket: b.ticket,
        scale: f.scale,
        base: f.base,
        norm: f.norm,
        post_out: b.post,
        comb_out: b.comb,
        xn_out: f.out,
        q8s,
        q8d,
        z_out,
        m: f.m as i32,
        d: b.d as i32,
        n: b.n as i32,
        ny: ny as i32,
        iters: b.iters as i32,
        eps: b.eps,
        hc_eps: b.hc_eps,
        pad: 0,
        trace,
        gs: b.gs,
    };
    if b.gs != 0 {
        // (the session checked that the grid fits the device at once: hc_gs_fits)
        if pdl && y != 0 {
            return gpu.launch_coop_pdl("hc_step_gs", (b.split as u32, t as u32, 1), HC_STEP_BLOCK, 0, Args::new().a(a));
        }
        return gpu.launch_coop("hc_step_gs", (b.split as u32, t as u32, 1), HC_STEP_BLOCK, 0, Args::new().a(a));
    }
    gpu.launch("hc_step", (b.split as u32, t as u32, 1), HC_STEP_BLOCK, hc_fin_smem(b.n, b.d), Args::new().a(a))
}

/// Dynamic shared memory of hc_finish_tok's callers (model.cuh: the staged
/// streams and norm weights).
fn hc_fin_smem(n: usize, d: usize) -> u32 {
    ((n + 1) * d * 4) as u32
}

/// hc_finish's dynamic shared memory: the staged state (f32 N x D, its collapsed row written
/// over stream 0; or N x D 16-bit values, then D floats of collapsed row), then the norm
/// weights when `norm_staged` (model.cuh hc_finish_tok).
pub(crate) fn hc_finish_smem(n: usize, d: usize, s16: u8, norm_staged: bool) -> u32 {
    let state = if s16 == HC_S_F32 { n * d * 4 } else { n * d * 2 + d * 4 };
    (state + if norm_staged { d * 4 } else { 0 }) as u32
}

/// Most hyper-connection streams the decode step kernels hold in registers (`MAXN` in
/// model.cuh; asserted equal by the kernel source).
pub(crate) const HC_MAXN: usize = 4;
/// Threads per block of hc_step / hc_step_gs (one warp per mix).
const HC_STEP_BLOCK: u32 = 1024;

/// Whether hc_step_gs can run `t` tokens of `split` blocks: on (`DS4_HC_GS=0`: hc_step), at
/// most HC_MAXN streams, and the whole grid resident at once (its barrier; a cooperative
/// launch refuses a larger grid).
pub(crate) fn hc_gs_fits(gpu: &Gpu, split: usize, t: usize, n: usize) -> bool {
    env_unless!("DS4_HC_GS", "0") && n <= HC_MAXN && gpu.coop_capacity("hc_step_gs", HC_STEP_BLOCK, 0).map(|c| c >= split * t).unwrap_or(false)
}

/// Gram entries of `n` streams (hc_step_gs's partials per split).
pub(crate) fn hc_gram(n: usize) -> usize {
    n * (n + 1) / 2
}

/// `DS4_HC_SK=0` keeps decode's Sinkhorn in hc_step's finishing block instead of deferring it
/// to an extra block of attn_prep / router_dec (read once).
fn hc_sk_enabled() -> bool {
    env_unless!("DS4_HC_SK", "0")
}

/// `DS4_FUSE_COMBINE=0` keeps prefill's moe_combine launch (the MoE output summed into
/// ffn_out, then read by hc_post_mix) instead of hc_post_mix summing the slot rows itself
/// (read once).
fn fuse_combine_enabled() -> bool {
    env_unless!("DS4_FUSE_COMBINE", "0")
}

/// `DS4_HC_F16=0` keeps prefill's x_to_f16 launches of xn (the cuBLAS dense path's copy and
/// the routed experts' one) instead of hc_finish writing the f16 copies itself (read once).
fn hc_f16_enabled() -> bool {
    env_unless!("DS4_HC_F16", "0")
}

/// `DS4_FFN_XN16=0` keeps prefill's f32 xn on the FFN side where every reader takes an f16
/// copy (the router and shared expert on cuBLAS, the routed experts on f16 activations)
/// instead of hc_finish writing only the copies (read once).
fn ffn_xn16_enabled() -> bool {
    env_unless!("DS4_FFN_XN16", "0")
}

/// The layer output an hc_post adds (CudaSession::hc_step_y).
#[derive(Clone, Copy)]
enum HcY {
    /// `ny` consecutive D-rows per token from this pointer, summed (0: none)
    Rows(DevPtr, usize),
    /// one f16 D-row per token (launch_hc_post_mix16)
    Rows16(DevPtr),
    /// prefill's MoE output, summed by hc_post_mix (launch_hc_post_mix_moe16): {ypair, pair_of,
    /// shared, k, ypair in f16, shared in f16}
    Moe(DevPtr, DevPtr, DevPtr, usize, bool, bool),
}

/// `DS4_HC_STEP=0` keeps decode's separate hc_post_mix / hc_finish / quant_q8 launches
/// (read once).
fn hc_step_enabled() -> bool {
    env_unless!("DS4_HC_STEP", "0")
}

/// Arguments of the tensor-core prefill attention (kernels/attn.cuh `AttnTcArgs`).
#[repr(C)]
#[derive(Clone, Copy)]
struct AttnTcArgs {
    q: u64,
    kv: u64,
    sel: u64,
    pos: u64,
    omega: u64,
    sinks: u64,
    out: u64,
    cap: i32,
    topk: i32,
    h: i32,
    dh: i32,
    rd: i32,
    w: i32,
    ratio: i32,
    eps: f32,
    q16: u64,
}

/// Arguments of the tensor-core indexer scores (kernels/idx.cuh `IdxTcArgs`).
#[repr(C)]
#[derive(Clone, Copy)]
struct IdxTcArgs {
    q16: u64,
    cq: u64,
    k16: u64,
    ks: u64,
    pos: u64,
    scores: u64,
    ldsc: i32,
    t: i32,
    nrows: i32,
    hi: i32,
    topk: i32,
}

/// One layer's attention inputs and outputs (device pointers), shared by the session and the
/// kernel bench so that both run the same launch code.
#[derive(Clone, Copy)]
pub(crate) struct AttnIo {
    /// [t][h*dh] q_b output (before the per-head norm and RoPE).
    pub q: DevPtr,
    /// The same as f16 (0: none; the tensor-core kernels then read it instead of `q`).
    pub q16: DevPtr,
    /// Raw ring [cap][dh] (row of position p at p % cap).
    pub raw: DevPtr,
    /// Compressed rows [.][dh] (0 when ratio == 0).
    pub comp: DevPtr,
    /// [t][topk] indexer selection (ratio 4).
    pub sel: DevPtr,
    pub pos: DevPtr,
    pub omega: DevPtr,
    pub sinks: DevPtr,
    /// SIMT partials: [t.max(nsplit)][nsplit][h][dh] and [..][2].
    pub po: DevPtr,
    pub pml: DevPtr,
    /// [t][h][dh] head outputs.
    pub out: DevPtr,
    /// f16 row copy for the tensor-core path: [cap + comp_rows][dh] (0 = none).
    pub kv16: DevPtr,
    pub t: usize,
    pub cap: usize,
    /// Compressed rows visible to the last token of the batch ((p_last + 1) / ratio).
    pub comp_rows: usize,
    pub topk: usize,
    pub h: usize,
    pub dh: usize,
    pub rd: usize,
    pub w: usize,
    pub ratio: usize,
    pub nsplit: usize,
    pub eps: f32,
}

/// Prefill attention on tensor cores for Precision::Fast unless `DS4_ATTN=simt` (read once).
pub(crate) fn attn_tc_enabled() -> bool {
    env_unless!("DS4_ATTN", "simt")
}

/// Shapes the tensor-core kernel handles: up to 64 heads (one CTA holds them all), head dim a
/// multiple of 8 (16-byte f16 chunks) up to 512 (padded to 128 or 512 in shared memory).
pub(crate) fn attn_tc_shape_ok(h: usize, dh: usize, rd: usize) -> bool {
    (1..=64).contains(&h) && dh % 8 == 0 && (8..=512).contains(&dh) && rd % 2 == 0 && rd <= dh
}

fn attn_tc_dhp(dh: usize) -> usize {
    if dh <= 128 { 128 } else { 512 }
}

/// Dynamic shared memory of attn_tc_<dhp>: Q + two K/V tiles (64 rows of dhp f16 each) and
/// the 8-warp S exchange (32 KiB).
pub(crate) fn attn_tc_smem(dhp: usize) -> usize {
    3 * 64 * dhp * 2 + 8 * 1024 * 4
}

/// Prefill attention on the wgmma kernel (attn_tw) where it is built (sm_90a), unless
/// `DS4_ATTN_WG=0` (read once): attn_tc otherwise.
pub(crate) fn attn_tw_enabled() -> bool {
    env_unless!("DS4_ATTN_WG", "0")
}

/// Prefill's q_b on cuBLAS writes q as f16 for the tensor-core attention, which rounds it to
/// f16 after the per-head norm anyway (half the bytes of its prologue's q loads and of the
/// GEMM's stores), unless `DS4_Q16=0` (read once): f32.
fn q16_enabled() -> bool {
    env_unless!("DS4_Q16", "0")
}

/// Dynamic shared memory of attn_tw_<dhp>: Q + two K/V tiles (64 rows of dhp f16 each), the
/// P tile (64 x 64 f16), the two warpgroups' row maxima and sums, the RoPE table (up to 256
/// (cos, sin) pairs), the token's selection.
pub(crate) fn attn_tw_smem(dhp: usize, topk: usize) -> usize {
    3 * 64 * dhp * 2 + 64 * 64 * 2 + 4 * 64 * 4 + 256 * 8 + topk * 4
}

/// attn_tx (attn_tw's split-role loop, attn.cuh ALT) where it fits, unless `DS4_ATTN_TX=0`
/// (read once): attn_tw otherwise.
pub(crate) fn attn_tx_enabled() -> bool {
    env_unless!("DS4_ATTN_TX", "0")
}

/// Dynamic shared memory of attn_tx_<dhp>: attn_tw's plus a second P tile.
pub(crate) fn attn_tx_smem(dhp: usize, topk: usize) -> usize {
    attn_tw_smem(dhp, topk) + 64 * 64 * 2
}

/// attn_tw's phase-trace words per query token (attn.cuh ATW_TR): entry, Q prepared, first
/// tile ready, tile loop done, exit (%globaltimer ns), SM id.
pub(crate) const ATTN_TW_TRACE: usize = 6;

/// The cap on attn_tw's dynamic shared memory (driver.rs sets it; larger selections take attn_tc).
pub(crate) const ATTN_TW_SMEM_MAX: usize = 220 * 1024;

/// Inputs of the indexer scoring of one ratio-4 layer (scores then topk_select).
#[derive(Clone, Copy)]
pub(crate) struct IdxIo {
    /// [T][hi][di] FP4-simulated queries (after idx_q_prep)
    pub q: u64,
    /// [T][hi] head weights (before wscale)
    pub w: u64,
    /// [rows][di] compressed indexer rows
    pub k: u64,
    pub pos: u64,
    /// [T][ldsc] output scores
    pub scores: u64,
    pub ldsc: usize,
    pub t: usize,
    /// upper bound of the rows visible to any token of the batch (grid size; rows converted)
    pub rows: usize,
    pub hi: usize,
    pub di: usize,
    pub wscale: f32,
    pub topk: usize,
    /// tensor-core path only: f16 copies ([T*hi + rows][128] u16) and their scales ([T*hi + rows] f32)
    pub h16: u64,
    pub hsc: u64,
}

/// Prefill indexer scores on tensor cores for Precision::Fast with the FP4 step on, unless
/// `DS4_IDX=simt` (read once).
pub(crate) fn idx_tc_enabled() -> bool {
    env_unless!("DS4_IDX", "simt")
}

/// `DS4_COMP_L16=1`: the compressors' ratio-128 windows on comp_emit16 (16 tokens' loads in
/// flight per thread instead of 8; model.cuh). The same bits. Read once.
fn comp_l16() -> bool {
    env_is!("DS4_COMP_L16", "1")
}

/// comp_emit (or comp_emit16 when `sixteen`) over the windows that close in a batch of `t`
/// tokens: a block per window (t / r + 1, the ones that do not close return), a thread per column.
fn launch_comp_emit(gpu: &Gpu, a: &CompArgs, t: usize, sixteen: bool) -> Result<()> {
    let (r, dim) = (a.r as usize, a.d as usize);
    let block = dim.div_ceil(32) * 32;
    if r == 0 || block > 512 {
        return Err(CudaError::Other(format!("comp_emit: ratio {r}, width {dim} (at most 512)")));
    }
    gpu.launch(if sixteen { "comp_emit16" } else { "comp_emit" }, ((t / r + 1) as u32, 1, 1), block as u32, (dim * 4) as u32, Args::new().a(*a))
}

/// The kernel bench's compressor rows (`DS4_KBENCH=comp`): comp_emit or comp_emit16 on the
/// given buffers (a main-KV compressor: no indexer form, no near-tie notes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_comp_emit_bench(gpu: &Gpu, kv: u64, sc: u64, ape: u64, state: (u64, u64), rows: u64, norm: u64, omega: u64, pos: u64, t: usize, r: usize, d: usize, rd: usize, sixteen: bool) -> Result<()> {
    let a = CompArgs { kv, sc, ape, skv: state.0, ssc: state.1, rows, norm, omega, pos, t: t as i32, r: r as i32, d: d as i32, rd: rd as i32, eps: 1e-6, qat: 1, indexer: 0, layer: 0, ties: 0 };
    launch_comp_emit(gpu, &a, t, sixteen)
}

/// `DS4_IDXQ_L=1`: the indexer's query prep on idx_q_prep_l (Di / 32 lanes per vector; model.cuh)
/// instead of idx_q_prep (a warp per vector), where it applies (idx_q_prep_l_ok; no near-tie
/// notes). The same bits. Read once.
fn idxq_l() -> bool {
    env_is!("DS4_IDXQ_L", "1")
}

/// Shared-memory RoPE pairs of an idx_q_prep_l block (model.cuh IDXQ_L_CS, asserted equal by
/// the kernel source).
pub(crate) const IDXQ_L_CS: usize = 2048;

/// Whether idx_q_prep_l takes the indexer's shape: Di one of 32, 64, 128, 256 (Di / 32 lanes a
/// vector, 256 / that vectors a block), a block's vectors whole tokens or a part of one, their
/// RoPE pairs (R even, at most Di) within its table.
pub(crate) fn idx_q_prep_l_ok(hi: usize, di: usize, r: usize) -> bool {
    if ![32, 64, 128, 256].contains(&di) || hi == 0 || r % 2 != 0 || r > di {
        return false;
    }
    let vpb = 256 / (di / 32);
    let tpb = if vpb >= hi { vpb / hi } else { 1 };
    (vpb % hi == 0 || hi % vpb == 0) && tpb * (r / 2) <= IDXQ_L_CS
}

/// Shapes idx_score_tc handles: vectors padded to 128 (16-byte f16 chunks, float4 loads), the
/// head weights of every head in shared memory.
pub(crate) fn idx_tc_shape_ok(hi: usize, di: usize) -> bool {
    (1..=128).contains(&hi) && di % 8 == 0 && (8..=128).contains(&di)
}

/// The prefill indexer-score kernel and its CTA tile (tokens, rows): idx_score_wg (64 x 256,
/// wgmma) where it is built (sm_90a), else idx_score_tc2 (32 x 256: half the L2 reads of q per
/// score of idx_score_tc's tiles, which bound it at long context); `DS4_IDX_TC=32` keeps
/// idx_score_tc2, `=64` idx_score_tc (64 x 128; read once).
pub(crate) fn idx_tc_kernel(gpu: &Gpu) -> (&'static str, usize, usize) {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    match V.get_or_init(|| std::env::var("DS4_IDX_TC").unwrap_or_default()).as_str() {
        "64" => IDX_TC,
        "32" => IDX_TC2,
        _ if wgmma_built(gpu.cc) => IDX_WG,
        _ => IDX_TC2,
    }
}
/// The prefill indexer-score kernels with their CTA tiles (tokens, rows).
pub(crate) const IDX_TC: (&str, usize, usize) = ("idx_score_tc", 64, 128);
pub(crate) const IDX_TC2: (&str, usize, usize) = ("idx_score_tc2", 32, 256);
pub(crate) const IDX_WG: (&str, usize, usize) = ("idx_score_wg", IWG_T, IWG_R);
/// idx_score_wg's CTA tile and Q buffers (`IWG_T`, `IWG_R`, `IWG_QB` in idx.cuh, asserted
/// equal by the kernel source).
pub(crate) const IWG_T: usize = 64;
pub(crate) const IWG_R: usize = 256;
pub(crate) const IWG_QB: usize = 4;
/// Dynamic shared memory of idx_score_wg for `hi` heads: the K tile [IWG_R][128] f16, IWG_QB
/// Q tiles [IWG_T][128] f16, the head weights [hi][IWG_T] f32, the rows' scales [IWG_R] f32
/// and 2 x IWG_QB mbarriers.
pub(crate) fn idx_wg_smem(hi: usize) -> usize {
    IWG_R * 256 + IWG_QB * IWG_T * 256 + hi * IWG_T * 4 + IWG_R * 4 + 16 * IWG_QB
}

/// Dynamic shared memory of an idx_score_tc kernel of `tt` x `tr` tiles: K tile [tr][128] f16,
/// two Q tiles [tt][128] f16, head weights [hi][tt] f32.
pub(crate) fn idx_tc_smem(hi: usize, tt: usize, tr: usize) -> usize {
    tr * 128 * 2 + 2 * tt * 128 * 2 + hi * tt * 4
}

/// Bytes of the f16 copies and f32 scales launch_idx_tc needs for `t` tokens and `rows` rows.
pub(crate) fn idx_tc_bufs(t: usize, hi: usize, rows: usize) -> (usize, usize) {
    ((t * hi + rows) * 128 * 2, (t * hi + rows) * 4)
}

/// SIMT indexer scores (idx_score): the reference path, and decode.
/// Rows of the score matrix per idx_score block (`IDX_ROWS_PER_BLOCK` in model.cuh, asserted
/// equal by the kernel source).
pub(crate) const IDX_ROWS_PER_BLOCK: usize = 16;

/// Shapes of the register-blocked decode scores (`idx_score_w`): Hi = 8 warps x {2, 4, 8}
/// heads, Di = 32 lanes x {1, 2, 4} values.
pub(crate) fn idx_w_shape_ok(hi: usize, di: usize) -> bool {
    [16, 32, 64].contains(&hi) && [32, 64, 128].contains(&di)
}

/// Whether a batch of `t` tokens takes `idx_score_w` (one token, a shape it handles; read
/// once: DS4_IDX_W=0 keeps idx_score).
pub(crate) fn idx_w_ok(t: usize, hi: usize, di: usize) -> bool {
    t == 1 && env_unless!("DS4_IDX_W", "0") && idx_w_shape_ok(hi, di)
}

/// Rows per idx_score_w block for a score matrix of `rows` rows: about 512 blocks, 8 to
/// IDXW_MAX_RPB rows each (each block's rows are one batch of cp.async copies).
pub(crate) fn idx_w_rpb(rows: usize) -> usize {
    (rows.div_ceil(512).next_multiple_of(2)).clamp(8, IDXW_MAX_RPB)
}
/// `IDXW_MAX_RPB` in model.cuh (asserted equal by the kernel source).
pub(crate) const IDXW_MAX_RPB: usize = 64;

/// SIMT indexer scores: `idx_score_w` for one token where the shape fits (`idx_w_ok`), else
/// `idx_score`.
pub(crate) fn launch_idx_simt(gpu: &Gpu, io: &IdxIo) -> Result<()> {
    if idx_w_ok(io.t, io.hi, io.di) {
        launch_idx_score_w(gpu, io)
    } else {
        launch_idx_score(gpu, io)
    }
}

/// The arguments idx_score and idx_score_w share.
fn idx_score_args(io: &IdxIo) -> Args {
    Args::new().a(io.q).a(io.w).a(io.k).a(io.pos).a(io.scores).a(io.ldsc as i32).a(io.hi as i32).a(io.di as i32).a(io.wscale).a(io.topk as i32)
}

/// The register-blocked scores (`idx_score_w`).
pub(crate) fn launch_idx_score_w(gpu: &Gpu, io: &IdxIo) -> Result<()> {
    if !idx_w_shape_ok(io.hi, io.di) {
        return Err(CudaError::Other(format!("idx_score_w: unsupported shape ({} x {})", io.hi, io.di)));
    }
    let rpb = idx_w_rpb(io.rows);
    gpu.launch("idx_score_w", (io.rows.div_ceil(rpb) as u32, io.t as u32, 1), 256, (rpb * io.di * 4) as u32, idx_score_args(io).a(rpb as i32))
}

/// The shared-memory staged scores (`idx_score`: any shape, any batch).
pub(crate) fn launch_idx_score(gpu: &Gpu, io: &IdxIo) -> Result<()> {
    let smem = ((io.hi * (io.di + 1) + io.hi + 8 * io.di) * 4) as u32;
    gpu.launch("idx_score", (io.rows.div_ceil(IDX_ROWS_PER_BLOCK) as u32, io.t as u32, 1), 256, smem, idx_score_args(io))
}

/// Whether a one-token indexer over up to `rows` rows takes `idx_score_dtc` (tensor cores;
/// kernels/idx.cuh): only where the prefill takes idx_score_tc (Fast precision with the FP4
/// step: `f16_ok`), for 16, 32 or 64 heads of at most 128 dims, and from
/// `DS4_IDX_DTC_MIN` rows (default 3072: kernel bench at the published shape, 5.0 against
/// idx_score_w's 4.1 us at 2048 rows, equal at 3000, 6.5 against 17.5 at 16K; read once;
/// 0: always, which the fixture check uses to cover it). DS4_IDX_DTC=0 keeps idx_score_w.
pub(crate) fn idx_dtc_ok(t: usize, rows: usize, hi: usize, di: usize, f16_ok: bool) -> bool {
    static MIN: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let min = *MIN.get_or_init(|| match std::env::var("DS4_IDX_DTC").as_deref() {
        Ok("0") => None,
        _ => Some(std::env::var("DS4_IDX_DTC_MIN").ok().and_then(|v| v.parse().ok()).unwrap_or(3072)),
    });
    t == 1 && f16_ok && matches!(hi, 16 | 32 | 64) && di % 4 == 0 && di <= 128 && min.is_some_and(|m| rows >= m)
}

/// idx_score_dtc: one token's scores of `io.rows` rows (the kernel reads its row count from pos).
pub(crate) fn launch_idx_dtc(gpu: &Gpu, io: &IdxIo) -> Result<()> {
    let args = Args::new().a(io.q).a(io.w).a(io.k).a(io.pos).a(io.scores).a(io.hi as i32).a(io.di as i32).a(io.wscale).a(io.topk as i32);
    gpu.launch("idx_score_dtc", (io.rows.div_ceil(IDT_R).max(1) as u32, 1, 1), (32 * io.hi / 16) as u32, 0, args)
}
/// `IDT_R` in idx.cuh: rows per idx_score_dtc block (asserted equal by the kernel source).
pub(crate) const IDT_R: usize = 64;

/// Tensor-core indexer scores (kernels/idx.cuh): scaled f16 copies of q and the rows, then
/// idx_score_tc. Exact up to f32 summation order only for FP4-simulated q and k (see idx.cuh).
pub(crate) fn launch_idx_tc(gpu: &Gpu, io: &IdxIo) -> Result<()> {
    launch_idx_tc_from(gpu, io, false)
}

/// launch_idx_tc, with q's f16 copy and scales already in io.h16 / io.hsc when `q_ready`
/// (idx_q_prep wrote them).
pub(crate) fn launch_idx_tc_from(gpu: &Gpu, io: &IdxIo, q_ready: bool) -> Result<()> {
    launch_idx_tc_with(gpu, io, q_ready, idx_tc_kernel(gpu))
}

/// launch_idx_tc_from with the score kernel given (IDX_TC, IDX_TC2 or IDX_WG; the kernel bench
/// compares them).
pub(crate) fn launch_idx_tc_with(gpu: &Gpu, io: &IdxIo, q_ready: bool, kernel: (&str, usize, usize)) -> Result<()> {
    if io.h16 == 0 || io.hsc == 0 || !idx_tc_shape_ok(io.hi, io.di) {
        return Err(CudaError::Other("tensor-core indexer: unsupported shape or no f16 buffer".into()));
    }
    let nq = io.t * io.hi;
    let k16 = io.h16 + (nq * 128 * 2) as u64;
    let ks = io.hsc + (nq * 4) as u64;
    if !q_ready {
        // 8 vectors (warps) per block
        let args = Args::new().a(io.q).a(nq as i32).a(io.di as i32).a(io.w).a(io.wscale).a(io.h16).a(io.hsc);
        gpu.launch("idx_to_f16", (nq.div_ceil(8) as u32, 1, 1), 256, 0, args)?;
    }
    if io.rows > 0 {
        let args = Args::new().a(io.k).a(io.rows as i32).a(io.di as i32).a(0u64).a(1.0f32).a(k16).a(ks);
        gpu.launch("idx_to_f16", (io.rows.div_ceil(8) as u32, 1, 1), 256, 0, args)?;
    }
    let ta = IdxTcArgs {
        q16: io.h16,
        cq: io.hsc,
        k16,
        ks,
        pos: io.pos,
        scores: io.scores,
        ldsc: io.ldsc as i32,
        t: io.t as i32,
        nrows: io.rows as i32,
        hi: io.hi as i32,
        topk: io.topk as i32,
    };
    let (name, tt, tr) = kernel;
    let smem = if name == IDX_WG.0 { idx_wg_smem(io.hi) } else { idx_tc_smem(io.hi, tt, tr) };
    gpu.launch(name, (io.rows.div_ceil(tr).max(1) as u32, io.t.div_ceil(tt) as u32, 1), 256, smem as u32, Args::new().a(ta))
}

/// Keys per thread beyond which the top-k keys leave the registers (model.cuh topk_rows' KC).
const TOPK_REG_KEYS: usize = 20;

/// Keys topk_select may keep in dynamic shared memory: what a block may opt into, less its
/// static shared memory (< 2 KiB), in whole rounds of its 1024 threads (~56K on sm_90).
pub(crate) fn topk_smem_keys(gpu: &Gpu) -> usize {
    (gpu.smem_optin().saturating_sub(2048) / 4) / 1024 * 1024
}

/// Whether a launch of `t` tokens over up to `rows` rows selects with `topk_cluster` (a cluster
/// of TOPK_CL blocks per token) instead of topk_select (one block per token): decode (t <= 4:
/// a cluster per token still leaves most SMs to the graph's other branch) from
/// `DS4_TOPK_CL_MIN` rows (default 10240; read once; 0: always, which the fixture check uses
/// to cover it). DS4_TOPK_CL=0 keeps topk_select. Why 10240 (session 30, kernel bench / decode
/// graph): alone a cluster costs ~10 us at any size (topk_select: 5.0 us at 2K rows, 8.0 at 8K,
/// 14.3 at 16K, 188 at 70K; the cluster 10.5, 10.6, 11.9, 19.3), but in the decode graph the
/// one block is slower than alone: with the cluster decode is 3.0 % faster at 64K context,
/// 0.7 % at 32K (graph rows 10240), 0.8 % slower at 26.6K (8192) and 18.4K (6144), 1.4 % at 8K.
pub(crate) fn topk_cluster_ok(t: usize, rows: usize) -> bool {
    static MIN: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let min = *MIN.get_or_init(|| match std::env::var("DS4_TOPK_CL").as_deref() {
        Ok("0") => None,
        _ => Some(std::env::var("DS4_TOPK_CL_MIN").ok().and_then(|v| v.parse().ok()).unwrap_or(10240)),
    });
    t <= 4 && min.is_some_and(|m| rows >= m)
}

/// `TOPK_CL` in model.cuh: blocks per token of topk_cluster (asserted equal by the kernel source).
pub(crate) const TOPK_CL: usize = 8;
/// Threads per block of topk_cluster: 1024 (kernel bench: 10.5 / 11.9 / 19.3 us at 2K / 16K /
/// 70K rows; 512: 9.7 / 13.7 / 17.4; 256: 9.4 / 15.7 / 28.3); `DS4_TOPK_CL_THREADS` 256 or 512
/// (read once) for A/B.
fn topk_cl_threads() -> usize {
    topk_block(env_num!("DS4_TOPK_CL_THREADS", usize, 1024))
}

/// A top-k switch's threads per block: 256 or 512 as asked, else 1024.
fn topk_block(asked: usize) -> usize {
    if asked == 256 || asked == 512 {
        asked
    } else {
        1024
    }
}

/// Top-k over the scores of `io` into `sel` ([T][topk]); `ties` 0 or the near-tie log; the
/// kernel as topk_cluster_ok picks it.
pub(crate) fn launch_topk(gpu: &Gpu, io: &IdxIo, sel: u64, layer: usize, ties: u64) -> Result<()> {
    let cl = topk_cluster_ok(io.t, io.rows);
    launch_topk_with(gpu, io, sel, layer, ties, cl, if cl { topk_cl_threads() } else { topk_threads(io.t) })
}

/// `DS4_TOPK_THREADS=256` / `512`: prefill's topk_select (batches of more than 4 tokens) with
/// blocks of that many threads instead of 1024. Why: an 8K prefill's ratio-4 layers select from
/// at most 2048 rows per token, 2 keys per thread of 1024: 254 us per layer on an H100 (session
/// 58's trace), two blocks per SM, each pass's barriers over 32 warps. The rows a thread owns
/// and the output (the top-k in ascending row order, ties to the smaller row) do not depend on
/// the block's size: the same selection. Decode (one token) keeps 1024. Read once.
fn topk_threads(t: usize) -> usize {
    if t > 4 {
        topk_block(env_num!("DS4_TOPK_THREADS", usize, 1024))
    } else {
        1024
    }
}

/// topk_select (`cluster` false: one block per token) or topk_cluster (TOPK_CL blocks per
/// token), blocks of `threads`. Past what the registers hold (20 keys per thread) the keys go
/// to shared memory sized for `io.rows` (the upper bound of any token's rows), or are re-read
/// per pass beyond what shared memory holds.
pub(crate) fn launch_topk_with(gpu: &Gpu, io: &IdxIo, sel: u64, layer: usize, ties: u64, cluster: bool, threads: usize) -> Result<()> {
    let blocks = if cluster { TOPK_CL } else { 1 };
    let per = io.rows.div_ceil(blocks * threads);
    let keys = if per > TOPK_REG_KEYS { (per * threads).min(topk_smem_keys(gpu) / threads * threads) } else { 0 };
    let args = Args::new().a(io.scores).a(io.ldsc as i32).a(io.pos).a(io.topk as i32).a(sel).a(layer as i32).a(ties).a(keys as i32);
    if cluster {
        gpu.launch("topk_cluster", (TOPK_CL as u32, io.t as u32, 1), threads as u32, (4 * keys) as u32, args)
    } else {
        gpu.launch("topk_select", (io.t as u32, 1, 1), threads as u32, (4 * keys) as u32, args)
    }
}

/// SIMT attention (attn_partial + attn_combine): the reference path, prefill without tensor
/// cores, and decode with `DS4_ATTN_DEC=old` (or shapes attn_dec does not take).
pub(crate) fn launch_attn_simt(gpu: &Gpu, io: &AttnIo) -> Result<()> {
    let aa = AttnArgs {
        q: io.q,
        raw: io.raw,
        comp: io.comp,
        sel: io.sel,
        pos: io.pos,
        omega: io.omega,
        po: io.po,
        pml: io.pml,
        cap: io.cap as i32,
        topk: io.topk as i32,
        h: io.h as i32,
        dh: io.dh as i32,
        rd: io.rd as i32,
        w: io.w as i32,
        ratio: io.ratio as i32,
        nsplit: io.nsplit as i32,
        eps: io.eps,
        pad: 0,
    };
    // 8 heads (warps) per block; 16 per block measured slower in prefill (11.7 vs 9.4 ms/layer)
    let hpb = 8;
    gpu.launch("attn_partial", (io.h.div_ceil(hpb) as u32, io.nsplit as u32, io.t as u32), (hpb * 32) as u32, (16 * io.dh * 4) as u32, Args::new().a(aa))?;
    let args = Args::new()
        .a(io.po)
        .a(io.pml)
        .a(io.sinks)
        .a(io.pos)
        .a(io.omega)
        .a(io.h as i32)
        .a(io.dh as i32)
        .a(io.rd as i32)
        .a(io.nsplit as i32)
        .a(io.out);
    gpu.launch("attn_combine", (io.h as u32, io.t as u32, 1), 256, (io.dh * 4) as u32, args)
}

/// Decode attention (T = 1) in one kernel, `attn_dec` (kernels/decode.cuh), unless
/// `DS4_ATTN_DEC=old` (read once): then attn_partial + attn_combine as in prefill.
pub(crate) fn attn_dec_enabled() -> bool {
    env_unless!("DS4_ATTN_DEC", "old")
}

/// Most row splits of attn_dec (clusters of 8 blocks per group of 8 heads; sizes its scratch).
pub(crate) const ATTN_DEC_NSPLIT_MAX: usize = 32;

/// Row splits of attn_dec for a layer of compression `ratio`: 8 (one cluster, no cross-cluster
/// merge) where the rows are few at usual contexts (the 128-row window; ratio 128: 144 rows at
/// 2K, 640 at 64K), 16 for ratio 4 (up to 640 rows). H200 kernel bench at 2K: ratio 0 13.9 ->
/// 11.8 us, ratio 128 14.9 -> 12.9 us with 8; 32 splits for ratio 4 took 33.6 us instead of
/// 23.2 (256 blocks in clusters of 8 no longer fit one wave). DS4_ADEC_NS="a,b,c" sets them for
/// ratios 0, 4, 128 (multiples of 8, at most ATTN_DEC_NSPLIT_MAX; read once).
pub(crate) fn attn_dec_nsplit(ratio: usize) -> usize {
    static V: std::sync::OnceLock<[usize; 3]> = std::sync::OnceLock::new();
    let v = V.get_or_init(|| {
        let mut v = [8, 16, 8];
        if let Ok(s) = std::env::var("DS4_ADEC_NS") {
            for (i, t) in s.split(',').take(3).enumerate() {
                if let Ok(n) = t.trim().parse::<usize>() {
                    if n >= 8 && n % 8 == 0 && n <= ATTN_DEC_NSPLIT_MAX {
                        v[i] = n;
                    }
                }
            }
        }
        v
    });
    match ratio {
        0 => v[0],
        4 => v[1],
        _ => v[2],
    }
}

/// Shapes attn_dec handles: lane float4 columns 4*lane + 128*j (dh <= 512, dh % 4 == 0), the
/// cos/sin table of at most 256 RoPE pairs.
pub(crate) fn attn_dec_shape_ok(h: usize, dh: usize, rd: usize) -> bool {
    h >= 1 && dh % 4 == 0 && (4..=512).contains(&dh) && rd % 2 == 0 && rd <= dh
}

/// attn_dec scratch: f32 elements of the cross-cluster partials, i32 counters (zeroed once;
/// each launch leaves them zero).
pub(crate) fn attn_dec_bufs(h: usize, dh: usize) -> (usize, usize) {
    let (g, nc) = (h.div_ceil(8), ATTN_DEC_NSPLIT_MAX / 8);
    (g * nc * 8 * dh + g * nc * 8 * 8 * 2, g * 8)
}

/// Arguments of attn_dec (kernels/decode.cuh `AttnDecArgs`).
#[repr(C)]
#[derive(Clone, Copy)]
struct AttnDecArgs {
    q: u64,
    raw: u64,
    comp: u64,
    sel: u64,
    pos: u64,
    omega: u64,
    sinks: u64,
    part: u64,
    cnt: u64,
    out: u64,
    cap: i32,
    topk: i32,
    h: i32,
    dh: i32,
    rd: i32,
    w: i32,
    ratio: i32,
    nsplit: i32,
    eps: f32,
    pad: i32,
    trace: u64,
    qs: u64,
    qd: u64,
}

/// One-kernel decode attention for one token: `part` / `cnt` as sized by attn_dec_bufs (the
/// counters must be zero, as every launch leaves them). io.po / io.pml are not used. `q8`:
/// also the output's int8 blocks (quant_q8's layout and values; `attn_dec_q8_ok` shapes).
pub(crate) fn launch_attn_dec(gpu: &Gpu, io: &AttnIo, part: DevPtr, cnt: DevPtr, q8: Option<(DevPtr, DevPtr)>) -> Result<()> {
    launch_attn_dec_traced(gpu, io, part, cnt, q8, 0)
}

/// Whether attn_dec can write its output's int8 blocks at head size `dh`: a 32-value block is
/// 8 lanes of one head in its final merge (dh % 256 == 0; the published 512). `DS4_ADEC_Q8=0`:
/// a quant_q8 launch instead (read once).
pub(crate) fn attn_dec_q8_ok(dh: usize) -> bool {
    dh % 256 == 0 && env_unless!("DS4_ADEC_Q8", "0")
}

/// `launch_attn_dec` recording phase times into `trace` (0: off; 8 u64 per block, block
/// (g, split) at 8 * (g * splits + split); decode.cuh ADC_TRACE lists the phases).
pub(crate) fn launch_attn_dec_traced(gpu: &Gpu, io: &AttnIo, part: DevPtr, cnt: DevPtr, q8: Option<(DevPtr, DevPtr)>, trace: DevPtr) -> Result<()> {
    if io.t != 1 || !attn_dec_shape_ok(io.h, io.dh, io.rd) {
        return Err(CudaError::Other("decode attention: one token and dh <= 512 (dh % 4 == 0) only".into()));
    }
    if q8.is_some() && io.dh % 256 != 0 {
        return Err(CudaError::Other(format!("decode attention: an int8 output needs dh % 256 == 0 (dh {})", io.dh)));
    }
    let (qs, qd) = q8.unwrap_or((0, 0));
    let aa = AttnDecArgs {
        q: io.q,
        raw: io.raw,
        comp: io.comp,
        sel: io.sel,
        pos: io.pos,
        omega: io.omega,
        sinks: io.sinks,
        part,
        cnt,
        out: io.out,
        cap: io.cap as i32,
        topk: io.topk as i32,
        h: io.h as i32,
        dh: io.dh as i32,
        rd: io.rd as i32,
        w: io.w as i32,
        ratio: io.ratio as i32,
        nsplit: attn_dec_nsplit(io.ratio) as i32,
        eps: io.eps,
        pad: 0,
        trace,
        qs,
        qd,
    };
    gpu.launch("attn_dec", (io.h.div_ceil(8) as u32, aa.nsplit as u32, 1), 256, attn_dec_smem(io.dh) as u32, Args::new().a(aa))
}

/// Dynamic shared memory of attn_dec: a tile of 48 rows.
pub(crate) fn attn_dec_smem(dh: usize) -> usize {
    48 * dh * 4
}

/// Prefill's routing by moe_route_w too (a warp per token; moe_route: a block of 256 per token
/// whose warp 0 selects); `DS4_ROUTE_PF=0`: moe_route. The same selection and weights
/// (route_warp's order and ties are moe_route's): kernel bench dec at 8192 tokens 13.4 against
/// 49.6 us, identical with and without exact score ties (session 34).
pub(crate) fn route_w_prefill() -> bool {
    env_unless!("DS4_ROUTE_PF", "0")
}

/// Decode MoE router `moe_route_w` (one warp per token) unless `DS4_ROUTE=old` (read once).
pub(crate) fn route_new_enabled() -> bool {
    env_unless!("DS4_ROUTE", "old")
}

/// Mirror of `struct RouterDecArgs` in decode.cuh.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RouterDecArgs {
    pub w: WMat,
    pub x: u64,
    pub logits: u64,
    pub bias: u64,
    pub sel: u64,
    pub wts: u64,
    pub ticket: u64,
    pub e: i32,
    pub k: i32,
    pub wscale: f32,
    pub wnorm: i32,
    /// a deferred Sinkhorn for router_dec's extra block (z == 0: none)
    pub sk: HcSk,
}

/// A Sinkhorn deferred by hc_step to a later launch (model.cuh `HcSk`, `hc_sk_warp`): comb
/// [N][N] from the logits hc_step stored at z.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct HcSk {
    pub z: u64,
    pub comb: u64,
    pub n: i32,
    pub iters: i32,
    pub eps: f32,
    pub pad: i32,
}

/// Whether `router_dec` runs this layer's decode router: a selected (not hash-routed) layer,
/// E <= 256, K <= 32, an F32 / F16 / Q8_0 router over a row of whole 32-value groups, unless
/// DS4_ROUTER=old (read once) or DS4_ROUTE=old.
pub(crate) fn router_dec_ok(w: &WMat, hashed: bool, e: usize, k: usize) -> bool {
    let on = env_unless!("DS4_ROUTER", "old");
    on && route_new_enabled() && !hashed && e <= 256 && k <= 32 && [0, 1, 8].contains(&w.ty) && w.cols % 32 == 0 && w.rows as usize == e
}

/// Decode router matvec + selection in one launch (`router_dec`; the caller checks
/// `router_dec_ok`). `ticket`: one i32, zero between launches (each launch leaves it zero).
pub(crate) fn launch_router_dec(gpu: &Gpu, a: RouterDecArgs) -> Result<()> {
    let blocks = (a.e as u32).div_ceil(8) + (a.sk.z != 0) as u32;
    gpu.launch("router_dec", (blocks, 1, 1), 256, a.w.cols as u32 * 4, Args::new().a(a))
}

/// Router for `t` tokens: moe_route_w when `new` and the shape fits (E <= 256, K <= 32), else
/// moe_route. Arguments as moe_route: logits [t][e], bias (0 = none), tid2eid (0 = none), tok,
/// outputs sel / wts [t][k].
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_route(gpu: &Gpu, new: bool, t: usize, logits: u64, bias: u64, tid2eid: u64, tok: u64, e: usize, k: usize, wscale: f32, wnorm: bool, sel: u64, wts: u64) -> Result<()> {
    let args = Args::new().a(logits).a(bias).a(tid2eid).a(tok).a(e as i32).a(k as i32).a(wscale).a(wnorm as i32).a(sel).a(wts);
    // hash-routed layers (tid2eid) have nothing to select: the plain kernel measured faster
    if new && tid2eid == 0 && e <= 256 && k <= 32 {
        gpu.launch("moe_route_w", (t as u32, 1, 1), 32, 0, args)
    } else {
        gpu.launch("moe_route", (t as u32, 1, 1), 256, (2 * e * 4) as u32, args)
    }
}

/// Tensor-core prefill attention (kernels/attn.cuh): f16 copy of the rows, then one CTA per
/// query token. The caller checks `attn_tc_shape_ok` and provides `kv16`.
/// Whether attn_tw can run this launch (sm_90a build, the selection fits its shared memory).
pub(crate) fn attn_tw_ok(gpu: &Gpu, io: &AttnIo) -> bool {
    wgmma_built(gpu.cc) && attn_tw_smem(attn_tc_dhp(io.dh), io.topk) <= ATTN_TW_SMEM_MAX
}

/// launch_attn_tc with the kernel chosen: `wg` takes attn_tw where attn_tw_ok, else attn_tc.
pub(crate) fn launch_attn_tc_as(gpu: &Gpu, io: &AttnIo, wg: bool) -> Result<()> {
    launch_attn_tc_to(gpu, io, wg, 0).map(|_| ())
}

/// launch_attn_tc_as, with the heads written as f16 to `out16` instead (when not 0 and
/// attn_tw runs); returns whether they were.
pub(crate) fn launch_attn_tc_to(gpu: &Gpu, io: &AttnIo, wg: bool, out16: DevPtr) -> Result<bool> {
    launch_attn_tc_traced(gpu, io, wg, out16, 0)
}

/// launch_attn_tc_to with attn_tw's phase trace written to `trace` (kernel bench only; 0: off;
/// `ATTN_TW_TRACE` u64 words per query token, see attn.cuh ATW_TR).
pub(crate) fn launch_attn_tc_traced(gpu: &Gpu, io: &AttnIo, wg: bool, out16: DevPtr, trace: DevPtr) -> Result<bool> {
    if io.kv16 == 0 || !attn_tc_shape_ok(io.h, io.dh, io.rd) {
        return Err(CudaError::Other("tensor-core attention: unsupported shape or no f16 buffer".into()));
    }
    let comp_rows = if io.ratio > 0 { io.comp_rows } else { 0 };
    let n4 = (io.cap + comp_rows) * io.dh / 4;
    let grid = n4.div_ceil(256).clamp(1, 8 * gpu.sm_count.max(1) as usize);
    let comp = if comp_rows > 0 { io.comp } else { io.raw };
    let args = Args::new().a(io.raw).a(comp).a(io.kv16).a(io.cap as i32).a(comp_rows as i32).a(io.dh as i32);
    gpu.launch("attn_kv_f16", (grid as u32, 1, 1), 256, 0, args)?;
    let ta = AttnTcArgs {
        q: io.q,
        kv: io.kv16,
        sel: io.sel,
        pos: io.pos,
        omega: io.omega,
        sinks: io.sinks,
        out: io.out,
        cap: io.cap as i32,
        topk: io.topk as i32,
        h: io.h as i32,
        dh: io.dh as i32,
        rd: io.rd as i32,
        w: io.w as i32,
        ratio: io.ratio as i32,
        eps: io.eps,
        q16: io.q16,
    };
    let dhp = attn_tc_dhp(io.dh);
    if wg && attn_tw_ok(gpu, io) {
        // V is read MN-major: LBO = the next 64-dim slab, SBO = the next 8 rows (the other
        // way round gave rel err 1.2 in the kernel bench: session 16, call 2)
        let (lbo, sbo) = (8192u32, 1024u32);
        let tx = attn_tx_enabled() && attn_tx_smem(dhp, io.topk) <= ATTN_TW_SMEM_MAX;
        let (name, smem) = match (tx, dhp == 512) {
            (true, true) => ("attn_tx_512", attn_tx_smem(dhp, io.topk)),
            (true, false) => ("attn_tx_128", attn_tx_smem(dhp, io.topk)),
            (false, true) => ("attn_tw_512", attn_tw_smem(dhp, io.topk)),
            (false, false) => ("attn_tw_128", attn_tw_smem(dhp, io.topk)),
        };
        // the L2 prefetch of a later CTA's q (DS4_ATW_PF=1, attn_tw only): one wave ahead
        let pf = if env_is!("DS4_ATW_PF", "1") { gpu.sm_count } else { 0 };
        gpu.launch(name, (io.t as u32, 1, 1), 256, smem as u32, Args::new().a(ta).a(lbo).a(sbo).a(out16).a(pf).a(trace))?;
        return Ok(out16 != 0);
    }
    let name = if dhp == 512 { "attn_tc_512" } else { "attn_tc_128" };
    gpu.launch(name, (io.t as u32, 1, 1), 256, attn_tc_smem(dhp) as u32, Args::new().a(ta))?;
    Ok(false)
}

const MV_ROWS_PER_BLOCK: usize = 16;
/// hc_post_mix: columns per block (a lane each) and tokens per block (the block's fn slice is
/// staged once and reused for these tokens; 8 warps, 8 tokens each).
const HC_COLS: usize = 32;
/// hc_post_mix4: columns per block (4 per lane)
const HC_WIDE: usize = 128;
/// hc_post_mma's dynamic shared memory for groups of `tokens` (model.cuh HCM_SMEM /
/// HCM_SMEM8): their new state at row stride 516 floats, the 8 warps' partial mixes (32 per
/// token), fn's f16 fragments
const fn hc_mma_smem(tokens: usize) -> usize {
    (tokens * 516 + 8 * tokens * 32) * 4 + 64 * 32 * 12
}
/// hc_post_mma's (16 tokens, 73 KB) and hc_post_mma8's (8 tokens, 48.5 KB)
pub(crate) const HC_MMA_SMEM: usize = hc_mma_smem(16);
pub(crate) const HC_MMA8_SMEM: usize = hc_mma_smem(8);
/// Tokens per block row of the prefill hc_post kernels for a `t`-token batch in `split` column
/// slices (their grid: split x t / this; each block stages its slice's fn fragments once, then
/// walks its tokens in groups of 8 or 16): `DS4_HC_TOKENS=N` (a multiple of 16, 16..=1024; read
/// once), else the largest of 256 / 128 / 64 that still gives the grid 6 blocks per SM (~1.5
/// waves at hc_post_mma8's 4 per SM). Why: each block's fn staging is paid per block; more
/// tokens per block amortize it. Kernel bench at T 8192 (H100, session 59), 64 / 128 / 256
/// tokens: hc_post_mma8_hp 0.457 / 0.417 / 0.396 ms, _hyp 0.594 / 0.554 / 0.536; the q2 model's
/// 8K prompt (28 layers) 20,209 / 20,187 t/s at 64, 20,258 / 20,323 at 128, 20,406 / 20,325 at
/// 256, and in a second call 19,935 / 20,171 under this default against 19,814 at 64; the same
/// greedy tokens throughout. The floor of 64 keeps small batches' grids as they were.
fn hc_tokens(t: usize, split: usize, sms: usize) -> usize {
    static V: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let forced = *V.get_or_init(|| std::env::var("DS4_HC_TOKENS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&n| n % 16 == 0 && (16..=1024).contains(&n)));
    forced.unwrap_or_else(|| [256, 128].into_iter().find(|&n| split * t.div_ceil(n) >= 6 * sms).unwrap_or(64))
}
/// Largest batch that takes the fused hc_step (its ticket buffer's length).
const HC_STEP_MAX_T: usize = 1;

/// Work split of the split-K decode matvecs (mv2, mvq) for rows of `cols` values in column
/// groups of `group`, `total_rows` rows over all slots: (warps sharing a row group `wk`, rows
/// per warp). Many rows: whole rows per warp (wk 1, or 2 for 8192-column rows), 4 rows per
/// warp; few rows: the columns split over up to 8 warps, 2 rows per warp.
fn split_plan(group: usize, cols: usize, total_rows: usize) -> (i32, i32) {
    let ng = (cols / group).max(1);
    let (wk, rpw) = if total_rows >= 4096 { ((ng / 256).clamp(1, 8), 4) } else { ((ng / 32).clamp(1, 8), 2) };
    ([8, 4, 2, 1].into_iter().find(|&w| w <= wk).unwrap_or(1) as i32, rpw)
}

/// Mirror of `struct MvJob2` in matvec.cuh (the `mv2` decode matvec).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct MvJob2 {
    pub w: WMat,
    pub w2: WMat,
    pub x: u64,
    pub y: u64,
    pub sel: u64,
    pub wts: u64,
    pub x_slot: i64,
    pub nslots: i32,
    pub x_grp_rows: i32,
    pub rpw: i32,
    pub wk: i32,
    pub clamp: f32,
    pub pad: i32,
}

impl MvJob2 {
    pub(crate) fn plain(w: WMat, x: u64, y: u64) -> MvJob2 {
        MvJob2 { w, x, y, x_grp_rows: w.rows, nslots: 1, rpw: 1, wk: 1, ..Default::default() }
    }
    pub(crate) fn rows_per_block(&self) -> usize {
        self.rpw as usize * (8 / self.wk as usize)
    }
    fn blocks(&self) -> usize {
        self.nslots as usize * (self.w.rows as usize).div_ceil(self.rows_per_block())
    }
    /// Work split, from a sweep of every (wk, R, register cap) at the real shapes on the H200
    /// (bench/h200_kernels_r3.txt): matrices with many rows stream best with whole rows per
    /// warp (wk 1, or 2 for 8192-column rows) and 4 rows per warp; small ones (q_a, kv, the
    /// compressors) need the columns split over 8 warps to fill the GPU, 2 rows per warp.
    /// Rows per block must divide `x_grp_rows` (block-diagonal inputs).
    fn plan(&mut self, _sm_count: usize) {
        let g = match self.w.ty {
            0 | 1 => 8,
            8 => 16,
            _ => 32,
        };
        (self.wk, self.rpw) = split_plan(g, self.w.cols as usize, self.w.rows as usize * self.nslots.max(1) as usize);
        while self.rpw > 1 && self.x_grp_rows as usize % self.rows_per_block() != 0 {
            self.rpw /= 2;
        }
    }
}

/// mv2 entry points by register cap (minimum resident blocks per SM): 1, 2, 3, 4.
pub(crate) const MV2_KERNELS: [&str; 4] = ["mv2", "mv2_b2", "mv2_b3", "mv2_b4"];

impl GridJob for MvJob2 {
    fn blocks(&self) -> usize {
        MvJob2::blocks(self)
    }
    fn check(&self, _kern: &str) -> Result<()> {
        // mv_place computes with log2 of both
        if ![1, 2, 4].contains(&self.rpw) || ![1, 2, 4, 8].contains(&self.wk) {
            return Err(CudaError::Other(format!("mv2: unsupported split (rpw {}, wk {})", self.rpw, self.wk)));
        }
        if self.x_grp_rows as usize % self.rows_per_block() != 0 {
            return Err(CudaError::Other("mv2: rows per block must divide the input group rows".into()));
        }
        Ok(())
    }
}

/// `mv2` jobs.
pub(crate) type JobTable2 = Jobs<MvJob2>;

impl JobTable2 {
    pub(crate) fn new(gpu: &Gpu, jobs: &mut [MvJob2]) -> Result<JobTable2> {
        for j in jobs.iter_mut() {
            j.plan(gpu.sm_count.max(1) as usize);
        }
        // the 3-blocks-per-SM register cap was best or within 5% of best at every shape
        Jobs::with_kernel(jobs, MV2_KERNELS[2])
    }
}

/// Mirror of `struct MvJobQ` in q8.cuh (the int8-activation decode matvec `mvq`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct MvJobQ {
    pub w: WMat,
    pub w2: WMat,
    /// quantized input values (int8) and per-32-value {scale, scale * sum} (float2)
    pub xq: u64,
    pub xd: u64,
    pub y: u64,
    pub sel: u64,
    pub wts: u64,
    /// values between slot inputs (multiple of 32)
    pub x_slot: i64,
    pub nslots: i32,
    pub rpw: i32,
    pub wk: i32,
    pub clamp: f32,
    /// y also written quantized (int8 values, per-32 {scale, scale * sum}) when nonzero: the
    /// next int8 matvec's input without a quant_q8 launch (32 rows per block, see `plan`)
    pub yq: u64,
    pub yd: u64,
    /// > 1: slot s reads input s / x_div (a small prefill batch's routed experts: slot
    /// t * K + j reads token t's activations); else input s
    pub x_div: i32,
    /// > 0 (MVQM_NT): a `mvqm` / `mvqs` job over chunks of pairs (see MvJobQ::chunked_mma)
    pub nt: i32,
    /// nonzero: slot s reads input xmap[s] (i32; the routed experts' pairs grouped by expert:
    /// each pair's token), before x_div
    pub xmap: u64,
    /// chunked jobs (mvqm / mvqs): values between the y rows of consecutive pairs (0: rows;
    /// dense_small's outputs into wider rows)
    pub ldy: i64,
}

/// Weight types `mvq` handles: Q8_0, Q2_K, Q4_K, IQ2_XXS.
pub(crate) fn mvq_type_ok(ty: i32) -> bool {
    matches!(ty, 8 | 10 | 12 | 16)
}

impl MvJobQ {
    pub(crate) fn plain(w: WMat, q: (u64, u64), y: u64) -> MvJobQ {
        MvJobQ { w, xq: q.0, xd: q.1, y, nslots: 1, rpw: 1, wk: 1, ..Default::default() }
    }
    /// A block-diagonal matrix of `groups` row groups, group i reading input values
    /// [i * cols, (i + 1) * cols) (out_a): one group's rows as a matrix and the groups as its
    /// "experts", slot i selecting expert `ids[i]` = i (a device array 0..groups).
    pub(crate) fn row_groups(m: &super::weights::GMat, groups: usize, q: (u64, u64), y: u64, ids: u64) -> MvJobQ {
        let n = m.rows / groups;
        let (w0, w1) = (m.wmat_rows(0, n), m.wmat_rows(n, n));
        let w = WMat { e_pay: (w1.pay - w0.pay) as i64, e_hdr: (w1.hdr - w0.hdr) as i64, ..w0 };
        MvJobQ { nslots: groups as i32, sel: ids, x_slot: m.cols as i64, ..MvJobQ::plain(w, q, y) }
    }
    /// Gate and up of a SwiGLU FFN: y = silu(min(g, c)) * clamp(u, -c, c) (* wts[slot]).
    pub(crate) fn paired(gate: WMat, up: WMat, q: (u64, u64), y: u64, clamp: f32) -> MvJobQ {
        MvJobQ { w2: up, clamp, ..MvJobQ::plain(gate, q, y) }
    }
    /// `mvqm`'s job over moe_group's pairs in chunks of up to MVQM_NT of one expert (q8.cuh):
    /// `chunks` (pair_chunks' table of `bound` entries), per-pair routing weights `wts`
    /// (paired jobs), each pair's input row `xmap` (0: the pair's own row), y rows by pair; one
    /// 16-row tile per warp, all of K.
    pub(crate) fn chunked_mma(self, chunks: u64, bound: usize, wts: u64, xmap: u64, x_slot: usize) -> MvJobQ {
        MvJobQ { sel: chunks, nslots: bound as i32, wts, xmap, x_slot: x_slot as i64, x_div: 0, nt: MVQM_NT as i32, wk: 1, rpw: MVQM_RPW, ..self }
    }
    /// A chunked_mma job with each 16-row tile's K split over the fewest warps (1, 2, 4 or 8)
    /// that give `min_blocks` blocks (mvqm_k: unpaired jobs only).
    pub(crate) fn split_k(self, min_blocks: usize) -> MvJobQ {
        let mut j = self;
        while j.w2.pay == 0 && j.wk < 8 && j.blocks() < min_blocks {
            j.wk *= 2;
        }
        j
    }
    /// `mvqs`'s job (q8.cuh): chunked_mma's, paired jobs with two warps per 16 rows (gate and
    /// up: 64 rows per block).
    pub(crate) fn chunked_staged(self, chunks: u64, bound: usize, wts: u64, xmap: u64, x_slot: usize) -> MvJobQ {
        let wk = if self.w2.pay != 0 { 2 } else { 1 };
        MvJobQ { wk, ..self.chunked_mma(chunks, bound, wts, xmap, x_slot) }
    }
    pub(crate) fn rows_per_block(&self) -> usize {
        self.rpw as usize * (8 / self.wk as usize)
    }
    fn blocks(&self) -> usize {
        self.nslots as usize * (self.w.rows as usize).div_ceil(self.rows_per_block())
    }
    /// Same rule as `MvJob2::plan` with 32-value column groups (the kbench q8 sweep reports
    /// whether another split is faster), except: rows of 8192 or more columns split in two
    /// (out_b, 8192 -> 4096: 11.9 us against 12.5 for whole rows, kbench q8 sweep, session 11;
    /// DS4_MVQ_WIDE2=0 off), and few rows split their columns over half as many warps (the
    /// shared expert's gate/up, 2048 x 4096, wk 2 instead of 4: 256 blocks instead of 512 in
    /// the layer's gate/up launch, +1.5 % decode at 8K against wk 4 in a sweep of the shared
    /// job's split; session 11, call 6).
    /// A quantized output needs one 32-value block per block: whole rows per warp, 4 rows per
    /// warp (the best split of the big shapes anyway).
    fn plan(&mut self) {
        let total_rows = self.w.rows as usize * self.nslots.max(1) as usize;
        (self.wk, self.rpw) = split_plan(32, self.w.cols as usize, total_rows);
        if total_rows < 4096 {
            self.wk = (self.wk / 2).max(1);
        }
        if mvq_wide2() && self.rpw == 4 && self.wk == 1 && self.w.cols >= 8192 {
            self.wk = 2;
        }
        if self.yq != 0 {
            (self.wk, self.rpw) = (1, 4);
        }
    }
    /// 8 rows per warp (64 rows per block) for an unpaired plain Q8_0 job of short rows whose
    /// plan gave whole rows to 4-row warps: q_b and the indexer's q_b (1024 columns) then
    /// stream 70 KB per block instead of 35 (q_b took 16-17 us in the decode graph against 11
    /// for out_a / out_b of the same 35.6 MB, session 12 trace; 15.0-15.9 with this, decode
    /// t/s the same within noise, session 13). Only mvq_b2 (all-Q8_0 tables) has the
    /// instantiation.
    fn plan_r8(&mut self) {
        if self.w.ty == 8 && self.w2.pay == 0 && self.sel == 0 && self.yq == 0 && self.rpw == 4 && self.wk == 1 && self.w.cols <= 1024 {
            self.rpw = 8;
        }
    }
}

/// `DS4_DOWN_SH_FIRST=0`: the shared expert's down job after the routed ones (see `build_jobsq`).
fn down_sh_first() -> bool {
    env_unless!("DS4_DOWN_SH_FIRST", "0")
}

/// `DS4_HC_PDL=0`: decode's hc_step_gs without programmatic dependent launch (see
/// `launch_hc_step_traced`).
fn hc_pdl_on() -> bool {
    env_unless!("DS4_HC_PDL", "0")
}

/// `DS4_FORK=0`: no parallel branch in a decode step (see `layers`).
fn fork_on() -> bool {
    env_unless!("DS4_FORK", "0")
}

/// `DS4_LOW16=0`: prefill's out_a writes f32 low-rank activations, converted by x_to_f16 for
/// out_b, instead of f16 ones read in place (`CudaSession::out_low16`).
fn low16_on() -> bool {
    env_unless!("DS4_LOW16", "0")
}

/// `DS4_QB_PERSIST=1`: q_b beside an open decode branch on one block per SM, each looping
/// over q_b's blocks, so that the branch's kernels find free SM slots (see `layers`).
fn qb_persist() -> bool {
    env_is!("DS4_QB_PERSIST", "1")
}

/// `DS4_MVQ_R8=0`: no 8-row warps (`MvJobQ::plan_r8`).
fn mvq_r8() -> bool {
    env_unless!("DS4_MVQ_R8", "0")
}

/// `DS4_MVQ_WIDE2=0`: rows of 8192+ columns whole per warp in the int8 matvecs (read once).
fn mvq_wide2() -> bool {
    env_unless!("DS4_MVQ_WIDE2", "0")
}

/// mvq entry points by register cap (minimum resident blocks per SM): 2, 3.
pub(crate) const MVQ_KERNELS: [&str; 2] = ["mvq_b2", "mvq_b3"];
/// The chunked int8 matvec on the tensor cores (q8.cuh `mvqm`), its pairs per chunk (MVQM_NT
/// there) and rows per warp (one m16 tile; 128 rows per block).
pub(crate) const MVQM_KERNEL: &str = "mvqm";
/// mvqm with each 16-row tile's K split over wk warps (2, 4 or 8; unpaired jobs): dense_small's
/// matrices of few rows or long rows, which mvqm's 128-row blocks leave to a few SMs.
pub(crate) const MVQM_K_KERNEL: &str = "mvqm_k";
pub(crate) const MVQM_NT: usize = 16;
const MVQM_RPW: i32 = 16;
/// mvqm with its operands staged in shared memory by cp.async (q8.cuh `mvqs`): stages in its
/// ring, and the bytes of one stage (128 weight rows of 256 values with their headers, the
/// chunk's MVQM_NT pairs' int8 inputs and factors; q8.cuh mvqs_stage_bytes, asserted equal).
pub(crate) const MVQS_KERNEL: &str = "mvqs";
pub(crate) const MVQS_ST: usize = 3;
pub(crate) const fn mvqs_stage_bytes(ty: i32) -> usize {
    let (stride, hdr) = match ty {
        16 => (80, 4),  // IQ2_XXS: 64 payload bytes, the header's 4-byte word
        10 => (80, 4),  // Q2_K
        _ => (144, 16), // Q4_K: 128 payload bytes
    };
    128 * (stride + hdr) + MVQM_NT * 288 + MVQM_NT * 64
}
/// Whether mvqs handles routed experts of this weight type (IQ2_XXS, Q2_K, Q4_K).
pub(crate) fn mvqs_type_ok(ty: i32) -> bool {
    matches!(ty, 10 | 12 | 16)
}
pub(crate) fn mvqs_smem_max() -> usize {
    [10, 12, 16].iter().map(|&t| MVQS_ST * mvqs_stage_bytes(t)).max().unwrap_or(0)
}

impl GridJob for MvJobQ {
    fn blocks(&self) -> usize {
        MvJobQ::blocks(self)
    }
    fn check(&self, kern: &str) -> Result<()> {
        if kern == MVQM_KERNEL || kern == MVQM_K_KERNEL || kern == MVQS_KERNEL || self.nt == MVQM_NT as i32 {
            // mvqm / mvqs: one 16-row tile per warp over all of K, x offsets in 32 bits (q8.cuh
            // mvqm_body); mvqs: paired jobs two warps per tile, the routed experts' types
            let x_span = self.nslots as i64 * MVQM_NT as i64 * self.x_slot;
            let staged = kern == MVQS_KERNEL;
            let split = kern == MVQM_K_KERNEL;
            let wk_ok = if split { [2, 4, 8].contains(&self.wk) && self.w2.pay == 0 } else { self.wk == if staged && self.w2.pay != 0 { 2 } else { 1 } };
            if !(kern == MVQM_KERNEL || split || staged)
                || (staged && !mvqs_type_ok(self.w.ty))
                || self.nt != MVQM_NT as i32
                || self.rpw != MVQM_RPW
                || !wk_ok
                || !mvq_type_ok(self.w.ty)
                || self.w.cols % 256 != 0
                || self.x_slot % 32 != 0
                || self.yq != 0
                || self.sel == 0
                || (self.ldy != 0 && self.ldy < self.w.rows as i64)
                || x_span >= 1 << 31
                || self.blocks() >= 1 << 21
            {
                return Err(CudaError::Other(format!("mvqm: unsupported job (type {}, cols {}, {kern})", self.w.ty, self.w.cols)));
            }
            return Ok(());
        }
        if !mvq_type_ok(self.w.ty) || self.w.cols % 256 != 0 || self.x_slot % 32 != 0 || ![1, 2, 4, 8].contains(&self.rpw) || ![1, 2, 4, 8].contains(&self.wk) || self.ldy != 0 {
            return Err(CudaError::Other(format!("mvq: unsupported job (type {}, cols {})", self.w.ty, self.w.cols)));
        }
        // 8 rows per warp: instantiated for unpaired Q8_0 jobs in mvq_b2 only (q8.cuh mvq_main)
        if self.rpw == 8 && (kern != MVQ_KERNELS[0] || self.w.ty != 8 || self.w2.pay != 0) {
            return Err(CudaError::Other(format!("mvq: 8 rows per warp needs an unpaired Q8_0 job in {} (type {}, {kern})", MVQ_KERNELS[0], self.w.ty)));
        }
        if self.yq != 0 && (self.rows_per_block() != 32 || self.w.rows % 32 != 0) {
            return Err(CudaError::Other(format!("mvq: a quantized output needs 32 rows per block ({} rows)", self.w.rows)));
        }
        Ok(())
    }
}

/// `mvq` jobs.
pub(crate) type JobTableQ = Jobs<MvJobQ>;

impl JobTableQ {
    pub(crate) fn new(jobs: &mut [MvJobQ]) -> Result<JobTableQ> {
        for j in jobs.iter_mut() {
            j.plan();
        }
        // kbench q8 sweep (H200, session 9): Q8_0 matrices run best under the 2-blocks-per-SM
        // register cap (q_b 14.6 vs 15.6 us, out_a 12.6 vs 13.4), the 2-bit expert formats
        // under 3 (IQ2_XXS gate 13.0 vs 14.5, Q2_K down 12.2 vs 13.8)
        let q8_only = jobs.iter().all(|j| j.w.ty == 8);
        if q8_only && mvq_r8() {
            for j in jobs.iter_mut() {
                j.plan_r8();
            }
        }
        Jobs::with_kernel(jobs, MVQ_KERNELS[if q8_only { 0 } else { 1 }])
    }
    /// mvqm jobs (MvJobQ::chunked_mma; mvqm_k where their K is split, MvJobQ::split_k).
    pub(crate) fn chunked_mma(jobs: &mut [MvJobQ]) -> Result<JobTableQ> {
        Jobs::with_kernel(jobs, if jobs.iter().any(|j| j.wk > 1) { MVQM_K_KERNEL } else { MVQM_KERNEL })
    }
    /// mvqs jobs (MvJobQ::chunked_staged), with their stages' shared memory.
    pub(crate) fn chunked_staged(jobs: &mut [MvJobQ]) -> Result<JobTableQ> {
        let mut t = Jobs::with_kernel(jobs, MVQS_KERNEL)?;
        let mut s = 0;
        for (k, j) in jobs.iter().enumerate() {
            s = s.max((MVQS_ST * mvqs_stage_bytes(j.w.ty)) as u32);
            t.smem[k] = s;
        }
        Ok(t)
    }
}

/// Quantize `n0` values at `x0` then `n1` at `x1` (multiples of 32) to int8 blocks of 32:
/// values at `qs`, {scale, scale * sum} per block at `xd` (q8.cuh `quant_q8`).
pub(crate) fn launch_quant_q8(gpu: &Gpu, x0: u64, n0: usize, x1: u64, n1: usize, qs: u64, xd: u64) -> Result<()> {
    let nblk = (n0 + n1) / 32;
    let grid = nblk.div_ceil(8).max(1) as u32;
    gpu.launch("quant_q8", (grid, 1, 1), 256, 0, Args::new().a(x0).a(n0 as i32).a(x1).a(n1 as i32).a(qs).a(xd))
}

/// pair_chunks (q8.cuh): the chunk table of moe_group's pairs (per-expert offsets `off` over
/// `e` experts) in chunks of up to `nt` pairs, `bound` entries (chunk_bound) at `out`.
pub(crate) fn launch_pair_chunks(gpu: &Gpu, off: u64, e: usize, nt: usize, bound: usize, out: u64) -> Result<()> {
    gpu.launch("pair_chunks", (1, 1, 1), 256, 0, Args::new().a(off).a(e as i32).a(nt as i32).a(bound as i32).a(out))
}

/// Quantize `n` values at `x` as the input of mvqm / mvqs jobs of weight type `ty`: IQ2_XXS
/// jobs take each 8-value chunk's bytes in iq2_xperm's order (q8.cuh `quant_q8p`), the others
/// quant_q8's.
pub(crate) fn launch_quant_chunked(gpu: &Gpu, ty: i32, x: u64, n: usize, q: (u64, u64)) -> Result<()> {
    if ty != 16 {
        return launch_quant_q8(gpu, x, n, 0, 0, q.0, q.1);
    }
    let grid = (n / 32).div_ceil(8).max(1) as u32;
    gpu.launch("quant_q8p", (grid, 1, 1), 256, 0, Args::new().a(x).a(n as i32).a(q.0).a(q.1))
}

/// Decode FFN launches of one layer with int8 activations (see `build_jobsq`).
struct LayerJobsQ {
    /// routed experts gate/up (paired, per-slot routing weight -> mid) + shared gate/up (-> mids)
    f: JobTableQ,
    /// routed experts down (slot i reads quantized mid i) + shared down (slot K)
    g: JobTableQ,
    /// the attention side on int8 activations too (`DS4_DECODE_Q8_ATTN`, on by default)
    att: Option<AttnJobsQ>,
    /// the attention side's first launch on xn's int8 copy: q_a, kv and the compressors' /
    /// indexer's projections (every matrix with a Q8_0 form, `attn_a_list`, and
    /// `DS4_ATTN_A_Q8` not 0; else None and the f32 launch runs). Independent of `att`: it
    /// needs only xn's width to be a multiple of 256 (which the int8 FFN needs too).
    a: Option<JobTableQ>,
}

/// Whether a layer's attention side can run on int8 activations (`AttnJobsQ`): q_b, out_a and
/// out_b (types `tys`) Q8_0, out_a `out_a_rows` = its g groups of ro rows, and the widths the
/// quantized inputs and outputs need (multiples of 256 columns, 32-row output blocks). The
/// indexer's q_b may be of any type (an F16 one stays an f32 launch).
pub(crate) fn attn_q8_fits(d: &super::dims::Dims, out_a_rows: usize, tys: [i32; 3]) -> bool {
    d.rq % 256 == 0 && d.ro % 32 == 0 && (d.h * d.dh) % (d.g * 256) == 0 && (d.g * d.ro) % 256 == 0 && out_a_rows == d.g * d.ro && tys.iter().all(|&t| t == 8)
}

/// int8 attention-side decode matvecs of one layer: `b` q_b (+ the indexer's q_b) on attn_prep's
/// quantized qr, `c` out_a (its g block-diagonal groups as g slots of one ro-row matrix) on the
/// quantized heads, writing the output LoRA also quantized, `d` out_b on that.
struct AttnJobsQ {
    b: JobTableQ,
    /// the indexer's q_b alone when it is Q8_0 (b's second job; run by itself in a branch)
    ib: Option<JobTableQ>,
    /// the indexer's q_b when it is not Q8_0 (F16 in the published files): f32 on qr
    bi: Option<JobTable>,
    c: JobTableQ,
    d: JobTableQ,
}


/// A decode matvec job that one launch runs together with others: each job owns a run of
/// blocks and the kernel finds its job from the block index (MvJob / MvJob2 / MvJobQ, each
/// mirroring its kernel's struct).
pub(crate) trait GridJob: Copy + Default + 'static {
    /// Blocks the job needs.
    fn blocks(&self) -> usize;
    /// Dynamic shared memory its blocks need.
    fn smem(&self) -> u32 {
        0
    }
    /// Reject a job that entry point `kern` cannot run.
    fn check(&self, _kern: &str) -> Result<()> {
        Ok(())
    }
}

/// Most jobs one grouped decode launch takes (`MAX_JOBS` in common.cuh: the kernel finds its
/// job among that many block0 values; asserted equal by the kernel source).
pub(crate) const MAX_JOBS: usize = 8;

/// Mirror of `JobSet<J>` in common.cuh: a launch's job table, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct JobSet<J> {
    j: [J; MAX_JOBS],
    b0: [i32; MAX_JOBS],
    nlog: i32,
}

/// Jobs for launches of kernel `kern` (passed by value as the kernel's `JobSet`); `run(n)` runs
/// the first `n`.
pub(crate) struct Jobs<J> {
    set: JobSet<J>,
    blocks: Vec<u32>, // cumulative block count after each job
    smem: Vec<u32>,   // max smem up to each job
    kern: &'static str,
    _job: std::marker::PhantomData<J>,
}

impl<J: GridJob> Jobs<J> {
    /// `jobs` (their `wk`/`rpw` already planned, e.g. by a benchmark sweep) as the table of
    /// entry point `kern`.
    pub(crate) fn with_kernel(jobs: &mut [J], kern: &'static str) -> Result<Jobs<J>> {
        if jobs.len() > MAX_JOBS {
            return Err(CudaError::Other(format!("{kern}: {} jobs in one launch, at most {MAX_JOBS}", jobs.len())));
        }
        let (mut blocks, mut smem) = (Vec::new(), Vec::new());
        let (mut b, mut s) = (0usize, 0u32);
        let mut b0 = [0i32; MAX_JOBS];
        for (k, j) in jobs.iter_mut().enumerate() {
            j.check(kern)?;
            b0[k] = b as i32;
            b += j.blocks();
            s = s.max(j.smem());
            blocks.push(b as u32);
            smem.push(s);
        }
        let mut set = JobSet { j: [J::default(); MAX_JOBS], b0, nlog: 0 };
        set.j[..jobs.len()].copy_from_slice(jobs);
        Ok(Jobs { set, blocks, smem, kern, _job: std::marker::PhantomData })
    }
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
    pub(crate) fn run(&self, gpu: &Gpu, njobs: usize) -> Result<()> {
        self.run_grid(gpu, njobs, u32::MAX)
    }
    /// `run` on at most `grid` blocks: mvq entry points only, whose blocks loop over the jobs'
    /// blocks (the other kernels need one block per job block).
    pub(crate) fn run_grid(&self, gpu: &Gpu, njobs: usize, grid: u32) -> Result<()> {
        let nlog = self.blocks[njobs - 1];
        let grid = grid.clamp(1, nlog);
        if grid < nlog && !MVQ_KERNELS.contains(&self.kern) {
            return Err(CudaError::Other(format!("{}: a grid of {grid} for {nlog} blocks (only mvq loops)", self.kern)));
        }
        let set = JobSet { nlog: nlog as i32, ..self.set };
        gpu.launch(self.kern, (grid, 1, 1), 256, self.smem[njobs - 1], Args::new().a(set).a(njobs as i32))
    }
}

impl GridJob for MvJob {
    fn blocks(&self) -> usize {
        self.nslots as usize * (self.w.rows as usize).div_ceil(MV_ROWS_PER_BLOCK)
    }
    fn smem(&self) -> u32 {
        self.w.cols as u32 * 4
    }
}

/// `matvec_grouped` jobs.
pub(crate) type JobTable = Jobs<MvJob>;

impl JobTable {
    pub(crate) fn new(jobs: &mut [MvJob]) -> Result<JobTable> {
        Jobs::with_kernel(jobs, "matvec_grouped")
    }
}

struct LayerJobs {
    a: JobTable,
    /// q_b, then the indexer's q_b where the layer has one
    b: JobTable,
    /// the indexer's q_b alone (run by itself in a branch)
    bi: Option<JobTable>,
    c: JobTable,
    d: JobTable,
    e: JobTable,
    f: JobTable,
}

struct LayerState {
    raw: DevBuf,
    comp: Option<DevBuf>,
    skv: Option<Span>,
    ssc: Option<Span>,
    icomp: Option<DevBuf>,
    iskv: Option<Span>,
    issc: Option<Span>,
}

/// A part of a larger allocation (the session's `fronts`).
#[derive(Clone, Copy)]
struct Span {
    ptr: DevPtr,
    bytes: usize,
}
impl Span {
    /// f32 values it holds
    fn len(self) -> usize {
        self.bytes / 4
    }
}

/// Per-chunk scratch buffers, sized for `max_chunk` tokens.
struct Scratch {
    pos: DevBuf,
    tok: DevBuf,
    s: DevBuf,
    xn: DevBuf,
    post: DevBuf,
    comb: DevBuf,
    pdot: DevBuf,
    pss: DevBuf,
    /// hc_step's per-token "last block" tickets (zero between launches)
    ticket: DevBuf,
    /// hc_step_gs's barrier counters [HC_STEP_MAX_T] (u64, zeroed once); None: hc_step
    hc_gs: Option<DevBuf>,
    /// hc_step's comb logits [HC_STEP_MAX_T][N][N] (HcBufs::z)
    hcz: DevBuf,
    /// router_dec's ticket
    rticket: DevBuf,
    qa: DevBuf,
    qr: DevBuf,
    kvp: DevBuf,
    q: DevBuf,
    ckv: DevBuf,
    csc: DevBuf,
    ikv: DevBuf,
    isc: DevBuf,
    iq: DevBuf,
    iw: DevBuf,
    scores: DevBuf,
    isel: DevBuf,
    po: DevBuf,
    pml: DevBuf,
    heads: DevBuf,
    low: DevBuf,
    attn_out: DevBuf,
    rlog: DevBuf,
    esel: DevBuf,
    ewts: DevBuf,
    g: DevBuf,
    u: DevBuf,
    gs: DevBuf,
    us: DevBuf,
    mid: DevBuf,
    mids: DevBuf,
    ypair: DevBuf,
    shared: DevBuf,
    ffn_out: DevBuf,
    /// int8 decode activations (DS4_DECODE_Q8): quantized xn, and the quantized mids of the K
    /// routed experts + the shared expert (slot K)
    qx: Q8Buf,
    qmid: Q8Buf,
    /// int8 attention-side decode activations (`DS4_DECODE_Q8_ATTN`): qr (written by
    /// attn_prep), the heads (quant_q8) and the output LoRA (written by out_a's matvec);
    /// out_a's group ids 0..g (its 8 block-diagonal groups run as 8 slots of one matrix)
    qqr: Q8Buf,
    qheads: Q8Buf,
    qlow: Q8Buf,
    grp_ids: DevBuf,
    /// f16 copy of a layer's KV rows for the tensor-core prefill attention (Fast precision).
    kv16: Option<DevBuf>,
    /// tensor-core indexer: f16 copies of q and the rows, and their scales (see launch_idx_tc)
    idx16: Option<(DevBuf, DevBuf)>,
    /// f16 scratch of the cuBLAS dense path (Fast precision; see cuda/blas.rs): the weight
    /// and activation buffers, and their descriptor.
    dense16: Option<(DevBuf, DevBuf, Dense16)>,
    /// f16 scratch of the cuBLAS routed-expert path (same form; see `exp16`): allocated on the
    /// first batch that takes the path (it is 4.3 GB at the real shapes), None inside when it
    /// did not fit.
    exp16: std::cell::OnceCell<Option<(DevBuf, DevBuf, Dense16)>>,
    off: DevBuf,
    /// moe_grp_count / moe_grp_place: the ticket (zero between launches), then per chunk of
    /// 1024 pairs its per-expert counts / first slots
    grp_cb: DevBuf,
    pair_tok: DevBuf,
    pair_of: DevBuf,
    pair_w: DevBuf,
    yhead: DevBuf,
    logits: DevBuf,
    amax: DevBuf,
    /// near_max's header and pairs (`near_max_bytes`)
    near: DevBuf,
    /// hc_post_mma8_h's saturation flag (one i32, zero until an f16 state saturates; HcBufs::sat)
    hc_sat: DevBuf,
    /// attn_dec (decode attention) cross-cluster partials and its counters (zeroed here; every
    /// launch leaves them zero, so graph replays need no reset).
    dec_part: DevBuf,
    dec_cnt: DevBuf,
    /// gemm_q's split-K partial sums (gemm_ks; KS_PART_BYTES)
    ks_part: DevBuf,
    /// small prefill batches' routed experts on the int8 matvec (moe_small): xn and the mids
    /// quantized, and pair_of as the identity (their rows in token-major slot order)
    qx_small: Q8Buf,
    qmid_small: Q8Buf,
    pair_id: DevBuf,
    /// mvqm / mvqs's chunk table (pair_chunks: int4 {expert, first pair, pairs, 0})
    chunks: DevBuf,
    /// dense_small's quantized activations (DENSE_SMALL_MAX rows of the widest input, Fast
    /// precision only) and its chunk table (dense_chunk_table)
    qx_dense: Option<(Q8Buf, usize)>,
    dense_chunks: DevBuf,
}

/// A vector of n values quantized as quant_q8 writes it: int8 values and per 32 values
/// {scale, scale * sum} (q8.cuh).
struct Q8Buf {
    q: DevBuf,
    d: DevBuf,
}

impl Q8Buf {
    fn new(gpu: &Gpu, n: usize) -> Result<Q8Buf> {
        Ok(Q8Buf { q: gpu.alloc(n.max(32))?, d: gpu.alloc((n / 32).max(1) * 8)? })
    }
    /// (values, scales) from value `v` on (a multiple of 32).
    fn at(&self, v: usize) -> (u64, u64) {
        (self.q.ptr + v as u64, self.d.ptr + (v / 32 * 8) as u64)
    }
}

/// The decode matvecs of one layer's attention side, as (matrix, input, output): launch `a`
/// (everything that reads the normalized input xn: q_a, kv, the compressor and indexer
/// projections) and launch `b` (what reads the q LoRA output: q_b, then the indexer's q_b,
/// which decode runs only when the indexer is active). One list for every matvec design.
/// The first attention-side decode launch's matrices (q_a, kv, the compressors' and the
/// indexer's kv / gate / proj, all reading xn), each with its decode Q8_0 form (the matrix
/// itself when Q8_0, else the loader's Q8_0 copy, else None) and its output.
fn attn_a_list<'m>(ly: &'m super::weights::GLayer, sc: &Scratch) -> Vec<(&'m super::weights::GMat, Option<&'m super::weights::GMat>, u64)> {
    let q8 = |m: &'m super::weights::GMat| (m.ty == GgmlType::Q8_0).then_some(m);
    let mut a = vec![(&ly.q_a, q8(&ly.q_a), sc.qa.ptr), (&ly.kv, q8(&ly.kv), sc.kvp.ptr)];
    for (c, kv, gate) in [(&ly.comp, sc.ckv.ptr, sc.csc.ptr), (&ly.icomp, sc.ikv.ptr, sc.isc.ptr)] {
        if let Some(c) = c {
            a.push((&c.kv, c.kv8.as_ref().or(q8(&c.kv)), kv));
            a.push((&c.gate, c.gate8.as_ref().or(q8(&c.gate)), gate));
        }
    }
    if let (Some(_), Some(p)) = (&ly.icomp, &ly.idx_proj) {
        a.push((p, ly.idx_proj8.as_ref().or(q8(p)), sc.iw.ptr));
    }
    a
}

fn attn_side_mats(ly: &super::weights::GLayer, sc: &Scratch) -> (Vec<(WMat, u64, u64)>, Vec<(WMat, u64, u64)>) {
    let xn = sc.xn.ptr;
    let a = attn_a_list(ly, sc).into_iter().map(|(m, _, y)| (m.wmat(), xn, y)).collect();
    let mut b = vec![(ly.q_b.wmat(), sc.qr.ptr, sc.q.ptr)];
    if let Some(m) = &ly.idx_q_b {
        b.push((m.wmat(), sc.qr.ptr, sc.iq.ptr));
    }
    (a, b)
}

pub struct CudaSession {
    m: Arc<CudaModel>,
    pub opts: SessionOptions,
    cap: usize,
    comp_cap: usize,
    idx_ld: usize,
    hc_split: usize,
    tokens: Vec<u32>,
    logits_host: Option<Vec<f32>>,
    /// `logits`' landing place (pinned; allocated on first use)
    logits_pin: Option<Pinned>,
    has_logits: bool,
    st: Vec<LayerState>,
    sc: Scratch,
    jobs: Vec<LayerJobs>,
    head_job: JobTable,
    /// The router matvec of each layer through `mv2` (decode with int8 FFN activations: the
    /// router itself stays f32, it decides the expert choice). The other decode matvecs use
    /// matvec_grouped: mv2 for them measured slower inside the decode graph (66.3 t/s vs
    /// 62.4 with the attention side, 60.7 with everything on mv2; bench/NOTES.md session 2).
    routers: Vec<JobTable2>,
    /// Decode FFN matvecs (shared and routed experts, not the router) with int8 activations
    /// (`mvq`): Precision::Fast only, DS4_DECODE_Q8=0 turns it off.
    q8: bool,
    jobsq: Vec<LayerJobsQ>,
    graphs: HashMap<usize, Graph>,
    pub graph_captures: usize,
    /// eval_greedy: the chosen token's pinned landing place and the event after its copy.
    greedy_tok: Pinned,
    greedy_ev: Event,
    /// eval_near_max's landing place for near_max's output
    near_host: Pinned,
    /// The token and position that sc.tok / sc.pos hold when eval_argmax's argmax wrote them
    /// (None after any other write: upload_batch, launch_argmax with a position).
    next_on_device: std::cell::Cell<Option<(u32, usize)>>,
    /// Near-tie list (model.cuh `note_tie`) when `opts.near_ties`.
    ties: Option<DevBuf>,
    /// The activations held in the cuBLAS path's f16 scratch (x, ldx, columns, t) and the
    /// Gpu work counter right after they were used (see gemm_blas).
    x16_key: std::cell::Cell<Option<((DevPtr, usize, usize, usize), u64)>>,
    /// dense_small's quantized span (x, values, IQ2_XXS order) and the Gpu work counter right
    /// after it was last read (see dense_small_q)
    qx_dense_key: std::cell::Cell<Option<((DevPtr, usize, bool), u64)>>,
    /// Smallest batch for the cuBLAS dense / routed-expert paths: DS4_GEMM_DENSE_MIN_T /
    /// DS4_GEMM_EXP_MIN_T unless set by `set_blas_min_t` (the fixture check covers both
    /// paths on its short sequences that way).
    dense_min_t: usize,
    exp_min_t: usize,
    /// Routed-expert matrices multiplied on cuBLAS so far (for checks that the path ran).
    exp_blas_calls: std::cell::Cell<usize>,
    /// Every layer's compressor frontiers (LayerState's skv / ssc / iskv / issc point into it),
    /// and their copy from before the current prefill batch (allocated on first use).
    fronts: DevBuf,
    fronts_bak: Option<DevBuf>,
    /// This session keeps the hc state in f32 (an f16 state saturated here; `set_hc_f32`).
    hc_f32: bool,
    /// The next prefill batch on the f16 state counts as saturated (`inject_hc_sat`: tests).
    hc_sat_inject: bool,
    /// Prefill batches run again in f32 after their f16 state saturated.
    hc_redos: usize,
    /// The prefill batch sizes this session has run (warm_up_batches skips them: their cuBLAS
    /// kernels are loaded).
    batch_sizes_run: Vec<usize>,
}

/// Entries of the device near-tie list; more are counted as an overflow.
const NEAR_TIE_CAP: usize = 1 << 16;
/// `DS4_PAGEABLE_LOGITS=1`: `logits` copies into pageable memory (before session 46).
fn pageable_logits() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("DS4_PAGEABLE_LOGITS").is_ok_and(|v| v == "1"))
}
/// near_max's header words (model.cuh NEAR_HDR) and most blocks (its sum's partials).
const NEAR_HDR: usize = 8;
const NEAR_BLOCKS: usize = 128;
/// near_max's output as read back: the header, then (id, value) pairs.
fn near_max_read() -> usize {
    4 * NEAR_HDR + 8 * NEAR_MAX_CAP
}
/// near_max's buffer: its output, then the blocks' f64 partials of the sum, then top_k's
/// selected ids.
fn near_max_bytes() -> usize {
    near_max_read() + 8 * NEAR_BLOCKS + 4 * NEAR_MAX_CAP
}
const NEAR_TIE_KINDS: [&str; 5] = ["raw kv fp8", "compressed kv fp8", "indexer row fp4", "indexer query fp4", "indexer top-k cut"];

/// Fast-precision GEMM selection, read once: `DS4_GEMM=old` runs the first tensor-core kernel
/// (`gemm_h`) instead of the pipelined `gemm_q64/128`.
fn gemm_old() -> bool {
    env_is!("DS4_GEMM", "old")
}

/// gemm_q dequantization, read once: f16x2 arithmetic (GQ_FLAG_HDEQ, default) or
/// `DS4_GEMM_DEQ=f32` for the f32 decode (one rounding per weight, more instructions).
pub(crate) fn gemm_q_flags() -> i32 {
    static V: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *V.get_or_init(|| if std::env::var("DS4_GEMM_DEQ").map(|v| v == "f32").unwrap_or(false) { 0 } else { 1 })
}

/// Kernel for the grouped (routed-expert) Fast GEMMs, read once: `DS4_GEMM_EXP=h` runs
/// gemm_h for them (it was faster than the f32-decode gemm_q for IQ2_XXS/Q2_K at ~48 tokens
/// per expert), anything else gemm_q.
fn gemm_exp_h() -> bool {
    env_is!("DS4_GEMM_EXP", "h")
}

/// Dynamic shared memory of moe_group2 for `e` experts.
pub(crate) fn moe_group2_smem(e: usize) -> usize {
    33 * e * 4
}

/// The grouping in two launches of a block per 1024 pairs (model.cuh moe_grp_count /
/// moe_grp_place; moe_group2's shared-memory bound applies); `DS4_MOE_GRP=0`: moe_group2.
/// Kernel bench at 8K tokens (session 34): 0.017 ms against moe_group2's 0.197, the same
/// outputs.
pub(crate) fn moe_grp_split() -> bool {
    env_unless!("DS4_MOE_GRP", "0")
}

/// Bytes of moe_grp's scratch for `pairs` (token, slot) pairs and `e` experts: the ticket, then
/// per chunk of 1024 pairs E counts (zeroed once; the launches leave the ticket zero).
pub(crate) fn moe_grp_scratch_bytes(pairs: usize, e: usize) -> usize {
    4 * (1 + pairs.div_ceil(1024) * e)
}

/// moe_group2's outputs (off, pair_tok, pair_of, pair_w) from the selections `sel` / weights
/// `wts` of `t` tokens by moe_grp_count + moe_grp_place (`cbt`: moe_grp_scratch_bytes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_moe_grp(gpu: &Gpu, sel: DevPtr, wts: DevPtr, t: usize, k: usize, e: usize, off: DevPtr, cbt: DevPtr, pair_tok: DevPtr, pair_of: DevPtr, pair_w: DevPtr) -> Result<()> {
    let nch = (t * k).div_ceil(1024) as u32;
    let a = Args::new().a(sel).a(t as i32).a(k as i32).a(e as i32).a(off).a(cbt);
    gpu.launch("moe_grp_count", (nch, 1, 1), 1024, (e * 4) as u32, a)?;
    let a = Args::new().a(sel).a(wts).a(t as i32).a(k as i32).a(e as i32).a(cbt).a(pair_tok).a(pair_of).a(pair_w);
    gpu.launch("moe_grp_place", (nch, 1, 1), 1024, (32 * e * 4) as u32, a)
}

/// moe_group2 (parallel grouping) unless `DS4_MOE_GROUP=old`, or the expert count needs more
/// than the default 48 KiB of shared memory.
pub(crate) fn moe_group2_ok(e: usize) -> bool {
    let on = env_unless!("DS4_MOE_GROUP", "old");
    on && moe_group2_smem(e) <= 48 * 1024
}

/// `DS4_MOE_STATS`'s tile line for the routed experts' slot counts `n` (one per expert used): in
/// gemm_qs's QS_NX-token tiles, the full tiles, the partial tiles by size (32-token bins: 1-32,
/// 33-64, ...), and the products their padding adds with products rounded to 64 tokens (whole
/// chunks, as now), 32 and 16 (percent of the useful products). Why: ptxas serializes a tile
/// loop holding five product widths with 256 among them (bench/NOTES.md session 37), so which
/// widths a kernel gets is a choice, and it depends on this distribution, which the synthetic
/// model's skewed routing makes far from uniform.
pub(crate) fn moe_tile_stats(n: &[usize]) -> String {
    let full: usize = n.iter().map(|c| c / QS_NX).sum();
    let mut bins = [0usize; QS_NX / 32];
    for &c in n {
        let r = c % QS_NX;
        if r > 0 {
            bins[(r - 1) / 32] += 1;
        }
    }
    let useful: usize = n.iter().sum();
    let pad = |g: usize| -> f64 {
        let done: usize = n.iter().map(|&c| c / QS_NX * QS_NX + (c % QS_NX).div_ceil(g) * g).sum();
        (done - useful) as f64 * 100.0 / useful.max(1) as f64
    };
    format!("full tiles {full}, partial tiles by 32-token bin {bins:?}, padding at product widths 64 / 32 / 16: {:.1} / {:.1} / {:.1} %", pad(64), pad(32), pad(16))
}

/// gemm_q flag (matmul.cuh GQ_FLAG_XH): the activations are f16 rows, ldx in halfs.
pub(crate) const GQ_FLAG_XH: i32 = 2;
/// gemm_qs's split launch (GqKernel::QsSplit, matmul.cuh gq_split_rem): the gemm_qs half (HI)
/// keeps each group's full tiles and a remainder (modulo QS_NX) of more than 128 tokens, a LO
/// launch the remainders of at most 128 (64 with S64) and more than 0 (64 with MIDB).
pub(crate) const GQ_FLAG_HI: i32 = 4;
pub(crate) const GQ_FLAG_LO: i32 = 8;
pub(crate) const GQ_FLAG_S64: i32 = 16;
pub(crate) const GQ_FLAG_MIDB: i32 = 32;
/// gemm_q / gemm_qr / gemm_qs flag (matmul.cuh GQ_FLAG_Y16): y holds f16 rows (ldy in halfs),
/// each output rounded once (saturating) from its f32 sum.
pub(crate) const GQ_FLAG_Y16: i32 = 64;

/// Prefill's routed experts writing f16 outputs (`DS4_EXP_Y16`; 0: f32): 1 gate, up and down,
/// 2 gate and up only, 3 (default) down only. Session 44 (H100, 28 layers, 8K prompt, on the
/// f16 hc state): 3 +0.3 % against 0; 1 and 2 lose to 0 (-0.5 %, -0.2 %): moe_mid's warp form on
/// f16 g / u ran 0.89x in the kernel bench, while hc_post_mma8's MoE sum on f16 slot rows ran
/// 1.11x. Returns (gate/up, down). Why: at 8K tokens each
/// of g, u and the down slot rows is 403-805 MB of f32 per layer, written by the GEMM and read
/// once (moe_mid; hc_post_mma8's MoE sum): f16 halves ~1.6 GB of traffic per layer (~0.4 ms at
/// the copy ceiling). Each value is rounded once more (f16, 11 bits; the fixtures'
/// fast-vs-reference lines measure it). Only where the reader takes f16: moe_mid's warp form
/// (launch_moe_mid_gu16) and hc_post_mma8 (hc_mma8_takes). Read once.
pub(crate) fn exp_y16() -> (bool, bool) {
    static MODE: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("DS4_EXP_Y16").as_deref() {
        Ok("0") => (false, false),
        Ok("1") => (true, true),
        Ok("2") => (true, false),
        _ => (false, true),
    })
}

/// moe_mid's warp form (perm 4's layout and values) on f16 g and u (the expert GEMMs'
/// GQ_FLAG_Y16 outputs; model.cuh moe_mid_h): `n` rows of `f` (f % 32 == 0) into `mid16`
/// in gemm_qr's K order. g and u 8-byte, mid16 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_moe_mid_gu16(gpu: &Gpu, g16: DevPtr, u16: DevPtr, pw: DevPtr, n: usize, f: usize, clamp: f32, mid16: DevPtr) -> Result<()> {
    if f % 32 != 0 || (g16 | u16) % 8 != 0 || mid16 % 16 != 0 || mid16 == 0 {
        return Err(CudaError::Other(format!("moe_mid: f16 g / u need width % 32 == 0 and aligned buffers (width {f})")));
    }
    let args = Args::new().a(g16).a(u16).a(pw).a(n as i32).a(f as i32).a(clamp).a(mid16);
    gpu.launch("moe_mid_h", (((n * f / 32).div_ceil(32) * 32).div_ceil(256) as u32, 1, 1), 256, 0, args)
}
/// gemm_qs's token tile (matmul.cuh: NX of MB 1, GQ_SPLIT_NX), the modulus of the split;
/// gemm_qs2's is half of it.
pub(crate) const QS_NX: usize = 256;

/// Whether the routed experts' grouped GEMMs take f16 activations (GQ_FLAG_XH; `DS4_GEMM_XH=0`
/// keeps the f32 rows): built for the f16x2-dequantized quant types (Q8_0, IQ2_XXS, Q2_K,
/// Q4_K) with that dequantization on, and rows of a multiple of 8 halfs (16-byte copies).
/// Why: the f32 activation tile was the largest shared-memory traffic of gemm_q (Nsight
/// Compute: L1 74% busy at 37% issue use); f16 halves it and ldmatrix builds the fragments.
/// The f16 rows hold the same rounding the f32 path applies inside the kernel: same results.
pub(crate) fn gq_xh_ok(w: &WMat) -> bool {
    let on = env_unless!("DS4_GEMM_XH", "0");
    // the four block-quant types (the same set mvq decodes)
    on && gemm_q_flags() & 1 != 0 && mvq_type_ok(w.ty) && w.cols % 32 == 0
}

/// moe_mid over `n` rows of `f`: mid = silu(min(g, clamp)) * clamp(u) (* pw[row] when pw != 0),
/// into `mid` (f32) or, when `mid16` != 0, into `mid16` as f16 (in gemm_qr's K order when
/// `perm`; f % 32 == 0).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_moe_mid(gpu: &Gpu, g: DevPtr, u: DevPtr, pw: DevPtr, n: usize, f: usize, clamp: f32, mid: DevPtr, mid16: DevPtr, perm: bool) -> Result<()> {
    if perm && (mid16 == 0 || f % 32 != 0) {
        return Err(CudaError::Other(format!("moe_mid: the permuted f16 order needs f16 output and width % 32 == 0 (width {f})")));
    }
    let form = if !env_unless!("DS4_MID_VEC", "0") {
        MidForm::Value
    } else if env_unless!("DS4_MID_WARP", "0") {
        MidForm::Warp
    } else {
        MidForm::Block
    };
    launch_moe_mid_form(gpu, g, u, pw, n, f, clamp, mid, mid16, perm, form)
}

/// The thread layout of moe_mid's permuted f16 mids (model.cuh moe_mid `perm`; the same bits
/// in every form): a thread per value (`DS4_MID_VEC=0`), a thread per 32-value block (perm 3,
/// `DS4_MID_WARP=0`), or a warp per 32 blocks with coalesced loads and stores (perm 4, the
/// default). The vector forms need 16-byte aligned buffers (else a thread per value).
#[derive(Clone, Copy)]
pub(crate) enum MidForm {
    Value,
    Block,
    Warp,
}

/// launch_moe_mid with the form of the permuted f16 mids chosen by the caller (the kernel bench
/// compares them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_moe_mid_form(gpu: &Gpu, g: DevPtr, u: DevPtr, pw: DevPtr, n: usize, f: usize, clamp: f32, mid: DevPtr, mid16: DevPtr, perm: bool, form: MidForm) -> Result<()> {
    let vec = perm && (g | u | mid16) % 16 == 0;
    let kind = match form {
        MidForm::Block if vec => 3i32,
        MidForm::Warp if vec => 4,
        _ => perm as i32,
    };
    let args = Args::new().a(g).a(u).a(pw).a(n as i32).a(f as i32).a(clamp).a(mid).a(mid16).a(kind);
    // perm 3: a thread per 32-value block; perm 4: a lane per block too (a warp per 32)
    let threads = if kind >= 3 { (n * f / 32).div_ceil(32) * 32 } else { n * f };
    gpu.launch("moe_mid", (threads.div_ceil(256) as u32, 1, 1), 256, 0, args)
}

/// moe_mid over `n` rows of `f` (no weights) into `out16` as packed f16 pairs rounded as
/// x_to_f16 rounds (model.cuh moe_mid, perm 2): the values launch_x_to_f16 makes of the f32
/// mids that launch_moe_mid writes (f even).
pub(crate) fn launch_moe_mid_pairs(gpu: &Gpu, g: DevPtr, u: DevPtr, n: usize, f: usize, clamp: f32, out16: DevPtr) -> Result<()> {
    if f % 2 != 0 || out16 == 0 {
        return Err(CudaError::Other(format!("moe_mid: f16 pairs need an even width and an output (width {f})")));
    }
    // perm 5: two pairs per thread from 16-byte loads where the sizes and pointers allow
    let four = (n * f) % 4 == 0 && (g | u) % 16 == 0 && out16 % 8 == 0 && mid_pairs4();
    launch_moe_mid_pairs_as(gpu, g, u, n, f, clamp, out16, four)
}

/// launch_moe_mid_pairs on f16 g and u (model.cuh moe_mid_pairs_h: perm 5's mids of the widened
/// values; the shared expert's gate / up under dense_y16).
pub(crate) fn launch_moe_mid_pairs_h(gpu: &Gpu, g: DevPtr, u: DevPtr, n: usize, f: usize, clamp: f32, out16: DevPtr) -> Result<()> {
    if (n * f) % 4 != 0 || (g | u | out16) % 8 != 0 || out16 == 0 {
        return Err(CudaError::Other(format!("moe_mid_pairs_h: f16 pairs need n * width % 4 == 0 and 8-byte alignment (width {f})")));
    }
    let args = Args::new().a(g).a(u).a(n as i32).a(f as i32).a(clamp).a(out16);
    gpu.launch("moe_mid_pairs_h", ((n * f / 4).div_ceil(256) as u32, 1, 1), 256, 0, args)
}

/// launch_moe_mid_pairs's launch with the form chosen by the caller (the kernel bench compares
/// them): `four` two pairs per thread (perm 5; the caller checks its sizes and alignment), else
/// a thread per pair (perm 2).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_moe_mid_pairs_as(gpu: &Gpu, g: DevPtr, u: DevPtr, n: usize, f: usize, clamp: f32, out16: DevPtr, four: bool) -> Result<()> {
    let (perm, per) = if four { (5i32, 4) } else { (2, 2) };
    let args = Args::new().a(g).a(u).a(0u64).a(n as i32).a(f as i32).a(clamp).a(0u64).a(out16).a(perm);
    gpu.launch("moe_mid", ((n * f / per).div_ceil(256) as u32, 1, 1), 256, 0, args)
}

/// `DS4_MID_PAIRS4=0`: launch_moe_mid_pairs with a thread per pair (moe_mid perm 2) instead of
/// per two pairs (perm 5; the same values).
fn mid_pairs4() -> bool {
    env_unless!("DS4_MID_PAIRS4", "0")
}

/// `DS4_MID_F16=0` keeps prefill's shared-expert mids in f32 (moe_mid, then x_to_f16 for the
/// cuBLAS down projection) instead of moe_mid writing the f16 copy straight into the cuBLAS
/// scratch (read once).
fn mid_f16_enabled() -> bool {
    env_unless!("DS4_MID_F16", "0")
}

/// Raw weight bytes gemm_q stages per row per K step (`GQR<TY>::RB` in matmul.cuh).
pub(crate) fn gq_raw_bytes(ty: i32) -> usize {
    match ty {
        0 => 128, // F32
        1 => 64,  // F16
        16 => 16, // IQ2_XXS
        _ => 48,  // Q8_0, Q4_K, Q2_K
    }
}

/// Token tile of gemm_q: 128 unless that leaves the GPU short of tiles (dense) or wastes most
/// of each tile (grouped, `avg` = mean tokens per group): the 64-token tile halves the wasted
/// math on small groups but dequantizes each weight tile twice as often per token.
pub(crate) fn gemm_q_bn(gpu: &Gpu, rows: usize, t: usize, avg: Option<f64>) -> usize {
    // DS4_GEMM_EXP_BN=64|128 forces the token tile of the grouped (expert) calls
    static EXP_BN: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let force = *EXP_BN.get_or_init(|| std::env::var("DS4_GEMM_EXP_BN").ok().and_then(|v| v.parse().ok()).filter(|&b| b == 64 || b == 128));
    match avg {
        Some(_) if force.is_some() => force.unwrap_or(64),
        Some(a) => {
            if a >= 96.0 {
                128
            } else {
                64
            }
        }
        None => {
            // one wave of 128-token tiles is enough: at T=8192 the 4096->512 projection (256
            // tiles) ran 142 TFLOP/s with 128-token tiles and 104 with 64
            let tiles128 = rows.div_ceil(128) * t.div_ceil(128);
            if tiles128 >= gpu.sm_count.max(1) as usize {
                128
            } else {
                64
            }
        }
    }
}

/// Largest prefill batch whose routed experts may run on the int8 matvec (`moe_small`; its
/// scratch is sized for it), and the default bound.
const MOE_SMALL_MAX: usize = 4096;
const MOE_SMALL_DEFAULT: usize = 256;
/// The smallest batch whose moe_small runs `mvqm` by default (below it: token-major mvq).
const MOE_MMA_MIN: usize = 16;

/// How moe_small lays out its slots: `DS4_MOE_SMALL_GRP` forces one layout for every batch;
/// unset, batches from MOE_MMA_MIN tokens (`DS4_MOE_MMA_MIN=N`) take ChunkedStaged and smaller
/// ones TokenMajor. Session 53 (H100, same call): mvqs 1.22-1.42x faster than mvqm in the
/// kernel bench (IQ2_XXS, Q2_K, Q4_K at 256 and 1024 tokens, the same bits); one batch at 2K,
/// t/s mvqs / mvqm: 64 tokens 1865 / 1777, 128 2397 / 2350, 256 4474 / 4047, and 512 6512
/// against the grouped GEMM's 7840 (MOE_SMALL_DEFAULT stays 256). Session 52: H100, 28
/// layers, t/s of one batch at 2K context, mvqm against session 50's defaults (token-major to
/// 64 tokens, the grouped GEMM beyond): 8 tokens 379 / 407, 32 1140 / 989, 64 1822 / 1283, 128
/// 2534 / 1431, 256 4235 / 2497, 512 6104 / 7869 (hence MOE_SMALL_DEFAULT 256); the fixtures
/// 249/249 with mvqm up to 2048 tokens.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MoeSmall {
    /// one slot per (token, expert), token-major
    TokenMajor,
    /// `=m`: chunks of up to MVQM_NT pairs on the int8 tensor cores (`mvqm`). At 256 tokens a
    /// batch puts ~6 pairs on each of the 256 experts, so every expert's weights are read,
    /// and the grouped GEMM's 128-row tiles dequantize each for a few tokens (2.5K t/s at 256
    /// tokens against 7.9K at 512); here each expert's weights are read and decoded once per
    /// 16 pairs, and one mma multiplies 16 rows by 8 pairs
    ChunkedMma,
    /// `=s`: mvqm's chunks through shared-memory stages filled by cp.async (`mvqs`; IQ2_XXS,
    /// Q2_K, Q4_K; other types take mvqm)
    ChunkedStaged,
}
fn moe_small_forced() -> Option<MoeSmall> {
    static V: std::sync::OnceLock<Option<MoeSmall>> = std::sync::OnceLock::new();
    *V.get_or_init(|| match std::env::var("DS4_MOE_SMALL_GRP").as_deref() {
        Ok("0") => Some(MoeSmall::TokenMajor),
        Ok("m") => Some(MoeSmall::ChunkedMma),
        Ok("s") => Some(MoeSmall::ChunkedStaged),
        _ => None,
    })
}
fn moe_mma_min() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_MOE_MMA_MIN").ok().and_then(|v| v.parse().ok()).unwrap_or(MOE_MMA_MIN))
}
/// moe_small's layout for a batch of `t` tokens.
fn moe_small_mode(t: usize) -> MoeSmall {
    moe_small_forced().unwrap_or(if t >= moe_mma_min() { MoeSmall::ChunkedStaged } else { MoeSmall::TokenMajor })
}
/// Whether moe_small's rows of a `t`-token batch come in moe_group's pair order (pair_of maps
/// them back).
fn moe_small_grouped(t: usize) -> bool {
    moe_small_mode(t) != MoeSmall::TokenMajor
}
/// Entries of pair_chunks' table for `pairs` pairs over `e` experts in chunks of up to `nt`:
/// each expert with pairs adds at most one partial chunk to pairs / nt full ones.
pub(crate) fn chunk_bound(e: usize, pairs: usize, nt: usize) -> usize {
    e.min(pairs) + pairs / nt
}

/// The largest prefill batch whose routed experts run on int8 activations (`moe_small`: the
/// decode kernels' `mvq`, one slot per token and expert, below MOE_MMA_MIN tokens; `mvqm` on
/// chunks of one expert's pairs from there, see MoeSmall; `DS4_MOE_SMALL=N`: up to N tokens, at
/// most MOE_SMALL_MAX; 0: never). Why: at a few tokens per expert the grouped GEMM's tiles each
/// walk all of K for 1-3 tokens (gemm_q64 ~100 us a tile), while the matvec streams each slot's
/// expert rows at the memory bandwidth (a slot re-reads its expert where two tokens share one).
/// H100, 28 layers, one batch at 2K, t/s with and without: 12 tokens 548 / 306, 16 669 / 374,
/// 32 992 / 591, 64 1289 / 936. Its activations are int8 as in decode (ds4's CPU path quantizes
/// the experts' inputs too): the fixtures' fast-vs-reference KL of an 8-token prefill went from
/// ~1e-5 to ~7e-4, the decode rows' level (9e-4). Session 50, bench/s50.
fn moe_small_max() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_MOE_SMALL").ok().and_then(|v| v.parse().ok()).unwrap_or(MOE_SMALL_DEFAULT).min(MOE_SMALL_MAX))
}

/// The largest prefill batch whose dense projections may run on `mvqm` (dense_small; its
/// scratch and chunk table are sized for it), and the default bound (`DS4_DENSE_SMALL=N`: up
/// to N tokens, at most DENSE_SMALL_MAX; 0: never). Why: below ~64 tokens gemm_q64's tiles
/// (split over K by gq_ks) dequantize every weight into shared f16 for a 64-token product
/// whatever the batch holds, while mvqm reads and decodes each weight row once per 16 tokens
/// on the int8 tensor cores, as the routed experts do from MOE_MMA_MIN tokens. Its activations
/// are int8, as decode's are for the same matrices. H100, 28 layers, one batch at 2K, t/s with
/// DS4_DENSE_SMALL=64 and 0: 4 tokens 351 / 228, 8 591 / 408, 16 882 / 673, 32 1285 / 1137,
/// 64 1792 / 1816 (hence 32); the fixtures' short-prefill KL to the reference rose from ~7e-4
/// to ~1.5-2.4e-3, the decode rows' level (session 53, bench/s53).
const DENSE_SMALL_MAX: usize = 64;
const DENSE_SMALL_DEFAULT: usize = 32;
fn dense_small_max() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("DS4_DENSE_SMALL").ok().and_then(|v| v.parse().ok()).unwrap_or(DENSE_SMALL_DEFAULT).min(DENSE_SMALL_MAX))
}
/// dense_small's chunk table: for each batch size t in 1..=DENSE_SMALL_MAX its ceil(t /
/// MVQM_NT) chunks of the t tokens as one expert's pairs ({0, first, count, 0}), the sizes in
/// order; dense_chunk_at(t) is the first entry of t's.
fn dense_chunk_table() -> Vec<[i32; 4]> {
    (1..=DENSE_SMALL_MAX).flat_map(|t| (0..t.div_ceil(MVQM_NT)).map(move |c| [0, (c * MVQM_NT) as i32, (t - c * MVQM_NT).min(MVQM_NT) as i32, 0])).collect()
}
fn dense_chunk_at(t: usize) -> usize {
    (1..t).map(|u| u.div_ceil(MVQM_NT)).sum()
}

/// gemm_q's split over K (`GQ_KS_SHIFT` in matmul.cuh: asserted equal by the kernel source).
pub(crate) const GQ_KS_SHIFT: i32 = 8;
/// gemm_qs_dg's parts left out (`GQ_DG_SHIFT` and the GQ_DG_* bits in matmul.cuh): flags bits
/// from here on; the kernel bench's diagnosis rows only (kbench.rs exp_bench, rows qs_dg).
pub(crate) const GQ_DG_SHIFT: i32 = 24;
/// Bytes of the split-K partial sums (Scratch::ks_part): parts x tokens x rows f32.
const KS_PART_BYTES: usize = 16 << 20;

/// K parts for a plain gemm_q64 / gemm_q128 launch of `t` tokens over a rows x cols matrix
/// (1: none). Why: at a few tokens a matrix has few 128-row tiles (q_a 8, kv 4, out_b 32),
/// each a serial walk over all of K (~100 us at K 4096 on an H100), so a small batch's
/// projections leave most SMs idle; split, every SM gets a part. About two blocks per SM in
/// all, at least 4 K steps of 32 per part, at most 32 parts, within KS_PART_BYTES.
/// `DS4_GQ_KS=0` turns it off. H100, 28 layers, prefill batches at 2K, t/s with and without:
/// 1 token 43 / 16, 8 tokens 225 / 105, 32 tokens 594 / 327, 64 tokens 933 / 557 (the dense
/// projections take cuBLAS from 128 tokens); fixtures 243/243 both ways (session 50).
pub(crate) fn gq_ks(sm: usize, rows: usize, cols: usize, t: usize, bn: usize) -> usize {
    if !env_unless!("DS4_GQ_KS", "0") {
        return 1;
    }
    gq_ks_plan(sm, rows, cols, t, bn)
}

pub(crate) fn gq_ks_plan(sm: usize, rows: usize, cols: usize, t: usize, bn: usize) -> usize {
    let tiles = rows.div_ceil(128) * t.div_ceil(bn);
    if tiles == 0 || tiles >= sm {
        return 1;
    }
    let by_sm = 2 * sm / tiles;
    let by_k = cols / 32 / 4;
    let by_mem = KS_PART_BYTES / (t * rows * 4).max(1);
    by_sm.min(by_k).min(by_mem).min(32).max(1)
}

/// Launch gemm_q64/gemm_q128 (`bn` 64 or 128) on `a`; `ngroups` = groups in grp_off (ignored
/// when a.grp_off == 0). Persistent grid: two blocks per SM (what the shared memory allows),
/// fewer when there are fewer tiles.
pub(crate) fn launch_gemm_q(gpu: &Gpu, a: GemmArgs, ngroups: usize, bn: usize) -> Result<()> {
    launch_gemm_q_kernel(gpu, a, ngroups, bn, GqKernel::Mma)
}

/// The kernel families of the grouped GEMM (matmul.cuh).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum GqKernel {
    /// gemm_q64 / gemm_q128: mma.sync, weights dequantized into a shared f16 tile
    Mma,
    /// gemm_qr: wgmma with the weights dequantized into registers, tiles of 128 rows x up to
    /// 256 tokens (`bn` ignored); the f16 activations must be in qr_kpos order (x_to_f16 /
    /// moe_mid with `perm`)
    Qr,
    /// gemm_qr2: the same with tiles of 256 rows x up to 128 tokens
    Qr2,
    /// gemm_qs: gemm_qr's tiles and products (the same bits) with the copies on a producer
    /// warpgroup and per-stage mbarriers (`DS4_GEMM_QS`)
    Qs,
    /// gemm_qs2: the same for gemm_qr2's tiles (`DS4_GEMM_QS2`)
    Qs2,
    /// gemm_qs for each group's full tiles and long remainders, then gemm_qs2 for the short
    /// remainders, or (`DS4_QS_SPLIT=3`, IQ2_XXS / Q2_K / Q4_K) gemm_qs2 for those of 65-128
    /// tokens and gemm_qs4 for those up to 64 (`qs_split`): the same products per output
    QsSplit,
    /// gemm_qs4: gemm_qs's body with tiles of 512 rows x up to 64 tokens (qs4_type_ok)
    Qs4,
}

/// The register-fragment kernel for the routed experts of a batch averaging `avg` tokens per
/// expert, or None (gemm_q): where it is built (sm_90a), from `DS4_GEMM_QR_MIN` (default 8)
/// tokens per expert, gemm_qr (128-row tiles of up to 256 tokens) from `DS4_GEMM_QR_AT`
/// (default 128), gemm_qr2 (256-row tiles of up to 128 tokens) below; `DS4_GEMM_QR=0` off,
/// `=1` / `=2` one kernel throughout. Kernel bench with the swizzled activation stages (H200,
/// session 8), IQ2_XXS gate, ms at 12 / 24 / 48 / 72 / 96 / 192 tokens per expert: gemm_q 2.01
/// / 2.02 / 2.06 / 3.73 / 2.61 / 5.08, gemm_qr 1.71 / 1.73 / 1.73 / 1.79 / 1.86 / 2.10, gemm_qr2
/// 1.35 / 1.37 / 1.40 / 1.58 / 1.61 / 3.08 (Q2_K down: gemm_q 2.32 / 2.33 / 2.43 / 4.33 / 2.95 /
/// 5.81, gemm_qr 2.27 / 2.28 / 2.26 / 2.39 / 2.46 / 2.70, gemm_qr2 2.06 / 2.07 / 2.06 / 2.09 /
/// 2.12 / 4.11): gemm_qr2 wins while most experts fit one 128-token tile.
pub(crate) fn gemm_qr(gpu: &Gpu, avg: f64) -> Option<GqKernel> {
    // (on, the kernel forced by DS4_GEMM_QR=1|2 or None for the choice by size, the floor)
    static V: std::sync::OnceLock<(bool, Option<GqKernel>, f64, f64)> = std::sync::OnceLock::new();
    let (on, forced, min, at) = *V.get_or_init(|| {
        let v = std::env::var("DS4_GEMM_QR").unwrap_or_default();
        let forced = match v.as_str() {
            "1" => Some(GqKernel::Qr),
            "2" => Some(GqKernel::Qr2),
            _ => None,
        };
        let num = |k: &str, d: f64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        (v != "0", forced, num("DS4_GEMM_QR_MIN", 8.0), num("DS4_GEMM_QR_AT", 128.0))
    });
    if !on || !wgmma_built(gpu.cc) || avg < min {
        return None;
    }
    let k = forced.unwrap_or(if avg >= at { GqKernel::Qr } else { GqKernel::Qr2 });
    // the split runs both producer kernels and needs the dynamic tile order
    let can_split = gemm_qs_on() && gemm_qs2_on() && qr_sched_dyn();
    Some(match k {
        GqKernel::Qr if can_split && qs_split() > 0 => GqKernel::QsSplit,
        GqKernel::Qr2 if can_split && qs_split() == 4 => GqKernel::QsSplit,
        GqKernel::Qr if gemm_qs_on() => GqKernel::Qs,
        GqKernel::Qr2 if gemm_qs2_on() => GqKernel::Qs2,
        k => k,
    })
}

/// gemm_qs2 in place of gemm_qr2 (default; `DS4_GEMM_QS2=0` keeps gemm_qr2; read once; the
/// same output bits). Kernel bench at 2K tokens with skewed routing (H200, session 21): IQ2_XXS
/// gate 1.577 -> 1.423 ms, Q2_K down 2.243 -> 1.704 ms; a 2K prefill +11 %.
pub(crate) fn gemm_qs2_on() -> bool {
    env_unless!("DS4_GEMM_QS2", "0")
}

/// gemm_qs in place of gemm_qr (default; `DS4_GEMM_QS=0` keeps gemm_qr; read once; the same
/// output bits). Kernel bench at 8K tokens (H200, session 21): IQ2_XXS gate 2.111 -> 1.797 ms,
/// Q2_K down 2.584 -> 2.271 ms, Q4_K within 1 %; an 8K prefill +5.3 %.
pub(crate) fn gemm_qs_on() -> bool {
    env_unless!("DS4_GEMM_QS", "0")
}

/// The split of gemm_qs's launches by each group's remainder (GqKernel::QsSplit), read once:
/// `DS4_QS_SPLIT` = 2 (default): the remainders (tokens past the group's 256-token tiles) of
/// up to 128 tokens go to gemm_qs2; 3: for IQ2_XXS, Q2_K and Q4_K those of up to 64 to gemm_qs4
/// and the rest of them to gemm_qs2; 4: as 3, also for the batches that would take gemm_qs2
/// alone (fewer than 128 tokens per expert on average); 0 off. Session 44 (H100, 28 layers, 8K
/// prompt, the same greedy tokens in every mode): 3 and 4 -0.1 to -0.6 % against 2, 0 -2.9 %.
/// Why: a remainder tile costs gemm_qs its 128 rows' whole dequantization for one or two
/// 64-token chunks, and gemm_qs2's 256-row (gemm_qs4's 512-row) tiles dequantize with two
/// (four) times the independent chains per warp, while gemm_qs keeps the 256-wide products of
/// the full tiles. Kernel bench (session 39, 8K tokens, skewed
/// routing): IQ2_XXS gate 2.028 -> 1.871 ms with 2, Q2_K down 2.451 -> 2.185; an 8K prompt
/// +2.5 % (13,128 / 13,190 -> 13,471 / 13,504 t/s, the same greedy tokens).
pub(crate) fn qs_split() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| match std::env::var("DS4_QS_SPLIT").as_deref() {
        Ok("0") => 0,
        Ok("3") => 3,
        Ok("4") => 4,
        _ => 2,
    })
}

/// The launches of a split gemm_qs (GqKernel::QsSplit) on weights of type `ty` under split
/// mode `mode` (qs_split): (kernel, the flags it adds), the shortest remainders' launch first
/// (gemm_qs4's, up to 64 tokens, in modes 3 / 4 for qs4_type_ok's types; else gemm_qs2's, up
/// to 128), then gemm_qs's (its full tiles and remainders over 128), then in the three-way
/// form gemm_qs2's 65-128. Every (token, row) of every group is in exactly one launch's tiles
/// (matmul.cuh gq_split_rem; checked on the host by the test split_plan_covers_each_token_once).
pub(crate) fn qs_split_plan(ty: i32, mode: usize) -> Vec<(GqKernel, i32)> {
    if mode >= 3 && qs4_type_ok(ty) {
        vec![(GqKernel::Qs4, GQ_FLAG_LO | GQ_FLAG_S64), (GqKernel::Qs, GQ_FLAG_HI), (GqKernel::Qs2, GQ_FLAG_LO | GQ_FLAG_MIDB)]
    } else {
        vec![(GqKernel::Qs2, GQ_FLAG_LO), (GqKernel::Qs, GQ_FLAG_HI)]
    }
}

/// Token and row tile of a gemm_qr / gemm_qs kernel (matmul.cuh: NX = QS_NX / MB tokens, BM =
/// 128 MB rows); None for the mma.sync gemm_q.
pub(crate) fn gq_tile_shape(kind: GqKernel) -> Option<(usize, usize)> {
    let mb = match kind {
        GqKernel::Mma => return None,
        GqKernel::Qr | GqKernel::Qs | GqKernel::QsSplit => 1,
        GqKernel::Qr2 | GqKernel::Qs2 => 2,
        GqKernel::Qs4 => 4,
    };
    Some((QS_NX / mb, 128 * mb))
}

/// The split gemm_qs's shortest-remainder launch on the side stream (`DS4_QS_FORK=1`; read
/// once; an 8K prompt of the q2 model's first 28 layers on an H100, session 58: 20,574 t/s
/// against 20,424 / 20,570 without, within the noise: off).
pub(crate) fn qs_fork_on() -> bool {
    env_is!("DS4_QS_FORK", "1")
}

/// The weight types gemm_qs4 takes: those whose raw weights the producer copies once per pair
/// of K steps (matmul.cuh QSW, P = QS_PAIR), so 512 rows' slots fit beside the activations.
pub(crate) fn qs4_type_ok(ty: i32) -> bool {
    [GgmlType::Iq2Xxs, GgmlType::Q2K, GgmlType::Q4K].iter().any(|t| t.id() as i32 == ty)
}

/// K steps per weight slot of gemm_qs for qs4_type_ok's types (matmul.cuh QSW<TY>::P, asserted
/// equal by driver::kernel_source).
pub(crate) const QS_PAIR: usize = 2;

/// Bytes of one row in a gemm_qs weight slot (matmul.cuh QSW<TY>::RB, asserted equal by
/// driver::kernel_source) for qs4_type_ok's types.
pub(crate) fn qs_slot_row_bytes(ty: i32) -> usize {
    if ty == GgmlType::Iq2Xxs.id() as i32 { 32 } else { 48 }
}

/// Threads of a gemm_qs block: two consumer warpgroups and the producer warpgroup (matmul.cuh).
const QS_THREADS: u32 = 384;

/// Copy stages of gemm_qr / gemm_qr2 (`GR_ST` in matmul.cuh: the kernel source asserts it
/// equals this value, see driver::kernel_source).
pub(crate) const GR_ST: usize = 8;

/// launch_gemm_q with the kernel family chosen by the caller (the kernel bench compares them).
pub(crate) fn launch_gemm_q_kernel(gpu: &Gpu, a: GemmArgs, ngroups: usize, bn: usize, kind: GqKernel) -> Result<()> {
    launch_gemm_qx(gpu, a, None, ngroups, bn, kind)
}

/// The routed experts' gate (`a.w`) and up (`gu.w2`) in one grouped launch whose outputs are
/// the f16 mids in gemm_qr's K order (`a.y`, `a.ldy` = the mid width), as gemm_qs twice and
/// moe_mid would make them (matmul.cuh gemm_qs_gu_store): `kind` Qs, Qs2 or QsSplit (the
/// split's launches each paired), weight types gu_type_ok, the two matrices of one shape.
pub(crate) fn launch_gemm_gu(gpu: &Gpu, a: GemmArgs, gu: GuArgs, ngroups: usize, kind: GqKernel, staged: bool) -> Result<()> {
    if !gu_pair_ok(&a.w, &gu.w2) || gu.pw == 0 {
        return Err(CudaError::Other("gemm_qs_gu: gate and up of one shape and type (IQ2_XXS, Q2_K, Q4_K) and routing weights".into()));
    }
    if !gu_kind_ok(kind) {
        return Err(CudaError::Other(format!("gemm_qs_gu: gemm_qs / gemm_qs2 tiles only, not {kind:?}")));
    }
    launch_gemm_qx(gpu, GemmArgs { flags: a.flags | GQ_FLAG_Y16, ..a }, Some((gu, staged)), ngroups, 0, kind)
}

/// Whether gemm_qs_guc's 16-byte stores of the mids fit `a` (whole 8-row chunks, 16-byte
/// aligned rows of y).
fn gu_staged_ok(a: &GemmArgs) -> bool {
    a.w.rows % 8 == 0 && a.ldy % 8 == 0 && a.y % 16 == 0
}

/// The grouped-GEMM kinds gemm_qs_gu pairs: gemm_qs's and gemm_qs2's tiles (the split unless it
/// takes gemm_qs4, DS4_QS_SPLIT >= 3).
pub(crate) fn gu_kind_ok(kind: GqKernel) -> bool {
    matches!(kind, GqKernel::Qs | GqKernel::Qs2) || (kind == GqKernel::QsSplit && qs_split() < 3)
}

/// The weight types of gemm_qs_gu (matmul.cuh gemm_qs_p2_entry).
pub(crate) fn gu_type_ok(ty: i32) -> bool {
    qs4_type_ok(ty)
}

/// Whether gate `g` and up `u` can share a gemm_qs_gu launch (launch_gemm_gu's conditions,
/// short of the kernel kind and the routing weights).
pub(crate) fn gu_pair_ok(g: &WMat, u: &WMat) -> bool {
    gu_type_ok(g.ty) && (g.ty, g.rows, g.cols, g.e_pay, g.e_hdr) == (u.ty, u.rows, u.cols, u.e_pay, u.e_hdr)
}

/// The routed experts' gate and up in one launch writing the mids (gemm_qs_gu) where the batch
/// takes gemm_qs / gemm_qs2: whether, and whether gemm_qs's tiles stage the mids for 16-byte
/// stores (gemm_qs_guc; gemm_qs2's tiles keep gemm_qs2_gu), for gate weights of type `ty`.
/// `DS4_GU_FUSE` = 0 off, 1 on (direct stores), 2 on (staged); unset (default): staged for
/// Q4_K and IQ2_XXS, off otherwise (Q2_K: not measured). Read once. The mids differ from
/// gemm_qs twice + moe_mid's by one f16 step at most (moe_mid_gu_fast's silu; 2,152 / 7,909 of
/// 100.7M at 8K in the kernel bench).
/// Why by type (H100, kernel bench at 8K tokens, gate + up + mid): session 56, Q4_K 3.96 ms
/// fused against 5.00 (1.26x), an 8K prompt of the q4 model's first 16 layers +3.8 %; IQ2_XXS
/// was 3.78 against 3.79 (1.00x) while the epilogue spilled (ptxas hoisted the routing-weight
/// loads); with the weights staged in shared memory (session 57) IQ2_XXS is 3.34 against 3.75
/// (1.12x, the split launch, staged), Q4_K unchanged; the q2 model's 8K prompt (H100, its first
/// 28 layers, session 58): 20,424 / 20,570 t/s against 19,889 / 19,854 with `DS4_GU_FUSE=0`
/// (+3.2 %), the fixtures 243 / 243 with the fused kernels forced onto every MoE batch.
pub(crate) fn gu_fuse(ty: i32) -> Option<bool> {
    static MODE: std::sync::OnceLock<Option<u8>> = std::sync::OnceLock::new();
    let mode = *MODE.get_or_init(|| match std::env::var("DS4_GU_FUSE").as_deref() {
        Ok("0") => Some(0),
        Ok("1") => Some(1),
        Ok("2") => Some(2),
        _ => None,
    });
    match mode {
        Some(0) => None,
        Some(m) => Some(m == 2),
        None => [GgmlType::Q4K, GgmlType::Iq2Xxs].iter().any(|t| t.id() as i32 == ty).then_some(true),
    }
}

/// Floats of gemm_qs_gu's accumulator exchange (matmul.cuh GU_XCH), after the stages.
pub(crate) const GU_XCH: usize = 128 * 64;

/// (`gu`: a gate + up launch's arguments, and whether gemm_qs's tiles take gemm_qs_guc)
fn launch_gemm_qx(gpu: &Gpu, a: GemmArgs, gu: Option<(GuArgs, bool)>, ngroups: usize, bn: usize, kind: GqKernel) -> Result<()> {
    if a.t <= 0 {
        return Ok(());
    }
    if kind == GqKernel::QsSplit {
        // needs the dynamic tile order (qr_class_count) and groups; else gemm_qs alone
        if a.grp_off == 0 || !qr_sched_dyn() {
            return launch_gemm_qx(gpu, a, gu, ngroups, bn, GqKernel::Qs);
        }
        let plan = qs_split_plan(a.w.ty, qs_split());
        let (lo_kind, lo_flags) = plan[0];
        let lo = GemmArgs { flags: a.flags | lo_flags, ..a };
        // with DS4_QS_FORK=1 the shortest remainders' launch on the side stream, beside the
        // others (its own tile counter): the launches' tails overlap instead of leaving SMs
        // idle in turn
        let fork = qs_fork_on() && !gpu.is_on_side() && gpu.fork()?;
        if fork {
            let r = launch_gemm_qx(gpu, lo, gu, ngroups, bn, lo_kind);
            gpu.to_main();
            r?;
        }
        let main = plan[1..].iter().try_for_each(|&(kind, f)| launch_gemm_qx(gpu, GemmArgs { flags: a.flags | f, ..a }, gu, ngroups, bn, kind));
        // (the branch is joined whatever the main launches returned)
        return if fork { main.and(gpu.join()) } else { main.and_then(|_| launch_gemm_qx(gpu, lo, gu, ngroups, bn, lo_kind)) };
    }
    if kind == GqKernel::Qs4 && !qs4_type_ok(a.w.ty) {
        return Err(CudaError::Other("gemm_qs4: IQ2_XXS, Q2_K or Q4_K weights only".into()));
    }
    if kind == GqKernel::Mma && a.flags & GQ_FLAG_Y16 != 0 {
        return Err(CudaError::Other("gemm_q64 / gemm_q128 write f32 only (GQ_FLAG_Y16 is gemm_qr / gemm_qs's)".into()));
    }
    if kind == GqKernel::Mma && bn != 64 && bn != 128 {
        return Err(CudaError::Other(format!("gemm_q: token tiles of 64 or 128, not {bn}")));
    }
    // gemm_qr / gemm_qs: 64-row blocks per warpgroup (tile rows 128 * mb, up to 256 / mb tokens)
    let shape = gq_tile_shape(kind);
    let mb = shape.map_or(0, |(_, bm)| bm / 128);
    if mb > 0 && (a.flags & GQ_FLAG_XH == 0 || !mvq_type_ok(a.w.ty)) {
        return Err(CudaError::Other("gemm_qr: f16 activations and a block-quant type only".into()));
    }
    let (bm, bn) = shape.map_or((128, bn), |(nx, bm)| (bm, nx));
    let ng = if a.grp_off != 0 { ngroups.max(1) } else { 1 };
    let xbytes = if a.flags & GQ_FLAG_XH != 0 { 2 } else { 4 };
    let raw = gq_raw_bytes(a.w.ty);
    let tiles = ((ng + 1) * 4).div_ceil(16) * 16;
    let smem = match kind {
        // the tile table, then GR_ST stages of bn x 64 activation bytes and bm raw weight rows
        GqKernel::Qr | GqKernel::Qr2 => qr_table_bytes(ng, bn) + GR_ST * (bn * 64 + bm * raw),
        // the barriers and stage tags before gemm_qr's table
        GqKernel::Qs | GqKernel::Qs2 | GqKernel::QsSplit => qs_table_bytes(ng, bn) + GR_ST * (bn * 64 + bm * raw),
        // gemm_qs4 (512 rows): its weight slots exactly, as gemm_qs_body lays them out
        GqKernel::Qs4 => qs_table_bytes(ng, bn) + GR_ST * bn * 64 + GR_ST / QS_PAIR * bm * qs_slot_row_bytes(a.w.ty),
        // 3 stages with rows padded to 40 elements, 2 f16 weight tiles of 128 x 80 bytes
        GqKernel::Mma => tiles + 3 * bn * 40 * xbytes + 3 * 128 * raw + 2 * 128 * 40 * 2,
    };
    // gemm_qs_guc's staged mids (the other gate + up kernels stage nothing: their shared memory
    // left to the L1)
    let guc = gu.is_some_and(|g| g.1) && kind != GqKernel::Qs2 && gu_staged_ok(&a);
    let smem = smem + if mb > 0 { gq_grid_bytes(a.w.ty) } else { 0 } + if guc { GU_XCH * 4 } else { 0 };
    // (gemm_q64 / gemm_q128 split over K: each tile in ks parts)
    let ks = if kind == GqKernel::Mma { ((a.flags >> GQ_KS_SHIFT) & 31) as usize + 1 } else { 1 };
    let upper = (a.w.rows as usize).div_ceil(bm) * (a.t as usize).div_ceil(bn) * ng * ks;
    let per_sm = if mb > 0 { 1 } else { 2 };
    let grid = upper.min(per_sm * gpu.sm_count.max(1) as usize).max(1);
    // f16 outputs (GQ_FLAG_Y16): gemm_qr / gemm_qs's `_y16` entry points (matmul.cuh
    // gemm_qr_body's H); gemm_q64 / gemm_q128 choose per output
    let y16 = mb > 0 && a.flags & GQ_FLAG_Y16 != 0;
    // (gemm_qs_dg: gemm_qs's f32-out IQ2_XXS tiles with parts of the K step left out)
    let dg = a.flags >> GQ_DG_SHIFT != 0;
    if dg && (kind != GqKernel::Qs || y16 || gu.is_some() || a.w.ty != GgmlType::Iq2Xxs.id() as i32) {
        return Err(CudaError::Other("gemm_qs_dg: gemm_qs's f32-out IQ2_XXS tiles only".into()));
    }
    let name = match (kind, bn, y16) {
        _ if dg => "gemm_qs_dg",
        _ if guc => "gemm_qs_guc",
        _ if gu.is_some() => {
            if kind == GqKernel::Qs2 {
                "gemm_qs2_gu"
            } else {
                "gemm_qs_gu"
            }
        }
        (GqKernel::Qr, _, false) => "gemm_qr",
        (GqKernel::Qr, _, true) => "gemm_qr_y16",
        (GqKernel::Qr2, _, false) => "gemm_qr2",
        (GqKernel::Qr2, _, true) => "gemm_qr2_y16",
        (GqKernel::Qs | GqKernel::QsSplit, _, false) => "gemm_qs",
        (GqKernel::Qs | GqKernel::QsSplit, _, true) => "gemm_qs_y16",
        (GqKernel::Qs2, _, false) => "gemm_qs2",
        (GqKernel::Qs2, _, true) => "gemm_qs2_y16",
        (GqKernel::Qs4, _, false) => "gemm_qs4",
        (GqKernel::Qs4, _, true) => "gemm_qs4_y16",
        (GqKernel::Mma, 128, _) => "gemm_q128",
        _ => "gemm_q64",
    };
    let args = Args::new().a(a).a(ng as i32);
    let args = if mb > 0 { args.a(if qr_sched_dyn() { gpu.qr_counter()? } else { 0u64 }) } else { args };
    let args = if let Some((g, _)) = gu { args.a(g) } else { args };
    let threads = if matches!(kind, GqKernel::Qs | GqKernel::Qs2 | GqKernel::Qs4) { QS_THREADS } else { 256 };
    gpu.launch(name, (grid as u32, 1, 1), threads, smem as u32, args)
}

/// Copies of the f16 IQ2_XXS grid in gemm_qr / gemm_qs (`GQ_GREP` in matmul.cuh: the kernel
/// source asserts it equal).
pub(crate) const GQ_GREP: usize = 8;

/// The IQ2_XXS grid's copies at the start of gemm_qr / gemm_qs's dynamic shared memory
/// (GQ_GREP copies of 256 16-byte entries), for that type only.
pub(crate) fn gq_grid_bytes(ty: i32) -> usize {
    if ty == GgmlType::Iq2Xxs.id() as i32 { GQ_GREP * 256 * 16 } else { 0 }
}

/// gemm_qs's shared memory before the stages: GR_ST full and empty mbarriers (8 bytes each),
/// GR_ST stage tags and two next-tile slots (ints), gemm_qr's class prefixes ((bn / 64) x
/// (ng + 1) ints), padded to 1 KB; matmul.cuh gemm_qs_body computes the same size.
pub(crate) fn qs_table_bytes(ng: usize, bn: usize) -> usize {
    (GR_ST * 20 + 8 + bn / 64 * (ng + 1) * 4).div_ceil(1024) * 1024
}

/// gemm_qr / gemm_qr2's tile table (dynamic shared memory before the stages) for `ng` groups
/// and token tiles of `bn`: the class prefixes of the dynamic order, (bn / 64) x (ng + 1)
/// ints, and two slots, padded to 1 KB (the activation stages start 1024-byte aligned);
/// matmul.cuh gemm_qr_body computes the same size.
pub(crate) fn qr_table_bytes(ng: usize, bn: usize) -> usize {
    ((bn / 64 * (ng + 1) + 2) * 4).div_ceil(1024) * 1024
}

/// gemm_qr's tile order, read once: the longest token tiles first, each block taking its next
/// tile from a device counter as it finishes one (default), or `DS4_QR_SCHED=static` for the
/// earlier fixed round-robin over the groups' tiles in order (same results either way).
pub(crate) fn qr_sched_dyn() -> bool {
    env_unless!("DS4_QR_SCHED", "static")
}

/// `DS4_MOE_STATS=1`: print each prefill layer's routing balance (CudaSession::print_moe_stats).
fn moe_stats_on() -> bool {
    env_is!("DS4_MOE_STATS", "1")
}

/// Scratch of the cuBLAS dense path for batches of up to `t` tokens, in f16 elements: the
/// largest dense weight matrix that needs dequantizing (F16 ones are read in place) and
/// `t` rows of the widest activation (the full attention heads for the batched out_a).
fn dense16_sizes(m: &CudaModel, t: usize) -> (usize, usize) {
    let d = &m.dims;
    let (mut we, mut xc) = (0usize, d.h * d.dh);
    for ly in &m.layers {
        let mut mats: Vec<&GMat> = vec![&ly.q_a, &ly.kv, &ly.q_b, &ly.out_a, &ly.out_b, &ly.gate_inp, &ly.gate_sh, &ly.up_sh, &ly.down_sh];
        for c in [&ly.comp, &ly.icomp].into_iter().flatten() {
            mats.push(&c.kv);
            mats.push(&c.gate);
        }
        mats.extend(ly.idx_q_b.iter().chain(ly.idx_proj.iter()));
        for g in mats {
            if g.ty != GgmlType::F16 {
                we = we.max(g.rows * g.cols);
            }
            xc = xc.max(g.cols);
        }
    }
    (we.max(8), t * xc)
}

/// Scratch of the cuBLAS routed-expert path for batches of up to `t` tokens, in f16 elements:
/// the largest expert stack that needs dequantizing (F16 stacks are read in place) and the
/// inputs of all t * k (token, expert) pairs at the widest input (d for gate/up, f for down).
pub(crate) fn exp16_sizes(m: &CudaModel, t: usize) -> (usize, usize) {
    let d = &m.dims;
    let mut we = 0usize;
    for ly in &m.layers {
        for g in [&ly.gate_exps, &ly.up_exps, &ly.down_exps] {
            if g.ty != GgmlType::F16 {
                we = we.max(g.n_exp * g.rows * g.cols);
            }
        }
    }
    (we.max(8), t * d.k * d.d.max(d.f))
}

pub(crate) fn nsplit_decode(ratio: usize) -> usize {
    if ratio == 0 { 8 } else { 16 }
}

impl CudaSession {
    /// [`CudaSession::new`], except that a batch above 8192 tokens which does not fit (its
    /// scratch not allocated, or less than 4 GiB left free after it) becomes 8192.
    pub fn open(m: Arc<CudaModel>, opts: SessionOptions) -> Result<CudaSession> {
        let big = opts.max_chunk.min(opts.ctx);
        if big > FALLBACK_CHUNK {
            let why = match CudaSession::new(m.clone(), opts.clone()) {
                Ok(s) => match m.gpu.free_mem() {
                    Some(free) if free < BIG_CHUNK_SPARE => format!("{:.1} GiB left free", free as f64 / (1u64 << 30) as f64),
                    _ => return Ok(s),
                },
                Err(e) => e.to_string(),
            };
            // (the larger session's buffers are freed before the smaller one allocates)
            eprintln!("ds4: prefill batches of {big} tokens do not fit ({why}); using {FALLBACK_CHUNK}");
            return CudaSession::new(m, SessionOptions { max_chunk: FALLBACK_CHUNK, ..opts });
        }
        CudaSession::new(m, opts)
    }

    /// Tokens per prefill batch.
    pub fn max_chunk(&self) -> usize {
        self.opts.max_chunk
    }

    pub fn new(m: Arc<CudaModel>, opts: SessionOptions) -> Result<CudaSession> {
        let d = m.dims.clone();
        let gpu = m.gpu.clone();
        if opts.ctx == 0 || opts.max_chunk == 0 {
            return Err(CudaError::Other("context and chunk must be positive".into()));
        }
        let tmax = opts.max_chunk.min(opts.ctx).max(1);
        let cap = ((d.window + tmax + 255) / 256) * 256;
        let comp_cap = opts.ctx / 4 + 2;
        let idx_ld = (opts.ctx / 4 + 2).max(1);
        // 32 columns per block (hc_step and hc_post_mix): enough blocks for a single decode
        // token, 128 partials per mix for the finish at D = 4096
        let hc_split = d.d.div_ceil(HC_COLS).max(1);
        let f4 = |n: usize| gpu.alloc(n * 4);
        // The compressors' frontiers (the open windows' kv and score rows) of every layer in one
        // allocation, so that a prefill batch that must run again (the f16 hc state's
        // saturation, `prefill_inner`) saves and restores them with one copy each way.
        let front_bytes: Vec<[usize; 4]> = (0..d.n_layer)
            .map(|l| {
                let r = d.ratios[l];
                let bytes = |ratio: usize, dim: usize| {
                    let (rows, w) = crate::state::Frontier::shape(ratio, dim);
                    rows * w * 4
                };
                let c = if r > 0 { bytes(r, d.dh) } else { 0 };
                let i = if r == 4 { bytes(4, d.di) } else { 0 };
                [c, c, i, i]
            })
            .collect();
        let align = |n: usize| n.div_ceil(256) * 256;
        let fronts = gpu.alloc_zeroed(front_bytes.iter().flatten().map(|&n| align(n)).sum::<usize>().max(256))?;
        let mut front_off = 0usize;
        let mut span = |n: usize| {
            (n > 0).then(|| {
                let s = Span { ptr: fronts.ptr + front_off as u64, bytes: n };
                front_off += align(n);
                s
            })
        };
        let mut st = Vec::new();
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            let raw = gpu.alloc_zeroed(cap * d.dh * 4)?;
            let comp = if r > 0 { Some(gpu.alloc_zeroed((opts.ctx / r + 2) * d.dh * 4)?) } else { None };
            let icomp = if r == 4 { Some(gpu.alloc_zeroed((opts.ctx / 4 + 2) * d.di * 4)?) } else { None };
            let [c, cs, i, is] = front_bytes[l];
            st.push(LayerState { raw, comp, skv: span(c), ssc: span(cs), icomp, iskv: span(i), issc: span(is) });
        }
        let t = tmax;
        // moe_small's batches: at most MOE_SMALL_MAX tokens and the session's batch
        let ts = t.min(MOE_SMALL_MAX);
        let n = d.n_hc;
        let nsmax = 16usize;
        let sc = Scratch {
            pos: f4(t)?,
            tok: f4(t)?,
            s: f4(t * n * d.d)?,
            xn: f4(t * d.d)?,
            post: f4(t * n)?,
            comb: f4(t * n * n)?,
            pdot: f4(t * hc_split * 24)?,
            pss: gpu.alloc(t.max(hc_gram(n)) * hc_split * 8)?,
            ticket: gpu.alloc_zeroed(4 * HC_STEP_MAX_T)?,
            hc_gs: if d.d % 32 == 0 && hc_gs_fits(&gpu, hc_split, HC_STEP_MAX_T, n) { Some(gpu.alloc_zeroed(8 * HC_STEP_MAX_T)?) } else { None },
            hcz: f4(HC_STEP_MAX_T * n * n)?,
            rticket: gpu.alloc_zeroed(4)?,
            qa: f4(t * d.rq)?,
            qr: f4(t * d.rq)?,
            kvp: f4(t * d.dh)?,
            q: f4(t * d.h * d.dh)?,
            ckv: f4(t * 2 * d.dh)?,
            csc: f4(t * 2 * d.dh)?,
            ikv: f4(t * 2 * d.di.max(1))?,
            isc: f4(t * 2 * d.di.max(1))?,
            iq: f4(t * d.hi.max(1) * d.di.max(1))?,
            iw: f4(t * d.hi.max(1))?,
            scores: f4(t * idx_ld)?,
            isel: f4(t * d.topk.max(1))?,
            po: f4(t.max(nsmax) * d.h * d.dh)?,
            pml: f4(t.max(nsmax) * d.h * 2)?,
            heads: f4(t * d.h * d.dh)?,
            low: f4(t * d.g * d.ro)?,
            attn_out: f4(t * d.d)?,
            rlog: f4(t * d.e)?,
            esel: f4(t * d.k)?,
            ewts: f4(t * d.k)?,
            g: f4(t * d.k * d.f)?,
            u: f4(t * d.k * d.f)?,
            gs: f4(t * d.f)?,
            us: f4(t * d.f)?,
            mid: f4(t * d.k * d.f)?,
            mids: f4(t * d.f)?,
            ypair: f4((t * d.k + 1) * d.d)?,
            shared: f4(t * d.d)?,
            ffn_out: f4(t * d.d)?,
            qx: Q8Buf::new(&gpu, d.d)?,
            qmid: Q8Buf::new(&gpu, (d.k + 1) * d.f)?,
            qqr: Q8Buf::new(&gpu, d.rq)?,
            qheads: Q8Buf::new(&gpu, d.h * d.dh)?,
            qlow: Q8Buf::new(&gpu, d.g * d.ro)?,
            grp_ids: {
                let ids: Vec<i32> = (0..d.g.max(1) as i32).collect();
                let b = gpu.alloc(ids.len() * 4)?;
                gpu.htod(b.ptr, &ids)?;
                b
            },
            kv16: if opts.precision == Precision::Fast && attn_tc_enabled() && attn_tc_shape_ok(d.h, d.dh, d.r) {
                // raw ring + the most compressed rows any layer can show (ratio 4)
                Some(gpu.alloc((cap + opts.ctx / 4 + 2) * d.dh * 2)?)
            } else {
                None
            },
            idx16: if opts.precision == Precision::Fast && opts.qat && idx_tc_enabled() && d.topk > 0 && idx_tc_shape_ok(d.hi, d.di) {
                let (b16, bsc) = idx_tc_bufs(t, d.hi, idx_ld);
                Some((gpu.alloc(b16)?, gpu.alloc(bsc)?))
            } else {
                None
            },
            dense16: if opts.precision == Precision::Fast && dense_blas_wanted() && t >= dense_min_t() && gpu.blas().is_some() {
                let (we, xe) = dense16_sizes(&m, t);
                let (wb, xb) = (gpu.alloc(we * 2)?, gpu.alloc(xe * 2)?);
                let desc = Dense16 { w16: wb.ptr, w_elems: we, x16: xb.ptr, x_elems: xe };
                Some((wb, xb, desc))
            } else {
                None
            },
            exp16: Default::default(),
            off: f4(d.e + 1)?,
            grp_cb: gpu.alloc_zeroed(moe_grp_scratch_bytes(tmax * d.k, d.e))?,
            pair_tok: f4(t * d.k)?,
            pair_of: f4(t * d.k)?,
            pair_w: f4(t * d.k)?,
            yhead: f4(d.d)?,
            logits: f4(d.vocab)?,
            // argmax_excl's index, ticket and 64-bit key (zero between launches)
            amax: gpu.alloc_zeroed(16)?,
            near: gpu.alloc_zeroed(near_max_bytes())?,
            hc_sat: gpu.alloc_zeroed(4)?,
            dec_part: f4(attn_dec_bufs(d.h, d.dh).0)?,
            dec_cnt: gpu.alloc_zeroed(attn_dec_bufs(d.h, d.dh).1 * 4)?,
            ks_part: gpu.alloc(KS_PART_BYTES)?,
            qx_small: Q8Buf::new(&gpu, ts * d.d)?,
            qmid_small: Q8Buf::new(&gpu, ts * d.k * d.f)?,
            pair_id: {
                let b = gpu.alloc(ts * d.k * 4)?;
                gpu.htod(b.ptr, &(0..(ts * d.k) as i32).collect::<Vec<i32>>())?;
                b
            },
            chunks: gpu.alloc(chunk_bound(d.e, ts * d.k, MVQM_NT) * 16)?,
            qx_dense: if opts.precision == Precision::Fast {
                let n = DENSE_SMALL_MAX * [d.d, d.rq, d.h * d.dh, d.g * d.ro, d.f].into_iter().max().unwrap_or(0);
                Some((Q8Buf::new(&gpu, n)?, n))
            } else {
                None
            },
            dense_chunks: {
                let tab = dense_chunk_table();
                let b = gpu.alloc(tab.len() * 16)?;
                gpu.htod(b.ptr, &tab.iter().flatten().copied().collect::<Vec<i32>>())?;
                b
            },
        };
        let ties = if opts.near_ties {
            let b = gpu.alloc_zeroed((4 + 4 * NEAR_TIE_CAP) * 4)?;
            gpu.htod(b.ptr + 4, &[NEAR_TIE_CAP as i32])?;
            Some(b)
        } else {
            None
        };
        // state init: score frontiers start at NEG_INF
        let mut sess = CudaSession {
            m: m.clone(),
            opts: SessionOptions { max_chunk: tmax, ..opts },
            cap,
            comp_cap,
            idx_ld,
            hc_split,
            tokens: Vec::new(),
            logits_host: None,
            logits_pin: None,
            has_logits: false,
            st,
            sc,
            jobs: Vec::new(),
            head_job: JobTable::new(&mut [])?,
            routers: Vec::new(),
            q8: false,
            jobsq: Vec::new(),
            graphs: HashMap::new(),
            graph_captures: 0,
            greedy_tok: Pinned::new(16)?,
            near_host: Pinned::new(near_max_read())?,
            greedy_ev: gpu.event()?,
            next_on_device: Default::default(),
            ties,
            x16_key: Default::default(),
            qx_dense_key: Default::default(),
            dense_min_t: dense_min_t(),
            exp_min_t: exp_min_t(),
            exp_blas_calls: Default::default(),
            fronts,
            fronts_bak: None,
            hc_f32: false,
            hc_sat_inject: false,
            hc_redos: 0,
            batch_sizes_run: Vec::new(),
        };
        // index buffers start valid (expert 0, row 0) so that timing ablations that skip the
        // kernels writing them (DS4_SKIP_KERNELS) still read in-range indices
        for b in [&sess.sc.esel, &sess.sc.isel, &sess.sc.ewts, &sess.sc.amax] {
            gpu.memset0(b.ptr, b.bytes)?;
        }
        sess.build_jobs()?;
        sess.build_routers()?;
        sess.build_jobsq()?;
        sess.reset()?;
        // prefill's f16 weight copies, once per model, after this context's buffers
        sess.m.ensure_w16();
        Ok(sess)
    }

    fn gpu(&self) -> &Gpu {
        &self.m.gpu
    }

    pub fn model(&self) -> &Arc<CudaModel> {
        &self.m
    }
    /// The first `n` indexer scores of the batch's first token as the last indexer left them
    /// (after a decode step: its last ratio-4 layer's), for ds4-bench `DS4_BENCH_SCORES`.
    pub fn scores_head(&self, n: usize) -> Result<Vec<f32>> {
        let mut v = vec![0f32; n.min(self.idx_ld)];
        self.gpu().dtoh(&mut v, self.sc.scores.ptr)?;
        Ok(v)
    }

    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
    pub fn ctx(&self) -> usize {
        self.opts.ctx
    }
    /// Whether decode runs the FFN matvecs with int8 activations (Precision::Fast, every FFN
    /// weight of a supported type, DS4_DECODE_Q8 not 0).
    pub fn decode_q8(&self) -> bool {
        self.q8
    }

    /// Let batches of at least `min_t` tokens use the cuBLAS dense and routed-expert paths
    /// (Precision::Fast; within what DS4_GEMM_DENSE / DS4_GEMM_EXP allow and the dense scratch
    /// that `new` allocated). For checks on small inputs: the defaults keep small batches on
    /// the built-in kernels for speed only.
    pub fn set_blas_min_t(&mut self, min_t: usize) {
        self.dense_min_t = min_t;
        self.exp_min_t = min_t;
    }

    /// Routed-expert matrices multiplied through cuBLAS since the session was made.
    pub fn exp_blas_calls(&self) -> usize {
        self.exp_blas_calls.get()
    }

    /// Forget everything: position 0, empty frontiers.
    pub fn reset(&mut self) -> Result<()> {
        self.m.gpu.bind()?;
        let gpu = self.m.gpu.clone();
        for s in &self.st {
            if let (Some(kv), Some(sc)) = (s.skv, s.ssc) {
                gpu.memset0(kv.ptr, kv.bytes)?;
                fill_neg_inf(&gpu, sc)?;
            }
            if let (Some(kv), Some(sc)) = (s.iskv, s.issc) {
                gpu.memset0(kv.ptr, kv.bytes)?;
                fill_neg_inf(&gpu, sc)?;
            }
        }
        if let Some(b) = &self.ties {
            gpu.memset0(b.ptr, 4)?;
        }
        gpu.sync()?;
        self.tokens.clear();
        self.logits_host = None;
        self.has_logits = false;
        Ok(())
    }

    /// A prefill of fixed tokens, then `reset`: a full batch and a quarter batch (cuBLAS picks
    /// its GEMM kernels by size), within the context, so that the kernels a prefill uses are
    /// loaded and run once.
    pub fn warm_up(&mut self) -> Result<()> {
        let n = self.warm_up_tokens();
        if n == 0 {
            return Ok(());
        }
        let t0 = std::time::Instant::now();
        self.reset()?;
        self.prefill(&self.warm_tokens(n))?;
        self.reset()?;
        eprintln!("ds4: GPU warm-up ({n}-token prefill) {:.2} s", t0.elapsed().as_secs_f64());
        Ok(())
    }

    /// warm_up's prompt length: a full batch and a quarter, within the context.
    fn warm_up_tokens(&self) -> usize {
        (self.opts.max_chunk + self.opts.max_chunk / 4).min(self.opts.ctx.saturating_sub(1))
    }

    /// One prefill batch of each of `sizes` tokens from position 0 that this session has not
    /// run yet (those above the single-step path's step_max, within the context), then `reset`.
    /// Why: cuBLAS picks its GEMM kernels by the batch's rows and loads each on first use
    /// (~0.3-1.8 ms a kernel in session 58's trace), so a timed batch of a size warm_up did not
    /// run pays that inside the timing (ds4-bench: an 8K prompt after an 8208-token warm-up).
    pub fn warm_up_batches(&mut self, sizes: &[usize]) -> Result<()> {
        let sizes: Vec<usize> =
            sizes.iter().copied().filter(|&n| n > self.opts.step_max && n < self.opts.ctx && !self.batch_sizes_run.contains(&n)).collect();
        if sizes.is_empty() {
            return Ok(());
        }
        let t0 = std::time::Instant::now();
        for &n in &sizes {
            self.reset()?;
            self.prefill(&self.warm_tokens(n))?;
        }
        self.reset()?;
        eprintln!("ds4: GPU warm-up (batches of {sizes:?} tokens) {:.2} s", t0.elapsed().as_secs_f64());
        Ok(())
    }

    /// warm_up's fixed tokens.
    fn warm_tokens(&self, n: usize) -> Vec<u32> {
        let vocab = self.m.dims.vocab.max(1);
        (0..n).map(|i| ((i * 7919) % vocab) as u32).collect()
    }

    fn ties_ptr(&self) -> u64 {
        self.ties.as_ref().map_or(0, |b| b.ptr)
    }

    /// Near-tie decisions recorded since the last [`reset`](Self::reset) (needs
    /// `opts.near_ties`; empty otherwise): one entry per (position, layer, kind) with the
    /// smallest margin, sorted. An overflowing list is an error (it would be incomplete).
    pub fn near_ties(&self) -> Result<Vec<crate::cpu::NearTie>> {
        let Some(b) = &self.ties else { return Ok(Vec::new()) };
        self.m.gpu.bind()?;
        let gpu = self.gpu();
        gpu.sync()?;
        let mut head = [0i32; 4];
        gpu.dtoh(&mut head, b.ptr)?;
        let n = head[0].max(0) as usize;
        if n > NEAR_TIE_CAP {
            return Err(CudaError::Other(format!("near-tie list overflow: {n} > {NEAR_TIE_CAP} entries")));
        }
        let mut raw = vec![0i32; 4 * n];
        gpu.dtoh(&mut raw, b.ptr + 16)?;
        // Slots come in atomic (arbitrary) order: sort, keep the smallest margin per key.
        let mut e: Vec<(usize, usize, usize, f32)> =
            raw.chunks_exact(4).map(|c| (c[1] as usize, c[0] as usize, c[2] as usize, f32::from_bits(c[3] as u32))).collect();
        e.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)).then(a.3.total_cmp(&b.3)));
        e.dedup_by(|x, y| (x.0, x.1, x.2) == (y.0, y.1, y.2));
        Ok(e.into_iter()
            .map(|(pos, layer, kind, margin)| crate::cpu::NearTie { layer, pos, what: NEAR_TIE_KINDS[kind.min(4)], margin })
            .collect())
    }

    fn build_jobs(&mut self) -> Result<()> {
        let d = self.m.dims.clone();
        let sc = &self.sc;
        let job = MvJob::plain;
        let mut all = Vec::new();
        for l in 0..d.n_layer {
            let ly = &self.m.layers[l];
            let xn = sc.xn.ptr;
            let (a, b) = attn_side_mats(ly, sc);
            let a: Vec<_> = a.into_iter().map(|(w, x, y)| job(w, x, y)).collect();
            let b: Vec<_> = b.into_iter().map(|(w, x, y)| job(w, x, y)).collect();
            let bi = b.get(1).map(|&j| JobTable::new(&mut [j])).transpose()?;
            let mut oa = job(ly.out_a.wmat(), sc.heads.ptr, sc.low.ptr);
            oa.x_grp_rows = d.ro as i32;
            if d.ro % MV_ROWS_PER_BLOCK != 0 {
                return Err(CudaError::Other("output LoRA rank must be a multiple of 16".into()));
            }
            let c = vec![oa];
            let dd = vec![job(ly.out_b.wmat(), sc.low.ptr, sc.attn_out.ptr)];
            let e = vec![
                job(ly.gate_inp.wmat(), xn, sc.rlog.ptr),
                job(ly.gate_sh.wmat(), xn, sc.gs.ptr),
                job(ly.up_sh.wmat(), xn, sc.us.ptr),
            ];
            let mut ge = job(ly.gate_exps.wmat(), xn, sc.g.ptr);
            ge.nslots = d.k as i32;
            ge.sel = sc.esel.ptr;
            let mut ue = job(ly.up_exps.wmat(), xn, sc.u.ptr);
            ue.nslots = d.k as i32;
            ue.sel = sc.esel.ptr;
            let f = vec![ge, ue];
            let mk = |mut v: Vec<MvJob>| JobTable::new(&mut v);
            all.push(LayerJobs { a: mk(a)?, b: mk(b)?, bi, c: mk(c)?, d: mk(dd)?, e: mk(e)?, f: mk(f)? });
        }
        self.jobs = all;
        self.head_job = JobTable::new(&mut [job(self.m.output.wmat(), sc.yhead.ptr, sc.logits.ptr)])?;
        Ok(())
    }

    fn build_routers(&mut self) -> Result<()> {
        let gpu = self.m.gpu.clone();
        let sc = &self.sc;
        self.routers = self.m.layers.iter().map(|ly| JobTable2::new(&gpu, &mut [MvJob2::plain(ly.gate_inp.wmat(), sc.xn.ptr, sc.rlog.ptr)])).collect::<Result<_>>()?;
        Ok(())
    }

    /// int8-activation decode FFN jobs, when enabled and every FFN weight has a type `mvq`
    /// handles (otherwise the f32 paths run).
    fn build_jobsq(&mut self) -> Result<()> {
        let on = self.opts.precision == Precision::Fast && std::env::var("DS4_DECODE_Q8").map(|v| v != "0").unwrap_or(true);
        let d = self.m.dims.clone();
        let ok = on
            && d.d % 256 == 0
            && d.f % 256 == 0
            && self.m.layers.iter().all(|ly| {
                [&ly.gate_exps, &ly.up_exps, &ly.down_exps, &ly.gate_sh, &ly.up_sh, &ly.down_sh].iter().all(|m| mvq_type_ok(m.wmat().ty))
            });
        if !ok {
            return Ok(());
        }
        let sc = &self.sc;
        let qx = sc.qx.at(0);
        let qm = sc.qmid.at(0);
        let qms = sc.qmid.at(d.k * d.f);
        let attn_q8 = std::env::var("DS4_DECODE_Q8_ATTN").map(|v| v != "0").unwrap_or(true)
            && self.m.layers.iter().all(|ly| attn_q8_fits(&d, ly.out_a.rows, [&ly.q_b, &ly.out_a, &ly.out_b].map(|m| m.wmat().ty)));
        let mut all = Vec::new();
        for l in 0..d.n_layer {
            let ly = &self.m.layers[l];
            let clamp = d.clamp[l];
            let mut f = MvJobQ::paired(ly.gate_exps.wmat(), ly.up_exps.wmat(), qx, sc.mid.ptr, clamp);
            f.nslots = d.k as i32;
            f.sel = sc.esel.ptr;
            f.wts = sc.ewts.ptr;
            let fs = MvJobQ::paired(ly.gate_sh.wmat(), ly.up_sh.wmat(), qx, sc.mids.ptr, clamp);
            let mut gd = MvJobQ::plain(ly.down_exps.wmat(), qm, sc.ypair.ptr);
            gd.nslots = d.k as i32;
            gd.sel = sc.esel.ptr;
            gd.x_slot = d.f as i64;
            let gs = MvJobQ::plain(ly.down_sh.wmat(), qms, sc.ypair.ptr + (d.k * d.d * 4) as u64);
            let att = if attn_q8 { Some(self.attn_jobsq(l)?) } else { None };
            let a = attn_a_list(ly, sc).into_iter().map(|(_, m8, y)| m8.map(|m| MvJobQ::plain(m.wmat(), qx, y))).collect::<Option<Vec<_>>>();
            let a = match a {
                Some(mut a) if super::weights::attn_a_q8() => Some(JobTableQ::new(&mut a)?),
                _ => None,
            };
            // (gate/up writing the mids quantized, as out_a does, measured 1.5 % slower in the
            // decode graph than the quant_q8 launch: the shared expert's gate/up then needs 32-row
            // blocks, 64 long ones, and the launch a second partial wave; session 9)
            // the shared expert's down first: its blocks stream 70 KB (32 Q8_0 rows of 2048
            // columns) against 21.5 KB for a routed block (Q2_K), so last they were the launch's
            // tail (blocks start in index order); DS4_DOWN_SH_FIRST=0: after the routed ones
            let g = if down_sh_first() { JobTableQ::new(&mut [gs, gd])? } else { JobTableQ::new(&mut [gd, gs])? };
            // (the shared gate/up first lost: 152.6 against 156.9 t/s at 8K, session 15)
            all.push(LayerJobsQ { f: JobTableQ::new(&mut [f, fs])?, g, att, a });
        }
        self.jobsq = all;
        self.q8 = true;
        Ok(())
    }

    /// Layer `l`'s int8 attention-side jobs (see `AttnJobsQ`).
    fn attn_jobsq(&self, l: usize) -> Result<AttnJobsQ> {
        let d = &self.m.dims;
        let sc = &self.sc;
        let ly = &self.m.layers[l];
        let mut b = vec![MvJobQ::plain(ly.q_b.wmat(), sc.qqr.at(0), sc.q.ptr)];
        let (mut ib, mut bi) = (None, None);
        // (the indexer's F16 q_b through its Q8_0 copy when the model has one: half the bytes
        // on the ratio-4 layers' indexer branch, whose chain attention waits for)
        if let Some(m) = ly.idx_q_b8.as_ref().or(ly.idx_q_b.as_ref()) {
            if m.wmat().ty == 8 {
                let j = MvJobQ::plain(m.wmat(), sc.qqr.at(0), sc.iq.ptr);
                b.push(j);
                ib = Some(JobTableQ::new(&mut [j])?);
            } else {
                bi = Some(JobTable::new(&mut [MvJob::plain(m.wmat(), sc.qr.ptr, sc.iq.ptr)])?);
            }
        }
        let mut c = MvJobQ::row_groups(&ly.out_a, d.g, sc.qheads.at(0), sc.low.ptr, sc.grp_ids.ptr);
        (c.yq, c.yd) = sc.qlow.at(0);
        let dd = MvJobQ::plain(ly.out_b.wmat(), sc.qlow.at(0), sc.attn_out.ptr);
        Ok(AttnJobsQ { b: JobTableQ::new(&mut b)?, ib, bi, c: JobTableQ::new(&mut [c])?, d: JobTableQ::new(&mut [dd])? })
    }

    // ---------------------------------------------------------------------------------------
    // building blocks
    // ---------------------------------------------------------------------------------------

    /// The dense product (or `groups` block-diagonal ones, see blas::DenseCall) on cuBLAS when
    /// this session has the dense path and the batch and shape qualify; false: not run.
    /// The cuBLAS dense call for this product when it runs on cuBLAS (the scratch, the
    /// handle and the batch size allow it), with its scratch.
    #[allow(clippy::too_many_arguments)]
    fn dense_call(&self, w: WMat, groups: usize, x: DevPtr, ldx: usize, y: DevPtr, ldy: usize, t: usize) -> Option<(DenseCall, Dense16, &Blas)> {
        let (_, _, s) = self.sc.dense16.as_ref()?;
        let blas = self.gpu().blas()?;
        let call = DenseCall { w, groups, x, ldx, y, ldy, t, y16: false, w16: self.m.w16_of(w) };
        (t >= self.dense_min_t && call.ok(s)).then_some((call, *s, blas))
    }

    fn gemm_blas(&self, w: WMat, groups: usize, x: DevPtr, ldx: usize, y: DevPtr, ldy: usize, t: usize) -> Result<bool> {
        self.gemm_blas_to(w, groups, x, ldx, y, ldy, t, false)
    }

    /// gemm_blas with y as f16 when `y16` (then false also when the f16 y breaks a rule).
    #[allow(clippy::too_many_arguments)]
    fn gemm_blas_to(&self, w: WMat, groups: usize, x: DevPtr, ldx: usize, y: DevPtr, ldy: usize, t: usize, y16: bool) -> Result<bool> {
        let Some((call, s, blas)) = self.dense_call(w, groups, x, ldx, y, ldy, t) else { return Ok(false) };
        let call = DenseCall { y16, ..call };
        let s = &s;
        if !call.ok(s) {
            return Ok(false);
        }
        // Several projections read the same activations (q_a, kv and the compressors read xn;
        // q_b and idx_q_b read qr; the router and shared expert read xn): they reuse the f16
        // copy when it is of the same x and no device work was queued since it was made.
        let key = call.x_key();
        let ready = self.x16_key.get() == Some((key, self.gpu().work_seq()));
        call.run(self.gpu(), blas, s, ready)?;
        // (a product that wrote over its own input leaves nothing to reuse)
        let (xe, ye) = (x + (t * ldx * 4) as u64, y + (t * ldy * if y16 { 2 } else { 4 }) as u64);
        let overlap = x < ye && y < xe;
        self.x16_key.set(if overlap { None } else { Some((key, self.gpu().work_seq())) });
        Ok(true)
    }

    /// The cuBLAS routed-expert path for this batch of `t` tokens, when it applies: the handle,
    /// the f16 scratch and moe_group's slot offsets copied to the host (one small copy and
    /// sync per layer; prefill is not graph-captured). Call after moe_group has been queued.
    fn exp_blas(&self, t: usize) -> Result<Option<(&Blas, Dense16, Vec<i32>)>> {
        if !self.exp_blas_on(t) {
            return Ok(None);
        }
        let Some(blas) = self.gpu().blas() else { return Ok(None) };
        let Some(s) = self.exp16() else { return Ok(None) };
        let d = &self.m.dims;
        let mut off = vec![0i32; d.e + 1];
        self.gpu().dtoh(&mut off, self.sc.off.ptr)?;
        // every token has k slots, in expert order
        if off[0] != 0 || off.windows(2).any(|w| w[1] < w[0]) || off[d.e] as usize != t * d.k {
            return Err(CudaError::Other(format!("moe_group: inconsistent slot offsets (total {}, expected {})", off[d.e], t * d.k)));
        }
        Ok(Some((blas, s, off)))
    }

    /// `DS4_MOE_STATS=1` (diagnostic, one copy and sync per layer): layer l's routing balance
    /// for this batch on stderr: experts used, the largest and the median nonzero slot count,
    /// and the 256- and 128-token tiles the grouped GEMMs run against the minimum (full tiles).
    fn print_moe_stats(&self, l: usize, t: usize) -> Result<()> {
        let d = &self.m.dims;
        let mut off = vec![0i32; d.e + 1];
        self.gpu().dtoh(&mut off, self.sc.off.ptr)?;
        let mut n: Vec<usize> = off.windows(2).map(|w| (w[1] - w[0]).max(0) as usize).filter(|&c| c > 0).collect();
        n.sort_unstable();
        let tiles = |b: usize| n.iter().map(|c| c.div_ceil(b)).sum::<usize>();
        let tk = t * d.k;
        eprintln!(
            "ds4: moe layer {l}: {t} tokens, {} of {} experts, slots max {} median {}, tiles {QS_NX}: {} (min {}), {}: {} (min {})",
            n.len(),
            d.e,
            n.last().copied().unwrap_or(0),
            n.get(n.len() / 2).copied().unwrap_or(0),
            tiles(QS_NX),
            tk.div_ceil(QS_NX),
            QS_NX / 2,
            tiles(QS_NX / 2),
            tk.div_ceil(QS_NX / 2)
        );
        eprintln!("ds4: moe layer {l}: {}", moe_tile_stats(&n));
        Ok(())
    }

    /// Whether `exp_blas(t)` gives the cuBLAS routed-expert path (known before moe_group runs;
    /// allocates the expert scratch on first use).
    fn exp_blas_on(&self, t: usize) -> bool {
        self.opts.precision == Precision::Fast && exp_blas_wanted() && t >= self.exp_min_t && self.gpu().blas().is_some() && self.exp16().is_some()
    }

    /// The expert scratch, allocated on first use for `max_chunk` tokens, or None (one log
    /// line) when it does not fit in free memory with 1 GiB to spare.
    fn exp16(&self) -> Option<Dense16> {
        let cell = self.sc.exp16.get_or_init(|| {
            let gpu = self.gpu();
            let (we, xe) = exp16_sizes(&self.m, self.opts.max_chunk);
            let need = (we + xe) * 2;
            let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
            if let Some(free) = gpu.free_mem() {
                if need + (1 << 30) > free {
                    eprintln!("ds4: routed experts stay on the built-in kernels: the cuBLAS scratch needs {:.1} GiB, {:.1} GiB free", gib(need), gib(free));
                    return None;
                }
            }
            match (gpu.alloc(we * 2), gpu.alloc(xe * 2)) {
                (Ok(wb), Ok(xb)) => {
                    let desc = Dense16 { w16: wb.ptr, w_elems: we, x16: xb.ptr, x_elems: xe };
                    Some((wb, xb, desc))
                }
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("ds4: routed experts stay on the built-in kernels: cuBLAS scratch of {:.1} GiB not allocated ({e})", gib(need));
                    None
                }
            }
        });
        cell.as_ref().map(|(_, _, s)| *s)
    }

    /// One routed-expert matrix: on cuBLAS when `eb` holds the path and the call fits its
    /// scratch, else the grouped kernel. `x_ready`: eb's x16 already holds these inputs.
    /// Returns whether cuBLAS ran it (its x16 then holds the inputs).
    #[allow(clippy::too_many_arguments)]
    fn exp_gemm(&self, eb: &Option<(&Blas, Dense16, Vec<i32>)>, w: WMat, x: DevPtr, ldx: usize, gather: DevPtr, y: DevPtr, ldy: usize, t: usize, x_ready: bool) -> Result<bool> {
        let d = &self.m.dims;
        if let Some((blas, s, off)) = eb {
            let call = ExpCall { w, n_exp: d.e, x, ldx, gather, y, ldy };
            if call.ok(s, t * d.k) {
                call.run(self.gpu(), blas, s, self.sc.off.ptr, off, x_ready)?;
                self.exp_blas_calls.set(self.exp_blas_calls.get() + 1);
                return Ok(true);
            }
        }
        self.gemm(w, x, ldx, y, ldy, t, Some((self.sc.off.ptr, gather, d.e)))?;
        Ok(false)
    }

    /// A routed-expert matrix on the grouped gemm_q with f16 activations `x16` (packed rows
    /// of `ldx` halfs, read through `gather` when it is not 0; see gq_xh_ok); `y16`: y as f16
    /// rows (GQ_FLAG_Y16).
    #[allow(clippy::too_many_arguments)]
    fn gemm_exp_xh(&self, w: WMat, x16: DevPtr, ldx: usize, gather: DevPtr, y: DevPtr, ldy: usize, t: usize, qr: Option<GqKernel>, y16: bool) -> Result<()> {
        let d = &self.m.dims;
        let a = GemmArgs { flags: gemm_q_flags() | GQ_FLAG_XH | if y16 { GQ_FLAG_Y16 } else { 0 }, ..self.exp_xh_args(w, x16, ldx, gather, y, ldy, t) };
        if let Some(kind) = qr {
            return launch_gemm_q_kernel(self.gpu(), a, d.e, 0, kind);
        }
        let bn = gemm_q_bn(self.gpu(), w.rows as usize, t, Some((t * d.k) as f64 / d.e as f64));
        launch_gemm_q(self.gpu(), a, d.e, bn)
    }

    /// The GemmArgs of a routed-expert GEMM on f16 activations (gemm_exp_xh, the fused gate + up):
    /// the batch's expert groups, f16 rows at x16 (gathered by `gather` when non-zero).
    #[allow(clippy::too_many_arguments)]
    fn exp_xh_args(&self, w: WMat, x16: DevPtr, ldx: usize, gather: DevPtr, y: DevPtr, ldy: usize, t: usize) -> GemmArgs {
        GemmArgs { w, x: x16, y, grp_off: self.sc.off.ptr, gather, ldx: ldx as i32, ldy: ldy as i32, t: t as i32, flags: gemm_q_flags() | GQ_FLAG_XH }
    }

    fn gemm(&self, w: WMat, x: DevPtr, ldx: usize, y: DevPtr, ldy: usize, t: usize, grp: Option<(DevPtr, DevPtr, usize)>) -> Result<()> {
        if grp.is_none() && self.dense_small_ok(&w, ldx, ldy, t) {
            if let Some(q) = self.dense_small_q(x, ldx, w.cols as usize, t, w.ty)? {
                return self.dense_small_run(&[(w, 0, y, ldy)], q, ldx, t);
            }
        }
        if grp.is_none() && self.gemm_blas(w, 1, x, ldx, y, ldy, t)? {
            return Ok(());
        }
        let (off, gather, nz) = grp.unwrap_or((0, 0, 1));
        let a = GemmArgs { w, x, y, grp_off: off, gather, ldx: ldx as i32, ldy: ldy as i32, t: t as i32, flags: gemm_q_flags() };
        let (name, bm) = match self.opts.precision {
            Precision::Reference => ("gemm_f32", 64),
            Precision::Fast if gemm_old() || (grp.is_some() && gemm_exp_h()) => ("gemm_h", 128),
            Precision::Fast => {
                // grouped calls: every token picks k of the nz experts
                let avg = grp.map(|_| (t * self.m.dims.k) as f64 / nz as f64);
                let bn = gemm_q_bn(self.gpu(), w.rows as usize, t, avg);
                // a plain launch with few tiles: split over K
                let ks = if grp.is_none() { gq_ks(self.gpu().sm_count.max(1) as usize, w.rows as usize, w.cols as usize, t, bn) } else { 1 };
                return if ks > 1 { self.gemm_ks(a, bn, ks) } else { launch_gemm_q(self.gpu(), a, nz, bn) };
            }
        };
        let grid = (((w.rows as usize + bm - 1) / bm) as u32, ((t + 63) / 64) as u32, nz as u32);
        self.gpu().launch(name, grid, 256, 0, Args::new().a(a))
    }

    /// Whether a dense projection of `w` over a `t`-token batch (inputs ldx values apart,
    /// outputs ldy apart) runs on mvqm (dense_small_max; Fast precision; the weight types mvqm
    /// takes).
    fn dense_small_ok(&self, w: &WMat, ldx: usize, ldy: usize, t: usize) -> bool {
        let cols = w.cols as usize;
        self.dense_small_batch(t) && mvq_type_ok(w.ty) && cols % 256 == 0 && ldx % 32 == 0 && ldx >= cols && ldy >= w.rows as usize
    }

    /// dense_small's int8 activations for weights of type `ty`: the `t` rows of `cols` values
    /// at `x`, `ldx` apart, quantized as one contiguous span ((t - 1) ldx + cols values;
    /// IQ2_XXS weights take quant_q8p's order, launch_quant_chunked). The span quantized last is reused while no other device work was
    /// queued since it was read (q_a and kv read the same xn); its (values, factors) at x, or
    /// None when the span does not fit the scratch.
    fn dense_small_q(&self, x: DevPtr, ldx: usize, cols: usize, t: usize, ty: i32) -> Result<Option<(u64, u64)>> {
        let perm = ty == 16;
        let Some((qb, cap)) = &self.sc.qx_dense else { return Ok(None) };
        let span = (t - 1) * ldx + cols;
        if span > *cap {
            return Ok(None);
        }
        let gpu = self.gpu();
        let hit = matches!(self.qx_dense_key.get(), Some(((x0, n0, p0), seq)) if seq == gpu.work_seq() && x0 == x && n0 >= span && p0 == perm);
        if !hit {
            launch_quant_chunked(gpu, ty, x, span, qb.at(0))?;
            self.qx_dense_key.set(Some(((x, span, perm), gpu.work_seq())));
        }
        Ok(Some(qb.at(0)))
    }

    /// Projections of the same `t` input rows at `x` (ldx apart): per matrix (its GEMM form,
    /// its mvqm form if any (the matrix itself or its Q8_0 copy), y, ldy). Those whose mvqm form
    /// dense_small takes run in one launch over x quantized once, the others as GEMMs.
    fn dense_small_group(&self, mats: &[(&super::weights::GMat, Option<WMat>, DevPtr, usize)], x: DevPtr, ldx: usize, t: usize) -> Result<()> {
        let take = |&(_, q, _, ldy): &(&super::weights::GMat, Option<WMat>, DevPtr, usize)| q.filter(|w| w.ty == 8 && self.dense_small_ok(w, ldx, ldy, t));
        let small: Vec<_> = mats.iter().filter_map(|m| take(m).map(|w| (w, 0, m.2, m.3))).collect();
        let mut ran = false;
        if !small.is_empty() && small.len() <= MAX_JOBS {
            let cols = small.iter().map(|m| m.0.cols as usize).max().unwrap_or(0);
            if let Some(q) = self.dense_small_q(x, ldx, cols, t, 8)? {
                self.dense_small_run(&small, q, ldx, t)?;
                ran = true;
            }
        }
        for m in mats {
            if !(ran && take(m).is_some()) {
                self.gemm(m.0.wmat(), x, ldx, m.2, m.3, t, None)?;
            }
        }
        Ok(())
    }

    /// mvqm over `t` tokens as one expert's pairs (dense_small): per matrix (w, the value
    /// offset of its input inside each quantized row, y, ldy), the rows of the quantized input
    /// `q` ldx values apart; one launch. The quantized span stays valid for the next call
    /// unless an output overwrote the rows it came from.
    fn dense_small_run(&self, mats: &[(WMat, usize, DevPtr, usize)], q: (u64, u64), ldx: usize, t: usize) -> Result<()> {
        let gpu = self.gpu();
        let tab = self.sc.dense_chunks.ptr + (dense_chunk_at(t) * 16) as u64;
        let mut jobs: Vec<MvJobQ> = mats
            .iter()
            .map(|&(w, xo, y, ldy)| {
                let qo = (q.0 + xo as u64, q.1 + (xo / 32 * 8) as u64);
                MvJobQ { ldy: ldy as i64, ..MvJobQ::plain(w, qo, y).chunked_mma(tab, t.div_ceil(MVQM_NT), 0, 0, ldx) }.split_k(2 * gpu.sm_count.max(1) as usize)
            })
            .collect();
        // one kernel per launch: where any job splits its K, every job splits it (at least 2)
        if jobs.iter().any(|j| j.wk > 1) {
            jobs.iter_mut().for_each(|j| j.wk = j.wk.max(2));
        }
        JobTableQ::chunked_mma(&mut jobs)?.run(gpu, jobs.len())?;
        if let Some(((x0, n0, p0), _)) = self.qx_dense_key.get() {
            let xe = x0 + (n0 * 4) as u64;
            let hit = mats.iter().any(|&(w, _, y, ldy)| y < xe && x0 < y + (((t - 1) * ldy + w.rows as usize) * 4) as u64);
            self.qx_dense_key.set(if hit { None } else { Some(((x0, n0, p0), gpu.work_seq())) });
        }
        Ok(())
    }

    /// A plain gemm_q64 / gemm_q128 launch split over K in `ks` parts (gq_ks): each part's
    /// partial sums into ks_part, then gq_ks_sum adds them in order into y.
    fn gemm_ks(&self, a: GemmArgs, bn: usize, ks: usize) -> Result<()> {
        let (t, rows) = (a.t as usize, a.w.rows as usize);
        let part = GemmArgs { y: self.sc.ks_part.ptr, ldy: rows as i32, flags: a.flags | ((ks as i32 - 1) << GQ_KS_SHIFT), ..a };
        launch_gemm_q(self.gpu(), part, 1, bn)?;
        let n = t * rows;
        let args = Args::new().a(self.sc.ks_part.ptr).a(ks as i32).a(t as i32).a(rows as i32).a(a.y).a(a.ldy);
        self.gpu().launch("gq_ks_sum", (n.div_ceil(256) as u32, 1, 1), 256, 0, args)
    }

    /// Whether a prefill batch of `t` tokens runs its routed experts on the int8 matvec
    /// (moe_small_max; Fast precision with the int8 decode FFN; the opt-in cuBLAS expert path
    /// keeps its batches).
    pub fn moe_small_batch(&self, t: usize) -> bool {
        !self.jobsq.is_empty() && t <= moe_small_max() && !self.exp_blas_on(t)
    }

    /// Whether a prefill batch of `t` tokens may run its dense projections on mvqm
    /// (dense_small_max; each projection also needs a weight type mvqm takes). Not where the
    /// session's cuBLAS dense path takes the batch (from dense_min_t: 128 by default; the
    /// fixture check's cuBLAS session sets 1).
    pub fn dense_small_batch(&self, t: usize) -> bool {
        self.sc.qx_dense.is_some() && t >= 1 && t <= dense_small_max() && !(self.sc.dense16.is_some() && t >= self.dense_min_t)
    }

    /// A small prefill batch's routed experts on the int8 matvec (see moe_small_max): xn
    /// quantized, gate / up paired with each pair's routing weight -> mid, the mids quantized,
    /// down -> ypair. TokenMajor: one slot per (token, expert) (rows token-major: pair_id maps
    /// them); the chunked layouts: moe_group's pairs in chunks of one expert (each pair's token
    /// through xmap, its weight pair_w; pair_of maps the rows back).
    fn moe_small(&self, l: usize, t: usize, clamp: f32) -> Result<()> {
        let (d, sc, ly, gpu) = (&self.m.dims, &self.sc, &self.m.layers[l], self.gpu());
        let n = t * d.k;
        let qx = sc.qx_small.at(0);
        let qm = sc.qmid_small.at(0);
        let (gw, uw, dw) = (ly.gate_exps.wmat(), ly.up_exps.wmat(), ly.down_exps.wmat());
        let mode = moe_small_mode(t);
        if mode == MoeSmall::TokenMajor {
            launch_quant_q8(gpu, sc.xn.ptr, t * d.d, 0, 0, qx.0, qx.1)?;
            let gu = MvJobQ { nslots: n as i32, sel: sc.esel.ptr, wts: sc.ewts.ptr, x_slot: d.d as i64, x_div: d.k as i32, ..MvJobQ::paired(gw, uw, qx, sc.mid.ptr, clamp) };
            JobTableQ::new(&mut [gu])?.run(gpu, 1)?;
            launch_quant_q8(gpu, sc.mid.ptr, n * d.f, 0, 0, qm.0, qm.1)?;
            let dn = MvJobQ { nslots: n as i32, sel: sc.esel.ptr, x_slot: d.f as i64, ..MvJobQ::plain(dw, qm, sc.ypair.ptr) };
            return JobTableQ::new(&mut [dn])?.run(gpu, 1);
        }
        // the pairs grouped by expert, in chunks of MVQM_NT: each expert's weights decoded once
        // per chunk (q8.cuh mvqm / mvqs)
        let staged = |ty: i32| mode == MoeSmall::ChunkedStaged && mvqs_type_ok(ty);
        self.moe_group_pairs(t)?;
        let bound = chunk_bound(d.e, n, MVQM_NT);
        launch_pair_chunks(gpu, sc.off.ptr, d.e, MVQM_NT, bound, sc.chunks.ptr)?;
        let table = |j: MvJobQ, wts: u64, xmap: u64, x_slot: usize| -> Result<JobTableQ> {
            if staged(j.w.ty) {
                JobTableQ::chunked_staged(&mut [j.chunked_staged(sc.chunks.ptr, bound, wts, xmap, x_slot)])
            } else {
                JobTableQ::chunked_mma(&mut [j.chunked_mma(sc.chunks.ptr, bound, wts, xmap, x_slot)])
            }
        };
        launch_quant_chunked(gpu, gw.ty, sc.xn.ptr, t * d.d, qx)?;
        table(MvJobQ::paired(gw, uw, qx, sc.mid.ptr, clamp), sc.pair_w.ptr, sc.pair_tok.ptr, d.d)?.run(gpu, 1)?;
        launch_quant_chunked(gpu, dw.ty, sc.mid.ptr, n * d.f, qm)?;
        table(MvJobQ::plain(dw, qm, sc.ypair.ptr), 0, 0, d.f)?.run(gpu, 1)
    }

    /// moe_group's (token, expert) pairs of a prefill batch of `t` tokens, grouped by expert:
    /// off (per-expert offsets), pair_tok, pair_of, pair_w.
    fn moe_group_pairs(&self, t: usize) -> Result<()> {
        let (d, sc, gpu) = (&self.m.dims, &self.sc, self.gpu());
        let args = Args::new()
            .a(sc.esel.ptr)
            .a(sc.ewts.ptr)
            .a(t as i32)
            .a(d.k as i32)
            .a(d.e as i32)
            .a(sc.off.ptr)
            .a(sc.pair_tok.ptr)
            .a(sc.pair_of.ptr)
            .a(sc.pair_w.ptr);
        if moe_group2_ok(d.e) && moe_grp_split() {
            launch_moe_grp(gpu, sc.esel.ptr, sc.ewts.ptr, t, d.k, d.e, sc.off.ptr, sc.grp_cb.ptr, sc.pair_tok.ptr, sc.pair_of.ptr, sc.pair_w.ptr)
        } else if moe_group2_ok(d.e) {
            gpu.launch("moe_group2", (1, 1, 1), 1024, moe_group2_smem(d.e) as u32, args)
        } else {
            gpu.launch("moe_group", (1, 1, 1), (((d.e + 31) / 32 * 32).min(1024)) as u32, (d.e * 4) as u32, args)
        }
    }

    /// The hyper-connection state and partial-sum buffers of this session.
    fn hc_bufs(&self) -> HcBufs {
        let (d, sc) = (&self.m.dims, &self.sc);
        HcBufs {
            s: sc.s.ptr,
            post: sc.post.ptr,
            comb: sc.comb.ptr,
            pdot: sc.pdot.ptr,
            pss: sc.pss.ptr,
            ticket: sc.ticket.ptr,
            gs: sc.hc_gs.as_ref().map(|b| b.ptr).unwrap_or(0),
            z: sc.hcz.ptr,
            split: self.hc_split,
            mma: false,
            s16: HC_S_F32,
            sat: sc.hc_sat.ptr,
            pf: false,
            d: d.d,
            n: d.n_hc,
            eps: d.rms_eps,
            iters: d.sinkhorn,
            hc_eps: d.hc_eps,
        }
    }

    /// hc_bufs with the slices of the separate prefill launches (hc_post_mix + hc_finish),
    /// for a batch of `t` tokens (its state's storage: hc_s16).
    fn hc_bufs_prefill(&self, t: usize) -> HcBufs {
        let b = self.hc_bufs();
        HcBufs { split: hc_prefill_split(b.d), mma: self.opts.precision == Precision::Fast, s16: self.hc_s16(t), pf: hc_pf(), ..b }
    }

    /// The hc state's storage for a batch of `t` tokens: decode's fused steps keep f32, the
    /// separate prefill launches take hc_s16_mode (Fast precision). Every launch on the state
    /// of one forward (embed_rows, each hc_post and hc_finish, the head's) asks this with the
    /// batch's `t`, so they agree.
    fn hc_s16(&self, t: usize) -> u8 {
        if self.hc_fused(t) || self.opts.precision != Precision::Fast || self.hc_f32 {
            HC_S_F32
        } else {
            hc_s16_mode(self.m.dims.n_hc, self.m.dims.d)
        }
    }

    /// hc_finish for tokens [t0, t0+t) of a batch of `batch` tokens, writing xn rows starting
    /// at `out`.
    #[allow(clippy::too_many_arguments)]
    fn hc_finish(&self, batch: usize, t0: usize, t: usize, m: usize, scale: DevPtr, base: DevPtr, norm: DevPtr, out: DevPtr) -> Result<()> {
        launch_hc_finish(self.gpu(), &self.hc_bufs_prefill(batch), t0, t, &HcFinish { m, scale, base, norm, out, q8: None, f16: HcF16::default() })
    }

    /// Where the prefill hc_finish writes xn's f16 copy for the cuBLAS dense path (its x16
    /// scratch, as DenseCall::prep_x would), when that path takes batches of `t` tokens and
    /// `DS4_HC_F16` is on; None: the dense products convert xn themselves.
    fn xn16_dense(&self, t: usize) -> Option<DevPtr> {
        let dd = self.m.dims.d;
        let (_, _, s) = self.sc.dense16.as_ref()?;
        let ok = hc_f16_enabled() && !self.hc_fused(t) && dd % 32 == 0 && t >= self.dense_min_t && t * dd <= s.x_elems && self.sc.xn.ptr % 16 == 0;
        (ok && self.gpu().blas().is_some()).then_some(s.x16)
    }

    /// Whether a batch of `t` tokens takes the fused hc_step (decode).
    fn hc_fused(&self, t: usize) -> bool {
        t <= HC_STEP_MAX_T && hc_step_enabled() && self.m.dims.d % 32 == 0
    }

    /// hc_post (with layer output `y`, `ny` rows summed; y == 0: none) and the partial sums
    /// of the next hc_pre (weights `fn_ptr`), then that hc_pre's finish when `fin` is given:
    /// one fused launch for decode, else hc_post_mix + hc_finish (+ quant_q8). `defer`: a later
    /// launch of the caller can run the Sinkhorn (`hc_sk`); returns whether it must.
    fn hc_step(&self, t: usize, y: DevPtr, ny: usize, fn_ptr: DevPtr, m: usize, fin: Option<HcFinish>, defer: bool) -> Result<bool> {
        self.hc_step_y(t, HcY::Rows(y, ny), fn_ptr, m, fin, defer)
    }

    /// hc_step with the layer output `y` as an HcY (the MoE form only where the separate
    /// launches run: not hc_fused).
    fn hc_step_y(&self, t: usize, y: HcY, fn_ptr: DevPtr, m: usize, fin: Option<HcFinish>, defer: bool) -> Result<bool> {
        let (gpu, mut b) = (self.gpu(), self.hc_bufs());
        match fin {
            Some(f) if self.hc_fused(t) => {
                let HcY::Rows(y, ny) = y else {
                    return Err(CudaError::Other("hc_step: the fused step takes y as rows, not the MoE sum".into()));
                };
                if f.f16.a != 0 || f.f16.b != 0 {
                    return Err(CudaError::Other("hc_step: the fused step writes no f16 copies".into()));
                }
                debug_assert_eq!(f.m, m);
                let defer = defer && t == 1 && hc_sk_enabled() && f.m > b.n;
                if !defer {
                    b.z = 0;
                }
                // a layer's step: its predecessor (out_b, the down matvec or combine) writes y
                // only, so hc_step_gs may start under it (decode +0.7 % against DS4_HC_PDL=0 on
                // an H100, the same tokens, bench/NOTES.md session 47)
                launch_hc_step_traced(gpu, &b, t, y, ny, fn_ptr, &f, 0, hc_pdl_on())?;
                Ok(defer)
            }
            _ => {
                let b = self.hc_bufs_prefill(t);
                // xn's f16 copy for the cuBLAS dense path, in its scratch: the projections
                // that read xn next find it ready (gemm_blas's x16_key)
                let dense = match fin {
                    Some(f) if f.out == self.sc.xn.ptr => self.xn16_dense(t),
                    _ => None,
                };
                let fin = fin.map(|mut f| {
                    if let Some(x16) = dense {
                        f.f16.a = x16;
                    }
                    f
                });
                if dense.is_none() && fin.is_some_and(|f| f.f16.no_f32) {
                    return Err(CudaError::Other("hc_step: xn without f32 rows needs the cuBLAS copy".into()));
                }
                // hc_post then hc_finish per chunk of tokens (hc_chunk), so that the finish
                // reads the new state while it is still in L2; the same kernels per token
                let chunk = match fin {
                    Some(f) if f.q8.is_none() => hc_chunk(t),
                    _ => t,
                };
                let (d, sb) = (b.d, hc_s_bytes(b.s16));
                for t0 in (0..t).step_by(chunk.max(1)) {
                    let tc = chunk.min(t - t0);
                    let bc = HcBufs {
                        s: b.s + (t0 * b.n * d * sb) as u64,
                        post: b.post + (t0 * b.n * 4) as u64,
                        comb: b.comb + (t0 * b.n * b.n * 4) as u64,
                        pdot: b.pdot + (t0 * b.split * m * 4) as u64,
                        pss: b.pss + (t0 * b.split * 8) as u64,
                        ..b
                    };
                    let at = |p: DevPtr, row_bytes: usize| if p == 0 { 0 } else { p + (t0 * row_bytes) as u64 };
                    match y {
                        HcY::Rows(y, ny) => launch_hc_post_mix(gpu, &bc, tc, at(y, ny * d * 4), ny, fn_ptr, m)?,
                        HcY::Rows16(y) => launch_hc_post_mix16(gpu, &bc, tc, at(y, d * 2), fn_ptr, m)?,
                        // (ypair's rows are found through pair_of: not offset)
                        HcY::Moe(yp, po, sh, k, y16, sh16) => {
                            launch_hc_post_mix_moe16(gpu, &bc, tc, yp, at(po, k * 4), at(sh, d * if sh16 { 2 } else { 4 }), k, fn_ptr, m, y16, sh16)?
                        }
                    }
                    if let Some(f) = fin {
                        // (hc_finish offsets its inputs by t0, its rows out by the block)
                        let fc = HcFinish { out: at(f.out, d * 4), f16: HcF16 { a: at(f.f16.a, d * 2), b: at(f.f16.b, d * 2), ..f.f16 }, ..f };
                        launch_hc_finish(gpu, &b, t0, tc, &fc)?;
                    }
                }
                if let Some(f) = fin {
                    if let Some((qs, qd)) = f.q8 {
                        launch_quant_q8(gpu, f.out, t * b.d, 0, 0, qs, qd)?;
                    }
                    if dense.is_some() {
                        // (what DenseCall::x_key of a product reading xn whole gives)
                        self.x16_key.set(Some(((f.out, b.d, b.d, t), gpu.work_seq())));
                    }
                }
                Ok(false)
            }
        }
    }

    /// The Sinkhorn job of a deferring hc_step (one token: decode).
    fn hc_sk(&self) -> HcSk {
        let d = &self.m.dims;
        HcSk { z: self.sc.hcz.ptr, comb: self.sc.comb.ptr, n: d.n_hc as i32, iters: d.sinkhorn as i32, eps: d.hc_eps, pad: 0 }
    }

    /// The finish of layer `l`'s attention-side hc_pre (-> sc.xn).
    /// In decode with the int8 first launch (`attn_aq`) the finish also writes xn's int8 copy.
    fn attn_fin(&self, l: usize, decode: bool) -> HcFinish {
        let ly = &self.m.layers[l];
        let d = &self.m.dims;
        let q8 = (decode && self.attn_aq(l).is_some()).then(|| self.sc.qx.at(0));
        HcFinish { m: d.n_hc * (d.n_hc + 2), scale: ly.hc_attn_scale.ptr, base: ly.hc_attn_base.ptr, norm: ly.attn_norm.ptr, out: self.sc.xn.ptr, q8, f16: HcF16::default() }
    }

    /// Layer `l`'s first attention-side decode launch on int8 activations, when it has one.
    fn attn_aq(&self, l: usize) -> Option<&JobTableQ> {
        if !self.q8 {
            return None;
        }
        self.jobsq.get(l)?.a.as_ref()
    }

    fn comp_args(&self, l: usize, t: usize, indexer: bool) -> CompArgs {
        let d = &self.m.dims;
        let ly = &self.m.layers[l];
        let s = &self.st[l];
        let (c, kv, scp, skv, ssc, rows, dim) = if indexer {
            (ly.icomp.as_ref().unwrap(), self.sc.ikv.ptr, self.sc.isc.ptr, s.iskv.unwrap().ptr, s.issc.unwrap().ptr, s.icomp.as_ref().unwrap().ptr, d.di)
        } else {
            (ly.comp.as_ref().unwrap(), self.sc.ckv.ptr, self.sc.csc.ptr, s.skv.unwrap().ptr, s.ssc.unwrap().ptr, s.comp.as_ref().unwrap().ptr, d.dh)
        };
        CompArgs {
            kv,
            sc: scp,
            ape: c.ape.ptr,
            skv,
            ssc,
            rows,
            norm: c.norm.ptr,
            omega: self.m.omega_comp.ptr,
            pos: self.sc.pos.ptr,
            t: t as i32,
            r: ly.ratio as i32,
            d: dim as i32,
            rd: d.r as i32,
            eps: d.rms_eps,
            qat: self.opts.qat as i32,
            indexer: indexer as i32,
            layer: l as i32,
            ties: self.ties_ptr(),
        }
    }

    fn compressor(&self, l: usize, t: usize, indexer: bool) -> Result<()> {
        let a = self.comp_args(l, t, indexer);
        let r = a.r as usize;
        let dim = a.d as usize;
        let w = if r == 4 { 2 * dim } else { dim };
        launch_comp_emit(self.gpu(), &a, t, comp_l16() && r != 4)?;
        let nres = if r == 4 { 4 } else { r };
        let n = nres * w;
        self.gpu().launch("comp_state", (((n + 255) / 256) as u32, 1, 1), 256, 0, Args::new().a(a))
    }

    /// Layer `l`'s query up-projections from qr: the attention's (`q`) and the indexer's
    /// (`idx`); both in one launch where the decode tables allow it.
    /// `narrow`: the int8 q_b alone on one block per SM (DS4_QB_PERSIST, beside a branch).
    /// Returns whether q was written as f16 (prefill into the tensor-core attention, see
    /// q16_enabled; sc.q then holds t x h*dh f16).
    fn q_proj(&self, l: usize, t: usize, decode: bool, att: Option<&AttnJobsQ>, q: bool, idx: bool, narrow: bool) -> Result<bool> {
        let (d, sc, ly, gpu) = (&self.m.dims, &self.sc, &self.m.layers[l], self.gpu());
        let missing = || CudaError::Other(format!("layer {l}: no indexer q_b"));
        let mut q16 = false;
        if let Some(a) = att {
            match (q, idx, &a.ib) {
                (true, true, Some(_)) => a.b.run(gpu, 2)?,
                (true, false, _) if narrow => a.b.run_grid(gpu, 1, gpu.sm_count as u32)?,
                (true, _, _) => a.b.run(gpu, 1)?,
                (false, true, Some(ib)) => ib.run(gpu, 1)?,
                _ => {}
            }
            if let (true, Some(bi)) = (idx, &a.bi) {
                bi.run(gpu, 1)?;
            }
        } else if decode {
            let j = &self.jobs[l];
            match (q, idx) {
                (true, true) => j.b.run(gpu, 2)?,
                (true, false) => j.b.run(gpu, 1)?,
                (false, true) => j.bi.as_ref().ok_or_else(missing)?.run(gpu, 1)?,
                _ => {}
            }
        } else if self.dense_small_batch(t) {
            // a small batch: q_b and the indexer's q_b (its Q8_0 copy) in one mvqm launch
            let mut mats = Vec::new();
            if q {
                mats.push((&ly.q_b, (ly.q_b.ty == GgmlType::Q8_0).then(|| ly.q_b.wmat()), sc.q.ptr, d.h * d.dh));
            }
            if idx {
                let m = ly.idx_q_b.as_ref().ok_or_else(missing)?;
                let m8 = ly.idx_q_b8.as_ref().or((m.ty == GgmlType::Q8_0).then_some(m)).map(|q| q.wmat());
                mats.push((m, m8, sc.iq.ptr, d.hi * d.di));
            }
            self.dense_small_group(&mats, sc.qr.ptr, d.rq, t)?;
        } else {
            if q {
                let hd = d.h * d.dh;
                q16 = self.attn_tc_prefill(decode) && q16_enabled() && self.gemm_blas_to(ly.q_b.wmat(), 1, sc.qr.ptr, d.rq, sc.q.ptr, hd, t, true)?;
                if !q16 {
                    self.gemm(ly.q_b.wmat(), sc.qr.ptr, d.rq, sc.q.ptr, hd, t, None)?;
                }
            }
            if idx {
                self.gemm(ly.idx_q_b.as_ref().ok_or_else(missing)?.wmat(), sc.qr.ptr, d.rq, sc.iq.ptr, d.hi * d.di, t, None)?;
            }
        }
        Ok(q16)
    }

    /// Prefill's attention output projections on cuBLAS with the low-rank activations in f16
    /// (`DS4_LOW16=0`: f32 out of out_a, then x_to_f16 for out_b): out_a writes them rounded
    /// once into sc.low (t x g*ro halfs) and out_b reads them there as its prepared input.
    /// Why: out_b converted 268 MB of f32 per layer of an 8K prefill (x_to_f16, ~90 us) that
    /// out_a had just written; the f16 values are those x_to_f16 made (cuBLAS rounds its f32
    /// sums to nearest), unless cuBLAS picks another kernel for the f16 output. False (nothing
    /// queued) where a call does not fit the cuBLAS path. `want16`: out_b writes sc.attn_out as
    /// f16 rows where cuBLAS's f16 output takes them; `*y16` says whether it did.
    fn out_low16(&self, l: usize, t: usize, want16: bool, y16: &mut bool) -> Result<bool> {
        let (d, sc, ly, gpu) = (&self.m.dims, &self.sc, &self.m.layers[l], self.gpu());
        if !low16_on() {
            return Ok(false);
        }
        let nlow = d.g * d.ro;
        let Some((ob, s, blas)) = self.dense_call(ly.out_b.wmat(), 1, sc.low.ptr, nlow, sc.attn_out.ptr, d.d, t) else { return Ok(false) };
        // out_b's input is sc.low itself, as f16 rows of nlow halfs
        let s16 = Dense16 { x16: sc.low.ptr, x_elems: t * nlow, ..s };
        if !ob.ok(&s16) || nlow % 8 != 0 {
            return Ok(false);
        }
        let ob16 = DenseCall { y16: true, ..ob };
        let ob = if want16 && ob16.ok(&s16) { ob16 } else { ob };
        if !self.gemm_blas_to(ly.out_a.wmat(), d.g, sc.heads.ptr, d.h * d.dh, sc.low.ptr, nlow, t, true)? {
            return Ok(false);
        }
        ob.run(gpu, blas, &s16, true)?;
        *y16 = ob.y16;
        // (the scratch's x16 still holds out_a's input; nothing else keyed)
        self.x16_key.set(None);
        Ok(true)
    }

    /// Whether this batch's attention runs on the tensor-core kernels (prefill, Fast, with the
    /// f16 row copies).
    fn attn_tc_prefill(&self, decode: bool) -> bool {
        !decode && self.opts.precision == Precision::Fast && self.sc.kv16.is_some()
    }

    /// Layer `l`'s indexer from its q_b output: query prep (Hadamard, FP4), scores of the
    /// compressed indexer rows, top-k -> sc.isel.
    fn indexer(&self, l: usize, t: usize, idx_rows: usize, decode: bool) -> Result<()> {
        let (d, sc, gpu) = (&self.m.dims, &self.sc, self.gpu());
        let wscale = 1.0f32 / ((d.di * d.hi) as f32).sqrt();
        // the f16 buffers exist only for Fast precision with the FP4 step on; prefill's
        // tensor-core scores then take q in f16 from idx_q_prep itself (DS4_IDXQ_F16=0: in
        // f32, converted by idx_to_f16)
        let tc = !decode && sc.idx16.is_some();
        let q16 = match &sc.idx16 {
            Some((h, s)) if tc && idx_tc_shape_ok(d.hi, d.di) && env_unless!("DS4_IDXQ_F16", "0") => Some((h.ptr, s.ptr)),
            _ => None,
        };
        let args = Args::new().a(sc.iq.ptr).a(sc.pos.ptr).a(self.m.omega_comp.ptr).a(d.hi as i32).a(d.di as i32).a(d.r as i32).a(self.opts.qat as i32);
        let args = args.a(l as i32).a(d.topk as i32).a(self.ties_ptr());
        let args = args.a(t as i32);
        let args = match q16 {
            Some((h, s)) => args.a(h).a(s).a(sc.iw.ptr).a(wscale),
            None => args.a(0u64).a(0u64).a(0u64).a(0f32),
        };
        if idxq_l() && self.ties_ptr() == 0 && idx_q_prep_l_ok(d.hi, d.di, d.r) {
            gpu.launch("idx_q_prep_l", ((d.hi * t * (d.di / 32)).div_ceil(256) as u32, 1, 1), 256, 0, args)?;
        } else {
            gpu.launch("idx_q_prep", ((d.hi * t).div_ceil(8) as u32, 1, 1), 256, 0, args)?;
        }
        let io = IdxIo {
            q: sc.iq.ptr,
            w: sc.iw.ptr,
            k: self.st[l].icomp.as_ref().ok_or_else(|| CudaError::Other(format!("layer {l}: no indexer rows")))?.ptr,
            pos: sc.pos.ptr,
            scores: sc.scores.ptr,
            ldsc: self.idx_ld,
            t,
            rows: idx_rows,
            hi: d.hi,
            di: d.di,
            wscale,
            topk: d.topk,
            h16: sc.idx16.as_ref().map_or(0, |b| b.0.ptr),
            hsc: sc.idx16.as_ref().map_or(0, |b| b.1.ptr),
        };
        if tc {
            launch_idx_tc_from(gpu, &io, q16.is_some())?;
        } else if idx_dtc_ok(t, idx_rows, d.hi, d.di, sc.idx16.is_some()) {
            launch_idx_dtc(gpu, &io)?;
        } else {
            launch_idx_simt(gpu, &io)?;
        }
        launch_topk(gpu, &io, sc.isel.ptr, l, self.ties_ptr())
    }

    /// Run all layers for `t` tokens whose positions/ids are already in sc.pos / sc.tok.
    /// `idx_rows`: upper bound of indexer rows visible to any token of the batch (grid size).
    fn layers(&self, t: usize, decode: bool, idx_rows: usize) -> Result<()> {
        let d = &self.m.dims;
        let gpu = self.gpu();
        let sc = &self.sc;
        let nhc = d.n_hc;
        let mhc = nhc * (nhc + 2);
        // embedding and the first hc_pre partials
        let args = Args::new().a(self.m.tok_embd.ptr).a(sc.tok.ptr).a(sc.s.ptr).a(d.d as i32).a(nhc as i32);
        gpu.launch(if self.hc_s16(t) == HC_S_F16 { "embed_rows_h" } else { "embed_rows" }, (t as u32, 1, 1), 256, 0, args)?;
        // sk: the last hc_step deferred its Sinkhorn (to attn_prep or router_dec)
        let mut sk = self.hc_step(t, 0, 1, self.m.layers[0].hc_attn_fn.ptr, mhc, Some(self.attn_fin(0, decode)), decode)?;
        let idx_active = idx_rows > d.topk;
        for l in 0..d.n_layer {
            let ly = &self.m.layers[l];
            let stl = &self.st[l];
            let ratio = ly.ratio;
            let omega = if ratio == 0 { self.m.omega_main.ptr } else { self.m.omega_comp.ptr };
            // ---- attention (its hc_pre was finished by the previous hc_step) ----
            if decode {
                match self.attn_aq(l) {
                    Some(aq) => aq.run(gpu, aq.len())?,
                    None => self.jobs[l].a.run(gpu, self.jobs[l].a.len())?,
                }
            } else if self.dense_small_batch(t) {
                // a small batch: every projection of xn on mvqm in one launch (the F16 ones
                // through their decode Q8_0 copies), the rest as GEMMs
                let mats: Vec<_> = attn_a_list(ly, sc).into_iter().map(|(m, m8, y)| (m, m8.map(|q| q.wmat()), y, m.rows)).collect();
                self.dense_small_group(&mats, sc.xn.ptr, d.d, t)?;
            } else {
                self.gemm(ly.q_a.wmat(), sc.xn.ptr, d.d, sc.qa.ptr, d.rq, t, None)?;
                self.gemm(ly.kv.wmat(), sc.xn.ptr, d.d, sc.kvp.ptr, d.dh, t, None)?;
                if let Some(c) = &ly.comp {
                    let w = c.kv.rows;
                    self.gemm(c.kv.wmat(), sc.xn.ptr, d.d, sc.ckv.ptr, w, t, None)?;
                    self.gemm(c.gate.wmat(), sc.xn.ptr, d.d, sc.csc.ptr, w, t, None)?;
                }
                if let Some(c) = &ly.icomp {
                    let w = c.kv.rows;
                    self.gemm(c.kv.wmat(), sc.xn.ptr, d.d, sc.ikv.ptr, w, t, None)?;
                    self.gemm(c.gate.wmat(), sc.xn.ptr, d.d, sc.isc.ptr, w, t, None)?;
                    self.gemm(ly.idx_proj.as_ref().unwrap().wmat(), sc.xn.ptr, d.d, sc.iw.ptr, d.hi, t, None)?;
                }
            }
            let args = Args::new()
                .a(sc.qa.ptr)
                .a(sc.kvp.ptr)
                .a(ly.q_a_norm.ptr)
                .a(ly.kv_norm.ptr)
                .a(d.rq as i32)
                .a(d.dh as i32)
                .a(d.r as i32)
                .a(d.rms_eps)
                .a(sc.pos.ptr)
                .a(omega)
                .a(sc.qr.ptr)
                .a(stl.raw.ptr)
                .a(self.cap as i32)
                .a(self.opts.qat as i32)
                .a(l as i32)
                .a(self.ties_ptr());
            let att = if decode && self.q8 { self.jobsq[l].att.as_ref() } else { None };
            let args = match att {
                Some(_) => args.a(sc.qqr.q.ptr).a(sc.qqr.d.ptr),
                None => args.a(0u64).a(0u64),
            };
            // its extra block runs the Sinkhorn the attention hc_step deferred
            let args = args.a(if sk { self.hc_sk() } else { HcSk::default() });
            gpu.launch("attn_prep", (t as u32 + sk as u32, 1, 1), 512, ((d.rq + d.dh) * 4) as u32, args)?;
            let use_idx = ratio == 4 && idx_active;
            // Decode: the indexer's chain (its q_b, compressor, scores, top-k) and the
            // attention's compressor and q_b are independent until attention. With a branch
            // (DS4_FORK, on by default) the indexer side, or at ratio 128 the compressor, runs
            // on the side stream: a parallel branch of the decode graph (at a higher priority,
            // see Gpu::fork), joined before attention. (Its q_b first, before its compressor,
            // measured slower: 6.98 against 6.93 ms per token at 8K; session 13. Making q_b wait
            // for the indexer's compressor, so that both q_b start together and the branch's
            // priority serves its own first, was neutral: 556.0 against 555.2 summed t/s at
            // 8K and 64K, session 14; so was the indexer's q_b alone before the branch, and q_b
            // on one block per SM beside it, DS4_QB_PERSIST; and, session 26, the main stream's
            // compressor after q_b instead of before it: 316.9 against 316.8 summed t/s at 8K.)
            // Without a branch, the same work in the same order on one stream.
            let branch = decode && ratio > 0 && fork_on() && gpu.fork()?;
            let q16;
            if branch {
                // the side stream
                if ratio == 4 {
                    self.compressor(l, t, true)?;
                    if use_idx {
                        self.q_proj(l, t, decode, att, false, true, false)?;
                        self.indexer(l, t, idx_rows, decode)?;
                    }
                } else {
                    self.compressor(l, t, false)?;
                }
                gpu.to_main();
                // the main stream
                if ratio == 4 {
                    self.compressor(l, t, false)?;
                }
                q16 = self.q_proj(l, t, decode, att, true, false, qb_persist())?;
                gpu.join()?;
            } else {
                if ratio > 0 {
                    self.compressor(l, t, false)?;
                }
                if ratio == 4 {
                    self.compressor(l, t, true)?;
                }
                q16 = self.q_proj(l, t, decode, att, true, use_idx, false)?;
                if use_idx {
                    self.indexer(l, t, idx_rows, decode)?;
                }
            }
            let nsplit = if decode { nsplit_decode(ratio) } else { 1 };
            let io = AttnIo {
                q: sc.q.ptr,
                q16: if q16 { sc.q.ptr } else { 0 },
                raw: stl.raw.ptr,
                comp: stl.comp.as_ref().map(|b| b.ptr).unwrap_or(0),
                sel: sc.isel.ptr,
                pos: sc.pos.ptr,
                omega,
                sinks: ly.sinks.ptr,
                po: sc.po.ptr,
                pml: sc.pml.ptr,
                out: sc.heads.ptr,
                kv16: sc.kv16.as_ref().map(|b| b.ptr).unwrap_or(0),
                t,
                cap: self.cap,
                // prefill: the batch's positions are tokens.len() .. tokens.len() + t - 1
                comp_rows: (self.tokens.len() + t).checked_div(ratio).unwrap_or(0),
                topk: d.topk,
                h: d.h,
                dh: d.dh,
                rd: d.r,
                w: d.window,
                ratio,
                nsplit,
                eps: d.rms_eps,
            };
            let mut heads_q8 = false;
            let hg = d.h / d.g * d.dh;
            // out_a: the 8 block-diagonal groups in one strided-batched cuBLAS call where it applies
            let out_a_blas = ly.out_a.rows == d.g * d.ro && ly.out_a.cols == hg;
            // out_b's rows as f16 for hc_post (dense_y16) where its separate launch reads them
            let want_attn16 = dense_y16().0 && !decode && !self.hc_fused(t) && {
                let b = self.hc_bufs_prefill(t);
                hc_rows16_ok(&b, true, 1, false) && hc_mma8_takes(&b, mhc)
            };
            let mut attn16 = false;
            if self.attn_tc_prefill(decode) {
                // attn_tw writes the heads as f16 straight into that call's input scratch
                // (no f32 round trip through x_to_f16); DS4_ATW_F16=0 keeps the f32 heads
                let x16 = if out_a_blas && !env_is!("DS4_ATW_F16", "0") {
                    self.dense_call(ly.out_a.wmat(), d.g, sc.heads.ptr, d.h * d.dh, sc.low.ptr, d.g * d.ro, t)
                } else {
                    None
                };
                if launch_attn_tc_to(gpu, &io, attn_tw_enabled(), x16.as_ref().map(|c| c.1.x16).unwrap_or(0))? {
                    let key = x16.as_ref().map(|c| c.0.x_key());
                    self.x16_key.set(key.map(|k| (k, gpu.work_seq())));
                }
            } else if decode && t == 1 && attn_dec_enabled() && attn_dec_shape_ok(d.h, d.dh, d.r) {
                // with the int8 attention side it also writes the heads' int8 blocks
                let q8 = (att.is_some() && attn_dec_q8_ok(d.dh)).then_some((sc.qheads.q.ptr, sc.qheads.d.ptr));
                launch_attn_dec(gpu, &io, sc.dec_part.ptr, sc.dec_cnt.ptr, q8)?;
                heads_q8 = q8.is_some();
            } else {
                launch_attn_simt(gpu, &io)?;
            }
            if let Some(a) = att {
                if !heads_q8 {
                    launch_quant_q8(gpu, sc.heads.ptr, d.h * d.dh, 0, 0, sc.qheads.q.ptr, sc.qheads.d.ptr)?;
                }
                a.c.run(gpu, 1)?;
                a.d.run(gpu, 1)?;
            } else if decode {
                self.jobs[l].c.run(gpu, 1)?;
                self.jobs[l].d.run(gpu, 1)?;
            } else if out_a_blas && self.out_low16(l, t, want_attn16, &mut attn16)? {
                // (out_a's f16 output read in place by out_b's product)
            } else {
                // a small batch: the groups as one mvqm launch over heads quantized once
                let w0 = ly.out_a.wmat_rows(0, d.ro);
                let small = d.g <= MAX_JOBS && self.dense_small_ok(&w0, d.h * d.dh, d.g * d.ro, t);
                let q = if small { self.dense_small_q(sc.heads.ptr, d.h * d.dh, d.h * d.dh, t, w0.ty)? } else { None };
                if let Some(q) = q {
                    let mats: Vec<_> = (0..d.g).map(|gi| (ly.out_a.wmat_rows(gi * d.ro, d.ro), gi * hg, sc.low.ptr + (gi * d.ro * 4) as u64, d.g * d.ro)).collect();
                    self.dense_small_run(&mats, q, d.h * d.dh, t)?;
                } else if !(out_a_blas && self.gemm_blas(ly.out_a.wmat(), d.g, sc.heads.ptr, d.h * d.dh, sc.low.ptr, d.g * d.ro, t)?) {
                    for gi in 0..d.g {
                        let w = ly.out_a.wmat_rows(gi * d.ro, d.ro);
                        self.gemm(w, sc.heads.ptr + (gi * hg * 4) as u64, d.h * d.dh, sc.low.ptr + (gi * d.ro * 4) as u64, d.g * d.ro, t, None)?;
                    }
                }
                self.gemm(ly.out_b.wmat(), sc.low.ptr, d.g * d.ro, sc.attn_out.ptr, d.d, t, None)?;
            }
            // ---- FFN (decode with int8 activations: the step also quantizes xn) ----
            let q8 = (decode && self.q8).then_some(sc.qx.at(0));
            // prefill's routed experts on f16 activations (gq_xh_ok; not on cuBLAS), on gemm_qr
            // (qr: xn in its K order) or gemm_q; the finish writes that f16 xn itself (into
            // ypair, free until the down projection writes it; DS4_HC_F16=0: x_to_f16 below)
            let exp_w = [ly.gate_exps.wmat(), ly.up_exps.wmat(), ly.down_exps.wmat()];
            // a small batch's routed experts on the int8 matvec instead (moe_small_max; the
            // opt-in cuBLAS expert path keeps its batches)
            let moe_small = !decode && self.moe_small_batch(t);
            let exp_xh = !moe_small && !decode && self.opts.precision == Precision::Fast && !self.exp_blas_on(t) && exp_w.iter().all(gq_xh_ok);
            let qr = if exp_xh { gemm_qr(gpu, (t * d.k) as f64 / d.e as f64) } else { None };
            let xn16_exp = exp_xh && hc_f16_enabled() && !self.hc_fused(t) && d.d % 32 == 0;
            // the router and the shared expert's gate/up read xn on cuBLAS, from the f16 copy
            // the finish writes (xn16_dense); when all three do and the routed experts read
            // theirs, nothing reads the f32 xn: it is not written (DS4_FFN_XN16=0: it is)
            let ffn_dense = if xn16_exp {
                [(ly.gate_inp.wmat(), sc.rlog.ptr, d.e), (ly.gate_sh.wmat(), sc.gs.ptr, d.f), (ly.up_sh.wmat(), sc.us.ptr, d.f)]
                    .map(|(w, y, ldy)| self.dense_call(w, 1, sc.xn.ptr, d.d, y, ldy, t))
            } else {
                [None; 3]
            };
            let xn16_only = xn16_exp && ffn_xn16_enabled() && self.xn16_dense(t).is_some() && ffn_dense.iter().all(Option::is_some);
            // the shared expert's gate / up as f16 rows (dense_y16) where both run on cuBLAS
            // here and its mids are moe_mid's f16 pairs for the cuBLAS down (below)
            let sh_down = if decode { None } else { self.dense_call(ly.down_sh.wmat(), 1, sc.mids.ptr, d.f, sc.shared.ptr, d.d, t).filter(|_| mid_f16_enabled() && d.f % 2 == 0) };
            let gu16 = {
                let ok16 = |i: usize| ffn_dense[i].is_some_and(|(c, s, _)| DenseCall { y16: true, ..c }.ok(&s));
                xn16_only && dense_y16().2 && sh_down.is_some() && (t * d.f) % 4 == 0 && ok16(1) && ok16(2)
            };
            let f16 = HcF16 { a: 0, b: if xn16_exp { sc.ypair.ptr } else { 0 }, b_perm: qr.is_some(), no_f32: xn16_only };
            let ffn_fin = HcFinish { m: mhc, scale: ly.hc_ffn_scale.ptr, base: ly.hc_ffn_base.ptr, norm: ly.ffn_norm.ptr, out: sc.xn.ptr, q8, f16 };
            let bias = ly.probs_b.as_ref().map(|b| b.ptr).unwrap_or(0);
            let tid2eid = ly.tid2eid.as_ref().map(|b| b.ptr).unwrap_or(0);
            let gw = ly.gate_inp.wmat();
            let fused_router = decode && self.q8 && t == 1 && router_dec_ok(&gw, tid2eid != 0, d.e, d.k);
            // (only router_dec takes a Sinkhorn job on the FFN side)
            let attn_y = if attn16 { HcY::Rows16(sc.attn_out.ptr) } else { HcY::Rows(sc.attn_out.ptr, 1) };
            sk = self.hc_step_y(t, attn_y, ly.hc_ffn_fn.ptr, mhc, Some(ffn_fin), fused_router)?;
            if fused_router {
                let a = RouterDecArgs {
                    w: gw,
                    x: sc.xn.ptr,
                    logits: sc.rlog.ptr,
                    bias,
                    sel: sc.esel.ptr,
                    wts: sc.ewts.ptr,
                    ticket: sc.rticket.ptr,
                    e: d.e as i32,
                    k: d.k as i32,
                    wscale: d.w_scale,
                    wnorm: d.w_norm as i32,
                    sk: if sk { self.hc_sk() } else { HcSk::default() },
                };
                launch_router_dec(gpu, a)?;
            } else if decode && self.q8 {
                // the router stays f32 (it decides the expert choice)
                self.routers[l].run(gpu, 1)?;
            } else if decode {
                self.jobs[l].e.run(gpu, 3)?;
            } else if xn16_only {
                // xn is only in f16 (the finish wrote the scratch copy and no f32 rows): the
                // three products from that copy, never converting (the f32 xn is stale)
                for (i, (c, s, blas)) in ffn_dense.iter().flatten().enumerate() {
                    let c = if gu16 && i > 0 { DenseCall { y16: true, ..*c } } else { *c };
                    c.run(gpu, blas, s, true)?;
                }
                self.x16_key.set(None);
            } else {
                self.gemm(ly.gate_inp.wmat(), sc.xn.ptr, d.d, sc.rlog.ptr, d.e, t, None)?;
                self.gemm(ly.gate_sh.wmat(), sc.xn.ptr, d.d, sc.gs.ptr, d.f, t, None)?;
                self.gemm(ly.up_sh.wmat(), sc.xn.ptr, d.d, sc.us.ptr, d.f, t, None)?;
            }
            // the one-warp router (same selection and weights; prefill too unless DS4_ROUTE_PF=0)
            if !fused_router {
                launch_route(gpu, route_new_enabled() && (decode || route_w_prefill()), t, sc.rlog.ptr, bias, tid2eid, sc.tok.ptr, d.e, d.k, d.w_scale, d.w_norm, sc.esel.ptr, sc.ewts.ptr)?;
            }
            let clamp = d.clamp[l];
            // prefill on the separate hyper-connection launches: the next hc_post_mix sums the
            // MoE output itself (moe_combine's order; DS4_FUSE_COMBINE=0: moe_combine -> ffn_out)
            let fuse_moe = !decode && !self.hc_fused(t) && fuse_combine_enabled();
            // the down rows in f16 (DS4_EXP_Y16) where the routed experts run on f16
            // activations on gemm_qr / gemm_qs (exp_xh and qr, below: gemm_q64 / gemm_q128
            // write f32 only) and the next hc_post reads the rows itself on hc_post_mma8 (the
            // last layer's takes the head's N mixes)
            let post_m = if l + 1 < d.n_layer { mhc } else { nhc };
            let moe_y16 = fuse_moe && exp_xh && qr.is_some() && exp_y16().1 && hc_mma8_takes(&self.hc_bufs_prefill(t), post_m);
            // where each (token, expert) slot's down row is: moe_group's pair order, or the
            // token-major slots of moe_small
            let pair_of = if moe_small && !moe_small_grouped(t) { sc.pair_id.ptr } else { sc.pair_of.ptr };
            if decode && self.q8 {
                // (the shared expert in a parallel branch beside the router and the routed
                // experts lost: router_dec 9.6 -> 17.5 us per call beside its DRAM stream, 8K
                // decode 139-140 -> 131-133 t/s; session 13)
                self.jobsq[l].f.run(gpu, 2)?;
                launch_quant_q8(gpu, sc.mid.ptr, d.k * d.f, sc.mids.ptr, d.f, sc.qmid.q.ptr, sc.qmid.d.ptr)?;
                self.jobsq[l].g.run(gpu, 2)?;
            } else if decode {
                self.jobs[l].f.run(gpu, 2)?;
                let args = Args::new()
                    .a(ly.down_exps.wmat())
                    .a(ly.down_sh.wmat())
                    .a(sc.esel.ptr)
                    .a(sc.ewts.ptr)
                    .a(sc.g.ptr)
                    .a(sc.u.ptr)
                    .a(sc.gs.ptr)
                    .a(sc.us.ptr)
                    .a(sc.ffn_out.ptr)
                    .a(d.k as i32)
                    .a(clamp)
                    .a(clamp);
                let grid = ((d.d + MV_ROWS_PER_BLOCK - 1) / MV_ROWS_PER_BLOCK) as u32;
                gpu.launch("moe_down_fused", (grid, t as u32, 1), 256, ((d.k + 1) * d.f * 4) as u32, args)?;
            } else if moe_small {
                self.moe_small(l, t, clamp)?;
            }
            if !decode && !moe_small {
                let tk = t * d.k;
                self.moe_group_pairs(t)?;
                if moe_stats_on() {
                    self.print_moe_stats(l, t)?;
                }
                // large batches: the routed experts on cuBLAS (reads the slot offsets back)
                let eb = self.exp_blas(t)?;
                let [gw, uw, dw] = exp_w;
                if exp_xh {
                    debug_assert!(eb.is_none());
                    // f16 activations (gq_xh_ok): xn converted once for gate and up (into
                    // ypair, by the finish above unless DS4_HC_F16=0), mid written f16 by
                    // moe_mid (into mid's buffer)
                    // gemm_qr: both f16 inputs written in its K order
                    if !xn16_exp {
                        launch_x_to_f16(gpu, sc.xn.ptr, d.d, d.d, t, 0, sc.ypair.ptr, qr.is_some())?;
                    }
                    // DS4_EXP_Y16: g and u as f16 (read by moe_mid's warp form, which needs
                    // gemm_qr's K order: qr), the down rows as f16 (read by hc_post_mma8)
                    let gu16 = exp_y16().0 && qr.is_some() && d.f % 32 == 0;
                    // gu_fuse (Q4_K and IQ2_XXS by default, DS4_GU_FUSE): gate and up in one gemm_qs launch
                    // writing the mids (within one f16 step of the two launches and moe_mid below)
                    let fuse = gu_fuse(gw.ty).filter(|_| !gu16 && d.f % 32 == 0 && qr.is_some_and(gu_kind_ok) && gu_pair_ok(&gw, &uw));
                    if let Some(staged) = fuse {
                        let a = self.exp_xh_args(gw, sc.ypair.ptr, d.d, sc.pair_tok.ptr, sc.mid.ptr, d.f, t);
                        let gu = GuArgs { w2: uw, pw: sc.pair_w.ptr, clamp, pad: 0 };
                        launch_gemm_gu(gpu, a, gu, d.e, qr.unwrap_or(GqKernel::Qs), staged)?;
                        // (the f32 g and u are not written: nothing reads them after the mids)
                    } else {
                        self.gemm_exp_xh(gw, sc.ypair.ptr, d.d, sc.pair_tok.ptr, sc.g.ptr, d.f, t, qr, gu16)?;
                        self.gemm_exp_xh(uw, sc.ypair.ptr, d.d, sc.pair_tok.ptr, sc.u.ptr, d.f, t, qr, gu16)?;
                        if gu16 {
                            launch_moe_mid_gu16(gpu, sc.g.ptr, sc.u.ptr, sc.pair_w.ptr, tk, d.f, clamp, sc.mid.ptr)?;
                        } else {
                            launch_moe_mid(gpu, sc.g.ptr, sc.u.ptr, sc.pair_w.ptr, tk, d.f, clamp, 0, sc.mid.ptr, qr.is_some())?;
                        }
                    }
                    self.gemm_exp_xh(dw, sc.mid.ptr, d.f, 0, sc.ypair.ptr, d.d, t, qr, moe_y16)?;
                } else {
                    // gate and up read the same gathered rows: converted once when both use cuBLAS
                    let g16 = self.exp_gemm(&eb, gw, sc.xn.ptr, d.d, sc.pair_tok.ptr, sc.g.ptr, d.f, t, false)?;
                    self.exp_gemm(&eb, uw, sc.xn.ptr, d.d, sc.pair_tok.ptr, sc.u.ptr, d.f, t, g16)?;
                    launch_moe_mid(gpu, sc.g.ptr, sc.u.ptr, sc.pair_w.ptr, tk, d.f, clamp, sc.mid.ptr, 0, false)?;
                    self.exp_gemm(&eb, dw, sc.mid.ptr, d.f, 0, sc.ypair.ptr, d.d, t, false)?;
                }
            }
            let mut sh16 = false;
            if !decode {
                // the shared expert's down projection: on cuBLAS, its f16 input written by
                // moe_mid straight into the scratch (DS4_MID_F16; the f32 mids are then never
                // written), else the f32 mids; its rows as f16 where only hc_post_mma8_hyps
                // reads them (dense_y16)
                // (moe_y16 holds only with the fused MoE sum on hc_post_mma8)
                let want16 = dense_y16().1 && hc_shared16_ok(&self.hc_bufs_prefill(t), moe_y16);
                match sh_down {
                    Some((down_sh, s, blas)) => {
                        if gu16 {
                            launch_moe_mid_pairs_h(gpu, sc.gs.ptr, sc.us.ptr, t, d.f, clamp, s.x16)?;
                        } else {
                            launch_moe_mid_pairs(gpu, sc.gs.ptr, sc.us.ptr, t, d.f, clamp, s.x16)?;
                        }
                        let d16 = DenseCall { y16: true, ..down_sh };
                        let down_sh = if want16 && d16.ok(&s) { d16 } else { down_sh };
                        sh16 = down_sh.y16;
                        down_sh.run(gpu, blas, &s, true)?;
                        // (x16 holds values that sc.mids does not: nothing may reuse it)
                        self.x16_key.set(None);
                    }
                    None => {
                        if gu16 {
                            return Err(CudaError::Other("the shared expert's f16 gate / up need the cuBLAS down".into()));
                        }
                        launch_moe_mid(gpu, sc.gs.ptr, sc.us.ptr, 0, t, d.f, clamp, sc.mids.ptr, 0, false)?;
                        self.gemm(ly.down_sh.wmat(), sc.mids.ptr, d.f, sc.shared.ptr, d.d, t, None)?;
                    }
                }
                // (with fuse_moe the next hc_post_mix sums the slot rows itself)
                if !fuse_moe {
                    let args = Args::new().a(sc.ypair.ptr).a(pair_of).a(sc.shared.ptr).a(d.k as i32).a(d.d as i32).a(sc.ffn_out.ptr);
                    gpu.launch("moe_combine", (((d.d + 255) / 256) as u32, t as u32, 1), 256, 0, args)?;
                }
            }
            // the next layer's attention hc_pre, or the output head's (fused only: head_last
            // finishes it otherwise, for the token it needs)
            let (next_fn, next_m, fin) = if l + 1 < d.n_layer {
                (self.m.layers[l + 1].hc_attn_fn.ptr, mhc, Some(self.attn_fin(l + 1, decode)))
            } else {
                (self.m.out_hc_fn.ptr, nhc, self.hc_fused(t).then(|| self.head_fin()))
            };
            sk = if decode && self.q8 {
                self.hc_step(t, sc.ypair.ptr, d.k + 1, next_fn, next_m, fin, decode)?
            } else if fuse_moe {
                self.hc_step_y(t, HcY::Moe(sc.ypair.ptr, pair_of, sc.shared.ptr, d.k, moe_y16, sh16), next_fn, next_m, fin, decode)?
            } else {
                self.hc_step(t, sc.ffn_out.ptr, 1, next_fn, next_m, fin, decode)?
            };
        }
        Ok(())
    }

    /// The output head's hc_pre finish (-> sc.yhead).
    fn head_fin(&self) -> HcFinish {
        let m = &self.m;
        HcFinish { m: m.dims.n_hc, scale: m.out_hc_scale.ptr, base: m.out_hc_base.ptr, norm: m.out_norm.ptr, out: self.sc.yhead.ptr, q8: None, f16: HcF16::default() }
    }

    /// Output head for token `ti` of a batch of `batch` tokens -> sc.logits.
    fn head_last(&self, ti: usize, batch: usize) -> Result<()> {
        let d = &self.m.dims;
        // a fused last hc_step already wrote yhead (decode)
        if !self.hc_fused(batch) {
            self.hc_finish(batch, ti, 1, d.n_hc, self.m.out_hc_scale.ptr, self.m.out_hc_base.ptr, self.m.out_norm.ptr, self.sc.yhead.ptr)?;
        }
        self.head_job.run(self.gpu(), 1)
    }

    fn upload_batch(&self, toks: &[u32], p0: usize) -> Result<()> {
        self.next_on_device.set(None);
        let pos: Vec<i32> = (0..toks.len()).map(|i| (p0 + i) as i32).collect();
        let tk: Vec<i32> = toks.iter().map(|&t| t as i32).collect();
        self.gpu().htod(self.sc.pos.ptr, &pos)?;
        self.gpu().htod(self.sc.tok.ptr, &tk)
    }

    fn check_tokens(&self, toks: &[u32]) -> Result<()> {
        let v = self.m.dims.vocab as u32;
        if let Some(bad) = toks.iter().find(|&&t| t >= v) {
            return Err(CudaError::Other(format!("token id {bad} out of range (vocab {v})")));
        }
        if self.tokens.len() + toks.len() > self.opts.ctx {
            return Err(CudaError::Other(format!(
                "context overflow: {} + {} tokens > ctx {}",
                self.tokens.len(),
                toks.len(),
                self.opts.ctx
            )));
        }
        Ok(())
    }

    /// Append tokens with batched prefill (chunks of max_chunk). Logits of the last token.
    pub fn prefill(&mut self, toks: &[u32]) -> Result<()> {
        self.prefill_inner(toks, None)
    }

    /// Prefill and return the logits of every token ([n][vocab]) — for verification.
    pub fn prefill_all_logits(&mut self, toks: &[u32]) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(toks.len() * self.m.dims.vocab);
        self.prefill_inner(toks, Some(&mut out))?;
        Ok(out)
    }

    fn prefill_inner(&mut self, toks: &[u32], mut all: Option<&mut Vec<f32>>) -> Result<()> {
        self.m.gpu.bind()?;
        self.check_tokens(toks)?;
        for chunk in toks.chunks(self.opts.max_chunk) {
            if chunk.len() <= self.opts.step_max {
                for &tok in chunk {
                    self.eval(tok)?;
                    if let Some(out) = all.as_deref_mut() {
                        self.append_logits(out)?;
                    }
                }
                // (synchronized, as after a prefill batch)
                self.gpu().sync()?;
                continue;
            }
            let p0 = self.tokens.len();
            // The f16 hc state's guard: the frontiers as they were before the batch, so that a
            // batch whose state saturated runs again in f32 from the same state. The rest of
            // the state needs no copy: the batch's raw rows go to ring slots of positions
            // older than the window (cap >= window + batch), and its compressed rows are
            // rewritten by the second run.
            let guard = self.hc_s16(chunk.len()) == HC_S_F16;
            let mut ties0 = [0i32; 1];
            if guard {
                self.save_fronts()?;
                // (the near-tie list's slot counter too: the first run's entries are dropped)
                if let Some(b) = &self.ties {
                    self.gpu().dtoh(&mut ties0, b.ptr)?;
                }
            }
            let n0 = all.as_deref().map_or(0, |o| o.len());
            self.prefill_batch(chunk, p0, all.as_deref_mut())?;
            if guard && self.hc_sat_check()? {
                self.restore_fronts()?;
                if let Some(b) = &self.ties {
                    self.gpu().htod(b.ptr, &ties0)?;
                }
                if let Some(out) = all.as_deref_mut() {
                    out.truncate(n0);
                }
                self.hc_redos += 1;
                self.prefill_batch(chunk, p0, all.as_deref_mut())?;
            }
            self.tokens.extend_from_slice(chunk);
            self.logits_host = None;
            self.has_logits = true;
        }
        Ok(())
    }

    /// One prefill batch at positions p0.. (synchronized): the layers, then the head for its
    /// last token, or for every token into `all`.
    fn prefill_batch(&mut self, chunk: &[u32], p0: usize, all: Option<&mut Vec<f32>>) -> Result<()> {
        let t = chunk.len();
        if !self.batch_sizes_run.contains(&t) {
            self.batch_sizes_run.push(t);
        }
        self.upload_batch(chunk, p0)?;
        let idx_rows = (p0 + t) / 4;
        self.layers(t, false, idx_rows)?;
        if let Some(out) = all {
            for ti in 0..t {
                self.head_last(ti, t)?;
                self.append_logits(out)?;
            }
        } else {
            self.head_last(t - 1, t)?;
        }
        self.gpu().sync()
    }

    /// The logits on the device (sc.logits) appended to `out` (synchronizing).
    fn append_logits(&self, out: &mut Vec<f32>) -> Result<()> {
        let n0 = out.len();
        out.resize(n0 + self.m.dims.vocab, 0.0);
        self.gpu().dtoh(&mut out[n0..], self.sc.logits.ptr)
    }

    fn save_fronts(&mut self) -> Result<()> {
        if self.fronts_bak.is_none() {
            self.fronts_bak = Some(self.gpu().alloc(self.fronts.bytes)?);
        }
        let bak = self.fronts_bak.as_ref().unwrap();
        self.gpu().dtod(bak.ptr, self.fronts.ptr, self.fronts.bytes)
    }

    fn restore_fronts(&self) -> Result<()> {
        let bak = self.fronts_bak.as_ref().ok_or_else(|| CudaError::Other("restore_fronts before save_fronts".into()))?;
        self.gpu().dtod(self.fronts.ptr, bak.ptr, self.fronts.bytes)
    }

    /// After a prefill batch on the f16 hc state (synchronized): whether the state saturated (a
    /// value past 65504: the real model's residual stream left f16's range; or a test's
    /// `inject_hc_sat`). Then this session keeps the state in f32 from now on, and after a real
    /// saturation every session made later too (the range is the model's); the caller runs the
    /// batch again.
    fn hc_sat_check(&mut self) -> Result<bool> {
        let mut f = [0i32; 1];
        self.gpu().dtoh(&mut f, self.sc.hc_sat.ptr)?;
        let injected = std::mem::take(&mut self.hc_sat_inject);
        if f[0] != 0 {
            self.gpu().memset0(self.sc.hc_sat.ptr, 4)?;
            if !HC_S16_SATURATED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!(
                    "ds4: the f16 hyper-connection state saturated in a prefill (a value past 65504); that batch runs again \
                     with the state in f32, as every later prefill will (DS4_HC_S16=0 keeps f32 from the start)"
                );
            }
        } else if !injected {
            return Ok(false);
        }
        self.hc_f32 = true;
        Ok(true)
    }

    /// Whether a prefill batch of `t` tokens keeps the hc state in f16 (Fast precision, the
    /// shapes hc_post_mma8 takes, `DS4_HC_S16` not 0, no saturation seen).
    pub fn hc_s16_on(&self, t: usize) -> bool {
        self.hc_s16(t) == HC_S_F16
    }

    /// Keep the hc state in f32 (true), or let it be f16 again where it may (false); a
    /// saturation sets it. Survives `reset`.
    pub fn set_hc_f32(&mut self, on: bool) {
        self.hc_f32 = on;
    }

    /// Tests: the next prefill batch on the f16 hc state counts as saturated (runs again in f32
    /// and sets `set_hc_f32(true)`; other sessions are not affected).
    pub fn inject_hc_sat(&mut self) {
        self.hc_sat_inject = true;
    }

    /// Prefill batches run again in f32 after their f16 hc state saturated.
    pub fn hc_redos(&self) -> usize {
        self.hc_redos
    }

    fn decode_key(&self, p: usize) -> usize {
        let d = &self.m.dims;
        let n = (p + 1) / 4;
        if d.ratios.iter().all(|&r| r != 4) || n <= d.topk {
            return 0;
        }
        // idx_score blocks rounded up to a multiple of 64 blocks (2048 rows)
        ((n + 2047) / 2048) * 2048
    }

    /// One decode step (graph-replayed when enabled).
    pub fn eval(&mut self, tok: u32) -> Result<()> {
        self.m.gpu.bind()?;
        self.check_tokens(&[tok])?;
        let p = self.tokens.len();
        // (no upload when eval_argmax's argmax left this token and position on the device)
        if self.next_on_device.get() != Some((tok, p)) {
            self.upload_batch(&[tok], p)?;
        }
        self.decode_step(p)?;
        self.tokens.push(tok);
        self.logits_host = None;
        self.has_logits = true;
        Ok(())
    }

    /// Greedy decoding without a host round trip per token: the argmax of the current logits
    /// (never `exclude`) is written on the device as the next step's token and position, the
    /// step is queued behind it, and the token is read back (pinned copy + event) while the
    /// step runs. Returns the token that was appended; its logits are then current. Same
    /// tokens and logits as `argmax` + `eval` (checked by ds4-bench --verify-fixtures); what
    /// it saves is the readback, the two uploads and the launch gap between steps.
    pub fn eval_greedy(&mut self, exclude: Option<u32>) -> Result<u32> {
        self.m.gpu.bind()?;
        if !self.has_logits {
            return Err(CudaError::Other("no logits yet".into()));
        }
        // room for one more token (its id, chosen on the device, is in range by construction)
        self.check_tokens(&[0])?;
        let p = self.tokens.len();
        self.launch_argmax(exclude, Some(p))?;
        self.m.gpu.dtoh_pinned(&mut self.greedy_tok, self.sc.amax.ptr, 4)?;
        self.m.gpu.record(&self.greedy_ev)?;
        self.decode_step(p)?;
        self.greedy_ev.synchronize()?;
        let b = &self.greedy_tok.as_mut_slice()[..4];
        let tok = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if tok as usize >= self.m.dims.vocab {
            // the queued step ran on token 0 at position p: its logits are not the session's
            self.has_logits = false;
            return Err(CudaError::Other("greedy decoding: no logit qualified (all NaN?): the model's output is unusable; reset the session".into()));
        }
        self.tokens.push(tok);
        self.logits_host = None;
        self.has_logits = true;
        Ok(tok)
    }

    /// Greedy decoding driven by the host (the engine Session's greedy runs: the CLI at
    /// temperature 0): evaluate `tok`, then take the argmax of its logits on the device, which
    /// also writes it there as the next step's token and position, and read back only that
    /// (4 bytes). The logits stay on the device until `logits` asks for them, and when the host
    /// then evaluates the returned token its upload is skipped. Against `eval` + `logits` + a
    /// host argmax this saves the 517 KB readback per token, the copies, the host scan and the
    /// two uploads: the time the GPU sat idle between steps. Unlike `eval_greedy` the host sees
    /// each token before it is evaluated (EOS and stops are not evaluated).
    pub fn eval_argmax(&mut self, tok: u32) -> Result<u32> {
        self.eval(tok)?;
        let p = self.tokens.len();
        let next = self.read_argmax(None, Some(p))?;
        if next as usize >= self.m.dims.vocab {
            return Err(CudaError::Other("greedy decoding: no logit qualified (all NaN?): the model's output is unusable; reset the session".into()));
        }
        self.next_on_device.set(Some((next, p)));
        Ok(next)
    }

    /// Sampling driven by the host with the choice's input gathered on the device (the engine
    /// Session's sampled runs at min_p, top_p 1, no top_k: the CLI's and the server's
    /// defaults): evaluate `tok`, then gather every logit `v` with `(v - max) / t >= floor`
    /// (argmax_excl, near_max) and read back only those: 8 KB instead of the 517 KB of logits,
    /// which stay on the device until `logits` asks for them. None when the set is not
    /// available (over NEAR_MAX_CAP logits, or a non-finite one): the caller reads all logits.
    pub fn eval_near_max(&mut self, tok: u32, t: f32, floor: f32, with_sum: bool) -> Result<Option<NearMax>> {
        self.eval(tok)?;
        self.near_max(t, floor, with_sum)
    }

    /// The vocabulary's size (the logits per token).
    pub fn vocab(&self) -> usize {
        self.m.dims.vocab
    }

    /// eval_near_max's set for the current logits (with the vocabulary's softmax sum when
    /// `with_sum`: top_p < 1).
    pub fn near_max(&mut self, t: f32, floor: f32, with_sum: bool) -> Result<Option<NearMax>> {
        self.launch_near_max(t, floor, NEAR_MAX_CAP, with_sum)?;
        self.read_near(with_sum)
    }

    /// argmax_excl, then near_max into a zeroed header (`cap` pairs at most; with the sum's
    /// partials when `with_sum`), for the current logits.
    fn launch_near_max(&mut self, t: f32, floor: f32, cap: usize, with_sum: bool) -> Result<()> {
        self.m.gpu.bind()?;
        if !self.has_logits {
            return Err(CudaError::Other("no logits yet".into()));
        }
        self.launch_argmax(None, None)?;
        self.gpu().memset0(self.sc.near.ptr, 4 * NEAR_HDR)?;
        let vocab = self.m.dims.vocab;
        let part = if with_sum { self.sc.near.ptr + near_max_read() as u64 } else { 0 };
        let args = Args::new().a(self.sc.logits.ptr).a(vocab as i32).a(self.sc.amax.ptr).a(t).a(floor).a(self.sc.near.ptr).a(cap as i32).a(part);
        let blocks = (vocab.div_ceil(1024) as u32).clamp(1, NEAR_BLOCKS as u32);
        self.gpu().launch("near_max", (blocks, 1, 1), 256, 0, args)
    }

    /// Sampling with top_k driven by the host (the engine Session's sampled runs with a
    /// top_k): evaluate `tok`, then gather the `k` largest logits on the device (ties to the
    /// smaller id, as `sampling::plan_top_k` takes them) and read back only those: 8 KB at
    /// most instead of the 517 KB of logits, which stay on the device until `logits` asks
    /// for them. None when the set is not available (k not below the vocabulary or over
    /// NEAR_MAX_CAP, or a non-finite logit): the caller reads all logits.
    pub fn eval_top_k(&mut self, tok: u32, k: usize) -> Result<Option<NearMax>> {
        self.eval(tok)?;
        self.top_k(k)
    }

    /// eval_top_k's set for the current logits.
    pub fn top_k(&mut self, k: usize) -> Result<Option<NearMax>> {
        let vocab = self.m.dims.vocab;
        if k == 0 || k >= vocab || k > NEAR_MAX_CAP {
            return Ok(None);
        }
        // near_max at an infinite floor keeps nothing: its header's count of non-finite
        // logits (topk_logits needs them finite), the winner and the largest logit
        self.launch_near_max(1.0, f32::INFINITY, 0, false)?;
        let sel = self.sc.near.ptr + (near_max_read() + 8 * NEAR_BLOCKS) as u64;
        let args = Args::new().a(self.sc.logits.ptr).a(vocab as i32).a(k as i32).a(sel);
        self.gpu().launch("topk_logits", (TOPK_CL as u32, 1, 1), 1024, 0, args)?;
        let args = Args::new().a(self.sc.logits.ptr).a(sel).a(k as i32).a(self.sc.near.ptr);
        self.gpu().launch("topk_pairs", (1, 1, 1), 1024, 0, args)?;
        self.read_near(false)
    }

    /// near_max's or top_k's output read back: None when the device saw a non-finite logit
    /// or more than NEAR_MAX_CAP logits qualified.
    fn read_near(&mut self, with_sum: bool) -> Result<Option<NearMax>> {
        let vocab = self.m.dims.vocab;
        self.m.gpu.dtoh_pinned(&mut self.near_host, self.sc.near.ptr, near_max_read())?;
        self.gpu().sync()?;
        let b = self.near_host.as_mut_slice();
        let word = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        let (count, bad) = (word(0) as usize, word(1));
        if bad != 0 || count > NEAR_MAX_CAP || word(2) as usize >= vocab {
            return Ok(None);
        }
        let mut pairs: Vec<(u32, f32)> = (0..count).map(|k| (word(NEAR_HDR + 2 * k), f32::from_bits(word(NEAR_HDR + 1 + 2 * k)))).collect();
        pairs.sort_unstable_by_key(|p| p.0);
        let (ids, logits) = pairs.into_iter().unzip();
        let sum = with_sum.then(|| f64::from_bits(word(4) as u64 | (word(5) as u64) << 32));
        Ok(Some(NearMax { best: word(2), max: f32::from_bits(word(3)), ids, logits, sum }))
    }

    /// Build (capture, not run) the decode graphs the next `n` steps will use: timing those
    /// steps then measures decoding, not graph building (ds4-bench; a graph serves 8192
    /// positions, and a capture costs milliseconds).
    pub fn prepare_decode(&mut self, n: usize) -> Result<()> {
        if !self.opts.graphs {
            return Ok(());
        }
        self.m.gpu.bind()?;
        let p0 = self.tokens.len();
        for p in p0..(p0 + n).min(self.opts.ctx) {
            self.ensure_graph(self.decode_key(p))?;
        }
        Ok(())
    }

    /// The decode graph of `key` (see decode_key), captured when not yet built.
    fn ensure_graph(&mut self, key: usize) -> Result<()> {
        if !self.graphs.contains_key(&key) {
            self.gpu().sync()?;
            self.gpu().begin_capture()?;
            let r = self.layers(1, true, key).and_then(|_| self.head_last(0, 1));
            let g = self.gpu().end_capture();
            r?;
            self.graphs.insert(key, g?);
            self.graph_captures += 1;
        }
        Ok(())
    }

    /// The decode forward of the token and position already in sc.tok / sc.pos (position p).
    fn decode_step(&mut self, p: usize) -> Result<()> {
        let key = self.decode_key(p);
        if self.opts.graphs {
            self.ensure_graph(key)?;
            self.gpu().launch_graph(&self.graphs[&key])?;
        } else {
            self.layers(1, true, key)?;
            self.head_last(0, 1)?;
        }
        Ok(())
    }

    /// argmax_excl over the logits into sc.amax; with `next_pos`, also the winner and that
    /// position as the next decode step's input (sc.tok, sc.pos).
    fn launch_argmax(&self, exclude: Option<u32>, next_pos: Option<usize>) -> Result<()> {
        let ex = exclude.map(|e| e as i32).unwrap_or(-1);
        let args = Args::new().a(self.sc.logits.ptr).a(self.m.dims.vocab as i32).a(ex).a(self.sc.amax.ptr);
        if next_pos.is_some() {
            self.next_on_device.set(None);
        }
        let args = match next_pos {
            Some(p) => args.a(self.sc.tok.ptr).a(self.sc.pos.ptr).a(p as i32),
            None => args.a(0u64).a(0u64).a(0i32),
        };
        let blocks = (self.m.dims.vocab.div_ceil(1024) as u32).clamp(1, 128);
        self.gpu().launch("argmax_excl", (blocks, 1, 1), 256, 0, args)
    }

    /// Wait for all queued work (eval_greedy returns while its step still runs).
    pub fn wait(&self) -> Result<()> {
        self.m.gpu.bind()?;
        self.gpu().sync()
    }

    /// Greedy next token from the current logits, skipping `exclude` (e.g. EOS).
    pub fn argmax(&mut self, exclude: Option<u32>) -> Result<u32> {
        self.m.gpu.bind()?;
        if !self.has_logits {
            return Err(CudaError::Other("no logits yet".into()));
        }
        self.read_argmax(exclude, None)
    }

    /// launch_argmax, then its winner read back (synchronizing).
    fn read_argmax(&self, exclude: Option<u32>, next_pos: Option<usize>) -> Result<u32> {
        self.launch_argmax(exclude, next_pos)?;
        let mut o = [0i32];
        self.gpu().dtoh(&mut o, self.sc.amax.ptr)?;
        Ok(o[0] as u32)
    }

    pub fn logits(&mut self) -> Result<&[f32]> {
        self.m.gpu.bind()?;
        if !self.has_logits {
            return Err(CudaError::Other("no logits yet".into()));
        }
        if self.logits_host.is_none() {
            // through pinned memory (a pageable copy goes through the driver's staging
            // buffers; the host-sampled paths read these 517 KB every token;
            // DS4_PAGEABLE_LOGITS=1: as before)
            let n = self.m.dims.vocab;
            let mut v = vec![0f32; n];
            if pageable_logits() {
                self.gpu().dtoh(&mut v, self.sc.logits.ptr)?;
            } else {
                if self.logits_pin.as_ref().is_none_or(|p| p.len < n * 4) {
                    self.logits_pin = Some(Pinned::new(n * 4)?);
                }
                let pin = self.logits_pin.as_mut().unwrap();
                self.m.gpu.dtoh_pinned(pin, self.sc.logits.ptr, n * 4)?;
                self.m.gpu.sync()?;
                for (d, b) in v.iter_mut().zip(pin.as_mut_slice()[..n * 4].chunks_exact(4)) {
                    *d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            self.logits_host = Some(v);
        }
        Ok(self.logits_host.as_deref().unwrap())
    }

    /// Bring the session to exactly `prompt`: keep the common prefix when the live state is a
    /// prefix of it, otherwise rebuild from position 0.
    pub fn sync(&mut self, prompt: &[u32]) -> Result<()> {
        let live = self.tokens.len();
        if live > prompt.len() || prompt[..live] != self.tokens[..] {
            self.reset()?;
        }
        let rest = prompt[self.tokens.len()..].to_vec();
        if !rest.is_empty() {
            self.prefill(&rest)?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // payload (KVCACHE.md §3) = snapshot
    // ---------------------------------------------------------------------------------------

    fn raw_live(&self) -> usize {
        self.tokens.len().min(self.m.dims.window).min(self.cap)
    }

    pub fn payload_bytes(&self) -> usize {
        let d = &self.m.dims;
        let p = self.tokens.len();
        let mut n = 13 * 4 + p * 4 + d.vocab * 4 + 2 * d.n_layer * 4;
        for (l, s) in self.st.iter().enumerate() {
            let r = d.ratios[l];
            n += self.raw_live() * d.dh * 4;
            if r > 0 {
                n += (p / r) * d.dh * 4;
            }
            if r == 4 {
                n += (p / 4) * d.di * 4;
            }
            n += [s.skv, s.ssc, s.iskv, s.issc].iter().flatten().map(|sp| sp.bytes).sum::<usize>();
        }
        n
    }

    /// Serialize the session (DSV4 payload v1, f32 rows).
    pub fn save_payload(&mut self) -> Result<Vec<u8>> {
        self.m.gpu.bind()?;
        if !self.has_logits {
            return Err(CudaError::Other("empty session".into()));
        }
        let d = self.m.dims.clone();
        let p = self.tokens.len();
        let mut out: Vec<u8> = Vec::with_capacity(self.payload_bytes());
        let chunk = if self.opts.ctx > 2048 { 2048 } else { self.opts.ctx };
        let rl = self.raw_live();
        let hdr = [
            0x3456_5344u32,
            1,
            self.opts.ctx as u32,
            chunk as u32,
            self.cap as u32,
            d.window.min(self.opts.ctx) as u32,
            self.comp_cap as u32,
            p as u32,
            d.n_layer as u32,
            d.dh as u32,
            d.di as u32,
            d.vocab as u32,
            rl as u32,
        ];
        for h in hdr {
            out.extend_from_slice(&h.to_le_bytes());
        }
        for &t in &self.tokens {
            out.extend_from_slice(&t.to_le_bytes());
        }
        let logits = self.logits()?.to_vec();
        push_f32(&mut out, &logits);
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            out.extend_from_slice(&(if r > 0 { (p / r) as u32 } else { 0 }).to_le_bytes());
        }
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            out.extend_from_slice(&(if r == 4 { (p / 4) as u32 } else { 0 }).to_le_bytes());
        }
        let gpu = self.m.gpu.clone();
        let mut get = |ptr: DevPtr, n: usize| pull_f32(&gpu, &mut out, ptr, n);
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            let s = &self.st[l];
            for (q, n) in ring_runs(p, rl, self.cap, usize::MAX) {
                get(s.raw.ptr + ((q % self.cap) * d.dh * 4) as u64, n * d.dh)?;
            }
            if r > 0 {
                get(s.comp.as_ref().unwrap().ptr, (p / r) * d.dh)?;
                for sp in [s.skv.unwrap(), s.ssc.unwrap()] {
                    get(sp.ptr, sp.len())?;
                }
            }
            if r == 4 {
                get(s.icomp.as_ref().unwrap().ptr, (p / 4) * d.di)?;
                for sp in [s.iskv.unwrap(), s.issc.unwrap()] {
                    get(sp.ptr, sp.len())?;
                }
            }
        }
        Ok(out)
    }

    /// Restore from a payload written by `save_payload` (or a compatible writer).
    pub fn load_payload(&mut self, data: &[u8]) -> Result<()> {
        self.m.gpu.bind()?;
        let d = self.m.dims.clone();
        let bad = |m: &str| CudaError::Other(format!("payload: {m}"));
        let mut rd = Reader { b: data, pos: 0 };
        let mut h = [0u32; 13];
        for x in h.iter_mut() {
            *x = rd.u32().ok_or_else(|| bad("truncated header"))?;
        }
        if h[0] != 0x3456_5344 || h[1] != 1 {
            return Err(bad("bad magic/version"));
        }
        let p = h[7] as usize;
        if h[8] as usize != d.n_layer || h[9] as usize != d.dh || h[10] as usize != d.di || h[11] as usize != d.vocab {
            return Err(bad("model dimensions differ"));
        }
        if p >= self.opts.ctx || h[2] as usize > self.opts.ctx {
            return Err(bad("does not fit this session's context"));
        }
        let rl = h[12] as usize;
        if rl != p.min(d.window) || rl > self.cap {
            return Err(bad("raw row count"));
        }
        let mut toks = Vec::with_capacity(p);
        for _ in 0..p {
            let t = rd.u32().ok_or_else(|| bad("truncated tokens"))?;
            if t as usize >= d.vocab {
                return Err(bad("token out of range"));
            }
            toks.push(t);
        }
        let logits = rd.f32s(d.vocab).ok_or_else(|| bad("truncated logits"))?;
        let mut ncomp = vec![0usize; d.n_layer];
        let mut nidx = vec![0usize; d.n_layer];
        for c in ncomp.iter_mut() {
            *c = rd.u32().ok_or_else(|| bad("truncated counts"))? as usize;
        }
        for c in nidx.iter_mut() {
            *c = rd.u32().ok_or_else(|| bad("truncated counts"))? as usize;
        }
        self.reset()?;
        let gpu = self.m.gpu.clone();
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            let s = &self.st[l];
            let want_c = if r > 0 { p / r } else { 0 };
            let want_i = if r == 4 { p / 4 } else { 0 };
            if ncomp[l] != want_c || nidx[l] != want_i {
                return Err(bad("row counts inconsistent with the token count"));
            }
            // (the payload's f32 bytes go to the device as they are: see pull_f32)
            for (q, n) in ring_runs(p, rl, self.cap, usize::MAX) {
                gpu.htod(s.raw.ptr + ((q % self.cap) * d.dh * 4) as u64, rd.f32_bytes(n * d.dh).ok_or_else(|| bad("truncated raw rows"))?)?;
            }
            if r > 0 {
                gpu.htod(s.comp.as_ref().unwrap().ptr, rd.f32_bytes(want_c * d.dh).ok_or_else(|| bad("truncated rows"))?)?;
                for sp in [s.skv.unwrap(), s.ssc.unwrap()] {
                    gpu.htod(sp.ptr, rd.f32_bytes(sp.len()).ok_or_else(|| bad("truncated state"))?)?;
                }
            }
            if r == 4 {
                gpu.htod(s.icomp.as_ref().unwrap().ptr, rd.f32_bytes(want_i * d.di).ok_or_else(|| bad("truncated rows"))?)?;
                for sp in [s.iskv.unwrap(), s.issc.unwrap()] {
                    gpu.htod(sp.ptr, rd.f32_bytes(sp.len()).ok_or_else(|| bad("truncated state"))?)?;
                }
            }
        }
        if rd.pos != data.len() {
            return Err(bad("trailing bytes"));
        }
        gpu.htod(self.sc.logits.ptr, &logits)?;
        self.tokens = toks;
        self.logits_host = Some(logits);
        self.has_logits = p > 0;
        Ok(())
    }
}

impl CudaSession {
    /// The state in the canonical CPU form (f32, ring of `window` rows) for snapshots/payloads.
    pub fn export_state(&self) -> Result<crate::state::KvState> {
        self.m.gpu.bind()?;
        let d = &self.m.dims;
        let p = self.tokens.len();
        let gpu = &self.m.gpu;
        let get = |ptr: DevPtr, n: usize| -> Result<Vec<f32>> {
            let mut v = vec![0f32; n];
            gpu.dtoh(&mut v, ptr)?;
            Ok(v)
        };
        let w = d.window;
        // every frontier in one copy of their arena, then sliced here
        let arena = get(self.fronts.ptr, self.fronts.bytes / 4)?;
        let at = |sp: Span| {
            let o = ((sp.ptr - self.fronts.ptr) / 4) as usize;
            arena[o..o + sp.len()].to_vec()
        };
        let mut layers = Vec::with_capacity(d.n_layer);
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            let s = &self.st[l];
            let mut raw = vec![0f32; w * d.dh];
            for (q, n) in ring_runs(p, p.min(w), self.cap, w) {
                gpu.dtoh(&mut raw[(q % w) * d.dh..(q % w + n) * d.dh], s.raw.ptr + ((q % self.cap) * d.dh * 4) as u64)?;
            }
            let front = |kv: Option<Span>, sc: Option<Span>, ratio: usize, dim: usize| -> Result<Option<crate::state::Frontier>> {
                match (kv, sc) {
                    (Some(kv), Some(sc)) => {
                        let mut f = crate::state::Frontier::new(ratio, dim);
                        (f.kv, f.score) = (at(kv), at(sc));
                        Ok(Some(f))
                    }
                    _ => Ok(None),
                }
            };
            layers.push(crate::state::LayerState {
                ratio: r,
                raw,
                comp: if r > 0 { get(s.comp.as_ref().unwrap().ptr, (p / r) * d.dh)? } else { Vec::new() },
                comp_front: front(s.skv, s.ssc, r, d.dh)?,
                idx: if r == 4 { get(s.icomp.as_ref().unwrap().ptr, (p / 4) * d.di)? } else { Vec::new() },
                idx_front: if r == 4 { front(s.iskv, s.issc, 4, d.di)? } else { None },
            });
        }
        Ok(crate::state::KvState { pos: p, raw_cap: w, head_dim: d.dh, idx_head_dim: d.di, layers })
    }

    /// Replace the whole state. Token ids are not part of a `KvState`: the session's token list
    /// becomes `pos` placeholders (callers that need ids, e.g. `sync`, track them themselves).
    pub fn import_state(&mut self, st: &crate::state::KvState) -> Result<()> {
        self.m.gpu.bind()?;
        let d = self.m.dims.clone();
        let bad = |m: &str| CudaError::Other(format!("import_state: {m}"));
        if st.head_dim != d.dh || st.idx_head_dim != d.di || st.layers.len() != d.n_layer || st.raw_cap == 0 {
            return Err(bad("state does not match this model's layout"));
        }
        let p = st.pos;
        if p >= self.opts.ctx {
            return Err(bad("state longer than this session's context"));
        }
        self.reset()?;
        let gpu = self.m.gpu.clone();
        // the frontiers gathered into an image of their arena, uploaded in one copy at the end
        let base = self.fronts.ptr;
        let mut arena = vec![0f32; self.fronts.bytes / 4];
        let mut put = |sp: Span, v: &[f32]| {
            let o = ((sp.ptr - base) / 4) as usize;
            arena[o..o + v.len()].copy_from_slice(v);
        };
        for l in 0..d.n_layer {
            let r = d.ratios[l];
            let (ls, s) = (&st.layers[l], &self.st[l]);
            if ls.ratio != r || ls.comp.len() != if r > 0 { (p / r) * d.dh } else { 0 } || ls.idx.len() != if r == 4 { (p / 4) * d.di } else { 0 } {
                return Err(bad("row counts do not match pos"));
            }
            if ls.raw.len() != st.raw_cap * d.dh {
                return Err(bad("raw ring size does not match raw_cap"));
            }
            let m = st.raw_cap;
            for (q, n) in ring_runs(p, p.min(d.window.min(m)), self.cap, m) {
                gpu.htod(s.raw.ptr + ((q % self.cap) * d.dh * 4) as u64, &ls.raw[(q % m) * d.dh..(q % m + n) * d.dh])?;
            }
            // a frontier of another shape would write past its span into the next one in `fronts`
            let fits = |f: &crate::state::Frontier, kv: Option<Span>| kv.is_some_and(|sp| f.kv.len() == sp.len() && f.score.len() == sp.len());
            if r > 0 {
                let f = ls.comp_front.as_ref().ok_or_else(|| bad("missing frontier"))?;
                if !fits(f, s.skv) {
                    return Err(bad("frontier size does not match this model"));
                }
                gpu.htod(s.comp.as_ref().unwrap().ptr, &ls.comp)?;
                put(s.skv.unwrap(), &f.kv);
                put(s.ssc.unwrap(), &f.score);
            }
            if r == 4 {
                let f = ls.idx_front.as_ref().ok_or_else(|| bad("missing indexer frontier"))?;
                if !fits(f, s.iskv) {
                    return Err(bad("indexer frontier size does not match this model"));
                }
                gpu.htod(s.icomp.as_ref().unwrap().ptr, &ls.idx)?;
                put(s.iskv.unwrap(), &f.kv);
                put(s.issc.unwrap(), &f.score);
            }
        }
        gpu.htod(base, &arena)?;
        self.tokens = vec![0; p];
        self.logits_host = None;
        self.has_logits = false;
        Ok(())
    }
}

/// The positions [p - n, p) (n <= p) as runs (first position, length) along which both a row's
/// slot in the device ring of `cap` rows (q % cap) and its place in a ring of `m` rows (q % m;
/// usize::MAX: in position order) advance by one: one copy per run instead of one per row (the
/// state's and payload's raw rows; at most three runs where n <= cap and n <= m).
fn ring_runs(p: usize, n: usize, cap: usize, m: usize) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut q = p - n;
    while q < p {
        let len = (p - q).min(cap - q % cap).min(m - q % m);
        runs.push((q, len));
        q += len;
    }
    runs
}

fn push_f32(out: &mut Vec<u8>, v: &[f32]) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

// The payload stores f32 little-endian, the device's own byte order, so on a little-endian
// host its rows move between the device and the payload's bytes with no conversion pass (a
// 64K-token payload of 575 MB took 772 ms to save through an f32 vector and a per-value push).
const _: () = assert!(cfg!(target_endian = "little"), "the CUDA payload code copies f32 bytes as they are");

/// Append `n` f32 values at device address `ptr` to `out` as their bytes.
fn pull_f32(gpu: &Gpu, out: &mut Vec<u8>, ptr: DevPtr, n: usize) -> Result<()> {
    let at = out.len();
    out.reserve(n * 4);
    gpu.dtoh(&mut out.spare_capacity_mut()[..n * 4], ptr)?;
    // SAFETY: the copy above wrote all n * 4 bytes after `at` (dtoh synchronizes, and returns
    // an error instead when the copy failed, leaving the length as it was).
    unsafe { out.set_len(at + n * 4) };
    Ok(())
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}
impl Reader<'_> {
    fn u32(&mut self) -> Option<u32> {
        let s = self.b.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    /// The bytes of n f32 values (little-endian, as the device holds them).
    fn f32_bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n.checked_mul(4)?)?)?;
        self.pos += n * 4;
        Some(s)
    }
    fn f32s(&mut self, n: usize) -> Option<Vec<f32>> {
        let s = self.b.get(self.pos..self.pos + n * 4)?;
        self.pos += n * 4;
        Some(s.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

fn fill_neg_inf(gpu: &Gpu, b: Span) -> Result<()> {
    let v = vec![-1.0e30f32; b.len()];
    gpu.htod(b.ptr, &v)
}

/// The kernel argument structs mirrored here: (C struct name, size, alignment of the Rust
/// mirror). `driver::kernel_source` appends a static_assert for each, so a layout that drifts
/// between the two languages fails the NVRTC compile (which CI runs for every kernel).
pub(crate) fn kernel_arg_layouts() -> Vec<(&'static str, usize, usize)> {
    use std::mem::{align_of, size_of};
    macro_rules! l {
        ($t:ty) => {
            (stringify!($t), size_of::<$t>(), align_of::<$t>())
        };
    }
    vec![l!(WMat), l!(MvJob), l!(MvJob2), l!(MvJobQ), l!(GemmArgs), l!(GuArgs), l!(CompArgs), l!(HcStepArgs), l!(AttnArgs), l!(AttnTcArgs), l!(AttnDecArgs), l!(IdxTcArgs), l!(RouterDecArgs), l!(HcSk), l!(JobSet<MvJob>), l!(JobSet<MvJob2>), l!(JobSet<MvJobQ>)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pair_chunks' table fits chunk_bound for any routing: the chunks of random and extreme
    /// (all pairs on one expert, one pair per expert) per-expert counts, counted here, at
    /// mvqm's chunk size and others.
    #[test]
    fn chunk_bound_covers_every_routing() {
        let mut seed = 12345u64;
        for nt in [1, 8, MVQM_NT, 32] {
            let chunks = |c: &[usize]| c.iter().map(|&n| n.div_ceil(nt)).sum::<usize>();
            for pairs in [1usize, 7, 8, 9, 15, 16, 17, 64, 255, 256, 257, 1536, 6144] {
                for e in [1usize, 16, 256] {
                    let mut c = vec![0usize; e];
                    for _ in 0..pairs {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        c[(seed >> 33) as usize % e] += 1;
                    }
                    assert!(chunks(&c) <= chunk_bound(e, pairs, nt), "random, {pairs} pairs, {e} experts, nt {nt}");
                    let mut one = vec![0usize; e];
                    one[0] = pairs;
                    assert!(chunks(&one) <= chunk_bound(e, pairs, nt));
                    let spread: Vec<usize> = (0..e).map(|i| pairs / e + usize::from(i < pairs % e)).collect();
                    assert!(chunks(&spread) <= chunk_bound(e, pairs, nt), "spread, {pairs} pairs, {e} experts, nt {nt}");
                }
            }
        }
    }

    /// gemm_qs_gu reads the up matrix at the gate's expert offsets and row strides: a pair is
    /// taken only when type, shape and both expert strides agree, and only for the types its
    /// entry point dispatches (a Q8_0 or F16 pair, or an up of another shape, stays unfused).
    #[test]
    fn gu_pairs_only_matrices_of_one_layout() {
        let iq2 = GgmlType::Iq2Xxs.id() as i32;
        let g = WMat { pay: 1 << 20, hdr: 1 << 30, e_pay: 2048 * 16 * 64, e_hdr: 2048 * 16 * 2, ty: iq2, rows: 2048, cols: 4096, pad: 0 };
        let u = WMat { pay: 1 << 24, hdr: 1 << 31, ..g };
        assert!(gu_pair_ok(&g, &u));
        for bad in [WMat { rows: 1024, ..u }, WMat { cols: 2048, ..u }, WMat { e_pay: g.e_pay + 64, ..u }, WMat { e_hdr: g.e_hdr + 2, ..u }, WMat { ty: GgmlType::Q2K.id() as i32, ..u }] {
            assert!(!gu_pair_ok(&g, &bad));
        }
        for (ty, ok) in [(GgmlType::Q2K, true), (GgmlType::Q4K, true), (GgmlType::Q8_0, false), (GgmlType::F16, false)] {
            let t = ty.id() as i32;
            assert_eq!(gu_pair_ok(&WMat { ty: t, ..g }, &WMat { ty: t, ..u }), ok, "{ty:?}");
        }
        assert!(gu_kind_ok(GqKernel::Qs) && gu_kind_ok(GqKernel::Qs2));
        assert!(!gu_kind_ok(GqKernel::Qr) && !gu_kind_ok(GqKernel::Qr2) && !gu_kind_ok(GqKernel::Qs4) && !gu_kind_ok(GqKernel::Mma));
    }

    /// idx_q_prep_l's shapes: the real indexer (64 heads of 128, RoPE 64) and the fixtures'
    /// (16 of 32, RoPE 16) take it; heads that neither divide nor are divided by a block's
    /// vectors, odd or oversized RoPE, another width, or more RoPE pairs than a block's table
    /// holds (model.cuh IDXQ_L_CS) do not.
    #[test]
    fn idx_q_prep_l_shapes() {
        assert!(idx_q_prep_l_ok(64, 128, 64) && idx_q_prep_l_ok(16, 32, 16) && idx_q_prep_l_ok(32, 256, 256));
        assert!(!idx_q_prep_l_ok(48, 128, 64) && !idx_q_prep_l_ok(64, 128, 63) && !idx_q_prep_l_ok(64, 128, 130) && !idx_q_prep_l_ok(64, 96, 32));
        // one head a token at Di 32: 256 tokens a block, 8 pairs each fit, 16 do not
        assert!(idx_q_prep_l_ok(1, 32, 16) && !idx_q_prep_l_ok(1, 32, 32));
    }

    /// hc_post_mma8's forms: the loads-ahead ones (HcBufs::pf) only on an f16 state, for y
    /// rows of one row (or none) and for the MoE sum of f16 slot rows; never without pf; every
    /// name one the module compiles.
    #[test]
    fn hc_pf_forms_only_where_they_apply() {
        let b = HcBufs { s: 0, post: 0, comb: 0, pdot: 0, pss: 0, ticket: 0, gs: 0, z: 0, split: 32, d: 4096, n: 4, eps: 0.0, iters: 20, hc_eps: 0.0, mma: true, s16: HC_S_F16, sat: 0, pf: true };
        let cases = [
            ((true, 1, false, false), "hc_post_mma8_hp"),
            ((false, 1, false, false), "hc_post_mma8_hp"),
            ((true, 7, false, false), "hc_post_mma8_h"),
            ((true, 6, true, false), "hc_post_mma8_h"),
            ((true, 6, true, true), "hc_post_mma8_hyp"),
        ];
        for ((y, ny, moe, y16), want) in cases {
            assert_eq!(hc_mma8_name(&b, y, ny, moe, y16), want, "{y} {ny} {moe} {y16}");
            let off = hc_mma8_name(&HcBufs { pf: false, ..b }, y, ny, moe, y16);
            assert_eq!(off, want.trim_end_matches('p'), "{y} {ny} {moe} {y16}");
            assert_eq!(hc_mma8_name(&HcBufs { s16: HC_S_F32, ..b }, y, ny, moe, true), "hc_post_mma8_y");
            for k in [want, off] {
                assert!(super::super::driver::KERNELS.contains(&k), "{k}");
            }
        }
        // f16 y rows: one row per token, on the f16 state with the loads ahead, never the MoE
        // sum's form
        assert_eq!(hc_mma8_name(&b, true, 1, false, true), "hc_post_mma8_hpy");
        assert!(super::super::driver::KERNELS.contains(&"hc_post_mma8_hpy"));
        assert!(hc_rows16_ok(&b, true, 1, false));
        assert_eq!(hc_mma8_name16(&b, true, 6, true, true, true), "hc_post_mma8_hyps");
        assert!(super::super::driver::KERNELS.contains(&"hc_post_mma8_hyps"));
        assert!(hc_shared16_ok(&b, true) && !hc_shared16_ok(&b, false) && !hc_shared16_ok(&HcBufs { pf: false, ..b }, true));
        // (sh16 names the shared form only for the MoE sum)
        assert_eq!(hc_mma8_name16(&b, true, 1, false, false, true), "hc_post_mma8_hp");
        for (bb, y, ny, moe) in [(HcBufs { pf: false, ..b }, true, 1, false), (HcBufs { s16: HC_S_F32, ..b }, true, 1, false), (b, false, 1, false), (b, true, 7, false), (b, true, 1, true)] {
            assert!(!hc_rows16_ok(&bb, y, ny, moe), "{} {} {y} {ny} {moe}", bb.pf, bb.s16);
        }
    }

    /// dense_small's chunk table: each batch size's run starts at dense_chunk_at, covers its
    /// tokens once in order in chunks of at most MVQM_NT, and the runs follow each other.
    #[test]
    fn dense_chunk_table_covers_each_batch() {
        let tab = dense_chunk_table();
        let mut next = 0;
        for t in 1..=DENSE_SMALL_MAX {
            let at = dense_chunk_at(t);
            assert_eq!(at, next, "t {t}");
            let mut covered = 0;
            for c in &tab[at..at + t.div_ceil(MVQM_NT)] {
                assert_eq!((c[0], c[1]), (0, covered as i32), "t {t}");
                assert!(c[2] >= 1 && c[2] as usize <= MVQM_NT);
                covered += c[2] as usize;
            }
            assert_eq!(covered, t);
            next = at + t.div_ceil(MVQM_NT);
        }
        assert_eq!(next, tab.len());
    }

    /// The tile line's counts and padding on slot counts worked out by hand, and the padding's
    /// order across widths (a finer width never pads more).
    #[test]
    fn moe_tile_stats_counts_and_padding() {
        // 600 = 2 full + 88; 64; 32; 1: partial 88 (bin 2), 64 (bin 1), 32 and 1 (bin 0);
        // useful 697; done at 64: 512 + 128 + 64 + 64 + 64 = 832 (135 padded, 19.4 %), at 32:
        // 512 + 96 + 64 + 32 + 32 = 736 (39, 5.6 %), at 16: 512 + 96 + 64 + 32 + 16 = 720 (23, 3.3 %)
        let s = moe_tile_stats(&[600, 64, 32, 1]);
        assert!(s.starts_with("full tiles 2, partial tiles by 32-token bin [2, 1, 1, 0, 0, 0, 0, 0]"), "{s}");
        assert!(s.ends_with("19.4 / 5.6 / 3.3 %"), "{s}");
        // whole 64-token multiples pad nothing at any width
        assert!(moe_tile_stats(&[64, 256, 512, 192]).ends_with("0.0 / 0.0 / 0.0 %"));
        // no experts: no division by zero
        assert!(moe_tile_stats(&[]).starts_with("full tiles 0"));
        let mut x = 12345u64;
        let n: Vec<usize> = (0..200)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                1 + (x >> 33) as usize % 700
            })
            .collect();
        let s = moe_tile_stats(&n);
        let p: Vec<f64> = s.rsplit(": ").next().unwrap().trim_end_matches(" %").split(" / ").map(|v| v.parse().unwrap()).collect();
        assert!(p[0] >= p[1] && p[1] >= p[2] && p[2] >= 0.0, "{s}");
    }

    fn wmat(ty: i32, rows: i32, cols: i32) -> WMat {
        WMat { ty, rows, cols, ..Default::default() }
    }

    /// The int8 attention side applies to the published model: its dimensions and tensor types
    /// as the synthetic full model's table has them (synth.rs checks that table against
    /// MODEL.md), read back through Dims::from_gguf. (Session 9's first version silently
    /// required a Q8_0 indexer q_b, which the published files store in F16.)
    #[test]
    fn int8_attention_fits_the_published_model() {
        let (h, _) = crate::synth::plan(&crate::synth::SynthOptions { preset: crate::synth::Preset::Full, quant: crate::synth::Quant::Q2, seed: 1, layers: None }).unwrap();
        let path = crate::synth::tests::write_sparse(&h, "attn-q8");
        let g = ds4_gguf::Gguf::open(&path);
        std::fs::remove_file(&path).unwrap();
        let g = g.unwrap();
        let d = super::super::dims::Dims::from_gguf(&g).unwrap();
        let ty = |n: &str| g.tensor(n).unwrap_or_else(|| panic!("{n}")).ty.id() as i32;
        for l in 0..d.n_layer {
            let t = [format!("blk.{l}.attn_q_b.weight"), format!("blk.{l}.attn_output_a.weight"), format!("blk.{l}.attn_output_b.weight")];
            let rows = g.tensor(&t[1]).unwrap().dims[1] as usize;
            assert!(attn_q8_fits(&d, rows, [ty(&t[0]), ty(&t[1]), ty(&t[2])]), "layer {l}");
        }
        // and not to a model whose widths it cannot take (the fixtures' q LoRA rank 64)
        assert!(!attn_q8_fits(&super::super::dims::Dims { rq: 64, ..d.clone() }, d.g * d.ro, [8, 8, 8]));
    }

    /// ring_runs covers the live window once, in position order, and inside each run neither
    /// the device slot (q % cap) nor the place in the other ring (q % m) wraps: so one copy per
    /// run moves the same rows as a copy per row. At most three runs when n <= cap, m.
    #[test]
    fn ring_runs_cover_the_window_without_wrapping() {
        for (cap, m) in [(384usize, 128usize), (256, 128), (128, 128), (640, 300), (384, usize::MAX)] {
            for p in 0..1500usize {
                for n in [p.min(m).min(cap), p.min(1), p.min(17)] {
                    let runs = super::ring_runs(p, n, cap, m);
                    let mut q = p - n;
                    for &(q0, len) in &runs {
                        assert!(q0 == q && len > 0, "p {p} n {n}: run at {q0} after {q}");
                        for i in 0..len {
                            assert_eq!((q0 + i) % cap, q0 % cap + i, "device slot wraps inside a run");
                            assert_eq!((q0 + i) % m, q0 % m + i, "ring place wraps inside a run");
                        }
                        q += len;
                    }
                    assert_eq!(q, p);
                    assert!(runs.len() <= 3, "p {p} n {n}: {} runs", runs.len());
                }
            }
        }
    }

    /// The mv2 work split is valid for every decode matvec of the real model and the fixtures:
    /// warps per row group divide the block's 8 warps, rows per warp are 1/2/4, and a block
    /// never straddles two input groups of a block-diagonal matrix.
    #[test]
    fn mv2_plans_are_valid() {
        // (type, rows, cols, slots, rows sharing one input slice)
        let shapes = [
            (8, 1024, 4096, 1, 1024),
            (8, 512, 4096, 1, 512),
            (8, 32768, 1024, 1, 32768),
            (8, 8192, 4096, 1, 1024), // out_a: 8 groups of 1024 rows
            (8, 4096, 8192, 1, 4096),
            (8, 129280, 4096, 1, 129280),
            (1, 1024, 4096, 1, 1024),
            (1, 256, 4096, 1, 256),
            (16, 2048, 4096, 6, 2048),
            (10, 4096, 2048, 6, 4096),
            (12, 2048, 4096, 6, 2048),
            (0, 64, 256, 1, 64), // fixture-sized f32
            (8, 48, 256, 1, 16),
        ];
        for (ty, rows, cols, slots, grp) in shapes {
            let mut j = MvJob2 { nslots: slots, x_grp_rows: grp, ..MvJob2::plain(wmat(ty, rows, cols), 0, 0) };
            j.plan(132);
            assert!([1, 2, 4, 8].contains(&j.wk), "{ty} {rows}x{cols}: wk {}", j.wk);
            assert!([1, 2, 4].contains(&j.rpw), "{ty} {rows}x{cols}: rpw {}", j.rpw);
            assert_eq!(grp as usize % j.rows_per_block(), 0, "{ty} {rows}x{cols}: block straddles input groups");
            assert!(j.blocks() * j.rows_per_block() >= (rows * slots) as usize, "rows not covered");
        }
    }

    /// gemm_q's split over K (gq_ks_plan): only where a launch's tiles leave SMs idle, every
    /// part with K steps, within the partial sums' scratch and the flags' bits.
    #[test]
    fn split_k_plans_fill_the_gpu_within_the_scratch() {
        for sm in [78usize, 114, 132] {
            for (rows, cols) in [(1024usize, 4096usize), (512, 4096), (256, 4096), (4096, 8192), (2048, 4096), (32768, 1024), (4096, 2048)] {
                for t in [1usize, 2, 7, 12, 33, 64, 100, 128, 300, 2048] {
                    for bn in [64usize, 128] {
                        let ks = gq_ks_plan(sm, rows, cols, t, bn);
                        let tiles = rows.div_ceil(128) * t.div_ceil(bn);
                        assert!((1..=32).contains(&ks), "{ks}");
                        if tiles >= sm {
                            assert_eq!(ks, 1, "a launch of {tiles} tiles already fills {sm} SMs");
                        }
                        if ks > 1 {
                            // each part has K steps, the parts fit the scratch and the flags' 5 bits
                            assert!(cols / 32 / ks >= 4, "{rows}x{cols} t {t}: {ks} parts");
                            assert!(ks * t * rows * 4 <= KS_PART_BYTES);
                            assert!(tiles * ks <= 2 * sm);
                            assert!(((ks as i32 - 1) << GQ_KS_SHIFT) & !(31 << GQ_KS_SHIFT) == 0);
                        }
                    }
                }
            }
        }
        // a one-token batch's small projections are split (H100: 132 SMs)
        assert!(gq_ks_plan(132, 1024, 4096, 1, 64) >= 16);
        assert!(gq_ks_plan(132, 512, 4096, 1, 64) >= 32);
    }

    /// 8 rows per warp exist only in mvq_b2 for unpaired Q8_0 jobs (q8.cuh mvq_rows): the
    /// tables of the published shapes get it where it applies (q_b) and nowhere else, and a
    /// job table that would run it elsewhere is refused rather than run at the wrong rows.
    #[test]
    fn mvq_r8_only_where_instantiated() {
        let q = (0u64, 0u64);
        // (a paired job is told by its second matrix's data pointer, as in the kernel)
        let wmat = |ty, rows, cols| WMat { pay: 1 << 20, ..wmat(ty, rows, cols) };
        let r8 = std::env::var("DS4_MVQ_R8").map(|v| v != "0").unwrap_or(true);
        // q_b (Q8_0 32768 x 1024) alone and beside the indexer's q_b (8192 x 1024)
        let mut b = [MvJobQ::plain(wmat(8, 32768, 1024), q, 0), MvJobQ::plain(wmat(8, 8192, 1024), q, 0)];
        let t = JobTableQ::new(&mut b).unwrap();
        assert_eq!(t.kern, MVQ_KERNELS[0]);
        for j in &b {
            assert_eq!(j.rpw, if r8 { 8 } else { 4 }, "{}x{}", j.w.rows, j.w.cols);
            assert!(j.blocks() * j.rows_per_block() >= j.w.rows as usize, "rows not covered");
        }
        // out_b (8192 columns) keeps its split; the routed experts' paired IQ2_XXS gate/up next
        // to the shared expert's Q8_0 pair run in mvq_b3 without it
        let mut ob = [MvJobQ::plain(wmat(8, 4096, 8192), q, 0)];
        JobTableQ::new(&mut ob).unwrap();
        assert_ne!(ob[0].rpw, 8);
        let mut g = MvJobQ::paired(wmat(16, 2048, 4096), wmat(16, 2048, 4096), q, 0, 7.0);
        g.nslots = 6;
        let mut f = [g, MvJobQ::paired(wmat(8, 2048, 4096), wmat(8, 2048, 4096), q, 0, 7.0)];
        let t = JobTableQ::new(&mut f).unwrap();
        assert_eq!(t.kern, MVQ_KERNELS[1]);
        assert!(f.iter().all(|j| j.rpw != 8));
        // forced where it does not exist: refused
        let forced = |j: MvJobQ, kern: &'static str| Jobs::with_kernel(&mut [MvJobQ { rpw: 8, wk: 1, ..j }], kern).is_err();
        assert!(forced(MvJobQ::plain(wmat(8, 32768, 1024), q, 0), MVQ_KERNELS[1]), "Q8_0 in mvq_b3");
        assert!(forced(MvJobQ::plain(wmat(16, 2048, 4096), q, 0), MVQ_KERNELS[0]), "IQ2_XXS in mvq_b2");
        assert!(forced(MvJobQ::paired(wmat(8, 2048, 4096), wmat(8, 2048, 4096), q, 0, 7.0), MVQ_KERNELS[0]), "paired");
        assert!(!forced(MvJobQ::plain(wmat(8, 32768, 1024), q, 0), MVQ_KERNELS[0]), "q_b in mvq_b2");
    }

    /// Prefill batches stay in [2048, MAX_CHUNK], multiples of 256, and keep the per-batch
    /// indexer score matrix within 4 GiB whenever the lower bound allows it.
    #[test]
    fn default_prefill_batch_bounds_the_score_matrix() {
        if std::env::var_os("DS4_CHUNK").is_some() {
            return; // an explicit override wins; nothing to check
        }
        let mut prev = usize::MAX;
        for ctx in [4096usize, 32768, 65536, 131072, 262144, 524288, 1 << 20] {
            let c = default_max_chunk(ctx);
            assert!((2048..=MAX_CHUNK).contains(&c) && c % 256 == 0, "ctx {ctx}: {c}");
            assert!(c == 2048 || (ctx / 4 + 2) * 4 * c <= 4 << 30, "ctx {ctx}: {c} tokens exceed the score budget");
            assert!(c <= prev, "batch grows with context");
            prev = c;
        }
        assert_eq!(default_max_chunk(65536), MAX_CHUNK);
    }
}
