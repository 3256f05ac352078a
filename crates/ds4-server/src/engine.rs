//! The two things the worker needs from the model side, as traits so the HTTP
//! layer can be unit-tested without a model: the tokenizer (rendered-chat
//! encode, token bytes) and one live engine session (the only KV state).
//! The shipped binary implements them with `ds4_tok` and `ds4_engine`.

pub trait TextCodec: Send + Sync + 'static {
    /// Rendered-chat tokenization (SERVING.md §1.3).
    fn encode_chat(&self, text: &str) -> Vec<u32>;
    /// Raw bytes of one token (special tokens as their literal strings).
    fn token_bytes(&self, id: u32) -> Vec<u8>;
    fn eos(&self) -> u32;

    fn decode(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &t in ids {
            out.extend_from_slice(&self.token_bytes(t));
        }
        out
    }
}

/// Progress callback: `(done, total)` prompt tokens; return `false` to cancel.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize) -> bool;

#[derive(Debug, Clone, PartialEq)]
pub enum SyncError {
    Cancelled,
    Failed(String),
}

pub trait EngineSession: Send + 'static {
    fn ctx(&self) -> usize;
    /// Tokens the live state represents.
    fn tokens(&self) -> &[u32];
    /// Next-token logits after the last live token.
    fn logits(&self) -> &[f32];
    /// Make the live state equal `prompt`, reusing the longest valid prefix
    /// (extend) or rebuilding from zero.
    fn sync(&mut self, prompt: &[u32], progress: Progress<'_>) -> Result<(), SyncError>;
    /// One decode step.
    fn eval(&mut self, token: u32) -> Result<(), String>;
    /// Drop the live state (next sync rebuilds).
    fn invalidate(&mut self);
}
