//! Prompt rendering exactly as ds4's server renders it (SERVING.md §2-3).
//!
//! Callers (HTTP front ends, CLI) normalise their request into [`Message`]s plus raw tool schema
//! lines and a [`ThinkingMode`], then call [`Chat::render`] (or [`render_chat`]) and tokenize the
//! result with `Tokenizer::encode_chat`.

use crate::json;
use crate::tokenizer::{ASSISTANT, BOS, EOS, THINK, THINK_END, USER};
use serde::{Deserialize, Serialize};

/// Think Max is honoured only with at least this many tokens of context (else: high).
pub const THINK_MAX_MIN_CTX: u64 = 393_216;

/// Inserted right after BOS in Think Max mode (476 bytes, ends with a blank line).
pub const THINK_MAX_PREAMBLE: &str = "Reasoning Effort: Absolute maximum with no shortcuts permitted.\nYou MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\nExplicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

/// ds4's tools block before the schema lines.
pub const TOOLS_PREAMBLE: &str = "## Tools\n\nYou have access to a set of tools to help answer the user question. You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"$TOOL_NAME\">\n<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n...\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"$TOOL_NAME2\">\n...\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>\n\nString parameters should be specified as raw text and set `string=\"true\"`. Preserve characters such as `>`, `&`, and `&&` exactly; never replace normal string characters with XML or HTML entity escapes. Only if a string value itself contains the exact closing parameter tag `</｜DSML｜parameter>`, write that tag as `&lt;/｜DSML｜parameter>` inside the value. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\nIf thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.\n\nOtherwise, output directly after </think> with tool calls or final response.\n\n### Available Tool Schemas\n\n";

/// ds4's tools block after the schema lines (no trailing newline).
pub const TOOLS_POSTAMBLE: &str = "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls. Use the exact parameter names from the schemas.";

/// System text of `/v1/completions` and the CLI's default (no final period, as in ds4).
pub const DEFAULT_SYSTEM: &str = "You are a helpful assistant";

/// Thinking mode of a request (SERVING.md §2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingMode {
    /// Non-thinking: the assistant turn opens with `</think>`.
    None,
    /// Normal thinking (default).
    #[default]
    High,
    /// Think Max: high plus [`THINK_MAX_PREAMBLE`].
    Max,
}

impl ThinkingMode {
    /// The mode actually used with a context of `ctx_size` tokens: Max below
    /// [`THINK_MAX_MIN_CTX`] is downgraded to High.
    pub fn for_context(self, ctx_size: u64) -> ThinkingMode {
        if self == ThinkingMode::Max && ctx_size < THINK_MAX_MIN_CTX {
            ThinkingMode::High
        } else {
            self
        }
    }

    pub fn is_thinking(self) -> bool {
        self != ThinkingMode::None
    }

    /// Map a `reasoning_effort`-style string: `max`; `xhigh|high|medium|low|minimal` (high);
    /// `none`. Any other string is None (the API answers 400).
    pub fn from_effort(effort: &str) -> Option<ThinkingMode> {
        match effort {
            "max" => Some(ThinkingMode::Max),
            "xhigh" | "high" | "medium" | "low" | "minimal" => Some(ThinkingMode::High),
            "none" => Some(ThinkingMode::None),
            _ => None,
        }
    }
}

/// Message role. Unknown roles are kept as `Other` and skipped by the renderer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Role {
    System,
    /// Treated exactly like `System`.
    Developer,
    #[default]
    User,
    Assistant,
    /// Tool result.
    Tool,
    /// Tool result (legacy OpenAI name).
    Function,
    Other(String),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "function" => Role::Function,
            other => Role::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
            Role::Other(s) => s,
        }
    }

    fn is_system(&self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }

    fn is_tool_result(&self) -> bool {
        matches!(self, Role::Tool | Role::Function)
    }
}

impl From<String> for Role {
    fn from(s: String) -> Role {
        Role::parse(&s)
    }
}

