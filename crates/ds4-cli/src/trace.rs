//! `--trace FILE`: a human-readable record per turn (CLI.md §5.4 decision):
//! the mode, the prefix-reuse decision, the newly rendered tokens as text, the
//! generated text and timings. Tests read `prefilled_tokens:` from it.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub struct TurnRecord<'a> {
    pub turn: usize,
    pub mode: &'a str,
    pub transcript_tokens: usize,
    pub reused_tokens: usize,
    pub prefilled_tokens: usize,
    /// Decoded text of the prefilled suffix.
    pub prefilled_text: &'a [u8],
    pub generated_tokens: usize,
    pub reasoning: &'a [u8],
    pub answer: &'a [u8],
    pub stop: &'a str,
    pub prefill_seconds: f64,
    pub generation_seconds: f64,
}

pub struct Trace {
    out: BufWriter<File>,
}

impl Trace {
    pub fn create(path: &Path) -> io::Result<Trace> {
        Ok(Trace { out: BufWriter::new(File::create(path)?) })
    }

    pub fn turn(&mut self, r: &TurnRecord) -> io::Result<()> {
        let o = &mut self.out;
        writeln!(o, "===== turn {} =====", r.turn)?;
        writeln!(o, "think_mode: {}", r.mode)?;
        writeln!(o, "transcript_tokens: {}", r.transcript_tokens)?;
        writeln!(o, "reused_tokens: {}", r.reused_tokens)?;
        writeln!(o, "prefilled_tokens: {}", r.prefilled_tokens)?;
        writeln!(o, "prefilled_text: {}", String::from_utf8_lossy(r.prefilled_text).escape_debug())?;
        writeln!(o, "generated_tokens: {}", r.generated_tokens)?;
        writeln!(o, "stop: {}", r.stop)?;
        writeln!(o, "reasoning: {}", String::from_utf8_lossy(r.reasoning).escape_debug())?;
        writeln!(o, "answer: {}", String::from_utf8_lossy(r.answer).escape_debug())?;
        writeln!(o, "prefill_seconds: {:.3}", r.prefill_seconds)?;
        writeln!(o, "generation_seconds: {:.3}", r.generation_seconds)?;
        o.flush()
    }

    /// A free-form event line (session invalidated, context changed, ...).
    pub fn event(&mut self, what: &str) -> io::Result<()> {
        writeln!(self.out, "event: {what}")?;
        self.out.flush()
    }
}
