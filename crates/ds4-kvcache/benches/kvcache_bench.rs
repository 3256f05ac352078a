//! Disk-cache throughput: store and load MB/s of a checkpoint of the real
//! DeepSeek V4 Flash payload size (43 layers, 512/128 dims, 129280 vocab).
//!
//! Then, on the largest fixture model, the time a disk hit saves against
//! re-prefilling the same prefix with the CPU forward pass.
//!
//! `cargo bench -p ds4-kvcache` (env `KVC_BENCH_TOKENS`, default 8192;
//! `KVC_BENCH_DIR` for the directory, default the system temp dir;
//! `DS4_FIXTURES` for the fixture models).

use std::time::Instant;

#[path = "../tests/common/dsv4.rs"]
mod dsv4;

use ds4_kvcache::payload::{compressor_state_bytes, PayloadHeader};
use ds4_kvcache::{CacheOptions, DiskCache, EngineInfo, KeyKind, ModelShape, PayloadWriter, SaveReason, StoreRequest};

fn real_shape() -> ModelShape {
    ModelShape {
        head_dim: 512,
        indexer_dim: 128,
        vocab: 129280,
        compress_ratios: (0..43).map(|l| if l < 2 { 0 } else if l % 2 == 0 { 4 } else { 128 }).collect(),
        prefill_chunk: 2048,
        raw_window: 128,
    }
}

/// A structurally valid payload (values are arbitrary: throughput only).
fn payload(shape: &ModelShape, ctx: u32, t: u32) -> Vec<u8> {
    let raw_cap = 2304;
    let h = PayloadHeader {
        ctx,
        prefill_chunk: shape.prefill_chunk,
        raw_capacity: raw_cap,
        raw_window: 128,
        comp_capacity: ctx / 4 + 2,
        tokens: t,
        n_layers: 43,
        head_dim: 512,
        indexer_dim: 128,
        vocab: shape.vocab,
        raw_rows: 128.min(t),
    };
    let mut out = h.encode().to_vec();
    let ratios = &shape.compress_ratios;
    let n_comp: Vec<u32> = ratios.iter().map(|&r| if r == 0 { 0 } else { t / r }).collect();
    let n_idx: Vec<u32> = ratios.iter().map(|&r| if r == 4 { t / 4 } else { 0 }).collect();
    let mut len = h.counts_offset() as usize + 8 * 43;
    for (l, &r) in ratios.iter().enumerate() {
        len += 4 * h.raw_rows as usize * 512;
        if r != 0 {
            len += 4 * n_comp[l] as usize * 512 + 2 * compressor_state_bytes(512, r) as usize;
        }
        if r == 4 {
            len += 4 * n_idx[l] as usize * 128 + 2 * compressor_state_bytes(128, 4) as usize;
        }
    }
    out.extend((0..t).flat_map(|i| (i % 129280).to_le_bytes()));
    out.resize(h.counts_offset() as usize, 0x3f);
    for c in n_comp.iter().chain(&n_idx) {
        out.extend_from_slice(&c.to_le_bytes());
    }
    // Non-constant filler so no layer of the stack can shortcut zero pages.
    let mut x: u32 = 0x1234_5678;
    out.resize_with(len, || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as u8
    });
    out
}

fn main() {
    throughput();
    reprefill();
}

