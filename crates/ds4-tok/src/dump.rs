//! `--dump-tokens` output.

use crate::tokenizer::Tokenizer;
use std::fmt::Write;

/// A JSON string literal (with quotes) holding arbitrary bytes, reversibly.
///
/// Valid UTF-8 is written as is, except `"` `\` and control chars (U+0000-U+001F, U+007F),
/// which are escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else `\u00XX`). A byte that is not part of a
/// valid UTF-8 sequence (including a char cut by a token boundary) is written as a lone low
/// surrogate `\udcXX` (XX = the byte, lowercase hex). Valid text never contains surrogates, so
/// this is unambiguous; it is Python's "surrogateescape" convention:
/// `json.loads(s).encode("utf-8", "surrogateescape")` gives the bytes back.
pub fn json_bytes_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            let _ = write!(out, "\\udc{b:02x}");
        }
    }
    out.push('"');
    out
}

/// One line per token: the id, a TAB, the token's bytes as [`json_bytes_string`].
pub fn dump_tokens(tok: &Tokenizer, ids: &[u32]) -> String {
    let mut out = String::new();
    for &id in ids {
        let _ = writeln!(out, "{id}\t{}", json_bytes_string(tok.token_bytes(id).unwrap_or(b"")));
    }
    out
}

/// `--dump-tokens` for a prompt read byte for byte: the plain entry point, or with `chat` the
/// rendered-chat one (invalid UTF-8 handled as in `Tokenizer::encode_bytes`).
pub fn dump_prompt(tok: &Tokenizer, prompt: &[u8], chat: bool) -> String {
    let ids = if chat { tok.encode_chat_bytes(prompt) } else { tok.encode_bytes(prompt) };
    dump_tokens(tok, &ids)
}

/// ds4's own format (CLI.md §5.1): a line `[id, id, ...]`, then per token the id right-aligned in
/// six columns, two spaces and the vocabulary string (byte-level form, e.g. `Ġ` for a space;
/// added tokens verbatim).
pub fn dump_tokens_ds4(tok: &Tokenizer, ids: &[u32]) -> String {
    let mut out = String::from("[");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{id}");
    }
    out.push_str("]\n");
    for &id in ids {
        let _ = writeln!(out, "{id:>6}  {}", tok.token_text(id).unwrap_or(""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(json_bytes_string(b"a\"\\\n\x01\x7f"), r#""a\"\\\n\u0001\u007f""#);
        assert_eq!(json_bytes_string("é中".as_bytes()), "\"é中\"");
        assert_eq!(json_bytes_string(b"\xe4\xb8"), r#""\udce4\udcb8""#);
        assert_eq!(json_bytes_string(b"x\xff\xc3\xa9"), r#""x\udcffé""#);
    }
}
