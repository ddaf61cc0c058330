"""The webhook serves HTTPS unless told otherwise: no certificate is a one-line usage error (exit 2) naming
the options; `--insecure-http` serves plain HTTP with a warning; the start is logged with its address and
mode, and each review is logged once."""

import http.client
import json
import subprocess
import sys
import time

from tests.admission.conftest import free_port, start_webhook, stop_webhook

REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "tls-1", "operation": "CREATE",
                      "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}}}


def test_no_certificate_is_a_usage_error(run_cli):
    res = run_cli("webhook", "--host", "127.0.0.1", "--port", str(free_port()))
    assert res.exit_code == 2 and "Traceback" not in res.output
    line = res.output.strip()
    assert "\n" not in line
    assert "--tls-cert-file" in line and "--tls-private-key-file" in line and "--insecure-http" in line


def _log(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_https_start_logs_address_and_mode_and_each_review_once(tmp_path):
    hook = start_webhook(tmp_path)
    try:
        status, body = hook.post(REVIEW)
        assert status == 200 and body["response"]["uid"] == "tls-1"
        time.sleep(0.3)
        lines = _log(hook.log)
    finally:
        stop_webhook(hook)
    start = next(x for x in lines if x.get("event") == "listening")
    assert start["mode"] == "https" and start["address"] == f"https://127.0.0.1:{hook.port}/validate"
    assert start["level"] == "info"
    reviews = [x for x in lines if x.get("uid") == "tls-1" or "tls-1" in str(x.get("message", ""))]
    assert len(reviews) == 1, reviews
    assert not any(x.get("logger") == "uvicorn.access" for x in lines)


def test_insecure_http_serves_plain_http_with_a_warning(tmp_path):
    port = free_port()
    log = tmp_path / "hook.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "configurator.cli.main", "webhook", "--host", "127.0.0.1",
                                 "--port", str(port), "--insecure-http"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline, status = time.time() + 30, None
        while time.time() < deadline and status != 200:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/readyz")
                status = c.getresponse().status
                c.close()
            except OSError:
                time.sleep(0.2)
        assert status == 200, log.read_text()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/validate", body=json.dumps(REVIEW), headers={"Content-Type": "application/json"})
        assert json.loads(c.getresponse().read())["response"]["allowed"] is True
        c.close()
    finally:
        proc.terminate()
        proc.wait(30)
    start = next(x for x in _log(log) if x.get("event") == "listening")
    assert start["level"] == "warning" and start["mode"] == "insecure-http"
    assert start["address"] == f"http://127.0.0.1:{port}/validate"
