//! The single inference worker (SERVING.md §6): one thread owns the engine
//! session and runs queued jobs strictly one at a time, choosing the reuse
//! source (§7), syncing, decoding, and writing the reply itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ds4_engine::sampling::{sample, seed_from_time, Rng, SamplerParams};
use ds4_engine::Decoder;
use ds4_kvcache::{DiskCache, EngineInfo, KeyKind, PayloadWriter, SaveReason, StoreRequest};
use tokio::sync::{mpsc, oneshot};

use crate::engine::{EngineSession, SyncError, TextCodec};
use crate::error::ApiError;
use crate::format::{final_body, stream_fmt, Finish, GenResult, OutCall, RespMeta, StreamFmt, Usage};
use crate::log::Trace;
use crate::output::Utf8Hold;
use ds4_tok::dsml::{DecodeTracker, ParsedCall, StreamEvent, StreamParser};
use crate::request::{Api, GenRequest};
use crate::stops::StopMatcher;
use crate::toolmem::ToolMemory;

pub const EOS_STR: &str = "<｜end▁of▁sentence｜>";
const KEEPALIVE: Duration = Duration::from_secs(5);

/// What the handler gets back: a complete JSON response, or the start of an
/// SSE stream whose bytes the worker keeps sending.
#[derive(Debug)]
pub enum Reply {
    Json(u16, String),
    Stream(mpsc::UnboundedReceiver<String>),
}

/// Live tool-result tail (§3.7, §7.1 step 3): valid when the request's tool
/// result ids equal the remembered live call ids.
#[derive(Debug, Clone)]
pub struct LiveTail {
    pub ids: Vec<String>,
    /// Rendered tail text, starting with EOS.
    pub text: String,
}

pub struct Job {
    pub spec: JobSpec,
    pub reply: oneshot::Sender<Reply>,
    pub cancel: Arc<AtomicBool>,
}

pub struct JobSpec {
    pub req: GenRequest,
    pub meta: RespMeta,
    pub rendered: String,
    pub tokens: Vec<u32>,
    pub tail: Option<LiveTail>,
    /// The request's tool results have no replayed call: only the live
    /// binding can serve it (§7.4); otherwise 409.
    pub requires_live: bool,
}

#[derive(Debug, Clone)]
pub struct ToolBinding {
    pub ids: Vec<String>,
    pub live_len: usize,
}

#[derive(Debug, Clone)]
pub struct VisibleBinding {
    pub text: String,
    pub live_len: usize,
}

/// Responses live binding (§7.3): the visible transcript of the live
/// frontier and the call ids of its last turn.
#[derive(Debug, Clone)]
pub struct ResponsesBinding {
    pub text: String,
    pub live_len: usize,
    pub ids: Vec<String>,
}

/// State the client threads read (parse-time validation) and the worker writes.
#[derive(Debug, Default)]
pub struct LiveBindings {
    pub anthropic: Option<ToolBinding>,
    pub thinking: Option<VisibleBinding>,
    pub responses: Option<ResponsesBinding>,
}

pub struct Shared {
    pub live: Mutex<LiveBindings>,
    pub toolmem: Mutex<ToolMemory>,
    /// `--disable-exact-dsml-tool-replay` clears this.
    pub replay: bool,
    pub shutting_down: AtomicBool,
    /// Disk KV checkpoints (`--kv-disk-dir`, KVCACHE.md); the worker saves and
    /// loads, client threads import tool-id maps.
    pub disk: Option<Arc<DiskCache>>,
}

pub struct WorkerConfig {
    pub default_max_tokens: usize,
    pub trace: Option<Arc<Trace>>,
}

pub struct Worker<S: EngineSession> {
    pub session: S,
    pub codec: Arc<dyn TextCodec>,
    pub shared: Arc<Shared>,
    pub cfg: WorkerConfig,
    jobs_run: u64,
}

/// How the prompt was matched against the live state.
#[derive(Debug, Clone, PartialEq)]
pub enum ReuseSource {
    ResponsesVisible,
    ResponsesToolOutput,
    AnthropicToolOutput,
    MemoryToken,
    ThinkingVisible,
    MemoryText,
    /// Live miss, then a disk checkpoint whose text prefixes the prompt (§7.1 step 8).
    DiskText,
    Miss,
}

/// Where the reply goes; sends SSE headers lazily.
struct Sink {
    stream: bool,
    reply: Option<oneshot::Sender<Reply>>,
    tx: Option<mpsc::UnboundedSender<String>>,
    last_write: Instant,
    failed: bool,
    cancel: Arc<AtomicBool>,
}

