//! Kernel microbenchmarks at the real DeepSeek V4 Flash shapes with random (valid) blocks:
//! achieved bandwidth of every decode matvec type, the fused MoE down projection, prefill GEMM
//! throughput, the device-copy ceiling they are compared with, and prefill attention (SIMT vs
//! tensor cores; `DS4_KBENCH=attn` runs only that section) and the prefill lightning-indexer
//! scores (SIMT vs tensor cores; `DS4_KBENCH=idx`), the routed-expert GEMMs of prefill on
//! the grouped kernel vs cuBLAS (`DS4_KBENCH=exp`), the decode attention / router kernels
//! against the previous ones (`DS4_KBENCH=dec`), and the fused hyper-connection step against
//! the kernels it replaces (`DS4_KBENCH=hc`).

use super::blas::{launch_x_to_f16, dense_blas_wanted, dense_min_t, exp_blas_wanted, exp_host_time, exp_min_t, exp_streams, DenseCall, Dense16, ExpCall};
use super::driver::{Args, CudaError, DevBuf, Gpu, Result};
use super::session::{
    gemm_q_bn, gemm_q_flags, gq_xh_ok, GqKernel, GQ_FLAG_XH, launch_gemm_q, launch_gemm_q_kernel, launch_moe_grp, launch_moe_mid_form, launch_moe_mid_pairs_as, moe_grp_scratch_bytes, launch_quant_q8, moe_group2_smem, GemmArgs, MidForm, GridJob, JobTable, JobTable2, JobTableQ, Jobs, MvJob, MvJob2,
    MvJobQ, MV2_KERNELS, MVQ_KERNELS, launch_pair_chunks, launch_quant_chunked, mvq_type_ok, chunk_bound, mvqs_type_ok, MVQM_NT,
};
use super::weights::{q8_copy, upload_raw_mat, GMat, WMat};
use ds4_gguf::GgmlType;

/// Device-to-device copy bandwidth (bytes read + written per second), 2 x 2 GiB buffers.
pub fn copy_ceiling(gpu: &Gpu) -> Result<f64> {
    let n = 2usize << 30;
    let a = gpu.alloc_zeroed(n)?;
    let b = gpu.alloc_zeroed(n)?;
    let n4 = (n / 16) as i64;
    let grid = (gpu.sm_count as u32) * 8;
    let run = |gpu: &Gpu| gpu.launch("copy_f4", (grid, 1, 1), 256, 0, Args::new().a(a.ptr).a(b.ptr).a(n4));
    for _ in 0..3 {
        run(gpu)?;
    }
    let (e0, e1) = (gpu.event()?, gpu.event()?);
    gpu.record(&e0)?;
    let reps = 10;
    for _ in 0..reps {
        run(gpu)?;
    }
    gpu.record(&e1)?;
    let ms = gpu.elapsed_ms(&e0, &e1)? as f64;
    Ok(2.0 * n as f64 * reps as f64 / (ms / 1e3))
}

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Random blocks of `ty` with small finite f16 scales.
pub fn random_blocks(ty: GgmlType, n_values: usize, seed: u64) -> Vec<u8> {
    let bl = ty.block_len();
    let bb = ty.block_bytes();
    let nb = n_values / bl;
    let mut s = seed | 1;
    let mut v = vec![0u8; nb * bb];
    for c in v.chunks_mut(8) {
        let r = rng(&mut s).to_le_bytes();
        c.copy_from_slice(&r[..c.len()]);
    }
    let scale: [u8; 2] = 0x2000u16.to_le_bytes(); // 2^-7
    for blk in v.chunks_mut(bb) {
        match ty {
            GgmlType::F16 => {
                blk[1] &= 0x3b; // keep |x| < 1, finite
            }
            GgmlType::F32 => {}
            GgmlType::Q8_0 | GgmlType::Iq2Xxs => blk[..2].copy_from_slice(&scale),
            GgmlType::Q2K => {
                blk[80..82].copy_from_slice(&scale);
                blk[82..84].copy_from_slice(&scale);
            }
            GgmlType::Q4K => {
                blk[..2].copy_from_slice(&scale);
                blk[2..4].copy_from_slice(&scale);
            }
            _ => {}
        }
    }
    if ty == GgmlType::F32 {
        for c in v.chunks_mut(4) {
            let x = (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 9) as f32 / (1u32 << 23) as f32 - 0.5;
            c.copy_from_slice(&x.to_le_bytes());
        }
    }
    v
}

struct Case {
    name: &'static str,
    ty: GgmlType,
    cols: usize,
    rows: usize,
    n_exp: usize,
    slots: usize,
}

/// Print a table of matvec bandwidths and GEMM rates; return nothing (stdout report).
/// `DS4_KBENCH` picks one section: `attn`, `idx`, `q8`, `exp`, `dec`, `hc` (see the module
/// docs), `gemm` only the GEMMs, `mv` only the decode matvecs; unset: matvecs, GEMMs,
/// attention and indexer.
pub fn run() -> Result<()> {
    let gpu = Gpu::new(0)?;
    let mode = std::env::var("DS4_KBENCH").unwrap_or_default();
    match mode.as_str() {
        "attn" => return attn_bench(&gpu),
        "idx" => return idx_bench(&gpu),
        "q8" => return q8_bench(&gpu),
        "q8o" => return q8o_check(&gpu),
        "exp" => return exp_bench(&gpu),
        "dec" => return dec_bench(&gpu),
        "hc" => return hc_bench(&gpu),
        "hcp" => return hc_prefill_bench(&gpu),
        "mid" => return mid_bench(&gpu),
        "comp" => return comp_bench(&gpu),
        _ => {}
    }
    let ceil = copy_ceiling(&gpu)?;
    println!("device: {} ({} SMs), copy ceiling {:.3} TB/s", gpu.name, gpu.sm_count, ceil / 1e12);
    let cases = [
        Case { name: "q_a   Q8_0 4096->1024", ty: GgmlType::Q8_0, cols: 4096, rows: 1024, n_exp: 1, slots: 1 },
        Case { name: "kv    Q8_0 4096->512", ty: GgmlType::Q8_0, cols: 4096, rows: 512, n_exp: 1, slots: 1 },
        Case { name: "q_b   Q8_0 1024->32768", ty: GgmlType::Q8_0, cols: 1024, rows: 32768, n_exp: 1, slots: 1 },
        Case { name: "out_b Q8_0 8192->4096", ty: GgmlType::Q8_0, cols: 8192, rows: 4096, n_exp: 1, slots: 1 },
        Case { name: "head  Q8_0 4096->129280", ty: GgmlType::Q8_0, cols: 4096, rows: 129280, n_exp: 1, slots: 1 },
        Case { name: "comp  F16  4096->1024", ty: GgmlType::F16, cols: 4096, rows: 1024, n_exp: 1, slots: 1 },
        Case { name: "gate  IQ2_XXS 6x4096->2048", ty: GgmlType::Iq2Xxs, cols: 4096, rows: 2048, n_exp: 256, slots: 6 },
        Case { name: "down  Q2_K 6x2048->4096", ty: GgmlType::Q2K, cols: 2048, rows: 4096, n_exp: 256, slots: 6 },
        Case { name: "gate  Q4_K 6x4096->2048", ty: GgmlType::Q4K, cols: 4096, rows: 2048, n_exp: 256, slots: 6 },
    ];
    let x = gpu.alloc(8 * 16384 * 4)?;
    let xs: Vec<f32> = (0..8 * 16384).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    gpu.htod(x.ptr, &xs)?;
    let y = gpu.alloc(8 * 131072 * 4)?;
    let sel = gpu.alloc(64)?;
    let only_gemm = mode == "gemm";
    if !only_gemm {
        println!("{:<28} {:>10} {:>10} {:>8}   {:>8} {:>8}  {}", "matvec (decode)", "MB/call", "us", "TB/s", "mv2 us", "TB/s", "mv2 vs old: max|d| rel");
    }
    for c in cases.iter().filter(|_| !only_gemm) {
        let data = random_blocks(c.ty, c.cols * c.rows * c.n_exp, 17 + c.rows as u64);
        let m: GMat = upload_raw_mat(&gpu, c.name, c.ty, if c.n_exp > 1 { vec![c.cols as u64, c.rows as u64, c.n_exp as u64] } else { vec![c.cols as u64, c.rows as u64] }, &data)?;
        drop(data);
        // enough distinct selections/copies that the working set exceeds L2
        let per_call = m.bytes_per_mat * c.slots;
        let variants = ((512usize << 20) / per_call.max(1)).clamp(1, 64);
        let mut tables = Vec::new();
        let mut tables2 = Vec::new();
        let mut specs: Vec<MvJob2> = Vec::new();
        let mut copies = Vec::new();
        for v in 0..variants {
            let (w, selp) = if c.n_exp > 1 {
                let ids: Vec<i32> = (0..c.slots).map(|i| ((v * 37 + i * 41) % c.n_exp) as i32).collect();
                let b = gpu.alloc(64)?;
                gpu.htod(b.ptr, &ids)?;
                let p = b.ptr;
                copies.push(b);
                (m.wmat(), p)
            } else if v == 0 {
                (m.wmat(), 0)
            } else {
                let d2 = random_blocks(c.ty, c.cols * c.rows, 1000 + v as u64);
                let m2 = upload_raw_mat(&gpu, c.name, c.ty, vec![c.cols as u64, c.rows as u64], &d2)?;
                let w = m2.wmat();
                copies.push(m2.pay);
                if let Some(h) = m2.hdr {
                    copies.push(h);
                }
                (w, 0)
            };
            let mut j = [MvJob { w, x: x.ptr, y: y.ptr, sel: selp, x_slot: 0, nslots: c.slots as i32, x_grp_rows: w.rows }];
            tables.push(JobTable::new(&mut j)?);
            let mut j2 = [MvJob2 { sel: selp, nslots: c.slots as i32, ..MvJob2::plain(w, x.ptr, y.ptr) }];
            tables2.push(JobTable2::new(&gpu, &mut j2)?);
            specs.push(j2[0]);
        }
        // correctness: the same job through both kernels
        let n_out = c.rows * c.slots;
        let mut y_old = vec![0f32; n_out];
        let mut y_new = vec![0f32; n_out];
        tables[0].run(&gpu, 1)?;
        gpu.dtoh(&mut y_old, y.ptr)?;
        gpu.memset0(y.ptr, n_out * 4)?;
        tables2[0].run(&gpu, 1)?;
        gpu.dtoh(&mut y_new, y.ptr)?;
        let (mut md, mut num, mut den) = (0f64, 0f64, 0f64);
        for (a, b) in y_old.iter().zip(&y_new) {
            let dd = (*a as f64 - *b as f64).abs();
            md = if dd.is_nan() { f64::INFINITY } else { md.max(dd) };
            num += dd * dd;
            den += (*a as f64) * (*a as f64);
        }
        let rel = (num / den.max(1e-300)).sqrt();
        let _ = &sel;
        for t in tables.iter().take(3) {
            t.run(&gpu, 1)?;
        }
        let reps = 200;
        let (e0, e1) = (gpu.event()?, gpu.event()?);
        gpu.record(&e0)?;
        for i in 0..reps {
            tables[i % tables.len()].run(&gpu, 1)?;
        }
        gpu.record(&e1)?;
        let ms = gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64;
        for t in tables2.iter().take(3) {
            t.run(&gpu, 1)?;
        }
        gpu.record(&e0)?;
        for i in 0..reps {
            tables2[i % tables2.len()].run(&gpu, 1)?;
        }
        gpu.record(&e1)?;
        let ms2 = gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64;
        let tbs = |ms: f64| per_call as f64 / (ms / 1e3) / 1e12;
        println!(
            "{:<28} {:>10.2} {:>10.2} {:>8.3}   {:>8.2} {:>8.3}  {:.2e} {:.2e}{}",
            c.name,
            per_call as f64 / 1e6,
            ms * 1e3,
            tbs(ms),
            ms2 * 1e3,
            tbs(ms2),
            md,
            rel,
            if rel < 1e-5 { "" } else { "  MISMATCH" }
        );
        // sweep of the mv2 work split (warps per row group, rows per warp, register cap)
        let res = sweep_splits(&gpu, &specs, &MV2_KERNELS, y.ptr, &y_old)?;
        print_sweep(c.name, &res, |us| tbs(us / 1e3));
    }
    if mode == "mv" {
        return gpu.sync();
    }
    gemm_bench(&gpu)?;
    gpu.sync()?;
    attn_bench(&gpu)?;
    idx_bench(&gpu)
}

/// int8-activation decode matvecs (`quant_q8` + `mvq`, DS4_KBENCH=q8) against the f32 `mv2`
/// kernel on the same weights and inputs, at the decode FFN shapes: time and bandwidth of
/// both, the int8 result's error relative to the f32 one (expected ~4e-3: 8-bit inputs with a
/// scale per 32 values), run-to-run bit identity, and a sweep of the mvq work split.
fn q8_bench(gpu: &Gpu) -> Result<()> {
    let ceil = copy_ceiling(gpu)?;
    println!("device: {} ({} SMs), copy ceiling {:.3} TB/s", gpu.name, gpu.sm_count, ceil / 1e12);
    // (name, type, cols, rows, experts, slots, distinct input per slot)
    let cases = [
        ("gate   IQ2_XXS 6x4096->2048", GgmlType::Iq2Xxs, 4096usize, 2048usize, 256usize, 6usize, false),
        ("down   Q2_K 6x2048->4096", GgmlType::Q2K, 2048, 4096, 256, 6, true),
        ("gate   Q4_K 6x4096->2048", GgmlType::Q4K, 4096, 2048, 256, 6, false),
        ("shared Q8_0 4096->2048", GgmlType::Q8_0, 4096, 2048, 1, 1, false),
        ("shared Q8_0 2048->4096", GgmlType::Q8_0, 2048, 4096, 1, 1, false),
        // attention-side projections
        ("q_a    Q8_0 4096->1024", GgmlType::Q8_0, 4096, 1024, 1, 1, false),
        // F16 compressor kv / gate (ratio 4 / 128): the int8 path reads the matrix's Q8_0 copy
        // (weights.rs q8_copy), so its error also holds the weights' rounding
        ("ckv    F16 4096->1024 q8copy", GgmlType::F16, 4096, 1024, 1, 1, false),
        ("ckv    F16 4096->512 q8copy", GgmlType::F16, 4096, 512, 1, 1, false),
        ("q_b    Q8_0 1024->32768", GgmlType::Q8_0, 1024, 32768, 1, 1, false),
        ("out_a  Q8_0 4096->8192", GgmlType::Q8_0, 4096, 8192, 1, 1, false),
        ("out_b  Q8_0 8192->4096", GgmlType::Q8_0, 8192, 4096, 1, 1, false),
    ];
    let nx = 8 * 16384;
    let x = gpu.alloc(nx * 4)?;
    let mut seed = 99u64;
    // smooth part + noise, not uniform: closer to activations (a few large values per block)
    let xs: Vec<f32> = (0..nx).map(|i| (((i * 7919) % 1000) as f32 / 1000.0 - 0.5) * (1.0 + 3.0 * frand(&mut seed).powi(8))).collect();
    gpu.htod(x.ptr, &xs)?;
    let qs = gpu.alloc(nx)?;
    let qd = gpu.alloc(nx / 32 * 8)?;
    let y = gpu.alloc(8 * 131072 * 4)?;
    let (e0, e1) = (gpu.event()?, gpu.event()?);
    // the read floor: the same number of bytes read by read_f4 from a 1 GiB buffer, at a
    // rotating offset so that L2 (50 MB) does not hold the previous call's bytes
    let rbuf = gpu.alloc_zeroed(1 << 30)?;
    println!(
        "{:<28} {:>8} {:>9} {:>9} {:>7}  {:>9} {:>7}  {:>8}  {:>9} {:>9} {:>9}  {}",
        "int8 decode matvec", "MB/call", "floor us", "f32 us", "TB/s", "int8 us", "TB/s", "quant us", "rel rms", "max|d|/mx", "max rel", "det"
    );
    // DS4_KBENCH_CASE=substring: only the cases whose name contains it (Nsight Compute runs)
    let only = std::env::var("DS4_KBENCH_CASE").ok();
    for (name, ty, cols, rows, n_exp, slots, per_slot) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let data = random_blocks(ty, cols * rows * n_exp, 23 + rows as u64 + cols as u64);
        let dims = if n_exp > 1 { vec![cols as u64, rows as u64, n_exp as u64] } else { vec![cols as u64, rows as u64] };
        let m: GMat = upload_raw_mat(gpu, name, ty, dims, &data)?;
        drop(data);
        let per_call = m.bytes_per_mat * slots;
        let variants = ((512usize << 20) / per_call.max(1)).clamp(1, 64);
        let x_slot = if per_slot { cols } else { 0 };
        let nq = if per_slot { cols * slots } else { cols };
        let mut keep = Vec::new();
        let mut t32 = Vec::new();
        let mut tq = Vec::new();
        let mut specs = Vec::new();
        // an F16 matrix: the int8 path on its Q8_0 copy (weights.rs q8_copy, as decode reads it)
        let copy8 = |m: &GMat, keep: &mut Vec<DevBuf>| -> Result<WMat> {
            if ty != GgmlType::F16 {
                return Ok(m.wmat());
            }
            let m8 = q8_copy(gpu, m)?.ok_or_else(|| CudaError::Other(format!("{name}: no Q8_0 copy")))?;
            let w8 = m8.wmat();
            keep.push(m8.pay);
            keep.extend(m8.hdr);
            Ok(w8)
        };
        for v in 0..variants {
            let (w, wq, selp) = if n_exp > 1 {
                let ids: Vec<i32> = (0..slots).map(|i| ((v * 37 + i * 41) % n_exp) as i32).collect();
                let b = gpu.alloc(64)?;
                gpu.htod(b.ptr, &ids)?;
                let p = b.ptr;
                keep.push(b);
                (m.wmat(), m.wmat(), p)
            } else if v == 0 {
                (m.wmat(), copy8(&m, &mut keep)?, 0)
            } else {
                let d2 = random_blocks(ty, cols * rows, 2000 + v as u64);
                let m2 = upload_raw_mat(gpu, name, ty, vec![cols as u64, rows as u64], &d2)?;
                let w = m2.wmat();
                let wq = copy8(&m2, &mut keep)?;
                keep.push(m2.pay);
                if let Some(h) = m2.hdr {
                    keep.push(h);
                }
                (w, wq, 0)
            };
            let mut j2 = [MvJob2 { sel: selp, nslots: slots as i32, x_slot: x_slot as i64, ..MvJob2::plain(w, x.ptr, y.ptr) }];
            t32.push(JobTable2::new(gpu, &mut j2)?);
            let mut jq = [MvJobQ { sel: selp, nslots: slots as i32, x_slot: x_slot as i64, ..MvJobQ::plain(wq, (qs.ptr, qd.ptr), y.ptr) }];
            tq.push(JobTableQ::new(&mut jq)?);
            specs.push(jq[0]);
        }
        let n_out = rows * slots;
        let mut yf = vec![0f32; n_out];
        let mut yq = vec![0f32; n_out];
        let mut yq2 = vec![0f32; n_out];
        t32[0].run(gpu, 1)?;
        gpu.dtoh(&mut yf, y.ptr)?;
        gpu.memset0(y.ptr, n_out * 4)?;
        launch_quant_q8(gpu, x.ptr, nq, 0, 0, qs.ptr, qd.ptr)?;
        tq[0].run(gpu, 1)?;
        gpu.dtoh(&mut yq, y.ptr)?;
        gpu.memset0(y.ptr, n_out * 4)?;
        launch_quant_q8(gpu, x.ptr, nq, 0, 0, qs.ptr, qd.ptr)?;
        tq[0].run(gpu, 1)?;
        gpu.dtoh(&mut yq2, y.ptr)?;
        let det = yq.iter().zip(&yq2).all(|(a, b)| a.to_bits() == b.to_bits());
        let (mut md, mut mref, mut num, mut den, mut mrel) = (0f64, 0f64, 0f64, 0f64, 0f64);
        let rms_ref = (yf.iter().map(|&a| (a as f64) * (a as f64)).sum::<f64>() / n_out as f64).sqrt();
        for (a, b) in yf.iter().zip(&yq) {
            let dd = (*a as f64 - *b as f64).abs();
            let dd = if dd.is_nan() { f64::INFINITY } else { dd };
            md = md.max(dd);
            mref = mref.max((*a as f64).abs());
            num += dd * dd;
            den += (*a as f64) * (*a as f64);
            // per-row relative error, rows near zero measured against the rms row value
            mrel = mrel.max(dd / (*a as f64).abs().max(rms_ref));
        }
        let rel = (num / den.max(1e-300)).sqrt();
        let time = |f: &dyn Fn(usize) -> Result<()>| -> Result<f64> {
            for i in 0..3 {
                f(i)?;
            }
            let reps = 200;
            gpu.record(&e0)?;
            for i in 0..reps {
                f(i)?;
            }
            gpu.record(&e1)?;
            Ok(gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64 * 1e3)
        };
        let us32 = time(&|i| t32[i % t32.len()].run(gpu, 1))?;
        let usq = time(&|i| tq[i % tq.len()].run(gpu, 1))?;
        let usquant = time(&|_| launch_quant_q8(gpu, x.ptr, nq, 0, 0, qs.ptr, qd.ptr))?;
        let n4 = per_call / 16;
        let slots_r = ((1usize << 30) / 16 / n4.max(1)).max(1);
        let floor = time(&|i| {
            let off = ((i % slots_r) * n4 * 16) as u64;
            gpu.launch("read_f4", (gpu.sm_count as u32 * 8, 1, 1), 256, 0, Args::new().a(rbuf.ptr + off).a(n4 as i64).a(y.ptr))
        })?;
        let tbs = |us: f64| per_call as f64 / (us / 1e6) / 1e12;
        // (the int8 path of an F16 case reads the Q8_0 copy's bytes)
        let per_call8 = if ty == GgmlType::F16 { rows * cols / 32 * GgmlType::Q8_0.block_bytes() * slots } else { per_call };
        let tbs8 = |us: f64| per_call8 as f64 / (us / 1e6) / 1e12;
        println!(
            "{:<28} {:>8.2} {:>9.2} {:>9.2} {:>7.3}  {:>9.2} {:>7.3}  {:>8.2}  {:>9.2e} {:>9.2e} {:>9.2e}  {}{}",
            name,
            per_call as f64 / 1e6,
            floor,
            us32,
            tbs(us32),
            usq,
            tbs8(usq),
            usquant,
            rel,
            md / mref.max(1e-300),
            mrel,
            if det { "bit-identical" } else { "NONDETERMINISTIC" },
            if rel < 3e-2 { "" } else { "  MISMATCH" }
        );
        // work split sweep (rows per warp, warps per row group, register cap)
        let res = sweep_splits(gpu, &specs, &MVQ_KERNELS, y.ptr, &yq)?;
        print_sweep(name, &res, tbs8);
    }
    gpu.sync()
}

/// `DS4_KBENCH=q8o`: the int8 decode launches of session 9 at the real shapes, each against an
/// attn_prep's q LoRA width in the kernel benches (the published model's).
const AP_RQ: usize = 1024;

/// attn_prep for one token on random inputs from `seed` (q LoRA AP_RQ, head 512, rotary 64),
/// also writing qr quantized to `qq` = (values, scales) unless 0, and running `sk` in its
/// extra block when `sk.z` != 0 (grid 2). Returns qr.
fn run_attn_prep(gpu: &Gpu, seed: u64, qq: (u64, u64), sk: super::session::HcSk) -> Result<DevBuf> {
    let (rq, dh, r) = (AP_RQ, 512usize, 64usize);
    let mut seed = seed;
    let mut up = |k: usize| -> Result<DevBuf> {
        let v: Vec<f32> = (0..k).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        gpu.upload(&v)
    };
    let (qa, kvp, qn_w, kvn_w, omega) = (up(rq)?, up(dh)?, up(rq)?, up(dh)?, up(r / 2)?);
    let pos = gpu.alloc(4)?;
    gpu.htod(pos.ptr, &[7i32])?;
    let (qr, raw) = (gpu.alloc(rq * 4)?, gpu.alloc(dh * 4)?);
    let args = Args::new().a(qa.ptr).a(kvp.ptr).a(qn_w.ptr).a(kvn_w.ptr).a(rq as i32).a(dh as i32).a(r as i32).a(1e-6f32).a(pos.ptr).a(omega.ptr);
    let args = args.a(qr.ptr).a(raw.ptr).a(1i32).a(0i32).a(0i32).a(0u64).a(qq.0).a(qq.1).a(sk);
    gpu.launch("attn_prep", (1 + (sk.z != 0) as u32, 1, 1), 512, ((rq + dh) * 4) as u32, args)?;
    gpu.sync()?;
    Ok(qr)
}

