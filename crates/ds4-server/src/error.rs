//! API errors and their JSON bodies (SERVING.md §5.6).

use crate::json::{str_lit, Obj};

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    /// OpenAI `type` (`invalid_request_error`, `server_error`, …).
    pub kind: &'static str,
    /// Context-length details: (param, n_prompt_tokens, n_ctx).
    pub context: Option<(&'static str, usize, usize)>,
}

impl ApiError {
    pub fn new(status: u16, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), kind, context: None }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "invalid_request_error", message)
    }
    pub fn not_found() -> Self {
        Self::new(404, "invalid_request_error", "unknown endpoint")
    }
    pub fn bad_http() -> Self {
        Self::bad_request("bad HTTP request")
    }
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(500, "server_error", message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(409, "invalid_request_error", message)
    }
    pub fn unavailable() -> Self {
        Self::new(503, "server_error", "server shutting down")
    }
    pub fn unauthorized() -> Self {
        Self::new(401, "authentication_error", "invalid or missing API key")
    }
    pub fn context_length(param: &'static str, n_prompt: usize, n_ctx: usize) -> Self {
        let mut e = Self::bad_request(format!(
            "Prompt has {n_prompt} tokens, but the configured context size is {n_ctx} tokens"
        ));
        e.context = Some((param, n_prompt, n_ctx));
        e
    }

    /// Body for OpenAI-style endpoints (and every non-context error).
    pub fn openai_body(&self) -> String {
        let mut inner = Obj::new().str("message", &self.message).str("type", self.kind);
        if let Some((param, n, ctx)) = self.context {
            inner = inner.str("param", param).str("code", "context_length_exceeded").num("n_prompt_tokens", n).num("n_ctx", ctx);
        }
        Obj::new().obj("error", inner).finish()
    }

    /// Anthropic envelope (used for the context-length error on /v1/messages).
    pub fn anthropic_body(&self) -> String {
        let mut inner = Obj::new().str("type", self.kind).str("message", &self.message);
        if let Some((_, n, ctx)) = self.context {
            inner = inner.num("n_prompt_tokens", n).num("n_ctx", ctx);
        }
        Obj::new().str("type", "error").obj("error", inner).finish()
    }

    /// SSE error event after headers were sent (§5.6).
    pub fn sse_event(&self, anthropic: bool) -> String {
        if anthropic {
            format!(
                "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":{}}}}}\n\n",
                str_lit(&self.message)
            )
        } else {
            format!(
                "event: error\ndata: {{\"error\":{{\"message\":{},\"type\":\"server_error\"}}}}\n\n",
                str_lit(&self.message)
            )
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        assert_eq!(
            ApiError::bad_request("missing messages").openai_body(),
            r#"{"error":{"message":"missing messages","type":"invalid_request_error"}}"#
        );
        let c = ApiError::context_length("messages", 40000, 32768);
        assert_eq!(
            c.openai_body(),
            r#"{"error":{"message":"Prompt has 40000 tokens, but the configured context size is 32768 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded","n_prompt_tokens":40000,"n_ctx":32768}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&c.anthropic_body()).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["n_ctx"], 32768);
        let s = ApiError::server("x\"y").sse_event(true);
        assert!(s.starts_with("event: error\ndata: ") && s.ends_with("\n\n"));
        let v: serde_json::Value = serde_json::from_str(s.trim_end().strip_prefix("event: error\ndata: ").unwrap()).unwrap();
        assert_eq!(v["error"]["message"], "x\"y");
    }
}