impl Sink {
    fn started(&self) -> bool {
        self.tx.is_some()
    }
    fn gone(&self) -> bool {
        self.failed
            || self.cancel.load(Ordering::Relaxed)
            || self.tx.as_ref().is_some_and(|t| t.is_closed())
            || self.reply.as_ref().is_some_and(|r| r.is_closed())
    }
    fn start_stream(&mut self) {
        if self.tx.is_none() {
            let (tx, rx) = mpsc::unbounded_channel();
            if let Some(r) = self.reply.take() {
                if r.send(Reply::Stream(rx)).is_err() {
                    self.failed = true;
                }
            }
            self.tx = Some(tx);
            self.last_write = Instant::now();
        }
    }
    fn send(&mut self, s: String) {
        if s.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            if tx.send(s).is_err() {
                self.failed = true;
            }
            self.last_write = Instant::now();
        }
    }
    fn json(&mut self, status: u16, body: String) {
        if let Some(r) = self.reply.take() {
            let _ = r.send(Reply::Json(status, body));
        }
    }
    /// An error: JSON before headers, SSE error event after.
    fn error(&mut self, e: &ApiError, api: Api) {
        if self.started() {
            self.send(e.sse_event(api == Api::Messages));
        } else {
            let body = if api == Api::Messages && e.context.is_some() { e.anthropic_body() } else { e.openai_body() };
            self.json(e.status, body);
        }
    }
}

/// §7.3 Responses visible transcript: what the client's replay of this turn
/// renders to. Reasoning reaches the client only with summaries on, and is
/// replayed for tool-call turns; in a thinking request without any tool
/// context the renderer drops it, so the transcript ends the turn with a bare
/// `</think>` (as the thinking-visible binding does).
fn responses_visible(job: &JobSpec, r: &GenResult) -> String {
    let req = &job.req;
    let think = req.mode.thinking();
    let summary = req.responses.as_ref().is_some_and(|i| i.summary);
    let tool_context = req.tools_active || req.messages.iter().any(|m| !m.tool_calls.is_empty() || !m.tool_result_ids.is_empty());
    let mut v = if think && !tool_context {
        job.rendered.strip_suffix("<think>").unwrap_or(&job.rendered).to_string()
    } else {
        job.rendered.clone()
    };
    if think {
        if tool_context && summary && !r.calls.is_empty() {
            v.push_str(&r.reasoning);
        }
        v.push_str("</think>");
    }
    v.push_str(&r.content);
    if !r.calls.is_empty() {
        v.push_str(&r.dsml);
    }
    v.push_str(EOS_STR);
    v
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The text generated so far and what it means (stream parser, DSML tracker,
/// stop strings), one decoded token at a time.
struct Decoded {
    raw: Vec<u8>,
    /// Bytes of `raw` already turned into stream events.
    emitted: usize,
    n_gen: usize,
    parser: Option<StreamParser>,
    tracker: Option<DecodeTracker>,
    utf8: Utf8Hold,
    stops: StopMatcher,
    tools_active: bool,
    /// Stream events not sent yet.
    events: Vec<StreamEvent>,
}

impl Decoded {
    /// Count a token and append its bytes; returns where they start.
    fn append(&mut self, bytes: &[u8]) -> usize {
        self.n_gen += 1;
        let prev = self.raw.len();
        self.raw.extend_from_slice(bytes);
        prev
    }

    /// A token the session has evaluated. Returns why generation ends after
    /// it, if it does.
    fn commit(&mut self, bytes: &[u8]) -> Option<Finish> {
        let prev = self.append(bytes);
        if let Some(t) = self.tracker.as_mut() {
            t.update(&self.raw);
        }
        if let Some(p) = self.stops.find(&self.raw, prev) {
            self.raw.truncate(p);
            return Some(Finish::Stop);
        }
        let safe = self.raw.len() - self.stops.holdback().min(self.raw.len() - self.emitted);
        if safe > self.emitted {
            match self.parser.as_mut() {
                Some(p) => self.events.extend(p.push(&self.raw[self.emitted..safe])),
                None => {
                    let t = self.utf8.push(&self.raw[self.emitted..safe]);
                    if !t.is_empty() {
                        self.events.push(StreamEvent::Content(t));
                    }
                }
            }
            self.emitted = safe;
        }
        // Tool block end with tools active ends the turn (§4.4).
        if self.tools_active && self.parser.as_ref().is_some_and(|p| p.markers().saw_end) {
            return Some(Finish::ToolCalls);
        }
        None
    }
}

/// The sampling of the next token: §4.4, DSML structure greedily, payload with the request's.
fn sampling_for(dec: &Decoded, params: &SamplerParams) -> SamplerParams {
    let structural = dec.tracker.as_ref().is_some_and(|t| {
        let st = t.state();
        st.in_tool_call() && !st.uses_payload_sampling()
    });
    if structural {
        SamplerParams::greedy()
    } else {
        *params
    }
}

/// Why a decode run stopped before its budget (see [`Drive`]).
enum Halt {
    /// EOS was sampled (not evaluated).
    Eos,
    /// The continued checkpoint for target `n` is due before the declined token (KVCACHE.md
    /// §4.2: before the decode step, never inside a tool block).
    Checkpoint(u32),
    /// The client's stream is gone.
    Gone,
    /// Shutdown requested.
    Shutdown,
    /// The output ends after the last evaluated token (a stop string, a tool block's end).
    End(Finish),
}

/// The generation loop's side of a decode run (`Decoder`): each chosen token is admitted
/// or declined (EOS, a checkpoint due, the client gone, shutdown), then committed to the
/// output and streamed while the session evaluates it, and the sampling of the token after
/// it given (none: the output or the budget ends there).
struct Drive<'a> {
    dec: &'a mut Decoded,
    sink: &'a mut Sink,
    fmt: &'a mut dyn StreamFmt,
    ids: &'a mut Vec<String>,
    shared: &'a Shared,
    codec: &'a dyn TextCodec,
    params: SamplerParams,
    eos: u32,
    max_tokens: usize,
    disk: Option<&'a DiskCache>,
    /// Live tokens before the next admitted one.
    live: usize,
    tried_at: Option<usize>,
    id_prefix: &'static str,
    job_id: String,
    t_gen: Instant,
    halt: Option<Halt>,
}

impl Drive<'_> {
    fn stop(&mut self, h: Halt) -> bool {
        self.halt = Some(h);
        false
    }
}

