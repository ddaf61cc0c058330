"""The validating webhook: a small ASGI app served by uvicorn over HTTPS.

uvicorn (a production ASGI server) does HTTP (its httptools parser, h11 where httptools is not installed)
and TLS; this module only routes: POST /validate
(AdmissionReview), GET /healthz, /readyz, /metrics (Prometheus). The certificate and key are re-read
when they change on disk (cert-manager rotates them) into the live SSL context, so new connections get
the new certificate without a restart. uvicorn shuts down gracefully on SIGTERM. Every log line,
uvicorn's included, is one JSON object.

What holds it up under hostile or heavy traffic:
- connections: at most `max_connections` past the TLS handshake (this module's protocol closes
  connections beyond it; uvicorn's `limit_concurrency`, connections plus requests in flight, is set
  to twice that as a backstop that never decides first), a TLS handshake
  must finish within `handshake_timeout_s`, a request's headers must arrive within
  `header_timeout_s` of connecting or of the first byte after a response (the slowloris guard; uvicorn
  only times out keep-alive connections that have already served a request), idle keep-alive
  connections close after `keep_alive_s`, a request's head is capped at `max_header_bytes` (`_HeaderCap`;
  h11's incomplete-event size where h11 parses), and each
  TLS connection's read buffer is 16 KiB (asyncio's default is 256 KiB a connection, which is what made
  3,000 idle connections cost ~900 MB);
- connections per client address: at most `max_connections_per_client` (one noisy client cannot take
  the connections the API server needs);
- bodies: `max_body_bytes` (413) and `body_timeout_s` (408), and one memory budget for all bodies held
  at once (`memory_budget_bytes`): a body is counted against it before it is kept, read in chunks; one
  that does not fit is read through keeping only its first 64 KiB (where the API server writes the
  request's uid) and answered at once per the failure policy;
- reviews: a body up to `inline_body_bytes` is parsed (bounded, see shape.loads) on the event loop and
  answered there when its verdict is cached (`review.verdict_key`, looked up before the boundary walk); a
  response leaves in one TLS record and one send (`_OneWrite`); otherwise a review is evaluated in worker
  threads, in two lanes by cost (the containers the bounded parse counted; larger bodies are parsed in
  the heavy lane), so a flood of heavy objects cannot starve ordinary ones;
- overload: a lane that is full answers at once, with HTTP 200: an object that may hold a vLLM server
  gets the failure policy's answer (a denial by default, `--on-failure deny`), any other is allowed with
  a warning, so the API server's failurePolicy is not what decides; a review not finished within
  `budget_s` is answered the same way. Per-object work is bounded at the boundary (`review.assess`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import re
import socket
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from configurator.admission.review import (
    OnError,
    OnFailure,
    Request,
    ReviewError,
    Verdict,
    VerdictCache,
    assess,
    failure_verdict,
    may_serve,
    parse_request,
    response,
    verdict_key,
)
from configurator.admission.shape import MAX_COMMAND_CHARS, ShapeError, inspect, loads
from configurator.errors import InputError
from configurator.lint.engine import Options

log = logging.getLogger("vllm_configurator.webhook")

TLS_READ_BUFFER_BYTES = 16 << 10  # one TLS record's plaintext is at most 16 KiB (RFC 8446 5.1)


@dataclass
class WebhookSettings:
    options: Options = field(default_factory=Options)
    on_error: OnError = "deny"  # what an error finding does
    on_failure: OnFailure = "deny"  # what a review that cannot be completed does, for a vLLM server
    max_body_bytes: int = 3 << 20  # the API server's objects are at most ~1.5 MiB
    body_timeout_s: float = 5.0
    budget_s: float = 2.0  # per-review time budget (keep below the webhook's timeoutSeconds)
    max_connections: int = 1000
    max_connections_per_client: int = 256  # 0: no limit
    memory_budget_bytes: int = 96 << 20  # request bodies held at once, all connections together
    handshake_timeout_s: float = 5.0
    header_timeout_s: float = 5.0
    keep_alive_s: int = 30  # below the API server's 90 s idle timeout, so it reuses connections
    max_header_bytes: int = 16 << 10
    workers: int = 2  # threads for ordinary reviews
    queue: int = 64  # ordinary reviews admitted at once (running + waiting); more get the failure answer
    inline_body_bytes: int = 64 << 10  # bodies up to this are parsed on the event loop (a pod is ~2-30 KiB)
    heavy_containers: int = 8  # objects with more containers (or a longer command) go to the heavy lane
    large_body_bytes: int = 256 << 10  # kept for callers; bodies above inline_body_bytes go to the heavy lane
    large_workers: int = 1
    large_queue: int = 2
    cache_size: int = 4096  # verdicts kept by review.verdict_key
    switch_interval_s: float = 0.0005  # the GIL's hand-over interval while serving (see serve)


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("vllm_configurator_admission_requests", "AdmissionReview requests by verdict",
                                ["verdict"], registry=self.registry)
        self.latency = Histogram("vllm_configurator_admission_latency_seconds", "Time to answer a review",
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5),
                                 registry=self.registry)
        self.closed = Counter("vllm_configurator_admission_connections_closed",
                              "Connections closed by the server's guards", ["reason"], registry=self.registry)
        self.busy = Gauge("vllm_configurator_admission_reviews_in_flight", "Reviews admitted and not answered",
                          ["lane"], registry=self.registry)
        self._by_verdict: dict[str, Any] = {}  # the requests counter's child per verdict, looked up once

    def answered(self, verdict: str, seconds: float) -> None:
        child = self._by_verdict.get(verdict)
        if child is None:
            child = self._by_verdict[verdict] = self.requests.labels(verdict)
        child.inc()
        self.latency.observe(seconds)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _Lane:
    """A bounded pool of worker threads: at most `capacity` reviews admitted (running or waiting)."""

    def __init__(self, name: str, workers: int, capacity: int) -> None:
        self.name = name
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"review-{name}")
        self.capacity = capacity
        self.busy = 0
        self._lock = threading.Lock()

    def full(self) -> bool:
        return self.busy >= self.capacity

    def submit(self, fn: Any, *args: Any) -> Future | None:
        with self._lock:
            if self.busy >= self.capacity:
                return None
            self.busy += 1
        fut = self.pool.submit(fn, *args)
        fut.add_done_callback(self._release)  # when the work really ends, not when its answer is given
        return fut

    def _release(self, _fut: Future) -> None:
        with self._lock:
            self.busy -= 1


class _Budget:
    """Bytes of request bodies held at once, all connections together."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:  # the event loop's thread only: no lock
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n


