//! HTTP-layer tests against a scripted test-only engine (the shipped binary
//! has no fake engine; black-box tests with the real model are in tests/py).
//!
//! The mock model answers with the reversed text of the last user message
//! (thinking mode: reasoning "r", then `</think>`, then the answer), so every
//! client can check that it got *its* answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[path = "common/mock.rs"]
mod mock;
use mock::{Codec, Delays, Mock, TestRender, VOCAB};
#[path = "common/http.rs"]
mod http;
use http::{get, post, raw_request};

struct TestServer {
    addr: std::net::SocketAddr,
    d: Delays,
    _srv: http::Running,
}

fn start(ctx: usize, cors: bool, api_key: Option<&str>) -> TestServer {
    let d = Delays::default();
    let mock = Mock { ctx, toks: vec![], logits: vec![0.0; VOCAB], d: d.clone() };
    let opts = ds4_server::server::ServerOptions { cors, api_key: api_key.map(String::from), ..http::options(ctx) };
    let srv = http::serve(mock, Arc::new(Codec), Arc::new(TestRender), opts);
    TestServer { addr: srv.addr, d, _srv: srv }
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("bad JSON {e}: {s:?}"))
}

fn sse_data(body: &str) -> Vec<String> {
    body.lines().filter_map(|l| l.strip_prefix("data: ")).map(String::from).collect()
}

