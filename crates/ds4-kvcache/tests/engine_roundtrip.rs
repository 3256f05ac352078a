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

/// The server's live-miss path (SERVING.md §7.1 step 8 + KVCACHE.md §4) in
/// miniature, driving the real forward pass: one live session, a disk cache.
struct MiniServer {
    model: Arc<Model>,
    live: CpuBackend,
    live_tokens: Vec<u32>,
    logits: Vec<f32>,
    cache: DiskCache,
}

impl MiniServer {
    fn eng() -> EngineInfo {
        EngineInfo { quant_bits: 4, ctx: CTX }
    }

    fn save(&mut self, reason: SaveReason, n: usize, original_len: usize) -> bool {
        let toks = self.live_tokens[..n].to_vec();
        let payload = dsv4::save(&self.live.export_state(), &self.model.hp, CTX, &toks, &self.logits);
        let text = text_of(&toks);
        self.cache
            .store(
                &StoreRequest {
                    reason,
                    tokens: &toks,
                    live_tokens: &self.live_tokens,
                    original_len,
                    text: &text,
                    key_kind: KeyKind::TokenText,
                    engine: Self::eng(),
                    tool_map: &[],
                },
                PayloadWriter { len: payload.len() as u64, write: &mut |w| w.write_all(&payload) },
            )
            .is_ok()
    }

    fn extend(&mut self, toks: &[u32]) {
        if !toks.is_empty() {
            self.logits = self.live.forward(toks, false).unwrap();
            self.live_tokens.extend_from_slice(toks);
        }
    }

    /// Returns the cached token count (the `cached_tokens` a client sees).
    fn request(&mut self, prompt: &[u32]) -> usize {
        let mut cached = 0;
        let live_len = self.live_tokens.len();
        if live_len > 0 && prompt.starts_with(&self.live_tokens) {
            cached = live_len; // memory-token reuse
        } else {
            self.cache.reset_continued();
            if self.cache.policy().should_save_live(live_len) {
                self.save(SaveReason::Evict, live_len, live_len);
            }
            let hp = self.model.hp.clone();
            let mut fresh = CpuBackend::new(self.model.clone(), Options::default());
            let mut restored = None;
            let lk = self.cache.load(&text_of(prompt), Self::eng(), |r, _| {
                let mut bytes = Vec::new();
                r.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
                let mut st = fresh.export_state();
                let (toks, logits) = dsv4::load(&bytes, &hp, CTX, &mut st)?;
                fresh.import_state(&st).map_err(|e| e.to_string())?;
                restored = Some((toks.clone(), logits));
                Ok(toks)
            });
            self.live = fresh;
            self.live_tokens.clear();
            if let (Some(hit), Some((toks, logits))) = (lk.hit, restored) {
                cached = hit.tokens.len();
                self.live_tokens = toks;
                self.logits = logits;
            } else {
                self.live.reset();
            }
        }
        // Cold save of a first prompt (§4.1), then the rest of the prefill.
        if let Some(n) = self.cache.policy().cold_store_len(prompt, cached as u32, None, None) {
            let n = n as usize;
            let sup = self.cache.suppress_continued(n as u32);
            self.extend(&prompt[self.live_tokens.len()..n]);
            if self.save(SaveReason::Cold, n, prompt.len()) {
                self.cache.note_store(n as u32);
            } else {
                self.cache.restore_continued(sup);
            }
        }
        let done = self.live_tokens.len();
        self.extend(&prompt[done..]);
        cached
    }
}

#[test]
fn session_switch_resumes_conversation_from_disk() {
    // Conversation A, then an unrelated B (A is evicted to disk), then A
    // again: it resumes from the disk checkpoint, and the logits equal a
    // fresh prefill of the whole prompt bit for bit.
    let name = "t256-q4";
    let model: Arc<Model> = Model::load(fixtures().join(name).join("model.gguf")).unwrap();
    let a_all = tokens(name, "long");
    let b_all = tokens(name, "medium");
    let dir = Scratch::new("switch");
    let (logs, clock) = (Logs::default(), Clock::new(1_000));
    let mut opts = options(CTX, 64, &logs, &clock);
    opts.model = Some(shape(&model));
    opts.policy.cold_max_tokens = 2000;
    opts.policy.boundary_trim_tokens = 8;
    opts.policy.boundary_align_tokens = 64;
    let mut srv = MiniServer {
        model: model.clone(),
        live: CpuBackend::new(model.clone(), Options::default()),
        live_tokens: Vec::new(),
        logits: Vec::new(),
        cache: DiskCache::open(dir.path(), opts).unwrap(),
    };
    // A: cold prompt of 300 tokens → cold checkpoint at stable(300) = 256.
    assert_eq!(srv.request(&a_all[..300]), 0);
    assert_eq!(logs.count("reason=cold"), 1);
    // The same conversation continues from memory.
    assert_eq!(srv.request(&a_all[..340]), 300);
    // B: live miss → A (340 tokens) saved as evict; B's own cold save.
    assert_eq!(srv.request(&b_all[..200]), 0);
    assert_eq!(logs.count("kv cache stored tokens=340 trimmed=0 reason=evict"), 1);
    // A again, one more turn: resumes from A's 340-token evict dump.
    let prompt = &a_all[..400];
    assert_eq!(srv.request(prompt), 340);
    assert_eq!(logs.count("kv cache hit text tokens=340"), 1);
    let mut fresh = CpuBackend::new(model.clone(), Options::default());
    let want = fresh.forward(prompt, false).unwrap();
    assert_eq!(bits(&srv.logits), bits(&want));
    // An unrelated restart: the cold anchor of A serves a new conversation
    // that shares its first 256 tokens.
    let mut other = a_all[..256].to_vec();
    other.extend_from_slice(&b_all[..50]);
    let cache2 = DiskCache::open(dir.path(), srv.cache.options().clone()).unwrap();
    srv.cache = cache2;
    srv.live = CpuBackend::new(model.clone(), Options::default());
    srv.live_tokens.clear();
    assert_eq!(srv.request(&other), 256);
}
