"""Black-box test harness: starts the real `ds4-server` binary on a model and
hands out official OpenAI / Anthropic SDK clients pointed at it.

Environment:
  DS4_SERVER_BIN   path of the ds4-server binary (required)
  DS4_TEST_MODEL   model GGUF (default: the vocab-f16 fixture)
"""

import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.normpath(
    os.path.join(HERE, "../../../../../shared/fixtures/model/vocab-f16/model.gguf")
)
CTX = 4096


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, extra_args=(), env=None):
        self.bin = os.environ["DS4_SERVER_BIN"]
        self.model = os.environ.get("DS4_TEST_MODEL", DEFAULT_MODEL)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ds4srv-")
        self.trace_path = os.path.join(self.dir, "trace.txt")
        self.log_path = os.path.join(self.dir, "stderr.txt")
        ctx = [] if "--ctx" in extra_args else ["--ctx", str(CTX)]
        args = [
            self.bin, "-m", self.model, *ctx, "-n", "256",
            "--port", str(self.port), "--trace", self.trace_path,
            "--max-body-bytes", "1000000",
            "--lock-file", os.path.join(self.dir, "ds4.lock"),
            *extra_args,
        ]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL,
                                     env=dict(os.environ, **(env or {})))
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 180
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.stderr()}")
            try:
                with urllib.request.urlopen(self.base + "/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except urllib.error.HTTPError:
                break  # answering (e.g. 401 with --api-key)
            except Exception:
                pass
            if time.time() > deadline:
                raise RuntimeError("server did not come up: " + self.stderr())
            time.sleep(0.2)

    def stderr(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def trace(self, resp_id):
        """Sections of the --trace file for one response id: {"prompt": …, "output": …}."""
        with open(self.trace_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        out = {}
        for m in re.finditer(r"^=== \S+ \S+ (\S+) (prompt|output) \(.*?\)\n", text, re.M):
            if m.group(1) != resp_id:
                continue
            start = m.end()
            nxt = re.compile(r"^=== \S+ \S+ \S+ (prompt|output) \(", re.M).search(text, start)
            body = text[start: nxt.start() if nxt else len(text)]
            # The writer appends exactly one newline after the body; the body itself may end
            # in newlines the model sampled, so strip only that one.
            out[m.group(2)] = body[:-1] if body.endswith("\n") else body
        return out

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()
    assert s.proc.returncode == 0, f"server exit status {s.proc.returncode}\n{s.stderr()[-4000:]}"


@pytest.fixture(scope="session")
def oai(server):
    import openai
    return openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0, timeout=300)


@pytest.fixture(scope="session")
def anth(server):
    import anthropic
    return anthropic.Anthropic(base_url=server.base, api_key="unused", max_retries=0, timeout=300)


def raw_http(port, data: bytes, timeout=60):
    """Send raw bytes, return (status, headers_lower, body_bytes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines and len(lines[0].split(" ")) > 1 else 0
    return status, "\n".join(lines[1:]).lower(), body


def post_json(port, path, obj=None, body: bytes = None, timeout=120):
    if body is None:
        body = json.dumps(obj).encode()
    req = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    return raw_http(port, req, timeout)