fn chat_body(user: &str, extra: &str) -> String {
    format!(r#"{{"model":"deepseek-chat","messages":[{{"role":"user","content":{}}}]{extra}}}"#, serde_json::to_string(user).unwrap())
}

#[test]
fn models_routes_options_and_cors() {
    let srv = start(4096, false, None);
    let r = get(srv.addr, "/v1/models");
    assert_eq!(r.status, 200);
    assert!(r.head.contains("connection: close"));
    let v = json(&r.body);
    assert_eq!(v["data"][0]["id"], "deepseek-v4-flash");
    assert_eq!(v["data"][0]["context_length"], 4096);
    assert_eq!(v["data"][0]["top_provider"]["max_completion_tokens"], 1000);
    assert_eq!(json(&get(srv.addr, "/v1/models/deepseek-v4-flash").body)["object"], "model");
    let r = get(srv.addr, "/nope");
    assert_eq!(r.status, 404);
    assert_eq!(json(&r.body)["error"]["message"], "unknown endpoint");
    let r = raw_request(srv.addr, b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 204);
    assert!(!r.head.contains("content-type"));
    assert!(!r.head.contains("access-control"));
    let cors = start(4096, true, None);
    let r = raw_request(cors.addr, b"OPTIONS /x HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 204);
    assert!(r.head.contains("access-control-allow-origin: *"));
    // hyper never sends Content-Length on a 204 (RFC 9110 §8.6 forbids it);
    // the body is empty either way.
    assert!(r.body.is_empty());
    let r = post(cors.addr, "/v1/chat/completions", &chat_body("ab", r#","stream":true"#));
    assert!(r.head.contains("access-control-allow-methods: get, post, options"));
    assert!(r.head.contains("text/event-stream"));
}

#[test]
fn chat_completion_and_usage() {
    let srv = start(4096, false, None);
    let r = post(srv.addr, "/v1/chat/completions", &chat_body("olleh", ""));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = json(&r.body);
    assert_eq!(v["choices"][0]["message"]["content"], "hello");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["choices"][0]["message"].get("reasoning_content").is_none());
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let u = &v["usage"];
    assert_eq!(u["completion_tokens"], 5);
    assert_eq!(u["total_tokens"], u["prompt_tokens"].as_u64().unwrap() + 5);
    // Thinking mode: reasoning split out.
    let r = post(srv.addr, "/v1/chat/completions", &chat_body("cba", r#","model":"deepseek-reasoner""#));
    let v = json(&r.body);
    assert_eq!(v["choices"][0]["message"]["reasoning_content"], "r");
    assert_eq!(v["choices"][0]["message"]["content"], "abc");
    assert_eq!(v["model"], "deepseek-reasoner");
    // max_tokens cap.
    let v = json(&post(srv.addr, "/v1/chat/completions", &chat_body("olleh", r#","max_tokens":2"#)).body);
    assert_eq!(v["choices"][0]["message"]["content"], "he");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    // Stop string.
    let v = json(&post(srv.addr, "/v1/chat/completions", &chat_body("olleh", r#","stop":["ll","x"]"#)).body);
    assert_eq!(v["choices"][0]["message"]["content"], "he");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
}

#[test]
fn streaming_sequences() {
    let srv = start(4096, false, None);
    let r = post(srv.addr, "/v1/chat/completions", &chat_body("cba", r#","model":"x","stream":true,"stream_options":{"include_usage":true}"#));
    assert_eq!(r.status, 200);
    assert!(r.head.contains("cache-control: no-cache"));
    let d = sse_data(&r.body);
    assert_eq!(d.last().unwrap(), "[DONE]");
    let chunks: Vec<serde_json::Value> = d[..d.len() - 1].iter().map(|s| json(s)).collect();
    assert_eq!(chunks[0]["choices"][0]["delta"], serde_json::json!({"role":"assistant"}));
    let reasoning: String = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str()).collect();
    let content: String = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!((reasoning.as_str(), content.as_str()), ("r", "abc"));
    let fin = &chunks[chunks.len() - 2];
    assert_eq!(fin["choices"][0]["finish_reason"], "stop");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    assert!(!r.body.contains("think>"));

    // Completions stream: raw text incl. reasoning markup.
    let r = post(srv.addr, "/v1/completions", r#"{"prompt":"ba","stream":true}"#);
    let d = sse_data(&r.body);
    let text: String = d[..d.len() - 1].iter().map(|s| json(s)["choices"][0]["text"].as_str().unwrap().to_string()).collect();
    assert_eq!(text, "r</think>ab");
    // Anthropic stream.
    let r = post(srv.addr, "/v1/messages", r#"{"max_tokens":50,"messages":[{"role":"user","content":"ba"}],"stream":true}"#);
    let events: Vec<&str> = r.body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    assert_eq!(
        events,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ],
        "{}",
        r.body
    );
}

#[test]
fn errors_and_limits_keep_server_up() {
    let srv = start(256, false, None);
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"{".to_vec(), 400, "invalid JSON request"),
        (br#"{"messages":[],"temperature":"x"}"#.to_vec(), 400, "invalid JSON request"),
        (br#"{"model":"m"}"#.to_vec(), 400, "missing messages"),
        (b"{\"messages\":[{\"content\":\"\xff\xfe\"}]}".to_vec(), 400, "request body is not valid UTF-8"),
        (vec![b' '; 2 << 20], 400, "bad HTTP request"),
    ];
    for (body, status, msg) in cases {
        let mut raw = format!("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        raw.extend_from_slice(&body);
        let r = raw_request(srv.addr, &raw);
        assert_eq!(r.status, status, "{msg}");
        assert_eq!(json(&r.body)["error"]["message"], msg);
        assert_eq!(json(&r.body)["error"]["type"], "invalid_request_error");
    }
    // Context overflow: prompt length ≥ ctx.
    let long = "a".repeat(300);
    let r = post(srv.addr, "/v1/chat/completions", &chat_body(&long, ""));
    assert_eq!(r.status, 400);
    let e = &json(&r.body)["error"];
    assert_eq!(e["code"], "context_length_exceeded");
    assert_eq!(e["param"], "messages");
    assert_eq!(e["n_ctx"], 256);
    let r = post(srv.addr, "/v1/messages", &format!(r#"{{"max_tokens":5,"messages":[{{"role":"user","content":"{long}"}}]}}"#));
    let v = json(&r.body);
    assert_eq!((r.status, v["type"].as_str()), (400, Some("error")));
    assert_eq!(v["error"]["n_ctx"], 256);
    let r = post(srv.addr, "/v1/completions", &format!(r#"{{"prompt":"{long}"}}"#));
    assert_eq!(json(&r.body)["error"]["param"], "prompt");
    // Still serving.
    assert_eq!(json(&post(srv.addr, "/v1/chat/completions", &chat_body("ko", "")).body)["choices"][0]["message"]["content"], "ok");
}

#[test]
fn api_key() {
    let srv = start(4096, false, Some("sekret"));
    assert_eq!(get(srv.addr, "/v1/models").status, 401);
    let ok = raw_request(srv.addr, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\n\r\n");
    assert_eq!(ok.status, 200);
    let ok = raw_request(srv.addr, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nx-api-key: sekret\r\n\r\n");
    assert_eq!(ok.status, 200);
    let bad = raw_request(srv.addr, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nx-api-key: nope\r\n\r\n");
    assert_eq!(bad.status, 401);
}

#[test]
fn prefix_reuse_and_warmup() {
    let srv = start(4096, false, None);
    let first = json(&post(srv.addr, "/v1/chat/completions", &chat_body("cba", "")).body);
    assert_eq!(first["choices"][0]["message"]["content"], "abc");
    let p1 = first["usage"]["prompt_tokens"].as_u64().unwrap();
    let c1 = first["usage"]["completion_tokens"].as_u64().unwrap();
    let second = format!(
        r#"{{"model":"deepseek-chat","messages":[{{"role":"user","content":"cba"}},{{"role":"assistant","content":"abc"}},{{"role":"user","content":"fed"}}]}}"#
    );
    let v = json(&post(srv.addr, "/v1/chat/completions", &second).body);
    assert_eq!(v["choices"][0]["message"]["content"], "def");
    let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
    assert_eq!(cached, p1 + c1, "second turn reuses prompt + reply");
    // max_tokens 0 warms the cache; the real request then hits it.
    let warm = json(&post(srv.addr, "/v1/chat/completions", &chat_body("zyx", r#","max_tokens":0"#)).body);
    assert_eq!(warm["choices"][0]["message"]["content"], "");
    assert_eq!(warm["choices"][0]["finish_reason"], "length");
    assert_eq!(warm["usage"]["completion_tokens"], 0);
    let p = warm["usage"]["prompt_tokens"].as_u64().unwrap();
    let real = json(&post(srv.addr, "/v1/chat/completions", &chat_body("zyx", "")).body);
    assert_eq!(real["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(), p);
    assert_eq!(real["usage"]["prompt_tokens_details"]["cache_write_tokens"], 0);
    assert_eq!(real["choices"][0]["message"]["content"], "xyz");
}

#[test]
fn thinking_visible_binding_reuses_live_state() {
    let srv = start(4096, false, None);
    let first = json(&post(srv.addr, "/v1/chat/completions", &chat_body("cba", r#","model":"deepseek-reasoner""#)).body);
    assert_eq!(first["choices"][0]["message"]["reasoning_content"], "r");
    let p1 = first["usage"]["prompt_tokens"].as_u64().unwrap();
    let c1 = first["usage"]["completion_tokens"].as_u64().unwrap();
    // The client replays without reasoning; the live KV still has it.
    let second = r#"{"model":"deepseek-reasoner","messages":[{"role":"user","content":"cba"},{"role":"assistant","content":"abc"},{"role":"user","content":"fed"}]}"#;
    let v = json(&post(srv.addr, "/v1/chat/completions", second).body);
    assert_eq!(v["choices"][0]["message"]["content"], "def");
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(), p1 + c1);
}

#[test]
fn concurrent_clients_and_disconnect() {
    let srv = start(8192, false, None);
    srv.d.decode_us.store(3000, Ordering::Relaxed);
    // A streaming client that disconnects after the first bytes.
    let addr = srv.addr;
    let long: String = (0..200).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let quitter = std::thread::spawn(move || {
        let body = chat_body(&long, r#","stream":true"#);
        let raw = format!("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        drop(s);
    });
    quitter.join().unwrap();
    let evals_before = srv.d.evals.load(Ordering::Relaxed);
    let handles: Vec<_> = (0..32)
        .map(|i| {
            std::thread::spawn(move || {
                let word = format!("w{i:02}x");
                let stream = i % 2 == 0;
                let r = post(addr, "/v1/chat/completions", &chat_body(&word, if stream { r#","stream":true"# } else { "" }));
                assert_eq!(r.status, 200);
                let content: String = if stream {
                    let d = sse_data(&r.body);
                    d[..d.len() - 1].iter().filter_map(|s| json(s)["choices"][0]["delta"]["content"].as_str().map(String::from)).collect()
                } else {
                    json(&r.body)["choices"][0]["message"]["content"].as_str().unwrap().to_string()
                };
                assert_eq!(content, word.chars().rev().collect::<String>());
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // The quitter's 200-token answer was abandoned: far fewer evals than its
    // full length plus the 32 short answers.
    let evals = srv.d.evals.load(Ordering::Relaxed);
    assert!(evals < 32 * 5 + 200, "evals {evals_before} -> {evals}");
}
