//! The shipped implementations of the worker's seams: `ds4_tok::Tokenizer` as
//! the [`TextCodec`] and `ds4_tok::chat` as the prompt renderer.

use std::sync::Arc;

use ds4_tok::chat::{render_chat, render_completion, render_tool_tail, Message as TMessage, Role as TRole, ThinkingMode, ToolCall as TCall, DEFAULT_SYSTEM};
use ds4_tok::Tokenizer;

use crate::engine::{EngineSession, Progress, SyncError, TextCodec};
use crate::http::Render;
use crate::request::{GenRequest, Message, Role, ThinkMode};

pub struct TokCodec {
    pub tok: Tokenizer,
}

impl TextCodec for TokCodec {
    fn encode_chat(&self, text: &str) -> Vec<u32> {
        self.tok.encode_chat(text)
    }
    fn token_bytes(&self, id: u32) -> Vec<u8> {
        self.tok.token_bytes(id).map(|b| b.to_vec()).unwrap_or_default()
    }
    fn eos(&self) -> u32 {
        self.tok.special().eos
    }
    fn decode(&self, ids: &[u32]) -> Vec<u8> {
        self.tok.decode(ids)
    }
    fn encode_chat_bytes(&self, bytes: &[u8]) -> Vec<u32> {
        self.tok.encode_chat_bytes(bytes)
    }
    fn user_id(&self) -> Option<u32> {
        Some(self.tok.special().user)
    }
    fn assistant_id(&self) -> Option<u32> {
        Some(self.tok.special().assistant)
    }
}

/// Routed-expert quantisation bits as the KVC header records them: 2 for the
/// 2-bit published variant (IQ2_XXS / Q2_K experts), else 4. Checkpoints hold
/// attention state, not expert weights, so any wider type (the 4-bit file,
/// f16/f32 test models) is recorded as 4 (KVCACHE.md §8 quant compatibility).
pub fn routed_quant_bits(g: &ds4_gguf::Gguf) -> u8 {
    use ds4_gguf::GgmlType;
    let ty = g.tensors.iter().find(|t| t.name.ends_with("ffn_gate_exps.weight")).map(|t| t.ty);
    match ty {
        Some(GgmlType::Iq2Xxs) | Some(GgmlType::Q2K) => 2,
        _ => 4,
    }
}

/// The engine's live session (`ds4_engine::Session`, chunked prefill with
/// cancellation) as the worker's [`EngineSession`].
pub struct EngineAdapter {
    pub session: ds4_engine::Session,
    /// [`routed_quant_bits`] of the model.
    pub quant_bits: u8,
}

impl EngineAdapter {
    pub fn new(session: ds4_engine::Session) -> Self {
        let quant_bits = routed_quant_bits(session.model().gguf());
        EngineAdapter { session, quant_bits }
    }
}

impl EngineSession for EngineAdapter {
    fn ctx(&self) -> usize {
        self.session.ctx()
    }
    fn tokens(&self) -> &[u32] {
        self.session.tokens()
    }
    fn logits(&self) -> &[f32] {
        self.session.logits()
    }
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError> {
        match self.session.sync(prompt, &mut |p: ds4_engine::Progress| progress(p.done, p.total)) {
            Ok(_) => Ok(()),
            Err(ds4_engine::EngineError::Cancelled) => Err(SyncError::Cancelled),
            Err(e) => Err(SyncError::Failed(e.to_string())),
        }
    }
    fn eval(&mut self, token: u32) -> Result<(), String> {
        self.session.eval(token).map_err(|e| e.to_string())
    }
    fn decode_run(&mut self, first: u32, rng: &mut ds4_engine::sampling::Rng, d: &mut dyn ds4_engine::Decoder) -> Result<ds4_engine::Run, String> {
        self.session.decode_run(first, rng, d).map_err(|e| e.to_string())
    }
    fn invalidate(&mut self) {
        self.session.reset();
    }
    fn quant_bits(&self) -> u8 {
        self.quant_bits
    }
    fn save_payload(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        self.session.save_payload(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }
    fn load_payload(&mut self, r: &mut dyn std::io::Read) -> Result<(), String> {
        self.session.load_payload(r).map_err(|e| e.to_string())
    }
    /// A CUDA session is left to the process exit: on the H200 device run,
    /// dropping it after the shutdown checkpoint hung the worker. The likely
    /// cause (buffers and graphs freed after their context was released) is
    /// fixed in `ds4_engine::cuda::driver`, but that fix has not run on a
    /// device yet; the driver reclaims everything at exit anyway.
    fn leak_at_exit(&self) -> bool {
        self.session.backend().name() == "cuda"
    }
    fn speculates(&self) -> bool {
        self.session.spec_config().is_some()
    }
    fn eval_run(&mut self, token: u32, max: usize, stop_after: &mut dyn FnMut(u32) -> bool) -> Result<(), String> {
        self.session.eval_speculative_until(token, max.max(1), stop_after).map(|_| ()).map_err(|e| e.to_string())
    }
    fn spec_stats(&self) -> Option<ds4_engine::mtp::SpecStats> {
        self.session.spec_stats()
    }
}

/// ds4 renderer (SERVING.md §3) from ds4-tok.
pub struct TokRender;

fn mode(m: ThinkMode) -> ThinkingMode {
    // The Max downgrade was already applied at parse time (request.rs).
    match m {
        ThinkMode::None => ThinkingMode::None,
        ThinkMode::High => ThinkingMode::High,
        ThinkMode::Max => ThinkingMode::Max,
    }
}

fn convert(m: &Message, replay: &mut dyn FnMut(&[&str]) -> Option<Arc<str>>) -> TMessage {
    let role = match m.role {
        Role::System => TRole::System,
        Role::User => TRole::User,
        Role::Assistant => TRole::Assistant,
        Role::Tool => TRole::Tool,
    };
    let tool_calls: Vec<TCall> =
        m.tool_calls.iter().map(|c| TCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() }).collect();
    let replay_dsml = if tool_calls.is_empty() {
        None
    } else {
        let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
        replay(&ids).map(|b| b.to_string())
    };
    TMessage {
        role,
        content: m.content.clone(),
        reasoning: m.reasoning.clone(),
        tool_calls,
        tool_call_ids: m.tool_result_ids.clone(),
        replay_dsml,
    }
}

