//! download_model.sh against a local HTTP server that behaves like the
//! Hugging Face hub for our purposes: `/resolve/main/FILE` redirects to a
//! CDN path, byte ranges are honoured (206 / 416), an optional bearer token
//! is required, and a transfer can be cut off mid-body.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const REPO: &str = "antirez/deepseek-v4-gguf";
const Q2I: &str = "DeepSeek-V4-Flash-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-chat-v2-imatrix.gguf";
const Q4: &str = "DeepSeek-V4-Flash-Q4KExperts-F16HC-F16Compressor-F16Indexer-Q8Attn-Q8Shared-Q8Out-chat-v2.gguf";
const MTP: &str = "DeepSeek-V4-Flash-MTP-Q4K-Q8_0-F32.gguf";

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    range: Option<String>,
    auth: Option<String>,
}

#[derive(Default)]
struct ServerState {
    /// file name -> content
    files: Vec<(String, Vec<u8>)>,
    /// Cut the next body GET after this many bytes (then forget it).
    cut_next_after: Option<usize>,
    token: Option<String>,
    seen: Vec<Seen>,
}

struct Server {
    port: u16,
    state: Arc<Mutex<ServerState>>,
}

impl Server {
    fn start(files: Vec<(String, Vec<u8>)>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(ServerState { files, ..Default::default() }));
        let st = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    let _ = handle(conn, &st);
                });
            }
        });
        Server { port, state }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    fn clear_seen(&self) {
        self.state.lock().unwrap().seen.clear();
    }
}

fn respond(conn: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}

fn handle(mut conn: TcpStream, st: &Mutex<ServerState>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let (mut range, mut auth) = (None, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let v = v.trim().to_string();
            match k.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(v),
                "authorization" => auth = Some(v),
                _ => {}
            }
        }
    }
    let mut s = st.lock().unwrap();
    s.seen.push(Seen { method: method.clone(), path: path.clone(), range: range.clone(), auth: auth.clone() });

    if let Some(tok) = &s.token {
        if auth.as_deref() != Some(&format!("Bearer {tok}")) {
            drop(s);
            return respond(&mut conn, "401 Unauthorized", &[("Content-Length", "12".into())], b"unauthorized");
        }
    }
    let resolve_prefix = format!("/{REPO}/resolve/main/");
    if let Some(name) = path.strip_prefix(&resolve_prefix) {
        let known = s.files.iter().any(|(n, _)| n == name);
        drop(s);
        if !known {
            return respond(&mut conn, "404 Not Found", &[("Content-Length", "9".into())], b"not found");
        }
        // The hub redirects file downloads to its CDN.
        return respond(&mut conn, "302 Found", &[("Location", format!("/cdn/{name}")), ("Content-Length", "0".into())], b"");
    }
    let Some(name) = path.strip_prefix("/cdn/") else {
        drop(s);
        return respond(&mut conn, "404 Not Found", &[("Content-Length", "9".into())], b"not found");
    };
    let Some(data) = s.files.iter().find(|(n, _)| n == name).map(|(_, d)| d.clone()) else {
        drop(s);
        return respond(&mut conn, "404 Not Found", &[("Content-Length", "9".into())], b"not found");
    };
    let cut = if method == "GET" { s.cut_next_after.take() } else { None };
    drop(s);

    let len = data.len();
    let start = match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
        Some(r) => {
            let from: usize = r.trim_end_matches('-').parse().unwrap_or(0);
            if from >= len {
                return respond(
                    &mut conn,
                    "416 Range Not Satisfiable",
                    &[("Content-Range", format!("bytes */{len}")), ("Content-Length", "0".into())],
                    b"",
                );
            }
            Some(from)
        }
        None => None,
    };
    let from = start.unwrap_or(0);
    let body = &data[from..];
    let mut headers = vec![("Content-Length", body.len().to_string()), ("Accept-Ranges", "bytes".into())];
    let status = if start.is_some() {
        headers.push(("Content-Range", format!("bytes {from}-{}/{len}", len - 1)));
        "206 Partial Content"
    } else {
        "200 OK"
    };
    if method == "HEAD" {
        return respond(&mut conn, status, &headers, b"");
    }
    match cut {
        // Announce the whole body, send part of it, hang up.
        Some(n) => {
            let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            conn.write_all(head.as_bytes())?;
            conn.write_all(&body[..n.min(body.len())])?;
            conn.flush()?;
            conn.shutdown(std::net::Shutdown::Both)
        }
        None => respond(&mut conn, status, &headers, body),
    }
}

/// A scratch directory holding a copy of the script (the script links
/// ds4flash.gguf next to itself).
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("ds4-dl-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home")).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../download_model.sh");
        std::fs::copy(&script, dir.join("download_model.sh")).expect("copy script");
        Sandbox { dir }
    }

    fn run(&self, server: &Server, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(self.dir.join("download_model.sh"))
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.join("home"))
            .env("DS4_HF_BASE_URL", server.url());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run download_model.sh")
    }

    fn gguf(&self, name: &str) -> PathBuf {
        self.dir.join("gguf").join(name)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Deterministic fake model bytes starting with the GGUF magic.
fn fake_gguf(len: usize, salt: u8) -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    let mut x: u32 = 0x1234_5678 ^ salt as u32;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 24) as u8);
    }
    v
}

