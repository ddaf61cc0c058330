"""The webhook over real HTTPS on loopback under hostile load, with bounded counts and times: idle and
slow clients, a connection flood, a heavy-pod flood with probe reviews, and its option checks."""

import contextlib
import http.client
import json
import resource
import socket
import threading
import time

import pytest
import yaml

from tests.admission.conftest import free_port, start_webhook, stop_webhook
from tests.conftest import ROOT

MEMORY_LIMIT_BYTES = 512 << 20  # charts/vllm-configurator-webhook: resources.limits.memory
IDLE_CONNECTIONS = 3000


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _review(obj, uid):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": "ml", "object": obj}}


def _denied_object():
    path = ROOT / "tests" / "manifests" / "docs-example-too-long.yaml"
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") != "ConfigMap")


@pytest.fixture(scope="module")
def hook(tmp_path_factory):
    h = start_webhook(tmp_path_factory.mktemp("hold"), "--header-timeout", "1", "--body-timeout", "1",
                      "--keep-alive", "2", "--max-connections", "1000")
    yield h
    stop_webhook(h)


def test_idle_connection_flood_stays_under_the_memory_limit_and_probes_are_answered(hook):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_CONNECTIONS + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, IDLE_CONNECTIONS + 1000), hard))
    socks, peak = [], 0
    try:
        for i in range(IDLE_CONNECTIONS):
            s = socket.create_connection(("127.0.0.1", hook.port), timeout=5)
            if i % 10 == 0:  # a tenth finish the TLS handshake and then say nothing
                # an SSLError (the server's handshake deadline passed first) is a guard working too
                with contextlib.suppress(OSError):
                    s = hook.context().wrap_socket(s, server_hostname="localhost")
            socks.append(s)
        t0 = time.time()
        while time.time() - t0 < 1.0:
            peak = max(peak, _rss(hook.proc.pid))
            time.sleep(0.1)
        # a real review from another client (the API server) is answered while the connections are held; the
        # flood's own address is past its per-client share (256), so it gets nothing more
        c = http.client.HTTPSConnection("127.0.0.1", hook.port, context=hook.context(), timeout=10,
                                        source_address=("127.0.0.2", 0))
        c.request("POST", "/validate", body=json.dumps(_review(_denied_object(), "probe")),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        status, body = r.status, json.loads(r.read())
        c.close()
        assert status == 200 and body["response"]["allowed"] is False
        # the guards close idle connections: handshake and header deadlines (1 s here)
        time.sleep(1.5)
        peak = max(peak, _rss(hook.proc.pid))
        closed = 0
        for s in socks[::50]:
            try:  # a socket whose handshake the server refused was closed under it (EBADF)
                s.settimeout(2)
                closed += s.recv(1) == b""
            except (ConnectionResetError, OSError):
                closed += 1
        assert closed == len(socks[::50])
    finally:
        for s in socks:
            s.close()
    print(f"\nRSS peak with {IDLE_CONNECTIONS} idle connections: {peak / (1 << 20):.0f} MiB")
    assert peak < MEMORY_LIMIT_BYTES
    assert hook.get("/healthz") == (200, "ok")


def test_slowloris_headers_are_cut_off(hook):
    tls = hook.context().wrap_socket(socket.create_connection(("127.0.0.1", hook.port)), server_hostname="localhost")
    tls.settimeout(0.2)
    tls.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
    t0 = time.time()
    closed = False
    while time.time() - t0 < 5 and not closed:
        try:
            tls.sendall(b"X-a: b\r\n")
            closed = tls.recv(1) == b""
        except TimeoutError:
            continue
        except OSError:
            closed = True
    tls.close()
    assert closed and time.time() - t0 < 3


def test_heavy_pod_flood_never_gets_a_probe_allowed(hook):
    # heavy: 60 different vLLM servers in one pod (each evaluated) padded past the heavy-lane size
    base = _denied_object()
    spec = base["spec"]["template"]["spec"]
    heavy_containers = []
    for i in range(60):
        c = json.loads(json.dumps(spec["containers"][0]))
        c["name"] = f"c{i}"
        c["args"] = [*[str(a) for a in c.get("args", [])], "--max-num-seqs", str(8 + i)]
        heavy_containers.append(c)
    heavy = json.loads(json.dumps(base))
    heavy["spec"]["template"]["spec"]["containers"] = heavy_containers
    heavy["metadata"]["annotations"] = {"pad": "x" * (1 << 20)}
    huge = json.loads(json.dumps(base))  # the attack as reported: 17,000 containers (~2 MB, under the body cap)
    first = spec["containers"][0]
    huge["spec"]["template"]["spec"]["containers"] = [
        {"name": f"c{i}", "image": first["image"], "args": first.get("args", [])} for i in range(17_000)]
    bodies = [json.dumps(_review(heavy, "heavy")).encode(), json.dumps(_review(huge, "huge")).encode()]
    stop = threading.Event()
    flood_status: dict[int, int] = {}

    def flood():
        n = 0
        while not stop.is_set():
            n += 1
            try:
                status, _ = hook.post(bodies[n % 2])
            except OSError:
                status = -1
            flood_status[status] = flood_status.get(status, 0) + 1

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    outcomes = []
    try:
        time.sleep(0.5)
        for i in range(10):
            t0 = time.time()
            status, body = hook.post(_review(base, f"probe-{i}"))
            outcomes.append((status, body["response"]["allowed"] if status == 200 else None, time.time() - t0))
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    print(f"\nprobes under a heavy-pod flood: {outcomes}; flood answers: {flood_status}")
    for status, allowed, seconds in outcomes:
        assert (status == 200 and allowed is False) or status in (429, 503)
        assert seconds < 5  # the chart's timeoutSeconds
    assert sum(flood_status.values()) > 0


def test_options_are_checked(run_cli):
    for args in (["--port", "70000"], ["--port", "0"], ["--budget", "0"], ["--budget", "-1"],
                 ["--cert-reload-interval", "0"], ["--max-connections", "0"]):
        res = run_cli("webhook", *args)
        assert res.exit_code == 2, args


def test_bind_errors_are_one_line_and_exit_2(run_cli, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        res = run_cli("webhook", "--host", "127.0.0.1", "--port", str(busy.getsockname()[1]), "--insecure-http")
    assert res.exit_code == 2 and "cannot listen on" in res.output and "Traceback" not in res.output
    res = run_cli("webhook", "--host", "no-such-host.invalid", "--port", str(free_port()), "--insecure-http")
    assert res.exit_code == 2 and "cannot listen on" in res.output
    res = run_cli("webhook", "--port", str(free_port()), "--tls-cert-file", "/nonexistent.crt",
                  "--tls-private-key-file", "/nonexistent.key")
    assert res.exit_code == 2 and "certificate" in res.output


def test_every_log_line_is_json(hook):
    hook.post(_review(_denied_object(), "logged"))
    lines = [json.loads(line) for line in hook.log.read_text().splitlines() if line.strip()]
    assert any(x.get("logger") == "uvicorn.error" for x in lines)  # uvicorn's own start line, as JSON
    review = next(x for x in lines if x.get("uid") == "logged")
    assert review["namespace"] == "ml" and review["verdict"] == "denied"
