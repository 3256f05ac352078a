"""Black-box tests of the real ds4-server binary with the official OpenAI and
Anthropic Python SDKs (SERVING.md §5, §7, §8, §11).

The fixture model has the real DeepSeek V4 tokenizer but random weights, so
its text is random: assertions use structure, determinism of greedy decoding,
the --trace file (rendered prompt and raw output per response id) and the
chat-rendering fixtures (byte-exact prompts).
"""

import concurrent.futures as cf
import glob
import json
import os
import time

import pytest

from conftest import CTX, HERE, Server, post_json, raw_http

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
FIXTURES = os.path.normpath(os.path.join(HERE, "../../../../../shared/fixtures/chat"))


def greedy(oai, messages, max_tokens=16, **kw):
    return oai.chat.completions.create(
        model="deepseek-chat", messages=messages, temperature=0, max_tokens=max_tokens, **kw)


def extra(obj, key):
    """A field the SDK does not model (ds4 extensions)."""
    d = obj.model_dump() if hasattr(obj, "model_dump") else obj
    return d.get(key)


def check_usage(u, max_completion):
    assert u.prompt_tokens > 0
    assert 0 <= u.completion_tokens <= max_completion
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    cached = u.prompt_tokens_details.cached_tokens
    assert 0 <= cached <= u.prompt_tokens
    assert extra(u.prompt_tokens_details, "cache_write_tokens") == u.prompt_tokens - cached


# ---------------------------------------------------------------- models

def test_models(oai, server):
    models = oai.models.list().data
    assert [m.id for m in models] == ["deepseek-v4-flash"]
    m = oai.models.retrieve("deepseek-v4-flash")
    d = m.model_dump()
    assert d["context_length"] == CTX
    # §11 #31: max_completion_tokens = min(-n, ctx)
    assert d["top_provider"]["max_completion_tokens"] == 256
    assert "tools" in d["supported_parameters"]


# ---------------------------------------------------------------- chat

def test_chat_nonstream_render_and_usage(oai, server):
    r = greedy(oai, [{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Hello"}])
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.model == "deepseek-chat"
    ch = r.choices[0]
    assert ch.finish_reason in ("stop", "length")
    assert isinstance(ch.message.content, str)
    check_usage(r.usage, 16)
    t = server.trace(r.id)
    # §11 #2: non-thinking render, no preamble.
    assert t["prompt"] == f"{BOS}You are a test.{USER}Hello{ASSISTANT}</think>"
    # Content is the raw output (no DSML in it, non-thinking mode).
    if "<｜DSML｜" not in t["output"] and "<tool_calls>" not in t["output"]:
        assert ch.message.content == t["output"]


def test_chat_stream_matches_nonstream(oai, server):
    msgs = [{"role": "user", "content": "Count to ten."}]
    ref = greedy(oai, msgs, max_tokens=12)
    chunks = list(greedy(oai, msgs, max_tokens=12, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert content == ref.choices[0].message.content
    assert finish == [ref.choices[0].finish_reason]
    usage = chunks[-1]
    assert usage.choices == [] and usage.usage is not None
    assert usage.usage.completion_tokens == ref.usage.completion_tokens
    assert usage.usage.prompt_tokens == ref.usage.prompt_tokens
    assert len({c.id for c in chunks}) == 1
    # Without include_usage there is no usage chunk.
    chunks = list(greedy(oai, msgs, max_tokens=3, stream=True))
    assert all(c.usage is None for c in chunks)


def test_thinking_on_and_off(oai, server):
    # Default model: thinking (high). Client sampling knobs are ignored.
    r = oai.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "Why?"}],
                                    max_tokens=12, seed=5)
    t = server.trace(r.id)
    assert t["prompt"] == f"{BOS}{USER}Why?{ASSISTANT}<think>"
    raw = t["output"]
    msg = r.choices[0].message
    reasoning = extra(msg, "reasoning_content") or ""
    body = raw[len("<think>"):] if raw.startswith("<think>") else raw
    if "</think>" in body:
        assert reasoning == body[: body.index("</think>")]
    else:
        # [DECISION] §4.1: cut before </think> → all reasoning, empty content.
        assert (reasoning, msg.content) == (body, "")
    # Thinking off three ways.
    for kw in ({"reasoning_effort": "none"}, {"extra_body": {"thinking": {"type": "disabled", "budget_tokens": 9}}},
               {"extra_body": {"think": False}}):
        r = oai.chat.completions.create(model="deepseek-v4-flash", messages=[{"role": "user", "content": "Why?"}],
                                        max_tokens=4, **kw)
        assert server.trace(r.id)["prompt"].endswith(f"{ASSISTANT}</think>"), kw
        assert extra(r.choices[0].message, "reasoning_content") is None
    # deepseek-reasoner alias → thinking; "max" below 393216 ctx → high (no preamble).
    r = oai.chat.completions.create(model="deepseek-reasoner", messages=[{"role": "user", "content": "x"}],
                                    max_tokens=1, reasoning_effort="max")
    p = server.trace(r.id)["prompt"]
    assert p == f"{BOS}{USER}x{ASSISTANT}<think>" and "Reasoning Effort" not in p
    # Unknown effort → 400 (§11 #26).
    import openai
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], reasoning_effort="extreme")


