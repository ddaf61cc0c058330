"""Read a model from the Hugging Face Hub without downloading its weights.

config.json (and hf_quant_config.json when the repository has one) come through huggingface_hub's
`hf_hub_download` at an optional revision, with HF_TOKEN, into the Hugging Face cache; the exact
checkpoint size comes from `HfApi.get_safetensors_metadata` (the safetensors headers only: dtype, shape
and byte offsets of every tensor) and is kept in a small JSON file per commit under the same cache
(`<HF_HUB_CACHE>/vllm-configurator/safetensors/`), so a second run asks the Hub nothing.
HF_HUB_OFFLINE (or `network=False`) reads the caches only. huggingface_hub is imported here, lazily:
a model found in the offline catalog never loads it.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"


class HubError(Exception):
    """The Hub could not give the model's config (not found, unreachable, refused); one line."""


class GatedError(HubError):
    """A gated repository and no token with access."""


@dataclass(frozen=True)
class HubModel:
    config: dict
    hf_quant_config: dict | None
    weights_bytes: int | None
    weights_source: str | None
    config_source: str
    how: str  # hf-cache | hub
    commit: str = ""


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def cache_dir() -> Path:
    """huggingface_hub's cache folder, from the environment as it is now (HF_HUB_CACHE, HF_HOME, XDG)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                                            / "huggingface")
    return Path(home).expanduser() / "hub"


def _token() -> str | None:
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def _metadata_cache(commit: str, repo_id: str) -> Path:
    return cache_dir() / "vllm-configurator" / "safetensors" / f"{repo_id.replace('/', '--')}--{commit}.json"


def _commit_of(snapshot_file: Path) -> str:
    """The commit a cached file belongs to: .../snapshots/<commit>/config.json."""
    return snapshot_file.parent.name


# -- the cache ------------------------------------------------------------------------------------------

def _cached(repo_id: str, filename: str, revision: str | None):
    """A cached file's path, huggingface_hub's 'known not to exist' sentinel, or None."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return try_to_load_from_cache(repo_id, filename, cache_dir=str(cache_dir()), revision=revision)
    except ValueError:  # HFValidationError: not an id the Hub client accepts
        return None


