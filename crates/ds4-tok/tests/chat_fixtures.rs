//! Chat rendering against ds4's own renderings (shared/fixtures/chat, field
//! `ds4.expected_rendering` for `ds4.request_body` at `ds4.ctx_size`, and the ds4_endpoints
//! cases). The request bodies are mapped onto `ds4_tok::chat` types by a minimal test-only
//! version of the front ends' normalisation (SERVING.md §3.4, §5.3, §5.4).

mod common;
use common::*;
use ds4_tok::chat::{self, Chat, Message, Role, ThinkingMode, ToolCall};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// SERVING.md §3.4: string; null -> ""; array -> strings and `text` fields concatenated.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|e| match e {
                Value::String(s) => s.as_str(),
                Value::Object(o) => o.get("text").and_then(|t| t.as_str()).unwrap_or(""),
                _ => "",
            })
            .collect(),
        _ => String::new(),
    }
}

#[derive(Deserialize)]
struct RawTool<'a> {
    #[serde(borrow, default)]
    function: Option<&'a RawValue>,
}

/// Raw schema lines: the `function` value of OpenAI-wrapped tools, else the whole element.
fn tool_lines(body: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Tools<'a> {
        #[serde(borrow, default)]
        tools: Option<Vec<&'a RawValue>>,
    }
    let t: Tools = serde_json::from_str(body).unwrap();
    t.tools
        .unwrap_or_default()
        .into_iter()
        .map(|raw| {
            let w: RawTool = serde_json::from_str(raw.get()).unwrap();
            w.function.unwrap_or(raw).get().to_string()
        })
        .collect()
}

/// SERVING.md §2 thinking controls (the subset the fixtures use).
fn mode_of(v: &Value) -> ThinkingMode {
    let mut mode = ThinkingMode::High;
    let mut explicit = false;
    if let Some(e) = v.get("reasoning_effort").and_then(|e| e.as_str()) {
        mode = ThinkingMode::from_effort(e).unwrap();
    }
    match v.get("thinking") {
        Some(Value::Bool(false)) => (mode, explicit) = (ThinkingMode::None, true),
        Some(Value::Bool(true)) => explicit = true,
        Some(Value::Object(o)) => {
            explicit = true;
            if o.get("type").and_then(|t| t.as_str()) == Some("disabled") {
                mode = ThinkingMode::None;
            }
        }
        _ => {}
    }
    if !explicit && v.get("model").and_then(|m| m.as_str()) == Some("deepseek-chat") {
        mode = ThinkingMode::None;
    }
    mode
}

fn openai_chat(body: &str) -> Chat {
    let v: Value = serde_json::from_str(body).unwrap();
    let messages = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Message {
            role: Role::parse(m.get("role").and_then(|r| r.as_str()).unwrap_or("user")),
            content: content_text(m.get("content")),
            reasoning: content_text(m.get("reasoning_content")),
            tool_calls: m
                .get("tool_calls")
                .and_then(|c| c.as_array())
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| ToolCall::from_value(c["id"].as_str().unwrap_or(""), c["function"]["name"].as_str().unwrap(), &c["function"]["arguments"]))
                        .collect()
                })
                .unwrap_or_default(),
            tool_call_ids: m.get("tool_call_id").and_then(|i| i.as_str()).map(|s| vec![s.to_string()]).unwrap_or_default(),
            replay_dsml: None,
        })
        .collect();
    let tools = if v.get("tool_choice").and_then(|c| c.as_str()) == Some("none") { vec![] } else { tool_lines(body) };
    Chat { messages, tools, mode: mode_of(&v) }
}

