//! Minimal order-preserving JSON reader/writer.
//!
//! Why not serde_json: the server must keep the *raw bytes* of tool schemas
//! (SERVING.md §3.6), keep object members in the order sent **including
//! duplicate keys** (§3.5), and reject nesting deeper than 256 (§5). serde_json
//! can do none of these without feature flags that would change behaviour for
//! the rest of the workspace.

use std::fmt::Write as _;
use std::ops::Range;

pub const MAX_DEPTH: usize = 256;

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

/// A parsed value plus the byte range of its source text.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub kind: Kind,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub offset: usize,
    pub msg: &'static str,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.msg, self.offset)
    }
}

pub fn parse(src: &str) -> Result<Value, ParseError> {
    let mut p = Parser { s: src.as_bytes(), src, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, msg: &'static str) -> ParseError {
        ParseError { offset: self.i, msg }
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth >= MAX_DEPTH {
            return Err(self.err("JSON nesting too deep"));
        }
        let start = self.i;
        let c = *self.s.get(self.i).ok_or_else(|| self.err("unexpected end of JSON"))?;
        let kind = match c {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        if self.s.get(self.i) != Some(&b'"') {
                            return Err(self.err("expected object key"));
                        }
                        let k = self.string()?;
                        self.ws();
                        if self.s.get(self.i) != Some(&b':') {
                            return Err(self.err("expected ':'"));
                        }
                        self.i += 1;
                        self.ws();
                        let v = self.value(depth + 1)?;
                        members.push((k, v));
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(self.err("expected ',' or '}'")),
                        }
                    }
                }
                Kind::Obj(members)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(self.err("expected ',' or ']'")),
                        }
                    }
                }
                Kind::Arr(items)
            }
            b'"' => Kind::Str(self.string()?),
            b't' => {
                self.lit(b"true")?;
                Kind::Bool(true)
            }
            b'f' => {
                self.lit(b"false")?;
                Kind::Bool(false)
            }
            b'n' => {
                self.lit(b"null")?;
                Kind::Null
            }
            b'-' | b'0'..=b'9' => Kind::Num(self.number()?),
            _ => return Err(self.err("unexpected character")),
        };
        Ok(Value { kind, span: start..self.i })
    }
    fn lit(&mut self, w: &[u8]) -> Result<(), ParseError> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(())
        } else {
            Err(self.err("invalid literal"))
        }
    }
    fn number(&mut self) -> Result<f64, ParseError> {
        let start = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = |p: &mut Self| {
            let st = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - st
        };
        if digits(self) == 0 {
            return Err(self.err("invalid number"));
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return Err(self.err("invalid number"));
            }
        }
        if matches!(self.s.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("invalid number"));
            }
        }
        self.src[start..self.i].parse::<f64>().map_err(|_| self.err("invalid number"))
    }
    fn hex4(&mut self) -> Result<u32, ParseError> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(|| self.err("bad \\u escape"))?;
        let h = std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(h, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }
    fn string(&mut self) -> Result<String, ParseError> {
        debug_assert_eq!(self.s[self.i], b'"');
        self.i += 1;
        let mut out = String::new();
        loop {
            let run = self.i;
            while self.i < self.s.len() && self.s[self.i] != b'"' && self.s[self.i] != b'\\' {
                if self.s[self.i] < 0x20 {
                    return Err(self.err("control character in string"));
                }
                self.i += 1;
            }
            // Boundaries are at ASCII bytes, so the slice is valid UTF-8.
            out.push_str(&self.src[run..self.i]);
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {
                    self.i += 1;
                    let e = *self.s.get(self.i).ok_or_else(|| self.err("unterminated string"))?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                // Surrogate pair; a lone surrogate becomes U+FFFD.
                                if self.s[self.i..].starts_with(b"\\u") {
                                    let save = self.i;
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if (0xDC00..0xE000).contains(&lo) {
                                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                    } else {
                                        self.i = save;
                                        0xFFFD
                                    }
                                } else {
                                    0xFFFD
                                }
                            } else if (0xDC00..0xE000).contains(&hi) {
                                0xFFFD
                            } else {
                                hi
                            };
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                        _ => return Err(self.err("invalid escape")),
                    }
                }
            }
        }
    }
}

