//! ds4-engine: DeepSeek V4 Flash inference (MODEL.md).
//!
//! # API overview
//!
//! * [`Hparams::from_gguf`] — every dimension from GGUF metadata (validation policy in
//!   [`hparams`]).
//! * [`layout::expected_tensors`]`(&Hparams, Variant)` — the one tensor table (names, dims,
//!   accepted types; `types[0]` = the type to write for a variant); [`layout::check`] reports
//!   every mismatch; [`layout::expected_mtp_tensors`] for the MTP GGUF.
//! * [`Model::load`]`(path) -> Arc<Model>` / [`Model::from_gguf`] — bind a GGUF.
//!
//! Further modules (forward pass, session, backend trait) are added as they land; see the
//! module docs.

pub mod backend;
pub mod cpu;
pub mod hparams;
pub mod layout;
pub mod model;
pub mod ops;
pub mod payload;
pub mod session;
pub mod state;
pub mod synth;
pub mod sampling;

pub use backend::{Backend, EngineError, Options};
pub use cpu::CpuBackend;
pub use hparams::{Hparams, HparamsError};
pub use layout::{LayoutError, Mismatch, TensorKind, TensorSpec, Variant};
pub use model::{Mat, Model, ModelError};
pub use session::{Progress, Session, Snapshot, SyncOutcome};
pub use state::KvState;
pub mod cuda;