/// independent path (prints FAIL lines; exit status stays 0):
/// * out_a as 8 slots of one 1024-row matrix (`MvJobQ::row_groups`) against matvec_grouped's
///   block-diagonal f32 matvec (x_grp_rows), within int8 activation error;
/// * the quantized outputs written by the matvec (out_a's, and a layer's gate/up mids: the
///   routed experts' and the shared expert's in one launch) against quant_q8 of its own f32
///   output: bit-identical.
fn q8o_check(gpu: &Gpu) -> Result<()> {
    let mut seed = 5u64;
    let mut fails = 0;
    let mut rnd = |n: usize| -> Vec<f32> { (0..n).map(|_| frand(&mut seed) * 2.0 - 1.0).collect() };
    let quant = |x: u64, n: usize| -> Result<(DevBuf, DevBuf)> {
        let (q, d) = (gpu.alloc(n)?, gpu.alloc(n / 32 * 8)?);
        launch_quant_q8(gpu, x, n, 0, 0, q.ptr, d.ptr)?;
        Ok((q, d))
    };
    // the quantized output (yq, yd) against quant_q8 of y: the same bytes
    let same_q8 = |name: &str, y: u64, yq: u64, yd: u64, n: usize, fails: &mut i32| -> Result<()> {
        let (q, d) = quant(y, n)?;
        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
        gpu.dtoh(&mut a, q.ptr)?;
        gpu.dtoh(&mut b, yq)?;
        let (mut ad, mut bd) = (vec![0u8; n / 4], vec![0u8; n / 4]);
        gpu.dtoh(&mut ad, d.ptr)?;
        gpu.dtoh(&mut bd, yd)?;
        let diff = a.iter().zip(&b).filter(|(x, y)| x != y).count() + ad.iter().zip(&bd).filter(|(x, y)| x != y).count();
        println!("{} {name}: quantized output vs quant_q8 of the f32 output: {diff} differing bytes of {}", if diff == 0 { "ok  " } else { "FAIL" }, n + n / 4);
        *fails += (diff != 0) as i32;
        Ok(())
    };
    // out_a: 8 groups of 1024 rows x 4096 columns
    let (g, ro, hg) = (8usize, 1024usize, 4096usize);
    let m = upload_raw_mat(gpu, "out_a", GgmlType::Q8_0, vec![hg as u64, (g * ro) as u64], &random_blocks(GgmlType::Q8_0, hg * g * ro, 77))?;
    let x = gpu.upload(&rnd(g * hg))?;
    let yref = gpu.alloc(g * ro * 4)?;
    let mut jr = [MvJob { x_grp_rows: ro as i32, ..MvJob::plain(m.wmat(), x.ptr, yref.ptr) }];
    JobTable::new(&mut jr)?.run(gpu, 1)?;
    let (qx, qxd) = quant(x.ptr, g * hg)?;
    let ids: Vec<i32> = (0..g as i32).collect();
    let idb = gpu.alloc(g * 4)?;
    gpu.htod(idb.ptr, &ids)?;
    let (y, yq, yd) = (gpu.alloc(g * ro * 4)?, gpu.alloc(g * ro)?, gpu.alloc(g * ro / 32 * 8)?);
    let mut c = MvJobQ::row_groups(&m, g, (qx.ptr, qxd.ptr), y.ptr, idb.ptr);
    (c.yq, c.yd) = (yq.ptr, yd.ptr);
    JobTableQ::new(&mut [c])?.run(gpu, 1)?;
    let (mut a, mut b) = (vec![0f32; g * ro], vec![0f32; g * ro]);
    gpu.dtoh(&mut a, yref.ptr)?;
    gpu.dtoh(&mut b, y.ptr)?;
    let (num, den) = a.iter().zip(&b).fold((0f64, 0f64), |(n, d), (p, q)| (n + ((p - q) as f64).powi(2), d + (*p as f64).powi(2)));
    let rel = (num / den.max(1e-300)).sqrt();
    // the int8 activation error of the other Q8_0 cases of the q8 bench is 6-7e-3
    let ok = rel < 2e-2;
    println!("{} out_a as {g} slots vs the block-diagonal f32 matvec: rel rms {rel:.2e}", if ok { "ok  " } else { "FAIL" });
    fails += (!ok) as i32;
    same_q8("out_a", y.ptr, yq.ptr, yd.ptr, g * ro, &mut fails)?;
    // gate/up of a layer: 6 of 8 IQ2_XXS experts (paired, routing weights) + the Q8_0 shared one
    let (d, f, k, ne) = (4096usize, 2048usize, 6usize, 8usize);
    let mk = |ty: GgmlType, n_exp: usize, s: u64| -> Result<GMat> {
        let dims = if n_exp > 1 { vec![d as u64, f as u64, n_exp as u64] } else { vec![d as u64, f as u64] };
        upload_raw_mat(gpu, "ffn", ty, dims, &random_blocks(ty, d * f * n_exp, s))
    };
    let (ge, ue, gs, us) = (mk(GgmlType::Iq2Xxs, ne, 1)?, mk(GgmlType::Iq2Xxs, ne, 2)?, mk(GgmlType::Q8_0, 1, 3)?, mk(GgmlType::Q8_0, 1, 4)?);
    let xn = gpu.upload(&rnd(d))?;
    let (qn, qnd) = quant(xn.ptr, d)?;
    let sel: Vec<i32> = vec![5, 0, 7, 2, 3, 6];
    let selb = gpu.alloc(k * 4)?;
    gpu.htod(selb.ptr, &sel)?;
    let wts = gpu.upload(&rnd(k).iter().map(|v| v.abs() + 0.1).collect::<Vec<_>>())?;
    let (mid, qm, qmd) = (gpu.alloc((k + 1) * f * 4)?, gpu.alloc((k + 1) * f)?, gpu.alloc((k + 1) * f / 32 * 8)?);
    let mut fr = MvJobQ::paired(ge.wmat(), ue.wmat(), (qn.ptr, qnd.ptr), mid.ptr, 10.0);
    (fr.nslots, fr.sel, fr.wts, fr.yq, fr.yd) = (k as i32, selb.ptr, wts.ptr, qm.ptr, qmd.ptr);
    let mut fs = MvJobQ::paired(gs.wmat(), us.wmat(), (qn.ptr, qnd.ptr), mid.ptr + (k * f * 4) as u64, 10.0);
    (fs.yq, fs.yd) = (qm.ptr + (k * f) as u64, qmd.ptr + (k * f / 32 * 8) as u64);
    JobTableQ::new(&mut [fs, fr])?.run(gpu, 2)?;
    same_q8("gate/up mids (6 routed + shared)", mid.ptr, qm.ptr, qmd.ptr, (k + 1) * f, &mut fails)?;
    // attn_prep's quantized qr (the int8 q_b input) against quant_q8 of its f32 qr
    let (qq, qqd) = (gpu.alloc(AP_RQ)?, gpu.alloc(AP_RQ / 32 * 8)?);
    let qr = run_attn_prep(gpu, 31, (qq.ptr, qqd.ptr), super::session::HcSk::default())?;
    same_q8("attn_prep qr", qr.ptr, qq.ptr, qqd.ptr, AP_RQ, &mut fails)?;
    gpu.sync()?;
    println!("q8o: {fails} failed");
    Ok(())
}

/// A split-K decode matvec job whose work split the sweeps vary.
trait Split: GridJob {
    fn with_split(self, wk: i32, rpw: i32) -> Self;
}
impl Split for MvJob2 {
    fn with_split(self, wk: i32, rpw: i32) -> Self {
        MvJob2 { wk, rpw, ..self }
    }
}
impl Split for MvJobQ {
    fn with_split(self, wk: i32, rpw: i32) -> Self {
        MvJobQ { wk, rpw, ..self }
    }
}

/// Every work split (warps per row group, rows per warp, register-cap entry point) of `specs`
/// (one job over several weight copies, so that the timed working set exceeds L2): the first
/// copy's output is checked against `reference` (a split only reorders f32 sums), then all are
/// timed round-robin. Returns (us per call, label), fastest first.
fn sweep_splits<J: Split>(gpu: &Gpu, specs: &[J], kernels: &[&'static str], y: u64, reference: &[f32]) -> Result<Vec<(f64, String)>> {
    let (e0, e1) = (gpu.event()?, gpu.event()?);
    let mut out = vec![0f32; reference.len()];
    let mut res = Vec::new();
    for wk in [1, 2, 4, 8] {
        for r in [1, 2, 4, 8] {
            for &kern in kernels {
                let ts = specs.iter().map(|sp| Jobs::with_kernel(&mut [sp.with_split(wk, r)], kern)).collect::<Result<Vec<_>>>();
                // 8 rows per warp: only the entry points and jobs that have it (mvq_b2, Q8_0)
                let ts = match ts {
                    Err(_) if r == 8 => continue,
                    t => t?,
                };
                gpu.memset0(y, reference.len() * 4)?;
                ts[0].run(gpu, 1)?;
                gpu.dtoh(&mut out, y)?;
                let bad = reference.iter().zip(&out).any(|(a, b)| ((a - b).abs() as f64) > 1e-4 * (1.0 + a.abs() as f64));
                for t in ts.iter().take(3) {
                    t.run(gpu, 1)?;
                }
                let reps = 100;
                gpu.record(&e0)?;
                for i in 0..reps {
                    ts[i % ts.len()].run(gpu, 1)?;
                }
                gpu.record(&e1)?;
                let us = gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64 * 1e3;
                res.push((us, format!("wk{wk} R{r} {kern}{}", if bad { " WRONG" } else { "" })));
            }
        }
    }
    res.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(res)
}

/// The four fastest splits, the slowest time and the count of wrong outputs (every split with
/// DS4_KBENCH_SWEEP set); `tbs` converts us per call to TB/s.
fn print_sweep(name: &str, res: &[(f64, String)], tbs: impl Fn(f64) -> f64) {
    let wrong = res.iter().filter(|r| r.1.contains("WRONG")).count();
    let top: Vec<String> = res.iter().take(4).map(|(us, n)| format!("{n} {us:.1}us {:.2}TB/s", tbs(*us))).collect();
    println!("  sweep {name}: {} | worst {:.1}us | wrong {wrong}", top.join(" | "), res.last().map(|r| r.0).unwrap_or(0.0));
    if std::env::var("DS4_KBENCH_SWEEP").is_ok() {
        for (us, n) in res {
            println!("    {n:<22} {us:>8.1} us {:>6.3} TB/s", tbs(*us));
        }
    }
}

/// Error of `y` against the reference `r`: (rel rms, max |y - r|, max |r|, non-finite y
/// values; rel is NaN when there are any).
fn err_stats(y: &[f32], r: &[f32]) -> (f64, f64, f64, usize) {
    let (mut num, mut den, mut mx, mut mref, mut bad) = (0f64, 0f64, 0f64, 0f64, 0usize);
    for (a, b) in y.iter().zip(r) {
        if !a.is_finite() {
            bad += 1;
            continue;
        }
        let e = (*a as f64) - (*b as f64);
        num += e * e;
        den += (*b as f64) * (*b as f64);
        mx = mx.max(e.abs());
        mref = mref.max((*b as f64).abs());
    }
    (if bad > 0 { f64::NAN } else { (num / den.max(1e-300)).sqrt() }, mx, mref, bad)
}

/// Mean milliseconds per call of `reps` back-to-back calls of `f` (CUDA events).
fn time_ms(gpu: &Gpu, reps: usize, f: &dyn Fn() -> Result<()>) -> Result<f64> {
    let (e0, e1) = (gpu.event()?, gpu.event()?);
    gpu.record(&e0)?;
    for _ in 0..reps {
        f()?;
    }
    gpu.record(&e1)?;
    Ok(gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64)
}

/// Mean microseconds per call of `reps` calls captured in one CUDA graph (as decode runs
/// them: no host launch gaps), replayed 3 times after a warm-up replay.
fn graph_us(gpu: &Gpu, reps: usize, f: &dyn Fn() -> Result<()>) -> Result<f64> {
    gpu.sync()?;
    gpu.begin_capture()?;
    for _ in 0..reps {
        f()?;
    }
    let g = gpu.end_capture()?;
    gpu.launch_graph(&g)?;
    let (e0, e1) = (gpu.event()?, gpu.event()?);
    gpu.record(&e0)?;
    for _ in 0..3 {
        gpu.launch_graph(&g)?;
    }
    gpu.record(&e1)?;
    Ok(gpu.elapsed_ms(&e0, &e1)? as f64 * 1e3 / (3 * reps) as f64)
}

fn frand(seed: &mut u64) -> f32 {
    (rng(seed) >> 40) as f32 / (1u64 << 24) as f32 // [0, 1)
}

struct AttnCase {
    h: usize,
    dh: usize,
    rd: usize,
    topk: usize,
    t: usize,
    p0: usize,
    ratio: usize,
    reps: usize,
}

/// Prefill attention: the SIMT path (attn_partial + attn_combine, the reference) and the
/// tensor-core path on the same random inputs, through the session's own launch functions.
/// One line per case: ms of each, the tensor-core rate, ||tc-simt||/||simt||, max abs error,
/// and whether two tensor-core runs gave identical bits.
/// Shape of a random attention input: heads, head dim, rope dims, indexer top-k, raw ring
/// capacity, `t` query tokens at positions p0.., compression ratio.
#[derive(Clone, Copy)]
struct AttnShape {
    h: usize,
    dh: usize,
    rd: usize,
    topk: usize,
    cap: usize,
    p0: usize,
    t: usize,
    ratio: usize,
}

/// Random attention inputs on the device (shared by the prefill and decode attention benches).
struct AttnInputs {
    s: AttnShape,
    comp_rows: usize,
    q: DevBuf,
    raw: DevBuf,
    comp: DevBuf,
    sinks: DevBuf,
    omega: DevBuf,
    pos: DevBuf,
    sel: DevBuf,
}

impl AttnInputs {
    fn new(gpu: &Gpu, s: AttnShape, mut seed: u64) -> Result<AttnInputs> {
        let AttnShape { h, dh, rd, topk, cap, p0, t, ratio } = s;
        let comp_rows = (p0 + t).checked_div(ratio).unwrap_or(0);
        // q: any scale (normalized per head); rows in [-3, 3): logits of std ~1.7 over 512 dims
        let qv: Vec<f32> = (0..t * h * dh).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let rawv: Vec<f32> = (0..cap * dh).map(|_| frand(&mut seed) * 6.0 - 3.0).collect();
        let compv: Vec<f32> = (0..comp_rows.max(1) * dh).map(|_| frand(&mut seed) * 6.0 - 3.0).collect();
        let sinks: Vec<f32> = (0..h).map(|_| frand(&mut seed) * 4.0 - 1.0).collect();
        let omega: Vec<f32> = (0..rd / 2).map(|k| 1.0 / 10000f32.powf(2.0 * k as f32 / rd as f32)).collect();
        let pos: Vec<i32> = (0..t).map(|i| (p0 + i) as i32).collect();
        // indexer selection: distinct random visible rows per token (only read when > topk visible)
        let mut sel = vec![0i32; (t * topk).max(1)];
        let mut perm: Vec<i32> = Vec::new();
        for i in 0..t {
            let ncv = (p0 + i + 1) / 4;
            if ratio != 4 || ncv <= topk {
                continue;
            }
            perm.clear();
            perm.extend(0..ncv as i32);
            for j in 0..topk {
                let k = j + (rng(&mut seed) as usize) % (ncv - j);
                perm.swap(j, k);
            }
            sel[i * topk..(i + 1) * topk].copy_from_slice(&perm[..topk]);
        }
        let (posb, selb) = (gpu.alloc(t * 4)?, gpu.alloc(sel.len() * 4)?);
        gpu.htod(posb.ptr, &pos)?;
        gpu.htod(selb.ptr, &sel)?;
        Ok(AttnInputs { s, comp_rows, q: gpu.upload(&qv)?, raw: gpu.upload(&rawv)?, comp: gpu.upload(&compv)?, sinks: gpu.upload(&sinks)?, omega: gpu.upload(&omega)?, pos: posb, sel: selb })
    }

    /// The launch description over these inputs (window `w`, `nsplit` row splits).
    fn io(&self, w: usize, po: u64, pml: u64, out: u64, nsplit: usize) -> super::session::AttnIo {
        let s = self.s;
        super::session::AttnIo {
            q: self.q.ptr,
            q16: 0,
            raw: self.raw.ptr,
            comp: if s.ratio > 0 { self.comp.ptr } else { 0 },
            sel: self.sel.ptr,
            pos: self.pos.ptr,
            omega: self.omega.ptr,
            sinks: self.sinks.ptr,
            po,
            pml,
            out,
            kv16: 0,
            t: s.t,
            cap: s.cap,
            comp_rows: self.comp_rows,
            topk: s.topk,
            h: s.h,
            dh: s.dh,
            rd: s.rd,
            w,
            ratio: s.ratio,
            nsplit,
            eps: 1e-6,
        }
    }
}

pub fn attn_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{attn_tc_shape_ok, attn_tw_ok, launch_attn_simt, launch_attn_tc_as, launch_attn_tc_to, AttnIo};
    let w = 128usize;
    let mut cases = Vec::new();
    // fixture-like shape (attn_tc_128) from position 0: partial windows, few compressed rows
    for ratio in [0usize, 4, 128] {
        cases.push(AttnCase { h: 4, dh: 80, rd: 16, topk: 8, t: 300, p0: 0, ratio, reps: 3 });
    }
    // real shape, T = 2048 tokens at three context offsets
    for p0 in [0usize, 2048, 8192] {
        for ratio in [0usize, 4, 128] {
            cases.push(AttnCase { h: 64, dh: 512, rd: 64, topk: 512, t: 2048, p0, ratio, reps: 3 });
        }
    }
    // tc = attn_tc (mma.sync), tw = the wgmma kernel the session takes (sm_90a only: attn_tx, or
    // attn_tw with DS4_ATTN_TX=0), both against attn_simt; under each row its phase trace
    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>10} {:>10} {:>10} {:>4}",
        "attention (prefill)", "simt ms", "tc ms", "tw ms", "GFLOP", "tc TF/s", "tw TF/s", "tc rel", "tw rel", "tw max", "det"
    );
    for c in &cases {
        let (h, dh, rd, t, p0, ratio, topk) = (c.h, c.dh, c.rd, c.t, c.p0, c.ratio, c.topk);
        if !attn_tc_shape_ok(h, dh, rd) {
            println!("attn h={h} dh={dh}: shape not supported by the tensor-core kernel");
            continue;
        }
        let cap = (w + t).div_ceil(256) * 256;
        let comp_rows = (p0 + t).checked_div(ratio).unwrap_or(0);
        let seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((p0 as u64) << 8) ^ (ratio as u64) ^ ((dh as u64) << 32);
        let inp = AttnInputs::new(gpu, AttnShape { h, dh, rd, topk, cap, p0, t, ratio }, seed)?;
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (po, pml, out_ref, out_tc) = (f4(t * h * dh)?, f4(t * h * 2)?, f4(t * h * dh)?, f4(t * h * dh)?);
        let kv16 = gpu.alloc((cap + comp_rows) * dh * 2)?;
        let io = AttnIo { kv16: kv16.ptr, ..inp.io(w, po.ptr, pml.ptr, out_ref.ptr, 1) };
        let io_tc = AttnIo { out: out_tc.ptr, ..io };
        let tw = attn_tw_ok(gpu, &io_tc);
        let time = |f: &dyn Fn() -> Result<()>| time_ms(gpu, c.reps, f);
        let mut r = vec![0f32; t * h * dh];
        launch_attn_simt(gpu, &io)?;
        gpu.dtoh(&mut r, out_ref.ptr)?;
        let ms_simt = time(&|| launch_attn_simt(gpu, &io))?;
        // each tensor-core kernel: output (NaN-poisoned first: unwritten elements show), time,
        // and whether the timed repeats wrote the same bits
        let run = |wg: bool| -> Result<(Vec<f32>, f64, bool)> {
            gpu.htod(out_tc.ptr, &vec![f32::NAN; t * h * dh])?;
            launch_attn_tc_as(gpu, &io_tc, wg)?;
            let mut y = vec![0f32; t * h * dh];
            gpu.dtoh(&mut y, out_tc.ptr)?;
            let ms = time(&|| launch_attn_tc_as(gpu, &io_tc, wg))?;
            let mut y2 = vec![0f32; t * h * dh];
            gpu.dtoh(&mut y2, out_tc.ptr)?;
            let det = y.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits());
            Ok((y, ms, det))
        };
        let (y, ms_tc, det) = run(false)?;
        let (rel, _, _, bad) = err_stats(&y, &r);
        // attn_tw's f16 heads (the out_a GEMM's input in prefill) must be its f32 heads rounded
        let mut f16_diff = 0usize;
        let mut tw_trace = String::new();
        let (ms_tw, rel_tw, mx_tw, bad_tw, det_tw) = if tw {
            let (yw, ms, d) = run(true)?;
            let (rel, mx, _, bad) = err_stats(&yw, &r);
            let o16 = gpu.alloc(t * h * dh * 2)?;
            launch_attn_tc_to(gpu, &io_tc, true, o16.ptr)?;
            let mut h16 = vec![0u16; t * h * dh];
            gpu.dtoh(&mut h16, o16.ptr)?;
            f16_diff = h16.iter().zip(&yw).filter(|(a, b)| **a != half::f16::from_f32(**b).to_bits()).count();
            tw_trace = attn_tw_trace(gpu, &io_tc, o16.ptr, t)?;
            (ms, rel, mx, bad, d)
        } else {
            (f64::NAN, f64::NAN, f64::NAN, 0, true)
        };
        // 2 GEMMs x 2 flops per multiply-add x h x dh per visible row
        let rows: usize = (0..t)
            .map(|i| {
                let p = p0 + i;
                let ncv = (p + 1).checked_div(ratio).unwrap_or(0);
                (p + 1).min(w) + if ratio == 4 { ncv.min(topk) } else { ncv }
            })
            .sum();
        let gf = 4.0 * (h * dh) as f64 * rows as f64 / 1e9;
        let name = format!("attn h{h} dh{dh} r{ratio} p0={p0} T={t}");
        let mut bad_s = if bad + bad_tw > 0 { format!("  {bad} / {bad_tw} NON-FINITE (tc / tw)") } else { String::new() };
        if f16_diff > 0 {
            bad_s += &format!("  tw f16 heads: {f16_diff} values differ from its f32 heads rounded");
        }
        println!(
            "{:<34} {:>9.3} {:>9.3} {:>9.3} {:>8.1} {:>8.1} {:>8.1} {:>10.2e} {:>10.2e} {:>10.2e} {:>4}{}",
            name,
            ms_simt,
            ms_tc,
            ms_tw,
            gf,
            gf / ms_tc,
            gf / ms_tw,
            rel,
            rel_tw,
            mx_tw,
            if det && det_tw { "ok" } else { "NO" },
            bad_s
        );
        if !tw_trace.is_empty() {
            println!("  {tw_trace}");
        }
        // the same kernel on q rounded to f16 (prefill's q_b writes it so: DS4_Q16), against
        // the same f32 reference
        if tw {
            let mut qv = vec![0f32; t * h * dh];
            gpu.dtoh(&mut qv, inp.q.ptr)?;
            let qh: Vec<u16> = qv.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
            let q16 = gpu.alloc(qh.len() * 2)?;
            gpu.htod(q16.ptr, &qh)?;
            let io16 = AttnIo { q16: q16.ptr, ..io_tc };
            gpu.htod(out_tc.ptr, &vec![f32::NAN; t * h * dh])?;
            launch_attn_tc_as(gpu, &io16, true)?;
            let mut y = vec![0f32; t * h * dh];
            gpu.dtoh(&mut y, out_tc.ptr)?;
            let ms = time(&|| launch_attn_tc_as(gpu, &io16, true))?;
            let (rel, mx, _, bad) = err_stats(&y, &r);
            let o16 = gpu.alloc(t * h * dh * 2)?;
            let tr = attn_tw_trace(gpu, &io16, o16.ptr, t)?;
            println!("  q16: tw {ms:.3} ms, rel {rel:.2e}, max {mx:.2e}{} | {tr}", if bad > 0 { format!(", {bad} NON-FINITE") } else { String::new() });
        }
    }
    gpu.sync()
}

/// attn_tw / attn_tx's phase trace of one warm launch (launch_attn_tc_traced, f16 heads to `out16`):
/// per CTA the medians (us) of Q prepared, first tile ready, tile loop, epilogue, and the gap
/// between a CTA's exit and the next CTA's entry on the same SM.
fn attn_tw_trace(gpu: &Gpu, io: &super::session::AttnIo, out16: u64, t: usize) -> Result<String> {
    use super::session::{launch_attn_tc_traced, ATTN_TW_TRACE as W};
    let tr = gpu.alloc_zeroed(t * W * 8)?;
    for _ in 0..2 {
        launch_attn_tc_traced(gpu, io, true, out16, tr.ptr)?;
    }
    gpu.sync()?;
    let mut v = vec![0u64; t * W];
    gpu.dtoh(&mut v, tr.ptr)?;
    let med = |mut x: Vec<f64>| -> f64 {
        if x.is_empty() {
            return f64::NAN;
        }
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    let d = |a: usize, b: usize| med((0..t).map(|c| v[c * W + b].saturating_sub(v[c * W + a]) as f64 / 1e3).collect());
    // per SM: CTAs in entry order, the gap from one's exit to the next one's entry
    let mut by_sm: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
    for c in 0..t {
        by_sm.entry(v[c * W + 5]).or_default().push((v[c * W], v[c * W + 4]));
    }
    let mut gaps = Vec::new();
    for l in by_sm.values_mut() {
        l.sort();
        gaps.extend(l.windows(2).map(|w| w[1].0 as f64 / 1e3 - w[0].1 as f64 / 1e3));
    }
    let span = v.chunks(W).map(|c| c[4]).max().unwrap_or(0).saturating_sub(v.chunks(W).map(|c| c[0]).min().unwrap_or(0)) as f64 / 1e3;
    Ok(format!(
        "trace us (median per CTA): Q {:.2} | tile0 {:.2} | loop {:.2} | epilogue {:.2} | SM gap {:.2} | span {:.1} on {} SMs",
        d(0, 1),
        d(1, 2),
        d(2, 3),
        d(3, 4),
        med(gaps),
        span,
        by_sm.len()
    ))
}

/// One prefill GEMM shape of the model.
struct GemmCase {
    name: &'static str,
    ty: GgmlType,
    cols: usize,
    rows: usize,
    /// x / y row strides (0: cols / rows), as the session passes them
    ldx: usize,
    ldy: usize,
    /// routed experts: 256 experts, 6 per token; `gather`: x rows are tokens (gate/up) rather
    /// than (token, expert) pairs (down)
    grouped: bool,
    gather: bool,
    /// > 1: `groups` block-diagonal products (out_a): group g multiplies rows
    /// [g*rows/groups, ..) by x columns [g*cols, ..) into y columns [g*rows/groups, ..)
    groups: usize,
}

const GEMM_E: usize = 256;
const GEMM_K: usize = 6;

/// `DS4_KBENCH_SKEW=S` (S > 0): the kernel benches' routing draws experts with weights
/// 1 / (rank + 1)^S instead of uniformly. S = 1 gives what the full-size synthetic model's
/// deep layers route in an 8K prefill (`DS4_MOE_STATS=1`, session 20: the largest expert
/// ~5-6K of 49K slots, the median 35-98).
fn kbench_skew() -> f64 {
    std::env::var("DS4_KBENCH_SKEW").ok().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v > 0.0).unwrap_or(0.0)
}

/// Random token -> expert assignment (6 distinct of 256 per token), grouped as `moe_group`
/// does: off[e] .. off[e+1] are expert e's pairs in (token, slot) order, pair_tok their tokens.
/// Uniform, or with `kbench_skew`'s weights (expert ids shuffled, so the heavy experts are
/// not the first ones).
fn assign_experts(t: usize, seed: u64) -> (Vec<i32>, Vec<i32>) {
    assign_experts_skewed(t, seed, kbench_skew())
}

fn assign_experts_skewed(t: usize, seed: u64, skew: f64) -> (Vec<i32>, Vec<i32>) {
    let mut s = seed | 1;
    // skewed: the cumulative weights of ranks 0..E, and a random expert id per rank
    let cdf: Vec<f64> = (0..GEMM_E)
        .scan(0.0, |acc, r| {
            *acc += 1.0 / ((r + 1) as f64).powf(skew);
            Some(*acc)
        })
        .collect();
    // (uniform routing draws exactly what it drew before this option existed)
    let mut ids: Vec<usize> = (0..GEMM_E).collect();
    if skew > 0.0 {
        for i in (1..GEMM_E).rev() {
            ids.swap(i, (rng(&mut s) % (i as u64 + 1)) as usize);
        }
    }
    let draw = |s: &mut u64| -> usize {
        if skew <= 0.0 {
            return (rng(s) % GEMM_E as u64) as usize;
        }
        let u = (rng(s) >> 11) as f64 / (1u64 << 53) as f64 * cdf[GEMM_E - 1];
        ids[cdf.partition_point(|&c| c <= u).min(GEMM_E - 1)]
    };
    let mut sel = vec![0usize; t * GEMM_K];
    for tok in 0..t {
        for k in 0..GEMM_K {
            loop {
                let e = draw(&mut s);
                if !sel[tok * GEMM_K..tok * GEMM_K + k].contains(&e) {
                    sel[tok * GEMM_K + k] = e;
                    break;
                }
            }
        }
    }
    let mut cnt = vec![0usize; GEMM_E];
    for &e in &sel {
        cnt[e] += 1;
    }
    let mut off = vec![0i32; GEMM_E + 1];
    for e in 0..GEMM_E {
        off[e + 1] = off[e] + cnt[e] as i32;
    }
    let mut slot: Vec<usize> = off[..GEMM_E].iter().map(|&o| o as usize).collect();
    let mut pair_tok = vec![0i32; t * GEMM_K];
    for (i, &e) in sel.iter().enumerate() {
        pair_tok[slot[e]] = (i / GEMM_K) as i32;
        slot[e] += 1;
    }
    (off, pair_tok)
}

