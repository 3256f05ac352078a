//! The checkpoint directory: listing, lookup + load, store, eviction and
//! tool-map import (KVCACHE.md §1, §4-§6). Every file-system failure is
//! handled locally (logged, file skipped or removed); nothing here panics on
//! file contents and the directory may disappear at any time.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::format::{
    self, decode_tool_map, encode_tool_map, sha1_hex, KeyKind, KvcHeader,
    SaveReason, ToolMapEntry, EXT_TOOL_MAP, PREFIX_LEN,
};
use crate::payload::{self, ModelShape, PayloadHeader};
use crate::policy::{
    fits_budget, plan_eviction, required_with_headroom, ContinuedSchedule, KvCacheArgs, Policy, ScoreInput,
    Suppression, ToolReplayArgs, HIT_HALF_LIFE_SECS,
};

/// Log sink: receives one line per cache event (without timestamp/prefix).
pub type LogFn = Arc<dyn Fn(&str) + Send + Sync>;
/// Wall clock in Unix seconds (injectable for tests).
pub type ClockFn = Arc<dyn Fn() -> u64 + Send + Sync>;

fn system_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

const MIB: f64 = 1024.0 * 1024.0;

/// Everything `DiskCache::open` needs besides the directory.
#[derive(Clone)]
pub struct CacheOptions {
    /// Disk budget in bytes; 0 = unlimited (the flag layer maps 0 to 4096 MiB).
    pub budget_bytes: u64,
    pub reject_different_quant: bool,
    pub policy: Policy,
    /// `--tool-memory-max-ids`; KTM sections with more than 4× this are rejected.
    pub tool_memory_max_ids: u32,
    /// `false` with `--disable-exact-dsml-tool-replay`: no trailers written or read.
    pub exact_tool_replay: bool,
    /// Layout of the serving model. With it, payloads of other models or with
    /// inconsistent section sizes are rejected before the engine sees them.
    pub model: Option<ModelShape>,
    pub log: LogFn,
    pub clock: ClockFn,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            budget_bytes: crate::policy::DEFAULT_SPACE_MB << 20,
            reject_different_quant: false,
            policy: Policy::default(),
            tool_memory_max_ids: crate::policy::DEFAULT_TOOL_MEMORY_MAX_IDS,
            exact_tool_replay: true,
            model: None,
            log: Arc::new(|m| eprintln!("ds4-kvcache: {m}")),
            clock: Arc::new(system_now),
        }
    }
}

impl CacheOptions {
    /// Options from the parsed flags (the budget rule 0/unset → 4096 MiB applied).
    pub fn from_args(kv: &KvCacheArgs, tools: &ToolReplayArgs) -> Result<CacheOptions, String> {
        kv.validate()?;
        Ok(CacheOptions {
            budget_bytes: kv.budget_bytes(),
            reject_different_quant: kv.kv_cache_reject_different_quant,
            policy: kv.policy(),
            tool_memory_max_ids: tools.tool_memory_max_ids,
            exact_tool_replay: !tools.disable_exact_dsml_tool_replay,
            ..CacheOptions::default()
        })
    }
}

/// A valid checkpoint file as listed from the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Lowercase hex SHA-1 of the cache text (the file stem).
    pub key: String,
    pub path: PathBuf,
    pub header: KvcHeader,
    pub file_size: u64,
}

/// Identity of the live engine state for loads and stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineInfo {
    /// Routed-expert quantisation bits of the loaded model (2 or 4).
    pub quant_bits: u8,
    /// Context size of the live session.
    pub ctx: u32,
}

