//! Streams generated text (CLI.md §3 "Output formatting"): `<think>` and
//! `</think>` are not printed, reasoning is grey (ANSI 90) on a terminal and
//! is followed by a newline if it did not end with one; a tag split across
//! tokens is held back until it is resolved.

use std::io::{self, Write};

const OPEN: &[u8] = b"<think>";
const CLOSE: &[u8] = b"</think>";
const GREY: &[u8] = b"\x1b[90m";
const RESET: &[u8] = b"\x1b[0m";

/// On a terminal, generated control bytes (ESC above all: model output must
/// not drive the terminal) are shown as U+FFFD; tab, newline and CR pass.
fn write_terminal_safe<W: Write>(out: &mut W, bytes: &[u8]) -> io::Result<()> {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f {
            out.write_all(&bytes[start..i])?;
            out.write_all("\u{fffd}".as_bytes())?;
            start = i + 1;
        }
    }
    out.write_all(&bytes[start..])
}

/// `color` means stdout is a terminal: reasoning is grey and control bytes
/// are neutralised; otherwise bytes go out exactly as generated.
pub struct TokenPrinter<W: Write> {
    out: W,
    /// Tags are interpreted only when the turn can think.
    format_thinking: bool,
    in_think: bool,
    color: bool,
    color_open: bool,
    last_newline: bool,
    pending: Vec<u8>,
    /// Visible bytes split by kind, for the trace.
    pub reasoning: Vec<u8>,
    pub answer: Vec<u8>,
}

impl<W: Write> TokenPrinter<W> {
    /// `thinking`: the prompt ended with `<think>` (the turn starts inside
    /// reasoning). `color`: stdout is a terminal.
    pub fn new(out: W, thinking: bool, color: bool) -> Self {
        TokenPrinter {
            out,
            format_thinking: thinking,
            in_think: thinking,
            color,
            color_open: false,
            last_newline: true,
            pending: Vec::new(),
            reasoning: Vec::new(),
            answer: Vec::new(),
        }
    }

    pub fn in_reasoning(&self) -> bool {
        self.in_think
    }