# where the API server writes the request's uid: first in `request` (a bounded look, not a parse)
_UID = re.compile(rb'"uid"\s*:\s*"([A-Za-z0-9._:-]{1,256})"')
_SERVER_KIND = re.compile(rb'"kind"\s*:\s*"(Workspace|Model|RayService|RayCluster|RayJob|DynamoGraphDeployment|'
                          rb'StormService|LLMInferenceService|LLMInferenceServiceConfig|InferenceService|'
                          rb'ServingRuntime|ClusterServingRuntime)"')


class _Scan:
    """What a body that is not kept says of itself: the uid near its start, and whether it may name a server."""

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.mentions = False

    def feed(self, chunk: bytes) -> None:
        if len(self.head) < 64 << 10:
            self.head += chunk[:(64 << 10) - len(self.head)]
        if not self.mentions:
            window = (self.tail + chunk).lower()
            self.mentions = b"vllm" in window or _SERVER_KIND.search(window) is not None
            self.tail = window[-64:]

    def uid(self) -> str | None:
        m = _UID.search(self.head)
        return m.group(1).decode() if m else None


class _Progress:
    """What a worker has read so far (the timeout answer needs the uid)."""

    request: Request | None = None
    mentions_vllm: bool | None = None  # None until the boundary walk has finished
    shape: Any = None  # the boundary walk, when the event loop made it

    def seen(self, shape: Any) -> None:
        self.mentions_vllm = shape.mentions_vllm
        self.shape = shape