fn anthropic_chat(body: &str) -> Chat {
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(rename = "type")]
        ty: String,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        thinking: Option<String>,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(borrow, default)]
        input: Option<&'a RawValue>,
        #[serde(default)]
        content: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Msg<'a> {
        role: String,
        #[serde(borrow)]
        content: &'a RawValue,
    }
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        messages: Vec<Msg<'a>>,
    }
    let v: Value = serde_json::from_str(body).unwrap();
    let mut messages = Vec::new();
    // System: string, or text blocks joined with "\n"; `x-anthropic-` parts dropped.
    let mut system = String::new();
    let parts: Vec<String> = match v.get("system") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().map(|p| p.get("text").and_then(|t| t.as_str()).unwrap_or("").to_string()).collect(),
        _ => vec![],
    };
    for p in parts.iter().filter(|p| !p.starts_with("x-anthropic-")) {
        if !system.is_empty() && !system.ends_with('\n') {
            system.push('\n');
        }
        system.push_str(p);
    }
    if !system.is_empty() {
        messages.push(Message::system(system));
    }
    let b: Body = serde_json::from_str(body).unwrap();
    for m in b.messages {
        let mut msg = Message::new(Role::parse(&m.role), "");
        if let Ok(s) = serde_json::from_str::<String>(m.content.get()) {
            msg.content = s;
        } else {
            let blocks: Vec<Block> = serde_json::from_str(m.content.get()).unwrap();
            for bl in blocks {
                match bl.ty.as_str() {
                    "text" => msg.content.push_str(bl.text.as_deref().unwrap_or("")),
                    "thinking" => msg.reasoning.push_str(bl.thinking.as_deref().unwrap_or("")),
                    "tool_use" => msg.tool_calls.push(ToolCall {
                        id: bl.id.unwrap_or_default(),
                        name: bl.name.unwrap_or_default(),
                        arguments: bl.input.map(|r| r.get().to_string()).unwrap_or_default(),
                    }),
                    "tool_result" => msg.content.push_str(&chat::wrap_tool_result(&content_text(bl.content.as_ref()))),
                    _ => {}
                }
            }
        }
        messages.push(msg);
    }
    Chat { messages, tools: tool_lines(body), mode: mode_of(&v) }
}

fn responses_chat(body: &str) -> Chat {
    let v: Value = serde_json::from_str(body).unwrap();
    let mut messages: Vec<Message> = Vec::new();
    if let Some(s) = v.get("instructions").and_then(|s| s.as_str()) {
        messages.push(Message::system(s));
    }
    let mut pending_reasoning = String::new();
    for item in v["input"].as_array().unwrap() {
        match item.get("type").and_then(|t| t.as_str()).unwrap_or("message") {
            "message" => {
                let role = Role::parse(item["role"].as_str().unwrap());
                let mut m = Message::new(role.clone(), content_text(item.get("content")));
                if role == Role::Assistant {
                    m.reasoning = std::mem::take(&mut pending_reasoning);
                }
                messages.push(m);
            }
            "reasoning" => {
                let text: Vec<String> = ["summary", "content"].iter().map(|k| content_text(item.get(*k))).filter(|s| !s.is_empty()).collect();
                if !pending_reasoning.is_empty() {
                    pending_reasoning.push('\n');
                }
                pending_reasoning.push_str(&text.join("\n"));
            }
            "function_call" => {
                let call = ToolCall::from_value(item["call_id"].as_str().unwrap(), item["name"].as_str().unwrap(), &item["arguments"]);
                match messages.last_mut() {
                    Some(m) if m.role == Role::Assistant => m.tool_calls.push(call),
                    _ => messages.push(Message {
                        role: Role::Assistant,
                        reasoning: std::mem::take(&mut pending_reasoning),
                        tool_calls: vec![call],
                        ..Default::default()
                    }),
                }
            }
            "function_call_output" => messages.push(Message::tool(item["output"].as_str().unwrap())),
            other => panic!("fixture item type {other} not mapped by this test"),
        }
    }
    Chat { messages, tools: tool_lines(body), mode: mode_of(&v) }
}