fn text(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn body_gets(seen: &[Seen]) -> Vec<Seen> {
    seen.iter().filter(|s| s.method == "GET" && s.path.starts_with("/cdn/")).cloned().collect()
}

#[test]
fn downloads_links_and_skips_when_present() {
    let data = fake_gguf(300_000, 1);
    let server = Server::start(vec![(Q2I.into(), data.clone())]);
    let sb = Sandbox::new("full");
    let out = sb.run(&server, &["q2-imatrix"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(sb.gguf(Q2I)).unwrap(), data);
    assert!(!sb.gguf(&format!("{Q2I}.part")).exists());
    let link = sb.dir.join("ds4flash.gguf");
    assert_eq!(std::fs::read_link(&link).unwrap(), sb.gguf(Q2I));
    assert_eq!(std::fs::read(&link).unwrap(), data);
    let gets = body_gets(&server.seen());
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0].range, None);
    assert_eq!(gets[0].auth, None);

    // Second run: nothing to fetch.
    server.clear_seen();
    let out = sb.run(&server, &["q2-imatrix"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Already downloaded"));
    assert!(server.seen().is_empty());
}

#[test]
fn interrupted_transfer_resumes_from_partial_file() {
    let data = fake_gguf(1_000_000, 2);
    let server = Server::start(vec![(Q4.into(), data.clone())]);
    let cut = 123_457;
    server.state.lock().unwrap().cut_next_after = Some(cut);
    let sb = Sandbox::new("resume");

    let out = sb.run(&server, &["q4"], &[]);
    assert!(!out.status.success(), "first run should fail: {}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run the same command again"), "{}", text(&out));
    let part = sb.gguf(&format!("{Q4}.part"));
    assert_eq!(std::fs::read(&part).unwrap(), data[..cut]);
    assert!(!sb.gguf(Q4).exists());
    assert!(!sb.dir.join("ds4flash.gguf").exists());

    server.clear_seen();
    let out = sb.run(&server, &["q4"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Resuming {Q4} from byte {cut}")));
    let gets = body_gets(&server.seen());
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0].range.as_deref(), Some(format!("bytes={cut}-").as_str()));
    assert_eq!(std::fs::read(sb.gguf(Q4)).unwrap(), data);
    assert!(!part.exists());
    assert_eq!(std::fs::read_link(sb.dir.join("ds4flash.gguf")).unwrap(), sb.gguf(Q4));
}

#[test]
fn complete_partial_file_is_accepted() {
    // The transfer finished but the rename did not happen: the resume request
    // gets 416 and the sizes agree.
    let data = fake_gguf(50_000, 3);
    let server = Server::start(vec![(Q2I.into(), data.clone())]);
    let sb = Sandbox::new("complete-part");
    std::fs::create_dir_all(sb.dir.join("gguf")).unwrap();
    std::fs::write(sb.gguf(&format!("{Q2I}.part")), &data).unwrap();
    let out = sb.run(&server, &["q2-imatrix"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(sb.gguf(Q2I)).unwrap(), data);
}

#[test]
fn token_from_flag_env_and_cache() {
    let data = fake_gguf(10_000, 4);
    let server = Server::start(vec![(MTP.into(), data.clone())]);
    server.state.lock().unwrap().token = Some("hf_secret".into());

    // No token: refused with a hint.
    let sb = Sandbox::new("tok-none");
    let out = sb.run(&server, &["mtp"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"), "{}", text(&out));

    for (name, args, env) in [
        ("tok-flag", vec!["mtp", "--token", "hf_secret"], vec![]),
        ("tok-flag-eq", vec!["mtp", "--token=hf_secret"], vec![]),
        ("tok-env", vec!["mtp"], vec![("HF_TOKEN", "hf_secret")]),
    ] {
        server.clear_seen();
        let sb = Sandbox::new(name);
        let out = sb.run(&server, &args, &env);
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert_eq!(std::fs::read(sb.gguf(MTP)).unwrap(), data);
        // mtp is never linked as the main model.
        assert!(!sb.dir.join("ds4flash.gguf").exists());
        assert!(server.seen().iter().all(|s| s.auth.as_deref() == Some("Bearer hf_secret")));
    }

    // huggingface-cli's saved token.
    let sb = Sandbox::new("tok-cache");
    std::fs::create_dir_all(sb.dir.join("home/.cache/huggingface")).unwrap();
    std::fs::write(sb.dir.join("home/.cache/huggingface/token"), "hf_secret\n").unwrap();
    let out = sb.run(&server, &["mtp"], &[]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn rejects_non_gguf_content_and_bad_usage() {
    let server = Server::start(vec![(Q2I.into(), b"<html>oops</html>".to_vec())]);
    let sb = Sandbox::new("bad");
    let out = sb.run(&server, &["q2-imatrix"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a GGUF file"), "{}", text(&out));
    assert!(!sb.dir.join("ds4flash.gguf").exists());
    assert!(!sb.gguf(Q2I).exists());

    let out = sb.run(&server, &["q8"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown target"));
    let out = sb.run(&server, &[], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = sb.run(&server, &["q2", "--bogus"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = sb.run(&server, &["q2", "--token"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = sb.run(&server, &["--help"], &[]);
    assert!(out.status.success());
    for t in ["q2-imatrix", "q4-imatrix", "q2", "q4", "mtp"] {
        assert!(String::from_utf8_lossy(&out.stdout).contains(t));
    }
}

#[test]
fn missing_remote_file_fails_cleanly() {
    let server = Server::start(vec![]);
    let sb = Sandbox::new("missing");
    let out = sb.run(&server, &["q2"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("download failed"), "{}", text(&out));
    assert!(!sb.dir.join("ds4flash.gguf").exists());
}
