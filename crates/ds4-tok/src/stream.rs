//! Streaming decode: turn token bytes into text without ever emitting part of a UTF-8 char.

use crate::tokenizer::Tokenizer;

/// Accumulates bytes and releases the longest prefix that is complete UTF-8. An incomplete
/// trailing sequence is held until more bytes arrive; a sequence that can never become valid
/// is released as U+FFFD (one per maximal invalid subpart, like `String::from_utf8_lossy`).
#[derive(Debug, Default, Clone)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add bytes; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut consumed = 0;
        let mut chunks = self.pending.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            out.push_str(chunk.valid());
            consumed += chunk.valid().len();
            let bad = chunk.invalid();
            if bad.is_empty() {
                continue;
            }
            // The last invalid part may just be a truncated char: hold it if it is a valid prefix.
            if chunks.peek().is_none() && is_incomplete_prefix(bad) {
                break;
            }
            out.push('\u{fffd}');
            consumed += bad.len();
        }
        self.pending.drain(..consumed);
        out
    }

    /// Bytes currently held back (an incomplete UTF-8 prefix, at most 3 bytes).
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// End of stream: releases what is held, lossily.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

/// True when `b` (1-3 bytes flagged invalid at the end of the input) could be completed.
fn is_incomplete_prefix(b: &[u8]) -> bool {
    let need = match b[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return false,
    };
    if b.len() >= need {
        return false;
    }
    // Second-byte ranges that keep the sequence well-formed (no overlongs, surrogates, > U+10FFFF).
    if b.len() >= 2 {
        let ok = match b[0] {
            0xe0 => (0xa0..=0xbf).contains(&b[1]),
            0xed => (0x80..=0x9f).contains(&b[1]),
            0xf0 => (0x90..=0xbf).contains(&b[1]),
            0xf4 => (0x80..=0x8f).contains(&b[1]),
            _ => (0x80..=0xbf).contains(&b[1]),
        };
        if !ok {
            return false;
        }
    }
    b.iter().skip(2).all(|&x| (0x80..=0xbf).contains(&x))
}

/// Token-level streaming decoder: `push(id)` returns the newly complete text.
#[derive(Debug, Default, Clone)]
pub struct StreamDecoder {
    utf8: Utf8Stream,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> String {
        match tok.token_bytes(id) {
            Some(b) => self.utf8.push(b),
            None => String::new(),
        }
    }

    /// Bytes held back so far.
    pub fn pending(&self) -> &[u8] {
        self.utf8.pending()
    }

    pub fn finish(&mut self) -> String {
        self.utf8.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_bytewise(input: &[u8]) -> String {
        let mut s = Utf8Stream::new();
        let mut out = String::new();
        for &b in input {
            let piece = s.push(&[b]);
            out.push_str(&piece);
        }
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn never_splits_chars_and_matches_lossy() {
        let cases: Vec<&[u8]> = vec![
            "héllo 中文 😀 ok".as_bytes(),
            b"\xff\xfe abc",
            b"a\xe4\xb8",
            b"\xe4\xb8\xe4\xb8\xad",
            b"\xf0\x9f\x98",
            b"\xed\xa0\x80x",
            b"\xc0\xafz",
            b"\xf4\x90\x80\x80",
        ];
        for c in cases {
            assert_eq!(feed_bytewise(c), String::from_utf8_lossy(c), "{c:?}");
            // Every intermediate output is whole chars: pending never exceeds 3 bytes.
            let mut s = Utf8Stream::new();
            for &b in c {
                let _ = s.push(&[b]);
                assert!(s.pending().len() <= 3);
            }
        }
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(b"\xf0\x9f"), "");
        assert_eq!(s.push(b"\x98"), "");
        assert_eq!(s.push(b"\x80!"), "😀!");
    }
}
