//! Tool-call flows that need a model emitting DSML: the scripted engine
//! answers with the token-reversed last user message, so a user message
//! holding reversed DSML makes it "call" a tool. Prompts are rendered by the
//! shipped ds4 renderer (`real::TokRender`).
//!
//! Covers SERVING.md §7.4 (400 vs 409 for Anthropic and Responses tool
//! outputs), §11 #28-#30 (live tails, namespace / tool_search output items,
//! the responses-visible binding with and without reasoning summaries).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ds4_server::engine::TextCodec;
use ds4_server::log::Trace;
use ds4_server::real::TokRender;
use ds4_server::server::ServerOptions;
use serde_json::{json, Value};

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
    d: Delays,
    trace: std::path::PathBuf,
    srv: http::Running,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.srv.stop();
        let _ = std::fs::remove_file(&self.trace);
    }
}

fn start() -> TestServer {
    let d = Delays::default();
    let mock = Mock { ctx: 8192, toks: vec![], logits: vec![0.0; VOCAB], d: d.clone() };
    let trace = std::env::temp_dir().join(format!("ds4-tools-mock-{}-{}.trace", std::process::id(), ds4_server::ids::random_hex(4)));
    let opts = ServerOptions { trace: Some(Arc::new(Trace::open(&trace).unwrap())), ..http::options(8192) };
    let srv = http::serve(mock, Arc::new(Codec), Arc::new(TokRender), opts);
    TestServer { addr: srv.addr, d, trace, srv }
}

impl TestServer {
    /// The `reuse` decision the trace recorded for a response id.
    fn reuse_of(&self, id: &str) -> String {
        let t = std::fs::read_to_string(&self.trace).unwrap();
        let line = t.lines().find(|l| l.contains(&format!(" {id} prompt ("))).unwrap_or_else(|| panic!("{id} not in trace"));
        line.split("reuse ").nth(1).unwrap().split(',').next().unwrap().to_string()
    }
}

fn post(addr: SocketAddr, path: &str, body: &Value) -> (u16, String) {
    let r = http::post(addr, path, &body.to_string());
    (r.status, r.body)
}

fn sse(body: &str) -> Vec<Value> {
    body.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|d| *d != "[DONE]").map(|d| serde_json::from_str(d).unwrap()).collect()
}

/// The user text that makes the mock answer exactly `out`.
fn say(out: &str) -> String {
    let mut ids = Codec.encode_chat(out);
    ids.reverse();
    String::from_utf8(Codec.decode(&ids)).unwrap()
}

fn invoke(name: &str, params: &[(&str, &str)]) -> String {
    let mut s = format!("<｜DSML｜invoke name=\"{name}\">\n");
    for (k, v) in params {
        s += &format!("<｜DSML｜parameter name=\"{k}\" string=\"true\">{v}</｜DSML｜parameter>\n");
    }
    s + "</｜DSML｜invoke>\n"
}

fn dsml(invokes: &[String]) -> String {
    format!("<｜DSML｜tool_calls>\n{}</｜DSML｜tool_calls>", invokes.concat())
}

fn exec_call() -> String {
    dsml(&[invoke("exec", &[("cmd", "ls")])])
}

fn n_tokens(s: &str) -> u64 {
    Codec.encode_chat(s).len() as u64
}

const EXEC_TOOL: &str = r#"{"type":"function","name":"exec","description":"Run","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}"#;

fn responses_call(srv: &TestServer) -> (Value, String) {
    let r = ok(
        srv.addr,
        "/v1/responses",
        &json!({"model":"deepseek-chat","tools":[serde_json::from_str::<Value>(EXEC_TOOL).unwrap()],"input":[{"role":"user","content":say(&exec_call())}]}),
    );
    let out = r["output"].as_array().unwrap();
    assert_eq!(out.len(), 1, "{r}");
    let call_id = out[0]["call_id"].as_str().unwrap().to_string();
    (r, call_id)
}