/// A successful disk load.
#[derive(Clone, Debug)]
pub struct Hit {
    pub key: String,
    pub path: PathBuf,
    /// Exact token ids of the loaded state (authoritative; from the loader).
    pub tokens: Vec<u32>,
    /// Bytes of the prompt covered by the checkpoint: the effective prompt is
    /// `tokens` + rendered-chat tokenization of `prompt[text_len..]`.
    pub text_len: usize,
    pub quant_bits: u8,
    pub key_kind: KeyKind,
    pub reason: SaveReason,
    /// Tool-id map entries stored with the checkpoint (mark as disk-sourced).
    pub tool_map: Vec<ToolMapEntry>,
    pub load_ms: f64,
    /// The file was deleted after loading (`--kv-cache-consume-over`).
    pub consumed: bool,
}

/// Result of `DiskCache::load`.
#[derive(Debug, Default)]
pub struct Lookup {
    pub hit: Option<Hit>,
    /// The loader was called and failed at least once: the live session may
    /// have been reset by the engine; treat it as empty.
    pub session_invalidated: bool,
}

/// What to store (see `DiskCache::store`).
pub struct StoreRequest<'a> {
    pub reason: SaveReason,
    /// Tokens the checkpoint must represent: the live state has to be exactly
    /// these tokens (the cache never rewinds the live state to write a file).
    pub tokens: &'a [u32],
    /// The engine's current live tokens.
    pub live_tokens: &'a [u32],
    /// Length of the request prompt the store was cut from (for `trimmed=` in
    /// the log); use `tokens.len()` when not applicable.
    pub original_len: usize,
    /// Cache text: decoded bytes of `tokens` for `KeyKind::TokenText`, or a
    /// live binding's visible transcript.
    pub text: &'a [u8],
    pub key_kind: KeyKind,
    pub engine: EngineInfo,
    /// Tool-map entries (`dsml::tool_map_for_text`); ignored when exact tool
    /// replay is disabled.
    pub tool_map: &'a [ToolMapEntry],
}

/// A successful store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub key: String,
    pub path: PathBuf,
    pub file_size: u64,
    /// An identical compatible file already existed: only its tool-map
    /// trailer was refreshed.
    pub reused_existing: bool,
}

/// The engine's payload writer: the exact byte count (`payload_len`) must be
/// known before writing, as it goes into the header and the budget check.
pub struct PayloadWriter<'a> {
    pub len: u64,
    pub write: &'a mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
}

/// Counts bytes so a payload writer that disagrees with its declared length
/// is caught before the file is renamed into place.
struct Counting<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Identity of one version of a file, so each bad file is reported once.
type FileStamp = (String, u64, u128);

fn stamp(name: &str, md: &fs::Metadata) -> FileStamp {
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (name.to_string(), md.len(), mtime)
}

/// The disk KV checkpoint cache of one server process.
pub struct DiskCache {
    dir: PathBuf,
    opts: CacheOptions,
    schedule: Mutex<ContinuedSchedule>,
    /// Files already reported as unusable (foreign, other model, rejected by
    /// the engine): skipped silently afterwards, never retried.
    reported: Mutex<HashSet<FileStamp>>,
}

fn create_dir_0700(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn pid_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true // cannot tell: keep the file
    }
}

impl DiskCache {
    /// Creates `dir` (0700, recursively), removes stale temp files of dead
    /// processes, runs eviction and logs the configuration.
    pub fn open(dir: impl Into<PathBuf>, opts: CacheOptions) -> io::Result<DiskCache> {
        let dir = dir.into();
        opts.policy.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if let Err(e) = create_dir_0700(&dir) {
            (opts.log)(&format!("failed to create KV cache directory {}: {e}", dir.display()));
            return Err(e);
        }
        let cache = DiskCache {
            dir,
            opts,
            schedule: Mutex::new(ContinuedSchedule::default()),
            reported: Mutex::new(HashSet::new()),
        };
        cache.remove_stale_temps();
        cache.evict(None);
        let p = &cache.opts.policy;
        cache.log(&format!(
            "KV disk cache {} (budget={} MiB, cross-quant={}, min={}, cold_max={}, continued={}, trim={}, align={}, consume_over={}, hit_half_life={}s)",
            cache.dir.display(),
            cache.opts.budget_bytes >> 20,
            if cache.opts.reject_different_quant { "reject" } else { "accept" },
            p.min_tokens,
            p.cold_max_tokens,
            p.continued_interval_tokens,
            p.boundary_trim_tokens,
            p.boundary_align_tokens,
            p.consume_over_tokens,
            HIT_HALF_LIFE_SECS as u64,
        ));
        Ok(cache)
    }

