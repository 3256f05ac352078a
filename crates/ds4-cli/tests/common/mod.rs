//! Helpers for the `ds4` binary tests: fixture paths and running the binary.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn fixtures() -> PathBuf {
    std::env::var_os("DS4_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/model")))
}

/// The fixture manifest (Python's json writes `Infinity`/`NaN`; they become null).
pub fn manifest() -> serde_json::Value {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).expect("fixture manifest");
    let text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
    serde_json::from_str(&text).unwrap()
}

pub fn sequence(model: &str, seq: &str) -> serde_json::Value {
    let m = manifest();
    let model = m["models"].as_array().unwrap().iter().find(|x| x["name"] == model).expect("model").clone();
    model["sequences"].as_array().unwrap().iter().find(|s| s["name"] == seq).expect("sequence").clone()
}

pub fn model_path(model: &str) -> PathBuf {
    fixtures().join(model).join("model.gguf")
}

pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn read_i32(path: &std::path::Path) -> Vec<i32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn ds4() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ds4"));
    // Keep the user's history and terminal out of the tests.
    c.env("HOME", std::env::temp_dir()).env_remove("TERM");
    c
}

pub fn run(args: &[&str]) -> Output {
    ds4().args(args).output().expect("run ds4")
}

pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A scratch path unique to this process and name.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ds4-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Max and mean |a-b|, with the position (row) of the max.
pub fn compare(got: &[f32], want: &[f32], vocab: usize) -> (f32, f64, usize) {
    assert_eq!(got.len(), want.len(), "logit counts differ");
    let (mut max, mut at, mut sum) = (0f32, 0usize, 0f64);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let d = (a - b).abs();
        assert!(d.is_finite(), "non-finite logit at {i}");
        sum += d as f64;
        if d > max {
            max = d;
            at = i / vocab;
        }
    }
    (max, sum / got.len() as f64, at)
}

pub fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}
