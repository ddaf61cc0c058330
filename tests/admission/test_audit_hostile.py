"""`audit` against a fake API server on loopback that answers badly: wrong shapes, refusals, silence."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from configurator.admission import audit

GOOD_POD = {"metadata": {"name": "p", "namespace": "ml"},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1",
                                     "args": ["--model", "Qwen/Qwen3-8B"]}]}}


def _kubeconfig(folder, server):
    cfg = folder / "config"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    return cfg


class Fake:
    """A loopback API server whose answer for pods is set per test; every other list is empty."""

    def __init__(self):
        self.pods = (200, json.dumps({"kind": "List", "items": [GOOD_POD]}).encode(), {})
        self.everything = None  # (status, body, headers) for every path, when set
        self.calls = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.calls += 1
                path = self.path.split("?", 1)[0]
                if fake.everything is not None:
                    status, body, headers = fake.everything
                elif path.endswith("/pods"):
                    status, body, headers = fake.pods
                elif path.rsplit("/", 1)[-1] in audit.CORE:
                    status, body, headers = 200, b'{"kind": "List", "items": []}', {}
                else:
                    status, body, headers = 404, b'{"kind": "Status", "code": 404}', {}
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    f = Fake()
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path, f.url)))
    yield f
    f.server.shutdown()


def _check(run_cli, *args):
    res = run_cli("audit", "--format", "json", *args)
    assert "Traceback" not in res.output
    return res


def test_a_good_answer_is_audited(fake, run_cli):
    res = _check(run_cli)
    assert res.exit_code in (0, 1) and json.loads(res.stdout)["servers"]


@pytest.mark.parametrize("body, says", [
    (b"[]", "not a Kubernetes list"),
    (b'{"items": "pods"}', "items is not a list"),
    (b'{"items": [null]}', "items[0]"),
    (json.dumps({"items": [{**GOOD_POD, "metadata": {"name": "p", "labels": ["a"]}}]}).encode(), "labels"),
    (json.dumps({"items": [{**GOOD_POD, "metadata": True}]}).encode(), "metadata"),
    (json.dumps({"items": [{**GOOD_POD, "spec": "x"}]}).encode(), "spec"),
    (b'{"items": [' + b"[" * 5000 + b"]" * 5000 + b"]}", "nested"),
    (b'{"items": [{"x": ' + b"[" * 300 + b"]" * 300 + b"}]}", "nested deeper"),
    (b'{"items": [{"x": ' + b"9" * 5000 + b"}]}", "out of range"),
    (b"<html>", "not JSON"),
])
def test_wrong_shapes_are_one_line_and_exit_2(fake, run_cli, body, says):
    fake.pods = (200, body, {})
    res = _check(run_cli)
    # one line on stderr; under --format json the same error as an object on stdout (schemas/error.schema.json)
    assert res.exit_code == 2 and says in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert json.loads(res.stdout)["error"]["exit_code"] == 2


@pytest.mark.parametrize("status", [401, 403])
def test_refusals_everywhere_exit_2_naming_what_was_denied(fake, run_cli, status):
    fake.everything = (status, b'{"kind": "Status"}', {})
    res = _check(run_cli)
    assert res.exit_code == 2 and "refused to list nodes" in res.stderr
    assert set(json.loads(res.stdout)) == {"error"}  # no report: only the error object under --format json


def test_404_on_a_core_resource_is_not_a_clean_report(fake, run_cli):
    fake.pods = (404, b"{}", {})
    res = _check(run_cli)
    assert res.exit_code == 2 and "404" in res.output


def test_retry_after_is_honoured_up_to_its_cap(fake, run_cli, monkeypatch):
    fake.pods = (429, b"{}", {"Retry-After": "3600"})
    t0 = time.time()
    res = _check(run_cli)
    assert res.exit_code == 2 and "3600" in res.output and time.time() - t0 < 5
    slept = []
    monkeypatch.setattr(audit.time, "sleep", slept.append)
    fake.pods = (503, b"{}", {"Retry-After": "1"})
    res = _check(run_cli)
    assert res.exit_code == 2 and slept == [1.0] * (audit.MAX_ATTEMPTS - 1)


def test_a_server_that_never_answers_ends_within_the_timeout(tmp_path, monkeypatch, run_cli):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections (the kernel does), never answers
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}")))
    monkeypatch.setattr(audit, "READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(audit, "ANSWER_TIMEOUT_S", 1.0)
    t0 = time.time()
    try:
        res = _check(run_cli)
    finally:
        silent.close()
    assert res.exit_code == 2 and time.time() - t0 < 4


def test_a_trickling_server_hits_the_answer_deadline(tmp_path, monkeypatch, run_cli):
    stop = threading.Event()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def trickle():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{")
            while not stop.is_set():
                time.sleep(0.1)
                try:
                    conn.sendall(b" ")
                except OSError:
                    break

    threading.Thread(target=trickle, daemon=True).start()
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path, f"http://127.0.0.1:{srv.getsockname()[1]}")))
    monkeypatch.setattr(audit, "ANSWER_TIMEOUT_S", 1.0)
    t0 = time.time()
    try:
        res = _check(run_cli)
    finally:
        stop.set()
        srv.close()
    assert res.exit_code == 2 and "did not answer" in res.output and time.time() - t0 < 4


@pytest.mark.parametrize("text", ["::: not yaml", "[]", "clusters: 3", "apiVersion: v1\nkind: Config\n"
                                  "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                  "clusters: [{name: c, cluster: [1]}]\nusers: [{name: u, user: 5}]\n"])
def test_a_malformed_kubeconfig_is_one_line_and_exit_2(tmp_path, monkeypatch, run_cli, text):
    cfg = tmp_path / "config"
    cfg.write_text(text)
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    res = _check(run_cli)
    assert res.exit_code == 2 and "cluster configuration" in res.output


def test_an_object_the_rules_cannot_read_is_reported_and_the_others_checked(fake, run_cli, monkeypatch):
    from configurator.lint import engine

    real = engine.evaluate

    def picky(docs, problems, opts):
        if any(d.data["metadata"].get("name") == "bad" for d in docs):
            raise TypeError("a shape the rules did not expect")
        return real(docs, problems, opts)

    monkeypatch.setattr(audit, "evaluate", picky)
    bad = {**GOOD_POD, "metadata": {"name": "bad", "namespace": "ml"}}
    fake.pods = (200, json.dumps({"items": [GOOD_POD, bad]}).encode(), {})
    res = _check(run_cli)
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and [s["object"]["name"] for s in report["servers"]] == ["p"]
    assert any(f["rule"] == "parse-error" and "Pod/ml/bad" in f["file"] for f in report["findings"])
