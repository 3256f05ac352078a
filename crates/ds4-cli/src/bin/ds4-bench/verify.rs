//! `ds4-bench --verify-fixtures DIR`: every fixture case of ../shared/fixtures/model on the GPU,
//! GPU-vs-CPU agreement (prefill, chunked prefill, decode), run-to-run determinism, and the
//! fast path's deviation from the reference precision. One line per check:
//!   `PASS|FAIL|INFO <model>/<seq> <check>: <figures>`
//! and a closing `N passed, M failed`. Expected output: tools/gpu/verify.expected.

use super::load_cuda;
use super::Args;
use anyhow::{anyhow, Context, Result};
use ds4_engine::backend::{Backend, Options};
use ds4_engine::cpu::CpuBackend;
use ds4_engine::cuda::{CudaBackend, CudaModel, CudaSession, Precision, SessionOptions};
use ds4_engine::model::Model;
use std::path::Path;
use std::sync::Arc;

fn read_f32(p: &Path) -> Option<Vec<f32>> {
    let b = std::fs::read(p).ok()?;
    Some(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}
fn read_i32(p: &Path) -> Option<Vec<i32>> {
    let b = std::fs::read(p).ok()?;
    Some(b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn argmax(v: &[f32]) -> usize {
    let mut b = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[b] {
            b = i;
        }
    }
    b
}

struct Cmp {
    max_abs: f64,
    mean_abs: f64,
    argmax_ok: usize,
    rows: usize,
}

/// Compare `got` ([rows][vocab]) with `want` on rows [0, upto).
fn cmp(got: &[f32], want: &[f32], vocab: usize, upto: usize) -> Cmp {
    let rows = upto.min(got.len() / vocab).min(want.len() / vocab);
    let (mut mx, mut sum, mut ok) = (0f64, 0f64, 0usize);
    for r in 0..rows {
        let g = &got[r * vocab..(r + 1) * vocab];
        let w = &want[r * vocab..(r + 1) * vocab];
        for i in 0..vocab {
            let d = (g[i] as f64 - w[i] as f64).abs();
            let d = if d.is_nan() { f64::INFINITY } else { d };
            mx = mx.max(d);
            sum += d;
        }
        ok += (argmax(g) == argmax(w)) as usize;
    }
    Cmp { max_abs: mx, mean_abs: sum / (rows * vocab).max(1) as f64, argmax_ok: ok, rows }
}

/// Compare against top-32 views ([rows][32] ids and logits).
fn cmp_top32(got: &[f32], ids: &[i32], vals: &[f32], vocab: usize, upto: usize) -> Cmp {
    let rows = upto.min(got.len() / vocab).min(ids.len() / 32);
    let (mut mx, mut sum, mut ok) = (0f64, 0f64, 0usize);
    for r in 0..rows {
        let g = &got[r * vocab..(r + 1) * vocab];
        for k in 0..32 {
            let d = (g[ids[r * 32 + k] as usize] as f64 - vals[r * 32 + k] as f64).abs();
            let d = if d.is_nan() { f64::INFINITY } else { d };
            mx = mx.max(d);
            sum += d;
        }
        ok += (argmax(g) == ids[r * 32] as usize) as usize;
    }
    Cmp { max_abs: mx, mean_abs: sum / (rows * 32).max(1) as f64, argmax_ok: ok, rows }
}

struct Tally {
    pass: usize,
    fail: usize,
}
impl Tally {
    fn check(&mut self, name: &str, c: &Cmp, tol_max: f64, tol_mean: f64, need_argmax: bool) {
        let ok = c.rows > 0 && c.max_abs <= tol_max && c.mean_abs <= tol_mean && (!need_argmax || c.argmax_ok == c.rows);
        if ok {
            self.pass += 1;
        } else {
            self.fail += 1;
        }
        println!(
            "{} {name}: rows={} max_abs={:.3e} mean_abs={:.3e} argmax={}/{}",
            if ok { "PASS" } else { "FAIL" },
            c.rows,
            c.max_abs,
            c.mean_abs,
            c.argmax_ok,
            c.rows
        );
    }
    fn flag(&mut self, name: &str, ok: bool, what: &str) {
        if ok {
            self.pass += 1;
        } else {
            self.fail += 1;
        }
        println!("{} {name}: {what}", if ok { "PASS" } else { "FAIL" });
    }
}

fn sess(m: &Arc<CudaModel>, qat: bool, prec: Precision, chunk: usize) -> Result<CudaSession> {
    CudaSession::new(m.clone(), SessionOptions { ctx: 1024, qat, precision: prec, max_chunk: chunk, graphs: true }).map_err(|e| anyhow!("{e}"))
}

fn gpu_decode(s: &mut CudaSession, toks: &[u32], prefix: usize) -> Result<Vec<f32>> {
    s.reset().map_err(|e| anyhow!("{e}"))?;
    s.prefill(&toks[..prefix]).map_err(|e| anyhow!("{e}"))?;
    let mut out = s.logits().map_err(|e| anyhow!("{e}"))?.to_vec();
    for &t in &toks[prefix..] {
        s.eval(t).map_err(|e| anyhow!("{e}"))?;
        out.extend_from_slice(s.logits().map_err(|e| anyhow!("{e}"))?);
    }
    Ok(out)
}

fn cpu_decode(b: &mut CpuBackend, toks: &[u32], prefix: usize) -> Result<Vec<f32>> {
    b.reset();
    let mut out = b.forward(&toks[..prefix], false).map_err(|e| anyhow!("{e}"))?;
    for &t in &toks[prefix..] {
        out.extend(b.forward(&[t], false).map_err(|e| anyhow!("{e}"))?);
    }
    Ok(out)
}

/// Mean KL(ref || fast) over rows and top-1 agreement.
fn kl_top1(r: &[f32], f: &[f32], vocab: usize) -> (f64, f64, f64) {
    let rows = r.len() / vocab;
    let (mut kl, mut agree, mut mx) = (0f64, 0usize, 0f64);
    for i in 0..rows {
        let a = &r[i * vocab..(i + 1) * vocab];
        let b = &f[i * vocab..(i + 1) * vocab];
        let lse = |v: &[f32]| {
            let m = v.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            m + v.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln()
        };
        let (la, lb) = (lse(a), lse(b));
        let mut k = 0f64;
        for j in 0..vocab {
            let pa = (a[j] as f64 - la).exp();
            k += pa * ((a[j] as f64 - la) - (b[j] as f64 - lb));
            mx = mx.max((a[j] as f64 - b[j] as f64).abs());
        }
        kl += k;
        agree += (argmax(a) == argmax(b)) as usize;
    }
    (mx, kl / rows.max(1) as f64, agree as f64 / rows.max(1) as f64)
}

pub fn run(dir: &Path, _a: &Args) -> Result<()> {
    // The manifest is Python-written JSON: it may carry NaN/Infinity, which serde_json rejects.
    let text = std::fs::read_to_string(dir.join("manifest.json")).context("manifest.json")?;
    let text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
    let man: serde_json::Value = serde_json::from_str(&text).context("manifest")?;
    let mut t = Tally { pass: 0, fail: 0 };
    let models = man["models"].as_array().ok_or_else(|| anyhow!("manifest: no models"))?;
    for mo in models {
        let name = mo["name"].as_str().unwrap_or("?");
        let gguf = dir.join(name).join("model.gguf");
        if !gguf.exists() {
            println!("SKIP {name}: model.gguf not present");
            continue;
        }
        let cpu_model = Model::load(&gguf).map_err(|e| anyhow!("{e}"))?;
        let dev = load_cuda(cpu_model.clone())?;
        let cm = dev.cuda_weights().expect("a CUDA device").clone();
        let vocab = cm.dims.vocab;
        let mut ref_ex = sess(&cm, false, Precision::Reference, 2048)?;
        let mut ref_chunk = sess(&cm, false, Precision::Reference, 37)?;
        let mut fast_ex = sess(&cm, false, Precision::Fast, 2048)?;
        let mut ref_off = sess(&cm, true, Precision::Reference, 2048)?;
        let mut cpu = CpuBackend::new(cpu_model.clone(), Options { qat: false });
        for sq in mo["sequences"].as_array().into_iter().flatten() {
            let sname = sq["name"].as_str().unwrap_or("?");
            let sd = dir.join(name).join(sname);
            let Some(toks) = read_i32(&sd.join("tokens.i32.bin")) else {
                println!("SKIP {name}/{sname}: no tokens");
                continue;
            };
            let toks: Vec<u32> = toks.iter().map(|&x| x as u32).collect();
            let n = toks.len();
            let prefix = sq["decode_prefix_len"].as_u64().unwrap_or(1) as usize;
            let first_off = sq["noise"]["official_f32_vs_f64"]["first_position_above_1e-3"].as_u64().map(|v| v as usize).unwrap_or(n);
            let tag = |c: &str| format!("{name}/{sname} {c}");
            // exact prefill (reference precision), twice for determinism
            ref_ex.reset().map_err(|e| anyhow!("{e}"))?;
            let g1 = ref_ex.prefill_all_logits(&toks).map_err(|e| anyhow!("{e}"))?;
            ref_ex.reset().map_err(|e| anyhow!("{e}"))?;
            let g2 = ref_ex.prefill_all_logits(&toks).map_err(|e| anyhow!("{e}"))?;
            t.flag(&tag("determinism"), g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()), "two GPU prefills bit-identical");
            if let Some(w) = read_f32(&sd.join("prefill.exact.logits.f32.bin")) {
                t.check(&tag("prefill.exact"), &cmp(&g1, &w, vocab, n), 2e-3, 1e-4, true);
            } else if let (Some(ids), Some(v)) = (read_i32(&sd.join("prefill.exact.top32_ids.i32.bin")), read_f32(&sd.join("prefill.exact.top32_logits.f32.bin"))) {
                t.check(&tag("prefill.exact(top32)"), &cmp_top32(&g1, &ids, &v, vocab, n), 2e-3, 1e-4, true);
            }
            // exact decode
            let gd = gpu_decode(&mut ref_ex, &toks, prefix)?;
            let nd = n - prefix + 1;
            if let Some(w) = read_f32(&sd.join("decode.exact.logits.f32.bin")) {
                t.check(&tag("decode.exact"), &cmp(&gd, &w, vocab, nd), 2e-3, 1e-4, true);
            } else if let (Some(ids), Some(v)) = (read_i32(&sd.join("decode.exact.top32_ids.i32.bin")), read_f32(&sd.join("decode.exact.top32_logits.f32.bin"))) {
                t.check(&tag("decode.exact(top32)"), &cmp_top32(&gd, &ids, &v, vocab, nd), 2e-3, 1e-4, true);
            }
            // official numerics (QAT on) up to the reference's own noise point
            ref_off.reset().map_err(|e| anyhow!("{e}"))?;
            let go = ref_off.prefill_all_logits(&toks).map_err(|e| anyhow!("{e}"))?;
            if let Some(w) = read_f32(&sd.join("prefill.official.logits.f32.bin")) {
                t.check(&tag(&format!("prefill.official[..{first_off}]")), &cmp(&go, &w, vocab, first_off), 2e-3, 1e-4, true);
            } else if let (Some(ids), Some(v)) = (read_i32(&sd.join("prefill.official.top32_ids.i32.bin")), read_f32(&sd.join("prefill.official.top32_logits.f32.bin"))) {
                t.check(&tag(&format!("prefill.official(top32)[..{first_off}]")), &cmp_top32(&go, &ids, &v, vocab, first_off), 2e-3, 1e-4, true);
            }
            let mut cpu_off = CpuBackend::new(cpu_model.clone(), Options { qat: true });
            let co = cpu_off.forward(&toks, true).map_err(|e| anyhow!("{e}"))?;
            t.check(&tag(&format!("gpu-vs-cpu prefill.official[..{first_off}]")), &cmp(&go, &co, vocab, first_off), 2e-3, 1e-4, true);
            if let Some(w) = read_f32(&sd.join("decode.official.logits.f32.bin")) {
                let gdo = gpu_decode(&mut ref_off, &toks, prefix)?;
                let upto = first_off.saturating_sub(prefix - 1).min(nd);
                t.check(&tag("decode.official"), &cmp(&gdo, &w, vocab, upto), 2e-3, 1e-4, true);
            }
            // GPU vs CPU (exact numerics): prefill, chunked prefill, decode
            cpu.reset();
            let c_all = cpu.forward(&toks, true).map_err(|e| anyhow!("{e}"))?;
            t.check(&tag("gpu-vs-cpu prefill"), &cmp(&g1, &c_all, vocab, n), 2e-3, 1e-4, true);
            ref_chunk.reset().map_err(|e| anyhow!("{e}"))?;
            let gc = ref_chunk.prefill_all_logits(&toks).map_err(|e| anyhow!("{e}"))?;
            t.check(&tag("gpu-vs-cpu chunked(37)"), &cmp(&gc, &c_all, vocab, n), 2e-3, 1e-4, true);
            let cd = cpu_decode(&mut cpu, &toks, prefix)?;
            t.check(&tag("gpu-vs-cpu decode"), &cmp(&gd, &cd, vocab, nd), 2e-3, 1e-4, true);
            // payload round trip on the GPU: save after the prefix, reload, continue decoding
            ref_ex.reset().map_err(|e| anyhow!("{e}"))?;
            ref_ex.prefill(&toks[..prefix]).map_err(|e| anyhow!("{e}"))?;
            let pl = ref_ex.save_payload().map_err(|e| anyhow!("{e}"))?;
            ref_chunk.load_payload(&pl).map_err(|e| anyhow!("{e}"))?;
            let mut pr = ref_chunk.logits().map_err(|e| anyhow!("{e}"))?.to_vec();
            for &tk in &toks[prefix..] {
                ref_chunk.eval(tk).map_err(|e| anyhow!("{e}"))?;
                pr.extend_from_slice(ref_chunk.logits().map_err(|e| anyhow!("{e}"))?);
            }
            t.check(&tag("payload save/load + decode"), &cmp(&pr, &gd, vocab, nd), 1e-5, 1e-6, true);
            // cross-backend state through the engine's Backend trait: GPU prefix -> CPU decode,
            // CPU prefix -> GPU decode (payloads/snapshots are portable across backends)
            {
                let mut gb = CudaBackend::with_weights(cpu_model.clone(), cm.clone(), Options { qat: false }, 1024, Precision::Reference)
                    .map_err(|e| anyhow!("{e}"))?;
                gb.forward(&toks[..prefix], false).map_err(|e| anyhow!("{e}"))?;
                let st = gb.export_state();
                let mut cb = CpuBackend::new(cpu_model.clone(), Options { qat: false });
                cb.import_state(&st).map_err(|e| anyhow!("{e}"))?;
                let mut a = Vec::new();
                let mut b = Vec::new();
                cpu.reset();
                cpu.forward(&toks[..prefix], false).map_err(|e| anyhow!("{e}"))?;
                gb.import_state(&cpu.export_state()).map_err(|e| anyhow!("{e}"))?;
                for &tk in &toks[prefix..] {
                    a.extend(cb.forward(&[tk], false).map_err(|e| anyhow!("{e}"))?);
                    b.extend(gb.forward(&[tk], false).map_err(|e| anyhow!("{e}"))?);
                }
                t.check(&tag("state gpu->cpu decode"), &cmp(&a, &cd[vocab..], vocab, nd - 1), 2e-3, 1e-4, true);
                t.check(&tag("state cpu->gpu decode"), &cmp(&b, &cd[vocab..], vocab, nd - 1), 2e-3, 1e-4, true);
            }
            // official-mode state diagnostic: where do GPU and CPU KV rows part?
            if sname == "short" {
                let gst = ref_off.export_state().map_err(|e| anyhow!("{e}"))?;
                let mut co2 = CpuBackend::new(cpu_model.clone(), Options { qat: true });
                co2.forward(&toks, false).map_err(|e| anyhow!("{e}"))?;
                let cst = co2.export_state();
                let mut shown = 0;
                let mut nbad = 0;
                let mut mx = 0f32;
                for (l, (gl, cl)) in gst.layers.iter().zip(&cst.layers).enumerate() {
                    for (kind, gv, cv) in [("raw", &gl.raw, &cl.raw), ("comp", &gl.comp, &cl.comp), ("idx", &gl.idx, &cl.idx)] {
                        for (i, (x, y)) in gv.iter().zip(cv.iter()).enumerate() {
                            let dd = (x - y).abs();
                            mx = mx.max(dd);
                            if dd > 1e-3 * y.abs().max(1e-2) {
                                nbad += 1;
                                if shown < 4 {
                                    shown += 1;
                                    println!("INFO {} qat state diff: layer {l} {kind}[{i}] gpu={x:e} cpu={y:e}", tag(""));
                                }
                            }
                        }
                    }
                }
                println!("INFO {} qat state: max_abs={mx:.3e} elements_off={nbad}", tag(""));
            }
            // fast path deviation (informational)
            fast_ex.reset().map_err(|e| anyhow!("{e}"))?;
            let gf = fast_ex.prefill_all_logits(&toks).map_err(|e| anyhow!("{e}"))?;
            let (mx, kl, top1) = kl_top1(&g1, &gf, vocab);
            println!("INFO {} fast-vs-reference prefill: max_abs_dlogit={mx:.3e} mean_kl={kl:.3e} top1_agree={top1:.4}", tag(""));
        }
    }
    println!("{} passed, {} failed", t.pass, t.fail);
    if t.fail > 0 {
        return Err(anyhow!("{} checks failed", t.fail));
    }
    Ok(())
}
