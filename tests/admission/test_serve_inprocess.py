"""`serve` in-process on loopback (a thread), so coverage measures the wiring: TLS, the connection cap,
the header deadline, certificate rotation and a clean stop."""

import contextlib
import hashlib
import http.client
import json
import socket
import ssl
import threading
import time

import pytest

from configurator.admission.server import WebhookSettings, serve
from tests.admission.conftest import Webhook, free_port, make_cert


@contextlib.contextmanager
def _serving(tmp_path, settings):
    """`serve` in a thread on a free loopback port with a fresh certificate, ready; stopped after."""
    cert, key = make_cert(tmp_path)
    port = free_port()
    box = {}
    t = threading.Thread(target=serve, args=(settings,), daemon=True,
                         kwargs={"host": "127.0.0.1", "port": port, "cert": str(cert), "key": str(key),
                                 "reload_every_s": 1, "log_setup": False, "on_start": lambda s: box.update(s=s)})
    t.start()
    hook = Webhook(port, cert, None, tmp_path / "none.log")
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if hook.get("/readyz")[0] == 200:
                break
        except (OSError, ssl.SSLError):
            time.sleep(0.1)
    try:
        yield hook
    finally:
        box["s"].should_exit = True
        t.join(30)
    assert not t.is_alive()


@pytest.fixture
def live(tmp_path):
    with _serving(tmp_path, WebhookSettings(max_connections=2, header_timeout_s=0.5, handshake_timeout_s=0.5,
                                            keep_alive_s=1)) as hook:
        yield hook


def _fingerprint(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port)) as raw, ctx.wrap_socket(raw, server_hostname="x") as tls:
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def test_guards_and_rotation_in_process(live):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "a", "object": {"kind": "ConfigMap", "metadata": {"name": "c"}}}}
    status, body = live.post(review)
    assert status == 200 and body["response"]["allowed"] is True
    # headers that never finish: closed after the header deadline
    tls = live.context().wrap_socket(socket.create_connection(("127.0.0.1", live.port)), server_hostname="localhost")
    tls.sendall(b"POST /validate HTTP/1.1\r\n")
    tls.settimeout(3)
    t0 = time.time()
    assert tls.recv(10) == b"" and time.time() - t0 < 2.5
    tls.close()
    # past the connection cap (2): the extra connections are closed at once
    held = [live.context().wrap_socket(socket.create_connection(("127.0.0.1", live.port)),
                                       server_hostname="localhost") for _ in range(4)]
    closed = 0
    for s in held:
        s.settimeout(0.3)
        try:
            closed += s.recv(1) == b""
        except TimeoutError:
            pass
        except OSError:
            closed += 1
    for s in held:
        s.close()
    assert closed >= 2
    time.sleep(0.6)  # the held ones reach their header deadline
    before = _fingerprint(live.port)
    make_cert(live.cert.parent, cn="rotated.localhost")
    deadline = time.time() + 5
    while _fingerprint(live.port) == before and time.time() < deadline:
        time.sleep(0.2)
    assert _fingerprint(live.port) != before
    assert json.loads(json.dumps(live.get("/healthz"))) == [200, "ok"]


