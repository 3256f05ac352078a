//! Save → (new process) → load through the disk cache with the real CPU
//! forward pass on a fixture model: the loaded logits equal a fresh prefill's
//! bit for bit, and decoding continues bit-identically.

mod common;
#[path = "common/dsv4.rs"]
mod dsv4;

use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use ds4_engine::{Backend, CpuBackend, Model, Options};
use ds4_kvcache::{DiskCache, EngineInfo, KeyKind, ModelShape, PayloadWriter, SaveReason, StoreRequest};

const CTX: u32 = 4096;

fn fixtures() -> PathBuf {
    std::env::var_os("DS4_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model")))
}

fn tokens(model: &str, seq: &str) -> Vec<u32> {
    let b = std::fs::read(fixtures().join(model).join(seq).join("tokens.i32.bin")).unwrap();
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect()
}

fn shape(m: &Model) -> ModelShape {
    let hp = &m.hp;
    ModelShape {
        head_dim: hp.head_dim as u32,
        indexer_dim: hp.idx_head_dim as u32,
        vocab: hp.n_vocab as u32,
        compress_ratios: hp.compress_ratios.iter().map(|&r| r as u32).collect(),
        prefill_chunk: dsv4::prefill_chunk(CTX),
        raw_window: (hp.sliding_window as u32).min(CTX),
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Cache text for a token prefix: any injective rendering works for the test.
fn text_of(toks: &[u32]) -> Vec<u8> {
    toks.iter().map(|t| format!("<{t}>")).collect::<String>().into_bytes()
}

fn round_trip(model_name: &str, seq: &str, split: usize, more: usize) {
    let model: Arc<Model> = Model::load(fixtures().join(model_name).join("model.gguf")).unwrap();
    let hp = model.hp.clone();
    let all = tokens(model_name, seq);
    assert!(split + more <= all.len());
    let (prefix, suffix) = (&all[..split], &all[split..split + more]);
    let dir = Scratch::new("engine");
    let (logs, clock) = (Logs::default(), Clock::new(1_000));
    let mut opts = options(CTX, 1, &logs, &clock);
    opts.model = Some(shape(&model));
    let eng = EngineInfo { quant_bits: 4, ctx: CTX };

    // Writer: prefill the prefix and save (reason evict, as on a live miss).
    {
        let cache = DiskCache::open(dir.path(), opts.clone()).unwrap();
        let mut a = CpuBackend::new(model.clone(), Options::default());
        let logits = a.forward(prefix, false).unwrap();
        let payload = dsv4::save(&a.export_state(), &hp, CTX, prefix, &logits);
        let text = text_of(prefix);
        cache
            .store(
                &StoreRequest {
                    reason: SaveReason::Evict,
                    tokens: prefix,
                    live_tokens: prefix,
                    original_len: prefix.len(),
                    text: &text,
                    key_kind: KeyKind::TokenText,
                    engine: eng,
                    tool_map: &[],
                },
                PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
            )
            .unwrap();
    }

    // Reader: a new cache object (restart), a fresh session.
    let cache = DiskCache::open(dir.path(), opts).unwrap();
    let mut b = CpuBackend::new(model.clone(), Options::default());
    let mut loaded_logits = Vec::new();
    let prompt = text_of(&all[..split + more]);
    let lk = cache.load(&prompt, eng, |r, _| {
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        let mut st = b.export_state();
        let (toks, logits) = dsv4::load(&bytes, &hp, CTX, &mut st)?;
        b.import_state(&st).map_err(|e| e.to_string())?;
        loaded_logits = logits;
        Ok(toks)
    });
    let hit = lk.hit.expect("checkpoint must load");
    assert_eq!(hit.tokens, prefix);
    assert_eq!(hit.text_len, text_of(prefix).len());
    assert_eq!(b.pos(), split);

    // Reference: a fresh prefill of the same prefix.
    let mut c = CpuBackend::new(model.clone(), Options::default());
    let fresh = c.forward(prefix, false).unwrap();
    assert_eq!(bits(&loaded_logits), bits(&fresh), "loaded logits differ from a fresh prefill");
    assert_eq!(b.export_state(), c.export_state(), "loaded state differs from a fresh prefill");
    // Continue both: the suffix (effective prompt = hit.tokens + suffix tokens).
    let lb = b.forward(suffix, true).unwrap();
    let lc = c.forward(suffix, true).unwrap();
    assert_eq!(bits(&lb), bits(&lc), "decoding after load diverges");
}

#[test]
fn tiny_f32_medium_split_inside_windows() {
    // 203: not a multiple of 4 or 128, beyond the 128-row raw window.
    round_trip("tiny-f32", "medium", 203, 9);
}

#[test]
fn tiny_f32_short_prefix_below_raw_window() {
    let n = tokens("tiny-f32", "short").len();
    round_trip("tiny-f32", "short", n - 3, 3);
}

#[test]
fn t256_q4_long_past_a_ratio_128_row() {
    // 261: two ratio-128 rows closed, partial third window carried over.
    round_trip("t256-q4", "long", 261, 5);
}