impl Value {
    pub fn raw<'a>(&self, src: &'a str) -> &'a str {
        &src[self.span.clone()]
    }
    /// Member lookup; with duplicate keys the last one wins (as in most
    /// JSON libraries clients use).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.kind {
            Kind::Obj(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Value]> {
        match &self.kind {
            Kind::Arr(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match &self.kind {
            Kind::Obj(m) => Some(m),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        matches!(self.kind, Kind::Null)
    }
}

/// Remove all whitespace outside strings (SERVING.md §3.5 "minified").
pub fn minify(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_str = false;
    let mut esc = false;
    for c in raw.chars() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Append `s` as a JSON string literal (UTF-8 kept as is, controls escaped).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    ds4_tok::json_escape_into(out, s);
    out.push('"');
}

pub fn str_lit(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    write_str(&mut o, s);
    o
}

/// Order-preserving JSON object builder for responses (key order is part of the
/// wire format in places, e.g. Responses `sequence_number` as the second key).
#[derive(Default)]
pub struct Obj {
    buf: String,
}

impl Obj {
    pub fn new() -> Self {
        Obj { buf: String::from("{") }
    }
    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        write_str(&mut self.buf, k);
        self.buf.push(':');
    }
    pub fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        write_str(&mut self.buf, v);
        self
    }
    pub fn num<N: std::fmt::Display>(mut self, k: &str, v: N) -> Self {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }
    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }
    pub fn null(mut self, k: &str) -> Self {
        self.key(k);
        self.buf.push_str("null");
        self
    }
    /// Insert already-serialised JSON.
    pub fn raw(mut self, k: &str, json: &str) -> Self {
        self.key(k);
        self.buf.push_str(json);
        self
    }
    pub fn obj(self, k: &str, o: Obj) -> Self {
        let s = o.finish();
        self.raw(k, &s)
    }
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

/// JSON array from already-serialised elements.
pub fn arr<I: IntoIterator<Item = String>>(items: I) -> String {
    let mut s = String::from("[");
    for (i, it) in items.into_iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&it);
    }
    s.push(']');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_in_order_with_duplicates_and_spans() {
        let src = r#" {"b": 1, "a": [true, null], "b": "x\u00e9\ud83d\ude00"} "#;
        let v = parse(src).unwrap();
        let m = v.as_object().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].0, "b");
        assert_eq!(m[1].0, "a");
        assert_eq!(m[2].1.as_str(), Some("xé😀"));
        assert_eq!(m[1].1.raw(src), "[true, null]");
        // Cross-check values against serde_json (independent parser).
        let sj: serde_json::Value = serde_json::from_str(r#"[1.5e3, -0.25, "a\nb", {}]"#).unwrap();
        let ours = parse(r#"[1.5e3, -0.25, "a\nb", {}]"#).unwrap();
        let a = ours.as_array().unwrap();
        assert_eq!(a[0].kind, Kind::Num(sj[0].as_f64().unwrap()));
        assert_eq!(a[1].kind, Kind::Num(sj[1].as_f64().unwrap()));
        assert_eq!(a[2].as_str(), sj[2].as_str());
    }

    #[test]
    fn rejects_bad_json_and_deep_nesting() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01x", "\"\x01\"", "tru", "[1] 2", "\"\\q\""] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let ok = "[".repeat(255) + &"]".repeat(255);
        assert!(parse(&ok).is_ok());
        let deep = "[".repeat(257) + &"]".repeat(257);
        assert_eq!(parse(&deep).unwrap_err().msg, "JSON nesting too deep");
    }

    #[test]
    fn minify_and_write() {
        assert_eq!(minify("{ \"a b\" : [1, 2 ],\n\"c\":\"x \\\" y\" }"), "{\"a b\":[1,2],\"c\":\"x \\\" y\"}");
        let s = "q\"\\\n\u{1}é";
        let lit = str_lit(s);
        let back: String = serde_json::from_str(&lit).unwrap();
        assert_eq!(back, s);
        let o = Obj::new().str("z", "1").num("a", 2).bool("b", false).null("n").finish();
        assert_eq!(o, r#"{"z":"1","a":2,"b":false,"n":null}"#);
    }
}