impl Decoder for Drive<'_> {
    fn admit(&mut self, tok: u32) -> bool {
        if self.sink.gone() {
            return self.stop(Halt::Gone);
        }
        if self.shared.shutting_down.load(Ordering::Relaxed) {
            return self.stop(Halt::Shutdown);
        }
        if tok == self.eos {
            return self.stop(Halt::Eos);
        }
        if let (Some(d), false) = (self.disk, self.tried_at == Some(self.live)) {
            let in_tool = self.dec.tracker.as_ref().is_some_and(|t| t.state().in_tool_call());
            if let (false, Some(n)) = (in_tool, d.continued_target(self.live)) {
                return self.stop(Halt::Checkpoint(n));
            }
        }
        true
    }

    fn next_params(&mut self, tok: u32) -> Option<SamplerParams> {
        self.live += 1;
        let end = self.dec.commit(&self.codec.token_bytes(tok));
        let evs = std::mem::take(&mut self.dec.events);
        emit_events(self.shared, self.sink, self.fmt, &evs, self.ids, self.id_prefix);
        let n = self.dec.n_gen;
        if n % 50 == 0 {
            slog!("{} decode {} tokens {:.1} tok/s", self.job_id, n, n as f64 / self.t_gen.elapsed().as_secs_f64().max(1e-9));
        }
        if let Some(f) = end {
            self.halt = Some(Halt::End(f));
            return None;
        }
        if n >= self.max_tokens {
            return None;
        }
        if self.sink.gone() || self.shared.shutting_down.load(Ordering::Relaxed) {
            // (the next admit stops the run; for a speculative step this stops it now)
            return None;
        }
        Some(sampling_for(self.dec, &self.params))
    }
}

/// A new tool-call id, unused by this response and the tool memory.
fn new_call_id(shared: &Shared, prefix: &str, taken: &[String]) -> String {
    let mem = shared.toolmem.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let id = format!("{prefix}{}", crate::ids::random_hex(16));
        if !taken.contains(&id) && !mem.contains(&id) {
            return id;
        }
    }
}

/// Send parser events, assigning ids to live tool calls as they start.
fn emit_events(shared: &Shared, sink: &mut Sink, fmt: &mut dyn StreamFmt, evs: &[StreamEvent], ids: &mut Vec<String>, prefix: &str) {
    for ev in evs {
        if let StreamEvent::ToolCallStart { index, .. } = ev {
            while ids.len() <= *index {
                let id = new_call_id(shared, prefix, ids);
                ids.push(id);
            }
        }
        if sink.stream {
            let s = fmt.event(ev, ids);
            sink.send(s);
        }
    }
}

impl<S: EngineSession> Worker<S> {
    pub fn new(session: S, codec: Arc<dyn TextCodec>, shared: Arc<Shared>, cfg: WorkerConfig) -> Self {
        Worker { session, codec, shared, cfg, jobs_run: 0 }
    }

    /// Run jobs until the queue closes, then write the `shutdown` checkpoint
    /// (SERVING.md §6.1, KVCACHE.md §4.4).
    pub fn run(mut self, rx: std::sync::mpsc::Receiver<Job>) {
        if self.shared.disk.is_some() && self.disk().is_none() {
            slog!("kv disk cache disabled: this engine cannot save its state");
        }
        while let Ok(job) = rx.recv() {
            self.run_job(job);
        }
        if let Some(d) = self.disk() {
            let len = self.session.tokens().len();
            let visible = self.live_visible_key();
            self.store_live(&d, SaveReason::Shutdown, len, visible);
        }
        slog!("worker: queue drained, exiting");
        if self.session.leak_at_exit() {
            std::mem::forget(self.session);
        }
    }

    /// The disk cache, when configured and the engine can checkpoint.
    fn disk(&self) -> Option<Arc<DiskCache>> {
        self.shared.disk.clone().filter(|_| matches!(self.session.quant_bits(), 2 | 4))
    }

    fn engine_info(&self) -> EngineInfo {
        EngineInfo { quant_bits: self.session.quant_bits(), ctx: u32::try_from(self.session.ctx()).unwrap_or(u32::MAX) }
    }

