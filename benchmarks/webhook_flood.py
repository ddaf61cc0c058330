"""The webhook under attack, on loopback: memory stays under the chart's limit and must-deny objects are
denied by the webhook itself (HTTP 200, `allowed: false`), never left to the API server's failurePolicy.

Starts `vllm-configurator webhook` over HTTPS (a throwaway self-signed certificate, the chart's limits),
samples its resident memory (VmRSS) every 20 ms, and runs the load generator in another process:

1. bodies: --bodies concurrent requests of --body-mib each (default 1,000 of 3 MiB, the webhook's maximum
   body), each a pod naming vLLM; every answer must be a denial or a connection the webhook's own guards
   closed (never an allowance);
2. flood: --flood-clients connections sending back-to-back pods with --containers distinct vLLM containers
   each (a new object every time: no cache helps), beside --slow slow connections (TLS, then a request's
   headers a byte at a time, reconnecting when closed), while --probes must-deny pods (a different object
   each, from another client address) are sent one after another: every probe must be answered 200 with
   `allowed: false`.

The certificate is ECDSA P-256 (as cert-manager issues with `privateKey.algorithm: ECDSA`): a TLS
handshake costs the webhook a fraction of an RSA one, which is what a storm of connections spends.
Client addresses are distinct loopback addresses (127.0.0.2-127.0.0.9), as distinct clients would be.
Bounded in count and time; loopback only. Exits 1 when the peak RSS reaches --rss-limit-mib (the chart's
512 Mi), a probe is not denied by the webhook, a big body is allowed, or the webhook dies.

Usage: python benchmarks/webhook_flood.py [--bodies 1000] [--body-mib 3] [--flood-clients 100]
       [--containers 64] [--slow 3000] [--probes 20] [--flood-seconds 10] [--rss-limit-mib 512]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing as mp
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE_ADDR, SLOW_ADDR, FLOOD_ADDR = "127.0.0.2", "127.0.0.3", "127.0.0.4"
BODY_ADDRS = [f"127.0.1.{i}" for i in range(1, 9)]  # the big bodies, spread so no per-client cap is what holds them


def _review(obj: dict, uid: str) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "operation": "CREATE", "object": obj}}).encode()


def _must_deny(n: int) -> dict:
    import yaml

    obj = next(d for d in yaml.safe_load_all((ROOT / "tests" / "manifests" / "docs-example-too-long.yaml")
                                             .read_text()) if d)
    obj.setdefault("metadata", {}).setdefault("annotations", {})["bench/probe"] = str(n)  # a new object each time
    return obj


def _flood_pod(n: int, containers: int) -> dict:
    rnd = random.Random(n)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"flood-{n}", "namespace": "x"},
            "spec": {"containers": [
                {"name": f"c{i}", "image": "vllm/vllm-openai:v0.11.0",
                 "args": ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", str(rnd.randint(1024, 40960)),
                          "--gpu-memory-utilization", f"0.{rnd.randint(50, 95)}", "--max-num-seqs",
                          str(rnd.randint(1, 512)), "--served-model-name", f"m-{n}-{i}-" + "x" * 200],
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}} for i in range(containers)]}}


def _big(n: int, size: int) -> bytes:
    """A must-deny pod padded to `size` bytes of review."""
    obj = _must_deny(n)
    obj["metadata"]["annotations"]["pad"] = ""
    obj["metadata"]["annotations"]["pad"] = "x" * max(0, size - len(_review(obj, f"big-{n}")))
    return _review(obj, f"big-{n}")


async def _post(ctx: ssl.SSLContext, port: int, body: bytes, local: str, timeout: float) -> tuple[int, dict | None]:
    """(HTTP status, AdmissionReview response) of one POST on a new connection; (0, None) when the connection
    was closed without an answer."""
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=ctx, local_addr=(local, 0),
                                                              server_hostname="localhost"), timeout)
    except (OSError, asyncio.TimeoutError, ssl.SSLError):
        return 0, None
    async def answer() -> tuple[int, dict | None]:
        head = await r.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next((int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")),
                      0)
        raw = await r.readexactly(length)
        try:
            return status, json.loads(raw).get("response")
        except (ValueError, AttributeError):
            return status, None

    reader = asyncio.create_task(answer())  # the webhook may answer before the body is all sent
    try:
        try:
            w.write(b"POST /validate HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode())
            view = memoryview(body)
            for i in range(0, len(body), 256 << 10):
                if reader.done():
                    break
                w.write(view[i:i + (256 << 10)])
                await asyncio.wait_for(w.drain(), timeout)
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            pass
        return await asyncio.wait_for(reader, timeout)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ssl.SSLError, ValueError, IndexError):
        return 0, None
    finally:
        reader.cancel()
        w.close()


async def _bodies(ctx: ssl.SSLContext, port: int, n: int, size: int) -> dict:
    bodies = [_big(i, size) for i in range(min(n, 16))]  # the same few buffers (the generator's own memory)
    results = await asyncio.gather(*(_post(ctx, port, bodies[i % len(bodies)], BODY_ADDRS[i % len(BODY_ADDRS)], 60)
                                     for i in range(n)))
    out = {"denied": 0, "allowed": 0, "closed": 0, "http-error": 0}
    for status, resp in results:
        if status == 200 and resp is not None:
            out["denied" if resp.get("allowed") is False else "allowed"] += 1
        else:
            out["closed" if status == 0 else "http-error"] += 1
            if status:
                out.setdefault("statuses", {}).setdefault(status, 0)
                out["statuses"][status] += 1
    return out


async def _flooders(ctx: ssl.SSLContext, port: int, clients: int, containers: int, seconds: float) -> dict:
    end = time.monotonic() + seconds
    counts = {"flood": 0, "flood-denied": 0}

    async def flooder(k: int) -> None:
        n = k
        while time.monotonic() < end:
            status, resp = await _post(ctx, port, _review(_flood_pod(n, containers), f"f{n}"), FLOOD_ADDR, 10)
            counts["flood"] += 1
            counts["flood-denied"] += status == 200 and resp is not None and resp.get("allowed") is False
            n += clients

    await asyncio.gather(*(flooder(k) for k in range(clients)))
    return counts


async def _slow(ctx: ssl.SSLContext, port: int, slow: int, seconds: float) -> dict:
    end = time.monotonic() + seconds
    counts = {"slow-connects": 0}

    async def slow_one(k: int) -> None:
        await asyncio.sleep(k * 2.0 / max(slow, 1))  # opened over the first 2 s, as a storm ramps up
        while time.monotonic() < end:
            try:
                _r, w = await asyncio.wait_for(asyncio.open_connection(
                    "127.0.0.1", port, ssl=ctx, local_addr=(SLOW_ADDR, 0), server_hostname="localhost"), 10)
            except (OSError, asyncio.TimeoutError, ssl.SSLError):
                await asyncio.sleep(0.5)
                continue
            counts["slow-connects"] += 1
            try:
                for ch in b"POST /validate HTTP/1.1\r\nHost: hook\r\n":
                    if time.monotonic() > end or w.is_closing():
                        break
                    w.write(bytes([ch]))
                    await w.drain()
                    await asyncio.sleep(1.0)
            except (OSError, ssl.SSLError):
                pass
            finally:
                w.close()
            await asyncio.sleep(0.2)

    await asyncio.gather(*(slow_one(k) for k in range(slow)), return_exceptions=True)
    return counts


async def _probes(ctx: ssl.SSLContext, port: int, probes: int, seconds: float) -> dict:
    await asyncio.sleep(min(3.0, seconds / 4))  # the flood and the slow connections are under way
    got = []
    for i in range(probes):
        t0 = time.perf_counter()
        status, resp = await _post(ctx, port, _review(_must_deny(i), f"probe-{i}"), PROBE_ADDR, 10)
        got.append((status, None if resp is None else resp.get("allowed"),
                    (resp or {}).get("status", {}).get("message", "")[:120], time.perf_counter() - t0))
        await asyncio.sleep(max(0.0, (seconds - 4) / max(probes, 1) - (time.perf_counter() - t0)))
    return {"probes": got}


def _run(what: str, port: int, cafile: str, a: dict, q: mp.Queue) -> None:
    """One part of the load, in its own process (its own event loop and core time)."""
    import warnings

    warnings.simplefilter("ignore")
    ctx = ssl.create_default_context(cafile=cafile)
    if what == "bodies":
        t0 = time.perf_counter()
        out = {"bodies": asyncio.run(_bodies(ctx, port, a["bodies"], int(a["body_mib"] * (1 << 20))))}
        out["bodies_s"] = time.perf_counter() - t0
    elif what == "flood":
        out = asyncio.run(_flooders(ctx, port, a["flood_clients"], a["containers"], a["flood_seconds"]))
    elif what == "slow":
        out = asyncio.run(_slow(ctx, port, a["slow"], a["flood_seconds"]))
    else:
        out = asyncio.run(_probes(ctx, port, a["probes"], a["flood_seconds"]))
    q.put((what, out))


def _phase(parts: list[str], port: int, cafile: str, a: dict, timeout: float) -> dict:
    q: mp.Queue = mp.Queue()
    procs = [mp.Process(target=_run, args=(p, port, cafile, a, q)) for p in parts]
    for p in procs:
        p.start()
    out: dict = {}
    for _ in procs:
        out.update(q.get(timeout=timeout)[1])
    for p in procs:
        p.join(30)
    return out


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kib, self.stop = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
            except OSError:
                return
            time.sleep(0.02)


def _raise_fd_limit(n: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bodies", type=int, default=1000, help="concurrent maximum-size bodies (0 skips)")
    ap.add_argument("--body-mib", type=float, default=3.0)
    ap.add_argument("--flood-clients", type=int, default=100)
    ap.add_argument("--containers", type=int, default=64)
    ap.add_argument("--slow", type=int, default=3000, help="slow connections held beside the flood")
    ap.add_argument("--probes", type=int, default=20, help="must-deny probes during the flood (0 skips)")
    ap.add_argument("--flood-seconds", type=float, default=10.0)
    ap.add_argument("--rss-limit-mib", type=float, default=512.0)
    ap.add_argument("--log", default=None, help="keep the webhook's log at this path")
    a = ap.parse_args(argv)
    _raise_fd_limit(a.bodies + a.slow + a.flood_clients + 1024)
    with tempfile.TemporaryDirectory() as d:
        cert, key = Path(d) / "tls.crt", Path(d) / "tls.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = Path(d) / "webhook.log"
        with log.open("w") as out:
            server = subprocess.Popen([sys.executable, "-m", "configurator.cli.main", "webhook", "--host", "127.0.0.1",
                                       "--port", str(port), "--tls-cert-file", str(cert), "--tls-private-key-file",
                                       str(key)], stdout=out, stderr=subprocess.STDOUT)
        sampler = _RssSampler(server.pid)
        cpu0 = _cpu_s(server.pid)
        try:
            ctx = ssl.create_default_context(cafile=str(cert))
            for _ in range(150):
                if server.poll() is not None:
                    break
                try:
                    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    time.sleep(0.2)
            else:
                print("FAILED: the webhook did not become ready")
                return 1
            if server.poll() is not None:
                print(f"FAILED: the webhook exited at start (exit code {server.poll()})")
                return 1
            sampler.start()
            t0 = time.perf_counter()
            first = _phase(["bodies"], port, str(cert), vars(a), 600) if a.bodies else {}
            peak_bodies = sampler.peak_kib
            res = {}
            if a.probes:
                res = _phase(["flood", "slow", "probes"], port, str(cert), vars(a), a.flood_seconds + 120)
                res = {"flood": {**res, "probes": res.get("probes", [])}}
            took = time.perf_counter() - t0
            cpu = _cpu_s(server.pid) - cpu0
            crashed = server.poll()
            if a.log:
                import shutil

                shutil.copy(log, a.log)
        finally:
            sampler.stop.set()
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    failed = []
    peak = sampler.peak_kib / 1024
    print(f"webhook flood on loopback ({os.cpu_count()} CPUs, {took:.1f} s, {cpu:.1f} s of webhook CPU):")
    if "bodies" in first:
        b = first["bodies"]
        print(f"  {a.bodies} concurrent {a.body_mib:g} MiB bodies in {first['bodies_s']:.1f} s: {b['denied']} denied, "
              f"{b['allowed']} allowed, {b['closed']} closed unanswered, "
              f"{b['http-error']} HTTP errors "
              f"{b.get('statuses', '')}; "
              f"peak RSS {peak_bodies / 1024:.0f} MiB")
        if b["allowed"]:
            failed.append(f"{b['allowed']} big bodies naming vLLM allowed")
    if "flood" in res:
        f = res["flood"]
        probes = f["probes"]
        denied = [p for p in probes if p[0] == 200 and p[1] is False]
        worst = max((p[3] for p in probes), default=0)
        print(f"  flood: {f['flood']} reviews of {a.containers}-container pods from {a.flood_clients} clients "
              f"({f['flood-denied']} denied), {f['slow-connects']} slow connections made ({a.slow} at once)")
        print(f"  probes: {len(denied)}/{len(probes)} must-deny probes denied by the webhook (HTTP 200, allowed "
              f"false), slowest {worst * 1000:.0f} ms")
        for p in probes:
            if p not in denied:
                print(f"    probe answered HTTP {p[0]}, allowed {p[1]}: {p[2]}")
        if len(denied) != len(probes):
            failed.append(f"{len(probes) - len(denied)} of {len(probes)} probes not denied by the webhook")
    print(f"  peak RSS {peak:.0f} MiB (limit {a.rss_limit_mib:g} MiB)")
    if peak >= a.rss_limit_mib:
        failed.append(f"peak RSS {peak:.0f} MiB at or over {a.rss_limit_mib:g} MiB")
    if crashed is not None:
        failed.append(f"the webhook exited during the flood (exit code {crashed})")
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
