"""The webhook serves HTTPS unless told otherwise: no certificate is a one-line usage error (exit 2) naming
the options; `--insecure-http` serves plain HTTP with a warning; the start is logged with its address and
mode, and each review is logged once."""

import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

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


def test_the_readme_trial_runs_as_written(tmp_path):
    """README's "Try the webhook locally": its three commands, run as written (a free port in place of
    8443, the module in place of the installed script), end in a denial of the body it names."""
    import re
    import shlex
    import shutil

    from tests.conftest import ROOT

    text = (ROOT / "README.md").read_text()
    section = text.split("### Try the webhook locally", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    cert_cmd, start_cmd, curl_cmd = [line for line in block.splitlines() if line.strip()]
    port = str(free_port())
    subprocess.run(shlex.split(cert_cmd), cwd=tmp_path, check=True, capture_output=True)
    start = shlex.split(start_cmd.rstrip("& ").replace("8443", port))
    assert start[0] == "vllm-configurator"
    log = (tmp_path / "hook.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "configurator.cli.main", *start[1:]], cwd=tmp_path,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        curl = shlex.split(curl_cmd.replace("8443", port).replace("@tests/", f"@{ROOT}/tests/"))
        body_file = next(a for a in curl if a.startswith("@"))[1:]
        assert re.match(r".*/tests/.+\.json$", body_file) and Path(body_file).is_file()
        deadline = time.time() + 30
        out = None
        while time.time() < deadline:
            if shutil.which("curl"):
                res = subprocess.run(curl, cwd=tmp_path, capture_output=True, text=True)
                out = res.stdout if res.returncode == 0 else None
            else:  # the same request without curl
                import ssl

                ctx = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
                try:
                    c = http.client.HTTPSConnection("127.0.0.1", int(port), context=ctx, timeout=10)
                    c.request("POST", "/validate", body=Path(body_file).read_bytes(),
                              headers={"Content-Type": "application/json"})
                    out = c.getresponse().read().decode()
                except OSError:
                    out = None
            if out:
                break
            time.sleep(0.3)
        assert out, (tmp_path / "hook.log").read_text()
        resp = json.loads(out)["response"]
        assert resp["allowed"] is False and "Fix:" in resp["status"]["message"]
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
