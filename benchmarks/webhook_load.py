"""Load on the admission webhook: a steady rate of AdmissionReviews over HTTPS on loopback.

Starts `vllm-configurator webhook` with a throwaway self-signed certificate, then a load generator
in a second process sends reviews at a fixed rate over keep-alive connections (a mix of a denied,
a warned and an allowed object) for a bounded time, and reports p50 / p99 latency, throughput and
errors; an answer counts as an error unless it is HTTP 200 with the verdict the object should get
(denied, allowed with warnings, allowed). Then a saturation phase: several client processes send
back-to-back for a few seconds, which gives the most one replica (one process) answers per second.
The claim: one replica answers >= 1,000 reviews a second at p99 < 10 ms on 2 cores. It is decided on
the webhook process's own CPU time per review (user + system seconds from /proc, over every review it
answered), which a machine busy with other work barely moves: at most --cpu-ms (1.0 ms: 1,000 reviews a
second from the one core its event loop runs on). Throughput and wall latency are printed beside it;
the p99 decides too when --p99-ms is given (on a shared machine the wall clock measures the queue for
the cores). `--distinct` is the share of reviews whose object is new (a cache miss, evaluated in full);
the others repeat a pod template with a new uid, as a rollout does. Exits 1 when the CPU target (or a
given p99 target) is missed, any error occurs, the rate was not sustained (under 90% of it), or the
webhook did not start or exited during the run.

Usage: python benchmarks/webhook_load.py [--rate 200] [--seconds 10] [--cpu-ms 1.0] [--p99-ms MS]
                                         [--distinct 0.1] [--saturate-seconds 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
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


# (manifest, what the webhook must answer): False denied, "warned" allowed with warnings, True allowed
CASES = [("docs-example-too-long.yaml", False), ("util-high.yaml", "warned"), ("docs-example-ok.yaml", True)]


def _objects() -> list[tuple[bytes, object]]:
    import yaml

    out = []
    for i, (name, expect) in enumerate(CASES):
        obj = next(d for d in yaml.safe_load_all((ROOT / "tests" / "manifests" / name).read_text()) if d)
        out.append((json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                "request": {"uid": f"u{i}", "operation": "CREATE", "object": obj}}).encode(), expect))
    out.append((json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                            "request": {"uid": "cm", "operation": "CREATE",
                                        "object": {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "c"}}}}).encode(), True))
    return out


def _body(bodies: list[tuple[bytes, object]], n: int, distinct: float, salt: str) -> tuple[bytes, object]:
    """The n-th review: one of the cases with a fresh uid; a `distinct` share of them with an object never
    seen before (a new annotation: a cache miss that is evaluated in full)."""
    body, expect = bodies[n % len(bodies)]
    uid = f"{salt}-{n}".encode()
    body = body.replace(b'"uid": "', b'"uid": "' + uid + b"-", 1)
    if distinct > 0 and (n * 7919) % 1000 < distinct * 1000:
        body = body.replace(b'"metadata": {', b'"metadata": {"annotations": {"bench/n": "' + uid + b'"}, ', 1) \
            if b'"annotations"' not in body else body.replace(b'"annotations": {', b'"annotations": {"bench/n": "'
                                                             + uid + b'", ', 1)
    return body, expect


def _as_expected(status: int, raw: bytes, expect: object) -> bool:
    if status != 200:
        return False
    try:
        resp = json.loads(raw)["response"]
    except (ValueError, KeyError, TypeError):
        return False
    if expect == "warned":
        return resp.get("allowed") is True and bool(resp.get("warnings"))
    return resp.get("allowed") is expect


def _client(port: int, cafile: str, rate: float, seconds: float, conns: int, q: mp.Queue,
            distinct: float = 0.0) -> None:
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
            body, expect = _body(bodies, n * conns + k, distinct, "r")
            try:
                c.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
                r = c.getresponse()
                ok = _as_expected(r.status, r.read(), expect)
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


def _saturate(port: int, cafile: str, seconds: float, conns: int, q: mp.Queue, distinct: float = 0.0,
              salt: str = "s") -> None:
    """Back-to-back reviews over `conns` keep-alive connections: (answers, errors, latencies)."""
    bodies = _objects()
    ctx = ssl.create_default_context(cafile=cafile)
    done, errors, lat = [0], [0], []
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def worker(k: int) -> None:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
        n = 0
        while time.perf_counter() < end:
            body, expect = _body(bodies, n * conns + k, distinct, f"{salt}{k}")
            t0 = time.perf_counter()
            try:
                c.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
                r = c.getresponse()
                ok = _as_expected(r.status, r.read(), expect)
            except (OSError, http.client.HTTPException):
                ok = False
                c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
            with lock:
                done[0] += 1
                errors[0] += 0 if ok else 1
                lat.append(time.perf_counter() - t0)
            n += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put((done[0], errors[0], lat))


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc; its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _p(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[max(0, int(len(sorted_ms) * q) - 1)] if sorted_ms else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--p99-ms", type=float, default=None,
                    help="decide on the p99 latency at --rate too (reported against 10 ms when not given)")
    ap.add_argument("--cpu-ms", type=float, default=1.0, help="target: the webhook's CPU ms per review")
    ap.add_argument("--distinct", type=float, default=0.1, help="share of reviews of a never-seen object")
    ap.add_argument("--saturate-seconds", type=float, default=5.0, help="0 skips the saturation phase")
    ap.add_argument("--clients", type=int, default=2, help="client processes in the saturation phase")
    a = ap.parse_args(argv)
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
            ready = False
            for _ in range(150):
                if server.poll() is not None:
                    break
                try:
                    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        ready = True
                        break
                except OSError:
                    time.sleep(0.2)
            if not ready:  # a webhook that crashed or never answered is a failure, not a fast run
                print(f"FAILED: the webhook did not become ready (exit code {server.poll()})")
                return 1
            q: mp.Queue = mp.Queue()
            cpu0 = _cpu_s(server.pid)
            p = mp.Process(target=_client, args=(port, str(cert), a.rate, a.seconds, a.connections, q, a.distinct))
            p.start()
            lat, errors, wall = q.get(timeout=a.seconds + 60)
            p.join()
            cpu_rate = _cpu_s(server.pid) - cpu0
            sat = []
            cpu_sat = 0.0
            if a.saturate_seconds > 0:
                cpu0 = _cpu_s(server.pid)
                procs = [mp.Process(target=_saturate, args=(port, str(cert), a.saturate_seconds, 4, q, a.distinct,
                                                            f"s{i}")) for i in range(a.clients)]
                for sp in procs:
                    sp.start()
                sat = [q.get(timeout=a.saturate_seconds + 60) for _ in procs]
                for sp in procs:
                    sp.join()
                cpu_sat = _cpu_s(server.pid) - cpu0
            crashed = server.poll()
        finally:
            server.terminate()
            server.wait(timeout=30)
    lat_ms = sorted(x * 1000 for x in lat)
    if crashed is not None or not lat_ms:
        print(f"FAILED: the webhook exited during the load (exit code {crashed})" if crashed is not None
              else "FAILED: no review was answered")
        return 1
    p99 = _p(lat_ms, 0.99)
    print(f"{len(lat_ms)} reviews at a target of {a.rate:.0f}/s over {a.connections} keep-alive HTTPS connections "
          f"({os.cpu_count()} CPUs, client and server on the same machine; {a.distinct:.0%} never-seen objects):")
    print(f"  throughput {len(lat_ms) / wall:.0f}/s, errors {errors}")
    p99_target = a.p99_ms if a.p99_ms is not None else 10.0
    print(f"  latency p50 {statistics.median(lat_ms):.2f} ms, p99 {p99:.2f} ms, max {lat_ms[-1]:.2f} ms "
          f"(target: p99 < {p99_target:g} ms{'' if a.p99_ms is not None else ', reported, not decided'})")
    answered, cpu = len(lat_ms), cpu_rate
    sat_errors = 0
    if sat:
        answers = sum(x[0] for x in sat)
        sat_errors = sum(x[1] for x in sat)
        sat_ms = sorted(v * 1000 for x in sat for v in x[2])
        print(f"  saturation: {answers / a.saturate_seconds:.0f} reviews/s from one replica over "
              f"{4 * len(sat)} connections, p50 {_p(sat_ms, 0.5):.1f} ms, p99 {_p(sat_ms, 0.99):.1f} ms, "
              f"errors {sat_errors}; webhook CPU {cpu_sat / max(answers, 1) * 1000:.3f} ms per review")
        answered, cpu = answered + answers, cpu + cpu_sat
    cpu_ms = cpu / max(answered, 1) * 1000
    print(f"  webhook CPU: {cpu_ms:.3f} ms per review over {answered} reviews ({cpu:.2f} s), i.e. "
          f"{1000 / max(cpu_ms, 1e-9):.0f} reviews/s from one core (target: <= {a.cpu_ms:g} ms)")
    failed = []
    if errors or sat_errors:
        failed.append(f"{errors + sat_errors} errors")
    if a.p99_ms is not None and p99 > a.p99_ms:
        failed.append(f"p99 {p99:.2f} ms over the {a.p99_ms:g} ms target")
    if cpu_ms > a.cpu_ms:
        failed.append(f"{cpu_ms:.3f} ms of webhook CPU per review, over the {a.cpu_ms:g} ms target")
    if len(lat_ms) / wall < 0.9 * a.rate:  # the schedule slipped: the rate itself was not sustained
        failed.append(f"throughput {len(lat_ms) / wall:.0f}/s below the {a.rate:.0f}/s asked for")
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
