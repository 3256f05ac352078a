//! Response bodies (SERVING.md §5) and SSE translators (§8) for each API.

use std::sync::Arc;

use crate::json::{arr, str_lit, Obj};
use ds4_tok::dsml::StreamEvent;
use crate::request::{Api, GenRequest, ResponsesInfo};

/// Why generation ended: the DSML parser's finish reason (its `as_str` is the
/// OpenAI `finish_reason`), resolved against the parsed output.
pub use ds4_tok::dsml::Finish;

/// Anthropic `stop_reason` of a finish reason.
pub fn anthropic_stop_reason(f: Finish) -> &'static str {
    match f {
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
        _ => "end_turn",
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub prompt: usize,
    pub cached: usize,
    pub completion: usize,
}

impl Usage {
    pub fn cached(&self) -> usize {
        self.cached.min(self.prompt)
    }
    pub fn written(&self) -> usize {
        self.prompt - self.cached()
    }
    fn openai(&self) -> String {
        Obj::new()
            .num("prompt_tokens", self.prompt)
            .num("completion_tokens", self.completion)
            .num("total_tokens", self.prompt + self.completion)
            .obj("prompt_tokens_details", Obj::new().num("cached_tokens", self.cached()).num("cache_write_tokens", self.written()))
            .finish()
    }
    fn responses(&self) -> String {
        Obj::new()
            .num("input_tokens", self.prompt)
            .obj("input_tokens_details", Obj::new().num("cached_tokens", self.cached()).num("cache_write_tokens", self.written()))
            .num("output_tokens", self.completion)
            .obj("output_tokens_details", Obj::new().num("reasoning_tokens", 0))
            .num("total_tokens", self.prompt + self.completion)
            .finish()
    }
    fn anthropic(&self, output: usize) -> String {
        Obj::new()
            .num("input_tokens", 0)
            .num("output_tokens", output)
            .num("cache_read_input_tokens", self.cached())
            .num("cache_creation_input_tokens", self.written())
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutCall {
    pub id: String,
    pub name: String,
    /// Compact JSON object text (§4.3).
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GenResult {
    /// Raw generated text (after stop-string truncation).
    pub text: String,
    pub reasoning: String,
    pub content: String,
    pub calls: Vec<OutCall>,
    pub finish: Finish,
    pub usage: Usage,
    /// The raw DSML block the calls were parsed from (exact replay, §6.3).
    pub dsml: String,
}

/// Identity of one response.
#[derive(Debug, Clone)]
pub struct RespMeta {
    pub api: Api,
    pub n: u64,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
    /// Responses: `resp_` + 24 random hex chars (§5.4); else empty.
    pub resp_id: String,
    pub responses: Option<Arc<ResponsesInfo>>,
}

impl RespMeta {
    pub fn new(req: &GenRequest, n: u64, created: u64) -> Self {
        let resp_id = if req.api == Api::Responses { format!("resp_{}", crate::ids::random_hex(12)) } else { String::new() };
        RespMeta {
            api: req.api,
            n,
            created,
            model: req.model.clone(),
            include_usage: req.include_usage,
            resp_id,
            responses: req.responses.clone(),
        }
    }
    pub fn id(&self) -> String {
        match self.api {
            Api::Completions => format!("cmpl-{}", self.n),
            Api::Responses => self.resp_id.clone(),
            _ => format!("chatcmpl-{}", self.n),
        }
    }
}

fn openai_call(c: &OutCall, index: Option<usize>) -> String {
    let mut o = Obj::new();
    if let Some(i) = index {
        o = o.num("index", i);
    }
    o.str("id", &c.id)
        .str("type", "function")
        .obj("function", Obj::new().str("name", &c.name).str("arguments", &c.arguments))
        .finish()
}

/// Non-streaming body.
pub fn final_body(m: &RespMeta, r: &GenResult) -> String {
    let mut s = match m.api {
        Api::Chat => {
            let mut msg = Obj::new().str("role", "assistant").str("content", &r.content);
            if !r.reasoning.is_empty() {
                msg = msg.str("reasoning_content", &r.reasoning);
            }
            if !r.calls.is_empty() {
                msg = msg.raw("tool_calls", &arr(r.calls.iter().map(|c| openai_call(c, None))));
            }
            let choice = Obj::new().num("index", 0).obj("message", msg).str("finish_reason", r.finish.as_str()).finish();
            Obj::new()
                .str("id", &m.id())
                .str("object", "chat.completion")
                .num("created", m.created)
                .str("model", &m.model)
                .raw("choices", &arr([choice]))
                .raw("usage", &r.usage.openai())
                .finish()
        }
        Api::Completions => {
            let choice = Obj::new().str("text", &r.text).num("index", 0).str("finish_reason", r.finish.as_str()).finish();
            Obj::new()
                .str("id", &m.id())
                .str("object", "text_completion")
                .num("created", m.created)
                .str("model", &m.model)
                .raw("choices", &arr([choice]))
                .raw("usage", &r.usage.openai())
                .finish()
        }
        Api::Responses => {
            let mut ids = RItems::default();
            let info = m.responses.clone().unwrap_or_default();
            let mut out = Vec::new();
            let st = item_status(r.finish);
            if info.summary && !r.reasoning.is_empty() {
                out.push(reasoning_item(&ids.rs, st, &r.reasoning));
            }
            if !r.content.is_empty() {
                out.push(message_item(&ids.msg, st, &r.content));
            }
            for c in &r.calls {
                let id = ids.next_fc();
                out.push(call_item(&info, c, &id, st, &c.arguments));
            }
            response_obj(m, r.finish, &arr(out), Some(&r.usage))
        }
        Api::Messages => {
            let id = m.id();
            let mut blocks = Vec::new();
            if !r.reasoning.is_empty() {
                blocks.push(Obj::new().str("type", "thinking").str("thinking", &r.reasoning).str("signature", &id).finish());
            }
            if !r.content.is_empty() {
                blocks.push(Obj::new().str("type", "text").str("text", &r.content).finish());
            }
            for c in &r.calls {
                blocks.push(
                    Obj::new()
                        .str("type", "tool_use")
                        .str("id", &c.id)
                        .str("name", &c.name)
                        .raw("input", &c.arguments)
                        .finish(),
                );
            }
            if r.content.is_empty() && r.calls.is_empty() {
                blocks.push(Obj::new().str("type", "text").str("text", "").finish());
            }
            Obj::new()
                .str("id", &id)
                .str("type", "message")
                .str("role", "assistant")
                .str("model", &m.model)
                .raw("content", &arr(blocks))
                .str("stop_reason", anthropic_stop_reason(r.finish))
                .null("stop_sequence")
                .raw("usage", &r.usage.anthropic(r.usage.completion))
                .finish()
        }
    };
    s.push('\n');
    s
}

/// Streaming translator: turns split pieces into SSE bytes.
pub trait StreamFmt: Send {
    /// After the prompt is synced (usage of the prompt is known).
    fn start(&mut self, usage: &Usage) -> String;
    /// One event of the stream parser; `ids[i]` is the id of live call `i`.
    fn event(&mut self, ev: &StreamEvent, ids: &[String]) -> String;
    /// End of generation; calls from index `streamed` on were not streamed live.
    fn end(&mut self, r: &GenResult, streamed: usize) -> String;
}

pub fn stream_fmt(m: RespMeta) -> Box<dyn StreamFmt> {
    match m.api {
        Api::Chat => Box::new(OpenAiChatStream { m }),
        Api::Completions => Box::new(CompletionsStream { m }),
        Api::Responses => {
            let info = m.responses.clone().unwrap_or_default();
            Box::new(ResponsesStream { m, info, seq: 0, next_index: 0, ids: RItems::default(), rs: None, reasoning: String::new(), think_done: false, msg: None, text: String::new() })
        }
        Api::Messages => Box::new(AnthropicStream { m, open: None, index: 0, thinking_sent: false, text_sent: false, tool_sent: false }),
    }
}

fn data(json: &str) -> String {
    format!("data: {json}\n\n")
}

struct OpenAiChatStream {
    m: RespMeta,
}

impl OpenAiChatStream {
    fn chunk(&self, delta: &str, finish: Option<&str>) -> String {
        let choice = Obj::new().num("index", 0).raw("delta", delta).raw("finish_reason", &finish.map_or("null".into(), str_lit)).finish();
        data(
            &Obj::new()
                .str("id", &self.m.id())
                .str("object", "chat.completion.chunk")
                .num("created", self.m.created)
                .str("model", &self.m.model)
                .raw("choices", &arr([choice]))
                .finish(),
        )
    }
}

impl StreamFmt for OpenAiChatStream {
    fn start(&mut self, _u: &Usage) -> String {
        self.chunk(&Obj::new().str("role", "assistant").finish(), None)
    }
    fn event(&mut self, ev: &StreamEvent, ids: &[String]) -> String {
        match ev {
            StreamEvent::Reasoning(t) => self.chunk(&Obj::new().str("reasoning_content", t).finish(), None),
            StreamEvent::Content(t) => self.chunk(&Obj::new().str("content", t).finish(), None),
            StreamEvent::ToolCallStart { index, name } => {
                let id = ids.get(*index).map(String::as_str).unwrap_or("");
                let call = Obj::new()
                    .num("index", *index)
                    .str("id", id)
                    .str("type", "function")
                    .obj("function", Obj::new().str("name", name).str("arguments", ""))
                    .finish();
                self.chunk(&Obj::new().raw("tool_calls", &arr([call])).finish(), None)
            }
            StreamEvent::ToolCallArgs { index, fragment } => {
                let call = Obj::new().num("index", *index).obj("function", Obj::new().str("arguments", fragment)).finish();
                self.chunk(&Obj::new().raw("tool_calls", &arr([call])).finish(), None)
            }
            StreamEvent::ReasoningDone | StreamEvent::ToolCallEnd { .. } => String::new(),
        }
    }
    fn end(&mut self, r: &GenResult, streamed: usize) -> String {
        let mut s = String::new();
        if r.calls.len() > streamed {
            let calls = arr(r.calls.iter().enumerate().skip(streamed).map(|(i, c)| openai_call(c, Some(i))));
            s += &self.chunk(&Obj::new().raw("tool_calls", &calls).finish(), None);
        }
        s += &self.chunk("{}", Some(r.finish.as_str()));
        if self.m.include_usage {
            s += &data(
                &Obj::new()
                    .str("id", &self.m.id())
                    .str("object", "chat.completion.chunk")
                    .num("created", self.m.created)
                    .str("model", &self.m.model)
                    .raw("choices", "[]")
                    .raw("usage", &r.usage.openai())
                    .finish(),
            );
        }
        s += "data: [DONE]\n\n";
        s
    }
}

struct CompletionsStream {
    m: RespMeta,
}

impl CompletionsStream {
    fn chunk(&self, text: &str, finish: Option<&str>) -> String {
        let choice = Obj::new().str("text", text).num("index", 0).raw("finish_reason", &finish.map_or("null".into(), str_lit)).finish();
        data(
            &Obj::new()
                .str("id", &self.m.id())
                .str("object", "text_completion")
                .num("created", self.m.created)
                .str("model", &self.m.model)
                .raw("choices", &arr([choice]))
                .finish(),
        )
    }
}

impl StreamFmt for CompletionsStream {
    fn start(&mut self, _u: &Usage) -> String {
        String::new()
    }
    fn event(&mut self, ev: &StreamEvent, _ids: &[String]) -> String {
        match ev {
            StreamEvent::Reasoning(t) | StreamEvent::Content(t) => self.chunk(t, None),
            _ => String::new(),
        }
    }
    fn end(&mut self, r: &GenResult, _streamed: usize) -> String {
        let mut s = self.chunk("", Some(r.finish.as_str()));
        if self.m.include_usage {
            s += &data(
                &Obj::new()
                    .str("id", &self.m.id())
                    .str("object", "text_completion")
                    .num("created", self.m.created)
                    .str("model", &self.m.model)
                    .raw("choices", "[]")
                    .raw("usage", &r.usage.openai())
                    .finish(),
            );
        }
        s += "data: [DONE]\n\n";
        s
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Block {
    Thinking,
    Text,
    Tool,
}

struct AnthropicStream {
    m: RespMeta,
    open: Option<Block>,
    index: usize,
    thinking_sent: bool,
    text_sent: bool,
    tool_sent: bool,
}

fn event(name: &str, json: &str) -> String {
    format!("event: {name}\ndata: {json}\n\n")
}

impl AnthropicStream {
    fn close(&mut self) -> String {
        let mut s = String::new();
        match self.open.take() {
            None => return s,
            Some(Block::Thinking) => {
                s += &event(
                    "content_block_delta",
                    &Obj::new()
                        .str("type", "content_block_delta")
                        .num("index", self.index)
                        .obj("delta", Obj::new().str("type", "signature_delta").str("signature", &self.m.id()))
                        .finish(),
                );
            }
            Some(Block::Text) | Some(Block::Tool) => {}
        }
        s += &event("content_block_stop", &Obj::new().str("type", "content_block_stop").num("index", self.index).finish());
        self.index += 1;
        s
    }
    fn open_block(&mut self, b: Block) -> String {
        let mut s = self.close();
        let cb = match b {
            Block::Thinking => Obj::new().str("type", "thinking").str("thinking", "").str("signature", ""),
            Block::Text | Block::Tool => Obj::new().str("type", "text").str("text", ""),
        };
        s += &event(
            "content_block_start",
            &Obj::new().str("type", "content_block_start").num("index", self.index).obj("content_block", cb).finish(),
        );
        self.open = Some(b);
        s
    }
    fn delta(&self, d: Obj) -> String {
        event("content_block_delta", &Obj::new().str("type", "content_block_delta").num("index", self.index).obj("delta", d).finish())
    }
}

impl StreamFmt for AnthropicStream {
    fn start(&mut self, u: &Usage) -> String {
        let msg = Obj::new()
            .str("id", &self.m.id())
            .str("type", "message")
            .str("role", "assistant")
            .str("model", &self.m.model)
            .raw("content", "[]")
            .null("stop_reason")
            .null("stop_sequence")
            .raw("usage", &u.anthropic(0));
        event("message_start", &Obj::new().str("type", "message_start").obj("message", msg).finish())
    }
    fn event(&mut self, ev: &StreamEvent, ids: &[String]) -> String {
        let mut s = String::new();
        match ev {
            StreamEvent::Reasoning(t) => {
                if self.open != Some(Block::Thinking) {
                    s += &self.open_block(Block::Thinking);
                }
                self.thinking_sent = true;
                s += &self.delta(Obj::new().str("type", "thinking_delta").str("thinking", t));
            }
            StreamEvent::Content(t) => {
                if self.open != Some(Block::Text) {
                    s += &self.open_block(Block::Text);
                }
                self.text_sent = true;
                s += &self.delta(Obj::new().str("type", "text_delta").str("text", t));
            }
            StreamEvent::ReasoningDone => {
                if self.open == Some(Block::Thinking) {
                    s += &self.close();
                }
            }
            StreamEvent::ToolCallStart { index, name } => {
                s += &self.close();
                let id = ids.get(*index).map(String::as_str).unwrap_or("");
                s += &event(
                    "content_block_start",
                    &Obj::new()
                        .str("type", "content_block_start")
                        .num("index", self.index)
                        .obj("content_block", Obj::new().str("type", "tool_use").str("id", id).str("name", name).raw("input", "{}"))
                        .finish(),
                );
                self.open = Some(Block::Tool);
                self.tool_sent = true;
            }
            StreamEvent::ToolCallArgs { fragment, .. } => {
                if self.open == Some(Block::Tool) {
                    s += &self.delta(Obj::new().str("type", "input_json_delta").str("partial_json", fragment));
                }
            }
            StreamEvent::ToolCallEnd { .. } => {
                if self.open == Some(Block::Tool) {
                    s += &self.close();
                }
            }
        }
        s
    }
    fn end(&mut self, r: &GenResult, streamed: usize) -> String {
        let mut s = self.close();
        for c in r.calls.iter().skip(streamed) {
            s += &event(
                "content_block_start",
                &Obj::new()
                    .str("type", "content_block_start")
                    .num("index", self.index)
                    .obj("content_block", Obj::new().str("type", "tool_use").str("id", &c.id).str("name", &c.name).raw("input", "{}"))
                    .finish(),
            );
            s += &self.delta(Obj::new().str("type", "input_json_delta").str("partial_json", &c.arguments));
            s += &event("content_block_stop", &Obj::new().str("type", "content_block_stop").num("index", self.index).finish());
            self.index += 1;
        }
        if !self.text_sent && r.calls.is_empty() && !self.tool_sent {
            s += &self.open_block(Block::Text);
            s += &self.close();
        }
        s += &event(
            "message_delta",
            &Obj::new()
                .str("type", "message_delta")
                .obj("delta", Obj::new().str("stop_reason", anthropic_stop_reason(r.finish)).null("stop_sequence"))
                .obj("usage", Obj::new().num("output_tokens", r.usage.completion))
                .finish(),
        );
        s += &event("message_stop", r#"{"type":"message_stop"}"#);
        s
    }
}

// ---------------------------------------------------------------- Responses (§5.4, §8.4)

/// Item ids of one response: `rs_`, `msg_`, `fc_` + 24 hex chars.
struct RItems {
    rs: String,
    msg: String,
}

impl Default for RItems {
    fn default() -> Self {
        RItems { rs: format!("rs_{}", crate::ids::random_hex(12)), msg: format!("msg_{}", crate::ids::random_hex(12)) }
    }
}

impl RItems {
    fn next_fc(&mut self) -> String {
        format!("fc_{}", crate::ids::random_hex(12))
    }
}

fn item_status(f: Finish) -> &'static str {
    match f {
        Finish::Length | Finish::Error => "incomplete",
        _ => "completed",
    }
}

fn response_status(f: Finish) -> &'static str {
    match f {
        Finish::Length => "incomplete",
        Finish::Error => "failed",
        _ => "completed",
    }
}

fn reasoning_item(id: &str, status: &str, text: &str) -> String {
    let part = Obj::new().str("type", "summary_text").str("text", text).finish();
    Obj::new().str("id", id).str("type", "reasoning").str("status", status).raw("summary", &arr([part])).finish()
}

fn output_text_part(text: &str) -> Obj {
    Obj::new().str("type", "output_text").str("text", text).raw("annotations", "[]")
}

fn message_item(id: &str, status: &str, text: &str) -> String {
    Obj::new()
        .str("id", id)
        .str("type", "message")
        .str("status", status)
        .str("role", "assistant")
        .raw("content", &arr([output_text_part(text).finish()]))
        .finish()
}

fn is_tool_search(info: &ResponsesInfo, c: &OutCall) -> bool {
    info.tool_search && c.name == "tool_search"
}

/// Wire name and namespace of a call (namespace tools were flattened).
fn call_name<'a>(info: &'a ResponsesInfo, c: &'a OutCall) -> (&'a str, Option<&'a str>) {
    match info.namespaces.iter().find(|(full, _, _)| *full == c.name) {
        Some((_, ns, wire)) => (wire, Some(ns)),
        None => (&c.name, None),
    }
}

/// A call output item; `args` is "" while in progress.
fn call_item(info: &ResponsesInfo, c: &OutCall, id: &str, status: &str, args: &str) -> String {
    if is_tool_search(info, c) {
        let a = if args.is_empty() { "{}" } else { args };
        return Obj::new()
            .str("id", id)
            .str("type", "tool_search_call")
            .str("status", status)
            .str("call_id", &c.id)
            .str("execution", "client")
            .raw("arguments", a)
            .finish();
    }
    let (name, ns) = call_name(info, c);
    let mut o = Obj::new().str("id", id).str("type", "function_call").str("status", status).str("name", name);
    if let Some(ns) = ns {
        o = o.str("namespace", ns);
    }
    o.str("call_id", &c.id).str("arguments", args).finish()
}

fn response_obj(m: &RespMeta, finish: Finish, output: &str, usage: Option<&Usage>) -> String {
    let mut o = Obj::new()
        .str("id", &m.id())
        .str("object", "response")
        .num("created_at", m.created)
        .str("status", if usage.is_some() { response_status(finish) } else { "in_progress" })
        .str("model", &m.model);
    if usage.is_some() {
        match finish {
            Finish::Length => o = o.obj("incomplete_details", Obj::new().str("reason", "max_tokens")),
            Finish::Error => o = o.obj("error", Obj::new().str("code", "server_error").str("message", "generation failed")),
            _ => {}
        }
    }
    o = o.raw("output", output);
    if let Some(u) = usage {
        o = o.raw("usage", &u.responses());
    }
    o.finish()
}

struct ResponsesStream {
    m: RespMeta,
    info: Arc<ResponsesInfo>,
    seq: u64,
    next_index: usize,
    ids: RItems,
    /// Output index of the open reasoning item.
    rs: Option<usize>,
    reasoning: String,
    think_done: bool,
    /// Output index of the open message item.
    msg: Option<usize>,
    text: String,
}

impl ResponsesStream {
    /// One data-only event; `sequence_number` is its second key.
    fn ev(&mut self, ty: &str, f: impl FnOnce(Obj) -> Obj) -> String {
        let o = f(Obj::new().str("type", ty).num("sequence_number", self.seq));
        self.seq += 1;
        data(&o.finish())
    }

    fn text_delta(&mut self, t: &str) -> String {
        let mut s = String::new();
        let idx = match self.msg {
            Some(i) => i,
            None => {
                let i = self.next_index;
                self.next_index += 1;
                self.msg = Some(i);
                let item = Obj::new()
                    .str("id", &self.ids.msg)
                    .str("type", "message")
                    .str("status", "in_progress")
                    .str("role", "assistant")
                    .raw("content", "[]")
                    .finish();
                s += &self.ev("response.output_item.added", |o| o.num("output_index", i).raw("item", &item));
                let id = self.ids.msg.clone();
                s += &self.ev("response.content_part.added", |o| {
                    o.str("item_id", &id).num("output_index", i).num("content_index", 0).obj("part", output_text_part(""))
                });
                i
            }
        };
        self.text.push_str(t);
        let id = self.ids.msg.clone();
        s += &self.ev("response.output_text.delta", |o| {
            o.str("item_id", &id).num("output_index", idx).num("content_index", 0).str("delta", t)
        });
        s
    }
}

impl StreamFmt for ResponsesStream {
    fn start(&mut self, _u: &Usage) -> String {
        let r = response_obj(&self.m, Finish::Stop, "[]", None);
        self.ev("response.created", |o| o.raw("response", &r))
    }

    fn event(&mut self, ev: &StreamEvent, _ids: &[String]) -> String {
        match ev {
            StreamEvent::Reasoning(t) if self.info.summary => {
                let mut s = String::new();
                let idx = match self.rs {
                    Some(i) => i,
                    None => {
                        let i = self.next_index;
                        self.next_index += 1;
                        self.rs = Some(i);
                        let item = Obj::new()
                            .str("id", &self.ids.rs)
                            .str("type", "reasoning")
                            .str("status", "in_progress")
                            .raw("summary", "[]")
                            .finish();
                        s += &self.ev("response.output_item.added", |o| o.num("output_index", i).raw("item", &item));
                        let id = self.ids.rs.clone();
                        s += &self.ev("response.reasoning_summary_part.added", |o| {
                            o.str("item_id", &id)
                                .num("output_index", i)
                                .num("summary_index", 0)
                                .obj("part", Obj::new().str("type", "summary_text").str("text", ""))
                        });
                        i
                    }
                };
                self.reasoning.push_str(t);
                let id = self.ids.rs.clone();
                s += &self.ev("response.reasoning_summary_text.delta", |o| {
                    o.str("item_id", &id).num("output_index", idx).num("summary_index", 0).str("delta", t)
                });
                s
            }
            StreamEvent::ReasoningDone => {
                self.think_done = true;
                String::new()
            }
            StreamEvent::Content(t) => self.text_delta(t),
            // Reasoning without summary opt-in never reaches the client; tool
            // blocks are not streamed (calls come at the end).
            _ => String::new(),
        }
    }

    fn end(&mut self, r: &GenResult, _streamed: usize) -> String {
        let mut s = String::new();
        let st = item_status(r.finish);
        let mut output = Vec::new();
        if let Some(i) = self.rs {
            let (id, text) = (self.ids.rs.clone(), self.reasoning.clone());
            let rst = if self.think_done { "completed" } else { "incomplete" };
            s += &self.ev("response.reasoning_summary_text.done", |o| {
                o.str("item_id", &id).num("output_index", i).num("summary_index", 0).str("text", &text)
            });
            s += &self.ev("response.reasoning_summary_part.done", |o| {
                o.str("item_id", &id)
                    .num("output_index", i)
                    .num("summary_index", 0)
                    .obj("part", Obj::new().str("type", "summary_text").str("text", &text))
            });
            let item = reasoning_item(&id, rst, &text);
            s += &self.ev("response.output_item.done", |o| o.num("output_index", i).raw("item", &item));
            output.push(item);
        }
        // A tool block that failed to parse was held back: flush it as text.
        if r.content.len() > self.text.len() && r.content.starts_with(&self.text) {
            let rest = r.content[self.text.len()..].to_string();
            s += &self.text_delta(&rest);
        }
        if let Some(i) = self.msg {
            let (id, text) = (self.ids.msg.clone(), self.text.clone());
            s += &self.ev("response.output_text.done", |o| {
                o.str("item_id", &id).num("output_index", i).num("content_index", 0).str("text", &text)
            });
            s += &self.ev("response.content_part.done", |o| {
                o.str("item_id", &id).num("output_index", i).num("content_index", 0).obj("part", output_text_part(&text))
            });
            let item = message_item(&id, st, &text);
            s += &self.ev("response.output_item.done", |o| o.num("output_index", i).raw("item", &item));
            output.push(item);
        }
        let info = self.info.clone();
        for c in &r.calls {
            let i = self.next_index;
            self.next_index += 1;
            let id = self.ids.next_fc();
            let added = call_item(&info, c, &id, "in_progress", "");
            s += &self.ev("response.output_item.added", |o| o.num("output_index", i).raw("item", &added));
            if !is_tool_search(&info, c) {
                s += &self.ev("response.function_call_arguments.delta", |o| {
                    o.str("item_id", &id).num("output_index", i).str("delta", &c.arguments)
                });
                let (name, ns) = call_name(&info, c);
                s += &self.ev("response.function_call_arguments.done", |o| {
                    let mut o = o.str("item_id", &id).num("output_index", i).str("name", name);
                    if let Some(ns) = ns {
                        o = o.str("namespace", ns);
                    }
                    o.str("arguments", &c.arguments)
                });
            }
            let done = call_item(&info, c, &id, st, &c.arguments);
            s += &self.ev("response.output_item.done", |o| o.num("output_index", i).raw("item", &done));
            output.push(done);
        }
        let resp = response_obj(&self.m, r.finish, &arr(output), Some(&r.usage));
        let ty = match r.finish {
            Finish::Length => "response.incomplete",
            Finish::Error => "response.failed",
            _ => "response.completed",
        };
        s += &self.ev(ty, |o| o.raw("response", &resp));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as J;

    fn meta(api: Api) -> RespMeta {
        RespMeta {
            api,
            n: 7,
            created: 1767225600,
            model: "deepseek-v4-flash".into(),
            include_usage: true,
            resp_id: "resp_0123456789abcdef01234567".into(),
            responses: Some(Arc::new(ResponsesInfo { summary: true, ..Default::default() })),
        }
    }

    fn result() -> GenResult {
        GenResult {
            text: String::new(),
            reasoning: "Check the tool output.".into(),
            content: "It is sunny.".into(),
            calls: vec![OutCall { id: "call_0f".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() }],
            finish: Finish::ToolCalls,
            usage: Usage { prompt: 1200, cached: 1180, completion: 35 },
            dsml: String::new(),
        }
    }

    #[test]
    fn chat_body_matches_spec_example() {
        let b = final_body(&meta(Api::Chat), &result());
        let expect = r#"{"id":"chatcmpl-7","object":"chat.completion","created":1767225600,"model":"deepseek-v4-flash","choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny.","reasoning_content":"Check the tool output.","tool_calls":[{"id":"call_0f","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1200,"completion_tokens":35,"total_tokens":1235,"prompt_tokens_details":{"cached_tokens":1180,"cache_write_tokens":20}}}"#;
        assert_eq!(b, format!("{expect}\n"));
    }

    #[test]
    fn anthropic_body() {
        let mut r = result();
        r.content.clear();
        let v: J = serde_json::from_str(&final_body(&meta(Api::Messages), &r)).unwrap();
        assert_eq!(v["stop_reason"], "tool_use");
        assert_eq!(v["content"][0]["signature"], "chatcmpl-7");
        assert_eq!(v["content"][1]["input"]["command"], "ls");
        assert_eq!(v["content"].as_array().unwrap().len(), 2);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 1180);
        assert_eq!(v["usage"]["cache_creation_input_tokens"], 20);
        assert_eq!(v["usage"]["input_tokens"], 0);
        r.calls.clear();
        r.finish = Finish::Length;
        let v: J = serde_json::from_str(&final_body(&meta(Api::Messages), &r)).unwrap();
        assert_eq!(v["content"][1], serde_json::json!({"type":"text","text":""}));
        assert_eq!(v["stop_reason"], "max_tokens");
    }

    #[test]
    fn anthropic_stream_order() {
        let mut f = stream_fmt(meta(Api::Messages));
        let u = Usage { prompt: 10, cached: 4, completion: 0 };
        let mut s = f.start(&u);
        let ids = vec!["toolu_1".to_string()];
        s += &f.event(&StreamEvent::Reasoning("think".into()), &ids);
        s += &f.event(&StreamEvent::ReasoningDone, &ids);
        s += &f.event(&StreamEvent::Content("Hello.".into()), &ids);
        s += &f.end(&result(), 0);
        let names: Vec<&str> = s.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(!s.contains("DSML"));
        assert!(s.contains(r#""signature_delta","signature":"chatcmpl-7""#));
        let ms: J = serde_json::from_str(s.lines().nth(1).unwrap().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(ms["message"]["usage"]["cache_read_input_tokens"], 4);
    }
}
