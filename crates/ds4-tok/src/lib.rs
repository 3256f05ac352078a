//! DeepSeek V4 tokenizer (byte-level BPE from GGUF metadata, identical to the reference
//! `tokenizer.json`), chat rendering (SERVING.md §2-3) and DSML output parsing (SERVING.md §4).
//!
//! ```no_run
//! use ds4_tok::{chat, dsml, Chat, Message, ThinkingMode, Tokenizer};
//! let g = ds4_gguf::Gguf::open("ds4flash.gguf").unwrap();
//! let tok = Tokenizer::from_gguf(&g).unwrap();
//!
//! // Plain text (what tokenizer.json's default encode does) and a rendered chat prompt.
//! let ids = tok.encode("Hello world!");
//! let chat = Chat { messages: vec![Message::user("Hi")], tools: vec![], mode: ThinkingMode::High };
//! let prompt = chat.render(32768); // applies the Think Max context rule
//! let prompt_ids = tok.encode_chat(&prompt);
//!
//! // Streaming the answer: token bytes -> reasoning / content / tool-call events.
//! let mut parser = dsml::StreamParser::new(chat.mode.is_thinking(), !chat.tools.is_empty());
//! for id in [1234u32, 5678] {
//!     for ev in parser.push(tok.token_bytes(id).unwrap_or(b"")) {
//!         println!("{ev:?}");
//!     }
//! }
//! let end = parser.finish(); // end.parsed: reasoning, content, calls, raw DSML for tool memory
//! # let _ = (ids, prompt_ids, end);
//! ```

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
/// ds4's JSON string escaping (shared by the server's JSON writer and the CLI's dumps).
pub use json::{escape_into as json_escape_into, quote as json_quote};
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
