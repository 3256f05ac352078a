//! L2 prefetch of decode weights on a side stream (`DS4_PREFETCH`, kernel `l2_prefetch` in
//! matvec.cuh).
//!
//! A decoded token alternates latency-bound kernels that leave HBM idle (hyper-connections,
//! attention, routing) with matvecs too short to reach full bandwidth from HBM. Here a side
//! stream, forked from the decode stream by an event, streams the weights of an upcoming
//! matvec into L2 while the kernels before it run. Prefetches are hints: nothing reads what
//! they fetch, so results are unchanged; the side stream joins back at the end of the step
//! (a graph capture requires it).
//!
//! `DS4_PREFETCH` lists the prefetch points by letter; a lowercase letter forks after the
//! matvec before the target has been queued (the prefetch runs in the gap after it), the
//! uppercase one before it (the prefetch overlaps that matvec too):
//! * `a`: the next layer's attention inputs (q_a, kv, compressors, indexer projection), after
//!   the FFN down matvec
//! * `b`: q_b (+ indexer q_b), after the q_a group
//! * `c`: out_a, after q_b
//! * `d`: out_b, after out_a
//! * `e`: router and shared gate/up, after out_b
//! * `f`: routed gate/up, after the routing (the uppercase form has no earlier point)
//! * `g`: routed and shared down, after the routing (after `f` when both)
//!
//! `DS4_PREFETCH_LINES=1` uses one prefetch instruction per 128-byte line instead of one bulk
//! (TMA) prefetch per chunk.

use super::driver::{Args, DevBuf, Event, Gpu, Result};
use super::weights::{GLayer, GMat};
use cudarc::driver::CudaStream;
use std::cell::Cell;
use std::sync::Arc;

/// One range of the kernel's list (mirrors `PfJob` in matvec.cuh).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct PfJob {
    base: u64,
    bytes: i64,
    e_stride: i64,
    sel: u64,
    nsel: i32,
    pad: i32,
}

/// Bytes per bulk prefetch.
const CHUNK: usize = 32 << 10;

/// The ranges of one prefetch point, on the device.
pub struct Table {
    buf: DevBuf,
    n: i32,
    threads: u32,
}

/// The prefetch points of one layer (see the module doc for where each is issued).
pub struct LayerPf {
    pub attn_in: Table,
    pub q_b: Table,
    pub out_a: Table,
    pub out_b: Table,
    pub ffn_sh: Table,
    pub gate_up: Table,
    pub down: Table,
}

/// Which points are on, and whether they fork early (uppercase).
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Points {
    pub on: [bool; 7],
    pub early: [bool; 7],
}

impl Points {
    pub fn parse(s: &str) -> Points {
        let mut p = Points::default();
        for ch in s.chars() {
            if let Some(i) = "abcdefg".find(ch.to_ascii_lowercase()) {
                p.on[i] = true;
                p.early[i] |= ch.is_ascii_uppercase();
            }
        }
        p
    }
}

pub struct Prefetch {
    side: Arc<CudaStream>,
    fork: Event,
    join: Event,
    forked: Cell<bool>,
    lines: bool,
    pub points: Points,
    pub layers: Vec<LayerPf>,
}

fn ranges(m: &GMat, sel: Option<(u64, usize)>, out: &mut Vec<PfJob>) {
    let expert = m.n_exp > 1;
    let (sp, ns) = sel.filter(|_| expert).map_or((0, 0), |(p, n)| (p, n as i32));
    let pay = if expert { m.e_pay } else { m.pay.bytes };
    out.push(PfJob { base: m.pay.ptr, bytes: pay as i64, e_stride: m.e_pay as i64, sel: sp, nsel: ns, pad: 0 });
    if let Some(h) = &m.hdr {
        let hb = if expert { m.e_hdr } else { h.bytes };
        out.push(PfJob { base: h.ptr, bytes: hb as i64, e_stride: m.e_hdr as i64, sel: sp, nsel: ns, pad: 0 });
    }
}

