//! stderr log lines `MMDD HH:MM:SS ds4-server: …` (SERVING.md §10), in UTC
//! (no timezone database is read), plus the optional `--trace` file.

use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// (month, day, hour, minute, second) of a Unix time, UTC.
fn civil(t: u64) -> (u32, u32, u32, u32, u32) {
    let days = (t / 86400) as i64;
    let secs = t % 86400;
    // Howard Hinnant's days-from-civil inverse.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (m, d, (secs / 3600) as u32, (secs / 60 % 60) as u32, (secs % 60) as u32)
}

pub fn stamp() -> String {
    let (mo, d, h, mi, s) = civil(unix_now());
    format!("{mo:02}{d:02} {h:02}:{mi:02}:{s:02}")
}

pub fn log(msg: &str) {
    let line = format!("{} ds4-server: {msg}\n", stamp());
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[macro_export]
macro_rules! slog {
    ($($t:tt)*) => { $crate::log::log(&format!($($t)*)) };
}

/// `--trace FILE`: human-readable per-request trace.
pub struct Trace {
    file: Mutex<std::fs::File>,
}

impl Trace {
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Trace { file: Mutex::new(f) })
    }
    pub fn write(&self, section: &str, body: &str) {
        if let Ok(mut f) = self.file.lock() {
            let _ = writeln!(f, "=== {} {section}\n{body}", stamp());
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        // 2026-01-01 00:00:00 UTC = 1767225600 (the spec's example timestamp).
        assert_eq!(super::civil(1767225600), (1, 1, 0, 0, 0));
        assert_eq!(super::civil(951782400 + 86399), (2, 29, 23, 59, 59)); // 2000-02-29
    }
}
