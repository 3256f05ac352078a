//! HTTP layer (SERVING.md §5): routing, CORS, optional API key, body limits,
//! UTF-8 validation, request preparation on the client task, queueing, and
//! JSON/SSE responses.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use tokio::sync::oneshot;

use crate::engine::TextCodec;
use crate::error::ApiError;
use crate::format::RespMeta;
use crate::json::Obj;
use crate::request::{parse_request, Api, GenRequest, ParseCtx, DEFAULT_MODEL};
use crate::worker::{Job, JobSpec, LiveTail, Reply, Shared};

/// Prompt rendering (SERVING.md §3) plus the live tool tail (§3.7).
pub trait Render: Send + Sync + 'static {
    /// Render the full prompt; `replay` maps an assistant message's call ids
    /// to a remembered DSML block (§6.3).
    fn render(&self, req: &GenRequest, replay: &mut dyn FnMut(&[&str]) -> Option<Arc<str>>) -> String;
    /// Render the tail from the first tool-result message (starting with EOS).
    fn render_tail(&self, req: &GenRequest, from: usize) -> String;
}

pub struct AppState {
    pub codec: Arc<dyn TextCodec>,
    pub render: Arc<dyn Render>,
    pub shared: Arc<Shared>,
    pub queue: Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    pub counter: AtomicU64,
    pub ctx: usize,
    pub default_max_tokens: usize,
    pub cors: bool,
    pub api_key: Option<String>,
    pub max_body: usize,
}

const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Sets the job's cancel flag when the client side goes away.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn finish(st: &AppState, mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if st.cors {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("*"));
    }
    r
}

fn json_response(status: u16, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(e: &ApiError, api: Option<Api>) -> Response {
    let body = if api == Some(Api::Messages) && e.context.is_some() { e.anthropic_body() } else { e.openai_body() };
    json_response(e.status, body)
}

pub fn model_object(ctx: usize, max_completion: usize, id: &str) -> String {
    Obj::new()
        .str("id", id)
        .str("object", "model")
        .num("created", 1767225600)
        .str("owned_by", "ds4.c")
        .str("name", "DeepSeek V4 Flash")
        .num("context_length", ctx)
        .obj(
            "top_provider",
            Obj::new().num("context_length", ctx).num("max_completion_tokens", max_completion).bool("is_moderated", false),
        )
        .raw(
            "supported_parameters",
            r#"["tools","tool_choice","max_tokens","temperature","top_p","top_k","min_p","stop","seed","stream","reasoning_effort"]"#,
        )
        .finish()
}

fn authorized(st: &AppState, req: &Request) -> bool {
    let Some(key) = &st.api_key else { return true };
    let h = req.headers();
    let bearer = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|v| v.trim());
    let xkey = h.get("x-api-key").and_then(|v| v.to_str().ok()).map(|v| v.trim());
    bearer == Some(key.as_str()) || xkey == Some(key.as_str())
}

pub async fn handle(State(st): State<Arc<AppState>>, req: Request) -> Response {
    let r = route(&st, req).await;
    finish(&st, r)
}

async fn route(st: &Arc<AppState>, req: Request) -> Response {
    if req.method() == Method::OPTIONS {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        return r;
    }
    let path = req.uri().path().to_string();
    let api = match (req.method(), path.as_str()) {
        (&Method::GET, "/v1/models") => None,
        (&Method::GET, p) if p.starts_with("/v1/models/") => None,
        (&Method::POST, "/v1/chat/completions") => Some(Api::Chat),
        (&Method::POST, "/v1/completions") => Some(Api::Completions),
        (&Method::POST, "/v1/messages") => Some(Api::Messages),
        (&Method::POST, "/v1/responses") => Some(Api::Responses),
        _ => return error_response(&ApiError::not_found(), None),
    };
    if !authorized(st, &req) {
        return error_response(&ApiError::unauthorized(), api);
    }
    let max_completion = st.default_max_tokens.min(st.ctx);
    let Some(api) = api else {
        if path == "/v1/models" {
            let body = format!("{{\"object\":\"list\",\"data\":[{}]}}\n", model_object(st.ctx, max_completion, DEFAULT_MODEL));
            return json_response(200, body);
        }
        let id = &path["/v1/models/".len()..];
        if matches!(id, DEFAULT_MODEL | "deepseek-chat" | "deepseek-reasoner") {
            return json_response(200, format!("{}\n", model_object(st.ctx, max_completion, id)));
        }
        return error_response(&ApiError::new(404, "invalid_request_error", format!("model {id} not found")), None);
    };
    match post(st, api, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e, Some(api)),
    }
}

async fn read_body(st: &AppState, req: Request) -> Result<String, ApiError> {
    let fut = axum::body::to_bytes(req.into_body(), st.max_body);
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, fut).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) | Err(_) => return Err(ApiError::bad_http()),
    };
    String::from_utf8(bytes.to_vec()).map_err(|_| ApiError::bad_request("request body is not valid UTF-8"))
}

