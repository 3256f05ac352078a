//! `--mtp` black-box (SERVING.md §10): the real `ds4-server` binary with and
//! without an MTP drafter answers greedy requests byte for byte the same —
//! completions, chat, a stream cut by a stop string, and a follow-up turn that
//! reuses the live state (same cached-token count, so the state after a cut run
//! is plain decoding's) — while the drafter really commits multi-token runs.
//! Models: the one-layer "mirror" model whose MTP file predicts it (high
//! acceptance) and the real-vocabulary fixture with a random MTP file (mostly
//! rejected drafts).

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ds4_engine::layout::Variant;
use ds4_engine::{synth, Model};
use ds4_gguf::Gguf;
use serde_json::{json, Value};

#[path = "common/http.rs"]
mod http;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ds4-server-mtp-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Proc {
    child: Option<Child>,
    addr: SocketAddr,
    log: PathBuf,
}

impl Proc {
    fn start(model: &Path, dir: &Path, tag: &str, extra: &[&str]) -> Proc {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = dir.join(format!("{tag}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_ds4-server"))
            .args(["--cpu", "-m", model.to_str().unwrap(), "--ctx", "1024", "-n", "256", "--port", &port.to_string()])
            .args(["--lock-file", dir.join(format!("{tag}.lock")).to_str().unwrap()])
            .args(extra)
            .env_remove("DS4_MTP_SPEC_DISABLE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut p = Proc { child: Some(child), addr: ([127, 0, 0, 1], port).into(), log };
        let t0 = Instant::now();
        while TcpStream::connect(p.addr).is_err() {
            if let Some(st) = p.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("{tag}: server exited {st}: {}", p.stderr());
            }
            assert!(t0.elapsed() < Duration::from_secs(120), "{tag}: server did not come up: {}", p.stderr());
            std::thread::sleep(Duration::from_millis(50));
        }
        p
    }

    fn stderr(&self) -> String {
        let mut s = String::new();
        let _ = std::fs::File::open(&self.log).and_then(|mut f| f.read_to_string(&mut s));
        s
    }

    /// SIGTERM, then the exit status must be success (graceful drain).
    fn stop(&mut self) -> String {
        let mut c = self.child.take().unwrap();
        let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
        let st = c.wait().unwrap();
        assert!(st.success(), "exit {st}: {}", self.stderr());
        self.stderr()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What must match between the two servers: everything but ids and times.
fn strip(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("id");
        o.remove("created");
    }
    v
}

/// The JSON payloads of an SSE body, stripped.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| strip(serde_json::from_str(d).unwrap()))
        .collect()
}

/// The requests of one comparison, the later ones built from earlier replies.
fn session(addr: SocketAddr) -> Vec<Value> {
    let mut out = Vec::new();
    let c = http::ok(addr, "/v1/completions", &json!({"model": "deepseek-chat", "prompt": "Once upon a time", "max_tokens": 120, "temperature": 0}));
    out.push(strip(c));
    let ask = json!([{"role": "user", "content": "Tell me a story about a lighthouse."}]);
    let chat = http::ok(addr, "/v1/chat/completions", &json!({"model": "deepseek-chat", "messages": ask, "max_tokens": 100, "temperature": 0}));
    let answer = chat["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    out.push(strip(chat));
    // A stop string from the middle of that answer (two ASCII alphanumerics: random
    // models also emit broken UTF-8, shown as U+FFFD) cuts a later run short.
    let chars: Vec<char> = answer.chars().collect();
    let ok2 = |i: usize| chars[i].is_ascii_alphanumeric() && chars[i + 1].is_ascii_alphanumeric();
    let at = (chars.len() / 2..chars.len().saturating_sub(1)).chain(0..chars.len() / 2).find(|&i| ok2(i));
    let stop: String = chars[at.expect("an ASCII word in the answer")..][..2].iter().collect();
    let body = json!({"model": "deepseek-chat", "messages": ask, "max_tokens": 100, "temperature": 0, "stream": true,
                      "stop": [stop], "stream_options": {"include_usage": true}});
    let r = http::post(addr, "/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    out.push(Value::Array(events(&r.body)));
    // The next turn extends the live state left by the cut stream.
    let short: String = events(&r.body).iter().filter_map(|e| e["choices"][0]["delta"]["content"].as_str().map(String::from)).collect();
    let turn2 = json!([{"role": "user", "content": "Tell me a story about a lighthouse."},
                       {"role": "assistant", "content": short},
                       {"role": "user", "content": "And then?"}]);
    out.push(strip(http::ok(addr, "/v1/chat/completions", &json!({"model": "deepseek-chat", "messages": turn2, "max_tokens": 80, "temperature": 0}))));
    out
}

/// `(accepted, drafted, committed, steps)` summed over the `mtp:` log lines.
fn mtp_counts(log: &str) -> Option<(u64, u64, u64, u64)> {
    let mut sum: Option<(u64, u64, u64, u64)> = None;
    for rest in log.lines().filter_map(|l| l.split_once(" mtp: ").map(|(_, r)| r)) {
        // "A/D drafted tokens accepted (P%), C tokens in S steps (R tokens/step)"
        let w: Vec<&str> = rest.split_whitespace().collect();
        let (a, d) = w[0].split_once('/').unwrap();
        let e = sum.get_or_insert((0, 0, 0, 0));
        *e = (e.0 + a.parse::<u64>().unwrap(), e.1 + d.parse::<u64>().unwrap(), e.2 + w[5].parse::<u64>().unwrap(), e.3 + w[8].parse::<u64>().unwrap());
    }
    sum
}

/// The live-state lengths the server logs when a prompt does not extend it.
fn misses(log: &str) -> Vec<String> {
    log.lines().filter_map(|l| l.find("live kv cache miss").map(|i| l[i..].to_string())).collect()
}

/// The checkpoints the disk cache logs as stored (without timings).
fn stores(log: &str) -> Vec<String> {
    log.lines().filter_map(|l| l.find("kv cache stored").map(|i| l[i..].split(" save=").next().unwrap().to_string())).collect()
}

/// Plain vs `--mtp` on one model; returns the speculation counters. With
/// `disk`, both also checkpoint every 16 tokens: the continued checkpoints
/// fall on the same frontiers (speculative runs stop at them).
fn compare(model: &Path, mtp: &Path, dir: &Path, disk: bool) -> (u64, u64, u64, u64) {
    let kv = |tag: &str| -> Vec<String> {
        if !disk {
            return Vec::new();
        }
        let d = dir.join(format!("{tag}-kv")).to_str().unwrap().to_string();
        ["--kv-disk-dir", &d, "--kv-cache-min-tokens", "8", "--kv-cache-cold-max-tokens", "0"]
            .into_iter()
            .chain(["--kv-cache-continued-interval-tokens", "16", "--kv-cache-boundary-align-tokens", "0"])
            .map(String::from)
            .collect()
    };
    let plain_args = kv("plain");
    let mut plain = Proc::start(model, dir, "plain", &plain_args.iter().map(String::as_str).collect::<Vec<_>>());
    let want = session(plain.addr);
    let plain_log = plain.stop();
    assert!(mtp_counts(&plain_log).is_none(), "{plain_log}");
    let mut spec_args = kv("mtp");
    spec_args.extend(["--mtp", mtp.to_str().unwrap(), "--mtp-draft", "4", "--mtp-margin", "0"].map(String::from));
    let mut spec = Proc::start(model, dir, "mtp", &spec_args.iter().map(String::as_str).collect::<Vec<_>>());
    let got = session(spec.addr);
    let log = spec.stop();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "request {i} differs with --mtp\n{log}");
    }
    // The live state after each request (the stop-cut stream included) has
    // the same length: nothing past the stop was committed.
    assert!(!misses(&plain_log).is_empty(), "{plain_log}");
    assert_eq!(misses(&log), misses(&plain_log), "live state lengths differ\n{log}");
    if disk {
        assert!(stores(&plain_log).iter().filter(|l| l.contains("reason=continued")).count() >= 4, "{plain_log}");
        assert_eq!(stores(&log), stores(&plain_log), "checkpoints differ\n{log}");
    }
    assert!(log.contains("MTP speculative decoding"), "{log}");
    mtp_counts(&log).unwrap_or_else(|| panic!("no mtp line: {log}"))
}

