//! Test support: scratch directories and synthetic DSV4 payloads laid out
//! exactly as KVCACHE.md §3 describes (independent of the engine).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ds4_kvcache::payload::compressor_state_bytes;
use ds4_kvcache::{CacheOptions, ModelShape, PayloadHeader};

/// A directory under the system temp dir, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "ds4-kvcache-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        Scratch(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Layout of the fixture models (6 layers: dense, dense, 4, 128, 4, 128).
pub fn fixture_shape(ctx: u32) -> ModelShape {
    ModelShape {
        head_dim: 80,
        indexer_dim: 32,
        vocab: 384,
        compress_ratios: vec![0, 0, 4, 128, 4, 128],
        prefill_chunk: if ctx > 2048 { 2048 } else { ctx },
        raw_window: ctx.min(128),
    }
}

/// Deterministic pseudo-random f32 bytes.
fn fill(out: &mut Vec<u8>, n_floats: u64, seed: &mut u64) {
    for _ in 0..n_floats {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let v = ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5;
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// A DSV4 payload for `tokens` written by a session of context `ctx`.
pub fn synth_payload(shape: &ModelShape, ctx: u32, tokens: &[u32], seed: u64) -> Vec<u8> {
    let t = tokens.len() as u32;
    let chunk = shape.prefill_chunk;
    let raw_cap = (((128 + chunk) + 255) / 256 * 256).min(8192);
    let h = PayloadHeader {
        ctx,
        prefill_chunk: chunk,
        raw_capacity: raw_cap,
        raw_window: shape.raw_window,
        comp_capacity: ctx / 4 + 2,
        tokens: t,
        n_layers: shape.compress_ratios.len() as u32,
        head_dim: shape.head_dim,
        indexer_dim: shape.indexer_dim,
        vocab: shape.vocab,
        raw_rows: shape.raw_window.min(raw_cap).min(t),
    };
    let mut s = seed | 1;
    let mut out = h.encode().to_vec();
    for &tok in tokens {
        out.extend_from_slice(&tok.to_le_bytes());
    }
    fill(&mut out, shape.vocab as u64, &mut s);
    let ratios = &shape.compress_ratios;
    let n_comp: Vec<u32> = ratios.iter().map(|&r| if r == 0 { 0 } else { t / r }).collect();
    let n_idx: Vec<u32> = ratios.iter().map(|&r| if r == 4 { t / 4 } else { 0 }).collect();
    for c in n_comp.iter().chain(n_idx.iter()) {
        out.extend_from_slice(&c.to_le_bytes());
    }
    let (d, di) = (shape.head_dim as u64, shape.indexer_dim as u64);
    for (l, &r) in ratios.iter().enumerate() {
        fill(&mut out, h.raw_rows as u64 * d, &mut s);
        if r != 0 {
            fill(&mut out, n_comp[l] as u64 * d, &mut s);
            fill(&mut out, 2 * compressor_state_bytes(shape.head_dim, r) / 4, &mut s);
        }
        if r == 4 {
            fill(&mut out, n_idx[l] as u64 * di, &mut s);
            fill(&mut out, 2 * compressor_state_bytes(shape.indexer_dim, r) / 4, &mut s);
        }
    }
    out
}

/// Token ids of a payload, parsed independently of the cache crate.
pub fn payload_tokens(p: &[u8]) -> Vec<u32> {
    let t = u32::from_le_bytes(p[28..32].try_into().unwrap()) as usize;
    (0..t).map(|i| u32::from_le_bytes(p[52 + 4 * i..56 + 4 * i].try_into().unwrap())).collect()
}

/// Captured log lines.
#[derive(Clone, Default)]
pub struct Logs(pub Arc<Mutex<Vec<String>>>);

impl Logs {
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn count(&self, needle: &str) -> usize {
        self.lines().iter().filter(|l| l.contains(needle)).count()
    }
    pub fn clear(&self) {
        self.0.lock().unwrap().clear()
    }
}

/// A settable clock.
#[derive(Clone)]
pub struct Clock(pub Arc<AtomicU64>);

impl Clock {
    pub fn new(t: u64) -> Clock {
        Clock(Arc::new(AtomicU64::new(t)))
    }
    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst)
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Options with captured logs, a settable clock and the fixture shape.
pub fn options(ctx: u32, min_tokens: u32, logs: &Logs, clock: &Clock) -> CacheOptions {
    let l = logs.0.clone();
    let c = clock.0.clone();
    let mut o = CacheOptions::default();
    o.policy.min_tokens = min_tokens;
    o.policy.cold_max_tokens = 0;
    o.budget_bytes = 0;
    o.model = Some(fixture_shape(ctx));
    o.log = Arc::new(move |m| l.lock().unwrap().push(m.to_string()));
    o.clock = Arc::new(move || c.load(Ordering::SeqCst));
    o
}
