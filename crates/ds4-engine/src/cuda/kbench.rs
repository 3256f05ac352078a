//! Kernel microbenchmarks at the real DeepSeek V4 Flash shapes with random (valid) blocks:
//! achieved bandwidth of every decode matvec type, the fused MoE down projection, prefill GEMM
//! throughput, and the device-copy ceiling they are compared with.

use super::driver::{Args, Gpu, Result};
use super::session::{GemmArgs, JobTable, JobTable2, MvJob, MvJob2};
use super::weights::{upload_raw_mat, GMat};
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
pub fn run() -> Result<()> {
    let gpu = Gpu::new(0)?;
    let ceil = copy_ceiling(&gpu)?;
    println!("device: {} ({} SMs), copy ceiling {:.3} TB/s", gpu.name, gpu.sm_count, ceil / 1e12);
    let cases = [
        Case { name: "q_a   Q8_0 4096->1024", ty: GgmlType::Q8_0, cols: 4096, rows: 1024, n_exp: 1, slots: 1 },
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
    println!("{:<28} {:>10} {:>10} {:>8}   {:>8} {:>8}  {}", "matvec (decode)", "MB/call", "us", "TB/s", "mv2 us", "TB/s", "mv2 vs old: max|d| rel");
    for c in &cases {
        let data = random_blocks(c.ty, c.cols * c.rows * c.n_exp, 17 + c.rows as u64);
        let m: GMat = upload_raw_mat(&gpu, c.name, c.ty, if c.n_exp > 1 { vec![c.cols as u64, c.rows as u64, c.n_exp as u64] } else { vec![c.cols as u64, c.rows as u64] }, &data)?;
        drop(data);
        // enough distinct selections/copies that the working set exceeds L2
        let per_call = m.bytes_per_mat * c.slots;
        let variants = ((512usize << 20) / per_call.max(1)).clamp(1, 64);
        let mut tables = Vec::new();
        let mut tables2 = Vec::new();
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
            let mut j = [MvJob { w, x: x.ptr, y: y.ptr, sel: selp, x_slot: 0, nslots: c.slots as i32, x_grp_rows: w.rows, block0: 0, pad: 0 }];
            tables.push(JobTable::new(&gpu, &mut j)?);
            let mut j2 = [MvJob2 { sel: selp, nslots: c.slots as i32, ..MvJob2::plain(w, x.ptr, y.ptr) }];
            tables2.push(JobTable2::new(&gpu, &mut j2)?);
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
    }
    // prefill GEMM throughput
    println!("{:<28} {:>10} {:>10} {:>8}", "GEMM (prefill, T=2048)", "GFLOP", "ms", "TFLOP/s");
    let t = 2048usize;
    for (ty, cols, rows) in [(GgmlType::Q8_0, 4096usize, 8192usize), (GgmlType::Q8_0, 1024, 32768), (GgmlType::Iq2Xxs, 4096, 2048)] {
        let data = random_blocks(ty, cols * rows, 99);
        let m = upload_raw_mat(&gpu, "gemm", ty, vec![cols as u64, rows as u64], &data)?;
        let xb = gpu.alloc(t * cols * 4)?;
        let xv: Vec<f32> = (0..t * cols).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
        gpu.htod(xb.ptr, &xv)?;
        let yb = gpu.alloc(t * rows * 4)?;
        for (kname, bm) in [("gemm_h", 128usize), ("gemm_f32", 64)] {
            let a = GemmArgs { w: m.wmat(), x: xb.ptr, y: yb.ptr, grp_off: 0, gather: 0, ldx: cols as i32, ldy: rows as i32, t: t as i32, pad: 0 };
            let grid = (rows.div_ceil(bm) as u32, t.div_ceil(64) as u32, 1);
            gpu.launch(kname, grid, 256, 0, Args::new().a(a))?;
            let reps = 5;
            let (e0, e1) = (gpu.event()?, gpu.event()?);
            gpu.record(&e0)?;
            for _ in 0..reps {
                gpu.launch(kname, grid, 256, 0, Args::new().a(a))?;
            }
            gpu.record(&e1)?;
            let ms = gpu.elapsed_ms(&e0, &e1)? as f64 / reps as f64;
            let gf = 2.0 * t as f64 * cols as f64 * rows as f64 / 1e9;
            println!("{:<28} {:>10.1} {:>10.3} {:>8.1}", format!("{kname} {} {cols}->{rows}", ty.name()), gf, ms, gf / ms);
        }
    }
    gpu.sync()
}
