//! ds4-server: OpenAI- and Anthropic-compatible HTTP server for DeepSeek V4
//! Flash (spec: SERVING.md).
//!
//! Layout: [`config`] flags → [`http`] (routing, limits, request preparation
//! on the client task) → one [`worker`] thread owning the engine session
//! (reuse ladder, decoding, SSE via [`format`]). [`request`] normalises every
//! API into one [`request::GenRequest`]; [`output`] splits generated text;
//! [`toolmem`] keeps sampled DSML for exact replay. [`backend`] picks the
//! CPU or CUDA session; with `--kv-disk-dir` the worker checkpoints to and
//! resumes from `ds4_kvcache::DiskCache` (evict on a live miss, cold,
//! continued and shutdown saves; tool-id maps imported before rendering).
//! With `--mtp` (CPU backend) greedy requests decode speculatively through
//! the engine session: runs of agreed MTP drafts, cut at stop strings, tool
//! ends and checkpoint frontiers, so output and live state are plain decoding's.

pub mod backend;
pub mod config;
pub mod engine;
pub mod error;
pub mod format;
pub mod http;
pub mod ids;
pub mod json;
#[macro_use]
pub mod log;
pub mod output;
pub mod real;
pub mod request;
pub mod server;
pub mod stops;
pub mod toolmem;
pub mod worker;