impl Table {
    fn new(gpu: &Gpu, mats: &[&GMat], sel: Option<(u64, usize)>) -> Result<Table> {
        let mut v = Vec::new();
        for m in mats {
            ranges(m, sel, &mut v);
        }
        let chunks: usize = v.iter().map(|j| (j.bytes as usize).div_ceil(CHUNK) * if j.sel != 0 { j.nsel as usize } else { 1 }).sum();
        let bytes = std::mem::size_of::<PfJob>() * v.len();
        let buf = gpu.alloc(bytes.max(1))?;
        // SAFETY: PfJob is plain repr(C) data.
        let raw = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, bytes) };
        if !raw.is_empty() {
            gpu.htod(buf.ptr, raw)?;
        }
        // a thread per chunk, at most 32 blocks of 128 (the bulk form issues one instruction
        // per chunk; the line form loops)
        let threads = (chunks.div_ceil(128) * 128).clamp(128, 32 * 128) as u32;
        Ok(Table { buf, n: v.len() as i32, threads })
    }
}

impl Prefetch {
    /// The prefetch tables when `DS4_PREFETCH` names any point (None otherwise). `sel` is the
    /// device array of the K selected experts of the token being decoded.
    pub fn from_env(gpu: &Gpu, layers: &[GLayer], sel: u64, k: usize) -> Result<Option<Prefetch>> {
        let points = Points::parse(&std::env::var("DS4_PREFETCH").unwrap_or_default());
        if !points.on.iter().any(|&b| b) {
            return Ok(None);
        }
        let mut all = Vec::new();
        let s = Some((sel, k));
        for ly in layers {
            let mut a = vec![&ly.q_a, &ly.kv];
            for c in [&ly.comp, &ly.icomp].into_iter().flatten() {
                a.push(&c.kv);
                a.push(&c.gate);
            }
            a.extend(ly.idx_proj.iter());
            let mut b = vec![&ly.q_b];
            b.extend(ly.idx_q_b.iter());
            all.push(LayerPf {
                attn_in: Table::new(gpu, &a, None)?,
                q_b: Table::new(gpu, &b, None)?,
                out_a: Table::new(gpu, &[&ly.out_a], None)?,
                out_b: Table::new(gpu, &[&ly.out_b], None)?,
                ffn_sh: Table::new(gpu, &[&ly.gate_inp, &ly.gate_sh, &ly.up_sh], None)?,
                gate_up: Table::new(gpu, &[&ly.gate_exps, &ly.up_exps], s)?,
                down: Table::new(gpu, &[&ly.down_exps, &ly.down_sh], s)?,
            });
        }
        let side = gpu.ctx.new_stream().map_err(super::driver::derr("prefetch stream"))?;
        let lines = std::env::var("DS4_PREFETCH_LINES").map(|v| v == "1").unwrap_or(false);
        eprintln!("ds4: decode L2 prefetch on a side stream: points {points:?}{}", if lines { ", per line" } else { "" });
        Ok(Some(Prefetch { side, fork: gpu.event()?, join: gpu.event()?, forked: Cell::new(false), lines, points, layers: all }))
    }

    /// Point `i` (0 = `a` .. 6 = `g`) is on and forks early (`early`) or late.
    pub fn at(&self, i: usize, early: bool) -> bool {
        self.points.on[i] && self.points.early[i] == early
    }

    /// Prefetch `t` on the side stream once the decode stream has reached this point.
    pub fn issue(&self, gpu: &Gpu, t: &Table) -> Result<()> {
        let side = self.side.cu_stream();
        self.fork.record_on(gpu.cu_stream())?;
        self.fork.wait_on(side)?;
        let args = Args::new().a(t.buf.ptr).a(t.n).a(CHUNK as i32).a(self.lines as i32);
        gpu.launch_on(side, "l2_prefetch", (t.threads / 128, 1, 1), 128, 0, args)?;
        self.forked.set(true);
        Ok(())
    }

    /// Join the side stream back into the decode stream (end of a step).
    pub fn join(&self, gpu: &Gpu) -> Result<()> {
        if self.forked.replace(false) {
            self.join.record_on(self.side.cu_stream())?;
            self.join.wait_on(gpu.cu_stream())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Points;

    #[test]
    fn points_parse_letters_and_case() {
        let p = Points::parse("aBg,x");
        assert_eq!(p.on, [true, true, false, false, false, false, true]);
        assert_eq!(p.early, [false, true, false, false, false, false, false]);
        assert_eq!(Points::parse(""), Points::default());
    }
}