def test_a_client_over_its_share_is_refused_before_the_handshake(tmp_path):
    """One client address holds at most max_connections_per_client connections (handshakes under way
    included); another address is still served."""
    settings = WebhookSettings(max_connections_per_client=2, header_timeout_s=5, handshake_timeout_s=5)
    with _serving(tmp_path, settings) as hook:
        port = hook.port
        held, refused = [], 0
        for _ in range(4):
            raw = socket.create_connection(("127.0.0.1", port), timeout=3)
            try:
                held.append(hook.context().wrap_socket(raw, server_hostname="localhost"))
            except (OSError, ssl.SSLError):
                refused += 1
                raw.close()
        assert len(held) == 2 and refused == 2
        # another client address: served, and answered with a verdict
        other = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0))
        tls = hook.context().wrap_socket(other, server_hostname="localhost")
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"uid": "o", "object": {"kind": "ConfigMap", "metadata": {"name": "c"}}}})
        tls.sendall(f"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode())
        assert b" 200 " in tls.recv(4096).split(b"\r\n")[0]
        tls.close()
        for s in held:
            s.close()


def _h11_bases():
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return (H11Protocol,)


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_either_http_parser_answers_and_caps_a_request_head(tmp_path, monkeypatch, parser):
    """httptools when installed (the webhook extra installs it), h11 without it: both answer reviews, and both
    refuse a request whose head is over max_header_bytes without passing it to the app."""
    from configurator.admission import server as srv

    if parser == "httptools":
        pytest.importorskip("httptools")
    else:
        monkeypatch.setattr(srv, "http_protocol", _h11_bases)
    with _serving(tmp_path, WebhookSettings(max_header_bytes=8 << 10, keep_alive_s=1)) as hook:
        pod = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        review = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                             "request": {"uid": "u-1", "operation": "CREATE", "object": pod}}).encode()
        status, body = hook.post(review)
        assert status == 200 and body["response"] == {"uid": "u-1", "allowed": True}
        c = hook.conn()
        c.putrequest("POST", "/validate")
        for i in range(160):  # the same review behind 64 KiB of headers
            c.putheader(f"x-filler-{i}", "y" * 400)
        c.putheader("Content-Length", str(len(review)))
        try:
            c.endheaders(review)
            status = c.getresponse().status
        except (OSError, http.client.HTTPException):
            status = None  # closed while it was sent or before an answer: refused too
        assert status in (None, 400, 431)
        assert hook.get("/healthz")[0] == 200  # the webhook goes on serving


def test_a_response_leaves_in_one_write_and_close_sends_what_is_pending():
    """uvicorn writes a response's head and body apart; _OneWrite joins the writes of one loop turn, so over TLS
    an answer is one record and one send; close() and abort() never lose or reorder what was written."""
    import asyncio

    from configurator.admission.server import _OneWrite

    class Transport:
        def __init__(self):
            self.writes, self.closed, self.aborted = [], False, False

        def write(self, data):
            self.writes.append(data)

        def is_closing(self):
            return self.closed or self.aborted

        def close(self):
            self.closed = True

        def abort(self):
            self.aborted = True

        def get_extra_info(self, name):
            return ("127.0.0.1", 1) if name == "peername" else None

        def get_write_buffer_size(self):
            return 0

    async def go():
        t = Transport()
        w = _OneWrite(t, asyncio.get_running_loop())
        w.write(b"HTTP/1.1 200 OK\r\n\r\n")
        w.write(b"")
        w.write(b'{"a": 1}')
        assert t.writes == [] and w.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\n{\"a\": 1}")
        await asyncio.sleep(0)
        assert t.writes == [b'HTTP/1.1 200 OK\r\n\r\n{"a": 1}']
        w.write(b"last")
        w.close()  # what is pending goes before the close
        assert t.writes[-1] == b"last" and t.closed
        await asyncio.sleep(0)
        assert len(t.writes) == 2
        t2 = Transport()
        w2 = _OneWrite(t2, asyncio.get_running_loop())
        w2.write(b"dropped")
        w2.abort()
        await asyncio.sleep(0)
        assert t2.writes == [] and t2.aborted
        assert w2.get_extra_info("peername") == ("127.0.0.1", 1)  # everything else is the transport's own

    asyncio.run(go())


def test_gil_hand_over_is_short_while_serving_and_restored_after(tmp_path):
    """Worker threads must not keep the event loop waiting 5 ms per socket call (a must-deny review waited 4-8 s
    behind a flood): while `serve` runs, the GIL's switch interval is the settings' value; after, it is as before."""
    import sys

    before = sys.getswitchinterval()
    with _serving(tmp_path, WebhookSettings(switch_interval_s=0.0007)) as hook:
        assert hook.get("/healthz")[0] == 200
        assert sys.getswitchinterval() == pytest.approx(0.0007)
    assert sys.getswitchinterval() == pytest.approx(before)
