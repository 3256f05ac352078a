//! Model weights resident in GPU memory. Uploaded once from the GGUF mmap through pinned
//! staging buffers (double-buffered, host copies spread over threads) and repacked on the
//! device into the (payload, header) block layout the kernels read (see kernels/matmul.cuh).

use super::dims::Dims;
use super::driver::{Args, CudaError, DevBuf, DevPtr, Event, Gpu, Pinned, Result};
use ds4_gguf::{GgmlType, Gguf, TensorInfo};
use rayon::prelude::*;
use std::sync::Arc;

/// Mirror of `struct WMat` in matmul.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WMat {
    pub pay: u64,
    pub hdr: u64,
    pub e_pay: i64,
    pub e_hdr: i64,
    pub ty: i32,
    pub rows: i32,
    pub cols: i32,
    pub pad: i32,
}

/// A weight matrix (or a stack of expert matrices) on the device.
pub struct GMat {
    pub pay: DevBuf,
    pub hdr: Option<DevBuf>,
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub n_exp: usize,
    pub e_pay: usize,
    pub e_hdr: usize,
    /// Bytes of the original GGUF data per expert (or for the whole matrix): what one matvec
    /// streams from memory.
    pub bytes_per_mat: usize,
}

impl GMat {
    pub fn wmat(&self) -> WMat {
        WMat {
            pay: self.pay.ptr,
            hdr: self.hdr.as_ref().map(|h| h.ptr).unwrap_or(0),
            e_pay: self.e_pay as i64,
            e_hdr: self.e_hdr as i64,
            ty: self.ty.id() as i32,
            rows: self.rows as i32,
            cols: self.cols as i32,
            pad: 0,
        }
    }
    /// Rows [r0, r0+n) of a plain matrix as a WMat.
    pub fn wmat_rows(&self, r0: usize, n: usize) -> WMat {
        let mut w = self.wmat();
        let (pb, hb) = split_sizes(self.ty);
        let bl = self.ty.block_len();
        let nb = self.cols / bl;
        w.pay += (r0 * nb * pb) as u64;
        if hb > 0 {
            w.hdr += (r0 * nb * hb) as u64;
        }
        w.rows = n as i32;
        w
    }
}

/// (payload bytes, header bytes) per block after repacking.
pub fn split_sizes(ty: GgmlType) -> (usize, usize) {
    match ty {
        GgmlType::F32 => (4, 0),
        GgmlType::F16 => (2, 0),
        GgmlType::Q8_0 => (32, 2),
        GgmlType::Iq2Xxs => (64, 2),
        GgmlType::Q2K => (80, 4),
        GgmlType::Q4K => (128, 16),
        _ => (0, 0),
    }
}
/// (header offset, header length) inside a GGUF block.
fn header_range(ty: GgmlType) -> (usize, usize) {
    match ty {
        GgmlType::Q8_0 | GgmlType::Iq2Xxs => (0, 2),
        GgmlType::Q2K => (80, 4),
        GgmlType::Q4K => (0, 16),
        _ => (0, 0),
    }
}

pub struct Uploader<'a> {
    gpu: &'a Gpu,
    stage_bytes: usize,
    pinned: [Pinned; 2],
    stage: [DevBuf; 2],
    events: [Event; 2],
    used: [bool; 2],
    turn: usize,
    pub done: u64,
    pub total: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

const STAGE: usize = 256 << 20;

impl<'a> Uploader<'a> {
    pub fn new(gpu: &'a Gpu, total: u64, progress: &'a mut dyn FnMut(u64, u64)) -> Result<Self> {
        // staging sized to the data for small uploads (kernel tests), 2 x 256 MiB otherwise
        let st = (total as usize).clamp(1 << 20, STAGE);
        Ok(Uploader {
            gpu,
            stage_bytes: st,
            pinned: [Pinned::new(st)?, Pinned::new(st)?],
            stage: [gpu.alloc(st)?, gpu.alloc(st)?],
            events: [gpu.event()?, gpu.event()?],
            used: [false, false],
            turn: 0,
            done: 0,
            total,
            progress,
        })
    }

