"""The Hub path, against a local HTTP server that answers as the Hub does (HF_ENDPOINT points at it): no network.

The server serves a real config.json (tests/model/data/qwen3-0.6b.config.json, a copy of
data/model-configs/Qwen__Qwen3-0.6B.json), safetensors headers built per the safetensors format
(8-byte little-endian header length, then the JSON header: dtype, shape, data_offsets of each tensor) for a
single-file and a sharded repository, and the Hub's gated answer (401 with `X-Error-Code: GatedRepo`, the
header huggingface_hub's hf_raise_for_status turns into GatedRepoError).
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from configurator.errors import InputError, NotFoundError
from configurator.model.resolve import resolve

CONFIG = (Path(__file__).parent / "data" / "qwen3-0.6b.config.json").read_bytes()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> tuple[bytes, int]:
    """(the first bytes of a .safetensors file: u64 little-endian header size + JSON header, data bytes)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n * BYTES[dtype]]}
        offset += n * BYTES[dtype]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes with spaces
    return struct.pack("<Q", len(raw)) + raw, offset


def _layer_tensors(first: int, last: int) -> dict[str, tuple[str, list[int]]]:
    out = {}
    for i in range(first, last):
        out[f"model.layers.{i}.self_attn.q_proj.weight"] = ("BF16", [2048, 1024])
        out[f"model.layers.{i}.mlp.down_proj.weight"] = ("BF16", [1024, 3072])
        out[f"model.layers.{i}.input_layernorm.weight"] = ("F32", [1024])
    return out


SINGLE, SINGLE_BYTES = safetensors_header({"model.embed_tokens.weight": ("BF16", [151936, 1024]),
                                           **_layer_tensors(0, 28)})
SHARD1, SHARD1_BYTES = safetensors_header({"model.embed_tokens.weight": ("BF16", [151936, 1024]),
                                           **_layer_tensors(0, 14)})
SHARD2, SHARD2_BYTES = safetensors_header(_layer_tensors(14, 28))
INDEX = json.dumps({"metadata": {"total_size": SHARD1_BYTES + SHARD2_BYTES},
                    "weight_map": {**{k: "model-00001-of-00002.safetensors" for k in json.loads(SHARD1[8:])
                                      if k != "__metadata__"},
                                   **{k: "model-00002-of-00002.safetensors" for k in json.loads(SHARD2[8:])
                                      if k != "__metadata__"}}}).encode()

REPOS = {
    "acme/qwen3-tiny": {"config.json": CONFIG, "model.safetensors": SINGLE},
    "acme/qwen3-sharded": {"config.json": CONFIG, "model.safetensors.index.json": INDEX,
                           "model-00001-of-00002.safetensors": SHARD1, "model-00002-of-00002.safetensors": SHARD2},
}
GATED = {"acme/gated-model"}


class Hub(BaseHTTPRequestHandler):
    log: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, body: bool) -> None:
        Hub.log.append((self.command, self.path))
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        # /{org}/{name}/resolve/{revision}/{file}
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, "RepoNotFound", "Repository not found")
        repo, filename = "/".join(parts[:2]), "/".join(parts[4:])
        if repo in GATED:
            return self._error(401, "GatedRepo", f"Access to model {repo} is restricted. You must have access to "
                                                 "it and be authenticated to access it. Please log in.")
        files = REPOS.get(repo)
        if files is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        data = files.get(filename)
        if data is None:
            return self._error(404, "EntryNotFound", f"{filename} does not exist on \"main\"", commit=True)
        status, payload = 200, data
        rng = self.headers.get("Range") or self.headers.get("range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            payload = data[int(a): int(b) + 1 if b else None]
            status = 206
        self.send_response(status)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _error(self, status: int, code: str, message: str, commit: bool = False) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no token file of the machine's user
    from huggingface_hub import constants  # read HF_HUB_OFFLINE at its import (CI sets it): this server is local

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    Hub.log = []
    yield Hub.log
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("repo", "expected"), [("acme/qwen3-tiny", SINGLE_BYTES),
                                                ("acme/qwen3-sharded", SHARD1_BYTES + SHARD2_BYTES)])
def test_hub_id_resolves_with_weights_from_the_safetensors_headers_then_from_the_cache(hub, repo, expected):
    r = resolve(repo)
    assert r.how == "hub"
    assert r.spec.num_hidden_layers == 28 and r.spec.num_kv_heads == 8 and r.spec.head_dim == 128
    assert r.spec.weights_bytes == expected  # the sum of the tensors' byte ranges, not the config's estimate
    assert "safetensors metadata" in r.spec.weights_source and "BF16" in r.spec.weights_source
    assert r.config_source.startswith(f"hub:{repo}@{COMMIT}")
    assert hub, "the server was asked"
    seen = len(hub)
    again = resolve(repo)
    assert len(hub) == seen, f"second call asked the server: {hub[seen:]}"
    assert again.how == "hf-cache" and again.spec.weights_bytes == expected
    assert "cached" in again.spec.weights_source


def test_offline_reads_the_cache_only(hub, monkeypatch):
    resolve("acme/qwen3-tiny")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    seen = len(hub)
    assert resolve("acme/qwen3-tiny").spec.weights_bytes == SINGLE_BYTES
    with pytest.raises(NotFoundError, match="HF_HUB_OFFLINE"):
        resolve("acme/qwen3-sharded")
    assert len(hub) == seen


def test_revision_is_asked_for(hub):
    resolve("acme/qwen3-tiny", revision="v1.0")
    assert any("/resolve/v1.0/config.json" in path for _, path in hub)


def test_gated_repo_without_token_is_one_line_naming_the_fixes(hub):
    with pytest.raises(InputError) as e:
        resolve("acme/gated-model")
    msg = str(e.value)
    assert "\n" not in msg and "gated" in msg and "HF_TOKEN" in msg and "--model-config" in msg


def test_gated_repo_in_the_cli_is_one_line_exit_2(hub, run_cli):
    res = run_cli("estimate", "--model", "acme/gated-model", "--gpu", "l4")
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: model 'acme/gated-model' is gated"), err


def test_unknown_repo_is_unknown_with_nearest_names(hub):
    with pytest.raises(NotFoundError, match="not on the Hugging Face Hub"):
        resolve("acme/Qwen3-8B-nothing")


def test_gated_repo_with_a_token_without_access_says_so(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    with pytest.raises(InputError) as e:
        resolve("acme/gated-model")
    msg = str(e.value)
    assert "\n" not in msg and "HF_TOKEN has no access" in msg and "/acme/gated-model" in msg


def _closed_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("var", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_behind_a_proxy_the_hub_counts_as_reachable_when_the_proxy_answers(monkeypatch, var):
    from configurator.model import hub as hubmod

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Hub)  # any listener: only the TCP connect is probed
    try:
        for v in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
                  "no_proxy"):
            monkeypatch.delenv(v, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")  # the Hub itself: nothing listens
        assert not hubmod._reachable()
        monkeypatch.setenv(var, f"http://127.0.0.1:{proxy.server_address[1]}")
        assert hubmod._reachable()
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the endpoint bypasses the proxy: the direct probe again
        assert not hubmod._reachable()
    finally:
        proxy.server_close()