impl From<Role> for String {
    fn from(r: Role) -> String {
        r.as_str().to_string()
    }
}

/// A tool call made by an assistant turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    /// Client-visible id (`call_…`, `toolu_…`); not rendered.
    pub id: String,
    pub name: String,
    /// Arguments as raw JSON text, exactly as the client sent them: OpenAI's `arguments`
    /// string, or the raw bytes of Anthropic's `input` object. Member order and duplicate keys
    /// are rendered as written. Text that is not a JSON object is rendered as one string
    /// parameter named `arguments`.
    pub arguments: String,
}

impl ToolCall {
    /// From a parsed JSON value: a JSON string is taken as the raw arguments text (OpenAI),
    /// anything else is serialised (Anthropic `input`). Note: a `serde_json::Value` object only
    /// keeps the client's member order with serde_json's `preserve_order` feature; pass the raw
    /// text instead when that matters.
    pub fn from_value(id: impl Into<String>, name: impl Into<String>, arguments: &serde_json::Value) -> ToolCall {
        let arguments = match arguments {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        ToolCall { id: id.into(), name: name.into(), arguments }
    }
}

/// One normalised message (SERVING.md §3: `{role, content, reasoning, tool_calls[], tool_call_ids[]}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant reasoning (`reasoning_content`, Anthropic `thinking` blocks).
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    /// Ids of the tool calls this message answers (not rendered; for the server's checks).
    pub tool_call_ids: Vec<String>,
    /// Exact DSML block to emit instead of the canonical rendering of `tool_calls`, when tool
    /// memory knows the bytes the model sampled (SERVING.md §3.5, §6.3). Starts with `"\n\n"`.
    pub replay_dsml: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message { role, content: content.into(), ..Default::default() }
    }
    pub fn system(content: impl Into<String>) -> Message {
        Message::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::new(Role::Assistant, content)
    }
    pub fn tool(content: impl Into<String>) -> Message {
        Message::new(Role::Tool, content)
    }
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Message {
        self.reasoning = reasoning.into();
        self
    }
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Message {
        self.tool_calls = calls;
        self
    }
}

/// A conversation to render: messages, raw tool schema lines, requested thinking mode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Chat {
    pub messages: Vec<Message>,
    /// One raw JSON line per active tool (e.g. the bytes of an OpenAI tool's `function` value as
    /// sent). Empty when no tools are active (none sent, or `tool_choice` is "none").
    pub tools: Vec<String>,
    /// Requested mode; [`Chat::render`] applies the Think Max context rule.
    pub mode: ThinkingMode,
}

impl Chat {
    /// The rendered prompt for a session with `ctx_size` tokens of context.
    pub fn render(&self, ctx_size: u64) -> String {
        render_chat(&self.messages, &self.tools, self.mode.for_context(ctx_size))
    }

    /// The live tool tail (SERVING.md §3.7) from message `start` (the first tool result).
    pub fn render_tool_tail(&self, start: usize, ctx_size: u64) -> String {
        render_tool_tail(self.messages.get(start..).unwrap_or(&[]), self.mode.for_context(ctx_size))
    }
}

/// Render a chat prompt with an already effective mode (see [`ThinkingMode::for_context`]).
pub fn render_chat(messages: &[Message], tools: &[String], mode: ThinkingMode) -> String {
    let schemas = join_schema_lines(tools);
    let tool_context = !schemas.is_empty()
        || messages.iter().any(|m| (m.role == Role::Assistant && !m.tool_calls.is_empty()) || m.role.is_tool_result());
    let mut system = String::new();
    if !schemas.is_empty() {
        system.push_str(TOOLS_PREAMBLE);
        system.push_str(&schemas);
        system.push_str(TOOLS_POSTAMBLE);
    }
    for m in messages.iter().filter(|m| m.role.is_system()) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&m.content);
    }
    let last_user = messages.iter().rposition(|m| m.role == Role::User || m.role.is_tool_result());
    let mut out = String::with_capacity(system.len() + messages.iter().map(|m| m.content.len() + m.reasoning.len() + 64).sum::<usize>());
    out.push_str(BOS);
    if mode == ThinkingMode::Max {
        out.push_str(THINK_MAX_PREAMBLE);
    }
    out.push_str(&system);
    render_turns(&mut out, messages, mode, |i| tool_context || last_user.is_none_or(|u| i > u));
    out
}