    /// Stream `src` to the device; for every staged chunk call `sink(stage_ptr, offset, len)`
    /// which enqueues the device-side consumer (copy or repack). `unit` = chunk granularity.
    fn stream(&mut self, src: &[u8], unit: usize, mut sink: impl FnMut(&Gpu, DevPtr, usize, usize) -> Result<()>) -> Result<()> {
        let max = (self.stage_bytes / unit) * unit;
        let mut off = 0;
        while off < src.len() {
            let len = max.min(src.len() - off);
            let b = self.turn;
            self.turn ^= 1;
            if self.used[b] {
                self.events[b].synchronize()?;
            }
            let dst = &mut self.pinned[b].as_mut_slice()[..len];
            dst.par_chunks_mut(8 << 20).zip(src[off..off + len].par_chunks(8 << 20)).for_each(|(d, s)| d.copy_from_slice(s));
            self.gpu.htod_async(self.stage[b].ptr, &self.pinned[b].as_mut_slice()[..len])?;
            sink(self.gpu, self.stage[b].ptr, off, len)?;
            self.gpu.record(&self.events[b])?;
            self.used[b] = true;
            off += len;
            self.done += len as u64;
            (self.progress)(self.done, self.total);
        }
        Ok(())
    }

    pub fn finish(&mut self) -> Result<()> {
        self.gpu.sync()
    }

    /// Upload raw bytes (f32/f16/i32 tensors) as is.
    pub fn raw(&mut self, src: &[u8]) -> Result<DevBuf> {
        let buf = self.gpu.alloc(src.len())?;
        let base = buf.ptr;
        self.stream(src, 16, |g, st, off, len| g.dtod(base + off as u64, st, len))?;
        Ok(buf)
    }

    /// Upload a 2-D weight or a 3-D expert stack ([cols, rows, n_exp] in GGUF order).
    pub fn mat(&mut self, t: &TensorInfo, data: &[u8]) -> Result<GMat> {
        let cols = t.dims[0] as usize;
        let rows = *t.dims.get(1).unwrap_or(&1) as usize;
        let n_exp = *t.dims.get(2).unwrap_or(&1) as usize;
        let ty = t.ty;
        let bl = ty.block_len();
        let bb = ty.block_bytes();
        if !cols.is_multiple_of(bl) || !cols.is_multiple_of(8) {
            return Err(CudaError::Other(format!("{}: {cols} columns do not fit {} blocks", t.name, ty.name())));
        }
        let (pb, hb) = split_sizes(ty);
        if pb == 0 {
            return Err(CudaError::Other(format!("{}: type {} not supported by the CUDA backend", t.name, ty.name())));
        }
        let nblocks = rows * n_exp * (cols / bl);
        let expect = nblocks * bb;
        if data.len() != expect {
            return Err(CudaError::Other(format!("{}: {} data bytes, expected {expect}", t.name, data.len())));
        }
        let per_exp_blocks = rows * (cols / bl);
        if hb == 0 {
            let pay = self.raw(data)?;
            return Ok(GMat { pay, hdr: None, ty, rows, cols, n_exp, e_pay: per_exp_blocks * pb, e_hdr: 0, bytes_per_mat: per_exp_blocks * bb });
        }
        let pay = self.gpu.alloc(nblocks * pb)?;
        let hdr = self.gpu.alloc(nblocks * hb)?;
        let (hoff, hlen) = header_range(ty);
        let (pp, hp) = (pay.ptr, hdr.ptr);
        self.stream(data, bb, |g, st, off, len| {
            let b0 = off / bb;
            let nb = (len / bb) as i64;
            let args = Args::new()
                .a(st)
                .a(pp + (b0 * pb) as u64)
                .a(hp + (b0 * hb) as u64)
                .a(nb)
                .a(bb as i32)
                .a(hoff as i32)
                .a(hlen as i32);
            g.launch("repack_blocks", (((nb + 255) / 256) as u32, 1, 1), 256, 0, args)
        })?;
        Ok(GMat { pay, hdr: Some(hdr), ty, rows, cols, n_exp, e_pay: per_exp_blocks * pb, e_hdr: per_exp_blocks * hb, bytes_per_mat: per_exp_blocks * bb })
    }
}

/// Upload a matrix given as raw GGUF block bytes (benchmarks and kernel tests).
pub fn upload_raw_mat(gpu: &Gpu, name: &str, ty: GgmlType, dims: Vec<u64>, data: &[u8]) -> Result<GMat> {
    let t = TensorInfo { name: name.to_string(), dims, ty, offset: 0, n_bytes: data.len() as u64 };
    let mut nop = |_: u64, _: u64| {};
    let mut up = Uploader::new(gpu, data.len() as u64, &mut nop)?;
    let m = up.mat(&t, data)?;
    up.finish()?;
    Ok(m)
}