impl Render for TokRender {
    fn render(&self, req: &GenRequest, replay: &mut dyn FnMut(&[&str]) -> Option<Arc<str>>) -> String {
        if let Some(p) = &req.prompt {
            return render_completion(DEFAULT_SYSTEM, p, mode(req.mode));
        }
        let msgs: Vec<TMessage> = req.messages.iter().map(|m| convert(m, replay)).collect();
        let tools: &[String] = if req.tools_active { &req.tools } else { &[] };
        render_chat(&msgs, tools, mode(req.mode))
    }

    fn render_tail(&self, req: &GenRequest, from: usize) -> String {
        let mut none = |_: &[&str]| None;
        let msgs: Vec<TMessage> = req.messages.get(from..).unwrap_or(&[]).iter().map(|m| convert(m, &mut none)).collect();
        render_tool_tail(&msgs, mode(req.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse_request, Api, ParseCtx};

    fn fixture_dir() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/chat")
    }

    /// Request normalisation (ours) + ds4-tok rendering reproduce every ds4
    /// rendering fixture byte for byte (chat, completions, Anthropic).
    #[test]
    fn fixtures_render_byte_identical() {
        let mut cases = Vec::new();
        let dir = fixture_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else {
            panic!("fixtures missing at {}", dir.display());
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                cases.push((
                    p.clone(),
                    "/v1/chat/completions".to_string(),
                    v["ds4"]["request_body"].as_str().unwrap().to_string(),
                    v["ds4"]["ctx_size"].as_u64().unwrap(),
                    v["ds4"]["expected_rendering"].as_str().unwrap().to_string(),
                ));
            }
        }
        for e in std::fs::read_dir(dir.join("ds4_endpoints")).unwrap().flatten() {
            let p = e.path();
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            cases.push((
                p.clone(),
                v["endpoint"].as_str().unwrap().to_string(),
                v["request_body"].as_str().unwrap().to_string(),
                v["ctx_size"].as_u64().unwrap(),
                v["expected_rendering"].as_str().unwrap().to_string(),
            ));
        }
        assert!(cases.len() >= 28);
        let mut checked = 0;
        for (path, endpoint, body, ctx, expected) in cases {
            let api = match endpoint.as_str() {
                "/v1/chat/completions" => Api::Chat,
                "/v1/completions" => Api::Completions,
                "/v1/messages" => Api::Messages,
                "/v1/responses" => Api::Responses,
                other => panic!("unknown endpoint {other}"),
            };
            let req = parse_request(api, &body, ParseCtx { ctx_size: ctx as usize }).unwrap();
            let got = TokRender.render(&req, &mut |_| None);
            assert_eq!(got, expected, "{}", path.display());
            checked += 1;
        }
        assert_eq!(checked, 28);
    }

    #[test]
    fn exact_replay_block_used() {
        let body = r#"{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}"#;
        let req = parse_request(Api::Chat, body, ParseCtx { ctx_size: 32768 }).unwrap();
        let sampled = "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" string=\"false\">2</｜DSML｜parameter>\n<｜DSML｜parameter name=\"b\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
        let got = TokRender.render(&req, &mut |ids| (ids == ["call_1"]).then(|| Arc::from(sampled)));
        assert!(got.contains(&format!("{sampled}<｜end▁of▁sentence｜>")), "{got}");
        let canon = TokRender.render(&req, &mut |_| None);
        assert!(canon.contains("name=\"b\" string=\"false\">1<"));
        assert!(canon.find("name=\"b\"").unwrap() < canon.find("name=\"a\"").unwrap());
    }
}