/// Live tool tail (SERVING.md §3.7): `⟨EOS⟩` then the turns of `messages` (starting at the
/// first new tool result), reasoning always kept, then the generation prefix.
pub fn render_tool_tail(messages: &[Message], mode: ThinkingMode) -> String {
    let mut out = String::from(EOS);
    render_turns(&mut out, messages, mode, |_| true);
    out
}

/// `/v1/completions` and CLI one-shot prompts: `⟨BOS⟩ [preamble] system ⟨User⟩ prompt
/// ⟨Assistant⟩ (<think>|</think>)`. `system` may be empty.
pub fn render_completion(system: &str, prompt: &str, mode: ThinkingMode) -> String {
    let mut out = String::with_capacity(system.len() + prompt.len() + 600);
    out.push_str(BOS);
    if mode == ThinkingMode::Max {
        out.push_str(THINK_MAX_PREAMBLE);
    }
    out.push_str(system);
    out.push_str(USER);
    out.push_str(prompt);
    out.push_str(ASSISTANT);
    out.push_str(if mode.is_thinking() { THINK } else { THINK_END });
    out
}

/// Schema lines joined by "\n", empty lines skipped.
fn join_schema_lines(tools: &[String]) -> String {
    let mut s = String::new();
    for t in tools.iter().filter(|t| !t.is_empty()) {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(t);
    }
    s
}

/// The turn loop of SERVING.md §3.2; `keep_reasoning(i)` decides, in thinking modes, whether
/// assistant message `i` shows its reasoning.
fn render_turns(out: &mut String, messages: &[Message], mode: ThinkingMode, keep_reasoning: impl Fn(usize) -> bool) {
    let think = mode.is_thinking();
    let (mut pending_assistant, mut in_tool_results) = (false, false);
    for (i, m) in messages.iter().enumerate() {
        match &m.role {
            Role::User => {
                out.push_str(USER);
                out.push_str(&m.content);
                pending_assistant = true;
                in_tool_results = false;
            }
            Role::Tool | Role::Function => {
                if !in_tool_results {
                    out.push_str(USER);
                }
                out.push_str("<tool_result>");
                push_tool_result_text(out, &m.content);
                out.push_str("</tool_result>");
                pending_assistant = true;
                in_tool_results = true;
            }
            Role::Assistant => {
                if pending_assistant {
                    out.push_str(ASSISTANT);
                    if think && keep_reasoning(i) {
                        out.push_str(THINK);
                        out.push_str(&m.reasoning);
                    }
                    out.push_str(THINK_END);
                }
                out.push_str(&m.content);
                if !m.tool_calls.is_empty() {
                    match &m.replay_dsml {
                        Some(raw) if !raw.is_empty() => out.push_str(raw),
                        _ => push_dsml_tool_calls(out, &m.tool_calls),
                    }
                }
                out.push_str(EOS);
                pending_assistant = false;
                in_tool_results = false;
            }
            Role::System | Role::Developer | Role::Other(_) => {}
        }
    }
    if pending_assistant {
        out.push_str(ASSISTANT);
        out.push_str(if think { THINK } else { THINK_END });
    }
}