/// A Q8_0 copy of an F16 matrix, quantized on the device (q8.cuh `q8_from_f16`: MODEL.md
/// §5.6's rule, ds4-gguf's quantize_q8_0) into the repacked layout `Uploader::mat` gives Q8_0;
/// None for other matrices (another type, an expert stack, columns not a multiple of 32).
pub fn q8_copy(gpu: &Gpu, m: &GMat) -> Result<Option<GMat>> {
    if !q8_copy_fits(m.ty, m.n_exp, m.cols) {
        return Ok(None);
    }
    let nb = m.rows * m.cols / 32;
    let (pb, hb) = split_sizes(GgmlType::Q8_0);
    let pay = gpu.alloc(nb * pb)?;
    let hdr = gpu.alloc(nb * hb)?;
    let args = Args::new().a(m.pay.ptr).a(pay.ptr).a(hdr.ptr).a(nb as i64);
    gpu.launch("q8_from_f16", (nb.div_ceil(256) as u32, 1, 1), 256, 0, args)?;
    let bb = GgmlType::Q8_0.block_bytes();
    Ok(Some(GMat { pay, hdr: Some(hdr), ty: GgmlType::Q8_0, rows: m.rows, cols: m.cols, n_exp: 1, e_pay: nb * pb, e_hdr: nb * hb, bytes_per_mat: nb * bb }))
}

fn q8_copy_fits(ty: GgmlType, n_exp: usize, cols: usize) -> bool {
    ty == GgmlType::F16 && n_exp == 1 && cols.is_multiple_of(32)
}

/// Whether the loader makes a decode Q8_0 copy (`q8_copy`) of GGUF tensor `name`: the
/// indexer's q_b (`DS4_IDXQB_Q8=0`: none) and the F16 matrices of the attention side's first
/// decode launch, the compressors' and the indexer's kv / gate / proj (`DS4_ATTN_A_Q8=0`:
/// none; that launch then runs on f32 activations). One rule for the loader and the fit check.
fn q8_copied(name: &str) -> bool {
    if name.ends_with(IDX_Q_B) {
        return idxqb_q8();
    }
    let a_side = [false, true].iter().any(|&ix| ["kv", "gate"].iter().any(|part| name.ends_with(&comp_suffix(ix, part))));
    (a_side || name.ends_with(IDX_PROJ)) && attn_a_q8()
}

/// The GGUF name suffixes (after `blk.{l}`) of the indexer's q_b and proj.
const IDX_Q_B: &str = ".indexer.attn_q_b.weight";
const IDX_PROJ: &str = ".indexer.proj.weight";

/// The GGUF name suffix (after `blk.{l}`) of a compressor tensor `part` (ape, kv, gate, norm);
/// `indexer`: the indexer's compressor.
fn comp_suffix(indexer: bool, part: &str) -> String {
    format!(".{}_{part}.weight", if indexer { "indexer_compressor" } else { "attn_compressor" })
}

/// Layer `l`'s compressor tensor `part`; `indexer`: the indexer's.
pub fn comp_name(l: usize, indexer: bool, part: &str) -> String {
    format!("blk.{l}{}", comp_suffix(indexer, part))
}

/// `DS4_IDXQB_Q8=0`: no Q8_0 copy of the indexer's q_b (decode then reads the F16 matrix).
fn idxqb_q8() -> bool {
    std::env::var("DS4_IDXQB_Q8").map(|v| v != "0").unwrap_or(true)
}

/// `DS4_ATTN_A_Q8=0`: no Q8_0 copies of the attention side's F16 projections (see q8_copied).
pub fn attn_a_q8() -> bool {
    std::env::var("DS4_ATTN_A_Q8").map(|v| v != "0").unwrap_or(true)
}

/// The GGUF names of layer `l`'s indexer q_b and proj.
pub fn idx_q_b_name(l: usize) -> String {
    format!("blk.{l}{IDX_Q_B}")
}
pub fn idx_proj_name(l: usize) -> String {
    format!("blk.{l}{IDX_PROJ}")
}