fn throughput() {
    let t: u32 = std::env::var("KVC_BENCH_TOKENS").ok().and_then(|s| s.parse().ok()).unwrap_or(8192);
    let base = std::env::var_os("KVC_BENCH_DIR").map(Into::into).unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("ds4-kvcache-bench-{}", std::process::id()));
    let ctx = 32768u32.max(t + 1);
    let shape = real_shape();
    let p = payload(&shape, ctx, t);
    let text = vec![b'x'; 4 * t as usize];
    let tokens: Vec<u32> = (0..t).collect();
    let mut opts = CacheOptions { budget_bytes: 0, model: Some(shape.clone()), ..CacheOptions::default() };
    opts.policy.min_tokens = 1;
    opts.log = std::sync::Arc::new(|_| {});
    let cache = DiskCache::open(&dir, opts).expect("open cache dir");
    let eng = EngineInfo { quant_bits: 2, ctx };
    let mb = p.len() as f64 / 1e6;
    println!("checkpoint: {t} tokens, payload {mb:.1} MB ({:.2} KiB/token incl. fixed part)", p.len() as f64 / 1024.0 / t as f64);
    let reps = 3;
    let (mut best_save, mut best_load) = (f64::MAX, f64::MAX);
    for i in 0..reps {
        // Distinct text per rep so every store writes a new file.
        let mut tx = text.clone();
        tx[0] = b'a' + i as u8;
        let t0 = Instant::now();
        let st = cache
            .store(
                &StoreRequest {
                    reason: SaveReason::Continued,
                    tokens: &tokens,
                    live_tokens: &tokens,
                    original_len: tokens.len(),
                    text: &tx,
                    key_kind: KeyKind::TokenText,
                    engine: eng,
                    tool_map: &[],
                },
                PayloadWriter { len: p.len() as u64, write: &mut |w| w.write_all(&p) },
            )
            .expect("store");
        best_save = best_save.min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let mut sink = vec![0u8; 0];
        let lk = cache.load(&tx, eng, |r, _| {
            sink.clear();
            sink.reserve(p.len());
            r.read_to_end(&mut sink).map_err(|e| e.to_string())?;
            Ok(tokens.clone())
        });
        best_load = best_load.min(t0.elapsed().as_secs_f64());
        assert!(lk.hit.is_some() && sink == p);
        let _ = std::fs::remove_file(st.path);
    }
    println!("save: {:.1} ms  {:.0} MB/s (best of {reps}; buffered write, no fsync)", best_save * 1e3, mb / best_save);
    println!("load: {:.1} ms  {:.0} MB/s (best of {reps}; lookup + verify + read into memory, page cache warm)", best_load * 1e3, mb / best_load);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Disk hit (store once, then lookup + read + restore) vs a fresh prefill.
fn reprefill() {
    use ds4_engine::{Backend, CpuBackend, Model, Options};
    let fixtures = std::env::var_os("DS4_FIXTURES").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model"))
    });
    // Largest fixture GGUF (real 129280-token vocabulary).
    let name = "vocab-f16";
    let Ok(model) = Model::load(fixtures.join(name).join("model.gguf")) else {
        println!("re-prefill comparison skipped: fixture model {name} not found");
        return;
    };
    let hp = model.hp.clone();
    let b = std::fs::read(fixtures.join(name).join("long/tokens.i32.bin")).expect("fixture tokens");
    let toks: Vec<u32> = b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect();
    let ctx = 4096u32;
    let dir = std::env::temp_dir().join(format!("ds4-kvcache-bench-rp-{}", std::process::id()));
    let mut opts = CacheOptions { budget_bytes: 0, ..CacheOptions::default() };
    opts.policy.min_tokens = 1;
    opts.log = std::sync::Arc::new(|_| {});
    let cache = DiskCache::open(&dir, opts).expect("open cache dir");
    let eng = EngineInfo { quant_bits: 2, ctx };
    let text: Vec<u8> = toks.iter().flat_map(|t| t.to_le_bytes()).collect();

    let t0 = Instant::now();
    let mut a = CpuBackend::new(model.clone(), Options::default());
    let logits = a.forward(&toks, false).expect("prefill");
    let prefill = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let payload = dsv4::save(&a.export_state(), &hp, ctx, &toks, &logits);
    cache
        .store(
            &StoreRequest {
                reason: SaveReason::Evict,
                tokens: &toks,
                live_tokens: &toks,
                original_len: toks.len(),
                text: &text,
                key_kind: KeyKind::TokenText,
                engine: eng,
                tool_map: &[],
            },
            PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
        )
        .expect("store");
    let save = t0.elapsed().as_secs_f64();
    let mut best_load = f64::MAX;
    for _ in 0..3 {
        let t0 = Instant::now();
        let mut bk = CpuBackend::new(model.clone(), Options::default());
        let lk = cache.load(&text, eng, |r, _| {
            let mut bytes = Vec::new();
            r.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
            let mut st = bk.export_state();
            let (t, _) = dsv4::load(&bytes, &hp, ctx, &mut st)?;
            bk.import_state(&st).map_err(|e| e.to_string())?;
            Ok(t)
        });
        assert!(lk.hit.is_some());
        best_load = best_load.min(t0.elapsed().as_secs_f64());
    }
    println!(
        "{name}: {} tokens, payload {:.2} MB: prefill {:.1} ms, save {:.1} ms, load+restore {:.1} ms -> disk hit saves {:.1} ms ({:.1}x faster)",
        toks.len(),
        payload.len() as f64 / 1e6,
        prefill * 1e3,
        save * 1e3,
        best_load * 1e3,
        (prefill - best_load) * 1e3,
        prefill / best_load
    );
    let _ = std::fs::remove_dir_all(&dir);
}
