//! Disk KV cache wiring with the scripted engine (its whole state is its
//! token list, saved as a DSV4 header + token ids): evict checkpoints keyed by
//! a live binding's visible transcript (KVCACHE.md §4.3, ext bits 1/2), and
//! resuming from them with the EOS the visible text ends with (SERVING.md §7.3
//! [DECISION]). The real-model flows are in tests/py/test_kvcache.py.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use ds4_kvcache::{CacheOptions, DiskCache, Policy};
use ds4_server::engine::TextCodec;
use ds4_server::real::TokRender;
use ds4_server::server::ServerOptions;
use serde_json::json;

#[path = "common/mock.rs"]
mod mock;
use mock::{Codec, Delays, Mock, VOCAB};
#[path = "common/http.rs"]
mod http;
use http::ok;

const EOS: &str = "<｜end▁of▁sentence｜>";
const USER: &str = "<｜User｜>";
const ASSISTANT: &str = "<｜Assistant｜>";

struct TestServer {
    addr: SocketAddr,
    dir: std::path::PathBuf,
    logs: Arc<Mutex<Vec<String>>>,
    srv: http::Running,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // The shutdown checkpoint is written before the directory goes.
        self.srv.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start() -> TestServer {
    let dir = std::env::temp_dir().join(format!("ds4-disk-mock-{}-{}", std::process::id(), ds4_server::ids::random_hex(4)));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let l2 = logs.clone();
    let opts = CacheOptions {
        policy: Policy { min_tokens: 1, cold_max_tokens: 0, ..Policy::default() },
        log: Arc::new(move |m: &str| l2.lock().unwrap().push(m.to_string())),
        ..CacheOptions::default()
    };
    let disk = Arc::new(DiskCache::open(&dir, opts).unwrap());
    let mock = Mock { ctx: 4096, toks: vec![], logits: vec![0.0; VOCAB], d: Delays::default() };
    let srv = http::serve(mock, Arc::new(Codec), Arc::new(TokRender), ServerOptions { disk: Some(disk), ..http::options(4096) });
    TestServer { addr: srv.addr, dir, logs, srv }
}

fn n_tokens(s: &str) -> u64 {
    Codec.encode_chat(s).len() as u64
}

/// (ext flags, cache text) of every checkpoint file.
fn files(dir: &std::path::Path) -> Vec<(u8, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let b = std::fs::read(e.path()).unwrap();
        let tl = u32::from_le_bytes(b[48..52].try_into().unwrap()) as usize;
        out.push((b[6], String::from_utf8_lossy(&b[52..52 + tl]).into_owned()));
    }
    out
}

#[test]
fn evict_keyed_by_thinking_visible_resumes_with_eos() {
    let srv = start();
    let msgs1 = json!([{"role":"user","content":"cba"}]);
    let r1 = ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-reasoner","messages":msgs1}));
    assert_eq!((&r1["choices"][0]["message"]["content"], &r1["choices"][0]["message"]["reasoning_content"]), (&json!("abc"), &json!("r")));
    let live = r1["usage"]["prompt_tokens"].as_u64().unwrap() + r1["usage"]["completion_tokens"].as_u64().unwrap();
    // An unrelated request: the thinking state is dumped under its visible key.
    ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-chat","messages":[{"role":"user","content":"zyx"}]}));
    let visible = format!("<｜begin▁of▁sentence｜>{USER}cba{ASSISTANT}</think>abc{EOS}");
    assert!(files(&srv.dir).contains(&(4, visible.clone())), "{:?}", files(&srv.dir));
    assert!(srv.logs.lock().unwrap().iter().any(|l| l.contains("reason=evict key=thinking-visible")));
    // The client replays the turn without reasoning: the checkpoint (with
    // the sampled reasoning in its KV) continues it; the EOS the KV never
    // evaluated comes first in the suffix.
    let msgs2 = json!([{"role":"user","content":"cba"},{"role":"assistant","content":"abc"},{"role":"user","content":"fed"}]);
    let r2 = ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-reasoner","messages":msgs2}));
    assert_eq!(r2["choices"][0]["message"]["content"], "def");
    assert_eq!(r2["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(), live);
    let suffix = format!("{EOS}{USER}fed{ASSISTANT}<think>");
    assert_eq!(r2["usage"]["prompt_tokens"].as_u64().unwrap(), live + n_tokens(&suffix));
}

#[test]
fn evict_keyed_by_responses_visible() {
    let srv = start();
    let r1 = ok(srv.addr, "/v1/responses", &json!({"model":"deepseek-chat","input":"cba"}));
    assert_eq!(r1["output"][0]["content"][0]["text"], "abc");
    let live = r1["usage"]["input_tokens"].as_u64().unwrap() + r1["usage"]["output_tokens"].as_u64().unwrap();
    ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-chat","messages":[{"role":"user","content":"zyx"}]}));
    let visible = format!("<｜begin▁of▁sentence｜>{USER}cba{ASSISTANT}</think>abc{EOS}");
    assert!(files(&srv.dir).contains(&(2, visible)), "{:?}", files(&srv.dir));
    let items = json!([{"role":"user","content":"cba"},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"abc"}]},
        {"role":"user","content":"fed"}]);
    let r2 = ok(srv.addr, "/v1/responses", &json!({"model":"deepseek-chat","input":items}));
    assert_eq!(r2["output"][0]["content"][0]["text"], "def");
    assert_eq!(r2["usage"]["input_tokens_details"]["cached_tokens"].as_u64().unwrap(), live);
    assert!(srv.logs.lock().unwrap().iter().any(|l| l.contains("kv cache hit") && l.contains("key=responses-visible")));
}