impl GLayer {
    /// Layer `l`'s decode Q8_0 copies (`q8_copy`) with the GGUF names of their F16 sources.
    pub fn q8_copies(&self, l: usize) -> Vec<(String, &GMat)> {
        let mut v = Vec::new();
        for (c, indexer) in [(&self.comp, false), (&self.icomp, true)] {
            if let Some(c) = c {
                v.extend(c.kv8.as_ref().map(|m| (comp_name(l, indexer, "kv"), m)));
                v.extend(c.gate8.as_ref().map(|m| (comp_name(l, indexer, "gate"), m)));
            }
        }
        v.extend(self.idx_q_b8.as_ref().map(|m| (idx_q_b_name(l), m)));
        v.extend(self.idx_proj8.as_ref().map(|m| (idx_proj_name(l), m)));
        v
    }
}

pub struct GComp {
    pub ape: DevBuf,
    pub kv: GMat,
    pub gate: GMat,
    pub norm: DevBuf,
    /// kv and gate (F16 in the GGUF) as Q8_0 for decode's int8 matvec (`q8_copied`)
    pub kv8: Option<GMat>,
    pub gate8: Option<GMat>,
}

pub struct GLayer {
    pub ratio: usize,
    pub hc_attn_fn: DevBuf,
    pub hc_attn_scale: DevBuf,
    pub hc_attn_base: DevBuf,
    pub attn_norm: DevBuf,
    pub q_a: GMat,
    pub q_a_norm: DevBuf,
    pub q_b: GMat,
    pub kv: GMat,
    pub kv_norm: DevBuf,
    pub sinks: DevBuf,
    pub out_a: GMat,
    pub out_b: GMat,
    pub comp: Option<GComp>,
    pub icomp: Option<GComp>,
    pub idx_q_b: Option<GMat>,
    /// The indexer's q_b (F16 in the GGUF) as Q8_0, for decode's int8 matvec (`q8_copy`;
    /// `DS4_IDXQB_Q8=0`: none, decode reads the F16 matrix). Prefill keeps the F16 matrix.
    pub idx_q_b8: Option<GMat>,
    pub idx_proj: Option<GMat>,
    /// The indexer's proj as Q8_0 (`q8_copied`), like idx_q_b8.
    pub idx_proj8: Option<GMat>,
    pub hc_ffn_fn: DevBuf,
    pub hc_ffn_scale: DevBuf,
    pub hc_ffn_base: DevBuf,
    pub ffn_norm: DevBuf,
    pub gate_inp: GMat,
    pub probs_b: Option<DevBuf>,
    pub tid2eid: Option<DevBuf>,
    pub gate_exps: GMat,
    pub up_exps: GMat,
    pub down_exps: GMat,
    pub gate_sh: GMat,
    pub up_sh: GMat,
    pub down_sh: GMat,
}

pub struct CudaModel {
    pub gpu: Arc<Gpu>,
    pub dims: Dims,
    pub layers: Vec<GLayer>,
    pub tok_embd: DevBuf,
    pub out_hc_fn: DevBuf,
    pub out_hc_scale: DevBuf,
    pub out_hc_base: DevBuf,
    pub out_norm: DevBuf,
    pub output: GMat,
    pub omega_main: DevBuf,
    pub omega_comp: DevBuf,
    pub eos: Option<u32>,
    /// GGUF bytes streamed per decoded token at short context (weights only).
    pub decode_weight_bytes: u64,
    pub resident_bytes: u64,
    /// f16 copies of the dense quantized matrices prefill's cuBLAS path reads (`make_w16`),
    /// by payload address: (copy, rows, cols); made by the first session (`ensure_w16`).
    w16: std::sync::OnceLock<W16Map>,
}

type W16Map = std::collections::HashMap<u64, (DevBuf, i32, i32)>;