/// `moe_group` (serial reference) vs `moe_group2` on the same random routing of `t` tokens:
/// every output array must match bit for bit; time of each.
fn moe_group_bench(gpu: &Gpu, t: usize) -> Result<()> {
    let tk = t * GEMM_K;
    let mut s = 0x51ed_2701u64 ^ t as u64;
    let mut sel = vec![0i32; tk];
    for tok in 0..t {
        for k in 0..GEMM_K {
            loop {
                let e = (rng(&mut s) % GEMM_E as u64) as i32;
                if !sel[tok * GEMM_K..tok * GEMM_K + k].contains(&e) {
                    sel[tok * GEMM_K + k] = e;
                    break;
                }
            }
        }
    }
    let wts: Vec<f32> = (0..tk).map(|_| (rng(&mut s) >> 40) as f32 / (1u64 << 24) as f32).collect();
    let (selb, wb) = (gpu.alloc(tk * 4)?, gpu.alloc(tk * 4)?);
    gpu.htod(selb.ptr, &sel)?;
    gpu.htod(wb.ptr, &wts)?;
    let mut outs = Vec::new();
    // (moe_grp: moe_grp_count + moe_grp_place, session.rs's two launches over chunks of 1024)
    let cbt = gpu.alloc_zeroed(moe_grp_scratch_bytes(tk, GEMM_E))?;
    for (name, block, smem) in [("moe_group", GEMM_E as u32, GEMM_E * 4), ("moe_group2", 1024u32, moe_group2_smem(GEMM_E)), ("moe_grp", 1024, 0)] {
        let (ob, tb, pb, wo) = (gpu.alloc((GEMM_E + 1) * 4)?, gpu.alloc(tk * 4)?, gpu.alloc(tk * 4)?, gpu.alloc(tk * 4)?);
        let run = || -> Result<()> {
            if name == "moe_grp" {
                return launch_moe_grp(gpu, selb.ptr, wb.ptr, t, GEMM_K, GEMM_E, ob.ptr, cbt.ptr, tb.ptr, pb.ptr, wo.ptr);
            }
            let args = Args::new().a(selb.ptr).a(wb.ptr).a(t as i32).a(GEMM_K as i32).a(GEMM_E as i32).a(ob.ptr).a(tb.ptr).a(pb.ptr).a(wo.ptr);
            gpu.launch(name, (1, 1, 1), block, smem as u32, args)
        };
        run()?;
        let (e0, e1) = (gpu.event()?, gpu.event()?);
        gpu.record(&e0)?;
        for _ in 0..5 {
            run()?;
        }
        gpu.record(&e1)?;
        let ms = gpu.elapsed_ms(&e0, &e1)? as f64 / 5.0;
        let mut o = vec![0i32; GEMM_E + 1];
        let (mut pt, mut po, mut pw) = (vec![0i32; tk], vec![0i32; tk], vec![0f32; tk]);
        gpu.dtoh(&mut o, ob.ptr)?;
        gpu.dtoh(&mut pt, tb.ptr)?;
        gpu.dtoh(&mut po, pb.ptr)?;
        gpu.dtoh(&mut pw, wo.ptr)?;
        outs.push((name, ms, o, pt, po, pw.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()));
    }
    // each later form against moe_group (the O(T K E) original)
    for (i, (name, ms, ..)) in outs.iter().enumerate() {
        let same = outs[0].2 == outs[i].2 && outs[0].3 == outs[i].3 && outs[0].4 == outs[i].4 && outs[0].5 == outs[i].5;
        println!("{:<30} {:>5} {:<10} {:>9.3} {}", "moe_group (T*6 pairs, 256 exp)", t, name, ms, if i > 0 { if same { "outputs identical" } else { "outputs DIFFER" } } else { "" });
    }
    Ok(())
}

/// ||a-ref|| / ||ref||, max |a-ref| and the count of non-finite values of `a`, over the first
/// `cols` of every `ld`-strided row.
fn gemm_err(a: &[f32], r: &[f32], nrows: usize, cols: usize, ld: usize) -> (f64, f64, usize) {
    let (mut num, mut den, mut mx, mut bad) = (0f64, 0f64, 0f64, 0usize);
    for j in 0..nrows {
        for c in 0..cols {
            let (x, y) = (a[j * ld + c] as f64, r[j * ld + c] as f64);
            if !x.is_finite() {
                bad += 1;
                continue;
            }
            num += (x - y) * (x - y);
            den += y * y;
            mx = mx.max((x - y).abs());
        }
    }
    ((num / den.max(1e-300)).sqrt(), mx, bad)
}

/// Prefill GEMMs at the model's shapes: the reference `gemm_f32`, the first tensor-core kernel
/// `gemm_h` and the pipelined `gemm_q64`/`gemm_q128` on the same random weights/activations;
/// TFLOP/s of each, error of the f16 kernels against gemm_f32 (outputs poisoned with NaN first:
/// an unwritten element shows as `bad`), and whether a repeated gemm_q run gives the same bits.
/// `DS4_KBENCH_T` = comma-separated token counts (default 2048,8192).
fn gemm_bench(gpu: &Gpu) -> Result<()> {
    let ts = bench_ts(&[2048, 8192]);
    let q8 = GgmlType::Q8_0;
    let dense = |name, ty, cols, rows| GemmCase { name, ty, cols, rows, ldx: 0, ldy: 0, grouped: false, gather: false, groups: 1 };
    let exp = |name, ty, cols, rows, gather| GemmCase { name, ty, cols, rows, ldx: 0, ldy: 0, grouped: true, gather, groups: 1 };
    let cases = [
        dense("q_a      Q8_0 4096->1024", q8, 4096, 1024),
        dense("kv       Q8_0 4096->512", q8, 4096, 512),
        dense("q_b      Q8_0 1024->32768", q8, 1024, 32768),
        GemmCase { name: "out_a/8  Q8_0 4096->1024", ty: q8, cols: 4096, rows: 1024, ldx: 32768, ldy: 8192, grouped: false, gather: false, groups: 1 },
        GemmCase { name: "out_a    Q8_0 8x(4096->1024)", ty: q8, cols: 4096, rows: 8192, ldx: 32768, ldy: 8192, grouped: false, gather: false, groups: 8 },
        dense("out_b    Q8_0 8192->4096", q8, 8192, 4096),
        dense("comp     F16 4096->512", GgmlType::F16, 4096, 512),
        dense("comp     F16 4096->1024", GgmlType::F16, 4096, 1024),
        dense("sh_gate  Q8_0 4096->2048", q8, 4096, 2048),
        dense("sh_down  Q8_0 2048->4096", q8, 2048, 4096),
        exp("exp_gate IQ2_XXS 4096->2048", GgmlType::Iq2Xxs, 4096, 2048, true),
        exp("exp_down IQ2_XXS 2048->4096", GgmlType::Iq2Xxs, 2048, 4096, false),
        exp("exp_gate Q2_K 4096->2048", GgmlType::Q2K, 4096, 2048, true),
        exp("exp_down Q2_K 2048->4096", GgmlType::Q2K, 2048, 4096, false),
        exp("exp_gate Q4_K 4096->2048", GgmlType::Q4K, 4096, 2048, true),
        exp("exp_down Q4_K 2048->4096", GgmlType::Q4K, 2048, 4096, false),
    ];
    println!(
        "{:<30} {:>5} {:<10} {:>9} {:>8} {:>9} {:>9} {:>5} {}",
        "GEMM (prefill)", "T", "kernel", "ms", "TFLOP/s", "rel_err", "max_abs", "bad", "note"
    );
    let time = |gpu: &Gpu, reps: usize, f: &dyn Fn() -> Result<()>| time_ms(gpu, reps, f);

    for &t in &ts {
        moe_group_bench(gpu, t)?;
    }
    for (ci, c) in cases.iter().enumerate() {
        let ne = if c.grouped { GEMM_E } else { 1 };
        let data = random_blocks(c.ty, c.cols * c.rows * ne, 501 + ci as u64);
        let dims = if c.grouped { vec![c.cols as u64, c.rows as u64, ne as u64] } else { vec![c.cols as u64, c.rows as u64] };
        let m = upload_raw_mat(gpu, c.name, c.ty, dims, &data)?;
        drop(data);
        let ldx = if c.ldx > 0 { c.ldx } else { c.cols };
        let ldy = if c.ldy > 0 { c.ldy } else { c.rows };
        for &t in &ts {
            // x rows: tokens, or (token, expert) pairs for the down projection; y rows likewise
            let yrows = if c.grouped { t * GEMM_K } else { t };
            let xrows = if c.grouped && !c.gather { t * GEMM_K } else { t };
            let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ (ci * 131 + t) as u64;
            let xv: Vec<f32> = (0..xrows * ldx).map(|_| (rng(&mut s) >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect();
            let xb = gpu.alloc(xv.len() * 4)?;
            gpu.htod(xb.ptr, &xv)?;
            drop(xv);
            let (offb, gathb) = if c.grouped {
                let (off, ptok) = assign_experts(t, 77 + t as u64);
                let ob = gpu.alloc(off.len() * 4)?;
                gpu.htod(ob.ptr, &off)?;
                let gb = gpu.alloc(ptok.len() * 4)?;
                gpu.htod(gb.ptr, &ptok)?;
                (Some(ob), Some(gb))
            } else {
                (None, None)
            };
            let off = offb.as_ref().map(|b| b.ptr).unwrap_or(0);
            let gather = if c.gather { gathb.as_ref().map(|b| b.ptr).unwrap_or(0) } else { 0 };
            let ny = yrows * ldy;
            let nan = vec![f32::NAN; ny];
            let yref = gpu.alloc(ny * 4)?;
            let ytst = gpu.alloc(ny * 4)?;
            let a = |y| GemmArgs { w: m.wmat(), x: xb.ptr, y, grp_off: off, gather, ldx: ldx as i32, ldy: ldy as i32, t: t as i32, flags: 0 };
            let gflop = 2.0 * yrows as f64 * c.cols as f64 * c.rows as f64 / 1e9;
            // group g of a block-diagonal case: its rows of W, its x columns, its y columns
            let rg = c.rows / c.groups;
            let ag = |y: u64, g: usize, flags: i32| GemmArgs {
                w: m.wmat_rows(g * rg, rg),
                x: xb.ptr + (g * c.cols * 4) as u64,
                y: y + (g * rg * 4) as u64,
                grp_off: 0,
                gather: 0,
                ldx: ldx as i32,
                ldy: ldy as i32,
                t: t as i32,
                flags,
            };
            let mut href = vec![0f32; ny];
            let mut htst = vec![0f32; ny];
            // reference
            let grid_f = (c.rows.div_ceil(64) as u32, t.div_ceil(64) as u32, ne as u32);
            let ar = a(yref.ptr);
            let ms = if c.groups > 1 {
                let grid_g = (rg.div_ceil(64) as u32, t.div_ceil(64) as u32, 1);
                time(gpu, 1, &|| (0..c.groups).try_for_each(|g| gpu.launch("gemm_f32", grid_g, 256, 0, Args::new().a(ag(yref.ptr, g, 0)))))?
            } else {
                time(gpu, 1, &|| gpu.launch("gemm_f32", grid_f, 256, 0, Args::new().a(ar)))?
            };
            gpu.dtoh(&mut href, yref.ptr)?;
            println!("{:<30} {:>5} {:<10} {:>9.3} {:>8.1}", c.name, t, "gemm_f32", ms, gflop / ms);
            let avg = c.grouped.then(|| (t * GEMM_K) as f64 / GEMM_E as f64);
            let pick = gemm_q_bn(gpu, rg, t, avg);
            // gemm_qNN: f32 dequantization; gemm_qNNh: f16x2 dequantization (GQ_FLAG_HDEQ)
            let knames: &[&str] = if c.groups > 1 {
                // what the session runs without cuBLAS: one gemm_q call per group
                &["gemm_q_xg"]
            } else {
                &["gemm_h", "gemm_q64", "gemm_q128", "gemm_q64h", "gemm_q128h"]
            };
            // the session runs dense calls on cuBLAS when it is loaded (blas_rows below)
            let blas_pick = dense_blas_wanted() && t >= dense_min_t() && gpu.blas().is_some();
            for &kname in knames {
                let mut at = a(ytst.ptr);
                if kname.ends_with('h') && kname != "gemm_h" {
                    at.flags = 1;
                }
                let qflags = gemm_q_flags();
                let run = || -> Result<()> {
                    match kname {
                        "gemm_h" => gpu.launch("gemm_h", (c.rows.div_ceil(128) as u32, t.div_ceil(64) as u32, ne as u32), 256, 0, Args::new().a(at)),
                        "gemm_q64" | "gemm_q64h" => launch_gemm_q(gpu, at, ne, 64),
                        "gemm_q_xg" => (0..c.groups).try_for_each(|g| launch_gemm_q(gpu, ag(ytst.ptr, g, qflags), 1, pick)),
                        _ => launch_gemm_q(gpu, at, ne, 128),
                    }
                };
                gpu.htod(ytst.ptr, &nan)?;
                let ms1 = time(gpu, 1, &run)?;
                gpu.dtoh(&mut htst, ytst.ptr)?;
                let (rel, mx, bad) = gemm_err(&htst, &href, yrows, c.rows, ldy);
                let reps = ((150.0 / ms1.max(1e-3)) as usize).clamp(3, 200);
                run()?;
                let ms = time(gpu, reps, &run)?;
                let mut note = String::new();
                if kname != "gemm_h" {
                    let mut again = vec![0f32; ny];
                    gpu.dtoh(&mut again, ytst.ptr)?;
                    let same = again.iter().zip(&htst).all(|(p, q)| p.to_bits() == q.to_bits());
                    note = format!("repeat={}", if same { "same" } else { "DIFFERENT" });
                    // what CudaSession::gemm runs (with the default DS4_GEMM/DS4_GEMM_EXP)
                    let is_pick = kname.starts_with("gemm_q64") == (pick == 64) && kname.ends_with('h') == (gemm_q_flags() == 1);
                    if kname == "gemm_q_xg" {
                        note.push_str(" [session without cuBLAS]");
                    } else if is_pick && !(blas_pick && !c.grouped) {
                        note.push_str(" [session pick]");
                    }
                }
                println!("{:<30} {:>5} {:<10} {:>9.3} {:>8.1} {:>9.2e} {:>9.2e} {:>5} {}", "", "", kname, ms, gflop / ms, rel, mx, bad, note);
            }
            if !c.grouped {
                blas_rows(gpu, c, &m, xb.ptr, ldx, &ytst, ldy, t, &nan, &href, gflop)?;
            }
            gpu.sync()?;
        }
    }
    Ok(())
}

/// Token counts of the GEMM benches: `DS4_KBENCH_T` (comma-separated), else `default`.
fn bench_ts(default: &[usize]) -> Vec<usize> {
    std::env::var("DS4_KBENCH_T")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).filter(|&t: &usize| t > 0).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| default.to_vec())
}

