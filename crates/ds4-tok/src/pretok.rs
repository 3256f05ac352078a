//! DeepSeek V4 pre-tokenizer, hand-written. The reference is a sequence of three regex splits
//! (behaviour "Isolated": matches and the gaps between them both become pieces), each applied to
//! every piece the previous one produced, so a later regex never sees across an earlier boundary
//! and its end-of-input is the end of the piece:
//!
//! 1. `\p{N}{1,3}`
//! 2. `[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+`
//! 3. `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//!    ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! Regex 3 is an ordered alternation with backtracking; `match_main` resolves every alternative
//! to the span the backtracking engine would settle on (see the comments there).

use crate::unicode::{class_of, decode_at, is_cjk_split, LETTER, MARK, NUMBER, PUNCT, SPACE, SYMBOL};

/// Split `text` into pre-tokenizer pieces, in order. Empty pieces are never emitted.
#[inline]
pub fn pretokenize<'a, F: FnMut(&'a str)>(text: &'a str, f: &mut F) {
    split_digits(text, &mut |p: &'a str| split_cjk(p, &mut |q: &'a str| split_main(q, f)));
}

#[inline(always)]
fn class_at(b: &[u8], i: usize) -> (u8, u32, usize) {
    let (cp, n) = decode_at(b, i);
    (class_of(cp), cp, n)
}

/// Regex 1: runs of `\p{N}` cut into chunks of at most three chars, left to right.
fn split_digits<'a, F: FnMut(&'a str)>(s: &'a str, f: &mut F) {
    split_runs(s, f, |cp| class_of(cp) == NUMBER, 3);
}

/// Regex 2: maximal runs of CJK ideographs / kana.
fn split_cjk<'a, F: FnMut(&'a str)>(s: &'a str, f: &mut F) {
    // Fast path: CJK chars are 3-byte sequences starting with 0xe3..0xe9.
    if !s.bytes().any(|x| (0xe3..=0xe9).contains(&x)) {
        f(s);
        return;
    }
    split_runs(s, f, is_cjk_split, usize::MAX);
}

/// An "Isolated" split on runs of chars satisfying `member`, each run cut into chunks of at
/// most `max` chars from the left: the chunks and the gaps between them become pieces.
#[inline(always)]
fn split_runs<'a, F: FnMut(&'a str)>(s: &'a str, f: &mut F, member: impl Fn(u32) -> bool, max: usize) {
    let b = s.as_bytes();
    let (mut i, mut gap) = (0, 0);
    while i < b.len() {
        let (cp, n) = decode_at(b, i);
        if !member(cp) {
            i += n;
            continue;
        }
        if gap < i {
            f(&s[gap..i]);
        }
        let start = i;
        i += n;
        let mut len = 1;
        while len < max && i < b.len() {
            let (cp, n) = decode_at(b, i);
            if !member(cp) {
                break;
            }
            i += n;
            len += 1;
        }
        f(&s[start..i]);
        gap = i;
    }
    if gap < b.len() {
        f(&s[gap..]);
    }
}

/// Regex 3 over one piece. Chars where no alternative matches accumulate into gap pieces.
fn split_main<'a, F: FnMut(&'a str)>(s: &'a str, f: &mut F) {
    let b = s.as_bytes();
    let (mut p, mut gap) = (0, 0);
    while p < b.len() {
        let (c0, cp0, l0) = class_at(b, p);
        match match_main(b, p, c0, cp0, l0) {
            Some(e) => {
                if gap < p {
                    f(&s[gap..p]);
                }
                f(&s[p..e]);
                p = e;
                gap = e;
            }
            None => p += l0,
        }
    }
    if gap < b.len() {
        f(&s[gap..]);
    }
}

#[inline(always)]
fn is_lm(c: u8) -> bool {
    c == LETTER || c == MARK
}

#[inline(always)]
fn is_ps(c: u8) -> bool {
    c == PUNCT || c == SYMBOL
}

/// End of the run of chars whose class satisfies `pred`, starting at `i`.
#[inline(always)]
fn run_end(b: &[u8], mut i: usize, pred: impl Fn(u8) -> bool) -> usize {
    while i < b.len() {
        let (c, _, n) = class_at(b, i);
        if !pred(c) {
            break;
        }
        i += n;
    }
    i
}