#[test]
fn mirror_model_output_identical_with_mtp_and_runs_accepted() {
    let dir = scratch("mirror");
    let main = synth::mirror_model_bytes(0x517e_c0de).unwrap();
    let mtp = synth::mirror_mtp_bytes(&Gguf::from_bytes(main.clone()).unwrap(), true).unwrap();
    let (mp, tp) = (dir.join("mirror.gguf"), dir.join("mirror-mtp.gguf"));
    std::fs::write(&mp, main).unwrap();
    std::fs::write(&tp, mtp).unwrap();
    for disk in [false, true] {
        let (accepted, drafted, committed, steps) = compare(&mp, &tp, &dir, disk);
        eprintln!("mirror (disk cache {disk}): accepted {accepted}/{drafted}, {committed} tokens in {steps} steps");
        // Multi-token runs really happened (DeepSeek pairing on the mirror: most drafts agree).
        assert!(accepted > 0 && steps < committed, "accepted {accepted}/{drafted}, {committed} tokens in {steps} steps");
    }

    // Speculation off: --mtp-draft 1, the env switch; a file that is not an MTP file is an error.
    let m = tp.to_str().unwrap();
    let mut p = Proc::start(&mp, &dir, "draft1", &["--mtp", m]);
    http::ok(p.addr, "/v1/completions", &json!({"model": "deepseek-chat", "prompt": "x", "max_tokens": 5, "temperature": 0}));
    let log = p.stop();
    assert!(log.contains("speculation off: --mtp-draft is 1") && mtp_counts(&log).is_none(), "{log}");
    let out = Command::new(env!("CARGO_BIN_EXE_ds4-server"))
        .args(["--cpu", "-m", mp.to_str().unwrap(), "--mtp", mp.to_str().unwrap(), "--mtp-draft", "4", "--port", "1"])
        .args(["--lock-file", dir.join("bad.lock").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mtp"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_vocabulary_output_identical_with_random_mtp() {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/model/vocab-f16/model.gguf");
    if !model.exists() {
        panic!("fixture missing: {}", model.display());
    }
    let dir = scratch("vocab");
    let m = Model::load(&model).unwrap();
    let l = m.layers.last().unwrap();
    let v = Variant::Experts { gate_up: l.gate_exps.ty, down: l.down_exps.ty };
    let tp = dir.join("mtp.gguf");
    std::fs::write(&tp, synth::synth_mtp_bytes(&m.hp, v, 7).unwrap()).unwrap();
    let (accepted, drafted, committed, steps) = compare(&model, &tp, &dir, false);
    eprintln!("vocab-f16: accepted {accepted}/{drafted}, {committed} tokens in {steps} steps");
    assert!(drafted > 0 && steps > 0, "the drafter was used");
    let _ = std::fs::remove_dir_all(&dir);
}