/// Routed-expert prefill GEMMs (`DS4_KBENCH=exp`, `DS4_KBENCH_T`, default 2048,4096,8192) at
/// the real shapes (256 experts, 6 distinct random ones per token, grouped as moe_group does),
/// on the same random weights and inputs: `gemm_f32` (reference), the grouped kernel the
/// session runs without cuBLAS (`grouped`), and the cuBLAS expert path (`cublas` = dequantize
/// the experts + gather/round x + one cublasGemmEx per expert, what the session runs;
/// `cublas_gemm` = the cuBLAS calls alone). Per line: ms per call, TFLOP/s (2 * rows * cols *
/// pairs), error against gemm_f32 (||d||/||ref||), ||cublas - grouped|| / ||grouped|| and
/// max |cublas - grouped| relative to max |grouped|, unwritten outputs (`bad`, NaN-poisoned
/// first), and whether a repeated run gives the same bits. Also moe_small's int8 matvecs on
/// the same pairs: `mvq_pairs` (one slot per pair in moe_group's order), `mvqm` (chunks of up to
/// MVQM_NT pairs of one expert on the int8 tensor cores; its vs columns against mvq_pairs, FAIL
/// past 1e-5), and `mvqs` (mvqm through shared-memory stages; FAIL unless mvqm's bits).
fn exp_bench(gpu: &Gpu) -> Result<()> {
    let ts = bench_ts(&[2048, 4096, 8192]);
    let tmax = ts.iter().copied().max().unwrap_or(1);
    let Some(blas) = gpu.blas() else {
        println!("exp bench: libcublas not loaded");
        return Ok(());
    };
    // (name, type, cols, rows, gather: x rows are tokens (gate/up) rather than pairs (down))
    let cases = [
        ("exp_gate IQ2_XXS 4096->2048", GgmlType::Iq2Xxs, 4096usize, 2048usize, true),
        ("exp_down Q2_K 2048->4096", GgmlType::Q2K, 2048, 4096, false),
        ("exp_gate Q4_K 4096->2048", GgmlType::Q4K, 4096, 2048, true),
        ("exp_down Q4_K 2048->4096", GgmlType::Q4K, 2048, 4096, false),
    ];
    let max_mat = cases.iter().map(|c| c.2 * c.3).max().unwrap_or(0);
    let max_cols = cases.iter().map(|c| c.2).max().unwrap_or(0);
    let (wb, xb16) = (gpu.alloc(GEMM_E * max_mat * 2)?, gpu.alloc(tmax * GEMM_K * max_cols * 2)?);
    let s = Dense16 { w16: wb.ptr, w_elems: GEMM_E * max_mat, x16: xb16.ptr, x_elems: tmax * GEMM_K * max_cols };
    println!(
        "{:<30} {:>5} {:<12} {:>9} {:>8} {:>9} {:>9} {:>9} {:>5} {}",
        "routed experts (prefill)", "T", "path", "ms", "TFLOP/s", "err_f32", "vs_grp", "max_vs_grp", "bad", "note"
    );
    match kbench_skew() {
        s if s > 0.0 => println!("routing: skewed, expert weights 1 / (rank + 1)^{s} (DS4_KBENCH_SKEW)"),
        _ => println!("routing: uniform (DS4_KBENCH_SKEW=1: the synthetic model's deep layers)"),
    }
    let time = |reps: usize, f: &dyn Fn() -> Result<()>| time_ms(gpu, reps, f);

    // DS4_KBENCH_CASE=substring: only the cases whose name contains it; DS4_KBENCH_NOBLAS=1:
    // the grouped kernels only (no cuBLAS expert path)
    let only = std::env::var("DS4_KBENCH_CASE").ok();
    let no_blas = std::env::var("DS4_KBENCH_NOBLAS").is_ok_and(|v| v == "1");
    for (ci, &(name, ty, cols, rows, gather)) in cases.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let data = random_blocks(ty, cols * rows * GEMM_E, 901 + ci as u64);
        let m = upload_raw_mat(gpu, name, ty, vec![cols as u64, rows as u64, GEMM_E as u64], &data)?;
        drop(data);
        for &t in &ts {
            let pairs = t * GEMM_K;
            let xrows = if gather { t } else { pairs };
            let mut sd = 0x51f1_5eedu64 ^ (ci * 7919 + t) as u64;
            let xv: Vec<f32> = (0..xrows * cols).map(|_| (rng(&mut sd) >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect();
            let xb = gpu.alloc(xv.len() * 4)?;
            gpu.htod(xb.ptr, &xv)?;
            drop(xv);
            let (off, ptok) = assign_experts(t, 177 + t as u64);
            let (ob, gb) = (gpu.alloc(off.len() * 4)?, gpu.alloc(ptok.len() * 4)?);
            gpu.htod(ob.ptr, &off)?;
            gpu.htod(gb.ptr, &ptok)?;
            let gath = if gather { gb.ptr } else { 0 };
            let ny = pairs * rows;
            let nan = vec![f32::NAN; ny];
            let (yref, ygrp, yblas) = (gpu.alloc(ny * 4)?, gpu.alloc(ny * 4)?, gpu.alloc(ny * 4)?);
            let ga = |y: u64, flags: i32| GemmArgs { w: m.wmat(), x: xb.ptr, y, grp_off: ob.ptr, gather: gath, ldx: cols as i32, ldy: rows as i32, t: t as i32, flags };
            let gflop = 2.0 * pairs as f64 * cols as f64 * rows as f64 / 1e9;
            let get = |b: &DevBuf| -> Result<Vec<f32>> {
                let mut v = vec![0f32; ny];
                gpu.dtoh(&mut v, b.ptr)?;
                Ok(v)
            };
            // reference: gemm_f32, one z-slice per expert, grid.y covering the largest group
            let grid_f = (rows.div_ceil(64) as u32, t.div_ceil(64) as u32, GEMM_E as u32);
            gpu.htod(yref.ptr, &nan)?;
            let ms = time(1, &|| gpu.launch("gemm_f32", grid_f, 256, 0, Args::new().a(ga(yref.ptr, 0))))?;
            let href = get(&yref)?;
            println!("{:<30} {:>5} {:<12} {:>9.3} {:>8.1}", name, t, "gemm_f32", ms, gflop / ms);
            let reps = 5;
            // one run into `out` (NaN-filled first: unwritten outputs show) -> its result, then
            // the timed runs -> ms, and whether the last run repeated the first one's bits
            let measure = |out: &DevBuf, f: &dyn Fn() -> Result<()>| -> Result<(Vec<f32>, f64, bool)> {
                gpu.htod(out.ptr, &nan)?;
                f()?;
                let h = get(out)?;
                let ms = time(reps, f)?;
                let same = get(out)?.iter().zip(&h).all(|(p, q)| p.to_bits() == q.to_bits());
                Ok((h, ms, same))
            };
            // the grouped kernel as CudaSession::gemm picks it without cuBLAS
            let avg = pairs as f64 / GEMM_E as f64;
            let bn = gemm_q_bn(gpu, rows, t, Some(avg));
            let (hgrp, ms_g, same_g) = measure(&ygrp, &|| launch_gemm_q(gpu, ga(ygrp.ptr, gemm_q_flags()), GEMM_E, bn))?;
            let (rel, _, bad) = gemm_err(&hgrp, &href, pairs, rows, rows);
            println!(
                "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9.2e} {:>9} {:>9} {:>5} repeat={} (gemm_q bn={bn})",
                "", "", "grouped", ms_g, gflop / ms_g, rel, "", "", bad, if same_g { "same" } else { "DIFFERENT" }
            );
            // The int8 matvecs of moe_small on the same pairs and int8 inputs: one slot per pair
            // (mvq in moe_group's order) and chunks of one expert's pairs (mvqm, mvqs), against
            // gemm_f32 (int8 inputs: ~4e-3 expected) and mvqm against mvq (the same integer
            // dots and factors, summed in another order: ~1e-7 expected)
            if mvq_type_ok(m.wmat().ty) {
                let w = m.wmat();
                let nq = xrows * cols;
                let (qs, qd, qs2, qd2) = (gpu.alloc(nq)?, gpu.alloc(nq / 32 * 8)?, gpu.alloc(nq)?, gpu.alloc(nq / 32 * 8)?);
                let qt = time(reps, &|| launch_quant_q8(gpu, xb.ptr, nq, 0, 0, qs.ptr, qd.ptr))?;
                launch_quant_chunked(gpu, w.ty, xb.ptr, nq, (qs2.ptr, qd2.ptr))?;
                // each pair's expert, from the group offsets
                let pe: Vec<i32> = (0..GEMM_E).flat_map(|e| std::iter::repeat_n(e as i32, (off[e + 1] - off[e]) as usize)).collect();
                let peb = gpu.alloc(pairs * 4)?;
                gpu.htod(peb.ptr, &pe)?;
                let tq = JobTableQ::new(&mut [MvJobQ { sel: peb.ptr, nslots: pairs as i32, xmap: gath, x_slot: cols as i64, ..MvJobQ::plain(w, (qs.ptr, qd.ptr), ygrp.ptr) }])?;
                let (hq, ms_q, same_q) = measure(&ygrp, &|| tq.run(gpu, 1))?;
                let (rel_q, _, bad_q) = gemm_err(&hq, &href, pairs, rows, rows);
                println!(
                    "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9.2e} {:>9} {:>9} {:>5} repeat={} quant={qt:.3}ms speedup={:.2}x over grouped",
                    "", "", "mvq_pairs", ms_q, gflop / ms_q, rel_q, "", "", bad_q, if same_q { "same" } else { "DIFFERENT" }, ms_g / ms_q
                );
                let mq = hq.iter().fold(0f64, |a, &v| a.max((v as f64).abs()));
                let bm = chunk_bound(GEMM_E, pairs, MVQM_NT);
                let chb = gpu.alloc(bm * 16)?;
                let chunks = || launch_pair_chunks(gpu, ob.ptr, GEMM_E, MVQM_NT, bm, chb.ptr);
                chunks()?;
                let ms_ch = time(reps, &chunks)?;
                let tm = JobTableQ::chunked_mma(&mut [MvJobQ::plain(w, (qs2.ptr, qd2.ptr), yblas.ptr).chunked_mma(chb.ptr, bm, 0, gath, cols)])?;
                let (hm, ms_m, same_m) = measure(&yblas, &|| tm.run(gpu, 1))?;
                let (rel_m, _, bad_m) = gemm_err(&hm, &href, pairs, rows, rows);
                let (vs, mx, _) = gemm_err(&hm, &hq, pairs, rows, rows);
                // the weight bytes the chunks read once each (the floor the kernel aims at)
                let wbytes = (w.e_pay + w.e_hdr) as f64;
                let touched = (0..GEMM_E).filter(|&e| off[e + 1] > off[e]).count() as f64;
                let nch: usize = (0..GEMM_E).map(|e| ((off[e + 1] - off[e]) as usize).div_ceil(MVQM_NT)).sum();
                println!(
                    "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9.2e} {:>9.2e} {:>9.2e} {:>5} repeat={} chunks={ms_ch:.3}ms speedup={:.2}x over grouped, {:.2}x over mvq_pairs; weights {:.0} MB read once per chunk ({nch} chunks, {:.0} experts): {:.2} TB/s (vs columns: mvq_pairs){}",
                    "", "", "mvqm", ms_m, gflop / ms_m, rel_m, vs, mx / mq.max(1e-30), bad_m, if same_m { "same" } else { "DIFFERENT" }, ms_g / ms_m, ms_q / ms_m,
                    wbytes * touched / 1e6, touched, wbytes * nch as f64 / ms_m / 1e9,
                    if vs < 1e-5 && bad_m == 0 && same_m { "" } else { "  FAIL" }
                );
                // mvqm through cp.async stages (mvqs): the same arithmetic in the same order,
                // so the same bits as mvqm
                if mvqs_type_ok(w.ty) {
                    let ts = JobTableQ::chunked_staged(&mut [MvJobQ::plain(w, (qs2.ptr, qd2.ptr), ygrp.ptr).chunked_staged(chb.ptr, bm, 0, gath, cols)])?;
                    let (hs, ms_s, same_s) = measure(&ygrp, &|| ts.run(gpu, 1))?;
                    let (_, _, bad_s) = gemm_err(&hs, &href, pairs, rows, rows);
                    let bits = hs.iter().zip(&hm).all(|(p, q)| p.to_bits() == q.to_bits());
                    println!(
                        "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9} {:>9} {:>9} {:>5} repeat={} bits {} mvqm, speedup={:.2}x over grouped, {:.2}x over mvqm: {:.2} TB/s{}",
                        "", "", "mvqs", ms_s, gflop / ms_s, "", "", "", bad_s, if same_s { "same" } else { "DIFFERENT" }, if bits { "==" } else { "!=" },
                        ms_g / ms_s, ms_m / ms_s, wbytes * nch as f64 / ms_s / 1e9,
                        if bits && bad_s == 0 && same_s { "" } else { "  FAIL" }
                    );
                }
            }
            // f16 activations (GQ_FLAG_XH): the rows converted once (timed apart), same results
            if gq_xh_ok(&m.wmat()) {
                let x16 = gpu.alloc(xrows * cols * 2)?;
                let cvt = time(reps, &|| launch_x_to_f16(gpu, xb.ptr, cols, cols, xrows, 0, x16.ptr, false))?;
                // f16-row GemmArgs on rows `x` (ldx in halfs, same values)
                let gh = |x: u64| GemmArgs { x, ..ga(yblas.ptr, gemm_q_flags() | GQ_FLAG_XH) };
                let (hx, ms_x, _) = measure(&yblas, &|| launch_gemm_q(gpu, gh(x16.ptr), GEMM_E, bn))?;
                let same = hx.iter().zip(&hgrp).all(|(p, q)| p.to_bits() == q.to_bits());
                let (vs, mx, _) = gemm_err(&hx, &hgrp, pairs, rows, rows);
                println!(
                    "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9} {:>9.2e} {:>9.2e} {:>5} bits {} grouped, cvt={cvt:.3}ms, speedup={:.2}x",
                    "", "", "grouped_xh", ms_x, gflop / ms_x, "", vs, mx, "", if same { "==" } else { "!=" }, ms_g / ms_x
                );
                if super::driver::wgmma_built(gpu.cc) {
                    // weights dequantized into registers (gemm_qr), activations in its K order
                    let x16p = gpu.alloc(xrows * cols * 2)?;
                    let cvtp = time(reps, &|| launch_x_to_f16(gpu, xb.ptr, cols, cols, xrows, 0, x16p.ptr, true))?;
                    // gemm_qr (128-row tiles of up to 256 tokens), gemm_qr2 (256 x 128), gemm_qs /
                    // gemm_qs2 (those with a producer warpgroup: their bits must equal them); the third
                    // error column compares with grouped (f16 rows, mma.sync)
                    let mut hqr: Option<Vec<f32>> = None;
                    let mut hqr2: Option<Vec<f32>> = None;
                    // (each kernel's f32 output and time, for the f16-output rows below)
                    let mut f32_runs: Vec<(GqKernel, Vec<f32>, f64)> = Vec::new();
                    for (label, kind) in [("grouped_qr", GqKernel::Qr), ("grouped_qr2", GqKernel::Qr2), ("grouped_qs", GqKernel::Qs), ("grouped_qs2", GqKernel::Qs2), ("grouped_qs4", GqKernel::Qs4), ("grouped_qsx", GqKernel::QsSplit)] {
                        // (gemm_qs4: IQ2_XXS, Q2_K, Q4_K)
                        if kind == GqKernel::Qs4 && !super::session::qs4_type_ok(m.wmat().ty) {
                            continue;
                        }
                        let (hr, ms_r, same_r) = measure(&yblas, &|| launch_gemm_q_kernel(gpu, gh(x16p.ptr), GEMM_E, bn, kind))?;
                        let (rel_r, _, bad_r) = gemm_err(&hr, &href, pairs, rows, rows);
                        let (vsr, mxr, _) = gemm_err(&hr, &hgrp, pairs, rows, rows);
                        // gemm_qs / gemm_qs2 against gemm_qr / gemm_qr2, and the split (gemm_qs's
                        // full tiles, gemm_qs2's short remainders) against gemm_qr: the same bits
                        // expected (the products of an output are the same K steps in order)
                        let vs_qr = match (kind, &hqr, &hqr2) {
                            (GqKernel::Qs | GqKernel::Qs4 | GqKernel::QsSplit, Some(q), _) | (GqKernel::Qs2, _, Some(q)) => {
                                let n = hr.iter().zip(q).filter(|(p, q)| p.to_bits() != q.to_bits()).count();
                                let base = if kind == GqKernel::Qs2 { "qr2" } else { "qr" };
                                if n == 0 { format!(" bits=={base}") } else { format!(" BITS!={base} ({n} differ)") }
                            }
                            _ => String::new(),
                        };
                        println!(
                            "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9.2e} {:>9.2e} {:>9.2e} {:>5} repeat={} cvt={cvtp:.3}ms speedup={:.2}x over grouped{vs_qr}",
                            "", "", label, ms_r, gflop / ms_r, rel_r, vsr, mxr, bad_r, if same_r { "same" } else { "DIFFERENT" }, ms_g / ms_r
                        );
                        if matches!(kind, GqKernel::Qr | GqKernel::QsSplit) {
                            f32_runs.push((kind, hr.clone(), ms_r));
                        }
                        match kind {
                            GqKernel::Qr => hqr = Some(hr),
                            GqKernel::Qr2 => hqr2 = Some(hr),
                            _ => {}
                        }
                    }
                    // gemm_qs with parts of its K step left out (gemm_qs_dg; time only): what
                    // bounds its tiles (session 56's Nsight Compute: L2 71 %, SM 63 %)
                    if m.wmat().ty == GgmlType::Iq2Xxs.id() as i32 {
                        let base = time(reps, &|| launch_gemm_q_kernel(gpu, gh(x16p.ptr), GEMM_E, bn, GqKernel::Qs))?;
                        use super::session::GQ_DG_SHIFT;
                        // (matmul.cuh GQ_DG_*: 1 half the activation copies, 2 no dequantization,
                        // 4 no products, 8 no activation copies, 16 no weight copies; 32 is
                        // ignored by the kernel: gemm_qs_dg with nothing left out)
                        for (mask, what) in [(32, "nothing (gemm_qs_dg itself: its branches cost ptxas fences)"), (1, "half the activation copies"), (8, "no activation copies"), (16, "no weight copies"), (2, "no dequantization"), (4, "no products"), (2 | 4, "copies only"), (8 | 16 | 2, "products only")] {
                            let ms = time(reps, &|| launch_gemm_q_kernel(gpu, GemmArgs { flags: gh(x16p.ptr).flags | mask << GQ_DG_SHIFT, ..gh(x16p.ptr) }, GEMM_E, bn, GqKernel::Qs))?;
                            println!("{:<30} {:>5} {:<12} {:>9.3} gemm_qs {base:.3} ms -> {:.2}x without: {what} (time only)", "", "", format!("qs_dg {mask}"), ms, base / ms);
                        }
                    }
                    // gate + up in one launch (gemm_qs_gu, DS4_GU_FUSE): the f16 mids against the
                    // two launches and moe_mid they replace (the same f32 g and u; moe_mid_gu_fast's
                    // silu against the exact one: within one f16 step expected), on an up matrix
                    // of its own, random routing weights and the clamp at the median |g|
                    if gather && super::session::gu_type_ok(m.wmat().ty) {
                        if let Some((_, hg, _)) = f32_runs.iter().find(|r| r.0 == GqKernel::QsSplit) {
                            gu_rows(gpu, ty, cols, rows, hg, pairs, ci, &|y: u64| GemmArgs { y, ..gh(x16p.ptr) }, reps)?;
                        }
                    }
                    // DS4_EXP_Y16 (GQ_FLAG_Y16): gemm_qr's and the split's f16 outputs, each the
                    // same kernel's f32 output rounded once (f16, saturating: the host rounds with
                    // the half crate); the time against the f32 output's
                    let y16b = gpu.alloc(ny * 2)?;
                    for (kind, h32, ms32) in &f32_runs {
                        gpu.memset0(y16b.ptr, ny * 2)?;
                        let run = || launch_gemm_q_kernel(gpu, GemmArgs { y: y16b.ptr, flags: gemm_q_flags() | GQ_FLAG_XH | super::session::GQ_FLAG_Y16, ..gh(x16p.ptr) }, GEMM_E, bn, *kind);
                        run()?;
                        let mut h16 = vec![0u16; ny];
                        gpu.dtoh(&mut h16, y16b.ptr)?;
                        let n = h32.iter().zip(&h16).filter(|(a, b)| half::f16::from_f32(a.clamp(-65504.0, 65504.0)).to_bits() != **b).count();
                        let ms16 = time(reps, &run)?;
                        println!(
                            "{:<30} {:>5} {:<12} {:>9.3} f16 out: {:.2}x the f32 out's time; {}",
                            "", "", format!("y16 {kind:?}"), ms16, ms32 / ms16.max(1e-9),
                            if n == 0 { "bits==f16(f32)".to_string() } else { format!("BITS!=f16(f32) ({n} differ)  FAIL") }
                        );
                    }
                }
            }
            if no_blas {
                continue;
            }
            // the cuBLAS expert path
            let call = ExpCall { w: m.wmat(), n_exp: GEMM_E, x: xb.ptr, ldx: cols, gather: gath, y: yblas.ptr, ldy: rows };
            if !call.ok(&s, pairs) {
                println!("{:<30} {:>5} {:<12} (shape not supported by the cuBLAS expert path)", "", "", "cublas");
                continue;
            }
            let full = || call.run(gpu, blas, &s, ob.ptr, &off, false);
            gpu.htod(yblas.ptr, &nan)?;
            full()?;
            let hb = get(&yblas)?;
            let ms_b = time(reps, &full)?;
            let same_b = get(&yblas)?.iter().zip(&hb).all(|(p, q)| p.to_bits() == q.to_bits());
            let (rel_b, _, bad_b) = gemm_err(&hb, &href, pairs, rows, rows);
            let (vs, mx, _) = gemm_err(&hb, &hgrp, pairs, rows, rows);
            let gmax = hgrp.iter().fold(0f64, |a, &v| a.max((v as f64).abs()));
            let deq = time(reps, &|| call.prep_w(gpu, &s, ob.ptr))?;
            let cvt = time(reps, &|| call.prep_x(gpu, &s, pairs))?;
            let ms_c = time(reps, &|| call.gemm(gpu, blas, &s, &off))?;
            // the products on one stream (DS4_GEMM_EXP_STREAMS=1), and whether they match
            gpu.htod(yblas.ptr, &nan)?;
            call.gemm_serial(blas, &s, &off)?;
            let same_1 = get(&yblas)?.iter().zip(&hb).all(|(p, q)| p.to_bits() == q.to_bits());
            let ms_1 = time(reps, &|| call.gemm_serial(blas, &s, &off))?;
            let pick = exp_blas_wanted() && t >= exp_min_t();
            println!(
                "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} {:>9.2e} {:>9.2e} {:>9.2e} {:>5} repeat={} deq={deq:.3}ms cvt={cvt:.3}ms speedup={:.2}x{}",
                "",
                "",
                "cublas",
                ms_b,
                gflop / ms_b,
                rel_b,
                vs,
                mx / gmax.max(1e-30),
                bad_b,
                if same_b { "same" } else { "DIFFERENT" },
                ms_g / ms_b,
                if pick { " [session pick]" } else { "" }
            );
            println!("{:<30} {:>5} {:<12} {:>9.3} {:>8.1} (the products alone, {} streams)", "", "", "cublas_gemm", ms_c, gflop / ms_c, exp_streams());
            println!(
                "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} (one stream; same bits as cublas: {})",
                "",
                "",
                "cublas_gemm1",
                ms_1,
                gflop / ms_1,
                if same_1 { "yes" } else { "NO" }
            );
            // a new routing for every call, as the layers of a prefill see it: cuBLAS meets
            // per-expert shapes it has not planned for (the loop above repeats one routing)
            let routings = (0..reps)
                .map(|r| -> Result<(DevBuf, DevBuf, Vec<i32>)> {
                    let (o, p) = assign_experts(t, 5000 + (r * 977 + t) as u64);
                    let (ob2, gb2) = (gpu.alloc(o.len() * 4)?, gpu.alloc(p.len() * 4)?);
                    gpu.htod(ob2.ptr, &o)?;
                    gpu.htod(gb2.ptr, &p)?;
                    Ok((ob2, gb2, o))
                })
                .collect::<Result<Vec<_>>>()?;
            let next = std::cell::Cell::new(0usize);
            let h0 = exp_host_time();
            let ms_v = time(reps, &|| {
                let (o, g, oh) = &routings[next.get() % reps];
                next.set(next.get() + 1);
                ExpCall { gather: if gather { g.ptr } else { 0 }, ..call }.run(gpu, blas, &s, o.ptr, oh, false)
            })?;
            let h1 = exp_host_time();
            println!(
                "{:<30} {:>5} {:<12} {:>9.3} {:>8.1} (a new routing per call; {:.3} ms of host time per call to issue the products)",
                "",
                "",
                "cublas_vary",
                ms_v,
                gflop / ms_v,
                (h1.0 - h0.0) * 1e3 / (h1.1 - h0.1).max(1) as f64
            );
            gpu.sync()?;
        }
    }
    Ok(())
}

/// exp_bench's gate + up rows: gemm_qs_gu (its staged-store form gemm_qs_guc, and gemm_qs2_gu) against gemm_qs twice + moe_mid
/// (the split as the session runs it, gemm_qs2 alone and gemm_qs alone) on the gate of `ga` and a random up matrix of
/// the same shape; `hg`: the gate's f32 outputs (for the clamp), `ga(y)`: the launch's
/// GemmArgs writing y. Prints ms, the speedup, how many f16 mids differ and by how many f16
/// steps at most (FAIL past one step, or past one mid in 1000 differing: the fast silu moves a
/// mid only next to a rounding boundary), then the split's parts timed alone and moe_mid's time.
#[allow(clippy::too_many_arguments)]
fn gu_rows(gpu: &Gpu, ty: GgmlType, cols: usize, rows: usize, hg: &[f32], pairs: usize, ci: usize, ga: &dyn Fn(u64) -> GemmArgs, reps: usize) -> Result<()> {
    use super::session::{launch_gemm_gu, GuArgs};
    let up = upload_raw_mat(gpu, "up", ty, vec![cols as u64, rows as u64, GEMM_E as u64], &random_blocks(ty, cols * rows * GEMM_E, 7771 + ci as u64))?;
    let mut mags: Vec<f32> = hg.iter().step_by(101).map(|v| v.abs()).collect();
    mags.sort_by(f32::total_cmp);
    let clamp = mags[mags.len() / 2];
    let mut sd = 0x9e37_u64 ^ pairs as u64;
    let pw: Vec<f32> = (0..pairs).map(|_| (rng(&mut sd) >> 40) as f32 / (1u64 << 24) as f32).collect();
    let pwb = gpu.alloc(pairs * 4)?;
    gpu.htod(pwb.ptr, &pw)?;
    let n = pairs * rows;
    let (g, u, mref, mgu) = (gpu.alloc(n * 4)?, gpu.alloc(n * 4)?, gpu.alloc(n * 2)?, gpu.alloc(n * 2)?);
    let get16 = |b: &DevBuf| -> Result<Vec<u16>> {
        let mut h = vec![0u16; n];
        gpu.dtoh(&mut h, b.ptr)?;
        Ok(h)
    };
    let gu = GuArgs { w2: up.wmat(), pw: pwb.ptr, clamp, pad: 0 };
    // the launches with `flags` added (0, or a split part's): gate and up unfused into g / u,
    // and fused into mgu
    let args = |y: u64, flags: i32| GemmArgs { flags: ga(y).flags | flags, ..ga(y) };
    let unfused = |kind: GqKernel, flags: i32| -> Result<()> {
        launch_gemm_q_kernel(gpu, args(g.ptr, flags), GEMM_E, 0, kind)?;
        launch_gemm_q_kernel(gpu, GemmArgs { w: up.wmat(), ..args(u.ptr, flags) }, GEMM_E, 0, kind)
    };
    let fused = |kind: GqKernel, flags: i32, staged: bool| launch_gemm_gu(gpu, GemmArgs { ldy: rows as i32, ..args(mgu.ptr, flags) }, gu, GEMM_E, kind, staged);
    let mid = || launch_moe_mid_form(gpu, g.ptr, u.ptr, pwb.ptr, pairs, rows, clamp, 0, mref.ptr, true, MidForm::Warp);
    for (kind, staged) in [(GqKernel::QsSplit, false), (GqKernel::QsSplit, true), (GqKernel::Qs2, false), (GqKernel::Qs, false), (GqKernel::Qs, true)] {
        let old = || -> Result<()> {
            unfused(kind, 0)?;
            mid()
        };
        let new = || fused(kind, 0, staged);
        gpu.memset0(mref.ptr, n * 2)?;
        old()?;
        gpu.htod(mgu.ptr, &vec![0xffffu16; n])?;
        new()?;
        let (hr, hn) = (get16(&mref)?, get16(&mgu)?);
        let diff = hr.iter().zip(&hn).filter(|(a, b)| a != b).count();
        // (the fused epilogue's silu is moe_mid_gu_fast's: a mid may move by one f16 step next
        // to a rounding boundary, never more; a 0xffff left means a mid not written)
        let ulps = hr.iter().zip(&hn).map(|(a, b)| f16_ulps(*a, *b)).max().unwrap_or(0);
        let (ms_o, ms_n) = (time_ms(gpu, reps, &old)?, time_ms(gpu, reps, &new)?);
        let same = get16(&mgu)? == hn;
        println!(
            "{:<30} {:>5} {:<12} {:>9.3} gate+up+mid {:.3} ms -> {:.2}x; f16 mids differing {diff} of {n}, at most {ulps} f16 steps (clamp {clamp:.3}), repeat={}{}",
            "", "", format!("gu {kind:?}{}", if staged { " staged" } else { "" }), ms_n, ms_o, ms_o / ms_n.max(1e-9), if same { "same" } else { "DIFFERENT" },
            if ulps <= 1 && same && diff * 1000 <= n { "" } else { "  FAIL" }
        );
    }
    // the split's two parts alone (time only: each writes only its tiles' outputs): the fused
    // launch against gemm_qs / gemm_qs2 twice on the same tiles (no moe_mid), and moe_mid's own
    // time, to tell which part of the split loses
    use super::session::{qs_split_plan, qs_split};
    for (kind, flags) in qs_split_plan(ty.id() as i32, qs_split()) {
        for staged in [false, true] {
            if staged && kind != GqKernel::Qs {
                continue;
            }
            let (ms_o, ms_n) = (time_ms(gpu, reps, &|| unfused(kind, flags))?, time_ms(gpu, reps, &|| fused(kind, flags, staged))?);
            println!(
                "{:<30} {:>5} {:<12} {:>9.3} gate+up alone {:.3} ms -> {:.2}x (the split's part with flags {flags}, time only)",
                "", "", format!("gu part {kind:?}{}", if staged { " staged" } else { "" }), ms_n, ms_o, ms_o / ms_n.max(1e-9)
            );
        }
    }
    println!("{:<30} {:>5} {:<12} {:>9.3}", "", "", "gu moe_mid", time_ms(gpu, reps, &mid)?);
    Ok(())
}

/// f16 steps between two f16 bit patterns (the count of representable values between them;
/// across zero, +0 and -0 as one), u32::MAX where either is a NaN.
fn f16_ulps(a: u16, b: u16) -> u32 {
    let key = |h: u16| -> Option<i32> {
        if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
            return None;
        }
        let m = (h & 0x7fff) as i32;
        Some(if h & 0x8000 != 0 { -m } else { m })
    };
    match (key(a), key(b)) {
        (Some(x), Some(y)) => x.abs_diff(y),
        _ => u32::MAX,
    }
}