/// End of the regex-3 match starting at byte `p` (whose char has class `c0`, code point `cp0`,
/// length `l0`), or None if no alternative matches there.
#[inline(always)]
fn match_main(b: &[u8], p: usize, c0: u8, cp0: u32, l0: usize) -> Option<usize> {
    let n = b.len();
    // A: one ASCII punctuation char, then ASCII letters (greedy, at least one).
    if cp0 < 0x80 && (cp0 as u8).is_ascii_punctuation() {
        let mut q = p + 1;
        while q < n && b[q].is_ascii_alphabetic() {
            q += 1;
        }
        if q > p + 1 {
            return Some(q);
        }
    }
    // B: optional prefix char from [^\r\n\p{L}\p{P}\p{S}], then [\p{L}\p{M}]+. The optional
    // prefix is tried first; if letters do not follow it, backtracking retries without it (which
    // still matches when the char is itself a mark).
    let prefix_ok = cp0 != '\r' as u32 && cp0 != '\n' as u32 && c0 != LETTER && c0 != PUNCT && c0 != SYMBOL;
    if prefix_ok && p + l0 < n {
        let (c1, _, _) = class_at(b, p + l0);
        if is_lm(c1) {
            return Some(run_end(b, p + l0, is_lm));
        }
    }
    if is_lm(c0) {
        return Some(run_end(b, p, is_lm));
    }
    // C: optional ' ', then [\p{P}\p{S}]+, then [\r\n]*.
    let ps_start = if cp0 == ' ' as u32 && p + 1 < n && is_ps(class_at(b, p + 1).0) {
        Some(p + 1)
    } else if is_ps(c0) {
        Some(p)
    } else {
        None
    };
    if let Some(start) = ps_start {
        let mut q = run_end(b, start, is_ps);
        while q < n && (b[q] == b'\r' || b[q] == b'\n') {
            q += 1;
        }
        return Some(q);
    }
    if c0 != SPACE {
        return None;
    }
    // D, E, F over the whitespace run starting at p.
    let (mut q, mut last_start, mut after_last_nl) = (p, p, None);
    while q < n {
        let (c, cp, l) = class_at(b, q);
        if c != SPACE {
            break;
        }
        if cp == '\r' as u32 || cp == '\n' as u32 {
            after_last_nl = Some(q + 1);
        }
        last_start = q;
        q += l;
    }
    // D: `\s*[\r\n]+` — greedy `\s*` backs off to the last CR/LF of the run.
    if let Some(e) = after_last_nl {
        return Some(e);
    }
    // E: `\s+(?!\S)` — the whole run at the end of the piece, else the run minus its last char.
    if q == n {
        return Some(q);
    }
    if last_start > p {
        return Some(last_start);
    }
    // F: `\s+` — a single whitespace char before a non-space.
    Some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        pretokenize(s, &mut |p: &str| v.push(p.to_string()));
        v
    }

    #[test]
    fn basic_splits() {
        assert_eq!(pieces("Hello world!"), ["Hello", " world", "!"]);
        assert_eq!(pieces("1234567"), ["123", "456", "7"]);
        assert_eq!(pieces("  a"), [" ", " a"]);
        assert_eq!(pieces("a  \n\n b"), ["a", "  \n\n", " b"]);
        assert_eq!(pieces("x   "), ["x", "   "]);
        assert_eq!(pieces("'s é"), ["'s", " é"]);
        assert_eq!(pieces("日本語です。"), ["日本語です", "。"]);
        assert_eq!(pieces(".\n\nfoo"), [".\n\n", "foo"]);
        assert_eq!(pieces("\u{301}a"), ["\u{301}a"]);
        assert_eq!(pieces("\u{1}\u{2}x"), ["\u{1}", "\u{2}x"]);
        assert_eq!(pieces("\u{1}\u{2}"), ["\u{1}\u{2}"]);
        assert_eq!(pieces(""), Vec::<String>::new());
    }
}
