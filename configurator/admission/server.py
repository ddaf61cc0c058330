"""The validating webhook: a small ASGI app served by uvicorn over HTTPS.

uvicorn (a production ASGI server) does HTTP and TLS; this module only routes: POST /validate
(AdmissionReview), GET /healthz, /readyz, /metrics (Prometheus). The certificate and key are re-read
when they change on disk (cert-manager rotates them) into the live SSL context, so new connections get
the new certificate without a restart. A body-size limit, a body-read timeout and a per-request time
budget protect it; uvicorn shuts down gracefully on SIGTERM. Logs are one JSON object per line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from configurator.admission.review import ReviewError, parse_review, response, verdict_for
from configurator.lint.engine import Options

log = logging.getLogger("vllm_configurator.webhook")


@dataclass
class WebhookSettings:
    options: Options = field(default_factory=Options)
    on_error: Literal["deny", "warn"] = "deny"  # what an error finding does
    on_failure: Literal["deny", "allow"] = "allow"  # what a timeout or internal failure does
    max_body_bytes: int = 3 << 20  # the API server's objects are at most ~1.5 MiB
    body_timeout_s: float = 5.0
    budget_s: float = 2.0  # per-request evaluation budget (keep below the webhook's timeoutSeconds)


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("vllm_configurator_admission_requests", "AdmissionReview requests by verdict",
                                ["verdict"], registry=self.registry)
        self.latency = Histogram("vllm_configurator_admission_latency_seconds", "Time to answer a review",
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5),
                                 registry=self.registry)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class WebhookApp:
    """The ASGI application."""

    def __init__(self, settings: WebhookSettings) -> None:
        self.s = settings
        self.metrics = _Metrics()
        self.ready = False

    def warm_up(self) -> None:
        """Load catalogs and profiles once, before the first review (readyz turns green after)."""
        verdict_for({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warm-up"},
                     "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest",
                                              "args": ["vllm", "serve", "Qwen/Qwen3-0.6B"]}]}}, self.s.options)
        self.ready = True

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await asyncio.to_thread(self.warm_up)
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/healthz":
            return await _send(send, 200, b"ok", "text/plain")
        if path == "/readyz":
            return await _send(send, 200 if self.ready else 503, b"ok" if self.ready else b"warming up", "text/plain")
        if path == "/metrics":
            return await _send(send, 200, self.metrics.render(), "text/plain; version=0.0.4")
        if path != "/validate":
            return await _send(send, 404, b'{"error": "not found"}')
        if method != "POST":
            return await _send(send, 405, b'{"error": "POST an AdmissionReview"}')
        await self._validate(scope, receive, send)

    async def _validate(self, scope: dict, receive: Any, send: Any) -> None:
        t0 = time.perf_counter()
        headers = dict(scope.get("headers") or [])
        try:
            declared = int(headers.get(b"content-length", b"0") or 0)
        except ValueError:
            declared = 0
        if declared > self.s.max_body_bytes:
            return await self._reject(send, 413, f"body of {declared} bytes exceeds {self.s.max_body_bytes}", t0)
        try:
            body = await asyncio.wait_for(self._read(receive), self.s.body_timeout_s)
        except asyncio.TimeoutError:
            return await self._reject(send, 408, "request body not received in time", t0)
        except _TooLarge:
            return await self._reject(send, 413, f"body exceeds {self.s.max_body_bytes} bytes", t0)
        try:
            uid, obj, dry_run = parse_review(json.loads(body))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return await self._reject(send, 400, "body is not JSON", t0)
        except ReviewError as e:
            return await self._reject(send, 400, str(e), t0)
        try:
            v = await asyncio.wait_for(asyncio.to_thread(verdict_for, obj, self.s.options, self.s.on_error),
                                       self.s.budget_s)
            out = response(uid, v)
            verdict = "denied" if not v.allowed else ("warned" if v.warnings else "allowed")
        except Exception as e:
            why = "timed out" if isinstance(e, asyncio.TimeoutError) else f"internal error: {type(e).__name__}"
            allowed = self.s.on_failure == "allow"
            out = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": {"uid": uid, "allowed": allowed,
                                **({"warnings": [f"vllm-configurator not applied: {why}"]} if allowed else
                                   {"status": {"code": 500, "message": f"vllm-configurator: {why}"}})}}
            verdict, v = ("failed-open" if allowed else "failed-closed"), None
            log.warning(json.dumps({"event": "review-failed", "uid": uid, "reason": why}))
        dt = time.perf_counter() - t0
        self.metrics.requests.labels(verdict).inc()
        self.metrics.latency.observe(dt)
        meta = (obj or {}).get("metadata") or {}
        log.info(json.dumps({"event": "review", "uid": uid, "kind": (obj or {}).get("kind"), "name": meta.get("name"),
                             "namespace": meta.get("namespace"), "verdict": verdict, "dry_run": dry_run,
                             "rules": sorted({f.rule for f in v.findings}) if v else [],
                             "ms": round(dt * 1000, 2)}))
        await _send(send, 200, json.dumps(out).encode())

    async def _read(self, receive: Any) -> bytes:
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise asyncio.TimeoutError
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.s.max_body_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not msg.get("more_body"):
                return b"".join(chunks)

    async def _reject(self, send: Any, code: int, why: str, t0: float) -> None:
        self.metrics.requests.labels(f"rejected-{code}").inc()
        self.metrics.latency.observe(time.perf_counter() - t0)
        log.info(json.dumps({"event": "rejected", "code": code, "reason": why}))
        await _send(send, code, json.dumps({"error": why}).encode())


class _TooLarge(Exception):
    pass


async def _send(send: Any, status: int, body: bytes, ctype: str = "application/json") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _watch_certificate(config: Any, cert: str, key: str, every_s: float = 2.0) -> None:
    """Reload the certificate into the live SSL context when either file changes on disk."""
    def stamp() -> tuple[float, float]:
        return os.stat(cert).st_mtime_ns, os.stat(key).st_mtime_ns

    last = stamp()
    while True:
        await asyncio.sleep(every_s)
        try:
            now = stamp()
            if now != last:
                config.ssl.load_cert_chain(cert, key)
                last = now
                log.info(json.dumps({"event": "certificate-reloaded", "cert": cert}))
        except (OSError, ValueError) as e:  # mid-rotation: try again next tick
            log.warning(json.dumps({"event": "certificate-reload-failed", "error": str(e)}))


def serve(settings: WebhookSettings, *, host: str, port: int, cert: str | None, key: str | None,
          reload_every_s: float = 2.0) -> None:
    """Run the webhook until SIGTERM / SIGINT (uvicorn handles both gracefully)."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = uvicorn.Config(WebhookApp(settings), host=host, port=port, ssl_certfile=cert, ssl_keyfile=key,
                            log_config=None, access_log=False, lifespan="on", timeout_keep_alive=30,
                            timeout_graceful_shutdown=20, h11_max_incomplete_event_size=64 * 1024)
    config.load()
    server = uvicorn.Server(config)

    async def main() -> None:
        watcher = asyncio.create_task(_watch_certificate(config, cert, key, reload_every_s)) if cert and key else None
        try:
            await server.serve()
        finally:
            if watcher:
                watcher.cancel()

    asyncio.run(main())