/// moe_mid into gemm_qr's f16 K order (`DS4_KBENCH=mid`, `DS4_KBENCH_T`, default 2048,8192
/// tokens of 6 slots x 2048): a thread per value (perm 1) against a thread per 32-value block
/// (perm 3) and a warp per 32 blocks (perm 4) on the same random g, u and routing weights, the
/// clamp at the median |g| so both sides of it are taken; ms per call, GB/s (f32 g and u read,
/// f16 written), and how many f16 mids differ in their bits from perm 1's (expected 0: the same
/// arithmetic per value).
fn mid_bench(gpu: &Gpu) -> Result<()> {
    const F: usize = 2048;
    for t in bench_ts(&[2048, 8192]) {
        let n = t * GEMM_K;
        let mut sd = 0x6d1d_u64 ^ t as u64;
        let mut rnd = |k: usize, scale: f32| -> Vec<f32> { (0..k).map(|_| ((rng(&mut sd) >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * scale).collect() };
        let (gv, uv, pv) = (rnd(n * F, 12.0), rnd(n * F, 12.0), rnd(n, 0.5));
        let mut mags: Vec<f32> = gv.iter().step_by(97).map(|v| v.abs()).collect();
        mags.sort_by(f32::total_cmp);
        let clamp = mags[mags.len() / 2];
        let (gb, ub, pb) = (gpu.alloc(n * F * 4)?, gpu.alloc(n * F * 4)?, gpu.alloc(n * 4)?);
        gpu.htod(gb.ptr, &gv)?;
        gpu.htod(ub.ptr, &uv)?;
        gpu.htod(pb.ptr, &pv)?;
        let outs = [gpu.alloc(n * F * 2)?, gpu.alloc(n * F * 2)?, gpu.alloc(n * F * 2)?];
        let mut res = Vec::new();
        for (o, form) in outs.iter().zip([MidForm::Value, MidForm::Block, MidForm::Warp]) {
            gpu.htod(o.ptr, &vec![0xffffu16; n * F])?;
            let run = || launch_moe_mid_form(gpu, gb.ptr, ub.ptr, pb.ptr, n, F, clamp, 0, o.ptr, true, form);
            run()?;
            let mut h = vec![0u16; n * F];
            gpu.dtoh(&mut h, o.ptr)?;
            let ms = time_ms(gpu, 10, &run)?;
            res.push((ms, h));
        }
        let diff = |k: usize| res[0].1.iter().zip(&res[k].1).filter(|(a, b)| a != b).count();
        let unwritten = |k: usize| res[k].1.iter().filter(|&&v| v == 0xffff).count();
        let gbs = |ms: f64| (n * F * 10) as f64 / ms / 1e6;
        println!(
            "moe_mid T={t:<5} n={n} x {F}: per value {:.3} ms ({:.0} GB/s), per block {:.3} ms ({:.0} GB/s), per warp {:.3} ms ({:.0} GB/s, {:.2}x per block); f16 mids differing from per value: block {} warp {} of {} (unwritten {} / {}), clamp {clamp:.3}",
            res[0].0,
            gbs(res[0].0),
            res[1].0,
            gbs(res[1].0),
            res[2].0,
            gbs(res[2].0),
            res[1].0 / res[2].0,
            diff(1),
            diff(2),
            n * F,
            unwritten(1),
            unwritten(2)
        );
        // the shared expert's mids (launch_moe_mid_pairs: t rows, no weights, plain pair order):
        // a thread per pair (perm 2) against two pairs per thread (perm 5), the same values
        let mut hp = Vec::new();
        for (four, o) in [(false, &outs[0]), (true, &outs[1])] {
            let pairs = || launch_moe_mid_pairs_as(gpu, gb.ptr, ub.ptr, t, F, clamp, o.ptr, four);
            gpu.htod(o.ptr, &vec![0xffffu16; n * F])?;
            pairs()?;
            let mut h = vec![0u16; t * F];
            gpu.dtoh(&mut h, o.ptr)?;
            hp.push((time_ms(gpu, 10, &pairs)?, h));
        }
        let pdiff = hp[0].1.iter().zip(&hp[1].1).filter(|(a, b)| a != b).count();
        let pun = hp[1].1.iter().filter(|&&v| v == 0xffff).count();
        println!("moe_mid pairs T={t:<5} {t} x {F}: per pair {:.3} ms, per two pairs {:.3} ms; f16 mids differing {pdiff} of {} (unwritten {pun})", hp[0].0, hp[1].0, t * F);
    }
    Ok(())
}

/// The cuBLAS dense path (cuda/blas.rs) on a dense case: `cublas` = dequantize W to f16 +
/// round x to f16 + cublasGemmEx (what CudaSession::gemm runs), `cublas_gemm` = the cuBLAS call
/// alone on prepared operands; error against the gemm_f32 output `href`, repeat check, and the
/// dequantize / convert times in the note.
#[allow(clippy::too_many_arguments)]
fn blas_rows(gpu: &Gpu, c: &GemmCase, m: &GMat, x: u64, ldx: usize, ytst: &DevBuf, ldy: usize, t: usize, nan: &[f32], href: &[f32], gflop: f64) -> Result<()> {
    let Some(blas) = gpu.blas() else {
        println!("{:<30} {:>5} {:<10} (libcublas not loaded)", "", "", "cublas");
        return Ok(());
    };
    let xc = c.cols * c.groups;
    let wb = gpu.alloc(c.rows * c.cols * 2)?;
    let xb16 = gpu.alloc(t * xc * 2)?;
    let s = Dense16 { w16: wb.ptr, w_elems: c.rows * c.cols, x16: xb16.ptr, x_elems: t * xc };
    let call = DenseCall { w: m.wmat(), groups: c.groups, x, ldx, y: ytst.ptr, ldy, t, y16: false, w16: 0 };
    if !call.ok(&s) {
        println!("{:<30} {:>5} {:<10} (shape not supported by the cuBLAS path)", "", "", "cublas");
        return Ok(());
    }
    let time = |reps: usize, f: &dyn Fn() -> Result<()>| time_ms(gpu, reps, f);

    let ny = nan.len();
    let yrows = t;
    for (label, full) in [("cublas", true), ("cublas_gemm", false)] {
        if !full {
            call.prep_w(gpu, &s)?;
            call.prep_x(gpu, &s)?;
        }
        gpu.htod(ytst.ptr, nan)?;
        let run = || -> Result<()> { if full { call.run(gpu, blas, &s, false) } else { call.gemm(blas, &s) } };
        let ms1 = time(1, &run)?;
        let mut htst = vec![0f32; ny];
        gpu.dtoh(&mut htst, ytst.ptr)?;
        let (rel, mx, bad) = gemm_err(&htst, href, yrows, c.rows, ldy);
        let reps = ((150.0 / ms1.max(1e-3)) as usize).clamp(3, 200);
        run()?;
        let ms = time(reps, &run)?;
        let mut again = vec![0f32; ny];
        gpu.dtoh(&mut again, ytst.ptr)?;
        let same = again.iter().zip(&htst).all(|(p, q)| p.to_bits() == q.to_bits());
        let mut note = format!("repeat={}", if same { "same" } else { "DIFFERENT" });
        if full {
            let deq = time(reps, &|| call.prep_w(gpu, &s))?;
            let cvt = time(reps, &|| call.prep_x(gpu, &s))?;
            note.push_str(&format!(" deq={deq:.3}ms cvt={cvt:.3}ms"));
            if dense_blas_wanted() && t >= dense_min_t() {
                note.push_str(" [session pick]");
            }
        }
        println!("{:<30} {:>5} {:<10} {:>9.3} {:>8.1} {:>9.2e} {:>9.2e} {:>5} {}", "", "", label, ms, gflop / ms, rel, mx, bad, note);
    }
    Ok(())
}

/// Random FP4-simulated vectors as idx_q_prep / the indexer compressor leave them: E2M1 codes
/// (sign kept) times a power-of-two scale per block of 32.
fn fp4_vectors(n: usize, seed: &mut u64) -> Vec<f32> {
    const E2M1: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let mut v = vec![0f32; n];
    for blk in v.chunks_mut(32) {
        let sc = 2f32.powi((rng(seed) % 6) as i32 - 4);
        for x in blk.iter_mut() {
            let r = rng(seed);
            let m = E2M1[(r % 8) as usize] * sc;
            *x = if (r >> 8) & 1 == 1 { -m } else { m };
        }
    }
    v
}

/// Prefill indexer scores: idx_score (SIMT, the reference) and idx_score_tc on the same random
/// FP4-simulated inputs: the fixture shape (16 heads x 32, top 8, T = 300 from position 0),
/// then the real shape (64 heads x 128, top 512), T = 2048 tokens whose visible rows run from
/// R to R + 512 (positions 4R .. 4R + 2047, R = 512, 4096, 16384). One line per case: ms and
/// TFLOP/s of both, ||tc-simt||/||simt||, max |tc-simt| / max |simt|, the fraction of tokens
/// whose topk_select sets are identical, and whether two tensor-core runs gave identical bits.
/// "tc" is the session's kernel (idx_tc_kernel); where that is not idx_score_tc2, a second line
/// compares it with tc2: time, scores differing in bits, top-k sets differing.
pub fn idx_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{idx_tc_bufs, idx_tc_kernel, launch_idx_simt, launch_idx_tc, launch_idx_tc_with, launch_topk, IdxIo, IDX_TC2};
    // (hi, di, topk, T, p0): the fixture shape from position 0 (zero-padded dims, partial
    // tiles, tokens that select nothing), then the real shape with rows R .. R + 512
    let mut cases = vec![(16usize, 32usize, 8usize, 300usize, 0usize)];
    cases.extend([512usize, 4096, 16384].map(|r0| (64, 128, 512, 2048, 4 * r0)));
    println!(
        "{:<30} {:>9} {:>8} {:>9} {:>8} {:>10} {:>10} {:>10} {:>4}",
        "indexer scores (prefill)", "simt ms", "TFLOP/s", "tc ms", "TFLOP/s", "rel err", "max rel", "same topk", "det"
    );
    for (hi, di, topk, t, p0) in cases {
        let rows = (p0 + t) / 4;
        let ldsc = rows + 2;
        let mut seed = 0x2545_f491_4f6c_dd1du64 ^ p0 as u64 ^ ((di as u64) << 32);
        let qv = fp4_vectors(t * hi * di, &mut seed);
        let kv = fp4_vectors(rows * di, &mut seed);
        let wv: Vec<f32> = (0..t * hi).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let pos: Vec<i32> = (0..t).map(|i| (p0 + i) as i32).collect();
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (qb, kb, wb, pb) = (f4(qv.len())?, f4(kv.len())?, f4(wv.len())?, f4(t)?);
        gpu.htod(qb.ptr, &qv)?;
        gpu.htod(kb.ptr, &kv)?;
        gpu.htod(wb.ptr, &wv)?;
        gpu.htod(pb.ptr, &pos)?;
        let (s_ref, s_tc, sel_ref, sel_tc) = (f4(t * ldsc)?, f4(t * ldsc)?, f4(t * topk)?, f4(t * topk)?);
        let (b16, bsc) = idx_tc_bufs(t, hi, rows);
        let (h16, hsc) = (gpu.alloc(b16)?, gpu.alloc(bsc)?);
        let io = IdxIo {
            q: qb.ptr,
            w: wb.ptr,
            k: kb.ptr,
            pos: pb.ptr,
            scores: s_ref.ptr,
            ldsc,
            t,
            rows,
            hi,
            di,
            wscale: 1.0 / ((hi * di) as f32).sqrt(),
            topk,
            h16: h16.ptr,
            hsc: hsc.ptr,
        };
        let io_tc = IdxIo { scores: s_tc.ptr, ..io };
        // poison: unwritten visible scores show up as NaN
        gpu.htod(s_tc.ptr, &vec![f32::NAN; t * ldsc])?;
        launch_idx_simt(gpu, &io)?;
        launch_idx_tc(gpu, &io_tc)?;
        launch_topk(gpu, &io, sel_ref.ptr, 0, 0)?;
        launch_topk(gpu, &io_tc, sel_tc.ptr, 0, 0)?;
        gpu.sync()?;
        let mut r = vec![0f32; t * ldsc];
        let mut y = vec![0f32; t * ldsc];
        gpu.dtoh(&mut r, s_ref.ptr)?;
        gpu.dtoh(&mut y, s_tc.ptr)?;
        let mut sr = vec![0i32; t * topk];
        let mut sy = vec![0i32; t * topk];
        gpu.dtoh(&mut sr, sel_ref.ptr)?;
        gpu.dtoh(&mut sy, sel_tc.ptr)?;
        // one warm-up call first
        let time = |reps: usize, f: &dyn Fn() -> Result<()>| -> Result<f64> {
            f()?;
            time_ms(gpu, reps, f)
        };

        let ms_simt = time(2, &|| launch_idx_simt(gpu, &io))?;
        let ms_tc = time(5, &|| launch_idx_tc(gpu, &io_tc))?;
        let mut y2 = vec![0f32; t * ldsc];
        gpu.dtoh(&mut y2, s_tc.ptr)?;
        let (mut num, mut den, mut mx, mut mref, mut bad) = (0f64, 0f64, 0f64, 0f64, 0usize);
        let (mut same, mut scored, mut det, mut flops) = (0usize, 0usize, true, 0f64);
        for i in 0..t {
            let n = (p0 + i + 1) / 4;
            if n <= topk {
                continue;
            }
            scored += 1;
            flops += 2.0 * (n * hi * di) as f64;
            for c in 0..n {
                let (a, b, a2) = (y[i * ldsc + c], r[i * ldsc + c], y2[i * ldsc + c]);
                det &= a.to_bits() == a2.to_bits();
                if !a.is_finite() {
                    bad += 1;
                    continue;
                }
                let e = (a as f64) - (b as f64);
                num += e * e;
                den += (b as f64) * (b as f64);
                mx = mx.max(e.abs());
                mref = mref.max((b as f64).abs());
            }
            same += (sr[i * topk..(i + 1) * topk] == sy[i * topk..(i + 1) * topk]) as usize;
        }
        let rel = if bad > 0 { f64::NAN } else { (num / den.max(1e-300)).sqrt() };
        let name = format!("idx {hi}x{di} k{topk} T={t} rows ..{rows}");
        let bad_s = if bad > 0 { format!("  {bad} NON-FINITE") } else { String::new() };
        println!(
            "{:<30} {:>9.3} {:>8.1} {:>9.3} {:>8.1} {:>10.2e} {:>10.2e} {:>10.4} {:>4}{}",
            name,
            ms_simt,
            flops / ms_simt / 1e9,
            ms_tc,
            flops / ms_tc / 1e9,
            rel,
            mx / mref.max(1e-300),
            same as f64 / scored.max(1) as f64,
            if det { "ok" } else { "NO" },
            bad_s
        );
        // the session's kernel (idx_tc_kernel) against idx_score_tc2 on the same inputs: visible
        // scores differing in bits, the largest difference, tokens whose top-k sets differ
        let kern = idx_tc_kernel(gpu);
        if kern.0 != IDX_TC2.0 {
            let (s_t2, sel_t2) = (f4(t * ldsc)?, f4(t * topk)?);
            let io_t2 = IdxIo { scores: s_t2.ptr, ..io };
            gpu.htod(s_t2.ptr, &vec![f32::NAN; t * ldsc])?;
            launch_idx_tc_with(gpu, &io_t2, false, IDX_TC2)?;
            launch_topk(gpu, &io_t2, sel_t2.ptr, 0, 0)?;
            let ms_t2 = time(5, &|| launch_idx_tc_with(gpu, &io_t2, false, IDX_TC2))?;
            let mut z = vec![0f32; t * ldsc];
            gpu.dtoh(&mut z, s_t2.ptr)?;
            let mut sz = vec![0i32; t * topk];
            gpu.dtoh(&mut sz, sel_t2.ptr)?;
            let (mut ndiff, mut dmax, mut nsel) = (0usize, 0f64, 0usize);
            for i in 0..t {
                let n = (p0 + i + 1) / 4;
                if n <= topk {
                    continue;
                }
                for c in 0..n {
                    let (a, b) = (y[i * ldsc + c], z[i * ldsc + c]);
                    if a.to_bits() != b.to_bits() {
                        ndiff += 1;
                        dmax = dmax.max(((a as f64) - (b as f64)).abs());
                    }
                }
                nsel += (sy[i * topk..(i + 1) * topk] != sz[i * topk..(i + 1) * topk]) as usize;
            }
            println!(
                "{:<30} {} {:.3} ms ({:.1} TFLOP/s) against idx_score_tc2 {:.3} ms: {:.2}x; scores differing {} (max |d| {:.2e}), top-k sets differing {}",
                "", kern.0, ms_tc, flops / ms_tc / 1e9, ms_t2, ms_t2 / ms_tc, ndiff, dmax, nsel
            );
        }
    }
    idx_q_prep_bench(gpu)?;
    topk_prefill_bench(gpu)?;
    idx_dec_bench(gpu)?;
    topk_cluster_bench(gpu)?;
    topk_cold_bench(gpu)
}

/// The host's top-k of `y`: the `topk` largest (a sort, ties to the smaller index), as row
/// indices in ascending order (the order the top-k kernels write).
fn host_topk(y: &[f32], topk: usize) -> Vec<i32> {
    let mut order: Vec<usize> = (0..y.len()).collect();
    order.sort_by(|&a, &b| y[b].total_cmp(&y[a]).then(a.cmp(&b)));
    let mut want: Vec<i32> = order[..topk].iter().map(|&i| i as i32).collect();
    want.sort_unstable();
    want
}

/// Little-endian f32 values of a file (ds4-bench DS4_BENCH_SCORES' output).
fn read_f32_file(path: &str) -> Result<Vec<f32>> {
    let raw = std::fs::read(path).map_err(|e| CudaError::Other(format!("{path}: {e}")))?;
    Ok(raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Decode's top-k, one token: topk_select (one block) against topk_cluster (a cluster of
/// TOPK_CL blocks), each with blocks of 1024, 512 and 256 threads, us per call in a graph, on random scores and on scores crowded onto 64
/// values (equal keys share every radix bin and straddle the cut). `host`: each kernel's rows
/// are the host's top-k (a sort, ties to the smaller index); `ties`: both logged the same
/// near-tie margin (bits) of the cut; `det`: a second (timed) run of each selected the same rows.
/// With DS4_KBENCH_SCORES=FILE also both on the scores a decode step left (ds4-bench
/// DS4_BENCH_SCORES).
fn topk_cluster_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{launch_topk_with, IdxIo};
    // (topk_cluster?, threads per block)
    const KS: [(bool, usize); 6] = [(false, 1024), (false, 512), (false, 256), (true, 1024), (true, 512), (true, 256)];
    println!(
        "{:<30} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5}",
        "top-k (decode, k 512), us", "blk1024", "blk512", "blk256", "cl1024", "cl512", "cl256", "host", "ties", "det"
    );
    let topk = 512usize;
    let mut cases: Vec<(usize, bool, Option<String>)> = [2048usize, 4096, 8192, 12000, 16388, 24000, 40000, 70000, 131072, 262144]
        .iter()
        .flat_map(|&r| [(r, false, None), (r, true, None)])
        .collect();
    if let Ok(path) = std::env::var("DS4_KBENCH_SCORES") {
        cases.push((0, false, Some(path)));
    }
    for (rows0, crowd, file) in cases {
        let v: Vec<f32> = match &file {
            Some(path) => read_f32_file(path)?,
            None => {
                let mut seed = 0x70b_c1u64 ^ rows0 as u64;
                (0..rows0).map(|_| if crowd { (frand(&mut seed) * 64.0).floor() / 8.0 - 4.0 } else { frand(&mut seed) * 2.0 - 1.0 }).collect()
            }
        };
        let rows = v.len();
        if rows <= topk {
            continue;
        }
        let (sc, pb) = (gpu.alloc(rows * 4)?, gpu.alloc(4)?);
        gpu.htod(sc.ptr, &v)?;
        gpu.htod(pb.ptr, &[(4 * rows - 1) as i32])?;
        let io = IdxIo { q: 0, w: 0, k: 0, pos: pb.ptr, scores: sc.ptr, ldsc: rows, t: 1, rows, hi: 64, di: 128, wscale: 1.0, topk, h16: 0, hsc: 0 };
        let want = host_topk(&v, topk);
        // near-tie logs: [count, capacity, 0, 0, capacity x (layer, pos, kind, margin)]
        let cap = 4usize;
        let mut t0 = vec![0i32; 4 + 4 * cap];
        t0[1] = cap as i32;
        // per kernel (topk_select, then topk_cluster at each block size): us, rows as the
        // host's, the tie log, a second (timed) run's rows
        let mut res = Vec::new();
        for (cl, th) in KS {
            let (sa, sa2, ta) = (gpu.alloc(topk * 4)?, gpu.alloc(topk * 4)?, gpu.alloc((4 + 4 * cap) * 4)?);
            gpu.htod(ta.ptr, &t0)?;
            launch_topk_with(gpu, &io, sa.ptr, 0, ta.ptr, cl, th)?;
            gpu.sync()?;
            let us = graph_us(gpu, 100, &|| launch_topk_with(gpu, &io, sa2.ptr, 0, 0, cl, th))?;
            let (mut xa, mut xa2, mut la) = (vec![0i32; topk], vec![0i32; topk], vec![0i32; 4 + 4 * cap]);
            gpu.dtoh(&mut xa, sa.ptr)?;
            gpu.dtoh(&mut xa2, sa2.ptr)?;
            gpu.dtoh(&mut la, ta.ptr)?;
            res.push((us, xa == want, la, xa2 == xa));
        }
        let host = if res.iter().all(|r| r.1) { "ok".to_string() } else { res.iter().map(|r| if r.1 { '.' } else { 'X' }).collect() };
        // one entry each (or none when the margin is not near): the same count and margin bits
        let l0 = &res[0].2;
        let ties = if res.iter().all(|r| r.2[0] == l0[0] && r.2[4..8] == l0[4..8]) { format!("{}", l0[0]) } else { "NO".into() };
        let det = if res.iter().all(|r| r.3) { "ok" } else { "NO" };
        let name = match &file {
            Some(p) => format!("{} ({rows} rows)", std::path::Path::new(p).file_name().map_or(p.clone(), |f| f.to_string_lossy().into())),
            None => format!("rows {rows}{}", if crowd { " crowded" } else { "" }),
        };
        println!(
            "{:<30} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6} {:>6} {:>5}",
            name, res[0].0, res[1].0, res[2].0, res[3].0, res[4].0, res[5].0, host, ties, det
        );
    }
    Ok(())
}

/// topk_select between other work, as in the decode graph, where it takes ~20 us per call at
/// 64K against ~12 back to back here: each call after a matvec of q_b's shape (35.6 MB of
/// Q8_0 streamed through L2, its code on every SM). The difference against the matvec alone is
/// topk_select's time there.
fn topk_cold_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{launch_topk, IdxIo};
    let (rows, topk, cols, mrows) = (16384usize, 512usize, 1024usize, 32768usize);
    let mut seed = 0x7091_c01du64;
    let sv: Vec<f32> = (0..rows).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
    let xv: Vec<f32> = (0..cols).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
    let (sc, sel, pb) = (gpu.alloc(rows * 4)?, gpu.alloc(topk * 4)?, gpu.alloc(4)?);
    gpu.htod(sc.ptr, &sv)?;
    gpu.htod(pb.ptr, &[(4 * rows - 1) as i32])?;
    let io = IdxIo { q: 0, w: 0, k: 0, pos: pb.ptr, scores: sc.ptr, ldsc: rows, t: 1, rows, hi: 64, di: 128, wscale: 1.0, topk, h16: 0, hsc: 0 };
    let m = upload_raw_mat(gpu, "q_b", GgmlType::Q8_0, vec![cols as u64, mrows as u64], &random_blocks(GgmlType::Q8_0, cols * mrows, 91))?;
    let (x, qs, qd, y) = (gpu.alloc(cols * 4)?, gpu.alloc(cols)?, gpu.alloc(cols / 32 * 8)?, gpu.alloc(mrows * 4)?);
    gpu.htod(x.ptr, &xv)?;
    launch_quant_q8(gpu, x.ptr, cols, 0, 0, qs.ptr, qd.ptr)?;
    let tq = JobTableQ::new(&mut [MvJobQ::plain(m.wmat(), (qs.ptr, qd.ptr), y.ptr)])?;
    let t_topk = graph_us(gpu, 100, &|| launch_topk(gpu, &io, sel.ptr, 0, 0))?;
    let t_mv = graph_us(gpu, 50, &|| tq.run(gpu, 1))?;
    let t_both = graph_us(gpu, 50, &|| {
        tq.run(gpu, 1)?;
        launch_topk(gpu, &io, sel.ptr, 0, 0)
    })?;
    println!("topk_select {rows} rows: back to back {t_topk:.2} us; after a 35.6 MB matvec {:.2} us (the matvec alone {t_mv:.2} us)", t_both - t_mv);
    // scores a decode step left (ds4-bench DS4_BENCH_SCORES): their time, and how many are
    // exact duplicates (equal keys share every radix bin)
    if let Ok(path) = std::env::var("DS4_KBENCH_SCORES") {
        let v = read_f32_file(&path)?;
        let n = v.len();
        let mut keys: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
        keys.sort_unstable();
        let (mut distinct, mut run, mut maxrun) = (0usize, 0usize, 0usize);
        for i in 0..n {
            if i == 0 || keys[i] != keys[i - 1] {
                distinct += 1;
                run = 0;
            }
            run += 1;
            maxrun = maxrun.max(run);
        }
        let top8: std::collections::BTreeSet<u32> = v.iter().map(|x| (x.to_bits() ^ if x.is_sign_negative() { 0xffff_ffff } else { 0x8000_0000 }) >> 24).collect();
        let sd = gpu.alloc(n * 4)?;
        gpu.htod(sd.ptr, &v)?;
        gpu.htod(pb.ptr, &[(4 * n - 1) as i32])?;
        let io_s = IdxIo { scores: sd.ptr, ldsc: n, rows: n, ..io };
        let t_s = graph_us(gpu, 100, &|| launch_topk(gpu, &io_s, sel.ptr, 0, 0))?;
        println!("  {path}: {n} scores, {distinct} distinct (largest run {maxrun}), {} top-byte bins: topk_select {t_s:.2} us", top8.len());
    }
    Ok(())
}

/// `launch` into a fresh zeroed output of `n` 4-byte values: the values after one launch, and
/// the launch's time (time_ms).
fn out_and_ms<T: Copy + Default>(gpu: &Gpu, n: usize, launch: &dyn Fn(u64) -> Result<()>) -> Result<(Vec<T>, f64)> {
    let out = gpu.alloc_zeroed(n * 4)?;
    launch(out.ptr)?;
    let mut v = vec![T::default(); n];
    gpu.dtoh(&mut v, out.ptr)?;
    Ok((v, time_ms(gpu, 5, &|| launch(out.ptr))?))
}

/// Prefill's ratio-128 compressor windows (`DS4_KBENCH=comp`, `DS4_COMP_L16`): comp_emit16
/// against comp_emit on random projections of an 8K batch from position 0 (d 512, RoPE 64, FP8
/// step on): every compressed row the same bits (differing values counted), and the time of each.
fn comp_bench(gpu: &Gpu) -> Result<()> {
    use super::session::launch_comp_emit_bench;
    for t in bench_ts(&[8192]) {
        let (r, d, rd) = (128usize, 512usize, 64usize);
        let mut seed = 0xc0_u64 ^ t as u64;
        let mut uni = |lo: f32, hi: f32, k: usize| -> Vec<f32> { (0..k).map(|_| lo + (hi - lo) * frand(&mut seed)).collect() };
        let (kv, sc) = (gpu.upload(&uni(-2.0, 2.0, t * d))?, gpu.upload(&uni(-4.0, 4.0, t * d))?);
        let ape: Vec<u16> = uni(-1.0, 1.0, r * d).iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let apeb = gpu.alloc(ape.len() * 2)?;
        gpu.htod(apeb.ptr, &ape)?;
        let (norm, state) = (gpu.upload(&uni(0.5, 1.5, d))?, gpu.alloc_zeroed(r * d * 4)?);
        let omega: Vec<f32> = (0..rd / 2).map(|k| 1.0 / 160000f32.powf(2.0 * k as f32 / rd as f32)).collect();
        let pos: Vec<i32> = (0..t as i32).collect();
        let (om, pb) = (gpu.upload(&omega)?, gpu.upload(&pos)?);
        let n = (t / r + 1) * d;
        let run = |sixteen: bool| out_and_ms::<u32>(gpu, n, &|rows| launch_comp_emit_bench(gpu, kv.ptr, sc.ptr, apeb.ptr, (state.ptr, state.ptr), rows, norm.ptr, om.ptr, pb.ptr, t, r, d, rd, sixteen));
        let ((a, ms8), (b, ms16)) = (run(false)?, run(true)?);
        let diff = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        ab_line(&format!("comp_emit ratio {r} d {d} T={t}: comp_emit (new comp_emit16)"), ms8, ms16, diff, n);
    }
    Ok(())
}

/// Prefill's top-k (`DS4_TOPK_THREADS`): topk_select with blocks of 512 and 256 threads
/// against 1024 on an 8K prompt's shape (positions 0 .. T, at most T / 4 rows a token, top 512;
/// random scores): every token's selection the same (differing entries counted), and the
/// time of each.
fn topk_prefill_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{launch_topk_with, IdxIo};
    for t in bench_ts(&[8192]) {
        let (rows, topk) = (t / 4, 512usize);
        let mut seed = 0x70b5_u64 ^ t as u64;
        let sv: Vec<f32> = (0..t * rows).map(|_| frand(&mut seed) * 8.0 - 4.0).collect();
        let pos: Vec<i32> = (0..t as i32).collect();
        let (sb, pb) = (gpu.upload(&sv)?, gpu.upload(&pos)?);
        let io = IdxIo { q: 0, w: 0, k: 0, pos: pb.ptr, scores: sb.ptr, ldsc: rows, t, rows, hi: 0, di: 0, wscale: 1.0, topk, h16: 0, hsc: 0 };
        let run = |threads: usize| out_and_ms::<i32>(gpu, t * topk, &|sel| launch_topk_with(gpu, &io, sel, 0, 0, false, threads));
        let (base, ms0) = run(1024)?;
        for threads in [512usize, 256] {
            let (v, ms) = run(threads)?;
            let diff = base.iter().zip(&v).filter(|(a, b)| a != b).count();
            ab_line(&format!("topk_select prefill T={t} rows<={rows} top {topk}: 1024 threads (new {threads})"), ms0, ms, diff, v.len());
        }
    }
    Ok(())
}

/// Prefill's indexer query prep: idx_q_prep writing the tensor-core scores' f16 form itself
/// (session.rs `indexer`) against idx_q_prep in f32 then idx_to_f16, on the same random q:
/// the f16 values and the scales must be the same bits (`f16 diff` / `scale diff` count the
/// differing ones), and the time of each form.
fn idx_q_prep_bench(gpu: &Gpu) -> Result<()> {
    use super::session::idx_tc_bufs;
    // the FP4 step's rounding (common.cuh e2m1_round) against the search it replaced, on every
    // float in [-6, 6]
    let bad = gpu.alloc_zeroed(4)?;
    gpu.launch("e2m1_check", (1 << 18, 1, 1), 256, 0, Args::new().a(0u32).a(bad.ptr))?;
    let mut nb = [0i32; 1];
    gpu.dtoh(&mut nb, bad.ptr)?;
    println!("e2m1_round against the search on all floats in [-6, 6]: {} differ", nb[0]);
    println!("{:<34} {:>10} {:>10} {:>10} {:>10}", "indexer query prep (prefill)", "f32+conv", "f16 ms", "f16 diff", "scale diff");
    // (hi, di, rope dims, T, p0): the fixtures' shape, the real one
    for (hi, di, r, t, p0) in [(16usize, 32usize, 16usize, 300usize, 0usize), (64, 128, 64, 8192, 4096)] {
        let nq = t * hi;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((di as u64) << 16) ^ t as u64;
        let qv: Vec<f32> = (0..nq * di).map(|_| frand(&mut seed) * 4.0 - 2.0).collect();
        let wv: Vec<f32> = (0..nq).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let pos: Vec<i32> = (0..t).map(|i| (p0 + i) as i32).collect();
        let omega: Vec<f32> = (0..r / 2).map(|k| 1.0 / 160000f32.powf(2.0 * k as f32 / r as f32)).collect();
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (q0, qa, qb, wb, pb, ob) = (f4(qv.len())?, f4(qv.len())?, f4(qv.len())?, f4(nq)?, f4(t)?, f4(omega.len().max(1))?);
        gpu.htod(q0.ptr, &qv)?;
        gpu.htod(wb.ptr, &wv)?;
        gpu.htod(pb.ptr, &pos)?;
        gpu.htod(ob.ptr, &omega)?;
        let (b16, bsc) = idx_tc_bufs(t, hi, 0);
        let (ha, sa, hb, sb) = (gpu.alloc(b16)?, gpu.alloc(bsc)?, gpu.alloc(b16)?, gpu.alloc(bsc)?);
        let wscale = 1.0f32 / ((hi * di) as f32).sqrt();
        let bytes = qv.len() * 4;
        // (l: idx_q_prep_l, Di / 32 lanes a vector, DS4_IDXQ_L)
        let prep_as = |q: u64, h16: u64, hsc: u64, l: bool| -> Result<()> {
            let args = Args::new().a(q).a(pb.ptr).a(ob.ptr).a(hi as i32).a(di as i32).a(r as i32).a(1i32).a(0i32).a(512i32).a(0u64).a(t as i32);
            let args = if h16 != 0 { args.a(h16).a(hsc).a(wb.ptr).a(wscale) } else { args.a(0u64).a(0u64).a(0u64).a(0f32) };
            if l {
                gpu.launch("idx_q_prep_l", ((nq * (di / 32)).div_ceil(256) as u32, 1, 1), 256, 0, args)
            } else {
                gpu.launch("idx_q_prep", (nq.div_ceil(8) as u32, 1, 1), 256, 0, args)
            }
        };
        let prep = |q: u64, h16: u64, hsc: u64| prep_as(q, h16, hsc, false);
        let old = || -> Result<()> {
            gpu.dtod(qa.ptr, q0.ptr, bytes)?;
            prep(qa.ptr, 0, 0)?;
            gpu.launch("idx_to_f16", (nq.div_ceil(8) as u32, 1, 1), 256, 0, Args::new().a(qa.ptr).a(nq as i32).a(di as i32).a(wb.ptr).a(wscale).a(ha.ptr).a(sa.ptr))
        };
        let new = || -> Result<()> {
            gpu.dtod(qb.ptr, q0.ptr, bytes)?;
            prep(qb.ptr, hb.ptr, sb.ptr)
        };
        old()?;
        new()?;
        gpu.sync()?;
        let (mut xa, mut xb) = (vec![0u16; nq * 128], vec![0u16; nq * 128]);
        gpu.dtoh(&mut xa, ha.ptr)?;
        gpu.dtoh(&mut xb, hb.ptr)?;
        let (mut ca, mut cb) = (vec![0f32; nq], vec![0f32; nq]);
        gpu.dtoh(&mut ca, sa.ptr)?;
        gpu.dtoh(&mut cb, sb.ptr)?;
        let hdiff = xa.iter().zip(&xb).filter(|(a, b)| a != b).count();
        let sdiff = ca.iter().zip(&cb).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        // (each timed form includes the same copy of q into its scratch)
        let ms_old = time_ms(gpu, 5, &old)?;
        let ms_new = time_ms(gpu, 5, &new)?;
        println!("{:<34} {:>10.3} {:>10.3} {:>10} {:>10}", format!("idx q prep {hi}x{di} R{r} T={t}"), ms_old, ms_new, hdiff, sdiff);
        // idx_q_prep_l against idx_q_prep: the f16 form (values and scales) and the f32 form in
        // place, the same bits expected
        if super::session::idx_q_prep_l_ok(hi, di, r) {
            let (hc, sc) = (gpu.alloc(b16)?, gpu.alloc(bsc)?);
            let newl = || -> Result<()> {
                gpu.dtod(qb.ptr, q0.ptr, bytes)?;
                prep_as(qb.ptr, hc.ptr, sc.ptr, true)
            };
            newl()?;
            let (mut xc, mut cc) = (vec![0u16; nq * 128], vec![0f32; nq]);
            gpu.dtoh(&mut xc, hc.ptr)?;
            gpu.dtoh(&mut cc, sc.ptr)?;
            let hd = xb.iter().zip(&xc).filter(|(a, b)| a != b).count();
            let sd = cb.iter().zip(&cc).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            // the f32 form: qa holds idx_q_prep's in-place output (old() above)
            gpu.dtod(qb.ptr, q0.ptr, bytes)?;
            prep_as(qb.ptr, 0, 0, true)?;
            let (mut fa, mut fb) = (vec![0f32; qv.len()], vec![0f32; qv.len()]);
            gpu.dtoh(&mut fa, qa.ptr)?;
            gpu.dtoh(&mut fb, qb.ptr)?;
            let fd = fa.iter().zip(&fb).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            let ms_l = time_ms(gpu, 5, &newl)?;
            println!(
                "{:<34} {:>10.3} {:>10.3} {:>10} {:>10}  ({:.2}x; f32 form diff {fd}){}",
                format!("idx q prep_l {hi}x{di} R{r} T={t}"),
                ms_new,
                ms_l,
                hd,
                sd,
                ms_new / ms_l.max(1e-9),
                if hd + sd + fd == 0 { "" } else { "  FAIL" }
            );
        }
    }
    Ok(())
}