/// Tool-result ids of the request and whether each was replayed (§7.4).
/// Returns (ids of the trailing tool results, index of the first message of
/// that trailing run, requires_live) or a 400.
fn validate_tool_results(st: &AppState, req: &GenRequest) -> Result<Option<(Vec<String>, usize, bool)>, ApiError> {
    if !matches!(req.api, Api::Messages | Api::Responses) {
        return Ok(None);
    }
    let live: Vec<String> = st
        .shared
        .live
        .lock()
        .map(|b| match req.api {
            Api::Messages => b.anthropic.as_ref().map(|a| a.ids.clone()),
            _ => b.responses.as_ref().map(|r| r.ids.clone()),
        })
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut requires_live = false;
    for (i, m) in req.messages.iter().enumerate() {
        for id in &m.tool_result_ids {
            let replayed = req.messages[..i].iter().any(|p| p.tool_calls.iter().any(|c| &c.id == id));
            if !replayed {
                if live.contains(id) {
                    requires_live = true;
                } else if req.api == Api::Responses {
                    return Err(ApiError::bad_request(format!(
                        "Responses continuation state is not available for call_id {id}; retry by replaying the full input history"
                    )));
                } else {
                    return Err(ApiError::bad_request(format!(
                        "Anthropic continuation state is not available for tool_use_id {id}; retry by replaying the full messages history"
                    )));
                }
            }
        }
    }
    // Trailing tool results: the last message carrying results, after the
    // last assistant message.
    let last_asst = req.messages.iter().rposition(|m| m.role == crate::request::Role::Assistant);
    let first = last_asst.map_or(0, |i| i + 1);
    let ids: Vec<String> = req.messages[first..].iter().flat_map(|m| m.tool_result_ids.iter().cloned()).collect();
    if ids.is_empty() {
        return Ok(None);
    }
    let start = first + req.messages[first..].iter().position(|m| !m.tool_result_ids.is_empty()).unwrap_or(0);
    Ok(Some((ids, start, requires_live)))
}

/// SERVING.md §6.3 (a): before rendering, load the exact DSML of the
/// request's tool-call ids that tool memory does not know from the disk
/// cache's tool-id maps, so exact replay survives restarts.
fn import_disk_tool_ids(shared: &Shared, req: &GenRequest) {
    let Some(disk) = &shared.disk else { return };
    let wanted: std::collections::HashSet<String> = {
        let mem = shared.toolmem.lock().unwrap_or_else(|e| e.into_inner());
        req.messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| &c.id).chain(m.tool_result_ids.iter()))
            .filter(|id| !id.is_empty() && !mem.contains(id))
            .cloned()
            .collect()
    };
    if wanted.is_empty() {
        return;
    }
    let found = disk.import_tool_ids(&wanted);
    if found.is_empty() {
        return;
    }
    let mut mem = shared.toolmem.lock().unwrap_or_else(|e| e.into_inner());
    for e in &found {
        if let Ok(d) = std::str::from_utf8(&e.dsml) {
            mem.remember(std::slice::from_ref(&e.id), d, true);
        }
    }
    crate::slog!("kv cache imported {} tool-call ids from disk tool maps", found.len());
}

async fn post(st: &Arc<AppState>, api: Api, req: Request) -> Result<Response, ApiError> {
    let body = read_body(st, req).await?;
    if st.shared.shutting_down.load(Ordering::Relaxed) {
        return Err(ApiError::unavailable());
    }
    let pc = ParseCtx { ctx_size: st.ctx };
    let greq = parse_request(api, &body, pc)?;
    let tail_info = validate_tool_results(st, &greq)?;
    // Render and tokenize on a blocking thread (long prompts are CPU work).
    let st2 = st.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        let replay_on = st2.shared.replay;
        let shared = st2.shared.clone();
        if replay_on {
            import_disk_tool_ids(&shared, &greq);
        }
        let mut replay = |ids: &[&str]| -> Option<Arc<str>> {
            if !replay_on {
                return None;
            }
            shared.toolmem.lock().ok()?.replay_block(ids)
        };
        let rendered = st2.render.render(&greq, &mut replay);
        let tokens = st2.codec.encode_chat(&rendered);
        let tail = tail_info.as_ref().map(|(ids, from, _)| LiveTail { ids: ids.clone(), text: st2.render.render_tail(&greq, *from) });
        (greq, rendered, tokens, tail, tail_info.map(|t| t.2).unwrap_or(false))
    })
    .await
    .map_err(|_| ApiError::server("request preparation failed"))?;
    let (greq, rendered, tokens, tail, requires_live) = prepared;
    if tokens.len() >= st.ctx {
        return Err(ApiError::context_length(api.context_param(), tokens.len(), st.ctx));
    }
    let n = st.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let meta = RespMeta::new(&greq, n, crate::log::unix_now());
    let cancel = Arc::new(AtomicBool::new(false));
    let guard = CancelOnDrop(cancel.clone());
    let (tx, rx) = oneshot::channel();
    let job = Job { spec: JobSpec { req: greq, meta, rendered, tokens, tail, requires_live }, reply: tx, cancel };
    {
        let q = st.queue.lock().map_err(|_| ApiError::unavailable())?;
        match q.as_ref() {
            Some(q) => q.send(job).map_err(|_| ApiError::unavailable())?,
            None => return Err(ApiError::unavailable()),
        }
    }
    match rx.await {
        Err(_) => Err(ApiError::server("generation failed")),
        Ok(Reply::Json(status, body)) => {
            drop(guard);
            Ok(json_response(status, body))
        }
        Ok(Reply::Stream(rx)) => {
            let stream = futures_util::stream::unfold((rx, guard), |(mut rx, g)| async move {
                rx.recv().await.map(|s| (Ok::<Bytes, Infallible>(Bytes::from(s)), (rx, g)))
            });
            let mut r = Response::new(Body::from_stream(stream));
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            Ok(r)
        }
    }
}

/// Build the router: every path goes through [`handle`] so that routing,
/// 404s and OPTIONS follow the spec exactly.
pub fn router(st: Arc<AppState>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(st)
}