    /// Key source for an evict/shutdown checkpoint (KVCACHE.md §4.3): a live
    /// binding's visible transcript when valid for the live length, else
    /// `None` (decoded tokens).
    fn live_visible_key(&self) -> Option<(KeyKind, Vec<u8>)> {
        let live_len = self.session.tokens().len();
        let b = self.shared.live.lock().unwrap_or_else(|e| e.into_inner());
        let responses = b.responses.as_ref().map(|r| (r.text.as_bytes(), r.live_len));
        let thinking = b.thinking.as_ref().map(|t| (t.text.as_bytes(), t.live_len));
        ds4_kvcache::live_key_source(live_len, responses, thinking).map(|(k, t)| (k, t.to_vec()))
    }

    /// Checkpoint the whole live state (KVCACHE.md §4). Returns whether a file
    /// now holds it; failures are logged by the cache and never disturb serving.
    fn store_live(&mut self, disk: &DiskCache, reason: SaveReason, original_len: usize, visible: Option<(KeyKind, Vec<u8>)>) -> bool {
        let live = self.session.tokens().to_vec();
        if !disk.policy().should_save_live(live.len()) {
            return false;
        }
        let (kind, text) = match visible {
            Some(v) => v,
            None => (KeyKind::TokenText, self.codec.decode(&live)),
        };
        let tool_map = if self.shared.replay {
            let mem = self.shared.toolmem.lock().unwrap_or_else(|e| e.into_inner());
            ds4_kvcache::dsml::tool_map_for_text(&text, |block| mem.ids_for_block(block))
        } else {
            Vec::new()
        };
        let payload = match self.session.save_payload() {
            Ok(p) => p,
            Err(e) => {
                slog!("kv cache skipped tokens={} reason={reason} because the engine could not save: {e}", live.len());
                return false;
            }
        };
        let req = StoreRequest {
            reason,
            tokens: &live,
            live_tokens: &live,
            original_len: original_len.max(live.len()),
            text: &text,
            key_kind: kind,
            engine: self.engine_info(),
            tool_map: &tool_map,
        };
        let mut write = |w: &mut dyn std::io::Write| w.write_all(&payload);
        disk.store(&req, PayloadWriter { len: payload.len() as u64, write: &mut write }).is_ok()
    }

    /// Disk lookup after a live miss (KVCACHE.md §5): on a hit the session
    /// holds the checkpoint and the result is (effective prompt, cached).
    fn disk_lookup(&mut self, disk: &DiskCache, rendered: &str) -> Option<(Vec<u32>, usize, KeyKind)> {
        let eng = self.engine_info();
        let session = &mut self.session;
        let lk = disk.load(rendered.as_bytes(), eng, |r, _hdr| {
            session.load_payload(r)?;
            Ok(session.tokens().to_vec())
        });
        let Some(hit) = lk.hit else {
            if lk.session_invalidated {
                self.session.invalidate();
            }
            return None;
        };
        if self.shared.replay && !hit.tool_map.is_empty() {
            let mut mem = self.shared.toolmem.lock().unwrap_or_else(|e| e.into_inner());
            for e in &hit.tool_map {
                if let Ok(d) = std::str::from_utf8(&e.dsml) {
                    mem.remember(std::slice::from_ref(&e.id), d, true);
                }
            }
        }
        let bytes = rendered.as_bytes();
        let mut eff = hit.tokens.clone();
        // A visible-transcript key ends with an EOS the KV never evaluated
        // (same [DECISION] as the live bindings, SERVING.md §7.3).
        let eos = self.codec.eos();
        if hit.key_kind != KeyKind::TokenText && bytes[..hit.text_len].ends_with(EOS_STR.as_bytes()) && hit.tokens.last() != Some(&eos) {
            eff.push(eos);
        }
        eff.extend(self.codec.encode_chat_bytes(&bytes[hit.text_len..]));
        Some((eff, hit.tokens.len(), hit.key_kind))
    }

