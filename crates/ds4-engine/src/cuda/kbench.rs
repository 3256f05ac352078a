//! Kernel microbenchmarks at the real DeepSeek V4 Flash shapes with random (valid) blocks:
//! achieved bandwidth of every decode matvec type, the fused MoE down projection, prefill GEMM
//! throughput, the device-copy ceiling they are compared with, and prefill attention (SIMT vs
//! tensor cores; `DS4_KBENCH=attn` runs only that section).

use super::driver::{Args, Gpu, Result};
use super::session::{GemmArgs, JobTable, MvJob};
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
/// `DS4_KBENCH=attn` runs only the prefill attention section.
pub fn run() -> Result<()> {
    let gpu = Gpu::new(0)?;
    if std::env::var("DS4_KBENCH").as_deref() == Ok("attn") {
        return attn_bench(&gpu);
    }
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
    println!("{:<28} {:>10} {:>10} {:>8}", "matvec (decode)", "MB/call", "us", "TB/s");
    for c in &cases {
        let data = random_blocks(c.ty, c.cols * c.rows * c.n_exp, 17 + c.rows as u64);
        let m: GMat = upload_raw_mat(&gpu, c.name, c.ty, if c.n_exp > 1 { vec![c.cols as u64, c.rows as u64, c.n_exp as u64] } else { vec![c.cols as u64, c.rows as u64] }, &data)?;
        drop(data);
        // enough distinct selections/copies that the working set exceeds L2
        let per_call = m.bytes_per_mat * c.slots;
        let variants = ((512usize << 20) / per_call.max(1)).clamp(1, 64);
        let mut tables = Vec::new();
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
        }
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
        println!("{:<28} {:>10.2} {:>10.2} {:>8.3}", c.name, per_call as f64 / 1e6, ms * 1e3, per_call as f64 / (ms / 1e3) / 1e12);
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
    gpu.sync()?;
    attn_bench(&gpu)
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
pub fn attn_bench(gpu: &Gpu) -> Result<()> {
    use super::session::{attn_tc_shape_ok, launch_attn_simt, launch_attn_tc, AttnIo};
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
    println!(
        "{:<34} {:>9} {:>9} {:>8} {:>8} {:>10} {:>10} {:>4}",
        "attention (prefill)", "simt ms", "tc ms", "GFLOP", "TFLOP/s", "rel err", "max abs", "det"
    );
    for c in &cases {
        let (h, dh, rd, t, p0, ratio, topk) = (c.h, c.dh, c.rd, c.t, c.p0, c.ratio, c.topk);
        if !attn_tc_shape_ok(h, dh, rd) {
            println!("attn h={h} dh={dh}: shape not supported by the tensor-core kernel");
            continue;
        }
        let cap = (w + t).div_ceil(256) * 256;
        let comp_rows = (p0 + t).checked_div(ratio).unwrap_or(0);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((p0 as u64) << 8) ^ (ratio as u64) ^ ((dh as u64) << 32);
        // q: any scale (normalized per head); rows in [-3, 3): logits of std ~1.7 over 512 dims
        let qv: Vec<f32> = (0..t * h * dh).map(|_| frand(&mut seed) * 2.0 - 1.0).collect();
        let rawv: Vec<f32> = (0..cap * dh).map(|_| frand(&mut seed) * 6.0 - 3.0).collect();
        let compv: Vec<f32> = (0..comp_rows.max(1) * dh).map(|_| frand(&mut seed) * 6.0 - 3.0).collect();
        let sinks: Vec<f32> = (0..h).map(|_| frand(&mut seed) * 4.0 - 1.0).collect();
        let omega: Vec<f32> = (0..rd / 2).map(|k| 1.0 / 10000f32.powf(2.0 * k as f32 / rd as f32)).collect();
        let pos: Vec<i32> = (0..t).map(|i| (p0 + i) as i32).collect();
        // indexer selection: distinct random visible rows per token (only read when > topk visible)
        let mut sel = vec![0i32; t * topk];
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
        let f4 = |n: usize| gpu.alloc(n * 4);
        let (qb, rawb, compb, sinkb, omb, posb, selb) =
            (f4(qv.len())?, f4(rawv.len())?, f4(compv.len())?, f4(h)?, f4(omega.len().max(1))?, f4(t)?, f4(sel.len().max(1))?);
        gpu.htod(qb.ptr, &qv)?;
        gpu.htod(rawb.ptr, &rawv)?;
        gpu.htod(compb.ptr, &compv)?;
        gpu.htod(sinkb.ptr, &sinks)?;
        gpu.htod(omb.ptr, &omega)?;
        gpu.htod(posb.ptr, &pos)?;
        gpu.htod(selb.ptr, &sel)?;
        let (po, pml, out_ref, out_tc) = (f4(t * h * dh)?, f4(t * h * 2)?, f4(t * h * dh)?, f4(t * h * dh)?);
        let kv16 = gpu.alloc((cap + comp_rows) * dh * 2)?;
        let io = AttnIo {
            q: qb.ptr,
            raw: rawb.ptr,
            comp: if ratio > 0 { compb.ptr } else { 0 },
            sel: selb.ptr,
            pos: posb.ptr,
            omega: omb.ptr,
            sinks: sinkb.ptr,
            po: po.ptr,
            pml: pml.ptr,
            out: out_ref.ptr,
            kv16: kv16.ptr,
            t,
            cap,
            comp_rows,
            topk,
            h,
            dh,
            rd,
            w,
            ratio,
            nsplit: 1,
            eps: 1e-6,
        };
        let io_tc = AttnIo { out: out_tc.ptr, ..io };
        // poison the tensor-core output: unwritten elements show up as NaN
        let nan = vec![f32::NAN; t * h * dh];
        gpu.htod(out_tc.ptr, &nan)?;
        launch_attn_simt(gpu, &io)?;
        launch_attn_tc(gpu, &io_tc)?;
        gpu.sync()?;
        let mut r = vec![0f32; t * h * dh];
        let mut y = vec![0f32; t * h * dh];
        gpu.dtoh(&mut r, out_ref.ptr)?;
        gpu.dtoh(&mut y, out_tc.ptr)?;
        let time = |f: &dyn Fn() -> Result<()>| -> Result<f64> {
            let (e0, e1) = (gpu.event()?, gpu.event()?);
            gpu.record(&e0)?;
            for _ in 0..c.reps {
                f()?;
            }
            gpu.record(&e1)?;
            Ok(gpu.elapsed_ms(&e0, &e1)? as f64 / c.reps as f64)
        };
        let ms_simt = time(&|| launch_attn_simt(gpu, &io))?;
        let ms_tc = time(&|| launch_attn_tc(gpu, &io_tc))?;
        let mut y2 = vec![0f32; t * h * dh];
        gpu.dtoh(&mut y2, out_tc.ptr)?;
        let det = y.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits());
        let (mut num, mut den, mut mx, mut bad) = (0f64, 0f64, 0f64, 0usize);
        for (a, b) in y.iter().zip(&r) {
            if !a.is_finite() {
                bad += 1;
                continue;
            }
            let e = (*a as f64) - (*b as f64);
            num += e * e;
            den += (*b as f64) * (*b as f64);
            mx = mx.max(e.abs());
        }
        let rel = if bad > 0 { f64::NAN } else { (num / den.max(1e-300)).sqrt() };
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
        let bad_s = if bad > 0 { format!("  {bad} NON-FINITE") } else { String::new() };
        println!(
            "{:<34} {:>9.3} {:>9.3} {:>8.1} {:>8.1} {:>10.2e} {:>10.2e} {:>4}{}",
            name,
            ms_simt,
            ms_tc,
            gf,
            gf / ms_tc,
            rel,
            mx,
            if det { "ok" } else { "NO" },
            bad_s
        );
    }
    gpu.sync()
}