def _read_json(path: str | Path) -> dict | None:
    """A cached JSON file, or None when it is unreadable or malformed; one larger than safe_io's JSON cap,
    nested too deeply, or a FIFO / device is refused with one line (InputError), never read whole."""
    from configurator.errors import InputError
    from configurator.safe_io import InputTooLarge, NotRegularFile, TooDeep, read_json

    try:
        data = read_json(path)
    except (InputTooLarge, NotRegularFile, TooDeep):
        raise
    except (InputError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _from_cache(repo_id: str, revision: str | None) -> HubModel | None:
    cfg_path = _cached(repo_id, "config.json", revision)
    if not isinstance(cfg_path, str):
        return None
    config = _read_json(cfg_path)
    if config is None:
        return None
    hq_path = _cached(repo_id, "hf_quant_config.json", revision)
    hq = _read_json(hq_path) if isinstance(hq_path, str) else None
    commit = _commit_of(Path(cfg_path))
    weights, wsource = _cached_metadata(repo_id, commit)
    if weights is None:  # a folder downloaded whole: the index's total_size
        idx = _cached(repo_id, "model.safetensors.index.json", revision)
        total = ((_read_json(idx) or {}).get("metadata") or {}).get("total_size") if isinstance(idx, str) else None
        if isinstance(total, int):
            weights, wsource = total, "model.safetensors.index.json metadata.total_size (Hugging Face cache)"
    return HubModel(config, hq, weights, wsource, _source(repo_id, commit, "Hugging Face cache"), "hf-cache", commit)


def _source(repo_id: str, commit: str, where: str) -> str:
    return f"hub:{repo_id}@{commit} ({where})"


def _cached_metadata(repo_id: str, commit: str) -> tuple[int | None, str | None]:
    d = _read_json(_metadata_cache(commit, repo_id))
    if not d or not isinstance(d.get("total_bytes"), int):
        return None, None
    return d["total_bytes"], _weights_source(d, "cached")


def _metadata_known(repo_id: str, commit: str) -> bool:
    """Whether this commit's safetensors metadata was asked for before (found, or not a safetensors repo)."""
    return _metadata_cache(commit, repo_id).is_file()


def _save_metadata(d: dict) -> None:
    path = _metadata_cache(d["commit"], d["repo_id"])
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(path)


def _weights_source(d: dict, how: str) -> str:
    counts = d.get("parameter_count") or {}
    total = sum(v for v in counts.values() if isinstance(v, int))
    per = ", ".join(f"{k} {v / 1e9:.2f}B" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    return (f"safetensors metadata from the Hub ({how}, commit {str(d.get('commit'))[:12]}): "
            f"{total / 1e9:.2f}B parameters ({per}), {d.get('total_bytes'):,} bytes")


# -- the Hub --------------------------------------------------------------------------------------------

def _reachable() -> bool:
    """A TCP connection (3 s) to the endpoint, or to the proxy the environment routes it through.

    Fails fast offline instead of the client's retries. Behind a proxy (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY,
    unless NO_PROXY covers the endpoint) the Hub client connects to the proxy, not to the Hub, so the proxy is
    what must answer; the stdlib's urllib reads those variables the way requests and httpx do.
    """
    import socket
    import urllib.request
    from urllib.parse import urlparse

    u = urlparse(endpoint())
    host, port = u.hostname or "huggingface.co", u.port or (443 if u.scheme == "https" else 80)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(u.scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass_environment(host, proxies):
        p = urlparse(proxy if "://" in proxy else f"http://{proxy}")
        host, port = p.hostname or host, p.port or (443 if p.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError:
        return False
    return True


def _explain(e: Exception, repo_id: str) -> HubError:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if isinstance(e, GatedRepoError):
        if _token():
            return GatedError(f"model '{repo_id}' is gated on the Hugging Face Hub and HF_TOKEN has no access to it: "
                              f"accept its licence at {endpoint()}/{repo_id}, or pass --model-config "
                              f"{repo_id}=path/to/config.json")
        return GatedError(f"model '{repo_id}' is gated on the Hugging Face Hub: set HF_TOKEN to a token that has "
                          f"accepted its licence, or pass --model-config {repo_id}=path/to/config.json")
    if isinstance(e, RevisionNotFoundError):
        return HubError("no such revision on the Hugging Face Hub")
    if isinstance(e, RepositoryNotFoundError):
        return HubError("not on the Hugging Face Hub (or private: set HF_TOKEN)")
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return HubError(f"Hugging Face Hub: {first}")


def _download(repo_id: str, filename: str, revision: str | None) -> str:
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo_id, filename, revision=revision, token=_token(), cache_dir=str(cache_dir()),
                           endpoint=endpoint())


def _metadata(repo_id: str, revision: str | None, commit: str) -> tuple[int | None, str | None]:
    """Exact checkpoint bytes from the safetensors headers (no weights downloaded), cached per commit."""
    from huggingface_hub import HfApi
    from huggingface_hub import constants as hf_constants
    from huggingface_hub.errors import NotASafetensorsRepoError

    api = HfApi(endpoint=endpoint(), token=_token())
    # get_safetensors_metadata downloads a sharded repo's index through the default cache folder: point
    # it at the one this module reads (the environment may have changed since huggingface_hub's import)
    old = hf_constants.HF_HUB_CACHE
    hf_constants.HF_HUB_CACHE = str(cache_dir())
    try:
        meta = api.get_safetensors_metadata(repo_id, revision=commit or revision)
    except NotASafetensorsRepoError:  # remembered: the next run does not ask again
        _save_metadata({"repo_id": repo_id, "commit": commit, "total_bytes": None, "not_safetensors": True})
        return None, None
    except Exception:  # a parse error, the network: weights come from the config this time
        return None, None
    finally:
        hf_constants.HF_HUB_CACHE = old
    counts: dict[str, int] = {}
    total = 0
    for fm in meta.files_metadata.values():
        for t in fm.tensors.values():
            start, end = t.data_offsets
            total += end - start
            counts[t.dtype] = counts.get(t.dtype, 0) + t.parameter_count
    d = {"repo_id": repo_id, "commit": commit, "total_bytes": total, "parameter_count": counts,
         "files": sorted(meta.files_metadata)}
    _save_metadata(d)
    return total, _weights_source(d, "read now")


def read(repo_id: str, *, revision: str | None = None, network: bool = True) -> HubModel | None:
    """The model's config, quantization config and exact weight bytes: from the caches, else (with `network`)
    from the Hub. None when not cached and `network` is off. Raises GatedError / HubError (one line)."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        if not network:
            return None
        raise HubError("huggingface_hub is not installed (`pip install huggingface_hub`)") from None
    got = _from_cache(repo_id, revision)
    if got is not None:
        if got.weights_bytes is None and network and not _metadata_known(repo_id, got.commit) and _reachable():
            weights, wsource = _metadata(repo_id, revision, got.commit)
            got = HubModel(got.config, got.hf_quant_config, weights, wsource, got.config_source, got.how, got.commit)
        return got
    if not network:
        return None
    if not _reachable():
        raise HubError(f"not cached, and the Hugging Face Hub ({endpoint()}) is unreachable")
    import logging

    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError

    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    try:
        cfg_path = _download(repo_id, "config.json", revision)
    except LocalEntryNotFoundError:
        raise HubError(f"not cached, and the Hugging Face Hub ({endpoint()}) is unreachable") from None
    except (HfHubHTTPError, OSError, ValueError) as e:
        raise _explain(e, repo_id) from None
    config = _read_json(cfg_path)
    if config is None:
        raise HubError("the Hub's config.json is not a JSON object")
    hq = None
    with contextlib.suppress(EntryNotFoundError, HfHubHTTPError, OSError, ValueError):
        hq = _read_json(_download(repo_id, "hf_quant_config.json", revision))
    commit = _commit_of(Path(cfg_path))
    weights, wsource = _metadata(repo_id, revision, commit)
    return HubModel(config, hq, weights, wsource, _source(repo_id, commit, f"read from {endpoint()}"), "hub", commit)
