//! The small, lenient JSON reader ds4 uses for tool arguments. Rendering must be byte-identical
//! to ds4's, so this keeps its exact tolerance (missing commas between members, trailing commas,
//! strtod-style numbers, nesting limit 256) and its minification rule (drop ASCII whitespace
//! outside strings, nothing else) instead of going through a strict JSON parser that would
//! reorder, deduplicate or reformat.

const MAX_NESTING: usize = 256;

/// C `isspace` in the "C" locale.
#[inline]
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

pub(crate) fn skip_ws(s: &[u8], mut p: usize) -> usize {
    while p < s.len() && is_c_space(s[p]) {
        p += 1;
    }
    p
}

fn hex4(s: &[u8], p: usize) -> Option<u32> {
    if p + 6 > s.len() || s[p] != b'\\' || s[p + 1] != b'u' {
        return None;
    }
    let mut v = 0;
    for &c in &s[p + 2..p + 6] {
        v = v << 4 | (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Parse a JSON string starting at `p` (after optional whitespace). Returns (decoded, end).
pub(crate) fn parse_string(s: &[u8], p: usize) -> Option<(String, usize)> {
    let mut p = skip_ws(s, p);
    if s.get(p) != Some(&b'"') {
        return None;
    }
    p += 1;
    let mut out: Vec<u8> = Vec::new();
    while p < s.len() && s[p] != b'"' {
        let c = s[p];
        p += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = *s.get(p)?;
        p += 1;
        match e {
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            b'/' => out.push(b'/'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let mut cp = hex4(s, p - 2)?;
                p += 4;
                if (0xd800..=0xdbff).contains(&cp) {
                    // ds4 consumes the following \uXXXX even when it is not a low surrogate.
                    if let Some(lo) = hex4(s, p) {
                        p += 6;
                        if (0xdc00..=0xdfff).contains(&lo) {
                            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        }
                    }
                }
                // A lone surrogate cannot live in a Rust string (ds4 writes its 3-byte form).
                let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            _ => return None,
        }
    }
    if p >= s.len() {
        return None;
    }
    Some((String::from_utf8_lossy(&out).into_owned(), p + 1))
}

/// Length of the number strtod would accept at `p` (0 if none).
fn number_len(s: &[u8], p: usize) -> usize {
    let rest = &s[p..];
    let mut i = 0;
    if matches!(rest.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let lower = |k: usize, lit: &[u8]| rest.len() >= k + lit.len() && rest[k..k + lit.len()].eq_ignore_ascii_case(lit);
    if lower(i, b"infinity") {
        return i + 8;
    }
    if lower(i, b"inf") || lower(i, b"nan") {
        return i + 3;
    }
    let hex = lower(i, b"0x");
    let digit = |c: u8| if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() };
    let start = if hex { i + 2 } else { i };
    let mut j = start;
    let mut digits = 0;
    while j < rest.len() && digit(rest[j]) {
        j += 1;
        digits += 1;
    }
    if j < rest.len() && rest[j] == b'.' {
        j += 1;
        while j < rest.len() && digit(rest[j]) {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        // "0x" without hex digits: strtod reads the "0".
        return if hex { i + 1 } else { 0 };
    }
    let exp = if hex { [b'p', b'P'] } else { [b'e', b'E'] };
    if j < rest.len() && exp.contains(&rest[j]) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let ds = k;
        while k < rest.len() && rest[k].is_ascii_digit() {
            k += 1;
        }
        if k > ds {
            j = k;
        }
    }
    j
}

/// End of the JSON value starting at `p` (after optional whitespace), ds4's lenient rules.
pub(crate) fn skip_value(s: &[u8], p: usize, depth: usize) -> Option<usize> {
    let p = skip_ws(s, p);
    match s.get(p)? {
        b'"' => parse_string(s, p).map(|(_, e)| e),
        b'{' | b'[' if depth >= MAX_NESTING => None,
        b'{' => {
            let mut p = skip_ws(s, p + 1);
            if s.get(p) == Some(&b'}') {
                return Some(p + 1);
            }
            loop {
                let (_, e) = parse_string(s, p)?;
                p = skip_ws(s, e);
                if s.get(p) != Some(&b':') {
                    return None;
                }
                p = skip_ws(s, skip_value(s, p + 1, depth + 1)?);
                match s.get(p)? {
                    b'}' => return Some(p + 1),
                    b',' => p += 1,
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut p = skip_ws(s, p + 1);
            if s.get(p) == Some(&b']') {
                return Some(p + 1);
            }
            loop {
                p = skip_ws(s, skip_value(s, p, depth + 1)?);
                match s.get(p)? {
                    b']' => return Some(p + 1),
                    b',' => p += 1,
                    _ => return None,
                }
            }
        }
        _ => {
            for lit in [&b"true"[..], b"false", b"null"] {
                if s[p..].starts_with(lit) {
                    return Some(p + lit.len());
                }
            }
            match number_len(s, p) {
                0 => None,
                n => Some(p + n),
            }
        }
    }
}

/// Minify a raw JSON value: drop whitespace outside strings. If it is not a value, return it
/// unchanged (ds4 does the same).
pub(crate) fn minify(raw: &str) -> String {
    let s = raw.as_bytes();
    let start = skip_ws(s, 0);
    let Some(end) = skip_value(s, start, 0) else {
        return raw.to_string();
    };
    let mut out = Vec::with_capacity(end - start);
    let (mut in_str, mut esc) = (false, false);
    for &c in &s[start..end] {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
            out.push(c);
        } else if !is_c_space(c) {
            out.push(c);
        }
    }
    // Only ASCII bytes were removed, so the result is still valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// One member of a tool-arguments object: key, and either the decoded string or minified JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Arg {
    pub key: String,
    pub value: String,
    pub is_string: bool,
}

/// Members of a JSON object in order, duplicates kept (ds4's `json_args_parse`).
pub(crate) fn parse_args(json: &str) -> Option<Vec<Arg>> {
    let s = json.as_bytes();
    let mut p = skip_ws(s, 0);
    if s.get(p) != Some(&b'{') {
        return None;
    }
    p = skip_ws(s, p + 1);
    let mut args = Vec::new();
    while p < s.len() && s[p] != b'}' {
        let (key, e) = parse_string(s, p)?;
        p = skip_ws(s, e);
        if s.get(p) != Some(&b':') {
            return None;
        }
        p = skip_ws(s, p + 1);
        let (value, is_string, e) = if s.get(p) == Some(&b'"') {
            let (v, e) = parse_string(s, p)?;
            (v, true, e)
        } else {
            let e = skip_value(s, p, 0)?;
            (minify(&json[p..e]), false, e)
        };
        args.push(Arg { key, value, is_string });
        p = skip_ws(s, e);
        if s.get(p) == Some(&b',') {
            p += 1;
        }
        p = skip_ws(s, p);
    }
    if p >= s.len() {
        return None;
    }
    Some(args)
}

/// ds4's JSON string escaping: `"` `\` and control chars; everything else raw.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// `s` as a JSON string literal ([`escape_into`] between quotes).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_into(&mut out, s);
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_args() {
        let a = parse_args(r#" { "a" : "x\ny" , "b": [1, 2 ,{"c" : null}] "a": true, } "#).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0], Arg { key: "a".into(), value: "x\ny".into(), is_string: true });
        assert_eq!(a[1].value, r#"[1,2,{"c":null}]"#);
        assert_eq!(a[2], Arg { key: "a".into(), value: "true".into(), is_string: false });
        assert!(parse_args("[1]").is_none());
        assert!(parse_args(r#"{"a": 1"#).is_none());
        assert!(parse_args(r#"{"a" 1}"#).is_none());
        assert_eq!(parse_args("{}").unwrap(), vec![]);
        assert_eq!(minify(" { \"k y\" : [ 1.5e3 , -2 ] } "), "{\"k y\":[1.5e3,-2]}");
        assert_eq!(minify("not json"), "not json");
        let deep = "[".repeat(300) + &"]".repeat(300);
        assert!(skip_value(deep.as_bytes(), 0, 0).is_none());
        assert_eq!(parse_string(br#""\ud83d\ude00\u00e9""#, 0).unwrap().0, "😀é");
        assert_eq!(quote("a\"\\\n\u{1}é"), "\"a\\\"\\\\\\n\\u0001é\"");
    }
}