fn check(name: &str, chat: &Chat, ctx: u64, want: &str) {
    let got = chat.render(ctx);
    if got != want {
        let i = got.bytes().zip(want.bytes()).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
        let lo = i.saturating_sub(60);
        panic!(
            "{name}: rendering differs at byte {i}\n got: {:?}\nwant: {:?}",
            String::from_utf8_lossy(&got.as_bytes()[lo..(i + 60).min(got.len())]),
            String::from_utf8_lossy(&want.as_bytes()[lo..(i + 60).min(want.len())])
        );
    }
    // The rendered-chat tokenizer round-trips the prompt and starts with BOS.
    let ids = tok().encode_chat(&got);
    assert_eq!(ids[0], tok().special().bos, "{name}");
    assert_eq!(tok().decode(&ids), got.as_bytes(), "{name}");
}

#[test]
fn chat_fixtures_render_byte_identical() {
    let dir = shared_dir().join("fixtures/chat");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 22);
    for p in names {
        let v = read_json(p.clone());
        let ds4 = &v["ds4"];
        let chat = openai_chat(ds4["request_body"].as_str().unwrap());
        let want = ds4["expected_rendering"].as_str().unwrap();
        check(&p.display().to_string(), &chat, ds4["ctx_size"].as_u64().unwrap(), want);
        // Where ds4 and the official encoder agree, the fixture ids apply to our tokens too.
        if ds4["matches_official"].as_bool() == Some(true) {
            assert_eq!(tok().encode_chat(want), ids_of(&v["expected_official_token_ids"]), "{}", p.display());
        }
    }
}

#[test]
fn endpoint_fixtures_render_byte_identical() {
    let dir = shared_dir().join("fixtures/chat/ds4_endpoints");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let v = read_json(p.clone());
        let body = v["request_body"].as_str().unwrap();
        let ctx = v["ctx_size"].as_u64().unwrap();
        let want = v["expected_rendering"].as_str().unwrap();
        let chat = match v["endpoint"].as_str().unwrap() {
            "/v1/chat/completions" => openai_chat(body),
            "/v1/messages" => anthropic_chat(body),
            "/v1/responses" => responses_chat(body),
            "/v1/completions" => {
                let b: Value = serde_json::from_str(body).unwrap();
                let mode = mode_of(&b).for_context(ctx);
                let got = chat::render_completion(chat::DEFAULT_SYSTEM, b["prompt"].as_str().unwrap(), mode);
                assert_eq!(got, want, "{}", p.display());
                n += 1;
                continue;
            }
            other => panic!("unknown endpoint {other}"),
        };
        check(&p.display().to_string(), &chat, ctx, want);
        n += 1;
    }
    assert_eq!(n, 6);
}

#[test]
fn think_max_needs_large_context() {
    let v = read_json(shared_dir().join("fixtures/chat/05_think_max_no_system.json"));
    let chat = openai_chat(v["ds4"]["request_body"].as_str().unwrap());
    assert_eq!(chat.mode, ThinkingMode::Max);
    let big = chat.render(393_216);
    let small = chat.render(393_215);
    assert!(big.contains(chat::THINK_MAX_PREAMBLE));
    assert!(!small.contains("Reasoning Effort"));
    assert_eq!(small, big.replacen(chat::THINK_MAX_PREAMBLE, "", 1));
}

#[test]
fn preamble_constants_match_fixture_bytes() {
    let v = read_json(shared_dir().join("fixtures/chat/09_tools_pending_call_think.json"));
    let r = v["ds4"]["expected_rendering"].as_str().unwrap();
    let after_bos = &r[ds4_tok::BOS.len()..];
    let schema = after_bos.find("{\"name\"").unwrap();
    assert_eq!(&after_bos[..schema], chat::TOOLS_PREAMBLE);
    let post = after_bos.find("\n\nYou MUST").unwrap();
    assert!(after_bos[post..].starts_with(chat::TOOLS_POSTAMBLE));
    assert_eq!(&after_bos[post + chat::TOOLS_POSTAMBLE.len()..][..2], "\n\n");
    let v = read_json(shared_dir().join("fixtures/chat/05_think_max_no_system.json"));
    let r = v["ds4"]["expected_rendering"].as_str().unwrap();
    let end = r.find(ds4_tok::USER).unwrap();
    assert_eq!(&r[ds4_tok::BOS.len()..end], chat::THINK_MAX_PREAMBLE);
}
