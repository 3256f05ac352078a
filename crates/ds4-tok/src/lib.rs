//! DeepSeek V4 tokenizer (byte-level BPE from GGUF metadata, identical to the reference
//! `tokenizer.json`), chat rendering (SERVING.md §2-3) and DSML output parsing (SERVING.md §4).

mod bytelevel;
pub mod chat;
pub mod dsml;
mod dump;
mod json;
mod pretok;
mod stream;
mod tokenizer;
mod unicode;
mod unicode_tables;

pub use bytelevel::{byte_to_char, bytes_to_vocab_string};
pub use chat::{Chat, Message, Role, ThinkingMode, ToolCall};
pub use dump::{dump_prompt, dump_tokens, dump_tokens_ds4, json_bytes_string};
pub use stream::{StreamDecoder, Utf8Stream};
pub use tokenizer::{
    SpecialTokens, TokError, Tokenizer, ASSISTANT, BOS, DSML, EOS, SERVING_SPECIALS, THINK, THINK_END, USER,
};

/// Pre-tokenizer pieces of `text` (no added-token matching), exposed for tests and tools.
pub fn pretokenize(text: &str) -> Vec<&str> {
    let mut v = Vec::new();
    pretok::pretokenize(text, &mut |p: &str| v.push(p));
    v
}