    /// Choose the reuse source (§7.1) and the effective prompt.
    pub fn plan(&self, job: &JobSpec) -> Result<(ReuseSource, Vec<u32>, usize), ApiError> {
        let live = self.session.tokens();
        let live_len = live.len();
        let bindings = self.shared.live.lock().unwrap_or_else(|e| e.into_inner());
        let same_ids = |a: &[String], b: &[String]| {
            let (mut a, mut b) = (a.to_vec(), b.to_vec());
            a.sort();
            b.sort();
            a == b
        };
        let api = job.req.api;
        if let (Api::Responses, Some(b)) = (api, &bindings.responses) {
            if b.live_len == live_len && live_len > 0 {
                // 1. responses-visible: the remembered transcript prefixes the prompt.
                if job.rendered.len() > b.text.len() && job.rendered.starts_with(&b.text) {
                    let mut eff = live.to_vec();
                    if b.text.ends_with(EOS_STR) && live.last() != Some(&self.codec.eos()) {
                        eff.push(self.codec.eos());
                    }
                    eff.extend(self.codec.encode_chat(&job.rendered[b.text.len()..]));
                    return Ok((ReuseSource::ResponsesVisible, eff, live_len));
                }
                // 2. responses-tool-output: the outputs of exactly the live calls.
                if let Some(tail) = job.tail.as_ref().filter(|t| same_ids(&t.ids, &b.ids)) {
                    let mut eff = live.to_vec();
                    eff.extend(self.codec.encode_chat(&tail.text));
                    return Ok((ReuseSource::ResponsesToolOutput, eff, live_len));
                }
            }
        }
        // 3. anthropic-tool-output.
        if let (Api::Messages, Some(tail), Some(b)) = (api, &job.tail, &bindings.anthropic) {
            if same_ids(&tail.ids, &b.ids) && b.live_len == live_len && live_len > 0 {
                let mut eff = live.to_vec();
                eff.extend(self.codec.encode_chat(&tail.text));
                return Ok((ReuseSource::AnthropicToolOutput, eff, live_len));
            }
        }
        // 4. §7.4: tool outputs only the live state can explain, and it moved on.
        if job.requires_live {
            return Err(ApiError::conflict(if api == Api::Responses {
                "Responses continuation state is not available; retry by replaying the full input history"
            } else {
                "Anthropic continuation state is not available; retry by replaying the full messages history"
            }));
        }
        if live_len > 0 && common_prefix(live, &job.tokens) == live_len && job.tokens.len() >= live_len {
            return Ok((ReuseSource::MemoryToken, job.tokens.clone(), live_len));
        }
        if let Some(b) = &bindings.thinking {
            if b.live_len == live_len
                && live_len > 0
                && job.rendered.len() > b.text.len()
                && job.rendered.starts_with(&b.text)
                && matches!(job.req.api, Api::Chat | Api::Messages)
            {
                let mut eff = live.to_vec();
                // [DECISION] §7.3: evaluate the EOS the visible text ends with.
                if b.text.ends_with(EOS_STR) && live.last() != Some(&self.codec.eos()) {
                    eff.push(self.codec.eos());
                }
                eff.extend(self.codec.encode_chat(&job.rendered[b.text.len()..]));
                return Ok((ReuseSource::ThinkingVisible, eff, live_len));
            }
        }
        if live_len > 0 {
            let bytes = self.codec.decode(live);
            let r = job.rendered.as_bytes();
            if bytes.len() <= r.len() && r.starts_with(&bytes) && job.rendered.is_char_boundary(bytes.len()) {
                let mut eff = live.to_vec();
                eff.extend(self.codec.encode_chat(&job.rendered[bytes.len()..]));
                return Ok((ReuseSource::MemoryText, eff, live_len));
            }
            slog!(
                "live kv cache miss live={} prompt={} common={} reason=prefix-mismatch",
                live_len,
                job.tokens.len(),
                common_prefix(live, &job.tokens)
            );
        }
        Ok((ReuseSource::Miss, job.tokens.clone(), 0))
    }

