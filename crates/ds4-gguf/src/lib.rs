//! GGUF v3 container (reader over mmap, streaming writer) and the GGML block formats
//! DeepSeek V4 Flash uses, with CPU dequantization and matvec kernels.

pub mod quant;
pub mod reader;
pub mod types;
pub mod writer;

pub use reader::{Gguf, GgufError, MetaValue, TensorInfo};
pub use types::GgmlType;
pub use writer::{GgufHeader, GgufWriter, Layout, TensorSpec, WriteError};