/// One-token (decode) indexer: `idx_score_w` against `idx_score` on the same FP4 inputs at the
/// real shape for 8K to 280K contexts (and the fixtures' shape), each followed by
/// `topk_select`. Per case: us per call of each scores kernel and of topk_select in a graph,
/// rel / max score error against idx_score (and the max for `idx_score_dtc`, decode's
/// tensor-core path), whether both select the same rows (`dtc`: rows idx_score_dtc's top-k
/// keeps that idx_score_w's does not, near-ties of a different summation order), `host`
/// (topk_select's rows are the host's top-k of the same scores: a sort, ties to the smaller
/// index; the row counts cover each of topk_select's key-register counts, keys in shared memory
/// (24K, 40K) and keys re-read per pass (70K)),
/// and `det` (scores and selection of a run after the timing loops identical to the first
/// run's).
fn idx_dec_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{idx_w_shape_ok, launch_idx_dtc, launch_idx_score, launch_idx_score_w, launch_topk, IdxIo};
    println!(
        "{:<30} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>6} {:>6} {:>4} {:>4}",
        "indexer (decode)", "old us", "new us", "dtc us", "topk us", "rel err", "max rel", "dtc rel", "same", "dtc", "host", "det"
    );
    let cases = [(16usize, 32usize, 8usize, 300usize), (64, 128, 512, 2048), (64, 128, 512, 3000), (64, 128, 512, 8192), (64, 128, 512, 16384), (64, 128, 512, 20000), (64, 128, 512, 24000), (64, 128, 512, 40000), (64, 128, 512, 70000)];
    for (hi, di, topk, rows) in cases {
        if !idx_w_shape_ok(hi, di) {
            continue;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ rows as u64;
        let qv = fp4_vectors(hi * di, &mut seed);
        let kv = fp4_vectors(rows * di, &mut seed);
        let wv: Vec<f32> = (0..hi).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (qb, kb, wb, pb) = (f4(qv.len())?, f4(kv.len())?, f4(wv.len())?, f4(1)?);
        gpu.htod(qb.ptr, &qv)?;
        gpu.htod(kb.ptr, &kv)?;
        gpu.htod(wb.ptr, &wv)?;
        // the first position that sees `rows` compressed rows ((p + 1) / 4)
        gpu.htod(pb.ptr, &[(4 * rows - 1) as i32])?;
        let (s_old, s_new, sel_old, sel_new) = (f4(rows)?, f4(rows)?, f4(topk)?, f4(topk)?);
        let (s_dtc, sel_dtc) = (f4(rows)?, f4(topk)?);
        gpu.htod(s_new.ptr, &vec![f32::NAN; rows])?;
        let io = IdxIo {
            q: qb.ptr,
            w: wb.ptr,
            k: kb.ptr,
            pos: pb.ptr,
            scores: s_old.ptr,
            ldsc: rows,
            t: 1,
            rows,
            hi,
            di,
            wscale: 1.0 / ((hi * di) as f32).sqrt(),
            topk,
            h16: 0,
            hsc: 0,
        };
        let io_new = IdxIo { scores: s_new.ptr, ..io };
        let io_dtc = IdxIo { scores: s_dtc.ptr, ..io };
        launch_idx_score(gpu, &io)?;
        launch_idx_score_w(gpu, &io_new)?;
        launch_idx_dtc(gpu, &io_dtc)?;
        launch_topk(gpu, &io, sel_old.ptr, 0, 0)?;
        launch_topk(gpu, &io_new, sel_new.ptr, 0, 0)?;
        launch_topk(gpu, &io_dtc, sel_dtc.ptr, 0, 0)?;
        gpu.sync()?;
        // tensor-core scores (decode's path in Fast precision): error against idx_score, and
        // the rows its top-k keeps that idx_score_w's does not
        let mut yd = vec![0f32; rows];
        gpu.dtoh(&mut yd, s_dtc.ptr)?;
        let mut sd = vec![0i32; topk];
        gpu.dtoh(&mut sd, sel_dtc.ptr)?;
        let us_dtc = graph_us(gpu, 100, &|| launch_idx_dtc(gpu, &io_dtc))?;
        let (mut r, mut y) = (vec![0f32; rows], vec![0f32; rows]);
        gpu.dtoh(&mut r, s_old.ptr)?;
        gpu.dtoh(&mut y, s_new.ptr)?;
        let (mut so, mut sn) = (vec![0i32; topk], vec![0i32; topk]);
        gpu.dtoh(&mut so, sel_old.ptr)?;
        gpu.dtoh(&mut sn, sel_new.ptr)?;
        let us_old = graph_us(gpu, 100, &|| launch_idx_score(gpu, &io))?;
        let us_new = graph_us(gpu, 100, &|| launch_idx_score_w(gpu, &io_new))?;
        let us_topk = graph_us(gpu, 100, &|| launch_topk(gpu, &io_new, sel_new.ptr, 0, 0))?;
        gpu.htod(s_new.ptr, &vec![f32::NAN; rows])?;
        launch_idx_score_w(gpu, &io_new)?;
        launch_topk(gpu, &io_new, sel_new.ptr, 0, 0)?;
        gpu.sync()?;
        let (mut y2, mut sn2) = (vec![0f32; rows], vec![0i32; topk]);
        gpu.dtoh(&mut y2, s_new.ptr)?;
        gpu.dtoh(&mut sn2, sel_new.ptr)?;
        let det = y.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()) && sn == sn2;
        let host_ok = sn == host_topk(&y, topk) && sd == host_topk(&yd, topk);
        let (rel, mx, mref, bad) = err_stats(&y, &r);
        let (_, mxd, mrefd, badd) = err_stats(&yd, &r);
        let bad_s = if bad + badd > 0 { format!("  {} NON-FINITE", bad + badd) } else { String::new() };
        let dtc_diff = sd.iter().filter(|i| sn.binary_search(i).is_err()).count();
        println!(
            "{:<30} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.2e} {:>10.2e} {:>10.2e} {:>6} {:>6} {:>4} {:>4}{}",
            format!("idx {hi}x{di} k{topk} rows {rows}"),
            us_old,
            us_new,
            us_dtc,
            us_topk,
            rel,
            mx / mref.max(1e-300),
            mxd / mrefd.max(1e-300),
            if so == sn { "yes" } else { "NO" },
            dtc_diff,
            if host_ok { "ok" } else { "NO" },
            if det { "ok" } else { "NO" },
            bad_s
        );
    }
    gpu.sync()
}

/// Decode (T = 1) kernels against the previous ones on the same random inputs
/// (`DS4_KBENCH=dec`): attention (attn_dec vs attn_partial + attn_combine at the session's
/// decode split) and the router (moe_route_w vs moe_route). Per case: us per call of each,
/// max |new-old| / max |old|, non-finite outputs, and `det`: the new kernel's output after
/// the timing loop (hundreds of launches: the counters must reset) bit-identical to its first;
/// at dh % 256 == 0 attn_dec also writes its int8 copy, compared with quant_q8 of its f32
/// output (bytes and scales: "same").
pub fn dec_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{attn_dec_bufs, attn_dec_nsplit, launch_attn_dec, launch_attn_dec_traced, launch_attn_simt, launch_route, launch_router_dec, nsplit_decode, AttnIo, HcSk, RouterDecArgs};
    let reps = 200usize;
    let time = |f: &dyn Fn() -> Result<()>| graph_us(gpu, reps, f);
    let cmp = |y: &[f32], r: &[f32]| -> (f64, usize) {
        let (mut mx, mut mr, mut bad) = (0f64, 0f64, 0usize);
        for (a, b) in y.iter().zip(r) {
            if !a.is_finite() {
                bad += 1;
                continue;
            }
            mx = mx.max((*a as f64 - *b as f64).abs());
            mr = mr.max((*b as f64).abs());
        }
        (if bad > 0 { f64::NAN } else { mx / mr.max(1e-300) }, bad)
    };
    println!("{:<44} {:>8} {:>8} {:>7} {:>10} {:>4} {:>4}", "decode attention (T=1)", "old us", "new us", "speedup", "rel err", "nan", "det");
    let w = 128usize;
    // (h, dh, rd, topk, position, ratio): real shapes at ctx 2048 and beyond (indexer
    // selection active at p >= 2052 for ratio 4), early positions (empty splits), fixture shape
    let mut cases = Vec::new();
    for &p in &[5usize, 2047, 4095, 16383] {
        for ratio in [0usize, 4, 128] {
            cases.push((64usize, 512usize, 64usize, 512usize, p, ratio));
        }
    }
    for &p in &[0usize, 37, 299] {
        for ratio in [0usize, 4, 128] {
            cases.push((4, 80, 16, 8, p, ratio));
        }
    }
    for &(h, dh, rd, topk, p, ratio) in &cases {
        let cap = (w + 1).div_ceil(256) * 256;
        let ncv = (p + 1).checked_div(ratio).unwrap_or(0);
        let seed = 0x51f1_5eed_u64 ^ ((p as u64) << 12) ^ (ratio as u64) ^ ((dh as u64) << 40);
        let inp = AttnInputs::new(gpu, AttnShape { h, dh, rd, topk, cap, p0: p, t: 1, ratio }, seed)?;
        let f4 = |n: usize| gpu.alloc(n * 4);
        let ns = nsplit_decode(ratio);
        let (po, pml, out_old, out_new) = (f4(ns * h * dh)?, f4(ns * h * 2)?, f4(h * dh)?, f4(h * dh)?);
        let (np, nc) = attn_dec_bufs(h, dh);
        let part = f4(np)?;
        let cnt = gpu.alloc_zeroed(nc * 4)?;
        let io = inp.io(w, po.ptr, pml.ptr, out_old.ptr, ns);
        let io_new = AttnIo { out: out_new.ptr, ..io };
        gpu.htod(out_new.ptr, &vec![f32::NAN; h * dh])?;
        launch_attn_simt(gpu, &io)?;
        // the int8 output where the shape allows it, checked against quant_q8 of the f32 output
        let q8b = if dh % 256 == 0 { Some((gpu.alloc(h * dh)?, gpu.alloc(h * dh / 32 * 8)?, gpu.alloc(h * dh)?, gpu.alloc(h * dh / 32 * 8)?)) } else { None };
        let q8 = q8b.as_ref().map(|b| (b.0.ptr, b.1.ptr));
        launch_attn_dec(gpu, &io_new, part.ptr, cnt.ptr, q8)?;
        let q8_diff = match &q8b {
            Some(b) => {
                launch_quant_q8(gpu, out_new.ptr, h * dh, 0, 0, b.2.ptr, b.3.ptr)?;
                let (mut qa, mut qb) = (vec![0i8; h * dh], vec![0i8; h * dh]);
                let (mut da, mut db) = (vec![0f32; h * dh / 16], vec![0f32; h * dh / 16]);
                gpu.dtoh(&mut qa, b.0.ptr)?;
                gpu.dtoh(&mut qb, b.2.ptr)?;
                gpu.dtoh(&mut da, b.1.ptr)?;
                gpu.dtoh(&mut db, b.3.ptr)?;
                let n = qa.iter().zip(&qb).filter(|(a, b)| a != b).count() + da.iter().zip(&db).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                format!(" int8 vs quant_q8: {}", if n == 0 { "same".to_string() } else { format!("{n} DIFFER") })
            }
            None => String::new(),
        };
        let (mut r, mut y) = (vec![0f32; h * dh], vec![0f32; h * dh]);
        gpu.dtoh(&mut r, out_old.ptr)?;
        gpu.dtoh(&mut y, out_new.ptr)?;
        let us_old = time(&|| launch_attn_simt(gpu, &io))?;
        let us_new = time(&|| launch_attn_dec(gpu, &io_new, part.ptr, cnt.ptr, q8))?;
        let mut y2 = vec![0f32; h * dh];
        gpu.dtoh(&mut y2, out_new.ptr)?;
        let mut cz = vec![0i32; nc];
        gpu.dtoh(&mut cz, cnt.ptr)?;
        let det = y.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()) && cz.iter().all(|&c| c == 0);
        let (rel, bad) = cmp(&y, &r);
        let rows = (p + 1).min(w) + if ratio == 4 { ncv.min(topk) } else { ncv };
        let name = format!("attn h{h} dh{dh} r{ratio} p={p} rows={rows} ns={ns}/{}", attn_dec_nsplit(ratio));
        println!("{:<48} {:>8.2} {:>8.2} {:>6.2}x {:>10.2e} {:>4} {:>4}{q8_diff}", name, us_old, us_new, us_old / us_new, rel, bad, if det { "ok" } else { "NO" });
        // phase trace of a warm launch (launch_attn_dec_traced), us from the first block's entry
        let nb = h.div_ceil(8) * attn_dec_nsplit(ratio);
        let tr = gpu.alloc_zeroed(nb * 8 * 8)?;
        for _ in 0..3 {
            launch_attn_dec_traced(gpu, &io_new, part.ptr, cnt.ptr, q8, tr.ptr)?;
        }
        gpu.sync()?;
        let mut tv = vec![0u64; nb * 8];
        gpu.dtoh(&mut tv, tr.ptr)?;
        let t0 = (0..nb).map(|b| tv[8 * b]).filter(|&v| v > 0).min().unwrap_or(0);
        let phase = |k: usize| -> String {
            let mut v: Vec<f64> = (0..nb).filter(|&b| tv[8 * b + k] > 0).map(|b| tv[8 * b + k].saturating_sub(t0) as f64 / 1e3).collect();
            if v.is_empty() {
                return "-".into();
            }
            v.sort_by(f64::total_cmp);
            format!("{:.2}/{:.2}", v[v.len() / 2], v[v.len() - 1])
        };
        let names = ["entry", "q", "rows", "cl.bar", "merge", "counter", "out"];
        let line: Vec<String> = names.iter().enumerate().map(|(k, n)| format!("{n} {}", phase(k))).collect();
        println!("  trace us (median/max over blocks): {}", line.join(" | "));
    }

    println!("{:<44} {:>8} {:>8} {:>7} {:>10} {:>4} {:>4}", "decode router", "old us", "new us", "speedup", "wts rel", "sel!", "det");
    // (experts, used, tokens, hash, ties): real shape biased and hashed, exact score ties, fixture
    // shape, an 8K prefill batch (prefill routes by moe_route_w too: session.rs route_w_prefill)
    let rcases = [(256usize, 6usize, 1usize, false, false), (256, 6, 1, true, false), (256, 6, 1, false, true), (256, 6, 4, false, false), (8, 2, 1, false, false), (8, 2, 1, true, false), (8, 2, 3, false, true), (256, 6, 8192, false, false), (256, 6, 8192, false, true)];
    for &(e, k, t, hash, ties) in &rcases {
        let mut seed = 0xa11c_e5ee_d000_u64 ^ ((e * 31 + k) as u64) ^ ((t as u64) << 20) ^ ((hash as u64) << 30) ^ ((ties as u64) << 31);
        let mut logits: Vec<f32> = (0..t * e).map(|_| frand(&mut seed) * 8.0 - 4.0).collect();
        let mut bias: Vec<f32> = (0..e).map(|_| frand(&mut seed) * 0.2 - 0.1).collect();
        if ties {
            // few distinct logits and no bias: many exactly equal scores
            for x in logits.iter_mut() {
                *x = (*x).round();
            }
            bias.iter_mut().for_each(|b| *b = 0.0);
        }
        let vocab = 64usize;
        let tok: Vec<i32> = (0..t).map(|i| ((i * 17 + 5) % vocab) as i32).collect();
        let mut tab = vec![0i32; vocab * k];
        for v in 0..vocab {
            for j in 0..k {
                tab[v * k + j] = ((v * 7 + j * 13) % e) as i32;
            }
        }
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (lb, bb, tb, tokb) = (f4(logits.len())?, f4(e)?, f4(tab.len())?, f4(t)?);
        gpu.htod(lb.ptr, &logits)?;
        gpu.htod(bb.ptr, &bias)?;
        gpu.htod(tb.ptr, &tab)?;
        gpu.htod(tokb.ptr, &tok)?;
        let (s_old, w_old, s_new, w_new) = (f4(t * k)?, f4(t * k)?, f4(t * k)?, f4(t * k)?);
        let (bias_p, tab_p) = if hash { (0, tb.ptr) } else { (bb.ptr, 0) };
        let run = |new: bool| {
            let (s, w) = if new { (s_new.ptr, w_new.ptr) } else { (s_old.ptr, w_old.ptr) };
            launch_route(gpu, new, t, lb.ptr, bias_p, tab_p, tokb.ptr, e, k, 1.5, true, s, w)
        };
        gpu.htod(w_new.ptr, &vec![f32::NAN; t * k])?;
        run(false)?;
        run(true)?;
        let (mut so, mut sn, mut wo, mut wn) = (vec![0i32; t * k], vec![0i32; t * k], vec![0f32; t * k], vec![0f32; t * k]);
        gpu.dtoh(&mut so, s_old.ptr)?;
        gpu.dtoh(&mut sn, s_new.ptr)?;
        gpu.dtoh(&mut wo, w_old.ptr)?;
        gpu.dtoh(&mut wn, w_new.ptr)?;
        let us_old = time(&|| run(false))?;
        let us_new = time(&|| run(true))?;
        let mut wn2 = vec![0f32; t * k];
        gpu.dtoh(&mut wn2, w_new.ptr)?;
        let det = wn.iter().zip(&wn2).all(|(a, b)| a.to_bits() == b.to_bits());
        let mism = so.iter().zip(&sn).filter(|(a, b)| a != b).count();
        let (rel, bad) = cmp(&wn, &wo);
        let bits = wn.iter().zip(&wo).all(|(a, b)| a.to_bits() == b.to_bits());
        let name = format!("route E{e} K{k} T{t}{}{}", if hash { " hash" } else { " bias" }, if ties { " ties" } else { "" });
        let rel_s = if bits && bad == 0 { "identical".to_string() } else { format!("{rel:.2e}") };
        println!("{:<44} {:>8.2} {:>8.2} {:>6.2}x {:>10} {:>4} {:>4}", name, us_old, us_new, us_old / us_new, rel_s, mism, if det { "ok" } else { "NO" });
    }
    // router_dec (matvec + selection in one launch) against matvec_grouped + moe_route_w:
    // logits, choices and weights must be bit-identical (same row_dot arithmetic). router_dec
    // also runs a deferred Sinkhorn (its extra block), checked against the CPU's (ops::sinkhorn)
    println!("{:<44} {:>8} {:>8} {:>7} {:>10} {:>4} {:>4} {:>9}", "decode router matvec + route", "old us", "new us", "speedup", "identical", "sel!", "det", "sk rel");
    let (skz, skc, sk_ref) = {
        let mut seed = 0x5eed_u64;
        let z: Vec<f32> = (0..16).map(|_| frand(&mut seed) * 6.0 - 3.0).collect();
        let mut c = vec![0f32; 16];
        crate::ops::sinkhorn(&z, 4, 20, 1e-6, &mut c);
        let zb = gpu.alloc(16 * 4)?;
        gpu.htod(zb.ptr, &z)?;
        (zb, gpu.alloc(16 * 4)?, c)
    };
    let sk = HcSk { z: skz.ptr, comb: skc.ptr, n: 4, iters: 20, eps: 1e-6, pad: 0 };
    let sk_rel = || -> Result<f64> {
        let mut c = vec![0f32; 16];
        gpu.dtoh(&mut c, skc.ptr)?;
        let rel = c.iter().zip(&sk_ref).fold(0f64, |m, (a, b)| m.max(((*a as f64) - (*b as f64)).abs() / (*b as f64).abs().max(1e-30)));
        Ok(if c.iter().all(|v| v.is_finite()) { rel } else { f64::INFINITY })
    };
    for &(e, k, dd, ty) in &[(256usize, 6usize, 4096usize, GgmlType::F16), (256, 6, 4096, GgmlType::Q8_0), (8, 2, 256, GgmlType::F16)] {
        let name = format!("router {ty:?} E{e} K{k} D{dd}");
        let data = random_blocks(ty, dd * e, 77 + e as u64);
        let m: GMat = upload_raw_mat(gpu, &name, ty, vec![dd as u64, e as u64], &data)?;
        let mut seed = 0x0bad_5eed_u64 ^ dd as u64;
        let xs: Vec<f32> = (0..dd).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let bias: Vec<f32> = (0..e).map(|_| frand(&mut seed) * 0.2 - 0.1).collect();
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (xb, bb, ticket) = (f4(dd)?, f4(e)?, gpu.alloc_zeroed(4)?);
        gpu.htod(xb.ptr, &xs)?;
        gpu.htod(bb.ptr, &bias)?;
        let (lo, so, wo, ln, sn, wn) = (f4(e)?, f4(k)?, f4(k)?, f4(e)?, f4(k)?, f4(k)?);
        let mut jobs = [MvJob { w: m.wmat(), x: xb.ptr, y: lo.ptr, sel: 0, x_slot: 0, nslots: 1, x_grp_rows: e as i32 }];
        let table = JobTable::new(&mut jobs)?;
        let old = || -> Result<()> {
            table.run(gpu, 1)?;
            launch_route(gpu, true, 1, lo.ptr, bb.ptr, 0, 0, e, k, 1.5, true, so.ptr, wo.ptr)
        };
        let a = RouterDecArgs { w: m.wmat(), x: xb.ptr, logits: ln.ptr, bias: bb.ptr, sel: sn.ptr, wts: wn.ptr, ticket: ticket.ptr, e: e as i32, k: k as i32, wscale: 1.5, wnorm: 1, sk };
        let new = || launch_router_dec(gpu, a);
        old()?;
        gpu.memset0(skc.ptr, 16 * 4)?;
        new()?;
        let skr = sk_rel()?;
        let got = |l: u64, s: u64, w: u64| -> Result<(Vec<f32>, Vec<i32>, Vec<f32>)> {
            let (mut lv, mut sv, mut wv) = (vec![0f32; e], vec![0i32; k], vec![0f32; k]);
            gpu.dtoh(&mut lv, l)?;
            gpu.dtoh(&mut sv, s)?;
            gpu.dtoh(&mut wv, w)?;
            Ok((lv, sv, wv))
        };
        let (l0, s0, w0) = got(lo.ptr, so.ptr, wo.ptr)?;
        let (l1, s1, w1) = got(ln.ptr, sn.ptr, wn.ptr)?;
        let us_old = time(&old)?;
        let us_new = time(&new)?;
        let (l2, s2, w2) = got(ln.ptr, sn.ptr, wn.ptr)?;
        let mut tz = [1i32];
        gpu.dtoh(&mut tz, ticket.ptr)?;
        let bits = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        let same = bits(&l0, &l1) && bits(&w0, &w1) && s0 == s1;
        let det = bits(&l1, &l2) && bits(&w1, &w2) && s1 == s2 && tz[0] == 0;
        let mism = s0.iter().zip(&s1).filter(|(a, b)| a != b).count();
        println!("{:<44} {:>8.2} {:>8.2} {:>6.2}x {:>10} {:>4} {:>4} {:>9.2e}{}", name, us_old, us_new, us_old / us_new, if same { "yes" } else { "NO" }, mism, if det { "ok" } else { "NO" }, skr, if skr < 1e-5 { "" } else { " FAIL" });
    }
    // the same Sinkhorn as attn_prep's extra block, next to its own (whose qr must not change)
    gpu.memset0(skc.ptr, 16 * 4)?;
    let (skr, qr_same) = {
        let mut qrs = Vec::new();
        for skv in [HcSk::default(), sk] {
            let qr = run_attn_prep(gpu, 0x77, (0, 0), skv)?;
            let mut v = vec![0f32; AP_RQ];
            gpu.dtoh(&mut v, qr.ptr)?;
            qrs.push(v);
        }
        (sk_rel()?, qrs[0].iter().zip(&qrs[1]).all(|(a, b)| a.to_bits() == b.to_bits()))
    };
    let ok = skr < 1e-5 && qr_same;
    println!("{} attn_prep Sinkhorn block vs ops::sinkhorn: max rel {skr:.2e}, qr unchanged {qr_same}", if ok { "ok  " } else { "FAIL" });
    gpu.sync()
}

/// hc_post_mix at prefill shape (D 4096, 4 streams, 24 mixes, one y row; T from
/// DS4_KBENCH_T): time and effective bandwidth over its compulsory traffic (S read and
/// written, y read, the partial sums written), and whether it repeats its bits. Then the
/// MoE combine (row "moe_combine fused"): moe_combine (6 random slot rows + the shared row)
/// into a row plus hc_post_mix on it ("old", DS4_FUSE_COMBINE=0) against hc_post_mix summing
/// the slot rows itself ("new"): ms of each and the count of differing S / partial / pss
/// values from the same inputs (must be 0: the same arithmetic). Then hc_finish with the f16
/// copies of xn (DS4_HC_F16; rows "hc_finish f16"): the FFN side (hc_finish + x_to_f16 plain
/// + x_to_f16 in gemm_qr's order, against hc_finish writing both) and the attention side
/// (one plain copy), and the FFN side without its f32 rows (DS4_FFN_XN16; those must stay
/// unwritten): ms of each and the count of differing xn / f16 / post / comb values.
/// Last the shared expert's mid (row "moe_mid f16 shared", DS4_MID_F16): moe_mid f32 +
/// x_to_f16 against moe_mid writing the f16 pairs, ms and differing values.
/// One old-against-new row of hc_prefill_bench: times, speedup, and the count of output values
/// that differ (the fused paths must reproduce the old bits: FAIL otherwise).
fn ab_line(what: &str, ms_old: f64, ms_new: f64, diff: usize, n: usize) {
    println!(
        "{what} {ms_old:.3} ms, new {ms_new:.3} ms ({:.2}x); differing values {diff} of {n}{}",
        ms_old / ms_new.max(1e-9),
        if diff == 0 { "" } else { "  FAIL" }
    );
}