/// The f16 copies of the dense quantized matrices that prefill's cuBLAS path reads (q_a, kv,
/// q_b, out_a, out_b, the shared expert), made once by the kernel that dequantized them into
/// the scratch on every call (the same bits: blas.rs DenseCall::w16). Why: that pass ran per
/// call and chunk (~5 ms of an 8K prefill, more of a short one; H200, session 29: prompts of
/// 512 / 2K / 8K +2.6 / +1.7 / +0.9 %). Made by the first session after its own buffers
/// (`ensure_w16`: the context's caches come first), only while the device keeps
/// `DS4_W16_RESERVE_GB` (default 12) GiB free for the scratch allocated on first use (the
/// expert GEMMs' ~4.7 GB) and further sessions, in layer order; `DS4_W16=0`: none. 10.6 GiB
/// at the published shapes.
fn make_w16(gpu: &Gpu, layers: &[GLayer]) -> Result<W16Map> {
    let mut map = W16Map::new();
    if std::env::var("DS4_W16").is_ok_and(|v| v == "0") {
        return Ok(map);
    }
    let reserve = std::env::var("DS4_W16_RESERVE_GB").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(12) << 30;
    let mut bytes = 0u64;
    'all: for ly in layers {
        for m in [&ly.q_a, &ly.kv, &ly.q_b, &ly.out_a, &ly.out_b, &ly.gate_sh, &ly.up_sh, &ly.down_sh] {
            // (deq_f16 writes 8-value groups)
            if !super::blas::dequantized_per_call(&m.wmat()) || m.n_exp != 1 || !m.cols.is_multiple_of(8) {
                continue;
            }
            let b = m.rows * m.cols * 2;
            match gpu.free_mem() {
                Some(free) if free as u64 >= b as u64 + reserve => {}
                _ => break 'all,
            }
            let buf = gpu.alloc(b)?;
            super::blas::launch_deq_f16(gpu, m.wmat(), buf.ptr)?;
            bytes += b as u64;
            map.insert(m.pay.ptr, (buf, m.rows as i32, m.cols as i32));
        }
    }
    gpu.sync()?;
    if !map.is_empty() {
        eprintln!("ds4: f16 copies of {} dense matrices for prefill ({:.1} GiB)", map.len(), bytes as f64 / (1u64 << 30) as f64);
    }
    Ok(map)
}

impl CudaModel {
    /// Make the f16 copies (`make_w16`) unless made: once, by the first session. A failure
    /// leaves prefill dequantizing per call (logged, not an error).
    pub fn ensure_w16(&self) {
        self.w16.get_or_init(|| {
            make_w16(&self.gpu, &self.layers).unwrap_or_else(|e| {
                eprintln!("ds4: no f16 copies for prefill ({e}); prefill dequantizes per call");
                W16Map::new()
            })
        });
    }
    /// The f16 copy of `w` (`make_w16`), 0: none. A view of the first rows of a copied matrix
    /// reads the copy's first rows.
    pub fn w16_of(&self, w: WMat) -> DevPtr {
        match self.w16.get().and_then(|m| m.get(&w.pay)) {
            Some((b, rows, cols)) if w.cols == *cols && w.rows <= *rows => b.ptr,
            _ => 0,
        }
    }
}

fn tensor<'g>(g: &'g Gguf, name: &str) -> Result<&'g TensorInfo> {
    g.tensor(name).ok_or_else(|| CudaError::Other(format!("tensor {name} missing")))
}

fn check_f32(t: &TensorInfo, n: usize) -> Result<()> {
    if t.ty != GgmlType::F32 || t.n_elements() as usize != n {
        return Err(CudaError::Other(format!("{}: expected F32 x {n}, found {} x {:?}", t.name, t.ty.name(), t.dims)));
    }
    Ok(())
}

