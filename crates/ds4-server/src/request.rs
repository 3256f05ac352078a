//! Request parsing and normalisation (SERVING.md §2, §3.4, §5.2–§5.5).
//!
//! Every endpoint is reduced to one [`GenRequest`]: an ordered message list,
//! raw tool schema lines, the thinking mode and the generation knobs. Field
//! type errors become 400 `invalid JSON request`.

use crate::error::ApiError;
use crate::json::{self, Kind, Value};

pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// Think Max is only honoured with at least this much context (§2).
pub const THINK_MAX_MIN_CTX: usize = 393216;
const INT_MAX: f64 = i32::MAX as f64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
    Messages,
    Responses,
}

impl Api {
    pub fn context_param(self) -> &'static str {
        match self {
            Api::Chat | Api::Messages => "messages",
            Api::Completions => "prompt",
            Api::Responses => "input",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkMode {
    None,
    High,
    Max,
}

impl ThinkMode {
    pub fn thinking(self) -> bool {
        self != ThinkMode::None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Argument text: the decoded JSON string (OpenAI) or the raw JSON of the
    /// input object (Anthropic). Rendered per §3.5.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    /// Ids of tool results carried by this message (`tool_call_id` of an
    /// OpenAI tool message, `tool_use_id`s of Anthropic `tool_result` blocks).
    pub tool_result_ids: Vec<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message { role, content: content.into(), reasoning: String::new(), tool_calls: vec![], tool_result_ids: vec![] }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: u32,
    pub min_p: f32,
    /// `Some` only for seeds > 0.
    pub seed: Option<u64>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { temperature: 1.0, top_p: 1.0, top_k: 0, min_p: 0.05, seed: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GenRequest {
    pub api: Api,
    /// Model name echoed back to the client.
    pub model: String,
    pub messages: Vec<Message>,
    /// Raw schema lines (§3.6).
    pub tools: Vec<String>,
    /// Tools rendered and DSML detection on (non-empty and not `tool_choice: none`).
    pub tools_active: bool,
    pub mode: ThinkMode,
    /// Client cap (already ≥ 0); `None` = server default.
    pub max_tokens: Option<usize>,
    pub sampling: Sampling,
    pub stream: bool,
    pub include_usage: bool,
    pub stop: Vec<String>,
    /// `/v1/completions` prompt text.
    pub prompt: Option<String>,
    /// `/v1/responses` specifics (output item shapes, reasoning opt-in).
    pub responses: Option<std::sync::Arc<ResponsesInfo>>,
}

/// What a Responses request needs beyond the common fields (SERVING.md §5.4).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponsesInfo {
    /// `reasoning.summary` is auto/concise/detailed: reasoning is sent (as
    /// summary text); otherwise it never reaches the client.
    pub summary: bool,
    /// Namespace tools: (prompt name = namespace + name, namespace, wire name).
    pub namespaces: Vec<(String, String, String)>,
    /// A hosted `tool_search` tool is declared: calls to it are
    /// `tool_search_call` items (a function merely named so stays a function).
    pub tool_search: bool,
    /// Thinking mode and a replayed call without any reasoning (lower fidelity).
    pub missing_reasoning: bool,
}

fn bad() -> ApiError {
    ApiError::bad_request("invalid JSON request")
}

// ---- typed field accessors: absent/null → None, wrong type → 400 ----

fn field<'a>(o: &'a Value, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

fn opt_num(o: &Value, k: &str) -> Result<Option<f64>, ApiError> {
    match field(o, k) {
        None => Ok(None),
        Some(Value { kind: Kind::Num(n), .. }) => Ok(Some(*n)),
        Some(_) => Err(bad()),
    }
}

/// Integers: truncated and clamped to [0, INT_MAX] (§5.2).
fn opt_int(o: &Value, k: &str) -> Result<Option<usize>, ApiError> {
    Ok(opt_num(o, k)?.map(|n| n.trunc().clamp(0.0, INT_MAX) as usize))
}

fn opt_bool(o: &Value, k: &str) -> Result<Option<bool>, ApiError> {
    match field(o, k) {
        None => Ok(None),
        Some(Value { kind: Kind::Bool(b), .. }) => Ok(Some(*b)),
        Some(_) => Err(bad()),
    }
}

fn opt_str<'a>(o: &'a Value, k: &str) -> Result<Option<&'a str>, ApiError> {
    match field(o, k) {
        None => Ok(None),
        Some(Value { kind: Kind::Str(s), .. }) => Ok(Some(s)),
        Some(_) => Err(bad()),
    }
}

/// Server-side context needed while parsing.
#[derive(Debug, Clone, Copy)]
pub struct ParseCtx {
    pub ctx_size: usize,
}

/// Parse the body of `api` into a [`GenRequest`].
pub fn parse_request(api: Api, body: &str, pc: ParseCtx) -> Result<GenRequest, ApiError> {
    let root = json::parse(body).map_err(|_| bad())?;
    if root.as_object().is_none() {
        return Err(bad());
    }
    match api {
        Api::Chat => parse_chat(&root, body, pc),
        Api::Completions => parse_completions(&root, pc),
        Api::Messages => parse_messages(&root, body, pc),
        Api::Responses => parse_responses(&root, body, pc),
    }
}

/// §2: effort/explicit-control evaluation, alias defaults, Max downgrade.
fn resolve_mode(root: &Value, api: Api, model: &str, ctx_size: usize) -> Result<ThinkMode, ApiError> {
    #[derive(PartialEq)]
    enum Effort {
        High,
        Max,
        None,
    }
    let mut effort = Effort::High;
    let mut enabled = true;
    let mut explicit = false;
    let map_effort = |v: &Value| -> Result<Option<Effort>, ApiError> {
        match &v.kind {
            Kind::Null => Ok(None),
            Kind::Str(s) => match s.as_str() {
                "max" => Ok(Some(Effort::Max)),
                "xhigh" | "high" | "medium" | "low" | "minimal" => Ok(Some(Effort::High)),
                "none" => Ok(Some(Effort::None)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    };
    if api != Api::Responses {
        if let Some(v) = root.get("reasoning_effort") {
            if let Some(e) = map_effort(v)? {
                effort = e;
            }
        }
    } else if let Some(r) = field(root, "reasoning") {
        // Responses: a non-null reasoning.effort is the explicit control.
        if r.as_object().is_none() {
            return Err(bad());
        }
        if let Some(v) = r.get("effort") {
            if let Some(e) = map_effort(v)? {
                effort = e;
                explicit = true;
            }
        }
    }
    if api == Api::Messages {
        if let Some(oc) = field(root, "output_config") {
            if oc.as_object().is_none() {
                return Err(bad());
            }
            if let Some(v) = oc.get("effort") {
                if let Some(e) = map_effort(v)? {
                    effort = e;
                }
            }
        }
    }
    if let Some(t) = field(root, "thinking").filter(|_| api != Api::Responses) {
        explicit = true;
        match &t.kind {
            Kind::Bool(b) => enabled = *b,
            Kind::Obj(_) => {
                let ty = opt_str(t, "type")?;
                enabled = ty != Some("disabled");
            }
            _ => return Err(bad()),
        }
    }
    if matches!(api, Api::Chat | Api::Completions) {
        if let Some(b) = opt_bool(root, "think")? {
            explicit = true;
            enabled = b;
        }
    }
    if !explicit {
        match model {
            "deepseek-chat" => enabled = false,
            "deepseek-reasoner" => enabled = true,
            _ => {}
        }
    }
    let mode = if !enabled || effort == Effort::None {
        ThinkMode::None
    } else if effort == Effort::Max {
        ThinkMode::Max
    } else {
        ThinkMode::High
    };
    Ok(if mode == ThinkMode::Max && ctx_size < THINK_MAX_MIN_CTX { ThinkMode::High } else { mode })
}

fn model_name(root: &Value) -> Result<String, ApiError> {
    Ok(opt_str(root, "model")?.unwrap_or(DEFAULT_MODEL).to_string())
}

/// `stop`: string or array of strings; non-strings ignored, empty dropped.
fn stop_list(root: &Value, key: &str) -> Result<Vec<String>, ApiError> {
    let mut out = Vec::new();
    match field(root, key).map(|v| &v.kind) {
        None => {}
        Some(Kind::Str(s)) => out.push(s.clone()),
        Some(Kind::Arr(a)) => {
            for v in a {
                if let Kind::Str(s) = &v.kind {
                    out.push(s.clone());
                }
            }
        }
        Some(_) => return Err(bad()),
    }
    out.retain(|s| !s.is_empty());
    Ok(out)
}

fn sampling(root: &Value, with_min_p_seed: bool) -> Result<Sampling, ApiError> {
    let mut s = Sampling::default();
    if let Some(t) = opt_num(root, "temperature")? {
        s.temperature = t as f32;
    }
    if let Some(p) = opt_num(root, "top_p")? {
        s.top_p = if p <= 0.0 || p > 1.0 { 1.0 } else { p as f32 };
    }
    if let Some(k) = opt_int(root, "top_k")? {
        s.top_k = k.min(1024) as u32;
    }
    if with_min_p_seed {
        if let Some(m) = opt_num(root, "min_p")? {
            s.min_p = m.clamp(0.0, 1.0) as f32;
        }
        if let Some(seed) = opt_num(root, "seed")? {
            if seed >= 1.0 {
                s.seed = Some(seed.min(u64::MAX as f64) as u64);
            }
        }
    }
    Ok(s)
}

fn max_tokens(root: &Value, keys: &[&str]) -> Result<Option<usize>, ApiError> {
    let mut out = None;
    for k in keys {
        if let Some(v) = opt_int(root, k)? {
            out = Some(v);
        }
    }
    Ok(out)
}

fn include_usage(root: &Value) -> Result<bool, ApiError> {
    match field(root, "stream_options") {
        None => Ok(false),
        Some(so) if so.as_object().is_some() => Ok(opt_bool(so, "include_usage")?.unwrap_or(false)),
        Some(_) => Err(bad()),
    }
}

/// §3.4 OpenAI content extraction.
fn openai_text(v: Option<&Value>) -> String {
    joined_text(v, |_| true)
}

/// A string, or the strings and the `text` of the object parts `keep` accepts
/// of an array, concatenated.
fn joined_text(v: Option<&Value>, keep: impl Fn(&Value) -> bool) -> String {
    let mut out = String::new();
    match v.map(|v| &v.kind) {
        Some(Kind::Str(s)) => out.push_str(s),
        Some(Kind::Arr(a)) => {
            for e in a {
                match &e.kind {
                    Kind::Str(s) => out.push_str(s),
                    Kind::Obj(_) if keep(e) => {
                        if let Some(t) = e.get("text").and_then(|t| t.as_str()) {
                            out.push_str(t);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

fn role_of(s: &str) -> Option<Role> {
    match s {
        "system" | "developer" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" | "function" => Some(Role::Tool),
        _ => None,
    }
}

/// The role of one message object: missing means user; `None` = an unknown role, which the
/// caller skips (§3.1). Non-object messages are a 400.
fn message_role(m: &Value) -> Result<Option<Role>, ApiError> {
    if m.as_object().is_none() {
        return Err(bad());
    }
    Ok(match opt_str(m, "role")? {
        None => Some(Role::User),
        Some(r) => role_of(r),
    })
}

fn parse_chat(root: &Value, body: &str, pc: ParseCtx) -> Result<GenRequest, ApiError> {
    let msgs = match field(root, "messages") {
        None => return Err(ApiError::bad_request("missing messages")),
        Some(v) => v.as_array().ok_or_else(bad)?,
    };
    let mut messages = Vec::with_capacity(msgs.len());
    for m in msgs {
        let Some(role) = message_role(m)? else { continue };
        let mut msg = Message::new(role, openai_text(m.get("content")));
        msg.reasoning = openai_text(m.get("reasoning_content"));
        if role == Role::Tool {
            if let Some(id) = opt_str(m, "tool_call_id")? {
                msg.tool_result_ids.push(id.to_string());
            }
        }
        if let Some(tc) = field(m, "tool_calls") {
            for c in tc.as_array().ok_or_else(bad)? {
                if c.as_object().is_none() {
                    return Err(bad());
                }
                let id = opt_str(c, "id")?.unwrap_or("").to_string();
                let f = field(c, "function").ok_or_else(bad)?;
                if f.as_object().is_none() {
                    return Err(bad());
                }
                let name = opt_str(f, "name")?.unwrap_or("").to_string();
                let arguments = match field(f, "arguments") {
                    None => String::new(),
                    Some(Value { kind: Kind::Str(s), .. }) => s.clone(),
                    Some(v) => v.raw(body).to_string(),
                };
                msg.tool_calls.push(ToolCall { id, name, arguments });
            }
        }
        messages.push(msg);
    }
    let tools = openai_tools(root, body)?;
    let tool_choice_none = matches!(field(root, "tool_choice").map(|v| &v.kind), Some(Kind::Str(s)) if s == "none");
    let model = model_name(root)?;
    let mode = resolve_mode(root, Api::Chat, &model, pc.ctx_size)?;
    Ok(GenRequest {
        api: Api::Chat,
        tools_active: !tools.is_empty() && !tool_choice_none,
        tools,
        mode,
        max_tokens: max_tokens(root, &["max_tokens", "max_completion_tokens"])?,
        sampling: sampling(root, true)?,
        stream: opt_bool(root, "stream")?.unwrap_or(false),
        include_usage: include_usage(root)?,
        stop: stop_list(root, "stop")?,
        prompt: None,
        responses: None,
        model,
        messages,
    })
}

/// OpenAI tools: the raw bytes of each `function` value (§3.6); elements
/// without a `function` object (flat form) are taken whole.
fn openai_tools(root: &Value, body: &str) -> Result<Vec<String>, ApiError> {
    let mut out = Vec::new();
    if let Some(t) = field(root, "tools") {
        for tool in t.as_array().ok_or_else(bad)? {
            if tool.as_object().is_none() {
                return Err(bad());
            }
            match field(tool, "function") {
                Some(f) if f.as_object().is_some() => out.push(f.raw(body).to_string()),
                Some(_) => return Err(bad()),
                None => out.push(tool.raw(body).to_string()),
            }
        }
    }
    Ok(out)
}

fn parse_completions(root: &Value, pc: ParseCtx) -> Result<GenRequest, ApiError> {
    let prompt = match field(root, "prompt").map(|v| &v.kind) {
        None => return Err(ApiError::bad_request("missing prompt")),
        Some(Kind::Str(s)) => s.clone(),
        Some(Kind::Arr(a)) => match a.first().map(|v| &v.kind) {
            Some(Kind::Str(s)) => s.clone(),
            _ => String::new(),
        },
        Some(_) => return Err(bad()),
    };
    let model = model_name(root)?;
    let mode = resolve_mode(root, Api::Completions, &model, pc.ctx_size)?;
    Ok(GenRequest {
        api: Api::Completions,
        messages: vec![],
        tools: vec![],
        tools_active: false,
        mode,
        max_tokens: max_tokens(root, &["max_tokens"])?,
        sampling: sampling(root, true)?,
        stream: opt_bool(root, "stream")?.unwrap_or(false),
        include_usage: include_usage(root)?,
        stop: stop_list(root, "stop")?,
        prompt: Some(prompt),
        responses: None,
        model,
    })
}

/// Anthropic `system`: string or array of strings / `{text}` parts joined by
/// "\n" (only when the previous part lacks one); `x-anthropic-` parts dropped.
fn anthropic_system(v: &Value) -> Result<String, ApiError> {
    let mut out = String::new();
    let mut push = |t: &str| {
        if t.starts_with("x-anthropic-") {
            return;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(t);
    };
    match &v.kind {
        Kind::Str(s) => push(s),
        Kind::Arr(a) => {
            for p in a {
                match &p.kind {
                    Kind::Str(s) => push(s),
                    Kind::Obj(_) => {
                        if let Some(t) = p.get("text").and_then(|t| t.as_str()) {
                            push(t)
                        }
                    }
                    _ => {}
                }
            }
        }
        Kind::Null => {}
        _ => return Err(bad()),
    }
    Ok(out)
}

pub fn escape_tool_result(s: &str) -> String {
    s.replace("</tool_result>", "&lt;/tool_result>")
}

fn anthropic_result_text(v: Option<&Value>) -> String {
    // Untyped blocks count as text.
    joined_text(v, |b| b.get("type").and_then(|t| t.as_str()).is_none_or(|t| t == "text"))
}

fn parse_messages(root: &Value, body: &str, pc: ParseCtx) -> Result<GenRequest, ApiError> {
    let msgs = match field(root, "messages") {
        None => return Err(ApiError::bad_request("missing messages")),
        Some(v) => v.as_array().ok_or_else(bad)?,
    };
    let mut messages = Vec::new();
    if let Some(s) = root.get("system") {
        let sys = anthropic_system(s)?;
        if !sys.is_empty() {
            messages.push(Message::new(Role::System, sys));
        }
    }
    for m in msgs {
        let Some(role) = message_role(m)? else { continue };
        let mut msg = Message::new(role, "");
        match field(m, "content").map(|v| &v.kind) {
            None => {}
            Some(Kind::Str(s)) => msg.content.push_str(s),
            Some(Kind::Arr(blocks)) => {
                for b in blocks {
                    if b.as_object().is_none() {
                        if let Kind::Str(s) = &b.kind {
                            msg.content.push_str(s);
                        }
                        continue;
                    }
                    match opt_str(b, "type")?.unwrap_or("") {
                        "text" => msg.content.push_str(opt_str(b, "text")?.unwrap_or("")),
                        "thinking" => msg.reasoning.push_str(opt_str(b, "thinking")?.unwrap_or("")),
                        "tool_use" => {
                            let id = opt_str(b, "id")?.unwrap_or("").to_string();
                            let name = opt_str(b, "name")?.unwrap_or("").to_string();
                            let arguments = match field(b, "input") {
                                None => "{}".to_string(),
                                Some(Value { kind: Kind::Str(s), .. }) => s.clone(),
                                Some(v) => v.raw(body).to_string(),
                            };
                            msg.tool_calls.push(ToolCall { id, name, arguments });
                        }
                        "tool_result" => {
                            let id = opt_str(b, "tool_use_id")?.unwrap_or("").to_string();
                            msg.tool_result_ids.push(id);
                            msg.content.push_str("<tool_result>");
                            msg.content.push_str(&escape_tool_result(&anthropic_result_text(b.get("content"))));
                            msg.content.push_str("</tool_result>");
                        }
                        _ => {
                            if let Some(t) = b.get("text").and_then(|t| t.as_str()) {
                                msg.content.push_str(t);
                            }
                            if let Some(t) = b.get("thinking").and_then(|t| t.as_str()) {
                                msg.reasoning.push_str(t);
                            }
                        }
                    }
                }
            }
            Some(_) => return Err(bad()),
        }
        messages.push(msg);
    }
    let mut tools = Vec::new();
    if let Some(t) = field(root, "tools") {
        for tool in t.as_array().ok_or_else(bad)? {
            if tool.as_object().is_none() {
                return Err(bad());
            }
            tools.push(tool.raw(body).to_string());
        }
    }
    let tool_choice_none = match field(root, "tool_choice") {
        Some(tc) if tc.as_object().is_some() => opt_str(tc, "type")? == Some("none"),
        Some(Value { kind: Kind::Str(s), .. }) => s == "none",
        _ => false,
    };
    let model = model_name(root)?;
    let mode = resolve_mode(root, Api::Messages, &model, pc.ctx_size)?;
    Ok(GenRequest {
        api: Api::Messages,
        tools_active: !tools.is_empty() && !tool_choice_none,
        tools,
        mode,
        max_tokens: max_tokens(root, &["max_tokens"])?,
        sampling: sampling(root, false)?,
        stream: opt_bool(root, "stream")?.unwrap_or(false),
        include_usage: true,
        stop: stop_list(root, "stop_sequences")?,
        prompt: None,
        responses: None,
        model,
        messages,
    })
}

// ---------------------------------------------------------------- Responses

/// Hosted tool-call item types and the tool name their calls render with.
const HOSTED_CALLS: [(&str, &str); 4] = [
    ("local_shell_call", "local_shell"),
    ("web_search_call", "web_search"),
    ("tool_search_call", "tool_search"),
    ("image_generation_call", "image_generation"),
];
const OUTPUT_ITEMS: [&str; 7] = [
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "web_search_call_output",
    "tool_search_output",
    "tool_search_call_output",
    "image_generation_call_output",
];
/// Schema line for the hosted `{"type":"tool_search"}` tool (§5.4).
pub const TOOL_SEARCH_SCHEMA: &str = r#"{"name":"tool_search","description":"Search for additional tools by query; matching tool schemas are loaded for the following turns.","parameters":{}}"#;

/// Tools of a Responses request: schema lines plus what output items need.
#[derive(Default)]
struct RespTools {
    lines: Vec<String>,
    namespaces: Vec<(String, String, String)>,
    tool_search: bool,
}

impl RespTools {
    /// One `tools` array (top level or a `tool_search_output`'s): OpenAI-wrapped
    /// or flat function tools raw, `namespace` tools flattened into synthetic
    /// lines, `tool_search` synthesised.
    fn add(&mut self, arr: &Value, body: &str) -> Result<(), ApiError> {
        for tool in arr.as_array().ok_or_else(bad)? {
            if tool.as_object().is_none() {
                return Err(bad());
            }
            match opt_str(tool, "type")? {
                Some("namespace") => {
                    let ns = opt_str(tool, "name")?.ok_or_else(bad)?;
                    for t in field(tool, "tools").and_then(|t| t.as_array()).ok_or_else(bad)? {
                        if t.as_object().is_none() {
                            return Err(bad());
                        }
                        let f = match field(t, "function") {
                            Some(f) if f.as_object().is_some() => f,
                            Some(_) => return Err(bad()),
                            None => t,
                        };
                        let wire = opt_str(f, "name")?.ok_or_else(bad)?;
                        let full = format!("{ns}{wire}");
                        let mut o = crate::json::Obj::new().str("name", &full);
                        if let Some(d) = field(f, "description") {
                            o = o.raw("description", d.raw(body));
                        }
                        let params = field(f, "parameters").map_or("{}", |p| p.raw(body));
                        self.lines.push(o.raw("parameters", params).finish());
                        self.namespaces.push((full, ns.to_string(), wire.to_string()));
                    }
                }
                Some("tool_search") => {
                    if !self.tool_search {
                        self.lines.push(TOOL_SEARCH_SCHEMA.to_string());
                    }
                    self.tool_search = true;
                }
                _ => match field(tool, "function") {
                    Some(f) if f.as_object().is_some() => self.lines.push(f.raw(body).to_string()),
                    Some(_) => return Err(bad()),
                    None => self.lines.push(tool.raw(body).to_string()),
                },
            }
        }
        Ok(())
    }
}

/// Message `content`: string, null, or an array of strings / text parts.
fn responses_content(v: Option<&Value>) -> Result<String, ApiError> {
    let mut out = String::new();
    match v.map(|v| &v.kind) {
        None | Some(Kind::Null) => {}
        Some(Kind::Str(s)) => out.push_str(s),
        Some(Kind::Arr(parts)) => {
            for p in parts {
                match &p.kind {
                    Kind::Str(s) => out.push_str(s),
                    Kind::Obj(_) => {
                        let ty = opt_str(p, "type")?;
                        if !matches!(ty, Some("input_text" | "output_text" | "text" | "summary_text" | "reasoning_text")) {
                            return Err(bad());
                        }
                        out.push_str(opt_str(p, "text")?.unwrap_or(""));
                    }
                    _ => return Err(bad()),
                }
            }
        }
        Some(_) => return Err(bad()),
    }
    Ok(out)
}

/// Texts of a reasoning item's `summary` / `content` arrays.
fn reasoning_texts(v: Option<&Value>, out: &mut Vec<String>) -> Result<(), ApiError> {
    match v.map(|v| &v.kind) {
        None | Some(Kind::Null) => Ok(()),
        Some(Kind::Str(s)) => {
            out.push(s.clone());
            Ok(())
        }
        Some(Kind::Arr(parts)) => {
            for p in parts {
                match &p.kind {
                    Kind::Str(s) => out.push(s.clone()),
                    Kind::Obj(_) => out.push(opt_str(p, "text")?.unwrap_or("").to_string()),
                    _ => return Err(bad()),
                }
            }
            Ok(())
        }
        Some(_) => Err(bad()),
    }
}

/// Call arguments: a JSON string as is, any other JSON value raw.
fn call_args(v: Option<&Value>, body: &str) -> String {
    match v {
        None => String::new(),
        Some(Value { kind: Kind::Str(s), .. }) => s.clone(),
        Some(v) => v.raw(body).to_string(),
    }
}

/// Tool output text: string, content array (texts), or raw JSON.
fn output_text(v: &Value, body: &str) -> String {
    match &v.kind {
        Kind::Str(s) => s.clone(),
        Kind::Arr(_) => openai_text(Some(v)),
        _ => v.raw(body).to_string(),
    }
}

fn parse_responses(root: &Value, body: &str, pc: ParseCtx) -> Result<GenRequest, ApiError> {
    for f in ["previous_response_id", "conversation"] {
        if field(root, f).is_some() {
            return Err(ApiError::bad_request(format!("{f} is not supported; replay full input instead")));
        }
    }
    let input = field(root, "input").ok_or_else(|| ApiError::bad_request("missing input"))?;
    let mut tools = RespTools::default();
    if let Some(t) = field(root, "tools") {
        tools.add(t, body)?;
    }
    let mut messages = Vec::new();
    if let Some(i) = opt_str(root, "instructions")? {
        messages.push(Message::new(Role::System, i));
    }
    match &input.kind {
        Kind::Str(s) => messages.push(Message::new(Role::User, s.as_str())),
        Kind::Arr(items) => parse_input_items(items, body, &mut messages, &mut tools)?,
        _ => return Err(bad()),
    }
    let tool_choice_none = match field(root, "tool_choice") {
        None => false,
        Some(Value { kind: Kind::Str(c), .. }) => match c.as_str() {
            "none" => true,
            "auto" => false,
            other => return Err(ApiError::bad_request(format!("tool_choice={other} not supported"))),
        },
        Some(v) if v.as_object().is_some() => return Err(ApiError::bad_request("forced tool_choice not supported")),
        Some(_) => return Err(bad()),
    };
    let summary = match field(root, "reasoning") {
        Some(r) => matches!(opt_str(r, "summary")?, Some("auto" | "concise" | "detailed")),
        None => false,
    };
    let model = model_name(root)?;
    let mode = resolve_mode(root, Api::Responses, &model, pc.ctx_size)?;
    let mut sampling = Sampling::default();
    if let Some(t) = opt_num(root, "temperature")? {
        sampling.temperature = t as f32;
    }
    if let Some(p) = opt_num(root, "top_p")? {
        sampling.top_p = if p <= 0.0 || p > 1.0 { 1.0 } else { p as f32 };
    }
    let missing_reasoning = mode.thinking()
        && messages.iter().any(|m| m.role == Role::Assistant && !m.tool_calls.is_empty() && m.reasoning.is_empty());
    Ok(GenRequest {
        api: Api::Responses,
        tools_active: !tools.lines.is_empty() && !tool_choice_none,
        mode,
        max_tokens: max_tokens(root, &["max_tokens", "max_output_tokens"])?,
        sampling,
        stream: opt_bool(root, "stream")?.unwrap_or(false),
        include_usage: true,
        stop: Vec::new(),
        prompt: None,
        responses: Some(std::sync::Arc::new(ResponsesInfo {
            summary,
            namespaces: tools.namespaces,
            tool_search: tools.tool_search,
            missing_reasoning,
        })),
        tools: tools.lines,
        model,
        messages,
    })
}

/// §5.4 input items → messages. Reasoning items are held as pending
/// reasoning for the next assistant message or call; a user message or tool
/// output arriving first flushes it as an empty assistant message.
fn parse_input_items(items: &[Value], body: &str, messages: &mut Vec<Message>, tools: &mut RespTools) -> Result<(), ApiError> {
    let mut pending: Option<String> = None;
    let flush = |messages: &mut Vec<Message>, pending: &mut Option<String>| {
        if let Some(r) = pending.take() {
            let mut m = Message::new(Role::Assistant, "");
            m.reasoning = r;
            messages.push(m);
        }
    };
    for item in items {
        if item.as_object().is_none() {
            return Err(bad());
        }
        if let Some(st) = opt_str(item, "status")? {
            if st != "completed" {
                return Err(ApiError::bad_request(format!(
                    "input item with status {st} cannot be replayed; send only completed items"
                )));
            }
        }
        let ty = opt_str(item, "type")?.unwrap_or("message");
        let id = || -> Result<String, ApiError> {
            Ok(opt_str(item, "call_id")?.or(opt_str(item, "id")?).unwrap_or("").to_string())
        };
        if ty == "message" {
            let content = responses_content(item.get("content"))?;
            match opt_str(item, "role")?.unwrap_or("user") {
                "user" => {
                    flush(messages, &mut pending);
                    messages.push(Message::new(Role::User, content));
                }
                "assistant" => {
                    let mut m = Message::new(Role::Assistant, content);
                    m.reasoning = pending.take().unwrap_or_default();
                    messages.push(m);
                }
                "system" | "developer" => messages.push(Message::new(Role::System, content)),
                _ => return Err(bad()),
            }
        } else if ty == "reasoning" {
            let mut parts = Vec::new();
            reasoning_texts(item.get("summary"), &mut parts)?;
            reasoning_texts(item.get("content"), &mut parts)?;
            let text = parts.join("\n");
            pending = Some(match pending.take() {
                Some(p) if !p.is_empty() => format!("{p}\n{text}"),
                _ => text,
            });
        } else if let Some(name) = match ty {
            "function_call" | "custom_tool_call" => {
                let n = opt_str(item, "name")?.unwrap_or("");
                Some(match opt_str(item, "namespace")? {
                    Some(ns) => format!("{ns}{n}"),
                    None => n.to_string(),
                })
            }
            _ => HOSTED_CALLS.iter().find(|(t, _)| *t == ty).map(|(_, n)| n.to_string()),
        } {
            let args = ["arguments", "input", "action"].iter().find_map(|k| field(item, k));
            let call = ToolCall { id: id()?, name, arguments: call_args(args, body) };
            let reasoning = pending.take();
            match messages.last_mut() {
                Some(m) if m.role == Role::Assistant => {
                    if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                        if !m.reasoning.is_empty() {
                            m.reasoning.push('\n');
                        }
                        m.reasoning.push_str(&r);
                    }
                    m.tool_calls.push(call);
                }
                _ => {
                    let mut m = Message::new(Role::Assistant, "");
                    m.reasoning = reasoning.unwrap_or_default();
                    m.tool_calls.push(call);
                    messages.push(m);
                }
            }
        } else if OUTPUT_ITEMS.contains(&ty) {
            flush(messages, &mut pending);
            let content = if let Some(o) = field(item, "output") {
                output_text(o, body)
            } else if let Some(r) = field(item, "result") {
                output_text(r, body)
            } else if let Some(t) = field(item, "tools") {
                t.raw(body).to_string()
            } else {
                String::new()
            };
            if ty == "tool_search_output" {
                if let Some(t) = field(item, "tools") {
                    tools.add(t, body)?;
                }
            }
            let mut m = Message::new(Role::Tool, content);
            m.tool_result_ids.push(id()?);
            messages.push(m);
        } else if !matches!(ty, "compaction" | "context_compaction") {
            return Err(bad());
        }
    }
    flush(messages, &mut pending);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PC: ParseCtx = ParseCtx { ctx_size: 32768 };

    fn chat(body: &str) -> Result<GenRequest, ApiError> {
        parse_request(Api::Chat, body, PC)
    }

    #[test]
    fn chat_fields_and_defaults() {
        let r = chat(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(r.mode, ThinkMode::High);
        assert_eq!(r.sampling, Sampling { temperature: 1.0, top_p: 1.0, top_k: 0, min_p: 0.05, seed: None });
        assert_eq!(r.model, DEFAULT_MODEL);
        assert_eq!(r.max_tokens, None);
        let r = chat(r#"{"model":"m","messages":[],"max_tokens":-5,"top_p":0,"top_k":5000,"seed":7,"stop":["a","",3],"stream":true,"stream_options":{"include_usage":true}}"#).unwrap();
        assert_eq!(r.max_tokens, Some(0));
        assert_eq!(r.sampling.top_p, 1.0);
        assert_eq!(r.sampling.top_k, 1024);
        assert_eq!(r.sampling.seed, Some(7));
        assert_eq!(r.stop, vec!["a"]);
        assert!(r.stream && r.include_usage);
        assert_eq!(chat(r#"{"messages":[],"max_completion_tokens":12.9}"#).unwrap().max_tokens, Some(12));
    }

    #[test]
    fn chat_errors() {
        assert_eq!(chat("{}").unwrap_err().message, "missing messages");
        for b in [
            "nope",
            "[1]",
            r#"{"messages":"x"}"#,
            r#"{"messages":[],"temperature":"hot"}"#,
            r#"{"messages":[],"stream":1}"#,
            r#"{"messages":[],"reasoning_effort":"extreme"}"#,
            r#"{"messages":[],"reasoning_effort":3}"#,
            r#"{"messages":[],"thinking":"yes"}"#,
            r#"{"messages":[],"tools":{}}"#,
        ] {
            let e = chat(b).unwrap_err();
            assert_eq!((e.status, e.message.as_str()), (400, "invalid JSON request"), "{b}");
        }
    }

    #[test]
    fn thinking_resolution() {
        let m = |b: &str, ctx| parse_request(Api::Chat, b, ParseCtx { ctx_size: ctx }).unwrap().mode;
        assert_eq!(m(r#"{"messages":[]}"#, 32768), ThinkMode::High);
        assert_eq!(m(r#"{"messages":[],"model":"deepseek-chat"}"#, 32768), ThinkMode::None);
        assert_eq!(m(r#"{"messages":[],"model":"deepseek-chat","think":true}"#, 32768), ThinkMode::High);
        assert_eq!(m(r#"{"messages":[],"model":"deepseek-reasoner"}"#, 32768), ThinkMode::High);
        for e in ["low", "medium", "high", "xhigh", "minimal"] {
            assert_eq!(m(&format!(r#"{{"messages":[],"reasoning_effort":"{e}"}}"#), 32768), ThinkMode::High);
        }
        assert_eq!(m(r#"{"messages":[],"reasoning_effort":"max"}"#, 393216), ThinkMode::Max);
        assert_eq!(m(r#"{"messages":[],"reasoning_effort":"max"}"#, 393215), ThinkMode::High);
        assert_eq!(m(r#"{"messages":[],"reasoning_effort":"none"}"#, 32768), ThinkMode::None);
        assert_eq!(m(r#"{"messages":[],"reasoning_effort":null}"#, 32768), ThinkMode::High);
        assert_eq!(m(r#"{"messages":[],"thinking":{"type":"disabled","budget_tokens":10}}"#, 32768), ThinkMode::None);
        assert_eq!(m(r#"{"messages":[],"thinking":false}"#, 32768), ThinkMode::None);
        let a = |b: &str| parse_request(Api::Messages, b, ParseCtx { ctx_size: 393216 }).unwrap().mode;
        assert_eq!(a(r#"{"messages":[],"output_config":{"effort":"max"}}"#), ThinkMode::Max);
    }

    #[test]
    fn chat_messages_and_tools_raw() {
        let body = r#"{"tools":[{"type":"function","function": {"name":"f",  "parameters":{}}}],
            "messages":[{"role":"developer","content":[{"type":"text","text":"a"},"b",{"type":"image_url"}]},
            {"content":null},{"role":"narrator","content":"skip"},
            {"role":"assistant","reasoning_content":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"out"}]}"#;
        let r = chat(body).unwrap();
        assert_eq!(r.tools, vec![r#"{"name":"f",  "parameters":{}}"#]);
        assert!(r.tools_active);
        assert_eq!(r.messages.len(), 4);
        assert_eq!(r.messages[0], Message::new(Role::System, "ab"));
        assert_eq!(r.messages[1], Message::new(Role::User, ""));
        assert_eq!(r.messages[2].tool_calls[0].arguments, r#"{"x": 1}"#);
        assert_eq!(r.messages[2].reasoning, "r");
        assert_eq!(r.messages[3].tool_result_ids, vec!["c1"]);
        let r = chat(&body.replace("\"tools\"", "\"tool_choice\":\"none\",\"tools\"")).unwrap();
        assert!(!r.tools_active);
    }

    #[test]
    fn anthropic_normalisation() {
        let body = r#"{"system":[{"type":"text","text":"x-anthropic-billing: 1"},{"type":"text","text":"A"},"B\n","C"],
          "max_tokens":5,"stop_sequences":["\n\n"],
          "tools":[{"name":"Bash","input_schema":{"type":"object"}}],
          "messages":[{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"b":1, "a":"x"}}],"role":"assistant"},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x</tool_result>"},{"type":"image"}]},{"type":"text","text":"go"}]}]}"#;
        let r = parse_request(Api::Messages, body, PC).unwrap();
        assert_eq!(r.messages[0], Message::new(Role::System, "A\nB\nC"));
        assert_eq!(r.messages[1].role, Role::Assistant);
        assert_eq!(r.messages[1].tool_calls[0].arguments, r#"{"b":1, "a":"x"}"#);
        assert_eq!(r.messages[2].content, "<tool_result>x&lt;/tool_result></tool_result>go");
        assert_eq!(r.messages[2].tool_result_ids, vec!["t1"]);
        assert_eq!(r.tools, vec![r#"{"name":"Bash","input_schema":{"type":"object"}}"#]);
        assert_eq!(r.stop, vec!["\n\n"]);
        assert_eq!(r.max_tokens, Some(5));
        let r = parse_request(Api::Messages, &body.replace("\"max_tokens\":5,", "\"tool_choice\":{\"type\":\"none\"},"), PC).unwrap();
        assert!(!r.tools_active);
    }

    #[test]
    fn completions_prompt_forms() {
        let p = |b: &str| parse_request(Api::Completions, b, PC);
        assert_eq!(p(r#"{"prompt":"x"}"#).unwrap().prompt.as_deref(), Some("x"));
        assert_eq!(p(r#"{"prompt":["y","z"]}"#).unwrap().prompt.as_deref(), Some("y"));
        assert_eq!(p(r#"{"model":"deepseek-chat","prompt":"y"}"#).unwrap().mode, ThinkMode::None);
        assert_eq!(p("{}").unwrap_err().message, "missing prompt");
        assert_eq!(p(r#"{"prompt":5}"#).unwrap_err().message, "invalid JSON request");
    }
}