def test_old_reasoning_dropped_without_tools(oai, server):
    # §11 #3
    msgs = [{"role": "user", "content": "q1"},
            {"role": "assistant", "content": "first answer", "reasoning_content": "secret plan"},
            {"role": "user", "content": "q2"}]
    r = oai.chat.completions.create(model="deepseek-v4-flash", messages=msgs, max_tokens=1)
    p = server.trace(r.id)["prompt"]
    assert p == f"{BOS}{USER}q1{ASSISTANT}</think>first answer{EOS}{USER}q2{ASSISTANT}<think>"


def test_stop_strings(oai, server):
    msgs = [{"role": "user", "content": "Tell me a story."}]
    ref = greedy(oai, msgs, max_tokens=24).choices[0].message.content
    # Pick a stop string from the middle of the greedy output (§11 #22).
    cut = None
    for i in range(4, len(ref) - 3):
        s = ref[i:i + 3]
        if ref.find(s) == i and "\ufffd" not in s:
            cut, stop = i, s
            break
    if cut is None:
        pytest.skip("greedy output too short for a stop-string probe")
    r = greedy(oai, msgs, max_tokens=24, stop=["\u0000never", stop])
    assert r.choices[0].message.content == ref[:cut]
    assert r.choices[0].finish_reason == "stop"
    chunks = list(greedy(oai, msgs, max_tokens=24, stop=stop, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ref[:cut]


# ---------------------------------------------------------------- completions

def test_completions(oai, server):
    r = oai.completions.create(model="deepseek-chat", prompt="Once upon a time", max_tokens=10, temperature=0)
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    assert r.choices[0].finish_reason in ("stop", "length")
    t = server.trace(r.id)
    assert t["prompt"] == f"{BOS}You are a helpful assistant{USER}Once upon a time{ASSISTANT}</think>"
    assert r.choices[0].text == t["output"]
    check_usage(r.usage, 10)
    chunks = list(oai.completions.create(model="deepseek-chat", prompt="Once upon a time", max_tokens=10,
                                         temperature=0, stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text
    assert chunks[-1].usage.completion_tokens == r.usage.completion_tokens
    # Thinking mode: raw text is returned unparsed.
    r = oai.completions.create(model="deepseek-v4-flash", prompt="Hi", max_tokens=6)
    t = server.trace(r.id)
    assert t["prompt"].endswith(f"{ASSISTANT}<think>")
    assert r.choices[0].text == t["output"]


# ---------------------------------------------------------------- anthropic

def test_messages_nonstream_and_stream(anth, server):
    kw = dict(model="deepseek-chat", max_tokens=12, extra_body={"temperature": 0}, system="Answer in one word.",
              messages=[{"role": "user", "content": "Capital of France?"}])
    r = anth.messages.create(**kw)
    assert r.type == "message" and r.role == "assistant" and r.id.startswith("chatcmpl-")
    assert r.stop_reason in ("end_turn", "max_tokens")
    assert r.stop_sequence is None
    t = server.trace(r.id)
    assert t["prompt"] == f"{BOS}Answer in one word.{USER}Capital of France?{ASSISTANT}</think>"
    text = "".join(b.text for b in r.content if b.type == "text")
    assert r.usage.input_tokens == 0
    assert r.usage.cache_read_input_tokens + r.usage.cache_creation_input_tokens > 0
    assert 0 < r.usage.output_tokens <= 12
    events = list(anth.messages.create(stream=True, **kw))
    names = [e.type for e in events]
    assert names[0] == "message_start" and names[-1] == "message_stop" and names[-2] == "message_delta"
    assert events[0].message.usage.input_tokens == 0
    stext = "".join(e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta")
    assert stext == text
    assert events[-2].delta.stop_reason == r.stop_reason
    assert events[-2].usage.output_tokens == r.usage.output_tokens
    # SDK stream helper accumulates the same message.
    with anth.messages.stream(**kw) as s:
        final = s.get_final_message()
    assert "".join(b.text for b in final.content if b.type == "text") == text


def test_messages_thinking(anth, server):
    r = anth.messages.create(model="deepseek-v4-flash", max_tokens=10, messages=[{"role": "user", "content": "Hm?"}])
    t = server.trace(r.id)
    assert t["prompt"].endswith(f"{ASSISTANT}<think>")
    thinking = [b for b in r.content if b.type == "thinking"]
    if thinking:
        assert thinking[0].signature == r.id
        assert t["output"].startswith(thinking[0].thinking) or t["output"].startswith("<think>" + thinking[0].thinking)
    assert any(b.type == "text" for b in r.content)
    events = list(anth.messages.create(model="deepseek-v4-flash", max_tokens=10, stream=True,
                                       messages=[{"role": "user", "content": "Hm?"}]))
    kinds = [(e.type, getattr(getattr(e, "delta", None), "type", None)) for e in events]
    if ("content_block_delta", "thinking_delta") in kinds:
        assert ("content_block_delta", "signature_delta") in kinds
        assert kinds.index(("content_block_delta", "thinking_delta")) < kinds.index(("content_block_delta", "signature_delta"))


# ---------------------------------------------------------------- tools

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}


def test_openai_tool_round_trip(oai, server):
    msgs = [
        {"role": "user", "content": "Weather in Rome?"},
        {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
         "tool_calls": [{"id": "call_abc", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"location\": \"Rome\", \"days\": [1, 2]}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "21C & sunny </tool_result>"},
    ]
    r = oai.chat.completions.create(model="deepseek-v4-flash", messages=msgs, tools=[WEATHER], max_tokens=8)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls", "error")
    p = server.trace(r.id)["prompt"]
    schema = json.dumps(WEATHER["function"], separators=(",", ":"))
    assert p.startswith(BOS + "## Tools")
    assert schema in p  # raw client bytes (the SDK sends compact JSON)
    # Canonical DSML (§3.5): order kept, non-string minified; reasoning kept (tool context).
    assert (f"{USER}Weather in Rome?{ASSISTANT}<think>Use the tool.</think>\n\n<｜DSML｜tool_calls>\n"
            "<｜DSML｜invoke name=\"get_weather\">\n"
            "<｜DSML｜parameter name=\"location\" string=\"true\">Rome</｜DSML｜parameter>\n"
            "<｜DSML｜parameter name=\"days\" string=\"false\">[1,2]</｜DSML｜parameter>\n"
            "</｜DSML｜invoke>\n</｜DSML｜tool_calls>" + EOS) in p
    # §11 #7: tool text not entity-escaped except the sentinel.
    assert p.endswith(f"{USER}<tool_result>21C & sunny &lt;/tool_result></tool_result>{ASSISTANT}<think>")
    # tool_choice "none": schemas not rendered.
    r = oai.chat.completions.create(model="deepseek-v4-flash", messages=msgs, tools=[WEATHER], tool_choice="none",
                                    max_tokens=1)
    assert "## Tools" not in server.trace(r.id)["prompt"]


def test_anthropic_tool_round_trip(anth, server):
    tools = [{"name": "Bash", "description": "Run a command",
              "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
    msgs = [
        {"role": "user", "content": "Where am I?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Run pwd.", "signature": "x"},
                                          {"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                           "input": {"command": "pwd 2>&1 && ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                      "content": [{"type": "text", "text": "/home/me"}]},
                                     {"type": "text", "text": "Thanks."}]},
    ]
    r = anth.messages.create(model="claude-x", max_tokens=6, system=[
        {"type": "text", "text": "x-anthropic-billing-header: abc"}, {"type": "text", "text": "Be brief."}],
        tools=tools, messages=msgs)
    assert r.model == "claude-x"
    p = server.trace(r.id)["prompt"]
    assert "x-anthropic" not in p
    assert "Be brief." + USER in p
    assert (f"{ASSISTANT}<think>Run pwd.</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"Bash\">\n"
            "<｜DSML｜parameter name=\"command\" string=\"true\">pwd 2>&1 && ls</｜DSML｜parameter>\n"
            f"</｜DSML｜invoke>\n</｜DSML｜tool_calls>{EOS}{USER}<tool_result>/home/me</tool_result>Thanks.{ASSISTANT}<think>") in p
    # Unknown tool_use_id without replay → 400 (§5.3, §7.4).
    import anthropic
    with pytest.raises(anthropic.BadRequestError) as e:
        anth.messages.create(model="claude-x", max_tokens=4, tools=tools, messages=[
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_unknown", "content": "x"}]}])
    assert "toolu_unknown" in str(e.value)


def _fixture_cases():
    cases = []
    for f in sorted(glob.glob(os.path.join(FIXTURES, "*.json"))):
        d = json.load(open(f, encoding="utf-8"))
        cases.append((os.path.basename(f), "/v1/chat/completions", d["ds4"]["request_body"],
                      d["ds4"]["ctx_size"], d["ds4"]["expected_rendering"]))
    for f in sorted(glob.glob(os.path.join(FIXTURES, "ds4_endpoints", "*.json"))):
        d = json.load(open(f, encoding="utf-8"))
        cases.append((os.path.basename(f), d["endpoint"], d["request_body"], d["ctx_size"], d["expected_rendering"]))
    return cases


@pytest.mark.parametrize("name,endpoint,body,ctx,expected", _fixture_cases(), ids=lambda v: v if isinstance(v, str) and v.endswith(".json") else "")
def test_fixture_rendering(server, name, endpoint, body, ctx, expected):
    """The real server renders every chat fixture byte-for-byte (SERVING.md §3)."""
    if ctx >= 393216:
        pytest.skip("Think Max fixture: run by test_think_max_fixtures on a 393216-token server")
    obj = json.loads(body)
    obj["max_tokens"] = 1
    obj["stream"] = False
    status, _, resp = post_json(server.port, endpoint, body=json.dumps(obj, ensure_ascii=False).encode())
    assert status == 200, resp
    rid = json.loads(resp)["id"]
    assert server.trace(rid)["prompt"] == expected


# ---------------------------------------------------------------- prefix reuse

def test_prefix_reuse_second_turn(oai, server):
    # Greedy output is deterministic; pick a first turn whose reply is valid
    # UTF-8 (a reply with U+FFFD cannot be replayed byte-exactly by a client).
    for q in ["Hello there", "What is 2+2?", "Name a color.", "Say something.", "abc", "Tell me more."]:
        msgs = [{"role": "user", "content": q}]
        r1 = greedy(oai, msgs, max_tokens=24)
        reply = r1.choices[0].message.content
        if "\ufffd" not in reply and r1.choices[0].finish_reason in ("stop", "length"):
            break
    else:
        pytest.skip("no clean-UTF-8 greedy reply")
    p1, c1 = r1.usage.prompt_tokens, r1.usage.completion_tokens
    msgs2 = msgs + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And then?"}]
    r2 = greedy(oai, msgs2, max_tokens=4)
    cached = r2.usage.prompt_tokens_details.cached_tokens
    # ≈ first turn's prompt + reply (exact unless the engine re-tokenised).
    assert p1 + c1 - 2 <= cached <= p1 + c1, (p1, c1, cached)
    assert extra(r2.usage.prompt_tokens_details, "cache_write_tokens") == r2.usage.prompt_tokens - cached


def test_warmup_then_hit(oai, anth, server):
    msgs = [{"role": "system", "content": "Long stable system prompt. " * 20}, {"role": "user", "content": "warm"}]
    w = greedy(oai, msgs, max_tokens=0)
    assert w.choices[0].message.content == ""
    assert w.choices[0].finish_reason == "length"
    assert w.usage.completion_tokens == 0
    r = greedy(oai, msgs, max_tokens=4)
    assert r.usage.prompt_tokens_details.cached_tokens == w.usage.prompt_tokens
    assert extra(r.usage.prompt_tokens_details, "cache_write_tokens") == 0
    # Anthropic: cache_read_input_tokens after a warm-up.
    kw = dict(model="deepseek-chat", system="Stable system text. " * 10, messages=[{"role": "user", "content": "hey"}])
    status, _, body = post_json(server.port, "/v1/messages", {"max_tokens": 0, **kw})
    assert status == 200
    wu = json.loads(body)["usage"]
    r = anth.messages.create(max_tokens=3, **kw)
    assert r.usage.cache_read_input_tokens == wu["cache_read_input_tokens"] + wu["cache_creation_input_tokens"]
    assert r.usage.cache_creation_input_tokens == 0


# ---------------------------------------------------------------- concurrency

def test_32_concurrent_clients(oai, server):
    prompts = [f"Question number {i}: what next?" for i in range(4)]
    base = {p: greedy(oai, [{"role": "user", "content": p}], max_tokens=6).choices[0].message.content for p in prompts}

    def one(i):
        p = prompts[i % 4]
        if i % 2:
            chunks = greedy(oai, [{"role": "user", "content": p}], max_tokens=6, stream=True)
            return p, "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        return p, greedy(oai, [{"role": "user", "content": p}], max_tokens=6).choices[0].message.content

    with cf.ThreadPoolExecutor(32) as ex:
        results = list(ex.map(one, range(32)))
    assert len(results) == 32
    for p, content in results:
        assert content == base[p]


def test_disconnect_mid_stream(oai, server):
    import socket
    body = json.dumps({"model": "deepseek-chat", "messages": [{"role": "user", "content": "Write forever."}],
                       "max_tokens": CTX - 64, "temperature": 1, "stream": True}).encode()
    req = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    s = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    s.sendall(req)
    got = b""
    while got.count(b"data: ") < 3:
        chunk = s.recv(4096)
        assert chunk, "stream ended early"
        got += chunk
    assert b" 200 " in got.split(b"\r\n", 1)[0]
    s.close()  # disconnect mid-stream
    t0 = time.time()
    r = greedy(oai, [{"role": "user", "content": "Still there?"}], max_tokens=4)
    assert r.choices[0].finish_reason in ("stop", "length")
    assert time.time() - t0 < 120
    # The abandoned request was stopped, not run to its token cap.
    deadline = time.time() + 30
    while time.time() < deadline and "client stream write failed" not in server.stderr():
        time.sleep(0.2)
    assert "client stream write failed" in server.stderr()


# ---------------------------------------------------------------- errors

def test_malformed_and_oversized(server, oai):
    port = server.port
    s, _, b = post_json(port, "/v1/chat/completions", body=b"{not json")
    assert s == 400 and json.loads(b)["error"]["message"] == "invalid JSON request"
    s, _, b = post_json(port, "/v1/chat/completions", {"messages": [], "temperature": "hot"})
    assert s == 400 and json.loads(b)["error"]["type"] == "invalid_request_error"
    s, _, b = post_json(port, "/v1/chat/completions", {"model": "x"})
    assert s == 400 and json.loads(b)["error"]["message"] == "missing messages"
    s, _, b = post_json(port, "/v1/completions", {"model": "x"})
    assert s == 400 and json.loads(b)["error"]["message"] == "missing prompt"
    s, _, b = post_json(port, "/v1/chat/completions", body=b'{"messages":[{"role":"user","content":"\xff\xfe"}]}')
    assert s == 400
    s, _, b = post_json(port, "/v1/chat/completions", body=b" " * 1_000_001)
    assert s == 400 and json.loads(b)["error"]["message"] == "bad HTTP request"
    s, _, b = post_json(port, "/v1/chat/completions", body=b"[" * 300 + b"]" * 300)
    assert s == 400
    s, _, b = raw_http(port, b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s == 404 and json.loads(b)["error"]["message"] == "unknown endpoint"
    s, _, b = raw_http(port, b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s == 404
    s, _, b = raw_http(port, b"garbage\r\n\r\n")
    assert 400 <= s < 500 or s == 0
    # Context overflow (§5.6, §11 #23), per API shape.
    big = "word " * (CTX + 100)
    s, _, b = post_json(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": big}]})
    e = json.loads(b)["error"]
    assert s == 400 and e["code"] == "context_length_exceeded" and e["param"] == "messages" and e["n_ctx"] == CTX
    assert e["n_prompt_tokens"] >= CTX
    s, _, b = post_json(port, "/v1/messages", {"max_tokens": 4, "messages": [{"role": "user", "content": big}]})
    v = json.loads(b)
    assert s == 400 and v["type"] == "error" and v["error"]["n_ctx"] == CTX
    s, _, b = post_json(port, "/v1/completions", {"prompt": big})
    assert json.loads(b)["error"]["param"] == "prompt"
    # Still alive and serving.
    assert server.alive()
    assert greedy(oai, [{"role": "user", "content": "ok?"}], max_tokens=2).choices[0].finish_reason in ("stop", "length")


def test_cors_and_options():
    srv = Server(["--cors"])
    try:
        s, h, b = raw_http(srv.port, b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s == 204 and b == b"" and "content-type" not in h
        assert "access-control-allow-origin: *" in h
        s, h, _ = post_json(srv.port, "/v1/chat/completions",
                            {"model": "deepseek-chat", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
                             "stream": True})
        assert s == 200 and "text/event-stream" in h and "access-control-allow-methods: get, post, options" in h
        s, h, _ = raw_http(srv.port, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s == 404 and "access-control-allow-headers: *" in h
    finally:
        srv.stop()


def test_api_key():
    import openai
    srv = Server(["--api-key", "k-123"])
    try:
        bad = openai.OpenAI(base_url=srv.base + "/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
        good = openai.OpenAI(base_url=srv.base + "/v1", api_key="k-123", max_retries=0)
        assert good.models.list().data[0].id == "deepseek-v4-flash"
    finally:
        srv.stop()


def test_think_max_fixtures():
    """§11 #1: Think Max renders the preamble only with a context >= 393216."""
    cases = [c for c in _fixture_cases() if c[3] >= 393216]
    assert len(cases) == 3
    srv = Server(["--ctx", "393216"])
    try:
        for name, endpoint, body, ctx, expected in cases:
            obj = json.loads(body)
            obj["max_tokens"] = 1
            status, _, resp = post_json(srv.port, endpoint, body=json.dumps(obj, ensure_ascii=False).encode())
            assert status == 200, resp
            assert srv.trace(json.loads(resp)["id"])["prompt"] == expected, name
            assert expected.startswith(BOS + "Reasoning Effort: Absolute maximum")
    finally:
        srv.stop()


def test_backend_flags(oai, server):
    """§10: --metal is refused (exit 2); --cuda needs a device (a clear error
    without one); the default picks CUDA only when a device is usable."""
    import subprocess
    base = [server.bin, "-m", server.model, "--ctx", "512", "--lock-file", os.path.join(server.dir, "b.lock")]
    p = subprocess.run(base + ["--metal"], capture_output=True, timeout=60)
    assert p.returncode == 2 and b"Metal backend is not part of this build" in p.stderr
    p = subprocess.run(base + ["--backend", "tpu"], capture_output=True, timeout=60)
    assert p.returncode == 2
    if "backend cpu" in server.stderr():
        # No GPU here (the default fell back to the CPU): --cuda must say so.
        p = subprocess.run(base + ["--cuda", "--port", "1"], capture_output=True, timeout=60)
        assert p.returncode == 1 and b"no usable CUDA device" in p.stderr, p.stderr
