"""Sampled decoding through ds4-server, two ways: the server as built (a decode run chooses
each token where the logits are: on the GPU the min_p set or the argmax comes back per token)
and with DS4_HOST_SAMPLE=1 (every step's logits read back and sampled on the host), or under
two other environments (SAB_A / SAB_B: "VAR=value ..."; SAB_TOP_P: the requests' top_p).
Seeded requests must give the same text both ways; each request is sent twice and the second
(a ~60-token prompt prefilled again, then 128 tokens) is timed.
Usage: python3 sample_ab.py BIN MODEL WORKDIR [TEMP ...]"""
import json, os, signal, subprocess, sys, time, urllib.request

BIN, MODEL, WORK = sys.argv[1:4]
TEMPS = [float(t) for t in sys.argv[4:]] or [1.0, 0.1, 0.0]
N = 128
TOP_P = float(os.environ.get("SAB_TOP_P", "1"))
ENV_A = os.environ.get("SAB_A", "")
ENV_B = os.environ.get("SAB_B", "DS4_HOST_SAMPLE=1")
os.makedirs(WORK, exist_ok=True)
PROMPT = [{"role": "user", "content": "Write a long story about a lighthouse keeper. " * 4}]


def run(tag, env_extra):
    env = dict(os.environ, **env_extra)
    log = open(os.path.join(WORK, f"{tag}.log"), "wb")
    port = 18950 + len(tag)
    p = subprocess.Popen([BIN, "-m", MODEL, "--ctx", "4096", "-n", str(N), "--port", str(port),
                          "--lock-file", os.path.join(WORK, f"{tag}.lock")], stdout=log, stderr=log, env=env)
    for _ in range(1500):
        if p.poll() is not None:
            raise SystemExit(f"{tag}: exited {p.returncode}: " + open(log.name).read()[-2000:])
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            break
        except Exception:
            time.sleep(0.2)
    out = {}
    for t in TEMPS:
        body = {"model": "deepseek-chat", "messages": PROMPT, "max_tokens": N, "temperature": t, "seed": 5,
                "top_p": TOP_P, "stream": False}
        req = lambda: urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        json.load(urllib.request.urlopen(req(), timeout=300))
        t0 = time.time()
        r = json.load(urllib.request.urlopen(req(), timeout=300))
        dt = time.time() - t0
        n = r["usage"]["completion_tokens"]
        out[t] = (r["choices"][0]["message"]["content"], n, n / dt)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    return out


env = lambda e: dict(kv.split("=", 1) for kv in e.split())
dev = run("a", env(ENV_A))
host = run("b", env(ENV_B))
for t in TEMPS:
    (a, na, ra), (b, nb, rb) = dev[t], host[t]
    print(f"server T {t} top_p {TOP_P}: {na} tokens, [{ENV_A or 'default'}] {ra:.1f} t/s, [{ENV_B}] {rb:.1f} t/s "
          f"({ra / rb - 1:+.1%}); same text: {a == b and na == nb}")
