//! Server assembly: state, worker thread, accept loop, shutdown (SERVING.md §6.1).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::engine::{EngineSession, TextCodec};
use crate::http::{router, AppState, Render};
use crate::log::Trace;
use crate::toolmem::{ToolMemory, DEFAULT_MAX_BYTES};
use crate::worker::{Job, LiveBindings, Shared, Worker, WorkerConfig};

pub struct ServerOptions {
    pub ctx: usize,
    pub default_max_tokens: usize,
    pub cors: bool,
    pub api_key: Option<String>,
    pub max_body: usize,
    pub tool_memory_max_ids: usize,
    pub replay: bool,
    pub trace: Option<Arc<Trace>>,
}

impl ServerOptions {
    pub fn from_args(a: &crate::config::Args, trace: Option<Arc<Trace>>) -> Self {
        ServerOptions {
            ctx: a.ctx,
            default_max_tokens: a.tokens,
            cors: a.cors,
            api_key: a.api_key.clone(),
            max_body: a.max_body_bytes,
            tool_memory_max_ids: a.tool_memory_max_ids,
            replay: !a.disable_exact_dsml_tool_replay,
            trace,
        }
    }
}

/// A running server: state plus the worker thread.
pub struct Server {
    pub state: Arc<AppState>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Build the state and start the worker thread owning `session`.
    pub fn start<S: EngineSession>(
        session: S,
        codec: Arc<dyn TextCodec>,
        render: Arc<dyn Render>,
        opts: ServerOptions,
    ) -> std::io::Result<Server> {
        let shared = Arc::new(Shared {
            live: Mutex::new(LiveBindings::default()),
            toolmem: Mutex::new(ToolMemory::new(opts.tool_memory_max_ids, DEFAULT_MAX_BYTES)),
            replay: opts.replay,
            shutting_down: AtomicBool::new(false),
        });
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let worker = Worker::new(
            session,
            codec.clone(),
            shared.clone(),
            WorkerConfig { default_max_tokens: opts.default_max_tokens, trace: opts.trace.clone() },
        );
        let handle = std::thread::Builder::new().name("ds4-worker".into()).spawn(move || worker.run(rx))?;
        let state = Arc::new(AppState {
            codec,
            render,
            shared,
            queue: Mutex::new(Some(tx)),
            counter: AtomicU64::new(0),
            ctx: opts.ctx,
            default_max_tokens: opts.default_max_tokens,
            cors: opts.cors,
            api_key: opts.api_key,
            max_body: opts.max_body,
        });
        Ok(Server { state, worker: Some(handle) })
    }

    /// Serve until `shutdown` resolves, then stop accepting, drain the queue
    /// and join the worker.
    pub async fn serve(mut self, listener: tokio::net::TcpListener, shutdown: impl std::future::Future<Output = ()> + Send + 'static) {
        let state = self.state.clone();
        let flag_state = self.state.clone();
        let app = router(state);
        let graceful = async move {
            shutdown.await;
            flag_state.shared.shutting_down.store(true, Ordering::SeqCst);
            crate::slog!("shutdown requested: no new requests, draining the queue");
        };
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(graceful).await {
            crate::slog!("server error: {e}");
        }
        self.stop();
    }

    /// Close the queue and wait for the worker to finish.
    pub fn stop(&mut self) {
        self.state.shared.shutting_down.store(true, Ordering::SeqCst);
        if let Ok(mut q) = self.state.queue.lock() {
            q.take();
        }
        if let Some(h) = self.worker.take() {
            let _ = h.join();
        }
    }
}