    /// Print the bytes of one generated token.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if !self.format_thinking {
            if let Some(&b) = bytes.last() {
                self.last_newline = b == b'\n';
            }
            self.answer.extend_from_slice(bytes);
            if self.color {
                write_terminal_safe(&mut self.out, bytes)?;
            } else {
                self.out.write_all(bytes)?;
            }
            return self.out.flush();
        }
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(bytes);
        self.process(&buf, false)?;
        self.out.flush()
    }

    fn process(&mut self, buf: &[u8], finish: bool) -> io::Result<()> {
        let mut i = 0;
        let mut run_start = 0;
        while i < buf.len() {
            let rest = &buf[i..];
            if rest.starts_with(OPEN) || rest.starts_with(CLOSE) {
                self.emit(&buf[run_start..i])?;
                if rest.starts_with(OPEN) {
                    self.in_think = true;
                    i += OPEN.len();
                } else {
                    self.in_think = false;
                    self.reset_color()?;
                    if !self.last_newline {
                        self.out.write_all(b"\n")?;
                        self.last_newline = true;
                    }
                    i += CLOSE.len();
                }
                run_start = i;
                continue;
            }
            if !finish && rest[0] == b'<' && (OPEN.starts_with(rest) || CLOSE.starts_with(rest)) {
                // A possible tag cut at the token boundary: wait for more.
                self.emit(&buf[run_start..i])?;
                self.pending = rest.to_vec();
                return Ok(());
            }
            i += 1;
        }
        self.emit(&buf[run_start..])
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.in_think {
            if self.color && !self.color_open {
                self.out.write_all(GREY)?;
                self.color_open = true;
            }
            self.reasoning.extend_from_slice(bytes);
        } else {
            self.answer.extend_from_slice(bytes);
        }
        if self.color {
            write_terminal_safe(&mut self.out, bytes)?;
        } else {
            self.out.write_all(bytes)?;
        }
        self.last_newline = bytes.last() == Some(&b'\n');
        Ok(())
    }

    fn reset_color(&mut self) -> io::Result<()> {
        if self.color_open {
            self.out.write_all(RESET)?;
            self.color_open = false;
        }
        Ok(())
    }

    /// End of the generation: flush a held partial tag as text, close the
    /// colour and end the line.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.format_thinking {
            let buf = std::mem::take(&mut self.pending);
            self.process(&buf, true)?;
            self.reset_color()?;
        }
        if !self.last_newline {
            self.out.write_all(b"\n")?;
            self.last_newline = true;
        }
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(thinking: bool, color: bool, pieces: &[&[u8]]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let mut p = TokenPrinter::new(Vec::new(), thinking, color);
        for b in pieces {
            p.write(b).unwrap();
        }
        p.finish().unwrap();
        let (r, a) = (p.reasoning.clone(), p.answer.clone());
        (p.into_inner(), r, a)
    }

    #[test]
    fn reasoning_then_answer() {
        let (out, r, a) = run(true, false, &[b"let me", b" think", b"</think>", b"Hello", b"!"]);
        assert_eq!(out, b"let me think\nHello!\n");
        assert_eq!(r, b"let me think");
        assert_eq!(a, b"Hello!");
        // No extra newline when the reasoning ended with one.
        let (out, _, _) = run(true, false, &[b"hm\n", b"</think>", b"ok\n"]);
        assert_eq!(out, b"hm\nok\n");
    }

    #[test]
    fn grey_on_terminal() {
        let (out, _, _) = run(true, true, &[b"why", b"</think>", b"because"]);
        assert_eq!(out, b"\x1b[90mwhy\x1b[0m\nbecause\n");
        let (out, _, _) = run(true, true, &[b"</think>", b"x"]);
        assert_eq!(out, b"x\n");
    }

    #[test]
    fn tag_split_across_tokens_is_held() {
        let (out, r, a) = run(true, false, &[b"a<", b"/th", b"ink", b">b"]);
        assert_eq!(out, b"a\nb\n");
        assert_eq!((r.as_slice(), a.as_slice()), (&b"a"[..], &b"b"[..]));
        // A '<' that is not a tag is printed once resolved.
        let (out, _, _) = run(true, false, &[b"x <", b"y", b"</think>"]);
        assert_eq!(out, b"x <y\n");
        // A partial tag at the very end is printed as text.
        let (out, _, _) = run(true, false, &[b"</think>", b"v <thi"]);
        assert_eq!(out, b"v <thi\n");
        // Re-opened reasoning.
        let (out, _, _) = run(true, true, &[b"</think>", b"a", b"<think>", b"b", b"</think>", b"c"]);
        assert_eq!(out, b"a\x1b[90mb\x1b[0m\nc\n");
    }

    #[test]
    fn terminal_output_neutralises_control_bytes() {
        let (out, _, a) = run(false, true, &[b"a\x1b[2Jb\tc\x07\n"]);
        assert_eq!(out, "a\u{fffd}[2Jb\tc\u{fffd}\n".as_bytes());
        assert_eq!(a, b"a\x1b[2Jb\tc\x07\n", "the record keeps the real bytes");
        let (out, _, _) = run(true, true, &[b"x\x1b", b"</think>", b"\x00y"]);
        assert_eq!(out, "\x1b[90mx\u{fffd}\x1b[0m\n\u{fffd}y\n".as_bytes());
        // Not a terminal: verbatim.
        let (out, _, _) = run(false, false, &[b"a\x1b[2J"]);
        assert_eq!(out, b"a\x1b[2J\n");
    }

    #[test]
    fn nothink_prints_everything_verbatim() {
        let (out, r, a) = run(false, false, &[b"x</think>", b"<think>y"]);
        assert_eq!(out, b"x</think><think>y\n");
        assert!(r.is_empty());
        assert_eq!(a, b"x</think><think>y");
    }

    #[test]
    fn partial_utf8_passes_through() {
        let (out, _, _) = run(true, false, &[b"</think>", b"\xe4\xbd", b"\xa0"]);
        assert_eq!(out, "你\n".as_bytes());
    }
}
