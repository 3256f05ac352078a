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
    /// Disk KV checkpoint cache (`--kv-disk-dir`).
    pub disk: Option<Arc<ds4_kvcache::DiskCache>>,
}

impl ServerOptions {
    pub fn from_args(a: &crate::config::Args, trace: Option<Arc<Trace>>, disk: Option<Arc<ds4_kvcache::DiskCache>>) -> Self {
        ServerOptions {
            ctx: a.ctx,
            default_max_tokens: a.tokens,
            cors: a.cors,
            api_key: a.api_key.clone(),
            max_body: a.max_body_bytes,
            tool_memory_max_ids: a.tool_memory_max_ids,
            replay: !a.disable_exact_dsml_tool_replay,
            trace,
            disk,
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
            disk: opts.disk.clone(),
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

/// Process-wide instance lock (SERVING.md §6.1): an exclusively locked file
/// holding our PID; a second engine process refuses to start.
pub fn acquire_lock(path: &std::path::Path) -> Result<std::fs::File, String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open lock file {}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(path).unwrap_or_default();
            return Err(format!("another ds4 process holds {} (pid {})", path.display(), pid.trim()));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(format!("cannot lock {}: {e}", path.display())),
    }
    let _ = f.set_len(0);
    let _ = write!(f, "{}", std::process::id());
    Ok(f)
}

/// Bind, serve until SIGINT/SIGTERM, drain, exit status. A second signal
/// exits immediately with 130.
pub fn run<S: EngineSession>(
    args: &crate::config::Args,
    session: S,
    codec: Arc<dyn TextCodec>,
    render: Arc<dyn Render>,
    disk: Option<Arc<ds4_kvcache::DiskCache>>,
) -> i32 {
    let trace = match &args.trace {
        None => None,
        Some(p) => match Trace::open(p) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => {
                crate::slog!("cannot open trace file {}: {e}", p.display());
                return 1;
            }
        },
    };
    let server = match Server::start(session, codec, render, ServerOptions::from_args(args, trace, disk)) {
        Ok(s) => s,
        Err(e) => {
            crate::slog!("cannot start worker: {e}");
            return 1;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::slog!("cannot start runtime: {e}");
            return 1;
        }
    };
    let addr = format!("{}:{}", args.bind_host(), args.port);
    rt.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => {
                crate::slog!("cannot bind {addr}: {e}");
                return 1;
            }
        };
        crate::slog!("listening on http://{addr}");
        let shutdown = async {
            wait_signal().await;
            tokio::spawn(async {
                wait_signal().await;
                crate::slog!("second signal: exiting immediately");
                std::process::exit(130);
            });
        };
        server.serve(listener, shutdown).await;
        crate::slog!("shutdown complete");
        0
    })
}

async fn wait_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut i), Ok(mut t)) => {
            tokio::select! {
                _ = i.recv() => {}
                _ = t.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
