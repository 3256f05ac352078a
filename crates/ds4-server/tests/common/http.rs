//! Test harness shared by the in-process server tests: a [`Server`] on an
//! ephemeral port (stopped on drop) and a minimal HTTP/1.1 client
//! (`Connection`-less requests read to EOF).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use ds4_server::engine::{EngineSession, TextCodec};
use ds4_server::http::Render;
use ds4_server::server::{Server, ServerOptions};

/// A serving server; dropping it stops it (drains the queue, joins the worker).
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stop serving and wait for the worker (idempotent).
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The options the tests share: `ctx`, 1000 default tokens, 1 MiB bodies,
/// exact replay on, no CORS, key, trace or disk cache.
pub fn options(ctx: usize) -> ServerOptions {
    ServerOptions {
        ctx,
        default_max_tokens: 1000,
        cors: false,
        api_key: None,
        max_body: 1 << 20,
        tool_memory_max_ids: 100,
        replay: true,
        trace: None,
        disk: None,
    }
}

/// Serve `session` on 127.0.0.1 (an ephemeral port) from a runtime thread.
pub fn serve<S: EngineSession>(session: S, codec: Arc<dyn TextCodec>, render: Arc<dyn Render>, opts: ServerOptions) -> Running {
    let server = Server::start(session, codec, render, opts).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(l.local_addr().unwrap()).unwrap();
            server
                .serve(l, async move {
                    let _ = stop_rx.await;
                })
                .await;
        });
    });
    let addr = addr_rx.recv().unwrap();
    Running { addr, stop: Some(stop_tx), thread: Some(thread) }
}

pub struct Resp {
    pub status: u16,
    /// Status line and headers, lower-cased.
    pub head: String,
    pub body: String,
}

pub fn raw_request(addr: SocketAddr, raw: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Resp { status, head: head.to_lowercase(), body: body.to_string() }
}

pub fn post(addr: SocketAddr, path: &str, body: &str) -> Resp {
    let raw = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    raw_request(addr, raw.as_bytes())
}

pub fn get(addr: SocketAddr, path: &str) -> Resp {
    raw_request(addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
}

/// POST a JSON body, require 200 and return the JSON reply.
pub fn ok(addr: SocketAddr, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let r = post(addr, path, &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(r.body.trim()).unwrap_or_else(|e| panic!("bad JSON {e}: {:?}", r.body))
}
