"""Decode runs against the per-token readback: the server as built chooses each token in a
decode run (the CPU backend's own argmax / min_p-set steps, the path a GPU takes with the
logits on the device), DS4_HOST_SAMPLE=1 reads every step's logits and samples on the host
as before. Seeded requests must give the same text both ways, at the sampler settings that
take each path: min_p sets (T 1, T 0.3), the argmax (T 0), the whole vocabulary (top_p < 1,
top_k), and a tool-enabled request (DSML structure switches to greedy inside a run)."""

import json
import urllib.request

from conftest import Server

CASES = [
    {"temperature": 1.0},
    {"temperature": 0.3},
    {"temperature": 0.0},
    {"temperature": 0.8, "top_p": 0.9},
    {"temperature": 0.8, "top_k": 20},
]
MSGS = [{"role": "user", "content": "Write a short poem about the sea."}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def replies(env):
    srv = Server(env=env)
    try:
        out = []
        for extra in CASES + [{"temperature": 1.0, "tools": TOOLS}]:
            body = {"model": "deepseek-chat", "messages": MSGS, "max_tokens": 40, "seed": 11, **extra}
            req = urllib.request.Request(srv.base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as r:
                resp = json.load(r)
            msg = resp["choices"][0]["message"]
            out.append((msg.get("content"), json.dumps(msg.get("tool_calls")), resp["usage"]["completion_tokens"]))
        return out
    finally:
        srv.stop()


def test_decode_runs_equal_host_sampling():
    runs = replies({})
    host = replies({"DS4_HOST_SAMPLE": "1"})
    for case, a, b in zip(CASES + ["tools"], runs, host):
        assert a == b, case
    # the cases differ from each other (the seed and the settings reach the sampler)
    assert len({r[0] for r in runs}) >= 4