#[test]
fn responses_tool_call_live_tail_and_conflict() {
    let srv = start();
    let (r, call_id) = responses_call(&srv);
    assert_eq!(r["status"], "completed");
    let item = &r["output"][0];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec");
    assert_eq!(item["arguments"], r#"{"cmd":"ls"}"#);
    assert!(item["id"].as_str().unwrap().starts_with("fc_") && call_id.starts_with("call_"));
    let live = r["usage"]["input_tokens"].as_u64().unwrap() + r["usage"]["output_tokens"].as_u64().unwrap();
    // §11 #29: the outputs of exactly the live calls continue from the live
    // state; the live tail renders only the tool outputs.
    let out_only = json!({"model":"deepseek-chat","tools":[serde_json::from_str::<Value>(EXEC_TOOL).unwrap()],
        "input":[{"type":"function_call_output","call_id":call_id,"output":"a.txt"}]});
    let r2 = ok(srv.addr, "/v1/responses", &out_only);
    assert_eq!(r2["usage"]["input_tokens_details"]["cached_tokens"].as_u64().unwrap(), live);
    let tail = format!("{EOS}{USER}<tool_result>a.txt</tool_result>{ASSISTANT}</think>");
    assert_eq!(r2["usage"]["input_tokens"].as_u64().unwrap(), live + n_tokens(&tail));
    assert_eq!(srv.reuse_of(r2["id"].as_str().unwrap()), "ResponsesToolOutput");
    // The live state has moved on: the same outputs are now unknown → 400.
    let (s, b) = post(srv.addr, "/v1/responses", &out_only);
    assert_eq!(s, 400);
    assert!(b.contains(&format!("Responses continuation state is not available for call_id {call_id}")), "{b}");
    // §7.4 409: valid when parsed (live-known), stale when run.
    let (_, call_id) = responses_call(&srv);
    let out_only = json!({"model":"deepseek-chat","input":[{"type":"function_call_output","call_id":call_id,"output":"a.txt"}]});
    let (first, second) = race(&srv, "/v1/responses", &out_only);
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(second.0, 409, "{}", second.1);
    let e: Value = serde_json::from_str(second.1.trim()).unwrap();
    assert_eq!(
        e["error"]["message"],
        "Responses continuation state is not available; retry by replaying the full input history"
    );
}

/// Two identical requests that depend on the live binding: the second is
/// parsed while the first (slow) one runs and moves the live state on.
fn race(srv: &TestServer, path: &'static str, body: &Value) -> ((u16, String), (u16, String)) {
    srv.d.decode_us.store(20_000, Ordering::Relaxed);
    let (addr, b1, b2) = (srv.addr, body.clone(), body.clone());
    let t1 = std::thread::spawn(move || post(addr, path, &b1));
    std::thread::sleep(Duration::from_millis(150));
    let t2 = std::thread::spawn(move || post(addr, path, &b2));
    let res = (t1.join().unwrap(), t2.join().unwrap());
    srv.d.decode_us.store(0, Ordering::Relaxed);
    res
}

#[test]
fn anthropic_tool_results_400_409_and_full_replay() {
    let srv = start();
    let tools = json!([{"name":"exec","description":"Run","input_schema":{"type":"object"}}]);
    let call = |srv: &TestServer| {
        let r = ok(srv.addr, "/v1/messages", &json!({"model":"deepseek-chat","max_tokens":500,"tools":tools,
            "messages":[{"role":"user","content":say(&exec_call())}]}));
        assert_eq!(r["stop_reason"], "tool_use", "{r}");
        let tu = r["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_use").unwrap().clone();
        assert!(tu["id"].as_str().unwrap().starts_with("toolu_"));
        assert_eq!(tu["input"], json!({"cmd":"ls"}));
        (r, tu)
    };
    let (r, tu) = call(&srv);
    let id = tu["id"].as_str().unwrap().to_string();
    let live = r["usage"]["cache_creation_input_tokens"].as_u64().unwrap() + r["usage"]["output_tokens"].as_u64().unwrap();
    // §11 #28: live tail of tool results only (no tool name rendered).
    let result_only = json!({"model":"deepseek-chat","max_tokens":3,"tools":tools,
        "messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":"out"}]}]});
    let r2 = ok(srv.addr, "/v1/messages", &result_only);
    assert_eq!(r2["usage"]["cache_read_input_tokens"].as_u64().unwrap(), live);
    let tail = format!("{EOS}{USER}<tool_result>out</tool_result>{ASSISTANT}</think>");
    assert_eq!(r2["usage"]["cache_creation_input_tokens"].as_u64().unwrap(), n_tokens(&tail));
    assert_eq!(srv.reuse_of(r2["id"].as_str().unwrap()), "AnthropicToolOutput");
    // Neither live nor replayed any more → 400.
    let (s, b) = post(srv.addr, "/v1/messages", &result_only);
    assert_eq!(s, 400);
    assert!(b.contains(&format!("Anthropic continuation state is not available for tool_use_id {id}")), "{b}");
    // §7.4: live-known at parse time, stale when it runs → 409.
    let (_, tu) = call(&srv);
    let id = tu["id"].as_str().unwrap().to_string();
    let result_only = json!({"model":"deepseek-chat","max_tokens":40,
        "messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":"out"}]}]});
    let (first, second) = race(&srv, "/v1/messages", &result_only);
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(second.0, 409, "{}", second.1);
    assert!(second.1.contains("Anthropic continuation state is not available; retry by replaying the full messages history"));
    // A full replay (tool_use earlier, `content` before `role`) needs no live state.
    let full = json!({"model":"deepseek-chat","max_tokens":3,"tools":tools,"messages":[
        {"role":"user","content":say(&exec_call())},
        {"content":[tu],"role":"assistant"},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":"out"}]}]});
    ok(srv.addr, "/v1/messages", &full);
    ok(srv.addr, "/v1/messages", &full);
}

#[test]
fn responses_namespace_and_tool_search_items() {
    let srv = start();
    let tools = json!([
        {"type":"namespace","name":"fs.","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}]},
        {"type":"tool_search"}]);
    let both = dsml(&[invoke("fs.read", &[("path", "a")]), invoke("tool_search", &[("query", "q")])]);
    let body = json!({"model":"deepseek-chat","tools":tools,"input":say(&both)});
    let r = ok(srv.addr, "/v1/responses", &body);
    let out = r["output"].as_array().unwrap();
    assert_eq!(out.len(), 2, "{r}");
    assert_eq!(out[0]["type"], "function_call");
    assert_eq!((&out[0]["name"], &out[0]["namespace"]), (&json!("read"), &json!("fs.")));
    assert_eq!(out[0]["arguments"], r#"{"path":"a"}"#);
    assert_eq!(out[1]["type"], "tool_search_call");
    assert_eq!(out[1]["execution"], "client");
    assert_eq!(out[1]["arguments"], json!({"query":"q"}));
    assert!(out[1]["call_id"].as_str().unwrap().starts_with("call_"));
    // Streaming: calls at the end in opening order; tool_search skips the
    // argument events; the terminal event carries the same items.
    let mut sbody = body.clone();
    sbody["stream"] = json!(true);
    let (s, b) = post(srv.addr, "/v1/responses", &sbody);
    assert_eq!(s, 200);
    let ev = sse(&b);
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(e["sequence_number"], i);
    }
    assert_eq!(ev[1]["item"]["status"], "in_progress");
    assert_eq!(ev[1]["item"]["arguments"], "");
    assert_eq!(ev[3]["namespace"], "fs.");
    assert_eq!(ev[3]["name"], "read");
    assert_eq!(ev[5]["output_index"], 1);
    let fin = &ev[7]["response"];
    assert_eq!(fin["output"][0]["id"], ev[1]["item"]["id"]);
    assert_eq!(fin["output"][1]["type"], "tool_search_call");
    assert_eq!(fin["status"], "completed");
    // A function literally named tool_search stays a function_call.
    let plain = json!({"model":"deepseek-chat","input":say(&dsml(&[invoke("tool_search", &[("query", "q")])])),
        "tools":[{"type":"function","name":"tool_search","parameters":{"type":"object"}}]});
    let r = ok(srv.addr, "/v1/responses", &plain);
    assert_eq!(r["output"][0]["type"], "function_call");
    assert_eq!(r["output"][0]["name"], "tool_search");
}

#[test]
fn responses_visible_binding_reasoning_only_with_summary() {
    // §7.3 / §11 #29: the visible transcript holds the reasoning only for a
    // tool-call turn with summaries on (the client can replay only what it got).
    let srv = start();
    let tools = json!([serde_json::from_str::<Value>(EXEC_TOOL).unwrap()]);
    for summary in [true, false] {
        let mut body = json!({"model":"deepseek-reasoner","tools":tools,"input":[{"role":"user","content":say(&exec_call())}]});
        if summary {
            body["reasoning"] = json!({"effort":"high","summary":"auto"});
        }
        let r = ok(srv.addr, "/v1/responses", &body);
        let out = r["output"].as_array().unwrap().clone();
        let call = out.iter().find(|o| o["type"] == "function_call").unwrap().clone();
        let reasoning = out.iter().find(|o| o["type"] == "reasoning");
        assert_eq!(reasoning.is_some(), summary, "{r}");
        let live = r["usage"]["input_tokens"].as_u64().unwrap() + r["usage"]["output_tokens"].as_u64().unwrap();
        // Codex-style stateless replay of everything the client received.
        let mut items = vec![json!({"role":"user","content":say(&exec_call())})];
        if let Some(rs) = reasoning {
            items.push(rs.clone());
        }
        items.push(call.clone());
        items.push(json!({"type":"function_call_output","call_id":call["call_id"],"output":"a.txt"}));
        let mut next = json!({"model":"deepseek-reasoner","tools":tools,"input":items});
        next["reasoning"] = body["reasoning"].clone();
        let r2 = ok(srv.addr, "/v1/responses", &next);
        assert_eq!(r2["usage"]["input_tokens_details"]["cached_tokens"].as_u64().unwrap(), live, "summary={summary}");
        assert_eq!(srv.reuse_of(r2["id"].as_str().unwrap()), "ResponsesVisible", "summary={summary}");
    }
}

/// Generated order and decoded entities in call arguments (§11 #6, #14), the
/// OpenAI stream order and live argument fragments (#18, #20), Anthropic
/// live tool_use (#17), exact replay of reordered client JSON (#8, #27),
/// malformed DSML as text (#11).
#[test]
fn tool_call_streaming_order_and_exact_replay() {
    let srv = start();
    let block = dsml(&[format!(
        "<｜DSML｜invoke name=\"exec\">\n<｜DSML｜parameter name=\"z\" string=\"true\">1 &amp;&amp; 2</｜DSML｜parameter>\n\
         <｜DSML｜parameter name=\"a\" string=\"false\">[1,2]</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
    )]);
    let want_args = r#"{"z":"1 && 2","a":[1,2]}"#;
    let user = say(&format!("Hello.\n\n{block}"));
    let tools = json!([{"type":"function","function":{"name":"exec","parameters":{"type":"object"}}}]);
    let req = json!({"model":"deepseek-reasoner","tools":tools,"messages":[{"role":"user","content":user}]});
    // OpenAI stream: role < reasoning < content < tool_calls < [DONE].
    let mut sreq = req.clone();
    sreq["stream"] = json!(true);
    let (s, body) = post(srv.addr, "/v1/chat/completions", &sreq);
    assert_eq!(s, 200);
    assert!(body.contains("data: [DONE]"));
    assert!(!body.contains("DSML") && !body.contains("<think>") && !body.contains("</think>"), "{body}");
    let chunks = sse(&body);
    let mut kinds = Vec::new();
    let (mut reasoning, mut content, mut args, mut ids) = (String::new(), String::new(), String::new(), Vec::new());
    for c in &chunks {
        let d = &c["choices"][0]["delta"];
        if d["role"] == "assistant" {
            kinds.push("role");
        }
        if let Some(t) = d["reasoning_content"].as_str() {
            reasoning += t;
            kinds.push("reasoning");
        }
        if let Some(t) = d["content"].as_str() {
            content += t;
            kinds.push("content");
        }
        if let Some(tc) = d["tool_calls"].as_array() {
            if let Some(id) = tc[0]["id"].as_str() {
                ids.push(id.to_string());
                assert_eq!(tc[0]["function"]["name"], "exec");
            }
            args += tc[0]["function"]["arguments"].as_str().unwrap_or("");
            kinds.push("tool_calls");
        }
    }
    kinds.dedup();
    assert_eq!(kinds, ["role", "reasoning", "content", "tool_calls"]);
    assert_eq!((reasoning.as_str(), content.as_str(), args.as_str()), ("r", "Hello.", want_args));
    assert_eq!(ids.len(), 1);
    assert!(ids[0].starts_with("call_"));
    assert!(chunks.iter().filter(|c| c["choices"][0]["delta"]["tool_calls"].is_array()).count() > 3, "arguments stream in fragments");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
    // Non-streaming: the same call; generated key order kept.
    let (s, raw) = post(srv.addr, "/v1/chat/completions", &req);
    assert_eq!(s, 200);
    assert!(raw.contains(r#""arguments":"{\"z\":\"1 && 2\",\"a\":[1,2]}""#), "{raw}");
    let v: Value = serde_json::from_str(raw.trim()).unwrap();
    let call = v["choices"][0]["message"]["tool_calls"][0].clone();
    let live = v["usage"]["prompt_tokens"].as_u64().unwrap() + v["usage"]["completion_tokens"].as_u64().unwrap();
    // The client sends the call back with its keys reordered: exact replay
    // renders the sampled bytes, so the live state extends (nothing re-prefilled).
    let mut call2 = call.clone();
    call2["function"]["arguments"] = json!(r#"{"a": [1, 2], "z": "1 && 2"}"#);
    let next = json!({"model":"deepseek-reasoner","tools":tools,"messages":[
        {"role":"user","content":user},
        {"role":"assistant","content":"Hello.","reasoning_content":"r","tool_calls":[call2]},
        {"role":"tool","tool_call_id":call["id"],"content":"ok"}]});
    let r2 = ok(srv.addr, "/v1/chat/completions", &next);
    assert_eq!(r2["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(), live);

    // Anthropic: live tool_use block, fragments, same id as the parsed call.
    let areq = json!({"model":"deepseek-chat","max_tokens":500,"stream":true,
        "tools":[{"name":"exec","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":say(&block)}]});
    let (s, body) = post(srv.addr, "/v1/messages", &areq);
    assert_eq!(s, 200);
    let ev = sse(&body);
    let start = ev.iter().find(|e| e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use").unwrap();
    let tid = start["content_block"]["id"].as_str().unwrap().to_string();
    assert!(tid.starts_with("toolu_"));
    let frags: Vec<&str> = ev
        .iter()
        .filter(|e| e["type"] == "content_block_delta" && e["delta"]["type"] == "input_json_delta")
        .map(|e| e["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert!(frags.len() > 3);
    assert_eq!(frags.concat(), want_args);
    assert_eq!(ev.iter().find(|e| e["type"] == "message_delta").unwrap()["delta"]["stop_reason"], "tool_use");
    // That id is the one tool memory knows: a full replay renders the sampled block.
    let replay = json!({"model":"deepseek-chat","max_tokens":2,"tools":[{"name":"exec","input_schema":{"type":"object"}}],"messages":[
        {"role":"user","content":say(&block)},
        {"role":"assistant","content":[{"type":"tool_use","id":tid,"name":"exec","input":{"a":[1,2],"z":"1 && 2"}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":tid,"content":"ok"}]}]});
    ok(srv.addr, "/v1/messages", &replay);
    let trace = std::fs::read_to_string(&srv.trace).unwrap();
    assert!(trace.contains(&format!("{block}{EOS}{USER}<tool_result>ok</tool_result>")), "sampled block not replayed verbatim");

    // Malformed DSML (invoke without a name): plain text, no calls, finish stop.
    let bad = "<｜DSML｜tool_calls>\n<｜DSML｜invoke>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
    let r = ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-chat","tools":tools,"messages":[{"role":"user","content":say(bad)}]}));
    assert_eq!(r["choices"][0]["finish_reason"], "stop");
    assert!(r["choices"][0]["message"]["tool_calls"].is_null());
    assert_eq!(r["choices"][0]["message"]["content"], bad);
}

/// §11 #23: a prompt of exactly ctx tokens is already too long.
#[test]
fn context_boundary() {
    let srv = start();
    // Rendered: BOS User <content> Assistant </think> = content + 4 tokens.
    let body = |n: usize| json!({"model":"deepseek-chat","max_tokens":1,"messages":[{"role":"user","content":"a".repeat(n)}]});
    let (s, b) = post(srv.addr, "/v1/chat/completions", &body(8192 - 4));
    assert_eq!(s, 400, "{b}");
    let e: Value = serde_json::from_str(b.trim()).unwrap();
    assert_eq!((e["error"]["n_prompt_tokens"].as_u64(), e["error"]["n_ctx"].as_u64()), (Some(8192), Some(8192)));
    let (s, b) = post(srv.addr, "/v1/chat/completions", &body(8192 - 5));
    assert_eq!(s, 200, "{b}");
}

/// §11 #33: the thinking-visible binding exists only for thinking turns
/// without tools or tool history that finished with `stop`; its text is the
/// next request's rendered prefix (also with empty content, over turns).
#[test]
fn thinking_visible_binding_rules() {
    let srv = start();
    let turn = |model: &str, msgs: Value, tools: Option<Value>| {
        let mut b = json!({"model":model,"messages":msgs});
        if let Some(t) = tools {
            b["tools"] = t;
        }
        let r = ok(srv.addr, "/v1/chat/completions", &b);
        let id = r["id"].as_str().unwrap().to_string();
        (r, id)
    };
    let user = |t: &str| json!({"role":"user","content":t});
    let asst = |t: &str| json!({"role":"assistant","content":t});
    // Thinking, no tools: three turns, each continuing the live state.
    let (r1, _) = turn("deepseek-reasoner", json!([user("cba")]), None);
    assert_eq!(r1["choices"][0]["message"]["content"], "abc");
    let (_, id2) = turn("deepseek-reasoner", json!([user("cba"), asst("abc"), user("fed")]), None);
    assert_eq!(srv.reuse_of(&id2), "ThinkingVisible");
    // Empty content (the mock answers "" to an empty message).
    let (r3, id3) = turn("deepseek-reasoner", json!([user("cba"), asst("abc"), user("fed"), asst("def"), user("")]), None);
    assert_eq!(srv.reuse_of(&id3), "ThinkingVisible");
    assert_eq!(r3["choices"][0]["message"]["content"], "");
    let (_, id4) = turn("deepseek-reasoner", json!([user("cba"), asst("abc"), user("fed"), asst("def"), user(""), asst(""), user("ih")]), None);
    assert_eq!(srv.reuse_of(&id4), "ThinkingVisible");
    // Non-thinking: no binding (the plain token prefix continues instead).
    turn("deepseek-chat", json!([user("lkj")]), None);
    let (_, id) = turn("deepseek-chat", json!([user("lkj"), asst("jkl"), user("onm")]), None);
    assert_eq!(srv.reuse_of(&id), "MemoryToken");
    // Thinking with tools active: reasoning stays in the prompt, no binding.
    let tools = json!([{"type":"function","function":{"name":"exec","parameters":{"type":"object"}}}]);
    turn("deepseek-reasoner", json!([user("rqp")]), Some(tools.clone()));
    let mut a = asst("pqr");
    a["reasoning_content"] = json!("r");
    let (_, id) = turn("deepseek-reasoner", json!([user("rqp"), a, user("uts")]), Some(tools));
    assert_eq!(srv.reuse_of(&id), "MemoryToken");
    // Finish `length` (cut inside the answer): no binding.
    let r = ok(srv.addr, "/v1/chat/completions", &json!({"model":"deepseek-reasoner","max_tokens":3,"messages":[user("zyxw")]}));
    assert_eq!(r["choices"][0]["finish_reason"], "length");
    let (_, id) = turn("deepseek-reasoner", json!([user("zyxw"), asst("w"), user("a")]), None);
    assert_ne!(srv.reuse_of(&id), "ThinkingVisible");
}