class WebhookApp:
    """The ASGI application."""

    def __init__(self, settings: WebhookSettings) -> None:
        self.s = settings
        if settings.options.memo is None:  # models and estimates computed once for the process's life
            settings.options = replace(settings.options, memo={})
        self.metrics = _Metrics()
        self.ready = False
        self.lanes = (_Lane("ordinary", settings.workers, settings.queue),
                      _Lane("heavy", settings.large_workers, settings.large_queue))
        self.cache = VerdictCache(settings.cache_size)
        self.budget = _Budget(settings.memory_budget_bytes)

    def warm_up(self) -> None:
        """Load catalogs and profiles once, before the first review (readyz turns green after)."""
        assess({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warm-up"},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest",
                                         "args": ["vllm", "serve", "Qwen/Qwen3-0.6B"]}]}}, self.s.options)
        self.ready = True

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await asyncio.to_thread(self.warm_up)
                    # what warm-up loaded (catalogs, profiles, ~40,000 objects) lives as long as the process: out
                    # of the collector's sight, a full collection no longer walks it (13-20 ms, a p99 spike)
                    gc.freeze()
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    for lane in self.lanes:
                        lane.pool.shutdown(wait=False, cancel_futures=True)
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
            return await _send(send, 405, b'{"error": "POST an AdmissionReview"}', allow=b"POST")
        await self._validate(scope, receive, send)

    def _work(self, body: bytes | None, progress: _Progress, key: bytes | None = None) -> Verdict:
        """In a worker thread: parse and check at the boundary (unless the event loop did), evaluate."""
        if progress.request is None:
            progress.request = parse_request(loads(body or b""))
        req = progress.request
        return assess(req.object, self.s.options, self.s.on_error, self.s.on_failure, on_shape=progress.seen,
                      cache=self.cache, key=key, shape=progress.shape)

    async def _validate(self, scope: dict, receive: Any, send: Any) -> None:
        """POST /validate: the body read within its bounds, then reviewed (`_review`)."""
        t0 = time.perf_counter()
        declared = _content_length(scope)
        if declared > self.s.max_body_bytes:
            return await self._reject(send, 413, f"body of {declared} bytes exceeds {self.s.max_body_bytes}", t0)
        held = [0]  # bytes of the budget this request holds
        got: list[bytes] = []  # what has arrived and is kept (its head answers a body that never finishes)
        try:
            try:
                body, scan = await self._read_within(receive, declared, held, got)
            except asyncio.TimeoutError:
                return await self._unfinished(send, got, t0)
            except _TooLarge:
                return await self._reject(send, 413, f"body exceeds {self.s.max_body_bytes} bytes", t0)
            if body is None:  # the memory budget could not hold it: answered from what was scanned
                assert scan is not None
                return await self._unkept(send, scan, t0)
            await self._review(send, body, held, t0)
        finally:
            if held[0]:
                self.budget.give(held[0])

    async def _unkept(self, send: Any, scan: _Scan, t0: float) -> None:
        """A body the memory budget could not hold: answered from its scanned head, per the failure policy."""
        uid = scan.uid()
        if uid is None:
            return await self._reject(send, 503, "request bodies at the memory budget; retry", t0, retry_after=True)
        v = failure_verdict("overloaded: request bodies at the webhook's memory budget", self.s.on_failure,
                            code=429, vllm=scan.mentions)
        await self._answer(send, Request(uid=uid, object=None, dry_run=False), v, t0)

    async def _review(self, send: Any, body: bytes, held: list[int], t0: float) -> None:
        """A small body is parsed here, once, and answered here when its verdict is cached (the cache is looked
        up before the boundary walk: see review.assess); the rest goes to a lane by its cost."""
        progress = _Progress()
        heavy = len(body) > self.s.inline_body_bytes
        if self.lanes[1].full() and (heavy or body.count(b'"image"') > self.s.heavy_containers):
            # heavy by its size or by the containers its bytes name (a bound, counted without parsing), and
            # the heavy lane is full: answered from a scan, without spending the event loop on a parse
            return await self._overloaded(send, self.lanes[1], progress, body, t0)
        key = None
        if not heavy:
            try:
                req = parse_request(loads(body))
            except (ShapeError, ReviewError) as e:
                return await self._reject(send, 400, str(e), t0)
            progress.request = req
            obj = req.object
            if not isinstance(obj, dict):
                return await self._answer(send, req, assess(obj, self.s.options, self.s.on_error,
                                                            self.s.on_failure), t0)
            key = verdict_key(obj, self.s.on_error)
            hit = self.cache.get(key) if key is not None else None
            if hit is not None:
                return await self._answer(send, req, hit, t0)
            shape = inspect(obj)
            progress.seen(shape)
            heavy = shape.containers > self.s.heavy_containers or shape.command_chars > MAX_COMMAND_CHARS // 8
            body = None  # parsed: the worker needs the object only
            release, held[0] = held[0], 0
            self.budget.give(release)
        await self._in_lane(send, self.lanes[heavy], body, progress, key, held, t0)

    async def _in_lane(self, send: Any, lane: _Lane, body: bytes | None, progress: _Progress, key: bytes | None,
                       held: list[int], t0: float) -> None:
        """Evaluated by a worker of `lane` within the review budget; a full lane or a missed budget is answered at
        once, per the failure policy."""
        fut = lane.submit(self._work, body, progress, key)
        if fut is None:
            return await self._overloaded(send, lane, progress, body, t0)
        if held[0]:  # the body stays held until the worker is done with it
            n, held[0] = held[0], 0
            loop = asyncio.get_running_loop()
            fut.add_done_callback(lambda _f: loop.call_soon_threadsafe(self.budget.give, n))
        self.metrics.busy.labels(lane.name).set(lane.busy)
        try:
            v = await asyncio.wait_for(asyncio.wrap_future(fut), self.s.budget_s)
        except (ShapeError, ReviewError) as e:
            return await self._reject(send, 400, str(e), t0)
        except asyncio.TimeoutError:
            if progress.request is None:  # a large body still waiting for a worker: answered from a scan
                return await self._overloaded(send, lane, progress, body, t0,
                                              f"review not started within {self.s.budget_s:g} s")
            v = failure_verdict(f"timed out after {self.s.budget_s:g} s", self.s.on_failure, code=504,
                                vllm=self._serves(progress))
        except Exception as e:  # a fault before the uid was read: the API server applies its failurePolicy
            log.error({"event": "review-error", "error": type(e).__name__, "where": _where(e)})
            if progress.request is None:
                return await self._reject(send, 400, f"cannot read the request ({type(e).__name__})", t0)
            v = failure_verdict(f"internal error: {type(e).__name__}", self.s.on_failure, code=500,
                                vllm=self._serves(progress))
        req = progress.request
        assert req is not None
        await self._answer(send, req, v, t0)

    @staticmethod
    def _serves(progress: _Progress) -> bool | None:
        obj = progress.request.object if progress.request is not None else None
        return may_serve(obj, progress.mentions_vllm) if progress.mentions_vllm is not None else None

    async def _overloaded(self, send: Any, lane: _Lane, progress: _Progress, body: bytes | None, t0: float,
                          why: str = "") -> None:
        """A lane at capacity: an answer at once, never an HTTP error the API server's failurePolicy decides."""
        why = why or f"overloaded: {lane.name} reviews at capacity ({lane.capacity})"
        req = progress.request
        if req is None:  # a large body not parsed: its uid and whether it may name a server, from a scan
            scan = _Scan()
            scan.feed(body or b"")
            uid = scan.uid()
            if uid is None:
                return await self._reject(send, 429, f"{why}; retry", t0, retry_after=True)
            req, serves = Request(uid=uid, object=None, dry_run=False), scan.mentions
        else:
            serves = self._serves(progress)
        await self._answer(send, req, failure_verdict(why, self.s.on_failure, code=429, vllm=serves), t0)

    async def _answer(self, send: Any, req: Request, v: Verdict, t0: float) -> None:
        out = response(req.uid, v)
        if v.failure:
            verdict = "failed-open" if v.allowed else "failed-closed"
            log.warning({"event": "review-failed", "uid": req.uid, "reason": v.failure, "allowed": v.allowed})
        else:
            verdict = "denied" if not v.allowed else ("warned" if v.warnings else "allowed")
        dt = time.perf_counter() - t0
        self.metrics.answered(verdict, dt)
        obj = req.object or {}
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        namespace = req.namespace or (meta.get("namespace") if isinstance(meta.get("namespace"), str) else None)
        name = req.name or (meta.get("name") if isinstance(meta.get("name"), str) else None)
        log.info({"event": "review", "uid": req.uid, "kind": req.kind or _text(obj.get("kind")), "name": name,
                  "namespace": namespace, "verdict": verdict, "dry_run": req.dry_run,
                  "rules": sorted({f.rule for f in v.findings}), "ms": round(dt * 1000, 2)})
        await _send(send, 200, json.dumps(out).encode())

    async def _unfinished(self, send: Any, got: list[bytes], t0: float) -> None:
        """A body not received in time: answered from its head when that holds the uid (an object that may name
        vLLM is denied by default: what did not arrive cannot be read), else 408."""
        scan = _Scan()
        for c in got:
            scan.feed(c)
        uid = scan.uid()
        if uid is None:
            return await self._reject(send, 408, "request body not received in time", t0)
        v = failure_verdict(f"request body not received within {self.s.body_timeout_s:g} s", self.s.on_failure,
                            code=408, vllm=True if scan.mentions else None)
        await self._answer(send, Request(uid=uid, object=None, dry_run=False), v, t0)

    async def _read_within(self, receive: Any, declared: int, held: list[int],
                           chunks: list[bytes]) -> tuple[bytes | None, _Scan | None]:
        """`_read` within the body timeout (asyncio.TimeoutError past it). asyncio.timeout (3.11+) arms one timer;
        wait_for, before it, runs the read as a task of its own."""
        timeout = getattr(asyncio, "timeout", None)
        if timeout is None:
            return await asyncio.wait_for(self._read(receive, declared, held, chunks), self.s.body_timeout_s)
        async with timeout(self.s.body_timeout_s):
            return await self._read(receive, declared, held, chunks)

    async def _read(self, receive: Any, declared: int, held: list[int],
                    chunks: list[bytes]) -> tuple[bytes | None, _Scan | None]:
        """The body, counted against the memory budget before it is kept: (body, None); or, when the budget
        cannot hold it, (None, scan) after reading it through without keeping it. `chunks` holds what has
        arrived and is kept, for the caller to read if this is cancelled."""
        size = 0
        scan: _Scan | None = None
        if declared and not self.budget.take(declared):
            scan = _Scan()
        elif declared:
            held[0] = declared
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise asyncio.TimeoutError
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.s.max_body_bytes:
                raise _TooLarge
            if scan is None and size > held[0]:  # more than declared (or no Content-Length): count as it comes
                if self.budget.take(size - held[0]):
                    held[0] = size
                else:
                    scan = _Scan()
                    for c in chunks:
                        scan.feed(c)
                    chunks.clear()
                    self.budget.give(held[0])
                    held[0] = 0
            if scan is not None:
                scan.feed(chunk)
                chunks[:] = [scan.head]  # the head only: what a timeout answer reads
            else:
                chunks.append(chunk)
            if not msg.get("more_body"):
                if scan is not None:
                    chunks.clear()
                    if held[0]:
                        self.budget.give(held[0])
                        held[0] = 0
                    return None, scan
                return b"".join(chunks), None

    async def _reject(self, send: Any, code: int, why: str, t0: float, retry_after: bool = False) -> None:
        self.metrics.answered(f"rejected-{code}", time.perf_counter() - t0)
        log.info({"event": "rejected", "code": code, "reason": why})
        await _send(send, code, json.dumps({"error": why}).encode(), retry_after=b"1" if retry_after else None)


