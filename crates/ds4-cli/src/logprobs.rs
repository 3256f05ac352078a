//! `--dump-logprobs` JSON (CLI.md §5.2), written as ds4 writes it: the same
//! layout, numbers with 9 significant digits (C's `%.9g`), token text with
//! `\u00XX` escapes for the bytes of a piece that is not valid UTF-8.

use std::io::{self, Write};

/// C `printf("%.{prec}g")` for a finite value; `null` for inf/NaN (which C
/// would print as invalid JSON).
pub fn fmt_g(v: f64, prec: usize) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let prec = prec.max(1);
    // Exponent after rounding to `prec` significant digits.
    let e_form = format!("{:.*e}", prec - 1, v);
    let (mant, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// JSON string of raw token bytes (ds4's escaping rules): valid UTF-8 as
/// text; a piece that is not valid UTF-8 on its own byte by byte, ASCII
/// escaped as usual and every other byte as `\u00XX`.
pub fn json_bytes_string(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return ds4_tok::json_quote(text);
    }
    let mut s = String::with_capacity(bytes.len() * 6 + 2);
    s.push('"');
    for &b in bytes {
        if b < 0x80 {
            ds4_tok::json_escape_into(&mut s, (b as char).encode_utf8(&mut [0; 4]));
        } else {
            s.push_str(&format!("\\u{b:04x}"));
        }
    }
    s.push('"');
    s
}

fn token_json(id: u32, bytes: &[u8]) -> String {
    let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
    format!("{{\"id\":{id},\"text\":{},\"bytes\":[{}]}}", json_bytes_string(bytes), list.join(","))
}

/// One alternative of a step.
pub struct Alt<'a> {
    pub id: u32,
    pub bytes: &'a [u8],
    pub logit: f32,
    pub logprob: f32,
}

pub struct LogprobWriter<W: Write> {
    out: W,
    steps: usize,
}

impl<W: Write> LogprobWriter<W> {
    pub fn new(mut out: W, prompt_tokens: usize, ctx: usize, top_k: usize) -> io::Result<Self> {
        write!(
            out,
            "{{\n  \"source\":\"ds4\",\n  \"prompt_tokens\":{prompt_tokens},\n  \"ctx\":{ctx},\n  \"top_k\":{top_k},\n  \"steps\":[\n"
        )?;
        Ok(LogprobWriter { out, steps: 0 })
    }

    pub fn step(&mut self, selected: (u32, &[u8]), alts: &[Alt]) -> io::Result<()> {
        if self.steps > 0 {
            self.out.write_all(b",\n")?;
        }
        write!(self.out, "    {{\"step\":{},\"selected\":{},\"top_logprobs\":[", self.steps, token_json(selected.0, selected.1))?;
        for (i, a) in alts.iter().enumerate() {
            if i > 0 {
                self.out.write_all(b",")?;
            }
            write!(
                self.out,
                "{{\"token\":{},\"logit\":{},\"logprob\":{}}}",
                token_json(a.id, a.bytes),
                fmt_g(a.logit as f64, 9),
                fmt_g(a.logprob as f64, 9)
            )?;
        }
        self.out.write_all(b"]}")?;
        self.steps += 1;
        Ok(())
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n  ]\n}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_g9() {
        // Values checked against C printf("%.9g").
        let cases: &[(f64, &str)] = &[
            (17.25, "17.25"),
            (-0.0123, "-0.0123"),
            (1.0, "1"),
            (0.1f32 as f64, "0.100000001"),
            (123456789.0, "123456789"),
            (1234567890.0, "1.23456789e+09"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (-3.4028234663852886e38, "-3.40282347e+38"),
            (999999999.5, "1e+09"),
            (0.0, "0"),
            (2.5e-7, "2.5e-07"),
            (1e100, "1e+100"),
        ];
        for &(v, want) in cases {
            assert_eq!(fmt_g(v, 9), want, "{v}");
        }
        assert_eq!(fmt_g(f64::NEG_INFINITY, 9), "null");
    }

    #[test]
    fn escaping() {
        assert_eq!(json_bytes_string(b"a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
        assert_eq!(json_bytes_string("né".as_bytes()), "\"né\"");
        // Invalid UTF-8: every byte >= 0x80 escaped.
        assert_eq!(json_bytes_string(b"\xc3"), "\"\\u00c3\"");
        assert_eq!(json_bytes_string(b"x\xe4\xbd"), "\"x\\u00e4\\u00bd\"");
    }

    #[test]
    fn document_shape() {
        let mut w = LogprobWriter::new(Vec::new(), 12, 4096, 2).unwrap();
        let alts = [
            Alt { id: 791, bytes: b"The", logit: 17.25, logprob: -0.0123 },
            Alt { id: 5, bytes: b"\xe4", logit: 3.5, logprob: -13.5 },
        ];
        w.step((791, b"The"), &alts).unwrap();
        w.step((1, "<｜end▁of▁sentence｜>".as_bytes()), &alts[..1]).unwrap();
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["source"], "ds4");
        assert_eq!(v["prompt_tokens"], 12);
        assert_eq!(v["ctx"], 4096);
        assert_eq!(v["top_k"], 2);
        let steps = v["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["step"], 0);
        assert_eq!(steps[0]["selected"]["text"], "The");
        assert_eq!(steps[0]["selected"]["bytes"], serde_json::json!([84, 104, 101]));
        assert_eq!(steps[0]["top_logprobs"][0]["logit"].as_f64(), Some(17.25));
        assert_eq!(steps[0]["top_logprobs"][1]["token"]["text"], "\u{e4}");
        assert_eq!(steps[0]["top_logprobs"][1]["token"]["bytes"], serde_json::json!([228]));
        assert_eq!(steps[1]["selected"]["id"], 1);
        assert!(out.starts_with("{\n  \"source\":\"ds4\",\n  \"prompt_tokens\":12,"));
        assert!(out.ends_with("]}\n  ]\n}\n"));
    }
}
