//! Progress on stderr: the prefill line of CLI.md §3 (one refreshing line
//! with a bar on a terminal, one line per chunk otherwise) and a spinner
//! while the model loads.

use std::io::{IsTerminal, Write};

pub struct PrefillProgress {
    tty: bool,
    total: usize,
    last_done: Option<usize>,
}

impl PrefillProgress {
    pub fn new(total: usize) -> Self {
        PrefillProgress { tty: std::io::stderr().is_terminal(), total, last_done: None }
    }

    /// The text of one report (without the terminal decorations).
    pub fn line(done: usize, total: usize) -> String {
        let done = done.min(total);
        let pct = if total > 0 { 100.0 * done as f64 / total as f64 } else { 100.0 };
        format!("processing {total} input tokens: {done}/{total} ({pct:.1}%)")
    }

    pub fn update(&mut self, done: usize) {
        if self.total == 0 || self.last_done == Some(done) {
            return;
        }
        self.last_done = Some(done);
        let mut err = std::io::stderr().lock();
        let line = Self::line(done, self.total);
        if self.tty {
            let width = 24;
            let filled = (done.min(self.total) * width) / self.total;
            let bar: String = "█".repeat(filled) + &"░".repeat(width - filled);
            let _ = write!(err, "\r{line} {bar}\x1b[K");
            if done >= self.total {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Close a refreshing line that did not reach 100% (cancelled prefill).
    pub fn end(&mut self) {
        if self.tty && matches!(self.last_done, Some(d) if d < self.total) {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// A spinner while something slow happens (model load, demo build). On a
/// non-terminal stderr it prints the message once.
pub struct Spinner {
    bar: Option<indicatif::ProgressBar>,
}

impl Spinner {
    pub fn start(msg: String) -> Spinner {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message(msg);
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            Spinner { bar: Some(bar) }
        } else {
            eprintln!("ds4: {msg}");
            Spinner { bar: None }
        }
    }

    pub fn finish(self, msg: String) {
        match self.bar {
            Some(bar) => {
                bar.finish_and_clear();
                eprintln!("ds4: {msg}");
            }
            None => eprintln!("ds4: {msg}"),
        }
    }
}

/// A byte-progress bar (GPU weight upload) on a terminal; silent otherwise.
pub struct ByteBar {
    bar: Option<indicatif::ProgressBar>,
}

impl ByteBar {
    pub fn new(total: u64, what: &str) -> ByteBar {
        if !std::io::stderr().is_terminal() {
            eprintln!("ds4: {what} ({:.2} GiB)", total as f64 / (1u64 << 30) as f64);
            return ByteBar { bar: None };
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        ByteBar { bar: Some(bar) }
    }

    pub fn set(&self, done: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format() {
        assert_eq!(PrefillProgress::line(512, 2048), "processing 2048 input tokens: 512/2048 (25.0%)");
        assert_eq!(PrefillProgress::line(3, 3), "processing 3 input tokens: 3/3 (100.0%)");
        assert_eq!(PrefillProgress::line(9, 3), "processing 3 input tokens: 3/3 (100.0%)");
    }
}
