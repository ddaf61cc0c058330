"""Load on the admission webhook: a steady rate of AdmissionReviews over HTTPS on loopback.

Starts `vllm-configurator webhook` with a throwaway self-signed certificate, then a load generator
in a second process sends reviews at a fixed rate over keep-alive connections (a mix of a denied,
a warned and an allowed object) for a bounded time, and reports p50 / p99 latency, throughput and
errors. Target: p99 under 10 ms at 200 requests/s on a 2-core machine, with no error.

Usage: python benchmarks/webhook_load.py [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _objects() -> list[bytes]:
    import yaml

    out = []
    for i, name in enumerate(["docs-example-too-long.yaml", "util-high.yaml", "docs-example-ok.yaml"]):
        obj = next(d for d in yaml.safe_load_all((ROOT / "tests" / "manifests" / name).read_text()) if d)
        out.append(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "request": {"uid": f"u{i}", "operation": "CREATE", "object": obj}}).encode())
    out.append(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"uid": "cm", "operation": "CREATE",
                                       "object": {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "c"}}}}).encode())
    return out


def _client(port: int, cafile: str, rate: float, seconds: float, conns: int, q: mp.Queue) -> None:
    bodies = _objects()
    ctx = ssl.create_default_context(cafile=cafile)
    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def worker(k: int) -> None:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
        interval = conns / rate
        start = time.perf_counter() + k * interval / conns
        n = 0
        while True:
            due = start + n * interval
            if due - start > seconds:
                break
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            t0 = time.perf_counter()
            try:
                c.request("POST", "/validate", body=bodies[(n + k) % len(bodies)],
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                errors[0] += 0 if ok else 1
            n += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(conns)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put((lat, errors[0], time.perf_counter() - t0))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connections", type=int, default=4)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cert, key = Path(d) / "tls.crt", Path(d) / "tls.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "configurator.cli.main", "webhook", "--host", "127.0.0.1",
                                   "--port", str(port), "--tls-cert-file", str(cert), "--tls-private-key-file",
                                   str(key)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ctx = ssl.create_default_context(cafile=str(cert))
            for _ in range(150):
                try:
                    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    time.sleep(0.2)
            q: mp.Queue = mp.Queue()
            p = mp.Process(target=_client, args=(port, str(cert), a.rate, a.seconds, a.connections, q))
            p.start()
            lat, errors, wall = q.get(timeout=a.seconds + 60)
            p.join()
        finally:
            server.terminate()
            server.wait(timeout=30)
    lat_ms = sorted(x * 1000 for x in lat)
    p99 = lat_ms[int(len(lat_ms) * 0.99) - 1]
    print(f"{len(lat_ms)} reviews at a target of {a.rate:.0f}/s over {a.connections} keep-alive HTTPS connections:")
    print(f"  throughput {len(lat_ms) / wall:.0f}/s, errors {errors}")
    print(f"  latency p50 {statistics.median(lat_ms):.2f} ms, p99 {p99:.2f} ms, max {lat_ms[-1]:.2f} ms "
          f"(target: p99 < 10 ms)")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
