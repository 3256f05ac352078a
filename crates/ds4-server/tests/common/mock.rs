//! Test-only scripted engine shared by tests/http_mock.rs and the dev-only
//! example `mock_server` (never part of the shipped binary).
//!
//! The mock model answers with the reversed text of the last user message
//! (thinking mode: reasoning "r", then `</think>`, then the answer).
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ds4_server::engine::{EngineSession, Progress, SyncError, TextCodec};
use ds4_server::http::Render;
use ds4_server::request::{GenRequest, Role, ThinkMode};

const SPECIALS: [&str; 7] =
    ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "｜DSML｜"];
const EOS: u32 = 257;
const USER: u32 = 258;
const ASSISTANT: u32 = 259;
const THINK: u32 = 260;
const THINK_END: u32 = 261;
pub const VOCAB: usize = 263;

pub struct Codec;

impl TextCodec for Codec {
    fn encode_chat(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            for (i, s) in SPECIALS.iter().enumerate() {
                if rest.starts_with(s) {
                    out.push(256 + i as u32);
                    rest = &rest[s.len()..];
                    continue 'outer;
                }
            }
            let c = rest.chars().next().unwrap();
            out.extend(rest[..c.len_utf8()].bytes().map(u32::from));
            rest = &rest[c.len_utf8()..];
        }
        out
    }
    fn token_bytes(&self, id: u32) -> Vec<u8> {
        if id < 256 {
            vec![id as u8]
        } else {
            SPECIALS[(id - 256) as usize].as_bytes().to_vec()
        }
    }
    fn eos(&self) -> u32 {
        EOS
    }
    fn user_id(&self) -> Option<u32> {
        Some(USER)
    }
    fn assistant_id(&self) -> Option<u32> {
        Some(ASSISTANT)
    }
}

#[derive(Clone, Default)]
pub struct Delays {
    pub prefill_us: Arc<AtomicU64>,
    pub decode_us: Arc<AtomicU64>,
    pub evals: Arc<AtomicU64>,
}

pub struct Mock {
    pub ctx: usize,
    pub toks: Vec<u32>,
    pub logits: Vec<f32>,
    pub d: Delays,
}

impl Mock {
    fn next_token(&self) -> u32 {
        let Some(a) = self.toks.iter().rposition(|&t| t == ASSISTANT) else { return EOS };
        let u = self.toks[..a].iter().rposition(|&t| t == USER).map_or(0, |u| u + 1);
        let mut target: Vec<u32> = self.toks[u..a].iter().rev().cloned().collect();
        if self.toks.get(a + 1) == Some(&THINK) {
            let mut t = vec![b'r' as u32, THINK_END];
            t.extend(target);
            target = t;
        }
        let k = self.toks.len().saturating_sub(a + 2);
        target.get(k).cloned().unwrap_or(EOS)
    }
    fn refresh(&mut self) {
        self.logits = vec![0.0; VOCAB];
        let n = self.next_token();
        self.logits[n as usize] = 30.0;
    }
}

impl EngineSession for Mock {
    fn ctx(&self) -> usize {
        self.ctx
    }
    fn tokens(&self) -> &[u32] {
        &self.toks
    }
    fn logits(&self) -> &[f32] {
        &self.logits
    }
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError> {
        let common = self.toks.iter().zip(prompt).take_while(|(a, b)| a == b).count();
        if common < self.toks.len() {
            self.toks.clear();
        }
        let total = prompt.len();
        while self.toks.len() < total {
            let end = (self.toks.len() + 4).min(total);
            for &t in &prompt[self.toks.len()..end] {
                std::thread::sleep(Duration::from_micros(self.d.prefill_us.load(Ordering::Relaxed)));
                self.toks.push(t);
            }
            if !progress(self.toks.len(), total) {
                self.toks.clear();
                return Err(SyncError::Cancelled);
            }
        }
        self.refresh();
        Ok(())
    }
    fn eval(&mut self, token: u32) -> Result<(), String> {
        std::thread::sleep(Duration::from_micros(self.d.decode_us.load(Ordering::Relaxed)));
        self.d.evals.fetch_add(1, Ordering::Relaxed);
        self.toks.push(token);
        self.refresh();
        Ok(())
    }
    fn invalidate(&mut self) {
        self.toks.clear();
    }
    fn quant_bits(&self) -> u8 {
        4
    }
    /// The mock's whole state is its token list: a DSV4 header (KVCACHE.md
    /// §3, a one-layer model of width 1) followed by the token ids.
    fn save_payload(&mut self) -> Result<Vec<u8>, String> {
        let t = self.toks.len() as u32;
        let ctx = self.ctx as u32;
        let chunk = if ctx > 2048 { 2048 } else { ctx };
        let words = [0x3456_5344u32, 1, ctx, chunk, 128, ctx.min(128), ctx / 4 + 2, t, 1, 1, 1, VOCAB as u32, t.min(128).min(ctx)];
        let mut out = Vec::new();
        for w in words.iter().chain(self.toks.iter()) {
            out.extend_from_slice(&w.to_le_bytes());
        }
        Ok(out)
    }
    fn load_payload(&mut self, r: &mut dyn std::io::Read) -> Result<(), String> {
        self.toks.clear();
        let mut b = Vec::new();
        r.read_to_end(&mut b).map_err(|e| e.to_string())?;
        let w: Vec<u32> = b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        if w.len() < 13 || w[0] != 0x3456_5344 || w.len() != 13 + w[7] as usize {
            return Err("not a mock payload".into());
        }
        self.toks = w[13..].to_vec();
        self.refresh();
        Ok(())
    }
}

/// Test renderer: the §3 layout reduced to what the mock needs.
pub struct TestRender;

impl Render for TestRender {
    fn render(&self, req: &GenRequest, _replay: &mut dyn FnMut(&[&str]) -> Option<Arc<str>>) -> String {
        let gen = if req.mode == ThinkMode::None { "</think>" } else { "<think>" };
        if let Some(p) = &req.prompt {
            return format!("<｜begin▁of▁sentence｜>You are a helpful assistant<｜User｜>{p}<｜Assistant｜>{gen}");
        }
        let mut s = String::from("<｜begin▁of▁sentence｜>");
        for m in req.messages.iter().filter(|m| m.role == Role::System) {
            s += &m.content;
        }
        let mut pending = false;
        for m in &req.messages {
            match m.role {
                Role::System => {}
                Role::User | Role::Tool => {
                    s += "<｜User｜>";
                    s += &m.content;
                    pending = true;
                }
                Role::Assistant => {
                    if pending {
                        s += "<｜Assistant｜></think>";
                    }
                    s += &m.content;
                    s += "<｜end▁of▁sentence｜>";
                    pending = false;
                }
            }
        }
        if pending {
            s += "<｜Assistant｜>";
            s += gen;
        }
        s
    }
    fn render_tail(&self, _req: &GenRequest, _from: usize) -> String {
        String::new()
    }
}