impl CudaModel {
    /// Upload every tensor. `progress(done_bytes, total_bytes)` is called as data streams.
    pub fn upload(gpu: Arc<Gpu>, g: &Gguf, progress: &mut dyn FnMut(u64, u64)) -> Result<CudaModel> {
        let dims = Dims::from_gguf(g)?;
        // (plus the Q8_0 copies made at load)
        let q8 = GgmlType::Q8_0;
        let q8_extra: u64 = g
            .tensors
            .iter()
            .filter(|t| q8_copied(&t.name) && q8_copy_fits(t.ty, *t.dims.get(2).unwrap_or(&1) as usize, *t.dims.first().unwrap_or(&1) as usize))
            .map(|t| t.n_elements() / q8.block_len() as u64 * q8.block_bytes() as u64)
            .sum();
        let total: u64 = g.tensors.iter().map(|t| t.n_bytes).sum();
        let need = total + q8_extra;
        // A model that cannot fit fails here with advice instead of an allocation error halfway
        // through the upload (best effort: no check when the driver cannot say).
        if let Some(free) = gpu.free_mem() {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            if need > free as u64 {
                return Err(CudaError::Other(format!(
                    "the weights need {:.1} GiB but {} has {:.1} GiB free: use --cpu, a smaller quantization (q2), or a GPU with more memory",
                    gib(need),
                    gpu.name,
                    gib(free as u64)
                )));
            }
        }
        let mut up = Uploader::new(&gpu, total, progress)?;
        let vecf = |name: &str, n: usize, up: &mut Uploader| -> Result<DevBuf> {
            let t = tensor(g, name)?;
            check_f32(t, n)?;
            up.raw(g.tensor_data(t))
        };
        let mat = |name: &str, up: &mut Uploader| -> Result<GMat> {
            let t = tensor(g, name)?;
            up.mat(t, g.tensor_data(t))
        };
        // a matrix and its decode Q8_0 copy when the loader makes one (q8_copied)
        let mat8 = |name: &str, up: &mut Uploader| -> Result<(GMat, Option<GMat>)> {
            let m = mat(name, up)?;
            let m8 = if q8_copied(name) { q8_copy(&gpu, &m)? } else { None };
            Ok((m, m8))
        };
        let f16raw = |name: &str, n: usize, up: &mut Uploader| -> Result<DevBuf> {
            let t = tensor(g, name)?;
            if t.ty != GgmlType::F16 || t.n_elements() as usize != n {
                return Err(CudaError::Other(format!("{name}: expected F16 x {n}, found {} {:?}", t.ty.name(), t.dims)));
            }
            up.raw(g.tensor_data(t))
        };
        let d = &dims;
        let nhc = d.n_hc;
        let mhc = nhc * (nhc + 2);
        let mut layers = Vec::with_capacity(d.n_layer);
        let mut decode_bytes: u64 = 0;
        for l in 0..d.n_layer {
            let p = |s: &str| format!("blk.{l}.{s}");
            let ratio = d.ratios[l];
            let comp_of = |indexer: bool, ape_n: usize, norm_n: usize, up: &mut Uploader| -> Result<GComp> {
                let ape = f16raw(&comp_name(l, indexer, "ape"), ape_n, up)?;
                let (kv, kv8) = mat8(&comp_name(l, indexer, "kv"), up)?;
                let (gate, gate8) = mat8(&comp_name(l, indexer, "gate"), up)?;
                let norm = vecf(&comp_name(l, indexer, "norm"), norm_n, up)?;
                Ok(GComp { ape, kv, gate, norm, kv8, gate8 })
            };
            let comp = if ratio > 0 {
                let w = if ratio == 4 { 2 * d.dh } else { d.dh };
                Some(comp_of(false, w * ratio, d.dh, &mut up)?)
            } else {
                None
            };
            let (icomp, idx_q_b, idx_proj) = if ratio == 4 {
                (Some(comp_of(true, 2 * d.di * 4, d.di, &mut up)?), Some(mat8(&idx_q_b_name(l), &mut up)?), Some(mat8(&idx_proj_name(l), &mut up)?))
            } else {
                (None, None, None)
            };
            let (idx_q_b, idx_q_b8) = idx_q_b.map_or((None, None), |(m, m8)| (Some(m), m8));
            let (idx_proj, idx_proj8) = idx_proj.map_or((None, None), |(m, m8)| (Some(m), m8));
            let has_bias = g.tensor(&p("exp_probs_b.bias")).is_some();
            let hash = l < d.n_hash;
            let layer = GLayer {
                ratio,
                hc_attn_fn: f16raw(&p("hc_attn_fn.weight"), mhc * nhc * d.d, &mut up)?,
                hc_attn_scale: vecf(&p("hc_attn_scale.weight"), 3, &mut up)?,
                hc_attn_base: vecf(&p("hc_attn_base.weight"), mhc, &mut up)?,
                attn_norm: vecf(&p("attn_norm.weight"), d.d, &mut up)?,
                q_a: mat(&p("attn_q_a.weight"), &mut up)?,
                q_a_norm: vecf(&p("attn_q_a_norm.weight"), d.rq, &mut up)?,
                q_b: mat(&p("attn_q_b.weight"), &mut up)?,
                kv: mat(&p("attn_kv.weight"), &mut up)?,
                kv_norm: vecf(&p("attn_kv_a_norm.weight"), d.dh, &mut up)?,
                sinks: vecf(&p("attn_sinks.weight"), d.h, &mut up)?,
                out_a: mat(&p("attn_output_a.weight"), &mut up)?,
                out_b: mat(&p("attn_output_b.weight"), &mut up)?,
                comp,
                icomp,
                idx_q_b8,
                idx_q_b,
                idx_proj,
                idx_proj8,
                hc_ffn_fn: f16raw(&p("hc_ffn_fn.weight"), mhc * nhc * d.d, &mut up)?,
                hc_ffn_scale: vecf(&p("hc_ffn_scale.weight"), 3, &mut up)?,
                hc_ffn_base: vecf(&p("hc_ffn_base.weight"), mhc, &mut up)?,
                ffn_norm: vecf(&p("ffn_norm.weight"), d.d, &mut up)?,
                gate_inp: mat(&p("ffn_gate_inp.weight"), &mut up)?,
                probs_b: if has_bias && !hash { Some(vecf(&p("exp_probs_b.bias"), d.e, &mut up)?) } else { None },
                tid2eid: if hash {
                    let t = tensor(g, &p("ffn_gate_tid2eid.weight"))?;
                    if t.ty != GgmlType::I32 || t.n_elements() as usize != d.k * d.vocab {
                        return Err(CudaError::Other(format!("{}: bad hash table", t.name)));
                    }
                    let data = g.tensor_data(t);
                    if data.chunks_exact(4).any(|c| {
                        let v = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        v < 0 || v as usize >= d.e
                    }) {
                        return Err(CudaError::Other(format!("{}: expert id out of range", t.name)));
                    }
                    Some(up.raw(data)?)
                } else {
                    None
                },
                gate_exps: mat(&p("ffn_gate_exps.weight"), &mut up)?,
                up_exps: mat(&p("ffn_up_exps.weight"), &mut up)?,
                down_exps: mat(&p("ffn_down_exps.weight"), &mut up)?,
                gate_sh: mat(&p("ffn_gate_shexp.weight"), &mut up)?,
                up_sh: mat(&p("ffn_up_shexp.weight"), &mut up)?,
                down_sh: mat(&p("ffn_down_shexp.weight"), &mut up)?,
            };
            let lb = |m: &GMat| m.bytes_per_mat as u64;
            let mut b = lb(&layer.q_a) + lb(&layer.q_b) + lb(&layer.kv) + lb(&layer.out_a) + lb(&layer.out_b);
            b += 2 * (mhc * nhc * d.d * 2) as u64 + lb(&layer.gate_inp);
            b += d.k as u64 * (lb(&layer.gate_exps) + lb(&layer.up_exps) + lb(&layer.down_exps));
            b += lb(&layer.gate_sh) + lb(&layer.up_sh) + lb(&layer.down_sh);
            if let Some(c) = &layer.comp {
                b += lb(&c.kv) + lb(&c.gate);
            }
            if let Some(c) = &layer.icomp {
                b += lb(&c.kv) + lb(&c.gate) + lb(layer.idx_proj.as_ref().unwrap());
            }
            // the indexer's q_b: read by every step once the indexer selects (contexts past 4 x
            // top-k; below that this figure overstates the step by it). Every matrix counts at
            // its GGUF size (the floor), although decode reads the Q8_0 copies of the
            // F16 ones (q8_copied: ~0.45 GB less per token at the published shapes)
            b += layer.idx_q_b.as_ref().map_or(0, lb);
            decode_bytes += b;
            layers.push(layer);
        }
        let tok_embd = f16raw("token_embd.weight", d.d * d.vocab, &mut up)?;
        let out_hc_fn = f16raw("output_hc_fn.weight", nhc * nhc * d.d, &mut up)?;
        let out_hc_scale = vecf("output_hc_scale.weight", 1, &mut up)?;
        let out_hc_base = vecf("output_hc_base.weight", nhc, &mut up)?;
        let out_norm = vecf("output_norm.weight", d.d, &mut up)?;
        let output = mat("output.weight", &mut up)?;
        decode_bytes += output.bytes_per_mat as u64 + (nhc * nhc * d.d * 2) as u64;
        up.finish()?;
        drop(up);
        let (om, oc) = dims.omegas();
        let omega_main = gpu.alloc(om.len() * 4)?;
        gpu.htod(omega_main.ptr, &om)?;
        let omega_comp = gpu.alloc(oc.len() * 4)?;
        gpu.htod(omega_comp.ptr, &oc)?;
        let eos = g
            .meta("tokenizer.ggml.eos_token_id")
            .and_then(|v| v.as_u64())
            .map(|v| v as u32);
        Ok(CudaModel {
            gpu,
            dims,
            layers,
            tok_embd,
            out_hc_fn,
            out_hc_scale,
            out_hc_base,
            out_norm,
            output,
            omega_main,
            omega_comp,
            eos,
            decode_weight_bytes: decode_bytes,
            resident_bytes: need,
            w16: std::sync::OnceLock::new(),
        })
    }
}