    pub fn run_job(&mut self, job: Job) {
        self.jobs_run += 1;
        let t0 = Instant::now();
        let Job { spec: job, reply, cancel } = job;
        let api = job.req.api;
        let mut sink = Sink {
            stream: job.req.stream,
            reply: Some(reply),
            tx: None,
            last_write: Instant::now(),
            failed: false,
            cancel,
        };
        if sink.gone() {
            slog!("request {} abandoned before it ran (client gone)", job.meta.id());
            return;
        }
        if self.shared.shutting_down.load(Ordering::Relaxed) {
            sink.error(&ApiError::unavailable(), api);
            return;
        }
        let (mut source, mut effective, mut cached) = match self.plan(&job) {
            Ok(p) => p,
            Err(e) => {
                sink.error(&e, api);
                return;
            }
        };
        let disk = self.disk();
        let mut disk_kind = None;
        // §7.1 step 8: the live state is useless for this prompt. Keep it on
        // disk (evict), then try a disk checkpoint of this prompt.
        if let (ReuseSource::Miss, Some(d)) = (&source, &disk) {
            d.reset_continued();
            let len = self.session.tokens().len();
            let visible = self.live_visible_key();
            self.store_live(d, SaveReason::Evict, len, visible);
            if let Some((eff, n, kind)) = self.disk_lookup(d, &job.rendered) {
                (source, effective, cached) = (ReuseSource::DiskText, eff, n);
                disk_kind = Some(kind);
            }
        }
        // KVCACHE.md §5: a Responses replay of calls without reasoning is
        // exact only when the state came from a Responses binding.
        let from_binding = matches!(source, ReuseSource::ResponsesVisible | ReuseSource::ResponsesToolOutput)
            || disk_kind == Some(KeyKind::ResponsesVisible);
        if job.req.responses.as_ref().is_some_and(|i| i.missing_reasoning) && !from_binding {
            slog!("{} replays a tool call without reasoning in thinking mode (missing reasoning: lower fidelity)", job.meta.id());
        }
        let ctx = self.session.ctx();
        if effective.len() >= ctx {
            let e = ApiError::context_length(api.context_param(), effective.len(), ctx);
            sink.error(&e, api);
            return;
        }
        if let Some(tr) = &self.cfg.trace {
            tr.write(
                &format!("{} prompt ({} tokens, reuse {:?}, cached {})", job.meta.id(), effective.len(), source, cached),
                &job.rendered,
            );
        }
        // Any successful sync clears bindings unless we continued from one.
        {
            let mut b = self.shared.live.lock().unwrap_or_else(|e| e.into_inner());
            if source != ReuseSource::AnthropicToolOutput {
                b.anthropic = None;
            }
            if source != ReuseSource::ThinkingVisible {
                b.thinking = None;
            }
            if !matches!(source, ReuseSource::ResponsesVisible | ReuseSource::ResponsesToolOutput) {
                b.responses = None;
            }
        }
        // Prefill (only the suffix beyond the live state), stopping at the
        // cold-checkpoint length and continued frontiers to save there
        // (KVCACHE.md §4.1-4.2; the CPU prefill's numerics do not depend on
        // where a sync is split).
        let live = self.session.tokens();
        let start = if effective.starts_with(live) { live.len() } else { 0 };
        let cold = disk.as_ref().and_then(|d| {
            d.policy().cold_store_len(&effective, cached as u32, self.codec.user_id(), self.codec.assistant_id())
        });
        let cold = cold.map(|n| n as usize).filter(|&n| n > start);
        let suppressed = match (&disk, cold) {
            (Some(d), Some(n)) => d.suppress_continued(n as u32),
            _ => None,
        };
        let mut stops: Vec<usize> = cold.into_iter().collect();
        if let Some(d) = &disk {
            let step = d.policy().continued_step() as usize;
            if let Some(k0) = start.checked_div(step) {
                stops.extend((k0 + 1..).map(|k| k * step).take_while(|&f| f < effective.len()));
            }
        }
        stops.retain(|&n| n < effective.len());
        stops.sort_unstable();
        stops.dedup();
        stops.push(effective.len());
        let stream = sink.stream;
        let mut sync_res = Ok(());
        {
            let sink_ref = &mut sink;
            let mut progress = |_done: usize, _total: usize| -> bool {
                if stream {
                    if !sink_ref.started() {
                        sink_ref.start_stream();
                    } else if sink_ref.last_write.elapsed() >= KEEPALIVE {
                        sink_ref.send(": prefill\n\n".to_string());
                    }
                }
                !sink_ref.gone()
            };
            for end in stops {
                sync_res = self.session.sync(&effective[..end], &mut progress);
                if sync_res.is_err() {
                    if let Some(d) = &disk {
                        d.restore_continued(suppressed);
                    }
                    break;
                }
                let Some(d) = &disk else { continue };
                if Some(end) == cold {
                    if self.store_live(d, SaveReason::Cold, effective.len(), None) {
                        d.note_store(end as u32);
                    } else {
                        d.restore_continued(suppressed);
                    }
                } else if let Some(n) = d.continued_target(end) {
                    if self.store_live(d, SaveReason::Continued, effective.len(), None) {
                        d.note_store(n);
                    }
                }
            }
        }
        let prefill_ms = t0.elapsed().as_millis();
        match sync_res {
            Ok(()) => {}
            Err(SyncError::Cancelled) => {
                slog!("request {} cancelled during prefill (client gone)", job.meta.id());
                {
                    let mut b = self.shared.live.lock().unwrap_or_else(|e| e.into_inner());
                    b.anthropic = None;
                    b.thinking = None;
                }
                return;
            }
            Err(SyncError::Failed(msg)) => {
                slog!("prefill failed: {msg}");
                self.session.invalidate();
                sink.error(&ApiError::server(format!("prefill failed: {msg}")), api);
                return;
            }
        }
        let usage0 = Usage { prompt: effective.len(), cached, completion: 0 };
        slog!(
            "{} prompt={} cached={} reuse={:?} prefill={}ms",
            job.meta.id(),
            effective.len(),
            cached,
            source,
            prefill_ms
        );
        self.generate(job, sink, usage0);
    }