    /// Convenience for the server: `None` when `--kv-disk-dir` is not given.
    pub fn from_args(
        kv: &KvCacheArgs,
        tools: &ToolReplayArgs,
        model: Option<ModelShape>,
        log: Option<LogFn>,
    ) -> Result<Option<DiskCache>, String> {
        let Some(dir) = kv.kv_disk_dir.clone() else { return Ok(None) };
        let mut opts = CacheOptions::from_args(kv, tools)?;
        opts.model = model;
        if let Some(l) = log {
            opts.log = l;
        }
        DiskCache::open(dir, opts).map(Some).map_err(|e| e.to_string())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn policy(&self) -> &Policy {
        &self.opts.policy
    }
    pub fn options(&self) -> &CacheOptions {
        &self.opts
    }

    fn log(&self, m: &str) {
        (self.opts.log)(m)
    }

    fn now(&self) -> u64 {
        (self.opts.clock)()
    }

    fn path_for(&self, key: &str) -> PathBuf {
        self.dir.join(format::file_name(key))
    }

    /// Logs `msg` once per file version.
    fn report_once(&self, st: FileStamp, msg: &str) {
        let fresh = self.reported.lock().map(|mut r| r.insert(st)).unwrap_or(true);
        if fresh {
            self.log(msg);
        }
    }

    fn is_reported(&self, st: &FileStamp) -> bool {
        self.reported.lock().map(|r| r.contains(st)).unwrap_or(false)
    }

    /// Deletes a file that is broken for every reader, with one log line.
    fn discard(&self, path: &Path, why: &str) {
        match fs::remove_file(path) {
            Ok(()) => self.log(&format!("kv cache removed corrupt file {}: {why}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                let st = fs::metadata(path)
                    .map(|m| stamp(&path.to_string_lossy(), &m))
                    .unwrap_or_else(|_| (path.to_string_lossy().into_owned(), 0, 0));
                self.report_once(
                    st,
                    &format!("kv cache skipped corrupt file {} (cannot remove: {e}): {why}", path.display()),
                );
            }
        }
    }

    fn remove_stale_temps(&self) {
        let Ok(rd) = fs::read_dir(&self.dir) else { return };
        let me = std::process::id();
        for de in rd.flatten() {
            let name = de.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some((stem, pid)) = name.split_once(".kv.tmp.") else { continue };
            if format::parse_file_name(&format!("{stem}.kv")).is_none() {
                continue;
            }
            let Ok(pid) = pid.parse::<u32>() else { continue };
            if pid != me && !pid_alive(pid) && fs::remove_file(de.path()).is_ok() {
                self.log(&format!("kv cache removed stale temp file {name}"));
            }
        }
    }

    /// Reads and validates one directory entry. Corrupt files are deleted
    /// (`delete_corrupt`), foreign ones reported once; both yield `None`.
    fn read_entry(&self, path: &Path, key: &str, delete_corrupt: bool) -> Option<Entry> {
        let mut f = File::open(path).ok()?;
        let md = f.metadata().ok()?;
        if !md.is_file() {
            return None;
        }
        let mut buf = Vec::with_capacity(PREFIX_LEN as usize);
        (&mut f).take(PREFIX_LEN).read_to_end(&mut buf).ok()?;
        let res = KvcHeader::decode(&buf).and_then(|h| h.check_file_len(md.len()).map(|_| h));
        match res {
            Ok(header) => Some(Entry { key: key.to_string(), path: path.to_path_buf(), header, file_size: md.len() }),
            Err(e) if e.is_corrupt() => {
                if delete_corrupt {
                    self.discard(path, &e.to_string());
                }
                None
            }
            Err(e) => {
                self.report_once(
                    stamp(&path.to_string_lossy(), &md),
                    &format!("kv cache ignoring {}: {e}", path.display()),
                );
                None
            }
        }
    }

    fn scan(&self, delete_corrupt: bool) -> Vec<Entry> {
        let Ok(rd) = fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for de in rd.flatten() {
            let name = de.file_name();
            let Some(key) = name.to_str().and_then(format::parse_file_name) else { continue };
            if let Some(e) = self.read_entry(&de.path(), &key, delete_corrupt) {
                out.push(e);
            }
        }
        out
    }

    /// Valid checkpoint files currently in the directory (corrupt ones removed).
    pub fn entries(&self) -> Vec<Entry> {
        self.scan(true)
    }

    /// Sum of valid file sizes.
    pub fn total_bytes(&self) -> u64 {
        self.scan(false).iter().map(|e| e.file_size).sum()
    }

    /// §5 steps 1-3: candidates whose stored text is a byte prefix of
    /// `prompt` (by SHA-1 of the prompt prefix), best first: longest text,
    /// then more tokens.
    pub fn candidates(&self, prompt: &[u8], engine: EngineInfo) -> Vec<Entry> {
        let min = self.opts.policy.min_tokens;
        let mut cands: Vec<Entry> = self
            .scan(true)
            .into_iter()
            .filter(|e| {
                let h = &e.header;
                (h.text_len as usize) <= prompt.len()
                    && h.tokens >= min
                    && h.ctx_size <= engine.ctx
                    && (!self.opts.reject_different_quant || h.quant_bits == engine.quant_bits)
            })
            .collect();
        if cands.is_empty() {
            return cands;
        }
        // Hash every distinct candidate length in one pass over the prompt.
        let mut lens: Vec<usize> = cands.iter().map(|e| e.header.text_len as usize).collect();
        lens.sort_unstable();
        lens.dedup();
        let mut hashes = std::collections::HashMap::with_capacity(lens.len());
        let mut h = sha1_smol::Sha1::new();
        let mut done = 0;
        for &l in &lens {
            h.update(&prompt[done..l]);
            done = l;
            hashes.insert(l, h.clone().digest().to_string());
        }
        cands.retain(|e| hashes.get(&(e.header.text_len as usize)) == Some(&e.key));
        cands.sort_by(|a, b| {
            (b.header.text_len, b.header.tokens).cmp(&(a.header.text_len, a.header.tokens))
        });
        cands
    }

    /// §5 disk lookup + load. `prompt` is the rendered prompt text. For each
    /// candidate (best first) the file is re-verified, its payload header is
    /// checked (token count, model layout, section sizes) and then `loader`
    /// is called with a reader limited to the payload bytes. The loader
    /// restores the engine session from the DSV4 payload and returns the
    /// session's token ids, or an error (the engine invalidates its session).
    /// On success hits/last-used are updated and the continued schedule is set
    /// to the loaded length.
    pub fn load<F>(&self, prompt: &[u8], engine: EngineInfo, mut loader: F) -> Lookup
    where
        F: FnMut(&mut dyn Read, &PayloadHeader) -> Result<Vec<u32>, String>,
    {
        let mut out = Lookup::default();
        if engine.quant_bits != 2 && engine.quant_bits != 4 {
            return out;
        }
        for cand in self.candidates(prompt, engine) {
            let t0 = Instant::now();
            match self.try_load(&cand, prompt, engine, &mut loader, &mut out.session_invalidated, t0) {
                Some(hit) => {
                    out.hit = Some(hit);
                    return out;
                }
                None => continue,
            }
        }
        out
    }

    fn try_load<F>(
        &self,
        cand: &Entry,
        prompt: &[u8],
        engine: EngineInfo,
        loader: &mut F,
        invalidated: &mut bool,
        t0: Instant,
    ) -> Option<Hit>
    where
        F: FnMut(&mut dyn Read, &PayloadHeader) -> Result<Vec<u32>, String>,
    {
        let path = &cand.path;
        let mut f = File::open(path).ok()?;
        let md = f.metadata().ok()?;
        let st = stamp(&path.to_string_lossy(), &md);
        if self.is_reported(&st) {
            return None;
        }
        // Re-verify: the file may have been replaced since listing.
        let mut hb = [0u8; PREFIX_LEN as usize];
        if f.read_exact(&mut hb).is_err() {
            self.discard(path, "truncated header");
            return None;
        }
        let hdr = match KvcHeader::decode(&hb).and_then(|h| h.check_file_len(md.len()).map(|_| h)) {
            Ok(h) => h,
            Err(e) if e.is_corrupt() => {
                self.discard(path, &e.to_string());
                return None;
            }
            Err(_) => return None,
        };
        let tl = hdr.text_len as usize;
        if tl > prompt.len() {
            return None; // replaced by a longer text since listing
        }
        let mut text = vec![0u8; tl];
        if f.read_exact(&mut text).is_err() {
            self.discard(path, "truncated cache text");
            return None;
        }
        if sha1_hex(&text) != cand.key {
            self.discard(path, "cached text hash mismatch");
            return None;
        }
        if text[..] != prompt[..tl] {
            // Only a SHA-1 collision gets here; the file itself is fine.
            self.report_once(st, &format!("kv cache load failed {}: cached text prefix mismatch", path.display()));
            return None;
        }
        let poff = hdr.payload_offset();
        let ph = match payload::inspect(&mut f, poff, hdr.payload_len, hdr.tokens, self.opts.model.as_ref(), engine.ctx)
        {
            Ok(ph) => ph,
            Err(e) if e.is_corrupt() => {
                self.discard(path, &e.to_string());
                return None;
            }
            Err(e) => {
                self.report_once(st, &format!("kv cache skipped {}: {e}", path.display()));
                return None;
            }
        };
        if f.seek(SeekFrom::Start(poff)).is_err() {
            return None;
        }
        let mut limited = BufReader::with_capacity(1 << 20, f).take(hdr.payload_len);
        let res = loader(&mut limited, &ph);
        let left = limited.limit();
        let tokens = match res {
            Ok(t) if left == 0 => t,
            Ok(_) | Err(_) => {
                *invalidated = true;
                let why = match res {
                    Err(e) => e,
                    Ok(_) => format!("{left} payload bytes not consumed"),
                };
                // The engine rejected a structurally sound payload: keep the
                // file (another configuration may use it) but never retry it.
                self.report_once(
                    st,
                    &format!(
                        "kv cache load failed {}: {why} load={:.1} ms",
                        path.display(),
                        t0.elapsed().as_secs_f64() * 1000.0
                    ),
                );
                return None;
            }
        };
        if tokens.len() != hdr.tokens as usize {
            *invalidated = true;
            self.discard(
                path,
                &format!("payload restored {} tokens, header says {}", tokens.len(), hdr.tokens),
            );
            return None;
        }
        let mut reader = limited.into_inner();
        let tool_map = if hdr.ext_flags & EXT_TOOL_MAP != 0 && self.opts.exact_tool_replay {
            decode_tool_map(&mut reader, 4 * self.opts.tool_memory_max_ids as u64)
        } else {
            Vec::new()
        };
        drop(reader);
        let consumed = self.opts.policy.consumes_on_load(hdr.tokens);
        if consumed {
            let _ = fs::remove_file(path);
        } else if let Err(e) = self.touch(path, &hdr) {
            self.log(&format!("kv cache could not update hit count of {}: {e}", path.display()));
        }
        if let Ok(mut s) = self.schedule.lock() {
            s.loaded(hdr.tokens);
        }
        let load_ms = t0.elapsed().as_secs_f64() * 1000.0;
        self.log(&format!(
            "kv cache hit text tokens={} text={} quant={} key={} load={:.1} ms{} file={}",
            hdr.tokens,
            tl,
            hdr.quant_bits,
            hdr.key_kind(),
            load_ms,
            if consumed { " consumed" } else { "" },
            path.display()
        ));
        Some(Hit {
            key: cand.key.clone(),
            path: path.clone(),
            tokens,
            text_len: tl,
            quant_bits: hdr.quant_bits,
            key_kind: hdr.key_kind(),
            reason: hdr.reason,
            tool_map,
            load_ms,
            consumed,
        })
    }

    /// hits += 1, last_used = now; header rewritten in place.
    fn touch(&self, path: &Path, hdr: &KvcHeader) -> io::Result<()> {
        let mut f = OpenOptions::new().write(true).open(path)?;
        let h = KvcHeader { hits: hdr.hits.saturating_add(1), last_used: self.now(), ..hdr.clone() };
        f.write_all(&h.encode()[..format::HEADER_LEN])
    }

    /// Writes a checkpoint of the live state (§4). Checks, in order: minimum
    /// length, that the live state is exactly `req.tokens`, quant bits,
    /// payload size, budget (with 1 % headroom). An existing compatible file
    /// with the same key only gets its tool-map trailer refreshed; an
    /// incompatible one is replaced. Writes `<key>.kv.tmp.<pid>` then renames;
    /// afterwards evicts with the new file protected. `Err` carries the
    /// logged reason (the caller just continues serving).
    pub fn store(&self, req: &StoreRequest<'_>, payload: PayloadWriter<'_>) -> Result<Stored, String> {
        let n = req.tokens.len();
        let reason = req.reason;
        let skip = |why: String| -> Result<Stored, String> {
            let m = format!("kv cache skipped tokens={n} reason={reason} because {why}");
            self.log(&m);
            Err(m)
        };
        if n < self.opts.policy.min_tokens as usize {
            return Err(format!("{n} tokens is below the minimum"));
        }
        if req.live_tokens != req.tokens {
            return skip(format!("live checkpoint is at {}", req.live_tokens.len()));
        }
        if n > u32::MAX as usize {
            return skip("too many tokens".into());
        }
        if req.engine.quant_bits != 2 && req.engine.quant_bits != 4 {
            return skip(format!("quant bits {} are not 2 or 4", req.engine.quant_bits));
        }
        if payload.len == 0 {
            return skip("the engine payload is empty".into());
        }
        if req.text.is_empty() || req.text.len() > u32::MAX as usize {
            return skip(format!("cache text length {} is out of range", req.text.len()));
        }
        let tool_map: &[ToolMapEntry] = if self.opts.exact_tool_replay { req.tool_map } else { &[] };
        let trailer = encode_tool_map(tool_map);
        let text_len = req.text.len() as u64;
        let budget = self.opts.budget_bytes;
        if !fits_budget(budget, text_len, payload.len, trailer.len() as u64) {
            let f = crate::policy::file_size(text_len, payload.len, trailer.len() as u64).unwrap_or(u64::MAX);
            let r = required_with_headroom(f).unwrap_or(u64::MAX);
            return skip(format!(
                "estimated file size {:.2} MiB ({:.2} MiB with safety) exceeds budget {:.2} MiB",
                f as f64 / MIB,
                r as f64 / MIB,
                budget as f64 / MIB
            ));
        }
        let key = sha1_hex(req.text);
        let path = self.path_for(&key);
        if let Some(existing) = self.existing_compatible(&path, &key, req) {
            if !trailer.is_empty() {
                if let Err(e) = self.rewrite_trailer(&path, &existing, &trailer) {
                    self.log(&format!("kv cache could not refresh tool map of {}: {e}", path.display()));
                }
            }
            let file_size = fs::metadata(&path).map(|m| m.len()).unwrap_or(existing.file_size);
            return Ok(Stored { key, path, file_size, reused_existing: true });
        }
        let t0 = Instant::now();
        let now = self.now();
        let mut ext = req.key_kind.ext_bit();
        if !trailer.is_empty() {
            ext |= EXT_TOOL_MAP;
        }
        let header = KvcHeader {
            version: format::VERSION,
            quant_bits: req.engine.quant_bits,
            reason,
            ext_flags: ext,
            tokens: n as u32,
            hits: 0,
            ctx_size: req.engine.ctx,
            created_at: now,
            last_used: now,
            payload_len: payload.len,
            text_len: text_len as u32,
        };
        let tmp = self.dir.join(format!("{}.tmp.{}", format::file_name(&key), std::process::id()));
        let res = (|| -> io::Result<u64> {
            // The directory is disposable and may have been deleted.
            create_dir_0700(&self.dir)?;
            let f = File::create(&tmp)?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            w.write_all(&header.encode())?;
            w.write_all(req.text)?;
            let mut cw = Counting { inner: &mut w, n: 0 };
            (payload.write)(&mut cw)?;
            if cw.n != payload.len {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("payload writer produced {} bytes, declared {}", cw.n, payload.len),
                ));
            }
            w.write_all(&trailer)?;
            let f = w.into_inner().map_err(|e| e.into_error())?;
            let size = f.metadata()?.len();
            drop(f);
            Ok(size)
        })();
        let save_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let size = match res {
            Ok(s) => s,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                let m = format!("kv cache store failed ({reason}): {e} save={save_ms:.1} ms");
                self.log(&m);
                return Err(m);
            }
        };
        if budget != 0 && required_with_headroom(size).is_none_or(|r| r > budget) {
            let _ = fs::remove_file(&tmp);
            return skip(format!("final file size {:.2} MiB exceeds budget", size as f64 / MIB));
        }
        if let Err(e) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            let m = format!("kv cache store failed ({reason}): {e} save={save_ms:.1} ms");
            self.log(&m);
            return Err(m);
        }
        self.log(&format!(
            "kv cache stored tokens={n} trimmed={} reason={reason} key={} size={:.2} MiB save={save_ms:.1} ms",
            req.original_len.saturating_sub(n),
            req.key_kind,
            size as f64 / MIB
        ));
        self.evict(Some(&key));
        Ok(Stored { key, path, file_size: size, reused_existing: false })
    }

    /// An existing file for `key` that can stand for this store (same text,
    /// ctx ≤ ours, same quant when strict). Incompatible files are deleted.
    fn existing_compatible(&self, path: &Path, key: &str, req: &StoreRequest<'_>) -> Option<Entry> {
        if !path.exists() {
            return None;
        }
        let compatible = (|| {
            let e = self.read_entry(path, key, false)?;
            let h = &e.header;
            if (self.opts.reject_different_quant && h.quant_bits != req.engine.quant_bits)
                || h.ctx_size > req.engine.ctx
                || h.text_len as usize != req.text.len()
            {
                return None;
            }
            let mut f = File::open(path).ok()?;
            f.seek(SeekFrom::Start(PREFIX_LEN)).ok()?;
            let mut text = vec![0u8; req.text.len()];
            f.read_exact(&mut text).ok()?;
            (text == req.text).then_some(e)
        })();
        if compatible.is_none() && fs::remove_file(path).is_ok() {
            self.log(&format!("kv cache replaced incompatible file {}", path.display()));
        }
        compatible
    }

    /// Truncates after the payload, appends `trailer`, sets ext bit0 and
    /// last_used.
    fn rewrite_trailer(&self, path: &Path, e: &Entry, trailer: &[u8]) -> io::Result<()> {
        let end = e.header.payload_end().ok_or_else(|| io::Error::other("size overflow"))?;
        let mut f = OpenOptions::new().write(true).open(path)?;
        f.set_len(end)?;
        f.seek(SeekFrom::Start(end))?;
        f.write_all(trailer)?;
        let h = KvcHeader { ext_flags: e.header.ext_flags | EXT_TOOL_MAP, last_used: self.now(), ..e.header.clone() };
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&h.encode()[..format::HEADER_LEN])
    }

    /// §6: delete lowest-scoring files until the valid total fits the budget.
    /// `protected` (the key just stored) survives unless it alone exceeds the
    /// budget. A failed deletion stops the loop.
    pub fn evict(&self, protected: Option<&str>) {
        let budget = self.opts.budget_bytes;
        // Listing also removes corrupt files, so scan even when unlimited.
        let entries = self.scan(true);
        if budget == 0 {
            return;
        }
        let inputs: Vec<ScoreInput> = entries
            .iter()
            .map(|e| ScoreInput {
                reason: e.header.reason,
                tokens: e.header.tokens,
                hits: e.header.hits,
                created_at: e.header.created_at,
                last_used: e.header.last_used,
                file_size: e.file_size,
            })
            .collect();
        let prot = protected.and_then(|k| entries.iter().position(|e| e.key == k));
        for i in plan_eviction(&inputs, budget, prot, self.now()) {
            let e = &entries[i];
            match fs::remove_file(&e.path) {
                Ok(()) => self.log(&format!(
                    "kv cache evicted reason=disk-cache-full tokens={} hits={} size={:.2} MiB file={}",
                    e.header.tokens,
                    e.header.hits,
                    e.file_size as f64 / MIB,
                    e.path.display()
                )),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => {
                    self.log(&format!("kv cache eviction stopped: cannot remove {}: {err}", e.path.display()));
                    break;
                }
            }
        }
    }

    /// Before rendering a request with tool-call ids: scan every file with a
    /// tool-map trailer and return the entries for exactly `wanted` ids (mark
    /// them disk-sourced in tool memory). Read-only; safe on client threads.
    pub fn import_tool_ids(&self, wanted: &HashSet<String>) -> Vec<ToolMapEntry> {
        if !self.opts.exact_tool_replay || wanted.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for e in self.scan(false) {
            if e.header.ext_flags & EXT_TOOL_MAP == 0 {
                continue;
            }
            let Some(end) = e.header.payload_end() else { continue };
            let Ok(mut f) = File::open(&e.path) else { continue };
            if f.seek(SeekFrom::Start(end)).is_err() {
                continue;
            }
            let mut r = BufReader::new(f);
            let max = 4 * self.opts.tool_memory_max_ids as u64;
            out.extend(decode_tool_map(&mut r, max).into_iter().filter(|t| wanted.contains(&t.id)));
        }
        out
    }

    /// Removes every checkpoint with `key` (e.g. after the caller found it
    /// unusable). Missing files are not an error.
    pub fn remove(&self, key: &str) {
        let _ = fs::remove_file(self.path_for(key));
    }

    // ---- continued-checkpoint schedule of the live session (§4.2) ----

    /// Frontier to save for a live state of `live_len` tokens, if any.
    pub fn continued_target(&self, live_len: usize) -> Option<u32> {
        let live = u32::try_from(live_len).ok()?;
        self.schedule.lock().ok()?.target(&self.opts.policy, live)
    }
    /// Records a successful continued or cold store.
    pub fn note_store(&self, tokens: u32) {
        if let Ok(mut s) = self.schedule.lock() {
            s.note_store(tokens);
        }
    }
    /// Live-cache miss: restart the schedule.
    pub fn reset_continued(&self) {
        if let Ok(mut s) = self.schedule.lock() {
            s.reset();
        }
    }
    /// Suppress the continued write at a cold store length (§4.1).
    pub fn suppress_continued(&self, cold_len: u32) -> Option<Suppression> {
        self.schedule.lock().ok()?.suppress(&self.opts.policy, cold_len)
    }
    /// The cold write failed: re-enable the suppressed continued write.
    pub fn restore_continued(&self, s: Option<Suppression>) {
        if let Ok(mut sch) = self.schedule.lock() {
            sch.restore(s);
        }
    }
}

// The server shares one cache between its worker and HTTP threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<DiskCache>();
};
