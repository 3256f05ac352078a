"""Disk KV cache through the real ds4-server binary (KVCACHE.md, SERVING.md §7.1
step 8): save -> restart -> continue, session switch via an evict dump,
continued frontiers and the disk budget, corrupt files, tool-id maps.

The fixture model has random weights, so checks use the server's own
accounting (`cached_tokens`), its log lines, the --trace file and greedy
determinism: a conversation resumed from disk must continue exactly like the
same conversation on a server that kept it live (the ds4-kvcache tests prove
the loaded logits bit-identical; here the whole HTTP path is exercised).
"""

import hashlib
import os
import shutil
import struct
import tempfile

import openai
import pytest

from conftest import Server

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
SYS_A = {"role": "system", "content": "You are a careful assistant who answers briefly. " * 6}
SYS_B = {"role": "system", "content": "Translate everything into French, word by word. " * 6}
MIN = "32"  # --kv-cache-min-tokens for the small fixture prompts


def kv_server(d, *extra):
    return Server(["--kv-disk-dir", d, "--kv-cache-min-tokens", MIN, *extra])


def client(srv):
    return openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0, timeout=300)


def greedy(c, messages, max_tokens=16):
    return c.chat.completions.create(model="deepseek-chat", messages=messages, temperature=0, max_tokens=max_tokens)


def cached(r):
    return r.usage.prompt_tokens_details.cached_tokens


def clean_first_turn(c, system):
    """A first turn whose greedy reply is clean UTF-8 (a client can replay it byte-exactly)."""
    for q in ["Tell me about cats.", "What is 2+2?", "Name a color.", "Say something.", "abc", "More please."]:
        msgs = [system, {"role": "user", "content": q}]
        r = greedy(c, msgs)
        if "\ufffd" not in r.choices[0].message.content:
            return msgs, r
    pytest.skip("no clean-UTF-8 greedy reply")


def second_turn(msgs, r, text="And then?"):
    return msgs + [{"role": "assistant", "content": r.choices[0].message.content}, {"role": "user", "content": text}]


def kv_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".kv"))


def stop_ok(srv):
    srv.stop()
    assert srv.proc.returncode == 0, srv.stderr()[-3000:]


def test_save_restart_continue(oai):
    """KVCACHE.md must-show 1: save -> restart -> the conversation continues
    with cached_tokens = the saved prefix, exactly as if it had stayed live."""
    d = tempfile.mkdtemp(prefix="ds4kv-")
    s1 = kv_server(d)
    try:
        msgs, r1 = clean_first_turn(client(s1), SYS_A)
        p1, c1 = r1.usage.prompt_tokens, r1.usage.completion_tokens
    finally:
        stop_ok(s1)
    log1 = s1.stderr()
    assert "reason=cold" in log1  # first prompt: chat-anchor checkpoint
    assert f"kv cache stored tokens={p1 + c1} trimmed=0 reason=shutdown" in log1
    s2 = kv_server(d)
    try:
        r2 = greedy(client(s2), second_turn(msgs, r1))
        assert cached(r2) == p1 + c1
        assert r2.usage.prompt_tokens_details.model_dump()["cache_write_tokens"] == r2.usage.prompt_tokens - p1 - c1
        assert f"kv cache hit text tokens={p1 + c1}" in s2.stderr()
    finally:
        stop_ok(s2)
    # Reference: the same two turns on a server that kept the state live.
    ref1 = greedy(oai, msgs)
    assert ref1.choices[0].message.content == r1.choices[0].message.content
    ref2 = greedy(oai, second_turn(msgs, ref1))
    assert cached(ref2) == p1 + c1
    assert r2.choices[0].message.content == ref2.choices[0].message.content
    assert r2.usage.prompt_tokens == ref2.usage.prompt_tokens


def test_session_switch_resumes_from_disk(oai):
    """KVCACHE.md must-show 2: A, then unrelated B (A evicted to disk), then A
    again resumes from A's evict dump."""
    d = tempfile.mkdtemp(prefix="ds4kv-")
    # No cold anchors: the only checkpoint of A is the evict dump.
    s = kv_server(d, "--kv-cache-cold-max-tokens", "0")
    try:
        c = client(s)
        msgs, a1 = clean_first_turn(c, SYS_A)
        n_a = a1.usage.prompt_tokens + a1.usage.completion_tokens
        assert kv_files(d) == []
        b1 = greedy(c, [SYS_B, {"role": "user", "content": "Good morning."}])
        assert cached(b1) == 0
        assert f"kv cache stored tokens={n_a} trimmed=0 reason=evict" in s.stderr()
        assert len(kv_files(d)) == 1
        a2 = greedy(c, second_turn(msgs, a1))
        assert cached(a2) == n_a
        log = s.stderr()
        assert f"kv cache hit text tokens={n_a}" in log
        assert "reuse=DiskText" in log
        # B was evicted in turn and resumes too.
        b2 = greedy(c, second_turn([SYS_B, {"role": "user", "content": "Good morning."}], b1, "Merci."))
        if "\ufffd" not in b1.choices[0].message.content:
            assert cached(b2) == b1.usage.prompt_tokens + b1.usage.completion_tokens
    finally:
        stop_ok(s)
    ref1 = greedy(oai, msgs)
    ref2 = greedy(oai, second_turn(msgs, ref1))
    assert a2.choices[0].message.content == ref2.choices[0].message.content


