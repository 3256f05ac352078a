//! # ds4-kvcache — on-disk KV checkpoint cache (spec: KVCACHE.md)
//!
//! Checkpoint files are byte-compatible with ds4's: `<dir>/<sha1(text)>.kv`
//! holding a 48-byte `KVC` header, `u32 text_len`, the cache text, the
//! engine's DSV4 session payload (opaque here, only its header is checked)
//! and an optional `KTM` tool-id map trailer. All integers little-endian.
//!
//! ## API for the server (SERVING.md §6.2 / §7.1 step 8)
//!
//! ```text
//! // startup (flags: #[command(flatten)] kv: KvCacheArgs, and ToolReplayArgs
//! // unless the server defines --tool-memory-max-ids itself)
//! let cache: Option<DiskCache> = DiskCache::from_args(&kv, &tools, Some(model_shape), Some(log))?;
//! let eng = EngineInfo { quant_bits: 2 or 4, ctx: session ctx };
//!
//! // before rendering a request that carries tool-call ids
//! for e in cache.import_tool_ids(&ids) { tool_memory.put_disk(e.id, e.dsml) }
//!
//! // live-session miss (no live reuse, cached == 0):
//! cache.reset_continued();
//! if cache.policy().should_save_live(live.len()) {          // §4.3 evict
//!     let (kind, text) = live_key_source(live.len(), responses, thinking)
//!                          .unwrap_or((KeyKind::TokenText, &decoded_live_bytes));
//!     cache.store(&StoreRequest { reason: SaveReason::Evict, tokens: live, live_tokens: live,
//!                                 original_len: live.len(), text, key_kind: kind, engine: eng,
//!                                 tool_map: &dsml::tool_map_for_text(text, |b| memory.ids_for(b)) },
//!                 PayloadWriter { len: session.payload_len(), write: &mut |w| session.save_payload(w) });
//! }
//! let lk = cache.load(rendered.as_bytes(), eng, |r, _hdr| {
//!     session.load_payload(r).map_err(|e| e.to_string())?;  // engine validates (KVCACHE.md §3)
//!     Ok(session.tokens().to_vec())
//! });
//! match lk.hit {
//!     Some(hit) => effective = hit.tokens + tok.encode_chat(&rendered[hit.text_len..]), cached = hit.tokens.len(),
//!     None => { if lk.session_invalidated { /* live state is empty */ } cold prefill from 0 }
//! }
//!
//! // cold save (§4.1): after the miss, on the effective prompt
//! if let Some(n) = cache.policy().cold_store_len(&prompt, cached, Some(user_id), Some(asst_id)) {
//!     let sup = cache.suppress_continued(n);
//!     sync(prompt[..n]); store(reason Cold, tokens = &prompt[..n], original_len = prompt.len());
//!     on Ok → cache.note_store(n) else cache.restore_continued(sup);   then sync the rest
//! }
//! // continued (§4.2): after each prefill chunk and before each decode step,
//! // unless inside a DSML tool block:
//! if let Some(n) = cache.continued_target(session.tokens().len()) { store(Continued, ...); on Ok note_store(n) }
//! // clean shutdown after the queue drained: same as evict with SaveReason::Shutdown.
//! ```
//!
//! Every method handles file-system trouble itself: corrupt files are
//! deleted with one log line, foreign-version / other-model files and
//! payloads the engine rejected are logged once and never retried, and the
//! directory may vanish at any time (stores recreate it). Nothing panics on
//! file contents.
//!
//! Module map: [`format`] (bytes of the file), [`payload`] (DSV4 header and
//! section-size check), [`policy`] (flags, when/what to save, budget, eviction
//! score), [`dsml`] (DSML blocks for the tool map), [`cache`] (the directory).

pub mod cache;
pub mod dsml;
pub mod format;
pub mod payload;
pub mod policy;

pub use cache::{CacheOptions, ClockFn, DiskCache, EngineInfo, Entry, Hit, LogFn, Lookup, PayloadWriter, StoreRequest, Stored};
pub use format::{sha1_hex, KeyKind, KvcHeader, SaveReason, ToolMapEntry};
pub use payload::{ModelShape, PayloadHeader};
pub use policy::{live_key_source, ContinuedSchedule, KvCacheArgs, Policy, Suppression, ToolReplayArgs};