/// Append `s` with every `needle` neutralised by replacing its first byte (`<`) with `subst`.
fn push_neutralised(out: &mut String, s: &str, needle: &str, subst: &str) {
    let mut rest = s;
    while let Some(i) = rest.find(needle) {
        out.push_str(&rest[..i]);
        out.push_str(subst);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// `<tool_result>` + text + `</tool_result>`, the form tool output takes in a prompt. Front ends
/// that carry tool results inside user content (Anthropic `tool_result` blocks) append this.
pub fn wrap_tool_result(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 27);
    out.push_str("<tool_result>");
    push_tool_result_text(&mut out, text);
    out.push_str("</tool_result>");
    out
}

/// Tool output is inserted verbatim except that `</tool_result>` becomes `&lt;/tool_result>`.
fn push_tool_result_text(out: &mut String, s: &str) {
    push_neutralised(out, s, "</tool_result>", "&lt;");
}

const PARAM_END: &str = "</｜DSML｜parameter>";

fn push_attr(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

fn push_param(out: &mut String, key: &str, value: &str, is_string: bool) {
    out.push_str("<｜DSML｜parameter name=\"");
    push_attr(out, key);
    out.push_str(if is_string { "\" string=\"true\">" } else { "\" string=\"false\">" });
    if is_string {
        push_neutralised(out, value, PARAM_END, "&lt;");
    } else {
        push_neutralised(out, value, PARAM_END, "\\u003c");
    }
    out.push_str(PARAM_END);
    out.push('\n');
}

/// Canonical DSML for assistant tool calls (SERVING.md §3.5), starting with "\n\n".
pub fn dsml_tool_calls(calls: &[ToolCall]) -> String {
    let mut out = String::new();
    push_dsml_tool_calls(&mut out, calls);
    out
}

fn push_dsml_tool_calls(out: &mut String, calls: &[ToolCall]) {
    if calls.is_empty() {
        return;
    }
    out.push_str("\n\n<｜DSML｜tool_calls>\n");
    for c in calls {
        out.push_str("<｜DSML｜invoke name=\"");
        push_attr(out, &c.name);
        out.push_str("\">\n");
        match json::parse_args(&c.arguments) {
            Some(args) => {
                for a in &args {
                    push_param(out, &a.key, &a.value, a.is_string);
                }
            }
            None => push_param(out, "arguments", &c.arguments, true),
        }
        out.push_str("</｜DSML｜invoke>\n");
    }
    out.push_str("</｜DSML｜tool_calls>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_max_context_rule() {
        assert_eq!(ThinkingMode::Max.for_context(393_215), ThinkingMode::High);
        assert_eq!(ThinkingMode::Max.for_context(393_216), ThinkingMode::Max);
        assert_eq!(ThinkingMode::None.for_context(1), ThinkingMode::None);
        assert_eq!(THINK_MAX_PREAMBLE.len(), 476);
        let chat = Chat { messages: vec![Message::user("hi")], tools: vec![], mode: ThinkingMode::Max };
        assert!(!chat.render(32768).contains("Reasoning Effort"));
        assert!(chat.render(1 << 20).starts_with(&format!("{BOS}{THINK_MAX_PREAMBLE}{USER}hi")));
    }

    #[test]
    fn canonical_dsml_details() {
        let calls = vec![
            ToolCall { id: "1".into(), name: "a\"<b>&".into(), arguments: r#"{"s": "x</｜DSML｜parameter>y", "n": { "k" : [1, 2] }, "s": "dup"}"#.into() },
            ToolCall { id: "2".into(), name: "none".into(), arguments: "{}".into() },
            ToolCall { id: "3".into(), name: "raw".into(), arguments: "not json".into() },
            ToolCall { id: "4".into(), name: "lit".into(), arguments: r#"{"o": {"t": "</｜DSML｜parameter>"}}"#.into() },
        ];
        let got = dsml_tool_calls(&calls);
        let want = "\n\n<｜DSML｜tool_calls>\n\
<｜DSML｜invoke name=\"a&quot;&lt;b&gt;&amp;\">\n\
<｜DSML｜parameter name=\"s\" string=\"true\">x&lt;/｜DSML｜parameter>y</｜DSML｜parameter>\n\
<｜DSML｜parameter name=\"n\" string=\"false\">{\"k\":[1,2]}</｜DSML｜parameter>\n\
<｜DSML｜parameter name=\"s\" string=\"true\">dup</｜DSML｜parameter>\n\
</｜DSML｜invoke>\n\
<｜DSML｜invoke name=\"none\">\n\
</｜DSML｜invoke>\n\
<｜DSML｜invoke name=\"raw\">\n\
<｜DSML｜parameter name=\"arguments\" string=\"true\">not json</｜DSML｜parameter>\n\
</｜DSML｜invoke>\n\
<｜DSML｜invoke name=\"lit\">\n\
<｜DSML｜parameter name=\"o\" string=\"false\">{\"t\":\"\\u003c/｜DSML｜parameter>\"}</｜DSML｜parameter>\n\
</｜DSML｜invoke>\n\
</｜DSML｜tool_calls>";
        assert_eq!(got, want);
    }

    #[test]
    fn turn_rules() {
        let msgs = vec![
            Message::new(Role::Other("narrator".into()), "skipped"),
            Message::assistant("glued-first"),
            Message::user("u1"),
            Message::assistant("a1").with_reasoning("r1"),
            Message::assistant("a2").with_reasoning("r2"),
            Message::system(""),
            Message::system("s"),
            Message::tool("x</tool_result>y"),
            Message::tool("z"),
        ];
        let got = render_chat(&msgs, &[], ThinkingMode::High);
        assert_eq!(
            got,
            format!("{BOS}s{}glued-first{EOS}{USER}u1{ASSISTANT}<think>r1</think>a1{EOS}a2{EOS}{USER}<tool_result>x&lt;/tool_result>y</tool_result><tool_result>z</tool_result>{ASSISTANT}<think>", "")
        );
        // Without tool history, reasoning before the last user turn is dropped.
        let msgs = vec![Message::user("q"), Message::assistant("a").with_reasoning("r"), Message::user("q2")];
        assert_eq!(render_chat(&msgs, &[], ThinkingMode::High), format!("{BOS}{USER}q{ASSISTANT}</think>a{EOS}{USER}q2{ASSISTANT}<think>"));
        assert_eq!(render_chat(&msgs, &[], ThinkingMode::None), format!("{BOS}{USER}q{ASSISTANT}</think>a{EOS}{USER}q2{ASSISTANT}</think>"));
        assert_eq!(
            render_tool_tail(&[Message::tool("out")], ThinkingMode::High),
            format!("{EOS}{USER}<tool_result>out</tool_result>{ASSISTANT}<think>")
        );
        assert_eq!(render_completion(DEFAULT_SYSTEM, "p", ThinkingMode::None), format!("{BOS}You are a helpful assistant{USER}p{ASSISTANT}</think>"));
    }

    #[test]
    fn serde_shapes() {
        let m: Message = serde_json::from_str(r#"{"role":"critic","content":"c","tool_calls":[{"name":"f","arguments":"{}"}]}"#).unwrap();
        assert_eq!(m.role, Role::Other("critic".into()));
        assert_eq!(m.tool_calls[0].name, "f");
        let m: Message = serde_json::from_str(r#"{"content":"c"}"#).unwrap();
        assert_eq!(m.role, Role::User);
        let c: Chat = serde_json::from_str(r#"{"messages":[{"role":"user","content":"x"}],"mode":"max"}"#).unwrap();
        assert_eq!(c.mode, ThinkingMode::Max);
        assert_eq!(serde_json::to_string(&Role::Tool).unwrap(), "\"tool\"");
        assert_eq!(ToolCall::from_value("i", "n", &serde_json::json!("{\"a\":1}")).arguments, "{\"a\":1}");
        assert_eq!(ToolCall::from_value("i", "n", &serde_json::json!({"a": 1})).arguments, "{\"a\":1}");
    }
}