def _flip(b, off, val=None):
    b = bytearray(b)
    b[off] = (b[off] ^ 0xFF) if val is None else val
    return bytes(b)


def test_corrupt_files_survived(oai):
    """Truncated, flipped and wrong-magic files (at startup and under a live
    lookup) cost one log line each; the server keeps serving correct answers."""
    d = tempfile.mkdtemp(prefix="ds4kv-")
    hexname = lambda ch: os.path.join(d, ch * 40 + ".kv")
    good_hdr = b"KVC" + bytes([1, 4, 3, 0, 0]) + struct.pack("<IIIIQQQ", 100, 0, 4096, 0, 1, 1, 1 << 20)
    startup = {
        hexname("0"): os.urandom(200),                               # garbage
        hexname("1"): b"KVC\x01",                                    # truncated header
        hexname("2"): good_hdr + struct.pack("<I", 5) + b"hello",    # sections truncated
        hexname("3"): _flip(good_hdr, 3, 9) + struct.pack("<I", 0),  # foreign version: kept
    }
    for p, b in startup.items():
        open(p, "wb").write(b)
    open(os.path.join(d, "notes.txt"), "w").write("not a checkpoint")
    s = kv_server(d, "--kv-cache-cold-max-tokens", "0")
    try:
        log = s.stderr()
        for ch in "012":
            assert log.count(ch * 40) == 1, (ch, log)
            assert not os.path.exists(hexname(ch))
        assert log.count("3" * 40) == 1 and os.path.exists(hexname("3"))
        assert os.path.exists(os.path.join(d, "notes.txt"))
        c = client(s)
        msgs, a1 = clean_first_turn(c, SYS_A)
        b_msgs = [SYS_B, {"role": "user", "content": "Good morning."}]
        greedy(c, b_msgs)  # evicts A to disk
        (a_file,) = [f for f in kv_files(d) if not f.startswith("3" * 40)]
        a_path = os.path.join(d, a_file)
        good = open(a_path, "rb").read()
        text_len = struct.unpack_from("<I", good, 48)[0]
        poff = 52 + text_len  # DSV4 payload
        variants = {
            "truncated": good[: len(good) // 2],
            "text byte flipped": _flip(good, 52 + text_len // 2),
            "wrong magic": b"KVX" + good[3:],
            "zero tokens": good[:8] + b"\0\0\0\0" + good[12:],
            "token count differs": _flip(good, 8, good[8] ^ 1),
            "payload magic flipped": _flip(good, poff),
            "payload layer count": good[: poff + 32] + struct.pack("<I", 7) + good[poff + 36:],
        }
        a2 = second_turn(msgs, a1)
        ref_cold = None
        for name, data in variants.items():
            open(a_path, "wb").write(data)
            before = len(s.stderr())
            r = greedy(c, a2)
            new = s.stderr()[before:]
            assert cached(r) == 0, name
            if ref_cold is None:
                ref_cold = r.choices[0].message.content
            assert r.choices[0].message.content == ref_cold, name
            assert new.count(a_file[:40]) == 1, (name, new)
            greedy(c, b_msgs)  # live state away from A again
        assert s.alive()
        # The directory may vanish at any time: the next store recreates it.
        shutil.rmtree(d)
        greedy(c, a2)
        greedy(c, b_msgs)
        assert kv_files(d), "evict store after the directory was deleted"
        # A valid checkpoint of A is used again.
        open(a_path, "wb").write(good)
        r = greedy(c, a2)
        assert cached(r) == a1.usage.prompt_tokens + a1.usage.completion_tokens
    finally:
        stop_ok(s)
    # Reference for the failed loads: a cold prefill of the same prompt.
    greedy(oai, [{"role": "user", "content": "unrelated"}], max_tokens=1)
    assert greedy(oai, a2).choices[0].message.content == ref_cold


def test_continued_frontiers_and_budget():
    """§4.2 continued checkpoints at absolute frontiers (prefill and decode),
    eviction under --kv-disk-space-mb, and a hit on a continued frontier."""
    d = tempfile.mkdtemp(prefix="ds4kv-")
    s = kv_server(d, "--kv-cache-cold-max-tokens", "0", "--kv-cache-continued-interval-tokens", "60",
                  "--kv-cache-boundary-align-tokens", "32", "--kv-disk-space-mb", "3")
    try:
        c = client(s)
        system = {"role": "system", "content": "Shared stable system prompt for several sessions. " * 16}
        r = greedy(c, [system, {"role": "user", "content": "first session"}], max_tokens=64)
        p = r.usage.prompt_tokens
        assert p > 128 and p + r.usage.completion_tokens > 192, r.usage
        log = s.stderr()
        for n in (64, 128, 192):  # step 60 rounded up to 64; 192 is reached while decoding
            assert f"kv cache stored tokens={n} trimmed={max(0, p - n)} reason=continued" in log, n
        assert "evicted" not in log and len(kv_files(d)) == 3
        # Another session with the same system prompt: the first one is
        # dumped (evict), which overflows ~3 x 0.9 MiB + 1 MiB > 3 MiB: the
        # least dense file (64 tokens) goes. The new session then resumes at
        # frontier 128 (the first 128 tokens are all system prompt).
        r2 = greedy(c, [system, {"role": "user", "content": "second session"}], max_tokens=2)
        log = s.stderr()
        assert "kv cache evicted reason=disk-cache-full tokens=64 " in log
        assert log.count("evicted") == 1
        assert cached(r2) == 128
        total = sum(os.path.getsize(os.path.join(d, f)) for f in kv_files(d))
        assert total <= 3 << 20
    finally:
        stop_ok(s)


# KVC file writer straight from KVCACHE.md §2 (independent of the Rust code).
def kvc_file(text: bytes, payload_len: int, tool_map):
    ktm = b""
    if tool_map:
        ktm = b"KTM" + bytes([1]) + struct.pack("<I", len(tool_map))
        for i, dsml in tool_map:
            ktm += struct.pack("<II", len(i), len(dsml)) + i + dsml
    hdr = b"KVC" + bytes([1, 4, 3, 1 if ktm else 0, 0]) + struct.pack("<IIIIQQQ", 1, 0, 4096, 0, 1, 1, payload_len)
    return hashlib.sha1(text).hexdigest() + ".kv", hdr + struct.pack("<I", len(text)) + text + b"\0" * payload_len + ktm


def read_ktm(path):
    b = open(path, "rb").read()
    assert b[6] & 1, "ext bit0 (tool map) not set"
    text_len = struct.unpack_from("<I", b, 48)[0]
    payload_len = struct.unpack_from("<Q", b, 40)[0]
    off = 52 + text_len + payload_len
    assert b[off:off + 4] == b"KTM\x01"
    (n,) = struct.unpack_from("<I", b, off + 4)
    off += 8
    out = {}
    for _ in range(n):
        il, dl = struct.unpack_from("<II", b, off)
        off += 8
        out[b[off:off + il].decode()] = b[off + il:off + il + dl].decode()
        off += il + dl
    return out


WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}
# What "the model sampled" for call_disk1: parameter order and spacing differ
# from the canonical rendering of the client's JSON below.
SAMPLED = ("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
           "<｜DSML｜parameter name=\"location\" string=\"true\">Rome</｜DSML｜parameter>\n"
           "<｜DSML｜parameter name=\"days\" string=\"false\">[1, 2]</｜DSML｜parameter>\n"
           "</｜DSML｜invoke>\n</｜DSML｜tool_calls>")
TOOL_MSGS = [
    {"role": "user", "content": "Weather in Rome? Please check carefully for the next days."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_disk1", "type": "function", "function": {
        "name": "get_weather", "arguments": "{\"days\":[1,2],\"location\":\"Rome\"}"}}]},
    {"role": "tool", "tool_call_id": "call_disk1", "content": "sunny"},
]


