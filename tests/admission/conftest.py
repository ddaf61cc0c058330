"""A real webhook process on a loopback port with a self-signed certificate."""

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest


def make_cert(folder: Path, cn: str = "localhost") -> tuple[Path, Path]:
    cert, key = folder / "tls.crt", folder / "tls.key"
    tmp_cert, tmp_key = folder / "new.crt", folder / "new.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_key),
                    "-out", str(tmp_cert), "-days", "1", "-subj", f"/CN={cn}",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    os.replace(tmp_key, key)  # atomic, as a mounted Secret updates
    os.replace(tmp_cert, cert)
    return cert, key


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Webhook:
    def __init__(self, port: int, cert: Path, proc: subprocess.Popen, log: Path):
        self.port, self.cert, self.proc, self.log = port, cert, proc, log

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.cert))
        return ctx

    def conn(self, timeout: float = 10) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(), timeout=timeout)

    def post(self, body: bytes | dict, path: str = "/validate") -> tuple[int, dict | str]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        c = self.conn()
        c.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        raw = r.read().decode()
        c.close()
        try:
            return r.status, json.loads(raw)
        except json.JSONDecodeError:
            return r.status, raw

    def get(self, path: str) -> tuple[int, str]:
        c = self.conn()
        c.request("GET", path)
        r = c.getresponse()
        out = r.status, r.read().decode()
        c.close()
        return out


def start_webhook(folder: Path, *extra: str) -> Webhook:
    """`vllm-configurator webhook` on a free loopback port, ready (or RuntimeError with its log)."""
    cert, key = make_cert(folder)
    port = free_port()
    log = folder / "webhook.log"
    exe = [sys.executable, "-m", "configurator.cli.main", "webhook", "--host", "127.0.0.1", "--port", str(port),
           "--tls-cert-file", str(cert), "--tls-private-key-file", str(key), *extra]
    with log.open("w") as out:
        proc = subprocess.Popen(exe, stdout=out, stderr=subprocess.STDOUT)
    hook = Webhook(port, cert, proc, log)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if hook.get("/readyz")[0] == 200:
                return hook
        except (OSError, ssl.SSLError):
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("webhook did not start:\n" + log.read_text())


def stop_webhook(hook: Webhook) -> None:
    hook.proc.terminate()
    try:
        hook.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        hook.proc.kill()
        hook.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def webhook(tmp_path_factory):
    hook = start_webhook(tmp_path_factory.mktemp("webhook"), "--body-timeout", "1", "--cert-reload-interval", "1")
    yield hook
    stop_webhook(hook)
