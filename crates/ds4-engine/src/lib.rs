//! ds4-engine: DeepSeek V4 Flash inference (MODEL.md).
//!
//! # API overview
//!
//! * [`Hparams::from_gguf`] — every dimension from GGUF metadata (validation policy in
//!   [`hparams`]).
//! * [`layout::expected_tensors`]`(&Hparams, Variant)` — the one tensor table (names, dims,
//!   accepted types; `types[0]` = the type to write for a variant); [`layout::check`] reports
//!   every mismatch; [`layout::expected_mtp_tensors`] for the MTP GGUF.
//! * [`Model::load`]`(path) -> Arc<Model>` / [`Model::from_gguf`] — bind a GGUF;
//!   [`model::MtpWeights::load`]`(path, &hp)` binds the optional MTP GGUF.
//! * [`Session`] — the inference session: [`Session::new`]`(model, ctx, Options { qat })` on the
//!   CPU reference backend, or [`Session::with_backend`]; `tokens()`, `logits()` (next-token
//!   logits), `sync(prompt, progress)` (extend the live prefix or rebuild; the progress callback
//!   returns false to cancel), `extend(tokens, all_logits, progress)` (chunked prefill, optionally
//!   returning every position's logits), `eval(token)`, `snapshot()` / `restore()`,
//!   `save_payload(&mut dyn Write)` / `load_payload(&mut dyn Read)` (ds4's DSV4 format,
//!   [`payload`]), `memory_bytes()` ([`session::memory_bytes`]`(hp, ctx)`).
//! * [`Backend`] — the small trait a backend implements (batch forward at the next positions
//!   returning logits, reset, export/import of the canonical [`KvState`]); [`CpuBackend`] is the
//!   float32 reference ([`cpu`], with decision traces for tests;
//!   `CpuBackend::with_q8_activations(true)` selects ds4's 8-bit-activation CPU numerics);
//!   `cuda` holds the GPU backend.
//! * [`backend_select`] — the backend rule shared by the CLI, the server and ds4-bench
//!   ([`BackendChoice`]: `--cpu` / `--cuda` / auto) and session construction over it:
//!   [`Device::open`]`(model, choice, progress)` (GPU upload on CUDA), `Device::session(ctx,
//!   &SessionConfig)`, or [`open_session`] for both at once.
//! * [`mtp`] — MTP speculative decoding: [`mtp::MtpDrafter`]`::new(model, weights, opts)` (the
//!   drafter block on the CPU), [`Session::enable_mtp`]`(drafter, SpecConfig)` (or
//!   `set_draft_hook` for tests), [`Session::eval_speculative`]`(token, max_new)` → the committed
//!   run, identical to plain greedy decoding; `spec_stats()`. Backends opt in through
//!   [`Backend::set_capture_hidden`] / `hidden` (drafter input) and `spec_mark` / `spec_rewind`
//!   (exact cheap rewind, MODEL.md §3.4; without them the session snapshots and replays).
//! * [`Options`]`{ qat }` — `qat: false` is the `--no-qat` diagnostic (no FP8 KV / indexer FP4
//!   rounding).
//! * [`ops`] — the primitive operations (norms, RoPE, Sinkhorn, FP8/FP4 round trips, Hadamard).

pub mod backend;
pub mod backend_select;
pub mod cpu;
pub mod hparams;
pub mod layout;
pub mod model;
pub mod mtp;
pub mod ops;
pub mod payload;
pub mod session;
pub mod state;
pub mod synth;
pub mod sampling;

pub use backend::{Backend, EngineError, Options};
pub use backend_select::{open_session, BackendChoice, Device, SessionConfig};
pub use cpu::CpuBackend;
pub use hparams::{Hparams, HparamsError};
pub use layout::{LayoutError, Mismatch, TensorKind, TensorSpec, Variant};
pub use model::{Mat, Model, ModelError};
pub use session::{Decoder, Progress, Run, Session, Snapshot, SyncOutcome};
pub use state::KvState;
pub mod cuda;