/// An A/B row for two launches that write `n` u16 values each (`bo`, `bn`): old, then new into
/// a zeroed `bn` (an unwritten value counts as differing), the values compared, both timed.
fn ab_u16(gpu: &Gpu, what: &str, old: &dyn Fn() -> Result<()>, new: &dyn Fn() -> Result<()>, bo: &DevBuf, bn: &DevBuf, n: usize) -> Result<()> {
    old()?;
    gpu.memset0(bn.ptr, n * 2)?;
    new()?;
    let (mut a, mut b) = (vec![0u16; n], vec![0u16; n]);
    gpu.dtoh(&mut a, bo.ptr)?;
    gpu.dtoh(&mut b, bn.ptr)?;
    let diff = a.iter().zip(&b).filter(|(p, q)| p != q).count();
    let (mso, msn) = (time_ms(gpu, 5, old)?, time_ms(gpu, 5, new)?);
    ab_line(what, mso, msn, diff, n);
    Ok(())
}

pub fn hc_prefill_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{launch_hc_finish, launch_hc_finish_sk, launch_hc_post_mix, launch_hc_post_mix_moe, launch_moe_mid, launch_moe_mid_pairs, HcBufs, HcF16, HcFinish};
    let (d, n, m, ny) = (4096usize, 4usize, 24usize, 1usize);
    let split = d.div_ceil(32);
    for t in bench_ts(&[8192]) {
        let mut seed = 0x4c5f_u64 ^ t as u64;
        let mut uni = |lo: f32, hi: f32, k: usize| -> Vec<f32> { (0..k).map(|_| lo + (hi - lo) * frand(&mut seed)).collect() };
        let s0h = uni(-1.0, 1.0, t * n * d);
        let s0 = gpu.upload(&s0h)?;
        let (posth, combh, yh) = (uni(0.0, 1.0, t * n), uni(0.0, 0.5, t * n * n), uni(-1.0, 1.0, t * ny * d));
        let (post, comb, y) = (gpu.upload(&posth)?, gpu.upload(&combh)?, gpu.upload(&yh)?);
        // the MoE output: k slot rows per token (ypair), the shared expert's rows
        let k = 6usize;
        let (yp, shb) = (gpu.upload(&uni(-1.0, 1.0, t * k * d))?, gpu.upload(&uni(-1.0, 1.0, t * d))?);
        let fnv: Vec<u16> = uni(-0.05, 0.05, m * n * d).iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let fnb = gpu.alloc(fnv.len() * 2)?;
        gpu.htod(fnb.ptr, &fnv)?;
        let (pdot, pss) = (gpu.alloc(t * split * m * 4)?, gpu.alloc(t * split * 8)?);
        let b = HcBufs { s: s0.ptr, post: post.ptr, comb: comb.ptr, pdot: pdot.ptr, pss: pss.ptr, ticket: 0, gs: 0, z: 0, split, d, n, eps: 1e-6, iters: 20, hc_eps: 1e-6, mma: false, s16: super::session::HC_S_F32, sat: 0, pf: false };
        // y = 0 keeps S unchanged, so every repetition sees the same input
        let run = || launch_hc_post_mix(gpu, &b, t, 0, ny, fnb.ptr, m);
        run()?;
        let mut p0 = vec![0f32; t * split * m];
        gpu.dtoh(&mut p0, pdot.ptr)?;
        let ms0 = time_ms(gpu, 5, &run)?;
        let mut p1 = vec![0f32; t * split * m];
        gpu.dtoh(&mut p1, pdot.ptr)?;
        let same = p0.iter().zip(&p1).all(|(a, b)| a.to_bits() == b.to_bits());
        let run_y = || launch_hc_post_mix(gpu, &b, t, y.ptr, ny, fnb.ptr, m);
        let ms1 = time_ms(gpu, 5, &run_y)?;
        let bytes0 = (t * n * d * 4 + t * split * (m * 4 + 8)) as f64;
        let bytes1 = bytes0 + (t * n * d * 4 + t * ny * d * 4) as f64;
        println!(
            "hc_post_mix T={t}: no y {ms0:.3} ms ({:.2} TB/s), with y {ms1:.3} ms ({:.2} TB/s); repeat {}",
            bytes0 / ms0 / 1e9,
            bytes1 / ms1 / 1e9,
            if same { "same" } else { "DIFFERENT" }
        );
        // pair_of: every (token, choice) its own slot, in random order (as moe_group2 assigns)
        let mut ps = 0x9e37_u64 ^ t as u64;
        let mut pov: Vec<i32> = (0..(t * k) as i32).collect();
        for i in (1..pov.len()).rev() {
            pov.swap(i, (rng(&mut ps) % (i as u64 + 1)) as usize);
        }
        let po = gpu.alloc(pov.len() * 4)?;
        gpu.htod(po.ptr, &pov)?;
        let ffn = gpu.alloc(t * d * 4)?;
        let old = || -> Result<()> {
            let args = Args::new().a(yp.ptr).a(po.ptr).a(shb.ptr).a(k as i32).a(d as i32).a(ffn.ptr);
            gpu.launch("moe_combine", (d.div_ceil(256) as u32, t as u32, 1), 256, 0, args)?;
            launch_hc_post_mix(gpu, &b, t, ffn.ptr, 1, fnb.ptr, m)
        };
        let new = || launch_hc_post_mix_moe(gpu, &b, t, yp.ptr, po.ptr, shb.ptr, k, fnb.ptr, m, false);
        // one step of each from the same S: S, the partials and pss as bits
        hc_ab(gpu, &format!("moe_combine fused T={t} k={k}: old (moe_combine + hc_post_mix)"), &b, t, m, &|| gpu.htod(s0.ptr, &s0h), &old, &new)?;
        gpu.htod(s0.ptr, &s0h)?;
        // hc_post_mix4 (128-column slices, the prefill default where D % 128 == 0): the same new
        // state S (bits) as hc_post_mix, the partial sums totalled per (token, mix) and the
        // sums of squares per token within rounding of hc_post_mix's (another summation order),
        // and the time of each, for y rows and for the MoE sum
        let bw = HcBufs { split: d / 128, ..b };
        let outs = |bb: &HcBufs, f: &dyn Fn() -> Result<()>| -> Result<(Vec<u32>, Vec<f64>, Vec<f64>)> {
            gpu.htod(s0.ptr, &s0h)?;
            f()?;
            let mut sv = vec![0u32; t * n * d];
            gpu.dtoh(&mut sv, s0.ptr)?;
            let (mix, ss) = hc_totals(gpu, bb, t, m)?;
            Ok((sv, mix, ss))
        };
        // the largest difference relative to the largest magnitude
        let rel = |a: &[f64], b: &[f64]| {
            let scale = a.iter().fold(0f64, |x, v| x.max(v.abs())).max(1e-30);
            a.iter().zip(b).fold(0f64, |x, (p, q)| x.max((p - q).abs())) / scale
        };
        // a line's verdict: the state bits equal, the mixes within 1e-5 and the sums of squares
        // within 1e-9 of hc_post_mix's (relative to the largest)
        let verdict = |sdiff: usize, mix: f64, ss: f64| if sdiff == 0 && mix < 1e-5 && ss < 1e-9 { "" } else { "  FAIL" };
        type Run<'a> = Box<dyn Fn(&HcBufs) -> Result<()> + 'a>;
        let cases: [(&str, Run); 2] = [
            ("y rows", Box::new(|bb: &HcBufs| launch_hc_post_mix(gpu, bb, t, y.ptr, ny, fnb.ptr, m))),
            ("moe sum", Box::new(|bb: &HcBufs| launch_hc_post_mix_moe(gpu, bb, t, yp.ptr, po.ptr, shb.ptr, k, fnb.ptr, m, false))),
        ];
        // the CPU reference's hc_post (ops::hc_post) of the first tokens, for the y-rows case:
        // both kernels round its terms as it does (hc_term), so the same bits
        let nref = t.min(64);
        let sref: Vec<u32> = (0..nref)
            .flat_map(|tk| {
                let mix = crate::ops::HcMix { post: posth[tk * n..(tk + 1) * n].to_vec(), comb: combh[tk * n * n..(tk + 1) * n * n].to_vec() };
                let mut out = vec![0f32; n * d];
                crate::ops::hc_post(&s0h[tk * n * d..(tk + 1) * n * d], &yh[tk * ny * d..tk * ny * d + d], &mix, &mut out);
                out.into_iter().map(f32::to_bits)
            })
            .collect();
        // one kernel against another: times, S bits differing, the mixes' and ss's relative error
        let line = |what: &str, ko: &str, mso: f64, kn: &str, msn: f64, sdiff: usize, ns: usize, rm: f64, rq: f64| {
            println!(
                "{kn} {what} T={t}: {ko} {mso:.3} ms, {kn} {msn:.3} ms ({:.2}x); S differing {sdiff} of {ns}, mixes rel {rm:.2e}, ss rel {rq:.2e}{}",
                mso / msn.max(1e-9),
                verdict(sdiff, rm, rq)
            )
        };
        for (ci, (what, f)) in cases.iter().enumerate() {
            let (so, mo, qo) = outs(&b, &|| f(&b))?;
            let (sw, mw, qw) = outs(&bw, &|| f(&bw))?;
            let mut sdiff = so.iter().zip(&sw).filter(|(p, q)| p != q).count();
            if ci == 0 && ny == 1 {
                let cpu = sref.iter().zip(&so).filter(|(p, q)| p != q).count() + sref.iter().zip(&sw).filter(|(p, q)| p != q).count();
                println!("hc_post against the CPU reference (first {nref} tokens, both kernels): differing {cpu} of {}", 2 * sref.len());
                sdiff += cpu;
            }
            let (mso, msw) = (time_ms(gpu, 5, &|| f(&b))?, time_ms(gpu, 5, &|| f(&bw))?);
            line(what, "hc_post_mix", mso, "hc_post_mix4", msw, sdiff, so.len(), rel(&mo, &mw), rel(&qo, &qw));
            // hc_post_mma (tensor-core partial mixes): the same state bits, the mixes within
            // the tf32 split's rounding of hc_post_mix's
            let bm = HcBufs { mma: true, ..bw };
            if crate::cuda::session::hc_mma_ok(bm.n, m, bm.d, bm.split) {
                let (sm, mm, qm) = outs(&bm, &|| f(&bm))?;
                let mdiff = so.iter().zip(&sm).filter(|(p, q)| p != q).count();
                let msm = time_ms(gpu, 5, &|| f(&bm))?;
                let kn = if crate::cuda::session::hc_mma8() { "hc_post_mma8" } else { "hc_post_mma" };
                line(what, "hc_post_mix4", msw, kn, msm, mdiff, so.len(), rel(&mo, &mm), rel(&qo, &qm));
            }
        }
        gpu.htod(s0.ptr, &s0h)?;
        // hc_finish's f16 copies: the partials of S (y = 0), then the finish both ways
        let (scb, bab, nob) = (gpu.upload(&uni(0.5, 1.5, 3))?, gpu.upload(&uni(-1.0, 1.0, m))?, gpu.upload(&uni(0.5, 1.5, d))?);
        launch_hc_post_mix(gpu, &b, t, 0, ny, fnb.ptr, m)?;
        let (xo, xw) = (gpu.alloc(t * d * 4)?, gpu.alloc(t * d * 4)?);
        let (ha, hb, hw_a, hw_b) = (gpu.alloc(t * d * 2)?, gpu.alloc(t * d * 2)?, gpu.alloc(t * d * 2)?, gpu.alloc(t * d * 2)?);
        let fin = |out: u64, f16: HcF16| HcFinish { m, scale: scb.ptr, base: bab.ptr, norm: nob.ptr, out, q8: None, f16 };
        let (fo, fw) = (fin(xo.ptr, HcF16::default()), fin(xw.ptr, HcF16 { a: hw_a.ptr, b: hw_b.ptr, b_perm: true, no_f32: false }));
        let fw_a = fin(xw.ptr, HcF16 { a: hw_a.ptr, b: 0, b_perm: false, no_f32: false });
        let fw_n = fin(xw.ptr, HcF16 { a: hw_a.ptr, b: hw_b.ptr, b_perm: true, no_f32: true });
        let old_attn = || -> Result<()> {
            launch_hc_finish(gpu, &b, 0, t, &fo)?;
            launch_x_to_f16(gpu, xo.ptr, d, d, t, 0, ha.ptr, false)
        };
        let old_ffn = || -> Result<()> {
            old_attn()?;
            launch_x_to_f16(gpu, xo.ptr, d, d, t, 0, hb.ptr, true)
        };
        let new_ffn = || launch_hc_finish(gpu, &b, 0, t, &fw);
        let new_attn = || launch_hc_finish(gpu, &b, 0, t, &fw_a);
        let new_nof32 = || launch_hc_finish(gpu, &b, 0, t, &fw_n);
        // bits of xn, the two copies, post and comb
        let bits = |x: &DevBuf, h: [&DevBuf; 2]| -> Result<Vec<u32>> {
            let (mut xv, mut h0, mut h1, mut pv, mut cv) = (vec![0u32; t * d], vec![0u16; t * d], vec![0u16; t * d], vec![0u32; t * n], vec![0u32; t * n * n]);
            gpu.dtoh(&mut xv, x.ptr)?;
            gpu.dtoh(&mut h0, h[0].ptr)?;
            gpu.dtoh(&mut h1, h[1].ptr)?;
            gpu.dtoh(&mut pv, b.post)?;
            gpu.dtoh(&mut cv, b.comb)?;
            Ok(xv.into_iter().chain(h0.into_iter().map(u32::from)).chain(h1.into_iter().map(u32::from)).chain(pv).chain(cv).collect())
        };
        old_ffn()?;
        let vo = bits(&xo, [&ha, &hb])?;
        // (every output of the new path cleared first: it must write them all)
        let clear = || -> Result<()> {
            gpu.memset0(xw.ptr, t * d * 4)?;
            gpu.memset0(hw_a.ptr, t * d * 2)?;
            gpu.memset0(hw_b.ptr, t * d * 2)?;
            gpu.memset0(b.post, t * n * 4)?;
            gpu.memset0(b.comb, t * n * n * 4)
        };
        clear()?;
        new_ffn()?;
        let vn = bits(&xw, [&hw_a, &hw_b])?;
        let diff_ffn = vo.iter().zip(&vn).filter(|(a, b)| a != b).count();
        // the attention side: its one copy (the second compared is the old one's)
        clear()?;
        new_attn()?;
        let va = bits(&xw, [&hw_a, &hb])?;
        let diff_attn = vo.iter().zip(&va).filter(|(a, b)| a != b).count();
        // the FFN side without f32 rows (DS4_FFN_XN16): the copies, post and comb as before,
        // the f32 rows left as cleared (compared with zero)
        clear()?;
        new_nof32()?;
        let vz = bits(&xw, [&hw_a, &hw_b])?;
        let diff_nof32 = vo.iter().zip(&vz).enumerate().filter(|(i, (a, b))| if *i < t * d { **b != 0 } else { a != b }).count();
        let ms = [
            time_ms(gpu, 5, &old_attn)?,
            time_ms(gpu, 5, &new_attn)?,
            time_ms(gpu, 5, &old_ffn)?,
            time_ms(gpu, 5, &new_ffn)?,
            time_ms(gpu, 5, &new_nof32)?,
        ];
        for (side, o, nw, diff) in [("attn", ms[0], ms[1], diff_attn), ("ffn ", ms[2], ms[3], diff_ffn), ("ffn no f32", ms[2], ms[4], diff_nof32)] {
            ab_line(&format!("hc_finish f16 {side} T={t}: old (hc_finish + x_to_f16)"), o, nw, diff, vo.len());
        }
        // DS4_HC_SK_ROWS: the FFN side's finish with the Sinkhorn in hc_sk_rows against warp 0
        // of hc_finish running it (the same bits expected: sinkhorn_nt either way)
        let sk_old = || launch_hc_finish_sk(gpu, &b, 0, t, &fw, false);
        let sk_new = || launch_hc_finish_sk(gpu, &b, 0, t, &fw, true);
        clear()?;
        sk_old()?;
        let vso = bits(&xw, [&hw_a, &hw_b])?;
        clear()?;
        sk_new()?;
        let vsn = bits(&xw, [&hw_a, &hw_b])?;
        let diff_sk = vso.iter().zip(&vsn).filter(|(a, b)| a != b).count();
        let (ms_so, ms_sn) = (time_ms(gpu, 5, &sk_old)?, time_ms(gpu, 5, &sk_new)?);
        ab_line(&format!("hc_finish sk rows T={t}: old (hc_finish, the Sinkhorn on warp 0)"), ms_so, ms_sn, diff_sk, vso.len());
        // DS4_HC_S16: hc_post_mma8 and hc_finish on a 16-bit state against the f32 kernels on
        // the widened values of the same state
        hc_s16_rows(gpu, t, &s0, &s0h, &fnv, fnb.ptr, &fw, &HcBufs { mma: true, ..bw }, &cases, &[&xw, &hw_a, &hw_b], m)?;
        exp_y16_rows(gpu, t, &s0, &s0h, fnb.ptr, &HcBufs { mma: true, ..bw }, &po, &shb, k, m)?;
        attn_y16_row(gpu, t, &s0h, fnb.ptr, &HcBufs { mma: true, ..bw }, m)?;
        // DS4_MID_F16: the shared expert's mid (F 2048) as f32 + x_to_f16 against moe_mid
        // writing the f16 pairs itself
        let f = 2048usize;
        let clamp = 10.0f32;
        let (gb, ub) = (gpu.upload(&uni(-12.0, 12.0, t * f))?, gpu.upload(&uni(-12.0, 12.0, t * f))?);
        let (mids, m16o, m16n) = (gpu.alloc(t * f * 4)?, gpu.alloc(t * f * 2)?, gpu.alloc(t * f * 2)?);
        let old_mid = || -> Result<()> {
            launch_moe_mid(gpu, gb.ptr, ub.ptr, 0, t, f, clamp, mids.ptr, 0, false)?;
            launch_x_to_f16(gpu, mids.ptr, f, f, t, 0, m16o.ptr, false)
        };
        let new_mid = || launch_moe_mid_pairs(gpu, gb.ptr, ub.ptr, t, f, clamp, m16n.ptr);
        ab_u16(gpu, &format!("moe_mid f16 shared T={t} F={f}: old (moe_mid f32 + x_to_f16)"), &old_mid, &new_mid, &m16o, &m16n, t * f)?;
        // DS4_DENSE_Y16 bit 4: the same mids from f16 gate / up rows (moe_mid_pairs_h) against
        // launch_moe_mid_pairs on their widened values: the same bits
        let ((gh, gw), (uh, uw)) = (f16_pair(&uni(-12.0, 12.0, t * f)), f16_pair(&uni(-12.0, 12.0, t * f)));
        let (g16, u16b, g32, u32b) = (gpu.upload(&gh)?, gpu.upload(&uh)?, gpu.upload(&gw)?, gpu.upload(&uw)?);
        let old_p = || launch_moe_mid_pairs(gpu, g32.ptr, u32b.ptr, t, f, clamp, m16o.ptr);
        let new_p = || super::session::launch_moe_mid_pairs_h(gpu, g16.ptr, u16b.ptr, t, f, clamp, m16n.ptr);
        ab_u16(gpu, &format!("dense_y16 moe_mid f16 shared T={t} F={f}: f32 gate / up rows (new f16)"), &old_p, &new_p, &m16o, &m16n, t * f)?;
    }
    Ok(())
}

/// An hc_post launch's partial sums totalled (f64, in split order): per (token, mix) the mix,
/// per token the sum of squares (pdot [t][split][m], pss [t][split] of `b`).
fn hc_totals(gpu: &Gpu, b: &super::session::HcBufs, t: usize, m: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let ns = b.split;
    let (mut pv, mut qv) = (vec![0f32; t * ns * m], vec![0u64; t * ns]);
    gpu.dtoh(&mut pv, b.pdot)?;
    gpu.dtoh(&mut qv, b.pss)?;
    let mix = (0..t * m).map(|i| (0..ns).map(|sp| pv[((i / m) * ns + sp) * m + i % m] as f64).sum()).collect();
    let ss = (0..t).map(|tk| (0..ns).map(|sp| f64::from_bits(qv[tk * ns + sp])).sum()).collect();
    Ok((mix, ss))
}

