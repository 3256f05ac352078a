"""GPU smoke test of the ds4-server binary (run on a CUDA machine):
backend auto-selection, chat, live reuse, disk KV cache evict/load and
save -> restart -> continue on the CUDA session, determinism of the
continuation, and the same flow with --cpu for comparison.
Usage: python3 smoke.py BIN MODEL WORKDIR"""
import json, os, signal, subprocess, sys, time, urllib.request

BIN, MODEL, WORK = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
port = [18900]


def start(tag, *extra):
    port[0] += 1
    log = open(os.path.join(WORK, f"{tag}.log"), "wb")
    p = subprocess.Popen([BIN, "-m", MODEL, "--ctx", "4096", "-n", "64", "--port", str(port[0]),
                          "--lock-file", os.path.join(WORK, "lock"), "--kv-cache-min-tokens", "32", *extra],
                         stdout=log, stderr=log)
    for _ in range(600):
        if p.poll() is not None:
            raise SystemExit(f"{tag}: exited {p.returncode}: " + open(log.name).read()[-2000:])
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port[0]}/v1/models", timeout=1)
            break
        except Exception:
            time.sleep(0.2)
    return p, port[0], log.name


def chat(port, msgs, n=16, stream=False):
    body = {"model": "deepseek-chat", "messages": msgs, "max_tokens": n, "temperature": 0}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=300))


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    return p.returncode


SYS = {"role": "system", "content": "You are a careful assistant who answers briefly. " * 6}
A1 = [SYS, {"role": "user", "content": "Tell me about cats."}]
B1 = [{"role": "system", "content": "Translate into French. " * 8}, {"role": "user", "content": "Good morning."}]


def flow(tag, *extra):
    d = os.path.join(WORK, f"kv-{tag}")
    out = {}
    p, port, log = start(tag, "--kv-disk-dir", d, *extra)
    a1 = chat(port, A1)
    reply = a1["choices"][0]["message"]["content"]
    a2m = A1 + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And then?"}]
    chat(port, B1)             # A1 evicted to disk
    disk = chat(port, a2m)     # resumes from A1's evict dump
    assert chat(port, A1)["choices"][0]["message"]["content"] == reply
    live = chat(port, a2m)     # the same turn continued live
    chat(port, B1)
    out["rc1"] = stop(p)
    p, port, log2 = start(tag + "-restart", "--kv-disk-dir", d, *extra)
    again = chat(port, a2m)
    out["rc2"] = stop(p)
    n1 = a1["usage"]["prompt_tokens"] + a1["usage"]["completion_tokens"]
    c = lambda r: r["usage"]["prompt_tokens_details"]["cached_tokens"]
    text = lambda r: r["choices"][0]["message"]["content"]
    lg = open(log).read()
    out.update(backend=[l for l in lg.splitlines() if "backend" in l][-1], turn1=n1,
               cached_live=c(live), cached_disk=c(disk), cached_restart=c(again),
               same_disk=text(disk) == text(live), same_restart=text(again) == text(live),
               evict_logged="reason=evict" in lg, hit_logged="kv cache hit" in lg,
               restart_hit="kv cache hit" in open(log2).read(), text=text(live))
    return out


res = {"cuda": flow("cuda"), "cpu": flow("cpu", "--cpu")}
res["cuda_cpu_same_turn2"] = res["cuda"]["text"] == res["cpu"]["text"]
print(json.dumps(res, indent=1, ensure_ascii=False))
ok = all(res[k]["cached_live"] == res[k]["turn1"] == res[k]["cached_disk"] == res[k]["cached_restart"]
         and res[k]["same_disk"] and res[k]["same_restart"] and res[k]["rc1"] == 0 == res[k]["rc2"] for k in ("cuda", "cpu"))
print("SMOKE", "PASS" if ok and "backend cuda" in res["cuda"]["backend"] else "FAIL")
