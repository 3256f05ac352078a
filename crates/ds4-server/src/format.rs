//! Response bodies (SERVING.md §5) and SSE translators (§8) for each API.

use crate::json::{arr, str_lit, Obj};
use ds4_tok::dsml::StreamEvent;
use crate::request::{Api, GenRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Stop,
    Length,
    ToolCalls,
    Error,
}

impl Finish {
    pub fn openai(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::ToolCalls => "tool_calls",
            Finish::Error => "error",
        }
    }
    pub fn anthropic(self) -> &'static str {
        match self {
            Finish::ToolCalls => "tool_use",
            Finish::Length => "max_tokens",
            _ => "end_turn",
        }
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
}

/// Identity of one response.
#[derive(Debug, Clone)]
pub struct RespMeta {
    pub api: Api,
    pub n: u64,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
}

impl RespMeta {
    pub fn new(req: &GenRequest, n: u64, created: u64) -> Self {
        RespMeta { api: req.api, n, created, model: req.model.clone(), include_usage: req.include_usage }
    }
    pub fn id(&self) -> String {
        match self.api {
            Api::Completions => format!("cmpl-{}", self.n),
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
            let choice = Obj::new().num("index", 0).obj("message", msg).str("finish_reason", r.finish.openai()).finish();
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
            let choice = Obj::new().str("text", &r.text).num("index", 0).str("finish_reason", r.finish.openai()).finish();
            Obj::new()
                .str("id", &m.id())
                .str("object", "text_completion")
                .num("created", m.created)
                .str("model", &m.model)
                .raw("choices", &arr([choice]))
                .raw("usage", &r.usage.openai())
                .finish()
        }
        Api::Messages | Api::Responses => {
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
                .str("stop_reason", r.finish.anthropic())
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
        Api::Messages | Api::Responses => Box::new(AnthropicStream { m, open: None, index: 0, thinking_sent: false, text_sent: false, tool_sent: false }),
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
        s += &self.chunk("{}", Some(r.finish.openai()));
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
        let mut s = self.chunk("", Some(r.finish.openai()));
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
                .obj("delta", Obj::new().str("stop_reason", r.finish.anthropic()).null("stop_sequence"))
                .obj("usage", Obj::new().num("output_tokens", r.usage.completion))
                .finish(),
        );
        s += &event("message_stop", r#"{"type":"message_stop"}"#);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as J;

    fn meta(api: Api) -> RespMeta {
        RespMeta { api, n: 7, created: 1767225600, model: "deepseek-v4-flash".into(), include_usage: true }
    }

    fn result() -> GenResult {
        GenResult {
            text: String::new(),
            reasoning: "Check the tool output.".into(),
            content: "It is sunny.".into(),
            calls: vec![OutCall { id: "call_0f".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() }],
            finish: Finish::ToolCalls,
            usage: Usage { prompt: 1200, cached: 1180, completion: 35 },
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