def test_tool_id_map_import_and_export():
    """SERVING.md §6.3 / KVCACHE.md §2.2: tool-id maps in cache files restore
    exact DSML replay before rendering, and stores write them back."""
    d = tempfile.mkdtemp(prefix="ds4kv-")
    name, data = kvc_file(b"tool map carrier", 16, [(b"call_disk1", SAMPLED.encode())])
    open(os.path.join(d, name), "wb").write(data)

    def ask(srv):
        r = client(srv).chat.completions.create(model="deepseek-chat", messages=TOOL_MSGS, tools=[WEATHER],
                                                 temperature=0, max_tokens=4)
        return srv.trace(r.id)["prompt"]

    s = kv_server(d)
    try:
        assert SAMPLED + EOS in ask(s)
        assert "imported 1 tool-call ids" in s.stderr()
    finally:
        stop_ok(s)
    # The shutdown checkpoint's text contains the block: it carries the map.
    os.remove(os.path.join(d, name))
    files = kv_files(d)
    maps = [read_ktm(os.path.join(d, f)) for f in files if open(os.path.join(d, f), "rb").read()[6] & 1]
    assert {"call_disk1": SAMPLED} in maps, files
    s = kv_server(d)
    try:
        assert SAMPLED + EOS in ask(s)  # restored from the server-written map
    finally:
        stop_ok(s)
    # Disabled replay: canonical DSML, no map written.
    d2 = tempfile.mkdtemp(prefix="ds4kv-")
    open(os.path.join(d2, name), "wb").write(data)
    s = kv_server(d2, "--disable-exact-dsml-tool-replay")
    try:
        p = ask(s)
        assert SAMPLED not in p and "name=\"days\" string=\"false\">[1,2]<" in p
    finally:
        stop_ok(s)
    assert not any(open(os.path.join(d2, f), "rb").read()[6] & 1 for f in kv_files(d2) if f != name)