/// The f16 hc state (`DS4_HC_S16`, rows "hc_s16"): the state s0h rounded to f16, then per
/// case (y rows, the MoE sum) hc_post_mma8_h on it against
/// hc_post_mma8 on its widened f32 values (`bm`: the f32 buffers, S at `s0`). Checks: the
/// 16-bit kernel's new state equals the f32 kernel's rounded to 16 bits (one rounding of the
/// same f32 arithmetic; the host rounds with the `half` crate), and its mixes and sums of
/// squares are within 1e-5 / 1e-9 (relative to the largest) of the host's f64 sums over its own
/// new state (first 64 tokens: the mixes must be formed from the values as stored; `fnv` the
/// f16 mixing weights, also at `fn_ptr`). Then
/// hc_finish (`fw`: the FFN side's finish with both f16 copies, outputs `outs`: xn and the two
/// copies) on the 16-bit state against the f32 finish on its widened values, the same partials:
/// xn, the copies, post and comb the same bits. Times of each. Also the saturation flag
/// (HcBufs::sat): 0 after the cases above, 1 after a step driven past 65504.
#[allow(clippy::too_many_arguments)]
fn hc_s16_rows(
    gpu: &Gpu,
    t: usize,
    s0: &DevBuf,
    s0h: &[f32],
    fnv: &[u16],
    fn_ptr: u64,
    fw: &super::session::HcFinish,
    bm: &super::session::HcBufs,
    cases: &[(&str, Box<dyn Fn(&super::session::HcBufs) -> Result<()> + '_>)],
    outs: &[&DevBuf; 3],
    m: usize,
) -> Result<()> {
    use super::session::{hc_mma8, hc_mma_ok, launch_hc_finish, launch_hc_post_mix, HcBufs, HC_S_F16};
    let (n, d, ns) = (bm.n, bm.d, bm.split);
    if !(hc_mma8() && hc_mma_ok(n, m, d, ns)) {
        println!("hc_s16: skipped (hc_post_mma8 does not take this shape, or DS4_HC_MMA8=0)");
        return Ok(());
    }
    let sb = gpu.alloc(t * n * d * 2)?;
    let nref = t.min(64);
    let pack = |v: f32| half::f16::from_f32(v.clamp(-65504.0, 65504.0)).to_bits();
    let widen = |h: u16| half::f16::from_bits(h).to_f32();
    let s16h: Vec<u16> = s0h.iter().map(|&v| pack(v)).collect();
    let s32h: Vec<f32> = s16h.iter().map(|&h| widen(h)).collect();
    let b16 = HcBufs { s: sb.ptr, s16: HC_S_F16, ..*bm };
    for (what, f) in cases {
        gpu.htod(s0.ptr, &s32h)?;
        f(bm)?;
        let mut s32 = vec![0f32; t * n * d];
        gpu.dtoh(&mut s32, s0.ptr)?;
        gpu.htod(sb.ptr, &s16h)?;
        f(&b16)?;
        let mut s16 = vec![0u16; t * n * d];
        gpu.dtoh(&mut s16, sb.ptr)?;
        let sdiff = s32.iter().zip(&s16).filter(|(a, b)| pack(**a) != **b).count();
        let (mix, ss) = hc_totals(gpu, &b16, t, m)?;
        // the host's sums over the 16-bit kernel's new state (first nref tokens)
        let (mut em, mut mm, mut eq, mut mq) = (0f64, 0f64, 0f64, 0f64);
        for tk in 0..nref {
            let st = &s16[tk * n * d..(tk + 1) * n * d];
            let q: f64 = st.iter().map(|&h| (widen(h) as f64).powi(2)).sum();
            eq = eq.max((q - ss[tk]).abs());
            mq = mq.max(q.abs());
            for mi in 0..m {
                let r: f64 = st.iter().enumerate().map(|(i, &h)| half::f16::from_bits(fnv[mi * n * d + i]).to_f64() * widen(h) as f64).sum();
                em = em.max((r - mix[tk * m + mi]).abs());
                mm = mm.max(r.abs());
            }
        }
        let (rm, rq) = (em / mm.max(1e-30), eq / mq.max(1e-30));
        let (ms32, ms16) = (time_ms(gpu, 5, &|| f(bm))?, time_ms(gpu, 5, &|| f(&b16))?);
        println!(
            "hc_s16 f16 {what} T={t}: hc_post_mma8 f32 {ms32:.3} ms, f16 {ms16:.3} ms ({:.2}x); S differing from the f32 kernel's rounded {sdiff} of {}, mixes rel {rm:.2e}, ss rel {rq:.2e} (host, first {nref} tokens){}",
            ms32 / ms16.max(1e-9),
            s16.len(),
            if sdiff == 0 && rm < 1e-5 && rq < 1e-9 { "" } else { "  FAIL" }
        );
    }
    // (cases[0]: y rows, ny 1; the MoE sum here has f32 slot rows: no such form)
    hc_pf_row(gpu, &format!("hc_pf f16 {} T={t}", cases[0].0), &b16, &s16h, &|bb: &HcBufs| (cases[0].1)(bb), (true, 1, false, false), m)?;
    // the saturation flag (CudaSession::hc_sat_check): clear on the [-1, 1] state, set
    // once a new value passes 65504 (a state of 20000 everywhere, post and comb all
    // ones: new values ~80000)
    let flag = gpu.alloc_zeroed(4)?;
    let bs = HcBufs { sat: flag.ptr, ..b16 };
    let read = || -> Result<i32> {
        let mut f = [0i32; 1];
        gpu.dtoh(&mut f, flag.ptr)?;
        Ok(f[0])
    };
    gpu.htod(sb.ptr, &s16h)?;
    (cases[0].1)(&bs)?;
    let f0 = read()?;
    gpu.htod(sb.ptr, &vec![pack(20000.0); t * n * d])?;
    gpu.htod(bm.post, &vec![1f32; t * n])?;
    gpu.htod(bm.comb, &vec![1f32; t * n * n])?;
    (cases[0].1)(&bs)?;
    let f1 = read()?;
    println!(
        "hc_s16 f16 saturation flag T={t}: {f0} on the [-1, 1] state, {f1} on a state driven past 65504{}",
        if f0 == 0 && f1 == 1 { "" } else { "  FAIL" }
    );
    // hc_finish: the partials of the 16-bit state (y = 0), then each finish on its state
    gpu.htod(sb.ptr, &s16h)?;
    launch_hc_post_mix(gpu, &b16, t, 0, 1, fn_ptr, m)?;
    gpu.htod(s0.ptr, &s32h)?;
    let bits = || -> Result<Vec<u32>> {
        let mut v = Vec::new();
        let mut x = vec![0u32; t * d];
        gpu.dtoh(&mut x, outs[0].ptr)?;
        v.extend(x);
        for h in &outs[1..] {
            let mut hv = vec![0u16; t * d];
            gpu.dtoh(&mut hv, h.ptr)?;
            v.extend(hv.into_iter().map(u32::from));
        }
        let (mut pv, mut cv) = (vec![0u32; t * n], vec![0u32; t * n * n]);
        gpu.dtoh(&mut pv, bm.post)?;
        gpu.dtoh(&mut cv, bm.comb)?;
        v.extend(pv);
        v.extend(cv);
        Ok(v)
    };
    let clear = || -> Result<()> {
        for o in outs {
            gpu.memset0(o.ptr, o.bytes)?;
        }
        gpu.memset0(bm.post, t * n * 4)?;
        gpu.memset0(bm.comb, t * n * n * 4)
    };
    clear()?;
    launch_hc_finish(gpu, bm, 0, t, fw)?;
    let vo = bits()?;
    clear()?;
    launch_hc_finish(gpu, &b16, 0, t, fw)?;
    let vn = bits()?;
    let diff = vo.iter().zip(&vn).filter(|(a, b)| a != b).count();
    let (ms32, ms16) = (time_ms(gpu, 5, &|| launch_hc_finish(gpu, bm, 0, t, fw))?, time_ms(gpu, 5, &|| launch_hc_finish(gpu, &b16, 0, t, fw))?);
    ab_line(&format!("hc_s16 f16 hc_finish T={t}: f32 state"), ms32, ms16, diff, vo.len());
    Ok(())
}

/// The outputs of an hc_post launch on `b` for `t` tokens and `m` mixes, as bits: the state
/// S (f16 or f32 by b.s16), the partial mixes pdot and the sums of squares pss.
fn hc_post_bits(gpu: &Gpu, b: &super::session::HcBufs, t: usize, m: usize) -> Result<Vec<u64>> {
    let (ns, len) = (b.split, t * b.n * b.d);
    let sv: Vec<u64> = if b.s16 == super::session::HC_S_F16 {
        let mut v = vec![0u16; len];
        gpu.dtoh(&mut v, b.s)?;
        v.into_iter().map(u64::from).collect()
    } else {
        let mut v = vec![0u32; len];
        gpu.dtoh(&mut v, b.s)?;
        v.into_iter().map(u64::from).collect()
    };
    let (mut pv, mut qv) = (vec![0u32; t * ns * m], vec![0u64; t * ns]);
    gpu.dtoh(&mut pv, b.pdot)?;
    gpu.dtoh(&mut qv, b.pss)?;
    Ok(sv.into_iter().chain(pv.into_iter().map(u64::from)).chain(qv).collect())
}

/// Values rounded to f16: their bits, and the f16 values widened back to f32 (the inputs an
/// f16 form and its f32 counterpart see).
fn f16_pair(v: &[f32]) -> (Vec<u16>, Vec<f32>) {
    let h: Vec<u16> = v.iter().map(|&x| half::f16::from_f32(x).to_bits()).collect();
    let w = h.iter().map(|&b| half::f16::from_bits(b).to_f32()).collect();
    (h, w)
}

/// Two hc_post launches from the same state (`reset` before each): the new state, the partial
/// mixes and the sums of squares of `b` compared bit for bit, then each timed (ab_line).
#[allow(clippy::too_many_arguments)]
fn hc_ab(gpu: &Gpu, what: &str, b: &super::session::HcBufs, t: usize, m: usize, reset: &dyn Fn() -> Result<()>, old: &dyn Fn() -> Result<()>, new: &dyn Fn() -> Result<()>) -> Result<()> {
    let outs = |f: &dyn Fn() -> Result<()>| -> Result<Vec<u64>> {
        reset()?;
        f()?;
        hc_post_bits(gpu, b, t, m)
    };
    let (vo, vn) = (outs(old)?, outs(new)?);
    let diff = vo.iter().zip(&vn).filter(|(a, b)| a != b).count();
    // (timing steps S on from there; the values stay bounded over these few steps)
    let (mso, msn) = (time_ms(gpu, 5, old)?, time_ms(gpu, 5, new)?);
    ab_line(what, mso, msn, diff, vo.len());
    Ok(())
}

/// hc_post_mma8's f16-state forms with the loads a group ahead (`DS4_HC_PF`, HcBufs::pf;
/// rows "hc_pf") against the forms without, the same launch `run` on the f16 state of `b`
/// (reset from `sh` before each; `shape`: hc_mma8_name's y, ny, moe, y16, for the row's
/// kernel names): the new state, the partial mixes and the sums of squares the same bits.
/// Times of each.
#[allow(clippy::type_complexity)]
fn hc_pf_row(gpu: &Gpu, what: &str, b: &super::session::HcBufs, sh: &[u16], run: &dyn Fn(&super::session::HcBufs) -> Result<()>, shape: (bool, usize, bool, bool), m: usize) -> Result<()> {
    use super::session::{hc_mma8_name, HcBufs};
    let (t, ns) = (sh.len() / (b.n * b.d), b.split);
    let (bo, bn) = (HcBufs { pf: false, ..*b }, HcBufs { pf: true, ..*b });
    let outs = |bb: &HcBufs| -> Result<Vec<u64>> {
        gpu.htod(bb.s, sh)?;
        gpu.memset0(bb.pdot, t * ns * m * 4)?;
        gpu.memset0(bb.pss, t * ns * 8)?;
        run(bb)?;
        hc_post_bits(gpu, bb, t, m)
    };
    let (vo, vn) = (outs(&bo)?, outs(&bn)?);
    let diff = vo.iter().zip(&vn).filter(|(a, b)| a != b).count();
    let (mso, msn) = (time_ms(gpu, 5, &|| run(&bo))?, time_ms(gpu, 5, &|| run(&bn))?);
    gpu.htod(b.s, sh)?;
    let name = |bb: &HcBufs| hc_mma8_name(bb, shape.0, shape.1, shape.2, shape.3);
    ab_line(&format!("{what}: {} (new {})", name(&bo), name(&bn)), mso, msn, diff, vo.len());
    Ok(())
}

/// The routed experts' f16 outputs (`DS4_EXP_Y16`), their two readers (rows "exp_y16"):
/// hc_post_mma8's MoE sum on f16 slot rows (hc_post_mma8_y, and hc_post_mma8_hy on the f16
/// state) against hc_post_mma8 (hc_post_mma8_h) on their widened f32 values
/// (`bm`: S at `s0`, from `s0h` each time; slot rows by `pair_of`, the shared rows `shared`):
/// the new state, partial mixes and sums of squares the same bits; then moe_mid's warp form on
/// f16 g and u (launch_moe_mid_gu16) against the f32 form on the widened values (F 2048, the
/// routing weights applied): the f16 mids the same bits. Times of each.
#[allow(clippy::too_many_arguments)]
fn exp_y16_rows(gpu: &Gpu, t: usize, s0: &DevBuf, s0h: &[f32], fn_ptr: u64, bm: &super::session::HcBufs, pair_of: &DevBuf, shared: &DevBuf, k: usize, m: usize) -> Result<()> {
    use super::session::{hc_mma8_takes, launch_hc_post_mix_moe, launch_moe_mid, launch_moe_mid_gu16, HcBufs, HC_S_F16};
    let (n, d) = (bm.n, bm.d);
    let mut seed = 0x7916_u64 ^ t as u64;
    let mut uni = |lo: f32, hi: f32, c: usize| -> Vec<f32> { (0..c).map(|_| lo + (hi - lo) * frand(&mut seed)).collect() };
    if hc_mma8_takes(bm, m) {
        let (yh, yw) = f16_pair(&uni(-1.0, 1.0, t * k * d));
        let (y16, y32) = (gpu.upload(&yh)?, gpu.upload(&yw)?);
        // on the f32 state (hc_post_mma8 / _y), then on the f16 state (hc_post_mma8_h / _hy):
        // the state as stored, the partial mixes and the sums of squares
        let (sh, s32h) = f16_pair(s0h);
        let sb = gpu.alloc(t * n * d * 2)?;
        let bh = HcBufs { s: sb.ptr, s16: HC_S_F16, ..*bm };
        for (b, what) in [(bm, "f32 state"), (&bh, "f16 state")] {
            let f16_state = b.s16 == HC_S_F16;
            let reset = || if f16_state { gpu.htod(sb.ptr, &sh) } else { gpu.htod(s0.ptr, &s32h) };
            let outs = |y: u64, h: bool| -> Result<Vec<u64>> {
                reset()?;
                launch_hc_post_mix_moe(gpu, b, t, y, pair_of.ptr, shared.ptr, k, fn_ptr, m, h)?;
                hc_post_bits(gpu, b, t, m)
            };
            let (vo, vn) = (outs(y32.ptr, false)?, outs(y16.ptr, true)?);
            let diff = vo.iter().zip(&vn).filter(|(a, b)| a != b).count();
            let (mso, msn) = (
                time_ms(gpu, 5, &|| launch_hc_post_mix_moe(gpu, b, t, y32.ptr, pair_of.ptr, shared.ptr, k, fn_ptr, m, false))?,
                time_ms(gpu, 5, &|| launch_hc_post_mix_moe(gpu, b, t, y16.ptr, pair_of.ptr, shared.ptr, k, fn_ptr, m, true))?,
            );
            ab_line(&format!("exp_y16 hc_post moe sum T={t} k={k} {what}: f32 slot rows"), mso, msn, diff, vo.len());
        }
        let run = |bb: &HcBufs| launch_hc_post_mix_moe(gpu, bb, t, y16.ptr, pair_of.ptr, shared.ptr, k, fn_ptr, m, true);
        hc_pf_row(gpu, &format!("hc_pf f16 moe sum, f16 slot rows T={t} k={k}"), &bh, &sh, &run, (true, k, true, true), m)?;
        // the shared expert's rows as f16 (DS4_DENSE_Y16 bit 2, hc_post_mma8_hyps) against their
        // widened values (hc_post_mma8_hyp): the same bits
        let bp = HcBufs { pf: true, ..bh };
        if super::session::hc_shared16_ok(&bp, true) {
            let (shh, shw) = f16_pair(&uni(-1.0, 1.0, t * d));
            let (sh16, sh32) = (gpu.upload(&shh)?, gpu.upload(&shw)?);
            let old = || super::session::launch_hc_post_mix_moe16(gpu, &bp, t, y16.ptr, pair_of.ptr, sh32.ptr, k, fn_ptr, m, true, false);
            let new = || super::session::launch_hc_post_mix_moe16(gpu, &bp, t, y16.ptr, pair_of.ptr, sh16.ptr, k, fn_ptr, m, true, true);
            let (no, nn) = (super::session::hc_mma8_name16(&bp, true, k, true, true, false), super::session::hc_mma8_name16(&bp, true, k, true, true, true));
            hc_ab(gpu, &format!("dense_y16 shared rows T={t} k={k}: {no} f32 shared rows (new {nn})"), &bp, t, m, &|| gpu.htod(sb.ptr, &sh), &old, &new)?;
        }
        gpu.htod(s0.ptr, s0h)?;
    } else {
        println!("exp_y16 hc_post: skipped (hc_post_mma8 does not take this shape)");
    }
    let (f, clamp, rows) = (2048usize, 10.0f32, t * k);
    let (gh, gw) = f16_pair(&uni(-12.0, 12.0, rows * f));
    let (uh, uw) = f16_pair(&uni(-12.0, 12.0, rows * f));
    let (g16, u16b, g32, u32b) = (gpu.upload(&gh)?, gpu.upload(&uh)?, gpu.upload(&gw)?, gpu.upload(&uw)?);
    drop((gh, gw, uh, uw));
    let pw = gpu.upload(&uni(0.0, 1.0, rows))?;
    let (mo, mn) = (gpu.alloc(rows * f * 2)?, gpu.alloc(rows * f * 2)?);
    let old = || launch_moe_mid(gpu, g32.ptr, u32b.ptr, pw.ptr, rows, f, clamp, 0, mo.ptr, true);
    let new = || launch_moe_mid_gu16(gpu, g16.ptr, u16b.ptr, pw.ptr, rows, f, clamp, mn.ptr);
    ab_u16(gpu, &format!("exp_y16 moe_mid T={t} k={k} F={f}: f32 g / u"), &old, &new, &mo, &mn, rows * f)
}

/// The attention output as f16 rows (`DS4_DENSE_Y16` bit 1, row "dense_y16 attention"): hc_post_mma8_hpy on f16
/// y rows against hc_post_mma8_hp on their widened f32 values, both on the f16 state of s0h
/// (`bm`'s other buffers; its own state buffer): the new state, partial mixes and sums of
/// squares the same bits. Times of each.
fn attn_y16_row(gpu: &Gpu, t: usize, s0h: &[f32], fn_ptr: u64, bm: &super::session::HcBufs, m: usize) -> Result<()> {
    use super::session::{hc_mma8_name, hc_mma8_takes, hc_rows16_ok, launch_hc_post_mix, launch_hc_post_mix16, HcBufs, HC_S_F16};
    let (n, d) = (bm.n, bm.d);
    let sb = gpu.alloc(t * n * d * 2)?;
    let bh = HcBufs { s: sb.ptr, s16: HC_S_F16, pf: true, ..*bm };
    if !(hc_mma8_takes(&bh, m) && hc_rows16_ok(&bh, true, 1, false)) {
        println!("dense_y16: skipped (hc_post_mma8 does not take this shape)");
        return Ok(());
    }
    let mut seed = 0x7a16_u64 ^ t as u64;
    let (yh, yw) = f16_pair(&(0..t * d).map(|_| frand(&mut seed) * 2.0 - 1.0).collect::<Vec<f32>>());
    let sh = f16_pair(s0h).0;
    let (y16, y32) = (gpu.upload(&yh)?, gpu.upload(&yw)?);
    let old = || launch_hc_post_mix(gpu, &bh, t, y32.ptr, 1, fn_ptr, m);
    let new = || launch_hc_post_mix16(gpu, &bh, t, y16.ptr, fn_ptr, m);
    let (no, nn) = (hc_mma8_name(&bh, true, 1, false, false), hc_mma8_name(&bh, true, 1, false, true));
    hc_ab(gpu, &format!("dense_y16 attention rows T={t}: {no} f32 rows (new {nn})"), &bh, t, m, &|| gpu.htod(sb.ptr, &sh), &old, &new)?;
    Ok(())
}

/// One decode hyper-connection step (`DS4_KBENCH=hc`): the fused `hc_step` (row "step") and
/// `hc_step_gs` (row "gs", where the grid fits the device at once) each against
/// hc_post_mix + hc_finish (+ quant_q8) on the same random state, at the real shape (D 4096,
/// 4 streams, 24 mixes; the FFN step sums 7 rows and writes the int8 copy; the head's pre-mix
/// has 4 mixes) and a fixture width. Per case: us per step of each (graph-timed), the largest
/// relative difference of the new state S, post/comb and xn, int8 values that differ by more
/// than one step, non-finite outputs, and whether the fused kernel repeats its bits after the
/// timing loop (its tickets / barrier counters must be ready for it), and a phase trace of
/// one launch. The process is small, so Nsight Compute's kernel
/// replay can profile hc_step here (on the full model it did not finish).
pub fn hc_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{hc_gram, hc_gs_fits, launch_hc_finish, launch_hc_post_mix, launch_hc_step, launch_hc_step_traced, HcBufs, HcF16, HcFinish};
    println!(
        "{:<40} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>5} {:>4} {:>4}",
        "hyper-connection step (T=1)", "old us", "new us", "speedup", "S rel", "post/comb", "xn rel", "q8!", "nan", "det"
    );
    // (D, streams, mixes, rows summed into y, int8 copy)
    let cases = [(4096usize, 4usize, 24usize, 1usize, false), (4096, 4, 24, 7, true), (4096, 4, 4, 7, false), (256, 4, 24, 3, true)];
    for (ci, &(d, n, m, ny, q8)) in cases.iter().enumerate() {
        let split = d.div_ceil(32);
        let mut seed = 0x4c5e_u64 ^ ((ci as u64) << 20);
        let mut uni = |lo: f32, hi: f32, k: usize| -> Vec<f32> { (0..k).map(|_| lo + (hi - lo) * frand(&mut seed)).collect() };
        let s0 = uni(-1.0, 1.0, n * d);
        let post0 = uni(0.0, 2.0, n);
        let comb0 = uni(0.0, 0.5, n * n);
        let yv = uni(-1.0, 1.0, ny * d);
        let fnv: Vec<u16> = uni(-0.05, 0.05, m * n * d).iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let (scale, base, norm) = (uni(0.5, 1.5, 3), uni(-1.0, 1.0, m), uni(0.5, 1.5, d));
        let (yb, scb, bab, nob) = (gpu.upload(&yv)?, gpu.upload(&scale)?, gpu.upload(&base)?, gpu.upload(&norm)?);
        let fnb = gpu.alloc(fnv.len() * 2)?;
        gpu.htod(fnb.ptr, &fnv)?;
        // one state per path: S, post, comb, partial sums, ticket, xn, int8 copy, z, barrier
        // counter (gs: hc_step_gs, else hc_step)
        let state = |gs: bool| -> Result<(HcBufs, Vec<DevBuf>)> {
            let bufs = vec![
                gpu.upload(&s0)?,
                gpu.upload(&post0)?,
                gpu.upload(&comb0)?,
                gpu.alloc(split * m * 4)?,
                gpu.alloc(split * hc_gram(n) * 8)?,
                gpu.alloc_zeroed(4)?,
                gpu.alloc(d * 4)?,
                gpu.alloc(d)?,
                gpu.alloc(d / 32 * 8)?,
                gpu.alloc(n * n * 4)?,
                gpu.alloc_zeroed(8)?,
            ];
            // (the decode configuration: the Sinkhorn deferred to a later launch)
            let z = bufs[9].ptr;
            let gsp = if gs { bufs[10].ptr } else { 0 };
            let b = HcBufs { s: bufs[0].ptr, post: bufs[1].ptr, comb: bufs[2].ptr, pdot: bufs[3].ptr, pss: bufs[4].ptr, ticket: bufs[5].ptr, gs: gsp, z, split, d, n, eps: 1e-6, iters: 20, hc_eps: 1e-6, mma: false, s16: super::session::HC_S_F32, sat: 0, pf: false };
            Ok((b, bufs))
        };
        let (bo, so) = state(false)?;
        let fin = |st: &[DevBuf]| HcFinish { m, scale: scb.ptr, base: bab.ptr, norm: nob.ptr, out: st[6].ptr, q8: q8.then_some((st[7].ptr, st[8].ptr)), f16: HcF16::default() };
        let fo = fin(&so);
        let old = || -> Result<()> {
            launch_hc_post_mix(gpu, &bo, 1, yb.ptr, ny, fnb.ptr, m)?;
            launch_hc_finish(gpu, &bo, 0, 1, &fo)?;
            match fo.q8 {
                Some((qs, qd)) => launch_quant_q8(gpu, fo.out, d, 0, 0, qs, qd),
                None => Ok(()),
            }
        };
        old()?;
        gpu.sync()?;
        let us_old = graph_us(gpu, 200, &old)?;
        let read = |b: &DevBuf, k: usize| -> Result<Vec<f32>> {
            let mut v = vec![0f32; k];
            gpu.dtoh(&mut v, b.ptr)?;
            Ok(v)
        };
        let rel = |a: &[f32], b: &[f32]| -> (f64, usize) {
            let mr = b.iter().fold(0f64, |x, v| x.max((*v as f64).abs())).max(1e-30);
            let bad = a.iter().filter(|v| !v.is_finite()).count();
            (a.iter().zip(b).fold(0f64, |x, (p, q)| x.max((*p as f64 - *q as f64).abs())) / mr, bad)
        };
        // the unfused path's outputs of its first step (the timing loop stepped its state on:
        // rerun once from the inputs)
        for (b, v) in [(&so[0], &s0), (&so[1], &post0), (&so[2], &comb0)] {
            gpu.htod(b.ptr, v)?;
        }
        old()?;
        gpu.sync()?;
        let (s_old, post_old, comb_old, xn_old) = (read(&so[0], n * d)?, read(&so[1], n)?, read(&so[2], n * n)?, read(&so[6], d)?);
        let mut q_old = vec![0i8; d];
        if q8 {
            gpu.dtoh(&mut q_old, so[7].ptr)?;
        }
        for gs in [false, true] {
            if gs && !hc_gs_fits(gpu, split, 1, n) {
                println!("  (hc_step_gs: the grid does not fit the device at once, or DS4_HC_GS=0)");
                continue;
            }
            let (bn, sn) = state(gs)?;
            let fnw = fin(&sn);
            // decode's hc_step defers the Sinkhorn (its logits at bn.z): comb is checked below by
            // the CPU's Sinkhorn of those logits (attn_prep / router_dec run it on the GPU: kbench dec)
            let step = || launch_hc_step(gpu, &bn, 1, yb.ptr, ny, fnb.ptr, &fnw);
            let new = || -> Result<()> {
                step()?;
                if m > n {
                    let mut z = vec![0f32; n * n];
                    gpu.dtoh(&mut z, bn.z)?;
                    let mut c = vec![0f32; n * n];
                    crate::ops::sinkhorn(&z, n, 20, 1e-6, &mut c);
                    gpu.htod(bn.comb, &c)?;
                }
                Ok(())
            };
            new()?;
            gpu.sync()?;
            let (s_rel, nan0) = rel(&read(&sn[0], n * d)?, &s_old);
            // the head's pre-mix (m == n) has no post/comb
            let (pc_rel, nan1) = if m > n {
                let (a, b) = (rel(&read(&sn[1], n)?, &post_old), rel(&read(&sn[2], n * n)?, &comb_old));
                (a.0.max(b.0), a.1 + b.1)
            } else {
                (0.0, 0)
            };
            let xn_new = read(&sn[6], d)?;
            let (xn_rel, nan2) = rel(&xn_new, &xn_old);
            let q8_off = if q8 {
                let mut qa = vec![0i8; d];
                gpu.dtoh(&mut qa, sn[7].ptr)?;
                qa.iter().zip(&q_old).filter(|(a, b)| (**a as i32 - **b as i32).abs() > 1).count()
            } else {
                0
            };
            // timing keeps stepping the same state (post-mix and finish feed each other as in
            // decode); the repeat check re-runs one step from the original inputs (the tickets
            // and barrier counters must be ready for it)
            let us_new = graph_us(gpu, 200, &step)?;
            gpu.htod(bn.s, &s0)?;
            gpu.htod(bn.post, &post0)?;
            gpu.htod(bn.comb, &comb0)?;
            new()?;
            gpu.sync()?;
            let det = read(&sn[6], d)?.iter().zip(&xn_new).all(|(a, b)| a.to_bits() == b.to_bits());
            // phase trace of a warm launch (launch_hc_step_traced): times from the first block's entry
            let tr = gpu.alloc_zeroed((3 * split + 8) * 8)?;
            for _ in 0..3 {
                launch_hc_step_traced(gpu, &bn, 1, yb.ptr, ny, fnb.ptr, &fnw, tr.ptr, false)?;
            }
            gpu.sync()?;
            let mut tv = vec![0u64; 3 * split + 8];
            gpu.dtoh(&mut tv, tr.ptr)?;
            let t0 = (0..split).map(|b| tv[3 * b]).min().unwrap_or(0);
            let us = |v: u64| if v == 0 { f64::NAN } else { v.saturating_sub(t0) as f64 / 1e3 };
            let col = |k: usize| -> (f64, f64) {
                let mut v: Vec<f64> = (0..split).map(|b| us(tv[3 * b + k])).collect();
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[v.len() - 1])
            };
            let (e, mx, tk) = (col(0), col(1), col(2));
            let f = &tv[3 * split..];
            let trace_line = if gs {
                format!(
                    "  trace us: block entry med {:.2} max {:.2} | mixes done med {:.2} max {:.2} | barrier passed med {:.2} max {:.2} | block 0 done {:.2}",
                    e.0, e.1, mx.0, mx.1, tk.0, tk.1, us(f[0])
                )
            } else {
                format!(
                    "  trace us: block entry med {:.2} max {:.2} | mixes done med {:.2} max {:.2} | ticket med {:.2} max {:.2} | last block: partials {:.2} collapse {:.2} barrier {:.2} sinkhorn (deferred: logits) {:.2} int8 {:.2}",
                    e.0, e.1, mx.0, mx.1, tk.0, tk.1, us(f[0]), us(f[2]), us(f[3]), us(f[1]), us(f[4])
                )
            };
            println!(
                "{:<40} {:>8.2} {:>8.2} {:>6.2}x {:>9.2e} {:>9.2e} {:>9.2e} {:>5} {:>4} {:>4}",
                format!("hc D{d} N{n} M{m} ny{ny}{} {}", if q8 { " +int8" } else { "" }, if gs { "gs" } else { "step" }),
                us_old,
                us_new,
                us_old / us_new.max(1e-9),
                s_rel,
                pc_rel,
                xn_rel,
                q8_off,
                nan0 + nan1 + nan2,
                if det { "ok" } else { "DIFF" }
            );
            println!("{trace_line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f16_ulps counts representable f16 values between two patterns, checked against the half
    /// crate's next-value walk from random starting points, across zero and at the ends.
    #[test]
    fn f16_steps_follow_the_number_line() {
        let mut sd = 17u64;
        for _ in 0..2000 {
            let a = (rng(&mut sd) >> 48) as u16;
            let fa = half::f16::from_bits(a);
            if fa.is_nan() || fa.is_infinite() {
                continue;
            }
            let up = (rng(&mut sd) % 40) as u32;
            let mut b = fa.to_f32();
            let mut steps = 0;
            while steps < up {
                let bits = half::f16::from_f32(b).to_bits();
                // the next larger value (-0 and +0 are one step from the smallest subnormals)
                let nb = if bits == 0x8000 { 0x0001 } else if bits & 0x8000 != 0 { bits - 1 } else { bits + 1 };
                if half::f16::from_bits(nb).is_infinite() {
                    break;
                }
                b = half::f16::from_bits(nb).to_f32();
                steps += 1;
            }
            let bb = half::f16::from_f32(b).to_bits();
            assert_eq!(f16_ulps(a, bb), steps, "{a:#06x} -> {bb:#06x}");
            assert_eq!(f16_ulps(bb, a), steps);
        }
        assert_eq!(f16_ulps(0x8000, 0x0000), 0);
        assert_eq!(f16_ulps(0x8001, 0x0001), 2);
        assert_eq!(f16_ulps(0x7e00, 0x0000), u32::MAX);
    }

    /// The routing the kernel benches build is a valid grouping (every token 6 distinct
    /// experts, offsets ascending to t * 6), and DS4_KBENCH_SKEW=1 reproduces the balance the
    /// synthetic model's deep layers showed in an 8K prefill (session 20, DS4_MOE_STATS: the
    /// largest expert 1.5-6K slots, the median 23-98, 180-248 experts used), while uniform
    /// routing stays near 192 slots per expert.
    #[test]
    fn skewed_routing_matches_the_synthetic_models_balance() {
        let t = 8192;
        for (skew, seed) in [(0.0, 3u64), (1.0, 5), (1.0, 11)] {
            let (off, ptok) = assign_experts_skewed(t, seed, skew);
            assert_eq!(off.len(), GEMM_E + 1);
            assert_eq!(off[0], 0);
            assert_eq!(off[GEMM_E] as usize, t * GEMM_K);
            assert!(off.windows(2).all(|w| w[0] <= w[1]));
            // each token appears 6 times overall and at most once per expert
            let mut per_tok = vec![0usize; t];
            for e in 0..GEMM_E {
                let toks = &ptok[off[e] as usize..off[e + 1] as usize];
                assert!(toks.windows(2).all(|w| w[0] < w[1]), "expert {e}: tokens not distinct and ascending");
                toks.iter().for_each(|&k| per_tok[k as usize] += 1);
            }
            assert!(per_tok.iter().all(|&c| c == GEMM_K));
            let mut n: Vec<i32> = off.windows(2).map(|w| w[1] - w[0]).filter(|&c| c > 0).collect();
            n.sort_unstable();
            let (max, med) = (*n.last().unwrap(), n[n.len() / 2]);
            eprintln!("skew {skew}: {} experts, largest {max}, median {med}", n.len());
            if skew == 0.0 {
                assert!(n.len() == GEMM_E && max < 300 && (150..=230).contains(&med), "uniform: max {max} median {med}");
            } else {
                assert!((1500..=6500).contains(&max), "skewed: largest expert {max}");
                assert!((23..=120).contains(&med), "skewed: median {med}");
                assert!((180..=GEMM_E).contains(&n.len()), "skewed: {} experts used", n.len());
            }
        }
    }
}