def _content_length(scope: dict) -> int:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return int(value or 0)
            except ValueError:
                return 0
    return 0


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


class _TooLarge(Exception):
    pass


async def _send(send: Any, status: int, body: bytes, ctype: str = "application/json", *,
                retry_after: bytes | None = None, allow: bytes | None = None) -> None:
    headers = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    if retry_after:
        headers.append((b"retry-after", retry_after))
    if allow:
        headers.append((b"allow", allow))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    return f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""


class JsonFormatter(logging.Formatter):
    """Every record as one JSON line: ours are dicts; uvicorn's text becomes {"message": ...}; an
    exception becomes its type, its first line and where it was raised (never a multi-line traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": round(record.created, 3), "level": record.levelname.lower(),
                               "logger": record.name}
        if isinstance(record.msg, dict):
            out.update(record.msg)
        else:
            out["event"] = "log"
            try:
                out["message"] = record.getMessage()
            except (TypeError, ValueError):
                out["message"] = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            out["error"] = type(e).__name__
            out["detail"] = (str(e).splitlines() or [""])[0][:500]
            out["where"] = _where(e)
        return json.dumps(out, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    """One JSON handler on the root logger; uvicorn's loggers propagate to it (its access log is off)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    # what the JSON line never shows is not gathered for every record: the caller's file and line (the logging
    # module's documented switch, logging._srcfile = None), thread, process and multiprocessing names
    logging._srcfile = None  # type: ignore[attr-defined]
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "asyncio"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # each request is logged once, by this module (the review line, or a rejection): uvicorn's access line
    # would say the same again
    access = logging.getLogger("uvicorn.access")
    access.handlers[:] = []
    access.propagate = False


class _OneWrite:
    """A transport whose writes in one turn of the event loop leave as one: uvicorn writes a response's head and
    its body apart, and over TLS each write is a record of its own and a send of its own (a system call, and a
    wake-up of the reader). Everything else is the transport's own."""

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _HeaderCap:
    """For uvicorn's httptools protocol: a request whose target and headers pass `max_header_bytes` gets 400 and
    the connection is closed (h11 bounds a head it has not finished reading itself, by
    h11_max_incomplete_event_size)."""

    max_header_bytes = 16 << 10
    _head_bytes = 0

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        super().on_message_begin()  # type: ignore[misc]

    def _count(self, n: int) -> bool:
        self._head_bytes += n
        if self._head_bytes <= self.max_header_bytes:
            return True
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self.send_400_response("Request headers too large.")  # type: ignore[attr-defined]
        return False

    def on_url(self, url: bytes) -> None:
        if self._count(len(url)):
            super().on_url(url)  # type: ignore[misc]

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._count(len(name) + len(value) + 4):
            super().on_header(name, value)  # type: ignore[misc]


def http_protocol() -> tuple[type, ...]:
    """The bases of the webhook's HTTP protocol: uvicorn's httptools protocol (llhttp, a C parser) when httptools
    is installed, as the webhook extra installs it; else uvicorn's h11 protocol (pure Python, about 0.14 ms more
    CPU a review)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return (H11Protocol,)
    return (_HeaderCap, HttpToolsProtocol)


def guarded_protocol(settings: WebhookSettings, metrics: _Metrics | None, bases: tuple[type, ...] | None = None
                     ) -> type:
    """uvicorn's HTTP protocol (`http_protocol`) with a connection cap and a deadline for each request's headers."""
    per_client: dict[str, int] = {}

    class GuardedProtocol(*(bases or http_protocol())):  # type: ignore[misc]
        max_header_bytes = settings.max_header_bytes
        _guard: asyncio.TimerHandle | None = None
        _client: str | None = None  # the address this connection is counted under
        clients = per_client  # connections past the handshake, by client address (read by _guard_accept)

        def _closed_by_guard(self, reason: str) -> None:
            if metrics is not None:
                metrics.closed.labels(reason).inc()
            if not self.transport.is_closing():
                self.transport.abort()

        def _arm(self) -> None:
            if self._guard is None:
                self._guard = self.loop.call_later(settings.header_timeout_s, self._closed_by_guard, "header-timeout")

        def _disarm(self) -> None:
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(_OneWrite(transport, self.loop))
            if len(self.connections) > settings.max_connections:
                self._closed_by_guard("connection-limit")
                return
            if settings.max_connections_per_client:
                peer = transport.get_extra_info("peername")
                addr = str(peer[0]) if isinstance(peer, tuple) and peer else ""
                if per_client.get(addr, 0) >= settings.max_connections_per_client:
                    self._closed_by_guard("client-connection-limit")
                    return
                per_client[addr] = per_client.get(addr, 0) + 1
                self._client = addr
            self._arm()

        def data_received(self, data: bytes) -> None:
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before:  # a request's headers arrived
                self._disarm()
            elif self.cycle is None or self.cycle.response_complete:
                self._arm()  # bytes of a request whose headers are not complete yet

        def on_response_complete(self) -> None:
            self._disarm()  # idle from here: uvicorn's keep-alive timeout applies
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._client is not None:
                left = per_client.get(self._client, 1) - 1
                if left > 0:
                    per_client[self._client] = left
                else:
                    per_client.pop(self._client, None)
                self._client = None
            super().connection_lost(exc)

    return GuardedProtocol


def _guard_accept(loop: Any, settings: WebhookSettings, protocol: type, metrics: _Metrics | None) -> None:
    """Refuse a connection before its TLS handshake when its client address already holds its share
    (connections being handshaken count too), or when as many handshakes as connections allowed are under
    way: a storm of reconnecting clients then costs an accept and a close each, not a handshake each.
    asyncio's selector loop accepts through `_accept_connection2` (CPython 3.8-3.13); without it, the
    limits apply after the handshake only (GuardedProtocol)."""
    accept = getattr(loop, "_accept_connection2", None)
    clients = getattr(protocol, "clients", None)
    if accept is None or clients is None:
        return
    pending: dict[str, int] = {}
    total = [0]

    async def guarded(protocol_factory: Any, conn: Any, extra: Any, *args: Any, **kwargs: Any) -> None:
        peer = (extra or {}).get("peername")
        addr = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        cap = settings.max_connections_per_client
        if (cap and clients.get(addr, 0) + pending.get(addr, 0) >= cap) or total[0] >= settings.max_connections:
            if metrics is not None:
                metrics.closed.labels("refused-before-handshake").inc()
            conn.close()
            return
        pending[addr] = pending.get(addr, 0) + 1
        total[0] += 1
        try:
            await accept(protocol_factory, conn, extra, *args, **kwargs)
        finally:
            total[0] -= 1
            if pending[addr] > 1:
                pending[addr] -= 1
            else:
                del pending[addr]

    loop._accept_connection2 = guarded


def _listen(host: str, port: int) -> socket.socket:
    """A bound socket, or one InputError line (a bad host, a busy port, no permission)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, OSError) as e:
        raise InputError(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as e:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def _small_tls_buffers() -> None:
    """asyncio gives every TLS connection a 256 KiB read buffer (a class attribute of its SSL
    protocol); one TLS record needs 16 KiB. Smaller buffers are what keep thousands of idle
    connections inside the pod's memory limit."""
    import asyncio.sslproto as sslproto

    if getattr(sslproto.SSLProtocol, "max_size", 0) > TLS_READ_BUFFER_BYTES:
        sslproto.SSLProtocol.max_size = TLS_READ_BUFFER_BYTES


async def _watch_certificate(config: Any, cert: str, key: str, every_s: float = 2.0) -> None:
    """Reload the certificate into the live SSL context when either file changes on disk."""
    def stamp() -> tuple[float, float]:
        return os.stat(cert).st_mtime_ns, os.stat(key).st_mtime_ns

    every_s = max(1.0, every_s)
    last = stamp()
    while True:
        await asyncio.sleep(every_s)
        try:
            now = stamp()
            if now != last:
                config.ssl.load_cert_chain(cert, key)
                last = now
                log.info({"event": "certificate-reloaded", "cert": cert})
        except (OSError, ValueError) as e:  # mid-rotation: try again next tick
            log.warning({"event": "certificate-reload-failed", "error": type(e).__name__, "detail": str(e)[:300]})


def build(settings: WebhookSettings, *, host: str, port: int, cert: str | None, key: str | None) -> tuple[Any, Any]:
    """(uvicorn.Config, app) with every limit set; raises InputError for unusable TLS files."""
    import ssl

    import uvicorn

    app = WebhookApp(settings)
    config = uvicorn.Config(app, host=host, port=port, ssl_certfile=cert, ssl_keyfile=key, log_config=None,
                            access_log=False, lifespan="on", timeout_keep_alive=settings.keep_alive_s,
                            timeout_graceful_shutdown=20, h11_max_incomplete_event_size=settings.max_header_bytes,
                            limit_concurrency=2 * settings.max_connections, server_header=False,
                            http=guarded_protocol(settings, app.metrics))
    try:
        config.load()
    except (OSError, ssl.SSLError) as e:
        raise InputError(f"cannot load the TLS certificate or key: {getattr(e, 'strerror', None) or e}") from None
    return config, app


def serve(settings: WebhookSettings, *, host: str, port: int, cert: str | None, key: str | None,
          reload_every_s: float = 2.0, log_setup: bool = True, on_start: Any = None) -> None:
    """Run the webhook until SIGTERM / SIGINT (uvicorn handles both gracefully). `on_start(server)` is
    called with the uvicorn.Server before it serves (tests stop it with `server.should_exit = True`)."""
    import uvicorn

    config, _app = build(settings, host=host, port=port, cert=cert, key=key)
    sock = _listen(host, port)
    if log_setup:
        configure_logging()
    mode = "https" if cert else "insecure-http"
    where = f"{'https' if cert else 'http'}://{host if ':' not in host else f'[{host}]'}:{port}/validate"
    if cert:
        log.info({"event": "listening", "address": where, "mode": mode, "cert": cert})
    else:
        log.warning({"event": "listening", "address": where, "mode": mode,
                     "warning": "plain HTTP without a certificate (--insecure-http): for local trials only; the API "
                                "server calls webhooks over HTTPS"})
    _small_tls_buffers()
    # Worker threads evaluating reviews hold the GIL for the interpreter's switch interval (5 ms by default) each
    # time the event loop's thread lets it go for a socket call: with hundreds of connections the event loop waits
    # that long per call and a must-deny review waited 4-8 s behind a flood of 64-container pods (slowest of 4
    # probes, benchmarks/webhook_flood.py, 2 cores). At 0.5 ms: 0.5-0.7 s, p99 of the fixed-rate load unchanged.
    before = sys.getswitchinterval()
    sys.setswitchinterval(settings.switch_interval_s)
    server = uvicorn.Server(config)
    if on_start is not None:
        on_start(server)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        create_server = loop.create_server

        def with_handshake_timeout(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("ssl") is not None:  # uvicorn does not pass one: asyncio's default is 60 s
                kwargs.setdefault("ssl_handshake_timeout", settings.handshake_timeout_s)
            return create_server(*args, **kwargs)

        loop.create_server = with_handshake_timeout  # type: ignore[method-assign]
        _guard_accept(loop, settings, config.http, _app.metrics)
        watcher = asyncio.create_task(_watch_certificate(config, cert, key, reload_every_s)) if cert and key else None
        try:
            await server.serve(sockets=[sock])
        finally:
            if watcher:
                watcher.cancel()
            sock.close()

    try:
        asyncio.run(main())
    finally:
        sys.setswitchinterval(before)