    fn generate(&mut self, job: JobSpec, mut sink: Sink, usage0: Usage) {
        let req = &job.req;
        let api = req.api;
        let ctx = self.session.ctx();
        let prompt_len = self.session.tokens().len();
        let free = ctx.saturating_sub(prompt_len);
        let max_tokens = req.max_tokens.unwrap_or(self.cfg.default_max_tokens).min(free);
        let thinking = req.mode.thinking();
        let params = if thinking {
            SamplerParams::thinking_fixed()
        } else {
            SamplerParams {
                temperature: req.sampling.temperature,
                top_k: req.sampling.top_k,
                top_p: req.sampling.top_p,
                min_p: req.sampling.min_p,
            }
        };
        let seed = req.sampling.seed.unwrap_or_else(|| seed_from_time() ^ job.meta.n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut rng = Rng::new(seed);
        let chat = api != Api::Completions;
        // Chat APIs: ds4-tok's stream parser splits reasoning / content / live
        // tool calls. Completions stream raw text.
        let mut dec = Decoded {
            raw: Vec::new(),
            emitted: 0,
            n_gen: 0,
            parser: chat.then(|| StreamParser::new(thinking, req.tools_active)),
            tracker: (chat && req.tools_active).then(DecodeTracker::new),
            utf8: Utf8Hold::default(),
            stops: StopMatcher::new(&req.stop),
            tools_active: req.tools_active,
            events: Vec::new(),
        };
        let mut fmt: Box<dyn StreamFmt> = stream_fmt(job.meta.clone());
        let mut ids: Vec<String> = Vec::new();
        let codec = self.codec.clone();
        let eos = codec.eos();
        let mut finish = Finish::Length;
        let mut eos_hit = false;
        if sink.stream {
            sink.start_stream();
            let s = fmt.start(&usage0);
            sink.send(s);
        }
        let id_prefix = if api == Api::Messages { "toolu_" } else { "call_" };
        let t_gen = Instant::now();
        let disk = self.disk();
        // `--mtp`: greedy requests commit runs of agreed drafts (SERVING.md §10);
        // the output and the live state are those of plain decoding.
        let speculate = params.is_greedy() && self.session.speculates();
        let spec0 = self.session.spec_stats().filter(|_| speculate);
        // The first token comes from the host logits; a run then chooses each next one where
        // the logits are (on the GPU only the argmax or the min_p set comes back per token),
        // and ends where the loop below must act: EOS, a continued checkpoint due before the
        // next token, the end of the output. Runs fetch the logits when they end.
        let mut pending: Option<u32> = None;
        // (the live length of the last continued checkpoint tried: one try per frontier)
        let mut tried_at = None;
        while pending.is_some() || dec.n_gen < max_tokens {
            let tok = match pending.take() {
                Some(t) => t,
                None => sample(self.session.logits(), &sampling_for(&dec, &params), &mut rng),
            };
            let live = self.session.tokens().len();
            let before = dec.n_gen;
            let mut drive = Drive {
                dec: &mut dec,
                sink: &mut sink,
                fmt: &mut *fmt,
                ids: &mut ids,
                shared: &self.shared,
                codec: &*codec,
                params,
                eos,
                max_tokens,
                disk: disk.as_deref(),
                live,
                tried_at,
                id_prefix,
                job_id: job.meta.id(),
                t_gen,
                halt: None,
            };
            let res = if speculate {
                // At most the token budget, and never past the next continued frontier:
                // checkpoints are taken between steps (Drive::admit).
                let mut cap = max_tokens - before;
                if let Some(step) = disk.as_ref().map(|d| d.policy().continued_step() as usize).filter(|&s| s > 0) {
                    cap = cap.min(step - live % step);
                }
                if drive.admit(tok) {
                    self.session.eval_run(tok, cap, &mut |t| drive.next_params(t).is_none()).map(|()| None)
                } else {
                    Ok(Some(tok))
                }
            } else {
                self.session.decode_run(tok, &mut rng, &mut drive).map(|r| r.declined)
            };
            let halt = drive.halt.take();
            let declined = match res {
                Ok(d) => d,
                Err(e) => {
                    if dec.n_gen == before {
                        dec.append(&codec.token_bytes(tok));
                    }
                    slog!("decode failed: {e}");
                    finish = Finish::Error;
                    break;
                }
            };
            match halt {
                None => {}
                Some(Halt::Checkpoint(n)) => {
                    let len = self.session.tokens().len();
                    if let Some(d) = &disk {
                        if self.store_live(d, SaveReason::Continued, len, None) {
                            d.note_store(n);
                        }
                    }
                    tried_at = Some(len);
                    pending = declined;
                }
                Some(Halt::Eos) => {
                    finish = Finish::Stop;
                    eos_hit = true;
                    break;
                }
                Some(Halt::Gone) => {
                    finish = Finish::Error;
                    slog!("{} client stream write failed, generation stopped after {} tokens", job.meta.id(), dec.n_gen);
                    break;
                }
                Some(Halt::Shutdown) => {
                    finish = Finish::Error;
                    slog!("{} shutdown requested, generation stopped after {} tokens", job.meta.id(), dec.n_gen);
                    break;
                }
                Some(Halt::End(f)) => {
                    finish = f;
                    break;
                }
            }
        }
        if let (Some(a), Some(b)) = (spec0, self.session.spec_stats()) {
            slog!("{} mtp: {}", job.meta.id(), b.since(&a).summary());
        }
        let Decoded { raw, emitted, parser, mut utf8, n_gen, .. } = dec;
        // Flush held-back bytes and parse the whole output.
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (mut result, streamed) = match parser {
            Some(mut p) => {
                let mut evs = if emitted < raw.len() { p.push(&raw[emitted..]) } else { vec![] };
                let markers = p.markers().clone();
                let end = p.finish();
                evs.extend(end.events);
                self.emit(&mut sink, &mut *fmt, &evs, &mut ids, id_prefix);
                let parsed = end.parsed;
                let f = ds4_tok::dsml::resolve_finish(finish, req.tools_active, &markers, &parsed);
                if parsed.malformed && markers.saw_start {
                    slog!("{} invalid tool call returned as assistant text", job.meta.id());
                }
                if markers.orphan_end {
                    slog!("{} orphan tool-call end tag ignored", job.meta.id());
                }
                let calls = self.assign_ids(&parsed.calls, &mut ids, id_prefix, parsed.raw_dsml.as_deref());
                let r = GenResult {
                    text,
                    reasoning: parsed.reasoning,
                    content: parsed.content,
                    calls,
                    finish: f,
                    usage: Usage { completion: n_gen, ..usage0 },
                    dsml: parsed.raw_dsml.unwrap_or_default(),
                };
                (r, end.streamed_calls)
            }
            None => {
                let mut t = if emitted < raw.len() { utf8.push(&raw[emitted..]) } else { String::new() };
                t += &utf8.finish();
                if !t.is_empty() {
                    self.emit(&mut sink, &mut *fmt, &[StreamEvent::Content(t)], &mut ids, id_prefix);
                }
                let r = GenResult {
                    reasoning: String::new(),
                    content: text.clone(),
                    text,
                    calls: vec![],
                    finish,
                    usage: Usage { completion: n_gen, ..usage0 },
                    dsml: String::new(),
                };
                (r, 0)
            }
        };
        if result.finish == Finish::ToolCalls && result.calls.is_empty() {
            result.finish = Finish::Stop;
        }
        if let Some(tr) = &self.cfg.trace {
            tr.write(
                &format!("{} output ({} tokens, finish {})", job.meta.id(), n_gen, result.finish.as_str()),
                &result.text,
            );
        }
        if !result.calls.is_empty() {
            let names: Vec<&str> = result.calls.iter().map(|c| c.name.as_str()).collect();
            slog!("{} tool calls: {}", job.meta.id(), names.join(", "));
        }
        self.update_bindings(&job, &result, eos_hit);
        if sink.stream {
            let s = fmt.end(&result, streamed);
            sink.send(s);
        } else {
            sink.json(200, final_body(&job.meta, &result));
        }
        slog!(
            "{} done: {} tokens finish={} {:.1} tok/s",
            job.meta.id(),
            n_gen,
            result.finish.as_str(),
            n_gen as f64 / t_gen.elapsed().as_secs_f64().max(1e-9)
        );
    }

    fn emit(&self, sink: &mut Sink, fmt: &mut dyn StreamFmt, evs: &[StreamEvent], ids: &mut Vec<String>, prefix: &str) {
        emit_events(&self.shared, sink, fmt, evs, ids, prefix)
    }

    /// Ids for parsed calls (the live ones keep theirs), and remember the raw
    /// DSML for exact replay (§6.3).
    fn assign_ids(&self, calls: &[ParsedCall], ids: &mut Vec<String>, prefix: &str, raw_dsml: Option<&str>) -> Vec<OutCall> {
        while ids.len() < calls.len() {
            let id = new_call_id(&self.shared, prefix, ids);
            ids.push(id);
        }
        let out: Vec<OutCall> = calls
            .iter()
            .zip(ids.iter())
            .map(|(c, id)| OutCall { id: id.clone(), name: c.name.clone(), arguments: c.compact_arguments() })
            .collect();
        if self.shared.replay && !out.is_empty() {
            if let Some(block) = raw_dsml {
                let call_ids: Vec<String> = out.iter().map(|c| c.id.clone()).collect();
                self.shared.toolmem.lock().unwrap_or_else(|e| e.into_inner()).remember(&call_ids, block, false);
            }
        }
        out
    }

    fn update_bindings(&self, job: &JobSpec, r: &GenResult, eos_hit: bool) {
        let req = &job.req;
        let live_len = self.session.tokens().len();
        // A thinking turn that never closed </think> has no visible form.
        let closed = !req.mode.thinking() || r.text.contains("</think>");
        let responses = (req.api == Api::Responses && closed && !matches!(r.finish, Finish::Error | Finish::Length))
            .then(|| ResponsesBinding { text: responses_visible(job, r), live_len, ids: r.calls.iter().map(|c| c.id.clone()).collect() });
        let mut b = self.shared.live.lock().unwrap_or_else(|e| e.into_inner());
        b.anthropic = None;
        b.thinking = None;
        b.responses = responses;
        if req.api == Api::Messages && !r.calls.is_empty() {
            b.anthropic = Some(ToolBinding { ids: r.calls.iter().map(|c| c.id.clone()).collect(), live_len });
        }
        // §7.3 thinking-visible.
        let tool_history = req.messages.iter().any(|m| !m.tool_calls.is_empty() || m.role == crate::request::Role::Tool || !m.tool_result_ids.is_empty());
        if matches!(req.api, Api::Chat | Api::Messages)
            && req.mode.thinking()
            && !req.tools_active
            && !tool_history
            && r.finish == Finish::Stop
            && eos_hit
            && r.calls.is_empty()
            && r.text.contains("</think>")
        {
            if let Some(base) = job.rendered.strip_suffix("<think>") {
                let text = format!("{base}</think>{}{EOS_STR}", r.content);
                b.thinking = Some(VisibleBinding { text, live_len });
            }
        }
    }
}

